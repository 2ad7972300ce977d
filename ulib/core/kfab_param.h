/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: reading runtime parameters from the environment, strictly.
 *
 * libfabric's fi_param_get() does not validate what it parses, so every
 * provider variable is read with getenv() and checked here. A variable
 * that is unset or empty takes its default. A bad value is refused with
 * -FI_EINVAL after a warning (through kfab_log(), which the providers
 * route to FI_LOG) naming the variable, the value and what is allowed.
 *
 * Integers are decimal, or hexadecimal with a 0x prefix; no sign, no
 * spaces. Booleans are 0/1, on/off, true/false or yes/no, in any case.
 */
#ifndef KFAB_ULIB_PARAM_H
#define KFAB_ULIB_PARAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

/* Parses a whole string as an integer: 0 or -FI_EINVAL (not logged). */
int kfab_parse_u64(const char *s, uint64_t *val);

/* Parses a boolean: 0 or -FI_EINVAL (not logged). */
int kfab_parse_bool(const char *s, bool *val);

/* $name as an integer in [min, max], else @def when unset. */
int kfab_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max,
		 uint64_t *val);

/* The same for a uint32_t and a size_t. */
int kfab_env_u32(const char *name, uint32_t def, uint32_t min, uint32_t max,
		 uint32_t *val);
int kfab_env_size(const char *name, uint64_t def, uint64_t min, uint64_t max,
		  size_t *val);

/* The first error of a provider's loads: each loads, each warns. */
static inline void kfab_keep_first(int *err, int ret)
{
	if (ret && !*err)
		*err = ret;
}

/* $name as a boolean, else @def when unset. */
int kfab_env_bool(const char *name, bool def, bool *val);

struct kfab_param_def {
	const char *name;
	enum fi_param_type type;
	const char *help;
};

/*
 * A provider's variables FI_<prov's name>_<name>. Only prov's name
 * matters: fi_param_define() names the variables after it, so "opx" for
 * FI_OPX_* where the provider's own "kfab_opx" would give FI_KFAB_OPX_*.
 */
struct kfab_param_table {
	struct fi_provider prov;
	const struct kfab_param_def *defs;
	size_t n;
};

/* The table of FI_<@prefix>_* over the array @array. */
#define KFAB_PARAM_TABLE(prefix, array)					\
	{								\
		.prov = { .name = (prefix) },				\
		.defs = (array),					\
		.n = sizeof(array) / sizeof((array)[0]),		\
	}

/*
 * fi_param_define(), for fi_info -e, of @t's variables, then of
 * FI_KFAB_BACKEND. Each kfab provider defines that one, with the same
 * text: a provider cannot see another's (its own .so) and libfabric 1.17
 * cannot be asked from fi_prov_ini (fi_getparams would re-enter fi_ini),
 * so with both loaded fi_info -e shows it twice.
 */
void kfab_params_define(const struct kfab_param_table *t);

/*
 * Defines @fn, a kfab_provider params_load: a @type allocated and filled
 * by @load(@type *), which returns 0 or -FI_EINVAL (logged).
 */
#define KFAB_DEFINE_PARAMS_LOAD(fn, type, load)			\
int fn(void **params)						\
{								\
	type *p = malloc(sizeof(*p));				\
	int ret;						\
								\
	if (!p)							\
		return -FI_ENOMEM;				\
	ret = load(p);						\
	if (ret) {						\
		free(p);					\
		return ret;					\
	}							\
	*params = p;						\
	return 0;						\
}

#endif /* KFAB_ULIB_PARAM_H */
