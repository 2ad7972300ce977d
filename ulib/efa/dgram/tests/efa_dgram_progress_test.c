// SPDX-License-Identifier: GPL-2.0
/*
 * efa_dgram_progress_test: what moves kfab_efa's FI_EP_DGRAM endpoint
 * between two processes (efa_dgram_rank.h) when the application does not:
 * FI_PROGRESS_AUTO, fi_cq_sread() and FI_WAIT_FD woken by a datagram, a
 * payload landing while the application makes no call; a device holding
 * each packet back behind the next (reorder_ppm 1000000, set on efa1
 * through libkfab's device layer and restored): the held packet goes out
 * with the sender's progress, from its sleep, from its progress thread
 * and at its close; ofi_rxd's FI_EP_RDM over kfab_efa (send, receive,
 * segmented and tagged messages). The reorder case is skipped where the
 * knob cannot be set (kmod without root).
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_DGRAM.
 *
 *   FI_PROVIDER_PATH=build/prov FI_KFAB_BACKEND=shm \
 *           build/ulib-tests/efa_dgram_progress_test
 */
#define _GNU_SOURCE
#include "efa_dgram_rank.h"

/* ------------------------------------------------------------------ */
/* FI_PROGRESS_AUTO */

static struct fi_info *auto_hints(const char *domain)
{
	struct fi_info *h = dgram_hints(domain);

	if (h)
		h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	return h;
}

/* poll() rounds of FI_GETWAIT's fd against the progress thread */
#define AUTO_ROUNDS	100

/*
 * A datagram of pattern @seed awaited in poll() of FI_GETWAIT's fd @fd
 * after fi_trywait(), rank 0 sending once told: 0 or -FI_E*; *@ms asleep.
 */
static int auto_waitfd(struct rank *a, int fd, uint32_t seed, uint64_t *ms)
{
	struct fid *cqfid = &a->obj.cq->fid;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint64_t t0;
	int ret = fd < 0 ? -FI_EINVAL : post_recv(a, 64, &e);

	if (!ret)
		ret = fi_trywait(a->obj.fabric, &cqfid, 1);
	sync_send(0);
	t0 = xp_ms();
	if (!ret)
		ret = poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -FI_ETIMEDOUT;
	*ms = xp_ms() - t0;
	if (!ret && (cq_wait(a->obj.cq, &e, &err) != 1 ||
		     !xp_check(a->buf + PREFIX, 64, seed)))
		ret = -FI_EIO;
	return ret;
}

/*
 * Rank 1 receives on an FI_PROGRESS_AUTO endpoint, rank 0 sends to it
 * from one 300 ms after the receive was posted: fi_cq_sread() sleeps
 * until the datagram comes, so does poll() of FI_GETWAIT's fd after
 * fi_trywait(), also AUTO_ROUNDS times 2 ms after (the progress thread
 * must leave the application's wakeup to it); then a datagram lands,
 * prefix and payload, while rank 1 makes no call at all.
 */
