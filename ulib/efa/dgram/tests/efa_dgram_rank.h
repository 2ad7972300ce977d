/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of kfab_efa's FI_EP_DGRAM endpoint (efa_dgram_*_test)
 * share: this process (rank 0, prints TAP) and a forked child (rank 1),
 * each with an endpoint on device efa0 of the backend FI_KFAB_BACKEND
 * names, their names swapped over a socketpair through which the ranks
 * step through the cases together and rank 1 sends its checks to rank 0
 * ("rank 1: ..."); sending, receiving and waiting for completions; the
 * program's setup and cleanup (dgram_main()).
 */
#ifndef KFAB_ULIB_EFA_DGRAM_RANK_H
#define KFAB_ULIB_EFA_DGRAM_RANK_H

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "dev/efa_dev.h"
#include "tests/ep_util.h"
#include "tests/tap.h"
#include "tests/xproc.h"

#define PREFIX		32
#define NAMELEN		32
#define TIMEOUT_MS	10000
/* the socket's: longer than any wait of the other rank */
#define SYNC_MS		(3 * TIMEOUT_MS)
/* each buffer's bytes past PREFIX + mtu: the gaps between iovecs */
#define SLACK		512
#define GAP		16
#define GUARD		0xee
/* the largest message over ofi_rxd, several datagrams */
#define RXD_MAX		65536

enum { M_NAME = 1, M_GO, M_POINT, M_DONE };

struct msg {
	uint32_t kind;
	uint32_t ok;
	uint64_t arg;
	uint8_t name[NAMELEN];
	char text[160];
};

/* One endpoint of a rank with its own fabric, domain, AV, CQ and buffers. */
struct rank {
	int id;
	int sock;
	struct ep_objs obj;
	struct fid_mr *mr;
	void *desc;
	uint8_t *buf;			/* receive: PREFIX + mtu + SLACK */
	uint8_t *sbuf;			/* send */
	size_t bufsz;			/* both */
	size_t mtu;
	uint8_t name[NAMELEN];
	uint8_t peer_name[NAMELEN];
	fi_addr_t peer;
};

/* The ranks' first endpoints; R.id and R.sock the process's. */
static struct rank R;

/*
 * The sanitized build: GCC 12's libsanitizer takes a dynamic TLS block
 * (the provider's, efa_dev.c's reorder draw) that lands 16 bytes into a
 * page for one with a glibc 2.19 header, reads a bogus range from before
 * it and LeakSanitizer's tracer dies at exit, whether the heap puts it
 * there depending on what ran before. Leak checking stays on; only the
 * interception of __tls_get_addr() is off.
 */
const char *__asan_default_options(void)
{
	return "intercept_tls_get_addr=0";
}

/* A check: printed by rank 0, sent to it by rank 1. */
__attribute__((format(printf, 2, 3)))
static inline void point(bool ok, const char *fmt, ...)
{
	struct msg m = { .kind = M_POINT, .ok = ok };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	if (R.id == 0)
		TAP_OK(ok, "%s", m.text);
	else
		xp_send(R.sock, &m, sizeof(m));
}

static inline void sync_send(uint64_t arg)
{
	struct msg m = { .kind = M_GO, .arg = arg };

	xp_send(R.sock, &m, sizeof(m));
}

/* The next message but points; rank 0 prints rank 1's points meanwhile. */
static inline int msg_wait(struct msg *m)
{
	for (;;) {
		struct pollfd p = { .fd = R.sock, .events = POLLIN };

		if (poll(&p, 1, SYNC_MS) != 1 ||
		    read(R.sock, m, sizeof(*m)) != sizeof(*m))
			return -ETIMEDOUT;
		if (m->kind != M_POINT)
			return 0;
		TAP_OK(m->ok, "rank 1: %s", m->text);
	}
}

static inline int sync_wait(uint64_t *arg)
{
	struct msg m;
	int ret = msg_wait(&m);

	if (ret)
		return ret;
	if (arg)
		*arg = m.arg;
	return m.kind == M_GO || m.kind == M_DONE ? 0 : -EPROTO;
}

static inline struct fi_info *dgram_hints(const char *domain)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_DGRAM;
	h->caps = FI_MSG;
	h->mode = FI_MSG_PREFIX | FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->name = strdup(domain);
	h->fabric_attr->prov_name = strdup("kfab_efa");
	return h;
}

/* One completion within TIMEOUT_MS: 1, or -FI_E* of the error entry. */
static inline int cq_wait(struct fid_cq *cq, struct fi_cq_msg_entry *e,
			  struct fi_cq_err_entry *err)
{
	uint64_t end = xp_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, e, 1);
		if (ret == 1)
			return 1;
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(cq, err, 0);
			return -err->err;
		}
		if (ret != -FI_EAGAIN)
			return (int)ret;
	} while (xp_ms() < end);
	return -FI_ETIMEDOUT;
}

