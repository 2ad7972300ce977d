/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_opx, the OPX data path over HFI contexts.
 *
 * One endpoint owns one HFI context (struct kfab_hfi_dev) and talks to
 * every peer context through a connection (struct opx_conn): the mapped
 * peer queues, the reliable flow to it (PSNs, replay slots) and the flow
 * from it (next PSN expected, packets held out of order).
 *
 *   opx_ep.c    the endpoint object, the hooks of the core's
 *               fi_ops_msg/fi_ops_tagged (core/kfab_msg.h)
 *   opx_sep.c   scalable endpoints: the transmit and receive contexts
 *   opx_tx.c    send protocols: inline/eager, multi-packet eager,
 *               rendezvous (SDMA into a TID, or DATA packets)
 *   opx_rx.c    receive dispatch, matching, rendezvous receive side,
 *               completions
 *   opx_rel.c   the reliability service: ACK, NACK, PING, replay, the
 *               connection table, dead peers
 *   opx_rma.c   RMA and atomics: the fi_ops_rma/fi_ops_atomic entries
 *               and the target side
 *
 * Everything here runs under the domain lock (elided under
 * FI_THREAD_DOMAIN with manual progress): one thread at a time per
 * endpoint, the application's or a CQ's progress thread.
 */
#ifndef KFAB_ULIB_OPX_H
#define KFAB_ULIB_OPX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/kfab_handle.h"
#include "core/kfab_peer.h"
#include "core/kfab_pool.h"
#include "core/kfab_prov.h"
#include "core/kfab_rxq.h"
#include "opx_info.h"
#include "opx_param.h"
#include "opx_proto.h"

/* fi_endpoint() and fi_scalable_ep() of kfab_opx. */
int opx_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);
int opx_sep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **sep, void *context);

/* Requests of an endpoint, its contexts' queues and the internal ones. */
#define OPX_REQ_IDX_BITS	16
#define OPX_REQS_MAX		(1u << OPX_REQ_IDX_BITS)
#define OPX_REQS_INTERNAL	4096u

/* PIO eager payload: one eager buffer, 8 KiB at most as on an HFI. */
#define OPX_EAGER_MAX		8192u
/* Replay slots per connection: unacknowledged packets to one peer. */
#define OPX_SLOTS		1024
/* Slots only control packets (CTS, DONE) may take. */
#define OPX_SLOTS_CTL		64
/* Packets held out of order per connection before more are dropped. */
#define OPX_OOO_MAX		1024
/* Replay buffers (and held packets) per slab of the endpoint's pools. */
#define OPX_BUF_SLAB		16
/* Deferred control packets per slab of the endpoint's pool. */
#define OPX_DEFERRED_SLAB	64
/* Ring entries handled per progress call. */
#define OPX_POLL_BUDGET		64
/* Reliability ticks between checks that a peer's process still lives. */
#define OPX_LIVENESS_TICKS	64
/* Progress calls between two looks at the clock for the tick. */
#define OPX_TICK_GATE		32
/* Empty polls before pending ACKs are sent on their own. */
#define OPX_IDLE_ACK_POLLS	4

enum opx_req_kind {
	OPX_REQ_FREE = KFAB_HANDLE_FREE,
	OPX_REQ_TX,
	OPX_REQ_RX,
};

/*
 * A send or a receive in flight; handles index the endpoint's table. A
 * receive's context, flags, capacity, error and message are in rxr; the
 * fields of the same names below are a send's.
 */
