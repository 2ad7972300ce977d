// SPDX-License-Identifier: GPL-2.0
/*
 * opx_down_test: kfab_opx when a unit goes Down mid-traffic and comes back
 * Active, on the shm backend. Two endpoints of this process, a on hfi0
 * and b on hfi1; for the peer's unit (hfi1) and then a's own (hfi0) Down:
 * a rendezvous send posted before the failure completes exactly once, in
 * error (FI_ENETDOWN) within DOWN_MS, as do an RMA write and read; a send
 * posted while Down fails; b's
 * receives that matched nothing stay posted; once Active again the same
 * endpoints carry eager and rendezvous messages both ways and RMA,
 * byte-exact, each completing once; also when b made no progress while
 * hfi1 was Down.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "dev/hfi_dev.h"
#include "tests/ep_util.h"

#define DOWN_MS		5000	/* an operation's error completion, at most */
#define BIG		(1u << 20)	/* rendezvous */
#define SMALL		64u		/* eager, inline */
#define NCTX		16
#define MR_KEY		0x5a

static struct ep_objs a, b;
static struct fid_mr *b_mr;	/* b's region, key MR_KEY, for a's RMA */
static fi_addr_t a_to_b, b_to_a;
/* completions seen per context, and the last one's error */
static struct fi_context2 ctx[NCTX];
static int seen[NCTX];
static int cerr[NCTX];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void reap(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;
	int i;

	while ((n = fi_cq_read(cq, &e, 1)) == 1) {
		i = (int)((struct fi_context2 *)e.op_context - ctx);
		seen[i]++;
		cerr[i] = 0;
	}
	if (n != -FI_EAVAIL)
		return;
	memset(&err, 0, sizeof(err));
	if (fi_cq_readerr(cq, &err, 0) != 1)
		return;
	i = (int)((struct fi_context2 *)err.op_context - ctx);
	seen[i]++;
	cerr[i] = err.err;
	tap_diag("context %d: error %d (%s): %s", i, err.err,
		 fi_strerror(err.err),
		 fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
}

/* Progresses both until context @i completed or @ms passed: whether. */
static bool wait_ctx(int i, uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	while (!seen[i] && now_ms() < end) {
		reap(a.cq);
		reap(b.cq);
	}
	return seen[i];
}

/* Progresses both for @ms. */
static void spin(uint64_t ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		reap(a.cq);
		reap(b.cq);
	}
}

static int set_state(unsigned int unit, uint32_t state)
{
	struct kfab_hfi_dev *dev;
	int ret = kfab_hfi_open(KFAB_BACKEND_SHM, unit, &dev);

	if (ret)
		return ret;
	ret = kfab_hfi_set_knob(dev, KFAB_HFI_KNOB_STATE, state);
	kfab_hfi_close(dev);
	return ret;
}

static int open_ep(struct ep_objs *o, const char *domain)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *h = fi_allocinfo();
	int ret;

	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA;
	h->fabric_attr->prov_name = strdup("kfab_opx");
	h->domain_attr->name = strdup(domain);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &o->info);
	fi_freeinfo(h);
	if (!ret)
		ret = ep_objs_open(o, &av_attr, &cq_attr);
	if (!ret)
		ret = fi_enable(o->ep);
	return ret;
}

static int insert_peer(struct ep_objs *from, struct ep_objs *to,
		       fi_addr_t *addr)
{
	char name[64];
	size_t len = sizeof(name);
	int ret = fi_getname(&to->ep->fid, name, &len);

	if (ret)
		return ret;
	return fi_av_insert(from->av, name, 1, addr, 0, NULL) == 1 ? 0 : -1;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 11));
}

static bool same(const uint8_t *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 11)))
			return false;
	return true;
}

static void reset_ctx(void)
{
	memset(seen, 0, sizeof(seen));
	memset(cerr, 0, sizeof(cerr));
}

