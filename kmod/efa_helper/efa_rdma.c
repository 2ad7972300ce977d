// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: device RDMA, the single copy between the caller's memory and
 * an MR of the file that owns a peer QP.
 *
 * The MR is looked up under the peer QP's lock (so the QP is live and its
 * file is the MR's) and the MR table's xa_lock, with a reference of our own
 * on its pinned pages, so the copy runs with no lock but our file's: the
 * owner may deregister the MR, destroy the QP or die meanwhile, the pages
 * stay until we drop it. A suspect MR (efa_mr.c) is checked first, with
 * no lock held but our file's and dev->mr_check.
 */

#include <linux/uaccess.h>

#include "efa.h"

/* Checks of a suspect MR before one that keeps changing turns stale. */
#define EFA_CHECK_TRIES		4

/* The device_rdma bit an RDMA op needs on both devices. */
static u32 efa_rdma_cap(u32 op)
{
	return op == KFAB_EFA_RDMA_READ ? KFAB_EFA_RDMA_CAP_READ :
					  KFAB_EFA_RDMA_CAP_WRITE;
}

int efa_ioctl_rdma(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	const struct kfab_efa_rdma *in = arg;
	struct kfab_efa_rdma __user *uout = uarg;
	struct kfab_pinned *p = NULL;
	struct efa_device *pdev;
	struct efa_qp *pqp;
	unsigned int tries;
	u64 total, offset;
	u32 cap;
	int ret = 0;

	if (in->op != KFAB_EFA_RDMA_READ && in->op != KFAB_EFA_RDMA_WRITE)
		return -EINVAL;
	pqp = efa_peer_qp(f, in->peer);
	if (!pqp)
		return -EINVAL;
	pdev = pqp->dev;
	cap = efa_rdma_cap(in->op);

	/* -EINVAL count or wrap, -EFAULT; fd->iov is ours under f->lock */
	ret = kfab_iov_import(in->iov, in->iovcnt, fd->iov, &total);
	if (ret)
		return ret;

	for (tries = 0; ; tries++) {
		mutex_lock(&pqp->q.lock);
		ret = kfab_qobj_reachable(&pqp->q, f->kc);
		if (!ret && (!(READ_ONCE(fd->dev->device_rdma) & cap) ||
			     !(READ_ONCE(pdev->device_rdma) & cap)))
			ret = -EOPNOTSUPP;
		if (!ret) {
			p = efa_mr_get_remote(pdev, pqp->pd, in->rkey, in->op,
					      in->remote_addr, total, &offset);
			ret = PTR_ERR_OR_ZERO(p);
		}
		mutex_unlock(&pqp->q.lock);
		if (ret != -EAGAIN)
			break;
		/* a suspect MR: valid or stale once checked */
		ret = efa_mr_check(pqp, in->rkey, tries >= EFA_CHECK_TRIES);
		if (ret)
			break;
	}
	if (ret)
		return ret;

	if (in->op == KFAB_EFA_RDMA_READ)
		ret = kfab_copy_from_pinned(p, offset, fd->iov, in->iovcnt,
					    total);
	else
		ret = kfab_copy_to_pinned(p, offset, fd->iov, in->iovcnt,
					  total);
	kfab_pinned_put(p);
	if (ret)
		return ret;

	if (in->op == KFAB_EFA_RDMA_READ) {
		atomic64_inc(&pdev->rdma_reads);
		atomic64_add(total, &pdev->rdma_read_bytes);
	} else {
		atomic64_inc(&pdev->rdma_writes);
		atomic64_add(total, &pdev->rdma_write_bytes);
	}
	kfab_qobj_transferred(&pqp->q, total, in->flags & KFAB_EFA_RDMA_NOTIFY);

	/* the rest of the answer is the argument as it came in */
	if (put_user(total, &uout->bytes))
		return -EFAULT;
	return 0;
}
