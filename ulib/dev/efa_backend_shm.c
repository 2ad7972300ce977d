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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "efa_dev.h"
#include "backend_shm.h"

#define SHM_MAGIC_READY	0x315051454241464bULL	/* "KFABEQP1" */
#define SHM_MAGIC_DEAD	0x444544514241464bULL	/* "KFABQDED" */
#define SHM_MAGIC_DEV	0x564544454241464bULL	/* "KFABEDEV" */
#define SHM_MAGIC_MR	0x31524d454241464bULL	/* "KFABEMR1" */
#define SHM_VERSION	1
#define SHM_MAX_DEVICES	8
#define SHM_RX_ENTRIES	256
#define SHM_MAX_QPS	64
#define SHM_MAX_MRS	4096
#define SHM_QPN_MAX	0xffffffU
#define SHM_STALE_SECS	10	/* a temporary file older is a creator's, dead */

static const uint8_t shm_gid_prefix[KFAB_EFA_GID_LEN - 1] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0x73, 0x68, 0x6d,
};

struct shm_owner {
	int32_t pid;
	uint32_t uid;
	uint64_t start;		/* kfab_shm_start_time(), 0: unknown */
	uint64_t pd;		/* protection domain: one open device */
};

struct shm_qp_hdr {
	_Atomic uint64_t magic;		/* READY stored last (release) */
	uint32_t version;
	uint32_t hdr_size;
	uint32_t device;
	uint32_t qpn;
	uint32_t qkey;
	uint32_t pad0;
	struct shm_owner owner;
	uint32_t rx_entries;
	uint32_t rx_entry_size;
	uint32_t mtu;
	uint32_t pad1;
	uint64_t ctrl_offset;
	uint64_t ring_offset;
	uint64_t bufs_offset;
	uint64_t file_size;
	uint64_t reserved[8];
};

struct shm_mr_rec {
	uint64_t magic;
	uint32_t version;
	uint32_t rkey;
	struct shm_owner owner;
	uint64_t addr;
	uint64_t len;
	uint32_t access;
	uint32_t pad;
	uint64_t reserved[4];
};

/* The device file's page. */
struct shm_devpage {
	struct kfab_efa_status status;	/* first: what everybody maps */
	_Atomic uint64_t magic;		/* SHM_MAGIC_DEV */
	uint32_t version;
	_Atomic uint32_t next_qpn;
};

_Static_assert(sizeof(struct shm_qp_hdr) <= 4096, "header fits a page");
_Static_assert(sizeof(struct shm_devpage) <= 4096, "device fits a page");

struct shm_mr_slot {
	uint32_t lkey;			/* 0: free */
	uint32_t rkey;
};

struct shm_dev {
	struct kfab_efa_dev pub;
	struct kfab_shm_base base;
	int dev_fd;			/* device file, holds LOCK_SH */
	struct shm_devpage *page;
	struct shm_owner owner;
	uint32_t *mr_state;
	struct shm_mr_slot *mrs;
	uint32_t nmrs;
	uint32_t lkey_gen;
	uint32_t next_peer;
	bool ptracer_done;
};

struct shm_qp {
	struct kfab_efa_qp pub;
	struct shm_qp_hdr *hdr;
	ino_t ino;
};

struct shm_peer {
	struct kfab_efa_peer pub;
	unsigned int device;
	struct shm_owner owner;
	struct shm_devpage *page;	/* the peer's device */
	int wake_fd;
};

static inline struct shm_dev *to_shm(struct kfab_efa_dev *dev)
{
	return (struct shm_dev *)dev;
}

static inline struct shm_qp *to_shm_qp(struct kfab_efa_qp *qp)
{
	return (struct shm_qp *)qp;
}

static inline struct shm_peer *to_shm_peer(struct kfab_efa_peer *peer)
{
	return (struct shm_peer *)peer;
}

static bool shm_down(const struct kfab_efa_status *st)
{
	return kfab_shm_load32(&st->state) == KFAB_EFA_STATE_DOWN;
}

static uint32_t shm_random_key(void)
{
	uint32_t k = 0;

	while (!k)
		if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
			k = (uint32_t)random();
	return k;
}

/* ------------------------------------------------------------------ */
/* environment and paths */

static int shm_path(const struct shm_dev *sd, unsigned int device,
		    const char *name, char *buf, size_t len)
{
	return kfab_shm_path(&sd->base, "efa", device, name, buf, len);
}

static int shm_qp_path(const struct shm_dev *sd, unsigned int device,
		       uint32_t qpn, bool wake, char *buf, size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "qp%u%s", qpn, wake ? ".wake" : "");
	return shm_path(sd, device, name, buf, len);
}

