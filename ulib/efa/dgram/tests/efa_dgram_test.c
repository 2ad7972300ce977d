// SPDX-License-Identifier: GPL-2.0
/*
 * efa_dgram_test: kfab_efa's FI_EP_DGRAM endpoint end to end, through the
 * public libfabric API, between this process (rank 0, prints TAP) and a
 * forked child (rank 1), both on device efa0 (efa1 for the reorder
 * case) of the backend FI_KFAB_BACKEND names. The ranks swap endpoint names and step through
 * the cases over a socketpair; rank 1 sends its checks to rank 0, which
 * prints them as points ("rank 1: ...").
 *
 *   every size 0..MTU both ways, byte checks, the prefix holding the
 *   sender's name (rank 1 replies to the fi_av_insert() of it); a message
 *   larger than the receive (FI_ETRUNC); RNR (-FI_EAGAIN) while the peer
 *   has no receive posted; fi_cq_sread() and FI_WAIT_FD woken by the
 *   other process; fi_sendv/fi_sendmsg into fi_recvv/fi_recvmsg of 1 to
 *   iov_limit iovecs both ways, the prefix in the first, nothing but the
 *   payload moved; FI_PROGRESS_AUTO: fi_cq_sread() and FI_WAIT_FD woken
 *   by a datagram, a payload landing while the application makes no
 *   call; a device holding each packet back behind the next (reorder_ppm
 *   1000000, set on efa1 through libkfab's device layer and restored):
 *   the held packet goes out with the sender's progress, from its sleep,
 *   from its progress thread and at its close; ofi_rxd's FI_EP_RDM over kfab_efa
 *   (send, receive, segmented and tagged messages); fi_cancel(); calls
 *   refused (fi_inject, no prefix space, past the MTU, iov_limit + 1
 *   iovecs, no descriptor, counters, selective completion, FI_EP_RDM
 *   endpoints).
 *
 * Without $KFAB_SHM_DIR on the shm backend a private one is made. Needs
 * FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_DGRAM. The reorder case is skipped
 * where the knob cannot be set (kmod without root).
 *
 *   FI_PROVIDER_PATH=build/prov FI_KFAB_BACKEND=shm \
 *           build/ulib-tests/efa_dgram_test
 */
#define _GNU_SOURCE
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
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
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
static void point(bool ok, const char *fmt, ...)
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

static void sync_send(uint64_t arg)
{
	struct msg m = { .kind = M_GO, .arg = arg };

	xp_send(R.sock, &m, sizeof(m));
}

/* The next message but points; rank 0 prints rank 1's points meanwhile. */
static int msg_wait(struct msg *m)
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

static int sync_wait(uint64_t *arg)
{
	struct msg m;
	int ret = msg_wait(&m);

	if (ret)
		return ret;
	if (arg)
		*arg = m.arg;
	return m.kind == M_GO || m.kind == M_DONE ? 0 : -EPROTO;
}

