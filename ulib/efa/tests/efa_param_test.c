// SPDX-License-Identifier: GPL-2.0
/*
 * efa_param_test: every kfab_efa runtime parameter through setenv() and
 * efa_params_load() (defaults, valid values, each bound and one past it,
 * malformed values, each refusal naming the variable and the value), the
 * cross-variable rules, FI_EFA_IFACE's grammar and efa_iface_match(), and
 * the variables fi_getparams() (fi_info -e) lists.
 *
 * efa_params_load() reads the environment itself on every call, so each
 * case clears all the variables and sets its own in this process.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "efa/efa_param.h"
#include "tests/param_util.h"

static const char *const all_vars[] = {
	"FI_EFA_IFACE", "FI_EFA_TX_SIZE", "FI_EFA_RX_SIZE",
	"FI_EFA_RX_WINDOW_SIZE", "FI_EFA_TX_QUEUE_SIZE",
	"FI_EFA_RECVWIN_SIZE", "FI_EFA_CQ_SIZE", "FI_EFA_MR_CACHE_ENABLE",
	"FI_EFA_MR_MAX_CACHED_COUNT", "FI_EFA_MR_MAX_CACHED_SIZE",
	"FI_EFA_MAX_MEMCPY_SIZE", "FI_EFA_MTU_SIZE", "FI_EFA_RX_COPY_UNEXP",
	"FI_EFA_RX_COPY_OOO", "FI_EFA_MAX_TIMEOUT", "FI_EFA_TIMEOUT_INTERVAL",
	"FI_EFA_ENABLE_SHM_TRANSFER", "FI_EFA_SHM_AV_SIZE",
	"FI_EFA_SHM_MAX_MEDIUM_SIZE", "FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE",
	"FI_EFA_FORK_SAFE", "FI_EFA_RUNT_SIZE",
	"FI_EFA_INTER_MIN_READ_MESSAGE_SIZE",
	"FI_EFA_INTER_MIN_READ_WRITE_SIZE", "FI_EFA_USE_DEVICE_RDMA",
	"FI_EFA_USE_HUGE_PAGE", "FI_EFA_USE_ZCPY_RX",
	"FI_EFA_USE_UNSOLICITED_WRITE_RECV",
	"FI_EFA_INTERNAL_RX_REFILL_THRESHOLD", "FI_KFAB_BACKEND",
};

#define NVARS	(sizeof(all_vars) / sizeof(all_vars[0]))

/* ------------------------------------------------------------------ */
/* scalar parameters */

enum field {
	F_NONE,
	F_TX, F_RX, F_RXWIN, F_TXQ, F_RECVWIN, F_CQ, F_MRC, F_MRCOUNT,
	F_MRSIZE, F_MEMCPY, F_MTU, F_UNEXP, F_OOO, F_MAXTO, F_INTERVAL,
	F_SHM, F_SHMAV, F_SHMMED, F_MEDIUM, F_FORK, F_RUNT, F_READ,
	F_READWRITE, F_RDMA, F_HUGE, F_ZCPY, F_UWR, F_REFILL, F_BACKEND,
};

/* the record param_load() loads */
static struct efa_params rec;

static int param_load(void)
{
	return efa_params_load(&rec);
}

static uint64_t param_field(int f)
{
	const struct efa_params *p = &rec;

	switch ((enum field)f) {
	case F_TX:		return p->tx_size;
	case F_RX:		return p->rx_size;
	case F_RXWIN:		return p->rx_window_size;
	case F_TXQ:		return p->tx_queue_size;
	case F_RECVWIN:		return p->recvwin_size;
	case F_CQ:		return p->cq_size;
	case F_MRC:		return p->mr_cache_enable;
	case F_MRCOUNT:		return p->mr_max_cached_count;
	case F_MRSIZE:		return p->mr_max_cached_size;
	case F_MEMCPY:		return p->max_memcpy_size;
	case F_MTU:		return p->mtu_size;
	case F_UNEXP:		return p->rx_copy_unexp;
	case F_OOO:		return p->rx_copy_ooo;
	case F_MAXTO:		return p->max_timeout;
	case F_INTERVAL:	return p->timeout_interval;
	case F_SHM:		return p->enable_shm_transfer;
	case F_SHMAV:		return p->shm_av_size;
	case F_SHMMED:		return p->shm_max_medium_size;
	case F_MEDIUM:		return p->inter_max_medium_message_size;
	case F_FORK:		return p->fork_safe;
	case F_RUNT:		return p->runt_size;
	case F_READ:		return p->inter_min_read_message_size;
	case F_READWRITE:	return p->inter_min_read_write_size;
	case F_RDMA:		return p->use_device_rdma;
	case F_HUGE:		return p->use_huge_page;
	case F_ZCPY:		return p->use_zcpy_rx;
	case F_UWR:		return p->use_unsolicited_write_recv;
	case F_REFILL:		return p->internal_rx_refill_threshold;
	case F_BACKEND:		return p->backend;
	default:		return 0;
	}
}

