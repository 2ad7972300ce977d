// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what kfab_opx advertises, and fi_getinfo().
 *
 * One fi_info per Active HFI unit of the backend in use, the unit
 * FI_OPX_HFI_SELECT picks for the caller first. The fabric is named after
 * the backend ("kfab-kmod" or "kfab-shm"), the domain after the unit
 * ("hfi<N>"). Hints ask for a minimum: anything we cannot give (another
 * endpoint type, FI_RMA_EVENT, more ordering, larger sizes) means no
 * match, with an FI_LOG_INFO line saying why.
 *
 * Capabilities: the primary ones (FI_MSG, FI_TAGGED, FI_RMA, FI_ATOMIC
 * and their FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ,
 * FI_REMOTE_WRITE; FI_DIRECTED_RECV), FI_SOURCE (a lookup per receive)
 * and FI_NAMED_RX_CTX (scalable endpoints, up to OPX_SEP_CTX_MAX contexts
 * each way) only when asked for; FI_MULTI_RECV (free) always. When the hints name
 * no capability: all of them but FI_DIRECTED_RECV.
 * FI_LOCAL_COMM and FI_REMOTE_COMM (both hold: units of one host) only
 * when asked for.
 *
 * Addresses: with FI_SOURCE, a node in the fi_addr_opx:// form is the
 * source address (and picks the unit with its LID); another node (a host
 * name, an IP address) is this host and is ignored. Without FI_SOURCE
 * the node must be in the fi_addr_opx:// form: it is the destination.
 * The service is not used: an endpoint name says everything, and the
 * context and session of one are assigned when the endpoint opens. Hints'
 * src_addr and dest_addr are taken when node does not give them. Every
 * fi_info carries a src_addr: the one asked for, else its unit's (the
 * unit's LID, context 0, session 0).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kfab_attr.h"
#include "core/kfab_param.h"
#include "core/kfab_log.h"
#include "opx_info.h"
#include "opx_proto.h"

#define OPX_RMA_CAPS		(FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | \
				 FI_REMOTE_READ | FI_REMOTE_WRITE)
#define OPX_PRIMARY_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
				 FI_DIRECTED_RECV | OPX_RMA_CAPS)
#define OPX_DOMAIN_CAPS		(FI_LOCAL_COMM | FI_REMOTE_COMM)
#define OPX_CAPS		(OPX_PRIMARY_CAPS | FI_MULTI_RECV | \
				 FI_SOURCE | FI_NAMED_RX_CTX | \
				 OPX_DOMAIN_CAPS)
#define OPX_DEFAULT_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
				 FI_MULTI_RECV | FI_SOURCE | OPX_RMA_CAPS)
#define OPX_TX_CAPS		(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | \
				 FI_ATOMIC | FI_READ | FI_WRITE | \
				 FI_NAMED_RX_CTX | OPX_DOMAIN_CAPS)
#define OPX_RX_CAPS		(FI_MSG | FI_TAGGED | FI_RECV | \
				 FI_DIRECTED_RECV | FI_MULTI_RECV | \
				 FI_SOURCE | FI_RMA | FI_ATOMIC | \
				 FI_REMOTE_READ | FI_REMOTE_WRITE | \
				 OPX_DOMAIN_CAPS)

#define OPX_TX_OP_FLAGS		(FI_COMPLETION | FI_INJECT | \
				 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
				 FI_DELIVERY_COMPLETE)
#define OPX_RX_OP_FLAGS		(FI_COMPLETION | FI_MULTI_RECV)

#define OPX_INJECT_SIZE		48
#define OPX_QUEUE_SIZE		4096
#define OPX_MAX_MSG_SIZE	(1ULL << 40)
#define OPX_PROTO_VERSION	1
#define OPX_MR_KEY_SIZE		8
#define OPX_CQ_DATA_SIZE	4
#define OPX_CQ_CNT		1024
#define OPX_MR_CNT		65536
#define OPX_CNTR_CNT		1024

