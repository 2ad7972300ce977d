// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what kfab_efa advertises, and fi_getinfo().
 *
 * fi_efa(7)'s two endpoint types, one fi_info per Active device of the
 * backend in use and type: every device's FI_EP_RDM, then every device's
 * FI_EP_DGRAM.
 * FI_EFA_IFACE hides devices; a Down one is not listed. The
 * fabric is named after the backend ("kfab-kmod" or "kfab-shm"), the
 * domain after the device and the type ("efa0-rdm", "efa0-dgrm", as
 * libfabric's efa). Hints ask for a minimum: anything we cannot give means
 * no match for that type, with an FI_LOG_INFO line saying why.
 *
 * FI_EP_RDM: the primary capabilities FI_MSG, FI_TAGGED, FI_RMA and
 * FI_ATOMIC (emulated) with FI_SEND, FI_RECV, FI_READ, FI_WRITE,
 * FI_REMOTE_READ, FI_REMOTE_WRITE; FI_DIRECTED_RECV and FI_SOURCE (a
 * lookup per receive) only when asked for; FI_MULTI_RECV (free) unless
 * the hints leave it out and ask for what zero-copy receive needs (see
 * zcpy_asked()), which it would turn off.
 * When the hints name no capability: all of them but FI_DIRECTED_RECV.
 * FI_LOCAL_COMM and FI_REMOTE_COMM only when asked for. No maximum
 * message size, send-after-send order, FI_THREAD_SAFE.
 *
 * FI_EP_DGRAM: FI_MSG with FI_SEND and FI_RECV alone, messages of one
 * MTU, no order, FI_THREAD_DOMAIN, FI_RM_DISABLED, and the application
 * must take FI_MSG_PREFIX (EFA_DGRAM_PREFIX_SIZE) and FI_MR_LOCAL. No
 * inject, counters, atomics, CQ data or selective completion.
 *
 * Memory regions (efa_mr.c), as libfabric's efa: the application must
 * take mr_mode FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY (the
 * key is the device's rkey, peers name virtual addresses), DGRAM also
 * FI_MR_LOCAL; before API 1.5 that is FI_MR_BASIC, with the FI_LOCAL_MR
 * mode bit for DGRAM.
 *
 * Both: FI_AV_TABLE (FI_AV_MAP is switched to it with a warning, as
 * libfabric's efa does), FI_PROGRESS_MANUAL, or FI_PROGRESS_AUTO when
 * asked (the core's progress threads), queues of FI_EFA_TX_SIZE and
 * FI_EFA_RX_SIZE entries (0: the device's rx_entries; an RDM endpoint's
 * receives EFA_RDM_RX_SIZE_DEFAULT).
 *
 * Addresses: with FI_SOURCE, a node in the fi_addr_efa:// form is the
 * source address and picks the device with its gid; another node is this
 * host and is ignored. Without FI_SOURCE the node must be in that form: it
 * is the destination. The service is not used. Hints' src_addr and
 * dest_addr are taken when node does not give them. Every fi_info carries
 * its device's source address.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efa_info.h"
#include "core/kfab_attr.h"
#include "core/kfab_param.h"
#include "core/kfab_log.h"

#define EFA_RMA_ACCESS		(FI_READ | FI_WRITE | FI_REMOTE_READ | \
				 FI_REMOTE_WRITE)
#define EFA_DOMAIN_CAPS		(FI_LOCAL_COMM | FI_REMOTE_COMM)
#define EFA_RDM_CAPS		(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | \
				 FI_SEND | FI_RECV | EFA_RMA_ACCESS | \
				 FI_DIRECTED_RECV | FI_MULTI_RECV | \
				 FI_SOURCE | EFA_DOMAIN_CAPS)
#define EFA_RDM_DEFAULT_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | \
				 FI_SEND | FI_RECV | EFA_RMA_ACCESS | \
				 FI_MULTI_RECV | FI_SOURCE)
#define EFA_RDM_TX_CAPS		(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | \
				 FI_SEND | FI_READ | FI_WRITE | \
				 EFA_DOMAIN_CAPS)
