// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_test: what is EFA-specific in kfab_efa's FI_EP_RDM endpoint,
 * through the public libfabric API and fi_ext_kfab_efa.h, in one process
 * with two endpoints (each of its own fabric and domain on device efa0)
 * on the shm backend of a private $KFAB_SHM_DIR; the device's knobs are
 * set through libkfab's device layer (kfab_efa_set_knob()) and restored.
 * fi_msg_test covers the generic messaging, RMA and atomic matrix.
 *
 *   options      FI_OPT_EFA_RNR_RETRY, _EMULATED_*, _USE_DEVICE_RDMA
 *                (against FI_EFA_USE_DEVICE_RDMA and the device),
 *                _*_IN_ORDER_ALIGNED_128_BYTES, read-only ones
 *   protocols    eager, medium, longcts, runtread, longread chosen by
 *                size, FI_EFA_RUNT_SIZE and FI_EFA_USE_DEVICE_RDMA, as
 *                FI_OPT_KFAB_EFA_STATS counts them; device and emulated
 *                RMA; handshakes
 *   eagain       FI_EFA_TX_SIZE=8 against a receiver never progressed:
 *                -FI_EAGAIN, then every message once and in order
 *   rnr          injected receiver-not-ready with FI_OPT_EFA_RNR_RETRY 0:
 *                backoff within FI_EFA_TIMEOUT_INTERVAL..MAX_TIMEOUT
 *   reorder      a reordering device: in order; FI_EFA_RECVWIN_SIZE=1:
 *                FI_EOVERFLOW at both ends, nothing else lost
 *   query_mr     the domain ops
 *   refused      bad iovec counts, inject sizes, addresses, states,
 *                target counters
 *   auto         FI_PROGRESS_AUTO: fi_cq_sread() woken by a 1 MiB message;
 *                a packet the device holds back sent by the progress thread
 *   zcpy         FI_EFA_USE_ZCPY_RX: when it engages; messages written in
 *                place, receives posted again after other packets, too
 *                small and multi-iovec receives, a medium message, RNR
 *                with no receive posted, fi_cancel
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_test
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "dev/efa_dev.h"
#include "efa/fi_ext_kfab_efa.h"
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
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	uint8_t name[NAMELEN];
	size_t namelen;
	struct comp *q;			/* completions read, not taken */
	size_t qh, qt;
};

static struct kfab_efa_dev *knobs;	/* efa0 through libkfab */
/* applied to the fi_info of the endpoints node_open() makes, when set */
static void (*info_hook)(struct fi_info *info);
/* applied to the hints they come from, when set */
static void (*hints_hook)(struct fi_info *hints);
static uint8_t *sbuf, *rbuf, *lbuf;	/* BUFSZ each */

static void quiet(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_WARN)
		tap_diag("libkfab: %s", msg);
}

static int set_knob(enum kfab_efa_knob knob, uint32_t v)
{
	int ret = kfab_efa_set_knob(knobs, knob, v);

	if (ret)
		tap_diag("kfab_efa_set_knob(%s, %u): %s",
			 kfab_efa_knob_name(knob), v, strerror(-ret));
	return ret;
}

/* ------------------------------------------------------------------ */
/* endpoints */

static struct fi_info *get_info(bool auto_progress)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL, *pick = NULL;

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	h->domain_attr->name = strdup("efa0-rdm");
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
		    !strcmp(p->domain_attr->name, "efa0-rdm")) {
			pick = fi_dupinfo(p);
			break;
		}
	}
	fi_freeinfo(fi);
	return pick;
}

/* fi_close() of each object: false when one refused */
static bool node_close(struct node *n)
{
	struct fid *fids[] = {
		n->ep ? &n->ep->fid : NULL,
		n->cq ? &n->cq->fid : NULL,
		n->av ? &n->av->fid : NULL,
		n->domain ? &n->domain->fid : NULL,
		n->fabric ? &n->fabric->fid : NULL,
	};
	bool ok = true;

	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		int ret = fids[i] ? fi_close(fids[i]) : 0;

		if (ret) {
			tap_diag("fi_close of object %zu (ep, cq, av, domain, fabric): %s",
				 i, fi_strerror(-ret));
			ok = false;
		}
	}
	fi_freeinfo(n->info);
	free(n->q);
	memset(n, 0, sizeof(*n));
	return ok;
}

/*
 * Fabric, domain (FI_EFA_* are read now), AV, CQ and an endpoint bound to
 * them, not enabled: 0 or the failing call's -FI_E*.
 */
static int node_open(struct node *n, bool auto_progress, bool wait_fd)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_DATA,
		.wait_obj = wait_fd ? FI_WAIT_FD : FI_WAIT_NONE,
	};
	int ret;

	memset(n, 0, sizeof(*n));
	n->q = calloc(QMAX, sizeof(*n->q));
	n->info = get_info(auto_progress);
	if (!n->q || !n->info)
		return -FI_ENODATA;
	if (info_hook)
		info_hook(n->info);
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	if (!ret)
		ret = fi_domain(n->fabric, n->info, &n->domain, NULL);
	if (!ret)
		ret = fi_av_open(n->domain, &av_attr, &n->av, NULL);
	if (!ret)
		ret = fi_cq_open(n->domain, &cq_attr, &n->cq, NULL);
	if (!ret)
		ret = fi_endpoint(n->domain, n->info, &n->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		tap_diag("node_open: %s", fi_strerror(-ret));
	return ret;
}

static int node_enable(struct node *n)
{
	int ret = fi_enable(n->ep);

	n->namelen = sizeof(n->name);
	if (!ret)
		ret = fi_getname(&n->ep->fid, n->name, &n->namelen);
	return ret;
}

/* Each in the other's AV. */
static int connect2(struct node *a, struct node *b)
{
	if (fi_av_insert(a->av, b->name, 1, &a->peer, 0, NULL) != 1 ||
	    fi_av_insert(b->av, a->name, 1, &b->peer, 0, NULL) != 1)
		return -1;
	return 0;
}

/* Two enabled endpoints that know each other; env is read by both. */
static int pair_open(struct node *a, struct node *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	if (node_open(a, false, false) || node_open(b, false, false) ||
	    node_enable(a) || node_enable(b) || connect2(a, b))
		return -1;
	return 0;
}

static int stats(struct node *n, struct fi_kfab_efa_ep_stats *st)
{
	size_t len = sizeof(*st);

	memset(st, 0, sizeof(*st));
	return fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
			 st, &len);
}

/* ------------------------------------------------------------------ */
/* completions */

static void stash(struct node *n, const struct comp *c)
{
	n->q[n->qt++ % QMAX] = *c;
}

/* Reads what @n's CQ has (progressing its endpoint) into its stash. */
static void pump(struct node *n)
{
	struct fi_cq_data_entry e[16];
	struct comp c;
	ssize_t r;

	for (;;) {
		if (n->qt - n->qh > QMAX - 16)
			return;
		r = fi_cq_read(n->cq, e, 16);
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
			if (fi_cq_readerr(n->cq, &ee, 0) != 1)
				return;
			memset(&c, 0, sizeof(c));
			c.ctx = ee.op_context;
			c.flags = ee.flags;
			c.len = ee.len;
			c.err = ee.err ? ee.err : -1;
			s = fi_cq_strerror(n->cq, ee.prov_errno, ee.err_data,
					   buf, sizeof(buf));
			snprintf(c.why, sizeof(c.why), "%s | %s",
				 ee.err_data ? (const char *)ee.err_data : "",
				 s ? s : "");
			stash(n, &c);
			continue;
		}
		return;
	}
}

static bool take(struct node *n, struct comp *c)
{
	if (n->qh == n->qt)
		return false;
	*c = n->q[n->qh++ % QMAX];
	return true;
}

/* The next completion of @n, progressing @other too: 0 or -ETIMEDOUT. */
static int wait_one(struct node *n, struct node *other, struct comp *c)
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
static bool expect(struct node *n, struct node *other, void *ctx,
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
static bool xfer(struct node *a, struct node *b, size_t len, uint32_t seed)
{
	int sctx, rctx;
	ssize_t ret;

	xp_fill(sbuf, len, seed);
	memset(rbuf, 0, len + 64);
	ret = fi_recv(b->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, &rctx);
	if (ret) {
		tap_diag("fi_recv: %s", fi_strerror((int)-ret));
		return false;
	}
	ret = fi_send(a->ep, sbuf, len, NULL, a->peer, &sctx);
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
/* 1. options */

static int getb(struct node *n, int name, bool *b)
{
	size_t len = sizeof(*b);

	return fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, name, b, &len);
}

static int setb(struct node *n, int name, bool b)
{
	return fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, name, &b, sizeof(b));
}

