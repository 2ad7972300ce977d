// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: FI_PEEK, FI_CLAIM and FI_DISCARD.
 */
#include "fi_msg.h"

/* fi_trecvmsg with @flags for @tag: no buffer unless @b. */
static ssize_t trecv_flags(struct side *s, uint64_t flags, uint64_t tag,
			   struct gbuf *b, void *ctx)
{
	struct iovec iov = { .iov_base = b ? b->p : NULL,
			     .iov_len = b ? b->len : 0 };
	struct fi_msg_tagged msg = {
		.msg_iov = b ? &iov : NULL, .iov_count = b ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx,
	};

	return fi_trecvmsg(s->ep, &msg, flags | FI_COMPLETION);
}

/*
 * Peek (with @flags) for @m until found: a message that has arrived but
 * was not yet seen by the provider's progress may peek as FI_ENOMSG.
 */
static bool peek_found(struct side *s, uint64_t flags, const struct msgspec *m,
		       void *ctx, const char *what)
{
	struct want w = want_recv(s, ctx, m, 1);
	uint64_t end = now_ms() + opt_wait_ms;
	unsigned int misses = 0;
	struct comp c;
	ssize_t rc;

	w.chk_buf = true;	/* no buffer given: buf NULL */
	w.any_len = (flags & FI_DISCARD) && known_gap("peek/discard-len");
	for (;;) {
		RETRY(s, rc, trecv_flags(s, flags, m->tag, NULL, ctx));
		if (!MUST(s, rc, "%s: post", what) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			return false;
		if (c.e.err != FI_ENOMSG || now_ms() >= end)
			break;
		misses++;
		progress_for(s, 10);
	}
	if (misses)
		diag(s, "%s: FI_ENOMSG %u times before found", what, misses);
	return check_comp(s, &c, &w, "%s: completion with len and tag", what);
}

/* A peek (with @flags) for @tag, which no message has: FI_ENOMSG. */
static bool peek_none(struct side *s, uint64_t flags, uint64_t tag,
		      void *ctx, const char *what)
{
	struct comp c;
	ssize_t rc;

	RETRY(s, rc, trecv_flags(s, flags, tag, NULL, ctx));
	if (!MUST(s, rc, "%s: post", what) ||
	    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
		return false;
	return check_comp(s, &c, &(struct want){ .ctx = ctx, .err = FI_ENOMSG,
						 .flags = FI_RECV | FI_TAGGED },
			  "%s: FI_ENOMSG", what);
}

/* Peek @m twice (it stays), then receive it. */
static bool peek_twice(struct side *s, const struct msgspec *m,
		       struct fi_context2 *ctx, struct gbuf *b,
		       const char *what)
{
	return remote_go(s, 1, m) &&
	       peek_found(s, FI_PEEK, m, &ctx[0], what) &&
	       peek_found(s, FI_PEEK, m, &ctx[0], "peek: still there") &&
	       recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, m->tag, 0, &ctx[1],
			 what) &&
	       expect_recv(s, &ctx[1], m, 1, b, "peek: then received") &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/* A receive for @m's tag posted now gets nothing; it is cancelled. */
static bool peek_gone(struct side *s, const struct msgspec *m,
		      struct fi_context2 *ctx, struct gbuf *b,
		      const char *what)
{
	char line[128];

	snprintf(line, sizeof(line), "%s: then a receive gets nothing", what);
	if (!recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, m->tag, 0, ctx,
		       what) ||
	    !expect_quiet(s, &s->rx, QUIET_MS, line))
		return false;
	cancel_recv(s, ctx, API_TAGGED, what);
	return !s->abort;
}

/* FI_PEEK|FI_CLAIM, then FI_CLAIM with the same context receives @m. */
static bool peek_claim(struct side *s, const struct msgspec *m,
		       struct fi_context2 *ctx, struct gbuf *b,
		       const char *what)
{
	ssize_t rc;

	if (!remote_go(s, 1, m) ||
	    !peek_found(s, FI_PEEK | FI_CLAIM, m, &ctx[0], what) ||
	    !peek_gone(s, m, &ctx[1], b, what))
		return false;
	RETRY(s, rc, trecv_flags(s, FI_CLAIM, m->tag, b, &ctx[0]));
	return MUST(s, rc, "%s: post", what) &&
	       expect_recv(s, &ctx[0], m, 1, b,
			   "peek: FI_CLAIM with the peek's context") &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/*
 * FI_PEEK|FI_DISCARD, or with @claim FI_PEEK|FI_CLAIM then
 * FI_CLAIM|FI_DISCARD: @m is dropped and its sender still completes.
 */
static bool peek_discard(struct side *s, const struct msgspec *m, bool claim,
			 struct fi_context2 *ctx, struct gbuf *b,
			 const char *what)
{
	struct want w = {
		.ctx = &ctx[0], .any_len = true, .tag = m->tag,
		.flags = FI_RECV | FI_TAGGED, .src = &s->addr[1],
	};
	struct comp c;
	ssize_t rc;

	if (!remote_go(s, 1, m) ||
	    !peek_found(s, FI_PEEK | (claim ? FI_CLAIM : FI_DISCARD), m,
			&ctx[0], what))
		return false;
	if (claim) {
		RETRY(s, rc, trecv_flags(s, FI_CLAIM | FI_DISCARD, m->tag,
					 NULL, &ctx[0]));
		if (!MUST(s, rc, "%s: post", what) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			return false;
		check_comp(s, &c, &w, "%s: FI_CLAIM|FI_DISCARD completion",
			   what);
	}
	return peek_none(s, FI_PEEK, m->tag, &ctx[1],
			 claim ? "peek: FI_PEEK after FI_CLAIM|FI_DISCARD" :
			 "peek: FI_PEEK after FI_PEEK|FI_DISCARD") &&
	       peek_gone(s, m, &ctx[1], b, what) &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/*
 * FI_PEEK, FI_CLAIM and FI_DISCARD, at an eager and a rendezvous size, as
 * fi_tagged(3) says; tpeek runs it with the hints of fabtests'
 * fi_rdm_tagged_peek.
 */
void case_peek(struct side *s)
{
	static const size_t lens[] = { 300, 70000 };
	struct fi_context2 *ctx = ctx_new(s, 2);
	const char *why = known_gap("peek/discard-rendezvous");
	char what[96];

	if (peer_serves(s))
		return;
	if (!peek_none(s, FI_PEEK, 0x7c00, &ctx[0], "peek: nothing there") ||
	    !peek_none(s, FI_PEEK | FI_CLAIM, 0x7c00, &ctx[0],
		       "peek: FI_CLAIM, nothing there"))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(lens) && !s->abort; i++) {
		struct msgspec m[4];
		struct gbuf b;
		bool ok;

		for (int k = 0; k < 4; k++)
			m[k] = (struct msgspec){
				.api = API_TAGGED, .len = lens[i],
				.tag = 0x7c10 + 16 * i + k,
				.seed = seed_of(0x700 + i, k),
			};
		gbuf_alloc(&b, lens[i]);
		snprintf(what, sizeof(what), "peek: %zu B", lens[i]);
		ok = peek_twice(s, &m[0], ctx, &b, what);
		snprintf(what, sizeof(what), "peek: %zu B FI_CLAIM", lens[i]);
		ok = ok && peek_claim(s, &m[1], ctx, &b, what);
		if (ok && i && why) {
			skip("peek: %zu B FI_DISCARD: %s: %s", lens[i],
			     opt_prov, why);
		} else {
			snprintf(what, sizeof(what), "peek: %zu B FI_PEEK|FI_DISCARD",
				 lens[i]);
			ok = ok && peek_discard(s, &m[2], false, ctx, &b, what);
			snprintf(what, sizeof(what), "peek: %zu B FI_CLAIM|FI_DISCARD",
				 lens[i]);
			ok = ok && peek_discard(s, &m[3], true, ctx, &b, what);
		}
		if (!ok)
			side_abort(s);
		gbuf_free(s, &b);
	}
out:
	stop_peers(s);
}

