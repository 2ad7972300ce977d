// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: an emulated link of limited rate.
 *
 * A device's link carries one transfer after another: a transfer of n
 * bytes ends n * 8 / rate after the later of now and the end of the
 * transfer before it. The copy itself is already done when the caller
 * waits; the wait only makes the link as slow as the knob says.
 */

#include <linux/export.h>
#include <linux/hrtimer.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/time64.h>

#include "kfab_core.h"

void kfab_link_init(struct kfab_link *l)
{
	spin_lock_init(&l->lock);
	l->free = 0;
}
EXPORT_SYMBOL_GPL(kfab_link_init);

u64 kfab_link_ns(u64 bytes, u32 rate_mbps)
{
	if (!rate_mbps)
		return 0;
	/* bytes lie within a pinned region, below 2^48: no overflow */
	return div_u64(bytes * 8 * NSEC_PER_USEC, rate_mbps);
}
EXPORT_SYMBOL_GPL(kfab_link_ns);

void kfab_link_pace(struct kfab_link *l, u32 rate_mbps, u64 bytes)
{
	u64 ns = kfab_link_ns(bytes, rate_mbps);
	ktime_t done;

	if (!ns)
		return;
	spin_lock(&l->lock);
	done = ktime_get();
	if (ktime_after(l->free, done))
		done = l->free;
	done = ktime_add_ns(done, ns);
	l->free = done;
	spin_unlock(&l->lock);

	set_current_state(TASK_KILLABLE);
	schedule_hrtimeout(&done, HRTIMER_MODE_ABS);
}
EXPORT_SYMBOL_GPL(kfab_link_pace);
