// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: /sys/class/kfab/hfi<N>/ attributes and counters/.
 *
 * Writable knobs are checked completely before anything changes and are
 * mirrored into the unit's status page under unit->lock, so the page never
 * shows a value the attribute does not.
 */

#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/stringify.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "hfi.h"

/* Caller holds unit->lock, or the unit is not visible yet. */
void hfi_unit_mirror_status(struct kfab_cdev *kc)
{
	struct hfi_unit *unit = to_hfi_unit(&kc->dev);
	struct kfab_hfi_status *st = hfi_unit_status(unit);

	WRITE_ONCE(st->state, kc->state);
	WRITE_ONCE(st->drop_ppm, unit->drop_ppm);
	WRITE_ONCE(st->link_rate_mbps, kc->link_rate_mbps);
}

static ssize_t nfreectxts_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	struct hfi_unit *unit = to_hfi_unit(dev);
	u32 nfree;

	mutex_lock(&unit->lock);
	nfree = unit->nfree;
	mutex_unlock(&unit->lock);
	return sysfs_emit(buf, "%u\n", nfree);
}
static DEVICE_ATTR_RO(nfreectxts);

static KFAB_KNOB_ATTR(hfi_attr_drop_ppm, struct hfi_unit, drop_ppm,
		      HFI_KNOB_MAX);
static KFAB_U32_ATTR_RO(hfi_attr_unit, unit, struct hfi_unit, index);
static KFAB_U32_ATTR_RO(hfi_attr_lid, lid, struct hfi_unit, lid);
static KFAB_U32_ATTR_RO(hfi_attr_nctxts, nctxts, struct hfi_unit, nctxts);

static struct attribute *hfi_unit_attrs[] = {
	&hfi_attr_unit.attr.attr,
	&hfi_attr_lid.attr.attr,
	&hfi_attr_nctxts.attr.attr,
	&dev_attr_nfreectxts.attr,
	&hfi_attr_drop_ppm.u.attr.attr,
	NULL
};

/*
 * counters/. The atomic counters live in the unit; the drop counters are
 * kept by producers in the ctrl pages, and the share of released contexts
 * moves into kc.retired under the same lock that frees their slot (and
 * what peers add later, when the last of them lets go), so nothing is
 * counted twice or missed.
 */
static ssize_t hfi_drop_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	enum hfi_drop which = kfab_counter_which(attr);
	struct hfi_unit *unit = to_hfi_unit(dev);
	u64 sum;
	u32 i;

	mutex_lock(&unit->lock);
	sum = unit->kc.retired[which];
	for (i = 0; i < unit->nctxts; i++)
		if (unit->slots[i])
			sum += kfab_qobj_counter(&unit->slots[i]->q, which);
	mutex_unlock(&unit->lock);
	return sysfs_emit(buf, "%llu\n", sum);
}

#define HFI_COUNTER_ATTR(_name, _field)					\
	KFAB_COUNTER_ATTR(hfi_attr_##_name, _name, struct hfi_unit, _field)
#define HFI_DROP_ATTR(_name, _which)					\
	KFAB_SUM_ATTR(hfi_attr_##_name, _name, hfi_drop_show, _which)

static HFI_COUNTER_ATTR(ctxts_assigned, ctxts_assigned);
static HFI_COUNTER_ATTR(tid_pages_pinned, tid_pages_pinned);
static HFI_COUNTER_ATTR(tid_regions, tid_regions);
static HFI_COUNTER_ATTR(sdma_requests, sdma_requests);
static HFI_COUNTER_ATTR(sdma_bytes, sdma_bytes);
static HFI_DROP_ATTR(rhq_full_drops, HFI_DROP_RHQ_FULL);
static HFI_DROP_ATTR(eager_full_drops, HFI_DROP_EAGER_FULL);
static HFI_DROP_ATTR(injected_drops, HFI_DROP_INJECTED);

static struct attribute *hfi_counter_attrs[] = {
	&hfi_attr_ctxts_assigned.attr.attr,
	&hfi_attr_tid_pages_pinned.attr.attr,
	&hfi_attr_tid_regions.attr.attr,
	&hfi_attr_sdma_requests.attr.attr,
	&hfi_attr_sdma_bytes.attr.attr,
	&kfab_dev_attr_notifies.attr.attr,
	&hfi_attr_rhq_full_drops.attr.attr,
	&hfi_attr_eager_full_drops.attr.attr,
	&hfi_attr_injected_drops.attr.attr,
	NULL
};

KFAB_CDEV_GROUPS(hfi_unit, hfi_unit_attrs, hfi_counter_attrs);
