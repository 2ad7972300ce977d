// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the remote-atomic engine (kfab_atomic.h).
 *
 * Each op on an element, per fi_atomic(3), with addr the target, buf the
 * operand and compare the compare value:
 *
 *   FI_MIN		if (buf < addr)		addr = buf
 *   FI_MAX		if (buf > addr)		addr = buf
 *   FI_CSWAP		if (compare == addr)	addr = buf
 *   FI_CSWAP_NE	if (compare != addr)	addr = buf
 *   FI_CSWAP_LE	if (compare <= addr)	addr = buf
 *   FI_CSWAP_LT	if (compare < addr)	addr = buf
 *   FI_CSWAP_GE	if (compare >= addr)	addr = buf
 *   FI_CSWAP_GT	if (compare > addr)	addr = buf
 *   FI_MSWAP		addr = (buf & compare) | (addr & ~compare)
 *   FI_SUM FI_PROD	addr = addr + buf, addr * buf (integers wrap)
 *   FI_BOR FI_BAND FI_BXOR	addr = addr | buf, addr & buf, addr ^ buf
 *   FI_LOR FI_LAND FI_LXOR	addr = 1 or 0, a value being true when != 0
 *   FI_ATOMIC_WRITE	addr = buf
 *   FI_ATOMIC_READ	nothing: the old value is the result
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include "kfab_atomic.h"

#define OP(op)		(1U << (op))

/* the ops each class of datatype has */
#define OPS_ANY		(OP(FI_SUM) | OP(FI_PROD) | OP(FI_LOR) | OP(FI_LAND) | \
			 OP(FI_LXOR) | OP(FI_ATOMIC_READ) |		\
			 OP(FI_ATOMIC_WRITE) | OP(FI_CSWAP) | OP(FI_CSWAP_NE))
#define OPS_ORDERED	(OP(FI_MIN) | OP(FI_MAX) | OP(FI_CSWAP_LE) |	\
			 OP(FI_CSWAP_LT) | OP(FI_CSWAP_GE) | OP(FI_CSWAP_GT))
#define OPS_BITWISE	(OP(FI_BOR) | OP(FI_BAND) | OP(FI_BXOR) | OP(FI_MSWAP))
#define OPS_INT		(OPS_ANY | OPS_ORDERED | OPS_BITWISE)
#define OPS_REAL	(OPS_ANY | OPS_ORDERED)
#define OPS_COMPLEX	OPS_ANY

/* the ops of each kind of call */
#define OPS_ALL		(OP(FI_ATOMIC_OP_LAST) - 1)
#define OPS_COMPARE	(OP(FI_CSWAP) | OP(FI_CSWAP_NE) | OP(FI_CSWAP_LE) | \
			 OP(FI_CSWAP_LT) | OP(FI_CSWAP_GE) | OP(FI_CSWAP_GT) | \
			 OP(FI_MSWAP))

static const uint32_t kind_ops[] = {
	[KFAB_ATOMIC_WRITE] = OPS_ALL & ~OPS_COMPARE & ~OP(FI_ATOMIC_READ),
	[KFAB_ATOMIC_FETCH] = OPS_ALL & ~OPS_COMPARE,
	[KFAB_ATOMIC_COMPARE] = OPS_COMPARE,
};

/*
 * calc_<type>(): the new value of the element whose old value is at @vp,
 * into @vp, from the operand at @sp and the compare value at @cp (none
 * aligned); false when the element stays as it is. The new value is built
 * in s; take says whether it is stored.
 */
#define CALC_ORDERED							\
	case FI_MIN:							\
		take = s < v;						\
		break;							\
	case FI_MAX:							\
		take = s > v;						\
		break;							\
	case FI_CSWAP_LE:						\
		take = c <= v;						\
		break;							\
	case FI_CSWAP_LT:						\
		take = c < v;						\
		break;							\
	case FI_CSWAP_GE:						\
		take = c >= v;						\
		break;							\
	case FI_CSWAP_GT:						\
		take = c > v;						\
		break;