#define EFA_RDM_RX_CAPS		(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | \
				 FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | \
				 FI_DIRECTED_RECV | FI_MULTI_RECV | \
				 FI_SOURCE | EFA_DOMAIN_CAPS)
#define EFA_DGRAM_CAPS		(FI_MSG | FI_SEND | FI_RECV | EFA_DOMAIN_CAPS)
#define EFA_DGRAM_TX_CAPS	(FI_MSG | FI_SEND | EFA_DOMAIN_CAPS)
#define EFA_DGRAM_RX_CAPS	(FI_MSG | FI_RECV | EFA_DOMAIN_CAPS)

/* libfabric's efa: 4096 (fi_info of an EFA RDM endpoint) */
#define EFA_RDM_INJECT_SIZE	4096
/* RDM protocol v4 (PROTOCOLS.md section 1); DGRAM's prefix is ours */
#define EFA_RDM_PROTO_VERSION	4
#define EFA_DGRAM_PROTO_VERSION	1
/* the device's rkey */
#define EFA_MR_KEY_SIZE		4
/* what both types need of the application's regions (FI_MR_BASIC) */
#define EFA_MR_MODE		(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
				 FI_MR_PROV_KEY)
/* the CQ data header of a REQ packet */
#define EFA_RDM_CQ_DATA_SIZE	8
#define EFA_CQ_CNT		1024
#define EFA_RDM_CNTR_CNT	1024

/* At most this many devices are listed. */
#define EFA_MAX_DEVICES		EFA_IFACE_MAX

/* What sets an endpoint type apart. */
struct efa_type {
	enum fi_ep_type type;
	struct kfab_attr_who who;	/* type: "FI_EP_RDM" */
	const char *suffix;		/* of the domain name: "rdm" */
	struct kfab_caps caps;
	struct kfab_limits limits;
	uint64_t mode;			/* what the application must take */
	int mr_mode;			/* API 1.5 on */
	size_t msg_prefix_size;
	uint32_t proto_version;
	enum fi_threading threading;	/* the default */
	enum fi_resource_mgmt resource_mgmt;
};

static const struct efa_type efa_rdm = {
	.type = FI_EP_RDM,
	.who = { .prov = "kfab_efa", .type = "FI_EP_RDM" },
	.suffix = "rdm",
	.caps = {
		.caps = EFA_RDM_CAPS,
		.tx_caps = EFA_RDM_TX_CAPS,
		.rx_caps = EFA_RDM_RX_CAPS,
		.default_caps = EFA_RDM_DEFAULT_CAPS,
	},
	.limits = {
		.tx_op_flags = FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE |
			       FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE,
		.rx_op_flags = FI_COMPLETION | FI_MULTI_RECV,
		.msg_order = FI_ORDER_SAS,
		.inject_size = EFA_RDM_INJECT_SIZE,
		.rma_iov_limit = 1,
		.mr_key_size = EFA_MR_KEY_SIZE,
		.cq_data_size = EFA_RDM_CQ_DATA_SIZE,
		.cntr_cnt = EFA_RDM_CNTR_CNT,
		.cq_cnt = EFA_CQ_CNT,
		.ep_ctx = 1,
	},
	.proto_version = EFA_RDM_PROTO_VERSION,
	.mr_mode = EFA_MR_MODE,
	.threading = FI_THREAD_SAFE,
	.resource_mgmt = FI_RM_ENABLED,
};

