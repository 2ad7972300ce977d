/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fi_ext_kfab_efa.h: kfab_efa's extensions to the libfabric API, installed
 * as <rdma/fi_ext_kfab_efa.h> (fi_kfab_efa(7)).
 *
 *   endpoint options   fi_setopt()/fi_getopt() at FI_OPT_ENDPOINT level:
 *                      fi_efa(7)'s FI_OPT_EFA_*, and kfab's statistics
 *   domain ops         fi_open_ops(&domain->fid, FI_KFAB_EFA_DOMAIN_OPS,
 *                      0, (void **)&ops, NULL): query_mr()
 */
#ifndef FI_EXT_KFAB_EFA_H
#define FI_EXT_KFAB_EFA_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext.h>

/*
 * libfabric 1.17's fi_ext.h names FI_OPT_EFA_RNR_RETRY only; the others
 * take the values later versions give them.
 */
#if FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION < 18
#define FI_OPT_EFA_EMULATED_READ			(FI_OPT_EFA_RNR_RETRY + 1)
#define FI_OPT_EFA_EMULATED_WRITE			(FI_OPT_EFA_RNR_RETRY + 2)
#define FI_OPT_EFA_EMULATED_ATOMICS			(FI_OPT_EFA_RNR_RETRY + 3)
#define FI_OPT_EFA_USE_DEVICE_RDMA			(FI_OPT_EFA_RNR_RETRY + 4)
#define FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES	(FI_OPT_EFA_RNR_RETRY + 5)
#define FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES	(FI_OPT_EFA_RNR_RETRY + 6)
#endif

/*
 * fi_getopt() only, struct fi_kfab_efa_ep_stats: what the endpoint's
 * protocols did since it was opened.
 */
#define FI_OPT_KFAB_EFA_STATS		(-FI_PROV_SPECIFIC_EFA - 0x100)

struct fi_kfab_efa_ep_stats {
	/* messages sent by each protocol (fi_efa(7), "protocols") */
	uint64_t eager_msgs;
	uint64_t medium_msgs;
	uint64_t longcts_msgs;
	uint64_t longread_msgs;
	uint64_t runtread_msgs;
	/* RMA: by device RDMA or emulated through packets; atomics */
	uint64_t device_reads;
	uint64_t device_writes;
	uint64_t emulated_reads;
	uint64_t emulated_writes;
	uint64_t atomics;
	/* receiver not ready: attempts refused, backoffs entered */
	uint64_t rnr_retries;		/* refused sends the device retried */
	uint64_t rnr_events;		/* retries exhausted: a peer backed off */
	uint64_t rnr_backoff_max_usec;	/* the longest backoff chosen */
	uint64_t pkts_queued;		/* packets that waited for a peer */
	/* the receive side */
	uint64_t ooo_pkts;		/* requests held in a reorder window */
	uint64_t recvwin_overflows;	/* requests beyond the window */
	uint64_t unexp_msgs;
	uint64_t handshakes_sent;
	uint64_t handshakes_received;
	uint64_t eagain;		/* calls refused: no tx or rx entry */
	/* zero-copy receive (FI_EFA_USE_ZCPY_RX) */
	uint64_t zcpy_rx;		/* 1: receives are posted to the device */
	uint64_t zcpy_rx_msgs;		/* messages that landed in place */
	uint64_t zcpy_rx_reposts;	/* receives whose slot another took */
	uint64_t reserved[5];
};

/* fi_open_ops() name of the domain ops. */
#define FI_KFAB_EFA_DOMAIN_OPS		"kfab_efa domain ops v1"

/* query_mr(): a memory region as the device sees it. */
struct fi_kfab_efa_mr_attr {
	uint32_t device;	/* N of efa<N> */
	uint32_t lkey;		/* the device's local handle */
	uint32_t rkey;		/* what peers name: fi_mr_key() */
	uint32_t state;		/* FI_KFAB_EFA_MR_* */
	uint64_t addr;		/* first byte registered */
	uint64_t len;
	uint32_t access;	/* FI_KFAB_EFA_ACCESS_* */
	uint32_t pad;
	uint64_t reserved[4];
};

#define FI_KFAB_EFA_MR_VALID		1
/* the pages were unmapped or remapped since: device RDMA fails */
#define FI_KFAB_EFA_MR_STALE		2
/*
 * the pages may have changed (madvise, a huge page split...): the next
 * device RDMA through it finds out, and it turns VALID or STALE
 */
#define FI_KFAB_EFA_MR_SUSPECT		3

#define FI_KFAB_EFA_ACCESS_LOCAL_WRITE	0x1U
#define FI_KFAB_EFA_ACCESS_REMOTE_READ	0x2U
#define FI_KFAB_EFA_ACCESS_REMOTE_WRITE	0x4U

struct fi_kfab_efa_ops_domain {
	size_t size;		/* sizeof(struct fi_kfab_efa_ops_domain) */
	/* 0, or -FI_EINVAL for a region not of a kfab_efa domain */
	int (*query_mr)(struct fid_mr *mr, struct fi_kfab_efa_mr_attr *attr);
};

#endif /* FI_EXT_KFAB_EFA_H */