#define CALC_BITWISE							\
	case FI_BOR:							\
		s = v | s;						\
		break;							\
	case FI_BAND:							\
		s = v & s;						\
		break;							\
	case FI_BXOR:							\
		s = v ^ s;						\
		break;							\
	case FI_MSWAP:							\
		s = (s & c) | (v & ~c);					\
		break;

#define CALC_NONE

/* @A: the type of sums and products, unsigned for integers (no overflow) */
#define CALC(name, T, A, ordered, bitwise)				\
static bool calc_##name(enum fi_op op, void *vp, const void *sp,	\
			const void *cp)					\
{									\
	bool take = true;						\
	T v, s, c;							\
									\
	memcpy(&v, vp, sizeof(v));					\
	memcpy(&s, sp, sizeof(s));					\
	memcpy(&c, cp, sizeof(c));					\
	switch (op) {							\
	case FI_SUM:							\
		s = (T)((A)v + (A)s);					\
		break;							\
	case FI_PROD:							\
		s = (T)((A)v * (A)s);					\
		break;							\
	case FI_LOR:							\
		s = v != 0 || s != 0;					\
		break;							\
	case FI_LAND:							\
		s = v != 0 && s != 0;					\
		break;							\
	case FI_LXOR:							\
		s = (v != 0) != (s != 0);				\
		break;							\
	case FI_ATOMIC_WRITE:						\
		break;							\
	case FI_CSWAP:							\
		take = c == v;						\
		break;							\
	case FI_CSWAP_NE:						\
		take = c != v;						\
		break;							\
	ordered								\
	bitwise								\
	default:							\
		return false;	/* FI_ATOMIC_READ */			\
	}								\
	if (take)							\
		memcpy(vp, &s, sizeof(s));				\
	return take;							\
}

/* 8- and 16-bit operands are promoted: products in unsigned int */
CALC(i8, int8_t, unsigned int, CALC_ORDERED, CALC_BITWISE)
CALC(u8, uint8_t, unsigned int, CALC_ORDERED, CALC_BITWISE)
CALC(i16, int16_t, unsigned int, CALC_ORDERED, CALC_BITWISE)
CALC(u16, uint16_t, unsigned int, CALC_ORDERED, CALC_BITWISE)
CALC(i32, int32_t, uint32_t, CALC_ORDERED, CALC_BITWISE)
CALC(u32, uint32_t, uint32_t, CALC_ORDERED, CALC_BITWISE)
CALC(i64, int64_t, uint64_t, CALC_ORDERED, CALC_BITWISE)
CALC(u64, uint64_t, uint64_t, CALC_ORDERED, CALC_BITWISE)
CALC(i128, __int128, unsigned __int128, CALC_ORDERED, CALC_BITWISE)
CALC(u128, unsigned __int128, unsigned __int128, CALC_ORDERED, CALC_BITWISE)
CALC(flt, float, float, CALC_ORDERED, CALC_NONE)
CALC(dbl, double, double, CALC_ORDERED, CALC_NONE)
CALC(ldbl, long double, long double, CALC_ORDERED, CALC_NONE)
CALC(cflt, float _Complex, float _Complex, CALC_NONE, CALC_NONE)
CALC(cdbl, double _Complex, double _Complex, CALC_NONE, CALC_NONE)
CALC(cldbl, long double _Complex, long double _Complex, CALC_NONE, CALC_NONE)

struct kfab_atomic_dt {
	const char *name;
	size_t size;
	uint32_t ops;		/* OP() of the ops defined on it */
	bool (*calc)(enum fi_op op, void *vp, const void *sp, const void *cp);
};

