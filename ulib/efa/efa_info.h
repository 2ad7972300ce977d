/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_efa as libfabric sees it before an endpoint exists: its
 * endpoint names (FI_ADDR_EFA), the EFA devices of a backend, fi_getinfo().
 *
 *   efa_addr.c   endpoint names: key, text form, parsing
 *   efa_attr.c   devices and fi_getinfo(): the attributes we advertise
 *
 * An endpoint name is the QP an endpoint receives on, 32 bytes in the
 * shape of libfabric's efa names: the device's gid, the qpn (32 bits here,
 * where efa has 16 and a pad), the qkey, 8 reserved bytes that must be
 * zero. qpn and qkey are little-endian. A name is valid with a gid other than ::, a qpn of
 * 1..EFA_QPN_MAX and a qkey other than 0. The text form is libfabric's:
 * "fi_addr_efa://[<gid as IPv6>]:<qpn>:<qkey>", both numbers decimal.
 *
 * A source address (FI_SOURCE node, hints' src_addr, every fi_info's
 * src_addr) names a device alone: its gid with qpn 0 and qkey 0, as
 * libfabric's efa shows it. The device assigns both when the endpoint's
 * QP is created.
 */
#ifndef KFAB_ULIB_EFA_INFO_H
#define KFAB_ULIB_EFA_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "efa_param.h"
#include "core/kfab_prov.h"

#define EFA_ADDRLEN		32
#define EFA_ADDR_PREFIX		"fi_addr_efa://"
#define EFA_QPN_MAX		0xffffffU

/* An FI_ADDR_EFA endpoint name. */
struct efa_addr {
	uint8_t gid[KFAB_EFA_GID_LEN];
	uint32_t qpn;		/* little-endian */
	uint32_t qkey;		/* little-endian: the capability to send */
	uint8_t reserved[8];	/* zero */
};

_Static_assert(sizeof(struct efa_addr) == EFA_ADDRLEN,
	       "FI_ADDR_EFA names are 32 bytes");

/*
 * FI_EP_DGRAM's FI_MSG_PREFIX space: on receive the provider writes the
 * sender's endpoint name there (gid and qpn from the device, qkey from the
 * sender's packet header), a name fi_av_insert() takes to reply; on send
 * it is scratch the provider does not transmit.
 */
#define EFA_DGRAM_PREFIX_SIZE	EFA_ADDRLEN

/*
 * The receives an RDM endpoint takes when FI_EFA_RX_SIZE is 0. They wait
 * in software, not in the device's ring, so they are not bounded by its
 * depth: an MPI rank may post hundreds of receives before it sends, and a
 * -FI_EAGAIN there would stall every rank doing the same.
 */
#define EFA_RDM_RX_SIZE_DEFAULT	8192

/* The name of (gid, qpn, qkey) into @name, reserved bytes zeroed. */
void efa_name_set(struct efa_addr *name, const uint8_t gid[KFAB_EFA_GID_LEN],
		  uint32_t qpn, uint32_t qkey);

/* The QP a valid name designates; -FI_EINVAL (not logged) otherwise. */
int efa_name_get(const void *name, struct kfab_efa_addr *qp);

/*
 * The key of the QP (gid, qpn): what a received packet says of its
 * sender (the ring entry's src_gid and src_qpn), so that FI_SOURCE and
 * directed receive find the AV entry of the packet's sender. The qkey is
 * left out: it is the capability to send into the QP, not its identity,
 * and no packet carries it.
 */
uint64_t efa_qp_key(const uint8_t gid[KFAB_EFA_GID_LEN], uint32_t qpn);

/* kp->addr_key: efa_qp_key() of a valid name; -FI_EINVAL otherwise. */
int efa_addr_key(const void *name, uint64_t *key);

/* kp->straddr: the text form into @buf of *@len bytes (needed: *@len). */
const char *efa_straddr(const void *name, char *buf, size_t *len);

/*
 * The name of a text form: 0, or -FI_EINVAL (not logged) for another
 * form, a gid that is not an IPv6 address or is ::, a qpn past
 * EFA_QPN_MAX or a qkey past UINT32_MAX. qpn and qkey 0 parse (the form
 * of a source address); efa_addr_key() refuses them.
 */
int efa_addr_parse(const char *s, uint8_t name[EFA_ADDRLEN]);

/* One EFA device as getinfo sees it. */
struct efa_dev_info {
	unsigned int device;	/* N of efa<N> */
	bool active;		/* its state knob says Active */
	uint8_t gid[KFAB_EFA_GID_LEN];
	uint32_t mtu;
	uint32_t rx_entries;
	uint32_t max_qps;
	uint32_t max_mrs;
	int32_t numa_node;
};

/*
 * The devices of p->backend that FI_EFA_IFACE admits, by number, Down
 * ones included: kmod, each /dev/kfab_efa<N> (N < EFA_IFACE_MAX) that
 * opens; shm, devices 0 .. $KFAB_SHM_EFA_DEVICES - 1 (1..8, default 2).
 * The count (at most @max), or -FI_EINVAL for a bad KFAB_SHM_EFA_DEVICES.
 */
int efa_devices_get(const struct efa_params *p, struct efa_dev_info *devs,
		    int max);

/* fi_provider.getinfo of kfab_efa: FI_EP_RDM and FI_EP_DGRAM. */
int efa_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);

/*
 * A domain name, "efa<N>-rdm" or "efa<N>-dgrm": its device and endpoint
 * type. 0, or -FI_EINVAL (not logged) for another name.
 */
int efa_domain_parse(const char *name, unsigned int *device,
		     enum fi_ep_type *type);

#endif /* KFAB_ULIB_EFA_INFO_H */
