/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The two-process exchange shared by efa_shm_test and efa_kmod_test: the
 * same test body over either backend (DESIGN.md principle 3), as
 * hfi_xproc.h is for the HFI. A parent on one device and a forked child
 * on another create QPs, map each other (a wrong qkey first: EACCES) and
 * exchange packets both ways with wakeups (the child asleep until the
 * first notify); the parent RDMAs into the child's regions and checks the
 * refusals (keys, bounds, another domain's region, device_rdma), sets the
 * child's device's knobs (seen by both, refused values, Down), the child
 * RDMAs back, then destroys its QP under the parent's peer (dead,
 * ECONNRESET, ENOENT). On shm the device files are checked too.
 */
#ifndef KFAB_ULIB_EFA_XPROC_H
#define KFAB_ULIB_EFA_XPROC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dev/efa_dev.h"
#include "tests/xproc.h"

#define RW_BYTES	(1u << 20)
#define RO_BYTES	65536u
#define WR_OFF		4097u
#define WR_LEN		(1u + 99999u + 12345u)
#define BACK_BYTES	300000u
#define TIMEOUT_MS	10000

/* The parent runs on device 0, the child on device 1. */
#define XP_EFA_PARENT	0u
#define XP_EFA_CHILD	1u

struct xp_efa_cfg {
	enum kfab_backend backend;
	unsigned int packets;	/* each way */
	const char *shm_dir;	/* shm: $KFAB_SHM_DIR, checked; kmod: NULL */
};

/* shm: the file named @fmt (with @v) of @device under @dir exists */
static bool xp_efa_file(const char *dir, unsigned int device,
			const char *fmt, uint32_t v)
{
	char name[64], path[512];
	struct stat st;

	snprintf(name, sizeof(name), fmt, v);
	snprintf(path, sizeof(path), "%s/efa%u/%s", dir, device, name);
	return !lstat(path, &st);
}

/* The stream's end on @qp of @dev, to @peer (xp_io): */
struct xp_efa {
	struct kfab_efa_dev *dev;
	struct kfab_efa_qp *qp;
	struct kfab_efa_peer *peer;
	const uint8_t *gid;		/* the peer's, packets come from */
	uint32_t qpn;
	struct kfab_efa_ring_entry e;	/* the packet held */
	uint8_t *pl;			/* mtu bytes: a payload sent */
};

/* The immediate of packet @i of a stream (xp_len() its payload length). */
static uint32_t xp_efa_imm(uint32_t i)
{
	return i ^ 0x5a5a0000u;
}

/* @e is packet @i from (@gid, @qpn), byte-exact. */
static bool xp_efa_pkt_ok(const struct kfab_efa_ring_entry *e, uint32_t i,
			  uint32_t mtu, const uint8_t *gid, uint32_t qpn)
{
	uint8_t hdr[KFAB_EFA_RX_HDR_BYTES];
	size_t len = xp_len(i, mtu);

	xp_fill(hdr, sizeof(hdr), i);
	return !memcmp(e->hdr, hdr, sizeof(hdr)) && e->len == len &&
	       (!len || xp_check(e->payload, len, ~i)) &&
	       e->imm == xp_efa_imm(i) &&
	       !memcmp(e->src_gid, gid, KFAB_EFA_GID_LEN) && e->src_qpn == qpn;
}

/* Packet @i to @peer, its payload built in @pl (room for the mtu). */
static int xp_efa_send_pkt(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp,
			   struct kfab_efa_peer *peer, uint32_t i, uint8_t *pl)
{
	uint8_t hdr[KFAB_EFA_RX_HDR_BYTES];
	size_t len = xp_len(i, peer->ring.mtu);

	xp_fill(hdr, sizeof(hdr), i);
	xp_fill(pl, len, ~i);
	return kfab_efa_peer_send(dev, qp, peer, hdr, sizeof(hdr),
				  xp_efa_imm(i), pl, len);
}

static int xp_efa_send(void *arg, uint32_t i)
{
	struct xp_efa *x = arg;

	return xp_efa_send_pkt(x->dev, x->qp, x->peer, i, x->pl);
}

