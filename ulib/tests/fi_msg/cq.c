// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: completion queues read into queues of the test's own,
 * progress, and the checks of completions and data.
 */
#include "fi_msg.h"

static void cqq_push(struct cqq *q, const struct comp *c)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		struct comp *v = xmalloc(cap * sizeof(*v));

		for (size_t i = 0; i < q->n; i++)
			v[i] = q->v[(q->head + i) % q->cap];
		free(q->v);
		q->v = v;
		q->head = 0;
		q->cap = cap;
	}
	q->v[(q->head + q->n++) % q->cap] = *c;
}

/* Take the oldest completion, or the oldest for @ctx when not NULL. */
bool cqq_take(struct cqq *q, const void *ctx, struct comp *out)
{
	for (size_t i = 0; i < q->n; i++) {
		struct comp *c = &q->v[(q->head + i) % q->cap];

		if (ctx && c->e.op_context != ctx)
			continue;
		*out = *c;
		for (size_t j = i; j > 0; j--)
			q->v[(q->head + j) % q->cap] =
				q->v[(q->head + j - 1) % q->cap];
		q->head = (q->head + 1) % q->cap;
		q->n--;
		return true;
	}
	return false;
}

size_t cq_entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

static bool cq_take_err(struct side *s, struct cqq *q)
{
	struct comp c = { .src = FI_ADDR_NOTAVAIL, .at = now_ms() };
	ssize_t rc = fi_cq_readerr(q->cq, &c.e, 0);

	if (rc == -FI_EAGAIN)
		return false;
	if (rc < 1) {
		CHECK(s, false, "%s: fi_cq_readerr(%s): %s",
		      s->tc->name, q->name, fi_strerror((int)-rc));
		side_abort(s);
		return false;
	}
	if (c.e.err_data && c.e.err_data_size)
		snprintf(c.estr, sizeof(c.estr), "%.*s",
			 (int)c.e.err_data_size, (const char *)c.e.err_data);
	c.e.err_data = NULL;
	c.e.err_data_size = 0;
	cqq_push(q, &c);
	return true;
}

/* Move everything the CQ holds into its queue. */
void cq_drain(struct side *s, struct cqq *q, bool from)
{
	size_t esz = cq_entry_size(s->cq_format);
	uint8_t raw[(CQ_BATCH + 1) * sizeof(struct fi_cq_tagged_entry)];
	fi_addr_t src[CQ_BATCH];

	for (;;) {
		ssize_t n;

		memset(raw, GUARD_BYTE, sizeof(raw));
		n = from ? fi_cq_readfrom(q->cq, raw, CQ_BATCH, src) :
			   fi_cq_read(q->cq, raw, CQ_BATCH);
		if (n == -FI_EAGAIN)
			return;
		if (n == -FI_EAVAIL) {
			if (!cq_take_err(s, q))
				return;
			continue;
		}
		if (n < 0 || n > CQ_BATCH) {
			CHECK(s, false, "%s: fi_cq_read(%s): %s",
			      s->tc->name, q->name, fi_strerror((int)-n));
			side_abort(s);
			return;
		}
		for (size_t i = n * esz; i < (n + 1) * esz; i++)
			if (raw[i] != GUARD_BYTE) {
				s->cq_overruns++;
				break;
			}
		for (ssize_t i = 0; i < n; i++) {
			struct fi_cq_tagged_entry t = { 0 };
			struct comp c = { .src = from ? src[i] :
							FI_ADDR_NOTAVAIL,
					  .at = now_ms() };

			memcpy(&t, raw + i * esz, esz);
			c.e.op_context = t.op_context;
			c.e.flags = t.flags;
			c.e.len = t.len;
			c.e.buf = t.buf;
			c.e.data = t.data;
			c.e.tag = t.tag;
			cqq_push(q, &c);
		}
		if (n < CQ_BATCH)
			return;
	}
}

