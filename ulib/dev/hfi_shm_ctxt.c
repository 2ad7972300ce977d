// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the contexts of the shm HFI backend: their files (the layout of
 * hfi_backend_shm.c), the job keys, claiming and assigning a context,
 * releasing it, listing a unit's contexts and reaping those of dead owners.
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
#include "ring.h"

/* ------------------------------------------------------------------ */
/* keys */

static uint64_t fnv1a(uint64_t h, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t shm_job_hash(uint32_t uid, const uint8_t uuid[16])
{
	uint8_t u[4] = { (uint8_t)uid, (uint8_t)(uid >> 8),
			 (uint8_t)(uid >> 16), (uint8_t)(uid >> 24) };
	uint64_t h = 0xcbf29ce484222325ULL;

	h = fnv1a(h, "kfab-jkey", 9);
	h = fnv1a(h, u, sizeof(u));
	return fnv1a(h, uuid, 16);
}

static uint32_t shm_jkey(uint64_t hash)
{
	uint32_t k = (uint32_t)((hash ^ hash >> 16 ^ hash >> 32 ^ hash >> 48) &
				0xffff);

	return k ? k : 1;
}

/* ------------------------------------------------------------------ */
/* layout */

static void shm_layout(const struct shm_geom *g, struct shm_hdr *h)
{
	size_t page = kfab_page_size();
	struct kfab_ring_parts p;

	kfab_hfi_ring_parts(g->rhq_entries, g->eager_count, g->eager_size, &p);
	h->version = SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->rhq_entries = g->rhq_entries;
	h->rhq_entry_size = sizeof(struct kfab_hfi_rhq_entry);
	h->eager_count = g->eager_count;
	h->eager_size = g->eager_size;
	h->ctrl_offset = page;
	h->rhq_offset = 2 * page;
	h->eager_offset = h->rhq_offset + p.len[1];
	h->file_size = h->eager_offset + p.len[2];
}

/* A peer's header: geometry and offsets consistent with our own rules. */
bool hfi_shm_hdr_sane(const struct shm_hdr *h, off_t file_size)
{
	struct shm_geom g = {
		.rhq_entries = h->rhq_entries,
		.eager_count = h->eager_count,
		.eager_size = h->eager_size,
	};
	struct shm_hdr want;

	if (h->version != SHM_VERSION || h->hdr_size != sizeof(*h) ||
	    h->rhq_entry_size != sizeof(struct kfab_hfi_rhq_entry) ||
	    !h->rhq_entries || (h->rhq_entries & (h->rhq_entries - 1)) ||
	    h->rhq_entries > 16384 || !h->eager_count ||
	    (h->eager_count & (h->eager_count - 1)) ||
	    h->eager_count > 4096 || h->eager_size < kfab_page_size() ||
	    h->eager_size > 65536)
		return false;
	shm_layout(&g, &want);
	return h->ctrl_offset == want.ctrl_offset &&
	       h->rhq_offset == want.rhq_offset &&
	       h->eager_offset == want.eager_offset &&
	       h->file_size == want.file_size &&
	       (uint64_t)file_size >= want.file_size;
}

/*
 * @path exists but is not ours: reap it when its owner is gone. true when
 * the caller should try to create it again.
 */
static bool shm_reap_stale(const char *path, const char *wake_path)
{
	struct stat st;
	uint64_t magic = 0;
	bool stale = false;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT;	/* gone meanwhile: try again */
	if (flock(fd, LOCK_EX | LOCK_NB))
		goto out;		/* the owner lives */
	if (fstat(fd, &st))
		goto out;
	if (pread(fd, &magic, sizeof(magic), 0) != (ssize_t)sizeof(magic))
		magic = 0;
	/*
	 * Unlocked: the owner is gone, or a creator is between its O_EXCL
	 * open and its flock. A finished file (READY/DEAD) had its lock
	 * taken before it was finished, so it is stale; an unfinished one
	 * only once it is old.
	 */
	if (magic == SHM_MAGIC_READY || magic == SHM_MAGIC_DEAD)
		stale = true;
	else if (time(NULL) - st.st_ctime > SHM_STALE_SECS)
		stale = true;
	/*
	 * While we hold the lock nobody else unlinks this inode: only
	 * unlink the path if it still names it.
	 */
	if (stale && kfab_shm_names(path, &st)) {
		kfab_log(KFAB_LOG_INFO, "shm: reaping %s of a dead owner",
			 path);
		unlink(wake_path);
		unlink(path);
	}
out:
	close(fd);
	return stale;
}

void hfi_shm_release_ctxt(struct shm_dev *sd)
{
	struct kfab_hfi_dev *dev = &sd->pub;

	if (dev->ring.ctrl) {
		/* as the kernel does on release */
		atomic_store_explicit((_Atomic __u32 *)&dev->ring.ctrl->dead,
				      1, memory_order_release);
	}
	if (sd->hdr)
		atomic_store_explicit(&sd->hdr->magic, SHM_MAGIC_DEAD,
				      memory_order_release);
	if (sd->path[0]) {
		unlink(sd->wake_path);
		unlink(sd->path);
	}
	kfab_hfi_unmap_ring(&dev->ring);
	if (sd->unit_page)
		munmap((void *)sd->unit_page, kfab_page_size());
	if (sd->hdr)
		munmap(sd->hdr, kfab_page_size());
	sd->unit_page = NULL;
	dev->status = NULL;
	sd->hdr = NULL;
	if (dev->wake_fd >= 0)
		close(dev->wake_fd);
	dev->wake_fd = -1;
	if (sd->fd >= 0)
		close(sd->fd);		/* drops the flock */
	sd->fd = -1;
	if (sd->unit_fd >= 0)
		hfi_shm_unit_release(sd, dev->unit, sd->unit_fd);
	sd->unit_fd = -1;
	if (sd->path[0])
		kfab_shm_rmdir(&sd->base, "hfi", dev->unit);
	sd->path[0] = '\0';
	dev->assigned = 0;
}

/*
 * Create and lock the file of the lowest free context number, under the
 * base's lock (backend_shm.h): nobody removes the unit directory meanwhile.
 */
static int shm_claim(struct shm_dev *sd, uint32_t *ctxt)
{
	int ret, lock;

	lock = kfab_shm_base_lock(&sd->base, LOCK_SH);
	if (lock < 0)
		return lock;
	ret = kfab_shm_dirs_ensure(&sd->base, "hfi", sd->pub.unit);
	if (ret)
		goto out;
	ret = -EBUSY;
	for (uint32_t c = 0; c < sd->geom.nctxts; c++) {
		int fd;

		if (shm_ctxt_path(sd, sd->pub.unit, c, "", sd->path,
				  sizeof(sd->path)) ||
		    shm_ctxt_path(sd, sd->pub.unit, c, ".wake",
				  sd->wake_path, sizeof(sd->wake_path))) {
			ret = kfab_log_err(-ENAMETOOLONG, "shm: hfi%u: path",
					   sd->pub.unit);
			break;
		}
		fd = open(sd->path,
			  O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			  0600);
		if (fd >= 0) {
			/* at once: the lock says the owner lives */
			if (flock(fd, LOCK_EX)) {
				ret = kfab_log_err(-errno, "shm: flock %s",
						   sd->path);
				unlink(sd->path);
				close(fd);
				break;
			}
			sd->fd = fd;
			*ctxt = c;
			ret = 0;
			goto out;
		}
		if (errno != EEXIST) {
			ret = kfab_log_err(-errno, "shm: create %s", sd->path);
			break;
		}
		if (shm_reap_stale(sd->path, sd->wake_path))
			c--;	/* the same number once more */
	}
	if (ret == -EBUSY)
		kfab_log(KFAB_LOG_WARN, "shm: hfi%u: all %u contexts in use",
			 sd->pub.unit, sd->geom.nctxts);
	sd->path[0] = '\0';
out:
	close(lock);
	return ret;
}

int hfi_shm_assign(struct kfab_hfi_dev *dev, const uint8_t uuid[16],
		      uint16_t pkey, uint8_t sl)
{
	struct shm_dev *sd = to_shm(dev);
	struct kfab_hfi_ctxt_info *info = &dev->info;
	size_t page = kfab_page_size();
	struct shm_unit *unit;
	struct shm_hdr *h;
	uint32_t ctxt = 0;
	int ret;

	if (dev->assigned)
		return kfab_log_err(-EINVAL, "hfi%u: context already assigned",
				    dev->unit);
	if (!(pkey & 0x7fff) || sl > KFAB_HFI_SL_MAX)
		return kfab_log_err(-EINVAL, "hfi%u: bad pkey %#x or sl %u",
				    dev->unit, pkey, sl);
	ret = shm_claim(sd, &ctxt);
	if (ret)
		return ret;

	/* zero-filled, as the kernel's queues are */
	h = &(struct shm_hdr){ 0 };
	shm_layout(&sd->geom, h);
	if (ftruncate(sd->fd, (off_t)h->file_size)) {
		ret = kfab_log_err(-errno, "shm: size %s", sd->path);
		goto err;
	}
	sd->hdr = kfab_map(sd->fd, 0, page, PROT_READ | PROT_WRITE);
	if (!sd->hdr) {
		ret = kfab_log_err(-errno, "shm: mmap %s", sd->path);
		goto err;
	}
	ret = hfi_shm_unit_open(sd, dev->unit, KFAB_SHM_CREATE | KFAB_SHM_LOCK,
			    &sd->unit_fd, &unit);
	if (ret)
		goto err;
	sd->unit_page = unit;
	dev->status = &unit->status;
	if (shm_down(dev->status)) {
		ret = kfab_log_err(-ENETDOWN, "shm: hfi%u is Down", dev->unit);
		goto err;
	}
	memcpy(sd->hdr, h, sizeof(*h));
	h = sd->hdr;
	h->unit = dev->unit;
	h->lid = dev->version.lid;
	h->ctxt = ctxt;
	h->uid = (uint32_t)geteuid();
	h->job_hash = shm_job_hash(h->uid, uuid);
	h->jkey = shm_jkey(h->job_hash);
	h->pkey = pkey;
	h->sl = sl;
	h->pid = (int32_t)getpid();
	h->start = kfab_shm_start_time(h->pid);

	/* the wakeup FIFO, before anyone may map us */
	ret = kfab_shm_fifo_make(sd->wake_path);
	if (ret < 0)
		goto err;
	dev->wake_fd = ret;
	ret = kfab_hfi_map_ring(sd->fd, h->ctrl_offset, h->rhq_offset,
				h->eager_offset, h->rhq_entries,
				h->eager_count, h->eager_size, &dev->ring);
	if (ret)
		goto err;

	/* status_offset 0: the start of the unit file */
	*info = (struct kfab_hfi_ctxt_info){
		.unit = dev->unit, .lid = dev->version.lid, .ctxt = ctxt,
		.jkey = h->jkey, .pkey = pkey, .sl = sl,
		.rhq_entries = h->rhq_entries,
		.rhq_entry_size = h->rhq_entry_size,
		.eager_count = h->eager_count, .eager_size = h->eager_size,
		.ctrl_offset = h->ctrl_offset, .rhq_offset = h->rhq_offset,
		.eager_offset = h->eager_offset,
	};
	memcpy(info->uuid, uuid, 16);
	dev->assigned = 1;

	/* publish: pairs with the acquire in shm_map_peer() */
	atomic_store_explicit(&h->magic, SHM_MAGIC_READY, memory_order_release);
	kfab_log(KFAB_LOG_DEBUG, "shm: hfi%u ctxt %u assigned, jkey %#x",
		 dev->unit, ctxt, h->jkey);
	return 0;
err:
	hfi_shm_release_ctxt(sd);
	return ret;
}

/* Pages spanned by [addr, addr + len), len not 0. */
static uint64_t shm_span_pages(uint64_t addr, uint64_t len)
{
	uint64_t page = kfab_page_size();

	return (addr + len - 1) / page - addr / page + 1;
}

/*
 * Context @ctxt of the unit into @d: 1 when it is live, 0 when there is
 * none, it is not finished, or its owner died (the lock is free).
 */
static int shm_read_ctxt(struct shm_dev *sd, uint32_t ctxt,
			 struct kfab_hfi_ctxt_desc *d)
{
	size_t page = kfab_page_size();
	struct kfab_hfi_ctrl *ctrl = NULL;
	struct shm_hdr *h = NULL;
	char path[PATH_MAX];
	struct stat st;
	int fd, live = 0;

	if (shm_ctxt_path(sd, sd->pub.unit, ctxt, "", path, sizeof(path)))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	/* a live owner holds LOCK_EX */
	if (!flock(fd, LOCK_SH | LOCK_NB))
		goto out;
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    (size_t)st.st_size < page)
		goto out;
	h = kfab_map(fd, 0, page, PROT_READ);
	/* acquire: pairs with the release of READY in hfi_shm_assign() */
	if (!h || atomic_load_explicit(&h->magic, memory_order_acquire) !=
		  SHM_MAGIC_READY || !hfi_shm_hdr_sane(h, st.st_size) ||
	    h->ctxt != ctxt)
		goto out;
	ctrl = kfab_map(fd, h->ctrl_offset, page, PROT_READ);
	if (!ctrl)
		goto out;

	memset(d, 0, sizeof(*d));
	d->unit = sd->pub.unit;
	d->ctxt = ctxt;
	d->jkey = h->jkey;
	d->pkey = h->pkey;
	d->sl = h->sl;
	d->pid = h->pid;
	/* a fork()ed child may hold the file after the owner exited */
	if (!kfab_shm_alive(h->pid, h->start)) {
		d->pid = 0;
		d->flags |= KFAB_HFI_CTXT_OWNER_GONE;
	}
	if (kfab_shm_load32(&ctrl->armed))
		d->flags |= KFAB_HFI_CTXT_ARMED;
	d->rhq_entries = h->rhq_entries;
	d->eager_count = h->eager_count;
	d->eager_size = h->eager_size;
	for (uint32_t i = 0; i < SHM_MAX_TIDS; i++) {
		uint64_t addr, len;

		if (hfi_shm_tid_lookup(h, h->tids[i].handle, &addr, &len))
			continue;
		d->ntids++;
		d->tid_pages += shm_span_pages(addr, len);
	}
	d->rhq_full_drops = shm_load64(&ctrl->rhq_full_drops);
	d->eager_full_drops = shm_load64(&ctrl->eager_full_drops);
	d->injected_drops = shm_load64(&ctrl->injected_drops);
	live = 1;
out:
	if (ctrl)
		munmap(ctrl, page);
	if (h)
		munmap(h, page);
	close(fd);
	return live;
}

int hfi_shm_list_ctxts(struct kfab_hfi_dev *dev,
			  struct kfab_hfi_ctxt_desc *descs, uint32_t max,
			  uint32_t *total)
{
	struct kfab_hfi_ctxt_desc d;
	uint32_t n = 0;

	for (uint32_t c = 0; c < SHM_MAX_CTXTS; c++) {
		if (!shm_read_ctxt(to_shm(dev), c, &d))
			continue;
		if (n < max)
			descs[n] = d;
		n++;
	}
	*total = n;
	return (int)(n < max ? n : max);
}