static int xp_efa_poll(void *arg)
{
	struct xp_efa *x = arg;

	return kfab_efa_ring_poll(&x->qp->ring, &x->e) == 1;
}

static int xp_efa_echo(void *arg)
{
	struct xp_efa *x = arg;

	return kfab_efa_peer_send(x->dev, x->qp, x->peer, x->e.hdr,
				  KFAB_EFA_RX_HDR_BYTES, x->e.imm,
				  x->e.payload, x->e.len);
}

/* a receive buffer posted for each one released */
static bool xp_efa_release(void *arg, uint32_t i)
{
	struct xp_efa *x = arg;
	bool ok = xp_efa_pkt_ok(&x->e, i, x->dev->info.mtu, x->gid, x->qpn);

	kfab_efa_ring_release(&x->qp->ring);
	kfab_efa_ring_post(&x->qp->ring, 1);
	return ok;
}

static int xp_efa_arm(void *arg)
{
	struct xp_efa *x = arg;

	return kfab_efa_ring_arm(&x->qp->ring) ? x->qp->wake_fd : -1;
}

static void xp_efa_drain(void *arg)
{
	struct xp_efa *x = arg;

	kfab_efa_wake_drain(x->dev, x->qp);
}

static const struct xp_io xp_efa_io = {
	.send = xp_efa_send, .poll = xp_efa_poll, .echo = xp_efa_echo,
	.release = xp_efa_release, .arm = xp_efa_arm, .drain = xp_efa_drain,
};

struct msg {
	uint32_t kind;
	uint32_t qpn, qkey, rkey_rw, rkey_ro, a, b;
	int32_t ret;
	uint64_t addr_rw, addr_ro;
	uint8_t gid[KFAB_EFA_GID_LEN];
};

enum { M_HELLO = 1, M_GO, M_ARMED, M_DONE, M_ARMED2, M_CHECKED, M_KNOB,
       M_BACK, M_BACK_DONE, M_DESTROY, M_DESTROYED, M_BYE };


