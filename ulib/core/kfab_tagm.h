/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the tag-matching engine shared by the providers: posted
 * receives and unexpected messages, untagged and tagged, each in arrival
 * order. Entries are embedded in the provider's own request and message
 * structures (struct kfab_tagm_entry).
 *
 * An arriving message matches the first posted receive, in posting order,
 * whose source is the sender or any and whose tag matches outside its
 * ignore bits; a receive being posted matches the first unexpected message
 * the same way. Untagged receives and messages ignore the tag.
 */
#ifndef KFAB_ULIB_TAGM_H
#define KFAB_ULIB_TAGM_H

#include <stdbool.h>
#include <stdint.h>

#include "kfab_list.h"

/* A receive from any source. */
#define KFAB_TAGM_ANY_SRC	UINT64_MAX

struct kfab_tagm_entry {
	struct kfab_list link;
	uint64_t tag;
	uint64_t ignore;	/* posted receives only */
	uint64_t src;		/* source key, KFAB_TAGM_ANY_SRC for any */
};

struct kfab_tagm {
	struct kfab_list posted[2];	/* [0] untagged, [1] tagged */
	struct kfab_list unexp[2];
};

static inline void kfab_tagm_init(struct kfab_tagm *t)
{
	for (int i = 0; i < 2; i++) {
		kfab_list_init(&t->posted[i]);
		kfab_list_init(&t->unexp[i]);
	}
}

static inline bool kfab_tagm_match(const struct kfab_tagm_entry *posted,
				   uint64_t tag, uint64_t src)
{
	return ((posted->tag ^ tag) & ~posted->ignore) == 0 &&
	       (posted->src == KFAB_TAGM_ANY_SRC || posted->src == src);
}

/*
 * The posted receive an arriving message matches, left in place (a
 * multi-receive buffer stays posted), or NULL.
 */
struct kfab_tagm_entry *kfab_tagm_find_posted(struct kfab_tagm *t,
					      bool tagged, uint64_t tag,
					      uint64_t src);

/*
 * The first unexpected message @want (tag, ignore, src of a receive)
 * matches, left in place, or NULL. @skip is called on candidates and may
 * refuse them (claimed messages, say); NULL accepts all.
 */
struct kfab_tagm_entry *kfab_tagm_find_unexp(struct kfab_tagm *t, bool tagged,
					     const struct kfab_tagm_entry *want,
					     bool (*skip)(struct kfab_tagm_entry *e,
							  void *arg),
					     void *arg);

static inline void kfab_tagm_post(struct kfab_tagm *t, bool tagged,
				  struct kfab_tagm_entry *e)
{
	kfab_list_add_tail(&e->link, &t->posted[tagged]);
}

static inline void kfab_tagm_add_unexp(struct kfab_tagm *t, bool tagged,
				       struct kfab_tagm_entry *e)
{
	kfab_list_add_tail(&e->link, &t->unexp[tagged]);
}

#endif /* KFAB_ULIB_TAGM_H */
