// SPDX-License-Identifier: GPL-2.0
/*
 * mrail_seq_test: kfab_mrail's ordering engine (mrail/mrail_seq.h) and
 * wire header (mrail/mrail_proto.h): streams in order, every order of
 * short ones, long random ones with late messages and duplicates, all
 * also across the wrap of 2^32; duplicates of delivered and held seqs
 * dropped exactly; the window's bound refused and recovered from; flush;
 * the header, REQ and ACK encoded little endian and decoded back, and
 * what is malformed or of another version refused.
 *
 * The random streams print their seed; `mrail_seq_test SEED` reruns one.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mrail/mrail_proto.h"
#include "mrail/mrail_seq.h"
#include "tests/tap.h"

#define WRAP_FIRST	0xfffffff0u

static uint64_t rnd64(void)
{
	return (uint64_t)random() << 62 ^ (uint64_t)random() << 31 ^
	       (uint64_t)random();
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(rnd64() % n);
}

/* ------------------------------------------------------------------ */
/* a receiver: offers messages, delivers what the engine says, checks */

struct msg {
	uint32_t seq;
	bool dup;		/* a second copy: must never be delivered */
	bool seen;		/* the engine took it (delivered or held) */
	unsigned int done;	/* deliveries */
};

struct rx {
	struct mrail_seq s;
	uint32_t next;		/* the seq the next delivery must have */
	uint32_t delivered;
	uint32_t wrong;		/* deliveries out of order or of a dup */
	uint32_t holds, drops, eagain, other;
};

static void rx_deliver(struct rx *r, struct msg *m)
{
	if (m->seq != r->next || m->dup)
		r->wrong++;
	m->done++;
	r->next++;
	r->delivered++;
}

/* Offers @m and delivers what is in order; returns the verdict. */
static int rx_offer(struct rx *r, struct msg *m)
{
	int v = mrail_seq_accept(&r->s, m->seq, m);
	struct msg *d;

	switch (v) {
	case MRAIL_SEQ_DELIVER:
		m->seen = true;
		rx_deliver(r, m);
		while ((d = mrail_seq_drain(&r->s)))
			rx_deliver(r, d);
		break;
	case MRAIL_SEQ_HOLD:
		m->seen = true;
		r->holds++;
		break;
	case MRAIL_SEQ_DROP:
		r->drops++;
		break;
	case -FI_EAGAIN:
		r->eagain++;
		break;
	default:
		r->other++;
	}
	return v;
}

static int rx_init(struct rx *r, uint32_t window, uint32_t first)
{
	memset(r, 0, sizeof(*r));
	r->next = first;
	return mrail_seq_init(&r->s, window, first);
}

static struct msg *msgs_new(uint32_t n, uint32_t first)
{
	struct msg *m = calloc(n, sizeof(*m));

	for (uint32_t i = 0; m && i < n; i++)
		m[i].seq = first + i;
	return m;
}

/* Every message delivered once, in order, nothing left held. */
static bool rx_complete(struct rx *r, const struct msg *m, uint32_t n,
			uint32_t first)
{
	bool ok = r->delivered == n && !r->wrong && !r->other &&
		  !r->s.held && r->s.rx_expected == first + n;

	for (uint32_t i = 0; ok && i < n; i++)
		ok = m[i].done == 1;
	if (!ok)
		tap_diag("  delivered %u of %u, %u wrong, %u other, %u held, expected %#x",
			 r->delivered, n, r->wrong, r->other, r->s.held,
			 r->s.rx_expected);
	return ok;
}

/* ------------------------------------------------------------------ */
/* the engine */

static void test_in_order(uint32_t first)
{
	struct mrail_seq tx;
	struct msg *m;
	struct rx r;
	uint32_t n = 1000, bad = 0;

	if (!TAP_EQ(mrail_seq_init(&tx, 1, first), 0, "sender at %#x", first) ||
	    !TAP_EQ(rx_init(&r, 8, first), 0, "receiver at %#x", first))
		return;
	m = msgs_new(n, 0);
	for (uint32_t i = 0; i < n; i++) {
		m[i].seq = mrail_seq_next(&tx);
		if (rx_offer(&r, &m[i]) != MRAIL_SEQ_DELIVER)
			bad++;
	}
	TAP_EQ(bad, 0, "from %#x: each of %u messages in order delivered at once",
	       first, n);
	TAP_OK(rx_complete(&r, m, n, first) && !r.holds,
	       "from %#x: all delivered in order, none held", first);
	TAP_EQ(tx.tx_next, first + n, "from %#x: the sender's seq ran on",
	       first);
	free(m);
	mrail_seq_fini(&tx);
	mrail_seq_fini(&r.s);
}