static int shm_mr_path(const struct shm_dev *sd, unsigned int device,
		       uint32_t rkey, char *buf, size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "mr%08x", rkey);
	return shm_path(sd, device, name, buf, len);
}

/* ------------------------------------------------------------------ */
/* owners */

static void shm_owner_self(struct shm_owner *o)
{
	o->pid = (int32_t)getpid();
	o->uid = (uint32_t)geteuid();
	o->start = kfab_shm_start_time(o->pid);
}

static bool shm_owner_alive(const struct shm_owner *o)
{
	return kfab_shm_alive(o->pid, o->start);
}

static bool shm_owner_same(const struct shm_owner *a,
			   const struct shm_owner *b)
{
	return a->pid == b->pid && a->start == b->start && a->pd == b->pd;
}

/* ------------------------------------------------------------------ */
/* QP file layout */

static void shm_layout(uint32_t entries, uint32_t mtu, struct shm_qp_hdr *h)
{
	uint64_t page = kfab_page_size();

	h->rx_entries = entries;
	h->rx_entry_size = sizeof(struct kfab_efa_rx_entry);
	h->mtu = mtu;
	h->ctrl_offset = page;
	h->ring_offset = 2 * page;
	h->bufs_offset = h->ring_offset + kfab_efa_ring_bytes(entries);
	h->file_size = h->bufs_offset + kfab_efa_bufs_bytes(entries, mtu);
}

/* A QP header of another process: geometry consistent with our rules. */
static bool shm_hdr_sane(const struct shm_qp_hdr *h, off_t file_size)
{
	uint32_t n = h->rx_entries, mtu = h->mtu;
	struct shm_qp_hdr want;

	if (h->version != SHM_VERSION || h->hdr_size != sizeof(*h) ||
	    h->rx_entry_size != sizeof(struct kfab_efa_rx_entry) ||
	    n < 16 || n > 4096 || (n & (n - 1)) || mtu < kfab_page_size() ||
	    mtu > 65536 || (mtu & (mtu - 1)))
		return false;
	shm_layout(n, mtu, &want);
	return h->ctrl_offset == want.ctrl_offset &&
	       h->ring_offset == want.ring_offset &&
	       h->bufs_offset == want.bufs_offset &&
	       h->file_size == want.file_size &&
	       (uint64_t)file_size >= want.file_size;
}

/* ------------------------------------------------------------------ */
/* reaping */

enum shm_kind { SHM_QP, SHM_MR, SHM_TMP, SHM_OTHER };

static enum shm_kind shm_name_kind(const char *name)
{
	size_t n;

	if (name[0] == '.')
		return SHM_TMP;
	if (strlen(name) < 3)
		return SHM_OTHER;
	n = strspn(name + 2, "0123456789abcdef");
	if (!strncmp(name, "qp", 2) && n && !name[2 + n] &&
	    strspn(name + 2, "0123456789") == n)
		return SHM_QP;
	if (!strncmp(name, "mr", 2) && n == 8 && !name[10])
		return SHM_MR;
	return SHM_OTHER;
}

/*
 * @path is a QP file or MR record (@kind): remove it when its owner is
 * gone, setting a QP's dead word first. 1 when it was (or is) gone, 0
 * when its owner lives or it cannot be told.
 */
static int shm_reap(const char *path, enum shm_kind kind)
{
	union {
		struct shm_qp_hdr qp;
		struct shm_mr_rec mr;
	} u;
	const struct shm_owner *o = kind == SHM_QP ? &u.qp.owner :
						     &u.mr.owner;
	size_t len = kind == SHM_QP ? sizeof(u.qp) : sizeof(u.mr);
	struct stat st;
	int fd, gone = 0;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT;
	/* reapers only: while we hold it, nobody else unlinks this inode */
	if (flock(fd, LOCK_EX) || fstat(fd, &st) ||
	    st.st_uid != geteuid() ||
	    pread(fd, &u, len, 0) != (ssize_t)len ||
	    shm_owner_alive(o))
		goto out;
	if (kind == SHM_QP && shm_hdr_sane(&u.qp, st.st_size)) {
		__u32 one = 1;
		char wake[PATH_MAX];

		/* as the kernel does when the owner's file is released */
		if (pwrite(fd, &one, sizeof(one), (off_t)(u.qp.ctrl_offset +
			   offsetof(struct kfab_efa_qp_ctrl, dead))) < 0)
			goto out;
		snprintf(wake, sizeof(wake), "%s.wake", path);
		unlink(wake);
	}
	if (kfab_shm_names(path, &st)) {
		kfab_log(KFAB_LOG_INFO, "shm: reaping %s of gone pid %d", path,
			 (int)o->pid);
		unlink(path);
	}
	gone = 1;
out:
	close(fd);
	return gone;
}

