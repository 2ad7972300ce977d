/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_efa, the provider's internals over the EFA device layer.
 *
 *   efa_init.c   fi_prov_ini(), the transport, the domain's device
 *   efa_dgram.c  the FI_EP_DGRAM endpoint
 *
 * A domain is one EFA device opened for the domain's lifetime (a
 * protection domain, struct efa_domain); each endpoint creates one QP on
 * it. FI_EP_RDM endpoints are not written yet: fi_endpoint() refuses them
 * and efa_getinfo() does not list them.
 *
 * Everything here runs under the domain lock (elided under
 * FI_THREAD_DOMAIN with manual progress, DGRAM's default).
 */
#ifndef KFAB_ULIB_EFA_H
#define KFAB_ULIB_EFA_H

#include "efa_dev.h"
#include "efa_info.h"
#include "efa_param.h"
#include "kfab_prov.h"

/* What a domain holds: domain->prov. */
struct efa_domain {
	struct kfab_efa_dev *dev;
	enum fi_ep_type type;		/* of its name: "-rdm" or "-dgrm" */
	uint32_t max_payload;		/* one packet: the device's mtu, or less */
};

static inline struct efa_domain *efa_domain_of(struct kfab_domain *domain)
{
	return domain->prov;
}

/* fi_endpoint() of a "-dgrm" domain. */
int efa_dgram_open(struct kfab_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);

#endif /* KFAB_ULIB_EFA_H */
