// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_down_test: kfab_efa's FI_EP_RDM endpoint while its device is
 * set Down and back Active (the state knob; efa_rdm_node.h: two endpoints
 * in one process on efa0 of a private shm directory, so Down is both
 * ends' device).
 *
 *   post         a send, a tagged send and an RMA write posted while Down
 *                fail: -FI_ENETDOWN returned, or an error completion; a
 *                receive posted before stays posted; Active again: the
 *                same endpoints carry eager, medium and long messages
 *   inflight     a long message and an RMA read posted, then Down before
 *                the receiver progressed: each completes exactly once,
 *                with success or an error, within seconds; Active again:
 *                the same endpoints work; with device RDMA (longread)
 *                and without (longcts, emulated read)
 *   stream       sends queued behind a full ring, then Down: each
 *                completes once, success exactly for the messages the
 *                receiver gets (in order, once Active)
 *   peer         efa0 to efa1, efa1 Down: sends fail both ways, a long
 *                message fails at both ends; Active: both ways work
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_down_test
 */
#define _GNU_SOURCE
#include <rdma/fi_tagged.h>

#include "efa_rdm_node.h"

/* How long an operation may take to fail once its link is Down. */
#define DOWN_MS		5000

static bool is_down_err(int err)
{
	return err == FI_ENETDOWN || err == FI_EHOSTUNREACH;
}

/*
 * The completions of @n (progressing @other) for @dwell ms: how many have
 * context @ctx, the last of them in *@c.
 */
static int count_ctx(struct node *n, struct node *other, void *ctx,
		     uint64_t dwell, struct comp *c)
{
	uint64_t end = xp_ms() + dwell;
	struct comp t;
	int seen = 0;

	while (xp_ms() < end) {
		pump(n);
		pump(other);
		while (take(n, &t)) {
			if (t.ctx == ctx) {
				*c = t;
				seen++;
			} else {
				tap_diag("unexpected completion ctx %p err %d %s",
					 t.ctx, t.err, t.why);
			}
		}
	}
	return seen;
}

/* Posted while Down: an error return, or one error completion. */
static bool fails_down(struct node *a, struct node *b, ssize_t ret,
		       void *ctx, const char *what)
{
	struct comp c;
	int n;

	if (ret == -FI_ENETDOWN || ret == -FI_EHOSTUNREACH)
		return true;
	if (ret) {
		tap_diag("%s while Down: %s", what, fi_strerror((int)-ret));
		return false;
	}
	n = count_ctx(a, b, ctx, DOWN_MS, &c);
	if (n != 1 || !is_down_err(c.err)) {
		tap_diag("%s while Down: %d completions, err %d %s", what, n,
			 n ? c.err : 0, n ? c.why : "");
		return false;
	}
	return true;
}

static bool sizes_work(struct node *a, struct node *b, uint32_t seed)
{
	return xfer(a, b, 100, seed) && xfer(a, b, 40000, seed + 1) &&
	       xfer(a, b, BIG, seed + 2) && xfer(b, a, 100, seed + 3);
}

static void case_post(void)
{
	struct fid_mr *mr = NULL;
	struct node a, b;
	int sctx, tctx, wctx, rctx;
	struct comp c;
	ssize_t ret;
	bool ok;

	ok = !pair_open(&a, &b) && xfer(&a, &b, 100, 1) &&
	     xfer(&b, &a, 100, 2);
	TAP_OK(ok, "post: two endpoints exchange messages");
	if (!ok)
		goto out;
	ok = !fi_mr_reg(b.obj.domain, rbuf, BUFSZ, FI_REMOTE_WRITE, 0, 0, 0,
			&mr, NULL);
	TAP_OK(ok, "post: a region to write");
	memset(rbuf, 0, 64);
	ret = fi_recv(b.obj.ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &rctx);
	TAP_EQ(ret, 0, "post: a receive posted while Active");
	if (set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_DOWN))
		goto out;

	xp_fill(sbuf, 100, 3);
	ret = fi_send(a.obj.ep, sbuf, 100, NULL, a.peer, &sctx);
	TAP_OK(fails_down(&a, &b, ret, &sctx, "fi_send"),
	       "post: a send while Down fails");
	ret = fi_tsend(a.obj.ep, sbuf, 100, NULL, a.peer, 7, &tctx);
	TAP_OK(fails_down(&a, &b, ret, &tctx, "fi_tsend"),
	       "post: a tagged send while Down fails");
	ret = mr ? fi_write(a.obj.ep, sbuf, 100, NULL, a.peer,
			    (uintptr_t)rbuf + 4096, fi_mr_key(mr), &wctx) :
		   -FI_EINVAL;
	TAP_OK(fails_down(&a, &b, ret, &wctx, "fi_write"),
	       "post: an RMA write while Down fails");
	TAP_EQ(count_ctx(&b, &a, &rctx, 200, &c), 0,
	       "post: the receive stays posted while Down");

	TAP_EQ(set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE), 0,
	       "post: Active again");
	msg_fill(sbuf, 64, 9);
	ret = fi_send(a.obj.ep, sbuf, 64, NULL, a.peer, &sctx);
	TAP_OK(!ret && expect(&b, &a, &rctx, "receive") &&
	       expect(&a, &b, &sctx, "send") && msg_check(rbuf, 64) == 9,
	       "post: Active: the receive posted before takes the next send");
	TAP_OK(sizes_work(&a, &b, 10),
	       "post: Active: the same endpoints carry every size");
