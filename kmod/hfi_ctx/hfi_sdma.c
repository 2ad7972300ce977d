// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: SDMA, the single copy from a sender's memory into a TID buffer
 * of a peer context.
 *
 * The peer's TID is looked up under the peer's ctxt->lock with a reference
 * of our own, so the copy runs with no lock but our file's: the owner may
 * free the TID or die meanwhile, the pages stay until we drop it.
 */

#include <linux/hrtimer.h>
#include <linux/math64.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "hfi.h"

/*
 * Step 4' of the queue protocol, done by the kernel for the sender. The
 * full fence between the copy and the load of armed is in
 * kfab_eventfd_wake_armed().
 */
static void hfi_sdma_wake(struct hfi_ctxt *pc)
{
	mutex_lock(&pc->lock);
	if (!pc->dead &&
	    kfab_eventfd_wake_armed(&hfi_ctxt_ctrl(pc)->armed, &pc->eventfd))
		atomic64_inc(&pc->unit->notifies);
	mutex_unlock(&pc->lock);
}

/*
 * link_rate_mbps: the unit's link carries one transfer after another, so
 * each SDMA into it ends no earlier than bytes * 8 / rate after the link is
 * free. Only a fatal signal cuts the wait short; the data is there already.
 */
static void hfi_sdma_pace(struct hfi_unit *unit, u64 bytes)
{
	u32 rate = READ_ONCE(unit->link_rate_mbps);
	ktime_t done;
	u64 ns;

	if (!rate || !bytes)
		return;
	/* bytes is within a pinned region, below 2^48: no overflow */
	ns = div_u64(bytes * 8 * NSEC_PER_USEC, rate);

	spin_lock(&unit->link_lock);
	done = ktime_get();
	if (ktime_after(unit->link_free, done))
		done = unit->link_free;
	done = ktime_add_ns(done, ns);
	unit->link_free = done;
	spin_unlock(&unit->link_lock);

	set_current_state(TASK_KILLABLE);
	schedule_hrtimeout(&done, HRTIMER_MODE_ABS);
}

int hfi_ioctl_sdma(struct hfi_filedata *fd, void __user *uarg)
{
	struct kfab_hfi_sdma in, out;
	struct kfab_pinned *p = NULL;
	struct hfi_peer *peer;
	struct hfi_ctxt *pc;
	u64 total;
	int ret;

	if (copy_from_user(&in, uarg, sizeof(in)))
		return -EFAULT;
	if ((in.flags & ~KFAB_HFI_SDMA_FLAGS_ALL) || in.reserved[0] ||
	    in.reserved[1])
		return -EINVAL;
	peer = hfi_peer_lookup(fd, in.peer);
	if (!peer)
		return -EINVAL;
	pc = peer->ctxt;

	/* -EINVAL count or wrap, -EFAULT; fd->iov is ours under fd->lock */
	ret = kfab_iov_import(in.iov, in.iovcnt, fd->iov, &total);
	if (ret)
		return ret;

	mutex_lock(&pc->lock);
	if (pc->dead) {
		ret = -ECONNRESET;
	} else if (!hfi_unit_active(fd->unit) || !hfi_unit_active(pc->unit)) {
		ret = -ENETDOWN;
	} else {
		p = kfab_handles_get(&pc->tids, in.tid);
		if (!p)
			ret = -ENOENT;
	}
	mutex_unlock(&pc->lock);
	if (ret)
		return ret;

	ret = kfab_copy_to_pinned(p, in.offset, fd->iov, in.iovcnt, total);
	kfab_pinned_put(p);
	if (ret)
		return ret;

	atomic64_inc(&pc->unit->sdma_requests);
	atomic64_add(total, &pc->unit->sdma_bytes);
	hfi_sdma_pace(pc->unit, total);
	if (in.flags & KFAB_HFI_SDMA_NOTIFY)
		hfi_sdma_wake(pc);

	memset(&out, 0, sizeof(out));
	out.peer = in.peer;
	out.tid = in.tid;
	out.offset = in.offset;
	out.iov = in.iov;
	out.iovcnt = in.iovcnt;
	out.flags = in.flags;
	out.bytes = total;
	if (copy_to_user(uarg, &out, sizeof(out)))
		return -EFAULT;
	return 0;
}
