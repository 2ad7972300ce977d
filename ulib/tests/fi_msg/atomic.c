// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: every valid atomic datatype x op x kind against a
 * reference.
 */
#include "fi_msg.h"

const char *const at_kinds[AT_KINDS] = {
	"atomic", "fetch_atomic", "compare_atomic",
};

const char *const at_ops[AT_NOP] = {
	"MIN", "MAX", "SUM", "PROD", "LOR", "LAND", "BOR", "BAND", "LXOR",
	"BXOR", "ATOMIC_READ", "ATOMIC_WRITE", "CSWAP", "CSWAP_NE",
	"CSWAP_LE", "CSWAP_LT", "CSWAP_GE", "CSWAP_GT", "MSWAP",
};

/*
 * The reference: element @i of @addr after @op with operands @buf and
 * @cmp, as fi_atomic(3) defines it, in plain C of the element type; false
 * when the type has no such op (min of complex numbers, bits of floats).
 */
#define AT_COMMON							\
	case FI_SUM: *a = *a + b; break;				\
	case FI_PROD: *a = *a * b; break;				\
	case FI_LOR: *a = *a || b; break;				\
	case FI_LAND: *a = *a && b; break;				\
	case FI_LXOR: *a = (*a && !b) || (!*a && b); break;		\
	case FI_ATOMIC_READ: break;					\
	case FI_ATOMIC_WRITE: *a = b; break;				\
	case FI_CSWAP: if (c == *a) *a = b; break;			\
	case FI_CSWAP_NE: if (c != *a) *a = b; break;
#define AT_ORDER							\
	case FI_MIN: if (b < *a) *a = b; break;				\
	case FI_MAX: if (b > *a) *a = b; break;				\
	case FI_CSWAP_LE: if (c <= *a) *a = b; break;			\
	case FI_CSWAP_LT: if (c < *a) *a = b; break;			\
	case FI_CSWAP_GE: if (c >= *a) *a = b; break;			\
	case FI_CSWAP_GT: if (c > *a) *a = b; break;
#define AT_BITS								\
	case FI_BOR: *a = *a | b; break;				\
	case FI_BAND: *a = *a & b; break;				\
	case FI_BXOR: *a = *a ^ b; break;				\
	case FI_MSWAP: *a = (b & c) | (*a & ~c); break;
#define AT_TYPE(T, n, real, cases)					\
static bool op_##n(enum fi_op op, void *addr, const void *buf,		\
		   const void *cmp, size_t i)				\
{									\
	T *a = (T *)addr + i, b = ((const T *)buf)[i];			\
	T c = ((const T *)cmp)[i];					\
									\
	switch (op) {							\
	cases								\
	default:							\
		return false;						\
	}								\
	return true;							\
}									\
static void set_##n(void *p, size_t i, int v)				\
{									\
	((T *)p)[i] = real ? (T)v : (T)v + (T)(v & 1) * (T)I;		\
}									\
static bool eq_##n(const void *x, const void *y, size_t i)		\
{									\
	return ((const T *)x)[i] == ((const T *)y)[i];			\
}									\
static double get_##n(const void *p, size_t i)				\
{									\
	return (double)creall((long double complex)((const T *)p)[i]);	\
}
#define AT_INT(T, n)	AT_TYPE(T, n, 1, AT_COMMON AT_ORDER AT_BITS)
#define AT_REAL(T, n)	AT_TYPE(T, n, 1, AT_COMMON AT_ORDER)
#define AT_CPLX(T, n)	AT_TYPE(T, n, 0, AT_COMMON)

AT_INT(int8_t, i8)
AT_INT(uint8_t, u8)
AT_INT(int16_t, i16)
AT_INT(uint16_t, u16)
AT_INT(int32_t, i32)
AT_INT(uint32_t, u32)
AT_INT(int64_t, i64)
AT_INT(uint64_t, u64)
AT_REAL(float, f)
AT_REAL(double, d)
AT_CPLX(float complex, fc)
AT_CPLX(double complex, dc)
AT_REAL(long double, ld)
AT_CPLX(long double complex, ldc)
AT_INT(__int128, i128)
AT_INT(unsigned __int128, u128)

