// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: counters, wait objects, fi_cq_signal.
 */
#include "fi_msg.h"

#define WAIT_DELAY_MS	200	/* the peer sends this long after POSTED */

uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * A peer's part in the waiting cases: for every POSTED (a: a delay in
 * ms), wait that long without touching the endpoint, send WAIT_MSG_LEN
 * bytes tagged a >> 32, tell SENT (a: when, in us) and reap the send
 * completion.
 */
void peer_delayed_sends(struct side *s)
{
	struct ctl_msg m;

	while (ctl_wait_ms(s, 0, STEP_ANY, &m, -1, true)) {
		uint64_t tag = m.a >> 32, t;
		struct fi_context2 *ctx = ctx_new(s, 1);
		struct gbuf b;
		struct comp c;
		ssize_t rc;

		if (m.step == STEP_STOP)
			return;
		if (m.step != STEP_POSTED) {
			CHECK(s, false,
			      "%s: protocol: unexpected step %u", s->tc->name,
			      m.step);
			side_abort(s);
			return;
		}
		gbuf_alloc(&b, WAIT_MSG_LEN);
		usleep((useconds_t)(m.a & 0xffffffff) * 1000);
		t = now_us();
		RETRY(s, rc, fi_tsend(s->ep, b.p, WAIT_MSG_LEN, NULL,
				      s->addr[0], tag, ctx));
		if (MUST(s, rc, "%s: send", s->tc->name)) {
			step_to(s, 0, STEP_SENT, t, NULL, 0);
			if (cq_wait(s, &s->tx, ctx, &c, opt_wait_ms,
				    s->tc->name))
				CHECK_EQ(s, c.e.err, 0, "%s: send completed",
					 s->tc->name);
		}
		gbuf_free(s, &b);
	}
}

/* Rank 0: have rank 1 send a message tagged @tag after @delay_ms. */
void ask_send(struct side *s, uint32_t delay_ms, uint64_t tag)
{
	step_to(s, 1, STEP_POSTED, tag << 32 | delay_ms, NULL, 0);
}

/*
 * Counters: every send and receive counts, injects and sends without a
 * CQ entry (FI_SELECTIVE_COMPLETION) too; a cancelled receive does not
 * (on kfab_* it counts as an error); fi_cntr_wait sleeps until the other
 * process's messages come; add, set, adderr, seterr; a wait that times
 * out.
 */
