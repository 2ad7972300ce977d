// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: scalable endpoints, their helpers and the routing of
 * messages to contexts.
 */
#include "fi_msg.h"

void sep_drain(struct side *s)
{
	struct sep *x = s->sep;

	if (!x || x->threads)
		return;
	for (int i = 0; i < x->n; i++) {
		if (x->txq[i].cq)
			cq_drain(s, &x->txq[i], false);
		if (x->rxq[i].cq)
			cq_drain(s, &x->rxq[i], true);
	}
}

/* Progress for @ms: no completion may appear on any context's CQ. */
bool sep_quiet(struct side *s, int ms, const char *what)
{
	struct sep *x = s->sep;
	char why[300] = "";
	size_t n = 0;

	progress_for(s, ms);
	for (int i = 0; i < 2 * x->n; i++) {
		struct cqq *q = i < x->n ? &x->txq[i] : &x->rxq[i - x->n];

		if (q->n && !why[0]) {
			snprintf(why, sizeof(why), "%s: ", q->name);
			comp_str(&q->v[q->head], why + strlen(why),
				 sizeof(why) - strlen(why));
		}
		n += q->n;
		q->head = q->n = 0;	/* reported here, not again */
	}
	if (n)
		addf(why, sizeof(why), " (%zu in all)", n);
	return CHECK_WHY(s, !n, why, "%s: no other completion on any context",
			 what);
}

fi_addr_t sep_dst(struct side *s, int j)
{
	return fi_rx_addr(s->addr[s->sep->peer], j, s->sep->bits);
}

/* The routing message from tx context @i of rank @from to rx context @j. */
struct msgspec sep_msg(int from, bool tagged, int i, int j)
{
	uint32_t k = i * SEP_CTX + j;

	return (struct msgspec){
		.api = tagged ? API_TAGGED : 0,
		.len = 40 + 8 * k + 4 * tagged,	/* tells them apart */
		.tag = SEP_TAG | (uint64_t)from << 16 | i << 8 | j,
		.seed = seed_of(0x5e0 + 2 * from + tagged, k),
	};
}

ssize_t sep_send(struct side *s, int i, int j, const struct msgspec *m,
		 void *buf, void *ctx)
{
	struct fid_ep *ep = s->sep->tx[i];

	if (m->api & API_TAGGED)
		return fi_tsend(ep, buf, m->len, NULL, sep_dst(s, j), m->tag,
				ctx);
	if (m->api & API_DATA)
		return fi_senddata(ep, buf, m->len, NULL, m->data,
				   sep_dst(s, j), ctx);
	return fi_send(ep, buf, m->len, NULL, sep_dst(s, j), ctx);
}

bool sep_recv(struct side *s, int j, uint32_t api, struct gbuf *b,
	      uint64_t tag, void *ctx, const char *what)
{
	struct fid_ep *ep = s->sep->rx[j];
	ssize_t rc;

	if (api & API_TAGGED)
		RETRY(s, rc, fi_trecv(ep, b->p, b->len, NULL, FI_ADDR_UNSPEC,
				      tag, 0, ctx));
	else
		RETRY(s, rc, fi_recv(ep, b->p, b->len, NULL, FI_ADDR_UNSPEC,
				     ctx));
	return MUST(s, rc, "%s: post receive on rx context %d", what, j);
}

/* Send @m from tx context @i to rx context @j; check it completes there. */
bool sep_send_checked(struct side *s, int i, int j,
		      const struct msgspec *m, const char *what)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_send(ctx, m);
	struct gbuf b;
	struct comp c;
	bool ok = false;
	ssize_t rc;

	gbuf_alloc(&b, m->len);
	pat_fill(b.p, m->len, m->seed, 0);
	RETRY(s, rc, sep_send(s, i, j, m, b.p, ctx));
	if (MUST(s, rc, "%s: send from tx context %d", what, i) &&
	    cq_wait(s, &s->sep->txq[i], ctx, &c, opt_wait_ms, what)) {
		ok = check_comp(s, &c, &w,
				"%s: send completion on tx context %d's CQ",
				what, i);
		s->sep->sent[i] += !c.e.err;
	}
	gbuf_free(s, &b);
	return ok;
}

/* Wait for the receive @ctx on rx context @j and check it is @m. */
bool sep_recv_checked(struct side *s, int j, void *ctx,
		      const struct msgspec *m, struct gbuf *b,
		      const char *what)
{
	struct want w = want_recv(s, ctx, m, s->sep->peer);
	struct comp c;
	bool ok;

	if (!cq_wait(s, &s->sep->rxq[j], ctx, &c, opt_wait_ms, what))
		return false;
	s->sep->recvd[j] += !c.e.err;
	ok = check_comp(s, &c, &w, "%s: completion on rx context %d's CQ",
			what, j);
	return check_data(s, b, 1, m->seed, m->len, "%s: data", what) && ok;
}

