// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: fi_poll, a sleeping waiter, FI_PROGRESS_AUTO.
 */
#include "fi_msg.h"

#define SLEEP_MS	2000	/* the sleep case blocks this long */
#define SLEEP_CPU_PCT	5	/* at most this much of a core meanwhile */
#define WAKE_MS		50	/* wake latency bound, x FI_MSG_TEST_TIME_SCALE */
#define AUTO_LEN	(4 * MIB)

/* User and system CPU time of the whole process, every thread. */
static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Time bounds are multiplied by $FI_MSG_TEST_TIME_SCALE (1; TCG: 4). */
static unsigned int time_scale(void)
{
	const char *v = getenv("FI_MSG_TEST_TIME_SCALE");
	unsigned int k = v ? (unsigned int)strtoul(v, NULL, 0) : 1;

	return k ? k : 1;
}

static int poll_for(struct fid_poll *ps, void *const *want, int n,
		    uint32_t *found, void **other)
{
	uint64_t end = now_ms() + opt_wait_ms;
	int rc = 0;

	*found = 0;
	*other = NULL;
	do {
		void *got[8];

		rc = fi_poll(ps, got, 8);
		for (int i = 0; i < rc; i++) {
			int j;

			for (j = 0; j < n && got[i] != want[j]; j++)
				;
			if (j < n)
				*found |= 1u << j;
			else
				*other = got[i];
		}
	} while (rc >= 0 && *found != (1u << n) - 1 && now_ms() < end);
	return rc < 0 ? rc : 0;
}

/*
 * Poll sets (fi_poll(3)): the CQs and counters of the endpoint in one
 * set; fi_poll names none while nothing happens, then the receive CQ
 * and receive counter once a message comes (and not the transmit side),
 * none again once the completion is read and the counter unchanged;
 * fi_poll_del of each, then fi_close of the set.
 */
void case_poll(struct side *s)
{
	struct fi_poll_attr attr = { 0 };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct fid_poll *ps = NULL;
	struct fid *fids[4] = { &s->rx.cq->fid, &s->tx.cq->fid,
				&s->rcntr->fid, &s->scntr->fid };
	void *want[2] = { s->rx.cq->fid.context, s->rcntr->fid.context };
	void *got[4], *other;
	struct gbuf b;
	struct comp c;
	uint32_t found;
	int rc;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	gbuf_alloc(&b, WAIT_MSG_LEN);
	if (!MUST(s, fi_poll_open(s->domain, &attr, &ps),
		  "poll: fi_poll_open"))
		goto out;
	for (int i = 0; i < 4; i++)
		if (!MUST(s, fi_poll_add(ps, fids[i], 0), "poll: fi_poll_add %d",
			  i))
			goto out;
	progress_for(s, SETTLE_MS);
	rc = fi_poll(ps, got, 4);
	CHECK_EQ(s, rc, 0, "poll: fi_poll with nothing happened: 0");
	if (!wait_recv(s, &b, 0x7c00, &ctx[0]))
		goto out;
	ask_send(s, 0, 0x7c00);
	rc = poll_for(ps, want, 2, &found, &other);
	CHECK(s, !rc && found == 3 && !other,
	      "poll: a message comes: fi_poll names the receive CQ and counter, nothing else (rc %d, found %#x, other %p)",
	      rc, found, other);
	if (!cq_wait(s, &s->rx, &ctx[0], &c, opt_wait_ms, "poll") ||
	    !ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;
	CHECK_EQ(s, c.e.err, 0, "poll: the message is received");
	rc = fi_poll(ps, got, 4);
	CHECK_EQ(s, rc, 0, "poll: once read, fi_poll names nothing: 0");
	for (int i = 0; i < 4; i++)
		CHECK_EQ(s, fi_poll_del(ps, fids[i], 0), 0,
			 "poll: fi_poll_del %d", i);
out:
	if (ps)
		CHECK_EQ(s, fi_close(&ps->fid), 0, "poll: fi_close of the set");
	gbuf_free(s, &b);
	stop_peers(s);
}

/*
 * Sleeping: a process blocked SLEEP_MS in fi_cq_sread uses under
 * SLEEP_CPU_PCT% of a core and wakes within WAKE_MS of the message's
 * sending (then five more wakes, 100 ms apart, for the latency).
 */
void case_sleep(struct side *s)
{
	enum { WAKES = 6 };
	struct fi_context2 *ctx = ctx_new(s, WAKES);
	unsigned int bound = WAKE_MS * time_scale();
	uint64_t lat[WAKES], lmax = 0, t0, t1, c0, c1;
	struct fi_cq_tagged_entry e;
	struct ctl_msg m;
	struct gbuf b;
	ssize_t rc;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	gbuf_alloc(&b, WAIT_MSG_LEN);
	for (int i = 0; i < WAKES; i++) {
		uint32_t delay = i ? 100 : SLEEP_MS;

		if (!wait_recv(s, &b, 0x7c00 + i, &ctx[i]))
			goto out;
		ask_send(s, delay, 0x7c00 + i);
		c0 = cpu_us();
		t0 = now_us();
		rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms + SLEEP_MS);
		t1 = now_us();
		c1 = cpu_us();
		if (!CHECK(s, rc == 1 && e.op_context == &ctx[i],
			   "sleep: fi_cq_sread %d returned the message (%zd)",
			   i, rc) ||
		    !ctl_wait(s, 1, STEP_SENT, &m))
			goto out;
		lat[i] = t1 > m.a ? t1 - m.a : 0;
		if (lat[i] > lmax)
			lmax = lat[i];
		if (i)
			continue;
		diag(s, "sleep: blocked %llu ms in fi_cq_sread, %llu us of CPU: %.2f%% of a core",
		     (unsigned long long)(t1 - t0) / 1000,
		     (unsigned long long)(c1 - c0),
		     100.0 * (double)(c1 - c0) / (double)(t1 - t0));
		CHECK(s, t1 - t0 >= SLEEP_MS * 900ull,
		      "sleep: fi_cq_sread blocked until the message (%llu ms)",
		      (unsigned long long)(t1 - t0) / 1000);
		CHECK(s, (c1 - c0) * 100 < (t1 - t0) * SLEEP_CPU_PCT,
		      "sleep: under %d%% of a core while blocked", SLEEP_CPU_PCT);
	}
	diag(s, "sleep: wake latency (send to fi_cq_sread's return): first %llu us, max %llu us over %d wakes",
	     (unsigned long long)lat[0], (unsigned long long)lmax, WAKES);
	CHECK(s, lmax < bound * 1000ull,
	      "sleep: every wake within %u ms of the send", bound);
out:
	stop_peers(s);
	gbuf_free(s, &b);
}

