// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: /sys/class/kfab/efa<N>/ attributes and counters/.
 *
 * Writable knobs are checked completely before anything changes and are
 * mirrored into the device's status page under dev->lock, so the page never
 * shows a value the attribute does not.
 */

#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/stringify.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <kunit/visibility.h>

#include "efa.h"

/* device_rdma, indexed by the KFAB_EFA_RDMA_CAP_* bits. */
static const char * const efa_rdma_caps_names[] = {
	[0] = "none",
	[KFAB_EFA_RDMA_CAP_READ] = "read",
	[KFAB_EFA_RDMA_CAP_WRITE] = "write",
	[KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE] = "read write",
};

VISIBLE_IF_KUNIT const char *efa_rdma_caps_name(u32 caps)
{
	if (caps >= ARRAY_SIZE(efa_rdma_caps_names))
		return NULL;
	return efa_rdma_caps_names[caps];
}
EXPORT_SYMBOL_IF_KUNIT(efa_rdma_caps_name);

/* Exactly one of the four names, with sysfs's optional newline: -EINVAL. */
VISIBLE_IF_KUNIT int efa_rdma_caps_parse(const char *buf, u32 *caps)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(efa_rdma_caps_names); i++) {
		if (sysfs_streq(buf, efa_rdma_caps_names[i])) {
			*caps = i;
			return 0;
		}
	}
	return -EINVAL;
}
EXPORT_SYMBOL_IF_KUNIT(efa_rdma_caps_parse);

/* Caller holds dev->lock, or the device is not visible yet. */
void efa_device_mirror_status(struct kfab_cdev *kc)
{
	struct efa_device *dev = to_efa_device(&kc->dev);
	struct kfab_efa_status *st = efa_device_status(dev);

	WRITE_ONCE(st->state, kc->state);
	WRITE_ONCE(st->device_rdma, dev->device_rdma);
	WRITE_ONCE(st->rnr_retry, dev->rnr_retry);
	WRITE_ONCE(st->rnr_inject_ppm, dev->rnr_inject_ppm);
	WRITE_ONCE(st->reorder_ppm, dev->reorder_ppm);
	WRITE_ONCE(st->link_rate_mbps, kc->link_rate_mbps);
}

/* %pI6: eight groups of four hex digits, as the spec prints a gid. */
static ssize_t gid_show(struct device *d, struct device_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%pI6\n", to_efa_device(d)->gid);
}
static DEVICE_ATTR_RO(gid);

static ssize_t nfreeqps_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	struct efa_device *dev = to_efa_device(d);
	u32 nfree;

	mutex_lock(&dev->lock);
	nfree = dev->max_qps - dev->nqps;
	mutex_unlock(&dev->lock);
	return sysfs_emit(buf, "%u\n", nfree);
}
static DEVICE_ATTR_RO(nfreeqps);

static ssize_t device_rdma_show(struct device *d,
				struct device_attribute *attr, char *buf)
{
	u32 caps = READ_ONCE(to_efa_device(d)->device_rdma);

	return sysfs_emit(buf, "%s\n", efa_rdma_caps_name(caps));
}

static ssize_t device_rdma_store(struct device *d,
				 struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct efa_device *dev = to_efa_device(d);
	u32 caps;

	if (efa_rdma_caps_parse(buf, &caps))
		return -EINVAL;
	kfab_cdev_set_knob(&dev->kc, &dev->device_rdma, caps);
	return count;
}
static DEVICE_ATTR_RW(device_rdma);

