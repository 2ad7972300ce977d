// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: the ranks and their control channel; operation contexts
 * and buffers kept until the endpoint is closed; TAP points, which the
 * peers send to rank 0.
 */
#include "fi_msg.h"


/*
 * Operation contexts live until the case's endpoint is closed, so that
 * nothing a provider still holds after a failure points to reused memory.
 */
struct fi_context2 *ctx_new(struct side *s, size_t n)
{
	struct ctx_pool *p = s->pool;

	if (!p || p->cap - p->used < n) {
		size_t cap = n > 1024 ? n : 1024;

		p = xmalloc(sizeof(*p) + cap * sizeof(p->c[0]));
		p->next = s->pool;
		p->cap = cap;
		p->used = 0;
		s->pool = p;
	}
	memset(&p->c[p->used], 0, n * sizeof(p->c[0]));
	p->used += n;
	return &p->c[p->used - n];
}

/* Free @p now, or after the endpoint is closed if the case gave up. */
void release(struct side *s, void *p)
{
	if (!s->abort) {
		free(p);
		return;
	}
	s->deferred = realloc(s->deferred,
			      (s->ndeferred + 1) * sizeof(*s->deferred));
	if (!s->deferred)
		die("out of memory");
	s->deferred[s->ndeferred++] = p;
}

void gbuf_free(struct side *s, struct gbuf *b)
{
	release(s, b->mem);
	b->mem = NULL;
}

/* A fresh buffer of @len bytes in @b. */
void gbuf_renew(struct side *s, struct gbuf *b, size_t len)
{
	if (b->mem)
		gbuf_free(s, b);
	gbuf_alloc(b, len);
}

void ctl_send(struct side *s, int r, const struct ctl_msg *m)
{
	if (s->ctl[r] < 0 || s->gone[r])
		return;
	if (send(s->ctl[r], m, sizeof(*m), MSG_NOSIGNAL) != sizeof(*m) &&
	    s->rank != 0)
		_exit(1);	/* rank 0 is gone: nobody to report to */
}

void step_to(struct side *s, int r, enum step step, uint64_t a,
	     const void *blob, size_t len)
{
	struct ctl_msg m = { .type = CTL_STEP, .step = step, .a = a,
			     .len = len };

	if (len)
		memcpy(m.blob, blob, len);
	ctl_send(s, r, &m);
}

void side_abort(struct side *s)
{
	struct ctl_msg m = { .type = CTL_ABORT };

	if (s->abort)
		return;
	s->abort = true;
	for (int r = 0; r < s->nranks; r++)
		ctl_send(s, r, &m);
}

bool vreport(struct side *s, bool ok, const char *file, int line,
	     const char *detail, const char *fmt, va_list ap)
{
	struct ctl_msg m = { .type = CTL_POINT, .ok = ok, .line = line };
	char text[sizeof(m.text) - 24];

	vsnprintf(text, sizeof(text), fmt, ap);
	if (s->rank == 0) {
		print_point(ok, file, line, text, detail);
		return ok;
	}
	snprintf(m.file, sizeof(m.file), "%s", file);
	snprintf(m.text, sizeof(m.text), "rank %d: %s", s->rank, text);
	if (!ok && detail)
		snprintf((char *)m.blob, sizeof(m.blob), "%s", detail);
	ctl_send(s, 0, &m);
	return ok;
}

/* One TAP point, printed by rank 0; @detail is shown when it fails. */
__attribute__((format(printf, 6, 7)))
bool report(struct side *s, bool ok, const char *file, int line,
	    const char *detail, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ok = vreport(s, ok, file, line, detail, fmt, ap);
	va_end(ap);
	return ok;
}

__attribute__((format(printf, 6, 7)))
bool check_eq(struct side *s, const char *file, int line, long long a,
	      long long b, const char *fmt, ...)
{
	char detail[64];
	va_list ap;
	bool ok;

	snprintf(detail, sizeof(detail), "got %lld, want %lld", a, b);
	va_start(ap, fmt);
	ok = vreport(s, a == b, file, line, detail, fmt, ap);
	va_end(ap);
	return ok;
}

