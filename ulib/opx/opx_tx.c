// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: the send protocols, chosen by length (fi_opx(7)):
 *
 *   <= OPX_INLINE_MAX        one packet, payload inline in the header
 *   <= eager packet size     one packet with one eager buffer
 *   <  RZV_MIN_PAYLOAD_BYTES multi-packet eager (MP_FIRST, MP_NTH...),
 *                            unless FI_OPX_MP_EAGER_DISABLE
 *   otherwise                rendezvous: RTS; the receiver answers CTS with
 *                            a TID of its buffer (expected receive) when
 *                            the sender may SDMA, and the sender copies the
 *                            payload straight into it (one copy, by the
 *                            kernel or process_vm_writev) and sends DONE;
 *                            without a TID, DATA packets through the eager
 *                            buffers.
 *
 * Completion, as fi_opx(7) has it: an eager or multi-packet eager send
 * copies its payload into replay buffers as its packets are posted and
 * completes once the last one is posted (FI_INJECT_COMPLETE and
 * FI_TRANSMIT_COMPLETE): the reliability service owns the data from then
 * on, as an HFI's replay buffers do, and the peer need not make progress
 * for the send to complete. An FI_DELIVERY_COMPLETE send leaves the payload
 * in the application's buffer, read when a packet is (re)transmitted, and
 * completes when the peer acknowledges its last packet, which the peer does
 * at once (OPX_F_ACKREQ). A rendezvous send of at most
 * FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD bytes completes when its SDMA returns; a
 * larger one, and one whose payload went as DATA packets, when the peer
 * acknowledges DONE or the last DATA packet.
 *
 * Packets of one connection are posted in the order of the sends
 * (send-after-send): a send finding earlier ones queued queues behind them.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "opx.h"

void opx_tx_complete(struct opx_ep *ep, struct opx_req *req)
{
	uint64_t flags = FI_SEND | (req->flags & (FI_MSG | FI_TAGGED));
	struct opx_txc *txc = req->txc;

	if (kfab_unlikely(req->flags & (FI_RMA | FI_ATOMIC | FI_REMOTE_READ))) {
		opx_rma_complete(ep, req);
		return;
	}
	if (kfab_likely(txc->side.cq)) {
		opx_cntr_tx(txc, req->err);
		if (req->err)
			kfab_cq_write_err(txc->side.cq, req->context, flags,
					  req->err, 0, 0, 0, 0, 0,
					  FI_ADDR_NOTAVAIL);
		else if (req->comp)
			kfab_cq_write(txc->side.cq, req->context, flags, 0,
				      NULL, 0, 0, FI_ADDR_NOTAVAIL);
	}
	opx_req_put(ep, req);
}

static void opx_tx_done_posting(struct opx_ep *ep, struct opx_req *req)
{
	req->posted = true;
	if (!req->refs)
		opx_tx_complete(ep, req);
}

static uint8_t opx_msg_flags(uint64_t flags)
{
	uint8_t f = 0;

	if (flags & FI_TAGGED)
		f |= OPX_F_TAGGED;
	if (flags & FI_REMOTE_CQ_DATA)
		f |= OPX_F_CQ_DATA;
	if (flags & FI_REMOTE_READ)
		f |= OPX_F_RDRSP;
	return f;
}

/*
 * The payload of a new slot: inline in the header, copied into a replay
 * buffer, or (@ref) left in the request, which then waits for the ACK.
 */
static int opx_slot_fill(struct opx_ep *ep, struct opx_conn *conn,
			 struct opx_slot *s, const struct iovec *iov,
			 size_t count, size_t off, size_t len,
			 struct opx_req *ref)
{
	if (ref) {
		s->req = ref;
		ref->refs++;
	}
	if (len <= OPX_INLINE_MAX &&
	    (s->hdr.op == OPX_OP_EAGER || s->hdr.op == OPX_OP_WRITE)) {
		kfab_iov_to_buf(iov, count, off, s->hdr.inl, len);
		s->hdr.ilen = (uint16_t)len;
		s->hdrlen = (uint16_t)(OPX_HDR_BASE + len);
		return 0;
	}
	s->off = off;
	s->len = len;
	if (ref) {
		s->src = OPX_SRC_REQ;
		return 0;
	}
	s->buf = opx_buf_get(ep);
	if (!s->buf) {
		/* the slot was the last one taken: give it back */
		conn->psn_next--;
		return -FI_ENOMEM;
	}
	kfab_iov_to_buf(iov, count, off, s->buf, len);
	s->src = OPX_SRC_OWNED;
	return 0;
}

