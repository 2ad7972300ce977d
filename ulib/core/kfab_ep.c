// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the base of every endpoint (struct kfab_ep_ops in kfab_prov.h):
 * fi_ep_bind() of AVs, CQs, counters and EQs, fi_enable()'s checks,
 * fi_control()'s commands, fi_close() and the fi_ops_ep calls, for
 * endpoints, scalable endpoints and their contexts alike, over the
 * struct kfab_ep each provider embeds and its hooks.
 */
#include <stdio.h>
#include <string.h>

#include "kfab_msg.h"
#include "kfab_prov.h"
#include "kfab_rma.h"
#include "kfab_rxq.h"

static const uint64_t cntr_bit[KFAB_CNTR_SLOTS] = {
	[KFAB_CNTR_SEND] = FI_SEND,
	[KFAB_CNTR_READ] = FI_READ,
	[KFAB_CNTR_WRITE] = FI_WRITE,
	[KFAB_CNTR_RECV] = FI_RECV,
	[KFAB_CNTR_REMOTE_READ] = FI_REMOTE_READ,
	[KFAB_CNTR_REMOTE_WRITE] = FI_REMOTE_WRITE,
};

static const char *const cntr_name[KFAB_CNTR_SLOTS] = {
	"FI_SEND", "FI_READ", "FI_WRITE", "FI_RECV", "FI_REMOTE_READ",
	"FI_REMOTE_WRITE",
};

static const struct kfab_ep_ops *ep_ops_of(struct fid *fid)
{
	return kfab_container_of(fid->ops, struct kfab_ep_ops, ops);
}

static struct kfab_ep *ep_of(struct fid *fid)
{
	return kfab_ep_of(kfab_container_of(fid, struct fid_ep, fid));
}

/*
 * A context's AV is its endpoint's, and its receive CQ optional: a
 * receive context may be the target of RMA and atomics only.
 */
static bool is_ctx(const struct kfab_ep *ep)
{
	return ep->fid.fid.fclass == FI_CLASS_TX_CTX ||
	       ep->fid.fid.fclass == FI_CLASS_RX_CTX;
}

static const struct kfab_provider *ep_kp(const struct kfab_ep *ep)
{
	return ep->domain->kp;
}

void kfab_ep_init(struct kfab_ep *ep, struct kfab_domain *dom,
		  struct kfab_progress *prog, struct kfab_ep_side *tx,
		  struct kfab_ep_side *rx, const void *name, size_t namelen,
		  const struct fi_info *info)
{
	ep->domain = dom;
	ep->prog = prog;
	ep->side[0] = tx;
	ep->side[1] = rx;
	ep->name = name;
	ep->namelen = namelen;
	if (info && tx && info->tx_attr)
		tx->op_flags = info->tx_attr->op_flags;
	if (info && rx && info->rx_attr)
		rx->op_flags = info->rx_attr->op_flags;
}

/* The counter slot @i (enum kfab_ep_cntr) of @ep, NULL: none. */
static struct kfab_cntr **cntr_slot(const struct kfab_ep *ep, int i)
{
	struct kfab_ep_side *side = ep->side[i / 3];

	if (!side)
		return NULL;
	return i % 3 ? &side->rma_cntr[i % 3 - 1] : &side->cntr;
}

/* A CQ for @flags' sides; an object with one side binds it, flags or not. */
static int bind_cq(struct kfab_ep *ep, struct kfab_cq *cq, uint64_t flags)
{
	struct kfab_ep_side *tx = ep->side[0], *rx = ep->side[1];
	uint64_t sides = (tx ? FI_TRANSMIT : 0) | (rx ? FI_RECV : 0);
	int ret;

	if (flags & ~(sides | FI_SELECTIVE_COMPLETION)) {
		kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
			  "fi_ep_bind(CQ): flags %#llx: use %s and FI_SELECTIVE_COMPLETION\n",
			  (unsigned long long)flags,
			  sides == FI_TRANSMIT ? "FI_TRANSMIT" :
			  sides == FI_RECV ? "FI_RECV" : "FI_TRANSMIT, FI_RECV");
		return -FI_EBADFLAGS;
	}
	if (sides != (FI_TRANSMIT | FI_RECV))
		flags |= sides;
	ret = kfab_cq_bind_sides(cq, ep->prog, tx ? &tx->cq : NULL,
				 rx ? &rx->cq : NULL, flags);
	if (ret)
		return ret;
	for (int i = 0; i < 2; i++)
		if ((flags & (i ? FI_RECV : FI_TRANSMIT)) && ep->side[i])
			ep->side[i]->selective =
				flags & FI_SELECTIVE_COMPLETION;
	return 0;
}

