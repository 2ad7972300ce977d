// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa RDM: peers. A peer is a remote QP the endpoint sent to or heard
 * from, its record among the endpoint's (core/kfab_peer.h): found by its
 * key (gid, qpn), and from the sender's side by AV index. Its device
 * mapping is made on first send.
 *
 * Posting and RNR (fi_efa(7), "receiver not ready"): a packet the peer's
 * ring refuses is retried at once rnr_retry times (the device's retries,
 * FI_OPT_EFA_RNR_RETRY); if it is still refused the peer backs off: a
 * random first wait (FI_EFA_TIMEOUT_INTERVAL, or 40-120 us when 0),
 * doubled on each further refusal up to FI_EFA_MAX_TIMEOUT. Nothing is
 * posted to the peer until the wait expires; a packet that goes in ends
 * the backoff. rnr_retry 7 retries forever: the packet waits in the
 * queue, retried on every progress, and the peer never backs off.
 *
 * While a peer has packets queued, new ones queue behind them: control
 * packets as copies (ctlq), operations as themselves (txq, which post
 * their own packets when their turn comes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "efa_rdm.h"

static inline struct efa_rdm_ep *ep_of_peers(struct kfab_peers *ps)
{
	return kfab_container_of(ps, struct efa_rdm_ep, peers);
}

static void pkt_list_free(struct efa_rdm_ep *ep, struct kfab_list *l)
{
	while (!kfab_list_empty(l)) {
		struct efa_rdm_pkt *p = kfab_list_first(l, struct efa_rdm_pkt,
							link);

		kfab_list_del(&p->link);
		efa_rdm_pkt_put(ep, p);
	}
}

static int peer_init(struct kfab_peers *ps, struct kfab_peer *base,
		     const void *name)
{
	struct efa_rdm_peer *peer = efa_rdm_peer_rec(base);

	(void)ps;
	if (efa_name_get(name, &peer->addr))
		return -FI_EINVAL;
	kfab_list_init(&peer->ctlq);
	kfab_list_init(&peer->txq);
	kfab_list_init(&peer->busy_link);
	kfab_list_init(&peer->early);
	kfab_list_init(&peer->rx_active);
	kfab_list_init(&peer->ux_active);
	kfab_list_init(&peer->rejected);
	return 0;
}

/* The AV's name says which qkey to send with, until the QP is mapped. */
static void peer_bind(struct kfab_peers *ps, struct kfab_peer *base,
		      const void *name)
{
	struct efa_rdm_peer *peer = efa_rdm_peer_rec(base);
	struct kfab_efa_addr qa;

	(void)ps;
	if (!peer->dev_peer && !efa_name_get(name, &qa))
		peer->addr.qkey = qa.qkey;
}

static void peer_release(struct kfab_peers *ps, struct kfab_peer *base)
{
	struct efa_rdm_peer *peer = efa_rdm_peer_rec(base);
	struct efa_rdm_ep *ep = ep_of_peers(ps);

	if (peer->dev_peer)
		kfab_efa_unmap_peer(ep->dev, peer->dev_peer);
	/* off the lists of unexpected records, which the rxq frees */
	while (!kfab_list_empty(&peer->ux_active))
		kfab_list_del(peer->ux_active.next);
	pkt_list_free(ep, &peer->ctlq);
	pkt_list_free(ep, &peer->early);
	pkt_list_free(ep, &peer->rejected);
	if (peer->win) {
		for (uint32_t i = 0; i < ep->recvwin; i++)
			efa_rdm_pkt_put(ep, peer->win[i]);
		free(peer->win);
	}
}

static void peer_print(const struct kfab_peer *base, char *buf, size_t len)
{
	const struct efa_rdm_peer *peer =
		kfab_container_of(base, const struct efa_rdm_peer, base);

	snprintf(buf, len, "QP %u", peer->addr.qpn);
}

static const struct kfab_peer_ops efa_rdm_peer_ops = {
	.size = sizeof(struct efa_rdm_peer),
	.init = peer_init,
	.bind = peer_bind,
	.release = peer_release,
	.print = peer_print,
	.why_eacces = "the name's qkey is not the QP's",
	.why_enoent = "no such QP: its endpoint closed?",
};

void efa_rdm_peers_init(struct efa_rdm_ep *ep)
{
	kfab_peers_init(&ep->peers, &efa_rdm_peer_ops, ep->domain->kp);
	kfab_list_init(&ep->busy);
}

struct efa_rdm_peer *efa_rdm_peer_find(struct efa_rdm_ep *ep,
				       const struct kfab_efa_ring_entry *ent,
				       uint64_t key, uint32_t qkey)
{
	struct kfab_peer *base;
	struct efa_rdm_peer *peer;
	struct efa_addr name;

	efa_name_set(&name, ent->src_gid, ent->src_qpn, qkey);
	base = kfab_peers_find(&ep->peers, key, &name);
	if (!base)
		return NULL;
	peer = efa_rdm_peer_rec(base);
	if (peer->addr.qkey != qkey && !peer->dev_peer)
		peer->addr.qkey = qkey;
	return peer;
}

int efa_rdm_peer_map(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	int ret;

	if (kfab_likely(peer->dev_peer))
		return 0;
	if (peer->base.err)
		return peer->base.err;
	ret = kfab_efa_map_peer(ep->dev, &peer->addr, &peer->dev_peer);
	if (!ret)
		return 0;
	peer->dev_peer = NULL;
	ret = kfab_peer_unreachable(&ep->peers, &peer->base, ret);
	/* a device Down may come back Active: tried again then */
	if (ret == -FI_ENETDOWN)
		peer->base.err = 0;
	return ret;
}

fi_addr_t efa_rdm_peer_src(const struct efa_rdm_ep *ep,
			   const struct efa_rdm_peer *peer)
{
	if (!(ep->caps & FI_SOURCE) || !ep->base.av || !peer)
		return FI_ADDR_NOTAVAIL;
	return kfab_av_reverse(ep->base.av, peer->base.key);
}

/* ------------------------------------------------------------------ */
/* posting */

static uint64_t rng_next(struct efa_rdm_ep *ep)
{
	ep->rng ^= ep->rng << 13;
	ep->rng ^= ep->rng >> 7;
	ep->rng ^= ep->rng << 17;
	return ep->rng;
}

static void peer_busy(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	if (!peer->busy) {
		peer->busy = true;
		kfab_list_add_tail(&peer->busy_link, &ep->busy);
	}
}

/* Retries exhausted: the peer backs off (fi_efa(7)). */
static void peer_backoff(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	const struct efa_params *p = ep->params;
	uint64_t usec;

	if (!peer->backoff_usec) {
		usec = p->timeout_interval;
		if (!usec)
			usec = EFA_RDM_RNR_MIN_USEC +
			       rng_next(ep) % (EFA_RDM_RNR_MAX_USEC -
					       EFA_RDM_RNR_MIN_USEC + 1);
	} else {
		usec = (uint64_t)peer->backoff_usec * 2;
	}
	if (usec > p->max_timeout)
		usec = p->max_timeout;
	peer->backoff_usec = (uint32_t)usec;
	peer->backoff_until_ns = kfab_now_ns() + usec * 1000;
	ep->stats.rnr_events++;
	if (usec > ep->stats.rnr_backoff_max_usec)
		ep->stats.rnr_backoff_max_usec = usec;
	peer_busy(ep, peer);
}

static bool peer_backing_off(struct efa_rdm_peer *peer)
{
	if (kfab_likely(!peer->backoff_until_ns))
		return false;
	if (kfab_now_ns() < peer->backoff_until_ns)
		return true;
	peer->backoff_until_ns = 0;
	return false;
}

/* One attempt and the device's retries: 0, -EAGAIN or another -errno. */
static int post_raw(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		    const struct efa_rdm_hdr *hdr, const void *payload,
		    size_t len)
{
	uint32_t tries = ep->rnr_retry == EFA_RDM_RNR_INFINITE ? 0 :
			 ep->rnr_retry;
	int ret;

	for (;;) {
		ret = kfab_efa_peer_send(ep->dev, ep->qp, peer->dev_peer, hdr,
					 sizeof(*hdr), 0, payload, len);
		if (kfab_unlikely(peer->dev_peer->held && !ep->held)) {
			ep->held = true;
			kfab_cq_progress_kick(ep->tx.cq ? ep->tx.cq : ep->rx.cq);
		}
		if (kfab_likely(ret != -EAGAIN))
			break;
		if (!tries--) {
			if (ep->rnr_retry != EFA_RDM_RNR_INFINITE)
				peer_backoff(ep, peer);
			else
				peer_busy(ep, peer);
			return -EAGAIN;
		}
		ep->stats.rnr_retries++;
	}
	if (kfab_likely(!ret)) {
		peer->backoff_usec = 0;
		return 0;
	}
	if (ret == -EMSGSIZE) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "a packet of %zu bytes exceeds the mtu of QP %u's device\n",
			  len, peer->addr.qpn);
		return -EMSGSIZE;
	}
	/* a device is Down: nothing was sent, the peer stays */
	if (ret == -ENETDOWN)
		return ret;
	/* published, but its owner could not be woken: gone */
	peer->base.err = kfab_peer_err(ret);
	kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
		  "QP %u is gone: %s\n", peer->addr.qpn, strerror(-ret));
	return ret;
}

