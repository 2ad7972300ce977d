/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests that run the core objects under a provider of their own
 * (the core_*test programs, rxq_test, efa_mr_test) give it: the struct
 * fi_provider its log goes through, and an fi_endpoint() that opens
 * nothing.
 */
#ifndef KFAB_ULIB_TESTS_TEST_PROV_H
#define KFAB_ULIB_TESTS_TEST_PROV_H

#include "core/kfab_prov.h"

#define TEST_FI_PROVIDER(prov_name) {		\
	.version = KFAB_PROV_VERSION,		\
	.fi_version = KFAB_FI_VERSION,		\
	.name = (prov_name),			\
}

static inline int test_ep_nosys(struct fid_domain *domain,
				struct fi_info *info, struct fid_ep **ep,
				void *context)
{
	(void)domain;
	(void)info;
	(void)ep;
	(void)context;
	return -FI_ENOSYS;
}

#endif /* KFAB_ULIB_TESTS_TEST_PROV_H */
