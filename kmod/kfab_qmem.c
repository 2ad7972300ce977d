// SPDX-License-Identifier: GPL-2.0
/*
 * Queue memory: zeroed vmalloc_user() areas mapped into userspace.
 *
 * Lifetime rules
 *
 *  - A struct kfab_qmem is reference counted. kfab_qmem_alloc() returns
 *    the creator's reference (the device object that owns the queue).
 *  - Each entry of a per-file mmap table holds one reference, taken by
 *    kfab_mmap_table_add() and dropped by kfab_mmap_table_del() or
 *    kfab_mmap_table_destroy(). An entry only says "this offset of this
 *    file may map that memory"; it does not keep the owner alive.
 *  - Each VMA holds one reference: the one taken by the table lookup in
 *    kfab_mmap_table_mmap() becomes the reference of the first VMA, and
 *    kfab_qmem_vm_open() takes one for every copy the mm makes of it
 *    (split, fork, mremap); kfab_qmem_vm_close() drops it.
 *  - The memory is freed when the last of these goes, in any order. So the
 *    owner may release its context while a peer still maps its queues:
 *    the peer's stores land in memory nobody reads any more, never in
 *    freed pages.
 *
 * The table is used concurrently by mmap() (mmap_lock held) and by ioctls
 * on the same file. Lookups run under xa_lock and take the qmem reference
 * before dropping it; removal erases the entry under the same lock, so an
 * entry freed after xa_erase() can no longer be seen by anyone.
 */
#define pr_fmt(fmt) "kfab: " fmt

#include <linux/errno.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "kfab_core.h"

struct kfab_mmap_entry {
	struct kfab_qmem *qmem;
	bool writable;
};

/*
 * Table ids, i.e. mmap offsets >> PAGE_SHIFT. The offset stays below 2^31
 * so that even a 32-bit caller of plain mmap() can pass it.
 */
#define KFAB_MMAP_ID_MAX	((u32)(S32_MAX >> PAGE_SHIFT))

struct kfab_qmem *kfab_qmem_alloc(size_t size)
{
	struct kfab_qmem *q;

	if (!size || size > (SIZE_MAX & PAGE_MASK))
		return NULL;
	size = PAGE_ALIGN(size);

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return NULL;

	q->vaddr = vmalloc_user(size);	/* zeroed, VM_USERMAP */
	if (!q->vaddr) {
		kfree(q);
		return NULL;
	}
	q->size = size;
	kref_init(&q->ref);
	return q;
}
EXPORT_SYMBOL_GPL(kfab_qmem_alloc);

static void kfab_qmem_release(struct kref *ref)
{
	struct kfab_qmem *q = container_of(ref, struct kfab_qmem, ref);

	vfree(q->vaddr);
	kfree(q);
}

void kfab_qmem_put(struct kfab_qmem *q)
{
	if (q)
		kref_put(&q->ref, kfab_qmem_release);
}
EXPORT_SYMBOL_GPL(kfab_qmem_put);

static void kfab_qmem_vm_open(struct vm_area_struct *vma)
{
	kfab_qmem_get(vma->vm_private_data);
}

static void kfab_qmem_vm_close(struct vm_area_struct *vma)
{
	kfab_qmem_put(vma->vm_private_data);
}

static const struct vm_operations_struct kfab_qmem_vm_ops = {
	.open = kfab_qmem_vm_open,
	.close = kfab_qmem_vm_close,
};

void kfab_mmap_table_init(struct kfab_mmap_table *t)
{
	xa_init_flags(&t->entries, XA_FLAGS_ALLOC1);
	t->next = 1;
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_init);

int kfab_mmap_table_add(struct kfab_mmap_table *t, struct kfab_qmem *q,
			bool writable, u64 *offset)
{
	struct kfab_mmap_entry *e;
	u32 id;
	int ret;

	e = kmalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->qmem = q;
	e->writable = writable;
	kfab_qmem_get(q);

	/* Cyclic: an offset just deleted is not handed out again soon. */
	ret = xa_alloc_cyclic(&t->entries, &id, e,
			      XA_LIMIT(1, KFAB_MMAP_ID_MAX), &t->next,
			      GFP_KERNEL);
	if (ret < 0) {
		kfab_qmem_put(q);
		kfree(e);
		return ret;
	}
	*offset = (u64)id << PAGE_SHIFT;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_add);

void kfab_mmap_table_del(struct kfab_mmap_table *t, u64 offset)
{
	struct kfab_mmap_entry *e;

	if (offset & ~PAGE_MASK || (offset >> PAGE_SHIFT) > KFAB_MMAP_ID_MAX)
		return;
	e = xa_erase(&t->entries, offset >> PAGE_SHIFT);
	if (!e)
		return;
	kfab_qmem_put(e->qmem);
	kfree(e);
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_del);

/* The entry at @pgoff with a new qmem reference, or NULL. */
static struct kfab_qmem *kfab_mmap_table_lookup(struct kfab_mmap_table *t,
						unsigned long pgoff,
						bool *writable)
{
	struct kfab_mmap_entry *e;
	struct kfab_qmem *q = NULL;

	xa_lock(&t->entries);
	e = xa_load(&t->entries, pgoff);
	if (e) {
		q = e->qmem;
		kfab_qmem_get(q);
		*writable = e->writable;
	}
	xa_unlock(&t->entries);
	return q;
}

int kfab_mmap_table_mmap(struct kfab_mmap_table *t, struct vm_area_struct *vma)
{
	struct kfab_qmem *q;
	bool writable;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	q = kfab_mmap_table_lookup(t, vma->vm_pgoff, &writable);
	if (!q)
		return -EINVAL;

	/* The whole object, exactly: no partial or oversized mappings. */
	if (vma->vm_end - vma->vm_start != q->size) {
		ret = -EINVAL;
		goto err_put;
	}

	if (!writable) {
		if (vma->vm_flags & VM_WRITE) {
			ret = -EPERM;
			goto err_put;
		}
		/* mprotect(PROT_WRITE) later fails with -EACCES. */
		vma->vm_flags &= ~VM_MAYWRITE;
	}
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;

	/* vm_pgoff is our cookie, not an offset into the memory: map from 0. */
	ret = remap_vmalloc_range(vma, q->vaddr, 0);
	if (ret)
		goto err_put;

	/* The lookup's reference now belongs to this VMA. */
	vma->vm_private_data = q;
	vma->vm_ops = &kfab_qmem_vm_ops;
	return 0;

err_put:
	kfab_qmem_put(q);
	return ret;
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_mmap);

void kfab_mmap_table_destroy(struct kfab_mmap_table *t)
{
	struct kfab_mmap_entry *e;
	unsigned long id;

	xa_for_each(&t->entries, id, e) {
		e = xa_erase(&t->entries, id);
		if (!e)
			continue;	/* a racing del took it */
		kfab_qmem_put(e->qmem);
		kfree(e);
	}
	xa_destroy(&t->entries);
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_destroy);

int kfab_mmap_table_add_n(struct kfab_mmap_table *t,
			  const struct kfab_qmap *maps, unsigned int n,
			  u64 *offsets)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = kfab_mmap_table_add(t, maps[i].qmem, maps[i].writable,
					  &offsets[i]);
		if (ret) {
			kfab_mmap_table_del_n(t, offsets, i);
			return ret;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_add_n);

void kfab_mmap_table_del_n(struct kfab_mmap_table *t, const u64 *offsets,
			   unsigned int n)
{
	while (n--)
		kfab_mmap_table_del(t, offsets[n]);
}
EXPORT_SYMBOL_GPL(kfab_mmap_table_del_n);
