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
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "hfi_dev.h"
#include "backend_shm.h"

#define SHM_MAGIC_READY	0x314d48534241464bULL	/* "KFABSHM1" */
#define SHM_MAGIC_DEAD	0x444145444241464bULL	/* "KFABDEAD" */
#define SHM_MAGIC_UNIT	0x54494e554241464bULL	/* "KFABUNIT" */
#define SHM_VERSION	2
#define SHM_MAX_UNITS	8
#define SHM_MAX_CTXTS	160
#define SHM_MAX_TIDS	112
#define SHM_STALE_SECS	10	/* an unlocked, never-finished file is stale */

struct shm_tid {
	_Atomic uint32_t handle;	/* 0: free; written last (release) */
	uint32_t pad;
	_Atomic uint64_t addr;
	_Atomic uint64_t len;
	uint64_t reserved;
};

struct shm_hdr {
	_Atomic uint64_t magic;		/* READY stored last (release) */
	uint32_t version;
	uint32_t hdr_size;
	uint32_t unit;
	uint32_t lid;
	uint32_t ctxt;
	uint32_t jkey;
	uint64_t job_hash;
	uint16_t pkey;
	uint8_t sl;
	uint8_t pad0;
	int32_t pid;			/* owner, for process_vm_writev */
	uint32_t uid;
	uint32_t rhq_entries;
	uint32_t rhq_entry_size;
	uint32_t eager_count;
	uint32_t eager_size;
	uint32_t tid_gen;
	uint64_t ctrl_offset;
	uint64_t rhq_offset;
	uint64_t eager_offset;
	uint64_t file_size;
	/* kfab_shm_start_time() of pid; 0 (unknown) in older files */
	uint64_t start;
	uint64_t reserved[7];
	struct shm_tid tids[SHM_MAX_TIDS];
};

_Static_assert(sizeof(struct shm_hdr) <= 4096, "header fits a page");

/* The unit file's page. */
struct shm_unit {
	struct kfab_hfi_status status;	/* first: what senders map */
	_Atomic uint64_t magic;		/* SHM_MAGIC_UNIT */
	uint32_t version;
	_Atomic uint32_t kept;		/* set by kfab_hfi_set_knob() */
};

struct shm_geom {
	uint32_t rhq_entries;
	uint32_t eager_count;
	uint32_t eager_size;
	uint32_t nctxts;
};

struct shm_dev {
	struct kfab_hfi_dev pub;
	struct kfab_shm_base base;
	char path[PATH_MAX];		/* our context file */
	char wake_path[PATH_MAX];
	int fd;				/* context file, holds the flock */
	struct shm_hdr *hdr;
	int unit_fd;			/* unit file, holds LOCK_SH */
	const struct shm_unit *unit_page;	/* its mapping, read-only */
	struct shm_geom geom;
	uint32_t init_drop_ppm;		/* for a new unit file */
	uint32_t init_link_rate_mbps;
	uint32_t next_peer;
	bool ptracer_done;
};

struct shm_peer {
	struct kfab_hfi_peer pub;
	const struct shm_hdr *hdr;
	const struct shm_unit *unit_page;	/* of the peer's unit */
	int wake_fd;
};

static inline struct shm_dev *to_shm(struct kfab_hfi_dev *dev)
{
	return (struct shm_dev *)dev;
}

static inline struct shm_peer *to_shm_peer(struct kfab_hfi_peer *peer)
{
	return (struct shm_peer *)peer;
}

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
/* directories */

static int shm_ctxt_path(const struct shm_dev *sd, unsigned int unit,
			 uint32_t ctxt, const char *suffix, char *buf,
			 size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "ctxt%u%s", ctxt, suffix);
	return kfab_shm_path(&sd->base, "hfi", unit, name, buf, len);
}

/* ------------------------------------------------------------------ */
/* layout */

static void shm_layout(const struct shm_geom *g, struct shm_hdr *h)
{
	size_t page = kfab_page_size();

	h->rhq_entries = g->rhq_entries;
	h->rhq_entry_size = sizeof(struct kfab_hfi_rhq_entry);
	h->eager_count = g->eager_count;
	h->eager_size = g->eager_size;
	h->ctrl_offset = page;
	h->rhq_offset = 2 * page;
	h->eager_offset = h->rhq_offset + kfab_hfi_rhq_bytes(g->rhq_entries);
	h->file_size = h->eager_offset +
		       kfab_hfi_eager_bytes(g->eager_count, g->eager_size);
}

/* A peer's header: geometry and offsets consistent with our own rules. */
static bool shm_hdr_sane(const struct shm_hdr *h, off_t file_size)
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