static const struct efa_type efa_dgram = {
	.type = FI_EP_DGRAM,
	.who = { .prov = "kfab_efa", .type = "FI_EP_DGRAM" },
	.suffix = "dgrm",
	.caps = {
		.caps = EFA_DGRAM_CAPS,
		.tx_caps = EFA_DGRAM_TX_CAPS,
		.rx_caps = EFA_DGRAM_RX_CAPS,
		.default_caps = FI_MSG | FI_SEND | FI_RECV,
	},
	.limits = {
		.tx_op_flags = FI_COMPLETION | FI_INJECT_COMPLETE |
			       FI_TRANSMIT_COMPLETE,
		.rx_op_flags = FI_COMPLETION,
		.mr_key_size = EFA_MR_KEY_SIZE,
		.cq_cnt = EFA_CQ_CNT,
		.ep_ctx = 1,
	},
	.mode = FI_MSG_PREFIX,
	.mr_mode = FI_MR_LOCAL | EFA_MR_MODE,
	.msg_prefix_size = EFA_DGRAM_PREFIX_SIZE,
	.proto_version = EFA_DGRAM_PROTO_VERSION,
	.threading = FI_THREAD_DOMAIN,
	.resource_mgmt = FI_RM_DISABLED,
};

static const struct efa_type *const efa_types[] = { &efa_rdm, &efa_dgram };

/* What the hints settle for one type, the same for every device. */
struct efa_match {
	const struct efa_type *t;
	struct kfab_match k;
	uint64_t asked_caps;		/* the hints' own */
	uint64_t mode;
	uint64_t tx_order, rx_order;	/* the hints', or all we have */
	uint32_t tclass;		/* FI_TC_LOW_LATENCY or FI_TC_UNSPEC */
	uint64_t mem_tag_format;
	int device;			/* domain name asked, or -1 */
	/* the hints' sizes, checked against each device */
	size_t tx_size, rx_size, max_msg_size, ep_cnt, mr_cnt;
	bool src, dest;
	struct efa_addr src_addr;
	struct efa_addr dest_addr;
};

/* ------------------------------------------------------------------ */
/* devices */

static int dev_read(enum kfab_backend backend, unsigned int device,
		    struct efa_dev_info *di)
{
	struct kfab_efa_dev *dev;
	int ret = kfab_efa_open(backend, device, &dev);

	if (ret)
		return ret;
	di->device = device;
	di->active = __atomic_load_n(&dev->status->state, __ATOMIC_ACQUIRE) ==
		     KFAB_EFA_STATE_ACTIVE;
	memcpy(di->gid, dev->info.gid, KFAB_EFA_GID_LEN);
	di->mtu = dev->info.mtu;
	di->rx_entries = dev->info.rx_entries;
	di->max_qps = dev->info.max_qps;
	di->max_mrs = dev->info.max_mrs;
	di->numa_node = dev->info.numa_node;
	kfab_efa_close(dev);
	return 0;
}

int efa_devices_get(const struct efa_params *p, struct efa_dev_info *devs,
		    int max)
{
	unsigned int ndev = EFA_IFACE_MAX, device;
	bool denied = false;
	uint64_t nshm;
	int n = 0, ret;

	if (p->backend == KFAB_BACKEND_SHM) {
		ret = kfab_env_u64("KFAB_SHM_EFA_DEVICES", 2, 1, 8, &nshm);
		if (ret)
			return ret;
		ndev = (unsigned int)nshm;
	}
	for (device = 0; device < ndev && n < max; device++) {
		if (!efa_iface_match(p, device) ||
		    (p->backend == KFAB_BACKEND_KMOD &&
		     !kfab_efa_kmod_present(device)))
			continue;
		ret = dev_read(p->backend, device, &devs[n]);
		if (ret == -EACCES)
			denied = true;
		if (ret)
			kfab_log(KFAB_LOG_INFO,
				 "kfab_efa: efa%u does not open: device left out",
				 device);
		else
			n++;
	}
	/* the user is not in the group: say so rather than "no device" */
	return !n && denied ? -FI_EACCES : n;
}

/* ------------------------------------------------------------------ */
/* hints */

static const struct kfab_attr_who efa_who = { .prov = "kfab_efa" };

