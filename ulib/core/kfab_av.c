// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the address vector. Names are kept in a table in insertion
 * order; the fi_addr_t of a name is its index, for FI_AV_TABLE and
 * FI_AV_MAP alike, and a removed index is not given out again. A map of
 * the names' keys (kp->addr_key) gives the reverse map for FI_SOURCE.
 * Insertion is synchronous; with FI_EVENT its outcome is also reported to
 * the bound EQ.
 */
#include <stdlib.h>
#include <string.h>

#include "kfab_prov.h"

#define AV_MIN_CAP	64
/* First allocation at most this many entries, whatever attr->count says. */
#define AV_MAX_PREALLOC	65536

static inline struct kfab_av *to_av(struct fid_av *av_fid)
{
	return kfab_container_of(av_fid, struct kfab_av, av_fid);
}

fi_addr_t kfab_av_reverse(const struct kfab_av *av, uint64_t key)
{
	uintptr_t idx1 = kfab_map_get(&av->keys, key);

	return idx1 ? idx1 - 1 : FI_ADDR_NOTAVAIL;
}

void *kfab_av_slots(const struct kfab_av *av, void *slots, size_t *n,
		    size_t size, size_t idx)
{
	size_t want = av->count > idx ? av->count : idx + 1;
	uint8_t *t;

	if (idx < *n)
		return slots;
	t = realloc(slots, want * size);
	if (!t)
		return NULL;
	memset(t + *n * size, 0, (want - *n) * size);
	*n = want;
	return t;
}

/* ------------------------------------------------------------------ */
/* the table */

static int av_reserve(struct kfab_av *av, size_t more)
{
	size_t need = av->count + more, ncap = av->cap;
	uint8_t *t;

	if (need > UINT32_MAX - 1)
		return -FI_ENOSPC;
	while (ncap < need)
		ncap *= 2;
	if (ncap != av->cap) {
		t = realloc(av->table, ncap * av->entry_size);
		if (!t)
			return -FI_ENOMEM;
		av->table = t;
		av->cap = ncap;
	}
	return kfab_map_reserve(&av->keys, need);
}

static struct kfab_av_entry *av_slot(const struct kfab_av *av, size_t idx)
{
	return (struct kfab_av_entry *)(av->table + idx * av->entry_size);
}

/* ------------------------------------------------------------------ */
/* fi_ops_av */

static void av_event_err(struct kfab_av *av, void *context, size_t i,
			 int err, const char *why)
{
	struct fi_eq_err_entry e = {
		.fid = &av->av_fid.fid,
		.context = context,
		.data = i,
		.err = err,
	};

	kfab_eq_post(av->eq, FI_AV_COMPLETE, &e, sizeof(e), why);
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct kfab_av *av = to_av(av_fid);
	struct kfab_domain *domain = av->domain;
	const struct kfab_provider *kp = domain->kp;
	bool event = av->flags & FI_EVENT;
	int *sync_err = NULL;
	struct kfab_av_entry *e;
	size_t i, n = 0;
	uint64_t key;
	int ret;

	if (flags & ~(FI_MORE | FI_SYNC_ERR)) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_insert: flags %#llx not supported: use FI_MORE and FI_SYNC_ERR only\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (event && !av->eq) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_insert: the AV was opened with FI_EVENT: bind an EQ first\n");
		return -FI_ENOEQ;
	}
	if ((flags & FI_SYNC_ERR) && !event)
		sync_err = context;
	if (count && !addr) {
		kfab_warn(kp, FI_LOG_AV, "fi_av_insert: addr is NULL\n");
		return -FI_EINVAL;
	}

	kfab_lock(&domain->lock);
	ret = av_reserve(av, count);
	if (ret) {
		kfab_unlock(&domain->lock);
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_insert: no room for %zu more address(es)\n",
			  count);
		return ret;
	}
	for (i = 0; i < count; i++) {
		const uint8_t *name = (const uint8_t *)addr + i * av->addrlen;

		if (kp->addr_key(name, &key)) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (sync_err)
				sync_err[i] = FI_EINVAL;
			kfab_warn(kp, FI_LOG_AV,
				  "fi_av_insert: address %zu is not a valid %s name\n",
				  i, kp->name);
			if (event)
				av_event_err(av, context, i, FI_EINVAL,
					     "kfab: malformed address, not inserted");
			continue;
		}
		e = av_slot(av, av->count);
		e->key = key;
		memcpy(e->name, name, av->addrlen);
		ret = kp->av_insert ? kp->av_insert(av, av->count, e) : 0;
		if (ret) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (sync_err)
				sync_err[i] = -ret;
			if (event)
				av_event_err(av, context, i, -ret,
					     "kfab: the provider refused the address, not inserted");
			continue;
		}
		e->valid = true;
		kfab_map_put(&av->keys, key, av->count + 1);
		if (fi_addr)
			fi_addr[i] = av->count;
		if (sync_err)
			sync_err[i] = 0;
		av->count++;
		n++;
	}
	kfab_unlock(&domain->lock);

	if (event) {
		struct fi_eq_entry done = {
			.fid = &av->av_fid.fid,
			.context = context,
			.data = n,
		};

		ret = kfab_eq_post(av->eq, FI_AV_COMPLETE, &done,
				   sizeof(done), NULL);
		return ret;
	}
	return (int)n;
}