/*
 * Reaps what gone owners left in efa<@device>/ (QP files only unless
 * @mrs) and returns the QP files left, or -errno.
 */
static int shm_sweep(const struct shm_dev *sd, unsigned int device, bool mrs)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	int nqps = 0;
	DIR *d;

	if (shm_path(sd, device, "", dir, sizeof(dir)))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		enum shm_kind kind = shm_name_kind(de->d_name);
		struct stat st;
		int n;

		if (kind == SHM_OTHER || (kind == SHM_MR && !mrs))
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		if (kind == SHM_TMP) {
			/* a creator that died before its link */
			if (!lstat(path, &st) && S_ISREG(st.st_mode) &&
			    time(NULL) - st.st_mtime > SHM_STALE_SECS)
				unlink(path);
			continue;
		}
		if (!shm_reap(path, kind) && kind == SHM_QP)
			nqps++;
	}
	closedir(d);
	return nqps;
}

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

static bool shm_knobs_default(const struct kfab_efa_status *st)
{
	return kfab_shm_load32(&st->state) == KFAB_EFA_STATE_ACTIVE &&
	       kfab_shm_load32(&st->device_rdma) ==
		       (KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE) &&
	       kfab_shm_load32(&st->rnr_retry) == KFAB_EFA_RNR_RETRY_DEFAULT &&
	       !kfab_shm_load32(&st->rnr_inject_ppm) &&
	       !kfab_shm_load32(&st->reorder_ppm) &&
	       !kfab_shm_load32(&st->link_rate_mbps);
}

/* Makes the device file at @path: 0, -EEXIST, -EAGAIN (no directory). */
static int shm_devfile_create(const void *arg, unsigned int device,
			      const char *path)
{
	const struct shm_dev *sd = arg;
	size_t page = kfab_page_size();
	uint32_t inject = 0, reorder = 0, retry = KFAB_EFA_RNR_RETRY_DEFAULT;
	char tmp[PATH_MAX];
	struct shm_devpage *p;
	int fd, ret;

	ret = kfab_shm_env_u32("KFAB_SHM_EFA_RNR_INJECT_PPM", 0, 0,
			       KFAB_EFA_KNOB_MAX, false, &inject);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_EFA_REORDER_PPM", 0, 0,
				       KFAB_EFA_KNOB_MAX, false, &reorder);
	if (!ret)
		ret = kfab_shm_env_u32("KFAB_SHM_EFA_RNR_RETRY",
				       KFAB_EFA_RNR_RETRY_DEFAULT, 0,
				       KFAB_EFA_RNR_RETRY_MAX, false, &retry);
	if (ret)
		return ret;
	ret = kfab_shm_dirs_ensure(&sd->base, "efa", device);
	if (ret)
		return ret;
	fd = kfab_shm_tmp_create(&sd->base, "efa", device, "device",
				 (off_t)page, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	p = kfab_map(fd, 0, page, PROT_READ | PROT_WRITE);
	if (!p) {
		ret = kfab_log_err(-errno, "shm: mmap %s", tmp);
		goto out;
	}
	p->status.abi_version = KFAB_ABI_VERSION;
	p->status.device = device;
	shm_gid(device, p->status.gid);
	p->status.state = KFAB_EFA_STATE_ACTIVE;
	p->status.mtu = shm_default_mtu();
	p->status.device_rdma = KFAB_EFA_RDMA_CAP_READ |
				KFAB_EFA_RDMA_CAP_WRITE;
	p->status.rnr_retry = retry;
	p->status.rnr_inject_ppm = inject;
	p->status.reorder_ppm = reorder;
	p->version = SHM_VERSION;
	atomic_store_explicit(&p->next_qpn, shm_random_key() % SHM_QPN_MAX,
			      memory_order_relaxed);
	atomic_store_explicit(&p->magic, SHM_MAGIC_DEV, memory_order_relaxed);
	munmap(p, page);
	ret = kfab_shm_publish(tmp, path);
	if (!ret)
		kfab_log(KFAB_LOG_DEBUG, "shm: %s made", path);
out:
	unlink(tmp);
	close(fd);
	return ret;
}

/*
 * Opens and maps the device file of @device: read-write, locked shared
 * and made if absent when @own (our device), else read-only as it is
 * (-ENOENT when there is none).
 */
