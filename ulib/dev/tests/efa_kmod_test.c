// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the kmod EFA backend end to end, over /dev/kfab_efa0: the
 * device and its knobs, QPs, peers and their qkeys, the receive ring with
 * RNR, injected RNR, reordering and wakeups, device RDMA with its checks
 * and stale regions; then the two-process exchange of efa_xproc.h (the
 * same body efa_shm_test runs) with a child on /dev/kfab_efa1 (skipped
 * without it). The knob points need root and restore what they change.
 * Skips (exit 4) without the device.
 *
 *   scripts/vm-run -t 300 -- build/ulib-tests/efa_kmod_test
 */
#define _GNU_SOURCE
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
#include <sys/mman.h>
#include <sys/wait.h>

#include "dev/tests/efa_xproc.h"

#define RDMA_BYTES	(256u << 10)

/* fe80::6b66:6162:0:<N + 1>, as the module fixes it */
static void expected_gid(unsigned int device, uint8_t gid[KFAB_EFA_GID_LEN])
{
	static const uint8_t prefix[KFAB_EFA_GID_LEN - 1] = {
		0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0, 0, 0,
	};

	memcpy(gid, prefix, sizeof(prefix));
	gid[KFAB_EFA_GID_LEN - 1] = (uint8_t)(device + 1);
}

static uint64_t load64(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* The wake_fd is readable within @ms; drained. */
static bool woken(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp, int ms)
{
	struct pollfd p = { .fd = qp->wake_fd, .events = POLLIN };
	bool ret = poll(&p, 1, ms) == 1;

	kfab_efa_wake_drain(dev, qp);
	return ret;
}

/* The imm of the next packet of @qp, released and reposted; -1 if none. */
static int64_t next_imm(struct kfab_efa_qp *qp)
{
	struct kfab_efa_ring_entry e;
	int64_t imm;

	if (kfab_efa_ring_poll(&qp->ring, &e) != 1)
		return -1;
	imm = e.imm;
	kfab_efa_ring_release(&qp->ring);
	kfab_efa_ring_post(&qp->ring, 1);
	return imm;
}

static void test_open(void)
{
	struct kfab_efa_status st;
	struct kfab_efa_dev *dev, *none;
	uint8_t gid[KFAB_EFA_GID_LEN];

	if (!TAP_EQ(kfab_efa_open(KFAB_BACKEND_AUTO, 0, &dev), 0,
		    "auto: opens device 0"))
		return;
	expected_gid(0, gid);
	TAP_OK(!strcmp(dev->ops->name, "kmod"),
	       "auto: picks kmod when the device exists");
	TAP_EQ(dev->info.abi_version, KFAB_ABI_VERSION,
	       "QUERY_DEVICE: ABI %d", KFAB_ABI_VERSION);
	TAP_OK(dev->info.device == 0 && dev->device == 0 &&
	       !memcmp(dev->info.gid, gid, sizeof(gid)),
	       "QUERY_DEVICE: device 0 and its gid");
	TAP_OK(dev->info.rx_entries >= 16 &&
	       !(dev->info.rx_entries & (dev->info.rx_entries - 1)) &&
	       dev->info.mtu >= 4096 && dev->info.max_qps >= 1 &&
	       dev->info.max_mrs >= 1,
	       "QUERY_DEVICE: geometry (%u entries of %u bytes, %u QPs, %u MRs)",
	       dev->info.rx_entries, dev->info.mtu, dev->info.max_qps,
	       dev->info.max_mrs);
	TAP_OK(dev->status->abi_version == KFAB_ABI_VERSION &&
	       dev->status->device == 0 &&
	       !memcmp(dev->status->gid, gid, sizeof(gid)) &&
	       dev->status->mtu == dev->info.mtu,
	       "status page mapped: device 0, gid, mtu");
	TAP_OK(!kfab_efa_get_status(dev, &st) &&
	       !memcmp(&st, dev->status, sizeof(st)),
	       "get_status: the status page");
	TAP_OK(dev->mr_state && dev->mr_state[0] == KFAB_EFA_MR_STATE_FREE,
	       "MR state array mapped, all free");
	TAP_EQ(kfab_efa_open(KFAB_BACKEND_KMOD, 8, &none), -ENOENT,
	       "kmod: no device 8: ENOENT");
	TAP_OK(!none, "kmod: no device on failure");

	TAP_OK(!strcmp(kfab_efa_knob_name(KFAB_EFA_KNOB_DEVICE_RDMA),
		       "device_rdma") &&
	       !strcmp(kfab_efa_knob_name(KFAB_EFA_KNOB_RNR_INJECT_PPM),
		       "rnr_inject_ppm") &&
	       !kfab_efa_knob_name((enum kfab_efa_knob)99),
	       "knob names as in sysfs");
	TAP_OK(kfab_efa_knob_max(KFAB_EFA_KNOB_STATE) == 1 &&
	       kfab_efa_knob_max(KFAB_EFA_KNOB_DEVICE_RDMA) == 3 &&
	       kfab_efa_knob_max(KFAB_EFA_KNOB_RNR_RETRY) == 7 &&
	       kfab_efa_knob_max(KFAB_EFA_KNOB_REORDER_PPM) == 1000000,
	       "knob maxima");
	TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_RNR_RETRY, 8), -EINVAL,
	       "set_knob: rnr_retry 8: EINVAL");
	TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_DEVICE_RDMA, 4), -EINVAL,
	       "set_knob: device_rdma 4: EINVAL");
	TAP_EQ(kfab_efa_set_knob(dev, (enum kfab_efa_knob)99, 0), -EINVAL,
	       "set_knob: unknown knob: EINVAL");
	if (geteuid()) {
		TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_REORDER_PPM, 0),
		       -EACCES, "set_knob: not root: EACCES");
	} else {
		uint32_t old = dev->status->rnr_retry;

		TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_RNR_RETRY,
					 old == 3 ? 4 : 3), 0,
		       "set_knob: rnr_retry");
		TAP_EQ(dev->status->rnr_retry, old == 3 ? 4 : 3,
		       "set_knob: mirrored into the status page");
		TAP_EQ(kfab_efa_set_knob(dev, KFAB_EFA_KNOB_RNR_RETRY, old), 0,
		       "set_knob: rnr_retry restored");
	}
	kfab_efa_close(dev);
}

