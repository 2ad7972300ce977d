// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_bench - latency, bandwidth and message rate of libfabric providers.
 *
 * The same binary measures kfab's providers (kfab_opx, ...) beside
 * libfabric's own (shm, tcp) through the public API only, so the numbers
 * compare like with like.  For each provider named with -p the program forks
 * a server and a client on this host.  Each opens an FI_EP_RDM endpoint; they
 * swap endpoint names over a socketpair made before the fork, and run:
 *
 *   lat   tagged ping-pong; half the round trip in microseconds
 *   bw    windows of -w tagged sends, one ack per window; MB/s (10^6 B/s)
 *   rate  the bw exchange with small messages; million messages per second
 *
 * Each size runs as one checked iteration, warm-up, the timed iterations,
 * and a second checked iteration.  A checked iteration compares every
 * received byte with a pattern, so a provider that corrupts data fails the
 * run instead of being timed.  The parent process only supervises: it reads
 * the client's results from a pipe, kills both children when one fails or
 * the -T timeout passes, then prints one table per test. The table has a
 * column per provider and ratios to the first provider.  For a provider
 * that answers FI_OPT_KFAB_EFA_STATS (kfab_efa) a further table gives, per
 * size, the protocols the client's sends took.
 *
 * Usage: kfab_bench [-p PROV,...] [-t lat,bw,rate|all] [-s SIZE,...]
 *                   [-w WINDOW] [-n ITERS] [-C CPU,CPU] [-T SECS]
 *                   [-j FILE|-] [-h]
 *
 * Exit status: 0 success, 1 failure (or no provider could run), 2 usage
 * error.  Documentation/tools/kfab_bench.rst describes the method and the
 * JSON output.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "ulib/efa/fi_ext_kfab_efa.h"

#define PROG			"kfab_bench"
#define BENCH_FI_VERSION	FI_VERSION(1, 17)
#define LOOPBACK_NODE		"127.0.0.1"
#define DEFAULT_PROVIDERS	"kfab_opx,shm,tcp"
#define TAG_DATA		0x6b666162ULL	/* "kfab" */
#define HELLO_MAGIC		0x6b666231U
#define NAME_MAX_LEN		1024
#define ACK_LEN			sizeof(uint64_t)
#define ACK_SLOT		64		/* ack_tx and ack_rx lines */
#define RX_BUDGET		(16UL << 20)	/* receive slots of a window */
#define MAX_MSG_SIZE		(256UL << 20)
#define MAX_WINDOW		4096U
#define MAX_TIMEOUT		86400U
#define CQ_BATCH		16
#define VALUE_WIDTH		12		/* table columns */
#define DIST_WIDTH		22
#define CQ_ERR_MAX		64
#define EXIT_USAGE		2
#define EXIT_SKIP		3		/* child: provider not available */
#define TODO_LOG		"rerun with FI_LOG_LEVEL=debug to see the provider's reason"

/* Iteration counts when -n is not given; see drive_timed(). */
#define TIMED_SECS		0.5	/* timed phase at the warm-up's pace */
#define WARM_SECS		0.2	/* most warm-up, unless -n */
#define LAT_BYTES		(64UL << 20)
#define LAT_ITERS_MIN		100UL
#define LAT_ITERS_MAX		5000UL
#define LAT_WARMUP_MIN		1000UL	/* providers grow their pools */
#define WIN_BYTES		(256UL << 20)
#define WIN_MIN			4UL
#define BW_MSGS_MAX		16000UL
#define RATE_MSGS_MAX		256000UL

enum test_id { TEST_LAT, TEST_BW, TEST_RATE, NTESTS };

/* kfab_efa's RDM protocols, as counted by FI_OPT_KFAB_EFA_STATS */
enum proto_id { PR_EAGER, PR_MEDIUM, PR_LONGCTS, PR_LONGREAD, PR_RUNTREAD,
		NPROTOS };

static const char *const proto_name[NPROTOS] = {
	"eager", "medium", "longcts", "longread", "runtread",
};

static const char *const test_name[NTESTS] = { "lat", "bw", "rate" };
static const char *const test_unit[NTESTS] = { "usec", "MB/s", "Mmsg/s" };
static const char *const test_title[NTESTS] = {
	"half round-trip latency, average",
	"streaming bandwidth, 10^6 bytes/s",
	"message rate, 10^6 messages/s",
};

struct strlist {
	char *buf;		/* the split copy of the argument */
	char **v;
	int n;
};

struct sizes {
	size_t *v;
	int n;
};

struct config {
	struct strlist provs;
	bool test_on[NTESTS];
	struct sizes sizes[NTESTS];
	unsigned int window;
	unsigned long iters;	/* 0: scale with the size */
	unsigned int timeout;
	int cpu[2];		/* -C: the server's, the client's; -1: any */
	const char *json;
};

/* One posted operation; op_context of its completion points at ctx. */
struct op {
	struct fi_context2 ctx;
	unsigned int *pending;	/* counter this op belongs to */
	size_t expect;		/* receive length, SIZE_MAX for sends */
	bool busy;
};

/* One side (server or client) of one provider's run, in a child process. */
struct fab {
	const struct config *cfg;
	const char *prov;
	bool server;
	int sock;		/* socketpair end to the peer */
	bool unavailable;
	int getinfo_ret;

	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;
	fi_addr_t peer;
	bool has_stats;		/* FI_OPT_KFAB_EFA_STATS answered */
	size_t inject_size;
	unsigned int window;
	uint32_t syncs;

	uint8_t *mem;
	uint8_t *tx, *rx, *ack_tx, *ack_rx;
	struct op *txops, *rxops;
	struct op ack_tx_op, ack_rx_op;
	unsigned int tx_pending, rx_pending, ack_tx_pending, ack_rx_pending;
};

/* Sent over the socketpair before the endpoint name. */
struct hello {
	uint32_t magic;
	uint32_t window;
	uint32_t name_len;	/* 0: provider not available */
};

enum post_kind { P_TSEND, P_TINJECT, P_TRECV, P_SEND, P_INJECT, P_RECV };

static const struct {
	const char *call;
	bool recv;
	bool completes;
} post_op[] = {
	[P_TSEND]	= { "fi_tsend",		false,	true },
	[P_TINJECT]	= { "fi_tinject",	false,	false },
	[P_TRECV]	= { "fi_trecv",		true,	true },
	[P_SEND]	= { "fi_send",		false,	true },
	[P_INJECT]	= { "fi_inject",	false,	false },
	[P_RECV]	= { "fi_recv",		true,	true },
};

/*
 * A phase of one size: a checked iteration, a chunk of warm-up or the
 * timed iterations.  The client chooses @iters and @timed and sends them
 * in the barrier that starts the phase.
 */
struct phase {
	enum test_id test;
	size_t size;
	unsigned long iters;
	bool verify;
	bool timed;
	uint32_t seed;
};

/* Barrier message; @timed and @iters go from the client to the server. */
struct sync_msg {
	uint32_t token;
	uint32_t timed;
	uint64_t iters;
};

struct measure {
	double value, min, p50, p99;
	uint64_t iters;		/* timed iterations */
	/*
	 * Providers with FI_OPT_KFAB_EFA_STATS (kfab_efa): messages the
	 * client sent with each protocol over the size's phases.
	 */
	uint32_t has_proto;
	uint64_t proto[NPROTOS];
};

/* Client to parent, over the result pipe; smaller than PIPE_BUF. */
enum rec_kind { REC_BEGIN, REC_RESULT };

struct record {
	uint32_t kind;
	uint32_t test;
	uint64_t size;
	struct measure m;
};

struct result {
	int prov;
	enum test_id test;
	size_t size;
	struct measure m;
};

enum status { ST_OK, ST_SKIP, ST_FAIL };

/* Parent: what each provider's run gave. */
struct report {
	struct result *v;
	size_t n, cap;
	enum status *st;	/* per provider */
};

struct child {
	const char *role;
	pid_t pid;
	int pidfd;
	int wstatus;
	bool reaped;
};

struct run {
	const struct config *cfg;
	int prov;
	struct report *rep;
	struct child kid[2];	/* server, client */
	int res;		/* result pipe, -1 after EOF */
	struct record last;	/* last REC_BEGIN, for messages */
	bool begun;
};

