// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the map of 64-bit keys (kfab_map.h).
 */
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "kfab_map.h"

int kfab_map_reserve(struct kfab_map *m, size_t n)
{
	struct kfab_map old = *m;
	size_t nslots = m->nslots ? m->nslots : 64;

	while (2 * n > nslots)
		nslots *= 2;
	if (nslots == m->nslots)
		return 0;
	m->keys = calloc(nslots, sizeof(*m->keys));
	m->vals = calloc(nslots, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		*m = old;
		return -FI_ENOMEM;
	}
	m->nslots = nslots;
	m->count = 0;
	for (size_t i = 0; i < old.nslots; i++)
		if (old.vals[i])
			kfab_map_put(m, old.keys[i], old.vals[i]);
	kfab_map_fini(&old);
	return 0;
}

void kfab_map_put(struct kfab_map *m, uint64_t key, uintptr_t val)
{
	size_t i = kfab_map_slot(m, key);

	m->count += !m->vals[i];
	m->keys[i] = key;
	m->vals[i] = val;
}

void kfab_map_del(struct kfab_map *m, uint64_t key, uintptr_t val)
{
	size_t mask = m->nslots - 1, hole, i, home;

	if (!m->count)
		return;
	hole = kfab_map_slot(m, key);
	if (m->vals[hole] != val)
		return;
	m->vals[hole] = 0;
	m->count--;
	/* pull back each later key of the run the hole would hide */
	for (i = (hole + 1) & mask; m->vals[i]; i = (i + 1) & mask) {
		home = kfab_map_home(m, m->keys[i]);
		/* home cyclically in (hole, i]: it is still reachable */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		m->keys[hole] = m->keys[i];
		m->vals[hole] = m->vals[i];
		m->vals[i] = 0;
		hole = i;
	}
}

void kfab_map_fini(struct kfab_map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->nslots = 0;
	m->count = 0;
}
