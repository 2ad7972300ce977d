// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_demo: two processes of one job talk over two emulated HFI units
 * through the raw uapi, with no library in between.
 *
 *   A (unit 0)                               B (unit 1)
 *   assign context, map own queues           assign context, map own queues
 *              <-- pipes: LID + context number -->
 *   MAP_PEER B, map B's queues               MAP_PEER A, map A's queues
 *                                            arm, sleep on eventfd
 *   produce "hello" into B's RHQ, NOTIFY --> wake, consume
 *                                        <-- TID-register 1 MiB, send handle
 *   SDMA 1 MiB into the TID (SDMA_NOTIFY)--> wake
 *   send "sdma done"                     --> verify every byte
 *   ping-pong, polling, then sleeping    <->
 *   print the units' counters, then both exit
 *
 * The queue protocol is the one in the top comment of uapi/kfab_hfi.h; the
 * step numbers in the comments below are the ones used there.
 *
 * Usage: kfab_demo [UNIT_A UNIT_B]   (default 0 1)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
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
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <uuid/uuid.h>

#include "uapi/kfab_hfi.h"

#define SDMA_BYTES	(1U << 20)	/* the TID buffer and one SDMA */
#define SDMA_REPEAT	32		/* SDMAs timed for the bandwidth */
#define HELLO_BYTES	4096		/* eager payload of the first packet */
#define RTT_POLL	1000		/* round trips with both sides polling */
#define RTT_SLEEP	100		/* round trips with B asleep each time */
#define DEMO_TIMEOUT	300		/* seconds before a stuck side gives up */

enum msg_type {
	MSG_HELLO = 1,
	MSG_TID,		/* B -> A: tid, len of the TID buffer */
	MSG_SDMA_DONE,		/* A -> B: len bytes copied */
	MSG_PING,
	MSG_PONG,
	MSG_BYE,
};

/* Our format of the provider-owned part of an RHQ entry. */
struct demo_msg {
	uint32_t type;
	uint32_t tid;
	uint64_t len;
	uint64_t seq;
	char text[88];
};

_Static_assert(sizeof(struct demo_msg) == KFAB_HFI_RHQ_HDR_BYTES,
	       "demo_msg fills the RHQ header area");

/* One receive queue as mapped: our own or a peer's. */
struct queue {
	struct kfab_hfi_ctrl *kctrl;
	struct kfab_hfi_rhq_entry *krhq;
	uint8_t *keager;
	uint32_t rhq_entries;
	uint32_t eager_count;
	uint32_t eager_size;
};

struct endpoint {
	const char *name;	/* "A" or "B" */
	unsigned int unit;
	char dev[32];
	int fd;
	int efd;
	struct kfab_hfi_ctxt_info info;
	const struct kfab_hfi_status *kstatus;
	struct queue rx;	/* our own context: we consume */
	uint32_t rh, eh;	/* consumer heads of rx */
	struct queue tx;	/* the peer's context: we produce */
	uint32_t peer;		/* MAP_PEER handle */
	unsigned int wakeups;	/* eventfd wakeups seen */
	int to_peer, from_peer;	/* pipes */
};

/* Where a unit's address travels between the two processes. */
struct addr {
	uint32_t lid;
	uint32_t ctxt;
};

static const char *const counters[] = {
	"ctxts_assigned", "tid_pages_pinned", "tid_regions", "sdma_requests",
	"sdma_bytes", "notifies", "rhq_full_drops", "eager_full_drops",
	"injected_drops",
};

#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static long long before[2][NCOUNTERS];