struct opx_req {
	struct kfab_handle h;		/* kind: enum opx_req_kind */
	struct kfab_rxr rxr;		/* rx: the receive (kfab_rxq.h) */
	struct kfab_list qlink;		/* conn->txq */
	/* against its context's queue size; NULL: the provider's own */
	struct kfab_handle_quota *quota;
	void *context;
	uint64_t flags;			/* FI_* operation flags */
	uint64_t tag;
	uint64_t data;
	struct iovec iov[KFAB_IOV_LIMIT];
	uint32_t iov_count;
	size_t len;			/* tx: the message's */
	struct opx_conn *conn;		/* tx: destination; rx: source */
	struct opx_txc *txc;		/* tx: the context it reports to */
	struct opx_rxc *rxc;		/* rx: the context it reports to */
	uint32_t refs;			/* replay slots and steps pending */
	int err;			/* FI_E* of the first failure */
	size_t xfer;			/* rendezvous: bytes to move */
	int32_t status;			/* RMA: the target's -errno */
	bool comp;			/* a CQ entry is wanted */
	bool dc;			/* tx: FI_DELIVERY_COMPLETE */
	uint8_t op;			/* tx: the protocol chosen */
	uint8_t rx;			/* tx: the peer's receive context */
	/* tx */
	size_t sent;			/* payload bytes posted so far */
	uint32_t rreq;			/* the receiver's handle from CTS */
	bool posted;			/* every packet posted */
	/* RMA and atomics, initiator: iov is the local data (fetch: results) */
	uint64_t rma_key;
	uint64_t rma_addr;
	uint32_t rma_aux;		/* ATOMIC: OPX_ATOMIC_AUX() */
	uint32_t rma_count;		/* ATOMIC: elements */
	void *abuf;			/* ATOMIC: operands [+ compare], owned */
	size_t alen;
	/* rx (and the READ reply being received) */
	size_t received;
	uint32_t tid;			/* expected receive handle, 0: none */
	bool rzv;			/* waiting for DATA or DONE */
};

/* A message that arrived before its receive was posted. */
struct opx_unexp {
	struct kfab_rxq_ux ux;		/* bytes: EAGER, MP (kfab_rxq.h) */
	struct opx_rxc *rxc;		/* whose queue it is on */
	uint8_t op;			/* EAGER, MP_FIRST or RTS */
	uint32_t sreq;			/* RTS */
	uint32_t rts_flags;
};

/* Where a replay slot's payload comes from. */
enum opx_slot_src {
	OPX_SRC_NONE,			/* inline or no payload */
	OPX_SRC_OWNED,			/* slot->buf, freed with the slot */
	OPX_SRC_REQ,			/* the request's iov at off */
};

struct opx_slot {
	struct opx_hdr hdr;
	uint16_t hdrlen;
	uint8_t src;
	void *buf;
	struct opx_req *req;		/* a reference released on ACK */
	size_t off;
	size_t len;
};

/*
 * A packet held until the PSNs before it arrive: from ep->ooo_recs, with
 * room for OPX_EAGER_MAX payload bytes (what a packet of ours carries).
 */
struct opx_ooo {
	struct kfab_list link;
	struct opx_hdr hdr;
	uint32_t len;
	uint8_t payload[];
};

/* A control packet that found no free slot, posted later: ep->deferred_recs. */
struct opx_deferred {
	struct kfab_list link;
	struct opx_hdr hdr;
	uint16_t hdrlen;
	struct opx_req *req;
	void *buf;			/* payload, an OPX_SRC_OWNED buffer */
	size_t len;
};

/* The endpoint's record of a peer context (core/kfab_peer.h). */
struct opx_conn {
	struct kfab_peer base;		/* key: LID | ctxt << 16 of the peer */
	int32_t wr_status;		/* RMA write being received: -errno */
	uint32_t peer_session;		/* 0: not known yet */
	struct kfab_hfi_peer *peer;	/* mapped on first need */
	bool no_sdma;			/* SDMA to it was refused: PIO */
	uint8_t epoch;			/* starts over: see opx_rel.c */
	/* the flow to the peer */
	uint32_t psn_next;		/* next PSN to assign */
	uint32_t psn_sent;		/* PSNs below were transmitted */
	uint32_t psn_acked;		/* PSNs below were acknowledged */
	uint32_t ping_acked;		/* psn_acked at the last tick */
	uint32_t lossy_until;		/* PSNs below went on a lossy wire */
	struct opx_slot *slots;		/* OPX_SLOTS, by PSN */
	struct kfab_list txq;		/* requests with packets to post */
	struct kfab_list deferred;	/* struct opx_deferred */
	/* the flow from the peer */
	uint32_t rx_next;		/* next PSN expected */
	uint32_t rx_acked;		/* the last ack_psn we sent */
	uint32_t rx_nacked;		/* rx_next when we last sent a NACK */
	bool nack_valid;
	struct kfab_list ooo;		/* struct opx_ooo by PSN */
	uint32_t n_ooo;
	/* the multi-packet eager message being received */
	struct opx_req *mp_req;
	struct opx_unexp *mp_ux;
	/* endpoint lists */
	struct kfab_list busy_link;	/* ep->busy: packets to post/send */
	struct kfab_list ack_link;	/* ep->acks: an ACK is owed */
};

static inline struct opx_conn *opx_conn_of(struct kfab_peer *peer)
{
	return kfab_container_of(peer, struct opx_conn, base);
}

