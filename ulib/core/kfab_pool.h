/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: object pools, for what the data paths allocate per message
 * (unexpected and out-of-order records, bounce buffers, requests).
 *
 * A pool hands out objects of one size from slabs of slab_objs objects,
 * allocated as it grows and released only by kfab_pool_fini(): once the
 * pool has grown to the traffic, get and put are a few loads and stores.
 * max bounds the objects handed out at once (0: no bound). Not thread
 * safe: the caller's lock (the domain's) covers it.
 *
 * Under AddressSanitizer a free object is poisoned, so a use after
 * kfab_pool_put() is reported as it would be after free().
 */
#ifndef KFAB_ULIB_POOL_H
#define KFAB_ULIB_POOL_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define kfab_pool_poison(p, n)		__asan_poison_memory_region(p, n)
#define kfab_pool_unpoison(p, n)	__asan_unpoison_memory_region(p, n)
#else
#define kfab_pool_poison(p, n)		((void)(p), (void)(n))
#define kfab_pool_unpoison(p, n)	((void)(p), (void)(n))
#endif

struct kfab_pool_slab;

struct kfab_pool {
	size_t obj_size;		/* bytes, aligned as max_align_t */
	size_t slab_objs;
	size_t max;			/* 0: no bound */
	size_t used;			/* objects handed out */
	void *free;			/* linked through their first word */
	struct kfab_pool_slab *slabs;
};

/* A pool of @size-byte objects; nothing is allocated before the first get. */
void kfab_pool_init(struct kfab_pool *pool, size_t size, size_t slab_objs,
		    size_t max);
/* Frees every slab; objects still handed out are gone with them. */
void kfab_pool_fini(struct kfab_pool *pool);
/* One more slab on the free list: 0, or -FI_ENOMEM (not logged). */
int kfab_pool_grow(struct kfab_pool *pool);

/* An object (its contents undefined), or NULL: at max, or out of memory. */
static inline void *kfab_pool_get(struct kfab_pool *pool)
{
	void *obj;

	if (__builtin_expect(!pool->free, 0) &&
	    ((pool->max && pool->used >= pool->max) || kfab_pool_grow(pool)))
		return NULL;
	obj = pool->free;
	kfab_pool_unpoison(obj, pool->obj_size);
	pool->free = *(void **)obj;
	pool->used++;
	return obj;
}

static inline void kfab_pool_put(struct kfab_pool *pool, void *obj)
{
	*(void **)obj = pool->free;
	kfab_pool_poison(obj, pool->obj_size);
	pool->free = obj;
	pool->used--;
}

#endif /* KFAB_ULIB_POOL_H */
