// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the domain object. A domain is one device of the fabric's
 * backend (the unit the provider's domain_unit() reads in its name), with the provider's validated runtime parameters and
 * per-domain state, the lock its objects share, and the memory regions
 * registered in it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_atomic.h"
#include "kfab_prov.h"

/* Highest unit number a domain name may carry. */
#define KFAB_UNIT_MAX	1023

void kfab_domain_hold(struct kfab_domain *domain)
{
	kfab_lock(&domain->lock);
	domain->ref++;
	kfab_unlock(&domain->lock);
}

int kfab_domain_release(struct kfab_domain *domain, const int *ref,
			enum fi_log_subsys subsys, const char *what,
			const char *fix)
{
	int ret;

	kfab_lock(&domain->lock);
	ret = kfab_close_busy(domain->kp, subsys, *ref, what, fix);
	if (ret)
		kfab_unlock(&domain->lock);
	else
		domain->ref--;
	return ret;
}

static int domain_close(struct fid *fid)
{
	struct kfab_domain *domain =
		kfab_container_of(fid, struct kfab_domain, domain_fid.fid);
	int ret;

	kfab_lock(&domain->lock);
	ret = kfab_close_busy(domain->kp, FI_LOG_DOMAIN, domain->ref,
			      "domain",
			      "close its AVs, CQs, counters, poll sets, endpoints and MRs first");
	kfab_unlock(&domain->lock);
	if (ret)
		return ret;
	if (domain->kp->domain_fini)
		domain->kp->domain_fini(domain);
	if (domain->params)
		domain->kp->params_free(domain->params);
	fi_freeinfo(domain->info);
	kfab_map_fini(&domain->mrs);
	kfab_lock_destroy(&domain->lock);
	kfab_ref_put(&domain->fabric->ref);
	free(domain);
	return 0;
}

static int domain_endpoint(struct fid_domain *domain_fid, struct fi_info *info,
			   struct fid_ep **ep, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);

	return domain->kp->ep_open(domain_fid, info, ep, context);
}

static int domain_endpoint2(struct fid_domain *domain_fid,
			    struct fi_info *info, struct fid_ep **ep,
			    uint64_t flags, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);

	if (flags) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_endpoint2: flags %#llx are not supported: use 0\n",
			  (unsigned long long)flags);
		return -FI_ENOSYS;
	}
	return domain->kp->ep_open(domain_fid, info, ep, context);
}

/* Objects a provider may lack: scalable endpoints, shared contexts. */

static int domain_nosys(struct fid_domain *domain_fid, const char *what)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);

	kfab_warn(domain->kp, FI_LOG_DOMAIN, "%s: not supported yet\n", what);
	return -FI_ENOSYS;
}

static int domain_scalable_ep(struct fid_domain *domain_fid,
			      struct fi_info *info, struct fid_ep **sep,
			      void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);

	if (!domain->kp->sep_open)
		return domain_nosys(domain_fid, "fi_scalable_ep");
	return domain->kp->sep_open(domain_fid, info, sep, context);
}

static int domain_query_atomic(struct fid_domain *domain,
			       enum fi_datatype datatype, enum fi_op op,
			       struct fi_atomic_attr *attr, uint64_t flags)
{
	struct kfab_domain *d = kfab_domain_of(domain);

	if (!d->kp->atomic_max)
		return domain_nosys(domain, "fi_query_atomic (atomics)");
	return kfab_atomic_query(datatype, op, attr, flags, d->kp->atomic_max);
}

