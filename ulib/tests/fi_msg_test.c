// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: end-to-end test of a libfabric provider's FI_EP_RDM
 * messaging, RMA and atomics, through the public API only (fi_msg(3),
 * fi_tagged(3), fi_rma(3), fi_atomic(3), fi_mr(3), fi_cq(3), fi_cntr(3),
 * fi_av(3), fi_endpoint(3)). It is the judge of kfab_opx and is
 * validated against libfabric's own shm, tcp and sockets providers, so
 * that a failure means a provider bug. Each case is a function that runs
 * on every rank and opens with what it checks; cases[] lists them (-l).
 *
 * Rank 0 (this process) prints TAP. For each case it creates a socketpair
 * per peer, forks and re-executes itself as that peer (so each peer
 * initialises libfabric from its own environment, e.g. FI_OPX_UUID), and
 * the ranks exchange endpoint names over the sockets and insert each other
 * into their AVs. Peers send their checks to rank 0, which prints them as
 * points ("rank 1: ..."). Every wait is bounded (-t): a completion that
 * never comes is a failed point, not a hang; a case stuck inside a
 * libfabric call is ended by a watchdog ("Bail out!") that kills the peers.
 *
 *   fi_msg_test [-p PROV] [-c CASE[,CASE...]] [-l] [-f] [-t MS]
 *               [-n COUNT] [-s SIZE[,SIZE...]] [-T SEC]
 *
 *   -p PROV   provider (default $FI_PROVIDER, else kfab_opx); when
 *             fi_getinfo has no such provider, every case is skipped (4)
 *   -c CASES  run only these cases; -l lists the cases
 *   -f        also run the kfab_* only cases (deadpeer, rma_deadpeer,
 *             jobs, sleep, auto) on other providers, where they are
 *             expected to fail: to check the test
 *   -t MS     timeout of each wait for a completion or a peer (10000)
 *   -n, -s    stress: message count ($FI_MSG_TEST_COUNT, 2000) and the
 *             sizes it picks from ($FI_MSG_TEST_SIZES, k and m suffixes)
 *   -T SEC    stress: time limit ($FI_MSG_TEST_TIME, 120)
 *
 *   build/ulib-tests/fi_msg_test -p shm
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/fi_msg_test -p kfab_opx
 *   KFAB_SHM_DROP_PPM=10000 FI_PROVIDER_PATH=build/prov \
 *           build/ulib-tests/fi_msg_test -p kfab_opx -c stress -n 20000
 *
 * The RMA and atomic cases alone ask for FI_RMA or FI_ATOMIC (skipped
 * when the provider lacks them; sep does RMA only if it is offered), offering mr_mode FI_MR_VIRT_ADDR,
 * FI_MR_PROV_KEY and FI_MR_ALLOCATED, and follow what comes back: keys
 * from fi_mr_key, virtual addresses or offsets (kfab_opx: mr_mode 0,
 * FI_MR_SCALABLE), FI_MR_ENDPOINT binds, descriptors always passed
 * (rma_basic, rma_basic14 and rma_scalable ask for fi_mr(3)'s legacy
 * FI_MR_BASIC and FI_MR_SCALABLE instead). Each
 * rank registers windows with guard bytes and keeps an image of what
 * they must hold; ranks exchange keys and bases over the control socket.
 *
 * Provider behaviour the API leaves open is assumed only where the check
 * says so; known gaps of libfabric's own providers are in known_gaps[].
 * Exit: 0 all points passed, 1 a point failed, 4 provider not available.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tap.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define KIB		1024ul
#define MIB		(1024ul * 1024)

#define MAX_RANKS	3
#define ADDR_MAX	256		/* endpoint name bytes */
#define GUARD		64		/* guard bytes around a buffer */
#define GUARD_BYTE	0xa5
#define FILL_BYTE	0xee
#define SETTLE_MS	20		/* for a sent message to arrive */
#define QUIET_MS	200		/* nothing may come in this long */
#define JOBS_QUIET_MS	2000
#define DEADPEER_MS	30000		/* to fail ops to a dead peer */
#define CQ_BATCH	16
#define STEPQ_LEN	16
#define MULTI_SIZE	(64 * KIB)
#define MULTI_MIN	1024ul
#define CATCH_LEN	(128 * KIB)	/* catch-all receives */
#define OPX_UUID	"00112233445566778899aabbccddeeff" /* fi_opx(7) */

/* The completion flags of fi_cq(3); other bits are not compared. */
#define COMP_FLAGS	(FI_SEND | FI_RECV | FI_MSG | FI_TAGGED | FI_RMA | \
			 FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | \
			 FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA | FI_MULTI_RECV | \
			 FI_MULTICAST)

static const char *opt_prov;
static int opt_wait_ms = 10000;
static bool opt_force;
static unsigned long opt_count = 2000;
static int opt_stress_s = 120;
static const char *opt_sizes = "1,64,1000,4096,8192,16385,65536,262144";
static size_t stress_sizes[32];
static unsigned int stress_nsizes;

/*
 * Gaps of libfabric's own providers found while validating this test: a
 * whole case ("case") or one part of it ("case/part") is skipped, with
 * the reason, for a provider whose name starts with @prov.
 */
static const struct known_gap {
	const char *prov;
	const char *what;
	const char *why;
} known_gaps[] = {
	{ "shm", "sizes/truncation",
	  "libfabric 1.17 shm: a truncated message of more than ~4 KiB hangs fi_cq_read; a small one reports err -FI_ETRUNC (negative) and olen 0" },
	{ "shm", "tagmatch/unexpected-ignore",
	  "libfabric 1.17 shm: a receive with ignore bits does not match an unexpected message" },
	{ "shm", "peek",
	  "libfabric 1.17 shm: FI_PEEK with no message never completes; a found message is received into the (empty) buffer: FI_ETRUNC" },
	{ "shm", "tpeek",
	  "libfabric 1.17 shm: FI_PEEK with no message never completes; a found message is received into the (empty) buffer: FI_ETRUNC" },
	{ "shm", "tpeek_basic",
	  "libfabric 1.17 shm: FI_PEEK with no message never completes; a found message is received into the (empty) buffer: FI_ETRUNC" },
	{ "shm", "tpeek_scalable",
	  "libfabric 1.17 shm: FI_PEEK with no message never completes; a found message is received into the (empty) buffer: FI_ETRUNC" },
	{ "shm", "multirecv/setopt-before-enable",
	  "libfabric 1.17 shm: fi_setopt(FI_OPT_MIN_MULTI_RECV) before fi_enable crashes; set after it" },
	{ "shm", "threads",
	  "libfabric 1.17 shm: with two threads sending at once, a send now and then completes but never arrives (1 full run in 10 under ASan)" },
	{ "shm", "av/notavail",
	  "libfabric 1.17 shm: a sender not in the AV is reported as fi_addr 0, not FI_ADDR_NOTAVAIL" },
	{ "shm", "cntr/wait-timeout",
	  "libfabric 1.17 shm: fi_cntr_wait(threshold, 100 ms) for a value that never comes does not return" },
	{ "shm", "waitfd",
	  "libfabric 1.17 shm: fi_cq_open with FI_WAIT_FD fails with -FI_ENOSYS" },
	{ "shm", "rma_errors/bad-key",
	  "libfabric 1.17 shm: RMA is a copy to the virtual address given: an unregistered key succeeds" },
	{ "shm", "rma_errors/past-end",
	  "libfabric 1.17 shm: RMA is a copy to the virtual address given: bytes past a region are written and read" },
	{ "shm", "rma_errors/before-start",
	  "libfabric 1.17 shm: RMA is a copy to the virtual address given: bytes before a region are written and read" },
	{ "shm", "rma_errors/access",
	  "libfabric 1.17 shm: RMA ignores the access flags: a region without FI_REMOTE_WRITE is written, one without FI_REMOTE_READ read" },
	{ "shm", "rma_errors/inject-size",
	  "libfabric 1.17 shm: fi_inject_write over inject_size returns -FI_EAGAIN, not -FI_EMSGSIZE" },
	{ "shm", "rma_cntr/errors",
	  "libfabric 1.17 shm: RMA past the end of a region succeeds (see rma_errors): no errors to count" },
	{ "shm", "atomic/invalid-call",
	  "libfabric 1.17 shm: an invalid combination is not refused: fi_atomic FI_ATOMIC_READ completes, an invalid fetch crashes the target" },
	{ "tcp", "sizes/truncation",
	  "libfabric 1.17 tcp;ofi_rxm: FI_ETRUNC reports olen 0; a truncated message over ~4 KiB never completes" },
	{ "tcp", "peek/discard-len",
	  "libfabric 1.17 tcp;ofi_rxm: an FI_PEEK|FI_DISCARD completion reports len 0; len not compared" },
	{ "tcp", "peek/discard-rendezvous",
	  "libfabric 1.17 tcp;ofi_rxm: the send of a rendezvous-size message dropped by FI_DISCARD never completes" },
	{ "tcp", "compsem/delivery-data",
	  "libfabric 1.17 tcp;ofi_rxm: an eager FI_DELIVERY_COMPLETE send completes before its data is in the posted buffer" },
	{ "tcp", "rma_data/flags",
	  "libfabric 1.17 tcp;ofi_rxm: the target completion of a writedata is FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA, without FI_RMA" },
	{ "tcp", "rma_errors/write-completes",
	  "libfabric 1.17 tcp;ofi_rxm: a write the target refuses (bad key, out of range, no FI_REMOTE_WRITE) completes successfully unless it is a rendezvous; the target is untouched" },
	{ "tcp", "rma_errors/inject-size",
	  "libfabric 1.17 tcp;ofi_rxm: fi_inject_write over inject_size is accepted" },
	{ "tcp", "rma_cntr/errors",
	  "libfabric 1.17 tcp;ofi_rxm: writes past the end complete successfully (see rma_errors); failed reads are not counted in fi_cntr_readerr" },
	{ "tcp", "rma_cntr/remote",
	  "libfabric 1.17 tcp;ofi_rxm: binds FI_REMOTE_WRITE/FI_REMOTE_READ counters without FI_RMA_EVENT, but they never count" },
	{ "tcp", "atomic/invalid-call",
	  "libfabric 1.17 tcp;ofi_rxm: an invalid combination is not refused and crashes (a NULL function pointer)" },
	{ "sockets", "flags/tagged-msg",
	  "libfabric 1.17 sockets: tagged completions carry FI_MSG too; FI_MSG is not compared there" },
	{ "sockets", "flags/send-data",
	  "libfabric 1.17 sockets: send completions carry FI_REMOTE_CQ_DATA; it is not compared there" },
	{ "sockets", "inject/unexpected-data",
	  "libfabric 1.17 sockets: an unexpected injectdata message completes without FI_REMOTE_CQ_DATA" },
	{ "sockets", "rma_data/initiator-flags",
	  "libfabric 1.17 sockets: writedata completions carry FI_REMOTE_CQ_DATA (and the data) on the initiator too" },
	{ "sockets", "rma_errors/inject-size",
	  "libfabric 1.17 sockets: fi_inject_write over inject_size returns -FI_EINVAL, not -FI_EMSGSIZE" },
	{ "sockets", "atomic/invalid-call",
	  "libfabric 1.17 sockets: invalid combinations are not refused with -FI_EOPNOTSUPP: fi_atomic FI_ATOMIC_READ completes, others return -FI_EINVAL" },
	{ "sockets", "atomic/fetch-flags",
	  "libfabric 1.17 sockets: fetch and compare atomics complete with FI_ATOMIC|FI_WRITE, not FI_ATOMIC|FI_READ" },
	{ NULL, NULL, NULL },
};

/* Completion flags set beyond the API's, tolerated for a known gap */
static uint64_t slack_tagged;	/* FI_MSG on tagged completions */
static uint64_t slack_send;	/* FI_REMOTE_CQ_DATA on send completions */

/* Why @what ("case" or "case/part") is skipped for this provider, or NULL. */
static const char *known_gap(const char *what)
{
	for (const struct known_gap *g = known_gaps; g->prov; g++)
		if (!strncmp(opt_prov, g->prov, strlen(g->prov)) &&
		    !strcmp(what, g->what))
			return g->why;
	return NULL;
}

/* ---- small helpers ---- */

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append to the string in @buf. */
__attribute__((format(printf, 3, 4)))
static void addf(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

static void flags_str(uint64_t flags, char *buf, size_t size)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ FI_SEND, "SEND" }, { FI_RECV, "RECV" }, { FI_MSG, "MSG" },
		{ FI_TAGGED, "TAGGED" }, { FI_RMA, "RMA" },
		{ FI_ATOMIC, "ATOMIC" }, { FI_READ, "READ" },
		{ FI_WRITE, "WRITE" }, { FI_REMOTE_READ, "REMOTE_READ" },
		{ FI_REMOTE_WRITE, "REMOTE_WRITE" },
		{ FI_REMOTE_CQ_DATA, "REMOTE_CQ_DATA" },
		{ FI_MULTI_RECV, "MULTI_RECV" }, { FI_MULTICAST, "MULTICAST" },
	};
	const char *sep = " ";

	snprintf(buf, size, "%#llx", (unsigned long long)flags);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (flags & names[i].bit) {
			addf(buf, size, "%s%s", sep, names[i].name);
			sep = "|";
		}
	}
}

/* ---- data patterns: byte @pos of a message depends on its seed ---- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t seed_of(uint64_t a, uint64_t b)
{
	return mix64((a << 32) ^ b ^ 0x5bd1e9955bd1e995ull);
}

static uint8_t pat_byte(uint64_t seed, size_t pos)
{
	return mix64(seed + (pos >> 3) * 0x9e3779b97f4a7c15ull) >>
	       ((pos & 7) * 8);
}

/* Fill @p with bytes @off.. of the message with @seed. */
static void pat_fill(uint8_t *p, size_t len, uint64_t seed, size_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat_byte(seed, off + i);
}

/* Index of the first byte of @p that differs from the pattern, or len. */
static size_t pat_bad(const uint8_t *p, size_t len, uint64_t seed,
		      size_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat_byte(seed, off + i))
			break;
	return i;
}

/* ---- buffers with guard bytes on both sides ---- */

struct gbuf {
	uint8_t *mem;
	uint8_t *p;
	size_t len;
};

static void gbuf_alloc(struct gbuf *b, size_t len)
{
	b->mem = xmalloc(len + 2 * GUARD);
	b->p = b->mem + GUARD;
	b->len = len;
	memset(b->mem, GUARD_BYTE, GUARD);
	memset(b->p, FILL_BYTE, len);
	memset(b->p + len, GUARD_BYTE, GUARD);
}

static bool gbuf_guards_ok(const struct gbuf *b)
{
	for (size_t i = 0; i < GUARD; i++)
		if (b->mem[i] != GUARD_BYTE || b->p[b->len + i] != GUARD_BYTE)
			return false;
	return true;
}

/* ---- message descriptions, shared by the sending and receiving ranks ---- */

/* How a message is sent and received: bits of msgspec.api */
#define API_TAGGED	0x01u	/* fi_t* */
#define API_DATA	0x02u	/* *data, or FI_REMOTE_CQ_DATA */
#define API_INJECT	0x04u	/* *inject* */
#define API_VEC		0x08u	/* *sendv, *recvv */
#define API_MSG		0x10u	/* *sendmsg, *recvmsg */

enum expect {
	EXPECT_OK,		/* the send completes successfully */
	EXPECT_ANY,		/* it completes, in success or in error */
	EXPECT_FAIL,		/* it is refused or completes in error */
};

struct msgspec {
	uint32_t api;
	uint32_t layout;	/* vector forms: 1 + index into layouts[] */
	uint32_t expect;
	uint32_t wait_ms;	/* for the send completion; 0: -t */
	uint64_t len;
	uint64_t tag;
	uint64_t seed;
	uint64_t data;
	uint64_t flags;		/* fi_sendmsg/fi_tsendmsg flags */
};

/* Send and receive iov lengths of the vector forms; boundaries differ. */
static const struct layout {
	int ns, nr;
	size_t s[4], r[4];
} layouts[] = {
	{ 1, 1, { 13 }, { 13 } },
	{ 2, 2, { 1, 20 }, { 11, 10 } },
	{ 3, 3, { 7, 4096, 33 }, { 4000, 100, 36 } },
	{ 4, 4, { 5, 3, 17000, 9 }, { 2, 16000, 1000, 15 } },
	{ 1, 4, { 100003 }, { 3, 50000, 49999, 1 } },
	{ 4, 1, { 99999, 1, 1, 2 }, { 100003 } },
	{ 2, 2, { 10, 20 }, { 16, 100 } },	/* receive space left over */
};

static size_t layout_len(const size_t *v, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += v[i];
	return len;
}

static void msg_label(const struct msgspec *m, char *buf, size_t size)
{
	uint32_t a = m->api;

	snprintf(buf, size, "%s%s%s%s%s %llu B", a & API_TAGGED ? "t" : "",
		 a & API_INJECT ? "inject" : "send",
		 a & API_VEC ? "v" : a & API_MSG ? "msg" : "",
		 a & API_DATA ? (a & API_MSG ? "+data" : "data") : "",
		 m->flags & FI_INJECT ? "+FI_INJECT" : "",
		 (unsigned long long)m->len);
	if (m->layout) {
		const struct layout *l = &layouts[m->layout - 1];

		addf(buf, size, " (%d->%d iovs)", l->ns, l->nr);
	}
	if (m->flags & FI_INJECT_COMPLETE)
		addf(buf, size, " FI_INJECT_COMPLETE");
	if (m->flags & FI_TRANSMIT_COMPLETE)
		addf(buf, size, " FI_TRANSMIT_COMPLETE");
	if (m->flags & FI_DELIVERY_COMPLETE)
		addf(buf, size, " FI_DELIVERY_COMPLETE");
}

/* Batches: messages 0..n-1 follow from kind and index on both sides. */
enum batch_kind {
	B_REORDER,		/* distinct tags, mixed sizes */
	B_ORDER_TAGGED,		/* one tag, rendezvous and eager mixed */
	B_ORDER_MSG,		/* the same, untagged */
	B_WINDOW,		/* small, one tag */
	B_FLOOD,		/* small, first posted until -FI_EAGAIN */
	B_STRESS,		/* one tag, sizes from -s */
};

struct batch {
	uint32_t kind;
	uint32_t n;
	uint32_t window;	/* sends in flight */
};

static void batch_spec(const struct batch *b, uint32_t i, struct msgspec *m)
{
	static const size_t order[] = { MIB, 8, MIB, 8, 70000, 0, 16385, 8 };

	memset(m, 0, sizeof(*m));
	m->api = API_TAGGED;
	m->seed = seed_of(0xb000 + b->kind, i);
	switch (b->kind) {
	case B_REORDER:
		m->tag = 0x6000 + i;
		m->len = (i * 997) % 5000 + (i % 8 ? 0 : 20000);
		break;
	case B_ORDER_MSG:
		m->api = 0;
		/* fall through */
	case B_ORDER_TAGGED:
		m->tag = 0x6100;
		m->len = order[i % ARRAY_SIZE(order)];
		break;
	case B_WINDOW:
		m->tag = 0x6200;
		m->len = 1 + (i * 7) % 256;
		break;
	case B_FLOOD:
		m->tag = 0x6300;
		m->len = 1 + i % 64;
		break;
	default:
		m->tag = 0x6400;
		m->len = stress_sizes[mix64(i) % stress_nsizes];
		break;
	}
}

static size_t batch_max_len(const struct batch *b)
{
	struct msgspec m;
	size_t max = 0;

	for (uint32_t i = 0; i < b->n; i++) {
		batch_spec(b, i, &m);
		if (m.len > max)
			max = m.len;
	}
	return max;
}

/* ---- ranks and their control channel ---- */

enum ctl_type { CTL_STEP = 1, CTL_POINT, CTL_DIAG, CTL_ABORT, CTL_DONE };

enum step {
	STEP_ANY,
	STEP_NAME,	/* a: whose name, blob: the name */
	STEP_GO,	/* rank 0 -> peer: send blob (struct msgspec) */
	STEP_RECV,	/* rank 0 -> peer: receive blob (struct msgspec) */
	STEP_QUIET,	/* rank 0 -> peer: receive nothing for a ms */
	STEP_BATCH,	/* rank 0 -> peer: send blob (struct batch) */
	STEP_DIE,	/* rank 0 -> peer: die now */
	STEP_STOP,	/* rank 0 -> peer: the case is over */
	STEP_POSTED,	/* the receive is posted */
	STEP_SENT,	/* the send(s) are posted */
	STEP_FLOODED,	/* a: sends posted before the first -FI_EAGAIN */
	STEP_DONE,	/* the sender/receiver has checked its completion */
	STEP_BARRIER,
	STEP_MR,	/* blob: struct mrinfo, the sender's windows */
	STEP_RMA,	/* rank 0 -> peer: do blob (struct rmaop) to rank 0 */
	STEP_VALS,	/* a: first bit, blob: a bitmap chunk */
};

struct ctl_msg {
	uint32_t type;
	uint32_t step;
	uint32_t ok;
	uint32_t line;
	uint64_t a;
	uint32_t len;
	char text[160];
	uint8_t blob[ADDR_MAX];	/* name, spec, or a failure's detail */
};

struct stepq {
	struct ctl_msg m[STEPQ_LEN];
	unsigned int head, n;
};

/* Completions read from a CQ, queued until a check takes them. */
struct comp {
	struct fi_cq_err_entry e;	/* e.err == 0: a successful one */
	char estr[96];			/* an error's err_data, as text */
	fi_addr_t src;
	uint64_t at;			/* read from the CQ then, ms */
};

struct cqq {
	struct fid_cq *cq;
	const char *name;
	struct comp *v;
	size_t head, n, cap;
};

struct cfg {
	uint64_t caps;		/* beyond MSG, TAGGED, SEND, RECV */
	enum fi_av_type av_type;
	enum fi_threading threading;
	enum fi_cq_format cq_format;
	uint64_t tx_bind;	/* extra flags binding the transmit CQ */
	uint64_t tx_op_flags;	/* tx_attr->op_flags of fi_endpoint */
	size_t min_multi_recv;
	bool manual_av;		/* the case inserts addresses itself */
	bool other_job;		/* rank 1 gets another FI_OPX_UUID */
	enum fi_wait_obj wait_obj;	/* of the CQs (FI_WAIT_NONE) */
	bool auto_progress;	/* FI_PROGRESS_AUTO */
	bool cntrs;		/* send and receive counters, FI_WAIT_UNSPEC */
	bool rma_cntrs;		/* FI_WRITE, FI_READ, FI_REMOTE_* counters */
	uint64_t opt_caps;	/* asked for too, dropped if not offered */
	bool sep;		/* no endpoint, AV or names: the case's own */
	int mr_legacy;		/* mr_mode FI_MR_BASIC or FI_MR_SCALABLE */
	int api_minor;		/* fi_getinfo's API 1.<this>, 0: the latest */
	bool peek_hints;	/* hints of fabtests' fi_rdm_tagged_peek */
	bool kfab_offers;	/* kfab_* must match: FI_ENODATA fails */
};

struct side;

struct tcase {
	const char *name;
	const char *desc;
	void (*run)(struct side *s);
	int nranks;
	struct cfg cfg;
	bool kfab_only;
	const char *only;	/* for this provider alone */
};

struct ctx_pool {
	struct ctx_pool *next;
	size_t cap, used;
	struct fi_context2 c[];
};

/* RMA windows: registered regions, and what they must hold */
#define WIN_MAIN	0	/* FI_READ|FI_WRITE|FI_REMOTE_READ|FI_REMOTE_WRITE */
#define WIN_RO		1	/* FI_REMOTE_READ only */
#define WIN_WO		2	/* FI_REMOTE_WRITE only */
#define NWIN		3
#define NRMA_CNTR	4	/* FI_WRITE, FI_READ, FI_REMOTE_WRITE, _READ */

struct win {
	struct gbuf b;
	struct fid_mr *mr;
	uint8_t *img;		/* the bytes b.p must hold */
};

struct side {
	const struct tcase *tc;
	int rank, nranks;
	int ctl[MAX_RANKS];		/* socket to each rank; -1: self */
	pid_t pid[MAX_RANKS];		/* rank 0: its peers */
	bool gone[MAX_RANKS];		/* the socket reached EOF */
	bool done[MAX_RANKS];		/* rank 0: it closed cleanly */
	bool may_die[MAX_RANKS];	/* deadpeer: that death is the test */
	struct stepq steps[MAX_RANKS];
	bool abort;			/* a rank gave up: wind down */
	bool by_ctx;			/* others pending: wait by ctx */
	uint64_t polled;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep;		/* sep: the scalable endpoint */
	struct sep *sep;
	struct cqq tx, rx;
	struct fid_cntr *scntr, *rcntr;
	struct fid_cntr *rma_cntr[NRMA_CNTR];	/* NULL: bind refused */
	int rma_cntr_rc[NRMA_CNTR];
	struct win win[NWIN];
	uint64_t rkey[MAX_RANKS][NWIN], rbase[MAX_RANKS][NWIN];
	uint64_t next_key;		/* requested_key of fi_mr_reg */
	enum fi_av_type av_type;
	enum fi_cq_format cq_format;
	unsigned int cq_overruns;
	uint8_t name[MAX_RANKS][ADDR_MAX];
	size_t namelen[MAX_RANKS];
	fi_addr_t addr[MAX_RANKS];
	struct ctx_pool *pool;
	void **deferred;		/* freed once the endpoint is closed */
	size_t ndeferred;
};

static void progress(struct side *s);
static bool barrier(struct side *s);
static void sep_drain(struct side *s);
static bool side_exchange(struct side *s);

/*
 * Operation contexts live until the case's endpoint is closed, so that
 * nothing a provider still holds after a failure points to reused memory.
 */
static struct fi_context2 *ctx_new(struct side *s, size_t n)
{
	struct ctx_pool *p = s->pool;

	if (!p || p->cap - p->used < n) {
		size_t cap = n > 1024 ? n : 1024;

		p = xmalloc(sizeof(*p) + cap * sizeof(p->c[0]));
		p->next = s->pool;
		p->cap = cap;
		p->used = 0;
		s->pool = p;
	}
	memset(&p->c[p->used], 0, n * sizeof(p->c[0]));
	p->used += n;
	return &p->c[p->used - n];
}

/* Free @p now, or after the endpoint is closed if the case gave up. */
static void release(struct side *s, void *p)
{
	if (!s->abort) {
		free(p);
		return;
	}
	s->deferred = realloc(s->deferred,
			      (s->ndeferred + 1) * sizeof(*s->deferred));
	if (!s->deferred)
		die("out of memory");
	s->deferred[s->ndeferred++] = p;
}

static void gbuf_free(struct side *s, struct gbuf *b)
{
	release(s, b->mem);
	b->mem = NULL;
}

/* A fresh buffer of @len bytes in @b. */
static void gbuf_renew(struct side *s, struct gbuf *b, size_t len)
{
	if (b->mem)
		gbuf_free(s, b);
	gbuf_alloc(b, len);
}

static void ctl_send(struct side *s, int r, const struct ctl_msg *m)
{
	if (s->ctl[r] < 0 || s->gone[r])
		return;
	if (send(s->ctl[r], m, sizeof(*m), MSG_NOSIGNAL) != sizeof(*m) &&
	    s->rank != 0)
		_exit(1);	/* rank 0 is gone: nobody to report to */
}

static void step_to(struct side *s, int r, enum step step, uint64_t a,
		    const void *blob, size_t len)
{
	struct ctl_msg m = { .type = CTL_STEP, .step = step, .a = a,
			     .len = len };

	if (len)
		memcpy(m.blob, blob, len);
	ctl_send(s, r, &m);
}

static void side_abort(struct side *s)
{
	struct ctl_msg m = { .type = CTL_ABORT };

	if (s->abort)
		return;
	s->abort = true;
	for (int r = 0; r < s->nranks; r++)
		ctl_send(s, r, &m);
}

static bool vreport(struct side *s, bool ok, int line, const char *detail,
		    const char *fmt, va_list ap)
{
	struct ctl_msg m = { .type = CTL_POINT, .ok = ok, .line = line };
	char text[sizeof(m.text) - 24];

	vsnprintf(text, sizeof(text), fmt, ap);
	if (s->rank == 0) {
		tap_point(ok, __FILE__, line, "%s", text);
		if (!ok && detail && detail[0])
			tap_diag("  %s", detail);
		return ok;
	}
	snprintf(m.text, sizeof(m.text), "rank %d: %s", s->rank, text);
	if (!ok && detail)
		snprintf((char *)m.blob, sizeof(m.blob), "%s", detail);
	ctl_send(s, 0, &m);
	return ok;
}

/* One TAP point, printed by rank 0; @detail is shown when it fails. */
__attribute__((format(printf, 5, 6)))
static bool report(struct side *s, bool ok, int line, const char *detail,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ok = vreport(s, ok, line, detail, fmt, ap);
	va_end(ap);
	return ok;
}

__attribute__((format(printf, 5, 6)))
static bool check_eq(struct side *s, int line, long long a, long long b,
		     const char *fmt, ...)
{
	char detail[64];
	va_list ap;
	bool ok;

	snprintf(detail, sizeof(detail), "got %lld, want %lld", a, b);
	va_start(ap, fmt);
	ok = vreport(s, a == b, line, detail, fmt, ap);
	va_end(ap);
	return ok;
}

/* A call a case cannot go on without: a failed point and the case ends. */
__attribute__((format(printf, 4, 5)))
static bool must(struct side *s, int line, long long rc, const char *fmt,
		 ...)
{
	char detail[96];
	va_list ap;

	if (rc == 0)
		return true;
	snprintf(detail, sizeof(detail), "returned %lld (%s)", rc,
		 fi_strerror((int)(rc < 0 ? -rc : rc)));
	va_start(ap, fmt);
	vreport(s, false, line, detail, fmt, ap);
	va_end(ap);
	side_abort(s);
	return false;
}

__attribute__((format(printf, 2, 3)))
static void diag(struct side *s, const char *fmt, ...)
{
	struct ctl_msg m = { .type = CTL_DIAG };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	if (s->rank == 0)
		tap_diag("%s", m.text);
	else
		ctl_send(s, 0, &m);
}

#define CHECK(s, ok, ...)	report((s), (ok), __LINE__, NULL, __VA_ARGS__)
#define CHECK_WHY(s, ok, why, ...) \
	report((s), (ok), __LINE__, (why), __VA_ARGS__)
#define CHECK_EQ(s, a, b, ...) \
	check_eq((s), __LINE__, (long long)(a), (long long)(b), __VA_ARGS__)
#define MUST(s, rc, ...)	must((s), __LINE__, (rc), __VA_ARGS__)

static void peer_gone(struct side *s, int r)
{
	s->gone[r] = true;
	if (s->rank != 0)
		_exit(1);	/* rank 0 died: its watchdog or a crash */
	if (s->done[r] || s->may_die[r])
		return;
	report(s, false, __LINE__, NULL, "%s: rank %d went away mid-case",
	       s->tc->name, r);
	side_abort(s);
}

static void ctl_handle(struct side *s, int r, struct ctl_msg *m)
{
	struct stepq *q = &s->steps[r];

	m->text[sizeof(m->text) - 1] = '\0';
	switch (m->type) {
	case CTL_POINT:
		m->blob[sizeof(m->blob) - 1] = '\0';
		tap_point(m->ok, __FILE__, m->line, "%s", m->text);
		if (!m->ok && m->blob[0])
			tap_diag("  %s", (char *)m->blob);
		break;
	case CTL_DIAG:
		tap_diag("rank %d: %s", r, m->text);
		break;
	case CTL_ABORT:
		side_abort(s);
		break;
	case CTL_DONE:
		s->done[r] = true;
		break;
	default:
		if (q->n == STEPQ_LEN)
			die("%s: rank %d is too far ahead", s->tc->name, r);
		q->m[(q->head + q->n++) % STEPQ_LEN] = *m;
		break;
	}
}

/* Read whatever the other ranks have sent, without blocking. */
static void ctl_poll(struct side *s)
{
	struct ctl_msg m;

	s->polled = now_ms();
	for (int r = 0; r < s->nranks; r++) {
		while (s->ctl[r] >= 0 && !s->gone[r]) {
			ssize_t n = recv(s->ctl[r], &m, sizeof(m),
					 MSG_DONTWAIT);

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0) {
				peer_gone(s, r);
				break;
			}
			ctl_handle(s, r, &m);
		}
	}
}

static void ctl_sleep(struct side *s, int ms)
{
	struct pollfd p[MAX_RANKS];
	int n = 0;

	for (int r = 0; r < s->nranks; r++)
		if (s->ctl[r] >= 0 && !s->gone[r])
			p[n++] = (struct pollfd){ .fd = s->ctl[r],
						  .events = POLLIN };
	poll(p, n, ms);
}

/*
 * Wait up to @ms (< 0: forever) for @step (STEP_ANY: whatever comes) from
 * rank @r, progressing the endpoint meanwhile when @drive.
 */
static bool ctl_wait_ms(struct side *s, int r, enum step step,
			struct ctl_msg *out, int ms, bool drive)
{
	uint64_t end = ms < 0 ? UINT64_MAX : now_ms() + ms;
	struct stepq *q = &s->steps[r];

	for (;;) {
		ctl_poll(s);
		if (q->n) {
			struct ctl_msg *m = &q->m[q->head];

			if (step != STEP_ANY && m->step != step) {
				report(s, false, __LINE__, NULL,
				       "%s: protocol: rank %d sent step %u, expected %u",
				       s->tc->name, r, m->step, step);
				side_abort(s);
				return false;
			}
			if (out)
				*out = *m;
			q->head = (q->head + 1) % STEPQ_LEN;
			q->n--;
			return true;
		}
		if (s->abort || s->gone[r])
			return false;
		if (now_ms() >= end) {
			report(s, false, __LINE__, NULL,
			       "%s: no word from rank %d in %d ms (step %u)",
			       s->tc->name, r, ms, step);
			side_abort(s);
			return false;
		}
		if (drive && s->ep) {
			progress(s);
			sched_yield();
		} else {
			ctl_sleep(s, 5);
		}
	}
}

static bool ctl_wait(struct side *s, int r, enum step step,
		     struct ctl_msg *out)
{
	return ctl_wait_ms(s, r, step, out, opt_wait_ms, true);
}

/* ---- completion queues ---- */

static void cqq_push(struct cqq *q, const struct comp *c)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		struct comp *v = xmalloc(cap * sizeof(*v));

		for (size_t i = 0; i < q->n; i++)
			v[i] = q->v[(q->head + i) % q->cap];
		free(q->v);
		q->v = v;
		q->head = 0;
		q->cap = cap;
	}
	q->v[(q->head + q->n++) % q->cap] = *c;
}

/* Take the oldest completion, or the oldest for @ctx when not NULL. */
static bool cqq_take(struct cqq *q, const void *ctx, struct comp *out)
{
	for (size_t i = 0; i < q->n; i++) {
		struct comp *c = &q->v[(q->head + i) % q->cap];

		if (ctx && c->e.op_context != ctx)
			continue;
		*out = *c;
		for (size_t j = i; j > 0; j--)
			q->v[(q->head + j) % q->cap] =
				q->v[(q->head + j - 1) % q->cap];
		q->head = (q->head + 1) % q->cap;
		q->n--;
		return true;
	}
	return false;
}

static size_t cq_entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

static bool cq_take_err(struct side *s, struct cqq *q)
{
	struct comp c = { .src = FI_ADDR_NOTAVAIL, .at = now_ms() };
	ssize_t rc = fi_cq_readerr(q->cq, &c.e, 0);

	if (rc == -FI_EAGAIN)
		return false;
	if (rc < 1) {
		report(s, false, __LINE__, NULL, "%s: fi_cq_readerr(%s): %s",
		       s->tc->name, q->name, fi_strerror((int)-rc));
		side_abort(s);
		return false;
	}
	if (c.e.err_data && c.e.err_data_size)
		snprintf(c.estr, sizeof(c.estr), "%.*s",
			 (int)c.e.err_data_size, (const char *)c.e.err_data);
	c.e.err_data = NULL;
	c.e.err_data_size = 0;
	cqq_push(q, &c);
	return true;
}

/* Move everything the CQ holds into its queue. */
static void cq_drain(struct side *s, struct cqq *q, bool from)
{
	size_t esz = cq_entry_size(s->cq_format);
	uint8_t raw[(CQ_BATCH + 1) * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t src[CQ_BATCH];

	for (;;) {
		ssize_t n;

		memset(raw, GUARD_BYTE, sizeof(raw));
		n = from ? fi_cq_readfrom(q->cq, raw, CQ_BATCH, src) :
			   fi_cq_read(q->cq, raw, CQ_BATCH);
		if (n == -FI_EAGAIN)
			return;
		if (n == -FI_EAVAIL) {
			if (!cq_take_err(s, q))
				return;
			continue;
		}
		if (n < 0 || n > CQ_BATCH) {
			report(s, false, __LINE__, NULL, "%s: fi_cq_read(%s): %s",
			       s->tc->name, q->name, fi_strerror((int)-n));
			side_abort(s);
			return;
		}
		for (size_t i = n * esz; i < (n + 1) * esz; i++)
			if (raw[i] != GUARD_BYTE) {
				s->cq_overruns++;
				break;
			}
		for (ssize_t i = 0; i < n; i++) {
			struct fi_cq_tagged_entry t = { 0 };
			struct comp c = { .src = from ? src[i] :
							FI_ADDR_NOTAVAIL,
					  .at = now_ms() };

			memcpy(&t, raw + i * esz, esz);
			c.e.op_context = t.op_context;
			c.e.flags = t.flags;
			c.e.len = t.len;
			c.e.buf = t.buf;
			c.e.data = t.data;
			c.e.tag = t.tag;
			cqq_push(q, &c);
		}
		if (n < CQ_BATCH)
			return;
	}
}

/* Drive the endpoint (manual progress) and read the control channel. */
static void progress(struct side *s)
{
	if (s->tx.cq)
		cq_drain(s, &s->tx, false);
	if (s->rx.cq)
		cq_drain(s, &s->rx, true);
	sep_drain(s);
	if (now_ms() != s->polled)
		ctl_poll(s);
}

static void progress_for(struct side *s, int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end && !s->abort) {
		progress(s);
		sched_yield();
	}
}

