// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: receives. Every packet is copied out of the ring and its
 * slot posted again at once (the ring is consumed in order, so nothing
 * can stay in it: FI_EFA_RX_COPY_UNEXP and _OOO are always in effect).
 *
 * A message's first packet (its RTM) goes through the peer's reorder
 * window and is matched in message-id order against the posted receives
 * of the endpoint's queue (core/kfab_rxq.h). Unmatched, it is kept
 * unexpected: an eager, medium or runting message with a copy of its
 * bytes, a longcts one with its first bytes (the CTS waits for a
 * receive), a longread one as its regions.
 * Segments of a medium or runting message may arrive before their RTM:
 * they wait in the peer's early list. An RTM beyond the window is dropped
 * with an error completion naming FI_EFA_RECVWIN_SIZE, and the sender is
 * told (REJECT); its id is skipped when the window reaches it.
 *
 * FI_MULTI_RECV buffers, FI_PEEK/FI_CLAIM/FI_DISCARD, cancel and the
 * receive completions are the queue's; a multi-receive slice is an
 * internal operation, FI_DISCARD takes a message into one of no bytes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efa_rdm.h"

/* The part [@off, @off + @len) of @iov as iovecs in @out: their count. */
static int iov_slice(const struct iovec *iov, size_t count, size_t off,
		     size_t len, struct iovec *out)
{
	int n = 0;

	for (size_t i = 0; i < count && len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = iov[i].iov_len - off;
		if (k > len)
			k = len;
		out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		out[n++].iov_len = k;
		len -= k;
		off = 0;
	}
	return n;
}

static inline struct efa_rdm_ep *q_ep(struct kfab_rxq *q)
{
	return kfab_container_of(q, struct efa_rdm_ep, rxq);
}

static inline struct efa_rdm_ope *rxr_ope(struct kfab_rxr *rx)
{
	return kfab_container_of(rx, struct efa_rdm_ope, rxr);
}

static inline struct efa_rdm_ux *ux_of(struct kfab_rxq_ux *ux)
{
	return kfab_container_of(ux, struct efa_rdm_ux, ux);
}

/* Read regions come from the receive queue's pools, as packets do. */
static size_t rd_size(uint32_t nregs)
{
	return sizeof(struct efa_rdm_ext_read) +
	       nregs * sizeof(struct efa_rdm_reg);
}

static void rd_put(struct efa_rdm_ep *ep, struct efa_rdm_ext_read *rd)
{
	if (rd)
		kfab_rxq_buf_put(&ep->rxq, rd, rd_size(rd->nregs));
}