/* Pointers into shared memory as C11 atomics. */
#define A32(p) ((_Atomic uint32_t *)(void *)(p))
#define A64(p) ((_Atomic uint64_t *)(void *)(p))

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("kfab_demo: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* An ioctl failed: say what it means for this demo. */
static void die_ioctl(const struct endpoint *ep, const char *what, int err)
{
	const char *hint = "";
	char buf[160] = "";

	switch (err) {
	case ENETDOWN:
		snprintf(buf, sizeof(buf),
			 " — is unit %u (or its peer) Down? echo Active > /sys/class/kfab/hfi%u/state",
			 ep->unit, ep->unit);
		hint = buf;
		break;
	case EBUSY:
		snprintf(buf, sizeof(buf),
			 " — no free context: cat /sys/class/kfab/hfi%u/nfreectxts",
			 ep->unit);
		hint = buf;
		break;
	case EACCES:
		hint = " — the jkeys or pkeys differ: both sides need the same user, UUID and pkey";
		break;
	case ENOMEM:
		hint = " — out of memory, or RLIMIT_MEMLOCK too low (ulimit -l)";
		break;
	case ENOSPC:
		hint = " — pin_limit_mb of kfab_hfi exceeded";
		break;
	case ENOTTY:
		hint = " — the loaded kfab_hfi does not know this ioctl: rebuild and reload the modules";
		break;
	case ECONNRESET:
		hint = " — the peer context was released (did the other side die?)";
		break;
	}
	die("%s on %s: %s%s", what, ep->dev, strerror(err), hint);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)((i * 131 + 7) ^ (i >> 12));
}

static long long read_counter(unsigned int unit, const char *name)
{
	char path[128];
	long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kfab/hfi%u/counters/%s",
		 unit, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void read_attr(unsigned int unit, const char *name, char *buf,
		      size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kfab/hfi%u/%s", unit, name);
	snprintf(buf, len, "-");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void *map(struct endpoint *ep, uint64_t off, size_t len, int prot,
		 const char *what)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, ep->fd, (off_t)off);

	if (p == MAP_FAILED)
		die("mmap of %s (%zu bytes at 0x%" PRIx64 ") on %s: %s",
		    what, len, off, ep->dev, strerror(errno));
	return p;
}

static void xwrite(int fd, const void *buf, size_t len)
{
	if (write(fd, buf, len) != (ssize_t)len)
		die("pipe write: %s", strerror(errno));
}

static void xread(int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	if (n != (ssize_t)len)
		die("pipe read: %s", n < 0 ? strerror(errno) : "the other side exited");
}

/* Open the unit, assign a context of the job, map our own queues. */
static void ep_open(struct endpoint *ep, const uuid_t uuid)
{
	struct kfab_hfi_version ver;
	struct kfab_hfi_assign as;
	struct kfab_hfi_eventfd ev;
	long pg = sysconf(_SC_PAGESIZE);

	snprintf(ep->dev, sizeof(ep->dev), "/dev/kfab_hfi%u", ep->unit);
	ep->fd = open(ep->dev, O_RDWR | O_CLOEXEC);
	if (ep->fd < 0) {
		int err = errno;

		die("%s: %s%s", ep->dev, strerror(err),
		    err == ENOENT ? " — is kfab_hfi loaded? ('make demo' loads it in a VM)" : "");
	}

	memset(&ver, 0, sizeof(ver));
	if (ioctl(ep->fd, KFAB_HFI_IOC_GET_VERSION, &ver))
		die_ioctl(ep, "GET_VERSION", errno);
	if (ver.abi_version != KFAB_ABI_VERSION)
		die("%s speaks ABI %u, this demo was built for ABI %u",
		    ep->dev, ver.abi_version, KFAB_ABI_VERSION);

	memset(&as, 0, sizeof(as));
	memcpy(as.uuid, uuid, sizeof(as.uuid));
	as.pkey = KFAB_HFI_PKEY_DEFAULT;
	if (ioctl(ep->fd, KFAB_HFI_IOC_ASSIGN_CTXT, &as))
		die_ioctl(ep, "ASSIGN_CTXT", errno);
	ep->info = as.info;

	ep->rx.rhq_entries = ep->info.rhq_entries;
	ep->rx.eager_count = ep->info.eager_count;
	ep->rx.eager_size = ep->info.eager_size;
	ep->rx.kctrl = map(ep, ep->info.ctrl_offset, (size_t)pg,
			   PROT_READ | PROT_WRITE, "ctrl");
	ep->rx.krhq = map(ep, ep->info.rhq_offset,
			  (size_t)ep->info.rhq_entries * ep->info.rhq_entry_size,
			  PROT_READ | PROT_WRITE, "rhq");
	ep->rx.keager = map(ep, ep->info.eager_offset,
			    (size_t)ep->info.eager_count * ep->info.eager_size,
			    PROT_READ | PROT_WRITE, "eager");
	ep->kstatus = map(ep, ep->info.status_offset, (size_t)pg, PROT_READ,
			  "status");

	ep->efd = eventfd(0, EFD_CLOEXEC);
	if (ep->efd < 0)
		die("eventfd: %s", strerror(errno));
	memset(&ev, 0, sizeof(ev));
	ev.fd = ep->efd;
	if (ioctl(ep->fd, KFAB_HFI_IOC_SET_EVENTFD, &ev))
		die_ioctl(ep, "SET_EVENTFD", errno);

	printf("%s: %s context %u, LID %u, jkey 0x%04x, rhq %u x %u B, eager %u x %u B, link %s\n",
	       ep->name, ep->dev, ep->info.ctxt, ep->info.lid, ep->info.jkey,
	       ep->info.rhq_entries, ep->info.rhq_entry_size,
	       ep->info.eager_count, ep->info.eager_size,
	       ep->kstatus->state == KFAB_HFI_STATE_ACTIVE ? "Active" : "Down");
}