const struct atype atypes[AT_NDT] = {
#define AT(dt, T, n)	[dt] = { #dt, sizeof(T), op_##n, set_##n, eq_##n, get_##n }
	AT(FI_INT8, int8_t, i8), AT(FI_UINT8, uint8_t, u8),
	AT(FI_INT16, int16_t, i16), AT(FI_UINT16, uint16_t, u16),
	AT(FI_INT32, int32_t, i32), AT(FI_UINT32, uint32_t, u32),
	AT(FI_INT64, int64_t, i64), AT(FI_UINT64, uint64_t, u64),
	AT(FI_FLOAT, float, f), AT(FI_DOUBLE, double, d),
	AT(FI_FLOAT_COMPLEX, float complex, fc),
	AT(FI_DOUBLE_COMPLEX, double complex, dc),
	AT(FI_LONG_DOUBLE, long double, ld),
	AT(FI_LONG_DOUBLE_COMPLEX, long double complex, ldc),
	AT(FI_INT128, __int128, i128),
	AT(FI_UINT128, unsigned __int128, u128),
#undef AT
};

/*
 * Operand @which (0: the target's initial value, 1: buf, 2: compare) of
 * element @i of combination @k: small integers, exact in every type; the
 * compare value equals the target's, is above or below it by turns.
 */
static int at_val(int k, size_t i, int which)
{
	int a = (k + 3 * (int)i) % 5;

	if (which == 1)
		return (7 * k + (int)i) % 4;
	if (which == 2)
		return i % 3 == 0 ? a : i % 3 == 1 ? a + 1 : a - 1;
	return a;
}

static void at_fill(const struct atype *t, void *p, int k, size_t n,
		    int which)
{
	for (size_t i = 0; i < n; i++)
		t->set(p, i, at_val(k, i, which));
}

static ssize_t at_post(struct side *s, int to, const struct atop *a,
		       void *ctx)
{
	void *d = fi_mr_desc(s->win[WIN_MAIN].mr), *dv[1] = { d };
	struct fi_ioc iov = { a->buf, a->n }, cmp = { a->cmp, a->n };
	struct fi_ioc res = { a->res, a->n };
	struct fi_rma_ioc rma = { a->addr, a->n, a->key };
	fi_addr_t dst = s->addr[to];
	struct fi_msg_atomic msg = {
		.msg_iov = &iov, .desc = dv, .iov_count = 1, .addr = dst,
		.rma_iov = &rma, .rma_iov_count = 1, .datatype = a->dt,
		.op = a->op, .context = ctx,
	};
	struct fid_ep *ep = s->ep;

	switch (a->kind * 4 + a->form) {
	case AT_BASE * 4 + 1:
		return fi_atomicv(ep, &iov, dv, 1, dst, a->addr, a->key, a->dt,
				  a->op, ctx);
	case AT_BASE * 4 + 2:
		return fi_atomicmsg(ep, &msg, FI_COMPLETION);
	case AT_BASE * 4 + 3:
		return fi_inject_atomic(ep, a->buf, a->n, dst, a->addr, a->key,
					a->dt, a->op);
	case AT_BASE * 4:
		return fi_atomic(ep, a->buf, a->n, d, dst, a->addr, a->key,
				 a->dt, a->op, ctx);
	case AT_FETCH * 4 + 1:
		return fi_fetch_atomicv(ep, &iov, dv, 1, &res, dv, 1, dst,
					a->addr, a->key, a->dt, a->op, ctx);
	case AT_FETCH * 4 + 2:
		return fi_fetch_atomicmsg(ep, &msg, &res, dv, 1,
					  FI_COMPLETION);
	case AT_FETCH * 4:
	case AT_FETCH * 4 + 3:
		return fi_fetch_atomic(ep, a->buf, a->n, d, a->res, d, dst,
				       a->addr, a->key, a->dt, a->op, ctx);
	case AT_COMPARE * 4 + 1:
		return fi_compare_atomicv(ep, &iov, dv, 1, &cmp, dv, 1, &res,
					  dv, 1, dst, a->addr, a->key, a->dt,
					  a->op, ctx);
	case AT_COMPARE * 4 + 2:
		return fi_compare_atomicmsg(ep, &msg, &cmp, dv, 1, &res, dv, 1,
					    FI_COMPLETION);
	default:
		return fi_compare_atomic(ep, a->buf, a->n, d, a->cmp, d,
					 a->res, d, dst, a->addr, a->key,
					 a->dt, a->op, ctx);
	}
}

