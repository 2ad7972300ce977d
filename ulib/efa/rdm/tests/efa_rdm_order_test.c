// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_order_test: streams of numbered messages through kfab_efa's
 * FI_EP_RDM endpoint on a device that refuses and reorders packets
 * (efa_rdm_node.h: two endpoints in one process on a private shm
 * directory).
 *
 *   rnr          injected receiver-not-ready with FI_OPT_EFA_RNR_RETRY 0:
 *                backoff within FI_EFA_TIMEOUT_INTERVAL..MAX_TIMEOUT
 *   reorder      a reordering device: in order; FI_EFA_RECVWIN_SIZE=1:
 *                FI_EOVERFLOW at both ends, nothing else lost
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_order_test
 */
#define _GNU_SOURCE
#include "efa_rdm_node.h"

/* ------------------------------------------------------------------ */
/* a stream of numbered messages a->b, a window of each in flight */

#define WIN		16
#define SLOT		(256UL << 10)

struct stream {
	uint32_t count;
	size_t (*size)(uint32_t i);
	uint64_t flags;			/* fi_sendmsg's */
	/* results */
	uint32_t recvd, rerr, sdone, serr;
	bool data, order;
	uint8_t *lost;			/* by number: the send failed */
	uint8_t *got;			/* by number: arrived */
	int64_t *by_post;		/* by receive posted: the number in it */
	uint32_t rerr_overflow;		/* receive errors FI_EOVERFLOW naming
					 * FI_EFA_RECVWIN_SIZE */
	uint32_t serr_overflow;
	bool timeout;
};

