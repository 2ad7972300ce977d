// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: posting sends and receives in every form, and the halves
 * of one message, each rank checking its end.
 */
#include "fi_msg.h"

/* Buffers of @m for the sender or a receiver of @rlen bytes. */
static int msg_segs(const struct msgspec *m, bool recv, size_t rlen,
		    struct gbuf *seg, struct iovec *iov)
{
	const struct layout *l = m->layout ? &layouts[m->layout - 1] : NULL;
	int n = !l ? 1 : recv ? l->nr : l->ns;
	size_t off = 0;

	for (int j = 0; j < n; j++) {
		size_t len = !l ? (recv ? rlen : m->len) :
			     recv ? l->r[j] : l->s[j];

		gbuf_alloc(&seg[j], len);
		if (!recv)
			pat_fill(seg[j].p, len, m->seed, off);
		iov[j] = (struct iovec){ .iov_base = seg[j].p,
					 .iov_len = len };
		off += len;
	}
	return n;
}

static void segs_free(struct side *s, struct gbuf *seg, int n)
{
	for (int j = 0; j < n; j++)
		gbuf_free(s, &seg[j]);
}

ssize_t post_send(struct side *s, int to, const struct msgspec *m,
		  const struct iovec *iov, size_t n, void *ctx)
{
	fi_addr_t dst = s->addr[to];
	void *buf = iov[0].iov_base;
	size_t len = iov[0].iov_len;
	bool t = m->api & API_TAGGED, d = m->api & API_DATA;

	if (m->api & API_MSG) {
		uint64_t flags = m->flags | (d ? FI_REMOTE_CQ_DATA : 0);

		if (t) {
			struct fi_msg_tagged msg = {
				.msg_iov = iov, .iov_count = n, .addr = dst,
				.tag = m->tag, .context = ctx, .data = m->data,
			};

			return fi_tsendmsg(s->ep, &msg, flags);
		}
		struct fi_msg msg = {
			.msg_iov = iov, .iov_count = n, .addr = dst,
			.context = ctx, .data = m->data,
		};

		return fi_sendmsg(s->ep, &msg, flags);
	}
	if (m->api & API_VEC)
		return t ? fi_tsendv(s->ep, iov, NULL, n, dst, m->tag, ctx) :
			   fi_sendv(s->ep, iov, NULL, n, dst, ctx);
	if (m->api & API_INJECT) {
		if (t)
			return d ? fi_tinjectdata(s->ep, buf, len, m->data, dst,
						  m->tag) :
				   fi_tinject(s->ep, buf, len, dst, m->tag);
		return d ? fi_injectdata(s->ep, buf, len, m->data, dst) :
			   fi_inject(s->ep, buf, len, dst);
	}
	if (t)
		return d ? fi_tsenddata(s->ep, buf, len, NULL, m->data, dst,
					m->tag, ctx) :
			   fi_tsend(s->ep, buf, len, NULL, dst, m->tag, ctx);
	return d ? fi_senddata(s->ep, buf, len, NULL, m->data, dst, ctx) :
		   fi_send(s->ep, buf, len, NULL, dst, ctx);
}

ssize_t post_recv(struct side *s, uint32_t api,
		  const struct iovec *iov, size_t n, fi_addr_t src,
		  uint64_t tag, uint64_t ignore, void *ctx)
{
	bool t = api & API_TAGGED;

	if (api & API_MSG) {
		if (t) {
			struct fi_msg_tagged msg = {
				.msg_iov = iov, .iov_count = n, .addr = src,
				.tag = tag, .ignore = ignore, .context = ctx,
			};

			return fi_trecvmsg(s->ep, &msg, FI_COMPLETION);
		}
		struct fi_msg msg = {
			.msg_iov = iov, .iov_count = n, .addr = src,
			.context = ctx,
		};

		return fi_recvmsg(s->ep, &msg, FI_COMPLETION);
	}
	if (api & API_VEC)
		return t ? fi_trecvv(s->ep, iov, NULL, n, src, tag, ignore,
				     ctx) :
			   fi_recvv(s->ep, iov, NULL, n, src, ctx);
	return t ? fi_trecv(s->ep, iov[0].iov_base, iov[0].iov_len, NULL, src,
			    tag, ignore, ctx) :
		   fi_recv(s->ep, iov[0].iov_base, iov[0].iov_len, NULL, src,
			   ctx);
}