static int bind_cntr(struct kfab_ep *ep, struct kfab_cntr *cntr,
		     uint64_t flags)
{
	struct kfab_cntr **slot[KFAB_CNTR_SLOTS];
	char ok[128] = "";
	uint64_t okbits = 0;
	int n = 0, ret;

	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		if (!cntr_slot(ep, i))
			continue;
		okbits |= cntr_bit[i];
		snprintf(ok + strlen(ok), sizeof(ok) - strlen(ok), "%s%s",
			 *ok ? ", " : "", cntr_name[i]);
	}
	if (!flags || (flags & ~okbits)) {
		kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
			  "fi_ep_bind(counter): flags %#llx: use %s\n",
			  (unsigned long long)flags, ok);
		return -FI_EBADFLAGS;
	}
	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		if (!(flags & cntr_bit[i]))
			continue;
		if (*cntr_slot(ep, i)) {
			kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
				  "fi_ep_bind(counter): a counter is already bound for %s\n",
				  cntr_name[i]);
			return -FI_EINVAL;
		}
		slot[n++] = cntr_slot(ep, i);
	}
	for (int i = 0; i < n; i++) {
		ret = kfab_cntr_attach(cntr, ep->prog);
		if (ret) {
			while (i--) {
				kfab_cntr_detach(cntr, ep->prog);
				*slot[i] = NULL;
			}
			return ret;
		}
		*slot[i] = cntr;
	}
	return 0;
}

static int bind_obj(struct kfab_ep *ep, struct fid *bfid, uint64_t flags)
{
	const struct kfab_provider *kp = ep_kp(ep);

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (is_ctx(ep)) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_ep_bind: bind the AV to the scalable endpoint, not to its contexts\n");
			return -FI_EINVAL;
		}
		if (ep->av) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_ep_bind: an AV is already bound\n");
			return -FI_EINVAL;
		}
		ep->av = kfab_container_of(bfid, struct kfab_av, av_fid.fid);
		ep->av->ref++;
		return 0;
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
		if (!ep->side[0] && !ep->side[1]) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_scalable_ep_bind: bind CQs and counters to the contexts (fi_tx_context, fi_rx_context)\n");
			return -FI_EINVAL;
		}
		if (bfid->fclass == FI_CLASS_CQ)
			return bind_cq(ep, kfab_container_of(bfid,
							     struct kfab_cq,
							     cq_fid.fid),
				       flags);
		return bind_cntr(ep, kfab_container_of(bfid, struct kfab_cntr,
						       cntr_fid.fid),
				 flags);
	case FI_CLASS_EQ:
		/* connectionless: no events to report */
		return 0;
	default:
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_ep_bind: cannot bind an object of class %zu to an endpoint\n",
			  bfid->fclass);
		return -FI_ENOSYS;
	}
}

int kfab_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	int ret;

	kfab_lock(&ep->domain->lock);
	if (ep->enabled) {
		kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
			  "fi_ep_bind: the endpoint is enabled: bind before fi_enable\n");
		ret = -FI_EOPBADSTATE;
	} else {
		ret = ops->bind_check ? ops->bind_check(fid, bfid, flags) : 0;
		if (!ret)
			ret = bind_obj(ep, bfid, flags);
	}
	kfab_unlock(&ep->domain->lock);
	return ret;
}

/*
 * FI_GETOPSFLAG or FI_SETOPSFLAG (@command) of the side *@flags names.
 * -FI_EINVAL when @flags names none of @ep's sides.
 */
static int ep_opsflag(struct kfab_ep *ep, int command, uint64_t *flags)
{
	struct kfab_ep_side *side;
	uint64_t bit;

	if (flags && ep->side[0] && (*flags & FI_TRANSMIT)) {
		bit = FI_TRANSMIT;
		side = ep->side[0];
	} else if (flags && ep->side[1] && (*flags & FI_RECV)) {
		bit = FI_RECV;
		side = ep->side[1];
	} else {
		return -FI_EINVAL;
	}
	if (command == FI_GETOPSFLAG)
		*flags = side->op_flags;
	else
		side->op_flags = *flags & ~bit;
	return 0;
}