static struct fi_info *dgram_hints(const char *domain)
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
static int cq_wait(struct fid_cq *cq, struct fi_cq_msg_entry *e,
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
static int cq_wait_all(struct fid_cq *cq, void *const *ctx, size_t *len,
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

/*
 * A send of @count iovecs through the call @via names, retried while the
 * receiver is not ready; its completion. 0, or -FI_E*.
 */
static int send_iov(struct rank *r, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t dest, enum via via)
{
	struct fi_msg msg = {
		.msg_iov = iov,
		.desc = desc,
		.iov_count = count,
		.addr = dest,
		.context = r,
	};
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint64_t end = xp_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		if (via == VIA_SENDV)
			ret = fi_sendv(r->ep, iov, desc, count, dest, r);
		else if (via == VIA_SENDMSG)
			ret = fi_sendmsg(r->ep, &msg, 0);
		else
			ret = fi_send(r->ep, iov[0].iov_base, iov[0].iov_len,
				      desc[0], dest, r);
		if (ret == -FI_EAGAIN)
			fi_cq_read(r->cq, &e, 0);
	} while (ret == -FI_EAGAIN && xp_ms() < end);
	if (ret)
		return (int)ret;
	ret = cq_wait(r->cq, &e, &err);
	if (ret != 1)
		return (int)ret;
	return e.flags & FI_SEND && e.op_context == r ? 0 : -FI_EOTHER;
}

/* @len bytes after the prefix of r->sbuf with fi_send(); its completion. */
static int send_wait(struct rank *r, size_t len, fi_addr_t dest)
{
	struct iovec iov = { r->sbuf, PREFIX + len };

	return send_iov(r, &iov, &r->desc, 1, dest, VIA_SEND);
}

static int post_recv(struct rank *r, size_t len, void *ctx)
{
	return (int)fi_recv(r->ep, r->buf, PREFIX + len, r->desc,
			    FI_ADDR_UNSPEC, ctx);
}

/* @r's endpoint of what fi_getinfo() gives for @h (freed), enabled. */
static int rank_open(struct rank *r, struct fi_info *h)
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
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &r->info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	r->mtu = r->info->ep_attr->max_msg_size;
	if (r->mtu > RXD_MAX)
		r->mtu = RXD_MAX;
	ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (!ret)
		ret = fi_domain(r->fabric, r->info, &r->domain, NULL);
	if (!ret)
		ret = fi_av_open(r->domain, &av_attr, &r->av, NULL);
	if (!ret)
		ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	if (!ret)
		ret = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(r->ep);
	if (!ret)
		ret = fi_getname(&r->ep->fid, r->name, &len);
	if (ret)
		return ret;
	r->bufsz = 2 * (PREFIX + r->mtu + SLACK);
	r->buf = xp_anon(r->bufsz);
	if (!r->buf)
		return -FI_ENOMEM;
	r->sbuf = r->buf + r->bufsz / 2;
	if (!(r->info->domain_attr->mr_mode & FI_MR_LOCAL))
		return 0;
	ret = fi_mr_reg(r->domain, r->buf, r->bufsz, FI_SEND | FI_RECV, 0, 0,
			0, &r->mr, NULL);
	if (ret)
		return ret;
	r->desc = fi_mr_desc(r->mr);
	return 0;
}

static void rank_close(struct rank *r)
{
	if (r->mr)
		fi_close(&r->mr->fid);
	if (r->ep)
		point(!fi_close(&r->ep->fid), "fi_close(ep)");
	if (r->cq)
		fi_close(&r->cq->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->domain)
		point(!fi_close(&r->domain->fid),
		      "fi_close(domain): nothing left open");
	if (r->fabric)
		fi_close(&r->fabric->fid);
	if (r->buf)
		munmap(r->buf, r->bufsz);
	fi_freeinfo(r->info);
	r->info = NULL;
	r->fabric = NULL;
	r->domain = NULL;
	r->av = NULL;
	r->cq = NULL;
	r->ep = NULL;
	r->mr = NULL;
	r->buf = NULL;
}

/*
 * Both ranks, after rank_open(@r) gave @ret: swap the endpoints' names;
 * the peer's into @r's AV. 0 when both opened.
 */
static int rank_swap(struct rank *r, int ret)
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
	return fi_av_insert(r->av, r->peer_name, 1, &r->peer, 0, NULL) == 1 ?
	       0 : -FI_EINVAL;
}

/*
 * rank_open() of @h in both ranks at once (as MPI ranks start), then
 * rank_swap(): 0 when both opened.
 */
static int rank_open_both(struct rank *r, struct fi_info *h)
{
	return rank_swap(r, rank_open(r, h));
}

/* ------------------------------------------------------------------ */
/* cases */

