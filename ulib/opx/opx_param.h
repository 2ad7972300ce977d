/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the runtime parameters of kfab_opx, fi_opx(7)'s FI_OPX_* under
 * their documented names, defaults and ranges, plus FI_KFAB_BACKEND.
 *
 * opx_params_load() reads and validates every variable; a bad value fails
 * it with -FI_EINVAL after a warning that names the variable, the value
 * and what is allowed. fi_getinfo() and fi_domain() both load them.
 */
#ifndef KFAB_ULIB_OPX_PARAM_H
#define KFAB_ULIB_OPX_PARAM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/kfab_param.h"
#include "dev/hfi_dev.h"

struct opx_params {
	uint8_t uuid[16];			/* FI_OPX_UUID */
	bool force_cpuaffinity;			/* FI_OPX_FORCE_CPUAFFINITY */
	uint32_t reliability_usec_max;		/* ..._SERVICE_USEC_MAX, 500 */
	uint32_t pre_ack_rate;			/* ..._PRE_ACK_RATE, 64 */
	bool selinux;				/* FI_OPX_SELINUX */
	char *hfi_select;			/* FI_OPX_HFI_SELECT or NULL */
	uint64_t sdma_bounce_buf_threshold;	/* 16385 */
	bool sdma_disable;			/* FI_OPX_SDMA_DISABLE */
	uint64_t sdma_min_payload_bytes;	/* 16385 */
	uint64_t rzv_min_payload_bytes;		/* 16385 */
	bool mp_eager_disable;			/* FI_OPX_MP_EAGER_DISABLE */
	bool expected_receive_enable;		/* ours defaults to on */
	bool prog_affinity_set;			/* FI_OPX_PROG_AFFINITY */
	uint32_t prog_affinity_start;
	uint32_t prog_affinity_end;
	uint32_t prog_affinity_stride;
	uint32_t auto_progress_interval_usec;	/* 1 */
	uint16_t pkey;				/* FI_OPX_PKEY, 0x8001 */
	uint8_t sl;				/* FI_OPX_SL, 0 */
	uint32_t dev_reg_send_threshold;	/* no effect here */
	uint32_t dev_reg_recv_threshold;	/* no effect here */
	enum kfab_backend backend;		/* FI_KFAB_BACKEND */
};

/* The variables, for fi_info -e: defined once, by fi_prov_ini(). */
extern const struct kfab_param_table opx_param_table;

/*
 * Reads and validates them: 0 or -FI_EINVAL (logged). hfi_select is a
 * copy: release it with opx_params_fini() after a successful load.
 */
int opx_params_load(struct opx_params *p);
void opx_params_fini(struct opx_params *p);

/* One HFI unit as seen by unit selection. */
struct opx_unit {
	unsigned int unit;
	bool active;
	int numa_node;		/* -1: none */
};

/*
 * FI_OPX_HFI_SELECT: the unit the calling thread opens a context on,
 * given the units present. @spec NULL means "default". 0 with *@unit set,
 * or -FI_EINVAL (malformed; a NUMA range past numa_max_node() or a core
 * range past the last CPU), -FI_ENODEV (no selector matched, unit out of
 * range or not Active), each logged with the reason.
 */
int opx_hfi_select(const char *spec, const struct opx_unit *units, int n,
		   unsigned int *unit);

#endif /* KFAB_ULIB_OPX_PARAM_H */
