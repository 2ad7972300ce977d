/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kfab_hfi: the ABI of the emulated Omni-Path-style HFI units.
 *
 * One open file of /dev/kfab_hfi<N> holds at most one hardware context.
 * Until KFAB_HFI_IOC_ASSIGN_CTXT succeeds every command other than
 * KFAB_HFI_IOC_GET_VERSION, KFAB_HFI_IOC_ASSIGN_CTXT and
 * KFAB_HFI_IOC_LIST_CTXTS fails with -EINVAL.
 *
 * Shared memory of a context, each mapped MAP_SHARED at the offset the
 * kernel returns, with exactly the size given below:
 *
 *   ctrl    one page, read-write    struct kfab_hfi_ctrl
 *   rhq     rhq_entries * 128 B     struct kfab_hfi_rhq_entry[rhq_entries]
 *   eager   eager_count * size      eager_count buffers of eager_size bytes
 *   status  one page, read-only     struct kfab_hfi_status (per unit)
 *
 * A peer in the same job (same jkey and pkey) maps ctrl, rhq and eager of
 * another context read-write through KFAB_HFI_IOC_MAP_PEER.
 *
 * Receive queue protocol: many producers, one consumer (the owner).
 *
 *   ctrl->tail packs two free-running 32-bit tickets, the RHQ ticket in the
 *   low half and the eager ticket in the high half; ctrl->head packs the
 *   consumer's RHQ and eager heads the same way.
 *
 *   Producer:
 *     1. t = load(tail); h = load_acquire(head)      (pairs with 5.)
 *        rhq full   if lo(t) - lo(h) >= rhq_entries:  drop, count
 *                   rhq_full_drops;
 *        eager full if the packet carries a payload and
 *                   hi(t) - hi(h) >= eager_count:     drop, count
 *                   eager_full_drops;
 *        CAS(tail, t, t + 1 in the low half, + 1 in the high half if a
 *        payload is carried); retry from 1 on failure.
 *     2. copy the payload into eager buffer (hi(t) & (eager_count - 1)),
 *        fill entry (lo(t) & (rhq_entries - 1)): eager_index = hi(t),
 *        eager_len = payload bytes (0: no eager buffer used), hdr.
 *     3. store_release(entry->seq, lo(t) + 1)        (pairs with 4.)
 *     4'. full fence; if load(armed) and xchg(armed, 0) returned 1:
 *        KFAB_HFI_IOC_NOTIFY the owner                (pairs with 6.)
 *   Consumer, with local heads rh, eh:
 *     4. load_acquire(entry[rh & (rhq_entries - 1)].seq) == rh + 1 means
 *        the entry is valid; read it and its eager buffer;
 *     5. rh += 1, eh = eager_index + 1 when eager_len != 0;
 *        store_release(head, eh << 32 | rh)            (pairs with 1.)
 *     6. to sleep: store(armed, 1); full fence; re-check 4.; if still empty
 *        wait on the eventfd registered with KFAB_HFI_IOC_SET_EVENTFD.
 *
 *   Tickets wrap at 2^32; rhq_entries and eager_count are powers of two.
 *   A producer that dies between 1. and 3. leaves its slot unpublished: the
 *   consumer may declare such a slot lost after a timeout of its choosing,
 *   exactly like a packet dropped on the wire.
 *
 * Peers are trusted with each other's queues: equal jkeys mean the same
 * user and the same job UUID. The kernel is the boundary between jobs.
 */
#ifndef _UAPI_KFAB_HFI_H
#define _UAPI_KFAB_HFI_H

#include "kfab_abi.h"

#define KFAB_HFI_STATE_DOWN		0
#define KFAB_HFI_STATE_ACTIVE		1

#define KFAB_HFI_PKEY_DEFAULT		0x8001
#define KFAB_HFI_SL_MAX			15

/* KFAB_HFI_IOC_GET_VERSION: allowed before a context is assigned. */
struct kfab_hfi_version {
	__u32 abi_version;	/* out: KFAB_ABI_VERSION */
	__u32 unit;		/* out: unit number of this device */
	__u32 lid;		/* out: LID of this unit */
	__u32 state;		/* out: KFAB_HFI_STATE_* */
	__u32 nctxts;		/* out: hardware contexts on this unit */
	__s32 numa_node;	/* out: NUMA node of this unit, -1 for none */
	__u64 reserved[2];
};

