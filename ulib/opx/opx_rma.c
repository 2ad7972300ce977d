// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: RMA (fi_rma(3)) and atomics (fi_atomic(3)) on regions with
 * application-chosen keys (FI_MR_SCALABLE: addresses are offsets into
 * the region). Every operation is a transmit request that the target
 * answers; the target checks key, range and access (kfab_mr_access())
 * before it touches memory, and a refusal completes the initiator's
 * request with FI_EACCES and err_data saying why.
 *
 *   write <= eager buffer, or below FI_OPX_RZV_MIN_PAYLOAD_BYTES:
 *       WRITE packets, each landing at its own address; the last one
 *       (OPX_F_LAST) is answered by RMA_RESP.
 *   larger writes: WRITE_RTS; the target answers CTS as a rendezvous
 *       receive does, with a TID of the range (opx_rzv_start()), and the
 *       initiator SDMAs into it (one copy) and sends DONE; without a TID,
 *       DATA.
 *   read: READ, carrying a TID of the initiator's buffer when it is one
 *       range of more than an eager packet; the target SDMAs its region
 *       into it and sends DONE, or sends DATA packets.
 *   atomic: ATOMIC with the operands (and compare values), at most
 *       OPX_ATOMIC_MAX bytes of each; the target applies them in its
 *       progress (kfab_atomic_apply()) and answers RMA_RESP with the
 *       values fetched.
 *
 * An operation completes when the target has answered: the data is in
 * place (delivery complete). Remote CQ data (fi_writedata) is a receive
 * completion at the target with FI_RMA | FI_REMOTE_WRITE |
 * FI_REMOTE_CQ_DATA that consumes no posted receive. Counters bound with
 * FI_REMOTE_READ / FI_REMOTE_WRITE count operations served; fi_getinfo
 * refuses FI_RMA_EVENT (no per-operation target completions).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "core/kfab_atomic.h"
#include "core/kfab_rma.h"
#include "opx.h"

/* rma_cntr[] of a transmit context, and of a receive context */
enum { OPX_CNTR_READ, OPX_CNTR_WRITE };
enum { OPX_CNTR_RREAD, OPX_CNTR_RWRITE };

/* ------------------------------------------------------------------ */
/* initiator: completion */

static const char *opx_rma_why(const struct opx_req *req, char *buf,
			       size_t len)
{
	unsigned long long key = req->rma_key;

	switch (req->status) {
	case -ENOKEY:
		snprintf(buf, len, "remote key %#llx is not registered", key);
		break;
	case -ERANGE:
		snprintf(buf, len, "range outside the region of key %#llx",
			 key);
		break;
	case -EPERM:
		/* fetching atomics need both, FI_ATOMIC_READ only READ */
		snprintf(buf, len, "region of key %#llx lacks FI_REMOTE_%s",
			 key, req->flags & FI_WRITE ? "WRITE" :
			 !(req->flags & FI_ATOMIC) ? "READ" : "READ/WRITE");
		break;
	case -EINVAL:
		snprintf(buf, len, "atomic elements span iovecs of key %#llx",
			 key);
		break;
	case -ENXIO:
		snprintf(buf, len, "the target has no receive context %u",
			 req->rx);
		break;
	default:
		snprintf(buf, len, "the target answered %s",
			 fi_strerror(-req->status));
		break;
	}
	return buf;
}

void opx_rma_complete(struct opx_ep *ep, struct opx_req *req)
{
	uint64_t flags = req->flags & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE);
	struct opx_txc *txc = req->txc;
	int err = req->err;
	char why[KFAB_ERR_DATA_MAX - 16];

	if (req->tid) {
		kfab_hfi_tid_free(ep->dev, req->tid);
		req->tid = 0;
	}
	if (req->abuf) {
		opx_buf_put(ep, req->abuf);
		req->abuf = NULL;
	}
	/* a target's reply to a read, or its context closed: no report */
	if ((req->flags & FI_REMOTE_READ) || !txc->side.cq) {
		opx_req_put(ep, req);
		return;
	}
	if (!err && req->status)
		err = kfab_rma_err(req->status);
	kfab_cntr_add(txc->side.rma_cntr[flags & FI_READ ? OPX_CNTR_READ :
				   OPX_CNTR_WRITE], err);
	if (err)
		kfab_cq_write_err_why(txc->side.cq, req->context, flags, err,
				      req->status, 0, 0, 0, 0,
				      FI_ADDR_NOTAVAIL,
				      req->status && !req->err ?
				      opx_rma_why(req, why, sizeof(why)) :
				      NULL);
	else if (req->comp)
		kfab_cq_write(txc->side.cq, req->context, flags, 0, NULL, 0, 0,
			      FI_ADDR_NOTAVAIL);
	opx_req_put(ep, req);
}