/* ---------------------------------------------------------------- util */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned long clamp_ul(unsigned long v, unsigned long lo,
			      unsigned long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static const char *fmt_size(char *buf, size_t len, size_t size)
{
	if (size >= (1UL << 20) && !(size & ((1UL << 20) - 1)))
		snprintf(buf, len, "%zuM", size >> 20);
	else if (size >= 1024 && !(size & 1023))
		snprintf(buf, len, "%zuK", size >> 10);
	else
		snprintf(buf, len, "%zu", size);
	return buf;
}

/*
 * Byte @j of a message filled with @seed: the top byte of a multiplicative
 * hash, which every bit of @j and of @seed changes.
 */
static uint8_t pattern(size_t j, uint32_t seed)
{
	return (((uint32_t)j ^ seed * 0x9e3779b9U) * 2654435761U) >> 24;
}

static void fill(uint8_t *buf, size_t len, uint32_t seed, uint8_t flip)
{
	size_t j;

	for (j = 0; j < len; j++)
		buf[j] = pattern(j, seed) ^ flip;
}

/* ------------------------------------------------------- child messages */

/* One line per message, written at once: two processes share stderr. */
static void bench_msg(const struct fab *f, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": [%s %s] %s\n", f->prov,
		f->server ? "server" : "client", msg);
}

static int fab_err(const struct fab *f, const char *call, ssize_t ret,
		   const char *todo)
{
	bench_msg(f, "%s: %s (%zd); %s", call, fi_strerror((int)-ret), ret,
		  todo ? todo : TODO_LOG);
	return (int)ret;
}

static int nomem(const struct fab *f)
{
	bench_msg(f, "out of memory");
	return -FI_ENOMEM;
}

/* ------------------------------------------------ out-of-band channel */

