/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the HFI device backends.
 *
 * One interface, two backends giving the same memory (DESIGN.md,
 * principle 3):
 *
 *   kmod  /dev/kfab_hfi<N>: ioctls and mmap of uapi/kfab_hfi.h;
 *   shm   files under /dev/shm/kfab-<uid>/hfi<N>/ (or $KFAB_SHM_DIR/hfi<N>/)
 *         laid out like the kernel's queues, see hfi_backend_shm.c.
 *
 * The data path (struct kfab_hfi_ring, hfi_ring.h) is the same code on
 * both: a backend only assigns, maps, wakes and copies large payloads.
 *
 * Every function returns 0 (or a documented positive value) on success and
 * -errno on failure, after logging what failed through kfab_log().
 */
#ifndef KFAB_ULIB_HFI_DEV_H
#define KFAB_ULIB_HFI_DEV_H

#include <errno.h>
#include <stdint.h>
#include <sys/uio.h>

#include "hfi_ring.h"
#include "backend.h"
#include "kfab_sys.h"
#include "core/kfab_log.h"

struct kfab_hfi_dev;
struct kfab_ring_parts;

/* A mapped peer context: produce into ring, pass the struct to the ops. */
struct kfab_hfi_peer {
	uint32_t handle;	/* backend's peer handle, never 0 */
	uint32_t lid;
	uint32_t ctxt;
	uint32_t pad;
	struct kfab_hfi_ring ring;	/* producer view of the peer's queues */
	const struct kfab_hfi_status *status;	/* the peer unit's knobs */
	struct kfab_hfi_peer *next;	/* the device's list of peers */
};

/*
 * One context of the caller's user on a unit, as kfab_hfi_list_ctxts()
 * reports it: the kmod backend's KFAB_HFI_IOC_LIST_CTXTS entry, or what
 * the shm backend reads from the context's file.
 */
struct kfab_hfi_ctxt_desc {
	uint32_t unit;
	uint32_t ctxt;
	uint32_t jkey;
	uint16_t pkey;
	uint8_t sl;
	uint8_t pad;
	int32_t pid;		/* owner process, 0: gone or not visible */
	uint32_t flags;		/* KFAB_HFI_CTXT_* of uapi/kfab_hfi.h */
	uint32_t peer_refs;	/* kmod: MAP_PEER handles on it; shm: 0 */
	uint32_t rhq_entries;
	uint32_t eager_count;
	uint32_t eager_size;
	uint32_t ntids;		/* TID buffers registered */
	uint64_t tid_pages;	/* pages they span (kmod: pinned) */
	uint64_t rhq_full_drops;	/* the ctrl page's drop counters */
	uint64_t eager_full_drops;
	uint64_t injected_drops;
};

/* The per-unit knobs of struct kfab_hfi_status. */
enum kfab_hfi_knob {
	KFAB_HFI_KNOB_STATE,		/* KFAB_HFI_STATE_* */
	KFAB_HFI_KNOB_DROP_PPM,		/* 0..KFAB_HFI_KNOB_MAX */
	KFAB_HFI_KNOB_LINK_RATE_MBPS,	/* 0..KFAB_HFI_KNOB_MAX, 0: unlimited */
};

#define KFAB_HFI_KNOB_MAX	1000000
/* how many knobs: they are 0..KFAB_HFI_NKNOBS - 1 */
#define KFAB_HFI_NKNOBS		(KFAB_HFI_KNOB_LINK_RATE_MBPS + 1)

struct kfab_hfi_ops {
	const char *name;
	/* assign a context and map its queues into dev->ring */
	int (*assign)(struct kfab_hfi_dev *dev, const uint8_t uuid[16],
		      uint16_t pkey, uint8_t sl);
	/* map (lid, ctxt) of the same job: *peer is allocated by the backend */
	int (*map_peer)(struct kfab_hfi_dev *dev, uint32_t lid, uint32_t ctxt,
			struct kfab_hfi_peer **peer);
	/* unmap and free a peer the layer took off dev->peers */
	void (*peer_free)(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer);
	/* wake the peer's owner (after kfab_hfi_ring_send() said so) */
	int (*notify)(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer);
	/* kmod: an eventfd of the caller to signal instead of the internal one */
	int (*set_eventfd)(struct kfab_hfi_dev *dev, int efd);
	/* expected receive: register [addr, addr + len) for peers' SDMA */
	int (*tid_update)(struct kfab_hfi_dev *dev, void *addr, size_t len,
			  uint32_t *handle);
	int (*tid_free)(struct kfab_hfi_dev *dev, uint32_t handle);
	/* copy @iov into the peer's TID buffer @tid at @offset, in one step */
	int (*sdma)(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		    uint32_t tid, uint64_t offset, const struct iovec *iov,
		    int iovcnt, uint32_t flags, uint64_t *bytes);
	/* drain the wakeup fd after it polled readable */
	void (*wake_drain)(struct kfab_hfi_dev *dev);
	/*
	 * true once the peer's owner is gone: its context was released (the
	 * dead word), or, on shm, its process exited without releasing it;
	 * a system call on shm, so call it seldom
	 */
	bool (*peer_gone)(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer);
	/* releases what the backend holds, the peers gone already */
	void (*close)(struct kfab_hfi_dev *dev);
	/* the caller's contexts on the unit; assigned or not */
	int (*list_ctxts)(struct kfab_hfi_dev *dev,
			  struct kfab_hfi_ctxt_desc *descs, uint32_t max,
			  uint32_t *total);
	/* the unit's knobs now; assigned or not */
	int (*get_status)(struct kfab_hfi_dev *dev, struct kfab_hfi_status *st);
	int (*set_knob)(struct kfab_hfi_dev *dev, enum kfab_hfi_knob knob,
			uint32_t value);
	int (*reset_knobs)(struct kfab_hfi_dev *dev);
};

