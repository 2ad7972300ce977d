// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the shm HFI backend, for hosts without the kfab modules.
 *
 * A unit N is a directory <base>/hfi<N>/ where <base> is $KFAB_SHM_DIR or
 * /dev/shm/kfab-<uid> (mode 0700, refused unless owned by us and closed to
 * others). Its LID is N + 1, as with the kernel. The directory holds:
 *
 *   unit          the unit file, one page: struct kfab_hfi_status (the
 *                 kernel's per-unit status page) then struct shm_unit's
 *                 own words;
 *   ctxt<C>       context C, created O_EXCL with mode 0600: the context
 *                 number is claimed by the creation, and file ownership is
 *                 the boundary between users (DESIGN.md: only the same
 *                 user can map it);
 *   ctxt<C>.wake  its wakeup FIFO.
 *
 * A context file holds, each part page aligned:
 *
 *   0          header page: struct shm_hdr (magic, keys, owner pid,
 *              geometry, offsets) and the context's TID table
 *   1 page     ctrl page (struct kfab_hfi_ctrl)
 *   2 pages    rhq, rhq_entries * 128 bytes
 *   then       eager ring, eager_count * eager_size bytes
 *
 * so ctrl, rhq and eager have the kernel's format and the same ring code
 * runs over them. The offsets are returned in ctxt_info like the kernel's
 * mmap cookies; status_offset is 0, the start of the unit file.
 *
 * Unit knobs: the first assign on a unit, or kfab_hfi_set_knob(), makes
 * the unit file (complete: a finished temporary file is link()ed into
 * place) with state Active, drop_ppm $KFAB_SHM_DROP_PPM and link_rate_mbps
 * $KFAB_SHM_LINK_RATE_MBPS (each 0..1000000, default 0, read only then).
 * dev->status of an owner and peer->status of a peer map its first page
 * read-only, so every sender sees a change at once, as a sysfs write on
 * the kernel side. Every owner holds flock(LOCK_SH) on it while its
 * context lives; the last one to let go (LOCK_EX succeeds) removes it,
 * unless kfab_hfi_set_knob() marked it kept (kfab_hfi_reset_knobs()
 * restores the defaults and drops the mark). Openers of the unit file or
 * of a context number and the removers of the unit file and directory
 * order themselves on the lock of the base directory (backend_shm.h), so
 * processes assigning and closing together never fail. On a Down unit assign, map_peer,
 * notify and sdma fail with -ENETDOWN, as on the kernel's.
 *
 * jkey: derived in userspace from (uid, uuid): a 64-bit FNV-1a hash of the
 * two (kept in the header as job_hash) folded into 1..0xffff. MAP_PEER
 * requires equal jkey, job_hash and pkey (low 15 bits): EACCES otherwise,
 * ENOENT when there is no such context. This is a job boundary between
 * cooperating processes of one user, not a security boundary: a process of
 * the same user can read the files anyway.
 *
 * Lifetime: the owner holds flock(LOCK_EX) on its file while the context
 * lives (the lock goes with the process). Closing the device marks ctrl
 * dead, unlinks the files, lets go of the unit file and removes the unit
 * directory when it is empty. The files of an owner that died are reaped
 * by the next process that finds the context number taken but not
 * locked; kfab_hfi_list_ctxts() skips them. Whether a peer's owner still
 * runs is what kfab_shm_alive() says of the pid and start time its header
 * records, not the lock: a fork()ed child may hold the lock of an owner
 * that exited.
 *
 * Wakeup: a per-context named FIFO <ctxt file>.wake. The owner opens it
 * O_RDWR | O_NONBLOCK and polls it (dev->wake_fd); a peer opens it O_RDWR
 * too, at MAP_PEER, and NOTIFY writes one byte (a full pipe means a wakeup
 * is already pending: fine). Opening read-write on both sides (Linux
 * semantics for FIFOs) means a write never raises SIGPIPE when the owner is
 * gone and the owner's poll never sees POLLHUP. The choice over an eventfd:
 * another process cannot be handed an eventfd without a socket connection
 * or ptrace rights; a FIFO is reachable by path, with the file's rights.
 *
 * TID and SDMA: TID_UPDATE only records (address, length) in the header's
 * TID table (nothing is pinned; the memory must stay mapped until
 * TID_FREE). SDMA looks the handle up in the peer's table and writes with
 * process_vm_writev() into the owner's pid. Where that is not permitted
 * (ptrace rules, Yama) it fails with -EPERM and the caller falls back to
 * eager packets. With KFAB_SHM_PTRACER_ANY=1 the first TID_UPDATE calls
 * prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) so that same-user peers may
 * write into us under Yama ptrace_scope 1.
 *
 * Geometry: $KFAB_SHM_RHQ_ENTRIES (power of two, 64..16384, default 2048),
 * $KFAB_SHM_EAGER_COUNT (power of two, 16..4096, default 256),
 * $KFAB_SHM_EAGER_SIZE (power of two, page size..65536, default 8192),
 * $KFAB_SHM_CTXTS (contexts per unit, 1..160, default 16): the kernel
 * module's parameters and defaults.
 *
 * As with one file of the kernel device, the operations of one device must
 * not run concurrently; kfab_hfi_ring_send() on peers may.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "hfi_shm.h"