void case_cntr(struct side *s)
{
	static const struct msgspec ms[] = {
		{ .len = 100 },
		{ .api = API_INJECT, .len = 16 },
		{ .api = API_TAGGED, .len = 70000, .tag = 0x7a00 },
		{ .api = API_MSG, .len = 200, .flags = FI_COMPLETION },
	};
	enum { N = ARRAY_SIZE(ms) };
	struct fi_context2 *ctx = ctx_new(s, N + 1);
	struct gbuf b[N + 1];
	struct comp c;
	uint64_t t0, e0;
	int rc;

	for (int i = 0; i <= N; i++)
		gbuf_alloc(&b[i], 70000);
	if (s->rank) {
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			goto out;
		usleep(WAIT_DELAY_MS * 1000);	/* rank 0 sleeps meanwhile */
		for (int i = 0; i < N; i++) {
			struct iovec iov = { b[i].p, ms[i].len };
			ssize_t r;

			RETRY(s, r, post_send(s, 0, &ms[i], &iov, 1, &ctx[i]));
			if (!MUST(s, r, "cntr: send %d", i))
				goto out;
		}
		rc = fi_cntr_wait(s->scntr, N, opt_wait_ms);
		CHECK_EQ(s, rc, 0, "cntr: fi_cntr_wait(send counter, %d)", N);
		CHECK_EQ(s, fi_cntr_read(s->scntr), N,
			 "cntr: every send counted, inject and the ones without a CQ entry too");
		CHECK_EQ(s, fi_cntr_readerr(s->scntr), 0,
			 "cntr: no send error counted");
		progress_for(s, QUIET_MS);
		CHECK(s, cqq_take(&s->tx, &ctx[N - 1], &c) && !s->tx.n,
		      "cntr: one CQ entry, for the FI_COMPLETION send");
		s->tx.n = 0;	/* reported */
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		ctl_wait(s, 0, STEP_DONE, NULL);
		goto out;
	}
	if (!recv_into(s, 0, &b[N], FI_ADDR_UNSPEC, 0, 0, &ctx[N], "cntr"))
		goto out;
	cancel_recv(s, &ctx[N], 0, "cntr");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), 0,
		 "cntr: a cancelled receive does not count as completed");
	/* fi_cntr(3): an error "may" count; kfab_* counts it */
	e0 = fi_cntr_readerr(s->rcntr);
	if (!strncmp(opt_prov, "kfab_", 5))
		CHECK_EQ(s, e0, 1,
			 "cntr: a cancelled receive counts as an error");
	else
		diag(s, "cntr: %s counts a cancelled receive as %llu error(s)",
		     opt_prov, (unsigned long long)e0);
	for (int i = 0; i < N; i++)
		if (!recv_into(s, ms[i].api & API_TAGGED, &b[i],
			       FI_ADDR_UNSPEC, ms[i].tag, 0, &ctx[i], "cntr"))
			goto out;
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	t0 = now_ms();
	rc = fi_cntr_wait(s->rcntr, N, opt_wait_ms);
	CHECK_EQ(s, rc, 0, "cntr: fi_cntr_wait(receive counter, %d) wakes for the other process's sends",
		 N);
	diag(s, "cntr: fi_cntr_wait returned after %llu ms (the peer sends after %d ms)",
	     (unsigned long long)(now_ms() - t0), WAIT_DELAY_MS);
	CHECK_EQ(s, fi_cntr_read(s->rcntr), N, "cntr: every receive counted");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), e0, "cntr: errors unchanged");
	for (int i = 0; i < N; i++)
		if (cq_wait(s, &s->rx, &ctx[i], &c, opt_wait_ms, "cntr"))
			CHECK_EQ(s, c.e.err, 0, "cntr: receive %d completed", i);
	CHECK_EQ(s, fi_cntr_add(s->rcntr, 10), 0, "cntr: fi_cntr_add");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), N + 10, "cntr: value after add");
	CHECK_EQ(s, fi_cntr_set(s->rcntr, 3), 0, "cntr: fi_cntr_set");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), 3, "cntr: value after set");
	CHECK_EQ(s, fi_cntr_adderr(s->rcntr, 2), 0, "cntr: fi_cntr_adderr");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), e0 + 2,
		 "cntr: errors after adderr");
	CHECK_EQ(s, fi_cntr_seterr(s->rcntr, 0), 0, "cntr: fi_cntr_seterr");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), 0, "cntr: errors after seterr");
	if (!known_gap("cntr/wait-timeout")) {
		t0 = now_ms();
		rc = fi_cntr_wait(s->rcntr, 1000, 100);
		CHECK(s, rc == -FI_ETIMEDOUT && now_ms() - t0 >= 90,
		      "cntr: fi_cntr_wait for what never comes: -FI_ETIMEDOUT after 100 ms (%d, %llu ms)",
		      rc, (unsigned long long)(now_ms() - t0));
	}
	ctl_wait(s, 1, STEP_DONE, NULL);
	step_to(s, 1, STEP_DONE, 0, NULL, 0);
out:
	for (int i = 0; i <= N; i++)
		gbuf_free(s, &b[i]);
}

struct sread_arg {
	struct fid_cq *cq;
	ssize_t rc;
	uint64_t end;		/* now_ms() when fi_cq_sread returned */
};

static void *sread_thread(void *arg)
{
	struct sread_arg *a = arg;
	struct fi_cq_tagged_entry e;

	a->rc = fi_cq_sread(a->cq, &e, 1, NULL, 5000);
	a->end = now_ms();
	return NULL;
}

/* One receive of WAIT_MSG_LEN bytes with @tag into @b, posted. */
bool wait_recv(struct side *s, struct gbuf *b, uint64_t tag,
	       void *ctx)
{
	return recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, tag, 0, ctx,
			 s->tc->name);
}

/*
 * FI_WAIT_FD CQs: the fd of FI_GETWAIT, after fi_trywait said 0, polls
 * readable when the other process sends; fi_cq_sread times out with
 * -FI_EAGAIN and returns the completion that comes; fi_cq_signal wakes an
 * fi_cq_sread of another thread; fi_trywait says -FI_EAGAIN while
 * something is there to read.
 */
