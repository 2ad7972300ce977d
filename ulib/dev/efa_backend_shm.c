// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the shm EFA backend, for hosts without the kfab modules.
 *
 * Device N (0..$KFAB_SHM_EFA_DEVICES - 1; 1..8, default 2, the module's
 * num_devices) is a directory <base>/efa<N>/ where <base> is $KFAB_SHM_DIR
 * or /dev/shm/kfab-<uid>, beside the HFI units' hfi<N>/ and with the same
 * rules (mode 0700, refused unless ours alone; files 0600: file ownership
 * is the boundary between users). Its gid is fe80::6b66:6162:7368:6d<N+1>:
 * the kernel's prefix with "shm" in the bytes the kernel leaves 0, so a gid
 * names a device of one backend only. The directory holds:
 *
 *   device        one page: struct kfab_efa_status, then struct
 *                 shm_devpage's own words (the cyclic qpn counter);
 *   qp<Q>         QP number Q (decimal, 1..0xffffff);
 *   qp<Q>.wake    its wakeup FIFO;
 *   mr<K>         the registry record of the region with rkey K (8 hex
 *                 digits): owner, range and access.
 *
 * Each file is made complete under a temporary name (.<kind>.XXXXXX) and
 * link()ed into place, so the link is what claims a qpn or an rkey, as
 * O_EXCL would, and nobody sees a half-written owner.
 *
 * The device file is made by the first open of the device with the
 * module's defaults: state Active, mtu 8192 (or the page size if larger),
 * device_rdma READ|WRITE, rnr_retry 3 ($KFAB_SHM_EFA_RNR_RETRY), the
 * other knobs 0 (rnr_inject_ppm $KFAB_SHM_EFA_RNR_INJECT_PPM, reorder_ppm
 * $KFAB_SHM_EFA_REORDER_PPM: for tests, in a fresh $KFAB_SHM_DIR). Every open
 * device holds flock(LOCK_SH) on it and maps it read-write: dev->status of
 * the owner and peer->status of every peer see a knob change at once. The
 * last close (LOCK_EX succeeds) removes it when every knob has its
 * default again, so changed knobs outlive their setter as sysfs does;
 * setting them back lets the file go. Openers and the last close order
 * themselves on the lock of the base directory (backend_shm.h), so processes
 * opening and closing a device together never fail. dev->info is what
 * QUERY_DEVICE gives with the module's defaults: rx_entries 256, max_qps
 * 64, max_mrs 4096, numa_node -1; status_offset and mr_state_offset are 0
 * (nothing of the backend is mapped at an offset of a device file).
 *
 * A QP file holds, each part page aligned:
 *
 *   0          header page: struct shm_qp_hdr (magic, qpn, qkey, owner,
 *              geometry, offsets)
 *   1 page     ctrl page (struct kfab_efa_qp_ctrl)
 *   2 pages    ring, rx_entries * 128 bytes (struct kfab_efa_rx_entry)
 *   then       bufs, rx_entries * mtu bytes
 *
 * so ctrl, ring and bufs have the kernel's format and efa_ring.c runs over
 * them unchanged. A qpn is taken cyclically from the device file's counter
 * (as the module's xa_alloc_cyclic does); the qkey is random, never 0.
 * Creating a QP beyond max_qps live ones on the device fails with -EBUSY
 * (counted from the directory: concurrent creators may overshoot a little).
 *
 * Owners: a QP file and an MR record carry their owner's pid, the start
 * time of that process (so a reused pid is not taken for it) and its
 * protection domain, a random 64-bit token per open device. An owner is
 * gone when kfab_shm_alive() says so. A forked child holds nothing: its
 * close of an inherited device only frees memory.
 *
 * Reaping: the files of a gone owner are removed by whoever meets them:
 * open sweeps the device directory, create_qp sweeps the QP files,
 * map_peer reaps the QP it was asked for, peer_gone and an RDMA that finds
 * the owner gone sweep the peer's device. The reaper sets the dead word of
 * the QP's ctrl page first (as the kernel does when a file is released),
 * so every other peer sees it through its ring. Reapers serialize on
 * flock(LOCK_EX) of the file and unlink its path only while it names the
 * inode they checked; owners never lock, they only unlink their own.
 *
 * MAP_PEER: -ENOENT for a gid that is not one of this backend's devices,
 * no such QP, one not finished or destroyed, or one whose owner is gone
 * (reaped then); -EACCES for another qkey or a file of another user;
 * -ENETDOWN when either device is Down.
 *
 * Wakeup: as the HFI backend, a named FIFO per QP. The owner opens it
 * O_RDWR | O_NONBLOCK as qp->wake_fd, a peer opens it O_RDWR at MAP_PEER
 * and NOTIFY writes one byte (a full pipe means a wakeup is pending). No
 * eventfd: another process cannot be handed one by path.
 *
 * Memory regions: nothing is pinned. reg_mr publishes the record mr<rkey>
 * (rkey random, unique on the device through the link) and sets the
 * region's word in dev->mr_state, a local array of max_mrs words, VALID;
 * dereg_mr removes the record and sets it FREE. This backend cannot see a
 * munmap: it never reports STALE, and an RDMA into a range that is no
 * longer mapped fails with -EFAULT instead of -ESTALE.
 *
 * Nothing being pinned, the owner must keep a region's memory mapped and
 * not reuse it for anything else until it deregistered it and no peer's
 * RDMA into it can still be running.
 *
 * RDMA: the initiator reads the record of the rkey on the peer's device
 * and checks, as the module does, that it belongs to the peer QP's owner
 * (pid and protection domain) and allows the direction (-EACCES), and that
 * the range lies inside it (-EINVAL); device_rdma of both devices must
 * offer the direction (-EOPNOTSUPP). It then copies once with
 * process_vm_readv()/process_vm_writev() on the owner's pid. Where ptrace
 * rules forbid that (Yama's /proc/sys/kernel/yama/ptrace_scope 1 allows it
 * into descendants only) it fails with -EPERM; with KFAB_SHM_PTRACER_ANY=1
 * the first reg_mr with a remote right calls prctl(PR_SET_PTRACER,
 * PR_SET_PTRACER_ANY) so that same-user peers may reach us. link_rate_mbps
 * of the peer's device paces it as the module does.
 *
 * As with one file of the kernel device, the operations of one device must
 * not run concurrently; sends into peers may.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "efa_shm.h"

static const uint8_t shm_gid_prefix[KFAB_EFA_GID_LEN - 1] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0x73, 0x68, 0x6d,
};

