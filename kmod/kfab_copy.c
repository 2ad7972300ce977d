// SPDX-License-Identifier: GPL-2.0
/*
 * The single-copy engine: bytes move between a user iovec of the calling
 * process and the pinned pages of a region registered by another process,
 * in one copy_{from,to}_user() per page-sized chunk, with no bounce buffer.
 *
 * The pages are mapped with kmap_local_page(), which leaves page faults
 * enabled: the user side of each copy may fault in (or fail with -EFAULT)
 * while the pinned page is mapped.
 *
 * Dirtying. The copies into a region do not call set_page_dirty_lock();
 * the region's pages are dirtied once, by unpin_user_pages_dirty_lock()
 * at release. That is correct for what regions are made of in practice,
 * anonymous and shmem memory: a page pinned with FOLL_WRITE was made
 * writable and exclusive at pin time, and while it is pinned reclaim can
 * neither free it nor reuse its frame (the pin holds a reference), so no
 * byte we write can be lost before the release marks the page dirty and
 * the normal swap-out path takes over. For a MAP_SHARED file mapping the
 * filesystem may write the page back while it is pinned and not see our
 * later stores until release dirties it again, so an fsync() while the
 * region is registered can miss data: that is the general long-term-GUP
 * limitation RDMA has too, and dirtying after every copy would only
 * narrow the window. Expected-receive buffers are anonymous memory.
 */
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/highmem.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "kfab_core.h"

int kfab_iov_import(u64 uiov, u32 cnt, struct kfab_iovec *kiov, u64 *total)
{
	u64 sum = 0, end;
	u32 i;

	if (!cnt || cnt > KFAB_IOV_MAX)
		return -EINVAL;
	if (copy_from_user(kiov, u64_to_user_ptr(uiov),
			   array_size(cnt, sizeof(*kiov))))
		return -EFAULT;

	/* @kiov is our own copy now: each field is read once, here. */
	for (i = 0; i < cnt; i++) {
		if (check_add_overflow(kiov[i].addr, kiov[i].len, &end))
			return -EINVAL;
		if (check_add_overflow(sum, kiov[i].len, &sum))
			return -EINVAL;
	}
	*total = sum;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_iov_import);

/* Copy @n bytes between page @page at @pgoff and user @uaddr. */
static int kfab_copy_chunk(struct page *page, size_t pgoff, u64 uaddr,
			   size_t n, bool to_pinned)
{
	void __user *u = u64_to_user_ptr(uaddr);
	unsigned long left;
	void *k;

	k = kmap_local_page(page);
	if (to_pinned)
		left = copy_from_user(k + pgoff, u, n);
	else
		left = copy_to_user(u, k + pgoff, n);
	kunmap_local(k);
	return left ? -EFAULT : 0;
}

static int kfab_copy_pinned(struct kfab_pinned *p, u64 offset,
			    const struct kfab_iovec *kiov, u32 cnt, u64 total,
			    bool to_pinned)
{
	u64 pos, left = total;
	u32 i;
	int ret;

	if (kfab_range_within(p->length, offset, total))
		return -EINVAL;
	if (to_pinned && !(p->flags & KFAB_PIN_WRITE))
		return -EPERM;

	/* Byte position counted from the start of the first pinned page. */
	pos = (p->vaddr & ~PAGE_MASK) + offset;

	for (i = 0; i < cnt; i++) {
		u64 uaddr = kiov[i].addr;
		u64 len = kiov[i].len;

		/* @total bounds the walk, whatever the caller summed. */
		if (len > left)
			return -EINVAL;
		left -= len;

		while (len) {
			unsigned long idx = pos >> PAGE_SHIFT;
			size_t pgoff = pos & ~PAGE_MASK;
			size_t n = min_t(u64, len, PAGE_SIZE - pgoff);

			if (WARN_ON_ONCE(idx >= p->npages))
				return -EINVAL;
			ret = kfab_copy_chunk(p->pages[idx], pgoff, uaddr, n,
					      to_pinned);
			if (ret)
				return ret;
			pos += n;
			uaddr += n;
			len -= n;
			/* Crossed into the next page: let others run. */
			if (!(pos & ~PAGE_MASK))
				cond_resched();
		}
	}
	return 0;
}

int kfab_copy_to_pinned(struct kfab_pinned *dst, u64 offset,
			const struct kfab_iovec *kiov, u32 cnt, u64 total)
{
	return kfab_copy_pinned(dst, offset, kiov, cnt, total, true);
}
EXPORT_SYMBOL_GPL(kfab_copy_to_pinned);

int kfab_copy_from_pinned(struct kfab_pinned *src, u64 offset,
			  const struct kfab_iovec *kiov, u32 cnt, u64 total)
{
	return kfab_copy_pinned(src, offset, kiov, cnt, total, false);
}
EXPORT_SYMBOL_GPL(kfab_copy_from_pinned);
