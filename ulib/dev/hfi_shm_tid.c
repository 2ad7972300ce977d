// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the TID table of a shm HFI context (its header's, see
 * hfi_backend_shm.c) and SDMA into a peer's TID buffers.
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

int hfi_shm_tid_update(struct kfab_hfi_dev *dev, void *addr, size_t len,
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

int hfi_shm_tid_free(struct kfab_hfi_dev *dev, uint32_t handle)
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
int hfi_shm_tid_lookup(const struct shm_hdr *h, uint32_t handle,
			  uint64_t *addr, uint64_t *len)
{
	struct shm_tid *t = shm_tid_slot(h, handle);

	if (!t)
		return -ENOENT;
	/* acquire: pairs with the release in hfi_shm_tid_update() */
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

int hfi_shm_sdma(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		    uint32_t tid, uint64_t offset, const struct iovec *iov,
		    int iovcnt, uint32_t flags, uint64_t *bytes)
{
	struct shm_peer *sp = to_shm_peer(peer);
	struct iovec local[KFAB_IOV_MAX];
	uint64_t addr, tlen, total;
	int ret;

	*bytes = 0;
	if (!dev->assigned || (flags & ~KFAB_HFI_SDMA_FLAGS_ALL))
		return kfab_log_err(-EINVAL, "shm: SDMA flags %#x%s", flags,
				    dev->assigned ? "" : ", no context");
	ret = kfab_shm_iov(local, iov, iovcnt, &total, "SDMA");
	if (ret)
		return ret;
	ret = kfab_shm_reach(kfab_hfi_ring_dead(&peer->ring),
			     &dev->status->state, &peer->status->state,
			     KFAB_HFI_STATE_DOWN);
	if (ret)
		return ret;
	ret = hfi_shm_tid_lookup(sp->hdr, tid, &addr, &tlen);
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
		return hfi_shm_notify(dev, peer);
	return 0;
}
