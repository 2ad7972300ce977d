// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: module parameters, unit creation and the ioctl table of
 * /dev/kfab_hfi<N> (kfab_core runs the files).
 */

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "hfi.h"

/*
 * Module parameters. Each uint parameter carries its range; the setter
 * refuses anything else with -EINVAL, so a bad value fails insmod.
 */
KFAB_UINT_PARAM(hfi, num_units,
		"Emulated HFI units (1..8, default 2)",
		.val = 2, .min = 1, .max = HFI_MAX_UNITS);
KFAB_UINT_PARAM(hfi, ctxts_per_unit,
		"Hardware contexts per unit (1..160, default 16)",
		.val = 16, .min = 1, .max = HFI_MAX_CTXTS);
KFAB_UINT_PARAM(hfi, rhq_entries,
		"RHQ entries of 128 bytes per context (power of two, 64..16384, default 2048)",
		.val = 2048, .min = 64, .max = 16384, .pow2 = true);
KFAB_UINT_PARAM(hfi, eager_count,
		"Eager buffers per context (power of two, 16..4096, default 256)",
		.val = 256, .min = 16, .max = 4096, .pow2 = true);
/* At least a page: each buffer is whole pages of the eager mapping. */
KFAB_UINT_PARAM(hfi, eager_size,
		"Bytes per eager buffer (power of two, PAGE_SIZE (4096)..65536, default 8192)",
		.val = PAGE_SIZE > 8192 ? PAGE_SIZE : 8192, .min = PAGE_SIZE,
		.max = 65536, .pow2 = true);
KFAB_UINT_PARAM(hfi, pin_limit_mb,
		"MiB of TID memory one context may pin (0..1048576, 0: only RLIMIT_MEMLOCK, default 1024)",
		.val = 1024, .min = 0, .max = 1048576);

static int hfi_unit_numa[HFI_MAX_UNITS];
static unsigned int hfi_unit_numa_num;
module_param_array_named(unit_numa, hfi_unit_numa, int, &hfi_unit_numa_num,
			 0444);
MODULE_PARM_DESC(unit_numa,
		 "NUMA node of each unit (-1: none, or an online node; at most num_units entries; default: unit i on the (i % online nodes)-th online node)");

static struct kfab_devset hfi_units;

/* Units exist from init to exit, so the pointer needs no reference. */
struct hfi_unit *hfi_unit_by_lid(u32 lid)
{
	struct kfab_cdev *kc;

	if (lid == 0)
		return NULL;
	kc = kfab_devset_get(&hfi_units, lid - 1);
	return kc ? to_hfi_unit(&kc->dev) : NULL;
}

/* Needs no context and no file lock: it reads only the unit. */
static int hfi_ioctl_get_version(struct kfab_file *f, const void *arg,
				 void __user *uarg)
{
	struct hfi_unit *unit = to_hfi_file(f)->unit;
	struct kfab_hfi_version v;

	memset(&v, 0, sizeof(v));
	v.abi_version = KFAB_ABI_VERSION;
	v.unit = unit->index;
	v.lid = unit->lid;
	v.state = READ_ONCE(unit->kc.state);
	v.nctxts = unit->nctxts;
	v.numa_node = unit->kc.node;
	if (copy_to_user(uarg, &v, sizeof(v)))
		return -EFAULT;
	return 0;
}

static int hfi_open(struct kfab_file *f)
{
	to_hfi_file(f)->unit = to_hfi_unit(&f->kc->dev);
	return 0;
}

/* Peer handles are gone already (one of them may be our own context). */
static void hfi_release(struct kfab_file *f)
{
	struct hfi_filedata *fd = to_hfi_file(f);

	if (fd->ctxt) {
		hfi_ctxt_release(fd->ctxt);
		fd->ctxt = NULL;
	}
}

/* Every ioctl but these needs the file's context. */
static bool hfi_ready(struct kfab_file *f)
{
	return to_hfi_file(f)->ctxt;
}

static void hfi_peer_put(void *q)
{
	hfi_ctxt_put(container_of(q, struct hfi_ctxt, q));
}

static const struct kfab_ioctl hfi_ioctls[] = {
	KFAB_IOCTL_OUT(KFAB_HFI_IOC_GET_VERSION, hfi_ioctl_get_version,
		       KFAB_IOCTL_UNLOCKED),
	KFAB_IOCTL_IN_PAD0(KFAB_HFI_IOC_LIST_CTXTS, hfi_ioctl_list_ctxts,
			   KFAB_IOCTL_UNLOCKED, struct kfab_hfi_list_ctxts,
			   KFAB_HFI_LIST_FLAGS_ALL),
	KFAB_IOCTL_IN_PAD0(KFAB_HFI_IOC_ASSIGN_CTXT, hfi_ioctl_assign,
			   KFAB_IOCTL_SETUP, struct kfab_hfi_assign, 0),
	KFAB_IOCTL_OUT(KFAB_HFI_IOC_CTXT_INFO, hfi_ioctl_ctxt_info, 0),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_MAP_PEER, hfi_ioctl_map_peer, 0,
		      struct kfab_hfi_map_peer, 0),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_UNMAP_PEER, kfab_ioctl_unmap_peer, 0,
		      struct kfab_hfi_peer_req, 0),
	KFAB_IOCTL_IN_PAD0(KFAB_HFI_IOC_TID_UPDATE, hfi_ioctl_tid_update, 0,
			   struct kfab_hfi_tid_update, 0),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_TID_FREE, hfi_ioctl_tid_free, 0,
		      struct kfab_hfi_tid_free, 0),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_SDMA, hfi_ioctl_sdma, 0,
		      struct kfab_hfi_sdma, KFAB_HFI_SDMA_FLAGS_ALL),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_SET_EVENTFD, hfi_ioctl_set_eventfd, 0,
		      struct kfab_hfi_eventfd, 0),
	KFAB_IOCTL_IN(KFAB_HFI_IOC_NOTIFY, kfab_ioctl_notify, 0,
		      struct kfab_hfi_peer_req, 0),
};

