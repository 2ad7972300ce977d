// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the base of every endpoint (struct kfab_ep_ops in kfab_prov.h):
 * fi_ep_bind() of AVs, CQs, counters and EQs, fi_enable()'s checks,
 * fi_control()'s commands and fi_close(), for endpoints, scalable
 * endpoints and their contexts alike, over the provider's view of where
 * its bindings live.
 */
#include <stdio.h>
#include <string.h>

#include "kfab_msg.h"
#include "kfab_prov.h"
#include "kfab_rma.h"

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

static const struct kfab_provider *base_kp(const struct kfab_ep_base *b)
{
	return b->domain->kp;
}

const struct kfab_provider *kfab_ep_kp(struct fid *fid)
{
	struct kfab_ep_base b = { 0 };

	ep_ops_of(fid)->base(fid, &b);
	return base_kp(&b);
}

/* A CQ for @flags' sides; an object with one side binds it, flags or not. */
static int bind_cq(const struct kfab_ep_base *b, struct kfab_cq *cq,
		   uint64_t flags)
{
	uint64_t sides = (b->cq[0] ? FI_TRANSMIT : 0) |
			 (b->cq[1] ? FI_RECV : 0);
	bool sel = b->selective[0] || b->selective[1];
	int ret;

	if (flags & ~(sides | FI_SELECTIVE_COMPLETION) ||
	    ((flags & FI_SELECTIVE_COMPLETION) && !sel)) {
		kfab_warn(base_kp(b), FI_LOG_EP_CTRL,
			  "fi_ep_bind(CQ): flags %#llx: use %s%s\n",
			  (unsigned long long)flags,
			  sides == FI_TRANSMIT ? "FI_TRANSMIT" :
			  sides == FI_RECV ? "FI_RECV" : "FI_TRANSMIT, FI_RECV",
			  sel ? " and FI_SELECTIVE_COMPLETION" :
			  " (no FI_SELECTIVE_COMPLETION: every operation completes)");
		return -FI_EBADFLAGS;
	}
	if (sides != (FI_TRANSMIT | FI_RECV))
		flags |= sides;
	ret = kfab_cq_bind_sides(cq, b->prog, b->cq[0], b->cq[1], flags);
	if (ret)
		return ret;
	for (int i = 0; i < 2; i++)
		if ((flags & (i ? FI_RECV : FI_TRANSMIT)) && b->selective[i])
			*b->selective[i] = flags & FI_SELECTIVE_COMPLETION;
	return 0;
}

static int bind_cntr(const struct kfab_ep_base *b, struct kfab_cntr *cntr,
		     uint64_t flags)
{
	struct kfab_cntr **slot[KFAB_CNTR_SLOTS];
	char ok[128] = "";
	uint64_t okbits = 0;
	int n = 0, ret;

	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		if (!b->cntr[i])
			continue;
		okbits |= cntr_bit[i];
		snprintf(ok + strlen(ok), sizeof(ok) - strlen(ok), "%s%s",
			 *ok ? ", " : "", cntr_name[i]);
	}
	if (!flags || (flags & ~okbits)) {
		kfab_warn(base_kp(b), FI_LOG_EP_CTRL,
			  "fi_ep_bind(counter): flags %#llx: use %s\n",
			  (unsigned long long)flags, ok);
		return -FI_EBADFLAGS;
	}
	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		if (!(flags & cntr_bit[i]))
			continue;
		if (*b->cntr[i]) {
			kfab_warn(base_kp(b), FI_LOG_EP_CTRL,
				  "fi_ep_bind(counter): a counter is already bound for %s\n",
				  cntr_name[i]);
			return -FI_EINVAL;
		}
		slot[n++] = b->cntr[i];
	}
	for (int i = 0; i < n; i++) {
		ret = kfab_cntr_attach(cntr, b->prog);
		if (ret) {
			while (i--) {
				kfab_cntr_detach(cntr, b->prog);
				*slot[i] = NULL;
			}
			return ret;
		}
		*slot[i] = cntr;
	}
	return 0;
}

