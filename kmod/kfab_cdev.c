// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: the character devices of the device modules and the file
 * operations of their nodes. A module describes its devices with a
 * struct kfab_cdev_ops (names, sysfs groups, its per-file part, its ioctl
 * table, its sysfs attributes); the core registers them in the kfab
 * class, opens and releases the files, copies ioctl arguments in and
 * checks their flags and reserved fields, dispatches the ioctls under the
 * file's lock, maps the file's mmap table and shows and sets the sysfs
 * attributes built with its helpers.
 */

#include <linux/compat.h>
#include <linux/export.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "kfab_core.h"

const struct kfab_ioctl *kfab_ioctl_find(const struct kfab_cdev_ops *ops,
					 unsigned int cmd)
{
	unsigned int i;

	for (i = 0; i < ops->nioctls; i++)
		if (ops->ioctls[i].cmd == cmd)
			return &ops->ioctls[i];
	return NULL;
}
EXPORT_SYMBOL_GPL(kfab_ioctl_find);

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", KFAB_ABI_VERSION);
}

static DEVICE_ATTR_RO(abi_version);

static ssize_t numa_node_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  container_of(dev, struct kfab_cdev, dev)->node);
}
static DEVICE_ATTR_RO(numa_node);

u32 *kfab_u32_attr_field(struct device *dev, struct device_attribute *attr)
{
	return (void *)dev + container_of(attr, struct kfab_u32_attr,
					  attr)->offset;
}
EXPORT_SYMBOL_GPL(kfab_u32_attr_field);

ssize_t kfab_u32_attr_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*kfab_u32_attr_field(dev, attr)));
}
EXPORT_SYMBOL_GPL(kfab_u32_attr_show);

void kfab_cdev_set_knob(struct kfab_cdev *kc, u32 *field, u32 val)
{
	mutex_lock(kc->lock);
	WRITE_ONCE(*field, val);
	kc->ops->mirror(kc);
	mutex_unlock(kc->lock);
}
EXPORT_SYMBOL_GPL(kfab_cdev_set_knob);

static void kfab_knob_set(struct device *dev, struct device_attribute *attr,
			  u32 val)
{
	kfab_cdev_set_knob(container_of(dev, struct kfab_cdev, dev),
			   kfab_u32_attr_field(dev, attr), val);
}

ssize_t kfab_knob_store(struct device *dev, struct device_attribute *attr,
			const char *buf, size_t count)
{
	u32 max = container_of(attr, struct kfab_knob_attr, u.attr)->max;
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || v > max)
		return -EINVAL;
	kfab_knob_set(dev, attr, v);
	return count;
}
EXPORT_SYMBOL_GPL(kfab_knob_store);

static const char * const kfab_state_names[] = {
	[KFAB_STATE_DOWN] = "Down",
	[KFAB_STATE_ACTIVE] = "Active",
};

static ssize_t kfab_state_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	u32 state = READ_ONCE(*kfab_u32_attr_field(dev, attr));

	return sysfs_emit(buf, "%s\n", kfab_state_names[state]);
}

static ssize_t kfab_state_store(struct device *dev,
				struct device_attribute *attr,
				const char *buf, size_t count)
{
	u32 state;

	if (sysfs_streq(buf, kfab_state_names[KFAB_STATE_ACTIVE]))
		state = KFAB_STATE_ACTIVE;
	else if (sysfs_streq(buf, kfab_state_names[KFAB_STATE_DOWN]))
		state = KFAB_STATE_DOWN;
	else
		return -EINVAL;
	kfab_knob_set(dev, attr, state);
	dev_dbg(dev, "state %s\n", kfab_state_names[state]);
	return count;
}

/* The offset of @_field of struct kfab_cdev from its struct device. */
#define KFAB_CDEV_OFFSET(_field)					\
	(offsetof(struct kfab_cdev, _field) - offsetof(struct kfab_cdev, dev))