/* Every size both ways; rank 1 replies to the name in the prefix. */
static void case_sizes(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t reply = FI_ADDR_NOTAVAIL;
	size_t bad = 0, badname = 0, first_bad = 0;
	int ret = 0;

	for (size_t n = 0; n <= R.mtu && !ret; n++) {
		if (R.id == 0) {
			ret = post_recv(&R, R.mtu, &e);
			xp_fill(R.sbuf + PREFIX, n, (uint32_t)n);
			if (!ret)
				ret = send_wait(&R, n, R.peer);
			if (!ret)
				ret = cq_wait(R.cq, &e, &err) == 1 ? 0 : -FI_EIO;
		} else {
			ret = post_recv(&R, R.mtu, &e);
			if (!ret)
				ret = fi_cq_sread(R.cq, &e, 1, NULL,
						  TIMEOUT_MS) == 1 ? 0 : -FI_EIO;
		}
		if (ret)
			break;
		if (e.len != PREFIX + n || !(e.flags & FI_RECV) ||
		    !xp_check(R.buf + PREFIX, n,
			      (uint32_t)n ^ (R.id ? 0 : 0x5a5a5a5a))) {
			if (!bad++)
				first_bad = n;
		}
		if (memcmp(R.buf, R.peer_name, NAMELEN))
			badname++;
		if (R.id == 1) {
			if (reply == FI_ADDR_NOTAVAIL &&
			    fi_av_insert(R.av, R.buf, 1, &reply, 0, NULL) != 1)
				ret = -FI_EINVAL;
			xp_fill(R.sbuf + PREFIX, n, (uint32_t)n ^ 0x5a5a5a5a);
			if (!ret)
				ret = send_wait(&R, n, reply);
		}
	}
	point(!ret, "every size 0..%zu both ways: no call failed (%d)", R.mtu,
	      ret);
	point(!bad, "every size: len = prefix + payload, bytes intact (%zu bad, first %zu)",
	      bad, first_bad);
	point(!badname, "the prefix holds the sender's name (%zu wrong)",
	      badname);
	if (R.id == 1)
		point(reply != FI_ADDR_NOTAVAIL,
		      "the prefix's name inserts into the AV; the replies went to it");
}

static void case_trunc(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint8_t *save = R.buf;
	int ret;

	if (R.id == 1) {
		ret = post_recv(&R, 10, &e);
		sync_send(0);
		ret = ret ? ret : cq_wait(R.cq, &e, &err);
		point(ret == -FI_ETRUNC && err.olen == 90 &&
		      err.len == PREFIX + 10 && err.op_context == &e &&
		      xp_check(R.buf + PREFIX, 10, 77),
		      "100 bytes into 10: FI_ETRUNC, olen %zu, len %zu, the 10 bytes kept",
		      err.olen, err.len);
		sync_send(0);
		return;
	}
	sync_wait(NULL);
	xp_fill(R.sbuf + PREFIX, 100, 77);
	TAP_EQ(send_wait(&R, 100, R.peer), 0, "a send of 100 bytes completes");
	sync_wait(NULL);
	R.buf = save;
}

static void case_rnr(void)
{
	struct fi_cq_msg_entry e;
	int eagain = 0, ret;

	if (R.id == 1) {
		sync_send(0);	/* nothing posted */
		sync_wait(NULL);
		ret = post_recv(&R, R.mtu, &e);
		sync_send(0);
		ret = ret ? ret : (fi_cq_sread(R.cq, &e, 1, NULL, TIMEOUT_MS) == 1 ?
				   0 : -FI_EIO);
		point(!ret && e.len == PREFIX + 5,
		      "after RNR, the retried send arrives");
		sync_send(0);
		return;
	}
	sync_wait(NULL);
	for (int i = 0; i < 20; i++) {
		ret = (int)fi_send(R.ep, R.sbuf, PREFIX + 5, R.desc, R.peer,
				   NULL);
		eagain += ret == -FI_EAGAIN;
		fi_cq_read(R.cq, &e, 0);
	}
	TAP_EQ(eagain, 20, "no receive posted at the peer: -FI_EAGAIN (RNR), every try");
	sync_send(0);
	sync_wait(NULL);
	TAP_EQ(send_wait(&R, 5, R.peer), 0, "once it posts: the send goes");
	sync_wait(NULL);
}

/* fi_cq_sread() and the FI_WAIT_FD fd woken by the other process. */
static void case_sleep(void)
{
	struct fi_cq_msg_entry e;
	struct fid *cqfid = &R.cq->fid;
	uint64_t t0;
	int fd = -1, ret;

	if (R.id == 1) {
		ret = post_recv(&R, R.mtu, &e);
		sync_send(0);
		t0 = xp_ms();
		ret = ret ? ret : (int)fi_cq_sread(R.cq, &e, 1, NULL, TIMEOUT_MS);
		point(ret == 1 && xp_ms() - t0 >= 150,
		      "fi_cq_sread sleeps until the other process sends (%d, %llu ms)",
		      ret, (unsigned long long)(xp_ms() - t0));
		ret = post_recv(&R, R.mtu, &e);
		ret = ret ? ret : fi_control(&R.cq->fid, FI_GETWAIT, &fd);
		ret = ret ? ret : fi_trywait(R.fabric, &cqfid, 1);
		sync_send(0);
		if (!ret) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			t0 = xp_ms();
			ret = poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -FI_ETIMEDOUT;
		}
		point(!ret && xp_ms() - t0 >= 150 &&
		      fi_cq_read(R.cq, &e, 1) == 1,
		      "FI_WAIT_FD: fi_trywait 0, poll() woken by the send, then fi_cq_read");
		sync_send(0);
		return;
	}
	for (int i = 0; i < 2; i++) {
		sync_wait(NULL);
		usleep(300000);
		TAP_EQ(send_wait(&R, 1, R.peer), 0, "send %d to the sleeper", i);
	}
	sync_wait(NULL);
}