/* Swap addresses with the other process, map its queues. */
static void ep_connect(struct endpoint *ep)
{
	struct addr mine = { ep->info.lid, ep->info.ctxt }, theirs;
	struct kfab_hfi_map_peer mp;
	long pg = sysconf(_SC_PAGESIZE);

	xwrite(ep->to_peer, &mine, sizeof(mine));
	xread(ep->from_peer, &theirs, sizeof(theirs));

	memset(&mp, 0, sizeof(mp));
	mp.lid = theirs.lid;
	mp.ctxt = theirs.ctxt;
	if (ioctl(ep->fd, KFAB_HFI_IOC_MAP_PEER, &mp))
		die_ioctl(ep, "MAP_PEER", errno);
	ep->peer = mp.peer;
	ep->tx.rhq_entries = mp.rhq_entries;
	ep->tx.eager_count = mp.eager_count;
	ep->tx.eager_size = mp.eager_size;
	ep->tx.kctrl = map(ep, mp.ctrl_offset, (size_t)pg,
			   PROT_READ | PROT_WRITE, "peer ctrl");
	ep->tx.krhq = map(ep, mp.rhq_offset,
			  (size_t)mp.rhq_entries * mp.rhq_entry_size,
			  PROT_READ | PROT_WRITE, "peer rhq");
	ep->tx.keager = map(ep, mp.eager_offset,
			    (size_t)mp.eager_count * mp.eager_size,
			    PROT_READ | PROT_WRITE, "peer eager");
}

/*
 * Producer side of the queue protocol: put one packet into the peer's RHQ
 * (and its payload into an eager buffer).  Returns true if the peer was
 * armed and got a NOTIFY.
 */
