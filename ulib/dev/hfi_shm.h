/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the shm HFI backend's own header, shared by its files:
 * hfi_backend_shm.c (the unit file, peers, knobs; the format is described
 * there), hfi_shm_ctxt.c (context files: claiming, assigning, listing,
 * reaping), hfi_shm_tid.c (the TID table and SDMA).
 */
#ifndef KFAB_ULIB_HFI_SHM_H
#define KFAB_ULIB_HFI_SHM_H

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

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

static inline __u64 shm_load64(const __u64 *p)
{
	return atomic_load_explicit((const _Atomic __u64 *)p,
				    memory_order_relaxed);
}

static inline bool shm_down(const struct kfab_hfi_status *st)
{
	return kfab_shm_load32(&st->state) == KFAB_HFI_STATE_DOWN;
}

static inline int shm_ctxt_path(const struct shm_dev *sd, unsigned int unit,
			 uint32_t ctxt, const char *suffix, char *buf,
			 size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "ctxt%u%s", ctxt, suffix);
	return kfab_shm_path(&sd->base, "hfi", unit, name, buf, len);
}


/* hfi_backend_shm.c */
int hfi_shm_unit_open(const struct shm_dev *sd, unsigned int unit, int flags,
		      int *fdp, struct shm_unit **up);
void hfi_shm_unit_release(const struct shm_dev *sd, unsigned int unit,
			  int fd);
int hfi_shm_notify(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer);

/* hfi_shm_ctxt.c */
bool hfi_shm_hdr_sane(const struct shm_hdr *h, off_t file_size);
void hfi_shm_release_ctxt(struct shm_dev *sd);
int hfi_shm_assign(struct kfab_hfi_dev *dev, const uint8_t uuid[16],
		   uint16_t pkey, uint8_t sl);
int hfi_shm_list_ctxts(struct kfab_hfi_dev *dev,
		       struct kfab_hfi_ctxt_desc *descs, uint32_t max,
		       uint32_t *total);

/* hfi_shm_tid.c */
int hfi_shm_tid_update(struct kfab_hfi_dev *dev, void *addr, size_t len,
		       uint32_t *handle);
int hfi_shm_tid_free(struct kfab_hfi_dev *dev, uint32_t handle);
int hfi_shm_tid_lookup(const struct shm_hdr *h, uint32_t handle,
		       uint64_t *addr, uint64_t *len);
int hfi_shm_sdma(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		 uint32_t tid, uint64_t offset, const struct iovec *iov,
		 int iovcnt, uint32_t flags, uint64_t *bytes);

#endif /* KFAB_ULIB_HFI_SHM_H */
