// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what both EFA backends share: backend selection, the knobs,
 * mapping a QP's queues, the device's QP and peer lists, and sending into
 * a peer with its reordering and wakeup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efa_dev.h"
#include "ring.h"
#include "backend_kmod.h"

void kfab_efa_ring_parts(uint32_t entries, uint32_t mtu,
			 struct kfab_ring_parts *p)
{
	kfab_ring_size(p, entries, sizeof(struct kfab_efa_rx_entry), entries,
		       mtu);
}

void kfab_efa_unmap_ring(struct kfab_efa_ring *ring)
{
	struct kfab_ring_parts p;

	kfab_efa_ring_parts(ring->entries, ring->mtu, &p);
	kfab_ring_unmap((void *[3]){ ring->ctrl, ring->ring, ring->bufs },
			p.len);
	*ring = (struct kfab_efa_ring){ 0 };
}

int kfab_efa_map_ring(int fd, uint64_t ctrl_off, uint64_t ring_off,
		      uint64_t bufs_off, uint32_t entries, uint32_t mtu,
		      const struct kfab_efa_status *status,
		      struct kfab_efa_ring *ring)
{
	struct kfab_ring_parts p = { .off = { ctrl_off, ring_off, bufs_off } };
	void *m[3];
	int ret;

	kfab_efa_ring_parts(entries, mtu, &p);
	ret = kfab_ring_map(fd, &p, m);
	if (!ret && kfab_efa_ring_init(ring, m[0], m[1], m[2], entries, mtu,
				       status)) {
		kfab_ring_unmap(m, p.len);
		ret = kfab_log_err(-EINVAL, "bad queue geometry: %u entries of %u bytes",
				   entries, mtu);
	}
	return ret;
}

bool kfab_efa_kmod_present(unsigned int device)
{
	return kfab_kmod_present("efa", device);
}

int kfab_efa_open(enum kfab_backend backend, unsigned int device,
		  struct kfab_efa_dev **dev)
{
	int ret = kfab_backend_resolve(&backend, "efa", device);

	*dev = NULL;
	if (ret)
		return ret;
	if (backend == KFAB_BACKEND_KMOD)
		return kfab_efa_kmod_open(device, dev);
	return kfab_efa_shm_open(device, dev);
}

int kfab_efa_qp_unlink(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	if (KFAB_LIST_UNLINK(&dev->qps, qp))
		return kfab_log_err(-EINVAL,
				    "efa%u: QP %p is not one of this device",
				    dev->device, (void *)qp);
	return 0;
}

/* The knobs by enum kfab_efa_knob: sysfs name, largest value, default. */
static const struct {
	const char *name;
	uint32_t max;
	uint32_t dflt;		/* the kfab_efa module's on a new device */
} efa_knobs[KFAB_EFA_NKNOBS] = {
	[KFAB_EFA_KNOB_STATE] = {
		"state", KFAB_EFA_STATE_ACTIVE, KFAB_EFA_STATE_ACTIVE,
	},
	[KFAB_EFA_KNOB_DEVICE_RDMA] = {
		"device_rdma",
		KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE,
		KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE,
	},
	[KFAB_EFA_KNOB_RNR_RETRY] = { "rnr_retry", KFAB_EFA_RNR_RETRY_MAX, 3 },
	[KFAB_EFA_KNOB_RNR_INJECT_PPM] = {
		"rnr_inject_ppm", KFAB_EFA_KNOB_MAX, 0,
	},
	[KFAB_EFA_KNOB_REORDER_PPM] = { "reorder_ppm", KFAB_EFA_KNOB_MAX, 0 },
	[KFAB_EFA_KNOB_LINK_RATE_MBPS] = {
		"link_rate_mbps", KFAB_EFA_KNOB_MAX, 0,
	},
};

static bool efa_knob_known(enum kfab_efa_knob knob)
{
	return (unsigned int)knob < KFAB_EFA_NKNOBS;
}

const char *kfab_efa_knob_name(enum kfab_efa_knob knob)
{
	return efa_knob_known(knob) ? efa_knobs[knob].name : NULL;
}

uint32_t kfab_efa_knob_max(enum kfab_efa_knob knob)
{
	return efa_knob_known(knob) ? efa_knobs[knob].max : 0;
}

uint32_t kfab_efa_knob_default(enum kfab_efa_knob knob)
{
	return efa_knob_known(knob) ? efa_knobs[knob].dflt : 0;
}

const char *kfab_efa_knob_word(enum kfab_efa_knob knob, uint32_t value)
{
	/* device_rdma, indexed by the KFAB_EFA_RDMA_CAP_* bits */
	static const char *const rdma[] = {
		"none", "read", "write", "read write",
	};

	if (knob == KFAB_EFA_KNOB_STATE)
		return kfab_state_word(value);
	if (knob == KFAB_EFA_KNOB_DEVICE_RDMA)
		return value < sizeof(rdma) / sizeof(rdma[0]) ? rdma[value] :
								NULL;
	return NULL;
}

int kfab_efa_reset_knobs(struct kfab_efa_dev *dev)
{
	int ret = 0;

	for (int k = 0; k < KFAB_EFA_NKNOBS && !ret; k++)
		ret = kfab_efa_set_knob(dev, (enum kfab_efa_knob)k,
					kfab_efa_knob_default((enum kfab_efa_knob)k));
	return ret;
}

