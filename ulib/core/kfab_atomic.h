/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: fi_atomic(3) for the providers. The remote-atomic engine of
 * their target side applies the operations to local memory
 * (kfab_atomic.c); the initiator's calls check an operation and hand it to
 * the provider (kfab_atomic_ops.c).
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
#include <sys/types.h>
#include <sys/uio.h>

#include <rdma/fi_atomic.h>
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

/* ------------------------------------------------------------------ */
/* the initiator's calls (kfab_atomic_ops.c) */

struct kfab_provider;

/*
 * A provider's fi_ops_atomic: .ops, what its endpoints' atomic member
 * points to, is KFAB_ATOMIC_FI_OPS: the core's calls, which build the
 * struct fi_msg_atomic of every form and hand it to post().
 */
struct kfab_atomic_ops {
	struct fi_ops_atomic ops;
	/*
	 * Every call of @kind, as a message. A non-msg form's names one
	 * remote ioc of as many elements as its operands (as its results
	 * for FI_ATOMIC_READ), with @flags the transmit side's op flags
	 * or FI_INJECT; an fi_fetch_atomicmsg() of FI_ATOMIC_READ has its
	 * operands replaced by one ioc of the results' count.
	 */
	ssize_t (*post)(struct fid_ep *ep, enum kfab_atomic_kind kind,
			const struct fi_msg_atomic *msg,
			const struct fi_ioc *comparev, void **compare_desc,
			size_t compare_count, struct fi_ioc *resultv,
			void **result_desc, size_t result_count,
			uint64_t flags);
	/* bytes of operands and compare values one atomic takes, 0: none */
	size_t (*max_bytes)(struct fid_ep *ep);
};

/*
 * The members of fi_ops_atomic but size: the core's kfab_atomic_<member>
 * for each, declared with the member's type, make KFAB_ATOMIC_FI_OPS.
 */
#define KFAB_ATOMIC_CALLS(X)						\
	X(write) X(writev) X(writemsg) X(inject)			\
	X(readwrite) X(readwritev) X(readwritemsg)			\
	X(compwrite) X(compwritev) X(compwritemsg)			\
	X(writevalid) X(readwritevalid) X(compwritevalid)

#define KFAB_ATOMIC_DECL(m)						\
	__typeof__(*((struct fi_ops_atomic *)0)->m) kfab_atomic_##m;
#define KFAB_ATOMIC_INIT(m)	.m = kfab_atomic_##m,

KFAB_ATOMIC_CALLS(KFAB_ATOMIC_DECL)

#define KFAB_ATOMIC_FI_OPS {						\
	.size = sizeof(struct fi_ops_atomic),				\
	KFAB_ATOMIC_CALLS(KFAB_ATOMIC_INIT)				\
}

/*
 * Whether @msg may go as an atomic of @kind from a transmit side with
 * @caps, taking @max_bytes of operands and compare values, @inject_size
 * bytes inline. -FI_EOPNOTSUPP: no FI_ATOMIC, or @msg's op and datatype
 * are not defined for @kind; -FI_EINVAL: more than KFAB_IOV_LIMIT iocs,
 * not one remote ioc, element counts of operands, remote ioc, compare
 * values and results that differ or pass @max_bytes; -FI_EMSGSIZE: an
 * FI_INJECT of more than @inject_size bytes; logged. 0: every count is
 * msg->rma_iov[0].count.
 */
int kfab_atomic_check(const struct kfab_provider *kp, uint64_t caps,
		      size_t max_bytes, size_t inject_size,
		      enum kfab_atomic_kind kind,
		      const struct fi_msg_atomic *msg,
		      const struct fi_ioc *comparev, size_t compare_count,
		      const struct fi_ioc *resultv, size_t result_count,
		      uint64_t flags);

/*
 * What a checked atomic sends: the operands (none for FI_ATOMIC_READ),
 * then the compare values, into @buf; the bytes.
 */
size_t kfab_atomic_pack(void *buf, enum kfab_atomic_kind kind,
			const struct fi_msg_atomic *msg,
			const struct fi_ioc *comparev, size_t compare_count);

/* The result buffers of a checked atomic as iovecs: their count. */
uint32_t kfab_atomic_results(struct iovec *iov, enum kfab_atomic_kind kind,
			     enum fi_datatype dt, const struct fi_ioc *resultv,
			     size_t result_count);

#endif /* KFAB_ULIB_ATOMIC_H */