static int oob_write(const struct fab *f, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(f->sock, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			bench_msg(f, "peer channel: %s; the peer process died",
				  strerror(errno));
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

static int oob_read(const struct fab *f, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = recv(f->sock, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			bench_msg(f, "peer channel: %s; the peer process died",
				  n ? strerror(errno) : "closed");
			return -FI_EIO;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* ------------------------------------------------------ progress, post */

static bool op_in(const struct op *op, const struct op *ops, unsigned int n)
{
	uintptr_t p = (uintptr_t)op, lo = (uintptr_t)ops;

	return p >= lo && p < lo + n * sizeof(*ops) &&
	       (p - lo) % sizeof(*ops) == 0;
}

static bool op_known(const struct fab *f, const struct op *op)
{
	return op == &f->ack_tx_op || op == &f->ack_rx_op ||
	       op_in(op, f->txops, f->window) ||
	       op_in(op, f->rxops, f->window);
}

static int complete(struct fab *f, const struct fi_cq_tagged_entry *e)
{
	struct op *op = e->op_context;

	if (!op_known(f, op) || !op->busy) {
		bench_msg(f, "stray completion (op_context %p, flags 0x%llx): each operation must complete once with its context, injects never",
			  e->op_context, (unsigned long long)e->flags);
		return -FI_EOTHER;
	}
	if (op->expect != SIZE_MAX && e->len != op->expect) {
		bench_msg(f, "receive completed with len %zu, %zu were sent: wrong length",
			  e->len, op->expect);
		return -FI_EIO;
	}
	op->busy = false;
	(*op->pending)--;
	return 0;
}

static int cq_report_errors(struct fab *f)
{
	struct fi_cq_err_entry err;
	int first = 0, i;
	ssize_t ret;

	for (i = 0; i < CQ_ERR_MAX; i++) {
		memset(&err, 0, sizeof(err));
		ret = fi_cq_readerr(f->cq, &err, 0);
		if (ret == -FI_EAGAIN)
			break;
		if (ret < 0)
			return fab_err(f, "fi_cq_readerr", ret, NULL);
		bench_msg(f, "completion error (op_context %p, len %zu): %s; provider: %s",
			  err.op_context, err.len, fi_strerror(err.err),
			  fi_cq_strerror(f->cq, err.prov_errno, err.err_data,
					 NULL, 0));
		if (!first)
			first = err.err ? err.err : FI_EOTHER;
	}
	bench_msg(f, "an operation failed; %s", TODO_LOG);
	return first ? -first : -FI_EOTHER;
}

/* Read completions once; manual progress happens in here. */
static int cq_poll(struct fab *f)
{
	struct fi_cq_tagged_entry ent[CQ_BATCH];
	ssize_t n, i;
	int ret;

	n = fi_cq_read(f->cq, ent, CQ_BATCH);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return cq_report_errors(f);
	if (n < 0)
		return fab_err(f, "fi_cq_read", n, NULL);
	for (i = 0; i < n; i++) {
		ret = complete(f, &ent[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static int drain(struct fab *f, const unsigned int *pending)
{
	int ret;

	while (*pending) {
		ret = cq_poll(f);
		if (ret)
			return ret;
	}
	return 0;
}

static ssize_t post_once(struct fab *f, enum post_kind k, void *buf,
			 size_t len, struct op *op)
{
	switch (k) {
	case P_TSEND:
		return fi_tsend(f->ep, buf, len, f->desc, f->peer, TAG_DATA,
				&op->ctx);
	case P_TINJECT:
		return fi_tinject(f->ep, buf, len, f->peer, TAG_DATA);
	case P_TRECV:
		return fi_trecv(f->ep, buf, len, f->desc, FI_ADDR_UNSPEC,
				TAG_DATA, 0, &op->ctx);
	case P_SEND:
		return fi_send(f->ep, buf, len, f->desc, f->peer, &op->ctx);
	case P_INJECT:
		return fi_inject(f->ep, buf, len, f->peer);
	case P_RECV:
		return fi_recv(f->ep, buf, len, f->desc, FI_ADDR_UNSPEC,
			       &op->ctx);
	}
	return -FI_EINVAL;
}

/*
 * Post one operation.  On -FI_EAGAIN read the CQ and retry, as fi_msg(3)
 * asks of manual-progress applications.  @op is ignored for injects, which
 * write no completion.
 */
static int post(struct fab *f, enum post_kind k, void *buf, size_t len,
		struct op *op)
{
	ssize_t ret;
	int err;

	while ((ret = post_once(f, k, buf, len, op)) == -FI_EAGAIN) {
		err = cq_poll(f);
		if (err)
			return err;
	}
	if (ret)
		return fab_err(f, post_op[k].call, ret, NULL);
	if (post_op[k].completes) {
		op->expect = post_op[k].recv ? len : SIZE_MAX;
		op->busy = true;
		(*op->pending)++;
	}
	return 0;
}

/*
 * Barrier with the peer over the socketpair, reading the CQ while waiting:
 * with manual progress the peer may need us to progress its last sends.
 * The token counts barriers, so two sides out of step are caught.  If @ph
 * is not NULL, it starts that phase: the server takes the client's count.
 */
static int oob_sync(struct fab *f, struct phase *ph)
{
	struct pollfd pfd = { .fd = f->sock, .events = POLLIN };
	struct sync_msg mine = { .token = ++f->syncs }, theirs;
	int ret, n;

	if (ph && !f->server) {
		mine.iters = ph->iters;
		mine.timed = ph->timed;
	}
	ret = oob_write(f, &mine, sizeof(mine));
	while (!ret) {
		n = poll(&pfd, 1, 0);
		if (n > 0)
			break;
		if (n < 0 && errno != EINTR) {
			bench_msg(f, "poll: %s", strerror(errno));
			return -FI_EIO;
		}
		ret = cq_poll(f);
	}
	if (!ret)
		ret = oob_read(f, &theirs, sizeof(theirs));
	if (!ret && theirs.token != mine.token) {
		bench_msg(f, "out of step with the peer (barrier %u, peer %u)",
			  mine.token, theirs.token);
		ret = -FI_EOTHER;
	}
	if (!ret && ph && f->server) {
		ph->iters = theirs.iters;
		ph->timed = theirs.timed;
	}
	return ret;
}

/* ---------------------------------------------------------------- setup */

static size_t max_size(const struct config *cfg)
{
	size_t max = ACK_LEN;
	int t, i;

	for (t = 0; t < NTESTS; t++)
		for (i = 0; cfg->test_on[t] && i < cfg->sizes[t].n; i++)
			if (cfg->sizes[t].v[i] > max)
				max = cfg->sizes[t].v[i];
	return max;
}

static struct fi_info *bench_hints(const char *prov)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup(prov);
	if (!h->fabric_attr->prov_name) {
		fi_freeinfo(h);
		return NULL;
	}
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_MSG;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_ENDPOINT;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	return h;
}

static bool addr_is_ip(uint32_t fmt)
{
	return fmt == FI_SOCKADDR || fmt == FI_SOCKADDR_IN ||
	       fmt == FI_SOCKADDR_IN6;
}

/*
 * libfabric also lists a provider layered under a utility provider with
 * the core provider's name ("kfab_efa;ofi_rxd" for -p kfab_efa): take the
 * first fi_info whose prov_name is exactly @prov, else the first one ("tcp"
 * is only offered as "tcp;ofi_rxm").
 */
static int pick_info(struct fi_info **list, const char *prov)
{
	struct fi_info *fi, *dup;

	for (fi = *list; fi; fi = fi->next)
		if (fi->fabric_attr && fi->fabric_attr->prov_name &&
		    !strcmp(fi->fabric_attr->prov_name, prov))
			break;
	if (!fi || fi == *list)
		return 0;
	dup = fi_dupinfo(fi);
	if (!dup)
		return -FI_ENOMEM;
	fi_freeinfo(*list);
	*list = dup;
	return 0;
}

/*
 * Providers addressed by IP (tcp) are asked again for a source address on
 * the loopback interface; the port is left to them, and fi_getname() after
 * fi_enable() returns the bound one.
 */
static int fab_getinfo(struct fab *f)
{
	struct fi_info *hints = bench_hints(f->prov);
	int ret;

	if (!hints)
		return nomem(f);
	ret = fi_getinfo(BENCH_FI_VERSION, NULL, NULL, 0, hints, &f->info);
	if (!ret)
		ret = pick_info(&f->info, f->prov);
	if (!ret && addr_is_ip(f->info->addr_format)) {
		fi_freeinfo(f->info);
		f->info = NULL;
		ret = fi_getinfo(BENCH_FI_VERSION, LOOPBACK_NODE, NULL,
				 FI_SOURCE, hints, &f->info);
		if (!ret)
			ret = pick_info(&f->info, f->prov);
	}
	fi_freeinfo(hints);
	if (ret == -FI_ENODATA) {
		f->unavailable = true;
		f->getinfo_ret = ret;
		return ret;
	}
	if (ret)
		return fab_err(f, "fi_getinfo", ret,
			       "check the libfabric installation and FI_PROVIDER_PATH");
	f->inject_size = f->info->tx_attr->inject_size;
	return 0;
}

static int fab_domain(struct fab *f)
{
	struct fi_cq_attr cq_attr = {
		.size = 2 * f->cfg->window + 8,
		.format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_NONE,
	};
	struct fi_av_attr av_attr = {
		.type = f->info->domain_attr->av_type,
		.count = 1,
	};
	int ret;

	ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (ret)
		return fab_err(f, "fi_fabric", ret, NULL);
	ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	if (ret)
		return fab_err(f, "fi_domain", ret, NULL);
	ret = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL);
	if (ret)
		return fab_err(f, "fi_cq_open", ret,
			       "the CQ holds 2 * window + 8 entries; try a smaller -w");
	ret = fi_av_open(f->domain, &av_attr, &f->av, NULL);
	if (ret)
		return fab_err(f, "fi_av_open", ret, NULL);
	return 0;
}

static int fab_endpoint(struct fab *f)
{
	int ret;

	ret = fi_endpoint(f->domain, f->info, &f->ep, NULL);
	if (ret)
		return fab_err(f, "fi_endpoint", ret, NULL);
	ret = fi_ep_bind(f->ep, &f->av->fid, 0);
	if (ret)
		return fab_err(f, "fi_ep_bind(av)", ret, NULL);
	ret = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return fab_err(f, "fi_ep_bind(cq)", ret, NULL);
	ret = fi_enable(f->ep);
	if (ret)
		return fab_err(f, "fi_enable", ret, NULL);
	return 0;
}

/* The window both sides can keep posted: -w, bounded by the queue sizes. */
static unsigned int window_limit(const struct fab *f)
{
	size_t w = f->cfg->window;

	if (f->info->tx_attr->size && f->info->tx_attr->size < w)
		w = f->info->tx_attr->size;
	if (f->info->rx_attr->size && f->info->rx_attr->size < w)
		w = f->info->rx_attr->size;
	return w;
}

static int hello_send(struct fab *f, const void *name, size_t len)
{
	struct hello h = {
		.magic = HELLO_MAGIC,
		.window = f->window,
		.name_len = len,
	};
	int ret;

	ret = oob_write(f, &h, sizeof(h));
	if (!ret)
		ret = oob_write(f, name, len);
	return ret;
}

/*
 * Tell the peer that the provider is missing here, so it skips instead of
 * failing.  Best effort: the peer may have exited already, for the same
 * reason, and then there is nobody left to tell.
 */
static void hello_refuse(const struct fab *f)
{
	struct hello h = { .magic = HELLO_MAGIC };

	(void)send(f->sock, &h, sizeof(h), MSG_NOSIGNAL);
}

static int hello_recv(struct fab *f, char *name)
{
	struct hello h;
	int ret;

	ret = oob_read(f, &h, sizeof(h));
	if (ret)
		return ret;
	if (h.magic != HELLO_MAGIC || h.name_len > NAME_MAX_LEN ||
	    (h.name_len && !h.window)) {
		bench_msg(f, "garbled endpoint name from the peer");
		return -FI_EOTHER;
	}
	if (!h.name_len) {
		f->unavailable = true;
		return -FI_ENODATA;
	}
	if (h.window < f->window)
		f->window = h.window;
	return oob_read(f, name, h.name_len);
}

static int fab_connect(struct fab *f)
{
	char name[NAME_MAX_LEN], peer[NAME_MAX_LEN];
	size_t len = sizeof(name);
	int ret;

	ret = fi_getname(&f->ep->fid, name, &len);
	if (ret)
		return fab_err(f, "fi_getname", ret, NULL);
	f->window = window_limit(f);
	ret = hello_send(f, name, len);
	if (!ret)
		ret = hello_recv(f, peer);
	if (ret)
		return ret;
	ret = fi_av_insert(f->av, peer, 1, &f->peer, 0, NULL);
	if (ret != 1)
		return fab_err(f, "fi_av_insert", ret < 0 ? ret : -FI_EINVAL,
			       "the provider rejected the peer's fi_getname() address");
	if (!f->server && f->window < f->cfg->window)
		bench_msg(f, "window lowered from %u to %u by the tx/rx queue sizes",
			  f->cfg->window, f->window);
	return 0;
}

static int fab_mr(struct fab *f, size_t len)
{
	uint64_t mode = f->info->domain_attr->mr_mode;
	int ret;

	if (!(mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(f->domain, f->mem, len, FI_SEND | FI_RECV, 0, 0, 0,
			&f->mr, NULL);
	if (ret)
		return fab_err(f, "fi_mr_reg", ret,
			       "if the provider pins memory, raise ulimit -l");
	if (mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(f->mr, &f->ep->fid, 0);
		if (ret)
			return fab_err(f, "fi_mr_bind", ret, NULL);
		ret = fi_mr_enable(f->mr);
		if (ret)
			return fab_err(f, "fi_mr_enable", ret, NULL);
	}
	f->desc = fi_mr_desc(f->mr);
	return 0;
}

static void ops_init(struct op *ops, unsigned int n, unsigned int *pending)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ops[i].pending = pending;
}

/*
 * One allocation holds everything: the send buffer, the receive slots of
 * a window (at most RX_BUDGET unless one message is larger) and the acks.
 */
static int fab_memory(struct fab *f)
{
	size_t page = sysconf(_SC_PAGESIZE), max = max_size(f->cfg);
	size_t tx_len, rx_len, len;
	void *mem;

	rx_len = max > RX_BUDGET ? max : RX_BUDGET;
	if (rx_len > (size_t)f->window * max)
		rx_len = (size_t)f->window * max;
	tx_len = (max + page - 1) / page * page;
	rx_len = (rx_len + page - 1) / page * page;
	len = tx_len + rx_len + page;
	f->txops = calloc(f->window, sizeof(*f->txops));
	f->rxops = calloc(f->window, sizeof(*f->rxops));
	if (!f->txops || !f->rxops || posix_memalign(&mem, page, len))
		return nomem(f);
	f->mem = mem;
	memset(f->mem, 0, len);
	f->tx = f->mem;
	f->rx = f->tx + tx_len;
	f->ack_tx = f->rx + rx_len;
	f->ack_rx = f->ack_tx + ACK_SLOT;
	ops_init(f->txops, f->window, &f->tx_pending);
	ops_init(f->rxops, f->window, &f->rx_pending);
	ops_init(&f->ack_tx_op, 1, &f->ack_tx_pending);
	ops_init(&f->ack_rx_op, 1, &f->ack_rx_pending);
	return fab_mr(f, len);
}

/*
 * kfab_efa's per-endpoint statistics: messages sent by each protocol so
 * far.  False for a provider that does not know the option; fab_open()
 * asks once, and then the protocol tables leave that provider out.
 */
static bool proto_stats(const struct fab *f, uint64_t *proto)
{
	struct fi_kfab_efa_ep_stats st;
	size_t len = sizeof(st);

	if (fi_getopt(&f->ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
		      &st, &len) || len != sizeof(st))
		return false;
	proto[PR_EAGER] = st.eager_msgs;
	proto[PR_MEDIUM] = st.medium_msgs;
	proto[PR_LONGCTS] = st.longcts_msgs;
	proto[PR_LONGREAD] = st.longread_msgs;
	proto[PR_RUNTREAD] = st.runtread_msgs;
	return true;
}

static int fab_open(struct fab *f)
{
	int ret;

	ret = fab_getinfo(f);
	if (ret) {
		if (f->unavailable)
			hello_refuse(f);
		return ret;
	}
	ret = fab_domain(f);
	if (!ret)
		ret = fab_endpoint(f);
	if (!ret)
		ret = fab_connect(f);
	if (!ret)
		ret = fab_memory(f);
	if (!ret) {
		uint64_t probe[NPROTOS];

		f->has_stats = proto_stats(f, probe);
	}
	return ret;
}

static int close_fid(const struct fab *f, struct fid *fid, const char *what)
{
	int ret;

	if (!fid)
		return 0;
	ret = fi_close(fid);
	if (ret)
		fab_err(f, what, ret, NULL);
	return ret;
}

/* Close in reverse order of binding: the MR is bound to the endpoint. */
static int fab_close(struct fab *f)
{
	int ret = 0;

	ret |= close_fid(f, f->mr ? &f->mr->fid : NULL, "fi_close(mr)");
	ret |= close_fid(f, f->ep ? &f->ep->fid : NULL, "fi_close(ep)");
	ret |= close_fid(f, f->av ? &f->av->fid : NULL, "fi_close(av)");
	ret |= close_fid(f, f->cq ? &f->cq->fid : NULL, "fi_close(cq)");
	ret |= close_fid(f, f->domain ? &f->domain->fid : NULL,
			 "fi_close(domain)");
	ret |= close_fid(f, f->fabric ? &f->fabric->fid : NULL,
			 "fi_close(fabric)");
	fi_freeinfo(f->info);
	free(f->mem);
	free(f->txops);
	free(f->rxops);
	return ret;
}

/* ---------------------------------------------------------------- tests */

static unsigned int rx_slots(const struct fab *f, const struct phase *ph)
{
	if (ph->test == TEST_LAT)
		return 1;
	return clamp_ul(RX_BUDGET / ph->size, 1, f->window);
}

static int check_data(const struct fab *f, const struct phase *ph,
		      const uint8_t *buf, uint32_t seed)
{
	size_t j;

	for (j = 0; j < ph->size; j++) {
		if (buf[j] == pattern(j, seed))
			continue;
		bench_msg(f, "data check failed: %s %zu B, byte %zu is 0x%02x, not 0x%02x",
			  test_name[ph->test], ph->size, j, buf[j],
			  pattern(j, seed));
		return -FI_EIO;
	}
	return 0;
}

/* Check every receive slot; each one received a whole message. */
static int check_slots(const struct fab *f, const struct phase *ph)
{
	unsigned int i, n = rx_slots(f, ph);
	uint32_t seed = ph->seed + !f->server;
	int ret = 0;

	for (i = 0; !ret && i < n; i++)
		ret = check_data(f, ph, f->rx + (size_t)i * ph->size, seed);
	return ret;
}

/*
 * Before a checked iteration: the sender fills its buffer with its
 * pattern; the receiver fills its slots with the complement of the
 * pattern it expects, so a byte the provider never wrote cannot pass.
 */
static void phase_fill(struct fab *f, const struct phase *ph)
{
	bool lat = ph->test == TEST_LAT;
	unsigned int i, n = rx_slots(f, ph);

	if (lat || !f->server)
		fill(f->tx, ph->size, ph->seed + f->server, 0);
	for (i = 0; (lat || f->server) && i < n; i++)
		fill(f->rx + (size_t)i * ph->size, ph->size,
		     ph->seed + !f->server, 0xff);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank @pct percentile of sorted @v. */
static double percentile(const double *v, unsigned long n, unsigned int pct)
{
	unsigned long r = (n * pct + 99) / 100;

	return v[r ? r - 1 : 0];
}

static void lat_stats(double *v, unsigned long n, struct measure *m)
{
	double sum = 0;
	unsigned long i;

	for (i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof(*v), cmp_double);
	m->value = sum / n;
	m->min = v[0];
	m->p50 = percentile(v, n, 50);
	m->p99 = percentile(v, n, 99);
}

static enum post_kind lat_send_kind(const struct fab *f, size_t size)
{
	return size <= f->inject_size ? P_TINJECT : P_TSEND;
}

/* Client: one ping, one pong. */
static int lat_round(struct fab *f, size_t size)
{
	int ret;

	ret = post(f, P_TRECV, f->rx, size, &f->rxops[0]);
	if (!ret)
		ret = post(f, lat_send_kind(f, size), f->tx, size,
			   &f->txops[0]);
	if (!ret)
		ret = drain(f, &f->rx_pending);
	if (!ret)
		ret = drain(f, &f->tx_pending);
	return ret;
}

/* Client: half round-trip samples, when timed; the phase's duration. */
static int lat_client(struct fab *f, struct phase *ph, struct measure *m,
		      double *secs)
{
	double *t = NULL, start, t0, t1;
	unsigned long i;
	int ret;

	if (ph->timed) {
		t = calloc(ph->iters, sizeof(*t));
		if (!t)
			return nomem(f);
	}
	ret = oob_sync(f, ph);
	start = now();
	for (i = 0, t0 = start; !ret && i < ph->iters; i++, t0 = t1) {
		ret = lat_round(f, ph->size);
		t1 = now();
		if (t)
			t[i] = (t1 - t0) * 1e6 / 2;
	}
	*secs = now() - start;
	if (!ret && ph->verify)
		ret = check_data(f, ph, f->rx, ph->seed + 1);
	if (!ret && t)
		lat_stats(t, ph->iters, m);
	free(t);
	return ret;
}

/* Server: wait for a ping, pre-post the next receive, send the pong. */
static int lat_echo(struct fab *f, const struct phase *ph, bool last)
{
	int ret;

	ret = drain(f, &f->rx_pending);
	if (!ret && ph->verify)
		ret = check_data(f, ph, f->rx, ph->seed);
	if (!ret && !last)
		ret = post(f, P_TRECV, f->rx, ph->size, &f->rxops[0]);
	if (!ret)
		ret = post(f, lat_send_kind(f, ph->size), f->tx, ph->size,
			   &f->txops[0]);
	if (!ret)
		ret = drain(f, &f->tx_pending);
	return ret;
}

static int lat_server(struct fab *f, struct phase *ph)
{
	unsigned long i;
	int ret;

	ret = post(f, P_TRECV, f->rx, ph->size, &f->rxops[0]);
	if (!ret)
		ret = oob_sync(f, ph);
	for (i = 0; !ret && i < ph->iters; i++)
		ret = lat_echo(f, ph, i + 1 == ph->iters);
	return ret;
}

/* Client: one window of sends, then the receiver's ack number @seq. */
static int win_send(struct fab *f, size_t size, uint64_t seq)
{
	unsigned int i;
	uint64_t got;
	int ret;

	ret = post(f, P_RECV, f->ack_rx, ACK_LEN, &f->ack_rx_op);
	for (i = 0; !ret && i < f->window; i++)
		ret = post(f, P_TSEND, f->tx, size, &f->txops[i]);
	if (!ret)
		ret = drain(f, &f->tx_pending);
	if (!ret)
		ret = drain(f, &f->ack_rx_pending);
	if (ret)
		return ret;
	memcpy(&got, f->ack_rx, sizeof(got));
	if (got != seq) {
		bench_msg(f, "ack %llu received, %llu expected: wrong message",
			  (unsigned long long)got, (unsigned long long)seq);
		return -FI_EIO;
	}
	return 0;
}

static int win_client(struct fab *f, struct phase *ph, struct measure *m,
		      double *secs)
{
	double start, msgs;
	unsigned long w;
	int ret;

	ret = oob_sync(f, ph);
	start = now();
	for (w = 0; !ret && w < ph->iters; w++)
		ret = win_send(f, ph->size, w);
	*secs = now() - start;
	if (ret || !ph->timed)
		return ret;
	msgs = (double)ph->iters * f->window;
	m->value = (ph->test == TEST_BW ? msgs * ph->size : msgs) / *secs / 1e6;
	return 0;
}

static int post_window(struct fab *f, const struct phase *ph)
{
	unsigned int i, slots = rx_slots(f, ph);
	int ret = 0;

	for (i = 0; !ret && i < f->window; i++)
		ret = post(f, P_TRECV, f->rx + (size_t)(i % slots) * ph->size,
			   ph->size, &f->rxops[i]);
	return ret;
}

static int send_ack(struct fab *f, uint64_t seq)
{
	enum post_kind k = f->inject_size >= ACK_LEN ? P_INJECT : P_SEND;
	int ret;

	ret = drain(f, &f->ack_tx_pending);
	if (ret)
		return ret;
	memcpy(f->ack_tx, &seq, sizeof(seq));
	return post(f, k, f->ack_tx, ACK_LEN, &f->ack_tx_op);
}

/*
 * Server: the receives of a window are posted before the sender may start
 * it (the barrier, or the previous ack), so no message arrives unexpected.
 */
static int win_server(struct fab *f, struct phase *ph)
{
	unsigned long w;
	int ret;

	ret = post_window(f, ph);
	if (!ret)
		ret = oob_sync(f, ph);
	for (w = 0; !ret && w < ph->iters; w++) {
		ret = drain(f, &f->rx_pending);
		if (!ret && ph->verify)
			ret = check_slots(f, ph);
		if (!ret && w + 1 < ph->iters)
			ret = post_window(f, ph);
		if (!ret)
			ret = send_ack(f, w);
	}
	if (!ret)
		ret = drain(f, &f->ack_tx_pending);
	return ret;
}

/* Run @ph; the client also gets the timed results and the duration. */
static int run_phase(struct fab *f, struct phase *ph, struct measure *m,
		     double *secs)
{
	if (ph->verify)
		phase_fill(f, ph);
	if (ph->test == TEST_LAT)
		return f->server ? lat_server(f, ph) :
				   lat_client(f, ph, m, secs);
	return f->server ? win_server(f, ph) : win_client(f, ph, m, secs);
}

/* Most timed iterations (windows for bw and rate) for a size. */
static unsigned long max_iters(const struct fab *f, enum test_id t,
			       size_t size)
{
	unsigned long cap;

	if (t == TEST_LAT)
		return clamp_ul(LAT_BYTES / size, LAT_ITERS_MIN,
				LAT_ITERS_MAX);
	cap = (t == TEST_RATE ? RATE_MSGS_MAX : BW_MSGS_MAX) / f->window;
	return clamp_ul(WIN_BYTES / f->window / size, WIN_MIN,
			cap > WIN_MIN ? cap : WIN_MIN);
}

/* Warm-up iterations: a tenth of the timed ones, and enough rounds. */
static unsigned long warmup_iters(const struct fab *f, enum test_id t,
				  size_t size)
{
	unsigned long n = f->cfg->iters ? f->cfg->iters : max_iters(f, t, size);
	unsigned long min = t == TEST_LAT ? LAT_WARMUP_MIN : 1;

	return n / 10 > min ? n / 10 : min;
}

/* Iterations of @per seconds each that fit in @secs, within [lo, hi]. */
static unsigned long fit(double secs, double per, unsigned long lo,
			 unsigned long hi)
{
	double n = per > 0 ? secs / per : hi;

	return n >= hi ? hi : n <= lo ? lo : (unsigned long)n;
}

static int report(int fd, enum rec_kind kind, enum test_id t, size_t size,
		  const struct measure *m)
{
	struct record rec = { .kind = kind, .test = t, .size = size };

	if (m)
		rec.m = *m;
	if (write(fd, &rec, sizeof(rec)) != sizeof(rec)) {
		fprintf(stderr, PROG ": result pipe: %s\n", strerror(errno));
		return -FI_EIO;
	}
	return 0;
}

/* A checked iteration; @secs is its duration, for the client. */
static int run_check(struct fab *f, enum test_id t, size_t size,
		     uint32_t seed, double *secs)
{
	struct phase ph = {
		.test = t, .size = size, .iters = 1, .verify = true,
		.seed = seed,
	};
	struct measure m;

	return run_phase(f, &ph, &m, secs);
}

/* Server: warm-up chunks, then the timed phase, as the barriers say. */
static int serve_timed(struct fab *f, enum test_id t, size_t size)
{
	struct phase ph = { .test = t, .size = size };
	struct measure m;
	double secs;
	int ret;

	do {
		ret = run_phase(f, &ph, &m, &secs);
	} while (!ret && !ph.timed);
	return ret;
}

/*
 * Client: warm up in chunks until warmup_iters() are done or WARM_SECS have
 * passed, each chunk sized by the pace so far (@per seconds an iteration,
 * first from the checked one).  Then time -n iterations, or as many as
 * take TIMED_SECS at that pace within the size's bounds, so that a loaded
 * machine gives a short run instead of a timeout.
 */
static int drive_timed(struct fab *f, enum test_id t, size_t size,
		       double per, struct measure *m)
{
	unsigned long left = warmup_iters(f, t, size), max;
	struct phase ph = { .test = t, .size = size };
	double spent = 0, secs;
	int ret = 0;

	while (!ret && left && (f->cfg->iters || spent < WARM_SECS)) {
		ph.iters = f->cfg->iters ? left :
			   fit(WARM_SECS - spent, per, 1, left);
		ret = run_phase(f, &ph, m, &secs);
		per = secs / ph.iters;
		spent += secs;
		left -= ph.iters;
	}
	max = max_iters(f, t, size);
	ph.iters = f->cfg->iters ? f->cfg->iters :
		   fit(TIMED_SECS, per, t == TEST_LAT ? LAT_ITERS_MIN : WIN_MIN,
		       max);
	ph.timed = true;
	if (!ret)
		ret = run_phase(f, &ph, m, &secs);
	m->iters = ph.iters;
	return ret;
}

/* Checked iteration, warm-up and timed iterations, checked iteration. */
static int run_size(struct fab *f, enum test_id t, size_t size, int res)
{
	uint32_t seed = (uint32_t)size * 0x9e3779b9U + t * 0x10000U;
	uint64_t before[NPROTOS], after[NPROTOS];
	struct measure m = { 0 };
	bool stats = !f->server && f->has_stats && proto_stats(f, before);
	double per = 0;
	int ret, k;

	ret = f->server ? 0 : report(res, REC_BEGIN, t, size, NULL);
	if (!ret)
		ret = run_check(f, t, size, seed, &per);
	if (!ret)
		ret = f->server ? serve_timed(f, t, size) :
				  drive_timed(f, t, size, per, &m);
	if (!ret)
		ret = run_check(f, t, size, seed + 0x100U, &per);
	if (!ret && stats && proto_stats(f, after)) {
		m.has_proto = 1;
		for (k = 0; k < NPROTOS; k++)
			m.proto[k] = after[k] - before[k];
	}
	if (!ret && !f->server)
		ret = report(res, REC_RESULT, t, size, &m);
	return ret;
}

static int run_all(struct fab *f, int res)
{
	const struct config *cfg = f->cfg;
	int t, i, ret = 0;

	for (t = 0; t < NTESTS; t++)
		for (i = 0; !ret && cfg->test_on[t] && i < cfg->sizes[t].n;
		     i++)
			ret = run_size(f, t, cfg->sizes[t].v[i], res);
	return ret;
}

static void skip_msg(const struct fab *f)
{
	if (f->getinfo_ret)
		fprintf(stderr, PROG ": provider '%s' has no FI_EP_RDM with FI_TAGGED|FI_MSG (fi_getinfo: %s); see fi_info -l, FI_PROVIDER_PATH; skipped\n",
			f->prov, fi_strerror(-f->getinfo_ret));
	else
		fprintf(stderr, PROG ": provider '%s' missing in the server; skipped\n",
			f->prov);
}

/* Body of a server (@res < 0) or client process; returns its exit code. */
static int child_main(const struct config *cfg, const char *prov,
		      bool server, int sock, int res)
{
	struct fab f = {
		.cfg = cfg, .prov = prov, .server = server, .sock = sock,
	};
	int ret, cret;

	ret = fab_open(&f);
	if (!ret)
		ret = run_all(&f, res);
	if (!ret)
		ret = oob_sync(&f, NULL);	/* nothing in flight anywhere */
	cret = fab_close(&f);
	if (f.unavailable) {
		if (!server)
			skip_msg(&f);
		return EXIT_SKIP;
	}
	return ret || cret ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* --------------------------------------------------------------- parent */

/* -C: the calling process runs on @cpu alone (none: -1). */
static int pin(int cpu, bool server)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set))
		return 0;
	fprintf(stderr, PROG ": %s: pinning to CPU %d: %s\n",
		server ? "server" : "client", cpu, strerror(errno));
	return -1;
}

static pid_t spawn(const struct config *cfg, const char *prov, bool server,
		   const int sv[2], const int pfd[2])
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		_exit(EXIT_FAILURE);
	if (pin(cfg->cpu[!server], server))
		_exit(EXIT_FAILURE);
	close(sv[server]);
	close(pfd[0]);
	if (server)
		close(pfd[1]);
	exit(child_main(cfg, prov, server, sv[!server],
			server ? -1 : pfd[1]));
}

static void describe(const struct child *c, char *buf, size_t len)
{
	if (WIFSIGNALED(c->wstatus))
		snprintf(buf, len, "%s was killed by signal %d (%s)", c->role,
			 WTERMSIG(c->wstatus), strsignal(WTERMSIG(c->wstatus)));
	else
		snprintf(buf, len, "%s exited with status %d", c->role,
			 WEXITSTATUS(c->wstatus));
}

static void where(const struct run *r, char *buf, size_t len)
{
	char sz[32];

	if (!r->begun)
		snprintf(buf, len, "setup");
	else
		snprintf(buf, len, "%s %s B", test_name[r->last.test],
			 fmt_size(sz, sizeof(sz), r->last.size));
}

static int report_add(struct report *rep, int prov, const struct record *rec)
{
	struct result *v;

	if (rep->n == rep->cap) {
		rep->cap = rep->cap ? 2 * rep->cap : 64;
		v = realloc(rep->v, rep->cap * sizeof(*v));
		if (!v)
			return -1;
		rep->v = v;
	}
	rep->v[rep->n++] = (struct result){
		.prov = prov, .test = rec->test, .size = rec->size,
		.m = rec->m,
	};
	return 0;
}

/* Read one record; at EOF stop polling the pipe. */
static int read_record(struct run *r)
{
	struct record rec;
	ssize_t n;

	n = read(r->res, &rec, sizeof(rec));
	if (n == 0) {
		r->res = -1;
		return 0;
	}
	if (n != sizeof(rec) || rec.test >= NTESTS) {
		fprintf(stderr, PROG ": [%s] bad record from the client\n",
			r->cfg->provs.v[r->prov]);
		return -1;
	}
	if (rec.kind == REC_BEGIN) {
		r->last = rec;
		r->begun = true;
		return 0;
	}
	if (report_add(r->rep, r->prov, &rec)) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	return 0;
}

static void kill_all(struct run *r)
{
	int k;

	for (k = 0; k < 2; k++) {
		if (r->kid[k].reaped || r->kid[k].pid <= 0)
			continue;
		kill(r->kid[k].pid, SIGKILL);
		waitpid(r->kid[k].pid, &r->kid[k].wstatus, 0);
		r->kid[k].reaped = true;
	}
}

static bool kid_failed(const struct child *c)
{
	return !WIFEXITED(c->wstatus) ||
	       (WEXITSTATUS(c->wstatus) != EXIT_SUCCESS &&
		WEXITSTATUS(c->wstatus) != EXIT_SKIP);
}

static enum status fail(struct run *r, const char *what)
{
	char at[64];

	where(r, at, sizeof(at));
	fprintf(stderr, PROG ": [%s] %s during %s; stopped both processes\n",
		r->cfg->provs.v[r->prov], what, at);
	kill_all(r);
	return ST_FAIL;
}

static enum status reap(struct run *r, int k)
{
	struct child *c = &r->kid[k];
	char what[128];

	if (waitpid(c->pid, &c->wstatus, 0) < 0)
		c->wstatus = W_EXITCODE(EXIT_FAILURE, 0);
	c->reaped = true;
	if (!kid_failed(c))
		return ST_OK;
	describe(c, what, sizeof(what));
	return fail(r, what);
}

static int ms_left(double deadline)
{
	double left = deadline - now();

	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* Collect results until both children exit, one fails, or time is up. */
static enum status supervise(struct run *r)
{
	double deadline = now() + r->cfg->timeout;
	struct pollfd pfd[3];
	char what[64];
	int k, n;

	while (!r->kid[0].reaped || !r->kid[1].reaped) {
		pfd[0] = (struct pollfd){ .fd = r->res, .events = POLLIN };
		for (k = 0; k < 2; k++)
			pfd[k + 1] = (struct pollfd){
				.fd = r->kid[k].reaped ? -1 : r->kid[k].pidfd,
				.events = POLLIN,
			};
		if (!ms_left(deadline)) {
			snprintf(what, sizeof(what), "timed out after %u s (-T)",
				 r->cfg->timeout);
			return fail(r, what);
		}
		n = poll(pfd, 3, ms_left(deadline));
		if (n < 0 && errno != EINTR)
			return fail(r, "poll failed");
		if (n > 0 && pfd[0].revents && read_record(r))
			return fail(r, "result pipe broken");
		for (k = 0; n > 0 && k < 2; k++)
			if (pfd[k + 1].revents && reap(r, k) == ST_FAIL)
				return ST_FAIL;
	}
	while (r->res >= 0)
		if (read_record(r))
			return fail(r, "result pipe broken");
	return WEXITSTATUS(r->kid[0].wstatus) == EXIT_SKIP ||
	       WEXITSTATUS(r->kid[1].wstatus) == EXIT_SKIP ? ST_SKIP : ST_OK;
}

static int start_children(struct run *r, const int sv[2], const int pfd[2])
{
	const char *prov = r->cfg->provs.v[r->prov];
	int k;

	r->kid[0].role = "server";
	r->kid[1].role = "client";
	for (k = 0; k < 2; k++) {
		r->kid[k].pid = spawn(r->cfg, prov, !k, sv, pfd);
		if (r->kid[k].pid < 0) {
			perror(PROG ": fork");
			return -1;
		}
	}
	for (k = 0; k < 2; k++) {
		r->kid[k].pidfd = pidfd_open(r->kid[k].pid, 0);
		if (r->kid[k].pidfd < 0) {
			perror(PROG ": pidfd_open (Linux 5.3 or later needed)");
			return -1;
		}
	}
	return 0;
}

static enum status run_provider(const struct config *cfg, int p,
				struct report *rep)
{
	struct run r = {
		.cfg = cfg, .prov = p, .rep = rep,
		.kid = { { .pid = -1, .pidfd = -1 }, { .pid = -1, .pidfd = -1 } },
	};
	int sv[2], pfd[2], res, k;
	enum status st;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror(PROG ": socketpair");
		return ST_FAIL;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		perror(PROG ": pipe");
		close(sv[0]);
		close(sv[1]);
		return ST_FAIL;
	}
	res = pfd[0];
	r.res = res;
	st = start_children(&r, sv, pfd) ? fail(&r, "start failed") : ST_OK;
	close(sv[0]);
	close(sv[1]);
	close(pfd[1]);
	if (st == ST_OK)
		st = supervise(&r);
	close(res);
	for (k = 0; k < 2; k++)
		if (r.kid[k].pidfd >= 0)
			close(r.kid[k].pidfd);
	return st;
}

/* --------------------------------------------------------------- output */

static const struct result *find(const struct report *rep, int prov,
				 enum test_id t, size_t size)
{
	size_t i;

	for (i = 0; i < rep->n; i++)
		if (rep->v[i].prov == prov && rep->v[i].test == t &&
		    rep->v[i].size == size)
			return &rep->v[i];
	return NULL;
}

/* Width of a column headed @name, at least @min. */
static int col_width(const char *name, int min)
{
	int w = strlen(name) + 2;

	return w < min ? min : w;
}

static const char *status_text(enum status st)
{
	return st == ST_SKIP ? "skip" : st == ST_FAIL ? "FAIL" : "-";
}

static void print_cell(FILE *fp, const struct result *res, enum status st,
		       enum test_id t, int width)
{
	static const char *const fmt[NTESTS] = { "%*.2f", "%*.1f", "%*.3f" };

	if (res)
		fprintf(fp, fmt[t], width, res->m.value);
	else
		fprintf(fp, "%*s", width, status_text(st));
}

static void print_ratios(FILE *fp, const struct config *cfg,
			 const struct report *rep, enum test_id t, size_t size)
{
	const struct result *base = find(rep, 0, t, size), *res;
	char label[256];
	int p, w;

	for (p = 1; p < cfg->provs.n; p++) {
		snprintf(label, sizeof(label), "%s/%s", cfg->provs.v[0],
			 cfg->provs.v[p]);
		w = col_width(label, VALUE_WIDTH);
		res = find(rep, p, t, size);
		if (base && res && res->m.value > 0)
			fprintf(fp, "%*.2f", w, base->m.value / res->m.value);
		else
			fprintf(fp, "%*s", w, "-");
	}
}

static void print_header(FILE *fp, const struct config *cfg, int min,
			 bool ratios)
{
	char label[256];
	int p;

	fprintf(fp, "%8s", "size");
	for (p = 0; p < cfg->provs.n; p++)
		fprintf(fp, "%*s", col_width(cfg->provs.v[p], min),
			cfg->provs.v[p]);
	for (p = 1; ratios && p < cfg->provs.n; p++) {
		snprintf(label, sizeof(label), "%s/%s", cfg->provs.v[0],
			 cfg->provs.v[p]);
		fprintf(fp, "%*s", col_width(label, min), label);
	}
	fputc('\n', fp);
}

static void print_table(FILE *fp, const struct config *cfg,
			const struct report *rep, enum test_id t)
{
	char sz[32];
	int i, p;

	fprintf(fp, "\n# %s: %s [%s]", test_name[t], test_title[t],
		test_unit[t]);
	if (t != TEST_LAT)
		fprintf(fp, ", window %u", cfg->window);
	fputc('\n', fp);
	print_header(fp, cfg, VALUE_WIDTH, true);
	for (i = 0; i < cfg->sizes[t].n; i++) {
		size_t size = cfg->sizes[t].v[i];

		fprintf(fp, "%8s", fmt_size(sz, sizeof(sz), size));
		for (p = 0; p < cfg->provs.n; p++)
			print_cell(fp, find(rep, p, t, size), rep->st[p], t,
				   col_width(cfg->provs.v[p], VALUE_WIDTH));
		print_ratios(fp, cfg, rep, t, size);
		fputc('\n', fp);
	}
}

/* min/p50/p99 of the latency samples, one cell per provider. */
static void print_lat_dist(FILE *fp, const struct config *cfg,
			   const struct report *rep)
{
	const struct result *res;
	char sz[32], cell[64];
	int i, p;

	fprintf(fp, "\n# lat: min/p50/p99 of the samples [usec]\n");
	print_header(fp, cfg, DIST_WIDTH, false);
	for (i = 0; i < cfg->sizes[TEST_LAT].n; i++) {
		size_t size = cfg->sizes[TEST_LAT].v[i];

		fprintf(fp, "%8s", fmt_size(sz, sizeof(sz), size));
		for (p = 0; p < cfg->provs.n; p++) {
			res = find(rep, p, TEST_LAT, size);
			snprintf(cell, sizeof(cell), "%.2f/%.2f/%.2f",
				 res ? res->m.min : 0, res ? res->m.p50 : 0,
				 res ? res->m.p99 : 0);
			fprintf(fp, "%*s", col_width(cfg->provs.v[p], DIST_WIDTH),
				res ? cell : status_text(rep->st[p]));
		}
		fputc('\n', fp);
	}
}

/* The protocols that sent messages, the most used first: "runtread". */
static const char *proto_text(char *buf, size_t len, const uint64_t *proto)
{
	bool done[NPROTOS] = { false };
	size_t off = 0;
	int k, i, best;

	buf[0] = '\0';
	for (i = 0; i < NPROTOS; i++) {
		best = -1;
		for (k = 0; k < NPROTOS; k++)
			if (!done[k] && proto[k] &&
			    (best < 0 || proto[k] > proto[best]))
				best = k;
		if (best < 0)
			break;
		done[best] = true;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s",
				off ? "+" : "", proto_name[best]);
	}
	return off ? buf : "-";
}

/*
 * kfab_efa: the protocols the client's sends took at each size, from
 * FI_OPT_KFAB_EFA_STATS; only for providers that answered it.
 */
static void print_protos(FILE *fp, const struct config *cfg,
			 const struct report *rep, enum test_id t)
{
	const struct result *res;
	char sz[32], text[64];
	int i, p, k;
	bool any;

	for (p = 0; p < cfg->provs.n; p++) {
		any = false;
		for (i = 0; !any && i < cfg->sizes[t].n; i++) {
			res = find(rep, p, t, cfg->sizes[t].v[i]);
			any = res && res->m.has_proto;
		}
		if (!any)
			continue;
		fprintf(fp, "\n# %s: %s, messages sent by protocol (client, all phases)\n",
			test_name[t], cfg->provs.v[p]);
		fprintf(fp, "%8s%20s", "size", "protocol");
		for (k = 0; k < NPROTOS; k++)
			fprintf(fp, "%*s", VALUE_WIDTH, proto_name[k]);
		fputc('\n', fp);
		for (i = 0; i < cfg->sizes[t].n; i++) {
			res = find(rep, p, t, cfg->sizes[t].v[i]);
			fprintf(fp, "%8s", fmt_size(sz, sizeof(sz),
						     cfg->sizes[t].v[i]));
			if (!res || !res->m.has_proto) {
				fprintf(fp, "%20s\n", "-");
				continue;
			}
			fprintf(fp, "%20s",
				proto_text(text, sizeof(text), res->m.proto));
			for (k = 0; k < NPROTOS; k++)
				fprintf(fp, "%*llu", VALUE_WIDTH,
					(unsigned long long)res->m.proto[k]);
			fputc('\n', fp);
		}
	}
}

static void print_tables(FILE *fp, const struct config *cfg,
			 const struct report *rep)
{
	int t;

	for (t = 0; t < NTESTS; t++) {
		if (!cfg->test_on[t])
			continue;
		print_table(fp, cfg, rep, t);
		if (t == TEST_LAT)
			print_lat_dist(fp, cfg, rep);
		print_protos(fp, cfg, rep, t);
	}
	fflush(fp);
}

/* A JSON string; bytes outside printable ASCII become \u00XX. */
static void json_str(FILE *fp, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', fp);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(fp, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(fp, "\\u%04x", *p);
		else
			fputc(*p, fp);
	}
	fputc('"', fp);
}

static void json_num(FILE *fp, const char *key, double v)
{
	fprintf(fp, ", \"%s\": ", key);
	if (isfinite(v))
		fprintf(fp, "%.6g", v);
	else
		fputs("null", fp);
}

static void json_result(FILE *fp, const struct config *cfg,
			const struct result *res)
{
	fputs("    {\"provider\": ", fp);
	json_str(fp, cfg->provs.v[res->prov]);
	fprintf(fp, ", \"test\": \"%s\", \"size\": %zu", test_name[res->test],
		res->size);
	json_num(fp, "value", res->m.value);
	fprintf(fp, ", \"unit\": \"%s\", \"iters\": %llu", test_unit[res->test],
		(unsigned long long)res->m.iters);
	if (res->test == TEST_LAT) {
		json_num(fp, "min", res->m.min);
		json_num(fp, "p50", res->m.p50);
		json_num(fp, "p99", res->m.p99);
	}
	if (res->m.has_proto) {
		int k;

		fputs(", \"protocols\": {", fp);
		for (k = 0; k < NPROTOS; k++)
			fprintf(fp, "%s\"%s\": %llu", k ? ", " : "",
				proto_name[k],
				(unsigned long long)res->m.proto[k]);
		fputc('}', fp);
	}
	fputc('}', fp);
}

static void json_write(FILE *fp, const struct config *cfg,
		       const struct report *rep)
{
	char host[HOST_NAME_MAX + 1] = "", date[32];
	time_t t = time(NULL);
	struct tm tm;
	size_t i;

	gethostname(host, sizeof(host) - 1);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	fputs("{\n  \"host\": ", fp);
	json_str(fp, host);
	fprintf(fp, ",\n  \"date\": \"%s\",\n", date);
	if (cfg->cpu[0] >= 0)
		fprintf(fp, "  \"cpus\": [%d, %d],\n", cfg->cpu[0], cfg->cpu[1]);
	fputs("  \"results\": [", fp);
	for (i = 0; i < rep->n; i++) {
		fputs(i ? ",\n" : "\n", fp);
		json_result(fp, cfg, &rep->v[i]);
	}
	fputs("\n  ]\n}\n", fp);
}

static int json_save(const struct config *cfg, const struct report *rep)
{
	bool to_stdout = !strcmp(cfg->json, "-");
	FILE *fp = to_stdout ? stdout : fopen(cfg->json, "w");
	int err;

	if (!fp) {
		fprintf(stderr, PROG ": %s: %s\n", cfg->json, strerror(errno));
		return -1;
	}
	json_write(fp, cfg, rep);
	err = ferror(fp);
	if (to_stdout)
		err |= fflush(fp);
	else
		err |= fclose(fp);
	if (err)
		fprintf(stderr, PROG ": writing %s failed\n", cfg->json);
	return err ? -1 : 0;
}

/* ------------------------------------------------------------- options */

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: " PROG " [-p PROV,...] [-t TESTS] [-s SIZE,...] [-w WINDOW]\n"
		"                  [-n ITERS] [-C CPU,CPU] [-T SECS] [-j FILE|-] [-h]\n"
		"\n"
		"Latency, bandwidth and message rate of libfabric providers, two\n"
		"processes on this host, one table per test.\n"
		"\n"
		"  -p PROV,...  providers, in turn; ratios are to the first\n"
		"               (default " DEFAULT_PROVIDERS "); kfab's need\n"
		"               FI_PROVIDER_PATH=<kfab>/build/prov\n"
		"  -t TESTS     lat,bw,rate or all (default all)\n"
		"  -s SIZE,...  message sizes for every test, k/m suffixes;\n"
		"               default lat 8..64k, bw 1..4m (powers of two), rate 8\n"
		"  -w WINDOW    sends in flight per ack for bw and rate (default 64)\n"
		"  -n ITERS     timed iterations (windows for bw and rate) per size;\n"
		"               default: scaled by size, about 0.5 s at most\n"
		"  -C CPU,CPU   pin the server and the client to these CPUs\n"
		"               (default: not pinned)\n"
		"  -T SECS      limit per provider; both processes are killed after\n"
		"               it (default 120)\n"
		"  -j FILE      also write the results as JSON; with -j - the JSON\n"
		"               goes to stdout and the tables to stderr\n"
		"  -h           this help\n"
		"\n"
		"Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static int usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "; see " PROG " -h\n");
	return EXIT_USAGE;
}

static int split(const char *arg, struct strlist *l)
{
	const char *c;
	char *s, *tok;
	int n = 1;

	for (c = arg; *c; c++)
		n += *c == ',';
	free(l->buf);
	free(l->v);
	memset(l, 0, sizeof(*l));
	l->buf = strdup(arg);
	l->v = calloc(n, sizeof(*l->v));
	if (!l->buf || !l->v)
		return -1;
	for (s = l->buf; (tok = strsep(&s, ",")); l->v[l->n++] = tok)
		if (!*tok)
			return -1;
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end == 'k' || *end == 'K')
		shift = 10;
	else if (*end == 'm' || *end == 'M')
		shift = 20;
	if (shift)
		end++;
	if (*end || !v || v > (MAX_MSG_SIZE >> shift))
		return -1;
	*out = (size_t)v << shift;
	return 0;
}

/* Parse @l into @s: valid sizes, each listed once. */
static int parse_sizes(const struct strlist *l, struct sizes *s)
{
	int i, j;

	s->v = calloc(l->n, sizeof(*s->v));
	if (!s->v) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_FAILURE;
	}
	for (i = 0; i < l->n; i++) {
		if (parse_size(l->v[i], &s->v[i]))
			return usage_err("bad size '%s' in -s (1 to 256m, k/m suffixes)",
					 l->v[i]);
		for (j = 0; j < i; j++)
			if (s->v[j] == s->v[i])
				return usage_err("size '%s' listed twice in -s",
						 l->v[i]);
		s->n++;
	}
	return 0;
}

