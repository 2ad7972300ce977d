// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the receive queue both providers share, see kfab_rxq.h.
 */
#include <stdlib.h>
#include <string.h>

#include "kfab_prov.h"
#include "kfab_rxq.h"

/* Unexpected records a slab holds; bytes a buffer slab holds at least. */
#define KFAB_RXQ_UX_SLAB	64
#define KFAB_RXQ_BUF_SLAB	65536

static inline struct kfab_rxr *te_rxr(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct kfab_rxr, te);
}

static inline struct kfab_rxq_ux *te_ux(struct kfab_tagm_entry *te)
{
	return kfab_container_of(te, struct kfab_rxq_ux, te);
}

static inline struct kfab_cq *rxq_cq(const struct kfab_rxq *q)
{
	return *q->cq;
}

static void rxq_count(const struct kfab_rxq *q, int err)
{
	kfab_cntr_add(*q->cntr, err);
}

void kfab_rxq_init(struct kfab_rxq *q, const struct kfab_rxq_ops *ops,
		   const struct kfab_provider *kp, size_t ux_size,
		   struct kfab_cq *const *cq, struct kfab_cntr *const *cntr)
{
	kfab_tagm_init(&q->tagm);
	q->ops = ops;
	q->kp = kp;
	q->cq = cq;
	q->cntr = cntr;
	q->min_multi_recv = 0;
	kfab_pool_init(&q->ux_pool, ux_size, KFAB_RXQ_UX_SLAB, 0);
	for (int i = 0; i < KFAB_RXQ_BUF_CLASSES; i++) {
		size_t size = (size_t)1 << (KFAB_RXQ_BUF_MIN + i);

		kfab_pool_init(&q->bufs[i], size,
			       size < KFAB_RXQ_BUF_SLAB ?
			       KFAB_RXQ_BUF_SLAB / size : 1, 0);
	}
	kfab_list_init(&q->live);
}

void kfab_rxq_fini(struct kfab_rxq *q)
{
	while (!kfab_list_empty(&q->live))
		kfab_rxq_ux_free(q, kfab_list_first(&q->live,
						    struct kfab_rxq_ux, live));
	kfab_pool_fini(&q->ux_pool);
	for (int i = 0; i < KFAB_RXQ_BUF_CLASSES; i++)
		kfab_pool_fini(&q->bufs[i]);
}

/* The class of a buffer of @size bytes, KFAB_RXQ_BUF_CLASSES past them. */
static int buf_class(size_t size)
{
	int c;

	if (size <= (size_t)1 << KFAB_RXQ_BUF_MIN)
		return 0;
	/* the log2 of @size rounded up */
	c = 64 - __builtin_clzll((unsigned long long)size - 1) -
	    KFAB_RXQ_BUF_MIN;
	return c < KFAB_RXQ_BUF_CLASSES ? c : KFAB_RXQ_BUF_CLASSES;
}

void *kfab_rxq_buf_get(struct kfab_rxq *q, size_t size)
{
	int c = buf_class(size);

	if (c == KFAB_RXQ_BUF_CLASSES)
		return malloc(size);
	return kfab_pool_get(&q->bufs[c]);
}

void kfab_rxq_buf_put(struct kfab_rxq *q, void *buf, size_t size)
{
	int c = buf_class(size);

	if (!buf)
		return;
	if (c == KFAB_RXQ_BUF_CLASSES)
		free(buf);
	else
		kfab_pool_put(&q->bufs[c], buf);
}

int kfab_rxq_src_lookup(struct kfab_rxq *q, struct kfab_av *av,
			fi_addr_t src, uint64_t *key)
{
	struct kfab_av_entry *e = av ? kfab_av_entry(av, src) : NULL;

	if (!e) {
		kfab_warn(q->kp, FI_LOG_EP_DATA,
			  "receive from fi_addr %#llx: not in the AV\n",
			  (unsigned long long)src);
		return -FI_EINVAL;
	}
	*key = e->key;
	return 0;
}