static void case_auto(void)
{
	struct rank A = { 0 };
	struct fi_cq_msg_entry e;
	uint64_t t0, ms;
	int fd = -1, lost = 0, ret;
	uint32_t i = 0;
	bool landed;

	ret = rank_open_both(&A, auto_hints("efa0-dgrm"));
	point(!ret &&
	      A.obj.info->domain_attr->data_progress == FI_PROGRESS_AUTO,
	      "FI_PROGRESS_AUTO endpoint open, names swapped (%d)", ret);
	if (ret)
		goto out;
	if (R.id == 0) {
		int failed = 0;

		for (i = 0; i < 3 + AUTO_ROUNDS; i++) {
			sync_wait(NULL);
			usleep(i < 2 ? 300000 : i < 2 + AUTO_ROUNDS ? 2000 : 0);
			xp_fill(A.sbuf + PREFIX, 64, 40 + i);
			failed += !!send_wait(&A, 64, A.peer);
		}
		TAP_EQ(failed, 0, "FI_PROGRESS_AUTO: %u datagrams sent", i);
		sync_wait(NULL);
		goto out;
	}

	ret = post_recv(&A, 64, &e);
	sync_send(0);
	t0 = xp_ms();
	if (!ret)
		ret = (int)fi_cq_sread(A.obj.cq, &e, 1, NULL, TIMEOUT_MS);
	ms = xp_ms() - t0;
	point(ret == 1 && ms >= 150 && e.len == PREFIX + 64 &&
	      xp_check(A.buf + PREFIX, 64, 40),
	      "FI_PROGRESS_AUTO: fi_cq_sread sleeps until the datagram arrives (%d, %llu ms)",
	      ret, (unsigned long long)ms);

	fi_control(&A.obj.cq->fid, FI_GETWAIT, &fd);
	ret = auto_waitfd(&A, fd, 41, &ms);
	point(!ret && ms >= 150,
	      "FI_PROGRESS_AUTO, FI_WAIT_FD: fi_trywait 0, poll() woken by the datagram, then fi_cq_read (%d, %llu ms)",
	      ret, (unsigned long long)ms);
	for (i = 0; i < AUTO_ROUNDS; i++)
		lost += !!auto_waitfd(&A, fd, 42 + i, &ms);
	point(!lost, "FI_PROGRESS_AUTO, FI_WAIT_FD: %d rounds 2 ms apart, every poll() woken (%d missed)",
	      AUTO_ROUNDS, lost);

	memset(A.buf, 0, PREFIX + 64);
	ret = post_recv(&A, 64, &e);
	sync_send(0);
	t0 = xp_ms();
	/* the progress thread writes what this one reads: no call at all */
	while (!ret && !__atomic_load_n((uint64_t *)A.buf, __ATOMIC_ACQUIRE) &&
	       xp_ms() - t0 < TIMEOUT_MS)
		usleep(1000);
	ms = xp_ms() - t0;
	landed = __atomic_load_n((uint64_t *)A.buf, __ATOMIC_ACQUIRE);
	point(!ret && landed && fi_cq_read(A.obj.cq, &e, 1) == 1 &&
	      e.len == PREFIX + 64 && !memcmp(A.buf, A.peer_name, NAMELEN) &&
	      xp_check(A.buf + PREFIX, 64, 42 + AUTO_ROUNDS),
	      "FI_PROGRESS_AUTO: prefix and payload written while the receiver made no call (%llu ms)",
	      (unsigned long long)ms);
	sync_send(0);
out:
	rank_close(&A);
}

/* ------------------------------------------------------------------ */
/* a device holding packets back */

/* datagrams of the first round: the last one stays held */
#define REORDER_N	7
#define SLOT		(PREFIX + 64)

static enum kfab_backend env_backend(void)
{
	const char *be = getenv("FI_KFAB_BACKEND");

	if (be && !strcmp(be, "kmod"))
		return KFAB_BACKEND_KMOD;
	if (be && !strcmp(be, "shm"))
		return KFAB_BACKEND_SHM;
	return KFAB_BACKEND_AUTO;
}

/* Datagram number @i: the number, then 60 bytes seeded by it. */
static int send_numbered(struct rank *r, fi_addr_t dest, uint32_t i)
{
	memcpy(r->sbuf + PREFIX, &i, sizeof(i));
	xp_fill(r->sbuf + PREFIX + sizeof(i), 60, i);
	return (int)fi_send(r->obj.ep, r->sbuf, SLOT, r->desc, dest, r);
}

/* The number of the datagram in @slot, -1 when it is not one intact. */
static int numbered(const uint8_t *slot, size_t len)
{
	uint32_t i;

	memcpy(&i, slot + PREFIX, sizeof(i));
	return len == SLOT && i < 1000 &&
	       xp_check(slot + PREFIX + sizeof(i), 60, i) ? (int)i : -1;
}