/* Common part of a device, first member of each backend's own struct. */
struct kfab_hfi_dev {
	const struct kfab_hfi_ops *ops;
	unsigned int unit;
	int assigned;
	/* poll()able: readable after the owner was notified; -1 before assign */
	int wake_fd;
	struct kfab_hfi_version version;	/* unit, lid, nctxts, ... */
	struct kfab_hfi_ctxt_info info;		/* valid once assigned */
	struct kfab_hfi_ring ring;		/* own queues, consumer view */
	const struct kfab_hfi_status *status;	/* own unit's knobs */
	struct kfab_hfi_peer *peers;	/* mapped peers, freed by close */
};

/*
 * Opens HFI unit @unit with the given backend. AUTO picks kmod when
 * /dev/kfab_hfi<unit> exists, else shm, and logs the choice of shm.
 */
int kfab_hfi_open(enum kfab_backend backend, unsigned int unit,
		  struct kfab_hfi_dev **dev);

/* Backend constructors (used by kfab_hfi_open). */
int kfab_hfi_kmod_open(unsigned int unit, struct kfab_hfi_dev **dev);
int kfab_hfi_shm_open(unsigned int unit, struct kfab_hfi_dev **dev);

/* True when the kmod device of @unit exists. */
int kfab_hfi_kmod_present(unsigned int unit);

static inline int kfab_hfi_assign(struct kfab_hfi_dev *dev,
				  const uint8_t uuid[16], uint16_t pkey,
				  uint8_t sl)
{
	return dev->ops->assign(dev, uuid, pkey, sl);
}

static inline int kfab_hfi_map_peer(struct kfab_hfi_dev *dev, uint32_t lid,
				    uint32_t ctxt, struct kfab_hfi_peer **peer)
{
	return KFAB_DEV_PEER_MAPPED(dev, peer,
				    dev->ops->map_peer(dev, lid, ctxt, peer));
}

/* Unmaps and frees a peer of @dev: 0, or -EINVAL (logged) for another. */
static inline int kfab_hfi_unmap_peer(struct kfab_hfi_dev *dev,
				      struct kfab_hfi_peer *peer)
{
	return KFAB_DEV_PEER_UNMAP(dev, peer, "hfi", dev->unit);
}

static inline int kfab_hfi_notify(struct kfab_hfi_dev *dev,
				  struct kfab_hfi_peer *peer)
{
	return dev->ops->notify(dev, peer);
}

static inline int kfab_hfi_set_eventfd(struct kfab_hfi_dev *dev, int efd)
{
	return dev->ops->set_eventfd(dev, efd);
}

static inline int kfab_hfi_tid_update(struct kfab_hfi_dev *dev, void *addr,
				      size_t len, uint32_t *handle)
{
	return dev->ops->tid_update(dev, addr, len, handle);
}

static inline int kfab_hfi_tid_free(struct kfab_hfi_dev *dev, uint32_t handle)
{
	return dev->ops->tid_free(dev, handle);
}

static inline int kfab_hfi_sdma(struct kfab_hfi_dev *dev,
				struct kfab_hfi_peer *peer, uint32_t tid,
				uint64_t offset, const struct iovec *iov,
				int iovcnt, uint32_t flags, uint64_t *bytes)
{
	return dev->ops->sdma(dev, peer, tid, offset, iov, iovcnt, flags,
			      bytes);
}

static inline void kfab_hfi_wake_drain(struct kfab_hfi_dev *dev)
{
	dev->ops->wake_drain(dev);
}

static inline bool kfab_hfi_peer_gone(struct kfab_hfi_dev *dev,
				      struct kfab_hfi_peer *peer)
{
	return dev->ops->peer_gone(dev, peer);
}

/*
 * Releases the context and everything the device holds, including peers
 * not unmapped yet (their pointers are invalid afterwards).
 */
static inline void kfab_hfi_close(struct kfab_hfi_dev *dev)
{
	KFAB_DEV_CLOSE(dev);
}

