/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_hfi: emulated Omni-Path-style HFI units.
 *
 * Objects and their locks:
 *
 *   hfi_unit      one per /dev/kfab_hfi<N>, lives from module init to exit.
 *                 unit->lock guards the context slots, the state and knobs
 *                 and the retired drop totals (kc.retired).
 *   hfi_ctxt      a hardware context, kref'd: its owner file holds one
 *                 reference, every peer handle another. ctxt->q.lock
 *                 guards the dead flag, the TID table against peers'
 *                 lookups and wakeups of the context's eventfd.
 *   hfi_filedata  one per open file, a struct kfab_file; its lock
 *                 (fd->f.lock) serialises its ioctls and guards its mmap
 *                 table and peer handles.
 *
 * Lock order: fd->f.lock, then unit->lock, then ctxt->q.lock; the jkey table
 * lock nests inside all of them. mmap() takes none of them: it runs under
 * the mmap lock, which ioctls take inside fd->f.lock when they fault or pin.
 *
 * Prototypes below are grouped by the file that implements them.
 */
#ifndef _KFAB_HFI_H
#define _KFAB_HFI_H

#include <linux/atomic.h>
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/err.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/siphash.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/xarray.h>

#include "../kfab_core.h"
#include "hfi_uapi.h"

#define HFI_MAX_UNITS		8
#define HFI_MAX_CTXTS		160

/* The three producer-kept drop counters of a ctrl page. */
enum hfi_drop {
	HFI_DROP_RHQ_FULL,
	HFI_DROP_EAGER_FULL,
	HFI_DROP_INJECTED,
	HFI_NR_DROPS
};

struct hfi_ctxt;

struct hfi_unit {
	u32 index;		/* N of /dev/kfab_hfi<N> */
	u32 lid;		/* index + 1 */

	/* geometry of every context, copied from the module parameters */
	u32 nctxts;
	u32 rhq_entries;
	u32 eager_count;
	u32 eager_size;
	u64 pin_limit_pages;	/* per context, 0: no limit */

	struct mutex lock;	/* slots, claimed, nfree, knobs, retired */
	u32 drop_ppm;

	u32 nfree;		/* contexts neither claimed nor live */
	unsigned long *claimed;	/* bitmap of nctxts: slot taken */
	struct hfi_ctxt **slots;	/* live contexts, NULL while assigning */

	/* sysfs counters/ */
	atomic64_t ctxts_assigned;
	atomic64_t tid_pages_pinned;	/* gauge, kept by kfab_pin */
	atomic64_t tid_regions;		/* gauge */
	atomic64_t sdma_requests;
	atomic64_t sdma_bytes;

	/* hfi<N> in kfab_class, its state, link and notifies; owns it */
	struct kfab_cdev kc;
};

struct hfi_ctxt {
	struct kref ref;
	struct hfi_unit *unit;
	u32 ctxt;		/* slot number on the unit */
	u16 jkey;
	u16 pkey;
	u8 sl;
	u8 uuid[HFI_UUID_LEN];
	kuid_t uid;
	struct pid *owner;	/* thread group that assigned it */

	/* geometry, as reported by CTXT_INFO and MAP_PEER */
	u32 rhq_entries;
	u32 eager_count;
	u32 eager_size;

	/*
	 * what peers reach: the queues (ring: RHQ, bufs: eager buffers) and
	 * more; its lock also guards tids, ntids, pinned_pages
	 */
	struct kfab_qobj q;
	struct kfab_handles tids;
	u32 ntids;		/* live TID registrations */
	u64 pinned_pages;	/* for the unit's pin_limit_pages */
};

struct hfi_filedata {
	struct kfab_file f;	/* first: lock, mmap table, peer handles */
	struct hfi_unit *unit;
	struct hfi_ctxt *ctxt;	/* NULL until ASSIGN_CTXT */
	struct kfab_hfi_ctxt_info info;	/* what ASSIGN_CTXT returned */
	struct kfab_iovec iov[KFAB_IOV_MAX];	/* SDMA scratch, under lock */
};

static inline struct hfi_unit *to_hfi_unit(struct device *dev)
{
	return container_of(dev, struct hfi_unit, kc.dev);
}

static inline struct hfi_filedata *to_hfi_file(struct kfab_file *f)
{
	return container_of(f, struct hfi_filedata, f);
}

static inline struct hfi_ctxt *to_hfi_ctxt(struct kref *ref)
{
	return container_of(ref, struct hfi_ctxt, ref);
}

static inline struct kfab_hfi_ctrl *hfi_ctxt_ctrl(const struct hfi_ctxt *c)
{
	return c->q.ctrl->vaddr;
}

static inline struct kfab_hfi_status *hfi_unit_status(const struct hfi_unit *u)
{
	return u->kc.status->vaddr;
}