/* What the hints settle, the same for every unit. */
struct opx_match {
	struct kfab_match k;
	enum fi_av_type av_type;
	uint64_t mem_tag_format;
	size_t tx_ctx_cnt, rx_ctx_cnt;	/* scalable endpoints: contexts */
	int unit;			/* domain name asked, or -1 */
	bool src, dest;
	uint8_t src_addr[OPX_ADDRLEN];
	uint8_t dest_addr[OPX_ADDRLEN];
};

/* ------------------------------------------------------------------ */
/* units */

static int unit_cmp(const void *a, const void *b)
{
	const struct opx_unit_info *x = a, *y = b;

	return (x->u.unit > y->u.unit) - (x->u.unit < y->u.unit);
}

static int unit_read(enum kfab_backend backend, unsigned int unit,
		     struct opx_unit_info *ui)
{
	struct kfab_hfi_dev *dev;
	int ret = kfab_hfi_open(backend, unit, &dev);

	if (ret)
		return ret;
	ui->u.unit = unit;
	ui->u.active = dev->version.state == KFAB_HFI_STATE_ACTIVE;
	ui->u.numa_node = dev->version.numa_node;
	ui->lid = dev->version.lid;
	ui->nctxts = dev->version.nctxts;
	kfab_hfi_close(dev);
	return 0;
}

/* @prefix then a unit number without leading zeros, nothing after */
static bool unit_name(const char *name, const char *prefix,
		      unsigned int *unit)
{
	const char *p = name + strlen(prefix);
	unsigned long u = 0;

	if (strncmp(name, prefix, strlen(prefix)) || !*p ||
	    (p[0] == '0' && p[1]))
		return false;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || u > 100000)
			return false;
		u = u * 10 + (unsigned long)(*p - '0');
	}
	*unit = (unsigned int)u;
	return true;
}

int opx_units_get(enum kfab_backend backend, struct opx_unit_info *units,
		  int max)
{
	unsigned int unit;
	bool denied = false;
	struct dirent *d;
	uint64_t nshm;
	DIR *dir;
	int n = 0, ret;

	if (backend == KFAB_BACKEND_SHM) {
		ret = kfab_env_u64("KFAB_SHM_UNITS", 2, 1, 8, &nshm);
		if (ret)
			return ret;
		for (unit = 0; unit < nshm && n < max; unit++)
			if (!unit_read(backend, unit, &units[n]))
				n++;
		return n;
	}
	dir = opendir("/dev");
	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max) {
		if (!unit_name(d->d_name, "kfab_hfi", &unit))
			continue;
		ret = unit_read(backend, unit, &units[n]);
		if (ret == -EACCES)
			denied = true;
		if (ret)
			kfab_log(KFAB_LOG_INFO,
				 "kfab_opx: /dev/%s does not open: unit left out",
				 d->d_name);
		else
			n++;
	}
	closedir(dir);
	qsort(units, (size_t)n, sizeof(*units), unit_cmp);
	/* the user is not in the group: say so rather than "no unit" */
	return !n && denied ? -FI_EACCES : n;
}

/* ------------------------------------------------------------------ */
/* hints */

static const struct kfab_attr_who opx_who = { .prov = "kfab_opx" };

static const struct kfab_caps opx_caps = {
	.caps = OPX_CAPS,
	.tx_caps = OPX_TX_CAPS,
	.rx_caps = OPX_RX_CAPS,
	.default_caps = OPX_DEFAULT_CAPS,
};

static const struct kfab_limits opx_limits = {
	.tx_op_flags = OPX_TX_OP_FLAGS,
	.rx_op_flags = OPX_RX_OP_FLAGS,
	.msg_order = FI_ORDER_SAS,
	.inject_size = OPX_INJECT_SIZE,
	.rma_iov_limit = 1,
	.tx_size = OPX_QUEUE_SIZE,
	.rx_size = OPX_QUEUE_SIZE,
	.mr_key_size = OPX_MR_KEY_SIZE,
	.cq_data_size = OPX_CQ_DATA_SIZE,
	.cntr_cnt = OPX_CNTR_CNT,
	.cq_cnt = OPX_CQ_CNT,
	.mr_cnt = OPX_MR_CNT,
	.ep_ctx = OPX_SEP_CTX_MAX,
};