/* The decimal knobs: anything but 0..max is -EINVAL and changes nothing. */
#define EFA_KNOB_ATTR(_name, _max)					\
	KFAB_KNOB_ATTR(efa_attr_##_name, struct efa_device, _name, _max)

static EFA_KNOB_ATTR(rnr_retry, EFA_RNR_RETRY_MAX);
static EFA_KNOB_ATTR(rnr_inject_ppm, EFA_KNOB_MAX);
static EFA_KNOB_ATTR(reorder_ppm, EFA_KNOB_MAX);
static KFAB_U32_ATTR_RO(efa_attr_device, device, struct efa_device, index);
static KFAB_U32_ATTR_RO(efa_attr_mtu, mtu, struct efa_device, mtu);
static KFAB_U32_ATTR_RO(efa_attr_rx_entries, rx_entries, struct efa_device,
			rx_entries);
static KFAB_U32_ATTR_RO(efa_attr_max_qps, max_qps, struct efa_device,
			max_qps);

static struct attribute *efa_device_attrs[] = {
	&efa_attr_device.attr.attr,
	&dev_attr_gid.attr,
	&efa_attr_mtu.attr.attr,
	&efa_attr_rx_entries.attr.attr,
	&efa_attr_max_qps.attr.attr,
	&dev_attr_nfreeqps.attr,
	&dev_attr_device_rdma.attr,
	&efa_attr_rnr_retry.u.attr.attr,
	&efa_attr_rnr_inject_ppm.u.attr.attr,
	&efa_attr_reorder_ppm.u.attr.attr,
	NULL
};

/*
 * counters/. The atomic counters live in the device; the RNR counters are
 * kept by senders in the ctrl pages, and the share of destroyed QPs moves
 * into kc.retired under the same lock that takes them out of the QP
 * table (and what peers add later, when the last of them lets go), so
 * nothing is counted twice or missed.
 */
static ssize_t efa_rnr_show(struct device *d, struct device_attribute *attr,
			    char *buf)
{
	enum efa_rnr which = kfab_counter_which(attr);
	struct efa_device *dev = to_efa_device(d);
	struct efa_qp *qp;
	unsigned long qpn;
	u64 sum;

	mutex_lock(&dev->lock);
	sum = dev->kc.retired[which];
	xa_for_each(&dev->qps, qpn, qp)
		sum += kfab_qobj_counter(&qp->q, which);
	mutex_unlock(&dev->lock);
	return sysfs_emit(buf, "%llu\n", sum);
}

#define EFA_COUNTER_ATTR(_name, _field)					\
	KFAB_COUNTER_ATTR(efa_attr_##_name, _name, struct efa_device, _field)
#define EFA_RNR_ATTR(_name, _which)					\
	KFAB_SUM_ATTR(efa_attr_##_name, _name, efa_rnr_show, _which)

static EFA_COUNTER_ATTR(qps, qps_live);
static EFA_COUNTER_ATTR(qps_created, qps_created);
static EFA_COUNTER_ATTR(mrs, mrs_live);
static EFA_COUNTER_ATTR(pinned_pages, pinned_pages);
static EFA_COUNTER_ATTR(stale_mrs, stale_mrs);
static EFA_COUNTER_ATTR(rdma_reads, rdma_reads);
static EFA_COUNTER_ATTR(rdma_read_bytes, rdma_read_bytes);
static EFA_COUNTER_ATTR(rdma_writes, rdma_writes);
static EFA_COUNTER_ATTR(rdma_write_bytes, rdma_write_bytes);
static EFA_RNR_ATTR(rnrs, EFA_RNR);
static EFA_RNR_ATTR(injected_rnrs, EFA_RNR_INJECTED);

static struct attribute *efa_counter_attrs[] = {
	&efa_attr_qps.attr.attr,
	&efa_attr_qps_created.attr.attr,
	&efa_attr_mrs.attr.attr,
	&efa_attr_pinned_pages.attr.attr,
	&efa_attr_stale_mrs.attr.attr,
	&efa_attr_rdma_reads.attr.attr,
	&efa_attr_rdma_read_bytes.attr.attr,
	&efa_attr_rdma_writes.attr.attr,
	&efa_attr_rdma_write_bytes.attr.attr,
	&kfab_dev_attr_notifies.attr.attr,
	&efa_attr_rnrs.attr.attr,
	&efa_attr_injected_rnrs.attr.attr,
	NULL
};

KFAB_CDEV_GROUPS(efa_device, efa_device_attrs, efa_counter_attrs);