/* ------------------------------------------------------------------ */
/* initiator: posting */

/* The connection and a request of an RMA or atomic call; 0 or -FI_E*. */
static int opx_rma_req(struct opx_txc *txc, fi_addr_t dest, uint64_t flags,
		       struct opx_conn **connp, struct opx_req **reqp)
{
	struct opx_ep *ep = txc->ep;
	struct opx_conn *conn;
	struct opx_req *req;
	uint8_t rx;
	int ret;

	conn = opx_conn_resolve(ep, dest, "RMA", &rx, &ret);
	if (!conn)
		return ret;
	ret = opx_conn_map(ep, conn);
	if (ret)
		return ret;
	/* an inject's data is copied when it is posted: now or never */
	if ((flags & FI_INJECT) && (!kfab_list_empty(&conn->txq) ||
				    !opx_conn_has_slot(conn, false))) {
		kfab_ep_progress(&ep->core);
		if (!kfab_list_empty(&conn->txq) ||
		    !opx_conn_has_slot(conn, false))
			return -FI_EAGAIN;
	}
	req = opx_req_tx(txc);
	if (!req) {
		kfab_ep_progress(&ep->core);
		req = opx_req_tx(txc);
		if (!req)
			return -FI_EAGAIN;
	}
	req->conn = conn;
	req->rx = rx;
	req->comp = kfab_tx_comp(flags, txc->side.selective);
	*connp = conn;
	*reqp = req;
	return 0;
}

static ssize_t opx_rma_post(struct opx_txc *txc, bool read,
			    const struct iovec *iov, size_t count,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    uint64_t data, void *context, uint64_t flags)
{
	struct opx_ep *ep = txc->ep;
	const struct opx_params *p = ep->params;
	struct opx_conn *conn;
	struct opx_req *req;
	size_t len;
	uint32_t tid;
	int ret;

	ret = kfab_rma_check(ep->domain->kp, txc->caps, iov, count,
			     ep->info->ep_attr->max_msg_size,
			     ep->info->tx_attr->inject_size, flags, &len);
	if (ret)
		return ret;
	ret = opx_rma_req(txc, dest, flags, &conn, &req);
	if (ret)
		return ret;
	memcpy(req->iov, iov, count * sizeof(*iov));
	req->iov_count = (uint32_t)count;
	req->len = len;
	req->context = context;
	req->flags = flags | FI_RMA | (read ? FI_READ : FI_WRITE);
	req->data = data;
	req->rma_key = key;
	req->rma_addr = addr;
	if (read) {
		req->op = OPX_OP_READ;
		req->xfer = len;
		req->rzv = true;
		if (count == 1 && len > opx_eager_max(conn) &&
		    !p->sdma_disable && !conn->no_sdma &&
		    len >= p->sdma_min_payload_bytes &&
		    !kfab_hfi_tid_update(ep->dev, iov[0].iov_base, len, &tid)) {
			req->tid = tid;
			req->rma_aux = tid;
		}
	} else if (len <= opx_eager_max(conn) ||
		   (len < p->rzv_min_payload_bytes && !p->mp_eager_disable)) {
		req->op = OPX_OP_WRITE;
	} else {
		req->op = OPX_OP_WRITE_RTS;
	}
	opx_tx_start(ep, conn, req);
	return 0;
}

ssize_t opx_rma(struct fid_ep *fid, bool read, const struct iovec *iov,
		size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		uint64_t data, void *context, uint64_t flags)
{
	ssize_t ret;
	struct opx_txc *txc = opx_txc_enter(fid, &ret);

	if (kfab_unlikely(!txc))
		return ret;
	ret = opx_rma_post(txc, read, iov, count, dest, addr, key, data,
			   context, flags);
	opx_ep_unlock(txc->ep);
	return ret;
}

/* ------------------------------------------------------------------ */
/* initiator: atomics */

