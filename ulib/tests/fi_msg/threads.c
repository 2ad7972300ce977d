// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: threads sending at once.
 */
#include "fi_msg.h"

#define THR_N		2000
#define THR_SLOTS	32
#define THR_RWIN	64
#define THR_MAXLEN	20000

struct thr_tx {			/* one sending thread */
	struct side *s;
	int t, to;
	uint8_t *buf;			/* THR_SLOTS * THR_MAXLEN */
	struct fi_context2 *ctx;	/* THR_N */
	atomic_bool busy[THR_SLOTS];
	atomic_bool *stop;
	ssize_t rc;
	unsigned long eagain;
	pthread_t tid;
	uint8_t seen[THR_N];		/* the main thread's */
};

struct thr_rx {			/* the receives for the peer's threads */
	struct fi_context2 *ctx;	/* 2 * THR_RWIN */
	struct gbuf b[2 * THR_RWIN];
	uint32_t k[2 * THR_RWIN];	/* the index it was posted for */
	uint32_t posted[2], got[2];
	uint8_t seen[2][THR_N];
};

struct thr_tally {
	uint32_t done, bad, late;
	char why[300];
};

static size_t thr_len(int t, uint32_t i)
{
	return i % 97 == 96 ? THR_MAXLEN : 1 + (i * 131 + t * 17) % 3000;
}

static struct msgspec thr_spec(int sender, int t, uint32_t i)
{
	return (struct msgspec){
		.api = API_TAGGED, .len = thr_len(t, i),
		.tag = ((uint64_t)(t + 1) << 24) | i,
		.seed = seed_of(0xd00 + 2 * sender + t, i),
	};
}

static void *thr_send(void *arg)
{
	struct thr_tx *x = arg;

	for (uint32_t i = 0; i < THR_N && !atomic_load(x->stop); i++) {
		struct msgspec m = thr_spec(x->s->rank, x->t, i);
		uint32_t slot = i % THR_SLOTS;
		uint8_t *p = x->buf + (size_t)slot * THR_MAXLEN;
		ssize_t rc;

		while (atomic_load(&x->busy[slot])) {
			if (atomic_load(x->stop))
				return NULL;
			sched_yield();
		}
		atomic_store(&x->busy[slot], true);
		pat_fill(p, m.len, m.seed, 0);
		while ((rc = fi_tsend(x->s->ep, p, m.len, NULL,
				      x->s->addr[x->to], m.tag,
				      &x->ctx[i])) == -FI_EAGAIN &&
		       !atomic_load(x->stop)) {
			x->eagain++;
			sched_yield();	/* the main thread progresses */
		}
		if (rc) {
			x->rc = rc;
			atomic_store(x->stop, true);
		}
	}
	return NULL;
}

/* Post receive @slot for thread slot / THR_RWIN of the peer, any index. */
static bool thr_post(struct side *s, struct thr_rx *r, int slot)
{
	int t = slot / THR_RWIN;

	r->k[slot] = r->posted[t]++;
	return recv_into(s, API_TAGGED, &r->b[slot], FI_ADDR_UNSPEC,
			 (uint64_t)(t + 1) << 24, 0xffffff, &r->ctx[slot],
			 "threads");
}

/* A send completion of thread 0 or 1: once each, its slot free again. */
static void thr_sent(struct side *s, struct thr_tx *tx, const struct comp *c,
		     struct thr_tally *y)
{
	int t = ctx_index(c->e.op_context, tx[0].ctx, THR_N) >= 0 ? 0 : 1;
	long i = ctx_index(c->e.op_context, tx[t].ctx, THR_N);
	struct msgspec m;
	struct want w;
	char one[200];

	if (i < 0 || tx[t].seen[i]++) {
		comp_str(c, one, sizeof(one));
		if (!y->bad++)
			snprintf(y->why, sizeof(y->why), "%s %s",
				 i < 0 ? "unknown" : "repeated", one);
		return;
	}
	m = thr_spec(s->rank, t, i);
	w = want_send(&tx[t].ctx[i], &m);
	if (comp_mismatch(s, c, &w, one, sizeof(one)) && !y->bad++)
		snprintf(y->why, sizeof(y->why), "thread %d send %ld: %s", t,
			 i, one);
	atomic_store(&tx[t].busy[i % THR_SLOTS], false);
	y->done++;
}

