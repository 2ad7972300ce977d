// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: tests of the receive queue protocol (ulib/dev/hfi_ring.c) over
 * anonymous memory laid out as the kernel's: order, wrap of the tickets at
 * 2^32, drops on a full ring, the armed/notify handshake and many
 * producers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "dev/hfi_ring.h"
#include "tests/xproc.h"

struct mem {
	void *ctrl;
	void *rhq;
	void *eager;
	size_t rhq_len;
	size_t eager_len;
};

static int mem_ring(struct mem *m, struct kfab_hfi_ring *r, uint32_t entries,
		    uint32_t count, uint32_t size)
{
	m->rhq_len = (size_t)entries * sizeof(struct kfab_hfi_rhq_entry);
	m->eager_len = (size_t)count * size;
	m->ctrl = xp_anon(4096);
	m->rhq = xp_anon(m->rhq_len);
	m->eager = xp_anon(m->eager_len);
	if (!m->ctrl || !m->rhq || !m->eager)
		return -ENOMEM;
	return kfab_hfi_ring_init(r, m->ctrl, m->rhq, m->eager, entries, count,
				  size);
}

static void mem_free(struct mem *m)
{
	munmap(m->ctrl, 4096);
	munmap(m->rhq, m->rhq_len);
	munmap(m->eager, m->eager_len);
}

static uint64_t load64(const __u64 *p)
{
	return atomic_load((_Atomic __u64 *)p);
}

/* ------------------------------------------------------------------ */

static void test_init(void)
{
	struct kfab_hfi_ring r;
	struct mem m;

	TAP_EQ(mem_ring(&m, &r, 64, 16, 256), 0, "init: 64/16/256");
	TAP_EQ(kfab_hfi_ring_init(&r, m.ctrl, m.rhq, m.eager, 63, 16, 256),
	       -EINVAL, "init: rhq_entries not a power of two");
	TAP_EQ(kfab_hfi_ring_init(&r, m.ctrl, m.rhq, m.eager, 64, 0, 256),
	       -EINVAL, "init: eager_count 0");
	mem_free(&m);
}

static void test_order(void)
{
	struct kfab_hfi_ring r;
	struct kfab_hfi_ring_entry e, e2;
	uint8_t hdr[KFAB_HFI_RHQ_HDR_BYTES], pl[256];
	bool ok = true, zero_tail = true;
	struct mem m;
	int ret;

	mem_ring(&m, &r, 64, 16, 256);
	for (uint32_t round = 0; round < 20 && ok; round++) {
		/* 10 packets, every third without payload */
		for (uint32_t i = 0; i < 10; i++) {
			uint32_t id = round * 10 + i;
			size_t len = i % 3 == 2 ? 0 : 1 + id % 256;

			xp_fill(hdr, sizeof(hdr), id);
			xp_fill(pl, len, ~id);
			ret = kfab_hfi_ring_send(&r, hdr, 8 + id % 100, pl, len);
			if (ret != 0) {
				ok = TAP_EQ(ret, 0, "send %u", id);
				break;
			}
		}
		for (uint32_t i = 0; i < 10 && ok; i++) {
			uint32_t id = round * 10 + i;
			size_t len = i % 3 == 2 ? 0 : 1 + id % 256;
			size_t hl = 8 + id % 100;

			xp_fill(hdr, sizeof(hdr), id);
			ok = kfab_hfi_ring_poll(&r, &e) == 1 &&
			     e.ticket == id && e.len == len &&
			     !memcmp(e.hdr, hdr, hl) &&
			     (!len ? !e.payload :
			      xp_check(e.payload, len, ~id));
			for (size_t k = hl; k < KFAB_HFI_RHQ_HDR_BYTES; k++)
				zero_tail &= !e.hdr[k];
			/* polling again gives the same entry */
			ok = ok && kfab_hfi_ring_poll(&r, &e2) == 1 &&
			     e2.ticket == e.ticket && e2.hdr == e.hdr;
			ok = ok && !kfab_hfi_ring_release(&r);
			if (!ok)
				tap_diag("packet %u wrong", id);
		}
	}
	TAP_OK(ok, "order: 200 packets in order, hdr and payload intact");
	TAP_OK(zero_tail, "order: unused hdr bytes are zero");
	TAP_EQ(kfab_hfi_ring_poll(&r, &e), 0, "order: empty afterwards");
	TAP_EQ(kfab_hfi_ring_release(&r), -EINVAL, "order: release on empty");
	TAP_EQ(load64(&((struct kfab_hfi_ctrl *)m.ctrl)->head),
	       (uint64_t)140 << 32 | 200,
	       "order: head = eager 140 | rhq 200");
	mem_free(&m);
}