static int get_sz(struct node *n, int name, size_t *v)
{
	size_t len = sizeof(*v);

	return fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, name, v, &len);
}

static int set_sz(struct node *n, int name, size_t v)
{
	return fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, name, &v, sizeof(v));
}

static void case_options(void)
{
	struct kfab_efa_status st;
	struct fi_kfab_efa_ep_stats es;
	struct node n = { 0 };
	size_t v = 99;
	bool b;
	int ret;

	tap_diag("---- options");
	if (!TAP_EQ(kfab_efa_get_status(knobs, &st), 0, "efa0's knobs read"))
		return;
	if (!TAP_EQ(node_open(&n, false, false), 0, "endpoint opened")) {
		node_close(&n);
		return;
	}
	TAP_EQ(get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v), 0,
	       "getopt FI_OPT_EFA_RNR_RETRY before fi_enable");
	TAP_EQ(v, st.rnr_retry,
	       "FI_OPT_EFA_RNR_RETRY defaults to the device's rnr_retry (%u) before fi_enable",
	       st.rnr_retry);
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 3), 0,
	       "setopt FI_OPT_EFA_RNR_RETRY 3 before fi_enable");
	v = 99;
	get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
	TAP_EQ(v, 3, "getopt FI_OPT_EFA_RNR_RETRY gives 3");
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 8), -FI_EINVAL,
	       "setopt FI_OPT_EFA_RNR_RETRY 8: -FI_EINVAL");
	b = false;
	TAP_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_RNR_RETRY,
			 &b, sizeof(b)) < 0,
	       "setopt FI_OPT_EFA_RNR_RETRY of a bool's size: refused");
	TAP_EQ(node_enable(&n), 0, "fi_enable");
	v = 99;
	get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
	TAP_EQ(v, 3, "FI_OPT_EFA_RNR_RETRY 3 kept over fi_enable");
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 2), -FI_EINVAL,
	       "setopt FI_OPT_EFA_RNR_RETRY after fi_enable: -FI_EINVAL");
	TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), -FI_EINVAL,
	       "setopt FI_OPT_EFA_USE_DEVICE_RDMA after fi_enable: -FI_EINVAL");

	b = true;
	TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_READ, &b) && !b,
	       "FI_OPT_EFA_EMULATED_READ false (device RDMA on)");
	b = true;
	TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_WRITE, &b) && !b,
	       "FI_OPT_EFA_EMULATED_WRITE false (device RDMA on)");
	b = false;
	TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_ATOMICS, &b) && b,
	       "FI_OPT_EFA_EMULATED_ATOMICS true");
	b = false;
	TAP_OK(!getb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, &b) && b,
	       "FI_OPT_EFA_USE_DEVICE_RDMA reads true");

	TAP_EQ(setb(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, true),
	       -FI_EOPNOTSUPP,
	       "setopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES true: -FI_EOPNOTSUPP");
	TAP_EQ(setb(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, true),
	       -FI_EOPNOTSUPP,
	       "setopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES true: -FI_EOPNOTSUPP");
	TAP_EQ(setb(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, false),
	       0, "setopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES false");
	TAP_EQ(setb(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, false),
	       0, "setopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES false");
	b = true;
	TAP_OK(!getb(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, &b) &&
	       !b, "getopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES false");
	b = true;
	TAP_OK(!getb(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, &b) &&
	       !b, "getopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES false");

	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_READ, true) < 0,
	       "setopt FI_OPT_EFA_EMULATED_READ (read-only): refused");
	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_WRITE, true) < 0,
	       "setopt FI_OPT_EFA_EMULATED_WRITE (read-only): refused");
	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_ATOMICS, false) < 0,
	       "setopt FI_OPT_EFA_EMULATED_ATOMICS (read-only): refused");
	memset(&es, 0, sizeof(es));
	TAP_OK(fi_setopt(&n.ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
			 &es, sizeof(es)) < 0,
	       "setopt FI_OPT_KFAB_EFA_STATS (read-only): refused");
	v = 4;
	TAP_EQ(fi_getopt(&n.ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
			 &es, &v), -FI_ETOOSMALL,
	       "getopt FI_OPT_KFAB_EFA_STATS into 4 bytes: -FI_ETOOSMALL");
	node_close(&n);

	/* a fresh endpoint takes the device's rnr_retry at fi_enable */
	if (!node_open(&n, false, false) && !node_enable(&n)) {
		v = 99;
		get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
		TAP_EQ(v, st.rnr_retry,
		       "FI_OPT_EFA_RNR_RETRY after fi_enable, not set: the device's %u",
		       st.rnr_retry);
	} else {
		TAP_OK(0, "second endpoint opened");
	}
	node_close(&n);

	/* FI_EFA_USE_DEVICE_RDMA=0: everything emulated */
	setenv("FI_EFA_USE_DEVICE_RDMA", "0", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (TAP_EQ(ret, 0, "endpoint with FI_EFA_USE_DEVICE_RDMA=0")) {
		b = false;
		TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_READ, &b) && b,
		       "FI_EFA_USE_DEVICE_RDMA=0: FI_OPT_EFA_EMULATED_READ true");
		b = false;
		TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_WRITE, &b) && b,
		       "FI_EFA_USE_DEVICE_RDMA=0: FI_OPT_EFA_EMULATED_WRITE true");
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, true), -FI_EINVAL,
		       "FI_EFA_USE_DEVICE_RDMA=0, setopt FI_OPT_EFA_USE_DEVICE_RDMA true: -FI_EINVAL (env wins)");
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), 0,
		       "FI_EFA_USE_DEVICE_RDMA=0, setopt FI_OPT_EFA_USE_DEVICE_RDMA false: 0");
	}
	node_close(&n);

	/* FI_EFA_USE_DEVICE_RDMA=1: the option may not turn it off */
	setenv("FI_EFA_USE_DEVICE_RDMA", "1", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (TAP_EQ(ret, 0, "endpoint with FI_EFA_USE_DEVICE_RDMA=1"))
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), -FI_EINVAL,
		       "FI_EFA_USE_DEVICE_RDMA=1, setopt FI_OPT_EFA_USE_DEVICE_RDMA false: -FI_EINVAL (env wins)");
	node_close(&n);

	/* a device without RDMA */
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_DEVICE_RDMA, 0), 0,
		    "efa0 device_rdma 0"))
		return;
	ret = node_open(&n, false, false);
	if (TAP_EQ(ret, 0, "endpoint on a device without RDMA")) {
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, true),
		       -FI_EOPNOTSUPP,
		       "device_rdma 0: setopt FI_OPT_EFA_USE_DEVICE_RDMA true: -FI_EOPNOTSUPP");
		b = false;
		TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_READ, &b) && b,
		       "device_rdma 0: FI_OPT_EFA_EMULATED_READ true");
		b = false;
		TAP_OK(!getb(&n, FI_OPT_EFA_EMULATED_WRITE, &b) && b,
		       "device_rdma 0: FI_OPT_EFA_EMULATED_WRITE true");
	}
	node_close(&n);
	setenv("FI_EFA_USE_DEVICE_RDMA", "1", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	TAP_EQ(ret, -FI_EOPNOTSUPP,
	       "device_rdma 0 with FI_EFA_USE_DEVICE_RDMA=1: fi_endpoint -FI_EOPNOTSUPP");
	node_close(&n);
	TAP_EQ(set_knob(KFAB_EFA_KNOB_DEVICE_RDMA, KFAB_EFA_RDMA_CAP_READ |
			KFAB_EFA_RDMA_CAP_WRITE), 0,
	       "efa0 device_rdma restored");
}

/* ------------------------------------------------------------------ */
/* 2. protocols */

#define D(f)	(after.f - before.f)

/* The protocol counters moved by one, in @which alone. */
static bool proto_one(const struct fi_kfab_efa_ep_stats *b,
		      const struct fi_kfab_efa_ep_stats *a, int which)
{
	uint64_t d[5] = {
		a->eager_msgs - b->eager_msgs,
		a->medium_msgs - b->medium_msgs,
		a->longcts_msgs - b->longcts_msgs,
		a->longread_msgs - b->longread_msgs,
		a->runtread_msgs - b->runtread_msgs,
	};

	for (int i = 0; i < 5; i++) {
		if (d[i] != (i == which ? 1U : 0U)) {
			tap_diag("protocol deltas: eager %llu medium %llu longcts %llu longread %llu runtread %llu",
				 (unsigned long long)d[0],
				 (unsigned long long)d[1],
				 (unsigned long long)d[2],
				 (unsigned long long)d[3],
				 (unsigned long long)d[4]);
			return false;
		}
	}
	return true;
}