/* Post @a, wait for its completion; why it failed in @why, or "". */
bool at_run(struct side *s, int to, const struct atop *a, char *why,
	    size_t size)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct want w = { .ctx = ctx, .flags = FI_ATOMIC |
			  (a->kind == AT_BASE ? FI_WRITE : FI_READ) };
	struct comp c;
	ssize_t rc;

	why[0] = '\0';
	RETRY(s, rc, at_post(s, to, a, ctx));
	if (rc) {
		snprintf(why, size, "returned %zd (%s)", rc,
			 fi_strerror((int)-rc));
	} else if (a->form != 3 || a->kind != AT_BASE) {
		if (!cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, "atomic"))
			return false;
		if (a->kind != AT_BASE && (c.e.flags & FI_WRITE) &&
		    known_gap("atomic/fetch-flags"))
			w.flags = FI_ATOMIC | FI_WRITE;
		comp_mismatch(s, &c, &w, why, size);
	}
	return !why[0] && !s->abort;
}

/*
 * How many elements kind @kind of (@dt, @op) may take, up to AT_MAX; 0:
 * not valid. fi_query_atomic decides; its code is in @qrc, the
 * endpoint's *valid call's in @vrc.
 */
size_t at_valid(struct side *s, int kind, int dt, int op, int *qrc,
		int *vrc, size_t *size)
{
	static const uint64_t flags[AT_KINDS] = {
		0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC,
	};
	struct fi_atomic_attr attr = { 0 };
	size_t cnt = 0;

	*qrc = fi_query_atomic(s->domain, dt, op, &attr, flags[kind]);
	*vrc = kind == AT_BASE ? fi_atomicvalid(s->ep, dt, op, &cnt) :
	       kind == AT_FETCH ? fi_fetch_atomicvalid(s->ep, dt, op, &cnt) :
	       fi_compare_atomicvalid(s->ep, dt, op, &cnt);
	*size = attr.size;
	if (*qrc || !attr.count)
		return 0;
	return attr.count < AT_MAX ? attr.count : AT_MAX;
}

static int at_index(int kind, int dt, int op)
{
	return (kind * AT_NDT + dt) * AT_NOP + op;
}

#define AT_SCRATCH	(AT_KINDS * AT_NDT * AT_NOP)	/* slot of invalid ops */

static uint64_t at_off(int k)
{
	return AT_START + (uint64_t)k * AT_SLOT;
}

__attribute__((format(printf, 3, 4)))
void tally(struct at_tally *t, const char *why, const char *fmt, ...)
{
	va_list ap;

	t->ops++;
	if (!why[0] || t->bad++)
		return;
	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	addf(t->why, sizeof(t->why), ": %s", why);
}

/* An invalid combination: the call returns -FI_EOPNOTSUPP. */
static void at_invalid(struct side *s, struct atop *a, const char *tname)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct comp c;
	ssize_t rc;

	at_fill(&atypes[a->dt], a->buf, 0, 1, 1);
	at_fill(&atypes[a->dt], a->cmp, 0, 1, 2);
	RETRY(s, rc, at_post(s, 0, a, ctx));
	if (!rc) {	/* accepted: let whatever comes come */
		progress_for(s, QUIET_MS);
		if (cqq_take(&s->tx, ctx, &c))
			diag(s, "atomic: invalid fi_%s %s %s completed: %s",
			     at_kinds[a->kind], tname, at_ops[a->op],
			     c.e.err ? fi_strerror(c.e.err) : "success");
	}
	CHECK_EQ(s, rc, -FI_EOPNOTSUPP,
		 "atomic: fi_%s %s %s is not valid: the call is refused",
		 at_kinds[a->kind], tname, at_ops[a->op]);
}

/*
 * A point for each kind and datatype that ran an operation: "@what", and
 * @fetched for the kinds that fetch.
 */
static void tally_points(struct side *s,
			 const struct at_tally tl[AT_KINDS][AT_NDT],
			 const char *what, const char *fetched)
{
	for (int kind = 0; kind < AT_KINDS; kind++)
		for (int dt = 0; dt < AT_NDT; dt++)
			if (tl[kind][dt].ops)
				CHECK_WHY(s, !tl[kind][dt].bad, tl[kind][dt].why,
					  "atomic: fi_%s %s: %u ops: %s%s",
					  at_kinds[kind], atypes[dt].name,
					  tl[kind][dt].ops, what,
					  kind ? fetched : "");
}

