// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the fi_msg(3) and fi_tagged(3) calls (kfab_msg.h). Each form
 * checks its iovecs once and hands one send or one receive, with its
 * operation flags, to the provider's hooks. The steps between are inlined
 * into every form: a call is one indirect call to the provider.
 */
#include "kfab_msg.h"
#include "kfab_prov.h"

#define IOV1(name, b, l) struct iovec name = { (void *)(b), (l) }

static const struct kfab_msg_ops *msg_ops_of(struct fid_ep *ep)
{
	return kfab_container_of(ep->msg, struct kfab_msg_ops, msg);
}

static const struct kfab_msg_ops *tagged_ops_of(struct fid_ep *ep)
{
	return kfab_container_of(ep->tagged, struct kfab_msg_ops, tagged);
}

/* iov_check()'s refusal, logged; out of line, off the data path. */
static kfab_cold int iov_refuse(struct fid_ep *ep, const struct iovec *iov,
				size_t count, bool tx)
{
	kfab_warn(kfab_ep_of(ep)->domain->kp, FI_LOG_EP_DATA,
		  "%s: %zu iovecs%s, at most %d (%s_attr->iov_limit)\n",
		  tx ? "send" : "receive", count, iov ? "" : " at NULL",
		  KFAB_IOV_LIMIT, tx ? "tx" : "rx");
	return -FI_EINVAL;
}

static kfab_always_inline int iov_check(struct fid_ep *ep,
					const struct iovec *iov, size_t count,
					bool tx)
{
	if (kfab_likely(count <= KFAB_IOV_LIMIT && (iov || !count)))
		return 0;
	return iov_refuse(ep, iov, count, tx);
}

/*
 * A send (@tx: to @addr, with @x its CQ data) or a receive (from @addr,
 * with @x its ignore bits) through @ops, its iovecs checked first.
 */
static kfab_always_inline ssize_t xfer_ops(const struct kfab_msg_ops *ops,
					   bool tx, struct fid_ep *ep,
					   const struct iovec *iov,
					   void **desc, size_t count,
					   fi_addr_t addr, uint64_t tag,
					   uint64_t x, void *context,
					   uint64_t flags)
{
	int ret = iov_check(ep, iov, count, tx);

	if (kfab_unlikely(ret))
		return ret;
	return (tx ? ops->send : ops->recv)(ep, iov, desc, count, addr, tag,
					    x, context, flags);
}

/* ------------------------------------------------------------------ */
/* fi_msg(3): FI_MSG */

static kfab_always_inline ssize_t msg_send(struct fid_ep *ep,
					   const struct iovec *iov,
					   void **desc, size_t count,
					   fi_addr_t dest, uint64_t data,
					   void *context, uint64_t flags)
{
	return xfer_ops(msg_ops_of(ep), true, ep, iov, desc, count, dest, 0,
			data, context, (flags & ~FI_TAGGED) | FI_MSG);
}

static kfab_always_inline ssize_t msg_recv(struct fid_ep *ep,
					   const struct iovec *iov,
					   void **desc, size_t count,
					   fi_addr_t src, void *context,
					   uint64_t flags)
{
	return xfer_ops(msg_ops_of(ep), false, ep, iov, desc, count, src, 0,
			0, context, (flags & ~FI_TAGGED) | FI_MSG);
}

ssize_t kfab_msg_recvv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src,
		       void *context)
{
	return msg_recv(ep, iov, desc, count, src, context,
			kfab_ep_op_flags(ep, true));
}

ssize_t kfab_msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, void *context)
{
	IOV1(iov, buf, len);

	return msg_recv(ep, &iov, &desc, 1, src, context,
			kfab_ep_op_flags(ep, true));
}

ssize_t kfab_msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	return msg_recv(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->context, flags);
}

ssize_t kfab_msg_sendv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t dest,
		       void *context)
{
	return msg_send(ep, iov, desc, count, dest, 0, context,
			kfab_ep_op_flags(ep, false));
}

ssize_t kfab_msg_send(struct fid_ep *ep, const void *buf, size_t len,
		      void *desc, fi_addr_t dest, void *context)
{
	IOV1(iov, buf, len);

	return msg_send(ep, &iov, &desc, 1, dest, 0, context,
			kfab_ep_op_flags(ep, false));
}

