/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kfab_efa selftests: device and sysfs access, QPs,
 * MRs, peers and RDMA, and the receive ring protocol of uapi/kfab_efa.h on
 * C11 atomics. The generic helpers (files, sysfs parsing, knobs, peer
 * requests, the ring's arm and notify steps, child processes, pipes, poll,
 * the kernel log check) come from hfi_util.h. Every helper returns 0 (or a
 * count) on success and -errno on failure.
 */
#ifndef KFAB_EFA_UTIL_H
#define KFAB_EFA_UTIL_H

#include "hfi_util.h"
#include "uapi/kfab_efa.h"

#define EFA_PARAM_FMT		"/sys/module/kfab_efa/parameters/%s"

#define EFA_PAGE		HFI_PAGE

/* ------------------------------------------------------------------ */
/* Device and ioctl */

KFAB_CLASS_HELPERS(efa)

#define EFA_TEST_MAIN KFAB_TEST_MAIN("efa")

/* The GID of device @dev as the spec fixes it. */
static inline void efa_gid(unsigned int dev, __u8 gid[KFAB_EFA_GID_LEN])
{
	static const __u8 prefix[15] = {
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0, 0, 0,
	};

	memcpy(gid, prefix, sizeof(prefix));
	gid[15] = (__u8)(dev + 1);
}

/* ------------------------------------------------------------------ */
/* sysfs */

static inline unsigned int efa_num_devices(void)
{
	uint64_t v;

	return efa_param_u64("num_devices", &v) ? 1 : (unsigned int)v;
}

/* The writable knobs, saved in a fixture setup and restored after. */
static const char *const efa_knob_names[] = {
	"state", "device_rdma", "rnr_retry", "rnr_inject_ppm", "reorder_ppm",
	"link_rate_mbps",
};

KFAB_KNOB_HELPERS(efa)

/* ------------------------------------------------------------------ */
/* A device file with its status page and MR state array mapped */

struct efa_dev {
	int fd;
	unsigned int dev;
	struct kfab_efa_device_info info;
	const struct kfab_efa_status *status;
	const __u32 *mr_state;
};