int efa_rdm_post(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		 struct efa_rdm_hdr *hdr, const void *ext, size_t extlen,
		 const struct iovec *iov, size_t count, size_t off,
		 size_t len)
{
	const void *payload;
	size_t i = 0;
	int ret;

	ret = efa_rdm_peer_map(ep, peer);
	if (kfab_unlikely(ret))
		return ret;
	if (kfab_unlikely(!peer->hs_sent))
		efa_rdm_handshake(ep, peer);
	if (kfab_unlikely(peer_backing_off(peer)))
		return -EAGAIN;
	hdr->qkey = ep->qp->addr.qkey;
	while (i < count && off >= iov[i].iov_len)
		off -= iov[i++].iov_len;
	if (!extlen && (!len || (i < count && iov[i].iov_len - off >= len))) {
		payload = len ? (const uint8_t *)iov[i].iov_base + off : NULL;
	} else {
		if (extlen)
			memcpy(ep->bounce, ext, extlen);
		kfab_iov_to_buf(iov + i, count - i, off,
				      ep->bounce + extlen, len);
		payload = ep->bounce;
		len += extlen;
	}
	return post_raw(ep, peer, hdr, payload, len);
}

static void ctl_queue(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      const struct efa_rdm_hdr *hdr, const void *payload,
		      size_t len)
{
	struct efa_rdm_pkt *p = efa_rdm_pkt_get(ep, (uint32_t)len);

	if (!p) {
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "out of memory queueing a packet of type %u to QP %u: dropped\n",
			  hdr->type, peer->addr.qpn);
		return;
	}
	p->hdr = *hdr;
	if (len)
		memcpy(p->payload, payload, len);
	kfab_list_add_tail(&p->link, &peer->ctlq);
	ep->stats.pkts_queued++;
	peer_busy(ep, peer);
}

