// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: memory regions.
 *
 * REG_MR pins the range through kfab_pin(), which charges it to
 * RLIMIT_MEMLOCK and keeps the device's pinned_pages gauge, and publishes
 * the MR under a random rkey in the device's MR table. A peer's RDMA looks
 * the rkey up under the table's xa_lock and leaves with a reference on the
 * pinned pages only, so DEREG_MR never pulls pages from under a copy.
 *
 * An MMU interval notifier watches the page-aligned range in the owner's
 * mm. Once the process unmaps or remaps any of it, the pinned pages are no
 * longer what the process sees there: the MR turns stale, for good. Its
 * mr_state[] word tells the process, and RDMA through its rkey fails with
 * -ESTALE from then on (an RDMA that passed the check before copies into
 * the old pages, as a DMA already in flight would). Other events may or
 * may not change the pages: a huge page split into small ones (by an
 * munmap or mprotect of a neighbour within the same 2 MiB) keeps them, an
 * madvise(MADV_DONTNEED) or a copy-on-write break does not. They make the
 * MR suspect; the next RDMA through it first compares what the owner maps
 * with the pinned pages (efa_mr_check()) and stales the MR only if they
 * differ. fork() and mprotect() leave the pages in place.
 *
 * The notifier is inserted before the pages are pinned and the pin is
 * checked against its sequence count, so a change racing with REG_MR is
 * not missed; a change caused by the pin itself (breaking copy-on-write of
 * a page only read so far) makes REG_MR pin again.
 */

#include <linux/bitmap.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "efa.h"

/* Pin attempts before REG_MR gives up on a range that keeps changing. */
#define EFA_REG_TRIES		8

/* As in verbs: remote write needs local write. */
VISIBLE_IF_KUNIT bool efa_reg_access_valid(u32 access)
{
	if (access & ~KFAB_EFA_ACCESS_ALL)
		return false;
	return !(access & KFAB_EFA_ACCESS_REMOTE_WRITE) ||
	       (access & KFAB_EFA_ACCESS_LOCAL_WRITE);
}
EXPORT_SYMBOL_IF_KUNIT(efa_reg_access_valid);

/* May a peer's RDMA @op (READ or WRITE) use an MR with @access? */
VISIBLE_IF_KUNIT bool efa_access_ok(u32 op, u32 access)
{
	switch (op) {
	case KFAB_EFA_RDMA_READ:
		return access & KFAB_EFA_ACCESS_REMOTE_READ;
	case KFAB_EFA_RDMA_WRITE:
		return access & KFAB_EFA_ACCESS_REMOTE_WRITE;
	default:
		return false;
	}
}
EXPORT_SYMBOL_IF_KUNIT(efa_access_ok);