#define DT(dt, T, ops, name) \
	[dt] = { #dt, sizeof(T), ops, calc_##name }

static const struct kfab_atomic_dt dts[] = {
	DT(FI_INT8, int8_t, OPS_INT, i8),
	DT(FI_UINT8, uint8_t, OPS_INT, u8),
	DT(FI_INT16, int16_t, OPS_INT, i16),
	DT(FI_UINT16, uint16_t, OPS_INT, u16),
	DT(FI_INT32, int32_t, OPS_INT, i32),
	DT(FI_UINT32, uint32_t, OPS_INT, u32),
	DT(FI_INT64, int64_t, OPS_INT, i64),
	DT(FI_UINT64, uint64_t, OPS_INT, u64),
	DT(FI_FLOAT, float, OPS_REAL, flt),
	DT(FI_DOUBLE, double, OPS_REAL, dbl),
	DT(FI_FLOAT_COMPLEX, float _Complex, OPS_COMPLEX, cflt),
	DT(FI_DOUBLE_COMPLEX, double _Complex, OPS_COMPLEX, cdbl),
	DT(FI_LONG_DOUBLE, long double, OPS_REAL, ldbl),
	DT(FI_LONG_DOUBLE_COMPLEX, long double _Complex, OPS_COMPLEX, cldbl),
	DT(FI_INT128, __int128, OPS_INT, i128),
	DT(FI_UINT128, unsigned __int128, OPS_INT, u128),
};

#define NAME(x) \
	[x] = #x

static const char *const op_names[] = {
	NAME(FI_MIN), NAME(FI_MAX), NAME(FI_SUM), NAME(FI_PROD),
	NAME(FI_LOR), NAME(FI_LAND), NAME(FI_BOR), NAME(FI_BAND),
	NAME(FI_LXOR), NAME(FI_BXOR), NAME(FI_ATOMIC_READ),
	NAME(FI_ATOMIC_WRITE), NAME(FI_CSWAP), NAME(FI_CSWAP_NE),
	NAME(FI_CSWAP_LE), NAME(FI_CSWAP_LT), NAME(FI_CSWAP_GE),
	NAME(FI_CSWAP_GT), NAME(FI_MSWAP),
};

#define ARRAY_LEN(a)	(sizeof(a) / sizeof((a)[0]))

static const struct kfab_atomic_dt *dt_get(enum fi_datatype dt)
{
	return (unsigned int)dt < ARRAY_LEN(dts) ? &dts[dt] : NULL;
}

size_t kfab_atomic_dtsize(enum fi_datatype dt)
{
	const struct kfab_atomic_dt *d = dt_get(dt);

	return d ? d->size : 0;
}

const char *kfab_atomic_dtname(enum fi_datatype dt)
{
	const struct kfab_atomic_dt *d = dt_get(dt);

	return d ? d->name : "unknown datatype";
}

const char *kfab_atomic_opname(enum fi_op op)
{
	return (unsigned int)op < ARRAY_LEN(op_names) ? op_names[op] :
							"unknown op";
}

int kfab_atomic_valid(enum fi_datatype dt, enum fi_op op,
		      enum kfab_atomic_kind kind)
{
	const struct kfab_atomic_dt *d = dt_get(dt);

	if (!d || (unsigned int)op >= FI_ATOMIC_OP_LAST ||
	    (unsigned int)kind >= ARRAY_LEN(kind_ops) ||
	    !(d->ops & kind_ops[kind] & OP(op)))
		return -FI_EOPNOTSUPP;
	return 0;
}

int kfab_atomic_query(enum fi_datatype dt, enum fi_op op,
		      struct fi_atomic_attr *attr, uint64_t flags,
		      size_t max_bytes)
{
	enum kfab_atomic_kind kind = KFAB_ATOMIC_WRITE;
	int ret;

	if ((flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED)) ||
	    ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC)))
		return -FI_EBADFLAGS;
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;
	if (!attr)
		return -FI_EINVAL;
	if (flags & FI_FETCH_ATOMIC)
		kind = KFAB_ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = KFAB_ATOMIC_COMPARE;
	ret = kfab_atomic_valid(dt, op, kind);
	if (ret)
		return ret;
	attr->size = dts[dt].size;
	attr->count = max_bytes /
		      (attr->size * (kind == KFAB_ATOMIC_COMPARE ? 2 : 1));
	return 0;
}

/*
 * rmw<bits>(): an element of that many bits at an aligned address, with the
 * builtin where there is one (integer sums: signed ones wrap the same),
 * else a compare-exchange loop around calc on the bits.
 */
