/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the receive queue both providers share, over the tag-matching
 * engine (kfab_tagm.h): posted receives, untagged and tagged, directed
 * (FI_DIRECTED_RECV) or from any source; unexpected messages with the
 * bytes that came with them; FI_MULTI_RECV buffers; FI_PEEK, FI_CLAIM and
 * FI_DISCARD (fi_tagged(3)); fi_cancel(); the receive completions and the
 * FI_RECV counter.
 *
 * A receive (struct kfab_rxr) is embedded in the provider's request, an
 * unexpected message (struct kfab_rxq_ux) first in the provider's record,
 * which comes from the queue's pool, its bytes from the queue's buffer
 * pools: no allocation per message once the pools have grown to the
 * traffic. How bytes move is the provider's: the hooks of struct
 * kfab_rxq_ops hand it what was matched.
 *
 * A FI_MULTI_RECV buffer stays posted while at least min_multi_recv bytes
 * (FI_OPT_MIN_MULTI_RECV) are left; each message takes the next bytes
 * through a slice, a receive the provider makes (ops->slice) whose
 * completion points into the buffer. The completion of the last slice
 * once the buffer is retired carries FI_MULTI_RECV, or, when none is in
 * flight, a completion of its own does.
 *
 * Not thread safe: the domain lock covers a queue.
 */
#ifndef KFAB_ULIB_RXQ_H
#define KFAB_ULIB_RXQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "kfab_pool.h"
#include "kfab_prov.h"
#include "kfab_tagm.h"

struct kfab_rxq;

/* A receive: posted, or matched and being received into. */
struct kfab_rxr {
	struct kfab_tagm_entry te;	/* match fields; linked while posted */
	void *context;
	uint64_t flags;			/* FI_MSG or FI_TAGGED, FI_MULTI_RECV.. */
	uint8_t *buf;			/* the first byte, for the completion */
	size_t len;			/* bytes the buffer holds */
	bool comp;			/* a completion is wanted */
	bool quiet;			/* internal: no completion, no count */
	int err;			/* FI_E* of a failure, 0 */
	const char *why;		/* err_data of it, NULL: none */
	/* the message matched */
	void *peer;			/* the provider's sender record */
	size_t msg_len;
	uint64_t msg_tag, msg_data;
	uint64_t msg_flags;		/* FI_MSG/FI_TAGGED, FI_REMOTE_CQ_DATA */
	/* FI_MULTI_RECV */
	struct kfab_rxr *mrecv;		/* a slice: the buffer it is of */
	size_t mrecv_off;			/* the buffer: bytes handed out */
	uint32_t mrecv_inflight;		/* the buffer: slices not complete */
	bool mrecv_retired;		/* the buffer: no longer posted */
};

/* A message that came before its receive; first in the provider's record. */
struct kfab_rxq_ux {
	struct kfab_tagm_entry te;	/* tag, source key; while unexpected */
	struct kfab_list live;		/* q->live until freed */
	void *peer;			/* the provider's sender record */
	uint64_t data, msg_flags;
	size_t len;			/* of the message */
	uint8_t *buf;			/* want bytes, from the queue's pools */
	size_t have;			/* bytes arrived */
	size_t want;			/* bytes kept: whole at have >= want */
	bool claimed;			/* FI_CLAIM: reserved for claim_ctx */
	bool discarded;			/* dropped before it was whole */
	void *claim_ctx;
	struct kfab_rxr *waiting;	/* matched before it was whole */
};

