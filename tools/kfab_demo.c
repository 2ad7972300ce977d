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
 *
 * then the same job over two emulated EFA devices, one SRD QP each:
 *
 *   A (efa0)                                 B (efa1)
 *   create QP, post buffers                  create QP, post nothing yet
 *              <-- pipes: gid + QP number + qkey -->
 *   MAP_PEER B, map B's QP                   MAP_PEER A, map A's QP
 *   send into B's ring: RNR              --> post buffers, arm, sleep
 *   send "hello" into B's ring, NOTIFY   --> wake, consume
 *                                        <-- REG_MR 1 MiB, send rkey + address
 *   RDMA WRITE 1 MiB (RDMA_NOTIFY)       --> wake, verify every byte, flip it
 *   RDMA READ 1 MiB back, verify         <-- "verified"
 *   RDMA bandwidth, ping-pong polling, then sleeping
 *   print the devices' counters, then both release everything and exit
 *
 * The queue protocols are the ones in the top comments of uapi/kfab_hfi.h
 * and uapi/kfab_efa.h; the step numbers in the comments below are the ones
 * used there.
 *
 * Usage: kfab_demo [UNIT_A UNIT_B]   (default 0 1: hfi0/efa0 and hfi1/efa1)
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
#include "uapi/kfab_efa.h"

#define SDMA_BYTES	(1U << 20)	/* the TID buffer and one SDMA */
#define SDMA_REPEAT	32		/* SDMAs timed for the bandwidth */
#define HELLO_BYTES	4096		/* eager payload of the first packet */
#define RTT_POLL	1000		/* round trips with both sides polling */
#define RTT_SLEEP	100		/* round trips with B asleep each time */
#define DEMO_TIMEOUT	300		/* seconds before a stuck side gives up */
#define MR_BYTES	(1U << 20)	/* the EFA MR and one RDMA */
#define RDMA_REPEAT	32		/* RDMAs timed for each bandwidth */
#define EFA_RTT_POLL	1000		/* at most, both sides polling ... */
#define EFA_RTT_SLEEP	100		/* ... and with B asleep each time, */
#define EFA_RTT_NS	2000000000ULL	/* ... each for at most this long */
#define EFA_WAKE_MS	10000		/* for an expected eventfd wakeup */

