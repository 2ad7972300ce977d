// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: tests of the SRD receive ring protocol (ulib/dev/efa_ring.c) over
 * anonymous shared memory laid out as the kernel's: posting, RNR (real and
 * injected), entry contents, order, wrap of the tickets at 2^32, the
 * armed/notify handshake, buffers posted with slots. Many producers:
 * efa_ring_mp_test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "efa_ring_mem.h"

/* ------------------------------------------------------------------ */

static void test_init(void)
{
	struct kfab_efa_ring r;
	struct mem m;

	mem_ring(&m, &r, 64, 8192);
	TAP_OK(r.head == 0 && r.entries == 64 && r.mtu == 8192 && !r.status,
	       "init: 64 entries of 8192 bytes, head 0, owner without status");
	TAP_EQ(kfab_efa_ring_init(&r, m.ctrl, m.ring, m.bufs, 0, 8192, NULL),
	       -EINVAL, "init: 0 entries");
	TAP_EQ(kfab_efa_ring_init(&r, m.ctrl, m.ring, m.bufs, 63, 8192, NULL),
	       -EINVAL, "init: 63 entries");
	TAP_EQ(kfab_efa_ring_init(&r, m.ctrl, m.ring, m.bufs, 96, 8192, NULL),
	       -EINVAL, "init: 96 entries");
	TAP_EQ(kfab_efa_ring_init(&r, m.ctrl, m.ring, m.bufs, 64, 0, NULL),
	       -EINVAL, "init: mtu 0");
	TAP_EQ(kfab_efa_ring_init(&r, m.ctrl, m.ring, m.bufs, 1, 1,
				  m.status),
	       0, "init: 1 entry of 1 byte, with a status page");
	TAP_OK(r.status == m.status, "init: status page kept");
	TAP_EQ(kfab_efa_ring_posted(&r), 0, "init: nothing posted");
	mem_free(&m);
}

static void test_rnr(void)
{
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	uint8_t pl[100];
	bool eagain = true;
	struct mem m;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, true);
	memset(m.bufs, 0x5a, (size_t)64 * 8192);
	xp_fill(pl, sizeof(pl), 1);
	TAP_EQ(kfab_efa_ring_send(&pr, "hdr", 3, 7, gid0, 5, pl, sizeof(pl), NULL, NULL),
	       -EAGAIN, "rnr: send with nothing posted");
	TAP_EQ(m.ctrl->rnrs, 1, "rnr: counted in rnrs");
	for (int i = 0; i < 9; i++)
		eagain &= kfab_efa_ring_send(&pr, "hdr", 3, 7, gid0, 5, pl,
					     sizeof(pl), NULL, NULL) == -EAGAIN;
	TAP_OK(eagain && m.ctrl->rnrs == 10, "rnr: 10 tries, 10 rnrs");
	TAP_OK(!m.ctrl->tail && !m.ctrl->injected_rnrs && !m.ctrl->armed,
	       "rnr: no ticket taken, nothing else counted");
	TAP_OK(xp_all(m.ring, (size_t)64 * sizeof(*m.ring), 0) &&
	       xp_all(m.bufs, (size_t)64 * 8192, 0x5a),
	       "rnr: nothing written to the ring or the buffers");
	TAP_EQ(kfab_efa_ring_poll(&r, &e), 0, "rnr: nothing to poll");
	TAP_EQ(kfab_efa_ring_post(&r, 1), 1, "rnr: post one buffer");
	TAP_EQ(kfab_efa_ring_send(&pr, "hdr", 3, 7, gid0, 5, pl, sizeof(pl), NULL, NULL),
	       0, "rnr: then one send is taken");
	TAP_EQ(kfab_efa_ring_send(&pr, "hdr", 3, 7, gid0, 5, pl, sizeof(pl), NULL, NULL),
	       -EAGAIN, "rnr: and the next is not");
	TAP_OK(m.ctrl->rnrs == 11 && m.ctrl->tail == 1,
	       "rnr: 11 rnrs, one ticket");
	mem_free(&m);
}

