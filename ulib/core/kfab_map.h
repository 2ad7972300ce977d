/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: a map from 64-bit keys to nonzero word-sized values (an index
 * plus one, a pointer), for lookups on the data path: the AV's reverse
 * map (a source's key to its fi_addr) and the domain's memory regions by
 * key. Open addressing with linear probing and deletion by backward
 * shift, a power of two slots at most half used: a lookup is O(1).
 * Not thread safe: the caller's lock (the domain's) covers it.
 */
#ifndef KFAB_ULIB_MAP_H
#define KFAB_ULIB_MAP_H

#include <stddef.h>
#include <stdint.h>

struct kfab_map {
	uint64_t *keys;
	uintptr_t *vals;		/* 0: an empty slot */
	size_t nslots;			/* 0 or a power of two */
	size_t count;
};

/* Room for @n keys in all: 0, or -FI_ENOMEM with the map unchanged. */
int kfab_map_reserve(struct kfab_map *m, size_t n);

/* @key maps to @val (nonzero) from now on; kfab_map_reserve() made room. */
void kfab_map_put(struct kfab_map *m, uint64_t key, uintptr_t val);

/* The slot where the probe run of @key starts (a 64-bit mix). */
static inline size_t kfab_map_home(const struct kfab_map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (m->nslots - 1);
}

/* The slot that holds @key, or the empty one that ends its run. */
static inline size_t kfab_map_slot(const struct kfab_map *m, uint64_t key)
{
	size_t mask = m->nslots - 1, i = kfab_map_home(m, key);

	while (m->vals[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

/* What @key maps to, 0 for none. */
static inline uintptr_t kfab_map_get(const struct kfab_map *m, uint64_t key)
{
	return m->count ? m->vals[kfab_map_slot(m, key)] : 0;
}

/* Forgets @key if it maps to @val (a later put of it may have replaced it). */
void kfab_map_del(struct kfab_map *m, uint64_t key, uintptr_t val);

/* Frees the slots; the map is empty again. */
void kfab_map_fini(struct kfab_map *m);

#endif
