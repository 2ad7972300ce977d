// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: module parameters, unit creation and the file operations of
 * /dev/kfab_hfi<N>.
 */

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/compat.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/nodemask.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "hfi.h"

/*
 * Module parameters. Each uint parameter carries its range; the setter
 * refuses anything else with -EINVAL, so a bad value fails insmod.
 */
VISIBLE_IF_KUNIT struct kfab_uint_param hfi_num_units = {
	.val = 2, .min = 1, .max = HFI_MAX_UNITS,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_num_units);

VISIBLE_IF_KUNIT struct kfab_uint_param hfi_ctxts_per_unit = {
	.val = 16, .min = 1, .max = HFI_MAX_CTXTS,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_ctxts_per_unit);

VISIBLE_IF_KUNIT struct kfab_uint_param hfi_rhq_entries = {
	.val = 2048, .min = 64, .max = 16384, .pow2 = true,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_rhq_entries);

VISIBLE_IF_KUNIT struct kfab_uint_param hfi_eager_count = {
	.val = 256, .min = 16, .max = 4096, .pow2 = true,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_eager_count);

/* At least a page: each buffer is whole pages of the eager mapping. */
VISIBLE_IF_KUNIT struct kfab_uint_param hfi_eager_size = {
	.val = PAGE_SIZE > 8192 ? PAGE_SIZE : 8192, .min = PAGE_SIZE,
	.max = 65536,
	.pow2 = true,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_eager_size);

VISIBLE_IF_KUNIT struct kfab_uint_param hfi_pin_limit_mb = {
	.val = 1024, .min = 0, .max = 1048576,
};
EXPORT_SYMBOL_IF_KUNIT(hfi_pin_limit_mb);

module_param_cb(num_units, &kfab_uint_param_ops, &hfi_num_units, 0444);
__MODULE_PARM_TYPE(num_units, "uint");
MODULE_PARM_DESC(num_units, "Emulated HFI units (1..8, default 2)");

module_param_cb(ctxts_per_unit, &kfab_uint_param_ops, &hfi_ctxts_per_unit,
		0444);
__MODULE_PARM_TYPE(ctxts_per_unit, "uint");
MODULE_PARM_DESC(ctxts_per_unit,
		 "Hardware contexts per unit (1..160, default 16)");

module_param_cb(rhq_entries, &kfab_uint_param_ops, &hfi_rhq_entries, 0444);
__MODULE_PARM_TYPE(rhq_entries, "uint");
MODULE_PARM_DESC(rhq_entries,
		 "RHQ entries of 128 bytes per context (power of two, 64..16384, default 2048)");

module_param_cb(eager_count, &kfab_uint_param_ops, &hfi_eager_count, 0444);
__MODULE_PARM_TYPE(eager_count, "uint");
MODULE_PARM_DESC(eager_count,
		 "Eager buffers per context (power of two, 16..4096, default 256)");

module_param_cb(eager_size, &kfab_uint_param_ops, &hfi_eager_size, 0444);
__MODULE_PARM_TYPE(eager_size, "uint");
MODULE_PARM_DESC(eager_size,
		 "Bytes per eager buffer (power of two, PAGE_SIZE (4096)..65536, default 8192)");

module_param_cb(pin_limit_mb, &kfab_uint_param_ops, &hfi_pin_limit_mb, 0444);
__MODULE_PARM_TYPE(pin_limit_mb, "uint");
MODULE_PARM_DESC(pin_limit_mb,
		 "MiB of TID memory one context may pin (0..1048576, 0: only RLIMIT_MEMLOCK, default 1024)");

static int hfi_unit_numa[HFI_MAX_UNITS];
static unsigned int hfi_unit_numa_num;
module_param_array_named(unit_numa, hfi_unit_numa, int, &hfi_unit_numa_num,
			 0444);
MODULE_PARM_DESC(unit_numa,
		 "NUMA node of each unit (-1: none, or an online node; at most num_units entries; default: unit i on the (i % online nodes)-th online node)");

static dev_t hfi_devt;
static struct hfi_unit *hfi_units[HFI_MAX_UNITS];
static u32 hfi_nunits;

/* Units exist from init to exit, so the pointer needs no reference. */
struct hfi_unit *hfi_unit_by_lid(u32 lid)
{
	/* pairs with the release in hfi_init(): the unit is fully set up */
	u32 n = smp_load_acquire(&hfi_nunits);

	if (lid == 0 || lid > n)
		return NULL;
	return hfi_units[array_index_nospec(lid - 1, n)];
}

static int hfi_default_node(u32 index)
{
	unsigned int nth = index % num_online_nodes();
	int node;

	for_each_online_node(node)
		if (nth-- == 0)
			return node;
	return NUMA_NO_NODE;
}

