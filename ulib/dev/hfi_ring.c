// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the receive queue protocol of uapi/kfab_hfi.h on C11 atomics.
 * Step numbers in the comments are those of the header's top comment.
 *
 * The shared words are plain __u64/__u32 in the uapi (the kernel uses its
 * own accessors on them); we access them through _Atomic views of the same
 * size and alignment, lock-free on every architecture kfab supports.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "hfi_ring.h"

_Static_assert(sizeof(_Atomic __u64) == sizeof(__u64), "atomic u64 size");
_Static_assert(sizeof(_Atomic __u32) == sizeof(__u32), "atomic u32 size");
_Static_assert(sizeof(struct kfab_hfi_rhq_entry) == 128, "rhq entry size");

#define A64(p)	((_Atomic __u64 *)(p))
#define A32(p)	((_Atomic __u32 *)(p))

static inline uint32_t lo32(uint64_t v)
{
	return (uint32_t)v;
}

static inline uint32_t hi32(uint64_t v)
{
	return (uint32_t)(v >> 32);
}

static inline bool pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

int kfab_hfi_ring_init(struct kfab_hfi_ring *ring, struct kfab_hfi_ctrl *ctrl,
		       struct kfab_hfi_rhq_entry *rhq, void *eager,
		       uint32_t rhq_entries, uint32_t eager_count,
		       uint32_t eager_size)
{
	uint64_t h;

	if (!ctrl || !rhq || !eager || !pow2(rhq_entries) ||
	    !pow2(eager_count) || !eager_size)
		return -EINVAL;
	ring->ctrl = ctrl;
	ring->rhq = rhq;
	ring->eager = eager;
	ring->rhq_entries = rhq_entries;
	ring->eager_count = eager_count;
	ring->eager_size = eager_size;
	h = atomic_load_explicit(A64(&ctrl->head), memory_order_acquire);
	ring->rh = lo32(h);
	ring->eh = hi32(h);
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
	_Atomic __u32 *armed = A32(&ring->ctrl->armed);

	/* 4'. full fence: pairs with the consumer's fence after arming (6.) */
	atomic_thread_fence(memory_order_seq_cst);
	/* plain load first: a polling consumer's line is not dirtied */
	return atomic_load_explicit(armed, memory_order_relaxed) &&
	       atomic_exchange_explicit(armed, 0, memory_order_relaxed) == 1;
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
	if (hdrlen)
		memcpy(e->hdr, hdr, hdrlen);
	memset(e->hdr + hdrlen, 0, KFAB_HFI_RHQ_HDR_BYTES - hdrlen);

	/* 3. publish: pairs with the consumer's acquire of seq (4.) */
	atomic_store_explicit(A32(&e->seq), lo32(t) + 1u, memory_order_release);

	/* 4'. */
	return kfab_hfi_ring_take_armed(ring) ? KFAB_HFI_RING_NOTIFY : 0;
}

/* 4. the entry at rh, or NULL when it is not (yet) published */
static inline struct kfab_hfi_rhq_entry *
head_entry(const struct kfab_hfi_ring *ring)
{
	struct kfab_hfi_rhq_entry *e =
		&ring->rhq[ring->rh & (ring->rhq_entries - 1)];

	/* acquire: pairs with the producer's release of seq (3.) */
	if (atomic_load_explicit(A32(&e->seq), memory_order_acquire) !=
	    ring->rh + 1u)
		return NULL;
	return e;
}

int kfab_hfi_ring_poll(struct kfab_hfi_ring *ring,
		       struct kfab_hfi_ring_entry *entry)
{
	struct kfab_hfi_rhq_entry *e = head_entry(ring);
	uint32_t len;

	if (!e)
		return 0;
	len = e->eager_len;
	/*
	 * A peer shares our trust domain but may still be buggy: never hand
	 * out a length beyond the buffer.
	 */
	if (len > ring->eager_size)
		len = ring->eager_size;
	entry->hdr = e->hdr;
	entry->len = len;
	entry->payload = len ? eager_buf(ring, e->eager_index) : NULL;
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
	/* 6. arm, full fence (pairs with the producer's 4'.), re-check 4. */
	atomic_store_explicit(A32(&ring->ctrl->armed), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return head_entry(ring) == NULL;
}

uint32_t kfab_hfi_ring_dead(const struct kfab_hfi_ring *ring)
{
	return atomic_load_explicit(A32(&ring->ctrl->dead),
				    memory_order_acquire);
}