/* The next datagram into slot 0 of @r: its number, or -1. */
static int recv_numbered(struct rank *r, bool sleep)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ret;

	if (sleep)
		ret = (int)fi_cq_sread(r->obj.cq, &e, 1, NULL, TIMEOUT_MS);
	else
		ret = cq_wait(r->obj.cq, &e, &err);
	return ret == 1 && e.op_context == r->buf ?
	       numbered(r->buf, e.len) : -1;
}

static int post_slot(struct rank *r, int j)
{
	return (int)fi_recv(r->obj.ep, r->buf + j * SLOT, SLOT, r->desc,
			    FI_ADDR_UNSPEC, r->buf + j * SLOT);
}

static void reorder_receiver(struct rank *m)
{
	struct fi_cq_msg_entry e;
	int seen[REORDER_N] = { 0 };
	int got = 0, bad = 0, ret = 0, n;
	char order[64] = "";
	uint64_t t0, ms;

	/* a. the sender's progress sends what it held */
	for (int j = 0; j < REORDER_N; j++)
		ret = ret ? ret : post_slot(m, j);
	sync_send(0);
	sync_wait(NULL);
	for (int round = 0; round < 2; round++) {
		uint64_t end = xp_ms() + (round ? TIMEOUT_MS : 300);

		while (xp_ms() < end && got + bad < REORDER_N) {
			size_t o = strlen(order);

			if (fi_cq_read(m->obj.cq, &e, 1) != 1)
				continue;
			n = numbered(e.op_context, e.len);
			if (n < 0 || n >= REORDER_N || seen[n]++) {
				bad++;
				continue;
			}
			snprintf(order + o, sizeof(order) - o, " %d", n);
			got++;
		}
		if (!round) {
			point(!ret && got == REORDER_N - 1 && !seen[REORDER_N - 1],
			      "reorder: %d of %d datagrams arrive while the sender makes no call, the last one held (%d)",
			      got, REORDER_N, ret);
			sync_send(0);
			sync_wait(NULL);
		}
	}
	point(got == REORDER_N && !bad,
	      "reorder: all %d arrive, each once and intact, once the sender reads its CQ (order%s)",
	      REORDER_N, order);
	sync_send(0);

	/* b. held for a receiver without a buffer: retried from a sleep */
	sync_send(0);
	sync_wait(NULL);
	usleep(200000);
	ret = post_slot(m, 0);
	n = ret ? -1 : recv_numbered(m, false);
	point(n == 100, "reorder: a datagram held for a receiver without a buffer arrives 200 ms later, once it posts (%d)",
	      n);
	xp_fill(m->sbuf + PREFIX, 8, 7);
	point(!send_wait(m, 8, m->peer), "reorder: the reply sent");
	sync_send(0);

	/* c. held by an FI_PROGRESS_AUTO sender making no call */
	ret = post_slot(m, 0);
	sync_send(0);
	sync_wait(NULL);
	t0 = xp_ms();
	n = ret ? -1 : recv_numbered(m, true);
	ms = xp_ms() - t0;
	point(n == 102, "reorder, FI_PROGRESS_AUTO: the sender's progress thread sends the datagram it held, its application making no call (%d, %llu ms)",
	      n, (unsigned long long)ms);
	sync_send(0);

	/* d. held by an endpoint that closes at once */
	ret = post_slot(m, 0);
	sync_send(0);
	sync_wait(NULL);
	n = ret ? -1 : recv_numbered(m, false);
	point(n == 103, "reorder: the datagram held by an endpoint closed right after the send arrives (%d)",
	      n);
	sync_send(0);

	/* e. the same without a buffer at the receiver: dropped */
	sync_send(0);
	sync_wait(NULL);
	ret = post_slot(m, 0);
	sync_send(0);
	n = ret ? -1 : recv_numbered(m, false);
	point(n == 105, "reorder: one held for a receiver without a buffer is gone with its endpoint; the next datagram arrives (%d)",
	      n);
	sync_send(0);
}