enum { P_EAGER, P_MEDIUM, P_LONGCTS, P_LONGREAD, P_RUNTREAD };
static const char *const pname[] = {
	"eager", "medium", "longcts", "longread", "runtread",
};

static void proto(struct node *a, struct node *b, size_t len, int which,
		  const char *cfg)
{
	struct fi_kfab_efa_ep_stats before, after;
	bool ok;

	stats(a, &before);
	ok = xfer(a, b, len, (uint32_t)len);
	stats(a, &after);
	TAP_OK(ok, "%s: %zu bytes arrive byte-exact", cfg, len);
	TAP_OK(proto_one(&before, &after, which), "%s: %zu bytes go %s", cfg,
	       len, pname[which]);
}

/* One exchange each way: both handshakes done. */
static bool handshake(struct node *a, struct node *b, const char *cfg)
{
	struct fi_kfab_efa_ep_stats sa, sb;
	bool ok = xfer(a, b, 100, 1) && xfer(b, a, 100, 2);

	TAP_OK(ok, "%s: first exchange both ways", cfg);
	stats(a, &sa);
	stats(b, &sb);
	TAP_OK(sa.handshakes_sent >= 1 && sa.handshakes_received >= 1 &&
	       sb.handshakes_sent >= 1 && sb.handshakes_received >= 1,
	       "%s: handshakes sent and received at both ends (%llu/%llu, %llu/%llu)",
	       cfg, (unsigned long long)sa.handshakes_sent,
	       (unsigned long long)sa.handshakes_received,
	       (unsigned long long)sb.handshakes_sent,
	       (unsigned long long)sb.handshakes_received);
	return ok;
}

struct rma_target {
	struct fid_mr *mr;
	uint64_t key;
};

static int target_reg(struct node *b, struct rma_target *t)
{
	int ret = fi_mr_reg(b->domain, rbuf, BIG, FI_REMOTE_READ |
			    FI_REMOTE_WRITE, 0, 0, 0, &t->mr, NULL);

	if (ret) {
		t->mr = NULL;
		return ret;
	}
	t->key = fi_mr_key(t->mr);
	return 0;
}

/* fi_read of @len bytes of b's rbuf at @off into lbuf. */
static bool rma_read(struct node *a, struct node *b, struct rma_target *t,
		     size_t len, size_t off, uint32_t seed)
{
	int ctx;
	ssize_t ret;

	xp_fill(rbuf + off, len, seed);
	memset(lbuf, 0, len);
	ret = fi_read(a->ep, lbuf, len, NULL, a->peer,
		      (uint64_t)(uintptr_t)(rbuf + off), t->key, &ctx);
	if (ret) {
		tap_diag("fi_read: %s", fi_strerror((int)-ret));
		return false;
	}
	return expect(a, b, &ctx, "read") && xp_check(lbuf, len, seed);
}

/* fi_write(data) of @len bytes of lbuf into b's rbuf at @off. */
static bool rma_write(struct node *a, struct node *b, struct rma_target *t,
		      size_t len, size_t off, uint32_t seed, bool data)
{
	struct comp c;
	int ctx;
	ssize_t ret;

	xp_fill(lbuf, len, seed);
	memset(rbuf + off, 0, len);
	if (data)
		ret = fi_writedata(a->ep, lbuf, len, NULL, 0xfeed, a->peer,
				   (uint64_t)(uintptr_t)(rbuf + off), t->key,
				   &ctx);
	else
		ret = fi_write(a->ep, lbuf, len, NULL, a->peer,
			       (uint64_t)(uintptr_t)(rbuf + off), t->key,
			       &ctx);
	if (ret) {
		tap_diag("fi_write: %s", fi_strerror((int)-ret));
		return false;
	}
	if (!expect(a, b, &ctx, "write"))
		return false;
	if (data) {
		if (wait_one(b, a, &c) || c.err || c.data != 0xfeed ||
		    !(c.flags & FI_REMOTE_CQ_DATA)) {
			tap_diag("writedata: no target completion with the data");
			return false;
		}
	}
	return xp_check(rbuf + off, len, seed);
}

static void case_protocols(void)
{
	struct fi_kfab_efa_ep_stats before, after;
	struct rma_target t = { 0 };
	struct node a = { 0 }, b = { 0 };
	const char *cfg = "defaults";
	bool ok;

	tap_diag("---- protocols (defaults)");
	if (!TAP_EQ(pair_open(&a, &b), 0, "%s: two endpoints", cfg))
		goto out;
	if (!handshake(&a, &b, cfg))
		goto out;
	proto(&a, &b, 100, P_EAGER, cfg);
	proto(&a, &b, 8192, P_EAGER, cfg);
	proto(&a, &b, 20000, P_MEDIUM, cfg);
	proto(&a, &b, 65536, P_MEDIUM, cfg);
	proto(&a, &b, 200000, P_LONGCTS, cfg);
	proto(&a, &b, (1UL << 20) - 1, P_LONGCTS, cfg);
	proto(&a, &b, BIG, P_RUNTREAD, cfg);
	proto(&a, &b, 300000 + 1, P_LONGCTS, cfg);

	if (!TAP_EQ(target_reg(&b, &t), 0, "%s: target region", cfg))
		goto out;
	stats(&a, &before);
	ok = rma_read(&a, &b, &t, 4096, 100, 11);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_read 4 KiB byte-exact", cfg);
	TAP_OK(D(device_reads) == 1 && !D(emulated_reads),
	       "%s: fi_read 4 KiB by device RDMA (device %llu, emulated %llu)",
	       cfg, (unsigned long long)D(device_reads),
	       (unsigned long long)D(emulated_reads));

	stats(&a, &before);
	ok = rma_write(&a, &b, &t, 128 << 10, 0, 12, false);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_write 128 KiB byte-exact", cfg);
	TAP_OK(D(device_writes) == 1 && !D(emulated_writes),
	       "%s: fi_write 128 KiB by device RDMA (device %llu, emulated %llu)",
	       cfg, (unsigned long long)D(device_writes),
	       (unsigned long long)D(emulated_writes));

	stats(&a, &before);
	ok = rma_write(&a, &b, &t, 1024, 7, 13, false);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_write 1 KiB byte-exact", cfg);
	TAP_OK(D(emulated_writes) == 1 && !D(device_writes),
	       "%s: fi_write 1 KiB (below FI_EFA_INTER_MIN_READ_WRITE_SIZE) emulated (device %llu, emulated %llu)",
	       cfg, (unsigned long long)D(device_writes),
	       (unsigned long long)D(emulated_writes));

	stats(&a, &before);
	ok = rma_write(&a, &b, &t, 128 << 10, 64, 14, true);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_writedata 128 KiB byte-exact, the target's completion carries the data",
	       cfg);
	TAP_OK(D(emulated_writes) == 1 && !D(device_writes),
	       "%s: fi_writedata emulated (device %llu, emulated %llu)",
	       cfg, (unsigned long long)D(device_writes),
	       (unsigned long long)D(emulated_writes));
