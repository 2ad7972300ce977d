// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_proto_test: the protocols of kfab_efa's FI_EP_RDM endpoint, the
 * operations running out, and FI_PROGRESS_AUTO (efa_rdm_node.h: two
 * endpoints in one process on a private shm directory).
 *
 *   protocols    eager, medium, longcts, runtread, longread chosen by
 *                size, FI_EFA_RUNT_SIZE and FI_EFA_USE_DEVICE_RDMA, as
 *                FI_OPT_KFAB_EFA_STATS counts them; device and emulated
 *                RMA; handshakes
 *   eagain       FI_EFA_TX_SIZE=8 against a receiver never progressed:
 *                -FI_EAGAIN, then every message once and in order;
 *                8 long sends waiting for their CTS: the 9th -FI_EAGAIN
 *   auto         FI_PROGRESS_AUTO: fi_cq_sread() woken by a 1 MiB message;
 *                a packet the device holds back sent by the progress thread
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_proto_test
 */
#define _GNU_SOURCE
#include "efa_rdm_node.h"

/* ------------------------------------------------------------------ */
/* protocols */

#define D(f)	(after.f - before.f)

/* The protocol counters moved by one, in @which alone. */
static bool proto_one(const struct fi_kfab_efa_ep_stats *b,
		      const struct fi_kfab_efa_ep_stats *a, int which)
{
	uint64_t d[5] = {
		a->eager_msgs - b->eager_msgs,
		a->medium_msgs - b->medium_msgs,
		a->longcts_msgs - b->longcts_msgs,
		a->longread_msgs - b->longread_msgs,
		a->runtread_msgs - b->runtread_msgs,
	};

	for (int i = 0; i < 5; i++) {
		if (d[i] != (i == which ? 1U : 0U)) {
			tap_diag("protocol deltas: eager %llu medium %llu longcts %llu longread %llu runtread %llu",
				 (unsigned long long)d[0],
				 (unsigned long long)d[1],
				 (unsigned long long)d[2],
				 (unsigned long long)d[3],
				 (unsigned long long)d[4]);
			return false;
		}
	}
	return true;
}

enum { P_EAGER, P_MEDIUM, P_LONGCTS, P_LONGREAD, P_RUNTREAD };
static const char *const pname[] = {
	"eager", "medium", "longcts", "longread", "runtread",
};

static void proto(struct node *a, struct node *b, size_t len, int which,
		  const char *cfg)
{
	struct fi_kfab_efa_ep_stats before, after;
	bool ok;

	stats(a, &before);
	ok = xfer(a, b, len, (uint32_t)len);
	stats(a, &after);
	TAP_OK(ok, "%s: %zu bytes arrive byte-exact", cfg, len);
	TAP_OK(proto_one(&before, &after, which), "%s: %zu bytes go %s", cfg,
	       len, pname[which]);
}

/* One exchange each way: both handshakes done. */
static bool handshake(struct node *a, struct node *b, const char *cfg)
{
	struct fi_kfab_efa_ep_stats sa, sb;
	bool ok = xfer(a, b, 100, 1) && xfer(b, a, 100, 2);

	TAP_OK(ok, "%s: first exchange both ways", cfg);
	stats(a, &sa);
	stats(b, &sb);
	TAP_OK(sa.handshakes_sent >= 1 && sa.handshakes_received >= 1 &&
	       sb.handshakes_sent >= 1 && sb.handshakes_received >= 1,
	       "%s: handshakes sent and received at both ends (%llu/%llu, %llu/%llu)",
	       cfg, (unsigned long long)sa.handshakes_sent,
	       (unsigned long long)sa.handshakes_received,
	       (unsigned long long)sb.handshakes_sent,
	       (unsigned long long)sb.handshakes_received);
	return ok;
}

struct rma_target {
	struct fid_mr *mr;
	uint64_t key;
};