__attribute__((format(printf, 1, 2)))
static int nomatch(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kfab_vnomatch(&opx_who, fmt, ap);
	va_end(ap);
	return -FI_ENODATA;
}

static int match_ep(const struct fi_ep_attr *ep, struct opx_match *m)
{
	char buf[64];
	int ret;

	if (!ep)
		return 0;
	if (ep->type != FI_EP_UNSPEC && ep->type != FI_EP_RDM)
		return nomatch("endpoint type %s: only FI_EP_RDM",
			       fi_tostr_r(buf, sizeof(buf), &ep->type,
					  FI_TYPE_EP_TYPE));
	ret = kfab_match_proto(&opx_who, ep, FI_PROTO_OPX, "FI_PROTO_OPX",
			       OPX_PROTO_VERSION);
	if (ret)
		return ret;
	if (ep->max_msg_size > OPX_MAX_MSG_SIZE)
		return nomatch("max_msg_size %zu: at most %llu",
			       ep->max_msg_size, OPX_MAX_MSG_SIZE);
	if (ep->msg_prefix_size || ep->max_order_raw_size ||
	    ep->max_order_war_size || ep->max_order_waw_size)
		return nomatch("message prefixes and RMA ordering are not supported");
	if (ep->tx_ctx_cnt > OPX_SEP_CTX_MAX ||
	    ep->rx_ctx_cnt > OPX_SEP_CTX_MAX)
		return nomatch("tx_ctx_cnt %zu, rx_ctx_cnt %zu: at most %d contexts of a scalable endpoint, no shared contexts",
			       ep->tx_ctx_cnt, ep->rx_ctx_cnt,
			       OPX_SEP_CTX_MAX);
	if (ep->tx_ctx_cnt)
		m->tx_ctx_cnt = ep->tx_ctx_cnt;
	if (ep->rx_ctx_cnt)
		m->rx_ctx_cnt = ep->rx_ctx_cnt;
	if (ep->auth_key_size)
		return nomatch("authorization keys are not supported");
	m->mem_tag_format = ep->mem_tag_format;
	return 0;
}

static int match_domain(uint32_t version, const struct fi_domain_attr *d,
			struct opx_match *m)
{
	unsigned int unit;
	int ret;

	m->k.threading = FI_THREAD_SAFE;
	m->k.control_progress = FI_PROGRESS_MANUAL;
	m->k.data_progress = FI_PROGRESS_MANUAL;
	m->av_type = OPX_AV_DEFAULT;
	m->unit = -1;
	/* mr_mode: we need no bit */
	if (!d)
		return kfab_match_mr_mode(&opx_who, version, FI_MR_UNSPEC, 0,
					  &m->k.mr_mode);
	if (d->name) {
		if (!unit_name(d->name, "hfi", &unit))
			return nomatch("domain %s: domains are hfi<N>",
				       d->name);
		m->unit = (int)unit;
	}
	/* FI_PROGRESS_AUTO: a progress thread per CQ (fi_opx(7)) */
	ret = kfab_match_threads(&opx_who, d, FI_THREAD_SAFE, &m->k);
	if (ret)
		return ret;
	switch (d->av_type) {
	case FI_AV_UNSPEC:
		break;
	case FI_AV_MAP:
	case FI_AV_TABLE:
		if (OPX_AV_ONLY != FI_AV_UNSPEC && d->av_type != OPX_AV_ONLY)
			return nomatch("av_type %s: this kfab_opx was built with OPX_AV=%s",
				       d->av_type == FI_AV_MAP ? "FI_AV_MAP" :
				       "FI_AV_TABLE",
				       OPX_AV_ONLY == FI_AV_MAP ? "map" :
				       "table");
		m->av_type = d->av_type;
		break;
	default:
		return nomatch("av_type %d: FI_AV_MAP or FI_AV_TABLE",
			       (int)d->av_type);
	}
	return kfab_match_mr_mode(&opx_who, version, d->mr_mode, 0,
				  &m->k.mr_mode);
}

