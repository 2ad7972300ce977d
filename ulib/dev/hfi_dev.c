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
#include "ring.h"

void kfab_hfi_ring_parts(uint32_t rhq_entries, uint32_t eager_count,
			 uint32_t eager_size, struct kfab_ring_parts *p)
{
	kfab_ring_size(p, rhq_entries, sizeof(struct kfab_hfi_rhq_entry),
		       eager_count, eager_size);
}

void kfab_hfi_unmap_ring(struct kfab_hfi_ring *ring)
{
	struct kfab_ring_parts p;

	kfab_hfi_ring_parts(ring->rhq_entries, ring->eager_count,
			    ring->eager_size, &p);
	kfab_ring_unmap((void *[3]){ ring->ctrl, ring->rhq, ring->eager },
			p.len);
	*ring = (struct kfab_hfi_ring){ 0 };
}

int kfab_hfi_map_ring(int fd, uint64_t ctrl_off, uint64_t rhq_off,
		      uint64_t eager_off, uint32_t rhq_entries,
		      uint32_t eager_count, uint32_t eager_size,
		      struct kfab_hfi_ring *ring)
{
	struct kfab_ring_parts p = { .off = { ctrl_off, rhq_off, eager_off } };
	void *m[3];
	int ret;

	kfab_hfi_ring_parts(rhq_entries, eager_count, eager_size, &p);
	ret = kfab_ring_map(fd, &p, m);
	if (!ret && kfab_hfi_ring_init(ring, m[0], m[1], m[2], rhq_entries,
				       eager_count, eager_size)) {
		kfab_ring_unmap(m, p.len);
		ret = kfab_log_err(-EINVAL, "bad queue geometry %u/%u/%u",
				   rhq_entries, eager_count, eager_size);
	}
	return ret;
}

int kfab_hfi_open(enum kfab_backend backend, unsigned int unit,
		  struct kfab_hfi_dev **dev)
{
	int ret = kfab_backend_resolve(&backend, "hfi", unit);

	*dev = NULL;
	if (ret)
		return ret;
	return backend == KFAB_BACKEND_KMOD ? kfab_hfi_kmod_open(unit, dev) :
					      kfab_hfi_shm_open(unit, dev);
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