static void test_qps(void)
{
	struct kfab_efa_qp *a = NULL, *b = NULL;
	struct kfab_efa_dev *dev;

	if (!TAP_EQ(kfab_efa_open(KFAB_BACKEND_KMOD, 0, &dev), 0,
		    "qps: open"))
		return;
	if (!TAP_EQ(kfab_efa_create_qp(dev, &a), 0, "qps: create a QP") ||
	    !TAP_EQ(kfab_efa_create_qp(dev, &b), 0, "qps: and another"))
		goto out;
	TAP_OK(a->addr.qpn && b->addr.qpn && a->addr.qpn != b->addr.qpn &&
	       a->addr.qkey && b->addr.qkey &&
	       !memcmp(a->addr.gid, dev->info.gid, KFAB_EFA_GID_LEN),
	       "qps: distinct qpns %u and %u, qkeys, gid", a->addr.qpn,
	       b->addr.qpn);
	TAP_OK(a->ring.entries == dev->info.rx_entries &&
	       a->ring.mtu == dev->info.mtu && a->ring.ctrl && a->ring.ring &&
	       a->ring.bufs && !a->ring.status,
	       "qps: owner's ring mapped with the device geometry");
	TAP_OK(a->wake_fd >= 0 && b->wake_fd >= 0 && a->wake_fd != b->wake_fd,
	       "qps: a wake_fd each");
	TAP_OK(kfab_efa_ring_posted(&a->ring) == 0 &&
	       !kfab_efa_ring_dead(&a->ring), "qps: nothing posted, alive");
	TAP_OK(dev->qps == b && b->next == a && !a->next,
	       "qps: on the device's list");
	TAP_EQ(kfab_efa_destroy_qp(dev, a), 0, "qps: destroy the first");
	TAP_OK(dev->qps == b && !b->next, "qps: off the list");
	TAP_EQ(kfab_efa_destroy_qp(dev, b), 0, "qps: destroy the second");
	TAP_OK(!dev->qps, "qps: list empty");
	b = NULL;
	TAP_EQ(kfab_efa_create_qp(dev, &b), 0,
	       "qps: one more, left for close");
out:
	kfab_efa_close(dev);
}