struct kfab_rxq_ops {
	/*
	 * A receive holding @iov (@desc may be NULL), counted against the
	 * queue's size, its provider fields reset; NULL: none is free.
	 */
	struct kfab_rxr *(*get)(struct kfab_rxq *q, const struct iovec *iov,
				void **desc, size_t count);
	/* A slice of @len bytes at @buf, not counted; NULL: none free. */
	struct kfab_rxr *(*slice)(struct kfab_rxq *q, void *buf, size_t len);
	/* Gives back a receive without a completion. */
	void (*put)(struct kfab_rxq *q, struct kfab_rxr *rx);
	/*
	 * Finishes a receive: kfab_rxq_complete() and what the provider
	 * releases with it; gives it back.
	 */
	void (*done)(struct kfab_rxq *q, struct kfab_rxr *rx);
	/*
	 * Optional: posts a receive no unexpected message matched (NULL:
	 * kfab_rxq_post_only()).
	 */
	void (*post)(struct kfab_rxq *q, struct kfab_rxr *rx, bool tagged);
	/*
	 * Delivers whole unexpected @ux into @rx, whose msg_* are set: copy
	 * its bytes, start the protocol that moves the rest, or complete;
	 * frees @ux (kfab_rxq_ux_free()).
	 */
	void (*take)(struct kfab_rxq *q, struct kfab_rxr *rx,
		     struct kfab_rxq_ux *ux);
	/* Drops @ux, off the unexpected list (FI_DISCARD, flush). */
	void (*discard)(struct kfab_rxq *q, struct kfab_rxq_ux *ux);
	/* The fi_addr of a sender for FI_SOURCE, FI_ADDR_NOTAVAIL. */
	fi_addr_t (*src)(struct kfab_rxq *q, void *peer);
};

/* Buffers of 2^KFAB_RXQ_BUF_MIN .. 2^KFAB_RXQ_BUF_MAX bytes are pooled. */
#define KFAB_RXQ_BUF_MIN	6
#define KFAB_RXQ_BUF_MAX	17
#define KFAB_RXQ_BUF_CLASSES	(KFAB_RXQ_BUF_MAX - KFAB_RXQ_BUF_MIN + 1)

struct kfab_rxq {
	struct kfab_tagm tagm;
	const struct kfab_rxq_ops *ops;
	const struct kfab_provider *kp;	/* for log messages */
	/* where the provider keeps its bindings (NULL CQ: nothing written) */
	struct kfab_cq *const *cq;
	struct kfab_cntr *const *cntr;
	size_t min_multi_recv;		/* FI_OPT_MIN_MULTI_RECV */
	struct kfab_pool ux_pool;
	struct kfab_pool bufs[KFAB_RXQ_BUF_CLASSES];
	struct kfab_list live;		/* every unexpected record */
};

/*
 * @ux_size: of the provider's unexpected record, struct kfab_rxq_ux first.
 * @cq, @cntr: the provider's FI_RECV bindings, read at each completion.
 */
void kfab_rxq_init(struct kfab_rxq *q, const struct kfab_rxq_ops *ops,
		   const struct kfab_provider *kp, size_t ux_size,
		   struct kfab_cq *const *cq, struct kfab_cntr *const *cntr);
/* Frees the unexpected records and the pools; receives are the caller's. */
void kfab_rxq_fini(struct kfab_rxq *q);

/* A buffer of @size bytes from the pools (malloc() past them), NULL. */
void *kfab_rxq_buf_get(struct kfab_rxq *q, size_t size);
void kfab_rxq_buf_put(struct kfab_rxq *q, void *buf, size_t size);

/* kfab_rxq_src_key() of an address to look up in @av. */
int kfab_rxq_src_lookup(struct kfab_rxq *q, struct kfab_av *av,
			fi_addr_t src, uint64_t *key);

/*
 * The source key of a receive from @src: KFAB_TAGM_ANY_SRC for
 * FI_ADDR_UNSPEC or without FI_DIRECTED_RECV in @caps, -FI_EINVAL
 * (logged) for an address not in @av.
 */
static inline int kfab_rxq_src_key(struct kfab_rxq *q, struct kfab_av *av,
				   uint64_t caps, fi_addr_t src, uint64_t *key)
{
	*key = KFAB_TAGM_ANY_SRC;
	if (src == FI_ADDR_UNSPEC || !(caps & FI_DIRECTED_RECV))
		return 0;
	return kfab_rxq_src_lookup(q, av, src, key);
}

/* Links @rx on the posted list: what ops->post does by default. */
static inline void kfab_rxq_post_only(struct kfab_rxq *q, struct kfab_rxr *rx,
				      bool tagged)
{
	kfab_tagm_post(&q->tagm, tagged, &rx->te);
}

/* Posts @rx through ops->post, or kfab_rxq_post_only() without one. */
static inline void kfab_rxq_post(struct kfab_rxq *q, struct kfab_rxr *rx,
				 bool tagged)
{
	if (q->ops->post)
		q->ops->post(q, rx, tagged);
	else
		kfab_rxq_post_only(q, rx, tagged);
}