/* ------------------------------------------------------------------ */
/* the device file */

static void shm_gid(unsigned int device, uint8_t gid[KFAB_EFA_GID_LEN])
{
	memcpy(gid, shm_gid_prefix, sizeof(shm_gid_prefix));
	gid[KFAB_EFA_GID_LEN - 1] = (uint8_t)(device + 1);
}

/*
 * The device a gid names, if it is one of this backend's. Not bounded by
 * our own $KFAB_SHM_EFA_DEVICES: the peer's may differ, and a device that
 * nobody opened has no device file (ENOENT).
 */
static bool shm_gid_device(const uint8_t *gid, unsigned int *device)
{
	uint8_t last = gid[KFAB_EFA_GID_LEN - 1];

	if (memcmp(gid, shm_gid_prefix, sizeof(shm_gid_prefix)) || !last ||
	    last > SHM_MAX_DEVICES)
		return false;
	*device = last - 1U;
	return true;
}

static uint32_t shm_default_mtu(void)
{
	return kfab_page_size() > 8192 ? (uint32_t)kfab_page_size() : 8192;
}

static __u32 *shm_knob(struct kfab_efa_status *st, enum kfab_efa_knob knob)
{
	switch (knob) {
	case KFAB_EFA_KNOB_STATE:
		return &st->state;
	case KFAB_EFA_KNOB_DEVICE_RDMA:
		return &st->device_rdma;
	case KFAB_EFA_KNOB_RNR_RETRY:
		return &st->rnr_retry;
	case KFAB_EFA_KNOB_RNR_INJECT_PPM:
		return &st->rnr_inject_ppm;
	case KFAB_EFA_KNOB_REORDER_PPM:
		return &st->reorder_ppm;
	case KFAB_EFA_KNOB_LINK_RATE_MBPS:
		break;
	}
	return &st->link_rate_mbps;
}