/* The packet of id @id: every field derived from it. */
struct pkt {
	uint8_t hdr[KFAB_EFA_RX_HDR_BYTES];
	uint8_t gid[KFAB_EFA_GID_LEN];
	size_t hdrlen;
	size_t len;
	uint32_t imm;
	uint32_t qpn;
};

static void pkt_make(struct pkt *p, uint32_t id, uint32_t mtu)
{
	xp_fill(p->hdr, sizeof(p->hdr), id);
	xp_fill(p->gid, sizeof(p->gid), ~id);
	p->hdrlen = id % (KFAB_EFA_RX_HDR_BYTES + 1);
	if (id % 7 == 0)
		p->len = 0;
	else if (id % 11 == 0)
		p->len = mtu;
	else
		p->len = (id * 977u) % mtu + 1;
	p->imm = id * 2654435761u;
	p->qpn = (id * 40503u) & 0xffffff;
}

static int pkt_send(struct kfab_efa_ring *pr, uint32_t id)
{
	struct pkt p;
	uint8_t pl[8192];

	pkt_make(&p, id, pr->mtu);
	xp_fill(pl, p.len, id ^ 0x55aa55aa);
	return kfab_efa_ring_send(pr, p.hdr, p.hdrlen, p.imm, p.gid, p.qpn,
				  pl, p.len, NULL, NULL);
}

/* Every field of @e as pkt_send(@id) made it, in the slot of @ticket. */
static bool pkt_check(const struct mem *m, const struct kfab_efa_ring_entry *e,
		      uint32_t id, uint32_t ticket)
{
	struct pkt p;

	pkt_make(&p, id, m->mtu);
	if (e->ticket != ticket || e->len != p.len || e->imm != p.imm ||
	    e->src_qpn != p.qpn || memcmp(e->src_gid, p.gid, sizeof(p.gid)) ||
	    memcmp(e->hdr, p.hdr, p.hdrlen) ||
	    !xp_all(e->hdr + p.hdrlen, KFAB_EFA_RX_HDR_BYTES - p.hdrlen, 0))
		return false;
	if (!p.len)
		return !e->payload;
	return e->payload ==
	       m->bufs + (size_t)(ticket & (m->entries - 1)) * m->mtu &&
	       xp_check(e->payload, p.len, id ^ 0x55aa55aa);
}

static void test_data(void)
{
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e, e2;
	uint32_t id = 0, zero = 0, full = 0;
	bool ok = true;
	struct mem m;
	int ret;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, false);
	/* garbage everywhere but seq: the unused hdr bytes must be zeroed */
	memset(m.ring, 0xa5, (size_t)64 * sizeof(*m.ring));
	for (uint32_t i = 0; i < 64; i++)
		m.ring[i].seq = 0;
	TAP_EQ(kfab_efa_ring_post(&r, 64), 64, "data: 64 buffers posted");
	for (uint32_t round = 0; round < 30 && ok; round++) {
		uint32_t batch = 1 + round * 37 % 64, first = id;

		for (uint32_t i = 0; i < batch && ok; i++, id++) {
			ret = pkt_send(&pr, id);
			if (ret)
				ok = TAP_EQ(ret, 0, "data: send %u", id);
		}
		for (uint32_t i = first; i < id && ok; i++) {
			ok = kfab_efa_ring_poll(&r, &e) == 1 &&
			     pkt_check(&m, &e, i, i);
			/* polling again gives the same entry */
			ok = ok && kfab_efa_ring_poll(&r, &e2) == 1 &&
			     e2.ticket == e.ticket && e2.hdr == e.hdr &&
			     e2.payload == e.payload;
			zero += ok && !e.len;
			full += ok && e.len == 8192;
			ok = ok && !kfab_efa_ring_release(&r) &&
			     kfab_efa_ring_post(&r, 1) == 1;
			if (!ok)
				tap_diag("data: packet %u wrong", i);
		}
	}
	TAP_OK(ok, "data: %u packets: hdr, imm, src, payload exact, in order",
	       id);
	TAP_OK(zero > 0 && full > 0,
	       "data: %u without payload (NULL), %u of a full mtu", zero, full);
	TAP_EQ(kfab_efa_ring_poll(&r, &e), 0, "data: empty afterwards");
	TAP_EQ(kfab_efa_ring_release(&r), -EINVAL, "data: release on empty");
	TAP_OK(m.ctrl->tail == id && r.head == id && m.ctrl->posted == id + 64,
	       "data: tail = head = %u, posted 64 ahead", id);
	TAP_OK(!m.ctrl->rnrs && !m.ctrl->injected_rnrs, "data: no rnr");
	mem_free(&m);
}

