/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the remote-atomic engine of the providers' target side, which
 * applies fi_atomic(3) operations to local memory.
 *
 * Each element's read-modify-write is atomic with respect to every other
 * kfab_atomic_apply() in the process on that element with that datatype:
 * elements of 1, 2, 4 or 8 bytes at naturally aligned addresses through
 * __atomic builtins, the others (16- and 32-byte types, misaligned
 * elements) under a mutex chosen by address. Datatypes of different sizes
 * on the same bytes do not exclude each other. Floating-point values
 * compare by value (-0 == 0, long double's padding bytes ignored).
 */
#ifndef KFAB_ULIB_ATOMIC_H
#define KFAB_ULIB_ATOMIC_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

enum kfab_atomic_kind {
	KFAB_ATOMIC_WRITE,	/* fi_atomic() */
	KFAB_ATOMIC_FETCH,	/* fi_fetch_atomic() */
	KFAB_ATOMIC_COMPARE,	/* fi_compare_atomic() */
};

/* bytes of one element of @dt; 0: not a datatype of fi_atomic(3) we support */
size_t kfab_atomic_dtsize(enum fi_datatype dt);

/* 0 when @op on @dt is defined for @kind, else -FI_EOPNOTSUPP (no logging) */
int kfab_atomic_valid(enum fi_datatype dt, enum fi_op op,
		      enum kfab_atomic_kind kind);

/*
 * fi_query_atomic() body. @flags: 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC;
 * both, or any other bit, -FI_EBADFLAGS; FI_TAGGED -FI_EOPNOTSUPP. Fills
 * attr->size and attr->count, the elements of one operation of at most
 * @max_bytes (operands and compare values of a compare op together).
 * -FI_EINVAL for a NULL @attr, -FI_EOPNOTSUPP when not valid.
 */
int kfab_atomic_query(enum fi_datatype dt, enum fi_op op,
		      struct fi_atomic_attr *attr, uint64_t flags,
		      size_t max_bytes);

/*
 * Applies @op to @count elements at @dst, any alignment: @src the operands
 * (NULL for FI_ATOMIC_READ), @cmp the compare values (compare ops only,
 * else NULL), @res receives the old values (NULL for KFAB_ATOMIC_WRITE).
 * The caller has checked kfab_atomic_valid().
 */
void kfab_atomic_apply(enum fi_datatype dt, enum fi_op op, void *dst,
		       const void *src, const void *cmp, void *res,
		       size_t count);

/* names for messages: "FI_UINT64", "FI_SUM" */
const char *kfab_atomic_dtname(enum fi_datatype dt);
const char *kfab_atomic_opname(enum fi_op op);

#endif /* KFAB_ULIB_ATOMIC_H */
