// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the runtime parameters of kfab_efa (fi_efa(7) names and
 * defaults, the ranges efa_param.h gives) and FI_EFA_IFACE.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "efa_param.h"
#include "core/kfab_param.h"
#include "core/kfab_log.h"

#define SIZE_LIMIT		1048576
#define RING_MAX		4096
#define MEMCPY_MAX		1073741824
#define MTU_MIN			512
#define MTU_MAX			32768

static const struct kfab_param_def efa_param_defs[] = {
	{ "iface", FI_PARAM_STRING,
	  "EFA devices visible to the application: all, or device names separated by commas (efa0,efa1; efa0..efa63). Default all." },
	{ "tx_size", FI_PARAM_SIZE_T,
	  "Transmit operations before the provider returns -FI_EAGAIN (the RDM endpoint queues past the device's queue). 0..1048576, 0: the device's. Default 0." },
	{ "rx_size", FI_PARAM_SIZE_T,
	  "Receive operations before the provider returns -FI_EAGAIN. 0..1048576, 0: the device's. Default 0." },
	{ "rx_window_size", FI_PARAM_SIZE_T,
	  "RDM: MTU-sized packets one endpoint may have in flight for a long message. 1..65536. Default 128." },
	{ "tx_queue_size", FI_PARAM_SIZE_T,
	  "RDM: depth of the transmit queue opened with the device. Accepted, without effect: a kfab QP has no send queue, packets go straight into the peer's ring. 0..4096, 0: the device's. Default 0." },
	{ "recvwin_size", FI_PARAM_SIZE_T,
	  "RDM: out-of-order reorder window, in messages, rounded up to a power of two; messages beyond it are an error. 1..1048576. Default 16384." },
	{ "cq_size", FI_PARAM_SIZE_T,
	  "RDM: entries of every CQ created. Accepted, without effect: kfab CQs take cq_attr.size and never drop (they overflow into a list). 1..1048576. Default 8192." },
	{ "mr_cache_enable", FI_PARAM_BOOL,
	  "RDM: cache the registrations of send buffers the read protocols expose to peers (never a stale one); off: one registration per message. Boolean. Default yes." },
	{ "mr_max_cached_count", FI_PARAM_SIZE_T,
	  "RDM: most registrations cached at a time. 0..65536, 0: 90% of the device's limit. Default 0." },
	{ "mr_max_cached_size", FI_PARAM_SIZE_T,
	  "RDM: most bytes cached registrations hold at a time. 0: no limit but RLIMIT_MEMLOCK. Default 0." },
	{ "max_memcpy_size", FI_PARAM_SIZE_T,
	  "RDM: largest iov, in bytes, copied into a pre-registered bounce buffer rather than registered. Accepted, without effect: only the read protocols register, from FI_EFA_INTER_MIN_READ_MESSAGE_SIZE. 0..1073741824. Default 4096." },
	{ "mtu_size", FI_PARAM_SIZE_T,
	  "RDM: lowers the device's MTU, in bytes. 0 (the device's) or 512..32768. Default 0." },
	{ "rx_copy_unexp", FI_PARAM_BOOL,
	  "RDM: copy unexpected messages out of the posted receive buffers into a separate pool. Accepted, always in effect: the device's ring is consumed in order, so every packet is copied out. Boolean. Default yes." },
	{ "rx_copy_ooo", FI_PARAM_BOOL,
	  "RDM: copy out-of-order RTS packets out of the posted receive buffers into a separate pool. Accepted, always in effect (as FI_EFA_RX_COPY_UNEXP). Boolean. Default yes." },
	{ "max_timeout", FI_PARAM_INT,
	  "RDM: longest backoff, in microseconds, from a peer after a receiver-not-ready error. 1..1073741822, at least FI_EFA_TIMEOUT_INTERVAL. Default 1000000." },
	{ "timeout_interval", FI_PARAM_INT,
	  "RDM: first backoff, in microseconds, doubled after each receiver-not-ready error up to FI_EFA_MAX_TIMEOUT. 0 (random, 40..120) up to FI_EFA_MAX_TIMEOUT. Default 0." },
	{ "enable_shm_transfer", FI_PARAM_BOOL,
	  "RDM: use the SHM provider for peers on this node. Accepted, without effect: kfab reaches every peer through the device. Boolean. Default yes." },
	{ "shm_av_size", FI_PARAM_SIZE_T,
	  "RDM: entries of the SHM provider's AV. Accepted, without effect (no SHM provider in kfab). 1..256. Default 128." },
	{ "shm_max_medium_size", FI_PARAM_SIZE_T,
	  "Deprecated. RDM: SHM's switch from medium to large messages. Accepted, without effect. Default 4096." },
	{ "inter_max_medium_message_size", FI_PARAM_SIZE_T,
	  "RDM: largest message, in bytes, sent with the medium protocol; larger ones use long-CTS (or read, see FI_EFA_INTER_MIN_READ_MESSAGE_SIZE). Default 65536." },
	{ "fork_safe", FI_PARAM_BOOL,
	  "Support fork(): off by default for speed; excludes huge pages. Boolean. Default no." },
	{ "runt_size", FI_PARAM_SIZE_T,
	  "RDM: most bytes in flight sent eagerly as runts by messages of the runting read protocol. Default 307200." },
	{ "inter_min_read_message_size", FI_PARAM_SIZE_T,
	  "RDM: smallest message, in bytes, sent with the read protocol when device RDMA read is available; tried before eager and medium. Default 1048576." },
	{ "inter_min_read_write_size", FI_PARAM_SIZE_T,
	  "RDM: smallest fi_write, in bytes, done by device RDMA write when the device has it; smaller ones, and writes with CQ data, are emulated. Default 65536." },
	{ "use_device_rdma", FI_PARAM_BOOL,
	  "Device RDMA: on requires it (fails without it), off emulates all RMA, unset uses it where the device has it. Boolean. Default unset." },
	{ "use_huge_page", FI_PARAM_BOOL,
	  "Huge pages for internal buffers. Accepted, without effect: kfab uses ordinary pages. Not on with FI_EFA_FORK_SAFE. Boolean. Default: yes unless FI_EFA_FORK_SAFE is on." },
	{ "use_zcpy_rx", FI_PARAM_BOOL,
	  "RDM: post the application's receives to the device as ring slots, so that a message lands in its buffer with no copy, when the endpoint's fi_info allows it: caps FI_MSG alone (no FI_TAGGED, FI_DIRECTED_RECV, FI_MULTI_RECV, FI_RMA, FI_ATOMIC), no FI_ORDER_SAS, max_msg_size at most one packet, no FI_DELIVERY_COMPLETE. Boolean. Default yes." },
	{ "use_unsolicited_write_recv", FI_PARAM_BOOL,
	  "RDM: the device's unsolicited write receive, when it has it. Accepted, without effect: kfab devices have none. Boolean. Default yes." },
	{ "internal_rx_refill_threshold", FI_PARAM_SIZE_T,
	  "RDM: fewest internal receive packets reposted at a time (at most half the ring); fewer wait until the endpoint sleeps. 1..4096. Default 8." },
};

