// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: the endpoint object. fi_endpoint() assigns a hardware context
 * on the domain's unit (FI_OPX_UUID, FI_OPX_PKEY, FI_OPX_SL), so the name
 * is known at once; fi_enable() checks the bindings. Every data call takes
 * the domain lock (elided under FI_THREAD_DOMAIN with manual progress)
 * and runs the data path of opx_tx.c/opx_rx.c; progress runs from CQ and
 * counter reads and waits, from sends that find no room, and from the
 * CQs' progress threads under FI_PROGRESS_AUTO. Sleepers arm the queue
 * (opx_ep_arm) and poll the context's wakeup fd (kfab_wait.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>

#include "core/kfab_atomic.h"
#include "core/kfab_msg.h"
#include "opx.h"

/* ------------------------------------------------------------------ */
/* requests */

/* Inline: each caller's @q, known, folds the quota's NULL tests away. */
static kfab_always_inline struct opx_req *
opx_req_alloc(struct opx_ep *ep, enum opx_req_kind kind,
	      struct kfab_handle_quota *q)
{
	struct kfab_handle *h = kfab_handle_get_quota(&ep->reqs, q,
						      (uint8_t)kind);
	struct opx_req *req;

	if (!h)
		return NULL;
	req = kfab_container_of(h, struct opx_req, h);
	/* iov[] is not: only the iov_count entries set are ever read */
	memset(&req->rxr, 0,
	       offsetof(struct opx_req, iov) - offsetof(struct opx_req, rxr));
	memset(&req->iov_count, 0,
	       sizeof(*req) - offsetof(struct opx_req, iov_count));
	req->quota = q;
	kfab_list_init(&req->qlink);
	kfab_list_init(&req->rxr.te.link);
	return req;
}

struct opx_req *opx_req_tx(struct opx_txc *txc)
{
	struct opx_req *req = opx_req_alloc(txc->ep, OPX_REQ_TX, &txc->quota);

	if (req)
		req->txc = txc;
	return req;
}

struct opx_req *opx_req_rx(struct opx_rxc *rxc)
{
	struct opx_req *req = opx_req_alloc(rxc->ep, OPX_REQ_RX, &rxc->quota);

	if (req)
		req->rxc = rxc;
	return req;
}

struct opx_req *opx_req_get_internal(struct opx_ep *ep,
				     enum opx_req_kind kind)
{
	return opx_req_alloc(ep, kind, NULL);
}

void opx_req_put(struct opx_ep *ep, struct opx_req *req)
{
	req->conn = NULL;
	kfab_list_del(&req->qlink);
	kfab_handle_put_quota(&ep->reqs, req->quota, &req->h);
}

/* ------------------------------------------------------------------ */
/* progress */

static int opx_ep_progress(struct kfab_progress *core)
{
	struct opx_ep *ep = kfab_container_of(core, struct opx_ep, core);
	struct kfab_hfi_ring *ring = &ep->dev->ring;
	struct kfab_hfi_ring_entry ent;
	struct kfab_list *pos, *tmp;
	int n = 0;

	while (n < OPX_POLL_BUDGET && kfab_hfi_ring_poll(ring, &ent)) {
		opx_rel_recv(ep, &ent);
		kfab_hfi_ring_release(ring);
		n++;
	}
	kfab_list_for_each_safe(pos, tmp, &ep->busy)
		opx_conn_push(ep, kfab_list_entry(pos, struct opx_conn,
						  busy_link));
	if (n) {
		ep->idle_polls = 0;
	} else if (!kfab_list_empty(&ep->acks) &&
		   ++ep->idle_polls >= OPX_IDLE_ACK_POLLS) {
		ep->idle_polls = 0;
		opx_rel_flush_acks(ep);
	}
	/* the clock is read every OPX_TICK_GATE calls: it costs a poll's time */
	if (!kfab_list_empty(&ep->conns.all) &&
	    !(++ep->tick_gate & (OPX_TICK_GATE - 1)))
		opx_rel_tick(ep);
	return n;
}