static int shm_devfile_open(const struct shm_dev *sd, unsigned int device,
			    bool own, int *fdp, struct shm_devpage **pp)
{
	struct shm_devpage *p;
	void *m;
	int ret;

	ret = kfab_shm_page_open(&sd->base, "efa", device, "device", "device",
				 own ? KFAB_SHM_CREATE | KFAB_SHM_LOCK |
				       KFAB_SHM_WRITE : 0,
				 shm_devfile_create, sd, fdp, &m);
	if (ret)
		return ret;
	p = m;
	if (atomic_load_explicit(&p->magic, memory_order_relaxed) !=
	    SHM_MAGIC_DEV || p->version != SHM_VERSION ||
	    p->status.device != device) {
		char path[PATH_MAX];

		munmap(p, kfab_page_size());
		close(*fdp);
		shm_path(sd, device, "device", path, sizeof(path));
		kfab_log(KFAB_LOG_WARN,
			 "shm: %s: not a device file of this library version: remove it",
			 path);
		return -EPROTO;
	}
	*pp = p;
	return 0;
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

	gone = kfab_shm_page_release(&sd->base, "efa", device, "device",
				     sd->dev_fd, shm_devfile_kept, sd->page);
	munmap(sd->page, kfab_page_size());
	sd->page = NULL;
	sd->dev_fd = -1;
	if (gone)
		kfab_shm_rmdir(&sd->base, "efa", device);
}

/* ------------------------------------------------------------------ */
/* QPs */

static void shm_qp_free(struct shm_dev *sd, struct shm_qp *sq, bool files)
{
	char path[PATH_MAX], wake[PATH_MAX];
	struct stat st;

	if (files && sq->hdr) {
		/* as the kernel does on destroy */
		if (sq->pub.ring.ctrl)
			atomic_store_explicit(
				(_Atomic __u32 *)&sq->pub.ring.ctrl->dead, 1,
				memory_order_release);
		atomic_store_explicit(&sq->hdr->magic, SHM_MAGIC_DEAD,
				      memory_order_release);
		if (!shm_qp_path(sd, sd->pub.device, sq->hdr->qpn, false, path,
				 sizeof(path)) &&
		    !shm_qp_path(sd, sd->pub.device, sq->hdr->qpn, true, wake,
				 sizeof(wake)) &&
		    !stat(path, &st) && st.st_ino == sq->ino) {
			unlink(wake);
			unlink(path);
		}
	}
	kfab_efa_unmap_ring(&sq->pub.ring);
	if (sq->hdr)
		munmap(sq->hdr, kfab_page_size());
	if (sq->pub.wake_fd >= 0)
		close(sq->pub.wake_fd);
	free(sq);
}

/*
 * Links the finished temporary QP file @tmp as the next free qpn: the
 * qpn, or -errno.
 */
static int64_t shm_qpn_claim(struct shm_dev *sd, const char *tmp)
{
	unsigned int device = sd->pub.device;
	char path[PATH_MAX];
	int ret;

	for (uint32_t tries = 0; tries < 4 * SHM_MAX_QPS + 16; tries++) {
		uint32_t qpn = atomic_fetch_add_explicit(&sd->page->next_qpn, 1,
							 memory_order_relaxed) %
			       SHM_QPN_MAX + 1;

		if (shm_qp_path(sd, device, qpn, false, path, sizeof(path)))
			return kfab_log_err(-ENAMETOOLONG, "shm: QP file");
		ret = kfab_shm_publish(tmp, path);
		if (!ret)
			return qpn;
		if (ret != -EEXIST)
			return ret;
		/* taken: reaped if its owner is gone, the next number anyway */
		shm_reap(path, SHM_QP);
	}
	return kfab_log_err(-EBUSY, "shm: efa%u: no free qpn found", device);
}

