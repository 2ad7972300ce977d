// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: sends. A send takes a message id of its peer at once, so
 * messages are matched in the order they were sent (FI_ORDER_SAS), picks
 * its protocol (efa_rdm.h) and posts what the peer takes; the rest goes
 * out from the peer's queue as progress runs, in the background. A send
 * completes when its last packet is in the peer's ring (transmit
 * complete), or on the receiver's answer: EOR for the read protocols,
 * RECEIPT under FI_DELIVERY_COMPLETE.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "efa_rdm.h"

static size_t ext_read_size(uint32_t nregs)
{
	return sizeof(struct efa_rdm_ext_read) +
	       nregs * sizeof(struct efa_rdm_reg);
}

void efa_rdm_tx_complete(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	uint64_t flags;
	struct kfab_cntr *cntr;

	switch (ope->op) {
	case EFA_OP_WRITE:
		flags = FI_RMA | FI_WRITE;
		cntr = ep->tx.rma_cntr[KFAB_RMA_WRITE];
		break;
	case EFA_OP_READ:
		flags = FI_RMA | FI_READ;
		cntr = ep->tx.rma_cntr[KFAB_RMA_READ];
		break;
	case EFA_OP_ATOMIC:
		flags = FI_ATOMIC | (ope->at_kind ? FI_READ : FI_WRITE);
		cntr = ep->tx.rma_cntr[ope->at_kind ? KFAB_RMA_READ :
				       KFAB_RMA_WRITE];
		break;
	case EFA_OP_MSG:
		flags = FI_SEND | (ope->flags & FI_TAGGED ? FI_TAGGED : FI_MSG);
		cntr = ep->tx.cntr;
		break;
	default:
		/* the target's side of a read: nothing to report */
		flags = 0;
		cntr = NULL;
		break;
	}
	efa_rdm_txq_del(ope);
	if (flags) {
		kfab_cntr_add(cntr, ope->err);
		if (ope->err)
			kfab_cq_write_err_why(ep->tx.cq, ope->context, flags,
					      ope->err, 0, 0, 0, 0, 0,
					      FI_ADDR_NOTAVAIL, ope->why);
		else if (ope->comp)
			kfab_cq_write(ep->tx.cq, ope->context, flags, 0, NULL,
				      0, 0, FI_ADDR_NOTAVAIL);
	}
	for (uint32_t i = 0; i < ope->nmrs; i++)
		efa_mr_put(ep->domain, &ope->mrs[i]);
	ope->nmrs = 0;
	efa_rdm_buf_put(ep, ope->owned);
	ope->owned = NULL;
	free(ope->rd);
	ope->rd = NULL;
	efa_rdm_ope_put(ep, ope);
}

/* Every packet posted: complete, unless an answer is still awaited. */
static void tx_posted(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	if (ope->waits)
		ope->state = EFA_TXS_WAIT;
	else
		efa_rdm_tx_complete(ep, ope);
}

static void tx_fail(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope, int ret)
{
	ope->err = ret == -EMSGSIZE ? FI_EMSGSIZE :
		   ope->peer->base.err ? -ope->peer->base.err :
		   ret == -ENETDOWN ? FI_ENETDOWN : FI_EIO;
	ope->why = ret == -ENETDOWN && !ope->peer->base.err ?
		   "this device or the peer's is Down: nothing was sent" :
		   "the peer is unreachable";
	efa_rdm_tx_complete(ep, ope);
}

static void rtm_hdr(struct efa_rdm_ope *ope, struct efa_rdm_hdr *hdr,
		    uint8_t type)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->type = type;
	hdr->flags = (ope->flags & FI_TAGGED ? EFA_F_TAGGED : 0) |
		     (ope->flags & FI_REMOTE_CQ_DATA ? EFA_F_CQ_DATA : 0) |
		     (ope->receipt_wanted ? EFA_F_RECEIPT : 0);
	hdr->msg_id = ope->msg_id;
	hdr->id = efa_rdm_handle(ope);
	hdr->tag = ope->tag;
	hdr->data = ope->data;
}

int efa_rdm_segments(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		     const struct efa_rdm_hdr *hdr, size_t end)
{
	while (ope->sent < end) {
		struct efa_rdm_hdr h = *hdr;
		size_t n = end - ope->sent;
		int ret;

		if (n > ep->max_payload)
			n = ep->max_payload;
		h.tag = ope->sent;
		ret = efa_rdm_post(ep, ope->peer, &h, NULL, 0, ope->iov,
				   ope->iov_count, ope->sent, n);
		if (ret)
			return ret;
		ope->sent += n;
	}
	return 0;
}

/* Posts the bytes [sent, end) in packets of @type after the first. */
static int tx_segments(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		       uint8_t type, size_t end)
{
	struct efa_rdm_hdr hdr = {
		.type = type,
		.msg_id = ope->msg_id,
		.id = type == EFA_PKT_DATA ? ope->rhandle : efa_rdm_handle(ope),
		.data = ope->len,
	};

	return efa_rdm_segments(ep, ope, &hdr, end);
}

