/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_opx as libfabric sees it before an endpoint exists: its
 * endpoint names (FI_ADDR_OPX), the HFI units of a backend, fi_getinfo().
 *
 *   opx_addr.c   endpoint names: key, text form, parsing
 *   opx_attr.c   units and fi_getinfo(): the attributes we advertise
 *   opx_init.c   fi_prov_ini(): the provider and its transport
 *
 * An endpoint name is 8 bytes, a little-endian uint64_t: bits 0-15 the
 * LID of the unit, 16-31 the context number, 32-63 the endpoint's session
 * (opx_proto.h: opx_name()). LID 0 is not a name. Its text form is
 * "fi_addr_opx://<lid>.<ctxt>.0x<session in hex>"; getinfo's node takes
 * that, or fi_tostr()'s "fi_addr_opx://<the name as 16 hex digits>".
 */
#ifndef KFAB_ULIB_OPX_INFO_H
#define KFAB_ULIB_OPX_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "core/kfab_prov.h"
#include "opx_param.h"

/*
 * The build option OPX_AV of fi_opx(7) (ulib/ulib.mk): "table" or "map"
 * builds a provider with that one AV type, "runtime" (the default) one
 * that takes either, FI_AV_MAP unless asked.
 */
#if defined(KFAB_OPX_AV_TABLE)
#define OPX_AV_ONLY		FI_AV_TABLE
#elif defined(KFAB_OPX_AV_MAP)
#define OPX_AV_ONLY		FI_AV_MAP
#else
#define OPX_AV_ONLY		FI_AV_UNSPEC
#endif
#define OPX_AV_DEFAULT		(OPX_AV_ONLY == FI_AV_UNSPEC ? FI_AV_MAP : \
				 OPX_AV_ONLY)

/* Transmit and receive contexts of a scalable endpoint, at most. */
#define OPX_SEP_CTX_MAX		32
/* The most rx_ctx_bits an AV takes: the rx index is a byte on the wire. */
#define OPX_RX_CTX_BITS_MAX	8

#define OPX_ADDRLEN		8
#define OPX_ADDR_PREFIX		"fi_addr_opx://"

/* kp->addr_key: the (LID, context) of a name; -FI_EINVAL for LID 0. */
int opx_addr_key(const void *name, uint64_t *key);

/* kp->straddr: the text form into @buf of *@len bytes (needed: *@len). */
const char *opx_straddr(const void *name, char *buf, size_t *len);

/* The name of a text form, 0 or -FI_EINVAL (not logged). */
int opx_addr_parse(const char *s, uint8_t name[OPX_ADDRLEN]);

/* One HFI unit as getinfo sees it. */
struct opx_unit_info {
	struct opx_unit u;	/* unit, active, numa_node */
	uint32_t lid;
	uint32_t nctxts;
};

/* At most this many units are listed. */
#define OPX_MAX_UNITS		64

/*
 * The units of @backend, by unit number: kmod, each /dev/kfab_hfi<N>
 * that opens; shm, units 0 .. $KFAB_SHM_UNITS - 1 (1..8, default 2),
 * all Active. The count, or -FI_EINVAL for a bad KFAB_SHM_UNITS.
 */
int opx_units_get(enum kfab_backend backend, struct opx_unit_info *units,
		  int max);

/* fi_provider.getinfo of kfab_opx. */
/*
 * The core's fabric_name() (from FI_KFAB_BACKEND) and domain_unit()
 * ("hfi<N>", N below OPX_MAX_UNITS), see struct kfab_provider.
 */
int opx_fabric_name(const char **name);
int opx_domain_unit(const char *name, unsigned int *unit);

int opx_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);

/*
 * The struct kfab_provider fields of kfab_opx's names, fabrics and
 * domains: opx_init.c's, and the core tests' providers, which name peers
 * and devices as kfab_opx does.
 */
#define OPX_PROVIDER_NAMES \
	KFAB_PROVIDER_NAMES(opx, FI_ADDR_OPX, OPX_ADDRLEN)

#endif /* KFAB_ULIB_OPX_INFO_H */
