// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: MAP_PEER handles. A file maps another file's queues (an HFI
 * context's, an EFA QP's) by handle; the handle holds a reference on the
 * peer's object and the mmap offsets of its queues in this file, so the
 * memory stays valid for the mapper after its owner is gone. The file's
 * lock serialises every call but kfab_peers_destroy() (file release).
 */

#include <linux/err.h>
#include <linux/export.h>
#include <linux/slab.h>

#include "kfab_core.h"

void kfab_peers_init(struct kfab_peers *p, u32 max, void (*put)(void *obj))
{
	xa_init_flags(&p->xa, XA_FLAGS_ALLOC1);
	p->next = 0;
	p->count = 0;
	p->max = max;
	p->put = put;
}
EXPORT_SYMBOL_GPL(kfab_peers_init);

static void kfab_peer_free(struct kfab_peers *p, struct kfab_mmap_table *t,
			   struct kfab_peer *peer)
{
	kfab_mmap_table_del_n(t, peer->offsets, peer->nmaps);
	p->put(peer->obj);
	kfree(peer);
	p->count--;
}

struct kfab_peer *kfab_peer_map(struct kfab_peers *p,
				struct kfab_mmap_table *t, void *obj,
				const struct kfab_qmap *maps, unsigned int n,
				u32 *handle)
{
	struct kfab_peer *peer;
	int ret;

	if (WARN_ON_ONCE(n > KFAB_PEER_MAPS))
		return ERR_PTR(-EINVAL);
	if (p->count >= p->max)
		return ERR_PTR(-ENOSPC);

	peer = kzalloc(sizeof(*peer), GFP_KERNEL);
	if (!peer)
		return ERR_PTR(-ENOMEM);
	peer->obj = obj;
	peer->nmaps = n;

	ret = kfab_mmap_table_add_n(t, maps, n, peer->offsets);
	if (ret)
		goto err_free;
	ret = xa_alloc_cyclic(&p->xa, handle, peer, XA_LIMIT(1, INT_MAX),
			      &p->next, GFP_KERNEL);
	if (ret < 0)
		goto err_unmap;
	p->count++;
	return peer;

err_unmap:
	kfab_mmap_table_del_n(t, peer->offsets, n);
err_free:
	kfree(peer);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(kfab_peer_map);

int kfab_peer_unmap(struct kfab_peers *p, struct kfab_mmap_table *t,
		    u32 handle)
{
	struct kfab_peer *peer = xa_erase(&p->xa, handle);

	if (!peer)
		return -EINVAL;
	kfab_peer_free(p, t, peer);
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_peer_unmap);

void *kfab_peer_obj(struct kfab_peers *p, u32 handle)
{
	struct kfab_peer *peer = xa_load(&p->xa, handle);

	return peer ? peer->obj : NULL;
}
EXPORT_SYMBOL_GPL(kfab_peer_obj);

void kfab_peers_destroy(struct kfab_peers *p, struct kfab_mmap_table *t)
{
	struct kfab_peer *peer;
	unsigned long id;

	xa_for_each(&p->xa, id, peer) {
		xa_erase(&p->xa, id);
		kfab_peer_free(p, t, peer);
	}
	xa_destroy(&p->xa);
}
EXPORT_SYMBOL_GPL(kfab_peers_destroy);