/* kfab_rxq_recv() with FI_PEEK, FI_CLAIM or FI_MULTI_RECV. */
ssize_t kfab_rxq_recv_special(struct kfab_rxq *q, const struct iovec *iov,
			      void **desc, size_t count, uint64_t src,
			      uint64_t tag, uint64_t ignore, void *context,
			      uint64_t flags, bool comp);
/*
 * Receive @rx, set, with unexpected messages queued: given the first it
 * matches, else posted. kfab_rxq_recv()'s out-of-line part.
 */
void kfab_rxq_post_unexp(struct kfab_rxq *q, struct kfab_rxr *rx,
			 bool tagged);

/*
 * A receive from ops->get holding @iov, its context, flags (FI_MSG added
 * when untagged) and match fields set; NULL: none is free.
 */
static inline struct kfab_rxr *kfab_rxq_get(struct kfab_rxq *q,
					    const struct iovec *iov,
					    void **desc, size_t count,
					    uint64_t src, uint64_t tag,
					    uint64_t ignore, void *context,
					    uint64_t flags, bool comp)
{
	bool tagged = flags & FI_TAGGED;
	struct kfab_rxr *rx = q->ops->get(q, iov, desc, count);

	if (kfab_unlikely(!rx))
		return NULL;
	rx->buf = count ? iov[0].iov_base : NULL;
	for (size_t i = 0; i < count; i++)
		rx->len += iov[i].iov_len;
	rx->context = context;
	rx->flags = flags | (tagged ? 0 : FI_MSG);
	rx->comp = comp;
	rx->te.tag = tagged ? tag : 0;
	rx->te.ignore = tagged ? ignore : 0;
	rx->te.src = src;
	return rx;
}

/*
 * fi_recv() and fi_trecv() and their msg forms: a receive of @iov from
 * source key @src for @tag outside @ignore (tagged: FI_TAGGED in @flags),
 * FI_MULTI_RECV, FI_PEEK, FI_CLAIM, FI_DISCARD; @comp: a completion is
 * wanted on success. 0, -FI_EAGAIN when no receive is free, -FI_E*.
 * Inline: it runs for every receive.
 */
static inline ssize_t kfab_rxq_recv(struct kfab_rxq *q,
				    const struct iovec *iov, void **desc,
				    size_t count, uint64_t src, uint64_t tag,
				    uint64_t ignore, void *context,
				    uint64_t flags, bool comp)
{
	bool tagged = flags & FI_TAGGED;
	struct kfab_rxr *rx;

	if (kfab_unlikely(flags & (FI_PEEK | FI_CLAIM | FI_MULTI_RECV)))
		return kfab_rxq_recv_special(q, iov, desc, count, src, tag,
					     ignore, context, flags, comp);
	rx = kfab_rxq_get(q, iov, desc, count, src, tag, ignore, context,
			  flags, comp);
	if (kfab_unlikely(!rx))
		return -FI_EAGAIN;
	if (!kfab_list_empty(&q->tagm.unexp[tagged]))
		kfab_rxq_post_unexp(q, rx, tagged);
	else
		kfab_rxq_post(q, rx, tagged);
	return 0;
}

/*
 * The slice of multi-receive buffer @p a message of @len bytes lands in,
 * NULL: none is free. kfab_rxq_match()'s out-of-line part.
 */
struct kfab_rxr *kfab_rxq_mrecv_slice(struct kfab_rxq *q, struct kfab_rxr *p,
				      size_t len);

/*
 * An arriving message of @len bytes: the receive it lands in, off the
 * posted list (a slice of a multi-receive buffer), its msg_* set, or
 * NULL: unexpected. Inline: it runs for every message.
 */
static inline struct kfab_rxr *kfab_rxq_match(struct kfab_rxq *q, void *peer,
					      uint64_t key, size_t len,
					      uint64_t tag, uint64_t data,
					      uint64_t msg_flags)
{
	struct kfab_tagm_entry *te;
	struct kfab_rxr *rx;

	te = kfab_tagm_find_posted(&q->tagm, msg_flags & FI_TAGGED, tag, key);
	if (!te)
		return NULL;
	rx = kfab_container_of(te, struct kfab_rxr, te);
	if (kfab_unlikely(rx->flags & FI_MULTI_RECV)) {
		rx = kfab_rxq_mrecv_slice(q, rx, len);
		if (!rx)
			return NULL;
	} else {
		kfab_list_del(&rx->te.link);
	}
	rx->peer = peer;
	rx->msg_len = len;
	rx->msg_tag = msg_flags & FI_TAGGED ? tag : 0;
	rx->msg_data = data;
	rx->msg_flags = msg_flags;
	return rx;
}