/*
 * Before a sleep: the tick if due, the ACKs owed (a peer may wait on
 * them), then step 6 of the queue protocol. While sends are in flight
 * (packets queued or unacknowledged, a rendezvous waiting for its CTS)
 * the sleep is bounded by the reliability tick, which also finds dead
 * peers.
 */
static bool opx_ep_arm(struct kfab_progress *core, long *usec)
{
	struct opx_ep *ep = kfab_container_of(core, struct opx_ep, core);
	bool pending = !kfab_list_empty(&ep->busy);
	struct kfab_peer *peer;

	for (uint32_t i = 0; i < ep->ntxc; i++)
		if (ep->txc[i].quota.used)
			pending = true;
	if (!kfab_list_empty(&ep->conns.all))
		opx_rel_tick(ep);
	opx_rel_flush_acks(ep);
	kfab_peers_for_each(peer, &ep->conns) {
		const struct opx_conn *conn = opx_conn_of(peer);

		if (conn->psn_acked != conn->psn_next ||
		    !kfab_list_empty(&conn->deferred))
			pending = true;
	}
	*usec = pending ? (long)ep->params->reliability_usec_max : -1;
	return kfab_hfi_ring_arm(&ep->dev->ring);
}

static void opx_ep_drain(struct kfab_progress *core)
{
	struct opx_ep *ep = kfab_container_of(core, struct opx_ep, core);

	kfab_hfi_wake_drain(ep->dev);
}

/* ------------------------------------------------------------------ */
/* data calls: the core's fi_ops_msg and fi_ops_tagged (kfab_msg.h) */

static ssize_t opx_ep_send(struct fid_ep *fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t tag, uint64_t data, void *context,
			   uint64_t flags)
{
	ssize_t ret;
	struct opx_txc *txc = opx_txc_enter(fid, &ret);

	(void)desc;
	if (kfab_unlikely(!txc))
		return ret;
	ret = opx_send(txc, iov, count, dest, tag, data, context, flags);
	opx_ep_unlock(txc->ep);
	return ret;
}

static ssize_t opx_ep_recv(struct fid_ep *fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src,
			   uint64_t tag, uint64_t ignore, void *context,
			   uint64_t flags)
{
	ssize_t ret;
	struct opx_rxc *rxc = opx_rxc_enter(fid, &ret);

	(void)desc;
	if (kfab_unlikely(!rxc))
		return ret;
	if (kfab_unlikely(!rxc->side.cq)) {
		opx_ep_unlock(rxc->ep);
		kfab_warn(rxc->ep->domain->kp, FI_LOG_EP_DATA,
			  "a receive on a receive context with no CQ: bind one (FI_RECV) before fi_enable\n");
		return -FI_ENOCQ;
	}
	ret = opx_recv(rxc, iov, count, src, tag, ignore, context, flags);
	opx_ep_unlock(rxc->ep);
	return ret;
}

static struct kfab_msg_ops opx_msg_ops = {
	.msg = KFAB_MSG_FI_OPS,
	.tagged = KFAB_TAGGED_FI_OPS,
	.send = opx_ep_send,
	.recv = opx_ep_recv,
};

/* ------------------------------------------------------------------ */
/* control: of endpoints, scalable endpoints and their contexts */

static inline struct opx_ep *opx_fid_ep(fid_t fid)
{
	return to_opx_ep(kfab_container_of(fid, struct fid_ep, fid));
}

static void opx_ep_free(struct opx_ep *ep)
{
	kfab_peers_fini(&ep->conns);
	kfab_hfi_close(ep->dev);
	for (uint32_t i = 0; ep->rxc && i < ep->nrxc; i++)
		kfab_rxq_fini(&ep->rxc[i].rxq);
	kfab_pool_fini(&ep->bufs);
	kfab_pool_fini(&ep->ooo_recs);
	kfab_pool_fini(&ep->deferred_recs);
	free(ep->txc);
	free(ep->rxc);
	kfab_handles_fini(&ep->reqs);
	free(ep->bounce);
	if (ep->info)
		fi_freeinfo(ep->info);
	free(ep);
}

