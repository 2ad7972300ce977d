/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kfab_efa: the ABI of the emulated EFA-style devices.
 *
 * An open file of /dev/kfab_efa<N> is a protection domain: it holds any
 * number of SRD queue pairs (QPs), memory regions (MRs) and peer handles.
 * Every command works on any open file; the objects it names must belong
 * to that file. Closing the file (or dying) releases all of them.
 *
 * Shared memory, each mapped MAP_SHARED at the offset the kernel returns,
 * with exactly the size given below:
 *
 *   ctrl      one page, read-write    struct kfab_efa_qp_ctrl
 *   ring      rx_entries * 128 B      struct kfab_efa_rx_entry[rx_entries]
 *   bufs      rx_entries * mtu        one packet buffer per ring slot
 *   status    one page, read-only     struct kfab_efa_status (per device)
 *   mr_state  mr_state_size, r/o      __u32[max_mrs], KFAB_EFA_MR_STATE_*
 *
 * A peer that knows a QP's (gid, qpn, qkey) maps its ctrl, ring and bufs
 * read-write through KFAB_EFA_IOC_MAP_PEER. The qkey is the capability.
 *
 * Receive ring protocol: many senders, one owner.
 *
 *   ctrl->posted counts the buffers the owner has posted, ctrl->tail the
 *   slots senders have taken; both are free-running 32-bit tickets. Ticket
 *   t uses ring entry and buffer (t & (rx_entries - 1)).
 *
 *   Owner, posting:
 *     P. when buffer (posted & (rx_entries - 1)) is free (it was never
 *        used, or its entry was consumed): write the entry's posted-buffer
 *        words (ubuf_state KFAB_EFA_UBUF_NONE, or _POSTED with ubuf_addr,
 *        ubuf_rkey and ubuf_len naming one of the owner's MRs), clear its
 *        flags, then store_release(posted, posted + 1) (pairs with 1.). At
 *        most rx_entries buffers are posted ahead of the owner's consumer
 *        head.
 *   Sender:
 *     1. t = load(tail); p = load_acquire(posted)
 *        RNR        if (__s32)(p - t) <= 0: no posted buffer: count rnrs
 *                   and retry later (SRD does not drop);
 *        injected   with rnr_inject_ppm (status page): answer RNR anyway,
 *                   count injected_rnrs;
 *        CAS(tail, t, t + 1); retry from 1 on failure.
 *     2. if the entry's ubuf_state is KFAB_EFA_UBUF_POSTED:
 *        CAS(ubuf_state, POSTED, TAKEN); when that succeeded and the
 *        payload fits ubuf_len, write it there with device RDMA (WRITE to
 *        ubuf_rkey at ubuf_addr through the peer handle) and set
 *        KFAB_EFA_RX_F_UBUF in flags. Otherwise (no buffer posted, too
 *        small, or the write failed) copy at most mtu bytes into buffer
 *        (t & (rx_entries - 1)). Then fill the entry: len, src_gid,
 *        src_qpn, imm, hdr, flags.
 *     3. store_release(entry->seq, t + 1)               (pairs with 4.)
 *     4'. full fence; if load(armed) and xchg(armed, 0) returned 1:
 *        KFAB_EFA_IOC_NOTIFY the owner                   (pairs with 6.)
 *   Owner, consuming with its local head h:
 *     4. load_acquire(entry[h & (rx_entries - 1)].seq) == h + 1 means the
 *        entry is valid; read it and its buffer; h += 1; the buffer may be
 *        posted again (P.).
 *     6. to sleep: store(armed, 1); full fence; re-check 4.; if still empty
 *        wait on the eventfd registered with KFAB_EFA_IOC_SET_EVENTFD.
 *   Posted buffers are what a zero-copy receive hands the device; the
 *   slot's own buffer stays the fallback, so no payload is ever lost.
 *
 *   SRD delivers reliably but in no particular order: a sender honours
 *   reorder_ppm of the status page by holding that many packets per
 *   million back behind its next one. A sender that dies between 1. and
 *   3. leaves its slot unpublished, as lost hardware would; the owner may
 *   skip it after a timeout of its choosing.
 *
 * Memory regions: KFAB_EFA_IOC_REG_MR pins the range and returns an lkey
 * (this file's handle) and an rkey (what a peer names in an RDMA request
 * through a peer handle of one of this file's QPs). If the process later
 * unmaps or remaps any page of the range, the kernel marks the MR stale:
 * mr_state[state_index] turns from VALID to STALE and RDMA through its rkey
 * fails with -ESTALE; the pinned pages are never touched again. A library
 * caching registrations checks the word before reusing one.
 */
#ifndef _UAPI_KFAB_EFA_H
#define _UAPI_KFAB_EFA_H

#include "kfab_abi.h"

#define KFAB_EFA_STATE_DOWN		0
#define KFAB_EFA_STATE_ACTIVE		1

#define KFAB_EFA_GID_LEN		16

/* device_rdma: which device RDMA directions the device offers. */
#define KFAB_EFA_RDMA_CAP_READ		0x1U
#define KFAB_EFA_RDMA_CAP_WRITE		0x2U

/* KFAB_EFA_IOC_QUERY_DEVICE: the device and this file's MR state array. */
struct kfab_efa_device_info {
	__u32 abi_version;	/* out: KFAB_ABI_VERSION */
	__u32 device;		/* out: N of /dev/kfab_efa<N> */
	__u8 gid[KFAB_EFA_GID_LEN];	/* out */
	__u32 state;		/* out: KFAB_EFA_STATE_* */
	__u32 mtu;		/* out: bytes per packet buffer, page multiple */
	__u32 max_qps;		/* out: QPs on the device */
	__u32 rx_entries;	/* out: receive ring depth of every QP */
	__u32 device_rdma;	/* out: KFAB_EFA_RDMA_CAP_* */
	__u32 rnr_retry;	/* out: default RNR retry count, 7: forever */
	__u32 max_mrs;		/* out: MRs one file may hold */
	__s32 numa_node;	/* out: -1 for none */
	__aligned_u64 status_offset;	/* out: the device's status page */
	__aligned_u64 mr_state_offset;	/* out: this file's MR state array */
	__aligned_u64 mr_state_size;	/* out: its mapping size in bytes */
	__u64 reserved[4];
};

/* KFAB_EFA_IOC_CREATE_QP */
struct kfab_efa_create_qp {
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 qpn;		/* out: 1..0xffffff, unique on the device */
	__u32 qkey;		/* out: random, never 0 */
	__u32 rx_entries;	/* out: power of two */
	__u32 rx_entry_size;	/* out: sizeof(struct kfab_efa_rx_entry) */
	__u32 mtu;		/* out: bytes per buffer */
	__aligned_u64 ctrl_offset;	/* out: mmap offsets */
	__aligned_u64 ring_offset;
	__aligned_u64 bufs_offset;
	__u64 reserved[2];
};

/* KFAB_EFA_IOC_DESTROY_QP */
struct kfab_efa_destroy_qp {
	__u32 qpn;		/* in: a QP of this file */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

#define KFAB_EFA_ACCESS_LOCAL_WRITE	0x1U
#define KFAB_EFA_ACCESS_REMOTE_READ	0x2U
#define KFAB_EFA_ACCESS_REMOTE_WRITE	0x4U
#define KFAB_EFA_ACCESS_ALL		0x7U

/* mr_state[] words */
#define KFAB_EFA_MR_STATE_FREE		0
#define KFAB_EFA_MR_STATE_VALID		1
#define KFAB_EFA_MR_STATE_STALE		2
/* its pages may have changed: the next RDMA through it checks */
#define KFAB_EFA_MR_STATE_SUSPECT	3

/* KFAB_EFA_IOC_REG_MR */
struct kfab_efa_reg_mr {
	__aligned_u64 vaddr;	/* in: start, any alignment */
	__aligned_u64 length;	/* in: bytes, not 0 */
	__u32 access;		/* in: KFAB_EFA_ACCESS_* */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 lkey;		/* out: this file's handle, never 0 */
	__u32 rkey;		/* out: for peers, never 0, unique on the device */
	__u32 npages;		/* out: pages pinned */
	__u32 state_index;	/* out: this MR's word in mr_state[] */
	__u64 reserved[2];
};

/* KFAB_EFA_IOC_DEREG_MR */
struct kfab_efa_dereg_mr {
	__u32 lkey;		/* in */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

/* KFAB_EFA_IOC_MAP_PEER: map a QP of any file, given its address. */
struct kfab_efa_map_peer {
	__u8 gid[KFAB_EFA_GID_LEN];	/* in: the peer's device */
	__u32 qpn;		/* in */
	__u32 qkey;		/* in */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 peer;		/* out: peer handle for RDMA, NOTIFY, UNMAP */
	__u32 rx_entries;	/* out: the peer's geometry */
	__u32 rx_entry_size;
	__u32 mtu;
	__u32 pad0;
	__aligned_u64 ctrl_offset;	/* out: mmap offsets in this file */
	__aligned_u64 ring_offset;
	__aligned_u64 bufs_offset;
	__aligned_u64 status_offset;	/* out: the peer device's status page */
	__u64 reserved[2];
};

/* KFAB_EFA_IOC_UNMAP_PEER and KFAB_EFA_IOC_NOTIFY */
struct kfab_efa_peer_req {
	__u32 peer;		/* in: handle from MAP_PEER */
	__u32 flags;		/* in: none defined, must be 0 */
	__u64 reserved;
};

#define KFAB_EFA_RDMA_READ		0	/* peer's MR -> local iovec */
#define KFAB_EFA_RDMA_WRITE		1	/* local iovec -> peer's MR */

/* Signal the peer QP as in step 4' of the ring protocol once done. */
#define KFAB_EFA_RDMA_NOTIFY		0x1U
#define KFAB_EFA_RDMA_FLAGS_ALL		KFAB_EFA_RDMA_NOTIFY

/* KFAB_EFA_IOC_RDMA: device RDMA between local memory and a peer's MR. */
struct kfab_efa_rdma {
	__u32 peer;		/* in: handle from MAP_PEER */
	__u32 op;		/* in: KFAB_EFA_RDMA_READ or _WRITE */
	__u32 rkey;		/* in: an MR of the peer QP's file */
	__u32 flags;		/* in: KFAB_EFA_RDMA_* flags */
	__aligned_u64 remote_addr;	/* in: virtual address inside the MR */
	__aligned_u64 iov;	/* in: struct kfab_iovec[iovcnt], local side */
	__u32 iovcnt;		/* in: 1..KFAB_IOV_MAX */
	__u32 pad0;
	__aligned_u64 bytes;	/* out: bytes copied */
	__u64 reserved[2];
};

/* KFAB_EFA_IOC_SET_EVENTFD */
struct kfab_efa_eventfd {
	__u32 qpn;		/* in: a QP of this file */
	__s32 fd;		/* in: eventfd to signal, -1 to clear */
	__u32 flags;		/* in: none defined, must be 0 */
	__u32 pad0;
	__u64 reserved;
};

#define KFAB_EFA_IOC_QUERY_DEVICE \
	_IOR(KFAB_IOC_MAGIC, 0x20, struct kfab_efa_device_info)
#define KFAB_EFA_IOC_CREATE_QP \
	_IOWR(KFAB_IOC_MAGIC, 0x21, struct kfab_efa_create_qp)
#define KFAB_EFA_IOC_DESTROY_QP \
	_IOW(KFAB_IOC_MAGIC, 0x22, struct kfab_efa_destroy_qp)
#define KFAB_EFA_IOC_REG_MR \
	_IOWR(KFAB_IOC_MAGIC, 0x23, struct kfab_efa_reg_mr)
#define KFAB_EFA_IOC_DEREG_MR \
	_IOW(KFAB_IOC_MAGIC, 0x24, struct kfab_efa_dereg_mr)
#define KFAB_EFA_IOC_MAP_PEER \
	_IOWR(KFAB_IOC_MAGIC, 0x25, struct kfab_efa_map_peer)
#define KFAB_EFA_IOC_UNMAP_PEER \
	_IOW(KFAB_IOC_MAGIC, 0x26, struct kfab_efa_peer_req)
#define KFAB_EFA_IOC_RDMA \
	_IOWR(KFAB_IOC_MAGIC, 0x27, struct kfab_efa_rdma)
#define KFAB_EFA_IOC_SET_EVENTFD \
	_IOW(KFAB_IOC_MAGIC, 0x28, struct kfab_efa_eventfd)
#define KFAB_EFA_IOC_NOTIFY \
	_IOW(KFAB_IOC_MAGIC, 0x29, struct kfab_efa_peer_req)

/* Bytes of provider-owned header in a ring entry. */
#define KFAB_EFA_RX_HDR_BYTES		32

/* ubuf_state: the owner's buffer posted with a ring slot */
#define KFAB_EFA_UBUF_NONE		0
#define KFAB_EFA_UBUF_POSTED		1
#define KFAB_EFA_UBUF_TAKEN		2

/* flags: the payload is in the posted buffer, not the slot's */
#define KFAB_EFA_RX_F_UBUF		0x1U

struct kfab_efa_rx_entry {
	__u32 seq;		/* ticket + 1, stored last (release) */
	__u32 len;		/* payload bytes, <= mtu */
	__u32 src_qpn;
	__u32 imm;		/* provider-defined immediate word */
	__u8 src_gid[KFAB_EFA_GID_LEN];
	__u8 hdr[KFAB_EFA_RX_HDR_BYTES];	/* format owned by the provider */
	/* second cache line: the buffer posted with the slot (P.) */
	__aligned_u64 ubuf_addr;
	__u32 ubuf_rkey;
	__u32 ubuf_len;
	__u32 ubuf_state;	/* KFAB_EFA_UBUF_* */
	__u32 flags;		/* KFAB_EFA_RX_F_*, by the sender */
	__u64 reserved[5];
};

/* ctrl page of a QP; each group of words on its own cache line. */
struct kfab_efa_qp_ctrl {
	/* taken by senders (CAS) */
	__u32 tail;
	__u8 pad0[KFAB_CACHELINE - 4];
	/* advanced by the owner (release) */
	__u32 posted;
	__u8 pad1[KFAB_CACHELINE - 4];
	/* set by the owner before it sleeps, cleared by xchg */
	__u32 armed;
	__u8 pad2[KFAB_CACHELINE - 4];
	/* incremented atomically by senders; summed into the device's sysfs */
	__u64 rnrs;
	__u64 injected_rnrs;
	__u8 pad3[KFAB_CACHELINE - 16];
	/* written by the kernel only: non-zero once the QP is destroyed */
	__u32 dead;
	__u8 pad4[KFAB_CACHELINE - 4];
};

/* Per-device page mapped read-only: the knobs the data path honours. */
struct kfab_efa_status {
	__u32 abi_version;
	__u32 device;
	__u8 gid[KFAB_EFA_GID_LEN];
	__u32 state;		/* KFAB_EFA_STATE_* */
	__u32 mtu;
	__u32 device_rdma;	/* KFAB_EFA_RDMA_CAP_* */
	__u32 rnr_retry;
	__u32 rnr_inject_ppm;	/* senders answer RNR this often anyway */
	__u32 reorder_ppm;	/* senders reorder this many packets */
	__u32 link_rate_mbps;	/* senders pace to this, 0: unlimited */
	__u32 pad0;
	__u64 reserved[4];
};

#endif /* _UAPI_KFAB_EFA_H */