/* Refusals whose arguments do not matter. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int domain_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			  struct fid_stx **stx, void *context)
{
	return domain_nosys(domain, "fi_stx_context (shared contexts)");
}

static int domain_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context)
{
	return domain_nosys(domain, "fi_srx_context (shared contexts)");
}

static int domain_query_collective(struct fid_domain *domain,
				   enum fi_collective_op coll,
				   struct fi_collective_attr *attr,
				   uint64_t flags)
{
	return domain_nosys(domain, "fi_query_collective (collectives)");
}

#pragma GCC diagnostic pop

static int domain_ops_open(struct fid *fid, const char *name, uint64_t flags,
			   void **ops, void *context)
{
	struct kfab_domain *domain =
		kfab_container_of(fid, struct kfab_domain, domain_fid.fid);

	if (!domain->kp->domain_ops_open)
		return kfab_no_ops_open(fid, name, flags, ops, context);
	return domain->kp->domain_ops_open(domain, name, flags, ops, context);
}

static struct fi_ops domain_fi_ops =
	KFAB_FI_OPS(domain_close, kfab_no_bind, kfab_no_control, domain_ops_open);

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = kfab_av_open,
	.cq_open = kfab_cq_open,
	.endpoint = domain_endpoint,
	.scalable_ep = domain_scalable_ep,
	.cntr_open = kfab_cntr_open,
	.poll_open = kfab_poll_open,
	.stx_ctx = domain_stx_ctx,
	.srx_ctx = domain_srx_ctx,
	.query_atomic = domain_query_atomic,
	.query_collective = domain_query_collective,
	.endpoint2 = domain_endpoint2,
};

/*
 * fi_mr(3)'s legacy values (API 1.4's enum, alone from 1.5 on) take bits 0
 * and 1, which no mr_mode bit of 1.5 uses.
 */
static int domain_mr_mode(int mr_mode)
{
	if (mr_mode & FI_MR_BASIC)
		mr_mode |= FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

int kfab_domain_open(struct fid_fabric *fabric_fid, struct fi_info *info,
		     struct fid_domain **domain_fid, void *context)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fabric_fid, struct kfab_fabric, fabric_fid);
	const struct kfab_provider *kp = fabric->kp;
	struct fi_domain_attr *attr = info ? info->domain_attr : NULL;
	struct kfab_domain *domain;
	unsigned int unit;
	int ret;

	if (!attr || !attr->name || kp->domain_unit(attr->name, &unit)) {
		kfab_warn(kp, FI_LOG_DOMAIN,
			  "fi_domain: %s is not a domain of %s: pass an fi_info that fi_getinfo() returned\n",
			  attr && attr->name ? attr->name : "(none)", kp->name);
		return -FI_EINVAL;
	}
	domain = calloc(1, sizeof(*domain));
	if (!domain)
		goto nomem;
	domain->info = fi_dupinfo(info);
	if (!domain->info) {
		free(domain);
		goto nomem;
	}
	if (kp->params_load) {
		ret = kp->params_load(&domain->params);
		if (ret) {
			fi_freeinfo(domain->info);
			free(domain);
			return ret;
		}
	}
	domain->name = domain->info->domain_attr->name;
	domain->mr_mode = domain_mr_mode(domain->info->domain_attr->mr_mode);
	domain->unit = unit;
	domain->kp = kp;
	if (kp->domain_init) {
		ret = kp->domain_init(domain);
		if (ret) {
			if (domain->params)
				kp->params_free(domain->params);
			fi_freeinfo(domain->info);
			free(domain);
			return ret;
		}
	}
	kfab_fid_init(&domain->domain_fid.fid, FI_CLASS_DOMAIN, context,
		      &domain_fi_ops);
	domain->domain_fid.ops = &domain_ops;
	domain->domain_fid.mr = &kfab_mr_ops;
	domain->fabric = fabric;
	domain->threading = attr->threading == FI_THREAD_UNSPEC ?
			    FI_THREAD_SAFE : attr->threading;
	domain->data_progress = attr->data_progress == FI_PROGRESS_AUTO ?
				FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
	/* progress threads share the domain with the application */
	kfab_lock_init(&domain->lock,
		       domain->threading != FI_THREAD_DOMAIN ||
		       domain->data_progress == FI_PROGRESS_AUTO);
	kfab_ref_hold(&fabric->ref);
	kfab_info(kp, FI_LOG_DOMAIN, "domain %s open, %s progress, %s lock\n",
		  domain->name,
		  domain->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual",
		  domain->lock.on ? "with a" :
		  "without (FI_THREAD_DOMAIN, manual progress)");
	*domain_fid = &domain->domain_fid;
	return 0;
nomem:
	kfab_warn(kp, FI_LOG_DOMAIN, "fi_domain: out of memory\n");
	return -FI_ENOMEM;
}
