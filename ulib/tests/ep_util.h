/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that open their own endpoints (efa_rdm_node.h,
 * efa_dgram_rank.h) share: the objects of one fi_info, opened and bound.
 */
#ifndef KFAB_ULIB_TESTS_EP_UTIL_H
#define KFAB_ULIB_TESTS_EP_UTIL_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

/*
 * Fabric, domain, AV and CQ of @info, and an endpoint bound to the AV
 * and to the CQ for both directions, not enabled: 0 or the first failing
 * call's -FI_E*. What opened stays open for the caller to close.
 */
static inline int ep_objs_open(struct fi_info *info,
			       struct fi_av_attr *av_attr,
			       struct fi_cq_attr *cq_attr,
			       struct fid_fabric **fabric,
			       struct fid_domain **domain, struct fid_av **av,
			       struct fid_cq **cq, struct fid_ep **ep)
{
	int ret = fi_fabric(info->fabric_attr, fabric, NULL);

	if (!ret)
		ret = fi_domain(*fabric, info, domain, NULL);
	if (!ret)
		ret = fi_av_open(*domain, av_attr, av, NULL);
	if (!ret)
		ret = fi_cq_open(*domain, cq_attr, cq, NULL);
	if (!ret)
		ret = fi_endpoint(*domain, info, ep, NULL);
	if (!ret)
		ret = fi_ep_bind(*ep, &(*av)->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, &(*cq)->fid, FI_TRANSMIT | FI_RECV);
	return ret;
}

#endif /* KFAB_ULIB_TESTS_EP_UTIL_H */
