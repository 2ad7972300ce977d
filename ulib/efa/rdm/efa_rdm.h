/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: kfab_efa's FI_EP_RDM endpoint, fi_efa(7)'s reliable datagram
 * protocol over one SRD QP of the domain's device.
 *
 *   efa_rdm_ep.c    the endpoint object, options, progress
 *   efa_rdm_peer.c  peers: the table, handshake, posting packets, RNR
 *                   retry and backoff, queued control packets
 *   efa_rdm_tx.c    sends: protocol choice, the sender's side of each
 *   efa_rdm_rx.c    receives: packet dispatch, the reorder window,
 *                   matching, the receiver's side of each protocol
 *   efa_rdm_rma.c   RMA and atomics, by device RDMA or emulated
 *   efa_rdm_zcpy.c  zero-copy receive: receives posted as ring slots
 *
 * Wire format. A packet is the ring entry's 32 header bytes (struct
 * efa_rdm_hdr) and a payload of at most the domain's max_payload bytes;
 * some types begin the payload with an extension (struct efa_rdm_ext_*).
 * Both ends are processes of one host: little-endian, no conversion.
 *
 * SRD is reliable and unordered. Requests that start a message (the RTM
 * types) carry a per-peer message id; the receiver delivers them in id
 * order through a window of FI_EFA_RECVWIN_SIZE ids, holding early ones.
 * Every other packet names the operation it belongs to (a handle, or the
 * message id for the later segments of a medium or runting message) and
 * needs no order.
 *
 *   protocol   when (message of len bytes)             packets
 *   eager      len <= max_payload                      EAGER_RTM
 *   medium     len <= INTER_MAX_MEDIUM_MESSAGE_SIZE    MEDIUM_RTM, SEG...
 *   longread   len >= INTER_MIN_READ_MESSAGE_SIZE,     LONGREAD_RTM; the
 *              the peer reads (handshake), RUNT_SIZE 0 receiver reads, EOR
 *   runtread   the same with RUNT_SIZE > 0             RUNTREAD_RTM, SEG...
 *                                                      for the runt; EOR
 *   longcts    otherwise                               LONGCTS_RTM, CTS,
 *                                                      DATA..., CTS, ...
 *
 * A receipt (RECEIPT) answers a message sent with FI_DELIVERY_COMPLETE
 * once it completed at the receiver. Each end sends a HANDSHAKE to a peer
 * before its first other packet; until the peer's handshake came, only
 * eager, medium and longcts are used, and RMA waits.
 */
#ifndef KFAB_ULIB_EFA_RDM_H
#define KFAB_ULIB_EFA_RDM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "efa/efa.h"
#include "efa/fi_ext_kfab_efa.h"
#include "core/kfab_handle.h"
#include "core/kfab_peer.h"
#include "core/kfab_pool.h"
#include "core/kfab_rxq.h"
#include "core/kfab_tagm.h"

/* ------------------------------------------------------------------ */
/* wire */

enum efa_rdm_pkt_type {
	EFA_PKT_HANDSHAKE = 1,	/* data: EFA_FEAT_* */
	EFA_PKT_EAGER_RTM,	/* ordered; the whole message */
	EFA_PKT_MEDIUM_RTM,	/* ordered; ext medium, bytes from 0 */
	EFA_PKT_MEDIUM_SEG,	/* msg_id's bytes at tag, data: msg_len */
	EFA_PKT_LONGCTS_RTM,	/* ordered; ext long, bytes from 0 */
	EFA_PKT_LONGREAD_RTM,	/* ordered; ext read: the sender's regions */
	EFA_PKT_RUNTREAD_RTM,	/* ordered; ext read, runt bytes from 0 */
	EFA_PKT_RUNT_SEG,	/* msg_id's runt bytes at tag, data: msg_len */
	EFA_PKT_CTS,		/* id: sender's handle, tag: receiver's,
				 * data: bytes the sender may have sent */
	EFA_PKT_DATA,		/* id: receiver's handle, tag: offset */
	EFA_PKT_EOR,		/* id: sender's handle: read done */
	EFA_PKT_RECEIPT,	/* id: sender's handle: delivered */
	EFA_PKT_REJECT,		/* id: sender's handle, msg_id: dropped */
	EFA_PKT_EAGER_RTW,	/* ext rma; the bytes */
	EFA_PKT_LONGCTS_RTW,	/* ext rma; answered by CTS */
	EFA_PKT_RTR,		/* ext rma; answered by READRSP or RMA_RESP */
	EFA_PKT_READRSP,	/* id: reader's handle, tag: offset */
	EFA_PKT_RTA,		/* ext atomic; operands [, compare values] */
	EFA_PKT_RMA_RESP,	/* id: initiator's handle, data: -errno;
				 * fetched values */
	EFA_PKT_TYPE_MAX,
};

