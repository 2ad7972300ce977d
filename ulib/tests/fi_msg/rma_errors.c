// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: RMA the target must refuse, RMA counters, RMA to a
 * dead peer.
 */
#include "fi_msg.h"

/*
 * Operations on memory they may not touch (an unregistered key, a byte
 * past the end, a byte before the start, writing a region without
 * FI_REMOTE_WRITE, reading one without FI_REMOTE_READ) complete in error
 * (kfab_*: FI_EACCES, with err_data); the target is untouched and the
 * endpoint goes on. fi_inject_write over inject_size: -FI_EMSGSIZE. A
 * requested_key used twice in a domain: -FI_ENOKEY.
 */
void case_rma_errors(struct side *s)
{
	enum { W = 1 << 0, R = 1 << 1 };	/* written, read */
	static const struct {
		const char *gap;
		uint32_t ways;
		struct rmaop o;
	} bad[] = {
		{ "rma_errors/bad-key", W | R,
		  { .off = RMA_PAD, .len = 64, .bad_key = 1 } },
		{ "rma_errors/past-end", W | R,
		  { .off = WIN_LEN - 63, .len = 64 } },
		{ "rma_errors/past-end", W | R,
		  { .off = WIN_LEN - MIB + 1, .len = MIB } },
		{ "rma_errors/before-start", W | R, { .off = -1, .len = 64 } },
		{ "rma_errors/access", W,
		  { .win = WIN_RO, .off = 100, .len = 64 } },
		{ "rma_errors/access", W,
		  { .win = WIN_RO, .off = 100, .len = 20000 } },
		{ "rma_errors/access", R,
		  { .win = WIN_WO, .off = 100, .len = 64 } },
		{ "rma_errors/access", R,
		  { .win = WIN_WO, .off = 100, .len = 20000 } },
	};
	int32_t e = access_err();
	size_t inj = s->info->tx_attr->inject_size, n = 0;
	struct fid_mr *mr = NULL;
	struct rmaop o;
	ssize_t rc;

	if (!rma_setup(s) || peer_serves(s))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		for (uint32_t read = 0; read < 2; read++) {
			const char *why = known_gap(bad[i].gap);
			struct rmaop good = { .off = RMA_PAD, .len = 100 };
			char what[128];

			if (!(bad[i].ways & (read ? R : W)))
				continue;
			good.seed = seed_of(0x9a0, n++);
			o = bad[i].o;
			o.read = read;
			o.err = e;
			if (why) {
				rma_label(&o, what, sizeof(what));
				skip("%s: %s: %s", bad[i].gap, what, why);
				continue;
			}
			if (!read && known_gap("rma_errors/write-completes"))
				o.err = ANY_ERR;	/* the target still untouched */
			if (!remote_rma(s, 1, &o) || !remote_rma(s, 1, &good))
				goto out;
		}
	}
	rc = fi_inject_write(s->ep, s->win[WIN_MAIN].b.p, inj + 1, s->addr[1],
			     s->rbase[1][WIN_MAIN] + RMA_PAD,
			     s->rkey[1][WIN_MAIN]);
	if (known_gap("rma_errors/inject-size"))
		skip("rma_errors/inject-size: fi_inject_write of %zu B: %zd (%s: %s)",
		     inj + 1, rc, opt_prov,
		     known_gap("rma_errors/inject-size"));
	else
		CHECK_EQ(s, rc, -FI_EMSGSIZE,
			 "rma_errors: fi_inject_write of inject_size + 1 = %zu B",
			 inj + 1);
	if (mr_bits(s) & FI_MR_PROV_KEY) {
		skip("rma_errors: FI_MR_PROV_KEY: no requested_key to use twice");
		goto out;
	}
	rc = mr_reg(s, s->win[WIN_MAIN].b.p, 4096, FI_REMOTE_WRITE,
		    fi_mr_key(s->win[WIN_MAIN].mr), &mr);
	CHECK_EQ(s, rc, -FI_ENOKEY,
		 "rma_errors: fi_mr_reg with a requested_key in use");
	if (!rc)
		fi_close(&mr->fid);
