// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the kmod EFA backend, over /dev/kfab_efa<N> (uapi/kfab_efa.h).
 * One device is one open file, a protection domain; the kernel releases
 * whatever the file still holds when it is closed. Each QP gets an eventfd
 * of its own, registered with KFAB_EFA_IOC_SET_EVENTFD, as its wake_fd.
 * The device's knobs are its attributes in /sys/class/kfab/efa<N>/ and
 * are mirrored into the read-only status page.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efa_dev.h"
#include "backend_kmod.h"

struct kmod_dev {
	struct kfab_efa_dev pub;
	int fd;
};

static inline struct kmod_dev *to_kmod(struct kfab_efa_dev *dev)
{
	return (struct kmod_dev *)dev;
}

/* A gid as the IPv6 address it is. */
static const char *gid_str(const uint8_t gid[KFAB_EFA_GID_LEN], char *buf,
			   size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, (socklen_t)len))
		snprintf(buf, len, "(bad gid)");
	return buf;
}

/* DESTROY_QP of qp->addr.qpn, then frees @qp: 0, or -errno (logged). */
static int kmod_qp_free(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	struct kfab_efa_destroy_qp d = { .qpn = qp->addr.qpn };
	int ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_EFA_IOC_DESTROY_QP, &d);

	if (ret)
		kfab_log_err(ret, "efa%u: DESTROY_QP %u", dev->device,
			     qp->addr.qpn);
	kfab_efa_unmap_ring(&qp->ring);
	if (qp->wake_fd >= 0)
		close(qp->wake_fd);
	free(qp);
	return ret;
}

static int kmod_create_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp **out)
{
	struct kmod_dev *kd = to_kmod(dev);
	struct kfab_efa_create_qp cq;
	struct kfab_efa_eventfd e = { 0 };
	struct kfab_efa_qp *qp;
	int ret;

	*out = NULL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return kfab_log_err(-ENOMEM, "efa%u: create QP", dev->device);
	qp->wake_fd = -1;
	memset(&cq, 0, sizeof(cq));
	ret = kfab_ioctl(kd->fd, KFAB_EFA_IOC_CREATE_QP, &cq);
	if (ret) {
		free(qp);
		if (ret == -EBUSY)
			return kfab_log_err(ret, "efa%u: CREATE_QP: all %u QPs of the device are in use: destroy some or load kfab_efa with a larger qps_per_device",
					    dev->device, dev->info.max_qps);
		if (ret == -ENETDOWN)
			return kfab_log_err(ret, "efa%u: CREATE_QP: the device is Down: write Active to /sys/class/kfab/efa%u/state",
					    dev->device, dev->device);
		return kfab_log_err(ret, "efa%u: CREATE_QP", dev->device);
	}
	ret = kfab_efa_map_ring(kd->fd, cq.ctrl_offset, cq.ring_offset,
				cq.bufs_offset, cq.rx_entries, cq.mtu, NULL,
				&qp->ring);
	if (ret)
		goto err;
	qp->wake_fd = kfab_kmod_eventfd();
	if (qp->wake_fd < 0) {
		ret = kfab_log_err(qp->wake_fd, "efa%u: eventfd for QP %u",
				   dev->device, cq.qpn);
		goto err;
	}
	e.qpn = cq.qpn;
	e.fd = qp->wake_fd;
	ret = kfab_ioctl(kd->fd, KFAB_EFA_IOC_SET_EVENTFD, &e);
	if (ret) {
		kfab_log_err(ret, "efa%u: SET_EVENTFD of QP %u", dev->device,
			     cq.qpn);
		goto err;
	}
	memcpy(qp->addr.gid, dev->info.gid, KFAB_EFA_GID_LEN);
	qp->addr.qpn = cq.qpn;
	qp->addr.qkey = cq.qkey;
	KFAB_LIST_PUSH(&dev->qps, qp);
	*out = qp;
	return 0;
err:
	qp->addr.qpn = cq.qpn;
	kmod_qp_free(dev, qp);
	return ret;
}

static int kmod_destroy_qp(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	int ret = kfab_efa_qp_unlink(dev, qp);

	return ret ? ret : kmod_qp_free(dev, qp);
}

static void kmod_wake_drain(struct kfab_efa_dev *dev, struct kfab_efa_qp *qp)
{
	(void)dev;
	kfab_kmod_eventfd_drain(qp->wake_fd);
}

static void kmod_peer_free(struct kfab_efa_dev *dev,
			   struct kfab_efa_peer *peer)
{
	kfab_efa_peer_release(dev, peer);
	kfab_efa_unmap_ring(&peer->ring);
	kfab_kmod_peer_put(to_kmod(dev)->fd, KFAB_EFA_IOC_UNMAP_PEER,
			   peer->handle, peer->status);
	free(peer);
}