/* ------------------------------------------------------------------ */
/* environment */

static int shm_geom_get(struct shm_geom *g)
{
	uint32_t page = (uint32_t)kfab_page_size();
	int ret;

	ret = kfab_shm_env_u32("KFAB_SHM_RHQ_ENTRIES", 2048, 64, 16384, true,
			       &g->rhq_entries);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_EAGER_COUNT", 256, 16, 4096,
				       true, &g->eager_count);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_EAGER_SIZE",
				       page > 8192 ? page : 8192, page, 65536,
				       true, &g->eager_size);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_CTXTS", 16, 1, SHM_MAX_CTXTS,
				       false, &g->nctxts);
	return ret;
}

/* ------------------------------------------------------------------ */
/* the unit file */

/* kfab_shm_page_type.init of the unit file: the defaults of @arg's. */
static int shm_unit_init(void *page, const void *arg, unsigned int unit)
{
	const struct shm_dev *sd = arg;
	struct shm_unit *u = page;

	u->status.abi_version = KFAB_ABI_VERSION;
	u->status.lid = unit + 1;
	u->status.state = KFAB_HFI_STATE_ACTIVE;
	u->status.drop_ppm = sd->init_drop_ppm;
	u->status.link_rate_mbps = sd->init_link_rate_mbps;
	return 0;
}

static const struct kfab_shm_page_type shm_unit_type = {
	.kind = "hfi",
	.name = "unit",
	.magic = SHM_MAGIC_UNIT,
	.version = SHM_VERSION,
	.magic_off = offsetof(struct shm_unit, magic),
	.version_off = offsetof(struct shm_unit, version),
	.n_off = offsetof(struct shm_unit, status.unit),
	.init = shm_unit_init,
};

/*
 * Opens and maps the unit file of @unit (KFAB_SHM_* @flags): the open
 * file in *@fdp, the mapping in *@up. -ENOENT without KFAB_SHM_CREATE
 * when it does not exist.
 */
int hfi_shm_unit_open(const struct shm_dev *sd, unsigned int unit,
		      int flags, int *fdp, struct shm_unit **up)
{
	void *p;
	int ret = kfab_shm_page_open(&sd->base, &shm_unit_type, unit, flags,
				     sd, fdp, &p);

	if (!ret)
		*up = p;
	return ret;
}

/* kfab_shm_page_release()'s keep: a unit file kfab_hfi_set_knob() marked. */
static bool shm_unit_kept(int fd, const void *arg)
{
	uint32_t kept = 0;

	(void)arg;
	if (pread(fd, &kept, sizeof(kept), offsetof(struct shm_unit, kept)) !=
	    (ssize_t)sizeof(kept))
		return true;	/* cannot tell: leave it */
	return kept;
}

/*
 * Closes @fd, opened with KFAB_SHM_LOCK, after removing the unit file when
 * it is not kept and nobody else holds it.
 */