static int target_reg(struct node *b, struct rma_target *t)
{
	int ret = fi_mr_reg(b->obj.domain, rbuf, BIG, FI_REMOTE_READ |
			    FI_REMOTE_WRITE, 0, 0, 0, &t->mr, NULL);

	if (ret) {
		t->mr = NULL;
		return ret;
	}
	t->key = fi_mr_key(t->mr);
	return 0;
}

/* The target region (when registered) and both endpoints closed. */
static void pair_close(struct node *a, struct node *b, struct rma_target *t)
{
	if (t->mr)
		fi_close(&t->mr->fid);
	node_close(a);
	node_close(b);
}

/* fi_read of @len bytes of b's rbuf at @off into lbuf. */
static bool rma_read(struct node *a, struct node *b, struct rma_target *t,
		     size_t len, size_t off, uint32_t seed)
{
	int ctx;
	ssize_t ret;

	xp_fill(rbuf + off, len, seed);
	memset(lbuf, 0, len);
	ret = fi_read(a->obj.ep, lbuf, len, NULL, a->peer,
		      (uint64_t)(uintptr_t)(rbuf + off), t->key, &ctx);
	if (ret) {
		tap_diag("fi_read: %s", fi_strerror((int)-ret));
		return false;
	}
	return expect(a, b, &ctx, "read") && xp_check(lbuf, len, seed);
}

/* fi_write(data) of @len bytes of lbuf into b's rbuf at @off. */
static bool rma_write(struct node *a, struct node *b, struct rma_target *t,
		      size_t len, size_t off, uint32_t seed, bool data)
{
	struct comp c;
	int ctx;
	ssize_t ret;

	xp_fill(lbuf, len, seed);
	memset(rbuf + off, 0, len);
	if (data)
		ret = fi_writedata(a->obj.ep, lbuf, len, NULL, 0xfeed, a->peer,
				   (uint64_t)(uintptr_t)(rbuf + off), t->key,
				   &ctx);
	else
		ret = fi_write(a->obj.ep, lbuf, len, NULL, a->peer,
			       (uint64_t)(uintptr_t)(rbuf + off), t->key,
			       &ctx);
	if (ret) {
		tap_diag("fi_write: %s", fi_strerror((int)-ret));
		return false;
	}
	if (!expect(a, b, &ctx, "write"))
		return false;
	if (data) {
		if (wait_one(b, a, &c) || c.err || c.data != 0xfeed ||
		    !(c.flags & FI_REMOTE_CQ_DATA)) {
			tap_diag("writedata: no target completion with the data");
			return false;
		}
	}
	return xp_check(rbuf + off, len, seed);
}

/*
 * An fi_read (fi_write, fi_writedata when @data, when @write) of @len
 * bytes at @off between a's lbuf and b's region, and its points: @what
 * byte-exact, and done @how: by device RDMA or emulated as @device says
 * (the counter of its kind moved by one, the other not).
 */
static void rma_went(struct node *a, struct node *b, struct rma_target *t,
		     bool write, size_t len, size_t off, uint32_t seed,
		     bool data, bool device, const char *cfg,
		     const char *what, const char *how)
{
	struct fi_kfab_efa_ep_stats before, after;
	uint64_t dev, emu;
	bool ok;

	stats(a, &before);
	ok = write ? rma_write(a, b, t, len, off, seed, data) :
		     rma_read(a, b, t, len, off, seed);
	stats(a, &after);
	dev = write ? D(device_writes) : D(device_reads);
	emu = write ? D(emulated_writes) : D(emulated_reads);
	TAP_OK(ok, "%s: %s byte-exact", cfg, what);
	TAP_OK(device ? dev == 1 && !emu : emu == 1 && !dev,
	       "%s: %s %s (device %llu, emulated %llu)", cfg, what, how,
	       (unsigned long long)dev, (unsigned long long)emu);
}