out:
	if (t.mr)
		fi_close(&t.mr->fid);
	node_close(&a);
	node_close(&b);

	cfg = "FI_EFA_RUNT_SIZE=0";
	tap_diag("---- protocols (%s)", cfg);
	setenv("FI_EFA_RUNT_SIZE", "0", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_RUNT_SIZE");
	if (TAP_OK(ok, "%s: two endpoints", cfg) && handshake(&a, &b, cfg)) {
		proto(&a, &b, BIG, P_LONGREAD, cfg);
		proto(&a, &b, 1UL << 20, P_LONGREAD, cfg);
		proto(&a, &b, 20000, P_MEDIUM, cfg);
	}
	node_close(&a);
	node_close(&b);

	cfg = "FI_EFA_USE_DEVICE_RDMA=0";
	tap_diag("---- protocols (%s)", cfg);
	memset(&t, 0, sizeof(t));
	setenv("FI_EFA_USE_DEVICE_RDMA", "0", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (!TAP_OK(ok, "%s: two endpoints", cfg) || !handshake(&a, &b, cfg))
		goto out2;
	proto(&a, &b, BIG, P_LONGCTS, cfg);
	if (!TAP_EQ(target_reg(&b, &t), 0, "%s: target region", cfg))
		goto out2;
	stats(&a, &before);
	ok = rma_read(&a, &b, &t, 4096, 100, 21);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_read 4 KiB byte-exact", cfg);
	TAP_OK(D(emulated_reads) == 1 && !D(device_reads),
	       "%s: fi_read 4 KiB emulated (device %llu, emulated %llu)", cfg,
	       (unsigned long long)D(device_reads),
	       (unsigned long long)D(emulated_reads));
	stats(&a, &before);
	ok = rma_read(&a, &b, &t, 300000, 0, 22);
	stats(&a, &after);
	TAP_OK(ok && D(emulated_reads) == 1 && !D(device_reads),
	       "%s: fi_read 300000 bytes emulated, byte-exact", cfg);
	stats(&a, &before);
	ok = rma_write(&a, &b, &t, 128 << 10, 0, 23, false);
	stats(&a, &after);
	TAP_OK(ok, "%s: fi_write 128 KiB byte-exact", cfg);
	TAP_OK(D(emulated_writes) == 1 && !D(device_writes),
	       "%s: fi_write 128 KiB emulated (device %llu, emulated %llu)",
	       cfg, (unsigned long long)D(device_writes),
	       (unsigned long long)D(emulated_writes));
out2:
	if (t.mr)
		fi_close(&t.mr->fid);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* streams of numbered messages */

/* Message @i: its number, then bytes of seed @i. */
static void msg_fill(uint8_t *p, size_t len, uint32_t i)
{
	memcpy(p, &i, sizeof(i));
	xp_fill(p + sizeof(i), len - sizeof(i), i);
}

/* The number of the message in @p, or -1 when its bytes are not right. */
static int64_t msg_check(const uint8_t *p, size_t len)
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
/* 3. -FI_EAGAIN */

#define EAGAIN_MAX	10000
#define EAGAIN_LEN	1024
#define RSLOTS		64

static void case_eagain(void)
{
	struct fi_kfab_efa_ep_stats sa;
	uint8_t *bufs = NULL, *rb = NULL;
	struct node a = { 0 }, b = { 0 };
	uint32_t nsent = 0, nsdone = 0, nrecv = 0, nposted = 0, next = 0;
	bool rfree[RSLOTS], order = true, data = true, serr = false;
	uint32_t when = 0;
	uint64_t end;
	ssize_t ret = 0;
	struct comp c;
	bool ok;

	tap_diag("---- -FI_EAGAIN (FI_EFA_TX_SIZE=8, receiver not progressed)");
	setenv("FI_EFA_TX_SIZE", "8", 1);
	ok = !pair_open(&a, &b);
	unsetenv("FI_EFA_TX_SIZE");
	if (!TAP_OK(ok, "two endpoints with FI_EFA_TX_SIZE=8"))
		goto out;
	TAP_EQ(a.info->tx_attr->size, 8, "tx_attr->size is FI_EFA_TX_SIZE");
	bufs = malloc((size_t)EAGAIN_MAX * EAGAIN_LEN);
	rb = malloc((size_t)RSLOTS * EAGAIN_LEN);
	if (!TAP_OK(bufs && rb, "buffers"))
		goto out;
	for (; nsent < EAGAIN_MAX; nsent++) {
		uint8_t *p = bufs + (size_t)nsent * EAGAIN_LEN;

		msg_fill(p, EAGAIN_LEN, nsent);
		ret = fi_send(a.ep, p, EAGAIN_LEN, NULL, a.peer,
			      (void *)(uintptr_t)(nsent + 1));
		if (ret)
			break;
		pump(&a);
	}
	when = nsent;
	TAP_EQ(ret, -FI_EAGAIN, "fi_send gives -FI_EAGAIN within %d sends",
	       EAGAIN_MAX);
	tap_diag("-FI_EAGAIN at send %u", when);
	stats(&a, &sa);
	TAP_OK(sa.eagain > 0, "stats: eagain %llu",
	       (unsigned long long)sa.eagain);

	/* now the receiver takes them, in order */
	for (int i = 0; i < RSLOTS; i++)
		rfree[i] = true;
	end = xp_ms() + TIMEOUT_MS;
	while ((nrecv < nsent || nsdone < nsent) && xp_ms() < end) {
		for (int i = 0; i < RSLOTS && nposted < nsent; i++) {
			if (!rfree[i])
				continue;
			if (fi_recv(b.ep, rb + (size_t)i * EAGAIN_LEN,
				    EAGAIN_LEN, NULL, FI_ADDR_UNSPEC,
				    (void *)(uintptr_t)(i + 1)))
				break;
			rfree[i] = false;
			nposted++;
		}
		pump(&a);
		pump(&b);
		while (take(&a, &c)) {
			if (c.err)
				serr = true;
			nsdone++;
		}
		while (take(&b, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			int64_t seq;

			if (c.err || slot >= RSLOTS) {
				tap_diag("receive error %d %s", c.err, c.why);
				data = false;
				nrecv++;
				continue;
			}
			seq = msg_check(rb + slot * EAGAIN_LEN, c.len);
			if (seq < 0 || c.len != EAGAIN_LEN)
				data = false;
			else if ((uint32_t)seq != next)
				order = false;
			next = (uint32_t)seq + 1;
			rfree[slot] = true;
			nrecv++;
		}
	}
	TAP_EQ(nrecv, nsent, "every message sent arrives (%u)", nsent);
	TAP_OK(data, "each byte-exact");
	TAP_OK(order, "in order (FI_ORDER_SAS)");
	TAP_EQ(nsdone, nsent, "every send completes");
	TAP_OK(!serr, "no send fails");
	pump(&b);
	TAP_OK(!take(&b, &c), "nothing arrives twice");
out:
	free(bufs);
	free(rb);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* a stream of numbered messages a->b, a window of each in flight */

#define WIN		16
#define SLOT		(256UL << 10)

struct stream {
	uint32_t count;
	size_t (*size)(uint32_t i);
	uint64_t flags;			/* fi_sendmsg's */
	/* results */
	uint32_t recvd, rerr, sdone, serr;
	bool data, order;
	uint8_t *lost;			/* by number: the send failed */
	uint8_t *got;			/* by number: arrived */
	int64_t *by_post;		/* by receive posted: the number in it */
	uint32_t rerr_overflow;		/* receive errors FI_EOVERFLOW naming
					 * FI_EFA_RECVWIN_SIZE */
	uint32_t serr_overflow;
	bool timeout;
};

static int stream_run(struct node *a, struct node *b, struct stream *s)
{
	void *sslot_msg[WIN];
	uint32_t rpost[WIN];
	bool rfree[WIN];
	uint32_t nsent = 0, nposted = 0;
	int64_t last = -1;
	uint64_t end = xp_ms() + 3 * TIMEOUT_MS;
	struct comp c;

	s->data = s->order = true;
	s->lost = calloc(s->count, 1);
	s->got = calloc(s->count, 1);
	s->by_post = malloc(s->count * sizeof(*s->by_post));
	if (!s->lost || !s->got || !s->by_post)
		return -1;
	for (uint32_t i = 0; i < s->count; i++)
		s->by_post[i] = -1;
	for (int i = 0; i < WIN; i++) {
		sslot_msg[i] = NULL;
		rfree[i] = true;
	}
	while (s->sdone < s->count || s->recvd + s->rerr < s->count) {
		if (xp_ms() > end) {
			s->timeout = true;
			tap_diag("stream: sent %u, done %u (%u failed), received %u, %u receive errors",
				 nsent, s->sdone, s->serr, s->recvd, s->rerr);
			return -1;
		}
		for (int i = 0; i < WIN && nposted < s->count; i++) {
			if (!rfree[i])
				continue;
			if (fi_recv(b->ep, rbuf + i * SLOT, SLOT, NULL,
				    FI_ADDR_UNSPEC, (void *)(uintptr_t)(i + 1)))
				break;
			rfree[i] = false;
			rpost[i] = nposted++;
		}
		for (int i = 0; i < WIN && nsent < s->count; i++) {
			uint8_t *p = sbuf + i * SLOT;
			size_t len = s->size(nsent);
			struct iovec iov = { p, len };
			struct fi_msg m = {
				.msg_iov = &iov,
				.iov_count = 1,
				.addr = a->peer,
				.context = (void *)(uintptr_t)(i + 1),
			};
			ssize_t ret;

			if (sslot_msg[i])
				continue;
			msg_fill(p, len, nsent);
			ret = fi_sendmsg(a->ep, &m, s->flags);
			if (ret == -FI_EAGAIN)
				break;
			if (ret) {
				tap_diag("fi_sendmsg: %s",
					 fi_strerror((int)-ret));
				return -1;
			}
			sslot_msg[i] = (void *)(uintptr_t)(nsent + 1);
			nsent++;
		}
		pump(a);
		pump(b);
		while (take(a, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			uint32_t num;

			if (slot >= WIN || !sslot_msg[slot]) {
				tap_diag("send completion of context %p",
					 c.ctx);
				return -1;
			}
			num = (uint32_t)((uintptr_t)sslot_msg[slot] - 1);
			sslot_msg[slot] = NULL;
			s->sdone++;
			if (c.err) {
				s->serr++;
				s->lost[num] = 1;
				if (c.err == FI_EOVERFLOW &&
				    strstr(c.why, "FI_EFA_RECVWIN_SIZE"))
					s->serr_overflow++;
				else
					tap_diag("send %u failed: %d %s", num,
						 c.err, c.why);
			}
		}
		while (take(b, &c)) {
			uintptr_t slot = (uintptr_t)c.ctx - 1;
			int64_t seq;

			if (c.err) {
				s->rerr++;
				if (c.err == FI_EOVERFLOW && !c.ctx &&
				    strstr(c.why, "FI_EFA_RECVWIN_SIZE"))
					s->rerr_overflow++;
				else
					tap_diag("receive error %d (%s) ctx %p",
						 c.err, c.why, c.ctx);
				if (slot < WIN)
					rfree[slot] = true;
				continue;
			}
			if (slot >= WIN) {
				tap_diag("receive completion of context %p",
					 c.ctx);
				return -1;
			}
			seq = msg_check(rbuf + slot * SLOT, c.len);
			rfree[slot] = true;
			s->recvd++;
			if (seq < 0 || seq >= s->count ||
			    c.len != s->size((uint32_t)seq)) {
				s->data = false;
				continue;
			}
			if (s->got[seq])
				s->order = false;
			s->got[seq] = 1;
			s->by_post[rpost[slot]] = seq;
		}
	}
	/*
	 * FI_ORDER_SAS: the receives take the messages in the order sent
	 * (completions need not come in that order: a medium message
	 * completes after the eager one behind it).
	 */
	for (uint32_t i = 0; i < s->recvd; i++) {
		if (s->by_post[i] <= last) {
			tap_diag("receive %u posted took message %lld after message %lld",
				 i, (long long)s->by_post[i], (long long)last);
			s->order = false;
			break;
		}
		last = s->by_post[i];
	}
	return 0;
}

static void stream_free(struct stream *s)
{
	free(s->lost);
	free(s->got);
	free(s->by_post);
}

/* Every message arrived, or failed at the sender: not both, not neither. */
static bool stream_accounted(const struct stream *s)
{
	for (uint32_t i = 0; i < s->count; i++) {
		if (s->got[i] == s->lost[i]) {
			tap_diag("message %u: arrived %u, send failed %u", i,
				 s->got[i], s->lost[i]);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* 4. RNR backoff */

static size_t rnr_size(uint32_t i)
{
	static const size_t base[] = { 100, 20000, 200000, 4000, 60000 };

	return base[i % 5] + i % 97;
}

static void case_rnr(void)
{
	struct fi_kfab_efa_ep_stats sa, sb;
	struct stream s = { .count = 500, .size = rnr_size };
	struct node a = { 0 }, b = { 0 };
	uint64_t t0;
	bool ok;

	tap_diag("---- RNR backoff (rnr_inject_ppm 300000, FI_OPT_EFA_RNR_RETRY 0)");
	setenv("FI_EFA_TIMEOUT_INTERVAL", "100", 1);
	setenv("FI_EFA_MAX_TIMEOUT", "2000", 1);
	ok = !node_open(&a, false, false) && !node_open(&b, false, false);
	unsetenv("FI_EFA_TIMEOUT_INTERVAL");
	unsetenv("FI_EFA_MAX_TIMEOUT");
	if (!TAP_OK(ok, "two endpoints with FI_EFA_TIMEOUT_INTERVAL=100, FI_EFA_MAX_TIMEOUT=2000"))
		goto out;
	TAP_EQ(set_sz(&a, FI_OPT_EFA_RNR_RETRY, 0), 0,
	       "sender: FI_OPT_EFA_RNR_RETRY 0");
	TAP_EQ(set_sz(&b, FI_OPT_EFA_RNR_RETRY, 7), 0,
	       "receiver: FI_OPT_EFA_RNR_RETRY 7 (forever)");
	if (!TAP_OK(!node_enable(&a) && !node_enable(&b) && !connect2(&a, &b),
		    "enabled, connected"))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_RNR_INJECT_PPM, 300000), 0,
		    "efa0 rnr_inject_ppm 300000"))
		goto out;
	t0 = xp_ms();
	ok = !stream_run(&a, &b, &s);
	tap_diag("500 messages in %llu ms",
		 (unsigned long long)(xp_ms() - t0));
	TAP_EQ(set_knob(KFAB_EFA_KNOB_RNR_INJECT_PPM, 0), 0,
	       "efa0 rnr_inject_ppm restored");
	TAP_OK(ok, "500 messages of mixed sizes (eager, medium, longcts) under RNR");
	TAP_EQ(s.recvd, 500, "every message arrives");
	TAP_OK(s.data, "byte-exact");
	TAP_OK(s.order, "in order, once");
	TAP_EQ(s.serr + s.rerr, 0, "no errors");
	stats(&a, &sa);
	stats(&b, &sb);
	tap_diag("sender: rnr_events %llu, backoff max %llu us, rnr_retries %llu, pkts_queued %llu; receiver: rnr_events %llu, rnr_retries %llu, pkts_queued %llu",
		 (unsigned long long)sa.rnr_events,
		 (unsigned long long)sa.rnr_backoff_max_usec,
		 (unsigned long long)sa.rnr_retries,
		 (unsigned long long)sa.pkts_queued,
		 (unsigned long long)sb.rnr_events,
		 (unsigned long long)sb.rnr_retries,
		 (unsigned long long)sb.pkts_queued);
	TAP_OK(sa.rnr_events > 0, "sender: rnr_events %llu",
	       (unsigned long long)sa.rnr_events);
	TAP_OK(sa.rnr_backoff_max_usec >= 100 &&
	       sa.rnr_backoff_max_usec <= 2000,
	       "sender: longest backoff %llu us within FI_EFA_TIMEOUT_INTERVAL..FI_EFA_MAX_TIMEOUT",
	       (unsigned long long)sa.rnr_backoff_max_usec);
	TAP_EQ(sa.rnr_retries, 0,
	       "sender: no device retries with FI_OPT_EFA_RNR_RETRY 0");
	TAP_EQ(sb.rnr_events, 0,
	       "receiver (rnr_retry 7): never backs off");
	TAP_OK(sa.pkts_queued + sb.pkts_queued + sb.rnr_retries > 0,
	       "refused packets queued or retried");
out:
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* 5. reordering, the reorder window */

static size_t small_size(uint32_t i)
{
	return 64 + (i * 131) % 4033;
}

static void case_reorder(void)
{
	struct fi_kfab_efa_ep_stats sb;
	struct stream s = { .count = 2000, .size = small_size };
	struct node a = { 0 }, b = { 0 };
	bool ok;

	tap_diag("---- reorder (reorder_ppm 300000)");
	if (!TAP_EQ(pair_open(&a, &b), 0, "two endpoints"))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 300000), 0,
		    "efa0 reorder_ppm 300000"))
		goto out;
	ok = !stream_run(&a, &b, &s);
	TAP_OK(ok, "2000 messages through a reordering device");
	TAP_EQ(s.recvd, 2000, "every message arrives");
	TAP_OK(s.data, "byte-exact");
	TAP_OK(s.order, "in order, once");
	TAP_EQ(s.serr + s.rerr, 0, "no errors");
	stats(&b, &sb);
	TAP_OK(sb.ooo_pkts > 0, "receiver: ooo_pkts %llu",
	       (unsigned long long)sb.ooo_pkts);
	TAP_EQ(sb.recvwin_overflows, 0, "receiver: no window overflow");
out:
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/*
 * The receiver's window of one message against a device holding packets
 * back: messages beyond it fail at the receiver (FI_EOVERFLOW, no
 * context) and at the sender when its send still waits for an answer
 * (FI_DELIVERY_COMPLETE, longcts); every other message arrives.
 */
static void recvwin_run(uint64_t flags, size_t (*size)(uint32_t i),
			const char *cfg)
{
	struct fi_kfab_efa_ep_stats sb;
	struct stream s = { .count = 3000, .size = size, .flags = flags };
	struct node a = { 0 }, b = { 0 };
	uint32_t bad = 0;
	bool ok;

	tap_diag("---- FI_EFA_RECVWIN_SIZE=1 at the receiver (reorder_ppm 500000), %s",
		 cfg);
	ok = !node_open(&a, false, false);
	setenv("FI_EFA_RECVWIN_SIZE", "1", 1);
	ok = !node_open(&b, false, false) && ok;
	unsetenv("FI_EFA_RECVWIN_SIZE");
	if (!TAP_OK(ok && !node_enable(&a) && !node_enable(&b) &&
		    !connect2(&a, &b), "%s: two endpoints, the receiver's window 1",
		    cfg))
		goto out;
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 500000), 0,
		    "efa0 reorder_ppm 500000"))
		goto out;
	ok = !stream_run(&a, &b, &s);
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	TAP_OK(ok, "%s: %u messages: nothing hangs", cfg, s.count);
	stats(&b, &sb);
	tap_diag("received %u, receive errors %u (FI_EOVERFLOW %u), sends failed %u (FI_EOVERFLOW %u), recvwin_overflows %llu",
		 s.recvd, s.rerr, s.rerr_overflow, s.serr, s.serr_overflow,
		 (unsigned long long)sb.recvwin_overflows);
	if (!s.rerr && !s.serr && !sb.recvwin_overflows && ok) {
		tap_skip("%s: no message went beyond a window of 1 in %u messages: the device's hold-back never provoked an overflow",
			 cfg, s.count);
		goto out;
	}
	TAP_OK(s.rerr > 0 && s.rerr == s.rerr_overflow,
	       "%s: receiver: error completions FI_EOVERFLOW naming FI_EFA_RECVWIN_SIZE (%u of %u)",
	       cfg, s.rerr_overflow, s.rerr);
	TAP_OK(s.serr == s.serr_overflow,
	       "%s: sender: every failed send FI_EOVERFLOW naming FI_EFA_RECVWIN_SIZE (%u of %u)",
	       cfg, s.serr_overflow, s.serr);
	if (flags & FI_DELIVERY_COMPLETE)
		TAP_EQ(s.serr, s.rerr,
		       "%s: one failed send per receive error", cfg);
	else
		TAP_OK(s.serr > 0 && s.serr < s.rerr,
		       "%s: some sends still waiting failed (%u longcts), fewer than the receive errors (%u)",
		       cfg, s.serr, s.rerr);
	TAP_EQ(sb.recvwin_overflows, s.rerr,
	       "%s: receiver: recvwin_overflows counts them", cfg);
	TAP_EQ(s.recvd + s.rerr, s.count,
	       "%s: every other message arrives", cfg);
	TAP_OK(s.data, "%s: what arrived is byte-exact", cfg);
	TAP_OK(s.order, "%s: in order, once", cfg);
	for (uint32_t i = 0; i < s.count; i++)
		if (s.lost[i] && s.got[i])
			bad++;
	TAP_EQ(bad, 0, "%s: no message both failed at the sender and arrived",
	       cfg);
	if (flags & FI_DELIVERY_COMPLETE)
		TAP_OK(stream_accounted(&s),
		       "%s: each message arrived or failed at the sender", cfg);
out:
	stream_free(&s);
	node_close(&a);
	node_close(&b);
}

/*
 * Only a request right behind a packet held back overtakes it: longcts
 * ones come after eager ones here (behind a medium message's last
 * segment nothing overtakes a request).
 */
static size_t win_size(uint32_t i)
{
	static const size_t base[] = { 100, 200000, 4000, 20000, 60000 };

	return base[i % 5] + i % 97;
}

static void case_recvwin(void)
{
	recvwin_run(FI_DELIVERY_COMPLETE, small_size,
		    "eager, FI_DELIVERY_COMPLETE");
	recvwin_run(0, win_size, "eager, medium, longcts");
}

/* ------------------------------------------------------------------ */
/* 6. query_mr */

static void case_query_mr(void)
{
	struct fi_kfab_efa_ops_domain *ops = NULL;
	struct fi_kfab_efa_mr_attr attr;
	struct fid_mr *mr = NULL;
	void *bogus = NULL;
	struct node n = { 0 };

	tap_diag("---- query_mr");
	if (!TAP_EQ(node_open(&n, false, false), 0, "endpoint"))
		goto out;
	if (!TAP_EQ(fi_mr_reg(n.domain, rbuf, 65536, FI_REMOTE_READ |
			      FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0,
		    "fi_mr_reg 64 KiB")) {
		mr = NULL;
		goto out;
	}
	if (!TAP_EQ(fi_open_ops(&n.domain->fid, FI_KFAB_EFA_DOMAIN_OPS, 0,
				(void **)&ops, NULL), 0,
		    "fi_open_ops(FI_KFAB_EFA_DOMAIN_OPS)") || !ops)
		goto out;
	TAP_EQ(ops->size, sizeof(*ops), "ops->size");
	memset(&attr, 0xa5, sizeof(attr));
	TAP_EQ(ops->query_mr(mr, &attr), 0, "query_mr");
	TAP_EQ(attr.rkey, fi_mr_key(mr), "rkey is fi_mr_key()");
	TAP_EQ(attr.state, FI_KFAB_EFA_MR_VALID, "state FI_KFAB_EFA_MR_VALID");
	TAP_EQ(attr.addr, (uintptr_t)rbuf, "addr");
	TAP_EQ(attr.len, 65536, "len");
	TAP_EQ(attr.device, 0, "device efa0");
	TAP_OK((attr.access & (FI_KFAB_EFA_ACCESS_REMOTE_READ |
			       FI_KFAB_EFA_ACCESS_REMOTE_WRITE)) ==
	       (FI_KFAB_EFA_ACCESS_REMOTE_READ |
		FI_KFAB_EFA_ACCESS_REMOTE_WRITE),
	       "access: remote read and write (%#x)", attr.access);
	TAP_EQ(fi_open_ops(&n.domain->fid, "kfab_efa domain ops v0", 0,
			   &bogus, NULL), -FI_ENOSYS,
	       "fi_open_ops of another name: -FI_ENOSYS");
out:
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
}

/* ------------------------------------------------------------------ */
/* 7. refused */

static void case_refused(void)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;
	struct iovec iov[9];
	struct node a = { 0 }, b = { 0 }, c = { 0 };
	size_t inj;

	tap_diag("---- refused calls");
	memset(&c, 0, sizeof(c));
	if (!TAP_EQ(pair_open(&a, &b), 0, "two endpoints"))
		goto out;
	for (int i = 0; i < 9; i++) {
		iov[i].iov_base = sbuf + i * 16;
		iov[i].iov_len = 16;
	}
	TAP_EQ(fi_sendv(a.ep, iov, NULL, 9, a.peer, NULL), -FI_EINVAL,
	       "fi_sendv of 9 iovecs: -FI_EINVAL");
	TAP_EQ(fi_recvv(b.ep, iov, NULL, 9, FI_ADDR_UNSPEC, NULL), -FI_EINVAL,
	       "fi_recvv of 9 iovecs: -FI_EINVAL");
	inj = a.info->tx_attr->inject_size;
	TAP_OK(inj > 0, "inject_size %zu", inj);
	TAP_OK(fi_inject(a.ep, sbuf, inj + 1, a.peer) < 0,
	       "fi_inject of inject_size + 1 bytes: refused");
	TAP_OK(fi_inject_write(a.ep, sbuf, inj + 1, a.peer, 0, 0) < 0,
	       "fi_inject_write of inject_size + 1 bytes: refused");
	TAP_OK(fi_send(a.ep, sbuf, 16, NULL, 12345, NULL) < 0,
	       "fi_send to an fi_addr not in the AV: refused");
	TAP_OK(fi_read(a.ep, lbuf, 16, NULL, 12345, 0, 0, NULL) < 0,
	       "fi_read from an fi_addr not in the AV: refused");
	/* still working after all that */
	TAP_OK(xfer(&a, &b, 100, 5), "a message still goes");

	if (!TAP_EQ(node_open(&c, false, false), 0, "an endpoint not enabled"))
		goto out;
	TAP_EQ(fi_send(c.ep, sbuf, 16, NULL, 0, NULL), -FI_EOPBADSTATE,
	       "fi_send before fi_enable: -FI_EOPBADSTATE");
	TAP_EQ(fi_recv(c.ep, rbuf, 16, NULL, FI_ADDR_UNSPEC, NULL),
	       -FI_EOPBADSTATE, "fi_recv before fi_enable: -FI_EOPBADSTATE");
	if (TAP_EQ(fi_cntr_open(c.domain, &cattr, &cntr, NULL), 0,
		   "fi_cntr_open")) {
		TAP_EQ(fi_ep_bind(c.ep, &cntr->fid, FI_REMOTE_READ),
		       -FI_EOPNOTSUPP,
		       "FI_REMOTE_READ counter bind: -FI_EOPNOTSUPP");
		TAP_EQ(fi_ep_bind(c.ep, &cntr->fid, FI_REMOTE_WRITE),
		       -FI_EOPNOTSUPP,
		       "FI_REMOTE_WRITE counter bind: -FI_EOPNOTSUPP");
	}
out:
	if (cntr)
		fi_close(&cntr->fid);
	node_close(&c);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */
/* 8. FI_PROGRESS_AUTO, FI_WAIT_FD */

struct sleeper {
	struct node *n;
	volatile int started;
	ssize_t ret;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	uint64_t woke_ms;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	s->ret = fi_cq_sread(s->n->cq, &s->e, 1, NULL, TIMEOUT_MS);
	if (s->ret == -FI_EAVAIL)
		fi_cq_readerr(s->n->cq, &s->err, 0);
	s->woke_ms = xp_ms();
	return NULL;
}

static void auto_round(struct node *a, struct node *b, uint32_t seed,
		       int which, const char *what)
{
	struct fi_kfab_efa_ep_stats before, after;
	struct sleeper s = { .n = b };
	const size_t len = 1UL << 20;
	pthread_t th;
	uint64_t sent;
	int rctx, sctx;
	bool ok;

	xp_fill(sbuf, len, seed);
	memset(rbuf, 0, len);
	if (!TAP_EQ(fi_recv(b->ep, rbuf, len, NULL, FI_ADDR_UNSPEC, &rctx), 0,
		    "%s: receive posted", what))
		return;
	if (!TAP_EQ(pthread_create(&th, NULL, sleeper_main, &s), 0,
		    "%s: receiver thread", what))
		return;
	while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE))
		usleep(1000);
	usleep(100000);		/* asleep in fi_cq_sread() by now */
	stats(a, &before);
	sent = xp_ms();
	ok = !fi_send(a->ep, sbuf, len, NULL, a->peer, &sctx) &&
	     expect(a, NULL, &sctx, "1 MiB send");
	stats(a, &after);
	TAP_OK(ok, "%s: 1 MiB send completes (the sleeping receiver's progress thread answers)",
	       what);
	pthread_join(th, NULL);
	TAP_EQ(s.ret, 1, "%s: fi_cq_sread returns the completion", what);
	TAP_OK(s.ret == 1 && s.e.op_context == &rctx && s.e.len == len,
	       "%s: of the 1 MiB receive", what);
	TAP_OK(s.woke_ms >= sent && s.woke_ms - sent < TIMEOUT_MS,
	       "%s: woken by the message, %llu ms after the send", what,
	       (unsigned long long)(s.woke_ms - sent));
	TAP_OK(xp_check(rbuf, len, seed), "%s: byte-exact", what);
	TAP_OK(proto_one(&before, &after, which), "%s: went %s", what,
	       pname[which]);
}