static int bind_obj(const struct kfab_ep_base *b, struct fid *bfid,
		    uint64_t flags)
{
	const struct kfab_provider *kp = base_kp(b);

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (!b->av) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_ep_bind: bind the AV to the scalable endpoint, not to its contexts\n");
			return -FI_EINVAL;
		}
		if (*b->av) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_ep_bind: an AV is already bound\n");
			return -FI_EINVAL;
		}
		*b->av = kfab_container_of(bfid, struct kfab_av, av_fid.fid);
		(*b->av)->ref++;
		return 0;
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
		if (!b->cq[0] && !b->cq[1]) {
			kfab_warn(kp, FI_LOG_EP_CTRL,
				  "fi_scalable_ep_bind: bind CQs and counters to the contexts (fi_tx_context, fi_rx_context)\n");
			return -FI_EINVAL;
		}
		if (bfid->fclass == FI_CLASS_CQ)
			return bind_cq(b, kfab_container_of(bfid,
							    struct kfab_cq,
							    cq_fid.fid),
				       flags);
		return bind_cntr(b, kfab_container_of(bfid, struct kfab_cntr,
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
	struct kfab_ep_base b = { 0 };
	int ret;

	ops->base(fid, &b);
	kfab_lock(&b.domain->lock);
	if (*b.enabled) {
		kfab_warn(base_kp(&b), FI_LOG_EP_CTRL,
			  "fi_ep_bind: the endpoint is enabled: bind before fi_enable\n");
		ret = -FI_EOPBADSTATE;
	} else {
		ret = ops->bind_check ? ops->bind_check(fid, bfid, flags) : 0;
		if (!ret)
			ret = bind_obj(&b, bfid, flags);
	}
	kfab_unlock(&b.domain->lock);
	return ret;
}

/*
 * FI_GETOPSFLAG or FI_SETOPSFLAG (@command) of the side *@flags names:
 * operation flags *@tx or *@rx, NULL for a side the object lacks.
 * -FI_EINVAL when @flags names none of its sides.
 */
static int ep_opsflag(int command, uint64_t *flags, uint64_t *tx,
		      uint64_t *rx)
{
	uint64_t side, *op_flags;

	if (flags && tx && (*flags & FI_TRANSMIT)) {
		side = FI_TRANSMIT;
		op_flags = tx;
	} else if (flags && rx && (*flags & FI_RECV)) {
		side = FI_RECV;
		op_flags = rx;
	} else {
		return -FI_EINVAL;
	}
	if (command == FI_GETOPSFLAG)
		*flags = *op_flags;
	else
		*op_flags = *flags & ~side;
	return 0;
}

static int ep_enable(const struct kfab_ep_ops *ops, struct fid *fid,
		     const struct kfab_ep_base *b)
{
	const struct kfab_provider *kp = base_kp(b);
	bool tx = b->cq[0] && !*b->cq[0];
	bool rx = b->cq[1] && !*b->cq[1] && !b->rx_cq_optional;
	int ret;

	if (*b->enabled)
		return 0;
	if (b->av && !*b->av) {
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
	if (!ret)
		*b->enabled = true;
	return ret;
}

int kfab_ep_control(struct fid *fid, int command, void *arg)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep_base b = { 0 };
	int ret;

	ops->base(fid, &b);
	kfab_lock(&b.domain->lock);
	switch (command) {
	case FI_ENABLE:
		ret = ep_enable(ops, fid, &b);
		break;
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		ret = ep_opsflag(command, arg, b.op_flags[0], b.op_flags[1]);
		break;
	default:
		kfab_warn(base_kp(&b), FI_LOG_EP_CTRL,
			  "fi_control: command %d is not supported on an endpoint (FI_ENABLE, FI_GETOPSFLAG, FI_SETOPSFLAG)\n",
			  command);
		ret = -FI_ENOSYS;
		break;
	}
	kfab_unlock(&b.domain->lock);
	return ret;
}

/* Drops every CQ, counter and AV binding of @b; lock held. */
static void kfab_ep_unbind(const struct kfab_ep_base *b)
{
	for (int i = 0; i < 2; i++) {
		if (b->cq[i] && *b->cq[i]) {
			kfab_cq_detach(*b->cq[i], b->prog);
			*b->cq[i] = NULL;
		}
	}
	for (int i = 0; i < KFAB_CNTR_SLOTS; i++) {
		if (b->cntr[i] && *b->cntr[i]) {
			kfab_cntr_detach(*b->cntr[i], b->prog);
			*b->cntr[i] = NULL;
		}
	}
	if (b->av && *b->av) {
		(*b->av)->ref--;
		*b->av = NULL;
	}
	*b->enabled = false;
}

int kfab_ep_close(struct fid *fid)
{
	const struct kfab_ep_ops *ops = ep_ops_of(fid);
	struct kfab_ep_base b = { 0 };
	struct kfab_domain *dom;
	int ret;

	ops->base(fid, &b);
	dom = b.domain;
	kfab_lock(&dom->lock);
	ret = ops->close ? ops->close(fid) : 0;
	if (!ret) {
		kfab_ep_unbind(&b);
		/* an endpoint holds its domain, a context its endpoint */
		if (b.av)
			dom->ref--;
		if (ops->free)
			ops->free(fid);
	}
	kfab_unlock(&dom->lock);
	return ret;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct kfab_ep_base b = { 0 };
	size_t len = *addrlen;

	ep_ops_of(fid)->base(fid, &b);
	*addrlen = b.namelen;
	if (len < b.namelen)
		return -FI_ETOOSMALL;
	memcpy(addr, b.name, b.namelen);
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

static int no_ctx(struct fid_ep *ep, const char *call)
{
	const struct kfab_provider *kp = kfab_ep_kp(&ep->fid);

	kfab_warn(kp, FI_LOG_EP_CTRL,
		  "%s: not a scalable endpoint: %s opens those with fi_scalable_ep(), if at all\n",
		  call, kp->name);
	return -FI_ENOSYS;
}

int kfab_no_tx_ctx(struct fid_ep *ep, int index, struct fi_tx_attr *attr,
		   struct fid_ep **ctx, void *context)
{
	(void)index, (void)attr, (void)ctx, (void)context;
	return no_ctx(ep, "fi_tx_context");
}

int kfab_no_rx_ctx(struct fid_ep *ep, int index, struct fi_rx_attr *attr,
		   struct fid_ep **ctx, void *context)
{
	(void)index, (void)attr, (void)ctx, (void)context;
	return no_ctx(ep, "fi_rx_context");
}

void kfab_ep_fid_init(struct fid_ep *ep, size_t fclass, void *context,
		      struct kfab_ep_ops *ops, struct fi_ops_ep *ep_ops,
		      struct kfab_msg_ops *msg, struct fi_ops_atomic *atomic)
{
	kfab_fid_init(&ep->fid, fclass, context, &ops->ops);
	ep->ops = ep_ops;
	ep->cm = &kfab_ep_cm_ops;
	ep->msg = &msg->msg;
	ep->tagged = &msg->tagged;
	ep->rma = &kfab_rma_fi_ops;
	ep->atomic = atomic;
}
