/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of kfab_efa's FI_EP_RDM endpoint (efa_rdm_*_test) share:
 * two endpoints in one process, each of its own fabric and domain on
 * device efa0, on the shm backend of a private $KFAB_SHM_DIR; their
 * completions; messages checked byte by byte; the device's knobs set
 * through libkfab's device layer (kfab_efa_set_knob()), restored by each
 * case; the endpoint options; the program's setup and cleanup.
 */
#ifndef KFAB_ULIB_EFA_RDM_NODE_H
#define KFAB_ULIB_EFA_RDM_NODE_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "dev/efa_dev.h"
#include "efa/fi_ext_kfab_efa.h"
#include "tests/ep_util.h"
#include "tests/tap.h"
#include "tests/xproc.h"

#define TIMEOUT_MS	20000
#define BIG		(2UL << 20)	/* the largest message */
#define BUFSZ		((4UL << 20) + 4096)	/* each buffer */
#define NAMELEN		64
#define QMAX		4096		/* completions stashed per node */

struct comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	uint64_t data;
	int err;
	char why[256];
};

/* An endpoint with its own fabric, domain, AV and CQ. */
struct node {
	struct ep_objs obj;
	fi_addr_t peer;
	uint8_t name[NAMELEN];
	size_t namelen;
	struct comp *q;			/* completions read, not taken */
	size_t qh, qt;
};

static struct kfab_efa_dev *knobs;	/* efa0 through libkfab */
/* the domain node_open() opens */
static const char *rdm_domain = "efa0-rdm";
/* applied to the fi_info of the endpoints node_open() makes, when set */
static void (*info_hook)(struct fi_info *info);
/* applied to the hints they come from, when set */
static void (*hints_hook)(struct fi_info *hints);
static uint8_t *sbuf, *rbuf, *lbuf;	/* BUFSZ each */

static inline void quiet(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_WARN)
		tap_diag("libkfab: %s", msg);
}

static inline int set_knob(enum kfab_efa_knob knob, uint32_t v)
{
	int ret = kfab_efa_set_knob(knobs, knob, v);

	if (ret)
		tap_diag("kfab_efa_set_knob(%s, %u): %s",
			 kfab_efa_knob_name(knob), v, strerror(-ret));
	return ret;
}

/* ------------------------------------------------------------------ */
/* endpoints */

static inline struct fi_info *get_info(bool auto_progress)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL, *pick = NULL;

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->domain_attr->name = strdup(rdm_domain);
	h->fabric_attr->prov_name = strdup("kfab_efa");
	if (auto_progress) {
		h->domain_attr->data_progress = FI_PROGRESS_AUTO;
		h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	}
	if (hints_hook)
		hints_hook(h);
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi))
		fi = NULL;
	fi_freeinfo(h);
	for (struct fi_info *p = fi; p; p = p->next) {
		if (p->fabric_attr->prov_name &&
		    !strcmp(p->fabric_attr->prov_name, "kfab_efa") &&
		    p->domain_attr->name &&
		    !strcmp(p->domain_attr->name, rdm_domain)) {
			pick = fi_dupinfo(p);
			break;
		}
	}
	fi_freeinfo(fi);
	return pick;
}

/* fi_close() of each object: false when one refused */
static inline bool node_close(struct node *n)
{
	bool ok = !ep_objs_close(&n->obj);

	free(n->q);
	memset(n, 0, sizeof(*n));
	return ok;
}

/*
 * Fabric, domain (FI_EFA_* are read now), AV, CQ and an endpoint bound to
 * them, not enabled: 0 or the failing call's -FI_E*.
 */
static inline int node_open(struct node *n, bool auto_progress, bool wait_fd)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA,
		.wait_obj = wait_fd ? FI_WAIT_FD : FI_WAIT_NONE,
	};
	int ret;

	memset(n, 0, sizeof(*n));
	n->q = calloc(QMAX, sizeof(*n->q));
	n->obj.info = get_info(auto_progress);
	if (!n->q || !n->obj.info)
		return -FI_ENODATA;
	if (info_hook)
		info_hook(n->obj.info);
	ret = ep_objs_open(&n->obj, &av_attr, &cq_attr);
	if (ret)
		tap_diag("node_open: %s", fi_strerror(-ret));
	return ret;
}

static inline int node_enable(struct node *n)
{
	int ret = fi_enable(n->obj.ep);

	n->namelen = sizeof(n->name);
	if (!ret)
		ret = fi_getname(&n->obj.ep->fid, n->name, &n->namelen);
	return ret;
}

