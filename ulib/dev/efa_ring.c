// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the SRD receive ring protocol of uapi/kfab_efa.h on C11 atomics.
 * Step names in the comments are those of the header's top comment; the
 * atomic views of the uapi's words are ring.h's.
 */
#include <errno.h>
#include <time.h>

#include "efa_ring.h"
#include "ring.h"

_Static_assert(sizeof(struct kfab_efa_rx_entry) == 128, "rx entry size");
_Static_assert(sizeof(struct kfab_efa_qp_ctrl) <= 4096, "ctrl page size");

#define PPM	1000000u

int kfab_efa_ring_init(struct kfab_efa_ring *ring,
		       struct kfab_efa_qp_ctrl *ctrl,
		       struct kfab_efa_rx_entry *entries, void *bufs,
		       uint32_t nentries, uint32_t mtu,
		       const struct kfab_efa_status *status)
{
	struct timespec ts = { 0 };

	if (!ctrl || !entries || !bufs || !kfab_pow2(nentries) || !mtu)
		return -EINVAL;
	timespec_get(&ts, TIME_UTC);
	*ring = (struct kfab_efa_ring){
		.ctrl = ctrl, .ring = entries, .bufs = bufs,
		.entries = nentries, .mtu = mtu, .status = status,
		.rng = (uint64_t)(uintptr_t)ring ^
		       ((uint64_t)ts.tv_sec * 1000000000u +
			(uint64_t)ts.tv_nsec),
	};
	return 0;
}

static inline uint8_t *slot_buf(const struct kfab_efa_ring *ring,
				uint32_t ticket)
{
	return ring->bufs + (size_t)(ticket & (ring->entries - 1)) * ring->mtu;
}

/* P. the posted-buffer words of the slot of @ticket, before posting it */
static void slot_set_ubuf(struct kfab_efa_ring *ring, uint32_t ticket,
			  const struct kfab_efa_ubuf *ub)
{
	struct kfab_efa_rx_entry *e = &ring->ring[ticket & (ring->entries - 1)];

	e->flags = 0;
	if (ub) {
		e->ubuf_addr = ub->addr;
		e->ubuf_rkey = ub->rkey;
		e->ubuf_len = ub->len;
	}
	atomic_store_explicit(A32(&e->ubuf_state),
			      ub ? KFAB_EFA_UBUF_POSTED : KFAB_EFA_UBUF_NONE,
			      memory_order_relaxed);
}

uint32_t kfab_efa_ring_post(struct kfab_efa_ring *ring, uint32_t n)
{
	/* the owner is the only writer of posted */
	uint32_t posted = atomic_load_explicit(A32(&ring->ctrl->posted),
					       memory_order_relaxed);
	uint32_t ahead = posted - ring->head;

	if (ahead >= ring->entries)
		return 0;
	if (n > ring->entries - ahead)
		n = ring->entries - ahead;
	for (uint32_t i = 0; i < n; i++)
		slot_set_ubuf(ring, posted + i, NULL);
	if (n)
		/* P. release: pairs with the sender's acquire of posted (1.) */
		atomic_store_explicit(A32(&ring->ctrl->posted), posted + n,
				      memory_order_release);
	return n;
}

int kfab_efa_ring_post_ubuf(struct kfab_efa_ring *ring,
			    const struct kfab_efa_ubuf *ub, uint32_t *ticket)
{
	uint32_t posted = atomic_load_explicit(A32(&ring->ctrl->posted),
					       memory_order_relaxed);

	if (posted - ring->head >= ring->entries)
		return -EAGAIN;
	slot_set_ubuf(ring, posted, ub);
	atomic_store_explicit(A32(&ring->ctrl->posted), posted + 1u,
			      memory_order_release);
	*ticket = posted;
	return 0;
}

uint32_t kfab_efa_ring_posted(const struct kfab_efa_ring *ring)
{
	return atomic_load_explicit(A32(&ring->ctrl->posted),
				    memory_order_relaxed) - ring->head;
}

/*
 * The injected-RNR draw: splitmix64 on a counter advanced atomically, so
 * that threads sharing one producer view each get their own draw.
 */
static bool inject_rnr(struct kfab_efa_ring *ring)
{
	uint32_t ppm;
	uint64_t x;

	if (!ring->status)
		return false;
	ppm = atomic_load_explicit((const _Atomic __u32 *)
				   &ring->status->rnr_inject_ppm,
				   memory_order_relaxed);
	if (!ppm)
		return false;
	x = __atomic_add_fetch(&ring->rng, 0x9e3779b97f4a7c15ULL,
			       __ATOMIC_RELAXED);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	x ^= x >> 31;
	/* uniform in [0, PPM) */
	return ((x >> 32) * PPM >> 32) < ppm;
}