/* What a context is: returned by ASSIGN_CTXT and CTXT_INFO. */
struct kfab_hfi_ctxt_info {
	__u32 unit;
	__u32 lid;
	__u32 ctxt;		/* context number on the unit */
	__u32 jkey;		/* 16-bit job key derived from (uid, uuid) */
	__u16 pkey;
	__u8 sl;
	__u8 pad0;
	__u32 rhq_entries;	/* power of two */
	__u32 rhq_entry_size;	/* sizeof(struct kfab_hfi_rhq_entry) */
	__u32 eager_count;	/* power of two */
	__u32 eager_size;	/* bytes per eager buffer, page multiple */
	__u32 pad1;
	__aligned_u64 ctrl_offset;	/* mmap offsets, see the top comment */
	__aligned_u64 rhq_offset;
	__aligned_u64 eager_offset;
	__aligned_u64 status_offset;
	__u8 uuid[16];
	__u64 reserved[4];
};

/* KFAB_HFI_IOC_ASSIGN_CTXT */
struct kfab_hfi_assign {
	__u8 uuid[16];		/* in: job UUID */
	__u16 pkey;		/* in: low 15 bits must not be zero */
	__u8 sl;		/* in: 0..KFAB_HFI_SL_MAX */
	__u8 pad0;
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved[2];
	struct kfab_hfi_ctxt_info info;	/* out */
};

/* KFAB_HFI_IOC_MAP_PEER: map another context of the same job. */
struct kfab_hfi_map_peer {
	__u32 lid;		/* in: LID of the peer's unit */
	__u32 ctxt;		/* in: the peer's context number */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 peer;		/* out: peer handle for NOTIFY, SDMA, UNMAP */
	__u32 rhq_entries;	/* out: the peer's geometry */
	__u32 rhq_entry_size;
	__u32 eager_count;
	__u32 eager_size;
	__aligned_u64 ctrl_offset;	/* out: mmap offsets of the peer's queues */
	__aligned_u64 rhq_offset;
	__aligned_u64 eager_offset;
	__aligned_u64 status_offset;	/* out: the peer unit's status page */
	__u64 reserved;
};