/* Each in the other's AV. */
static inline int connect2(struct node *a, struct node *b)
{
	if (fi_av_insert(a->obj.av, b->name, 1, &a->peer, 0, NULL) != 1 ||
	    fi_av_insert(b->obj.av, a->name, 1, &b->peer, 0, NULL) != 1)
		return -1;
	return 0;
}

/* Two enabled endpoints that know each other; env is read by both. */
static inline int pair_open(struct node *a, struct node *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	if (node_open(a, false, false) || node_open(b, false, false) ||
	    node_enable(a) || node_enable(b) || connect2(a, b))
		return -1;
	return 0;
}

static inline int stats(struct node *n, struct fi_kfab_efa_ep_stats *st)
{
	size_t len = sizeof(*st);

	memset(st, 0, sizeof(*st));
	return fi_getopt(&n->obj.ep->fid, FI_OPT_ENDPOINT,
			 FI_OPT_KFAB_EFA_STATS, st, &len);
}

/* ------------------------------------------------------------------ */
/* completions */

static inline void stash(struct node *n, const struct comp *c)
{
	n->q[n->qt++ % QMAX] = *c;
}

/* Reads what @n's CQ has (progressing its endpoint) into its stash. */
static inline void pump(struct node *n)
{
	struct fi_cq_data_entry e[16];
	struct comp c;
	ssize_t r;

	for (;;) {
		if (n->qt - n->qh > QMAX - 16)
			return;
		r = fi_cq_read(n->obj.cq, e, 16);
		if (r > 0) {
			for (ssize_t i = 0; i < r; i++) {
				memset(&c, 0, sizeof(c));
				c.ctx = e[i].op_context;
				c.flags = e[i].flags;
				c.len = e[i].len;
				c.data = e[i].data;
				stash(n, &c);
			}
			continue;
		}
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry ee;
			char buf[256];
			const char *s;

			memset(&ee, 0, sizeof(ee));
			if (fi_cq_readerr(n->obj.cq, &ee, 0) != 1)
				return;
			memset(&c, 0, sizeof(c));
			c.ctx = ee.op_context;
			c.flags = ee.flags;
			c.len = ee.len;
			c.err = ee.err ? ee.err : -1;
			s = fi_cq_strerror(n->obj.cq, ee.prov_errno,
					   ee.err_data, buf, sizeof(buf));
			snprintf(c.why, sizeof(c.why), "%s | %s",
				 ee.err_data ? (const char *)ee.err_data : "",
				 s ? s : "");
			stash(n, &c);
			continue;
		}
		return;
	}
}

static inline bool take(struct node *n, struct comp *c)
{
	if (n->qh == n->qt)
		return false;
	*c = n->q[n->qh++ % QMAX];
	return true;
}

/* The next completion of @n, progressing @other too: 0 or -ETIMEDOUT. */
static inline int wait_one(struct node *n, struct node *other, struct comp *c)
{
	uint64_t end = xp_ms() + TIMEOUT_MS;

	for (;;) {
		if (take(n, c))
			return 0;
		pump(n);
		if (other)
			pump(other);
		if (take(n, c))
			return 0;
		if (xp_ms() > end)
			return -ETIMEDOUT;
	}
}

/* A completion of @n with context @ctx and no error. */
static inline bool expect(struct node *n, struct node *other, void *ctx,
			  const char *what)
{
	struct comp c;

	if (wait_one(n, other, &c)) {
		tap_diag("%s: no completion in %d ms", what, TIMEOUT_MS);
		return false;
	}
	if (c.ctx != ctx || c.err) {
		tap_diag("%s: completion ctx %p (want %p) err %d %s", what,
			 c.ctx, ctx, c.err, c.why);
		return false;
	}
	return true;
}