/* A call a case cannot go on without: a failed point and the case ends. */
__attribute__((format(printf, 5, 6)))
bool must(struct side *s, const char *file, int line, long long rc,
	  const char *fmt, ...)
{
	char detail[96];
	va_list ap;

	if (rc == 0)
		return true;
	snprintf(detail, sizeof(detail), "returned %lld (%s)", rc,
		 fi_strerror((int)(rc < 0 ? -rc : rc)));
	va_start(ap, fmt);
	vreport(s, false, file, line, detail, fmt, ap);
	va_end(ap);
	side_abort(s);
	return false;
}

__attribute__((format(printf, 2, 3)))
void diag(struct side *s, const char *fmt, ...)
{
	struct ctl_msg m = { .type = CTL_DIAG };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	if (s->rank == 0)
		print_diag(0, m.text);
	else
		ctl_send(s, 0, &m);
}

static void peer_gone(struct side *s, int r)
{
	s->gone[r] = true;
	if (s->rank != 0)
		_exit(1);	/* rank 0 died: its watchdog or a crash */
	if (s->done[r] || s->may_die[r])
		return;
	CHECK(s, false, "%s: rank %d went away mid-case", s->tc->name, r);
	side_abort(s);
}

static void ctl_handle(struct side *s, int r, struct ctl_msg *m)
{
	struct stepq *q = &s->steps[r];

	m->text[sizeof(m->text) - 1] = '\0';
	switch (m->type) {
	case CTL_POINT:
		m->blob[sizeof(m->blob) - 1] = '\0';
		m->file[sizeof(m->file) - 1] = '\0';
		print_point(m->ok, m->file, m->line, m->text,
			    (char *)m->blob);
		break;
	case CTL_DIAG:
		print_diag(r, m->text);
		break;
	case CTL_ABORT:
		side_abort(s);
		break;
	case CTL_DONE:
		s->done[r] = true;
		break;
	default:
		if (q->n == STEPQ_LEN)
			die("%s: rank %d is too far ahead", s->tc->name, r);
		q->m[(q->head + q->n++) % STEPQ_LEN] = *m;
		break;
	}
}

/* Read whatever the other ranks have sent, without blocking. */
void ctl_poll(struct side *s)
{
	struct ctl_msg m;

	s->polled = now_ms();
	for (int r = 0; r < s->nranks; r++) {
		while (s->ctl[r] >= 0 && !s->gone[r]) {
			ssize_t n = recv(s->ctl[r], &m, sizeof(m),
					 MSG_DONTWAIT);

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (n <= 0) {
				peer_gone(s, r);
				break;
			}
			ctl_handle(s, r, &m);
		}
	}
}

void ctl_sleep(struct side *s, int ms)
{
	struct pollfd p[MAX_RANKS];
	int n = 0;

	for (int r = 0; r < s->nranks; r++)
		if (s->ctl[r] >= 0 && !s->gone[r])
			p[n++] = (struct pollfd){ .fd = s->ctl[r],
						  .events = POLLIN };
	poll(p, n, ms);
}

/*
 * Wait up to @ms (< 0: forever) for @step (STEP_ANY: whatever comes) from
 * rank @r, progressing the endpoint meanwhile when @drive.
 */
bool ctl_wait_ms(struct side *s, int r, enum step step,
		 struct ctl_msg *out, int ms, bool drive)
{
	uint64_t end = ms < 0 ? UINT64_MAX : now_ms() + ms;
	struct stepq *q = &s->steps[r];

	for (;;) {
		ctl_poll(s);
		if (q->n) {
			struct ctl_msg *m = &q->m[q->head];

			if (step != STEP_ANY && m->step != step) {
				CHECK(s, false,
				      "%s: protocol: rank %d sent step %u, expected %u",
				      s->tc->name, r, m->step, step);
				side_abort(s);
				return false;
			}
			if (out)
				*out = *m;
			q->head = (q->head + 1) % STEPQ_LEN;
			q->n--;
			return true;
		}
		if (s->abort || s->gone[r])
			return false;
		if (now_ms() >= end) {
			CHECK(s, false,
			      "%s: no word from rank %d in %d ms (step %u)",
			      s->tc->name, r, ms, step);
			side_abort(s);
			return false;
		}
		if (drive && s->ep) {
			progress(s);
			sched_yield();
		} else {
			ctl_sleep(s, 5);
		}
	}
}

bool ctl_wait(struct side *s, int r, enum step step,
	      struct ctl_msg *out)
{
	return ctl_wait_ms(s, r, step, out, opt_wait_ms, true);
}