static uint64_t msg_flags_of(const struct efa_rdm_hdr *hdr)
{
	return (hdr->flags & EFA_F_TAGGED ? FI_TAGGED : FI_MSG) |
	       (hdr->flags & EFA_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
}

/* ------------------------------------------------------------------ */
/* completion */

static void ctl_to(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		   uint8_t type, uint32_t id)
{
	struct efa_rdm_hdr hdr = { .type = type, .id = id };

	efa_rdm_post_ctl(ep, peer, &hdr, NULL, 0);
}

static void rx_complete(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	/* the sender's buffer may go once every byte of it is here */
	if (ope->rd_done)
		ctl_to(ep, ope->peer, EFA_PKT_EOR, ope->shandle);
	if (ope->receipt)
		ctl_to(ep, ope->peer, EFA_PKT_RECEIPT, ope->shandle);
	kfab_rxq_complete(&ep->rxq, &ope->rxr);
	rd_put(ep, ope->rd);
	ope->rd = NULL;
	efa_rdm_rx_release(ep, ope);
}

void efa_rdm_rx_release(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	for (uint32_t i = 0; i < ope->nmrs; i++)
		efa_mr_put(ep->domain, &ope->mrs[i]);
	ope->nmrs = 0;
	efa_rdm_ope_put(ep, ope);
}

static void rx_copy(struct efa_rdm_ope *ope, size_t off, const void *buf,
		    size_t len)
{
	size_t cap = ope->rxr.len;

	/* a zero-copy receive's message is in place */
	if (off < cap && (off || buf != ope->iov[0].iov_base))
		kfab_buf_to_iov(ope->iov, ope->iov_count, off, buf,
				len < cap - off ? len : cap - off);
	ope->received += len;
}

/* ------------------------------------------------------------------ */
/* protocols, receiver side */

void efa_rdm_rx_cts(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	size_t window = ep->params->rx_window_size * ep->max_payload;
	size_t end = ope->received + window;
	struct efa_rdm_hdr hdr = { .type = EFA_PKT_CTS };

	if (end > ope->rxr.msg_len)
		end = ope->rxr.msg_len;
	if (end <= ope->cts_sent)
		return;
	ope->cts_sent = end;
	hdr.id = ope->shandle;
	hdr.tag = efa_rdm_handle(ope);
	hdr.data = end;
	efa_rdm_post_ctl(ep, ope->peer, &hdr, NULL, 0);
}

/* Reads the sender's regions from @from on into the buffer (EOR at completion). */
static void rx_read(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		    size_t from)
{
	const struct efa_rdm_ext_read *rd = ope->rd;
	size_t off = 0;
	int ret = 0;

	for (uint32_t i = 0; i < rd->nregs && !ret; i++) {
		const struct efa_rdm_reg *r = &rd->regs[i];
		size_t skip = from > off ? from - off : 0;
		size_t n = r->len > skip ? r->len - skip : 0;
		struct iovec local[KFAB_IOV_LIMIT];
		uint64_t bytes;
		int cnt;

		if (off + skip < ope->rxr.len && n) {
			if (n > ope->rxr.len - off - skip)
				n = ope->rxr.len - off - skip;
			cnt = iov_slice(ope->iov, ope->iov_count, off + skip, n,
					local);
			ret = kfab_efa_rdma(ep->dev, ope->peer->dev_peer,
					    KFAB_EFA_RDMA_READ, r->rkey,
					    r->addr + skip, local, cnt, 0,
					    &bytes);
		}
		off += r->len;
	}
	ope->received += ope->rxr.msg_len - from;
	if (ret) {
		ope->rxr.err = ret == -ENETDOWN ? FI_ENETDOWN : FI_EIO;
		ope->rxr.why = ret == -ENETDOWN ?
			       "this device or the sender's went Down during the read" :
			       "the device could not read the sender's buffer";
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "read of a message from QP %u failed: %s\n",
			  ope->peer->addr.qpn, strerror(-ret));
	}
	ope->rd_done = true;
}

/* A receive whose bytes may all be here: completes it then. */
static void rx_check(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	if (ope->received < ope->rxr.msg_len)
		return;
	if (ope->active) {
		kfab_list_del(&ope->link);
		ope->active = false;
	}
	rx_complete(ep, ope);
}

static void rx_activate(struct efa_rdm_ope *ope)
{
	ope->active = true;
	kfab_list_add_tail(&ope->link, &ope->peer->rx_active);
}

static void seg_to_ope(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		       const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		       uint32_t len)
{
	rx_copy(ope, hdr->tag, payload, len);
	rx_check(ep, ope);
}

static void seg_to_ux(struct efa_rdm_ep *ep, struct efa_rdm_ux *ux,
		      const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		      uint32_t len)
{
	if (!kfab_rxq_ux_data(&ux->ux, hdr->tag, payload, len))
		return;
	kfab_list_del(&ux->link);
	kfab_rxq_ux_whole(&ep->rxq, &ux->ux);
}

/* A segment (MEDIUM_SEG, RUNT_SEG) to the message it belongs to. */
static void rx_seg(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		   const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		   uint32_t len)
{
	struct efa_rdm_pkt *p;
	struct kfab_list *pos;

	kfab_list_for_each(pos, &peer->rx_active) {
		struct efa_rdm_ope *ope =
			kfab_list_entry(pos, struct efa_rdm_ope, link);

		if (ope->msg_id == hdr->msg_id) {
			seg_to_ope(ep, ope, hdr, payload, len);
			return;
		}
	}
	kfab_list_for_each(pos, &peer->ux_active) {
		struct efa_rdm_ux *ux =
			kfab_list_entry(pos, struct efa_rdm_ux, link);

		if (ux->msg_id == hdr->msg_id) {
			seg_to_ux(ep, ux, hdr, payload, len);
			return;
		}
	}
	kfab_list_for_each(pos, &peer->rejected) {
		p = kfab_list_entry(pos, struct efa_rdm_pkt, link);
		if (p->hdr.msg_id == hdr->msg_id)
			return;
	}
	/* begun and not active: finished, or rejected and passed */
	if ((int32_t)(hdr->msg_id - peer->rx_next) < 0)
		return;
	p = efa_rdm_pkt_get(ep, len);
	if (!p) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "out of memory holding a segment of message %u: dropped\n",
			  hdr->msg_id);
		return;
	}
	p->hdr = *hdr;
	memcpy(p->payload, payload, len);
	kfab_list_add_tail(&p->link, &peer->early);
}

