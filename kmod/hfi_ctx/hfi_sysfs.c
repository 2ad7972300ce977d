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

static const char * const hfi_state_names[] = {
	[KFAB_HFI_STATE_DOWN] = "Down",
	[KFAB_HFI_STATE_ACTIVE] = "Active",
};

/* Caller holds unit->lock, or the unit is not visible yet. */
void hfi_unit_mirror_status(struct hfi_unit *unit)
{
	struct kfab_hfi_status *st = hfi_unit_status(unit);

	WRITE_ONCE(st->state, unit->state);
	WRITE_ONCE(st->drop_ppm, unit->drop_ppm);
	WRITE_ONCE(st->link_rate_mbps, unit->link_rate_mbps);
}

static ssize_t numa_node_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", to_hfi_unit(dev)->node);
}
static DEVICE_ATTR_RO(numa_node);

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

static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	u32 state = READ_ONCE(to_hfi_unit(dev)->state);

	return sysfs_emit(buf, "%s\n", hfi_state_names[state]);
}

static ssize_t state_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	struct hfi_unit *unit = to_hfi_unit(dev);
	u32 state;

	if (sysfs_streq(buf, hfi_state_names[KFAB_HFI_STATE_ACTIVE]))
		state = KFAB_HFI_STATE_ACTIVE;
	else if (sysfs_streq(buf, hfi_state_names[KFAB_HFI_STATE_DOWN]))
		state = KFAB_HFI_STATE_DOWN;
	else
		return -EINVAL;

	mutex_lock(&unit->lock);
	WRITE_ONCE(unit->state, state);
	hfi_unit_mirror_status(unit);
	mutex_unlock(&unit->lock);
	hfi_dbg_unit(unit, "state %s\n", hfi_state_names[state]);
	return count;
}
static DEVICE_ATTR_RW(state);

/*
 * Sets the decimal knob @knob of @dev's unit to 0..HFI_KNOB_MAX; anything
 * else: -EINVAL.
 */
static ssize_t hfi_knob_store(struct device *dev, u32 *knob, const char *buf,
			      size_t count)
{
	struct hfi_unit *unit = to_hfi_unit(dev);
	unsigned int v;

	if (kstrtouint(buf, 10, &v) || v > HFI_KNOB_MAX)
		return -EINVAL;
	mutex_lock(&unit->lock);
	WRITE_ONCE(*knob, v);
	hfi_unit_mirror_status(unit);
	mutex_unlock(&unit->lock);
	return count;
}

static ssize_t drop_ppm_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_hfi_unit(dev)->drop_ppm));
}

static ssize_t drop_ppm_store(struct device *dev,
			      struct device_attribute *attr, const char *buf,
			      size_t count)
{
	return hfi_knob_store(dev, &to_hfi_unit(dev)->drop_ppm, buf, count);
}
static DEVICE_ATTR_RW(drop_ppm);

static ssize_t link_rate_mbps_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(to_hfi_unit(dev)->link_rate_mbps));
}

static ssize_t link_rate_mbps_store(struct device *dev,
				    struct device_attribute *attr,
				    const char *buf, size_t count)
{
	return hfi_knob_store(dev, &to_hfi_unit(dev)->link_rate_mbps, buf, count);
}
static DEVICE_ATTR_RW(link_rate_mbps);

static KFAB_U32_ATTR_RO(hfi_attr_unit, unit, struct hfi_unit, index);
static KFAB_U32_ATTR_RO(hfi_attr_lid, lid, struct hfi_unit, lid);
static KFAB_U32_ATTR_RO(hfi_attr_nctxts, nctxts, struct hfi_unit, nctxts);

static struct attribute *hfi_unit_attrs[] = {
	&hfi_attr_unit.attr.attr,
	&hfi_attr_lid.attr.attr,
	&dev_attr_numa_node.attr,
	&dev_attr_state.attr,
	&hfi_attr_nctxts.attr.attr,
	&dev_attr_nfreectxts.attr,
	&dev_attr_drop_ppm.attr,
	&dev_attr_link_rate_mbps.attr,
	&kfab_dev_attr_abi_version.attr,
	NULL
};

