/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: an intrusive doubly linked list, the kernel's list_head shape.
 * A head is a node pointing at itself when empty.
 */
#ifndef KFAB_ULIB_LIST_H
#define KFAB_ULIB_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct kfab_list {
	struct kfab_list *next, *prev;
};

#define KFAB_LIST_INIT(name)	{ &(name), &(name) }

#define kfab_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void kfab_list_init(struct kfab_list *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool kfab_list_empty(const struct kfab_list *h)
{
	return h->next == h;
}

static inline void kfab_list_insert(struct kfab_list *n, struct kfab_list *prev,
				    struct kfab_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void kfab_list_add_tail(struct kfab_list *n, struct kfab_list *h)
{
	kfab_list_insert(n, h->prev, h);
}

static inline void kfab_list_add(struct kfab_list *n, struct kfab_list *h)
{
	kfab_list_insert(n, h, h->next);
}

/* Unlinks @n and leaves it pointing at itself (safe to delete twice). */
static inline void kfab_list_del(struct kfab_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	kfab_list_init(n);
}

#define kfab_list_entry(ptr, type, member) kfab_container_of(ptr, type, member)

#define kfab_list_first(h, type, member) \
	(kfab_list_empty(h) ? NULL : kfab_list_entry((h)->next, type, member))

#define kfab_list_for_each(pos, h) \
	for (pos = (h)->next; pos != (h); pos = pos->next)

/* Safe against removal of pos. */
#define kfab_list_for_each_safe(pos, tmp, h) \
	for (pos = (h)->next, tmp = pos->next; pos != (h); \
	     pos = tmp, tmp = pos->next)

#endif /* KFAB_ULIB_LIST_H */