/* The child of the exchange: 0, or 10 + the step that failed. */
static int xp_efa_child(const struct xp_efa_cfg *cfg, int rfd, int wfd)
{
	struct kfab_efa_dev *dev;
	struct kfab_efa_qp *qp;
	struct kfab_efa_peer *peer;
	struct kfab_efa_mr mr_rw, mr_ro;
	struct msg m = { 0 }, go;
	struct xp_tally t = { 0 };
	struct xp_efa x;
	uint8_t *rw, *ro, *src;
	struct pollfd p;
	uint64_t bytes;
	int ret;

	if (kfab_efa_open(cfg->backend, XP_EFA_CHILD, &dev) ||
	    kfab_efa_create_qp(dev, &qp))
		return 10;
	rw = calloc(1, RW_BYTES);
	ro = malloc(RO_BYTES);
	if (!rw || !ro)
		return 11;
	xp_fill(ro, RO_BYTES, 5);
	if (kfab_efa_reg_mr(dev, rw, RW_BYTES, KFAB_EFA_ACCESS_ALL, &mr_rw) ||
	    kfab_efa_reg_mr(dev, ro, RO_BYTES, KFAB_EFA_ACCESS_REMOTE_READ,
			    &mr_ro))
		return 12;
	m.kind = M_HELLO;
	m.qpn = qp->addr.qpn;
	m.qkey = qp->addr.qkey;
	memcpy(m.gid, qp->addr.gid, 16);
	m.rkey_rw = mr_rw.rkey;
	m.rkey_ro = mr_ro.rkey;
	m.addr_rw = (uintptr_t)rw;
	m.addr_ro = (uintptr_t)ro;
	if (xp_send(wfd, &m, sizeof(m)) ||
	    xp_recv(rfd, &go, sizeof(go), M_GO, 2 * TIMEOUT_MS))
		return 13;
	{
		struct kfab_efa_addr a = { .qpn = go.qpn, .qkey = go.qkey };

		memcpy(a.gid, go.gid, 16);
		if (kfab_efa_map_peer(dev, &a, &peer))
			return 14;
	}
	/* post, arm, tell the parent, sleep until its first packet */
	kfab_efa_ring_post(&qp->ring, 256);
	if (!kfab_efa_ring_arm(&qp->ring))
		return 15;
	m.kind = M_ARMED;
	if (xp_send(wfd, &m, sizeof(m)))
		return 16;
	p = (struct pollfd){ .fd = qp->wake_fd, .events = POLLIN };
	m.a = poll(&p, 1, TIMEOUT_MS) == 1;	/* woken by notify */
	kfab_efa_wake_drain(dev, qp);
	/* verify and echo every packet */
	x = (struct xp_efa){ .dev = dev, .qp = qp, .peer = peer,
			     .gid = go.gid, .qpn = go.qpn };
	ret = xp_echo(&xp_efa_io, &x, cfg->packets, TIMEOUT_MS, &t);
	if (ret)
		return ret == -EAGAIN ? 17 : ret == -ETIMEDOUT ? 19 : 18;
	m.kind = M_DONE;
	m.ret = (int32_t)t.bad;
	m.b = t.sleeps;
	if (xp_send(wfd, &m, sizeof(m)))
		return 20;

	/* RDMA write with NOTIFY wakes us */
	if (!kfab_efa_ring_arm(&qp->ring))
		return 21;
	m.kind = M_ARMED2;
	if (xp_send(wfd, &m, sizeof(m)))
		return 22;
	ret = poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -ETIMEDOUT;
	kfab_efa_wake_drain(dev, qp);
	m.kind = M_CHECKED;
	m.ret = ret ? ret :
		!xp_check(rw + WR_OFF, WR_LEN, 77) || !xp_all(rw, WR_OFF, 0) ||
		!xp_all(rw + WR_OFF + WR_LEN, RW_BYTES - WR_OFF - WR_LEN, 0) ?
		-EILSEQ : 0;
	if (xp_send(wfd, &m, sizeof(m)))
		return 23;

	/* the knob the parent set on our device, through our own page */
	if (xp_recv(rfd, &m, sizeof(m), M_KNOB, 2 * TIMEOUT_MS))
		return 24;
	m.a = dev->status->rnr_inject_ppm;
	if (xp_send(wfd, &m, sizeof(m)))
		return 25;

	/* RDMA the other way, into the parent's region */
	if (xp_recv(rfd, &m, sizeof(m), M_BACK, 2 * TIMEOUT_MS))
		return 26;
	src = malloc(BACK_BYTES);
	if (!src)
		return 27;
	xp_fill(src, BACK_BYTES, 99);
	{
		struct iovec iov[2] = {
			{ src, 100000 }, { src + 100000, BACK_BYTES - 100000 },
		};

		m.ret = kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, m.rkey_rw,
				      m.addr_rw + 77, iov, 2, 0, &bytes);
		m.a = (uint32_t)bytes;
	}
	free(src);
	m.kind = M_BACK_DONE;
	if (xp_send(wfd, &m, sizeof(m)))
		return 28;

	/* destroyed under the parent's peer */
	if (xp_recv(rfd, &m, sizeof(m), M_DESTROY, 2 * TIMEOUT_MS) ||
	    kfab_efa_destroy_qp(dev, qp))
		return 29;
	m.kind = M_DESTROYED;
	if (xp_send(wfd, &m, sizeof(m)) ||
	    xp_recv(rfd, &m, sizeof(m), M_BYE, 2 * TIMEOUT_MS))
		return 30;
	kfab_efa_close(dev);
	free(rw);
	free(ro);
	return 0;
}

static void xp_efa_rdma_checks(struct kfab_efa_dev *dev, struct kfab_efa_dev *ctl,
			struct kfab_efa_peer *peer, const struct msg *h)
{
	static uint8_t src[3][100000];
	struct iovec iov[3] = {
		{ src[0], 1 }, { src[1], 99999 }, { src[2], 12345 },
	};
	/* WR_LEN > RO_BYTES: room for both reads */
	uint8_t *all = malloc(WR_LEN), *back = calloc(1, WR_LEN);
	static uint8_t foreign[4096];
	struct kfab_efa_mr fmr;
	uint64_t bytes = 0;

