/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of kfab_efa's fi_getinfo() (efa_info_test,
 * efa_info_addr_test) share: the shm backend's gids, names made of them,
 * warnings counted, the program's setup under a private $KFAB_SHM_DIR
 * (made here unless given) and its cleanup.
 */
#ifndef KFAB_ULIB_EFA_INFO_TESTS_H
#define KFAB_ULIB_EFA_INFO_TESTS_H

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efa/efa_info.h"
#include "tests/info_util.h"
#include "core/kfab_attr.h"
#include "core/kfab_log.h"
#include "tests/tap.h"
#include "tests/xproc.h"

/* the shm backend's gids: fe80::6b66:6162:7368:6d<N + 1> */
#define SHM_GID(n)	"fe80::6b66:6162:7368:6d0" #n

/* mr_mode of both types, as libfabric's efa (API 1.4's FI_MR_BASIC) */
#define MR_BASIC_MAP	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static int nwarn;

static inline void sink(enum kfab_log_level level, const char *msg)
{
	(void)msg;
	if (level == KFAB_LOG_WARN)
		nwarn++;
}

static inline int count_type(const struct fi_info *fi, enum fi_ep_type type)
{
	int n = 0;

	for (; fi; fi = fi->next)
		n += fi->ep_attr->type == type;
	return n;
}

static inline struct efa_addr name_of(const char *gid, uint32_t qpn, uint32_t qkey)
{
	char s[128];
	struct efa_addr n;

	snprintf(s, sizeof(s), EFA_ADDR_PREFIX "[%s]:%u:%u", gid, qpn, qkey);
	if (efa_addr_parse(s, (uint8_t *)&n))
		memset(&n, 0, sizeof(n));
	return n;
}

/* Every fi_info carries its device's address (gid, qpn 0, qkey 0). */
static inline bool all_src_addrs(const struct fi_info *fi)
{
	unsigned int dev;
	struct efa_addr src;

	for (; fi; fi = fi->next) {
		if (!fi->src_addr || fi->src_addrlen != EFA_ADDRLEN ||
		    sscanf(fi->domain_attr->name, "efa%u", &dev) != 1)
			return false;
		src = name_of(dev ? SHM_GID(2) : SHM_GID(1), 0, 0);
		if (memcmp(fi->src_addr, &src, EFA_ADDRLEN))
			return false;
	}
	return true;
}

/* fabtests' for fi_dgram_pingpong: prefix and local MRs supported */
static inline struct fi_info *dgram_hints(void)
{
	return pingpong_hints(FI_EP_DGRAM);
}

/* TAP header, the backend and the environment fi_getinfo() reads. */
static inline bool info_start(const char *name, char *dir, size_t dirlen)
{
	bool own;

	tap_start(name);
	kfab_log_set(sink);
	own = xp_shm_dir(dir, dirlen, name);
	setenv("FI_KFAB_BACKEND", "shm", 1);
	unsetenv("KFAB_SHM_EFA_DEVICES");
	unsetenv("FI_EFA_IFACE");
	unsetenv("FI_EFA_TX_SIZE");
	unsetenv("FI_EFA_RX_SIZE");
	unsetenv("FI_EFA_MTU_SIZE");
	tap_diag("KFAB_SHM_DIR=%s", dir);
	return own;
}

/* No file left behind, our directory gone: the exit status. */
static inline int info_done(const char *dir, bool own)
{
	TAP_EQ(xp_files_under(dir), 0, "cleanup: no files left in %s", dir);
	if (own)
		TAP_OK(!rmdir(dir) || errno == ENOENT,
		       "cleanup: the directory is gone or empty");
	return tap_done();
}

#endif /* KFAB_ULIB_EFA_INFO_TESTS_H */