/* ------------------------------------------------------------------ */
/* the unit file */

static __u64 shm_load64(const __u64 *p)
{
	return atomic_load_explicit((const _Atomic __u64 *)p,
				    memory_order_relaxed);
}

static bool shm_down(const struct kfab_hfi_status *st)
{
	return kfab_shm_load32(&st->state) == KFAB_HFI_STATE_DOWN;
}

/*
 * Makes the unit file at @path, initialised, in one step. -EEXIST when
 * another process was first, -EAGAIN when the directory went meanwhile.
 */
static int shm_unit_create(const void *arg, unsigned int unit,
			   const char *path)
{
	const struct shm_dev *sd = arg;
	size_t page = kfab_page_size();
	char tmp[PATH_MAX];
	struct shm_unit *u;
	int fd, ret;

	ret = kfab_shm_dirs_ensure(&sd->base, "hfi", unit);
	if (ret)
		return ret;
	fd = kfab_shm_tmp_create(&sd->base, "hfi", unit, "unit", (off_t)page,
				 tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	u = kfab_map(fd, 0, page, PROT_READ | PROT_WRITE);
	if (!u) {
		ret = kfab_log_err(-errno, "shm: mmap %s", tmp);
		goto out;
	}
	u->status.abi_version = KFAB_ABI_VERSION;
	u->status.unit = unit;
	u->status.lid = unit + 1;
	u->status.state = KFAB_HFI_STATE_ACTIVE;
	u->status.drop_ppm = sd->init_drop_ppm;
	u->status.link_rate_mbps = sd->init_link_rate_mbps;
	u->version = SHM_VERSION;
	atomic_store_explicit(&u->magic, SHM_MAGIC_UNIT, memory_order_relaxed);
	munmap(u, page);
	ret = kfab_shm_publish(tmp, path);
	if (!ret)
		kfab_log(KFAB_LOG_DEBUG,
			 "shm: %s made: drop_ppm %u link_rate_mbps %u", path,
			 sd->init_drop_ppm, sd->init_link_rate_mbps);
out:
	unlink(tmp);
	close(fd);
	return ret;
}

/*
 * Opens and maps the unit file of @unit (KFAB_SHM_* @flags): the open
 * file in *@fdp, the mapping in *@up. -ENOENT without KFAB_SHM_CREATE
 * when it does not exist.
 */
static int shm_unit_open(const struct shm_dev *sd, unsigned int unit,
			 int flags, int *fdp, struct shm_unit **up)
{
	void *p;
	struct shm_unit *u;
	int ret;

	ret = kfab_shm_page_open(&sd->base, "hfi", unit, "unit", "unit",
				 flags, shm_unit_create, sd, fdp, &p);
	if (ret)
		return ret;
	u = p;
	if (atomic_load_explicit(&u->magic, memory_order_relaxed) !=
	    SHM_MAGIC_UNIT || u->version != SHM_VERSION ||
	    u->status.unit != unit) {
		char path[PATH_MAX];

		munmap(u, kfab_page_size());
		close(*fdp);
		kfab_shm_path(&sd->base, "hfi", unit, "unit", path,
			      sizeof(path));
		kfab_log(KFAB_LOG_WARN,
			 "shm: %s: not a unit file of this library version: remove it",
			 path);
		return -EPROTO;
	}
	*up = u;
	return 0;
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
static void shm_unit_release(const struct shm_dev *sd, unsigned int unit,
			     int fd)
{
	kfab_shm_page_release(&sd->base, "hfi", unit, "unit", fd,
			      shm_unit_kept, NULL);
}

/* ------------------------------------------------------------------ */
/* ops */

static void shm_release_ctxt(struct shm_dev *sd)
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
		shm_unit_release(sd, dev->unit, sd->unit_fd);
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

static int shm_assign(struct kfab_hfi_dev *dev, const uint8_t uuid[16],
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
	ret = shm_unit_open(sd, dev->unit, KFAB_SHM_CREATE | KFAB_SHM_LOCK,
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
	h->version = SHM_VERSION;
	h->hdr_size = sizeof(*h);
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

	memset(info, 0, sizeof(*info));
	info->unit = dev->unit;
	info->lid = dev->version.lid;
	info->ctxt = ctxt;
	info->jkey = h->jkey;
	info->pkey = pkey;
	info->sl = sl;
	info->rhq_entries = h->rhq_entries;
	info->rhq_entry_size = h->rhq_entry_size;
	info->eager_count = h->eager_count;
	info->eager_size = h->eager_size;
	info->ctrl_offset = h->ctrl_offset;
	info->rhq_offset = h->rhq_offset;
	info->eager_offset = h->eager_offset;
	info->status_offset = 0;	/* the start of the unit file */
	memcpy(info->uuid, uuid, 16);
	dev->assigned = 1;

	/* publish: pairs with the acquire in shm_map_peer() */
	atomic_store_explicit(&h->magic, SHM_MAGIC_READY, memory_order_release);
	kfab_log(KFAB_LOG_DEBUG, "shm: hfi%u ctxt %u assigned, jkey %#x",
		 dev->unit, ctxt, h->jkey);
	return 0;
err:
	shm_release_ctxt(sd);
	return ret;
}

static void shm_peer_free(struct shm_peer *sp)
{
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
	ret = shm_unit_open(sd, lid - 1, 0, &fd, &unit);
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
	/* acquire: pairs with the release of READY in shm_assign() */
	if (atomic_load_explicit(&((struct shm_hdr *)h)->magic,
				 memory_order_acquire) != SHM_MAGIC_READY) {
		ret = -ENOENT;		/* not finished, or released */
		goto err_fd;
	}
	if (!shm_hdr_sane(h, st.st_size)) {
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
	sp->pub.handle = ++sd->next_peer ? sd->next_peer : ++sd->next_peer;
	sp->pub.lid = lid;
	sp->pub.ctxt = ctxt;
	sp->pub.status = &sp->unit_page->status;
	kfab_hfi_peer_link(dev, &sp->pub);
	*out = &sp->pub;
	return 0;
err_fd:
	close(fd);
err:
	shm_peer_free(sp);
	return kfab_log_err(ret, "shm: map peer lid %u ctxt %u", lid, ctxt);
}

static int shm_unmap_peer(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	int ret = kfab_hfi_peer_unlink(dev, peer);

	if (!ret)
		shm_peer_free(to_shm_peer(peer));
	return ret;
}

static int shm_notify(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	int ret;

	if (kfab_hfi_ring_dead(&peer->ring))
		return -ECONNRESET;
	if (shm_down(dev->status) || shm_down(peer->status))
		return -ENETDOWN;
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

static int shm_tid_update(struct kfab_hfi_dev *dev, void *addr, size_t len,
			  uint32_t *handle)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_hdr *h = sd->hdr;
	uintptr_t a = (uintptr_t)addr;

	if (!dev->assigned)
		return kfab_log_err(-EINVAL, "hfi%u: no context assigned",
				    dev->unit);
	if (!len || a + len < a)
		return kfab_log_err(-EINVAL, "shm: TID range %p+%zu", addr,
				    len);
	kfab_shm_ptracer_any(&sd->ptracer_done);
	for (uint32_t i = 0; i < SHM_MAX_TIDS; i++) {
		struct shm_tid *t = &h->tids[i];
		uint32_t hd;

		if (atomic_load_explicit(&t->handle, memory_order_relaxed))
			continue;
		/* generation above the slot: a freed handle comes back late */
		h->tid_gen = (h->tid_gen + 1) & 0xffffff;
		hd = h->tid_gen << 8 | (i + 1);
		atomic_store_explicit(&t->addr, a, memory_order_relaxed);
		atomic_store_explicit(&t->len, len, memory_order_relaxed);
		/* release: a peer that sees the handle sees the range */
		atomic_store_explicit(&t->handle, hd, memory_order_release);
		*handle = hd;
		return 0;
	}
	return kfab_log_err(-ENOSPC, "shm: all %d TID slots in use",
			    SHM_MAX_TIDS);
}

static struct shm_tid *shm_tid_slot(const struct shm_hdr *h, uint32_t handle)
{
	uint32_t slot = (handle & 0xff) - 1;

	if (!handle || slot >= SHM_MAX_TIDS)
		return NULL;
	return (struct shm_tid *)&h->tids[slot];
}

static int shm_tid_free(struct kfab_hfi_dev *dev, uint32_t handle)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_tid *t;

	if (!dev->assigned)
		return kfab_log_err(-EINVAL, "hfi%u: no context assigned",
				    dev->unit);
	t = shm_tid_slot(sd->hdr, handle);
	if (!t || atomic_load_explicit(&t->handle, memory_order_relaxed) !=
		  handle)
		return kfab_log_err(-EINVAL, "shm: unknown TID %#x", handle);
	atomic_store_explicit(&t->handle, 0, memory_order_release);
	return 0;
}

/* A consistent (addr, len) of the peer's TID @handle, or -ENOENT. */
static int shm_tid_lookup(const struct shm_hdr *h, uint32_t handle,
			  uint64_t *addr, uint64_t *len)
{
	struct shm_tid *t = shm_tid_slot(h, handle);

	if (!t)
		return -ENOENT;
	/* acquire: pairs with the release in shm_tid_update() */
	if (atomic_load_explicit(&t->handle, memory_order_acquire) != handle)
		return -ENOENT;
	*addr = atomic_load_explicit(&t->addr, memory_order_relaxed);
	*len = atomic_load_explicit(&t->len, memory_order_relaxed);
	/* seqlock-style re-check: the slot was not reused meanwhile */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&t->handle, memory_order_relaxed) != handle)
		return -ENOENT;
	return 0;
}

static int shm_sdma(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		    uint32_t tid, uint64_t offset, const struct iovec *iov,
		    int iovcnt, uint32_t flags, uint64_t *bytes)
{
	struct shm_peer *sp = to_shm_peer(peer);
	struct iovec local[KFAB_IOV_MAX];
	uint64_t addr, tlen, total = 0;
	int ret;

	*bytes = 0;
	if (!dev->assigned || (flags & ~KFAB_HFI_SDMA_FLAGS_ALL) ||
	    iovcnt < 1 || iovcnt > KFAB_IOV_MAX)
		return kfab_log_err(-EINVAL, "shm: SDMA flags %#x iovcnt %d",
				    flags, iovcnt);
	for (int i = 0; i < iovcnt; i++) {
		if (total + iov[i].iov_len < total)
			return kfab_log_err(-EINVAL, "shm: SDMA length overflow");
		total += iov[i].iov_len;
		local[i] = iov[i];
	}
	if (kfab_hfi_ring_dead(&peer->ring))
		return -ECONNRESET;
	if (shm_down(dev->status) || shm_down(peer->status))
		return -ENETDOWN;
	ret = shm_tid_lookup(sp->hdr, tid, &addr, &tlen);
	if (ret)
		return kfab_log_err(ret, "shm: SDMA to TID %#x", tid);
	if (offset > tlen || total > tlen - offset)
		return kfab_log_err(-EINVAL,
				    "shm: SDMA %llu bytes at %llu beyond TID of %llu",
				    (unsigned long long)total,
				    (unsigned long long)offset,
				    (unsigned long long)tlen);
	/* the caller falls back to eager packets on -EPERM */
	ret = kfab_shm_copy(sp->hdr->pid, true, local, iovcnt,
			    addr + offset, total, bytes, "SDMA", KFAB_LOG_INFO);
	if (ret)
		return ret;
	if ((flags & KFAB_HFI_SDMA_NOTIFY) &&
	    kfab_hfi_ring_take_armed(&peer->ring))
		return shm_notify(dev, peer);
	return 0;
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
	/* acquire: pairs with the release of READY in shm_assign() */
	if (!h || atomic_load_explicit(&h->magic, memory_order_acquire) !=
		  SHM_MAGIC_READY || !shm_hdr_sane(h, st.st_size) ||
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

		if (shm_tid_lookup(h, h->tids[i].handle, &addr, &len))
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

static int shm_list_ctxts(struct kfab_hfi_dev *dev,
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
	ret = shm_unit_open(sd, dev->unit, 0, &fd, &u);
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
	ret = shm_unit_open(sd, dev->unit,
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

	ret = shm_unit_open(sd, dev->unit, KFAB_SHM_LOCK | KFAB_SHM_WRITE, &fd,
			    &u);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	kfab_shm_store32(&u->status.state, KFAB_HFI_STATE_ACTIVE);
	kfab_shm_store32(&u->status.drop_ppm, 0);
	kfab_shm_store32(&u->status.link_rate_mbps, 0);
	atomic_store_explicit(&u->kept, 0, memory_order_relaxed);
	munmap(u, kfab_page_size());
	shm_unit_release(sd, dev->unit, fd);
	kfab_shm_rmdir(&sd->base, "hfi", dev->unit);
	return 0;
}

static void shm_close(struct kfab_hfi_dev *dev)
{
	struct shm_dev *sd = to_shm(dev);

	while (dev->peers)
		shm_unmap_peer(dev, dev->peers);
	shm_release_ctxt(sd);
	free(sd);
}

static const struct kfab_hfi_ops shm_ops = {
	.name = "shm",
	.assign = shm_assign,
	.map_peer = shm_map_peer,
	.unmap_peer = shm_unmap_peer,
	.notify = shm_notify,
	.set_eventfd = shm_set_eventfd,
	.tid_update = shm_tid_update,
	.tid_free = shm_tid_free,
	.sdma = shm_sdma,
	.wake_drain = shm_wake_drain,
	.peer_gone = shm_peer_gone,
	.close = shm_close,
	.list_ctxts = shm_list_ctxts,
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
