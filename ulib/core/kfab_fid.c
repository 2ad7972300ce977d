// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: what every provider object shares: the fid operations an object
 * does not support, the refusal to close while held, the text of provider
 * error codes and the FI_E* code of a device's peer-mapping error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_prov.h"

/* The refusals: whatever their arguments, -FI_ENOSYS. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

int kfab_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int kfab_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int kfab_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	return -FI_ENOSYS;
}

int kfab_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int kfab_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	return -FI_ENOSYS;
}

int kfab_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

int kfab_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int kfab_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen)
{
	return -FI_ENOSYS;
}

int kfab_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int kfab_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int kfab_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen)
{
	return -FI_ENOSYS;
}

int kfab_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int kfab_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

ssize_t kfab_no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

#pragma GCC diagnostic pop

int kfab_close_busy(const struct kfab_provider *kp,
		    enum fi_log_subsys subsys, int n, const char *what,
		    const char *fix)
{
	if (!n)
		return 0;
	kfab_warn(kp, subsys, "%s still has %d reference(s): %s\n", what, n,
		  fix);
	return -FI_EBUSY;
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

int kfab_peer_err(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -ENOENT:
	case -ECONNRESET:
		return -FI_EHOSTUNREACH;
	case -EACCES:
		return -FI_EACCES;
	case -ENETDOWN:
		return -FI_ENETDOWN;
	case -ENOMEM:
		return -FI_ENOMEM;
	default:
		return err < 0 ? err : -FI_EIO;
	}
}
