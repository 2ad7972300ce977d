/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the shm EFA backend's own header, shared by its files:
 * efa_backend_shm.c (the device file, peers, knobs; the format is
 * described there), efa_shm_qp.c (QP files and reaping), efa_shm_mr.c
 * (memory regions and RDMA).
 */
#ifndef KFAB_ULIB_EFA_SHM_H
#define KFAB_ULIB_EFA_SHM_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/types.h>

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

static inline bool shm_down(const struct kfab_efa_status *st)
{
	return kfab_shm_load32(&st->state) == KFAB_EFA_STATE_DOWN;
}

static inline uint32_t shm_random_key(void)
{
	uint32_t k = 0;

	while (!k)
		if (getrandom(&k, sizeof(k), 0) != (ssize_t)sizeof(k))
			k = (uint32_t)random();
	return k;
}

/* ------------------------------------------------------------------ */
/* environment and paths */

static inline int shm_path(const struct shm_dev *sd, unsigned int device,
		    const char *name, char *buf, size_t len)
{
	return kfab_shm_path(&sd->base, "efa", device, name, buf, len);
}

static inline int shm_qp_path(const struct shm_dev *sd, unsigned int device,
		       uint32_t qpn, bool wake, char *buf, size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "qp%u%s", qpn, wake ? ".wake" : "");
	return shm_path(sd, device, name, buf, len);
}

static inline int shm_mr_path(const struct shm_dev *sd, unsigned int device,
		       uint32_t rkey, char *buf, size_t len)
{
	char name[32];

	snprintf(name, sizeof(name), "mr%08x", rkey);
	return shm_path(sd, device, name, buf, len);
}

/* ------------------------------------------------------------------ */
/* owners */

static inline void shm_owner_self(struct shm_owner *o)
{
	o->pid = (int32_t)getpid();
	o->uid = (uint32_t)geteuid();
	o->start = kfab_shm_start_time(o->pid);
}

static inline bool shm_owner_alive(const struct shm_owner *o)
{
	return kfab_shm_alive(o->pid, o->start);
}

static inline bool shm_owner_same(const struct shm_owner *a,
			   const struct shm_owner *b)
{
	return a->pid == b->pid && a->start == b->start && a->pd == b->pd;
}

/* efa_shm_qp.c */
enum shm_kind { SHM_QP, SHM_MR, SHM_TMP, SHM_OTHER };
int efa_shm_reap(const char *path, enum shm_kind kind);
int efa_shm_sweep(const struct shm_dev *sd, unsigned int device, bool mrs);
void efa_shm_qp_free(struct shm_dev *sd, struct shm_qp *sq, bool files);
int efa_shm_create_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp **out);
int efa_shm_destroy_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp);
void efa_shm_wake_drain(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp);
int efa_shm_peer_attach(struct shm_dev *sd, struct shm_peer *sp, uint32_t qpn,
			uint32_t qkey);

/* efa_shm_mr.c */
int efa_shm_reg_mr(struct kfab_efa_dev *dev, void *addr, size_t len,
		   uint32_t access, struct kfab_efa_mr *mr);
int efa_shm_dereg_mr(struct kfab_efa_dev *dev, struct kfab_efa_mr *mr);
void efa_shm_mr_release(struct shm_dev *sd, uint32_t slot, bool files);
int efa_shm_rdma(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer,
		 uint32_t op, uint32_t rkey, uint64_t remote_addr,
		 const struct iovec *iov, int iovcnt, uint32_t flags,
		 uint64_t *bytes);

/* efa_backend_shm.c */
int efa_shm_wake(struct shm_peer *sp);
bool efa_shm_peer_gone(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer);

#endif /* KFAB_ULIB_EFA_SHM_H */
