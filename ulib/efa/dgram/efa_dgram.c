// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: the FI_EP_DGRAM endpoint, fi_efa(7)'s datagram endpoint over
 * one QP of the domain's device.
 *
 * A message is one packet: the payload after the FI_MSG_PREFIX space of
 * the first iovec (EFA_DGRAM_PREFIX_SIZE bytes, not transmitted), at most
 * the domain's mtu, behind a header carrying the sender QP's qkey. The
 * destination is an AV entry, its QP mapped on first use and kept per AV
 * index until the endpoint closes. FI_RM_DISABLED: a receiver without a
 * posted buffer makes the send fail with -FI_EAGAIN (RNR), nothing is
 * queued; a send that went out completes at once.
 *
 * Each posted receive posts one buffer of the QP's ring; the packet that
 * fills it completes the oldest posted receive: the sender's name (gid and
 * qpn from the device, qkey from the header) in the prefix, the payload
 * after it, len counting both (fi_cq(3)). A cancelled receive leaves its
 * ring buffer posted: the next packet lands there and is dropped.
 *
 * Progress polls the ring (the CQs' reads and waits, or their threads
 * under FI_PROGRESS_AUTO); sleepers arm it and poll the QP's wakeup fd.
 * A packet the peer's device holds back (reorder_ppm) goes out with the
 * next progress, at the latest EFA_DGRAM_HELD_USEC into a sleep; the send
 * that leaves one held wakes the progress thread, which may be asleep
 * without a bound, and fi_close() sends what is still held.
 */
#define _DEFAULT_SOURCE
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "core/kfab_msg.h"
#include "core/kfab_peer.h"
#include "efa/efa.h"

/* The ring entry's hdr of a DGRAM packet. */
struct efa_dgram_hdr {
	uint8_t version;	/* EFA_DGRAM_HDR_VERSION */
	uint8_t reserved[3];
	uint32_t qkey;		/* little-endian: the sender QP's qkey */
};

#define EFA_DGRAM_HDR_VERSION	1
/* Ring entries handled per progress call. */
#define EFA_DGRAM_POLL_BUDGET	64
/* Longest sleep while a peer holds a packet back (reorder_ppm). */
#define EFA_DGRAM_HELD_USEC	1000
/* Microseconds between the polls of an auto progress thread. */
#define EFA_DGRAM_AUTO_USEC	1
/* Receives a QP takes when the application gives no rx size. */
#define EFA_DGRAM_RX_DEFAULT	256

struct efa_dgram_rx {
	struct kfab_list link;		/* ep->rx_posted or ep->rx_free */
	void *context;
	struct iovec iov[KFAB_IOV_LIMIT];
	size_t count;
};

/* The endpoint's record of a destination QP (core/kfab_peer.h). */
struct efa_dgram_dest {
	struct kfab_peer base;		/* key: efa_qp_key(gid, qpn) */
	struct kfab_efa_addr addr;	/* from the AV entry */
	struct kfab_efa_peer *peer;	/* mapped on first send */
};

struct efa_dgram_ep {
	struct kfab_progress core;		/* progressed by the CQs */
	struct kfab_ep base;
	struct kfab_domain *domain;
	struct kfab_efa_dev *dev;
	struct kfab_efa_qp *qp;
	struct efa_addr name;
	/* every operation completes, no counters (cntr_cnt 0) */
	struct kfab_ep_side tx, rx;
	size_t max_payload;
	struct efa_dgram_rx *rxs;	/* rx_max of them */
	uint32_t rx_max;
	struct kfab_list rx_posted;	/* oldest first */
	struct kfab_list rx_free;
	/* ring buffers posted for receives since cancelled */
	uint32_t spare;
	struct kfab_peers dests;	/* struct efa_dgram_dest */
	bool held;			/* a mapped peer holds a packet back */
	uint8_t *bounce;		/* gathers a multi-iovec payload */
	uint64_t dropped;		/* packets of cancelled receives */
};