static bool produce(struct endpoint *ep, const struct demo_msg *msg,
		    const void *payload, uint32_t len)
{
	struct queue *q = &ep->tx;
	_Atomic uint64_t *ktail = A64(&q->kctrl->tail);
	_Atomic uint64_t *khead = A64(&q->kctrl->head);
	_Atomic uint32_t *karmed = A32(&q->kctrl->armed);
	struct kfab_hfi_rhq_entry *e;
	uint32_t lo, hi, carry = len ? 1 : 0;
	uint64_t t, h, nt;

	if (len > q->eager_size)
		die("%s: payload of %u B exceeds eager_size", ep->name, len);
	if (atomic_load_explicit(A32(&q->kctrl->dead), memory_order_relaxed))
		die("%s: the peer context is dead", ep->name);

	/* 1. claim an RHQ slot (and an eager buffer) */
	t = atomic_load_explicit(ktail, memory_order_relaxed);
	do {
		/* pairs with the consumer's release of head (5.) */
		h = atomic_load_explicit(khead, memory_order_acquire);
		lo = (uint32_t)t;
		hi = (uint32_t)(t >> 32);
		if (lo - (uint32_t)h >= q->rhq_entries) {
			atomic_fetch_add_explicit(A64(&q->kctrl->rhq_full_drops),
						  1, memory_order_relaxed);
			die("%s: the peer's RHQ is full", ep->name);
		}
		if (carry && hi - (uint32_t)(h >> 32) >= q->eager_count) {
			atomic_fetch_add_explicit(A64(&q->kctrl->eager_full_drops),
						  1, memory_order_relaxed);
			die("%s: the peer's eager ring is full", ep->name);
		}
		/* each half wraps on its own */
		nt = (uint64_t)(hi + carry) << 32 | (uint32_t)(lo + 1);
	} while (!atomic_compare_exchange_weak_explicit(ktail, &t, nt,
							memory_order_relaxed,
							memory_order_relaxed));

	/* 2. fill the slot */
	e = &q->krhq[lo & (q->rhq_entries - 1)];
	if (len)
		memcpy(q->keager + (size_t)(hi & (q->eager_count - 1)) * q->eager_size,
		       payload, len);
	e->eager_index = hi;
	e->eager_len = len;
	e->reserved = 0;
	memcpy(e->hdr, msg, sizeof(*msg));

	/* 3. publish; pairs with the consumer's acquire of seq (4.) */
	atomic_store_explicit(A32(&e->seq), lo + 1, memory_order_release);

	/* 4'. pairs with the consumer's fence between arming and re-check (6.) */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(karmed, memory_order_relaxed) &&
	    atomic_exchange_explicit(karmed, 0, memory_order_relaxed) == 1) {
		struct kfab_hfi_peer_req req = { .peer = ep->peer };

		if (ioctl(ep->fd, KFAB_HFI_IOC_NOTIFY, &req))
			die_ioctl(ep, "NOTIFY", errno);
		return true;
	}
	return false;
}

/* Consumer steps 4. and 5.: take one packet if there is one. */
static bool consume(struct endpoint *ep, struct demo_msg *msg, void *payload,
		    uint32_t *len)
{
	struct queue *q = &ep->rx;
	struct kfab_hfi_rhq_entry *e = &q->krhq[ep->rh & (q->rhq_entries - 1)];
	uint32_t n, idx;

	/* 4. pairs with the producer's release of seq (3.) */
	if (atomic_load_explicit(A32(&e->seq), memory_order_acquire) != ep->rh + 1)
		return false;
	memcpy(msg, e->hdr, sizeof(*msg));
	/* written by another process: read once, bound before use */
	n = e->eager_len;
	idx = e->eager_index;
	if (n > q->eager_size)
		n = q->eager_size;
	if (n) {
		if (payload)
			memcpy(payload, q->keager +
			       (size_t)(idx & (q->eager_count - 1)) * q->eager_size, n);
		ep->eh = idx + 1;
	}
	if (len)
		*len = n;
	ep->rh++;
	/* 5. free the slot; pairs with the producer's acquire of head (1.) */
	atomic_store_explicit(A64(&q->kctrl->head),
			      (uint64_t)ep->eh << 32 | ep->rh,
			      memory_order_release);
	return true;
}

/* Step 6.: arm, re-check, sleep on the eventfd until a packet is there. */
static void wait_msg(struct endpoint *ep, struct demo_msg *msg, void *payload,
		     uint32_t *len, bool sleep)
{
	_Atomic uint32_t *karmed = A32(&ep->rx.kctrl->armed);
	unsigned long spins = 0;

	for (;;) {
		if (consume(ep, msg, payload, len))
			return;
		if (atomic_load_explicit(A32(&ep->tx.kctrl->dead),
					 memory_order_relaxed))
			die("%s: the peer died", ep->name);
		if (!sleep) {
			if (++spins % 256 == 0)
				sched_yield();
			continue;
		}
		atomic_store_explicit(karmed, 1, memory_order_relaxed);
		/* pairs with the producer's fence before it reads armed (4'.) */
		atomic_thread_fence(memory_order_seq_cst);
		if (consume(ep, msg, payload, len)) {
			atomic_store_explicit(karmed, 0, memory_order_relaxed);
			return;
		}
		struct pollfd pfd = { .fd = ep->efd, .events = POLLIN };
		uint64_t v;

		/* the timeout only serves to notice a dead peer */
		if (poll(&pfd, 1, 1000) == 1) {
			if (read(ep->efd, &v, sizeof(v)) == sizeof(v))
				ep->wakeups++;
		}
	}
}