enum msg_type {
	MSG_HELLO = 1,
	MSG_TID,		/* B -> A: tid, len of the TID buffer */
	MSG_SDMA_DONE,		/* A -> B: len bytes copied */
	MSG_PING,
	MSG_PONG,
	MSG_BYE,		/* (EFA: ends a ping-pong phase) */
	MSG_MR,			/* B -> A: rkey, addr, len of the MR */
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

/* Our format of the provider-owned header of an EFA ring entry. */
struct efa_msg {
	uint32_t type;
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
	uint64_t seq;
};

_Static_assert(sizeof(struct efa_msg) == KFAB_EFA_RX_HDR_BYTES,
	       "efa_msg fills the ring entry header");

/* One receive queue as mapped: our own or a peer's. */
struct queue {
	struct kfab_hfi_ctrl *kctrl;
	struct kfab_hfi_rhq_entry *krhq;
	uint8_t *keager;
	uint32_t rhq_entries;
	uint32_t eager_count;
	uint32_t eager_size;
};

/*
 * What an endpoint of either device has: the device file, the eventfd of
 * its own queue, the armed word of that queue and the dead word of the
 * peer's, and the pipes to the other process.
 */
struct demo_ep {
	const char *name;	/* "A" or "B" */
	const char *cls;	/* "hfi" or "efa" */
	unsigned int unit;
	char dev[32];
	int fd;
	int efd;
	__u32 *armed;		/* of our own queue */
	const __u32 *peer_dead;	/* of the peer's queue */
	/* takes one packet of our queue, if there is one (steps 4. and 5.) */
	bool (*consume)(struct demo_ep *d, void *msg, void *payload,
			uint32_t *len);
	unsigned int wakeups;	/* eventfd wakeups seen */
	int to_peer, from_peer;	/* pipes */
};

struct endpoint {
	struct demo_ep d;
	struct kfab_hfi_ctxt_info info;
	const struct kfab_hfi_status *kstatus;
	struct queue rx;	/* our own context: we consume */
	uint32_t rh, eh;	/* consumer heads of rx */
	struct queue tx;	/* the peer's context: we produce */
	uint32_t peer;		/* MAP_PEER handle */
};

/* Where a unit's address travels between the two processes. */
struct addr {
	uint32_t lid;
	uint32_t ctxt;
};

/* One EFA receive ring as mapped: our own QP's or a peer's. */
struct efa_queue {
	struct kfab_efa_qp_ctrl *kctrl;
	struct kfab_efa_rx_entry *kring;
	uint8_t *kbufs;
	uint32_t rx_entries;
	uint32_t mtu;
};

struct efa_endpoint {
	struct demo_ep d;	/* its fd: the protection domain */
	struct kfab_efa_device_info info;
	const struct kfab_efa_status *kstatus;
	struct kfab_efa_create_qp qp;
	struct efa_queue rx;	/* our own QP: we post and consume */
	uint32_t head;		/* consumer head of rx */
	struct efa_queue tx;	/* the peer's QP: we send */
	uint32_t peer;		/* MAP_PEER handle */
	uint32_t peer_qpn;
	const struct kfab_efa_status *kpeer_status;
	uint32_t src_qpn;	/* sender of the packet consumed last */
	unsigned int rnrs;	/* RNR answers we got as a sender */
};

/* Where an EFA QP's address travels between the two processes. */
struct efa_addr {
	uint8_t gid[KFAB_EFA_GID_LEN];
	uint32_t qpn;
	uint32_t qkey;
};

static const char *const counters[] = {
	"ctxts_assigned", "tid_pages_pinned", "tid_regions", "sdma_requests",
	"sdma_bytes", "notifies", "rhq_full_drops", "eager_full_drops",
	"injected_drops",
};

#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

/* The attributes of /sys/class/kfab/<cls><n>/ printed with the counters. */
#define NATTRS 5
static const char *const hfi_attrs[NATTRS] = {
	"state", "lid", "nctxts", "nfreectxts", "drop_ppm",
};
static const char *const efa_attrs[NATTRS] = {
	"state", "mtu", "rx_entries", "nfreeqps", "device_rdma",
};

static long long before[2][NCOUNTERS];

static const char *const efa_counters[] = {
	"qps", "mrs", "pinned_pages", "rdma_writes", "rdma_write_bytes",
	"rdma_reads", "rdma_read_bytes", "notifies", "rnrs", "injected_rnrs",
};

#define NEFA_COUNTERS (sizeof(efa_counters) / sizeof(efa_counters[0]))

/* The gauges that must be back where they were once both sides are gone. */
#define NEFA_GAUGES 3

static long long efa_before[2][NEFA_COUNTERS];

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

/*
 * What an errno of an ioctl means for this demo, on either device (cls
 * NULL) or one; a hint may name the class and the unit (%s%u, twice).
 */
static const struct {
	const char *cls;
	int err;
	const char *hint;
} hints[] = {
	{ NULL, ENETDOWN, " — is %s%u (or its peer) Down? echo Active > /sys/class/kfab/%s%u/state" },
	{ "hfi", EBUSY, " — no free context: cat /sys/class/kfab/%s%u/nfreectxts" },
	{ "efa", EBUSY, " — no free QP: cat /sys/class/kfab/%s%u/nfreeqps" },
	{ "hfi", EACCES, " — the jkeys or pkeys differ: both sides need the same user, UUID and pkey" },
	{ "efa", EACCES, " — the qkey or rkey is wrong, or the MR lacks the remote access asked for" },
	{ "efa", ENOENT, " — no live QP with that gid and QP number (did the other side die?)" },
	{ NULL, ENOMEM, " — out of memory, or RLIMIT_MEMLOCK too low (ulimit -l)" },
	{ "hfi", ENOSPC, " — pin_limit_mb of kfab_hfi exceeded" },
	{ "efa", ENOSPC, " — this file holds max_mrs MRs (or 4096 peer handles)" },
	{ "efa", EOPNOTSUPP, " — RDMA switched off: cat /sys/class/kfab/%s%u/device_rdma (and the peer's)" },
	{ "efa", ESTALE, " — the MR was invalidated: its owner unmapped or remapped the memory" },
	{ NULL, ENOTTY, " — the loaded kfab_%s does not know this ioctl: rebuild and reload the modules" },
	{ "hfi", ECONNRESET, " — the peer context was released (did the other side die?)" },
	{ "efa", ECONNRESET, " — the peer QP was destroyed (did the other side die?)" },
};

/* An ioctl failed: say what it means for this demo. */
static void die_ioctl(const struct demo_ep *d, const char *what, int err)
{
	char hint[160] = "";

	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (hints[i].err == err &&
		    (!hints[i].cls || !strcmp(hints[i].cls, d->cls)))
			snprintf(hint, sizeof(hint), hints[i].hint, d->cls,
				 d->unit, d->cls, d->unit);
	die("%s on %s: %s%s", what, d->dev, strerror(err), hint);
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

/* What B turns the MR into for A to read back. */
static uint8_t flipped(size_t i)
{
	return (uint8_t)(pattern(i) ^ 0xff);
}

/* cls: "hfi" or "efa" */
static long long read_counter(const char *cls, unsigned int unit,
			      const char *name)
{
	char path[128];
	long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kfab/%s%u/counters/%s",
		 cls, unit, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void read_attr(const char *cls, unsigned int unit, const char *name,
		      char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kfab/%s%u/%s", cls, unit,
		 name);
	snprintf(buf, len, "-");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void *map(const struct demo_ep *d, uint64_t off, size_t len, int prot,
		 const char *what)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, d->fd, (off_t)off);

	if (p == MAP_FAILED)
		die("mmap of %s (%zu bytes at 0x%" PRIx64 ") on %s: %s",
		    what, len, off, d->dev, strerror(errno));
	return p;
}

/* Opens /dev/kfab_<cls><unit>. */
static void dev_open(struct demo_ep *d)
{
	snprintf(d->dev, sizeof(d->dev), "/dev/kfab_%s%u", d->cls, d->unit);
	d->fd = open(d->dev, O_RDWR | O_CLOEXEC);
	if (d->fd < 0 && errno == ENOENT)
		die("%s: %s — is kfab_%s loaded? ('make demo' loads it in a VM)",
		    d->dev, strerror(ENOENT), d->cls);
	if (d->fd < 0)
		die("%s: %s", d->dev, strerror(errno));
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

	dev_open(&ep->d);

	memset(&ver, 0, sizeof(ver));
	if (ioctl(ep->d.fd, KFAB_HFI_IOC_GET_VERSION, &ver))
		die_ioctl(&ep->d, "GET_VERSION", errno);
	if (ver.abi_version != KFAB_ABI_VERSION)
		die("%s speaks ABI %u, this demo was built for ABI %u",
		    ep->d.dev, ver.abi_version, KFAB_ABI_VERSION);

	memset(&as, 0, sizeof(as));
	memcpy(as.uuid, uuid, sizeof(as.uuid));
	as.pkey = KFAB_HFI_PKEY_DEFAULT;
	if (ioctl(ep->d.fd, KFAB_HFI_IOC_ASSIGN_CTXT, &as))
		die_ioctl(&ep->d, "ASSIGN_CTXT", errno);
	ep->info = as.info;

	ep->rx.rhq_entries = ep->info.rhq_entries;
	ep->rx.eager_count = ep->info.eager_count;
	ep->rx.eager_size = ep->info.eager_size;
	ep->rx.kctrl = map(&ep->d, ep->info.ctrl_offset, (size_t)pg,
			   PROT_READ | PROT_WRITE, "ctrl");
	ep->d.armed = &ep->rx.kctrl->armed;
	ep->rx.krhq = map(&ep->d, ep->info.rhq_offset,
			  (size_t)ep->info.rhq_entries * ep->info.rhq_entry_size,
			  PROT_READ | PROT_WRITE, "rhq");
	ep->rx.keager = map(&ep->d, ep->info.eager_offset,
			    (size_t)ep->info.eager_count * ep->info.eager_size,
			    PROT_READ | PROT_WRITE, "eager");
	ep->kstatus = map(&ep->d, ep->info.status_offset, (size_t)pg, PROT_READ,
			  "status");

	ep->d.efd = eventfd(0, EFD_CLOEXEC);
	if (ep->d.efd < 0)
		die("eventfd: %s", strerror(errno));
	memset(&ev, 0, sizeof(ev));
	ev.fd = ep->d.efd;
	if (ioctl(ep->d.fd, KFAB_HFI_IOC_SET_EVENTFD, &ev))
		die_ioctl(&ep->d, "SET_EVENTFD", errno);

	printf("%s: %s context %u, LID %u, jkey 0x%04x, rhq %u x %u B, eager %u x %u B, link %s\n",
	       ep->d.name, ep->d.dev, ep->info.ctxt, ep->info.lid,
	       ep->info.jkey, ep->info.rhq_entries, ep->info.rhq_entry_size,
	       ep->info.eager_count, ep->info.eager_size,
	       ep->kstatus->state == KFAB_HFI_STATE_ACTIVE ? "Active" : "Down");
}

/* Swap addresses with the other process, map its queues. */
static void ep_connect(struct endpoint *ep)
{
	struct addr mine = { ep->info.lid, ep->info.ctxt }, theirs;
	struct kfab_hfi_map_peer mp;
	long pg = sysconf(_SC_PAGESIZE);

	xwrite(ep->d.to_peer, &mine, sizeof(mine));
	xread(ep->d.from_peer, &theirs, sizeof(theirs));

	memset(&mp, 0, sizeof(mp));
	mp.lid = theirs.lid;
	mp.ctxt = theirs.ctxt;
	if (ioctl(ep->d.fd, KFAB_HFI_IOC_MAP_PEER, &mp))
		die_ioctl(&ep->d, "MAP_PEER", errno);
	ep->peer = mp.peer;
	ep->tx.rhq_entries = mp.rhq_entries;
	ep->tx.eager_count = mp.eager_count;
	ep->tx.eager_size = mp.eager_size;
	ep->tx.kctrl = map(&ep->d, mp.ctrl_offset, (size_t)pg,
			   PROT_READ | PROT_WRITE, "peer ctrl");
	ep->d.peer_dead = &ep->tx.kctrl->dead;
	ep->tx.krhq = map(&ep->d, mp.rhq_offset,
			  (size_t)mp.rhq_entries * mp.rhq_entry_size,
			  PROT_READ | PROT_WRITE, "peer rhq");
	ep->tx.keager = map(&ep->d, mp.eager_offset,
			    (size_t)mp.eager_count * mp.eager_size,
			    PROT_READ | PROT_WRITE, "peer eager");
}

/* The buffer of @ticket among @count (a power of two) of @size bytes. */
static uint8_t *buf_of(uint8_t *bufs, uint32_t ticket, uint32_t count,
		       uint32_t size)
{
	return bufs + (size_t)(ticket & (count - 1)) * size;
}

/* Step 6. by hand: arm our queue; pairs with the producer's fence (4'.). */
static void arm(const struct demo_ep *d)
{
	atomic_store_explicit(A32(d->armed), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

static void check_peer(const struct demo_ep *d)
{
	if (atomic_load_explicit(A32(d->peer_dead), memory_order_relaxed))
		die("%s: the peer died", d->name);
}

/*
 * Producer steps 3. and 4'.: publish the entry of ticket @t (pairs with
 * the owner's acquire of @seq, 4.), then, once the owner's fence between
 * arming and re-check (6.) is paired, take its @armed word and notify it
 * with @cmd and @req. Returns whether it did.
 */
static bool publish_notify(const struct demo_ep *d, __u32 *seq, uint32_t t,
			   __u32 *armed, unsigned long cmd, void *req)
{
	atomic_store_explicit(A32(seq), t + 1, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(A32(armed), memory_order_relaxed) ||
	    atomic_exchange_explicit(A32(armed), 0, memory_order_relaxed) != 1)
		return false;
	if (ioctl(d->fd, cmd, req))
		die_ioctl(d, "NOTIFY", errno);
	return true;
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
	struct kfab_hfi_rhq_entry *e;
	uint32_t lo, hi, carry = len ? 1 : 0;
	uint64_t t, h, nt;

	if (len > q->eager_size)
		die("%s: payload of %u B exceeds eager_size", ep->d.name, len);
	check_peer(&ep->d);

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
			die("%s: the peer's RHQ is full", ep->d.name);
		}
		if (carry && hi - (uint32_t)(h >> 32) >= q->eager_count) {
			atomic_fetch_add_explicit(A64(&q->kctrl->eager_full_drops),
						  1, memory_order_relaxed);
			die("%s: the peer's eager ring is full", ep->d.name);
		}
		/* each half wraps on its own */
		nt = (uint64_t)(hi + carry) << 32 | (uint32_t)(lo + 1);
	} while (!atomic_compare_exchange_weak_explicit(ktail, &t, nt,
							memory_order_relaxed,
							memory_order_relaxed));

	/* 2. fill the slot */
	e = &q->krhq[lo & (q->rhq_entries - 1)];
	if (len)
		memcpy(buf_of(q->keager, hi, q->eager_count, q->eager_size),
		       payload, len);
	e->eager_index = hi;
	e->eager_len = len;
	e->reserved = 0;
	memcpy(e->hdr, msg, sizeof(*msg));

	return publish_notify(&ep->d, &e->seq, lo, &q->kctrl->armed,
			      KFAB_HFI_IOC_NOTIFY,
			      &(struct kfab_hfi_peer_req){ .peer = ep->peer });
}

/* Consumer steps 4. and 5.: take one packet if there is one. */
static bool consume(struct demo_ep *d, void *msg, void *payload,
		    uint32_t *len)
{
	struct endpoint *ep = (struct endpoint *)d;
	struct queue *q = &ep->rx;
	struct kfab_hfi_rhq_entry *e = &q->krhq[ep->rh & (q->rhq_entries - 1)];
	uint32_t n, idx;

	/* 4. pairs with the producer's release of seq (3.) */
	if (atomic_load_explicit(A32(&e->seq), memory_order_acquire) != ep->rh + 1)
		return false;
	memcpy(msg, e->hdr, sizeof(struct demo_msg));
	/* written by another process: read once, bound before use */
	n = e->eager_len;
	idx = e->eager_index;
	if (n > q->eager_size)
		n = q->eager_size;
	if (n) {
		if (payload)
			memcpy(payload, buf_of(q->keager, idx, q->eager_count,
					       q->eager_size), n);
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
static void wait_msg(struct demo_ep *d, void *msg, void *payload,
		     uint32_t *len, bool sleep)
{
	unsigned long spins = 0;

	for (;;) {
		if (d->consume(d, msg, payload, len))
			return;
		check_peer(d);
		if (!sleep) {
			if (++spins % 256 == 0)
				sched_yield();
			continue;
		}
		arm(d);
		if (d->consume(d, msg, payload, len)) {
			atomic_store_explicit(A32(d->armed), 0,
					      memory_order_relaxed);
			return;
		}
		struct pollfd pfd = { .fd = d->efd, .events = POLLIN };
		uint64_t v;

		/* the timeout only serves to notice a dead peer */
		if (poll(&pfd, 1, 1000) == 1) {
			if (read(d->efd, &v, sizeof(v)) == sizeof(v))
				d->wakeups++;
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
		die("%s: expected a packet of type %u, got %u", ep->d.name, type,
		    m->type);
}

/* Ping-pong, A's side: @n round trips; the time of one. */
static uint64_t ping(struct endpoint *a, int n, bool sleep)
{
	struct demo_msg m;
	uint64_t t0 = now_ns();

	for (int i = 0; i < n; i++) {
		send_msg(a, MSG_PING, (uint64_t)i, NULL);
		wait_msg(&a->d, &m, NULL, NULL, sleep);
		expect(a, &m, MSG_PONG);
	}
	return (now_ns() - t0) / (uint64_t)n;
}

/* Ping-pong, B's side: @n round trips. */
static void pong(struct endpoint *b, int n, bool sleep)
{
	struct demo_msg m;

	for (int i = 0; i < n; i++) {
		wait_msg(&b->d, &m, NULL, NULL, sleep);
		expect(b, &m, MSG_PING);
		send_msg(b, MSG_PONG, m.seq, NULL);
	}
}

/*
 * The attributes @attrs and the @n counters @ctrs of <cls><u[0]> and
 * <cls><u[1]> side by side, the counters with their change since
 * @before (-1: unknown).
 */
static void print_counters(const char *cls, const unsigned int u[2],
			   const char *const attrs[NATTRS],
			   const char *const *ctrs, size_t n,
			   const long long *const before[2])
{
	char v0[32], v1[32];

	snprintf(v0, sizeof(v0), "%s%u", cls, u[0]);
	snprintf(v1, sizeof(v1), "%s%u", cls, u[1]);
	printf("%-18s %22s %22s\n", "/sys/class/kfab/", v0, v1);
	for (size_t i = 0; i < NATTRS; i++) {
		read_attr(cls, u[0], attrs[i], v0, sizeof(v0));
		read_attr(cls, u[1], attrs[i], v1, sizeof(v1));
		printf("%-18s %22s %22s\n", attrs[i], v0, v1);
	}
	printf("%-18s %22s %22s\n", "counters/", "now (demo)", "now (demo)");
	for (size_t i = 0; i < n; i++) {
		char c[2][48];

		for (int k = 0; k < 2; k++) {
			long long v = read_counter(cls, u[k], ctrs[i]);

			if (v < 0)
				snprintf(c[k], sizeof(c[k]), "-");
			else
				snprintf(c[k], sizeof(c[k]), "%lld (%+lld)", v,
					 before[k][i] < 0 ? 0 :
					 v - before[k][i]);
		}
		printf("%-18s %22s %22s\n", ctrs[i], c[0], c[1]);
	}
	printf("\n");
}

/* ------------------------------------------------------------------ */
/* EFA: SRD QPs, MRs and device RDMA over /dev/kfab_efa<N> */

/* "fe80:0000:...:0001", as sysfs prints it */
static const char *gid_str(const uint8_t *gid, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < KFAB_EFA_GID_LEN && n < len; i += 2)
		n += (size_t)snprintf(buf + n, len - n, "%s%02x%02x",
				      i ? ":" : "", gid[i], gid[i + 1]);
	return buf;
}

static void efa_map_queue(struct efa_endpoint *ep, struct efa_queue *q,
			  uint64_t ctrl, uint64_t ring, uint64_t bufs,
			  const char *who)
{
	char what[32];

	snprintf(what, sizeof(what), "%sctrl", who);
	q->kctrl = map(&ep->d, ctrl, (size_t)sysconf(_SC_PAGESIZE),
			   PROT_READ | PROT_WRITE, what);
	snprintf(what, sizeof(what), "%sring", who);
	q->kring = map(&ep->d, ring, (size_t)q->rx_entries * sizeof(*q->kring),
			   PROT_READ | PROT_WRITE, what);
	snprintf(what, sizeof(what), "%sbufs", who);
	q->kbufs = map(&ep->d, bufs, (size_t)q->rx_entries * q->mtu,
			   PROT_READ | PROT_WRITE, what);
}

static void efa_unmap_queue(struct efa_queue *q)
{
	munmap(q->kctrl, (size_t)sysconf(_SC_PAGESIZE));
	munmap(q->kring, (size_t)q->rx_entries * sizeof(*q->kring));
	munmap(q->kbufs, (size_t)q->rx_entries * q->mtu);
}

/*
 * Owner step P.: post every buffer that is free, never more than
 * rx_entries ahead of our consumer head.  Returns how many were posted.
 */
static unsigned int efa_post(struct efa_endpoint *ep)
{
	_Atomic uint32_t *kposted = A32(&ep->rx.kctrl->posted);
	uint32_t p = atomic_load_explicit(kposted, memory_order_relaxed);
	unsigned int n = 0;

	while (p - ep->head < ep->rx.rx_entries) {
		p++;
		n++;
		/* pairs with the sender's acquire of posted (1.) */
		atomic_store_explicit(kposted, p, memory_order_release);
	}
	return n;
}

/* Open the device, create a QP, map it; post its buffers if @post. */
static void efa_open(struct efa_endpoint *ep, bool post)
{
	struct kfab_efa_eventfd ev;
	char gid[48];
	long pg = sysconf(_SC_PAGESIZE);

	dev_open(&ep->d);

	memset(&ep->info, 0, sizeof(ep->info));
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_QUERY_DEVICE, &ep->info))
		die_ioctl(&ep->d, "QUERY_DEVICE", errno);
	if (ep->info.abi_version != KFAB_ABI_VERSION)
		die("%s speaks ABI %u, this demo was built for ABI %u",
		    ep->d.dev, ep->info.abi_version, KFAB_ABI_VERSION);
	ep->kstatus = map(&ep->d, ep->info.status_offset, (size_t)pg,
			      PROT_READ, "status");

	memset(&ep->qp, 0, sizeof(ep->qp));
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_CREATE_QP, &ep->qp))
		die_ioctl(&ep->d, "CREATE_QP", errno);
	ep->rx.rx_entries = ep->qp.rx_entries;
	ep->rx.mtu = ep->qp.mtu;
	if (ep->qp.rx_entry_size != sizeof(struct kfab_efa_rx_entry))
		die("%s: ring entries of %u B, this demo knows %zu B", ep->d.dev,
		    ep->qp.rx_entry_size, sizeof(struct kfab_efa_rx_entry));
	efa_map_queue(ep, &ep->rx, ep->qp.ctrl_offset, ep->qp.ring_offset,
		      ep->qp.bufs_offset, "");
	ep->d.armed = &ep->rx.kctrl->armed;