/* @c on what @h gives (freed), with @name in its AV as c->peer. */
static int rank_open_to(struct rank *c, struct fi_info *h,
			const uint8_t *name)
{
	int ret = rank_open(c, h);

	if (!ret && fi_av_insert(c->obj.av, name, 1, &c->peer, 0, NULL) != 1)
		ret = -FI_EINVAL;
	return ret;
}

static void reorder_sender(struct rank *m)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	struct rank A = { 0 }, C = { 0 };
	int sent = 0, done = 0, ret, rctx;
	uint64_t t0, ms;

	/* a. */
	sync_wait(NULL);
	for (uint32_t i = 0; i < REORDER_N; i++)
		sent += !send_numbered(m, m->peer, i);
	TAP_EQ(sent, REORDER_N, "reorder: %d datagrams sent", REORDER_N);
	sync_send(0);
	sync_wait(NULL);
	while (done < sent && cq_wait(m->obj.cq, &e, &err) == 1 &&
	       e.op_context == m && (e.flags & FI_SEND))
		done++;
	TAP_EQ(done, sent, "reorder: their completions read");
	sync_send(0);
	sync_wait(NULL);

	/* b. */
	sync_wait(NULL);
	ret = post_recv(m, 64, &rctx);
	if (!ret)
		ret = send_numbered(m, m->peer, 100);
	if (!ret)
		ret = cq_wait(m->obj.cq, &e, &err) == 1 && e.op_context == m ?
		      0 : -FI_EIO;
	sync_send(0);
	t0 = xp_ms();
	if (!ret)
		ret = (int)fi_cq_sread(m->obj.cq, &e, 1, NULL, TIMEOUT_MS);
	ms = xp_ms() - t0;
	TAP_OK(ret == 1 && e.op_context == &rctx && ms >= 150,
	       "reorder: the sender retries its held datagram from fi_cq_sread's sleep: the reply wakes it (%d, %llu ms)",
	       ret, (unsigned long long)ms);
	sync_wait(NULL);

	/* c. */
	ret = rank_open_to(&A, auto_hints("efa1-dgrm"), m->peer_name);
	/* its progress thread idle long enough to sleep */
	usleep(20000);
	sync_wait(NULL);
	if (!ret)
		ret = send_numbered(&A, A.peer, 102);
	TAP_EQ(ret, 0, "reorder, FI_PROGRESS_AUTO: an endpoint sends, then makes no call");
	sync_send(0);
	sync_wait(NULL);
	TAP_OK(!ret && cq_wait(A.obj.cq, &e, &err) == 1 && e.op_context == &A,
	       "reorder, FI_PROGRESS_AUTO: its send completed");
	rank_close(&A);

	/* d. */
	ret = rank_open_to(&C, dgram_hints("efa1-dgrm"), m->peer_name);
	sync_wait(NULL);
	if (!ret)
		ret = send_numbered(&C, C.peer, 103);
	TAP_EQ(ret, 0, "reorder: an endpoint sends and closes at once");
	rank_close(&C);
	sync_send(0);
	sync_wait(NULL);

	/* e. */
	ret = rank_open_to(&C, dgram_hints("efa1-dgrm"), m->peer_name);
	sync_wait(NULL);
	if (!ret)
		ret = send_numbered(&C, C.peer, 104);
	TAP_OK(!ret || ret == -FI_EAGAIN,
	       "reorder: an endpoint sends to a receiver without a buffer (%d) and closes",
	       ret);
	rank_close(&C);
	sync_send(0);
	sync_wait(NULL);
	ret = send_numbered(m, m->peer, 105);
	TAP_OK(!ret && cq_wait(m->obj.cq, &e, &err) == 1 && e.op_context == m,
	       "reorder: the next datagram sent");
	sync_wait(NULL);
}