static void test_sizes(void)
{
	uint8_t buf[512] = { 0 };
	struct kfab_hfi_ring r;
	struct kfab_hfi_ctrl *c;
	struct mem m;

	mem_ring(&m, &r, 64, 16, 256);
	c = m.ctrl;
	TAP_EQ(kfab_hfi_ring_send(&r, buf, KFAB_HFI_RHQ_HDR_BYTES + 1, NULL, 0),
	       -EMSGSIZE, "sizes: hdr of 113 bytes");
	TAP_EQ(kfab_hfi_ring_send(&r, buf, 8, buf, 257), -EMSGSIZE,
	       "sizes: payload above eager_size");
	TAP_OK(!c->rhq_full_drops && !c->eager_full_drops && !c->tail,
	       "sizes: nothing reserved or counted");
	TAP_EQ(kfab_hfi_ring_send(&r, buf, KFAB_HFI_RHQ_HDR_BYTES, buf, 256), 0,
	       "sizes: 112-byte hdr and a full eager buffer");
	mem_free(&m);
}

static void test_full(void)
{
	struct kfab_hfi_ring r;
	struct kfab_hfi_ring_entry e;
	struct kfab_hfi_ctrl *c;
	uint8_t pl[16] = { 1 };
	int n = 0, ret;
	struct mem m;

	mem_ring(&m, &r, 64, 16, 256);
	c = m.ctrl;
	for (int i = 0; i < 16; i++)
		n += kfab_hfi_ring_send(&r, "h", 1, pl, sizeof(pl)) == 0;
	TAP_EQ(n, 16, "full: 16 packets fill the eager ring");
	TAP_EQ(kfab_hfi_ring_send(&r, "h", 1, pl, sizeof(pl)), -EAGAIN,
	       "full: 17th payload packet dropped");
	TAP_EQ(c->eager_full_drops, 1, "full: eager_full_drops counted");
	n = 0;
	while ((ret = kfab_hfi_ring_send(&r, "h", 1, NULL, 0)) == 0)
		n++;
	TAP_EQ(n, 48, "full: 48 header-only packets fill the RHQ");
	TAP_EQ(ret, -EAGAIN, "full: then dropped");
	TAP_EQ(c->rhq_full_drops, 1, "full: rhq_full_drops counted");
	TAP_EQ(kfab_hfi_ring_send(&r, "h", 1, pl, 1), -EAGAIN,
	       "full: payload packet on a full RHQ dropped");
	TAP_EQ(c->rhq_full_drops, 2, "full: counted as an RHQ drop");
	TAP_EQ(c->eager_full_drops, 1, "full: not as an eager drop");
	kfab_hfi_ring_poll(&r, &e);
	kfab_hfi_ring_release(&r);
	TAP_EQ(kfab_hfi_ring_send(&r, "h", 1, pl, 1), 0,
	       "full: one consumed, one payload packet fits again");
	TAP_EQ(kfab_hfi_ring_send(&r, "h", 1, NULL, 0), -EAGAIN,
	       "full: and the RHQ is full again");
	mem_free(&m);
}

/*
 * Put the ring in the state it has after @r RHQ and @e eager tickets were
 * produced and consumed: equal head and tail, and every slot's seq from
 * the previous lap (zero memory would look valid at ticket 0xffffffff).
 */
static void ring_at(struct mem *m, struct kfab_hfi_ring *ring, uint32_t r,
		    uint32_t e)
{
	struct kfab_hfi_ctrl *c = m->ctrl;
	struct kfab_hfi_rhq_entry *q = m->rhq;
	uint32_t n = ring->rhq_entries;

	c->tail = c->head = (__u64)e << 32 | r;
	for (uint32_t i = 1; i <= n; i++)
		q[(r - i) & (n - 1)].seq = r - i + 1;
	kfab_hfi_ring_init(ring, m->ctrl, m->rhq, m->eager, n,
			   ring->eager_count, ring->eager_size);
}

