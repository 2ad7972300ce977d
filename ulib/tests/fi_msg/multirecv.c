// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: FI_MULTI_RECV buffers.
 */
#include "fi_msg.h"

/* Fill one FI_MULTI_RECV buffer until released; @early messages precede it. */
static void multi_fill(struct side *s, unsigned int early)
{
	static const size_t plan[] = {
		1000, 3000, 17, 20000, 8, 4096, 30000, 6000, 777,
	};
	struct fi_context2 *ctx = ctx_new(s, 1);
	size_t end = 0;		/* offset past the last message */
	bool released = false;
	struct gbuf b;
	struct iovec iov;
	char what[64];
	ssize_t rc;

	gbuf_alloc(&b, MULTI_SIZE);
	iov = (struct iovec){ .iov_base = b.p, .iov_len = MULTI_SIZE };
	snprintf(what, sizeof(what), "multirecv: %u early", early);
	for (unsigned int k = 0; k < early; k++) {
		struct msgspec m = { .len = plan[k],
				     .seed = seed_of(0x600 + early, k) };

		/* eager: these sends complete before the buffer is posted */
		if (!remote_go(s, 1, &m) || !ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
	}
	progress_for(s, SETTLE_MS);
	RETRY(s, rc, fi_recvmsg(s->ep, &(struct fi_msg){
					.msg_iov = &iov, .iov_count = 1,
					.addr = FI_ADDR_UNSPEC, .context = ctx,
				}, FI_MULTI_RECV | FI_COMPLETION));
	if (!MUST(s, rc, "%s: fi_recvmsg(FI_MULTI_RECV)", what))
		goto out;
	for (unsigned int k = 0; !released && k < 64; k++) {
		size_t left = MULTI_SIZE - end;
		struct msgspec m = { .seed = seed_of(0x600 + early, k) };
		struct want w;
		struct comp c;
		uint8_t *at;
		char one[128];

		m.len = k < ARRAY_SIZE(plan) ? plan[k] : 1000;
		if (k >= early && m.len + MULTI_MIN + 64 > left)
			m.len = left - MULTI_MIN + 1; /* leaves < min */
		snprintf(one, sizeof(one), "%s: message %u (%llu B)", what, k,
			 (unsigned long long)m.len);
		if (k >= early && !remote_go(s, 1, &m))
			goto out;
		if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, one))
			goto out;
		at = c.e.buf;
		w = want_recv(s, ctx, &m, 1);
		w.chk_buf = true;
		w.buf = (uintptr_t)at >= (uintptr_t)(b.p + end) &&
			(uintptr_t)at + m.len <= (uintptr_t)(b.p + MULTI_SIZE) ?
			at : b.p + end;
		if (c.e.flags & FI_MULTI_RECV)
			w.flags |= FI_MULTI_RECV;
		check_comp(s, &c, &w, "%s: completion, buf inside, after the last",
			   one);
		if (w.buf == at)
			check_data(s, &(struct gbuf){ .p = at, .len = m.len },
				   1, m.seed, m.len, "%s: data at buf", one);
		end = (size_t)((uint8_t *)w.buf - b.p) + m.len;
		if (k >= early && !ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
		if (c.e.flags & FI_MULTI_RECV) {
			released = true;
			CHECK(s, MULTI_SIZE - end < MULTI_MIN,
			      "%s: released only below FI_OPT_MIN_MULTI_RECV (%zu left)",
			      one, MULTI_SIZE - end);
		} else if (MULTI_SIZE - end < MULTI_MIN) {
			if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, one))
				goto out;
			check_comp(s, &c, &(struct want){
					.ctx = ctx, .flags = FI_MULTI_RECV },
				   "%s: release completion (%zu left < %lu)",
				   one, MULTI_SIZE - end, MULTI_MIN);
			released = true;
		}
	}
	CHECK(s, released, "%s: buffer released", what);
	CHECK(s, gbuf_guards_ok(&b), "%s: nothing written around the buffer",
	      what);
	if (released) {
		struct msgspec m = { .len = 100, .seed = seed_of(0x610, early) };

		recv_one(s, 1, &m, m.len, 0);
	}
out:
	gbuf_free(s, &b);
}

/* FI_MULTI_RECV: messages packed in one buffer, released below the minimum. */
void case_multirecv(struct side *s)
{
	size_t min = 0, len = sizeof(min);

	if (peer_serves(s))
		return;
	if (fi_getopt(&s->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		      &min, &len) == 0)
		CHECK_EQ(s, min, MULTI_MIN,
			 "multirecv: fi_getopt(FI_OPT_MIN_MULTI_RECV)");
	multi_fill(s, 0);
	if (!s->abort)
		multi_fill(s, 3);
	stop_peers(s);
}

