/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_efa: emulated EFA-style devices.
 *
 * Objects and their locks:
 *
 *   efa_device    one per /dev/kfab_efa<N>, lives from module init to exit.
 *                 dev->lock guards the QP table (qpn -> QP), the QP count,
 *                 the state and knobs and the retired RNR totals
 *                 (kc.retired). The MR
 *                 table (rkey -> MR) is guarded by its own xa_lock, under
 *                 which peers' RDMA takes a reference on the pinned pages.
 *   efa_qp        an SRD queue pair, kref'd: its owner file holds one
 *                 reference, every peer handle another. qp->q.lock guards
 *                 the dead flag and wakeups of the QP's eventfd.
 *   efa_mr        a memory region, owned by its file alone (no refcount:
 *                 peers only ever hold its kfab_pinned). mr->lock guards
 *                 the pinned pages' publication and the stale flag against
 *                 the MMU notifier, which may not sleep.
 *   efa_filedata  one per open file, the protection domain, a struct
 *                 kfab_file; its lock (fd->f.lock) serialises its ioctls
 *                 and guards its mmap table, QPs, MRs and peer handles.
 *
 * Lock order: fd->f.lock, then dev->lock, then qp->q.lock, then the MR table's
 * xa_lock, then mr->lock. mmap() takes none of them: it runs under the mmap
 * lock, which ioctls take inside fd->f.lock when they fault or pin.
 *
 * Prototypes below are grouped by the file that implements them.
 */
#ifndef _KFAB_EFA_H
#define _KFAB_EFA_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include "../kfab_core.h"
#include "efa_uapi.h"

#define EFA_MAX_DEVICES		8
#define EFA_MAX_QPS		1024

/* The two sender-kept RNR counters of a ctrl page. */
enum efa_rnr {
	EFA_RNR,
	EFA_RNR_INJECTED,
	EFA_NR_RNRS
};

struct efa_device {
	u32 index;		/* N of /dev/kfab_efa<N> */
	u8 gid[KFAB_EFA_GID_LEN];

	/* geometry, copied from the module parameters */
	u32 max_qps;
	u32 rx_entries;
	u32 mtu;
	u32 max_mrs;		/* per file */

	struct mutex lock;	/* qps, nqps, next_qpn, knobs, retired */
	u32 device_rdma;	/* KFAB_EFA_RDMA_CAP_* */
	u32 rnr_retry;
	u32 rnr_inject_ppm;
	u32 reorder_ppm;

	struct xarray qps;	/* qpn -> live efa_qp; NULL while creating */
	u32 next_qpn;		/* cyclic allocation hint */
	u32 nqps;		/* qpns taken, live or being created */

	struct xarray mrs;	/* rkey -> efa_mr, under its xa_lock */
	struct mutex mr_check;	/* an MR found under it is not destroyed */

	/* sysfs counters/ */
	atomic64_t qps_live;		/* gauge */
	atomic64_t qps_created;
	atomic64_t mrs_live;		/* gauge */
	atomic64_t pinned_pages;	/* gauge, kept by kfab_pin */
	atomic64_t stale_mrs;
	atomic64_t rdma_reads;
	atomic64_t rdma_read_bytes;
	atomic64_t rdma_writes;
	atomic64_t rdma_write_bytes;

	/* efa<N> in kfab_class, its state, link and notifies; owns it */
	struct kfab_cdev kc;
};

struct efa_filedata;

struct efa_qp {
	struct kref ref;
	struct efa_device *dev;
	struct efa_filedata *pd;	/* owner file; compared only, while live */
	u32 qpn;
	u32 qkey;

	/* geometry, as reported by CREATE_QP and MAP_PEER */
	u32 rx_entries;
	u32 mtu;

	/* the owner's mmap offsets of ctrl, ring and bufs, dropped at destroy */
	u64 offsets[KFAB_QMAP_STATUS];

	struct kfab_qobj q;	/* what peers reach: queues, lock, dead, eventfd */
};

struct efa_mr {
	struct efa_device *dev;
	struct efa_filedata *pd;	/* owner file; compared only */
	u64 vaddr;		/* the registered range, as given */
	u64 length;
	u32 access;		/* KFAB_EFA_ACCESS_* */
	u32 lkey;
	u32 rkey;
	u32 state_index;
	u32 *state;		/* this MR's word of the file's mr_state[] */
	struct mmu_interval_notifier notifier;

	spinlock_t lock;	/* pin publication, stale */
	struct kfab_pinned *pin;	/* NULL until registered */
	bool stale;		/* the range changed: RDMA gets -ESTALE */
	bool suspect;		/* it may have: check before an RDMA */
};

struct efa_filedata {
	struct kfab_file f;	/* first: lock, mmap table, peer handles */
	struct efa_device *dev;
	u64 status_offset;	/* of dev->status, read-only */
	u64 mr_state_offset;	/* of mr_state, read-only */
	struct kfab_qmem *mr_state;	/* u32[max_mrs], KFAB_EFA_MR_STATE_* */
	struct xarray qps;	/* qpn -> efa_qp, this file's */
	struct xarray mrs;	/* lkey -> efa_mr */
	u32 next_lkey;		/* cyclic allocation hint */
	u32 nmrs;
	unsigned long *mr_slots;	/* bitmap of max_mrs: mr_state[] taken */
	struct kfab_iovec iov[KFAB_IOV_MAX];	/* RDMA scratch, under lock */
};