#define EFA_F_TAGGED	0x01	/* RTM: a tagged message */
#define EFA_F_CQ_DATA	0x02	/* data: remote CQ data */
#define EFA_F_RECEIPT	0x04	/* RTM: answer with RECEIPT on completion */

/* Handshake features: what the sender of the handshake does. */
#define EFA_FEAT_RDMA_READ	0x1ULL	/* it reads its peers' regions */
#define EFA_FEAT_RDMA_WRITE	0x2ULL	/* it writes their regions */
#define EFA_FEAT_RECEIPT	0x4ULL	/* it answers EFA_F_RECEIPT */

struct efa_rdm_hdr {
	uint8_t type;
	uint8_t flags;		/* EFA_F_* */
	uint16_t rsvd;
	uint32_t qkey;		/* the sending QP's: lets the receiver reply */
	uint32_t msg_id;	/* RTM, SEG: the message; REJECT */
	uint32_t id;		/* a handle (see the types) */
	uint64_t tag;
	uint64_t data;		/* RTM: CQ data */
};

_Static_assert(sizeof(struct efa_rdm_hdr) == KFAB_EFA_RX_HDR_BYTES,
	       "the header is the ring entry's");

/* MEDIUM_RTM, LONGCTS_RTM: the message length (id: sender's handle). */
struct efa_rdm_ext_len {
	uint64_t msg_len;
};

/* A region of the sender a reader reads. */
struct efa_rdm_reg {
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t pad;
};

/* LONGREAD_RTM, RUNTREAD_RTM: length, runt bytes sent, the regions. */
struct efa_rdm_ext_read {
	uint64_t msg_len;
	uint64_t runt_len;
	uint32_t nregs;
	uint32_t pad;
	struct efa_rdm_reg regs[];
};

/* RTW, RTR, RTA: the target region; id: the initiator's handle. */
struct efa_rdm_ext_rma {
	uint64_t addr;
	uint64_t key;
	uint64_t len;		/* bytes (RTA: of the operands) */
	uint8_t datatype;	/* RTA */
	uint8_t op;
	uint8_t kind;		/* RTA: KFAB_ATOMIC_* */
	uint8_t pad;
	uint32_t count;		/* RTA: elements */
};

/* ------------------------------------------------------------------ */
/* limits */

/* Ring entries handled per progress call. */
#define EFA_RDM_POLL_BUDGET	64
/* Bytes of operands (and compare values) of one atomic. */
#define EFA_RDM_ATOMIC_MAX	4096
/* Buffers per slab of an endpoint's pool (inject copies, operands). */
#define EFA_RDM_BUF_SLAB	16
/* Operations the provider makes for itself (multi-recv slices, reads). */
#define EFA_RDM_OPE_INTERNAL	1024
/* The longest sleep while a peer holds a packet back (reorder_ppm). */
#define EFA_RDM_HELD_USEC	1000
/* libfabric efa's first RNR backoff when FI_EFA_TIMEOUT_INTERVAL is 0. */
#define EFA_RDM_RNR_MIN_USEC	40
#define EFA_RDM_RNR_MAX_USEC	120
/* How often peers with operations pending are checked for liveness. */
#define EFA_RDM_LIVENESS_NS	200000000ULL
/* device rnr_retry meaning "forever" */
#define EFA_RDM_RNR_INFINITE	7

/* ------------------------------------------------------------------ */
/* objects */

struct efa_rdm_ep;

/*
 * A packet held: a control packet waiting for its peer, or early. From
 * the receive queue's pools (efa_rdm_pkt_get()), no allocation per packet.
 */
struct efa_rdm_pkt {
	struct kfab_list link;
	struct efa_rdm_hdr hdr;
	uint32_t len;
	uint8_t payload[];
};

/*
 * The endpoint's record of a remote QP (core/kfab_peer.h): base.key is
 * efa_qp_key(gid, qpn); base.err, once set, fails everything to it.
 */