/*
 * A device holding every packet back (reorder_ppm 1000000): the send of an
 * FI_PROGRESS_AUTO endpoint whose application then makes no call leaves
 * its packet held; its progress thread, asleep without a bound, is woken
 * to send it.
 */
static void case_auto_held(void)
{
	struct node a = { 0 }, b = { 0 };
	int sctx, rctx;
	uint64_t sent;
	bool ok;

	tap_diag("---- FI_PROGRESS_AUTO sender, its packet held (reorder_ppm 1000000)");
	ok = !node_open(&a, true, true) && !node_open(&b, false, false);
	if (!TAP_OK(ok && !node_enable(&a) && !node_enable(&b) &&
		    !connect2(&a, &b), "an auto sender, a manual receiver"))
		goto out;
	if (!TAP_OK(xfer(&a, &b, 64, 41), "handshake: a first message"))
		goto out;
	usleep(100000);		/* the sender's thread asleep by now */
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_REORDER_PPM, 1000000), 0,
		    "efa0 reorder_ppm 1000000"))
		goto out;
	xp_fill(sbuf, 64, 42);
	memset(rbuf, 0, 64);
	ok = !fi_recv(b.ep, rbuf, 64, NULL, FI_ADDR_UNSPEC, &rctx);
	sent = xp_ms();
	ok = ok && !fi_send(a.ep, sbuf, 64, NULL, a.peer, &sctx);
	ok = ok && expect(&b, NULL, &rctx, "held message");
	TAP_OK(ok, "the receiver gets the held message, the sender making no call (%llu ms)",
	       (unsigned long long)(xp_ms() - sent));
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	TAP_OK(ok && xp_check(rbuf, 64, 42), "byte-exact");
	TAP_OK(expect(&a, NULL, &sctx, "held send"), "the send completes");
