// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: tag matching and directed receives.
 */
#include "fi_msg.h"

/* Wait for the next receive completion: @ctx got @m from rank @from into @b. */
bool expect_recv(struct side *s, void *ctx, const struct msgspec *m,
		 int from, struct gbuf *b, const char *what)
{
	struct want w = want_recv(s, ctx, m, from);
	struct comp c;

	if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
		return false;
	check_comp(s, &c, &w, "%s: completion", what);
	check_data(s, b, 1, m->seed, m->len, "%s: data", what);
	return true;
}

/* Receives for each message of @b by its tag, posted in a permuted order. */
static void recv_permuted(struct side *s, const struct batch *b, bool unexp)
{
	struct fi_context2 *ctx = ctx_new(s, b->n);
	struct gbuf *buf = xcalloc(b->n, sizeof(*buf));
	uint32_t bad_comp = 0, bad_data = 0, done = 0;
	char why_c[300] = "", why_d[300] = "", what[64];
	struct msgspec m;
	struct comp c;

	snprintf(what, sizeof(what), "%s: %u tags, %s, permuted", s->tc->name,
		 b->n, unexp ? "unexpected" : "posted");
	if (unexp) {
		step_to(s, 1, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait(s, 1, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
	}
	for (uint32_t j = 0; j < b->n; j++) {
		batch_spec(b, j * 37 % b->n, &m);
		gbuf_alloc(&buf[j], m.len);
		if (!recv_into(s, API_TAGGED, &buf[j], FI_ADDR_UNSPEC, m.tag, 0,
			       &ctx[j], what))
			goto out;
	}
	if (!unexp)
		step_to(s, 1, STEP_BATCH, 0, b, sizeof(*b));
	for (; done < b->n; done++) {
		long j;
		char one[200];

		if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			goto out;
		j = ctx_index(c.e.op_context, ctx, b->n);
		if (j < 0) {
			comp_str(&c, one, sizeof(one));
			snprintf(why_c, sizeof(why_c), "unknown %s", one);
			bad_comp++;
			continue;
		}
		batch_spec(b, j * 37 % b->n, &m);
		struct want w = want_recv(s, &ctx[j], &m, 1);

		if (comp_mismatch(s, &c, &w, one, sizeof(one)) && !bad_comp++)
			snprintf(why_c, sizeof(why_c), "receive %ld: %s", j,
				 one);
		if (data_mismatch(&buf[j], 1, m.seed, m.len, one,
				  sizeof(one)) && !bad_data++)
			snprintf(why_d, sizeof(why_d), "receive %ld: %s", j,
				 one);
	}
	CHECK_WHY(s, !bad_comp, why_c, "%s: completions", what);
	CHECK_WHY(s, !bad_data, why_d, "%s: each message in its receive",
		  what);
	if (!unexp)
		ctl_wait(s, 1, STEP_SENT, NULL);
	ctl_wait(s, 1, STEP_DONE, NULL);
out:
	for (uint32_t j = 0; j < b->n; j++)
		if (buf[j].mem)
			gbuf_free(s, &buf[j]);
	free(buf);
}

/* A tagged receive of @tag/@ignore from anyone into @b, posted. */
static bool trecv(struct side *s, struct gbuf *b, uint64_t tag,
		  uint64_t ignore, void *ctx)
{
	return recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, tag, ignore, ctx,
			 "tagmatch");
}

/* Rank 1 sends @m, @ctx receives it into @b, rank 1's send completes. */
static bool go_recv(struct side *s, const struct msgspec *m, void *ctx,
		    struct gbuf *b, const char *what)
{
	return remote_go(s, 1, m) && expect_recv(s, ctx, m, 1, b, what) &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/* Tag matching: by tag, not post order; ignore bits; permuted; same tag. */
void case_tagmatch(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 4);
	struct msgspec ma = { .api = API_TAGGED, .len = 300, .tag = 0x7a01,
			      .seed = seed_of(0x400, 1) };
	struct msgspec mb = { .api = API_TAGGED, .len = 200, .tag = 0x7a02,
			      .seed = seed_of(0x400, 2) };
	struct msgspec mi = { .api = API_TAGGED, .len = 100, .tag = 0x1334,
			      .seed = seed_of(0x400, 3) };
	struct msgspec mj = { .api = API_TAGGED, .len = 120, .tag = 0x1234,
			      .seed = seed_of(0x400, 4) };
	struct msgspec mk = { .api = API_TAGGED, .len = 140, .tag = 0x12ab,
			      .seed = seed_of(0x400, 5) };
	struct gbuf b[4] = { 0 };
	const char *what = "tagmatch", *why;

	if (peer_serves(s))
		return;
	/* a posted receive for tag A does not take tag B */
	gbuf_renew(s, &b[0], ma.len);
	gbuf_renew(s, &b[1], mb.len);
	if (!trecv(s, &b[0], ma.tag, 0, &ctx[0]) || !remote_go(s, 1, &mb) ||
	    !expect_quiet(s, &s->rx, SETTLE_MS,
			  "tagmatch: tag B past a receive for tag A") ||
	    !trecv(s, &b[1], mb.tag, 0, &ctx[1]) ||
	    !expect_recv(s, &ctx[1], &mb, 1, &b[1],
			 "tagmatch: tag B, unexpected") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) ||
	    !go_recv(s, &ma, &ctx[0], &b[0], "tagmatch: tag A, posted first"))
		goto broken;

	/* two posted receives, messages in the other order */
	gbuf_renew(s, &b[0], ma.len);
	gbuf_renew(s, &b[1], mb.len);
	if (!trecv(s, &b[1], mb.tag, 0, &ctx[1]) ||
	    !trecv(s, &b[0], ma.tag, 0, &ctx[0]) ||
	    !go_recv(s, &ma, &ctx[0], &b[0],
		     "tagmatch: tag A into the second posted receive") ||
	    !go_recv(s, &mb, &ctx[1], &b[1],
		     "tagmatch: tag B into the first posted receive"))
		goto broken;

	/* ignore bits: 0x1200/0xff takes 0x1234 and 0x12ab, not 0x1334 */
	gbuf_renew(s, &b[2], mj.len);
	gbuf_renew(s, &b[3], mi.len);
	if (!trecv(s, &b[2], 0x1200, 0xff, &ctx[2]) ||
	    !remote_go(s, 1, &mi) ||
	    !expect_quiet(s, &s->rx, SETTLE_MS,
			  "tagmatch: 0x1334 not taken by 0x1200/0xff") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) ||
	    !go_recv(s, &mj, &ctx[2], &b[2],
		     "tagmatch: 0x1234 by 0x1200/0xff, posted") ||
	    !trecv(s, &b[3], mi.tag, 0, &ctx[3]) ||
	    !expect_recv(s, &ctx[3], &mi, 1, &b[3],
			 "tagmatch: 0x1334 by its own tag"))
		goto broken;
	why = known_gap("tagmatch/unexpected-ignore");
	if (why) {
		skip("%s: ignore bits, unexpected: %s: %s", what, opt_prov,
		     why);
		goto permuted;
	}
	gbuf_renew(s, &b[2], mk.len);
	if (!remote_go(s, 1, &mk))
		goto broken;
	progress_for(s, SETTLE_MS);
	if (!trecv(s, &b[2], 0x1200, 0xff, &ctx[2]) ||
	    !expect_recv(s, &ctx[2], &mk, 1, &b[2],
			 "tagmatch: 0x12ab by 0x1200/0xff, unexpected") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto broken;

permuted:
	/* distinct tags received in another order than sent */
	recv_permuted(s, &(struct batch){ B_REORDER, 64, 64 }, false);
	recv_permuted(s, &(struct batch){ B_REORDER, 64, 64 }, true);

	/* one tag: 1 MiB, 8 B, 1 MiB, ... match receives in send order */
	recv_stream(s, 1, &(struct batch){ B_ORDER_TAGGED, 8, 8 }, 8, 1, 0,
		    "tagmatch: same tag, posted");
	recv_stream(s, 1, &(struct batch){ B_ORDER_TAGGED, 8, 8 }, 8, 1,
		    R_UNEXPECTED, "tagmatch: same tag, unexpected");
	recv_stream(s, 1, &(struct batch){ B_ORDER_MSG, 8, 8 }, 8, 1, 0,
		    "tagmatch: untagged, posted");
	recv_stream(s, 1, &(struct batch){ B_ORDER_MSG, 8, 8 }, 8, 1,
		    R_UNEXPECTED, "tagmatch: untagged, unexpected");
	goto out;
broken:
	side_abort(s);
out:
	for (int i = 0; i < 4; i++)
		if (b[i].mem)
			gbuf_free(s, &b[i]);
	stop_peers(s);
}