/* An FI_ADDR_OPX name in the hints: 8 bytes naming a LID. */
static int match_hint_addr(const char *what, uint32_t format,
			   const void *addr, size_t len, bool *have,
			   uint8_t out[OPX_ADDRLEN])
{
	uint64_t key;

	if (!addr)
		return 0;
	if ((format != FI_FORMAT_UNSPEC && format != FI_ADDR_OPX) ||
	    len != OPX_ADDRLEN || opx_addr_key(addr, &key))
		return nomatch("%s is not an FI_ADDR_OPX endpoint name (%zu bytes)",
			       what, len);
	memcpy(out, addr, OPX_ADDRLEN);
	*have = true;
	return 0;
}

static int match_addrs(const char *node, uint64_t flags,
		       const struct fi_info *hints, struct opx_match *m)
{
	uint8_t name[OPX_ADDRLEN];
	int ret;

	m->src = false;
	m->dest = false;
	if (hints) {
		ret = kfab_match_addr_format(&opx_who, hints->addr_format,
					     FI_ADDR_OPX, "FI_ADDR_OPX");
		if (!ret)
			ret = match_hint_addr("src_addr",
					      hints->addr_format,
					      hints->src_addr,
					      hints->src_addrlen, &m->src,
					      m->src_addr);
		if (!ret)
			ret = match_hint_addr("dest_addr", hints->addr_format,
					      hints->dest_addr,
					      hints->dest_addrlen, &m->dest,
					      m->dest_addr);
		if (ret)
			return ret;
	}
	if (!node)
		return 0;
	if (opx_addr_parse(node, name)) {
		if (!(flags & FI_SOURCE))
			return nomatch("node %s is not an " OPX_ADDR_PREFIX "<lid>.<ctxt>.0x<session> address: exchange endpoint names out of band and insert them in the AV",
				       node);
		kfab_log(KFAB_LOG_INFO,
			 "kfab_opx: source node %s is this host: ignored",
			 node);
		return 0;
	}
	if (flags & FI_SOURCE) {
		memcpy(m->src_addr, name, OPX_ADDRLEN);
		m->src = true;
	} else {
		memcpy(m->dest_addr, name, OPX_ADDRLEN);
		m->dest = true;
	}
	return 0;
}

static int match_hints(uint32_t version, const char *node, uint64_t flags,
		       const struct fi_info *hints, const char *fabric_name,
		       struct opx_match *m)
{
	int ret;