/* ------------------------------------------------------------------ */
/* several iovecs */

/* iovec arrays of the tests: iov_limit + 1 at least */
#define IOVS		16
/* room a multi-iovec receive has past the payload, left as it was */
#define IOV_EXTRA	100

/*
 * @k iovecs spanning PREFIX + @n bytes from @base on: the prefix and
 * @first bytes of payload in the first (all of them when @k is 1), the
 * rest split unevenly over the others (the third one empty from 4 on),
 * GAP bytes between them.
 */
static void iov_split(const struct rank *r, uint8_t *base, struct iovec *iov,
		      void **desc, size_t k, size_t first, size_t n)
{
	size_t off = 0, left = n - (k == 1 ? n : first);

	for (size_t j = 0; j < k; j++) {
		size_t len = left;

		if (j == 0)
			len = PREFIX + n - left;
		else if (k >= 4 && j == 2)
			len = 0;
		else if (j < k - 1)
			len = left / (j % 2 ? 2 : 3);
		if (j)
			left -= len;
		iov[j].iov_base = base + off;
		iov[j].iov_len = len;
		desc[j] = r->desc;
		off += len + GAP;
	}
}

/* The payload of @iov (what follows the prefix) from or into @flat: its size. */
static size_t iov_flat(const struct iovec *iov, size_t k, uint8_t *flat,
		       bool to_iov)
{
	size_t done = 0;

	for (size_t j = 0; j < k; j++) {
		uint8_t *p = (uint8_t *)iov[j].iov_base + (j ? 0 : PREFIX);
		size_t len = iov[j].iov_len - (j ? 0 : PREFIX);

		if (to_iov)
			memcpy(p, flat + done, len);
		else
			memcpy(flat + done, p, len);
		done += len;
	}
	return done;
}

/* The GAP bytes after each of @iov still GUARD. */
static bool iov_gaps_intact(const struct iovec *iov, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (!xp_all((uint8_t *)iov[j].iov_base + iov[j].iov_len, GAP,
			    GUARD))
			return false;
	return true;
}

/*
 * Round @k of pass @pass (rank @pass sends): a datagram in @k iovecs
 * through fi_sendv or fi_sendmsg, received in @lim + 1 - @k through
 * fi_recvmsg or fi_recvv, the call alternating with @k and the pass.
 * 0, -FI_E* of a call, or 1 when the receiver found the data wrong.
 */
static int iov_round(size_t k, size_t lim, int pass, uint8_t *flat)
{
	struct iovec iov[IOVS];
	void *desc[IOVS];
	size_t n = k == lim ? R.mtu : 1 + (k * 997) % R.mtu;
	size_t kr = lim + 1 - k, len = 0;
	uint32_t seed = (uint32_t)(k * 31 + (size_t)pass);
	bool alt = (k + (size_t)pass) % 2;
	void *ctx = &kr;
	struct fi_msg msg = {
		.msg_iov = iov,
		.desc = desc,
		.iov_count = kr,
		.addr = FI_ADDR_UNSPEC,
		.context = ctx,
	};
	int ret;

	if (R.id == pass) {
		memset(R.sbuf, GUARD, R.bufsz / 2);
		iov_split(&R, R.sbuf, iov, desc, k, k % 3 ? n / 5 : 0, n);
		xp_fill(flat, n, seed);
		iov_flat(iov, k, flat, true);
		ret = sync_wait(NULL);
		return ret ? ret : send_iov(&R, iov, desc, k, R.peer,
					    alt ? VIA_SENDV : VIA_SENDMSG);
	}
	memset(R.buf, GUARD, R.bufsz / 2);
	iov_split(&R, R.buf, iov, desc, kr, kr % 2 ? 0 : n / 4,
		  n + IOV_EXTRA);
	ret = (int)(alt ? fi_recvmsg(R.ep, &msg, 0) :
		    fi_recvv(R.ep, iov, desc, kr, FI_ADDR_UNSPEC, ctx));
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(R.cq, &ctx, &len, 1);
	if (ret)
		return ret;
	return len == PREFIX + n &&
	       !memcmp(iov[0].iov_base, R.peer_name, NAMELEN) &&
	       iov_flat(iov, kr, flat, false) == n + IOV_EXTRA &&
	       xp_check(flat, n, seed) && xp_all(flat + n, IOV_EXTRA, GUARD) &&
	       iov_gaps_intact(iov, kr) ? 0 : 1;
}