/* A packet of @req's payload at @off. */
static struct opx_slot *opx_slot_payload(struct opx_ep *ep,
					 struct opx_conn *conn,
					 struct opx_req *req, uint8_t op,
					 size_t off, size_t len, bool ref)
{
	struct opx_slot *s = opx_slot_new(ep, conn, op,
					  opx_msg_flags(req->flags));

	if (!s)
		return NULL;
	s->hdr.rx = req->rx;
	s->hdr.tag = req->tag;
	s->hdr.data = (uint32_t)req->data;
	if (opx_slot_fill(ep, conn, s, req->iov, req->iov_count, off, len,
			  ref ? req : NULL))
		return NULL;
	return s;
}

/* The RMA fields of a packet of @req; the target answers to its handle. */
static void opx_slot_rma(struct opx_slot *s, const struct opx_req *req,
			 uint64_t off, uint64_t len)
{
	s->hdr.rx = req->rx;
	s->hdr.tag = len;
	s->hdr.u.rma.key = req->rma_key;
	s->hdr.u.rma.addr = req->rma_addr + off;
	s->hdr.u.rma.sreq = opx_req_handle(req);
	s->hdr.u.rma.aux = req->rma_aux;
}

/* An ATOMIC packet: its operands go inline or in the owned buffer. */
static struct opx_slot *opx_slot_atomic(struct opx_ep *ep,
					struct opx_conn *conn,
					struct opx_req *req)
{
	struct opx_slot *s = opx_slot_new(ep, conn, OPX_OP_ATOMIC, 0);

	if (!s)
		return NULL;
	opx_slot_rma(s, req, 0, req->rma_count);
	if (req->alen <= OPX_INLINE_MAX) {
		memcpy(s->hdr.inl, req->abuf, req->alen);
		s->hdr.ilen = (uint16_t)req->alen;
		s->hdrlen = (uint16_t)(OPX_HDR_BASE + req->alen);
		opx_buf_put(ep, req->abuf);
	} else {
		s->src = OPX_SRC_OWNED;
		s->buf = req->abuf;
		s->len = req->alen;
	}
	req->abuf = NULL;
	return s;
}

/*
 * Posts the next packet(s) of a queued request while slots last: true
 * once it has no packet left to post. RMA and atomic requests take a
 * reference until the target answers (RMA_RESP, CTS, DATA or DONE).
 */
static bool opx_tx_post(struct opx_ep *ep, struct opx_conn *conn,
			struct opx_req *req)
{
	size_t emax = opx_eager_max(conn);
	struct opx_slot *s;