	ep->d.efd = eventfd(0, EFD_CLOEXEC);
	if (ep->d.efd < 0)
		die("eventfd: %s", strerror(errno));
	memset(&ev, 0, sizeof(ev));
	ev.qpn = ep->qp.qpn;
	ev.fd = ep->d.efd;
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_SET_EVENTFD, &ev))
		die_ioctl(&ep->d, "SET_EVENTFD", errno);

	printf("%s: %s QP %u, qkey 0x%08x, gid %s, ring %u x %u B, RDMA%s%s, link %s, %u buffers posted\n",
	       ep->d.name, ep->d.dev, ep->qp.qpn, ep->qp.qkey,
	       gid_str(ep->info.gid, gid, sizeof(gid)), ep->qp.rx_entries,
	       ep->qp.mtu,
	       ep->info.device_rdma & KFAB_EFA_RDMA_CAP_READ ? " read" : "",
	       ep->info.device_rdma & KFAB_EFA_RDMA_CAP_WRITE ? " write" :
	       ep->info.device_rdma ? "" : " none",
	       ep->kstatus->state == KFAB_EFA_STATE_ACTIVE ? "Active" : "Down",
	       post ? efa_post(ep) : 0);
}

/* Swap QP addresses with the other process, map its QP. */
static void efa_connect(struct efa_endpoint *ep)
{
	struct efa_addr mine, theirs;
	struct kfab_efa_map_peer mp;

	memset(&mine, 0, sizeof(mine));
	memcpy(mine.gid, ep->info.gid, sizeof(mine.gid));
	mine.qpn = ep->qp.qpn;
	mine.qkey = ep->qp.qkey;
	xwrite(ep->d.to_peer, &mine, sizeof(mine));
	xread(ep->d.from_peer, &theirs, sizeof(theirs));

	memset(&mp, 0, sizeof(mp));
	memcpy(mp.gid, theirs.gid, sizeof(mp.gid));
	mp.qpn = theirs.qpn;
	mp.qkey = theirs.qkey;
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_MAP_PEER, &mp))
		die_ioctl(&ep->d, "MAP_PEER", errno);
	ep->peer = mp.peer;
	ep->peer_qpn = theirs.qpn;
	ep->tx.rx_entries = mp.rx_entries;
	ep->tx.mtu = mp.mtu;
	if (mp.rx_entry_size != sizeof(struct kfab_efa_rx_entry))
		die("%s: the peer's ring entries are %u B, this demo knows %zu B",
		    ep->d.name, mp.rx_entry_size,
		    sizeof(struct kfab_efa_rx_entry));
	efa_map_queue(ep, &ep->tx, mp.ctrl_offset, mp.ring_offset,
		      mp.bufs_offset, "peer ");
	ep->d.peer_dead = &ep->tx.kctrl->dead;
	ep->kpeer_status = map(&ep->d, mp.status_offset,
				   (size_t)sysconf(_SC_PAGESIZE), PROT_READ,
				   "peer status");
	/* one packet in flight at a time: nothing to hold back behind */
	if (ep->kpeer_status->reorder_ppm)
		printf("%s: reorder_ppm %u of the peer's device not applied: this demo has one packet in flight at a time\n",
		       ep->d.name, ep->kpeer_status->reorder_ppm);
}

