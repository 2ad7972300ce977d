// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: receives. Every packet is copied out of the ring and its
 * slot posted again at once (the ring is consumed in order, so nothing
 * can stay in it: FI_EFA_RX_COPY_UNEXP and _OOO are always in effect).
 *
 * A message's first packet (its RTM) goes through the peer's reorder
 * window and is matched in message-id order against the posted receives
 * (kfab_tagm). Unmatched, it is kept unexpected: an eager, medium or
 * runting message with a copy of its bytes, a longcts one with its first
 * bytes (the CTS waits for a receive), a longread one as its regions.
 * Segments of a medium or runting message may arrive before their RTM:
 * they wait in the peer's early list. An RTM beyond the window is dropped
 * with an error completion naming FI_EFA_RECVWIN_SIZE, and the sender is
 * told (REJECT); its id is skipped when the window reaches it.
 *
 * FI_MULTI_RECV buffers stay posted while at least FI_OPT_MIN_MULTI_RECV
 * bytes are left; each message takes the next bytes through an internal
 * slice; the completion that retires the buffer carries FI_MULTI_RECV.
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

static inline struct efa_rdm_ope *te_ope(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct efa_rdm_ope, te);
}

static inline struct efa_rdm_ux *te_ux(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct efa_rdm_ux, te);
}

/* ------------------------------------------------------------------ */
/* completion */

static void ctl_to(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		   uint8_t type, uint32_t id)
{
	struct efa_rdm_hdr hdr = { .type = type, .id = id };

	efa_rdm_post_ctl(ep, peer, &hdr, NULL, 0);
}

static void mr_release(struct efa_rdm_ep *ep, struct efa_rdm_ope *p)
{
	kfab_cq_write(ep->rx_cq, p->context,
			      FI_RECV | FI_MULTI_RECV |
			      (p->flags & (FI_MSG | FI_TAGGED)), 0,
			      (uint8_t *)p->iov[0].iov_base + p->mr_off, 0, 0,
			      FI_ADDR_NOTAVAIL);
	efa_rdm_ope_put(ep, p);
}

static void mr_retire(struct efa_rdm_ep *ep, struct efa_rdm_ope *p)
{
	kfab_list_del(&p->te.link);
	p->mr_retired = true;
	if (!p->mr_inflight)
		mr_release(ep, p);
}