/* Drive the endpoint (manual progress) and read the control channel. */
void progress(struct side *s)
{
	if (s->tx.cq)
		cq_drain(s, &s->tx, false);
	if (s->rx.cq)
		cq_drain(s, &s->rx, true);
	sep_drain(s);
	if (now_ms() != s->polled)
		ctl_poll(s);
}

void progress_for(struct side *s, int ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end && !s->abort) {
		progress(s);
		sched_yield();
	}
}

bool progress_until(struct side *s, uint64_t end)
{
	progress(s);
	return !s->abort && now_ms() < end;
}

/* Wait for a completion on @q (for @ctx when not NULL). */
bool cq_wait(struct side *s, struct cqq *q, const void *ctx,
	     struct comp *out, int ms, const char *what)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		if (cqq_take(q, ctx, out))
			return true;
		if (s->abort)
			return false;
		if (now_ms() >= end) {
			CHECK(s, false,
			      "%s: no %s completion in %d ms", what, q->name,
			      ms);
			side_abort(s);
			return false;
		}
		progress(s);
	}
}

void comp_str(const struct comp *c, char *buf, size_t size)
{
	char f[128];

	flags_str(c->e.flags, f, sizeof(f));
	snprintf(buf, size,
		 "ctx %p flags %s len %zu tag %#llx data %#llx err %d olen %zu src %#llx",
		 c->e.op_context, f, c->e.len, (unsigned long long)c->e.tag,
		 (unsigned long long)c->e.data, c->e.err, c->e.olen,
		 (unsigned long long)c->src);
}

/* Progress for @ms: no completion may appear on @q. */
bool expect_quiet(struct side *s, struct cqq *q, int ms,
		  const char *what)
{
	char why[256] = "";

	progress_for(s, ms);
	if (q->n) {
		comp_str(&q->v[q->head], why, sizeof(why));
		addf(why, sizeof(why), " (%zu in all)", q->n);
	}
	return CHECK_WHY(s, !q->n, why, "%s: no %s completion", what,
			 q->name);
}

/* ---- checking completions and data ---- */

/* Why completion @c is not @w; false when it is. */
bool comp_mismatch(const struct side *s, const struct comp *c,
		   const struct want *w, char *why, size_t size)
{
	const struct fi_cq_err_entry *e = &c->e;
	enum fi_cq_format f = s->cq_format;
	char a[128], b[128];
	uint64_t flags;

	why[0] = '\0';
	if (e->op_context != w->ctx)
		addf(why, size, "op_context %p, want %p; ", e->op_context,
		     w->ctx);
	if (w->err == ANY_ERR)
		return why[0];
	if (w->err == SOME_ERR ? !e->err : e->err != w->err) {
		addf(why, size, "err %d (%s), want %s", e->err,
		     fi_strerror(e->err),
		     w->err == SOME_ERR ? "an error" : fi_strerror(w->err));
		return true;
	}
	flags = e->flags & COMP_FLAGS &
		~(w->flags & FI_TAGGED ? slack_tagged : 0) &
		~(w->flags & FI_SEND ? slack_send : 0);
	flags_str(e->flags & COMP_FLAGS, a, sizeof(a));
	flags_str(w->flags, b, sizeof(b));
	if (e->err) {
		/* error entries: whatever flags are set must fit the op */
		if (flags & ~w->flags)
			addf(why, size, "flags %s not within %s; ", a, b);
		if (e->err == FI_ETRUNC && e->olen != w->olen)
			addf(why, size, "olen %zu, want %zu; ", e->olen,
			     w->olen);
		return why[0];
	}
	if (f >= FI_CQ_FORMAT_MSG && flags != w->flags)
		addf(why, size, "flags %s, want %s; ", a, b);
	if (f >= FI_CQ_FORMAT_DATA && (w->flags & FI_REMOTE_CQ_DATA) &&
	    e->data != w->data)
		addf(why, size, "data %#llx, want %#llx; ",
		     (unsigned long long)e->data,
		     (unsigned long long)w->data);
	if (!(w->flags & FI_RECV))
		return why[0];
	if (f >= FI_CQ_FORMAT_MSG && !w->any_len && e->len != w->len)
		addf(why, size, "len %zu, want %zu; ", e->len, w->len);
	if (f >= FI_CQ_FORMAT_DATA && w->chk_buf && e->buf != w->buf)
		addf(why, size, "buf %p, want %p; ", e->buf, w->buf);
	if (f >= FI_CQ_FORMAT_TAGGED && (w->flags & FI_TAGGED) &&
	    e->tag != w->tag)
		addf(why, size, "tag %#llx, want %#llx; ",
		     (unsigned long long)e->tag, (unsigned long long)w->tag);
	if (w->src && (s->info->caps & FI_SOURCE) && c->src != *w->src)
		addf(why, size, "source %#llx, want %#llx; ",
		     (unsigned long long)c->src,
		     (unsigned long long)*w->src);
	return why[0];
}