struct efa_rdm_peer {
	struct kfab_peer base;
	struct kfab_efa_addr addr;	/* qkey from its packets or AV */
	struct kfab_efa_peer *dev_peer;	/* mapped on first send */
	bool hs_sent;
	bool hs_received;
	uint64_t features;		/* its EFA_FEAT_* once received */
	/* tx */
	uint32_t next_msg_id;
	struct kfab_list ctlq;		/* struct efa_rdm_pkt to post */
	struct kfab_list txq;		/* struct efa_rdm_ope with packets */
	uint64_t backoff_until_ns;	/* RNR: nothing goes before */
	uint32_t backoff_usec;		/* the last backoff, 0: none */
	bool busy;			/* on ep->busy */
	bool down;			/* the link was Down at the last check */
	struct kfab_list busy_link;
	/* rx */
	uint32_t rx_next;		/* the next message id to deliver */
	struct efa_rdm_pkt **win;	/* recvwin_size slots, by id */
	uint32_t nwin;			/* packets held in win */
	struct kfab_list early;		/* segments of messages not begun */
	struct kfab_list rx_active;	/* receives taking segments */
	struct kfab_list ux_active;	/* unexpected ones taking them */
	struct kfab_list rejected;	/* ids dropped past the window */
};

enum efa_rdm_ope_kind {
	EFA_OPE_FREE = KFAB_HANDLE_FREE,
	EFA_OPE_TX,			/* a send, RMA or atomic we start */
	EFA_OPE_RX,			/* a receive, or a target's RMA */
};

/* tx states */
enum efa_rdm_txs {
	EFA_TXS_SEND,			/* packets to post */
	EFA_TXS_WAIT,			/* waiting for CTS, EOR, RECEIPT, resp */
};

/* What a tx operation is. */
enum efa_rdm_op {
	EFA_OP_MSG,
	EFA_OP_WRITE,
	EFA_OP_READ,
	EFA_OP_ATOMIC,
	EFA_OP_READRSP,			/* target: the data of an RTR */
	EFA_OP_WRITE_RECV,		/* target: bytes of a LONGCTS_RTW */
};

/*
 * An operation: a send or receive of the application, or internal. A
 * receive's context, flags, capacity, error and message are in rxr; the
 * fields of the same names below are the others'.
 */
struct efa_rdm_ope {
	struct kfab_handle h;		/* kind: enum efa_rdm_ope_kind */
	struct kfab_rxr rxr;		/* rx: the receive (kfab_rxq.h) */
	struct kfab_list link;		/* peer->txq / rx_active */
	/* against tx_size / rx_size; NULL: internal */
	struct kfab_handle_quota *quota;
	uint8_t op;			/* enum efa_rdm_op */
	uint8_t type;			/* the RTM/RTW type (protocol) */
	uint8_t state;
	bool queued;			/* on peer->txq */
	bool comp;			/* a CQ entry is wanted */
	bool receipt_wanted;		/* tx: FI_DELIVERY_COMPLETE */
	bool rd_pending;		/* tx: the read RTM not posted yet */
	bool active;			/* rx: on peer->rx_active */
	void *context;
	uint64_t flags;			/* FI_* operation flags */
	struct efa_rdm_peer *peer;
	struct iovec iov[KFAB_IOV_LIMIT];
	void *desc[KFAB_IOV_LIMIT];
	uint32_t iov_count;
	size_t len;			/* tx: the message's */
	uint64_t tag;
	uint64_t data;
	uint32_t msg_id;
	int err;			/* FI_E* of the first failure */
	const char *why;		/* err_data of that failure */
	/* tx */
	size_t sent;			/* payload bytes posted */
	size_t allowed;			/* CTS: bytes the receiver takes */
	size_t runt;			/* runtread: bytes sent as packets */
	uint32_t rhandle;		/* the receiver's, from CTS */
	uint32_t waits;			/* answers still awaited */
	/* inject copy, atomic operands: an efa_rdm_buf_get() buffer */
	uint8_t *owned;
	struct efa_mr_ref mrs[KFAB_IOV_LIMIT];
	uint32_t nmrs;
	/* RMA / atomics, initiator and target */
	uint64_t rma_addr;
	uint64_t rma_key;
	uint8_t at_dt, at_op, at_kind;
	bool device;			/* RMA: by device RDMA, once handshaken */
	uint32_t at_count;
	struct iovec res_iov[KFAB_IOV_LIMIT];	/* fetch: results */
	uint32_t res_count;
	/* rx */
	size_t received;		/* bytes arrived (or read) */
	size_t cts_sent;		/* longcts: bytes allowed so far */
	uint32_t shandle;		/* the sender's handle */
	bool receipt;			/* the sender asked for RECEIPT */
	/* longread/runtread: the regions (tx: ours, rx: the sender's) */
	struct efa_rdm_ext_read *rd;
	bool rd_done;
};