/* Segments that came before message @msg_id began: to it now. */
static void rx_pull_early(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  uint32_t msg_id)
{
	struct kfab_list *pos, *tmp;

	kfab_list_for_each_safe(pos, tmp, &peer->early) {
		struct efa_rdm_pkt *p =
			kfab_list_entry(pos, struct efa_rdm_pkt, link);

		if (p->hdr.msg_id != msg_id)
			continue;
		kfab_list_del(&p->link);
		rx_seg(ep, peer, &p->hdr, p->payload, p->len);
		efa_rdm_pkt_put(ep, p);
	}
}

/*
 * What the RTM's extension says: the message length, the first bytes
 * (@payload, *@len), the regions. false for a malformed packet.
 */
static bool rtm_parse(struct efa_rdm_ep *ep, const struct efa_rdm_hdr *hdr, const uint8_t **payload,
		      uint32_t *len, size_t *msg_len,
		      struct efa_rdm_ext_read **rd)
{
	struct efa_rdm_ext_len el;
	struct efa_rdm_ext_read rh;
	size_t sz;

	*rd = NULL;
	switch (hdr->type) {
	case EFA_PKT_EAGER_RTM:
		*msg_len = *len;
		return true;
	case EFA_PKT_MEDIUM_RTM:
	case EFA_PKT_LONGCTS_RTM:
		if (*len < sizeof(el))
			return false;
		memcpy(&el, *payload, sizeof(el));
		*payload += sizeof(el);
		*len -= sizeof(el);
		*msg_len = el.msg_len;
		return *len <= el.msg_len;
	default:
		if (*len < sizeof(rh))
			return false;
		memcpy(&rh, *payload, sizeof(rh));
		if (!rh.nregs || rh.nregs > KFAB_IOV_LIMIT)
			return false;
		sz = rd_size(rh.nregs);
		if (*len < sz)
			return false;
		*rd = kfab_rxq_buf_get(&ep->rxq, sz);
		if (!*rd)
			return false;
		memcpy(*rd, *payload, sz);
		*payload += sz;
		*len -= (uint32_t)sz;
		*msg_len = rh.msg_len;
		return *len <= rh.runt_len && rh.runt_len <= rh.msg_len;
	}
}

/* What the queue does not keep of a matched message (kfab_rxq_match()). */
static void rx_set_msg(struct efa_rdm_ope *ope, struct efa_rdm_peer *peer,
		       uint8_t type, uint32_t msg_id, uint32_t shandle,
		       bool receipt)
{
	ope->peer = peer;
	ope->msg_id = msg_id;
	ope->shandle = shandle;
	ope->receipt = receipt;
	ope->received = 0;
	ope->type = type;
}

/* A matched message's protocol, its first bytes in hand. */
static void rx_start(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		     const uint8_t *payload, uint32_t len)
{
	rx_copy(ope, 0, payload, len);
	switch (ope->type) {
	case EFA_PKT_EAGER_RTM:
		rx_complete(ep, ope);
		return;
	case EFA_PKT_MEDIUM_RTM:
		rx_activate(ope);
		rx_pull_early(ep, ope->peer, ope->msg_id);
		return;
	case EFA_PKT_LONGCTS_RTM:
		efa_rdm_rx_cts(ep, ope);
		return;
	case EFA_PKT_LONGREAD_RTM:
	case EFA_PKT_RUNTREAD_RTM:
		rx_read(ep, ope, ope->rd->runt_len);
		if (ope->received >= ope->rxr.msg_len) {
			rx_complete(ep, ope);
			return;
		}
		rx_activate(ope);
		rx_pull_early(ep, ope->peer, ope->msg_id);
		return;
	default:
		return;
	}
}