/* Knob @knob to @value, root only; false (skipped) otherwise. */
static bool knob_set(struct kfab_efa_dev *dev, enum kfab_efa_knob knob,
		     uint32_t value)
{
	if (geteuid()) {
		tap_skip("%s %u: needs root", kfab_efa_knob_name(knob), value);
		return false;
	}
	return TAP_EQ(kfab_efa_set_knob(dev, knob, value), 0, "%s %u",
		      kfab_efa_knob_name(knob), value);
}

static void test_reorder(struct kfab_efa_dev *dev, struct kfab_efa_qp *rx,
			 struct kfab_efa_qp *tx, struct kfab_efa_peer *peer,
			 uint8_t *pl)
{
	int64_t order[4];
	bool sent = true;

	if (!knob_set(dev, KFAB_EFA_KNOB_REORDER_PPM, KFAB_EFA_KNOB_MAX))
		return;
	for (uint32_t i = 0; i < 4; i++)
		sent &= !xp_efa_send_pkt(dev, tx, peer, i, pl);
	for (int i = 0; i < 4; i++)
		order[i] = next_imm(rx);
	TAP_OK(sent && order[0] == xp_efa_imm(1) && order[1] == xp_efa_imm(0) &&
	       order[2] == xp_efa_imm(3) && order[3] == xp_efa_imm(2),
	       "reorder_ppm 1000000: every other packet after the next one");
	TAP_EQ(next_imm(rx), -1, "reorder: nothing else arrived");
	TAP_OK(!xp_efa_send_pkt(dev, tx, peer, 4, pl) && peer->held &&
	       next_imm(rx) == -1, "reorder: a lone packet is held back");
	TAP_EQ(kfab_efa_peer_flush(dev, peer), 0, "reorder: flush sends it");
	TAP_OK(!peer->held && next_imm(rx) == xp_efa_imm(4),
	       "reorder: the held packet arrived");
	TAP_EQ(kfab_efa_peer_flush(dev, peer), 0,
	       "reorder: flush with nothing held");
	TAP_OK(!xp_efa_send_pkt(dev, tx, peer, 5, pl) && peer->held,
	       "reorder: one more held, dropped by unmap_peer");
	knob_set(dev, KFAB_EFA_KNOB_REORDER_PPM, 0);
}

static void test_inject(struct kfab_efa_dev *dev, struct kfab_efa_qp *rx,
			struct kfab_efa_qp *tx, struct kfab_efa_peer *peer,
			uint8_t *pl)
{
	uint64_t inj = load64(&rx->ring.ctrl->injected_rnrs);
	uint64_t rnrs = load64(&rx->ring.ctrl->rnrs);

	if (!knob_set(dev, KFAB_EFA_KNOB_RNR_INJECT_PPM, KFAB_EFA_KNOB_MAX))
		return;
	TAP_EQ(xp_efa_send_pkt(dev, tx, peer, 6, pl), -EAGAIN,
	       "rnr_inject_ppm 1000000: EAGAIN with buffers posted");
	TAP_OK(load64(&rx->ring.ctrl->injected_rnrs) == inj + 1 &&
	       load64(&rx->ring.ctrl->rnrs) == rnrs,
	       "rnr_inject_ppm: counted in injected_rnrs only");
	knob_set(dev, KFAB_EFA_KNOB_RNR_INJECT_PPM, 0);
	TAP_OK(!xp_efa_send_pkt(dev, tx, peer, 6, pl) && next_imm(rx) == xp_efa_imm(6),
	       "rnr_inject_ppm 0: sends again");
}