static void rx_complete(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	struct efa_rdm_ope *p = ope->mrecv;
	uint64_t flags = FI_RECV | ope->msg_flags;
	void *buf = ope->iov_count ? ope->iov[0].iov_base : NULL;
	fi_addr_t src;
	int err = ope->err;

	/* the sender's buffer may go once every byte of it is here */
	if (ope->rd_done)
		ctl_to(ep, ope->peer, EFA_PKT_EOR, ope->shandle);
	if (ope->receipt)
		ctl_to(ep, ope->peer, EFA_PKT_RECEIPT, ope->shandle);
	if (!err && ope->msg_len > ope->len)
		err = FI_ETRUNC;
	if (p && p->mr_retired && p->mr_inflight == 1)
		flags |= FI_MULTI_RECV;
	if (!ope->internal || p) {
		src = efa_rdm_peer_src(ep, ope->peer);
		efa_rdm_cntr(ep->cntr_recv, err);
		if (err == FI_ETRUNC)
			kfab_cq_write_err_why(ep->rx_cq, ope->context, flags,
					      FI_ETRUNC, 0, ope->len,
					      ope->msg_len - ope->len,
					      ope->msg_data, ope->msg_tag, src,
					      "message larger than the receive buffer");
		else if (err)
			kfab_cq_write_err_why(ep->rx_cq, ope->context, flags,
					      err, 0, 0, 0, ope->msg_data,
					      ope->msg_tag, src, ope->why);
		else if (ope->comp || (flags & FI_MULTI_RECV))
			kfab_cq_write(ep->rx_cq, ope->context, flags,
				      ope->msg_len, buf, ope->msg_data,
				      ope->msg_tag, src);
	}
	if (p && !--p->mr_inflight && p->mr_retired)
		efa_rdm_ope_put(ep, p);
	free(ope->rd);
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

/* The receive a message of @len lands in: @ope or a slice of it. */
static struct efa_rdm_ope *rx_target(struct efa_rdm_ep *ep,
				     struct efa_rdm_ope *ope, size_t len)
{
	struct efa_rdm_ope *c;
	size_t left, n;

	if (!(ope->flags & FI_MULTI_RECV)) {
		kfab_list_del(&ope->te.link);
		return ope;
	}
	c = efa_rdm_ope_internal(ep, EFA_OPE_RX);
	if (!c)
		return NULL;
	left = ope->len - ope->mr_off;
	n = len < left ? len : left;
	c->iov[0].iov_base = (uint8_t *)ope->iov[0].iov_base + ope->mr_off;
	c->iov[0].iov_len = n;
	c->iov_count = 1;
	c->len = n;
	c->context = ope->context;
	c->flags = ope->flags & ~FI_MULTI_RECV;
	c->comp = ope->comp;
	c->mrecv = ope;
	ope->mr_off += n;
	ope->mr_inflight++;
	if (ope->len - ope->mr_off < ep->min_multi_recv)
		mr_retire(ep, ope);
	return c;
}

static void rx_copy(struct efa_rdm_ope *ope, size_t off, const void *buf,
		    size_t len)
{
	/* a zero-copy receive's message is in place */
	if (off < ope->len && (off || buf != ope->iov[0].iov_base))
		kfab_buf_to_iov(ope->iov, ope->iov_count, off, buf,
				    len < ope->len - off ? len :
							   ope->len - off);
	ope->received += len;
}

/* ------------------------------------------------------------------ */
/* protocols, receiver side */

void efa_rdm_rx_cts(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	size_t window = ep->params->rx_window_size * ep->max_payload;
	size_t end = ope->received + window;
	struct efa_rdm_hdr hdr = { .type = EFA_PKT_CTS };

	if (end > ope->msg_len)
		end = ope->msg_len;
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

		if (off + skip < ope->len && n) {
			if (n > ope->len - off - skip)
				n = ope->len - off - skip;
			cnt = iov_slice(ope->iov, ope->iov_count, off + skip, n,
					local);
			ret = kfab_efa_rdma(ep->dev, ope->peer->dev_peer,
					    KFAB_EFA_RDMA_READ, r->rkey,
					    r->addr + skip, local, cnt, 0,
					    &bytes);
		}
		off += r->len;
	}
	ope->received += ope->msg_len - from;
	if (ret) {
		ope->err = FI_EIO;
		ope->why = "the device could not read the sender's buffer";
		kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
			  "read of a message from QP %u failed: %s\n",
			  ope->peer->addr.qpn, strerror(-ret));
	}
	ope->rd_done = true;
}

/* A receive whose bytes may all be here: completes it then. */
static void rx_check(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	if (ope->received < ope->msg_len)
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

static void ux_free(struct efa_rdm_ux *ux)
{
	free(ux->buf);
	free(ux->rd);
	free(ux);
}

static void take_ux(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		    struct efa_rdm_ux *ux);

static void seg_to_ux(struct efa_rdm_ep *ep, struct efa_rdm_ux *ux,
		      const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		      uint32_t len)
{
	if (hdr->tag < ux->want)
		memcpy(ux->buf + hdr->tag, payload,
		       len < ux->want - hdr->tag ? len : ux->want - hdr->tag);
	ux->have += len;
	if (ux->have < ux->want)
		return;
	kfab_list_del(&ux->link);
	if (ux->waiting)
		take_ux(ep, ux->waiting, ux);
	else if (ux->discarded)
		ux_free(ux);
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
	p = malloc(sizeof(*p) + len);
	if (!p) {
		kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
			  "out of memory holding a segment of message %u: dropped\n",
			  hdr->msg_id);
		return;
	}
	p->hdr = *hdr;
	p->len = len;
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
		free(p);
	}
}

/*
 * What the RTM's extension says: the message length, the first bytes
 * (@payload, *@len), the regions. false for a malformed packet.
 */
static bool rtm_parse(const struct efa_rdm_hdr *hdr, const uint8_t **payload,
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
		sz = sizeof(rh) + rh.nregs * sizeof(struct efa_rdm_reg);
		if (*len < sz)
			return false;
		*rd = malloc(sz);
		if (!*rd)
			return false;
		memcpy(*rd, *payload, sz);
		*payload += sz;
		*len -= (uint32_t)sz;
		*msg_len = rh.msg_len;
		return *len <= rh.runt_len && rh.runt_len <= rh.msg_len;
	}
}

