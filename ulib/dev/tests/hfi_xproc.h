/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The two-process exchange shared by hfi_shm_test and hfi_kmod_test: the same
 * test body over either backend (DESIGN.md principle 3). A parent and a
 * forked child assign contexts of one job, map each other, exchange eager
 * packets both ways with eventfd/FIFO wakeups, move a large buffer with
 * SDMA into the other's TID buffer, and check the keys (EACCES, ENOENT)
 * and the release (dead, ECONNRESET).
 */
#ifndef KFAB_ULIB_HFI_XPROC_H
#define KFAB_ULIB_HFI_XPROC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dev/hfi_dev.h"
#include "tests/xproc.h"

#define XP_PACKETS	5000
#define XP_TID_BYTES	(1u << 20)
#define XP_SDMA_OFF	4097u

struct xp_msg {
	uint32_t kind;
	uint32_t a, b, c, d;
	int32_t ret;
};

enum { XP_HELLO = 1, XP_PEER, XP_SDMA_READY, XP_SDMA_DONE, XP_TID,
       XP_SDMA_BACK, XP_BYE };

/* The stream's end on @dev, to @peer (xp_io): */
struct xp_hfi {
	struct kfab_hfi_dev *dev;
	struct kfab_hfi_peer *peer;
	struct kfab_hfi_ring_entry e;	/* the packet held */
	uint8_t *pl;			/* eager_size bytes: a payload sent */
};

static int xp_hfi_send(void *arg, uint32_t i)
{
	struct xp_hfi *x = arg;
	uint8_t hdr[KFAB_HFI_RHQ_HDR_BYTES];
	size_t len = xp_len(i, x->dev->info.eager_size);

	xp_fill(hdr, sizeof(hdr), i);
	xp_fill(x->pl, len, ~i);
	return kfab_hfi_peer_send(x->dev, x->peer, hdr, sizeof(hdr), x->pl,
				  len);
}

static int xp_hfi_poll(void *arg)
{
	struct xp_hfi *x = arg;

	return kfab_hfi_ring_poll(&x->dev->ring, &x->e) == 1;
}

static int xp_hfi_echo(void *arg)
{
	struct xp_hfi *x = arg;

	return kfab_hfi_peer_send(x->dev, x->peer, x->e.hdr,
				  KFAB_HFI_RHQ_HDR_BYTES, x->e.payload,
				  x->e.len);
}

static bool xp_hfi_release(void *arg, uint32_t i)
{
	struct xp_hfi *x = arg;
	uint8_t hdr[KFAB_HFI_RHQ_HDR_BYTES];
	size_t len = xp_len(i, x->dev->info.eager_size);
	bool ok;

	xp_fill(hdr, sizeof(hdr), i);
	ok = !memcmp(x->e.hdr, hdr, sizeof(hdr)) && x->e.len == len &&
	     (!len || xp_check(x->e.payload, len, ~i));
	kfab_hfi_ring_release(&x->dev->ring);
	return ok;
}

static int xp_hfi_arm(void *arg)
{
	struct xp_hfi *x = arg;

	return kfab_hfi_ring_arm(&x->dev->ring) ? x->dev->wake_fd : -1;
}

static void xp_hfi_drain(void *arg)
{
	kfab_hfi_wake_drain(((struct xp_hfi *)arg)->dev);
}

static const struct xp_io xp_hfi_io = {
	.send = xp_hfi_send, .poll = xp_hfi_poll, .echo = xp_hfi_echo,
	.release = xp_hfi_release, .arm = xp_hfi_arm, .drain = xp_hfi_drain,
};

struct xp_cfg {
	enum kfab_backend backend;
	unsigned int unit_parent;
	unsigned int unit_child;
	uint8_t uuid[16];
};