static void test_post(void)
{
	struct kfab_efa_ring r, pr;
	uint32_t s = 1, sent = 0, over = 0;
	struct mem m;
	int ret;

	mem_ring(&m, &r, 4, 4096);
	mem_peer(&m, &pr, false);
	TAP_EQ(kfab_efa_ring_post(&r, 0), 0, "post: 0 buffers");
	TAP_EQ(kfab_efa_ring_post(&r, 3), 3, "post: 3 buffers");
	TAP_EQ(kfab_efa_ring_post(&r, 100), 1, "post: then only 1 of 100");
	TAP_EQ(kfab_efa_ring_post(&r, UINT32_MAX), 0, "post: then none");
	TAP_OK(kfab_efa_ring_posted(&r) == 4 && m.ctrl->posted == 4,
	       "post: 4 posted");
	for (int i = 0; i < 4; i++)
		sent += kfab_efa_ring_send(&pr, NULL, 0, 0, gid0, 1, NULL, 0, NULL, NULL) ==
			0;
	TAP_EQ(sent, 4, "post: 4 packets fill it");
	TAP_EQ(kfab_efa_ring_send(&pr, NULL, 0, 0, gid0, 1, NULL, 0, NULL, NULL), -EAGAIN,
	       "post: the 5th is rnr");
	TAP_EQ(kfab_efa_ring_posted(&r), 4, "post: filled buffers count");
	TAP_EQ(kfab_efa_ring_post(&r, 1), 0, "post: nothing before a release");
	consume(&r);
	TAP_OK(kfab_efa_ring_posted(&r) == 4 && m.ctrl->posted == 5,
	       "post: one consumed and posted again");

	/* random sends, consumes and posts: never more than 4 ahead */
	for (int i = 0; i < 20000; i++) {
		struct kfab_efa_ring_entry e;

		switch (lcg(&s) % 3) {
		case 0:
			ret = kfab_efa_ring_send(&pr, NULL, 0, 0, gid0, 1,
						 NULL, 0, NULL, NULL);
			over += ret != 0 && ret != -EAGAIN;
			break;
		case 1:
			if (kfab_efa_ring_poll(&r, &e) == 1)
				kfab_efa_ring_release(&r);
			break;
		default:
			kfab_efa_ring_post(&r, lcg(&s) % 6);
		}
		over += m.ctrl->posted - r.head > 4 ||
			(int32_t)(m.ctrl->posted - m.ctrl->tail) < 0 ||
			kfab_efa_ring_posted(&r) != m.ctrl->posted - r.head;
	}
	TAP_EQ(over, 0,
	       "post: 20000 random steps: posted - head <= 4, tail <= posted");
	mem_free(&m);
}