/* A message @from -> @to of @len with @seed: completes once both sides. */
static void exchange(struct ep_objs *from, fi_addr_t dest, uint8_t *sbuf,
		     uint8_t *rbuf, size_t len, unsigned int seed,
		     const char *what)
{
	struct ep_objs *to = from == &a ? &b : &a;
	ssize_t rc;

	fill(sbuf, len, seed);
	memset(rbuf, 0, len);
	seen[10] = seen[11] = 0;
	rc = fi_recv(to->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, &ctx[10]);
	if (!TAP_EQ(rc, 0, "%s: recv posted", what))
		return;
	do {
		rc = fi_send(from->ep, sbuf, len, NULL, dest, &ctx[11]);
		if (rc == -FI_EAGAIN)
			spin(1);
	} while (rc == -FI_EAGAIN);
	if (!TAP_EQ(rc, 0, "%s: send posted", what))
		return;
	wait_ctx(10, 10000);
	wait_ctx(11, 10000);
	TAP_OK(seen[11] == 1 && !cerr[11], "%s: send completed once, err %d",
	       what, cerr[11]);
	TAP_OK(seen[10] == 1 && !cerr[10] && same(rbuf, len, seed),
	       "%s: received once, byte-exact", what);
}

/* a's write of @len into b's region, then the read of it back. */
static void rma_active(uint8_t *sbuf, uint8_t *rbuf, uint8_t *region,
		       size_t len, unsigned int seed, const char *what)
{
	ssize_t rc;

	fill(sbuf, len, seed);
	memset(region, 0, len);
	memset(rbuf, 0, len);
	seen[12] = seen[13] = 0;
	rc = fi_write(a.ep, sbuf, len, NULL, a_to_b, 0, MR_KEY, &ctx[12]);
	TAP_EQ(rc, 0, "%s: write posted", what);
	wait_ctx(12, 10000);
	TAP_OK(seen[12] == 1 && !cerr[12] && same(region, len, seed),
	       "%s: write completed once, byte-exact", what);
	rc = fi_read(a.ep, rbuf, len, NULL, a_to_b, 0, MR_KEY, &ctx[13]);
	TAP_EQ(rc, 0, "%s: read posted", what);
	wait_ctx(13, 10000);
	TAP_OK(seen[13] == 1 && !cerr[13] && same(rbuf, len, seed),
	       "%s: read completed once, byte-exact", what);
}

