// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_zcpy_test: zero-copy receive of kfab_efa's FI_EP_RDM endpoint
 * (efa_rdm_node.h: two endpoints in one process on a private shm
 * directory).
 *
 *   zcpy         FI_EFA_USE_ZCPY_RX: when it engages; messages written in
 *                place, receives posted again after other packets, too
 *                small and multi-iovec receives, a medium message, RNR
 *                with no receive posted, fi_cancel
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_zcpy_test
 */
#define _GNU_SOURCE
#include "efa_rdm_node.h"

/* ------------------------------------------------------------------ */
/* zero-copy receive */

#define ZC_MAX		4096	/* max_msg_size: one packet */
#define ZC_N		32
#define ZC_MED		(64UL << 10)
#define ZC_RX		512	/* rx size: more than the ring's 256 */

/* What zero-copy receive needs: FI_MSG alone, no SAS, one packet. */
static void zc_info(struct fi_info *fi)
{
	fi->caps = FI_MSG | FI_SEND | FI_RECV;
	fi->tx_attr->caps = FI_MSG | FI_SEND;
	fi->rx_attr->caps = FI_MSG | FI_RECV;
	fi->tx_attr->msg_order = 0;
	fi->rx_attr->msg_order = 0;
	fi->rx_attr->size = ZC_RX;
	fi->ep_attr->max_msg_size = ZC_MAX;
}

static void zc_tagged(struct fi_info *fi)
{
	zc_info(fi);
	fi->caps |= FI_TAGGED;
}

/* The same asked of fi_getinfo(): the fi_info it returns is used as is. */
static void zc_hints(struct fi_info *h)
{
	h->caps = FI_MSG;
	h->tx_attr->msg_order = 0;
	h->rx_attr->msg_order = 0;
	h->ep_attr->max_msg_size = ZC_MAX;
}

/* Whether a pair opened with @hook receives zero-copy (stats.zcpy_rx). */
static int zc_on(void (*hook)(struct fi_info *), const char *env)
{
	struct fi_kfab_efa_ep_stats st;
	struct node a, b;
	int on = -1;

	if (env)
		setenv("FI_EFA_USE_ZCPY_RX", env, 1);
	info_hook = hook;
	if (!pair_open(&a, &b) && !stats(&b, &st))
		on = (int)st.zcpy_rx;
	info_hook = NULL;
	unsetenv("FI_EFA_USE_ZCPY_RX");
	node_close(&a);
	node_close(&b);
	return on;
}

/* ZC_N messages of sizes up to ZC_MAX into as many receives. */
static void zc_stream(struct node *a, struct node *b, uint8_t *bufs)
{
	struct fi_kfab_efa_ep_stats sb0, sb;
	bool seen[ZC_N] = { false }, ok = true;
	int sctx[ZC_N], rctx[ZC_N];
	uint32_t got = 0;
	struct comp c = { 0 };

	stats(b, &sb0);
	for (uint32_t i = 0; i < ZC_N && ok; i++)
		ok = !fi_recv(b->obj.ep, bufs + (size_t)i * ZC_MAX, ZC_MAX,
			      NULL, FI_ADDR_UNSPEC, &rctx[i]);
	for (uint32_t i = 0; i < ZC_N && ok; i++) {
		size_t len = 8 + (size_t)i * (ZC_MAX - 8) / (ZC_N - 1);

		msg_fill(sbuf + (size_t)i * ZC_MAX, len, i);
		ok = !fi_send(a->obj.ep, sbuf + (size_t)i * ZC_MAX, len, NULL,
			      a->peer, &sctx[i]);
	}
	if (!TAP_OK(ok, "zcpy: %d receives of %d bytes, %d sends",
		    ZC_N, ZC_MAX, ZC_N))
		return;
	for (uint32_t i = 0; i < ZC_N && ok; i++)
		ok = !wait_one(a, b, &c) && !c.err;
	TAP_OK(ok, "zcpy: every send completes");
	for (uint32_t i = 0; i < ZC_N && ok; i++) {
		int64_t k;
		size_t slot;

		ok = !wait_one(b, a, &c) && !c.err;
		if (!ok)
			break;
		slot = (size_t)((int *)c.ctx - rctx);
		k = msg_check(bufs + slot * ZC_MAX, c.len);
		ok = slot < ZC_N && k >= 0 && k < ZC_N && !seen[k] &&
		     c.len == 8 + (size_t)k * (ZC_MAX - 8) / (ZC_N - 1);
		if (ok) {
			seen[k] = true;
			got++;
		} else {
			tap_diag("receive %zu: %zu bytes, message %lld", slot,
				 c.len, (long long)k);
		}
	}
	TAP_EQ(got, ZC_N, "zcpy: each message once, byte-exact, its length");
	stats(b, &sb);
	TAP_EQ(sb.zcpy_rx_msgs - sb0.zcpy_rx_msgs, ZC_N,
	       "zcpy: all %d written in place by the device", ZC_N);
	TAP_OK(sb.unexp_msgs == sb0.unexp_msgs && sb.ooo_pkts == 0,
	       "zcpy: none unexpected, none held for order");
}