out:
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);
	if (mr)
		fi_close(&mr->fid);
	TAP_OK(node_close(&a) & node_close(&b), "post: closed");
}

/*
 * @post started on a (b not progressed), then Down: its completion comes
 * once, success or a Down error, within DOWN_MS.
 */
static void inflight(struct node *a, struct node *b, ssize_t ret, void *ctx,
		     const char *what)
{
	struct comp c = { 0 };
	int n;

	TAP_EQ(ret, 0, "inflight: %s posted", what);
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_DOWN);
	n = count_ctx(a, b, ctx, DOWN_MS, &c);
	TAP_OK(n == 1 && (!c.err || is_down_err(c.err)),
	       "inflight: %s completes once within %d ms (%d, err %d %s)",
	       what, DOWN_MS, n, c.err, c.why);
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);
}

/* @rdma "0": longcts and emulated RMA, else longread and device RMA */
static void inflight_run(const char *rdma)
{
	struct fid_mr *mr = NULL;
	struct node a, b;
	int sctx, rctx, dctx;
	struct comp c = { 0 };
	int n;
	bool ok;

	tap_diag("---- FI_EFA_USE_DEVICE_RDMA=%s", rdma);
	setenv("FI_EFA_USE_DEVICE_RDMA", rdma, 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	ok = ok && xfer(&a, &b, 100, 1) && xfer(&b, &a, 100, 2);
	TAP_OK(ok, "inflight: two endpoints exchange messages");
	if (!ok)
		goto out;
	ok = !fi_mr_reg(b.obj.domain, lbuf, BUFSZ, FI_REMOTE_READ, 0, 0, 0,
			&mr, NULL);
	TAP_OK(ok, "inflight: a region to read");

	/* a long message: the receive is posted, b not progressed */
	xp_fill(sbuf, BIG, 5);
	TAP_EQ(fi_recv(b.obj.ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, &rctx), 0,
	       "inflight: a receive of %lu bytes", BIG);
	inflight(&a, &b, fi_send(a.obj.ep, sbuf, BIG, NULL, a.peer, &sctx),
		 &sctx, "a long send");
	/* the receive: delivered whole, or still posted, or failed once */
	n = count_ctx(&b, &a, &rctx, 200, &c);
	TAP_OK(n == 0 || (n == 1 && (c.err ? is_down_err(c.err) :
					      xp_check(rbuf, BIG, 5))),
	       "inflight: its receive completes at most once (%d, err %d %s)",
	       n, c.err, c.why);

	inflight(&a, &b, mr ? fi_read(a.obj.ep, rbuf, BIG, NULL, a.peer,
				      (uintptr_t)lbuf, fi_mr_key(mr), &dctx) :
		 -FI_EINVAL, &dctx, "an RMA read");

	TAP_OK(sizes_work(&a, &b, 20),
	       "inflight: Active: the same endpoints carry every size");
out:
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);
	if (mr)
		fi_close(&mr->fid);
	TAP_OK(node_close(&a) & node_close(&b), "inflight: closed");
}

