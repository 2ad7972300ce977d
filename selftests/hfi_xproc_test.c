// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi across processes: peers producing into an owner's queues, SDMA
 * into another process's TID buffer, eventfd wakeups, jkey isolation between
 * jobs and users, and what is left behind when a process dies.
 *
 * Children are forked with hfi_child_start() and follow the parent step by
 * step over their pipes; every wait is bounded.
 */

#include "hfi_util.h"

#include <grp.h>
#include <sched.h>

#define MiB		(1024UL * 1024)
#define WAIT_MS		30000	/* one step of a child */
#define CHILD_SECS	180	/* a child's alarm() */
#define QUIET_MS	300	/* how long "nothing happens" is watched */
#define NOBODY		65534
#define NCHILD		4

FIXTURE(xp) {
	struct hfi_ctx own;	/* this process's context on unit 0 */
	__u8 uuid[16];		/* its job */
	int efd;		/* its eventfd, non-blocking */
	struct hfi_child ch[NCHILD];
	int kmsg;
};

FIXTURE_SETUP(xp)
{
	int ret;

	for (int i = 0; i < NCHILD; i++) {
		self->ch[i].pid = 0;
		self->ch[i].to = -1;
		self->ch[i].from = -1;
	}
	self->efd = -1;
	self->kmsg = hfi_kmsg_open();
	hfi_uuid_random(self->uuid);
	ret = hfi_ctx_assign(&self->own, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT,
			     0);
	ASSERT_EQ(0, ret) TH_LOG("assign: %s", strerror(-ret));
	ret = hfi_ctx_map(&self->own);
	ASSERT_EQ(0, ret) TH_LOG("map: %s", strerror(-ret));
	self->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->efd);
	ASSERT_EQ(0, hfi_set_eventfd(self->own.fd, self->efd));
}

FIXTURE_TEARDOWN(xp)
{
	for (int i = 0; i < NCHILD; i++)
		hfi_child_kill(&self->ch[i]);
	hfi_ctx_close(&self->own);
	if (self->efd >= 0)
		close(self->efd);
	if (self->kmsg >= 0) {
		EXPECT_EQ(0, hfi_kmsg_bad(self->kmsg));
		close(self->kmsg);
	}
}

/*
 * In a child: let go of the parent's context. fork() duplicated its fd and
 * its mappings, which would keep the parent's file (and context) alive.
 */
static void child_drop_parent(FIXTURE_DATA(xp) *self)
{
	hfi_ctx_close(&self->own);
	close(self->efd);
}

/*
 * In a child: child_drop_parent(), then its own mapped context on unit 0
 * in @self's job, an eventfd set on it and a TID on a fresh page. 0 or the
 * failed step.
 */
static int child_ctx(FIXTURE_DATA(xp) *self, struct hfi_ctx *c, int *efd,
		     __u32 *tid)
{
	__u8 *buf = hfi_anon(HFI_PAGE);

	child_drop_parent(self);
	*efd = eventfd(0, EFD_CLOEXEC);
	if (*efd < 0 || !buf)
		return HFI_CHILD_FAIL(1);
	if (hfi_ctx_assign(c, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0) ||
	    hfi_ctx_map(c) || hfi_set_eventfd(c->fd, *efd) ||
	    hfi_tid_update(c->fd, buf, HFI_PAGE, tid, NULL))
		return HFI_CHILD_FAIL(2);
	return 0;
}

/* Wait until @pid sleeps (state S), i.e. is blocked in what it announced. */
static int wait_sleeping(pid_t pid, int timeout_ms)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	for (int waited = 0;; waited++) {
		if (hfi_read_file(path, buf, sizeof(buf)) > 0) {
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'S')
				return 0;
		}
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

static int drop_to_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -errno;
	return 0;
}

static __u32 random_u32(void)
{
	__u32 v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (__u32)rand();
	return v;
}

/* ------------------------------------------------------------------ */
/*
 * Packets: everything about the @seq-th packet of @producer follows from
 * (producer, seq, kind), which its header carries, so the consumer checks
 * every byte of header and payload without being told what was sent.
 */

enum { PKT_ANY, PKT_PAYLOAD, PKT_BARE, PKT_KINDS };

struct pkt_hdr {
	__u32 producer;
	__u32 seq;
	__u32 kind;
	__u32 len;
};

struct pkt {
	__u8 hdr[KFAB_HFI_RHQ_HDR_BYTES];
	size_t hdr_len;
	__u32 len;
};

static __u32 pkt_hash(__u32 producer, __u32 seq)
{
	__u32 h = seq * 2654435761u ^ (producer + 1) * 40503u;

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return h;
}

/* Header into @p, payload into @payload (room for @eager_size bytes). */
static void pkt_make(struct pkt *p, __u8 *payload, __u32 producer, __u32 seq,
		     __u32 kind, __u32 eager_size)
{
	__u32 h = pkt_hash(producer, seq);
	struct pkt_hdr ph = { producer, seq, kind, 0 };

	if (kind == PKT_PAYLOAD) {
		ph.len = 1 + h % eager_size;
	} else if (kind == PKT_ANY) {
		switch (h % 4) {
		case 1:
			ph.len = eager_size;
			break;
		case 2:
			ph.len = 1 + (h >> 4) % 64;
			break;
		case 3:
			ph.len = 1 + (h >> 4) % eager_size;
			break;
		}
	}
	p->len = ph.len;
	p->hdr_len = sizeof(ph) + (h >> 20) % (sizeof(p->hdr) - sizeof(ph) + 1);
	memset(p->hdr, 0, sizeof(p->hdr));
	memcpy(p->hdr, &ph, sizeof(ph));
	hfi_fill(p->hdr + sizeof(ph), p->hdr_len - sizeof(ph), h);
	hfi_fill(payload, ph.len, h ^ 0x5a5a5a5a);
}

/*
 * 0 if @e and @payload are exactly the packet its header names, else what
 * differs: 1 the header's own fields, 2 header bytes, 3 length, 4 payload.
 * @scratch has room for @eager_size bytes.
 */
static int pkt_check(const struct kfab_hfi_rhq_entry *e, const __u8 *payload,
		     __u32 eager_size, __u8 *scratch)
{
	struct pkt_hdr ph;
	struct pkt want;

	memcpy(&ph, e->hdr, sizeof(ph));
	if (ph.kind >= PKT_KINDS || e->reserved)
		return 1;
	pkt_make(&want, scratch, ph.producer, ph.seq, ph.kind, eager_size);
	if (memcmp(want.hdr, e->hdr, sizeof(e->hdr)))
		return 2;
	if (e->eager_len != want.len)
		return 3;
	if (want.len && memcmp(payload, scratch, want.len))
		return 4;
	return 0;
}

static struct pkt_hdr pkt_hdr_of(const struct kfab_hfi_rhq_entry *e)
{
	struct pkt_hdr ph;

	memcpy(&ph, e->hdr, sizeof(ph));
	return ph;
}

/* hfi_peer_produce() of a generated packet. */
static int pkt_send(int fd, struct hfi_peer *p, __u8 *payload, __u32 producer,
		    __u32 seq, __u32 kind)
{
	struct pkt pk;

	pkt_make(&pk, payload, producer, seq, kind, p->q.eager_size);
	return hfi_peer_produce(fd, p, pk.hdr, pk.hdr_len, payload, pk.len);
}

/*
 * The owner's receive loop (steps 4 to 6): 1 with the next entry in @e and
 * its payload in @payload, 0 when nothing arrived for @timeout_ms while
 * armed, or -errno.
 */
static int rx_next(struct hfi_queue *q, struct hfi_consumer *c, int efd,
		   struct kfab_hfi_rhq_entry *e, __u8 *payload, int timeout_ms)
{
	__u64 v;
	int ret;

