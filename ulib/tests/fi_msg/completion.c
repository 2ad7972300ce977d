// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: fi_cancel, selective completion, the completion
 * levels, the CQ formats.
 */
#include "fi_msg.h"

/* fi_cancel: FI_ECANCELED for posted receives, nothing for completed ones. */
void case_cancel(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct msgspec m = { .api = API_TAGGED, .len = 100, .tag = 0x7d00,
			     .seed = seed_of(0x800, 0) };
	struct gbuf b[3];
	int rc;

	if (peer_serves(s))
		return;
	for (int i = 0; i < 3; i++)
		gbuf_alloc(&b[i], 100);
	if (!recv_into(s, API_TAGGED, &b[0], FI_ADDR_UNSPEC, m.tag, 0, &ctx[0],
		       "cancel") ||
	    !recv_into(s, 0, &b[1], FI_ADDR_UNSPEC, 0, 0, &ctx[1], "cancel"))
		goto out;
	cancel_recv(s, &ctx[0], API_TAGGED, "cancel: trecv");
	cancel_recv(s, &ctx[1], 0, "cancel: recv");
	if (!remote_go(s, 1, &m) ||
	    !expect_quiet(s, &s->rx, QUIET_MS,
			  "cancel: a cancelled receive takes no message"))
		goto out;
	CHECK(s, b[0].p[0] == FILL_BYTE && b[1].p[0] == FILL_BYTE &&
	      gbuf_guards_ok(&b[0]) && gbuf_guards_ok(&b[1]),
	      "cancel: cancelled receive buffers untouched");
	if (!recv_into(s, API_TAGGED, &b[2], FI_ADDR_UNSPEC, m.tag, 0, &ctx[2],
		       "cancel") ||
	    !expect_recv(s, &ctx[2], &m, 1, &b[2],
			 "cancel: the message in a new receive") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto out;
	rc = fi_cancel(&s->ep->fid, &ctx[2]);
	CHECK(s, rc == 0 || rc == -FI_ENOENT,
	      "cancel: fi_cancel of a completed receive: 0 or -FI_ENOENT (%d)",
	      rc);
	expect_quiet(s, &s->rx, QUIET_MS, "cancel: of a completed receive");
out:
	for (int i = 0; i < 3; i++)
		gbuf_free(s, &b[i]);
	stop_peers(s);
}

/*
 * FI_SELECTIVE_COMPLETION: only FI_COMPLETION sends complete, FI_INJECT
 * ones too, fi_inject never; all arrive.
 */
void case_selective(struct side *s)
{
	static const struct msgspec ms[] = {
		{ .len = 100 },
		{ .len = 70000 },
		{ .api = API_MSG, .len = 200, .flags = FI_COMPLETION },
		{ .api = API_MSG, .len = 300 },
		{ .api = API_TAGGED, .len = 400, .tag = 0x7e00 },
		{ .api = API_TAGGED | API_MSG, .len = 500, .tag = 0x7e00,
		  .flags = FI_COMPLETION },
		{ .api = API_MSG, .len = 10, .flags = FI_INJECT | FI_COMPLETION },
		{ .api = API_MSG, .len = 11, .flags = FI_INJECT },
		{ .api = API_TAGGED | API_MSG, .len = 12, .tag = 0x7e00,
		  .flags = FI_INJECT | FI_COMPLETION },
		{ .api = API_TAGGED | API_MSG, .len = 13, .tag = 0x7e00,
		  .flags = FI_INJECT },
		{ .api = API_INJECT, .len = 14 },
	};
	enum { N = ARRAY_SIZE(ms) };
	struct fi_context2 *ctx = ctx_new(s, N);
	struct gbuf b[N];
	struct msgspec m[N];
	struct comp c;
	char why[200];

	for (int i = 0; i < N; i++) {
		m[i] = ms[i];
		m[i].seed = seed_of(0x900, i);
		gbuf_alloc(&b[i], s->rank ? m[i].len : 70000);
		if (s->rank)
			pat_fill(b[i].p, m[i].len, m[i].seed, 0);
	}
	if (s->rank == 0) {
		bool sas = s->info->tx_attr->msg_order & FI_ORDER_SAS;
		uint32_t seen = 0;

		for (int i = 0; i < N; i++)
			if (!recv_into(s, m[i].api & API_TAGGED, &b[i],
				       FI_ADDR_UNSPEC, m[i].tag, 0, &ctx[i],
				       "selective"))
				goto out;
		step_to(s, 1, STEP_POSTED, 0, NULL, 0);
		/* known by length; under FI_ORDER_SAS message i in receive i */
		for (int k = 0; k < N; k++) {
			long j;
			int i;

			if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms,
				     "selective"))
				goto out;
			for (i = 0; i < N; i++)
				if (m[i].len == c.e.len && !(seen & 1u << i))
					break;
			j = ctx_index(c.e.op_context, ctx, N);
			if (!CHECK(s, i < N && j >= 0,
				   "selective: a completion for a receive of %zu B",
				   c.e.len)) {
				side_abort(s);
				goto out;
			}
			seen |= 1u << i;
			struct want w = want_recv(s, sas ? &ctx[i] : &ctx[j],
						  &m[i], 1);

			check_comp(s, &c, &w, "selective: %zu B: completion",
				   c.e.len);
			check_data(s, &b[j], 1, m[i].seed, m[i].len,
				   "selective: %zu B: data", c.e.len);
		}
		step_to(s, 1, STEP_DONE, 0, NULL, 0);
		goto out;
	}
	if (!ctl_wait(s, 0, STEP_POSTED, NULL))
		goto out;
	for (int i = 0; i < N; i++) {
		struct iovec iov = { .iov_base = b[i].p, .iov_len = m[i].len };
		ssize_t rc;

		RETRY(s, rc, post_send(s, 0, &m[i], &iov, 1, &ctx[i]));
		if (!MUST(s, rc, "selective: send %d", i))
			goto out;
	}
	if (!ctl_wait(s, 0, STEP_DONE, NULL))
		goto out;
	progress_for(s, QUIET_MS);
	for (int i = 0; i < N; i++) {
		if (!(m[i].flags & FI_COMPLETION))
			continue;
		struct want w = want_send(&ctx[i], &m[i]);

		if (CHECK(s, cqq_take(&s->tx, &ctx[i], &c),
			  "selective: send %d with FI_COMPLETION completed", i))
			check_comp(s, &c, &w, "selective: send %d: completion",
				   i);
	}
	why[0] = '\0';
	if (s->tx.n)
		comp_str(&s->tx.v[s->tx.head], why, sizeof(why));
	CHECK_WHY(s, !s->tx.n, why,
		  "selective: no completion for sends without FI_COMPLETION");
	s->tx.n = 0;	/* reported */