/* The first packet: the RTM with its extension and the first bytes. */
static int tx_rtm(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		  const void *ext, size_t extlen, size_t n)
{
	struct efa_rdm_hdr hdr;
	int ret;

	/* taken as the request leaves: one not sent leaves no gap in the ids */
	ope->msg_id = ope->peer->next_msg_id++;
	rtm_hdr(ope, &hdr, ope->type);
	ret = efa_rdm_post(ep, ope->peer, &hdr, ext, extlen, ope->iov,
			   ope->iov_count, 0, n);
	if (ret)
		ope->peer->next_msg_id--;
	else
		ope->sent = n;
	return ret;
}

static int tx_push_msg(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	struct efa_rdm_ext_len el = { .msg_len = ope->len };
	size_t first = ep->max_payload - sizeof(el);
	int ret = 0;

	switch (ope->type) {
	case EFA_PKT_EAGER_RTM:
		ret = tx_rtm(ep, ope, NULL, 0, ope->len);
		break;
	case EFA_PKT_MEDIUM_RTM:
		if (!ope->sent)
			ret = tx_rtm(ep, ope, &el, sizeof(el),
				     first < ope->len ? first : ope->len);
		if (!ret)
			ret = tx_segments(ep, ope, EFA_PKT_MEDIUM_SEG,
					  ope->len);
		break;
	case EFA_PKT_LONGCTS_RTM:
		if (!ope->sent) {
			ret = tx_rtm(ep, ope, &el, sizeof(el), first);
			if (ret)
				break;
			ope->state = EFA_TXS_WAIT;
		}
		ret = tx_segments(ep, ope, EFA_PKT_DATA, ope->allowed);
		if (!ret && ope->sent < ope->len)
			return 0;	/* the next CTS brings us back */
		break;
	case EFA_PKT_LONGREAD_RTM:
	case EFA_PKT_RUNTREAD_RTM:
		if (!ope->sent && ope->rd_pending) {
			struct efa_rdm_ext_read *rd = ope->rd;
			size_t extlen = ext_read_size(rd->nregs);
			size_t n = ope->runt < ep->max_payload - extlen ?
				   ope->runt : ep->max_payload - extlen;

			ret = tx_rtm(ep, ope, rd, extlen, n);
			if (ret)
				break;
			ope->rd_pending = false;
		}
		ret = tx_segments(ep, ope, EFA_PKT_RUNT_SEG, ope->runt);
		break;
	default:
		break;
	}
	if (ret == -EAGAIN)
		return ret;
	if (ret) {
		tx_fail(ep, ope, ret);
		return 0;
	}
	tx_posted(ep, ope);
	return 0;
}

int efa_rdm_tx_push(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	if (ope->peer->base.err) {
		tx_fail(ep, ope, ope->peer->base.err);
		return 0;
	}
	if (ope->op != EFA_OP_MSG)
		return efa_rdm_rma_push(ep, ope);
	return tx_push_msg(ep, ope);
}

/* Registers the buffer for the peer to read: false to send by CTS instead. */
static bool tx_read_setup(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
			  size_t runt)
{
	struct efa_rdm_ext_read *rd;

	rd = calloc(1, ext_read_size(ope->iov_count));
	if (!rd)
		return false;
	for (uint32_t i = 0; i < ope->iov_count; i++) {
		if (efa_mr_get(ep->domain, ope->desc[i], ope->iov[i].iov_base,
			       ope->iov[i].iov_len,
			       KFAB_EFA_ACCESS_REMOTE_READ, &ope->mrs[i]))
			goto fail;
		ope->nmrs++;
		rd->regs[i].addr = (uintptr_t)ope->iov[i].iov_base;
		rd->regs[i].len = ope->iov[i].iov_len;
		rd->regs[i].rkey = ope->mrs[i].mr->rkey;
	}
	rd->nregs = ope->iov_count;
	rd->msg_len = ope->len;
	rd->runt_len = runt;
	ope->rd = rd;
	ope->runt = runt;
	ope->rd_pending = true;
	ope->waits++;			/* EOR */
	return true;
fail:
	for (uint32_t i = 0; i < ope->nmrs; i++)
		efa_mr_put(ep->domain, &ope->mrs[i]);
	ope->nmrs = 0;
	free(rd);
	return false;
}

static void tx_protocol(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	const struct efa_rdm_peer *peer = ope->peer;
	size_t len = ope->len;

	if (len <= ep->max_payload) {
		ope->type = EFA_PKT_EAGER_RTM;
		ep->stats.eager_msgs++;
		return;
	}
	if (len >= ep->read_min && ep->rdma_read && !ope->owned &&
	    peer->hs_received && (peer->features & EFA_FEAT_RDMA_READ)) {
		size_t runt = ep->params->runt_size < len ?
			      ep->params->runt_size : 0;

		if (tx_read_setup(ep, ope, runt)) {
			if (runt) {
				ope->type = EFA_PKT_RUNTREAD_RTM;
				ep->stats.runtread_msgs++;
			} else {
				ope->type = EFA_PKT_LONGREAD_RTM;
				ep->stats.longread_msgs++;
			}
			return;
		}
	}
	if (len <= ep->medium_max) {
		ope->type = EFA_PKT_MEDIUM_RTM;
		ep->stats.medium_msgs++;
	} else {
		ope->type = EFA_PKT_LONGCTS_RTM;
		ope->allowed = ep->max_payload - sizeof(struct efa_rdm_ext_len);
		ep->stats.longcts_msgs++;
		/* completes once received, as the read protocols do on EOR */
		if (!ope->receipt_wanted) {
			ope->receipt_wanted = true;
			ope->waits++;
		}
	}
}

