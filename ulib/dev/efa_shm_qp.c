// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the QPs of the shm EFA backend: their files (the layout of
 * efa_backend_shm.c), creating, destroying and mapping them, and reaping
 * the files of gone owners.
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
#include "ring.h"

/* ------------------------------------------------------------------ */
/* QP file layout */

static void shm_layout(uint32_t entries, uint32_t mtu, struct shm_qp_hdr *h)
{
	uint64_t page = kfab_page_size();
	struct kfab_ring_parts p;

	kfab_efa_ring_parts(entries, mtu, &p);
	h->version = SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->rx_entries = entries;
	h->rx_entry_size = sizeof(struct kfab_efa_rx_entry);
	h->mtu = mtu;
	h->ctrl_offset = page;
	h->ring_offset = 2 * page;
	h->bufs_offset = h->ring_offset + p.len[1];
	h->file_size = h->bufs_offset + p.len[2];
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
int efa_shm_reap(const char *path, enum shm_kind kind)
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
int efa_shm_sweep(const struct shm_dev *sd, unsigned int device, bool mrs)
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
		if (!efa_shm_reap(path, kind) && kind == SHM_QP)
			nqps++;
	}
	closedir(d);
	return nqps;
}

/* ------------------------------------------------------------------ */
/* QPs */

void efa_shm_qp_free(struct shm_dev *sd, struct shm_qp *sq, bool files)
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
		efa_shm_reap(path, SHM_QP);
	}
	return kfab_log_err(-EBUSY, "shm: efa%u: no free qpn found", device);
}

int efa_shm_create_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp **out)
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
	ret = efa_shm_sweep(sd, dev->device, false);
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
	/* publish: pairs with the acquire in efa_shm_peer_attach() */
	atomic_store_explicit(&h->magic, SHM_MAGIC_READY, memory_order_release);
	KFAB_LIST_PUSH(&dev->qps, &sq->pub);
	*out = &sq->pub;
	kfab_log(KFAB_LOG_DEBUG, "shm: efa%u: QP %u created", dev->device,
		 h->qpn);
	return 0;
err_files:
	close(fd);
	efa_shm_qp_free(sd, sq, true);
	return ret;
err:
	close(fd);
	efa_shm_qp_free(sd, sq, false);
	return ret;
}

int efa_shm_destroy_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	int ret = kfab_efa_qp_unlink(dev, qp);

	if (!ret)
		efa_shm_qp_free(to_shm(dev), to_shm_qp(qp), true);
	return ret;
}

void efa_shm_wake_drain(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	(void)dev;
	kfab_shm_wake_drain(qp->wake_fd);
}

/* Maps QP @qpn of sp->device into @sp: 0, or -errno unlogged. */
int efa_shm_peer_attach(struct shm_dev *sd, struct shm_peer *sp,
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
	/* acquire: pairs with the release of READY in efa_shm_create_qp() */
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
		efa_shm_reap(path, SHM_QP);
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
