// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: receives. Messages are matched in PSN order, when their first
 * packet is delivered (EAGER, MP_FIRST, RTS), against the posted receives
 * (kfab_tagm); a message no receive matches is kept unexpected: an eager
 * or multi-packet one with a copy of its payload, a rendezvous one as its
 * RTS, answered once a receive matches it.
 *
 * A matched rendezvous registers the receive buffer for expected receive
 * (a TID) when the sender said it can SDMA, FI_OPX_EXPECTED_RECEIVE_ENABLE
 * is on and the buffer is one contiguous range; its CTS then carries the
 * TID and the receive completes on DONE. Otherwise the CTS asks for DATA
 * packets, which land in the buffer at their offset.
 *
 * FI_MULTI_RECV buffers stay posted while at least FI_OPT_MIN_MULTI_RECV
 * bytes are left; each message takes the next bytes of the buffer through
 * a child request whose completion points into it. The completion that
 * retires the buffer carries FI_MULTI_RECV.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "opx.h"

static inline bool opx_rx_tagged(uint64_t flags)
{
	return flags & FI_TAGGED;
}

static inline struct opx_req *opx_te_req(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct opx_req, te);
}

static inline struct opx_unexp *opx_te_ux(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct opx_unexp, te);
}

fi_addr_t opx_rx_src(const struct opx_rxc *rxc, const struct opx_conn *conn)
{
	if (!(rxc->caps & FI_SOURCE) || !rxc->ep->av || !conn)
		return FI_ADDR_NOTAVAIL;
	return kfab_av_reverse(rxc->ep->av, conn->key);
}

static inline size_t opx_mr_left(const struct opx_req *p)
{
	return p->len - p->mr_off;
}

/* Writes the completion that gives a multi-receive buffer back. */
static void opx_mr_release(struct opx_ep *ep, struct opx_req *p)
{
	if (p->rxc->cq)
		kfab_cq_write(p->rxc->cq, p->context,
			      FI_RECV | FI_MULTI_RECV |
			      (p->flags & (FI_MSG | FI_TAGGED)), 0,
			      (uint8_t *)p->iov[0].iov_base + p->mr_off, 0, 0,
			      FI_ADDR_NOTAVAIL);
	opx_req_put(ep, p);
}

/* Stops a multi-receive buffer from matching more messages. */
static void opx_mr_retire(struct opx_ep *ep, struct opx_req *p)
{
	kfab_list_del(&p->te.link);
	p->mr_retired = true;
	if (!p->mr_inflight)
		opx_mr_release(ep, p);
}

void opx_rx_complete(struct opx_ep *ep, struct opx_req *req)
{
	struct opx_req *p = req->mrecv;
	struct opx_rxc *rxc = req->rxc;
	uint64_t flags = FI_RECV | req->msg_flags;
	void *buf = req->iov_count ? req->iov[0].iov_base : NULL;
	fi_addr_t src;

	if (req->tid) {
		kfab_hfi_tid_free(ep->dev, req->tid);
		req->tid = 0;
	}
	if (kfab_unlikely(req->flags & FI_REMOTE_WRITE)) {
		opx_rma_target_done(ep, req);
		return;
	}
	if (p && p->mr_retired && p->mr_inflight == 1)
		flags |= FI_MULTI_RECV;
	if (kfab_unlikely(!rxc->cq))
		goto out;
	src = opx_rx_src(rxc, req->conn);
	opx_cntr_rx(rxc, req->err || req->msg_len > req->len);
	if (req->err)
		kfab_cq_write_err(rxc->cq, req->context, flags, req->err, 0,
				  0, 0, req->msg_data, req->msg_tag, src);
	else if (req->msg_len > req->len)
		kfab_cq_write_err(rxc->cq, req->context, flags, FI_ETRUNC, 0,
				  req->len, req->msg_len - req->len,
				  req->msg_data, req->msg_tag, src);
	else if (req->comp || (flags & FI_MULTI_RECV))
		kfab_cq_write(rxc->cq, req->context, flags, req->msg_len, buf,
			      req->msg_data, req->msg_tag, src);
out:
	if (p && !--p->mr_inflight && p->mr_retired)
		opx_req_put(ep, p);
	opx_req_put(ep, req);
}

