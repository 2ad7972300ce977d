// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa across processes: an owner and its senders in separate
 * processes that share only (gid, qpn, qkey) and rkeys through a pipe,
 * as two ranks of a job would.
 */

#include "efa_util.h"

#include <sched.h>

#define WAIT_MS		20000U

/* What an owner tells a sender or an RDMA initiator. */
struct addr_msg {
	__u8 gid[KFAB_EFA_GID_LEN];
	__u32 qpn;
	__u32 qkey;
	__u32 rkey;
	__u32 pad;
	__u64 vaddr;
	__u64 len;
};

static unsigned int other_dev(void)
{
	return efa_num_devices() >= 2 ? 1 : 0;
}

/* A child's first steps: the owner's address from @rfd, its own device. */
static int child_start(int rfd, struct addr_msg *a, struct efa_dev *d)
{
	if (hfi_recv(rfd, a, sizeof(*a), WAIT_MS))
		return HFI_CHILD_FAIL(1);
	if (efa_dev_open(d, other_dev(), false))
		return HFI_CHILD_FAIL(2);
	return 0;
}

/* Owner side kept by the parent. */
FIXTURE(xp) {
	struct efa_dev d;
	struct efa_qp qp;
	struct efa_owner o;
	struct hfi_child ch[2];
	struct kfab_knobs knobs;
};

FIXTURE_SETUP(xp)
{
	memset(self->ch, 0, sizeof(self->ch));
	self->ch[0].to = self->ch[0].from = -1;
	self->ch[1].to = self->ch[1].from = -1;
	efa_knobs_save(&self->knobs, 0);
	ASSERT_EQ(0, efa_dev_open(&self->d, 0, true));
	ASSERT_EQ(0, efa_qp_create(&self->qp, self->d.fd, true));
	memset(&self->o, 0, sizeof(self->o));
}

FIXTURE_TEARDOWN(xp)
{
	hfi_child_kill(&self->ch[0]);
	hfi_child_kill(&self->ch[1]);
	efa_knobs_restore(&self->knobs, 0);
	efa_qp_unmap(&self->qp);
	efa_dev_close(&self->d);
}

static void my_addr(FIXTURE_DATA(xp) *self, struct addr_msg *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->gid, self->d.info.gid, KFAB_EFA_GID_LEN);
	a->qpn = self->qp.cq.qpn;
	a->qkey = self->qp.cq.qkey;
}

/* ---- sender processes ---- */

#define NMSG		2000

struct sender_arg {
	unsigned int id;
	unsigned int nmsg;
};

struct payload {
	__u32 sender;
	__u32 n;
	__u8 fill[100];
};

/*
 * A sender: its own file (on the other device when there is one) and QP,
 * MAP_PEER of the owner, then nmsg messages, retrying on RNR. Reports its
 * gid and qpn back first.
 */
static int sender_child(void *argp, int rfd, int wfd)
{
	struct sender_arg *arg = argp;
	struct kfab_efa_create_qp cq;
	struct addr_msg a, me;
	struct efa_peer p;
	struct efa_dev d;
	struct payload pl;
	unsigned int n;
	int ret;

	ret = child_start(rfd, &a, &d);
	if (ret)
		return ret;
	if (efa_create_qp(d.fd, &cq))
		return HFI_CHILD_FAIL(3);
	if (efa_peer_open(&p, d.fd, a.gid, a.qpn, a.qkey, true))
		return HFI_CHILD_FAIL(4);
	memset(&me, 0, sizeof(me));
	memcpy(me.gid, d.info.gid, KFAB_EFA_GID_LEN);
	me.qpn = cq.qpn;
	if (hfi_send(wfd, &me, sizeof(me)))
		return HFI_CHILD_FAIL(5);
	for (n = 0; n < arg->nmsg; n++) {
		uint64_t t0 = hfi_now_ms();

		memset(&pl, 0, sizeof(pl));
		pl.sender = arg->id;
		pl.n = n;
		hfi_fill(pl.fill, sizeof(pl.fill), arg->id * 100000 + n);
		do {
			ret = efa_peer_send(d.fd, &p, d.info.gid, cq.qpn,
					    n ^ 0xabc00000, &pl,
					    (__u32)(8 + n % sizeof(pl.fill)));
			if (ret == EFA_RNR) {
				if (hfi_now_ms() - t0 > WAIT_MS)
					return HFI_CHILD_FAIL(6);
				sched_yield();
			}
		} while (ret == EFA_RNR);
		if (ret)
			return HFI_CHILD_FAIL(7);
	}
	/* wait until the owner is done before the QP goes */
	hfi_recv(rfd, &n, sizeof(n), WAIT_MS);
	return 0;
}

