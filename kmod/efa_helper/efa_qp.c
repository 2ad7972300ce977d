// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa: SRD queue pairs and peer handles.
 *
 * A QP goes through three steps:
 *
 *   reserved   CREATE_QP took its qpn in dev->qps with a NULL entry (so the
 *              number is unique and EBUSY is decided before anything is
 *              allocated) and counted it in dev->nqps; no peer can find it,
 *              and every failure up to the copy to userspace unwinds
 *              without a trace;
 *   live       dev->qps points to it; peers find it under dev->lock and
 *              take a reference;
 *   dead       DESTROY_QP or the release of its file: ctrl->dead is 1, the
 *              qpn is out of the table, the eventfd is gone. Peers'
 *              references keep the struct (and the queue memory) until
 *              their handles go, and they see ECONNRESET.
 *
 * Queue memory is referenced by the QP, by every mmap table entry naming it
 * (the owner's and each peer's) and by every VMA, so it outlives whichever
 * of them goes first.
 */

#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "efa.h"

static void efa_qp_free(struct kref *ref)
{
	struct efa_qp *qp = to_efa_qp(ref);

	kfab_qobj_destroy(&qp->q);
	kfree(qp);
}

void efa_qp_put(struct efa_qp *qp)
{
	kref_put(&qp->ref, efa_qp_free);
}

/* A fresh qpn, cyclically: -ENETDOWN, -EBUSY, -ENOMEM. */
static int efa_qpn_reserve(struct efa_device *dev, u32 *qpn)
{
	int ret;

	mutex_lock(&dev->lock);
	if (!efa_device_active(dev)) {
		ret = -ENETDOWN;
		goto out;
	}
	if (dev->nqps >= dev->max_qps) {
		ret = -EBUSY;
		goto out;
	}
	/* A NULL entry is reserved: xa_load() still finds nothing there. */
	ret = xa_alloc_cyclic(&dev->qps, qpn, NULL, XA_LIMIT(1, EFA_QPN_MAX),
			      &dev->next_qpn, GFP_KERNEL);
	if (ret < 0)
		goto out;
	ret = 0;
	dev->nqps++;
out:
	mutex_unlock(&dev->lock);
	return ret;
}

/* The qpn was reserved but never published, or its QP destroyed. */
static void efa_qpn_free_locked(struct efa_device *dev, u32 qpn)
{
	lockdep_assert_held(&dev->lock);
	xa_erase(&dev->qps, qpn);
	dev->nqps--;
}

static void efa_qpn_unreserve(struct efa_device *dev, u32 qpn)
{
	mutex_lock(&dev->lock);
	efa_qpn_free_locked(dev, qpn);
	mutex_unlock(&dev->lock);
}

/* Senders count RNRs in the ctrl page (enum efa_rnr). */
static const struct kfab_ctrl_layout efa_qp_ctrl_layout = {
	.armed = offsetof(struct kfab_efa_qp_ctrl, armed),
	.counters = offsetof(struct kfab_efa_qp_ctrl, rnrs),
	.ncounters = EFA_NR_RNRS,
};

static struct efa_qp *efa_qp_create(struct efa_filedata *fd, u32 qpn)
{
	struct efa_device *dev = fd->dev;
	struct efa_qp *qp;

	qp = kzalloc_node(sizeof(*qp), GFP_KERNEL, dev->kc.node);
	if (!qp)
		return ERR_PTR(-ENOMEM);
	kref_init(&qp->ref);
	qp->dev = dev;
	qp->pd = fd;
	qp->qpn = qpn;
	qp->qkey = efa_random_key();
	qp->rx_entries = dev->rx_entries;
	qp->mtu = dev->mtu;
	kfab_qobj_init(&qp->q, &dev->kc);

	if (kfab_qobj_alloc_queues(&qp->q, &efa_qp_ctrl_layout,
				   (size_t)qp->rx_entries *
				   sizeof(struct kfab_efa_rx_entry),
				   (size_t)qp->rx_entries * qp->mtu)) {
		efa_qp_put(qp);	/* puts whichever queues were allocated */
		return ERR_PTR(-ENOMEM);
	}
	return qp;
}

int efa_ioctl_create_qp(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	struct efa_device *dev = fd->dev;
	struct kfab_efa_create_qp out;
	struct kfab_qmap maps[KFAB_NR_QMAPS];
	struct efa_qp *qp;
	u32 qpn;
	int ret;

	ret = efa_qpn_reserve(dev, &qpn);
	if (ret)
		return ret;

	qp = efa_qp_create(fd, qpn);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err_qpn;
	}

	kfab_qobj_qmaps(&qp->q, maps);
	ret = kfab_mmap_table_add_n(&f->mmap, maps, KFAB_QMAP_STATUS,
				    qp->offsets);
	if (ret)
		goto err_qp;
	ret = xa_insert(&fd->qps, qpn, qp, GFP_KERNEL);
	if (ret)
		goto err_queues;

	memset(&out, 0, sizeof(out));
	out.qpn = qpn;
	out.qkey = qp->qkey;
	out.rx_entries = qp->rx_entries;
	out.rx_entry_size = sizeof(struct kfab_efa_rx_entry);
	out.mtu = qp->mtu;
	out.ctrl_offset = qp->offsets[KFAB_QMAP_CTRL];
	out.ring_offset = qp->offsets[KFAB_QMAP_RING];
	out.bufs_offset = qp->offsets[KFAB_QMAP_BUFS];
	if (copy_to_user(uarg, &out, sizeof(out))) {
		ret = -EFAULT;
		goto err_file;
	}

	/* Publish: from here on peers can find it. Cannot fail: reserved. */
	mutex_lock(&dev->lock);
	xa_store(&dev->qps, qpn, qp, GFP_KERNEL);
	mutex_unlock(&dev->lock);
	atomic64_inc(&dev->qps_live);
	atomic64_inc(&dev->qps_created);
	efa_dbg_qp(qp, "created\n");
	return 0;