/* One file: a QP receiving, another sending through a peer of the first. */
static void test_local(void)
{
	struct kfab_efa_qp *rx = NULL, *tx = NULL;
	struct kfab_efa_peer *peer = NULL, *p2;
	struct kfab_efa_ring_entry e;
	struct kfab_efa_addr bad;
	struct kfab_efa_dev *dev;
	uint8_t hdr[KFAB_EFA_RX_HDR_BYTES], *pl = NULL;
	uint64_t rnrs;

	if (!TAP_EQ(kfab_efa_open(KFAB_BACKEND_KMOD, 0, &dev), 0,
		    "local: open"))
		return;
	if (kfab_efa_create_qp(dev, &rx) || kfab_efa_create_qp(dev, &tx)) {
		TAP_OK(0, "local: two QPs");
		goto out;
	}
	pl = malloc(dev->info.mtu + 1);
	bad = rx->addr;
	bad.qkey = ~bad.qkey;
	TAP_EQ(kfab_efa_map_peer(dev, &bad, &p2), -EACCES,
	       "map_peer: wrong qkey: EACCES");
	bad = rx->addr;
	bad.qpn = 0;
	TAP_EQ(kfab_efa_map_peer(dev, &bad, &p2), -ENOENT,
	       "map_peer: no such QP: ENOENT");
	bad = rx->addr;
	bad.gid[KFAB_EFA_GID_LEN - 1] = 0x7f;
	TAP_EQ(kfab_efa_map_peer(dev, &bad, &p2), -ENOENT,
	       "map_peer: no such device: ENOENT");
	if (!TAP_EQ(kfab_efa_map_peer(dev, &rx->addr, &peer), 0,
		    "map_peer: right qkey"))
		goto out;
	TAP_OK(peer->handle && dev->peers == peer &&
	       peer->ring.entries == rx->ring.entries &&
	       peer->ring.mtu == rx->ring.mtu && peer->status &&
	       peer->ring.status == peer->status &&
	       peer->status->device == 0 && !peer->held,
	       "map_peer: handle, geometry, the peer device's status page");
	TAP_OK(!kfab_efa_peer_gone(dev, peer), "map_peer: peer not gone");

	rnrs = load64(&rx->ring.ctrl->rnrs);
	TAP_EQ(xp_efa_send_pkt(dev, tx, peer, 0, pl), -EAGAIN,
	       "RNR: nothing posted: EAGAIN");
	TAP_EQ(load64(&rx->ring.ctrl->rnrs), rnrs + 1, "RNR: counted in rnrs");
	TAP_EQ(kfab_efa_ring_poll(&rx->ring, &e), 0, "RNR: nothing arrived");

	TAP_EQ(kfab_efa_ring_post(&rx->ring, UINT32_MAX), rx->ring.entries,
	       "post every buffer");
	TAP_EQ(xp_efa_send_pkt(dev, tx, peer, 2, pl), 0, "send a full-mtu packet");
	TAP_OK(kfab_efa_ring_poll(&rx->ring, &e) == 1 &&
	       xp_efa_pkt_ok(&e, 2, dev->info.mtu, dev->info.gid, tx->addr.qpn),
	       "received: hdr, imm, payload, src gid and qpn exact");
	kfab_efa_ring_release(&rx->ring);
	kfab_efa_ring_post(&rx->ring, 1);
	xp_fill(hdr, sizeof(hdr), 1);
	TAP_EQ(kfab_efa_peer_send(dev, tx, peer, hdr, sizeof(hdr) + 1, 0, pl,
				  1), -EMSGSIZE, "header too big: EMSGSIZE");
	TAP_EQ(kfab_efa_peer_send(dev, tx, peer, hdr, sizeof(hdr), 0, pl,
				  dev->info.mtu + 1), -EMSGSIZE,
	       "payload too big: EMSGSIZE");

	TAP_OK(kfab_efa_ring_arm(&rx->ring), "wake: armed on an empty ring");
	TAP_EQ(xp_efa_send_pkt(dev, tx, peer, 3, pl), 0, "wake: send notifies");
	TAP_OK(woken(dev, rx, 5000) && next_imm(rx) == xp_efa_imm(3),
	       "wake: wake_fd readable, the packet there");
	TAP_OK(!woken(dev, rx, 0), "wake: drained");

	test_inject(dev, rx, tx, peer, pl);
	test_reorder(dev, rx, tx, peer, pl);
out:
	free(pl);
	kfab_efa_close(dev);
}