/*
 * Both ways, every count of iovecs from 1 to iov_limit against the
 * complementary count at the receiver, the largest datagram in the most
 * iovecs; the sender's prefix and gaps not sent, the receiver's gaps and
 * spare room untouched.
 */
static void case_iov(void)
{
	size_t lim = R.info->tx_attr->iov_limit;
	uint8_t *flat = malloc(R.mtu + IOV_EXTRA);

	if (R.id == 0)
		TAP_OK(lim >= 2 && lim < IOVS &&
		       R.info->rx_attr->iov_limit == lim,
		       "iov_limit %zu for sends and receives", lim);
	if (lim < 2 || lim >= IOVS || !flat) {
		free(flat);
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		size_t bad = 0, failed = 0, first = 0;
		int err = 0;

		for (size_t k = 1; k <= lim; k++) {
			int ret = iov_round(k, lim, pass, flat);

			if (ret && !bad && !failed) {
				first = k;
				err = ret;
			}
			bad += ret > 0;
			failed += ret < 0;
		}
		if (R.id == pass)
			point(!failed, "fi_sendv/fi_sendmsg of 1..%zu iovecs, the prefix alone or with payload in the first: sent, completed (first failure: %zu iovecs, %d)",
			      lim, first, err);
		else
			point(!failed && !bad, "fi_recvmsg/fi_recvv of %zu..1 iovecs: len = prefix + payload, the sender's name in the prefix, byte-exact, gaps and spare room untouched (%zu bad, %zu failed, first at %zu)",
			      lim, bad, failed, first);
	}
	free(flat);
}

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
	struct fid *cqfid = &a->cq->fid;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint64_t t0;
	int ret = fd < 0 ? -FI_EINVAL : post_recv(a, 64, &e);

	if (!ret)
		ret = fi_trywait(a->fabric, &cqfid, 1);
	sync_send(0);
	t0 = xp_ms();
	if (!ret)
		ret = poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -FI_ETIMEDOUT;
	*ms = xp_ms() - t0;
	if (!ret && (cq_wait(a->cq, &e, &err) != 1 ||
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
	point(!ret && A.info->domain_attr->data_progress == FI_PROGRESS_AUTO,
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
		ret = (int)fi_cq_sread(A.cq, &e, 1, NULL, TIMEOUT_MS);
	ms = xp_ms() - t0;
	point(ret == 1 && ms >= 150 && e.len == PREFIX + 64 &&
	      xp_check(A.buf + PREFIX, 64, 40),
	      "FI_PROGRESS_AUTO: fi_cq_sread sleeps until the datagram arrives (%d, %llu ms)",
	      ret, (unsigned long long)ms);

	fi_control(&A.cq->fid, FI_GETWAIT, &fd);
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
	point(!ret && landed && fi_cq_read(A.cq, &e, 1) == 1 &&
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
	return (int)fi_send(r->ep, r->sbuf, SLOT, r->desc, dest, r);
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
		ret = (int)fi_cq_sread(r->cq, &e, 1, NULL, TIMEOUT_MS);
	else
		ret = cq_wait(r->cq, &e, &err);
	return ret == 1 && e.op_context == r->buf ?
	       numbered(r->buf, e.len) : -1;
}

static int post_slot(struct rank *r, int j)
{
	return (int)fi_recv(r->ep, r->buf + j * SLOT, SLOT, r->desc,
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

			if (fi_cq_read(m->cq, &e, 1) != 1)
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

	if (!ret && fi_av_insert(c->av, name, 1, &c->peer, 0, NULL) != 1)
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
	while (done < sent && cq_wait(m->cq, &e, &err) == 1 &&
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
		ret = cq_wait(m->cq, &e, &err) == 1 && e.op_context == m ?
		      0 : -FI_EIO;
	sync_send(0);
	t0 = xp_ms();
	if (!ret)
		ret = (int)fi_cq_sread(m->cq, &e, 1, NULL, TIMEOUT_MS);
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
	TAP_OK(!ret && cq_wait(A.cq, &e, &err) == 1 && e.op_context == &A,
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
	TAP_OK(!ret && cq_wait(m->cq, &e, &err) == 1 && e.op_context == m,
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
		fi_cq_read(r->cq, &e, 0);
	}
}

static void rxd_receiver(struct rank *x, size_t big)
{
	int r, s, ta, tb, ret;
	void *ctx[2] = { &r, &s };
	void *tctx[2] = { &ta, &tb };
	size_t len[2] = { 0 };

	ret = (int)fi_recv(x->ep, x->buf, RXD_MAX, x->desc, FI_ADDR_UNSPEC,
			   &r);
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(x->cq, ctx, len, 1);
	xp_fill(x->sbuf, big, 51);
	if (!ret)
		ret = (int)fi_send(x->ep, x->sbuf, big, x->desc, x->peer, &s);
	if (!ret)
		ret = cq_wait_all(x->cq, ctx + 1, NULL, 1);
	point(!ret && len[0] == 64 && xp_check(x->buf, 64, 50),
	      "ofi_rxd: 64 bytes received, %zu sent back (%d)", big, ret);

	ret = (int)fi_trecv(x->ep, x->buf, 4096, x->desc, FI_ADDR_UNSPEC,
			    TAG_B, 0, &tb);
	if (!ret)
		ret = (int)fi_trecv(x->ep, x->buf + 4096, 4096, x->desc,
				    FI_ADDR_UNSPEC, TAG_A, 0, &ta);
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(x->cq, tctx, len, 2);
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
		ret = (int)fi_recv(x->ep, x->buf, RXD_MAX, x->desc,
				   FI_ADDR_UNSPEC, &r);
	xp_fill(x->sbuf, 64, 50);
	if (!ret)
		ret = (int)fi_send(x->ep, x->sbuf, 64, x->desc, x->peer, &s);
	if (!ret)
		ret = cq_wait_all(x->cq, ctx, len, 2);
	TAP_OK(!ret && len[1] == big && xp_check(x->buf, big, 51),
	       "ofi_rxd: 64 bytes sent, the reply of %zu bytes (%zu datagrams at least) intact (%d)",
	       big, big / R.mtu + 1, ret);

	ret = sync_wait_progress(x);
	xp_fill(x->sbuf, 100, 52);
	xp_fill(x->sbuf + 4096, 200, 53);
	if (!ret)
		ret = (int)fi_tsend(x->ep, x->sbuf, 100, x->desc, x->peer,
				    TAG_A, &sa);
	if (!ret)
		ret = (int)fi_tsend(x->ep, x->sbuf + 4096, 200, x->desc,
				    x->peer, TAG_B, &sb);
	if (!ret)
		ret = cq_wait_all(x->cq, tctx, NULL, 2);
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
	point(X.info->ep_attr->type == FI_EP_RDM &&
	      !strcmp(X.info->fabric_attr->prov_name, RXD_PROV),
	      "ofi_rxd: an FI_EP_RDM endpoint of %s on %s",
	      X.info->fabric_attr->prov_name, X.info->domain_attr->name);
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
/* rank 0 alone */

static void case_cancel(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ctx, ret;

	TAP_EQ(post_recv(&R, R.mtu, &ctx), 0, "a receive posted");
	TAP_EQ(fi_cancel(&R.ep->fid, &ctx), 0, "fi_cancel of it: 0");
	ret = cq_wait(R.cq, &e, &err);
	TAP_OK(ret == -FI_ECANCELED && err.op_context == &ctx &&
	       (err.flags & FI_RECV),
	       "its error completion: FI_ECANCELED, its context (%d)", ret);
	TAP_EQ(fi_cancel(&R.ep->fid, &ctx), -FI_ENOENT,
	       "fi_cancel again: -FI_ENOENT");
}

/* iovec counts and layouts refused; iov_limit of the same taken. */
static void refused_iov(void)
{
	struct iovec iov[IOVS];
	void *desc[IOVS];
	size_t lim = R.info->tx_attr->iov_limit;
	struct fi_msg msg = {
		.msg_iov = iov,
		.desc = desc,
		.iov_count = lim + 1,
		.addr = R.peer,
	};
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ctx;

	if (lim + 1 >= IOVS)
		return;
	iov_split(&R, R.sbuf, iov, desc, lim + 1, 10, 1000);
	TAP_EQ(fi_sendv(R.ep, iov, desc, lim + 1, R.peer, NULL), -FI_EINVAL,
	       "fi_sendv of iov_limit + 1 (%zu) iovecs: -FI_EINVAL", lim + 1);
	TAP_EQ(fi_sendmsg(R.ep, &msg, 0), -FI_EINVAL,
	       "fi_sendmsg of iov_limit + 1 iovecs: -FI_EINVAL");
	iov_split(&R, R.buf, iov, desc, lim + 1, 10, 1000);
	msg.addr = FI_ADDR_UNSPEC;
	TAP_EQ(fi_recvv(R.ep, iov, desc, lim + 1, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL, "fi_recvv of iov_limit + 1 iovecs: -FI_EINVAL");
	TAP_EQ(fi_recvmsg(R.ep, &msg, 0), -FI_EINVAL,
	       "fi_recvmsg of iov_limit + 1 iovecs: -FI_EINVAL");
	/* the first iov_limit of the same iovecs are a receive */
	msg.iov_count = lim;
	msg.context = &ctx;
	TAP_EQ(fi_recvmsg(R.ep, &msg, 0), 0,
	       "fi_recvmsg of iov_limit of them: posted");
	TAP_EQ(fi_cancel(&R.ep->fid, &ctx), 0, "and cancelled");
	TAP_EQ(cq_wait(R.cq, &e, &err), -FI_ECANCELED,
	       "its completion: FI_ECANCELED");

	iov_split(&R, R.sbuf, iov, desc, 2, 0, 100);
	iov[0].iov_len = PREFIX - 8;
	TAP_EQ(fi_sendv(R.ep, iov, desc, 2, R.peer, NULL), -FI_EINVAL,
	       "fi_sendv whose first iovec is shorter than the prefix: -FI_EINVAL");
	TAP_EQ(fi_recvv(R.ep, iov, desc, 2, FI_ADDR_UNSPEC, NULL), -FI_EINVAL,
	       "fi_recvv whose first iovec is shorter than the prefix: -FI_EINVAL");
	iov_split(&R, R.sbuf, iov, desc, lim, 10, R.mtu + 1);
	TAP_EQ(fi_sendv(R.ep, iov, desc, lim, R.peer, NULL), -FI_EMSGSIZE,
	       "fi_sendv of %zu iovecs, one byte past the MTU in all: -FI_EMSGSIZE",
	       lim);
	iov_split(&R, R.buf, iov, desc, 3, 10, 100);
	desc[2] = NULL;
	TAP_EQ(fi_recvv(R.ep, iov, desc, 3, FI_ADDR_UNSPEC, NULL), -FI_EINVAL,
	       "FI_MR_LOCAL: fi_recvv with no descriptor for its third iovec: -FI_EINVAL");
}

static void case_refused(void)
{
	struct fid_ep *ep2 = NULL;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_domain *rdm_dom = NULL;
	struct fi_info *rdm = fi_dupinfo(R.info);

	TAP_EQ(fi_inject(R.ep, R.sbuf, PREFIX + 1, R.peer), -FI_ENOSYS,
	       "fi_inject: -FI_ENOSYS");
	TAP_EQ(fi_send(R.ep, R.sbuf, PREFIX - 8, R.desc, R.peer, NULL),
	       -FI_EINVAL, "a buffer smaller than the prefix: -FI_EINVAL");
	TAP_EQ(fi_send(R.ep, NULL, 0, R.desc, R.peer, NULL), -FI_EINVAL,
	       "no prefix space at all (NULL, 0): -FI_EINVAL");
	TAP_EQ(fi_recv(R.ep, R.buf, 16, R.desc, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL, "a receive without room for the prefix: -FI_EINVAL");
	TAP_EQ(fi_send(R.ep, R.sbuf, PREFIX + R.mtu + 1, R.desc, R.peer, NULL),
	       -FI_EMSGSIZE, "one byte past the MTU: -FI_EMSGSIZE");
	TAP_EQ(fi_send(R.ep, R.sbuf, PREFIX + 1, NULL, R.peer, NULL),
	       -FI_EINVAL, "FI_MR_LOCAL: no descriptor: -FI_EINVAL");
	TAP_EQ(fi_send(R.ep, R.sbuf, PREFIX + 1, R.desc, 1000, NULL),
	       -FI_EINVAL, "an fi_addr not in the AV: -FI_EINVAL");
	refused_iov();

	TAP_EQ(fi_endpoint(R.domain, R.info, &ep2, NULL), 0,
	       "a second endpoint");
	if (ep2) {
		TAP_EQ(fi_ep_bind(ep2, &R.cq->fid,
				  FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
		       -FI_EBADFLAGS, "FI_SELECTIVE_COMPLETION: -FI_EBADFLAGS");
		if (!fi_cntr_open(R.domain, &cattr, &cntr, NULL)) {
			TAP_EQ(fi_ep_bind(ep2, &cntr->fid, FI_SEND),
			       -FI_ENOSYS, "a counter: -FI_ENOSYS");
			fi_close(&cntr->fid);
		}
		TAP_EQ(fi_enable(ep2), -FI_ENOAV, "fi_enable without an AV");
		TAP_EQ(fi_close(&ep2->fid), 0, "the second endpoint closes");
	}
	ep2 = NULL;
	rdm->ep_attr->type = FI_EP_RDM;
	TAP_EQ(fi_endpoint(R.domain, rdm, &ep2, NULL), -FI_EINVAL,
	       "fi_endpoint of an FI_EP_RDM info on a -dgrm domain: -FI_EINVAL");
	free(rdm->domain_attr->name);
	rdm->domain_attr->name = strdup("efa0-rdm");
	TAP_EQ(fi_domain(R.fabric, rdm, &rdm_dom, NULL), 0,
	       "domain efa0-rdm opens");
	if (rdm_dom) {
		TAP_EQ(fi_endpoint(rdm_dom, rdm, &ep2, NULL), 0,
		       "fi_endpoint on efa0-rdm: an FI_EP_RDM endpoint");
		if (ep2)
			TAP_EQ(fi_close(&ep2->fid), 0, "it closes");
		fi_close(&rdm_dom->fid);
	}
	fi_freeinfo(rdm);
}

/* ------------------------------------------------------------------ */

static int rank_setup(void)
{
	int ret = rank_open_both(&R, dgram_hints("efa0-dgrm"));

	if (ret)
		fprintf(stderr, "rank %d: setup: %s\n", R.id, fi_strerror(-ret));
	return ret;
}

static void child(void)
{
	struct msg m = { .kind = M_DONE };

	if (rank_setup()) {
		point(false, "setup failed");
		xp_send(R.sock, &m, sizeof(m));
		_exit(1);
	}
	case_sizes();
	sync_send(0);
	case_trunc();
	case_rnr();
	case_sleep();
	case_iov();
	case_auto();
	case_reorder();
	case_rxd();
	rank_close(&R);
	xp_send(R.sock, &m, sizeof(m));
	_exit(0);
}

int main(void)
{
	const char *env = getenv("KFAB_SHM_DIR");
	const char *be = getenv("FI_KFAB_BACKEND");
	struct fi_info *h, *fi = NULL;
	char dir[256] = "";
	bool own = false;
	int sv[2], status;
	pid_t pid;

	tap_start("efa_dgram_test");
	signal(SIGPIPE, SIG_IGN);
	if ((!be || strcmp(be, "kmod")) && !(env && *env)) {
		const char *tmp = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/kfab-efa-dgram-test.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
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
		child();
	}
	close(sv[1]);
	R.sock = sv[0];
	if (!TAP_EQ(rank_setup(), 0, "rank 0: fabric, domain, AV, CQ, endpoint, MR; names swapped")) {
		kill(pid, SIGKILL);
		xp_reap(pid, 1000);
		return tap_done();
	}
	case_sizes();
	TAP_EQ(sync_wait(NULL), 0, "rank 1 went through every size");
	case_trunc();
	case_rnr();
	case_sleep();
	case_iov();
	case_auto();
	case_reorder();
	case_rxd();
	TAP_EQ(sync_wait(NULL), 0, "rank 1 done");
	status = xp_reap(pid, TIMEOUT_MS);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status), "rank 1 exits 0");
	case_cancel();
	case_refused();
	rank_close(&R);
	if (own) {
		TAP_EQ(xp_files_under(dir), 0, "no files left in %s", dir);
		rmdir(dir);
	}
	return tap_done();
}
