// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: SDMA, the single copy from a sender's memory into a TID buffer
 * of a peer context.
 *
 * The peer's TID is looked up under the peer's ctxt->q.lock with a reference
 * of our own, so the copy runs with no lock but our file's: the owner may
 * free the TID or die meanwhile, the pages stay until we drop it.
 */

#include <linux/uaccess.h>

#include "hfi.h"

int hfi_ioctl_sdma(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	const struct kfab_hfi_sdma *in = arg;
	struct kfab_hfi_sdma __user *uout = uarg;
	struct kfab_pinned *p = NULL;
	struct hfi_ctxt *pc;
	u64 total;
	int ret;

	pc = hfi_peer_ctxt(f, in->peer);
	if (!pc)
		return -EINVAL;

	/* -EINVAL count or wrap, -EFAULT; fd->iov is ours under f->lock */
	ret = kfab_iov_import(in->iov, in->iovcnt, fd->iov, &total);
	if (ret)
		return ret;

	mutex_lock(&pc->q.lock);
	ret = kfab_qobj_reachable(&pc->q, f->kc);
	if (!ret) {
		p = kfab_handles_get(&pc->tids, in->tid);
		if (!p)
			ret = -ENOENT;
	}
	mutex_unlock(&pc->q.lock);
	if (ret)
		return ret;

	ret = kfab_copy_to_pinned(p, in->offset, fd->iov, in->iovcnt, total);
	kfab_pinned_put(p);
	if (ret)
		return ret;

	atomic64_inc(&pc->unit->sdma_requests);
	atomic64_add(total, &pc->unit->sdma_bytes);
	kfab_qobj_transferred(&pc->q, total, in->flags & KFAB_HFI_SDMA_NOTIFY);

	/* the rest of the answer is the argument as it came in */
	if (put_user(total, &uout->bytes))
		return -EFAULT;
	return 0;
}