static struct kfab_knob_attr kfab_dev_attr_link_rate_mbps = {
	.u = {
		.attr = __ATTR(link_rate_mbps, 0644, kfab_u32_attr_show,
			       kfab_knob_store),
		.offset = KFAB_CDEV_OFFSET(link_rate_mbps),
	},
	.max = KFAB_LINK_RATE_MAX,
};

static struct kfab_u32_attr kfab_dev_attr_state = {
	.attr = __ATTR(state, 0644, kfab_state_show, kfab_state_store),
	.offset = KFAB_CDEV_OFFSET(state),
};

static struct attribute *kfab_cdev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_numa_node.attr,
	&kfab_dev_attr_state.attr.attr,
	&kfab_dev_attr_link_rate_mbps.u.attr.attr,
	NULL
};

const struct attribute_group kfab_cdev_group = {
	.attrs = kfab_cdev_attrs,
};
EXPORT_SYMBOL_GPL(kfab_cdev_group);

ssize_t kfab_counter_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	ptrdiff_t offset = container_of(attr, struct kfab_counter_attr,
					attr)->offset;
	atomic64_t *v = (void *)dev + offset;

	return sysfs_emit(buf, "%llu\n", (u64)atomic64_read(v));
}
EXPORT_SYMBOL_GPL(kfab_counter_show);

struct kfab_counter_attr kfab_dev_attr_notifies = {
	.attr = __ATTR(notifies, 0444, kfab_counter_show, NULL),
	.offset = KFAB_CDEV_OFFSET(notifies),
};
EXPORT_SYMBOL_GPL(kfab_dev_attr_notifies);

static void kfab_file_free(struct kfab_file *f)
{
	kfab_mmap_table_destroy(&f->mmap);
	mutex_destroy(&f->lock);
	kfree(f);
}

