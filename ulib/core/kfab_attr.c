// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: fi_getinfo() hint matching that kfab_opx and kfab_efa share
 * (kfab_attr.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>

#include "kfab_attr.h"
#include "kfab_log.h"
#include "kfab_prov.h"

#define KFAB_TX_COMPLETE	(FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
				 FI_DELIVERY_COMPLETE)
#define KFAB_RMA_ACCESS		(FI_READ | FI_WRITE | FI_REMOTE_READ | \
				 FI_REMOTE_WRITE)

int kfab_vnomatch(const struct kfab_attr_who *who, const char *fmt,
		  va_list ap)
{
	char msg[256];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	kfab_log(KFAB_LOG_INFO, "%s: no match%s%s: %s", who->prov,
		 who->type ? " for " : "", who->type ? who->type : "", msg);
	return -FI_ENODATA;
}

__attribute__((format(printf, 2, 3)))
static int kfab_nomatch(const struct kfab_attr_who *who, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kfab_vnomatch(who, fmt, ap);
	va_end(ap);
	return -FI_ENODATA;
}

static const char *caps_str(uint64_t caps, char *buf, size_t len)
{
	return fi_tostr_r(buf, len, &caps, FI_TYPE_CAPS);
}

int kfab_match_caps(const struct kfab_attr_who *who,
		    const struct fi_info *hints, const struct kfab_caps *c,
		    uint64_t *caps)
{
	uint64_t want = hints->caps;
	char buf[256];

	if (hints->domain_attr)
		want |= hints->domain_attr->caps;
	if (want & ~c->caps)
		return kfab_nomatch(who, "capabilities %s are not supported",
				    caps_str(want & ~c->caps, buf,
					     sizeof(buf)));
	if (hints->tx_attr && (hints->tx_attr->caps & ~c->tx_caps))
		return kfab_nomatch(who, "transmit capabilities %s are not supported",
				    caps_str(hints->tx_attr->caps & ~c->tx_caps,
					     buf, sizeof(buf)));
	if (hints->rx_attr && (hints->rx_attr->caps & ~c->rx_caps))
		return kfab_nomatch(who, "receive capabilities %s are not supported",
				    caps_str(hints->rx_attr->caps & ~c->rx_caps,
					     buf, sizeof(buf)));
	if (!want) {
		*caps = c->default_caps;
		return 0;
	}
	if (!(want & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)))
		want |= c->default_caps & (FI_MSG | FI_TAGGED);
	if ((want & (FI_MSG | FI_TAGGED)) && !(want & (FI_SEND | FI_RECV)))
		want |= FI_SEND | FI_RECV;
	if ((want & (FI_RMA | FI_ATOMIC)) && !(want & KFAB_RMA_ACCESS))
		want |= KFAB_RMA_ACCESS;
	*caps = want | (c->default_caps & FI_MULTI_RECV);
	return 0;
}

int kfab_match_proto(const struct kfab_attr_who *who,
		     const struct fi_ep_attr *ep, uint32_t proto,
		     const char *proto_name, uint32_t version)
{
	if (ep->protocol != FI_PROTO_UNSPEC && ep->protocol != proto)
		return kfab_nomatch(who, "protocol %u: only %s", ep->protocol,
				    proto_name);
	if (ep->protocol_version > version)
		return kfab_nomatch(who, "protocol version %u: ours is %u",
				    ep->protocol_version, version);
	return 0;
}

int kfab_match_xfer(const struct kfab_attr_who *who, const char *what,
		    uint64_t op_flags, uint64_t msg_order,
		    uint64_t comp_order, uint64_t ours_op_flags,
		    uint64_t ours_msg_order, size_t inject_size)
{
	if (op_flags & FI_SELECTIVE_COMPLETION)
		return kfab_nomatch(who, "%s op_flags: selective completion is not supported",
				    what);
	if ((op_flags & FI_INJECT) && !inject_size)
		return kfab_nomatch(who, "%s op_flags: FI_INJECT: no inject",
				    what);
	if (op_flags & ~ours_op_flags)
		return kfab_nomatch(who, "%s op_flags %#llx are not supported",
				    what, (unsigned long long)(op_flags &
							       ~ours_op_flags));
	if (msg_order & ~ours_msg_order)
		return kfab_nomatch(who, "%s msg_order %#llx: ours is %#llx",
				    what, (unsigned long long)msg_order,
				    (unsigned long long)ours_msg_order);
	if (comp_order)
		return kfab_nomatch(who, "%s comp_order %#llx: only FI_ORDER_NONE",
				    what, (unsigned long long)comp_order);
	return 0;
}