#define RMW(bits)							\
static void rmw##bits(const struct kfab_atomic_dt *d, enum fi_op op,	\
		      uint##bits##_t *p, const void *src, const void *cmp, \
		      void *res)					\
{									\
	bool integer = d->ops == OPS_INT;				\
	uint##bits##_t s = 0, c = 0, old, val;				\
									\
	if (src)							\
		memcpy(&s, src, sizeof(s));				\
	if (cmp)							\
		memcpy(&c, cmp, sizeof(c));				\
	if (op == FI_ATOMIC_READ) {					\
		old = __atomic_load_n(p, __ATOMIC_SEQ_CST);		\
	} else if (op == FI_ATOMIC_WRITE) {				\
		old = __atomic_exchange_n(p, s, __ATOMIC_SEQ_CST);	\
	} else if (op == FI_SUM && integer) {				\
		old = __atomic_fetch_add(p, s, __ATOMIC_SEQ_CST);	\
	} else if (op == FI_BOR) {					\
		old = __atomic_fetch_or(p, s, __ATOMIC_SEQ_CST);	\
	} else if (op == FI_BAND) {					\
		old = __atomic_fetch_and(p, s, __ATOMIC_SEQ_CST);	\
	} else if (op == FI_BXOR) {					\
		old = __atomic_fetch_xor(p, s, __ATOMIC_SEQ_CST);	\
	} else if (op == FI_CSWAP && integer) {				\
		old = c;						\
		__atomic_compare_exchange_n(p, &old, s, false,		\
					    __ATOMIC_SEQ_CST,		\
					    __ATOMIC_SEQ_CST);		\
	} else {							\
		old = __atomic_load_n(p, __ATOMIC_SEQ_CST);		\
		do {							\
			val = old;					\
			if (!d->calc(op, &val, &s, &c))			\
				break;					\
		} while (!__atomic_compare_exchange_n(p, &old, val, true, \
						      __ATOMIC_SEQ_CST,	\
						      __ATOMIC_SEQ_CST)); \
	}								\
	if (res)							\
		memcpy(res, &old, sizeof(old));				\
}

RMW(8)
RMW(16)
RMW(32)
RMW(64)

/* the others: under a mutex picked by the address, the same for an element */
#define STRIPES		64
#define ELEM_MAX	sizeof(long double _Complex)

static struct {
	pthread_mutex_t lock;
} __attribute__((aligned(64))) stripes[STRIPES] = {
	[0 ... STRIPES - 1] = { PTHREAD_MUTEX_INITIALIZER },
};

static void rmw_locked(const struct kfab_atomic_dt *d, enum fi_op op,
		       void *dst, const void *src, const void *cmp, void *res)
{
	static const unsigned char zero[ELEM_MAX];
	pthread_mutex_t *lock = &stripes[((uintptr_t)dst >> 4) % STRIPES].lock;
	unsigned char old[ELEM_MAX], val[ELEM_MAX];

	pthread_mutex_lock(lock);
	memcpy(old, dst, d->size);
	memcpy(val, old, d->size);
	if (d->calc(op, val, src ? src : zero, cmp ? cmp : zero))
		memcpy(dst, val, d->size);
	pthread_mutex_unlock(lock);
	if (res)
		memcpy(res, old, d->size);
}

void kfab_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst,
		       const void *src, const void *cmp, void *res,
		       size_t count)
{
	const struct kfab_atomic_dt *d = &dts[dt];

	for (size_t i = 0, off = 0; i < count; i++, off += d->size) {
		char *p = (char *)dst + off;
		const char *s = src ? (const char *)src + off : NULL;
		const char *c = cmp ? (const char *)cmp + off : NULL;
		char *r = res ? (char *)res + off : NULL;

		switch ((uintptr_t)p % d->size ? 0 : d->size) {
		case 1:
			rmw8(d, op, (uint8_t *)p, s, c, r);
			break;
		case 2:
			rmw16(d, op, (uint16_t *)p, s, c, r);
			break;
		case 4:
			rmw32(d, op, (uint32_t *)p, s, c, r);
			break;
		case 8:
			rmw64(d, op, (uint64_t *)p, s, c, r);
			break;
		default:
			rmw_locked(d, op, p, s, c, r);
			break;
		}
	}
}