/* ------------------------------------------------------------------ */
/* unexpected messages */

struct kfab_rxq_ux *kfab_rxq_ux_new(struct kfab_rxq *q, void *peer,
				    uint64_t key, size_t len, size_t want,
				    uint64_t tag, uint64_t data,
				    uint64_t msg_flags)
{
	struct kfab_rxq_ux *ux = kfab_pool_get(&q->ux_pool);

	if (!ux)
		return NULL;
	memset(ux, 0, sizeof(*ux));
	if (want) {
		ux->buf = kfab_rxq_buf_get(q, want);
		if (!ux->buf) {
			kfab_pool_put(&q->ux_pool, ux);
			return NULL;
		}
	}
	ux->te.tag = msg_flags & FI_TAGGED ? tag : 0;
	ux->te.src = key;
	ux->peer = peer;
	ux->data = data;
	ux->msg_flags = msg_flags;
	ux->len = len;
	ux->want = want;
	kfab_tagm_add_unexp(&q->tagm, msg_flags & FI_TAGGED, &ux->te);
	kfab_list_add_tail(&ux->live, &q->live);
	return ux;
}

void kfab_rxq_ux_free(struct kfab_rxq *q, struct kfab_rxq_ux *ux)
{
	kfab_list_del(&ux->te.link);
	kfab_list_del(&ux->live);
	kfab_rxq_buf_put(q, ux->buf, ux->want);
	kfab_pool_put(&q->ux_pool, ux);
}

bool kfab_rxq_ux_data(struct kfab_rxq_ux *ux, size_t off, const void *buf,
		      size_t len)
{
	if (off < ux->want)
		memcpy(ux->buf + off, buf,
		       len < ux->want - off ? len : ux->want - off);
	ux->have += len;
	return ux->have >= ux->want;
}

/* @rx takes the message @ux is. */
static void rxr_msg_of(struct kfab_rxr *rx, const struct kfab_rxq_ux *ux)
{
	rx->peer = ux->peer;
	rx->msg_len = ux->len;
	rx->msg_tag = ux->te.tag;
	rx->msg_data = ux->data;
	rx->msg_flags = ux->msg_flags;
}

void kfab_rxq_ux_whole(struct kfab_rxq *q, struct kfab_rxq_ux *ux)
{
	struct kfab_rxr *rx = ux->waiting;

	if (rx) {
		rxr_msg_of(rx, ux);
		q->ops->take(q, rx, ux);
	} else if (ux->discarded) {
		kfab_rxq_ux_free(q, ux);
	}
}

void kfab_rxq_ux_drop(struct kfab_rxq *q, struct kfab_rxq_ux *ux)
{
	if (ux->have >= ux->want)
		kfab_rxq_ux_free(q, ux);
	else
		ux->discarded = true;
}

void kfab_rxq_ux_fail(struct kfab_rxq *q, struct kfab_rxq_ux *ux, int err)
{
	struct kfab_rxr *rx = ux->waiting;

	if (rx) {
		rxr_msg_of(rx, ux);
		rx->err = err;
	}
	kfab_rxq_ux_free(q, ux);
	if (rx)
		q->ops->done(q, rx);
}

void kfab_rxq_give(struct kfab_rxq *q, struct kfab_rxr *rx,
		   struct kfab_rxq_ux *ux)
{
	kfab_list_del(&ux->te.link);
	if (ux->have < ux->want) {
		ux->waiting = rx;
		return;
	}
	rxr_msg_of(rx, ux);
	q->ops->take(q, rx, ux);
}

static bool skip_claimed(struct kfab_tagm_entry *te, void *arg)
{
	(void)arg;
	return te_ux(te)->claimed;
}

static bool skip_unclaimed(struct kfab_tagm_entry *te, void *arg)
{
	struct kfab_rxq_ux *ux = te_ux(te);

	return !ux->claimed || ux->claim_ctx != arg;
}

