/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_mrail: the ordering engine of one peer (an AV entry). Messages to
 * a peer take several rails, so they arrive in any order; each carries
 * the seq its sender gave it (mrail_seq_next()), and the receiver hands
 * them to matching in seq order, each exactly once.
 *
 * On receipt, mrail_seq_accept() says what to do with a message:
 *   MRAIL_SEQ_DELIVER  it is the one expected: deliver it, then each item
 *                      mrail_seq_drain() returns, until NULL;
 *   MRAIL_SEQ_HOLD     it is ahead: the engine keeps the caller's item (an
 *                      opaque pointer, e.g. the rail's receive buffer) and
 *                      drain returns it in its turn;
 *   MRAIL_SEQ_DROP     a duplicate, of a message delivered or held: the
 *                      caller releases it. Failover reissues the
 *                      operations of a dead rail on another, so one seq
 *                      can arrive twice; it completes once.
 *   -FI_EAGAIN         more than the window ahead: nothing was kept; the
 *                      caller keeps the message and offers it again after
 *                      a delivery has moved the window on. Size the window
 *                      to what a sender may have in flight to one peer,
 *                      and this does not happen.
 *
 * Seqs are compared as serial numbers (RFC 1982): modulo 2^32, by their
 * difference as an int32_t, so a stream runs on across the wrap; a seq
 * behind the expected one (a difference below 0) was delivered.
 *
 * The held items sit in a ring of pointers indexed by seq, allocated at
 * init (window entries, rounded up to a power of two): accept, drain
 * and the sender's next are a few loads and stores, inline for the
 * receive path, and nothing is allocated per message. Not thread safe:
 * the caller's lock (the endpoint's) covers it.
 */
#ifndef KFAB_MRAIL_SEQ_H
#define KFAB_MRAIL_SEQ_H

#include <stdint.h>

#include <rdma/fi_errno.h>

/* The largest window: 8 MiB of ring per peer. */
#define MRAIL_SEQ_WINDOW_MAX	(1u << 20)

enum mrail_seq_verdict {
	MRAIL_SEQ_DELIVER,
	MRAIL_SEQ_HOLD,
	MRAIL_SEQ_DROP,
};

struct mrail_seq {
	uint32_t tx_next;	/* the seq of our next message to the peer */
	uint32_t rx_expected;	/* the peer's seq delivered next */
	uint32_t window;	/* seqs accepted: rx_expected + [0, window) */
	uint32_t mask;		/* ring entries - 1 */
	uint32_t held;		/* items in ring */
	void **ring;		/* by seq & mask; NULL: none */
};

/*
 * Both directions start at @first (the provider's 0); the receiver holds
 * up to @window - 1 messages ahead, @window 1 to MRAIL_SEQ_WINDOW_MAX.
 * 0, -FI_EINVAL (logged) or -FI_ENOMEM.
 */
int mrail_seq_init(struct mrail_seq *s, uint32_t window, uint32_t first);
/* Frees the ring: flush the held items first. */
void mrail_seq_fini(struct mrail_seq *s);

/*
 * Calls @release(item, @arg) for every held item, in seq order, and
 * returns how many: the peer is gone, nothing it sent is delivered. The
 * seqs expected are unchanged.
 */
uint32_t mrail_seq_flush(struct mrail_seq *s,
			 void (*release)(void *item, void *arg), void *arg);

/* The seq of the next message to the peer; a reissue keeps its first. */
static inline uint32_t mrail_seq_next(struct mrail_seq *s)
{
	return s->tx_next++;
}

/*
 * What to do with the message @seq from the peer: enum mrail_seq_verdict,
 * or -FI_EAGAIN (above). @item, not NULL, is kept on MRAIL_SEQ_HOLD only.
 */
static inline int mrail_seq_accept(struct mrail_seq *s, uint32_t seq,
				   void *item)
{
	int32_t ahead = (int32_t)(seq - s->rx_expected);
	void **slot;

	if (ahead < 0)
		return MRAIL_SEQ_DROP;
	if ((uint32_t)ahead >= s->window)
		return -FI_EAGAIN;
	slot = &s->ring[seq & s->mask];
	/* ahead == 0 is held too between a DELIVER and its drain */
	if (s->held && *slot)
		return MRAIL_SEQ_DROP;
	if (ahead == 0) {
		s->rx_expected++;
		return MRAIL_SEQ_DELIVER;
	}
	*slot = item;
	s->held++;
	return MRAIL_SEQ_HOLD;
}

/* The held item whose turn it is now (its seq delivered), or NULL. */
static inline void *mrail_seq_drain(struct mrail_seq *s)
{
	void **slot;
	void *item;

	if (!s->held)
		return NULL;
	slot = &s->ring[s->rx_expected & s->mask];
	item = *slot;
	if (!item)
		return NULL;
	*slot = NULL;
	s->held--;
	s->rx_expected++;
	return item;
}

#endif /* KFAB_MRAIL_SEQ_H */
