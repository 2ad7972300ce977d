/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the EFA device backends.
 *
 * One interface, two backends giving the same memory (DESIGN.md,
 * principle 3):
 *
 *   kmod  /dev/kfab_efa<N>: ioctls and mmap of uapi/kfab_efa.h;
 *   shm   files under /dev/shm/kfab-<uid>/efa<N>/ (or $KFAB_SHM_DIR/efa<N>/)
 *         laid out like the kernel's queues, see efa_backend_shm.c.
 *
 * A struct kfab_efa_dev is one open device: a protection domain holding
 * any number of QPs, memory regions and mapped peers. The data path
 * (struct kfab_efa_ring, efa_ring.h) is the same code on both backends: a
 * backend only creates, maps, registers, wakes and performs device RDMA.
 *
 * Every function returns 0 (or a documented positive value) on success and
 * -errno on failure, after logging what failed through kfab_log().
 */
#ifndef KFAB_ULIB_EFA_DEV_H
#define KFAB_ULIB_EFA_DEV_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "efa_ring.h"
#include "backend.h"
#include "kfab_sys.h"
#include "core/kfab_log.h"

/* An address: what a peer needs to reach a QP (the qkey its capability). */
struct kfab_efa_addr {
	uint8_t gid[KFAB_EFA_GID_LEN];
	uint32_t qpn;
	uint32_t qkey;
};

struct kfab_efa_dev;
struct kfab_ring_parts;

/* A QP of the device: the owner's view of its receive ring. */
struct kfab_efa_qp {
	struct kfab_efa_addr addr;
	struct kfab_efa_ring ring;	/* consumer view */
	/* poll()able: readable after the owner was notified */
	int wake_fd;
	struct kfab_efa_qp *next;	/* the device's list */
};

/*
 * A mapped peer QP: produce into ring with kfab_efa_peer_send(), name it
 * in kfab_efa_rdma(). With the peer device's reorder_ppm, that many
 * packets per million are held back behind the next one (held); a held
 * packet goes with the next send or kfab_efa_peer_flush().
 */
struct kfab_efa_peer {
	uint32_t handle;	/* backend's peer handle, never 0 */
	struct kfab_efa_addr addr;
	struct kfab_efa_ring ring;	/* producer view */
	const struct kfab_efa_status *status;	/* the peer device's knobs */
	/* the packet held back (reorder_ppm) */
	bool held;
	uint32_t held_imm, held_hdrlen, held_len;
	uint32_t held_src_qpn;
	uint8_t held_hdr[KFAB_EFA_RX_HDR_BYTES];
	uint8_t *held_buf;	/* mtu bytes, allocated on first hold */
	uint64_t draw;		/* reorder_ppm's random state, 0: unseeded */
	struct kfab_efa_peer *next;	/* the device's list */
};

/* A registered memory region. */
struct kfab_efa_mr {
	void *addr;
	size_t len;
	uint32_t access;	/* KFAB_EFA_ACCESS_* */
	uint32_t lkey;
	uint32_t rkey;		/* what peers name in kfab_efa_rdma() */
	uint32_t state_index;	/* its word in dev->mr_state */
};

/* The per-device knobs of struct kfab_efa_status, as in sysfs. */
enum kfab_efa_knob {
	KFAB_EFA_KNOB_STATE,		/* KFAB_EFA_STATE_* */
	KFAB_EFA_KNOB_DEVICE_RDMA,	/* KFAB_EFA_RDMA_CAP_* bits */
	KFAB_EFA_KNOB_RNR_RETRY,	/* 0..7, 7: forever */
	KFAB_EFA_KNOB_RNR_INJECT_PPM,	/* 0..KFAB_EFA_KNOB_MAX */
	KFAB_EFA_KNOB_REORDER_PPM,	/* 0..KFAB_EFA_KNOB_MAX */
	KFAB_EFA_KNOB_LINK_RATE_MBPS,	/* 0..KFAB_EFA_KNOB_MAX, 0: unlimited */
};