bool kfab_efa_ring_take_armed(struct kfab_efa_ring *ring)
{
	return kfab_ring_take_armed(&ring->ctrl->armed);
}

int kfab_efa_ring_send(struct kfab_efa_ring *ring, const void *hdr,
		       size_t hdrlen, uint32_t imm,
		       const uint8_t src_gid[KFAB_EFA_GID_LEN],
		       uint32_t src_qpn, const void *payload, size_t len,
		       kfab_efa_ubuf_write_t write, void *arg)
{
	struct kfab_efa_qp_ctrl *ctrl = ring->ctrl;
	struct kfab_efa_rx_entry *e;
	__u32 cur, ustate = KFAB_EFA_UBUF_POSTED;
	uint32_t t, p, flags = 0;
	bool inject;

	if (hdrlen > KFAB_EFA_RX_HDR_BYTES || len > ring->mtu)
		return -EMSGSIZE;
	/* drawn once per packet, not once per lost CAS */
	inject = inject_rnr(ring);

	/* 1. take a ticket */
	cur = atomic_load_explicit(A32(&ctrl->tail), memory_order_relaxed);
	for (;;) {
		t = cur;
		/* acquire: pairs with the owner's release of posted (P.) */
		p = atomic_load_explicit(A32(&ctrl->posted),
					 memory_order_acquire);
		if ((int32_t)(p - t) <= 0) {
			atomic_fetch_add_explicit(A64(&ctrl->rnrs), 1,
						  memory_order_relaxed);
			return -EAGAIN;
		}
		if (inject) {
			atomic_fetch_add_explicit(A64(&ctrl->injected_rnrs), 1,
						  memory_order_relaxed);
			return -EAGAIN;
		}
		/* on failure cur is reloaded: start over from 1. */
		if (atomic_compare_exchange_weak_explicit(A32(&ctrl->tail),
							  &cur, t + 1u,
							  memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}

	/* 2. the payload, then the entry */
	e = &ring->ring[t & (ring->entries - 1)];
	if (atomic_load_explicit(A32(&e->ubuf_state), memory_order_relaxed) ==
	    KFAB_EFA_UBUF_POSTED &&
	    atomic_compare_exchange_strong_explicit(A32(&e->ubuf_state),
						    &ustate,
						    KFAB_EFA_UBUF_TAKEN,
						    memory_order_relaxed,
						    memory_order_relaxed) &&
	    write && len <= e->ubuf_len) {
		struct kfab_efa_ubuf ub = { e->ubuf_addr, e->ubuf_rkey,
					    e->ubuf_len };

		if (!write(arg, &ub, payload, len))
			flags = KFAB_EFA_RX_F_UBUF;
	}
	if (len && !flags)
		memcpy(slot_buf(ring, t), payload, len);
	e->flags = flags;
	e->len = (uint32_t)len;
	e->src_qpn = src_qpn;
	e->imm = imm;
	memcpy(e->src_gid, src_gid, KFAB_EFA_GID_LEN);
	kfab_ring_hdr_fill(e->hdr, KFAB_EFA_RX_HDR_BYTES, hdr, hdrlen);
	kfab_ring_publish(&e->seq, t);

	return kfab_efa_ring_take_armed(ring) ? KFAB_EFA_RING_NOTIFY : 0;
}

/* 4. the entry at the head, or NULL when it is not (yet) published */
static inline struct kfab_efa_rx_entry *
head_entry(const struct kfab_efa_ring *ring)
{
	struct kfab_efa_rx_entry *e =
		&ring->ring[ring->head & (ring->entries - 1)];

	return kfab_ring_published(&e->seq, ring->head) ? e : NULL;
}

int kfab_efa_ring_poll(struct kfab_efa_ring *ring,
		       struct kfab_efa_ring_entry *entry)
{
	struct kfab_efa_rx_entry *e = head_entry(ring);

	if (!e)
		return 0;
	entry->hdr = e->hdr;
	entry->ubuf = e->flags & KFAB_EFA_RX_F_UBUF;
	entry->len = kfab_ring_len(e->len, ring->mtu);
	entry->payload = entry->len && !entry->ubuf ?
			 slot_buf(ring, ring->head) : NULL;
	entry->src_qpn = e->src_qpn;
	entry->imm = e->imm;
	entry->src_gid = e->src_gid;
	entry->ticket = ring->head;
	return 1;
}

int kfab_efa_ring_release(struct kfab_efa_ring *ring)
{
	if (!head_entry(ring))
		return -EINVAL;
	ring->head += 1u;
	return 0;
}

bool kfab_efa_ring_arm(struct kfab_efa_ring *ring)
{
	kfab_ring_arm(&ring->ctrl->armed);
	return head_entry(ring) == NULL;
}

uint32_t kfab_efa_ring_dead(const struct kfab_efa_ring *ring)
{
	return kfab_ring_dead(&ring->ctrl->dead);
}