static int set_sizes(struct config *cfg, const char *arg)
{
	struct strlist l = { 0 };
	struct sizes s = { 0 };
	size_t len;
	int t, ret;

	if (split(arg, &l))
		ret = usage_err("bad size list '%s' in -s", arg);
	else
		ret = parse_sizes(&l, &s);
	len = s.n * sizeof(*s.v);
	for (t = 0; !ret && t < NTESTS; t++) {
		free(cfg->sizes[t].v);
		cfg->sizes[t] = (struct sizes){ .v = malloc(len), .n = s.n };
		if (!cfg->sizes[t].v) {
			fprintf(stderr, PROG ": out of memory\n");
			ret = EXIT_FAILURE;
		} else {
			memcpy(cfg->sizes[t].v, s.v, len);
		}
	}
	free(s.v);
	free(l.buf);
	free(l.v);
	return ret;
}

/* Index of test @name, NTESTS for "all", -1 if unknown. */
static int test_lookup(const char *name)
{
	int t;

	for (t = 0; t < NTESTS; t++)
		if (!strcmp(name, test_name[t]))
			return t;
	return strcmp(name, "all") ? -1 : NTESTS;
}

static int set_tests(struct config *cfg, const char *arg)
{
	struct strlist l = { 0 };
	int t, i, ret = 0;

	if (split(arg, &l))
		ret = usage_err("bad test list '%s' in -t", arg);
	memset(cfg->test_on, 0, sizeof(cfg->test_on));
	for (i = 0; !ret && i < l.n; i++) {
		t = test_lookup(l.v[i]);
		if (t < 0)
			ret = usage_err("unknown test '%s' in -t (lat, bw, rate, all)",
					l.v[i]);
		else if (t == NTESTS)
			memset(cfg->test_on, 1, sizeof(cfg->test_on));
		else
			cfg->test_on[t] = true;
	}
	free(l.buf);
	free(l.v);
	return ret;
}