static int stream_run(struct node *a, struct node *b, struct stream *s)
{
	void *sslot_msg[WIN];
	uint32_t rpost[WIN];
	bool rfree[WIN];
	uint32_t nsent = 0, nposted = 0;
	int64_t last = -1;
	uint64_t end = xp_ms() + 3 * TIMEOUT_MS;
	struct comp c;

	s->data = s->order = true;
	s->lost = calloc(s->count, 1);
	s->got = calloc(s->count, 1);
	s->by_post = malloc(s->count * sizeof(*s->by_post));
	if (!s->lost || !s->got || !s->by_post)
		return -1;
	for (uint32_t i = 0; i < s->count; i++)
		s->by_post[i] = -1;
	for (int i = 0; i < WIN; i++) {
		sslot_msg[i] = NULL;
		rfree[i] = true;
	}
	while (s->sdone < s->count || s->recvd + s->rerr < s->count) {
		if (xp_ms() > end) {
			s->timeout = true;
			tap_diag("stream: sent %u, done %u (%u failed), received %u, %u receive errors",
				 nsent, s->sdone, s->serr, s->recvd, s->rerr);
			return -1;
		}
		for (int i = 0; i < WIN && nposted < s->count; i++) {
			if (!rfree[i])
				continue;
			if (fi_recv(b->obj.ep, rbuf + i * SLOT, SLOT, NULL,
				    FI_ADDR_UNSPEC, (void *)(uintptr_t)(i + 1)))
				break;
			rfree[i] = false;
			rpost[i] = nposted++;
		}
		for (int i = 0; i < WIN && nsent < s->count; i++) {
			uint8_t *p = sbuf + i * SLOT;
			size_t len = s->size(nsent);
			struct iovec iov = { p, len };
			struct fi_msg m = {
				.msg_iov = &iov,
				.iov_count = 1,
				.addr = a->peer,
				.context = (void *)(uintptr_t)(i + 1),
			};
			ssize_t ret;

			if (sslot_msg[i])
				continue;
			msg_fill(p, len, nsent);
			ret = fi_sendmsg(a->obj.ep, &m, s->flags);
			if (ret == -FI_EAGAIN)
				break;
			if (ret) {
				tap_diag("fi_sendmsg: %s",
					 fi_strerror((int)-ret));
				return -1;
			}
			sslot_msg[i] = (void *)(uintptr_t)(nsent + 1);
			nsent++;
		}
		pump(a);
		pump(b);
		while (take(a, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			uint32_t num;

			if (slot >= WIN || !sslot_msg[slot]) {
				tap_diag("send completion of context %p",
					 c.ctx);
				return -1;
			}
			num = (uint32_t)((uintptr_t)sslot_msg[slot] - 1);
			sslot_msg[slot] = NULL;
			s->sdone++;
			if (c.err) {
				s->serr++;
				s->lost[num] = 1;
				if (c.err == FI_EOVERFLOW &&
				    strstr(c.why, "FI_EFA_RECVWIN_SIZE"))
					s->serr_overflow++;
				else
					tap_diag("send %u failed: %d %s", num,
						 c.err, c.why);
			}
		}
		while (take(b, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			int64_t seq;

			if (c.err) {
				s->rerr++;
				if (c.err == FI_EOVERFLOW && !c.ctx &&
				    strstr(c.why, "FI_EFA_RECVWIN_SIZE"))
					s->rerr_overflow++;
				else
					tap_diag("receive error %d (%s) ctx %p",
						 c.err, c.why, c.ctx);
				if (slot < WIN)
					rfree[slot] = true;
				continue;
			}
			if (slot >= WIN) {
				tap_diag("receive completion of context %p",
					 c.ctx);
				return -1;
			}
			seq = msg_check(rbuf + slot * SLOT, c.len);
			rfree[slot] = true;
			s->recvd++;
			if (seq < 0 || seq >= s->count ||
			    c.len != s->size((uint32_t)seq)) {
				s->data = false;
				continue;
			}
			if (s->got[seq])
				s->order = false;
			s->got[seq] = 1;
			s->by_post[rpost[slot]] = seq;
		}
	}
	/*
	 * FI_ORDER_SAS: the receives take the messages in the order sent
	 * (completions need not come in that order: a medium message
	 * completes after the eager one behind it).
	 */
	for (uint32_t i = 0; i < s->recvd; i++) {
		if (s->by_post[i] <= last) {
			tap_diag("receive %u posted took message %lld after message %lld",
				 i, (long long)s->by_post[i], (long long)last);
			s->order = false;
			break;
		}
		last = s->by_post[i];
	}
	return 0;
}

static void stream_free(struct stream *s)
{
	free(s->lost);
	free(s->got);
	free(s->by_post);
}

/* Every message arrived, or failed at the sender: not both, not neither. */
static bool stream_accounted(const struct stream *s)
{
	for (uint32_t i = 0; i < s->count; i++) {
		if (s->got[i] == s->lost[i]) {
			tap_diag("message %u: arrived %u, send failed %u", i,
				 s->got[i], s->lost[i]);
			return false;
		}
	}
	return true;
}

/* The points of a stream that ran (@ok, @what): all of it, once, intact. */
static void stream_checks(const struct stream *s, bool ok, const char *what)
{
	TAP_OK(ok, "%s", what);
	TAP_EQ(s->recvd, s->count, "every message arrives");
	TAP_OK(s->data, "byte-exact");
	TAP_OK(s->order, "in order, once");
	TAP_EQ(s->serr + s->rerr, 0, "no errors");
}

/* ------------------------------------------------------------------ */
/* RNR backoff */

static size_t rnr_size(uint32_t i)
{
	static const size_t base[] = { 100, 20000, 200000, 4000, 60000 };

	return base[i % 5] + i % 97;
}

static void case_rnr(void)
{
	struct fi_kfab_efa_ep_stats sa, sb;
	struct stream s = { .count = 500, .size = rnr_size };
	struct node a = { 0 }, b = { 0 };
	uint64_t t0;
	bool ok;

	tap_diag("---- RNR backoff (rnr_inject_ppm 300000, FI_OPT_EFA_RNR_RETRY 0)");
	setenv("FI_EFA_TIMEOUT_INTERVAL", "100", 1);
	setenv("FI_EFA_MAX_TIMEOUT", "2000", 1);
	ok = !node_open(&a, false, false) && !node_open(&b, false, false);
	unsetenv("FI_EFA_TIMEOUT_INTERVAL");
	unsetenv("FI_EFA_MAX_TIMEOUT");
	if (!TAP_OK(ok, "two endpoints with FI_EFA_TIMEOUT_INTERVAL=100, FI_EFA_MAX_TIMEOUT=2000"))
		goto out;
	TAP_EQ(set_sz(&a, FI_OPT_EFA_RNR_RETRY, 0), 0,
	       "sender: FI_OPT_EFA_RNR_RETRY 0");
	TAP_EQ(set_sz(&b, FI_OPT_EFA_RNR_RETRY, 7), 0,
	       "receiver: FI_OPT_EFA_RNR_RETRY 7 (forever)");
	if (!TAP_OK(!node_enable(&a) && !node_enable(&b) && !connect2(&a, &b),
		    "enabled, connected"))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_RNR_INJECT_PPM, 300000), 0,
		    "efa0 rnr_inject_ppm 300000"))
		goto out;
	t0 = xp_ms();
	ok = !stream_run(&a, &b, &s);
	tap_diag("500 messages in %llu ms",
		 (unsigned long long)(xp_ms() - t0));
	TAP_EQ(set_knob(KFAB_EFA_KNOB_RNR_INJECT_PPM, 0), 0,
	       "efa0 rnr_inject_ppm restored");
	stream_checks(&s, ok,
		      "500 messages of mixed sizes (eager, medium, longcts) under RNR");
	stats(&a, &sa);
	stats(&b, &sb);
	tap_diag("sender: rnr_events %llu, backoff max %llu us, rnr_retries %llu, pkts_queued %llu; receiver: rnr_events %llu, rnr_retries %llu, pkts_queued %llu",
		 (unsigned long long)sa.rnr_events,
		 (unsigned long long)sa.rnr_backoff_max_usec,
		 (unsigned long long)sa.rnr_retries,
		 (unsigned long long)sa.pkts_queued,
		 (unsigned long long)sb.rnr_events,
		 (unsigned long long)sb.rnr_retries,
		 (unsigned long long)sb.pkts_queued);
	TAP_OK(sa.rnr_events > 0, "sender: rnr_events %llu",
	       (unsigned long long)sa.rnr_events);
	TAP_OK(sa.rnr_backoff_max_usec >= 100 &&
	       sa.rnr_backoff_max_usec <= 2000,
	       "sender: longest backoff %llu us within FI_EFA_TIMEOUT_INTERVAL..FI_EFA_MAX_TIMEOUT",
	       (unsigned long long)sa.rnr_backoff_max_usec);
	TAP_EQ(sa.rnr_retries, 0,
	       "sender: no device retries with FI_OPT_EFA_RNR_RETRY 0");
	TAP_EQ(sb.rnr_events, 0,
	       "receiver (rnr_retry 7): never backs off");
	TAP_OK(sa.pkts_queued + sb.pkts_queued + sb.rnr_retries > 0,
	       "refused packets queued or retried");