/* A message that arrived before its receive was posted. */
struct efa_rdm_ux {
	struct kfab_rxq_ux ux;		/* bytes: all, or the runt (kfab_rxq.h) */
	struct kfab_list link;		/* peer->ux_active while receiving */
	uint8_t type;			/* its RTM type */
	uint32_t msg_id;
	uint32_t shandle;
	bool receipt;
	struct efa_rdm_ext_read *rd;	/* read protocols, from the rxq's pools */
};

struct efa_rdm_ep {
	struct kfab_progress core;		/* progressed by the CQs */
	struct kfab_ep base;
	struct kfab_domain *domain;
	const struct efa_params *params;
	struct kfab_efa_dev *dev;
	struct kfab_efa_qp *qp;
	struct efa_addr name;
	uint64_t caps;
	/* rx: no RMA counters (no FI_RMA_EVENT) */
	struct kfab_ep_side tx, rx;
	struct kfab_rxq rxq;		/* posted and unexpected */
	/* protocol */
	size_t max_payload;		/* bytes a packet carries */
	size_t inject_size;
	size_t medium_max;
	size_t read_min;		/* longread from this size */
	size_t rma_read_min;		/* device RMA from this size */
	uint32_t recvwin;		/* power of two */
	uint32_t rnr_retry;		/* FI_OPT_EFA_RNR_RETRY, 0..7 */
	bool rdma_read, rdma_write;	/* device RDMA used */
	bool use_device_rdma_set;	/* by FI_OPT_EFA_USE_DEVICE_RDMA */
	bool rnr_retry_set;		/* by FI_OPT_EFA_RNR_RETRY */
	struct kfab_handles opes;	/* struct efa_rdm_ope */
	struct kfab_handle_quota tx_quota, rx_quota;	/* tx/rx_size */
	/* peers */
	struct kfab_peers peers;	/* struct efa_rdm_peer */
	struct kfab_list busy;		/* peers with packets to post */
	bool held;			/* a peer holds a packet back */
	uint8_t *bounce;		/* max_payload + extension */
	struct kfab_pool bufs;		/* buf_size bytes: efa_rdm_buf_get() */
	size_t buf_size;
	uint32_t refill;		/* ring buffers consumed, not posted */
	/* zero-copy receive: the ring's slots are receives */
	bool zcpy;
	struct efa_rdm_ope **zslot;	/* by slot: the receive posted */
	struct kfab_list zwait;		/* receives waiting for a slot */
	uint8_t *zbounce;		/* mtu bytes */
	uint64_t rng;
	uint64_t next_check_ns;		/* efa_rdm_peers_check() */
	uint32_t check_gate;
	struct fi_kfab_efa_ep_stats stats;
};

static inline const struct kfab_provider *efa_rdm_kp(const struct efa_rdm_ep *ep)
{
	return ep->domain->kp;
}

/* ------------------------------------------------------------------ */
/* efa_rdm_ep.c */

int efa_rdm_open(struct kfab_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);

/* Operations: counted against tx_size / rx_size, or internal. */
struct efa_rdm_ope *efa_rdm_ope_tx(struct efa_rdm_ep *ep);
struct efa_rdm_ope *efa_rdm_ope_rx(struct efa_rdm_ep *ep);
struct efa_rdm_ope *efa_rdm_ope_internal(struct efa_rdm_ep *ep,
					 enum efa_rdm_ope_kind kind);
void efa_rdm_ope_put(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);

/* A handle: the operation's index and a generation against reuse. */
#define EFA_RDM_IDX_BITS	20
#define EFA_RDM_OPES_MAX	(1U << EFA_RDM_IDX_BITS)

