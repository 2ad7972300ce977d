// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the fabric object. A fabric is one backend of the provider's
 * devices (kmod or shm, named by its fabric_name()) and the parent of
 * domains and EQs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_log.h"
#include "kfab_param.h"
#include "kfab_prov.h"

static int fabric_close(struct fid *fid)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fid, struct kfab_fabric, fabric_fid.fid);
	int ret = kfab_close_busy(fabric->kp, FI_LOG_FABRIC,
				  kfab_ref_read(&fabric->ref), "fabric",
				  "close its domains and EQs first");

	if (ret)
		return ret;
	free(fabric);
	return 0;
}

static int fabric_nosys(struct fid_fabric *fabric_fid, const char *what)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fabric_fid, struct kfab_fabric, fabric_fid);

	kfab_warn(fabric->kp, FI_LOG_FABRIC, "%s: not supported\n", what);
	return -FI_ENOSYS;
}

/* Refusals whose arguments do not matter. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	return fabric_nosys(fabric, "fi_passive_ep (FI_EP_MSG)");
}

static int fabric_wait_open(struct fid_fabric *fabric,
			    struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	return fabric_nosys(fabric, "fi_wait_open (wait sets)");
}

#pragma GCC diagnostic pop

/*
 * fi_trywait(): 0 when the application may block on the fds of every
 * object (FI_GETWAIT), -FI_EAGAIN when one has something to read or its
 * endpoints got a packet after arming: read first.
 */
static int fabric_trywait(struct fid_fabric *fabric_fid, struct fid **fids,
			  int count)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fabric_fid, struct kfab_fabric, fabric_fid);
	int ret;

	for (int i = 0; i < count; i++) {
		if (kfab_cq_of(fids[i])) {
			ret = kfab_cq_trywait(fids[i]);
		} else if (kfab_cntr_of(fids[i])) {
			ret = kfab_cntr_trywait(fids[i]);
		} else {
			kfab_warn(fabric->kp, FI_LOG_FABRIC,
				  "fi_trywait: object of class %zu: only CQs and counters of %s have wait objects\n",
				  fids[i] ? fids[i]->fclass : 0,
				  fabric->kp->name);
			ret = -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int fabric_domain2(struct fid_fabric *fabric_fid, struct fi_info *info,
			  struct fid_domain **domain, uint64_t flags,
			  void *context)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fabric_fid, struct kfab_fabric, fabric_fid);

	if (flags) {
		kfab_warn(fabric->kp, FI_LOG_FABRIC,
			  "fi_domain2: flags %#llx are not supported (FI_PEER domains neither): use 0\n",
			  (unsigned long long)flags);
		return -FI_ENOSYS;
	}
	return kfab_domain_open(fabric_fid, info, domain, context);
}

static struct fi_ops fabric_fi_ops =
	KFAB_FI_OPS(fabric_close, kfab_no_bind, kfab_no_control,
		    kfab_no_ops_open);

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = kfab_domain_open,
	.passive_ep = fabric_passive_ep,
	.eq_open = kfab_eq_open,
	.wait_open = fabric_wait_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

int kfab_fabric_open(const struct kfab_provider *kp, struct fi_fabric_attr *attr,
		     struct fid_fabric **fabric_fid, void *context)
{
	struct kfab_fabric *fabric;
	size_t addrlen = kp->addrlen;
	const char *name;
	int ret;

	ret = kp->fabric_name(&name);
	if (ret)
		return ret;
	if (attr && attr->name && strcmp(attr->name, name)) {
		kfab_warn(kp, FI_LOG_FABRIC,
			  "fabric %s asked, but FI_KFAB_BACKEND gives %s: open the fabric fi_getinfo() returns, with the same environment\n",
			  attr->name, name);
		return -FI_ENODATA;
	}
	if (kp->fabric_addrlen && (ret = kp->fabric_addrlen(&addrlen)))
		return ret;
	fabric = calloc(1, sizeof(*fabric));
	if (!fabric) {
		kfab_warn(kp, FI_LOG_FABRIC, "fi_fabric: out of memory\n");
		return -FI_ENOMEM;
	}
	fabric->addrlen = addrlen;
	kfab_fid_init(&fabric->fabric_fid.fid, FI_CLASS_FABRIC, context,
		      &fabric_fi_ops);
	fabric->fabric_fid.ops = &fabric_ops;
	/* libfabric sets it again from attr after we return */
	fabric->fabric_fid.api_version = attr && attr->api_version ?
					 attr->api_version : KFAB_FI_VERSION;
	fabric->kp = kp;
	kfab_info(kp, FI_LOG_FABRIC, "%s: fabric %s\n", kp->name, name);
	*fabric_fid = &fabric->fabric_fid;
	return 0;
}

/* The provider of this library, once fi_prov_ini() has run. */
static const struct kfab_provider *ini_kp;

static void ini_log_sink(enum kfab_log_level level, const char *msg)
{
	enum fi_log_level l = level <= KFAB_LOG_WARN ? FI_LOG_WARN :
			      level == KFAB_LOG_INFO ? FI_LOG_INFO :
						       FI_LOG_DEBUG;

	if (fi_log_enabled(ini_kp->prov, l, FI_LOG_CORE))
		fi_log(ini_kp->prov, l, FI_LOG_CORE, "kfab", 0, "%s\n", msg);
	else if (level == KFAB_LOG_ERR)
		fprintf(stderr, "kfab: %s\n", msg);
}

static int ini_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	return kfab_fabric_open(ini_kp, attr, fabric, context);
}

/* libfabric unloads us next: the sink must not outlive the library. */
static void ini_cleanup(void)
{
	kfab_log_set(NULL);
}

struct fi_provider *kfab_prov_ini(const struct kfab_provider *kp,
				  kfab_getinfo_fn getinfo)
{
	ini_kp = kp;
	*kp->prov = (struct fi_provider){
		.version = KFAB_PROV_VERSION,
		.fi_version = KFAB_FI_VERSION,
		.name = kp->name,
		.getinfo = getinfo,
		.fabric = ini_fabric,
		.cleanup = ini_cleanup,
	};
	kfab_log_set(ini_log_sink);
	if (kp->param_table)
		kfab_params_define(kp->param_table);
	return kp->prov;
}
