// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the memory regions of the shm EFA backend (the records
 * mr<rkey> of efa_backend_shm.c) and the RDMA into them.
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

int efa_shm_reg_mr(struct kfab_efa_dev *dev, void *addr, size_t len,
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

void efa_shm_mr_release(struct shm_dev *sd, uint32_t slot, bool files)
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

int efa_shm_dereg_mr(struct kfab_efa_dev *dev, struct kfab_efa_mr *mr)
{
	struct shm_dev *sd = to_shm(dev);
	uint32_t slot = (mr->lkey & 0xffff) - 1;

	if (!mr->lkey || slot >= dev->info.max_mrs ||
	    sd->mrs[slot].lkey != mr->lkey)
		return kfab_log_err(-EINVAL, "shm: dereg_mr: unknown lkey %#x",
				    mr->lkey);
	efa_shm_mr_release(sd, slot, true);
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

int efa_shm_rdma(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer,
		    uint32_t op, uint32_t rkey, uint64_t remote_addr,
		    const struct iovec *iov, int iovcnt, uint32_t flags,
		    uint64_t *bytes)
{
	struct shm_dev *sd = to_shm(dev);
	struct shm_peer *sp = to_shm_peer(peer);
	struct iovec local[KFAB_IOV_MAX];
	struct shm_mr_rec rec;
	uint64_t total;
	uint32_t cap, need;
	int ret;

	*bytes = 0;
	if ((flags & ~KFAB_EFA_RDMA_FLAGS_ALL) ||
	    (op != KFAB_EFA_RDMA_READ && op != KFAB_EFA_RDMA_WRITE))
		return kfab_log_err(-EINVAL, "shm: RDMA op %u flags %#x", op,
				    flags);
	ret = kfab_shm_iov(local, iov, iovcnt, &total, "RDMA");
	if (ret)
		return ret;
	ret = kfab_shm_reach(kfab_efa_ring_dead(&peer->ring),
			     &dev->status->state, &peer->status->state,
			     KFAB_EFA_STATE_DOWN);
	if (ret)
		return ret;
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
		efa_shm_peer_gone(dev, peer);
	if (ret)
		return ret;
	kfab_shm_pace(kfab_shm_load32(&peer->status->link_rate_mbps), total);
	if ((flags & KFAB_EFA_RDMA_NOTIFY) &&
	    kfab_efa_ring_take_armed(&peer->ring))
		return efa_shm_wake(sp);
	return 0;
}
