// SPDX-License-Identifier: GPL-2.0
/*
 * Handle tables: small integers naming pinned regions across processes.
 *
 * The table holds one reference per entry. A user of a handle (an SDMA
 * from another process, say) gets its own reference under xa_lock, so the
 * owner may remove the handle at any time: the region is released when the
 * last user is done with it. Handles are allocated cyclically so that a
 * freed handle is not reused while a stale copy of it may still be in
 * flight; a stale handle then fails to look up instead of hitting a new
 * region.
 */
#include <linux/export.h>
#include <linux/limits.h>

#include "kfab_core.h"

#define KFAB_HANDLE_MAX		(U32_MAX >> 8)

void kfab_handles_init(struct kfab_handles *h)
{
	xa_init_flags(&h->xa, XA_FLAGS_ALLOC1);
	h->next = 1;
}
EXPORT_SYMBOL_GPL(kfab_handles_init);

int kfab_handles_add(struct kfab_handles *h, struct kfab_pinned *p,
		     u32 *handle)
{
	int ret;

	/* 1 means the ids wrapped, which is fine. */
	ret = xa_alloc_cyclic(&h->xa, handle, p, XA_LIMIT(1, KFAB_HANDLE_MAX),
			      &h->next, GFP_KERNEL);
	return ret < 0 ? ret : 0;
}
EXPORT_SYMBOL_GPL(kfab_handles_add);

struct kfab_pinned *kfab_handles_get(struct kfab_handles *h, u32 handle)
{
	struct kfab_pinned *p;

	xa_lock(&h->xa);
	p = xa_load(&h->xa, handle);
	if (p)
		kfab_pinned_get(p);
	xa_unlock(&h->xa);
	return p;
}
EXPORT_SYMBOL_GPL(kfab_handles_get);

struct kfab_pinned *kfab_handles_remove(struct kfab_handles *h, u32 handle)
{
	return xa_erase(&h->xa, handle);
}
EXPORT_SYMBOL_GPL(kfab_handles_remove);

void kfab_handles_destroy(struct kfab_handles *h)
{
	struct kfab_pinned *p;
	unsigned long handle;

	/* The erase result, not @p: robust against a racing remove. */
	xa_for_each(&h->xa, handle, p)
		kfab_pinned_put(xa_erase(&h->xa, handle));
	xa_destroy(&h->xa);
}
EXPORT_SYMBOL_GPL(kfab_handles_destroy);
