// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what every provider object shares: the fid operations an object
 * does not support, and the text of provider error codes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_prov.h"

int kfab_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS;
}

int kfab_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

int kfab_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

int kfab_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void)fid;
	(void)buf;
	(void)len;
	return -FI_ENOSYS;
}

int kfab_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	(void)fid;
	(void)name;
	(void)flags;
	(void)ops;
	(void)context;
	return -FI_ENOSYS;
}

/*
 * FI_E* codes below FI_ERRNO_OFFSET are errno values, so fi_strerror()
 * prints both kinds of prov_errno. Without @buf the text returned is
 * err_data itself or libfabric's static string.
 */
const char *kfab_strerror(int prov_errno, const void *err_data, char *buf,
			  size_t len)
{
	const char *s = err_data ? err_data : fi_strerror(abs(prov_errno));

	if (!buf || !len)
		return s;
	snprintf(buf, len, "%s", s);
	return buf;
}