static void send_msg(struct endpoint *ep, uint32_t type, uint64_t seq,
		     const char *text)
{
	struct demo_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.seq = seq;
	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	produce(ep, &m, NULL, 0);
}

static void expect(struct endpoint *ep, const struct demo_msg *m, uint32_t type)
{
	if (m->type != type)
		die("%s: expected a packet of type %u, got %u", ep->name, type,
		    m->type);
}

static void print_counters(const struct endpoint *a, const struct endpoint *b)
{
	unsigned int u[2] = { a->unit, b->unit };
	char v0[32], v1[32];
	static const char *const attrs[] = { "state", "lid", "nctxts",
					     "nfreectxts", "drop_ppm" };

	snprintf(v0, sizeof(v0), "hfi%u", u[0]);
	snprintf(v1, sizeof(v1), "hfi%u", u[1]);
	printf("\n%-18s %22s %22s\n", "/sys/class/kfab/", v0, v1);
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		read_attr(u[0], attrs[i], v0, sizeof(v0));
		read_attr(u[1], attrs[i], v1, sizeof(v1));
		printf("%-18s %22s %22s\n", attrs[i], v0, v1);
	}
	printf("%-18s %22s %22s\n", "counters/", "now (demo)", "now (demo)");
	for (size_t i = 0; i < NCOUNTERS; i++) {
		char c[2][48];

		for (int k = 0; k < 2; k++) {
			long long n = read_counter(u[k], counters[i]);

			if (n < 0)
				snprintf(c[k], sizeof(c[k]), "-");
			else
				snprintf(c[k], sizeof(c[k]), "%lld (%+lld)", n,
					 before[k][i] < 0 ? 0 : n - before[k][i]);
		}
		printf("%-18s %22s %22s\n", counters[i], c[0], c[1]);
	}
	printf("\n");
}