static bool progress_until(struct side *s, uint64_t end)
{
	progress(s);
	return !s->abort && now_ms() < end;
}

/* Repeat @call while it returns -FI_EAGAIN, progressing in between. */
#define RETRY(s, rc, call)						\
	do {								\
		uint64_t end_ = now_ms() + opt_wait_ms;			\
									\
		while (((rc) = (call)) == -FI_EAGAIN &&			\
		       progress_until((s), end_)) {			\
		}							\
	} while (0)

/* Wait for a completion on @q (for @ctx when not NULL). */
static bool cq_wait(struct side *s, struct cqq *q, const void *ctx,
		    struct comp *out, int ms, const char *what)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		if (cqq_take(q, ctx, out))
			return true;
		if (s->abort)
			return false;
		if (now_ms() >= end) {
			report(s, false, __LINE__, NULL,
			       "%s: no %s completion in %d ms", what, q->name,
			       ms);
			side_abort(s);
			return false;
		}
		progress(s);
	}
}

static void comp_str(const struct comp *c, char *buf, size_t size)
{
	char f[128];

	flags_str(c->e.flags, f, sizeof(f));
	snprintf(buf, size,
		 "ctx %p flags %s len %zu tag %#llx data %#llx err %d olen %zu src %#llx",
		 c->e.op_context, f, c->e.len, (unsigned long long)c->e.tag,
		 (unsigned long long)c->e.data, c->e.err, c->e.olen,
		 (unsigned long long)c->src);
}

/* Progress for @ms: no completion may appear on @q. */
static bool expect_quiet(struct side *s, struct cqq *q, int ms,
			 const char *what)
{
	char why[256] = "";

	progress_for(s, ms);
	if (q->n) {
		comp_str(&q->v[q->head], why, sizeof(why));
		addf(why, sizeof(why), " (%zu in all)", q->n);
	}
	return CHECK_WHY(s, !q->n, why, "%s: no %s completion", what,
			 q->name);
}

/* ---- checking completions and data ---- */

#define ANY_ERR		(-1)	/* success or any error */
#define SOME_ERR	(-2)	/* any error */

struct want {
	void *ctx;
	uint64_t flags;
	int err;		/* 0, a positive FI_E*, ANY_ERR or SOME_ERR */
	size_t len;
	bool any_len;
	uint64_t tag;
	uint64_t data;		/* when flags has FI_REMOTE_CQ_DATA */
	bool chk_buf;
	void *buf;
	const fi_addr_t *src;	/* checked when FI_SOURCE is on */
	size_t olen;		/* for FI_ETRUNC */
};

/* Why completion @c is not @w; false when it is. */
static bool comp_mismatch(const struct side *s, const struct comp *c,
			  const struct want *w, char *why, size_t size)
{
	const struct fi_cq_err_entry *e = &c->e;
	enum fi_cq_format f = s->cq_format;
	char a[128], b[128];
	uint64_t flags;

	why[0] = '\0';
	if (e->op_context != w->ctx)
		addf(why, size, "op_context %p, want %p; ", e->op_context,
		     w->ctx);
	if (w->err == ANY_ERR)
		return why[0];
	if (w->err == SOME_ERR ? !e->err : e->err != w->err) {
		addf(why, size, "err %d (%s), want %s", e->err,
		     fi_strerror(e->err),
		     w->err == SOME_ERR ? "an error" : fi_strerror(w->err));
		return true;
	}
	flags = e->flags & COMP_FLAGS &
		~(w->flags & FI_TAGGED ? slack_tagged : 0) &
		~(w->flags & FI_SEND ? slack_send : 0);
	flags_str(e->flags & COMP_FLAGS, a, sizeof(a));
	flags_str(w->flags, b, sizeof(b));
	if (e->err) {
		/* error entries: whatever flags are set must fit the op */
		if (flags & ~w->flags)
			addf(why, size, "flags %s not within %s; ", a, b);
		if (e->err == FI_ETRUNC && e->olen != w->olen)
			addf(why, size, "olen %zu, want %zu; ", e->olen,
			     w->olen);
		return why[0];
	}
	if (f >= FI_CQ_FORMAT_MSG && flags != w->flags)
		addf(why, size, "flags %s, want %s; ", a, b);
	if (f >= FI_CQ_FORMAT_DATA && (w->flags & FI_REMOTE_CQ_DATA) &&
	    e->data != w->data)
		addf(why, size, "data %#llx, want %#llx; ",
		     (unsigned long long)e->data,
		     (unsigned long long)w->data);
	if (!(w->flags & FI_RECV))
		return why[0];
	if (f >= FI_CQ_FORMAT_MSG && !w->any_len && e->len != w->len)
		addf(why, size, "len %zu, want %zu; ", e->len, w->len);
	if (f >= FI_CQ_FORMAT_DATA && w->chk_buf && e->buf != w->buf)
		addf(why, size, "buf %p, want %p; ", e->buf, w->buf);
	if (f >= FI_CQ_FORMAT_TAGGED && (w->flags & FI_TAGGED) &&
	    e->tag != w->tag)
		addf(why, size, "tag %#llx, want %#llx; ",
		     (unsigned long long)e->tag, (unsigned long long)w->tag);
	if (w->src && (s->info->caps & FI_SOURCE) && c->src != *w->src)
		addf(why, size, "source %#llx, want %#llx; ",
		     (unsigned long long)c->src,
		     (unsigned long long)*w->src);
	return why[0];
}

/* One point: completion @c is @w. A wrong op_context ends the case. */
__attribute__((format(printf, 4, 5)))
static bool check_comp(struct side *s, const struct comp *c,
		       const struct want *w, const char *fmt, ...)
{
	char why[400];
	va_list ap;
	bool bad = comp_mismatch(s, c, w, why, sizeof(why));

	if (bad) {
		addf(why, sizeof(why), " [got: ");
		comp_str(c, why + strlen(why), sizeof(why) - strlen(why));
		addf(why, sizeof(why), "]");
	}
	va_start(ap, fmt);
	vreport(s, !bad, __LINE__, why, fmt, ap);
	va_end(ap);
	if (c->e.op_context != w->ctx && w->err != ANY_ERR)
		side_abort(s);
	return !bad;
}

/*
 * Why @n buffers do not hold bytes 0..@got-1 of @seed with their guards
 * intact (a view into a buffer, with no mem, has no guards).
 */
static bool data_mismatch(const struct gbuf *seg, int n, uint64_t seed,
			  size_t got, char *why, size_t size)
{
	size_t off = 0;

	for (int j = 0; j < n; j++) {
		size_t len = got > off ? got - off : 0;
		size_t bad;

		if (len > seg[j].len)
			len = seg[j].len;
		bad = pat_bad(seg[j].p, len, seed, off);
		if (bad < len) {
			snprintf(why, size,
				 "byte %zu (buffer %d + %zu) is %#x, want %#x",
				 off + bad, j, bad, seg[j].p[bad],
				 pat_byte(seed, off + bad));
			return true;
		}
		if (seg[j].mem && !gbuf_guards_ok(&seg[j])) {
			snprintf(why, size, "guard bytes of buffer %d written",
				 j);
			return true;
		}
		off += seg[j].len;
	}
	return false;
}

__attribute__((format(printf, 6, 7)))
static bool check_data(struct side *s, const struct gbuf *seg, int n,
		       uint64_t seed, size_t got, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	bool bad = data_mismatch(seg, n, seed, got, why, sizeof(why));

	va_start(ap, fmt);
	vreport(s, !bad, __LINE__, why, fmt, ap);
	va_end(ap);
	return !bad;
}

static struct want want_send(void *ctx, const struct msgspec *m)
{
	return (struct want){
		.ctx = ctx,
		.flags = FI_SEND | (m->api & API_TAGGED ? FI_TAGGED : FI_MSG),
		.err = m->expect == EXPECT_OK ? 0 :
		       m->expect == EXPECT_ANY ? ANY_ERR : SOME_ERR,
	};
}

/* The completion of a receive of @m from rank @from. */
static struct want want_recv(struct side *s, void *ctx,
			     const struct msgspec *m, int from)
{
	return (struct want){
		.ctx = ctx,
		.flags = FI_RECV | (m->api & API_TAGGED ? FI_TAGGED : FI_MSG) |
			 (m->api & API_DATA ? FI_REMOTE_CQ_DATA : 0),
		.len = m->len,
		.tag = m->tag,
		.data = m->data,
		.src = &s->addr[from],
	};
}

/* ---- posting ---- */

/* Buffers of @m for the sender or a receiver of @rlen bytes. */
static int msg_segs(const struct msgspec *m, bool recv, size_t rlen,
		    struct gbuf *seg, struct iovec *iov)
{
	const struct layout *l = m->layout ? &layouts[m->layout - 1] : NULL;
	int n = !l ? 1 : recv ? l->nr : l->ns;
	size_t off = 0;

	for (int j = 0; j < n; j++) {
		size_t len = !l ? (recv ? rlen : m->len) :
			     recv ? l->r[j] : l->s[j];

		gbuf_alloc(&seg[j], len);
		if (!recv)
			pat_fill(seg[j].p, len, m->seed, off);
		iov[j] = (struct iovec){ .iov_base = seg[j].p,
					 .iov_len = len };
		off += len;
	}
	return n;
}

static void segs_free(struct side *s, struct gbuf *seg, int n)
{
	for (int j = 0; j < n; j++)
		gbuf_free(s, &seg[j]);
}

static ssize_t post_send(struct side *s, int to, const struct msgspec *m,
			 const struct iovec *iov, size_t n, void *ctx)
{
	fi_addr_t dst = s->addr[to];
	void *buf = iov[0].iov_base;
	size_t len = iov[0].iov_len;
	bool t = m->api & API_TAGGED, d = m->api & API_DATA;

	if (m->api & API_MSG) {
		uint64_t flags = m->flags | (d ? FI_REMOTE_CQ_DATA : 0);

		if (t) {
			struct fi_msg_tagged msg = {
				.msg_iov = iov, .iov_count = n, .addr = dst,
				.tag = m->tag, .context = ctx, .data = m->data,
			};

			return fi_tsendmsg(s->ep, &msg, flags);
		}
		struct fi_msg msg = {
			.msg_iov = iov, .iov_count = n, .addr = dst,
			.context = ctx, .data = m->data,
		};

		return fi_sendmsg(s->ep, &msg, flags);
	}
	if (m->api & API_VEC)
		return t ? fi_tsendv(s->ep, iov, NULL, n, dst, m->tag, ctx) :
			   fi_sendv(s->ep, iov, NULL, n, dst, ctx);
	if (m->api & API_INJECT) {
		if (t)
			return d ? fi_tinjectdata(s->ep, buf, len, m->data, dst,
						  m->tag) :
				   fi_tinject(s->ep, buf, len, dst, m->tag);
		return d ? fi_injectdata(s->ep, buf, len, m->data, dst) :
			   fi_inject(s->ep, buf, len, dst);
	}
	if (t)
		return d ? fi_tsenddata(s->ep, buf, len, NULL, m->data, dst,
					m->tag, ctx) :
			   fi_tsend(s->ep, buf, len, NULL, dst, m->tag, ctx);
	return d ? fi_senddata(s->ep, buf, len, NULL, m->data, dst, ctx) :
		   fi_send(s->ep, buf, len, NULL, dst, ctx);
}

static ssize_t post_recv(struct side *s, uint32_t api,
			 const struct iovec *iov, size_t n, fi_addr_t src,
			 uint64_t tag, uint64_t ignore, void *ctx)
{
	bool t = api & API_TAGGED;

	if (api & API_MSG) {
		if (t) {
			struct fi_msg_tagged msg = {
				.msg_iov = iov, .iov_count = n, .addr = src,
				.tag = tag, .ignore = ignore, .context = ctx,
			};

			return fi_trecvmsg(s->ep, &msg, FI_COMPLETION);
		}
		struct fi_msg msg = {
			.msg_iov = iov, .iov_count = n, .addr = src,
			.context = ctx,
		};

		return fi_recvmsg(s->ep, &msg, FI_COMPLETION);
	}
	if (api & API_VEC)
		return t ? fi_trecvv(s->ep, iov, NULL, n, src, tag, ignore,
				     ctx) :
			   fi_recvv(s->ep, iov, NULL, n, src, ctx);
	return t ? fi_trecv(s->ep, iov[0].iov_base, iov[0].iov_len, NULL, src,
			    tag, ignore, ctx) :
		   fi_recv(s->ep, iov[0].iov_base, iov[0].iov_len, NULL, src,
			   ctx);
}

/* Post a receive into all of @b; false (and the case ends) if refused. */
static bool recv_into(struct side *s, uint32_t api, struct gbuf *b,
		      fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
		      const char *what)
{
	struct iovec iov = { .iov_base = b->p, .iov_len = b->len };
	ssize_t rc;

	RETRY(s, rc, post_recv(s, api, &iov, 1, src, tag, ignore, ctx));
	return MUST(s, rc, "%s: post receive", what);
}

/* fi_cancel of posted receive @ctx: an FI_ECANCELED completion. */
static void cancel_recv(struct side *s, void *ctx, uint32_t api,
			const char *what)
{
	struct want w = {
		.ctx = ctx, .err = FI_ECANCELED,
		.flags = FI_RECV | (api & API_TAGGED ? FI_TAGGED : FI_MSG),
	};
	struct comp c;
	int rc = fi_cancel(&s->ep->fid, ctx);

	CHECK_EQ(s, rc, 0, "%s: fi_cancel of a posted receive", what);
	if (cq_wait(s, &s->rx, ctx, &c, opt_wait_ms, what))
		check_comp(s, &c, &w, "%s: FI_ECANCELED completion", what);
}

/* ---- the halves of one message ---- */

/*
 * Send @m to rank @to, tell it SENT, check the completion (that there is
 * none, for inject), then tell it DONE.
 */
static void send_checked(struct side *s, int to, const struct msgspec *m)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_send(ctx, m);
	int ms = m->wait_ms ? (int)m->wait_ms : opt_wait_ms;
	struct gbuf seg[4];
	struct iovec iov[4];
	struct comp c;
	char what[128];
	int n = msg_segs(m, false, 0, seg, iov);
	uint64_t t0 = now_ms();
	ssize_t rc;

	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	msg_label(m, what + strlen(what), sizeof(what) - strlen(what));
	if (s->addr[to] == FI_ADDR_NOTAVAIL) {
		CHECK(s, m->expect == EXPECT_FAIL,
		      "%s: not sent, fi_av_insert refused the address", what);
		goto sent;
	}
	RETRY(s, rc, post_send(s, to, m, iov, n, ctx));
	if (rc && m->expect == EXPECT_FAIL) {
		CHECK(s, true, "%s: refused: %s", what, fi_strerror((int)-rc));
		goto sent;
	}
	if (!MUST(s, rc, "%s", what))
		goto out;
	/* the buffer is ours again the moment the call returns */
	if ((m->api & API_INJECT) || (m->flags & FI_INJECT))
		for (int j = 0; j < n; j++)
			memset(seg[j].p, 0, seg[j].len);
	if (m->api & API_INJECT) {
		step_to(s, to, STEP_SENT, 0, NULL, 0);
		expect_quiet(s, &s->tx, 2, what);
		goto done;
	}
	step_to(s, to, STEP_SENT, 0, NULL, 0);
	if (!cq_wait(s, &s->tx, s->by_ctx ? ctx : NULL, &c, ms, what))
		goto out;
	if (m->flags & FI_INJECT_COMPLETE)
		for (int j = 0; j < n; j++)
			memset(seg[j].p, 0, seg[j].len);
	if (m->expect == EXPECT_FAIL)
		diag(s, "%s: completed after %llu ms: %s", what,
		     (unsigned long long)(now_ms() - t0),
		     c.e.err ? fi_strerror(c.e.err) : "success");
	check_comp(s, &c, &w, "%s: send completion", what);
	goto done;
sent:
	step_to(s, to, STEP_SENT, 0, NULL, 0);
done:
	step_to(s, to, STEP_DONE, 0, NULL, 0);
out:
	segs_free(s, seg, n);
}

/* Rank 0 has rank @r send @m: true once it is posted. */
static bool remote_go(struct side *s, int r, const struct msgspec *m)
{
	step_to(s, r, STEP_GO, 0, m, sizeof(*m));
	return ctl_wait(s, r, STEP_SENT, NULL);
}

#define R_UNEXPECTED	0x1	/* post after the message came */
#define R_DELIVERY	0x2	/* data placed at the send completion */
#define R_ANY_SRC	0x4	/* the source address is not checked */

/*
 * Receive @m from rank @from into @rlen bytes (the layout's receive iovs
 * for the vector forms) and check it. Rank 0 asks the sender (GO); a peer
 * tells rank 0 its receive is posted (POSTED).
 */
static bool recv_one(struct side *s, int from, const struct msgspec *m,
		     size_t rlen, unsigned int how)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_recv(s, ctx, m, from);
	size_t got = m->len < rlen ? m->len : rlen;
	struct gbuf seg[4];
	struct iovec iov[4];
	struct comp c;
	char what[160];
	int n = msg_segs(m, true, rlen, seg, iov);
	bool ok = false;
	ssize_t rc = 0;

	if (how & R_ANY_SRC)
		w.src = NULL;
	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	msg_label(m, what + strlen(what), sizeof(what) - strlen(what));
	if (how & R_UNEXPECTED)
		addf(what, sizeof(what), " unexpected");
	if (rlen != m->len)
		addf(what, sizeof(what), " into %zu B", rlen);
	if (!(how & R_UNEXPECTED)) {
		RETRY(s, rc, post_recv(s, m->api, iov, n, FI_ADDR_UNSPEC,
				       m->tag, 0, ctx));
		if (!MUST(s, rc, "%s: post receive", what))
			goto out;
	}
	if (s->rank == 0) {
		if (!remote_go(s, from, m))
			goto out;
	} else {
		step_to(s, from, STEP_POSTED, 0, NULL, 0);
		if (!ctl_wait(s, from, STEP_SENT, NULL))
			goto out;
	}
	if (how & R_UNEXPECTED) {
		progress_for(s, SETTLE_MS);
		RETRY(s, rc, post_recv(s, m->api, iov, n, FI_ADDR_UNSPEC,
				       m->tag, 0, ctx));
		if (!MUST(s, rc, "%s: post receive", what))
			goto out;
	}
	if (how & R_DELIVERY) {
		if (!ctl_wait(s, from, STEP_DONE, NULL))
			goto out;
		check_data(s, seg, n, m->seed, got,
			   "%s: data in place at the send completion", what);
	}
	if (!cq_wait(s, &s->rx, s->by_ctx ? ctx : NULL, &c, opt_wait_ms, what))
		goto out;
	if (rlen < m->len) {
		w.err = FI_ETRUNC;
		w.olen = m->len - rlen;
		check_comp(s, &c, &w, "%s: FI_ETRUNC completion", what);
		CHECK(s, gbuf_guards_ok(&seg[0]), "%s: nothing written past it",
		      what);
	} else {
		check_comp(s, &c, &w, "%s: completion", what);
		check_data(s, seg, n, m->seed, got, "%s: data", what);
	}
	ok = (how & R_DELIVERY) || ctl_wait(s, from, STEP_DONE, NULL);
	if (ok && s->rank)
		step_to(s, from, STEP_DONE, 0, NULL, 0);
out:
	segs_free(s, seg, n);
	return ok && !s->abort;
}

/* Rank 0 sends @m to rank @r, which receives and checks it. */
static bool send_to_peer(struct side *s, int r, const struct msgspec *m)
{
	step_to(s, r, STEP_RECV, 0, m, sizeof(*m));
	if (!ctl_wait(s, r, STEP_POSTED, NULL))
		return false;
	send_checked(s, r, m);
	return ctl_wait(s, r, STEP_DONE, NULL);
}

/*
 * Post catch-all receives, let rank @r send (@m, asked for by rank 0) and
 * check that nothing arrives in @ms.
 */
static void quiet_recv(struct side *s, int r, const struct msgspec *m,
		       int ms)
{
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2];
	char what[128];

	snprintf(what, sizeof(what), "%s: from rank %d", s->tc->name, r);
	gbuf_alloc(&b[0], CATCH_LEN);
	gbuf_alloc(&b[1], CATCH_LEN);
	if (!recv_into(s, 0, &b[0], FI_ADDR_UNSPEC, 0, 0, &ctx[0], what) ||
	    !recv_into(s, API_TAGGED, &b[1], FI_ADDR_UNSPEC, 0, ~0ull,
		       &ctx[1], what))
		goto out;
	if (s->rank == 0)
		step_to(s, r, STEP_GO, 0, m, sizeof(*m));
	else
		step_to(s, r, STEP_POSTED, 0, NULL, 0);
	if (!ctl_wait(s, r, STEP_SENT, NULL))
		goto out;
	expect_quiet(s, &s->rx, ms, what);
	for (int i = 0; i < 2; i++) {
		struct comp c;

		if (!cqq_take(&s->rx, &ctx[i], &c))	/* reported above */
			cancel_recv(s, &ctx[i], i ? API_TAGGED : 0, what);
	}
	if (ctl_wait(s, r, STEP_DONE, NULL) && s->rank)
		step_to(s, r, STEP_DONE, 0, NULL, 0);
out:
	gbuf_free(s, &b[0]);
	gbuf_free(s, &b[1]);
}

/* Rank 0 sends @m to rank @r, which must receive nothing. */
static void quiet_peer(struct side *s, int r, const struct msgspec *m,
		       int ms)
{
	step_to(s, r, STEP_QUIET, ms, m, sizeof(*m));
	if (!ctl_wait(s, r, STEP_POSTED, NULL))
		return;
	send_checked(s, r, m);
	ctl_wait(s, r, STEP_DONE, NULL);
}

/* ---- batches ---- */

static long ctx_index(const void *ctx, const struct fi_context2 *base,
		      size_t n)
{
	const struct fi_context2 *c = ctx;

	if (c < base || c >= base + n)
		return -1;
	return c - base;
}

/*
 * Send batch @b to rank @to, at most b->window in flight, -FI_EAGAIN
 * retried after progress; SENT once all are posted, DONE once all
 * completed. B_FLOOD first posts without progress until -FI_EAGAIN.
 */
static void send_batch(struct side *s, int to, const struct batch *b)
{
	size_t max = batch_max_len(b);
	uint32_t win = b->window < b->n ? b->window : b->n;
	uint8_t *arena = xmalloc(win * (max ? max : 1));
	struct fi_context2 *ctx = ctx_new(s, b->n);
	uint32_t *slots = xcalloc(win, sizeof(*slots));
	uint32_t *slot_of = xcalloc(b->n, sizeof(*slot_of));
	uint8_t *seen = xcalloc(b->n, 1);
	uint32_t posted = 0, done = 0, nfree = win, bad = 0;
	unsigned long eagain = 0;
	bool flooding = b->kind == B_FLOOD, sent = false;
	uint64_t last = now_ms();
	char why[300] = "";
	struct msgspec m;
	struct comp c;

	for (uint32_t i = 0; i < win; i++)
		slots[i] = i;
	while (done < b->n && !s->abort) {
		while (posted < b->n && nfree) {
			uint32_t slot = slots[nfree - 1];
			uint8_t *p = arena + (size_t)slot * max;
			struct iovec iov = { .iov_base = p };
			ssize_t rc;

			batch_spec(b, posted, &m);
			iov.iov_len = m.len;
			pat_fill(p, m.len, m.seed, 0);
			rc = post_send(s, to, &m, &iov, 1, &ctx[posted]);
			if (rc == -FI_EAGAIN) {
				eagain++;
				break;
			}
			if (!MUST(s, rc, "%s: send %u", s->tc->name, posted))
				goto out;
			nfree--;
			slot_of[posted++] = slot;
			last = now_ms();
		}
		if (flooding) {
			/* no progress so far: the receiver makes none */
			flooding = false;
			step_to(s, to, STEP_FLOODED, posted, NULL, 0);
		}
		if (posted == b->n && !sent) {
			step_to(s, to, STEP_SENT, 0, NULL, 0);
			sent = true;
		}
		progress(s);
		while (cqq_take(&s->tx, NULL, &c)) {
			long i = ctx_index(c.e.op_context, ctx, b->n);
			char one[200];

			last = now_ms();
			if (i < 0 || seen[i]++) {
				comp_str(&c, one, sizeof(one));
				if (!bad++)
					snprintf(why, sizeof(why), "%s %s",
						 i < 0 ? "unknown" : "repeated",
						 one);
				continue;
			}
			batch_spec(b, i, &m);
			struct want w = want_send(&ctx[i], &m);

			if (comp_mismatch(s, &c, &w, one, sizeof(one)) &&
			    !bad++)
				snprintf(why, sizeof(why), "send %ld: %s", i,
					 one);
			slots[nfree++] = slot_of[i];
			done++;
		}
		if (now_ms() - last > (uint64_t)opt_wait_ms) {
			report(s, false, __LINE__, NULL,
			       "%s: no send completion in %d ms (%u of %u done, %u posted)",
			       s->tc->name, opt_wait_ms, done, b->n, posted);
			side_abort(s);
		}
	}
	CHECK_EQ(s, done, b->n, "%s: %u sends completed", s->tc->name, b->n);
	CHECK_WHY(s, !bad, why,
		  "%s: each send completed once, with its context and flags",
		  s->tc->name);
	if (eagain)
		diag(s, "%s: %lu sends retried after -FI_EAGAIN", s->tc->name,
		     eagain);
	step_to(s, to, STEP_DONE, 0, NULL, 0);
out:
	release(s, arena);
	free(slots);
	free(slot_of);
	free(seen);
}

/*
 * Receive batch @b from rank @from into receives posted in send order, at
 * most @rwin at a time and refilled @rbatch at a time; message i must land
 * in the i-th receive (FI_ORDER_SAS). R_UNEXPECTED: post after all were
 * sent; B_FLOOD: wait, without progress, until the sender hit -FI_EAGAIN.
 */
static void recv_stream(struct side *s, int from, const struct batch *b,
			uint32_t rwin, uint32_t rbatch, unsigned int how,
			const char *name)
{
	size_t max = batch_max_len(b);
	struct gbuf *buf;
	struct fi_context2 *ctx;
	uint32_t *k_of, *slots;
	uint32_t posted = 0, done = 0, nfree, bad_comp = 0, bad_data = 0;
	uint32_t late = 0, next = 0;	/* lowest receive not completed */
	uint8_t *fin;
	char why_c[300] = "", why_d[300] = "";
	bool strict = (s->info->rx_attr->comp_order & FI_ORDER_STRICT) ==
		      FI_ORDER_STRICT;
	bool asked = true;
	struct ctl_msg cm;
	struct msgspec m;
	struct comp c;

	if (!(s->info->tx_attr->msg_order & FI_ORDER_SAS)) {
		tap_skip("%s: no FI_ORDER_SAS to know which message is which",
			 name);
		return;
	}
	if (rwin > b->n)
		rwin = b->n;
	/* more receives than rx_attr->size may be refused: -FI_EAGAIN */
	if (s->info->rx_attr->size && rwin > s->info->rx_attr->size)
		rwin = (uint32_t)s->info->rx_attr->size;
	if (rbatch > rwin)
		rbatch = rwin;
	fin = xcalloc(b->n, 1);
	buf = xcalloc(rwin, sizeof(*buf));
	ctx = ctx_new(s, rwin);
	k_of = xcalloc(rwin, sizeof(*k_of));
	slots = xcalloc(rwin, sizeof(*slots));
	for (uint32_t i = 0; i < rwin; i++) {
		gbuf_alloc(&buf[i], max);
		slots[i] = i;
	}
	nfree = rwin;
	if (how & R_UNEXPECTED) {
		step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait(s, from, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
	} else if (b->kind == B_FLOOD) {
		step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait_ms(s, from, STEP_FLOODED, &cm, opt_wait_ms,
				 false))
			goto out;
		if (cm.a < b->n)
			CHECK(s, true, "%s: -FI_EAGAIN after %llu sends to a receiver not progressing",
			      name, (unsigned long long)cm.a);
		else
			tap_skip("%s: no -FI_EAGAIN in %u sends to a receiver not progressing",
				 name, b->n);
	} else {
		asked = false;	/* once the first receives are posted */
	}
	while (done < b->n && !s->abort) {
		char one[200];
		long slot;

		if (nfree >= rbatch || posted + nfree >= b->n ||
		    posted == done) {
			while (nfree && posted < b->n) {
				uint32_t slot = slots[nfree - 1];
				ssize_t rc;

				batch_spec(b, posted, &m);
				RETRY(s, rc, post_recv(s, m.api,
					&(struct iovec){ buf[slot].p, max },
					1, FI_ADDR_UNSPEC, m.tag, 0,
					&ctx[slot]));
				if (!MUST(s, rc, "%s: receive %u", name,
					  posted))
					goto out;
				k_of[slot] = posted++;
				nfree--;
			}
		}
		if (!asked) {
			step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
			asked = true;
		}
		snprintf(one, sizeof(one), "%s: message %u of %u", name, done,
			 b->n);
		if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, one))
			break;
		slot = ctx_index(c.e.op_context, ctx, rwin);

		if (slot < 0) {
			comp_str(&c, one, sizeof(one));
			if (!bad_comp++)
				snprintf(why_c, sizeof(why_c), "unknown %s",
					 one);
			continue;
		}
		batch_spec(b, k_of[slot], &m);
		struct want w = want_recv(s, &ctx[slot], &m, from);

		if (comp_mismatch(s, &c, &w, one, sizeof(one)) && !bad_comp++)
			snprintf(why_c, sizeof(why_c), "receive %u: %s",
				 k_of[slot], one);
		if (data_mismatch(&buf[slot], 1, m.seed, m.len, one,
				  sizeof(one)) && !bad_data++)
			snprintf(why_d, sizeof(why_d), "receive %u: %s",
				 k_of[slot], one);
		late += k_of[slot] != next;
		fin[k_of[slot]] = 1;
		while (next < b->n && fin[next])
			next++;
		memset(buf[slot].p, FILL_BYTE, max);
		slots[nfree++] = slot;
		done++;
	}
	CHECK_EQ(s, done, b->n, "%s: %u messages received", name, b->n);
	CHECK_WHY(s, !bad_comp, why_c, "%s: completion fields", name);
	CHECK_WHY(s, !bad_data, why_d,
		  "%s: byte-exact, message i in receive i (FI_ORDER_SAS)",
		  name);
	if (strict)
		CHECK_EQ(s, late, 0,
			 "%s: completions in posting order (rx comp_order FI_ORDER_STRICT)",
			 name);
	else
		diag(s, "%s: rx comp_order is not FI_ORDER_STRICT: %u completions overtook an older receive",
		     name, late);
	if (!(how & R_UNEXPECTED) && !ctl_wait(s, from, STEP_SENT, NULL))
		goto out;
	ctl_wait(s, from, STEP_DONE, NULL);
out:
	for (uint32_t i = 0; i < rwin; i++)
		gbuf_free(s, &buf[i]);
	free(buf);
	free(k_of);
	free(slots);
	free(fin);
}

/* ---- the peers' side of most cases ---- */

static void rma_do(struct side *s, int to, const void *op);

/* Do what rank 0 asks until it says STOP. */
static void peer_loop(struct side *s)
{
	struct ctl_msg m;
	struct msgspec sp;
	struct batch b;

	while (ctl_wait_ms(s, 0, STEP_ANY, &m, -1, true)) {
		memcpy(&sp, m.blob, sizeof(sp));
		memcpy(&b, m.blob, sizeof(b));
		switch (m.step) {
		case STEP_GO:
			send_checked(s, 0, &sp);
			break;
		case STEP_RECV:
			recv_one(s, 0, &sp, sp.len, 0);
			break;
		case STEP_QUIET:
			quiet_recv(s, 0, &sp, (int)m.a);
			break;
		case STEP_BATCH:
			send_batch(s, 0, &b);
			break;
		case STEP_RMA:
			rma_do(s, 0, m.blob);
			break;
		case STEP_DIE:
			kill(getpid(), SIGKILL);
			break;
		case STEP_STOP:
			return;
		default:
			report(s, false, __LINE__, NULL,
			       "%s: protocol: unexpected step %u",
			       s->tc->name, m.step);
			side_abort(s);
			return;
		}
	}
}

static void stop_peers(struct side *s)
{
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_STOP, 0, NULL, 0);
}

/* ---- the cases ---- */

static const size_t sizes[] = {
	0, 1, 7, 8, 16, 17, 4095, 4096, 4097, 8192, 8193, 12345, 16384,
	16385, 65536, 100003, MIB, 3000017, 16 * MIB,
};

static bool size_fits(struct side *s, size_t len)
{
	if (len <= s->info->ep_attr->max_msg_size)
		return true;
	tap_skip("%s: %zu B is over max_msg_size %zu", s->tc->name, len,
		 s->info->ep_attr->max_msg_size);
	return false;
}

/* All sizes, msg and tagged, posted and unexpected; larger, smaller buffers. */
static void case_sizes(struct side *s)
{
	static const struct {
		size_t len, rlen;
	} odd[] = {
		{ 1000, 4096 }, { 100000, MIB }, { 100, 50 }, { 5000, 4095 },
		{ 100000, 4096 }, { MIB, 65536 },
	};
	const char *no_trunc = known_gap("sizes/truncation");

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (no_trunc)
		tap_skip("sizes: truncation: %s: %s", opt_prov, no_trunc);
	for (int t = 0; t < 2; t++) {
		for (int u = 0; u < 2; u++) {
			unsigned int how = u ? R_UNEXPECTED : 0;

			for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
				struct msgspec m = {
					.api = t ? API_TAGGED : 0,
					.len = sizes[i], .tag = 0x5100 + i,
					.seed = seed_of(0x100 + 2 * t + u, i),
				};

				if (size_fits(s, m.len) &&
				    !recv_one(s, 1, &m, m.len, how))
					goto out;
			}
			for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
				struct msgspec m = {
					.api = t ? API_TAGGED : 0,
					.len = odd[i].len, .tag = 0x5200 + i,
					.seed = seed_of(0x110 + 2 * t + u, i),
					.expect = odd[i].rlen < odd[i].len ?
						  EXPECT_ANY : EXPECT_OK,
				};

				if (odd[i].rlen < odd[i].len && no_trunc)
					continue;
				if (!recv_one(s, 1, &m, odd[i].rlen, how))
					goto out;
			}
		}
	}
out:
	stop_peers(s);
}

/* sendv/recvv, sendmsg/recvmsg, tagged forms: 1..4 iovs, boundaries differ. */
static void case_vector(struct side *s)
{
	static const uint32_t apis[] = {
		API_VEC, API_MSG, API_TAGGED | API_VEC, API_TAGGED | API_MSG,
	};
	bool data = s->info->domain_attr->cq_data_size >= 4;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (!data)
		diag(s, "cq_data_size %zu: fi_sendmsg without FI_REMOTE_CQ_DATA",
		     s->info->domain_attr->cq_data_size);
	for (size_t a = 0; a < ARRAY_SIZE(apis); a++) {
		for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
			const struct layout *l = &layouts[i];
			struct msgspec m = {
				.api = apis[a], .layout = i + 1,
				.len = layout_len(l->s, l->ns),
				.tag = 0x5300 + i, .seed = seed_of(0x200 + a, i),
				.data = 0xd0000000u | (a << 8) | i,
				.flags = FI_COMPLETION,
			};

			if ((apis[a] & API_MSG) && data)
				m.api |= API_DATA;
			if ((size_t)l->ns > s->info->tx_attr->iov_limit ||
			    (size_t)l->nr > s->info->rx_attr->iov_limit) {
				tap_skip("%s: %d/%d iovs over iov_limit %zu/%zu",
					 s->tc->name, l->ns, l->nr,
					 s->info->tx_attr->iov_limit,
					 s->info->rx_attr->iov_limit);
				continue;
			}
			if (!recv_one(s, 1, &m, layout_len(l->r, l->nr), 0))
				goto out;
		}
	}
out:
	stop_peers(s);
}

/*
 * fi_inject and fi_tinject take the endpoint's transmit op flags but the
 * completion ones (fi_msg(3): a send with FI_INJECT and no FI_COMPLETION,
 * so no completion a level could time; fi_endpoint(3): op flags apply
 * where a call takes no flags): with the op flag FI_DELIVERY_COMPLETE
 * (tx_attr->op_flags) their FI_SEND counter counts them while the peer,
 * idle, processes nothing, as libfabric's shm and tcp do.
 */