#define U64MAX	"18446744073709551615"
#define U64OVER	"18446744073709551616"

static const struct param_case param_cases[] = {
	/* nothing set: fi_efa(7)'s defaults, else efa_param.h's */
	V(NULL, NULL, 0, F_TX, 0),
	V(NULL, NULL, 0, F_RX, 0),
	V(NULL, NULL, 0, F_RXWIN, 128),
	V(NULL, NULL, 0, F_TXQ, 0),
	V(NULL, NULL, 0, F_RECVWIN, 16384),
	V(NULL, NULL, 0, F_CQ, 8192),
	V(NULL, NULL, 0, F_MRC, 1),
	V(NULL, NULL, 0, F_MRCOUNT, 0),
	V(NULL, NULL, 0, F_MRSIZE, 0),
	V(NULL, NULL, 0, F_MEMCPY, 4096),
	V(NULL, NULL, 0, F_MTU, 0),
	V(NULL, NULL, 0, F_UNEXP, 1),
	V(NULL, NULL, 0, F_OOO, 1),
	V(NULL, NULL, 0, F_MAXTO, 1000000),
	V(NULL, NULL, 0, F_INTERVAL, 0),
	V(NULL, NULL, 0, F_SHM, 1),
	V(NULL, NULL, 0, F_SHMAV, 128),
	V(NULL, NULL, 0, F_SHMMED, 4096),
	V(NULL, NULL, 0, F_MEDIUM, 65536),
	V(NULL, NULL, 0, F_FORK, 0),
	V(NULL, NULL, 0, F_RUNT, 307200),
	V(NULL, NULL, 0, F_READ, 1048576),
	V(NULL, NULL, 0, F_READWRITE, 65536),
	V(NULL, NULL, 0, F_RDMA, EFA_UNSET),
	V(NULL, NULL, 0, F_HUGE, 1),
	V(NULL, NULL, 0, F_ZCPY, 1),
	V(NULL, NULL, 0, F_UWR, 1),
	V(NULL, NULL, 0, F_REFILL, 8),
	/* an empty value is as good as unset */
	V("FI_EFA_CQ_SIZE", "", 0, F_CQ, 8192),
	V("FI_EFA_USE_DEVICE_RDMA", "", 0, F_RDMA, EFA_UNSET),

	/* TX_SIZE, RX_SIZE: 0..1048576 */
	V("FI_EFA_TX_SIZE", "1", 0, F_TX, 1),
	V("FI_EFA_TX_SIZE", "1048576", 0, F_TX, 1048576),
	BAD("FI_EFA_TX_SIZE", "1048577", "0..1048576"),
	V("FI_EFA_RX_SIZE", "0x100", 0, F_RX, 256),
	V("FI_EFA_RX_SIZE", "1048576", 0, F_RX, 1048576),
	BAD("FI_EFA_RX_SIZE", "1048577", "0..1048576"),
	/* malformed: letters, sign, junk, spaces, overflow */
	REFUSED("FI_EFA_TX_SIZE", "0..1048576", "abc", "-1", "+1", "12k", " 12",
		"0x"),
	BAD("FI_EFA_RX_SIZE", "99999999999999999999999", "0..1048576"),

	RANGE("FI_EFA_RX_WINDOW_SIZE", F_RXWIN, 1, 65536),
	/* not an alias of RECVWIN_SIZE: each keeps its own value */
	V2("FI_EFA_RX_WINDOW_SIZE", "64", "FI_EFA_RECVWIN_SIZE", "256", 0,
	   F_RXWIN, 64, NULL),
	V2("FI_EFA_RX_WINDOW_SIZE", "64", "FI_EFA_RECVWIN_SIZE", "256", 0,
	   F_RECVWIN, 256, NULL),
	V("FI_EFA_RX_WINDOW_SIZE", "64", 0, F_RECVWIN, 16384),

	/* TX_QUEUE_SIZE: 0..4096 */
	V("FI_EFA_TX_QUEUE_SIZE", "4096", 0, F_TXQ, 4096),
	BAD("FI_EFA_TX_QUEUE_SIZE", "4097", "0..4096"),

	/* RECVWIN_SIZE: 1..1048576, rounded up to a power of two */
	V("FI_EFA_RECVWIN_SIZE", "1", 0, F_RECVWIN, 1),
	V("FI_EFA_RECVWIN_SIZE", "16", 0, F_RECVWIN, 16),
	V("FI_EFA_RECVWIN_SIZE", "1000", 0, F_RECVWIN, 1024),
	V("FI_EFA_RECVWIN_SIZE", "1025", 0, F_RECVWIN, 2048),
	V("FI_EFA_RECVWIN_SIZE", "1048575", 0, F_RECVWIN, 1048576),
	V("FI_EFA_RECVWIN_SIZE", "1048576", 0, F_RECVWIN, 1048576),
	REFUSED("FI_EFA_RECVWIN_SIZE", "1..1048576", "0", "1048577"),

	RANGE("FI_EFA_CQ_SIZE", F_CQ, 1, 1048576),

	/* MR cache */
	V("FI_EFA_MR_CACHE_ENABLE", "0", 0, F_MRC, 0),
	V("FI_EFA_MR_CACHE_ENABLE", "off", 0, F_MRC, 0),
	BAD("FI_EFA_MR_CACHE_ENABLE", "2", "boolean"),
	V("FI_EFA_MR_MAX_CACHED_COUNT", "65536", 0, F_MRCOUNT, 65536),
	BAD("FI_EFA_MR_MAX_CACHED_COUNT", "65537", "0..65536"),
	V("FI_EFA_MR_MAX_CACHED_SIZE", U64MAX, 0, F_MRSIZE, UINT64_MAX),
	V("FI_EFA_MR_MAX_CACHED_SIZE", "0x40000000", 0, F_MRSIZE, 1 << 30),
	BAD("FI_EFA_MR_MAX_CACHED_SIZE", U64OVER, "0..18446744073709551615"),

	/* MAX_MEMCPY_SIZE: 0..1 GiB */
	RANGE("FI_EFA_MAX_MEMCPY_SIZE", F_MEMCPY, 0, 1073741824),

	/* MTU_SIZE: 0 or 512..32768 */
	V("FI_EFA_MTU_SIZE", "0", 0, F_MTU, 0),
	V("FI_EFA_MTU_SIZE", "512", 0, F_MTU, 512),
	V("FI_EFA_MTU_SIZE", "4000", 0, F_MTU, 4000),
	V("FI_EFA_MTU_SIZE", "32768", 0, F_MTU, 32768),
	REFUSED("FI_EFA_MTU_SIZE", "512..32768", "1", "511"),
	BAD("FI_EFA_MTU_SIZE", "32769", "0..32768"),

	/* booleans: every spelling, any case */
	V("FI_EFA_RX_COPY_UNEXP", "no", 0, F_UNEXP, 0),
	V("FI_EFA_RX_COPY_UNEXP", "FALSE", 0, F_UNEXP, 0),
	V("FI_EFA_RX_COPY_UNEXP", "Yes", 0, F_UNEXP, 1),
	BAD("FI_EFA_RX_COPY_UNEXP", "y", "boolean"),
	V("FI_EFA_RX_COPY_OOO", "Off", 0, F_OOO, 0),
	BAD("FI_EFA_RX_COPY_OOO", "-1", "boolean"),
	V("FI_EFA_ENABLE_SHM_TRANSFER", "0", 0, F_SHM, 0),
	BAD("FI_EFA_ENABLE_SHM_TRANSFER", "maybe", "boolean"),
	V("FI_EFA_FORK_SAFE", "1", 0, F_FORK, 1),
	V("FI_EFA_FORK_SAFE", "on", 0, F_FORK, 1),
	BAD("FI_EFA_FORK_SAFE", "2", "boolean"),
	V("FI_EFA_USE_ZCPY_RX", "0", 0, F_ZCPY, 0),
	V("FI_EFA_USE_ZCPY_RX", "true", 0, F_ZCPY, 1),
	V("FI_EFA_USE_UNSOLICITED_WRITE_RECV", "0", 0, F_UWR, 0),
	BAD("FI_EFA_USE_UNSOLICITED_WRITE_RECV", "x", "boolean"),

	/* MAX_TIMEOUT: 1..1073741822; TIMEOUT_INTERVAL: 0..MAX_TIMEOUT */
	RANGE("FI_EFA_MAX_TIMEOUT", F_MAXTO, 1, 1073741822),
	V("FI_EFA_TIMEOUT_INTERVAL", "1000000", 0, F_INTERVAL, 1000000),
	BAD("FI_EFA_TIMEOUT_INTERVAL", "1000001", "FI_EFA_MAX_TIMEOUT"),
	BAD("FI_EFA_TIMEOUT_INTERVAL", "1073741823", "0..1073741822"),
	V2("FI_EFA_TIMEOUT_INTERVAL", "100", "FI_EFA_MAX_TIMEOUT", "100", 0,
	   F_INTERVAL, 100, NULL),
	V2("FI_EFA_TIMEOUT_INTERVAL", "101", "FI_EFA_MAX_TIMEOUT", "100",
	   -FI_EINVAL, F_NONE, 0, "at most FI_EFA_MAX_TIMEOUT (100"),
	V2("FI_EFA_TIMEOUT_INTERVAL", "0", "FI_EFA_MAX_TIMEOUT", "1", 0,
	   F_INTERVAL, 0, NULL),
	V2("FI_EFA_TIMEOUT_INTERVAL", "1073741822", "FI_EFA_MAX_TIMEOUT",
	   "1073741822", 0, F_INTERVAL, 1073741822, NULL),

	/* SHM: accepted without effect */
	RANGE("FI_EFA_SHM_AV_SIZE", F_SHMAV, 1, 256),
	/* deprecated: read and warned about */
	V("FI_EFA_SHM_MAX_MEDIUM_SIZE", "8192", 0, F_SHMMED, 8192),
	BAD("FI_EFA_SHM_MAX_MEDIUM_SIZE", "big", U64MAX),

	/* message protocol thresholds: 0..SIZE_MAX */
	V("FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE", "0", 0, F_MEDIUM, 0),
	V("FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE", U64MAX, 0, F_MEDIUM,
	  UINT64_MAX),
	REFUSED("FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE", U64MAX, U64OVER,
		"-65536"),
	V("FI_EFA_RUNT_SIZE", "0", 0, F_RUNT, 0),
	V("FI_EFA_RUNT_SIZE", U64MAX, 0, F_RUNT, UINT64_MAX),
	REFUSED("FI_EFA_RUNT_SIZE", U64MAX, U64OVER, "300k"),
	V("FI_EFA_INTER_MIN_READ_MESSAGE_SIZE", "0", 0, F_READ, 0),
	V("FI_EFA_INTER_MIN_READ_MESSAGE_SIZE", U64MAX, 0, F_READ,
	  UINT64_MAX),
	BAD("FI_EFA_INTER_MIN_READ_MESSAGE_SIZE", U64OVER, U64MAX),
	V("FI_EFA_INTER_MIN_READ_WRITE_SIZE", "0", 0, F_READWRITE, 0),
	V("FI_EFA_INTER_MIN_READ_WRITE_SIZE", U64MAX, 0, F_READWRITE,
	  UINT64_MAX),
	BAD("FI_EFA_INTER_MIN_READ_WRITE_SIZE", U64OVER, U64MAX),
	/*
	 * fi_efa(7) ties none of them: a read threshold below the medium
	 * one (read is tried first) and a runt budget past it are fine
	 */
	V2("FI_EFA_INTER_MIN_READ_MESSAGE_SIZE", "16384",
	   "FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE", "65536", 0, F_READ, 16384,
	   NULL),
	V2("FI_EFA_RUNT_SIZE", "4194304",
	   "FI_EFA_INTER_MIN_READ_MESSAGE_SIZE", "1048576", 0, F_RUNT,
	   4194304, NULL),

	/* USE_DEVICE_RDMA: unset, off, on */
	V("FI_EFA_USE_DEVICE_RDMA", "1", 0, F_RDMA, EFA_ON),
	V("FI_EFA_USE_DEVICE_RDMA", "yes", 0, F_RDMA, EFA_ON),
	V("FI_EFA_USE_DEVICE_RDMA", "0", 0, F_RDMA, EFA_OFF),
	V("FI_EFA_USE_DEVICE_RDMA", "OFF", 0, F_RDMA, EFA_OFF),
	REFUSED("FI_EFA_USE_DEVICE_RDMA", "boolean", "2", "auto"),

	/* USE_HUGE_PAGE: default !FORK_SAFE; not on with FORK_SAFE */
	V("FI_EFA_USE_HUGE_PAGE", "0", 0, F_HUGE, 0),
	V("FI_EFA_USE_HUGE_PAGE", "1", 0, F_HUGE, 1),
	BAD("FI_EFA_USE_HUGE_PAGE", "huge", "boolean"),
	V("FI_EFA_FORK_SAFE", "1", 0, F_HUGE, 0),
	V("FI_EFA_FORK_SAFE", "0", 0, F_HUGE, 1),
	V2("FI_EFA_USE_HUGE_PAGE", "0", "FI_EFA_FORK_SAFE", "1", 0, F_HUGE,
	   0, NULL),
	V2("FI_EFA_USE_HUGE_PAGE", "1", "FI_EFA_FORK_SAFE", "0", 0, F_HUGE,
	   1, NULL),
	V2("FI_EFA_USE_HUGE_PAGE", "on", "FI_EFA_FORK_SAFE", "1",
	   -FI_EINVAL, F_NONE, 0, "FI_EFA_FORK_SAFE=1"),

	RANGE("FI_EFA_INTERNAL_RX_REFILL_THRESHOLD", F_REFILL, 1, 4096),

	/* FI_KFAB_BACKEND */
	V("FI_KFAB_BACKEND", "shm", 0, F_BACKEND, KFAB_BACKEND_SHM),
	V("FI_KFAB_BACKEND", "kmod", 0, F_BACKEND, KFAB_BACKEND_KMOD),
	REFUSED("FI_KFAB_BACKEND", "auto, kmod or shm", "SHM", "verbs"),

	/* a bad FI_EFA_IFACE fails the load (its grammar is below) */
	BAD("FI_EFA_IFACE", "eth0", "efa<N>"),

	/* an explicitly empty boolean is unset, not malformed */
	V("FI_EFA_USE_ZCPY_RX", "", 0, F_ZCPY, 1),
};