/*
 * A round of case_directed: ranks 1 and 2 send m[0] and m[1] of one kind
 * ("send" or "tsend": @op), received into b[0] and b[1] with ctx[0] and
 * ctx[1].
 */
struct directed {
	struct side *s;
	const struct msgspec *m;
	struct fi_context2 *ctx;
	struct gbuf *b;
	const char *op;
};

/* Posts the receive of b[@i] for @rank's messages (0: FI_ADDR_UNSPEC). */
static bool directed_recv(const struct directed *d, int i, int rank,
			  const char *what)
{
	char w[96];

	snprintf(w, sizeof(w), "directed: %s %s", d->op, what);
	return recv_into(d->s, d->m->api, &d->b[i],
			 rank ? d->s->addr[rank] : FI_ADDR_UNSPEC, d->m->tag, 0,
			 &d->ctx[i], w);
}

/* The receive of b[@i] completes with @rank's message. */
static bool directed_got(const struct directed *d, int i, int rank,
			 const char *what)
{
	char w[96];

	snprintf(w, sizeof(w), "directed: %s %s", d->op, what);
	return expect_recv(d->s, &d->ctx[i], &d->m[rank - 1], rank, &d->b[i],
			   w);
}

/* Rank @rank sends its message. */
static bool directed_send(const struct directed *d, int rank)
{
	return remote_go(d->s, rank, &d->m[rank - 1]);
}