#define KFAB_EFA_KNOB_MAX	1000000
#define KFAB_EFA_RNR_RETRY_MAX	7
/* how many knobs: they are 0..KFAB_EFA_NKNOBS - 1 */
#define KFAB_EFA_NKNOBS		(KFAB_EFA_KNOB_LINK_RATE_MBPS + 1)

struct kfab_efa_ops {
	const char *name;
	/* a QP with its ring mapped, its wakeup fd registered; posts nothing */
	int (*create_qp)(struct kfab_efa_dev *dev, struct kfab_efa_qp **qp);
	/* destroys and frees a QP of @dev (-EINVAL, not freed: not ours) */
	int (*destroy_qp)(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp);
	/* drain the QP's wakeup fd after it polled readable */
	void (*wake_drain)(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp);
	/*
	 * map the QP at @addr: -EACCES for a wrong qkey, -ENOENT for none,
	 * -ENETDOWN when its device is Down; *peer is allocated by the backend
	 */
	int (*map_peer)(struct kfab_efa_dev *dev,
			const struct kfab_efa_addr *addr,
			struct kfab_efa_peer **peer);
	/*
	 * unmap and free a peer the layer took off dev->peers, dropping a held
	 * packet (kfab_efa_peer_release())
	 */
	void (*peer_free)(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer);
	/*
	 * wake the peer's owner (after kfab_efa_ring_send() said so);
	 * -ECONNRESET once the peer QP is destroyed
	 */
	int (*notify)(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer);
	/* register [addr, addr + len) with KFAB_EFA_ACCESS_* into *mr */
	int (*reg_mr)(struct kfab_efa_dev *dev, void *addr, size_t len,
		      uint32_t access, struct kfab_efa_mr *mr);
	int (*dereg_mr)(struct kfab_efa_dev *dev, struct kfab_efa_mr *mr);
	/*
	 * Device RDMA, KFAB_EFA_RDMA_READ (the peer's region at
	 * @remote_addr into @iov) or _WRITE (@iov into it), checked against
	 * the region's rkey, bounds and access: -EACCES, -EINVAL (bounds),
	 * -ESTALE (the region is stale), -EOPNOTSUPP (the device offers no
	 * such direction: device_rdma), -ECONNRESET (the peer QP is
	 * destroyed), -ENETDOWN (a device is Down). *@bytes copied.
	 */
	int (*rdma)(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer,
		    uint32_t op, uint32_t rkey, uint64_t remote_addr,
		    const struct iovec *iov, int iovcnt, uint32_t flags,
		    uint64_t *bytes);
	/* true once the peer QP is destroyed or its process gone (seldom) */
	bool (*peer_gone)(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer);
	/* releases everything else: QPs, regions; frees @dev */
	void (*close)(struct kfab_efa_dev *dev);
	/* the device's knobs now */
	int (*get_status)(struct kfab_efa_dev *dev, struct kfab_efa_status *st);
	int (*set_knob)(struct kfab_efa_dev *dev, enum kfab_efa_knob knob,
			uint32_t value);
};

/* Common part of a device, first member of each backend's own struct. */
struct kfab_efa_dev {
	const struct kfab_efa_ops *ops;
	unsigned int device;
	struct kfab_efa_device_info info;	/* gid, mtu, rx_entries, ... */
	const struct kfab_efa_status *status;	/* own device's knobs */
	/* KFAB_EFA_MR_STATE_* of this device's regions, by state_index */
	const uint32_t *mr_state;
	struct kfab_efa_qp *qps;
	struct kfab_efa_peer *peers;
};

/*
 * Opens EFA device @device with the given backend. AUTO picks kmod when
 * /dev/kfab_efa<device> exists, else shm, and logs the choice of shm.
 */
int kfab_efa_open(enum kfab_backend backend, unsigned int device,
		  struct kfab_efa_dev **dev);

/* Backend constructors (used by kfab_efa_open). */
int kfab_efa_kmod_open(unsigned int device, struct kfab_efa_dev **dev);
int kfab_efa_shm_open(unsigned int device, struct kfab_efa_dev **dev);