#define EFA_SENT	0
#define EFA_NOTIFIED	1	/* sent; the owner was armed and got a NOTIFY */
#define EFA_RNR		(-1)	/* nothing posted: counted in the peer's rnrs */
#define EFA_RNR_INJ	(-2)	/* rnr_inject_ppm: counted in injected_rnrs */

/* Sender side of the ring protocol, steps 1. to 4'.: one try. */
static int efa_produce(struct efa_endpoint *ep, const struct efa_msg *msg,
		       const void *payload, uint32_t len)
{
	struct efa_queue *q = &ep->tx;
	_Atomic uint32_t *ktail = A32(&q->kctrl->tail);
	uint32_t inject = ep->kpeer_status->rnr_inject_ppm;
	struct kfab_efa_rx_entry *e;
	uint32_t t, p;

	if (len > q->mtu)
		die("%s: payload of %u B exceeds the peer's mtu", ep->d.name, len);
	check_peer(&ep->d);

	/* 1. take a ticket if the owner has posted a buffer for it */
	t = atomic_load_explicit(ktail, memory_order_relaxed);
	do {
		/* pairs with the owner's release of posted (P.) */
		p = atomic_load_explicit(A32(&q->kctrl->posted),
					 memory_order_acquire);
		if ((int32_t)(p - t) <= 0) {
			atomic_fetch_add_explicit(A64(&q->kctrl->rnrs), 1,
						  memory_order_relaxed);
			ep->rnrs++;
			return EFA_RNR;
		}
		if (inject && (uint32_t)(random() % 1000000) < inject) {
			atomic_fetch_add_explicit(A64(&q->kctrl->injected_rnrs),
						  1, memory_order_relaxed);
			ep->rnrs++;
			return EFA_RNR_INJ;
		}
	} while (!atomic_compare_exchange_weak_explicit(ktail, &t, t + 1,
							memory_order_relaxed,
							memory_order_relaxed));

	/* 2. fill the buffer and the entry */
	e = &q->kring[t & (q->rx_entries - 1)];
	if (len)
		memcpy(buf_of(q->kbufs, t, q->rx_entries, q->mtu), payload,
		       len);
	e->len = len;
	e->src_qpn = ep->qp.qpn;
	e->imm = 0;
	memcpy(e->src_gid, ep->info.gid, sizeof(e->src_gid));
	memcpy(e->hdr, msg, sizeof(*msg));

	return publish_notify(&ep->d, &e->seq, t, &q->kctrl->armed,
			      KFAB_EFA_IOC_NOTIFY,
			      &(struct kfab_efa_peer_req){ .peer = ep->peer }) ?
	       EFA_NOTIFIED : EFA_SENT;
}

