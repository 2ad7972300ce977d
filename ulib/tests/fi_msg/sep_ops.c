// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: scalable endpoints: unexpected and large messages,
 * counters, RMA, contexts missing a CQ.
 */
#include "fi_msg.h"

/*
 * Rank 0 sends to rx context ux of rank 1 before rank 1 posts a receive
 * there, while a receive for the same tag waits on rx context uo: the
 * message waits for the receive posted later on ux; then a message to
 * uo takes the receive waiting there.
 */
void sep_unexpected(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m = { .api = API_TAGGED, .len = 100,
			     .tag = SEP_TAG | 0xff00,
			     .seed = seed_of(0x5e8, 0) };
	struct msgspec m2 = m;
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2] = { 0 };
	char what[64], what2[64];

	m2.len = 60;
	m2.seed = seed_of(0x5e8, 1);
	snprintf(what, sizeof(what), "sep: unexpected to rx context %d", x->ux);
	snprintf(what2, sizeof(what2), "sep: then to rx context %d", x->uo);
	if (s->rank) {
		gbuf_alloc(&b[0], SEP_BUF);
		gbuf_alloc(&b[1], SEP_BUF);
		if (!sep_recv(s, x->uo, API_TAGGED, &b[1], m.tag, &ctx[1], what))
			goto out;
		step_to(s, 0, STEP_POSTED, 0, NULL, 0);
		if (!ctl_wait(s, 0, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
		CHECK(s, !x->rxq[x->uo].n,
		      "%s: not taken by the receive for its tag on rx context %d",
		      what, x->uo);
		if (!sep_recv(s, x->ux, API_TAGGED, &b[0], m.tag, &ctx[0],
			      what) ||
		    !sep_recv_checked(s, x->ux, &ctx[0], &m, &b[0], what))
			goto out;
		sep_quiet(s, QUIET_MS, what);
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		sep_recv_checked(s, x->uo, &ctx[1], &m2, &b[1], what2);
	} else {
		if (!ctl_wait(s, 1, STEP_POSTED, NULL) ||
		    !sep_send_checked(s, 0, x->ux, &m, what))
			goto out;
		step_to(s, 1, STEP_SENT, 0, NULL, 0);
		if (!ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
		sep_send_checked(s, 1, x->uo, &m2, what2);
	}
	sep_quiet(s, QUIET_MS, what2);
out:
	for (int i = 0; i < 2; i++)
		if (b[i].mem)
			gbuf_free(s, &b[i]);
	barrier(s);
}

/* A 1 MiB fi_senddata from rank 0's last tx context to rx context big. */
void sep_large(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m = { .api = API_DATA, .len = MIB,
			     .seed = seed_of(0x5e9, 0), .data = 0x5eda7a };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct gbuf b = { 0 };
	char what[64];

	snprintf(what, sizeof(what), "sep: 1 MiB senddata to rx context %d",
		 x->big);
	if (s->info->ep_attr->max_msg_size < MIB) {
		if (!s->rank)
			skip("%s: over max_msg_size %zu", what,
			     s->info->ep_attr->max_msg_size);
		return;
	}
	if (s->info->domain_attr->cq_data_size < 4) {
		m.api = 0;
		if (!s->rank)
			skip("%s: cq_data_size %zu: sent without data",
			     what, s->info->domain_attr->cq_data_size);
	}
	if (s->rank) {
		gbuf_alloc(&b, MIB);
		if (!sep_recv(s, x->big, 0, &b, 0, ctx, what))
			goto out;
		step_to(s, 0, STEP_POSTED, 0, NULL, 0);
		sep_recv_checked(s, x->big, ctx, &m, &b, what);
	} else if (ctl_wait(s, 1, STEP_POSTED, NULL)) {
		sep_send_checked(s, x->n - 1, x->big, &m, what);
	}
	sep_quiet(s, QUIET_MS, what);
out:
	if (b.mem)
		gbuf_free(s, &b);
	barrier(s);
}

/*
 * Three more messages each way from tx context tx_cntr to rx context
 * SEP_RX_CNTR: the counted contexts' counts differ from the others'.
 */
void sep_cntr_more(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct msgspec m[2][3];
	struct gbuf b[3] = { 0 };

	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			m[r][k] = (struct msgspec){
				.api = API_TAGGED, .len = 32 + k,
				.tag = SEP_TAG | (uint64_t)r << 16 | 0xfe00 | k,
				.seed = seed_of(0x5eb + r, k),
			};
	for (int k = 0; k < 3; k++) {
		gbuf_alloc(&b[k], SEP_BUF);
		if (!sep_recv(s, SEP_RX_CNTR, API_TAGGED, &b[k],
			      m[x->peer][k].tag, &ctx[k], "sep: counted"))
			goto out;
	}
	if (!barrier(s))
		goto out;
	for (int k = 0; k < 3; k++)
		if (!sep_send_checked(s, x->tx_cntr, SEP_RX_CNTR,
				      &m[s->rank][k], "sep: counted"))
			goto out;
	for (int k = 0; k < 3; k++)
		if (!sep_recv_checked(s, SEP_RX_CNTR, &ctx[k], &m[x->peer][k],
				      &b[k], "sep: counted"))
			goto out;
	sep_quiet(s, SETTLE_MS, "sep: counted");
out:
	for (int k = 0; k < 3; k++)
		if (b[k].mem)
			gbuf_free(s, &b[k]);
	barrier(s);
}

/* The counters: each counts the completions of its context, no others. */
void sep_counters(struct side *s, const char *when)
{
	struct sep *x = s->sep;
	struct {
		struct fid_cntr *c;
		uint64_t want, all;
		const char *kind;
		int ctx;
	} k[2] = {
		{ x->scntr, x->sent[x->tx_cntr], 0, "send", x->tx_cntr },
		{ x->rcntr, x->recvd[SEP_RX_CNTR], 0, "receive", SEP_RX_CNTR },
	};

	for (int i = 0; i < x->n; i++) {
		k[0].all += x->sent[i];
		k[1].all += x->recvd[i];
	}
	for (int i = 0; i < 2; i++) {
		uint64_t end = now_ms() + opt_wait_ms / 2;	/* < barrier's */

		while (fi_cntr_read(k[i].c) < k[i].want &&
		       progress_until(s, end))
			sched_yield();
		progress_for(s, SETTLE_MS);
		CHECK_EQ(s, fi_cntr_read(k[i].c), k[i].want,
			 "sep: %s: the %s counter on %s context %d counts its %llu completions (of %llu on all)",
			 when, k[i].kind, i ? "rx" : "tx", k[i].ctx,
			 (unsigned long long)k[i].want,
			 (unsigned long long)k[i].all);
		CHECK_EQ(s, fi_cntr_readerr(k[i].c), 0,
			 "sep: %s: the %s counter counts no errors", when,
			 k[i].kind);
	}
}

/*
 * fi_writedata from rank 0's tx context 1 into rank 1's window, its CQ
 * data to rank 1's rx context ux: the target completion on that
 * context's CQ, the data in place.
 */
void sep_rma(struct side *s)
{
	static const size_t lens[] = { 64, MIB };
	struct sep *x = s->sep;
	int ti = 1 % x->n, rj = x->ux;
	struct fi_context2 *ctx = ctx_new(s, ARRAY_SIZE(lens));
	struct win *win = &s->win[WIN_MAIN];

	if (!(s->info->caps & FI_RMA)) {
		if (!s->rank)
			skip("sep: %s lacks FI_RMA: no fi_writedata to a receive context",
			     opt_prov);
		return;
	}
	if (s->info->domain_attr->cq_data_size < 4) {
		if (!s->rank)
			skip("sep: cq_data_size %zu: no fi_writedata",
			     s->info->domain_attr->cq_data_size);
		return;
	}
	for (size_t a = 0; a < ARRAY_SIZE(lens) && !s->abort; a++) {
		uint64_t seed = seed_of(0x5ea, a), data = 0x5eda7a00u | a;
		uint64_t raddr = s->rbase[1][WIN_MAIN] + RMA_PAD;
		struct want w = { .ctx = &ctx[a], .flags = FI_RMA | FI_WRITE,
				  .data = data };
		char what[96];
		struct comp c;
		ssize_t rc;

		snprintf(what, sizeof(what),
			 "sep: writedata %zu B, tx context %d to rx context %d",
			 lens[a], ti, rj);
		if (lens[a] > s->info->ep_attr->max_msg_size)
			continue;
		if (s->rank) {
			pat_fill(win->img + RMA_PAD, lens[a], seed, 0);
			if (!cq_wait(s, &x->rxq[rj], NULL, &c, opt_wait_ms,
				     what))
				break;
			w = (struct want){ .ctx = c.e.op_context, .data = data,
					   .flags = FI_REMOTE_CQ_DATA | FI_RMA |
						    FI_REMOTE_WRITE };
			if (known_gap("rma_data/flags"))
				w.flags = FI_REMOTE_CQ_DATA |
					  (c.e.flags & COMP_FLAGS &
					   ~FI_REMOTE_CQ_DATA);
			check_comp(s, &c, &w,
				   "%s: target completion with the data on rx context %d's CQ",
				   what, rj);
			win_check(s, WIN_MAIN, opt_wait_ms,
				  "%s: data in place, nothing around it written",
				  what);
			memcpy(win->img, win->b.p, win->b.len);
			if (!ctl_wait(s, 0, STEP_DONE, NULL))
				break;
		} else {
			win_fill(s, WIN_MAIN, RMA_PAD, lens[a], seed);
			RETRY(s, rc, fi_writedata(x->tx[ti], win->b.p + RMA_PAD,
						  lens[a], fi_mr_desc(win->mr),
						  data, sep_dst(s, rj), raddr,
						  s->rkey[1][WIN_MAIN],
						  &ctx[a]));
			if (!MUST(s, rc, "%s", what) ||
			    !cq_wait(s, &x->txq[ti], &ctx[a], &c, opt_wait_ms,
				     what))
				break;
			if ((c.e.flags & FI_REMOTE_CQ_DATA) &&
			    known_gap("rma_data/initiator-flags"))
				w.flags |= FI_REMOTE_CQ_DATA;
			check_comp(s, &c, &w,
				   "%s: initiator completion on tx context %d's CQ",
				   what, ti);
			step_to(s, 1, STEP_DONE, 0, NULL, 0);
		}
		sep_quiet(s, SETTLE_MS, what);
		if (!barrier(s))	/* the next one after the quiet check */
			break;
	}
}

/*
 * kfab only (the API leaves it open): what rank 0 sends to rx context n,
 * which rank 1 lacks, goes nowhere: an eager and a rendezvous send
 * complete, an RMA write fails with FI_EADDRNOTAVAIL naming the context;
 * the next message to rx context 0 is the one its receive gets.
 */
void sep_missing(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m[3] = {
		{ .api = API_TAGGED, .len = 100, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 0) },
		{ .api = API_TAGGED, .len = MIB, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 1) },
		{ .api = API_TAGGED, .len = 60, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 2) },
	};
	struct fi_context2 *ctx = ctx_new(s, 4);
	const char *what = "sep: to a receive context the peer lacks";
	struct win *win = &s->win[WIN_MAIN];
	struct gbuf b = { 0 };
	struct comp c;
	ssize_t rc;

	if (!(s->info->caps & FI_RMA))
		return;
	if (s->rank) {
		gbuf_alloc(&b, MIB);
		if (sep_recv(s, 0, API_TAGGED, &b, m[0].tag, &ctx[0], what)) {
			step_to(s, 0, STEP_POSTED, 0, NULL, 0);
			sep_recv_checked(s, 0, &ctx[0], &m[2], &b,
					 "sep: after them, to rx context 0");
		}
		gbuf_free(s, &b);
	} else if (ctl_wait(s, 1, STEP_POSTED, NULL)) {
		for (int k = 0; k < 2 && !s->abort; k++) {
			gbuf_alloc(&b, m[k].len);
			pat_fill(b.p, m[k].len, m[k].seed, 0);
			RETRY(s, rc, sep_send(s, 0, x->n, &m[k], b.p,
					      &ctx[k]));
			if (MUST(s, rc, "%s: send of %zu B", what, m[k].len) &&
			    cq_wait(s, &x->txq[0], &ctx[k], &c, opt_wait_ms,
				    what))
				CHECK(s, !c.e.err,
				      "%s: a send of %zu B completes (err %d)",
				      what, m[k].len, c.e.err);
			gbuf_free(s, &b);
		}
		RETRY(s, rc, fi_write(x->tx[0], win->b.p + RMA_PAD, 64,
				      fi_mr_desc(win->mr), sep_dst(s, x->n),
				      s->rbase[1][WIN_MAIN] + RMA_PAD,
				      s->rkey[1][WIN_MAIN], &ctx[2]));
		if (MUST(s, rc, "%s: fi_write", what) &&
		    cq_wait(s, &x->txq[0], &ctx[2], &c, opt_wait_ms, what))
			CHECK_WHY(s, c.e.err == FI_EADDRNOTAVAIL &&
				  strstr(c.estr, "receive context"), c.estr,
				  "%s: fi_write fails with FI_EADDRNOTAVAIL (%d), err_data names the context",
				  what, c.e.err);
		sep_send_checked(s, 0, 0, &m[2],
				 "sep: after them, to rx context 0");
	}
	sep_quiet(s, QUIET_MS, what);
	barrier(s);
}