out:
	for (int i = 0; i < N; i++)
		gbuf_free(s, &b[i]);
}

/* fi_sendmsg with FI_INJECT/TRANSMIT/DELIVERY_COMPLETE: what each promises. */
void case_compsem(struct side *s)
{
	static const uint64_t levels[] = {
		FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE,
	};
	static const size_t lens[] = { 64, 70000, MIB };
	const char *why = known_gap("compsem/delivery-data");

	if (peer_serves(s))
		return;
	if (why)
		skip("compsem: data in place at FI_DELIVERY_COMPLETE: %s: %s",
		     opt_prov, why);
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++)
		for (int t = 0; t < 2; t++)
			for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
				struct msgspec m = {
					.api = API_MSG | (t ? API_TAGGED : 0),
					.len = lens[i], .tag = 0x7f00 + i,
					.seed = seed_of(0xa00 + 2 * l + t, i),
					.flags = FI_COMPLETION | levels[l],
				};

				if (!recv_one(s, 1, &m, m.len,
					      levels[l] == FI_DELIVERY_COMPLETE &&
					      !why ? R_DELIVERY : 0))
					goto out;
			}
out:
	stop_peers(s);
}

/* CQ formats: each format's fields, entries written at the format's size. */
void case_cqfmt(struct side *s)
{
	static const size_t lens[] = { 100, 70000 };
	bool data = s->info->domain_attr->cq_data_size >= 4;

	if (peer_serves(s))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		struct msgspec m = {
			.api = API_TAGGED | (data ? API_DATA : 0),
			.len = lens[i], .tag = 0x7f70 + i,
			.seed = seed_of(0xc00 + s->cq_format, i),
			.data = 0xabcd0000u + i,
		};

		if (!recv_one(s, 1, &m, m.len, 0))
			break;
	}
	stop_peers(s);
}