static ssize_t opx_atomic_post(struct opx_txc *txc,
			       enum kfab_atomic_kind kind,
			       const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, size_t ccount,
			       const struct fi_ioc *resultv, size_t rcount,
			       uint64_t flags)
{
	struct opx_ep *ep = txc->ep;
	struct opx_conn *conn;
	struct opx_req *req;
	size_t count;
	uint8_t *buf;
	int ret;

	ret = kfab_atomic_check(ep->domain->kp, txc->caps, OPX_ATOMIC_MAX,
				ep->info->tx_attr->inject_size, kind, msg,
				comparev, ccount, resultv, rcount, flags);
	if (ret)
		return ret;
	buf = opx_buf_get(ep);
	if (!buf)
		return -FI_ENOMEM;
	ret = opx_rma_req(txc, msg->addr, flags, &conn, &req);
	if (ret) {
		opx_buf_put(ep, buf);
		return ret;
	}
	count = msg->rma_iov[0].count;
	req->abuf = buf;
	req->alen = kfab_atomic_pack(buf, kind, msg, comparev, ccount);
	req->iov_count = kfab_atomic_results(req->iov, kind, msg->datatype,
					     resultv, rcount);
	req->len = count * kfab_atomic_dtsize(msg->datatype);
	req->context = msg->context;
	req->flags = flags | FI_ATOMIC |
		     (kind == KFAB_ATOMIC_WRITE ? FI_WRITE : FI_READ);
	req->rma_key = msg->rma_iov[0].key;
	req->rma_addr = msg->rma_iov[0].addr;
	req->rma_aux = OPX_ATOMIC_AUX(msg->datatype, msg->op, kind);
	req->rma_count = (uint32_t)count;
	req->op = OPX_OP_ATOMIC;
	opx_tx_start(ep, conn, req);
	return 0;
}

static ssize_t opx_ep_atomic(struct fid_ep *fid, enum kfab_atomic_kind kind,
			     const struct fi_msg_atomic *msg,
			     const struct fi_ioc *comparev,
			     void **compare_desc, size_t ccount,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t rcount, uint64_t flags)
{
	ssize_t ret;
	struct opx_txc *txc = opx_txc_enter(fid, &ret);

	(void)compare_desc;
	(void)result_desc;
	if (kfab_unlikely(!txc))
		return ret;
	ret = opx_atomic_post(txc, kind, msg, comparev, ccount, resultv,
			      rcount, flags);
	opx_ep_unlock(txc->ep);
	return ret;
}

static size_t opx_atomic_max(struct fid_ep *fid)
{
	struct opx_txc *txc = opx_txc_of(fid);

	return txc && (txc->caps & FI_ATOMIC) ? OPX_ATOMIC_MAX : 0;
}

struct kfab_atomic_ops opx_atomic_ops = {
	.ops = KFAB_ATOMIC_FI_OPS,
	.post = opx_ep_atomic,
	.max_bytes = opx_atomic_max,
};

/* ------------------------------------------------------------------ */
/* target */

static void opx_rma_count(struct opx_rxc *rxc, int which)
{
	if (rxc->side.rma_cntr[which])
		kfab_cntr_inc(rxc->side.rma_cntr[which]);
}

/* A write (or base atomic) landed: counter, remote CQ data. */
static void opx_rma_written(struct opx_rxc *rxc, struct opx_conn *conn,
			    bool cq_data, uint64_t data, size_t len)
{
	opx_rma_count(rxc, OPX_CNTR_RWRITE);
	if (cq_data && rxc->side.cq)
		kfab_cq_write(rxc->side.cq, NULL,
			      FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			      len, NULL, data, 0, opx_rx_src(rxc, conn));
}

void opx_rma_target_done(struct opx_ep *ep, struct opx_req *req)
{
	if (!req->rxr.err)
		opx_rma_written(req->rxc, req->conn,
				req->rxr.msg_flags & FI_REMOTE_CQ_DATA,
				req->rxr.msg_data, req->xfer);
	opx_req_put(ep, req);
}

/* RMA_RESP to the initiator's @sreq; @buf (owned) the fetched values. */
static void opx_rma_answer(struct opx_ep *ep, struct opx_conn *conn,
			   uint32_t sreq, int32_t status, void *buf,
			   size_t len)
{
	struct opx_hdr resp;

	opx_hdr_init(ep, conn, &resp, OPX_OP_RMA_RESP, 0);
	resp.u.resp.sreq = sreq;
	resp.u.resp.status = status;
	if (opx_post_reply(ep, conn, &resp, buf, len))
		kfab_warn(ep->domain->kp, FI_LOG_EP_DATA,
			  "RMA reply lost: out of memory\n");
	opx_conn_xmit(ep, conn);
}

