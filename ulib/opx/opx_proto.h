/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the kfab_opx wire format, carried in the provider-owned hdr
 * bytes of an RHQ entry (uapi/kfab_hfi.h, KFAB_HFI_RHQ_HDR_BYTES).
 *
 * Every packet starts with the same 64 bytes; up to OPX_INLINE_MAX bytes
 * of payload follow inline, larger payloads travel in an eager buffer.
 * RMA and atomics (opx_rma.c) are ordered packets too, answered by
 * RMA_RESP, by CTS (WRITE_RTS) or by DATA/DONE (READ).
 * Packets are little endian: both ends are processes of one host.
 *
 * Reliability (opx_rel.c): each ordered packet carries the PSN of its
 * flow (sender context -> receiver context); the receiver delivers in PSN
 * order exactly once and acknowledges "all below ack_psn". Every packet
 * piggybacks the sender's receive state of the reverse flow in ack_psn
 * when OPX_F_ACK is set. ACK, NACK and PING are unordered (no PSN) and
 * may themselves be lost.
 *
 * EAGER, MP_FIRST, RTS and the RMA requests name the receiver's receive
 * context in rx (a scalable endpoint's, fi_rx_addr()); the packets after
 * them belong to the request they follow or answer.
 *
 * session is a random incarnation number of the sending endpoint;
 * dst_session the receiver's as the sender knows it (0: not yet known).
 * A packet whose dst_session is not ours was meant for an earlier owner of
 * our context and is dropped; a new session from a known source means the
 * peer was restarted, and its flow starts over. epoch counts the times
 * the connection started over while both ends lived (a link Down): a
 * packet of an earlier epoch is dropped, one of a later epoch makes the
 * receiver start over too.
 */
#ifndef KFAB_ULIB_OPX_PROTO_H
#define KFAB_ULIB_OPX_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "uapi/kfab_hfi.h"

enum opx_op {
	/* ordered, carry a PSN */
	OPX_OP_EAGER = 1,	/* a whole message: inline or one eager buffer */
	OPX_OP_MP_FIRST,	/* first packet of a multi-packet eager message */
	OPX_OP_MP_NTH,		/* a following one, at u.mp.off */
	OPX_OP_RTS,		/* rendezvous request: length, sender handle */
	OPX_OP_CTS,		/* receiver ready: TID handle or data packets */
	OPX_OP_DATA,		/* rendezvous payload at u.data.off */
	OPX_OP_DONE,		/* the sender's SDMA into the TID is complete */
	OPX_OP_WRITE,		/* RMA write: payload at u.rma.addr */
	OPX_OP_WRITE_RTS,	/* RMA write rendezvous, answered by CTS */
	OPX_OP_READ,		/* RMA read, answered by DATA or DONE */
	OPX_OP_ATOMIC,		/* operands [and compare values] */
	OPX_OP_RMA_RESP,	/* status of a write or atomic, fetched data */
	OPX_OP_ORDERED_MAX,
	/* unordered control */
	OPX_OP_ACK = 16,	/* all PSNs below ack_psn were received */
	OPX_OP_NACK,		/* resend [u.nack.psn, u.nack.stop) */
	OPX_OP_PING,		/* sender has [u.ping.first, u.ping.last] */
};

#define OPX_F_TAGGED	0x01	/* a tagged message */
#define OPX_F_CQ_DATA	0x02	/* data carries remote CQ data */
#define OPX_F_ACK	0x04	/* ack_psn is valid */
#define OPX_F_SDMA	0x08	/* RTS: the sender can SDMA the payload */
#define OPX_F_ACKREQ	0x10	/* acknowledge at once: a send waits on it */
#define OPX_F_LAST	0x20	/* WRITE: the last packet, answer it */
#define OPX_F_RDRSP	0x40	/* DATA, DONE: of a read, to rreq's reader */

struct opx_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t jkey;
	uint16_t src_lid;
	uint16_t src_ctxt;
	uint32_t session;
	uint32_t dst_session;
	uint32_t psn;
	uint32_t ack_psn;
	uint32_t data;		/* remote CQ data (cq_data_size is 4) */
	uint16_t ilen;		/* bytes of inline payload */
	uint8_t rx;		/* the receive context it is for */
	uint8_t epoch;		/* the connection's, see opx_rel.c */
	uint64_t tag;		/* WRITE*, READ: the operation's length */
	union {
		struct {
			uint64_t len;	/* the whole message */
		} msg;			/* EAGER, MP_FIRST */
		struct {
			uint64_t off;
		} mp;			/* MP_NTH */
		struct {
			uint64_t len;
			uint32_t sreq;	/* sender's request handle */
		} rts;
		struct {
			uint64_t len;	/* bytes to send (may truncate) */
			uint32_t sreq;
			uint32_t rreq;	/* receiver's request handle */
			uint32_t tid;	/* 0: send DATA packets */
			int32_t status;	/* WRITE_RTS refused: -errno */
		} cts;
		struct {
			uint64_t off;
			uint32_t rreq;
			int32_t status;	/* DONE of a read: -errno */
		} data;			/* DATA, DONE */
		struct {
			uint64_t key;	/* the target's region */
			uint64_t addr;	/* where this packet's payload goes */
			uint32_t sreq;	/* the initiator's request */
			uint32_t aux;	/* READ: TID; ATOMIC: OPX_ATOMIC_AUX */
		} rma;			/* WRITE, WRITE_RTS, READ, ATOMIC */
		struct {
			uint32_t sreq;
			int32_t status;	/* 0 or -errno */
		} resp;			/* RMA_RESP */
		struct {
			uint32_t psn;
			uint32_t stop;	/* == psn: up to what was sent */
		} nack;
		struct {
			uint32_t first;
			uint32_t last;
		} ping;
		uint8_t raw[24];
	} u;
	uint8_t inl[KFAB_HFI_RHQ_HDR_BYTES - 64];
};