void hfi_shm_unit_release(const struct shm_dev *sd, unsigned int unit,
			     int fd)
{
	kfab_shm_page_release(&sd->base, &shm_unit_type, unit, fd,
			      shm_unit_kept, NULL);
}

/* ------------------------------------------------------------------ */
/* ops */

static void shm_peer_free(struct kfab_hfi_dev *dev,
			  struct kfab_hfi_peer *peer)
{
	struct shm_peer *sp = to_shm_peer(peer);

	(void)dev;
	kfab_hfi_unmap_ring(&sp->pub.ring);
	if (sp->hdr)
		munmap((void *)sp->hdr, kfab_page_size());
	if (sp->unit_page)
		munmap((void *)sp->unit_page, kfab_page_size());
	if (sp->wake_fd >= 0)
		close(sp->wake_fd);
	free(sp);
}

static int shm_map_peer(struct kfab_hfi_dev *dev, uint32_t lid, uint32_t ctxt,
			struct kfab_hfi_peer **out)
{
	struct shm_dev *sd = to_shm(dev);
	const struct shm_hdr *own = sd->hdr;
	char path[PATH_MAX], wake[PATH_MAX];
	struct shm_unit *unit;
	struct shm_peer *sp;
	const struct shm_hdr *h;
	struct stat st;
	int fd, ret;

	*out = NULL;
	if (!dev->assigned)
		return kfab_log_err(-EINVAL, "hfi%u: no context assigned",
				    dev->unit);
	if (!lid || lid > SHM_MAX_UNITS ||
	    shm_ctxt_path(sd, lid - 1, ctxt, "", path, sizeof(path)) ||
	    shm_ctxt_path(sd, lid - 1, ctxt, ".wake", wake, sizeof(wake)))
		return kfab_log_err(-ENOENT, "shm: map peer lid %u ctxt %u",
				    lid, ctxt);
	if (shm_down(dev->status))
		return kfab_log_err(-ENETDOWN, "shm: hfi%u is Down", dev->unit);
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return kfab_log_err(-ENOMEM, "shm: map peer");
	sp->wake_fd = -1;

	/* the peer's unit first: its knobs, and ENOENT when unused */
	ret = hfi_shm_unit_open(sd, lid - 1, 0, &fd, &unit);
	if (ret)
		goto err;
	close(fd);
	sp->unit_page = unit;
	if (shm_down(&unit->status)) {
		ret = -ENETDOWN;
		goto err;
	}

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		ret = -errno;
		goto err;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		goto err_fd;
	}
	if (st.st_uid != geteuid()) {
		ret = -EACCES;
		goto err_fd;
	}
	if ((size_t)st.st_size < kfab_page_size()) {
		ret = -ENOENT;		/* being created */
		goto err_fd;
	}
	sp->hdr = h = kfab_map(fd, 0, kfab_page_size(), PROT_READ);
	if (!h) {
		ret = -errno;
		goto err_fd;
	}
	/* acquire: pairs with the release of READY in hfi_shm_assign() */
	if (atomic_load_explicit(&((struct shm_hdr *)h)->magic,
				 memory_order_acquire) != SHM_MAGIC_READY) {
		ret = -ENOENT;		/* not finished, or released */
		goto err_fd;
	}
	if (!hfi_shm_hdr_sane(h, st.st_size)) {
		ret = -EPROTO;
		goto err_fd;
	}
	if (!kfab_shm_alive(h->pid, h->start)) {
		ret = -ENOENT;		/* died without releasing it */
		goto err_fd;
	}
	if (h->jkey != own->jkey || h->job_hash != own->job_hash ||
	    (h->pkey & 0x7fff) != (own->pkey & 0x7fff)) {
		ret = -EACCES;
		goto err_fd;
	}
	ret = kfab_hfi_map_ring(fd, h->ctrl_offset, h->rhq_offset,
				h->eager_offset, h->rhq_entries,
				h->eager_count, h->eager_size, &sp->pub.ring);
	if (ret)
		goto err_fd;
	close(fd);
	fd = -1;
	sp->wake_fd = open(wake, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (sp->wake_fd < 0) {
		ret = errno == ENOENT ? -ENOENT : -errno;
		goto err;
	}
	sp->pub.handle = kfab_shm_peer_handle(&sd->next_peer);
	sp->pub.lid = lid;
	sp->pub.ctxt = ctxt;
	sp->pub.status = &sp->unit_page->status;
	*out = &sp->pub;
	return 0;
err_fd:
	close(fd);
err:
	shm_peer_free(dev, &sp->pub);
	return kfab_log_err(ret, "shm: map peer lid %u ctxt %u", lid, ctxt);
}

