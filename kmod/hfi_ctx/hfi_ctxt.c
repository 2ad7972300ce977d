// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: hardware contexts and peer handles.
 *
 * A context goes through three steps:
 *
 *   claimed    ASSIGN_CTXT set its bit in unit->claimed (so the number is
 *              the lowest free one and EBUSY is decided before anything is
 *              allocated), but unit->slots[] is still NULL: no peer can
 *              find it, and every failure up to the copy to userspace
 *              unwinds without a trace;
 *   live       unit->slots[] points to it; peers find it under unit->lock
 *              and take a reference;
 *   dead       its owner file was released: ctrl->dead is 1, the slot is
 *              free, TIDs, eventfd and jkey are gone. Peers' references keep
 *              the struct (and the queue memory) until their handles go,
 *              and they see ECONNRESET.
 *
 * Queue memory is referenced by the context, by every mmap table entry
 * naming it (the owner's and each peer's) and by every VMA, so it outlives
 * whichever of them goes first.
 */

#include <linux/cred.h>
#include <linux/minmax.h>
#include <linux/nospec.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <kunit/visibility.h>

#include "hfi.h"

static void hfi_ctxt_free(struct kref *ref)
{
	struct hfi_ctxt *c = to_hfi_ctxt(ref);

	put_pid(c->owner);	/* NULL-safe */
	kfab_qobj_destroy(&c->q);
	kfree(c);
}

void hfi_ctxt_put(struct hfi_ctxt *c)
{
	kref_put(&c->ref, hfi_ctxt_free);
}

/* The lowest free context number: -ENETDOWN, -EBUSY. */
static int hfi_slot_claim(struct hfi_unit *unit, u32 *slot)
{
	unsigned long n;
	int ret = 0;

	mutex_lock(&unit->lock);
	if (!hfi_unit_active(unit)) {
		ret = -ENETDOWN;
		goto out;
	}
	n = find_first_zero_bit(unit->claimed, unit->nctxts);
	if (n >= unit->nctxts) {
		ret = -EBUSY;
		goto out;
	}
	__set_bit(n, unit->claimed);
	unit->nfree--;
	*slot = n;
out:
	mutex_unlock(&unit->lock);
	return ret;
}

/* The slot was claimed but never published, or its context released. */
static void hfi_slot_free_locked(struct hfi_unit *unit, u32 slot)
{
	lockdep_assert_held(&unit->lock);
	unit->slots[slot] = NULL;
	__clear_bit(slot, unit->claimed);
	unit->nfree++;
}

static void hfi_slot_unclaim(struct hfi_unit *unit, u32 slot)
{
	mutex_lock(&unit->lock);
	hfi_slot_free_locked(unit, slot);
	mutex_unlock(&unit->lock);
}

/* Producers count drops in the ctrl page (enum hfi_drop). */
static const struct kfab_ctrl_layout hfi_ctxt_ctrl_layout = {
	.armed = offsetof(struct kfab_hfi_ctrl, armed),
	.counters = offsetof(struct kfab_hfi_ctrl, rhq_full_drops),
	.ncounters = HFI_NR_DROPS,
};

static struct hfi_ctxt *hfi_ctxt_create(struct hfi_unit *unit, u32 slot,
					const struct kfab_hfi_assign *in)
{
	struct hfi_ctxt *c;
	int ret;

	c = kzalloc_node(sizeof(*c), GFP_KERNEL, unit->kc.node);
	if (!c)
		return ERR_PTR(-ENOMEM);
	kref_init(&c->ref);
	c->unit = unit;
	c->ctxt = slot;
	c->pkey = in->pkey;
	c->sl = in->sl;
	memcpy(c->uuid, in->uuid, HFI_UUID_LEN);
	c->uid = current_uid();
	c->owner = get_task_pid(current, PIDTYPE_TGID);
	c->rhq_entries = unit->rhq_entries;
	c->eager_count = unit->eager_count;
	c->eager_size = unit->eager_size;
	kfab_qobj_init(&c->q, &unit->kc);
	kfab_handles_init(&c->tids);

	ret = hfi_jkey_get(c->uid, c->uuid, &c->jkey);
	if (ret)
		goto err_free;

	ret = kfab_qobj_alloc_queues(&c->q, &hfi_ctxt_ctrl_layout,
				     (size_t)c->rhq_entries *
				     sizeof(struct kfab_hfi_rhq_entry),
				     (size_t)c->eager_count * c->eager_size);
	if (ret)
		goto err_jkey;
	return c;

err_jkey:
	hfi_jkey_put(c->jkey);
err_free:
	hfi_ctxt_put(c);	/* puts whichever queues were allocated */
	return ERR_PTR(ret);
}