out:
	set_knob(KFAB_EFA_KNOB_REORDER_PPM, 0);
	node_close(&a);
	node_close(&b);
}

static void case_auto(void)
{
	struct node a = { 0 }, b = { 0 };
	bool ok;

	tap_diag("---- FI_PROGRESS_AUTO receiver in fi_cq_sread (FI_WAIT_FD)");
	memset(&b, 0, sizeof(b));
	ok = !node_open(&a, false, false) && !node_open(&b, true, true);
	if (!TAP_OK(ok, "a manual sender, an auto receiver with FI_WAIT_FD"))
		goto out;
	TAP_EQ(b.info->domain_attr->data_progress, FI_PROGRESS_AUTO,
	       "receiver domain: FI_PROGRESS_AUTO");
	if (!TAP_OK(!node_enable(&a) && !node_enable(&b) && !connect2(&a, &b),
		    "enabled, connected"))
		goto out;
	/* before the handshake: longcts, the receiver's CTS from its thread */
	auto_round(&a, &b, 31, P_LONGCTS, "first");
	/* the receiver's handshake came: it reads the message itself */
	auto_round(&a, &b, 32, P_RUNTREAD, "second");
out:
	node_close(&a);
	node_close(&b);
	case_auto_held();
}

/* ------------------------------------------------------------------ */
/* 10. zero-copy receive */