/* ------------------------------------------------------------------ */
/* multi-receive buffers */

static inline size_t mrecv_left(const struct kfab_rxr *p)
{
	return p->len - p->mrecv_off;
}

/* The completion that gives a multi-receive buffer back. */
static void mrecv_release(struct kfab_rxq *q, struct kfab_rxr *p)
{
	struct kfab_cq *cq = rxq_cq(q);

	if (cq)
		kfab_cq_write(cq, p->context,
			      FI_RECV | FI_MULTI_RECV |
			      (p->flags & (FI_MSG | FI_TAGGED)), 0,
			      p->buf + p->mrecv_off, 0, 0, FI_ADDR_NOTAVAIL);
	q->ops->put(q, p);
}

/* Stops a multi-receive buffer from matching more messages. */
static void mrecv_retire(struct kfab_rxq *q, struct kfab_rxr *p)
{
	kfab_list_del(&p->te.link);
	p->mrecv_retired = true;
	if (!p->mrecv_inflight)
		mrecv_release(q, p);
}

/* Off the posted list with no completion of its own to come. */
static void rxq_unpost(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	kfab_list_del(&rx->te.link);
	if (rx->flags & FI_MULTI_RECV) {
		rx->mrecv_retired = true;
		rx->comp = false;
		if (rx->mrecv_inflight)
			return;
	}
	q->ops->put(q, rx);
}

struct kfab_rxr *kfab_rxq_mrecv_slice(struct kfab_rxq *q, struct kfab_rxr *p,
				      size_t len)
{
	size_t n = len < mrecv_left(p) ? len : mrecv_left(p);
	struct kfab_rxr *c;

	c = q->ops->slice(q, p->buf + p->mrecv_off, n);
	if (!c)
		return NULL;
	c->buf = p->buf + p->mrecv_off;
	c->len = n;
	c->context = p->context;
	c->flags = p->flags & ~FI_MULTI_RECV;
	c->comp = p->comp;
	c->mrecv = p;
	p->mrecv_off += n;
	p->mrecv_inflight++;
	if (mrecv_left(p) < q->min_multi_recv)
		mrecv_retire(q, p);
	return c;
}

/* ------------------------------------------------------------------ */
/* completion */

void kfab_rxq_complete_slow(struct kfab_rxq *q, struct kfab_rxr *rx)
{
	struct kfab_rxr *p = rx->mrecv;
	uint64_t flags = FI_RECV | rx->msg_flags;
	struct kfab_cq *cq = rxq_cq(q);
	int err = rx->err;
	fi_addr_t src;

	if (!err && rx->msg_len > rx->len)
		err = FI_ETRUNC;
	if (p && p->mrecv_retired && p->mrecv_inflight == 1)
		flags |= FI_MULTI_RECV;
	if (kfab_likely(cq) && !rx->quiet) {
		src = kfab_rxq_src_addr(q, rx->peer);
		rxq_count(q, err);
		if (err == FI_ETRUNC)
			kfab_cq_write_err_why(cq, rx->context, flags, FI_ETRUNC,
					      0, rx->len,
					      rx->msg_len - rx->len,
					      rx->msg_data, rx->msg_tag, src,
					      "message larger than the receive buffer");
		else if (err)
			kfab_cq_write_err_why(cq, rx->context, flags, err, 0,
					      0, 0, rx->msg_data, rx->msg_tag,
					      src, rx->why);
		else if (rx->comp || (flags & FI_MULTI_RECV))
			kfab_cq_write(cq, rx->context, flags, rx->msg_len,
				      rx->buf, rx->msg_data, rx->msg_tag, src);
	}
	if (p && !--p->mrecv_inflight && p->mrecv_retired)
		q->ops->put(q, p);
}

/* ------------------------------------------------------------------ */
/* posting */

