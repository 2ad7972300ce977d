// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: expected receive (TID) registration.
 *
 * TID_UPDATE pins a receive buffer through kfab_pin(), which charges it to
 * RLIMIT_MEMLOCK and keeps the unit's tid_pages_pinned gauge; on top of that
 * each context may pin at most pin_limit_mb. The TID table of a context is
 * read by its peers' SDMA under ctxt->q.lock; an SDMA in flight holds its own
 * reference, so TID_FREE never pulls pages from under a copy.
 */

#include <linux/mm.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "hfi.h"

/* pin_limit_mb in pages; 0 stays 0 (no limit). Cannot overflow: 2^52. */
u64 hfi_pin_limit_pages(unsigned int limit_mb)
{
	return ((u64)limit_mb << 20) >> PAGE_SHIFT;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_pin_limit_pages);

/* May @npages more be pinned on top of @pinned? Overflow-safe. */
VISIBLE_IF_KUNIT bool hfi_pin_fits(u64 pinned, u64 npages, u64 limit_pages)
{
	if (!limit_pages)
		return true;
	return npages <= limit_pages && pinned <= limit_pages - npages;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_pin_fits);

int hfi_ioctl_tid_update(struct kfab_file *f, const void *arg,
			 void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	struct hfi_ctxt *c = fd->ctxt;
	struct hfi_unit *unit = c->unit;
	const struct kfab_hfi_tid_update *in = arg;
	struct kfab_hfi_tid_update out;
	struct kfab_pinned *p;
	u64 npages;
	bool fits;
	u32 handle;
	int ret;

	if (kfab_range_check(in->vaddr, in->length))
		return -EINVAL;
	npages = kfab_range_npages(in->vaddr, in->length);

	/* Reserve against pin_limit_mb before pinning anything. */
	mutex_lock(&c->q.lock);
	fits = hfi_pin_fits(c->pinned_pages, npages, unit->pin_limit_pages);
	if (fits)
		c->pinned_pages += npages;
	mutex_unlock(&c->q.lock);
	if (!fits)
		return -ENOSPC;

	p = kfab_pin(in->vaddr, in->length, KFAB_PIN_WRITE,
		     &unit->tid_pages_pinned);
	if (IS_ERR(p)) {
		ret = PTR_ERR(p);
		goto err_unreserve;
	}
	/* out.npages: only reachable with no pin limit and 16 TiB pinned */
	if (p->npages > U32_MAX) {
		ret = -ENOMEM;
		goto err_unpin;
	}

	mutex_lock(&c->q.lock);
	ret = kfab_handles_add(&c->tids, p, &handle);
	if (!ret)
		c->ntids++;
	mutex_unlock(&c->q.lock);
	if (ret)
		goto err_unpin;
	atomic64_inc(&unit->tid_regions);

	memset(&out, 0, sizeof(out));
	out.vaddr = in->vaddr;
	out.length = in->length;
	out.handle = handle;
	out.npages = npages;	/* == p->npages: same arithmetic */
	if (copy_to_user(uarg, &out, sizeof(out))) {
		/* nobody knows the handle: take it back */
		mutex_lock(&c->q.lock);
		p = kfab_handles_remove(&c->tids, handle);
		c->ntids--;
		c->pinned_pages -= npages;
		mutex_unlock(&c->q.lock);
		atomic64_dec(&unit->tid_regions);
		if (p)
			kfab_pinned_put(p);
		return -EFAULT;
	}
	hfi_dbg_ctxt(c, "tid %u: %u pages\n", handle, out.npages);
	return 0;

err_unpin:
	kfab_pinned_put(p);
err_unreserve:
	mutex_lock(&c->q.lock);
	c->pinned_pages -= npages;
	mutex_unlock(&c->q.lock);
	return ret;
}

int hfi_ioctl_tid_free(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	struct hfi_ctxt *c = fd->ctxt;
	const struct kfab_hfi_tid_free *in = arg;
	struct kfab_pinned *p;

	mutex_lock(&c->q.lock);
	p = kfab_handles_remove(&c->tids, in->handle);
	if (p) {
		c->ntids--;
		c->pinned_pages -= p->npages;
	}
	mutex_unlock(&c->q.lock);
	if (!p)
		return -EINVAL;

	atomic64_dec(&c->unit->tid_regions);
	kfab_pinned_put(p);	/* an SDMA in flight keeps its own reference */
	return 0;
}

/*
 * Context release: the context is dead, so no peer looks up a TID any more.
 * Pages held by an SDMA in flight go when it drops its reference.
 */
void hfi_tid_release_all(struct hfi_ctxt *c)
{
	u32 ntids;

	kfab_handles_destroy(&c->tids);
	mutex_lock(&c->q.lock);
	ntids = c->ntids;
	c->ntids = 0;
	c->pinned_pages = 0;
	mutex_unlock(&c->q.lock);
	atomic64_sub(ntids, &c->unit->tid_regions);
}