void efa_rdm_post_ctl(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      struct efa_rdm_hdr *hdr, const void *payload,
		      size_t len)
{
	struct iovec iov = { (void *)payload, len };
	int ret;

	if (peer->base.err)
		return;
	if (!kfab_list_empty(&peer->ctlq)) {
		ctl_queue(ep, peer, hdr, payload, len);
		return;
	}
	ret = efa_rdm_post(ep, peer, hdr, NULL, 0, &iov, 1, 0, len);
	/* Down: kept for the link's return, dropped by peer_down() */
	if (ret == -EAGAIN || ret == -ENETDOWN)
		ctl_queue(ep, peer, hdr, payload, len);
}

void efa_rdm_handshake(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	struct efa_rdm_hdr hdr = { .type = EFA_PKT_HANDSHAKE };

	if (kfab_likely(peer->hs_sent))
		return;
	peer->hs_sent = true;
	hdr.data = EFA_FEAT_RECEIPT |
		   (ep->rdma_read ? EFA_FEAT_RDMA_READ : 0) |
		   (ep->rdma_write ? EFA_FEAT_RDMA_WRITE : 0);
	ep->stats.handshakes_sent++;
	efa_rdm_post_ctl(ep, peer, &hdr, NULL, 0);
}

void efa_rdm_txq_add(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope)
{
	if (ope->queued)
		return;
	ope->queued = true;
	kfab_list_add_tail(&ope->link, &ope->peer->txq);
	peer_busy(ep, ope->peer);
}

void efa_rdm_txq_del(struct efa_rdm_ope *ope)
{
	if (!ope->queued)
		return;
	ope->queued = false;
	kfab_list_del(&ope->link);
}

