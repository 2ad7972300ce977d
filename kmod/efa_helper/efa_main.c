// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: module parameters, device creation and the ioctl table of
 * /dev/kfab_efa<N> (kfab_core runs the files).
 */

#include <linux/bitmap.h>
#include <linux/build_bug.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "efa.h"

/*
 * Module parameters. Each uint parameter carries its range; the setter
 * refuses anything else with -EINVAL, so a bad value fails insmod.
 */
KFAB_UINT_PARAM(efa, num_devices,
		"Emulated EFA devices (1..8, default 2)",
		.val = 2, .min = 1, .max = EFA_MAX_DEVICES);
KFAB_UINT_PARAM(efa, qps_per_device,
		"Live queue pairs per device (1..1024, default 64)",
		.val = 64, .min = 1, .max = EFA_MAX_QPS);
KFAB_UINT_PARAM(efa, rx_entries,
		"Receive ring entries of every QP (power of two, 16..4096, default 256)",
		.val = 256, .min = 16, .max = 4096, .pow2 = true);
/* At least a page: each buffer is whole pages of the bufs mapping. */
KFAB_UINT_PARAM(efa, mtu,
		"Bytes per packet buffer (power of two, PAGE_SIZE (4096)..65536, default 8192)",
		.val = PAGE_SIZE > 8192 ? PAGE_SIZE : 8192, .min = PAGE_SIZE,
		.max = 65536, .pow2 = true);
KFAB_UINT_PARAM(efa, max_mrs,
		"Memory regions one open file may hold (1..65536, default 4096)",
		.val = 4096, .min = 1, .max = 65536);

static int efa_device_numa[EFA_MAX_DEVICES];
static unsigned int efa_device_numa_num;
module_param_array_named(device_numa, efa_device_numa, int,
			 &efa_device_numa_num, 0444);
MODULE_PARM_DESC(device_numa,
		 "NUMA node of each device (-1: none, or an online node; at most num_devices entries; default: device i on the (i % online nodes)-th online node)");

static struct kfab_devset efa_devices;

/* fe80::6b66:6162:0:<N + 1>: link-local, "kfab" in the interface id. */
static const u8 efa_gid_prefix[KFAB_EFA_GID_LEN - 1] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0, 0, 0,
};

void efa_gid_init(u8 *gid, u32 index)
{
	memcpy(gid, efa_gid_prefix, sizeof(efa_gid_prefix));
	gid[KFAB_EFA_GID_LEN - 1] = index + 1;
}
EXPORT_SYMBOL_IF_KUNIT(efa_gid_init);