/* Undoes hfi_ctxt_create() for a context that was never published. */
static void hfi_ctxt_destroy(struct hfi_ctxt *c)
{
	hfi_jkey_put(c->jkey);
	hfi_ctxt_put(c);
}

static void hfi_fill_info(struct kfab_hfi_ctxt_info *info,
			  const struct hfi_ctxt *c)
{
	memset(info, 0, sizeof(*info));
	info->unit = c->unit->index;
	info->lid = c->unit->lid;
	info->ctxt = c->ctxt;
	info->jkey = c->jkey;
	info->pkey = c->pkey;
	info->sl = c->sl;
	info->rhq_entries = c->rhq_entries;
	info->rhq_entry_size = sizeof(struct kfab_hfi_rhq_entry);
	info->eager_count = c->eager_count;
	info->eager_size = c->eager_size;
	memcpy(info->uuid, c->uuid, HFI_UUID_LEN);
}

int hfi_ioctl_assign(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	struct hfi_unit *unit = fd->unit;
	const struct kfab_hfi_assign *in = arg;
	struct kfab_hfi_assign out;
	struct kfab_hfi_ctxt_info *info = &out.info;
	struct kfab_qmap maps[KFAB_NR_QMAPS];
	u64 offsets[KFAB_NR_QMAPS];
	struct hfi_ctxt *c;
	u32 slot;
	int ret;

	if (fd->ctxt)
		return -EINVAL;
	if (!(in->pkey & HFI_PKEY_MASK) || in->sl > KFAB_HFI_SL_MAX)
		return -EINVAL;

	ret = hfi_slot_claim(unit, &slot);
	if (ret)
		return ret;

	c = hfi_ctxt_create(unit, slot, in);
	if (IS_ERR(c)) {
		ret = PTR_ERR(c);
		goto err_slot;
	}

	memset(&out, 0, sizeof(out));
	memcpy(out.uuid, in->uuid, HFI_UUID_LEN);
	out.pkey = in->pkey;
	out.sl = in->sl;
	hfi_fill_info(info, c);

	kfab_qobj_qmaps(&c->q, maps);
	ret = kfab_mmap_table_add_n(&f->mmap, maps, KFAB_NR_QMAPS, offsets);
	if (ret)
		goto err_ctxt;
	info->ctrl_offset = offsets[KFAB_QMAP_CTRL];
	info->rhq_offset = offsets[KFAB_QMAP_RING];
	info->eager_offset = offsets[KFAB_QMAP_BUFS];
	info->status_offset = offsets[KFAB_QMAP_STATUS];

	if (copy_to_user(uarg, &out, sizeof(out))) {
		ret = -EFAULT;
		goto err_queues;
	}

	/* Publish: from here on peers can find it. */
	mutex_lock(&unit->lock);
	unit->slots[slot] = c;
	mutex_unlock(&unit->lock);
	atomic64_inc(&unit->ctxts_assigned);
	fd->ctxt = c;
	fd->info = *info;
	hfi_dbg_ctxt(c, "assigned, jkey %#x pkey %#x sl %u\n", c->jkey,
		     c->pkey, c->sl);
	return 0;

err_queues:
	kfab_mmap_table_del_n(&f->mmap, offsets, KFAB_NR_QMAPS);
err_ctxt:
	hfi_ctxt_destroy(c);
err_slot:
	hfi_slot_unclaim(unit, slot);
	return ret;
}