static void case_zcpy(void)
{
	struct fi_kfab_efa_ep_stats sa, sb0, sb;
	uint8_t *bufs = xp_anon((size_t)ZC_RX * ZC_MAX);
	int ctx[ZC_RX + 1], sctx, ret;
	struct node a = { 0 }, b = { 0 };
	struct iovec iov[2];
	struct comp c = { 0 };
	bool ok;

	tap_diag("---- FI_EFA_USE_ZCPY_RX");
	TAP_EQ(zc_on(NULL, NULL), 0,
	       "zcpy: off for FI_TAGGED|FI_RMA|FI_ATOMIC and FI_ORDER_SAS");
	TAP_EQ(zc_on(zc_tagged, NULL), 0, "zcpy: off with FI_TAGGED");
	TAP_EQ(zc_on(zc_info, "0"), 0, "zcpy: off with FI_EFA_USE_ZCPY_RX=0");
	hints_hook = zc_hints;
	TAP_EQ(zc_on(NULL, NULL), 1,
	       "zcpy: on for hints of FI_MSG, no order, max_msg_size %d", ZC_MAX);
	hints_hook = NULL;
	TAP_EQ(zc_on(zc_info, NULL), 1,
	       "zcpy: on for FI_MSG, no SAS, max_msg_size %d", ZC_MAX);
	if (!bufs) {
		TAP_OK(false, "zcpy: out of memory");
		return;
	}

	info_hook = zc_info;
	ok = !pair_open(&a, &b);
	info_hook = NULL;
	if (!TAP_OK(ok, "zcpy: a pair"))
		goto out;

	/* b has no receive: a's packet waits as RNR, then lands */
	msg_fill(sbuf, 100, 7);
	ok = !fi_send(a.obj.ep, sbuf, 100, NULL, a.peer, &sctx);
	for (int i = 0; i < 2000 && ok; i++) {
		pump(&a);
		pump(&b);
	}
	stats(&a, &sa);
	TAP_OK(ok && sa.rnr_retries > 0,
	       "zcpy: no receive posted: the sender sees RNR (%llu)",
	       (unsigned long long)sa.rnr_retries);
	memset(bufs, 0, ZC_MAX);
	ok = !fi_recv(b.obj.ep, bufs, ZC_MAX, NULL, FI_ADDR_UNSPEC, &ctx[0]);
	ok = ok && expect(&b, &a, &ctx[0], "zcpy rnr receive") &&
	     expect(&a, &b, &sctx, "zcpy rnr send");
	TAP_OK(ok && msg_check(bufs, 100) == 7,
	       "zcpy: a receive posted: it arrives, byte-exact");

	zc_stream(&a, &b, bufs);

	/* too small: truncated; two iovecs: through the slot's buffer */
	stats(&b, &sb0);
	msg_fill(sbuf, 1000, 9);
	ok = !fi_recv(b.obj.ep, bufs, 100, NULL, FI_ADDR_UNSPEC, &ctx[0]) &&
	     !fi_send(a.obj.ep, sbuf, 1000, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy send 1000");
	ok = ok && !wait_one(&b, &a, &c);
	TAP_OK(ok && c.ctx == &ctx[0] && c.err == FI_ETRUNC &&
	       !memcmp(bufs, sbuf, 100),
	       "zcpy: 1000 bytes into 100: FI_ETRUNC, the first 100 there");
	memset(bufs, 0, 2 * ZC_MAX);
	iov[0] = (struct iovec){ bufs, 300 };
	iov[1] = (struct iovec){ bufs + ZC_MAX, 3000 };
	msg_fill(sbuf, 3000, 10);
	ok = !fi_recvv(b.obj.ep, iov, NULL, 2, FI_ADDR_UNSPEC, &ctx[1]) &&
	     !fi_send(a.obj.ep, sbuf, 3000, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy send 3000") &&
	     expect(&b, &a, &ctx[1], "zcpy recvv");
	TAP_OK(ok && !memcmp(bufs, sbuf, 300) &&
	       !memcmp(bufs + ZC_MAX, sbuf + 300, 2700),
	       "zcpy: two iovecs: byte-exact through the slot's buffer");
	stats(&b, &sb);
	TAP_EQ(sb.zcpy_rx_msgs, sb0.zcpy_rx_msgs,
	       "zcpy: neither counted as in place");

	/* a medium message: its segments take other receives, posted again */
	stats(&b, &sb0);
	for (int i = 0; i < 24; i++)
		fi_recv(b.obj.ep, lbuf + (size_t)i * ZC_MED, ZC_MED, NULL,
			FI_ADDR_UNSPEC, &ctx[i]);
	xp_fill(sbuf, ZC_MED, 11);
	ok = !fi_send(a.obj.ep, sbuf, ZC_MED, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy medium send") &&
	     !wait_one(&b, &a, &c) && !c.err && c.len == ZC_MED;
	TAP_OK(ok && (int *)c.ctx >= ctx && (int *)c.ctx < ctx + 24 &&
	       xp_check(lbuf + (size_t)((int *)c.ctx - ctx) * ZC_MED, ZC_MED,
			11),
	       "zcpy: a 64 KiB message arrives whole into one receive");
	stats(&b, &sb);
	TAP_OK(sb.zcpy_rx_reposts - sb0.zcpy_rx_reposts >= 7,
	       "zcpy: the receives its segments took were posted again (%llu)",
	       (unsigned long long)(sb.zcpy_rx_reposts - sb0.zcpy_rx_reposts));
	ret = fi_cancel(&b.obj.ep->fid, (int *)c.ctx == &ctx[0] ? &ctx[1] :
							      &ctx[0]);
	TAP_EQ(ret, -FI_EOPNOTSUPP,
	       "zcpy: fi_cancel of a receive the device has: -FI_EOPNOTSUPP");

	/* more receives than ring slots: the last waits, and cancels */
	for (int i = 24; i < 280; i++)
		fi_recv(b.obj.ep, bufs + (size_t)i * ZC_MAX, ZC_MAX, NULL,
			FI_ADDR_UNSPEC, &ctx[i]);
	ret = (int)fi_recv(b.obj.ep, bufs + 280 * ZC_MAX, ZC_MAX, NULL,
			   FI_ADDR_UNSPEC, &ctx[ZC_RX]);
	TAP_EQ(ret, 0, "zcpy: a receive beyond the ring's slots is taken");
	ret = fi_cancel(&b.obj.ep->fid, &ctx[ZC_RX]);
	ok = !wait_one(&b, &a, &c);
	TAP_OK(!ret && ok && c.ctx == &ctx[ZC_RX] && c.err == FI_ECANCELED,
	       "zcpy: one waiting for a slot cancels: FI_ECANCELED");
out:
	TAP_OK(node_close(&a) & node_close(&b),
	       "zcpy: closed with receives posted to the device");
	munmap(bufs, (size_t)ZC_RX * ZC_MAX);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_zcpy,
	};

	return rdm_main("efa_rdm_zcpy_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