static void opx_rma_on_write(struct opx_ep *ep, struct opx_rxc *rxc,
			     struct opx_conn *conn, const struct opx_hdr *hdr,
			     const uint8_t *payload, uint32_t len)
{
	struct iovec iov[KFAB_IOV_LIMIT];
	int32_t status;
	int n;

	if (!conn->wr_status && !rxc)
		conn->wr_status = -ENXIO;
	if (!conn->wr_status) {
		n = kfab_mr_access(ep->domain, hdr->u.rma.key,
				   hdr->u.rma.addr, len, FI_REMOTE_WRITE, iov);
		if (n < 0)
			conn->wr_status = n;
		else
			kfab_buf_to_iov(iov, (size_t)n, 0, payload, len);
	}
	if (!(hdr->flags & OPX_F_LAST))
		return;
	status = conn->wr_status;
	conn->wr_status = 0;
	if (!status)
		opx_rma_written(rxc, conn, hdr->flags & OPX_F_CQ_DATA,
				hdr->data, hdr->tag);
	opx_rma_answer(ep, conn, hdr->u.rma.sreq, status, NULL, 0);
}

/*
 * The target's request for the write (@access FI_REMOTE_WRITE: a CTS
 * follows) or read (FI_REMOTE_READ: the data follow) @hdr asks, over the
 * memory it names. NULL when refused, the refusal sent: -ENXIO without a
 * receive context, the registration's refusal, or -ENOMEM.
 */
static struct opx_req *opx_rma_target_req(struct opx_ep *ep,
					  struct opx_rxc *rxc,
					  struct opx_conn *conn,
					  const struct opx_hdr *hdr,
					  uint64_t access)
{
	bool write = access == FI_REMOTE_WRITE;
	struct iovec iov[KFAB_IOV_LIMIT];
	struct opx_req *req = NULL;
	struct opx_hdr no;
	int n = -ENXIO;

	if (rxc)
		n = kfab_mr_access(ep->domain, hdr->u.rma.key, hdr->u.rma.addr,
				   hdr->tag, access, iov);
	if (n >= 0) {
		req = opx_req_get_internal(ep, write ? OPX_REQ_RX : OPX_REQ_TX);
		if (!req)
			n = -ENOMEM;
	}
	if (n >= 0) {
		memcpy(req->iov, iov, (size_t)n * sizeof(*iov));
		req->iov_count = (uint32_t)n;
		req->conn = conn;
		return req;
	}
	if (write) {
		opx_hdr_init(ep, conn, &no, OPX_OP_CTS, 0);
		no.u.cts.sreq = hdr->u.rma.sreq;
		no.u.cts.status = n;
	} else {
		opx_hdr_init(ep, conn, &no, OPX_OP_DONE, OPX_F_RDRSP);
		no.u.data.rreq = hdr->u.rma.sreq;
		no.u.data.status = n;
	}
	opx_post_ctl(ep, conn, &no, OPX_HDR_BASE, NULL);
	opx_conn_xmit(ep, conn);
	return NULL;
}

static void opx_rma_on_write_rts(struct opx_ep *ep, struct opx_rxc *rxc,
				 struct opx_conn *conn,
				 const struct opx_hdr *hdr)
{
	struct opx_req *req = opx_rma_target_req(ep, rxc, conn, hdr,
						 FI_REMOTE_WRITE);

	if (!req)
		return;
	req->rxr.len = req->rxr.msg_len = hdr->tag;
	req->rxr.flags = FI_RMA | FI_REMOTE_WRITE;
	req->rxr.msg_flags = hdr->flags & OPX_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0;
	req->rxr.msg_data = hdr->data;
	req->rxc = rxc;
	opx_rzv_start(ep, conn, req, hdr->u.rma.sreq, hdr->flags);
}

static void opx_rma_on_read(struct opx_ep *ep, struct opx_rxc *rxc,
			    struct opx_conn *conn, const struct opx_hdr *hdr)
{
	struct opx_req *req = opx_rma_target_req(ep, rxc, conn, hdr,
						 FI_REMOTE_READ);
	uint32_t tid = hdr->u.rma.aux;

	if (!req)
		return;
	opx_rma_count(rxc, OPX_CNTR_RREAD);
	req->len = req->xfer = hdr->tag;
	req->rreq = hdr->u.rma.sreq;
	req->flags = FI_RMA | FI_REMOTE_READ;
	if (ep->params->sdma_disable || conn->no_sdma)
		tid = 0;
	opx_tx_rzv_send(ep, conn, req, tid);
}