static int shm_create_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp **out)
{
	struct shm_dev *sd = to_shm(dev);
	char tmp[PATH_MAX], wake[PATH_MAX];
	struct shm_qp_hdr *h;
	struct shm_qp *sq;
	struct stat st;
	int64_t qpn;
	int fd, ret;

	*out = NULL;
	if (shm_down(dev->status))
		return kfab_log_err(-ENETDOWN, "shm: efa%u is Down",
				    dev->device);
	ret = shm_sweep(sd, dev->device, false);
	if (ret < 0)
		return kfab_log_err(ret, "shm: efa%u: reading its directory",
				    dev->device);
	if ((uint32_t)ret >= dev->info.max_qps) {
		kfab_log(KFAB_LOG_WARN,
			 "shm: efa%u: all %u QPs in use: destroy some first",
			 dev->device, dev->info.max_qps);
		return -EBUSY;
	}
	sq = calloc(1, sizeof(*sq));
	if (!sq)
		return kfab_log_err(-ENOMEM, "shm: create QP");
	sq->pub.wake_fd = -1;

	/* the whole file, owner and geometry first, then the claim */
	h = &(struct shm_qp_hdr){ 0 };
	shm_layout(dev->info.rx_entries, dev->info.mtu, h);
	fd = kfab_shm_tmp_create(&sd->base, "efa", dev->device, "qp",
				 (off_t)h->file_size, tmp, sizeof(tmp));
	if (fd < 0) {
		ret = fd == -EAGAIN ?
		      kfab_log_err(-ENOENT, "shm: efa%u directory gone",
				   dev->device) : fd;
		free(sq);
		return ret;
	}
	sq->hdr = kfab_map(fd, 0, kfab_page_size(), PROT_READ | PROT_WRITE);
	if (!sq->hdr) {
		ret = kfab_log_err(-errno, "shm: mmap %s", tmp);
		unlink(tmp);
		goto err;
	}
	memcpy(sq->hdr, h, sizeof(*h));
	h = sq->hdr;
	h->version = SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->device = dev->device;
	h->qkey = shm_random_key();
	h->owner = sd->owner;
	qpn = shm_qpn_claim(sd, tmp);
	unlink(tmp);
	if (qpn < 0) {
		ret = (int)qpn;
		goto err;
	}
	h->qpn = (uint32_t)qpn;
	if (fstat(fd, &st)) {
		ret = kfab_log_err(-errno, "shm: stat QP %u", h->qpn);
		goto err_files;
	}
	sq->ino = st.st_ino;

	/* the wakeup FIFO, before anyone may map us */
	if (shm_qp_path(sd, dev->device, h->qpn, true, wake, sizeof(wake))) {
		ret = kfab_log_err(-ENAMETOOLONG, "shm: QP FIFO");
		goto err_files;
	}
	ret = kfab_shm_fifo_make(wake);
	if (ret < 0)
		goto err_files;
	sq->pub.wake_fd = ret;
	ret = kfab_efa_map_ring(fd, h->ctrl_offset, h->ring_offset,
				h->bufs_offset, h->rx_entries, h->mtu, NULL,
				&sq->pub.ring);
	if (ret)
		goto err_files;
	close(fd);
	memcpy(sq->pub.addr.gid, dev->info.gid, KFAB_EFA_GID_LEN);
	sq->pub.addr.qpn = h->qpn;
	sq->pub.addr.qkey = h->qkey;
	/* publish: pairs with the acquire in shm_peer_attach() */
	atomic_store_explicit(&h->magic, SHM_MAGIC_READY, memory_order_release);
	kfab_efa_qp_link(dev, &sq->pub);
	*out = &sq->pub;
	kfab_log(KFAB_LOG_DEBUG, "shm: efa%u: QP %u created", dev->device,
		 h->qpn);
	return 0;
err_files:
	close(fd);
	shm_qp_free(sd, sq, true);
	return ret;
err:
	close(fd);
	shm_qp_free(sd, sq, false);
	return ret;
}

static int shm_destroy_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	int ret = kfab_efa_qp_unlink(dev, qp);

	if (!ret)
		shm_qp_free(to_shm(dev), to_shm_qp(qp), true);
	return ret;
}

static void shm_wake_drain(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	(void)dev;
	kfab_shm_wake_drain(qp->wake_fd);
}

/* ------------------------------------------------------------------ */
/* peers */

static void shm_peer_free(struct kfab_efa_dev *dev, struct shm_peer *sp)
{
	kfab_efa_unmap_ring(&sp->pub.ring);
	if (sp->page)
		munmap(sp->page, kfab_page_size());
	if (sp->wake_fd >= 0)
		close(sp->wake_fd);
	kfab_efa_peer_release(dev, &sp->pub);
	free(sp);
}