static struct efa_rdm_ux *ux_new(struct efa_rdm_ep *ep,
				 struct efa_rdm_peer *peer,
				 const struct efa_rdm_hdr *hdr,
				 const uint8_t *payload, uint32_t len,
				 size_t msg_len, struct efa_rdm_ext_read *rd)
{
	size_t want = hdr->type == EFA_PKT_MEDIUM_RTM ? msg_len :
		      rd ? rd->runt_len : len;
	struct kfab_rxq_ux *kux;
	struct efa_rdm_ux *ux;

	kux = kfab_rxq_ux_new(&ep->rxq, peer, peer->base.key, msg_len, want,
			      hdr->tag,
			      hdr->flags & EFA_F_CQ_DATA ? hdr->data : 0,
			      msg_flags_of(hdr));
	if (!kux)
		return NULL;
	kfab_rxq_ux_data(kux, 0, payload, len);
	ux = ux_of(kux);
	kfab_list_init(&ux->link);
	ux->type = hdr->type;
	ux->msg_id = hdr->msg_id;
	ux->shandle = hdr->id;
	ux->receipt = hdr->flags & EFA_F_RECEIPT;
	ux->rd = rd;
	ep->stats.unexp_msgs++;
	if (kux->have < kux->want) {
		kfab_list_add_tail(&ux->link, &peer->ux_active);
		rx_pull_early(ep, peer, ux->msg_id);
	}
	return ux;
}

/* The first packet of a message, in message-id order. */
static void rtm_process(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			const struct efa_rdm_hdr *hdr, const uint8_t *payload,
			uint32_t len)
{
	struct efa_rdm_ext_read *rd;
	struct kfab_rxr *rx;
	size_t msg_len;

	if (!rtm_parse(ep, hdr, &payload, &len, &msg_len, &rd)) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "malformed message of type %u from QP %u dropped\n",
			  hdr->type, peer->addr.qpn);
		rd_put(ep, rd);
		return;
	}
	rx = kfab_rxq_match(&ep->rxq, peer, peer->base.key, msg_len, hdr->tag,
			    hdr->flags & EFA_F_CQ_DATA ? hdr->data : 0,
			    msg_flags_of(hdr));
	if (rx) {
		struct efa_rdm_ope *ope = rxr_ope(rx);

		rx_set_msg(ope, peer, hdr->type, hdr->msg_id, hdr->id,
			   hdr->flags & EFA_F_RECEIPT);
		ope->rd = rd;
		rx_start(ep, ope, payload, len);
		return;
	}
	if (!ux_new(ep, peer, hdr, payload, len, msg_len, rd)) {
		rd_put(ep, rd);
		kfab_cq_write_err_why(ep->rx.cq, NULL, FI_RECV, FI_ENOMEM, 0,
				      0, 0, 0, 0, FI_ADDR_NOTAVAIL,
				      "out of memory for an unexpected message: dropped");
	}
}

/* ------------------------------------------------------------------ */
/* reorder window */

static bool id_rejected(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			uint32_t id)
{
	struct kfab_list *pos;

	kfab_list_for_each(pos, &peer->rejected) {
		struct efa_rdm_pkt *p =
			kfab_list_entry(pos, struct efa_rdm_pkt, link);

		if (p->hdr.msg_id == id) {
			kfab_list_del(&p->link);
			efa_rdm_pkt_put(ep, p);
			return true;
		}
	}
	return false;
}