/* The child: exit code 0, or 10 + the step that failed. */
static int xp_child(const struct xp_cfg *cfg, int rfd, int wfd)
{
	struct kfab_hfi_dev *dev;
	struct kfab_hfi_peer *peer;
	struct xp_msg m = { 0 };
	struct xp_tally t = { 0 };
	struct xp_hfi x;
	uint8_t *tid_buf, *src;
	uint32_t tid;
	uint64_t bytes = 0;
	int ret;

	if (kfab_hfi_open(cfg->backend, cfg->unit_child, &dev))
		return 10;
	if (kfab_hfi_assign(dev, cfg->uuid, KFAB_HFI_PKEY_DEFAULT, 0))
		return 11;
	tid_buf = calloc(1, XP_TID_BYTES);
	if (!tid_buf || kfab_hfi_tid_update(dev, tid_buf, XP_TID_BYTES, &tid))
		return 12;
	m.kind = XP_HELLO;
	m.a = dev->info.lid;
	m.b = dev->info.ctxt;
	m.c = dev->info.jkey;
	m.d = tid;
	if (xp_send(wfd, &m, sizeof(m)) ||
	    xp_recv(rfd, &m, sizeof(m), XP_PEER, 10000))
		return 13;
	if (kfab_hfi_map_peer(dev, m.a, m.b, &peer))
		return 14;
	/* echo every packet back, with its header and payload */
	x = (struct xp_hfi){ .dev = dev, .peer = peer };
	ret = xp_echo(&xp_hfi_io, &x, XP_PACKETS, 10000, &t);
	if (ret)
		return ret == -EAGAIN ? 15 : ret == -ETIMEDOUT ? 17 : 16;
	/* SDMA in: arm, tell the parent, sleep until its NOTIFY */
	if (!kfab_hfi_ring_arm(&dev->ring))
		return 18;
	m.kind = XP_SDMA_READY;
	if (xp_send(wfd, &m, sizeof(m)))
		return 19;
	{
		struct pollfd p = { .fd = dev->wake_fd, .events = POLLIN };

		ret = poll(&p, 1, 10000) == 1 ? 0 : -ETIMEDOUT;
		kfab_hfi_wake_drain(dev);
	}
	if (xp_recv(rfd, &m, sizeof(m), XP_SDMA_DONE, 10000))
		return 20;
	/* byte exact: pattern at the offset, zero around it */
	m.ret = ret ? ret :
		!xp_check(tid_buf + XP_SDMA_OFF, m.a, 77) ? -EILSEQ : 0;
	for (size_t i = 0; !m.ret && i < XP_TID_BYTES; i++)
		if ((i < XP_SDMA_OFF || i >= XP_SDMA_OFF + m.a) && tid_buf[i])
			m.ret = -EILSEQ;
	if (kfab_hfi_tid_free(dev, tid) || !kfab_hfi_tid_free(dev, tid))
		m.ret = m.ret ? m.ret : -EBADE;
	if (xp_send(wfd, &m, sizeof(m)))
		return 21;
	/* SDMA out, into the parent's TID */
	if (xp_recv(rfd, &m, sizeof(m), XP_TID, 10000))
		return 22;
	src = malloc(300000);
	if (!src)
		return 23;
	xp_fill(src, 300000, 99);
	{
		struct iovec iov[2] = {
			{ src, 100000 }, { src + 100000, 200000 },
		};

		m.ret = kfab_hfi_sdma(dev, peer, m.a, 77, iov, 2, 0, &bytes);
		m.a = (uint32_t)bytes;
	}
	m.kind = XP_SDMA_BACK;
	if (xp_send(wfd, &m, sizeof(m)) ||
	    xp_recv(rfd, &m, sizeof(m), XP_BYE, 10000))
		return 24;
	free(src);
	free(tid_buf);
	kfab_hfi_close(dev);
	return 0;
}