/* One point: completion @c is @w. A wrong op_context ends the case. */
__attribute__((format(printf, 4, 5)))
bool check_comp(struct side *s, const struct comp *c,
		const struct want *w, const char *fmt, ...)
{
	char why[400];
	va_list ap;
	bool bad = comp_mismatch(s, c, w, why, sizeof(why));

	if (bad) {
		addf(why, sizeof(why), " [got: ");
		comp_str(c, why + strlen(why), sizeof(why) - strlen(why));
		addf(why, sizeof(why), "]");
	}
	va_start(ap, fmt);
	vreport(s, !bad, __FILE__, __LINE__, why, fmt, ap);
	va_end(ap);
	if (c->e.op_context != w->ctx && w->err != ANY_ERR)
		side_abort(s);
	return !bad;
}

/*
 * Why @n buffers do not hold bytes 0..@got-1 of @seed with their guards
 * intact (a view into a buffer, with no mem, has no guards).
 */
bool data_mismatch(const struct gbuf *seg, int n, uint64_t seed,
		   size_t got, char *why, size_t size)
{
	size_t off = 0;

	for (int j = 0; j < n; j++) {
		size_t len = got > off ? got - off : 0;
		size_t bad;

		if (len > seg[j].len)
			len = seg[j].len;
		bad = pat_bad(seg[j].p, len, seed, off);
		if (bad < len) {
			snprintf(why, size,
				 "byte %zu (buffer %d + %zu) is %#x, want %#x",
				 off + bad, j, bad, seg[j].p[bad],
				 pat_byte(seed, off + bad));
			return true;
		}
		if (seg[j].mem && !gbuf_guards_ok(&seg[j])) {
			snprintf(why, size, "guard bytes of buffer %d written",
				 j);
			return true;
		}
		off += seg[j].len;
	}
	return false;
}

__attribute__((format(printf, 6, 7)))
bool check_data(struct side *s, const struct gbuf *seg, int n,
		uint64_t seed, size_t got, const char *fmt, ...)
{
	char why[160];
	va_list ap;
	bool bad = data_mismatch(seg, n, seed, got, why, sizeof(why));

	va_start(ap, fmt);
	vreport(s, !bad, __FILE__, __LINE__, why, fmt, ap);
	va_end(ap);
	return !bad;
}

struct want want_send(void *ctx, const struct msgspec *m)
{
	return (struct want){
		.ctx = ctx,
		.flags = FI_SEND | (m->api & API_TAGGED ? FI_TAGGED : FI_MSG),
		.err = m->expect == EXPECT_OK ? 0 :
		       m->expect == EXPECT_ANY ? ANY_ERR : SOME_ERR,
	};
}

/* The completion of a receive of @m from rank @from. */
struct want want_recv(struct side *s, void *ctx,
		      const struct msgspec *m, int from)
{
	return (struct want){
		.ctx = ctx,
		.flags = FI_RECV | (m->api & API_TAGGED ? FI_TAGGED : FI_MSG) |
			 (m->api & API_DATA ? FI_REMOTE_CQ_DATA : 0),
		.len = m->len,
		.tag = m->tag,
		.data = m->data,
		.src = &s->addr[from],
	};
}
