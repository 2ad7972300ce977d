/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the fi_rma(3) calls every provider shares (kfab_rma_ops.c).
 * Every form becomes one read or one write for the provider's post():
 * local iovecs, one remote iovec (rma_iov_limit is 1), CQ data and the
 * operation flags:
 *   fi_read, fi_readv, fi_write, fi_writev  the transmit op flags
 *   fi_writedata                            those and FI_REMOTE_CQ_DATA
 *   fi_inject_write                         FI_INJECT
 *   fi_inject_writedata                     FI_INJECT | FI_REMOTE_CQ_DATA
 *   fi_readmsg                              its flags but FI_REMOTE_CQ_DATA
 *   fi_writemsg                             its flags
 */
#ifndef KFAB_ULIB_RMA_H
#define KFAB_ULIB_RMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fi_rma.h>

struct kfab_provider;

/*
 * A provider's fi_ops_rma: .ops, what its endpoints' rma member points
 * to, is KFAB_RMA_FI_OPS, or a provider's refusal in post().
 */
struct kfab_rma_ops {
	struct fi_ops_rma ops;
	/*
	 * Every read (@read) and write: @count <= KFAB_IOV_LIMIT iovecs
	 * (@iov not NULL when @count is not 0) with @peer's memory at @addr
	 * under @key.
	 */
	ssize_t (*post)(struct fid_ep *ep, bool read, const struct iovec *iov,
			size_t count, fi_addr_t peer, uint64_t addr,
			uint64_t key, uint64_t data, void *context,
			uint64_t flags);
	/* the flags of the calls that take none (FI_GETOPSFLAG) */
	uint64_t (*op_flags)(struct fid_ep *ep);
};

#define KFAB_RMA_FI_OPS {						\
	.size = sizeof(struct fi_ops_rma),				\
	.read = kfab_rma_read,						\
	.readv = kfab_rma_readv,					\
	.readmsg = kfab_rma_readmsg,					\
	.write = kfab_rma_write,					\
	.writev = kfab_rma_writev,					\
	.writemsg = kfab_rma_writemsg,					\
	.inject = kfab_rma_inject,					\
	.writedata = kfab_rma_writedata,				\
	.injectdata = kfab_rma_injectdata,				\
}

/*
 * A provider's checks in post(): @caps has FI_RMA, and the @count
 * iovecs' *@len bytes are at most @max_len, with FI_INJECT in @flags at
 * most @inject_size. 0 or -FI_E*, with a warning.
 */
int kfab_rma_check(const struct kfab_provider *kp, uint64_t caps,
		   const struct iovec *iov, size_t count, size_t max_len,
		   size_t inject_size, uint64_t flags, size_t *len);

ssize_t kfab_rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
		      fi_addr_t src, uint64_t addr, uint64_t key,
		      void *context);
ssize_t kfab_rma_readv(struct fid_ep *ep, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src,
		       uint64_t addr, uint64_t key, void *context);
ssize_t kfab_rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			 uint64_t flags);
ssize_t kfab_rma_write(struct fid_ep *ep, const void *buf, size_t len,
		       void *desc, fi_addr_t dest, uint64_t addr,
		       uint64_t key, void *context);
ssize_t kfab_rma_writev(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, void *context);
ssize_t kfab_rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			  uint64_t flags);
ssize_t kfab_rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t addr, uint64_t key);
ssize_t kfab_rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest,
			   uint64_t addr, uint64_t key, void *context);
ssize_t kfab_rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest, uint64_t addr,
			    uint64_t key);

#endif /* KFAB_ULIB_RMA_H */
