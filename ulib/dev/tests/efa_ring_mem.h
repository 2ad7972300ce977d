/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What efa_ring_test and efa_ring_mp_test share: a QP's ring, control and
 * status pages in anonymous shared memory laid out as the kernel's, and
 * the owner's and producers' views of it.
 */
#ifndef KFAB_ULIB_EFA_RING_MEM_H
#define KFAB_ULIB_EFA_RING_MEM_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dev/efa_ring.h"
#include "tests/xproc.h"

#define PAGE		4096
#define NS		1000000000ULL
/* every wait of the test is bounded by this */
#define DEADLINE_NS	(20 * NS)

struct mem {
	void *base;
	size_t len;
	struct kfab_efa_qp_ctrl *ctrl;
	struct kfab_efa_status *status;
	struct kfab_efa_rx_entry *ring;
	uint8_t *bufs;
	uint32_t entries;
	uint32_t mtu;
};

/* ctrl, status, ring and bufs in one MAP_SHARED mapping: fork() shares it */
static inline void mem_ring(struct mem *m, struct kfab_efa_ring *r, uint32_t entries,
		     uint32_t mtu)
{
	size_t rlen = ((size_t)entries * sizeof(struct kfab_efa_rx_entry) +
		       PAGE - 1) & ~(size_t)(PAGE - 1);
	uint8_t *p;

	m->len = 2 * PAGE + rlen + (size_t)entries * mtu;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m->base == MAP_FAILED) {
		tap_diag("mmap of %zu bytes: %s", m->len, strerror(errno));
		exit(1);
	}
	p = m->base;
	m->ctrl = (struct kfab_efa_qp_ctrl *)p;
	m->status = (struct kfab_efa_status *)(p + PAGE);
	m->ring = (struct kfab_efa_rx_entry *)(p + 2 * PAGE);
	m->bufs = p + 2 * PAGE + rlen;
	m->entries = entries;
	m->mtu = mtu;
	if (kfab_efa_ring_init(r, m->ctrl, m->ring, m->bufs, entries, mtu,
			       NULL)) {
		tap_diag("kfab_efa_ring_init(%u, %u) failed", entries, mtu);
		exit(1);
	}
}

/* A producer's view of @m, with the status page or without. */
static inline void mem_peer(struct mem *m, struct kfab_efa_ring *pr, bool status)
{
	kfab_efa_ring_init(pr, m->ctrl, m->ring, m->bufs, m->entries, m->mtu,
			   status ? m->status : NULL);
}

static inline void mem_free(struct mem *m)
{
	munmap(m->base, m->len);
}

static inline void set_ppm(struct mem *m, uint32_t ppm)
{
	atomic_store((_Atomic __u32 *)&m->status->rnr_inject_ppm, ppm);
}

static inline uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* Consumes the entry at the head and posts its buffer again. */
static inline bool consume(struct kfab_efa_ring *r)
{
	struct kfab_efa_ring_entry e;

	return kfab_efa_ring_poll(r, &e) == 1 && !kfab_efa_ring_release(r) &&
	       kfab_efa_ring_post(r, 1) == 1;
}

static const uint8_t gid0[KFAB_EFA_GID_LEN] = { 0xfe, 0x80, 1, 2, 3 };

#endif /* KFAB_ULIB_EFA_RING_MEM_H */