static void test_device_rdma(struct kfab_efa_dev *dev,
			     struct kfab_efa_peer *peer,
			     const struct kfab_efa_mr *mr, uint8_t *local)
{
	uint32_t old = dev->status->device_rdma;
	struct iovec iov = { local, 100 };
	uint64_t bytes;

	if (!knob_set(dev, KFAB_EFA_KNOB_DEVICE_RDMA, 0))
		return;
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr->rkey,
			     (uintptr_t)mr->addr, &iov, 1, 0, &bytes),
	       -EOPNOTSUPP, "device_rdma none: write EOPNOTSUPP");
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr->rkey,
			     (uintptr_t)mr->addr, &iov, 1, 0, &bytes),
	       -EOPNOTSUPP, "device_rdma none: read EOPNOTSUPP");
	knob_set(dev, KFAB_EFA_KNOB_DEVICE_RDMA, KFAB_EFA_RDMA_CAP_READ);
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr->rkey,
			     (uintptr_t)mr->addr, &iov, 1, 0, &bytes),
	       -EOPNOTSUPP, "device_rdma read: write EOPNOTSUPP");
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr->rkey,
			     (uintptr_t)mr->addr, &iov, 1, 0, &bytes), 0,
	       "device_rdma read: read works");
	knob_set(dev, KFAB_EFA_KNOB_DEVICE_RDMA, old);
}

static void test_stale(struct kfab_efa_dev *owner, struct kfab_efa_dev *dev,
		       struct kfab_efa_peer *peer, uint8_t *local)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct iovec iov = { local, 10 };
	struct kfab_efa_mr mr;
	uint64_t bytes;
	uint8_t *buf = xp_anon(3 * pg);

	if (!buf || kfab_efa_reg_mr(owner, buf, 3 * pg, KFAB_EFA_ACCESS_ALL,
				    &mr)) {
		TAP_OK(0, "stale: register 3 pages");
		return;
	}
	TAP_OK(kfab_efa_mr_valid(owner, &mr), "stale: valid once registered");
	munmap(buf + pg, pg);
	TAP_OK(!kfab_efa_mr_valid(owner, &mr),
	       "stale: invalid once a page is unmapped");
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr.rkey,
			     (uintptr_t)buf, &iov, 1, 0, &bytes), -ESTALE,
	       "stale: RDMA write ESTALE");
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr.rkey,
			     (uintptr_t)buf + 2 * pg, &iov, 1, 0, &bytes),
	       -ESTALE, "stale: RDMA read ESTALE");
	TAP_EQ(kfab_efa_dereg_mr(owner, &mr), 0, "stale: deregisters");
	munmap(buf, pg);
	munmap(buf + 2 * pg, pg);
}

/*
 * The region's owner on device 1 (or 0), the RDMA issuer on device 0 with
 * a peer of the owner's QP: RDMA into a region of the peer QP's file.
 */
