// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the initiator's fi_atomic(3) calls (kfab_atomic.h). Every form
 * becomes one struct fi_msg_atomic for the provider's post(), which checks
 * it (kfab_atomic_check()) under its own lock and sends it.
 */
#include <string.h>

#include "kfab_atomic.h"
#include "kfab_prov.h"

static size_t ioc_count(const struct fi_ioc *ioc, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ioc[i].count;
	return c;
}

/* Gathers @n iocs of @size-byte elements to @dst: the bytes copied. */
static size_t ioc_gather(uint8_t *dst, const struct fi_ioc *ioc, size_t n,
			 size_t size)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		memcpy(dst + off, ioc[i].addr, ioc[i].count * size);
		off += ioc[i].count * size;
	}
	return off;
}

int kfab_atomic_check(const struct kfab_provider *kp, uint64_t caps,
		      size_t max_bytes, size_t inject_size,
		      enum kfab_atomic_kind kind,
		      const struct fi_msg_atomic *msg,
		      const struct fi_ioc *comparev, size_t compare_count,
		      const struct fi_ioc *resultv, size_t result_count,
		      uint64_t flags)
{
	size_t size = kfab_atomic_dtsize(msg->datatype);
	size_t count, max;

	if (!(caps & FI_ATOMIC)) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "atomic on an endpoint or context opened without FI_ATOMIC\n");
		return -FI_EOPNOTSUPP;
	}
	if (kfab_atomic_valid(msg->datatype, msg->op, kind)) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "%s on %s is not supported by this call (see fi_query_atomic)\n",
			  kfab_atomic_opname(msg->op),
			  kfab_atomic_dtname(msg->datatype));
		return -FI_EOPNOTSUPP;
	}
	if (msg->iov_count > KFAB_IOV_LIMIT ||
	    compare_count > KFAB_IOV_LIMIT || result_count > KFAB_IOV_LIMIT ||
	    msg->rma_iov_count != 1) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "atomic: %zu, %zu, %zu iocs (at most %d), %zu remote (exactly 1)\n",
			  msg->iov_count, compare_count, result_count,
			  KFAB_IOV_LIMIT, msg->rma_iov_count);
		return -FI_EINVAL;
	}
	count = ioc_count(msg->msg_iov, msg->iov_count);
	max = max_bytes / size / (kind == KFAB_ATOMIC_COMPARE ? 2 : 1);
	if (count != msg->rma_iov[0].count || count > max ||
	    (kind == KFAB_ATOMIC_COMPARE &&
	     ioc_count(comparev, compare_count) != count) ||
	    (kind != KFAB_ATOMIC_WRITE &&
	     ioc_count(resultv, result_count) != count)) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "atomic: %zu elements of %s, remote %zu: operands, compare values and results must agree, at most %zu (fi_query_atomic count)\n",
			  count, kfab_atomic_dtname(msg->datatype),
			  msg->rma_iov[0].count, max);
		return -FI_EINVAL;
	}
	if ((flags & FI_INJECT) && count * size > inject_size) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "inject atomic: %zu bytes, at most %zu (inject_size)\n",
			  count * size, inject_size);
		return -FI_EMSGSIZE;
	}
	return 0;
}

size_t kfab_atomic_pack(void *buf, enum kfab_atomic_kind kind,
			const struct fi_msg_atomic *msg,
			const struct fi_ioc *comparev, size_t compare_count)
{
	size_t size = kfab_atomic_dtsize(msg->datatype);
	size_t len = 0;

	if (msg->op != FI_ATOMIC_READ)
		len = ioc_gather(buf, msg->msg_iov, msg->iov_count, size);
	if (kind == KFAB_ATOMIC_COMPARE)
		len += ioc_gather((uint8_t *)buf + len, comparev,
				  compare_count, size);
	return len;
}