/*
 * Bytes of one ATOMIC's payload, operands and compare values: it fits
 * the smallest eager buffer (a page), as do the values fetched.
 */
#define OPX_ATOMIC_MAX		4096u

/* ATOMIC's u.rma.aux: datatype, op and enum kfab_atomic_kind */
#define OPX_ATOMIC_AUX(dt, op, kind) \
	((uint32_t)(dt) | (uint32_t)(op) << 8 | (uint32_t)(kind) << 16)
#define OPX_ATOMIC_DT(aux)	((aux) & 0xff)
#define OPX_ATOMIC_OP(aux)	(((aux) >> 8) & 0xff)
#define OPX_ATOMIC_KIND(aux)	(((aux) >> 16) & 0xff)

#define OPX_HDR_BASE	offsetof(struct opx_hdr, inl)
#define OPX_INLINE_MAX	(KFAB_HFI_RHQ_HDR_BYTES - OPX_HDR_BASE)

_Static_assert(OPX_HDR_BASE == 64, "opx header base");
_Static_assert(sizeof(struct opx_hdr) == KFAB_HFI_RHQ_HDR_BYTES,
	       "opx header fills the RHQ entry");

/* The 8-byte endpoint name (FI_ADDR_OPX), little endian. */
static inline uint64_t opx_name(uint16_t lid, uint16_t ctxt, uint32_t session)
{
	return (uint64_t)lid | (uint64_t)ctxt << 16 | (uint64_t)session << 32;
}

static inline uint32_t opx_name_key(uint64_t name)
{
	return (uint32_t)name;
}

static inline uint16_t opx_key_lid(uint32_t key)
{
	return (uint16_t)key;
}

static inline uint16_t opx_key_ctxt(uint32_t key)
{
	return (uint16_t)(key >> 16);
}

static inline uint32_t opx_name_session(uint64_t name)
{
	return (uint32_t)(name >> 32);
}

#endif /* KFAB_ULIB_OPX_PROTO_H */