static void rtm_reject(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		       const struct efa_rdm_hdr *hdr, uint32_t ahead)
{
	struct efa_rdm_hdr rej = { .type = EFA_PKT_REJECT, .id = hdr->id,
				   .msg_id = hdr->msg_id };
	struct efa_rdm_pkt *p = efa_rdm_pkt_get(ep, 0);
	struct kfab_list *pos, *tmp;
	char why[KFAB_ERR_DATA_MAX];

	ep->stats.recvwin_overflows++;
	snprintf(why, sizeof(why),
		 "a message %u ids ahead, beyond the reorder window: raise FI_EFA_RECVWIN_SIZE (now %u)",
		 ahead, ep->recvwin);
	kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
		  "message id %u from QP %u is %u ids ahead of the next, beyond the reorder window of %u: dropped; raise FI_EFA_RECVWIN_SIZE\n",
		  hdr->msg_id, peer->addr.qpn, ahead, ep->recvwin);
	kfab_cq_write_err_why(ep->rx.cq, NULL, FI_RECV, FI_EOVERFLOW, 0, 0, 0,
			      0, 0, efa_rdm_peer_src(ep, peer), why);
	kfab_cntr_add(ep->rx.cntr, FI_EOVERFLOW);
	if (p) {
		p->hdr = *hdr;
		kfab_list_add_tail(&p->link, &peer->rejected);
	}
	kfab_list_for_each_safe(pos, tmp, &peer->early) {
		struct efa_rdm_pkt *e =
			kfab_list_entry(pos, struct efa_rdm_pkt, link);

		if (e->hdr.msg_id == hdr->msg_id) {
			kfab_list_del(&e->link);
			efa_rdm_pkt_put(ep, e);
		}
	}
	efa_rdm_post_ctl(ep, peer, &rej, NULL, 0);
}

static void rtm_arrive(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		       const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		       uint32_t len)
{
	uint32_t ahead = hdr->msg_id - peer->rx_next;
	uint32_t mask = ep->recvwin - 1;
	struct efa_rdm_pkt *p;

	/* zero-copy receive: no FI_ORDER_SAS, each as it comes */
	if (ep->zcpy) {
		rtm_process(ep, peer, hdr, payload, len);
		return;
	}
	if (kfab_unlikely(ahead)) {
		if ((int32_t)ahead < 0)
			return;		/* an id already delivered */
		if (ahead >= ep->recvwin) {
			rtm_reject(ep, peer, hdr, ahead);
			return;
		}
		if (!peer->win) {
			peer->win = calloc(ep->recvwin, sizeof(*peer->win));
			if (!peer->win)
				goto nomem;
		}
		p = efa_rdm_pkt_get(ep, len);
		if (!p)
			goto nomem;
		p->hdr = *hdr;
		memcpy(p->payload, payload, len);
		efa_rdm_pkt_put(ep, peer->win[hdr->msg_id & mask]);
		peer->win[hdr->msg_id & mask] = p;
		peer->nwin++;
		ep->stats.ooo_pkts++;
		return;
	}
	rtm_process(ep, peer, hdr, payload, len);
	peer->rx_next++;
	for (;;) {
		if (peer->nwin && peer->win[peer->rx_next & mask]) {
			p = peer->win[peer->rx_next & mask];
			peer->win[peer->rx_next & mask] = NULL;
			peer->nwin--;
			rtm_process(ep, peer, &p->hdr, p->payload, p->len);
			efa_rdm_pkt_put(ep, p);
		} else if (kfab_list_empty(&peer->rejected) ||
			   !id_rejected(ep, peer, peer->rx_next)) {
			break;
		}
		peer->rx_next++;
	}
	return;
nomem:
	kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
		  "out of memory holding message %u of QP %u out of order: dropped\n",
		  hdr->msg_id, peer->addr.qpn);
}

/* ------------------------------------------------------------------ */
/* dispatch */

void efa_rdm_rx_data(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		     const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		     uint32_t len)
{
	struct efa_rdm_ope *ope = efa_rdm_ope_lookup(ep, hdr->id, EFA_OPE_RX);
	size_t window;

	if (!ope || ope->peer != peer || hdr->tag + len > ope->rxr.msg_len)
		return;
	rx_copy(ope, hdr->tag, payload, len);
	if (ope->received >= ope->rxr.msg_len) {
		if (ope->op == EFA_OP_WRITE_RECV)
			efa_rdm_rma_write_done(ep, ope);
		else
			rx_complete(ep, ope);
		return;
	}
	window = ep->params->rx_window_size * ep->max_payload;
	if (ope->received + window / 2 >= ope->cts_sent)
		efa_rdm_rx_cts(ep, ope);
}