int hfi_shm_notify(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	int ret = kfab_shm_reach(kfab_hfi_ring_dead(&peer->ring),
				 &dev->status->state, &peer->status->state,
				 KFAB_HFI_STATE_DOWN);

	if (ret)
		return ret;
	ret = kfab_shm_wake(to_shm_peer(peer)->wake_fd);
	if (ret)
		return kfab_log_err(ret, "shm: notify lid %u ctxt %u",
				    peer->lid, peer->ctxt);
	return 0;
}

static int shm_set_eventfd(struct kfab_hfi_dev *dev, int efd)
{
	(void)efd;
	return kfab_log_err(-EOPNOTSUPP,
			    "hfi%u: shm backend: poll dev->wake_fd instead of an eventfd",
			    dev->unit);
}

/* Released (the dead word), or died without releasing its context. */
static bool shm_peer_gone(struct kfab_hfi_dev *dev,
			  struct kfab_hfi_peer *peer)
{
	const struct shm_hdr *h = to_shm_peer(peer)->hdr;

	(void)dev;
	return kfab_hfi_ring_dead(&peer->ring) ||
	       !kfab_shm_alive(h->pid, h->start);
}

static void shm_wake_drain(struct kfab_hfi_dev *dev)
{
	if (dev->wake_fd >= 0)
		kfab_shm_wake_drain(dev->wake_fd);
}

static void shm_status_read(const struct shm_unit *u,
			    struct kfab_hfi_status *st)
{
	memset(st, 0, sizeof(*st));
	st->abi_version = u->status.abi_version;
	st->unit = u->status.unit;
	st->lid = u->status.lid;
	st->state = kfab_shm_load32(&u->status.state);
	st->drop_ppm = kfab_shm_load32(&u->status.drop_ppm);
	st->link_rate_mbps = kfab_shm_load32(&u->status.link_rate_mbps);
}

static int shm_get_status(struct kfab_hfi_dev *dev, struct kfab_hfi_status *st)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_unit *u;
	int fd, ret;

	if (sd->unit_page) {
		shm_status_read(sd->unit_page, st);
		return 0;
	}
	ret = hfi_shm_unit_open(sd, dev->unit, 0, &fd, &u);
	if (ret == -ENOENT) {
		memset(st, 0, sizeof(*st));
		st->abi_version = KFAB_ABI_VERSION;
		st->unit = dev->unit;
		st->lid = dev->version.lid;
		st->state = KFAB_HFI_STATE_ACTIVE;
		st->drop_ppm = sd->init_drop_ppm;
		st->link_rate_mbps = sd->init_link_rate_mbps;
		return 1;
	}
	if (ret)
		return ret;
	close(fd);
	shm_status_read(u, st);
	munmap(u, kfab_page_size());
	return 0;
}

static uint32_t *shm_knob(struct shm_unit *u, enum kfab_hfi_knob knob)
{
	switch (knob) {
	case KFAB_HFI_KNOB_STATE:
		return &u->status.state;
	case KFAB_HFI_KNOB_DROP_PPM:
		return &u->status.drop_ppm;
	case KFAB_HFI_KNOB_LINK_RATE_MBPS:
		break;
	}
	return &u->status.link_rate_mbps;
}