	memset(m, 0, sizeof(*m));
	m->tx_ctx_cnt = 1;
	m->rx_ctx_cnt = 1;
	ret = kfab_match_hints(&opx_who, hints, fabric_name, &opx_caps,
			       &opx_limits, &m->k);
	if (!ret && hints)
		ret = match_ep(hints->ep_attr, m);
	if (!ret)
		ret = match_domain(version, hints ? hints->domain_attr : NULL,
				   m);
	if (!ret)
		ret = match_addrs(node, flags, hints, m);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fi_info */

static struct fi_info *info_new(const struct opx_match *m,
				const struct opx_unit_info *ui,
				const char *fabric_name)
{
	uint64_t src = opx_name((uint16_t)ui->lid, 0, 0);
	struct fi_info *fi;
	char name[16];

	snprintf(name, sizeof(name), "hfi%u", ui->u.unit);
	fi = kfab_info_new(&m->k, &opx_caps, FI_ADDR_OPX, OPX_ADDRLEN,
			   m->src ? (const void *)m->src_addr : &src,
			   m->dest ? m->dest_addr : NULL, name, fabric_name);
	if (!fi)
		return NULL;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->inject_size = OPX_INJECT_SIZE;
	fi->tx_attr->size = OPX_QUEUE_SIZE;
	fi->tx_attr->rma_iov_limit = 1;

	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->size = OPX_QUEUE_SIZE;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_OPX;
	fi->ep_attr->protocol_version = OPX_PROTO_VERSION;
	fi->ep_attr->max_msg_size = OPX_MAX_MSG_SIZE;
	fi->ep_attr->mem_tag_format = m->mem_tag_format ? m->mem_tag_format :
				      KFAB_TAG_FORMAT_GENERIC;
	fi->ep_attr->tx_ctx_cnt = m->tx_ctx_cnt;
	fi->ep_attr->rx_ctx_cnt = m->rx_ctx_cnt;

	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = m->av_type;
	fi->domain_attr->mr_key_size = OPX_MR_KEY_SIZE;
	fi->domain_attr->cq_data_size = OPX_CQ_DATA_SIZE;
	fi->domain_attr->cq_cnt = OPX_CQ_CNT;
	fi->domain_attr->ep_cnt = ui->nctxts;
	fi->domain_attr->tx_ctx_cnt = ui->nctxts;
	fi->domain_attr->rx_ctx_cnt = ui->nctxts;
	fi->domain_attr->max_ep_tx_ctx = OPX_SEP_CTX_MAX;
	fi->domain_attr->max_ep_rx_ctx = OPX_SEP_CTX_MAX;
	fi->domain_attr->cntr_cnt = OPX_CNTR_CNT;
	fi->domain_attr->mr_cnt = OPX_MR_CNT;
	return fi;
}

/* Whether @ui is listed: Active, and the unit or LID asked for if any. */
static bool unit_wanted(const struct opx_match *m,
			const struct opx_unit_info *ui)
{
	uint64_t key;

	if (!ui->u.active)
		return false;
	if (m->unit >= 0 && ui->u.unit != (unsigned int)m->unit)
		return false;
	if (m->src && !opx_addr_key(m->src_addr, &key) &&
	    opx_key_lid((uint32_t)key) != ui->lid)
		return false;
	return true;
}

int opx_fabric_name(const char **name)
{
	struct opx_params p;
	int ret = opx_params_load(&p);

	if (ret)
		return ret;
	*name = kfab_backend_fabric_name(p.backend);
	opx_params_fini(&p);
	return 0;
}

int opx_domain_unit(const char *name, unsigned int *unit)
{
	return unit_name(name, "hfi", unit) && *unit < OPX_MAX_UNITS ?
	       0 : -FI_EINVAL;
}

int opx_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct opx_unit_info units[OPX_MAX_UNITS];
	struct opx_unit sel[OPX_MAX_UNITS];
	struct fi_info *head = NULL, **tail = &head, *fi;
	struct opx_params p;
	struct opx_match m;
	const char *fabric_name;
	unsigned int first;
	int n, i, pass, ret;

	(void)service;
	*info = NULL;
	ret = opx_params_load(&p);
	if (ret)
		return ret;
	fabric_name = kfab_backend_fabric_name(p.backend);
	ret = match_hints(version, node, flags, hints, fabric_name, &m);
	if (ret)
		goto out;
	n = opx_units_get(p.backend, units, OPX_MAX_UNITS);
	if (n <= 0) {
		ret = n ? n : nomatch("no HFI unit on fabric %s", fabric_name);
		goto out;
	}
	for (i = 0; i < n; i++)
		sel[i] = units[i].u;
	ret = opx_hfi_select(p.hfi_select, sel, n, &first);
	if (ret)
		goto out;
	/* the unit selected first, then the others by number */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if ((units[i].u.unit == first) != (pass == 0) ||
			    !unit_wanted(&m, &units[i]))
				continue;
			fi = info_new(&m, &units[i], fabric_name);
			if (!fi) {
				kfab_log(KFAB_LOG_WARN,
					 "kfab_opx: fi_getinfo: out of memory");
				ret = -FI_ENOMEM;
				goto out;
			}
			*tail = fi;
			tail = &fi->next;
		}
	}
	if (!head)
		ret = nomatch("no Active unit of %d on fabric %s has the domain name or source address asked for",
			      n, fabric_name);
	else
		kfab_log(KFAB_LOG_INFO,
			 "kfab_opx: fabric %s, %d unit(s), hfi%u first",
			 fabric_name, n, first);
out:
	opx_params_fini(&p);
	if (ret) {
		if (head)
			fi_freeinfo(head);
		return ret;
	}
	*info = head;
	return 0;
}
