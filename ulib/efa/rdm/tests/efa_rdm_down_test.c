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
 *                the same endpoints work
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

static void case_inflight(void)
{
	struct fid_mr *mr = NULL;
	struct node a, b;
	int sctx, rctx, dctx;
	struct comp c = { 0 };
	int n;
	bool ok;

	ok = !pair_open(&a, &b) && xfer(&a, &b, 100, 1) &&
	     xfer(&b, &a, 100, 2);
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

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_post, case_inflight,
	};

	return rdm_main("efa_rdm_down_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