/*
 * Both ranks on efa1 with its reorder_ppm at 1000000: every packet is
 * held back until the next one to its receiver, or until the sender's
 * progress flushes it.
 */
static void case_reorder(void)
{
	struct kfab_efa_dev *knobs = NULL;
	struct rank M = { 0 };
	uint64_t go = 0;
	int ret;

	ret = rank_open_both(&M, dgram_hints("efa1-dgrm"));
	point(!ret, "an endpoint on efa1, names swapped (%d)", ret);
	if (ret)
		goto out;
	if (R.id == 1) {
		if (!sync_wait(&go) && go)
			reorder_receiver(&M);
		goto out;
	}
	ret = kfab_efa_open(env_backend(), 1, &knobs);
	if (!ret)
		ret = kfab_efa_set_knob(knobs, KFAB_EFA_KNOB_REORDER_PPM,
					KFAB_EFA_KNOB_MAX);
	if (ret)
		tap_skip("reorder: efa1's reorder_ppm cannot be set (%s): the backend's knobs need root on kmod",
			 strerror(-ret));
	sync_send(!ret);
	if (!ret) {
		reorder_sender(&M);
		TAP_EQ(kfab_efa_set_knob(knobs, KFAB_EFA_KNOB_REORDER_PPM, 0),
		       0, "efa1's reorder_ppm back to 0");
	}
	kfab_efa_close(knobs);
out:
	rank_close(&M);
}

/* ------------------------------------------------------------------ */
/* ofi_rxd: FI_EP_RDM over this FI_EP_DGRAM */

#define RXD_PROV	"kfab_efa;ofi_rxd"
#define TAG_A		0xa11ceULL
#define TAG_B		0xb0bULL

static struct fi_info *rxd_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED;
	h->domain_attr->name = strdup("efa0-dgrm");
	h->fabric_attr->prov_name = strdup(RXD_PROV);
	return h;
}

/* Whether this libfabric has ofi_rxd over any provider. */
static bool rxd_present(void)
{
	struct fi_info *all = NULL;
	bool found = false;

	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &all))
		return false;
	for (struct fi_info *fi = all; fi && !found; fi = fi->next)
		found = strstr(fi->fabric_attr->prov_name, "ofi_rxd");
	fi_freeinfo(all);
	return found;
}

/* sync_wait() that keeps @r progressing meanwhile (ofi_rxd's acks). */
static int sync_wait_progress(struct rank *r)
{
	uint64_t end = xp_ms() + SYNC_MS;

	for (;;) {
		struct pollfd p = { .fd = R.sock, .events = POLLIN };
		struct fi_cq_msg_entry e;

		if (poll(&p, 1, 0) == 1)
			return sync_wait(NULL);
		if (xp_ms() >= end)
			return -ETIMEDOUT;
		fi_cq_read(r->obj.cq, &e, 0);
	}
}

static void rxd_receiver(struct rank *x, size_t big)
{
	int r, s, ta, tb, ret;
	void *ctx[2] = { &r, &s };
	void *tctx[2] = { &ta, &tb };
	size_t len[2] = { 0 };

	ret = (int)fi_recv(x->obj.ep, x->buf, RXD_MAX, x->desc, FI_ADDR_UNSPEC,
			   &r);
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(x->obj.cq, ctx, len, 1);
	xp_fill(x->sbuf, big, 51);
	if (!ret)
		ret = (int)fi_send(x->obj.ep, x->sbuf, big, x->desc, x->peer,
				   &s);
	if (!ret)
		ret = cq_wait_all(x->obj.cq, ctx + 1, NULL, 1);
	point(!ret && len[0] == 64 && xp_check(x->buf, 64, 50),
	      "ofi_rxd: 64 bytes received, %zu sent back (%d)", big, ret);

	ret = (int)fi_trecv(x->obj.ep, x->buf, 4096, x->desc, FI_ADDR_UNSPEC,
			    TAG_B, 0, &tb);
	if (!ret)
		ret = (int)fi_trecv(x->obj.ep, x->buf + 4096, 4096, x->desc,
				    FI_ADDR_UNSPEC, TAG_A, 0, &ta);
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(x->obj.cq, tctx, len, 2);
	point(!ret && len[0] == 100 && xp_check(x->buf + 4096, 100, 52) &&
	      len[1] == 200 && xp_check(x->buf, 200, 53),
	      "ofi_rxd: tagged receives posted B then A each get their tag's message (%d)",
	      ret);
}