uint32_t kfab_atomic_results(struct iovec *iov, enum kfab_atomic_kind kind,
			     enum fi_datatype dt, const struct fi_ioc *resultv,
			     size_t result_count)
{
	size_t size = kfab_atomic_dtsize(dt);

	if (kind == KFAB_ATOMIC_WRITE)
		return 0;
	for (size_t i = 0; i < result_count; i++) {
		iov[i].iov_base = resultv[i].addr;
		iov[i].iov_len = resultv[i].count * size;
	}
	return (uint32_t)result_count;
}

static const struct kfab_atomic_ops *ops_of(struct fid_ep *ep)
{
	return kfab_container_of(ep->atomic, struct kfab_atomic_ops, ops);
}

/* The message of a non-msg form: one remote ioc, as many as @iov holds. */
static void atomic_msg(struct fi_msg_atomic *msg, struct fi_rma_ioc *rma,
		       const struct fi_ioc *iov, void **desc, size_t count,
		       fi_addr_t dest, uint64_t addr, uint64_t key,
		       enum fi_datatype dt, enum fi_op op, void *context)
{
	*rma = (struct fi_rma_ioc){
		.addr = addr, .count = ioc_count(iov, count), .key = key,
	};
	*msg = (struct fi_msg_atomic){
		.msg_iov = iov, .desc = desc, .iov_count = count,
		.addr = dest, .rma_iov = rma, .rma_iov_count = 1,
		.datatype = dt, .op = op, .context = context,
	};
}

static ssize_t post_write(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			  uint64_t flags)
{
	return ops_of(ep)->post(ep, KFAB_ATOMIC_WRITE, msg, NULL, NULL, 0,
				NULL, NULL, 0, flags);
}

/*
 * Every non-msg form: the message of @iov for the provider's post(), with
 * the endpoint's op flags. FI_ATOMIC_READ has no operands: its count is
 * the results'.
 */
static inline ssize_t post_ioc(struct fid_ep *ep,
			       enum kfab_atomic_kind kind,
			       const struct fi_ioc *iov, void **desc,
			       size_t count, fi_addr_t dest, uint64_t addr,
			       uint64_t key, enum fi_datatype dt,
			       enum fi_op op, void *context,
			       const struct fi_ioc *comparev,
			       void **compare_desc, size_t compare_count,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count)
{
	const struct kfab_atomic_ops *ops = ops_of(ep);
	struct fi_msg_atomic msg;
	struct fi_rma_ioc rma;

	atomic_msg(&msg, &rma, iov, desc, count, dest, addr, key, dt, op,
		   context);
	if (kind == KFAB_ATOMIC_FETCH && op == FI_ATOMIC_READ)
		rma.count = ioc_count(resultv, result_count);
	return ops->post(ep, kind, &msg, comparev, compare_desc,
			 compare_count, resultv, result_desc, result_count,
			 kfab_ep_op_flags(ep, false));
}

ssize_t kfab_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *context)
{
	return post_ioc(ep, KFAB_ATOMIC_WRITE, iov, desc, count, dest, addr,
			key, dt, op, context, NULL, NULL, 0, NULL, NULL, 0);
}

ssize_t kfab_atomic_write(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, fi_addr_t dest, uint64_t addr,
			  uint64_t key, enum fi_datatype dt, enum fi_op op,
			  void *context)
{
	struct fi_ioc ioc = { (void *)buf, count };

	return kfab_atomic_writev(ep, &ioc, &desc, 1, dest, addr, key, dt, op,
				  context);
}

ssize_t kfab_atomic_writemsg(struct fid_ep *ep,
			     const struct fi_msg_atomic *msg, uint64_t flags)
{
	return post_write(ep, msg, flags);
}

ssize_t kfab_atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
			   fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op)
{
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_msg_atomic msg;
	struct fi_rma_ioc rma;

	atomic_msg(&msg, &rma, &ioc, NULL, 1, dest, addr, key, dt, op, NULL);
	return post_write(ep, &msg, FI_INJECT);
}

ssize_t kfab_atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			       void **desc, size_t count,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, fi_addr_t dest,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype dt, enum fi_op op,
			       void *context)
{
	return post_ioc(ep, KFAB_ATOMIC_FETCH, iov, desc, count, dest, addr,
			key, dt, op, context, NULL, NULL, 0, resultv,
			result_desc, result_count);
}

