// SPDX-License-Identifier: GPL-2.0
/*
 * atomic_test: the remote-atomic engine. Which datatype, op and kind are
 * valid, against a table of this test's own, and what fi_query_atomic()
 * reports; every valid combination on random elements, aligned and not,
 * against a serial reference written here; 4 threads updating one element
 * at once, through each path of the engine, to exact totals.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <float.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include "core/kfab_atomic.h"
#include "tests/tap.h"

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

/* xorshift64*, fixed seed: every run the same */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dULL;
}

/* ------------------------------------------------------------------ */
/* the datatypes: random values, equality by value, the reference */

/* integers: -3..3 (a value often equal to another) or any bits */
#define GEN_INT(name, T)						\
static void gen_##name(void *p, bool small)				\
{									\
	uint64_t r[2] = { rnd(), rnd() };				\
	T x;								\
									\
	if (small)							\
		x = (T)((int)(rnd() % 7) - 3);				\
	else								\
		memcpy(&x, r, sizeof(x));				\
	memcpy(p, &x, sizeof(x));					\
}

/* small integers, so that every sum and product is exact */
static int small_int(bool small)
{
	return small ? (int)(rnd() % 17) - 8 : (int)(rnd() % 2001) - 1000;
}

#define GEN_REAL(name, T)						\
static void gen_##name(void *p, bool small)				\
{									\
	T x = small_int(small);						\
									\
	memcpy(p, &x, sizeof(x));					\
}

/* a complex number is laid out as an array of its real, imaginary parts */
#define GEN_CPLX(name, R)						\
static void gen_##name(void *p, bool small)				\
{									\
	R x[2] = { small_int(small), small_int(small) };		\
									\
	memcpy(p, &x, sizeof(x));					\
}

/*
 * same_<type>(): a value equal to *@src, -0 for a floating 0 (not the
 * same bits); eq_<type>(): equality by value; ref_<type>(): fi_atomic(3)'s
 * definitions, one element after the other, on aligned arrays, taken[]
 * counting the compare-and-swaps not done and done.
 */
#define REF_ORDERED							\
		case FI_MIN:						\
			if (s[i] < a)					\
				d[i] = s[i];				\
			break;						\
		case FI_MAX:						\
			if (s[i] > a)					\
				d[i] = s[i];				\
			break;						\
		case FI_CSWAP_LE:					\
			t = c[i] <= a;					\
			break;						\
		case FI_CSWAP_LT:					\
			t = c[i] < a;					\
			break;						\
		case FI_CSWAP_GE:					\
			t = c[i] >= a;					\
			break;						\
		case FI_CSWAP_GT:					\
			t = c[i] > a;					\
			break;

#define REF_BITWISE							\
		case FI_BOR:						\
			d[i] = a | s[i];				\
			break;						\
		case FI_BAND:						\
			d[i] = a & s[i];				\
			break;						\
		case FI_BXOR:						\
			d[i] = a ^ s[i];				\
			break;						\
		case FI_MSWAP:						\
			d[i] = (s[i] & c[i]) | (a & ~c[i]);		\
			break;

#define REF_NONE

/* @W: the type sums and products are computed in, wrapping for integers */
#define TYPE(name, T, W, ordered, bitwise)				\
static void same_##name(void *dst, const void *src)			\
{									\
	T x;								\
									\
	memcpy(&x, src, sizeof(x));					\
	if (x == 0)							\
		x = -x;							\
	memcpy(dst, &x, sizeof(x));					\
}									\
									\
static bool eq_##name(const void *a, const void *b)			\
{									\
	T x, y;								\
									\
	memcpy(&x, a, sizeof(x));					\
	memcpy(&y, b, sizeof(y));					\
	return x == y;							\
}									\
									\
