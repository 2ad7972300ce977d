// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: receives. Messages are matched in PSN order, when their first
 * packet is delivered (EAGER, MP_FIRST, RTS), against the posted receives
 * of the receive context's queue (core/kfab_rxq.h); a message no receive
 * matches is kept unexpected: an eager or multi-packet one with a copy of
 * its payload, a rendezvous one as its RTS, answered once a receive
 * matches it (the queue's take hook).
 *
 * A matched rendezvous registers the receive buffer for expected receive
 * (a TID) when the sender said it can SDMA, FI_OPX_EXPECTED_RECEIVE_ENABLE
 * is on and the buffer is one contiguous range; its CTS then carries the
 * TID and the receive completes on DONE. Otherwise the CTS asks for DATA
 * packets, which land in the buffer at their offset.
 *
 * FI_MULTI_RECV buffers, FI_PEEK/FI_CLAIM/FI_DISCARD, cancel and the
 * receive completions are the queue's; a multi-receive slice is an
 * internal request.
 */
#define _GNU_SOURCE
#include <string.h>

#include "opx.h"

static inline struct opx_rxc *opx_rxc_of_q(struct kfab_rxq *q)
{
	return kfab_container_of(q, struct opx_rxc, rxq);
}

static inline struct opx_req *opx_rxr_req(struct kfab_rxr *rx)
{
	return kfab_container_of(rx, struct opx_req, rxr);
}

static inline struct opx_unexp *opx_ux_of(struct kfab_rxq_ux *ux)
{
	return kfab_container_of(ux, struct opx_unexp, ux);
}

fi_addr_t opx_rx_src(const struct opx_rxc *rxc, const struct opx_conn *conn)
{
	if (!(rxc->caps & FI_SOURCE) || !rxc->ep->base.av || !conn)
		return FI_ADDR_NOTAVAIL;
	return kfab_av_reverse(rxc->ep->base.av, conn->base.key);
}

void opx_rx_complete(struct opx_ep *ep, struct opx_req *req)
{
	if (req->tid) {
		kfab_hfi_tid_free(ep->dev, req->tid);
		req->tid = 0;
	}
	if (kfab_unlikely(req->rxr.flags & FI_REMOTE_WRITE)) {
		opx_rma_target_done(ep, req);
		return;
	}
	kfab_rxq_complete(&req->rxc->rxq, &req->rxr);
	opx_req_put(ep, req);
}

static uint64_t opx_msg_flags_of(const struct opx_hdr *hdr)
{
	return (hdr->flags & OPX_F_TAGGED ? FI_TAGGED : FI_MSG) |
	       (hdr->flags & OPX_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
}

static void opx_rx_set_msg(struct opx_req *req, struct opx_conn *conn)
{
	req->conn = conn;
	req->received = 0;
}

static void opx_rx_copy(struct opx_req *req, size_t off, const void *buf,
			size_t len)
{
	if (off < req->rxr.len)
		kfab_buf_to_iov(req->iov, req->iov_count, off, buf,
				len < req->rxr.len - off ? len :
							   req->rxr.len - off);
	req->received += len;
}

void opx_rzv_start(struct opx_ep *ep, struct opx_conn *conn,
		   struct opx_req *req, uint32_t sreq, uint32_t rts_flags)
{
	struct opx_hdr cts;
	uint32_t tid = 0;

	req->xfer = req->rxr.msg_len < req->rxr.len ? req->rxr.msg_len :
						      req->rxr.len;
	req->rzv = true;
	if ((rts_flags & OPX_F_SDMA) && ep->params->expected_receive_enable &&
	    req->xfer && req->iov_count == 1 &&
	    kfab_hfi_tid_update(ep->dev, req->iov[0].iov_base, req->xfer,
				&tid))
		tid = 0;
	req->tid = tid;
	opx_hdr_init(ep, conn, &cts, OPX_OP_CTS, 0);
	cts.u.cts.len = req->xfer;
	cts.u.cts.sreq = sreq;
	cts.u.cts.rreq = opx_req_handle(req);
	cts.u.cts.tid = tid;
	if (opx_post_ctl(ep, conn, &cts, OPX_HDR_BASE, NULL)) {
		req->rxr.err = FI_ENOMEM;
		req->rzv = false;
		opx_rx_complete(ep, req);
		return;
	}
	/* the sender may start its copy while we go on */
	opx_conn_xmit(ep, conn);
}

/* Tells the sender of an RTS nobody will take its data. */
static void opx_rzv_refuse(struct opx_ep *ep, struct opx_conn *conn,
			   uint32_t sreq)
{
	struct opx_hdr cts;

	opx_hdr_init(ep, conn, &cts, OPX_OP_CTS, 0);
	cts.u.cts.sreq = sreq;
	opx_post_ctl(ep, conn, &cts, OPX_HDR_BASE, NULL);
}

static struct opx_unexp *opx_ux_new(struct opx_rxc *rxc,
				    struct opx_conn *conn,
				    const struct opx_hdr *hdr, size_t len,
				    size_t want)
{
	struct kfab_rxq_ux *ux;
	struct opx_unexp *ox;

	ux = kfab_rxq_ux_new(&rxc->rxq, conn, conn->base.key, len, want, hdr->tag,
			     hdr->flags & OPX_F_CQ_DATA ? hdr->data : 0,
			     opx_msg_flags_of(hdr));
	if (!ux)
		return NULL;
	ox = opx_ux_of(ux);
	ox->rxc = rxc;
	ox->op = hdr->op;
	return ox;
}

static struct opx_req *opx_rx_match(struct opx_rxc *rxc, struct opx_conn *conn,
				    const struct opx_hdr *hdr, size_t len)
{
	struct kfab_rxr *rx;

	rx = kfab_rxq_match(&rxc->rxq, conn, conn->base.key, len, hdr->tag,
			    hdr->flags & OPX_F_CQ_DATA ? hdr->data : 0,
			    opx_msg_flags_of(hdr));
	if (!rx)
		return NULL;
	opx_rx_set_msg(opx_rxr_req(rx), conn);
	return opx_rxr_req(rx);
}

/* MP_NTH: the next bytes of the message being received from @conn. */
static void opx_rx_mp_nth(struct opx_ep *ep, struct opx_conn *conn,
			  const struct opx_hdr *hdr, const uint8_t *payload,
			  uint32_t len)
{
	struct opx_req *req = conn->mp_req;
	struct opx_unexp *ux = conn->mp_ux;
	uint64_t off = hdr->u.mp.off;

	if (req) {
		if (off + len > req->rxr.msg_len)
			return;
		opx_rx_copy(req, off, payload, len);
		if (req->received == req->rxr.msg_len) {
			conn->mp_req = NULL;
			opx_rx_complete(ep, req);
		}
		return;
	}
	if (!ux || off + len > ux->ux.len ||
	    !kfab_rxq_ux_data(&ux->ux, off, payload, len))
		return;
	conn->mp_ux = NULL;
	kfab_rxq_ux_whole(&ux->rxc->rxq, &ux->ux);
}

/*
 * DATA and DONE of a rendezvous: into a receive, a target's RMA write, or
 * (OPX_F_RDRSP) the reader's request of an RMA read.
 */
static void opx_rx_rzv_data(struct opx_ep *ep, struct opx_conn *conn,
			    const struct opx_hdr *hdr, const uint8_t *payload,
			    uint32_t len)
{
	bool rd = hdr->flags & OPX_F_RDRSP;
	struct opx_req *req = opx_req_lookup(ep, hdr->u.data.rreq,
					     rd ? OPX_REQ_TX : OPX_REQ_RX);

	if (!req || req->conn != conn || !req->rzv ||
	    rd != (req->op == OPX_OP_READ))
		return;
	if (hdr->op == OPX_OP_DONE) {
		req->received = req->xfer;
		if (rd)
			req->status = hdr->u.data.status;
	} else {
		if (hdr->u.data.off + len > req->xfer)
			return;
		kfab_buf_to_iov(req->iov, req->iov_count, hdr->u.data.off,
			       payload, len);
		req->received += len;
	}
	if (req->received < req->xfer)
		return;
	req->rzv = false;
	if (!rd) {
		opx_rx_complete(ep, req);
	} else if (!--req->refs && req->posted) {
		opx_tx_complete(ep, req);
	}
}

/* A message for a receive context we do not have: dropped, or refused. */
static void opx_rx_no_ctx(struct opx_ep *ep, struct opx_conn *conn,
			  const struct opx_hdr *hdr)
{
	if (!ep->stats.no_rx_ctx++)
		kfab_warn(ep->domain->kp, FI_LOG_EP_DATA,
			  "lid %u ctxt %u sent to receive context %u: this endpoint has %u; such messages are dropped\n",
			  opx_key_lid(opx_conn_key(conn)),
			  opx_key_ctxt(opx_conn_key(conn)),
			  hdr->rx, ep->nrxc);
	if (hdr->op == OPX_OP_RTS)
		opx_rzv_refuse(ep, conn, hdr->u.rts.sreq);
}

void opx_rx_deliver(struct opx_ep *ep, struct opx_conn *conn,
		    const struct opx_hdr *hdr, const uint8_t *payload,
		    uint32_t len)
{
	struct opx_rxc *rxc = opx_rxc_at(ep, hdr->rx);
	struct opx_unexp *ux;
	struct opx_req *req;
	uint64_t mlen;

	if (kfab_unlikely(!rxc) && (hdr->op == OPX_OP_EAGER ||
				    hdr->op == OPX_OP_MP_FIRST ||
				    hdr->op == OPX_OP_RTS)) {
		if (hdr->op == OPX_OP_MP_FIRST) {
			conn->mp_req = NULL;
			conn->mp_ux = NULL;
		}
		opx_rx_no_ctx(ep, conn, hdr);
		return;
	}
	switch (hdr->op) {
	case OPX_OP_EAGER:
		if (hdr->u.msg.len != len)
			return;
		req = opx_rx_match(rxc, conn, hdr, len);
		if (req) {
			opx_rx_copy(req, 0, payload, len);
			opx_rx_complete(ep, req);
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, len, len);
		if (ux)
			kfab_rxq_ux_data(&ux->ux, 0, payload, len);
		return;
	case OPX_OP_MP_FIRST:
		mlen = hdr->u.msg.len;
		if (len > mlen || mlen > ep->mp_max)
			return;
		conn->mp_req = NULL;
		conn->mp_ux = NULL;
		req = opx_rx_match(rxc, conn, hdr, mlen);
		if (req) {
			opx_rx_copy(req, 0, payload, len);
			conn->mp_req = req;
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, mlen, mlen);
		if (ux) {
			kfab_rxq_ux_data(&ux->ux, 0, payload, len);
			conn->mp_ux = ux;
		}
		return;
	case OPX_OP_MP_NTH:
		opx_rx_mp_nth(ep, conn, hdr, payload, len);
		return;
	case OPX_OP_RTS:
		req = opx_rx_match(rxc, conn, hdr, hdr->u.rts.len);
		if (req) {
			opx_rzv_start(ep, conn, req, hdr->u.rts.sreq,
				      hdr->flags);
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, hdr->u.rts.len, 0);
		if (ux) {
			ux->sreq = hdr->u.rts.sreq;
			ux->rts_flags = hdr->flags;
		} else {
			opx_rzv_refuse(ep, conn, hdr->u.rts.sreq);
		}
		return;
	case OPX_OP_CTS:
		opx_tx_on_cts(ep, conn, hdr);
		return;
	case OPX_OP_DATA:
	case OPX_OP_DONE:
		opx_rx_rzv_data(ep, conn, hdr, payload, len);
		return;
	case OPX_OP_WRITE:
	case OPX_OP_WRITE_RTS:
	case OPX_OP_READ:
	case OPX_OP_ATOMIC:
	case OPX_OP_RMA_RESP:
		opx_rma_deliver(ep, rxc, conn, hdr, payload, len);
		return;
	default:
		return;
	}
}

/* ------------------------------------------------------------------ */
/* the receive queue's hooks (kfab_rxq.h) */

static struct kfab_rxr *opx_rxq_get(struct kfab_rxq *q,
				    const struct iovec *iov, void **desc,
				    size_t count)
{
	struct opx_req *req = opx_req_rx(opx_rxc_of_q(q));

	(void)desc;
	if (kfab_unlikely(!req))
		return NULL;
	memcpy(req->iov, iov, count * sizeof(*iov));
	req->iov_count = (uint32_t)count;
	return &req->rxr;
}

static struct kfab_rxr *opx_rxq_slice(struct kfab_rxq *q, void *buf,
				      size_t len)
{
	struct opx_rxc *rxc = opx_rxc_of_q(q);
	struct opx_req *c = opx_req_get_internal(rxc->ep, OPX_REQ_RX);

	if (!c)
		return NULL;
	c->iov[0].iov_base = buf;
	c->iov[0].iov_len = len;
	c->iov_count = 1;
	c->rxc = rxc;
	return &c->rxr;
}

static void opx_rxq_put(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	opx_req_put(opx_rxc_of_q(q)->ep, opx_rxr_req(rx));
}

static void opx_rxq_done(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	opx_rx_complete(opx_rxc_of_q(q)->ep, opx_rxr_req(rx));
}

/* An eager or multi-packet message is copied, a rendezvous started. */
static void opx_rxq_take(struct kfab_rxq *q, struct kfab_rxr *rx,
			 struct kfab_rxq_ux *ux)
{
	struct opx_ep *ep = opx_rxc_of_q(q)->ep;
	struct opx_unexp *ox = opx_ux_of(ux);
	struct opx_req *req = opx_rxr_req(rx);
	struct opx_conn *conn = ux->peer;

	opx_rx_set_msg(req, conn);
	if (ox->op == OPX_OP_RTS) {
		uint32_t sreq = ox->sreq, flags = ox->rts_flags;

		kfab_rxq_ux_free(q, ux);
		opx_rzv_start(ep, conn, req, sreq, flags);
		return;
	}
	opx_rx_copy(req, 0, ux->buf, ux->len);
	kfab_rxq_ux_free(q, ux);
	opx_rx_complete(ep, req);
}

/* The sender of a rendezvous is told; the bytes go once all are here. */
static void opx_rxq_discard(struct kfab_rxq *q, struct kfab_rxq_ux *ux)
{
	struct opx_unexp *ox = opx_ux_of(ux);

	if (ox->op == OPX_OP_RTS)
		opx_rzv_refuse(opx_rxc_of_q(q)->ep, ux->peer, ox->sreq);
	kfab_rxq_ux_drop(q, ux);
}

static fi_addr_t opx_rxq_src(struct kfab_rxq *q, void *peer)
{
	return opx_rx_src(opx_rxc_of_q(q), peer);
}

const struct kfab_rxq_ops opx_rxq_ops = {
	.get = opx_rxq_get,
	.slice = opx_rxq_slice,
	.put = opx_rxq_put,
	.done = opx_rxq_done,
	.take = opx_rxq_take,
	.discard = opx_rxq_discard,
	.src = opx_rxq_src,
};

ssize_t opx_recv(struct opx_rxc *rxc, const struct iovec *iov, size_t count,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
		 uint64_t flags)
{
	uint64_t key;
	int ret;

	ret = kfab_rxq_src_key(&rxc->rxq, rxc->ep->base.av, rxc->caps, src,
			       &key);
	if (ret)
		return ret;
	return kfab_rxq_recv(&rxc->rxq, iov, NULL, count, key, tag, ignore,
			     context, flags,
			     !rxc->side.selective || (flags & FI_COMPLETION));
}

/* Its unexpected messages not whole, and its rendezvous ones. */
static void opx_rxc_fail_conn(struct opx_rxc *rxc, struct opx_conn *conn,
			      int err)
{
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos, *tmp;

		kfab_list_for_each_safe(pos, tmp, &rxc->rxq.tagm.unexp[t]) {
			struct kfab_rxq_ux *ux = kfab_container_of(
				kfab_list_entry(pos, struct kfab_tagm_entry,
						link),
				struct kfab_rxq_ux, te);

			if (ux->peer != conn || (ux->have >= ux->want &&
						 opx_ux_of(ux)->op != OPX_OP_RTS))
				continue;
			kfab_rxq_ux_free(&rxc->rxq, ux);
		}
	}
	kfab_rxq_fail_src(&rxc->rxq, conn->base.key, NULL, err, NULL);
}

void opx_rx_fail_conn(struct opx_ep *ep, struct opx_conn *conn, int err)
{
	/* receives matched to its messages, in progress */
	for (uint32_t i = 0; i < ep->reqs.n; i++) {
		struct opx_req *req = opx_req_at(ep, i);

		if (req->h.kind == OPX_REQ_TX || req->conn != conn ||
		    (req->rxr.flags & FI_MULTI_RECV))
			continue;
		if (!req->rzv && req != conn->mp_req)
			continue;
		req->rzv = false;
		req->rxr.err = err;
		opx_rx_complete(ep, req);
	}
	conn->mp_req = NULL;
	/* its messages that cannot be completed any more */
	if (conn->mp_ux) {
		struct opx_unexp *ux = conn->mp_ux;

		conn->mp_ux = NULL;
		kfab_rxq_ux_fail(&ux->rxc->rxq, &ux->ux, err);
	}

	for (uint32_t i = 0; i < ep->nrxc; i++)
		opx_rxc_fail_conn(&ep->rxc[i], conn, err);
}