static int hfi_ioctl_get_version(struct hfi_unit *unit, void __user *uarg)
{
	struct kfab_hfi_version v;

	memset(&v, 0, sizeof(v));
	v.abi_version = KFAB_ABI_VERSION;
	v.unit = unit->index;
	v.lid = unit->lid;
	v.state = READ_ONCE(unit->state);
	v.nctxts = unit->nctxts;
	v.numa_node = unit->node;
	if (copy_to_user(uarg, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

static int hfi_open(struct inode *inode, struct file *filp)
{
	struct hfi_unit *unit = cdev_to_hfi_unit(inode->i_cdev);
	struct hfi_filedata *fd;

	fd = kzalloc(sizeof(*fd), GFP_KERNEL);
	if (!fd)
		return -ENOMEM;
	fd->unit = unit;
	mutex_init(&fd->lock);
	kfab_mmap_table_init(&fd->mmap);
	xa_init_flags(&fd->peers, XA_FLAGS_ALLOC1);
	filp->private_data = fd;
	return nonseekable_open(inode, filp);
}

/*
 * The last reference to the file is gone: no ioctl or mmap can run. Peer
 * handles go first (one of them may be our own context), then the context,
 * then the mmap table, whose entries hold their own qmem references.
 */
static int hfi_release(struct inode *inode, struct file *filp)
{
	struct hfi_filedata *fd = filp->private_data;

	hfi_file_release_peers(fd);
	if (fd->ctxt) {
		hfi_ctxt_release(fd->ctxt);
		fd->ctxt = NULL;
	}
	kfab_mmap_table_destroy(&fd->mmap);
	xa_destroy(&fd->peers);
	mutex_destroy(&fd->lock);
	kfree(fd);
	return 0;
}

typedef int (*hfi_ioctl_fn)(struct hfi_filedata *fd, void __user *uarg);

static long hfi_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct hfi_filedata *fd = filp->private_data;
	void __user *uarg = (void __user *)arg;
	hfi_ioctl_fn fn;
	long ret;

	switch (cmd) {
	case KFAB_HFI_IOC_GET_VERSION:
		return hfi_ioctl_get_version(fd->unit, uarg);
	case KFAB_HFI_IOC_LIST_CTXTS:
		return hfi_ioctl_list_ctxts(fd->unit, uarg);
	case KFAB_HFI_IOC_ASSIGN_CTXT:
		fn = hfi_ioctl_assign;
		break;
	case KFAB_HFI_IOC_CTXT_INFO:
		fn = hfi_ioctl_ctxt_info;
		break;
	case KFAB_HFI_IOC_MAP_PEER:
		fn = hfi_ioctl_map_peer;
		break;
	case KFAB_HFI_IOC_UNMAP_PEER:
		fn = hfi_ioctl_unmap_peer;
		break;
	case KFAB_HFI_IOC_TID_UPDATE:
		fn = hfi_ioctl_tid_update;
		break;
	case KFAB_HFI_IOC_TID_FREE:
		fn = hfi_ioctl_tid_free;
		break;
	case KFAB_HFI_IOC_SDMA:
		fn = hfi_ioctl_sdma;
		break;
	case KFAB_HFI_IOC_SET_EVENTFD:
		fn = hfi_ioctl_set_eventfd;
		break;
	case KFAB_HFI_IOC_NOTIFY:
		fn = hfi_ioctl_notify;
		break;
	default:
		return -ENOTTY;
	}

	if (mutex_lock_interruptible(&fd->lock))
		return -ERESTARTSYS;
	if (!fd->ctxt && cmd != KFAB_HFI_IOC_ASSIGN_CTXT)
		ret = -EINVAL;
	else
		ret = fn(fd, uarg);
	mutex_unlock(&fd->lock);
	return ret;
}

/*
 * No fd->lock here: mmap runs under the mmap lock, which ioctls take inside
 * fd->lock when they fault. The table is safe against concurrent changes.
 */
static int hfi_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct hfi_filedata *fd = filp->private_data;

	return kfab_mmap_table_mmap(&fd->mmap, vma);
}

static const struct file_operations hfi_fops = {
	.owner = THIS_MODULE,
	.open = hfi_open,
	.release = hfi_release,
	.unlocked_ioctl = hfi_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = hfi_mmap,
	.llseek = no_llseek,
};

/* The struct device owns the unit: this runs after the last reference. */
static void hfi_unit_release(struct device *dev)
{
	struct hfi_unit *unit = to_hfi_unit(dev);

	kfab_qmem_put(unit->status);	/* NULL-safe */
	bitmap_free(unit->claimed);
	kfree(unit->slots);
	mutex_destroy(&unit->lock);
	kfree(unit);
}

static struct hfi_unit *hfi_unit_create(u32 index, int node)
{
	struct hfi_unit *unit;
	int ret;

	unit = kzalloc_node(sizeof(*unit), GFP_KERNEL, node);
	if (!unit)
		return ERR_PTR(-ENOMEM);

	unit->index = index;
	unit->lid = index + 1;
	unit->node = node;
	unit->nctxts = hfi_ctxts_per_unit.val;
	unit->rhq_entries = hfi_rhq_entries.val;
	unit->eager_count = hfi_eager_count.val;
	unit->eager_size = hfi_eager_size.val;
	unit->pin_limit_pages = hfi_pin_limit_pages(hfi_pin_limit_mb.val);
	mutex_init(&unit->lock);
	kfab_link_init(&unit->link);
	unit->state = KFAB_HFI_STATE_ACTIVE;
	unit->nfree = unit->nctxts;
	atomic64_set(&unit->ctxts_assigned, 0);
	atomic64_set(&unit->tid_pages_pinned, 0);
	atomic64_set(&unit->tid_regions, 0);
	atomic64_set(&unit->sdma_requests, 0);
	atomic64_set(&unit->sdma_bytes, 0);
	atomic64_set(&unit->notifies, 0);

	/* From here on put_device() frees whatever was allocated. */
	device_initialize(&unit->dev);
	unit->dev.class = kfab_class;
	unit->dev.devt = MKDEV(MAJOR(hfi_devt), index);
	unit->dev.groups = hfi_unit_groups;
	unit->dev.release = hfi_unit_release;
	set_dev_node(&unit->dev, node);

	ret = dev_set_name(&unit->dev, "hfi%u", index);
	if (ret)
		goto err_put;

	ret = -ENOMEM;
	unit->slots = kcalloc_node(unit->nctxts, sizeof(*unit->slots),
				   GFP_KERNEL, node);
	unit->claimed = bitmap_zalloc(unit->nctxts, GFP_KERNEL);
	unit->status = kfab_qmem_alloc(PAGE_SIZE);
	if (!unit->slots || !unit->claimed || !unit->status)
		goto err_put;

	hfi_unit_status(unit)->abi_version = KFAB_ABI_VERSION;
	hfi_unit_status(unit)->unit = unit->index;
	hfi_unit_status(unit)->lid = unit->lid;
	hfi_unit_mirror_status(unit);

	cdev_init(&unit->cdev, &hfi_fops);
	unit->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&unit->cdev, &unit->dev);
	if (ret)
		goto err_put;

	hfi_dbg_unit(unit, "lid %u node %d, %u contexts\n", unit->lid,
		     unit->node, unit->nctxts);
	return unit;

err_put:
	put_device(&unit->dev);
	return ERR_PTR(ret);
}