/* The device index a gid names, if it is one of ours at all. */
VISIBLE_IF_KUNIT bool efa_gid_to_index(const u8 *gid, u32 *index)
{
	u8 last = gid[KFAB_EFA_GID_LEN - 1];

	if (memcmp(gid, efa_gid_prefix, sizeof(efa_gid_prefix)) ||
	    last == 0 || last > EFA_MAX_DEVICES)
		return false;
	*index = last - 1;
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(efa_gid_to_index);

/* Devices exist from init to exit, so the pointer needs no reference. */
struct efa_device *efa_device_by_gid(const u8 *gid)
{
	struct kfab_cdev *kc;
	u32 index;

	if (!efa_gid_to_index(gid, &index))
		return NULL;
	kc = kfab_devset_get(&efa_devices, index);
	return kc ? to_efa_device(&kc->dev) : NULL;
}

u32 efa_random_key(void)
{
	u32 key;

	do {
		key = get_random_u32();
	} while (!key);
	return key;
}
EXPORT_SYMBOL_IF_KUNIT(efa_random_key);

static int efa_ioctl_query_device(struct kfab_file *f, const void *arg,
				  void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	struct efa_device *dev = fd->dev;
	struct kfab_efa_device_info info;

	memset(&info, 0, sizeof(info));
	info.abi_version = KFAB_ABI_VERSION;
	info.device = dev->index;
	memcpy(info.gid, dev->gid, KFAB_EFA_GID_LEN);
	info.mtu = dev->mtu;
	info.max_qps = dev->max_qps;
	info.rx_entries = dev->rx_entries;
	info.max_mrs = dev->max_mrs;
	info.numa_node = dev->kc.node;
	mutex_lock(&dev->lock);
	info.state = dev->kc.state;
	info.device_rdma = dev->device_rdma;
	info.rnr_retry = dev->rnr_retry;
	mutex_unlock(&dev->lock);
	info.status_offset = fd->status_offset;
	info.mr_state_offset = fd->mr_state_offset;
	info.mr_state_size = fd->mr_state->size;
	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/* The file's own part; the core frees its mmap table and the rest. */
static void efa_file_free(struct efa_filedata *fd)
{
	kfab_qmem_put(fd->mr_state);	/* NULL-safe */
	bitmap_free(fd->mr_slots);
	xa_destroy(&fd->mrs);
	xa_destroy(&fd->qps);
}

static int efa_open(struct kfab_file *f)
{
	struct efa_filedata *fd = to_efa_file(f);
	struct efa_device *dev = to_efa_device(&f->kc->dev);
	int ret;

	fd->dev = dev;
	xa_init(&fd->qps);
	xa_init_flags(&fd->mrs, XA_FLAGS_ALLOC1);

	ret = -ENOMEM;
	fd->mr_slots = bitmap_zalloc(dev->max_mrs, GFP_KERNEL);
	fd->mr_state = kfab_qmem_alloc((size_t)dev->max_mrs * sizeof(u32));
	if (!fd->mr_slots || !fd->mr_state)
		goto err_free;

	ret = kfab_mmap_table_add(&f->mmap, dev->kc.status, false,
				  &fd->status_offset);
	if (ret)
		goto err_free;
	ret = kfab_mmap_table_add(&f->mmap, fd->mr_state, false,
				  &fd->mr_state_offset);
	if (ret)
		goto err_free;
	return 0;

err_free:
	efa_file_free(fd);	/* the table drops what it holds */
	return ret;
}

/*
 * Peer handles are gone already (one of them may name our own QP); then
 * the QPs, so no peer's RDMA finds them live any more, then the MRs.
 */
static void efa_release(struct kfab_file *f)
{
	struct efa_filedata *fd = to_efa_file(f);

	efa_file_release_qps(fd);
	efa_file_release_mrs(fd);
	efa_file_free(fd);
}

static void efa_peer_put(void *q)
{
	efa_qp_put(container_of(q, struct efa_qp, q));
}

static const struct kfab_ioctl efa_ioctls[] = {
	KFAB_IOCTL_OUT(KFAB_EFA_IOC_QUERY_DEVICE, efa_ioctl_query_device, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_CREATE_QP, efa_ioctl_create_qp, 0,
		      struct kfab_efa_create_qp, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_DESTROY_QP, efa_ioctl_destroy_qp, 0,
		      struct kfab_efa_destroy_qp, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_REG_MR, efa_ioctl_reg_mr, 0,
		      struct kfab_efa_reg_mr, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_DEREG_MR, efa_ioctl_dereg_mr, 0,
		      struct kfab_efa_dereg_mr, 0),
	KFAB_IOCTL_IN_PAD0(KFAB_EFA_IOC_MAP_PEER, efa_ioctl_map_peer, 0,
			   struct kfab_efa_map_peer, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_UNMAP_PEER, kfab_ioctl_unmap_peer, 0,
		      struct kfab_efa_peer_req, 0),
	KFAB_IOCTL_IN_PAD0(KFAB_EFA_IOC_RDMA, efa_ioctl_rdma, 0,
			   struct kfab_efa_rdma, KFAB_EFA_RDMA_FLAGS_ALL),
	KFAB_IOCTL_IN_PAD0(KFAB_EFA_IOC_SET_EVENTFD, efa_ioctl_set_eventfd, 0,
			   struct kfab_efa_eventfd, 0),
	KFAB_IOCTL_IN(KFAB_EFA_IOC_NOTIFY, kfab_ioctl_notify, 0,
		      struct kfab_efa_peer_req, 0),
};

static void efa_device_release(struct device *d);
static int efa_device_create(struct kfab_devset *s, u32 index, int node);

static const struct kfab_cdev_ops efa_cdev_ops = {
	.owner = THIS_MODULE,
	.name = "efa",
	.groups = efa_device_groups,
	.dev_release = efa_device_release,
	.file_size = sizeof(struct efa_filedata),
	.open = efa_open,
	.release = efa_release,
	.ioctls = efa_ioctls,
	.nioctls = ARRAY_SIZE(efa_ioctls),
	.max_peers = EFA_MAX_PEERS,
	.peer_put = efa_peer_put,
	.create = efa_device_create,
	.nodes_param = "device_numa",
	.devices = "devices",
	.mirror = efa_device_mirror_status,
};

/* The struct device owns the efa_device: this runs after the last ref. */
static void efa_device_release(struct device *d)
{
	struct efa_device *dev = to_efa_device(d);

	xa_destroy(&dev->mrs);
	xa_destroy(&dev->qps);
	mutex_destroy(&dev->lock);
	mutex_destroy(&dev->mr_check);
	kfree(dev);
}

/* Device @index, added to @s. */
static int efa_device_create(struct kfab_devset *s, u32 index, int node)
{
	struct kfab_efa_status *st;
	struct efa_device *dev;
	int ret;

	dev = kzalloc_node(sizeof(*dev), GFP_KERNEL, node);
	if (!dev)
		return -ENOMEM;

	dev->index = index;
	efa_gid_init(dev->gid, index);
	dev->max_qps = efa_qps_per_device.val;
	dev->rx_entries = efa_rx_entries.val;
	dev->mtu = efa_mtu.val;
	dev->max_mrs = efa_max_mrs.val;
	mutex_init(&dev->lock);
	mutex_init(&dev->mr_check);
	dev->device_rdma = KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE;
	dev->rnr_retry = 3;
	xa_init_flags(&dev->qps, XA_FLAGS_ALLOC1);
	xa_init(&dev->mrs);
	atomic64_set(&dev->qps_live, 0);
	atomic64_set(&dev->qps_created, 0);
	atomic64_set(&dev->mrs_live, 0);
	atomic64_set(&dev->pinned_pages, 0);
	atomic64_set(&dev->stale_mrs, 0);
	atomic64_set(&dev->rdma_reads, 0);
	atomic64_set(&dev->rdma_read_bytes, 0);
	atomic64_set(&dev->rdma_writes, 0);
	atomic64_set(&dev->rdma_write_bytes, 0);

	/* From here on put_device() frees whatever was allocated. */
	ret = kfab_cdev_init(s, &dev->kc, index, node, &dev->lock);
	if (ret)
		goto err_put;

	st = efa_device_status(dev);
	st->abi_version = KFAB_ABI_VERSION;
	st->device = dev->index;
	memcpy(st->gid, dev->gid, KFAB_EFA_GID_LEN);
	st->mtu = dev->mtu;

	ret = kfab_devset_add(s, &dev->kc);
	if (ret)
		goto err_put;

	efa_dbg_dev(dev, "gid %pI6 node %d, %u QPs\n", dev->gid, dev->kc.node,
		    dev->max_qps);
	return 0;

err_put:
	put_device(&dev->kc.dev);
	return ret;
}

static void efa_check_abi(void)
{
	BUILD_BUG_ON(sizeof(struct kfab_efa_device_info) != 112);
	BUILD_BUG_ON(sizeof(struct kfab_efa_create_qp) != 64);
	BUILD_BUG_ON(sizeof(struct kfab_efa_destroy_qp) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_efa_reg_mr) != 56);
	BUILD_BUG_ON(sizeof(struct kfab_efa_dereg_mr) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_efa_map_peer) != 96);
	BUILD_BUG_ON(sizeof(struct kfab_efa_peer_req) != 16);
	BUILD_BUG_ON(sizeof(struct kfab_efa_rdma) != 64);
	BUILD_BUG_ON(sizeof(struct kfab_efa_eventfd) != 24);
	BUILD_BUG_ON(sizeof(struct kfab_efa_rx_entry) != 2 * KFAB_CACHELINE);
	BUILD_BUG_ON(sizeof(struct kfab_efa_qp_ctrl) != 5 * KFAB_CACHELINE);
	BUILD_BUG_ON(sizeof(struct kfab_efa_qp_ctrl) > PAGE_SIZE);
	BUILD_BUG_ON(sizeof(struct kfab_efa_status) != 88);
	BUILD_BUG_ON(sizeof(struct kfab_efa_status) > PAGE_SIZE);
	BUILD_BUG_ON(sizeof(struct kfab_iovec) != 16);
	BUILD_BUG_ON(EFA_MAX_DEVICES >= U8_MAX);
	BUILD_BUG_ON(offsetof(struct kfab_efa_peer_req, peer) != 0);
	BUILD_BUG_ON(offsetof(struct kfab_efa_qp_ctrl, injected_rnrs) !=
		     offsetof(struct kfab_efa_qp_ctrl, rnrs) +
		     EFA_RNR_INJECTED * sizeof(u64));
	BUILD_BUG_ON(EFA_NR_RNRS > KFAB_QOBJ_COUNTERS);
	BUILD_BUG_ON(KFAB_EFA_STATE_DOWN != KFAB_STATE_DOWN);
	BUILD_BUG_ON(KFAB_EFA_STATE_ACTIVE != KFAB_STATE_ACTIVE);
}

static int __init efa_init(void)
{
	efa_check_abi();
	BUILD_BUG_ON(EFA_MAX_DEVICES > KFAB_MAX_DEVICES);
	BUILD_BUG_ON(offsetof(struct efa_filedata, f) != 0);

	return kfab_devset_create(&efa_devices, &efa_cdev_ops,
				  efa_num_devices.val, efa_device_numa,
				  efa_device_numa_num);
}

static void __exit efa_exit(void)
{
	kfab_devset_destroy(&efa_devices);
}

module_init(efa_init);
module_exit(efa_exit);

MODULE_DESCRIPTION("kfab emulated EFA-style devices");
MODULE_LICENSE("GPL");
