// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: kfab_efa's domains: the parameters each holds, the fabric and
 * device its name gives, the device opened for its lifetime with its
 * registration cache. The transport's hooks, efa_init.c's and the tests'.
 */
#include <stdlib.h>
#include <string.h>

#include "efa.h"

KFAB_DEFINE_PARAMS_LOAD(efa_params_new, struct efa_params, efa_params_load)

/* The backend efa_getinfo() named the fabric after. */
int efa_fabric_name(const char **name)
{
	struct efa_params p;
	int ret = efa_params_load(&p);

	if (ret)
		return ret;
	*name = kfab_backend_fabric_name(p.backend);
	return 0;
}

int efa_domain_unit(const char *name, unsigned int *unit)
{
	enum fi_ep_type type;

	return efa_domain_parse(name, unit, &type);
}

int efa_domain_init(struct kfab_domain *domain)
{
	const struct efa_params *p = domain->params;
	struct efa_domain *ed = calloc(1, sizeof(*ed));
	int ret;

	if (!ed) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN, "fi_domain: out of memory\n");
		return -FI_ENOMEM;
	}
	efa_domain_parse(domain->name, &domain->unit, &ed->type);
	ret = kfab_efa_open(p->backend, domain->unit, &ed->dev);
	if (ret) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_domain %s: cannot open device efa%u: %s (FI_KFAB_BACKEND, FI_EFA_IFACE)\n",
			  domain->name, domain->unit, strerror(-ret));
		free(ed);
		return ret == -ENOENT || ret == -ENODEV ? -FI_ENODEV : -FI_EIO;
	}
	ed->max_payload = ed->dev->info.mtu;
	if (p->mtu_size && p->mtu_size < ed->max_payload)
		ed->max_payload = (uint32_t)p->mtu_size;
	domain->prov = ed;
	ret = efa_mr_cache_open(domain);
	if (ret) {
		domain->prov = NULL;
		kfab_efa_close(ed->dev);
		free(ed);
		return ret;
	}
	kfab_info(domain->kp, FI_LOG_DOMAIN,
		  "domain %s: device efa%u on the %s backend, mtu %u\n",
		  domain->name, domain->unit, ed->dev->ops->name,
		  ed->max_payload);
	return 0;
}

void efa_domain_fini(struct kfab_domain *domain)
{
	struct efa_domain *ed = domain->prov;

	efa_mr_cache_close(domain);
	kfab_efa_close(ed->dev);
	free(ed);
}
