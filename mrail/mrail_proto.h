/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kfab_mrail: the wire format, what every kfab_mrail message carries at
 * the start of its payload on a rail (an RDM endpoint of the core
 * provider).
 *
 * Rails may join two hosts (libfabric's tcp;ofi_rxm), so every field is
 * little endian on the wire whatever the host, as in uapi/: the structs
 * below are the host's view, encoded and decoded field by field at the
 * offsets the static asserts pin (on a little-endian host the compiler
 * makes each a plain load or store).
 *
 * The header, 24 bytes, on every message:
 *
 *   off  size  field
 *     0     1  version   MRAIL_PROTO_VERSION; another is refused (-EPROTO)
 *     1     1  op        MRAIL_OP_MSG (matches fi_recv) or MRAIL_OP_TAGGED
 *                        (matches fi_trecv, by tag)
 *     2     1  proto     MRAIL_PROTO_EAGER, _RNDV_REQ or _RNDV_ACK
 *     3     1  flags     MRAIL_F_CQ_DATA: cq_data is the remote CQ data
 *     4     4  seq       per peer, in send order, modulo 2^32 (mrail_seq.h)
 *     8     8  tag       MRAIL_OP_TAGGED: the message's tag; else 0
 *    16     8  cq_data   with MRAIL_F_CQ_DATA; else 0
 *
 * EAGER: the message's bytes follow the header, on one rail.
 *
 * RNDV_REQ: a striped message. The sender registers its buffer on every
 * rail and sends, after the header (seq, tag and cq_data are the
 * message's), struct mrail_rndv_req: the message's length, the sender's
 * request id and one struct mrail_stripe per rail, the rail's remote
 * address and raw key (fi_mr_raw_attr(); the receiver fi_mr_map_raw()s
 * it). The receiver matches it in seq order, splits the length over the
 * rails, fi_read()s the stripes in parallel, completes the receive and
 * answers RNDV_ACK. A striped message travels as a REQ of
 * mrail_rndv_req_size(rails) bytes after the header.
 *
 *   off  size  field (from the end of the header)
 *     0     8  len       bytes of the message
 *     8     4  sreq      the sender's request id, echoed by the ACK
 *    12     1  rails     stripe descriptors that follow, 1 to
 *                        MRAIL_RNDV_RAILS_MAX
 *    13     3  rsvd      zero
 *    16  32*n  stripe[]  per rail i: 8 addr (where its fi_read starts: the
 *                        buffer's address, or 0 where the rail's keys are
 *                        offset based), 1 key_size, 7 zero,
 *                        16 key (key_size bytes, the rest zero)
 *
 * RNDV_ACK: struct mrail_rndv_ack after the header: the REQ's sreq and
 * the receive's status (0, or the -errno the sender's completion
 * reports). It is not ordered: its seq, tag and cq_data are 0 and it is
 * not offered to the ordering engine; a sender finds the request by sreq
 * and ignores an ACK whose request is gone (a duplicate after failover).
 *
 * Reserved bytes must be zero and unknown flag bits are refused, so a
 * later version can use them.
 */
#ifndef KFAB_MRAIL_PROTO_H
#define KFAB_MRAIL_PROTO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* ofi_mrail's headers are versions 1 and 2: kfab_mrail's start at 0x80. */
#define MRAIL_PROTO_VERSION	0x80

enum mrail_op {
	MRAIL_OP_MSG = 1,
	MRAIL_OP_TAGGED,
};

enum mrail_proto {
	MRAIL_PROTO_EAGER = 1,
	MRAIL_PROTO_RNDV_REQ,
	MRAIL_PROTO_RNDV_ACK,
};

#define MRAIL_F_CQ_DATA		0x01
#define MRAIL_F_ALL		MRAIL_F_CQ_DATA

struct mrail_hdr {
	uint8_t version;
	uint8_t op;			/* enum mrail_op */
	uint8_t proto;			/* enum mrail_proto */
	uint8_t flags;			/* MRAIL_F_* */
	uint32_t seq;
	uint64_t tag;
	uint64_t cq_data;
};

#define MRAIL_HDR_SIZE		24u

_Static_assert(offsetof(struct mrail_hdr, version) == 0, "mrail hdr version");
_Static_assert(offsetof(struct mrail_hdr, op) == 1, "mrail hdr op");
_Static_assert(offsetof(struct mrail_hdr, proto) == 2, "mrail hdr proto");
_Static_assert(offsetof(struct mrail_hdr, flags) == 3, "mrail hdr flags");
_Static_assert(offsetof(struct mrail_hdr, seq) == 4, "mrail hdr seq");
_Static_assert(offsetof(struct mrail_hdr, tag) == 8, "mrail hdr tag");
_Static_assert(offsetof(struct mrail_hdr, cq_data) == 16, "mrail hdr cq_data");
_Static_assert(sizeof(struct mrail_hdr) == MRAIL_HDR_SIZE, "mrail hdr size");

/* The raw key bytes a stripe descriptor carries (fi_mr_raw_attr()). */
#define MRAIL_RAW_KEY_MAX	16u
/* The rails a REQ can stripe over. */
#define MRAIL_RNDV_RAILS_MAX	16u

struct mrail_stripe {
	uint64_t addr;
	uint8_t key_size;
	uint8_t rsvd[7];
	uint8_t key[MRAIL_RAW_KEY_MAX];
};

struct mrail_rndv_req {
	uint64_t len;
	uint32_t sreq;
	uint8_t rails;
	uint8_t rsvd[3];
	struct mrail_stripe stripe[MRAIL_RNDV_RAILS_MAX];
};

struct mrail_rndv_ack {
	uint32_t sreq;
	int32_t status;
};

#define MRAIL_STRIPE_SIZE	32u
#define MRAIL_RNDV_REQ_BASE	offsetof(struct mrail_rndv_req, stripe)
#define MRAIL_RNDV_ACK_SIZE	8u

_Static_assert(offsetof(struct mrail_stripe, addr) == 0, "mrail stripe addr");
_Static_assert(offsetof(struct mrail_stripe, key_size) == 8,
	       "mrail stripe key_size");
_Static_assert(offsetof(struct mrail_stripe, key) == 16, "mrail stripe key");
_Static_assert(sizeof(struct mrail_stripe) == MRAIL_STRIPE_SIZE,
	       "mrail stripe size");
_Static_assert(offsetof(struct mrail_rndv_req, len) == 0, "mrail req len");
_Static_assert(offsetof(struct mrail_rndv_req, sreq) == 8, "mrail req sreq");
_Static_assert(offsetof(struct mrail_rndv_req, rails) == 12,
	       "mrail req rails");
_Static_assert(MRAIL_RNDV_REQ_BASE == 16, "mrail req stripes");
_Static_assert(MRAIL_RNDV_RAILS_MAX <= UINT8_MAX, "mrail req rails fit u8");
_Static_assert(offsetof(struct mrail_rndv_ack, sreq) == 0, "mrail ack sreq");
_Static_assert(offsetof(struct mrail_rndv_ack, status) == 4,
	       "mrail ack status");
_Static_assert(sizeof(struct mrail_rndv_ack) == MRAIL_RNDV_ACK_SIZE,
	       "mrail ack size");

static inline void mrail_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void mrail_put_le64(uint8_t *p, uint64_t v)
{
	mrail_put_le32(p, (uint32_t)v);
	mrail_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t mrail_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t mrail_get_le64(const uint8_t *p)
{
	return (uint64_t)mrail_get_le32(p) |
	       (uint64_t)mrail_get_le32(p + 4) << 32;
}

/* Any of @n bytes at @p not zero. */
static inline int mrail_nonzero(const uint8_t *p, size_t n)
{
	uint8_t any = 0;

	while (n--)
		any |= *p++;
	return any != 0;
}

/* @h into the MRAIL_HDR_SIZE bytes at @buf. */
static inline void mrail_hdr_encode(void *buf, const struct mrail_hdr *h)
{
	uint8_t *p = buf;

	p[0] = h->version;
	p[1] = h->op;
	p[2] = h->proto;
	p[3] = h->flags;
	mrail_put_le32(p + offsetof(struct mrail_hdr, seq), h->seq);
	mrail_put_le64(p + offsetof(struct mrail_hdr, tag), h->tag);
	mrail_put_le64(p + offsetof(struct mrail_hdr, cq_data), h->cq_data);
}

/*
 * The header at the start of the @len bytes received at @buf: 0; -EPROTO
 * when it is of another version (a peer of another kfab_mrail, or not
 * kfab_mrail at all); -EBADMSG when shorter than a header or with an
 * unknown op, protocol or flag. Not logged: the receive path, which knows
 * the rail and the peer, says so and drops the message.
 */
static inline int mrail_hdr_decode(struct mrail_hdr *h, const void *buf,
				   size_t len)
{
	const uint8_t *p = buf;

	if (len < 1)
		return -EBADMSG;
	if (p[0] != MRAIL_PROTO_VERSION)
		return -EPROTO;
	if (len < MRAIL_HDR_SIZE)
		return -EBADMSG;
	h->version = p[0];
	h->op = p[1];
	h->proto = p[2];
	h->flags = p[3];
	if (h->op < MRAIL_OP_MSG || h->op > MRAIL_OP_TAGGED ||
	    h->proto < MRAIL_PROTO_EAGER || h->proto > MRAIL_PROTO_RNDV_ACK ||
	    (h->flags & ~MRAIL_F_ALL))
		return -EBADMSG;
	h->seq = mrail_get_le32(p + offsetof(struct mrail_hdr, seq));
	h->tag = mrail_get_le64(p + offsetof(struct mrail_hdr, tag));
	h->cq_data = mrail_get_le64(p + offsetof(struct mrail_hdr, cq_data));
	return 0;
}

/* Bytes of a REQ of @rails stripes, after the header. */
static inline size_t mrail_rndv_req_size(unsigned int rails)
{
	return MRAIL_RNDV_REQ_BASE + (size_t)rails * MRAIL_STRIPE_SIZE;
}

/*
 * @r into the mrail_rndv_req_size(@r->rails) bytes at @buf (after the
 * header); @r->rails 1 to MRAIL_RNDV_RAILS_MAX, each key_size at most
 * MRAIL_RAW_KEY_MAX (a rail whose raw keys are longer cannot stripe).
 */
static inline void mrail_rndv_req_encode(void *buf,
					 const struct mrail_rndv_req *r)
{
	uint8_t *p = buf;

	mrail_put_le64(p, r->len);
	mrail_put_le32(p + offsetof(struct mrail_rndv_req, sreq), r->sreq);
	p[offsetof(struct mrail_rndv_req, rails)] = r->rails;
	for (size_t i = offsetof(struct mrail_rndv_req, rsvd);
	     i < MRAIL_RNDV_REQ_BASE; i++)
		p[i] = 0;
	for (unsigned int i = 0; i < r->rails; i++) {
		const struct mrail_stripe *s = &r->stripe[i];
		uint8_t *q = p + mrail_rndv_req_size(i);
		size_t k = offsetof(struct mrail_stripe, key);

		mrail_put_le64(q, s->addr);
		q[offsetof(struct mrail_stripe, key_size)] = s->key_size;
		for (size_t j = offsetof(struct mrail_stripe, rsvd); j < k; j++)
			q[j] = 0;
		for (size_t j = 0; j < MRAIL_RAW_KEY_MAX; j++)
			q[k + j] = j < s->key_size ? s->key[j] : 0;
	}
}

/*
 * The REQ in the @len bytes at @buf (what followed the header): 0, or
 * -EBADMSG when it is shorter than its stripes, has no stripe or more
 * than MRAIL_RNDV_RAILS_MAX, a key longer than MRAIL_RAW_KEY_MAX or a
 * reserved byte set.
 */
static inline int mrail_rndv_req_decode(struct mrail_rndv_req *r,
					const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < MRAIL_RNDV_REQ_BASE)
		return -EBADMSG;
	r->len = mrail_get_le64(p);
	r->sreq = mrail_get_le32(p + offsetof(struct mrail_rndv_req, sreq));
	r->rails = p[offsetof(struct mrail_rndv_req, rails)];
	if (!r->rails || r->rails > MRAIL_RNDV_RAILS_MAX ||
	    len < mrail_rndv_req_size(r->rails) ||
	    mrail_nonzero(p + offsetof(struct mrail_rndv_req, rsvd),
			  sizeof(r->rsvd)))
		return -EBADMSG;
	for (unsigned int i = 0; i < r->rails; i++) {
		struct mrail_stripe *s = &r->stripe[i];
		const uint8_t *q = p + mrail_rndv_req_size(i);
		size_t k = offsetof(struct mrail_stripe, key);

		s->addr = mrail_get_le64(q);
		s->key_size = q[offsetof(struct mrail_stripe, key_size)];
		if (s->key_size > MRAIL_RAW_KEY_MAX ||
		    mrail_nonzero(q + offsetof(struct mrail_stripe, rsvd),
				  sizeof(s->rsvd)) ||
		    mrail_nonzero(q + k + s->key_size,
				  MRAIL_RAW_KEY_MAX - s->key_size))
			return -EBADMSG;
		for (size_t j = 0; j < MRAIL_RAW_KEY_MAX; j++)
			s->key[j] = q[k + j];
	}
	return 0;
}

/* @a into the MRAIL_RNDV_ACK_SIZE bytes at @buf (after the header). */
static inline void mrail_rndv_ack_encode(void *buf,
					 const struct mrail_rndv_ack *a)
{
	uint8_t *p = buf;

	mrail_put_le32(p, a->sreq);
	mrail_put_le32(p + offsetof(struct mrail_rndv_ack, status),
		       (uint32_t)a->status);
}

/*
 * The ACK in the @len bytes at @buf: 0, or -EBADMSG when too short or
 * its status is not 0 or a -errno.
 */
static inline int mrail_rndv_ack_decode(struct mrail_rndv_ack *a,
					const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < MRAIL_RNDV_ACK_SIZE)
		return -EBADMSG;
	a->sreq = mrail_get_le32(p);
	a->status = (int32_t)mrail_get_le32(p +
					    offsetof(struct mrail_rndv_ack,
						     status));
	return a->status > 0 ? -EBADMSG : 0;
}

#endif /* KFAB_MRAIL_PROTO_H */
