/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the fi_rma(3) calls every provider shares (kfab_rma_ops.c):
 * its endpoints' rma member points to kfab_rma_fi_ops, whose every form
 * becomes one read or one write for the rma hook of the endpoint's
 * struct kfab_ep_ops (kfab_prov.h): local iovecs, one remote iovec
 * (rma_iov_limit is 1), CQ data and the operation flags:
 *   fi_read, fi_readv, fi_write, fi_writev  the transmit op flags
 *   fi_writedata                            those and FI_REMOTE_CQ_DATA
 *   fi_inject_write                         FI_INJECT
 *   fi_inject_writedata                     FI_INJECT | FI_REMOTE_CQ_DATA
 *   fi_readmsg                              its flags but FI_REMOTE_CQ_DATA
 *   fi_writemsg                             its flags
 */
#ifndef KFAB_ULIB_RMA_H
#define KFAB_ULIB_RMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fi_rma.h>

struct kfab_provider;

extern struct fi_ops_rma kfab_rma_fi_ops;

/*
 * The provider's checks in its rma hook: @caps has FI_RMA, and the
 * @count iovecs' *@len bytes are at most @max_len, with FI_INJECT in
 * @flags at most @inject_size. 0 or -FI_E*, with a warning.
 */
int kfab_rma_check(const struct kfab_provider *kp, uint64_t caps,
		   const struct iovec *iov, size_t count, size_t max_len,
		   size_t inject_size, uint64_t flags, size_t *len);

/*
 * The positive FI_E* code of an RMA or atomic that failed with @status, a
 * -errno of the initiator's device or of the target's answer: a key,
 * range or access the target's region refuses (-ENOKEY, -ERANGE, -EPERM,
 * -EACCES, -ESTALE) FI_EACCES, -EOPNOTSUPP, -EINVAL and -ENOMEM their
 * own, a peer gone (-ECONNRESET) FI_ECONNRESET, a receive context the
 * target lacks (-ENXIO) FI_EADDRNOTAVAIL, anything else FI_EIO.
 */
int kfab_rma_err(int status);

#endif /* KFAB_ULIB_RMA_H */