static inline struct efa_dgram_ep *to_ep(struct fid_ep *fid)
{
	return kfab_container_of(fid, struct efa_dgram_ep, base.fid);
}

static inline const struct kfab_provider *kp_of(struct efa_dgram_ep *ep)
{
	return ep->domain->kp;
}

/* ------------------------------------------------------------------ */
/* progress */

static inline struct efa_dgram_dest *dest_of(struct kfab_peer *peer)
{
	return kfab_container_of(peer, struct efa_dgram_dest, base);
}

static void dgram_flush_held(struct efa_dgram_ep *ep)
{
	struct kfab_peer *d;
	bool held = false;

	kfab_peers_for_each(d, &ep->dests) {
		struct kfab_efa_peer *peer = dest_of(d)->peer;

		if (peer && peer->held) {
			kfab_efa_peer_flush(ep->dev, peer);
			held |= peer->held;
		}
	}
	ep->held = held;
}

static size_t iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0;

	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * The packet at the ring's head into the oldest posted receive; true when
 * it was dropped and the receive still needs a buffer (post it again once
 * the entry is released).
 */
static bool dgram_deliver(struct efa_dgram_ep *ep,
			  const struct kfab_efa_ring_entry *ent)
{
	struct efa_dgram_rx *rx;
	struct efa_dgram_hdr hdr;
	struct efa_addr src;
	size_t room, got;

	if (kfab_list_empty(&ep->rx_posted)) {
		ep->spare--;
		ep->dropped++;
		return false;
	}
	memcpy(&hdr, ent->hdr, sizeof(hdr));
	if (hdr.version != EFA_DGRAM_HDR_VERSION) {
		kfab_dbg(kp_of(ep), FI_LOG_EP_DATA,
			 "packet of qpn %u with header version %u dropped\n",
			 ent->src_qpn, hdr.version);
		return true;
	}
	rx = kfab_list_first(&ep->rx_posted, struct efa_dgram_rx, link);
	kfab_list_del(&rx->link);
	efa_name_set(&src, ent->src_gid, ent->src_qpn, le32toh(hdr.qkey));
	memcpy(rx->iov[0].iov_base, &src, EFA_DGRAM_PREFIX_SIZE);
	room = iov_len(rx->iov, rx->count) - EFA_DGRAM_PREFIX_SIZE;
	got = kfab_buf_to_iov(rx->iov, rx->count, EFA_DGRAM_PREFIX_SIZE,
			      ent->payload, ent->len < room ? ent->len : room);
	if (got < ent->len)
		kfab_cq_write_err_why(ep->rx.cq, rx->context, FI_RECV | FI_MSG,
				      FI_ETRUNC, 0,
				      EFA_DGRAM_PREFIX_SIZE + got,
				      ent->len - got, 0, 0, FI_ADDR_NOTAVAIL,
				      "message larger than the receive buffer");
	else
		kfab_cq_write(ep->rx.cq, rx->context, FI_RECV | FI_MSG,
			      EFA_DGRAM_PREFIX_SIZE + got, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	kfab_list_add(&rx->link, &ep->rx_free);
	return false;
}

static int dgram_progress(struct kfab_progress *core)
{
	struct efa_dgram_ep *ep = kfab_container_of(core, struct efa_dgram_ep,
						    core);
	struct kfab_efa_ring *ring = &ep->qp->ring;
	struct kfab_efa_ring_entry ent;
	int n = 0;

	if (kfab_unlikely(ep->held))
		dgram_flush_held(ep);
	while (n < EFA_DGRAM_POLL_BUDGET && kfab_efa_ring_poll(ring, &ent)) {
		bool repost = dgram_deliver(ep, &ent);

		kfab_efa_ring_release(ring);
		if (repost)
			kfab_efa_ring_post(ring, 1);
		n++;
	}
	return n;
}

static bool dgram_arm(struct kfab_progress *core, long *usec)
{
	struct efa_dgram_ep *ep = kfab_container_of(core, struct efa_dgram_ep,
						    core);

	if (ep->held)
		dgram_flush_held(ep);
	*usec = ep->held ? EFA_DGRAM_HELD_USEC : -1;
	return kfab_efa_ring_arm(&ep->qp->ring);
}

static void dgram_drain(struct kfab_progress *core)
{
	struct efa_dgram_ep *ep = kfab_container_of(core, struct efa_dgram_ep,
						    core);

	kfab_efa_wake_drain(ep->dev, ep->qp);
}

/* ------------------------------------------------------------------ */
/* data calls */

static bool mr_covers(const struct kfab_mr *mr, const struct iovec *iov)
{
	uintptr_t b = (uintptr_t)iov->iov_base;

	for (size_t k = 0; k < mr->iov_count; k++) {
		uintptr_t mb = (uintptr_t)mr->iov[k].iov_base;

		if (b >= mb && iov->iov_len <= mr->iov[k].iov_len &&
		    b - mb <= mr->iov[k].iov_len - iov->iov_len)
			return true;
	}
	return false;
}

/*
 * What sends and receives check before the lock: the iovecs, the prefix
 * space in the first, FI_MR_LOCAL's descriptors (fi_mr_desc() of a region
 * of this domain covering each iovec).
 */
static int dgram_check(struct efa_dgram_ep *ep, const char *what,
		       const struct iovec *iov, void **desc, size_t count)
{
	if (kfab_unlikely(!count || count > KFAB_IOV_LIMIT || !iov)) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "%s: %zu iovecs: 1 to %d\n", what, count,
			  KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	if (kfab_unlikely(!iov[0].iov_base ||
			  iov[0].iov_len < EFA_DGRAM_PREFIX_SIZE)) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "%s: the buffer (first iovec) must start with the FI_MSG_PREFIX space, %d bytes (ep_attr->msg_prefix_size)\n",
			  what, EFA_DGRAM_PREFIX_SIZE);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		const struct kfab_mr *mr = desc ? desc[i] : NULL;

		if (kfab_unlikely(!mr || mr->domain != ep->domain ||
				  !mr_covers(mr, &iov[i]))) {
			kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
				  "%s: iovec %zu has no descriptor of a region of this domain covering it: FI_MR_LOCAL, pass fi_mr_desc() of its registration\n",
				  what, i);
			return -FI_EINVAL;
		}
	}
	return 0;
}