	while (opx_conn_has_slot(conn, false)) {
		size_t n;

		switch (req->op) {
		case OPX_OP_EAGER:
			s = opx_slot_payload(ep, conn, req, OPX_OP_EAGER, 0,
					     req->len, req->dc);
			if (!s)
				return false;
			s->hdr.u.msg.len = req->len;
			if (req->dc)
				s->hdr.flags |= OPX_F_ACKREQ;
			return true;
		case OPX_OP_MP_FIRST:
			n = req->len - req->sent < emax ? req->len - req->sent :
							  emax;
			s = opx_slot_payload(ep, conn, req,
					     req->sent ? OPX_OP_MP_NTH :
							 OPX_OP_MP_FIRST,
					     req->sent, n, req->dc);
			if (!s)
				return false;
			if (req->sent)
				s->hdr.u.mp.off = req->sent;
			else
				s->hdr.u.msg.len = req->len;
			req->sent += n;
			if (req->sent < req->len)
				break;
			if (req->dc)
				s->hdr.flags |= OPX_F_ACKREQ;
			return true;
		case OPX_OP_WRITE:
			n = req->len - req->sent < emax ? req->len - req->sent :
							  emax;
			s = opx_slot_payload(ep, conn, req, OPX_OP_WRITE,
					     req->sent, n,
					     !(req->flags & FI_INJECT));
			if (!s)
				return false;
			opx_slot_rma(s, req, req->sent, req->len);
			req->sent += n;
			if (req->sent < req->len)
				break;
			s->hdr.flags |= OPX_F_LAST;
			req->refs++;
			return true;
		case OPX_OP_READ:
		case OPX_OP_ATOMIC:
			s = req->op == OPX_OP_READ ?
				opx_slot_new(ep, conn, OPX_OP_READ, 0) :
				opx_slot_atomic(ep, conn, req);
			if (!s)
				return false;
			if (req->op == OPX_OP_READ)
				opx_slot_rma(s, req, 0, req->len);
			req->refs++;
			return true;
		case OPX_OP_RTS:
		case OPX_OP_WRITE_RTS:
			s = opx_slot_new(ep, conn, req->op,
					 opx_msg_flags(req->flags));
			if (!s)
				return false;
			if (req->op == OPX_OP_WRITE_RTS) {
				opx_slot_rma(s, req, 0, req->len);
				s->hdr.data = (uint32_t)req->data;
			} else {
				s->hdr.rx = req->rx;
				s->hdr.tag = req->tag;
				s->hdr.data = (uint32_t)req->data;
				s->hdr.u.rts.len = req->len;
				s->hdr.u.rts.sreq = opx_req_handle(req);
			}
			if (!ep->params->sdma_disable && !conn->no_sdma &&
			    req->len >= ep->params->sdma_min_payload_bytes)
				s->hdr.flags |= OPX_F_SDMA;
			/* a reference until the CTS comes */
			req->refs++;
			return true;
		case OPX_OP_DATA:
			n = req->xfer - req->sent < emax ?
				    req->xfer - req->sent : emax;
			s = opx_slot_payload(ep, conn, req, OPX_OP_DATA,
					     req->sent, n, true);
			if (!s)
				return false;
			s->hdr.u.data.off = req->sent;
			s->hdr.u.data.rreq = req->rreq;
			req->sent += n;
			if (req->sent < req->xfer)
				break;
			s->hdr.flags |= OPX_F_ACKREQ;
			return true;
		default:
			return true;
		}
	}
	return false;
}

/* After the request's last packet is posted. */
static void opx_tx_posted(struct opx_ep *ep, struct opx_req *req)
{
	if (req->op != OPX_OP_RTS && req->op != OPX_OP_WRITE_RTS)
		opx_tx_done_posting(ep, req);
}

void opx_conn_push(struct opx_ep *ep, struct opx_conn *conn)
{
	while (!kfab_list_empty(&conn->txq)) {
		struct opx_req *req = kfab_list_first(&conn->txq,
						      struct opx_req, qlink);

		if (!conn->peer && opx_conn_map(ep, conn)) {
			opx_conn_fail(ep, conn, FI_EHOSTUNREACH);
			return;
		}
		if (!opx_tx_post(ep, conn, req))
			break;
		kfab_list_del(&req->qlink);
		opx_tx_posted(ep, req);
	}
	opx_conn_xmit(ep, conn);
	if (kfab_list_empty(&conn->txq) && kfab_list_empty(&conn->deferred) &&
	    conn->psn_sent == conn->psn_next)
		kfab_list_del(&conn->busy_link);
}

/*
 * A one-packet send that is done with the application's buffer on return:
 * sent straight from it on a wire that loses nothing, else copied for
 * replay.
 */