/* SRD does not drop: on RNR, retry until the owner posts a buffer. */
static bool efa_send(struct efa_endpoint *ep, const struct efa_msg *msg,
		     const void *payload, uint32_t len)
{
	unsigned long tries = 0;
	int r;

	while ((r = efa_produce(ep, msg, payload, len)) < 0)
		if (++tries % 16 == 0)
			sched_yield();
	return r == EFA_NOTIFIED;
}

static bool efa_send_msg(struct efa_endpoint *ep, uint32_t type, uint64_t seq)
{
	struct efa_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.seq = seq;
	return efa_send(ep, &m, NULL, 0);
}

/* Owner step 4., then P. for the buffer just read: take one packet. */
static bool efa_consume(struct demo_ep *d, void *msg, void *payload,
			uint32_t *len)
{
	struct efa_endpoint *ep = (struct efa_endpoint *)d;
	struct efa_queue *q = &ep->rx;
	uint32_t slot = ep->head & (q->rx_entries - 1);
	struct kfab_efa_rx_entry *e = &q->kring[slot];
	uint32_t n;

	/* 4. pairs with the sender's release of seq (3.) */
	if (atomic_load_explicit(A32(&e->seq), memory_order_acquire) !=
	    ep->head + 1)
		return false;
	memcpy(msg, e->hdr, sizeof(struct efa_msg));
	ep->src_qpn = e->src_qpn;
	/* written by another process: read once, bound before use */
	n = e->len;
	if (n > q->mtu)
		n = q->mtu;
	if (n && payload)
		memcpy(payload, buf_of(q->kbufs, slot, q->rx_entries, q->mtu),
		       n);
	if (len)
		*len = n;
	ep->head++;
	/* P. the buffer is free again */
	efa_post(ep);
	return true;
}

/* Armed by hand beforehand: sleep until the one wakeup we expect. */
static void efa_wait_wakeup(struct efa_endpoint *ep, const char *what)
{
	struct pollfd pfd = { .fd = ep->d.efd, .events = POLLIN };
	uint64_t v;

	for (int ms = 0; ms < EFA_WAKE_MS; ms += 1000) {
		check_peer(&ep->d);
		if (poll(&pfd, 1, 1000) == 1 &&
		    read(ep->d.efd, &v, sizeof(v)) == sizeof(v)) {
			ep->d.wakeups++;
			return;
		}
	}
	die("%s: no eventfd wakeup for %s within %d s", ep->d.name, what,
	    EFA_WAKE_MS / 1000);
}

static void efa_expect(struct efa_endpoint *ep, const struct efa_msg *m,
		       uint32_t type)
{
	if (m->type != type)
		die("%s: expected an EFA packet of type %u, got %u", ep->d.name,
		    type, m->type);
}