static void rxd_sender(struct rank *x, size_t big)
{
	int r, s, sa, sb, ret;
	void *ctx[2] = { &s, &r };
	void *tctx[2] = { &sa, &sb };
	size_t len[2] = { 0 };

	ret = sync_wait_progress(x);
	if (!ret)
		ret = (int)fi_recv(x->obj.ep, x->buf, RXD_MAX, x->desc,
				   FI_ADDR_UNSPEC, &r);
	xp_fill(x->sbuf, 64, 50);
	if (!ret)
		ret = (int)fi_send(x->obj.ep, x->sbuf, 64, x->desc, x->peer,
				   &s);
	if (!ret)
		ret = cq_wait_all(x->obj.cq, ctx, len, 2);
	TAP_OK(!ret && len[1] == big && xp_check(x->buf, big, 51),
	       "ofi_rxd: 64 bytes sent, the reply of %zu bytes (%zu datagrams at least) intact (%d)",
	       big, big / R.mtu + 1, ret);

	ret = sync_wait_progress(x);
	xp_fill(x->sbuf, 100, 52);
	xp_fill(x->sbuf + 4096, 200, 53);
	if (!ret)
		ret = (int)fi_tsend(x->obj.ep, x->sbuf, 100, x->desc, x->peer,
				    TAG_A, &sa);
	if (!ret)
		ret = (int)fi_tsend(x->obj.ep, x->sbuf + 4096, 200, x->desc,
				    x->peer, TAG_B, &sb);
	if (!ret)
		ret = cq_wait_all(x->obj.cq, tctx, NULL, 2);
	TAP_EQ(ret, 0, "ofi_rxd: tagged sends of tags A and B completed");
}

/*
 * fi_getinfo() of "kfab_efa;ofi_rxd" gives an FI_EP_RDM endpoint over
 * ours: a message each way (the reply longer than three datagrams) and
 * two tagged ones matched by tag.
 */
static void case_rxd(void)
{
	struct rank X = { 0 };
	size_t big = 3 * R.mtu + 123;
	int ret;

	ret = rank_open_both(&X, rxd_hints());
	if (ret) {
		/* rank 0 says why for both */
		if (R.id == 1)
			goto out;
		if (!rxd_present())
			tap_skip("ofi_rxd: this libfabric has no ofi_rxd");
		else
			TAP_EQ(ret, 0, "ofi_rxd: fi_getinfo(%s, FI_EP_RDM) and an endpoint of it, names swapped",
			       RXD_PROV);
		goto out;
	}
	point(X.obj.info->ep_attr->type == FI_EP_RDM &&
	      !strcmp(X.obj.info->fabric_attr->prov_name, RXD_PROV),
	      "ofi_rxd: an FI_EP_RDM endpoint of %s on %s",
	      X.obj.info->fabric_attr->prov_name,
	      X.obj.info->domain_attr->name);
	if (R.id == 1)
		rxd_receiver(&X, big);
	else
		rxd_sender(&X, big);
	sync_send(0);
	sync_wait_progress(&X);
out:
	rank_close(&X);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const dgram_case_fn both[] = {
		case_auto,
		case_reorder,
		case_rxd,
	};

	return dgram_main("efa_dgram_progress_test", both,
			  sizeof(both) / sizeof(both[0]), NULL, 0);
}