static int dest_init(struct kfab_peers *ps, struct kfab_peer *peer,
		     const void *name)
{
	(void)ps;
	return efa_name_get(name, &dest_of(peer)->addr) ? -FI_EINVAL : 0;
}

/* Until the QP is mapped, the name an AV entry gives it is the one used. */
static void dest_bind(struct kfab_peers *ps, struct kfab_peer *peer,
		      const void *name)
{
	struct kfab_efa_addr qa;

	(void)ps;
	if (!dest_of(peer)->peer && !efa_name_get(name, &qa))
		dest_of(peer)->addr = qa;
}

static void dest_release(struct kfab_peers *ps, struct kfab_peer *peer)
{
	struct efa_dgram_ep *ep = kfab_container_of(ps, struct efa_dgram_ep,
						    dests);

	if (dest_of(peer)->peer)
		kfab_efa_unmap_peer(ep->dev, dest_of(peer)->peer);
}

static void dest_print(const struct kfab_peer *peer, char *buf, size_t len)
{
	snprintf(buf, len, "QP %u",
		 kfab_container_of(peer, const struct efa_dgram_dest,
				   base)->addr.qpn);
}

static const struct kfab_peer_ops dest_ops = {
	.size = sizeof(struct efa_dgram_dest),
	.init = dest_init,
	.bind = dest_bind,
	.release = dest_release,
	.print = dest_print,
	.why_eacces = "the name's qkey is not the QP's",
	.why_enoent = "no such QP: its endpoint closed?",
};

