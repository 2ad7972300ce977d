/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_efa, the provider's internals over the EFA device layer.
 *
 *   efa_init.c   fi_prov_ini(), the transport
 *   efa_domain.c the domain's parameters and device
 *   efa_dgram.c  the FI_EP_DGRAM endpoint
 *   efa_rdm*.c   the FI_EP_RDM endpoint (efa_rdm.h)
 *   efa_mr.c     memory regions, the registration cache, fork safety,
 *                the domain ops (fi_ext_kfab_efa.h)
 *
 * A domain is one EFA device opened for the domain's lifetime (a
 * protection domain, struct efa_domain); each endpoint creates one QP on
 * it, of the type the domain's name gives.
 *
 * Everything here runs under the domain lock (elided under
 * FI_THREAD_DOMAIN with manual progress, DGRAM's default).
 */
#ifndef KFAB_ULIB_EFA_H
#define KFAB_ULIB_EFA_H

#include "dev/efa_dev.h"
#include "efa_info.h"
#include "efa_param.h"
#include "core/kfab_prov.h"

/* What a domain holds: domain->prov. */
struct efa_domain {
	struct kfab_efa_dev *dev;
	enum fi_ep_type type;		/* of its name: "-rdm" or "-dgrm" */
	uint32_t max_payload;		/* one packet: the device's mtu, or less */
	struct efa_mr_cache *cache;	/* efa_mr_cache_open()'s */
};

static inline struct efa_domain *efa_domain_of(struct kfab_domain *domain)
{
	return domain->prov;
}

/*
 * efa_domain.c, the transport's hooks: kp->params_load (its parameters
 * freed with free()), ->fabric_name, ->domain_unit, ->domain_init,
 * ->domain_fini.
 */
int efa_params_new(void **params);
int efa_fabric_name(const char **name);
int efa_domain_unit(const char *name, unsigned int *unit);
int efa_domain_init(struct kfab_domain *domain);
void efa_domain_fini(struct kfab_domain *domain);

/*
 * An endpoint's QP on the domain's device and its name (efa_addr.c):
 * 0 or -FI_E* (logged).
 */
int efa_qp_open(struct kfab_domain *domain, struct kfab_efa_qp **qp,
		struct efa_addr *name);
/*
 * A data call's lock, the domain's: 0 and held, or -FI_EOPBADSTATE and
 * not held on an endpoint not enabled (*@enabled).
 */
static inline int efa_ep_lock(struct kfab_domain *dom, const bool *enabled)
{
	kfab_lock(&dom->lock);
	if (kfab_likely(*enabled))
		return 0;
	kfab_unlock(&dom->lock);
	return -FI_EOPBADSTATE;
}

/* fi_open_ops() of an RDM or DGRAM endpoint: -FI_ENOSYS, logged. */
int efa_ep_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context);

/* fi_endpoint() of a "-dgrm" domain. */
int efa_dgram_open(struct kfab_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);

/* ------------------------------------------------------------------ */
/* efa_mr.c */

/* A region of kfab_efa: fi_mr_reg()'s, registered with the domain's device. */
struct efa_mr {
	struct kfab_mr core;		/* first: the core allocates mr_size */
	struct kfab_efa_mr dev;
};

/* The transport's hooks: kp->mr_reg, ->mr_dereg, ->domain_ops_open. */
int efa_mr_reg(struct kfab_domain *domain, struct kfab_mr *mr);
void efa_mr_dereg(struct kfab_domain *domain, struct kfab_mr *mr);
int efa_domain_ops_open(struct kfab_domain *domain, const char *name,
			uint64_t flags, void **ops, void *context);

/*
 * The struct kfab_provider fields of kfab_efa's names and fabrics, then
 * those and its domains and regions (the hooks above): all but its
 * endpoints. efa_init.c's, and those of the tests' providers that stand
 * in for kfab_efa.
 */
#define EFA_PROVIDER_NAMES					\
	KFAB_PROVIDER_NAMES(efa, FI_ADDR_EFA, EFA_ADDRLEN),		\
	.av_only = FI_AV_TABLE
#define EFA_PROVIDER_DOMAINS			\
	EFA_PROVIDER_NAMES,			\
	.params_load = efa_params_new,		\
	.params_free = free,			\
	.domain_init = efa_domain_init,		\
	.domain_fini = efa_domain_fini,		\
	.mr_size = sizeof(struct efa_mr),	\
	.mr_reg = efa_mr_reg,			\
	.mr_dereg = efa_mr_dereg,		\
	.domain_ops_open = efa_domain_ops_open

/*
 * The domain's registration cache (ed->cache), from efa_domain_init()
 * once ed->dev is open, and efa_domain_fini() before it closes. 0 or
 * -FI_ENOMEM (logged).
 */
int efa_mr_cache_open(struct kfab_domain *domain);
void efa_mr_cache_close(struct kfab_domain *domain);

struct efa_mr_cache_ent;

/* A registration the data path uses: the application's region or a cached one. */
struct efa_mr_ref {
	const struct kfab_efa_mr *mr;	/* the device's region covering the range */
	struct efa_mr_cache_ent *ent;	/* the cache's, NULL: the application's */
};

/*
 * The device region covering [@addr, @addr + @len) with @access
 * (KFAB_EFA_ACCESS_*): the application's region @desc (a fi_mr_desc() of
 * this domain, or NULL) when it covers the range, has the access and is
 * still valid (kfab_efa_mr_valid()), else a registration of the cache
 * (found, or made now, evicting least-recently-used unused entries past
 * FI_EFA_MR_MAX_CACHED_COUNT / _SIZE). A cached entry that turned stale
 * (kfab_efa_mr_valid() false: its pages were unmapped or remapped) is
 * never returned: it is dropped and the range registered afresh.
 * FI_EFA_MR_CACHE_ENABLE=0: a fresh registration each get, deregistered
 * by put. 0 or -FI_E* (logged). Caller holds the domain lock.
 */
int efa_mr_get(struct kfab_domain *domain, void *desc, void *addr, size_t len,
	       uint32_t access, struct efa_mr_ref *ref);
/* Gives back what efa_mr_get() returned in @ref; domain lock held. */
void efa_mr_put(struct kfab_domain *domain, struct efa_mr_ref *ref);

#endif /* KFAB_ULIB_EFA_H */