/* The request a message of @len lands in: @req or a slice of it. */
static struct opx_req *opx_rx_target(struct opx_ep *ep, struct opx_req *req,
				     size_t len)
{
	struct opx_req *c;
	size_t n;

	if (!(req->flags & FI_MULTI_RECV)) {
		kfab_list_del(&req->te.link);
		return req;
	}
	c = opx_req_get_internal(ep, OPX_REQ_RX);
	if (!c)
		return NULL;
	n = len < opx_mr_left(req) ? len : opx_mr_left(req);
	c->iov[0].iov_base = (uint8_t *)req->iov[0].iov_base + req->mr_off;
	c->iov[0].iov_len = n;
	c->iov_count = 1;
	c->len = n;
	c->context = req->context;
	c->flags = req->flags & ~FI_MULTI_RECV;
	c->comp = req->comp;
	c->mrecv = req;
	c->rxc = req->rxc;
	req->mr_off += n;
	req->mr_inflight++;
	if (opx_mr_left(req) < req->rxc->min_multi_recv)
		opx_mr_retire(ep, req);
	return c;
}

static void opx_rx_set_msg(struct opx_req *req, const struct opx_hdr *hdr,
			   size_t len, struct opx_conn *conn)
{
	req->msg_len = len;
	req->msg_tag = hdr->flags & OPX_F_TAGGED ? hdr->tag : 0;
	req->msg_data = hdr->flags & OPX_F_CQ_DATA ? hdr->data : 0;
	req->msg_flags = (hdr->flags & OPX_F_TAGGED ? FI_TAGGED : FI_MSG) |
			 (hdr->flags & OPX_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
	req->conn = conn;
	req->received = 0;
}

static void opx_rx_copy(struct opx_req *req, size_t off, const void *buf,
			size_t len)
{
	if (off < req->len)
		kfab_buf_to_iov(req->iov, req->iov_count, off, buf,
			       len < req->len - off ? len : req->len - off);
	req->received += len;
}

void opx_rzv_start(struct opx_ep *ep, struct opx_conn *conn,
		   struct opx_req *req, uint32_t sreq, uint32_t rts_flags)
{
	struct opx_hdr cts;
	uint32_t tid = 0;

	req->xfer = req->msg_len < req->len ? req->msg_len : req->len;
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
		req->err = FI_ENOMEM;
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
				    bool buffered)
{
	struct opx_unexp *ux = calloc(1, sizeof(*ux));

	if (!ux)
		return NULL;
	if (buffered && len) {
		ux->buf = malloc(len);
		if (!ux->buf) {
			free(ux);
			return NULL;
		}
	}
	ux->te.tag = hdr->flags & OPX_F_TAGGED ? hdr->tag : 0;
	ux->te.src = conn->key;
	ux->conn = conn;
	ux->op = hdr->op;
	ux->tag = ux->te.tag;
	ux->data = hdr->flags & OPX_F_CQ_DATA ? hdr->data : 0;
	ux->msg_flags = (hdr->flags & OPX_F_TAGGED ? FI_TAGGED : FI_MSG) |
			(hdr->flags & OPX_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
	ux->len = len;
	kfab_tagm_add_unexp(&rxc->tagm, hdr->flags & OPX_F_TAGGED, &ux->te);
	return ux;
}

static void opx_ux_free(struct opx_unexp *ux)
{
	free(ux->buf);
	free(ux);
}

static struct opx_req *opx_rx_match(struct opx_ep *ep, struct opx_rxc *rxc,
				    struct opx_conn *conn,
				    const struct opx_hdr *hdr, size_t len)
{
	struct kfab_tagm_entry *te;
	struct opx_req *req;

	te = kfab_tagm_find_posted(&rxc->tagm, hdr->flags & OPX_F_TAGGED,
				   hdr->tag, conn->key);
	if (!te)
		return NULL;
	req = opx_rx_target(ep, opx_te_req(te), len);
	if (req)
		opx_rx_set_msg(req, hdr, len, conn);
	return req;
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
		if (off + len > req->msg_len)
			return;
		opx_rx_copy(req, off, payload, len);
		if (req->received == req->msg_len) {
			conn->mp_req = NULL;
			opx_rx_complete(ep, req);
		}
		return;
	}
	if (!ux || off + len > ux->len)
		return;
	memcpy(ux->buf + off, payload, len);
	ux->have += len;
	if (ux->have < ux->len)
		return;
	conn->mp_ux = NULL;
	ux->complete = true;
	if (ux->waiting) {
		req = ux->waiting;
		opx_rx_copy(req, 0, ux->buf, ux->len);
		opx_ux_free(ux);
		opx_rx_complete(ep, req);
	} else if (ux->discarded) {
		opx_ux_free(ux);
	}
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
		kfab_warn(ep->domain->xp, FI_LOG_EP_DATA,
			  "lid %u ctxt %u sent to receive context %u: this endpoint has %u; such messages are dropped\n",
			  opx_key_lid(conn->key), opx_key_ctxt(conn->key),
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
		req = opx_rx_match(ep, rxc, conn, hdr, len);
		if (req) {
			opx_rx_copy(req, 0, payload, len);
			opx_rx_complete(ep, req);
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, len, true);
		if (ux) {
			if (len)
				memcpy(ux->buf, payload, len);
			ux->have = len;
			ux->complete = true;
		}
		return;
	case OPX_OP_MP_FIRST:
		mlen = hdr->u.msg.len;
		if (len > mlen || mlen > ep->mp_max)
			return;
		conn->mp_req = NULL;
		conn->mp_ux = NULL;
		req = opx_rx_match(ep, rxc, conn, hdr, mlen);
		if (req) {
			opx_rx_copy(req, 0, payload, len);
			conn->mp_req = req;
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, mlen, true);
		if (ux) {
			memcpy(ux->buf, payload, len);
			ux->have = len;
			conn->mp_ux = ux;
		}
		return;
	case OPX_OP_MP_NTH:
		opx_rx_mp_nth(ep, conn, hdr, payload, len);
		return;
	case OPX_OP_RTS:
		req = opx_rx_match(ep, rxc, conn, hdr, hdr->u.rts.len);
		if (req) {
			opx_rzv_start(ep, conn, req, hdr->u.rts.sreq,
				      hdr->flags);
			return;
		}
		ux = opx_ux_new(rxc, conn, hdr, hdr->u.rts.len, false);
		if (ux) {
			ux->sreq = hdr->u.rts.sreq;
			ux->rts_flags = hdr->flags;
			ux->complete = true;
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

/* Hands an unexpected message to @req (removed from its list). */
static void opx_rx_take_unexp(struct opx_ep *ep, struct opx_req *req,
			      struct opx_unexp *ux)
{
	kfab_list_del(&ux->te.link);
	req->msg_len = ux->len;
	req->msg_tag = ux->tag;
	req->msg_data = ux->data;
	req->msg_flags = ux->msg_flags;
	req->conn = ux->conn;
	req->received = 0;
	if (ux->op == OPX_OP_RTS) {
		opx_rzv_start(ep, ux->conn, req, ux->sreq, ux->rts_flags);
		opx_ux_free(ux);
		return;
	}
	if (!ux->complete) {
		ux->waiting = req;
		return;
	}
	opx_rx_copy(req, 0, ux->buf, ux->len);
	opx_ux_free(ux);
	opx_rx_complete(ep, req);
}

/* Drops an unexpected message (FI_DISCARD). */
static void opx_rx_discard(struct opx_ep *ep, struct opx_unexp *ux)
{
	kfab_list_del(&ux->te.link);
	if (ux->op == OPX_OP_RTS)
		opx_rzv_refuse(ep, ux->conn, ux->sreq);
	if (ux->complete)
		opx_ux_free(ux);
	else
		ux->discarded = true;	/* freed when its last packet comes */
}

static bool opx_skip_claimed(struct kfab_tagm_entry *te, void *arg)
{
	(void)arg;
	return opx_te_ux(te)->claimed;
}

static bool opx_skip_unclaimed(struct kfab_tagm_entry *te, void *arg)
{
	struct opx_unexp *ux = opx_te_ux(te);

	return !ux->claimed || ux->claim_ctx != arg;
}

/* fi_trecvmsg() with FI_PEEK and/or FI_CLAIM. */
static ssize_t opx_rx_peek(struct opx_rxc *rxc, const struct iovec *iov,
			   size_t count, struct kfab_tagm_entry *want,
			   void *context, uint64_t flags)
{
	struct opx_ep *ep = rxc->ep;
	uint64_t cflags = FI_RECV | FI_TAGGED;
	struct kfab_tagm_entry *te;
	struct opx_unexp *ux;
	struct opx_req *req;

	if (!(flags & FI_PEEK)) {
		/* FI_CLAIM: the message an earlier peek claimed */
		want->src = KFAB_TAGM_ANY_SRC;
		want->ignore = UINT64_MAX;
		te = kfab_tagm_find_unexp(&rxc->tagm, true, want,
					  opx_skip_unclaimed, context);
		if (!te)
			return -FI_EINVAL;
		ux = opx_te_ux(te);
		if (flags & FI_DISCARD) {
			opx_cntr_rx(rxc, 0);
			kfab_cq_write(rxc->cq, context,
				      cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA),
				      ux->len, NULL, ux->data, ux->tag,
				      opx_rx_src(rxc, ux->conn));
			opx_rx_discard(ep, ux);
			return 0;
		}
		req = opx_req_rx(rxc);
		if (!req)
			return -FI_EAGAIN;
		memcpy(req->iov, iov, count * sizeof(*iov));
		req->iov_count = (uint32_t)count;
		for (size_t i = 0; i < count; i++)
			req->len += iov[i].iov_len;
		req->context = context;
		req->flags = flags | FI_TAGGED;
		req->comp = true;
		opx_rx_take_unexp(ep, req, ux);
		return 0;
	}

	te = kfab_tagm_find_unexp(&rxc->tagm, true, want, opx_skip_claimed,
				  NULL);
	if (!te) {
		kfab_cq_write_err(rxc->cq, context, cflags, FI_ENOMSG, 0, 0,
				  0, 0, want->tag, FI_ADDR_NOTAVAIL);
		return 0;
	}
	ux = opx_te_ux(te);
	kfab_cq_write(rxc->cq, context,
		      cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA), ux->len,
		      NULL, ux->data, ux->tag, opx_rx_src(rxc, ux->conn));
	if (flags & FI_DISCARD) {
		opx_cntr_rx(rxc, 0);
		opx_rx_discard(ep, ux);
	} else if (flags & FI_CLAIM) {
		ux->claimed = true;
		ux->claim_ctx = context;
	}
	return 0;
}

ssize_t opx_recv(struct opx_rxc *rxc, const struct iovec *iov, size_t count,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
		 uint64_t flags)
{
	struct opx_ep *ep = rxc->ep;
	bool tagged = opx_rx_tagged(flags);
	struct kfab_tagm_entry want = { .tag = tag, .ignore = ignore };
	struct kfab_tagm_entry *te;
	struct opx_req *req;

	want.src = KFAB_TAGM_ANY_SRC;
	if (src != FI_ADDR_UNSPEC && (rxc->caps & FI_DIRECTED_RECV)) {
		struct kfab_av_entry *e = ep->av ? kfab_av_entry(ep->av, src) :
						   NULL;

		if (!e) {
			kfab_warn(ep->domain->xp, FI_LOG_EP_DATA,
				  "receive from fi_addr %#llx: not in the AV\n",
				  (unsigned long long)src);
			return -FI_EINVAL;
		}
		want.src = e->key;
	}
	if (!tagged) {
		want.tag = 0;
		want.ignore = 0;
	}
	if (flags & (FI_PEEK | FI_CLAIM)) {
		if (!tagged)
			return -FI_EBADFLAGS;
		return opx_rx_peek(rxc, iov, count, &want, context, flags);
	}
	if ((flags & FI_MULTI_RECV) && count != 1)
		return -FI_EINVAL;

	req = opx_req_rx(rxc);
	if (kfab_unlikely(!req))
		return -FI_EAGAIN;
	memcpy(req->iov, iov, count * sizeof(*iov));
	req->iov_count = (uint32_t)count;
	req->len = 0;
	for (size_t i = 0; i < count; i++)
		req->len += iov[i].iov_len;
	req->context = context;
	req->flags = flags;
	req->comp = !rxc->selective || (flags & FI_COMPLETION);
	req->te.tag = want.tag;
	req->te.ignore = want.ignore;
	req->te.src = want.src;

	if (flags & FI_MULTI_RECV) {
		kfab_tagm_post(&rxc->tagm, tagged, &req->te);
		while (!req->mr_retired) {
			struct opx_req *c;

			if (opx_mr_left(req) < rxc->min_multi_recv) {
				opx_mr_retire(ep, req);
				break;
			}
			te = kfab_tagm_find_unexp(&rxc->tagm, tagged, &want,
						  opx_skip_claimed, NULL);
			if (!te)
				break;
			c = opx_rx_target(ep, req, opx_te_ux(te)->len);
			if (!c)
				break;
			opx_rx_take_unexp(ep, c, opx_te_ux(te));
		}
		return 0;
	}

	te = kfab_tagm_find_unexp(&rxc->tagm, tagged, &want, opx_skip_claimed,
				  NULL);
	if (te) {
		opx_rx_take_unexp(ep, req, opx_te_ux(te));
		return 0;
	}
	kfab_tagm_post(&rxc->tagm, tagged, &req->te);
	return 0;
}

static struct opx_req *opx_rx_find_posted(struct opx_rxc *rxc, void *context)
{
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos;

		kfab_list_for_each(pos, &rxc->tagm.posted[t]) {
			struct opx_req *req = opx_te_req(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (req->context == context)
				return req;
		}
	}
	return NULL;
}

int opx_rx_cancel(struct opx_rxc *rxc, void *context)
{
	struct opx_req *req = opx_rx_find_posted(rxc, context);
	struct opx_ep *ep = rxc->ep;

	if (!req)
		return -FI_ENOENT;
	opx_cntr_rx(rxc, FI_ECANCELED);
	kfab_cq_write_err(rxc->cq, context,
			  FI_RECV | (req->flags & (FI_MSG | FI_TAGGED)),
			  FI_ECANCELED, 0, 0, 0, 0, req->te.tag,
			  FI_ADDR_NOTAVAIL);
	if (req->flags & FI_MULTI_RECV) {
		kfab_list_del(&req->te.link);
		req->mr_retired = true;
		req->comp = false;
		if (!req->mr_inflight)
			opx_req_put(ep, req);
		return 0;
	}
	kfab_list_del(&req->te.link);
	opx_req_put(ep, req);
	return 0;
}

/* Unexpected messages of @conn not complete, receives posted for it. */
static void opx_rxc_fail_conn(struct opx_rxc *rxc, struct opx_conn *conn,
			      int err)
{
	struct opx_ep *ep = rxc->ep;

	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos, *tmp;

		kfab_list_for_each_safe(pos, tmp, &rxc->tagm.unexp[t]) {
			struct opx_unexp *ux = opx_te_ux(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (ux->conn != conn || (ux->complete &&
						 ux->op != OPX_OP_RTS))
				continue;
			kfab_list_del(&ux->te.link);
			opx_ux_free(ux);
		}
	}
	/* receives posted for it alone */
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos, *tmp;

		kfab_list_for_each_safe(pos, tmp, &rxc->tagm.posted[t]) {
			struct opx_req *req = opx_te_req(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (req->te.src != conn->key)
				continue;
			kfab_list_del(&req->te.link);
			opx_cntr_rx(rxc, err);
			kfab_cq_write_err(rxc->cq, req->context,
					  FI_RECV | (req->flags &
						     (FI_MSG | FI_TAGGED)),
					  err, 0, 0, 0, 0, req->te.tag,
					  FI_ADDR_NOTAVAIL);
			if (req->flags & FI_MULTI_RECV) {
				req->mr_retired = true;
				if (req->mr_inflight)
					continue;
			}
			opx_req_put(ep, req);
		}
	}
}

void opx_rx_fail_conn(struct opx_ep *ep, struct opx_conn *conn, int err)
{
	/* receives matched to its messages, in progress */
	for (uint32_t i = 0; i < ep->nreqs; i++) {
		struct opx_req *req = &ep->reqs[i];

		if (req->kind == OPX_REQ_TX || req->conn != conn ||
		    (req->flags & FI_MULTI_RECV))
			continue;
		if (!req->rzv && req != conn->mp_req)
			continue;
		req->rzv = false;
		req->err = err;
		opx_rx_complete(ep, req);
	}
	conn->mp_req = NULL;
	/* its messages that cannot be completed any more */
	if (conn->mp_ux) {
		struct opx_req *req = conn->mp_ux->waiting;

		kfab_list_del(&conn->mp_ux->te.link);
		opx_ux_free(conn->mp_ux);
		conn->mp_ux = NULL;
		if (req) {
			req->err = err;
			opx_rx_complete(ep, req);
		}
	}

	for (uint32_t i = 0; i < ep->nrxc; i++)
		opx_rxc_fail_conn(&ep->rxc[i], conn, err);
}

/* Posted receives go back without a completion; unexpected ones go. */
void opx_rx_flush(struct opx_rxc *rxc)
{
	struct opx_ep *ep = rxc->ep;

	for (int t = 0; t < 2; t++) {
		while (!kfab_list_empty(&rxc->tagm.unexp[t])) {
			struct opx_unexp *ux = opx_te_ux(kfab_list_first(
				&rxc->tagm.unexp[t], struct kfab_tagm_entry,
				link));

			opx_rx_discard(ep, ux);
		}
		while (!kfab_list_empty(&rxc->tagm.posted[t])) {
			struct opx_req *req = opx_te_req(kfab_list_first(
				&rxc->tagm.posted[t], struct kfab_tagm_entry,
				link));

			kfab_list_del(&req->te.link);
			if (req->flags & FI_MULTI_RECV) {
				req->mr_retired = true;
				req->comp = false;
				if (req->mr_inflight)
					continue;
			}
			opx_req_put(ep, req);
		}
	}
}