const struct kfab_param_table efa_param_table =
	KFAB_PARAM_TABLE("efa", efa_param_defs);

/* ------------------------------------------------------------------ */
/* FI_EFA_IFACE */

/* efa<N> in @len characters, N decimal without leading zeros. */
static int iface_name(const char *s, size_t len, unsigned int *dev)
{
	unsigned int n = 0;

	if (len < 4 || memcmp(s, "efa", 3) || (s[3] == '0' && len > 4))
		return -FI_EINVAL;
	for (size_t i = 3; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -FI_EINVAL;
		n = n * 10 + (unsigned int)(s[i] - '0');
		if (n >= EFA_IFACE_MAX)
			return -FI_EINVAL;
	}
	*dev = n;
	return 0;
}

static int iface_load(struct efa_params *p)
{
	const char *s = getenv("FI_EFA_IFACE");
	const char *f;

	p->iface_all = true;
	p->iface_mask = 0;
	if (!s || !*s || !strcmp(s, "all"))
		return 0;
	p->iface_all = false;
	for (f = s;; f++) {
		size_t len = strcspn(f, ",");
		unsigned int dev;

		if (!len) {
			kfab_log(KFAB_LOG_WARN,
				 "FI_EFA_IFACE=%s: empty device name: use all, or efa<N> (N in 0..%d) separated by commas (default all)",
				 s, EFA_IFACE_MAX - 1);
			return -FI_EINVAL;
		}
		if (iface_name(f, len, &dev)) {
			kfab_log(KFAB_LOG_WARN,
				 "FI_EFA_IFACE=%s: \"%.*s\" is not a device name: use all alone, or efa<N> (N in 0..%d, no leading zeros) separated by commas (default all)",
				 s, (int)(len > 64 ? 64 : len), f,
				 EFA_IFACE_MAX - 1);
			return -FI_EINVAL;
		}
		if (p->iface_mask & (1ULL << dev)) {
			kfab_log(KFAB_LOG_WARN,
				 "FI_EFA_IFACE=%s: efa%u is listed twice", s,
				 dev);
			return -FI_EINVAL;
		}
		p->iface_mask |= 1ULL << dev;
		f += len;
		if (!*f)
			return 0;
	}
}