uint64_t kfab_tx_op_flags(uint64_t asked)
{
	return asked & KFAB_TX_COMPLETE ? asked : asked | FI_TRANSMIT_COMPLETE;
}

int kfab_match_threading(const struct kfab_attr_who *who,
			 enum fi_threading want, enum fi_threading ours,
			 enum fi_threading *got)
{
	*got = ours;
	switch (want) {
	case FI_THREAD_UNSPEC:
		return 0;
	case FI_THREAD_DOMAIN:
		*got = want;
		return 0;
	case FI_THREAD_SAFE:
	case FI_THREAD_FID:
	case FI_THREAD_ENDPOINT:
	case FI_THREAD_COMPLETION:
		if (ours != FI_THREAD_SAFE)
			return kfab_nomatch(who, "threading %d: only FI_THREAD_DOMAIN",
					    (int)want);
		*got = want;
		return 0;
	default:
		return kfab_nomatch(who, "threading %d", (int)want);
	}
}

int kfab_match_progress(const struct kfab_attr_who *who, const char *what,
			enum fi_progress want, enum fi_progress *got)
{
	*got = FI_PROGRESS_MANUAL;
	if (want == FI_PROGRESS_AUTO)
		*got = FI_PROGRESS_AUTO;
	else if (want != FI_PROGRESS_UNSPEC && want != FI_PROGRESS_MANUAL)
		return kfab_nomatch(who, "%s %d", what, (int)want);
	return 0;
}

int kfab_match_threads(const struct kfab_attr_who *who,
		       const struct fi_domain_attr *d, enum fi_threading ours,
		       struct kfab_match *m)
{
	int ret = kfab_match_threading(who, d->threading, ours,
				       &m->threading);

	if (!ret)
		ret = kfab_match_progress(who, "control_progress",
					  d->control_progress,
					  &m->control_progress);
	if (!ret)
		ret = kfab_match_progress(who, "data_progress",
					  d->data_progress, &m->data_progress);
	return ret;
}

int kfab_mr_legacy(uint32_t version, int hint)
{
	return FI_VERSION_LT(version, FI_VERSION(1, 5)) ||
	       (hint & (FI_MR_BASIC | FI_MR_SCALABLE));
}

int kfab_match_mr_mode(const struct kfab_attr_who *who, uint32_t version,
		       int hint, int need, int *got)
{
	int basic = need & KFAB_MR_BASIC_BITS;
	char buf[64];

	if (kfab_mr_legacy(version, hint)) {
		if (hint == FI_MR_UNSPEC &&
		    FI_VERSION_LT(version, FI_VERSION(1, 5)))
			hint = basic ? FI_MR_BASIC : FI_MR_SCALABLE;
		if (hint == FI_MR_BASIC ||
		    (hint == FI_MR_SCALABLE && !basic)) {
			*got = hint;
			return 0;
		}
		if (hint == FI_MR_SCALABLE)
			return kfab_nomatch(who, "mr_mode FI_MR_SCALABLE: the application must take FI_MR_BASIC");
		return kfab_nomatch(who, "mr_mode %#x: FI_MR_BASIC or FI_MR_SCALABLE, alone",
				    (unsigned int)hint);
	}
	if ((hint & need) != need)
		return kfab_nomatch(who, "mr_mode %#x: the application must take %s",
				    (unsigned int)hint,
				    fi_tostr_r(buf, sizeof(buf), &need,
					       FI_TYPE_MR_MODE));
	*got = need;
	return 0;
}

