// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_opx: the reliability service and the connection table.
 *
 * A connection holds both flows with one peer context. Sending: every
 * ordered packet takes the next PSN and a replay slot (the header, and
 * where its payload lives) and stays there until the peer acknowledges
 * it; psn_acked <= psn_sent <= psn_next. A packet the peer's full ring
 * refused stays below psn_next and is transmitted again, in order, by the
 * next progress call, as an HFI would stall on its send credits.
 * Receiving: packets are delivered in PSN order exactly once; one that
 * arrives early is copied aside (ooo) and a NACK names the first missing
 * PSN and where the held ones start, so that the sender resends just the
 * hole; a duplicate is dropped and re-acknowledged.
 *
 * ACKs: piggybacked on every packet to the peer; sent on their own at
 * every FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE-th PSN, after
 * OPX_IDLE_ACK_POLLS empty polls of our queue, and at each reliability
 * tick. Every FI_OPX_RELIABILITY_SERVICE_USEC_MAX microseconds a flow
 * whose acknowledgements did not move since the last tick is PINGed; the
 * peer answers with an ACK and, if it lacks PSNs the PING covers, a NACK.
 *
 * Dead peers: a peer whose context was released (its process exited or
 * closed the endpoint) is found at the next tick, or at the next packet
 * sent to it, and every pending operation with it completes in error
 * (FI_ECONNRESET); the connection starts over afterwards.
 *
 * Down links: while our unit or the peer's is Down no packet goes to it;
 * a post fails with -FI_ENETDOWN, and the operations in progress with it
 * complete in error (FI_ENETDOWN) at the next packet or tick, as for a
 * dead peer. The connection starts over with the same peer session in
 * the next epoch (opx_proto.h; a dead peer's starts at epoch 0),
 * which the peer adopts from our next packet, failing its own operations
 * with us that were in progress, so that both flows restart at PSN 0 once
 * the units are Active again.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opx.h"

static uint64_t opx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* connections: the endpoint's peers (core/kfab_peer.h) */

static inline struct opx_ep *opx_ep_of_conns(struct kfab_peers *ps)
{
	return kfab_container_of(ps, struct opx_ep, conns);
}

static int opx_conn_init(struct kfab_peers *ps, struct kfab_peer *peer,
			 const void *name)
{
	struct opx_conn *conn = opx_conn_of(peer);
	uint64_t n;

	(void)ps;
	memcpy(&n, name, sizeof(n));
	conn->peer_session = opx_name_session(n);
	kfab_list_init(&conn->txq);
	kfab_list_init(&conn->deferred);
	kfab_list_init(&conn->ooo);
	kfab_list_init(&conn->busy_link);
	kfab_list_init(&conn->ack_link);
	return 0;
}

static void opx_conn_release(struct kfab_peers *ps, struct kfab_peer *peer);

static void opx_conn_print(const struct kfab_peer *peer, char *buf,
			   size_t len)
{
	snprintf(buf, len, "lid %u context %u", opx_key_lid((uint32_t)peer->key),
		 opx_key_ctxt((uint32_t)peer->key));
}

static const struct kfab_peer_ops opx_conn_ops = {
	.size = sizeof(struct opx_conn),
	.init = opx_conn_init,
	.release = opx_conn_release,
	.print = opx_conn_print,
	.why_eacces = "it belongs to another job or user: processes of one job must share FI_OPX_UUID, FI_OPX_PKEY and the user",
	.why_enoent = "the peer has not opened its endpoint yet, or has exited",
	.why_enetdown = "the link is down: unit state Down",
};

void opx_conns_init(struct opx_ep *ep)
{
	kfab_peers_init(&ep->conns, &opx_conn_ops, ep->domain->kp);
	kfab_list_init(&ep->busy);
	kfab_list_init(&ep->acks);
}

/* The connection of a packet's source, made on first contact. */
static inline struct opx_conn *opx_conn_get(struct opx_ep *ep,
					    const struct opx_hdr *hdr)
{
	uint64_t name = opx_name(hdr->src_lid, hdr->src_ctxt, hdr->session);
	struct kfab_peer *peer = kfab_peers_get(&ep->conns,
						 opx_name_key(name), &name);

	return peer ? opx_conn_of(peer) : NULL;
}

void opx_conn_named(struct opx_ep *ep, struct opx_conn *conn, fi_addr_t addr)
{
	uint64_t name;

	memcpy(&name, kfab_av_entry(ep->base.av, addr)->name, sizeof(name));
	conn->peer_session = opx_name_session(name);
}

int opx_conn_map(struct opx_ep *ep, struct opx_conn *conn)
{
	int ret;

	if (kfab_likely(conn->peer != NULL)) {
		if (kfab_likely(!opx_link_down(ep, conn)))
			return 0;
		return kfab_peer_unreachable(&ep->conns, &conn->base,
					     -ENETDOWN);
	}
	ret = kfab_hfi_map_peer(ep->dev, opx_key_lid(opx_conn_key(conn)),
				opx_key_ctxt(opx_conn_key(conn)), &conn->peer);
	if (kfab_likely(!ret))
		return 0;
	return kfab_peer_unreachable(&ep->conns, &conn->base, ret);
}

void opx_conn_busy(struct opx_ep *ep, struct opx_conn *conn)
{
	if (kfab_list_empty(&conn->busy_link))
		kfab_list_add_tail(&conn->busy_link, &ep->busy);
}

static void opx_ack_owe(struct opx_ep *ep, struct opx_conn *conn)
{
	if (kfab_list_empty(&conn->ack_link))
		kfab_list_add_tail(&conn->ack_link, &ep->acks);
}

/* ------------------------------------------------------------------ */
/* transmit */

void opx_hdr_init(const struct opx_ep *ep, const struct opx_conn *conn,
		  struct opx_hdr *hdr, uint8_t op, uint8_t flags)
{
	memset(hdr, 0, OPX_HDR_BASE);
	hdr->op = op;
	hdr->flags = flags;
	hdr->jkey = ep->jkey;
	hdr->src_lid = ep->lid;
	hdr->src_ctxt = ep->ctxt;
	hdr->session = ep->session;
	hdr->dst_session = conn->peer_session;
}

static inline uint64_t opx_rand(struct opx_ep *ep)
{
	uint64_t x = ep->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return ep->rng = x;
}

/*
 * One packet onto the wire: 0 (sent, or lost to drop_ppm as a wire would
 * lose it), -EAGAIN when the peer's queue is full, -ECONNRESET when the
 * peer's context is gone, -ENETDOWN when either unit is Down.
 */
static int opx_wire(struct opx_ep *ep, struct opx_conn *conn,
		    struct opx_hdr *hdr, uint16_t hdrlen, const void *payload,
		    size_t len)
{
	struct kfab_hfi_peer *peer = conn->peer;
	uint32_t ppm;
	int ret;

	if (kfab_unlikely(kfab_hfi_ring_dead(&peer->ring)))
		return -ECONNRESET;
	if (kfab_unlikely(opx_link_down(ep, conn)))
		return -ENETDOWN;
	hdr->dst_session = conn->peer_session;
	hdr->epoch = conn->epoch;
	if (conn->peer_session) {
		hdr->flags |= OPX_F_ACK;
		hdr->ack_psn = conn->rx_next;
	}
	ppm = opx_drop_ppm(conn);
	if (kfab_unlikely(ppm)) {
		/* a hole may open: direct sends wait until it is acked */
		if (hdr->op < OPX_OP_ORDERED_MAX &&
		    (int32_t)(hdr->psn + 1 - conn->lossy_until) > 0)
			conn->lossy_until = hdr->psn + 1;
		if (opx_rand(ep) % 1000000u < ppm) {
			atomic_fetch_add_explicit((_Atomic __u64 *)
						  &peer->ring.ctrl->injected_drops,
						  1, memory_order_relaxed);
			ep->stats.drops_injected++;
			return 0;
		}
	}
	ret = kfab_hfi_ring_send(&peer->ring, hdr, hdrlen, payload, len);
	if (kfab_unlikely(ret < 0)) {
		if (ret == -EAGAIN)
			ep->stats.ring_full++;
		return ret;
	}
	if (ret == KFAB_HFI_RING_NOTIFY)
		kfab_hfi_notify(ep->dev, peer);
	if (hdr->flags & OPX_F_ACK) {
		conn->rx_acked = hdr->ack_psn;
		if (conn->rx_acked == conn->rx_next &&
		    !kfab_list_empty(&conn->ack_link))
			kfab_list_del(&conn->ack_link);
	}
	return 0;
}

int opx_xmit_direct(struct opx_ep *ep, struct opx_conn *conn,
		    struct opx_slot *s, const void *payload, size_t len)
{
	int ret;

	if (conn->psn_sent != s->hdr.psn || opx_drop_ppm(conn) ||
	    (int32_t)(conn->psn_acked - conn->lossy_until) < 0)
		return -EPERM;
	ret = opx_wire(ep, conn, &s->hdr, s->hdrlen, payload, len);
	if (!ret)
		conn->psn_sent++;
	return ret;
}

static int opx_slot_xmit(struct opx_ep *ep, struct opx_conn *conn,
			 struct opx_slot *s)
{
	const void *payload = NULL;

	switch (s->src) {
	case OPX_SRC_OWNED:
		payload = s->buf;
		break;
	case OPX_SRC_REQ:
		if (s->req->iov_count == 1) {
			payload = (const uint8_t *)s->req->iov[0].iov_base +
				  s->off;
		} else {
			kfab_iov_to_buf(s->req->iov, s->req->iov_count, s->off,
				       ep->bounce, s->len);
			payload = ep->bounce;
		}
		break;
	default:
		break;
	}
	return opx_wire(ep, conn, &s->hdr, s->hdrlen, payload,
			s->src == OPX_SRC_NONE ? 0 : s->len);
}

struct opx_slot *opx_slot_new(struct opx_ep *ep, struct opx_conn *conn,
			      uint8_t op, uint8_t flags)
{
	struct opx_slot *s;
	uint32_t psn;

	if (kfab_unlikely(!conn->slots)) {
		conn->slots = calloc(OPX_SLOTS, sizeof(*conn->slots));
		if (!conn->slots)
			return NULL;
	}
	psn = conn->psn_next++;
	s = &conn->slots[psn & (OPX_SLOTS - 1)];
	opx_hdr_init(ep, conn, &s->hdr, op, flags);
	s->hdr.psn = psn;
	s->hdrlen = OPX_HDR_BASE;
	s->src = OPX_SRC_NONE;
	s->buf = NULL;
	s->req = NULL;
	s->off = 0;
	s->len = 0;
	opx_conn_busy(ep, conn);
	return s;
}

/* A control packet built by the caller into a new slot: false if none. */
static bool opx_slot_ctl(struct opx_ep *ep, struct opx_conn *conn,
			 const struct opx_hdr *hdr, uint16_t hdrlen,
			 struct opx_req *req, void *buf, size_t len)
{
	struct opx_slot *s = opx_slot_new(ep, conn, hdr->op, hdr->flags);
	uint32_t psn;

	if (!s)
		return false;
	psn = s->hdr.psn;
	memcpy(&s->hdr, hdr, hdrlen);
	s->hdr.psn = psn;
	s->hdrlen = hdrlen;
	s->req = req;
	if (buf) {
		s->src = OPX_SRC_OWNED;
		s->buf = buf;
		s->len = len;
	}
	return true;
}

static int opx_post_ctl_buf(struct opx_ep *ep, struct opx_conn *conn,
			    const struct opx_hdr *hdr, uint16_t hdrlen,
			    struct opx_req *req, void *buf, size_t len)
{
	struct opx_deferred *d;

	if (kfab_list_empty(&conn->deferred) && opx_conn_has_slot(conn, true) &&
	    opx_slot_ctl(ep, conn, hdr, hdrlen, req, buf, len))
		return 0;
	d = kfab_pool_get(&ep->deferred_recs);
	if (!d) {
		if (buf)
			opx_buf_put(ep, buf);
		return -FI_ENOMEM;
	}
	memcpy(&d->hdr, hdr, hdrlen);
	d->hdrlen = hdrlen;
	d->req = req;
	d->buf = buf;
	d->len = len;
	kfab_list_add_tail(&d->link, &conn->deferred);
	opx_conn_busy(ep, conn);
	return 0;
}

int opx_post_ctl(struct opx_ep *ep, struct opx_conn *conn,
		 const struct opx_hdr *hdr, uint16_t hdrlen,
		 struct opx_req *req)
{
	return opx_post_ctl_buf(ep, conn, hdr, hdrlen, req, NULL, 0);
}

int opx_post_reply(struct opx_ep *ep, struct opx_conn *conn,
		   struct opx_hdr *hdr, void *buf, size_t len)
{
	if (len <= OPX_INLINE_MAX) {
		if (len)
			memcpy(hdr->inl, buf, len);
		hdr->ilen = (uint16_t)len;
		if (buf)
			opx_buf_put(ep, buf);
		return opx_post_ctl(ep, conn, hdr,
				    (uint16_t)(OPX_HDR_BASE + len), NULL);
	}
	return opx_post_ctl_buf(ep, conn, hdr, OPX_HDR_BASE, NULL, buf, len);
}

/* Deferred control packets into slots, oldest first. */
static void opx_conn_undefer(struct opx_ep *ep, struct opx_conn *conn)
{
	while (!kfab_list_empty(&conn->deferred) &&
	       opx_conn_has_slot(conn, true)) {
		struct opx_deferred *d = kfab_list_first(&conn->deferred,
							 struct opx_deferred,
							 link);

		if (!opx_slot_ctl(ep, conn, &d->hdr, d->hdrlen, d->req,
				  d->buf, d->len))
			return;
		kfab_list_del(&d->link);
		kfab_pool_put(&ep->deferred_recs, d);
	}
}

void opx_conn_xmit(struct opx_ep *ep, struct opx_conn *conn)
{
	int ret;

	if (kfab_unlikely(!conn->peer)) {
		ret = opx_conn_map(ep, conn);
		if (ret) {
			opx_conn_fail(ep, conn, -ret);
			return;
		}
	}
	opx_conn_undefer(ep, conn);
	while (conn->psn_sent != conn->psn_next) {
		ret = opx_slot_xmit(ep, conn,
				    &conn->slots[conn->psn_sent &
						 (OPX_SLOTS - 1)]);
		if (ret == -EAGAIN)
			return;
		if (ret) {
			opx_conn_fail(ep, conn, ret == -ENETDOWN ?
					   FI_ENETDOWN : FI_ECONNRESET);
			return;
		}
		conn->psn_sent++;
	}
}

/* An unordered control packet; lost quietly if it cannot go now. */
static void opx_send_ctl(struct opx_ep *ep, struct opx_conn *conn, uint8_t op,
			 uint32_t a, uint32_t b)
{
	struct opx_hdr hdr;

	/* quietly: a peer that went away gets no ACKs, and needs none */
	if (!conn->peer &&
	    kfab_hfi_map_peer(ep->dev, opx_key_lid(opx_conn_key(conn)),
			      opx_key_ctxt(opx_conn_key(conn)), &conn->peer))
		return;
	opx_hdr_init(ep, conn, &hdr, op, 0);
	hdr.u.ping.first = a;
	hdr.u.ping.last = b;
	if (opx_wire(ep, conn, &hdr, OPX_HDR_BASE, NULL, 0))
		return;
	if (op == OPX_OP_ACK)
		ep->stats.acks_sent++;
	else if (op == OPX_OP_NACK)
		ep->stats.nacks_sent++;
	else
		ep->stats.pings_sent++;
}

/* ------------------------------------------------------------------ */
/* acknowledgements */

static void opx_slot_release(struct opx_ep *ep, struct opx_slot *s)
{
	struct opx_req *req = s->req;

	if (s->src == OPX_SRC_OWNED)
		opx_buf_put(ep, s->buf);
	s->buf = NULL;
	s->src = OPX_SRC_NONE;
	s->req = NULL;
	if (req && !--req->refs && req->posted)
		opx_tx_complete(ep, req);
}

/* The peer has every PSN below @a. */
static void opx_rel_ack(struct opx_ep *ep, struct opx_conn *conn, uint32_t a)
{
	uint32_t n = a - conn->psn_acked;

	if (!n || n > conn->psn_sent - conn->psn_acked)
		return;
	while (conn->psn_acked != a)
		opx_slot_release(ep, &conn->slots[conn->psn_acked++ &
						  (OPX_SLOTS - 1)]);
	/* room again: queued requests may go on */
	if (!kfab_list_empty(&conn->txq) || !kfab_list_empty(&conn->deferred))
		opx_conn_busy(ep, conn);
}

/* Resend [psn, stop), or up to what was sent when stop == psn. */
static void opx_rel_resend(struct opx_ep *ep, struct opx_conn *conn,
			   uint32_t psn, uint32_t stop)
{
	uint32_t end = conn->psn_sent;
	int n = 0;

	if (psn - conn->psn_acked >= conn->psn_sent - conn->psn_acked)
		return;
	if (stop != psn && stop - conn->psn_acked < end - conn->psn_acked)
		end = stop;
	for (; psn != end && n < 64; psn++, n++) {
		if (opx_slot_xmit(ep, conn,
				  &conn->slots[psn & (OPX_SLOTS - 1)]))
			return;
		ep->stats.replays++;
	}
}

static void opx_rel_nack(struct opx_ep *ep, struct opx_conn *conn,
			 uint32_t psn, uint32_t stop)
{
	opx_rel_ack(ep, conn, psn);
	opx_rel_resend(ep, conn, psn, stop);
}

static void opx_rel_send_nack(struct opx_ep *ep, struct opx_conn *conn)
{
	uint32_t stop = conn->rx_next;

	if (!kfab_list_empty(&conn->ooo))
		stop = kfab_list_first(&conn->ooo, struct opx_ooo,
				       link)->hdr.psn;
	opx_send_ctl(ep, conn, OPX_OP_NACK, conn->rx_next, stop);
	conn->rx_nacked = conn->rx_next;
	conn->nack_valid = true;
}

static void opx_rel_ping(struct opx_ep *ep, struct opx_conn *conn,
			 uint32_t first, uint32_t last)
{
	opx_send_ctl(ep, conn, OPX_OP_ACK, 0, 0);
	if ((int32_t)(conn->rx_next - first) >= 0 &&
	    (int32_t)(last - conn->rx_next) >= 0)
		opx_rel_send_nack(ep, conn);
}

void opx_rel_flush_acks(struct opx_ep *ep)
{
	while (!kfab_list_empty(&ep->acks)) {
		struct opx_conn *conn = kfab_list_first(&ep->acks,
							struct opx_conn,
							ack_link);

		kfab_list_del(&conn->ack_link);
		opx_send_ctl(ep, conn, OPX_OP_ACK, 0, 0);
	}
}

/* ------------------------------------------------------------------ */
/* receive */

/* Hold an early packet, by PSN; false when it is a duplicate or no room. */
static bool opx_ooo_hold(struct opx_ep *ep, struct opx_conn *conn,
			 const struct opx_hdr *hdr, const uint8_t *payload,
			 uint32_t len)
{
	struct kfab_list *pos;
	struct opx_ooo *o;

	if (conn->n_ooo >= OPX_OOO_MAX || len > OPX_EAGER_MAX)
		return false;
	/* arrivals mostly grow: search from the tail */
	for (pos = conn->ooo.prev; pos != &conn->ooo; pos = pos->prev) {
		struct opx_ooo *q = kfab_list_entry(pos, struct opx_ooo, link);
		int32_t d = (int32_t)(hdr->psn - q->hdr.psn);

		if (!d)
			return false;
		if (d > 0)
			break;
	}
	o = kfab_pool_get(&ep->ooo_recs);
	if (!o)
		return false;
	memcpy(&o->hdr, hdr, sizeof(*hdr));
	o->len = len;
	if (len)
		memcpy(o->payload, payload, len);
	kfab_list_insert(&o->link, pos, pos->next);
	conn->n_ooo++;
	ep->stats.ooo++;
	return true;
}

static void opx_rx_in_order(struct opx_ep *ep, struct opx_conn *conn,
			    const struct opx_hdr *hdr, const uint8_t *payload,
			    uint32_t len)
{
	uint32_t rate = ep->params->pre_ack_rate;
	uint32_t psn = hdr->psn;

	conn->rx_next++;
	opx_rx_deliver(ep, conn, hdr, payload, len);
	if ((hdr->flags & OPX_F_ACKREQ) || (rate && psn && !(psn & (rate - 1))))
		opx_send_ctl(ep, conn, OPX_OP_ACK, 0, 0);
	else
		opx_ack_owe(ep, conn);
}

static void opx_ooo_drain(struct opx_ep *ep, struct opx_conn *conn)
{
	while (!kfab_list_empty(&conn->ooo)) {
		struct opx_ooo *o = kfab_list_first(&conn->ooo,
						    struct opx_ooo, link);

		if (o->hdr.psn != conn->rx_next)
			break;
		kfab_list_del(&o->link);
		conn->n_ooo--;
		opx_rx_in_order(ep, conn, &o->hdr, o->payload, o->len);
		kfab_pool_put(&ep->ooo_recs, o);
	}
	/* a hole remains: ask for it once */
	if (!kfab_list_empty(&conn->ooo) &&
	    (!conn->nack_valid || conn->rx_nacked != conn->rx_next))
		opx_rel_send_nack(ep, conn);
}

static bool opx_conn_used(const struct opx_conn *conn)
{
	return conn->rx_next || conn->n_ooo || conn->psn_next;
}

/* A packet from a new incarnation of a known peer context: its epoch. */
static void opx_conn_new_session(struct opx_ep *ep, struct opx_conn *conn,
				 const struct opx_hdr *hdr)
{
	if (conn->peer_session && opx_conn_used(conn))
		opx_conn_fail(ep, conn, FI_ECONNRESET);
	conn->peer_session = hdr->session;
	conn->epoch = hdr->epoch;
}

/*
 * A packet of another epoch: false when it is of an earlier one, sent
 * before the connection started over, and dropped (the ACK tells the
 * peer ours). One of a later epoch: the peer started over after its link
 * went Down; our operations with it fail too, and we start over with it.
 */
static bool opx_conn_new_epoch(struct opx_ep *ep, struct opx_conn *conn,
			       uint8_t epoch)
{
	if ((int8_t)(epoch - conn->epoch) < 0) {
		opx_send_ctl(ep, conn, OPX_OP_ACK, 0, 0);
		return false;
	}
	if (opx_conn_used(conn))
		opx_conn_fail(ep, conn, FI_ENETDOWN);
	conn->epoch = epoch;
	return true;
}

void opx_rel_recv(struct opx_ep *ep, const struct kfab_hfi_ring_entry *ent)
{
	const struct opx_hdr *hdr = (const struct opx_hdr *)ent->hdr;
	const uint8_t *payload = ent->payload;
	uint32_t len = ent->len;
	struct opx_conn *conn;
	int32_t d;

	if (kfab_unlikely(hdr->jkey != ep->jkey ||
			  (hdr->dst_session &&
			   hdr->dst_session != ep->session) ||
			  hdr->ilen > OPX_INLINE_MAX))
		return;
	if (hdr->ilen) {
		payload = hdr->inl;
		len = hdr->ilen;
	}
	conn = opx_conn_get(ep, hdr);
	if (kfab_unlikely(!conn))
		return;
	if (kfab_unlikely(hdr->session != conn->peer_session))
		opx_conn_new_session(ep, conn, hdr);
	if (kfab_unlikely(hdr->epoch != conn->epoch) &&
	    !opx_conn_new_epoch(ep, conn, hdr->epoch))
		return;
	if (hdr->flags & OPX_F_ACK)
		opx_rel_ack(ep, conn, hdr->ack_psn);

	switch (hdr->op) {
	case OPX_OP_ACK:
		return;
	case OPX_OP_NACK:
		opx_rel_nack(ep, conn, hdr->u.nack.psn, hdr->u.nack.stop);
		return;
	case OPX_OP_PING:
		opx_rel_ping(ep, conn, hdr->u.ping.first, hdr->u.ping.last);
		return;
	default:
		if (hdr->op >= OPX_OP_ORDERED_MAX || !hdr->op)
			return;
		break;
	}

	d = (int32_t)(hdr->psn - conn->rx_next);
	if (kfab_likely(!d)) {
		opx_rx_in_order(ep, conn, hdr, payload, len);
		if (kfab_unlikely(conn->n_ooo))
			opx_ooo_drain(ep, conn);
	} else if (d < 0) {
		ep->stats.dups++;
		opx_ack_owe(ep, conn);
	} else if (opx_ooo_hold(ep, conn, hdr, payload, len) &&
		   (!conn->nack_valid || conn->rx_nacked != conn->rx_next)) {
		opx_rel_send_nack(ep, conn);
	}
}

/* ------------------------------------------------------------------ */
/* timers and failure */

/*
 * The dead word every tick; the backend's slower check (a system call on
 * shm) every OPX_LIVENESS_TICKS ticks.
 */
static bool opx_conn_dead(struct opx_ep *ep, struct opx_conn *conn,
			  bool probe)
{
	if (!conn->peer)
		return false;
	if (kfab_hfi_ring_dead(&conn->peer->ring))
		return true;
	return probe && kfab_hfi_peer_gone(ep->dev, conn->peer);
}

/* Operations with the peer in progress, either way. */
static bool opx_conn_pending(struct opx_ep *ep, struct opx_conn *conn)
{
	if (conn->psn_acked != conn->psn_next || conn->n_ooo ||
	    conn->mp_req || conn->mp_ux || !kfab_list_empty(&conn->txq) ||
	    !kfab_list_empty(&conn->deferred))
		return true;
	for (uint32_t i = 0; i < ep->reqs.n; i++) {
		struct opx_req *req = opx_req_at(ep, i);

		if (req->h.kind != OPX_REQ_FREE && req->conn == conn &&
		    (req->h.kind == OPX_REQ_TX || req->rzv))
			return true;
	}
	return false;
}

void opx_rel_tick(struct opx_ep *ep)
{
	uint64_t now = opx_now_ns();
	struct kfab_peer *peer;
	bool probe;

	if (now < ep->next_tick_ns)
		return;
	probe = !(++ep->ticks % OPX_LIVENESS_TICKS);
	ep->next_tick_ns = now + (uint64_t)ep->params->reliability_usec_max *
				 1000u;
	kfab_peers_for_each(peer, &ep->conns) {
		struct opx_conn *conn = opx_conn_of(peer);

		if (opx_conn_dead(ep, conn, probe)) {
			opx_conn_fail(ep, conn, FI_ECONNRESET);
			continue;
		}
		if (conn->peer && opx_link_down(ep, conn) &&
		    opx_conn_pending(ep, conn)) {
			opx_conn_fail(ep, conn, FI_ENETDOWN);
			continue;
		}
		if (conn->psn_acked == conn->psn_sent)
			continue;
		if (conn->ping_acked == conn->psn_acked)
			opx_send_ctl(ep, conn, OPX_OP_PING, conn->psn_acked,
				     conn->psn_sent - 1);
		conn->ping_acked = conn->psn_acked;
	}
	opx_rel_flush_acks(ep);
}

static void opx_conn_reset(struct opx_ep *ep, struct opx_conn *conn)
{
	for (uint32_t psn = conn->psn_acked; psn != conn->psn_next; psn++) {
		struct opx_slot *s = &conn->slots[psn & (OPX_SLOTS - 1)];

		if (s->src == OPX_SRC_OWNED)
			opx_buf_put(ep, s->buf);
		memset(s, 0, sizeof(*s));
	}
	while (!kfab_list_empty(&conn->deferred)) {
		struct opx_deferred *d = kfab_list_first(&conn->deferred,
							 struct opx_deferred,
							 link);

		kfab_list_del(&d->link);
		if (d->buf)
			opx_buf_put(ep, d->buf);
		kfab_pool_put(&ep->deferred_recs, d);
	}
	conn->wr_status = 0;
	while (!kfab_list_empty(&conn->ooo)) {
		struct opx_ooo *o = kfab_list_first(&conn->ooo,
						    struct opx_ooo, link);

		kfab_list_del(&o->link);
		kfab_pool_put(&ep->ooo_recs, o);
	}
	conn->n_ooo = 0;
	conn->psn_next = conn->psn_sent = conn->psn_acked = 0;
	conn->ping_acked = 0;
	conn->rx_next = conn->rx_acked = 0;
	conn->nack_valid = false;
	conn->peer_session = 0;
	conn->epoch = 0;
	kfab_list_del(&conn->busy_link);
	kfab_list_del(&conn->ack_link);
	if (conn->peer) {
		kfab_hfi_unmap_peer(ep->dev, conn->peer);
		conn->peer = NULL;
	}
}

void opx_conn_fail(struct opx_ep *ep, struct opx_conn *conn, int err)
{
	kfab_info(ep->domain->kp, FI_LOG_EP_DATA,
		  "lid %u context %u: %s; failing its operations\n",
		  opx_key_lid(opx_conn_key(conn)),
		  opx_key_ctxt(opx_conn_key(conn)), fi_strerror(err));
	/* sends: queued, waiting for CTS or for ACKs */
	for (uint32_t i = 0; i < ep->reqs.n; i++) {
		struct opx_req *req = opx_req_at(ep, i);

		if (req->h.kind != OPX_REQ_TX || req->conn != conn)
			continue;
		kfab_list_del(&req->qlink);
		req->err = req->err ? req->err : err;
		req->refs = 0;
		req->posted = true;
		opx_tx_complete(ep, req);
	}
	/* the slots no longer own references: drop them before reset */
	for (uint32_t psn = conn->psn_acked; psn != conn->psn_next; psn++)
		conn->slots[psn & (OPX_SLOTS - 1)].req = NULL;
	opx_rx_fail_conn(ep, conn, err);
	if (err == FI_ENETDOWN) {
		/* the same peer, in the next epoch */
		uint32_t session = conn->peer_session;
		uint8_t epoch = conn->epoch + 1;

		opx_conn_reset(ep, conn);
		conn->peer_session = session;
		conn->epoch = epoch;
		return;
	}
	opx_conn_reset(ep, conn);
}

static void opx_conn_release(struct kfab_peers *ps, struct kfab_peer *peer)
{
	struct opx_conn *conn = opx_conn_of(peer);

	for (uint32_t psn = conn->psn_acked; psn != conn->psn_next; psn++)
		conn->slots[psn & (OPX_SLOTS - 1)].req = NULL;
	opx_conn_reset(opx_ep_of_conns(ps), conn);
	free(conn->slots);
}

