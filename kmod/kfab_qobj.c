// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: what a peer handle names, an HFI context or an EFA QP: the
 * object other files map through MAP_PEER, signal with NOTIFY and copy
 * into. Its lock orders a peer's signal or copy against its owner's
 * release: once dead is set under it, nobody signals its eventfd again.
 */

#include <linux/export.h>
#include <linux/string.h>

#include "kfab_core.h"

void kfab_qobj_init(struct kfab_qobj *q, struct kfab_cdev *kc)
{
	q->kc = kc;
	mutex_init(&q->lock);
	q->dead = false;
	kfab_eventfd_init(&q->eventfd);
	q->armed = NULL;
	q->ctrl = NULL;
	q->ring = NULL;
	q->bufs = NULL;
	q->counters = NULL;
	q->ncounters = 0;
	memset(q->retired, 0, sizeof(q->retired));
}
EXPORT_SYMBOL_GPL(kfab_qobj_init);

int kfab_qobj_alloc_queues(struct kfab_qobj *q,
			   const struct kfab_ctrl_layout *l, size_t ring_bytes,
			   size_t bufs_bytes)
{
	if (WARN_ON_ONCE(l->ncounters > KFAB_QOBJ_COUNTERS))
		return -EINVAL;
	q->ctrl = kfab_qmem_alloc(PAGE_SIZE);
	if (!q->ctrl)
		return -ENOMEM;
	q->armed = q->ctrl->vaddr + l->armed;
	q->counters = q->ctrl->vaddr + l->counters;
	q->ncounters = l->ncounters;
	q->ring = kfab_qmem_alloc(ring_bytes);
	if (!q->ring)
		return -ENOMEM;
	q->bufs = kfab_qmem_alloc(bufs_bytes);
	if (!q->bufs)
		return -ENOMEM;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_qobj_alloc_queues);

void kfab_qobj_retire_locked(struct kfab_qobj *q)
{
	u64 now;
	unsigned int i;

	lockdep_assert_held(q->kc->lock);
	for (i = 0; i < q->ncounters; i++) {
		now = kfab_qobj_counter(q, i);
		q->kc->retired[i] += now - q->retired[i];
		q->retired[i] = now;
	}
}
EXPORT_SYMBOL_GPL(kfab_qobj_retire_locked);

void kfab_qobj_destroy(struct kfab_qobj *q)
{
	if (q->dead && q->ncounters) {
		mutex_lock(q->kc->lock);
		kfab_qobj_retire_locked(q);
		mutex_unlock(q->kc->lock);
	}
	kfab_qmem_put(q->bufs);		/* NULL-safe */
	kfab_qmem_put(q->ring);
	kfab_qmem_put(q->ctrl);
	mutex_destroy(&q->lock);
}
EXPORT_SYMBOL_GPL(kfab_qobj_destroy);

void kfab_qobj_qmaps(struct kfab_qobj *q,
		     struct kfab_qmap maps[KFAB_NR_QMAPS])
{
	maps[KFAB_QMAP_CTRL] = (struct kfab_qmap){ q->ctrl, true };
	maps[KFAB_QMAP_RING] = (struct kfab_qmap){ q->ring, true };
	maps[KFAB_QMAP_BUFS] = (struct kfab_qmap){ q->bufs, true };
	maps[KFAB_QMAP_STATUS] = (struct kfab_qmap){ q->kc->status, false };
}
EXPORT_SYMBOL_GPL(kfab_qobj_qmaps);

void kfab_qobj_kill(struct kfab_qobj *q)
{
	mutex_lock(&q->lock);
	q->dead = true;
	mutex_unlock(&q->lock);
}
EXPORT_SYMBOL_GPL(kfab_qobj_kill);

int kfab_qobj_reachable(struct kfab_qobj *q, const struct kfab_cdev *from)
{
	lockdep_assert_held(&q->lock);
	if (q->dead)
		return -ECONNRESET;
	if (!kfab_cdev_active(from) || !kfab_cdev_active(q->kc))
		return -ENETDOWN;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_qobj_reachable);

/*
 * Step 4' of the queue protocols, done by the kernel for the sender. The
 * full fence between the copy and the load of armed is in
 * kfab_eventfd_wake_armed().
 */
static void kfab_qobj_wake_armed(struct kfab_qobj *q)
{
	mutex_lock(&q->lock);
	if (!q->dead && kfab_eventfd_wake_armed(q->armed, &q->eventfd))
		atomic64_inc(&q->kc->notifies);
	mutex_unlock(&q->lock);
}

void kfab_qobj_transferred(struct kfab_qobj *q, u64 bytes, bool notify)
{
	kfab_link_pace(&q->kc->link, READ_ONCE(q->kc->link_rate_mbps), bytes);
	if (notify)
		kfab_qobj_wake_armed(q);
}
EXPORT_SYMBOL_GPL(kfab_qobj_transferred);

int kfab_ioctl_notify(struct kfab_file *f, const void *in, void __user *uarg)
{
	struct kfab_qobj *q = kfab_peer_obj(&f->peers, *(const u32 *)in);
	int ret;

	if (!q)
		return -EINVAL;
	/* Under q->lock the eventfd cannot be released under us. */
	mutex_lock(&q->lock);
	ret = kfab_qobj_reachable(q, f->kc);
	if (!ret) {
		kfab_eventfd_signal(&q->eventfd);
		atomic64_inc(&q->kc->notifies);
	}
	mutex_unlock(&q->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(kfab_ioctl_notify);