	for (;;) {
		if (hfi_consume(q, c, e, payload, q->eager_size))
			return 1;
		if (!hfi_consumer_arm(q, c))
			continue;
		ret = hfi_poll_in(efd, timeout_ms);
		if (ret <= 0)
			return ret;
		if (read(efd, &v, sizeof(v)) != sizeof(v))
			return -errno;
	}
}

/* ------------------------------------------------------------------ */
/* Peers producing into the parent's queues */

struct prod_arg {
	FIXTURE_DATA(xp) *self;
	__u32 id;
	__u32 count;
};

struct prod_report {
	__u64 rhq_drops;
	__u64 eager_drops;
};

/*
 * A peer in a process of its own (on unit id % units): produces @count
 * packets into the parent's context when told to, retrying each packet
 * the queue drops as full, and reports the drops it saw.
 */
static int producer_child(void *arg, int rfd, int wfd)
{
	struct prod_arg *a = arg;
	__u32 lid = a->self->own.info.lid, ctxt = a->self->own.info.ctxt;
	struct prod_report rep = { 0, 0 };
	struct hfi_peer p;
	struct hfi_ctx c;
	__u8 *payload;
	int ret = 0;
	char go;

	child_drop_parent(a->self);
	if (hfi_ctx_assign(&c, a->id % hfi_num_units(), a->self->uuid,
			   KFAB_HFI_PKEY_DEFAULT, 0))
		return HFI_CHILD_FAIL(1);
	if (hfi_peer_open(&p, c.fd, lid, ctxt, true))
		return HFI_CHILD_FAIL(2);
	payload = malloc(p.q.eager_size);
	if (!payload)
		return HFI_CHILD_FAIL(3);
	if (hfi_send(wfd, "r", 1) || hfi_recv(rfd, &go, 1, WAIT_MS))
		return HFI_CHILD_FAIL(4);
	for (__u32 seq = 0; seq < a->count; seq++) {
		for (;;) {
			ret = pkt_send(c.fd, &p, payload, a->id, seq, PKT_ANY);
			if (ret == -ENOSPC)
				rep.rhq_drops++;
			else if (ret == -ENOBUFS)
				rep.eager_drops++;
			else
				break;
			sched_yield();
		}
		if (ret)
			return HFI_CHILD_FAIL(5);
	}
	if (hfi_send(wfd, &rep, sizeof(rep)))
		return HFI_CHILD_FAIL(6);
	return 0;
}

/*
 * @nprod producer processes at once, each wrapping both rings: the parent
 * receives every packet once, byte-exact, in each producer's order, and the
 * drops the producers saw are the ones counted in ctrl and sysfs.
 */
static void run_producers(struct __test_metadata *_metadata,
			  FIXTURE_DATA(xp) *self, __u32 nprod)
{
	struct hfi_queue *q = &self->own.q;
	__u32 ring = q->rhq_entries > q->eager_count ? q->rhq_entries :
						       q->eager_count;
	__u32 count = 2 * ring / nprod + 17, next[NCHILD] = { 0 };
	uint64_t rhq0 = hfi_sysfs_get(0, "counters/rhq_full_drops");
	uint64_t eager0 = hfi_sysfs_get(0, "counters/eager_full_drops");
	__u64 rhq_drops = 0, eager_drops = 0, with_payload = 0;
	struct hfi_consumer cons = { 0, 0 };
	struct prod_arg args[NCHILD];
	struct kfab_hfi_rhq_entry e;
	struct prod_report rep;
	__u8 *payload, *scratch;
	char ready;

	payload = malloc(q->eager_size);
	scratch = malloc(q->eager_size);
	ASSERT_NE(NULL, payload);
	ASSERT_NE(NULL, scratch);
	for (__u32 i = 0; i < nprod; i++) {
		args[i] = (struct prod_arg){ self, i, count };
		ASSERT_EQ(0, hfi_child_start(&self->ch[i], producer_child,
					     &args[i], CHILD_SECS));
	}
	for (__u32 i = 0; i < nprod; i++)
		ASSERT_EQ(0, hfi_recv(self->ch[i].from, &ready, 1, WAIT_MS));
	for (__u32 i = 0; i < nprod; i++)
		ASSERT_EQ(0, hfi_send(self->ch[i].to, "g", 1));

	for (__u32 n = 0; n < nprod * count; n++) {
		struct pkt_hdr ph;

		ASSERT_EQ(1, rx_next(q, &cons, self->efd, &e, payload, WAIT_MS))
			TH_LOG("packet %u of %u never came", n, nprod * count);
		ASSERT_EQ(0, pkt_check(&e, payload, q->eager_size, scratch))
			TH_LOG("packet %u is not what was sent", n);
		ph = pkt_hdr_of(&e);
		ASSERT_GT(nprod, ph.producer);
		ASSERT_EQ(next[ph.producer], ph.seq)
			TH_LOG("producer %u out of order", ph.producer);
		next[ph.producer]++;
		with_payload += e.eager_len != 0;
	}
	EXPECT_EQ(0, hfi_consume(q, &cons, &e, NULL, 0));

	for (__u32 i = 0; i < nprod; i++) {
		ASSERT_EQ(0, hfi_recv(self->ch[i].from, &rep, sizeof(rep),
				      WAIT_MS));
		rhq_drops += rep.rhq_drops;
		eager_drops += rep.eager_drops;
		EXPECT_EQ(0, hfi_child_wait(&self->ch[i], WAIT_MS));
	}
	/* one ticket per published packet, none for a dropped one */
	EXPECT_EQ(with_payload << 32 | (__u64)nprod * count,
		  atomic_load(hfi_a64(&q->kctrl->tail)));
	EXPECT_EQ(atomic_load(hfi_a64(&q->kctrl->tail)),
		  atomic_load(hfi_a64(&q->kctrl->head)));
	EXPECT_EQ(rhq_drops, atomic_load(hfi_a64(&q->kctrl->rhq_full_drops)));
	EXPECT_EQ(eager_drops,
		  atomic_load(hfi_a64(&q->kctrl->eager_full_drops)));
	EXPECT_EQ(rhq0 + rhq_drops,
		  hfi_sysfs_get(0, "counters/rhq_full_drops"));
	EXPECT_EQ(eager0 + eager_drops,
		  hfi_sysfs_get(0, "counters/eager_full_drops"));
	free(payload);
	free(scratch);
}

TEST_F_TIMEOUT(xp, peer_produces_in_order, 300)
{
	run_producers(_metadata, self, 1);
}

TEST_F_TIMEOUT(xp, three_peers_concurrently, 300)
{
	run_producers(_metadata, self, 3);
}

struct fill_report {
	__u32 ok_payload;	/* eager_count packets with a payload */
	__u32 eager_full;	/* 3 more with a payload */
	__u32 ok_bare;		/* header-only up to rhq_entries */
	__u32 rhq_full;		/* 2 more without a payload, 1 with */
	__u32 ok_again;		/* eager_count more once drained */
};