static int run_a(struct endpoint *a, struct endpoint *b)
{
	static uint8_t hello[HELLO_BYTES];
	struct kfab_hfi_sdma sd;
	struct kfab_iovec iov;
	struct demo_msg m;
	uint8_t *src;
	uint64_t t0, t1, rtt_poll, rtt_sleep;
	bool notified;
	char ready;

	ep_connect(a);

	/* B tells us when it is asleep, so the NOTIFY path is exercised. */
	xread(a->from_peer, &ready, 1);
	for (size_t i = 0; i < sizeof(hello); i++)
		hello[i] = pattern(i);
	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	snprintf(m.text, sizeof(m.text), "hello from A (pid %d)", (int)getpid());
	notified = produce(a, &m, hello, sizeof(hello));
	printf("A: sent \"%s\" + %u B eager payload into B's RHQ%s\n", m.text,
	       HELLO_BYTES, notified ? "; B was armed: NOTIFY" : "");

	wait_msg(a, &m, NULL, NULL, true);
	expect(a, &m, MSG_TID);

	src = mmap(NULL, SDMA_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	for (size_t i = 0; i < SDMA_BYTES; i++)
		src[i] = pattern(i);
	iov.addr = (uintptr_t)src;
	iov.len = SDMA_BYTES;
	memset(&sd, 0, sizeof(sd));
	sd.peer = a->peer;
	sd.tid = m.tid;
	sd.iov = (uintptr_t)&iov;
	sd.iovcnt = 1;
	sd.flags = KFAB_HFI_SDMA_NOTIFY;
	t0 = now_ns();
	if (ioctl(a->fd, KFAB_HFI_IOC_SDMA, &sd))
		die_ioctl(a, "SDMA", errno);
	t1 = now_ns();
	if (sd.bytes != SDMA_BYTES)
		die("A: SDMA copied %llu bytes, not %u",
		    (unsigned long long)sd.bytes, SDMA_BYTES);
	printf("A: SDMA 1 MiB into B's TID %u with SDMA_NOTIFY: %.1f us\n",
	       m.tid, (double)(t1 - t0) / 1e3);
	send_msg(a, MSG_SDMA_DONE, 0, NULL);

	/* bandwidth: the same copy again, no notification */
	sd.flags = 0;
	t0 = now_ns();
	for (int i = 0; i < SDMA_REPEAT; i++)
		if (ioctl(a->fd, KFAB_HFI_IOC_SDMA, &sd))
			die_ioctl(a, "SDMA", errno);
	t1 = now_ns();
	double mibs = (double)SDMA_REPEAT * SDMA_BYTES / (1 << 20) /
		      ((double)(t1 - t0) / 1e9);

	wait_msg(a, &m, NULL, NULL, true);	/* B verified the bytes */
	expect(a, &m, MSG_PONG);

	t0 = now_ns();
	for (int i = 0; i < RTT_POLL; i++) {
		send_msg(a, MSG_PING, (uint64_t)i, NULL);
		wait_msg(a, &m, NULL, NULL, false);
		expect(a, &m, MSG_PONG);
	}
	t1 = now_ns();
	rtt_poll = (t1 - t0) / RTT_POLL;

	t0 = now_ns();
	for (int i = 0; i < RTT_SLEEP; i++) {
		send_msg(a, MSG_PING, (uint64_t)i, NULL);
		wait_msg(a, &m, NULL, NULL, true);
		expect(a, &m, MSG_PONG);
	}
	t1 = now_ns();
	rtt_sleep = (t1 - t0) / RTT_SLEEP;

	wait_msg(a, &m, NULL, NULL, true);
	expect(a, &m, MSG_BYE);

	/* B still holds its context and TID: the gauges are live */
	print_counters(a, b);
	printf("%-40s %12.1f MiB/s\n", "SDMA bandwidth (32 x 1 MiB, one copy)",
	       mibs);
	printf("%-40s %12.2f us\n", "packet round trip, both polling",
	       (double)rtt_poll / 1e3);
	printf("%-40s %12.2f us\n", "packet round trip, B asleep (eventfd)",
	       (double)rtt_sleep / 1e3);
	printf("%-40s %12u\n", "eventfd wakeups of A", a->wakeups);
	fflush(stdout);
	xwrite(a->to_peer, "x", 1);
	return 0;
}

static int run_b(struct endpoint *b)
{
	static uint8_t payload[65536];
	struct kfab_hfi_tid_update tu;
	struct kfab_hfi_tid_free tf;
	struct demo_msg m;
	unsigned int w;
	uint32_t len;
	uint8_t *buf;
	char done;

	ep_connect(b);

	/* step 6. by hand, so A knows we are asleep before it sends */
	atomic_store_explicit(A32(&b->rx.kctrl->armed), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	printf("B: armed, sleeping on the eventfd\n");
	fflush(stdout);
	xwrite(b->to_peer, "r", 1);
	wait_msg(b, &m, payload, &len, true);
	expect(b, &m, MSG_HELLO);
	for (uint32_t i = 0; i < len; i++)
		if (payload[i] != pattern(i))
			die("B: eager payload differs at byte %u", i);
	if (len != HELLO_BYTES)
		die("B: eager payload of %u B, expected %u", len, HELLO_BYTES);
	printf("B: woke up (%u eventfd wakeup), got \"%s\" + %u B payload: ok\n",
	       b->wakeups, m.text, len);

	buf = mmap(NULL, SDMA_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(buf, 0, SDMA_BYTES);
	memset(&tu, 0, sizeof(tu));
	tu.vaddr = (uintptr_t)buf;
	tu.length = SDMA_BYTES;
	if (ioctl(b->fd, KFAB_HFI_IOC_TID_UPDATE, &tu))
		die_ioctl(b, "TID_UPDATE", errno);
	printf("B: TID_UPDATE 1 MiB: handle %u, %u pages pinned; sending it to A\n",
	       tu.handle, tu.npages);
	memset(&m, 0, sizeof(m));
	m.type = MSG_TID;
	m.tid = tu.handle;
	m.len = SDMA_BYTES;
	fflush(stdout);
	produce(b, &m, NULL, 0);

	w = b->wakeups;
	wait_msg(b, &m, NULL, NULL, true);
	expect(b, &m, MSG_SDMA_DONE);
	for (size_t i = 0; i < SDMA_BYTES; i++)
		if (buf[i] != pattern(i))
			die("B: TID buffer differs at byte %zu: 0x%02x, expected 0x%02x",
			    i, buf[i], pattern(i));
	printf("B: 1 MiB in the TID buffer verified (%u eventfd wakeups while waiting)\n",
	       b->wakeups - w);
	fflush(stdout);
	send_msg(b, MSG_PONG, 0, NULL);

	for (int i = 0; i < RTT_POLL; i++) {
		wait_msg(b, &m, NULL, NULL, false);
		expect(b, &m, MSG_PING);
		send_msg(b, MSG_PONG, m.seq, NULL);
	}
	for (int i = 0; i < RTT_SLEEP; i++) {
		wait_msg(b, &m, NULL, NULL, true);
		expect(b, &m, MSG_PING);
		send_msg(b, MSG_PONG, m.seq, NULL);
	}
	send_msg(b, MSG_BYE, 0, NULL);

	xread(b->from_peer, &done, 1);
	memset(&tf, 0, sizeof(tf));
	tf.handle = tu.handle;
	if (ioctl(b->fd, KFAB_HFI_IOC_TID_FREE, &tf))
		die_ioctl(b, "TID_FREE", errno);
	printf("B: %u eventfd wakeups in all; TID freed\n", b->wakeups);
	return 0;
}

static unsigned int parse_unit(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v > 255)
		die("bad unit number '%s'", s);
	return (unsigned int)v;
}

int main(int argc, char **argv)
{
	struct endpoint a = { .name = "A", .unit = 0 };
	struct endpoint b = { .name = "B", .unit = 1 };
	int ab[2], ba[2], st, failed = 0;
	char uuid_str[37];
	pid_t pa, pb, p;
	uuid_t uuid;

	if (argc == 3) {
		a.unit = parse_unit(argv[1]);
		b.unit = parse_unit(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: kfab_demo [UNIT_A UNIT_B]\n");
		return 2;
	}

	uuid_generate(uuid);
	uuid_unparse_lower(uuid, uuid_str);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		before[0][i] = read_counter(a.unit, counters[i]);
		before[1][i] = read_counter(b.unit, counters[i]);
	}
	if (pipe2(ab, O_CLOEXEC) || pipe2(ba, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	a.to_peer = ab[1];
	a.from_peer = ba[0];
	b.to_peer = ba[1];
	b.from_peer = ab[0];

	printf("kfab_demo: job %s: A on unit %u, B on unit %u\n", uuid_str,
	       a.unit, b.unit);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fflush(stdout);

	/* Nothing of the device is open yet: each child opens its own unit. */
	pa = fork();
	if (pa == 0) {
		alarm(DEMO_TIMEOUT);
		ep_open(&a, uuid);
		exit(run_a(&a, &b));
	}
	pb = fork();
	if (pb == 0) {
		alarm(DEMO_TIMEOUT);
		ep_open(&b, uuid);
		exit(run_b(&b));
	}
	if (pa < 0 || pb < 0)
		die("fork: %s", strerror(errno));
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);

	for (int n = 0; n < 2; n++) {
		p = wait(&st);
		if (p < 0)
			break;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			if (!failed)
				fprintf(stderr, "kfab_demo: %s %s\n",
					p == pa ? "A" : "B",
					WIFSIGNALED(st) ?
					(WTERMSIG(st) == SIGALRM ? "timed out" :
					 strsignal(WTERMSIG(st))) : "failed");
			failed = 1;
			/* the other side would wait forever */
			kill(p == pa ? pb : pa, SIGTERM);
		}
	}
	if (failed)
		return 1;
	printf("kfab_demo: OK\n");
	return 0;
}