static void case_inject_opflags(struct side *s)
{
	static const uint32_t apis[] = { API_INJECT, API_TAGGED | API_INJECT };
	const char *name = s->tc->name;
	struct msgspec m[ARRAY_SIZE(apis)];
	struct msgspec first = { .len = 16, .seed = seed_of(0x382, 0) };
	uint64_t end, c0;
	struct gbuf b;
	int rc;

	if (s->rank) {
		/* a first message (connections), then idle: nothing processed */
		peer_loop(s);
		if (ctl_wait_ms(s, 0, STEP_SENT, NULL, opt_wait_ms, false))
			peer_loop(s);
		return;
	}
	gbuf_alloc(&b, 16);
	if (!send_to_peer(s, 1, &first))
		goto out;
	step_to(s, 1, STEP_STOP, 0, NULL, 0);
	c0 = fi_cntr_read(s->scntr);
	for (size_t i = 0; i < ARRAY_SIZE(apis); i++) {
		struct iovec iov = { .iov_base = b.p, .iov_len = b.len };

		m[i] = (struct msgspec){
			.api = apis[i], .len = b.len, .tag = 0x5500 + i,
			.seed = seed_of(0x380, i),
		};
		pat_fill(b.p, b.len, m[i].seed, 0);
		RETRY(s, rc, post_send(s, 1, &m[i], &iov, 1, NULL));
		if (!MUST(s, rc, "%s: %s", name,
			  i ? "fi_tinject" : "fi_inject"))
			goto out;
	}
	end = now_ms() + QUIET_MS;
	while (fi_cntr_read(s->scntr) < c0 + ARRAY_SIZE(apis) &&
	       progress_until(s, end)) {
	}
	CHECK_EQ(s, fi_cntr_read(s->scntr), c0 + ARRAY_SIZE(apis),
		 "%s: injects counted while the peer processes nothing",
		 name);
	step_to(s, 1, STEP_SENT, 0, NULL, 0);
	for (size_t i = 0; i < ARRAY_SIZE(apis); i++) {
		step_to(s, 1, STEP_RECV, 0, &m[i], sizeof(m[i]));
		if (!ctl_wait(s, 1, STEP_POSTED, NULL))
			goto out;
		step_to(s, 1, STEP_SENT, 0, NULL, 0);
		step_to(s, 1, STEP_DONE, 0, NULL, 0);
		if (!ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
	}
	CHECK_EQ(s, fi_cntr_read(s->scntr), c0 + ARRAY_SIZE(apis),
		 "%s: each counted once", name);
	CHECK_EQ(s, fi_cntr_readerr(s->scntr), 0, "%s: no counted error",
		 name);
	expect_quiet(s, &s->tx, 2, name);
out:
	gbuf_free(s, &b);
	stop_peers(s);
}

/* inject forms: no completion, buffer free on return; senddata: CQ data. */
static void case_inject(struct side *s)
{
	static const uint32_t injects[] = {
		API_INJECT, API_INJECT | API_DATA, API_TAGGED | API_INJECT,
		API_TAGGED | API_INJECT | API_DATA,
	};
	static const size_t data_sizes[] = { 0, 5, 4097, 70000 };
	size_t isz = s->info->tx_attr->inject_size;
	size_t isizes[] = { 0, 1, 8, 63, isz / 2 + 1, isz };
	bool data = s->info->domain_attr->cq_data_size >= 4;
	const char *why = known_gap("inject/unexpected-data");

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (!isz)
		tap_skip("%s: inject_size is 0", s->tc->name);
	if (why)
		tap_skip("%s: unexpected injectdata: %s: %s", s->tc->name,
			 opt_prov, why);
	for (size_t a = 0; isz && a < ARRAY_SIZE(injects); a++) {
		if ((injects[a] & API_DATA) && !data) {
			tap_skip("%s: cq_data_size %zu < 4", s->tc->name,
				 s->info->domain_attr->cq_data_size);
			continue;
		}
		for (int u = 0; u < 2; u++) {
			if (u && why && (injects[a] & API_DATA))
				continue;
			for (size_t i = 0; i < ARRAY_SIZE(isizes); i++) {
				struct msgspec m = {
					.api = injects[a], .len = isizes[i],
					.tag = 0x5400 + i,
					.seed = seed_of(0x300 + 2 * a + u, i),
					.data = 0xc0de0000u | (a << 8) | i,
				};

				if ((i && isizes[i] <= isizes[i - 1]) ||
				    isizes[i] > isz)
					continue;
				if (!recv_one(s, 1, &m, m.len,
					      u ? R_UNEXPECTED : 0))
					goto out;
			}
		}
	}
	/* one completion, with the message's context (fi_msg(3) FI_INJECT) */
	for (int t = 0; t < 2 && isz; t++) {
		for (size_t i = 0; i < ARRAY_SIZE(isizes); i++) {
			struct msgspec m = {
				.api = API_MSG | (t ? API_TAGGED : 0),
				.len = isizes[i], .tag = 0x5600 + i,
				.seed = seed_of(0x320 + t, i),
				.flags = FI_INJECT | FI_COMPLETION,
			};

			if ((i && isizes[i] <= isizes[i - 1]) ||
			    isizes[i] > isz)
				continue;
			if (!recv_one(s, 1, &m, m.len, 0))
				goto out;
		}
	}
	for (int t = 0; t < 2 && data; t++) {
		for (size_t i = 0; i < ARRAY_SIZE(data_sizes); i++) {
			struct msgspec m = {
				.api = API_DATA | (t ? API_TAGGED : 0),
				.len = data_sizes[i], .tag = 0x5500 + i,
				.seed = seed_of(0x310 + t, i),
				.data = 0xfedc0000u | (t << 8) | i,
			};

			if (!recv_one(s, 1, &m, m.len, 0))
				goto out;
		}
	}
	if (!data)
		tap_skip("%s: senddata: cq_data_size %zu < 4", s->tc->name,
			 s->info->domain_attr->cq_data_size);
out:
	stop_peers(s);
}

/* Wait for the next receive completion: @ctx got @m from rank @from into @b. */
static bool expect_recv(struct side *s, void *ctx, const struct msgspec *m,
			int from, struct gbuf *b, const char *what)
{
	struct want w = want_recv(s, ctx, m, from);
	struct comp c;

	if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
		return false;
	check_comp(s, &c, &w, "%s: completion", what);
	check_data(s, b, 1, m->seed, m->len, "%s: data", what);
	return true;
}

/* Receives for each message of @b by its tag, posted in a permuted order. */
static void recv_permuted(struct side *s, const struct batch *b, bool unexp)
{
	struct fi_context2 *ctx = ctx_new(s, b->n);
	struct gbuf *buf = xcalloc(b->n, sizeof(*buf));
	uint32_t bad_comp = 0, bad_data = 0, done = 0;
	char why_c[300] = "", why_d[300] = "", what[64];
	struct msgspec m;
	struct comp c;

	snprintf(what, sizeof(what), "%s: %u tags, %s, permuted", s->tc->name,
		 b->n, unexp ? "unexpected" : "posted");
	if (unexp) {
		step_to(s, 1, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait(s, 1, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
	}
	for (uint32_t j = 0; j < b->n; j++) {
		batch_spec(b, j * 37 % b->n, &m);
		gbuf_alloc(&buf[j], m.len);
		if (!recv_into(s, API_TAGGED, &buf[j], FI_ADDR_UNSPEC, m.tag, 0,
			       &ctx[j], what))
			goto out;
	}
	if (!unexp)
		step_to(s, 1, STEP_BATCH, 0, b, sizeof(*b));
	for (; done < b->n; done++) {
		long j;
		char one[200];

		if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			goto out;
		j = ctx_index(c.e.op_context, ctx, b->n);
		if (j < 0) {
			comp_str(&c, one, sizeof(one));
			snprintf(why_c, sizeof(why_c), "unknown %s", one);
			bad_comp++;
			continue;
		}
		batch_spec(b, j * 37 % b->n, &m);
		struct want w = want_recv(s, &ctx[j], &m, 1);

		if (comp_mismatch(s, &c, &w, one, sizeof(one)) && !bad_comp++)
			snprintf(why_c, sizeof(why_c), "receive %ld: %s", j,
				 one);
		if (data_mismatch(&buf[j], 1, m.seed, m.len, one,
				  sizeof(one)) && !bad_data++)
			snprintf(why_d, sizeof(why_d), "receive %ld: %s", j,
				 one);
	}
	CHECK_WHY(s, !bad_comp, why_c, "%s: completions", what);
	CHECK_WHY(s, !bad_data, why_d, "%s: each message in its receive",
		  what);
	if (!unexp)
		ctl_wait(s, 1, STEP_SENT, NULL);
	ctl_wait(s, 1, STEP_DONE, NULL);
out:
	for (uint32_t j = 0; j < b->n; j++)
		if (buf[j].mem)
			gbuf_free(s, &buf[j]);
	free(buf);
}

/* Tag matching: by tag, not post order; ignore bits; permuted; same tag. */
static void case_tagmatch(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 4);
	struct msgspec ma = { .api = API_TAGGED, .len = 300, .tag = 0x7a01,
			      .seed = seed_of(0x400, 1) };
	struct msgspec mb = { .api = API_TAGGED, .len = 200, .tag = 0x7a02,
			      .seed = seed_of(0x400, 2) };
	struct msgspec mi = { .api = API_TAGGED, .len = 100, .tag = 0x1334,
			      .seed = seed_of(0x400, 3) };
	struct msgspec mj = { .api = API_TAGGED, .len = 120, .tag = 0x1234,
			      .seed = seed_of(0x400, 4) };
	struct msgspec mk = { .api = API_TAGGED, .len = 140, .tag = 0x12ab,
			      .seed = seed_of(0x400, 5) };
	struct gbuf b[4] = { 0 };
	const char *what = "tagmatch", *why;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	/* a posted receive for tag A does not take tag B */
	gbuf_renew(s, &b[0], ma.len);
	gbuf_renew(s, &b[1], mb.len);
	if (!recv_into(s, API_TAGGED, &b[0], FI_ADDR_UNSPEC, ma.tag, 0,
		       &ctx[0], what) ||
	    !remote_go(s, 1, &mb) ||
	    !expect_quiet(s, &s->rx, SETTLE_MS,
			  "tagmatch: tag B past a receive for tag A") ||
	    !recv_into(s, API_TAGGED, &b[1], FI_ADDR_UNSPEC, mb.tag, 0,
		       &ctx[1], what) ||
	    !expect_recv(s, &ctx[1], &mb, 1, &b[1],
			 "tagmatch: tag B, unexpected") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) || !remote_go(s, 1, &ma) ||
	    !expect_recv(s, &ctx[0], &ma, 1, &b[0],
			 "tagmatch: tag A, posted first") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto broken;

	/* two posted receives, messages in the other order */
	gbuf_renew(s, &b[0], ma.len);
	gbuf_renew(s, &b[1], mb.len);
	if (!recv_into(s, API_TAGGED, &b[1], FI_ADDR_UNSPEC, mb.tag, 0,
		       &ctx[1], what) ||
	    !recv_into(s, API_TAGGED, &b[0], FI_ADDR_UNSPEC, ma.tag, 0,
		       &ctx[0], what) ||
	    !remote_go(s, 1, &ma) ||
	    !expect_recv(s, &ctx[0], &ma, 1, &b[0],
			 "tagmatch: tag A into the second posted receive") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) || !remote_go(s, 1, &mb) ||
	    !expect_recv(s, &ctx[1], &mb, 1, &b[1],
			 "tagmatch: tag B into the first posted receive") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto broken;

	/* ignore bits: 0x1200/0xff takes 0x1234 and 0x12ab, not 0x1334 */
	gbuf_renew(s, &b[2], mj.len);
	gbuf_renew(s, &b[3], mi.len);
	if (!recv_into(s, API_TAGGED, &b[2], FI_ADDR_UNSPEC, 0x1200, 0xff,
		       &ctx[2], what) ||
	    !remote_go(s, 1, &mi) ||
	    !expect_quiet(s, &s->rx, SETTLE_MS,
			  "tagmatch: 0x1334 not taken by 0x1200/0xff") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) || !remote_go(s, 1, &mj) ||
	    !expect_recv(s, &ctx[2], &mj, 1, &b[2],
			 "tagmatch: 0x1234 by 0x1200/0xff, posted") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL) ||
	    !recv_into(s, API_TAGGED, &b[3], FI_ADDR_UNSPEC, mi.tag, 0,
		       &ctx[3], what) ||
	    !expect_recv(s, &ctx[3], &mi, 1, &b[3],
			 "tagmatch: 0x1334 by its own tag"))
		goto broken;
	why = known_gap("tagmatch/unexpected-ignore");
	if (why) {
		tap_skip("%s: ignore bits, unexpected: %s: %s", what, opt_prov,
			 why);
		goto permuted;
	}
	gbuf_renew(s, &b[2], mk.len);
	if (!remote_go(s, 1, &mk))
		goto broken;
	progress_for(s, SETTLE_MS);
	if (!recv_into(s, API_TAGGED, &b[2], FI_ADDR_UNSPEC, 0x1200, 0xff,
		       &ctx[2], what) ||
	    !expect_recv(s, &ctx[2], &mk, 1, &b[2],
			 "tagmatch: 0x12ab by 0x1200/0xff, unexpected") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto broken;

permuted:
	/* distinct tags received in another order than sent */
	recv_permuted(s, &(struct batch){ B_REORDER, 64, 64 }, false);
	recv_permuted(s, &(struct batch){ B_REORDER, 64, 64 }, true);

	/* one tag: 1 MiB, 8 B, 1 MiB, ... match receives in send order */
	recv_stream(s, 1, &(struct batch){ B_ORDER_TAGGED, 8, 8 }, 8, 1, 0,
		    "tagmatch: same tag, posted");
	recv_stream(s, 1, &(struct batch){ B_ORDER_TAGGED, 8, 8 }, 8, 1,
		    R_UNEXPECTED, "tagmatch: same tag, unexpected");
	recv_stream(s, 1, &(struct batch){ B_ORDER_MSG, 8, 8 }, 8, 1, 0,
		    "tagmatch: untagged, posted");
	recv_stream(s, 1, &(struct batch){ B_ORDER_MSG, 8, 8 }, 8, 1,
		    R_UNEXPECTED, "tagmatch: untagged, unexpected");
	goto out;
broken:
	side_abort(s);
out:
	for (int i = 0; i < 4; i++)
		if (b[i].mem)
			gbuf_free(s, &b[i]);
	stop_peers(s);
}

/* Receives for rank 2 and then for rank 1, posted: each gets its own. */
static bool directed_posted(struct side *s, const struct msgspec *m,
			    struct fi_context2 *ctx, struct gbuf *b,
			    const char *op)
{
	char w1[96], w2[96];

	snprintf(w1, sizeof(w1), "directed: %s from rank 1 into its receive, posted second",
		 op);
	snprintf(w2, sizeof(w2), "directed: %s from rank 2 into its receive",
		 op);
	return recv_into(s, m->api, &b[0], s->addr[2], m->tag, 0, &ctx[0],
			 w1) &&
	       recv_into(s, m->api, &b[1], s->addr[1], m->tag, 0, &ctx[1],
			 w1) &&
	       remote_go(s, 1, &m[0]) &&
	       expect_recv(s, &ctx[1], &m[0], 1, &b[1], w1) &&
	       remote_go(s, 2, &m[1]) &&
	       expect_recv(s, &ctx[0], &m[1], 2, &b[0], w2);
}

/* Rank 1's message, then rank 2's, unexpected: a receive for rank 2 skips the first. */
static bool directed_unexpected(struct side *s, const struct msgspec *m,
				struct fi_context2 *ctx, struct gbuf *b,
				const char *op)
{
	char w1[96], w2[96];

	snprintf(w2, sizeof(w2), "directed: %s unexpected, rank 2's taken past rank 1's",
		 op);
	snprintf(w1, sizeof(w1), "directed: %s unexpected, then rank 1's by FI_ADDR_UNSPEC",
		 op);
	if (!remote_go(s, 1, &m[0]))
		return false;
	progress_for(s, SETTLE_MS);
	if (!remote_go(s, 2, &m[1]))
		return false;
	progress_for(s, SETTLE_MS);
	return recv_into(s, m->api, &b[0], s->addr[2], m->tag, 0, &ctx[0],
			 w2) &&
	       expect_recv(s, &ctx[0], &m[1], 2, &b[0], w2) &&
	       recv_into(s, m->api, &b[1], FI_ADDR_UNSPEC, m->tag, 0, &ctx[1],
			 w1) &&
	       expect_recv(s, &ctx[1], &m[0], 1, &b[1], w1);
}

/* A receive for rank 2 stays empty while rank 1 sends, then gets rank 2's. */
static bool directed_waits(struct side *s, const struct msgspec *m,
			   struct fi_context2 *ctx, struct gbuf *b,
			   const char *op)
{
	char w0[96], w1[96], w2[96];

	snprintf(w0, sizeof(w0), "directed: %s from rank 1 past a receive for rank 2",
		 op);
	snprintf(w1, sizeof(w1), "directed: %s from rank 1 by FI_ADDR_UNSPEC",
		 op);
	snprintf(w2, sizeof(w2), "directed: %s from rank 2 into the receive waiting for it",
		 op);
	return recv_into(s, m->api, &b[0], s->addr[2], m->tag, 0, &ctx[0],
			 w0) &&
	       remote_go(s, 1, &m[0]) &&
	       expect_quiet(s, &s->rx, QUIET_MS, w0) &&
	       recv_into(s, m->api, &b[1], FI_ADDR_UNSPEC, m->tag, 0, &ctx[1],
			 w1) &&
	       expect_recv(s, &ctx[1], &m[0], 1, &b[1], w1) &&
	       remote_go(s, 2, &m[1]) &&
	       expect_recv(s, &ctx[0], &m[1], 2, &b[0], w2);
}

/* FI_DIRECTED_RECV: a receive for one of two senders skips the other's. */
static void case_directed(struct side *s)
{
	static bool (*const rounds[])(struct side *, const struct msgspec *,
				      struct fi_context2 *, struct gbuf *,
				      const char *) = {
		directed_posted, directed_unexpected, directed_waits,
	};
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2] = { 0 };

	if (s->rank) {
		peer_loop(s);
		return;
	}
	for (int t = 0; t < 2; t++) {
		for (size_t r = 0; r < ARRAY_SIZE(rounds); r++) {
			struct msgspec m[2];

			for (int i = 0; i < 2; i++)
				m[i] = (struct msgspec){
					.api = t ? API_TAGGED : 0, .len = 1000,
					.tag = 0x7b00,
					.seed = seed_of(0x500 + 4 * t + r, i),
				};
			gbuf_renew(s, &b[0], 1000);
			gbuf_renew(s, &b[1], 1000);
			if (!rounds[r](s, m, ctx, b, t ? "tsend" : "send") ||
			    !ctl_wait(s, 1, STEP_DONE, NULL) ||
			    !ctl_wait(s, 2, STEP_DONE, NULL)) {
				side_abort(s);
				goto out;
			}
		}
	}
out:
	gbuf_free(s, &b[0]);
	gbuf_free(s, &b[1]);
	stop_peers(s);
}

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
static void case_multirecv(struct side *s)
{
	size_t min = 0, len = sizeof(min);

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (fi_getopt(&s->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		      &min, &len) == 0)
		CHECK_EQ(s, min, MULTI_MIN,
			 "multirecv: fi_getopt(FI_OPT_MIN_MULTI_RECV)");
	multi_fill(s, 0);
	if (!s->abort)
		multi_fill(s, 3);
	stop_peers(s);
}

/* fi_trecvmsg with @flags for @tag: no buffer unless @b. */
static ssize_t trecv_flags(struct side *s, uint64_t flags, uint64_t tag,
			   struct gbuf *b, void *ctx)
{
	struct iovec iov = { .iov_base = b ? b->p : NULL,
			     .iov_len = b ? b->len : 0 };
	struct fi_msg_tagged msg = {
		.msg_iov = b ? &iov : NULL, .iov_count = b ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx,
	};

	return fi_trecvmsg(s->ep, &msg, flags | FI_COMPLETION);
}

/*
 * Peek (with @flags) for @m until found: a message that has arrived but
 * was not yet seen by the provider's progress may peek as FI_ENOMSG.
 */
static bool peek_found(struct side *s, uint64_t flags, const struct msgspec *m,
		       void *ctx, const char *what)
{
	struct want w = want_recv(s, ctx, m, 1);
	uint64_t end = now_ms() + opt_wait_ms;
	unsigned int misses = 0;
	struct comp c;
	ssize_t rc;

	w.chk_buf = true;	/* no buffer given: buf NULL */
	w.any_len = (flags & FI_DISCARD) && known_gap("peek/discard-len");
	for (;;) {
		RETRY(s, rc, trecv_flags(s, flags, m->tag, NULL, ctx));
		if (!MUST(s, rc, "%s: post", what) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			return false;
		if (c.e.err != FI_ENOMSG || now_ms() >= end)
			break;
		misses++;
		progress_for(s, 10);
	}
	if (misses)
		diag(s, "%s: FI_ENOMSG %u times before found", what, misses);
	return check_comp(s, &c, &w, "%s: completion with len and tag", what);
}

/* A peek (with @flags) for @tag, which no message has: FI_ENOMSG. */
static bool peek_none(struct side *s, uint64_t flags, uint64_t tag,
		      void *ctx, const char *what)
{
	struct comp c;
	ssize_t rc;

	RETRY(s, rc, trecv_flags(s, flags, tag, NULL, ctx));
	if (!MUST(s, rc, "%s: post", what) ||
	    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
		return false;
	return check_comp(s, &c, &(struct want){ .ctx = ctx, .err = FI_ENOMSG,
						 .flags = FI_RECV | FI_TAGGED },
			  "%s: FI_ENOMSG", what);
}

/* Peek @m twice (it stays), then receive it. */
static bool peek_twice(struct side *s, const struct msgspec *m,
		       struct fi_context2 *ctx, struct gbuf *b,
		       const char *what)
{
	return remote_go(s, 1, m) &&
	       peek_found(s, FI_PEEK, m, &ctx[0], what) &&
	       peek_found(s, FI_PEEK, m, &ctx[0], "peek: still there") &&
	       recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, m->tag, 0, &ctx[1],
			 what) &&
	       expect_recv(s, &ctx[1], m, 1, b, "peek: then received") &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/* A receive for @m's tag posted now gets nothing; it is cancelled. */
static bool peek_gone(struct side *s, const struct msgspec *m,
		      struct fi_context2 *ctx, struct gbuf *b,
		      const char *what)
{
	char line[128];

	snprintf(line, sizeof(line), "%s: then a receive gets nothing", what);
	if (!recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, m->tag, 0, ctx,
		       what) ||
	    !expect_quiet(s, &s->rx, QUIET_MS, line))
		return false;
	cancel_recv(s, ctx, API_TAGGED, what);
	return !s->abort;
}

/* FI_PEEK|FI_CLAIM, then FI_CLAIM with the same context receives @m. */
static bool peek_claim(struct side *s, const struct msgspec *m,
		       struct fi_context2 *ctx, struct gbuf *b,
		       const char *what)
{
	ssize_t rc;

	if (!remote_go(s, 1, m) ||
	    !peek_found(s, FI_PEEK | FI_CLAIM, m, &ctx[0], what) ||
	    !peek_gone(s, m, &ctx[1], b, what))
		return false;
	RETRY(s, rc, trecv_flags(s, FI_CLAIM, m->tag, b, &ctx[0]));
	return MUST(s, rc, "%s: post", what) &&
	       expect_recv(s, &ctx[0], m, 1, b,
			   "peek: FI_CLAIM with the peek's context") &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/*
 * FI_PEEK|FI_DISCARD, or with @claim FI_PEEK|FI_CLAIM then
 * FI_CLAIM|FI_DISCARD: @m is dropped and its sender still completes.
 */
static bool peek_discard(struct side *s, const struct msgspec *m, bool claim,
			 struct fi_context2 *ctx, struct gbuf *b,
			 const char *what)
{
	struct want w = {
		.ctx = &ctx[0], .any_len = true, .tag = m->tag,
		.flags = FI_RECV | FI_TAGGED, .src = &s->addr[1],
	};
	struct comp c;
	ssize_t rc;

	if (!remote_go(s, 1, m) ||
	    !peek_found(s, FI_PEEK | (claim ? FI_CLAIM : FI_DISCARD), m,
			&ctx[0], what))
		return false;
	if (claim) {
		RETRY(s, rc, trecv_flags(s, FI_CLAIM | FI_DISCARD, m->tag,
					 NULL, &ctx[0]));
		if (!MUST(s, rc, "%s: post", what) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			return false;
		check_comp(s, &c, &w, "%s: FI_CLAIM|FI_DISCARD completion",
			   what);
	}
	return peek_none(s, FI_PEEK, m->tag, &ctx[1],
			 claim ? "peek: FI_PEEK after FI_CLAIM|FI_DISCARD" :
			 "peek: FI_PEEK after FI_PEEK|FI_DISCARD") &&
	       peek_gone(s, m, &ctx[1], b, what) &&
	       ctl_wait(s, 1, STEP_DONE, NULL);
}

/*
 * FI_PEEK, FI_CLAIM and FI_DISCARD, at an eager and a rendezvous size, as
 * fi_tagged(3) says; tpeek runs it with the hints of fabtests'
 * fi_rdm_tagged_peek.
 */
static void case_peek(struct side *s)
{
	static const size_t lens[] = { 300, 70000 };
	struct fi_context2 *ctx = ctx_new(s, 2);
	const char *why = known_gap("peek/discard-rendezvous");
	char what[96];

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (!peek_none(s, FI_PEEK, 0x7c00, &ctx[0], "peek: nothing there") ||
	    !peek_none(s, FI_PEEK | FI_CLAIM, 0x7c00, &ctx[0],
		       "peek: FI_CLAIM, nothing there"))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(lens) && !s->abort; i++) {
		struct msgspec m[4];
		struct gbuf b;
		bool ok;

		for (int k = 0; k < 4; k++)
			m[k] = (struct msgspec){
				.api = API_TAGGED, .len = lens[i],
				.tag = 0x7c10 + 16 * i + k,
				.seed = seed_of(0x700 + i, k),
			};
		gbuf_alloc(&b, lens[i]);
		snprintf(what, sizeof(what), "peek: %zu B", lens[i]);
		ok = peek_twice(s, &m[0], ctx, &b, what);
		snprintf(what, sizeof(what), "peek: %zu B FI_CLAIM", lens[i]);
		ok = ok && peek_claim(s, &m[1], ctx, &b, what);
		if (ok && i && why) {
			tap_skip("peek: %zu B FI_DISCARD: %s: %s", lens[i],
				 opt_prov, why);
		} else {
			snprintf(what, sizeof(what), "peek: %zu B FI_PEEK|FI_DISCARD",
				 lens[i]);
			ok = ok && peek_discard(s, &m[2], false, ctx, &b, what);
			snprintf(what, sizeof(what), "peek: %zu B FI_CLAIM|FI_DISCARD",
				 lens[i]);
			ok = ok && peek_discard(s, &m[3], true, ctx, &b, what);
		}
		if (!ok)
			side_abort(s);
		gbuf_free(s, &b);
	}
out:
	stop_peers(s);
}

/* fi_cancel: FI_ECANCELED for posted receives, nothing for completed ones. */
static void case_cancel(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct msgspec m = { .api = API_TAGGED, .len = 100, .tag = 0x7d00,
			     .seed = seed_of(0x800, 0) };
	struct gbuf b[3];
	int rc;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	for (int i = 0; i < 3; i++)
		gbuf_alloc(&b[i], 100);
	if (!recv_into(s, API_TAGGED, &b[0], FI_ADDR_UNSPEC, m.tag, 0, &ctx[0],
		       "cancel") ||
	    !recv_into(s, 0, &b[1], FI_ADDR_UNSPEC, 0, 0, &ctx[1], "cancel"))
		goto out;
	cancel_recv(s, &ctx[0], API_TAGGED, "cancel: trecv");
	cancel_recv(s, &ctx[1], 0, "cancel: recv");
	if (!remote_go(s, 1, &m) ||
	    !expect_quiet(s, &s->rx, QUIET_MS,
			  "cancel: a cancelled receive takes no message"))
		goto out;
	CHECK(s, b[0].p[0] == FILL_BYTE && b[1].p[0] == FILL_BYTE &&
	      gbuf_guards_ok(&b[0]) && gbuf_guards_ok(&b[1]),
	      "cancel: cancelled receive buffers untouched");
	if (!recv_into(s, API_TAGGED, &b[2], FI_ADDR_UNSPEC, m.tag, 0, &ctx[2],
		       "cancel") ||
	    !expect_recv(s, &ctx[2], &m, 1, &b[2],
			 "cancel: the message in a new receive") ||
	    !ctl_wait(s, 1, STEP_DONE, NULL))
		goto out;
	rc = fi_cancel(&s->ep->fid, &ctx[2]);
	CHECK(s, rc == 0 || rc == -FI_ENOENT,
	      "cancel: fi_cancel of a completed receive: 0 or -FI_ENOENT (%d)",
	      rc);
	expect_quiet(s, &s->rx, QUIET_MS, "cancel: of a completed receive");
out:
	for (int i = 0; i < 3; i++)
		gbuf_free(s, &b[i]);
	stop_peers(s);
}

/*
 * FI_SELECTIVE_COMPLETION: only FI_COMPLETION sends complete, FI_INJECT
 * ones too, fi_inject never; all arrive.
 */
static void case_selective(struct side *s)
{
	static const struct msgspec ms[] = {
		{ .len = 100 },
		{ .len = 70000 },
		{ .api = API_MSG, .len = 200, .flags = FI_COMPLETION },
		{ .api = API_MSG, .len = 300 },
		{ .api = API_TAGGED, .len = 400, .tag = 0x7e00 },
		{ .api = API_TAGGED | API_MSG, .len = 500, .tag = 0x7e00,
		  .flags = FI_COMPLETION },
		{ .api = API_MSG, .len = 10, .flags = FI_INJECT | FI_COMPLETION },
		{ .api = API_MSG, .len = 11, .flags = FI_INJECT },
		{ .api = API_TAGGED | API_MSG, .len = 12, .tag = 0x7e00,
		  .flags = FI_INJECT | FI_COMPLETION },
		{ .api = API_TAGGED | API_MSG, .len = 13, .tag = 0x7e00,
		  .flags = FI_INJECT },
		{ .api = API_INJECT, .len = 14 },
	};
	enum { N = ARRAY_SIZE(ms) };
	struct fi_context2 *ctx = ctx_new(s, N);
	struct gbuf b[N];
	struct msgspec m[N];
	struct comp c;
	char why[200];

	for (int i = 0; i < N; i++) {
		m[i] = ms[i];
		m[i].seed = seed_of(0x900, i);
		gbuf_alloc(&b[i], s->rank ? m[i].len : 70000);
		if (s->rank)
			pat_fill(b[i].p, m[i].len, m[i].seed, 0);
	}
	if (s->rank == 0) {
		bool sas = s->info->tx_attr->msg_order & FI_ORDER_SAS;
		uint32_t seen = 0;

		for (int i = 0; i < N; i++)
			if (!recv_into(s, m[i].api & API_TAGGED, &b[i],
				       FI_ADDR_UNSPEC, m[i].tag, 0, &ctx[i],
				       "selective"))
				goto out;
		step_to(s, 1, STEP_POSTED, 0, NULL, 0);
		/* known by length; under FI_ORDER_SAS message i in receive i */
		for (int k = 0; k < N; k++) {
			long j;
			int i;

			if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms,
				     "selective"))
				goto out;
			for (i = 0; i < N; i++)
				if (m[i].len == c.e.len && !(seen & 1u << i))
					break;
			j = ctx_index(c.e.op_context, ctx, N);
			if (!CHECK(s, i < N && j >= 0,
				   "selective: a completion for a receive of %zu B",
				   c.e.len)) {
				side_abort(s);
				goto out;
			}
			seen |= 1u << i;
			struct want w = want_recv(s, sas ? &ctx[i] : &ctx[j],
						  &m[i], 1);

			check_comp(s, &c, &w, "selective: %zu B: completion",
				   c.e.len);
			check_data(s, &b[j], 1, m[i].seed, m[i].len,
				   "selective: %zu B: data", c.e.len);
		}
		step_to(s, 1, STEP_DONE, 0, NULL, 0);
		goto out;
	}
	if (!ctl_wait(s, 0, STEP_POSTED, NULL))
		goto out;
	for (int i = 0; i < N; i++) {
		struct iovec iov = { .iov_base = b[i].p, .iov_len = m[i].len };
		ssize_t rc;

		RETRY(s, rc, post_send(s, 0, &m[i], &iov, 1, &ctx[i]));
		if (!MUST(s, rc, "selective: send %d", i))
			goto out;
	}
	if (!ctl_wait(s, 0, STEP_DONE, NULL))
		goto out;
	progress_for(s, QUIET_MS);
	for (int i = 0; i < N; i++) {
		if (!(m[i].flags & FI_COMPLETION))
			continue;
		struct want w = want_send(&ctx[i], &m[i]);

		if (CHECK(s, cqq_take(&s->tx, &ctx[i], &c),
			  "selective: send %d with FI_COMPLETION completed", i))
			check_comp(s, &c, &w, "selective: send %d: completion",
				   i);
	}
	why[0] = '\0';
	if (s->tx.n)
		comp_str(&s->tx.v[s->tx.head], why, sizeof(why));
	CHECK_WHY(s, !s->tx.n, why,
		  "selective: no completion for sends without FI_COMPLETION");
	s->tx.n = 0;	/* reported */
out:
	for (int i = 0; i < N; i++)
		gbuf_free(s, &b[i]);
}

/* fi_sendmsg with FI_INJECT/TRANSMIT/DELIVERY_COMPLETE: what each promises. */
static void case_compsem(struct side *s)
{
	static const uint64_t levels[] = {
		FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE,
	};
	static const size_t lens[] = { 64, 70000, MIB };
	const char *why = known_gap("compsem/delivery-data");

	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (why)
		tap_skip("compsem: data in place at FI_DELIVERY_COMPLETE: %s: %s",
			 opt_prov, why);
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++)
		for (int t = 0; t < 2; t++)
			for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
				struct msgspec m = {
					.api = API_MSG | (t ? API_TAGGED : 0),
					.len = lens[i], .tag = 0x7f00 + i,
					.seed = seed_of(0xa00 + 2 * l + t, i),
					.flags = FI_COMPLETION | levels[l],
				};

				if (!recv_one(s, 1, &m, m.len,
					      levels[l] == FI_DELIVERY_COMPLETE &&
					      !why ? R_DELIVERY : 0))
					goto out;
			}
out:
	stop_peers(s);
}

static bool av_insert(struct side *s, int r, int *rc)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	*rc = fi_av_insert(s->av, s->name[r], 1, &a, 0, NULL);
	if (*rc != 1 || a == FI_ADDR_NOTAVAIL)
		return false;
	s->addr[r] = a;
	return true;
}

static bool av_insert_rank(struct side *s, int r)
{
	int rc;

	if (av_insert(s, r, &rc))
		return true;
	report(s, false, __LINE__, NULL,
	       "%s: fi_av_insert of rank %d: %d (%s)", s->tc->name, r, rc,
	       fi_strerror(rc < 0 ? -rc : FI_EINVAL));
	side_abort(s);
	return false;
}

static void av_lookup_check(struct side *s, int r)
{
	uint8_t buf[ADDR_MAX];
	size_t len = sizeof(buf);
	int rc = fi_av_lookup(s->av, s->addr[r], buf, &len);

	CHECK(s, rc == 0 && len == s->namelen[r] && !memcmp(buf, s->name[r], len),
	      "%s: fi_av_lookup gives rank %d's name (rc %d, %zu of %zu B)",
	      s->tc->name, r, rc, len, s->namelen[r]);
}

/* AV: indices, fi_av_lookup, sources, a sender not in it, fi_av_remove. */
static void case_av(struct side *s)
{
	static const size_t av_sizes[] = { 0, 1, 4097, 16385, 65536, MIB };
	const char *name = s->tc->name, *why;
	bool table = s->av_type == FI_AV_TABLE;
	bool source = s->info->caps & FI_SOURCE;
	struct msgspec m = { .api = API_TAGGED, .len = 100, .tag = 0x7f80 };

	if (s->rank) {
		if (av_insert_rank(s, 0))
			peer_loop(s);
		return;
	}
	if (!av_insert_rank(s, 1))
		goto out;
	if (table)
		CHECK_EQ(s, s->addr[1], 0, "%s: first address is index 0", name);
	av_lookup_check(s, 1);
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < ARRAY_SIZE(av_sizes); i++) {
			struct msgspec ms = {
				.api = t ? API_TAGGED : 0, .len = av_sizes[i],
				.tag = 0x7f90 + i, .seed = seed_of(0xb00 + t, i),
			};

			if (!recv_one(s, 1, &ms, ms.len, 0))
				goto out;
		}

	/* rank 2 is not in the AV: FI_ADDR_NOTAVAIL (FI_AV_TABLE) */
	why = known_gap("av/notavail");
	if (!source)
		tap_skip("%s: no FI_SOURCE: sources are not reported", name);
	else if (!table)
		diag(s, "%s: FI_AV_MAP may name a source not in the AV (fi_cq(3)): not checked",
		     name);
	else if (why)
		tap_skip("%s: FI_ADDR_NOTAVAIL: %s: %s", name, opt_prov, why);
	m.seed = seed_of(0xb10, 0);
	if (!recv_one(s, 2, &m, m.len, table && !why ? 0 : R_ANY_SRC) ||
	    !av_insert_rank(s, 2))
		goto out;
	if (table)
		CHECK_EQ(s, s->addr[2], 1, "%s: second address is index 1",
			 name);
	av_lookup_check(s, 2);
	m.seed = seed_of(0xb10, 1);
	if (!recv_one(s, 2, &m, m.len, 0))
		goto out;

	CHECK_EQ(s, fi_av_remove(s->av, &s->addr[1], 1, 0), 0,
		 "%s: fi_av_remove", name);
	if (strncmp(opt_prov, "kfab_", 5) && !opt_force) {
		tap_skip("%s: a send to a removed address: undefined in fi_av(3), required of kfab_* only",
			 name);
		goto out;
	}
	m = (struct msgspec){ .api = API_TAGGED, .len = 100, .tag = 0x7f81,
			      .expect = EXPECT_FAIL };
	quiet_peer(s, 1, &m, QUIET_MS);