/* A scalable endpoint closes after its contexts. */
static int opx_ep_close(struct fid *fid)
{
	struct opx_ep *ep = opx_fid_ep(fid);

	for (uint32_t i = 0; ep->sep && (i < ep->ntxc || i < ep->nrxc); i++) {
		if ((i < ep->ntxc && ep->txc[i].open) ||
		    (i < ep->nrxc && ep->rxc[i].open)) {
			kfab_warn(ep->domain->kp, FI_LOG_EP_CTRL,
				  "fi_close(scalable endpoint): close its transmit and receive contexts first\n");
			return -FI_EBUSY;
		}
	}
	return 0;
}

static void opx_ep_closed(struct fid *fid)
{
	struct opx_ep *ep = opx_fid_ep(fid);

	kfab_info(ep->domain->kp, FI_LOG_EP_CTRL,
		  "endpoint lid %u ctxt %u closed: %llu replays, %llu acks, %llu nacks, %llu pings, %llu dups, %llu held out of order, %llu drops injected, %llu ring full, %llu for receive contexts it lacks\n",
		  ep->lid, ep->ctxt, (unsigned long long)ep->stats.replays,
		  (unsigned long long)ep->stats.acks_sent,
		  (unsigned long long)ep->stats.nacks_sent,
		  (unsigned long long)ep->stats.pings_sent,
		  (unsigned long long)ep->stats.dups,
		  (unsigned long long)ep->stats.ooo,
		  (unsigned long long)ep->stats.drops_injected,
		  (unsigned long long)ep->stats.ring_full,
		  (unsigned long long)ep->stats.no_rx_ctx);
	opx_ep_free(ep);
}

static struct kfab_ep_ops opx_ep_fi_ops = {
	.ops = KFAB_EP_FI_OPS(kfab_no_ops_open),
	.close = opx_ep_close,
	.free = opx_ep_closed,
	.rma = opx_rma,
	.ctx_open = opx_sep_ctx_open,
};

void opx_fid_init(struct opx_ep *ep, struct kfab_ep *base, size_t fclass,
		  struct kfab_ep_side *tx, struct kfab_ep_side *rx,
		  struct kfab_ep_ops *ops, void *context)
{
	kfab_ep_init(base, ep->domain, &ep->core, tx, rx, &ep->name,
		     sizeof(ep->name), NULL);
	if (rx)
		base->rxq = &kfab_container_of(rx, struct opx_rxc, side)->rxq;
	kfab_ep_fid_init(base, fclass, context, ops ? ops : &opx_ep_fi_ops,
			 &opx_msg_ops, &opx_atomic_ops.ops);
}

/* ------------------------------------------------------------------ */
/* fi_endpoint */

static int opx_ep_context(struct opx_ep *ep)
{
	const struct opx_params *p = ep->params;
	struct kfab_domain *dom = ep->domain;
	int ret;

	if (p->force_cpuaffinity) {
		int cpu = sched_getcpu();
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set))
			kfab_warn(dom->kp, FI_LOG_EP_CTRL,
				  "FI_OPX_FORCE_CPUAFFINITY: cannot bind to cpu %d: %s\n",
				  cpu, strerror(errno));
	}
	ret = kfab_hfi_open(p->backend, dom->unit, &ep->dev);
	if (ret) {
		kfab_warn(dom->kp, FI_LOG_EP_CTRL,
			  "cannot open HFI unit %u: %s\n", dom->unit,
			  strerror(-ret));
		return ret == -ENOENT || ret == -ENODEV ? -FI_ENODEV : ret;
	}
	ret = kfab_hfi_assign(ep->dev, p->uuid, p->pkey, p->sl);
	if (ret == -EBUSY) {
		kfab_warn(dom->kp, FI_LOG_EP_CTRL,
			  "all contexts of HFI unit %u are in use: close endpoints or pick another unit (FI_OPX_HFI_SELECT)\n",
			  dom->unit);
		return -FI_EBUSY;
	}
	if (ret == -ENETDOWN) {
		kfab_warn(dom->kp, FI_LOG_EP_CTRL,
			  "HFI unit %u is Down\n", dom->unit);
		return -FI_ENETDOWN;
	}
	if (ret) {
		kfab_warn(dom->kp, FI_LOG_EP_CTRL,
			  "cannot assign a context on HFI unit %u: %s\n",
			  dom->unit, strerror(-ret));
		return ret;
	}
	ep->core.wake_fd = ep->dev->wake_fd;
	ep->lid = (uint16_t)ep->dev->info.lid;
	ep->ctxt = (uint16_t)ep->dev->info.ctxt;
	ep->jkey = (uint16_t)ep->dev->info.jkey;
	do {
		if (getrandom(&ep->session, sizeof(ep->session), 0) !=
		    sizeof(ep->session))
			ep->session = (uint32_t)(uintptr_t)ep ^
				      (uint32_t)getpid();
	} while (!ep->session);
	ep->name = opx_name(ep->lid, ep->ctxt, ep->session);
	ep->rng = (uint64_t)ep->session << 32 | 0x9e3779b9u;
	kfab_info(dom->kp, FI_LOG_EP_CTRL,
		  "endpoint on hfi%u (%s backend): lid %u ctxt %u jkey %#x\n",
		  dom->unit, ep->dev->ops->name, ep->lid, ep->ctxt, ep->jkey);
	return 0;
}

