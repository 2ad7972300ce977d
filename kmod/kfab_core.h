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
#include <kunit/visibility.h>

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

/*
 * The read-only uint module parameter @_name, described by @_desc (with
 * modinfo's type "uint"), kept in the struct kfab_uint_param
 * @_prefix##_##@_name that the designators after @_desc initialise; KUnit
 * sees it.
 */
#define KFAB_UINT_PARAM(_prefix, _name, _desc, ...)			\
	VISIBLE_IF_KUNIT struct kfab_uint_param _prefix##_##_name = {	\
		__VA_ARGS__						\
	}; EXPORT_SYMBOL_IF_KUNIT(_prefix##_##_name);			\
	module_param_cb(_name, &kfab_uint_param_ops, &_prefix##_##_name, \
			0444);						\
	__MODULE_INFO(parmtype, _name##type, #_name ":uint");		\
	__MODULE_INFO(parm, _name##desc, #_name ":" _desc)

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
/* The largest link_rate_mbps a device takes: 1 Tb/s. */
#define KFAB_LINK_RATE_MAX	1000000

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
/* The most counters a queue object's ctrl page holds. */
#define KFAB_QOBJ_COUNTERS	3

/* The link state of every device, as the device ABIs number it. */
#define KFAB_STATE_DOWN		0
#define KFAB_STATE_ACTIVE	1

struct kfab_file;
struct kfab_cdev;
struct kfab_devset;
struct kfab_u32_attr;
struct kfab_knob_attr;
struct kfab_counter_attr;
struct kfab_qobj;

/* A field of an ioctl argument that must be zero on input. */
struct kfab_ioctl_zero {
	u16 offset;
	u16 size;		/* 0: no field */
};

#define KFAB_IOCTL_ZEROS	2
/* The largest argument the core copies in, _IOC_SIZE() of its command. */
#define KFAB_IOCTL_IN_MAX	256

/*
 * One ioctl of a device: the command, its handler and KFAB_IOCTL_* flags.
 * A command with an argument to read (in_size, _IOW or _IOWR) has it
 * copied in by the core (-EFAULT) and checked as kfab_abi.h says: its u32
 * flags word within flags_valid and its reserved and padding fields zero
 * (-EINVAL), before @fn gets the copy as @in. Others get NULL. @fn writes
 * its answer to @uarg itself, so that it can undo what a failed copy out
 * would leave behind.
 */
struct kfab_ioctl {
	unsigned int cmd;
	int (*fn)(struct kfab_file *f, const void *in, void __user *uarg);
	unsigned int flags;
	u16 in_size;
	u16 flags_offset;
	u32 flags_valid;
	struct kfab_ioctl_zero zero[KFAB_IOCTL_ZEROS];
};

/* Runs without the file's lock, whatever the file's state. */
#define KFAB_IOCTL_UNLOCKED	BIT(0)
/* Runs while kfab_cdev_ops.ready() still says no (it sets the file up). */
#define KFAB_IOCTL_SETUP	BIT(1)

/* @_cmd with no argument to read. */
#define KFAB_IOCTL_OUT(_cmd, _fn, _flags)				\
	{ .cmd = (_cmd), .fn = (_fn), .flags = (_flags) }

#define __KFAB_IOCTL_IN(_cmd, _fn, _flags, _type, _valid, _at, _size)	\
	{								\
		.cmd = (_cmd), .fn = (_fn), .flags = (_flags),		\
		.in_size = sizeof(_type) +				\
			BUILD_BUG_ON_ZERO(sizeof(_type) > KFAB_IOCTL_IN_MAX), \
		.flags_offset = offsetof(_type, flags) +		\
			BUILD_BUG_ON_ZERO(sizeof_field(_type, flags) != 4), \
		.flags_valid = (_valid),				\
		.zero = {						\
			{ offsetof(_type, reserved),			\
			  sizeof_field(_type, reserved) },		\
			{ (_at), (_size) },				\
		},							\
	}

/*
 * @_cmd reads a struct @_type whose u32 flags word may hold the bits
 * @_valid and whose reserved field must be zero; with _PAD0, its pad0
 * field too.
 */
#define KFAB_IOCTL_IN(_cmd, _fn, _flags, _type, _valid)		\
	__KFAB_IOCTL_IN(_cmd, _fn, _flags, _type, _valid, 0, 0)
#define KFAB_IOCTL_IN_PAD0(_cmd, _fn, _flags, _type, _valid)		\
	__KFAB_IOCTL_IN(_cmd, _fn, _flags, _type, _valid,		\
			offsetof(_type, pad0), sizeof_field(_type, pad0))

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
	/* Creates device @index on @node and adds it (kfab_devset_create) */
	int (*create)(struct kfab_devset *s, u32 index, int node);
	const char *nodes_param;	/* the NUMA node array parameter */
	const char *devices;		/* what the devices are called */
	/*
	 * Copies the knobs and the state into what userspace reads them
	 * from (kc->status), under kc->lock or before the device is added.
	 */
	void (*mirror)(struct kfab_cdev *kc);
};

/* Embedded in a module's device object; the struct device owns that. */
struct kfab_cdev {
	struct device dev;	/* <name><N> in kfab_class */
	struct cdev cdev;
	const struct kfab_cdev_ops *ops;
	struct mutex *lock;	/* the module's: knobs change under it */
	int node;		/* NUMA node or NUMA_NO_NODE */
	/* KFAB_STATE_*, set by kfab_cdev_set_knob(), READ_ONCE elsewhere */
	u32 state;
	u32 link_rate_mbps;	/* the same; 0: unlimited */
	struct kfab_link link;	/* copies into its objects, paced */
	atomic64_t notifies;	/* eventfd signals: NOTIFY and wakeups */
	/* the page userspace reads the state and knobs from, read-only */
	struct kfab_qmem *status;
	/* the counters of its retired queue objects, under lock */
	u64 retired[KFAB_QOBJ_COUNTERS];
};

static inline bool kfab_cdev_active(const struct kfab_cdev *kc)
{
	return READ_ONCE(kc->state) == KFAB_STATE_ACTIVE;
}

/*
 * sysfs attributes of the devices of every module: kfab_cdev_group's
 * abi_version, numa_node, state ("Down" or "Active") and link_rate_mbps
 * (set by kfab_cdev_set_knob()), the counter notifies, and the u32 fields
 * of a module's device struct (which embeds its struct kfab_cdev as kc),
 * read-only or with the module's store.
 */
extern const struct attribute_group kfab_cdev_group;
extern struct kfab_counter_attr kfab_dev_attr_notifies;

/*
 * @_prefix##_groups, the sysfs groups of a module's devices
 * (kfab_cdev_ops.groups): kfab_cdev_group and the attributes @_attrs in
 * the device's directory, the attributes @_counters in its counters/.
 */
#define KFAB_CDEV_GROUPS(_prefix, _attrs, _counters)			\
	static const struct attribute_group _prefix##_dir_group = {	\
		.attrs = _attrs,					\
	};								\
	static const struct attribute_group _prefix##_counter_group = {	\
		.name = "counters",					\
		.attrs = _counters,					\
	};								\
	const struct attribute_group *_prefix##_groups[] = {		\
		&kfab_cdev_group, &_prefix##_dir_group,			\
		&_prefix##_counter_group, NULL				\
	}

