// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: fi_prov_ini() of kfab_efa: the transport it plugs into the core
 * objects (its domains are efa_domain.c's), handed to kfab_prov_ini().
 */
#include "efa/rdm/efa_rdm.h"

static struct fi_provider efa_prov;

static int efa_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		       struct fid_ep **ep, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);
	struct efa_domain *ed = efa_domain_of(domain);
	enum fi_ep_type type = info && info->ep_attr ? info->ep_attr->type :
						       FI_EP_UNSPEC;

	if (type == FI_EP_UNSPEC)
		type = ed->type;
	if (type != ed->type) {
		kfab_warn(domain->kp, FI_LOG_EP_CTRL,
			  "fi_endpoint: endpoint type %d on domain %s: FI_EP_RDM endpoints open on efa<N>-rdm domains, FI_EP_DGRAM ones on efa<N>-dgrm\n",
			  (int)type, domain->name);
		return -FI_EINVAL;
	}
	if (type == FI_EP_RDM)
		return efa_rdm_open(domain, info, ep, context);
	return efa_dgram_open(domain, info, ep, context);
}

static const struct kfab_provider efa_provider = {
	.name = "kfab_efa",
	.prov = &efa_prov,
	EFA_PROVIDER_DOMAINS,
	.av_map_as_table = true,
	.ep_open = efa_ep_open,
	.param_table = &efa_param_table,
	.atomic_max = EFA_RDM_ATOMIC_MAX,
};

FI_EXT_INI
{
	return kfab_prov_ini(&efa_provider, efa_getinfo);
}