/* Requests a context's queue may hold: its size within the table's share. */
static uint32_t opx_ctx_max(size_t size, uint32_t nctx)
{
	uint32_t share = (OPX_REQS_MAX - OPX_REQS_INTERNAL) / nctx;
	uint32_t max = size ? (uint32_t)(size < 16384 ? size : 16384) : 4096;

	return max < share ? max : share;
}

void opx_txc_setup(struct opx_txc *txc, const struct fi_tx_attr *attr)
{
	struct opx_ep *ep = txc->ep;
	uint32_t max = opx_ctx_max(attr ? attr->size : 0, ep->ntxc + ep->nrxc);

	txc->caps = attr && attr->caps ? attr->caps : ep->caps;
	txc->side.op_flags = attr ? attr->op_flags : 0;
	txc->quota.max = max < ep->txc_cap ? max : ep->txc_cap;
}

void opx_rxc_setup(struct opx_rxc *rxc, const struct fi_rx_attr *attr)
{
	struct opx_ep *ep = rxc->ep;
	uint32_t max = opx_ctx_max(attr ? attr->size : 0, ep->ntxc + ep->nrxc);

	rxc->caps = attr && attr->caps ? attr->caps : ep->caps;
	rxc->side.op_flags = attr ? attr->op_flags : 0;
	rxc->quota.max = max < ep->rxc_cap ? max : ep->rxc_cap;
	rxc->rxq.min_multi_recv = 64;
}