static void test_rdma(void)
{
	struct kfab_efa_dev *owner = NULL, *dev = NULL;
	struct kfab_efa_mr mr, ro;
	struct kfab_efa_peer *peer;
	struct kfab_efa_qp *qp;
	uint8_t *region, *src, *dst;
	uint64_t bytes = 0;
	bool exact;

	region = xp_anon(RDMA_BYTES);
	src = malloc(RDMA_BYTES);
	dst = calloc(1, RDMA_BYTES);
	if (!region || !src || !dst ||
	    kfab_efa_open(KFAB_BACKEND_KMOD, kfab_efa_kmod_present(1),
			  &owner) ||
	    kfab_efa_open(KFAB_BACKEND_KMOD, 0, &dev) ||
	    kfab_efa_create_qp(owner, &qp) ||
	    kfab_efa_map_peer(dev, &qp->addr, &peer)) {
		TAP_OK(0, "rdma: two files, a QP and a peer of it");
		goto out;
	}
	if (!TAP_EQ(kfab_efa_reg_mr(owner, region, RDMA_BYTES,
				    KFAB_EFA_ACCESS_ALL, &mr), 0,
		    "rdma: reg_mr, all access") ||
	    !TAP_EQ(kfab_efa_reg_mr(owner, region + 4096, 4096,
				    KFAB_EFA_ACCESS_REMOTE_READ, &ro), 0,
		    "rdma: reg_mr, remote read only"))
		goto out;
	TAP_OK(mr.lkey && mr.rkey && mr.addr == region &&
	       mr.len == RDMA_BYTES && mr.access == KFAB_EFA_ACCESS_ALL &&
	       ro.rkey != mr.rkey && kfab_efa_mr_valid(owner, &mr),
	       "rdma: keys, state word valid");
	xp_fill(src, RDMA_BYTES, 7);
	{
		struct iovec iov[2] = {
			{ src, 1 }, { src + 1, 100000 },
		};

		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr.rkey,
				     (uintptr_t)region + 333, iov, 2, 0,
				     &bytes), 0, "rdma: write of 2 iovecs");
		TAP_EQ(bytes, 100001, "rdma: write bytes");
	}
	exact = xp_check(region + 333, 100001, 7) && xp_all(region, 333, 0) &&
		xp_all(region + 333 + 100001, RDMA_BYTES - 333 - 100001, 0);
	TAP_OK(exact, "rdma: the region byte-exact");
	xp_fill(region + 200000, 50000, 9);
	{
		struct iovec iov[3] = {
			{ dst, 10 }, { dst + 100, 30000 }, { dst + 40000, 19990 },
		};

		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr.rkey,
				     (uintptr_t)region + 200000, iov, 3, 0,
				     &bytes), 0, "rdma: read into 3 iovecs");
		TAP_EQ(bytes, 50000, "rdma: read bytes");
		memmove(dst + 10, dst + 100, 30000);
		memmove(dst + 30010, dst + 40000, 19990);
		TAP_OK(xp_check(dst, 50000, 9), "rdma: read byte-exact");
	}
	{
		struct iovec iov = { src, 20 };

		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE,
				     mr.rkey + 1, (uintptr_t)region, &iov, 1,
				     0, &bytes), -EACCES,
		       "rdma: wrong rkey: EACCES");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr.rkey,
				     (uintptr_t)region + RDMA_BYTES - 10, &iov,
				     1, 0, &bytes), -EINVAL,
		       "rdma: beyond the region: EINVAL");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr.rkey,
				     (uintptr_t)region - 1, &iov, 1, 0,
				     &bytes), -EINVAL,
		       "rdma: before the region: EINVAL");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, ro.rkey,
				     (uintptr_t)region + 4096, &iov, 1, 0,
				     &bytes), -EACCES,
		       "rdma: write without remote write access: EACCES");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, ro.rkey,
				     (uintptr_t)region + 4096, &iov, 1, 0,
				     &bytes), 0,
		       "rdma: read with remote read access");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, mr.rkey,
				     (uintptr_t)region, &iov, 0, 0, &bytes),
		       -EINVAL, "rdma: no iovec: EINVAL");
		TAP_OK(kfab_efa_ring_arm(&qp->ring), "rdma: owner armed");
		TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_WRITE, mr.rkey,
				     (uintptr_t)region, &iov, 1,
				     KFAB_EFA_RDMA_NOTIFY, &bytes), 0,
		       "rdma: write with NOTIFY");
		TAP_OK(woken(owner, qp, 5000), "rdma: NOTIFY woke the owner");
	}
	test_device_rdma(dev, peer, &mr, dst);
	test_stale(owner, dev, peer, dst);
	TAP_EQ(kfab_efa_dereg_mr(owner, &ro), 0, "rdma: dereg_mr");
	TAP_EQ(kfab_efa_dereg_mr(owner, &ro), -EINVAL,
	       "rdma: dereg_mr twice: EINVAL");
	TAP_EQ(kfab_efa_rdma(dev, peer, KFAB_EFA_RDMA_READ, ro.rkey,
			   (uintptr_t)region + 4096, &(struct iovec){ dst, 1 },
			   1, 0, &bytes), -EACCES,
	       "rdma: deregistered rkey: EACCES");
out:
	kfab_efa_close(dev);
	kfab_efa_close(owner);
	if (region)
		munmap(region, RDMA_BYTES);
	free(src);
	free(dst);
}

/* The two-process exchange of efa_xproc.h, from device 0 to device 1. */
static void test_xproc(void)
{
	const struct xp_efa_cfg cfg = { KFAB_BACKEND_KMOD, 2000, NULL };

	if (!kfab_efa_kmod_present(1)) {
		tap_skip("xproc: no /dev/kfab_efa1 for the child");
		return;
	}
	xp_efa_run(&cfg);
}

int main(void)
{
	tap_start("libkfab: kmod EFA backend");
	if (!kfab_efa_kmod_present(0))
		tap_skip_all("/dev/kfab_efa0 absent: kfab_efa is not loaded");
	kfab_log_set(xp_log);
	/* xp_send() into a child gone: EPIPE, not the end of the test */
	signal(SIGPIPE, SIG_IGN);
	alarm(300);

	test_open();
	test_qps();
	test_local();
	test_rdma();
	test_xproc();
	return tap_done();
}