/* Enabling an endpoint or a context enables its sides. */
static int ep_enable(const struct kfab_ep_ops *ops, struct fid *fid,
		     struct kfab_ep *ep)
{
	const struct kfab_provider *kp = ep_kp(ep);
	bool tx = ep->side[0] && !ep->side[0]->cq;
	bool rx = ep->side[1] && !ep->side[1]->cq && !is_ctx(ep);
	int ret;

	if (ep->enabled)
		return 0;
	if (!is_ctx(ep) && !ep->av) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_enable: bind an address vector first\n");
		return -FI_ENOAV;
	}
	if (tx || rx) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "fi_enable: bind a CQ for %s first\n",
			  tx && rx ? "FI_TRANSMIT and for FI_RECV" :
			  tx ? "FI_TRANSMIT" : "FI_RECV");
		return -FI_ENOCQ;
	}
	ret = ops->enable ? ops->enable(fid) : 0;
	if (ret)
		return ret;
	ep->enabled = true;
	for (int i = 0; i < 2; i++)
		if (ep->side[i])
			ep->side[i]->enabled = true;
	return 0;
}

int kfab_ep_control(struct fid *fid, int command, void *arg)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	int ret;

	kfab_lock(&ep->domain->lock);
	switch (command) {
	case FI_ENABLE:
		ret = ep_enable(ops, fid, ep);
		break;
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		ret = ep_opsflag(ep, command, arg);
		break;
	default:
		kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
			  "fi_control: command %d is not supported on an endpoint (FI_ENABLE, FI_GETOPSFLAG, FI_SETOPSFLAG)\n",
			  command);
		ret = -FI_ENOSYS;
		break;
	}
	kfab_unlock(&ep->domain->lock);
	return ret;
}

/* Drops every CQ, counter and AV binding of @ep; lock held. */
static void kfab_ep_unbind(struct kfab_ep *ep)
{
	for (int i = 0; i < 2; i++) {
		struct kfab_ep_side *side = ep->side[i];

		if (!side)
			continue;
		if (side->cq) {
			kfab_cq_detach(side->cq, ep->prog);
			side->cq = NULL;
		}
		side->enabled = false;
	}
	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		struct kfab_cntr **slot = cntr_slot(ep, i);

		if (slot && *slot) {
			kfab_cntr_detach(*slot, ep->prog);
			*slot = NULL;
		}
	}
	if (ep->av) {
		ep->av->ref--;
		ep->av = NULL;
	}
	ep->enabled = false;
}

int kfab_ep_close(struct fid *fid)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	struct kfab_domain *dom = ep->domain;
	bool ctx = is_ctx(ep);
	int ret;

	kfab_lock(&dom->lock);
	ret = ops->close ? ops->close(fid) : 0;
	if (!ret) {
		kfab_ep_unbind(ep);
		/* an endpoint holds its domain, a context its endpoint */
		if (!ctx)
			dom->ref--;
		if (ops->free)
			ops->free(fid);
	}
	kfab_unlock(&dom->lock);
	return ret;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	const struct kfab_ep *ep = ep_of(fid);
	size_t len = *addrlen;

	*addrlen = ep->namelen;
	if (len < ep->namelen)
		return -FI_ETOOSMALL;
	memcpy(addr, ep->name, ep->namelen);
	return 0;
}

struct fi_ops_cm kfab_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = kfab_no_setname,
	.getname = ep_getname,
	.getpeer = kfab_no_getpeer,
	.connect = kfab_no_connect,
	.listen = kfab_no_listen,
	.accept = kfab_no_accept,
	.reject = kfab_no_reject,
	.shutdown = kfab_no_shutdown,
	.join = kfab_no_join,
};

/* ------------------------------------------------------------------ */
/* fi_ops_ep: the core's, over the provider's hooks */

static ssize_t ep_cancel(fid_t fid, void *context)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	ssize_t ret;

	kfab_lock(&ep->domain->lock);
	ret = ops->cancel ? ops->cancel(fid, context) :
	      ep->rxq ? kfab_rxq_cancel(ep->rxq, context) : -FI_ENOENT;
	kfab_unlock(&ep->domain->lock);
	return ret;
}

static int no_opt(const struct kfab_ep *ep, const char *call, int level,
		  int name)
{
	kfab_info(ep_kp(ep), FI_LOG_EP_CTRL,
		  "%s: option %d of level %d: not one of this endpoint's\n",
		  call, name, level);
	return -FI_ENOPROTOOPT;
}

