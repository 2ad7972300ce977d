/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fi_msg_test's harness, shared by its files (main.c says what the test
 * is): the ranks and their control channel, TAP points (CHECK, MUST),
 * completion queues and the checks of completions and data, message
 * descriptions, posting, batches, and the RMA, atomic and scalable
 * endpoint pieces more than one file of cases uses.
 */
#ifndef KFAB_FI_MSG_H
#define KFAB_FI_MSG_H

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

/* The options (main.c) */
extern const char *opt_prov;
extern int opt_wait_ms;
extern bool opt_force;
extern unsigned long opt_count;
extern int opt_stress_s;
extern const char *opt_sizes;
extern size_t stress_sizes[32];
extern unsigned int stress_nsizes;

/*
 * Gaps of libfabric's own providers found while validating this test: a
 * whole case ("case") or one part of it ("case/part") is skipped, with
 * the reason, for a provider whose name starts with @prov.
 */
struct known_gap {
	const char *prov;
	const char *what;
	const char *why;
};

extern const struct known_gap known_gaps[];

/* Completion flags set beyond the API's, tolerated for a known gap */
extern uint64_t slack_tagged;	/* FI_MSG on tagged completions */
extern uint64_t slack_send;	/* FI_REMOTE_CQ_DATA on send completions */

/* ---- buffers with guard bytes on both sides ---- */

struct gbuf {
	uint8_t *mem;
	uint8_t *p;
	size_t len;
};

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
struct layout {
	int ns, nr;
	size_t s[4], r[4];
};

extern const struct layout layouts[7];	/* util.c */

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
	char file[48];		/* and line: where a point was checked */
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

/* TAP points: each one says where it was checked (ctl.c) */
#define CHECK(s, ok, ...) \
	report((s), (ok), __FILE__, __LINE__, NULL, __VA_ARGS__)
#define CHECK_WHY(s, ok, why, ...) \
	report((s), (ok), __FILE__, __LINE__, (why), __VA_ARGS__)
#define CHECK_EQ(s, a, b, ...) \
	check_eq((s), __FILE__, __LINE__, (long long)(a), (long long)(b), \
		 __VA_ARGS__)
#define MUST(s, rc, ...)	must((s), __FILE__, __LINE__, (rc), __VA_ARGS__)

/* Repeat @call while it returns -FI_EAGAIN, progressing in between. */
#define RETRY(s, rc, call)						\
	do {								\
		uint64_t end_ = now_ms() + opt_wait_ms;			\
									\
		while (((rc) = (call)) == -FI_EAGAIN &&			\
		       progress_until((s), end_)) {			\
		}							\
	} while (0)

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

/* How recv_one receives (post.c) */
#define R_UNEXPECTED	0x1	/* post after the message came */
#define R_DELIVERY	0x2	/* data placed at the send completion */
#define R_ANY_SRC	0x4	/* the source address is not checked */

/* ---- RMA (rma_win.c) ---- */

#define RMA_PAD		4099	/* the target range starts about here */
#define WIN_LEN		(4 * MIB + 2 * RMA_PAD)
#define WIN_SMALL	(64 * KIB)
#define BAD_KEY_ADD	0x10000003ull	/* a key nobody registered */

struct mrinfo {
	uint64_t key[NWIN], base[NWIN];
};

struct rmaop {
	uint32_t read;		/* else write */
	uint32_t api;		/* API_VEC, API_MSG, API_INJECT, API_DATA */
	uint32_t win;		/* the target's window */
	uint32_t bad_key;
	int32_t err;		/* of the completion: 0, FI_E*, SOME_ERR */
	int64_t off;		/* of the target range in the window */
	uint64_t len, seed, data;
};

/* ---- atomics (atomic.c) ---- */

#define AT_MAX		7	/* elements of one operation */
#define AT_SLOT		256	/* bytes of rank 0's window per combination */
#define AT_START	4096	/* of the slots: elements naturally aligned */
#define AT_NDT		(FI_UINT128 + 1)
#define AT_NOP		FI_ATOMIC_OP_LAST