static void hfi_unit_destroy(struct hfi_unit *unit)
{
	cdev_device_del(&unit->cdev, &unit->dev);
	put_device(&unit->dev);
}

static void hfi_check_abi(void)
{
	BUILD_BUG_ON(sizeof(struct kfab_hfi_version) != 40);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_ctxt_info) != 120);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_assign) != 160);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_map_peer) != 72);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_peer_req) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_tid_update) != 48);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_tid_free) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_sdma) != 56);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_eventfd) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_ctxt_entry) != 88);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_list_ctxts) != 40);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_rhq_entry) != 128);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_ctrl) != 5 * KFAB_CACHELINE);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_ctrl) > PAGE_SIZE);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_status) != 64);
	BUILD_BUG_ON(sizeof(struct kfab_hfi_status) > PAGE_SIZE);
	BUILD_BUG_ON(sizeof(struct kfab_iovec) != 16);
}

static int __init hfi_check_numa(void)
{
	unsigned int i;

	if (hfi_unit_numa_num > hfi_num_units.val) {
		pr_err("kfab_hfi: unit_numa: %u entries for %u units\n",
		       hfi_unit_numa_num, hfi_num_units.val);
		return -EINVAL;
	}
	for (i = 0; i < hfi_unit_numa_num; i++) {
		if (!kfab_param_node_valid(hfi_unit_numa[i])) {
			pr_err("kfab_hfi: unit_numa: %d is not -1 or an online node\n",
			       hfi_unit_numa[i]);
			return -EINVAL;
		}
	}
	return 0;
}

static void hfi_destroy_units(void)
{
	while (hfi_nunits) {
		hfi_nunits--;
		hfi_unit_destroy(hfi_units[hfi_nunits]);
		hfi_units[hfi_nunits] = NULL;
	}
}

static int __init hfi_init(void)
{
	struct hfi_unit *unit;
	u32 i;
	int ret;

	hfi_check_abi();

	ret = hfi_check_numa();
	if (ret)
		return ret;

	hfi_jkey_init();

	ret = alloc_chrdev_region(&hfi_devt, 0, hfi_num_units.val, "kfab_hfi");
	if (ret)
		goto err_jkey;

	for (i = 0; i < hfi_num_units.val; i++) {
		int node = i < hfi_unit_numa_num ? hfi_unit_numa[i] :
						   hfi_default_node(i);

		unit = hfi_unit_create(i, node);
		if (IS_ERR(unit)) {
			ret = PTR_ERR(unit);
			goto err_units;
		}
		hfi_units[i] = unit;
		/* pairs with the acquire in hfi_unit_by_lid() */
		smp_store_release(&hfi_nunits, i + 1);
	}
	return 0;

err_units:
	hfi_destroy_units();
	unregister_chrdev_region(hfi_devt, hfi_num_units.val);
err_jkey:
	hfi_jkey_exit();
	return ret;
}

static void __exit hfi_exit(void)
{
	hfi_destroy_units();
	unregister_chrdev_region(hfi_devt, hfi_num_units.val);
	hfi_jkey_exit();
}

module_init(hfi_init);
module_exit(hfi_exit);

MODULE_DESCRIPTION("kfab emulated Omni-Path-style HFI units");
MODULE_LICENSE("GPL");