void case_waitfd(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct fi_cq_tagged_entry e;
	struct fid *fids[1];
	struct sread_arg sa;
	struct pollfd pfd;
	struct gbuf b[3];
	pthread_t th;
	uint64_t t0;
	ssize_t rc;
	int fd = -1, n;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	fids[0] = &s->rx.cq->fid;
	for (int i = 0; i < 3; i++)
		gbuf_alloc(&b[i], WAIT_MSG_LEN);
	if (!MUST(s, fi_control(&s->rx.cq->fid, FI_GETWAIT, &fd),
		  "waitfd: fi_control(FI_GETWAIT)"))
		goto out;
	CHECK(s, fd >= 0, "waitfd: FI_GETWAIT gives an fd (%d)", fd);

	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, 100);
	CHECK(s, rc == -FI_EAGAIN && now_ms() - t0 >= 90,
	      "waitfd: fi_cq_sread(100 ms) with nothing: -FI_EAGAIN after 100 ms (%zd after %llu ms)",
	      rc, (unsigned long long)(now_ms() - t0));

	/* poll() on the fd */
	if (!wait_recv(s, &b[0], 0x7b00, &ctx[0]))
		goto out;
	t0 = now_ms() + 1000;
	while ((rc = fi_trywait(s->fabric, fids, 1)) == -FI_EAGAIN &&
	       now_ms() < t0)
		fi_cq_read(s->rx.cq, NULL, 0);
	CHECK_EQ(s, rc, 0, "waitfd: fi_trywait with nothing pending");
	ask_send(s, WAIT_DELAY_MS, 0x7b00);
	t0 = now_ms();
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	n = poll(&pfd, 1, opt_wait_ms);
	CHECK(s, n == 1 && now_ms() - t0 >= WAIT_DELAY_MS / 2,
	      "waitfd: poll() on the fd slept, then woke for the message (%d after %llu ms)",
	      n, (unsigned long long)(now_ms() - t0));
	diag(s, "waitfd: poll() woke after %llu ms; the peer sent after %d ms",
	     (unsigned long long)(now_ms() - t0), WAIT_DELAY_MS);
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[0],
	      "waitfd: then its completion is read (%zd)", rc);
	if (!ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;

	/* fi_cq_sread() sleeps until the message */
	if (!wait_recv(s, &b[1], 0x7b01, &ctx[1]))
		goto out;
	ask_send(s, WAIT_DELAY_MS, 0x7b01);
	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[1] &&
	      now_ms() - t0 >= WAIT_DELAY_MS / 2,
	      "waitfd: fi_cq_sread returns the completion that comes (%zd after %llu ms)",
	      rc, (unsigned long long)(now_ms() - t0));
	if (!ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;

	/* fi_cq_signal() */
	sa = (struct sread_arg){ .cq = s->rx.cq };
	if (!MUST(s, pthread_create(&th, NULL, sread_thread, &sa),
		  "waitfd: pthread_create"))
		goto out;
	usleep(100000);
	t0 = now_ms();
	CHECK_EQ(s, fi_cq_signal(s->rx.cq), 0, "waitfd: fi_cq_signal");
	pthread_join(th, NULL);
	/* woken by the signal: not before it, long before its 5 s */
	CHECK(s, sa.rc == -FI_EAGAIN && sa.end >= t0 && sa.end - t0 < 2000,
	      "waitfd: fi_cq_signal wakes fi_cq_sread(5 s) of another thread: -FI_EAGAIN (%zd, %lld ms after the signal)",
	      sa.rc, (long long)(sa.end - t0));

	/* fi_trywait() with a message in the queue */
	if (!wait_recv(s, &b[2], 0x7b02, &ctx[2]))
		goto out;
	ask_send(s, 0, 0x7b02);
	if (!ctl_wait_ms(s, 1, STEP_SENT, NULL, opt_wait_ms, false))
		goto out;
	usleep(100000);
	rc = fi_trywait(s->fabric, fids, 1);
	CHECK_EQ(s, rc, -FI_EAGAIN,
		 "waitfd: fi_trywait with a message there: -FI_EAGAIN");
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[2],
	      "waitfd: and the completion is read (%zd)", rc);
out:
	stop_peers(s);
	for (int i = 0; i < 3; i++)
		gbuf_free(s, &b[i]);
}

/*
 * fi_cq_signal() on an FI_WAIT_UNSPEC CQ (fi_cq(3)) with no thread in
 * fi_cq_sread yet: the next fi_cq_sread(SIGNAL_SREAD_MS) with nothing to
 * read returns at once, -FI_EAGAIN or -FI_ECANCELED.
 */
#define SIGNAL_SREAD_MS	2000

void case_signal(struct side *s)
{
	struct fi_cq_tagged_entry e;
	uint64_t t0, ms;
	ssize_t rc;

	if (s->rank)
		return;
	CHECK_EQ(s, fi_cq_signal(s->rx.cq), 0, "signal: fi_cq_signal");
	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, SIGNAL_SREAD_MS);
	ms = now_ms() - t0;
	CHECK(s, (rc == -FI_EAGAIN || rc == -FI_ECANCELED) &&
	      ms < SIGNAL_SREAD_MS / 2,
	      "signal: then fi_cq_sread(%d ms) returns at once: -FI_EAGAIN or -FI_ECANCELED (%zd after %llu ms)",
	      SIGNAL_SREAD_MS, rc, (unsigned long long)ms);
}

/* fi_poll until it has named each of @want (all of @n found): the rest. */
