// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: the character devices of the device modules and the file
 * operations of their nodes. A module describes its devices with a
 * struct kfab_cdev_ops (names, sysfs groups, its per-file part, its ioctl
 * table); the core registers them in the kfab class, opens and releases
 * the files, dispatches the ioctls under the file's lock and maps the
 * file's mmap table.
 */

#include <linux/compat.h>
#include <linux/export.h>
#include <linux/fs.h>
#include <linux/kdev_t.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/sysfs.h>

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

struct device_attribute kfab_dev_attr_abi_version = __ATTR_RO(abi_version);
EXPORT_SYMBOL_GPL(kfab_dev_attr_abi_version);

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
		return io->fn(f, uarg);

	if (mutex_lock_interruptible(&f->lock))
		return -ERESTARTSYS;
	if (!(io->flags & KFAB_IOCTL_SETUP) && ops->ready && !ops->ready(f))
		ret = -EINVAL;
	else
		ret = io->fn(f, uarg);
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

int kfab_devset_init(struct kfab_devset *s, const struct kfab_cdev_ops *ops,
		     u32 count)
{
	char name[32];

	if (WARN_ON_ONCE(!count || count > KFAB_MAX_DEVICES))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->count = count;
	snprintf(name, sizeof(name), "kfab_%s", ops->name);
	return alloc_chrdev_region(&s->devt, 0, count, name);
}
EXPORT_SYMBOL_GPL(kfab_devset_init);

int kfab_cdev_init(struct kfab_devset *s, struct kfab_cdev *kc, u32 index,
		   int node)
{
	const struct kfab_cdev_ops *ops = s->ops;

	kc->ops = ops;
	device_initialize(&kc->dev);
	kc->dev.class = kfab_class;
	kc->dev.devt = MKDEV(MAJOR(s->devt), index);
	kc->dev.groups = ops->groups;
	kc->dev.release = ops->dev_release;
	set_dev_node(&kc->dev, node);
	cdev_init(&kc->cdev, &kfab_cdev_fops);
	kc->cdev.owner = ops->owner;
	return dev_set_name(&kc->dev, "%s%u", ops->name, index);
}
EXPORT_SYMBOL_GPL(kfab_cdev_init);

int kfab_devset_add(struct kfab_devset *s, struct kfab_cdev *kc)
{
	int ret;

	if (WARN_ON_ONCE(MINOR(kc->dev.devt) != s->n || s->n >= s->count))
		return -EINVAL;
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