int kfab_match_fabric(const struct kfab_attr_who *who,
		      const struct fi_info *hints, const char *fabric_name)
{
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, fabric_name))
		return kfab_nomatch(who, "fabric %s: the fabric in use is %s (FI_KFAB_BACKEND)",
				    hints->fabric_attr->name, fabric_name);
	return 0;
}

int kfab_match_addr_format(const struct kfab_attr_who *who,
			   uint32_t hint, uint32_t format, const char *name)
{
	char buf[32];

	if (hint != FI_FORMAT_UNSPEC && hint != format)
		return kfab_nomatch(who, "address format %s: only %s",
				    fi_tostr_r(buf, sizeof(buf), &hint,
					       FI_TYPE_ADDR_FORMAT),
				    name);
	return 0;
}

int kfab_match_layering(const struct kfab_attr_who *who, uint64_t flags,
			const struct fi_info *hints)
{
	const char *names, *p, *end;
	size_t len = strlen(who->prov);

	if (!(flags & KFAB_OFI_CORE_PROV_ONLY))
		return 0;
	names = hints && hints->fabric_attr ? hints->fabric_attr->prov_name :
					      NULL;
	for (p = names; p && *p; p = *end ? end + 1 : end) {
		end = strchrnul(p, ';');
		if ((size_t)(end - p) == len && !strncasecmp(p, who->prov, len))
			return 0;
	}
	return kfab_nomatch(who, "a utility provider layers over %s only when the hints name it (prov_name \"%s;<utility>\")",
			    who->prov, who->prov);
}

static void *addr_dup(const void *addr, size_t len)
{
	void *p = malloc(len);

	if (p)
		memcpy(p, addr, len);
	return p;
}

struct fi_info *kfab_info_new(const struct kfab_match *m,
			      const struct kfab_caps *c, uint32_t addr_format,
			      size_t addrlen, const void *src,
			      const void *dest, const char *domain,
			      const char *fabric)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fi->caps = m->caps;
	fi->addr_format = addr_format;
	fi->src_addr = addr_dup(src, addrlen);
	if (!fi->src_addr)
		goto err;
	fi->src_addrlen = addrlen;
	if (dest) {
		fi->dest_addr = addr_dup(dest, addrlen);
		if (!fi->dest_addr)
			goto err;
		fi->dest_addrlen = addrlen;
	}

	fi->tx_attr->caps = m->caps & c->tx_caps;
	fi->tx_attr->op_flags = m->tx_op_flags;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->iov_limit = KFAB_IOV_LIMIT;

	fi->rx_attr->caps = m->caps & c->rx_caps;
	fi->rx_attr->op_flags = m->rx_op_flags;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->iov_limit = KFAB_IOV_LIMIT;

	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(domain);
	if (!fi->domain_attr->name)
		goto err;
	fi->domain_attr->threading = m->threading;
	fi->domain_attr->control_progress = m->control_progress;
	fi->domain_attr->data_progress = m->data_progress;
	fi->domain_attr->mr_mode = m->mr_mode;
	fi->domain_attr->mr_iov_limit = KFAB_IOV_LIMIT;
	fi->domain_attr->caps = m->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM);
	fi->domain_attr->max_err_data = KFAB_ERR_DATA_MAX;

	fi->fabric_attr->name = strdup(fabric);
	if (!fi->fabric_attr->name)
		goto err;
	fi->fabric_attr->prov_version = KFAB_PROV_VERSION;
	return fi;
err:
	fi_freeinfo(fi);
	return NULL;
}

/* @size within @max, 0: no limit. */
static bool size_fits(size_t size, size_t max)
{
	return !max || size <= max;
}

static int match_tx(const struct kfab_attr_who *who,
		    const struct fi_tx_attr *tx, const struct kfab_limits *l,
		    struct kfab_match *m)
{
	int ret;