static inline struct efa_device *to_efa_device(struct device *dev)
{
	return container_of(dev, struct efa_device, kc.dev);
}

static inline struct efa_filedata *to_efa_file(struct kfab_file *f)
{
	return container_of(f, struct efa_filedata, f);
}

static inline struct efa_qp *to_efa_qp(struct kref *ref)
{
	return container_of(ref, struct efa_qp, ref);
}

/* The QP of peer handle @peer of @f, or NULL. */
static inline struct efa_qp *efa_peer_qp(struct kfab_file *f, u32 peer)
{
	struct kfab_qobj *q = kfab_peer_obj(&f->peers, peer);

	return q ? container_of(q, struct efa_qp, q) : NULL;
}

static inline struct kfab_efa_qp_ctrl *efa_qp_ctrl(const struct efa_qp *qp)
{
	return qp->q.ctrl->vaddr;
}

static inline struct kfab_efa_status *
efa_device_status(const struct efa_device *dev)
{
	return dev->kc.status->vaddr;
}

static inline bool efa_device_active(const struct efa_device *dev)
{
	return kfab_cdev_active(&dev->kc);
}

#define efa_dbg_dev(d, fmt, ...) \
	dev_dbg(&(d)->kc.dev, fmt, ##__VA_ARGS__)
/* Prefixes the QP number, as siw_dbg_qp() does. */
#define efa_dbg_qp(q, fmt, ...)						\
	({								\
		const struct efa_qp *__q = (q);				\
									\
		dev_dbg(&__q->dev->kc.dev, "qp %u: " fmt, __q->qpn,	\
			##__VA_ARGS__);					\
	})

/* efa_main.c */

struct efa_device *efa_device_by_gid(const u8 *gid);
void efa_gid_init(u8 *gid, u32 index);
/* A random u32 that is never 0: qkeys and rkeys. */
u32 efa_random_key(void);

#if IS_ENABLED(CONFIG_KUNIT)
extern struct kfab_uint_param efa_num_devices;
extern struct kfab_uint_param efa_qps_per_device;
extern struct kfab_uint_param efa_rx_entries;
extern struct kfab_uint_param efa_mtu;
extern struct kfab_uint_param efa_max_mrs;
bool efa_gid_to_index(const u8 *gid, u32 *index);
#endif

/* efa_sysfs.c */

extern const struct attribute_group *efa_device_groups[];
void efa_device_mirror_status(struct kfab_cdev *kc);

#if IS_ENABLED(CONFIG_KUNIT)
const char *efa_rdma_caps_name(u32 caps);
int efa_rdma_caps_parse(const char *buf, u32 *caps);
#endif

/* efa_qp.c */

int efa_ioctl_create_qp(struct kfab_file *f, const void *in, void __user *uarg);
int efa_ioctl_destroy_qp(struct kfab_file *f, const void *in,
			 void __user *uarg);
int efa_ioctl_map_peer(struct kfab_file *f, const void *in, void __user *uarg);
int efa_ioctl_set_eventfd(struct kfab_file *f, const void *in,
			  void __user *uarg);
void efa_file_release_qps(struct efa_filedata *fd);
void efa_qp_put(struct efa_qp *qp);

/* efa_mr.c */

/* What an MMU notifier event in its range does to an MR. */
enum efa_mr_effect {
	EFA_MR_KEEP,		/* the pages stay mapped */
	EFA_MR_CHECK,		/* they may not: suspect */
	EFA_MR_STALE,		/* they are gone */
};

int efa_ioctl_reg_mr(struct kfab_file *f, const void *in, void __user *uarg);
int efa_ioctl_dereg_mr(struct kfab_file *f, const void *in, void __user *uarg);
struct kfab_pinned *efa_mr_get_remote(struct efa_device *dev,
				      const struct efa_filedata *pd, u32 rkey,
				      u32 op, u64 addr, u64 len, u64 *offset);
int efa_mr_check(struct efa_qp *pqp, u32 rkey, bool last);
void efa_file_release_mrs(struct efa_filedata *fd);

#if IS_ENABLED(CONFIG_KUNIT)
bool efa_reg_access_valid(u32 access);
bool efa_access_ok(u32 op, u32 access);
unsigned int efa_pin_flags(u32 access);
int efa_remote_offset(u64 mr_vaddr, u64 mr_length, u64 addr, u64 len,
		      u64 *offset);
enum efa_mr_effect efa_event_effect(enum mmu_notifier_event event);
int efa_rkey_insert(struct xarray *mrs, void *entry, u32 *rkey);
#endif

/* efa_rdma.c */

int efa_ioctl_rdma(struct kfab_file *f, const void *in, void __user *uarg);

#endif /* _KFAB_EFA_H */