out:
	stop_peers(s);
}

/* CQ formats: each format's fields, entries written at the format's size. */
static void case_cqfmt(struct side *s)
{
	static const size_t lens[] = { 100, 70000 };
	bool data = s->info->domain_attr->cq_data_size >= 4;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		struct msgspec m = {
			.api = API_TAGGED | (data ? API_DATA : 0),
			.len = lens[i], .tag = 0x7f70 + i,
			.seed = seed_of(0xc00 + s->cq_format, i),
			.data = 0xabcd0000u + i,
		};

		if (!recv_one(s, 1, &m, m.len, 0))
			break;
	}
	stop_peers(s);
}

/* ---- threads ---- */

#define THR_N		2000
#define THR_SLOTS	32
#define THR_RWIN	64
#define THR_MAXLEN	20000

struct thr_tx {			/* one sending thread */
	struct side *s;
	int t, to;
	uint8_t *buf;			/* THR_SLOTS * THR_MAXLEN */
	struct fi_context2 *ctx;	/* THR_N */
	atomic_bool busy[THR_SLOTS];
	atomic_bool *stop;
	ssize_t rc;
	unsigned long eagain;
	pthread_t tid;
	uint8_t seen[THR_N];		/* the main thread's */
};

struct thr_rx {			/* the receives for the peer's threads */
	struct fi_context2 *ctx;	/* 2 * THR_RWIN */
	struct gbuf b[2 * THR_RWIN];
	uint32_t k[2 * THR_RWIN];	/* the index it was posted for */
	uint32_t posted[2], got[2];
	uint8_t seen[2][THR_N];
};

struct thr_tally {
	uint32_t done, bad, late;
	char why[300];
};

static size_t thr_len(int t, uint32_t i)
{
	return i % 97 == 96 ? THR_MAXLEN : 1 + (i * 131 + t * 17) % 3000;
}

static struct msgspec thr_spec(int sender, int t, uint32_t i)
{
	return (struct msgspec){
		.api = API_TAGGED, .len = thr_len(t, i),
		.tag = ((uint64_t)(t + 1) << 24) | i,
		.seed = seed_of(0xd00 + 2 * sender + t, i),
	};
}

static void *thr_send(void *arg)
{
	struct thr_tx *x = arg;

	for (uint32_t i = 0; i < THR_N && !atomic_load(x->stop); i++) {
		struct msgspec m = thr_spec(x->s->rank, x->t, i);
		uint32_t slot = i % THR_SLOTS;
		uint8_t *p = x->buf + (size_t)slot * THR_MAXLEN;
		ssize_t rc;

		while (atomic_load(&x->busy[slot])) {
			if (atomic_load(x->stop))
				return NULL;
			sched_yield();
		}
		atomic_store(&x->busy[slot], true);
		pat_fill(p, m.len, m.seed, 0);
		while ((rc = fi_tsend(x->s->ep, p, m.len, NULL,
				      x->s->addr[x->to], m.tag,
				      &x->ctx[i])) == -FI_EAGAIN &&
		       !atomic_load(x->stop)) {
			x->eagain++;
			sched_yield();	/* the main thread progresses */
		}
		if (rc) {
			x->rc = rc;
			atomic_store(x->stop, true);
		}
	}
	return NULL;
}

/* Post receive @slot for thread slot / THR_RWIN of the peer, any index. */
static bool thr_post(struct side *s, struct thr_rx *r, int slot)
{
	int t = slot / THR_RWIN;

	r->k[slot] = r->posted[t]++;
	return recv_into(s, API_TAGGED, &r->b[slot], FI_ADDR_UNSPEC,
			 (uint64_t)(t + 1) << 24, 0xffffff, &r->ctx[slot],
			 "threads");
}

/* A send completion of thread 0 or 1: once each, its slot free again. */
static void thr_sent(struct side *s, struct thr_tx *tx, const struct comp *c,
		     struct thr_tally *y)
{
	int t = ctx_index(c->e.op_context, tx[0].ctx, THR_N) >= 0 ? 0 : 1;
	long i = ctx_index(c->e.op_context, tx[t].ctx, THR_N);
	struct msgspec m;
	struct want w;
	char one[200];

	if (i < 0 || tx[t].seen[i]++) {
		comp_str(c, one, sizeof(one));
		if (!y->bad++)
			snprintf(y->why, sizeof(y->why), "%s %s",
				 i < 0 ? "unknown" : "repeated", one);
		return;
	}
	m = thr_spec(s->rank, t, i);
	w = want_send(&tx[t].ctx[i], &m);
	if (comp_mismatch(s, c, &w, one, sizeof(one)) && !y->bad++)
		snprintf(y->why, sizeof(y->why), "thread %d send %ld: %s", t,
			 i, one);
	atomic_store(&tx[t].busy[i % THR_SLOTS], false);
	y->done++;
}

/* A receive completion: which message (by tag), once, exact; post again. */
static bool thr_received(struct side *s, struct thr_rx *r, int peer,
			 const struct comp *c, struct thr_tally *y)
{
	long slot = ctx_index(c->e.op_context, r->ctx, 2 * THR_RWIN);
	int t = slot / THR_RWIN;
	uint32_t i = c->e.tag & 0xffffff;
	struct msgspec m = thr_spec(peer, t, i);
	struct want w = want_recv(s, c->e.op_context, &m, peer);
	char one[200];

	if (slot < 0 || i >= THR_N || c->e.tag >> 24 != (uint64_t)t + 1 ||
	    r->seen[t][i]++) {
		comp_str(c, one, sizeof(one));
		if (!y->bad++)
			snprintf(y->why, sizeof(y->why), "bad or repeated: %s",
				 one);
		if (slot < 0)
			return true;
	} else if ((comp_mismatch(s, c, &w, one, sizeof(one)) ||
		    data_mismatch(&r->b[slot], 1, m.seed, m.len, one,
				  sizeof(one))) && !y->bad++) {
		snprintf(y->why, sizeof(y->why), "thread %d message %u: %s", t,
			 i, one);
	}
	y->late += i != r->k[slot];
	r->got[t]++;
	y->done++;
	return r->posted[t] == THR_N || thr_post(s, r, slot);
}

/* FI_THREAD_SAFE: two threads send, one reads the CQs; all arrive once. */
static void case_threads(struct side *s)
{
	int peer = s->rank ? 0 : 1;
	struct thr_tx *tx = xcalloc(2, sizeof(*tx));
	struct thr_rx *r = xcalloc(1, sizeof(*r));
	struct thr_tally ty = { 0 }, ry = { 0 };
	atomic_bool stop = false;
	uint64_t last = now_ms();
	struct comp c;

	for (int t = 0; t < 2; t++) {
		tx[t] = (struct thr_tx){ .s = s, .t = t, .to = peer,
					 .stop = &stop };
		tx[t].buf = xmalloc(THR_SLOTS * THR_MAXLEN);
		tx[t].ctx = ctx_new(s, THR_N);
		for (int i = 0; i < THR_SLOTS; i++)
			atomic_init(&tx[t].busy[i], false);
	}
	r->ctx = ctx_new(s, 2 * THR_RWIN);
	for (int slot = 0; slot < 2 * THR_RWIN; slot++) {
		gbuf_alloc(&r->b[slot], THR_MAXLEN);
		if (!thr_post(s, r, slot))
			goto out;
	}
	if (!barrier(s))	/* both ranks' receives are posted */
		goto out;
	for (int t = 0; t < 2; t++)
		if (pthread_create(&tx[t].tid, NULL, thr_send, &tx[t]))
			die("pthread_create");
	while ((ty.done < 2 * THR_N || ry.done < 2 * THR_N) && !s->abort &&
	       !(atomic_load(&stop) && (tx[0].rc || tx[1].rc))) {
		progress(s);
		while (cqq_take(&s->tx, NULL, &c)) {
			thr_sent(s, tx, &c, &ty);
			last = c.at;
		}
		while (cqq_take(&s->rx, NULL, &c) && !s->abort) {
			thr_received(s, r, peer, &c, &ry);
			last = c.at;
		}
		if (now_ms() - last > (uint64_t)opt_wait_ms) {
			report(s, false, __LINE__, NULL,
			       "threads: nothing completed in %d ms (%u sends, %u receives done)",
			       opt_wait_ms, ty.done, ry.done);
			side_abort(s);
		}
	}
	atomic_store(&stop, true);
	for (int t = 0; t < 2; t++) {
		pthread_join(tx[t].tid, NULL);
		if (tx[t].rc)
			MUST(s, tx[t].rc, "threads: fi_tsend in thread %d", t);
		if (tx[t].eagain)
			diag(s, "threads: thread %d retried %lu -FI_EAGAIN",
			     t, tx[t].eagain);
	}
	CHECK_WHY(s, ty.done == 2 * THR_N && !ty.bad, ty.why,
		  "threads: %u sends of 2 threads completed once each (%u)",
		  2 * THR_N, ty.done);
	CHECK_WHY(s, r->got[0] == THR_N && r->got[1] == THR_N && !ry.bad,
		  ry.why,
		  "threads: %u + %u of %u messages received once each, byte-exact",
		  r->got[0], r->got[1], THR_N);
	if (s->info->tx_attr->msg_order & FI_ORDER_SAS)
		CHECK_EQ(s, ry.late, 0,
			 "threads: each thread's messages in its send order");
out:
	atomic_store(&stop, true);
	for (int slot = 0; slot < 2 * THR_RWIN; slot++)
		if (r->b[slot].mem)
			gbuf_free(s, &r->b[slot]);
	for (int t = 0; t < 2; t++)
		release(s, tx[t].buf);
	free(r);
	free(tx);
}

/* ---- streams ---- */

/* 10000 messages, 256 in flight; then a flood past -FI_EAGAIN, all arrive. */
static void case_window(struct side *s)
{
	if (s->rank) {
		peer_loop(s);
		return;
	}
	recv_stream(s, 1, &(struct batch){ B_WINDOW, 10000, 256 }, 1024, 256,
		    0, "window");
	if (!s->abort)
		recv_stream(s, 1, &(struct batch){ B_FLOOD, 20000, 20000 },
			    1024, 256, 0, "window: flood");
	stop_peers(s);
}

/* -n messages of -s sizes: once, in order, exact, within -T s (fault runs). */
static void case_stress(struct side *s)
{
	struct batch b = { B_STRESS, opt_count, 64 };
	uint64_t t0 = now_ms(), ms;
	double bytes = 0;
	struct msgspec m;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	recv_stream(s, 1, &b, 64, 16, 0, "stress");
	ms = now_ms() - t0;
	for (uint32_t i = 0; i < b.n; i++) {
		batch_spec(&b, i, &m);
		bytes += m.len;
	}
	diag(s, "stress: %u messages, %.1f MB in %.2f s: %.0f msg/s, %.1f MB/s",
	     b.n, bytes / 1e6, ms / 1e3, b.n * 1e3 / (ms ? ms : 1),
	     bytes / 1e3 / (ms ? ms : 1));
	CHECK(s, ms <= (uint64_t)opt_stress_s * 1000,
	      "stress: done in %llu ms, within %d s", (unsigned long long)ms,
	      opt_stress_s);
	stop_peers(s);
}

/* Rank 0 and rank @r exchange @n messages each way. */
static bool talk(struct side *s, int r, int n, uint32_t round)
{
	for (int i = 0; i < n; i++) {
		struct msgspec m = { .api = API_TAGGED,
				     .len = i % 2 ? 70000 : 100, .tag = 0x7f65,
				     .seed = seed_of(0xe10 + round, i) };

		if (!recv_one(s, r, &m, m.len, 0) || !send_to_peer(s, r, &m))
			return false;
	}
	return true;
}

/* A peer dies: operations pending to it fail in 30 s, a third rank goes on. */
static void case_deadpeer(struct side *s)
{
	static const char *const what[] = {
		"directed trecv from it", "directed recv from it",
		"1 MiB tsend to it", "64 B tsend to it",
	};
	struct fi_context2 *ctx = ctx_new(s, 4);
	struct msgspec w = { .api = API_TAGGED, .len = 64, .tag = 0x7f60,
			     .seed = seed_of(0xe00, 0) };
	bool left[4] = { true, true, true, true };
	uint64_t tdead, last = 0;
	struct gbuf b[4];
	struct comp c;
	ssize_t rc;

	if (s->rank) {
		peer_loop(s);
		return;
	}
	s->may_die[1] = true;
	s->by_ctx = true;
	gbuf_alloc(&b[0], 4096);
	gbuf_alloc(&b[1], 4096);
	gbuf_alloc(&b[2], MIB);
	gbuf_alloc(&b[3], 64);
	if (!recv_one(s, 1, &w, w.len, 0) || !talk(s, 2, 1, 0) ||
	    !recv_into(s, API_TAGGED, &b[0], s->addr[1], 0x7f61, 0, &ctx[0],
		       "deadpeer") ||
	    !recv_into(s, 0, &b[1], s->addr[1], 0, 0, &ctx[1], "deadpeer"))
		goto out;
	RETRY(s, rc, fi_tsend(s->ep, b[2].p, MIB, NULL, s->addr[1], 0x7f62,
			      &ctx[2]));
	if (!MUST(s, rc, "deadpeer: 1 MiB tsend"))
		goto out;
	RETRY(s, rc, fi_tsend(s->ep, b[3].p, 64, NULL, s->addr[1], 0x7f63,
			      &ctx[3]));
	if (!MUST(s, rc, "deadpeer: 64 B tsend"))
		goto out;
	progress_for(s, 100);
	for (int i = 0; i < 4; i++) {
		if (cqq_take(i < 2 ? &s->rx : &s->tx, &ctx[i], &c)) {
			left[i] = false;
			diag(s, "deadpeer: %s completed before the death: %s",
			     what[i], fi_strerror(c.e.err));
		}
		if (i < 3)
			CHECK(s, left[i],
			      "deadpeer: %s pending before the death", what[i]);
	}

	step_to(s, 1, STEP_DIE, 0, NULL, 0);
	tdead = now_ms();
	while (!s->gone[1] && now_ms() - tdead < (uint64_t)opt_wait_ms)
		progress(s);
	tdead = now_ms();
	if (!talk(s, 2, 4, 1))	/* while the provider finds out */
		goto out;
	while ((left[0] || left[1] || left[2] || left[3]) &&
	       now_ms() < tdead + DEADPEER_MS) {
		progress(s);
		for (int i = 0; i < 4; i++) {
			struct want wt = {
				.ctx = &ctx[i], .err = i == 3 ? ANY_ERR : SOME_ERR,
				.flags = i == 0 ? FI_RECV | FI_TAGGED :
					 i == 1 ? FI_RECV | FI_MSG :
					 FI_SEND | FI_TAGGED,
			};

			if (!left[i] ||
			    !cqq_take(i < 2 ? &s->rx : &s->tx, &ctx[i], &c))
				continue;
			left[i] = false;
			last = c.at;
			diag(s, "deadpeer: %s: %s %llu ms after the death",
			     what[i], c.e.err ? fi_strerror(c.e.err) : "success",
			     (unsigned long long)(c.at - tdead));
			check_comp(s, &c, &wt, "deadpeer: %s: %s", what[i],
				   i == 3 ? "completed" : "error completion");
		}
	}
	for (int i = 0; i < 4; i++)
		CHECK(s, !left[i], "deadpeer: %s completed within %d s",
		      what[i], DEADPEER_MS / 1000);
	if (last)
		diag(s, "deadpeer: the last pending operation completed %llu ms after the death",
		     (unsigned long long)(last - tdead));
	w = (struct msgspec){ .api = API_TAGGED, .len = 100, .tag = 0x7f64,
			      .expect = EXPECT_FAIL, .wait_ms = DEADPEER_MS };
	send_checked(s, 1, &w);
	talk(s, 2, 4, 2);
out:
	stop_peers(s);
	if (left[0] || left[1] || left[2] || left[3])
		side_abort(s);	/* keep their buffers until the close */
	for (int i = 0; i < 4; i++)
		gbuf_free(s, &b[i]);
}

/* Other jobs (FI_OPX_UUID): the insert or first send fails, nothing arrives. */
static void case_jobs(struct side *s)
{
	static const size_t lens[] = { 64, 70000 };
	int peer = s->rank ? 0 : 1;
	int rc;

	if (av_insert(s, peer, &rc))
		diag(s, "jobs: fi_av_insert of the other job's address accepted");
	else
		CHECK(s, true, "jobs: fi_av_insert of the other job's address refused: %d",
		      rc);
	if (s->rank) {
		peer_loop(s);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(lens) && !s->abort; i++) {
		struct msgspec m = { .api = API_TAGGED, .len = lens[i],
				     .tag = 0x7f50 + i,
				     .seed = seed_of(0xf00, i),
				     .expect = EXPECT_FAIL };

		quiet_peer(s, 1, &m, JOBS_QUIET_MS);
		if (!s->abort)
			quiet_recv(s, 1, &m, JOBS_QUIET_MS);
	}
	stop_peers(s);
}

/* ---- RMA: windows, keys, operations ---- */

#define RMA_PAD		4099	/* the target range starts about here */
#define WIN_LEN		(4 * MIB + 2 * RMA_PAD)
#define WIN_SMALL	(64 * KIB)
#define BAD_KEY_ADD	0x10000003ull	/* a key nobody registered */

struct mrinfo {
	uint64_t key[NWIN], base[NWIN];
};

/*
 * The domain's mr_mode as bits: fi_mr(3)'s legacy FI_MR_BASIC stands for
 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MR_SCALABLE for 0.
 */
static int mr_bits(const struct side *s)
{
	int mode = s->info->domain_attr->mr_mode;

	if (mode == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return mode == FI_MR_SCALABLE ? 0 : mode;
}

/* Register @len bytes at @p as fi_mr(3) and the domain's mr_mode want. */
static int mr_reg(struct side *s, void *p, size_t len, uint64_t access,
		  uint64_t key, struct fid_mr **mr)
{
	int rc = fi_mr_reg(s->domain, p, len, access, 0, key, 0, mr, NULL);

	if (rc || !(mr_bits(s) & FI_MR_ENDPOINT))
		return rc;
	rc = fi_mr_bind(*mr, &s->ep->fid, 0);
	if (!rc)
		rc = fi_mr_enable(*mr);
	if (rc) {
		fi_close(&(*mr)->fid);
		*mr = NULL;
	}
	return rc;
}

static bool take_mr(struct side *s, int from)
{
	struct mrinfo mi;
	struct ctl_msg m;

	if (!ctl_wait(s, from, STEP_MR, &m))
		return false;
	memcpy(&mi, m.blob, sizeof(mi));
	memcpy(s->rkey[from], mi.key, sizeof(mi.key));
	memcpy(s->rbase[from], mi.base, sizeof(mi.base));
	return true;
}

/*
 * Every rank registers its windows (keys: fi_mr_key, its own with
 * FI_MR_PROV_KEY; addresses: virtual with FI_MR_VIRT_ADDR, else offsets);
 * peers learn rank 0's, rank 0 learns every peer's.
 */
static bool rma_setup(struct side *s)
{
	static const uint64_t access[NWIN] = {
		FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
		FI_REMOTE_READ, FI_REMOTE_WRITE,
	};
	bool virt = mr_bits(s) & FI_MR_VIRT_ADDR;
	struct mrinfo mi;

	s->next_key = 0x100;
	for (int w = 0; w < NWIN; w++) {
		struct win *x = &s->win[w];
		size_t len = w == WIN_MAIN ? WIN_LEN : WIN_SMALL;

		gbuf_alloc(&x->b, len);
		x->img = xmalloc(len);
		memcpy(x->img, x->b.p, len);
		if (!MUST(s, mr_reg(s, x->b.p, len, access[w], s->next_key++,
				    &x->mr), "%s: fi_mr_reg of window %d",
			  s->tc->name, w))
			return false;
		mi.key[w] = fi_mr_key(x->mr);
		mi.base[w] = virt ? (uintptr_t)x->b.p : 0;
	}
	if (s->rank) {
		step_to(s, 0, STEP_MR, 0, &mi, sizeof(mi));
		return take_mr(s, 0);
	}
	for (int r = 1; r < s->nranks; r++)
		if (!take_mr(s, r))
			return false;
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_MR, 0, &mi, sizeof(mi));
	return true;
}

/* Fill bytes @off.. of window @w and its image with @seed's pattern. */
static void win_fill(struct side *s, int w, size_t off, size_t len,
		     uint64_t seed)
{
	pat_fill(s->win[w].b.p + off, len, seed, 0);
	memcpy(s->win[w].img + off, s->win[w].b.p + off, len);
}

/*
 * One point: window @w holds its image, every byte and the guards around
 * it; remote writes may land after the initiator's completion, so wait
 * for up to @ms, progressing.
 */
__attribute__((format(printf, 4, 5)))
static bool win_check(struct side *s, int w, int ms, const char *fmt, ...)
{
	const struct win *x = &s->win[w];
	uint64_t end = now_ms() + ms;
	char why[128] = "";
	va_list ap;
	bool ok;

	while (memcmp(x->b.p, x->img, x->b.len) && now_ms() < end &&
	       !s->abort)
		progress(s);
	for (size_t i = 0; i < x->b.len; i++)
		if (x->b.p[i] != x->img[i]) {
			snprintf(why, sizeof(why),
				 "window %d byte %zu is %#x, want %#x", w, i,
				 x->b.p[i], x->img[i]);
			break;
		}
	if (!why[0] && !gbuf_guards_ok(&x->b))
		snprintf(why, sizeof(why), "guard bytes of window %d written",
			 w);
	ok = !why[0];
	va_start(ap, fmt);
	vreport(s, ok, __LINE__, why, fmt, ap);
	va_end(ap);
	return ok;
}

/* An RMA operation of a peer on rank 0's window (STEP_RMA), or of rank 0. */
struct rmaop {
	uint32_t read;		/* else write */
	uint32_t api;		/* API_VEC, API_MSG, API_INJECT, API_DATA */
	uint32_t win;		/* the target's window */
	uint32_t bad_key;
	int32_t err;		/* of the completion: 0, FI_E*, SOME_ERR */
	int64_t off;		/* of the target range in the window */
	uint64_t len, seed, data;
};

static bool is_kfab(void)
{
	return !strncmp(opt_prov, "kfab_", 5);
}

/* The error an operation on memory it may not touch completes with. */
static int32_t access_err(void)
{
	return is_kfab() ? FI_EACCES : SOME_ERR;
}

static void rma_label(const struct rmaop *o, char *buf, size_t size)
{
	uint32_t a = o->api;

	snprintf(buf, size, "%s%s%s%s%s %llu B at %+lld",
		 (a & (API_INJECT | API_MSG)) == API_INJECT ? "inject_" : "",
		 o->read ? "read" : "write",
		 a & API_VEC ? "v" : a & API_MSG ? "msg" : "",
		 a & API_DATA ? (a & API_MSG ? "+data" : "data") : "",
		 (a & API_MSG) && (a & API_INJECT) ?
		 " FI_INJECT|FI_COMPLETION" : "",
		 (unsigned long long)o->len, (long long)o->off);
	if (o->win != WIN_MAIN)
		addf(buf, size, " of the %s window",
		     o->win == WIN_RO ? "read-only" : "write-only");
	if (o->bad_key)
		addf(buf, size, " with an unregistered key");
}

/* Split @len bytes at @p into up to 3 iovs, as the provider allows. */
static size_t iov_split(struct side *s, uint8_t *p, size_t len,
			struct iovec *iov, void **desc)
{
	size_t n = len < 3 ? len : 3, off = 0;

	if (n > s->info->tx_attr->iov_limit)
		n = s->info->tx_attr->iov_limit;
	for (size_t j = 0; j < n; j++) {
		size_t l = j + 1 < n ? len / n : len - off;

		iov[j] = (struct iovec){ .iov_base = p + off, .iov_len = l };
		desc[j] = fi_mr_desc(s->win[WIN_MAIN].mr);
		off += l;
	}
	return n;
}

/* Post @o to rank @to from bytes RMA_PAD.. of our main window. */
static ssize_t rma_post(struct side *s, int to, const struct rmaop *o,
			void *ctx)
{
	uint8_t *p = s->win[WIN_MAIN].b.p + RMA_PAD;
	void *d = fi_mr_desc(s->win[WIN_MAIN].mr), *desc[3];
	uint64_t addr = s->rbase[to][o->win] + o->off;
	uint64_t key = s->rkey[to][o->win] + (o->bad_key ? BAD_KEY_ADD : 0);
	bool data = o->api & API_DATA;
	fi_addr_t dst = s->addr[to];
	struct iovec iov[3];
	size_t n;

	if (o->api & API_MSG) {
		struct fi_rma_iov rma = { .addr = addr, .len = o->len,
					  .key = key };
		struct fi_msg_rma msg = {
			.msg_iov = iov, .desc = desc, .addr = dst,
			.rma_iov = &rma, .rma_iov_count = 1, .context = ctx,
			.data = o->data,
		};
		uint64_t flags = FI_COMPLETION | (data ? FI_REMOTE_CQ_DATA : 0) |
				 (o->api & API_INJECT ? FI_INJECT : 0);

		msg.iov_count = iov_split(s, p, o->len, iov, desc);
		return o->read ? fi_readmsg(s->ep, &msg, flags) :
				 fi_writemsg(s->ep, &msg, flags);
	}
	if (o->api & API_VEC) {
		n = iov_split(s, p, o->len, iov, desc);
		return o->read ? fi_readv(s->ep, iov, desc, n, dst, addr, key,
					  ctx) :
				 fi_writev(s->ep, iov, desc, n, dst, addr, key,
					   ctx);
	}
	if (o->api & API_INJECT)
		return data ? fi_inject_writedata(s->ep, p, o->len, o->data,
						  dst, addr, key) :
			      fi_inject_write(s->ep, p, o->len, dst, addr,
					      key);
	if (o->read)
		return fi_read(s->ep, p, o->len, d, dst, addr, key, ctx);
	return data ? fi_writedata(s->ep, p, o->len, d, o->data, dst, addr,
				   key, ctx) :
		      fi_write(s->ep, p, o->len, d, dst, addr, key, ctx);
}

/*
 * Do @o (struct rmaop) to rank @to and check its completion (none for
 * inject) and, for a read, our window: the data in place, nothing else
 * written. Rank 0 is told DONE, a: the completion's error (or the call's
 * negative code). Only used to rank 0, by peers.
 */
static void rma_do(struct side *s, int to, const void *op)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct rmaop o;
	struct want w = { .ctx = ctx };
	char what[128];
	struct comp c;
	int64_t err = 0;
	ssize_t rc;

	memcpy(&o, op, sizeof(o));
	w.flags = FI_RMA | (o.read ? FI_READ : FI_WRITE);
	w.err = o.err;
	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	rma_label(&o, what + strlen(what), sizeof(what) - strlen(what));
	if (o.read) {
		memset(s->win[WIN_MAIN].b.p + RMA_PAD, FILL_BYTE, o.len);
		memset(s->win[WIN_MAIN].img + RMA_PAD, FILL_BYTE, o.len);
	} else {
		win_fill(s, WIN_MAIN, RMA_PAD, o.len, o.seed);
	}
	RETRY(s, rc, rma_post(s, to, &o, ctx));
	if (rc && o.err) {
		CHECK(s, true, "%s: refused: %s", what, fi_strerror((int)-rc));
		err = rc;
		goto done;
	}
	if (!MUST(s, rc, "%s", what))
		return;
	if ((o.api & (API_INJECT | API_MSG)) == API_INJECT)
		goto done;
	if (!cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, what))
		return;
	err = c.e.err;
	w.data = o.data;
	if ((o.api & API_DATA) && (c.e.flags & FI_REMOTE_CQ_DATA) &&
	    known_gap("rma_data/initiator-flags"))
		w.flags |= FI_REMOTE_CQ_DATA;
	if (o.err && c.e.err)
		diag(s, "%s: %s (%d)%s%s", what, fi_strerror(c.e.err),
		     c.e.err, is_kfab() ? ": " : "", is_kfab() ? c.estr : "");
	check_comp(s, &c, &w, "%s: %s completion", what,
		   o.err ? "error" : "initiator");
	if (o.err && c.e.err && is_kfab())
		CHECK(s, c.estr[0], "%s: err_data says why", what);
	if (o.read && !c.e.err)
		pat_fill(s->win[WIN_MAIN].img + RMA_PAD, o.len, o.seed, 0);
	if (o.read)
		win_check(s, WIN_MAIN, 0, "%s: %s", what, c.e.err ?
			  "our buffer untouched" :
			  "data in place, nothing else written");
done:
	step_to(s, to, STEP_DONE, (uint64_t)err, NULL, 0);
}

/*
 * Rank 0: rank @r does @o to our window; for a read our range first gets
 * @o->seed's pattern. Then our window must hold its image: for a write
 * that succeeded, the data in the range; else nothing changed.
 */
static bool remote_rma(struct side *s, int r, const struct rmaop *o)
{
	char what[128];
	struct ctl_msg m;
	int64_t err;

	snprintf(what, sizeof(what), "%s: rank %d ", s->tc->name, r);
	rma_label(o, what + strlen(what), sizeof(what) - strlen(what));
	if (o->read && !o->err)
		win_fill(s, o->win, o->off, o->len, o->seed);
	step_to(s, r, STEP_RMA, 0, o, sizeof(*o));
	if (!ctl_wait(s, r, STEP_DONE, &m))
		return false;
	err = (int64_t)m.a;
	if (!o->read && !err && !o->err)
		pat_fill(s->win[o->win].img + o->off, o->len, o->seed, 0);
	if (o->err) {
		progress_for(s, SETTLE_MS);
		win_check(s, o->win, 0, "%s: target untouched", what);
	} else {
		win_check(s, o->win, opt_wait_ms, "%s: target %s", what,
			  o->read ? "unchanged" :
			  "data in place, nothing around it written");
	}
	/* what a failed check left behind must not fail the next one */
	memcpy(s->win[o->win].img, s->win[o->win].b.p, s->win[o->win].b.len);
	return !s->abort;
}

static const size_t rma_sizes[] = {
	1, 48, 49, 4096, 8192, 8193, 65536, MIB, 4 * MIB,
};

static bool rma_fits(struct side *s, const struct rmaop *o)
{
	char what[128];

	if ((o->api & API_INJECT) && o->len > s->info->tx_attr->inject_size)
		return false;
	if (o->len <= s->info->ep_attr->max_msg_size)
		return true;
	rma_label(o, what, sizeof(what));
	tap_skip("%s: %s: over max_msg_size %zu", s->tc->name, what,
		 s->info->ep_attr->max_msg_size);
	return false;
}

/*
 * RMA writes (write, writev, writemsg, inject_write, writemsg with
 * FI_INJECT|FI_COMPLETION) or reads (read, readv, readmsg) of every size
 * by rank 1 into the middle of rank 0's window: data in place, the bytes
 * around untouched, FI_RMA|FI_WRITE or FI_RMA|FI_READ completions (for
 * writemsg with FI_INJECT too: fi_rma(3)'s FI_COMPLETION asks for one).
 */
static void rma_sizes_run(struct side *s, bool read)
{
	static const uint32_t apis[] = { 0, API_VEC, API_MSG, API_INJECT,
					 API_MSG | API_INJECT };

	if (!rma_setup(s))
		return;
	if (s->rank) {
		peer_loop(s);
		return;
	}
	diag(s, "%s: mr_mode %s", s->tc->name,
	     fi_tostr(&s->info->domain_attr->mr_mode, FI_TYPE_MR_MODE));
	for (size_t a = 0; a < (read ? 3 : ARRAY_SIZE(apis)); a++) {
		for (size_t i = 0; i < ARRAY_SIZE(rma_sizes); i++) {
			struct rmaop o = {
				.read = read, .api = apis[a], .win = WIN_MAIN,
				.off = RMA_PAD + i, .len = rma_sizes[i],
				.seed = seed_of(0x900 + 8 * read + a, i),
			};

			if (rma_fits(s, &o) && !remote_rma(s, 1, &o))
				goto out;
		}
	}
out:
	stop_peers(s);
}

/*
 * fi_mr(3)'s legacy mr_mode asked for (cfg.mr_legacy, at API cfg.api_minor)
 * comes back as asked, and the domain behaves as it says: FI_MR_BASIC,
 * provider keys (two regions registered with one requested_key get keys
 * of their own) and virtual addresses; FI_MR_SCALABLE, the application's
 * keys and offsets. Then rma_write's writes, addressed that way.
 */
static void case_rma_legacy(struct side *s)
{
	int want = s->tc->cfg.mr_legacy;
	struct fid_mr *mr[2] = { NULL, NULL };
	struct gbuf b;
	int rc[2];

	/* a provider that refuses it may have a utility layered over it */
	if (strcmp(s->info->fabric_attr->prov_name, opt_prov)) {
		if (!s->rank)
			tap_skip("%s: %s refuses it; only %s answers",
				 s->tc->name, opt_prov,
				 s->info->fabric_attr->prov_name);
		return;
	}
	CHECK_EQ(s, s->info->domain_attr->mr_mode, want,
		 "%s: mr_mode %s comes back as asked", s->tc->name,
		 want == FI_MR_BASIC ? "FI_MR_BASIC" : "FI_MR_SCALABLE");
	gbuf_alloc(&b, 128);
	for (int i = 0; i < 2; i++)
		rc[i] = mr_reg(s, b.p + 64 * i, 64, FI_REMOTE_READ, 0x77,
			       &mr[i]);
	if (want == FI_MR_BASIC)
		CHECK(s, !rc[0] && !rc[1] &&
		      fi_mr_key(mr[0]) != fi_mr_key(mr[1]),
		      "%s: one requested_key registers twice, with the provider's keys (%d, %d)",
		      s->tc->name, rc[0], rc[1]);
	else
		CHECK(s, !rc[0] && fi_mr_key(mr[0]) == 0x77,
		      "%s: the key is the requested_key (%d)", s->tc->name,
		      rc[0]);
	for (int i = 0; i < 2; i++)
		if (mr[i])
			fi_close(&mr[i]->fid);
	gbuf_free(s, &b);
	rma_sizes_run(s, false);
}

static void case_rma_write(struct side *s)
{
	rma_sizes_run(s, false);
}

static void case_rma_read(struct side *s)
{
	rma_sizes_run(s, true);
}

/*
 * writedata, inject_writedata, writemsg with FI_REMOTE_CQ_DATA: rank 0
 * gets a receive CQ entry FI_REMOTE_CQ_DATA|FI_RMA|FI_REMOTE_WRITE with
 * the data, the data is in place, and the receive posted before is not
 * consumed: it takes the message rank 1 sends afterwards.
 */
static void case_rma_data(struct side *s)
{
	static const struct {
		uint32_t api;
		size_t len;
	} ops[] = {
		{ API_DATA, 64 }, { API_DATA, 70000 },
		{ API_DATA | API_INJECT, 16 }, { API_DATA | API_MSG, 4096 },
		{ API_DATA | API_MSG, MIB },
	};
	struct msgspec m = { .len = 32, .seed = seed_of(0x980, 0) };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct gbuf b = { 0 };
	struct want w;
	struct comp c;

	if (!rma_setup(s))
		return;
	if (s->rank) {
		peer_loop(s);
		return;
	}
	if (s->info->domain_attr->cq_data_size < 4) {
		tap_skip("rma_data: cq_data_size %zu",
			 s->info->domain_attr->cq_data_size);
		goto out;
	}
	gbuf_alloc(&b, 64);
	if (!recv_into(s, 0, &b, FI_ADDR_UNSPEC, 0, 0, ctx, "rma_data"))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		struct rmaop o = { .api = ops[i].api, .win = WIN_MAIN,
				   .off = RMA_PAD + 7 * i, .len = ops[i].len,
				   .seed = seed_of(0x990, i),
				   .data = 0xda7a0000u | i };
		char what[128] = "rma_data: ";

		rma_label(&o, what + strlen(what), sizeof(what) - strlen(what));
		if (!rma_fits(s, &o))
			continue;
		if (!remote_rma(s, 1, &o) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			goto out;
		w = (struct want){ .ctx = c.e.op_context, .data = o.data,
				   .flags = FI_REMOTE_CQ_DATA | FI_RMA |
					    FI_REMOTE_WRITE };
		if (known_gap("rma_data/flags"))
			w.flags = FI_REMOTE_CQ_DATA |
				  (c.e.flags & COMP_FLAGS & ~FI_REMOTE_CQ_DATA);
		CHECK(s, c.e.op_context != ctx,
		      "%s: the posted receive is not consumed", what);
		check_comp(s, &c, &w, "%s: target completion with the data",
			   what);
	}
	if (!remote_go(s, 1, &m) ||
	    !cq_wait(s, &s->rx, ctx, &c, opt_wait_ms, "rma_data"))
		goto out;
	w = want_recv(s, ctx, &m, 1);
	check_comp(s, &c, &w, "rma_data: the receive takes the next message");
	check_data(s, &b, 1, m.seed, m.len, "rma_data: its data");
	ctl_wait(s, 1, STEP_DONE, NULL);
out:
	if (b.mem)
		gbuf_free(s, &b);
	stop_peers(s);
}