static int map_peer_err(struct kfab_efa_dev *dev,
			const struct kfab_efa_addr *addr, int err)
{
	char gid[INET6_ADDRSTRLEN];
	const char *why;

	switch (err) {
	case -EACCES:
		why = ": wrong qkey: get the QP's address from its owner again";
		break;
	case -ENOENT:
		why = ": no such device or QP (destroyed, or its owner is gone)";
		break;
	case -ENETDOWN:
		why = ": this or the peer's device is Down: write Active to its state in /sys/class/kfab/";
		break;
	case -ENOSPC:
		why = ": this file maps too many peers: unmap some";
		break;
	default:
		why = "";
	}
	return kfab_log_err(err, "efa%u: MAP_PEER %s QP %u%s", dev->device,
			    gid_str(addr->gid, gid, sizeof(gid)), addr->qpn,
			    why);
}

static int kmod_map_peer(struct kfab_efa_dev *dev,
			 const struct kfab_efa_addr *addr,
			 struct kfab_efa_peer **out)
{
	struct kmod_dev *kd = to_kmod(dev);
	struct kfab_efa_map_peer mp;
	struct kfab_efa_peer *peer;
	int ret;

	*out = NULL;
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return kfab_log_err(-ENOMEM, "efa%u: map peer", dev->device);
	memset(&mp, 0, sizeof(mp));
	memcpy(mp.gid, addr->gid, KFAB_EFA_GID_LEN);
	mp.qpn = addr->qpn;
	mp.qkey = addr->qkey;
	ret = kfab_ioctl(kd->fd, KFAB_EFA_IOC_MAP_PEER, &mp);
	if (ret) {
		free(peer);
		return map_peer_err(dev, addr, ret);
	}
	peer->handle = mp.peer;
	peer->addr = *addr;
	peer->status = kfab_kmod_page(kd->fd, mp.status_offset);
	if (!peer->status) {
		ret = kfab_log_err(-errno, "efa%u: mmap the status page of QP %u's device",
				   dev->device, addr->qpn);
		goto err;
	}
	ret = kfab_efa_map_ring(kd->fd, mp.ctrl_offset, mp.ring_offset,
				mp.bufs_offset, mp.rx_entries, mp.mtu,
				peer->status, &peer->ring);
	if (ret)
		goto err;
	*out = peer;
	return 0;
err:
	kmod_peer_free(dev, peer);
	return ret;
}

static int kmod_notify(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer)
{
	return kfab_kmod_notify(to_kmod(dev)->fd, KFAB_EFA_IOC_NOTIFY,
				peer->handle, "efa", dev->device);
}

static int kmod_reg_mr(struct kfab_efa_dev *dev, void *addr, size_t len,
		       uint32_t access, struct kfab_efa_mr *mr)
{
	struct kfab_efa_reg_mr r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.vaddr = (uintptr_t)addr;
	r.length = len;
	r.access = access;
	ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_EFA_IOC_REG_MR, &r);
	if (ret == -ENOSPC)
		return kfab_log_err(ret, "efa%u: REG_MR %p+%zu: this file holds max_mrs (%u) regions: deregister some",
				    dev->device, addr, len, dev->info.max_mrs);
	if (ret == -ENOMEM)
		return kfab_log_err(ret, "efa%u: REG_MR %p+%zu: cannot pin the pages: raise RLIMIT_MEMLOCK (ulimit -l)",
				    dev->device, addr, len);
	if (ret)
		return kfab_log_err(ret, "efa%u: REG_MR %p+%zu access %#x",
				    dev->device, addr, len, access);
	mr->addr = addr;
	mr->len = len;
	mr->access = access;
	mr->lkey = r.lkey;
	mr->rkey = r.rkey;
	mr->state_index = r.state_index;
	return 0;
}

static int kmod_dereg_mr(struct kfab_efa_dev *dev, struct kfab_efa_mr *mr)
{
	struct kfab_efa_dereg_mr d = { .lkey = mr->lkey };
	int ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_EFA_IOC_DEREG_MR, &d);

	return ret ? kfab_log_err(ret, "efa%u: DEREG_MR lkey %u", dev->device,
				  mr->lkey) : 0;
}

