/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of the provider core without an endpoint (core_test,
 * core_av_test, core_cq_test) share: a test transport with kfab_opx's
 * names, and the fabric and domain they open through it.
 */
#ifndef KFAB_ULIB_CORE_TRANSPORT_H
#define KFAB_ULIB_CORE_TRANSPORT_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/kfab_map.h"
#include "core/kfab_pool.h"
#include "core/kfab_prov.h"
#include "opx/opx_info.h"
#include "opx/opx_proto.h"
#include "tests/tap.h"
#include "tests/test_prov.h"

/* ------------------------------------------------------------------ */
/* the test transport */

static struct fi_provider test_prov = TEST_FI_PROVIDER("kfab_test");

static int ep_opens;
static int params_loaded, params_freed, params_fail;

static inline int test_ep_open(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **ep, void *context)
{
	ep_opens++;
	return test_ep_nosys(domain, info, ep, context);
}

static inline int test_params_load(void **params)
{
	if (params_fail)
		return -FI_EINVAL;
	params_loaded++;
	*params = malloc(16);
	return *params ? 0 : -FI_ENOMEM;
}

static inline void test_params_free(void *params)
{
	params_freed++;
	free(params);
}

static const struct kfab_provider kp = {
	.name = "kfab_test",
	.prov = &test_prov,
	OPX_PROVIDER_NAMES,
	.ep_open = test_ep_open,
	.rx_ctx_bits_max = 4,
	.params_load = test_params_load,
	.params_free = test_params_free,
};

static inline uint64_t name(uint16_t lid, uint16_t ctxt, uint32_t session)
{
	return opx_name(lid, ctxt, session);
}

/* kfab-shm's fabric attributes at API version @v */
#define SHM_FABRIC_ATTR(v)	{ .name = "kfab-shm", .api_version = (v) }

static struct fid_fabric *fabric;
static struct fid_domain *domain;

static inline struct kfab_domain *to_dom(struct fid_domain *d)
{
	return kfab_container_of(d, struct kfab_domain, domain_fid);
}

static inline int domain_open(const char *dname, enum fi_threading threading,
			      struct fid_domain **d)
{
	struct fi_info *info = fi_allocinfo();
	int ret;

	info->domain_attr->name = dname ? strdup(dname) : NULL;
	info->domain_attr->threading = threading;
	ret = fi_domain(fabric, info, d, NULL);
	fi_freeinfo(info);
	return ret;
}

typedef void (*core_case_fn)(void);

/*
 * The program @name: @cases in order, on the fabric kfab-shm and the
 * domain hfi0 (FI_THREAD_UNSPEC), opened first when @open, else by a
 * case; both closed at the end.
 */
static inline int core_main(const char *name, const core_case_fn *cases,
			    size_t ncases, bool open)
{
	struct fi_fabric_attr attr = SHM_FABRIC_ATTR(FI_VERSION(1, 17));

	tap_start(name);
	if (open) {
		setenv("FI_KFAB_BACKEND", "shm", 1);
		if (!TAP_EQ(kfab_fabric_open(&kp, &attr, &fabric, NULL), 0,
			    "fabric kfab-shm opens") ||
		    !TAP_EQ(domain_open("hfi0", FI_THREAD_UNSPEC, &domain), 0,
			    "domain hfi0"))
			return tap_done();
	}
	for (size_t i = 0; i < ncases; i++)
		cases[i]();
	TAP_EQ(fi_close(&domain->fid), 0, "domain closes");
	TAP_EQ(fi_close(&fabric->fid), 0, "fabric closes");
	return tap_done();
}

#endif /* KFAB_ULIB_CORE_TRANSPORT_H */
