/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: a table of handles, for the objects a peer names in packets (an
 * endpoint's requests, operation entries): a fixed array of objects of
 * one size, each beginning with struct kfab_handle, a stack of the free
 * ones, and 32-bit handles gen << idx_bits | idx. An object's generation
 * moves on each put, so that a handle outliving its object (a late or
 * duplicate packet) finds nothing instead of the object's next use.
 * get, put and lookup are inline: a few loads and stores. A quota
 * bounds what one of several users of a table holds.
 * Not thread safe: the caller's lock (the domain's) covers it.
 */
#ifndef KFAB_ULIB_HANDLE_H
#define KFAB_ULIB_HANDLE_H

#include <stddef.h>
#include <stdint.h>

/* The first member of an object of a table. */
struct kfab_handle {
	uint32_t idx;			/* its index in the table */
	uint16_t gen;
	uint8_t kind;			/* the provider's, KFAB_HANDLE_FREE: free */
};

#define KFAB_HANDLE_FREE	0

struct kfab_handles {
	uint8_t *objs;			/* n objects of size bytes */
	size_t size;
	uint32_t n;
	uint32_t nfree;
	uint32_t *free;			/* indices, the next one last */
	unsigned int idx_bits;		/* of a handle; the rest is gen's */
	uint32_t gen_mask;
};

/*
 * @n zeroed objects of @size bytes (a struct kfab_handle first), handed
 * out lowest index first; @n at most 2^@idx_bits, @idx_bits 16 to 31.
 * 0 or -FI_ENOMEM (not logged); the table is empty either way until fini.
 */
int kfab_handles_init(struct kfab_handles *t, size_t size, uint32_t n,
		      unsigned int idx_bits);
void kfab_handles_fini(struct kfab_handles *t);

/* Object @i of the table, free or not (i < t->n). */
static inline void *kfab_handle_at(const struct kfab_handles *t, uint32_t i)
{
	return t->objs + (size_t)i * t->size;
}

/*
 * A free object, now of @kind (not KFAB_HANDLE_FREE); the rest of it is
 * as its last user left it. NULL when every one is in use.
 */
static inline struct kfab_handle *kfab_handle_get(struct kfab_handles *t,
						  uint8_t kind)
{
	struct kfab_handle *h;

	if (__builtin_expect(!t->nfree, 0))
		return NULL;
	h = kfab_handle_at(t, t->free[--t->nfree]);
	h->kind = kind;
	return h;
}

/* Back to the table: its handles find nothing from now on. */
static inline void kfab_handle_put(struct kfab_handles *t,
				   struct kfab_handle *h)
{
	h->kind = KFAB_HANDLE_FREE;
	h->gen = (uint16_t)((h->gen + 1) & t->gen_mask);
	t->free[t->nfree++] = h->idx;
}

/*
 * How many objects of a table one user may hold at once (a context's
 * tx_size or rx_size), where several users share the table.
 */
struct kfab_handle_quota {
	uint32_t used, max;
};

/*
 * kfab_handle_get() counted against @q (NULL: not counted, the
 * provider's own): NULL also when @q is used up.
 */
static inline struct kfab_handle *
kfab_handle_get_quota(struct kfab_handles *t, struct kfab_handle_quota *q,
		      uint8_t kind)
{
	struct kfab_handle *h;

	if (q && __builtin_expect(q->used >= q->max, 0))
		return NULL;
	h = kfab_handle_get(t, kind);
	if (q && __builtin_expect(h != NULL, 1))
		q->used++;
	return h;
}

/* kfab_handle_put() of an object got against @q (or NULL). */
static inline void kfab_handle_put_quota(struct kfab_handles *t,
					 struct kfab_handle_quota *q,
					 struct kfab_handle *h)
{
	if (q)
		q->used--;
	kfab_handle_put(t, h);
}

/* The handle of @h, an object in use of a table of @idx_bits. */
static inline uint32_t kfab_handle_of(const struct kfab_handle *h,
				      unsigned int idx_bits)
{
	return (uint32_t)h->gen << idx_bits | h->idx;
}

/* The object in use of @handle if it is of @kind, else NULL. */
static inline struct kfab_handle *
kfab_handle_lookup(const struct kfab_handles *t, uint32_t handle, uint8_t kind)
{
	uint32_t idx = handle & ((1u << t->idx_bits) - 1);
	struct kfab_handle *h;

	if (__builtin_expect(idx >= t->n, 0))
		return NULL;
	h = kfab_handle_at(t, idx);
	if (h->kind != kind || kind == KFAB_HANDLE_FREE ||
	    h->gen != handle >> t->idx_bits)
		return NULL;
	return h;
}

#endif /* KFAB_ULIB_HANDLE_H */