static inline void *efa_mmap(int fd, __u64 offset, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

static inline int efa_query(int fd, struct kfab_efa_device_info *info)
{
	memset(info, 0, sizeof(*info));
	return efa_ioctl(fd, KFAB_EFA_IOC_QUERY_DEVICE, info);
}

static inline void efa_dev_close(struct efa_dev *d)
{
	HFI_UNMAP(d->status, EFA_PAGE);
	HFI_UNMAP(d->mr_state, d->info.mr_state_size);
	hfi_close_fd(&d->fd);
}

/* Open @dev, QUERY_DEVICE and, if @map, map status and mr_state. */
static inline int efa_dev_open(struct efa_dev *d, unsigned int dev, bool map)
{
	int ret;

	memset(d, 0, sizeof(*d));
	d->dev = dev;
	d->fd = efa_open(dev);
	if (d->fd < 0)
		return d->fd;
	ret = efa_query(d->fd, &d->info);
	if (ret)
		goto err;
	if (!map)
		return 0;
	d->status = efa_mmap(d->fd, d->info.status_offset, EFA_PAGE,
			     PROT_READ);
	if (!d->status) {
		ret = -errno;
		goto err;
	}
	d->mr_state = efa_mmap(d->fd, d->info.mr_state_offset,
			       d->info.mr_state_size, PROT_READ);
	if (!d->mr_state) {
		ret = -errno;
		goto err;
	}
	return 0;
err:
	efa_dev_close(d);
	return ret;
}

static inline __u32 efa_mr_state(const struct efa_dev *d, __u32 index)
{
	return atomic_load_explicit(hfi_a32((__u32 *)&d->mr_state[index]),
				    memory_order_acquire);
}

/* ------------------------------------------------------------------ */
/* QPs and their memory */

/* One view of a QP's queues: the owner's or a peer's mapping. */
struct efa_queue {
	union {
		struct {
			struct kfab_efa_qp_ctrl *ctrl;
			struct kfab_efa_rx_entry *ring;
			__u8 *bufs;
		};
		void *map[HFI_QUEUE_MAPS];	/* for efa_queue_map() */
	};
	__u32 rx_entries;
	__u32 mtu;
};

static inline size_t efa_ring_bytes(__u32 entries)
{
	return (size_t)entries * sizeof(struct kfab_efa_rx_entry);
}

static inline size_t efa_bufs_bytes(__u32 entries, __u32 mtu)
{
	return (size_t)entries * mtu;
}

static inline void efa_queue_lens(const struct efa_queue *q,
				  size_t len[HFI_QUEUE_MAPS])
{
	len[0] = EFA_PAGE;
	len[1] = efa_ring_bytes(q->rx_entries);
	len[2] = efa_bufs_bytes(q->rx_entries, q->mtu);
}

static inline void efa_queue_unmap(struct efa_queue *q)
{
	size_t len[HFI_QUEUE_MAPS];

	efa_queue_lens(q, len);
	hfi_queue_munmap(q->map, len);
}

static inline int efa_queue_map(struct efa_queue *q, int fd, __u64 ctrl_off,
				__u64 ring_off, __u64 bufs_off)
{
	const __u64 off[HFI_QUEUE_MAPS] = { ctrl_off, ring_off, bufs_off };
	size_t len[HFI_QUEUE_MAPS];

	efa_queue_lens(q, len);
	return hfi_queue_mmap(q->map, fd, off, len);
}

static inline int efa_create_qp(int fd, struct kfab_efa_create_qp *cq)
{
	memset(cq, 0, sizeof(*cq));
	return efa_ioctl(fd, KFAB_EFA_IOC_CREATE_QP, cq);
}

static inline int efa_destroy_qp(int fd, __u32 qpn)
{
	struct kfab_efa_destroy_qp d = { .qpn = qpn };

	return efa_ioctl(fd, KFAB_EFA_IOC_DESTROY_QP, &d);
}

/* A QP of file @fd (not owned: the file is the caller's). */
struct efa_qp {
	int fd;
	struct kfab_efa_create_qp cq;
	struct efa_queue q;
};

/* CREATE_QP on @fd and, if @map, map its ctrl, ring and bufs. */
static inline int efa_qp_create(struct efa_qp *qp, int fd, bool map)
{
	int ret;

	memset(qp, 0, sizeof(*qp));
	qp->fd = fd;
	ret = efa_create_qp(fd, &qp->cq);
	if (ret || !map)
		return ret;
	qp->q.rx_entries = qp->cq.rx_entries;
	qp->q.mtu = qp->cq.mtu;
	ret = efa_queue_map(&qp->q, fd, qp->cq.ctrl_offset,
			    qp->cq.ring_offset, qp->cq.bufs_offset);
	if (ret)
		efa_destroy_qp(fd, qp->cq.qpn);
	return ret;
}

static inline void efa_qp_unmap(struct efa_qp *qp)
{
	efa_queue_unmap(&qp->q);
}

/* ------------------------------------------------------------------ */
/* Memory regions */

static inline int efa_reg_mr(int fd, const void *addr, __u64 len,
			     __u32 access, struct kfab_efa_reg_mr *mr)
{
	struct kfab_efa_reg_mr tmp;

	if (!mr)
		mr = &tmp;
	memset(mr, 0, sizeof(*mr));
	mr->vaddr = (__u64)(uintptr_t)addr;
	mr->length = len;
	mr->access = access;
	return efa_ioctl(fd, KFAB_EFA_IOC_REG_MR, mr);
}

static inline int efa_dereg_mr(int fd, __u32 lkey)
{
	struct kfab_efa_dereg_mr d = { .lkey = lkey };

	return efa_ioctl(fd, KFAB_EFA_IOC_DEREG_MR, &d);
}

/* ------------------------------------------------------------------ */
/* Peers, RDMA, eventfd, notify */

static inline int efa_map_peer(int fd, const __u8 gid[KFAB_EFA_GID_LEN],
			       __u32 qpn, __u32 qkey,
			       struct kfab_efa_map_peer *mp)
{
	memset(mp, 0, sizeof(*mp));
	memcpy(mp->gid, gid, KFAB_EFA_GID_LEN);
	mp->qpn = qpn;
	mp->qkey = qkey;
	return efa_ioctl(fd, KFAB_EFA_IOC_MAP_PEER, mp);
}

/* A peer handle held by some file, and optionally its mapping. */
struct efa_peer {
	struct kfab_efa_map_peer mp;
	struct efa_queue q;
	const struct kfab_efa_status *status;
};

static inline void efa_peer_unmap(struct efa_peer *p)
{
	efa_queue_unmap(&p->q);
	HFI_UNMAP(p->status, EFA_PAGE);
}

/* MAP_PEER and, if @map, mmap the peer's queues and status via @fd. */
static inline int efa_peer_open(struct efa_peer *p, int fd,
				const __u8 gid[KFAB_EFA_GID_LEN], __u32 qpn,
				__u32 qkey, bool map)
{
	int ret;

	memset(p, 0, sizeof(*p));
	ret = efa_map_peer(fd, gid, qpn, qkey, &p->mp);
	if (ret || !map)
		return ret;
	p->q.rx_entries = p->mp.rx_entries;
	p->q.mtu = p->mp.mtu;
	ret = efa_queue_map(&p->q, fd, p->mp.ctrl_offset, p->mp.ring_offset,
			    p->mp.bufs_offset);
	if (ret)
		return ret;
	p->status = efa_mmap(fd, p->mp.status_offset, EFA_PAGE, PROT_READ);
	if (!p->status) {
		ret = -errno;
		efa_queue_unmap(&p->q);
	}
	return ret;
}

KFAB_PEER_HELPERS(efa, KFAB_EFA_IOC_NOTIFY, KFAB_EFA_IOC_UNMAP_PEER)

static inline int efa_rdma(int fd, __u32 peer, __u32 op, __u32 rkey,
			   __u64 remote_addr, const struct kfab_iovec *iov,
			   __u32 iovcnt, __u32 flags, __u64 *bytes)
{
	struct kfab_efa_rdma r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.peer = peer;
	r.op = op;
	r.rkey = rkey;
	r.flags = flags;
	r.remote_addr = remote_addr;
	r.iov = (__u64)(uintptr_t)iov;
	r.iovcnt = iovcnt;
	ret = efa_ioctl(fd, KFAB_EFA_IOC_RDMA, &r);
	if (!ret && bytes)
		*bytes = r.bytes;
	return ret;
}

/* RDMA with one local buffer. */
static inline int efa_rdma1(int fd, __u32 peer, __u32 op, __u32 rkey,
			    __u64 remote_addr, void *buf, __u64 len,
			    __u32 flags)
{
	struct kfab_iovec iov = { (__u64)(uintptr_t)buf, len };
	__u64 bytes = ~0ULL;
	int ret;

	ret = efa_rdma(fd, peer, op, rkey, remote_addr, &iov, 1, flags,
		       &bytes);
	if (!ret && bytes != len)
		return -EIO;
	return ret;
}

static inline int efa_set_eventfd(int fd, __u32 qpn, int efd)
{
	struct kfab_efa_eventfd e;

	memset(&e, 0, sizeof(e));
	e.qpn = qpn;
	e.fd = efd;
	return efa_ioctl(fd, KFAB_EFA_IOC_SET_EVENTFD, &e);
}

/* Non-blocking read of an eventfd: its count, 0 when not signalled. */
static inline uint64_t efa_efd_drain(int efd)
{
	uint64_t v = 0;

	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

/* ------------------------------------------------------------------ */
/*
 * The receive ring protocol (top comment of uapi/kfab_efa.h) on C11
 * atomics: owner posting (P.), sender (1. to 4'.), owner consuming (4.)
 * and arming (6.).
 */

/* The owner's local state: its consumer head. */
struct efa_owner {
	__u32 head;
};

/*
 * P.: post up to @n buffers, never more than rx_entries ahead of the
 * consumer head. Returns how many were posted.
 */
static inline unsigned int efa_post(struct efa_queue *q, struct efa_owner *o,
				    unsigned int n)
{
	_Atomic __u32 *posted = hfi_a32(&q->ctrl->posted);
	unsigned int done = 0;
	__u32 p;

	p = atomic_load_explicit(posted, memory_order_relaxed);
	while (done < n && p - o->head < q->rx_entries) {
		p++;
		/* pairs with the sender's acquire of posted (1.) */
		atomic_store_explicit(posted, p, memory_order_release);
		done++;
	}
	return done;
}

#define EFA_SEND_NOTIFY		1	/* delivered; the owner was armed */
#define EFA_RNR			(-EAGAIN)	/* nothing posted: counted */
#define EFA_RNR_INJECTED	(-EBUSY)	/* rnr_inject_ppm: counted */

/*
 * Sender, steps 1 to 4'. @inject_ppm is the receiving device's
 * rnr_inject_ppm (from its status page). Returns 0, EFA_SEND_NOTIFY when
 * the caller must KFAB_EFA_IOC_NOTIFY the owner, EFA_RNR, EFA_RNR_INJECTED
 * or -EMSGSIZE.
 */
static inline int efa_send(struct efa_queue *q, __u32 inject_ppm,
			   const __u8 src_gid[KFAB_EFA_GID_LEN], __u32 src_qpn,
			   __u32 imm, const void *payload, __u32 len)
{
	struct kfab_efa_qp_ctrl *ctrl = q->ctrl;
	struct kfab_efa_rx_entry *e;
	__u32 t, p;

	if (len > q->mtu)
		return -EMSGSIZE;
	t = atomic_load_explicit(hfi_a32(&ctrl->tail), memory_order_relaxed);
	for (;;) {
		/* 1. pairs with the owner's release of posted (P.) */
		p = atomic_load_explicit(hfi_a32(&ctrl->posted),
					 memory_order_acquire);
		if ((__s32)(p - t) <= 0) {
			atomic_fetch_add_explicit(hfi_a64(&ctrl->rnrs), 1,
						  memory_order_relaxed);
			return EFA_RNR;
		}
		if (inject_ppm && (__u32)(random() % 1000000) < inject_ppm) {
			atomic_fetch_add_explicit(hfi_a64(&ctrl->injected_rnrs),
						  1, memory_order_relaxed);
			return EFA_RNR_INJECTED;
		}
		/* a failed CAS reloads t: retry from 1. */
		if (atomic_compare_exchange_weak_explicit(hfi_a32(&ctrl->tail),
							  &t, t + 1,
							  memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}
	/* 2. */
	if (len)
		memcpy(q->bufs + (size_t)(t & (q->rx_entries - 1)) * q->mtu,
		       payload, len);
	e = &q->ring[t & (q->rx_entries - 1)];
	e->len = len;
	memcpy(e->src_gid, src_gid, KFAB_EFA_GID_LEN);
	e->src_qpn = src_qpn;
	e->imm = imm;
	memset(e->hdr, 0, sizeof(e->hdr));
	/* 3. pairs with the owner's acquire of seq (4.) */
	atomic_store_explicit(hfi_a32(&e->seq), t + 1, memory_order_release);
	/* 4'. */
	return kfab_take_armed(&ctrl->armed) ? EFA_SEND_NOTIFY : 0;
}

/* efa_send() into a mapped peer, notifying it when it was armed. */
static inline int efa_peer_send(int fd, struct efa_peer *p,
				const __u8 src_gid[KFAB_EFA_GID_LEN],
				__u32 src_qpn, __u32 imm, const void *payload,
				__u32 len)
{
	int ret = efa_send(&p->q, p->status ? p->status->rnr_inject_ppm : 0,
			   src_gid, src_qpn, imm, payload, len);

	if (ret == EFA_SEND_NOTIFY)
		ret = efa_notify(fd, p->mp.peer);
	return ret;
}

/*
 * Owner, step 4. Returns 1 with the entry in @out and its payload (at most
 * @cap bytes copied) in @payload, or 0 when the next entry is not valid.
 */
static inline int efa_poll(struct efa_queue *q, struct efa_owner *o,
			   struct kfab_efa_rx_entry *out, void *payload,
			   size_t cap)
{
	struct kfab_efa_rx_entry *e = &q->ring[o->head & (q->rx_entries - 1)];

	if (atomic_load_explicit(hfi_a32(&e->seq), memory_order_acquire) !=
	    o->head + 1)
		return 0;
	memcpy(out, e, sizeof(*out));
	if (payload && out->len)
		memcpy(payload, q->bufs + (size_t)(o->head & (q->rx_entries - 1)) *
		       q->mtu, out->len < cap ? out->len : cap);
	o->head += 1;
	return 1;
}

/* Owner, step 6: kfab_arm() on the next entry. */
static inline bool efa_arm(struct efa_queue *q, struct efa_owner *o)
{
	return kfab_arm(&q->ctrl->armed,
			&q->ring[o->head & (q->rx_entries - 1)].seq,
			o->head + 1);
}

static inline __u32 efa_load_dead(struct kfab_efa_qp_ctrl *ctrl)
{
	return atomic_load_explicit(hfi_a32(&ctrl->dead), memory_order_acquire);
}

static inline __u32 efa_load_armed(struct kfab_efa_qp_ctrl *ctrl)
{
	return atomic_load_explicit(hfi_a32(&ctrl->armed), memory_order_acquire);
}

#endif /* KFAB_EFA_UTIL_H */