/* The live operation of @handle of @kind, or NULL. */
static inline struct efa_rdm_ope *efa_rdm_ope_lookup(struct efa_rdm_ep *ep,
						     uint32_t handle,
						     uint8_t kind)
{
	struct kfab_handle *h = kfab_handle_lookup(&ep->opes, handle, kind);

	return h ? kfab_container_of(h, struct efa_rdm_ope, h) : NULL;
}

static inline uint32_t efa_rdm_handle(const struct efa_rdm_ope *ope)
{
	return kfab_handle_of(&ope->h, EFA_RDM_IDX_BITS);
}

/* Operation @i of the endpoint's table, in use or not. */
static inline struct efa_rdm_ope *efa_rdm_ope_at(struct efa_rdm_ep *ep,
						 uint32_t i)
{
	return kfab_handle_at(&ep->opes, i);
}

/*
 * A buffer of ep->buf_size bytes (inject copies, atomic operands), from
 * the endpoint's pool: no allocation per message once warm. NULL when
 * out of memory; put takes NULL too.
 */
static inline void *efa_rdm_buf_get(struct efa_rdm_ep *ep)
{
	return kfab_pool_get(&ep->bufs);
}

static inline void efa_rdm_buf_put(struct efa_rdm_ep *ep, void *buf)
{
	if (buf)
		kfab_pool_put(&ep->bufs, buf);
}

/*
 * The iovecs of tx @ope: with FI_INJECT a copy of @iov's @len bytes in a
 * buffer it owns, else @iov. -FI_ENOMEM, @ope put back, for no buffer.
 */
static inline int efa_rdm_ope_iov(struct efa_rdm_ep *ep,
				  struct efa_rdm_ope *ope,
				  const struct iovec *iov, size_t count,
				  size_t len, uint64_t flags)
{
	if (!(flags & FI_INJECT)) {
		memcpy(ope->iov, iov, count * sizeof(*iov));
		ope->iov_count = (uint32_t)count;
		return 0;
	}
	ope->owned = efa_rdm_buf_get(ep);
	if (!ope->owned) {
		efa_rdm_ope_put(ep, ope);
		return -FI_ENOMEM;
	}
	kfab_iov_to_buf(iov, count, 0, ope->owned, len);
	ope->iov[0].iov_base = ope->owned;
	ope->iov[0].iov_len = len;
	ope->iov_count = 1;
	return 0;
}

/* A held packet of @len payload bytes (len set), NULL: out of memory. */
static inline struct efa_rdm_pkt *efa_rdm_pkt_get(struct efa_rdm_ep *ep,
						  uint32_t len)
{
	struct efa_rdm_pkt *p = kfab_rxq_buf_get(&ep->rxq, sizeof(*p) + len);

	if (p)
		p->len = len;
	return p;
}

/* Back to the pools; NULL is nothing. */
static inline void efa_rdm_pkt_put(struct efa_rdm_ep *ep, struct efa_rdm_pkt *p)
{
	if (p)
		kfab_rxq_buf_put(&ep->rxq, p, sizeof(*p) + p->len);
}

/* ------------------------------------------------------------------ */
/* efa_rdm_peer.c */

static inline struct efa_rdm_peer *efa_rdm_peer_rec(struct kfab_peer *peer)
{
	return kfab_container_of(peer, struct efa_rdm_peer, base);
}

/* Before anything else of the endpoint is set up: allocates nothing. */
void efa_rdm_peers_init(struct efa_rdm_ep *ep);
/* efa_rdm_peer_from() of a packet from a peer not the last one seen. */
struct efa_rdm_peer *efa_rdm_peer_find(struct efa_rdm_ep *ep,
				       const struct kfab_efa_ring_entry *ent,
				       uint64_t key, uint32_t qkey);

/*
 * The peer of an arriving packet whose header names the sending QP's
 * @qkey, made on first contact; NULL: no memory (logged).
 */
static kfab_always_inline struct efa_rdm_peer *
efa_rdm_peer_from(struct efa_rdm_ep *ep, const struct kfab_efa_ring_entry *ent,
		  uint32_t qkey)
{
	uint64_t key = efa_qp_key(ent->src_gid, ent->src_qpn);
	struct kfab_peer *base = kfab_peers_last(&ep->peers, key);
	struct efa_rdm_peer *peer;

	if (kfab_unlikely(!base))
		return efa_rdm_peer_find(ep, ent, key, qkey);
	peer = efa_rdm_peer_rec(base);
	if (kfab_unlikely(peer->addr.qkey != qkey && !peer->dev_peer))
		peer->addr.qkey = qkey;
	return peer;
}