/* The mapped QP of AV address @dest; NULL with *@err set (logged). */
static inline struct kfab_efa_peer *dgram_dest(struct efa_dgram_ep *ep,
					       fi_addr_t dest, int *err)
{
	struct kfab_peer *peer = kfab_peers_at(&ep->dests, ep->base.av, dest,
					       "fi_send", err);
	struct efa_dgram_dest *d;
	int ret;

	if (kfab_unlikely(!peer))
		return NULL;
	d = dest_of(peer);
	if (kfab_likely(d->peer != NULL))
		return d->peer;
	ret = kfab_efa_map_peer(ep->dev, &d->addr, &d->peer);
	if (!ret)
		return d->peer;
	d->peer = NULL;
	*err = kfab_peer_unreachable(&ep->dests, peer, ret);
	return NULL;
}

static ssize_t dgram_send(struct fid_ep *fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, uint64_t data, void *context,
			  uint64_t flags)
{
	struct efa_dgram_ep *ep = to_ep(fid);
	struct efa_dgram_hdr hdr = { .version = EFA_DGRAM_HDR_VERSION };
	struct kfab_efa_peer *peer;
	const void *payload;
	size_t len;
	int ret;

	(void)tag, (void)data;
	if (kfab_unlikely(flags & (FI_INJECT | FI_REMOTE_CQ_DATA))) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "fi_sendmsg: flags %#llx: FI_EP_DGRAM has no inject and no CQ data\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	ret = dgram_check(ep, "fi_send", iov, desc, count);
	if (kfab_unlikely(ret))
		return ret;
	len = iov_len(iov, count) - EFA_DGRAM_PREFIX_SIZE;
	if (kfab_unlikely(len > ep->max_payload)) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "fi_send: %zu bytes after the prefix: a datagram carries at most %zu (ep_attr->max_msg_size)\n",
			  len, ep->max_payload);
		return -FI_EMSGSIZE;
	}
	ret = efa_ep_lock(ep->domain, &ep->base.enabled);
	if (kfab_unlikely(ret))
		return ret;
	peer = dgram_dest(ep, dest, &ret);
	if (kfab_unlikely(!peer))
		goto out;
	if (count == 1) {
		payload = (const uint8_t *)iov[0].iov_base +
			  EFA_DGRAM_PREFIX_SIZE;
	} else {
		size_t off = 0;

		for (size_t i = 0; i < count; i++) {
			size_t skip = i ? 0 : EFA_DGRAM_PREFIX_SIZE;

			memcpy(ep->bounce + off,
			       (const uint8_t *)iov[i].iov_base + skip,
			       iov[i].iov_len - skip);
			off += iov[i].iov_len - skip;
		}
		payload = ep->bounce;
	}
	hdr.qkey = htole32(ep->qp->addr.qkey);
	ret = kfab_efa_peer_send(ep->dev, ep->qp, peer, &hdr, sizeof(hdr), 0,
				 payload, len);
	if (kfab_unlikely(peer->held && !ep->held)) {
		ep->held = true;
		kfab_cq_progress_kick(ep->tx.cq);
	}
	if (kfab_likely(!ret)) {
		kfab_cq_write(ep->tx.cq, context, FI_SEND | FI_MSG, 0, NULL, 0,
			      0, FI_ADDR_NOTAVAIL);
	} else if (ret == -EAGAIN) {
		/* receiver not ready: FI_RM_DISABLED, the application retries */
		ret = -FI_EAGAIN;
	} else if (ret == -EMSGSIZE) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "fi_send: %zu bytes exceed the mtu of the peer's device\n",
			  len);
		ret = -FI_EMSGSIZE;
	} else if (ret == -ENETDOWN) {
		kfab_cq_write_err_why(ep->tx.cq, context, FI_SEND | FI_MSG,
				      FI_ENETDOWN, ret, 0, 0, 0, 0,
				      FI_ADDR_NOTAVAIL,
				      "this device or the destination's is Down: nothing was sent");
		ret = 0;
	} else {
		/* published, but its owner could not be woken: gone */
		kfab_cq_write_err_why(ep->tx.cq, context, FI_SEND | FI_MSG,
				      FI_EIO, ret, 0, 0, 0, 0,
				      FI_ADDR_NOTAVAIL,
				      "the destination QP is gone");
		ret = 0;
	}