/*
 * Operations on memory they may not touch (an unregistered key, a byte
 * past the end, a byte before the start, writing a region without
 * FI_REMOTE_WRITE, reading one without FI_REMOTE_READ) complete in error
 * (kfab_*: FI_EACCES, with err_data); the target is untouched and the
 * endpoint goes on. fi_inject_write over inject_size: -FI_EMSGSIZE. A
 * requested_key used twice in a domain: -FI_ENOKEY.
 */
static void case_rma_errors(struct side *s)
{
	int32_t e = access_err();
	const struct {
		const char *gap;
		struct rmaop o;
	} bad[] = {
		{ "rma_errors/bad-key",
		  { .off = RMA_PAD, .len = 64, .bad_key = 1, .err = e } },
		{ "rma_errors/bad-key",
		  { .read = 1, .off = RMA_PAD, .len = 64, .bad_key = 1,
		    .err = e } },
		{ "rma_errors/past-end",
		  { .off = WIN_LEN - 63, .len = 64, .err = e } },
		{ "rma_errors/past-end",
		  { .read = 1, .off = WIN_LEN - 63, .len = 64, .err = e } },
		{ "rma_errors/past-end",
		  { .off = WIN_LEN - MIB + 1, .len = MIB, .err = e } },
		{ "rma_errors/past-end",
		  { .read = 1, .off = WIN_LEN - MIB + 1, .len = MIB,
		    .err = e } },
		{ "rma_errors/before-start", { .off = -1, .len = 64, .err = e } },
		{ "rma_errors/before-start",
		  { .read = 1, .off = -1, .len = 64, .err = e } },
		{ "rma_errors/access",
		  { .win = WIN_RO, .off = 100, .len = 64, .err = e } },
		{ "rma_errors/access",
		  { .win = WIN_RO, .off = 100, .len = 20000, .err = e } },
		{ "rma_errors/access",
		  { .read = 1, .win = WIN_WO, .off = 100, .len = 64,
		    .err = e } },
		{ "rma_errors/access",
		  { .read = 1, .win = WIN_WO, .off = 100, .len = 20000,
		    .err = e } },
	};
	size_t inj = s->info->tx_attr->inject_size;
	struct fid_mr *mr = NULL;
	struct rmaop o;
	ssize_t rc;

	if (!rma_setup(s))
		return;
	if (s->rank) {
		peer_loop(s);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct rmaop good = { .off = RMA_PAD, .len = 100,
				      .seed = seed_of(0x9a0, i) };
		const char *why = known_gap(bad[i].gap);
		char what[128];

		if (why) {
			rma_label(&bad[i].o, what, sizeof(what));
			tap_skip("%s: %s: %s", bad[i].gap, what, why);
			continue;
		}
		o = bad[i].o;
		if (!o.read && known_gap("rma_errors/write-completes"))
			o.err = ANY_ERR;	/* the target still untouched */
		if (!remote_rma(s, 1, &o) || !remote_rma(s, 1, &good))
			goto out;
	}
	rc = fi_inject_write(s->ep, s->win[WIN_MAIN].b.p, inj + 1, s->addr[1],
			     s->rbase[1][WIN_MAIN] + RMA_PAD,
			     s->rkey[1][WIN_MAIN]);
	if (known_gap("rma_errors/inject-size"))
		tap_skip("rma_errors/inject-size: fi_inject_write of %zu B: %zd (%s: %s)",
			 inj + 1, rc, opt_prov,
			 known_gap("rma_errors/inject-size"));
	else
		CHECK_EQ(s, rc, -FI_EMSGSIZE,
			 "rma_errors: fi_inject_write of inject_size + 1 = %zu B",
			 inj + 1);
	if (mr_bits(s) & FI_MR_PROV_KEY) {
		tap_skip("rma_errors: FI_MR_PROV_KEY: no requested_key to use twice");
		goto out;
	}
	rc = mr_reg(s, s->win[WIN_MAIN].b.p, 4096, FI_REMOTE_WRITE,
		    fi_mr_key(s->win[WIN_MAIN].mr), &mr);
	CHECK_EQ(s, rc, -FI_ENOKEY,
		 "rma_errors: fi_mr_reg with a requested_key in use");
	if (!rc)
		fi_close(&mr->fid);
out:
	stop_peers(s);
}

#define CNTR_N		8

/* Rank 1 of rma_cntr: @n ops to rank 0, then the counter of their kind. */
static void cntr_ops(struct side *s, bool read, bool bad, int n)
{
	struct fid_cntr *cn = s->rma_cntr[read];
	struct fi_context2 *ctx = ctx_new(s, n);
	const char *what = read ? "read" : "write";
	uint64_t v0 = fi_cntr_read(cn), e0 = fi_cntr_readerr(cn);
	int errs = 0;
	struct comp c;
	ssize_t rc;

	for (int i = 0; i < n; i++) {
		struct rmaop o = { .read = read, .off = RMA_PAD + i * 4096,
				   .len = 4096 };

		if (bad)	/* one byte past the end */
			o.off = WIN_LEN - 4095;
		RETRY(s, rc, rma_post(s, 0, &o, &ctx[i]));
		if (!MUST(s, rc, "rma_cntr: %s %d", what, i))
			return;
	}
	if (!bad) {
		rc = fi_cntr_wait(cn, v0 + n, opt_wait_ms);
		CHECK_EQ(s, rc, 0, "rma_cntr: fi_cntr_wait(%s counter, %llu)",
			 what, (unsigned long long)(v0 + n));
	}
	for (int i = 0; i < n; i++)
		if (cq_wait(s, &s->tx, &ctx[i], &c, opt_wait_ms, "rma_cntr"))
			errs += c.e.err != 0;
	CHECK_EQ(s, errs, bad ? n : 0, "rma_cntr: %d %s%s completed%s", n,
		 bad ? "out-of-range " : "", what, bad ? " in error" : "");
	CHECK_EQ(s, fi_cntr_read(cn), v0 + (bad ? 0 : n),
		 "rma_cntr: %s counter after %d %s%ss", what, n,
		 bad ? "failed " : "", what);
	CHECK_EQ(s, fi_cntr_readerr(cn), e0 + (bad ? n : 0),
		 "rma_cntr: %s counter errors after them", what);
}

/*
 * Counters: FI_WRITE and FI_READ ones on the initiator count its writes
 * and reads, errors in fi_cntr_readerr; FI_REMOTE_WRITE and
 * FI_REMOTE_READ ones on the target count what the peer did to it (kfab_*
 * without FI_RMA_EVENT; others may refuse their bind without it).
 */
static void case_rma_cntr(struct side *s)
{
	static const char *const names[NRMA_CNTR] = {
		"FI_WRITE", "FI_READ", "FI_REMOTE_WRITE", "FI_REMOTE_READ",
	};

	if (!rma_setup(s))
		return;
	if (s->rank) {
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			return;
		cntr_ops(s, false, false, CNTR_N);
		cntr_ops(s, true, false, CNTR_N);
		if (!known_gap("rma_cntr/errors")) {
			cntr_ops(s, false, true, 2);
			cntr_ops(s, true, true, 2);
		}
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		peer_loop(s);
		return;
	}
	if (known_gap("rma_cntr/errors"))
		tap_skip("rma_cntr/errors: %s: %s", opt_prov,
			 known_gap("rma_cntr/errors"));
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	if (!ctl_wait(s, 1, STEP_DONE, NULL))
		goto out;
	for (int i = 2; i < NRMA_CNTR; i++) {
		struct fid_cntr *cn = s->rma_cntr[i];

		if (known_gap("rma_cntr/remote")) {
			tap_skip("rma_cntr/remote: %s counter: %s", names[i],
				 known_gap("rma_cntr/remote"));
			continue;
		}
		if (!cn) {
			/* kfab_efa has no FI_RMA_EVENT, as EFA */
			if (is_kfab() && strcmp(opt_prov, "kfab_efa"))
				CHECK(s, false, "rma_cntr: fi_ep_bind(%s counter): %s",
				      names[i], fi_strerror(-s->rma_cntr_rc[i]));
			else
				tap_skip("rma_cntr: %s refuses a %s counter without FI_RMA_EVENT: %s",
					 opt_prov, names[i],
					 fi_strerror(-s->rma_cntr_rc[i]));
			continue;
		}
		fi_cntr_wait(cn, CNTR_N, opt_wait_ms);
		CHECK_EQ(s, fi_cntr_read(cn), CNTR_N,
			 "rma_cntr: the target's %s counter counts the peer's %d ops",
			 names[i], CNTR_N);
	}
out:
	stop_peers(s);
}

/*
 * Post (@post) a write and a read to rank 1 (@when: stopped, or dead);
 * with @tdead, wait until they complete: a refused post or an error
 * completion (kfab_*: FI_ECONNRESET) in DEADPEER_MS from @tdead. Without,
 * (rank 1 stopped) see which are still pending in @left. True when none
 * is left.
 */
static bool dead_rma(struct side *s, struct fi_context2 *ctx, bool *left,
		     bool post, const char *when, uint64_t tdead)
{
	static const struct rmaop ops[] = {
		{ .off = RMA_PAD, .len = 64 },
		{ .read = 1, .off = RMA_PAD, .len = MIB },
	};
	char what[2][96];
	struct comp c;
	ssize_t rc;

	for (int i = 0; i < 2; i++) {
		snprintf(what[i], sizeof(what[i]), "rma_deadpeer: ");
		rma_label(&ops[i], what[i] + strlen(what[i]),
			  sizeof(what[i]) - strlen(what[i]));
		addf(what[i], sizeof(what[i]), " %s", when);
		if (!post)
			continue;
		RETRY(s, rc, rma_post(s, 1, &ops[i], &ctx[i]));
		left[i] = !rc;
		if (rc)	/* -FI_EAGAIN for opt_wait_ms is no answer */
			CHECK(s, tdead && rc != -FI_EAGAIN, "%s: refused: %s",
			      what[i], fi_strerror((int)-rc));
	}
	if (!tdead) {
		progress_for(s, 100);
		for (int i = 0; i < 2; i++)
			if (left[i] && cqq_take(&s->tx, &ctx[i], &c)) {
				left[i] = false;
				diag(s, "%s: completed while it was stopped: %s",
				     what[i], fi_strerror(c.e.err));
			}
		return !left[0] && !left[1];
	}
	while ((left[0] || left[1]) && now_ms() < tdead + DEADPEER_MS) {
		progress(s);
		for (int i = 0; i < 2; i++) {
			struct want w = {
				.ctx = &ctx[i],
				.err = is_kfab() ? FI_ECONNRESET : SOME_ERR,
				.flags = FI_RMA | (ops[i].read ? FI_READ :
							       FI_WRITE),
			};

			if (!left[i] || !cqq_take(&s->tx, &ctx[i], &c))
				continue;
			left[i] = false;
			diag(s, "%s: %s %llu ms after the death", what[i],
			     c.e.err ? fi_strerror(c.e.err) : "success",
			     (unsigned long long)(c.at - tdead));
			check_comp(s, &c, &w, "%s: error completion", what[i]);
		}
	}
	for (int i = 0; i < 2; i++)
		CHECK(s, !left[i], "%s: done within %d s", what[i],
		      DEADPEER_MS / 1000);
	return !left[0] && !left[1];
}

/*
 * A peer stopped (SIGSTOP) with a write and a read to it pending, then
 * killed: they complete in error; a write and a read posted once it is
 * dead are refused or complete in error; none hangs.
 */
static void case_rma_deadpeer(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 4);
	bool left[2] = { false, false };
	uint64_t tdead;

	if (!rma_setup(s))
		return;
	if (s->rank) {
		peer_loop(s);
		return;
	}
	s->may_die[1] = true;
	kill(s->pid[1], SIGSTOP);
	dead_rma(s, ctx, left, true, "pending to a stopped peer", 0);
	kill(s->pid[1], SIGKILL);
	tdead = now_ms();
	if (!dead_rma(s, ctx, left, false, "pending to a stopped peer", tdead))
		goto out;
	while (!s->gone[1] && now_ms() - tdead < (uint64_t)opt_wait_ms)
		progress(s);
	dead_rma(s, ctx + 2, left, true, "to a dead peer", now_ms());
out:
	if (left[0] || left[1])
		side_abort(s);	/* keep the windows until the close */
}

/* ---- atomics: every valid datatype x op x kind against a reference ---- */

#define AT_MAX		7	/* elements of one operation */
#define AT_SLOT		256	/* bytes of rank 0's window per combination */
#define AT_START	4096	/* of the slots: elements naturally aligned */
#define AT_NDT		(FI_UINT128 + 1)
#define AT_NOP		FI_ATOMIC_OP_LAST

enum { AT_BASE, AT_FETCH, AT_COMPARE, AT_KINDS };

static const char *const at_kinds[AT_KINDS] = {
	"atomic", "fetch_atomic", "compare_atomic",
};

static const char *const at_ops[AT_NOP] = {
	"MIN", "MAX", "SUM", "PROD", "LOR", "LAND", "BOR", "BAND", "LXOR",
	"BXOR", "ATOMIC_READ", "ATOMIC_WRITE", "CSWAP", "CSWAP_NE",
	"CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP",
};

/*
 * The reference: element @i of @addr after @op with operands @buf and
 * @cmp, as fi_atomic(3) defines it, in plain C of the element type; false
 * when the type has no such op (min of complex numbers, bits of floats).
 */
#define AT_COMMON							\
	case FI_SUM: *a = *a + b; break;				\
	case FI_PROD: *a = *a * b; break;				\
	case FI_LOR: *a = *a || b; break;				\
	case FI_LAND: *a = *a && b; break;				\
	case FI_LXOR: *a = (*a && !b) || (!*a && b); break;		\
	case FI_ATOMIC_READ: break;					\
	case FI_ATOMIC_WRITE: *a = b; break;				\
	case FI_CSWAP: if (c == *a) *a = b; break;			\
	case FI_CSWAP_NE: if (c != *a) *a = b; break;
#define AT_ORDER							\
	case FI_MIN: if (b < *a) *a = b; break;				\
	case FI_MAX: if (b > *a) *a = b; break;				\
	case FI_CSWAP_LE: if (c <= *a) *a = b; break;			\
	case FI_CSWAP_LT: if (c < *a) *a = b; break;			\
	case FI_CSWAP_GE: if (c >= *a) *a = b; break;			\
	case FI_CSWAP_GT: if (c > *a) *a = b; break;
#define AT_BITS								\
	case FI_BOR: *a = *a | b; break;				\
	case FI_BAND: *a = *a & b; break;				\
	case FI_BXOR: *a = *a ^ b; break;				\
	case FI_MSWAP: *a = (b & c) | (*a & ~c); break;
#define AT_TYPE(T, n, real, cases)					\
static bool op_##n(enum fi_op op, void *addr, const void *buf,		\
		   const void *cmp, size_t i)				\
{									\
	T *a = (T *)addr + i, b = ((const T *)buf)[i];			\
	T c = ((const T *)cmp)[i];					\
									\
	switch (op) {							\
	cases								\
	default:							\
		return false;						\
	}								\
	return true;							\
}									\
static void set_##n(void *p, size_t i, int v)				\
{									\
	((T *)p)[i] = real ? (T)v : (T)v + (T)(v & 1) * (T)I;		\
}									\
static bool eq_##n(const void *x, const void *y, size_t i)		\
{									\
	return ((const T *)x)[i] == ((const T *)y)[i];			\
}									\
static double get_##n(const void *p, size_t i)				\
{									\
	return (double)creall((long double complex)((const T *)p)[i]);	\
}
#define AT_INT(T, n)	AT_TYPE(T, n, 1, AT_COMMON AT_ORDER AT_BITS)
#define AT_REAL(T, n)	AT_TYPE(T, n, 1, AT_COMMON AT_ORDER)
#define AT_CPLX(T, n)	AT_TYPE(T, n, 0, AT_COMMON)

AT_INT(int8_t, i8)
AT_INT(uint8_t, u8)
AT_INT(int16_t, i16)
AT_INT(uint16_t, u16)
AT_INT(int32_t, i32)
AT_INT(uint32_t, u32)
AT_INT(int64_t, i64)
AT_INT(uint64_t, u64)
AT_REAL(float, f)
AT_REAL(double, d)
AT_CPLX(float complex, fc)
AT_CPLX(double complex, dc)
AT_REAL(long double, ld)
AT_CPLX(long double complex, ldc)
AT_INT(__int128, i128)
AT_INT(unsigned __int128, u128)

static const struct atype {
	const char *name;
	size_t size;
	bool (*op)(enum fi_op op, void *addr, const void *buf,
		   const void *cmp, size_t i);
	void (*set)(void *p, size_t i, int v);
	bool (*eq)(const void *x, const void *y, size_t i);
	double (*get)(const void *p, size_t i);
} atypes[AT_NDT] = {
#define AT(dt, T, n)	[dt] = { #dt, sizeof(T), op_##n, set_##n, eq_##n, get_##n }
	AT(FI_INT8, int8_t, i8), AT(FI_UINT8, uint8_t, u8),
	AT(FI_INT16, int16_t, i16), AT(FI_UINT16, uint16_t, u16),
	AT(FI_INT32, int32_t, i32), AT(FI_UINT32, uint32_t, u32),
	AT(FI_INT64, int64_t, i64), AT(FI_UINT64, uint64_t, u64),
	AT(FI_FLOAT, float, f), AT(FI_DOUBLE, double, d),
	AT(FI_FLOAT_COMPLEX, float complex, fc),
	AT(FI_DOUBLE_COMPLEX, double complex, dc),
	AT(FI_LONG_DOUBLE, long double, ld),
	AT(FI_LONG_DOUBLE_COMPLEX, long double complex, ldc),
	AT(FI_INT128, __int128, i128),
	AT(FI_UINT128, unsigned __int128, u128),
#undef AT
};

/*
 * Operand @which (0: the target's initial value, 1: buf, 2: compare) of
 * element @i of combination @k: small integers, exact in every type; the
 * compare value equals the target's, is above or below it by turns.
 */
static int at_val(int k, size_t i, int which)
{
	int a = (k + 3 * (int)i) % 5;

	if (which == 1)
		return (7 * k + (int)i) % 4;
	if (which == 2)
		return i % 3 == 0 ? a : i % 3 == 1 ? a + 1 : a - 1;
	return a;
}

static void at_fill(const struct atype *t, void *p, int k, size_t n,
		    int which)
{
	for (size_t i = 0; i < n; i++)
		t->set(p, i, at_val(k, i, which));
}

/* One operation: kind, form (0 plain, 1 v, 2 msg, 3 inject), operands. */
struct atop {
	int kind, form;
	enum fi_datatype dt;
	enum fi_op op;
	size_t n;
	uint64_t addr, key;
	void *buf, *cmp, *res;	/* in our main window */
};

static ssize_t at_post(struct side *s, int to, const struct atop *a,
		       void *ctx)
{
	void *d = fi_mr_desc(s->win[WIN_MAIN].mr), *dv[1] = { d };
	struct fi_ioc iov = { a->buf, a->n }, cmp = { a->cmp, a->n };
	struct fi_ioc res = { a->res, a->n };
	struct fi_rma_ioc rma = { a->addr, a->n, a->key };
	fi_addr_t dst = s->addr[to];
	struct fi_msg_atomic msg = {
		.msg_iov = &iov, .desc = dv, .iov_count = 1, .addr = dst,
		.rma_iov = &rma, .rma_iov_count = 1, .datatype = a->dt,
		.op = a->op, .context = ctx,
	};
	struct fid_ep *ep = s->ep;

	switch (a->kind * 4 + a->form) {
	case AT_BASE * 4 + 1:
		return fi_atomicv(ep, &iov, dv, 1, dst, a->addr, a->key, a->dt,
				  a->op, ctx);
	case AT_BASE * 4 + 2:
		return fi_atomicmsg(ep, &msg, FI_COMPLETION);
	case AT_BASE * 4 + 3:
		return fi_inject_atomic(ep, a->buf, a->n, dst, a->addr, a->key,
					a->dt, a->op);
	case AT_BASE * 4:
		return fi_atomic(ep, a->buf, a->n, d, dst, a->addr, a->key,
				 a->dt, a->op, ctx);
	case AT_FETCH * 4 + 1:
		return fi_fetch_atomicv(ep, &iov, dv, 1, &res, dv, 1, dst,
					a->addr, a->key, a->dt, a->op, ctx);
	case AT_FETCH * 4 + 2:
		return fi_fetch_atomicmsg(ep, &msg, &res, dv, 1,
					  FI_COMPLETION);
	case AT_FETCH * 4:
	case AT_FETCH * 4 + 3:
		return fi_fetch_atomic(ep, a->buf, a->n, d, a->res, d, dst,
				       a->addr, a->key, a->dt, a->op, ctx);
	case AT_COMPARE * 4 + 1:
		return fi_compare_atomicv(ep, &iov, dv, 1, &cmp, dv, 1, &res,
					  dv, 1, dst, a->addr, a->key, a->dt,
					  a->op, ctx);
	case AT_COMPARE * 4 + 2:
		return fi_compare_atomicmsg(ep, &msg, &cmp, dv, 1, &res, dv, 1,
					    FI_COMPLETION);
	default:
		return fi_compare_atomic(ep, a->buf, a->n, d, a->cmp, d,
					 a->res, d, dst, a->addr, a->key,
					 a->dt, a->op, ctx);
	}
}

/* Post @a, wait for its completion; why it failed in @why, or "". */
static bool at_run(struct side *s, int to, const struct atop *a, char *why,
		   size_t size)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = { .ctx = ctx, .flags = FI_ATOMIC |
			  (a->kind == AT_BASE ? FI_WRITE : FI_READ) };
	struct comp c;
	ssize_t rc;

	why[0] = '\0';
	RETRY(s, rc, at_post(s, to, a, ctx));
	if (rc) {
		snprintf(why, size, "returned %zd (%s)", rc,
			 fi_strerror((int)-rc));
	} else if (a->form != 3 || a->kind != AT_BASE) {
		if (!cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, "atomic"))
			return false;
		if (a->kind != AT_BASE && (c.e.flags & FI_WRITE) &&
		    known_gap("atomic/fetch-flags"))
			w.flags = FI_ATOMIC | FI_WRITE;
		comp_mismatch(s, &c, &w, why, size);
	}
	return !why[0] && !s->abort;
}

/*
 * How many elements kind @kind of (@dt, @op) may take, up to AT_MAX; 0:
 * not valid. fi_query_atomic decides; its code is in @qrc, the
 * endpoint's *valid call's in @vrc.
 */
static size_t at_valid(struct side *s, int kind, int dt, int op, int *qrc,
		       int *vrc, size_t *size)
{
	static const uint64_t flags[AT_KINDS] = {
		0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC,
	};
	struct fi_atomic_attr attr = { 0 };
	size_t cnt = 0;

	*qrc = fi_query_atomic(s->domain, dt, op, &attr, flags[kind]);
	*vrc = kind == AT_BASE ? fi_atomicvalid(s->ep, dt, op, &cnt) :
	       kind == AT_FETCH ? fi_fetch_atomicvalid(s->ep, dt, op, &cnt) :
	       fi_compare_atomicvalid(s->ep, dt, op, &cnt);
	*size = attr.size;
	if (*qrc || !attr.count)
		return 0;
	return attr.count < AT_MAX ? attr.count : AT_MAX;
}

static int at_index(int kind, int dt, int op)
{
	return (kind * AT_NDT + dt) * AT_NOP + op;
}

#define AT_SCRATCH	(AT_KINDS * AT_NDT * AT_NOP)	/* slot of invalid ops */

static uint64_t at_off(int k)
{
	return AT_START + (uint64_t)k * AT_SLOT;
}

/* Per kind and datatype: the points' tallies. */
struct at_tally {
	unsigned int ops, bad;
	char why[160];
};

__attribute__((format(printf, 3, 4)))
static void tally(struct at_tally *t, const char *why, const char *fmt, ...)
{
	va_list ap;

	t->ops++;
	if (!why[0] || t->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	addf(t->why, sizeof(t->why), ": %s", why);
}

/* An invalid combination: the call returns -FI_EOPNOTSUPP. */
static void at_invalid(struct side *s, struct atop *a, const char *tname)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct comp c;
	ssize_t rc;

	at_fill(&atypes[a->dt], a->buf, 0, 1, 1);
	at_fill(&atypes[a->dt], a->cmp, 0, 1, 2);
	RETRY(s, rc, at_post(s, 0, a, ctx));
	if (!rc) {	/* accepted: let whatever comes come */
		progress_for(s, QUIET_MS);
		if (cqq_take(&s->tx, ctx, &c))
			diag(s, "atomic: invalid fi_%s %s %s completed: %s",
			     at_kinds[a->kind], tname, at_ops[a->op],
			     c.e.err ? fi_strerror(c.e.err) : "success");
	}
	CHECK_EQ(s, rc, -FI_EOPNOTSUPP,
		 "atomic: fi_%s %s %s is not valid: the call is refused",
		 at_kinds[a->kind], tname, at_ops[a->op]);
}

/*
 * Rank 1 of the atomic case: every valid combination once, into its own
 * slot of rank 0's window, fetched values checked against the initial
 * ones; the first invalid one of each kind must be refused.
 */
static void atomic_peer(struct side *s)
{
	struct at_tally tl[AT_KINDS][AT_NDT] = { 0 };
	uint8_t *p = s->win[WIN_MAIN].b.p + AT_START;
	uint8_t old[AT_SLOT] __attribute__((aligned(16)));
	unsigned int nvalid = 0, disagree = 0, badsize = 0, badquery = 0;
	bool tried[AT_KINDS] = { false };
	char why[128], dis[128] = "";

	for (int kind = 0; kind < AT_KINDS; kind++) {
		for (int dt = 0; dt < AT_NDT; dt++) {
			const struct atype *t = &atypes[dt];

			for (int op = 0; op < AT_NOP && !s->abort; op++) {
				int k = at_index(kind, dt, op), qrc, vrc;
				size_t size, n = at_valid(s, kind, dt, op,
							  &qrc, &vrc, &size);
				struct atop a = {
					.kind = kind, .form = (dt + op) % 4,
					.dt = dt, .op = op, .n = n ? n : 1,
					.addr = s->rbase[0][WIN_MAIN] +
						at_off(n ? k : AT_SCRATCH),
					.key = s->rkey[0][WIN_MAIN], .buf = p,
					.cmp = p + AT_SLOT,
					.res = p + 2 * AT_SLOT,
				};

				if (!qrc != !vrc && !disagree++)
					snprintf(dis, sizeof(dis),
						 "%s %s %s: fi_query_atomic %d, *valid %d",
						 at_kinds[kind], t->name,
						 at_ops[op], qrc, vrc);
				if (!n) {
					badquery += qrc != -FI_EOPNOTSUPP;
					if (tried[kind] ||
					    known_gap("atomic/invalid-call"))
						continue;
					tried[kind] = true;
					at_invalid(s, &a, t->name);
					continue;
				}
				nvalid++;
				badsize += size != t->size;
				if (a.form == 3 && (kind != AT_BASE ||
				    n * t->size > s->info->tx_attr->inject_size))
					a.form = 0;
				at_fill(t, p, k, n, 1);
				at_fill(t, p + AT_SLOT, k, n, 2);
				memset(a.res, FILL_BYTE, AT_SLOT);
				at_fill(t, old, k, n, 0);
				at_run(s, 0, &a, why, sizeof(why));
				for (size_t i = 0; i < n && kind && !why[0]; i++)
					if (!t->eq(a.res, old, i))
						snprintf(why, sizeof(why),
							 "fetched element %zu is %g, want %g",
							 i, t->get(a.res, i),
							 t->get(old, i));
				tally(&tl[kind][dt], why, "%s x%zu%s",
				      at_ops[op], n,
				      a.form == 1 ? " (v)" : a.form == 2 ?
				      " (msg)" : a.form == 3 ? " (inject)" : "");
			}
		}
	}
	for (int kind = 0; kind < AT_KINDS; kind++)
		for (int dt = 0; dt < AT_NDT; dt++)
			if (tl[kind][dt].ops)
				CHECK_WHY(s, !tl[kind][dt].bad, tl[kind][dt].why,
					  "atomic: fi_%s %s: %u ops: completions%s",
					  at_kinds[kind], atypes[dt].name,
					  tl[kind][dt].ops,
					  kind ? " and fetched values" : "");
	CHECK_WHY(s, !disagree, dis,
		  "atomic: fi_query_atomic and fi_*atomicvalid agree");
	CHECK_EQ(s, badsize, 0, "atomic: fi_query_atomic gives the datatype's size");
	CHECK_EQ(s, badquery, 0,
			 "atomic: fi_query_atomic says -FI_EOPNOTSUPP for every invalid combination");
	step_to(s, 0, STEP_DONE, nvalid, NULL, 0);
	peer_loop(s);
}

/* Why slot @k of rank 0's window is not its image; elements by value. */
static bool at_slot_bad(struct side *s, int k, const struct atype *t,
			size_t n, char *why, size_t size)
{
	const uint8_t *p = s->win[WIN_MAIN].b.p + at_off(k);
	const uint8_t *q = s->win[WIN_MAIN].img + at_off(k);

	for (size_t i = 0; i < n; i++)
		if (!t->eq(p, q, i)) {
			snprintf(why, size, "element %zu is %g, want %g", i,
				 t->get(p, i), t->get(q, i));
			return true;
		}
	if (memcmp(p + n * t->size, q + n * t->size, AT_SLOT - n * t->size)) {
		snprintf(why, size, "bytes past the %zu elements written", n);
		return true;
	}
	return false;
}

/*
 * Atomics: every datatype x op x kind fi_query_atomic says is valid, with
 * up to AT_MAX elements, by rank 1 on its own slot of rank 0's window;
 * rank 0's memory and the fetched values must be what plain C computes.
 * Forms (plain, v, msg, inject) rotate; invalid combinations are refused.
 */
static void case_atomic(struct side *s)
{
	struct at_tally tl[AT_KINDS][AT_NDT] = { 0 };
	uint8_t buf[AT_SLOT] __attribute__((aligned(16)));
	uint8_t cmp[AT_SLOT] __attribute__((aligned(16)));
	unsigned int nvalid = 0, per[AT_KINDS] = { 0 }, noref = 0;
	struct win *x = &s->win[WIN_MAIN];
	uint64_t end;
	struct ctl_msg m;
	char why[128];

	if (!rma_setup(s))
		return;
	if (s->rank) {
		atomic_peer(s);
		return;
	}
	if (known_gap("atomic/invalid-call"))
		tap_skip("atomic/invalid-call: %s: %s", opt_prov,
			 known_gap("atomic/invalid-call"));
	for (int k = 0; k < AT_SCRATCH; k++)
		at_fill(&atypes[k / AT_NOP % AT_NDT], x->b.p + at_off(k), k,
			AT_MAX, 0);
	memcpy(x->img, x->b.p, x->b.len);
	if (!ctl_wait_ms(s, 1, STEP_DONE, &m, 6 * opt_wait_ms, true))
		goto out;
	/* the reference, on the image */
	for (int k = 0; k < AT_SCRATCH; k++) {
		int kind = k / (AT_NDT * AT_NOP), dt = k / AT_NOP % AT_NDT;
		int op = k % AT_NOP, qrc, vrc;
		size_t size, n = at_valid(s, kind, dt, op, &qrc, &vrc, &size);

		if (!n)
			continue;
		nvalid++;
		per[kind]++;
		at_fill(&atypes[dt], buf, k, n, 1);
		at_fill(&atypes[dt], cmp, k, n, 2);
		for (size_t i = 0; i < n; i++)
			if (!atypes[dt].op(op, x->img + at_off(k), buf, cmp, i) &&
			    !noref++)
				diag(s, "atomic: no reference for %s %s",
				     atypes[dt].name, at_ops[op]);
	}
	CHECK_EQ(s, m.a, nvalid,
		 "atomic: both ranks find the same valid combinations");
	diag(s, "atomic: %s: %u valid combinations of %d: %u atomic, %u fetch_atomic, %u compare_atomic",
	     opt_prov, nvalid, AT_SCRATCH, per[AT_BASE], per[AT_FETCH],
	     per[AT_COMPARE]);
	/* injected ones have no completion: wait for all to land */
	end = now_ms() + opt_wait_ms;
	for (int k = 0; k < AT_SCRATCH && !s->abort; k++) {
		int kind = k / (AT_NDT * AT_NOP), dt = k / AT_NOP % AT_NDT;
		int qrc, vrc;
		size_t size, n = at_valid(s, kind, dt, k % AT_NOP, &qrc, &vrc,
					  &size);
		bool bad;

		if (!n)
			continue;
		while ((bad = at_slot_bad(s, k, &atypes[dt], n, why,
					  sizeof(why))) &&
		       progress_until(s, end))
			;
		tally(&tl[kind][dt], bad ? why : "", "%s x%zu",
		      at_ops[k % AT_NOP], n);
		/* equal by value: padding (long double) may differ */
		memcpy(x->img + at_off(k), x->b.p + at_off(k),
		       n * atypes[dt].size);
	}
	for (int kind = 0; kind < AT_KINDS; kind++)
		for (int dt = 0; dt < AT_NDT; dt++)
			if (tl[kind][dt].ops)
				CHECK_WHY(s, !tl[kind][dt].bad, tl[kind][dt].why,
					  "atomic: fi_%s %s: %u ops: target memory is the reference's",
					  at_kinds[kind], atypes[dt].name,
					  tl[kind][dt].ops);
	memcpy(x->img + at_off(AT_SCRATCH), x->b.p + at_off(AT_SCRATCH),
	       AT_SLOT);
	win_check(s, WIN_MAIN, 0, "atomic: nothing else in the window written");
out:
	stop_peers(s);
}

#define CONC_MAX	2000
#define CONC_BITS_MAX	(2 * CONC_MAX)
#define CONC_CHUNK	(ADDR_MAX * 8)

/* The targets of atomic_concurrent in rank 0's main window */
#define CONC_U64	AT_START
#define CONC_DBL	(AT_START + 64)
#define CONC_I32	(AT_START + 128)

/* Loops of each rank: -n COUNT, at most CONC_MAX (the default). */
static int conc_n(void)
{
	return opt_count < CONC_MAX ? (int)opt_count : CONC_MAX;
}

/* Ranks 1 and 2: conc_n() of each op; the fetched values, as a bitmap. */
static void concurrent_peer(struct side *s)
{
	uint8_t *p = s->win[WIN_MAIN].b.p + AT_START;
	uint8_t bits[CONC_BITS_MAX / 8] = { 0 };
	const int n = conc_n(), nbits = 2 * n;
	uint64_t *u = (uint64_t *)p, prev = 0, last = 0;
	double *dbl = (double *)p;
	int32_t *i32 = (int32_t *)p, cur = 0;
	unsigned int bad = 0, dup = 0, order = 0, retries = 0;
	uint64_t base = s->rbase[0][WIN_MAIN], key = s->rkey[0][WIN_MAIN];
	struct atop fa = { AT_FETCH, 0, FI_UINT64, FI_SUM, 1, base + CONC_U64,
			   key, p, NULL, p + 64 };
	struct atop da = { AT_BASE, 0, FI_DOUBLE, FI_SUM, 1, base + CONC_DBL,
			   key, p + 8, NULL, NULL };
	struct atop ca = { AT_COMPARE, 0, FI_INT32, FI_CSWAP, 1,
			   base + CONC_I32, key, p + 16, p + 24, p + 32 };
	char why[160] = "", one[128];

	if (!ctl_wait(s, 0, STEP_POSTED, NULL))
		return;
	for (int i = 0; i < n && !s->abort && !bad; i++) {
		u[0] = 1;
		dbl[1] = 1.0;
		if (!at_run(s, 0, &fa, one, sizeof(one))) {
			snprintf(why, sizeof(why), "fetch_atomic %d: %s", i, one);
			bad++;
			break;
		}
		prev = u[8];
		if (prev >= (uint64_t)nbits || (bits[prev / 8] & (1u << prev % 8)))
			dup++;
		else
			bits[prev / 8] |= 1u << prev % 8;
		order += i && prev <= last;
		last = prev;
		if (!at_run(s, 0, &da, one, sizeof(one))) {
			snprintf(why, sizeof(why), "atomic %d: %s", i, one);
			bad++;
			break;
		}
		for (;;) {
			i32[4] = cur + 1;
			i32[6] = cur;
			if (!at_run(s, 0, &ca, one, sizeof(one))) {
				snprintf(why, sizeof(why),
					 "compare_atomic %d: %s", i, one);
				bad++;
				break;
			}
			if (i32[8] == cur)
				break;
			cur = i32[8];
			retries++;
		}
		cur++;
	}
	CHECK_WHY(s, !bad, why,
		  "atomic_concurrent: %d fetch_atomic, atomic, compare_atomic loops completed",
		  n);
	CHECK(s, !dup && !order,
	      "atomic_concurrent: fetched values distinct, below %d, increasing (%u repeated, %u out of order)",
	      nbits, dup, order);
	for (int b = 0; b < nbits; b += CONC_CHUNK) {
		int nb = nbits - b < CONC_CHUNK ? nbits - b : CONC_CHUNK;

		step_to(s, 0, STEP_VALS, b, bits + b / 8, (nb + 7) / 8);
	}
	step_to(s, 0, STEP_DONE, retries, NULL, 0);
	peer_loop(s);
}