int kfab_opt_get(void *val, size_t *len, const void *src, size_t size)
{
	size_t room = *len;

	*len = size;
	if (room < size)
		return -FI_ETOOSMALL;
	memcpy(val, src, size);
	return 0;
}

static int ep_getopt(fid_t fid, int level, int name, void *val,
		     size_t *len)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	int ret;

	if (level != FI_OPT_ENDPOINT || !val || !len ||
	    (!ops->getopt && !(name == FI_OPT_MIN_MULTI_RECV && ep->rxq)))
		return no_opt(ep, "fi_getopt", level, name);
	kfab_lock(&ep->domain->lock);
	if (name == FI_OPT_MIN_MULTI_RECV && ep->rxq)
		ret = kfab_opt_get(val, len, &ep->rxq->min_multi_recv,
				   sizeof(ep->rxq->min_multi_recv));
	else
		ret = ops->getopt(fid, name, val, len);
	kfab_unlock(&ep->domain->lock);
	return ret;
}

static int ep_setopt(fid_t fid, int level, int name, const void *val,
		     size_t len)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep *ep = ep_of(fid);
	int ret;

	if (level != FI_OPT_ENDPOINT ||
	    (!ops->setopt && !(name == FI_OPT_MIN_MULTI_RECV && ep->rxq)))
		return no_opt(ep, "fi_setopt", level, name);
	kfab_lock(&ep->domain->lock);
	if (name != FI_OPT_MIN_MULTI_RECV || !ep->rxq) {
		ret = ops->setopt(fid, name, val, len);
	} else if (!val || len != sizeof(size_t)) {
		kfab_warn(ep_kp(ep), FI_LOG_EP_CTRL,
			  "fi_setopt(FI_OPT_MIN_MULTI_RECV): a size_t\n");
		ret = -FI_EINVAL;
	} else {
		ep->rxq->min_multi_recv = *(const size_t *)val;
		ret = 0;
	}
	kfab_unlock(&ep->domain->lock);
	return ret;
}

/* fi_tx_context() (@tx) or fi_rx_context() through the ctx_open hook. */
static int ep_ctx(struct fid_ep *fid, bool tx, int index,
		  const struct fi_tx_attr *txa, const struct fi_rx_attr *rxa,
		  struct fid_ep **ctx, void *context)
{
	const struct kfab_ep_ops *ops = ep_ops_of(&fid->fid);
	const struct kfab_provider *kp = ep_kp(kfab_ep_of(fid));

	if (ops->ctx_open)
		return ops->ctx_open(fid, tx, index, txa, rxa, ctx, context);
	kfab_warn(kp, FI_LOG_EP_CTRL,
		  "%s: not a scalable endpoint: %s opens those with fi_scalable_ep(), if at all\n",
		  tx ? "fi_tx_context" : "fi_rx_context", kp->name);
	return -FI_ENOSYS;
}

static int ep_tx_ctx(struct fid_ep *fid, int index, struct fi_tx_attr *attr,
		     struct fid_ep **ctx, void *context)
{
	return ep_ctx(fid, true, index, attr, NULL, ctx, context);
}

static int ep_rx_ctx(struct fid_ep *fid, int index, struct fi_rx_attr *attr,
		     struct fid_ep **ctx, void *context)
{
	return ep_ctx(fid, false, index, NULL, attr, ctx, context);
}

static struct fi_ops_ep ep_fi_ops_ep = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_tx_ctx,
	.rx_ctx = ep_rx_ctx,
	.rx_size_left = kfab_no_size_left,
	.tx_size_left = kfab_no_size_left,
};

void kfab_ep_fid_init(struct kfab_ep *ep, size_t fclass, void *context,
		      struct kfab_ep_ops *ops, struct kfab_msg_ops *msg,
		      struct fi_ops_atomic *atomic)
{
	struct fid_ep *fid = &ep->fid;

	kfab_fid_init(&fid->fid, fclass, context, &ops->ops);
	fid->ops = &ep_fi_ops_ep;
	fid->cm = &kfab_ep_cm_ops;
	fid->msg = &msg->msg;
	fid->tagged = &msg->tagged;
	fid->rma = &kfab_rma_fi_ops;
	fid->atomic = atomic;
}