static const struct attribute_group hfi_unit_group = {
	.attrs = hfi_unit_attrs,
};

/*
 * counters/. The atomic counters live in the unit; the drop counters are
 * kept by producers in the ctrl pages, and the share of released contexts
 * moves into retired_drops under the same lock that frees their slot (and
 * what peers add later, when the last of them lets go), so nothing is
 * counted twice or missed.
 */
struct hfi_counter_attr {
	struct device_attribute attr;
	size_t offset;		/* of an atomic64_t in struct hfi_unit */
	enum hfi_drop which;	/* or of a drop counter */
};

#define to_hfi_counter_attr(a) container_of(a, struct hfi_counter_attr, attr)

static ssize_t hfi_counter_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	size_t offset = to_hfi_counter_attr(attr)->offset;
	atomic64_t *v = (void *)to_hfi_unit(dev) + offset;

	return sysfs_emit(buf, "%llu\n", (u64)atomic64_read(v));
}

static ssize_t hfi_drop_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	enum hfi_drop which = to_hfi_counter_attr(attr)->which;
	struct hfi_unit *unit = to_hfi_unit(dev);
	u64 drops[HFI_NR_DROPS];
	u64 sum;
	u32 i;

	mutex_lock(&unit->lock);
	sum = unit->retired_drops[which];
	for (i = 0; i < unit->nctxts; i++) {
		if (!unit->slots[i])
			continue;
		hfi_ctxt_read_drops(unit->slots[i], drops);
		sum += drops[which];
	}
	mutex_unlock(&unit->lock);
	return sysfs_emit(buf, "%llu\n", sum);
}

#define HFI_COUNTER_ATTR(_name)						\
	struct hfi_counter_attr hfi_attr_##_name = {			\
		.attr.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.attr.show = hfi_counter_show,				\
		.offset = offsetof(struct hfi_unit, _name),		\
	}

#define HFI_DROP_ATTR(_name, _which)					\
	struct hfi_counter_attr hfi_attr_##_name = {			\
		.attr.attr = { .name = __stringify(_name), .mode = 0444 }, \
		.attr.show = hfi_drop_show,				\
		.which = (_which),					\
	}

static HFI_COUNTER_ATTR(ctxts_assigned);
static HFI_COUNTER_ATTR(tid_pages_pinned);
static HFI_COUNTER_ATTR(tid_regions);
static HFI_COUNTER_ATTR(sdma_requests);
static HFI_COUNTER_ATTR(sdma_bytes);
static HFI_COUNTER_ATTR(notifies);
static HFI_DROP_ATTR(rhq_full_drops, HFI_DROP_RHQ_FULL);
static HFI_DROP_ATTR(eager_full_drops, HFI_DROP_EAGER_FULL);
static HFI_DROP_ATTR(injected_drops, HFI_DROP_INJECTED);

static struct attribute *hfi_counter_attrs[] = {
	&hfi_attr_ctxts_assigned.attr.attr,
	&hfi_attr_tid_pages_pinned.attr.attr,
	&hfi_attr_tid_regions.attr.attr,
	&hfi_attr_sdma_requests.attr.attr,
	&hfi_attr_sdma_bytes.attr.attr,
	&hfi_attr_notifies.attr.attr,
	&hfi_attr_rhq_full_drops.attr.attr,
	&hfi_attr_eager_full_drops.attr.attr,
	&hfi_attr_injected_drops.attr.attr,
	NULL
};

static const struct attribute_group hfi_counter_group = {
	.name = "counters",
	.attrs = hfi_counter_attrs,
};

const struct attribute_group *hfi_unit_groups[] = {
	&hfi_unit_group,
	&hfi_counter_group,
	NULL
};
