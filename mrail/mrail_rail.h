/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_mrail: rail discovery, one fi_info of the core provider per
 * address of FI_OFI_MRAIL_ADDR, through the public fi_getinfo().
 *
 * An address is, tried in this order:
 *   - an FI_ADDR_STR address fi_sockaddr_in://A.B.C.D[:port] or
 *     fi_sockaddr_in6://[addr][:port]: an IP rail;
 *   - hfi<N>: unit N of kfab_opx (its domain "hfi<N>"), efa<N>: device N
 *     of kfab_efa (its RDM domain "efa<N>-rdm"); N decimal without
 *     leading zeros. These names win over an OS interface of the same name;
 *   - the name of an OS interface (getifaddrs(3)): its first IPv4
 *     address, else its first IPv6 one; an IP rail;
 *   - an IP address or a host name (getaddrinfo(3), its first address):
 *     an IP rail, port 0.
 *
 * An IP rail is asked of the core provider the hints' prov_name names
 * once the components "kfab_mrail" (in any case) and the exclusions
 * ("^name") are taken out of it ("kfab_mrail;tcp" gives "tcp"), else of
 * "tcp;ofi_rxm", with its address as hints->src_addr.
 * A kfab rail is asked of its provider by domain name; hints naming
 * another core provider do not match it. All rails must be of one core
 * provider, and no two IP rails of one address.
 *
 * Every inner fi_getinfo() names its provider, never kfab_mrail, so it
 * cannot come back into kfab_mrail. It asks, at API version @version (at
 * least 1.5, for the FI_MR_* bits), for what the data path needs of a
 * rail: FI_EP_RDM; FI_MSG | FI_TAGGED | FI_SOURCE, with FI_DIRECTED_RECV
 * when the hints ask for it, FI_RMA (with the hints' directions) when
 * they ask for it, and FI_RMA | FI_READ | FI_REMOTE_READ when a policy
 * of FI_OFI_MRAIL_CONFIG stripes (the receiver pulls the stripes);
 * FI_AV_TABLE; the hints' threading and progress; modes FI_CONTEXT and
 * FI_CONTEXT2 at most (kfab_mrail gives every rail operation its own
 * context), no FI_BUFFERED_RECV; mr_mode FI_MR_LOCAL | FI_MR_VIRT_ADDR |
 * FI_MR_ALLOCATED | FI_MR_PROV_KEY at most (per-rail 64-bit keys, no
 * FI_MR_RAW or FI_MR_ENDPOINT). A rail is the first fi_info returned; an
 * IP rail's must have its address as src_addr.
 */
#ifndef KFAB_MRAIL_RAIL_H
#define KFAB_MRAIL_RAIL_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "mrail_param.h"

/* the core provider of IP rails when the hints name none */
#define MRAIL_IP_PROV		"tcp;ofi_rxm"

/*
 * *@rails: a new array of one fi_info per address of @p, in order,
 * *@nrails of them. 0; -FI_ENODATA when there are no rails (not logged,
 * FI_OFI_MRAIL_ADDR unset), when an address resolves to nothing, or when
 * the core provider has no rail there or does not match the hints;
 * -FI_EINVAL for a malformed FI_ADDR_STR address, rails of different core
 * providers or two rails of one address; -FI_ENOMEM. Each is logged
 * with the address and what to do (hints that do not match at INFO),
 * but for no rails.
 */
int mrail_rails_getinfo(uint32_t version, const struct fi_info *hints,
			const struct mrail_params *p, struct fi_info ***rails,
			size_t *nrails);

/* Frees what mrail_rails_getinfo() returned. */
void mrail_rails_free(struct fi_info **rails, size_t nrails);

#endif /* KFAB_MRAIL_RAIL_H */