/* The peer of AV address @addr: NULL with *@err (logged as @what's). */
static kfab_always_inline struct efa_rdm_peer *
efa_rdm_peer_of(struct efa_rdm_ep *ep, fi_addr_t addr, int *err,
		const char *what)
{
	struct kfab_peer *base = kfab_peers_at(&ep->peers, ep->base.av, addr,
					       what, err);

	return base ? efa_rdm_peer_rec(base) : NULL;
}
/* Maps @peer's QP on first use: 0 or -FI_E* (base.err, logged once). */
int efa_rdm_peer_map(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer);
/* The fi_addr of @peer for FI_SOURCE, else FI_ADDR_NOTAVAIL. */
fi_addr_t efa_rdm_peer_src(const struct efa_rdm_ep *ep,
			   const struct efa_rdm_peer *peer);

/*
 * Posts one packet: @hdr (qkey filled in), @ext of @extlen bytes, then
 * @len bytes of @iov from @off; our handshake first if it never went.
 * 0 when it is in the peer's ring; -EAGAIN when the peer is backing off
 * or stayed not ready through the RNR retries (it backs off then);
 * another -errno when the peer is unreachable (base.err set, logged
 * once). Callers keep the peer's order: nothing is posted past its queue.
 */
int efa_rdm_post(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		 struct efa_rdm_hdr *hdr, const void *ext, size_t extlen,
		 const struct iovec *iov, size_t count, size_t off,
		 size_t len);
/*
 * Posts ope->iov's bytes [ope->sent, @end) to ope->peer in packets of at
 * most max_payload, each @hdr with its offset in the tag: 0, or
 * efa_rdm_post()'s error with ope->sent where to go on from.
 */
int efa_rdm_segments(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope,
		     const struct efa_rdm_hdr *hdr, size_t end);
/* A control packet: posted, or queued (a copy) behind the peer's others. */
void efa_rdm_post_ctl(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      struct efa_rdm_hdr *hdr, const void *payload,
		      size_t len);