/* The deprecated variable warns though it is accepted. */
static void deprecated_case(void)
{
	struct efa_params p;

	env_clear();
	nwarn = 0;
	last_warn[0] = '\0';
	TAP_EQ(efa_params_load(&p), 0, "defaults: no warning load");
	TAP_EQ(nwarn, 0, "defaults warn about nothing");
	setenv("FI_EFA_SHM_MAX_MEDIUM_SIZE", "4096", 1);
	TAP_EQ(efa_params_load(&p), 0, "FI_EFA_SHM_MAX_MEDIUM_SIZE=4096");
	TAP_OK(nwarn == 1 && strstr(last_warn, "FI_EFA_SHM_MAX_MEDIUM_SIZE") &&
	       strstr(last_warn, "deprecated"), "deprecation warned: %s",
	       last_warn);
}

/* auto: kmod when /dev/kfab_efa<N> exists for the first device admitted */
static void backend_auto_cases(void)
{
	static const struct {
		const char *iface;
		unsigned int dev;
	} cases[] = {
		{ NULL, 0 },
		{ "all", 0 },
		{ "efa1", 1 },
		{ "efa3,efa2", 2 },
	};
	struct efa_params p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		env_clear();
		setenv("FI_KFAB_BACKEND", "auto", 1);
		if (cases[i].iface)
			setenv("FI_EFA_IFACE", cases[i].iface, 1);
		TAP_EQ(efa_params_load(&p), 0, "FI_KFAB_BACKEND=auto IFACE=%s",
		       cases[i].iface ? cases[i].iface : "(unset)");
		TAP_EQ(p.backend, kfab_efa_kmod_present(cases[i].dev) ?
		       KFAB_BACKEND_KMOD : KFAB_BACKEND_SHM,
		       "auto picks by /dev/kfab_efa%u", cases[i].dev);
	}
	env_clear();
	TAP_OK(!efa_params_load(&p) && p.backend != KFAB_BACKEND_AUTO,
	       "unset FI_KFAB_BACKEND resolves auto");
}