static void test_sizes(void)
{
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	static uint8_t buf[8192];
	struct mem m;

	mem_ring(&m, &r, 4, 4096);
	mem_peer(&m, &pr, true);
	set_ppm(&m, 1000000);
	TAP_EQ(kfab_efa_ring_send(&pr, buf, KFAB_EFA_RX_HDR_BYTES + 1, 0, gid0,
				  1, NULL, 0, NULL, NULL),
	       -EMSGSIZE, "sizes: hdr of 33 bytes");
	TAP_EQ(kfab_efa_ring_send(&pr, buf, 0, 0, gid0, 1, buf, 4097, NULL, NULL),
	       -EMSGSIZE, "sizes: payload of mtu + 1");
	kfab_efa_ring_post(&r, 4);
	TAP_EQ(kfab_efa_ring_send(&pr, buf, 8, 0, gid0, 1, buf, 8192, NULL, NULL),
	       -EMSGSIZE, "sizes: payload of 2 mtu, buffers posted");
	TAP_OK(!m.ctrl->rnrs && !m.ctrl->injected_rnrs && !m.ctrl->tail,
	       "sizes: nothing taken or counted (not even an rnr)");
	set_ppm(&m, 0);
	xp_fill(buf, sizeof(buf), 3);
	TAP_EQ(kfab_efa_ring_send(&pr, buf, KFAB_EFA_RX_HDR_BYTES, 9, gid0, 1,
				  buf, 4096, NULL, NULL),
	       0, "sizes: 32-byte hdr and a full mtu");
	TAP_OK(kfab_efa_ring_poll(&r, &e) == 1 && e.len == 4096 &&
	       !memcmp(e.hdr, buf, KFAB_EFA_RX_HDR_BYTES) &&
	       xp_check(e.payload, 4096, 3),
	       "sizes: received whole");
	mem_free(&m);
}

static void test_fifo(void)
{
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	uint32_t s = 7, sent = 0, got = 0, rnrs = 0;
	bool ok = true;
	struct mem m;

	mem_ring(&m, &r, 4, 4096);
	mem_peer(&m, &pr, false);
	kfab_efa_ring_post(&r, 4);
	for (uint32_t it = 0; it < 100000 && got < 10000 && ok; it++) {
		uint32_t n = lcg(&s) % 6;
		int ret;

		/* send until rnr, consume a random number */
		for (int k = 0; k <= 4 && (ret = pkt_send(&pr, sent)) == 0; k++)
			sent++;
		rnrs += ret == -EAGAIN;
		ok = ret == -EAGAIN;
		for (uint32_t i = 0; i < n && ok; i++) {
			if (kfab_efa_ring_poll(&r, &e) != 1)
				break;
			ok = pkt_check(&m, &e, got, got) && consume(&r);
			if (!ok)
				tap_diag("fifo: packet %u wrong", got);
			got++;
		}
	}
	TAP_OK(ok && got >= 10000,
	       "fifo: %u packets through a 4-entry ring in order", got);
	TAP_EQ(m.ctrl->rnrs, rnrs, "fifo: every rnr counted (%u)", rnrs);
	mem_free(&m);
}

/*
 * Put the ring in the state it has after @t tickets were produced and
 * consumed: equal tail, posted and head, every slot's seq from the
 * previous lap (zero memory would look valid at ticket 0xffffffff).
 */
static void ring_at(struct mem *m, struct kfab_efa_ring *r, uint32_t t)
{
	uint32_t n = m->entries;

	m->ctrl->tail = m->ctrl->posted = t;
	for (uint32_t i = 1; i <= n; i++)
		m->ring[(t - i) & (n - 1)].seq = t - i + 1;
	r->head = t;
}

