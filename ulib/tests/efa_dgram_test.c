// SPDX-License-Identifier: GPL-2.0
/*
 * efa_dgram_test: kfab_efa's FI_EP_DGRAM endpoint end to end, through the
 * public libfabric API only, between this process (rank 0, prints TAP)
 * and a forked child (rank 1), both on device efa0 of the backend
 * FI_KFAB_BACKEND names. The ranks swap endpoint names and step through
 * the cases over a socketpair; rank 1 sends its checks to rank 0, which
 * prints them as points ("rank 1: ...").
 *
 *   every size 0..MTU both ways, byte checks, the prefix holding the
 *   sender's name (rank 1 replies to the fi_av_insert() of it); a message
 *   larger than the receive (FI_ETRUNC); RNR (-FI_EAGAIN) while the peer
 *   has no receive posted; fi_cq_sread() and FI_WAIT_FD woken by the
 *   other process; fi_cancel(); calls refused (fi_inject, no prefix
 *   space, past the MTU, no descriptor, counters, selective completion,
 *   FI_EP_RDM endpoints).
 *
 * Without $KFAB_SHM_DIR on the shm backend a private one is made. Needs
 * FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_DGRAM.
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

#include "tap.h"
#include "xproc.h"

#define PREFIX		32
#define NAMELEN		32
#define TIMEOUT_MS	10000

enum { M_NAME = 1, M_GO, M_POINT, M_DONE };

struct msg {
	uint32_t kind;
	uint32_t ok;
	uint64_t arg;
	uint8_t name[NAMELEN];
	char text[160];
};

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
	uint8_t *buf;			/* receive: PREFIX + mtu + slack */
	uint8_t *sbuf;			/* send */
	size_t mtu;
	uint8_t name[NAMELEN];
	uint8_t peer_name[NAMELEN];
	fi_addr_t peer;
};

static struct rank R;

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

/* Rank 0 prints rank 1's points while waiting for its M_GO. */
static int sync_wait(uint64_t *arg)
{
	struct msg m;

	for (;;) {
		struct pollfd p = { .fd = R.sock, .events = POLLIN };

		if (poll(&p, 1, TIMEOUT_MS) != 1 ||
		    read(R.sock, &m, sizeof(m)) != sizeof(m))
			return -ETIMEDOUT;
		if (m.kind == M_POINT) {
			TAP_OK(m.ok, "rank 1: %s", m.text);
			continue;
		}
		if (arg)
			*arg = m.arg;
		return m.kind == M_GO || m.kind == M_DONE ? 0 : -EPROTO;
	}
}

static struct fi_info *dgram_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_DGRAM;
	h->caps = FI_MSG;
	h->mode = FI_MSG_PREFIX | FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->name = strdup("efa0-dgrm");
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

/* A send, retried while the receiver is not ready; its completion. */
static int send_wait(size_t len, fi_addr_t dest)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint64_t end = xp_ms() + TIMEOUT_MS;
	ssize_t ret;

	do {
		ret = fi_send(R.ep, R.sbuf, PREFIX + len, R.desc, dest, &R);
		if (ret == -FI_EAGAIN)
			fi_cq_read(R.cq, &e, 0);
	} while (ret == -FI_EAGAIN && xp_ms() < end);
	if (ret)
		return (int)ret;
	ret = cq_wait(R.cq, &e, &err);
	if (ret != 1)
		return (int)ret;
	return e.flags & FI_SEND ? 0 : -FI_EOTHER;
}

static int post_recv(size_t len, void *ctx)
{
	return (int)fi_recv(R.ep, R.buf, PREFIX + len, R.desc, FI_ADDR_UNSPEC,
			    ctx);
}