static void ref_##name(enum fi_op op, void *dp, const void *sp,		\
		       const void *cp, size_t n, int taken[2])		\
{									\
	const T *s = sp, *c = cp;					\
	T *d = dp;							\
									\
	for (size_t i = 0; i < n; i++) {				\
		T a = d[i];						\
		int t = -1;						\
									\
		switch (op) {						\
		case FI_SUM:						\
			d[i] = (T)((W)a + (W)s[i]);			\
			break;						\
		case FI_PROD:						\
			d[i] = (T)((W)a * (W)s[i]);			\
			break;						\
		case FI_LOR:						\
			d[i] = (a || s[i]) ? 1 : 0;			\
			break;						\
		case FI_LAND:						\
			d[i] = (a && s[i]) ? 1 : 0;			\
			break;						\
		case FI_LXOR:						\
			d[i] = ((a && !s[i]) || (!a && s[i])) ? 1 : 0;	\
			break;						\
		case FI_ATOMIC_READ:					\
			break;						\
		case FI_ATOMIC_WRITE:					\
			d[i] = s[i];					\
			break;						\
		case FI_CSWAP:						\
			t = c[i] == a;					\
			break;						\
		case FI_CSWAP_NE:					\
			t = c[i] != a;					\
			break;						\
		ordered							\
		bitwise							\
		default:						\
			abort();					\
		}							\
		if (t >= 0)						\
			taken[t]++;					\
		if (t > 0)						\
			d[i] = s[i];					\
	}								\
}

/* integer sums and products are computed in it, wrapping */
#define U128		unsigned __int128