static inline uint32_t opx_conn_key(const struct opx_conn *conn)
{
	return (uint32_t)conn->base.key;
}

struct opx_stats {
	uint64_t replays;
	uint64_t acks_sent;
	uint64_t nacks_sent;
	uint64_t pings_sent;
	uint64_t dups;
	uint64_t ooo;
	uint64_t drops_injected;
	uint64_t ring_full;
	uint64_t no_rx_ctx;		/* messages to a context we lack */
};

/*
 * The transmit side of an endpoint: the endpoint's own, or a transmit
 * context of a scalable endpoint (fi_tx_context()), with its own CQ,
 * counters, flags and queue depth. All contexts of an endpoint share its
 * HFI context, connections and request table.
 */
struct opx_txc {
	struct kfab_ep base;		/* FI_CLASS_TX_CTX */
	struct opx_ep *ep;
	bool open;			/* fi_tx_context() handed it out */
	uint64_t caps;
	/* cq NULL: closed, completions dropped */
	struct kfab_ep_side side;
	struct kfab_handle_quota quota;	/* of requests */
};

/*
 * The receive side: the endpoint's own or a receive context of a
 * scalable endpoint, which peers name with fi_rx_addr() (the rx index of
 * a packet's header). Messages for it match its own posted receives.
 */
struct opx_rxc {
	struct kfab_ep base;		/* FI_CLASS_RX_CTX */
	struct opx_ep *ep;
	bool open;
	uint64_t caps;
	/* cq NULL: closed, completions dropped */
	struct kfab_ep_side side;
	struct kfab_handle_quota quota;	/* of requests */
	struct kfab_rxq rxq;		/* posted and unexpected */
};

struct opx_ep {
	struct kfab_progress core;		/* progressed by the CQs */
	/* sides: its own contexts', a scalable endpoint's none */
	struct kfab_ep base;
	struct kfab_domain *domain;
	const struct opx_params *params;
	struct fi_info *info;
	struct kfab_hfi_dev *dev;
	uint64_t caps;
	uint32_t session;
	uint64_t name;			/* our FI_ADDR_OPX name */
	uint16_t jkey;
	uint16_t lid;
	uint16_t ctxt;
	bool sep;			/* a scalable endpoint */
	/* contexts: one each, or a scalable endpoint's */
	struct opx_txc *txc;
	struct opx_rxc *rxc;
	uint32_t ntxc, nrxc;
	uint32_t txc_cap, rxc_cap;	/* the most requests of one context */
	struct kfab_handles reqs;	/* struct opx_req */
	/* connections */
	struct kfab_peers conns;	/* struct opx_conn */
	struct kfab_list busy;
	struct kfab_list acks;
	unsigned int idle_polls;
	/* timers */
	uint64_t next_tick_ns;
	uint32_t tick_gate;
	uint32_t ticks;
	/* protocol thresholds */
	size_t eager_max;		/* payload of one eager packet */
	size_t mp_max;			/* largest multi-packet eager message */
	uint8_t *bounce;		/* gathers multi-iov payloads */
	struct kfab_pool bufs;		/* replay buffers, OPX_EAGER_MAX bytes */
	struct kfab_pool ooo_recs;	/* struct opx_ooo */
	struct kfab_pool deferred_recs;	/* struct opx_deferred */
	uint64_t rng;
	struct opx_stats stats;
};

static inline struct opx_ep *to_opx_ep(struct fid_ep *ep)
{
	return kfab_container_of(ep, struct opx_ep, base.fid);
}

/* The contexts a data call was made on: NULL when it has none. */
static inline struct opx_txc *opx_txc_of(struct fid_ep *fid)
{
	if (kfab_likely(fid->fid.fclass == FI_CLASS_EP))
		return to_opx_ep(fid)->txc;
	if (fid->fid.fclass == FI_CLASS_TX_CTX)
		return kfab_container_of(fid, struct opx_txc, base.fid);
	return NULL;
}

static inline struct opx_rxc *opx_rxc_of(struct fid_ep *fid)
{
	if (kfab_likely(fid->fid.fclass == FI_CLASS_EP))
		return to_opx_ep(fid)->rxc;
	if (fid->fid.fclass == FI_CLASS_RX_CTX)
		return kfab_container_of(fid, struct opx_rxc, base.fid);
	return NULL;
}