	if (!all || !back)
		goto out;
	xp_fill(all, WR_LEN, 77);
	memcpy(src[0], all, 1);
	memcpy(src[1], all + 1, 99999);
	memcpy(src[2], all + 100000, 12345);
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, h->rkey_rw,
			     h->addr_rw + WR_OFF, iov, 3, KFAB_EFA_RDMA_NOTIFY,
			     &bytes), 0,
	       "rdma: write of 3 iovecs into the child's region, NOTIFY");
	TAP_EQ(bytes, WR_LEN, "rdma: bytes written");

	/* read it back, into two pieces */
	{
		struct iovec r[2] = {
			{ back, 5000 }, { back + 5000, WR_LEN - 5000 },
		};

		TAP_OK(!kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_rw,
				      h->addr_rw + WR_OFF, r, 2, 0, &bytes) &&
		       bytes == WR_LEN && !memcmp(back, all, WR_LEN),
		       "rdma: read back byte-exact");
	}
	{
		struct iovec r = { back, RO_BYTES };

		memset(back, 0, RO_BYTES);
		TAP_OK(!kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_ro,
				      h->addr_ro, &r, 1, 0, &bytes) &&
		       bytes == RO_BYTES && xp_check(back, RO_BYTES, 5),
		       "rdma: read of the whole read-only region");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, h->rkey_ro,
				     h->addr_ro, &r, 1, 0, &bytes), -EACCES,
		       "rdma: write into a region without REMOTE_WRITE: EACCES");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ,
				     h->rkey_rw ^ 0x80000000u, h->addr_rw, &r,
				     1, 0, &bytes), -EACCES,
		       "rdma: unknown rkey: EACCES");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_ro,
				     h->addr_ro + 1, &r, 1, 0, &bytes), -EINVAL,
		       "rdma: one byte past the region's end: EINVAL");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_ro,
				     h->addr_ro - 1, &r, 1, 0, &bytes), -EINVAL,
		       "rdma: one byte before its start: EINVAL");
		TAP_EQ(kfab_efa_rdma(dev, peer, 2, h->rkey_ro, h->addr_ro, &r,
				     1, 0, &bytes), -EINVAL, "rdma: op 2: EINVAL");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_ro,
				     h->addr_ro, &r, 1, 0x2, &bytes), -EINVAL,
		       "rdma: unknown flag: EINVAL");
	}
	/* a region of efa1 that is not the peer QP's owner's */
	if (TAP_EQ(kfab_efa_reg_mr(ctl, foreign, sizeof(foreign),
				   KFAB_EFA_ACCESS_ALL, &fmr), 0,
		   "rdma: a region of another domain on efa1")) {
		struct iovec r = { back, 16 };

		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, fmr.rkey,
				     (uintptr_t)foreign, &r, 1, 0, &bytes),
		       -EACCES, "rdma: its rkey through the child's QP: EACCES");
		kfab_efa_dereg_mr(ctl, &fmr);
	}
	/* device_rdma */
	{
		struct iovec r = { back, 16 };

		kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_DEVICE_RDMA, 0);
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_rw,
				     h->addr_rw, &r, 1, 0, &bytes), -EOPNOTSUPP,
		       "rdma: peer's device_rdma 0: read EOPNOTSUPP");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, h->rkey_rw,
				     h->addr_rw, &r, 1, 0, &bytes), -EOPNOTSUPP,
		       "rdma: and write EOPNOTSUPP");
		kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_DEVICE_RDMA,
				  KFAB_EFA_RDMA_CAP_READ);
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, h->rkey_rw,
				     h->addr_rw + WR_OFF, iov, 1, 0, &bytes),
		       -EOPNOTSUPP, "rdma: device_rdma READ: write EOPNOTSUPP");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_rw,
				     h->addr_rw, &r, 1, 0, &bytes), 0,
		       "rdma: device_rdma READ: read works");
		kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_DEVICE_RDMA, 3);
		kfab_efa_set_knob(dev, KFAB_EFA_KNOB_DEVICE_RDMA,
				  KFAB_EFA_RDMA_CAP_WRITE);
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_rw,
				     h->addr_rw, &r, 1, 0, &bytes), -EOPNOTSUPP,
		       "rdma: own device_rdma WRITE: read EOPNOTSUPP");
		kfab_efa_set_knob(dev, KFAB_EFA_KNOB_DEVICE_RDMA, 3);
	}
