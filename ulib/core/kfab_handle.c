// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: tables of handles (kfab_handle.h).
 */
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "kfab_handle.h"

int kfab_handles_init(struct kfab_handles *t, size_t size, uint32_t n,
		      unsigned int idx_bits)
{
	unsigned int gen_bits = 32 - idx_bits;

	t->size = size;
	t->n = 0;
	t->nfree = 0;
	t->idx_bits = idx_bits;
	t->gen_mask = gen_bits >= 16 ? 0xffffu : (1u << gen_bits) - 1;
	t->objs = calloc(n, size);
	t->free = malloc((size_t)n * sizeof(*t->free));
	if (!t->objs || !t->free) {
		kfab_handles_fini(t);
		return -FI_ENOMEM;
	}
	t->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct kfab_handle *h = kfab_handle_at(t, i);

		h->idx = i;
		t->free[n - 1 - i] = i;
	}
	t->nfree = n;
	return 0;
}

void kfab_handles_fini(struct kfab_handles *t)
{
	free(t->objs);
	free(t->free);
	t->objs = NULL;
	t->free = NULL;
	t->n = 0;
	t->nfree = 0;
}