out:
	stop_peers(s);
}

#define CNTR_N		8

/* Rank 1 of rma_cntr: @n ops to rank 0, then the counter of their kind. */
static void cntr_ops(struct side *s, bool read, bool bad, int n)
{
	struct fid_cntr *cn = s->rma_cntr[read];
	struct fi_context2 *ctx = ctx_new(s, n);
	const char *what = read ? "read" : "write";
	uint64_t v0 = fi_cntr_read(cn), e0 = fi_cntr_readerr(cn);
	int errs = 0;
	struct comp c;
	ssize_t rc;

	for (int i = 0; i < n; i++) {
		struct rmaop o = { .read = read, .off = RMA_PAD + i * 4096,
				   .len = 4096 };

		if (bad)	/* one byte past the end */
			o.off = WIN_LEN - 4095;
		RETRY(s, rc, rma_post(s, 0, &o, &ctx[i]));
		if (!MUST(s, rc, "rma_cntr: %s %d", what, i))
			return;
	}
	if (!bad) {
		rc = fi_cntr_wait(cn, v0 + n, opt_wait_ms);
		CHECK_EQ(s, rc, 0, "rma_cntr: fi_cntr_wait(%s counter, %llu)",
			 what, (unsigned long long)(v0 + n));
	}
	for (int i = 0; i < n; i++)
		if (cq_wait(s, &s->tx, &ctx[i], &c, opt_wait_ms, "rma_cntr"))
			errs += c.e.err != 0;
	CHECK_EQ(s, errs, bad ? n : 0, "rma_cntr: %d %s%s completed%s", n,
		 bad ? "out-of-range " : "", what, bad ? " in error" : "");
	CHECK_EQ(s, fi_cntr_read(cn), v0 + (bad ? 0 : n),
		 "rma_cntr: %s counter after %d %s%ss", what, n,
		 bad ? "failed " : "", what);
	CHECK_EQ(s, fi_cntr_readerr(cn), e0 + (bad ? n : 0),
		 "rma_cntr: %s counter errors after them", what);
}

/*
 * Counters: FI_WRITE and FI_READ ones on the initiator count its writes
 * and reads, errors in fi_cntr_readerr; FI_REMOTE_WRITE and
 * FI_REMOTE_READ ones on the target count what the peer did to it (kfab_*
 * without FI_RMA_EVENT; others may refuse their bind without it).
 */
void case_rma_cntr(struct side *s)
{
	static const char *const names[NRMA_CNTR] = {
		"FI_WRITE", "FI_READ", "FI_REMOTE_WRITE", "FI_REMOTE_READ",
	};

	if (!rma_setup(s))
		return;
	if (s->rank) {
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			return;
		cntr_ops(s, false, false, CNTR_N);
		cntr_ops(s, true, false, CNTR_N);
		if (!known_gap("rma_cntr/errors")) {
			cntr_ops(s, false, true, 2);
			cntr_ops(s, true, true, 2);
		}
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		peer_loop(s);
		return;
	}
	if (known_gap("rma_cntr/errors"))
		skip("rma_cntr/errors: %s: %s", opt_prov,
		     known_gap("rma_cntr/errors"));
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	if (!ctl_wait(s, 1, STEP_DONE, NULL))
		goto out;
	for (int i = 2; i < NRMA_CNTR; i++) {
		struct fid_cntr *cn = s->rma_cntr[i];

		if (known_gap("rma_cntr/remote")) {
			skip("rma_cntr/remote: %s counter: %s", names[i],
			     known_gap("rma_cntr/remote"));
			continue;
		}
		if (!cn) {
			/* kfab_efa has no FI_RMA_EVENT, as EFA */
			if (is_kfab() && strcmp(opt_prov, "kfab_efa"))
				CHECK(s, false, "rma_cntr: fi_ep_bind(%s counter): %s",
				      names[i], fi_strerror(-s->rma_cntr_rc[i]));
			else
				skip("rma_cntr: %s refuses a %s counter without FI_RMA_EVENT: %s",
				     opt_prov, names[i],
				     fi_strerror(-s->rma_cntr_rc[i]));
			continue;
		}
		fi_cntr_wait(cn, CNTR_N, opt_wait_ms);
		CHECK_EQ(s, fi_cntr_read(cn), CNTR_N,
			 "rma_cntr: the target's %s counter counts the peer's %d ops",
			 names[i], CNTR_N);
	}
out:
	stop_peers(s);
}