/*
 * A new unexpected message of @len bytes from @peer (@key its source
 * key), keeping @want bytes, on the unexpected list; NULL when out of
 * memory. The record's provider part is undefined.
 */
struct kfab_rxq_ux *kfab_rxq_ux_new(struct kfab_rxq *q, void *peer,
				    uint64_t key, size_t len, size_t want,
				    uint64_t tag, uint64_t data,
				    uint64_t msg_flags);
void kfab_rxq_ux_free(struct kfab_rxq *q, struct kfab_rxq_ux *ux);

/*
 * @len bytes of an unexpected message at @off: kept up to want. true when
 * it became whole: then give it to kfab_rxq_ux_whole().
 */
bool kfab_rxq_ux_data(struct kfab_rxq_ux *ux, size_t off, const void *buf,
		      size_t len);
/*
 * Hands @ux to @rx, off the unexpected list: ops->take now if whole, else
 * once it is.
 */
void kfab_rxq_give(struct kfab_rxq *q, struct kfab_rxr *rx,
		   struct kfab_rxq_ux *ux);
/* A whole message: to the receive waiting for it, or freed if dropped. */
void kfab_rxq_ux_whole(struct kfab_rxq *q, struct kfab_rxq_ux *ux);
/* ops->discard's end: freed now if whole, else when it becomes whole. */
void kfab_rxq_ux_drop(struct kfab_rxq *q, struct kfab_rxq_ux *ux);
/*
 * A message that cannot become whole (its sender is gone): off the
 * unexpected list, the receive waiting for it fails with @err (ops->done),
 * the record freed.
 */
void kfab_rxq_ux_fail(struct kfab_rxq *q, struct kfab_rxq_ux *ux, int err);

/* The fi_addr of sender @peer for a completion (ops->src). */
static inline fi_addr_t kfab_rxq_src_addr(struct kfab_rxq *q, void *peer)
{
	return peer ? q->ops->src(q, peer) : FI_ADDR_NOTAVAIL;
}

/* kfab_rxq_complete() of a slice, a failure, a truncation or a quiet one. */
void kfab_rxq_complete_slow(struct kfab_rxq *q, struct kfab_rxr *rx);

/*
 * The completion of @rx (success, err, or FI_ETRUNC when the message was
 * longer than the buffer), its counter, its multi-receive buffer's
 * accounting. The caller gives @rx back after. Inline: it runs for every
 * message.
 */
static inline void kfab_rxq_complete(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	struct kfab_cq *cq = *q->cq;

	if (kfab_unlikely(rx->mrecv || rx->err || rx->quiet || !cq ||
			  rx->msg_len > rx->len)) {
		kfab_rxq_complete_slow(q, rx);
		return;
	}
	kfab_cntr_add(*q->cntr, 0);
	if (rx->comp)
		kfab_cq_write(cq, rx->context, FI_RECV | rx->msg_flags,
			      rx->msg_len, rx->buf, rx->msg_data, rx->msg_tag,
			      kfab_rxq_src_addr(q, rx->peer));
}

/*
 * fi_cancel(): the posted receive of @context completes with
 * FI_ECANCELED. 0, -FI_ENOENT when none is posted.
 */
int kfab_rxq_cancel(struct kfab_rxq *q, void *context);

/*
 * Receives posted for source key @key alone fail with @err (@why its
 * err_data; @peer the sender for FI_SOURCE, NULL: not given).
 */
void kfab_rxq_fail_src(struct kfab_rxq *q, uint64_t key, void *peer, int err,
		       const char *why);

/*
 * Unexpected messages dropped (ops->discard), posted receives given back
 * without a completion: the queue's context is closing.
 */
void kfab_rxq_flush(struct kfab_rxq *q);

#endif /* KFAB_ULIB_RXQ_H */