/* True when the kmod device @device exists. */
bool kfab_efa_kmod_present(unsigned int device);
/*
 * How many devices the shm backend has, $KFAB_SHM_EFA_DEVICES (1..8,
 * default 2): 0, or -EINVAL (logged) for a malformed value.
 */
int kfab_efa_shm_devices(uint32_t *n);

static inline int kfab_efa_create_qp(struct kfab_efa_dev *dev,
				     struct kfab_efa_qp **qp)
{
	return dev->ops->create_qp(dev, qp);
}

static inline int kfab_efa_destroy_qp(struct kfab_efa_dev *dev,
				      struct kfab_efa_qp *qp)
{
	return dev->ops->destroy_qp(dev, qp);
}

static inline void kfab_efa_wake_drain(struct kfab_efa_dev *dev,
				       struct kfab_efa_qp *qp)
{
	dev->ops->wake_drain(dev, qp);
}

static inline int kfab_efa_map_peer(struct kfab_efa_dev *dev,
				    const struct kfab_efa_addr *addr,
				    struct kfab_efa_peer **peer)
{
	return KFAB_DEV_PEER_MAPPED(dev, peer,
				    dev->ops->map_peer(dev, addr, peer));
}

/*
 * Unmaps and frees a peer of @dev, dropping a held packet: 0, or -EINVAL
 * (logged) for another.
 */
static inline int kfab_efa_unmap_peer(struct kfab_efa_dev *dev,
				      struct kfab_efa_peer *peer)
{
	return KFAB_DEV_PEER_UNMAP(dev, peer, "efa", dev->device);
}

static inline int kfab_efa_notify(struct kfab_efa_dev *dev,
				  struct kfab_efa_peer *peer)
{
	return dev->ops->notify(dev, peer);
}

static inline int kfab_efa_reg_mr(struct kfab_efa_dev *dev, void *addr,
				  size_t len, uint32_t access,
				  struct kfab_efa_mr *mr)
{
	return dev->ops->reg_mr(dev, addr, len, access, mr);
}

static inline int kfab_efa_dereg_mr(struct kfab_efa_dev *dev,
				    struct kfab_efa_mr *mr)
{
	return dev->ops->dereg_mr(dev, mr);
}

static inline int kfab_efa_rdma(struct kfab_efa_dev *dev,
				struct kfab_efa_peer *peer, uint32_t op,
				uint32_t rkey, uint64_t remote_addr,
				const struct iovec *iov, int iovcnt,
				uint32_t flags, uint64_t *bytes)
{
	return dev->ops->rdma(dev, peer, op, rkey, remote_addr, iov, iovcnt,
			      flags, bytes);
}

static inline bool kfab_efa_peer_gone(struct kfab_efa_dev *dev,
				      struct kfab_efa_peer *peer)
{
	return dev->ops->peer_gone(dev, peer);
}

static inline void kfab_efa_close(struct kfab_efa_dev *dev)
{
	KFAB_DEV_CLOSE(dev);
}

static inline int kfab_efa_get_status(struct kfab_efa_dev *dev,
				      struct kfab_efa_status *st)
{
	return dev->ops->get_status(dev, st);
}

/*
 * Changes one knob, seen at once by every sender. kmod: writes
 * /sys/class/kfab/efa<N>/<knob> (root: -EACCES otherwise). shm: writes
 * the device file. -EINVAL for a value out of range.
 */
static inline int kfab_efa_set_knob(struct kfab_efa_dev *dev,
				    enum kfab_efa_knob knob, uint32_t value)
{
	return dev->ops->set_knob(dev, knob, value);
}

/* The KFAB_EFA_MR_STATE_* word of @mr. */
static inline uint32_t kfab_efa_mr_state(const struct kfab_efa_dev *dev,
					 const struct kfab_efa_mr *mr)
{
	return __atomic_load_n(&dev->mr_state[mr->state_index],
			       __ATOMIC_ACQUIRE);
}