/* A no-match line for endpoint type @t, or the provider's when NULL. */
__attribute__((format(printf, 2, 3)))
static int nomatch(const struct efa_type *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kfab_vnomatch(t ? &t->who : &efa_who, fmt, ap);
	va_end(ap);
	return -FI_ENODATA;
}

/*
 * hints->mode, and the mode bits of API 1.4's mr_mode: what the
 * application takes must cover what the type needs.
 */
static int match_mode(uint32_t version, const struct fi_info *hints,
		      struct efa_match *m)
{
	const struct fi_domain_attr *d = hints ? hints->domain_attr : NULL;
	uint64_t need = m->t->mode;

	if ((m->t->mr_mode & FI_MR_LOCAL) &&
	    kfab_mr_legacy(version, d ? d->mr_mode : FI_MR_UNSPEC))
		need |= FI_LOCAL_MR;
	if (hints && (hints->mode & need) != need)
		return nomatch(m->t, "the application must take mode %s%s(hints->mode %#llx)",
			       need & FI_MSG_PREFIX ? "FI_MSG_PREFIX " : "",
			       need & FI_LOCAL_MR ? "FI_LOCAL_MR " : "",
			       (unsigned long long)hints->mode);
	m->mode = need;
	return 0;
}

static int match_ep(const struct fi_ep_attr *ep, struct efa_match *m)
{
	const struct efa_type *t = m->t;
	int ret;

	if (!ep)
		return 0;
	if (ep->type != FI_EP_UNSPEC && ep->type != t->type)
		return -FI_ENODATA;
	ret = kfab_match_proto(&t->who, ep, FI_PROTO_EFA, "FI_PROTO_EFA",
			       t->proto_version);
	if (ret)
		return ret;
	if (ep->msg_prefix_size && ep->msg_prefix_size != t->msg_prefix_size)
		return nomatch(t, "msg_prefix_size %zu: ours is %zu",
			       ep->msg_prefix_size, t->msg_prefix_size);
	if (ep->max_order_raw_size || ep->max_order_war_size ||
	    ep->max_order_waw_size)
		return nomatch(t, "RMA ordering is not supported");
	if (ep->tx_ctx_cnt > 1 || ep->rx_ctx_cnt > 1)
		return nomatch(t, "tx_ctx_cnt %zu, rx_ctx_cnt %zu: no scalable endpoints, no shared contexts",
			       ep->tx_ctx_cnt, ep->rx_ctx_cnt);
	if (ep->auth_key_size)
		return nomatch(t, "authorization keys are not supported");
	m->max_msg_size = ep->max_msg_size;
	if (t->type == FI_EP_RDM)
		m->mem_tag_format = ep->mem_tag_format;
	return 0;
}

/* What the sides' hints ask that a device's fi_info gives back. */
static void sides_asked(const struct fi_info *hints, struct efa_match *m)
{
	const struct fi_tx_attr *tx = hints ? hints->tx_attr : NULL;
	const struct fi_rx_attr *rx = hints ? hints->rx_attr : NULL;

	m->tx_order = tx ? tx->msg_order : m->t->limits.msg_order;
	m->rx_order = rx ? rx->msg_order : m->t->limits.msg_order;
	m->tx_size = tx ? tx->size : 0;
	m->rx_size = rx ? rx->size : 0;
	/* fi_efa(7): FI_TC_LOW_LATENCY is taken, any other class ignored */
	if (tx && tx->tclass == FI_TC_LOW_LATENCY)
		m->tclass = FI_TC_LOW_LATENCY;
}

/*
 * Without FI_RMA and FI_ATOMIC no peer addresses a region: the bits that
 * say how (FI_MR_VIRT_ADDR, FI_MR_PROV_KEY, FI_MR_ALLOCATED, or
 * FI_MR_BASIC) are not required. FI_MR_LOCAL of a legacy hint is the
 * FI_LOCAL_MR mode bit (match_mode()).
 */