/*
 * The completions of the @n operations of contexts @ctx, in any order,
 * each within TIMEOUT_MS; their lengths into @len (or NULL). 0, or -FI_E*.
 */
static inline int cq_wait_all(struct fid_cq *cq, void *const *ctx, size_t *len,
			      int n)
{
	for (int got = 0; got < n; got++) {
		struct fi_cq_msg_entry e;
		struct fi_cq_err_entry err;
		int i, ret = cq_wait(cq, &e, &err);

		if (ret != 1)
			return ret < 0 ? ret : -FI_EIO;
		for (i = 0; i < n && e.op_context != ctx[i]; i++)
			;
		if (i == n)
			return -FI_EOTHER;
		if (len)
			len[i] = e.len;
	}
	return 0;
}

enum via { VIA_SEND, VIA_SENDV, VIA_SENDMSG };

/* The fi_msg of @count iovecs to or from @addr. */
static inline struct fi_msg iov_msg(const struct iovec *iov, void **desc,
				    size_t count, fi_addr_t addr, void *ctx)
{
	return (struct fi_msg){
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = addr, .context = ctx,
	};
}

/*
 * A send of @count iovecs through the call @via names, retried while the
 * receiver is not ready; its completion. 0, or -FI_E*.
 */
static inline int send_iov(struct rank *r, const struct iovec *iov, void **desc,
			   size_t count, fi_addr_t dest, enum via via)
{
	struct fi_msg msg = iov_msg(iov, desc, count, dest, r);
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint64_t end = xp_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		if (via == VIA_SENDV)
			ret = fi_sendv(r->obj.ep, iov, desc, count, dest, r);
		else if (via == VIA_SENDMSG)
			ret = fi_sendmsg(r->obj.ep, &msg, 0);
		else
			ret = fi_send(r->obj.ep, iov[0].iov_base,
				      iov[0].iov_len, desc[0], dest, r);
		if (ret == -FI_EAGAIN)
			fi_cq_read(r->obj.cq, &e, 0);
	} while (ret == -FI_EAGAIN && xp_ms() < end);
	if (ret)
		return (int)ret;
	ret = cq_wait(r->obj.cq, &e, &err);
	if (ret != 1)
		return (int)ret;
	return e.flags & FI_SEND && e.op_context == r ? 0 : -FI_EOTHER;
}

/* @len bytes after the prefix of r->sbuf with fi_send(); its completion. */
static inline int send_wait(struct rank *r, size_t len, fi_addr_t dest)
{
	struct iovec iov = { r->sbuf, PREFIX + len };

	return send_iov(r, &iov, &r->desc, 1, dest, VIA_SEND);
}

static inline int post_recv(struct rank *r, size_t len, void *ctx)
{
	return (int)fi_recv(r->obj.ep, r->buf, PREFIX + len, r->desc,
			    FI_ADDR_UNSPEC, ctx);
}