enum { AT_BASE, AT_FETCH, AT_COMPARE, AT_KINDS };

extern const char *const at_kinds[AT_KINDS];
extern const char *const at_ops[AT_NOP];

/* A datatype: its reference operations (atomic.c) */
struct atype {
	const char *name;
	size_t size;
	bool (*op)(enum fi_op op, void *addr, const void *buf,
		   const void *cmp, size_t i);
	void (*set)(void *p, size_t i, int v);
	bool (*eq)(const void *x, const void *y, size_t i);
	double (*get)(const void *p, size_t i);
};

extern const struct atype atypes[AT_NDT];

/* One operation: kind, form (0 plain, 1 v, 2 msg, 3 inject), operands. */
struct atop {
	int kind, form;
	enum fi_datatype dt;
	enum fi_op op;
	size_t n;
	uint64_t addr, key;
	void *buf, *cmp, *res;	/* in our main window */
};

/* Per kind and datatype: the points' tallies. */
struct at_tally {
	unsigned int ops, bad;
	char why[160];
};

/* ---- scalable endpoints (sep*.c) ---- */

#define SEP_CTX		4	/* tx and rx contexts asked for */
#define SEP_RX_CNTR	1	/* the receive context with a counter */
#define SEP_BUF		256	/* receives of the routing messages */
#define SEP_TAG		0x5e000000ull

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

/* Bytes of each message of the waiting cases (wait*.c) */
#define WAIT_MSG_LEN	64

/* ---- the functions the files share, by the file that has them ---- */

/* util.c */
const char *known_gap(const char *what);
__attribute__((noreturn, format(printf, 1, 2)))
void die(const char *fmt, ...);
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
uint64_t now_ms(void);
__attribute__((format(printf, 3, 4)))
void addf(char *buf, size_t size, const char *fmt, ...);
void flags_str(uint64_t flags, char *buf, size_t size);
uint64_t seed_of(uint64_t a, uint64_t b);
uint8_t pat_byte(uint64_t seed, size_t pos);
void pat_fill(uint8_t *p, size_t len, uint64_t seed, size_t off);
size_t pat_bad(const uint8_t *p, size_t len, uint64_t seed,
	       size_t off);
void gbuf_alloc(struct gbuf *b, size_t len);
bool gbuf_guards_ok(const struct gbuf *b);
size_t layout_len(const size_t *v, int n);
void msg_label(const struct msgspec *m, char *buf, size_t size);
void batch_spec(const struct batch *b, uint32_t i, struct msgspec *m);
size_t batch_max_len(const struct batch *b);

/* ctl.c */
struct fi_context2 *ctx_new(struct side *s, size_t n);
void release(struct side *s, void *p);
void gbuf_free(struct side *s, struct gbuf *b);
void gbuf_renew(struct side *s, struct gbuf *b, size_t len);
void ctl_send(struct side *s, int r, const struct ctl_msg *m);
void step_to(struct side *s, int r, enum step step, uint64_t a,
	     const void *blob, size_t len);
void side_abort(struct side *s);
bool vreport(struct side *s, bool ok, const char *file, int line,
	     const char *detail, const char *fmt, va_list ap);
__attribute__((format(printf, 6, 7)))
bool report(struct side *s, bool ok, const char *file, int line,
	    const char *detail, const char *fmt, ...);
__attribute__((format(printf, 6, 7)))
bool check_eq(struct side *s, const char *file, int line, long long a,
	      long long b, const char *fmt, ...);