static void test_wrap(void)
{
	const uint32_t start = UINT32_MAX - 5;
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	uint32_t id = 0, n = 0;
	bool ok = true, wrapped = false;
	struct mem m;
	int ret;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, false);
	ring_at(&m, &r, start);
	TAP_EQ(kfab_efa_ring_post(&r, 100), 64,
	       "wrap: 64 posted across 2^32");
	TAP_EQ(kfab_efa_ring_posted(&r), 64, "wrap: posted() across 2^32");
	/* batches of 7 across the wrap */
	for (int round = 0; round < 30 && ok; round++) {
		for (int i = 0; i < 7 && ok; i++, id++) {
			ret = pkt_send(&pr, id);
			if (ret)
				ok = TAP_EQ(ret, 0, "wrap: send %u", id);
		}
		for (uint32_t i = id - 7; i < id && ok; i++) {
			ok = kfab_efa_ring_poll(&r, &e) == 1 &&
			     pkt_check(&m, &e, i, start + i) && consume(&r);
			wrapped |= ok && e.ticket == 0;
		}
	}
	TAP_OK(ok, "wrap: 210 packets across 2^32, in order and intact");
	TAP_OK(wrapped && m.ctrl->tail == start + 210u &&
	       r.head == start + 210u,
	       "wrap: the tickets did wrap");
	TAP_OK(!m.ctrl->rnrs, "wrap: no false rnr across the wrap");

	/* a fully posted ring straddling the wrap takes exactly 64 */
	ring_at(&m, &r, UINT32_MAX - 10);
	kfab_efa_ring_post(&r, 64);
	while (n <= 64 && (ret = kfab_efa_ring_send(&pr, "x", 1, 0, gid0, 1,
						    NULL, 0, NULL, NULL)) == 0)
		n++;
	TAP_EQ(n, 64, "wrap: 64 sends fill a ring straddling 2^32");
	TAP_EQ(ret, -EAGAIN, "wrap: then rnr");
	TAP_EQ(m.ctrl->rnrs, 1, "wrap: counted");
	TAP_EQ(kfab_efa_ring_post(&r, 1), 0, "wrap: no post beyond 64 ahead");
	n = 0;
	for (uint32_t i = 0; i <= 64 && kfab_efa_ring_poll(&r, &e) == 1; i++) {
		n += e.ticket == UINT32_MAX - 10 + i;
		kfab_efa_ring_release(&r);
	}
	TAP_EQ(n, 64, "wrap: all 64 consumed with the right tickets");
	mem_free(&m);
}

static void test_notify(void)
{
	struct kfab_efa_ring r, pr, pr2;
	uint32_t notifies = 0;
	struct mem m;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, false);
	mem_peer(&m, &pr2, true);
	kfab_efa_ring_post(&r, 64);
	TAP_EQ(pkt_send(&pr, 0), 0, "notify: unarmed owner: 0");
	consume(&r);
	TAP_OK(kfab_efa_ring_arm(&r), "notify: arm on an empty ring: true");
	TAP_EQ(m.ctrl->armed, 1, "notify: armed word set");
	TAP_EQ(pkt_send(&pr, 1), KFAB_EFA_RING_NOTIFY,
	       "notify: the first send after arming notifies");
	TAP_EQ(m.ctrl->armed, 0, "notify: and took the armed word");
	TAP_EQ(pkt_send(&pr2, 2), 0, "notify: the next send does not");
	TAP_OK(!kfab_efa_ring_arm(&r),
	       "notify: arm with entries pending: false");
	for (int i = 0; i < 64 && consume(&r); i++)
		;
	TAP_OK(kfab_efa_ring_arm(&r), "notify: empty again: arm true");
	for (uint32_t i = 3; i < 13; i++)
		notifies += pkt_send(i % 2 ? &pr : &pr2, i) ==
			    KFAB_EFA_RING_NOTIFY;
	TAP_EQ(notifies, 1, "notify: 10 sends from two views, one notify");
	for (int i = 0; i < 64 && consume(&r); i++)
		;
	TAP_OK(kfab_efa_ring_arm(&r), "notify: empty again: arm true");
	TAP_OK(kfab_efa_ring_take_armed(&pr) && !m.ctrl->armed &&
	       !kfab_efa_ring_take_armed(&pr2),
	       "notify: take_armed alone takes the armed word once");
	mem_free(&m);
}