static void case_inflight(void)
{
	inflight_run("1");
	inflight_run("0");
}

#define STREAM_MAX	4096
#define STREAM_LEN	1000

/*
 * Sends from @a until -FI_EAGAIN, @b not progressed (its ring full, the
 * rest queued), then Down: every send completes once, a success exactly
 * for each message @b has; Active again: they arrive in order, then one
 * more.
 */
static void case_stream(void)
{
	/* by send: 0 not completed, 1 completed, 2 failed */
	static uint8_t state[STREAM_MAX];
	struct node a, b;
	uint8_t *bufs = malloc((size_t)STREAM_MAX * STREAM_LEN);
	uint32_t n = 0, ok_sends = 0, twice = 0, missing = 0, got = 0;
	uint32_t next = 0, last = STREAM_MAX;
	bool ok, order = true;
	ssize_t ret = 0;
	struct comp c;
	uint64_t end;

	memset(state, 0, sizeof(state));
	ok = bufs && !pair_open(&a, &b) && xfer(&a, &b, 100, 1) &&
	     xfer(&b, &a, 100, 2);
	TAP_OK(ok, "stream: two endpoints exchange messages");
	if (!ok)
		goto out;
	for (; n < STREAM_MAX; n++) {
		uint8_t *p = bufs + (size_t)n * STREAM_LEN;

		msg_fill(p, STREAM_LEN, n);
		ret = fi_send(a.obj.ep, p, STREAM_LEN, NULL, a.peer,
			      (void *)(uintptr_t)(n + 1));
		if (ret)
			break;
		pump(&a);
	}
	TAP_EQ(ret, -FI_EAGAIN, "stream: %u sends, then -FI_EAGAIN", n);
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_DOWN);
	end = xp_ms() + DOWN_MS;
	while (xp_ms() < end) {
		pump(&a);
		pump(&b);
		while (take(&a, &c)) {
			uintptr_t i = (uintptr_t)c.ctx - 1;

			if (i >= n || state[i] ||
			    (c.err && !is_down_err(c.err))) {
				tap_diag("send %lu: err %d %s, completed before: %u",
					 (unsigned long)i, c.err, c.why,
					 i < n ? state[i] : 0);
				twice++;
				continue;
			}
			state[i] = c.err ? 2 : 1;
			ok_sends += !c.err;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		missing += !state[i];
	TAP_OK(!twice && !missing,
	       "stream: Down: each of %u sends completes once (%u delivered, %u twice or wrong, %u not at all)",
	       n, ok_sends, twice, missing);
	TAP_OK(ok_sends < n, "stream: Down: some sends fail (%u of %u)",
	       n - ok_sends, n);

	TAP_EQ(set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE), 0,
	       "stream: Active again");
	msg_fill(sbuf, STREAM_LEN, last);
	ret = fi_send(a.obj.ep, sbuf, STREAM_LEN, NULL, a.peer, &last);
	TAP_EQ(ret, 0, "stream: Active: a send");
	end = xp_ms() + TIMEOUT_MS;
	while (got <= ok_sends && xp_ms() < end) {
		int64_t i;

		if (fi_recv(b.obj.ep, rbuf, STREAM_LEN, NULL, FI_ADDR_UNSPEC,
			    &next))
			break;
		if (wait_one(&b, &a, &c) || c.err)
			break;
		i = msg_check(rbuf, STREAM_LEN);
		got++;
		if (i == last)
			break;
		/* only sends that succeeded, in order */
		if (i < 0 || i >= (int64_t)n || state[i] != 1 ||
		    (uint32_t)i < next)
			order = false;
		else
			next = (uint32_t)i + 1;
	}
	TAP_OK(order && got == ok_sends + 1,
	       "stream: Active: the %u delivered arrive in order, then the next (%u received)",
	       ok_sends, got);
	TAP_OK(expect(&a, &b, &last, "the last send"),
	       "stream: Active: the last send completes");
out:
	set_knob(KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);
	free(bufs);
	TAP_OK(node_close(&a) & node_close(&b), "stream: closed");
}