/* Two senders fill posted buffers; the owner sees each in ticket order. */
TEST_F_TIMEOUT(xp, senders_in_ticket_order, 120)
{
	struct sender_arg args[2] = { { 0, NMSG }, { 1, NMSG } };
	struct addr_msg a, who[2];
	struct kfab_efa_rx_entry e;
	unsigned int next[2] = { 0, 0 }, got = 0;
	__u8 buf[8192];
	__u8 fill[100];
	uint64_t t0;
	int s;

	my_addr(self, &a);
	efa_post(&self->qp.q, &self->o, self->qp.q.rx_entries);
	for (s = 0; s < 2; s++) {
		ASSERT_EQ(0, hfi_child_start(&self->ch[s], sender_child,
					     &args[s], 60));
		ASSERT_EQ(0, hfi_send(self->ch[s].to, &a, sizeof(a)));
		ASSERT_EQ(0, hfi_recv(self->ch[s].from, &who[s],
				      sizeof(who[s]), WAIT_MS));
	}
	t0 = hfi_now_ms();
	while (got < 2 * NMSG) {
		const struct payload *pl = (const void *)buf;
		unsigned int sid;

		if (!efa_poll(&self->qp.q, &self->o, &e, buf, sizeof(buf))) {
			ASSERT_GT(WAIT_MS, hfi_now_ms() - t0)
				TH_LOG("%u of %u messages", got, 2 * NMSG);
			sched_yield();
			continue;
		}
		/* the entry's seq is its ticket + 1 */
		ASSERT_EQ(self->o.head, e.seq);
		sid = pl->sender;
		ASSERT_GT(2U, sid);
		EXPECT_EQ(next[sid], pl->n) TH_LOG("sender %u", sid);
		EXPECT_EQ(8 + pl->n % sizeof(pl->fill), e.len);
		EXPECT_EQ(who[sid].qpn, e.src_qpn);
		EXPECT_EQ(0, memcmp(who[sid].gid, e.src_gid, 16));
		EXPECT_EQ(pl->n ^ 0xabc00000, e.imm);
		hfi_fill(fill, sizeof(fill), sid * 100000 + pl->n);
		EXPECT_EQ(0, memcmp(fill, pl->fill, e.len - 8));
		next[sid] = pl->n + 1;
		got++;
		/* the buffer is free again: repost it */
		EXPECT_EQ(1U, efa_post(&self->qp.q, &self->o, 1));
	}
	EXPECT_EQ(2U * NMSG, atomic_load(hfi_a32(&self->qp.q.ctrl->tail)));
	for (s = 0; s < 2; s++) {
		ASSERT_EQ(0, hfi_send(self->ch[s].to, &got, sizeof(got)));
		EXPECT_EQ(0, hfi_child_wait(&self->ch[s], WAIT_MS));
	}
}