static void test_inject(void)
{
	struct kfab_efa_ring r, pr, pr2;
	struct kfab_efa_ring_entry e;
	uint32_t eagain = 0, ok = 0, got = 0;
	bool intact = true;
	struct mem m;
	int ret;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, true);
	kfab_efa_ring_post(&r, 64);
	set_ppm(&m, 1000000);
	for (int i = 0; i < 100; i++)
		eagain += pkt_send(&pr, 0) == -EAGAIN;
	TAP_EQ(eagain, 100, "inject: ppm 1000000: every send rnr");
	TAP_EQ(m.ctrl->injected_rnrs, 100, "inject: counted in injected_rnrs");
	TAP_EQ(m.ctrl->rnrs, 0, "inject: rnrs untouched");
	TAP_OK(!m.ctrl->tail && kfab_efa_ring_poll(&r, &e) == 0,
	       "inject: no ticket taken, nothing published");
	mem_peer(&m, &pr2, false);
	TAP_EQ(pkt_send(&pr2, 0), 0, "inject: a view without status is not");
	consume(&r);

	set_ppm(&m, 0);
	for (uint32_t i = 0; i < 1000; i++)
		ok += pkt_send(&pr, i) == 0 && consume(&r);
	TAP_EQ(ok, 1000, "inject: ppm 0: never");
	TAP_EQ(m.ctrl->injected_rnrs, 100, "inject: nothing more counted");

	set_ppm(&m, 500000);
	eagain = 0;
	for (uint32_t i = 0; i < 10000; i++) {
		ret = pkt_send(&pr, got);
		if (ret == -EAGAIN) {
			eagain++;
			continue;
		}
		intact &= ret == 0 && kfab_efa_ring_poll(&r, &e) == 1 &&
			  pkt_check(&m, &e, got, e.ticket) && consume(&r);
		got++;
	}
	/* binomial(10000, 0.5): sigma 50, the bounds are 10 sigma */
	TAP_OK(eagain >= 4500 && eagain <= 5500,
	       "inject: ppm 500000: %u of 10000 sends rnr", eagain);
	TAP_EQ(m.ctrl->injected_rnrs, 100 + eagain,
	       "inject: each counted as injected");
	TAP_OK(intact && !m.ctrl->rnrs, "inject: the others delivered intact");

	/* a real rnr stays a real one */
	mem_free(&m);
	mem_ring(&m, &r, 4, 4096);
	mem_peer(&m, &pr, true);
	set_ppm(&m, 1000000);
	TAP_EQ(pkt_send(&pr, 0), -EAGAIN,
	       "inject: nothing posted, ppm 1000000");
	TAP_OK(m.ctrl->rnrs == 1 && !m.ctrl->injected_rnrs,
	       "inject: counted as a real rnr");
	mem_free(&m);
}