out:
	kfab_unlock(&ep->domain->lock);
	return ret;
}

static ssize_t dgram_recv(struct fid_ep *fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *context,
			  uint64_t flags)
{
	struct efa_dgram_ep *ep = to_ep(fid);
	struct efa_dgram_rx *rx;
	int ret;

	(void)src, (void)tag, (void)ignore;
	if (kfab_unlikely(flags & FI_MULTI_RECV)) {
		kfab_warn(kp_of(ep), FI_LOG_EP_DATA,
			  "fi_recvmsg: FI_MULTI_RECV is not supported on FI_EP_DGRAM\n");
		return -FI_EBADFLAGS;
	}
	ret = dgram_check(ep, "fi_recv", iov, desc, count);
	if (kfab_unlikely(ret))
		return ret;
	ret = efa_ep_lock(ep->domain, &ep->base.enabled);
	if (kfab_unlikely(ret))
		return ret;
	if (kfab_unlikely(kfab_list_empty(&ep->rx_free))) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if (ep->spare)
		ep->spare--;
	else
		kfab_efa_ring_post(&ep->qp->ring, 1);
	rx = kfab_list_first(&ep->rx_free, struct efa_dgram_rx, link);
	kfab_list_del(&rx->link);
	rx->context = context;
	memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->count = count;
	kfab_list_add_tail(&rx->link, &ep->rx_posted);
out:
	kfab_unlock(&ep->domain->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* operations FI_EP_DGRAM does not have */

static int dgram_nosys(struct fid_ep *fid, const char *what)
{
	kfab_warn(kp_of(to_ep(fid)), FI_LOG_EP_DATA,
		  "%s: not supported on a kfab_efa FI_EP_DGRAM endpoint (FI_MSG with FI_SEND and FI_RECV only: fi_send, fi_recv and their v/msg forms)\n",
		  what);
	return -FI_ENOSYS;
}

/* One refusal per operation: the signatures differ, the body does not. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DGRAM_NOSYS(type, fn, what, ...) \
	static type fn(struct fid_ep *fid, __VA_ARGS__) \
	{ \
		return dgram_nosys(fid, what); \
	}

DGRAM_NOSYS(ssize_t, dgram_msg_inject, "fi_inject", const void *buf,
	    size_t len, fi_addr_t dest)
DGRAM_NOSYS(ssize_t, dgram_msg_senddata, "fi_senddata", const void *buf,
	    size_t len, void *desc, uint64_t data, fi_addr_t dest,
	    void *context)
DGRAM_NOSYS(ssize_t, dgram_msg_injectdata, "fi_injectdata", const void *buf,
	    size_t len, uint64_t data, fi_addr_t dest)

DGRAM_NOSYS(ssize_t, dgram_tag_recv, "fi_trecv", void *buf, size_t len,
	    void *desc, fi_addr_t src, uint64_t tag, uint64_t ignore,
	    void *context)
DGRAM_NOSYS(ssize_t, dgram_tag_recvv, "fi_trecvv", const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t src, uint64_t tag,
	    uint64_t ignore, void *context)
DGRAM_NOSYS(ssize_t, dgram_tag_recvmsg, "fi_trecvmsg",
	    const struct fi_msg_tagged *msg, uint64_t flags)
DGRAM_NOSYS(ssize_t, dgram_tag_send, "fi_tsend", const void *buf, size_t len,
	    void *desc, fi_addr_t dest, uint64_t tag, void *context)
DGRAM_NOSYS(ssize_t, dgram_tag_sendv, "fi_tsendv", const struct iovec *iov,
	    void **desc, size_t count, fi_addr_t dest, uint64_t tag,
	    void *context)
DGRAM_NOSYS(ssize_t, dgram_tag_sendmsg, "fi_tsendmsg",
	    const struct fi_msg_tagged *msg, uint64_t flags)
DGRAM_NOSYS(ssize_t, dgram_tag_inject, "fi_tinject", const void *buf,
	    size_t len, fi_addr_t dest, uint64_t tag)
DGRAM_NOSYS(ssize_t, dgram_tag_senddata, "fi_tsenddata", const void *buf,
	    size_t len, void *desc, uint64_t data, fi_addr_t dest,
	    uint64_t tag, void *context)
DGRAM_NOSYS(ssize_t, dgram_tag_injectdata, "fi_tinjectdata",
	    const void *buf, size_t len, uint64_t data, fi_addr_t dest,
	    uint64_t tag)

DGRAM_NOSYS(ssize_t, dgram_at_write, "fi_atomic", const void *buf,
	    size_t count, void *desc, fi_addr_t dest, uint64_t addr,
	    uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_writev, "fi_atomicv", const struct fi_ioc *iov,
	    void **desc, size_t count, fi_addr_t dest, uint64_t addr,
	    uint64_t key, enum fi_datatype dt, enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_writemsg, "fi_atomicmsg",
	    const struct fi_msg_atomic *msg, uint64_t flags)
DGRAM_NOSYS(ssize_t, dgram_at_inject, "fi_inject_atomic", const void *buf,
	    size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op)
DGRAM_NOSYS(ssize_t, dgram_at_readwrite, "fi_fetch_atomic", const void *buf,
	    size_t count, void *desc, void *result, void *result_desc,
	    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
	    enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_readwritev, "fi_fetch_atomicv",
	    const struct fi_ioc *iov, void **desc, size_t count,
	    struct fi_ioc *resultv, void **result_desc, size_t result_count,
	    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
	    enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_readwritemsg, "fi_fetch_atomicmsg",
	    const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
	    void **result_desc, size_t result_count, uint64_t flags)
DGRAM_NOSYS(ssize_t, dgram_at_compwrite, "fi_compare_atomic",
	    const void *buf, size_t count, void *desc, const void *compare,
	    void *compare_desc, void *result, void *result_desc,
	    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
	    enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_compwritev, "fi_compare_atomicv",
	    const struct fi_ioc *iov, void **desc, size_t count,
	    const struct fi_ioc *comparev, void **compare_desc,
	    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
	    enum fi_datatype dt, enum fi_op op, void *context)
DGRAM_NOSYS(ssize_t, dgram_at_compwritemsg, "fi_compare_atomicmsg",
	    const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
	    void **compare_desc, size_t compare_count,
	    struct fi_ioc *resultv, void **result_desc, size_t result_count,
	    uint64_t flags)
DGRAM_NOSYS(int, dgram_at_writevalid, "fi_atomicvalid", enum fi_datatype dt,
	    enum fi_op op, size_t *count)
DGRAM_NOSYS(int, dgram_at_readwritevalid, "fi_fetch_atomicvalid",
	    enum fi_datatype dt, enum fi_op op, size_t *count)
DGRAM_NOSYS(int, dgram_at_compwritevalid, "fi_compare_atomicvalid",
	    enum fi_datatype dt, enum fi_op op, size_t *count)

#undef DGRAM_NOSYS
#pragma GCC diagnostic pop

/* The core's sends and receives; no inject, no CQ data, no tags. */
static struct kfab_msg_ops dgram_msg_ops = {
	.msg = {
		.size = sizeof(struct fi_ops_msg),
		.recv = kfab_msg_recv,
		.recvv = kfab_msg_recvv,
		.recvmsg = kfab_msg_recvmsg,
		.send = kfab_msg_send,
		.sendv = kfab_msg_sendv,
		.sendmsg = kfab_msg_sendmsg,
		.inject = dgram_msg_inject,
		.senddata = dgram_msg_senddata,
		.injectdata = dgram_msg_injectdata,
	},
	.tagged = {
		.size = sizeof(struct fi_ops_tagged),
		.recv = dgram_tag_recv,
		.recvv = dgram_tag_recvv,
		.recvmsg = dgram_tag_recvmsg,
		.send = dgram_tag_send,
		.sendv = dgram_tag_sendv,
		.sendmsg = dgram_tag_sendmsg,
		.inject = dgram_tag_inject,
		.senddata = dgram_tag_senddata,
		.injectdata = dgram_tag_injectdata,
	},
	.send = dgram_send,
	.recv = dgram_recv,
};

/* The rma hook of dgram_fi_ops: FI_EP_DGRAM has no RMA. */
static ssize_t dgram_rma(struct fid_ep *fid, bool read,
			 const struct iovec *iov, size_t count, fi_addr_t peer,
			 uint64_t addr, uint64_t key, uint64_t data,
			 void *context, uint64_t flags)
{
	(void)iov, (void)count, (void)peer, (void)addr, (void)key;
	(void)data, (void)context, (void)flags;
	return dgram_nosys(fid, read ? "fi_read (RMA)" : "fi_write (RMA)");
}

static struct fi_ops_atomic dgram_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = dgram_at_write,
	.writev = dgram_at_writev,
	.writemsg = dgram_at_writemsg,
	.inject = dgram_at_inject,
	.readwrite = dgram_at_readwrite,
	.readwritev = dgram_at_readwritev,
	.readwritemsg = dgram_at_readwritemsg,
	.compwrite = dgram_at_compwrite,
	.compwritev = dgram_at_compwritev,
	.compwritemsg = dgram_at_compwritemsg,
	.writevalid = dgram_at_writevalid,
	.readwritevalid = dgram_at_readwritevalid,
	.compwritevalid = dgram_at_compwritevalid,
};

/* ------------------------------------------------------------------ */
/* control */

static inline struct efa_dgram_ep *fid_to_ep(fid_t fid)
{
	return to_ep(kfab_container_of(fid, struct fid_ep, fid));
}

static ssize_t dgram_cancel(struct fid *fid, void *context)
{
	struct efa_dgram_ep *ep = fid_to_ep(fid);
	struct kfab_list *pos;

	kfab_list_for_each(pos, &ep->rx_posted) {
		struct efa_dgram_rx *rx =
			kfab_list_entry(pos, struct efa_dgram_rx, link);

		if (rx->context != context)
			continue;
		kfab_list_del(&rx->link);
		kfab_list_add(&rx->link, &ep->rx_free);
		ep->spare++;
		kfab_cq_write_err_why(ep->rx.cq, context, FI_RECV | FI_MSG,
				      FI_ECANCELED, 0, 0, 0, 0, 0,
				      FI_ADDR_NOTAVAIL, "receive cancelled");
		return 0;
	}
	return -FI_ENOENT;
}

static int dgram_bind_check(struct fid *fid, struct fid *bfid,
			    uint64_t flags)
{
	const struct kfab_provider *kp = kp_of(fid_to_ep(fid));

	if (bfid->fclass == FI_CLASS_CQ &&
	    (flags & FI_SELECTIVE_COMPLETION)) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_ep_bind(CQ): flags %#llx: use FI_TRANSMIT, FI_RECV (no FI_SELECTIVE_COMPLETION: every operation completes)\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (bfid->fclass != FI_CLASS_CNTR)
		return 0;
	kfab_warn(kp, FI_LOG_EP_CTRL,
		  "fi_ep_bind(counter): counters are not supported on FI_EP_DGRAM (domain_attr->cntr_cnt 0): use a CQ\n");
	return -FI_ENOSYS;
}

static void dgram_free(struct efa_dgram_ep *ep)
{
	kfab_peers_fini(&ep->dests);
	if (ep->qp)
		kfab_efa_destroy_qp(ep->dev, ep->qp);
	free(ep->rxs);
	free(ep->bounce);
	free(ep);
}

static void dgram_closed(struct fid *fid)
{
	struct efa_dgram_ep *ep = fid_to_ep(fid);

	/* what completed went out: a packet held back too, unless RNR */
	if (ep->held)
		dgram_flush_held(ep);
	kfab_info(kp_of(ep), FI_LOG_EP_CTRL,
		  "endpoint qpn %u on %s closed: %llu packets of cancelled receives dropped\n",
		  ep->qp->addr.qpn, ep->domain->name,
		  (unsigned long long)ep->dropped);
	dgram_free(ep);
}

static struct kfab_ep_ops dgram_fi_ops = {
	.ops = KFAB_EP_FI_OPS(efa_ep_ops_open),
	.bind_check = dgram_bind_check,
	.free = dgram_closed,
	.rma = dgram_rma,
	.cancel = dgram_cancel,
};

/* ------------------------------------------------------------------ */
/* fi_endpoint */

int efa_dgram_open(struct kfab_domain *dom, struct fi_info *info,
		   struct fid_ep **out, void *context)
{
	struct efa_domain *ed = efa_domain_of(dom);
	struct efa_dgram_ep *ep;
	size_t rx_size = info && info->rx_attr ? info->rx_attr->size : 0;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		goto nomem;
	kfab_progress_init(&ep->core, dgram_progress, dgram_arm, dgram_drain,
			   EFA_DGRAM_AUTO_USEC);
	kfab_ep_init(&ep->base, dom, &ep->core, &ep->tx, &ep->rx, &ep->name,
		     EFA_ADDRLEN, info);
	ep->domain = dom;
	ep->dev = ed->dev;
	ep->max_payload = ed->max_payload;
	kfab_list_init(&ep->rx_posted);
	kfab_list_init(&ep->rx_free);
	kfab_peers_init(&ep->dests, &dest_ops, dom->kp);
	ret = efa_qp_open(dom, &ep->qp, &ep->name);
	if (ret) {
		dgram_free(ep);
		return ret;
	}
	ep->core.wake_fd = ep->qp->wake_fd;
	/* every posted receive holds a buffer of the ring */
	ep->rx_max = ep->qp->ring.entries;
	if (!rx_size)
		rx_size = EFA_DGRAM_RX_DEFAULT;
	if (rx_size < ep->rx_max)
		ep->rx_max = (uint32_t)rx_size;
	ep->rxs = calloc(ep->rx_max, sizeof(*ep->rxs));
	ep->bounce = malloc(ep->max_payload ? ep->max_payload : 1);
	if (!ep->rxs || !ep->bounce) {
		dgram_free(ep);
		goto nomem;
	}
	for (uint32_t i = 0; i < ep->rx_max; i++)
		kfab_list_add_tail(&ep->rxs[i].link, &ep->rx_free);

	kfab_ep_fid_init(&ep->base, FI_CLASS_EP, context, &dgram_fi_ops,
			 &dgram_msg_ops, &dgram_atomic_ops);
	kfab_domain_hold(dom);
	kfab_info(dom->kp, FI_LOG_EP_CTRL,
		  "FI_EP_DGRAM endpoint on %s: qpn %u, %u receives, %zu bytes a datagram\n",
		  dom->name, ep->qp->addr.qpn, ep->rx_max, ep->max_payload);
	*out = &ep->base.fid;
	return 0;
nomem:
	kfab_warn(dom->kp, FI_LOG_EP_CTRL, "fi_endpoint: out of memory\n");
	return -FI_ENOMEM;
}