static int kmod_rdma(struct kfab_efa_dev *dev, struct kfab_efa_peer *peer,
		     uint32_t op, uint32_t rkey, uint64_t remote_addr,
		     const struct iovec *iov, int iovcnt, uint32_t flags,
		     uint64_t *bytes)
{
	const char *what = op == KFAB_EFA_RDMA_READ ? "read" : "write";
	struct kfab_iovec kiov[KFAB_IOV_MAX];
	struct kfab_efa_rdma r = {
		.peer = peer->handle, .op = op, .rkey = rkey, .flags = flags,
		.remote_addr = remote_addr, .iov = (uintptr_t)kiov,
		.iovcnt = (uint32_t)iovcnt,
	};
	int ret;

	*bytes = 0;
	ret = kfab_kmod_iov(kiov, iov, iovcnt, "efa RDMA");
	if (ret)
		return ret;
	ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_EFA_IOC_RDMA, &r);
	switch (ret) {
	case 0:
		*bytes = r.bytes;
		return 0;
	case -ECONNRESET:
		return ret;
	case -EACCES:
		return kfab_log_err(ret, "efa%u: RDMA %s QP %u rkey %#x: no region of the peer has this rkey, or it lacks remote %s access",
				    dev->device, what, peer->addr.qpn, rkey,
				    what);
	case -EINVAL:
		return kfab_log_err(ret, "efa%u: RDMA %s QP %u rkey %#x at %#llx: beyond the region, or a bad request",
				    dev->device, what, peer->addr.qpn, rkey,
				    (unsigned long long)remote_addr);
	case -ESTALE:
		return kfab_log_err(ret, "efa%u: RDMA %s QP %u rkey %#x: the region is stale (its owner unmapped its pages): it must be registered again",
				    dev->device, what, peer->addr.qpn, rkey);
	case -EOPNOTSUPP:
		return kfab_log_err(ret, "efa%u: RDMA %s QP %u: a device does not offer RDMA %s (device_rdma): use messages instead",
				    dev->device, what, peer->addr.qpn, what);
	default:
		return kfab_log_err(ret, "efa%u: RDMA %s QP %u rkey %#x",
				    dev->device, what, peer->addr.qpn, rkey);
	}
}

/* The kernel sets the dead word when the QP is destroyed. */
static bool kmod_peer_gone(struct kfab_efa_dev *dev,
			   struct kfab_efa_peer *peer)
{
	(void)dev;
	return kfab_efa_ring_dead(&peer->ring);
}

static void kmod_close(struct kfab_efa_dev *dev)
{
	struct kmod_dev *kd = to_kmod(dev);

	while (dev->qps)
		kmod_destroy_qp(dev, dev->qps);
	kfab_kmod_page_unmap(dev->status);
	if (dev->mr_state)
		munmap((void *)dev->mr_state, dev->info.mr_state_size);
	close(kd->fd);
	free(kd);
}

static int kmod_get_status(struct kfab_efa_dev *dev,
			   struct kfab_efa_status *st)
{
	memcpy(st, dev->status, sizeof(*st));
	return 0;
}

static int kmod_set_knob(struct kfab_efa_dev *dev, enum kfab_efa_knob knob,
			 uint32_t value)
{
	int ret;

	ret = kfab_efa_knob_check(dev, knob, value);
	if (ret)
		return ret;
	return kfab_kmod_sysfs_write("efa", dev->device,
				     kfab_efa_knob_name(knob),
				     kfab_efa_knob_word(knob, value), value);
}

static const struct kfab_efa_ops kmod_ops = {
	.name = "kmod",
	.create_qp = kmod_create_qp,
	.destroy_qp = kmod_destroy_qp,
	.wake_drain = kmod_wake_drain,
	.map_peer = kmod_map_peer,
	.peer_free = kmod_peer_free,
	.notify = kmod_notify,
	.reg_mr = kmod_reg_mr,
	.dereg_mr = kmod_dereg_mr,
	.rdma = kmod_rdma,
	.peer_gone = kmod_peer_gone,
	.close = kmod_close,
	.get_status = kmod_get_status,
	.set_knob = kmod_set_knob,
};

int kfab_efa_kmod_open(unsigned int device, struct kfab_efa_dev **out)
{
	struct kmod_dev *kd;
	char path[64];
	int ret;

	*out = NULL;
	kd = calloc(1, sizeof(*kd));
	if (!kd)
		return kfab_log_err(-ENOMEM, "efa%u: open", device);
	kd->pub.ops = &kmod_ops;
	kd->pub.device = device;
	kd->fd = kfab_kmod_open("efa", device, &kd->pub.info, path,
				sizeof(path));
	if (kd->fd < 0) {
		ret = kd->fd;
		free(kd);
		return ret;
	}
	kd->pub.status = kfab_kmod_page(kd->fd, kd->pub.info.status_offset);
	if (!kd->pub.status) {
		ret = kfab_log_err(-errno, "%s: mmap the status page", path);
		goto err;
	}
	kd->pub.mr_state = kfab_map(kd->fd, kd->pub.info.mr_state_offset,
				    kd->pub.info.mr_state_size, PROT_READ);
	if (!kd->pub.mr_state) {
		ret = kfab_log_err(-errno, "%s: mmap the MR state array", path);
		goto err;
	}
	*out = &kd->pub;
	return 0;
err:
	kfab_kmod_page_unmap(kd->pub.status);
	close(kd->fd);
	free(kd);
	return ret;
}