static void test_dead(void)
{
	struct kfab_efa_ring r, pr;
	struct mem m;

	mem_ring(&m, &r, 4, 4096);
	mem_peer(&m, &pr, false);
	TAP_EQ(kfab_efa_ring_dead(&r), 0, "dead: a live QP");
	atomic_store((_Atomic __u32 *)&m.ctrl->dead, 1);
	TAP_OK(kfab_efa_ring_dead(&r) && kfab_efa_ring_dead(&pr),
	       "dead: both views see the dead word");
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* buffers posted with slots (zero-copy receive) */

struct ubuf_dev {
	uint8_t *mem;		/* stands for the owner's registered memory */
	int ret;		/* what the write answers */
	uint32_t calls;
};

static int ubuf_dev_write(void *arg, const struct kfab_efa_ubuf *ub,
			  const void *payload, size_t len)
{
	struct ubuf_dev *d = arg;

	d->calls++;
	if (!d->ret)
		memcpy(d->mem + ub->addr, payload, len);
	return d->ret;
}

/*
 * Posts @ub, sends @len bytes of @pay with ubuf_dev_write(): true when
 * they arrived in the slot's own buffer instead.
 */
static bool ubuf_in_slot(struct kfab_efa_ring *r, struct kfab_efa_ring *pr,
			 const struct kfab_efa_ubuf *ub, struct ubuf_dev *d,
			 const uint8_t *pay, uint32_t len)
{
	struct kfab_efa_ring_entry e;
	uint32_t t;
	bool ok;

	kfab_efa_ring_post_ubuf(r, ub, &t);
	kfab_efa_ring_send(pr, NULL, 0, 0, gid0, 3, pay, len, ubuf_dev_write,
			   d);
	ok = kfab_efa_ring_poll(r, &e) == 1 && !e.ubuf && e.len == len &&
	     !memcmp(e.payload, pay, len);
	kfab_efa_ring_release(r);
	return ok;
}

static void test_ubuf(void)
{
	struct kfab_efa_ubuf ub = { .addr = 64, .rkey = 7, .len = 100 };
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	struct ubuf_dev d = { 0 };
	uint8_t mem[256], pay[200];
	uint32_t t = 0;
	struct mem m;
	bool ok;

	d.mem = mem;
	memset(mem, 0, sizeof(mem));
	xp_fill(pay, sizeof(pay), 5);
	mem_ring(&m, &r, 4, 256);
	mem_peer(&m, &pr, false);

	TAP_EQ(kfab_efa_ring_post_ubuf(&r, &ub, &t), 0, "ubuf: posted");
	TAP_EQ(t, 0, "ubuf: the slot's ticket");
	TAP_EQ(m.ring[0].ubuf_state, KFAB_EFA_UBUF_POSTED,
	       "ubuf: the entry says POSTED");
	TAP_EQ(kfab_efa_ring_send(&pr, "h", 1, 0, gid0, 3, pay, 80,
				  ubuf_dev_write, &d), 0, "ubuf: sent");
	ok = kfab_efa_ring_poll(&r, &e) == 1;
	TAP_OK(ok && e.ubuf && !e.payload && e.len == 80 && d.calls == 1 &&
	       !memcmp(mem + 64, pay, 80) && xp_all(m.bufs, 80, 0) &&
	       m.ring[0].ubuf_state == KFAB_EFA_UBUF_TAKEN,
	       "ubuf: 80 bytes written into the posted buffer, not the slot's");
	kfab_efa_ring_release(&r);

	/* too big for it: into the slot's own buffer, the write not asked */
	TAP_OK(ubuf_in_slot(&r, &pr, &ub, &d, pay, 150) && d.calls == 1,
	       "ubuf: 150 bytes past its 100: in the slot's buffer");
	/* the write fails: the slot's buffer, nothing lost */
	d.ret = -ESTALE;
	TAP_OK(ubuf_in_slot(&r, &pr, &ub, &d, pay, 50) && d.calls == 2,
	       "ubuf: a failed write: in the slot's buffer");

	/* a producer that cannot write it (NULL): the slot's buffer */
	d.ret = 0;
	kfab_efa_ring_post_ubuf(&r, &ub, &t);
	kfab_efa_ring_send(&pr, NULL, 0, 0, gid0, 3, pay, 10, NULL, NULL);
	ok = kfab_efa_ring_poll(&r, &e) == 1;
	TAP_OK(ok && !e.ubuf && !memcmp(e.payload, pay, 10) && d.calls == 2,
	       "ubuf: no writer: in the slot's buffer");
	kfab_efa_ring_release(&r);

	/* a slot posted plainly after a TAKEN one: no buffer, flags clear */
	TAP_EQ(kfab_efa_ring_post(&r, 1), 1, "ubuf: a plain post");
	TAP_EQ(m.ring[4 & 3].ubuf_state, KFAB_EFA_UBUF_NONE,
	       "ubuf: a plain post clears the posted buffer");
	kfab_efa_ring_send(&pr, NULL, 0, 0, gid0, 3, pay, 20,
			   ubuf_dev_write, &d);
	ok = kfab_efa_ring_poll(&r, &e) == 1;
	TAP_OK(ok && !e.ubuf && d.calls == 2 && !memcmp(e.payload, pay, 20),
	       "ubuf: a plain slot: its buffer, no write");
	kfab_efa_ring_release(&r);

	/* fully posted: refused */
	for (int i = 0; i < 4; i++)
		kfab_efa_ring_post_ubuf(&r, NULL, &t);
	TAP_EQ(kfab_efa_ring_post_ubuf(&r, &ub, &t), -EAGAIN,
	       "ubuf: the ring fully posted: -EAGAIN");
	mem_free(&m);
}

int main(void)
{
	tap_start("libkfab: efa_ring");
	test_init();
	test_rnr();
	test_data();
	test_post();
	test_sizes();
	test_fifo();
	test_wrap();
	test_notify();
	test_inject();
	test_dead();
	test_ubuf();
	return tap_done();
}