/* A single sender that expects RNR (or an injected RNR) once. */
static int rnr_child(void *argp, int rfd, int wfd)
{
	int want = *(int *)argp, ret;
	struct efa_peer p;
	struct addr_msg a;
	struct efa_dev d;

	ret = child_start(rfd, &a, &d);
	if (ret)
		return ret;
	if (efa_peer_open(&p, d.fd, a.gid, a.qpn, a.qkey, true))
		return HFI_CHILD_FAIL(3);
	if (want == EFA_RNR_INJECTED && p.status->rnr_inject_ppm != 1000000)
		return HFI_CHILD_FAIL(4);
	for (int i = 0; i < 10; i++) {
		ret = efa_peer_send(d.fd, &p, d.info.gid, 1, 0, "x", 1);
		if (ret != want)
			return HFI_CHILD_FAIL(5);
	}
	if (hfi_send(wfd, &ret, sizeof(ret)))
		return HFI_CHILD_FAIL(6);
	return 0;
}

TEST_F(xp, rnr_when_nothing_posted)
{
	uint64_t rnrs = efa_sysfs_get(0, "counters/rnrs");
	int want = EFA_RNR;
	struct kfab_efa_rx_entry e;
	struct addr_msg a;

	my_addr(self, &a);
	ASSERT_EQ(0, hfi_child_start(&self->ch[0], rnr_child, &want, 30));
	ASSERT_EQ(0, hfi_send(self->ch[0].to, &a, sizeof(a)));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	EXPECT_EQ(10U, atomic_load(hfi_a64(&self->qp.q.ctrl->rnrs)));
	EXPECT_EQ(0U, atomic_load(hfi_a32(&self->qp.q.ctrl->tail)));
	EXPECT_EQ(rnrs + 10, efa_sysfs_get(0, "counters/rnrs"));
	EXPECT_EQ(0, efa_poll(&self->qp.q, &self->o, &e, NULL, 0));
}

TEST_F(xp, rnr_injected)
{
	uint64_t inj = efa_sysfs_get(0, "counters/injected_rnrs");
	int want = EFA_RNR_INJECTED;
	struct kfab_efa_rx_entry e;
	struct addr_msg a;

	KFAB_NEED_ROOT();
	ASSERT_EQ(0, efa_sysfs_write(0, "rnr_inject_ppm", "1000000"));
	EXPECT_EQ(1000000U, self->d.status->rnr_inject_ppm);
	efa_post(&self->qp.q, &self->o, 4);
	my_addr(self, &a);
	ASSERT_EQ(0, hfi_child_start(&self->ch[0], rnr_child, &want, 30));
	ASSERT_EQ(0, hfi_send(self->ch[0].to, &a, sizeof(a)));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	EXPECT_EQ(10U, atomic_load(hfi_a64(&self->qp.q.ctrl->injected_rnrs)));
	EXPECT_EQ(inj + 10, efa_sysfs_get(0, "counters/injected_rnrs"));
	EXPECT_EQ(0, efa_poll(&self->qp.q, &self->o, &e, NULL, 0));
	ASSERT_EQ(0, efa_sysfs_write(0, "rnr_inject_ppm", "0"));
	EXPECT_EQ(0U, self->d.status->rnr_inject_ppm);
}

/* ---- RDMA between processes ---- */

#define RDMA_LEN	(3 * 4096 + 123)

static int rdma_child(void *argp, int rfd, int wfd)
{
	struct kfab_efa_map_peer mp;
	struct addr_msg a;
	struct efa_dev d;
	__u8 *buf, *want;
	int ret = 0;

	(void)argp;
	ret = child_start(rfd, &a, &d);
	if (ret)
		return ret;
	if (efa_map_peer(d.fd, a.gid, a.qpn, a.qkey, &mp))
		return HFI_CHILD_FAIL(3);
	buf = hfi_anon(2 * RDMA_LEN);
	want = hfi_anon(RDMA_LEN);
	if (!buf || !want)
		return HFI_CHILD_FAIL(4);
	/* read what the owner put there */
	if (efa_rdma1(d.fd, mp.peer, KFAB_EFA_RDMA_READ, a.rkey, a.vaddr,
		      buf + 1, a.len, 0))
		return HFI_CHILD_FAIL(5);
	hfi_fill(want, a.len, 1234);
	if (memcmp(buf + 1, want, a.len))
		return HFI_CHILD_FAIL(6);
	/* write something else back, with NOTIFY */
	hfi_fill(buf, a.len, 4321);
	if (efa_rdma1(d.fd, mp.peer, KFAB_EFA_RDMA_WRITE, a.rkey, a.vaddr,
		      buf, a.len, KFAB_EFA_RDMA_NOTIFY))
		return HFI_CHILD_FAIL(7);
	/* the owner's rkey through another QP's handle would be refused */
	if (hfi_send(wfd, &ret, sizeof(ret)))
		return HFI_CHILD_FAIL(8);
	return 0;
}