static int kfab_cdev_open(struct inode *inode, struct file *filp)
{
	struct kfab_cdev *kc = container_of(inode->i_cdev, struct kfab_cdev,
					    cdev);
	const struct kfab_cdev_ops *ops = kc->ops;
	struct kfab_file *f;
	int ret;

	f = kzalloc(ops->file_size, GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->kc = kc;
	mutex_init(&f->lock);
	kfab_mmap_table_init(&f->mmap);
	kfab_peers_init(&f->peers, ops->max_peers, ops->peer_put);
	if (ops->open) {
		ret = ops->open(f);
		if (ret) {
			kfab_peers_destroy(&f->peers, &f->mmap);
			kfab_file_free(f);	/* the table drops what it holds */
			return ret;
		}
	}
	filp->private_data = f;
	return nonseekable_open(inode, filp);
}

/*
 * The last reference to the file is gone: no ioctl or mmap can run. Peer
 * handles go first (one of them may name the file's own queues), then the
 * module's objects, then the mmap table, whose entries hold their own qmem
 * references.
 */
static int kfab_cdev_release(struct inode *inode, struct file *filp)
{
	struct kfab_file *f = filp->private_data;
	const struct kfab_cdev_ops *ops = f->kc->ops;

	kfab_peers_destroy(&f->peers, &f->mmap);
	if (ops->release)
		ops->release(f);
	kfab_file_free(f);
	return 0;
}

VISIBLE_IF_KUNIT int kfab_ioctl_check(const struct kfab_ioctl *io,
				      const void *in)
{
	const u8 *p = in;
	unsigned int i;

	if (*(const u32 *)(p + io->flags_offset) & ~io->flags_valid)
		return -EINVAL;
	for (i = 0; i < KFAB_IOCTL_ZEROS; i++)
		if (memchr_inv(p + io->zero[i].offset, 0, io->zero[i].size))
			return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(kfab_ioctl_check);

/* Copies the argument in and checks it, then runs the handler. */
static long kfab_ioctl_call(struct kfab_file *f, const struct kfab_ioctl *io,
			    void __user *uarg)
{
	u64 in[KFAB_IOCTL_IN_MAX / sizeof(u64)];
	int ret;

	if (!io->in_size)
		return io->fn(f, NULL, uarg);
	if (copy_from_user(in, uarg, io->in_size))
		return -EFAULT;
	ret = kfab_ioctl_check(io, in);
	if (ret)
		return ret;
	return io->fn(f, in, uarg);
}

int kfab_file_peer_dev_check(struct kfab_file *f,
			     const struct kfab_cdev *peer)
{
	if (!kfab_cdev_active(f->kc))
		return -ENETDOWN;
	if (!peer)
		return -ENOENT;
	if (!kfab_cdev_active(peer))
		return -ENETDOWN;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_file_peer_dev_check);

int kfab_file_map_peer(struct kfab_file *f, struct kfab_qobj *q,
		       const struct kfab_qmap *maps, unsigned int n,
		       void __user *uarg, void *out, size_t size, u32 *handle,
		       u64 *offsets)
{
	struct kfab_peer *peer;
	unsigned int i;

	peer = kfab_peer_map(&f->peers, &f->mmap, q, maps, n, handle);
	if (IS_ERR(peer)) {
		f->peers.put(q);
		return PTR_ERR(peer);
	}
	for (i = 0; i < n; i++)
		offsets[i] = peer->offsets[i];
	if (copy_to_user(uarg, out, size)) {
		kfab_peer_unmap(&f->peers, &f->mmap, *handle);
		return -EFAULT;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_file_map_peer);

int kfab_ioctl_unmap_peer(struct kfab_file *f, const void *in,
			  void __user *uarg)
{
	return kfab_peer_unmap(&f->peers, &f->mmap, *(const u32 *)in);
}
EXPORT_SYMBOL_GPL(kfab_ioctl_unmap_peer);

static long kfab_cdev_ioctl(struct file *filp, unsigned int cmd,
			    unsigned long arg)
{
	struct kfab_file *f = filp->private_data;
	const struct kfab_cdev_ops *ops = f->kc->ops;
	void __user *uarg = (void __user *)arg;
	const struct kfab_ioctl *io;
	long ret;

	io = kfab_ioctl_find(ops, cmd);
	if (!io)
		return -ENOTTY;
	if (io->flags & KFAB_IOCTL_UNLOCKED)
		return kfab_ioctl_call(f, io, uarg);

	if (mutex_lock_interruptible(&f->lock))
		return -ERESTARTSYS;
	if (!(io->flags & KFAB_IOCTL_SETUP) && ops->ready && !ops->ready(f))
		ret = -EINVAL;
	else
		ret = kfab_ioctl_call(f, io, uarg);
	mutex_unlock(&f->lock);
	return ret;
}

/*
 * No f->lock here: mmap runs under the mmap lock, which ioctls take inside
 * f->lock when they fault. The table is safe against concurrent changes.
 */
static int kfab_cdev_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kfab_file *f = filp->private_data;

	return kfab_mmap_table_mmap(&f->mmap, vma);
}

/*
 * The cdev's owner (the device module) is pinned while a file is open;
 * this module, which the device modules depend on, is pinned by them.
 */
static const struct file_operations kfab_cdev_fops = {
	.owner = THIS_MODULE,
	.open = kfab_cdev_open,
	.release = kfab_cdev_release,
	.unlocked_ioctl = kfab_cdev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = kfab_cdev_mmap,
	.llseek = no_llseek,
};

/* Each argument the table describes is the one its command names. */
VISIBLE_IF_KUNIT bool kfab_ioctls_valid(const struct kfab_cdev_ops *ops)
{
	unsigned int i;

	for (i = 0; i < ops->nioctls; i++) {
		const struct kfab_ioctl *io = &ops->ioctls[i];

		if (io->in_size && (io->in_size != _IOC_SIZE(io->cmd) ||
				    !(_IOC_DIR(io->cmd) & _IOC_WRITE)))
			return false;
	}
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(kfab_ioctls_valid);

int kfab_devset_init(struct kfab_devset *s, const struct kfab_cdev_ops *ops,
		     u32 count)
{
	char name[32];

	if (WARN_ON_ONCE(!count || count > KFAB_MAX_DEVICES ||
			 !kfab_ioctls_valid(ops)))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->count = count;
	snprintf(name, sizeof(name), "kfab_%s", ops->name);
	return alloc_chrdev_region(&s->devt, 0, count, name);
}
EXPORT_SYMBOL_GPL(kfab_devset_init);

/* The last reference to the device: the module frees its object. */
static void kfab_cdev_dev_release(struct device *dev)
{
	struct kfab_cdev *kc = container_of(dev, struct kfab_cdev, dev);

	kfab_qmem_put(kc->status);	/* NULL-safe */
	kc->ops->dev_release(dev);
}

int kfab_cdev_init(struct kfab_devset *s, struct kfab_cdev *kc, u32 index,
		   int node, struct mutex *lock)
{
	const struct kfab_cdev_ops *ops = s->ops;

	kc->ops = ops;
	kc->lock = lock;
	kc->node = node;
	kc->state = KFAB_STATE_ACTIVE;
	kc->link_rate_mbps = 0;
	kfab_link_init(&kc->link);
	atomic64_set(&kc->notifies, 0);
	memset(kc->retired, 0, sizeof(kc->retired));
	device_initialize(&kc->dev);
	kc->dev.class = kfab_class;
	kc->dev.devt = MKDEV(MAJOR(s->devt), index);
	kc->dev.groups = ops->groups;
	kc->dev.release = kfab_cdev_dev_release;
	set_dev_node(&kc->dev, node);
	cdev_init(&kc->cdev, &kfab_cdev_fops);
	kc->cdev.owner = ops->owner;
	kc->status = kfab_qmem_alloc(PAGE_SIZE);
	if (!kc->status)
		return -ENOMEM;
	return dev_set_name(&kc->dev, "%s%u", ops->name, index);
}
EXPORT_SYMBOL_GPL(kfab_cdev_init);

int kfab_devset_add(struct kfab_devset *s, struct kfab_cdev *kc)
{
	int ret;

	if (WARN_ON_ONCE(MINOR(kc->dev.devt) != s->n || s->n >= s->count))
		return -EINVAL;
	kc->ops->mirror(kc);
	ret = cdev_device_add(&kc->cdev, &kc->dev);
	if (ret)
		return ret;
	s->devs[s->n] = kc;
	/* pairs with the acquire in kfab_devset_get() */
	smp_store_release(&s->n, s->n + 1);
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_devset_add);

struct kfab_cdev *kfab_devset_get(struct kfab_devset *s, u32 index)
{
	/* pairs with the release in kfab_devset_add(): fully set up */
	u32 n = smp_load_acquire(&s->n);

	if (index >= n)
		return NULL;
	return s->devs[array_index_nospec(index, n)];
}
EXPORT_SYMBOL_GPL(kfab_devset_get);

void kfab_devset_destroy(struct kfab_devset *s)
{
	while (s->n) {
		struct kfab_cdev *kc = s->devs[s->n - 1];

		s->n--;
		s->devs[s->n] = NULL;
		cdev_device_del(&kc->cdev, &kc->dev);
		put_device(&kc->dev);
	}
	unregister_chrdev_region(s->devt, s->count);
}
EXPORT_SYMBOL_GPL(kfab_devset_destroy);

int kfab_devset_create(struct kfab_devset *s, const struct kfab_cdev_ops *ops,
		       u32 count, const int *nodes, unsigned int num)
{
	char name[64];
	u32 i;
	int ret;

	snprintf(name, sizeof(name), "kfab_%s: %s", ops->name,
		 ops->nodes_param);
	ret = kfab_param_nodes_check(name, ops->devices, nodes, num, count);
	if (ret)
		return ret;

	ret = kfab_devset_init(s, ops, count);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		ret = ops->create(s, i, kfab_param_node(nodes, num, i));
		if (ret) {
			kfab_devset_destroy(s);
			return ret;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_devset_create);