/* Posts at once when the peer has nothing queued, else queues behind. */
void efa_rdm_tx_start(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	struct efa_rdm_peer *peer = ope->peer;

	efa_rdm_handshake(ep, peer);
	if (!kfab_list_empty(&peer->txq) || !kfab_list_empty(&peer->ctlq) ||
	    peer->backoff_until_ns) {
		efa_rdm_txq_add(ep, ope);
		return;
	}
	if (efa_rdm_tx_push(ep, ope) == -EAGAIN)
		efa_rdm_txq_add(ep, ope);
}

ssize_t efa_rdm_send(struct efa_rdm_ep *ep, const struct iovec *iov,
		     void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		     uint64_t data, void *context, uint64_t flags)
{
	const struct kfab_provider *kp = efa_rdm_kp(ep);
	struct efa_rdm_ope *ope;
	size_t len = 0;
	int ret;

	if (kfab_unlikely(count > KFAB_IOV_LIMIT || (count && !iov))) {
		kfab_warn(kp, FI_LOG_EP_DATA, "send: %zu iovecs, at most %d\n",
			  count, KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++)
		len += iov[i].iov_len;
	if (kfab_unlikely((flags & FI_INJECT) && len > ep->inject_size)) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "inject: %zu bytes, at most %zu (tx_attr->inject_size)\n",
			  len, ep->inject_size);
		return -FI_EINVAL;
	}
	ope = efa_rdm_tx_ope(ep, dest, "send", EFA_OP_MSG, context, flags,
			     &ret);
	if (kfab_unlikely(!ope))
		return ret;
	ope->tag = tag;
	ope->data = data;
	ope->len = len;
	if (kfab_unlikely(efa_rdm_ope_iov(ep, ope, iov, count, len, flags))) {
		kfab_warn(kp, FI_LOG_EP_DATA, "inject: out of memory\n");
		return -FI_ENOMEM;
	}
	if (!(flags & FI_INJECT))
		for (size_t i = 0; i < count; i++)
			ope->desc[i] = desc ? desc[i] : NULL;
	if (flags & FI_DELIVERY_COMPLETE) {
		ope->receipt_wanted = true;
		ope->waits++;
	}
	tx_protocol(ep, ope);
	efa_rdm_tx_start(ep, ope);
	return 0;
}

static const char *const reject_why =
	"the receiver's reorder window was full: raise FI_EFA_RECVWIN_SIZE at the receiver";

void efa_rdm_tx_recv(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		     const struct efa_rdm_hdr *hdr)
{
	struct efa_rdm_ope *ope = efa_rdm_ope_lookup(ep, hdr->id, EFA_OPE_TX);

	if (ope && hdr->type == EFA_PKT_REJECT &&
	    (ope->op != EFA_OP_MSG || ope->msg_id != hdr->msg_id))
		ope = NULL;	/* the handle was reused since */
	if (!ope || ope->peer != peer) {
		if (hdr->type == EFA_PKT_REJECT)
			kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
				  "message %u to QP %u was dropped: %s\n",
				  hdr->msg_id, peer->addr.qpn, reject_why);
		return;
	}
	switch (hdr->type) {
	case EFA_PKT_CTS:
		ope->rhandle = (uint32_t)hdr->tag;
		if (hdr->data > ope->allowed)
			ope->allowed = hdr->data < ope->len ? hdr->data :
							      ope->len;
		if (!ope->queued)
			efa_rdm_tx_start(ep, ope);
		return;
	case EFA_PKT_EOR:
		for (uint32_t i = 0; i < ope->nmrs; i++)
			efa_mr_put(ep->domain, &ope->mrs[i]);
		ope->nmrs = 0;
		break;
	case EFA_PKT_RECEIPT:
		break;
	case EFA_PKT_REJECT:
		ope->err = FI_EOVERFLOW;
		ope->why = reject_why;
		efa_rdm_tx_complete(ep, ope);
		return;
	default:
		return;
	}
	if (ope->waits)
		ope->waits--;
	if (!ope->waits && ope->state == EFA_TXS_WAIT &&
	    ope->sent >= ope->runt && !ope->rd_pending)
		efa_rdm_tx_complete(ep, ope);
}

void efa_rdm_tx_fail_peer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  int err, const char *why)
{
	for (uint32_t i = 0; i < ep->opes.n; i++) {
		struct efa_rdm_ope *ope = efa_rdm_ope_at(ep, i);

		if (ope->h.kind != EFA_OPE_TX || ope->peer != peer)
			continue;
		ope->err = err;
		ope->why = why;
		efa_rdm_tx_complete(ep, ope);
	}
}