static void case_protocols(void)
{
	struct fi_kfab_efa_ep_stats before, after;
	struct rma_target t = { 0 };
	struct node a = { 0 }, b = { 0 };
	const char *cfg = "defaults";
	bool ok;

	tap_diag("---- protocols (defaults)");
	if (!TAP_EQ(pair_open(&a, &b), 0, "%s: two endpoints", cfg))
		goto out;
	if (!handshake(&a, &b, cfg))
		goto out;
	proto(&a, &b, 100, P_EAGER, cfg);
	proto(&a, &b, 8192, P_EAGER, cfg);
	proto(&a, &b, 20000, P_MEDIUM, cfg);
	proto(&a, &b, 65536, P_MEDIUM, cfg);
	proto(&a, &b, 200000, P_LONGCTS, cfg);
	proto(&a, &b, (1UL << 20) - 1, P_LONGCTS, cfg);
	proto(&a, &b, BIG, P_RUNTREAD, cfg);
	proto(&a, &b, 300000 + 1, P_LONGCTS, cfg);

	if (!TAP_EQ(target_reg(&b, &t), 0, "%s: target region", cfg))
		goto out;
	rma_went(&a, &b, &t, false, 4096, 100, 11, false, true, cfg,
		 "fi_read 4 KiB", "by device RDMA");
	rma_went(&a, &b, &t, true, 128 << 10, 0, 12, false, true, cfg,
		 "fi_write 128 KiB", "by device RDMA");
	rma_went(&a, &b, &t, true, 1024, 7, 13, false, false, cfg,
		 "fi_write 1 KiB",
		 "(below FI_EFA_INTER_MIN_READ_WRITE_SIZE) emulated");
	/* the target's completion carries the data */
	rma_went(&a, &b, &t, true, 128 << 10, 64, 14, true, false, cfg,
		 "fi_writedata 128 KiB", "emulated");
out:
	pair_close(&a, &b, &t);

	cfg = "FI_EFA_RUNT_SIZE=0";
	tap_diag("---- protocols (%s)", cfg);
	setenv("FI_EFA_RUNT_SIZE", "0", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_RUNT_SIZE");
	if (TAP_OK(ok, "%s: two endpoints", cfg) && handshake(&a, &b, cfg)) {
		proto(&a, &b, BIG, P_LONGREAD, cfg);
		proto(&a, &b, 1UL << 20, P_LONGREAD, cfg);
		proto(&a, &b, 20000, P_MEDIUM, cfg);
	}
	node_close(&a);
	node_close(&b);

	cfg = "FI_EFA_USE_DEVICE_RDMA=0";
	tap_diag("---- protocols (%s)", cfg);
	memset(&t, 0, sizeof(t));
	setenv("FI_EFA_USE_DEVICE_RDMA", "0", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (!TAP_OK(ok, "%s: two endpoints", cfg) || !handshake(&a, &b, cfg))
		goto out2;
	proto(&a, &b, BIG, P_LONGCTS, cfg);
	if (!TAP_EQ(target_reg(&b, &t), 0, "%s: target region", cfg))
		goto out2;
	rma_went(&a, &b, &t, false, 4096, 100, 21, false, false, cfg,
		 "fi_read 4 KiB", "emulated");
	stats(&a, &before);
	ok = rma_read(&a, &b, &t, 300000, 0, 22);
	stats(&a, &after);
	TAP_OK(ok && D(emulated_reads) == 1 && !D(device_reads),
	       "%s: fi_read 300000 bytes emulated, byte-exact", cfg);
	rma_went(&a, &b, &t, true, 128 << 10, 0, 23, false, false, cfg,
		 "fi_write 128 KiB", "emulated");
out2:
	pair_close(&a, &b, &t);
}

/* ------------------------------------------------------------------ */
/* -FI_EAGAIN */

#define EAGAIN_MAX	10000
#define EAGAIN_LEN	1024
#define RSLOTS		64

static void case_eagain(void)
{
	struct fi_kfab_efa_ep_stats sa;
	uint8_t *bufs = NULL, *rb = NULL;
	struct node a = { 0 }, b = { 0 };
	uint32_t nsent = 0, nsdone = 0, nrecv = 0, nposted = 0, next = 0;
	bool rfree[RSLOTS], order = true, data = true, serr = false;
	uint32_t when = 0;
	uint64_t end;
	ssize_t ret = 0;
	struct comp c;
	bool ok;

	tap_diag("---- -FI_EAGAIN (FI_EFA_TX_SIZE=8, receiver not progressed)");
	setenv("FI_EFA_TX_SIZE", "8", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_TX_SIZE");
	if (!TAP_OK(ok, "two endpoints with FI_EFA_TX_SIZE=8"))
		goto out;
	TAP_EQ(a.obj.info->tx_attr->size, 8, "tx_attr->size is FI_EFA_TX_SIZE");
	bufs = malloc((size_t)EAGAIN_MAX * EAGAIN_LEN);
	rb = malloc((size_t)RSLOTS * EAGAIN_LEN);
	if (!TAP_OK(bufs && rb, "buffers"))
		goto out;
	for (; nsent < EAGAIN_MAX; nsent++) {
		uint8_t *p = bufs + (size_t)nsent * EAGAIN_LEN;

		msg_fill(p, EAGAIN_LEN, nsent);
		ret = fi_send(a.obj.ep, p, EAGAIN_LEN, NULL, a.peer,
			      (void *)(uintptr_t)(nsent + 1));
		if (ret)
			break;
		pump(&a);
	}
	when = nsent;
	TAP_EQ(ret, -FI_EAGAIN, "fi_send gives -FI_EAGAIN within %d sends",
	       EAGAIN_MAX);
	tap_diag("-FI_EAGAIN at send %u", when);
	stats(&a, &sa);
	TAP_OK(sa.eagain > 0, "stats: eagain %llu",
	       (unsigned long long)sa.eagain);

	/* now the receiver takes them, in order */
	for (int i = 0; i < RSLOTS; i++)
		rfree[i] = true;
	end = xp_ms() + TIMEOUT_MS;
	while ((nrecv < nsent || nsdone < nsent) && xp_ms() < end) {
		for (int i = 0; i < RSLOTS && nposted < nsent; i++) {
			if (!rfree[i])
				continue;
			if (fi_recv(b.obj.ep, rb + (size_t)i * EAGAIN_LEN,
				    EAGAIN_LEN, NULL, FI_ADDR_UNSPEC,
				    (void *)(uintptr_t)(i + 1)))
				break;
			rfree[i] = false;
			nposted++;
		}
		pump(&a);
		pump(&b);
		while (take(&a, &c)) {
			if (c.err)
				serr = true;
			nsdone++;
		}
		while (take(&b, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			int64_t seq;

			if (c.err || slot >= RSLOTS) {
				tap_diag("receive error %d %s", c.err, c.why);
				data = false;
				nrecv++;
				continue;
			}
			seq = msg_check(rb + slot * EAGAIN_LEN, c.len);
			if (seq < 0 || c.len != EAGAIN_LEN)
				data = false;
			else if ((uint32_t)seq != next)
				order = false;
			next = (uint32_t)seq + 1;
			rfree[slot] = true;
			nrecv++;
		}
	}
	TAP_EQ(nrecv, nsent, "every message sent arrives (%u)", nsent);
	TAP_OK(data, "each byte-exact");
	TAP_OK(order, "in order (FI_ORDER_SAS)");
	TAP_EQ(nsdone, nsent, "every send completes");
	TAP_OK(!serr, "no send fails");
	pump(&b);
	TAP_OK(!take(&b, &c), "nothing arrives twice");
out:
	free(bufs);
	free(rb);
	node_close(&a);
	node_close(&b);
}

/* tx_size bounds the sends in flight: long ones each wait for a CTS. */
#define HELD_N		8
#define HELD_LEN	(256UL << 10)

static void case_eagain_held(void)
{
	struct node a = { 0 }, b = { 0 };
	int sctx[HELD_N + 1], rctx[HELD_N + 1];
	int n, sdone = 0, rdone = 0;
	ssize_t ret = 0;
	struct comp c;
	bool ok;

	tap_diag("---- FI_EFA_TX_SIZE=%d long sends held for their CTS",
		 HELD_N);
	setenv("FI_EFA_TX_SIZE", "8", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_TX_SIZE");
	if (!TAP_OK(ok, "two endpoints with FI_EFA_TX_SIZE=8"))
		goto out;
	for (n = 0; n <= HELD_N; n++) {
		ret = fi_send(a.obj.ep, sbuf, HELD_LEN, NULL, a.peer,
			      &sctx[n]);
		if (ret)
			break;
		pump(&a);
	}
	TAP_EQ(n, HELD_N, "%d long sends taken, the receiver idle", HELD_N);
	TAP_EQ(ret, -FI_EAGAIN, "send %d: -FI_EAGAIN, tx_size in flight",
	       HELD_N + 1);
	for (int i = 0; i < n; i++)
		if (fi_recv(b.obj.ep, rbuf + (size_t)i * HELD_LEN, HELD_LEN,
			    NULL, FI_ADDR_UNSPEC, &rctx[i]))
			break;
	while (sdone < n && !wait_one(&a, &b, &c))
		sdone += !c.err;
	while (rdone < n && !wait_one(&b, &a, &c))
		rdone += !c.err;
	TAP_OK(sdone == n && rdone == n,
	       "the receiver takes them: %d sends, %d receives complete",
	       sdone, rdone);
	TAP_EQ(fi_recv(b.obj.ep, rbuf, HELD_LEN, NULL, FI_ADDR_UNSPEC,
		       &rctx[HELD_N]), 0, "one more receive");
	TAP_EQ(fi_send(a.obj.ep, sbuf, HELD_LEN, NULL, a.peer, &sctx[HELD_N]),
	       0, "then a send is taken again");
	TAP_OK(expect(&a, &b, &sctx[HELD_N], "send after the drain") &&
	       expect(&b, &a, &rctx[HELD_N], "its receive"),
	       "and completes on both sides");
out:
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* FI_PROGRESS_AUTO, FI_WAIT_FD */

struct sleeper {
	struct node *n;
	volatile int started;
	ssize_t ret;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	uint64_t woke_ms;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	s->ret = fi_cq_sread(s->n->obj.cq, &s->e, 1, NULL, TIMEOUT_MS);
	if (s->ret == -FI_EAVAIL)
		fi_cq_readerr(s->n->obj.cq, &s->err, 0);
	s->woke_ms = xp_ms();
	return NULL;
}

static void auto_round(struct node *a, struct node *b, uint32_t seed,
		       int which, const char *what)
{
	struct fi_kfab_efa_ep_stats before, after;
	struct sleeper s = { .n = b };
	const size_t len = 1UL << 20;
	pthread_t th;
	uint64_t sent;
	int rctx, sctx;
	bool ok;

	xp_fill(sbuf, len, seed);
	memset(rbuf, 0, len);
	if (!TAP_EQ(fi_recv(b->obj.ep, rbuf, len, NULL, FI_ADDR_UNSPEC,
			    &rctx), 0, "%s: receive posted", what))
		return;
	if (!TAP_EQ(pthread_create(&th, NULL, sleeper_main, &s), 0,
		    "%s: receiver thread", what))
		return;
	while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(100000);		/* asleep in fi_cq_sread() by now */
	stats(a, &before);
	sent = xp_ms();
	ok = !fi_send(a->obj.ep, sbuf, len, NULL, a->peer, &sctx) &&
	     expect(a, NULL, &sctx, "1 MiB send");
	stats(a, &after);
	TAP_OK(ok, "%s: 1 MiB send completes (the sleeping receiver's progress thread answers)",
	       what);
	pthread_join(th, NULL);
	TAP_EQ(s.ret, 1, "%s: fi_cq_sread returns the completion", what);
	TAP_OK(s.ret == 1 && s.e.op_context == &rctx && s.e.len == len,
	       "%s: of the 1 MiB receive", what);
	TAP_OK(s.woke_ms >= sent && s.woke_ms - sent < TIMEOUT_MS,
	       "%s: woken by the message, %llu ms after the send", what,
	       (unsigned long long)(s.woke_ms - sent));
	TAP_OK(xp_check(rbuf, len, seed), "%s: byte-exact", what);
	TAP_OK(proto_one(&before, &after, which), "%s: went %s", what,
	       pname[which]);
}

/*
 * A device holding every packet back (reorder_ppm 1000000): the send of an
 * FI_PROGRESS_AUTO endpoint whose application then makes no call leaves
 * its packet held; its progress thread, asleep without a bound, is woken
 * to send it.
 */
static void case_auto_held(void)
{
	struct node a = { 0 }, b = { 0 };
	int sctx, rctx;
	uint64_t sent;
	bool ok;

	tap_diag("---- FI_PROGRESS_AUTO sender, its packet held (reorder_ppm 1000000)");
	ok = !node_open(&a, true, true) && !node_open(&b, false, false);
	if (!TAP_OK(ok && !node_enable(&a) && !node_enable(&b) &&
		    !connect2(&a, &b), "an auto sender, a manual receiver"))
		goto out;
	if (!TAP_OK(xfer(&a, &b, 64, 41), "handshake: a first message"))
		goto out;
	usleep(100000);		/* the sender's thread asleep by now */
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 1000000), 0,
		    "efa0 reorder_ppm 1000000"))
		goto out;
	xp_fill(sbuf, 64, 42);
	memset(rbuf, 0, 64);
	ok = !fi_recv(b.obj.ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &rctx);
	sent = xp_ms();
	ok = ok && !fi_send(a.obj.ep, sbuf, 64, NULL, a.peer, &sctx);
	ok = ok && expect(&b, NULL, &rctx, "held message");
	TAP_OK(ok, "the receiver gets the held message, the sender making no call (%llu ms)",
	       (unsigned long long)(xp_ms() - sent));
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	TAP_OK(ok && xp_check(rbuf, 64, 42), "byte-exact");
	TAP_OK(expect(&a, NULL, &sctx, "held send"), "the send completes");
out:
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	node_close(&a);
	node_close(&b);
}

static void case_auto(void)
{
	struct node a = { 0 }, b = { 0 };
	bool ok;

	tap_diag("---- FI_PROGRESS_AUTO receiver in fi_cq_sread (FI_WAIT_FD)");
	memset(&b, 0, sizeof(b));
	ok = !node_open(&a, false, false) && !node_open(&b, true, true);
	if (!TAP_OK(ok, "a manual sender, an auto receiver with FI_WAIT_FD"))
		goto out;
	TAP_EQ(b.obj.info->domain_attr->data_progress, FI_PROGRESS_AUTO,
	       "receiver domain: FI_PROGRESS_AUTO");
	if (!TAP_OK(!node_enable(&a) && !node_enable(&b) && !connect2(&a, &b),
		    "enabled, connected"))
		goto out;
	/* before the handshake: longcts, the receiver's CTS from its thread */
	auto_round(&a, &b, 31, P_LONGCTS, "first");
	/* the receiver's handshake came: it reads the message itself */
	auto_round(&a, &b, 32, P_RUNTREAD, "second");
out:
	node_close(&a);
	node_close(&b);
	case_auto_held();
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_protocols, case_eagain, case_eagain_held, case_auto,
	};

	return rdm_main("efa_rdm_proto_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