/* Maps QP @qpn of sp->device into @sp: 0, or -errno unlogged. */
static int shm_peer_attach(struct shm_dev *sd, struct shm_peer *sp,
			   uint32_t qpn, uint32_t qkey)
{
	char path[PATH_MAX], wake[PATH_MAX];
	struct shm_qp_hdr *m, h;
	struct stat st;
	int fd, ret;

	if (shm_qp_path(sd, sp->device, qpn, false, path, sizeof(path)) ||
	    shm_qp_path(sd, sp->device, qpn, true, wake, sizeof(wake)))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	ret = -EACCES;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		goto out;
	ret = -ENOENT;			/* being made */
	if ((size_t)st.st_size < kfab_page_size())
		goto out;
	m = kfab_map(fd, 0, kfab_page_size(), PROT_READ);
	if (!m) {
		ret = -errno;
		goto out;
	}
	/* acquire: pairs with the release of READY in shm_create_qp() */
	if (atomic_load_explicit(&m->magic, memory_order_acquire) !=
	    SHM_MAGIC_READY) {
		munmap(m, kfab_page_size());
		goto out;		/* not finished, or destroyed */
	}
	memcpy(&h, m, sizeof(h));
	munmap(m, kfab_page_size());
	if (!shm_hdr_sane(&h, st.st_size) || h.qpn != qpn ||
	    h.device != sp->device) {
		ret = -EPROTO;
		goto out;
	}
	if (!shm_owner_alive(&h.owner)) {
		close(fd);
		shm_reap(path, SHM_QP);
		return -ENOENT;
	}
	ret = -EACCES;
	if (h.qkey != qkey)
		goto out;
	ret = kfab_efa_map_ring(fd, h.ctrl_offset, h.ring_offset,
				h.bufs_offset, h.rx_entries, h.mtu,
				&sp->page->status, &sp->pub.ring);
	if (ret)
		goto out;
	sp->owner = h.owner;
	sp->wake_fd = open(wake, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (sp->wake_fd < 0)
		ret = errno == ENOENT ? -ENOENT : -errno;
out:
	close(fd);
	return ret;
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
	ret = shm_peer_attach(sd, sp, addr->qpn, addr->qkey);
	if (ret)
		goto err;
	sp->pub.handle = ++sd->next_peer ? sd->next_peer : ++sd->next_peer;
	sp->pub.addr = *addr;
	sp->pub.status = &sp->page->status;
	kfab_efa_peer_link(dev, &sp->pub);
	*out = &sp->pub;
	return 0;
err:
	shm_peer_free(dev, sp);
	return kfab_log_err(ret, "shm: map peer efa%u QP %u%s", device,
			    addr->qpn,
			    ret == -EACCES ? " (qkey differs, or another user's)" :
			    ret == -ENOENT ? " (none: destroyed, or its owner gone)" :
			    ret == -ENETDOWN ? " (its device is Down)" : "");
}

static int shm_unmap_peer(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer)
{
	int ret = kfab_efa_peer_unlink(dev, peer);

	if (!ret)
		shm_peer_free(dev, to_shm_peer(peer));
	return ret;
}

static int shm_wake(struct shm_peer *sp)
{
	int ret = kfab_shm_wake(sp->wake_fd);

	if (ret)
		return kfab_log_err(ret, "shm: notify efa%u QP %u",
				    sp->device, sp->pub.addr.qpn);
	return 0;
}

static int shm_notify(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer)
{
	if (kfab_efa_ring_dead(&peer->ring))
		return -ECONNRESET;
	if (shm_down(dev->status) || shm_down(peer->status))
		return -ENETDOWN;
	return shm_wake(to_shm_peer(peer));
}

/* Destroyed (the dead word), or its owner gone: then its files reaped. */
static bool shm_peer_gone(struct kfab_efa_dev *dev,
			  struct kfab_efa_peer *peer)
{
	struct shm_peer *sp = to_shm_peer(peer);

	if (kfab_efa_ring_dead(&peer->ring))
		return true;
	if (shm_owner_alive(&sp->owner))
		return false;
	shm_sweep(to_shm(dev), sp->device, true);
	return true;
}

/* ------------------------------------------------------------------ */
/* memory regions */

static int shm_reg_mr(struct kfab_efa_dev *dev, void *addr, size_t len,
		      uint32_t access, struct kfab_efa_mr *mr)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_mr_rec rec = { 0 };
	char tmp[PATH_MAX], path[PATH_MAX];
	uintptr_t a = (uintptr_t)addr;
	uint32_t slot, rkey = 0;
	ssize_t n;
	int fd, ret;

	if ((access & ~KFAB_EFA_ACCESS_ALL) ||
	    ((access & KFAB_EFA_ACCESS_REMOTE_WRITE) &&
	     !(access & KFAB_EFA_ACCESS_LOCAL_WRITE)))
		return kfab_log_err(-EINVAL,
				    "shm: reg_mr: access %#x: unknown bits, or REMOTE_WRITE without LOCAL_WRITE",
				    access);
	if (!len || a + len < a)
		return kfab_log_err(-EINVAL, "shm: reg_mr: range %p+%zu", addr,
				    len);
	if (sd->nmrs >= dev->info.max_mrs) {
		kfab_log(KFAB_LOG_WARN,
			 "shm: efa%u: all %u regions of this device in use: deregister some",
			 dev->device, dev->info.max_mrs);
		return -ENOSPC;
	}
	if (access & (KFAB_EFA_ACCESS_REMOTE_READ |
		      KFAB_EFA_ACCESS_REMOTE_WRITE))
		kfab_shm_ptracer_any(&sd->ptracer_done);
	rec.magic = SHM_MAGIC_MR;
	rec.version = SHM_VERSION;
	rec.owner = sd->owner;
	rec.addr = a;
	rec.len = len;
	rec.access = access;
	do {
		rkey = shm_random_key();
		rec.rkey = rkey;
		if (shm_mr_path(sd, dev->device, rkey, path, sizeof(path)))
			return kfab_log_err(-ENAMETOOLONG, "shm: MR record");
		fd = kfab_shm_tmp_create(&sd->base, "efa", dev->device, "mr",
					 0, tmp, sizeof(tmp));
		if (fd < 0) {
			ret = fd;
			break;
		}
		n = pwrite(fd, &rec, sizeof(rec), 0);
		if (n != (ssize_t)sizeof(rec))
			ret = kfab_log_err(n < 0 ? -errno : -EIO,
					   "shm: write %s", tmp);
		else
			ret = kfab_shm_publish(tmp, path);
		unlink(tmp);
		close(fd);
	} while (ret == -EEXIST);
	if (ret == -EAGAIN)
		ret = kfab_log_err(-ENOENT, "shm: efa%u: directory gone",
				   dev->device);
	if (ret)
		return ret;

	for (slot = 0; sd->mrs[slot].lkey; slot++)
		;		/* below max_mrs: there is a free one */
	sd->lkey_gen = (sd->lkey_gen + 1) & 0xffff;
	if (!sd->lkey_gen)
		sd->lkey_gen = 1;
	sd->mrs[slot].lkey = sd->lkey_gen << 16 | (slot + 1);
	sd->mrs[slot].rkey = rkey;
	sd->nmrs++;
	atomic_store_explicit((_Atomic uint32_t *)&sd->mr_state[slot],
			      KFAB_EFA_MR_STATE_VALID, memory_order_release);
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	mr->lkey = sd->mrs[slot].lkey;
	mr->rkey = rkey;
	mr->state_index = slot;
	return 0;
}