out:
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* reordering, the reorder window */

static size_t small_size(uint32_t i)
{
	return 64 + (i * 131) % 4033;
}

static void case_reorder(void)
{
	struct fi_kfab_efa_ep_stats sb;
	struct stream s = { .count = 2000, .size = small_size };
	struct node a = { 0 }, b = { 0 };
	bool ok;

	tap_diag("---- reorder (reorder_ppm 300000)");
	if (!TAP_EQ(pair_open(&a, &b), 0, "two endpoints"))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 300000), 0,
		    "efa0 reorder_ppm 300000"))
		goto out;
	ok = !stream_run(&a, &b, &s);
	stream_checks(&s, ok, "2000 messages through a reordering device");
	stats(&b, &sb);
	TAP_OK(sb.ooo_pkts > 0, "receiver: ooo_pkts %llu",
	       (unsigned long long)sb.ooo_pkts);
	TAP_EQ(sb.recvwin_overflows, 0, "receiver: no window overflow");
out:
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/*
 * The receiver's window of one message against a device holding packets
 * back: messages beyond it fail at the receiver (FI_EOVERFLOW, no
 * context) and at the sender when its send still waits for an answer
 * (FI_DELIVERY_COMPLETE, longcts); every other message arrives.
 */
static void recvwin_run(uint64_t flags, size_t (*size)(uint32_t i),
			const char *cfg)
{
	struct fi_kfab_efa_ep_stats sb;
	struct stream s = { .count = 3000, .size = size, .flags = flags };
	struct node a = { 0 }, b = { 0 };
	uint32_t bad = 0;
	bool ok;

	tap_diag("---- FI_EFA_RECVWIN_SIZE=1 at the receiver (reorder_ppm 500000), %s",
		 cfg);
	ok = !node_open(&a, false, false);
	setenv("FI_EFA_RECVWIN_SIZE", "1", 1);
	ok = !node_open(&b, false, false) && ok;
	unsetenv("FI_EFA_RECVWIN_SIZE");
	if (!TAP_OK(ok && !node_enable(&a) && !node_enable(&b) &&
		    !connect2(&a, &b), "%s: two endpoints, the receiver's window 1",
		    cfg))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 500000), 0,
		    "efa0 reorder_ppm 500000"))
		goto out;
	ok = !stream_run(&a, &b, &s);
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	TAP_OK(ok, "%s: %u messages: nothing hangs", cfg, s.count);
	stats(&b, &sb);
	tap_diag("received %u, receive errors %u (FI_EOVERFLOW %u), sends failed %u (FI_EOVERFLOW %u), recvwin_overflows %llu",
		 s.recvd, s.rerr, s.rerr_overflow, s.serr, s.serr_overflow,
		 (unsigned long long)sb.recvwin_overflows);
	if (!s.rerr && !s.serr && !sb.recvwin_overflows && ok) {
		tap_skip("%s: no message went beyond a window of 1 in %u messages: the device's hold-back never provoked an overflow",
			 cfg, s.count);
		goto out;
	}
	TAP_OK(s.rerr > 0 && s.rerr == s.rerr_overflow,
	       "%s: receiver: error completions FI_EOVERFLOW naming FI_EFA_RECVWIN_SIZE (%u of %u)",
	       cfg, s.rerr_overflow, s.rerr);
	TAP_OK(s.serr == s.serr_overflow,
	       "%s: sender: every failed send FI_EOVERFLOW naming FI_EFA_RECVWIN_SIZE (%u of %u)",
	       cfg, s.serr_overflow, s.serr);
	if (flags & FI_DELIVERY_COMPLETE)
		TAP_EQ(s.serr, s.rerr,
		       "%s: one failed send per receive error", cfg);
	else
		TAP_OK(s.serr > 0 && s.serr < s.rerr,
		       "%s: some sends still waiting failed (%u longcts), fewer than the receive errors (%u)",
		       cfg, s.serr, s.rerr);
	TAP_EQ(sb.recvwin_overflows, s.rerr,
	       "%s: receiver: recvwin_overflows counts them", cfg);
	TAP_EQ(s.recvd + s.rerr, s.count,
	       "%s: every other message arrives", cfg);
	TAP_OK(s.data, "%s: what arrived is byte-exact", cfg);
	TAP_OK(s.order, "%s: in order, once", cfg);
	for (uint32_t i = 0; i < s.count; i++)
		if (s.lost[i] && s.got[i])
			bad++;
	TAP_EQ(bad, 0, "%s: no message both failed at the sender and arrived",
	       cfg);
	if (flags & FI_DELIVERY_COMPLETE)
		TAP_OK(stream_accounted(&s),
		       "%s: each message arrived or failed at the sender", cfg);
out:
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/*
 * Only a request right behind a packet held back overtakes it: longcts
 * ones come after eager ones here (behind a medium message's last
 * segment nothing overtakes a request).
 */
static size_t win_size(uint32_t i)
{
	static const size_t base[] = { 100, 200000, 4000, 20000, 60000 };

	return base[i % 5] + i % 97;
}

static void case_recvwin(void)
{
	recvwin_run(FI_DELIVERY_COMPLETE, small_size,
		    "eager, FI_DELIVERY_COMPLETE");
	recvwin_run(0, win_size, "eager, medium, longcts");
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_rnr, case_reorder, case_recvwin,
	};

	return rdm_main("efa_rdm_order_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