/*
 * Post (@post) a write and a read to rank 1 (@when: stopped, or dead);
 * with @tdead, wait until they complete: a refused post or an error
 * completion (kfab_*: FI_ECONNRESET) in DEADPEER_MS from @tdead. Without,
 * (rank 1 stopped) see which are still pending in @left. True when none
 * is left.
 */
static bool dead_rma(struct side *s, struct fi_context2 *ctx, bool *left,
		     bool post, const char *when, uint64_t tdead)
{
	static const struct rmaop ops[] = {
		{ .off = RMA_PAD, .len = 64 },
		{ .read = 1, .off = RMA_PAD, .len = MIB },
	};
	char what[2][96];
	struct comp c;
	ssize_t rc;

	for (int i = 0; i < 2; i++) {
		snprintf(what[i], sizeof(what[i]), "rma_deadpeer: ");
		rma_label(&ops[i], what[i] + strlen(what[i]),
			  sizeof(what[i]) - strlen(what[i]));
		addf(what[i], sizeof(what[i]), " %s", when);
		if (!post)
			continue;
		RETRY(s, rc, rma_post(s, 1, &ops[i], &ctx[i]));
		left[i] = !rc;
		if (rc)	/* -FI_EAGAIN for opt_wait_ms is no answer */
			CHECK(s, tdead && rc != -FI_EAGAIN, "%s: refused: %s",
			      what[i], fi_strerror((int)-rc));
	}
	if (!tdead) {
		progress_for(s, 100);
		for (int i = 0; i < 2; i++)
			if (left[i] && cqq_take(&s->tx, &ctx[i], &c)) {
				left[i] = false;
				diag(s, "%s: completed while it was stopped: %s",
				     what[i], fi_strerror(c.e.err));
			}
		return !left[0] && !left[1];
	}
	while ((left[0] || left[1]) && now_ms() < tdead + DEADPEER_MS) {
		progress(s);
		for (int i = 0; i < 2; i++) {
			struct want w = {
				.ctx = &ctx[i],
				.err = is_kfab() ? FI_ECONNRESET : SOME_ERR,
				.flags = FI_RMA | (ops[i].read ? FI_READ :
							       FI_WRITE),
			};

			if (!left[i] || !cqq_take(&s->tx, &ctx[i], &c))
				continue;
			left[i] = false;
			diag(s, "%s: %s %llu ms after the death", what[i],
			     c.e.err ? fi_strerror(c.e.err) : "success",
			     (unsigned long long)(c.at - tdead));
			check_comp(s, &c, &w, "%s: error completion", what[i]);
		}
	}
	for (int i = 0; i < 2; i++)
		CHECK(s, !left[i], "%s: done within %d s", what[i],
		      DEADPEER_MS / 1000);
	return !left[0] && !left[1];
}

/*
 * A peer stopped (SIGSTOP) with a write and a read to it pending, then
 * killed: they complete in error; a write and a read posted once it is
 * dead are refused or complete in error; none hangs.
 */
void case_rma_deadpeer(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 4);
	bool left[2] = { false, false };
	uint64_t tdead;

	if (!rma_setup(s) || peer_serves(s))
		return;
	s->may_die[1] = true;
	kill(s->pid[1], SIGSTOP);
	dead_rma(s, ctx, left, true, "pending to a stopped peer", 0);
	kill(s->pid[1], SIGKILL);
	tdead = now_ms();
	if (!dead_rma(s, ctx, left, false, "pending to a stopped peer", tdead))
		goto out;
	while (!s->gone[1] && now_ms() - tdead < (uint64_t)opt_wait_ms)
		progress(s);
	dead_rma(s, ctx + 2, left, true, "to a dead peer", now_ms());
out:
	if (left[0] || left[1])
		side_abort(s);	/* keep the windows until the close */
}