/* Check the routing completion @c on context @q's CQ (tx: we sent). */
static void sep_route_comp(struct side *s, bool tagged, int from, int q,
			   const struct comp *c, const struct fi_context2 *ctx,
			   const struct gbuf *b, uint8_t *seen,
			   struct at_tally *y)
{
	struct sep *x = s->sep;
	int n = x->n, nn = n * n, i = 0;
	long k = ctx_index(c->e.op_context, ctx, nn);
	bool tx = s->rank == from;
	struct msgspec m = { 0 };
	char one[300];
	struct want w;

	comp_str(c, one, sizeof(one));
	/* send k: tx context k / n to rx context k % n; receive k: on k / n */
	if (k < 0 || k / n != q) {
		tally(y, one, "%s completion not of this context",
		      k < 0 ? "unknown" : "misplaced");
		return;
	}
	if (tx) {
		m = sep_msg(from, tagged, q, k % n);
		w = want_send(c->e.op_context, &m);
		if (seen[k]++)
			tally(y, one, "repeated completion");
		else if (comp_mismatch(s, c, &w, one, sizeof(one)))
			tally(y, one, "send to rx context %ld", k % n);
		else
			y->ops++;
		x->sent[q] += !c->e.err;
		return;
	}
	/* the message: the receive's tag, or untagged, its length */
	for (i = 0; i < n; i++) {
		m = sep_msg(from, tagged, i, q);
		if (tagged ? i == k % n : m.len == c->e.len)
			break;
	}
	w = want_recv(s, c->e.op_context, &m, x->peer);
	if (i == n || seen[i * n + q]++)
		tally(y, one, "%s", i == n ? "no message to this context" :
		      "repeated message");
	else if (comp_mismatch(s, c, &w, one, sizeof(one)) ||
		 data_mismatch(&b[k], 1, m.seed, m.len, one, sizeof(one)))
		tally(y, one, "message from tx context %d", i);
	else
		y->ops++;
	x->recvd[q] += !c->e.err;
}

/*
 * Rank @from sends the message (i, j) from each of its tx contexts i to
 * each rx context j of the other rank, which has posted n receives on
 * each rx context (tagged: one for each tag; untagged: told apart by
 * length). Each must complete on its own context's CQ, and only there.
 */
void sep_route(struct side *s, int from, bool tagged)
{
	struct sep *x = s->sep;
	int n = x->n, nn = n * n, peer = x->peer;
	bool tx = s->rank == from;
	struct fi_context2 *ctx = ctx_new(s, nn);
	struct gbuf *b = xcalloc(nn, sizeof(*b));
	struct at_tally y[SEP_CTX] = { 0 };
	uint8_t seen[SEP_CTX * SEP_CTX] = { 0 };
	uint64_t last = now_ms();
	unsigned int done = 0;
	struct msgspec m;
	char what[64];
	struct comp c;
	ssize_t rc;

	snprintf(what, sizeof(what), "sep: rank %d -> %d %s", from, !from,
		 tagged ? "tagged" : "untagged");
	if (!tx) {
		for (int k = 0; k < nn; k++) {
			m = sep_msg(from, tagged, k % n, k / n);
			gbuf_alloc(&b[k], SEP_BUF);
			if (!sep_recv(s, k / n, m.api, &b[k], m.tag, &ctx[k],
				      what))
				goto out;
		}
		step_to(s, peer, STEP_POSTED, 0, NULL, 0);
	} else {
		if (!ctl_wait(s, peer, STEP_POSTED, NULL))
			goto out;
		for (int k = 0; k < nn; k++) {
			m = sep_msg(from, tagged, k / n, k % n);
			gbuf_alloc(&b[k], m.len);
			pat_fill(b[k].p, m.len, m.seed, 0);
			RETRY(s, rc, sep_send(s, k / n, k % n, &m, b[k].p,
					      &ctx[k]));
			if (!MUST(s, rc, "%s: send from tx context %d to rx context %d",
				  what, k / n, k % n))
				goto out;
		}
	}
	while (done < (unsigned int)nn && !s->abort &&
	       now_ms() - last <= (uint64_t)opt_wait_ms) {
		progress(s);
		for (int q = 0; q < n; q++) {
			while (cqq_take(tx ? &x->txq[q] : &x->rxq[q], NULL,
					&c)) {
				sep_route_comp(s, tagged, from, q, &c, ctx, b,
					       seen, &y[q]);
				last = c.at;
				done++;
			}
		}
	}
	for (int q = 0; q < n; q++)
		CHECK_WHY(s, y[q].ops == (unsigned int)n && !y[q].bad, y[q].why,
			  tx ? "%s: tx context %d: %u send completions of its %d, all on its CQ, right flags" :
			  "%s: rx context %d: %u of the %d messages to it, all on its CQ, right len/tag/data",
			  what, q, y[q].ops, n);
	if (done < (unsigned int)nn)
		side_abort(s);	/* receives may be left posted */
	else
		sep_quiet(s, QUIET_MS, what);
out:
	for (int k = 0; k < nn; k++)
		if (b[k].mem)
			gbuf_free(s, &b[k]);
	free(b);
	barrier(s);
}