static int opx_ep_new(struct kfab_domain *dom, const struct fi_info *info,
		      uint32_t ntx, uint32_t nrx, struct opx_ep **out)
{
	struct opx_ep *ep;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = dom;
	ep->params = dom->params;
	kfab_progress_init(&ep->core, opx_ep_progress, opx_ep_arm,
			   opx_ep_drain,
			   ep->params->auto_progress_interval_usec);
	if (ep->params->prog_affinity_set) {
		ep->core.aff_start = ep->params->prog_affinity_start;
		ep->core.aff_end = ep->params->prog_affinity_end;
		ep->core.aff_stride = ep->params->prog_affinity_stride;
	}
	ep->info = fi_dupinfo(info);
	kfab_pool_init(&ep->bufs, OPX_EAGER_MAX, OPX_BUF_SLAB, 0);
	kfab_pool_init(&ep->ooo_recs, sizeof(struct opx_ooo) + OPX_EAGER_MAX,
		       OPX_BUF_SLAB, 0);
	kfab_pool_init(&ep->deferred_recs, sizeof(struct opx_deferred),
		       OPX_DEFERRED_SLAB, 0);
	ep->bounce = malloc(8192);
	ep->ntxc = ntx;
	ep->nrxc = nrx;
	ep->txc = calloc(ntx, sizeof(*ep->txc));
	ep->rxc = calloc(nrx, sizeof(*ep->rxc));
	for (uint32_t i = 0; ep->rxc && i < nrx; i++)
		kfab_rxq_init(&ep->rxc[i].rxq, &opx_rxq_ops, dom->kp,
			      sizeof(struct opx_unexp), &ep->rxc[i].side.cq,
			      &ep->rxc[i].side.cntr);
	opx_conns_init(ep);
	if (!ep->info || !ep->bounce || !ep->txc || !ep->rxc) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ep->caps = info->caps ? info->caps : dom->info->caps;
	ep->txc_cap = opx_ctx_max(info->tx_attr ? info->tx_attr->size : 0,
				  ntx + nrx);
	ep->rxc_cap = opx_ctx_max(info->rx_attr ? info->rx_attr->size : 0,
				  ntx + nrx);
	for (uint32_t i = 0; i < ntx; i++) {
		ep->txc[i].ep = ep;
		opx_txc_setup(&ep->txc[i], info->tx_attr);
	}
	for (uint32_t i = 0; i < nrx; i++) {
		ep->rxc[i].ep = ep;
		opx_rxc_setup(&ep->rxc[i], info->rx_attr);
	}
	ep->mp_max = ep->params->rzv_min_payload_bytes - 1;
	ret = kfab_handles_init(&ep->reqs, sizeof(struct opx_req),
				OPX_REQS_INTERNAL + ntx * ep->txc_cap +
				nrx * ep->rxc_cap, OPX_REQ_IDX_BITS);
	if (ret)
		goto err;
	for (uint32_t i = 0; i < ep->reqs.n; i++) {
		kfab_list_init(&opx_req_at(ep, i)->rxr.te.link);
		kfab_list_init(&opx_req_at(ep, i)->qlink);
	}
	ret = opx_ep_context(ep);
	if (ret)
		goto err;
	*out = ep;
	return 0;
err:
	opx_ep_free(ep);
	return ret;
}

/*
 * fi_endpoint (@sep false: a transmit and a receive context, its own) or
 * fi_scalable_ep (ep_attr's counts, for fi_tx_context/fi_rx_context).
 */
static int opx_open(struct fid_domain *domain, struct fi_info *info,
		    bool sep, struct fid_ep **out, void *context)
{
	struct kfab_domain *dom = kfab_domain_of(domain);
	size_t ntx, nrx, max = sep ? OPX_SEP_CTX_MAX : 1;
	struct opx_ep *ep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	ntx = info->ep_attr->tx_ctx_cnt ? info->ep_attr->tx_ctx_cnt : 1;
	nrx = info->ep_attr->rx_ctx_cnt ? info->ep_attr->rx_ctx_cnt : 1;
	if (ntx > max || nrx > max) {
		if (sep)
			kfab_warn(dom->kp, FI_LOG_EP_CTRL,
				  "fi_scalable_ep: tx_ctx_cnt %zu, rx_ctx_cnt %zu: 1 to %d each, no shared contexts\n",
				  info->ep_attr->tx_ctx_cnt,
				  info->ep_attr->rx_ctx_cnt, OPX_SEP_CTX_MAX);
		else
			kfab_warn(dom->kp, FI_LOG_EP_CTRL,
				  "fi_endpoint: tx_ctx_cnt %zu, rx_ctx_cnt %zu: open several contexts with fi_scalable_ep\n",
				  info->ep_attr->tx_ctx_cnt,
				  info->ep_attr->rx_ctx_cnt);
		return -FI_EINVAL;
	}
	ret = opx_ep_new(dom, info, (uint32_t)ntx, (uint32_t)nrx, &ep);
	if (ret)
		return ret;
	ep->sep = sep;
	if (sep) {
		opx_fid_init(ep, &ep->base, FI_CLASS_SEP, NULL, NULL, NULL,
			     context);
	} else {
		ep->txc->open = ep->rxc->open = true;
		ep->txc->caps = ep->rxc->caps = ep->caps;
		opx_fid_init(ep, &ep->base, FI_CLASS_EP, &ep->txc->side,
			     &ep->rxc->side, NULL, context);
	}
	kfab_domain_hold(dom);
	*out = &ep->base.fid;
	return 0;
}

int opx_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **out, void *context)
{
	return opx_open(domain, info, false, out, context);
}

int opx_sep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **out, void *context)
{
	return opx_open(domain, info, true, out, context);
}