/*
 * Rank 1 of the atomic case: every valid combination once, into its own
 * slot of rank 0's window, fetched values checked against the initial
 * ones; the first invalid one of each kind must be refused.
 */
static void atomic_peer(struct side *s)
{
	struct at_tally tl[AT_KINDS][AT_NDT] = { 0 };
	uint8_t *p = s->win[WIN_MAIN].b.p + AT_START;
	uint8_t old[AT_SLOT] __attribute__((aligned(16)));
	unsigned int nvalid = 0, disagree = 0, badsize = 0, badquery = 0;
	bool tried[AT_KINDS] = { false };
	char why[128], dis[128] = "";

	for (int kind = 0; kind < AT_KINDS; kind++) {
		for (int dt = 0; dt < AT_NDT; dt++) {
			const struct atype *t = &atypes[dt];

			for (int op = 0; op < AT_NOP && !s->abort; op++) {
				int k = at_index(kind, dt, op), qrc, vrc;
				size_t size, n = at_valid(s, kind, dt, op,
							  &qrc, &vrc, &size);
				struct atop a = {
					.kind = kind, .form = (dt + op) % 4,
					.dt = dt, .op = op, .n = n ? n : 1,
					.addr = s->rbase[0][WIN_MAIN] +
						at_off(n ? k : AT_SCRATCH),
					.key = s->rkey[0][WIN_MAIN], .buf = p,
					.cmp = p + AT_SLOT,
					.res = p + 2 * AT_SLOT,
				};

				if (!qrc != !vrc && !disagree++)
					snprintf(dis, sizeof(dis),
						 "%s %s %s: fi_query_atomic %d, *valid %d",
						 at_kinds[kind], t->name,
						 at_ops[op], qrc, vrc);
				if (!n) {
					badquery += qrc != -FI_EOPNOTSUPP;
					if (tried[kind] ||
					    known_gap("atomic/invalid-call"))
						continue;
					tried[kind] = true;
					at_invalid(s, &a, t->name);
					continue;
				}
				nvalid++;
				badsize += size != t->size;
				if (a.form == 3 && (kind != AT_BASE ||
				    n * t->size > s->info->tx_attr->inject_size))
					a.form = 0;
				at_fill(t, p, k, n, 1);
				at_fill(t, p + AT_SLOT, k, n, 2);
				memset(a.res, FILL_BYTE, AT_SLOT);
				at_fill(t, old, k, n, 0);
				at_run(s, 0, &a, why, sizeof(why));
				for (size_t i = 0; i < n && kind && !why[0]; i++)
					if (!t->eq(a.res, old, i))
						snprintf(why, sizeof(why),
							 "fetched element %zu is %g, want %g",
							 i, t->get(a.res, i),
							 t->get(old, i));
				tally(&tl[kind][dt], why, "%s x%zu%s",
				      at_ops[op], n,
				      a.form == 1 ? " (v)" : a.form == 2 ?
				      " (msg)" : a.form == 3 ? " (inject)" : "");
			}
		}
	}
	tally_points(s, tl, "completions", " and fetched values");
	CHECK_WHY(s, !disagree, dis,
		  "atomic: fi_query_atomic and fi_*atomicvalid agree");
	CHECK_EQ(s, badsize, 0, "atomic: fi_query_atomic gives the datatype's size");
	CHECK_EQ(s, badquery, 0,
			 "atomic: fi_query_atomic says -FI_EOPNOTSUPP for every invalid combination");
	step_to(s, 0, STEP_DONE, nvalid, NULL, 0);
	peer_loop(s);
}

/* Why slot @k of rank 0's window is not its image; elements by value. */
static bool at_slot_bad(struct side *s, int k, const struct atype *t,
			size_t n, char *why, size_t size)
{
	const uint8_t *p = s->win[WIN_MAIN].b.p + at_off(k);
	const uint8_t *q = s->win[WIN_MAIN].img + at_off(k);

	for (size_t i = 0; i < n; i++)
		if (!t->eq(p, q, i)) {
			snprintf(why, size, "element %zu is %g, want %g", i,
				 t->get(p, i), t->get(q, i));
			return true;
		}
	if (memcmp(p + n * t->size, q + n * t->size, AT_SLOT - n * t->size)) {
		snprintf(why, size, "bytes past the %zu elements written", n);
		return true;
	}
	return false;
}