static int match_mr_mode(uint32_t version, int hint, struct efa_match *m)
{
	int need = m->t->mr_mode;
	int ret;

	if (!(m->k.caps & (FI_RMA | FI_ATOMIC)))
		need &= ~KFAB_MR_BASIC_BITS;
	ret = kfab_match_mr_mode(&m->t->who, version, hint, need,
				 &m->k.mr_mode);
	/* what the application offers of them it gets all the same */
	if (!ret && !kfab_mr_legacy(version, hint))
		m->k.mr_mode |= hint & m->t->mr_mode;
	return ret;
}

/* "efa<N>-<suffix>": the device, and whether the suffix names @t. */
static bool domain_name(const char *name, const struct efa_type *t,
			int *device, bool *ours)
{
	const char *p = name + strlen("efa"), *dash;
	unsigned long n = 0;

	if (strncmp(name, "efa", strlen("efa")))
		return false;
	dash = strchr(p, '-');
	if (!dash || dash == p || (p[0] == '0' && dash - p > 1) ||
	    (strcmp(dash + 1, efa_rdm.suffix) &&
	     strcmp(dash + 1, efa_dgram.suffix)))
		return false;
	for (; p < dash; p++) {
		if (*p < '0' || *p > '9' || n >= EFA_IFACE_MAX)
			return false;
		n = n * 10 + (unsigned long)(*p - '0');
	}
	*device = (int)n;
	*ours = !strcmp(dash + 1, t->suffix);
	return true;
}

int efa_domain_parse(const char *name, unsigned int *device,
		     enum fi_ep_type *type)
{
	bool rdm;
	int dev;

	if (!domain_name(name, &efa_rdm, &dev, &rdm))
		return -FI_EINVAL;
	*device = (unsigned int)dev;
	*type = rdm ? FI_EP_RDM : FI_EP_DGRAM;
	return 0;
}

static int match_domain(uint32_t version, const struct fi_domain_attr *d,
			struct efa_match *m)
{
	const struct efa_type *t = m->t;
	bool ours;
	int ret;

	m->device = -1;
	m->k.control_progress = FI_PROGRESS_MANUAL;
	m->k.data_progress = FI_PROGRESS_MANUAL;
	if (!d) {
		m->k.threading = t->threading;
		/* no hints: what the type needs, in the API's terms */
		return match_mr_mode(version,
				     FI_VERSION_LT(version, FI_VERSION(1, 5)) ?
				     FI_MR_UNSPEC : t->mr_mode, m);
	}
	if (d->name) {
		if (!domain_name(d->name, t, &m->device, &ours))
			return nomatch(t, "domain %s: domains are efa<N>-rdm and efa<N>-dgrm",
				       d->name);
		if (!ours)
			return nomatch(t, "domain %s is of the other endpoint type",
				       d->name);
	}
	/* FI_PROGRESS_AUTO: the core's progress threads, beyond fi_efa(7) */
	ret = kfab_match_threads(&t->who, d, t->threading, &m->k);
	if (ret)
		return ret;
	if (d->resource_mgmt != FI_RM_UNSPEC &&
	    d->resource_mgmt != t->resource_mgmt)
		return nomatch(t, "resource_mgmt %d: ours is %s", (int)d->resource_mgmt,
			       t->resource_mgmt == FI_RM_ENABLED ?
			       "FI_RM_ENABLED" : "FI_RM_DISABLED");
	switch (d->av_type) {
	case FI_AV_UNSPEC:
	case FI_AV_MAP:		/* efa_getinfo() warns */
	case FI_AV_TABLE:
		break;
	default:
		return nomatch(t, "av_type %d: FI_AV_TABLE", (int)d->av_type);
	}
	m->ep_cnt = d->ep_cnt;
	m->mr_cnt = d->mr_cnt;
	return match_mr_mode(version, d->mr_mode, m);
}

/* A source names a device: its gid, qpn and qkey 0. */
static int src_check(const struct efa_type *t, const char *what,
		     const struct efa_addr *a)
{
	uint64_t reserved;

	memcpy(&reserved, a->reserved, sizeof(reserved));
	if (a->qpn || a->qkey || reserved)
		return nomatch(t, "%s: a source address names a device alone (qpn 0, qkey 0): the device assigns both",
			       what);
	return 0;
}

