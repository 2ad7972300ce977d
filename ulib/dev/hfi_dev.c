// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what both HFI backends share: backend selection, mapping a
 * context's queues, and sending into a peer with its wakeup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>

#include "hfi_dev.h"

size_t kfab_hfi_rhq_bytes(uint32_t rhq_entries)
{
	return kfab_page_round((size_t)rhq_entries *
			  sizeof(struct kfab_hfi_rhq_entry));
}

size_t kfab_hfi_eager_bytes(uint32_t eager_count, uint32_t eager_size)
{
	return kfab_page_round((size_t)eager_count * eager_size);
}

void kfab_hfi_unmap_ring(struct kfab_hfi_ring *ring)
{
	if (ring->ctrl)
		munmap(ring->ctrl, kfab_page_size());
	if (ring->rhq)
		munmap(ring->rhq, kfab_hfi_rhq_bytes(ring->rhq_entries));
	if (ring->eager)
		munmap(ring->eager, kfab_hfi_eager_bytes(ring->eager_count,
							 ring->eager_size));
	ring->ctrl = NULL;
	ring->rhq = NULL;
	ring->eager = NULL;
}

int kfab_hfi_map_ring(int fd, uint64_t ctrl_off, uint64_t rhq_off,
		      uint64_t eager_off, uint32_t rhq_entries,
		      uint32_t eager_count, uint32_t eager_size,
		      struct kfab_hfi_ring *ring)
{
	const int rw = PROT_READ | PROT_WRITE;
	struct kfab_hfi_ring r = { 0 };
	int ret;

	r.rhq_entries = rhq_entries;
	r.eager_count = eager_count;
	r.eager_size = eager_size;
	r.ctrl = kfab_map(fd, ctrl_off, kfab_page_size(), rw);
	if (!r.ctrl)
		goto err;
	r.rhq = kfab_map(fd, rhq_off, kfab_hfi_rhq_bytes(rhq_entries), rw);
	if (!r.rhq)
		goto err;
	r.eager = kfab_map(fd, eager_off,
			   kfab_hfi_eager_bytes(eager_count, eager_size), rw);
	if (!r.eager)
		goto err;
	ret = kfab_hfi_ring_init(ring, r.ctrl, r.rhq, r.eager, rhq_entries,
				 eager_count, eager_size);
	if (ret) {
		kfab_hfi_unmap_ring(&r);
		return kfab_log_err(ret, "bad queue geometry %u/%u/%u",
				    rhq_entries, eager_count, eager_size);
	}
	return 0;
err:
	ret = -errno;
	kfab_hfi_unmap_ring(&r);
	return kfab_log_err(ret, "mmap of the queues");
}

int kfab_hfi_open(enum kfab_backend backend, unsigned int unit,
		  struct kfab_hfi_dev **dev)
{
	*dev = NULL;
	switch (backend) {
	case KFAB_BACKEND_KMOD:
		return kfab_hfi_kmod_open(unit, dev);
	case KFAB_BACKEND_SHM:
		return kfab_hfi_shm_open(unit, dev);
	case KFAB_BACKEND_AUTO:
		if (kfab_hfi_kmod_present(unit))
			return kfab_hfi_kmod_open(unit, dev);
		kfab_log(KFAB_LOG_INFO,
			 "hfi%u: /dev/kfab_hfi%u absent, using the shm backend",
			 unit, unit);
		return kfab_hfi_shm_open(unit, dev);
	}
	return kfab_log_err(-EINVAL, "hfi%u: unknown backend %d", unit,
			    (int)backend);
}

int kfab_hfi_peer_send(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		       const void *hdr, size_t hdrlen, const void *payload,
		       size_t len)
{
	int ret = kfab_hfi_ring_send(&peer->ring, hdr, hdrlen, payload, len);

	if (ret == KFAB_HFI_RING_NOTIFY)
		ret = kfab_hfi_notify(dev, peer);
	return ret;
}

void kfab_hfi_peer_link(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	peer->next = dev->peers;
	dev->peers = peer;
}

int kfab_hfi_peer_unlink(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	for (struct kfab_hfi_peer **pp = &dev->peers; *pp; pp = &(*pp)->next) {
		if (*pp == peer) {
			*pp = peer->next;
			peer->next = NULL;
			return 0;
		}
	}
	return kfab_log_err(-EINVAL, "hfi%u: unknown peer %p", dev->unit,
			    (void *)peer);
}
