// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: scalable endpoints (fi_scalable_ep() in fi_endpoint(3)).
 *
 * A scalable endpoint is one endpoint (one HFI context, one name, one
 * set of connections and requests) with ep_attr->tx_ctx_cnt transmit and
 * rx_ctx_cnt receive contexts. Each context has its own CQ, counters,
 * operation flags and queue; each receive context its own matching. A
 * peer names a receive context with fi_rx_addr() over an AV opened with
 * rx_ctx_bits: the index travels in the rx byte of the header and picks
 * the context a message is matched in, and whose CQ and counters an RMA
 * target updates. A message for an index the endpoint lacks is dropped
 * (a rendezvous refused), an RMA operation refused with FI_EADDRNOTAVAIL.
 *
 * The contexts share the endpoint's HFI context rather than opening one
 * each: every call runs under the domain lock anyway, so more hardware
 * contexts would buy no parallelism, and one name keeps one AV entry per
 * peer.
 *
 * The scalable endpoint binds the AV and is enabled; data calls go to its
 * contexts, which bind CQs and counters and are enabled on their own. It
 * closes once its contexts are closed. Closing a context drops its posted
 * receives and the completions its operations in flight would write; a
 * receive context keeps queueing what arrives for it as unexpected until
 * it is opened again or the endpoint closes.
 */
#include <string.h>

#include "opx.h"

int opx_no_ctx(struct fid_ep *fid, bool tx)
{
	const struct kfab_provider *kp = opx_ep_of(fid)->domain->kp;

	if (fid->fid.fclass == FI_CLASS_SEP)
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "a data call on a scalable endpoint: post it to one of its %s contexts (fi_%s_context)\n",
			  tx ? "transmit" : "receive", tx ? "tx" : "rx");
	else
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "a %s call on a %s context\n",
			  tx ? "transmit" : "receive", tx ? "receive" : "transmit");
	return -FI_EOPNOTSUPP;
}

/* Its receive queue emptied, a context may be opened again. */
static int opx_ctx_close(struct fid *fid)
{
	struct fid_ep *efid = kfab_container_of(fid, struct fid_ep, fid);

	if (fid->fclass == FI_CLASS_TX_CTX) {
		opx_txc_of(efid)->open = false;
	} else {
		struct opx_rxc *rxc = opx_rxc_of(efid);

		kfab_rxq_flush(&rxc->rxq);
		rxc->open = false;
	}
	return 0;
}

static struct kfab_ep_ops opx_ctx_fi_ops = {
	.ops = KFAB_EP_FI_OPS(kfab_no_ops_open),
	.close = opx_ctx_close,
	.rma = opx_rma,
};

/*
 * Whether context @index of side @tx may be opened with @caps, at most
 * @iov_limit iovecs and @inject_size bytes inline: 0 or -FI_E*.
 */
static int opx_ctx_check(struct opx_ep *ep, bool tx, int index,
			 uint64_t caps, size_t iov_limit, size_t inject_size)
{
	const struct kfab_provider *kp = ep->domain->kp;
	const char *call = tx ? "fi_tx_context" : "fi_rx_context";
	uint32_t n = tx ? ep->ntxc : ep->nrxc;
	size_t inject_max = ep->info->tx_attr->inject_size;

	if (index < 0 || (uint32_t)index >= n) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "%s: index %d: the scalable endpoint has %u (ep_attr->%s_ctx_cnt)\n",
			  call, index, n, tx ? "tx" : "rx");
		return -FI_EINVAL;
	}
	if (tx ? ep->txc[index].open : ep->rxc[index].open) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "%s: context %d is open: close it first\n", call,
			  index);
		return -FI_EBUSY;
	}
	if (caps & ~ep->caps) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "%s: caps %#llx are not among the endpoint's %#llx\n",
			  call, (unsigned long long)caps,
			  (unsigned long long)ep->caps);
		return -FI_EINVAL;
	}
	if (iov_limit > KFAB_IOV_LIMIT || inject_size > inject_max) {
		kfab_warn(kp, FI_LOG_EP_CTRL,
			  "%s: iov_limit %zu (at most %d), inject_size %zu (at most %zu)\n",
			  call, iov_limit, KFAB_IOV_LIMIT, inject_size,
			  inject_max);
		return -FI_EINVAL;
	}
	return 0;
}

int opx_sep_ctx_open(struct fid_ep *fid, bool tx, int index,
		     const struct fi_tx_attr *txa,
		     const struct fi_rx_attr *rxa, struct fid_ep **out,
		     void *context)
{
	struct kfab_ep_side *side;
	struct kfab_ep *base;
	struct opx_ep *ep;
	bool *open;
	int ret;

	if (fid->fid.fclass != FI_CLASS_SEP)
		return -FI_ENOSYS;
	ep = to_opx_ep(fid);
	kfab_lock(&ep->domain->lock);
	ret = tx ? opx_ctx_check(ep, true, index, txa ? txa->caps : 0,
				 txa ? txa->iov_limit : 0,
				 txa ? txa->inject_size : 0) :
		   opx_ctx_check(ep, false, index, rxa ? rxa->caps : 0,
				 rxa ? rxa->iov_limit : 0, 0);
	if (!ret) {
		if (tx) {
			opx_txc_setup(&ep->txc[index],
				      txa ? txa : ep->info->tx_attr);
			base = &ep->txc[index].base;
			side = &ep->txc[index].side;
			open = &ep->txc[index].open;
		} else {
			opx_rxc_setup(&ep->rxc[index],
				      rxa ? rxa : ep->info->rx_attr);
			base = &ep->rxc[index].base;
			side = &ep->rxc[index].side;
			open = &ep->rxc[index].open;
		}
		opx_fid_init(ep, base, tx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX,
			     tx ? side : NULL, tx ? NULL : side,
			     &opx_ctx_fi_ops, context);
		*open = true;
		*out = &base->fid;
	}
	opx_ep_unlock(ep);
	return ret;
}