static int shm_set_knob(struct kfab_hfi_dev *dev, enum kfab_hfi_knob knob,
			uint32_t value)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_unit *u;
	int fd, ret;

	ret = kfab_hfi_knob_check(dev, knob, value);
	if (ret)
		return ret;
	ret = hfi_shm_unit_open(sd, dev->unit,
			    KFAB_SHM_CREATE | KFAB_SHM_LOCK | KFAB_SHM_WRITE,
			    &fd, &u);
	if (ret)
		return ret;
	kfab_shm_store32(shm_knob(u, knob), value);
	atomic_store_explicit(&u->kept, 1, memory_order_relaxed);
	munmap(u, kfab_page_size());
	close(fd);
	kfab_log(KFAB_LOG_DEBUG, "shm: hfi%u: %s %u", dev->unit,
		 kfab_hfi_knob_name(knob), value);
	return 0;
}

static int shm_reset_knobs(struct kfab_hfi_dev *dev)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_unit *u;
	int fd, ret;

	ret = hfi_shm_unit_open(sd, dev->unit, KFAB_SHM_LOCK | KFAB_SHM_WRITE, &fd,
			    &u);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	for (int k = 0; k < KFAB_HFI_NKNOBS; k++)
		kfab_shm_store32(shm_knob(u, (enum kfab_hfi_knob)k),
				 kfab_hfi_knob_default((enum kfab_hfi_knob)k));
	atomic_store_explicit(&u->kept, 0, memory_order_relaxed);
	munmap(u, kfab_page_size());
	hfi_shm_unit_release(sd, dev->unit, fd);
	kfab_shm_rmdir(&sd->base, "hfi", dev->unit);
	return 0;
}

static void shm_close(struct kfab_hfi_dev *dev)
{
	struct shm_dev *sd = to_shm(dev);

	hfi_shm_release_ctxt(sd);
	free(sd);
}

static const struct kfab_hfi_ops shm_ops = {
	.name = "shm",
	.assign = hfi_shm_assign,
	.map_peer = shm_map_peer,
	.peer_free = shm_peer_free,
	.notify = hfi_shm_notify,
	.set_eventfd = shm_set_eventfd,
	.tid_update = hfi_shm_tid_update,
	.tid_free = hfi_shm_tid_free,
	.sdma = hfi_shm_sdma,
	.wake_drain = shm_wake_drain,
	.peer_gone = shm_peer_gone,
	.close = shm_close,
	.list_ctxts = hfi_shm_list_ctxts,
	.get_status = shm_get_status,
	.set_knob = shm_set_knob,
	.reset_knobs = shm_reset_knobs,
};

int kfab_hfi_shm_open(unsigned int unit, struct kfab_hfi_dev **out)
{
	struct kfab_hfi_status st;
	struct shm_dev *sd;
	int ret;

	*out = NULL;
	if (unit >= SHM_MAX_UNITS)
		return kfab_log_err(-ENODEV, "shm: no unit %u (0..%d)", unit,
				    SHM_MAX_UNITS - 1);
	sd = calloc(1, sizeof(*sd));
	if (!sd)
		return kfab_log_err(-ENOMEM, "shm: open");
	ret = shm_geom_get(&sd->geom);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_DROP_PPM", 0, 0,
				       KFAB_HFI_KNOB_MAX, false,
				       &sd->init_drop_ppm);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_LINK_RATE_MBPS", 0, 0,
				       KFAB_HFI_KNOB_MAX, false,
				       &sd->init_link_rate_mbps);
	if (!ret)
		ret = kfab_shm_base_init(&sd->base);
	if (ret) {
		free(sd);
		return ret;
	}
	sd->fd = -1;
	sd->unit_fd = -1;
	sd->pub.ops = &shm_ops;
	sd->pub.unit = unit;
	sd->pub.wake_fd = -1;
	sd->pub.version.abi_version = KFAB_ABI_VERSION;
	sd->pub.version.unit = unit;
	sd->pub.version.lid = unit + 1;
	sd->pub.version.state = KFAB_HFI_STATE_ACTIVE;
	sd->pub.version.nctxts = sd->geom.nctxts;
	sd->pub.version.numa_node = -1;
	if (shm_get_status(&sd->pub, &st) >= 0)
		sd->pub.version.state = st.state;
	*out = &sd->pub;
	return 0;
}