TEST_F(xp, rdma_between_processes)
{
	unsigned int od = other_dev();
	uint64_t w0 = efa_sysfs_get(0, "counters/rdma_write_bytes");
	uint64_t r0 = efa_sysfs_get(0, "counters/rdma_read_bytes");
	struct kfab_efa_reg_mr m;
	struct addr_msg a;
	__u8 *mem, *want;
	int efd, ret;

	mem = hfi_anon(RDMA_LEN + EFA_PAGE);
	want = hfi_anon(RDMA_LEN);
	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, want);
	hfi_fill(mem + 7, RDMA_LEN, 1234);
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem + 7, RDMA_LEN,
				KFAB_EFA_ACCESS_ALL, &m));
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, efd));
	ASSERT_TRUE(efa_arm(&self->qp.q, &self->o));
	my_addr(self, &a);
	a.rkey = m.rkey;
	a.vaddr = m.vaddr;
	a.len = RDMA_LEN;
	ASSERT_EQ(0, hfi_child_start(&self->ch[0], rdma_child, NULL, 30));
	ASSERT_EQ(0, hfi_send(self->ch[0].to, &a, sizeof(a)));
	ASSERT_EQ(0, hfi_recv(self->ch[0].from, &ret, sizeof(ret), WAIT_MS));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	hfi_fill(want, RDMA_LEN, 4321);
	EXPECT_EQ(0, memcmp(mem + 7, want, RDMA_LEN));
	EXPECT_EQ(0, mem[6]);
	EXPECT_EQ(0, mem[7 + RDMA_LEN]);
	EXPECT_EQ(1, hfi_poll_in(efd, 1000));
	EXPECT_EQ(0U, efa_load_armed(self->qp.q.ctrl));
	/* counted on the target device (0), whoever initiated */
	EXPECT_EQ(w0 + RDMA_LEN, efa_sysfs_get(0, "counters/rdma_write_bytes"));
	EXPECT_EQ(r0 + RDMA_LEN, efa_sysfs_get(0, "counters/rdma_read_bytes"));
	(void)od;
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
	close(efd);
}

/* ---- qkey isolation ---- */

static int guess_child(void *argp, int rfd, int wfd)
{
	struct kfab_efa_map_peer mp;
	struct addr_msg a;
	struct efa_dev d;
	__u32 k;
	int ret = 0;

	(void)argp;
	ret = child_start(rfd, &a, &d);
	if (ret)
		return ret;
	for (int i = 0; i < 1000; i++) {
		if (getrandom(&k, sizeof(k), 0) != sizeof(k))
			k = (__u32)i * 2654435761U;
		if (k == a.qkey)
			continue;
		if (efa_map_peer(d.fd, a.gid, a.qpn, k, &mp) != -EACCES)
			return HFI_CHILD_FAIL(3);
	}
	if (efa_map_peer(d.fd, a.gid, a.qpn, 0, &mp) != -EACCES)
		return HFI_CHILD_FAIL(4);
	/* a neighbour qpn is unknown, not a leak of its existence */
	if (efa_map_peer(d.fd, a.gid, a.qpn ^ 0x800000, a.qkey, &mp) !=
	    -ENOENT)
		return HFI_CHILD_FAIL(5);
	if (hfi_send(wfd, &ret, sizeof(ret)))
		return HFI_CHILD_FAIL(6);
	return 0;
}