static void opx_rma_on_atomic(struct opx_ep *ep, struct opx_rxc *rxc,
			      struct opx_conn *conn, const struct opx_hdr *hdr,
			      const uint8_t *payload, uint32_t len)
{
	uint32_t aux = hdr->u.rma.aux;
	enum fi_datatype dt = (enum fi_datatype)OPX_ATOMIC_DT(aux);
	enum fi_op op = (enum fi_op)OPX_ATOMIC_OP(aux);
	enum kfab_atomic_kind kind = (enum kfab_atomic_kind)OPX_ATOMIC_KIND(aux);
	struct iovec iov[KFAB_IOV_LIMIT];
	size_t size, bytes = 0, want;
	uint64_t access;
	void *res = NULL;
	int32_t status;
	int n = 0;

	status = !rxc ? -ENXIO :
		 kfab_atomic_valid(dt, op, kind) ? -EOPNOTSUPP : 0;
	if (!status) {
		size = kfab_atomic_dtsize(dt);
		bytes = hdr->tag * size;
		want = (op == FI_ATOMIC_READ ? 0 : bytes) +
		       (kind == KFAB_ATOMIC_COMPARE ? bytes : 0);
		if (hdr->tag > OPX_ATOMIC_MAX || len != want)
			status = -EINVAL;
	}
	if (!status) {
		access = kind == KFAB_ATOMIC_WRITE ? FI_REMOTE_WRITE :
			 op == FI_ATOMIC_READ ? FI_REMOTE_READ :
			 FI_REMOTE_READ | FI_REMOTE_WRITE;
		n = kfab_mr_access(ep->domain, hdr->u.rma.key,
				   hdr->u.rma.addr, bytes, access, iov);
		status = n < 0 ? n : n > 1 ? -EINVAL : 0;
	}
	if (!status && kind != KFAB_ATOMIC_WRITE) {
		res = opx_buf_get(ep);
		if (!res)
			status = -ENOMEM;
	}
	if (!status) {
		kfab_atomic_apply(dt, op, n ? iov[0].iov_base : NULL,
				  op == FI_ATOMIC_READ ? NULL : payload,
				  kind == KFAB_ATOMIC_COMPARE ?
				  payload + (len - bytes) : NULL,
				  res, hdr->tag);
		if (kind == KFAB_ATOMIC_WRITE)
			opx_rma_written(rxc, conn, false, 0, bytes);
		else
			opx_rma_count(rxc, OPX_CNTR_RREAD);
	}
	opx_rma_answer(ep, conn, hdr->u.rma.sreq, status, res,
		       res ? bytes : 0);
}

/* RMA_RESP: a write or an atomic of ours was answered. */
static void opx_rma_on_resp(struct opx_ep *ep, struct opx_conn *conn,
			    const struct opx_hdr *hdr, const uint8_t *payload,
			    uint32_t len)
{
	struct opx_req *req = opx_req_lookup(ep, hdr->u.resp.sreq,
					     OPX_REQ_TX);

	if (!req || req->conn != conn || !req->refs ||
	    (req->op != OPX_OP_WRITE && req->op != OPX_OP_ATOMIC))
		return;
	req->status = hdr->u.resp.status;
	if (!req->status && len)
		kfab_buf_to_iov(req->iov, req->iov_count, 0, payload,
			       len < req->len ? len : req->len);
	if (!--req->refs && req->posted)
		opx_tx_complete(ep, req);
}

void opx_rma_deliver(struct opx_ep *ep, struct opx_rxc *rxc,
		     struct opx_conn *conn, const struct opx_hdr *hdr,
		     const uint8_t *payload, uint32_t len)
{
	switch (hdr->op) {
	case OPX_OP_WRITE:
		opx_rma_on_write(ep, rxc, conn, hdr, payload, len);
		break;
	case OPX_OP_WRITE_RTS:
		opx_rma_on_write_rts(ep, rxc, conn, hdr);
		break;
	case OPX_OP_READ:
		opx_rma_on_read(ep, rxc, conn, hdr);
		break;
	case OPX_OP_ATOMIC:
		opx_rma_on_atomic(ep, rxc, conn, hdr, payload, len);
		break;
	default:
		opx_rma_on_resp(ep, conn, hdr, payload, len);
		break;
	}
}