/* ------------------------------------------------------------------ */
/* FI_EFA_IFACE */

#define ALL	UINT64_MAX	/* stands for "all" in the table */

struct iface_case {
	const char *val;
	int ret;
	uint64_t mask;
	const char *says;	/* in the warning */
};

static const struct iface_case iface_cases[] = {
	{ NULL, 0, ALL, NULL },
	{ "", 0, ALL, NULL },
	{ "all", 0, ALL, NULL },
	{ "efa0", 0, 0x1, NULL },
	{ "efa1", 0, 0x2, NULL },
	{ "efa0,efa1", 0, 0x3, NULL },
	{ "efa1,efa0", 0, 0x3, NULL },
	{ "efa7,efa2,efa10", 0, 0x484, NULL },
	{ "efa63", 0, 1ULL << 63, NULL },
	{ "efa9", 0, 0x200, NULL },
	/* not efa<N> */
	{ "efa64", -FI_EINVAL, 0, "\"efa64\"" },
	{ "efa99999999999999999999", -FI_EINVAL, 0, "is not a device name" },
	{ "efa", -FI_EINVAL, 0, "\"efa\"" },
	{ "efa01", -FI_EINVAL, 0, "leading zeros" },
	{ "efa00", -FI_EINVAL, 0, "\"efa00\"" },
	{ "efa-1", -FI_EINVAL, 0, "\"efa-1\"" },
	{ "efa+1", -FI_EINVAL, 0, "\"efa+1\"" },
	{ "efa0x1", -FI_EINVAL, 0, "\"efa0x1\"" },
	{ "efa1a", -FI_EINVAL, 0, "\"efa1a\"" },
	{ "EFA0", -FI_EINVAL, 0, "\"EFA0\"" },
	{ "0", -FI_EINVAL, 0, "\"0\"" },
	{ "eth0", -FI_EINVAL, 0, "\"eth0\"" },
	{ "rdmap0s6", -FI_EINVAL, 0, "\"rdmap0s6\"" },
	{ "ALL", -FI_EINVAL, 0, "\"ALL\"" },
	{ "none", -FI_EINVAL, 0, "\"none\"" },
	{ "all,efa0", -FI_EINVAL, 0, "all alone" },
	{ "efa0,all", -FI_EINVAL, 0, "\"all\"" },
	{ " efa0", -FI_EINVAL, 0, "\" efa0\"" },
	{ "efa0 ", -FI_EINVAL, 0, "\"efa0 \"" },
	{ "efa0, efa1", -FI_EINVAL, 0, "\" efa1\"" },
	{ "efa0;efa1", -FI_EINVAL, 0, "\"efa0;efa1\"" },
	/* empty items */
	{ ",", -FI_EINVAL, 0, "empty" },
	{ "efa0,", -FI_EINVAL, 0, "empty" },
	{ ",efa0", -FI_EINVAL, 0, "empty" },
	{ "efa0,,efa1", -FI_EINVAL, 0, "empty" },
	/* duplicates */
	{ "efa0,efa0", -FI_EINVAL, 0, "efa0 is listed twice" },
	{ "efa1,efa2,efa1", -FI_EINVAL, 0, "efa1 is listed twice" },
};