out:
	free(all);
	free(back);
}

/*
 * notify and an RDMA read of the child's region through @peer fail with
 * @err, mapping its QP at @a again with @map_err (@what: the step).
 */
static void xp_efa_refused(struct kfab_efa_dev *dev,
			   struct kfab_efa_peer *peer,
			   const struct kfab_efa_addr *a, const struct msg *h,
			   int err, int map_err, const char *what)
{
	struct kfab_efa_peer *p2;
	uint8_t buf[8];
	struct iovec r = { buf, sizeof(buf) };
	uint64_t bytes;

	TAP_EQ(kfab_efa_notify(dev, peer), err, "%s: notify: %s", what,
	       strerrorname_np(-err));
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, h->rkey_rw,
			     h->addr_rw, &r, 1, 0, &bytes), err,
	       "%s: rdma: %s", what, strerrorname_np(-err));
	TAP_EQ(kfab_efa_map_peer(dev, a, &p2), map_err,
	       "%s: map_peer: %s", what, strerrorname_np(-map_err));
}

static void xp_efa_run(const struct xp_efa_cfg *cfg)
{
	static const struct {
		enum kfab_efa_knob knob;
		uint32_t v;
		const char *what;
	} refused[] = {
		{ KFAB_EFA_KNOB_RNR_INJECT_PPM, 1000001, "1000001" },
		{ KFAB_EFA_KNOB_RNR_RETRY, 8, "rnr_retry 8" },
		{ (enum kfab_efa_knob)9, 0, "knob 9" },
	};
	const char *dir = cfg->shm_dir;
	struct kfab_efa_dev *dev = NULL, *ctl = NULL;
	struct kfab_efa_qp *qp = NULL;
	struct kfab_efa_peer *peer = NULL, *p2;
	struct kfab_efa_status st;
	struct kfab_efa_addr a;
	struct msg h = { 0 }, m = { 0 };
	struct xp_tally t = { 0 };
	struct xp_efa x;
	uint8_t *pl = NULL;
	int down[2], up[2], status, ret;
	pid_t pid;

	if (!TAP_EQ(kfab_efa_open(cfg->backend, XP_EFA_PARENT, &dev), 0,
		    "xproc: open efa%u", XP_EFA_PARENT) ||
	    !TAP_EQ(kfab_efa_open(cfg->backend, XP_EFA_CHILD, &ctl), 0,
		    "xproc: open efa%u to set knobs", XP_EFA_CHILD) ||
	    !TAP_EQ(kfab_efa_create_qp(dev, &qp), 0, "xproc: create QP") ||
	    !TAP_EQ(pipe(down) || pipe(up), 0, "xproc: pipes")) {
		kfab_efa_close(ctl);
		kfab_efa_close(dev);
		return;
	}
	pl = malloc(dev->info.mtu);
	kfab_efa_ring_post(&qp->ring, 256);
	pid = xp_fork(down, up);
	if (!pid)
		_exit(xp_efa_child(cfg, down[0], up[1]));

	ret = xp_recv(up[0], &h, sizeof(h), M_HELLO, 2 * TIMEOUT_MS);
	if (!TAP_EQ(ret, 0, "xproc: child created a QP on efa%u",
		    XP_EFA_CHILD))
		goto out;
	TAP_OK(!memcmp(h.gid, ctl->info.gid, KFAB_EFA_GID_LEN) && h.qpn &&
	       h.qkey, "xproc: child QP %u, its device's gid, a qkey", h.qpn);
	memcpy(a.gid, h.gid, 16);
	a.qpn = h.qpn;
	a.qkey = h.qkey ^ 1;
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -EACCES,
	       "xproc: map with a wrong qkey: EACCES");
	a.qkey = h.qkey;
	if (!TAP_EQ(kfab_efa_map_peer(dev, &a, &peer), 0,
		    "xproc: map the child's QP"))
		goto out;
	TAP_OK(peer->status->device == XP_EFA_CHILD &&
	       !memcmp(peer->status->gid, ctl->info.gid, KFAB_EFA_GID_LEN),
	       "xproc: the peer's status is efa%u's", XP_EFA_CHILD);
	TAP_EQ(kfab_efa_peer_send(dev, qp, peer, "r", 1, 0, NULL, 0), -EAGAIN,
	       "xproc: nothing posted by the child: RNR");
	TAP_EQ(peer->ring.ctrl->rnrs, 1, "xproc: rnrs 1 in the child's ctrl");
	TAP_OK(!kfab_efa_peer_gone(dev, peer), "xproc: peer not gone");
	m.kind = M_GO;
	m.qpn = qp->addr.qpn;
	m.qkey = qp->addr.qkey;
	memcpy(m.gid, qp->addr.gid, 16);
	xp_send(down[1], &m, sizeof(m));
	ret = xp_recv(up[0], &m, sizeof(m), M_ARMED, 2 * TIMEOUT_MS);
	if (!TAP_EQ(ret, 0, "xproc: child posted and armed"))
		goto out;

	x = (struct xp_efa){ .dev = dev, .qp = qp, .peer = peer, .gid = h.gid,
			     .qpn = h.qpn, .pl = pl };
	xp_stream(&xp_efa_io, &x, cfg->packets, TIMEOUT_MS, "xproc", &t);
	TAP_EQ(t.sent, cfg->packets,
	       "xproc: %u packets sent (%u RNRs retried)", cfg->packets,
	       t.eagain);
	TAP_EQ(t.got, cfg->packets, "xproc: %u echoes received (%u sleeps)",
	       cfg->packets, t.sleeps);
	TAP_EQ(t.bad, 0, "xproc: echoes' data, hdr, imm, src gid and qpn exact");
	ret = xp_recv(up[0], &m, sizeof(m), M_DONE, 2 * TIMEOUT_MS);
	if (!TAP_EQ(ret, 0, "xproc: child received all"))
		goto out;
	TAP_EQ(m.ret, 0, "xproc: child saw data, hdr, imm, src exact");
	TAP_EQ(m.a, 1, "xproc: child slept armed and was woken by notify");
	tap_diag("child slept %u times", m.b);

	ret = xp_recv(up[0], &m, sizeof(m), M_ARMED2, 2 * TIMEOUT_MS);
	if (!TAP_EQ(ret, 0, "rdma: child armed"))
		goto out;
	xp_efa_rdma_checks(dev, ctl, peer, &h);
	ret = xp_recv(up[0], &m, sizeof(m), M_CHECKED, 2 * TIMEOUT_MS);
	TAP_OK(!ret && !m.ret,
	       "rdma: child woken by RDMA NOTIFY, its region byte-exact (%d)",
	       ret ? ret : m.ret);

	/* knobs */
	TAP_EQ(kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_RNR_INJECT_PPM, 123456), 0,
	       "knob: rnr_inject_ppm 123456 on efa%u", XP_EFA_CHILD);
	TAP_EQ(peer->status->rnr_inject_ppm, 123456,
	       "knob: seen through our peer mapping");
	TAP_OK(!kfab_efa_get_status(ctl, &st) && st.rnr_inject_ppm == 123456,
	       "knob: get_status reads it");
	m.kind = M_KNOB;
	xp_send(down[1], &m, sizeof(m));
	ret = xp_recv(up[0], &m, sizeof(m), M_KNOB, 2 * TIMEOUT_MS);
	TAP_OK(!ret && m.a == 123456, "knob: seen by the child (%u)", m.a);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		TAP_EQ(kfab_efa_set_knob(ctl, refused[i].knob, refused[i].v),
		       -EINVAL, "knob: %s: EINVAL", refused[i].what);
	TAP_EQ(peer->status->rnr_inject_ppm, 123456,
	       "knob: refused values change nothing");
	kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_RNR_INJECT_PPM, 0);
	TAP_EQ(kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_STATE,
				 KFAB_EFA_STATE_DOWN), 0, "knob: efa%u Down",
	       XP_EFA_CHILD);
	xp_efa_refused(dev, peer, &a, &h, -ENETDOWN, -ENETDOWN, "down");
	TAP_EQ(kfab_efa_create_qp(ctl, &(struct kfab_efa_qp *){ 0 }),
	       -ENETDOWN, "down: create_qp on it: ENETDOWN");
	kfab_efa_set_knob(ctl, KFAB_EFA_KNOB_STATE, KFAB_EFA_STATE_ACTIVE);
	TAP_EQ(kfab_efa_notify(dev, peer), 0, "knob: Active again: notify");

	/* RDMA from the child into our region */
	{
		uint8_t *buf = calloc(1, BACK_BYTES + 200);
		struct kfab_efa_mr mr;
		bool exact;

		TAP_EQ(kfab_efa_reg_mr(dev, buf, BACK_BYTES + 200,
				       KFAB_EFA_ACCESS_LOCAL_WRITE |
				       KFAB_EFA_ACCESS_REMOTE_WRITE, &mr), 0,
		       "back: register our region");
		m.kind = M_BACK;
		m.rkey_rw = mr.rkey;
		m.addr_rw = (uintptr_t)buf;
		xp_send(down[1], &m, sizeof(m));
		ret = xp_recv(up[0], &m, sizeof(m), M_BACK_DONE,
			      2 * TIMEOUT_MS);
		if (!ret && m.ret == -EPERM) {
			tap_skip("back: child->parent RDMA not permitted here (EPERM)");
		} else {
			TAP_OK(!ret && !m.ret && m.a == BACK_BYTES,
			       "back: child's RDMA write into our region (%d, %u bytes)",
			       ret ? ret : m.ret, m.a);
			exact = xp_check(buf + 77, BACK_BYTES, 99) &&
				xp_all(buf, 77, 0) &&
				xp_all(buf + 77 + BACK_BYTES, 123, 0);
			TAP_OK(exact, "back: our bytes exact");
		}
		kfab_efa_dereg_mr(dev, &mr);
		free(buf);
	}

	/* the child destroys its QP */
	m.kind = M_DESTROY;
	xp_send(down[1], &m, sizeof(m));
	ret = xp_recv(up[0], &m, sizeof(m), M_DESTROYED, 2 * TIMEOUT_MS);
	if (TAP_EQ(ret, 0, "destroy: child destroyed its QP")) {
		TAP_OK(kfab_efa_peer_gone(dev, peer), "destroy: peer_gone");
		TAP_EQ(kfab_efa_ring_dead(&peer->ring), 1, "destroy: dead word");
		xp_efa_refused(dev, peer, &a, &h, -ECONNRESET, -ENOENT,
			       "destroy");
		if (cfg->shm_dir)
			TAP_OK(!xp_efa_file(dir, XP_EFA_CHILD, "qp%u", h.qpn) &&
			       !xp_efa_file(dir, XP_EFA_CHILD, "qp%u.wake", h.qpn),
			       "destroy: its files are gone");
		TAP_EQ(kfab_efa_unmap_peer(dev, peer), 0,
		       "destroy: unmap_peer");
		peer = NULL;
	}
	m.kind = M_BYE;
	xp_send(down[1], &m, sizeof(m));
out:
	status = xp_reap(pid, 30000);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status),
	       "xproc: child exited 0 (status %#x)", status);
	if (cfg->shm_dir)
		TAP_OK(!xp_efa_file(dir, XP_EFA_CHILD, "mr%08x", h.rkey_rw) &&
		       !xp_efa_file(dir, XP_EFA_CHILD, "mr%08x", h.rkey_ro),
		       "xproc: the child's close removed its region records");
	if (peer)
		kfab_efa_unmap_peer(dev, peer);
	close(down[1]);
	close(up[0]);
	free(pl);
	kfab_efa_close(ctl);
	kfab_efa_close(dev);
	if (cfg->shm_dir)
		TAP_EQ(xp_files_under(cfg->shm_dir), 0,
		       "xproc: no files left");
}

#endif /* KFAB_ULIB_EFA_XPROC_H */