static int open_rank(void)
{
	struct fi_info *h = dgram_hints();
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
		.size = 1024,
	};
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	size_t len = NAMELEN, bufsz;
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &R.info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	R.mtu = R.info->ep_attr->max_msg_size;
	ret = fi_fabric(R.info->fabric_attr, &R.fabric, NULL);
	if (!ret)
		ret = fi_domain(R.fabric, R.info, &R.domain, NULL);
	if (!ret)
		ret = fi_av_open(R.domain, &av_attr, &R.av, NULL);
	if (!ret)
		ret = fi_cq_open(R.domain, &cq_attr, &R.cq, NULL);
	if (!ret)
		ret = fi_endpoint(R.domain, R.info, &R.ep, NULL);
	if (!ret)
		ret = fi_ep_bind(R.ep, &R.av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(R.ep, &R.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(R.ep);
	if (!ret)
		ret = fi_getname(&R.ep->fid, R.name, &len);
	if (ret)
		return ret;
	bufsz = 2 * (PREFIX + R.mtu + 64);
	R.buf = xp_anon(bufsz);
	if (!R.buf)
		return -FI_ENOMEM;
	R.sbuf = R.buf + bufsz / 2;
	ret = fi_mr_reg(R.domain, R.buf, bufsz, FI_SEND | FI_RECV, 0, 0, 0,
			&R.mr, NULL);
	if (ret)
		return ret;
	R.desc = fi_mr_desc(R.mr);
	return 0;
}

static void close_rank(void)
{
	if (R.mr)
		fi_close(&R.mr->fid);
	if (R.ep)
		point(!fi_close(&R.ep->fid), "fi_close(ep)");
	if (R.cq)
		fi_close(&R.cq->fid);
	if (R.av)
		fi_close(&R.av->fid);
	if (R.domain)
		point(!fi_close(&R.domain->fid),
		      "fi_close(domain): nothing left open");
	if (R.fabric)
		fi_close(&R.fabric->fid);
	fi_freeinfo(R.info);
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
			ret = post_recv(R.mtu, &e);
			xp_fill(R.sbuf + PREFIX, n, (uint32_t)n);
			if (!ret)
				ret = send_wait(n, R.peer);
			if (!ret)
				ret = cq_wait(R.cq, &e, &err) == 1 ? 0 : -FI_EIO;
		} else {
			ret = post_recv(R.mtu, &e);
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
				ret = send_wait(n, reply);
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
		ret = post_recv(10, &e);
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
	TAP_EQ(send_wait(100, R.peer), 0, "a send of 100 bytes completes");
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
		ret = post_recv(R.mtu, &e);
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
	TAP_EQ(send_wait(5, R.peer), 0, "once it posts: the send goes");
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
		ret = post_recv(R.mtu, &e);
		sync_send(0);
		t0 = xp_ms();
		ret = ret ? ret : (int)fi_cq_sread(R.cq, &e, 1, NULL, TIMEOUT_MS);
		point(ret == 1 && xp_ms() - t0 >= 150,
		      "fi_cq_sread sleeps until the other process sends (%d, %llu ms)",
		      ret, (unsigned long long)(xp_ms() - t0));
		ret = post_recv(R.mtu, &e);
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
		TAP_EQ(send_wait(1, R.peer), 0, "send %d to the sleeper", i);
	}
	sync_wait(NULL);
}

static void case_cancel(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ctx, ret;

	TAP_EQ(post_recv(R.mtu, &ctx), 0, "a receive posted");
	TAP_EQ(fi_cancel(&R.ep->fid, &ctx), 0, "fi_cancel of it: 0");
	ret = cq_wait(R.cq, &e, &err);
	TAP_OK(ret == -FI_ECANCELED && err.op_context == &ctx &&
	       (err.flags & FI_RECV),
	       "its error completion: FI_ECANCELED, its context (%d)", ret);
	TAP_EQ(fi_cancel(&R.ep->fid, &ctx), -FI_ENOENT,
	       "fi_cancel again: -FI_ENOENT");
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
	struct msg m = { .kind = M_NAME };
	int ret = open_rank();

	if (ret) {
		fprintf(stderr, "rank %d: setup: %s\n", R.id, fi_strerror(-ret));
		return ret;
	}
	memcpy(m.name, R.name, NAMELEN);
	if (xp_send(R.sock, &m, sizeof(m)) ||
	    xp_recv(R.sock, &m, sizeof(m), M_NAME, TIMEOUT_MS))
		return -FI_EIO;
	memcpy(R.peer_name, m.name, NAMELEN);
	return fi_av_insert(R.av, R.peer_name, 1, &R.peer, 0, NULL) == 1 ?
	       0 : -FI_EINVAL;
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
	close_rank();
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
	h = dgram_hints();
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
	TAP_EQ(sync_wait(NULL), 0, "rank 1 done");
	status = xp_reap(pid, TIMEOUT_MS);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status), "rank 1 exits 0");
	case_cancel();
	case_refused();
	close_rank();
	if (own) {
		TAP_EQ(xp_files_under(dir), 0, "no files left in %s", dir);
		rmdir(dir);
	}
	return tap_done();
}