/* One failure: @unit Down with traffic from a to b, then Active again. */
static void down_round(unsigned int unit, uint8_t *sbuf, uint8_t *rbuf,
		       uint8_t *rbuf2, uint8_t *region, uint8_t *rdbuf)
{
	uint8_t small[SMALL];
	uint64_t t0;
	int twice = 0;
	ssize_t rc;
	bool posted;

	tap_diag("---- hfi%u Down", unit);
	reset_ctx();
	/* b's receives: one a rendezvous send may match, one for later */
	TAP_EQ(fi_recv(b.ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, &ctx[0]), 0,
	       "hfi%u: recv 0 posted", unit);
	TAP_EQ(fi_recv(b.ep, rbuf2, BIG, NULL, FI_ADDR_UNSPEC, &ctx[1]), 0,
	       "hfi%u: recv 1 posted", unit);
	fill(sbuf, BIG, 100 + unit);
	TAP_EQ(fi_send(a.ep, sbuf, BIG, NULL, a_to_b, &ctx[2]), 0,
	       "hfi%u: 1 MiB send posted", unit);
	TAP_EQ(fi_write(a.ep, sbuf, BIG, NULL, a_to_b, 0, MR_KEY, &ctx[5]), 0,
	       "hfi%u: 1 MiB write posted", unit);
	TAP_EQ(fi_read(a.ep, rdbuf, BIG, NULL, a_to_b, 0, MR_KEY, &ctx[6]), 0,
	       "hfi%u: 1 MiB read posted", unit);
	if (!TAP_EQ(set_state(unit, KFAB_HFI_STATE_DOWN), 0,
		    "hfi%u: set Down", unit))
		return;

	/* at once, before any progress has seen the state */
	memset(small, 7, sizeof(small));
	rc = fi_send(a.ep, small, sizeof(small), NULL, a_to_b, &ctx[3]);
	posted = rc == 0;
	if (posted)
		wait_ctx(3, DOWN_MS);
	TAP_OK(rc == -FI_ENETDOWN || (posted && seen[3] == 1 &&
				      cerr[3] == FI_ENETDOWN),
	       "hfi%u Down: a send posted while Down fails: returned %zd, seen %d, err %d",
	       unit, rc, seen[3], cerr[3]);
	t0 = now_ms();
	wait_ctx(2, DOWN_MS);
	TAP_OK(seen[2] == 1 && cerr[2] == FI_ENETDOWN,
	       "hfi%u Down: the 1 MiB send completed once in error (FI_ENETDOWN) in %llu ms; seen %d, err %d",
	       unit, (unsigned long long)(now_ms() - t0), seen[2], cerr[2]);
	for (int i = 5; i <= 6; i++) {
		wait_ctx(i, DOWN_MS);
		TAP_OK(seen[i] == 1 && cerr[i] == FI_ENETDOWN,
		       "hfi%u Down: the 1 MiB %s completed once in error (FI_ENETDOWN) in %llu ms; seen %d, err %d",
		       unit, i == 5 ? "write" : "read",
		       (unsigned long long)(now_ms() - t0), seen[i], cerr[i]);
	}

	spin(200);
	TAP_OK(!seen[1] && (!seen[0] || cerr[0]),
	       "hfi%u Down: no receive completed with data (recv 0 seen %d err %d, recv 1 seen %d)",
	       unit, seen[0], cerr[0], seen[1]);

	if (!TAP_EQ(set_state(unit, KFAB_HFI_STATE_ACTIVE), 0,
		    "hfi%u: set Active", unit))
		return;
	/* the receives still posted take the next messages, in order */
	fill(sbuf, BIG, 200 + unit);
	do {
		rc = fi_send(a.ep, sbuf, BIG, NULL, a_to_b, &ctx[4]);
		if (rc == -FI_EAGAIN)
			spin(1);
	} while (rc == -FI_EAGAIN);
	TAP_EQ(rc, 0, "hfi%u Active: 1 MiB send posted on the same endpoint",
	       unit);
	wait_ctx(4, 10000);
	TAP_OK(seen[4] == 1 && !cerr[4],
	       "hfi%u Active: 1 MiB send completed once, err %d", unit,
	       cerr[4]);
	if (seen[0]) {
		wait_ctx(1, 10000);
		TAP_OK(seen[1] == 1 && !cerr[1] && same(rbuf2, BIG, 200 + unit),
		       "hfi%u Active: recv 1, still posted, took it byte-exact",
		       unit);
	} else {
		wait_ctx(0, 10000);
		TAP_OK(seen[0] == 1 && !cerr[0] && same(rbuf, BIG, 200 + unit),
		       "hfi%u Active: recv 0, still posted, took it byte-exact",
		       unit);
		TAP_EQ(fi_cancel(&b.ep->fid, &ctx[1]), 0,
		       "hfi%u: recv 1 cancelled", unit);
		wait_ctx(1, 1000);
	}
	exchange(&a, a_to_b, sbuf, rbuf, SMALL, 300 + unit, "Active: a->b 64 B");
	exchange(&b, b_to_a, sbuf, rbuf, SMALL, 400 + unit, "Active: b->a 64 B");
	exchange(&b, b_to_a, sbuf, rbuf, BIG, 500 + unit, "Active: b->a 1 MiB");
	exchange(&a, a_to_b, sbuf, rbuf, BIG, 600 + unit, "Active: a->b 1 MiB");
	rma_active(sbuf, rdbuf, region, SMALL, 700 + unit, "Active: 64 B RMA");
	rma_active(sbuf, rdbuf, region, BIG, 800 + unit, "Active: 1 MiB RMA");
	spin(200);
	for (int i = 0; i < NCTX; i++)
		twice += seen[i] > 1;
	TAP_EQ(twice, 0, "hfi%u: no operation completed twice", unit);
}

/*
 * hfi1 Down while b makes no progress: only a sees it and starts over;
 * once Active, b learns it from a's packets, and the endpoints work on.
 */