TEST_F(xp, qkey_isolation)
{
	struct addr_msg a;
	int ret;

	my_addr(self, &a);
	ASSERT_EQ(0, hfi_child_start(&self->ch[0], guess_child, NULL, 60));
	ASSERT_EQ(0, hfi_send(self->ch[0].to, &a, sizeof(a)));
	ASSERT_EQ(0, hfi_recv(self->ch[0].from, &ret, sizeof(ret), 50000));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	/* nothing written into our QP */
	EXPECT_EQ(0U, atomic_load(hfi_a32(&self->qp.q.ctrl->tail)));
}

/* ---- a blocked eventfd reader ---- */

/* The owner in a child: arms, then blocks in read() on its eventfd. */
static int sleeper_child(void *argp, int rfd, int wfd)
{
	struct kfab_efa_rx_entry e;
	struct efa_owner o = { 0 };
	struct addr_msg a;
	struct efa_qp qp;
	struct efa_dev d;
	uint64_t v;
	int efd;

	(void)argp;
	(void)rfd;
	if (efa_dev_open(&d, 0, false) || efa_qp_create(&qp, d.fd, true))
		return HFI_CHILD_FAIL(1);
	efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0 || efa_set_eventfd(d.fd, qp.cq.qpn, efd))
		return HFI_CHILD_FAIL(2);
	efa_post(&qp.q, &o, 4);
	if (!efa_arm(&qp.q, &o))
		return HFI_CHILD_FAIL(3);
	memset(&a, 0, sizeof(a));
	memcpy(a.gid, d.info.gid, 16);
	a.qpn = qp.cq.qpn;
	a.qkey = qp.cq.qkey;
	if (hfi_send(wfd, &a, sizeof(a)))
		return HFI_CHILD_FAIL(4);
	if (read(efd, &v, sizeof(v)) != sizeof(v) || v != 1)
		return HFI_CHILD_FAIL(5);
	if (!efa_poll(&qp.q, &o, &e, NULL, 0) || e.len != 5 || e.imm != 77)
		return HFI_CHILD_FAIL(6);
	if (efa_load_armed(qp.q.ctrl))
		return HFI_CHILD_FAIL(7);
	return 0;
}

TEST_F(xp, eventfd_wakes_on_notify_only)
{
	uint64_t n0 = efa_sysfs_get(0, "counters/notifies");
	struct kfab_efa_map_peer mp;
	struct efa_peer p;
	struct addr_msg a;
	int status;

	ASSERT_EQ(0, hfi_child_start(&self->ch[0], sleeper_child, NULL, 30));
	ASSERT_EQ(0, hfi_recv(self->ch[0].from, &a, sizeof(a), WAIT_MS));
	ASSERT_EQ(0, efa_peer_open(&p, self->d.fd, a.gid, a.qpn, a.qkey, true));
	/* not woken by a NOTIFY of another QP */
	ASSERT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
				  self->qp.cq.qpn, self->qp.cq.qkey, &mp));
	EXPECT_EQ(0, efa_notify(self->d.fd, mp.peer));
	usleep(300000);
	EXPECT_EQ(0, waitpid(self->ch[0].pid, &status, WNOHANG))
		TH_LOG("the sleeper woke without a NOTIFY");
	EXPECT_EQ(1U, efa_load_armed(p.q.ctrl));
	/* a send finds it armed and notifies */
	EXPECT_EQ(0, efa_peer_send(self->d.fd, &p, self->d.info.gid,
				   self->qp.cq.qpn, 77, "hello", 5));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	EXPECT_EQ(n0 + 2, efa_sysfs_get(0, "counters/notifies"));
	efa_peer_unmap(&p);
}

/* ---- a process killed holding everything ---- */

