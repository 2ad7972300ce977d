// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the tag-matching engine (kfab_tagm.h). Linear in the length of
 * the queue searched, which stays short where applications pre-post.
 */
#include <stddef.h>

#include "kfab_tagm.h"

struct kfab_tagm_entry *kfab_tagm_find_posted(struct kfab_tagm *t,
					      bool tagged, uint64_t tag,
					      uint64_t src)
{
	struct kfab_list *pos;

	kfab_list_for_each(pos, &t->posted[tagged]) {
		struct kfab_tagm_entry *e =
			kfab_list_entry(pos, struct kfab_tagm_entry, link);

		if (!tagged ? (e->src == KFAB_TAGM_ANY_SRC || e->src == src) :
			      kfab_tagm_match(e, tag, src))
			return e;
	}
	return NULL;
}

struct kfab_tagm_entry *kfab_tagm_find_unexp(struct kfab_tagm *t, bool tagged,
					     const struct kfab_tagm_entry *want,
					     bool (*skip)(struct kfab_tagm_entry *e,
							  void *arg),
					     void *arg)
{
	struct kfab_list *pos;

	kfab_list_for_each(pos, &t->unexp[tagged]) {
		struct kfab_tagm_entry *e =
			kfab_list_entry(pos, struct kfab_tagm_entry, link);

		if (want->src != KFAB_TAGM_ANY_SRC && want->src != e->src)
			continue;
		if (tagged && ((want->tag ^ e->tag) & ~want->ignore))
			continue;
		if (skip && skip(e, arg))
			continue;
		return e;
	}
	return NULL;
}
