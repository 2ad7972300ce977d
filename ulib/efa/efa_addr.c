// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: kfab_efa endpoint names (FI_ADDR_EFA) and their text form,
 * see efa_info.h; an endpoint's QP, which gives it its name.
 */
#define _DEFAULT_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "efa.h"

static const uint8_t zero_gid[KFAB_EFA_GID_LEN];

void efa_name_set(struct efa_addr *name, const uint8_t gid[KFAB_EFA_GID_LEN],
		  uint32_t qpn, uint32_t qkey)
{
	memset(name, 0, sizeof(*name));
	memcpy(name->gid, gid, KFAB_EFA_GID_LEN);
	name->qpn = htole32(qpn);
	name->qkey = htole32(qkey);
}

int efa_name_get(const void *name, struct kfab_efa_addr *qp)
{
	struct efa_addr n;
	uint64_t reserved;

	memcpy(&n, name, sizeof(n));
	memcpy(&reserved, n.reserved, sizeof(reserved));
	qp->qpn = le32toh(n.qpn);
	qp->qkey = le32toh(n.qkey);
	if (reserved || !memcmp(n.gid, zero_gid, KFAB_EFA_GID_LEN) ||
	    !qp->qpn || qp->qpn > EFA_QPN_MAX || !qp->qkey)
		return -FI_EINVAL;
	memcpy(qp->gid, n.gid, KFAB_EFA_GID_LEN);
	return 0;
}

/*
 * 24 bits of qpn under 40 bits of the gid's interface identifier (its
 * upper half is the link-local prefix), folded so that every bit counts:
 * kfab's gids differ in the backend's bytes and the device byte, an
 * EUI-64 gid in its 48 MAC bits. Exact for kfab's devices.
 */
uint64_t efa_qp_key(const uint8_t gid[KFAB_EFA_GID_LEN], uint32_t qpn)
{
	uint64_t iid = 0;

	for (int i = 8; i < KFAB_EFA_GID_LEN; i++)
		iid = iid << 8 | gid[i];
	iid = (iid ^ iid >> 24) & ((1ULL << 40) - 1);
	return iid << 24 | (qpn & EFA_QPN_MAX);
}

int efa_addr_key(const void *name, uint64_t *key)
{
	struct kfab_efa_addr qp;

	if (efa_name_get(name, &qp))
		return -FI_EINVAL;
	*key = efa_qp_key(qp.gid, qp.qpn);
	return 0;
}

const char *efa_straddr(const void *name, char *buf, size_t *len)
{
	char gid[INET6_ADDRSTRLEN];
	struct efa_addr n;
	int ret;

	memcpy(&n, name, sizeof(n));
	inet_ntop(AF_INET6, n.gid, gid, sizeof(gid));
	ret = snprintf(buf, *len, EFA_ADDR_PREFIX "[%s]:%u:%u", gid,
		       le32toh(n.qpn), le32toh(n.qkey));
	*len = (size_t)ret + 1;
	return buf;
}

/* Decimal digits, at least one, up to @max; advances *@s. */
static int num_get(const char **s, uint64_t max, uint64_t *v)
{
	const char *p = *s;

	*v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		*v = *v * 10 + (uint64_t)(*p - '0');
		if (*v > max)
			return -FI_EINVAL;
	}
	if (p == *s)
		return -FI_EINVAL;
	*s = p;
	return 0;
}

int efa_addr_parse(const char *s, uint8_t name[EFA_ADDRLEN])
{
	uint8_t gid[KFAB_EFA_GID_LEN];
	char text[INET6_ADDRSTRLEN];
	uint64_t qpn, qkey;
	const char *end;
	struct efa_addr n;

	if (strncmp(s, EFA_ADDR_PREFIX "[", strlen(EFA_ADDR_PREFIX "[")))
		return -FI_EINVAL;
	s += strlen(EFA_ADDR_PREFIX "[");
	end = strchr(s, ']');
	if (!end || (size_t)(end - s) >= sizeof(text))
		return -FI_EINVAL;
	memcpy(text, s, (size_t)(end - s));
	text[end - s] = '\0';
	if (inet_pton(AF_INET6, text, gid) != 1 ||
	    !memcmp(gid, zero_gid, KFAB_EFA_GID_LEN))
		return -FI_EINVAL;
	s = end + 1;
	if (*s++ != ':' || num_get(&s, EFA_QPN_MAX, &qpn) || *s++ != ':' ||
	    num_get(&s, UINT32_MAX, &qkey) || *s)
		return -FI_EINVAL;
	efa_name_set(&n, gid, (uint32_t)qpn, (uint32_t)qkey);
	memcpy(name, &n, EFA_ADDRLEN);
	return 0;
}

int efa_qp_open(struct kfab_domain *domain, struct kfab_efa_qp **qp,
		struct efa_addr *name)
{
	int ret = kfab_efa_create_qp(efa_domain_of(domain)->dev, qp);

	if (ret) {
		*qp = NULL;
		kfab_warn(domain->kp, FI_LOG_EP_CTRL,
			  "fi_endpoint: cannot create a QP on %s: %s%s\n",
			  domain->name, strerror(-ret),
			  ret == -EBUSY || ret == -ENOSPC ?
			  " (every QP of the device is in use: close endpoints)" :
			  "");
		return ret == -ENETDOWN ? -FI_ENETDOWN :
		       ret == -EBUSY || ret == -ENOSPC ? -FI_EBUSY :
		       ret == -ENOMEM ? -FI_ENOMEM : -FI_EIO;
	}
	efa_name_set(name, (*qp)->addr.gid, (*qp)->addr.qpn,
		     (*qp)->addr.qkey);
	return 0;
}

int efa_ep_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context)
{
	(void)flags, (void)ops, (void)context;
	kfab_warn(kfab_ep_kp(fid), FI_LOG_EP_CTRL,
		  "fi_open_ops(%s) on an endpoint: kfab_efa's operations are the domain's (FI_KFAB_EFA_DOMAIN_OPS)\n",
		  name ? name : "(null)");
	return -FI_ENOSYS;
}