static int parse_ulong(const char *arg, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*arg))
		return -1;
	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || *end || !v || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Powers of two from @lo to @hi. */
static int default_sizes(struct sizes *s, size_t lo, size_t hi)
{
	size_t v;

	s->v = calloc(32, sizeof(*s->v));
	if (!s->v)
		return -1;
	for (v = lo; v <= hi; v *= 2)
		s->v[s->n++] = v;
	return 0;
}

static int config_init(struct config *cfg)
{
	int t;

	memset(cfg, 0, sizeof(*cfg));
	cfg->window = 64;
	cfg->timeout = 120;
	cfg->cpu[0] = cfg->cpu[1] = -1;
	for (t = 0; t < NTESTS; t++)
		cfg->test_on[t] = true;
	if (split(DEFAULT_PROVIDERS, &cfg->provs) ||
	    default_sizes(&cfg->sizes[TEST_LAT], 8, 64 << 10) ||
	    default_sizes(&cfg->sizes[TEST_BW], 1, 4 << 20) ||
	    default_sizes(&cfg->sizes[TEST_RATE], 8, 8)) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_FAILURE;
	}
	return 0;
}

static void config_free(struct config *cfg)
{
	int t;

	free(cfg->provs.buf);
	free(cfg->provs.v);
	for (t = 0; t < NTESTS; t++)
		free(cfg->sizes[t].v);
}

