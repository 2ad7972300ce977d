// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: an endpoint's peers (kfab_peer.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_peer.h"

/* Records per slab of the pool. */
#define KFAB_PEER_SLAB	16

void kfab_peers_init(struct kfab_peers *ps, const struct kfab_peer_ops *ops,
		     const struct kfab_provider *kp)
{
	memset(ps, 0, sizeof(*ps));
	ps->ops = ops;
	ps->kp = kp;
	kfab_pool_init(&ps->pool, ops->size, KFAB_PEER_SLAB, 0);
	kfab_list_init(&ps->all);
}

void kfab_peers_fini(struct kfab_peers *ps)
{
	while (!kfab_list_empty(&ps->all)) {
		struct kfab_peer *peer = kfab_list_first(&ps->all,
							 struct kfab_peer,
							 link);

		kfab_list_del(&peer->link);
		if (ps->ops->release)
			ps->ops->release(ps, peer);
		kfab_pool_put(&ps->pool, peer);
	}
	kfab_pool_fini(&ps->pool);
	kfab_map_fini(&ps->map);
	free(ps->byidx);
	ps->byidx = NULL;
	ps->nidx = 0;
	ps->last = NULL;
}

struct kfab_peer *kfab_peers_find(struct kfab_peers *ps, uint64_t key,
				  const void *name)
{
	struct kfab_peer *peer;

	peer = (struct kfab_peer *)kfab_map_get(&ps->map, key);
	if (peer)
		return ps->last = peer;
	if (kfab_map_reserve(&ps->map, ps->map.count + 1))
		goto nomem;
	peer = kfab_pool_get(&ps->pool);
	if (!peer)
		goto nomem;
	memset(peer, 0, ps->ops->size);
	peer->key = key;
	if (ps->ops->init(ps, peer, name)) {
		kfab_pool_put(&ps->pool, peer);
		return NULL;
	}
	kfab_list_add_tail(&peer->link, &ps->all);
	kfab_map_put(&ps->map, key, (uintptr_t)peer);
	return ps->last = peer;
nomem:
	kfab_warn(ps->kp, FI_LOG_EP_DATA, "out of memory for a peer\n");
	return NULL;
}

struct kfab_peer *kfab_peers_bind(struct kfab_peers *ps,
				  const struct kfab_av *av, fi_addr_t addr,
				  const char *what, int *err)
{
	const struct kfab_av_entry *e = av ? kfab_av_entry(av, addr) : NULL;
	struct kfab_peer *peer, **byidx;
	size_t idx;

	if (!e) {
		kfab_warn(ps->kp, FI_LOG_EP_DATA,
			  "%s: fi_addr %#llx is not in the endpoint's AV%s\n",
			  what, (unsigned long long)addr,
			  av ? "" : " (no AV is bound to it)");
		*err = -FI_EINVAL;
		return NULL;
	}
	idx = (size_t)(addr & av->idx_mask);
	byidx = kfab_av_slots(av, ps->byidx, &ps->nidx, sizeof(*byidx), idx);
	if (!byidx) {
		kfab_warn(ps->kp, FI_LOG_EP_DATA, "%s: out of memory\n", what);
		*err = -FI_ENOMEM;
		return NULL;
	}
	ps->byidx = byidx;
	peer = kfab_peers_get(ps, e->key, e->name);
	if (!peer) {
		*err = -FI_ENOMEM;
		return NULL;
	}
	if (ps->ops->bind)
		ps->ops->bind(ps, peer, e->name);
	byidx[idx] = peer;
	return peer;
}

int kfab_peer_unreachable(struct kfab_peers *ps, struct kfab_peer *peer,
			  int ret)
{
	const struct kfab_peer_ops *ops = ps->ops;
	const char *why = ret == -EACCES ? ops->why_eacces :
			  ret == -ENOENT ? ops->why_enoent :
			  ret == -ENETDOWN ? ops->why_enetdown : NULL;
	char who[64];

	ops->print(peer, who, sizeof(who));
	peer->err = kfab_peer_err(ret);
	kfab_warn(ps->kp, FI_LOG_EP_DATA, "cannot reach %s: %s%s%s%s\n", who,
		  strerror(ret < 0 ? -ret : ret), why ? " (" : "",
		  why ? why : "", why ? ")" : "");
	return peer->err;
}
