// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: memory regions. A region records what was registered; the data
 * path that reads and writes regions (RMA) looks them up by key. The
 * domain's mr_mode decides the rest:
 *
 *   FI_MR_SCALABLE (mr_mode 0, kfab_opx's default): the application
 *   chooses each key, unique within the domain, and peers address a
 *   region by offset.
 *
 *   FI_MR_PROV_KEY: requested_key is ignored; the key is the domain's
 *   next (kfab_opx), or the device's that the provider's mr_reg() gives
 *   (kfab_efa), unique either way.
 *
 *   FI_MR_VIRT_ADDR: peers address a region by virtual address; the
 *   offset attribute is ignored. Such a region is one iovec: the device
 *   registers one contiguous range.
 *
 * A provider with mr_reg() registers the region with its device before it
 * is listed, and deregisters it (mr_dereg()) when it is closed. The
 * domain maps keys to its regions (kfab_map.h): an RMA packet finds its
 * region in O(1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_log.h"
#include "kfab_prov.h"

/*
 * libfabric's own hint "do not cache this registration" (its internal
 * OFI_MR_NOCACHE), which its utilities pass down: nothing is cached here.
 */
#define KFAB_OFI_MR_NOCACHE	(1ULL << 60)

#define MR_ACCESS_ALL	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE)

struct kfab_mr *kfab_mr_lookup(struct kfab_domain *domain, uint64_t key)
{
	return (struct kfab_mr *)kfab_map_get(&domain->mrs, key);
}

int kfab_mr_access(struct kfab_domain *domain, uint64_t key, uint64_t addr,
		   size_t len, uint64_t access, struct iovec *iov)
{
	struct kfab_mr *mr = kfab_mr_lookup(domain, key);
	uint64_t off;
	int n = 0;

	if (!mr)
		return -ENOKEY;
	if (addr < mr->offset || addr - mr->offset > mr->len ||
	    len > mr->len - (addr - mr->offset))
		return -ERANGE;
	if ((mr->access & access) != access)
		return -EPERM;
	off = addr - mr->offset;
	for (size_t i = 0; i < mr->iov_count && len; i++) {
		size_t seg = mr->iov[i].iov_len;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		iov[n].iov_base = (uint8_t *)mr->iov[i].iov_base + off;
		iov[n].iov_len = seg - off < len ? seg - off : len;
		len -= iov[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

static int mr_close(struct fid *fid)
{
	struct kfab_mr *mr = kfab_container_of(fid, struct kfab_mr,
					       mr_fid.fid);
	struct kfab_domain *domain = mr->domain;

	kfab_lock(&domain->lock);
	kfab_map_del(&domain->mrs, mr->mr_fid.key, (uintptr_t)mr);
	if (domain->kp->mr_dereg)
		domain->kp->mr_dereg(domain, mr);
	domain->ref--;
	kfab_unlock(&domain->lock);
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops;

struct kfab_mr *kfab_mr_of(struct fid_mr *mr_fid)
{
	return mr_fid && kfab_fid_is(&mr_fid->fid, FI_CLASS_MR, &mr_fi_ops) ?
	       kfab_container_of(mr_fid, struct kfab_mr, mr_fid) : NULL;
}

static struct fi_ops mr_fi_ops =
	KFAB_FI_OPS(mr_close, kfab_no_bind, kfab_no_control, kfab_no_ops_open);

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **mr_fid)
{
	struct kfab_domain *domain;
	const struct kfab_provider *kp;
	struct kfab_mr *mr;
	size_t i;
	int ret;

	if (fid->fclass != FI_CLASS_DOMAIN) {
		kfab_log(KFAB_LOG_WARN,
			 "fi_mr_reg: fid class %zu: register in a domain",
			 fid->fclass);
		return -FI_EINVAL;
	}
	domain = kfab_container_of(fid, struct kfab_domain, domain_fid.fid);
	kp = domain->kp;
	if (flags & ~KFAB_OFI_MR_NOCACHE) {
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_reg: flags %#llx are not supported: use 0\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (attr->access & ~MR_ACCESS_ALL) {
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_reg: access %#llx: only FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ and FI_REMOTE_WRITE\n",
			  (unsigned long long)attr->access);
		return -FI_EINVAL;
	}
	if (attr->iov_count > KFAB_IOV_LIMIT) {
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_regv: %zu iovecs, at most %d\n",
			  attr->iov_count, KFAB_IOV_LIMIT);
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_SYSTEM) {
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_regattr: only host memory (FI_HMEM_SYSTEM)\n");
		return -FI_ENOSYS;
	}
	for (i = 0; i < attr->iov_count; i++) {
		if (!attr->mr_iov[i].iov_base && attr->mr_iov[i].iov_len) {
			kfab_warn(kp, FI_LOG_MR,
				  "fi_mr_reg: iovec %zu: NULL base of %zu bytes\n",
				  i, attr->mr_iov[i].iov_len);
			return -FI_EINVAL;
		}
	}
	if ((domain->mr_mode & FI_MR_VIRT_ADDR) && attr->iov_count > 1) {
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_regv: %zu iovecs: with FI_MR_VIRT_ADDR a region is one contiguous range, register each iovec on its own\n",
			  attr->iov_count);
		return -FI_EINVAL;
	}
	mr = calloc(1, kp->mr_size ? kp->mr_size : sizeof(*mr));
	if (!mr) {
		kfab_warn(kp, FI_LOG_MR, "fi_mr_reg: out of memory\n");
		return -FI_ENOMEM;
	}
	kfab_fid_init(&mr->mr_fid.fid, FI_CLASS_MR, attr->context, &mr_fi_ops);
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = attr->requested_key;
	mr->domain = domain;
	mr->access = attr->access;
	mr->flags = flags;
	mr->offset = attr->offset;
	mr->iov_count = attr->iov_count;
	for (i = 0; i < attr->iov_count; i++) {
		mr->iov[i] = attr->mr_iov[i];
		mr->len += attr->mr_iov[i].iov_len;
	}
	mr->addr = attr->iov_count ? attr->mr_iov[0].iov_base : NULL;
	if (domain->mr_mode & FI_MR_VIRT_ADDR)
		mr->offset = (uintptr_t)mr->addr;

	kfab_lock(&domain->lock);
	if (domain->mr_mode & FI_MR_PROV_KEY)
		mr->mr_fid.key = ++domain->mr_key_last;
	else if (kfab_mr_lookup(domain, mr->mr_fid.key)) {
		kfab_unlock(&domain->lock);
		kfab_warn(kp, FI_LOG_MR,
			  "fi_mr_reg: key %#llx is in use in this domain: with FI_MR_SCALABLE the application picks unique keys\n",
			  (unsigned long long)attr->requested_key);
		free(mr);
		return -FI_ENOKEY;
	}
	ret = kfab_map_reserve(&domain->mrs, domain->mrs.count + 1);
	if (ret)
		kfab_warn(kp, FI_LOG_MR, "fi_mr_reg: out of memory\n");
	else if (kp->mr_reg)
		ret = kp->mr_reg(domain, mr);
	if (ret) {
		kfab_unlock(&domain->lock);
		free(mr);
		return ret;
	}
	kfab_map_put(&domain->mrs, mr->mr_fid.key, (uintptr_t)mr);
	domain->ref++;
	kfab_unlock(&domain->lock);
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = {
		.iov_base = (void *)buf,
		.iov_len = len,
	};

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
		       mr, context);
}

struct fi_ops_mr kfab_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