static void shm_mr_release(struct shm_dev *sd, uint32_t slot, bool files)
{
	char path[PATH_MAX];

	if (files && !shm_mr_path(sd, sd->pub.device, sd->mrs[slot].rkey, path,
				  sizeof(path)))
		unlink(path);
	atomic_store_explicit((_Atomic uint32_t *)&sd->mr_state[slot],
			      KFAB_EFA_MR_STATE_FREE, memory_order_release);
	sd->mrs[slot].lkey = 0;
	sd->mrs[slot].rkey = 0;
	sd->nmrs--;
}

static int shm_dereg_mr(struct kfab_efa_dev *dev, struct kfab_efa_mr *mr)
{
	struct shm_dev *sd = to_shm(dev);
	uint32_t slot = (mr->lkey & 0xffff) - 1;

	if (!mr->lkey || slot >= dev->info.max_mrs ||
	    sd->mrs[slot].lkey != mr->lkey)
		return kfab_log_err(-EINVAL, "shm: dereg_mr: unknown lkey %#x",
				    mr->lkey);
	shm_mr_release(sd, slot, true);
	return 0;
}

/* The record of @rkey on the peer's device: 0, or -EACCES (none). */
static int shm_mr_lookup(struct shm_dev *sd, const struct shm_peer *sp,
			 uint32_t rkey, struct shm_mr_rec *rec)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (!rkey || shm_mr_path(sd, sp->device, rkey, path, sizeof(path)))
		return -EACCES;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -EACCES;
	n = pread(fd, rec, sizeof(*rec), 0);
	close(fd);
	if (n != (ssize_t)sizeof(*rec) || rec->magic != SHM_MAGIC_MR ||
	    rec->version != SHM_VERSION || rec->rkey != rkey)
		return -EACCES;
	return 0;
}