struct kfab_u32_attr {
	struct device_attribute attr;
	ptrdiff_t offset;	/* of the u32 from the struct device */
};

u32 *kfab_u32_attr_field(struct device *dev, struct device_attribute *attr);
ssize_t kfab_u32_attr_show(struct device *dev, struct device_attribute *attr,
			   char *buf);

/* The offset of @_field of @_type from its struct device. */
#define KFAB_DEV_OFFSET(_type, _field)					\
	(offsetof(_type, _field) - offsetof(_type, kc.dev))

/* The attribute named by the string @_name, for the u32 @_field of @_type. */
#define KFAB_U32_ATTR_INIT(_name, _mode, _store, _type, _field)	\
	{								\
		.attr = {						\
			.attr = { .name = (_name), .mode = (_mode) },	\
			.show = kfab_u32_attr_show,			\
			.store = (_store),				\
		},							\
		.offset = KFAB_DEV_OFFSET(_type, _field),		\
	}

/* @_var: the read-only attribute @_name showing the u32 @_field of @_type. */
#define KFAB_U32_ATTR_RO(_var, _name, _type, _field)			\
	struct kfab_u32_attr _var =					\
		KFAB_U32_ATTR_INIT(__stringify(_name), 0444, NULL, _type, \
				   _field)

/*
 * Sets the knob @field (a u32 of the device of @kc) to @val under
 * kc->lock, mirrored through kfab_cdev_ops.mirror.
 */