static int match_hint_addr(const struct efa_type *t, bool src,
			   uint32_t format, const void *addr, size_t len,
			   bool *have, struct efa_addr *out)
{
	const char *what = src ? "src_addr" : "dest_addr";
	uint64_t key;

	if (!addr)
		return 0;
	if ((format != FI_FORMAT_UNSPEC && format != FI_ADDR_EFA) ||
	    len != EFA_ADDRLEN)
		return nomatch(t, "%s is not an FI_ADDR_EFA endpoint name (%zu bytes)",
			       what, len);
	memcpy(out, addr, EFA_ADDRLEN);
	if (src ? src_check(t, what, out) : efa_addr_key(addr, &key))
		return nomatch(t, "%s is not a valid FI_ADDR_EFA name", what);
	*have = true;
	return 0;
}

static int match_addrs(const char *node, uint64_t flags,
		       const struct fi_info *hints, struct efa_match *m)
{
	const struct efa_type *t = m->t;
	struct efa_addr name;
	uint64_t key;
	int ret;

	m->src = false;
	m->dest = false;
	if (hints) {
		ret = kfab_match_addr_format(&t->who, hints->addr_format,
					     FI_ADDR_EFA, "FI_ADDR_EFA");
		if (!ret)
			ret = match_hint_addr(t, true, hints->addr_format,
					      hints->src_addr,
					      hints->src_addrlen, &m->src,
					      &m->src_addr);
		if (!ret)
			ret = match_hint_addr(t, false, hints->addr_format,
					      hints->dest_addr,
					      hints->dest_addrlen, &m->dest,
					      &m->dest_addr);
		if (ret)
			return ret;
	}
	if (!node)
		return 0;
	if (efa_addr_parse(node, (uint8_t *)&name)) {
		if (!(flags & FI_SOURCE))
			return nomatch(t, "node %s is not an " EFA_ADDR_PREFIX "[<gid>]:<qpn>:<qkey> address: exchange endpoint names out of band and insert them in the AV",
				       node);
		kfab_log(KFAB_LOG_INFO,
			 "kfab_efa: source node %s is this host: ignored",
			 node);
		return 0;
	}
	if (flags & FI_SOURCE) {
		ret = src_check(t, node, &name);
		if (ret)
			return ret;
		m->src_addr = name;
		m->src = true;
	} else {
		if (efa_addr_key(&name, &key))
			return nomatch(t, "node %s: a destination needs a qpn and a qkey",
				       node);
		m->dest_addr = name;
		m->dest = true;
	}
	return 0;
}

static int match_hints(uint32_t version, const char *node, uint64_t flags,
		       const struct fi_info *hints, const char *fabric_name,
		       struct efa_match *m)
{
	const struct efa_type *t = m->t;
	int ret;