/* KFAB_HFI_IOC_UNMAP_PEER and KFAB_HFI_IOC_NOTIFY */
struct kfab_hfi_peer_req {
	__u32 peer;		/* in: handle from MAP_PEER */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

/* KFAB_HFI_IOC_TID_UPDATE: pin a receive buffer for expected receive. */
struct kfab_hfi_tid_update {
	__aligned_u64 vaddr;	/* in: start of the buffer, any alignment */
	__aligned_u64 length;	/* in: bytes, not 0 */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 handle;		/* out: TID handle, never 0 */
	__u32 npages;		/* out: pages pinned */
	__u32 pad0;
	__u64 reserved[2];
};

/* KFAB_HFI_IOC_TID_FREE */
struct kfab_hfi_tid_free {
	__u32 handle;		/* in */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

/* Signal the peer as in step 4' of the queue protocol once the copy is done. */
#define KFAB_HFI_SDMA_NOTIFY		0x1U
#define KFAB_HFI_SDMA_FLAGS_ALL		KFAB_HFI_SDMA_NOTIFY

/* KFAB_HFI_IOC_SDMA: copy local memory into a peer's TID buffer, once. */
struct kfab_hfi_sdma {
	__u32 peer;		/* in: handle from MAP_PEER */
	__u32 tid;		/* in: the peer's TID handle */
	__aligned_u64 offset;	/* in: byte offset into the TID buffer */
	__aligned_u64 iov;	/* in: struct kfab_iovec[iovcnt] */
	__u32 iovcnt;		/* in: 1..KFAB_IOV_MAX */
	__u32 flags;		/* in: KFAB_HFI_SDMA_* */
	__aligned_u64 bytes;	/* out: bytes copied */
	__u64 reserved[2];
};

/* KFAB_HFI_IOC_SET_EVENTFD */
struct kfab_hfi_eventfd {
	__s32 fd;		/* in: eventfd to signal, -1 to clear */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

/* struct kfab_hfi_ctxt_entry.flags */
#define KFAB_HFI_CTXT_OWNER_GONE	0x1U	/* assigning process exited */
#define KFAB_HFI_CTXT_ARMED		0x2U	/* the owner's armed word is set */

/* One context in the answer of KFAB_HFI_IOC_LIST_CTXTS. */
struct kfab_hfi_ctxt_entry {
	__u32 ctxt;		/* context number on the unit */
	__u32 jkey;
	__u16 pkey;
	__u8 sl;
	__u8 pad0;
	__s32 pid;		/* assigner's tgid in our pid ns, or 0 */
	__u32 flags;		/* KFAB_HFI_CTXT_* */
	__u32 peer_refs;	/* MAP_PEER handles on it, loopback included */
	__u32 rhq_entries;
	__u32 eager_count;
	__u32 eager_size;
	__u32 ntids;		/* TID buffers registered */
	__aligned_u64 tid_pages;	/* pages those TID buffers pin */
	__aligned_u64 rhq_full_drops;	/* the ctrl page's drop counters */
	__aligned_u64 eager_full_drops;
	__aligned_u64 injected_drops;
	__u64 reserved[2];
};

/* No flags defined yet. */
#define KFAB_HFI_LIST_FLAGS_ALL		0x0U

/*
 * KFAB_HFI_IOC_LIST_CTXTS: the live contexts of this unit whose owner (the
 * real uid that assigned it, which its jkey is derived from) is the
 * caller's effective uid. Allowed before a context is assigned.
 */
struct kfab_hfi_list_ctxts {
	__aligned_u64 entries;	/* in: struct kfab_hfi_ctxt_entry[count] */
	__u32 count;		/* in: room in entries; out: entries filled */
	__u32 total;		/* out: matching contexts, filled or not */
	__u32 flags;		/* in: KFAB_HFI_LIST_FLAGS_ALL bits */
	__u32 pad0;
	__u64 reserved[2];
};

#define KFAB_HFI_IOC_GET_VERSION \
	_IOR(KFAB_IOC_MAGIC, 0x00, struct kfab_hfi_version)
#define KFAB_HFI_IOC_ASSIGN_CTXT \
	_IOWR(KFAB_IOC_MAGIC, 0x01, struct kfab_hfi_assign)
#define KFAB_HFI_IOC_CTXT_INFO \
	_IOR(KFAB_IOC_MAGIC, 0x02, struct kfab_hfi_ctxt_info)
#define KFAB_HFI_IOC_MAP_PEER \
	_IOWR(KFAB_IOC_MAGIC, 0x03, struct kfab_hfi_map_peer)
#define KFAB_HFI_IOC_UNMAP_PEER \
	_IOW(KFAB_IOC_MAGIC, 0x04, struct kfab_hfi_peer_req)
#define KFAB_HFI_IOC_TID_UPDATE \
	_IOWR(KFAB_IOC_MAGIC, 0x05, struct kfab_hfi_tid_update)
#define KFAB_HFI_IOC_TID_FREE \
	_IOW(KFAB_IOC_MAGIC, 0x06, struct kfab_hfi_tid_free)
#define KFAB_HFI_IOC_SDMA \
	_IOWR(KFAB_IOC_MAGIC, 0x07, struct kfab_hfi_sdma)
#define KFAB_HFI_IOC_SET_EVENTFD \
	_IOW(KFAB_IOC_MAGIC, 0x08, struct kfab_hfi_eventfd)
#define KFAB_HFI_IOC_NOTIFY \
	_IOW(KFAB_IOC_MAGIC, 0x09, struct kfab_hfi_peer_req)
#define KFAB_HFI_IOC_LIST_CTXTS \
	_IOWR(KFAB_IOC_MAGIC, 0x0a, struct kfab_hfi_list_ctxts)

/* Bytes of provider-owned header and inline payload in an RHQ entry. */
#define KFAB_HFI_RHQ_HDR_BYTES		112

struct kfab_hfi_rhq_entry {
	__u32 seq;		/* RHQ ticket + 1, stored last (release) */
	__u32 eager_index;	/* eager ticket; buffer = index & (count - 1) */
	__u32 eager_len;	/* payload bytes in that buffer, 0 for none */
	__u32 reserved;
	__u8 hdr[KFAB_HFI_RHQ_HDR_BYTES];	/* format owned by the provider */
};

/* ctrl page; each group of words on its own cache line. */
struct kfab_hfi_ctrl {
	/* written by producers (CAS) */
	__u64 tail;
	__u8 pad0[KFAB_CACHELINE - 8];
	/* written by the consumer (release) */
	__u64 head;
	__u8 pad1[KFAB_CACHELINE - 8];
	/* set by the consumer before it sleeps, cleared by xchg */
	__u32 armed;
	__u8 pad2[KFAB_CACHELINE - 4];
	/* incremented atomically by producers; summed into the unit's sysfs */
	__u64 rhq_full_drops;
	__u64 eager_full_drops;
	__u64 injected_drops;	/* dropped by the producer for drop_ppm */
	__u8 pad3[KFAB_CACHELINE - 24];
	/* written by the kernel only: non-zero once the owner released it */
	__u32 dead;
	__u8 pad4[KFAB_CACHELINE - 4];
};

/* Per-unit page mapped read-only: the knobs the data path must honour. */
struct kfab_hfi_status {
	__u32 abi_version;
	__u32 unit;
	__u32 lid;
	__u32 state;		/* KFAB_HFI_STATE_* */
	__u32 drop_ppm;		/* producers drop this many packets per million */
	__u32 link_rate_mbps;	/* producers pace to this rate, 0: unlimited */
	__u64 reserved[5];
};

#endif /* _UAPI_KFAB_HFI_H */