/*
 * Atomics: every datatype x op x kind fi_query_atomic says is valid, with
 * up to AT_MAX elements, by rank 1 on its own slot of rank 0's window;
 * rank 0's memory and the fetched values must be what plain C computes.
 * Forms (plain, v, msg, inject) rotate; invalid combinations are refused.
 */
void case_atomic(struct side *s)
{
	struct at_tally tl[AT_KINDS][AT_NDT] = { 0 };
	uint8_t buf[AT_SLOT] __attribute__((aligned(16)));
	uint8_t cmp[AT_SLOT] __attribute__((aligned(16)));
	unsigned int nvalid = 0, per[AT_KINDS] = { 0 }, noref = 0;
	struct win *x = &s->win[WIN_MAIN];
	uint64_t end;
	struct ctl_msg m;
	char why[128];

	if (!rma_setup(s))
		return;
	if (s->rank) {
		atomic_peer(s);
		return;
	}
	if (known_gap("atomic/invalid-call"))
		skip("atomic/invalid-call: %s: %s", opt_prov,
		     known_gap("atomic/invalid-call"));
	for (int k = 0; k < AT_SCRATCH; k++)
		at_fill(&atypes[k / AT_NOP % AT_NDT], x->b.p + at_off(k), k,
			AT_MAX, 0);
	memcpy(x->img, x->b.p, x->b.len);
	if (!ctl_wait_ms(s, 1, STEP_DONE, &m, 6 * opt_wait_ms, true))
		goto out;
	/* the reference, on the image */
	for (int k = 0; k < AT_SCRATCH; k++) {
		int kind = k / (AT_NDT * AT_NOP), dt = k / AT_NOP % AT_NDT;
		int op = k % AT_NOP, qrc, vrc;
		size_t size, n = at_valid(s, kind, dt, op, &qrc, &vrc, &size);

		if (!n)
			continue;
		nvalid++;
		per[kind]++;
		at_fill(&atypes[dt], buf, k, n, 1);
		at_fill(&atypes[dt], cmp, k, n, 2);
		for (size_t i = 0; i < n; i++)
			if (!atypes[dt].op(op, x->img + at_off(k), buf, cmp, i) &&
			    !noref++)
				diag(s, "atomic: no reference for %s %s",
				     atypes[dt].name, at_ops[op]);
	}
	CHECK_EQ(s, m.a, nvalid,
		 "atomic: both ranks find the same valid combinations");
	diag(s, "atomic: %s: %u valid combinations of %d: %u atomic, %u fetch_atomic, %u compare_atomic",
	     opt_prov, nvalid, AT_SCRATCH, per[AT_BASE], per[AT_FETCH],
	     per[AT_COMPARE]);
	/* injected ones have no completion: wait for all to land */
	end = now_ms() + opt_wait_ms;
	for (int k = 0; k < AT_SCRATCH && !s->abort; k++) {
		int kind = k / (AT_NDT * AT_NOP), dt = k / AT_NOP % AT_NDT;
		int qrc, vrc;
		size_t size, n = at_valid(s, kind, dt, k % AT_NOP, &qrc, &vrc,
					  &size);
		bool bad;

		if (!n)
			continue;
		while ((bad = at_slot_bad(s, k, &atypes[dt], n, why,
					  sizeof(why))) &&
		       progress_until(s, end))
			;
		tally(&tl[kind][dt], bad ? why : "", "%s x%zu",
		      at_ops[k % AT_NOP], n);
		/* equal by value: padding (long double) may differ */
		memcpy(x->img + at_off(k), x->b.p + at_off(k),
		       n * atypes[dt].size);
	}
	tally_points(s, tl, "target memory is the reference's", "");
	memcpy(x->img + at_off(AT_SCRATCH), x->b.p + at_off(AT_SCRATCH),
	       AT_SLOT);
	win_check(s, WIN_MAIN, 0, "atomic: nothing else in the window written");
out:
	stop_peers(s);
}