int hfi_ioctl_ctxt_info(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);

	/* fd->info was zeroed before ASSIGN_CTXT filled it */
	if (copy_to_user(uarg, &fd->info, sizeof(fd->info)))
		return -EFAULT;
	return 0;
}

/*
 * The live context that @in names, with a new reference, if it has the
 * keys of @own: as kfab_file_peer_dev_check() for its unit, -ENOENT no
 * such context, -EACCES jkey or pkey differ.
 */
static struct hfi_ctxt *hfi_ctxt_lookup(struct kfab_file *f,
					const struct kfab_hfi_map_peer *in,
					const struct hfi_ctxt *own)
{
	struct hfi_unit *unit = hfi_unit_by_lid(in->lid);
	struct hfi_ctxt *c;
	u32 num;
	int ret;

	ret = kfab_file_peer_dev_check(f, unit ? &unit->kc : NULL);
	if (ret)
		return ERR_PTR(ret);
	if (in->ctxt >= unit->nctxts)
		return ERR_PTR(-ENOENT);
	num = array_index_nospec(in->ctxt, unit->nctxts);

	mutex_lock(&unit->lock);
	c = unit->slots[num];
	if (!c)
		c = ERR_PTR(-ENOENT);
	else if (c->jkey != own->jkey ||
		 ((c->pkey ^ own->pkey) & HFI_PKEY_MASK))
		c = ERR_PTR(-EACCES);
	else
		kref_get(&c->ref);
	mutex_unlock(&unit->lock);
	return c;
}

int hfi_ioctl_map_peer(struct kfab_file *f, const void *arg, void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	struct kfab_qmap maps[KFAB_NR_QMAPS];
	const struct kfab_hfi_map_peer *in = arg;
	struct kfab_hfi_map_peer out;
	struct hfi_ctxt *pc;
	int ret;

	pc = hfi_ctxt_lookup(f, in, fd->ctxt);
	if (IS_ERR(pc))
		return PTR_ERR(pc);

	memset(&out, 0, sizeof(out));
	out.lid = in->lid;
	out.ctxt = in->ctxt;
	out.rhq_entries = pc->rhq_entries;
	out.rhq_entry_size = sizeof(struct kfab_hfi_rhq_entry);
	out.eager_count = pc->eager_count;
	out.eager_size = pc->eager_size;
	kfab_qobj_qmaps(&pc->q, maps);
	ret = KFAB_FILE_MAP_PEER(f, &pc->q, maps, uarg, &out);
	if (ret)
		return ret;
	hfi_dbg_ctxt(fd->ctxt, "peer %u: lid %u ctxt %u\n", out.peer, in->lid,
		     in->ctxt);
	return 0;
}

int hfi_ioctl_set_eventfd(struct kfab_file *f, const void *arg,
			  void __user *uarg)
{
	struct hfi_filedata *fd = to_hfi_file(f);
	const struct kfab_hfi_eventfd *in = arg;

	if (in->fd < -1)
		return -EINVAL;
	return kfab_eventfd_set(&fd->ctxt->q.eventfd, in->fd);
}

