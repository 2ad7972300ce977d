// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: object pools, see kfab_pool.h.
 */
#include <stdint.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "kfab_pool.h"

struct kfab_pool_slab {
	struct kfab_pool_slab *next;
	size_t bytes;			/* of objs[] */
	max_align_t objs[];
};

void kfab_pool_init(struct kfab_pool *pool, size_t size, size_t slab_objs,
		    size_t max)
{
	const size_t a = _Alignof(max_align_t);

	if (size < sizeof(void *))
		size = sizeof(void *);
	pool->obj_size = (size + a - 1) / a * a;
	pool->slab_objs = slab_objs ? slab_objs : 1;
	pool->max = max;
	pool->used = 0;
	pool->free = NULL;
	pool->slabs = NULL;
}

int kfab_pool_grow(struct kfab_pool *pool)
{
	size_t n = pool->slab_objs;
	struct kfab_pool_slab *slab;
	char *obj;

	if (pool->max && n > pool->max - pool->used)
		n = pool->max - pool->used;
	if (!n || n > (SIZE_MAX - sizeof(*slab)) / pool->obj_size)
		return -FI_ENOMEM;
	slab = malloc(sizeof(*slab) + n * pool->obj_size);
	if (!slab)
		return -FI_ENOMEM;
	slab->bytes = n * pool->obj_size;
	slab->next = pool->slabs;
	pool->slabs = slab;
	obj = (char *)slab->objs + n * pool->obj_size;
	while (n--) {
		obj -= pool->obj_size;
		*(void **)obj = pool->free;
		kfab_pool_poison(obj, pool->obj_size);
		pool->free = obj;
	}
	return 0;
}

void kfab_pool_fini(struct kfab_pool *pool)
{
	struct kfab_pool_slab *slab, *next;

	for (slab = pool->slabs; slab; slab = next) {
		next = slab->next;
		kfab_pool_unpoison(slab->objs, slab->bytes);
		free(slab);
	}
	pool->slabs = NULL;
	pool->free = NULL;
	pool->used = 0;
}