/* fi_av_insertsvc() and fi_av_insertsym(): @call is not supported. */
static int av_by_name(struct fid_av *av, const char *call)
{
	kfab_warn(to_av(av)->domain->kp, FI_LOG_AV,
		  "%s: not supported: insert endpoint names\n", call);
	return -FI_ENOSYS;
}

static int av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	(void)node;
	(void)service;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return av_by_name(av, "fi_av_insertsvc");
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)node;
	(void)nodecnt;
	(void)service;
	(void)svccnt;
	(void)fi_addr;
	(void)flags;
	(void)context;
	return av_by_name(av, "fi_av_insertsym");
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	struct kfab_av *av = to_av(av_fid);
	struct kfab_domain *domain = av->domain;
	struct kfab_av_entry *e;
	size_t i;

	if (flags) {
		kfab_warn(domain->kp, FI_LOG_AV,
			  "fi_av_remove: flags must be 0\n");
		return -FI_EBADFLAGS;
	}
	kfab_lock(&domain->lock);
	/* all or nothing: check every address first */
	for (i = 0; i < count; i++) {
		if (!kfab_av_entry(av, fi_addr[i])) {
			kfab_unlock(&domain->lock);
			kfab_warn(domain->kp, FI_LOG_AV,
				  "fi_av_remove: fi_addr %#llx is not in the AV\n",
				  (unsigned long long)fi_addr[i]);
			return -FI_EINVAL;
		}
	}
	for (i = 0; i < count; i++) {
		e = kfab_av_entry(av, fi_addr[i]);
		/* the same address twice in the list */
		if (!e)
			continue;
		e->valid = false;
		kfab_map_del(&av->keys, e->key,
			     (fi_addr[i] & av->idx_mask) + 1);
		if (domain->kp->av_remove)
			domain->kp->av_remove(av, fi_addr[i] & av->idx_mask, e);
	}
	kfab_unlock(&domain->lock);
	return 0;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	struct kfab_av *av = to_av(av_fid);
	struct kfab_domain *domain = av->domain;
	struct kfab_av_entry *e;

	kfab_lock(&domain->lock);
	e = kfab_av_entry(av, fi_addr);
	if (!e) {
		kfab_unlock(&domain->lock);
		kfab_warn(domain->kp, FI_LOG_AV,
			  "fi_av_lookup: fi_addr %#llx is not in the AV\n",
			  (unsigned long long)fi_addr);
		return -FI_EINVAL;
	}
	memcpy(addr, e->name, *addrlen < av->addrlen ? *addrlen : av->addrlen);
	kfab_unlock(&domain->lock);
	*addrlen = av->addrlen;
	return 0;
}

static const char *av_straddr(struct fid_av *av_fid, const void *addr,
			      char *buf, size_t *len)
{
	return to_av(av_fid)->domain->kp->straddr(addr, buf, len);
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context)
{
	(void)attr;
	(void)av_set;
	(void)context;
	kfab_warn(to_av(av)->domain->kp, FI_LOG_AV,
		  "fi_av_set: AV sets (collectives) are not supported\n");
	return -FI_ENOSYS;
}

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};

/* ------------------------------------------------------------------ */
/* fid */

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct kfab_av *av = kfab_container_of(fid, struct kfab_av,
					       av_fid.fid);
	const struct kfab_provider *kp = av->domain->kp;
	struct kfab_eq *eq;

	if (flags || bfid->fclass != FI_CLASS_EQ) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_bind: only an EQ may be bound, with flags 0\n");
		return -FI_EINVAL;
	}
	eq = kfab_container_of(bfid, struct kfab_eq, eq_fid.fid);
	if (av->eq) {
		kfab_warn(kp, FI_LOG_AV, "fi_av_bind: an EQ is bound already\n");
		return -FI_EINVAL;
	}
	kfab_ref_hold(&eq->ref);
	av->eq = eq;
	return 0;
}

