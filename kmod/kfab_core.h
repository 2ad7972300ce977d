/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_core: what the kfab device modules share.
 *
 * Prototypes are grouped by the file that implements them.
 */
#ifndef _KFAB_CORE_H
#define _KFAB_CORE_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <linux/mm_types.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include "../uapi/kfab_abi.h"

struct eventfd_ctx;

/* kfab_main.c */

/*
 * The "kfab" class: /sys/class/kfab/<name>, device node /dev/kfab_<name>,
 * mode 0666 (access control is the per-object key check, not the node).
 */
extern struct class *kfab_class;

/* kfab_range.c: pure arithmetic, shared with KUnit */

/* 0 if [addr, addr + len) is non-empty and does not wrap; -EINVAL else. */
int kfab_range_check(u64 addr, u64 len);
/* Pages spanned by [addr, addr + len); the range must have passed the check. */
unsigned long kfab_range_npages(u64 addr, u64 len);
/* 0 if [offset, offset + len) lies inside a region of @size bytes. */
int kfab_range_within(u64 size, u64 offset, u64 len);

/* kfab_qmem.c: zeroed, page-aligned queue memory mapped into userspace */

struct kfab_qmem {
	struct kref ref;	/* creator + one per mapping table entry + VMA */
	void *vaddr;		/* vmalloc_user() */
	size_t size;		/* page multiple */
};

/* @size rounded up to pages; NULL on failure (or @size 0), never ERR_PTR. */
struct kfab_qmem *kfab_qmem_alloc(size_t size);

static inline void kfab_qmem_get(struct kfab_qmem *q)
{
	kref_get(&q->ref);
}

void kfab_qmem_put(struct kfab_qmem *q);

/*
 * Per-open-file table of mmap offsets. Each entry names one kfab_qmem and
 * whether it may be mapped writable; the offset is a page-aligned cookie.
 * An entry holds a qmem reference; each VMA holds its own, so memory stays
 * valid until its last mapping goes, whoever owned it.
 */
struct kfab_mmap_table {
	struct xarray entries;	/* pgoff -> struct kfab_mmap_entry */
	u32 next;		/* cyclic allocation hint */
};

void kfab_mmap_table_init(struct kfab_mmap_table *t);
/* Takes its own reference on @q; returns the mmap offset in @offset. */
int kfab_mmap_table_add(struct kfab_mmap_table *t, struct kfab_qmem *q,
			bool writable, u64 *offset);
/* An unknown @offset is ignored. Existing VMAs stay valid. */
void kfab_mmap_table_del(struct kfab_mmap_table *t, u64 offset);
/* -EINVAL: unknown offset, size mismatch or not MAP_SHARED; -EPERM: write */
int kfab_mmap_table_mmap(struct kfab_mmap_table *t, struct vm_area_struct *vma);
void kfab_mmap_table_destroy(struct kfab_mmap_table *t);

/* One queue to map: the memory and whether userspace may write it. */
struct kfab_qmap {
	struct kfab_qmem *qmem;
	bool writable;
};

/* Adds the @n queues of @maps, offsets into @offsets; all or nothing. */
int kfab_mmap_table_add_n(struct kfab_mmap_table *t,
			  const struct kfab_qmap *maps, unsigned int n,
			  u64 *offsets);
/* Deletes the @n @offsets, last first. */
void kfab_mmap_table_del_n(struct kfab_mmap_table *t, const u64 *offsets,
			   unsigned int n);

/* kfab_pin.c: user memory pinned for single-copy transfers */

#define KFAB_PIN_WRITE		BIT(0)	/* the kernel may write the pages */

struct kfab_pinned {
	struct kref ref;
	struct mm_struct *mm;	/* mmgrab()ed: unaccounted against it */
	struct page **pages;
	unsigned long npages;
	u64 vaddr;		/* the registered range */
	u64 length;
	unsigned int flags;	/* KFAB_PIN_* */
	bool accounted;		/* charged to locked_vm (no CAP_IPC_LOCK) */
	atomic64_t *gauge;	/* device "pages pinned" gauge, or NULL */
};