/* Fills the parent's queues, which nobody consumes, past both limits. */
static int filler_child(void *arg, int rfd, int wfd)
{
	FIXTURE_DATA(xp) *self = arg;
	__u32 lid = self->own.info.lid, ctxt = self->own.info.ctxt;
	struct fill_report rep = { 0, 0, 0, 0, 0 };
	__u32 seq = 0, nr, ne;
	struct hfi_peer p;
	struct hfi_ctx c;
	__u8 *payload;
	char go;

	child_drop_parent(self);
	if (hfi_ctx_assign(&c, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0) ||
	    hfi_peer_open(&p, c.fd, lid, ctxt, true))
		return HFI_CHILD_FAIL(1);
	payload = malloc(p.q.eager_size);
	if (!payload)
		return HFI_CHILD_FAIL(2);
	nr = p.q.rhq_entries;
	ne = p.q.eager_count;
	for (__u32 i = 0; i < ne; i++) {
		if (!pkt_send(c.fd, &p, payload, 0, seq, PKT_PAYLOAD)) {
			rep.ok_payload++;
			seq++;
		}
	}
	for (__u32 i = 0; i < 3; i++)
		if (pkt_send(c.fd, &p, payload, 0, seq, PKT_PAYLOAD) ==
		    -ENOBUFS)
			rep.eager_full++;
	for (__u32 i = 0; i < nr - ne; i++) {
		if (!pkt_send(c.fd, &p, payload, 0, seq, PKT_BARE)) {
			rep.ok_bare++;
			seq++;
		}
	}
	for (__u32 i = 0; i < 3; i++)
		if (pkt_send(c.fd, &p, payload, 0, seq,
			     i < 2 ? PKT_BARE : PKT_PAYLOAD) == -ENOSPC)
			rep.rhq_full++;
	if (hfi_send(wfd, &rep, sizeof(rep)) ||
	    hfi_recv(rfd, &go, 1, WAIT_MS))
		return HFI_CHILD_FAIL(3);
	for (__u32 i = 0; i < ne; i++) {
		if (!pkt_send(c.fd, &p, payload, 0, seq, PKT_PAYLOAD)) {
			rep.ok_again++;
			seq++;
		}
	}
	if (hfi_send(wfd, &rep, sizeof(rep)))
		return HFI_CHILD_FAIL(4);
	return 0;
}

/* Receive @n packets of producer 0 from @seq on, already queued. */
static void drain(struct __test_metadata *_metadata, struct hfi_queue *q,
		  struct hfi_consumer *cons, __u32 seq, __u32 n,
		  __u32 n_payload)
{
	__u8 *payload = malloc(q->eager_size), *scratch = malloc(q->eager_size);
	struct kfab_hfi_rhq_entry e;

	ASSERT_NE(NULL, payload);
	ASSERT_NE(NULL, scratch);
	for (__u32 i = 0; i < n; i++) {
		ASSERT_EQ(1, hfi_consume(q, cons, &e, payload, q->eager_size))
			TH_LOG("packet %u missing", seq + i);
		ASSERT_EQ(0, pkt_check(&e, payload, q->eager_size, scratch));
		EXPECT_EQ(0U, pkt_hdr_of(&e).producer);
		EXPECT_EQ(seq + i, pkt_hdr_of(&e).seq);
		EXPECT_EQ(i < n_payload, e.eager_len != 0);
	}
	EXPECT_EQ(0, hfi_consume(q, cons, &e, NULL, 0));
	free(payload);
	free(scratch);
}

TEST_F_TIMEOUT(xp, ring_full_drops, 120)
{
	struct hfi_queue *q = &self->own.q;
	__u32 nr = q->rhq_entries, ne = q->eager_count;
	uint64_t rhq0 = hfi_sysfs_get(0, "counters/rhq_full_drops");
	uint64_t eager0 = hfi_sysfs_get(0, "counters/eager_full_drops");
	struct hfi_consumer cons = { 0, 0 };
	struct hfi_child *ch = &self->ch[0];
	struct fill_report rep;

	if (ne >= nr)
		SKIP(return, "eager_count %u >= rhq_entries %u", ne, nr);
	ASSERT_EQ(0, hfi_child_start(ch, filler_child, self, CHILD_SECS));
	ASSERT_EQ(0, hfi_recv(ch->from, &rep, sizeof(rep), WAIT_MS));
	EXPECT_EQ(ne, rep.ok_payload);
	EXPECT_EQ(3U, rep.eager_full);
	EXPECT_EQ(nr - ne, rep.ok_bare);
	EXPECT_EQ(3U, rep.rhq_full);
	EXPECT_EQ(3U, atomic_load(hfi_a64(&q->kctrl->rhq_full_drops)));
	EXPECT_EQ(3U, atomic_load(hfi_a64(&q->kctrl->eager_full_drops)));
	EXPECT_EQ(0U, atomic_load(hfi_a64(&q->kctrl->injected_drops)));
	EXPECT_EQ((__u64)ne << 32 | nr, atomic_load(hfi_a64(&q->kctrl->tail)));
	EXPECT_EQ(0U, atomic_load(hfi_a64(&q->kctrl->head)));
	EXPECT_EQ(rhq0 + 3, hfi_sysfs_get(0, "counters/rhq_full_drops"));
	EXPECT_EQ(eager0 + 3, hfi_sysfs_get(0, "counters/eager_full_drops"));

	/* everything that was not dropped is there, in order */
	drain(_metadata, q, &cons, 0, nr, ne);
	/* the freed room is usable by the peer again */
	ASSERT_EQ(0, hfi_send(ch->to, "m", 1));
	ASSERT_EQ(0, hfi_recv(ch->from, &rep, sizeof(rep), WAIT_MS));
	EXPECT_EQ(ne, rep.ok_again);
	drain(_metadata, q, &cons, nr, ne, ne);
	EXPECT_EQ(0, hfi_child_wait(ch, WAIT_MS));

	/* the drops of a released context stay counted */
	hfi_ctx_close(&self->own);
	EXPECT_EQ(rhq0 + 3, hfi_sysfs_get(0, "counters/rhq_full_drops"));
	EXPECT_EQ(eager0 + 3, hfi_sysfs_get(0, "counters/eager_full_drops"));
}

/* ------------------------------------------------------------------ */
/* SDMA into another process's TID buffer */

#define RX_TID_LEN	(3 * MiB + 4321)

struct rx_info {
	__u32 ctxt;
	__u32 tid;
	__u32 npages;
	__s32 err;
};

struct rx_round {
	__u64 seed;
	__u64 off;
	__u64 len;	/* 0: only check that nothing changed */
	__u64 quit;
};

/* Where the TID buffer starts in the receiver's buffer: not page aligned. */
static size_t rx_head(void)
{
	return 2 * HFI_PAGE + 123;
}

/*
 * The receiver pins the middle of a private buffer and, after each round,
 * compares the whole buffer with a shadow copy to which it applied what the
 * sender says it sent: the bytes landed where they should and nowhere else.
 */
static int receiver_child(void *arg, int rfd, int wfd)
{
	FIXTURE_DATA(xp) *self = arg;
	size_t head = rx_head(), size = 2 * head + RX_TID_LEN;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct rx_info info = { 0, 0, 0, 0 };
	struct rx_round r;
	struct hfi_ctx c;
	__u8 *buf, *shadow;
	__u64 res;

	child_drop_parent(self);
	/* as root; otherwise the pin may hit RLIMIT_MEMLOCK and is skipped */
	setrlimit(RLIMIT_MEMLOCK, &rl);
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	shadow = malloc(size);
	if (buf == MAP_FAILED || !shadow)
		return HFI_CHILD_FAIL(1);
	hfi_fill(buf, size, 0xfeed);
	memcpy(shadow, buf, size);
	if (hfi_ctx_assign(&c, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0))
		return HFI_CHILD_FAIL(2);
	info.ctxt = c.info.ctxt;
	info.err = hfi_tid_update(c.fd, buf + head, RX_TID_LEN, &info.tid,
				  &info.npages);
	if (hfi_send(wfd, &info, sizeof(info)))
		return HFI_CHILD_FAIL(3);
	if (info.err)
		return 0;
	for (;;) {
		if (hfi_recv(rfd, &r, sizeof(r), WAIT_MS))
			return HFI_CHILD_FAIL(4);
		if (r.quit)
			return 0;
		if (r.len)
			hfi_fill(shadow + head + r.off, r.len, (__u32)r.seed);
		res = 0;
		if (memcmp(buf, shadow, size)) {
			while (buf[res] == shadow[res])
				res++;
			res++;
		}
		if (hfi_send(wfd, &res, sizeof(res)))
			return HFI_CHILD_FAIL(5);
	}
}