/*
 * a on efa0, b on efa1, efa1 Down: a's send fails (b's device), b's
 * (its own); a long message in flight fails at both ends; Active again:
 * both ways work.
 */
static void case_peer(void)
{
	struct kfab_efa_dev *efa1 = NULL;
	struct node a, b;
	int sctx, rctx;
	struct comp c = { 0 };
	ssize_t ret;
	bool ok;
	int n;

	ok = !kfab_efa_open(KFAB_BACKEND_SHM, 1, &efa1) &&
	     !node_open(&a, false, false);
	rdm_domain = "efa1-rdm";
	ok = ok && !node_open(&b, false, false);
	rdm_domain = "efa0-rdm";
	ok = ok && !node_enable(&a) && !node_enable(&b) && !connect2(&a, &b) &&
	     xfer(&a, &b, 100, 1) && xfer(&b, &a, 100, 2);
	TAP_OK(ok, "peer: efa0 and efa1 exchange messages");
	if (!ok)
		goto out;
	TAP_EQ(kfab_efa_set_knob(efa1, KFAB_EFA_KNOB_STATE,
				 KFAB_EFA_STATE_DOWN), 0, "peer: efa1 Down");
	ret = fi_send(a.obj.ep, sbuf, 100, NULL, a.peer, &sctx);
	TAP_OK(fails_down(&a, &b, ret, &sctx, "fi_send to efa1"),
	       "peer: a send to the Down device fails");
	ret = fi_send(b.obj.ep, sbuf, 100, NULL, b.peer, &sctx);
	TAP_OK(fails_down(&b, &a, ret, &sctx, "fi_send from efa1"),
	       "peer: a send from the Down device fails");
	kfab_efa_set_knob(efa1, KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);

	/* longread: b reads a's buffer, efa1 Down before b progressed */
	xp_fill(sbuf, BIG, 6);
	ok = !fi_recv(b.obj.ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, &rctx) &&
	     !fi_send(a.obj.ep, sbuf, BIG, NULL, a.peer, &sctx);
	TAP_OK(ok, "peer: a long message posted");
	kfab_efa_set_knob(efa1, KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_DOWN);
	n = count_ctx(&a, &b, &sctx, DOWN_MS, &c);
	TAP_OK(n == 1 && is_down_err(c.err),
	       "peer: the long send fails once (%d, err %d %s)", n, c.err,
	       c.why);
	n = count_ctx(&b, &a, &rctx, 200, &c);
	TAP_OK(n == 1 && is_down_err(c.err),
	       "peer: its receive fails once (%d, err %d %s)", n, c.err,
	       c.why);

	TAP_EQ(kfab_efa_set_knob(efa1, KFAB_EFA_KNOB_STATE,
				 KFAB_EFA_STATE_ACTIVE), 0, "peer: efa1 Active");
	TAP_OK(sizes_work(&a, &b, 30) && sizes_work(&b, &a, 40),
	       "peer: Active: both ways carry every size");
out:
	if (efa1) {
		kfab_efa_set_knob(efa1, KFAB_EFA_KNOB_STATE,
				  KFAB_EFA_STATE_ACTIVE);
		kfab_efa_close(efa1);
	}
	TAP_OK(node_close(&a) & node_close(&b), "peer: closed");
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_post, case_inflight, case_stream, case_peer,
	};

	return rdm_main("efa_rdm_down_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