/* -w or -T: a number from 1 to @max into *@to; @bad says what is wrong. */
static int opt_uint(const char *arg, unsigned long max, unsigned int *to,
		    const char *bad)
{
	unsigned long v;

	if (parse_ulong(arg, max, &v))
		return usage_err(bad, arg);
	*to = (unsigned int)v;
	return 0;
}

/* -C SERVER,CLIENT: two CPUs this process may run on. */
static int set_cpus(struct config *cfg, const char *arg)
{
	const char *bad = "bad CPUs '%s' in -C (SERVER,CLIENT: two CPU numbers)";
	const char *s = arg;
	cpu_set_t allowed;
	unsigned long v;
	char *end;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	for (int i = 0; i < 2; i++) {
		if (!isdigit((unsigned char)*s))
			return usage_err(bad, arg);
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || v >= CPU_SETSIZE || *end != (i ? '\0' : ','))
			return usage_err(bad, arg);
		if (!CPU_ISSET(v, &allowed))
			return usage_err("CPU in -C '%s' is not one this process may run on (see taskset -p $$)",
					 arg);
		cfg->cpu[i] = (int)v;
		s = end + 1;
	}
	return 0;
}

static int parse_opt(struct config *cfg, int c, const char *arg)
{
	switch (c) {
	case 'p':
		return split(arg, &cfg->provs) ?
		       usage_err("bad provider list '%s' in -p", arg) : 0;
	case 't':
		return set_tests(cfg, arg);
	case 's':
		return set_sizes(cfg, arg);
	case 'w':
		return opt_uint(arg, MAX_WINDOW, &cfg->window,
				"bad window '%s' in -w (1 to 4096)");
	case 'n':
		if (parse_ulong(arg, 1000000000UL, &cfg->iters))
			return usage_err("bad count '%s' in -n (1 to 10^9)", arg);
		return 0;
	case 'C':
		return set_cpus(cfg, arg);
	case 'T':
		return opt_uint(arg, MAX_TIMEOUT, &cfg->timeout,
				"bad timeout '%s' in -T (1 to 86400 s)");
	case 'j':
		cfg->json = arg;
		return 0;
	}
	usage(stderr);
	return EXIT_USAGE;
}