bool efa_iface_match(const struct efa_params *p, unsigned int device)
{
	return p->iface_all ||
	       (device < EFA_IFACE_MAX && (p->iface_mask >> device & 1));
}

/* ------------------------------------------------------------------ */
/* values with a shape of their own */

/* 0 (the device's MTU) or MTU_MIN..MTU_MAX */
static int mtu_load(size_t *mtu)
{
	const char *name = "FI_EFA_MTU_SIZE";
	int ret = kfab_env_size(name, 0, 0, MTU_MAX, mtu);

	if (!ret && *mtu && *mtu < MTU_MIN) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be 0 (the device's MTU) or an integer in %d..%d (default 0)",
			 name, getenv(name), MTU_MIN, MTU_MAX);
		*mtu = 0;
		ret = -FI_EINVAL;
	}
	return ret;
}

static int recvwin_load(size_t *win)
{
	const char *name = "FI_EFA_RECVWIN_SIZE";
	int ret = kfab_env_size(name, 16384, 1, SIZE_LIMIT, win);
	size_t pow2 = 1;

	while (pow2 < *win)
		pow2 <<= 1;
	if (pow2 != *win) {
		kfab_log(KFAB_LOG_INFO, "%s=%s: using %zu, a power of two",
			 name, getenv(name), pow2);
		*win = pow2;
	}
	return ret;
}

/* A boolean that may also be unset. */
static int tristate_load(const char *name, const char *unset,
			 enum efa_tristate *val)
{
	const char *s = getenv(name);
	bool b;

	*val = EFA_UNSET;
	if (!s || !*s)
		return 0;
	if (kfab_parse_bool(s, &b)) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be a boolean: 0/1, on/off, true/false or yes/no (default unset: %s)",
			 name, s, unset);
		return -FI_EINVAL;
	}
	*val = b ? EFA_ON : EFA_OFF;
	return 0;
}

/* After FI_EFA_FORK_SAFE, which sets its default. */
static int huge_page_load(struct efa_params *p)
{
	enum efa_tristate v;
	int ret = tristate_load("FI_EFA_USE_HUGE_PAGE",
				"yes unless FI_EFA_FORK_SAFE is on", &v);

	p->use_huge_page = v == EFA_UNSET ? !p->fork_safe : v == EFA_ON;
	if (!ret && v == EFA_ON && p->fork_safe) {
		kfab_log(KFAB_LOG_WARN,
			 "FI_EFA_USE_HUGE_PAGE=%s with FI_EFA_FORK_SAFE=%s: huge pages are not fork-safe: turn one of them off",
			 getenv("FI_EFA_USE_HUGE_PAGE"),
			 getenv("FI_EFA_FORK_SAFE"));
		ret = -FI_EINVAL;
	}
	return ret;
}

/* After MAX_TIMEOUT, its upper bound. */
static int timeout_interval_load(struct efa_params *p)
{
	const char *name = "FI_EFA_TIMEOUT_INTERVAL";
	int ret = kfab_env_u32(name, 0, 0, EFA_TIMEOUT_MAX,
			       &p->timeout_interval);

	if (!ret && p->timeout_interval > p->max_timeout) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be 0 (random) or at most FI_EFA_MAX_TIMEOUT (%u; range 0..%u, default 0)",
			 name, getenv(name), p->max_timeout, p->max_timeout);
		p->timeout_interval = 0;
		ret = -FI_EINVAL;
	}
	return ret;
}