static void iface_case_run(const struct iface_case *c)
{
	const struct param_case pc = V2("FI_EFA_IFACE", c->val, NULL, NULL,
					c->ret, F_NONE, 0, c->says);
	bool all_ok = true;

	if (!param_try(&pc))
		return;
	/* efa_iface_match() admits exactly the listed devices */
	for (unsigned int dev = 0; dev < EFA_IFACE_MAX + 2; dev++) {
		bool want = c->mask == ALL ||
			    (dev < EFA_IFACE_MAX && (c->mask >> dev & 1));

		if (efa_iface_match(&rec, dev) != want) {
			tap_diag("  efa%u: match %d, want %d", dev, !want,
				 want);
			all_ok = false;
		}
	}
	TAP_OK(all_ok, "FI_EFA_IFACE=%s: the devices admitted",
	       c->val ? c->val : "(unset)");
}

int main(void)
{
	param_test_start("efa_param_test", all_vars, NVARS);
	param_cases_run(param_cases, sizeof(param_cases) / sizeof(param_cases[0]));
	deprecated_case();
	backend_auto_cases();
	for (size_t i = 0; i < sizeof(iface_cases) / sizeof(iface_cases[0]);
	     i++)
		iface_case_run(&iface_cases[i]);
	param_define_cases(&efa_param_table, all_vars, NVARS);
	env_clear();
	return tap_done();
}