/* Returns 0 to run, -1 after -h, or an exit code. */
static int parse_args(int argc, char **argv, struct config *cfg)
{
	int c, ret;

	ret = config_init(cfg);
	while (!ret && (c = getopt(argc, argv, "p:t:s:w:n:C:T:j:h")) != -1) {
		if (c == 'h') {
			usage(stdout);
			return -1;
		}
		ret = parse_opt(cfg, c, optarg);
	}
	if (!ret && optind < argc)
		ret = usage_err("unexpected argument '%s'", argv[optind]);
	return ret;
}

int main(int argc, char **argv)
{
	struct report rep = { 0 };
	struct config cfg;
	int p, ret, ran = 0, failed = 0;

	ret = parse_args(argc, argv, &cfg);
	rep.st = ret ? NULL : calloc(cfg.provs.n, sizeof(*rep.st));
	if (!ret && !rep.st)
		ret = EXIT_FAILURE;
	if (ret) {
		config_free(&cfg);
		return ret < 0 ? EXIT_SUCCESS : ret;
	}
	signal(SIGPIPE, SIG_IGN);
	for (p = 0; p < cfg.provs.n; p++) {
		rep.st[p] = run_provider(&cfg, p, &rep);
		ran += rep.st[p] == ST_OK;
		failed += rep.st[p] == ST_FAIL;
	}
	print_tables(cfg.json && !strcmp(cfg.json, "-") ? stderr : stdout,
		     &cfg, &rep);
	if (cfg.json && json_save(&cfg, &rep))
		failed++;
	if (!ran && !failed)
		fprintf(stderr, PROG ": no provider could be measured\n");
	free(rep.st);
	free(rep.v);
	config_free(&cfg);
	return ran && !failed ? EXIT_SUCCESS : EXIT_FAILURE;
}
