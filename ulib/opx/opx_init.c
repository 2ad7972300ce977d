// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: fi_prov_ini() of kfab_opx: the transport it plugs into the core
 * objects, handed to kfab_prov_ini().
 */
#include <stdlib.h>

#include "opx.h"
#include "opx_info.h"

static struct fi_provider opx_prov;

static KFAB_DEFINE_PARAMS_LOAD(opx_params_new, struct opx_params,
			       opx_params_load)

static void opx_params_free(void *params)
{
	opx_params_fini(params);
	free(params);
}

static const struct kfab_provider opx_provider = {
	.name = "kfab_opx",
	.prov = &opx_prov,
	OPX_PROVIDER_NAMES,
	.av_only = OPX_AV_ONLY,
	.ep_open = opx_ep_open,
	.sep_open = opx_sep_open,
	.rx_ctx_bits_max = OPX_RX_CTX_BITS_MAX,
	.params_load = opx_params_new,
	.params_free = opx_params_free,
	.param_table = &opx_param_table,
	.atomic_max = OPX_ATOMIC_MAX,
};

FI_EXT_INI
{
	return kfab_prov_ini(&opx_provider, opx_getinfo);
}