/* fi_send of @len bytes a->b, received whole and byte-exact. */
static inline bool xfer(struct node *a, struct node *b, size_t len,
			uint32_t seed)
{
	int sctx, rctx;
	ssize_t ret;

	xp_fill(sbuf, len, seed);
	memset(rbuf, 0, len + 64);
	ret = fi_recv(b->obj.ep, rbuf, len, NULL, FI_ADDR_UNSPEC, &rctx);
	if (ret) {
		tap_diag("fi_recv: %s", fi_strerror((int)-ret));
		return false;
	}
	ret = fi_send(a->obj.ep, sbuf, len, NULL, a->peer, &sctx);
	if (ret) {
		tap_diag("fi_send: %s", fi_strerror((int)-ret));
		return false;
	}
	if (!expect(b, a, &rctx, "receive") || !expect(a, b, &sctx, "send"))
		return false;
	if (!xp_check(rbuf, len, seed) || !xp_all(rbuf + len, 64, 0)) {
		tap_diag("%zu bytes: data differs", len);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* endpoint options */

static inline int getb(struct node *n, int name, bool *b)
{
	size_t len = sizeof(*b);

	return fi_getopt(&n->obj.ep->fid, FI_OPT_ENDPOINT, name, b, &len);
}

static inline int setb(struct node *n, int name, bool b)
{
	return fi_setopt(&n->obj.ep->fid, FI_OPT_ENDPOINT, name, &b, sizeof(b));
}

static inline int get_sz(struct node *n, int name, size_t *v)
{
	size_t len = sizeof(*v);

	return fi_getopt(&n->obj.ep->fid, FI_OPT_ENDPOINT, name, v, &len);
}

static inline int set_sz(struct node *n, int name, size_t v)
{
	return fi_setopt(&n->obj.ep->fid, FI_OPT_ENDPOINT, name, &v, sizeof(v));
}

/* ------------------------------------------------------------------ */
/* numbered messages */

/* Message @i: its number, then bytes of seed @i. */
static inline void msg_fill(uint8_t *p, size_t len, uint32_t i)
{
	memcpy(p, &i, sizeof(i));
	xp_fill(p + sizeof(i), len - sizeof(i), i);
}

/* The number of the message in @p, or -1 when its bytes are not right. */
static inline int64_t msg_check(const uint8_t *p, size_t len)
{
	uint32_t i;

	if (len < sizeof(i))
		return -1;
	memcpy(&i, p, sizeof(i));
	if (!xp_check(p + sizeof(i), len - sizeof(i), i))
		return -1;
	return i;
}

/* ------------------------------------------------------------------ */
/* the program */

typedef void (*rdm_case_fn)(void);

/*
 * The program @name: a private $KFAB_SHM_DIR, the shm backend, efa0's
 * knobs and the buffers, then @cases in order; skipped whole when
 * kfab_efa has no FI_EP_RDM on efa0. At the end no file may be left.
 */
static inline int rdm_main(const char *name, const rdm_case_fn *cases,
			   size_t ncases)
{
	const char *tmp = getenv("TMPDIR");
	struct fi_info *fi;
	char dir[256];
	int ret;

	tap_start(name);
	kfab_log_set(quiet);
	snprintf(dir, sizeof(dir), "%s/kfab-%s.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(dir))
		tap_skip_all("mkdtemp %s failed", dir);
	setenv("KFAB_SHM_DIR", dir, 1);
	/* the knobs are set through the shm device file, as root needs not */
	if (getenv("FI_KFAB_BACKEND") && strcmp(getenv("FI_KFAB_BACKEND"), "shm"))
		tap_diag("FI_KFAB_BACKEND=%s ignored: this test runs on the shm backend",
			 getenv("FI_KFAB_BACKEND"));
	setenv("FI_KFAB_BACKEND", "shm", 1);
	unsetenv("KFAB_SHM_EFA_RNR_INJECT_PPM");
	unsetenv("KFAB_SHM_EFA_REORDER_PPM");
	unsetenv("KFAB_SHM_EFA_RNR_RETRY");

	fi = get_info(false);
	if (!fi) {
		rmdir(dir);
		tap_skip_all("no kfab_efa FI_EP_RDM on efa0 (FI_PROVIDER_PATH)");
	}
	tap_diag("kfab_efa FI_EP_RDM on %s, fabric %s, tx size %zu, inject %zu",
		 fi->domain_attr->name, fi->fabric_attr->name,
		 fi->tx_attr->size, fi->tx_attr->inject_size);
	fi_freeinfo(fi);
	ret = kfab_efa_open(KFAB_BACKEND_SHM, 0, &knobs);
	if (ret) {
		rmdir(dir);
		tap_skip_all("cannot open efa0 of %s: %s", dir,
			     strerror(-ret));
	}
	sbuf = xp_anon(BUFSZ);
	rbuf = xp_anon(BUFSZ);
	lbuf = xp_anon(BUFSZ);
	if (!sbuf || !rbuf || !lbuf)
		tap_skip_all("out of memory");

	for (size_t i = 0; i < ncases; i++)
		cases[i]();

	kfab_efa_close(knobs);
	munmap(sbuf, BUFSZ);
	munmap(rbuf, BUFSZ);
	munmap(lbuf, BUFSZ);
	TAP_EQ(xp_files_under(dir), 0, "no files left in %s", dir);
	rmdir(dir);
	return tap_done();
}

#endif /* KFAB_ULIB_EFA_RDM_NODE_H */
