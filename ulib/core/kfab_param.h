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
#include <stdint.h>

/* Parses a whole string as an integer: 0 or -FI_EINVAL (not logged). */
int kfab_parse_u64(const char *s, uint64_t *val);

/* Parses a boolean: 0 or -FI_EINVAL (not logged). */
int kfab_parse_bool(const char *s, bool *val);

/* $name as an integer in [min, max], else @def when unset. */
int kfab_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max,
		 uint64_t *val);

/* $name as a boolean, else @def when unset. */
int kfab_env_bool(const char *name, bool def, bool *val);

/*
 * fi_param_define() of FI_KFAB_BACKEND, for fi_info -e. Each kfab provider
 * defines it, with the same text: a provider cannot see another's (its own
 * .so) and libfabric 1.17 cannot be asked from fi_prov_ini (fi_getparams
 * would re-enter fi_ini), so with both loaded fi_info -e shows it twice.
 */
void kfab_params_define(void);

#endif /* KFAB_ULIB_PARAM_H */