/*
 * Pin [vaddr, vaddr + length) of current->mm, charged to RLIMIT_MEMLOCK.
 * Returns the region (one reference) or an ERR_PTR, never NULL:
 * -EINVAL bad range or flags, -ENOMEM over the limit, -EFAULT not mapped
 * (a partial pin is released and reported as -EFAULT).
 * @gauge, when set, is raised by npages now and lowered on release.
 * The last kfab_pinned_put() sleeps: call it from process context.
 */
struct kfab_pinned *kfab_pin(u64 vaddr, u64 length, unsigned int flags,
			     atomic64_t *gauge);
static inline void kfab_pinned_get(struct kfab_pinned *p)
{
	kref_get(&p->ref);
}

void kfab_pinned_put(struct kfab_pinned *p);
int kfab_pinned_mapped(struct kfab_pinned *p);
#if IS_ENABLED(CONFIG_KFAB_KUNIT_TEST)
/* KUnit only: a region with @npages counted in @gauge but nothing pinned. */
struct kfab_pinned *kfab_pinned_test_alloc(unsigned long npages,
					   atomic64_t *gauge);
#endif

/* kfab_handle.c: refcounted handles to pinned regions */

struct kfab_handles {
	struct xarray xa;	/* handle -> struct kfab_pinned */
	u32 next;		/* cyclic allocation hint: no early reuse */
};

void kfab_handles_init(struct kfab_handles *h);
/* Handles are 1..U32_MAX >> 8; the table takes over the caller's ref. */
int kfab_handles_add(struct kfab_handles *h, struct kfab_pinned *p,
		     u32 *handle);
/* A new reference, or NULL for an unknown handle. */
struct kfab_pinned *kfab_handles_get(struct kfab_handles *h, u32 handle);
/* The table's reference (caller puts it), or NULL for an unknown handle. */
struct kfab_pinned *kfab_handles_remove(struct kfab_handles *h, u32 handle);
/* Releases every remaining entry. */
void kfab_handles_destroy(struct kfab_handles *h);

/* kfab_copy.c: the single-copy engine */

/*
 * Copy the user iovec array at @uiov into @kiov (room for @cnt entries,
 * KFAB_IOV_MAX at most) in one step and sum the lengths into @total.
 * -EINVAL count 0 or > KFAB_IOV_MAX, a range that wraps, or a total that
 * overflows; -EFAULT the array itself is unreadable. Zero lengths are fine.
 */
int kfab_iov_import(u64 uiov, u32 cnt, struct kfab_iovec *kiov, u64 *total);
/*
 * User iovec -> pinned region at @offset: -EINVAL out of bounds, -EFAULT,
 * -EPERM the region was pinned without KFAB_PIN_WRITE.
 */
int kfab_copy_to_pinned(struct kfab_pinned *dst, u64 offset,
			const struct kfab_iovec *kiov, u32 cnt, u64 total);
/* Pinned region at @offset -> user iovec: -EINVAL out of bounds, -EFAULT. */
int kfab_copy_from_pinned(struct kfab_pinned *src, u64 offset,
			  const struct kfab_iovec *kiov, u32 cnt, u64 total);

/* kfab_eventfd.c: one eventfd attached to an object */

struct kfab_eventfd {
	spinlock_t lock;	/* guards ctx; taken with irqsave */
	struct eventfd_ctx *ctx;
};

void kfab_eventfd_init(struct kfab_eventfd *e);
/* @fd == -1 clears; the previous eventfd is put. -EBADF, -EINVAL. */
int kfab_eventfd_set(struct kfab_eventfd *e, int fd);
/* true if an eventfd was registered and signalled. */
bool kfab_eventfd_signal(struct kfab_eventfd *e);
/*
 * The kernel side of the "armed" wakeup protocol: if *@armed (a word in
 * user-shared memory) is set, clear it and signal. Returns true if signalled.
 */
bool kfab_eventfd_wake_armed(u32 *armed, struct kfab_eventfd *e);
void kfab_eventfd_release(struct kfab_eventfd *e);

/* kfab_param.c: validated module parameters */

/* A module parameter of type uint with its valid range. */
struct kfab_uint_param {
	unsigned int val;
	unsigned int min;
	unsigned int max;
	bool pow2;		/* must also be a power of two */
};

/*
 * Parse @s as an unsigned int (decimal, 0x hex or 0 octal, as every uint
 * parameter) and check it against @p. Overflow, junk, out of range or not
 * a power of two where one is required: -EINVAL.
 */
