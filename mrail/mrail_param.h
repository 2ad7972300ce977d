/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_mrail: the runtime parameters of fi_mrail(7), under its names.
 *
 * FI_OFI_MRAIL_ADDR (FI_OFI_MRAIL_ADDR_STRC, deprecated, is read with a
 * warning when ADDR is unset or empty, and ignored with a warning when
 * both are set): 1..MRAIL_MAX_RAILS rail addresses separated by commas,
 * each 1..MRAIL_ADDR_MAX characters, no spaces, none twice. What an
 * address names is mrail_rail.c's business. Unset: no rails, which
 * mrail_rails_getinfo() reports as -FI_ENODATA.
 *
 * FI_OFI_MRAIL_CONFIG: 1..MRAIL_MAX_CONFIG pairs <max_size>:<policy>
 * separated by commas, max_size strictly ascending, the last one
 * ULONG_MAX: a message of n bytes takes the policy of the first pair
 * with n <= max_size. max_size is -1 or ULONG_MAX (in any case) for
 * ULONG_MAX, or a number as strtoul(3) reads it in base 0 (decimal, 0x
 * hex, 0 octal, as the anchor does), the whole item, no sign, no spaces.
 * Policies fixed, round-robin and striping, in any case. Default
 * 16384:fixed,ULONG_MAX:striping.
 *
 * The fixed policy's rail is the local rank modulo the number of rails:
 * OMPI_COMM_WORLD_LOCAL_RANK, else MPI_LOCALRANKID, else 0 (kfab_param.h's
 * integers).
 *
 * Every malformed value fails mrail_params_load() with -FI_EINVAL after
 * a warning naming the variable, the value, what is wrong and what to do.
 */
#ifndef KFAB_MRAIL_PARAM_H
#define KFAB_MRAIL_PARAM_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "core/kfab_param.h"

#define MRAIL_MAX_RAILS		8
#define MRAIL_ADDR_MAX		255	/* a host name's 253 and some */
#define MRAIL_MAX_CONFIG	8	/* the anchor's */

_Static_assert(SIZE_MAX == ULONG_MAX, "max_size is an unsigned long");

enum mrail_policy {
	MRAIL_POLICY_FIXED,
	MRAIL_POLICY_ROUND_ROBIN,
	MRAIL_POLICY_STRIPING,
};

struct mrail_config {
	size_t max_size;
	enum mrail_policy policy;
};

struct mrail_params {
	/* the rail addresses as given, into one allocation, addr[0] */
	char *addr[MRAIL_MAX_RAILS];
	size_t naddr;
	struct mrail_config config[MRAIL_MAX_CONFIG];
	size_t nconfig;
	uint32_t local_rank;
	size_t fixed_rail;		/* local_rank % naddr; 0 without rails */
};

/* FI_OFI_MRAIL_*, for fi_info -e: defined once, by fi_prov_ini(). */
extern const struct kfab_param_table mrail_param_table;

/* Reads and validates them: 0 or -FI_EINVAL (logged). */
int mrail_params_load(struct mrail_params *p);

/* What a load holds; @p may then be loaded again. */
void mrail_params_free(struct mrail_params *p);

/* The policy of a message of @size bytes. */
enum mrail_policy mrail_policy_for(const struct mrail_params *p, size_t size);

/* "fixed", "round-robin", "striping" */
const char *mrail_policy_name(enum mrail_policy policy);

#endif /* KFAB_MRAIL_PARAM_H */