void kfab_cdev_set_knob(struct kfab_cdev *kc, u32 *field, u32 val);

/* A decimal knob: a u32 set to 0..max by kfab_cdev_set_knob(). */
struct kfab_knob_attr {
	struct kfab_u32_attr u;
	u32 max;
};

/* -EINVAL for anything but a decimal in 0..max; nothing changes then. */
ssize_t kfab_knob_store(struct device *dev, struct device_attribute *attr,
			const char *buf, size_t count);

/* @_var: the knob named as the u32 @_field of @_type, at most @_max. */
#define KFAB_KNOB_ATTR(_var, _type, _field, _max)			\
	struct kfab_knob_attr _var = {					\
		.u = KFAB_U32_ATTR_INIT(__stringify(_field), 0644,	\
					kfab_knob_store, _type, _field), \
		.max = (_max),						\
	}

/*
 * A counters/ attribute: the atomic64_t at @offset from the struct device
 * (kfab_counter_show), or a sum a module's @show makes for counter @which.
 */
struct kfab_counter_attr {
	struct device_attribute attr;
	ptrdiff_t offset;
	unsigned int which;
};

ssize_t kfab_counter_show(struct device *dev, struct device_attribute *attr,
			  char *buf);

static inline unsigned int kfab_counter_which(struct device_attribute *attr)
{
	return container_of(attr, struct kfab_counter_attr, attr)->which;
}

/* @_var: the counter @_name, the atomic64_t @_field of @_type. */
#define KFAB_COUNTER_ATTR(_var, _name, _type, _field)			\
	struct kfab_counter_attr _var = {				\
		.attr.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.attr.show = kfab_counter_show,				\
		.offset = KFAB_DEV_OFFSET(_type, _field),		\
	}

/* @_var: the counter @_name that @_show sums for @_which. */
#define KFAB_SUM_ATTR(_var, _name, _show, _which)			\
	struct kfab_counter_attr _var = {				\
		.attr.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.attr.show = (_show),					\
		.which = (_which),					\
	}

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
 * Sets up @kc as device @index of @s on @node, its knobs changing under
 * @lock, with a zeroed status page. From here on put_device() on &kc->dev
 * frees the object through ops->dev_release, also when this fails
 * (-ENOMEM naming it or allocating the page).
 */
int kfab_cdev_init(struct kfab_devset *s, struct kfab_cdev *kc, u32 index,
		   int node, struct mutex *lock);
/*
 * Mirrors the knobs of @kc into its status page, adds it, the device of
 * the next index, and publishes it to kfab_devset_get(). On error the
 * caller puts the device.
 */
