/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the fi_msg(3) and fi_tagged(3) calls every provider shares
 * (kfab_msg_ops.c). Every form becomes one send or one receive for the
 * provider's hooks: iovecs, descriptors, the peer, tag and data, and the
 * operation flags, with FI_MSG or FI_TAGGED naming the family.
 *
 * Operation flags (fi_endpoint(3): the defaults of the calls that take
 * none):
 *   fi_send, fi_sendv, fi_senddata,
 *   fi_tsend, fi_tsendv, fi_tsenddata     the transmit op flags
 *   fi_recv, fi_recvv, fi_trecv, fi_trecvv the receive op flags
 *   fi_inject, fi_injectdata,
 *   fi_tinject, fi_tinjectdata            the transmit op flags without
 *                                         the completion ones, with
 *                                         FI_INJECT
 *   the *msg forms                        their flags argument alone
 * The completion flags are FI_COMPLETION and the completion levels
 * (FI_INJECT_COMPLETE ... FI_MATCH_COMPLETE). fi_msg(3) has an inject
 * behave as a send with FI_INJECT, selective completion and no
 * FI_COMPLETION: it completes without an entry, so there is no
 * completion a level could time, and an inject is done, a counter bound
 * with FI_SEND counting it, once its buffer is copied, as on libfabric's
 * shm and tcp providers. Every other op flag applies.
 * The *data forms add FI_REMOTE_CQ_DATA.
 */
#ifndef KFAB_ULIB_MSG_H
#define KFAB_ULIB_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

/*
 * A provider's message operations: its endpoints' msg member points to
 * .msg, their tagged member to .tagged; both are KFAB_MSG_FI_OPS and
 * KFAB_TAGGED_FI_OPS, or a provider's refusals in place of some entries.
 * The endpoints' fi_ops are a struct kfab_ep_ops (kfab_prov.h).
 */
struct kfab_msg_ops {
	struct fi_ops_msg msg;
	struct fi_ops_tagged tagged;
	/*
	 * Every send and every receive, @count <= KFAB_IOV_LIMIT iovecs
	 * (@iov not NULL when @count is not 0), @desc as the caller gave
	 * it (may be NULL); @tag and @ignore are 0 for FI_MSG.
	 */
	ssize_t (*send)(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t tag, uint64_t data, void *context,
			uint64_t flags);
	ssize_t (*recv)(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src, uint64_t tag,
			uint64_t ignore, void *context, uint64_t flags);
};

/*
 * fi_ops_msg and fi_ops_tagged have the same members: @prefix##_<member>
 * are the core's calls of one family, kfab_msg_* or kfab_tagged_*,
 * declared with the member's type of @ops.
 */
#define KFAB_MSG_CALLS(X, ops, prefix)					\
	X(ops, prefix, recv) X(ops, prefix, recvv)			\
	X(ops, prefix, recvmsg) X(ops, prefix, send)			\
	X(ops, prefix, sendv) X(ops, prefix, sendmsg)			\
	X(ops, prefix, inject) X(ops, prefix, senddata)			\
	X(ops, prefix, injectdata)

#define KFAB_MSG_DECL(ops, prefix, m)					\
	__typeof__(*((struct ops *)0)->m) prefix##_##m;
#define KFAB_MSG_INIT(ops, prefix, m)	.m = prefix##_##m,

KFAB_MSG_CALLS(KFAB_MSG_DECL, fi_ops_msg, kfab_msg)
KFAB_MSG_CALLS(KFAB_MSG_DECL, fi_ops_tagged, kfab_tagged)

#define KFAB_MSG_FAMILY_OPS(ops, prefix) {				\
	.size = sizeof(struct ops),					\
	KFAB_MSG_CALLS(KFAB_MSG_INIT, ops, prefix)			\
}
#define KFAB_MSG_FI_OPS		KFAB_MSG_FAMILY_OPS(fi_ops_msg, kfab_msg)
#define KFAB_TAGGED_FI_OPS	KFAB_MSG_FAMILY_OPS(fi_ops_tagged, kfab_tagged)

#define KFAB_COMPLETION_FLAGS	(FI_COMPLETION | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_COMMIT_COMPLETE | FI_MATCH_COMPLETE)

/* The op flags of an inject, as the comment above has it. */
static inline uint64_t kfab_inject_flags(uint64_t tx_op_flags)
{
	return (tx_op_flags & ~KFAB_COMPLETION_FLAGS) | FI_INJECT;
}

#endif /* KFAB_ULIB_MSG_H */