static void xp_run(const struct xp_cfg *cfg, const char *name)
{
	int down[2], up[2], status = 0;
	struct kfab_hfi_dev *dev = NULL, *other = NULL;
	struct kfab_hfi_peer *peer = NULL, *p2;
	struct xp_msg m = { 0 }, hello;
	struct xp_tally t = { 0 };
	struct xp_hfi x;
	uint8_t *pl, uuid2[16];
	uint64_t bytes = 0;
	pid_t pid;
	int ret;

	if (!TAP_EQ(kfab_hfi_open(cfg->backend, cfg->unit_parent, &dev), 0,
		    "%s: open unit %u", name, cfg->unit_parent))
		return;
	if (!TAP_EQ(kfab_hfi_assign(dev, cfg->uuid, KFAB_HFI_PKEY_DEFAULT, 3), 0,
		    "%s: assign", name)) {
		kfab_hfi_close(dev);
		return;
	}
	if (pipe(down) || pipe(up)) {
		TAP_OK(0, "%s: pipes", name);
		kfab_hfi_close(dev);
		return;
	}
	pid = xp_fork(down, up);
	if (!pid)
		_exit(xp_child(cfg, down[0], up[1]));
	pl = malloc(65536);

	ret = xp_recv(up[0], &hello, sizeof(hello), XP_HELLO, 10000);
	if (!TAP_EQ(ret, 0, "%s: child assigned a context", name))
		goto out;
	TAP_EQ(hello.c, dev->info.jkey, "%s: same job, same jkey (%#x)", name,
	       dev->info.jkey);
	TAP_OK(hello.a != dev->info.lid || hello.b != dev->info.ctxt,
	       "%s: distinct contexts (lid %u ctxt %u, lid %u ctxt %u)", name,
	       dev->info.lid, dev->info.ctxt, hello.a, hello.b);
	m.kind = XP_PEER;
	m.a = dev->info.lid;
	m.b = dev->info.ctxt;
	xp_send(down[1], &m, sizeof(m));
	if (!TAP_EQ(kfab_hfi_map_peer(dev, hello.a, hello.b, &peer), 0,
		    "%s: map the child's context", name))
		goto out;
	TAP_OK(peer->handle != 0 && peer->ring.rhq_entries ==
	       dev->info.rhq_entries, "%s: peer handle and geometry", name);

	/* keys: another job of the same user, another partition */
	memcpy(uuid2, cfg->uuid, 16);
	uuid2[15] ^= 0x5a;
	if (!kfab_hfi_open(cfg->backend, cfg->unit_parent, &other) &&
	    !kfab_hfi_assign(other, uuid2, KFAB_HFI_PKEY_DEFAULT, 0)) {
		TAP_OK(other->info.jkey != dev->info.jkey,
		       "%s: another UUID, another jkey (%#x)", name,
		       other->info.jkey);
		TAP_EQ(kfab_hfi_map_peer(other, hello.a, hello.b, &p2), -EACCES,
		       "%s: MAP_PEER across UUIDs: EACCES", name);
		TAP_EQ(kfab_hfi_map_peer(dev, other->info.lid, other->info.ctxt,
					 &p2), -EACCES,
		       "%s: and the other way: EACCES", name);
	} else {
		TAP_OK(0, "%s: second context", name);
	}
	kfab_hfi_close(other);
	other = NULL;
	if (!kfab_hfi_open(cfg->backend, cfg->unit_parent, &other) &&
	    !kfab_hfi_assign(other, cfg->uuid, 0x8002, 0))
		TAP_EQ(kfab_hfi_map_peer(other, hello.a, hello.b, &p2), -EACCES,
		       "%s: MAP_PEER across pkeys: EACCES", name);
	else
		TAP_OK(0, "%s: context with pkey 0x8002", name);
	kfab_hfi_close(other);
	other = NULL;
	TAP_EQ(kfab_hfi_map_peer(dev, hello.a, 159, &p2), -ENOENT,
	       "%s: MAP_PEER of an unassigned context: ENOENT", name);
	TAP_EQ(kfab_hfi_map_peer(dev, 99, 0, &p2), -ENOENT,
	       "%s: MAP_PEER of an unknown LID: ENOENT", name);

	/* eager packets both ways, with wakeups */
	x = (struct xp_hfi){ .dev = dev, .peer = peer, .pl = pl };
	xp_stream(&xp_hfi_io, &x, XP_PACKETS, 10000, name, &t);
	TAP_EQ(t.sent, XP_PACKETS, "%s: %d packets sent (%u full, retried)",
	       name, XP_PACKETS, t.eagain);
	TAP_EQ(t.got, XP_PACKETS, "%s: %d echoes received (%u sleeps)", name,
	       XP_PACKETS, t.sleeps);
	TAP_EQ(t.bad, 0, "%s: echoes byte-exact and in order", name);

	/* SDMA into the child's TID buffer, waking it */
	ret = xp_recv(up[0], &m, sizeof(m), XP_SDMA_READY, 20000);
	if (!TAP_EQ(ret, 0, "%s: child armed for SDMA", name))
		goto out;
	{
		static uint8_t src[3][200000];
		struct iovec iov[3] = {
			{ src[0], 1 }, { src[1], 199999 }, { src[2], 123457 },
		};
		uint8_t *all = malloc(1 + 199999 + 123457);

		xp_fill(all, 1 + 199999 + 123457, 77);
		memcpy(src[0], all, 1);
		memcpy(src[1], all + 1, 199999);
		memcpy(src[2], all + 200000, 123457);
		free(all);
		ret = kfab_hfi_sdma(dev, peer, hello.d, XP_SDMA_OFF, iov, 3,
				    KFAB_HFI_SDMA_NOTIFY, &bytes);
		TAP_EQ(ret, 0, "%s: SDMA of 3 iovecs into the child's TID",
		       name);
		TAP_EQ(bytes, 1 + 199999 + 123457, "%s: SDMA bytes", name);
		TAP_EQ(kfab_hfi_sdma(dev, peer, hello.d, XP_TID_BYTES - 10,
				     iov, 3, 0, &bytes), -EINVAL,
		       "%s: SDMA beyond the TID buffer: EINVAL", name);
		TAP_EQ(kfab_hfi_sdma(dev, peer, hello.d + 0x100, 0, iov, 1, 0,
				     &bytes), -ENOENT,
		       "%s: SDMA to an unknown TID: ENOENT", name);
	}
	m.kind = XP_SDMA_DONE;
	m.a = 1 + 199999 + 123457;
	xp_send(down[1], &m, sizeof(m));
	ret = xp_recv(up[0], &m, sizeof(m), XP_SDMA_DONE, 20000);
	TAP_OK(!ret && !m.ret,
	       "%s: child woken by SDMA NOTIFY, TID bytes exact (%d)", name,
	       ret ? ret : m.ret);

	/* SDMA from the child into our TID */
	{
		uint8_t *buf = calloc(1, 400000);
		uint32_t tid = 0;
		bool exact = true;

		TAP_EQ(kfab_hfi_tid_update(dev, buf, 400000, &tid), 0,
		       "%s: TID_UPDATE", name);
		m.kind = XP_TID;
		m.a = tid;
		xp_send(down[1], &m, sizeof(m));
		ret = xp_recv(up[0], &m, sizeof(m), XP_SDMA_BACK, 20000);
		if (!ret && m.ret == -EPERM) {
			tap_skip("%s: child->parent SDMA not permitted here (EPERM)",
				 name);
		} else {
			TAP_OK(!ret && !m.ret && m.a == 300000,
			       "%s: child SDMA into our TID (%d, %u bytes)",
			       name, ret ? ret : m.ret, m.a);
			exact = xp_check(buf + 77, 300000, 99);
			for (size_t i = 0; i < 400000; i++)
				if ((i < 77 || i >= 300077) && buf[i])
					exact = false;
			TAP_OK(exact, "%s: our TID bytes exact", name);
		}
		kfab_hfi_tid_free(dev, tid);
		free(buf);
	}
	m.kind = XP_BYE;
	xp_send(down[1], &m, sizeof(m));
out:
	status = xp_reap(pid, 30000);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status),
	       "%s: child exited 0 (status %#x)", name, status);
	if (peer) {
		TAP_EQ(kfab_hfi_ring_dead(&peer->ring), 1,
		       "%s: released peer: dead word set", name);
		TAP_EQ(kfab_hfi_notify(dev, peer), -ECONNRESET,
		       "%s: NOTIFY to a released peer: ECONNRESET", name);
		TAP_EQ(kfab_hfi_unmap_peer(dev, peer), 0, "%s: UNMAP_PEER",
		       name);
		TAP_EQ(kfab_hfi_map_peer(dev, hello.a, hello.b, &p2), -ENOENT,
		       "%s: MAP_PEER of the released context: ENOENT", name);
	}
	close(down[1]);
	close(up[0]);
	free(pl);
	kfab_hfi_close(dev);
}

#endif /* KFAB_ULIB_HFI_XPROC_H */