/*
 * Ranks 1 and 2 at once, conc_n() times each: fi_fetch_atomic FI_SUM +1 on
 * one FI_UINT64 of rank 0, fi_atomic FI_SUM 1.0 on an FI_DOUBLE, a
 * FI_CSWAP loop incrementing an FI_INT32. The results are exact and the
 * fetched values of both ranks are 0..2*conc_n()-1, each once.
 */
static void case_atomic_concurrent(struct side *s)
{
	static const struct {
		int kind, dt, op;
	} need[] = {
		{ AT_FETCH, FI_UINT64, FI_SUM }, { AT_BASE, FI_DOUBLE, FI_SUM },
		{ AT_COMPARE, FI_INT32, FI_CSWAP },
	};
	uint8_t all[CONC_BITS_MAX / 8] = { 0 };
	const int nbits = 2 * conc_n();
	struct win *x = &s->win[WIN_MAIN];
	unsigned int both = 0, seen = 0;
	uint64_t retries = 0, u = nbits;
	double d = nbits;
	int32_t i32 = nbits;
	struct ctl_msg m;

	if (!rma_setup(s))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		int qrc, vrc;
		size_t size;

		if (at_valid(s, need[i].kind, need[i].dt, need[i].op, &qrc,
			     &vrc, &size))
			continue;
		if (!s->rank)
			tap_skip("atomic_concurrent: fi_%s %s %s not valid",
				 at_kinds[need[i].kind], atypes[need[i].dt].name,
				 at_ops[need[i].op]);
		goto out;
	}
	if (s->rank) {
		concurrent_peer(s);
		return;
	}
	memset(x->b.p + AT_START, 0, 256);
	memset(x->img + AT_START, 0, 256);
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_POSTED, 0, NULL, 0);
	/*
	 * No limit of our own: each of a peer's operations has one, and a
	 * peer stops at its first failure and reports it here.
	 */
	for (int r = 1; r < s->nranks; r++) {
		for (int b = 0; b < nbits; b += CONC_CHUNK) {
			if (!ctl_wait_ms(s, r, STEP_VALS, &m, -1, true))
				goto out;
			for (uint32_t j = 0; j < m.len; j++) {
				both += __builtin_popcount(all[b / 8 + j] &
							   m.blob[j]);
				all[b / 8 + j] |= m.blob[j];
			}
		}
		if (!ctl_wait(s, r, STEP_DONE, &m))
			goto out;
		retries += m.a;
	}
	for (size_t j = 0; j < sizeof(all); j++)
		seen += __builtin_popcount(all[j]);
	CHECK_EQ(s, both, 0, "atomic_concurrent: no value fetched by both ranks");
	CHECK_EQ(s, seen, nbits,
		 "atomic_concurrent: the fetched values are 0..%d", nbits - 1);
	memcpy(x->img + CONC_U64, &u, sizeof(u));
	memcpy(x->img + CONC_DBL, &d, sizeof(d));
	memcpy(x->img + CONC_I32, &i32, sizeof(i32));
	win_check(s, WIN_MAIN, opt_wait_ms,
		  "atomic_concurrent: FI_UINT64 sum, FI_DOUBLE sum, FI_INT32 by CSWAP all %d",
		  nbits);
	diag(s, "atomic_concurrent: %llu CSWAP retries",
	     (unsigned long long)retries);
out:
	if (!s->rank)
		stop_peers(s);
	else if (!s->abort)
		peer_loop(s);
}

/* ---- scalable endpoints ---- */

#define SEP_CTX		4	/* tx and rx contexts asked for */
#define SEP_RX_CNTR	1	/* the receive context with a counter */
#define SEP_BUF		256	/* receives of the routing messages */
#define SEP_TAG		0x5e000000ull
#define SEP_THR_N	500	/* messages each way of one context pair */
#define SEP_THR_WIN	16	/* its sends and its receives in flight */
#define SEP_THR_MAXLEN	(64 * KIB)
#define SEP_THR_TAG	0x5f000000ull

/*
 * The case's scalable endpoint is s->ep and its AV s->av; the contexts,
 * their CQs and counters are here. Every wait drains all the CQs.
 */
struct sep {
	int n, bits;		/* contexts of each kind, rx_ctx_bits */
	int peer;
	int ux, uo;		/* unexpected: its rx context, another one */
	int big;		/* rx context of the large message */
	int tx_cntr;		/* tx context with the send counter */
	struct fid_ep *tx[SEP_CTX], *rx[SEP_CTX];
	struct cqq txq[SEP_CTX], rxq[SEP_CTX];
	struct fid_cntr *scntr, *rcntr;
	uint64_t sent[SEP_CTX], recvd[SEP_CTX];	/* successful completions */
	bool threads;		/* the CQs are the threads' */
	char qname[2 * SEP_CTX][24];
};

static void sep_drain(struct side *s)
{
	struct sep *x = s->sep;

	if (!x || x->threads)
		return;
	for (int i = 0; i < x->n; i++) {
		if (x->txq[i].cq)
			cq_drain(s, &x->txq[i], false);
		if (x->rxq[i].cq)
			cq_drain(s, &x->rxq[i], true);
	}
}

/* Progress for @ms: no completion may appear on any context's CQ. */
static bool sep_quiet(struct side *s, int ms, const char *what)
{
	struct sep *x = s->sep;
	char why[300] = "";
	size_t n = 0;

	progress_for(s, ms);
	for (int i = 0; i < 2 * x->n; i++) {
		struct cqq *q = i < x->n ? &x->txq[i] : &x->rxq[i - x->n];

		if (q->n && !why[0]) {
			snprintf(why, sizeof(why), "%s: ", q->name);
			comp_str(&q->v[q->head], why + strlen(why),
				 sizeof(why) - strlen(why));
		}
		n += q->n;
		q->head = q->n = 0;	/* reported here, not again */
	}
	if (n)
		addf(why, sizeof(why), " (%zu in all)", n);
	return CHECK_WHY(s, !n, why, "%s: no other completion on any context",
			 what);
}

static fi_addr_t sep_dst(struct side *s, int j)
{
	return fi_rx_addr(s->addr[s->sep->peer], j, s->sep->bits);
}

/* The routing message from tx context @i of rank @from to rx context @j. */
static struct msgspec sep_msg(int from, bool tagged, int i, int j)
{
	uint32_t k = i * SEP_CTX + j;

	return (struct msgspec){
		.api = tagged ? API_TAGGED : 0,
		.len = 40 + 8 * k + 4 * tagged,	/* tells them apart */
		.tag = SEP_TAG | (uint64_t)from << 16 | i << 8 | j,
		.seed = seed_of(0x5e0 + 2 * from + tagged, k),
	};
}

static ssize_t sep_send(struct side *s, int i, int j, const struct msgspec *m,
			void *buf, void *ctx)
{
	struct fid_ep *ep = s->sep->tx[i];

	if (m->api & API_TAGGED)
		return fi_tsend(ep, buf, m->len, NULL, sep_dst(s, j), m->tag,
				ctx);
	if (m->api & API_DATA)
		return fi_senddata(ep, buf, m->len, NULL, m->data,
				   sep_dst(s, j), ctx);
	return fi_send(ep, buf, m->len, NULL, sep_dst(s, j), ctx);
}

static bool sep_recv(struct side *s, int j, uint32_t api, struct gbuf *b,
		     uint64_t tag, void *ctx, const char *what)
{
	struct fid_ep *ep = s->sep->rx[j];
	ssize_t rc;

	if (api & API_TAGGED)
		RETRY(s, rc, fi_trecv(ep, b->p, b->len, NULL, FI_ADDR_UNSPEC,
				      tag, 0, ctx));
	else
		RETRY(s, rc, fi_recv(ep, b->p, b->len, NULL, FI_ADDR_UNSPEC,
				     ctx));
	return MUST(s, rc, "%s: post receive on rx context %d", what, j);
}

/* Send @m from tx context @i to rx context @j; check it completes there. */
static bool sep_send_checked(struct side *s, int i, int j,
			     const struct msgspec *m, const char *what)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = want_send(ctx, m);
	struct gbuf b;
	struct comp c;
	bool ok = false;
	ssize_t rc;

	gbuf_alloc(&b, m->len);
	pat_fill(b.p, m->len, m->seed, 0);
	RETRY(s, rc, sep_send(s, i, j, m, b.p, ctx));
	if (MUST(s, rc, "%s: send from tx context %d", what, i) &&
	    cq_wait(s, &s->sep->txq[i], ctx, &c, opt_wait_ms, what)) {
		ok = check_comp(s, &c, &w,
				"%s: send completion on tx context %d's CQ",
				what, i);
		s->sep->sent[i] += !c.e.err;
	}
	gbuf_free(s, &b);
	return ok;
}

/* Wait for the receive @ctx on rx context @j and check it is @m. */
static bool sep_recv_checked(struct side *s, int j, void *ctx,
			     const struct msgspec *m, struct gbuf *b,
			     const char *what)
{
	struct want w = want_recv(s, ctx, m, s->sep->peer);
	struct comp c;
	bool ok;

	if (!cq_wait(s, &s->sep->rxq[j], ctx, &c, opt_wait_ms, what))
		return false;
	s->sep->recvd[j] += !c.e.err;
	ok = check_comp(s, &c, &w, "%s: completion on rx context %d's CQ",
			what, j);
	return check_data(s, b, 1, m->seed, m->len, "%s: data", what) && ok;
}

/* Check the routing completion @c on context @q's CQ (tx: we sent). */
static void sep_route_comp(struct side *s, bool tagged, int from, int q,
			   const struct comp *c, const struct fi_context2 *ctx,
			   const struct gbuf *b, uint8_t *seen,
			   struct at_tally *y)
{
	struct sep *x = s->sep;
	int n = x->n, nn = n * n, i = 0;
	long k = ctx_index(c->e.op_context, ctx, nn);
	bool tx = s->rank == from;
	struct msgspec m = { 0 };
	char one[300];
	struct want w;

	comp_str(c, one, sizeof(one));
	/* send k: tx context k / n to rx context k % n; receive k: on k / n */
	if (k < 0 || k / n != q) {
		tally(y, one, "%s completion not of this context",
		      k < 0 ? "unknown" : "misplaced");
		return;
	}
	if (tx) {
		m = sep_msg(from, tagged, q, k % n);
		w = want_send(c->e.op_context, &m);
		if (seen[k]++)
			tally(y, one, "repeated completion");
		else if (comp_mismatch(s, c, &w, one, sizeof(one)))
			tally(y, one, "send to rx context %ld", k % n);
		else
			y->ops++;
		x->sent[q] += !c->e.err;
		return;
	}
	/* the message: the receive's tag, or untagged, its length */
	for (i = 0; i < n; i++) {
		m = sep_msg(from, tagged, i, q);
		if (tagged ? i == k % n : m.len == c->e.len)
			break;
	}
	w = want_recv(s, c->e.op_context, &m, x->peer);
	if (i == n || seen[i * n + q]++)
		tally(y, one, "%s", i == n ? "no message to this context" :
		      "repeated message");
	else if (comp_mismatch(s, c, &w, one, sizeof(one)) ||
		 data_mismatch(&b[k], 1, m.seed, m.len, one, sizeof(one)))
		tally(y, one, "message from tx context %d", i);
	else
		y->ops++;
	x->recvd[q] += !c->e.err;
}

/*
 * Rank @from sends the message (i, j) from each of its tx contexts i to
 * each rx context j of the other rank, which has posted n receives on
 * each rx context (tagged: one for each tag; untagged: told apart by
 * length). Each must complete on its own context's CQ, and only there.
 */
static void sep_route(struct side *s, int from, bool tagged)
{
	struct sep *x = s->sep;
	int n = x->n, nn = n * n, peer = x->peer;
	bool tx = s->rank == from;
	struct fi_context2 *ctx = ctx_new(s, nn);
	struct gbuf *b = xcalloc(nn, sizeof(*b));
	struct at_tally y[SEP_CTX] = { 0 };
	uint8_t seen[SEP_CTX * SEP_CTX] = { 0 };
	uint64_t last = now_ms();
	unsigned int done = 0;
	struct msgspec m;
	char what[64];
	struct comp c;
	ssize_t rc;

	snprintf(what, sizeof(what), "sep: rank %d -> %d %s", from, !from,
		 tagged ? "tagged" : "untagged");
	if (!tx) {
		for (int k = 0; k < nn; k++) {
			m = sep_msg(from, tagged, k % n, k / n);
			gbuf_alloc(&b[k], SEP_BUF);
			if (!sep_recv(s, k / n, m.api, &b[k], m.tag, &ctx[k],
				      what))
				goto out;
		}
		step_to(s, peer, STEP_POSTED, 0, NULL, 0);
	} else {
		if (!ctl_wait(s, peer, STEP_POSTED, NULL))
			goto out;
		for (int k = 0; k < nn; k++) {
			m = sep_msg(from, tagged, k / n, k % n);
			gbuf_alloc(&b[k], m.len);
			pat_fill(b[k].p, m.len, m.seed, 0);
			RETRY(s, rc, sep_send(s, k / n, k % n, &m, b[k].p,
					      &ctx[k]));
			if (!MUST(s, rc, "%s: send from tx context %d to rx context %d",
				  what, k / n, k % n))
				goto out;
		}
	}
	while (done < (unsigned int)nn && !s->abort &&
	       now_ms() - last <= (uint64_t)opt_wait_ms) {
		progress(s);
		for (int q = 0; q < n; q++) {
			while (cqq_take(tx ? &x->txq[q] : &x->rxq[q], NULL,
					&c)) {
				sep_route_comp(s, tagged, from, q, &c, ctx, b,
					       seen, &y[q]);
				last = c.at;
				done++;
			}
		}
	}
	for (int q = 0; q < n; q++)
		CHECK_WHY(s, y[q].ops == (unsigned int)n && !y[q].bad, y[q].why,
			  tx ? "%s: tx context %d: %u send completions of its %d, all on its CQ, right flags" :
			  "%s: rx context %d: %u of the %d messages to it, all on its CQ, right len/tag/data",
			  what, q, y[q].ops, n);
	if (done < (unsigned int)nn)
		side_abort(s);	/* receives may be left posted */
	else
		sep_quiet(s, QUIET_MS, what);
out:
	for (int k = 0; k < nn; k++)
		if (b[k].mem)
			gbuf_free(s, &b[k]);
	free(b);
	barrier(s);
}

/*
 * Rank 0 sends to rx context ux of rank 1 before rank 1 posts a receive
 * there, while a receive for the same tag waits on rx context uo: the
 * message waits for the receive posted later on ux; then a message to
 * uo takes the receive waiting there.
 */
static void sep_unexpected(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m = { .api = API_TAGGED, .len = 100,
			     .tag = SEP_TAG | 0xff00,
			     .seed = seed_of(0x5e8, 0) };
	struct msgspec m2 = m;
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct gbuf b[2] = { 0 };
	char what[64], what2[64];

	m2.len = 60;
	m2.seed = seed_of(0x5e8, 1);
	snprintf(what, sizeof(what), "sep: unexpected to rx context %d", x->ux);
	snprintf(what2, sizeof(what2), "sep: then to rx context %d", x->uo);
	if (s->rank) {
		gbuf_alloc(&b[0], SEP_BUF);
		gbuf_alloc(&b[1], SEP_BUF);
		if (!sep_recv(s, x->uo, API_TAGGED, &b[1], m.tag, &ctx[1], what))
			goto out;
		step_to(s, 0, STEP_POSTED, 0, NULL, 0);
		if (!ctl_wait(s, 0, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
		CHECK(s, !x->rxq[x->uo].n,
		      "%s: not taken by the receive for its tag on rx context %d",
		      what, x->uo);
		if (!sep_recv(s, x->ux, API_TAGGED, &b[0], m.tag, &ctx[0],
			      what) ||
		    !sep_recv_checked(s, x->ux, &ctx[0], &m, &b[0], what))
			goto out;
		sep_quiet(s, QUIET_MS, what);
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		sep_recv_checked(s, x->uo, &ctx[1], &m2, &b[1], what2);
	} else {
		if (!ctl_wait(s, 1, STEP_POSTED, NULL) ||
		    !sep_send_checked(s, 0, x->ux, &m, what))
			goto out;
		step_to(s, 1, STEP_SENT, 0, NULL, 0);
		if (!ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
		sep_send_checked(s, 1, x->uo, &m2, what2);
	}
	sep_quiet(s, QUIET_MS, what2);
out:
	for (int i = 0; i < 2; i++)
		if (b[i].mem)
			gbuf_free(s, &b[i]);
	barrier(s);
}

/* A 1 MiB fi_senddata from rank 0's last tx context to rx context big. */
static void sep_large(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m = { .api = API_DATA, .len = MIB,
			     .seed = seed_of(0x5e9, 0), .data = 0x5eda7a };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct gbuf b = { 0 };
	char what[64];

	snprintf(what, sizeof(what), "sep: 1 MiB senddata to rx context %d",
		 x->big);
	if (s->info->ep_attr->max_msg_size < MIB) {
		if (!s->rank)
			tap_skip("%s: over max_msg_size %zu", what,
				 s->info->ep_attr->max_msg_size);
		return;
	}
	if (s->info->domain_attr->cq_data_size < 4) {
		m.api = 0;
		if (!s->rank)
			tap_skip("%s: cq_data_size %zu: sent without data",
				 what, s->info->domain_attr->cq_data_size);
	}
	if (s->rank) {
		gbuf_alloc(&b, MIB);
		if (!sep_recv(s, x->big, 0, &b, 0, ctx, what))
			goto out;
		step_to(s, 0, STEP_POSTED, 0, NULL, 0);
		sep_recv_checked(s, x->big, ctx, &m, &b, what);
	} else if (ctl_wait(s, 1, STEP_POSTED, NULL)) {
		sep_send_checked(s, x->n - 1, x->big, &m, what);
	}
	sep_quiet(s, QUIET_MS, what);
out:
	if (b.mem)
		gbuf_free(s, &b);
	barrier(s);
}

/*
 * Three more messages each way from tx context tx_cntr to rx context
 * SEP_RX_CNTR: the counted contexts' counts differ from the others'.
 */
static void sep_cntr_more(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct msgspec m[2][3];
	struct gbuf b[3] = { 0 };

	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			m[r][k] = (struct msgspec){
				.api = API_TAGGED, .len = 32 + k,
				.tag = SEP_TAG | (uint64_t)r << 16 | 0xfe00 | k,
				.seed = seed_of(0x5eb + r, k),
			};
	for (int k = 0; k < 3; k++) {
		gbuf_alloc(&b[k], SEP_BUF);
		if (!sep_recv(s, SEP_RX_CNTR, API_TAGGED, &b[k],
			      m[x->peer][k].tag, &ctx[k], "sep: counted"))
			goto out;
	}
	if (!barrier(s))
		goto out;
	for (int k = 0; k < 3; k++)
		if (!sep_send_checked(s, x->tx_cntr, SEP_RX_CNTR,
				      &m[s->rank][k], "sep: counted"))
			goto out;
	for (int k = 0; k < 3; k++)
		if (!sep_recv_checked(s, SEP_RX_CNTR, &ctx[k], &m[x->peer][k],
				      &b[k], "sep: counted"))
			goto out;
	sep_quiet(s, SETTLE_MS, "sep: counted");
out:
	for (int k = 0; k < 3; k++)
		if (b[k].mem)
			gbuf_free(s, &b[k]);
	barrier(s);
}

/* The counters: each counts the completions of its context, no others. */
static void sep_counters(struct side *s, const char *when)
{
	struct sep *x = s->sep;
	struct {
		struct fid_cntr *c;
		uint64_t want, all;
		const char *kind;
		int ctx;
	} k[2] = {
		{ x->scntr, x->sent[x->tx_cntr], 0, "send", x->tx_cntr },
		{ x->rcntr, x->recvd[SEP_RX_CNTR], 0, "receive", SEP_RX_CNTR },
	};

	for (int i = 0; i < x->n; i++) {
		k[0].all += x->sent[i];
		k[1].all += x->recvd[i];
	}
	for (int i = 0; i < 2; i++) {
		uint64_t end = now_ms() + opt_wait_ms / 2;	/* < barrier's */

		while (fi_cntr_read(k[i].c) < k[i].want &&
		       progress_until(s, end))
			sched_yield();
		progress_for(s, SETTLE_MS);
		CHECK_EQ(s, fi_cntr_read(k[i].c), k[i].want,
			 "sep: %s: the %s counter on %s context %d counts its %llu completions (of %llu on all)",
			 when, k[i].kind, i ? "rx" : "tx", k[i].ctx,
			 (unsigned long long)k[i].want,
			 (unsigned long long)k[i].all);
		CHECK_EQ(s, fi_cntr_readerr(k[i].c), 0,
			 "sep: %s: the %s counter counts no errors", when,
			 k[i].kind);
	}
}

/*
 * fi_writedata from rank 0's tx context 1 into rank 1's window, its CQ
 * data to rank 1's rx context ux: the target completion on that
 * context's CQ, the data in place.
 */
static void sep_rma(struct side *s)
{
	static const size_t lens[] = { 64, MIB };
	struct sep *x = s->sep;
	int ti = 1 % x->n, rj = x->ux;
	struct fi_context2 *ctx = ctx_new(s, ARRAY_SIZE(lens));
	struct win *win = &s->win[WIN_MAIN];

	if (!(s->info->caps & FI_RMA)) {
		if (!s->rank)
			tap_skip("sep: %s lacks FI_RMA: no fi_writedata to a receive context",
				 opt_prov);
		return;
	}
	if (s->info->domain_attr->cq_data_size < 4) {
		if (!s->rank)
			tap_skip("sep: cq_data_size %zu: no fi_writedata",
				 s->info->domain_attr->cq_data_size);
		return;
	}
	for (size_t a = 0; a < ARRAY_SIZE(lens) && !s->abort; a++) {
		uint64_t seed = seed_of(0x5ea, a), data = 0x5eda7a00u | a;
		uint64_t raddr = s->rbase[1][WIN_MAIN] + RMA_PAD;
		struct want w = { .ctx = &ctx[a], .flags = FI_RMA | FI_WRITE,
				  .data = data };
		char what[96];
		struct comp c;
		ssize_t rc;

		snprintf(what, sizeof(what),
			 "sep: writedata %zu B, tx context %d to rx context %d",
			 lens[a], ti, rj);
		if (lens[a] > s->info->ep_attr->max_msg_size)
			continue;
		if (s->rank) {
			pat_fill(win->img + RMA_PAD, lens[a], seed, 0);
			if (!cq_wait(s, &x->rxq[rj], NULL, &c, opt_wait_ms,
				     what))
				break;
			w = (struct want){ .ctx = c.e.op_context, .data = data,
					   .flags = FI_REMOTE_CQ_DATA | FI_RMA |
						    FI_REMOTE_WRITE };
			if (known_gap("rma_data/flags"))
				w.flags = FI_REMOTE_CQ_DATA |
					  (c.e.flags & COMP_FLAGS &
					   ~FI_REMOTE_CQ_DATA);
			check_comp(s, &c, &w,
				   "%s: target completion with the data on rx context %d's CQ",
				   what, rj);
			win_check(s, WIN_MAIN, opt_wait_ms,
				  "%s: data in place, nothing around it written",
				  what);
			memcpy(win->img, win->b.p, win->b.len);
			if (!ctl_wait(s, 0, STEP_DONE, NULL))
				break;
		} else {
			win_fill(s, WIN_MAIN, RMA_PAD, lens[a], seed);
			RETRY(s, rc, fi_writedata(x->tx[ti], win->b.p + RMA_PAD,
						  lens[a], fi_mr_desc(win->mr),
						  data, sep_dst(s, rj), raddr,
						  s->rkey[1][WIN_MAIN],
						  &ctx[a]));
			if (!MUST(s, rc, "%s", what) ||
			    !cq_wait(s, &x->txq[ti], &ctx[a], &c, opt_wait_ms,
				     what))
				break;
			if ((c.e.flags & FI_REMOTE_CQ_DATA) &&
			    known_gap("rma_data/initiator-flags"))
				w.flags |= FI_REMOTE_CQ_DATA;
			check_comp(s, &c, &w,
				   "%s: initiator completion on tx context %d's CQ",
				   what, ti);
			step_to(s, 1, STEP_DONE, 0, NULL, 0);
		}
		sep_quiet(s, SETTLE_MS, what);
		if (!barrier(s))	/* the next one after the quiet check */
			break;
	}
}

/*
 * kfab only (the API leaves it open): what rank 0 sends to rx context n,
 * which rank 1 lacks, goes nowhere: an eager and a rendezvous send
 * complete, an RMA write fails with FI_EADDRNOTAVAIL naming the context;
 * the next message to rx context 0 is the one its receive gets.
 */
static void sep_missing(struct side *s)
{
	struct sep *x = s->sep;
	struct msgspec m[3] = {
		{ .api = API_TAGGED, .len = 100, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 0) },
		{ .api = API_TAGGED, .len = MIB, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 1) },
		{ .api = API_TAGGED, .len = 60, .tag = SEP_TAG | 0xfe00,
		  .seed = seed_of(0x5eb, 2) },
	};
	struct fi_context2 *ctx = ctx_new(s, 4);
	const char *what = "sep: to a receive context the peer lacks";
	struct win *win = &s->win[WIN_MAIN];
	struct gbuf b = { 0 };
	struct comp c;
	ssize_t rc;

	if (!(s->info->caps & FI_RMA))
		return;
	if (s->rank) {
		gbuf_alloc(&b, MIB);
		if (sep_recv(s, 0, API_TAGGED, &b, m[0].tag, &ctx[0], what)) {
			step_to(s, 0, STEP_POSTED, 0, NULL, 0);
			sep_recv_checked(s, 0, &ctx[0], &m[2], &b,
					 "sep: after them, to rx context 0");
		}
		gbuf_free(s, &b);
	} else if (ctl_wait(s, 1, STEP_POSTED, NULL)) {
		for (int k = 0; k < 2 && !s->abort; k++) {
			gbuf_alloc(&b, m[k].len);
			pat_fill(b.p, m[k].len, m[k].seed, 0);
			RETRY(s, rc, sep_send(s, 0, x->n, &m[k], b.p,
					      &ctx[k]));
			if (MUST(s, rc, "%s: send of %zu B", what, m[k].len) &&
			    cq_wait(s, &x->txq[0], &ctx[k], &c, opt_wait_ms,
				    what))
				CHECK(s, !c.e.err,
				      "%s: a send of %zu B completes (err %d)",
				      what, m[k].len, c.e.err);
			gbuf_free(s, &b);
		}
		RETRY(s, rc, fi_write(x->tx[0], win->b.p + RMA_PAD, 64,
				      fi_mr_desc(win->mr), sep_dst(s, x->n),
				      s->rbase[1][WIN_MAIN] + RMA_PAD,
				      s->rkey[1][WIN_MAIN], &ctx[2]));
		if (MUST(s, rc, "%s: fi_write", what) &&
		    cq_wait(s, &x->txq[0], &ctx[2], &c, opt_wait_ms, what))
			CHECK_WHY(s, c.e.err == FI_EADDRNOTAVAIL &&
				  strstr(c.estr, "receive context"), c.estr,
				  "%s: fi_write fails with FI_EADDRNOTAVAIL (%d), err_data names the context",
				  what, c.e.err);
		sep_send_checked(s, 0, 0, &m[2],
				 "sep: after them, to rx context 0");
	}
	sep_quiet(s, QUIET_MS, what);
	barrier(s);
}

/* ---- scalable endpoints: a thread for each context pair ---- */

struct sep_thr {
	struct side *s;
	int t;
	atomic_bool *stop;
	struct fi_context2 *sctx;	/* SEP_THR_N */
	struct fi_context2 *rctx;	/* SEP_THR_WIN */
	uint8_t *sbuf;			/* SEP_THR_WIN * SEP_THR_MAXLEN */
	bool busy[SEP_THR_WIN];		/* its send is in flight */
	bool idle[SEP_THR_WIN];		/* to post again */
	struct gbuf rb[SEP_THR_WIN];
	uint32_t rk[SEP_THR_WIN];	/* the message it was posted for */
	uint32_t posted, rposted, late;
	uint64_t sent_ok, recvd_ok;
	unsigned long eagain;
	struct at_tally ty, ry;
	uint8_t sseen[SEP_THR_N], rseen[SEP_THR_N];
	pthread_t tid;
};

static struct msgspec sep_thr_spec(int from, int t, uint32_t i)
{
	return (struct msgspec){
		.api = API_TAGGED,
		.len = i % 50 == 49 ? SEP_THR_MAXLEN :
		       1 + (i * 131 + t * 17) % 2000,
		.tag = SEP_THR_TAG | (uint64_t)t << 16 | i,
		.seed = seed_of(0x5f0 + SEP_CTX * from + t, i),
	};
}

static struct comp comp_of(const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	return (struct comp){
		.e = { .op_context = e->op_context, .flags = e->flags,
		       .len = e->len, .buf = e->buf, .data = e->data,
		       .tag = e->tag },
		.src = src, .at = now_ms(),
	};
}

/* A failure that is not a completion: kept in @y, not counted. */
__attribute__((format(printf, 3, 4)))
static void sep_thr_fail(struct sep_thr *h, struct at_tally *y,
			 const char *fmt, ...)
{
	va_list ap;

	if (y->bad++)
		return;
	snprintf(y->why, sizeof(y->why), "thread %d: ", h->t);
	va_start(ap, fmt);
	vsnprintf(y->why + strlen(y->why), sizeof(y->why) - strlen(y->why),
		  fmt, ap);
	va_end(ap);
}

/* Read what @cq holds into @c; the count, or -1 after a failure. */
static int sep_thr_read(struct sep_thr *h, struct fid_cq *cq, bool from,
			struct comp *c, int max, struct at_tally *y)
{
	struct fi_cq_tagged_entry e[CQ_BATCH];
	fi_addr_t src[CQ_BATCH];
	struct fi_cq_err_entry err = { 0 };
	ssize_t n = from ? fi_cq_readfrom(cq, e, max, src) :
			   fi_cq_read(cq, e, max);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL && fi_cq_readerr(cq, &err, 0) == 1) {
		c[0] = (struct comp){ .e = err, .src = FI_ADDR_NOTAVAIL };
		c[0].e.err_data = NULL;
		c[0].e.err_data_size = 0;
		return 1;
	}
	if (n < 0 || n > max) {
		sep_thr_fail(h, y, "fi_cq_read: %s", fi_strerror((int)-n));
		atomic_store(h->stop, true);
		return -1;
	}
	for (ssize_t i = 0; i < n; i++)
		c[i] = comp_of(&e[i], from ? src[i] : FI_ADDR_NOTAVAIL);
	return (int)n;
}

static void sep_thr_post(struct sep_thr *h)
{
	struct sep *x = h->s->sep;

	for (int k = 0; k < SEP_THR_WIN && h->rposted < SEP_THR_N; k++) {
		ssize_t rc;

		if (!h->idle[k])
			continue;
		rc = fi_trecv(x->rx[h->t], h->rb[k].p, h->rb[k].len, NULL,
			      FI_ADDR_UNSPEC, SEP_THR_TAG | (uint64_t)h->t << 16,
			      0xffff, &h->rctx[k]);
		if (rc == -FI_EAGAIN)
			return;
		if (rc) {
			sep_thr_fail(h, &h->ry, "fi_trecv: %s",
				     fi_strerror((int)-rc));
			atomic_store(h->stop, true);
			return;
		}
		h->rk[k] = h->rposted++;
		h->idle[k] = false;
	}
}

static bool sep_thr_send(struct sep_thr *h)
{
	struct side *s = h->s;
	struct sep *x = s->sep;
	uint32_t i = h->posted, slot = i % SEP_THR_WIN;
	struct msgspec m = sep_thr_spec(s->rank, h->t, i);
	uint8_t *p = h->sbuf + (size_t)slot * SEP_THR_MAXLEN;
	ssize_t rc;

	if (i == SEP_THR_N || h->busy[slot])
		return false;
	pat_fill(p, m.len, m.seed, 0);
	rc = fi_tsend(x->tx[h->t], p, m.len, NULL, sep_dst(s, h->t), m.tag,
		      &h->sctx[i]);
	if (rc == -FI_EAGAIN) {
		h->eagain++;
		return false;
	}
	if (rc) {
		sep_thr_fail(h, &h->ty, "fi_tsend: %s", fi_strerror((int)-rc));
		atomic_store(h->stop, true);
		return false;
	}
	h->busy[slot] = true;
	h->posted++;
	return true;
}

static void sep_thr_sent(struct sep_thr *h, const struct comp *c)
{
	struct side *s = h->s;
	long i = ctx_index(c->e.op_context, h->sctx, SEP_THR_N);
	char one[300];
	struct msgspec m;
	struct want w;

	comp_str(c, one, sizeof(one));
	if (i < 0 || h->sseen[i]++) {
		tally(&h->ty, one, "%s send completion on tx context %d's CQ",
		      i < 0 ? "unknown" : "repeated", h->t);
		return;
	}
	m = sep_thr_spec(s->rank, h->t, i);
	w = want_send(c->e.op_context, &m);
	if (comp_mismatch(s, c, &w, one, sizeof(one)))
		tally(&h->ty, one, "thread %d send %ld", h->t, i);
	else
		h->ty.ops++;
	h->sent_ok += !c->e.err;
	h->busy[i % SEP_THR_WIN] = false;
}

static void sep_thr_received(struct sep_thr *h, const struct comp *c)
{
	struct side *s = h->s;
	long k = ctx_index(c->e.op_context, h->rctx, SEP_THR_WIN);
	uint32_t i = c->e.tag & 0xffff;
	struct msgspec m = sep_thr_spec(s->sep->peer, h->t, i);
	struct want w = want_recv(s, c->e.op_context, &m, s->sep->peer);
	char one[300];

	comp_str(c, one, sizeof(one));
	if (k < 0) {
		tally(&h->ry, one, "unknown completion on rx context %d's CQ",
		      h->t);
		return;
	}
	h->idle[k] = true;
	if (c->e.tag >> 16 != (SEP_THR_TAG >> 16 | h->t) || i >= SEP_THR_N ||
	    h->rseen[i]++)
		tally(&h->ry, one, "%s message on rx context %d",
		      c->e.err ? "failed" : "foreign or repeated", h->t);
	else if (comp_mismatch(s, c, &w, one, sizeof(one)) ||
		 data_mismatch(&h->rb[k], 1, m.seed, m.len, one, sizeof(one)))
		tally(&h->ry, one, "thread %d message %u", h->t, i);
	else
		h->ry.ops++;
	h->recvd_ok += !c->e.err;
	h->late += i != h->rk[k];
}

/*
 * Thread @t: SEP_THR_N messages from tx context t to the peer's rx
 * context t, and as many from the peer's tx context t on rx context t,
 * polling only the CQs of these two contexts.
 */
static void *sep_thr_run(void *arg)
{
	struct sep_thr *h = arg;
	struct sep *x = h->s->sep;
	uint64_t last = now_ms();
	struct comp c[CQ_BATCH];

	while ((h->ty.ops < SEP_THR_N || h->ry.ops < SEP_THR_N) &&
	       !atomic_load(h->stop)) {
		bool moved = sep_thr_send(h);
		int n;

		sep_thr_post(h);
		n = sep_thr_read(h, x->txq[h->t].cq, false, c, CQ_BATCH, &h->ty);
		for (int i = 0; i < n; i++)
			sep_thr_sent(h, &c[i]);
		moved |= n > 0;
		n = sep_thr_read(h, x->rxq[h->t].cq, true, c, CQ_BATCH, &h->ry);
		for (int i = 0; i < n; i++)
			sep_thr_received(h, &c[i]);
		moved |= n > 0;
		if (moved) {
			last = now_ms();
		} else if (now_ms() - last > (uint64_t)opt_wait_ms) {
			sep_thr_fail(h, &h->ry, "nothing completed in %d ms",
				     opt_wait_ms);
			break;
		}
	}
	return NULL;
}

/*
 * One thread for each context pair i on both ranks, concurrently: each
 * sends over its tx context i to the peer's rx context i and receives on
 * its rx context i, polling its own CQs only; all arrive, in order.
 */