err_file:
	xa_erase(&fd->qps, qpn);
err_queues:
	kfab_mmap_table_del_n(&f->mmap, qp->offsets, KFAB_QMAP_STATUS);
err_qp:
	efa_qp_put(qp);
err_qpn:
	efa_qpn_unreserve(dev, qpn);
	return ret;
}

/*
 * DESTROY_QP or file release, for a QP already taken out of its file's
 * table. Peers stop finding it once it is out of dev->qps and stop
 * signalling it once it is dead; their references keep the rest until
 * their handles go. The owner's mmap offsets go, its mappings stay.
 */
static void efa_qp_destroy(struct efa_filedata *fd, struct efa_qp *qp)
{
	struct efa_device *dev = qp->dev;

	kfab_qobj_kill(&qp->q);

	mutex_lock(&dev->lock);
	WRITE_ONCE(efa_qp_ctrl(qp)->dead, 1);
	kfab_qobj_retire_locked(&qp->q);
	efa_qpn_free_locked(dev, qp->qpn);
	mutex_unlock(&dev->lock);
	atomic64_dec(&dev->qps_live);

	kfab_eventfd_release(&qp->q.eventfd);
	kfab_mmap_table_del_n(&fd->f.mmap, qp->offsets, KFAB_QMAP_STATUS);
	efa_dbg_qp(qp, "destroyed\n");
	efa_qp_put(qp);
}

int efa_ioctl_destroy_qp(struct kfab_file *f, const void *arg,
			 void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	const struct kfab_efa_destroy_qp *in = arg;
	struct efa_qp *qp;

	qp = xa_erase(&fd->qps, in->qpn);
	if (!qp)
		return -EINVAL;
	efa_qp_destroy(fd, qp);
	return 0;
}

/* File release: no ioctl can run any more. */
void efa_file_release_qps(struct efa_filedata *fd)
{
	struct efa_qp *qp;
	unsigned long qpn;

	xa_for_each(&fd->qps, qpn, qp) {
		xa_erase(&fd->qps, qpn);
		efa_qp_destroy(fd, qp);
	}
}

/*
 * The live QP that @in names, with a new reference: as
 * kfab_file_peer_dev_check() for its device, -ENOENT no such QP, -EACCES
 * the qkey differs.
 */
static struct efa_qp *efa_qp_lookup(struct kfab_file *f,
				    const struct kfab_efa_map_peer *in)
{
	struct efa_device *dev = efa_device_by_gid(in->gid);
	struct efa_qp *qp;
	int ret;

	ret = kfab_file_peer_dev_check(f, dev ? &dev->kc : NULL);
	if (ret)
		return ERR_PTR(ret);

	mutex_lock(&dev->lock);
	qp = xa_load(&dev->qps, in->qpn);
	if (!qp)
		qp = ERR_PTR(-ENOENT);
	else if (qp->qkey != in->qkey)
		qp = ERR_PTR(-EACCES);
	else
		kref_get(&qp->ref);
	mutex_unlock(&dev->lock);
	return qp;
}

int efa_ioctl_map_peer(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct kfab_qmap maps[KFAB_NR_QMAPS];
	const struct kfab_efa_map_peer *in = arg;
	struct kfab_efa_map_peer out;
	struct efa_qp *pqp;
	int ret;

	pqp = efa_qp_lookup(f, in);
	if (IS_ERR(pqp))
		return PTR_ERR(pqp);

	memset(&out, 0, sizeof(out));
	memcpy(out.gid, in->gid, KFAB_EFA_GID_LEN);
	out.qpn = in->qpn;
	out.qkey = in->qkey;
	out.rx_entries = pqp->rx_entries;
	out.rx_entry_size = sizeof(struct kfab_efa_rx_entry);
	out.mtu = pqp->mtu;
	kfab_qobj_qmaps(&pqp->q, maps);
	ret = KFAB_FILE_MAP_PEER(f, &pqp->q, maps, uarg, &out);
	if (ret)
		return ret;
	efa_dbg_dev(to_efa_file(f)->dev, "peer %u: %pI6 qp %u\n", out.peer,
		    in->gid, in->qpn);
	return 0;
}

int efa_ioctl_set_eventfd(struct kfab_file *f, const void *arg,
			  void __user *uarg)
{
	struct efa_filedata *fd = to_efa_file(f);
	const struct kfab_efa_eventfd *in = arg;
	struct efa_qp *qp;

	if (in->fd < -1)
		return -EINVAL;
	qp = xa_load(&fd->qps, in->qpn);
	if (!qp)
		return -EINVAL;
	return kfab_eventfd_set(&qp->q.eventfd, in->fd);
}