static int holder_child(void *argp, int rfd, int wfd)
{
	struct kfab_efa_map_peer mp;
	struct addr_msg *a = argp;
	struct efa_qp qp[3];
	struct efa_dev d;
	struct efa_peer p;
	__u8 *mem;
	int ok = 1;

	(void)rfd;
	if (efa_dev_open(&d, other_dev(), true))
		return HFI_CHILD_FAIL(1);
	for (int i = 0; i < 3; i++)
		if (efa_qp_create(&qp[i], d.fd, true))
			return HFI_CHILD_FAIL(2);
	mem = hfi_anon(64 * EFA_PAGE);
	if (!mem)
		return HFI_CHILD_FAIL(3);
	for (int i = 0; i < 8; i++)
		if (efa_reg_mr(d.fd, mem + i * 8 * EFA_PAGE, 8 * EFA_PAGE,
			       KFAB_EFA_ACCESS_ALL, NULL))
			return HFI_CHILD_FAIL(4);
	if (efa_peer_open(&p, d.fd, a->gid, a->qpn, a->qkey, true))
		return HFI_CHILD_FAIL(5);
	if (efa_map_peer(d.fd, d.info.gid, qp[0].cq.qpn, qp[0].cq.qkey, &mp))
		return HFI_CHILD_FAIL(6);
	/* a second file, open only through its mappings */
	{
		struct efa_dev d2;
		struct efa_qp q2;

		if (efa_dev_open(&d2, 0, true) ||
		    efa_qp_create(&q2, d2.fd, true))
			return HFI_CHILD_FAIL(7);
		if (efa_reg_mr(d2.fd, mem, EFA_PAGE, 0, NULL))
			return HFI_CHILD_FAIL(8);
		close(d2.fd);
	}
	if (hfi_send(wfd, &ok, sizeof(ok)))
		return HFI_CHILD_FAIL(9);
	for (;;)
		pause();
}

TEST_F(xp, killed_process_leaves_nothing)
{
	unsigned int od = other_dev();
	uint64_t qps0 = efa_sysfs_get(0, "counters/qps");
	uint64_t mrs0 = efa_sysfs_get(0, "counters/mrs");
	uint64_t pin0 = efa_sysfs_get(0, "counters/pinned_pages");
	uint64_t nfree0 = efa_sysfs_get(od, "nfreeqps");
	uint64_t bq = efa_sysfs_get(od, "counters/qps");
	uint64_t bm = efa_sysfs_get(od, "counters/mrs");
	uint64_t bp = efa_sysfs_get(od, "counters/pinned_pages");
	struct addr_msg a;
	int ok = 0;

	my_addr(self, &a);
	ASSERT_EQ(0, hfi_child_start(&self->ch[0], holder_child, &a, 30));
	ASSERT_EQ(0, hfi_recv(self->ch[0].from, &ok, sizeof(ok), WAIT_MS));
	ASSERT_EQ(1, ok);
	if (od) {
		EXPECT_EQ(bq + 3, efa_sysfs_get(od, "counters/qps"));
		EXPECT_EQ(bm + 8, efa_sysfs_get(od, "counters/mrs"));
		EXPECT_EQ(bp + 64, efa_sysfs_get(od, "counters/pinned_pages"));
		EXPECT_EQ(qps0 + 1, efa_sysfs_get(0, "counters/qps"));
	}
	EXPECT_EQ(nfree0 - (od ? 3 : 4), efa_sysfs_get(od, "nfreeqps"));
	kill(self->ch[0].pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, hfi_child_wait(&self->ch[0], WAIT_MS));
	EXPECT_EQ(0, efa_sysfs_wait(od, "counters/qps", bq, 5000));
	EXPECT_EQ(0, efa_sysfs_wait(od, "counters/mrs", bm, 5000));
	EXPECT_EQ(0, efa_sysfs_wait(od, "counters/pinned_pages", bp, 5000));
	EXPECT_EQ(0, efa_sysfs_wait(od, "nfreeqps", nfree0, 5000));
	if (od) {
		EXPECT_EQ(0, efa_sysfs_wait(0, "counters/qps", qps0, 5000));
		EXPECT_EQ(0, efa_sysfs_wait(0, "counters/mrs", mrs0, 5000));
		EXPECT_EQ(0, efa_sysfs_wait(0, "counters/pinned_pages", pin0,
					    5000));
	}
	/* our QP is untouched */
	EXPECT_EQ(0U, efa_load_dead(self->qp.q.ctrl));
}

