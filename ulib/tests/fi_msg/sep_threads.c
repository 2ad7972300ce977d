// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: scalable endpoints: a thread for each context pair.
 */
#include "fi_msg.h"

#define SEP_THR_N	500	/* messages each way of one context pair */
#define SEP_THR_WIN	16	/* its sends and its receives in flight */
#define SEP_THR_MAXLEN	(64 * KIB)
#define SEP_THR_TAG	0x5f000000ull

struct sep_thr {
	struct side *s;
	int t;
	atomic_bool *stop;
	struct fi_context2 *sctx;	/* SEP_THR_N */
	struct fi_context2 *rctx;	/* SEP_THR_WIN */
	uint8_t *sbuf;			/* SEP_THR_WIN * SEP_THR_MAXLEN */
	bool busy[SEP_THR_WIN];		/* its send is in flight */
	bool idle[SEP_THR_WIN];		/* to post again */
	struct gbuf rb[SEP_THR_WIN];
	uint32_t rk[SEP_THR_WIN];	/* the message it was posted for */
	uint32_t posted, rposted, late;
	uint64_t sent_ok, recvd_ok;
	unsigned long eagain;
	struct at_tally ty, ry;
	uint8_t sseen[SEP_THR_N], rseen[SEP_THR_N];
	pthread_t tid;
};

static struct msgspec sep_thr_spec(int from, int t, uint32_t i)
{
	return (struct msgspec){
		.api = API_TAGGED,
		.len = i % 50 == 49 ? SEP_THR_MAXLEN :
		       1 + (i * 131 + t * 17) % 2000,
		.tag = SEP_THR_TAG | (uint64_t)t << 16 | i,
		.seed = seed_of(0x5f0 + SEP_CTX * from + t, i),
	};
}

static struct comp comp_of(const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	return (struct comp){
		.e = { .op_context = e->op_context, .flags = e->flags,
		       .len = e->len, .buf = e->buf, .data = e->data,
		       .tag = e->tag },
		.src = src, .at = now_ms(),
	};
}

/* A failure that is not a completion: kept in @y, not counted. */
__attribute__((format(printf, 3, 4)))
static void sep_thr_fail(struct sep_thr *h, struct at_tally *y,
			 const char *fmt, ...)
{
	va_list ap;

	if (y->bad++)
		return;
	snprintf(y->why, sizeof(y->why), "thread %d: ", h->t);
	va_start(ap, fmt);
	vsnprintf(y->why + strlen(y->why), sizeof(y->why) - strlen(y->why),
		  fmt, ap);
	va_end(ap);
}

/* Read what @cq holds into @c; the count, or -1 after a failure. */
static int sep_thr_read(struct sep_thr *h, struct fid_cq *cq, bool from,
			struct comp *c, int max, struct at_tally *y)
{
	struct fi_cq_tagged_entry e[CQ_BATCH];
	fi_addr_t src[CQ_BATCH];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = from ? fi_cq_readfrom(cq, e, max, src) :
			   fi_cq_read(cq, e, max);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1) {
		c[0] = (struct comp){ .e = err, .src = FI_ADDR_NOTAVAIL };
		c[0].e.err_data = NULL;
		c[0].e.err_data_size = 0;
		return 1;
	}
	if (n < 0 || n > max) {
		sep_thr_fail(h, y, "fi_cq_read: %s", fi_strerror((int)-n));
		atomic_store(h->stop, true);
		return -1;
	}
	for (ssize_t i = 0; i < n; i++)
		c[i] = comp_of(&e[i], from ? src[i] : FI_ADDR_NOTAVAIL);
	return (int)n;
}

static void sep_thr_post(struct sep_thr *h)
{
	struct sep *x = h->s->sep;

	for (int k = 0; k < SEP_THR_WIN && h->rposted < SEP_THR_N; k++) {
		ssize_t rc;

		if (!h->idle[k])
			continue;
		rc = fi_trecv(x->rx[h->t], h->rb[k].p, h->rb[k].len, NULL,
			      FI_ADDR_UNSPEC, SEP_THR_TAG | (uint64_t)h->t << 16,
			      0xffff, &h->rctx[k]);
		if (rc == -FI_EAGAIN)
			return;
		if (rc) {
			sep_thr_fail(h, &h->ry, "fi_trecv: %s",
				     fi_strerror((int)-rc));
			atomic_store(h->stop, true);
			return;
		}
		h->rk[k] = h->rposted++;
		h->idle[k] = false;
	}
}