static int opx_send_eager(struct opx_ep *ep, struct opx_conn *conn,
			  const struct iovec *iov, size_t count, size_t len,
			  uint8_t rx, uint64_t tag, uint64_t data,
			  uint64_t flags)
{
	struct opx_slot *s = opx_slot_new(ep, conn, OPX_OP_EAGER,
					  opx_msg_flags(flags));
	const void *payload;
	int ret;

	if (!s)
		return -FI_ENOMEM;
	s->hdr.rx = rx;
	s->hdr.tag = tag;
	s->hdr.data = (uint32_t)data;
	s->hdr.u.msg.len = len;
	if (len > OPX_INLINE_MAX) {
		if (count == 1) {
			payload = iov[0].iov_base;
		} else {
			kfab_iov_to_buf(iov, count, 0, ep->bounce, len);
			payload = ep->bounce;
		}
		ret = opx_xmit_direct(ep, conn, s, payload, len);
		if (ret != -EPERM && ret != -EAGAIN)
			return ret == -ENETDOWN ? -FI_ENETDOWN :
			       ret ? -FI_ECONNRESET : 0;
	}
	ret = opx_slot_fill(ep, conn, s, iov, count, 0, len, NULL);
	if (!ret)
		opx_conn_xmit(ep, conn);
	return ret;
}

static bool opx_delivery_complete(const struct opx_txc *txc, uint64_t flags)
{
	uint64_t c = flags & (FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE |
			      FI_DELIVERY_COMPLETE);

	if (!c)
		c = txc->side.op_flags;
	return c & FI_DELIVERY_COMPLETE;
}

