// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: fi_prov_ini() of kfab_opx: the provider libfabric loads, the
 * transport it plugs into the core objects, and libkfab's log routed
 * through FI_LOG.
 */
#include <stdio.h>
#include <stdlib.h>

#include "opx.h"
#include "opx_info.h"

static struct fi_provider opx_prov;

static void opx_log_sink(enum kfab_log_level level, const char *msg)
{
	enum fi_log_level l = level <= KFAB_LOG_WARN ? FI_LOG_WARN :
			      level == KFAB_LOG_INFO ? FI_LOG_INFO :
						       FI_LOG_DEBUG;

	if (fi_log_enabled(&opx_prov, l, FI_LOG_CORE))
		fi_log(&opx_prov, l, FI_LOG_CORE, "kfab", 0, "%s\n", msg);
	else if (level == KFAB_LOG_ERR)
		fprintf(stderr, "kfab: %s\n", msg);
}

static int opx_params_new(void **params)
{
	struct opx_params *p = malloc(sizeof(*p));
	int ret;

	if (!p)
		return -FI_ENOMEM;
	ret = opx_params_load(p);
	if (ret) {
		free(p);
		return ret;
	}
	*params = p;
	return 0;
}

static void opx_params_free(void *params)
{
	opx_params_fini(params);
	free(params);
}

static const struct kfab_provider opx_provider = {
	.name = "kfab_opx",
	.prov = &opx_prov,
	.addr_format = FI_ADDR_OPX,
	.addrlen = OPX_ADDRLEN,
	.av_only = OPX_AV_ONLY,
	.addr_key = opx_addr_key,
	.straddr = opx_straddr,
	.ep_open = opx_ep_open,
	.sep_open = opx_sep_open,
	.rx_ctx_bits_max = OPX_RX_CTX_BITS_MAX,
	.params_load = opx_params_new,
	.params_free = opx_params_free,
	.fabric_name = opx_fabric_name,
	.domain_unit = opx_domain_unit,
	.atomic_max = OPX_ATOMIC_MAX,
};

static int opx_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	return kfab_fabric_open(&opx_provider, attr, fabric, context);
}

/* libfabric unloads us next: the sink must not outlive the library. */
static void opx_cleanup(void)
{
	kfab_log_set(NULL);
}

static struct fi_provider opx_prov = {
	.version = KFAB_PROV_VERSION,
	.fi_version = KFAB_FI_VERSION,
	.name = "kfab_opx",
	.getinfo = opx_getinfo,
	.fabric = opx_fabric,
	.cleanup = opx_cleanup,
};

FI_EXT_INI
{
	kfab_log_set(opx_log_sink);
	opx_params_define();
	return &opx_prov;
}