/* The next permutation of @a in lexicographic order; false after the last. */
static bool next_perm(uint32_t *a, uint32_t n)
{
	uint32_t i = n - 1, j = n - 1, t;

	while (i > 0 && a[i - 1] >= a[i])
		i--;
	if (!i)
		return false;
	while (a[j] <= a[i - 1])
		j--;
	t = a[i - 1];
	a[i - 1] = a[j];
	a[j] = t;
	for (j = n - 1; i < j; i++, j--) {
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
	return true;
}

/* Every order of @n messages through a window of @n, from @first. */
static void test_permutations(uint32_t n, uint32_t first)
{
	uint32_t order[8], perms = 0, bad = 0;

	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	do {
		struct msg *m = msgs_new(n, first);
		struct rx r;

		perms++;
		if (rx_init(&r, n, first)) {
			bad++;
			free(m);
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
			rx_offer(&r, &m[order[i]]);
		if (!rx_complete(&r, m, n, first) || r.drops || r.eagain) {
			if (!bad)
				tap_diag("  first failing order starts %u %u",
					 order[0], order[n > 1]);
			bad++;
		}
		mrail_seq_fini(&r.s);
		free(m);
	} while (next_perm(order, n));
	TAP_EQ(bad, 0, "all %u orders of %u messages from %#x delivered in order once",
	       perms, n, first);
}

/*
 * @n messages from @first through a window of @window, arriving in
 * blocks of 1 to @span shuffled; one that is refused (too far ahead)
 * waits and is offered again after each delivery. About @dup_pct % of
 * the messages the engine took arrive a second time, later: each copy
 * must be dropped.
 */
static void test_random(uint32_t n, uint32_t first, uint32_t window,
			uint32_t span, unsigned int dup_pct)
{
	struct msg *m = msgs_new(n, first);
	struct msg *dups = calloc(n, sizeof(*dups));
	uint32_t *order = calloc(n, sizeof(*order));
	uint32_t *wait = calloc(n, sizeof(*wait));
	uint32_t ndup = 0, dup_off = 0, nwait = 0, dup_wrong = 0;
	struct rx r;

	if (!TAP_OK(m && dups && order && wait && !rx_init(&r, window, first),
		    "random: %u messages and a window of %u", n, window)) {
		free(m);
		free(dups);
		free(order);
		free(wait);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	for (uint32_t b = 0; b < n;) {
		uint32_t len = 1 + rnd_below(span);

		if (len > n - b)
			len = n - b;
		for (uint32_t i = len - 1; i > 0; i--) {
			uint32_t j = rnd_below(i + 1), t = order[b + i];

			order[b + i] = order[b + j];
			order[b + j] = t;
		}
		b += len;
	}

	for (uint32_t i = 0; i < n; i++) {
		struct msg *a = &m[order[i]];
		int v = rx_offer(&r, a);

		if (v == -FI_EAGAIN)
			wait[nwait++] = order[i];
		/* the refused, again after each delivery, until none moves */
		for (bool moved = v == MRAIL_SEQ_DELIVER; moved;) {
			moved = false;
			for (uint32_t k = 0; k < nwait; k++) {
				int w = rx_offer(&r, &m[wait[k]]);

				if (w == -FI_EAGAIN)
					continue;
				moved |= w == MRAIL_SEQ_DELIVER;
				wait[k--] = wait[--nwait];
			}
		}
		if (a->seen && rnd_below(100) < dup_pct) {
			dups[ndup] = *a;
			dups[ndup].dup = true;
			dups[ndup++].done = 0;
		}
		/* now and then, a copy made earlier arrives */
		if (dup_off < ndup && rnd_below(4) == 0) {
			uint32_t j = dup_off + rnd_below(ndup - dup_off);
			struct msg t = dups[j];

			dups[j] = dups[dup_off];
			dups[dup_off++] = t;
			if (rx_offer(&r, &dups[dup_off - 1]) != MRAIL_SEQ_DROP)
				dup_wrong++;
		}
	}
	while (dup_off < ndup)
		if (rx_offer(&r, &dups[dup_off++]) != MRAIL_SEQ_DROP)
			dup_wrong++;

	TAP_OK(rx_complete(&r, m, n, first) && !nwait,
	       "random: %u messages from %#x, window %u, blocks up to %u: in order, once (%u held, %u refused and offered again)",
	       n, first, window, span, r.holds, r.eagain);
	TAP_OK(!dup_wrong && r.drops == ndup,
	       "random: each of %u duplicates dropped (%u dropped, %u not)",
	       ndup, r.drops, dup_wrong);
	if (span > window)
		TAP_OK(r.eagain && r.holds,
		       "random: blocks wider than the window were refused and held");
	mrail_seq_fini(&r.s);
	free(m);
	free(dups);
	free(order);
	free(wait);
}

static void test_wrap(void)
{
	struct msg *m = msgs_new(32, WRAP_FIRST);
	struct msg late = { .seq = WRAP_FIRST + 5, .dup = true };
	uint32_t bad = 0;
	struct rx r;

	if (!TAP_EQ(rx_init(&r, 32, WRAP_FIRST), 0, "wrap: init"))
		return;
	/* 0x0000000f, 0xffffffff and 0x00000000 are ahead of 0xfffffff0 */
	TAP_EQ(rx_offer(&r, &m[31]), MRAIL_SEQ_HOLD, "wrap: %#x held",
	       m[31].seq);
	TAP_EQ(rx_offer(&r, &m[15]), MRAIL_SEQ_HOLD, "wrap: %#x held",
	       m[15].seq);
	TAP_EQ(rx_offer(&r, &m[16]), MRAIL_SEQ_HOLD, "wrap: %#x held",
	       m[16].seq);
	for (uint32_t i = 30; i > 0; i--)
		if (i != 15 && i != 16 &&
		    rx_offer(&r, &m[i]) != MRAIL_SEQ_HOLD)
			bad++;
	TAP_EQ(bad, 0, "wrap: the rest but the first held");
	TAP_EQ(rx_offer(&r, &m[0]), MRAIL_SEQ_DELIVER,
	       "wrap: %#x delivered", m[0].seq);
	TAP_OK(rx_complete(&r, m, 32, WRAP_FIRST),
	       "wrap: all 32 delivered in order across the wrap, to %#x",
	       r.s.rx_expected);
	TAP_EQ(rx_offer(&r, &late), MRAIL_SEQ_DROP,
	       "wrap: %#x again after the wrap: dropped, behind", late.seq);
	mrail_seq_fini(&r.s);
	free(m);
}

static void test_duplicates(void)
{
	struct msg *m = msgs_new(8, 100);
	struct msg c[8];
	struct msg far = { .dup = true };
	struct rx r;

	for (int i = 0; i < 8; i++) {
		c[i] = m[i];
		c[i].dup = true;
	}
	if (!TAP_EQ(rx_init(&r, 8, 100), 0, "dup: init"))
		return;
	TAP_EQ(rx_offer(&r, &m[2]), MRAIL_SEQ_HOLD, "dup: 102 held");
	TAP_EQ(rx_offer(&r, &c[2]), MRAIL_SEQ_DROP, "dup: 102 again: dropped");
	TAP_EQ(rx_offer(&r, &m[0]), MRAIL_SEQ_DELIVER, "dup: 100 delivered");
	TAP_EQ(rx_offer(&r, &c[0]), MRAIL_SEQ_DROP, "dup: 100 again: dropped");
	TAP_EQ(rx_offer(&r, &m[1]), MRAIL_SEQ_DELIVER,
	       "dup: 101 delivered, then 102 (the first copy)");
	TAP_EQ(r.next, 103, "dup: up to 102 delivered");
	TAP_EQ(rx_offer(&r, &c[1]), MRAIL_SEQ_DROP, "dup: 101 again: dropped");
	TAP_EQ(rx_offer(&r, &c[2]), MRAIL_SEQ_DROP,
	       "dup: 102 again once drained: dropped");

	/* a copy arriving between a DELIVER and its drain */
	TAP_EQ(mrail_seq_accept(&r.s, 104, &m[4]), MRAIL_SEQ_HOLD,
	       "dup: 104 held");
	TAP_EQ(mrail_seq_accept(&r.s, 103, &m[3]), MRAIL_SEQ_DELIVER,
	       "dup: 103 delivered, not yet drained");
	TAP_EQ(mrail_seq_accept(&r.s, 104, &c[4]), MRAIL_SEQ_DROP,
	       "dup: 104 again before the drain: dropped");
	TAP_OK(mrail_seq_drain(&r.s) == &m[4] && !mrail_seq_drain(&r.s),
	       "dup: the drain gives 104's first copy, then nothing");

	/* as far behind as a seq can be: 2^31 */
	far.seq = r.s.rx_expected - 0x80000000u;
	TAP_EQ(mrail_seq_accept(&r.s, far.seq, &far), MRAIL_SEQ_DROP,
	       "dup: 2^31 behind (%#x): dropped", far.seq);
	far.seq = r.s.rx_expected + 0x7fffffffu;
	TAP_EQ(mrail_seq_accept(&r.s, far.seq, &far), -FI_EAGAIN,
	       "dup: 2^31 - 1 ahead (%#x): beyond the window, not a duplicate",
	       far.seq);
	TAP_EQ(r.s.held, 0, "dup: nothing held");
	mrail_seq_fini(&r.s);
	free(m);
}

static void count_release(void *item, void *arg)
{
	(void)item;
	(*(uint32_t *)arg)++;
}

static void test_window(void)
{
	struct msg *m = msgs_new(16, 0);
	uint32_t released = 0;
	struct mrail_seq s;
	struct rx r;

	TAP_EQ(mrail_seq_init(&s, 0, 0), -FI_EINVAL, "window 0: refused");
	TAP_EQ(mrail_seq_init(&s, MRAIL_SEQ_WINDOW_MAX + 1, 0), -FI_EINVAL,
	       "window %u: refused", MRAIL_SEQ_WINDOW_MAX + 1);

	/* 5 is not a power of two: the ring is 8, the window still 5 */
	if (!TAP_EQ(rx_init(&r, 5, 0), 0, "window 5"))
		return;
	TAP_EQ(rx_offer(&r, &m[5]), -FI_EAGAIN, "window 5: 5 ahead refused");
	TAP_EQ(r.s.held, 0, "window 5: nothing kept of it");
	TAP_EQ(rx_offer(&r, &m[4]), MRAIL_SEQ_HOLD, "window 5: 4 ahead held");
	TAP_EQ(rx_offer(&r, &m[2]), MRAIL_SEQ_HOLD, "window 5: 2 ahead held");
	TAP_EQ(rx_offer(&r, &m[0]), MRAIL_SEQ_DELIVER, "window 5: 0 delivered");
	TAP_EQ(rx_offer(&r, &m[5]), MRAIL_SEQ_HOLD,
	       "window 5: 5 offered again once 0 is delivered: held");
	TAP_EQ(rx_offer(&r, &m[6]), -FI_EAGAIN, "window 5: 6 refused");
	TAP_EQ(rx_offer(&r, &m[1]), MRAIL_SEQ_DELIVER,
	       "window 5: 1 delivered, 2 drained");
	TAP_EQ(rx_offer(&r, &m[6]), MRAIL_SEQ_HOLD,
	       "window 5: 6 offered again: held");
	TAP_EQ(rx_offer(&r, &m[7]), MRAIL_SEQ_HOLD, "window 5: 7 held");
	TAP_EQ(rx_offer(&r, &m[8]), -FI_EAGAIN, "window 5: 8 refused");
	TAP_EQ(rx_offer(&r, &m[3]), MRAIL_SEQ_DELIVER,
	       "window 5: 3 delivered, 4 to 7 drained");
	TAP_EQ(rx_offer(&r, &m[8]), MRAIL_SEQ_DELIVER,
	       "window 5: 8 offered again: delivered");
	TAP_OK(rx_complete(&r, m, 9, 0), "window 5: 0 to 8 in order, once");
	mrail_seq_fini(&r.s);

	/* window 1: no reordering at all */
	if (!TAP_EQ(rx_init(&r, 1, 0), 0, "window 1"))
		return;
	TAP_EQ(rx_offer(&r, &m[1]), -FI_EAGAIN, "window 1: 1 ahead refused");
	TAP_EQ(rx_offer(&r, &m[0]), MRAIL_SEQ_DELIVER, "window 1: 0 delivered");
	TAP_EQ(rx_offer(&r, &m[1]), MRAIL_SEQ_DELIVER,
	       "window 1: 1 offered again: delivered");
	mrail_seq_fini(&r.s);

	if (!TAP_EQ(mrail_seq_init(&s, MRAIL_SEQ_WINDOW_MAX, WRAP_FIRST), 0,
		    "window %u", MRAIL_SEQ_WINDOW_MAX))
		return;
	TAP_EQ(mrail_seq_accept(&s, WRAP_FIRST + MRAIL_SEQ_WINDOW_MAX - 1,
				&m[0]), MRAIL_SEQ_HOLD,
	       "window max: the last seq in it held");
	TAP_EQ(mrail_seq_accept(&s, WRAP_FIRST + MRAIL_SEQ_WINDOW_MAX, &m[1]),
	       -FI_EAGAIN, "window max: the first beyond refused");
	TAP_EQ(mrail_seq_flush(&s, count_release, &released), 1,
	       "window max: flush releases the one held");
	TAP_EQ(released, 1, "window max: and releases it once");
	mrail_seq_fini(&s);
	free(m);
}

struct released {
	uint32_t n;
	uint32_t seq[16];
};

static void release_msg(void *item, void *arg)
{
	struct released *rel = arg;
	struct msg *m = item;

	if (rel->n < 16)
		rel->seq[rel->n] = m->seq;
	rel->n++;
	free(m);
}

static void test_flush(void)
{
	static const uint32_t ahead[] = { 1, 3, 7, 8, 15 };
	struct released rel = { 0 };
	struct mrail_seq s;
	uint32_t first = 0xfffffffau, bad = 0;
	struct msg *m;

	if (!TAP_EQ(mrail_seq_init(&s, 16, first), 0, "flush: init"))
		return;
	TAP_EQ(mrail_seq_flush(&s, release_msg, &rel), 0,
	       "flush: nothing held, nothing released");
	for (size_t i = 0; i < sizeof(ahead) / sizeof(ahead[0]); i++) {
		m = msgs_new(1, first + ahead[i]);
		if (mrail_seq_accept(&s, m->seq, m) != MRAIL_SEQ_HOLD) {
			bad++;
			free(m);
		}
	}
	TAP_EQ(bad, 0, "flush: 5 held across the wrap");
	TAP_EQ(mrail_seq_flush(&s, release_msg, &rel), 5, "flush: 5 released");
	for (size_t i = 0; i < 5; i++)
		if (rel.seq[i] != first + ahead[i])
			bad++;
	TAP_OK(rel.n == 5 && !bad, "flush: each once, in seq order");
	TAP_OK(!s.held && s.rx_expected == first,
	       "flush: nothing held, the expected seq unchanged");
	m = msgs_new(1, first + 1);
	TAP_OK(mrail_seq_accept(&s, first, m) == MRAIL_SEQ_DELIVER &&
	       !mrail_seq_drain(&s),
	       "flush: the next delivery drains nothing flushed");
	TAP_EQ(mrail_seq_accept(&s, first + 1, m), MRAIL_SEQ_DELIVER,
	       "flush: a flushed seq is taken again");
	free(m);
	mrail_seq_fini(&s);
}

/* ------------------------------------------------------------------ */
/* the wire format */

static void test_hdr(void)
{
	static const uint8_t image[MRAIL_HDR_SIZE] = {
		MRAIL_PROTO_VERSION, MRAIL_OP_TAGGED, MRAIL_PROTO_RNDV_REQ,
		MRAIL_F_CQ_DATA, 0x04, 0x03, 0x02, 0x01,
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,
		0x28, 0x27, 0x26, 0x25, 0x24, 0x23, 0x22, 0x21,
	};
	struct mrail_hdr h = {
		.version = MRAIL_PROTO_VERSION, .op = MRAIL_OP_TAGGED,
		.proto = MRAIL_PROTO_RNDV_REQ, .flags = MRAIL_F_CQ_DATA,
		.seq = 0x01020304, .tag = 0x1112131415161718ull,
		.cq_data = 0x2122232425262728ull,
	}, d;
	uint8_t buf[MRAIL_HDR_SIZE + 1];
	uint32_t bad = 0, n = 0;

	memset(buf, 0xa5, sizeof(buf));
	mrail_hdr_encode(buf, &h);
	TAP_OK(!memcmp(buf, image, MRAIL_HDR_SIZE) &&
	       buf[MRAIL_HDR_SIZE] == 0xa5,
	       "hdr: encoded little endian at the documented offsets, 24 bytes");

	for (uint8_t op = MRAIL_OP_MSG; op <= MRAIL_OP_TAGGED; op++)
		for (uint8_t p = MRAIL_PROTO_EAGER; p <= MRAIL_PROTO_RNDV_ACK;
		     p++)
			for (uint8_t f = 0; f <= MRAIL_F_ALL; f++) {
				h.op = op;
				h.proto = p;
				h.flags = f;
				h.seq = (uint32_t)rnd64();
				h.tag = rnd64();
				h.cq_data = rnd64();
				mrail_hdr_encode(buf, &h);
				memset(&d, 0, sizeof(d));
				if (mrail_hdr_decode(&d, buf, MRAIL_HDR_SIZE) ||
				    memcmp(&d, &h, sizeof(h)))
					bad++;
				n++;
			}
	TAP_EQ(bad, 0, "hdr: %u headers, every op, protocol and flag, decoded as encoded",
	       n);

	mrail_hdr_encode(buf, &h);
	buf[0] = 2;
	TAP_EQ(mrail_hdr_decode(&d, buf, MRAIL_HDR_SIZE), -EPROTO,
	       "hdr: version 2 (ofi_mrail's) refused");
	buf[0] = MRAIL_PROTO_VERSION + 1;
	TAP_EQ(mrail_hdr_decode(&d, buf, MRAIL_HDR_SIZE), -EPROTO,
	       "hdr: version %#x refused", MRAIL_PROTO_VERSION + 1);
	buf[0] = MRAIL_PROTO_VERSION;
	TAP_EQ(mrail_hdr_decode(&d, buf, MRAIL_HDR_SIZE - 1), -EBADMSG,
	       "hdr: 23 bytes refused");
	TAP_EQ(mrail_hdr_decode(&d, buf, 0), -EBADMSG, "hdr: 0 bytes refused");

	bad = 0;
	for (int i = 0; i < 5; i++) {
		static const uint8_t off[] = { 1, 1, 2, 2, 3 };
		static const uint8_t val[] = { 0, MRAIL_OP_TAGGED + 1, 0,
					       MRAIL_PROTO_RNDV_ACK + 1,
					       MRAIL_F_ALL + 1 };

		mrail_hdr_encode(buf, &h);
		buf[off[i]] = val[i];
		if (mrail_hdr_decode(&d, buf, MRAIL_HDR_SIZE) != -EBADMSG) {
			tap_diag("  byte %u = %u taken", off[i], val[i]);
			bad++;
		}
	}
	TAP_EQ(bad, 0, "hdr: an unknown op, protocol or flag refused");
}

static void test_rndv(void)
{
	struct mrail_rndv_req r, d;
	struct mrail_rndv_ack a = { .sreq = 0x0a0b0c0d, .status = -EIO }, e;
	uint8_t buf[MRAIL_RNDV_REQ_BASE + MRAIL_RNDV_RAILS_MAX *
		    MRAIL_STRIPE_SIZE + 1];
	uint32_t bad = 0;
	size_t size;

	for (unsigned int rails = 1; rails <= MRAIL_RNDV_RAILS_MAX; rails++) {
		memset(&r, 0, sizeof(r));
		r.len = rnd64();
		r.sreq = (uint32_t)rnd64();
		r.rails = (uint8_t)rails;
		for (unsigned int i = 0; i < rails; i++) {
			r.stripe[i].addr = rnd64();
			r.stripe[i].key_size = (uint8_t)rnd_below(MRAIL_RAW_KEY_MAX + 1);
			for (unsigned int k = 0; k < MRAIL_RAW_KEY_MAX; k++)
				r.stripe[i].key[k] = (uint8_t)rnd64();
		}
		memset(buf, 0xa5, sizeof(buf));
		mrail_rndv_req_encode(buf, &r);
		/* what lies beyond a key is not sent: it comes back zero */
		for (unsigned int i = 0; i < rails; i++)
			memset(r.stripe[i].key + r.stripe[i].key_size, 0,
			       MRAIL_RAW_KEY_MAX - r.stripe[i].key_size);
		size = mrail_rndv_req_size(rails);
		memset(&d, 0, sizeof(d));
		if (buf[size] != 0xa5 || mrail_rndv_req_decode(&d, buf, size) ||
		    memcmp(&d, &r, sizeof(r)))
			bad++;
	}
	TAP_EQ(bad, 0, "req: 1 to %u stripes, keys of 0 to %u bytes, decoded as encoded in 16 + 32 bytes a stripe",
	       MRAIL_RNDV_RAILS_MAX, MRAIL_RAW_KEY_MAX);

	memset(&r, 0, sizeof(r));
	r.len = 0x0102030405060708ull;
	r.sreq = 0x11121314;
	r.rails = 2;
	r.stripe[1].addr = 0x2122232425262728ull;
	r.stripe[1].key_size = 3;
	memcpy(r.stripe[1].key, "\x31\x32\x33", 3);
	mrail_rndv_req_encode(buf, &r);
	TAP_OK(!memcmp(buf, "\x08\x07\x06\x05\x04\x03\x02\x01"
		       "\x14\x13\x12\x11\x02\0\0\0", 16) &&
	       !memcmp(buf + 48, "\x28\x27\x26\x25\x24\x23\x22\x21\x03\0\0\0\0\0\0\0"
		       "\x31\x32\x33", 19),
	       "req: little endian at the documented offsets");
	size = mrail_rndv_req_size(2);
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size - 1), -EBADMSG,
	       "req: a byte short of its stripes refused");
	buf[12] = 0;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), -EBADMSG,
	       "req: no stripe refused");
	buf[12] = MRAIL_RNDV_RAILS_MAX + 1;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, sizeof(buf)), -EBADMSG,
	       "req: %u stripes refused", MRAIL_RNDV_RAILS_MAX + 1);
	buf[12] = 2;
	buf[15] = 1;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), -EBADMSG,
	       "req: a reserved byte set refused");
	buf[15] = 0;
	buf[48 + 8] = MRAIL_RAW_KEY_MAX + 1;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), -EBADMSG,
	       "req: a key of %u bytes refused", MRAIL_RAW_KEY_MAX + 1);
	buf[48 + 8] = 3;
	buf[48 + 9] = 1;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), -EBADMSG,
	       "req: a stripe's reserved byte set refused");
	buf[48 + 9] = 0;
	buf[48 + 16 + 3] = 1;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), -EBADMSG,
	       "req: a byte set beyond the key refused");
	buf[48 + 16 + 3] = 0;
	TAP_EQ(mrail_rndv_req_decode(&d, buf, size), 0,
	       "req: the same, mended, taken");

	mrail_rndv_ack_encode(buf, &a);
	TAP_OK(!memcmp(buf, "\x0d\x0c\x0b\x0a", 4) &&
	       mrail_rndv_ack_decode(&e, buf, MRAIL_RNDV_ACK_SIZE) == 0 &&
	       e.sreq == a.sreq && e.status == -EIO,
	       "ack: sreq and status -EIO decoded as encoded");
	TAP_EQ(mrail_rndv_ack_decode(&e, buf, MRAIL_RNDV_ACK_SIZE - 1),
	       -EBADMSG, "ack: 7 bytes refused");
	a.status = 5;
	mrail_rndv_ack_encode(buf, &a);
	TAP_EQ(mrail_rndv_ack_decode(&e, buf, MRAIL_RNDV_ACK_SIZE), -EBADMSG,
	       "ack: a positive status refused");
}

int main(int argc, char **argv)
{
	unsigned long seed = argc > 1 ? strtoul(argv[1], NULL, 0) :
			     (unsigned long)time(NULL) ^ (unsigned long)getpid();

	tap_start("mrail_seq_test");
	tap_diag("seed %lu (rerun: %s %lu)", seed, argv[0], seed);
	srandom((unsigned int)seed);

	test_in_order(0);
	test_in_order(WRAP_FIRST);
	for (uint32_t n = 1; n <= 6; n++) {
		test_permutations(n, 0);
		test_permutations(n, 0xffffffffu - n / 2);
	}
	test_random(200000, 0, 64, 64, 0);
	test_random(200000, WRAP_FIRST, 64, 64, 0);
	test_random(200000, 0, 64, 160, 5);
	test_random(200000, 0xffffff00u, 64, 160, 5);
	test_random(50000, WRAP_FIRST, 5, 12, 20);
	test_wrap();
	test_duplicates();
	test_window();
	test_flush();
	test_hdr();
	test_rndv();
	return tap_done();
}