static bool sep_thr_send(struct sep_thr *h)
{
	struct side *s = h->s;
	struct sep *x = s->sep;
	uint32_t i = h->posted, slot = i % SEP_THR_WIN;
	struct msgspec m = sep_thr_spec(s->rank, h->t, i);
	uint8_t *p = h->sbuf + (size_t)slot * SEP_THR_MAXLEN;
	ssize_t rc;

	if (i == SEP_THR_N || h->busy[slot])
		return false;
	pat_fill(p, m.len, m.seed, 0);
	rc = fi_tsend(x->tx[h->t], p, m.len, NULL, sep_dst(s, h->t), m.tag,
		      &h->sctx[i]);
	if (rc == -FI_EAGAIN) {
		h->eagain++;
		return false;
	}
	if (rc) {
		sep_thr_fail(h, &h->ty, "fi_tsend: %s", fi_strerror((int)-rc));
		atomic_store(h->stop, true);
		return false;
	}
	h->busy[slot] = true;
	h->posted++;
	return true;
}

static void sep_thr_sent(struct sep_thr *h, const struct comp *c)
{
	struct side *s = h->s;
	long i = ctx_index(c->e.op_context, h->sctx, SEP_THR_N);
	char one[300];
	struct msgspec m;
	struct want w;

	comp_str(c, one, sizeof(one));
	if (i < 0 || h->sseen[i]++) {
		tally(&h->ty, one, "%s send completion on tx context %d's CQ",
		      i < 0 ? "unknown" : "repeated", h->t);
		return;
	}
	m = sep_thr_spec(s->rank, h->t, i);
	w = want_send(c->e.op_context, &m);
	if (comp_mismatch(s, c, &w, one, sizeof(one)))
		tally(&h->ty, one, "thread %d send %ld", h->t, i);
	else
		h->ty.ops++;
	h->sent_ok += !c->e.err;
	h->busy[i % SEP_THR_WIN] = false;
}

static void sep_thr_received(struct sep_thr *h, const struct comp *c)
{
	struct side *s = h->s;
	long k = ctx_index(c->e.op_context, h->rctx, SEP_THR_WIN);
	uint32_t i = c->e.tag & 0xffff;
	struct msgspec m = sep_thr_spec(s->sep->peer, h->t, i);
	struct want w = want_recv(s, c->e.op_context, &m, s->sep->peer);
	char one[300];

	comp_str(c, one, sizeof(one));
	if (k < 0) {
		tally(&h->ry, one, "unknown completion on rx context %d's CQ",
		      h->t);
		return;
	}
	h->idle[k] = true;
	if (c->e.tag >> 16 != (SEP_THR_TAG >> 16 | h->t) || i >= SEP_THR_N ||
	    h->rseen[i]++)
		tally(&h->ry, one, "%s message on rx context %d",
		      c->e.err ? "failed" : "foreign or repeated", h->t);
	else if (comp_mismatch(s, c, &w, one, sizeof(one)) ||
		 data_mismatch(&h->rb[k], 1, m.seed, m.len, one, sizeof(one)))
		tally(&h->ry, one, "thread %d message %u", h->t, i);
	else
		h->ry.ops++;
	h->recvd_ok += !c->e.err;
	h->late += i != h->rk[k];
}

/*
 * Thread @t: SEP_THR_N messages from tx context t to the peer's rx
 * context t, and as many from the peer's tx context t on rx context t,
 * polling only the CQs of these two contexts.
 */