/* The endpoint of any of its fids, endpoint or context. */
static inline struct opx_ep *opx_ep_of(struct fid_ep *fid)
{
	if (fid->fid.fclass == FI_CLASS_TX_CTX)
		return opx_txc_of(fid)->ep;
	if (fid->fid.fclass == FI_CLASS_RX_CTX)
		return opx_rxc_of(fid)->ep;
	return to_opx_ep(fid);
}

/* The iovec of a one-buffer call. */
#define OPX_IOV1(name, b, l) struct iovec name = { (void *)(b), (l) }

static inline void opx_ep_unlock(struct opx_ep *ep)
{
	kfab_unlock(&ep->domain->lock);
}

/* Data calls on the fid of a scalable endpoint itself, or the wrong side. */
int opx_no_ctx(struct fid_ep *fid, bool tx);

/*
 * A data call on a context of @ep enabled at *@on: the domain lock
 * (elided under FI_THREAD_DOMAIN); -FI_EOPBADSTATE before the context and
 * its endpoint are both enabled.
 */
static inline int opx_ctx_lock(struct opx_ep *ep, const bool *on)
{
	kfab_lock(&ep->domain->lock);
	if (kfab_likely(*on && ep->base.enabled))
		return 0;
	kfab_unlock(&ep->domain->lock);
	return -FI_EOPBADSTATE;
}

/*
 * A data call on @fid: its transmit (receive) context, locked
 * (opx_ctx_lock()); NULL with *@err the refusal (opx_no_ctx(), or
 * -FI_EOPBADSTATE).
 */
static inline struct opx_txc *opx_txc_enter(struct fid_ep *fid,
					    ssize_t *err)
{
	struct opx_txc *txc = opx_txc_of(fid);

	*err = txc ? opx_ctx_lock(txc->ep, &txc->side.enabled) :
		     opx_no_ctx(fid, true);
	return kfab_likely(!*err) ? txc : NULL;
}

static inline struct opx_rxc *opx_rxc_enter(struct fid_ep *fid,
					    ssize_t *err)
{
	struct opx_rxc *rxc = opx_rxc_of(fid);

	*err = rxc ? opx_ctx_lock(rxc->ep, &rxc->side.enabled) :
		     opx_no_ctx(fid, false);
	return kfab_likely(!*err) ? rxc : NULL;
}

/* The receive context a packet names, NULL when we have no such one. */
static inline struct opx_rxc *opx_rxc_at(struct opx_ep *ep, uint8_t rx)
{
	return kfab_likely(rx < ep->nrxc) ? &ep->rxc[rx] : NULL;
}

static inline void opx_cntr_tx(struct opx_txc *txc, int err)
{
	kfab_cntr_add(txc->side.cntr, err);
}

/* opx_ep.c: the objects, shared by opx_sep.c */
/* A context's caps, flags and queue size: @attr's, else the endpoint's. */
void opx_txc_setup(struct opx_txc *txc, const struct fi_tx_attr *attr);
void opx_rxc_setup(struct opx_rxc *rxc, const struct fi_rx_attr *attr);
/*
 * The kfab_ep of @ep's endpoint (@ops NULL: the endpoint's close) or
 * context of class @fclass, with sides @tx and @rx.
 */
void opx_fid_init(struct opx_ep *ep, struct kfab_ep *base, size_t fclass,
		  struct kfab_ep_side *tx, struct kfab_ep_side *rx,
		  struct kfab_ep_ops *ops, void *context);

/*
 * opx_sep.c: fi_tx_context() (@tx) or fi_rx_context() (the kfab_ep_ops
 * ctx_open hook; -FI_ENOSYS but on a SEP)
 */
int opx_sep_ctx_open(struct fid_ep *sep, bool tx, int index,
		     const struct fi_tx_attr *txa,
		     const struct fi_rx_attr *rxa, struct fid_ep **out,
		     void *context);

/* opx_ep.c: requests, counted against their context's queue size */
struct opx_req *opx_req_tx(struct opx_txc *txc);
struct opx_req *opx_req_rx(struct opx_rxc *rxc);
/* A request the provider makes for itself, not counted against sizes. */
struct opx_req *opx_req_get_internal(struct opx_ep *ep,
				     enum opx_req_kind kind);
void opx_req_put(struct opx_ep *ep, struct opx_req *req);