static void sep_threads(struct side *s)
{
	enum fi_threading th = s->info->domain_attr->threading;
	struct sep *x = s->sep;
	struct sep_thr *h = xcalloc(x->n, sizeof(*h));
	atomic_bool stop = false;
	bool failed = false;
	bool order = s->info->tx_attr->msg_order & FI_ORDER_SAS;

	if (th != FI_THREAD_SAFE && th != FI_THREAD_FID) {
		if (!s->rank)
			tap_skip("sep: threading %s: no thread for each context",
				 fi_tostr(&th, FI_TYPE_THREADING));
		goto out;
	}
	for (int t = 0; t < x->n; t++) {
		h[t] = (struct sep_thr){ .s = s, .t = t, .stop = &stop };
		h[t].sctx = ctx_new(s, SEP_THR_N);
		h[t].rctx = ctx_new(s, SEP_THR_WIN);
		h[t].sbuf = xmalloc(SEP_THR_WIN * SEP_THR_MAXLEN);
		for (int k = 0; k < SEP_THR_WIN; k++) {
			gbuf_alloc(&h[t].rb[k], SEP_THR_MAXLEN);
			h[t].idle[k] = true;
		}
	}
	x->threads = true;
	for (int t = 0; t < x->n; t++)
		if (pthread_create(&h[t].tid, NULL, sep_thr_run, &h[t]))
			die("pthread_create");
	for (int t = 0; t < x->n; t++)
		pthread_join(h[t].tid, NULL);
	x->threads = false;
	for (int t = 0; t < x->n; t++) {
		failed |= h[t].ty.ops != SEP_THR_N || h[t].ty.bad ||
			  h[t].ry.ops != SEP_THR_N || h[t].ry.bad;
		CHECK_WHY(s, h[t].ty.ops == SEP_THR_N && !h[t].ty.bad,
			  h[t].ty.why,
			  "sep: thread %d: %u of %d sends from tx context %d completed once each, on its CQ",
			  t, h[t].ty.ops, SEP_THR_N, t);
		CHECK_WHY(s, h[t].ry.ops == SEP_THR_N && !h[t].ry.bad,
			  h[t].ry.why,
			  "sep: thread %d: %u of %d messages received once each on rx context %d, byte-exact",
			  t, h[t].ry.ops, SEP_THR_N, t);
		if (order)
			CHECK_EQ(s, h[t].late, 0,
				 "sep: thread %d: matched in send order", t);
		if (h[t].eagain)
			diag(s, "sep: thread %d retried %lu -FI_EAGAIN", t,
			     h[t].eagain);
		x->sent[t] += h[t].sent_ok;
		x->recvd[t] += h[t].recvd_ok;
	}
	if (!order && !s->rank)
		tap_skip("sep: threads: no FI_ORDER_SAS, order not checked");
	sep_quiet(s, QUIET_MS, "sep: threads");
	if (failed)
		side_abort(s);	/* receives may be left posted */
	for (int t = 0; t < x->n; t++) {
		for (int k = 0; k < SEP_THR_WIN; k++)
			gbuf_free(s, &h[t].rb[k]);
		release(s, h[t].sbuf);
	}
out:
	free(h);
	barrier(s);
}

/* ---- scalable endpoints: opening, closing, the case ---- */

static bool sep_cq(struct side *s, struct cqq *q, struct fid_ep *ep,
		   uint64_t flags, const char *name)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };

	q->name = name;
	return MUST(s, fi_cq_open(s->domain, &attr, &q->cq, NULL),
		    "sep: fi_cq_open for %s", name) &&
	       MUST(s, fi_ep_bind(ep, &q->cq->fid, flags),
		    "sep: fi_ep_bind(%s)", name);
}

/* fi_tx_context or fi_rx_context of index count fails (fi_endpoint(3)). */
static void sep_bad_index(struct side *s)
{
	for (int rx = 0; rx < 2; rx++) {
		struct fid_ep *ep = NULL;
		int rc = rx ? fi_rx_context(s->ep, s->sep->n, NULL, &ep, NULL) :
			      fi_tx_context(s->ep, s->sep->n, NULL, &ep, NULL);

		CHECK(s, rc < 0, "sep: fi_%s_context of index %d = %s_ctx_cnt fails (%d)",
		      rx ? "rx" : "tx", s->sep->n, rx ? "rx" : "tx", rc);
		if (!rc && ep)
			fi_close(&ep->fid);
	}
}

/*
 * The AV (rx_ctx_bits), the scalable endpoint bound to it, n transmit
 * and n receive contexts each bound to its own CQ, a send counter on one
 * tx context and a receive counter on one rx context; the contexts are
 * enabled, then the endpoint.
 */
static bool sep_open(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_av_attr av_attr = { .count = 16, .rx_ctx_bits = x->bits };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };

	s->info->ep_attr->tx_ctx_cnt = x->n;
	s->info->ep_attr->rx_ctx_cnt = x->n;
	av_attr.type = s->info->domain_attr->av_type;
	if (!MUST(s, fi_av_open(s->domain, &av_attr, &s->av, NULL),
		  "sep: fi_av_open, rx_ctx_bits %d", x->bits) ||
	    !MUST(s, fi_scalable_ep(s->domain, s->info, &s->ep, NULL),
		  "sep: fi_scalable_ep, %d tx and rx contexts", x->n) ||
	    !MUST(s, fi_scalable_ep_bind(s->ep, &s->av->fid, 0),
		  "sep: fi_scalable_ep_bind(av)"))
		return false;
	for (int i = 0; i < x->n; i++) {
		snprintf(x->qname[i], sizeof(x->qname[i]), "tx context %d", i);
		snprintf(x->qname[SEP_CTX + i], sizeof(x->qname[i]),
			 "rx context %d", i);
		if (!MUST(s, fi_tx_context(s->ep, i, NULL, &x->tx[i], NULL),
			  "sep: fi_tx_context(%d)", i) ||
		    !sep_cq(s, &x->txq[i], x->tx[i], FI_TRANSMIT,
			    x->qname[i]) ||
		    !MUST(s, fi_rx_context(s->ep, i, NULL, &x->rx[i], NULL),
			  "sep: fi_rx_context(%d)", i) ||
		    !sep_cq(s, &x->rxq[i], x->rx[i], FI_RECV,
			    x->qname[SEP_CTX + i]))
			return false;
	}
	if (!MUST(s, fi_cntr_open(s->domain, &cntr_attr, &x->scntr, NULL),
		  "sep: fi_cntr_open") ||
	    !MUST(s, fi_cntr_open(s->domain, &cntr_attr, &x->rcntr, NULL),
		  "sep: fi_cntr_open") ||
	    !MUST(s, fi_ep_bind(x->tx[x->tx_cntr], &x->scntr->fid, FI_SEND),
		  "sep: fi_ep_bind(send counter) to tx context %d",
		  x->tx_cntr) ||
	    !MUST(s, fi_ep_bind(x->rx[SEP_RX_CNTR], &x->rcntr->fid, FI_RECV),
		  "sep: fi_ep_bind(receive counter) to rx context %d",
		  SEP_RX_CNTR))
		return false;
	for (int i = 0; i < x->n; i++)
		if (!MUST(s, fi_enable(x->tx[i]), "sep: fi_enable(%s)",
			  x->txq[i].name) ||
		    !MUST(s, fi_enable(x->rx[i]), "sep: fi_enable(%s)",
			  x->rxq[i].name))
			return false;
	if (!s->rank)
		sep_bad_index(s);
	if (!MUST(s, fi_enable(s->ep), "sep: fi_enable(scalable endpoint)"))
		return false;
	s->namelen[s->rank] = ADDR_MAX;
	return MUST(s, fi_getname(&s->ep->fid, s->name[s->rank],
				  &s->namelen[s->rank]),
		    "sep: fi_getname of the scalable endpoint");
}

static void sep_close_fid(struct side *s, struct fid *fid, const char *name)
{
	int rc = fid ? fi_close(fid) : 0;

	if (rc)
		report(s, false, __LINE__, NULL, "sep: fi_close(%s): %s", name,
		       fi_strerror(-rc));
}

/*
 * fi_close of the endpoint with its contexts open: -FI_EBUSY
 * (fi_endpoint(3)); once they are closed it closes. Then the CQs and
 * counters; the AV and what is below it are side_close's.
 */
static void sep_close(struct side *s)
{
	struct sep *x = s->sep;
	int rc;

	if (s->ep && x->tx[0]) {
		rc = fi_close(&s->ep->fid);
		CHECK_EQ(s, rc, -FI_EBUSY,
			 "sep: fi_close of the scalable endpoint with contexts open: -FI_EBUSY");
		if (!rc) {
			diag(s, "sep: its contexts, CQs and counters are left open");
			s->ep = NULL;
			goto out;
		}
	}
	for (int i = 0; i < x->n; i++) {
		sep_close_fid(s, x->tx[i] ? &x->tx[i]->fid : NULL,
			      x->txq[i].name);
		sep_close_fid(s, x->rx[i] ? &x->rx[i]->fid : NULL,
			      x->rxq[i].name);
	}
	if (s->ep)
		CHECK_EQ(s, fi_close(&s->ep->fid), 0,
			 "sep: fi_close of the scalable endpoint once its contexts are closed");
	s->ep = NULL;
	for (int i = 0; i < x->n; i++) {
		sep_close_fid(s, x->txq[i].cq ? &x->txq[i].cq->fid : NULL,
			      "CQ");
		sep_close_fid(s, x->rxq[i].cq ? &x->rxq[i].cq->fid : NULL,
			      "CQ");
	}
	sep_close_fid(s, x->scntr ? &x->scntr->fid : NULL, "send counter");
	sep_close_fid(s, x->rcntr ? &x->rcntr->fid : NULL, "receive counter");
out:
	for (int i = 0; i < x->n; i++) {
		free(x->txq[i].v);
		free(x->rxq[i].v);
	}
	s->sep = NULL;
	free(x);
}

/*
 * A scalable endpoint (fi_endpoint(3), fi_av(3) rx_ctx_bits and
 * fi_rx_addr, FI_NAMED_RX_CTX) with up to SEP_CTX tx and rx contexts,
 * each with its own CQ:
 * - every tx context to every named rx context, tagged and untagged,
 *   both ways: each message completes on its rx context's CQ, each send
 *   on its tx context's CQ, nothing anywhere else;
 * - a message to rx context ux before a receive is posted there waits
 *   for it, not taken by a receive for its tag on another context;
 * - 1 MiB fi_senddata to rx context big: FI_REMOTE_CQ_DATA, the data;
 * - counters count the completions of their own context only;
 * - with FI_RMA, fi_writedata to rx context ux: CQ data there;
 * - kfab only: sends to a context the peer lacks go nowhere, an RMA
 *   write to it fails with FI_EADDRNOTAVAIL;
 * - a thread for each context pair on both ranks at once (FI_THREAD_FID
 *   allows it, fi_domain(3)), each message once, in order;
 * - fi_tx_context/fi_rx_context past the count fail, fi_close of the
 *   endpoint with contexts open returns -FI_EBUSY.
 */
static void case_sep(struct side *s)
{
	const struct fi_domain_attr *d = s->info->domain_attr;
	size_t n = SEP_CTX;
	struct sep *x;

	if (d->max_ep_tx_ctx < n)
		n = d->max_ep_tx_ctx;
	if (d->max_ep_rx_ctx < n)
		n = d->max_ep_rx_ctx;
	if (n < 2) {
		if (!s->rank)
			tap_skip("sep: max_ep_tx_ctx %zu, max_ep_rx_ctx %zu: fewer than 2 contexts",
				 d->max_ep_tx_ctx, d->max_ep_rx_ctx);
		return;
	}
	x = xcalloc(1, sizeof(*x));
	x->n = n;
	while ((1 << x->bits) < x->n)
		x->bits++;
	/* kfab: room to name a context past the last (sep_missing) */
	if (is_kfab())
		x->bits++;
	x->peer = !s->rank;
	x->ux = n > 2 ? 2 : 1;
	x->uo = x->ux == 1 ? 0 : 1;
	x->big = n - 1;
	x->tx_cntr = n - 2;
	s->sep = x;
	if (!s->rank)
		diag(s, "sep: %d tx and rx contexts, rx_ctx_bits %d, threading %s",
		     x->n, x->bits, fi_tostr(&d->threading, FI_TYPE_THREADING));
	if (!sep_open(s) || !side_exchange(s) ||
	    ((s->info->caps & FI_RMA) && !rma_setup(s)))
		goto out;
	for (int from = 0; from < 2 && !s->abort; from++) {
		sep_route(s, from, true);
		if (!s->abort)
			sep_route(s, from, false);
	}
	if (!s->abort)
		sep_cntr_more(s);
	if (!s->abort)
		sep_counters(s, "after routing");
	if (!s->abort)
		sep_unexpected(s);
	if (!s->abort)
		sep_large(s);
	if (!s->abort)
		sep_rma(s);
	if (!s->abort && is_kfab())
		sep_missing(s);
	if (!s->abort)
		sep_threads(s);
	if (!s->abort)
		sep_counters(s, "at the end");
	if (!s->abort && barrier(s))
		sep_quiet(s, SETTLE_MS, "sep: at the end");
out:
	sep_close(s);
}

/*
 * The scalable endpoint enabled before its contexts are opened, then
 * each context bound and enabled; rx context 1 gets no CQ (the target
 * of RMA only, fi_endpoint(3): Open MPI's ofi BTL does this).
 */
static bool sep_open_first(struct sep *x, struct side *s)
{
	struct fi_av_attr av_attr = { .count = 16, .rx_ctx_bits = x->bits,
				      .type = s->info->domain_attr->av_type };

	s->info->ep_attr->tx_ctx_cnt = x->n;
	s->info->ep_attr->rx_ctx_cnt = x->n;
	if (!MUST(s, fi_av_open(s->domain, &av_attr, &s->av, NULL),
		  "sep_first: fi_av_open, rx_ctx_bits %d", x->bits) ||
	    !MUST(s, fi_scalable_ep(s->domain, s->info, &s->ep, NULL),
		  "sep_first: fi_scalable_ep") ||
	    !MUST(s, fi_scalable_ep_bind(s->ep, &s->av->fid, 0),
		  "sep_first: fi_scalable_ep_bind(av)") ||
	    !MUST(s, fi_enable(s->ep),
		  "sep_first: fi_enable of the scalable endpoint before its contexts"))
		return false;
	for (int i = 0; i < x->n; i++) {
		snprintf(x->qname[i], sizeof(x->qname[i]), "tx context %d", i);
		snprintf(x->qname[SEP_CTX + i], sizeof(x->qname[i]),
			 "rx context %d", i);
		if (!MUST(s, fi_tx_context(s->ep, i, NULL, &x->tx[i], NULL),
			  "sep_first: fi_tx_context(%d)", i) ||
		    !sep_cq(s, &x->txq[i], x->tx[i], FI_TRANSMIT,
			    x->qname[i]) ||
		    !MUST(s, fi_enable(x->tx[i]), "sep_first: fi_enable(%s)",
			  x->qname[i]) ||
		    !MUST(s, fi_rx_context(s->ep, i, NULL, &x->rx[i], NULL),
			  "sep_first: fi_rx_context(%d)", i) ||
		    (i != 1 && !sep_cq(s, &x->rxq[i], x->rx[i], FI_RECV,
				       x->qname[SEP_CTX + i])) ||
		    !MUST(s, fi_enable(x->rx[i]),
			  "sep_first: fi_enable(%s%s)", x->qname[SEP_CTX + i],
			  i == 1 ? ", no CQ: an RMA target only" : ""))
			return false;
	}
	s->namelen[s->rank] = ADDR_MAX;
	return MUST(s, fi_getname(&s->ep->fid, s->name[s->rank],
				  &s->namelen[s->rank]),
		    "sep_first: fi_getname of the scalable endpoint");
}

/* With FI_RMA: write to the peer's CQ-less rx context 1, read it back. */
static void sep_first_rma(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct win *win = &s->win[WIN_MAIN];
	uint64_t raddr = s->rbase[x->peer][WIN_MAIN] + RMA_PAD;
	size_t len = 8 * KIB;
	struct gbuf b;
	struct comp c;
	ssize_t rc;

	if (!(s->info->caps & FI_RMA)) {
		if (!s->rank)
			tap_skip("sep_first: %s lacks FI_RMA: no RMA to a context without a CQ",
				 opt_prov);
		return;
	}
	gbuf_alloc(&b, len);
	pat_fill(b.p, len, seed_of(0x5f1, s->rank), 0);
	pat_fill(win->img + RMA_PAD, len, seed_of(0x5f1, x->peer), 0);
	RETRY(s, rc, fi_write(x->tx[0], b.p, len, NULL, sep_dst(s, 1), raddr,
			      s->rkey[x->peer][WIN_MAIN], &ctx[0]));
	if (MUST(s, rc, "sep_first: fi_write to rx context 1 (no CQ)") &&
	    cq_wait(s, &x->txq[0], &ctx[0], &c, opt_wait_ms, "sep_first"))
		CHECK_EQ(s, c.e.err, 0,
			 "sep_first: the write to rx context 1 (no CQ) completes");
	win_check(s, WIN_MAIN, opt_wait_ms,
		  "sep_first: the peer's write in place, nothing around it written");
	if (!barrier(s))
		goto out;
	memset(b.p, 0, len);
	RETRY(s, rc, fi_read(x->tx[1], b.p, len, NULL, sep_dst(s, 1), raddr,
			     s->rkey[x->peer][WIN_MAIN], &ctx[1]));
	if (MUST(s, rc, "sep_first: fi_read from rx context 1 (no CQ)") &&
	    cq_wait(s, &x->txq[1], &ctx[1], &c, opt_wait_ms, "sep_first")) {
		CHECK_EQ(s, c.e.err, 0,
			 "sep_first: the read from rx context 1 (no CQ) completes");
		check_data(s, &b, 1, seed_of(0x5f1, s->rank), len,
			   "sep_first: the read gets what was written");
	}
	barrier(s);
out:
	gbuf_free(s, &b);
}

/*
 * A scalable endpoint set up as fabtests' scalable_ep and Open MPI's ofi
 * BTL do (fi_endpoint(3) leaves the order to the application): the AV
 * with the rx_ctx_bits of two contexts, the endpoint enabled first, its
 * contexts after; the peer's fi_getname inserted; a message from each tx
 * context to each rx context with a CQ completes there; with FI_RMA an
 * rx context without a CQ is the target of fi_write and fi_read.
 */
static void case_sep_first(struct side *s)
{
	const struct fi_domain_attr *d = s->info->domain_attr;
	struct sep *x;

	if (d->max_ep_tx_ctx < 2 || d->max_ep_rx_ctx < 2) {
		if (!s->rank)
			tap_skip("sep_first: max_ep_tx_ctx %zu, max_ep_rx_ctx %zu: fewer than 2 contexts",
				 d->max_ep_tx_ctx, d->max_ep_rx_ctx);
		return;
	}
	x = xcalloc(1, sizeof(*x));
	x->n = 2;
	while (x->n >> ++x->bits)
		;
	x->peer = !s->rank;
	s->sep = x;
	if (!sep_open_first(x, s) || !side_exchange(s) ||
	    ((s->info->caps & FI_RMA) && !rma_setup(s)))
		goto out;
	for (int from = 0; from < 2 && !s->abort; from++)
		for (int i = 0; i < x->n && !s->abort; i++) {
			struct msgspec m = sep_msg(from, false, i, 0);
			struct fi_context2 *ctx = ctx_new(s, 1);
			char what[80];
			struct gbuf b;

			snprintf(what, sizeof(what),
				 "sep_first: rank %d, tx context %d to rx context 0",
				 from, i);
			if (s->rank == from) {
				if (!ctl_wait(s, x->peer, STEP_POSTED, NULL))
					break;
				sep_send_checked(s, i, 0, &m, what);
				continue;
			}
			gbuf_alloc(&b, m.len);
			if (sep_recv(s, 0, 0, &b, 0, ctx, what)) {
				step_to(s, x->peer, STEP_POSTED, 0, NULL, 0);
				sep_recv_checked(s, 0, ctx, &m, &b, what);
			}
			gbuf_free(s, &b);
		}
	if (!s->abort && barrier(s))
		sep_first_rma(s);
out:
	sep_close(s);
}

/* ---- setting up, running and tearing down a case ---- */

/* fi_getinfo for @tc, asking also for FI_SOURCE and FI_ORDER_SAS. */
/* ---- waiting: counters, wait objects, auto progress ---- */

#define WAIT_MSG_LEN	64
#define WAIT_DELAY_MS	200	/* the peer sends this long after POSTED */
#define SLEEP_MS	2000	/* the sleep case blocks this long */
#define SLEEP_CPU_PCT	5	/* at most this much of a core meanwhile */
#define WAKE_MS		50	/* wake latency bound, x FI_MSG_TEST_TIME_SCALE */
#define AUTO_LEN	(4 * MIB)

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* User and system CPU time of the whole process, every thread. */
static uint64_t cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Time bounds are multiplied by $FI_MSG_TEST_TIME_SCALE (1; TCG: 4). */
static unsigned int time_scale(void)
{
	const char *v = getenv("FI_MSG_TEST_TIME_SCALE");
	unsigned int k = v ? (unsigned int)strtoul(v, NULL, 0) : 1;

	return k ? k : 1;
}

/*
 * A peer's part in the waiting cases: for every POSTED (a: a delay in
 * ms), wait that long without touching the endpoint, send WAIT_MSG_LEN
 * bytes tagged a >> 32, tell SENT (a: when, in us) and reap the send
 * completion.
 */
static void peer_delayed_sends(struct side *s)
{
	struct ctl_msg m;

	while (ctl_wait_ms(s, 0, STEP_ANY, &m, -1, true)) {
		uint64_t tag = m.a >> 32, t;
		struct fi_context2 *ctx = ctx_new(s, 1);
		struct gbuf b;
		struct comp c;
		ssize_t rc;

		if (m.step == STEP_STOP)
			return;
		if (m.step != STEP_POSTED) {
			report(s, false, __LINE__, NULL,
			       "%s: protocol: unexpected step %u", s->tc->name,
			       m.step);
			side_abort(s);
			return;
		}
		gbuf_alloc(&b, WAIT_MSG_LEN);
		usleep((useconds_t)(m.a & 0xffffffff) * 1000);
		t = now_us();
		RETRY(s, rc, fi_tsend(s->ep, b.p, WAIT_MSG_LEN, NULL,
				      s->addr[0], tag, ctx));
		if (MUST(s, rc, "%s: send", s->tc->name)) {
			step_to(s, 0, STEP_SENT, t, NULL, 0);
			if (cq_wait(s, &s->tx, ctx, &c, opt_wait_ms,
				    s->tc->name))
				CHECK_EQ(s, c.e.err, 0, "%s: send completed",
					 s->tc->name);
		}
		gbuf_free(s, &b);
	}
}

/* Rank 0: have rank 1 send a message tagged @tag after @delay_ms. */
static void ask_send(struct side *s, uint32_t delay_ms, uint64_t tag)
{
	step_to(s, 1, STEP_POSTED, tag << 32 | delay_ms, NULL, 0);
}

/*
 * Counters: every send and receive counts, injects and sends without a
 * CQ entry (FI_SELECTIVE_COMPLETION) too; a cancelled receive does not
 * (on kfab_* it counts as an error); fi_cntr_wait sleeps until the other
 * process's messages come; add, set, adderr, seterr; a wait that times
 * out.
 */
static void case_cntr(struct side *s)
{
	static const struct msgspec ms[] = {
		{ .len = 100 },
		{ .api = API_INJECT, .len = 16 },
		{ .api = API_TAGGED, .len = 70000, .tag = 0x7a00 },
		{ .api = API_MSG, .len = 200, .flags = FI_COMPLETION },
	};
	enum { N = ARRAY_SIZE(ms) };
	struct fi_context2 *ctx = ctx_new(s, N + 1);
	struct gbuf b[N + 1];
	struct comp c;
	uint64_t t0, e0;
	int rc;

	for (int i = 0; i <= N; i++)
		gbuf_alloc(&b[i], 70000);
	if (s->rank) {
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			goto out;
		usleep(WAIT_DELAY_MS * 1000);	/* rank 0 sleeps meanwhile */
		for (int i = 0; i < N; i++) {
			struct iovec iov = { b[i].p, ms[i].len };
			ssize_t r;

			RETRY(s, r, post_send(s, 0, &ms[i], &iov, 1, &ctx[i]));
			if (!MUST(s, r, "cntr: send %d", i))
				goto out;
		}
		rc = fi_cntr_wait(s->scntr, N, opt_wait_ms);
		CHECK_EQ(s, rc, 0, "cntr: fi_cntr_wait(send counter, %d)", N);
		CHECK_EQ(s, fi_cntr_read(s->scntr), N,
			 "cntr: every send counted, inject and the ones without a CQ entry too");
		CHECK_EQ(s, fi_cntr_readerr(s->scntr), 0,
			 "cntr: no send error counted");
		progress_for(s, QUIET_MS);
		CHECK(s, cqq_take(&s->tx, &ctx[N - 1], &c) && !s->tx.n,
		      "cntr: one CQ entry, for the FI_COMPLETION send");
		s->tx.n = 0;	/* reported */
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		ctl_wait(s, 0, STEP_DONE, NULL);
		goto out;
	}
	if (!recv_into(s, 0, &b[N], FI_ADDR_UNSPEC, 0, 0, &ctx[N], "cntr"))
		goto out;
	cancel_recv(s, &ctx[N], 0, "cntr");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), 0,
		 "cntr: a cancelled receive does not count as completed");
	/* fi_cntr(3): an error "may" count; kfab_* counts it */
	e0 = fi_cntr_readerr(s->rcntr);
	if (!strncmp(opt_prov, "kfab_", 5))
		CHECK_EQ(s, e0, 1,
			 "cntr: a cancelled receive counts as an error");
	else
		diag(s, "cntr: %s counts a cancelled receive as %llu error(s)",
		     opt_prov, (unsigned long long)e0);
	for (int i = 0; i < N; i++)
		if (!recv_into(s, ms[i].api & API_TAGGED, &b[i],
			       FI_ADDR_UNSPEC, ms[i].tag, 0, &ctx[i], "cntr"))
			goto out;
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	t0 = now_ms();
	rc = fi_cntr_wait(s->rcntr, N, opt_wait_ms);
	CHECK_EQ(s, rc, 0, "cntr: fi_cntr_wait(receive counter, %d) wakes for the other process's sends",
		 N);
	diag(s, "cntr: fi_cntr_wait returned after %llu ms (the peer sends after %d ms)",
	     (unsigned long long)(now_ms() - t0), WAIT_DELAY_MS);
	CHECK_EQ(s, fi_cntr_read(s->rcntr), N, "cntr: every receive counted");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), e0, "cntr: errors unchanged");
	for (int i = 0; i < N; i++)
		if (cq_wait(s, &s->rx, &ctx[i], &c, opt_wait_ms, "cntr"))
			CHECK_EQ(s, c.e.err, 0, "cntr: receive %d completed", i);
	CHECK_EQ(s, fi_cntr_add(s->rcntr, 10), 0, "cntr: fi_cntr_add");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), N + 10, "cntr: value after add");
	CHECK_EQ(s, fi_cntr_set(s->rcntr, 3), 0, "cntr: fi_cntr_set");
	CHECK_EQ(s, fi_cntr_read(s->rcntr), 3, "cntr: value after set");
	CHECK_EQ(s, fi_cntr_adderr(s->rcntr, 2), 0, "cntr: fi_cntr_adderr");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), e0 + 2,
		 "cntr: errors after adderr");
	CHECK_EQ(s, fi_cntr_seterr(s->rcntr, 0), 0, "cntr: fi_cntr_seterr");
	CHECK_EQ(s, fi_cntr_readerr(s->rcntr), 0, "cntr: errors after seterr");
	if (!known_gap("cntr/wait-timeout")) {
		t0 = now_ms();
		rc = fi_cntr_wait(s->rcntr, 1000, 100);
		CHECK(s, rc == -FI_ETIMEDOUT && now_ms() - t0 >= 90,
		      "cntr: fi_cntr_wait for what never comes: -FI_ETIMEDOUT after 100 ms (%d, %llu ms)",
		      rc, (unsigned long long)(now_ms() - t0));
	}
	ctl_wait(s, 1, STEP_DONE, NULL);
	step_to(s, 1, STEP_DONE, 0, NULL, 0);
out:
	for (int i = 0; i <= N; i++)
		gbuf_free(s, &b[i]);
}

struct sread_arg {
	struct fid_cq *cq;
	ssize_t rc;
	uint64_t end;		/* now_ms() when fi_cq_sread returned */
};

static void *sread_thread(void *arg)
{
	struct sread_arg *a = arg;
	struct fi_cq_tagged_entry e;

	a->rc = fi_cq_sread(a->cq, &e, 1, NULL, 5000);
	a->end = now_ms();
	return NULL;
}

/* One receive of WAIT_MSG_LEN bytes with @tag into @b, posted. */
static bool wait_recv(struct side *s, struct gbuf *b, uint64_t tag,
		      void *ctx)
{
	return recv_into(s, API_TAGGED, b, FI_ADDR_UNSPEC, tag, 0, ctx,
			 s->tc->name);
}

/*
 * FI_WAIT_FD CQs: the fd of FI_GETWAIT, after fi_trywait said 0, polls
 * readable when the other process sends; fi_cq_sread times out with
 * -FI_EAGAIN and returns the completion that comes; fi_cq_signal wakes an
 * fi_cq_sread of another thread; fi_trywait says -FI_EAGAIN while
 * something is there to read.
 */
static void case_waitfd(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 3);
	struct fi_cq_tagged_entry e;
	struct fid *fids[1];
	struct sread_arg sa;
	struct pollfd pfd;
	struct gbuf b[3];
	pthread_t th;
	uint64_t t0;
	ssize_t rc;
	int fd = -1, n;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	fids[0] = &s->rx.cq->fid;
	for (int i = 0; i < 3; i++)
		gbuf_alloc(&b[i], WAIT_MSG_LEN);
	if (!MUST(s, fi_control(&s->rx.cq->fid, FI_GETWAIT, &fd),
		  "waitfd: fi_control(FI_GETWAIT)"))
		goto out;
	CHECK(s, fd >= 0, "waitfd: FI_GETWAIT gives an fd (%d)", fd);

	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, 100);
	CHECK(s, rc == -FI_EAGAIN && now_ms() - t0 >= 90,
	      "waitfd: fi_cq_sread(100 ms) with nothing: -FI_EAGAIN after 100 ms (%zd after %llu ms)",
	      rc, (unsigned long long)(now_ms() - t0));

	/* poll() on the fd */
	if (!wait_recv(s, &b[0], 0x7b00, &ctx[0]))
		goto out;
	t0 = now_ms() + 1000;
	while ((rc = fi_trywait(s->fabric, fids, 1)) == -FI_EAGAIN &&
	       now_ms() < t0)
		fi_cq_read(s->rx.cq, NULL, 0);
	CHECK_EQ(s, rc, 0, "waitfd: fi_trywait with nothing pending");
	ask_send(s, WAIT_DELAY_MS, 0x7b00);
	t0 = now_ms();
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	n = poll(&pfd, 1, opt_wait_ms);
	CHECK(s, n == 1 && now_ms() - t0 >= WAIT_DELAY_MS / 2,
	      "waitfd: poll() on the fd slept, then woke for the message (%d after %llu ms)",
	      n, (unsigned long long)(now_ms() - t0));
	diag(s, "waitfd: poll() woke after %llu ms; the peer sent after %d ms",
	     (unsigned long long)(now_ms() - t0), WAIT_DELAY_MS);
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[0],
	      "waitfd: then its completion is read (%zd)", rc);
	if (!ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;

	/* fi_cq_sread() sleeps until the message */
	if (!wait_recv(s, &b[1], 0x7b01, &ctx[1]))
		goto out;
	ask_send(s, WAIT_DELAY_MS, 0x7b01);
	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[1] &&
	      now_ms() - t0 >= WAIT_DELAY_MS / 2,
	      "waitfd: fi_cq_sread returns the completion that comes (%zd after %llu ms)",
	      rc, (unsigned long long)(now_ms() - t0));
	if (!ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;

	/* fi_cq_signal() */
	sa = (struct sread_arg){ .cq = s->rx.cq };
	if (!MUST(s, pthread_create(&th, NULL, sread_thread, &sa),
		  "waitfd: pthread_create"))
		goto out;
	usleep(100000);
	t0 = now_ms();
	CHECK_EQ(s, fi_cq_signal(s->rx.cq), 0, "waitfd: fi_cq_signal");
	pthread_join(th, NULL);
	/* woken by the signal: not before it, long before its 5 s */
	CHECK(s, sa.rc == -FI_EAGAIN && sa.end >= t0 && sa.end - t0 < 2000,
	      "waitfd: fi_cq_signal wakes fi_cq_sread(5 s) of another thread: -FI_EAGAIN (%zd, %lld ms after the signal)",
	      sa.rc, (long long)(sa.end - t0));

	/* fi_trywait() with a message in the queue */
	if (!wait_recv(s, &b[2], 0x7b02, &ctx[2]))
		goto out;
	ask_send(s, 0, 0x7b02);
	if (!ctl_wait_ms(s, 1, STEP_SENT, NULL, opt_wait_ms, false))
		goto out;
	usleep(100000);
	rc = fi_trywait(s->fabric, fids, 1);
	CHECK_EQ(s, rc, -FI_EAGAIN,
		 "waitfd: fi_trywait with a message there: -FI_EAGAIN");
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms);
	CHECK(s, rc == 1 && e.op_context == &ctx[2],
	      "waitfd: and the completion is read (%zd)", rc);
out:
	stop_peers(s);
	for (int i = 0; i < 3; i++)
		gbuf_free(s, &b[i]);
}

/*
 * fi_cq_signal() on an FI_WAIT_UNSPEC CQ (fi_cq(3)) with no thread in
 * fi_cq_sread yet: the next fi_cq_sread(SIGNAL_SREAD_MS) with nothing to
 * read returns at once, -FI_EAGAIN or -FI_ECANCELED.
 */
#define SIGNAL_SREAD_MS	2000

static void case_signal(struct side *s)
{
	struct fi_cq_tagged_entry e;
	uint64_t t0, ms;
	ssize_t rc;

	if (s->rank)
		return;
	CHECK_EQ(s, fi_cq_signal(s->rx.cq), 0, "signal: fi_cq_signal");
	t0 = now_ms();
	rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, SIGNAL_SREAD_MS);
	ms = now_ms() - t0;
	CHECK(s, (rc == -FI_EAGAIN || rc == -FI_ECANCELED) &&
	      ms < SIGNAL_SREAD_MS / 2,
	      "signal: then fi_cq_sread(%d ms) returns at once: -FI_EAGAIN or -FI_ECANCELED (%zd after %llu ms)",
	      SIGNAL_SREAD_MS, rc, (unsigned long long)ms);
}

/* fi_poll until it has named each of @want (all of @n found): the rest. */
static int poll_for(struct fid_poll *ps, void *const *want, int n,
		    uint32_t *found, void **other)
{
	uint64_t end = now_ms() + opt_wait_ms;
	int rc = 0;

	*found = 0;
	*other = NULL;
	do {
		void *got[8];

		rc = fi_poll(ps, got, 8);
		for (int i = 0; i < rc; i++) {
			int j;

			for (j = 0; j < n && got[i] != want[j]; j++)
				;
			if (j < n)
				*found |= 1u << j;
			else
				*other = got[i];
		}
	} while (rc >= 0 && *found != (1u << n) - 1 && now_ms() < end);
	return rc < 0 ? rc : 0;
}

/*
 * Poll sets (fi_poll(3)): the CQs and counters of the endpoint in one
 * set; fi_poll names none while nothing happens, then the receive CQ
 * and receive counter once a message comes (and not the transmit side),
 * none again once the completion is read and the counter unchanged;
 * fi_poll_del of each, then fi_close of the set.
 */
static void case_poll(struct side *s)
{
	struct fi_poll_attr attr = { 0 };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct fid_poll *ps = NULL;
	struct fid *fids[4] = { &s->rx.cq->fid, &s->tx.cq->fid,
				&s->rcntr->fid, &s->scntr->fid };
	void *want[2] = { s->rx.cq->fid.context, s->rcntr->fid.context };
	void *got[4], *other;
	struct gbuf b;
	struct comp c;
	uint32_t found;
	int rc;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	gbuf_alloc(&b, WAIT_MSG_LEN);
	if (!MUST(s, fi_poll_open(s->domain, &attr, &ps),
		  "poll: fi_poll_open"))
		goto out;
	for (int i = 0; i < 4; i++)
		if (!MUST(s, fi_poll_add(ps, fids[i], 0), "poll: fi_poll_add %d",
			  i))
			goto out;
	progress_for(s, SETTLE_MS);
	rc = fi_poll(ps, got, 4);
	CHECK_EQ(s, rc, 0, "poll: fi_poll with nothing happened: 0");
	if (!wait_recv(s, &b, 0x7c00, &ctx[0]))
		goto out;
	ask_send(s, 0, 0x7c00);
	rc = poll_for(ps, want, 2, &found, &other);
	CHECK(s, !rc && found == 3 && !other,
	      "poll: a message comes: fi_poll names the receive CQ and counter, nothing else (rc %d, found %#x, other %p)",
	      rc, found, other);
	if (!cq_wait(s, &s->rx, &ctx[0], &c, opt_wait_ms, "poll") ||
	    !ctl_wait(s, 1, STEP_SENT, NULL))
		goto out;
	CHECK_EQ(s, c.e.err, 0, "poll: the message is received");
	rc = fi_poll(ps, got, 4);
	CHECK_EQ(s, rc, 0, "poll: once read, fi_poll names nothing: 0");
	for (int i = 0; i < 4; i++)
		CHECK_EQ(s, fi_poll_del(ps, fids[i], 0), 0,
			 "poll: fi_poll_del %d", i);
out:
	if (ps)
		CHECK_EQ(s, fi_close(&ps->fid), 0, "poll: fi_close of the set");
	gbuf_free(s, &b);
	stop_peers(s);
}

/*
 * Sleeping: a process blocked SLEEP_MS in fi_cq_sread uses under
 * SLEEP_CPU_PCT% of a core and wakes within WAKE_MS of the message's
 * sending (then five more wakes, 100 ms apart, for the latency).
 */