	memset(m, 0, sizeof(*m));
	m->t = t;
	/* the endpoint type first: the other type's is no match, unlogged */
	ret = hints ? match_ep(hints->ep_attr, m) : 0;
	if (!ret)
		ret = kfab_match_hints(&t->who, hints, fabric_name, &t->caps,
				       &t->limits, &m->k);
	if (!ret)
		ret = match_mode(version, hints, m);
	if (ret)
		return ret;
	sides_asked(hints, m);
	if (hints)
		m->asked_caps = hints->caps |
				(hints->rx_attr ? hints->rx_attr->caps : 0) |
				(hints->domain_attr ?
				 hints->domain_attr->caps : 0);
	ret = match_domain(version, hints ? hints->domain_attr : NULL, m);
	if (!ret)
		ret = match_addrs(node, flags, hints, m);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fi_info */

struct efa_sizes {
	size_t tx, rx, max_msg;
	size_t zcpy_max;		/* one packet; 0: FI_EFA_USE_ZCPY_RX=0 */
};

static void dev_sizes(const struct efa_params *p, const struct efa_type *t,
		      const struct efa_dev_info *di, struct efa_sizes *s)
{
	s->tx = p->tx_size ? p->tx_size : di->rx_entries;
	s->rx = p->rx_size ? p->rx_size :
		t->type == FI_EP_RDM ? EFA_RDM_RX_SIZE_DEFAULT :
		di->rx_entries;
	s->max_msg = SIZE_MAX;
	s->zcpy_max = 0;
	if (t->type == FI_EP_RDM && p->use_zcpy_rx)
		s->zcpy_max = p->mtu_size && p->mtu_size < di->mtu ?
			      p->mtu_size : di->mtu;
	if (t->type == FI_EP_DGRAM) {
		s->max_msg = di->mtu;
		if (p->mtu_size && p->mtu_size < di->mtu)
			s->max_msg = p->mtu_size;
	}
}

/* Whether @di is listed for @m: Active, asked for, big enough. */
static bool dev_wanted(const struct efa_match *m, const struct efa_dev_info *di,
		       const struct efa_sizes *s)
{
	if (!di->active ||
	    (m->device >= 0 && di->device != (unsigned int)m->device) ||
	    (m->src && memcmp(m->src_addr.gid, di->gid, KFAB_EFA_GID_LEN)))
		return false;
	if (m->tx_size > s->tx || m->rx_size > s->rx ||
	    m->max_msg_size > s->max_msg || m->ep_cnt > di->max_qps ||
	    m->mr_cnt > di->max_mrs) {
		nomatch(m->t, "efa%u: tx size %zu (%zu), rx size %zu (%zu), max_msg_size %zu (%zu), ep_cnt %zu (%u), mr_cnt %zu (%u)",
			di->device, m->tx_size, s->tx, m->rx_size, s->rx,
			m->max_msg_size, s->max_msg, m->ep_cnt, di->max_qps,
			m->mr_cnt, di->max_mrs);
		return false;
	}
	return true;
}

/* The hints ask for what efa_rdm_zcpy_check() needs, FI_MULTI_RECV aside. */
static bool zcpy_asked(const struct efa_match *m, const struct efa_sizes *s)
{
	const uint64_t no = FI_TAGGED | FI_DIRECTED_RECV | FI_MULTI_RECV |
			    FI_RMA | FI_ATOMIC;

	return s->zcpy_max && !(m->asked_caps & no) && (m->k.caps & FI_MSG) &&
	       !((m->tx_order | m->rx_order) & FI_ORDER_SAS) &&
	       m->max_msg_size && m->max_msg_size <= s->zcpy_max &&
	       !(m->k.tx_op_flags & FI_DELIVERY_COMPLETE);
}

static struct fi_info *info_new(const struct efa_match *m,
				const struct efa_dev_info *di,
				const struct efa_sizes *s,
				const char *fabric_name)
{
	const struct efa_type *t = m->t;
	struct kfab_match k = m->k;
	struct efa_addr src;
	struct fi_info *fi;
	char name[32];

	if (zcpy_asked(m, s))
		k.caps &= ~FI_MULTI_RECV;
	efa_name_set(&src, di->gid, 0, 0);
	snprintf(name, sizeof(name), "efa%u-%s", di->device, t->suffix);
	fi = kfab_info_new(&k, &t->caps, FI_ADDR_EFA, EFA_ADDRLEN, &src,
			   m->dest ? &m->dest_addr : NULL, name, fabric_name);
	if (!fi)
		return NULL;
	fi->mode = m->mode;

	fi->tx_attr->mode = m->mode;
	fi->tx_attr->msg_order = m->tx_order;
	fi->tx_attr->inject_size = t->limits.inject_size;
	fi->tx_attr->size = s->tx;
	fi->tx_attr->rma_iov_limit = t->limits.rma_iov_limit;
	fi->tx_attr->tclass = m->tclass;

	fi->rx_attr->mode = m->mode;
	fi->rx_attr->msg_order = m->rx_order;
	fi->rx_attr->size = s->rx;

	fi->ep_attr->type = t->type;
	fi->ep_attr->protocol = FI_PROTO_EFA;
	fi->ep_attr->protocol_version = t->proto_version;
	fi->ep_attr->max_msg_size = m->max_msg_size ? m->max_msg_size :
				    s->max_msg;
	fi->ep_attr->msg_prefix_size = t->msg_prefix_size;
	if (t->type == FI_EP_RDM)
		fi->ep_attr->mem_tag_format = m->mem_tag_format ?
			m->mem_tag_format : KFAB_TAG_FORMAT_GENERIC;

	fi->domain_attr->resource_mgmt = t->resource_mgmt;
	fi->domain_attr->av_type = FI_AV_TABLE;
	fi->domain_attr->mr_key_size = EFA_MR_KEY_SIZE;
	fi->domain_attr->cq_data_size = t->limits.cq_data_size;
	fi->domain_attr->cq_cnt = EFA_CQ_CNT;
	fi->domain_attr->ep_cnt = di->max_qps;
	fi->domain_attr->tx_ctx_cnt = di->max_qps;
	fi->domain_attr->rx_ctx_cnt = di->max_qps;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->cntr_cnt = t->limits.cntr_cnt;
	fi->domain_attr->mr_cnt = di->max_mrs;
	return fi;
}

int efa_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct efa_dev_info devs[EFA_MAX_DEVICES];
	struct fi_info *head = NULL, **tail = &head, *fi;
	struct efa_params p;
	struct efa_match m;
	struct efa_sizes s;
	const char *fabric_name;
	int n, i, active = 0, ret;
	size_t k;