int kfab_devset_add(struct kfab_devset *s, struct kfab_cdev *kc);
/* Device @index, or NULL: devices live from add to destroy. */
struct kfab_cdev *kfab_devset_get(struct kfab_devset *s, u32 index);
/* Deletes every device, last first, and frees the region. */
void kfab_devset_destroy(struct kfab_devset *s);
/*
 * A module's devices at init: checks its NUMA node array parameter
 * (@num entries of @nodes, named ops->nodes_param), reserves @count
 * minors and creates the devices with ops->create, device i on
 * kfab_param_node(@nodes, @num, i). On error nothing is left.
 */
int kfab_devset_create(struct kfab_devset *s, const struct kfab_cdev_ops *ops,
		       u32 count, const int *nodes, unsigned int num);
/* The entry of @cmd in @ops's table, or NULL. */
const struct kfab_ioctl *kfab_ioctl_find(const struct kfab_cdev_ops *ops,
					 unsigned int cmd);
/*
 * MAP_PEER's check of the device of the peer, @peer (NULL: no such
 * device): -ENETDOWN when @f's device is down, -ENOENT when there is no
 * @peer, -ENETDOWN when it is down; 0 else.
 */
int kfab_file_peer_dev_check(struct kfab_file *f,
			     const struct kfab_cdev *peer);
/*
 * The end of MAP_PEER: maps the @n queues @maps of the peer's @q into @f
 * under a new handle, which takes over the caller's reference on @q (on
 * error, kfab_peer_map()'s, the reference is put), and answers @out
 * (@size bytes to @uarg), which the device filled but for the handle at
 * @handle and the queues' mmap offsets, the @n u64s from @offsets on in
 * the order of @maps. If the copy fails nobody knows the handle: it is
 * unmapped, -EFAULT.
 */
int kfab_file_map_peer(struct kfab_file *f, struct kfab_qobj *q,
		       const struct kfab_qmap *maps, unsigned int n,
		       void __user *uarg, void *out, size_t size, u32 *handle,
		       u64 *offsets);
/* The maps of a MAP_PEER answer @_type: ctrl_offset to status_offset. */
#define KFAB_PEER_NMAPS(_type)						\
	((offsetof(_type, status_offset) - offsetof(_type, ctrl_offset)) / \
	 sizeof(u64) + 1)
/*
 * kfab_file_map_peer() for the array @_maps and the uapi answer @_out,
 * with its u32 peer the handle and an offset for each map, in order.
 */
#define KFAB_FILE_MAP_PEER(_f, _q, _maps, _uarg, _out) ({		\
	typeof(_maps) *__maps = &(_maps);				\
	typeof(_out) __out = (_out);					\
									\
	BUILD_BUG_ON(ARRAY_SIZE(*__maps) !=				\
		     KFAB_PEER_NMAPS(typeof(*__out)));			\
	kfab_file_map_peer(_f, _q, *__maps, ARRAY_SIZE(*__maps), _uarg,	\
			   __out, sizeof(*__out), &__out->peer,		\
			   &__out->ctrl_offset);			\
})
/*
 * The UNMAP_PEER handler of every device: its argument starts with the
 * u32 handle MAP_PEER returned. -EINVAL for an unknown one.
 */
int kfab_ioctl_unmap_peer(struct kfab_file *f, const void *in,
			  void __user *uarg);
#if IS_ENABLED(CONFIG_KUNIT)
/* The checks of @io on the argument @in: 0 or -EINVAL. */
int kfab_ioctl_check(const struct kfab_ioctl *io, const void *in);
/* Whether each argument @ops's table describes is its command's. */
bool kfab_ioctls_valid(const struct kfab_cdev_ops *ops);
#endif

/* kfab_qobj.c: what a peer handle names */

/*
 * The part of an HFI context or an EFA QP that other files reach: it is
 * embedded in the module's object (which keeps the references), and the
 * obj of every peer handle of a kfab_cdev file points to it. Its queues
 * are freed with it, never before.
 */