void efa_rdm_rx_packet(struct efa_rdm_ep *ep,
		       const struct kfab_efa_ring_entry *ent)
{
	struct efa_rdm_hdr hdr;
	struct efa_rdm_peer *peer;

	memcpy(&hdr, ent->hdr, sizeof(hdr));
	if (kfab_unlikely(!hdr.type || hdr.type >= EFA_PKT_TYPE_MAX))
		return;
	peer = efa_rdm_peer_from(ep, ent, hdr.qkey);
	if (kfab_unlikely(!peer))
		return;
	if (kfab_unlikely(!peer->hs_sent))
		efa_rdm_handshake(ep, peer);
	switch (hdr.type) {
	case EFA_PKT_HANDSHAKE:
		if (!peer->hs_received)
			ep->stats.handshakes_received++;
		peer->hs_received = true;
		peer->features = hdr.data;
		return;
	case EFA_PKT_EAGER_RTM:
	case EFA_PKT_MEDIUM_RTM:
	case EFA_PKT_LONGCTS_RTM:
	case EFA_PKT_LONGREAD_RTM:
	case EFA_PKT_RUNTREAD_RTM:
		rtm_arrive(ep, peer, &hdr, ent->payload, ent->len);
		return;
	case EFA_PKT_MEDIUM_SEG:
	case EFA_PKT_RUNT_SEG:
		rx_seg(ep, peer, &hdr, ent->payload, ent->len);
		return;
	case EFA_PKT_CTS:
	case EFA_PKT_EOR:
	case EFA_PKT_RECEIPT:
	case EFA_PKT_REJECT:
		efa_rdm_tx_recv(ep, peer, &hdr);
		return;
	case EFA_PKT_DATA:
		efa_rdm_rx_data(ep, peer, &hdr, ent->payload, ent->len);
		return;
	default:
		efa_rdm_rma_recv(ep, peer, &hdr, ent->payload, ent->len);
		return;
	}
}

/* ------------------------------------------------------------------ */
/* the receive queue's hooks (kfab_rxq.h) */

static struct kfab_rxr *rxq_get(struct kfab_rxq *q, const struct iovec *iov,
				void **desc, size_t count)
{
	struct efa_rdm_ep *ep = q_ep(q);
	struct efa_rdm_ope *ope = efa_rdm_ope_rx(ep);

	if (kfab_unlikely(!ope)) {
		ep->stats.eagain++;
		return NULL;
	}
	memcpy(ope->iov, iov, count * sizeof(*iov));
	if (desc)
		memcpy(ope->desc, desc, count * sizeof(*desc));
	ope->iov_count = (uint32_t)count;
	return &ope->rxr;
}

static struct kfab_rxr *rxq_slice(struct kfab_rxq *q, void *buf, size_t len)
{
	struct efa_rdm_ope *c = efa_rdm_ope_internal(q_ep(q), EFA_OPE_RX);

	if (!c)
		return NULL;
	c->iov[0].iov_base = buf;
	c->iov[0].iov_len = len;
	c->iov_count = 1;
	return &c->rxr;
}

static void rxq_put(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	efa_rdm_rx_release(q_ep(q), rxr_ope(rx));
}

static void rxq_done(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	rx_complete(q_ep(q), rxr_ope(rx));
}

static void rxq_post(struct kfab_rxq *q, struct kfab_rxr *rx, bool tagged)
{
	struct efa_rdm_ep *ep = q_ep(q);

	if (ep->zcpy)
		efa_rdm_zcpy_recv(ep, rxr_ope(rx));
	else
		kfab_rxq_post_only(q, rx, tagged);
}

/* A whole unexpected message: its protocol goes on from its bytes. */
static void rxq_take(struct kfab_rxq *q, struct kfab_rxr *rx,
		     struct kfab_rxq_ux *kux)
{
	struct efa_rdm_ep *ep = q_ep(q);
	struct efa_rdm_ope *ope = rxr_ope(rx);
	struct efa_rdm_ux *ux = ux_of(kux);

	rx_set_msg(ope, kux->peer, ux->type, ux->msg_id, ux->shandle,
		   ux->receipt);
	ope->rd = ux->rd;
	ux->rd = NULL;
	if (ope->type == EFA_PKT_MEDIUM_RTM) {
		rx_copy(ope, 0, kux->buf, kux->len);
		rx_complete(ep, ope);
	} else {
		rx_start(ep, ope, kux->buf, (uint32_t)kux->have);
	}
	kfab_rxq_ux_free(q, kux);
}