/* @r's endpoint of what fi_getinfo() gives for @h (freed), enabled. */
static inline int rank_open(struct rank *r, struct fi_info *h)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
		.size = 1024,
	};
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	size_t len = NAMELEN;
	int ret;

	if (!h)
		return -FI_ENOMEM;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &r->obj.info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	r->mtu = r->obj.info->ep_attr->max_msg_size;
	if (r->mtu > RXD_MAX)
		r->mtu = RXD_MAX;
	ret = ep_objs_open(&r->obj, &av_attr, &cq_attr);
	if (!ret)
		ret = fi_enable(r->obj.ep);
	if (!ret)
		ret = fi_getname(&r->obj.ep->fid, r->name, &len);
	if (ret)
		return ret;
	r->bufsz = 2 * (PREFIX + r->mtu + SLACK);
	r->buf = xp_anon(r->bufsz);
	if (!r->buf)
		return -FI_ENOMEM;
	r->sbuf = r->buf + r->bufsz / 2;
	if (!(r->obj.info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(r->obj.domain, r->buf, r->bufsz, FI_SEND | FI_RECV, 0,
			0, 0, &r->mr, NULL);
	if (ret)
		return ret;
	r->desc = fi_mr_desc(r->mr);
	return 0;
}

static inline void rank_close(struct rank *r)
{
	bool ep = r->obj.ep, domain = r->obj.domain;
	unsigned int failed;

	if (r->mr)
		fi_close(&r->mr->fid);
	r->mr = NULL;
	failed = ep_objs_close(&r->obj);
	if (ep)
		point(!(failed & EP_OBJ_EP), "fi_close(ep)");
	if (domain)
		point(!(failed & EP_OBJ_DOMAIN),
		      "fi_close(domain): nothing left open");
	if (r->buf)
		munmap(r->buf, r->bufsz);
	r->buf = NULL;
}

/*
 * Both ranks, after rank_open(@r) gave @ret: swap the endpoints' names;
 * the peer's into @r's AV. 0 when both opened.
 */
static inline int rank_swap(struct rank *r, int ret)
{
	struct msg m = { .kind = M_NAME, .ok = !ret };

	memcpy(m.name, r->name, NAMELEN);
	if (xp_send(R.sock, &m, sizeof(m)) || msg_wait(&m) ||
	    m.kind != M_NAME)
		return -FI_EIO;
	if (ret)
		return ret;
	if (!m.ok)
		return -FI_ECONNREFUSED;
	memcpy(r->peer_name, m.name, NAMELEN);
	return fi_av_insert(r->obj.av, r->peer_name, 1, &r->peer, 0,
			    NULL) == 1 ? 0 : -FI_EINVAL;
}

/*
 * rank_open() of @h in both ranks at once (as MPI ranks start), then
 * rank_swap(): 0 when both opened.
 */
static inline int rank_open_both(struct rank *r, struct fi_info *h)
{
	return rank_swap(r, rank_open(r, h));
}

/* ------------------------------------------------------------------ */
/* the program */

typedef void (*dgram_case_fn)(void);

static inline int rank_setup(void)
{
	int ret = rank_open_both(&R, dgram_hints("efa0-dgrm"));

	if (ret)
		fprintf(stderr, "rank %d: setup: %s\n", R.id, fi_strerror(-ret));
	return ret;
}

/* Rank 1: @both, each in step with rank 0. */
__attribute__((noreturn))
static inline void child(const dgram_case_fn *both, size_t nboth)
{
	struct msg m = { .kind = M_DONE };

	if (rank_setup()) {
		point(false, "setup failed");
		xp_send(R.sock, &m, sizeof(m));
		_exit(1);
	}
	for (size_t i = 0; i < nboth; i++)
		both[i]();
	rank_close(&R);
	xp_send(R.sock, &m, sizeof(m));
	_exit(0);
}

/*
 * The program @name: both ranks run @both, then rank 0 alone @alone.
 * Without $KFAB_SHM_DIR on the shm backend a private one is made, and
 * must be empty at the end.
 */
static inline int dgram_main(const char *name, const dgram_case_fn *both,
			     size_t nboth, const dgram_case_fn *alone,
			     size_t nalone)
{
	const char *env = getenv("KFAB_SHM_DIR");
	const char *be = getenv("FI_KFAB_BACKEND");
	struct fi_info *h, *fi = NULL;
	char dir[256] = "";
	bool own = false;
	int sv[2], status;
	pid_t pid;

	tap_start(name);
	signal(SIGPIPE, SIG_IGN);
	if ((!be || strcmp(be, "kmod")) && !(env && *env)) {
		const char *tmp = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/kfab-%s.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp", name);
		if (!mkdtemp(dir))
			tap_skip_all("mkdtemp %s failed", dir);
		setenv("KFAB_SHM_DIR", dir, 1);
		own = true;
	}
	kfab_log_set(xp_log);
	h = dgram_hints("efa0-dgrm");
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi))
		tap_skip_all("no kfab_efa FI_EP_DGRAM on efa0 (FI_PROVIDER_PATH, FI_KFAB_BACKEND)");
	fi_freeinfo(h);
	tap_diag("kfab_efa FI_EP_DGRAM on %s, fabric %s, max_msg_size %zu",
		 fi->domain_attr->name, fi->fabric_attr->name,
		 fi->ep_attr->max_msg_size);
	fi_freeinfo(fi);

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		tap_skip_all("socketpair failed");
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		R.id = 1;
		R.sock = sv[1];
		child(both, nboth);
	}
	close(sv[1]);
	R.sock = sv[0];
	if (!TAP_EQ(rank_setup(), 0, "rank 0: fabric, domain, AV, CQ, endpoint, MR; names swapped")) {
		kill(pid, SIGKILL);
		xp_reap(pid, 1000);
		return tap_done();
	}
	for (size_t i = 0; i < nboth; i++)
		both[i]();
	TAP_EQ(sync_wait(NULL), 0, "rank 1 done");
	status = xp_reap(pid, TIMEOUT_MS);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status), "rank 1 exits 0");
	for (size_t i = 0; i < nalone; i++)
		alone[i]();
	rank_close(&R);
	if (own) {
		TAP_EQ(xp_files_under(dir), 0, "no files left in %s", dir);
		rmdir(dir);
	}
	return tap_done();
}

#endif /* KFAB_ULIB_EFA_DGRAM_RANK_H */