static int av_close(struct fid *fid)
{
	struct kfab_av *av = kfab_container_of(fid, struct kfab_av,
					       av_fid.fid);
	struct kfab_domain *domain = av->domain;

	if (kfab_domain_release(domain, &av->ref, FI_LOG_AV, "AV",
				"close the endpoints bound to it first"))
		return -FI_EBUSY;
	for (size_t i = 0; domain->kp->av_remove && i < av->count; i++)
		if (av_slot(av, i)->valid)
			domain->kp->av_remove(av, i, av_slot(av, i));
	kfab_unlock(&domain->lock);
	if (av->eq)
		kfab_ref_put(&av->eq->ref);
	free(av->table);
	kfab_map_fini(&av->keys);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops =
	KFAB_FI_OPS(av_close, av_bind, kfab_no_control, kfab_no_ops_open);

int kfab_av_open(struct fid_domain *domain_fid, struct fi_av_attr *attr,
		 struct fid_av **av_fid, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);
	const struct kfab_provider *kp = domain->kp;
	enum fi_av_type type;
	struct kfab_av *av;
	size_t cap;

	if (!attr) {
		kfab_warn(kp, FI_LOG_AV, "fi_av_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	type = attr->type != FI_AV_UNSPEC ? attr->type :
	       kp->av_only != FI_AV_UNSPEC ? kp->av_only : FI_AV_MAP;
	if (type != FI_AV_MAP && type != FI_AV_TABLE) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: type %d: use FI_AV_MAP or FI_AV_TABLE\n",
			  (int)attr->type);
		return -FI_EINVAL;
	}
	if (kp->av_map_as_table && type == FI_AV_MAP) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: FI_AV_MAP: %s uses FI_AV_TABLE instead\n",
			  kp->name);
		type = FI_AV_TABLE;
	}
	if (kp->av_only != FI_AV_UNSPEC && type != kp->av_only) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: %s: this %s was built for %s only (a build option, see its man page)\n",
			  type == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE",
			  kp->name,
			  kp->av_only == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE");
		return -FI_EINVAL;
	}
	if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC)) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: flags %#llx not supported (shared and read-only AVs neither): use FI_EVENT or 0\n",
			  (unsigned long long)attr->flags);
		return -FI_EBADFLAGS;
	}
	if (attr->name) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: named (shared) AVs are not supported\n");
		return -FI_ENOSYS;
	}
	if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > kp->rx_ctx_bits_max) {
		kfab_warn(kp, FI_LOG_AV,
			  "fi_av_open: rx_ctx_bits %d: %s takes 0 to %d\n",
			  attr->rx_ctx_bits, kp->name, kp->rx_ctx_bits_max);
		return kp->rx_ctx_bits_max ? -FI_EINVAL : -FI_ENOSYS;
	}
	av = calloc(1, sizeof(*av));
	if (!av)
		goto nomem;
	av->addrlen = domain->fabric->addrlen;
	/* entries and their provider data 8-byte aligned */
	av->prov_off = (offsetof(struct kfab_av_entry, name) + av->addrlen +
			7) & ~(size_t)7;
	av->entry_size = (av->prov_off + kp->av_entry_size + 7) & ~(size_t)7;
	cap = attr->count < AV_MIN_CAP ? AV_MIN_CAP :
	      attr->count > AV_MAX_PREALLOC ? AV_MAX_PREALLOC : attr->count;
	av->table = malloc(cap * av->entry_size);
	if (!av->table) {
		free(av);
		goto nomem;
	}
	av->cap = cap;
	av->rx_ctx_bits = attr->rx_ctx_bits;
	av->idx_mask = UINT64_MAX >> attr->rx_ctx_bits;
	av->type = type;
	av->flags = attr->flags;
	av->domain = domain;
	kfab_fid_init(&av->av_fid.fid, FI_CLASS_AV, context, &av_fi_ops);
	av->av_fid.ops = &av_ops;
	attr->type = type;
	kfab_domain_hold(domain);
	*av_fid = &av->av_fid;
	return 0;
nomem:
	kfab_warn(kp, FI_LOG_AV, "fi_av_open: out of memory\n");
	return -FI_ENOMEM;
}
