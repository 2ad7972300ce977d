/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the receive queue protocol of uapi/kfab_hfi.h.
 *
 * A struct kfab_hfi_ring is a view of one context's queues (control page,
 * RHQ, eager ring) as mapped by either device backend: the owner's view is
 * used to consume, a peer's view to produce. The memory format and the
 * steps (1-6, 4') are exactly those of the top comment of uapi/kfab_hfi.h;
 * this file only names them. No system call is made here: a producer that
 * finds the owner armed is told so and asks its backend to notify.
 *
 * Thread safety: any number of threads and processes may produce into one
 * ring concurrently; a ring has one consumer (one thread at a time).
 */
#ifndef KFAB_ULIB_HFI_RING_H
#define KFAB_ULIB_HFI_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/kfab_hfi.h"

struct kfab_hfi_ring {
	struct kfab_hfi_ctrl *ctrl;
	struct kfab_hfi_rhq_entry *rhq;
	uint8_t *eager;
	uint32_t rhq_entries;	/* power of two */
	uint32_t eager_count;	/* power of two */
	uint32_t eager_size;	/* bytes per eager buffer */
	/* consumer only: local heads (rh, eh of the protocol) */
	uint32_t rh;
	uint32_t eh;
};

/* One received packet, pointing into the ring until kfab_hfi_ring_release. */
struct kfab_hfi_ring_entry {
	const uint8_t *hdr;	/* KFAB_HFI_RHQ_HDR_BYTES bytes */
	const uint8_t *payload;	/* NULL when len is 0 */
	uint32_t len;		/* payload bytes (eager_len) */
	uint32_t ticket;	/* RHQ ticket of the entry */
};

/* kfab_hfi_ring_send(): published, and the owner was armed: notify it. */
#define KFAB_HFI_RING_NOTIFY	1

/*
 * Sets up @ring over mapped memory and takes the consumer heads from
 * ctrl->head. 0, or -EINVAL for a geometry that is not a power of two.
 */
int kfab_hfi_ring_init(struct kfab_hfi_ring *ring, struct kfab_hfi_ctrl *ctrl,
		       struct kfab_hfi_rhq_entry *rhq, void *eager,
		       uint32_t rhq_entries, uint32_t eager_count,
		       uint32_t eager_size);

/*
 * Producer, steps 1 to 4'. @hdr (at most KFAB_HFI_RHQ_HDR_BYTES, the rest
 * of the entry's hdr is zeroed) and an optional payload of @len bytes (at
 * most eager_size; 0: no eager buffer is used).
 *
 * Returns 0 when published, KFAB_HFI_RING_NOTIFY when published and the
 * caller must notify the owner (it consumed the armed word), -EAGAIN when
 * the RHQ or the eager ring is full (the packet is dropped and counted in
 * rhq_full_drops or eager_full_drops of the ctrl page), -EMSGSIZE when the
 * header or payload is too big (nothing counted).
 */
int kfab_hfi_ring_send(struct kfab_hfi_ring *ring, const void *hdr,
		       size_t hdrlen, const void *payload, size_t len);

/*
 * Consumer, step 4: 1 with @entry filled when the entry at the head is
 * valid, 0 when the ring is empty. The entry and its payload stay valid
 * (and in place) until kfab_hfi_ring_release(); polling again without
 * releasing returns the same entry.
 */
int kfab_hfi_ring_poll(struct kfab_hfi_ring *ring,
		       struct kfab_hfi_ring_entry *entry);

/*
 * Consumer, step 5: frees the entry returned by the last successful poll
 * and its eager buffer. 0, or -EINVAL when there is no valid entry.
 */
int kfab_hfi_ring_release(struct kfab_hfi_ring *ring);

/*
 * Consumer, step 6: sets armed, full fence, re-checks. true when the ring
 * is still empty and the caller may sleep on its wakeup fd; false when an
 * entry arrived meanwhile (armed stays set: at worst one spurious wakeup
 * follows, which the sleeper must tolerate anyway).
 */
bool kfab_hfi_ring_arm(struct kfab_hfi_ring *ring);

/* Step 4' alone, for a producer that published by other means (SDMA). */
bool kfab_hfi_ring_take_armed(struct kfab_hfi_ring *ring);

/* Non-zero once the owner of the context released it. */
uint32_t kfab_hfi_ring_dead(const struct kfab_hfi_ring *ring);

#endif /* KFAB_ULIB_HFI_RING_H */