#define ZC_MAX		4096	/* max_msg_size: one packet */
#define ZC_N		32
#define ZC_MED		(64UL << 10)
#define ZC_RX		512	/* rx size: more than the ring's 256 */

/* What zero-copy receive needs: FI_MSG alone, no SAS, one packet. */
static void zc_info(struct fi_info *fi)
{
	fi->caps = FI_MSG | FI_SEND | FI_RECV;
	fi->tx_attr->caps = FI_MSG | FI_SEND;
	fi->rx_attr->caps = FI_MSG | FI_RECV;
	fi->tx_attr->msg_order = 0;
	fi->rx_attr->msg_order = 0;
	fi->rx_attr->size = ZC_RX;
	fi->ep_attr->max_msg_size = ZC_MAX;
}

static void zc_tagged(struct fi_info *fi)
{
	zc_info(fi);
	fi->caps |= FI_TAGGED;
}

/* The same asked of fi_getinfo(): the fi_info it returns is used as is. */
static void zc_hints(struct fi_info *h)
{
	h->caps = FI_MSG;
	h->tx_attr->msg_order = 0;
	h->rx_attr->msg_order = 0;
	h->ep_attr->max_msg_size = ZC_MAX;
}

/* Whether a pair opened with @hook receives zero-copy (stats.zcpy_rx). */
static int zc_on(void (*hook)(struct fi_info *), const char *env)
{
	struct fi_kfab_efa_ep_stats st;
	struct node a, b;
	int on = -1;

	if (env)
		setenv("FI_EFA_USE_ZCPY_RX", env, 1);
	info_hook = hook;
	if (!pair_open(&a, &b) && !stats(&b, &st))
		on = (int)st.zcpy_rx;
	info_hook = NULL;
	unsetenv("FI_EFA_USE_ZCPY_RX");
	node_close(&a);
	node_close(&b);
	return on;
}

/* ZC_N messages of sizes up to ZC_MAX into as many receives. */
static void zc_stream(struct node *a, struct node *b, uint8_t *bufs)
{
	struct fi_kfab_efa_ep_stats sb0, sb;
	bool seen[ZC_N] = { false }, ok = true;
	int sctx[ZC_N], rctx[ZC_N];
	uint32_t got = 0;
	struct comp c;

	stats(b, &sb0);
	for (uint32_t i = 0; i < ZC_N && ok; i++)
		ok = !fi_recv(b->ep, bufs + (size_t)i * ZC_MAX, ZC_MAX, NULL,
			      FI_ADDR_UNSPEC, &rctx[i]);
	for (uint32_t i = 0; i < ZC_N && ok; i++) {
		size_t len = 8 + (size_t)i * (ZC_MAX - 8) / (ZC_N - 1);

		msg_fill(sbuf + (size_t)i * ZC_MAX, len, i);
		ok = !fi_send(a->ep, sbuf + (size_t)i * ZC_MAX, len, NULL,
			      a->peer, &sctx[i]);
	}
	if (!TAP_OK(ok, "zcpy: %d receives of %d bytes, %d sends",
		    ZC_N, ZC_MAX, ZC_N))
		return;
	for (uint32_t i = 0; i < ZC_N && ok; i++)
		ok = !wait_one(a, b, &c) && !c.err;
	TAP_OK(ok, "zcpy: every send completes");
	for (uint32_t i = 0; i < ZC_N && ok; i++) {
		int64_t k;
		size_t slot;

		ok = !wait_one(b, a, &c) && !c.err;
		if (!ok)
			break;
		slot = (size_t)((int *)c.ctx - rctx);
		k = msg_check(bufs + slot * ZC_MAX, c.len);
		ok = slot < ZC_N && k >= 0 && k < ZC_N && !seen[k] &&
		     c.len == 8 + (size_t)k * (ZC_MAX - 8) / (ZC_N - 1);
		if (ok) {
			seen[k] = true;
			got++;
		} else {
			tap_diag("receive %zu: %zu bytes, message %lld", slot,
				 c.len, (long long)k);
		}
	}
	TAP_EQ(got, ZC_N, "zcpy: each message once, byte-exact, its length");
	stats(b, &sb);
	TAP_EQ(sb.zcpy_rx_msgs - sb0.zcpy_rx_msgs, ZC_N,
	       "zcpy: all %d written in place by the device", ZC_N);
	TAP_OK(sb.unexp_msgs == sb0.unexp_msgs && sb.ooo_pkts == 0,
	       "zcpy: none unexpected, none held for order");
}