/* The live request of @handle of @kind, or NULL. */
static inline struct opx_req *opx_req_lookup(struct opx_ep *ep,
					     uint32_t handle,
					     enum opx_req_kind kind)
{
	struct kfab_handle *h = kfab_handle_lookup(&ep->reqs, handle,
						   (uint8_t)kind);

	return h ? kfab_container_of(h, struct opx_req, h) : NULL;
}

static inline uint32_t opx_req_handle(const struct opx_req *req)
{
	return kfab_handle_of(&req->h, OPX_REQ_IDX_BITS);
}

/* Request @i of the endpoint's table, in use or not. */
static inline struct opx_req *opx_req_at(struct opx_ep *ep, uint32_t i)
{
	return kfab_handle_at(&ep->reqs, i);
}

/* opx_tx.c */
ssize_t opx_send(struct opx_txc *txc, const struct iovec *iov, size_t count,
		 fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
		 uint64_t flags);
void opx_tx_on_cts(struct opx_ep *ep, struct opx_conn *conn,
		   const struct opx_hdr *hdr);
void opx_tx_complete(struct opx_ep *ep, struct opx_req *req);
/* Replay buffers of one eager packet's payload; NULL: out of memory. */
static inline void *opx_buf_get(struct opx_ep *ep)
{
	return kfab_pool_get(&ep->bufs);
}

static inline void opx_buf_put(struct opx_ep *ep, void *buf)
{
	kfab_pool_put(&ep->bufs, buf);
}
/* Post packets of queued requests and transmit what is posted. */
void opx_conn_push(struct opx_ep *ep, struct opx_conn *conn);

/* SDMA into the peer's @tid (0: none) or DATA packets; xfer, rreq set */
void opx_tx_rzv_send(struct opx_ep *ep, struct opx_conn *conn,
		     struct opx_req *req, uint32_t tid);
/*
 * Starts @req (a send, or an RMA or atomic operation whose fields are set)
 * on @conn: posts what fits, queues the rest behind earlier requests.
 */
void opx_tx_start(struct opx_ep *ep, struct opx_conn *conn,
		  struct opx_req *req);
static inline size_t opx_eager_max(const struct opx_conn *conn)
{
	uint32_t es = conn->peer->ring.eager_size;

	return es < OPX_EAGER_MAX ? es : OPX_EAGER_MAX;
}

/* opx_rma.c */
/* The rma hook of struct kfab_ep_ops (kfab_prov.h). */
ssize_t opx_rma(struct fid_ep *fid, bool read, const struct iovec *iov,
		size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		uint64_t data, void *context, uint64_t flags);
extern struct kfab_atomic_ops opx_atomic_ops;
/* The target side of WRITE, WRITE_RTS, READ, ATOMIC; RMA_RESP. */
void opx_rma_deliver(struct opx_ep *ep, struct opx_rxc *rxc,
		     struct opx_conn *conn,
		     const struct opx_hdr *hdr, const uint8_t *payload,
		     uint32_t len);
/* Completions: of an initiator's request, of a target's rendezvous write. */
void opx_rma_complete(struct opx_ep *ep, struct opx_req *req);
void opx_rma_target_done(struct opx_ep *ep, struct opx_req *req);

/* opx_rx.c */
ssize_t opx_recv(struct opx_rxc *rxc, const struct iovec *iov, size_t count,
		 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
		 uint64_t flags);
void opx_rx_deliver(struct opx_ep *ep, struct opx_conn *conn,
		    const struct opx_hdr *hdr, const uint8_t *payload,
		    uint32_t len);
/* The hooks of a receive context's queue. */
extern const struct kfab_rxq_ops opx_rxq_ops;
void opx_rx_fail_conn(struct opx_ep *ep, struct opx_conn *conn, int err);
void opx_rx_complete(struct opx_ep *ep, struct opx_req *req);
/*
 * The receive side of a rendezvous into @req (rxr.msg_len, iov, rxr.len,
 * conn set): a TID of its buffer when @rts_flags has OPX_F_SDMA, expected
 * receive is on and the buffer is one range; CTS to the sender's @sreq.
 */
void opx_rzv_start(struct opx_ep *ep, struct opx_conn *conn,
		   struct opx_req *req, uint32_t sreq, uint32_t rts_flags);
/* The fi_addr of @conn's peer for FI_SOURCE, else FI_ADDR_NOTAVAIL. */
fi_addr_t opx_rx_src(const struct opx_rxc *rxc, const struct opx_conn *conn);

