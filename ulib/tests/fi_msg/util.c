// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: the known gaps of libfabric's own providers, small
 * helpers, data patterns, buffers with guard bytes, the descriptions of
 * messages and batches both ranks derive alike.
 */
#include "fi_msg.h"

/* Each a whole case or a part of it, skipped for a provider (fi_msg.h) */
const struct known_gap known_gaps[] = {
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

uint64_t slack_tagged;
uint64_t slack_send;

/* Why @what ("case" or "case/part") is skipped for this provider, or NULL. */
const char *known_gap(const char *what)
{
	for (const struct known_gap *g = known_gaps; g->prov; g++)
		if (!strncmp(opt_prov, g->prov, strlen(g->prov)) &&
		    !strcmp(what, g->what))
			return g->why;
	return NULL;
}

/* ---- small helpers ---- */

__attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...)
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

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append to the string in @buf. */
__attribute__((format(printf, 3, 4)))
void addf(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

void flags_str(uint64_t flags, char *buf, size_t size)
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

uint64_t seed_of(uint64_t a, uint64_t b)
{
	return mix64((a << 32) ^ b ^ 0x5bd1e9955bd1e995ull);
}

uint8_t pat_byte(uint64_t seed, size_t pos)
{
	return mix64(seed + (pos >> 3) * 0x9e3779b97f4a7c15ull) >>
	       ((pos & 7) * 8);
}

/* Fill @p with bytes @off.. of the message with @seed. */
void pat_fill(uint8_t *p, size_t len, uint64_t seed, size_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pat_byte(seed, off + i);
}

/* Index of the first byte of @p that differs from the pattern, or len. */
size_t pat_bad(const uint8_t *p, size_t len, uint64_t seed,
	       size_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat_byte(seed, off + i))
			break;
	return i;
}

/* ---- buffers with guard bytes on both sides ---- */

void gbuf_alloc(struct gbuf *b, size_t len)
{
	b->mem = xmalloc(len + 2 * GUARD);
	b->p = b->mem + GUARD;
	b->len = len;
	memset(b->mem, GUARD_BYTE, GUARD);
	memset(b->p, FILL_BYTE, len);
	memset(b->p + len, GUARD_BYTE, GUARD);
}

bool gbuf_guards_ok(const struct gbuf *b)
{
	for (size_t i = 0; i < GUARD; i++)
		if (b->mem[i] != GUARD_BYTE || b->p[b->len + i] != GUARD_BYTE)
			return false;
	return true;
}

/* Send and receive iov lengths of the vector forms; boundaries differ. */
const struct layout layouts[] = {
	{ 1, 1, { 13 }, { 13 } },
	{ 2, 2, { 1, 20 }, { 11, 10 } },
	{ 3, 3, { 7, 4096, 33 }, { 4000, 100, 36 } },
	{ 4, 4, { 5, 3, 17000, 9 }, { 2, 16000, 1000, 15 } },
	{ 1, 4, { 100003 }, { 3, 50000, 49999, 1 } },
	{ 4, 1, { 99999, 1, 1, 2 }, { 100003 } },
	{ 2, 2, { 10, 20 }, { 16, 100 } },	/* receive space left over */
};

size_t layout_len(const size_t *v, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += v[i];
	return len;
}

void msg_label(const struct msgspec *m, char *buf, size_t size)
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

void batch_spec(const struct batch *b, uint32_t i, struct msgspec *m)
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

size_t batch_max_len(const struct batch *b)
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
