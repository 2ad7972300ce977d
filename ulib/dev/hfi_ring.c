// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the receive queue protocol of uapi/kfab_hfi.h on C11 atomics.
 * Step numbers in the comments are those of the header's top comment;
 * the atomic views of the uapi's words are ring.h's.
 */
#include <errno.h>

#include "hfi_ring.h"
#include "ring.h"

_Static_assert(sizeof(struct kfab_hfi_rhq_entry) == 128, "rhq entry size");

static inline uint32_t lo32(uint64_t v)
{
	return (uint32_t)v;
}

static inline uint32_t hi32(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

int kfab_hfi_ring_init(struct kfab_hfi_ring *ring, struct kfab_hfi_ctrl *ctrl,
		       struct kfab_hfi_rhq_entry *rhq, void *eager,
		       uint32_t rhq_entries, uint32_t eager_count,
		       uint32_t eager_size)
{
	uint64_t h;

	if (!ctrl || !rhq || !eager || !kfab_pow2(rhq_entries) ||
	    !kfab_pow2(eager_count) || !eager_size)
		return -EINVAL;
	h = atomic_load_explicit(A64(&ctrl->head), memory_order_acquire);
	*ring = (struct kfab_hfi_ring){
		.ctrl = ctrl, .rhq = rhq, .eager = eager,
		.rhq_entries = rhq_entries, .eager_count = eager_count,
		.eager_size = eager_size, .rh = lo32(h), .eh = hi32(h),
	};
	return 0;
}

static inline uint8_t *eager_buf(const struct kfab_hfi_ring *ring,
				 uint32_t ticket)
{
	return ring->eager +
	       (size_t)(ticket & (ring->eager_count - 1)) * ring->eager_size;
}

bool kfab_hfi_ring_take_armed(struct kfab_hfi_ring *ring)
{
	return kfab_ring_take_armed(&ring->ctrl->armed);
}

int kfab_hfi_ring_send(struct kfab_hfi_ring *ring, const void *hdr,
		       size_t hdrlen, const void *payload, size_t len)
{
	struct kfab_hfi_ctrl *ctrl = ring->ctrl;
	struct kfab_hfi_rhq_entry *e;
	uint64_t t, h, nt;
	__u64 cur;

	if (hdrlen > KFAB_HFI_RHQ_HDR_BYTES || len > ring->eager_size)
		return -EMSGSIZE;

	/* 1. reserve the tickets */
	cur = atomic_load_explicit(A64(&ctrl->tail), memory_order_relaxed);
	for (;;) {
		t = cur;
		/* acquire: pairs with the consumer's release of head (5.) */
		h = atomic_load_explicit(A64(&ctrl->head),
					 memory_order_acquire);
		if (lo32(t) - lo32(h) >= ring->rhq_entries) {
			atomic_fetch_add_explicit(A64(&ctrl->rhq_full_drops), 1,
						  memory_order_relaxed);
			return -EAGAIN;
		}
		if (len && hi32(t) - hi32(h) >= ring->eager_count) {
			atomic_fetch_add_explicit(A64(&ctrl->eager_full_drops),
						  1, memory_order_relaxed);
			return -EAGAIN;
		}
		nt = (uint64_t)(hi32(t) + (len ? 1u : 0u)) << 32 |
		     (uint32_t)(lo32(t) + 1u);
		/* on failure cur is reloaded: start over from 1. */
		if (atomic_compare_exchange_weak_explicit(A64(&ctrl->tail),
							  &cur, nt,
							  memory_order_relaxed,
							  memory_order_relaxed))
			break;
	}

	/* 2. payload first, then the entry */
	if (len)
		memcpy(eager_buf(ring, hi32(t)), payload, len);
	e = &ring->rhq[lo32(t) & (ring->rhq_entries - 1)];
	e->eager_index = hi32(t);
	e->eager_len = (uint32_t)len;
	e->reserved = 0;
	kfab_ring_hdr_fill(e->hdr, KFAB_HFI_RHQ_HDR_BYTES, hdr, hdrlen);
	kfab_ring_publish(&e->seq, lo32(t));

	/* 4'. */
	return kfab_hfi_ring_take_armed(ring) ? KFAB_HFI_RING_NOTIFY : 0;
}

/* 4. the entry at rh, or NULL when it is not (yet) published */
static inline struct kfab_hfi_rhq_entry *
head_entry(const struct kfab_hfi_ring *ring)
{
	struct kfab_hfi_rhq_entry *e =
		&ring->rhq[ring->rh & (ring->rhq_entries - 1)];

	return kfab_ring_published(&e->seq, ring->rh) ? e : NULL;
}

int kfab_hfi_ring_poll(struct kfab_hfi_ring *ring,
		       struct kfab_hfi_ring_entry *entry)
{
	struct kfab_hfi_rhq_entry *e = head_entry(ring);

	if (!e)
		return 0;
	entry->hdr = e->hdr;
	entry->len = kfab_ring_len(e->eager_len, ring->eager_size);
	entry->payload = entry->len ? eager_buf(ring, e->eager_index) : NULL;
	entry->ticket = ring->rh;
	return 1;
}

int kfab_hfi_ring_release(struct kfab_hfi_ring *ring)
{
	struct kfab_hfi_rhq_entry *e = head_entry(ring);

	if (!e)
		return -EINVAL;
	/* 5. free the entry and, with a payload, its eager buffer */
	ring->rh += 1u;
	if (e->eager_len)
		ring->eh = e->eager_index + 1u;
	/* release: pairs with the producer's acquire of head (1.) */
	atomic_store_explicit(A64(&ring->ctrl->head),
			      (__u64)ring->eh << 32 | ring->rh,
			      memory_order_release);
	return 0;
}

bool kfab_hfi_ring_arm(struct kfab_hfi_ring *ring)
{
	kfab_ring_arm(&ring->ctrl->armed);
	return head_entry(ring) == NULL;
}

uint32_t kfab_hfi_ring_dead(const struct kfab_hfi_ring *ring)
{
	return kfab_ring_dead(&ring->ctrl->dead);
}