__attribute__((format(printf, 5, 6)))
bool must(struct side *s, const char *file, int line, long long rc,
	  const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void diag(struct side *s, const char *fmt, ...);
void ctl_poll(struct side *s);
void ctl_sleep(struct side *s, int ms);
bool ctl_wait_ms(struct side *s, int r, enum step step,
		 struct ctl_msg *out, int ms, bool drive);
bool ctl_wait(struct side *s, int r, enum step step,
	      struct ctl_msg *out);

/* cq.c */
bool cqq_take(struct cqq *q, const void *ctx, struct comp *out);
size_t cq_entry_size(enum fi_cq_format f);
void cq_drain(struct side *s, struct cqq *q, bool from);
void progress(struct side *s);
void progress_for(struct side *s, int ms);
bool progress_until(struct side *s, uint64_t end);
bool cq_wait(struct side *s, struct cqq *q, const void *ctx,
	     struct comp *out, int ms, const char *what);
void comp_str(const struct comp *c, char *buf, size_t size);
bool expect_quiet(struct side *s, struct cqq *q, int ms,
		  const char *what);
bool comp_mismatch(const struct side *s, const struct comp *c,
		   const struct want *w, char *why, size_t size);
__attribute__((format(printf, 4, 5)))
bool check_comp(struct side *s, const struct comp *c,
		const struct want *w, const char *fmt, ...);
bool data_mismatch(const struct gbuf *seg, int n, uint64_t seed,
		   size_t got, char *why, size_t size);
__attribute__((format(printf, 6, 7)))
bool check_data(struct side *s, const struct gbuf *seg, int n,
		uint64_t seed, size_t got, const char *fmt, ...);
struct want want_send(void *ctx, const struct msgspec *m);
struct want want_recv(struct side *s, void *ctx,
		      const struct msgspec *m, int from);

/* post.c */
ssize_t post_send(struct side *s, int to, const struct msgspec *m,
		  const struct iovec *iov, size_t n, void *ctx);
ssize_t post_recv(struct side *s, uint32_t api,
		  const struct iovec *iov, size_t n, fi_addr_t src,
		  uint64_t tag, uint64_t ignore, void *ctx);
bool recv_into(struct side *s, uint32_t api, struct gbuf *b,
	       fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx,
	       const char *what);
void cancel_recv(struct side *s, void *ctx, uint32_t api,
		 const char *what);
void send_checked(struct side *s, int to, const struct msgspec *m);
bool remote_go(struct side *s, int r, const struct msgspec *m);
bool recv_one(struct side *s, int from, const struct msgspec *m,
	      size_t rlen, unsigned int how);
bool send_to_peer(struct side *s, int r, const struct msgspec *m);
void quiet_recv(struct side *s, int r, const struct msgspec *m,
		int ms);
void quiet_peer(struct side *s, int r, const struct msgspec *m,
		int ms);

/* batch.c */
long ctx_index(const void *ctx, const struct fi_context2 *base,
	       size_t n);
void recv_stream(struct side *s, int from, const struct batch *b,
		 uint32_t rwin, uint32_t rbatch, unsigned int how,
		 const char *name);
void peer_loop(struct side *s);
bool peer_serves(struct side *s);
void stop_peers(struct side *s);

/* sizes.c */
void case_sizes(struct side *s);
void case_vector(struct side *s);
void case_inject_opflags(struct side *s);
void case_inject(struct side *s);

/* tagged.c */
bool expect_recv(struct side *s, void *ctx, const struct msgspec *m,
		 int from, struct gbuf *b, const char *what);
void case_tagmatch(struct side *s);
void case_directed(struct side *s);

/* multirecv.c */
void case_multirecv(struct side *s);

/* peek.c */
void case_peek(struct side *s);

/* completion.c */
void case_cancel(struct side *s);
void case_selective(struct side *s);
void case_compsem(struct side *s);
void case_cqfmt(struct side *s);

/* av.c */
bool av_insert(struct side *s, int r, int *rc);
bool av_insert_rank(struct side *s, int r);
void case_av(struct side *s);

/* threads.c */
void case_threads(struct side *s);

/* streams.c */
void case_window(struct side *s);
void case_stress(struct side *s);
void case_deadpeer(struct side *s);
void case_jobs(struct side *s);

/* rma_win.c */
int mr_bits(const struct side *s);
int mr_reg(struct side *s, void *p, size_t len, uint64_t access,
	   uint64_t key, struct fid_mr **mr);
bool rma_setup(struct side *s);
void win_fill(struct side *s, int w, size_t off, size_t len,
	      uint64_t seed);
__attribute__((format(printf, 4, 5)))
bool win_check(struct side *s, int w, int ms, const char *fmt, ...);
bool is_kfab(void);
int32_t access_err(void);
void rma_label(const struct rmaop *o, char *buf, size_t size);
ssize_t rma_post(struct side *s, int to, const struct rmaop *o,
		 void *ctx);
void rma_do(struct side *s, int to, const void *op);
bool remote_rma(struct side *s, int r, const struct rmaop *o);

/* rma.c */
void case_rma_legacy(struct side *s);
void case_rma_write(struct side *s);
void case_rma_read(struct side *s);
void case_rma_data(struct side *s);

/* rma_errors.c */
void case_rma_errors(struct side *s);
void case_rma_cntr(struct side *s);
void case_rma_deadpeer(struct side *s);

/* atomic.c */
bool at_run(struct side *s, int to, const struct atop *a, char *why,
	    size_t size);
size_t at_valid(struct side *s, int kind, int dt, int op, int *qrc,
		int *vrc, size_t *size);
__attribute__((format(printf, 3, 4)))
void tally(struct at_tally *t, const char *why, const char *fmt, ...);
void case_atomic(struct side *s);

/* atomic_concurrent.c */
void case_atomic_concurrent(struct side *s);

/* sep_msg.c */
void sep_drain(struct side *s);
bool sep_quiet(struct side *s, int ms, const char *what);
fi_addr_t sep_dst(struct side *s, int j);
struct msgspec sep_msg(int from, bool tagged, int i, int j);
ssize_t sep_send(struct side *s, int i, int j, const struct msgspec *m,
		 void *buf, void *ctx);
bool sep_recv(struct side *s, int j, uint32_t api, struct gbuf *b,
	      uint64_t tag, void *ctx, const char *what);
bool sep_send_checked(struct side *s, int i, int j,
		      const struct msgspec *m, const char *what);
bool sep_recv_checked(struct side *s, int j, void *ctx,
		      const struct msgspec *m, struct gbuf *b,
		      const char *what);
void sep_route(struct side *s, int from, bool tagged);

/* sep_ops.c */
void sep_unexpected(struct side *s);
void sep_large(struct side *s);
void sep_cntr_more(struct side *s);
void sep_counters(struct side *s, const char *when);
void sep_rma(struct side *s);
void sep_missing(struct side *s);

/* sep_threads.c */
void sep_threads(struct side *s);

/* sep.c */
void case_sep(struct side *s);
void case_sep_first(struct side *s);

/* wait.c */
uint64_t now_us(void);
void peer_delayed_sends(struct side *s);
void ask_send(struct side *s, uint32_t delay_ms, uint64_t tag);
void case_cntr(struct side *s);
bool wait_recv(struct side *s, struct gbuf *b, uint64_t tag,
	       void *ctx);
void case_waitfd(struct side *s);
void case_signal(struct side *s);

/* wait_poll.c */
void case_poll(struct side *s);
void case_sleep(struct side *s);
void case_auto(struct side *s);

/* side.c */
int get_info(const struct tcase *tc, struct fi_info **out);
struct side *side_new(const struct tcase *tc, int rank, int nranks);
bool side_exchange(struct side *s);
bool barrier(struct side *s);
void side_run(struct side *s);

/* main.c: TAP output, whose count lives there */
void print_point(bool ok, const char *file, int line, const char *text,
		 const char *detail);
void print_diag(int rank, const char *text);
__attribute__((format(printf, 1, 2)))
void skip(const char *fmt, ...);

#endif