/*
 * FI_PROGRESS_AUTO: a 4 MiB rendezvous completes while the receiver
 * sleeps in nanosleep and never calls libfabric: its first fi_cq_read
 * afterwards finds the completion and the data; an idle process with a
 * progress thread uses little CPU.
 */
void case_auto(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct fi_cq_tagged_entry e;
	uint64_t t0, c0, c1;
	struct gbuf b;
	struct comp c;
	ssize_t rc;

	gbuf_alloc(&b, AUTO_LEN);
	if (s->rank) {
		pat_fill(b.p, AUTO_LEN, seed_of(0xa00, 0xa0), 0);
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			goto out;
		t0 = now_ms();
		RETRY(s, rc, fi_tsend(s->ep, b.p, AUTO_LEN, NULL, s->addr[0],
				      0xa0, ctx));
		if (!MUST(s, rc, "auto: 4 MiB tsend") ||
		    !cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, "auto"))
			goto out;
		CHECK_EQ(s, c.e.err, 0,
			 "auto: the 4 MiB send completes while the receiver sleeps");
		diag(s, "auto: the 4 MiB send completed in %llu ms",
		     (unsigned long long)(now_ms() - t0));
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		/* idle, with the progress thread running */
		c0 = cpu_us();
		t0 = now_us();
		sleep(1);
		c1 = cpu_us();
		diag(s, "auto: idle 1 s with a progress thread: %llu us of CPU (%.2f%% of a core)",
		     (unsigned long long)(c1 - c0),
		     100.0 * (double)(c1 - c0) / (double)(now_us() - t0));
		CHECK(s, (c1 - c0) * 100 < (now_us() - t0) * SLEEP_CPU_PCT,
		      "auto: an idle process uses under %d%% of a core",
		      SLEEP_CPU_PCT);
		goto out;
	}
	if (!wait_recv(s, &b, 0xa0, &ctx[0]))
		goto out;
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	/* no libfabric call until the sender has its completion */
	if (!ctl_wait_ms(s, 1, STEP_DONE, NULL, opt_wait_ms, false))
		goto out;
	rc = fi_cq_read(s->rx.cq, &e, 1);
	CHECK(s, rc == 1 && e.op_context == &ctx[0] && e.len == AUTO_LEN,
	      "auto: the first fi_cq_read finds the 4 MiB receive complete (%zd)",
	      rc);
	if (rc == 1)
		check_data(s, &b, 1, seed_of(0xa00, 0xa0), AUTO_LEN,
			   "auto: 4 MiB data");
out:
	gbuf_free(s, &b);
}