/* Receives for rank 2 and then for rank 1, posted: each gets its own. */
static bool directed_posted(const struct directed *d)
{
	const char *w1 = "from rank 1 into its receive, posted second";
	const char *w2 = "from rank 2 into its receive";

	return directed_recv(d, 0, 2, w1) && directed_recv(d, 1, 1, w1) &&
	       directed_send(d, 1) && directed_got(d, 1, 1, w1) &&
	       directed_send(d, 2) && directed_got(d, 0, 2, w2);
}

/* Rank 1's message, then rank 2's, unexpected: a receive for rank 2 skips the first. */
static bool directed_unexpected(const struct directed *d)
{
	const char *w1 = "unexpected, then rank 1's by FI_ADDR_UNSPEC";
	const char *w2 = "unexpected, rank 2's taken past rank 1's";

	if (!directed_send(d, 1))
		return false;
	progress_for(d->s, SETTLE_MS);
	if (!directed_send(d, 2))
		return false;
	progress_for(d->s, SETTLE_MS);
	return directed_recv(d, 0, 2, w2) && directed_got(d, 0, 2, w2) &&
	       directed_recv(d, 1, 0, w1) && directed_got(d, 1, 1, w1);
}

/* A receive for rank 2 stays empty while rank 1 sends, then gets rank 2's. */
static bool directed_waits(const struct directed *d)
{
	const char *w0 = "from rank 1 past a receive for rank 2";
	const char *w1 = "from rank 1 by FI_ADDR_UNSPEC";
	const char *w2 = "from rank 2 into the receive waiting for it";
	char w[96];

	snprintf(w, sizeof(w), "directed: %s %s", d->op, w0);
	return directed_recv(d, 0, 2, w0) && directed_send(d, 1) &&
	       expect_quiet(d->s, &d->s->rx, QUIET_MS, w) &&
	       directed_recv(d, 1, 0, w1) && directed_got(d, 1, 1, w1) &&
	       directed_send(d, 2) && directed_got(d, 0, 2, w2);
}

/* FI_DIRECTED_RECV: a receive for one of two senders skips the other's. */
void case_directed(struct side *s)
{
	static bool (*const rounds[])(const struct directed *) = {
		directed_posted, directed_unexpected, directed_waits,
	};
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2] = { 0 };

	if (peer_serves(s))
		return;
	for (int t = 0; t < 2; t++) {
		for (size_t r = 0; r < ARRAY_SIZE(rounds); r++) {
			struct msgspec m[2];
			const struct directed d = {
				.s = s, .m = m, .ctx = ctx, .b = b,
				.op = t ? "tsend" : "send",
			};

			for (int i = 0; i < 2; i++)
				m[i] = (struct msgspec){
					.api = t ? API_TAGGED : 0, .len = 1000,
					.tag = 0x7b00,
					.seed = seed_of(0x500 + 4 * t + r, i),
				};
			gbuf_renew(s, &b[0], 1000);
			gbuf_renew(s, &b[1], 1000);
			if (!rounds[r](&d) ||
			    !ctl_wait(s, 1, STEP_DONE, NULL) ||
			    !ctl_wait(s, 2, STEP_DONE, NULL)) {
				side_abort(s);
				goto out;
			}
		}
	}
out:
	gbuf_free(s, &b[0]);
	gbuf_free(s, &b[1]);
	stop_peers(s);
}