static void hfi_unit_release(struct device *dev);
static int hfi_unit_create(struct kfab_devset *s, u32 index, int node);

static const struct kfab_cdev_ops hfi_cdev_ops = {
	.owner = THIS_MODULE,
	.name = "hfi",
	.groups = hfi_unit_groups,
	.dev_release = hfi_unit_release,
	.file_size = sizeof(struct hfi_filedata),
	.open = hfi_open,
	.release = hfi_release,
	.ready = hfi_ready,
	.ioctls = hfi_ioctls,
	.nioctls = ARRAY_SIZE(hfi_ioctls),
	.max_peers = HFI_MAX_PEERS,
	.peer_put = hfi_peer_put,
	.create = hfi_unit_create,
	.nodes_param = "unit_numa",
	.devices = "units",
	.mirror = hfi_unit_mirror_status,
};

/* The struct device owns the unit: this runs after the last reference. */
static void hfi_unit_release(struct device *dev)
{
	struct hfi_unit *unit = to_hfi_unit(dev);

	bitmap_free(unit->claimed);
	kfree(unit->slots);
	mutex_destroy(&unit->lock);
	kfree(unit);
}

/* Unit @index, added to @s. */
static int hfi_unit_create(struct kfab_devset *s, u32 index, int node)
{
	struct hfi_unit *unit;
	int ret;

	unit = kzalloc_node(sizeof(*unit), GFP_KERNEL, node);
	if (!unit)
		return -ENOMEM;

	unit->index = index;
	unit->lid = index + 1;
	unit->nctxts = hfi_ctxts_per_unit.val;
	unit->rhq_entries = hfi_rhq_entries.val;
	unit->eager_count = hfi_eager_count.val;
	unit->eager_size = hfi_eager_size.val;
	unit->pin_limit_pages = hfi_pin_limit_pages(hfi_pin_limit_mb.val);
	mutex_init(&unit->lock);
	unit->nfree = unit->nctxts;
	atomic64_set(&unit->ctxts_assigned, 0);
	atomic64_set(&unit->tid_pages_pinned, 0);
	atomic64_set(&unit->tid_regions, 0);
	atomic64_set(&unit->sdma_requests, 0);
	atomic64_set(&unit->sdma_bytes, 0);

	/* From here on put_device() frees whatever was allocated. */
	ret = kfab_cdev_init(s, &unit->kc, index, node, &unit->lock);
	if (ret)
		goto err_put;

	ret = -ENOMEM;
	unit->slots = kcalloc_node(unit->nctxts, sizeof(*unit->slots),
				   GFP_KERNEL, node);
	unit->claimed = bitmap_zalloc(unit->nctxts, GFP_KERNEL);
	if (!unit->slots || !unit->claimed)
		goto err_put;

	hfi_unit_status(unit)->abi_version = KFAB_ABI_VERSION;
	hfi_unit_status(unit)->unit = unit->index;
	hfi_unit_status(unit)->lid = unit->lid;

	ret = kfab_devset_add(s, &unit->kc);
	if (ret)
		goto err_put;

	hfi_dbg_unit(unit, "lid %u node %d, %u contexts\n", unit->lid,
		     unit->kc.node, unit->nctxts);
	return 0;

err_put:
	put_device(&unit->kc.dev);
	return ret;
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
	BUILD_BUG_ON(offsetof(struct kfab_hfi_peer_req, peer) != 0);
	BUILD_BUG_ON(offsetof(struct kfab_hfi_ctrl, injected_drops) !=
		     offsetof(struct kfab_hfi_ctrl, rhq_full_drops) +
		     HFI_DROP_INJECTED * sizeof(u64));
	BUILD_BUG_ON(HFI_NR_DROPS > KFAB_QOBJ_COUNTERS);
	BUILD_BUG_ON(KFAB_HFI_STATE_DOWN != KFAB_STATE_DOWN);
	BUILD_BUG_ON(KFAB_HFI_STATE_ACTIVE != KFAB_STATE_ACTIVE);
}

static int __init hfi_init(void)
{
	int ret;

	hfi_check_abi();
	BUILD_BUG_ON(HFI_MAX_UNITS > KFAB_MAX_DEVICES);
	BUILD_BUG_ON(offsetof(struct hfi_filedata, f) != 0);

	hfi_jkey_init();
	ret = kfab_devset_create(&hfi_units, &hfi_cdev_ops, hfi_num_units.val,
				 hfi_unit_numa, hfi_unit_numa_num);
	if (ret)
		hfi_jkey_exit();
	return ret;
}

static void __exit hfi_exit(void)
{
	kfab_devset_destroy(&hfi_units);
	hfi_jkey_exit();
}

module_init(hfi_init);
module_exit(hfi_exit);

MODULE_DESCRIPTION("kfab emulated Omni-Path-style HFI units");
MODULE_LICENSE("GPL");