static int shm_rdma(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer,
		    uint32_t op, uint32_t rkey, uint64_t remote_addr,
		    const struct iovec *iov, int iovcnt, uint32_t flags,
		    uint64_t *bytes)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_peer *sp = to_shm_peer(peer);
	struct iovec local[KFAB_IOV_MAX];
	struct shm_mr_rec rec;
	uint64_t total = 0;
	uint32_t cap, need;
	int ret;

	*bytes = 0;
	if ((flags & ~KFAB_EFA_RDMA_FLAGS_ALL) ||
	    (op != KFAB_EFA_RDMA_READ && op != KFAB_EFA_RDMA_WRITE) ||
	    iovcnt < 1 || iovcnt > KFAB_IOV_MAX)
		return kfab_log_err(-EINVAL,
				    "shm: RDMA op %u flags %#x iovcnt %d", op,
				    flags, iovcnt);
	for (int i = 0; i < iovcnt; i++) {
		if (total + iov[i].iov_len < total)
			return kfab_log_err(-EINVAL,
					    "shm: RDMA length overflow");
		total += iov[i].iov_len;
		local[i] = iov[i];
	}
	if (kfab_efa_ring_dead(&peer->ring))
		return -ECONNRESET;
	if (shm_down(dev->status) || shm_down(peer->status))
		return -ENETDOWN;
	cap = op == KFAB_EFA_RDMA_READ ? KFAB_EFA_RDMA_CAP_READ :
					 KFAB_EFA_RDMA_CAP_WRITE;
	if (!(kfab_shm_load32(&dev->status->device_rdma) & cap) ||
	    !(kfab_shm_load32(&peer->status->device_rdma) & cap))
		return kfab_log_err(-EOPNOTSUPP,
				    "shm: RDMA %s: device_rdma of efa%u or efa%u lacks it",
				    op == KFAB_EFA_RDMA_READ ? "read" : "write",
				    dev->device, sp->device);
	need = op == KFAB_EFA_RDMA_READ ? KFAB_EFA_ACCESS_REMOTE_READ :
					  KFAB_EFA_ACCESS_REMOTE_WRITE;
	ret = shm_mr_lookup(sd, sp, rkey, &rec);
	if (ret || !shm_owner_same(&rec.owner, &sp->owner) ||
	    !(rec.access & need))
		return kfab_log_err(-EACCES,
				    "shm: RDMA: rkey %#x is no region of the peer's owner allowing %s",
				    rkey, op == KFAB_EFA_RDMA_READ ?
				    "REMOTE_READ" : "REMOTE_WRITE");
	if (remote_addr < rec.addr || total > rec.len ||
	    remote_addr - rec.addr > rec.len - total)
		return kfab_log_err(-EINVAL,
				    "shm: RDMA of %llu bytes at %#llx beyond the region %#llx+%llu",
				    (unsigned long long)total,
				    (unsigned long long)remote_addr,
				    (unsigned long long)rec.addr,
				    (unsigned long long)rec.len);
	ret = kfab_shm_copy(rec.owner.pid, op == KFAB_EFA_RDMA_WRITE,
			    local,
			    iovcnt, remote_addr, total, bytes, "RDMA",
			    KFAB_LOG_WARN);
	if (ret == -ECONNRESET)
		shm_peer_gone(dev, peer);
	if (ret)
		return ret;
	kfab_shm_pace(kfab_shm_load32(&peer->status->link_rate_mbps), total);
	if ((flags & KFAB_EFA_RDMA_NOTIFY) &&
	    kfab_efa_ring_take_armed(&peer->ring))
		return shm_wake(sp);
	return 0;
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

	while (dev->peers)
		shm_unmap_peer(dev, dev->peers);
	while (dev->qps) {
		struct kfab_efa_qp *qp = dev->qps;

		kfab_efa_qp_unlink(dev, qp);
		shm_qp_free(sd, to_shm_qp(qp), files);
	}
	for (uint32_t i = 0; sd->nmrs && i < dev->info.max_mrs; i++)
		if (sd->mrs[i].lkey)
			shm_mr_release(sd, i, files);
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
	.create_qp = shm_create_qp,
	.destroy_qp = shm_destroy_qp,
	.wake_drain = shm_wake_drain,
	.map_peer = shm_map_peer,
	.unmap_peer = shm_unmap_peer,
	.notify = shm_notify,
	.reg_mr = shm_reg_mr,
	.dereg_mr = shm_dereg_mr,
	.rdma = shm_rdma,
	.peer_gone = shm_peer_gone,
	.close = shm_close,
	.get_status = shm_get_status,
	.set_knob = shm_set_knob,
};

int kfab_efa_shm_open(unsigned int device, struct kfab_efa_dev **out)
{
	struct kfab_efa_device_info *info;
	struct shm_dev *sd;
	uint32_t ndevices;
	int ret;

	*out = NULL;
	ret = kfab_shm_env_u32("KFAB_SHM_EFA_DEVICES", 2, 1, SHM_MAX_DEVICES,
			       false, &ndevices);
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
	shm_sweep(sd, device, true);

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