	(void)service;
	*info = NULL;
	if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_RDM &&
	    hints->ep_attr->type != FI_EP_DGRAM)
		return nomatch(NULL, "endpoint type %d: FI_EP_RDM or FI_EP_DGRAM",
			       (int)hints->ep_attr->type);
	ret = kfab_match_layering(&efa_who, flags, hints);
	if (ret)
		return ret;
	if (hints && hints->domain_attr &&
	    hints->domain_attr->av_type == FI_AV_MAP)
		kfab_log(KFAB_LOG_WARN,
			 "kfab_efa: FI_AV_MAP is deprecated: FI_AV_TABLE instead (fi_efa(7))");
	ret = efa_params_load(&p);
	if (ret)
		return ret;
	fabric_name = kfab_backend_fabric_name(p.backend);
	n = efa_devices_get(&p, devs, EFA_MAX_DEVICES);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		active += devs[i].active;
	if (!active)
		return nomatch(NULL, "no Active EFA device on fabric %s (%d listed; FI_EFA_IFACE, FI_KFAB_BACKEND)",
			       fabric_name, n);
	for (k = 0; k < sizeof(efa_types) / sizeof(efa_types[0]); k++) {
		m.t = efa_types[k];
		if (match_hints(version, node, flags, hints, fabric_name, &m))
			continue;
		for (i = 0; i < n; i++) {
			dev_sizes(&p, m.t, &devs[i], &s);
			if (!dev_wanted(&m, &devs[i], &s))
				continue;
			fi = info_new(&m, &devs[i], &s, fabric_name);
			if (!fi) {
				kfab_log(KFAB_LOG_WARN,
					 "kfab_efa: fi_getinfo: out of memory");
				fi_freeinfo(head);
				return -FI_ENOMEM;
			}
			*tail = fi;
			tail = &fi->next;
		}
	}
	if (!head)
		return nomatch(NULL, "no Active device of %d on fabric %s has the endpoint type, domain, source address or sizes asked for",
			       n, fabric_name);
	kfab_log(KFAB_LOG_INFO, "kfab_efa: fabric %s, %d device(s), %d Active",
		 fabric_name, n, active);
	*info = head;
	return 0;
}