ssize_t kfab_atomic_readwrite(struct fid_ep *ep, const void *buf,
			      size_t count, void *desc, void *result,
			      void *result_desc, fi_addr_t dest,
			      uint64_t addr, uint64_t key,
			      enum fi_datatype dt, enum fi_op op,
			      void *context)
{
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc res = { result, count };

	return kfab_atomic_readwritev(ep, &ioc, &desc, 1, &res, &result_desc,
				      1, dest, addr, key, dt, op, context);
}

ssize_t kfab_atomic_readwritemsg(struct fid_ep *ep,
				 const struct fi_msg_atomic *msg,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, uint64_t flags)
{
	struct fi_msg_atomic m = *msg;
	struct fi_ioc ioc;

	if (msg->op == FI_ATOMIC_READ) {
		/* the operands are ignored: count the results instead */
		ioc.addr = NULL;
		ioc.count = ioc_count(resultv, result_count);
		m.msg_iov = &ioc;
		m.iov_count = 1;
	}
	return ops_of(ep)->post(ep, KFAB_ATOMIC_FETCH, &m, NULL, NULL, 0,
				resultv, result_desc, result_count, flags);
}

ssize_t kfab_atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			       void **desc, size_t count,
			       const struct fi_ioc *comparev,
			       void **compare_desc, size_t compare_count,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, fi_addr_t dest,
			       uint64_t addr, uint64_t key,
			       enum fi_datatype dt, enum fi_op op,
			       void *context)
{
	return post_ioc(ep, KFAB_ATOMIC_COMPARE, iov, desc, count, dest, addr,
			key, dt, op, context, comparev, compare_desc,
			compare_count, resultv, result_desc, result_count);
}

ssize_t kfab_atomic_compwrite(struct fid_ep *ep, const void *buf,
			      size_t count, void *desc, const void *compare,
			      void *compare_desc, void *result,
			      void *result_desc, fi_addr_t dest,
			      uint64_t addr, uint64_t key,
			      enum fi_datatype dt, enum fi_op op,
			      void *context)
{
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc cmp = { (void *)compare, count };
	struct fi_ioc res = { result, count };

	return kfab_atomic_compwritev(ep, &ioc, &desc, 1, &cmp, &compare_desc,
				      1, &res, &result_desc, 1, dest, addr,
				      key, dt, op, context);
}

ssize_t kfab_atomic_compwritemsg(struct fid_ep *ep,
				 const struct fi_msg_atomic *msg,
				 const struct fi_ioc *comparev,
				 void **compare_desc, size_t compare_count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, uint64_t flags)
{
	return ops_of(ep)->post(ep, KFAB_ATOMIC_COMPARE, msg, comparev,
				compare_desc, compare_count, resultv,
				result_desc, result_count, flags);
}

/* fi_query_atomic() on @ep: @flags 0, FI_FETCH_ATOMIC or FI_COMPARE_ATOMIC */
static int atomic_valid(struct fid_ep *ep, uint64_t flags,
			enum fi_datatype dt, enum fi_op op, size_t *count)
{
	size_t max = ops_of(ep)->max_bytes(ep);
	struct fi_atomic_attr attr;
	int ret;

	if (!max)
		return -FI_EOPNOTSUPP;
	ret = kfab_atomic_query(dt, op, &attr, flags, max);
	if (!ret)
		*count = attr.count;
	return ret;
}

int kfab_atomic_writevalid(struct fid_ep *ep, enum fi_datatype dt,
			   enum fi_op op, size_t *count)
{
	return atomic_valid(ep, 0, dt, op, count);
}

int kfab_atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			       enum fi_op op, size_t *count)
{
	return atomic_valid(ep, FI_FETCH_ATOMIC, dt, op, count);
}

int kfab_atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype dt,
			       enum fi_op op, size_t *count)
{
	return atomic_valid(ep, FI_COMPARE_ATOMIC, dt, op, count);
}