/* ---- the owner exits while a peer maps its ring ---- */

static int owner_child(void *argp, int rfd, int wfd)
{
	struct kfab_efa_reg_mr m;
	struct addr_msg a;
	struct efa_qp qp;
	struct efa_dev d;
	__u8 *mem;
	int go;

	(void)argp;
	if (efa_dev_open(&d, other_dev(), false) ||
	    efa_qp_create(&qp, d.fd, true))
		return HFI_CHILD_FAIL(1);
	mem = hfi_anon(EFA_PAGE);
	if (!mem || efa_reg_mr(d.fd, mem, EFA_PAGE, KFAB_EFA_ACCESS_ALL, &m))
		return HFI_CHILD_FAIL(2);
	memset(&a, 0, sizeof(a));
	memcpy(a.gid, d.info.gid, 16);
	a.qpn = qp.cq.qpn;
	a.qkey = qp.cq.qkey;
	a.rkey = m.rkey;
	a.vaddr = m.vaddr;
	qp.q.ring[1].imm = 0x5151;
	if (hfi_send(wfd, &a, sizeof(a)))
		return HFI_CHILD_FAIL(3);
	if (hfi_recv(rfd, &go, sizeof(go), WAIT_MS))
		return HFI_CHILD_FAIL(4);
	return 0;	/* exits with everything */
}

TEST_F(xp, owner_exits_peer_mapping_stays)
{
	unsigned int od = other_dev();
	uint64_t bq = efa_sysfs_get(od, "counters/qps");
	uint64_t bm = efa_sysfs_get(od, "counters/mrs");
	struct kfab_efa_map_peer mp;
	__u8 local[64];
	struct efa_peer p;
	struct addr_msg a;
	int go = 1;

	ASSERT_EQ(0, hfi_child_start(&self->ch[0], owner_child, NULL, 30));
	ASSERT_EQ(0, hfi_recv(self->ch[0].from, &a, sizeof(a), WAIT_MS));
	ASSERT_EQ(0, efa_peer_open(&p, self->d.fd, a.gid, a.qpn, a.qkey, true));
	EXPECT_EQ(0x5151U, p.q.ring[1].imm);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, p.mp.peer, KFAB_EFA_RDMA_READ,
			       a.rkey, a.vaddr, local, 64, 0));
	ASSERT_EQ(0, hfi_send(self->ch[0].to, &go, sizeof(go)));
	EXPECT_EQ(0, hfi_child_wait(&self->ch[0], WAIT_MS));
	/* the mapping is still the QP's memory, now dead */
	EXPECT_NE(0U, efa_load_dead(p.q.ctrl));
	EXPECT_EQ(0x5151U, p.q.ring[1].imm);
	p.q.ring[2].imm = 9;
	p.q.bufs[0] = 1;
	EXPECT_EQ(9U, p.q.ring[2].imm);
	EXPECT_EQ(-ECONNRESET, efa_rdma1(self->d.fd, p.mp.peer,
					 KFAB_EFA_RDMA_READ, a.rkey, a.vaddr,
					 local, 64, 0));
	EXPECT_EQ(-ECONNRESET, efa_rdma1(self->d.fd, p.mp.peer,
					 KFAB_EFA_RDMA_WRITE, a.rkey, a.vaddr,
					 local, 64, 0));
	EXPECT_EQ(-ECONNRESET, efa_notify(self->d.fd, p.mp.peer));
	/* the QP is gone from the device table: no new handle */
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, a.gid, a.qpn, a.qkey,
					&mp));
	EXPECT_EQ(0, efa_unmap_peer(self->d.fd, p.mp.peer));
	EXPECT_EQ(0, efa_sysfs_wait(od, "counters/qps", bq, 5000));
	EXPECT_EQ(0, efa_sysfs_wait(od, "counters/mrs", bm, 5000));
	efa_peer_unmap(&p);
}

EFA_TEST_MAIN