static void test_wrap(void)
{
	struct kfab_hfi_ring r;
	struct kfab_hfi_ring_entry e;
	struct kfab_hfi_ctrl *c;
	uint8_t pl[256];
	bool ok = true, wrapped = false;
	uint32_t id = 0, prev = 0;
	struct mem m;
	int n, ret;

	mem_ring(&m, &r, 64, 16, 256);
	c = m.ctrl;
	ring_at(&m, &r, UINT32_MAX - 40, UINT32_MAX - 5);
	/* batches of 7 across both wraps: RHQ ticket and eager ticket */
	for (int round = 0; round < 30 && ok; round++) {
		for (int i = 0; i < 7; i++) {
			xp_fill(pl, 100, id);
			ret = kfab_hfi_ring_send(&r, &id, 4, pl, 100);
			if (ret) {
				ok = TAP_EQ(ret, 0, "wrap: send");
				break;
			}
			id++;
		}
		for (int i = 0; i < 7 && ok; i++) {
			uint32_t want = id - 7 + (uint32_t)i, got;

			ok = kfab_hfi_ring_poll(&r, &e) == 1;
			if (!ok)
				break;
			memcpy(&got, e.hdr, 4);
			ok = got == want && e.len == 100 &&
			     xp_check(e.payload, 100, want);
			if (e.ticket < prev)
				wrapped = true;
			prev = e.ticket;
			ok = ok && !kfab_hfi_ring_release(&r);
		}
	}
	TAP_OK(ok, "wrap: 210 packets across 2^32, in order and intact");
	TAP_OK(wrapped, "wrap: the RHQ ticket did wrap");
	TAP_EQ((uint32_t)(c->tail >> 32), (uint32_t)(UINT32_MAX - 5 + 210),
	       "wrap: the eager ticket wrapped too");
	TAP_OK(!c->rhq_full_drops && !c->eager_full_drops,
	       "wrap: no false full across the wrap");

	/* a full RHQ straddling the wrap is still full */
	ring_at(&m, &r, UINT32_MAX - 10, 0);
	n = 0;
	while ((ret = kfab_hfi_ring_send(&r, "x", 1, NULL, 0)) == 0)
		n++;
	TAP_EQ(n, 64, "wrap: 64 entries fill an RHQ straddling 2^32");
	TAP_EQ(ret, -EAGAIN, "wrap: then full");
	n = 0;
	while (kfab_hfi_ring_poll(&r, &e) == 1) {
		n += e.ticket == (uint32_t)(UINT32_MAX - 10 + (uint32_t)n);
		kfab_hfi_ring_release(&r);
	}
	TAP_EQ(n, 64, "wrap: all 64 consumed with the right tickets");
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* armed / notify */

#define WAKE_PACKETS	200000

struct wake_arg {
	struct kfab_hfi_ring *r;	/* producer's view */
	int efd;
	atomic_uint notifies;
	atomic_uint eagains;
};

static void *wake_producer(void *p)
{
	struct wake_arg *a = p;

	for (uint32_t i = 0; i < WAKE_PACKETS; i++) {
		int ret;

		while ((ret = kfab_hfi_ring_send(a->r, &i, 4, &i, 4)) ==
		       -EAGAIN) {
			atomic_fetch_add(&a->eagains, 1);
			sched_yield();
		}
		if (ret == KFAB_HFI_RING_NOTIFY) {
			uint64_t one = 1;

			atomic_fetch_add(&a->notifies, 1);
			if (write(a->efd, &one, sizeof(one)) != sizeof(one))
				abort();
		}
		/* give the consumer chances to go to sleep */
		if (i % 64 == 0)
			sched_yield();
		if (i % 4096 == 0)
			usleep(50);
	}
	return NULL;
}

static void test_wakeup(void)
{
	struct kfab_hfi_ring r, pr;
	struct kfab_hfi_ring_entry e;
	struct wake_arg a = { 0 };
	unsigned int sleeps = 0, arms = 0, lost = 0;
	uint32_t got = 0;
	bool ok = true;
	pthread_t t;
	struct mem m;

	mem_ring(&m, &r, 64, 16, 256);
	pr = r;
	a.r = &pr;
	a.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	pthread_create(&t, NULL, wake_producer, &a);
	while (got < WAKE_PACKETS) {
		struct pollfd pfd = { .fd = a.efd, .events = POLLIN };
		uint64_t v;

		if (kfab_hfi_ring_poll(&r, &e) == 1) {
			uint32_t id, pl;

			memcpy(&id, e.hdr, 4);
			memcpy(&pl, e.payload, 4);
			if (ok && (id != got || pl != got || e.len != 4)) {
				tap_diag("wakeup: got %u want %u", id, got);
				ok = false;
			}
			kfab_hfi_ring_release(&r);
			got++;
			continue;
		}
		arms++;
		if (!kfab_hfi_ring_arm(&r))
			continue;
		/* empty after arming: the producer must wake us */
		sleeps++;
		if (poll(&pfd, 1, 5000) != 1) {
			lost++;
			tap_diag("wakeup: no wakeup within 5 s at %u", got);
			break;
		}
		(void)!read(a.efd, &v, sizeof(v));
	}
	pthread_join(t, NULL);
	TAP_OK(ok && got == WAKE_PACKETS,
	       "wakeup: %u packets received in order", got);
	TAP_EQ(lost, 0, "wakeup: no lost wakeup in %u sleeps (%u notifies)",
	       sleeps, atomic_load(&a.notifies));
	TAP_OK(sleeps > 100, "wakeup: the consumer did sleep often (%u)",
	       sleeps);
	TAP_OK(atomic_load(&a.notifies) <= arms,
	       "wakeup: at most one notify per arming (%u)", arms);
	close(a.efd);
	mem_free(&m);
}

/* ------------------------------------------------------------------ */
/* many producers */

#define MP_THREADS	4
#define MP_PACKETS	50000

struct mp_arg {
	struct kfab_hfi_ring r;
	uint32_t id;
};

static void *mp_producer(void *p)
{
	struct mp_arg *a = p;
	uint8_t pl[64];

	for (uint32_t i = 0; i < MP_PACKETS; i++) {
		uint32_t hdr[2] = { a->id, i };
		size_t len = i % 2 ? 0 : 1 + i % 64;

		xp_fill(pl, len, a->id << 24 | i);
		while (kfab_hfi_ring_send(&a->r, hdr, sizeof(hdr), pl, len) ==
		       -EAGAIN)
			sched_yield();
	}
	return NULL;
}

static void test_multi(void)
{
	struct mp_arg a[MP_THREADS];
	pthread_t t[MP_THREADS];
	static uint8_t seen[MP_THREADS][MP_PACKETS];
	uint32_t next[MP_THREADS] = { 0 };
	uint32_t total = 0, dup = 0, order = 0, bad = 0;
	struct kfab_hfi_ring r;
	struct kfab_hfi_ring_entry e;
	struct kfab_hfi_ctrl *c;
	struct mem m;
	uint64_t spins = 0;

	mem_ring(&m, &r, 64, 16, 64);
	c = m.ctrl;
	for (uint32_t i = 0; i < MP_THREADS; i++) {
		a[i].r = r;
		a[i].id = i;
		pthread_create(&t[i], NULL, mp_producer, &a[i]);
	}
	while (total < MP_THREADS * MP_PACKETS && spins < 4000000000ULL) {
		uint32_t hdr[2];

		if (kfab_hfi_ring_poll(&r, &e) != 1) {
			spins++;
			continue;
		}
		memcpy(hdr, e.hdr, sizeof(hdr));
		if (hdr[0] >= MP_THREADS || hdr[1] >= MP_PACKETS) {
			bad++;
		} else {
			size_t len = hdr[1] % 2 ? 0 : 1 + hdr[1] % 64;

			dup += seen[hdr[0]][hdr[1]]++ != 0;
			/* one producer's packets keep its order */
			order += hdr[1] != next[hdr[0]];
			next[hdr[0]] = hdr[1] + 1;
			bad += e.len != len ||
			       (len && !xp_check(e.payload, len,
					      hdr[0] << 24 | hdr[1]));
		}
		kfab_hfi_ring_release(&r);
		total++;
	}
	for (uint32_t i = 0; i < MP_THREADS; i++)
		pthread_join(t[i], NULL);
	TAP_EQ(total, MP_THREADS * MP_PACKETS,
	       "multi: %d producers, every packet received", MP_THREADS);
	TAP_EQ(dup, 0, "multi: no packet twice");
	TAP_EQ(order, 0, "multi: each producer's order kept");
	TAP_EQ(bad, 0, "multi: headers and payloads intact");
	TAP_EQ(kfab_hfi_ring_poll(&r, &e), 0, "multi: nothing extra");
	tap_diag("multi: %llu RHQ and %llu eager drops retried",
		 (unsigned long long)c->rhq_full_drops,
		 (unsigned long long)c->eager_full_drops);
	mem_free(&m);
}

int main(void)
{
	tap_start("libkfab: hfi_ring");
	test_init();
	test_order();
	test_sizes();
	test_full();
	test_wrap();
	test_wakeup();
	test_multi();
	return tap_done();
}