/* A receive completion: which message (by tag), once, exact; post again. */
static bool thr_received(struct side *s, struct thr_rx *r, int peer,
			 const struct comp *c, struct thr_tally *y)
{
	long slot = ctx_index(c->e.op_context, r->ctx, 2 * THR_RWIN);
	int t = slot / THR_RWIN;
	uint32_t i = c->e.tag & 0xffffff;
	struct msgspec m = thr_spec(peer, t, i);
	struct want w = want_recv(s, c->e.op_context, &m, peer);
	char one[200];

	if (slot < 0 || i >= THR_N || c->e.tag >> 24 != (uint64_t)t + 1 ||
	    r->seen[t][i]++) {
		comp_str(c, one, sizeof(one));
		if (!y->bad++)
			snprintf(y->why, sizeof(y->why), "bad or repeated: %s",
				 one);
		if (slot < 0)
			return true;
	} else if ((comp_mismatch(s, c, &w, one, sizeof(one)) ||
		    data_mismatch(&r->b[slot], 1, m.seed, m.len, one,
				  sizeof(one))) && !y->bad++) {
		snprintf(y->why, sizeof(y->why), "thread %d message %u: %s", t,
			 i, one);
	}
	y->late += i != r->k[slot];
	r->got[t]++;
	y->done++;
	return r->posted[t] == THR_N || thr_post(s, r, slot);
}

/* FI_THREAD_SAFE: two threads send, one reads the CQs; all arrive once. */
void case_threads(struct side *s)
{
	int peer = s->rank ? 0 : 1;
	struct thr_tx *tx = xcalloc(2, sizeof(*tx));
	struct thr_rx *r = xcalloc(1, sizeof(*r));
	struct thr_tally ty = { 0 }, ry = { 0 };
	atomic_bool stop = false;
	uint64_t last = now_ms();
	struct comp c;

	for (int t = 0; t < 2; t++) {
		tx[t] = (struct thr_tx){ .s = s, .t = t, .to = peer,
					 .stop = &stop };
		tx[t].buf = xmalloc(THR_SLOTS * THR_MAXLEN);
		tx[t].ctx = ctx_new(s, THR_N);
		for (int i = 0; i < THR_SLOTS; i++)
			atomic_init(&tx[t].busy[i], false);
	}
	r->ctx = ctx_new(s, 2 * THR_RWIN);
	for (int slot = 0; slot < 2 * THR_RWIN; slot++) {
		gbuf_alloc(&r->b[slot], THR_MAXLEN);
		if (!thr_post(s, r, slot))
			goto out;
	}
	if (!barrier(s))	/* both ranks' receives are posted */
		goto out;
	for (int t = 0; t < 2; t++)
		if (pthread_create(&tx[t].tid, NULL, thr_send, &tx[t]))
			die("pthread_create");
	while ((ty.done < 2 * THR_N || ry.done < 2 * THR_N) && !s->abort &&
	       !(atomic_load(&stop) && (tx[0].rc || tx[1].rc))) {
		progress(s);
		while (cqq_take(&s->tx, NULL, &c)) {
			thr_sent(s, tx, &c, &ty);
			last = c.at;
		}
		while (cqq_take(&s->rx, NULL, &c) && !s->abort) {
			thr_received(s, r, peer, &c, &ry);
			last = c.at;
		}
		if (now_ms() - last > (uint64_t)opt_wait_ms) {
			CHECK(s, false,
			      "threads: nothing completed in %d ms (%u sends, %u receives done)",
			      opt_wait_ms, ty.done, ry.done);
			side_abort(s);
		}
	}
	atomic_store(&stop, true);
	for (int t = 0; t < 2; t++) {
		pthread_join(tx[t].tid, NULL);
		if (tx[t].rc)
			MUST(s, tx[t].rc, "threads: fi_tsend in thread %d", t);
		if (tx[t].eagain)
			diag(s, "threads: thread %d retried %lu -FI_EAGAIN",
			     t, tx[t].eagain);
	}
	CHECK_WHY(s, ty.done == 2 * THR_N && !ty.bad, ty.why,
		  "threads: %u sends of 2 threads completed once each (%u)",
		  2 * THR_N, ty.done);
	CHECK_WHY(s, r->got[0] == THR_N && r->got[1] == THR_N && !ry.bad,
		  ry.why,
		  "threads: %u + %u of %u messages received once each, byte-exact",
		  r->got[0], r->got[1], THR_N);
	if (s->info->tx_attr->msg_order & FI_ORDER_SAS)
		CHECK_EQ(s, ry.late, 0,
			 "threads: each thread's messages in its send order");
out:
	atomic_store(&stop, true);
	for (int slot = 0; slot < 2 * THR_RWIN; slot++)
		if (r->b[slot].mem)
			gbuf_free(s, &r->b[slot]);
	for (int t = 0; t < 2; t++)
		release(s, tx[t].buf);
	free(r);
	free(tx);
}