/*
 * The contexts of the unit of @dev owned by the caller's user (kmod: the
 * effective uid; shm: every live context file under the caller's base),
 * in context order: the first @max into @descs (which may be NULL when
 * @max is 0). Returns how many were filled and sets *@total to how many
 * there are; a caller whose array was too small calls again with room
 * for *@total. Works whether or not @dev holds a context.
 */
static inline int kfab_hfi_list_ctxts(struct kfab_hfi_dev *dev,
				      struct kfab_hfi_ctxt_desc *descs,
				      uint32_t max, uint32_t *total)
{
	return dev->ops->list_ctxts(dev, descs, max, total);
}

/*
 * The unit's knobs and identity (abi_version, unit, lid, state, drop_ppm,
 * link_rate_mbps) as senders see them. kmod: from sysfs. shm: from the
 * unit file; 1 when it does not exist yet, with the values it would be
 * created with.
 */
static inline int kfab_hfi_get_status(struct kfab_hfi_dev *dev,
				      struct kfab_hfi_status *st)
{
	return dev->ops->get_status(dev, st);
}

/*
 * Changes one knob of the unit, seen at once by every sender. kmod:
 * writes /sys/class/kfab/hfi<N>/<knob>, which needs root (-EACCES).
 * shm: writes the unit file, creating it if need be, and keeps it after
 * the unit's last context is gone. -EINVAL for a value out of range.
 */
static inline int kfab_hfi_set_knob(struct kfab_hfi_dev *dev,
				    enum kfab_hfi_knob knob, uint32_t value)
{
	return dev->ops->set_knob(dev, knob, value);
}

/*
 * Every knob back to kfab_hfi_knob_default(). shm: the unit file is no
 * longer kept: it goes with the unit's last context, or now if none.
 */
static inline int kfab_hfi_reset_knobs(struct kfab_hfi_dev *dev)
{
	return dev->ops->reset_knobs(dev);
}

/* "state", "drop_ppm" or "link_rate_mbps", as in sysfs; NULL if none. */
static inline const char *kfab_hfi_knob_name(enum kfab_hfi_knob knob)
{
	switch (knob) {
	case KFAB_HFI_KNOB_STATE:
		return "state";
	case KFAB_HFI_KNOB_DROP_PPM:
		return "drop_ppm";
	case KFAB_HFI_KNOB_LINK_RATE_MBPS:
		return "link_rate_mbps";
	}
	return NULL;
}

/* The largest value of @knob. */
static inline uint32_t kfab_hfi_knob_max(enum kfab_hfi_knob knob)
{
	return knob == KFAB_HFI_KNOB_STATE ? KFAB_HFI_STATE_ACTIVE :
					     KFAB_HFI_KNOB_MAX;
}

/* The value of @knob on a unit the module (or the shm backend) just made. */
static inline uint32_t kfab_hfi_knob_default(enum kfab_hfi_knob knob)
{
	return knob == KFAB_HFI_KNOB_STATE ? KFAB_HFI_STATE_ACTIVE : 0;
}

/*
 * The word sysfs writes and reads for @value of @knob ("Active", "Down"),
 * NULL for a knob that is a decimal.
 */
static inline const char *kfab_hfi_knob_word(enum kfab_hfi_knob knob,
					     uint32_t value)
{
	return knob == KFAB_HFI_KNOB_STATE ? kfab_state_word(value) : NULL;
}

/*
 * Send into a mapped peer and notify its owner when the ring says so:
 * 0, -EAGAIN (dropped, counted), -EMSGSIZE, or the notify error.
 */
int kfab_hfi_peer_send(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		       const void *hdr, size_t hdrlen, const void *payload,
		       size_t len);

/* Helpers shared by the backends (hfi_dev.c). */
/* The parts of a context's queues of that geometry: lengths */
void kfab_hfi_ring_parts(uint32_t rhq_entries, uint32_t eager_count,
			 uint32_t eager_size, struct kfab_ring_parts *p);
/* mmap ctrl, rhq and eager of @fd at the offsets, read-write, into @ring */
int kfab_hfi_map_ring(int fd, uint64_t ctrl_off, uint64_t rhq_off,
		      uint64_t eager_off, uint32_t rhq_entries,
		      uint32_t eager_count, uint32_t eager_size,
		      struct kfab_hfi_ring *ring);
void kfab_hfi_unmap_ring(struct kfab_hfi_ring *ring);
/* set_knob(): 0, or -EINVAL (logged) for an unknown knob or value. */
static inline int kfab_hfi_knob_check(const struct kfab_hfi_dev *dev,
				      enum kfab_hfi_knob knob, uint32_t value)
{
	return kfab_knob_check("hfi", dev->unit, (int)knob,
			       kfab_hfi_knob_name(knob),
			       kfab_hfi_knob_max(knob), value);
}

#endif /* KFAB_ULIB_HFI_DEV_H */