/* fi_trecvmsg() with FI_PEEK and/or FI_CLAIM. */
static ssize_t rxq_peek(struct kfab_rxq *q, const struct iovec *iov,
			void **desc, size_t count, struct kfab_tagm_entry *want,
			void *context, uint64_t flags)
{
	uint64_t cflags = FI_RECV | FI_TAGGED;
	struct kfab_cq *cq = rxq_cq(q);
	struct kfab_tagm_entry *te;
	struct kfab_rxq_ux *ux;
	struct kfab_rxr *rx;

	if (!(flags & FI_PEEK)) {
		/* FI_CLAIM: the message an earlier peek claimed */
		want->src = KFAB_TAGM_ANY_SRC;
		want->ignore = UINT64_MAX;
		te = kfab_tagm_find_unexp(&q->tagm, true, want, skip_unclaimed,
					  context);
		if (!te)
			return -FI_EINVAL;
		ux = te_ux(te);
		if (flags & FI_DISCARD) {
			rxq_count(q, 0);
			kfab_cq_write(cq, context,
				      cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA),
				      ux->len, NULL, ux->data, ux->te.tag,
				      kfab_rxq_src_addr(q, ux->peer));
			kfab_list_del(&ux->te.link);
			q->ops->discard(q, ux);
			return 0;
		}
		rx = q->ops->get(q, iov, desc, count);
		if (!rx)
			return -FI_EAGAIN;
		rx->buf = count ? iov[0].iov_base : NULL;
		for (size_t i = 0; i < count; i++)
			rx->len += iov[i].iov_len;
		rx->context = context;
		rx->flags = flags | FI_TAGGED;
		rx->comp = true;
		kfab_rxq_give(q, rx, ux);
		return 0;
	}

	te = kfab_tagm_find_unexp(&q->tagm, true, want, skip_claimed, NULL);
	if (!te) {
		kfab_cq_write_err(cq, context, cflags, FI_ENOMSG, 0, 0, 0, 0,
				  want->tag, FI_ADDR_NOTAVAIL);
		return 0;
	}
	ux = te_ux(te);
	kfab_cq_write(cq, context, cflags | (ux->msg_flags & FI_REMOTE_CQ_DATA),
		      ux->len, NULL, ux->data, ux->te.tag,
		      kfab_rxq_src_addr(q, ux->peer));
	if (flags & FI_DISCARD) {
		rxq_count(q, 0);
		kfab_list_del(&ux->te.link);
		q->ops->discard(q, ux);
	} else if (flags & FI_CLAIM) {
		ux->claimed = true;
		ux->claim_ctx = context;
	}
	return 0;
}

/* A multi-receive buffer: posted, and filled from the unexpected list. */
static void rxq_post_multi(struct kfab_rxq *q, struct kfab_rxr *rx,
			   bool tagged)
{
	kfab_tagm_post(&q->tagm, tagged, &rx->te);
	while (!rx->mrecv_retired) {
		struct kfab_tagm_entry *te;
		struct kfab_rxr *c;

		if (mrecv_left(rx) < q->min_multi_recv) {
			mrecv_retire(q, rx);
			break;
		}
		te = kfab_tagm_find_unexp(&q->tagm, tagged, &rx->te,
					  skip_claimed, NULL);
		if (!te)
			break;
		c = kfab_rxq_mrecv_slice(q, rx, te_ux(te)->len);
		if (!c)
			break;
		kfab_rxq_give(q, c, te_ux(te));
	}
}