int kfab_uint_param_parse(const char *s, const struct kfab_uint_param *p,
			  unsigned int *out);
/* For module_param_cb() with a struct kfab_uint_param as its argument. */
extern const struct kernel_param_ops kfab_uint_param_ops;
/* -1 (no node) or an online node. */
bool kfab_param_node_valid(int node);
/*
 * The NUMA node array parameter @name (as logged, "kfab_hfi: unit_numa")
 * of @num entries for @count devices, called @what ("units"): at most
 * @count entries, each valid. -EINVAL with a message else.
 */
int kfab_param_nodes_check(const char *name, const char *what,
			   const int *nodes, unsigned int num,
			   unsigned int count);
/*
 * The node of device @index: its entry of @nodes, or without one the
 * (@index % online nodes)-th online node.
 */
int kfab_param_node(const int *nodes, unsigned int num, u32 index);

/* kfab_link.c: an emulated link of limited rate */

struct kfab_link {
	spinlock_t lock;	/* guards free */
	ktime_t free;		/* when the link is idle again */
};

void kfab_link_init(struct kfab_link *l);
/* Nanoseconds @bytes take at @rate_mbps; 0 for rate 0 (unlimited). */
u64 kfab_link_ns(u64 bytes, u32 rate_mbps);
/*
 * Sleep until a transfer of @bytes, queued behind every earlier one, has
 * crossed the link at @rate_mbps (0: return at once). Killable only.
 */
void kfab_link_pace(struct kfab_link *l, u32 rate_mbps, u64 bytes);

/* kfab_peer.c: a file's handles on other files' queues */

#define KFAB_PEER_MAPS		4

/*
 * One MAP_PEER handle: a reference on the peer's object (a context, a QP)
 * and the mmap offsets of its queues in the file that mapped it.
 */
struct kfab_peer {
	void *obj;
	u64 offsets[KFAB_PEER_MAPS];
	unsigned int nmaps;
};

struct kfab_peers {
	struct xarray xa;	/* handle -> struct kfab_peer */
	u32 next;		/* cyclic allocation hint */
	u32 count;
	u32 max;		/* -ENOSPC beyond */
	void (*put)(void *obj);	/* drops a handle's reference on its obj */
};

void kfab_peers_init(struct kfab_peers *p, u32 max, void (*put)(void *obj));
/*
 * Map the @n (at most KFAB_PEER_MAPS) queues @maps of @obj into @t and give
 * them a handle (1..INT_MAX, cyclic). On success the handle owns the
 * caller's reference on @obj; on error (-ENOSPC, -ENOMEM, -EBUSY) the
 * caller keeps it.
 */
struct kfab_peer *kfab_peer_map(struct kfab_peers *p,
				struct kfab_mmap_table *t, void *obj,
				const struct kfab_qmap *maps, unsigned int n,
				u32 *handle);
/* Unmaps handle @handle: -EINVAL for an unknown one. */
int kfab_peer_unmap(struct kfab_peers *p, struct kfab_mmap_table *t,
		    u32 handle);
/* The object of @handle, or NULL. Valid while the caller holds the file. */
void *kfab_peer_obj(struct kfab_peers *p, u32 handle);
/* Unmaps every handle and frees the table. */
void kfab_peers_destroy(struct kfab_peers *p, struct kfab_mmap_table *t);

/* kfab_cdev.c: the character devices of a module and their open files */

#define KFAB_MAX_DEVICES	8

struct kfab_file;

/* One ioctl of a device: the command, its handler and KFAB_IOCTL_* flags. */
struct kfab_ioctl {
	unsigned int cmd;
	int (*fn)(struct kfab_file *f, void __user *uarg);
	unsigned int flags;
};

/* Runs without the file's lock, whatever the file's state. */
#define KFAB_IOCTL_UNLOCKED	BIT(0)
/* Runs while kfab_cdev_ops.ready() still says no (it sets the file up). */
#define KFAB_IOCTL_SETUP	BIT(1)

