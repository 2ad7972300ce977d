// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the fi_rma(3) calls (kfab_rma.h). Each form checks its iovecs
 * once and hands one read or one write, with its operation flags, to the
 * provider's rma hook, which takes its lock and sends it.
 */
#include <errno.h>

#include "kfab_prov.h"
#include "kfab_rma.h"

static const struct kfab_ep_ops *ep_ops_of(struct fid_ep *ep)
{
	return kfab_container_of(ep->fid.ops, struct kfab_ep_ops, ops);
}

int kfab_rma_check(const struct kfab_provider *kp, uint64_t caps,
		   const struct iovec *iov, size_t count, size_t max_len,
		   size_t inject_size, uint64_t flags, size_t *len)
{
	size_t n = 0;

	if (kfab_unlikely(!(caps & FI_RMA))) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "RMA on an endpoint or context opened without FI_RMA\n");
		return -FI_EOPNOTSUPP;
	}
	for (size_t i = 0; i < count; i++)
		n += iov[i].iov_len;
	if (kfab_unlikely(n > max_len ||
			  ((flags & FI_INJECT) && n > inject_size))) {
		kfab_warn(kp, FI_LOG_EP_DATA,
			  "%s: %zu bytes, at most %zu (%s)\n",
			  flags & FI_INJECT ? "inject write" : "RMA", n,
			  n > max_len ? max_len : inject_size,
			  n > max_len ? "ep_attr->max_msg_size" :
			  "tx_attr->inject_size");
		return -FI_EMSGSIZE;
	}
	*len = n;
	return 0;
}

/* @desc goes unused: the providers find local memory by its address. */
static ssize_t rma_post(struct fid_ep *ep, bool read, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t peer,
			uint64_t addr, uint64_t key, uint64_t data,
			void *context, uint64_t flags)
{
	(void)desc;
	if (kfab_unlikely(count > KFAB_IOV_LIMIT || (count && !iov))) {
		kfab_warn(kfab_ep_kp(&ep->fid), FI_LOG_EP_DATA,
			  "RMA: %zu iovecs%s, at most %d (tx_attr->iov_limit)\n",
			  count, iov ? "" : " at NULL", KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	return ep_ops_of(ep)->rma(ep, read, iov, count, peer, addr, key, data,
				  context, flags);
}

static ssize_t rma_msg(struct fid_ep *ep, bool read,
		       const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1) {
		kfab_warn(kfab_ep_kp(&ep->fid), FI_LOG_EP_DATA,
			  "fi_%smsg: %zu remote iovecs: exactly 1 (rma_iov_limit)\n",
			  read ? "read" : "write", msg->rma_iov_count);
		return -FI_EINVAL;
	}
	return rma_post(ep, read, msg->msg_iov, msg->desc, msg->iov_count,
			msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
			msg->data, msg->context, flags);
}

static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src,
			 uint64_t addr, uint64_t key, void *context)
{
	return rma_post(ep, true, iov, desc, count, src, addr, key, 0,
			context, kfab_ep_op_flags(ep, false));
}

static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len,
			void *desc, fi_addr_t src, uint64_t addr,
			uint64_t key, void *context)
{
	struct iovec iov = { buf, len };

	return rma_readv(ep, &iov, &desc, 1, src, addr, key, context);
}

static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return rma_msg(ep, true, msg, flags & ~FI_REMOTE_CQ_DATA);
}

static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	return rma_post(ep, false, iov, desc, count, dest, addr, key, 0,
			context, kfab_ep_op_flags(ep, false));
}

static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr,
			 uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return rma_writev(ep, &iov, &desc, 1, dest, addr, key, context);
}

static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	return rma_msg(ep, false, msg, flags);
}

static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return rma_post(ep, false, &iov, NULL, 1, dest, addr, key, 0, NULL,
			FI_INJECT);
}

static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return rma_post(ep, false, &iov, &desc, 1, dest, addr, key, data,
			context,
			kfab_ep_op_flags(ep, false) | FI_REMOTE_CQ_DATA);
}

static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest,
			      uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return rma_post(ep, false, &iov, NULL, 1, dest, addr, key, data,
			NULL, FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma kfab_rma_fi_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

int kfab_rma_err(int status)
{
	switch (status) {
	case -ENOKEY:
	case -ERANGE:
	case -EPERM:
	case -EACCES:
	case -ESTALE:
		return FI_EACCES;
	case -EOPNOTSUPP:
		return FI_EOPNOTSUPP;
	case -EINVAL:
		return FI_EINVAL;
	case -ENOMEM:
		return FI_ENOMEM;
	case -ECONNRESET:
		return FI_ECONNRESET;
	case -ENXIO:
		return FI_EADDRNOTAVAIL;
	default:
		return FI_EIO;
	}
}