static void hfi_fill_entry(struct kfab_hfi_ctxt_entry *e,
			   const struct hfi_ctxt *c)
{
	const struct kfab_hfi_ctrl *ctrl = hfi_ctxt_ctrl(c);

	lockdep_assert_held(&c->q.lock);
	memset(e, 0, sizeof(*e));
	e->ctxt = c->ctxt;
	e->jkey = c->jkey;
	e->pkey = c->pkey;
	e->sl = c->sl;
	if (pid_has_task(c->owner, PIDTYPE_TGID))
		e->pid = pid_vnr(c->owner);
	else
		e->flags |= KFAB_HFI_CTXT_OWNER_GONE;
	if (READ_ONCE(ctrl->armed))
		e->flags |= KFAB_HFI_CTXT_ARMED;
	/* the owner's file holds the other reference while the slot is set */
	e->peer_refs = kref_read(&c->ref) - 1;
	e->rhq_entries = c->rhq_entries;
	e->eager_count = c->eager_count;
	e->eager_size = c->eager_size;
	e->ntids = c->ntids;
	e->tid_pages = c->pinned_pages;
	e->rhq_full_drops = READ_ONCE(ctrl->rhq_full_drops);
	e->eager_full_drops = READ_ONCE(ctrl->eager_full_drops);
	e->injected_drops = READ_ONCE(ctrl->injected_drops);
}

/*
 * The live contexts of @unit assigned by user @uid, in context order: the
 * first @room of them into @ents. Returns how many there are.
 */
VISIBLE_IF_KUNIT u32 hfi_list_ctxts_locked(struct hfi_unit *unit, kuid_t uid,
					   struct kfab_hfi_ctxt_entry *ents,
					   u32 room)
{
	u32 i, n = 0;

	lockdep_assert_held(&unit->lock);
	for (i = 0; i < unit->nctxts; i++) {
		struct hfi_ctxt *c = unit->slots[i];

		if (!c || !uid_eq(c->uid, uid))
			continue;
		mutex_lock(&c->q.lock);
		/* being released: its slot is freed as soon as we let go */
		if (!c->q.dead) {
			if (n < room)
				hfi_fill_entry(&ents[n], c);
			n++;
		}
		mutex_unlock(&c->q.lock);
	}
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_list_ctxts_locked);

/* Needs no context and no file lock: it reads only the unit. */
int hfi_ioctl_list_ctxts(struct kfab_file *f, const void *arg,
			 void __user *uarg)
{
	struct hfi_unit *unit = to_hfi_file(f)->unit;
	struct kfab_hfi_ctxt_entry *ents = NULL;
	const struct kfab_hfi_list_ctxts *in = arg;
	struct kfab_hfi_list_ctxts out;
	u32 room, total;
	int ret = 0;

	/* filled under unit->lock, copied out after it */
	room = min(in->count, unit->nctxts);
	if (room) {
		ents = kvcalloc(room, sizeof(*ents), GFP_KERNEL);
		if (!ents)
			return -ENOMEM;
	}
	mutex_lock(&unit->lock);
	total = hfi_list_ctxts_locked(unit, current_euid(), ents, room);
	mutex_unlock(&unit->lock);

	memset(&out, 0, sizeof(out));
	out.entries = in->entries;
	out.count = min(total, room);
	out.total = total;
	out.flags = in->flags;
	if (out.count &&
	    copy_to_user(u64_to_user_ptr(in->entries), ents,
			 array_size(out.count, sizeof(*ents))))
		ret = -EFAULT;
	else if (copy_to_user(uarg, &out, sizeof(out)))
		ret = -EFAULT;
	kvfree(ents);
	return ret;
}

/*
 * The owner's file is released. Peers stop finding the context once its
 * slot is NULL and stop using its TIDs and eventfd once it is dead; their
 * references keep the rest until their handles go.
 */
void hfi_ctxt_release(struct hfi_ctxt *c)
{
	struct hfi_unit *unit = c->unit;

	kfab_qobj_kill(&c->q);

	mutex_lock(&unit->lock);
	WRITE_ONCE(hfi_ctxt_ctrl(c)->dead, 1);
	kfab_qobj_retire_locked(&c->q);
	hfi_slot_free_locked(unit, c->ctxt);
	mutex_unlock(&unit->lock);

	hfi_tid_release_all(c);
	kfab_eventfd_release(&c->q.eventfd);
	hfi_jkey_put(c->jkey);
	hfi_dbg_ctxt(c, "released\n");
	hfi_ctxt_put(c);
}