/* What a device module supplies; the core runs the files with it. */
struct kfab_cdev_ops {
	struct module *owner;
	const char *name;	/* devices <name><N>, chrdev region kfab_<name> */
	const struct attribute_group **groups;
	void (*dev_release)(struct device *dev);	/* the last reference */
	/* The module's per-file struct, a struct kfab_file at offset 0. */
	size_t file_size;
	/* After the core's part is set up; on error undo only its own part. */
	int (*open)(struct kfab_file *f);
	/* After the peers are gone, before the mmap table is destroyed. */
	void (*release)(struct kfab_file *f);
	/* false: every ioctl but the KFAB_IOCTL_SETUP ones fails -EINVAL */
	bool (*ready)(struct kfab_file *f);
	const struct kfab_ioctl *ioctls;
	unsigned int nioctls;
	u32 max_peers;
	void (*peer_put)(void *obj);
};

/* Embedded in a module's device object; the struct device owns that. */
struct kfab_cdev {
	struct device dev;	/* <name><N> in kfab_class */
	struct cdev cdev;
	const struct kfab_cdev_ops *ops;
};

/*
 * sysfs attributes of the devices of every module: abi_version, and the
 * u32 fields of a module's device struct (which embeds its struct
 * kfab_cdev as kc), read-only or with the module's store.
 */
extern struct device_attribute kfab_dev_attr_abi_version;

struct kfab_u32_attr {
	struct device_attribute attr;
	ptrdiff_t offset;	/* of the u32 from the struct device */
};

u32 *kfab_u32_attr_field(struct device *dev, struct device_attribute *attr);
ssize_t kfab_u32_attr_show(struct device *dev, struct device_attribute *attr,
			   char *buf);

/* The attribute named by the string @_name, for the u32 @_field of @_type. */
#define KFAB_U32_ATTR_INIT(_name, _mode, _store, _type, _field)	\
	{								\
		.attr = {						\
			.attr = { .name = (_name), .mode = (_mode) },	\
			.show = kfab_u32_attr_show,			\
			.store = (_store),				\
		},							\
		.offset = offsetof(_type, _field) -			\
			  offsetof(_type, kc.dev),			\
	}

/* @_var: the read-only attribute @_name showing the u32 @_field of @_type. */
#define KFAB_U32_ATTR_RO(_var, _name, _type, _field)			\
	struct kfab_u32_attr _var =					\
		KFAB_U32_ATTR_INIT(__stringify(_name), 0444, NULL, _type, \
				   _field)

/*
 * The core's part of an open file, at offset 0 of the module's. mmap()
 * takes no lock: the table is safe on its own.
 */
struct kfab_file {
	struct kfab_cdev *kc;
	struct mutex lock;	/* ioctls but KFAB_IOCTL_UNLOCKED, peers */
	struct kfab_mmap_table mmap;
	struct kfab_peers peers;
};

/* A module's devices: one chrdev region, added in index order. */
struct kfab_devset {
	const struct kfab_cdev_ops *ops;
	dev_t devt;
	u32 count;		/* minors reserved */
	u32 n;			/* devices added, published with release */
	struct kfab_cdev *devs[KFAB_MAX_DEVICES];
};

/* Reserves @count (<= KFAB_MAX_DEVICES) minors for @ops's devices. */
int kfab_devset_init(struct kfab_devset *s, const struct kfab_cdev_ops *ops,
		     u32 count);
/*
 * Sets up @kc as device @index of @s on @node. From here on put_device()
 * on &kc->dev frees the object through ops->dev_release, also when this
 * fails (-ENOMEM naming it).
 */
int kfab_cdev_init(struct kfab_devset *s, struct kfab_cdev *kc, u32 index,
		   int node);
/*
 * Adds @kc, the device of the next index, and publishes it to
 * kfab_devset_get(). On error the caller puts the device.
 */
int kfab_devset_add(struct kfab_devset *s, struct kfab_cdev *kc);
/* Device @index, or NULL: devices live from add to destroy. */
struct kfab_cdev *kfab_devset_get(struct kfab_devset *s, u32 index);
/* Deletes every device, last first, and frees the region. */
void kfab_devset_destroy(struct kfab_devset *s);
/* The entry of @cmd in @ops's table, or NULL. */
const struct kfab_ioctl *kfab_ioctl_find(const struct kfab_cdev_ops *ops,
					 unsigned int cmd);

#endif /* _KFAB_CORE_H */