/*
 * hfi_fill(@seed) of @len bytes spread over @niov iovecs of uneven lengths
 * (some may be empty), each in its own place in @src with gaps between.
 */
static void scatter(struct kfab_iovec *iov, __u32 niov, __u8 *src,
		    const __u8 *data, size_t len)
{
	size_t prev = 0;

	for (__u32 i = 0; i < niov; i++) {
		size_t end = (__u64)len * (i + 1) * (i + 1) /
			     ((__u64)niov * niov);
		__u8 *at = src + 1 + prev + 64 * i;

		memcpy(at, data + prev, end - prev);
		iov[i].addr = (__u64)(uintptr_t)at;
		iov[i].len = end - prev;
		prev = end;
	}
}

TEST_F_TIMEOUT(xp, sdma_into_other_process, 300)
{
	static const struct {
		size_t len;
		size_t off;
		__u32 niov;
	} rounds[] = {
		{ 1, 0, 1 },
		{ 4096, 4095, 3 },
		{ 65536 + 3, 77777, 7 },
		{ MiB + 1, 12345, KFAB_IOV_MAX },
		{ RX_TID_LEN, 0, 5 },
		{ 2 * MiB + 4097, RX_TID_LEN - (2 * MiB + 4097), 2 },
	};
	uint64_t pinned0 = hfi_sysfs_get(0, "counters/tid_pages_pinned");
	uint64_t regions0 = hfi_sysfs_get(0, "counters/tid_regions");
	uint64_t req0 = hfi_sysfs_get(0, "counters/sdma_requests");
	uint64_t bytes0 = hfi_sysfs_get(0, "counters/sdma_bytes");
	struct kfab_iovec iov[KFAB_IOV_MAX];
	struct hfi_child *ch = &self->ch[0];
	struct kfab_hfi_map_peer mp;
	struct rx_round r = { 0, 0, 0, 0 };
	struct rx_info info;
	__u64 bytes, res, sum = 0;
	__u8 *data, *src;

	data = malloc(RX_TID_LEN);
	src = malloc(RX_TID_LEN + 64 * KFAB_IOV_MAX + 1);
	ASSERT_NE(NULL, data);
	ASSERT_NE(NULL, src);
	ASSERT_EQ(0, hfi_child_start(ch, receiver_child, self, CHILD_SECS));
	ASSERT_EQ(0, hfi_recv(ch->from, &info, sizeof(info), WAIT_MS));
	if (info.err == -ENOMEM)
		SKIP(return, "RLIMIT_MEMLOCK below %lu bytes", RX_TID_LEN);
	ASSERT_EQ(0, info.err) TH_LOG("TID_UPDATE: %s", strerror(-info.err));
	EXPECT_EQ((rx_head() % HFI_PAGE + RX_TID_LEN + HFI_PAGE - 1) /
		  HFI_PAGE, info.npages);
	EXPECT_EQ(pinned0 + info.npages,
		  hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(regions0 + 1, hfi_sysfs_get(0, "counters/tid_regions"));
	ASSERT_EQ(0, hfi_map_peer(self->own.fd, self->own.info.lid, info.ctxt,
				  &mp));

	for (size_t i = 0; i < ARRAY_SIZE(rounds); i++) {
		r.seed = random_u32();
		r.off = rounds[i].off;
		r.len = rounds[i].len;
		hfi_fill(data, r.len, (__u32)r.seed);
		scatter(iov, rounds[i].niov, src, data, r.len);
		ASSERT_EQ(0, hfi_sdma(self->own.fd, mp.peer, info.tid, r.off,
				      iov, rounds[i].niov, 0, &bytes))
			TH_LOG("round %zu", i);
		EXPECT_EQ(r.len, bytes);
		sum += r.len;
		ASSERT_EQ(0, hfi_send(ch->to, &r, sizeof(r)));
		ASSERT_EQ(0, hfi_recv(ch->from, &res, sizeof(res), WAIT_MS));
		EXPECT_EQ(0U, res) TH_LOG("round %zu: byte %llu of the buffer",
					  i, (unsigned long long)res - 1);
	}

	/* past the end of the TID buffer: refused, nothing written */
	iov[0].addr = (__u64)(uintptr_t)data;
	iov[0].len = 11;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->own.fd, mp.peer, info.tid,
				    RX_TID_LEN - 10, iov, 1, 0, NULL));
	iov[0].len = 1;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->own.fd, mp.peer, info.tid,
				    RX_TID_LEN, iov, 1, 0, NULL));
	r.len = 0;
	ASSERT_EQ(0, hfi_send(ch->to, &r, sizeof(r)));
	ASSERT_EQ(0, hfi_recv(ch->from, &res, sizeof(res), WAIT_MS));
	EXPECT_EQ(0U, res);

	EXPECT_EQ(req0 + ARRAY_SIZE(rounds),
		  hfi_sysfs_get(0, "counters/sdma_requests"));
	EXPECT_EQ(bytes0 + sum, hfi_sysfs_get(0, "counters/sdma_bytes"));
	r.quit = 1;
	ASSERT_EQ(0, hfi_send(ch->to, &r, sizeof(r)));
	EXPECT_EQ(0, hfi_child_wait(ch, WAIT_MS));
	EXPECT_EQ(0, hfi_sysfs_wait(0, "counters/tid_pages_pinned", pinned0,
				    5000));
	EXPECT_EQ(0, hfi_sysfs_wait(0, "counters/tid_regions", regions0,
				    5000));
	free(data);
	free(src);
}

/* ------------------------------------------------------------------ */
/* eventfd wakeups */

struct waiter_info {
	__u32 ctxt;
	__u32 tid;
};

/*
 * An owner that sleeps on a blocking eventfd on command: 'r' in read(),
 * 'p' in poll() then read(), replying "k" first and the value read once
 * woken; 'a' arms as a consumer does before it sleeps (step 6) and replies
 * 0; anything else ends it.
 */
static int waiter_child(void *arg, int rfd, int wfd)
{
	FIXTURE_DATA(xp) *self = arg;
	struct waiter_info info;
	struct pollfd pfd;
	struct hfi_ctx c;
	__u64 v;
	int efd, ret;
	char cmd;

	ret = child_ctx(self, &c, &efd, &info.tid);
	if (ret)
		return ret;
	info.ctxt = c.info.ctxt;
	if (hfi_send(wfd, &info, sizeof(info)))
		return HFI_CHILD_FAIL(4);
	for (;;) {
		if (hfi_recv(rfd, &cmd, 1, WAIT_MS))
			return HFI_CHILD_FAIL(5);
		switch (cmd) {
		case 'a':
			atomic_store(hfi_a32(&c.q.kctrl->armed), 1);
			atomic_thread_fence(memory_order_seq_cst);
			v = 0;
			break;
		case 'p':
			pfd.fd = efd;
			pfd.events = POLLIN;
			if (hfi_send(wfd, "k", 1) || poll(&pfd, 1, -1) != 1 ||
			    read(efd, &v, sizeof(v)) != sizeof(v))
				return HFI_CHILD_FAIL(6);
			break;
		case 'r':
			if (hfi_send(wfd, "k", 1) ||
			    read(efd, &v, sizeof(v)) != sizeof(v))
				return HFI_CHILD_FAIL(7);
			break;
		default:
			return 0;
		}
		if (hfi_send(wfd, &v, sizeof(v)))
			return HFI_CHILD_FAIL(8);
	}
}