static bool shm_knobs_default(const struct kfab_efa_status *st)
{
	for (int k = 0; k < KFAB_EFA_NKNOBS; k++) {
		enum kfab_efa_knob knob = (enum kfab_efa_knob)k;

		/* shm_knob() only points into it */
		if (kfab_shm_load32(shm_knob((struct kfab_efa_status *)st,
					     knob)) !=
		    kfab_efa_knob_default(knob))
			return false;
	}
	return true;
}

/* kfab_shm_page_type.init of the device file: the module's defaults. */
static int shm_devfile_init(void *page, const void *arg, unsigned int device)
{
	/* the knobs a test may start from elsewhere: in a fresh directory */
	static const struct {
		const char *env;
		enum kfab_efa_knob knob;
	} env[] = {
		{ "KFAB_SHM_EFA_RNR_INJECT_PPM", KFAB_EFA_KNOB_RNR_INJECT_PPM },
		{ "KFAB_SHM_EFA_REORDER_PPM", KFAB_EFA_KNOB_REORDER_PPM },
		{ "KFAB_SHM_EFA_RNR_RETRY", KFAB_EFA_KNOB_RNR_RETRY },
	};
	struct shm_devpage *p = page;

	(void)arg;
	for (int k = 0; k < KFAB_EFA_NKNOBS; k++)
		*shm_knob(&p->status, (enum kfab_efa_knob)k) =
			kfab_efa_knob_default((enum kfab_efa_knob)k);
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
		int ret = kfab_shm_env_u32(env[i].env,
					   kfab_efa_knob_default(env[i].knob),
					   0, kfab_efa_knob_max(env[i].knob),
					   false, shm_knob(&p->status,
							   env[i].knob));

		if (ret)
			return ret;
	}
	p->status.abi_version = KFAB_ABI_VERSION;
	shm_gid(device, p->status.gid);
	p->status.mtu = shm_default_mtu();
	atomic_store_explicit(&p->next_qpn, shm_random_key() % SHM_QPN_MAX,
			      memory_order_relaxed);
	return 0;
}

static const struct kfab_shm_page_type shm_devfile_type = {
	.kind = "efa",
	.name = "device",
	.magic = SHM_MAGIC_DEV,
	.version = SHM_VERSION,
	.magic_off = offsetof(struct shm_devpage, magic),
	.version_off = offsetof(struct shm_devpage, version),
	.n_off = offsetof(struct shm_devpage, status.device),
	.init = shm_devfile_init,
};

/*
 * Opens and maps the device file of @device: read-write, locked shared
 * and made if absent when @own (our device), else read-only as it is
 * (-ENOENT when there is none).
 */
static int shm_devfile_open(const struct shm_dev *sd, unsigned int device,
			    bool own, int *fdp, struct shm_devpage **pp)
{
	void *m;
	int ret = kfab_shm_page_open(&sd->base, &shm_devfile_type, device,
				     own ? KFAB_SHM_CREATE | KFAB_SHM_LOCK |
					   KFAB_SHM_WRITE : 0,
				     sd, fdp, &m);

	if (!ret)
		*pp = m;
	return ret;
}

/* kfab_shm_page_release()'s keep: a device file with a knob changed. */
static bool shm_devfile_kept(int fd, const void *page)
{
	const struct shm_devpage *p = page;

	(void)fd;
	return !shm_knobs_default(&p->status);
}

/*
 * Lets go of our device file: removes it when nobody else holds it and
 * every knob has its default, then the directory if empty.
 */
static void shm_devfile_release(struct shm_dev *sd)
{
	unsigned int device = sd->pub.device;
	bool gone;

	gone = kfab_shm_page_release(&sd->base, &shm_devfile_type, device,
				     sd->dev_fd, shm_devfile_kept, sd->page);
	munmap(sd->page, kfab_page_size());
	sd->page = NULL;
	sd->dev_fd = -1;
	if (gone)
		kfab_shm_rmdir(&sd->base, "efa", device);
}

/* ------------------------------------------------------------------ */
/* peers */

static void shm_peer_free(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer)
{
	struct shm_peer *sp = to_shm_peer(peer);

	kfab_efa_peer_release(dev, peer);
	kfab_efa_unmap_ring(&sp->pub.ring);
	if (sp->page)
		munmap(sp->page, kfab_page_size());
	if (sp->wake_fd >= 0)
		close(sp->wake_fd);
	free(sp);
}