/*
 * True while @mr may be reused as it is: its pages are known to be the
 * ones registered (not stale, not suspect).
 */
static inline bool kfab_efa_mr_valid(const struct kfab_efa_dev *dev,
				     const struct kfab_efa_mr *mr)
{
	return kfab_efa_mr_state(dev, mr) == KFAB_EFA_MR_STATE_VALID;
}

/* Whether this device or @peer's is Down (the state knob). */
static inline bool kfab_efa_link_down(const struct kfab_efa_dev *dev,
				      const struct kfab_efa_peer *peer)
{
	return __atomic_load_n(&dev->status->state, __ATOMIC_RELAXED) ==
	       KFAB_EFA_STATE_DOWN ||
	       (peer->status &&
		__atomic_load_n(&peer->status->state, __ATOMIC_RELAXED) ==
		KFAB_EFA_STATE_DOWN);
}

/*
 * Sends into a mapped peer (kfab_efa_ring_send() with this device's gid
 * and @qp's qpn as the source), holding packets back as the peer device's
 * reorder_ppm asks, and notifies its owner when the ring says so: 0,
 * -EAGAIN (receiver not ready: nothing was sent), -ENETDOWN (this device
 * or the peer's is Down: nothing was sent), -EMSGSIZE, or the notify
 * error.
 */
int kfab_efa_peer_send(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp,
		       struct kfab_efa_peer *peer, const void *hdr,
		       size_t hdrlen, uint32_t imm, const void *payload,
		       size_t len);

/*
 * Sends the packet held back, if any: 0, -EAGAIN (still held), or the
 * notify error.
 */
int kfab_efa_peer_flush(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer);

/*
 * Backends, on unmapping @peer: drops the packet held back, if any, and
 * frees its buffer.
 */
void kfab_efa_peer_release(const struct kfab_efa_dev *dev,
			   struct kfab_efa_peer *peer);

/* "state", "device_rdma", ... as in sysfs; NULL if none. */
const char *kfab_efa_knob_name(enum kfab_efa_knob knob);
/* The largest value of @knob. */
uint32_t kfab_efa_knob_max(enum kfab_efa_knob knob);
/*
 * The value of @knob on a device the kfab_efa module just made: state
 * Active, device_rdma READ|WRITE, rnr_retry 3, the others 0.
 */
uint32_t kfab_efa_knob_default(enum kfab_efa_knob knob);
/*
 * The word sysfs writes and reads for @value of @knob ("Active", "Down";
 * "none", "read", "write", "read write"), NULL for a knob that is a
 * decimal.
 */
const char *kfab_efa_knob_word(enum kfab_efa_knob knob, uint32_t value);
/*
 * Every knob back to kfab_efa_knob_default(), through set_knob(): 0 or
 * its error. shm: the device file goes with the device's last close.
 */
int kfab_efa_reset_knobs(struct kfab_efa_dev *dev);
/* set_knob(): 0, or -EINVAL (logged) for an unknown knob or value. */
int kfab_efa_knob_check(const struct kfab_efa_dev *dev,
			enum kfab_efa_knob knob, uint32_t value);

/* Helpers shared by the backends (efa_dev.c). */
/* The parts of a QP's queues of @entries buffers of @mtu bytes: lengths */
void kfab_efa_ring_parts(uint32_t entries, uint32_t mtu,
			 struct kfab_ring_parts *p);
/* mmap ctrl, ring and bufs of @fd at the offsets, read-write, into @ring */
int kfab_efa_map_ring(int fd, uint64_t ctrl_off, uint64_t ring_off,
		      uint64_t bufs_off, uint32_t entries, uint32_t mtu,
		      const struct kfab_efa_status *status,
		      struct kfab_efa_ring *ring);
void kfab_efa_unmap_ring(struct kfab_efa_ring *ring);
/* off dev->qps (KFAB_LIST_PUSH puts them on): 0, or -EINVAL */
int kfab_efa_qp_unlink(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp);

#endif /* KFAB_ULIB_EFA_DEV_H */