/* FI_DISCARD: the message goes into a receive of no bytes. */
static void rxq_discard(struct kfab_rxq *q, struct kfab_rxq_ux *kux)
{
	struct efa_rdm_ep *ep = q_ep(q);
	struct efa_rdm_ope *sink = efa_rdm_ope_internal(ep, EFA_OPE_RX);
	struct efa_rdm_ux *ux = ux_of(kux);

	if (!sink) {
		rd_put(ep, ux->rd);
		ux->rd = NULL;
		kfab_rxq_ux_drop(q, kux);
		return;
	}
	sink->rxr.quiet = true;
	kfab_rxq_give(q, &sink->rxr, kux);
}

static fi_addr_t rxq_src(struct kfab_rxq *q, void *peer)
{
	return efa_rdm_peer_src(q_ep(q), peer);
}

const struct kfab_rxq_ops efa_rdm_rxq_ops = {
	.get = rxq_get,
	.slice = rxq_slice,
	.put = rxq_put,
	.done = rxq_done,
	.post = rxq_post,
	.take = rxq_take,
	.discard = rxq_discard,
	.src = rxq_src,
};

/* ------------------------------------------------------------------ */
/* posting receives */

ssize_t efa_rdm_recv(struct efa_rdm_ep *ep, const struct iovec *iov,
		     void **desc, size_t count, fi_addr_t src, uint64_t tag,
		     uint64_t ignore, void *context, uint64_t flags)
{
	struct efa_rdm_peer *peer;
	uint64_t key;
	int ret;

	if (kfab_unlikely(count > KFAB_IOV_LIMIT || (count && !iov))) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "receive: %zu iovecs, at most %d\n", count,
			  KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	ret = kfab_rxq_src_key(&ep->rxq, ep->base.av, ep->caps, src, &key);
	if (ret)
		return ret;
	if (key != KFAB_TAGM_ANY_SRC) {
		/* mapped, so that its death is noticed */
		peer = efa_rdm_peer_of(ep, src, &ret, "receive");
		if (peer && !peer->base.err)
			efa_rdm_peer_map(ep, peer);
		if (peer && peer->base.err)
			return peer->base.err;
	}
	return kfab_rxq_recv(&ep->rxq, iov, desc, count, key, tag, ignore,
			     context, flags,
			     !ep->rx.selective || (flags & FI_COMPLETION));
}

int efa_rdm_rx_cancel(struct efa_rdm_ep *ep, void *context)
{
	if (ep->zcpy)
		return efa_rdm_zcpy_cancel(ep, context);
	return kfab_rxq_cancel(&ep->rxq, context);
}

void efa_rdm_rx_fail_peer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  int err, const char *why)
{
	/* receives only posted stay for a link that may come back */
	if (err == FI_ECONNRESET)
		kfab_rxq_fail_src(&ep->rxq, peer->base.key, peer, err,
				  "the peer it receives from is gone");
	for (uint32_t i = 0; i < ep->opes.n; i++) {
		struct efa_rdm_ope *ope = efa_rdm_ope_at(ep, i);

		if (ope->h.kind != EFA_OPE_RX || ope->peer != peer ||
		    !kfab_list_empty(&ope->rxr.te.link) ||
		    ope->op == EFA_OP_WRITE_RECV || ope->rxr.mrecv_inflight)
			continue;
		if (ope->op == EFA_OP_MSG && !ope->rxr.msg_len &&
		    !ope->active && !ope->cts_sent)
			continue;	/* not receiving from it */
		if (ope->active) {
			kfab_list_del(&ope->link);
			ope->active = false;
		}
		ope->rxr.err = err;
		ope->rxr.why = why;
		rx_complete(ep, ope);
	}
}

void efa_rdm_rx_fini(struct efa_rdm_ep *ep)
{
	for (uint32_t i = 0; i < ep->opes.n; i++) {
		struct efa_rdm_ope *ope = efa_rdm_ope_at(ep, i);

		/* a receive's regions are the pools' */
		if (ope->h.kind != EFA_OPE_RX)
			free(ope->rd);
		efa_rdm_buf_put(ep, ope->owned);
	}
	kfab_rxq_fini(&ep->rxq);
}