VISIBLE_IF_KUNIT unsigned int efa_pin_flags(u32 access)
{
	if (access & (KFAB_EFA_ACCESS_LOCAL_WRITE |
		      KFAB_EFA_ACCESS_REMOTE_WRITE))
		return KFAB_PIN_WRITE;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(efa_pin_flags);

/*
 * [addr, addr + len) inside the MR [mr_vaddr, mr_vaddr + mr_length): its
 * offset in the MR, or -EINVAL (below, beyond, or wrapping).
 */
VISIBLE_IF_KUNIT int efa_remote_offset(u64 mr_vaddr, u64 mr_length, u64 addr,
				       u64 len, u64 *offset)
{
	if (addr < mr_vaddr)
		return -EINVAL;
	if (kfab_range_within(mr_length, addr - mr_vaddr, len))
		return -EINVAL;
	*offset = addr - mr_vaddr;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(efa_remote_offset);

VISIBLE_IF_KUNIT enum efa_mr_effect
efa_event_effect(enum mmu_notifier_event event)
{
	switch (event) {
	case MMU_NOTIFY_UNMAP:
		return EFA_MR_STALE;
	case MMU_NOTIFY_CLEAR:
	case MMU_NOTIFY_MIGRATE:
	case MMU_NOTIFY_EXCLUSIVE:
		return EFA_MR_CHECK;
	default:
		return EFA_MR_KEEP;
	}
}
EXPORT_SYMBOL_IF_KUNIT(efa_event_effect);

/* Publishes @entry under a fresh random rkey, retrying on collision. */
VISIBLE_IF_KUNIT int efa_rkey_insert(struct xarray *mrs, void *entry,
				     u32 *rkey)
{
	u32 key;
	int ret;

	do {
		key = efa_random_key();
		ret = xa_insert(mrs, key, entry, GFP_KERNEL);
	} while (ret == -EBUSY);
	if (ret)
		return ret;
	*rkey = key;
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(efa_rkey_insert);

/* Under mr->lock: a suspect @mr whose pages turned out the same. */
static void efa_mr_set_valid(struct efa_mr *mr)
{
	mr->suspect = false;
	WRITE_ONCE(*mr->state, KFAB_EFA_MR_STATE_VALID);
}

static bool efa_mr_suspect(struct efa_mr *mr)
{
	bool suspect;

	spin_lock(&mr->lock);
	suspect = mr->suspect;
	spin_unlock(&mr->lock);
	return suspect;
}

/* Under mr->lock: true if @mr was not stale before (count it). */
static bool efa_mr_set_stale(struct efa_mr *mr)
{
	if (mr->stale)
		return false;
	mr->stale = true;
	mr->suspect = false;
	WRITE_ONCE(*mr->state, KFAB_EFA_MR_STATE_STALE);
	return true;
}

/* May not sleep: runs under whatever the mm's invalidation holds. */
static bool efa_mr_invalidate(struct mmu_interval_notifier *mni,
			      const struct mmu_notifier_range *range,
			      unsigned long cur_seq)
{
	struct efa_mr *mr = container_of(mni, struct efa_mr, notifier);
	bool stale = false;

	spin_lock(&mr->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (mr->pin && !mr->stale) {
		switch (efa_event_effect(range->event)) {
		case EFA_MR_STALE:
			stale = efa_mr_set_stale(mr);
			break;
		case EFA_MR_CHECK:
			mr->suspect = true;
			WRITE_ONCE(*mr->state, KFAB_EFA_MR_STATE_SUSPECT);
			break;
		case EFA_MR_KEEP:
			break;
		}
	}
	spin_unlock(&mr->lock);
	if (stale)
		atomic64_inc(&mr->dev->stale_mrs);
	return true;
}

static const struct mmu_interval_notifier_ops efa_mr_notifier_ops = {
	.invalidate = efa_mr_invalidate,
};

/*
 * Pin the range of @mr with its notifier in place, and publish the pin and
 * the VALID state word in one step against the notifier: -ENOMEM, -EFAULT.
 */
static int efa_mr_pin(struct efa_mr *mr)
{
	unsigned int tries;
	struct kfab_pinned *p;
	unsigned long seq;

	for (tries = 0; tries < EFA_REG_TRIES; tries++) {
		seq = mmu_interval_read_begin(&mr->notifier);
		p = kfab_pin(mr->vaddr, mr->length, efa_pin_flags(mr->access),
			     &mr->dev->pinned_pages);
		if (IS_ERR(p))
			return PTR_ERR(p);

		spin_lock(&mr->lock);
		if (!mmu_interval_read_retry(&mr->notifier, seq)) {
			mr->pin = p;
			WRITE_ONCE(*mr->state, KFAB_EFA_MR_STATE_VALID);
			spin_unlock(&mr->lock);
			return 0;
		}
		spin_unlock(&mr->lock);
		kfab_pinned_put(p);
		if (fatal_signal_pending(current))
			break;
	}
	return -EFAULT;
}

/*
 * Undoes a registration from its notifier on: the MR is out of its file's
 * lkey table (or never was in it).
 */
static void efa_mr_destroy(struct efa_filedata *fd, struct efa_mr *mr)
{
	struct efa_device *dev = fd->dev;

	/*
	 * After this no peer finds it: nobody touches @mr under xa_lock, and
	 * efa_mr_check() is done with it.
	 */
	if (mr->rkey) {
		mutex_lock(&dev->mr_check);
		xa_erase(&dev->mrs, mr->rkey);
		mutex_unlock(&dev->mr_check);
	}
	mmu_interval_notifier_remove(&mr->notifier);
	WRITE_ONCE(*mr->state, KFAB_EFA_MR_STATE_FREE);
	__clear_bit(mr->state_index, fd->mr_slots);
	fd->nmrs--;
	kfab_pinned_put(mr->pin);	/* an RDMA in flight keeps its own */
	kfree(mr);
}

int efa_ioctl_reg_mr(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	struct efa_device *dev = fd->dev;
	const struct kfab_efa_reg_mr *in = arg;
	struct kfab_efa_reg_mr out;
	struct efa_mr *mr;
	u64 start, size;
	int ret;

	if (!efa_reg_access_valid(in->access))
		return -EINVAL;
	if (kfab_range_check(in->vaddr, in->length))
		return -EINVAL;
	/* Nothing above the user address space is mapped, as kfab_pin() */
	if (in->vaddr + in->length > TASK_SIZE)
		return -EFAULT;
	if (fd->nmrs >= dev->max_mrs)
		return -ENOSPC;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return -ENOMEM;
	mr->dev = dev;
	mr->pd = fd;
	mr->vaddr = in->vaddr;
	mr->length = in->length;
	mr->access = in->access;
	spin_lock_init(&mr->lock);

	start = in->vaddr & PAGE_MASK;
	size = (u64)kfab_range_npages(in->vaddr, in->length) << PAGE_SHIFT;
	ret = mmu_interval_notifier_insert(&mr->notifier, current->mm, start,
					   size, &efa_mr_notifier_ops);
	if (ret) {
		kfree(mr);
		return ret;
	}
	/* below max_mrs: there is a free slot */
	mr->state_index = find_first_zero_bit(fd->mr_slots, dev->max_mrs);
	mr->state = (u32 *)fd->mr_state->vaddr + mr->state_index;
	__set_bit(mr->state_index, fd->mr_slots);
	fd->nmrs++;

	ret = efa_mr_pin(mr);
	if (ret)
		goto err_destroy;
	/* out.npages: only reachable with 16 TiB pinned */
	ret = -ENOMEM;
	if (mr->pin->npages > U32_MAX)
		goto err_destroy;

	ret = xa_alloc_cyclic(&fd->mrs, &mr->lkey, mr, XA_LIMIT(1, INT_MAX),
			      &fd->next_lkey, GFP_KERNEL);
	if (ret < 0)
		goto err_destroy;
	ret = efa_rkey_insert(&dev->mrs, mr, &mr->rkey);
	if (ret)
		goto err_lkey;

	memset(&out, 0, sizeof(out));
	out.vaddr = in->vaddr;
	out.length = in->length;
	out.access = in->access;
	out.lkey = mr->lkey;
	out.rkey = mr->rkey;
	out.npages = mr->pin->npages;
	out.state_index = mr->state_index;
	if (copy_to_user(uarg, &out, sizeof(out))) {
		/* nobody was told the keys: take them back */
		ret = -EFAULT;
		goto err_lkey;
	}
	atomic64_inc(&dev->mrs_live);
	efa_dbg_dev(dev, "mr lkey %u: %u pages, access %#x\n", out.lkey,
		    out.npages, out.access);
	return 0;

err_lkey:
	xa_erase(&fd->mrs, mr->lkey);
err_destroy:
	efa_mr_destroy(fd, mr);
	return ret;
}

/* Takes the MR @lkey out of @fd and destroys it: -EINVAL unknown. */
static int efa_mr_remove(struct efa_filedata *fd, u32 lkey)
{
	struct efa_mr *mr = xa_erase(&fd->mrs, lkey);

	if (!mr)
		return -EINVAL;
	atomic64_dec(&fd->dev->mrs_live);
	efa_mr_destroy(fd, mr);
	return 0;
}

int efa_ioctl_dereg_mr(struct kfab_file *f, const void *arg, void __user *uarg)
{
	const struct kfab_efa_dereg_mr *in = arg;

	return efa_mr_remove(to_efa_file(f), in->lkey);
}

/* File release: the file's QPs are dead, no peer RDMA names these MRs. */
void efa_file_release_mrs(struct efa_filedata *fd)
{
	struct efa_mr *mr;
	unsigned long lkey;

	xa_for_each(&fd->mrs, lkey, mr)
		efa_mr_remove(fd, lkey);
}

/*
 * For a peer's RDMA @op through a QP of @pd: the pinned pages of the MR
 * @rkey of @dev with a reference of the caller's own, and the @offset of
 * [addr, addr + len) in them. -EACCES unknown rkey, an MR of another file
 * or without the remote right; -EINVAL out of the MR; -ESTALE; -EAGAIN
 * suspect: efa_mr_check() first.
 */
struct kfab_pinned *efa_mr_get_remote(struct efa_device *dev,
				      const struct efa_filedata *pd, u32 rkey,
				      u32 op, u64 addr, u64 len, u64 *offset)
{
	struct kfab_pinned *p;
	struct efa_mr *mr;

	xa_lock(&dev->mrs);
	mr = xa_load(&dev->mrs, rkey);
	if (!mr || mr->pd != pd || !efa_access_ok(op, mr->access)) {
		p = ERR_PTR(-EACCES);
	} else if (efa_remote_offset(mr->vaddr, mr->length, addr, len,
				     offset)) {
		p = ERR_PTR(-EINVAL);
	} else {
		spin_lock(&mr->lock);
		if (mr->stale) {
			p = ERR_PTR(-ESTALE);
		} else if (mr->suspect) {
			p = ERR_PTR(-EAGAIN);
		} else {
			p = mr->pin;
			kfab_pinned_get(p);
		}
		spin_unlock(&mr->lock);
	}
	xa_unlock(&dev->mrs);
	return p;
}

/*
 * Settles the MR @rkey of @pqp's file if it is suspect: whether its owner
 * still maps the pinned pages decides between valid and stale. @last: a
 * range that keeps changing while we look turns stale. 0 (look the MR up
 * again), -ECONNRESET, -ENOMEM. Sleeps; no lock held but the caller's
 * file's.
 */
int efa_mr_check(struct efa_qp *pqp, u32 rkey, bool last)
{
	struct efa_device *dev = pqp->dev;
	unsigned long seq;
	struct efa_mr *mr;
	bool stale = false;
	int ret = 0, same;

	mutex_lock(&dev->mr_check);
	mutex_lock(&pqp->q.lock);
	if (pqp->q.dead) {
		ret = -ECONNRESET;
		mr = NULL;
	} else {
		xa_lock(&dev->mrs);
		mr = xa_load(&dev->mrs, rkey);
		if (mr && mr->pd != pqp->pd)
			mr = NULL;
		xa_unlock(&dev->mrs);
	}
	mutex_unlock(&pqp->q.lock);
	if (!mr || !efa_mr_suspect(mr))
		goto out;	/* gone or settled: look it up again */

	seq = mmu_interval_read_begin(&mr->notifier);
	same = kfab_pinned_mapped(mr->pin);
	if (same < 0) {
		ret = same;
		goto out;
	}
	/* a change meanwhile: what we saw proves nothing, look again */
	spin_lock(&mr->lock);
	if (mmu_interval_read_retry(&mr->notifier, seq))
		stale = last && efa_mr_set_stale(mr);
	else if (same && mr->suspect)
		efa_mr_set_valid(mr);
	else if (!same)
		stale = efa_mr_set_stale(mr);
	spin_unlock(&mr->lock);
	if (stale)
		atomic64_inc(&dev->stale_mrs);
out:
	mutex_unlock(&dev->mr_check);
	return ret;
}
