// SPDX-License-Identifier: GPL-2.0
/*
 * Pinning user memory for single-copy transfers.
 *
 * A struct kfab_pinned is a range of the caller's address space whose pages
 * stay resident (FOLL_LONGTERM) until the last reference goes: the kernel
 * copies into or out of them later, from another process's ioctl.
 *
 * Accounting follows the RDMA and VFIO drivers: the pages are charged to
 * the pinning mm's locked_vm against RLIMIT_MEMLOCK, unless the caller has
 * CAP_IPC_LOCK, and are uncharged from that same mm at release. The mm is
 * kept with mmgrab() (not mmget(): we hold the counters, not the address
 * space), because the last reference is often dropped at exit, when
 * current->mm is already NULL, or by another process altogether.
 *
 * The release path sleeps (page locks for dirtying, mmap_lock for the
 * uncharge): the last kfab_pinned_put() must come from process context.
 */
#define pr_fmt(fmt) "kfab: " fmt

#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "kfab_core.h"

#define KFAB_PIN_FLAGS_ALL	KFAB_PIN_WRITE

/* Pages per pin_user_pages_fast() call; it takes an int count. */
#define KFAB_PIN_BATCH		4096UL

static int kfab_pin_pages(struct kfab_pinned *p, unsigned int gup_flags)
{
	unsigned long addr = p->vaddr & PAGE_MASK;
	unsigned long done = 0;
	int ret;

	while (done < p->npages) {
		int n = min(p->npages - done, KFAB_PIN_BATCH);

		ret = pin_user_pages_fast(addr + (done << PAGE_SHIFT), n,
					  gup_flags, p->pages + done);
		if (ret < 0)
			goto err_unpin;
		done += ret;
		/* Short: the next page could not be pinned. All or nothing. */
		if (ret < n) {
			ret = -EFAULT;
			goto err_unpin;
		}
	}
	return 0;

err_unpin:
	unpin_user_pages(p->pages, done);
	return ret;
}

struct kfab_pinned *kfab_pin(u64 vaddr, u64 length, unsigned int flags,
			     atomic64_t *gauge)
{
	struct mm_struct *mm = current->mm;
	unsigned int gup_flags = FOLL_LONGTERM;
	struct kfab_pinned *p;
	int ret;

	if (flags & ~KFAB_PIN_FLAGS_ALL)
		return ERR_PTR(-EINVAL);
	if (kfab_range_check(vaddr, length))
		return ERR_PTR(-EINVAL);
	/* Nothing above the user address space is mapped; also bounds npages. */
	if (!mm || vaddr + length > TASK_SIZE)
		return ERR_PTR(-EFAULT);
	if (flags & KFAB_PIN_WRITE)
		gup_flags |= FOLL_WRITE;

	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return ERR_PTR(-ENOMEM);
	kref_init(&p->ref);
	p->vaddr = vaddr;
	p->length = length;
	p->flags = flags;
	p->npages = kfab_range_npages(vaddr, length);

	if (!capable(CAP_IPC_LOCK)) {
		ret = account_locked_vm(mm, p->npages, true);
		if (ret)
			goto err_free;
		p->accounted = true;
	}

	mmgrab(mm);
	p->mm = mm;

	/* A huge request must fail with -ENOMEM, not warn. */
	p->pages = kvcalloc(p->npages, sizeof(*p->pages),
			    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!p->pages) {
		ret = -ENOMEM;
		goto err_mmdrop;
	}

	ret = kfab_pin_pages(p, gup_flags);
	if (ret)
		goto err_free_pages;

	p->gauge = gauge;
	if (gauge)
		atomic64_add(p->npages, gauge);
	return p;

err_free_pages:
	kvfree(p->pages);
err_mmdrop:
	mmdrop(mm);		/* still held by current: usable below */
	if (p->accounted)
		account_locked_vm(mm, p->npages, false);
err_free:
	kfree(p);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(kfab_pin);

static void kfab_pinned_release(struct kref *ref)
{
	struct kfab_pinned *p = container_of(ref, struct kfab_pinned, ref);

	/*
	 * Pages the kernel may have written are dirtied here, once, rather
	 * than after every copy: see the comment in kfab_copy.c.
	 */
	if (p->pages) {
		unpin_user_pages_dirty_lock(p->pages, p->npages,
					    p->flags & KFAB_PIN_WRITE);
		kvfree(p->pages);
	}
	if (p->accounted)
		account_locked_vm(p->mm, p->npages, false);
	if (p->mm)
		mmdrop(p->mm);
	if (p->gauge)
		atomic64_sub(p->npages, p->gauge);
	kfree(p);
}

void kfab_pinned_put(struct kfab_pinned *p)
{
	if (p)
		kref_put(&p->ref, kfab_pinned_release);
}
EXPORT_SYMBOL_GPL(kfab_pinned_put);

/* Pages compared per get_user_pages_remote() call. */
#define KFAB_MAPPED_BATCH	512UL

/*
 * Does the pinning mm still map the pinned pages, each at its address?
 * Looks without faulting anything in: a page no longer mapped, or another
 * page in its place (an munmap, an madvise(MADV_DONTNEED), a copy-on-write
 * break), is a change; a huge page split into small ones over the same
 * pages is not. 1 same, 0 changed (or the mm is gone), -ENOMEM. Sleeps.
 */
int kfab_pinned_mapped(struct kfab_pinned *p)
{
	unsigned long addr = p->vaddr & PAGE_MASK;
	unsigned long done = 0;
	struct page **pages;
	int same = 1;
	long i, n;

	pages = kmalloc_array(min(p->npages, KFAB_MAPPED_BATCH),
			      sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	if (!mmget_not_zero(p->mm)) {
		kfree(pages);
		return 0;
	}
	mmap_read_lock(p->mm);
	while (same && done < p->npages) {
		n = get_user_pages_remote(p->mm, addr + (done << PAGE_SHIFT),
					  min(p->npages - done,
					      KFAB_MAPPED_BATCH),
					  FOLL_NOFAULT, pages, NULL, NULL);
		if (n <= 0) {
			same = 0;
			break;
		}
		for (i = 0; i < n; i++) {
			if (pages[i] != p->pages[done + i])
				same = 0;
			put_page(pages[i]);
		}
		done += n;
	}
	mmap_read_unlock(p->mm);
	mmput(p->mm);
	kfree(pages);
	return same;
}
EXPORT_SYMBOL_GPL(kfab_pinned_mapped);

#if IS_ENABLED(CONFIG_KFAB_KUNIT_TEST)
/*
 * A region with no pages and no mm, only a page count and a gauge: lets
 * the KUnit tests observe every release through the gauge.
 */
struct kfab_pinned *kfab_pinned_test_alloc(unsigned long npages,
					   atomic64_t *gauge)
{
	struct kfab_pinned *p;

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return NULL;
	kref_init(&p->ref);
	p->npages = npages;
	p->length = (u64)npages << PAGE_SHIFT;
	p->gauge = gauge;
	if (gauge)
		atomic64_add(npages, gauge);
	return p;
}
EXPORT_SYMBOL_NS_GPL(kfab_pinned_test_alloc, EXPORTED_FOR_KUNIT_TESTING);
#endif