/* opx_rel.c */
void opx_conns_init(struct opx_ep *ep);
/* A connection of the AV path that does not know its peer's session. */
void opx_conn_named(struct opx_ep *ep, struct opx_conn *conn,
		    fi_addr_t addr);

/*
 * The connection to @addr's peer and the receive context it names; NULL
 * with *@err -FI_EINVAL (not in the AV) or -FI_ENOMEM, logged as @what's.
 */
static kfab_always_inline struct opx_conn *
opx_conn_resolve(struct opx_ep *ep, fi_addr_t addr, const char *what,
		 uint8_t *rx, int *err)
{
	struct kfab_peer *peer;
	struct opx_conn *conn;

	peer = kfab_peers_at(&ep->conns, ep->base.av, addr, what, err);
	if (kfab_unlikely(!peer))
		return NULL;
	conn = opx_conn_of(peer);
	if (kfab_unlikely(!conn->peer_session))
		opx_conn_named(ep, conn, addr);
	*rx = (uint8_t)kfab_av_rx_index(ep->base.av, addr);
	return conn;
}

/*
 * Maps the peer's context on first need: 0 or -FI_E* (logged), also
 * -FI_ENETDOWN while our unit or the peer's is Down.
 */
int opx_conn_map(struct opx_ep *ep, struct opx_conn *conn);
/* Puts @conn on the endpoint's list of connections with work to push. */
void opx_conn_busy(struct opx_ep *ep, struct opx_conn *conn);
/* Free slots for a packet; @ctl may use the reserve. */
static inline bool opx_conn_has_slot(const struct opx_conn *conn, bool ctl)
{
	uint32_t used = conn->psn_next - conn->psn_acked;

	return used < (ctl ? OPX_SLOTS : OPX_SLOTS - OPX_SLOTS_CTL);
}
struct opx_slot *opx_slot_new(struct opx_ep *ep, struct opx_conn *conn,
			      uint8_t op, uint8_t flags);
int opx_post_ctl(struct opx_ep *ep, struct opx_conn *conn,
		 const struct opx_hdr *hdr, uint16_t hdrlen,
		 struct opx_req *req);
/*
 * A control packet with @len bytes of payload in @buf (from opx_buf_get(),
 * now the slot's), inline when it fits; 0 or -FI_ENOMEM (@buf freed).
 */
int opx_post_reply(struct opx_ep *ep, struct opx_conn *conn,
		   struct opx_hdr *hdr, void *buf, size_t len);
void opx_conn_xmit(struct opx_ep *ep, struct opx_conn *conn);
/*
 * Transmits slot @s (the next PSN to send) with @payload straight from
 * the caller's memory, keeping no copy for replay: only while the wire
 * loses nothing (the peer's unit drops nothing, and every packet sent
 * while it did is acknowledged, so no hole can make the peer ask for this
 * one again). 0 when it is in the peer's queue; -EPERM (the wire may lose
 * it) or -EAGAIN (queue full): keep a copy and send it the usual way;
 * -ECONNRESET.
 */
int opx_xmit_direct(struct opx_ep *ep, struct opx_conn *conn,
		    struct opx_slot *s, const void *payload, size_t len);

/* Whether our unit or the peer's is Down: its packets cannot go. */
static inline bool opx_link_down(const struct opx_ep *ep,
				 const struct opx_conn *conn)
{
	return atomic_load_explicit((_Atomic __u32 *)&ep->dev->status->state,
				    memory_order_relaxed) ==
	       KFAB_HFI_STATE_DOWN ||
	       atomic_load_explicit((_Atomic __u32 *)
				    &conn->peer->status->state,
				    memory_order_relaxed) ==
	       KFAB_HFI_STATE_DOWN;
}

static inline uint32_t opx_drop_ppm(const struct opx_conn *conn)
{
	return atomic_load_explicit((_Atomic __u32 *)
				    &conn->peer->status->drop_ppm,
				    memory_order_relaxed);
}
void opx_rel_recv(struct opx_ep *ep, const struct kfab_hfi_ring_entry *ent);
void opx_rel_tick(struct opx_ep *ep);
void opx_rel_flush_acks(struct opx_ep *ep);
void opx_conn_fail(struct opx_ep *ep, struct opx_conn *conn, int err);
void opx_hdr_init(const struct opx_ep *ep, const struct opx_conn *conn,
		  struct opx_hdr *hdr, uint8_t op, uint8_t flags);

#endif /* KFAB_ULIB_OPX_H */