	if (!tx)
		return 0;
	ret = kfab_match_xfer(who, "transmit", tx->op_flags, tx->msg_order,
			      tx->comp_order, l->tx_op_flags, l->msg_order,
			      l->inject_size);
	if (ret)
		return ret;
	if (tx->inject_size > l->inject_size ||
	    !size_fits(tx->size, l->tx_size) || tx->iov_limit > KFAB_IOV_LIMIT ||
	    tx->rma_iov_limit > l->rma_iov_limit)
		return kfab_nomatch(who, "transmit inject_size %zu, size %zu, iov_limit %zu, rma_iov_limit %zu: at most %zu, %zu (0: any), %d, %zu",
				    tx->inject_size, tx->size, tx->iov_limit,
				    tx->rma_iov_limit, l->inject_size,
				    l->tx_size, KFAB_IOV_LIMIT,
				    l->rma_iov_limit);
	m->tx_op_flags = kfab_tx_op_flags(tx->op_flags);
	return 0;
}

static int match_rx(const struct kfab_attr_who *who,
		    const struct fi_rx_attr *rx, const struct kfab_limits *l,
		    struct kfab_match *m)
{
	int ret;

	if (!rx)
		return 0;
	ret = kfab_match_xfer(who, "receive", rx->op_flags, rx->msg_order,
			      rx->comp_order, l->rx_op_flags, l->msg_order,
			      l->inject_size);
	if (ret)
		return ret;
	if (!size_fits(rx->size, l->rx_size) || rx->iov_limit > KFAB_IOV_LIMIT)
		return kfab_nomatch(who, "receive size %zu, iov_limit %zu: at most %zu (0: any), %d",
				    rx->size, rx->iov_limit, l->rx_size,
				    KFAB_IOV_LIMIT);
	m->rx_op_flags = rx->op_flags;
	return 0;
}

static int match_domain_limits(const struct kfab_attr_who *who,
			       const struct fi_domain_attr *d,
			       const struct kfab_limits *l)
{
	if (!d)
		return 0;
	if (d->mr_key_size > l->mr_key_size ||
	    d->cq_data_size > l->cq_data_size || d->cntr_cnt > l->cntr_cnt ||
	    d->max_ep_tx_ctx > l->ep_ctx || d->max_ep_rx_ctx > l->ep_ctx ||
	    d->max_ep_stx_ctx || d->max_ep_srx_ctx ||
	    d->mr_iov_limit > KFAB_IOV_LIMIT || d->cq_cnt > l->cq_cnt ||
	    !size_fits(d->mr_cnt, l->mr_cnt))
		return kfab_nomatch(who, "domain limits: mr_key_size %zu (%zu), cq_data_size %zu (%zu), cntr_cnt %zu (%zu), max_ep_tx/rx_ctx %zu/%zu (%zu), shared contexts %zu/%zu (0), mr_iov_limit %zu (%d), cq_cnt %zu (%zu), mr_cnt %zu (%zu, 0: any)",
				    d->mr_key_size, l->mr_key_size,
				    d->cq_data_size, l->cq_data_size,
				    d->cntr_cnt, l->cntr_cnt,
				    d->max_ep_tx_ctx, d->max_ep_rx_ctx,
				    l->ep_ctx, d->max_ep_stx_ctx,
				    d->max_ep_srx_ctx, d->mr_iov_limit,
				    KFAB_IOV_LIMIT, d->cq_cnt, l->cq_cnt,
				    d->mr_cnt, l->mr_cnt);
	if (d->auth_key_size)
		return kfab_nomatch(who, "authorization keys are not supported");
	return 0;
}

int kfab_match_hints(const struct kfab_attr_who *who,
		     const struct fi_info *hints, const char *fabric_name,
		     const struct kfab_caps *c, const struct kfab_limits *l,
		     struct kfab_match *m)
{
	int ret;

	m->tx_op_flags = FI_TRANSMIT_COMPLETE;
	m->rx_op_flags = 0;
	if (!hints) {
		m->caps = c->default_caps;
		return 0;
	}
	ret = kfab_match_fabric(who, hints, fabric_name);
	if (!ret)
		ret = kfab_match_caps(who, hints, c, &m->caps);
	if (!ret)
		ret = match_tx(who, hints->tx_attr, l, m);
	if (!ret)
		ret = match_rx(who, hints->rx_attr, l, m);
	if (!ret)
		ret = match_domain_limits(who, hints->domain_attr, l);
	return ret;
}