static inline bool hfi_unit_active(const struct hfi_unit *u)
{
	return kfab_cdev_active(&u->kc);
}

/* The context of peer handle @peer of @f, or NULL. */
static inline struct hfi_ctxt *hfi_peer_ctxt(struct kfab_file *f, u32 peer)
{
	struct kfab_qobj *q = kfab_peer_obj(&f->peers, peer);

	return q ? container_of(q, struct hfi_ctxt, q) : NULL;
}

#define hfi_dbg_unit(u, fmt, ...) \
	dev_dbg(&(u)->kc.dev, fmt, ##__VA_ARGS__)
/* Prefixes the context number, as siw_dbg_qp() does the QP's. */
#define hfi_dbg_ctxt(c, fmt, ...)					\
	({								\
		const struct hfi_ctxt *__c = (c);			\
									\
		dev_dbg(&__c->unit->kc.dev, "ctxt %u: " fmt, __c->ctxt,	\
			##__VA_ARGS__);					\
	})

/* hfi_main.c */

struct hfi_unit *hfi_unit_by_lid(u32 lid);

#if IS_ENABLED(CONFIG_KUNIT)
extern struct kfab_uint_param hfi_num_units;
extern struct kfab_uint_param hfi_ctxts_per_unit;
extern struct kfab_uint_param hfi_rhq_entries;
extern struct kfab_uint_param hfi_eager_count;
extern struct kfab_uint_param hfi_eager_size;
extern struct kfab_uint_param hfi_pin_limit_mb;
#endif

/* hfi_sysfs.c */

extern const struct attribute_group *hfi_unit_groups[];
void hfi_unit_mirror_status(struct kfab_cdev *kc);

/* hfi_jkey.c */

/*
 * Live (uid, uuid) -> jkey assignments. A table is an object so that KUnit
 * can run one under a key of its choosing; the driver uses one global table
 * under a random key.
 */
#define HFI_JKEY_HASH_BITS	7

struct hfi_jkey_table {
	struct mutex lock;	/* pairs and used */
	siphash_key_t key;
	DECLARE_HASHTABLE(pairs, HFI_JKEY_HASH_BITS);	/* by siphash */
	struct xarray used;	/* jkey -> struct hfi_jkey_entry */
};

void hfi_jkey_init(void);
void hfi_jkey_exit(void);
int hfi_jkey_get(kuid_t uid, const u8 *uuid, u16 *jkey);
void hfi_jkey_put(u16 jkey);

#if IS_ENABLED(CONFIG_KUNIT)
u64 hfi_jkey_hash(const siphash_key_t *key, u32 uid, const u8 *uuid);
u16 hfi_jkey_from_hash(u64 hash);
u16 hfi_jkey_next(u16 jkey);
void hfi_jkey_table_init(struct hfi_jkey_table *t, const siphash_key_t *key);
int hfi_jkey_table_get(struct hfi_jkey_table *t, u32 uid, const u8 *uuid,
		       u16 *jkey);
void hfi_jkey_table_put(struct hfi_jkey_table *t, u16 jkey);
unsigned int hfi_jkey_table_refs(struct hfi_jkey_table *t, u16 jkey);
void hfi_jkey_table_destroy(struct hfi_jkey_table *t);
#endif

/* hfi_ctxt.c */

int hfi_ioctl_assign(struct kfab_file *f, const void *in, void __user *uarg);
int hfi_ioctl_ctxt_info(struct kfab_file *f, const void *in, void __user *uarg);
int hfi_ioctl_map_peer(struct kfab_file *f, const void *in, void __user *uarg);
int hfi_ioctl_set_eventfd(struct kfab_file *f, const void *in,
			  void __user *uarg);
int hfi_ioctl_list_ctxts(struct kfab_file *f, const void *in,
			 void __user *uarg);
void hfi_ctxt_release(struct hfi_ctxt *c);
void hfi_ctxt_put(struct hfi_ctxt *c);

#if IS_ENABLED(CONFIG_KUNIT)
u32 hfi_list_ctxts_locked(struct hfi_unit *unit, kuid_t uid,
			  struct kfab_hfi_ctxt_entry *ents, u32 room);
#endif

/* hfi_tid.c */

int hfi_ioctl_tid_update(struct kfab_file *f, const void *in,
			 void __user *uarg);
int hfi_ioctl_tid_free(struct kfab_file *f, const void *in, void __user *uarg);
void hfi_tid_release_all(struct hfi_ctxt *c);
u64 hfi_pin_limit_pages(unsigned int limit_mb);

#if IS_ENABLED(CONFIG_KUNIT)
bool hfi_pin_fits(u64 pinned, u64 npages, u64 limit_pages);
#endif

/* hfi_sdma.c */

int hfi_ioctl_sdma(struct kfab_file *f, const void *in, void __user *uarg);

#endif /* _KFAB_HFI_H */
