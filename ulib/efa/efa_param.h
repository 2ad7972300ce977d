/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the runtime parameters of kfab_efa, fi_efa(7)'s FI_EFA_* under
 * their documented names, plus FI_KFAB_BACKEND.
 *
 * efa_params_load() reads and validates every variable (kfab_param.h's
 * rules: unset or empty is the default, integers decimal or 0x hex);
 * a bad value fails it with -FI_EINVAL after a warning that names the
 * variable, the value and what is allowed.
 *
 * Defaults are fi_efa(7)'s where it gives one, else libfabric's efa
 * provider of v1.17 (PROTOCOLS.md section 1), else ours; ranges fi_efa(7)
 * leaves open are ours. "0: the device's" means the domain takes the
 * value from the opened device.
 */
#ifndef KFAB_ULIB_EFA_PARAM_H
#define KFAB_ULIB_EFA_PARAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/kfab_param.h"
#include "dev/efa_dev.h"

/* FI_EFA_IFACE names devices efa0..efa<EFA_IFACE_MAX - 1>. */
#define EFA_IFACE_MAX		64

/* Microseconds; libfabric's efa caps FI_EFA_MAX_TIMEOUT at INT_MAX/2 - 1. */
#define EFA_TIMEOUT_MAX		1073741822

enum efa_tristate {
	EFA_UNSET,
	EFA_OFF,
	EFA_ON,
};

struct efa_params {
	/* FI_EFA_IFACE: "all" (default), or efa<N> for each bit N */
	bool iface_all;
	uint64_t iface_mask;
	/* 0..1048576, default 0: the device's */
	size_t tx_size;				/* FI_EFA_TX_SIZE */
	size_t rx_size;				/* FI_EFA_RX_SIZE */
	/*
	 * Packets a receiver lets one long-CTS message have in flight:
	 * 1..65536, default 128 (libfabric's before it dropped the
	 * variable). Not an alias of RECVWIN_SIZE: fi_efa(7) gives them
	 * different meanings.
	 */
	size_t rx_window_size;
	/* 0..4096 (the deepest ring of kfab's devices), 0: the device's */
	size_t tx_queue_size;			/* no effect: no send queue */
	/*
	 * Reorder window in messages: 1..1048576, default 16384; rounded up
	 * to the power of two the circular window needs.
	 */
	size_t recvwin_size;			/* FI_EFA_RECVWIN_SIZE */
	size_t cq_size;			/* 1..1048576, 8192; no effect */
	bool mr_cache_enable;			/* default yes */
	/* 0..65536, default 0: 90% of the device's max_mrs, as efa's */
	size_t mr_max_cached_count;
	/* bytes, default 0: no limit but RLIMIT_MEMLOCK */
	size_t mr_max_cached_size;
	size_t max_memcpy_size;		/* 0..1 GiB, 4096; no effect */
	/* 0 (default: the device's) or 512..32768, libfabric 1.17's cap */
	size_t mtu_size;			/* FI_EFA_MTU_SIZE */
	/* both always in effect: every packet is copied out of the ring */
	bool rx_copy_unexp;			/* default yes */
	bool rx_copy_ooo;			/* default yes */
	/*
	 * RNR backoff, microseconds: MAX_TIMEOUT 1..EFA_TIMEOUT_MAX,
	 * default 1000000; TIMEOUT_INTERVAL 0..MAX_TIMEOUT, default 0: a
	 * random start.
	 */
	uint32_t max_timeout;
	uint32_t timeout_interval;
	/*
	 * No effect: kfab has no SHM peer provider, every peer is reached
	 * through the device. Default yes, SHM_AV_SIZE 1..256 (shm's AV
	 * limit), default 128; SHM_MAX_MEDIUM_SIZE is deprecated, default
	 * 4096.
	 */
	bool enable_shm_transfer;
	size_t shm_av_size;
	size_t shm_max_medium_size;
	size_t inter_max_medium_message_size;	/* 65536 */
	bool fork_safe;				/* default no */
	/*
	 * fi_efa(7)'s 307200, though libfabric's efa uses 0 for host
	 * memory (PROTOCOLS.md section 1).
	 */
	size_t runt_size;			/* FI_EFA_RUNT_SIZE */
	/*
	 * 1048576. Not bounded by INTER_MAX_MEDIUM_MESSAGE_SIZE: the read
	 * protocol is tried first, medium only without RDMA read.
	 */
	size_t inter_min_read_message_size;
	size_t inter_min_read_write_size;	/* 65536 */
	/* unset: as the device allows; an endpoint option may not differ */
	enum efa_tristate use_device_rdma;	/* FI_EFA_USE_DEVICE_RDMA */
	/*
	 * Default: !fork_safe; 1 with FI_EFA_FORK_SAFE=1 is refused. No
	 * effect: kfab's internal buffers are ordinary pages.
	 */
	bool use_huge_page;
	/* no effect: packets land in the ring's buffers; none unsolicited */
	bool use_zcpy_rx;			/* default yes */
	bool use_unsolicited_write_recv;	/* default yes */
	size_t internal_rx_refill_threshold;	/* 1..4096, 8 */
	/*
	 * FI_KFAB_BACKEND, never AUTO after a load: kmod when
	 * /dev/kfab_efa<N> exists for the first device FI_EFA_IFACE admits.
	 */
	enum kfab_backend backend;
};

/* The variables, for fi_info -e: defined once, by fi_prov_ini(). */
extern const struct kfab_param_table efa_param_table;

/* Reads and validates them: 0 or -FI_EINVAL (logged). */
int efa_params_load(struct efa_params *p);

/* Whether FI_EFA_IFACE admits device efa<device>. */
bool efa_iface_match(const struct efa_params *p, unsigned int device);

#endif /* KFAB_ULIB_EFA_PARAM_H */