static void case_zcpy(void)
{
	struct fi_kfab_efa_ep_stats sa, sb0, sb;
	uint8_t *bufs = xp_anon((size_t)ZC_RX * ZC_MAX);
	int ctx[ZC_RX + 1], sctx, ret;
	struct node a = { 0 }, b = { 0 };
	struct iovec iov[2];
	struct comp c;
	bool ok;

	tap_diag("---- FI_EFA_USE_ZCPY_RX");
	TAP_EQ(zc_on(NULL, NULL), 0,
	       "zcpy: off for FI_TAGGED|FI_RMA|FI_ATOMIC and FI_ORDER_SAS");
	TAP_EQ(zc_on(zc_tagged, NULL), 0, "zcpy: off with FI_TAGGED");
	TAP_EQ(zc_on(zc_info, "0"), 0, "zcpy: off with FI_EFA_USE_ZCPY_RX=0");
	hints_hook = zc_hints;
	TAP_EQ(zc_on(NULL, NULL), 1,
	       "zcpy: on for hints of FI_MSG, no order, max_msg_size %d", ZC_MAX);
	hints_hook = NULL;
	TAP_EQ(zc_on(zc_info, NULL), 1,
	       "zcpy: on for FI_MSG, no SAS, max_msg_size %d", ZC_MAX);
	if (!bufs) {
		TAP_OK(false, "zcpy: out of memory");
		return;
	}

	info_hook = zc_info;
	ok = !pair_open(&a, &b);
	info_hook = NULL;
	if (!TAP_OK(ok, "zcpy: a pair"))
		goto out;

	/* b has no receive: a's packet waits as RNR, then lands */
	msg_fill(sbuf, 100, 7);
	ok = !fi_send(a.ep, sbuf, 100, NULL, a.peer, &sctx);
	for (int i = 0; i < 2000 && ok; i++) {
		pump(&a);
		pump(&b);
	}
	stats(&a, &sa);
	TAP_OK(ok && sa.rnr_retries > 0,
	       "zcpy: no receive posted: the sender sees RNR (%llu)",
	       (unsigned long long)sa.rnr_retries);
	memset(bufs, 0, ZC_MAX);
	ok = !fi_recv(b.ep, bufs, ZC_MAX, NULL, FI_ADDR_UNSPEC, &ctx[0]);
	ok = ok && expect(&b, &a, &ctx[0], "zcpy rnr receive") &&
	     expect(&a, &b, &sctx, "zcpy rnr send");
	TAP_OK(ok && msg_check(bufs, 100) == 7,
	       "zcpy: a receive posted: it arrives, byte-exact");

	zc_stream(&a, &b, bufs);

	/* too small: truncated; two iovecs: through the slot's buffer */
	stats(&b, &sb0);
	msg_fill(sbuf, 1000, 9);
	ok = !fi_recv(b.ep, bufs, 100, NULL, FI_ADDR_UNSPEC, &ctx[0]) &&
	     !fi_send(a.ep, sbuf, 1000, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy send 1000");
	ok = ok && !wait_one(&b, &a, &c);
	TAP_OK(ok && c.ctx == &ctx[0] && c.err == FI_ETRUNC &&
	       !memcmp(bufs, sbuf, 100),
	       "zcpy: 1000 bytes into 100: FI_ETRUNC, the first 100 there");
	memset(bufs, 0, 2 * ZC_MAX);
	iov[0] = (struct iovec){ bufs, 300 };
	iov[1] = (struct iovec){ bufs + ZC_MAX, 3000 };
	msg_fill(sbuf, 3000, 10);
	ok = !fi_recvv(b.ep, iov, NULL, 2, FI_ADDR_UNSPEC, &ctx[1]) &&
	     !fi_send(a.ep, sbuf, 3000, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy send 3000") &&
	     expect(&b, &a, &ctx[1], "zcpy recvv");
	TAP_OK(ok && !memcmp(bufs, sbuf, 300) &&
	       !memcmp(bufs + ZC_MAX, sbuf + 300, 2700),
	       "zcpy: two iovecs: byte-exact through the slot's buffer");
	stats(&b, &sb);
	TAP_EQ(sb.zcpy_rx_msgs, sb0.zcpy_rx_msgs,
	       "zcpy: neither counted as in place");

	/* a medium message: its segments take other receives, posted again */
	stats(&b, &sb0);
	for (int i = 0; i < 24; i++)
		fi_recv(b.ep, lbuf + (size_t)i * ZC_MED, ZC_MED, NULL,
			FI_ADDR_UNSPEC, &ctx[i]);
	xp_fill(sbuf, ZC_MED, 11);
	ok = !fi_send(a.ep, sbuf, ZC_MED, NULL, a.peer, &sctx) &&
	     expect(&a, &b, &sctx, "zcpy medium send") &&
	     !wait_one(&b, &a, &c) && !c.err && c.len == ZC_MED;
	TAP_OK(ok && (int *)c.ctx >= ctx && (int *)c.ctx < ctx + 24 &&
	       xp_check(lbuf + (size_t)((int *)c.ctx - ctx) * ZC_MED, ZC_MED,
			11),
	       "zcpy: a 64 KiB message arrives whole into one receive");
	stats(&b, &sb);
	TAP_OK(sb.zcpy_rx_reposts - sb0.zcpy_rx_reposts >= 7,
	       "zcpy: the receives its segments took were posted again (%llu)",
	       (unsigned long long)(sb.zcpy_rx_reposts - sb0.zcpy_rx_reposts));
	ret = fi_cancel(&b.ep->fid, (int *)c.ctx == &ctx[0] ? &ctx[1] :
							      &ctx[0]);
	TAP_EQ(ret, -FI_EOPNOTSUPP,
	       "zcpy: fi_cancel of a receive the device has: -FI_EOPNOTSUPP");

	/* more receives than ring slots: the last waits, and cancels */
	for (int i = 24; i < 280; i++)
		fi_recv(b.ep, bufs + (size_t)i * ZC_MAX, ZC_MAX, NULL,
			FI_ADDR_UNSPEC, &ctx[i]);
	ret = (int)fi_recv(b.ep, bufs + 280 * ZC_MAX, ZC_MAX, NULL,
			   FI_ADDR_UNSPEC, &ctx[ZC_RX]);
	TAP_EQ(ret, 0, "zcpy: a receive beyond the ring's slots is taken");
	ret = fi_cancel(&b.ep->fid, &ctx[ZC_RX]);
	ok = !wait_one(&b, &a, &c);
	TAP_OK(!ret && ok && c.ctx == &ctx[ZC_RX] && c.err == FI_ECANCELED,
	       "zcpy: one waiting for a slot cancels: FI_ECANCELED");
out:
	TAP_OK(node_close(&a) & node_close(&b),
	       "zcpy: closed with receives posted to the device");
	munmap(bufs, (size_t)ZC_RX * ZC_MAX);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct fi_info *fi;
	char dir[256];
	int ret;

	tap_start("efa_rdm_test");
	kfab_log_set(quiet);
	snprintf(dir, sizeof(dir), "%s/kfab-efa-rdm-test.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
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

	case_options();
	case_protocols();
	case_eagain();
	case_rnr();
	case_reorder();
	case_recvwin();
	case_query_mr();
	case_refused();
	case_auto();
	case_zcpy();

	kfab_efa_close(knobs);
	munmap(sbuf, BUFSZ);
	munmap(rbuf, BUFSZ);
	munmap(lbuf, BUFSZ);
	TAP_EQ(xp_files_under(dir), 0, "no files left in %s", dir);
	rmdir(dir);
	return tap_done();
}