ssize_t opx_send(struct opx_txc *txc, const struct iovec *iov, size_t count,
		 fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
		 uint64_t flags)
{
	struct opx_ep *ep = txc->ep;
	const struct opx_params *p = ep->params;
	struct opx_conn *conn;
	struct opx_req *req;
	size_t len = 0;
	bool comp, dc;
	uint8_t rx;
	int ret;

	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	if (kfab_unlikely(len > ep->info->ep_attr->max_msg_size))
		return -FI_EMSGSIZE;
	if (kfab_unlikely((flags & FI_INJECT) &&
			  len > ep->info->tx_attr->inject_size))
		return -FI_EMSGSIZE;
	conn = opx_conn_resolve(ep, dest, "send", &rx, &ret);
	if (kfab_unlikely(!conn))
		return ret;
	ret = opx_conn_map(ep, conn);
	if (kfab_unlikely(ret))
		return ret;
	comp = kfab_tx_comp(flags, txc->side.selective);
	dc = !(flags & FI_INJECT) && opx_delivery_complete(txc, flags);

	if (!dc && len <= opx_eager_max(conn)) {
		if (!kfab_list_empty(&conn->txq) ||
		    !opx_conn_has_slot(conn, false))
			kfab_ep_progress(&ep->core);
		if (kfab_list_empty(&conn->txq) &&
		    opx_conn_has_slot(conn, false)) {
			ret = opx_send_eager(ep, conn, iov, count, len, rx,
					     tag, data, flags);
			if (ret == -FI_ECONNRESET || ret == -FI_ENETDOWN)
				opx_conn_fail(ep, conn, -ret);
			if (ret)
				return ret;
			opx_cntr_tx(txc, 0);
			if (comp)
				kfab_cq_write(txc->side.cq, context,
					      FI_SEND | (flags & (FI_MSG |
								  FI_TAGGED)),
					      0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
			return 0;
		}
		/* fi_inject() must copy now: there is no room */
		if (flags & FI_INJECT)
			return -FI_EAGAIN;
	}

	req = opx_req_tx(txc);
	if (kfab_unlikely(!req)) {
		kfab_ep_progress(&ep->core);
		req = opx_req_tx(txc);
		if (!req)
			return -FI_EAGAIN;
	}
	memcpy(req->iov, iov, count * sizeof(*iov));
	req->iov_count = (uint32_t)count;
	req->len = len;
	req->context = context;
	req->flags = flags;
	req->tag = tag;
	req->data = data;
	req->conn = conn;
	req->rx = rx;
	req->comp = comp;
	req->dc = dc;
	if (len <= opx_eager_max(conn))
		req->op = OPX_OP_EAGER;
	else if (len < p->rzv_min_payload_bytes && !p->mp_eager_disable)
		req->op = OPX_OP_MP_FIRST;
	else
		req->op = OPX_OP_RTS;
	opx_tx_start(ep, conn, req);
	return 0;
}

void opx_tx_start(struct opx_ep *ep, struct opx_conn *conn,
		  struct opx_req *req)
{
	if (kfab_list_empty(&conn->txq) && opx_tx_post(ep, conn, req)) {
		/* before the transmit, which may fail the connection and
		 * complete @req with it
		 */
		opx_tx_posted(ep, req);
		opx_conn_xmit(ep, conn);
		return;
	}
	kfab_list_add_tail(&req->qlink, &conn->txq);
	opx_conn_busy(ep, conn);
	opx_conn_push(ep, conn);
}

/* SDMA the first @xfer bytes of @req into the peer's TID. */
static int opx_tx_sdma(struct opx_ep *ep, struct opx_conn *conn,
		       struct opx_req *req, uint32_t tid)
{
	struct iovec iov[KFAB_IOV_LIMIT];
	size_t left = req->xfer;
	uint64_t bytes;
	int n = 0;

	for (uint32_t i = 0; i < req->iov_count && left; i++, n++) {
		iov[n] = req->iov[i];
		if (iov[n].iov_len > left)
			iov[n].iov_len = left;
		left -= iov[n].iov_len;
	}
	return kfab_hfi_sdma(ep->dev, conn->peer, tid, 0, iov, n, 0, &bytes);
}

/* DONE after the SDMA: the send waits for its ACK when @wait. */
static void opx_tx_done(struct opx_ep *ep, struct opx_conn *conn,
			struct opx_req *req, bool wait)
{
	struct opx_hdr done;

	opx_hdr_init(ep, conn, &done, OPX_OP_DONE,
		     opx_msg_flags(req->flags) | (wait ? OPX_F_ACKREQ : 0));
	done.u.data.rreq = req->rreq;
	done.u.data.off = req->xfer;
	if (wait)
		req->refs++;
	if (opx_post_ctl(ep, conn, &done, OPX_HDR_BASE, wait ? req : NULL)) {
		if (wait)
			req->refs--;
		req->err = FI_ENOMEM;
	}
	/* now, not after the rest of this poll's copies */
	opx_conn_xmit(ep, conn);
	opx_tx_done_posting(ep, req);
}

void opx_tx_on_cts(struct opx_ep *ep, struct opx_conn *conn,
		   const struct opx_hdr *hdr)
{
	struct opx_req *req = opx_req_lookup(ep, hdr->u.cts.sreq, OPX_REQ_TX);

	if (!req || req->conn != conn ||
	    (req->op != OPX_OP_RTS && req->op != OPX_OP_WRITE_RTS) ||
	    hdr->u.cts.len > req->len)
		return;
	req->refs--;		/* the CTS came */
	if (hdr->u.cts.status) {
		/* the target refused an RMA write */
		req->status = hdr->u.cts.status;
		opx_tx_done_posting(ep, req);
		return;
	}
	req->xfer = hdr->u.cts.len;
	req->rreq = hdr->u.cts.rreq;
	opx_tx_rzv_send(ep, conn, req, hdr->u.cts.tid);
}

void opx_tx_rzv_send(struct opx_ep *ep, struct opx_conn *conn,
		     struct opx_req *req, uint32_t tid)
{
	int ret;

	if (!req->xfer) {
		opx_tx_done(ep, conn, req, false);
		return;
	}
	if (tid) {
		ret = opx_tx_sdma(ep, conn, req, tid);
		if (!ret) {
			opx_tx_done(ep, conn, req,
				    req->dc || req->xfer >
				    ep->params->sdma_bounce_buf_threshold);
			return;
		}
		if (ret == -ECONNRESET || ret == -ENETDOWN) {
			opx_conn_fail(ep, conn, -ret);
			return;
		}
		/* not permitted or failed: the payload goes as packets */
		if (ret == -EPERM)
			conn->no_sdma = true;
	}
	req->op = OPX_OP_DATA;
	req->sent = 0;
	kfab_list_add_tail(&req->qlink, &conn->txq);
	opx_conn_busy(ep, conn);
}