/* One device RDMA between @buf and the peer's MR; dies unless it all went. */
static void efa_rdma(struct efa_endpoint *ep, uint32_t op, uint32_t rkey,
		     uint64_t remote, void *buf, uint64_t len, uint32_t flags)
{
	struct kfab_iovec iov = { .addr = (uintptr_t)buf, .len = len };
	struct kfab_efa_rdma r = {
		.peer = ep->peer, .op = op, .rkey = rkey, .flags = flags,
		.remote_addr = remote, .iov = (uintptr_t)&iov, .iovcnt = 1,
	};

	if (ioctl(ep->d.fd, KFAB_EFA_IOC_RDMA, &r))
		die_ioctl(&ep->d, op == KFAB_EFA_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ",
			errno);
	if (r.bytes != len)
		die("%s: RDMA %s copied %llu bytes, not %llu", ep->d.name,
		    op == KFAB_EFA_RDMA_WRITE ? "WRITE" : "READ",
		    (unsigned long long)r.bytes, (unsigned long long)len);
}

/* RDMA_REPEAT RDMAs of MR_BYTES, no notification: MiB/s. */
static double efa_rdma_mibs(struct efa_endpoint *ep, uint32_t op,
			    uint32_t rkey, uint64_t remote, void *buf)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < RDMA_REPEAT; i++)
		efa_rdma(ep, op, rkey, remote, buf, MR_BYTES, 0);
	return (double)RDMA_REPEAT * MR_BYTES / (1 << 20) /
	       ((double)(now_ns() - t0) / 1e9);
}

/* Release the peer handle, the QP and the file, with every mapping. */
static void efa_close(struct efa_endpoint *ep)
{
	struct kfab_efa_peer_req up = { .peer = ep->peer };
	struct kfab_efa_destroy_qp dq = { .qpn = ep->qp.qpn };
	long pg = sysconf(_SC_PAGESIZE);

	efa_unmap_queue(&ep->tx);
	munmap((void *)ep->kpeer_status, (size_t)pg);
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_UNMAP_PEER, &up))
		die_ioctl(&ep->d, "UNMAP_PEER", errno);
	efa_unmap_queue(&ep->rx);
	if (ioctl(ep->d.fd, KFAB_EFA_IOC_DESTROY_QP, &dq))
		die_ioctl(&ep->d, "DESTROY_QP", errno);
	munmap((void *)ep->kstatus, (size_t)pg);
	close(ep->d.efd);
	if (close(ep->d.fd))
		die("close %s: %s", ep->d.dev, strerror(errno));
}

/* EFA figures measured by A, printed with the HFI ones. */
struct efa_figures {
	double write_mibs, read_mibs;
	uint64_t rtt_poll, rtt_sleep;
	int n_poll, n_sleep;
};

/* Ping-pong, A's side: as many round trips as fit in EFA_RTT_NS. */
static uint64_t efa_ping(struct efa_endpoint *a, int max, bool sleep, int *n)
{
	struct efa_msg m;
	uint64_t t0 = now_ns(), t1 = t0;
	int i;

	for (i = 0; i < max && t1 - t0 < EFA_RTT_NS; i++) {
		efa_send_msg(a, MSG_PING, (uint64_t)i);
		wait_msg(&a->d, &m, NULL, NULL, sleep);
		efa_expect(a, &m, MSG_PONG);
		if (m.seq != (uint64_t)i)
			die("A: pong %llu for ping %d", (unsigned long long)m.seq, i);
		t1 = now_ns();
	}
	efa_send_msg(a, MSG_BYE, 0);
	*n = i;
	return i ? (t1 - t0) / (uint64_t)i : 0;
}

/* Ping-pong, B's side: until A ends the phase. */
static void efa_pong(struct efa_endpoint *b, bool sleep)
{
	struct efa_msg m;

	for (;;) {
		wait_msg(&b->d, &m, NULL, NULL, sleep);
		if (m.type == MSG_BYE)
			return;
		efa_expect(b, &m, MSG_PING);
		efa_send_msg(b, MSG_PONG, m.seq);
	}
}