/* Post a receive into all of @b; false (and the case ends) if refused. */
bool recv_into(struct side *s, uint32_t api, struct gbuf *b,
	       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
	       const char *what)
{
	struct iovec iov = { .iov_base = b->p, .iov_len = b->len };
	ssize_t rc;

	RETRY(s, rc, post_recv(s, api, &iov, 1, src, tag, ignore, ctx));
	return MUST(s, rc, "%s: post receive", what);
}

/* fi_cancel of posted receive @ctx: an FI_ECANCELED completion. */
void cancel_recv(struct side *s, void *ctx, uint32_t api,
		 const char *what)
{
	struct want w = {
		.ctx = ctx, .err = FI_ECANCELED,
		.flags = FI_RECV | (api & API_TAGGED ? FI_TAGGED : FI_MSG),
	};
	struct comp c;
	int rc = fi_cancel(&s->ep->fid, ctx);

	CHECK_EQ(s, rc, 0, "%s: fi_cancel of a posted receive", what);
	if (cq_wait(s, &s->rx, ctx, &c, opt_wait_ms, what))
		check_comp(s, &c, &w, "%s: FI_ECANCELED completion", what);
}

/* ---- the halves of one message ---- */

/*
 * Send @m to rank @to, tell it SENT, check the completion (that there is
 * none, for inject), then tell it DONE.
 */
void send_checked(struct side *s, int to, const struct msgspec *m)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_send(ctx, m);
	int ms = m->wait_ms ? (int)m->wait_ms : opt_wait_ms;
	struct gbuf seg[4];
	struct iovec iov[4];
	struct comp c;
	char what[128];
	int n = msg_segs(m, false, 0, seg, iov);
	uint64_t t0 = now_ms();
	ssize_t rc;

	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	msg_label(m, what + strlen(what), sizeof(what) - strlen(what));
	if (s->addr[to] == FI_ADDR_NOTAVAIL) {
		CHECK(s, m->expect == EXPECT_FAIL,
		      "%s: not sent, fi_av_insert refused the address", what);
		goto sent;
	}
	RETRY(s, rc, post_send(s, to, m, iov, n, ctx));
	if (rc && m->expect == EXPECT_FAIL) {
		CHECK(s, true, "%s: refused: %s", what, fi_strerror((int)-rc));
		goto sent;
	}
	if (!MUST(s, rc, "%s", what))
		goto out;
	/* the buffer is ours again the moment the call returns */
	if ((m->api & API_INJECT) || (m->flags & FI_INJECT))
		for (int j = 0; j < n; j++)
			memset(seg[j].p, 0, seg[j].len);
	if (m->api & API_INJECT) {
		step_to(s, to, STEP_SENT, 0, NULL, 0);
		expect_quiet(s, &s->tx, 2, what);
		goto done;
	}
	step_to(s, to, STEP_SENT, 0, NULL, 0);
	if (!cq_wait(s, &s->tx, s->by_ctx ? ctx : NULL, &c, ms, what))
		goto out;
	if (m->flags & FI_INJECT_COMPLETE)
		for (int j = 0; j < n; j++)
			memset(seg[j].p, 0, seg[j].len);
	if (m->expect == EXPECT_FAIL)
		diag(s, "%s: completed after %llu ms: %s", what,
		     (unsigned long long)(now_ms() - t0),
		     c.e.err ? fi_strerror(c.e.err) : "success");
	check_comp(s, &c, &w, "%s: send completion", what);
	goto done;
sent:
	step_to(s, to, STEP_SENT, 0, NULL, 0);
done:
	step_to(s, to, STEP_DONE, 0, NULL, 0);
out:
	segs_free(s, seg, n);
}

/* Rank 0 has rank @r send @m: true once it is posted. */
bool remote_go(struct side *s, int r, const struct msgspec *m)
{
	step_to(s, r, STEP_GO, 0, m, sizeof(*m));
	return ctl_wait(s, r, STEP_SENT, NULL);
}


/*
 * Receive @m from rank @from into @rlen bytes (the layout's receive iovs
 * for the vector forms) and check it. Rank 0 asks the sender (GO); a peer
 * tells rank 0 its receive is posted (POSTED).
 */
