/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the SRD receive ring protocol of uapi/kfab_efa.h.
 *
 * A struct kfab_efa_ring is a view of one QP's queues (ctrl page, entry
 * ring, packet buffers) as mapped by either device backend: the owner's
 * view posts buffers and consumes, a peer's view produces. The memory
 * format and the steps (P, 1-4', 4, 6) are exactly those of the top
 * comment of uapi/kfab_efa.h; this file only names them. No system call
 * is made here (init reads the clock for a seed): a producer that finds
 * the owner armed is told so and asks its backend to notify.
 *
 * Thread safety: any number of threads and processes may produce into one
 * ring concurrently; a ring has one owner (one thread at a time) posting
 * and consuming.
 */
#ifndef KFAB_ULIB_EFA_RING_H
#define KFAB_ULIB_EFA_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/kfab_efa.h"

struct kfab_efa_ring {
	struct kfab_efa_qp_ctrl *ctrl;
	struct kfab_efa_rx_entry *ring;
	uint8_t *bufs;
	uint32_t entries;	/* power of two */
	uint32_t mtu;		/* bytes per packet buffer */
	/* owner only: the consumer head h of the protocol */
	uint32_t head;
	/* producer only: the peer device's knobs (rnr_inject_ppm), or NULL */
	const struct kfab_efa_status *status;
	uint64_t rng;		/* producer: injection draws, atomic */
};

/* One received packet, pointing into the ring until kfab_efa_ring_release. */
struct kfab_efa_ring_entry {
	const uint8_t *hdr;	/* KFAB_EFA_RX_HDR_BYTES bytes */
	/* the slot's buffer; NULL when len is 0 or the payload is in ubuf */
	const uint8_t *payload;
	uint32_t len;		/* payload bytes, <= mtu */
	bool ubuf;		/* they are in the buffer posted with the slot */
	uint32_t src_qpn;
	uint32_t imm;
	const uint8_t *src_gid;	/* KFAB_EFA_GID_LEN bytes */
	uint32_t ticket;
};

/* kfab_efa_ring_send(): published, and the owner was armed: notify it. */
#define KFAB_EFA_RING_NOTIFY	1

/* A buffer of the owner's, in one of its MRs, posted with a slot. */
struct kfab_efa_ubuf {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/*
 * Producer: writes @len bytes of @payload into the owner's buffer @ub by
 * device RDMA. 0, or -errno: the slot's own buffer takes them instead.
 */
typedef int (*kfab_efa_ubuf_write_t)(void *arg,
				     const struct kfab_efa_ubuf *ub,
				     const void *payload, size_t len);

/*
 * Sets up @ring over mapped memory of a new QP (head 0). 0, or -EINVAL
 * for a NULL pointer, an entry count that is not a power of two or an
 * mtu of 0. @status
 * is the peer device's page in a producer's view, NULL in the owner's.
 */
int kfab_efa_ring_init(struct kfab_efa_ring *ring,
		       struct kfab_efa_qp_ctrl *ctrl,
		       struct kfab_efa_rx_entry *entries, void *bufs,
		       uint32_t nentries, uint32_t mtu,
		       const struct kfab_efa_status *status);

/*
 * Owner, step P: posts up to @n more buffers, never more than entries
 * ahead of the head. Returns how many were posted (0 when the ring is
 * fully posted).
 */
uint32_t kfab_efa_ring_post(struct kfab_efa_ring *ring, uint32_t n);

/*
 * Owner, step P for one slot with the buffer @ub (NULL: the slot's own
 * only). 0 with the slot's *@ticket, or -EAGAIN when the ring is fully
 * posted.
 */
int kfab_efa_ring_post_ubuf(struct kfab_efa_ring *ring,
			    const struct kfab_efa_ubuf *ub, uint32_t *ticket);

/* Owner: buffers posted and not yet consumed. */
uint32_t kfab_efa_ring_posted(const struct kfab_efa_ring *ring);

/*
 * Producer, steps 1 to 4'. @hdr (at most KFAB_EFA_RX_HDR_BYTES, the rest
 * of the entry's hdr is zeroed), the immediate word @imm, the sender's
 * @src_gid and @src_qpn, and a payload of @len bytes (at most mtu). When
 * the owner posted a buffer with the slot that the payload fits, @write
 * (if not NULL) is asked to put it there, with @arg.
 *
 * Returns 0 when published, KFAB_EFA_RING_NOTIFY when published and the
 * caller must notify the owner (it consumed the armed word), -EAGAIN on
 * receiver-not-ready (no posted buffer, or one injected by
 * rnr_inject_ppm: counted in ctrl->rnrs or ctrl->injected_rnrs; nothing
 * was written, retry later), -EMSGSIZE when the header or the payload is
 * too big (nothing counted).
 */
int kfab_efa_ring_send(struct kfab_efa_ring *ring, const void *hdr,
		       size_t hdrlen, uint32_t imm,
		       const uint8_t src_gid[KFAB_EFA_GID_LEN],
		       uint32_t src_qpn, const void *payload, size_t len,
		       kfab_efa_ubuf_write_t write, void *arg);

/*
 * Owner, step 4: 1 with @entry filled when the entry at the head is valid,
 * 0 when the ring is empty. The entry and its buffer stay valid until
 * kfab_efa_ring_release(); polling again without releasing returns the
 * same entry.
 */
int kfab_efa_ring_poll(struct kfab_efa_ring *ring,
		       struct kfab_efa_ring_entry *entry);

/*
 * Owner: consumes the entry returned by the last successful poll; its
 * buffer may be posted again. 0, or -EINVAL when there is no valid entry.
 */
int kfab_efa_ring_release(struct kfab_efa_ring *ring);

/*
 * Owner, step 6: sets armed, full fence, re-checks. true when the ring is
 * still empty and the owner may sleep on its wakeup fd; false when an
 * entry arrived meanwhile (armed stays set: at worst one spurious wakeup
 * follows, which the sleeper must tolerate anyway).
 */
bool kfab_efa_ring_arm(struct kfab_efa_ring *ring);

/*
 * Producer, step 4' alone, for one that published by other means (RDMA
 * with NOTIFY): full fence, then takes the armed word. true when the
 * caller must notify the owner.
 */
bool kfab_efa_ring_take_armed(struct kfab_efa_ring *ring);

/* Non-zero once the QP was destroyed (the dead word). */
uint32_t kfab_efa_ring_dead(const struct kfab_efa_ring *ring);

#endif /* KFAB_ULIB_EFA_RING_H */