static void rx_set_msg(struct efa_rdm_ope *ope, struct efa_rdm_peer *peer,
		       const struct efa_rdm_hdr *hdr, size_t msg_len)
{
	ope->peer = peer;
	ope->msg_id = hdr->msg_id;
	ope->msg_len = msg_len;
	ope->msg_tag = hdr->flags & EFA_F_TAGGED ? hdr->tag : 0;
	ope->msg_data = hdr->flags & EFA_F_CQ_DATA ? hdr->data : 0;
	ope->msg_flags = (hdr->flags & EFA_F_TAGGED ? FI_TAGGED : FI_MSG) |
			 (hdr->flags & EFA_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
	ope->shandle = hdr->id;
	ope->receipt = hdr->flags & EFA_F_RECEIPT;
	ope->received = 0;
	ope->type = hdr->type;
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
		if (ope->received >= ope->msg_len) {
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
	struct efa_rdm_ux *ux = calloc(1, sizeof(*ux));
	bool tagged = hdr->flags & EFA_F_TAGGED;

	if (!ux)
		return NULL;
	ux->want = hdr->type == EFA_PKT_MEDIUM_RTM ? msg_len :
		   rd ? rd->runt_len : len;
	if (ux->want) {
		ux->buf = malloc(ux->want);
		if (!ux->buf) {
			free(ux);
			return NULL;
		}
		memcpy(ux->buf, payload, len);
	}
	ux->have = len;
	ux->te.tag = tagged ? hdr->tag : 0;
	ux->te.src = peer->key;
	ux->peer = peer;
	ux->type = hdr->type;
	ux->msg_id = hdr->msg_id;
	ux->shandle = hdr->id;
	ux->receipt = hdr->flags & EFA_F_RECEIPT;
	ux->tag = ux->te.tag;
	ux->data = hdr->flags & EFA_F_CQ_DATA ? hdr->data : 0;
	ux->msg_flags = (tagged ? FI_TAGGED : FI_MSG) |
			(hdr->flags & EFA_F_CQ_DATA ? FI_REMOTE_CQ_DATA : 0);
	ux->len = msg_len;
	ux->rd = rd;
	kfab_tagm_add_unexp(&ep->tagm, tagged, &ux->te);
	ep->stats.unexp_msgs++;
	if (ux->have < ux->want) {
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
	bool tagged = hdr->flags & EFA_F_TAGGED;
	struct efa_rdm_ext_read *rd;
	struct kfab_tagm_entry *te;
	struct efa_rdm_ope *ope = NULL;
	size_t msg_len;

	if (!rtm_parse(hdr, &payload, &len, &msg_len, &rd)) {
		kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
			  "malformed message of type %u from QP %u dropped\n",
			  hdr->type, peer->addr.qpn);
		free(rd);
		return;
	}
	te = kfab_tagm_find_posted(&ep->tagm, tagged, hdr->tag, peer->key);
	if (te)
		ope = rx_target(ep, te_ope(te), msg_len);
	if (ope) {
		rx_set_msg(ope, peer, hdr, msg_len);
		ope->rd = rd;
		rx_start(ep, ope, payload, len);
		return;
	}
	if (!ux_new(ep, peer, hdr, payload, len, msg_len, rd)) {
		free(rd);
		kfab_cq_write_err_why(ep->rx_cq, NULL, FI_RECV, FI_ENOMEM, 0,
				      0, 0, 0, 0, FI_ADDR_NOTAVAIL,
				      "out of memory for an unexpected message: dropped");
	}
}

/* ------------------------------------------------------------------ */
/* reorder window */

static bool id_rejected(struct efa_rdm_peer *peer, uint32_t id)
{
	struct kfab_list *pos;

	kfab_list_for_each(pos, &peer->rejected) {
		struct efa_rdm_pkt *p =
			kfab_list_entry(pos, struct efa_rdm_pkt, link);

		if (p->hdr.msg_id == id) {
			kfab_list_del(&p->link);
			free(p);
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
	struct efa_rdm_pkt *p = malloc(sizeof(*p));
	struct kfab_list *pos, *tmp;
	char why[KFAB_ERR_DATA_MAX];

	ep->stats.recvwin_overflows++;
	snprintf(why, sizeof(why),
		 "a message %u ids ahead, beyond the reorder window: raise FI_EFA_RECVWIN_SIZE (now %u)",
		 ahead, ep->recvwin);
	kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
		  "message id %u from QP %u is %u ids ahead of the next, beyond the reorder window of %u: dropped; raise FI_EFA_RECVWIN_SIZE\n",
		  hdr->msg_id, peer->addr.qpn, ahead, ep->recvwin);
	kfab_cq_write_err_why(ep->rx_cq, NULL, FI_RECV, FI_EOVERFLOW, 0, 0, 0,
			      0, 0, efa_rdm_peer_src(ep, peer), why);
	efa_rdm_cntr(ep->cntr_recv, FI_EOVERFLOW);
	if (p) {
		p->hdr = *hdr;
		p->len = 0;
		kfab_list_add_tail(&p->link, &peer->rejected);
	}
	kfab_list_for_each_safe(pos, tmp, &peer->early) {
		struct efa_rdm_pkt *e =
			kfab_list_entry(pos, struct efa_rdm_pkt, link);

		if (e->hdr.msg_id == hdr->msg_id) {
			kfab_list_del(&e->link);
			free(e);
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
		p = malloc(sizeof(*p) + len);
		if (!p)
			goto nomem;
		p->hdr = *hdr;
		p->len = len;
		memcpy(p->payload, payload, len);
		free(peer->win[hdr->msg_id & mask]);
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
			free(p);
		} else if (kfab_list_empty(&peer->rejected) ||
			   !id_rejected(peer, peer->rx_next)) {
			break;
		}
		peer->rx_next++;
	}
	return;
nomem:
	kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
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

	if (!ope || ope->peer != peer || hdr->tag + len > ope->msg_len)
		return;
	rx_copy(ope, hdr->tag, payload, len);
	if (ope->received >= ope->msg_len) {
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
/* posting receives */

/* Hands an unexpected message whose bytes are all here to @ope. */
static void take_ux(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		    struct efa_rdm_ux *ux)
{
	struct efa_rdm_hdr hdr = {
		.type = ux->type,
		.flags = (ux->msg_flags & FI_TAGGED ? EFA_F_TAGGED : 0) |
			 (ux->msg_flags & FI_REMOTE_CQ_DATA ? EFA_F_CQ_DATA : 0) |
			 (ux->receipt ? EFA_F_RECEIPT : 0),
		.msg_id = ux->msg_id,
		.id = ux->shandle,
		.tag = ux->tag,
		.data = ux->data,
	};

	if (ux->have < ux->want) {
		ux->waiting = ope;
		return;
	}
	rx_set_msg(ope, ux->peer, &hdr, ux->len);
	ope->rd = ux->rd;
	ux->rd = NULL;
	if (ope->type == EFA_PKT_MEDIUM_RTM) {
		rx_copy(ope, 0, ux->buf, ux->len);
		rx_complete(ep, ope);
	} else {
		rx_start(ep, ope, ux->buf, (uint32_t)ux->have);
	}
	ux_free(ux);
}

static bool skip_claimed(struct kfab_tagm_entry *te, void *arg)
{
	(void)arg;
	return te_ux(te)->claimed;
}

static bool skip_unclaimed(struct kfab_tagm_entry *te, void *arg)
{
	struct efa_rdm_ux *ux = te_ux(te);

	return !ux->claimed || ux->claim_ctx != arg;
}

/* FI_DISCARD: the message goes into a receive of no bytes. */
static void rx_discard(struct efa_rdm_ep *ep, struct efa_rdm_ux *ux)
{
	struct efa_rdm_ope *sink = efa_rdm_ope_internal(ep, EFA_OPE_RX);

	kfab_list_del(&ux->te.link);
	if (!sink) {
		ux->discarded = true;
		return;
	}
	take_ux(ep, sink, ux);
}

static ssize_t rx_peek(struct efa_rdm_ep *ep, const struct iovec *iov,
		       size_t count, struct kfab_tagm_entry *want,
		       void *context, uint64_t flags)
{
	uint64_t cflags = FI_RECV | FI_TAGGED;
	struct kfab_tagm_entry *te;
	struct efa_rdm_ope *ope;
	struct efa_rdm_ux *ux;

	if (!(flags & FI_PEEK)) {
		want->src = KFAB_TAGM_ANY_SRC;
		want->ignore = UINT64_MAX;
		te = kfab_tagm_find_unexp(&ep->tagm, true, want,
					  skip_unclaimed, context);
		if (!te)
			return -FI_EINVAL;
		ux = te_ux(te);
		if (flags & FI_DISCARD) {
			efa_rdm_cntr(ep->cntr_recv, 0);
			kfab_cq_write(ep->rx_cq, context,
				      cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA),
				      ux->len, NULL, ux->data, ux->tag,
				      efa_rdm_peer_src(ep, ux->peer));
			rx_discard(ep, ux);
			return 0;
		}
		ope = efa_rdm_ope_rx(ep);
		if (!ope)
			return -FI_EAGAIN;
		memcpy(ope->iov, iov, count * sizeof(*iov));
		ope->iov_count = (uint32_t)count;
		for (size_t i = 0; i < count; i++)
			ope->len += iov[i].iov_len;
		ope->context = context;
		ope->flags = flags | FI_TAGGED;
		ope->comp = true;
		kfab_list_del(&ux->te.link);
		take_ux(ep, ope, ux);
		return 0;
	}
	te = kfab_tagm_find_unexp(&ep->tagm, true, want, skip_claimed, NULL);
	if (!te) {
		kfab_cq_write_err(ep->rx_cq, context, cflags, FI_ENOMSG, 0, 0,
				  0, 0, want->tag, FI_ADDR_NOTAVAIL);
		return 0;
	}
	ux = te_ux(te);
	kfab_cq_write(ep->rx_cq, context,
		      cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA), ux->len,
		      NULL, ux->data, ux->tag, efa_rdm_peer_src(ep, ux->peer));
	if (flags & FI_DISCARD) {
		efa_rdm_cntr(ep->cntr_recv, 0);
		rx_discard(ep, ux);
	} else if (flags & FI_CLAIM) {
		ux->claimed = true;
		ux->claim_ctx = context;
	}
	return 0;
}

ssize_t efa_rdm_recv(struct efa_rdm_ep *ep, const struct iovec *iov,
		     void **desc, size_t count, fi_addr_t src, uint64_t tag,
		     uint64_t ignore, void *context, uint64_t flags)
{
	bool tagged = flags & FI_TAGGED;
	struct kfab_tagm_entry want = { .tag = tag, .ignore = ignore };
	struct kfab_tagm_entry *te;
	struct efa_rdm_peer *peer;
	struct efa_rdm_ope *ope;
	int ret;

	if (kfab_unlikely(count > KFAB_IOV_LIMIT || (count && !iov))) {
		kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
			  "receive: %zu iovecs, at most %d\n", count,
			  KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	want.src = KFAB_TAGM_ANY_SRC;
	if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
		struct kfab_av_entry *e = ep->av ? kfab_av_entry(ep->av, src) :
						   NULL;

		if (!e) {
			kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
				  "receive from fi_addr %#llx: not in the AV\n",
				  (unsigned long long)src);
			return -FI_EINVAL;
		}
		want.src = e->key;
		/* mapped, so that its death is noticed */
		peer = efa_rdm_peer_of(ep, src, &ret, "receive");
		if (peer && !peer->err)
			efa_rdm_peer_map(ep, peer);
		if (peer && peer->err)
			return peer->err;
	}
	if (!tagged) {
		want.tag = 0;
		want.ignore = 0;
	}
	if (flags & (FI_PEEK | FI_CLAIM)) {
		if (!tagged)
			return -FI_EBADFLAGS;
		return rx_peek(ep, iov, count, &want, context, flags);
	}
	if ((flags & FI_MULTI_RECV) && count != 1) {
		kfab_warn(efa_rdm_xp(ep), FI_LOG_EP_DATA,
			  "FI_MULTI_RECV takes one buffer, not %zu iovecs\n",
			  count);
		return -FI_EINVAL;
	}
	ope = efa_rdm_ope_rx(ep);
	if (kfab_unlikely(!ope)) {
		ep->stats.eagain++;
		return -FI_EAGAIN;
	}
	memcpy(ope->iov, iov, count * sizeof(*iov));
	if (desc)
		memcpy(ope->desc, desc, count * sizeof(*desc));
	ope->iov_count = (uint32_t)count;
	for (size_t i = 0; i < count; i++)
		ope->len += iov[i].iov_len;
	ope->context = context;
	ope->flags = flags | (tagged ? 0 : FI_MSG);
	ope->comp = !ep->rx_selective || (flags & FI_COMPLETION);
	ope->te.tag = want.tag;
	ope->te.ignore = want.ignore;
	ope->te.src = want.src;

	if (flags & FI_MULTI_RECV) {
		kfab_tagm_post(&ep->tagm, tagged, &ope->te);
		while (!ope->mr_retired) {
			struct efa_rdm_ope *c;
			struct efa_rdm_ux *ux;

			if (ope->len - ope->mr_off < ep->min_multi_recv) {
				mr_retire(ep, ope);
				break;
			}
			te = kfab_tagm_find_unexp(&ep->tagm, tagged, &want,
						  skip_claimed, NULL);
			if (!te)
				break;
			ux = te_ux(te);
			c = rx_target(ep, ope, ux->len);
			if (!c)
				break;
			kfab_list_del(&ux->te.link);
			take_ux(ep, c, ux);
		}
		return 0;
	}
	te = kfab_tagm_find_unexp(&ep->tagm, tagged, &want, skip_claimed,
				  NULL);
	if (te) {
		kfab_list_del(&te->link);
		take_ux(ep, ope, te_ux(te));
		return 0;
	}
	if (ep->zcpy)
		efa_rdm_zcpy_recv(ep, ope);
	else
		kfab_tagm_post(&ep->tagm, tagged, &ope->te);
	return 0;
}

int efa_rdm_rx_cancel(struct efa_rdm_ep *ep, void *context)
{
	if (ep->zcpy)
		return efa_rdm_zcpy_cancel(ep, context);
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos;

		kfab_list_for_each(pos, &ep->tagm.posted[t]) {
			struct efa_rdm_ope *ope = te_ope(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (ope->context != context)
				continue;
			efa_rdm_cntr(ep->cntr_recv, FI_ECANCELED);
			kfab_cq_write_err(ep->rx_cq, context,
					  FI_RECV | (ope->flags &
						     (FI_MSG | FI_TAGGED)),
					  FI_ECANCELED, 0, 0, 0, 0, ope->te.tag,
					  FI_ADDR_NOTAVAIL);
			kfab_list_del(&ope->te.link);
			if (ope->flags & FI_MULTI_RECV) {
				ope->mr_retired = true;
				ope->comp = false;
				if (!ope->mr_inflight)
					efa_rdm_ope_put(ep, ope);
				return 0;
			}
			efa_rdm_ope_put(ep, ope);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void efa_rdm_rx_fail_peer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos, *tmp;

		kfab_list_for_each_safe(pos, tmp, &ep->tagm.posted[t]) {
			struct efa_rdm_ope *ope = te_ope(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (ope->te.src != peer->key)
				continue;
			kfab_list_del(&ope->te.link);
			ope->peer = peer;
			ope->msg_flags = ope->flags & (FI_MSG | FI_TAGGED);
			ope->msg_tag = ope->te.tag;
			ope->err = FI_ECONNRESET;
			ope->why = "the peer it receives from is gone";
			if (ope->flags & FI_MULTI_RECV)
				ope->flags &= ~FI_MULTI_RECV;
			rx_complete(ep, ope);
		}
	}
	for (uint32_t i = 0; i < ep->nopes; i++) {
		struct efa_rdm_ope *ope = &ep->opes[i];

		if (ope->kind != EFA_OPE_RX || ope->peer != peer ||
		    !kfab_list_empty(&ope->te.link) ||
		    ope->op == EFA_OP_WRITE_RECV || ope->mr_inflight)
			continue;
		if (ope->op == EFA_OP_MSG && !ope->msg_len && !ope->active &&
		    !ope->cts_sent)
			continue;	/* not receiving from it */
		if (ope->active) {
			kfab_list_del(&ope->link);
			ope->active = false;
		}
		ope->err = FI_ECONNRESET;
		ope->why = "the sender is gone";
		rx_complete(ep, ope);
	}
}

void efa_rdm_rx_fini(struct efa_rdm_ep *ep)
{
	for (uint32_t i = 0; ep->ptab && i < ep->ptab_size; i++) {
		for (struct efa_rdm_peer *peer = ep->ptab[i]; peer;
		     peer = peer->hnext) {
			while (!kfab_list_empty(&peer->ux_active)) {
				struct efa_rdm_ux *ux =
					kfab_list_first(&peer->ux_active,
							struct efa_rdm_ux,
							link);

				kfab_list_del(&ux->link);
				/* not unexpected any more: nobody else frees it */
				if (kfab_list_empty(&ux->te.link))
					ux_free(ux);
			}
		}
	}
	for (int t = 0; t < 2; t++) {
		while (!kfab_list_empty(&ep->tagm.unexp[t])) {
			struct kfab_tagm_entry *te =
				kfab_list_first(&ep->tagm.unexp[t],
						struct kfab_tagm_entry, link);

			kfab_list_del(&te->link);
			ux_free(te_ux(te));
		}
	}
	for (uint32_t i = 0; i < ep->nopes; i++) {
		free(ep->opes[i].rd);
		efa_rdm_buf_put(ep, ep->opes[i].owned);
	}
}