static void *sep_thr_run(void *arg)
{
	struct sep_thr *h = arg;
	struct sep *x = h->s->sep;
	uint64_t last = now_ms();
	struct comp c[CQ_BATCH];

	while ((h->ty.ops < SEP_THR_N || h->ry.ops < SEP_THR_N) &&
	       !atomic_load(h->stop)) {
		bool moved = sep_thr_send(h);
		int n;

		sep_thr_post(h);
		n = sep_thr_read(h, x->txq[h->t].cq, false, c, CQ_BATCH, &h->ty);
		for (int i = 0; i < n; i++)
			sep_thr_sent(h, &c[i]);
		moved |= n > 0;
		n = sep_thr_read(h, x->rxq[h->t].cq, true, c, CQ_BATCH, &h->ry);
		for (int i = 0; i < n; i++)
			sep_thr_received(h, &c[i]);
		moved |= n > 0;
		if (moved) {
			last = now_ms();
		} else if (now_ms() - last > (uint64_t)opt_wait_ms) {
			sep_thr_fail(h, &h->ry, "nothing completed in %d ms",
				     opt_wait_ms);
			break;
		}
	}
	return NULL;
}

/*
 * One thread for each context pair i on both ranks, concurrently: each
 * sends over its tx context i to the peer's rx context i and receives on
 * its rx context i, polling its own CQs only; all arrive, in order.
 */
void sep_threads(struct side *s)
{
	enum fi_threading th = s->info->domain_attr->threading;
	struct sep *x = s->sep;
	struct sep_thr *h = xcalloc(x->n, sizeof(*h));
	atomic_bool stop = false;
	bool failed = false;
	bool order = s->info->tx_attr->msg_order & FI_ORDER_SAS;

	if (th != FI_THREAD_SAFE && th != FI_THREAD_FID) {
		if (!s->rank)
			skip("sep: threading %s: no thread for each context",
			     fi_tostr(&th, FI_TYPE_THREADING));
		goto out;
	}
	for (int t = 0; t < x->n; t++) {
		h[t] = (struct sep_thr){ .s = s, .t = t, .stop = &stop };
		h[t].sctx = ctx_new(s, SEP_THR_N);
		h[t].rctx = ctx_new(s, SEP_THR_WIN);
		h[t].sbuf = xmalloc(SEP_THR_WIN * SEP_THR_MAXLEN);
		for (int k = 0; k < SEP_THR_WIN; k++) {
			gbuf_alloc(&h[t].rb[k], SEP_THR_MAXLEN);
			h[t].idle[k] = true;
		}
	}
	x->threads = true;
	for (int t = 0; t < x->n; t++)
		if (pthread_create(&h[t].tid, NULL, sep_thr_run, &h[t]))
			die("pthread_create");
	for (int t = 0; t < x->n; t++)
		pthread_join(h[t].tid, NULL);
	x->threads = false;
	for (int t = 0; t < x->n; t++) {
		failed |= h[t].ty.ops != SEP_THR_N || h[t].ty.bad ||
			  h[t].ry.ops != SEP_THR_N || h[t].ry.bad;
		CHECK_WHY(s, h[t].ty.ops == SEP_THR_N && !h[t].ty.bad,
			  h[t].ty.why,
			  "sep: thread %d: %u of %d sends from tx context %d completed once each, on its CQ",
			  t, h[t].ty.ops, SEP_THR_N, t);
		CHECK_WHY(s, h[t].ry.ops == SEP_THR_N && !h[t].ry.bad,
			  h[t].ry.why,
			  "sep: thread %d: %u of %d messages received once each on rx context %d, byte-exact",
			  t, h[t].ry.ops, SEP_THR_N, t);
		if (order)
			CHECK_EQ(s, h[t].late, 0,
				 "sep: thread %d: matched in send order", t);
		if (h[t].eagain)
			diag(s, "sep: thread %d retried %lu -FI_EAGAIN", t,
			     h[t].eagain);
		x->sent[t] += h[t].sent_ok;
		x->recvd[t] += h[t].recvd_ok;
	}
	if (!order && !s->rank)
		skip("sep: threads: no FI_ORDER_SAS, order not checked");
	sep_quiet(s, QUIET_MS, "sep: threads");
	if (failed)
		side_abort(s);	/* receives may be left posted */
	for (int t = 0; t < x->n; t++) {
		for (int k = 0; k < SEP_THR_WIN; k++)
			gbuf_free(s, &h[t].rb[k]);
		release(s, h[t].sbuf);
	}
out:
	free(h);
	barrier(s);
}