GEN_INT(i8, int8_t)
TYPE(i8, int8_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(u8, uint8_t)
TYPE(u8, uint8_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(i16, int16_t)
TYPE(i16, int16_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(u16, uint16_t)
TYPE(u16, uint16_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(i32, int32_t)
TYPE(i32, int32_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(u32, uint32_t)
TYPE(u32, uint32_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(i64, int64_t)
TYPE(i64, int64_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(u64, uint64_t)
TYPE(u64, uint64_t, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(i128, __int128)
TYPE(i128, __int128, U128, REF_ORDERED, REF_BITWISE)
GEN_INT(u128, U128)
TYPE(u128, U128, U128, REF_ORDERED, REF_BITWISE)
GEN_REAL(flt, float)
TYPE(flt, float, float, REF_ORDERED, REF_NONE)
GEN_REAL(dbl, double)
TYPE(dbl, double, double, REF_ORDERED, REF_NONE)
GEN_REAL(ldbl, long double)
TYPE(ldbl, long double, long double, REF_ORDERED, REF_NONE)
GEN_CPLX(cflt, float)
TYPE(cflt, float complex, float complex, REF_NONE, REF_NONE)
GEN_CPLX(cdbl, double)
TYPE(cdbl, double complex, double complex, REF_NONE, REF_NONE)
GEN_CPLX(cldbl, long double)
TYPE(cldbl, long double complex, long double complex, REF_NONE, REF_NONE)

struct ttype {
	enum fi_datatype dt;
	const char *name;
	size_t size;
	char cls;		/* 'i' integer, 'r' real, 'c' complex */
	void (*gen)(void *p, bool small);
	void (*same)(void *dst, const void *src);
	bool (*eq)(const void *a, const void *b);
	void (*ref)(enum fi_op op, void *dp, const void *sp, const void *cp,
		    size_t n, int taken[2]);
};

#define TT(dt, T, cls, name) \
	{ dt, #dt, sizeof(T), cls, gen_##name, same_##name, eq_##name, \
	  ref_##name }

static const struct ttype types[] = {
	TT(FI_INT8, int8_t, 'i', i8),
	TT(FI_UINT8, uint8_t, 'i', u8),
	TT(FI_INT16, int16_t, 'i', i16),
	TT(FI_UINT16, uint16_t, 'i', u16),
	TT(FI_INT32, int32_t, 'i', i32),
	TT(FI_UINT32, uint32_t, 'i', u32),
	TT(FI_INT64, int64_t, 'i', i64),
	TT(FI_UINT64, uint64_t, 'i', u64),
	TT(FI_FLOAT, float, 'r', flt),
	TT(FI_DOUBLE, double, 'r', dbl),
	TT(FI_FLOAT_COMPLEX, float complex, 'c', cflt),
	TT(FI_DOUBLE_COMPLEX, double complex, 'c', cdbl),
	TT(FI_LONG_DOUBLE, long double, 'r', ldbl),
	TT(FI_LONG_DOUBLE_COMPLEX, long double complex, 'c', cldbl),
	TT(FI_INT128, __int128, 'i', i128),
	TT(FI_UINT128, U128, 'i', u128),
};

/* ------------------------------------------------------------------ */
/* validity and fi_query_atomic() */

/*
 * Per op: the classes of datatype it is defined on and the kinds of call
 * (w fi_atomic, f fi_fetch_atomic, c fi_compare_atomic) that take it.
 */
static const struct {
	const char *name;
	const char *cls;
	const char *kinds;
} expect[FI_ATOMIC_OP_LAST] = {
	[FI_MIN]		= { "FI_MIN", "ir", "wf" },
	[FI_MAX]		= { "FI_MAX", "ir", "wf" },
	[FI_SUM]		= { "FI_SUM", "irc", "wf" },
	[FI_PROD]		= { "FI_PROD", "irc", "wf" },
	[FI_LOR]		= { "FI_LOR", "irc", "wf" },
	[FI_LAND]		= { "FI_LAND", "irc", "wf" },
	[FI_BOR]		= { "FI_BOR", "i", "wf" },
	[FI_BAND]		= { "FI_BAND", "i", "wf" },
	[FI_LXOR]		= { "FI_LXOR", "irc", "wf" },
	[FI_BXOR]		= { "FI_BXOR", "i", "wf" },
	[FI_ATOMIC_READ]	= { "FI_ATOMIC_READ", "irc", "f" },
	[FI_ATOMIC_WRITE]	= { "FI_ATOMIC_WRITE", "irc", "wf" },
	[FI_CSWAP]		= { "FI_CSWAP", "irc", "c" },
	[FI_CSWAP_NE]		= { "FI_CSWAP_NE", "irc", "c" },
	[FI_CSWAP_LE]		= { "FI_CSWAP_LE", "ir", "c" },
	[FI_CSWAP_LT]		= { "FI_CSWAP_LT", "ir", "c" },
	[FI_CSWAP_GE]		= { "FI_CSWAP_GE", "ir", "c" },
	[FI_CSWAP_GT]		= { "FI_CSWAP_GT", "ir", "c" },
	[FI_MSWAP]		= { "FI_MSWAP", "i", "c" },
};

static const char kind_chars[] = "wfc";
static const uint64_t kind_flags[] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };

static bool expected(const struct ttype *t, enum fi_op op, int kind)
{
	return strchr(expect[op].cls, t->cls) &&
	       strchr(expect[op].kinds, kind_chars[kind]);
}

static void test_valid(void)
{
	static const enum fi_datatype bad_dts[] = {
		FI_UINT128 + 1, FI_VOID, (enum fi_datatype)-1,
	};
	/* FI_BARRIER, of enum fi_collective_op, is 0: FI_MIN */
	static const enum fi_op bad_ops[] = {
		FI_ATOMIC_OP_LAST, FI_NOOP, (enum fi_op)-1,
	};
	struct fi_atomic_attr attr;
	int bad;

	for (size_t i = 0; i < ARRAY_LEN(types); i++) {
		const struct ttype *t = &types[i];
		int nvalid = 0;

		bad = 0;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			for (int k = 0; k < 3; k++) {
				int want = expected(t, op, k) ? 0 :
								-FI_EOPNOTSUPP;

				nvalid += !want;
				if (kfab_atomic_valid(t->dt, op, k) == want)
					continue;
				bad++;
				tap_diag("%s %s kind %c: want %d", t->name,
					 expect[op].name, kind_chars[k], want);
			}
		}
		for (size_t j = 0; j < ARRAY_LEN(bad_ops); j++) {
			for (int k = 0; k < 3; k++)
				bad += kfab_atomic_valid(t->dt, bad_ops[j],
							 k) != -FI_EOPNOTSUPP;
		}
		bad += kfab_atomic_valid(t->dt, FI_SUM, 3) != -FI_EOPNOTSUPP;
		TAP_OK(!bad && kfab_atomic_dtsize(t->dt) == t->size &&
		       !strcmp(kfab_atomic_dtname(t->dt), t->name),
		       "%s: %zu bytes, %d of the op x kind valid as expected",
		       t->name, t->size, nvalid);

		bad = 0;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			for (int k = 0; k < 3; k++) {
				int ret;

				attr.size = attr.count = 12345;
				ret = kfab_atomic_query(t->dt, op, &attr,
							kind_flags[k], 8192);
				if (!expected(t, op, k)) {
					bad += ret != -FI_EOPNOTSUPP;
					continue;
				}
				bad += ret != 0 || attr.size != t->size ||
				       attr.count !=
				       8192 / t->size / (k == 2 ? 2 : 1);
			}
		}
		TAP_OK(!bad, "%s: fi_query_atomic size and count", t->name);
	}

	bad = 0;
	for (size_t i = 0; i < ARRAY_LEN(bad_dts); i++) {
		bad += kfab_atomic_dtsize(bad_dts[i]) != 0;
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
			for (int k = 0; k < 3; k++)
				bad += kfab_atomic_valid(bad_dts[i], op, k) !=
				       -FI_EOPNOTSUPP;
	}
	TAP_OK(!bad, "unknown datatypes: size 0, no op valid");

	bad = 0;
	for (int op = 0; op < FI_ATOMIC_OP_LAST; op++)
		bad += strcmp(kfab_atomic_opname(op), expect[op].name) != 0;
	TAP_OK(!bad && !strcmp(kfab_atomic_opname(FI_SUM), "FI_SUM") &&
	       !strcmp(kfab_atomic_dtname(FI_UINT64), "FI_UINT64") &&
	       kfab_atomic_opname(FI_NOOP) && kfab_atomic_dtname(FI_VOID),
	       "op and datatype names");

	TAP_EQ(kfab_atomic_query(FI_UINT64, FI_CSWAP, &attr,
				 FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC, 8192),
	       -FI_EBADFLAGS, "query: FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC");
	TAP_EQ(kfab_atomic_query(FI_UINT64, FI_SUM, &attr, FI_SEND, 8192),
	       -FI_EBADFLAGS, "query: another flag");
	TAP_EQ(kfab_atomic_query(FI_UINT64, FI_SUM, &attr, FI_TAGGED, 8192),
	       -FI_EOPNOTSUPP, "query: FI_TAGGED");
	TAP_EQ(kfab_atomic_query(FI_UINT64, FI_CSWAP, &attr,
				 FI_TAGGED | FI_COMPARE_ATOMIC, 8192),
	       -FI_EOPNOTSUPP, "query: FI_TAGGED | FI_COMPARE_ATOMIC");
	TAP_EQ(kfab_atomic_query(FI_UINT64, FI_SUM, NULL, 0, 8192),
	       -FI_EINVAL, "query: NULL attr");
	TAP_EQ(kfab_atomic_query(FI_VOID, FI_SUM, &attr, 0, 8192),
	       -FI_EOPNOTSUPP, "query: FI_VOID");
	TAP_OK(kfab_atomic_query(FI_LONG_DOUBLE_COMPLEX, FI_CSWAP_NE, &attr,
				 FI_COMPARE_ATOMIC, 8192) == 0 &&
	       attr.size == 32 && attr.count == 128,
	       "query: FI_LONG_DOUBLE_COMPLEX compare: 32 bytes, 128 of them");
}

/* ------------------------------------------------------------------ */
/* every valid combination against the reference */

#define NELEM	17
#define ROUNDS	4
#define GUARD	64
#define POISON	0x5a

static bool is_cswap(enum fi_op op)
{
	return op >= FI_CSWAP && op <= FI_CSWAP_GT;
}

/* the operands, the reference's target: malloc()ed, aligned for any type */
static unsigned char *in_dst, *in_src, *in_cmp, *ref_dst;

/* @buf: a guard, NELEM elements at @off, a guard; all poisoned */
static unsigned char *guarded(unsigned char *buf, size_t off)
{
	memset(buf, POISON, GUARD * 2 + NELEM * 32);
	return buf + GUARD + off;
}

static bool guards_intact(const unsigned char *buf, size_t off, size_t len)
{
	for (size_t i = 0; i < GUARD * 2 + NELEM * 32; i++)
		if ((i < GUARD + off || i >= GUARD + off + len) &&
		    buf[i] != POISON)
			return false;
	return true;
}

static void hex(char *out, const unsigned char *p, size_t size)
{
	for (size_t i = size; i-- > 0; out += 2)
		sprintf(out, "%02x", p[i]);
}

/*
 * x87's long double: 10 bytes of value in 16, the rest padding that a
 * compare of bits, not values, would see
 */
static void scramble_padding(const struct ttype *t, unsigned char *buf)
{
	if (LDBL_MANT_DIG != 64 || (t->dt != FI_LONG_DOUBLE &&
				    t->dt != FI_LONG_DOUBLE_COMPLEX))
		return;
	for (size_t i = 0; i < NELEM * t->size; i++)
		if (i % 16 >= 10)
			buf[i] = rnd();
}

/* one apply of @op as @kind at @off; false, with a diagnostic, on a mismatch */
static bool check_once(const struct ttype *t, enum fi_op op, int kind,
		       size_t off, int taken[2])
{
	static _Alignas(64) unsigned char ebuf[4][GUARD * 2 + NELEM * 32];
	size_t sz = t->size, len = NELEM * sz;
	unsigned char *edst, *esrc, *ecmp, *eres;
	char got[65], want[65];

	for (size_t i = 0; i < NELEM; i++) {
		unsigned char *v[] = { in_dst + i * sz, in_src + i * sz,
				       in_cmp + i * sz };

		for (int j = 0; j < 3; j++) {
			if (rnd() % 4 == 0)
				memset(v[j], 0, sz);
			else
				t->gen(v[j], rnd() % 2);
		}
		if (is_cswap(op) && rnd() % 2)
			t->same(v[2], v[0]);
	}
	scramble_padding(t, in_dst);
	scramble_padding(t, in_src);
	scramble_padding(t, in_cmp);
	memcpy(ref_dst, in_dst, len);
	t->ref(op, ref_dst, in_src, in_cmp, NELEM, taken);

	edst = guarded(ebuf[0], off);
	esrc = guarded(ebuf[1], off);
	ecmp = guarded(ebuf[2], off);
	eres = guarded(ebuf[3], off);
	memcpy(edst, in_dst, len);
	memcpy(esrc, in_src, len);
	memcpy(ecmp, in_cmp, len);
	kfab_atomic_apply(t->dt, op, edst, op == FI_ATOMIC_READ ? NULL : esrc,
			  kind == KFAB_ATOMIC_COMPARE ? ecmp : NULL,
			  kind == KFAB_ATOMIC_WRITE ? NULL : eres, NELEM);

	for (size_t i = 0; i < NELEM; i++) {
		const unsigned char *p = edst + i * sz, *q = ref_dst + i * sz;
		const char *what = "dst";

		if (t->eq(p, q)) {
			if (kind == KFAB_ATOMIC_WRITE)
				continue;
			p = eres + i * sz;
			q = in_dst + i * sz;
			what = "res";
			if (t->eq(p, q))
				continue;
		}
		hex(got, p, sz);
		hex(want, q, sz);
		tap_diag("%s %s kind %c offset %zu: %s[%zu] %s, want %s",
			 t->name, expect[op].name, kind_chars[kind], off, what,
			 i, got, want);
		return false;
	}
	if (!guards_intact(ebuf[0], off, len) ||
	    !guards_intact(ebuf[1], off, len) ||
	    !guards_intact(ebuf[2], off, len) ||
	    !guards_intact(ebuf[3], off,
			   kind == KFAB_ATOMIC_WRITE ? 0 : len)) {
		tap_diag("%s %s kind %c offset %zu: wrote out of bounds",
			 t->name, expect[op].name, kind_chars[kind], off);
		return false;
	}
	return true;
}

static void test_apply(void)
{
	/* ROUNDS aligned, ROUNDS at an odd offset */
	static const size_t offsets[] = { 0, 3 };
	unsigned char *mem = malloc(4 * NELEM * 32);

	in_dst = mem;
	in_src = in_dst + NELEM * 32;
	in_cmp = in_src + NELEM * 32;
	ref_dst = in_cmp + NELEM * 32;
	for (size_t i = 0; i < ARRAY_LEN(types); i++) {
		const struct ttype *t = &types[i];

		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			int taken[2] = { 0, 0 }, runs = 0;
			bool ok = true;

			for (int k = 0; k < 3; k++) {
				if (!expected(t, op, k))
					continue;
				for (int r = 0; r < 2 * ROUNDS && ok; r++) {
					ok = check_once(t, op, k,
							offsets[r / ROUNDS],
							taken);
					runs++;
				}
			}
			if (!runs)
				continue;
			if (is_cswap(op) && ok && (!taken[0] || !taken[1])) {
				tap_diag("swapped %d, kept %d", taken[1],
					 taken[0]);
				ok = false;
			}
			TAP_OK(ok, "%s %s: %d x %d elements as the reference",
			       t->name, expect[op].name, runs, NELEM);
		}
	}
	free(mem);
}

/* ------------------------------------------------------------------ */
/* threads on one element */

#define NTHREADS	4
#define NITER		100000
#define NTOTAL		(NTHREADS * NITER)

enum conc_mode { CONC_ADD, CONC_FETCH_ADD, CONC_CSWAP_INC };

#define CONC_BUF	64	/* the bytes test_threads() races on */

struct conc {
	enum conc_mode mode;
	enum fi_datatype dt;
	void *target;
	const void *one;	/* CONC_ADD: 1 as dt */
	uint64_t *old;		/* CONC_FETCH_ADD: NTOTAL results */
	long retries;
};

struct worker {
	struct conc *c;
	int id;
};

/* *@v += 1 for the datatypes of the compare-and-swap loops */
static void incr(enum fi_datatype dt, void *v)
{
	int32_t i32;
	uint64_t u64;
	__int128 i128;

	switch (dt) {
	case FI_INT32:
		memcpy(&i32, v, sizeof(i32));
		i32++;
		memcpy(v, &i32, sizeof(i32));
		break;
	case FI_UINT64:
		memcpy(&u64, v, sizeof(u64));
		u64++;
		memcpy(v, &u64, sizeof(u64));
		break;
	default:
		memcpy(&i128, v, sizeof(i128));
		i128++;
		memcpy(v, &i128, sizeof(i128));
		break;
	}
}

static void *conc_thread(void *arg)
{
	struct worker *w = arg;
	struct conc *c = w->c;
	size_t sz = kfab_atomic_dtsize(c->dt);
	unsigned char old[16], val[16], got[16];
	long retries = 0;

	for (int i = 0; i < NITER; i++) {
		switch (c->mode) {
		case CONC_ADD:
			kfab_atomic_apply(c->dt, FI_SUM, c->target, c->one,
					  NULL, NULL, 1);
			break;
		case CONC_FETCH_ADD:
			kfab_atomic_apply(c->dt, FI_SUM, c->target, c->one,
					  NULL, &c->old[w->id * NITER + i], 1);
			break;
		case CONC_CSWAP_INC:
			kfab_atomic_apply(c->dt, FI_ATOMIC_READ, c->target,
					  NULL, NULL, old, 1);
			for (;;) {
				memcpy(val, old, sz);
				incr(c->dt, val);
				kfab_atomic_apply(c->dt, FI_CSWAP, c->target,
						  val, old, got, 1);
				if (!memcmp(got, old, sz))
					break;
				memcpy(old, got, sz);
				retries++;
			}
			break;
		}
	}
	__atomic_fetch_add(&c->retries, retries, __ATOMIC_RELAXED);
	return NULL;
}

static void conc_run(struct conc *c)
{
	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .c = c, .id = i };
		pthread_create(&th[i], NULL, conc_thread, &w[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
}

/*
 * A zeroed @buf of CONC_BUF bytes, then a conc of @mode on @dt at @off of
 * it (@one, @old as in struct conc): its retries.
 */
static long conc_at(unsigned char *buf, size_t off, enum conc_mode mode,
		    enum fi_datatype dt, const void *one, uint64_t *old)
{
	struct conc c = {
		.mode = mode, .dt = dt, .target = buf + off, .one = one,
		.old = old,
	};

	memset(buf, 0, CONC_BUF);
	conc_run(&c);
	return c.retries;
}

static void test_threads(void)
{
	static _Alignas(64) unsigned char buf[CONC_BUF];
	static uint64_t old[NTOTAL];
	static unsigned char seen[NTOTAL];
	const uint64_t one = 1;
	const double done = 1.0;
	long retries;
	uint64_t u64;
	int32_t i32;
	__int128 i128;
	double d;
	int bad;

	conc_at(buf, 0, CONC_ADD, FI_UINT64, &one, NULL);
	memcpy(&u64, buf, sizeof(u64));
	TAP_EQ(u64, NTOTAL, "%d threads x %d FI_SUM 1 on a uint64", NTHREADS,
	       NITER);

	conc_at(buf, 0, CONC_ADD, FI_DOUBLE, &done, NULL);
	memcpy(&d, buf, sizeof(d));
	TAP_OK(d == NTOTAL, "FI_SUM 1.0 on a double: %.1f", d);

	conc_at(buf, 5, CONC_ADD, FI_DOUBLE, &done, NULL);
	memcpy(&d, buf + 5, sizeof(d));
	TAP_OK(d == NTOTAL, "FI_SUM 1.0 on a misaligned double: %.1f", d);

	conc_at(buf, 0, CONC_FETCH_ADD, FI_UINT64, &one, old);
	memcpy(&u64, buf, sizeof(u64));
	bad = 0;
	for (int i = 0; i < NTOTAL; i++) {
		if (old[i] >= NTOTAL || seen[old[i]]++)
			bad++;
	}
	TAP_OK(u64 == NTOTAL && !bad,
	       "fetch FI_SUM: each old value 0..%d once (%d not)", NTOTAL - 1,
	       bad);

	retries = conc_at(buf, 0, CONC_CSWAP_INC, FI_INT32, NULL, NULL);
	memcpy(&i32, buf, sizeof(i32));
	TAP_EQ(i32, NTOTAL, "FI_CSWAP increments on an int32 (%ld retries)",
	       retries);

	retries = conc_at(buf, 3, CONC_CSWAP_INC, FI_UINT64, NULL, NULL);
	memcpy(&u64, buf + 3, sizeof(u64));
	TAP_EQ(u64, NTOTAL,
	       "FI_CSWAP increments on a misaligned uint64 (%ld retries)",
	       retries);

	retries = conc_at(buf, 16, CONC_CSWAP_INC, FI_INT128, NULL, NULL);
	memcpy(&i128, buf + 16, sizeof(i128));
	TAP_OK(i128 == NTOTAL,
	       "FI_CSWAP increments on an FI_INT128 (%ld retries)", retries);
}

int main(void)
{
	tap_start("atomic_test");
	test_valid();
	test_apply();
	test_threads();
	return tap_done();
}