static void run_efa_a(struct efa_endpoint *a, struct efa_figures *fig)
{
	static uint8_t hello[HELLO_BYTES];
	struct efa_msg m;
	uint8_t *src, *dst;
	uint64_t t0, t1;
	uint32_t rkey;
	uint64_t addr;
	bool notified;
	char ready;

	efa_open(a, true);
	efa_connect(a);

	/* B has posted nothing yet: the first send must get RNR. */
	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	if (efa_produce(a, &m, NULL, 0) != EFA_RNR)
		die("A: B's QP took a packet before B posted a buffer");
	printf("A: send into B's QP %u before B posted a buffer: RNR; telling B\n",
	       a->peer_qpn);
	xwrite(a->d.to_peer, "n", 1);

	/* B tells us when it has posted and is asleep, so NOTIFY is exercised. */
	xread(a->d.from_peer, &ready, 1);
	for (size_t i = 0; i < sizeof(hello); i++)
		hello[i] = pattern(i);
	m.seq = (uint64_t)getpid();
	m.len = HELLO_BYTES;
	notified = efa_send(a, &m, hello, sizeof(hello));
	printf("A: sent a hello (pid %d) + %u B payload into B's ring%s\n",
	       (int)getpid(), HELLO_BYTES,
	       notified ? "; B was armed: NOTIFY" : "");

	wait_msg(&a->d, &m, NULL, NULL, true);
	efa_expect(a, &m, MSG_MR);
	rkey = m.rkey;
	addr = m.addr;
	if (m.len != MR_BYTES)
		die("A: B's MR is %llu bytes, expected %u",
		    (unsigned long long)m.len, MR_BYTES);

	src = mmap(NULL, MR_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, MR_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	for (size_t i = 0; i < MR_BYTES; i++)
		src[i] = pattern(i);
	memset(dst, 0, MR_BYTES);

	t0 = now_ns();
	efa_rdma(a, KFAB_EFA_RDMA_WRITE, rkey, addr, src, MR_BYTES,
		 KFAB_EFA_RDMA_NOTIFY);
	t1 = now_ns();
	printf("A: RDMA WRITE 1 MiB into B's MR (rkey 0x%08x) with RDMA_NOTIFY: %.1f us\n",
	       rkey, (double)(t1 - t0) / 1e3);

	wait_msg(&a->d, &m, NULL, NULL, true);	/* B verified and flipped */
	efa_expect(a, &m, MSG_PONG);
	t0 = now_ns();
	efa_rdma(a, KFAB_EFA_RDMA_READ, rkey, addr, dst, MR_BYTES, 0);
	t1 = now_ns();
	for (size_t i = 0; i < MR_BYTES; i++)
		if (dst[i] != flipped(i))
			die("A: RDMA READ differs at byte %zu: 0x%02x, expected 0x%02x",
			    i, dst[i], flipped(i));
	printf("A: RDMA READ 1 MiB back: %.1f us; every byte as B flipped it: ok\n",
	       (double)(t1 - t0) / 1e3);

	/* bandwidth: the same copies again, no notification */
	fig->write_mibs = efa_rdma_mibs(a, KFAB_EFA_RDMA_WRITE, rkey, addr,
					src);
	fig->read_mibs = efa_rdma_mibs(a, KFAB_EFA_RDMA_READ, rkey, addr, dst);
	if (memcmp(src, dst, MR_BYTES))
		die("A: RDMA READ after the RDMA WRITEs differs from what was written");
	munmap(src, MR_BYTES);
	munmap(dst, MR_BYTES);

	fig->rtt_poll = efa_ping(a, EFA_RTT_POLL, false, &fig->n_poll);
	fig->rtt_sleep = efa_ping(a, EFA_RTT_SLEEP, true, &fig->n_sleep);
}

/* B's side of the EFA part; returns with the QP and the MR still held. */
static void run_efa_b(struct efa_endpoint *b, struct kfab_efa_reg_mr *mr,
		      uint8_t **mrbuf)
{
	static uint8_t payload[65536];
	struct efa_msg m;
	unsigned int n;
	uint32_t len;
	uint8_t *buf;
	char rnr;

	efa_open(b, false);
	efa_connect(b);

	xread(b->d.from_peer, &rnr, 1);
	n = efa_post(b);
	/* step 6. by hand, so A knows we are asleep before it sends */
	arm(&b->d);
	printf("B: A got RNR: posted %u buffers, armed, sleeping on the eventfd\n", n);
	fflush(stdout);
	xwrite(b->d.to_peer, "r", 1);
	efa_wait_wakeup(b, "A's first packet");
	wait_msg(&b->d, &m, payload, &len, false);
	efa_expect(b, &m, MSG_HELLO);
	if (len != HELLO_BYTES || m.len != HELLO_BYTES)
		die("B: payload of %u B, expected %u", len, HELLO_BYTES);
	for (uint32_t i = 0; i < len; i++)
		if (payload[i] != pattern(i))
			die("B: payload differs at byte %u", i);
	printf("B: woke up (%u eventfd wakeup), got a hello (pid %llu) + %u B payload from QP %u: ok\n",
	       b->d.wakeups, (unsigned long long)m.seq, len, b->src_qpn);

	buf = mmap(NULL, MR_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(buf, 0, MR_BYTES);
	memset(mr, 0, sizeof(*mr));
	mr->vaddr = (uintptr_t)buf;
	mr->length = MR_BYTES;
	mr->access = KFAB_EFA_ACCESS_LOCAL_WRITE | KFAB_EFA_ACCESS_REMOTE_WRITE |
		     KFAB_EFA_ACCESS_REMOTE_READ;
	if (ioctl(b->d.fd, KFAB_EFA_IOC_REG_MR, mr))
		die_ioctl(&b->d, "REG_MR", errno);
	*mrbuf = buf;
	printf("B: REG_MR 1 MiB: lkey %u, rkey 0x%08x, %u pages pinned; armed, sending rkey + address to A\n",
	       mr->lkey, mr->rkey, mr->npages);
	fflush(stdout);

	/* armed before A learns the rkey: its RDMA_NOTIFY must wake us */
	arm(&b->d);
	memset(&m, 0, sizeof(m));
	m.type = MSG_MR;
	m.rkey = mr->rkey;
	m.addr = mr->vaddr;
	m.len = MR_BYTES;
	efa_send(b, &m, NULL, 0);
	efa_wait_wakeup(b, "A's RDMA_NOTIFY");
	for (size_t i = 0; i < MR_BYTES; i++)
		if (buf[i] != pattern(i))
			die("B: MR differs at byte %zu: 0x%02x, expected 0x%02x",
			    i, buf[i], pattern(i));
	for (size_t i = 0; i < MR_BYTES; i++)
		buf[i] = flipped(i);
	printf("B: woke on A's RDMA_NOTIFY: 1 MiB in the MR verified; flipped every byte for A to read back\n");
	fflush(stdout);
	efa_send_msg(b, MSG_PONG, 0);

	efa_pong(b, false);
	efa_pong(b, true);
}

static int run_a(struct endpoint *a, struct endpoint *b)
{
	struct efa_endpoint ea = {
		.d = { .name = "A", .cls = "efa", .unit = a->d.unit,
		       .to_peer = a->d.to_peer, .from_peer = a->d.from_peer,
		       .consume = efa_consume },
	};
	static uint8_t hello[HELLO_BYTES];
	struct efa_figures fig;
	char label[64];
	struct kfab_hfi_sdma sd;
	struct kfab_iovec iov;
	struct demo_msg m;
	uint8_t *src;
	uint64_t t0, t1, rtt_poll, rtt_sleep;
	bool notified;
	char ready;

	ep_connect(a);

	/* B tells us when it is asleep, so the NOTIFY path is exercised. */
	xread(a->d.from_peer, &ready, 1);
	for (size_t i = 0; i < sizeof(hello); i++)
		hello[i] = pattern(i);
	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	snprintf(m.text, sizeof(m.text), "hello from A (pid %d)", (int)getpid());
	notified = produce(a, &m, hello, sizeof(hello));
	printf("A: sent \"%s\" + %u B eager payload into B's RHQ%s\n", m.text,
	       HELLO_BYTES, notified ? "; B was armed: NOTIFY" : "");

	wait_msg(&a->d, &m, NULL, NULL, true);
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
	if (ioctl(a->d.fd, KFAB_HFI_IOC_SDMA, &sd))
		die_ioctl(&a->d, "SDMA", errno);
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
		if (ioctl(a->d.fd, KFAB_HFI_IOC_SDMA, &sd))
			die_ioctl(&a->d, "SDMA", errno);
	t1 = now_ns();
	double mibs = (double)SDMA_REPEAT * SDMA_BYTES / (1 << 20) /
		      ((double)(t1 - t0) / 1e9);

	wait_msg(&a->d, &m, NULL, NULL, true);	/* B verified the bytes */
	expect(a, &m, MSG_PONG);

	rtt_poll = ping(a, RTT_POLL, false);
	rtt_sleep = ping(a, RTT_SLEEP, true);

	wait_msg(&a->d, &m, NULL, NULL, true);
	expect(a, &m, MSG_BYE);

	run_efa_a(&ea, &fig);

	/* B still holds its context, TID, QP and MR: the gauges are live */
	unsigned int u[2] = { a->d.unit, b->d.unit };

	printf("\n");
	print_counters("hfi", u, hfi_attrs, counters, NCOUNTERS,
		       (const long long *const[2]){ before[0], before[1] });
	print_counters("efa", u, efa_attrs, efa_counters, NEFA_COUNTERS,
		       (const long long *const[2]){ efa_before[0],
						    efa_before[1] });
	printf("%-40s %12.1f MiB/s\n", "SDMA bandwidth (32 x 1 MiB, one copy)",
	       mibs);
	printf("%-40s %12.2f us\n", "packet round trip, both polling",
	       (double)rtt_poll / 1e3);
	printf("%-40s %12.2f us\n", "packet round trip, B asleep (eventfd)",
	       (double)rtt_sleep / 1e3);
	printf("%-40s %12u\n", "eventfd wakeups of A", a->d.wakeups);
	printf("%-40s %12.1f MiB/s\n", "EFA RDMA write bandwidth (32 x 1 MiB)",
	       fig.write_mibs);
	printf("%-40s %12.1f MiB/s\n", "EFA RDMA read bandwidth (32 x 1 MiB)",
	       fig.read_mibs);
	snprintf(label, sizeof(label), "EFA round trip, both polling (%d x)",
		 fig.n_poll);
	printf("%-40s %12.2f us\n", label, (double)fig.rtt_poll / 1e3);
	snprintf(label, sizeof(label), "EFA round trip, B asleep (%d x)",
		 fig.n_sleep);
	printf("%-40s %12.2f us\n", label, (double)fig.rtt_sleep / 1e3);
	printf("%-40s %12u\n", "eventfd wakeups of A's QP", ea.d.wakeups);
	printf("%-40s %12u\n", "RNR answers A got", ea.rnrs);
	fflush(stdout);
	xwrite(a->d.to_peer, "x", 1);
	efa_close(&ea);
	return 0;
}

static int run_b(struct endpoint *b)
{
	struct efa_endpoint eb = {
		.d = { .name = "B", .cls = "efa", .unit = b->d.unit,
		       .to_peer = b->d.to_peer, .from_peer = b->d.from_peer,
		       .consume = efa_consume },
	};
	struct kfab_efa_dereg_mr dm;
	struct kfab_efa_reg_mr mr;
	uint8_t *mrbuf;
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
	arm(&b->d);
	printf("B: armed, sleeping on the eventfd\n");
	fflush(stdout);
	xwrite(b->d.to_peer, "r", 1);
	wait_msg(&b->d, &m, payload, &len, true);
	expect(b, &m, MSG_HELLO);
	for (uint32_t i = 0; i < len; i++)
		if (payload[i] != pattern(i))
			die("B: eager payload differs at byte %u", i);
	if (len != HELLO_BYTES)
		die("B: eager payload of %u B, expected %u", len, HELLO_BYTES);
	printf("B: woke up (%u eventfd wakeup), got \"%s\" + %u B payload: ok\n",
	       b->d.wakeups, m.text, len);

	buf = mmap(NULL, SDMA_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(buf, 0, SDMA_BYTES);
	memset(&tu, 0, sizeof(tu));
	tu.vaddr = (uintptr_t)buf;
	tu.length = SDMA_BYTES;
	if (ioctl(b->d.fd, KFAB_HFI_IOC_TID_UPDATE, &tu))
		die_ioctl(&b->d, "TID_UPDATE", errno);
	printf("B: TID_UPDATE 1 MiB: handle %u, %u pages pinned; sending it to A\n",
	       tu.handle, tu.npages);
	memset(&m, 0, sizeof(m));
	m.type = MSG_TID;
	m.tid = tu.handle;
	m.len = SDMA_BYTES;
	fflush(stdout);
	produce(b, &m, NULL, 0);

	w = b->d.wakeups;
	wait_msg(&b->d, &m, NULL, NULL, true);
	expect(b, &m, MSG_SDMA_DONE);
	for (size_t i = 0; i < SDMA_BYTES; i++)
		if (buf[i] != pattern(i))
			die("B: TID buffer differs at byte %zu: 0x%02x, expected 0x%02x",
			    i, buf[i], pattern(i));
	printf("B: 1 MiB in the TID buffer verified (%u eventfd wakeups while waiting)\n",
	       b->d.wakeups - w);
	fflush(stdout);
	send_msg(b, MSG_PONG, 0, NULL);

	pong(b, RTT_POLL, false);
	pong(b, RTT_SLEEP, true);
	send_msg(b, MSG_BYE, 0, NULL);

	run_efa_b(&eb, &mr, &mrbuf);

	xread(b->d.from_peer, &done, 1);
	memset(&tf, 0, sizeof(tf));
	tf.handle = tu.handle;
	if (ioctl(b->d.fd, KFAB_HFI_IOC_TID_FREE, &tf))
		die_ioctl(&b->d, "TID_FREE", errno);
	printf("B: %u eventfd wakeups in all; TID freed\n", b->d.wakeups);
	memset(&dm, 0, sizeof(dm));
	dm.lkey = mr.lkey;
	if (ioctl(eb.d.fd, KFAB_EFA_IOC_DEREG_MR, &dm))
		die_ioctl(&eb.d, "DEREG_MR", errno);
	munmap(mrbuf, MR_BYTES);
	efa_close(&eb);
	printf("B: %u eventfd wakeups of its QP in all; MR deregistered, QP destroyed\n",
	       eb.d.wakeups);
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
	struct endpoint a = {
		.d = { .name = "A", .cls = "hfi", .unit = 0, .consume = consume },
	};
	struct endpoint b = {
		.d = { .name = "B", .cls = "hfi", .unit = 1, .consume = consume },
	};
	int ab[2], ba[2], st, failed = 0;
	char uuid_str[37];
	pid_t pa, pb, p;
	uuid_t uuid;

	if (argc == 3) {
		a.d.unit = parse_unit(argv[1]);
		b.d.unit = parse_unit(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: kfab_demo [UNIT_A UNIT_B]\n");
		return 2;
	}

	uuid_generate(uuid);
	uuid_unparse_lower(uuid, uuid_str);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		before[0][i] = read_counter("hfi", a.d.unit, counters[i]);
		before[1][i] = read_counter("hfi", b.d.unit, counters[i]);
	}
	for (size_t i = 0; i < NEFA_COUNTERS; i++) {
		efa_before[0][i] = read_counter("efa", a.d.unit, efa_counters[i]);
		efa_before[1][i] = read_counter("efa", b.d.unit, efa_counters[i]);
	}
	if (pipe2(ab, O_CLOEXEC) || pipe2(ba, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	a.d.to_peer = ab[1];
	a.d.from_peer = ba[0];
	b.d.to_peer = ba[1];
	b.d.from_peer = ab[0];

	printf("kfab_demo: job %s: A on unit %u, B on unit %u\n", uuid_str,
	       a.d.unit, b.d.unit);
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

	/* Both sides are gone: so must be their QPs, MRs and pinned pages. */
	for (int k = 0; k < 2; k++) {
		unsigned int unit = k ? b.d.unit : a.d.unit;

		for (size_t i = 0; i < NEFA_GAUGES; i++) {
			long long n = read_counter("efa", unit, efa_counters[i]);

			for (int tries = 0; n != efa_before[k][i] && tries < 20; tries++) {
				usleep(50000);
				n = read_counter("efa", unit, efa_counters[i]);
			}
			if (n != efa_before[k][i]) {
				fprintf(stderr, "kfab_demo: efa%u counters/%s is %lld after the demo, %lld before\n",
					unit, efa_counters[i], n, efa_before[k][i]);
				failed = 1;
			}
		}
	}
	if (failed)
		return 1;
	printf("kfab_demo: OK\n");
	return 0;
}