/* Our handshake, once per peer, before anything else to it. */
void efa_rdm_handshake(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer);
/* Queues @ope's remaining packets behind the peer's others. */
void efa_rdm_txq_add(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
void efa_rdm_txq_del(struct efa_rdm_ope *ope);
/* Starts @ope: posts at once when its peer has nothing queued. */
void efa_rdm_tx_start(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* Posts what the busy peers have queued, as their backoffs allow. */
void efa_rdm_peers_push(struct efa_rdm_ep *ep);
/* Every EFA_RDM_LIVENESS_NS: peers whose QP is gone fail their operations. */
void efa_rdm_peers_check(struct efa_rdm_ep *ep);
/* Microseconds until a backing-off peer may be tried; -1: none. */
long efa_rdm_peers_next_usec(struct efa_rdm_ep *ep);
void efa_rdm_flush_held(struct efa_rdm_ep *ep);

/*
 * A tx operation of @op to AV address @dest for a call (@what, logged
 * with an error) of @context and @flags, ready to send; NULL with *@err
 * -FI_E*, -FI_EAGAIN when tx_size of them are in flight.
 */
static kfab_always_inline struct efa_rdm_ope *
efa_rdm_tx_ope(struct efa_rdm_ep *ep, fi_addr_t dest, const char *what,
	       uint8_t op, void *context, uint64_t flags, int *err)
{
	struct efa_rdm_peer *peer = efa_rdm_peer_of(ep, dest, err, what);
	struct efa_rdm_ope *ope;

	if (kfab_unlikely(!peer))
		return NULL;
	if (kfab_unlikely(peer->base.err)) {
		*err = peer->base.err;
		return NULL;
	}
	ope = efa_rdm_ope_tx(ep);
	if (kfab_unlikely(!ope)) {
		ep->stats.eagain++;
		efa_rdm_peers_push(ep);
		*err = -FI_EAGAIN;
		return NULL;
	}
	ope->op = op;
	ope->peer = peer;
	ope->state = EFA_TXS_SEND;
	ope->context = context;
	ope->flags = flags;
	ope->comp = kfab_tx_comp(flags, ep->tx.selective);
	return ope;
}

/* ------------------------------------------------------------------ */
/* efa_rdm_tx.c */

ssize_t efa_rdm_send(struct efa_rdm_ep *ep, const struct iovec *iov,
		     void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		     uint64_t data, void *context, uint64_t flags);
/*
 * Posts @ope's next packets (its protocol's): 0 when it has none left to
 * post now, -EAGAIN when the peer took no more (retry from the queue).
 */
int efa_rdm_tx_push(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* Completes (or fails, ope->err) a tx operation: CQ, counter, resources. */
void efa_rdm_tx_complete(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* Sender side of CTS, EOR, RECEIPT, REJECT. */
void efa_rdm_tx_recv(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		     const struct efa_rdm_hdr *hdr);
/* Fails every tx operation to @peer with @err, err_data @why. */
void efa_rdm_tx_fail_peer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  int err, const char *why);

/* ------------------------------------------------------------------ */
/* efa_rdm_rx.c */

ssize_t efa_rdm_recv(struct efa_rdm_ep *ep, const struct iovec *iov,
		     void **desc, size_t count, fi_addr_t src, uint64_t tag,
		     uint64_t ignore, void *context, uint64_t flags);
int efa_rdm_rx_cancel(struct efa_rdm_ep *ep, void *context);
/* One packet from the ring. */
void efa_rdm_rx_packet(struct efa_rdm_ep *ep,
		       const struct kfab_efa_ring_entry *ent);
/* The bytes of a CTS-flowed transfer (DATA), also of a LONGCTS_RTW. */
void efa_rdm_rx_data(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		     const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		     uint32_t len);
/*
 * Receives taking a message from @peer fail with @err, err_data @why;
 * those only posted for it too when it is gone (FI_ECONNRESET).
 */
void efa_rdm_rx_fail_peer(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
			  int err, const char *why);
/* Unexpected messages and receive state at close. */
void efa_rdm_rx_fini(struct efa_rdm_ep *ep);
/* Sends the next CTS of a longcts receive (@ope: kind RX). */
void efa_rdm_rx_cts(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* Frees a receive operation and the region its buffer was posted with. */
void efa_rdm_rx_release(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* The hooks of the endpoint's receive queue. */
extern const struct kfab_rxq_ops efa_rdm_rxq_ops;

/* ------------------------------------------------------------------ */
/* efa_rdm_zcpy.c */

/* Whether @info allows zero-copy receive; if not, *@why says why. */
bool efa_rdm_zcpy_check(const struct efa_rdm_ep *ep,
			const struct fi_info *info, const char **why);
int efa_rdm_zcpy_init(struct efa_rdm_ep *ep);
void efa_rdm_zcpy_fini(struct efa_rdm_ep *ep);
/* A receive (no unexpected message for it) to the device. */
void efa_rdm_zcpy_recv(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* Posts waiting receives into the slots free now. */
void efa_rdm_zcpy_fill(struct efa_rdm_ep *ep);
/* One packet from the ring; its slot's receive matches it first. */
void efa_rdm_zcpy_packet(struct efa_rdm_ep *ep,
			 struct kfab_efa_ring_entry *ent);
/* fi_cancel: 0, -FI_ENOENT, or -FI_EOPNOTSUPP for one the device has. */
int efa_rdm_zcpy_cancel(struct efa_rdm_ep *ep, void *context);

/* ------------------------------------------------------------------ */
/* efa_rdm_rma.c */

/* The rma hook of struct kfab_ep_ops (kfab_prov.h). */
ssize_t efa_rdm_rma(struct fid_ep *fid, bool read, const struct iovec *iov,
		    size_t count, fi_addr_t peer, uint64_t addr, uint64_t key,
		    uint64_t data, void *context, uint64_t flags);
extern struct kfab_atomic_ops efa_rdm_atomic_ops;
/* The target side of RTW, RTR, RTA; the initiator's of READRSP, RMA_RESP. */
void efa_rdm_rma_recv(struct efa_rdm_ep *ep, struct efa_rdm_peer *peer,
		      const struct efa_rdm_hdr *hdr, const uint8_t *payload,
		      uint32_t len);
/* Packets of an RMA tx operation (efa_rdm_tx_push() for op != MSG). */
int efa_rdm_rma_push(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);
/* A LONGCTS_RTW's bytes all arrived at the target (@ope: WRITE_RECV). */
void efa_rdm_rma_write_done(struct efa_rdm_ep *ep, struct efa_rdm_ope *ope);

#endif /* KFAB_ULIB_EFA_RDM_H */