static int shm_map_peer(struct kfab_efa_dev *dev,
			const struct kfab_efa_addr *addr,
			struct kfab_efa_peer **out)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_peer *sp;
	unsigned int device;
	int fd, ret;

	*out = NULL;
	if (shm_down(dev->status))
		return kfab_log_err(-ENETDOWN, "shm: efa%u is Down",
				    dev->device);
	if (!shm_gid_device(addr->gid, &device))
		return kfab_log_err(-ENOENT,
				    "shm: map peer QP %u: the gid names no device of the shm backend",
				    addr->qpn);
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return kfab_log_err(-ENOMEM, "shm: map peer");
	sp->wake_fd = -1;
	sp->device = device;

	/* the peer's device first: its knobs, and ENOENT when unused */
	ret = shm_devfile_open(sd, device, false, &fd, &sp->page);
	if (ret)
		goto err;
	close(fd);
	if (shm_down(&sp->page->status)) {
		ret = -ENETDOWN;
		goto err;
	}
	ret = efa_shm_peer_attach(sd, sp, addr->qpn, addr->qkey);
	if (ret)
		goto err;
	sp->pub.handle = kfab_shm_peer_handle(&sd->next_peer);
	sp->pub.addr = *addr;
	sp->pub.status = &sp->page->status;
	*out = &sp->pub;
	return 0;
err:
	shm_peer_free(dev, &sp->pub);
	return kfab_log_err(ret, "shm: map peer efa%u QP %u%s", device,
			    addr->qpn,
			    ret == -EACCES ? " (qkey differs, or another user's)" :
			    ret == -ENOENT ? " (none: destroyed, or its owner gone)" :
			    ret == -ENETDOWN ? " (its device is Down)" : "");
}

int efa_shm_wake(struct shm_peer *sp)
{
	int ret = kfab_shm_wake(sp->wake_fd);

	if (ret)
		return kfab_log_err(ret, "shm: notify efa%u QP %u",
				    sp->device, sp->pub.addr.qpn);
	return 0;
}

static int shm_notify(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer)
{
	int ret = kfab_shm_reach(kfab_efa_ring_dead(&peer->ring),
				 &dev->status->state, &peer->status->state,
				 KFAB_EFA_STATE_DOWN);

	return ret ? ret : efa_shm_wake(to_shm_peer(peer));
}

/* Destroyed (the dead word), or its owner gone: then its files reaped. */
bool efa_shm_peer_gone(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer)
{
	struct shm_peer *sp = to_shm_peer(peer);

	if (kfab_efa_ring_dead(&peer->ring))
		return true;
	if (shm_owner_alive(&sp->owner))
		return false;
	efa_shm_sweep(to_shm(dev), sp->device, true);
	return true;
}
/* ------------------------------------------------------------------ */
/* knobs and lifetime */

static int shm_get_status(struct kfab_efa_dev *dev, struct kfab_efa_status *st)
{
	const struct kfab_efa_status *s = dev->status;

	memset(st, 0, sizeof(*st));
	st->abi_version = s->abi_version;
	st->device = s->device;
	memcpy(st->gid, s->gid, KFAB_EFA_GID_LEN);
	st->state = kfab_shm_load32(&s->state);
	st->mtu = s->mtu;
	st->device_rdma = kfab_shm_load32(&s->device_rdma);
	st->rnr_retry = kfab_shm_load32(&s->rnr_retry);
	st->rnr_inject_ppm = kfab_shm_load32(&s->rnr_inject_ppm);
	st->reorder_ppm = kfab_shm_load32(&s->reorder_ppm);
	st->link_rate_mbps = kfab_shm_load32(&s->link_rate_mbps);
	return 0;
}

static int shm_set_knob(struct kfab_efa_dev *dev, enum kfab_efa_knob knob,
			uint32_t value)
{
	struct shm_dev *sd = to_shm(dev);
	int ret = kfab_efa_knob_check(dev, knob, value);

	if (ret)
		return ret;
	kfab_shm_store32(shm_knob(&sd->page->status, knob), value);
	kfab_log(KFAB_LOG_DEBUG, "shm: efa%u: %s %u", dev->device,
		 kfab_efa_knob_name(knob), value);
	return 0;
}