struct kfab_qobj {
	struct kfab_cdev *kc;	/* its device */
	struct mutex lock;	/* dead, wakeups; the module may add more */
	bool dead;		/* its owner destroyed or released it */
	struct kfab_eventfd eventfd;
	u32 *armed;		/* the owner's armed word, in its ctrl page */
	struct kfab_qmem *ctrl;	/* a page: indices, armed word, counters */
	struct kfab_qmem *ring;	/* receive ring (an HFI's RHQ) */
	struct kfab_qmem *bufs;	/* packet buffers (an HFI's eager buffers) */
	u64 *counters;		/* what peers count, in its ctrl page */
	unsigned int ncounters;
	/* what of them kfab_qobj_retire_locked() moved into its device */
	u64 retired[KFAB_QOBJ_COUNTERS];
};

/* Where the words of a module's ctrl pages lie. */
struct kfab_ctrl_layout {
	u16 armed;		/* the owner's u32 armed word */
	u16 counters;		/* the first of ncounters u64s peers count */
	u16 ncounters;		/* at most KFAB_QOBJ_COUNTERS */
};

/*
 * The queues of a kfab_qobj as one mmap set, in this order: the owner
 * maps the first three (an HFI context's owner all four), MAP_PEER all.
 */
enum kfab_qmap_index {
	KFAB_QMAP_CTRL,
	KFAB_QMAP_RING,
	KFAB_QMAP_BUFS,
	KFAB_QMAP_STATUS,	/* of the object's device, read-only */
	KFAB_NR_QMAPS
};

void kfab_qobj_init(struct kfab_qobj *q, struct kfab_cdev *kc);
/*
 * Allocates the queues of @q: its ctrl page, laid out as @l says,
 * @ring_bytes of ring and @bufs_bytes of buffers. -ENOMEM;
 * kfab_qobj_destroy() puts what was allocated.
 */
int kfab_qobj_alloc_queues(struct kfab_qobj *q,
			   const struct kfab_ctrl_layout *l, size_t ring_bytes,
			   size_t bufs_bytes);
/*
 * Retires what peers counted into a dead @q since kfab_qobj_retire_locked()
 * (they may until they see it dead), then puts the queues; the mmap table
 * entries and VMAs hold their own.
 */
void kfab_qobj_destroy(struct kfab_qobj *q);

/* Counter @i of @q as peers count it. */
static inline u64 kfab_qobj_counter(const struct kfab_qobj *q, unsigned int i)
{
	return READ_ONCE(q->counters[i]);
}

/*
 * Under the device's lock: adds what @q's counters gained since the last
 * call to the device's retired totals, so that a sum of the totals and
 * the counters of the device's live objects, under the same lock, counts
 * each once.
 */
void kfab_qobj_retire_locked(struct kfab_qobj *q);
/* The queues of @q and its device's status page, to map. */
void kfab_qobj_qmaps(struct kfab_qobj *q,
		     struct kfab_qmap maps[KFAB_NR_QMAPS]);

/* Sets dead: from now on no peer signals or reaches it. */
void kfab_qobj_kill(struct kfab_qobj *q);
/*
 * Whether a file of @from may reach @q, under q->lock: 0, -ECONNRESET
 * when it is dead, -ENETDOWN when either device is down.
 */
int kfab_qobj_reachable(struct kfab_qobj *q, const struct kfab_cdev *from);
/*
 * After a copy of @bytes to or from @q's owner: returns no earlier than
 * the copy would have crossed the link of @q's device, then, if @notify,
 * signals @q's eventfd if its owner armed it.
 */
void kfab_qobj_transferred(struct kfab_qobj *q, u64 bytes, bool notify);
/*
 * The NOTIFY handler of every device: its argument starts with the u32
 * handle MAP_PEER returned. -EINVAL unknown handle, or as reachable.
 */
int kfab_ioctl_notify(struct kfab_file *f, const void *in, void __user *uarg);

#endif /* _KFAB_CORE_H */
