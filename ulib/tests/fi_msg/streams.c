// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: windows, floods and the stress run; dead peers and
 * jobs.
 */
#include "fi_msg.h"

/* 10000 messages, 256 in flight; then a flood past -FI_EAGAIN, all arrive. */
void case_window(struct side *s)
{
	if (peer_serves(s))
		return;
	recv_stream(s, 1, &(struct batch){ B_WINDOW, 10000, 256 }, 1024, 256,
		    0, "window");
	if (!s->abort)
		recv_stream(s, 1, &(struct batch){ B_FLOOD, 20000, 20000 },
			    1024, 256, 0, "window: flood");
	stop_peers(s);
}

/* -n messages of -s sizes: once, in order, exact, within -T s (fault runs). */
void case_stress(struct side *s)
{
	struct batch b = { B_STRESS, opt_count, 64 };
	uint64_t t0 = now_ms(), ms;
	double bytes = 0;
	struct msgspec m;

	if (peer_serves(s))
		return;
	recv_stream(s, 1, &b, 64, 16, 0, "stress");
	ms = now_ms() - t0;
	for (uint32_t i = 0; i < b.n; i++) {
		batch_spec(&b, i, &m);
		bytes += m.len;
	}
	diag(s, "stress: %u messages, %.1f MB in %.2f s: %.0f msg/s, %.1f MB/s",
	     b.n, bytes / 1e6, ms / 1e3, b.n * 1e3 / (ms ? ms : 1),
	     bytes / 1e3 / (ms ? ms : 1));
	CHECK(s, ms <= (uint64_t)opt_stress_s * 1000,
	      "stress: done in %llu ms, within %d s", (unsigned long long)ms,
	      opt_stress_s);
	stop_peers(s);
}

/* Rank 0 and rank @r exchange @n messages each way. */
static bool talk(struct side *s, int r, int n, uint32_t round)
{
	for (int i = 0; i < n; i++) {
		struct msgspec m = { .api = API_TAGGED,
				     .len = i % 2 ? 70000 : 100, .tag = 0x7f65,
				     .seed = seed_of(0xe10 + round, i) };

		if (!recv_one(s, r, &m, m.len, 0) || !send_to_peer(s, r, &m))
			return false;
	}
	return true;
}

/* A peer dies: operations pending to it fail in 30 s, a third rank goes on. */
void case_deadpeer(struct side *s)
{
	static const char *const what[] = {
		"directed trecv from it", "directed recv from it",
		"1 MiB tsend to it", "64 B tsend to it",
	};
	struct fi_context2 *ctx = ctx_new(s, 4);
	struct msgspec w = { .api = API_TAGGED, .len = 64, .tag = 0x7f60,
			     .seed = seed_of(0xe00, 0) };
	bool left[4] = { true, true, true, true };
	uint64_t tdead, last = 0;
	struct gbuf b[4];
	struct comp c;
	ssize_t rc;

	if (peer_serves(s))
		return;
	s->may_die[1] = true;
	s->by_ctx = true;
	gbuf_alloc(&b[0], 4096);
	gbuf_alloc(&b[1], 4096);
	gbuf_alloc(&b[2], MIB);
	gbuf_alloc(&b[3], 64);
	if (!recv_one(s, 1, &w, w.len, 0) || !talk(s, 2, 1, 0) ||
	    !recv_into(s, API_TAGGED, &b[0], s->addr[1], 0x7f61, 0, &ctx[0],
		       "deadpeer") ||
	    !recv_into(s, 0, &b[1], s->addr[1], 0, 0, &ctx[1], "deadpeer"))
		goto out;
	RETRY(s, rc, fi_tsend(s->ep, b[2].p, MIB, NULL, s->addr[1], 0x7f62,
			      &ctx[2]));
	if (!MUST(s, rc, "deadpeer: 1 MiB tsend"))
		goto out;
	RETRY(s, rc, fi_tsend(s->ep, b[3].p, 64, NULL, s->addr[1], 0x7f63,
			      &ctx[3]));
	if (!MUST(s, rc, "deadpeer: 64 B tsend"))
		goto out;
	progress_for(s, 100);
	for (int i = 0; i < 4; i++) {
		if (cqq_take(i < 2 ? &s->rx : &s->tx, &ctx[i], &c)) {
			left[i] = false;
			diag(s, "deadpeer: %s completed before the death: %s",
			     what[i], fi_strerror(c.e.err));
		}
		if (i < 3)
			CHECK(s, left[i],
			      "deadpeer: %s pending before the death", what[i]);
	}

	step_to(s, 1, STEP_DIE, 0, NULL, 0);
	tdead = now_ms();
	while (!s->gone[1] && now_ms() - tdead < (uint64_t)opt_wait_ms)
		progress(s);
	tdead = now_ms();
	if (!talk(s, 2, 4, 1))	/* while the provider finds out */
		goto out;
	while ((left[0] || left[1] || left[2] || left[3]) &&
	       now_ms() < tdead + DEADPEER_MS) {
		progress(s);
		for (int i = 0; i < 4; i++) {
			struct want wt = {
				.ctx = &ctx[i], .err = i == 3 ? ANY_ERR : SOME_ERR,
				.flags = i == 0 ? FI_RECV | FI_TAGGED :
					 i == 1 ? FI_RECV | FI_MSG :
					 FI_SEND | FI_TAGGED,
			};

			if (!left[i] ||
			    !cqq_take(i < 2 ? &s->rx : &s->tx, &ctx[i], &c))
				continue;
			left[i] = false;
			last = c.at;
			diag(s, "deadpeer: %s: %s %llu ms after the death",
			     what[i], c.e.err ? fi_strerror(c.e.err) : "success",
			     (unsigned long long)(c.at - tdead));
			check_comp(s, &c, &wt, "deadpeer: %s: %s", what[i],
				   i == 3 ? "completed" : "error completion");
		}
	}
	for (int i = 0; i < 4; i++)
		CHECK(s, !left[i], "deadpeer: %s completed within %d s",
		      what[i], DEADPEER_MS / 1000);
	if (last)
		diag(s, "deadpeer: the last pending operation completed %llu ms after the death",
		     (unsigned long long)(last - tdead));
	w = (struct msgspec){ .api = API_TAGGED, .len = 100, .tag = 0x7f64,
			      .expect = EXPECT_FAIL, .wait_ms = DEADPEER_MS };
	send_checked(s, 1, &w);
	talk(s, 2, 4, 2);
out:
	stop_peers(s);
	if (left[0] || left[1] || left[2] || left[3])
		side_abort(s);	/* keep their buffers until the close */
	for (int i = 0; i < 4; i++)
		gbuf_free(s, &b[i]);
}

/* Other jobs (FI_OPX_UUID): the insert or first send fails, nothing arrives. */
void case_jobs(struct side *s)
{
	static const size_t lens[] = { 64, 70000 };
	int peer = s->rank ? 0 : 1;
	int rc;

	if (av_insert(s, peer, &rc))
		diag(s, "jobs: fi_av_insert of the other job's address accepted");
	else
		CHECK(s, true, "jobs: fi_av_insert of the other job's address refused: %d",
		      rc);
	if (peer_serves(s))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(lens) && !s->abort; i++) {
		struct msgspec m = { .api = API_TAGGED, .len = lens[i],
				     .tag = 0x7f50 + i,
				     .seed = seed_of(0xf00, i),
				     .expect = EXPECT_FAIL };

		quiet_peer(s, 1, &m, JOBS_QUIET_MS);
		if (!s->abort)
			quiet_recv(s, 1, &m, JOBS_QUIET_MS);
	}
	stop_peers(s);
}