static void shm_close(struct kfab_efa_dev *dev)
{
	struct shm_dev *sd = to_shm(dev);
	/* a forked child: the files are its parent's */
	bool files = sd->owner.pid == (int32_t)getpid();

	while (dev->qps) {
		struct kfab_efa_qp *qp = dev->qps;

		kfab_efa_qp_unlink(dev, qp);
		efa_shm_qp_free(sd, to_shm_qp(qp), files);
	}
	for (uint32_t i = 0; sd->nmrs && i < dev->info.max_mrs; i++)
		if (sd->mrs[i].lkey)
			efa_shm_mr_release(sd, i, files);
	if (files) {
		shm_devfile_release(sd);
	} else {
		munmap(sd->page, kfab_page_size());
		close(sd->dev_fd);
	}
	free(sd->mrs);
	free(sd->mr_state);
	free(sd);
}

static const struct kfab_efa_ops shm_ops = {
	.name = "shm",
	.create_qp = efa_shm_create_qp,
	.destroy_qp = efa_shm_destroy_qp,
	.wake_drain = efa_shm_wake_drain,
	.map_peer = shm_map_peer,
	.peer_free = shm_peer_free,
	.notify = shm_notify,
	.reg_mr = efa_shm_reg_mr,
	.dereg_mr = efa_shm_dereg_mr,
	.rdma = efa_shm_rdma,
	.peer_gone = efa_shm_peer_gone,
	.close = shm_close,
	.get_status = shm_get_status,
	.set_knob = shm_set_knob,
};

int kfab_efa_shm_devices(uint32_t *n)
{
	return kfab_shm_env_u32("KFAB_SHM_EFA_DEVICES", 2, 1, SHM_MAX_DEVICES,
				false, n);
}

int kfab_efa_shm_open(unsigned int device, struct kfab_efa_dev **out)
{
	struct kfab_efa_device_info *info;
	struct shm_dev *sd;
	uint32_t ndevices;
	int ret;

	*out = NULL;
	ret = kfab_efa_shm_devices(&ndevices);
	if (ret)
		return ret;
	if (device >= ndevices)
		return kfab_log_err(-ENODEV,
				    "shm: no EFA device %u (0..%u; KFAB_SHM_EFA_DEVICES sets how many)",
				    device, ndevices - 1);
	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return kfab_log_err(-ENOMEM, "shm: open efa%u", device);
	ret = kfab_shm_base_init(&sd->base);
	if (ret) {
		free(sd);
		return ret;
	}
	sd->pub.ops = &shm_ops;
	sd->pub.device = device;
	shm_owner_self(&sd->owner);
	if (getrandom(&sd->owner.pd, sizeof(sd->owner.pd), 0) !=
	    (ssize_t)sizeof(sd->owner.pd))
		sd->owner.pd = (uint64_t)random() << 32 ^ (uint64_t)random() ^
			       (uint64_t)(uintptr_t)sd;
	sd->mr_state = calloc(SHM_MAX_MRS, sizeof(*sd->mr_state));
	sd->mrs = calloc(SHM_MAX_MRS, sizeof(*sd->mrs));
	if (!sd->mr_state || !sd->mrs) {
		ret = kfab_log_err(-ENOMEM, "shm: open efa%u", device);
		goto err;
	}
	ret = shm_devfile_open(sd, device, true, &sd->dev_fd, &sd->page);
	if (ret)
		goto err;
	efa_shm_sweep(sd, device, true);

	info = &sd->pub.info;
	info->abi_version = KFAB_ABI_VERSION;
	info->device = device;
	memcpy(info->gid, sd->page->status.gid, KFAB_EFA_GID_LEN);
	info->state = kfab_shm_load32(&sd->page->status.state);
	info->mtu = sd->page->status.mtu;
	info->max_qps = SHM_MAX_QPS;
	info->rx_entries = SHM_RX_ENTRIES;
	info->device_rdma = kfab_shm_load32(&sd->page->status.device_rdma);
	info->rnr_retry = kfab_shm_load32(&sd->page->status.rnr_retry);
	info->max_mrs = SHM_MAX_MRS;
	info->numa_node = -1;
	info->mr_state_size = SHM_MAX_MRS * sizeof(*sd->mr_state);
	sd->pub.status = &sd->page->status;
	sd->pub.mr_state = sd->mr_state;
	*out = &sd->pub;
	return 0;
err:
	free(sd->mrs);
	free(sd->mr_state);
	free(sd);
	return ret;
}