bool recv_one(struct side *s, int from, const struct msgspec *m,
	      size_t rlen, unsigned int how)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_recv(s, ctx, m, from);
	size_t got = m->len < rlen ? m->len : rlen;
	struct gbuf seg[4];
	struct iovec iov[4];
	struct comp c;
	char what[160];
	int n = msg_segs(m, true, rlen, seg, iov);
	bool ok = false;
	ssize_t rc = 0;

	if (how & R_ANY_SRC)
		w.src = NULL;
	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	msg_label(m, what + strlen(what), sizeof(what) - strlen(what));
	if (how & R_UNEXPECTED)
		addf(what, sizeof(what), " unexpected");
	if (rlen != m->len)
		addf(what, sizeof(what), " into %zu B", rlen);
	if (!(how & R_UNEXPECTED)) {
		RETRY(s, rc, post_recv(s, m->api, iov, n, FI_ADDR_UNSPEC,
				       m->tag, 0, ctx));
		if (!MUST(s, rc, "%s: post receive", what))
			goto out;
	}
	if (s->rank == 0) {
		if (!remote_go(s, from, m))
			goto out;
	} else {
		step_to(s, from, STEP_POSTED, 0, NULL, 0);
		if (!ctl_wait(s, from, STEP_SENT, NULL))
			goto out;
	}
	if (how & R_UNEXPECTED) {
		progress_for(s, SETTLE_MS);
		RETRY(s, rc, post_recv(s, m->api, iov, n, FI_ADDR_UNSPEC,
				       m->tag, 0, ctx));
		if (!MUST(s, rc, "%s: post receive", what))
			goto out;
	}
	if (how & R_DELIVERY) {
		if (!ctl_wait(s, from, STEP_DONE, NULL))
			goto out;
		check_data(s, seg, n, m->seed, got,
			   "%s: data in place at the send completion", what);
	}
	if (!cq_wait(s, &s->rx, s->by_ctx ? ctx : NULL, &c, opt_wait_ms, what))
		goto out;
	if (rlen < m->len) {
		w.err = FI_ETRUNC;
		w.olen = m->len - rlen;
		check_comp(s, &c, &w, "%s: FI_ETRUNC completion", what);
		CHECK(s, gbuf_guards_ok(&seg[0]), "%s: nothing written past it",
		      what);
	} else {
		check_comp(s, &c, &w, "%s: completion", what);
		check_data(s, seg, n, m->seed, got, "%s: data", what);
	}
	ok = (how & R_DELIVERY) || ctl_wait(s, from, STEP_DONE, NULL);
	if (ok && s->rank)
		step_to(s, from, STEP_DONE, 0, NULL, 0);
out:
	segs_free(s, seg, n);
	return ok && !s->abort;
}

/* Rank 0 sends @m to rank @r, which receives and checks it. */
bool send_to_peer(struct side *s, int r, const struct msgspec *m)
{
	step_to(s, r, STEP_RECV, 0, m, sizeof(*m));
	if (!ctl_wait(s, r, STEP_POSTED, NULL))
		return false;
	send_checked(s, r, m);
	return ctl_wait(s, r, STEP_DONE, NULL);
}

/*
 * Post catch-all receives, let rank @r send (@m, asked for by rank 0) and
 * check that nothing arrives in @ms.
 */
void quiet_recv(struct side *s, int r, const struct msgspec *m,
		int ms)
{
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2];
	char what[128];

	snprintf(what, sizeof(what), "%s: from rank %d", s->tc->name, r);
	gbuf_alloc(&b[0], CATCH_LEN);
	gbuf_alloc(&b[1], CATCH_LEN);
	if (!recv_into(s, 0, &b[0], FI_ADDR_UNSPEC, 0, 0, &ctx[0], what) ||
	    !recv_into(s, API_TAGGED, &b[1], FI_ADDR_UNSPEC, 0, ~0ull,
		       &ctx[1], what))
		goto out;
	if (s->rank == 0)
		step_to(s, r, STEP_GO, 0, m, sizeof(*m));
	else
		step_to(s, r, STEP_POSTED, 0, NULL, 0);
	if (!ctl_wait(s, r, STEP_SENT, NULL))
		goto out;
	expect_quiet(s, &s->rx, ms, what);
	for (int i = 0; i < 2; i++) {
		struct comp c;

		if (!cqq_take(&s->rx, &ctx[i], &c))	/* reported above */
			cancel_recv(s, &ctx[i], i ? API_TAGGED : 0, what);
	}
	if (ctl_wait(s, r, STEP_DONE, NULL) && s->rank)
		step_to(s, r, STEP_DONE, 0, NULL, 0);
out:
	gbuf_free(s, &b[0]);
	gbuf_free(s, &b[1]);
}

/* Rank 0 sends @m to rank @r, which must receive nothing. */
void quiet_peer(struct side *s, int r, const struct msgspec *m,
		int ms)
{
	step_to(s, r, STEP_QUIET, ms, m, sizeof(*m));
	if (!ctl_wait(s, r, STEP_POSTED, NULL))
		return;
	send_checked(s, r, m);
	ctl_wait(s, r, STEP_DONE, NULL);
}