static void case_sleep(struct side *s)
{
	enum { WAKES = 6 };
	struct fi_context2 *ctx = ctx_new(s, WAKES);
	unsigned int bound = WAKE_MS * time_scale();
	uint64_t lat[WAKES], lmax = 0, t0, t1, c0, c1;
	struct fi_cq_tagged_entry e;
	struct ctl_msg m;
	struct gbuf b;
	ssize_t rc;

	if (s->rank) {
		peer_delayed_sends(s);
		return;
	}
	gbuf_alloc(&b, WAIT_MSG_LEN);
	for (int i = 0; i < WAKES; i++) {
		uint32_t delay = i ? 100 : SLEEP_MS;

		if (!wait_recv(s, &b, 0x7c00 + i, &ctx[i]))
			goto out;
		ask_send(s, delay, 0x7c00 + i);
		c0 = cpu_us();
		t0 = now_us();
		rc = fi_cq_sread(s->rx.cq, &e, 1, NULL, opt_wait_ms + SLEEP_MS);
		t1 = now_us();
		c1 = cpu_us();
		if (!CHECK(s, rc == 1 && e.op_context == &ctx[i],
			   "sleep: fi_cq_sread %d returned the message (%zd)",
			   i, rc) ||
		    !ctl_wait(s, 1, STEP_SENT, &m))
			goto out;
		lat[i] = t1 > m.a ? t1 - m.a : 0;
		if (lat[i] > lmax)
			lmax = lat[i];
		if (i)
			continue;
		diag(s, "sleep: blocked %llu ms in fi_cq_sread, %llu us of CPU: %.2f%% of a core",
		     (unsigned long long)(t1 - t0) / 1000,
		     (unsigned long long)(c1 - c0),
		     100.0 * (double)(c1 - c0) / (double)(t1 - t0));
		CHECK(s, t1 - t0 >= SLEEP_MS * 900ull,
		      "sleep: fi_cq_sread blocked until the message (%llu ms)",
		      (unsigned long long)(t1 - t0) / 1000);
		CHECK(s, (c1 - c0) * 100 < (t1 - t0) * SLEEP_CPU_PCT,
		      "sleep: under %d%% of a core while blocked", SLEEP_CPU_PCT);
	}
	diag(s, "sleep: wake latency (send to fi_cq_sread's return): first %llu us, max %llu us over %d wakes",
	     (unsigned long long)lat[0], (unsigned long long)lmax, WAKES);
	CHECK(s, lmax < bound * 1000ull,
	      "sleep: every wake within %u ms of the send", bound);
out:
	stop_peers(s);
	gbuf_free(s, &b);
}

/*
 * FI_PROGRESS_AUTO: a 4 MiB rendezvous completes while the receiver
 * sleeps in nanosleep and never calls libfabric: its first fi_cq_read
 * afterwards finds the completion and the data; an idle process with a
 * progress thread uses little CPU.
 */
static void case_auto(struct side *s)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct fi_cq_tagged_entry e;
	uint64_t t0, c0, c1;
	struct gbuf b;
	struct comp c;
	ssize_t rc;

	gbuf_alloc(&b, AUTO_LEN);
	if (s->rank) {
		pat_fill(b.p, AUTO_LEN, seed_of(0xa00, 0xa0), 0);
		if (!ctl_wait(s, 0, STEP_POSTED, NULL))
			goto out;
		t0 = now_ms();
		RETRY(s, rc, fi_tsend(s->ep, b.p, AUTO_LEN, NULL, s->addr[0],
				      0xa0, ctx));
		if (!MUST(s, rc, "auto: 4 MiB tsend") ||
		    !cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, "auto"))
			goto out;
		CHECK_EQ(s, c.e.err, 0,
			 "auto: the 4 MiB send completes while the receiver sleeps");
		diag(s, "auto: the 4 MiB send completed in %llu ms",
		     (unsigned long long)(now_ms() - t0));
		step_to(s, 0, STEP_DONE, 0, NULL, 0);
		/* idle, with the progress thread running */
		c0 = cpu_us();
		t0 = now_us();
		sleep(1);
		c1 = cpu_us();
		diag(s, "auto: idle 1 s with a progress thread: %llu us of CPU (%.2f%% of a core)",
		     (unsigned long long)(c1 - c0),
		     100.0 * (double)(c1 - c0) / (double)(now_us() - t0));
		CHECK(s, (c1 - c0) * 100 < (now_us() - t0) * SLEEP_CPU_PCT,
		      "auto: an idle process uses under %d%% of a core",
		      SLEEP_CPU_PCT);
		goto out;
	}
	if (!wait_recv(s, &b, 0xa0, &ctx[0]))
		goto out;
	step_to(s, 1, STEP_POSTED, 0, NULL, 0);
	/* no libfabric call until the sender has its completion */
	if (!ctl_wait_ms(s, 1, STEP_DONE, NULL, opt_wait_ms, false))
		goto out;
	rc = fi_cq_read(s->rx.cq, &e, 1);
	CHECK(s, rc == 1 && e.op_context == &ctx[0] && e.len == AUTO_LEN,
	      "auto: the first fi_cq_read finds the 4 MiB receive complete (%zd)",
	      rc);
	if (rc == 1)
		check_data(s, &b, 1, seed_of(0xa00, 0xa0), AUTO_LEN,
			   "auto: 4 MiB data");
out:
	gbuf_free(s, &b);
}

/*
 * The provider itself rather than a utility layered over it (kfab_efa's
 * FI_EP_DGRAM under ofi_rxd also offers FI_EP_RDM): the first entry named
 * exactly -p, else the first.
 */
static struct fi_info *prefer_native(struct fi_info *list)
{
	struct fi_info *fi, *one;

	for (fi = list; fi; fi = fi->next)
		if (!strcmp(fi->fabric_attr->prov_name, opt_prov))
			break;
	if (!fi || fi == list)
		return list;
	one = fi_dupinfo(fi);
	if (!one)
		die("fi_dupinfo");
	fi_freeinfo(list);
	return one;
}

static int get_info_caps(const struct tcase *tc, uint64_t caps,
			 struct fi_info **out)
{
	static const struct {
		uint64_t caps, order;
	} extra[] = {
		{ FI_SOURCE, FI_ORDER_SAS }, { 0, FI_ORDER_SAS },
		{ FI_SOURCE, 0 }, { 0, 0 },
	};
	int rc = -FI_ENODATA;

	for (size_t i = 0; i < ARRAY_SIZE(extra) && rc == -FI_ENODATA; i++) {
		struct fi_info *hints = fi_allocinfo();

		if (!hints)
			die("fi_allocinfo");
		hints->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | caps |
			      extra[i].caps;
		hints->mode = FI_CONTEXT | FI_CONTEXT2;
		hints->ep_attr->type = FI_EP_RDM;
		hints->tx_attr->msg_order = extra[i].order;
		hints->rx_attr->msg_order = extra[i].order;
		/* RMA and atomic cases honour whatever of these comes back */
		hints->domain_attr->mr_mode =
			tc->cfg.mr_legacy ? tc->cfg.mr_legacy :
			caps & (FI_RMA | FI_ATOMIC) ?
			FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED :
			0;
		hints->domain_attr->threading = tc->cfg.threading ?
						tc->cfg.threading :
						FI_THREAD_DOMAIN;
		hints->domain_attr->data_progress = tc->cfg.auto_progress ?
						    FI_PROGRESS_AUTO :
						    FI_PROGRESS_MANUAL;
		hints->domain_attr->av_type = tc->cfg.av_type;
		if (tc->cfg.peek_hints) {
			hints->caps = FI_TAGGED;
			hints->mode = FI_CONTEXT;
			hints->tx_attr->msg_order = FI_ORDER_SAS;
			hints->rx_attr->msg_order = 0;
			hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
			hints->domain_attr->threading = FI_THREAD_UNSPEC;
			hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		}
		hints->fabric_attr->prov_name = strdup(opt_prov);
		rc = fi_getinfo(FI_VERSION(1, tc->cfg.api_minor ?
					      tc->cfg.api_minor :
					      FI_MINOR_VERSION),
				NULL, NULL, 0, hints, out);
		fi_freeinfo(hints);
	}
	if (!rc)
		*out = prefer_native(*out);
	return rc;
}

static int get_info(const struct tcase *tc, struct fi_info **out)
{
	int rc = -FI_ENODATA;

	if (tc->cfg.opt_caps)
		rc = get_info_caps(tc, tc->cfg.caps | tc->cfg.opt_caps, out);
	if (rc == -FI_ENODATA)
		rc = get_info_caps(tc, tc->cfg.caps, out);
	return rc;
}

static struct side *side_new(const struct tcase *tc, int rank, int nranks)
{
	struct side *s = xcalloc(1, sizeof(*s));

	s->tc = tc;
	s->rank = rank;
	s->nranks = nranks;
	s->tx.name = "transmit";
	s->rx.name = "receive";
	for (int r = 0; r < MAX_RANKS; r++) {
		s->ctl[r] = -1;
		s->addr[r] = FI_ADDR_NOTAVAIL;
	}
	return s;
}

static bool set_min_multi_recv(struct side *s, size_t min)
{
	return MUST(s, fi_setopt(&s->ep->fid, FI_OPT_ENDPOINT,
				 FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)),
		    "fi_setopt(FI_OPT_MIN_MULTI_RECV)");
}

/*
 * Initiator counters (FI_WRITE, FI_READ) and target ones (FI_REMOTE_WRITE,
 * FI_REMOTE_READ); fi_endpoint(3) lets a provider refuse the latter
 * without FI_RMA_EVENT: then they stay NULL and the bind's code is kept.
 */
static bool rma_cntrs_open(struct side *s)
{
	static const uint64_t bind[NRMA_CNTR] = {
		FI_WRITE, FI_READ, FI_REMOTE_WRITE, FI_REMOTE_READ,
	};
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };

	for (int i = 0; i < NRMA_CNTR; i++) {
		if (!MUST(s, fi_cntr_open(s->domain, &attr, &s->rma_cntr[i],
					  NULL), "fi_cntr_open"))
			return false;
		s->rma_cntr_rc[i] = fi_ep_bind(s->ep, &s->rma_cntr[i]->fid,
					       bind[i]);
		if (!s->rma_cntr_rc[i])
			continue;
		if (i < 2 && !MUST(s, s->rma_cntr_rc[i],
				   "fi_ep_bind(initiator RMA counter)"))
			return false;
		fi_close(&s->rma_cntr[i]->fid);
		s->rma_cntr[i] = NULL;
	}
	return true;
}

static bool side_open(struct side *s)
{
	const struct cfg *cfg = &s->tc->cfg;
	struct fi_av_attr av_attr = { .count = 16 };
	struct fi_cq_attr cq_attr = { .wait_obj = cfg->wait_obj };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };
	size_t min = cfg->min_multi_recv;
	bool min_late = min && known_gap("multirecv/setopt-before-enable");

	if (!s->info && !MUST(s, get_info(s->tc, &s->info), "%s: fi_getinfo",
			      s->tc->name))
		return false;
	if (cfg->sep)
		return MUST(s, fi_fabric(s->info->fabric_attr, &s->fabric,
					 NULL), "fi_fabric") &&
		       MUST(s, fi_domain(s->fabric, s->info, &s->domain, NULL),
			    "fi_domain");
	av_attr.type = cfg->av_type ? cfg->av_type :
		       s->info->domain_attr->av_type;
	cq_attr.format = cfg->cq_format ? cfg->cq_format :
			 FI_CQ_FORMAT_TAGGED;
	s->cq_format = cq_attr.format;
	s->info->tx_attr->op_flags |= cfg->tx_op_flags;
	if (!MUST(s, fi_fabric(s->info->fabric_attr, &s->fabric, NULL),
		  "fi_fabric") ||
	    !MUST(s, fi_domain(s->fabric, s->info, &s->domain, NULL),
		  "fi_domain") ||
	    !MUST(s, fi_av_open(s->domain, &av_attr, &s->av, NULL),
		  "fi_av_open") ||
	    !MUST(s, fi_cq_open(s->domain, &cq_attr, &s->tx.cq, &s->tx),
		  "fi_cq_open") ||
	    !MUST(s, fi_cq_open(s->domain, &cq_attr, &s->rx.cq, &s->rx),
		  "fi_cq_open") ||
	    !MUST(s, fi_endpoint(s->domain, s->info, &s->ep, NULL),
		  "fi_endpoint") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->av->fid, 0), "fi_ep_bind(av)") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->tx.cq->fid,
				FI_TRANSMIT | cfg->tx_bind),
		  "fi_ep_bind(transmit cq)") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->rx.cq->fid, FI_RECV),
		  "fi_ep_bind(receive cq)") ||
	    (cfg->cntrs &&
	     (!MUST(s, fi_cntr_open(s->domain, &cntr_attr, &s->scntr,
				    &s->scntr), "fi_cntr_open") ||
	      !MUST(s, fi_cntr_open(s->domain, &cntr_attr, &s->rcntr,
				    &s->rcntr), "fi_cntr_open") ||
	      !MUST(s, fi_ep_bind(s->ep, &s->scntr->fid, FI_SEND),
		    "fi_ep_bind(send counter)") ||
	      !MUST(s, fi_ep_bind(s->ep, &s->rcntr->fid, FI_RECV),
		    "fi_ep_bind(receive counter)"))) ||
	    (cfg->rma_cntrs && !rma_cntrs_open(s)) ||
	    (min && !min_late && !set_min_multi_recv(s, min)) ||
	    !MUST(s, fi_enable(s->ep), "fi_enable") ||
	    (min_late && !set_min_multi_recv(s, min)))
		return false;
	s->av_type = av_attr.type ? av_attr.type :
		     s->info->domain_attr->av_type;
	s->namelen[s->rank] = ADDR_MAX;
	return MUST(s, fi_getname(&s->ep->fid, s->name[s->rank],
				  &s->namelen[s->rank]),
		    "fi_getname");
}

static void send_name(struct side *s, int to, int whose)
{
	step_to(s, to, STEP_NAME, whose, s->name[whose], s->namelen[whose]);
}

static bool take_name(struct side *s, int from)
{
	struct ctl_msg m;

	if (!ctl_wait(s, from, STEP_NAME, &m))
		return false;
	if (m.a >= (uint64_t)s->nranks || m.len > ADDR_MAX)
		die("bad name message");
	memcpy(s->name[m.a], m.blob, m.len);
	s->namelen[m.a] = m.len;
	return true;
}

/* Every rank learns every rank's name, through rank 0, and inserts them. */
static bool side_exchange(struct side *s)
{
	if (s->rank) {
		send_name(s, 0, s->rank);
		for (int r = 0; r < s->nranks; r++)
			if (!take_name(s, 0))
				return false;
	} else {
		for (int r = 1; r < s->nranks; r++)
			if (!take_name(s, r))
				return false;
		for (int r = 1; r < s->nranks; r++)
			for (int k = 0; k < s->nranks; k++)
				send_name(s, r, k);
	}
	if (s->tc->cfg.manual_av)
		return true;
	for (int r = 0; r < s->nranks; r++)
		if (r != s->rank && !av_insert_rank(s, r))
			return false;
	return true;
}

/* All ranks alive have got here. */
static bool barrier(struct side *s)
{
	if (s->rank) {
		step_to(s, 0, STEP_BARRIER, 0, NULL, 0);
		return ctl_wait(s, 0, STEP_BARRIER, NULL);
	}
	for (int r = 1; r < s->nranks; r++)
		if (!s->may_die[r] && !ctl_wait(s, r, STEP_BARRIER, NULL))
			return false;
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_BARRIER, 0, NULL, 0);
	return true;
}

static void side_close(struct side *s)
{
#define FID(x)	((x) ? &(x)->fid : NULL)
	struct fid *fids[] = {
		FID(s->ep), FID(s->win[0].mr), FID(s->win[1].mr),
		FID(s->win[2].mr), FID(s->rx.cq), FID(s->tx.cq),
		FID(s->scntr), FID(s->rcntr), FID(s->rma_cntr[0]),
		FID(s->rma_cntr[1]), FID(s->rma_cntr[2]), FID(s->rma_cntr[3]),
		FID(s->av), FID(s->domain), FID(s->fabric),
	};
#undef FID
	static const char *const names[] = {
		"endpoint", "MR", "MR", "MR", "receive CQ", "transmit CQ",
		"send counter", "receive counter", "write counter",
		"read counter", "remote write counter", "remote read counter",
		"AV", "domain", "fabric",
	};

	for (size_t i = 0; i < ARRAY_SIZE(fids); i++) {
		int rc = fids[i] ? fi_close(fids[i]) : 0;

		if (rc)
			report(s, false, __LINE__, NULL, "%s: fi_close(%s): %s",
			       s->tc->name, names[i], fi_strerror(-rc));
	}
	s->ep = NULL;
	s->tx.cq = s->rx.cq = NULL;
	for (int w = 0; w < NWIN; w++) {
		free(s->win[w].b.mem);
		free(s->win[w].img);
	}
	for (size_t i = 0; i < s->ndeferred; i++)
		free(s->deferred[i]);
	free(s->deferred);
	while (s->pool) {
		struct ctx_pool *p = s->pool;

		s->pool = p->next;
		free(p);
	}
	free(s->tx.v);
	free(s->rx.v);
	fi_freeinfo(s->info);
}

/* What every rank does for a case. */
static void side_run(struct side *s)
{
	if (side_open(s) && (s->tc->cfg.sep || side_exchange(s))) {
		s->tc->run(s);
		if (!s->abort && barrier(s)) {
			char why[256] = "";

			progress_for(s, SETTLE_MS);
			if (s->tx.n + s->rx.n)
				comp_str(s->tx.n ? &s->tx.v[s->tx.head] :
						   &s->rx.v[s->rx.head],
					 why, sizeof(why));
			else if (s->cq_overruns)
				snprintf(why, sizeof(why),
					 "fi_cq_read wrote past %zu-byte entries",
					 cq_entry_size(s->cq_format));
			CHECK_WHY(s, !s->tx.n && !s->rx.n && !s->cq_overruns,
				  why,
				  "%s: no stray completions, entries of the format's size",
				  s->tc->name);
		}
	}
	side_close(s);
}

/* ---- processes ---- */

/* Each case runs on every rank; its function opens with what it checks. */
static const struct tcase cases[] = {
	{ .name = "sizes", .run = case_sizes, .nranks = 2,
	  .desc = "every size, msg and tagged, posted and unexpected" },
	{ .name = "vector", .run = case_vector, .nranks = 2,
	  .desc = "sendv/recvv, sendmsg/recvmsg, tagged forms, 1..4 iovs" },
	{ .name = "inject", .run = case_inject, .nranks = 2,
	  .desc = "inject, injectdata, tinject, tinjectdata; sendmsg and tsendmsg FI_INJECT|FI_COMPLETION; senddata" },
	{ .name = "inject_opflags", .run = case_inject_opflags, .nranks = 2,
	  .desc = "inject and tinject take the op flags but the completion ones: FI_DELIVERY_COMPLETE does not hold them",
	  .cfg = { .cntrs = true, .tx_op_flags = FI_DELIVERY_COMPLETE } },
	{ .name = "tagmatch", .run = case_tagmatch, .nranks = 2,
	  .desc = "tags, ignore bits, permuted receives, same-tag order" },
	{ .name = "directed", .run = case_directed, .nranks = 3,
	  .cfg = { .caps = FI_DIRECTED_RECV },
	  .desc = "FI_DIRECTED_RECV with two senders" },
	{ .name = "multirecv", .run = case_multirecv, .nranks = 2,
	  .cfg = { .caps = FI_MULTI_RECV, .min_multi_recv = MULTI_MIN },
	  .desc = "FI_MULTI_RECV and FI_OPT_MIN_MULTI_RECV" },
	{ .name = "peek", .run = case_peek, .nranks = 2,
	  .desc = "FI_PEEK, FI_CLAIM, FI_DISCARD" },
	{ .name = "tpeek", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .kfab_offers = true },
	  .desc = "peek with fi_rdm_tagged_peek's hints, FI_WAIT_UNSPEC CQs" },
	{ .name = "tpeek_basic", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .api_minor = 4, .mr_legacy = FI_MR_BASIC,
		   .kfab_offers = true },
	  .desc = "tpeek at API 1.4, mr_mode FI_MR_BASIC" },
	{ .name = "tpeek_scalable", .run = case_peek, .nranks = 2,
	  .cfg = { .peek_hints = true, .wait_obj = FI_WAIT_UNSPEC,
		   .api_minor = 4, .mr_legacy = FI_MR_SCALABLE,
		   .kfab_offers = true },
	  .desc = "tpeek at API 1.4, mr_mode FI_MR_SCALABLE" },
	{ .name = "cancel", .run = case_cancel, .nranks = 2,
	  .desc = "fi_cancel of posted and of completed receives" },
	{ .name = "selective", .run = case_selective, .nranks = 2,
	  .cfg = { .tx_bind = FI_SELECTIVE_COMPLETION },
	  .desc = "FI_SELECTIVE_COMPLETION on the transmit CQ" },
	{ .name = "compsem", .run = case_compsem, .nranks = 2,
	  .desc = "FI_INJECT/TRANSMIT/DELIVERY_COMPLETE" },
	{ .name = "av_table", .run = case_av, .nranks = 3,
	  .cfg = { .av_type = FI_AV_TABLE, .manual_av = true },
	  .desc = "FI_AV_TABLE: indices, lookup, FI_SOURCE, remove" },
	{ .name = "av_map", .run = case_av, .nranks = 3,
	  .cfg = { .av_type = FI_AV_MAP, .manual_av = true },
	  .desc = "FI_AV_MAP: lookup, FI_SOURCE, remove" },
	{ .name = "cq_context", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_CONTEXT },
	  .desc = "FI_CQ_FORMAT_CONTEXT" },
	{ .name = "cq_msg", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_MSG },
	  .desc = "FI_CQ_FORMAT_MSG" },
	{ .name = "cq_data", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_DATA },
	  .desc = "FI_CQ_FORMAT_DATA" },
	{ .name = "cq_tagged", .run = case_cqfmt, .nranks = 2,
	  .cfg = { .cq_format = FI_CQ_FORMAT_TAGGED },
	  .desc = "FI_CQ_FORMAT_TAGGED" },
	{ .name = "threads", .run = case_threads, .nranks = 2,
	  .cfg = { .threading = FI_THREAD_SAFE },
	  .desc = "FI_THREAD_SAFE: two sending threads, one CQ reader" },
	{ .name = "window", .run = case_window, .nranks = 2,
	  .desc = "10000 messages, 256 in flight; a flood past -FI_EAGAIN" },
	{ .name = "stress", .run = case_stress, .nranks = 2,
	  .desc = "-n messages of the -s sizes: once, in order, in -T s" },
	{ .name = "deadpeer", .run = case_deadpeer, .nranks = 3,
	  .cfg = { .caps = FI_DIRECTED_RECV }, .kfab_only = true,
	  .desc = "a peer killed with operations pending to it" },
	{ .name = "cntr", .run = case_cntr, .nranks = 2,
	  .cfg = { .tx_bind = FI_SELECTIVE_COMPLETION, .cntrs = true },
	  .desc = "counters: every send and receive, errors, fi_cntr_wait" },
	{ .name = "waitfd", .run = case_waitfd, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_FD, .threading = FI_THREAD_SAFE },
	  .desc = "FI_WAIT_FD: FI_GETWAIT and poll, sread, signal, trywait" },
	{ .name = "signal", .run = case_signal, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_UNSPEC },
	  .desc = "FI_WAIT_UNSPEC: fi_cq_signal, then fi_cq_sread returns" },
	{ .name = "poll", .run = case_poll, .nranks = 2,
	  .cfg = { .cntrs = true },
	  .desc = "poll sets: fi_poll_open, fi_poll_add, fi_poll, fi_poll_del" },
	{ .name = "sleep", .run = case_sleep, .nranks = 2,
	  .cfg = { .wait_obj = FI_WAIT_FD }, .kfab_only = true,
	  .desc = "fi_cq_sread sleeps: CPU use and wake latency" },
	{ .name = "auto", .run = case_auto, .nranks = 2,
	  .cfg = { .auto_progress = true }, .kfab_only = true,
	  .desc = "FI_PROGRESS_AUTO: a rendezvous while the receiver sleeps" },
	{ .name = "rma_write", .run = case_rma_write, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "write, writev, writemsg, inject_write, 1 B..4 MiB" },
	{ .name = "rma_basic", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_BASIC,
		   .kfab_offers = true },
	  .desc = "mr_mode FI_MR_BASIC: provider keys, virtual addresses" },
	{ .name = "rma_basic14", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_BASIC,
		   .api_minor = 4, .kfab_offers = true },
	  .desc = "API 1.4, FI_MR_BASIC: provider keys, virtual addresses" },
	{ .name = "rma_scalable", .run = case_rma_legacy, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .mr_legacy = FI_MR_SCALABLE },
	  .desc = "mr_mode FI_MR_SCALABLE: application keys, offsets" },
	{ .name = "rma_read", .run = case_rma_read, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "read, readv, readmsg, 1 B..4 MiB" },
	{ .name = "rma_data", .run = case_rma_data, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "writedata: target CQ data, no receive consumed" },
	{ .name = "rma_errors", .run = case_rma_errors, .nranks = 2,
	  .cfg = { .caps = FI_RMA },
	  .desc = "RMA to memory it may not touch: error, target untouched" },
	{ .name = "rma_cntr", .run = case_rma_cntr, .nranks = 2,
	  .cfg = { .caps = FI_RMA, .rma_cntrs = true },
	  .desc = "FI_WRITE, FI_READ, FI_REMOTE_* counters" },
	{ .name = "atomic", .run = case_atomic, .nranks = 2,
	  .cfg = { .caps = FI_ATOMIC },
	  .desc = "every valid datatype x op x kind against a reference" },
	{ .name = "atomic_concurrent", .run = case_atomic_concurrent,
	  .nranks = 3, .cfg = { .caps = FI_ATOMIC },
	  .desc = "two ranks increment one word: exact sums, fetched once" },
	{ .name = "rma_deadpeer", .run = case_rma_deadpeer, .nranks = 2,
	  .cfg = { .caps = FI_RMA }, .kfab_only = true,
	  .desc = "RMA to a killed peer completes in error" },
	{ .name = "jobs", .run = case_jobs, .nranks = 2,
	  .cfg = { .manual_av = true, .other_job = true }, .kfab_only = true,
	  .only = "kfab_opx",
	  .desc = "ranks of different FI_OPX_UUID cannot talk" },
	{ .name = "sep", .run = case_sep, .nranks = 2,
	  .cfg = { .caps = FI_NAMED_RX_CTX, .opt_caps = FI_RMA,
		   .threading = FI_THREAD_FID, .sep = true },
	  .desc = "scalable endpoint: named rx contexts, each with its CQ" },
	{ .name = "sep_first", .run = case_sep_first, .nranks = 2,
	  .cfg = { .caps = FI_NAMED_RX_CTX, .opt_caps = FI_RMA,
		   .sep = true },
	  .desc = "scalable endpoint enabled before its contexts; an rx context without a CQ" },
};
static const size_t ncases = ARRAY_SIZE(cases);

static char wd_msg[200];
static size_t wd_len;
static pid_t wd_pid[MAX_RANKS];

static void watchdog(int sig)
{
	ssize_t n = write(STDOUT_FILENO, wd_msg, wd_len);

	(void)sig;
	(void)n;
	for (int r = 1; r < MAX_RANKS; r++)
		if (wd_pid[r] > 0)
			kill(wd_pid[r], SIGKILL);
	_exit(1);
}

static int case_budget(const struct tcase *tc)
{
	int s = 120;

	if (tc->run == case_stress)
		s = opt_stress_s + 60;
	if (opt_wait_ms > 10000)
		s = s * (opt_wait_ms / 10000 + 1);
	return s;
}

/* FI_OPX_UUID for a rank of another job: rank 0's, last digit changed. */
static void other_job_env(char *buf, size_t size)
{
	const char *uuid = getenv("FI_OPX_UUID");
	size_t n;

	snprintf(buf, size, "FI_OPX_UUID=%s", uuid && *uuid ? uuid : OPX_UUID);
	n = strlen(buf);
	buf[n - 1] = buf[n - 1] == '0' ? '1' : '0';
}

static void spawn(struct side *s, int r)
{
	char spec[96], t[16], n[24], T[16], env[96];
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		die("socketpair: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		fcntl(sv[1], F_SETFD, 0);
		snprintf(spec, sizeof(spec), "%s:%d:%d:%d", s->tc->name, r,
			 s->nranks, sv[1]);
		snprintf(t, sizeof(t), "%d", opt_wait_ms);
		snprintf(n, sizeof(n), "%lu", opt_count);
		snprintf(T, sizeof(T), "%d", opt_stress_s);
		if (s->tc->cfg.other_job && r == 1) {
			other_job_env(env, sizeof(env));
			putenv(env);
		}
		execl("/proc/self/exe", "fi_msg_test", "-p", opt_prov, "-t", t,
		      "-n", n, "-s", opt_sizes, "-T", T, "-P", spec,
		      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	s->ctl[r] = sv[0];
	s->pid[r] = wd_pid[r] = pid;
}

/* Rank 0: wait for each peer to finish and check how it exited. */
static void reap(struct side *s)
{
	for (int r = 1; r < s->nranks; r++) {
		uint64_t end = now_ms() + opt_wait_ms;
		int status = 0;
		pid_t w;

		while (!s->gone[r] && now_ms() < end) {
			ctl_poll(s);
			ctl_sleep(s, 5);
		}
		while ((w = waitpid(s->pid[r], &status, WNOHANG)) == 0 &&
		       now_ms() < end)
			usleep(1000);
		if (w == 0) {
			kill(s->pid[r], SIGKILL);
			waitpid(s->pid[r], &status, 0);
			report(s, false, __LINE__, NULL,
			       "%s: rank %d did not exit; killed", s->tc->name,
			       r);
		} else if (!s->may_die[r] &&
			   (!WIFEXITED(status) || WEXITSTATUS(status))) {
			report(s, false, __LINE__, NULL,
			       "%s: rank %d exited with %s %d", s->tc->name, r,
			       WIFEXITED(status) ? "status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) :
						   WTERMSIG(status));
		}
		close(s->ctl[r]);
		wd_pid[r] = 0;
	}
}

static void run_case(const struct tcase *tc)
{
	struct fi_info *info = NULL;
	const char *why = known_gap(tc->name);
	struct side *s;
	char need[256];
	int rc;

	if (why) {
		tap_skip("%s: %s: %s", tc->name, opt_prov, why);
		return;
	}
	if (tc->kfab_only && strncmp(opt_prov, "kfab_", 5) && !opt_force) {
		tap_skip("%s: for kfab_* providers only (-f runs it)",
			 tc->name);
		return;
	}
	if (tc->only && strcmp(opt_prov, tc->only) && !opt_force) {
		tap_skip("%s: for %s only: other providers have no job key (-f runs it)",
			 tc->name, tc->only);
		return;
	}
	rc = get_info(tc, &info);
	if (rc == -FI_ENODATA && tc->cfg.kfab_offers &&
	    !strncmp(opt_prov, "kfab_", 5)) {
		TAP_OK(0, "%s: fi_getinfo: %s must match these hints",
		       tc->name, opt_prov);
		return;
	}
	if (rc == -FI_ENODATA) {
		snprintf(need, sizeof(need), " %s%s%s",
			 fi_tostr(&tc->cfg.caps, FI_TYPE_CAPS),
			 tc->cfg.threading == FI_THREAD_SAFE ?
			 " FI_THREAD_SAFE" :
			 tc->cfg.threading == FI_THREAD_FID ?
			 " FI_THREAD_FID" : "",
			 tc->cfg.av_type == FI_AV_TABLE ? " FI_AV_TABLE" :
			 tc->cfg.av_type == FI_AV_MAP ? " FI_AV_MAP" : "");
		tap_skip("%s: %s lacks%s (fi_getinfo: FI_ENODATA)", tc->name,
			 opt_prov, need);
		return;
	}
	if (rc) {
		TAP_OK(0, "%s: fi_getinfo: %s", tc->name, fi_strerror(-rc));
		return;
	}
	tap_diag("---- %s: %s", tc->name, tc->desc);
	if (!(info->caps & FI_SOURCE))
		tap_diag("%s: no FI_SOURCE: sources are not checked", tc->name);
	s = side_new(tc, 0, tc->nranks);
	s->info = info;
	snprintf(wd_msg, sizeof(wd_msg),
		 "Bail out! %s: still running after %d s: hung in a libfabric call?\n",
		 tc->name, case_budget(tc));
	wd_len = strlen(wd_msg);
	signal(SIGALRM, watchdog);
	alarm(case_budget(tc));
	for (int r = 1; r < tc->nranks; r++)
		spawn(s, r);
	side_run(s);
	reap(s);
	alarm(0);
	free(s);
}

/* A peer: "-P case:rank:nranks:fd". */
static int peer_main(const char *spec)
{
	char name[64];
	int rank, nranks, fd;
	struct ctl_msg m = { .type = CTL_DONE };
	struct side *s;
	size_t i;

	if (sscanf(spec, "%63[^:]:%d:%d:%d", name, &rank, &nranks, &fd) != 4)
		return 1;
	for (i = 0; i < ncases; i++)
		if (!strcmp(cases[i].name, name))
			break;
	if (i == ncases || rank < 1 || rank >= nranks || nranks > MAX_RANKS)
		return 1;
	alarm(case_budget(&cases[i]) + 30);
	s = side_new(&cases[i], rank, nranks);
	s->ctl[0] = fd;
	side_run(s);
	ctl_send(s, 0, &m);
	free(s);
	return 0;
}

static bool parse_sizes(const char *arg)
{
	stress_nsizes = 0;
	while (*arg) {
		char *end;
		unsigned long long v = strtoull(arg, &end, 0);

		if (end == arg || stress_nsizes == ARRAY_SIZE(stress_sizes))
			return false;
		if (*end == 'k' || *end == 'K')
			v *= KIB, end++;
		else if (*end == 'm' || *end == 'M')
			v *= MIB, end++;
		stress_sizes[stress_nsizes++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return false;
		arg = end;
	}
	return stress_nsizes > 0;
}

static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p; p += strcspn(p, ",")) {
		p += *p == ',';
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: fi_msg_test [-p PROV] [-c CASE,...] [-l] [-f] [-t MS] [-n COUNT] [-s SIZES] [-T SEC]\n");
	exit(1);
}


int main(int argc, char **argv)
{
	const char *only = NULL, *peer = NULL, *env;
	struct fi_info *info = NULL;
	bool list = false;
	int c, rc;

	opt_prov = getenv("FI_PROVIDER");
	if (!opt_prov || !*opt_prov)
		opt_prov = "kfab_opx";
	env = getenv("FI_MSG_TEST_COUNT");
	if (env && *env)
		opt_count = strtoul(env, NULL, 0);
	env = getenv("FI_MSG_TEST_SIZES");
	if (env && *env)
		opt_sizes = env;
	env = getenv("FI_MSG_TEST_TIME");
	if (env && *env)
		opt_stress_s = atoi(env);
	while ((c = getopt(argc, argv, "p:c:lft:n:s:T:P:")) != -1) {
		switch (c) {
		case 'p':
			opt_prov = optarg;
			break;
		case 'c':
			only = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'f':
			opt_force = true;
			break;
		case 't':
			opt_wait_ms = atoi(optarg);
			break;
		case 'n':
			opt_count = strtoul(optarg, NULL, 0);
			break;
		case 's':
			opt_sizes = optarg;
			break;
		case 'T':
			opt_stress_s = atoi(optarg);
			break;
		case 'P':
			peer = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind < argc || opt_wait_ms <= 0 || !opt_count ||
	    opt_count > UINT32_MAX || opt_stress_s <= 0 ||
	    !parse_sizes(opt_sizes))
		usage();
	if (known_gap("flags/tagged-msg"))
		slack_tagged = FI_MSG;
	if (known_gap("flags/send-data"))
		slack_send = FI_REMOTE_CQ_DATA;
	if (peer)
		return peer_main(peer);
	if (list) {
		for (size_t i = 0; i < ncases; i++)
			printf("%-17s %d ranks  %s\n", cases[i].name,
			       cases[i].nranks, cases[i].desc);
		return 0;
	}
	for (const char *p = only; p && *p; p += strcspn(p, ",")) {
		size_t i, n;

		p += *p == ',';
		n = strcspn(p, ",");
		for (i = 0; i < ncases; i++)
			if (strlen(cases[i].name) == n &&
			    !strncmp(p, cases[i].name, n))
				break;
		if (i == ncases)
			usage();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_start("fi_msg_test: libfabric FI_EP_RDM messaging");
	rc = get_info(&(struct tcase){ .name = "probe" }, &info);
	env = getenv("FI_PROVIDER");
	if (rc == -FI_ENODATA)
		tap_skip_all("provider %s not available%s", opt_prov,
			     env && strcmp(env, opt_prov) ?
			     " (FI_PROVIDER is set to another)" : "");
	if (rc)
		die("fi_getinfo(%s): %s", opt_prov, fi_strerror(-rc));
	tap_diag("provider %s (%s %u.%u), inject_size %zu, max_msg_size %zu, cq_data_size %zu, iov_limit %zu",
		 opt_prov, info->fabric_attr->prov_name,
		 FI_MAJOR(info->fabric_attr->prov_version),
		 FI_MINOR(info->fabric_attr->prov_version),
		 info->tx_attr->inject_size, info->ep_attr->max_msg_size,
		 info->domain_attr->cq_data_size, info->tx_attr->iov_limit);
	fi_freeinfo(info);
	for (const struct known_gap *g = known_gaps; g->prov; g++)
		if (!strncmp(opt_prov, g->prov, strlen(g->prov)))
			tap_diag("known gap %s: %s", g->what, g->why);
	for (size_t i = 0; i < ncases; i++)
		if (!only || selected(only, cases[i].name))
			run_case(&cases[i]);
	return tap_done();
}