/* Posts @peer's queue in order: true when it emptied. */
static bool peer_push(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	if (peer_backing_off(peer))
		return false;
	while (!kfab_list_empty(&peer->ctlq)) {
		struct efa_rdm_pkt *p = kfab_list_first(&peer->ctlq,
							struct efa_rdm_pkt,
							link);
		struct iovec iov = { p->payload, p->len };
		int ret = peer->base.err ? peer->base.err :
			  efa_rdm_post(ep, peer, &p->hdr, NULL, 0, &iov, 1, 0,
				       p->len);

		if (ret == -EAGAIN || ret == -ENETDOWN)
			return false;
		kfab_list_del(&p->link);
		efa_rdm_pkt_put(ep, p);
	}
	while (!kfab_list_empty(&peer->txq)) {
		struct efa_rdm_ope *ope = kfab_list_first(&peer->txq,
							  struct efa_rdm_ope,
							  link);

		if (efa_rdm_tx_push(ep, ope) == -EAGAIN)
			return false;
		/* done posting (or completed and freed): off the queue */
		if (ope->h.kind != EFA_OPE_FREE && ope->queued)
			efa_rdm_txq_del(ope);
	}
	return true;
}

void efa_rdm_peers_push(struct efa_rdm_ep *ep)
{
	struct kfab_list *pos, *tmp;

	kfab_list_for_each_safe(pos, tmp, &ep->busy) {
		struct efa_rdm_peer *peer =
			kfab_list_entry(pos, struct efa_rdm_peer, busy_link);

		if (peer_push(ep, peer)) {
			peer->busy = false;
			kfab_list_del(&peer->busy_link);
		}
	}
}

long efa_rdm_peers_next_usec(struct efa_rdm_ep *ep)
{
	uint64_t now = kfab_now_ns(), first = UINT64_MAX;
	struct kfab_list *pos;

	kfab_list_for_each(pos, &ep->busy) {
		struct efa_rdm_peer *peer =
			kfab_list_entry(pos, struct efa_rdm_peer, busy_link);

		if (!peer->backoff_until_ns || peer->backoff_until_ns <= now)
			return 0;
		if (peer->backoff_until_ns < first)
			first = peer->backoff_until_ns;
	}
	if (first == UINT64_MAX)
		return -1;
	return (long)((first - now + 999) / 1000);
}

void efa_rdm_flush_held(struct efa_rdm_ep *ep)
{
	bool held = false;

	struct kfab_peer *base;

	kfab_peers_for_each(base, &ep->peers) {
		struct efa_rdm_peer *peer = efa_rdm_peer_rec(base);

		if (peer->dev_peer && peer->dev_peer->held) {
			kfab_efa_peer_flush(ep->dev, peer->dev_peer);
			held |= peer->dev_peer->held;
		}
	}
	ep->held = held;
}

/* Its queued packets dropped, its operations failed with @err. */
static void peer_fail(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      int err, const char *tx_why, const char *rx_why)
{
	pkt_list_free(ep, &peer->ctlq);
	efa_rdm_tx_fail_peer(ep, peer, err, tx_why);
	efa_rdm_rx_fail_peer(ep, peer, err, rx_why);
	if (peer->busy) {
		peer->busy = false;
		kfab_list_del(&peer->busy_link);
	}
}

static void peer_dead(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
		  "QP %u is gone (its endpoint closed or its process died): its operations fail with FI_ECONNRESET\n",
		  peer->addr.qpn);
	peer->base.err = -FI_ECONNRESET;
	peer_fail(ep, peer, FI_ECONNRESET, "the peer is unreachable",
		  "the sender is gone");
}

/*
 * This device or the peer's is Down: what waits for the peer's answers
 * fails, the peer stays (and is used again once both are Active).
 */
static void peer_down(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer)
{
	if (!peer->down)
		kfab_warn(efa_rdm_kp(ep), FI_LOG_EP_DATA,
			  "the link to QP %u is Down (this device or its): its operations fail with FI_ENETDOWN\n",
			  peer->addr.qpn);
	peer->down = true;
	peer_fail(ep, peer, FI_ENETDOWN,
		  "this device or the peer's went Down before the peer answered",
		  "this device or the sender's went Down during the message");
}

void efa_rdm_peers_check(struct efa_rdm_ep *ep)
{
	uint64_t now = kfab_now_ns();
	struct kfab_peer *base;

	if (now < ep->next_check_ns)
		return;
	ep->next_check_ns = now + EFA_RDM_LIVENESS_NS;
	kfab_peers_for_each(base, &ep->peers) {
		struct efa_rdm_peer *peer = efa_rdm_peer_rec(base);

		if (!peer->dev_peer || peer->base.err)
			continue;
		if (kfab_efa_peer_gone(ep->dev, peer->dev_peer))
			peer_dead(ep, peer);
		else if (kfab_efa_link_down(ep->dev, peer->dev_peer))
			peer_down(ep, peer);
		else
			peer->down = false;
	}
}
