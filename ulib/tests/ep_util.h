/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that open their own endpoints (efa_rdm_node.h,
 * efa_dgram_rank.h) share: the objects of one fi_info, opened and bound,
 * and closed.
 */
#ifndef KFAB_ULIB_TESTS_EP_UTIL_H
#define KFAB_ULIB_TESTS_EP_UTIL_H

#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "tap.h"

/* The objects of one endpoint of the tests: each NULL until opened. */
struct ep_objs {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

/* ep_objs_close()'s bits: the objects whose fi_close() failed */
enum {
	EP_OBJ_EP = 1 << 0,
	EP_OBJ_CQ = 1 << 1,
	EP_OBJ_AV = 1 << 2,
	EP_OBJ_DOMAIN = 1 << 3,
	EP_OBJ_FABRIC = 1 << 4,
};

/*
 * Fabric, domain, AV and CQ of @o->info, and an endpoint bound to the AV
 * and to the CQ for both directions, not enabled: 0 or the first failing
 * call's -FI_E*. What opened stays open for ep_objs_close().
 */
static inline int ep_objs_open(struct ep_objs *o, struct fi_av_attr *av_attr,
			       struct fi_cq_attr *cq_attr)
{
	int ret = fi_fabric(o->info->fabric_attr, &o->fabric, NULL);

	if (!ret)
		ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	if (!ret)
		ret = fi_av_open(o->domain, av_attr, &o->av, NULL);
	if (!ret)
		ret = fi_cq_open(o->domain, cq_attr, &o->cq, NULL);
	if (!ret)
		ret = fi_endpoint(o->domain, o->info, &o->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(o->ep, &o->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV);
	return ret;
}

/*
 * fi_close() of each object open, the endpoint first and the fabric last,
 * and the fi_info freed; all NULL again. The EP_OBJ_* of those whose
 * fi_close() failed, each told in a diagnostic.
 */
static inline unsigned int ep_objs_close(struct ep_objs *o)
{
	struct fid *fids[] = {
		o->ep ? &o->ep->fid : NULL,
		o->cq ? &o->cq->fid : NULL,
		o->av ? &o->av->fid : NULL,
		o->domain ? &o->domain->fid : NULL,
		o->fabric ? &o->fabric->fid : NULL,
	};
	static const char *const names[] = {
		"ep", "cq", "av", "domain", "fabric",
	};
	unsigned int failed = 0;

	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		int ret = fids[i] ? fi_close(fids[i]) : 0;

		if (ret) {
			tap_diag("fi_close(%s): %s", names[i],
				 fi_strerror(-ret));
			failed |= 1u << i;
		}
	}
	fi_freeinfo(o->info);
	memset(o, 0, sizeof(*o));
	return failed;
}

#endif /* KFAB_ULIB_TESTS_EP_UTIL_H */