int kfab_efa_knob_check(const struct kfab_efa_dev *dev,
			enum kfab_efa_knob knob, uint32_t value)
{
	return kfab_knob_check("efa", dev->device, (int)knob,
			       kfab_efa_knob_name(knob),
			       kfab_efa_knob_max(knob), value);
}

/*
 * splitmix64 of the peer, seeded on first use: sends into one peer are
 * serialized already (the held packet is the peer's), so the state needs
 * neither a lock nor a thread-local (whose teardown LeakSanitizer of GCC
 * 12 trips over at exit).
 */
static uint32_t reorder_draw(struct kfab_efa_peer *peer)
{
	uint64_t z;

	if (!peer->draw) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		peer->draw = ((uint64_t)ts.tv_sec << 32) ^
			     (uint64_t)ts.tv_nsec ^
			     ((uint64_t)getpid() << 16) ^ (uintptr_t)peer;
	}
	z = (peer->draw += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)((z ^ (z >> 31)) % KFAB_EFA_KNOB_MAX);
}

static int peer_hold(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp,
		     struct kfab_efa_peer *peer, const void *hdr,
		     size_t hdrlen, uint32_t imm, const void *payload,
		     size_t len)
{
	if (hdrlen > KFAB_EFA_RX_HDR_BYTES || len > peer->ring.mtu)
		return -EMSGSIZE;
	if (!peer->held_buf) {
		peer->held_buf = malloc(peer->ring.mtu);
		if (!peer->held_buf)
			return kfab_log_err(-ENOMEM,
					    "efa%u: buffer to hold a packet for QP %u",
					    dev->device, peer->addr.qpn);
	}
	if (hdrlen)
		memcpy(peer->held_hdr, hdr, hdrlen);
	if (len)
		memcpy(peer->held_buf, payload, len);
	peer->held_hdrlen = (uint32_t)hdrlen;
	peer->held_len = (uint32_t)len;
	peer->held_imm = imm;
	peer->held_src_qpn = qp->addr.qpn;
	peer->held = true;
	return 0;
}

struct ubuf_dest {
	struct kfab_efa_dev *dev;
	struct kfab_efa_peer *peer;
};

/* The payload into a buffer the owner posted with the slot: device RDMA. */
static int ubuf_write(void *arg, const struct kfab_efa_ubuf *ub,
		      const void *payload, size_t len)
{
	struct ubuf_dest *d = arg;
	struct iovec iov = { (void *)payload, len };
	uint64_t bytes;

	return kfab_efa_rdma(d->dev, d->peer, KFAB_EFA_RDMA_WRITE, ub->rkey,
			     ub->addr, &iov, 1, 0, &bytes);
}

/* The held packet into the ring: as kfab_efa_ring_send(); sent unless < 0. */
static int peer_send_held(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer)
{
	struct ubuf_dest d = { dev, peer };
	int ret = kfab_efa_ring_send(&peer->ring, peer->held_hdr,
				     peer->held_hdrlen, peer->held_imm,
				     dev->info.gid, peer->held_src_qpn,
				     peer->held_buf, peer->held_len,
				     ubuf_write, &d);

	if (ret >= 0)
		peer->held = false;
	return ret;
}

int kfab_efa_peer_send(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp,
		       struct kfab_efa_peer *peer, const void *hdr,
		       size_t hdrlen, uint32_t imm, const void *payload,
		       size_t len)
{
	uint32_t ppm = peer->status ?
		__atomic_load_n(&peer->status->reorder_ppm, __ATOMIC_RELAXED) :
		0;
	struct ubuf_dest d = { dev, peer };
	int ret;

	if (kfab_efa_link_down(dev, peer))
		return -ENETDOWN;
	if (ppm && !peer->held && reorder_draw(peer) < ppm)
		return peer_hold(dev, qp, peer, hdr, hdrlen, imm, payload, len);
	ret = kfab_efa_ring_send(&peer->ring, hdr, hdrlen, imm, dev->info.gid,
				 qp->addr.qpn, payload, len, ubuf_write, &d);
	if (ret < 0)
		return ret;
	/* one the receiver has no buffer for (-EAGAIN) stays held */
	if (peer->held && peer_send_held(dev, peer) == KFAB_EFA_RING_NOTIFY)
		ret = KFAB_EFA_RING_NOTIFY;
	return ret == KFAB_EFA_RING_NOTIFY ? kfab_efa_notify(dev, peer) : 0;
}

void kfab_efa_peer_release(const struct kfab_efa_dev *dev,
			   struct kfab_efa_peer *peer)
{
	if (peer->held)
		kfab_log(KFAB_LOG_DEBUG,
			 "efa%u: QP %u unmapped with a packet held back: dropped",
			 dev->device, peer->addr.qpn);
	peer->held = false;
	free(peer->held_buf);
	peer->held_buf = NULL;
}

int kfab_efa_peer_flush(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer)
{
	int ret;

	if (!peer->held)
		return 0;
	ret = peer_send_held(dev, peer);
	if (ret < 0)
		return ret;
	return ret == KFAB_EFA_RING_NOTIFY ? kfab_efa_notify(dev, peer) : 0;
}