ssize_t kfab_rxq_recv_special(struct kfab_rxq *q, const struct iovec *iov,
			      void **desc, size_t count, uint64_t src,
			      uint64_t tag, uint64_t ignore, void *context,
			      uint64_t flags, bool comp)
{
	bool tagged = flags & FI_TAGGED;
	struct kfab_tagm_entry want = { .tag = tag, .ignore = ignore,
					.src = src };
	struct kfab_rxr *rx;

	if (flags & (FI_PEEK | FI_CLAIM)) {
		if (!tagged)
			return -FI_EBADFLAGS;
		return rxq_peek(q, iov, desc, count, &want, context, flags);
	}
	if (count != 1) {
		kfab_warn(q->kp, FI_LOG_EP_DATA,
			  "FI_MULTI_RECV takes one buffer, not %zu iovecs\n",
			  count);
		return -FI_EINVAL;
	}
	rx = kfab_rxq_get(q, iov, desc, count, src, tag, ignore, context,
			  flags, comp);
	if (kfab_unlikely(!rx))
		return -FI_EAGAIN;
	rxq_post_multi(q, rx, tagged);
	return 0;
}

void kfab_rxq_post_unexp(struct kfab_rxq *q, struct kfab_rxr *rx,
			 bool tagged)
{
	struct kfab_tagm_entry *te;

	te = kfab_tagm_find_unexp(&q->tagm, tagged, &rx->te, skip_claimed,
				  NULL);
	if (te)
		kfab_rxq_give(q, rx, te_ux(te));
	else
		kfab_rxq_post(q, rx, tagged);
}

/* ------------------------------------------------------------------ */
/* cancel, failure, flush */

int kfab_rxq_cancel(struct kfab_rxq *q, void *context)
{
	struct kfab_cq *cq = rxq_cq(q);

	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos;

		kfab_list_for_each(pos, &q->tagm.posted[t]) {
			struct kfab_rxr *rx = te_rxr(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));

			if (rx->context != context)
				continue;
			rxq_count(q, FI_ECANCELED);
			if (cq)
				kfab_cq_write_err(cq, context,
						  FI_RECV | (rx->flags &
							     (FI_MSG | FI_TAGGED)),
						  FI_ECANCELED, 0, 0, 0, 0,
						  rx->te.tag, FI_ADDR_NOTAVAIL);
			rxq_unpost(q, rx);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void kfab_rxq_fail_src(struct kfab_rxq *q, uint64_t key, void *peer, int err,
		       const char *why)
{
	for (int t = 0; t < 2; t++) {
		struct kfab_list *pos, *tmp;

		kfab_list_for_each_safe(pos, tmp, &q->tagm.posted[t]) {
			struct kfab_rxr *rx = te_rxr(kfab_list_entry(pos,
						struct kfab_tagm_entry, link));
			struct kfab_cq *cq = rxq_cq(q);

			if (rx->te.src != key)
				continue;
			kfab_list_del(&rx->te.link);
			if (!(rx->flags & FI_MULTI_RECV)) {
				rx->peer = peer;
				rx->msg_flags = rx->flags & (FI_MSG | FI_TAGGED);
				rx->msg_tag = rx->te.tag;
				rx->err = err;
				rx->why = why;
				q->ops->done(q, rx);
				continue;
			}
			rxq_count(q, err);
			if (cq)
				kfab_cq_write_err_why(cq, rx->context,
						      FI_RECV | (rx->flags &
							(FI_MSG | FI_TAGGED)),
						      err, 0, 0, 0, 0,
						      rx->te.tag,
						      kfab_rxq_src_addr(q, peer), why);
			rx->mrecv_retired = true;
			if (!rx->mrecv_inflight)
				q->ops->put(q, rx);
		}
	}
}

void kfab_rxq_flush(struct kfab_rxq *q)
{
	for (int t = 0; t < 2; t++) {
		while (!kfab_list_empty(&q->tagm.unexp[t])) {
			struct kfab_rxq_ux *ux = te_ux(kfab_list_first(
				&q->tagm.unexp[t], struct kfab_tagm_entry,
				link));

			kfab_list_del(&ux->te.link);
			q->ops->discard(q, ux);
		}
		while (!kfab_list_empty(&q->tagm.posted[t]))
			rxq_unpost(q, te_rxr(kfab_list_first(
				&q->tagm.posted[t], struct kfab_tagm_entry,
				link)));
	}
}
