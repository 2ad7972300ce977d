/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: an endpoint's peers. A peer is what an endpoint keeps about
 * one remote endpoint (an OPX connection, an EFA RDM peer, the mapped QP
 * of an EFA datagram destination): a record per endpoint, since the flow
 * state belongs to the pair of endpoints and an AV may be bound to
 * several, found by the remote's key (kp->addr_key() of its name, as the
 * AV entry's) and, for the sender, by the AV index of its entry.
 *
 * A record is the provider's struct with struct kfab_peer first, of
 * ops->size bytes, zeroed when made; records come from the endpoint's
 * pool and live until kfab_peers_fini(), which hands each to the
 * provider's release hook. The AV path is a dense array by AV index whose
 * element is checked against the AV entry's key on every lookup: an
 * address removed and another inserted at its index (a FI_AV_MAP reuse,
 * or a new table) finds its own record, never the old one.
 *
 * Not thread safe: the domain lock covers it.
 */
#ifndef KFAB_ULIB_PEER_H
#define KFAB_ULIB_PEER_H

#include "kfab_pool.h"
#include "kfab_prov.h"

struct kfab_peers;

struct kfab_peer {
	uint64_t key;			/* kp->addr_key() of its name */
	/*
	 * -FI_E* of the last failure to reach it (kfab_peer_unreachable()),
	 * 0: none. Whether a later send tries again is the provider's.
	 */
	int err;
	struct kfab_list link;		/* kfab_peers.all */
};

struct kfab_peer_ops {
	size_t size;			/* of the record, struct kfab_peer first */
	/*
	 * A new record, zeroed with its key set, from @name (an endpoint name
	 * of the provider's format: the AV entry's, or one the provider made
	 * from a packet's source); 0 or -FI_E* (the record is dropped).
	 */
	int (*init)(struct kfab_peers *ps, struct kfab_peer *peer,
		    const void *name);
	/*
	 * kfab_peers_at() keeps @peer (after init when new) for an AV entry
	 * named @name; NULL: nothing to learn from the name.
	 */
	void (*bind)(struct kfab_peers *ps, struct kfab_peer *peer,
		     const void *name);
	/* kfab_peers_fini(): releases what the record holds, NULL: nothing */
	void (*release)(struct kfab_peers *ps, struct kfab_peer *peer);
	/* Writes who @peer is for a message ("lid 1 context 2", "QP 7"). */
	void (*print)(const struct kfab_peer *peer, char *buf, size_t len);
	/* What to add to kfab_peer_unreachable()'s message, by -errno. */
	const char *why_eacces;
	const char *why_enoent;
	const char *why_enetdown;
};

struct kfab_peers {
	const struct kfab_peer_ops *ops;
	const struct kfab_provider *kp;	/* for log messages */
	struct kfab_pool pool;		/* the records */
	struct kfab_map map;		/* key -> record */
	struct kfab_list all;		/* every record, oldest first */
	struct kfab_peer *last;		/* the last one found by key */
	struct kfab_peer **byidx;	/* by AV index */
	size_t nidx;
};

void kfab_peers_init(struct kfab_peers *ps, const struct kfab_peer_ops *ops,
		     const struct kfab_provider *kp);
/* Each record to ops->release, then everything is freed. */
void kfab_peers_fini(struct kfab_peers *ps);

/* kfab_peers_get() past its lookups: found, or made (NULL: logged). */
struct kfab_peer *kfab_peers_find(struct kfab_peers *ps, uint64_t key,
				  const void *name);
/* kfab_peers_at() past its array: NULL with *@err, logged. */
struct kfab_peer *kfab_peers_bind(struct kfab_peers *ps,
				  const struct kfab_av *av, fi_addr_t addr,
				  const char *what, int *err);

/* The record of @key when it is the one found last, else NULL. */
static kfab_always_inline struct kfab_peer *
kfab_peers_last(const struct kfab_peers *ps, uint64_t key)
{
	struct kfab_peer *peer = ps->last;

	return kfab_likely(peer && peer->key == key) ? peer : NULL;
}

/*
 * The record of @key, made from @name (ops->init) on first contact;
 * NULL when out of memory (logged) or refused by ops->init. @name is read
 * only then.
 */
static kfab_always_inline struct kfab_peer *
kfab_peers_get(struct kfab_peers *ps, uint64_t key, const void *name)
{
	struct kfab_peer *peer = kfab_peers_last(ps, key);

	if (kfab_likely(peer != NULL))
		return peer;
	peer = (struct kfab_peer *)kfab_map_get(&ps->map, key);
	if (kfab_likely(peer != NULL))
		return ps->last = peer;
	return kfab_peers_find(ps, key, name);
}

/*
 * The record of AV address @addr of @av (NULL: the endpoint has none),
 * found or made and kept at its index; NULL with *@err = -FI_EINVAL
 * when @addr is not in the endpoint's AV (logged, "@what: fi_addr ...")
 * or -FI_ENOMEM.
 */
static kfab_always_inline struct kfab_peer *
kfab_peers_at(struct kfab_peers *ps, const struct kfab_av *av, fi_addr_t addr,
	      const char *what, int *err)
{
	const struct kfab_av_entry *e = av ? kfab_av_entry(av, addr) : NULL;
	size_t idx;

	if (kfab_likely(e != NULL)) {
		idx = (size_t)(addr & av->idx_mask);
		if (kfab_likely(idx < ps->nidx && ps->byidx[idx] &&
				ps->byidx[idx]->key == e->key))
			return ps->byidx[idx];
	}
	return kfab_peers_bind(ps, av, addr, what, err);
}

/*
 * Reaching @peer failed with the device layer's -errno @ret: its -FI_E*
 * (kfab_peer_err()), also kept in peer->err, after a warning naming the
 * peer (ops->print), @ret and the hint ops has for it.
 */
int kfab_peer_unreachable(struct kfab_peers *ps, struct kfab_peer *peer,
			  int ret);

/* Every record, oldest first (@peer a struct kfab_peer *); none dropped. */
#define kfab_peers_for_each(peer, ps)					\
	for ((peer) = kfab_list_entry((ps)->all.next, struct kfab_peer, link); \
	     &(peer)->link != &(ps)->all;					\
	     (peer) = kfab_list_entry((peer)->link.next, struct kfab_peer,	\
				      link))

#endif /* KFAB_ULIB_PEER_H */