/* The waiter is asleep in read() ('r') or poll() ('p'): 0 or -errno. */
static int waiter_block(struct hfi_child *ch, char how)
{
	char k;
	int ret;

	ret = hfi_send(ch->to, &how, 1);
	if (!ret)
		ret = hfi_recv(ch->from, &k, 1, WAIT_MS);
	if (!ret)
		ret = wait_sleeping(ch->pid, WAIT_MS);
	return ret;
}

static int waiter_arm(struct hfi_child *ch)
{
	__u64 v;
	int ret = hfi_send(ch->to, "a", 1);

	return ret ? ret : hfi_recv(ch->from, &v, sizeof(v), WAIT_MS);
}

/* The value the waiter read within @ms, or -ETIMEDOUT: still asleep. */
static __s64 waiter_woken(struct hfi_child *ch, int ms)
{
	__u64 v;
	int ret = hfi_recv(ch->from, &v, sizeof(v), ms);

	return ret ? ret : (__s64)v;
}

TEST_F_TIMEOUT(xp, eventfd_wakeups, 120)
{
	uint64_t n0 = hfi_sysfs_get(0, "counters/notifies");
	struct hfi_child *ch = &self->ch[0];
	__u8 src[100] = { 0 }, payload[64];
	struct kfab_iovec iov = { (__u64)(uintptr_t)src, sizeof(src) };
	struct waiter_info wi;
	struct hfi_peer pw;
	_Atomic __u32 *armed;
	__u32 peer;

	/* nobody notifies this process: its own poll() times out */
	EXPECT_EQ(0, hfi_poll_in(self->efd, QUIET_MS));

	ASSERT_EQ(0, hfi_child_start(ch, waiter_child, self, CHILD_SECS));
	ASSERT_EQ(0, hfi_recv(ch->from, &wi, sizeof(wi), WAIT_MS));
	ASSERT_EQ(0, hfi_peer_open(&pw, self->own.fd, self->own.info.lid,
				   wi.ctxt, true));
	peer = pw.mp.peer;
	armed = hfi_a32(&pw.q.kctrl->armed);

	/* read() and poll() sleep until a peer's NOTIFY, and wake on it */
	for (const char *how = "rp"; *how; how++) {
		ASSERT_EQ(0, waiter_block(ch, *how));
		EXPECT_EQ(-ETIMEDOUT, waiter_woken(ch, QUIET_MS));
		EXPECT_EQ(0, hfi_notify(self->own.fd, peer));
		EXPECT_EQ(1, waiter_woken(ch, WAIT_MS)) TH_LOG("in %c", *how);
	}

	/* SDMA wakes an armed owner with KFAB_HFI_SDMA_NOTIFY only */
	ASSERT_EQ(0, waiter_arm(ch));
	EXPECT_EQ(1U, atomic_load(armed));
	ASSERT_EQ(0, waiter_block(ch, 'r'));
	EXPECT_EQ(0, hfi_sdma(self->own.fd, peer, wi.tid, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(-ETIMEDOUT, waiter_woken(ch, QUIET_MS));
	EXPECT_EQ(1U, atomic_load(armed));
	EXPECT_EQ(0, hfi_sdma(self->own.fd, peer, wi.tid, 0, &iov, 1,
			      KFAB_HFI_SDMA_NOTIFY, NULL));
	EXPECT_EQ(1, waiter_woken(ch, WAIT_MS));
	/* the wakeup took the arm */
	EXPECT_EQ(0U, atomic_load(armed));

	/* unarmed: neither SDMA_NOTIFY nor a producer wake it */
	ASSERT_EQ(0, waiter_block(ch, 'p'));
	EXPECT_EQ(0, hfi_sdma(self->own.fd, peer, wi.tid, 0, &iov, 1,
			      KFAB_HFI_SDMA_NOTIFY, NULL));
	EXPECT_EQ(0, pkt_send(self->own.fd, &pw, payload, 0, 0, PKT_BARE));
	EXPECT_EQ(-ETIMEDOUT, waiter_woken(ch, QUIET_MS));
	EXPECT_EQ(0, hfi_notify(self->own.fd, peer));
	EXPECT_EQ(1, waiter_woken(ch, WAIT_MS));

	/* armed: the first producer takes the arm and notifies, the next not */
	ASSERT_EQ(0, waiter_arm(ch));
	ASSERT_EQ(0, waiter_block(ch, 'r'));
	EXPECT_EQ(HFI_PRODUCE_NOTIFY, hfi_produce(&pw.q, "x", 1, NULL, 0));
	EXPECT_EQ(0U, atomic_load(armed));
	EXPECT_EQ(0, hfi_produce(&pw.q, "y", 1, NULL, 0));
	EXPECT_EQ(-ETIMEDOUT, waiter_woken(ch, QUIET_MS));
	EXPECT_EQ(0, hfi_notify(self->own.fd, peer));
	EXPECT_EQ(1, waiter_woken(ch, WAIT_MS));

	/* counted on the waiter's unit: 2 + 1 + 1 + 1 wakeups sent */
	EXPECT_EQ(n0 + 5, hfi_sysfs_get(0, "counters/notifies"));
	/* none of it reached this process's own eventfd */
	EXPECT_EQ(0, hfi_poll_in(self->efd, 0));
	ASSERT_EQ(0, hfi_send(ch->to, "q", 1));
	EXPECT_EQ(0, hfi_child_wait(ch, WAIT_MS));
	hfi_queue_unmap(&pw.q);
}

/* ------------------------------------------------------------------ */
/* jkey isolation */

enum { JK_MAP = 1, JK_CHECK, JK_QUIT };

struct jk_cmd {
	__u32 op;
	__u32 lid;
	__u32 ctxt;
	__u32 pad;
};

struct jk_info {
	__u32 lid;
	__u32 ctxt;
	__u32 jkey;
	__u32 tid;
};

struct jk_arg {
	FIXTURE_DATA(xp) *self;
	const __u8 *uuid;
	bool drop_before;	/* become nobody between open and ASSIGN_CTXT */
	bool drop_after;	/* become nobody after ASSIGN_CTXT */
};

#define JK_PATTERN	0x3c

/*
 * A context of job @uuid with an eventfd and a one-page TID buffer, in a
 * process of its own. JK_MAP: MAP_PEER a context, reply with the result;
 * JK_CHECK: reply 0 if no wakeup came and the TID buffer is untouched
 * (bit 0: woken, bit 1: written); JK_QUIT ends it.
 */
static int jkey_child(void *arg, int rfd, int wfd)
{
	struct jk_arg *a = arg;
	struct kfab_hfi_ctxt_info ci;
	struct kfab_hfi_map_peer mp;
	struct jk_info info;
	struct jk_cmd cmd;
	int fd, efd;
	__s32 res;
	__u8 *buf;

	child_drop_parent(a->self);
	buf = mmap(NULL, HFI_PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fd = hfi_open(0);
	if (buf == MAP_FAILED || efd < 0 || fd < 0)
		return HFI_CHILD_FAIL(1);
	memset(buf, JK_PATTERN, HFI_PAGE);
	if (a->drop_before && drop_to_nobody())
		return HFI_CHILD_FAIL(2);
	if (hfi_assign_fd(fd, a->uuid, KFAB_HFI_PKEY_DEFAULT, 0, &ci))
		return HFI_CHILD_FAIL(3);
	if (hfi_set_eventfd(fd, efd) ||
	    hfi_tid_update(fd, buf, HFI_PAGE, &info.tid, NULL))
		return HFI_CHILD_FAIL(4);
	if (a->drop_after && drop_to_nobody())
		return HFI_CHILD_FAIL(5);
	info.lid = ci.lid;
	info.ctxt = ci.ctxt;
	info.jkey = ci.jkey;
	if (hfi_send(wfd, &info, sizeof(info)))
		return HFI_CHILD_FAIL(6);
	for (;;) {
		if (hfi_recv(rfd, &cmd, sizeof(cmd), WAIT_MS))
			return HFI_CHILD_FAIL(7);
		if (cmd.op == JK_MAP) {
			res = hfi_map_peer(fd, cmd.lid, cmd.ctxt, &mp);
		} else if (cmd.op == JK_CHECK) {
			res = hfi_poll_in(efd, 0) ? 1 : 0;
			for (size_t i = 0; i < HFI_PAGE; i++)
				if (buf[i] != JK_PATTERN)
					res |= 2;
		} else {
			return 0;
		}
		if (hfi_send(wfd, &res, sizeof(res)))
			return HFI_CHILD_FAIL(8);
	}
}

static int jk_start(FIXTURE_DATA(xp) *self, int i, struct jk_arg *a,
		    struct jk_info *info)
{
	int ret = hfi_child_start(&self->ch[i], jkey_child, a, CHILD_SECS);

	return ret ? ret : hfi_recv(self->ch[i].from, info, sizeof(*info),
				    WAIT_MS);
}

/* Both jkey children: child 0 with @a0, child 1 with @a1. */
static int jk_start_two(FIXTURE_DATA(xp) *self, struct jk_arg *a0,
			struct jk_info *i0, struct jk_arg *a1,
			struct jk_info *i1)
{
	int ret = jk_start(self, 0, a0, i0);

	return ret ? ret : jk_start(self, 1, a1, i1);
}

/* A command to jkey child @ch: its reply, or INT_MIN when it did not come. */
static __s32 jk_call(struct hfi_child *ch, __u32 op, __u32 lid, __u32 ctxt)
{
	struct jk_cmd cmd = { op, lid, ctxt, 0 };
	__s32 res;

	if (hfi_send(ch->to, &cmd, sizeof(cmd)) ||
	    hfi_recv(ch->from, &res, sizeof(res), WAIT_MS))
		return INT32_MIN;
	return res;
}

static void jk_quit(struct __test_metadata *_metadata, struct hfi_child *ch)
{
	struct jk_cmd cmd = { JK_QUIT, 0, 0, 0 };

	EXPECT_EQ(0, hfi_send(ch->to, &cmd, sizeof(cmd)));
	EXPECT_EQ(0, hfi_child_wait(ch, WAIT_MS));
}

static void jk_quit_two(struct __test_metadata *_metadata,
			FIXTURE_DATA(xp) *self)
{
	jk_quit(_metadata, &self->ch[0]);
	jk_quit(_metadata, &self->ch[1]);
}

/* Same user, same job in another process: same jkey, peers both ways. */
TEST_F(xp, jkey_same_job_same_user)
{
	struct jk_arg a = { self, self->uuid, false, false };
	__u8 byte = (__u8)~JK_PATTERN;
	struct kfab_iovec iov = { (__u64)(uintptr_t)&byte, 1 };
	struct kfab_hfi_map_peer mp;
	struct jk_info ci;

	ASSERT_EQ(0, jk_start(self, 0, &a, &ci));
	EXPECT_EQ(self->own.info.jkey, ci.jkey);
	EXPECT_EQ(0, jk_call(&self->ch[0], JK_MAP, self->own.info.lid,
			     self->own.info.ctxt));
	ASSERT_EQ(0, hfi_map_peer(self->own.fd, ci.lid, ci.ctxt, &mp));
	/* and the peer handle reaches it: the child sees both */
	EXPECT_EQ(0, jk_call(&self->ch[0], JK_CHECK, 0, 0));
	EXPECT_EQ(0, hfi_sdma(self->own.fd, mp.peer, ci.tid, 5, &iov, 1, 0,
			      NULL));
	EXPECT_EQ(0, hfi_notify(self->own.fd, mp.peer));
	EXPECT_EQ(3, jk_call(&self->ch[0], JK_CHECK, 0, 0));
	jk_quit(_metadata, &self->ch[0]);
}

/* Same user, another job: another jkey, no way in either direction. */
TEST_F(xp, jkey_other_job)
{
	__u8 byte = (__u8)~JK_PATTERN;
	struct kfab_iovec iov = { (__u64)(uintptr_t)&byte, 1 };
	struct kfab_hfi_map_peer mp;
	struct jk_arg a = { self, NULL, false, false };
	struct jk_info ci, ci2;
	__u8 other[16];

	memcpy(other, self->uuid, sizeof(other));
	other[0] ^= 2;
	a.uuid = other;
	ASSERT_EQ(0, jk_start(self, 0, &a, &ci));
	EXPECT_NE(self->own.info.jkey, ci.jkey);
	EXPECT_EQ(-EACCES, hfi_map_peer(self->own.fd, ci.lid, ci.ctxt, &mp));
	EXPECT_EQ(-EACCES, jk_call(&self->ch[0], JK_MAP, self->own.info.lid,
				   self->own.info.ctxt));
	/*
	 * NOTIFY and SDMA name a peer handle, which only MAP_PEER gives: the
	 * only handle this job can get (its own context) does not lead to the
	 * other job's TID buffer or eventfd.
	 */
	ASSERT_EQ(0, hfi_map_peer(self->own.fd, self->own.info.lid,
				  self->own.info.ctxt, &mp));
	EXPECT_EQ(-ENOENT, hfi_sdma(self->own.fd, mp.peer, ci.tid, 0, &iov, 1,
				    KFAB_HFI_SDMA_NOTIFY, NULL));
	EXPECT_EQ(0, hfi_notify(self->own.fd, mp.peer));
	EXPECT_EQ(0, jk_call(&self->ch[0], JK_CHECK, 0, 0));

	/* the other job's second process is its peer */
	ASSERT_EQ(0, jk_start(self, 1, &a, &ci2));
	EXPECT_EQ(ci.jkey, ci2.jkey);
	EXPECT_EQ(0, jk_call(&self->ch[1], JK_MAP, ci.lid, ci.ctxt));
	EXPECT_EQ(-EACCES, jk_call(&self->ch[1], JK_MAP, self->own.info.lid,
				   self->own.info.ctxt));
	jk_quit_two(_metadata, self);
}

/*
 * Same job UUID, another user: the jkey is that of (uid, uuid) of the
 * process that assigns, so nobody's contexts of the job are peers of each
 * other and not of root's, although the device was opened as root.
 */
TEST_F(xp, jkey_same_job_other_user)
{
	struct jk_arg a = { self, self->uuid, true, false };
	struct kfab_hfi_map_peer mp;
	struct jk_info n1, n2;

	if (geteuid())
		SKIP(return, "needs root to run as another user");
	ASSERT_EQ(0, jk_start_two(self, &a, &n1, &a, &n2));
	EXPECT_NE(self->own.info.jkey, n1.jkey);
	EXPECT_EQ(n1.jkey, n2.jkey);
	EXPECT_EQ(-EACCES, hfi_map_peer(self->own.fd, n1.lid, n1.ctxt, &mp));
	EXPECT_EQ(-EACCES, jk_call(&self->ch[0], JK_MAP, self->own.info.lid,
				   self->own.info.ctxt));
	EXPECT_EQ(0, jk_call(&self->ch[1], JK_MAP, n1.lid, n1.ctxt));
	EXPECT_EQ(0, jk_call(&self->ch[0], JK_MAP, n2.lid, n2.ctxt));
	jk_quit_two(_metadata, self);
}

/* Changing user after ASSIGN_CTXT changes nothing: the jkey is kept. */
TEST_F(xp, jkey_taken_at_assign)
{
	struct jk_arg after = { self, self->uuid, false, true };
	struct jk_arg before = { self, self->uuid, true, false };
	struct kfab_hfi_map_peer mp;
	struct jk_info r1, n1;

	if (geteuid())
		SKIP(return, "needs root to run as another user");
	ASSERT_EQ(0, jk_start_two(self, &after, &r1, &before, &n1));
	EXPECT_EQ(self->own.info.jkey, r1.jkey);
	EXPECT_NE(r1.jkey, n1.jkey);
	EXPECT_EQ(0, jk_call(&self->ch[0], JK_MAP, self->own.info.lid,
			     self->own.info.ctxt));
	EXPECT_EQ(0, hfi_map_peer(self->own.fd, r1.lid, r1.ctxt, &mp));
	EXPECT_EQ(-EACCES, jk_call(&self->ch[1], JK_MAP, r1.lid, r1.ctxt));
	EXPECT_EQ(-EACCES, jk_call(&self->ch[0], JK_MAP, n1.lid, n1.ctxt));
	jk_quit_two(_metadata, self);
}

/* ------------------------------------------------------------------ */
/* Processes that go away */

struct victim_info {
	__u32 unit1;		/* unit of the second context */
	__u32 ctxt0;		/* the first context, on unit 0 */
	__u32 tid0;		/* a TID of the first context */
	__u32 npages[3];	/* of its TIDs: two on unit 0, one on unit1 */
};

/* Byte offsets of the victim's three TID buffers into its buffer. */
#define VICTIM_A_OFF	100
#define VICTIM_A_LEN	MiB
#define VICTIM_B_LEN	(3 * HFI_PAGE)
#define VICTIM_C_OFF	(2 * MiB)
#define VICTIM_C_LEN	(2 * HFI_PAGE + 1)

/*
 * Two contexts (unit 0 and the last unit), their queues mapped, three TID
 * buffers pinned (two of them over the same pages), an eventfd, and the
 * parent's queues mapped as a peer with a packet produced into them; then
 * it sleeps until killed.
 */
static int victim_child(void *arg, int rfd, int wfd)
{
	FIXTURE_DATA(xp) *self = arg;
	__u32 lid = self->own.info.lid, ctxt = self->own.info.ctxt;
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	struct hfi_ctx c0, c1;
	struct victim_info vi;
	struct hfi_peer p;
	__u8 *buf, *payload;
	__u32 tid;
	int efd;

	(void)rfd;
	child_drop_parent(self);
	setrlimit(RLIMIT_MEMLOCK, &rl);
	vi.unit1 = hfi_num_units() - 1;
	buf = mmap(NULL, 3 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	efd = eventfd(0, EFD_CLOEXEC);
	if (buf == MAP_FAILED || efd < 0)
		return HFI_CHILD_FAIL(1);
	if (hfi_ctx_assign(&c0, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0) ||
	    hfi_ctx_assign(&c1, vi.unit1, self->uuid, KFAB_HFI_PKEY_DEFAULT,
			   0) ||
	    hfi_ctx_map(&c0) || hfi_ctx_map(&c1))
		return HFI_CHILD_FAIL(2);
	vi.ctxt0 = c0.info.ctxt;
	if (hfi_tid_update(c0.fd, buf + VICTIM_A_OFF, VICTIM_A_LEN, &vi.tid0,
			   &vi.npages[0]) ||
	    hfi_tid_update(c0.fd, buf, VICTIM_B_LEN, &tid, &vi.npages[1]) ||
	    hfi_tid_update(c1.fd, buf + VICTIM_C_OFF, VICTIM_C_LEN, &tid,
			   &vi.npages[2]))
		return HFI_CHILD_FAIL(3);
	if (hfi_set_eventfd(c0.fd, efd) || hfi_set_eventfd(c1.fd, efd))
		return HFI_CHILD_FAIL(4);
	if (hfi_peer_open(&p, c1.fd, lid, ctxt, true))
		return HFI_CHILD_FAIL(5);
	payload = malloc(p.q.eager_size);
	if (!payload || pkt_send(c1.fd, &p, payload, 7, 0, PKT_PAYLOAD) < 0)
		return HFI_CHILD_FAIL(6);
	if (hfi_send(wfd, &vi, sizeof(vi)))
		return HFI_CHILD_FAIL(7);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(xp, sigkill_releases_everything, 120)
{
	static const char * const gauges[] = {
		"counters/tid_pages_pinned", "counters/tid_regions",
		"nfreectxts",
	};
	unsigned int units = hfi_num_units(), u1 = units - 1;
	uint64_t before[2][ARRAY_SIZE(gauges)];
	struct hfi_child *ch = &self->ch[0];
	struct hfi_queue *q = &self->own.q;
	struct hfi_consumer cons = { 0, 0 };
	__u8 data[64], *payload, *scratch;
	struct kfab_iovec iov = { (__u64)(uintptr_t)data, sizeof(data) };
	struct kfab_hfi_rhq_entry e;
	struct victim_info vi;
	struct hfi_peer pv;
	__u64 pages_a;

	payload = malloc(q->eager_size);
	scratch = malloc(q->eager_size);
	ASSERT_NE(NULL, payload);
	ASSERT_NE(NULL, scratch);
	for (size_t g = 0; g < ARRAY_SIZE(gauges); g++) {
		before[0][g] = hfi_sysfs_get(0, gauges[g]);
		before[1][g] = hfi_sysfs_get(u1, gauges[g]);
	}
	ASSERT_EQ(0, hfi_child_start(ch, victim_child, self, CHILD_SECS));
	ASSERT_EQ(0, hfi_recv(ch->from, &vi, sizeof(vi), WAIT_MS));
	ASSERT_EQ(u1, vi.unit1);

	/* it holds what it says */
	pages_a = (VICTIM_A_OFF + VICTIM_A_LEN + HFI_PAGE - 1) / HFI_PAGE;
	EXPECT_EQ(pages_a, vi.npages[0]);
	EXPECT_EQ(3U, vi.npages[1]);
	EXPECT_EQ(3U, vi.npages[2]);
	if (u1) {
		EXPECT_EQ(before[0][0] + pages_a + 3,
			  hfi_sysfs_get(0, gauges[0]));
		EXPECT_EQ(before[1][0] + 3, hfi_sysfs_get(u1, gauges[0]));
		EXPECT_EQ(before[0][1] + 2, hfi_sysfs_get(0, gauges[1]));
		EXPECT_EQ(before[1][1] + 1, hfi_sysfs_get(u1, gauges[1]));
		EXPECT_EQ(before[0][2] - 1, hfi_sysfs_get(0, gauges[2]));
		EXPECT_EQ(before[1][2] - 1, hfi_sysfs_get(u1, gauges[2]));
	} else {
		EXPECT_EQ(before[0][0] + pages_a + 6,
			  hfi_sysfs_get(0, gauges[0]));
		EXPECT_EQ(before[0][1] + 3, hfi_sysfs_get(0, gauges[1]));
		EXPECT_EQ(before[0][2] - 2, hfi_sysfs_get(0, gauges[2]));
	}
	ASSERT_EQ(1, rx_next(q, &cons, self->efd, &e, payload, WAIT_MS));
	EXPECT_EQ(0, pkt_check(&e, payload, q->eager_size, scratch));
	EXPECT_EQ(7U, pkt_hdr_of(&e).producer);
	ASSERT_EQ(0, hfi_peer_open(&pv, self->own.fd, self->own.info.lid,
				   vi.ctxt0, true));
	EXPECT_EQ(0, hfi_sdma(self->own.fd, pv.mp.peer, vi.tid0, 1, &iov, 1,
			      0, NULL));

	ASSERT_EQ(0, kill(ch->pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, hfi_child_wait(ch, WAIT_MS));
	for (size_t g = 0; g < ARRAY_SIZE(gauges); g++) {
		EXPECT_EQ(0, hfi_sysfs_wait(0, gauges[g], before[0][g], 5000))
			TH_LOG("unit 0 %s: %llu, was %llu", gauges[g],
			       (unsigned long long)hfi_sysfs_get(0, gauges[g]),
			       (unsigned long long)before[0][g]);
		EXPECT_EQ(0, hfi_sysfs_wait(u1, gauges[g], before[1][g], 5000))
			TH_LOG("unit %u %s: %llu, was %llu", u1, gauges[g],
			       (unsigned long long)hfi_sysfs_get(u1, gauges[g]),
			       (unsigned long long)before[1][g]);
	}
	/* its context is dead to the peer that still maps it */
	EXPECT_EQ(1U, hfi_load_dead(pv.q.kctrl));
	EXPECT_EQ(-ECONNRESET, hfi_notify(self->own.fd, pv.mp.peer));
	EXPECT_EQ(-ECONNRESET, hfi_sdma(self->own.fd, pv.mp.peer, vi.tid0, 1,
					&iov, 1, 0, NULL));
	/* and the killed peer's mappings of ours took nothing with them */
	EXPECT_EQ(0U, hfi_load_dead(q->kctrl));
	EXPECT_EQ(0, hfi_unmap_peer(self->own.fd, pv.mp.peer));
	hfi_queue_unmap(&pv.q);
	free(payload);
	free(scratch);
}

struct owner_info {
	__u32 ctxt;
	__u32 tid;
};

#define OWNER_MARK	0x5e

/*
 * An owner with its queues mapped, a TID buffer and an eventfd: marks the
 * last eager byte, consumes one packet on 'c' (replying 0 if it was the
 * right one), and on anything else exits with all of it still held.
 */
static int owner_child(void *arg, int rfd, int wfd)
{
	FIXTURE_DATA(xp) *self = arg;
	struct hfi_consumer cons = { 0, 0 };
	struct kfab_hfi_rhq_entry e;
	struct owner_info oi;
	__u8 *payload, *scratch;
	struct hfi_ctx c;
	char cmd, res;
	int efd, ret;

	ret = child_ctx(self, &c, &efd, &oi.tid);
	if (ret)
		return ret;
	payload = malloc(c.q.eager_size);
	scratch = malloc(c.q.eager_size);
	if (!payload || !scratch)
		return HFI_CHILD_FAIL(3);
	c.q.keager[hfi_eager_bytes(c.q.eager_count, c.q.eager_size) - 1] =
		OWNER_MARK;
	oi.ctxt = c.info.ctxt;
	if (hfi_send(wfd, &oi, sizeof(oi)))
		return HFI_CHILD_FAIL(4);
	for (;;) {
		if (hfi_recv(rfd, &cmd, 1, WAIT_MS))
			return HFI_CHILD_FAIL(5);
		if (cmd != 'c')
			return 0;
		res = 1;
		if (hfi_consume(&c.q, &cons, &e, payload, c.q.eager_size) &&
		    !pkt_check(&e, payload, c.q.eager_size, scratch) &&
		    pkt_hdr_of(&e).seq == 0)
			res = 0;
		if (hfi_send(wfd, &res, 1))
			return HFI_CHILD_FAIL(6);
	}
}

TEST_F(xp, owner_exits_under_peer)
{
	uint64_t nfree = hfi_sysfs_get(0, "nfreectxts");
	uint64_t notifies;
	struct hfi_child *ch = &self->ch[0];
	__u8 data[16], *payload, *scratch;
	struct kfab_iovec iov = { (__u64)(uintptr_t)data, sizeof(data) };
	struct kfab_hfi_map_peer mp;
	struct kfab_hfi_rhq_entry e;
	struct owner_info oi;
	struct hfi_peer pv;
	size_t last;
	char res;

	payload = malloc(self->own.q.eager_size);
	scratch = malloc(self->own.q.eager_size);
	ASSERT_NE(NULL, payload);
	ASSERT_NE(NULL, scratch);
	ASSERT_EQ(0, hfi_child_start(ch, owner_child, self, CHILD_SECS));
	ASSERT_EQ(0, hfi_recv(ch->from, &oi, sizeof(oi), WAIT_MS));
	ASSERT_EQ(0, hfi_peer_open(&pv, self->own.fd, self->own.info.lid,
				   oi.ctxt, true));
	last = hfi_eager_bytes(pv.q.eager_count, pv.q.eager_size) - 1;
	EXPECT_EQ(OWNER_MARK, pv.q.keager[last]);
	ASSERT_EQ(0, pkt_send(self->own.fd, &pv, payload, 9, 0, PKT_PAYLOAD));
	ASSERT_EQ(0, pkt_send(self->own.fd, &pv, payload, 9, 1, PKT_PAYLOAD));
	ASSERT_EQ(0, hfi_send(ch->to, "c", 1));
	ASSERT_EQ(0, hfi_recv(ch->from, &res, 1, WAIT_MS));
	EXPECT_EQ(0, res);
	EXPECT_EQ(0U, hfi_load_dead(pv.q.kctrl));

	/* the owner exits with its mappings, TID and eventfd */
	ASSERT_EQ(0, hfi_send(ch->to, "x", 1));
	EXPECT_EQ(0, hfi_child_wait(ch, WAIT_MS));
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", nfree, 5000));
	EXPECT_EQ(1U, hfi_load_dead(pv.q.kctrl));

	/* what it left is still there: its head, packet 1, its mark */
	EXPECT_EQ(1U, hfi_lo(atomic_load(hfi_a64(&pv.q.kctrl->head))));
	memcpy(&e, &pv.q.krhq[1], sizeof(e));
	EXPECT_EQ(2U, e.seq);
	EXPECT_EQ(0, pkt_check(&e, pv.q.keager + (size_t)(e.eager_index &
				(pv.q.eager_count - 1)) * pv.q.eager_size,
			       pv.q.eager_size, scratch));
	EXPECT_EQ(OWNER_MARK, pv.q.keager[last]);
	/* and writable */
	pv.q.krhq[pv.q.rhq_entries - 1].hdr[0] = 0x77;
	pv.q.keager[0] = 0x78;
	atomic_store(hfi_a32(&pv.q.kctrl->armed), 1);
	EXPECT_EQ(0x77, pv.q.krhq[pv.q.rhq_entries - 1].hdr[0]);
	EXPECT_EQ(0x78, pv.q.keager[0]);
	EXPECT_EQ(1U, atomic_load(hfi_a32(&pv.q.kctrl->armed)));

	/* but nobody is there to signal or to receive */
	notifies = hfi_sysfs_get(0, "counters/notifies");
	EXPECT_EQ(-ECONNRESET, hfi_notify(self->own.fd, pv.mp.peer));
	EXPECT_EQ(-ECONNRESET, hfi_sdma(self->own.fd, pv.mp.peer, oi.tid, 0,
					&iov, 1, 0, NULL));
	EXPECT_EQ(-ECONNRESET, hfi_sdma(self->own.fd, pv.mp.peer, oi.tid, 0,
					&iov, 1, KFAB_HFI_SDMA_NOTIFY, NULL));
	EXPECT_EQ(notifies, hfi_sysfs_get(0, "counters/notifies"));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->own.fd, self->own.info.lid,
					oi.ctxt, &mp));
	/* the handle goes, the mappings stay */
	EXPECT_EQ(0, hfi_unmap_peer(self->own.fd, pv.mp.peer));
	EXPECT_EQ(OWNER_MARK, pv.q.keager[last]);
	hfi_queue_unmap(&pv.q);
	free(payload);
	free(scratch);
}

HFI_TEST_MAIN