static int shm_max_medium_load(size_t *val)
{
	const char *name = "FI_EFA_SHM_MAX_MEDIUM_SIZE";
	const char *s = getenv(name);

	if (s && *s)
		kfab_log(KFAB_LOG_WARN,
			 "%s is deprecated and has no effect in kfab", name);
	return kfab_env_size(name, 4096, 0, SIZE_MAX, val);
}

/* After FI_EFA_IFACE: auto looks at the first device it admits. */
static int backend_load(struct efa_params *p)
{
	unsigned int dev = 0;

	if (!p->iface_all && p->iface_mask)
		dev = (unsigned int)__builtin_ctzll(p->iface_mask);
	return kfab_backend_get(kfab_efa_kmod_present(dev), "/dev/kfab_efa<N>",
				&p->backend);
}

/* ------------------------------------------------------------------ */
/* efa_params_load */

int efa_params_load(struct efa_params *p)
{
	int err = 0;

	memset(p, 0, sizeof(*p));
	kfab_keep_first(&err, iface_load(p));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_TX_SIZE", 0, 0, SIZE_LIMIT,
					    &p->tx_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_RX_SIZE", 0, 0, SIZE_LIMIT,
					    &p->rx_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_RX_WINDOW_SIZE", 128, 1,
					    65536, &p->rx_window_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_TX_QUEUE_SIZE", 0, 0,
					    RING_MAX, &p->tx_queue_size));
	kfab_keep_first(&err, recvwin_load(&p->recvwin_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_CQ_SIZE", 8192, 1,
					    SIZE_LIMIT, &p->cq_size));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_MR_CACHE_ENABLE", true,
					    &p->mr_cache_enable));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_MR_MAX_CACHED_COUNT", 0, 0,
					    65536, &p->mr_max_cached_count));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_MR_MAX_CACHED_SIZE", 0, 0,
					    SIZE_MAX, &p->mr_max_cached_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_MAX_MEMCPY_SIZE", 4096, 0,
					    MEMCPY_MAX, &p->max_memcpy_size));
	kfab_keep_first(&err, mtu_load(&p->mtu_size));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_RX_COPY_UNEXP", true,
					    &p->rx_copy_unexp));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_RX_COPY_OOO", true,
					    &p->rx_copy_ooo));
	kfab_keep_first(&err, kfab_env_u32("FI_EFA_MAX_TIMEOUT", 1000000, 1,
					   EFA_TIMEOUT_MAX, &p->max_timeout));
	kfab_keep_first(&err, timeout_interval_load(p));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_ENABLE_SHM_TRANSFER", true,
					    &p->enable_shm_transfer));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_SHM_AV_SIZE", 128, 1, 256,
					    &p->shm_av_size));
	kfab_keep_first(&err, shm_max_medium_load(&p->shm_max_medium_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE",
					    65536, 0, SIZE_MAX,
					    &p->inter_max_medium_message_size));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_FORK_SAFE", false,
					    &p->fork_safe));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_RUNT_SIZE", 307200, 0,
					    SIZE_MAX, &p->runt_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_INTER_MIN_READ_MESSAGE_SIZE",
					    1048576, 0, SIZE_MAX,
					    &p->inter_min_read_message_size));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_INTER_MIN_READ_WRITE_SIZE",
					    65536, 0, SIZE_MAX,
					    &p->inter_min_read_write_size));
	kfab_keep_first(&err, tristate_load("FI_EFA_USE_DEVICE_RDMA",
					    "as the device allows",
					    &p->use_device_rdma));
	kfab_keep_first(&err, huge_page_load(p));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_USE_ZCPY_RX", true,
					    &p->use_zcpy_rx));
	kfab_keep_first(&err, kfab_env_bool("FI_EFA_USE_UNSOLICITED_WRITE_RECV",
					    true,
					    &p->use_unsolicited_write_recv));
	kfab_keep_first(&err, kfab_env_size("FI_EFA_INTERNAL_RX_REFILL_THRESHOLD",
					    8, 1, RING_MAX,
					    &p->internal_rx_refill_threshold));
	kfab_keep_first(&err, backend_load(p));
	return err;
}