ssize_t kfab_msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
			 uint64_t flags)
{
	return msg_send(ep, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->data, msg->context, flags);
}

ssize_t kfab_msg_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest,
			  void *context)
{
	IOV1(iov, buf, len);

	return msg_send(ep, &iov, &desc, 1, dest, data, context,
			kfab_ep_op_flags(ep, false) | FI_REMOTE_CQ_DATA);
}

ssize_t kfab_msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest)
{
	IOV1(iov, buf, len);

	return msg_send(ep, &iov, NULL, 1, dest, 0, NULL,
			kfab_inject_flags(kfab_ep_op_flags(ep, false)));
}

ssize_t kfab_msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest)
{
	IOV1(iov, buf, len);

	return msg_send(ep, &iov, NULL, 1, dest, data, NULL,
			kfab_inject_flags(kfab_ep_op_flags(ep, false)) |
			FI_REMOTE_CQ_DATA);
}

/* ------------------------------------------------------------------ */
/* fi_tagged(3): FI_TAGGED */

/* A tagged send (@tx) or receive: xfer_ops() with the FI_TAGGED flag. */
static kfab_always_inline ssize_t tag_xfer(struct fid_ep *ep, bool tx,
					   const struct iovec *iov,
					   void **desc, size_t count,
					   fi_addr_t addr, uint64_t tag,
					   uint64_t x, void *context,
					   uint64_t flags)
{
	return xfer_ops(tagged_ops_of(ep), tx, ep, iov, desc, count, addr,
			tag, x, context, (flags & ~FI_MSG) | FI_TAGGED);
}

ssize_t kfab_tagged_recvv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src,
			  uint64_t tag, uint64_t ignore, void *context)
{
	return tag_xfer(ep, false, iov, desc, count, src, tag, ignore, context,
			kfab_ep_op_flags(ep, true));
}

ssize_t kfab_tagged_recv(struct fid_ep *ep, void *buf, size_t len,
			 void *desc, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context)
{
	IOV1(iov, buf, len);

	return tag_xfer(ep, false, &iov, &desc, 1, src, tag, ignore, context,
			kfab_ep_op_flags(ep, true));
}

ssize_t kfab_tagged_recvmsg(struct fid_ep *ep,
			    const struct fi_msg_tagged *msg, uint64_t flags)
{
	return tag_xfer(ep, false, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->tag, msg->ignore, msg->context, flags);
}

ssize_t kfab_tagged_sendv(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t tag, void *context)
{
	return tag_xfer(ep, true, iov, desc, count, dest, tag, 0, context,
			kfab_ep_op_flags(ep, false));
}

ssize_t kfab_tagged_send(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t tag,
			 void *context)
{
	IOV1(iov, buf, len);

	return tag_xfer(ep, true, &iov, &desc, 1, dest, tag, 0, context,
			kfab_ep_op_flags(ep, false));
}

ssize_t kfab_tagged_sendmsg(struct fid_ep *ep,
			    const struct fi_msg_tagged *msg, uint64_t flags)
{
	return tag_xfer(ep, true, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->tag, msg->data, msg->context, flags);
}

ssize_t kfab_tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t tag, void *context)
{
	IOV1(iov, buf, len);

	return tag_xfer(ep, true, &iov, &desc, 1, dest, tag, data, context,
			kfab_ep_op_flags(ep, false) |
			FI_REMOTE_CQ_DATA);
}

ssize_t kfab_tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
			   fi_addr_t dest, uint64_t tag)
{
	IOV1(iov, buf, len);

	return tag_xfer(ep, true, &iov, NULL, 1, dest, tag, 0, NULL,
			kfab_inject_flags(kfab_ep_op_flags(ep, false)));
}

ssize_t kfab_tagged_injectdata(struct fid_ep *ep, const void *buf,
			       size_t len, uint64_t data, fi_addr_t dest,
			       uint64_t tag)
{
	IOV1(iov, buf, len);

	return tag_xfer(ep, true, &iov, NULL, 1, dest, tag, data, NULL,
			kfab_inject_flags(kfab_ep_op_flags(ep, false)) |
			FI_REMOTE_CQ_DATA);
}