static void down_unseen(uint8_t *sbuf, uint8_t *rbuf)
{
	uint64_t end;

	tap_diag("---- hfi1 Down, unseen by b");
	reset_ctx();
	TAP_EQ(fi_recv(b.ep, rbuf, BIG, NULL, FI_ADDR_UNSPEC, &ctx[0]), 0,
	       "unseen: recv posted");
	fill(sbuf, BIG, 900);
	TAP_EQ(fi_send(a.ep, sbuf, BIG, NULL, a_to_b, &ctx[2]), 0,
	       "unseen: 1 MiB send posted");
	if (!TAP_EQ(set_state(1, KFAB_HFI_STATE_DOWN), 0, "unseen: set Down"))
		return;
	end = now_ms() + DOWN_MS;
	while (!seen[2] && now_ms() < end)
		reap(a.cq);
	TAP_OK(seen[2] == 1 && cerr[2] == FI_ENETDOWN,
	       "unseen: the send completed once in error (FI_ENETDOWN); seen %d, err %d",
	       seen[2], cerr[2]);
	if (!TAP_EQ(set_state(1, KFAB_HFI_STATE_ACTIVE), 0,
		    "unseen: set Active"))
		return;
	spin(500);
	TAP_OK(!seen[0] || cerr[0],
	       "unseen: the receive did not complete with data (seen %d, err %d)",
	       seen[0], cerr[0]);
	if (!seen[0]) {
		TAP_EQ(fi_cancel(&b.ep->fid, &ctx[0]), 0, "unseen: recv cancelled");
		wait_ctx(0, 1000);
	}
	exchange(&a, a_to_b, sbuf, rbuf, BIG, 901, "unseen: a->b 1 MiB");
	exchange(&b, b_to_a, sbuf, rbuf, SMALL, 902, "unseen: b->a 64 B");
	exchange(&a, a_to_b, sbuf, rbuf, SMALL, 903, "unseen: a->b 64 B");
}

int main(void)
{
	char dir[] = "/dev/shm/kfab-down-test.XXXXXX";
	uint8_t *sbuf = malloc(BIG), *rbuf = malloc(BIG), *rbuf2 = malloc(BIG);
	uint8_t *region = malloc(BIG), *rdbuf = malloc(BIG);
	char cmd[64];
	int ret;

	tap_start("opx_down_test");
	if (!sbuf || !rbuf || !rbuf2 || !region || !rdbuf || !mkdtemp(dir)) {
		tap_skip_all("no memory or no directory under /dev/shm");
		return TAP_EXIT_SKIP;
	}
	/* knobs of our own units: no other test sees them Down */
	setenv("KFAB_SHM_DIR", dir, 1);
	setenv("FI_KFAB_BACKEND", "shm", 1);
	setenv("KFAB_SHM_UNITS", "2", 1);
	unsetenv("FI_OPX_HFI_SELECT");
	unsetenv("KFAB_SHM_DROP_PPM");
	ret = open_ep(&a, "hfi0");
	if (!ret)
		ret = open_ep(&b, "hfi1");
	if (!ret)
		ret = insert_peer(&a, &b, &a_to_b);
	if (!ret)
		ret = insert_peer(&b, &a, &b_to_a);
	if (!ret)
		ret = fi_mr_reg(b.domain, region, BIG,
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, MR_KEY, 0,
				&b_mr, NULL);
	if (TAP_EQ(ret, 0, "two endpoints, a on hfi0 and b on hfi1")) {
		reset_ctx();
		exchange(&a, a_to_b, sbuf, rbuf, SMALL, 1, "before: a->b 64 B");
		exchange(&a, a_to_b, sbuf, rbuf, BIG, 2, "before: a->b 1 MiB");
		rma_active(sbuf, rdbuf, region, BIG, 3, "before: 1 MiB RMA");
		down_round(1, sbuf, rbuf, rbuf2, region, rdbuf);
		down_round(0, sbuf, rbuf, rbuf2, region, rdbuf);
		down_unseen(sbuf, rbuf);
	}
	if (b_mr)
		TAP_EQ(fi_close(&b_mr->fid), 0, "region closed");
	TAP_EQ(ep_objs_close(&a) | ep_objs_close(&b), 0, "closed");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		tap_diag("could not remove %s", dir);
	free(sbuf);
	free(rbuf);
	free(rbuf2);
	free(region);
	free(rdbuf);
	return tap_done();
}
