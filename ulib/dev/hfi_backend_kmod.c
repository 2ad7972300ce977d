// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the kmod HFI backend, over /dev/kfab_hfi<N> (uapi/kfab_hfi.h,
 * Documentation/userspace-api/kfab_hfi.rst). One device is one open file,
 * which holds at most one context. The wakeup fd is an eventfd the backend
 * creates and registers at assign time; set_eventfd() replaces it with the
 * caller's (dev->wake_fd then still is the backend's, unused). The unit's
 * knobs are its attributes in /sys/class/kfab/hfi<N>/.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hfi_dev.h"
#include "backend_kmod.h"

struct kmod_dev {
	struct kfab_hfi_dev pub;
	int fd;
};

static inline struct kmod_dev *to_kmod(struct kfab_hfi_dev *dev)
{
	return (struct kmod_dev *)dev;
}

int kfab_hfi_kmod_present(unsigned int unit)
{
	return kfab_kmod_present("hfi", unit);
}

static int kmod_set_eventfd(struct kfab_hfi_dev *dev, int efd)
{
	struct kfab_hfi_eventfd e = { .fd = efd };
	int ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_HFI_IOC_SET_EVENTFD, &e);

	return ret ? kfab_log_err(ret, "hfi%u: SET_EVENTFD %d", dev->unit,
				  efd) : 0;
}

static int kmod_assign(struct kfab_hfi_dev *dev, const uint8_t uuid[16],
		       uint16_t pkey, uint8_t sl)
{
	struct kmod_dev *kd = to_kmod(dev);
	struct kfab_hfi_assign a;
	int ret;

	if (dev->assigned)
		return kfab_log_err(-EINVAL, "hfi%u: context already assigned",
				    dev->unit);
	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, uuid, 16);
	a.pkey = pkey;
	a.sl = sl;
	ret = kfab_ioctl(kd->fd, KFAB_HFI_IOC_ASSIGN_CTXT, &a);
	if (ret)
		return kfab_log_err(ret, "hfi%u: ASSIGN_CTXT", dev->unit);
	dev->info = a.info;
	/* the context now lives until the file and its mappings are gone */
	ret = kfab_hfi_map_ring(kd->fd, a.info.ctrl_offset, a.info.rhq_offset,
				a.info.eager_offset, a.info.rhq_entries,
				a.info.eager_count, a.info.eager_size,
				&dev->ring);
	if (ret)
		return ret;
	dev->status = kfab_kmod_page(kd->fd, a.info.status_offset);
	if (!dev->status) {
		ret = kfab_log_err(-errno, "hfi%u: mmap status", dev->unit);
		goto err;
	}
	ret = kfab_kmod_eventfd();
	if (ret < 0) {
		kfab_log_err(ret, "hfi%u: eventfd", dev->unit);
		goto err;
	}
	dev->wake_fd = ret;
	ret = kmod_set_eventfd(dev, dev->wake_fd);
	if (ret)
		goto err;
	dev->assigned = 1;
	return 0;
err:
	/* the file keeps the context: the device can only be closed now */
	kfab_hfi_unmap_ring(&dev->ring);
	kfab_kmod_page_unmap(dev->status);
	dev->status = NULL;
	if (dev->wake_fd >= 0)
		close(dev->wake_fd);
	dev->wake_fd = -1;
	return ret;
}

static void kmod_peer_free(struct kfab_hfi_dev *dev,
			   struct kfab_hfi_peer *peer)
{
	kfab_hfi_unmap_ring(&peer->ring);
	kfab_kmod_peer_put(to_kmod(dev)->fd, KFAB_HFI_IOC_UNMAP_PEER,
			   peer->handle, peer->status);
	free(peer);
}

static int kmod_map_peer(struct kfab_hfi_dev *dev, uint32_t lid,
			 uint32_t ctxt, struct kfab_hfi_peer **out)
{
	struct kmod_dev *kd = to_kmod(dev);
	struct kfab_hfi_map_peer mp;
	struct kfab_hfi_peer *peer;
	int ret;

	*out = NULL;
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return kfab_log_err(-ENOMEM, "hfi%u: map peer", dev->unit);
	memset(&mp, 0, sizeof(mp));
	mp.lid = lid;
	mp.ctxt = ctxt;
	ret = kfab_ioctl(kd->fd, KFAB_HFI_IOC_MAP_PEER, &mp);
	if (ret) {
		free(peer);
		return kfab_log_err(ret, "hfi%u: MAP_PEER lid %u ctxt %u",
				    dev->unit, lid, ctxt);
	}
	peer->handle = mp.peer;
	peer->lid = lid;
	peer->ctxt = ctxt;
	ret = kfab_hfi_map_ring(kd->fd, mp.ctrl_offset, mp.rhq_offset,
				mp.eager_offset, mp.rhq_entries,
				mp.eager_count, mp.eager_size, &peer->ring);
	if (ret)
		goto err;
	peer->status = kfab_kmod_page(kd->fd, mp.status_offset);
	if (!peer->status) {
		ret = kfab_log_err(-errno, "hfi%u: mmap peer status",
				   dev->unit);
		goto err;
	}
	*out = peer;
	return 0;
err:
	kmod_peer_free(dev, peer);
	return ret;
}

static int kmod_notify(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer)
{
	return kfab_kmod_notify(to_kmod(dev)->fd, KFAB_HFI_IOC_NOTIFY,
				peer->handle, "hfi", dev->unit);
}

static int kmod_tid_update(struct kfab_hfi_dev *dev, void *addr, size_t len,
			   uint32_t *handle)
{
	struct kfab_hfi_tid_update t;
	int ret;

	memset(&t, 0, sizeof(t));
	t.vaddr = (uintptr_t)addr;
	t.length = len;
	ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_HFI_IOC_TID_UPDATE, &t);
	if (ret)
		return kfab_log_err(ret, "hfi%u: TID_UPDATE %p+%zu",
				    dev->unit, addr, len);
	*handle = t.handle;
	return 0;
}

static int kmod_tid_free(struct kfab_hfi_dev *dev, uint32_t handle)
{
	struct kfab_hfi_tid_free t = { .handle = handle };
	int ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_HFI_IOC_TID_FREE, &t);

	return ret ? kfab_log_err(ret, "hfi%u: TID_FREE %#x", dev->unit,
				  handle) : 0;
}

static int kmod_sdma(struct kfab_hfi_dev *dev, struct kfab_hfi_peer *peer,
		     uint32_t tid, uint64_t offset, const struct iovec *iov,
		     int iovcnt, uint32_t flags, uint64_t *bytes)
{
	struct kfab_iovec kiov[KFAB_IOV_MAX];
	struct kfab_hfi_sdma s = {
		.peer = peer->handle, .tid = tid, .offset = offset,
		.iov = (uintptr_t)kiov, .iovcnt = (uint32_t)iovcnt,
		.flags = flags,
	};
	int ret;

	*bytes = 0;
	ret = kfab_kmod_iov(kiov, iov, iovcnt, "hfi SDMA");
	if (ret)
		return ret;
	ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_HFI_IOC_SDMA, &s);
	*bytes = s.bytes;
	if (ret && ret != -ECONNRESET)
		kfab_log_err(ret, "hfi%u: SDMA to lid %u ctxt %u TID %#x",
			     dev->unit, peer->lid, peer->ctxt, tid);
	return ret;
}

/* The kernel sets the dead word when the owner's file is released. */
static bool kmod_peer_gone(struct kfab_hfi_dev *dev,
			   struct kfab_hfi_peer *peer)
{
	(void)dev;
	return kfab_hfi_ring_dead(&peer->ring);
}

static void kmod_wake_drain(struct kfab_hfi_dev *dev)
{
	if (dev->wake_fd >= 0)
		kfab_kmod_eventfd_drain(dev->wake_fd);
}

static void kmod_close(struct kfab_hfi_dev *dev)
{
	struct kmod_dev *kd = to_kmod(dev);

	/* every mapping must go for the kernel to release the context */
	kfab_hfi_unmap_ring(&dev->ring);
	kfab_kmod_page_unmap(dev->status);
	if (dev->wake_fd >= 0)
		close(dev->wake_fd);
	if (kd->fd >= 0)
		close(kd->fd);
	free(kd);
}

static int kmod_list_ctxts(struct kfab_hfi_dev *dev,
			   struct kfab_hfi_ctxt_desc *descs, uint32_t max,
			   uint32_t *total)
{
	struct kfab_hfi_ctxt_entry *ents = NULL;
	struct kfab_hfi_list_ctxts l;
	int ret;

	*total = 0;
	/* the kernel fills no more than the unit has */
	if (max > dev->version.nctxts)
		max = dev->version.nctxts;
	if (max) {
		ents = calloc(max, sizeof(*ents));
		if (!ents)
			return kfab_log_err(-ENOMEM, "hfi%u: list contexts",
					    dev->unit);
	}
	memset(&l, 0, sizeof(l));
	l.entries = (uintptr_t)ents;
	l.count = max;
	ret = kfab_ioctl(to_kmod(dev)->fd, KFAB_HFI_IOC_LIST_CTXTS, &l);
	if (ret) {
		free(ents);
		if (ret == -ENOTTY)
			kfab_log(KFAB_LOG_WARN,
				 "hfi%u: the loaded kfab_hfi cannot list contexts (no KFAB_HFI_IOC_LIST_CTXTS): load the current module",
				 dev->unit);
		else
			kfab_log_err(ret, "hfi%u: LIST_CTXTS", dev->unit);
		return ret;
	}
	for (uint32_t i = 0; i < l.count; i++) {
		const struct kfab_hfi_ctxt_entry *e = &ents[i];

		descs[i] = (struct kfab_hfi_ctxt_desc){
			.unit = dev->unit,
			.ctxt = e->ctxt,
			.jkey = e->jkey,
			.pkey = e->pkey,
			.sl = e->sl,
			.pid = e->pid,
			.flags = e->flags,
			.peer_refs = e->peer_refs,
			.rhq_entries = e->rhq_entries,
			.eager_count = e->eager_count,
			.eager_size = e->eager_size,
			.ntids = e->ntids,
			.tid_pages = e->tid_pages,
			.rhq_full_drops = e->rhq_full_drops,
			.eager_full_drops = e->eager_full_drops,
			.injected_drops = e->injected_drops,
		};
	}
	*total = l.total;
	free(ents);
	return (int)l.count;
}

/* Knob @knob of the unit from sysfs: "Active"/"Down", or a decimal. */
static int kmod_knob_read(struct kfab_hfi_dev *dev, enum kfab_hfi_knob knob,
			  uint32_t *value)
{
	const char *name = kfab_hfi_knob_name(knob);
	unsigned long long v;
	char buf[32], *end;
	int ret;

	ret = kfab_kmod_sysfs_read("hfi", dev->unit, name, buf, sizeof(buf));
	if (ret)
		return ret;
	if (knob == KFAB_HFI_KNOB_STATE && !strcmp(buf, "Active")) {
		*value = KFAB_HFI_STATE_ACTIVE;
		return 0;
	}
	if (knob == KFAB_HFI_KNOB_STATE && !strcmp(buf, "Down")) {
		*value = KFAB_HFI_STATE_DOWN;
		return 0;
	}
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (knob == KFAB_HFI_KNOB_STATE || end == buf || *end || errno ||
	    v > kfab_hfi_knob_max(knob))
		return kfab_log_err(-EPROTO, "hfi%u: %s reads \"%s\"",
				    dev->unit, name, buf);
	*value = (uint32_t)v;
	return 0;
}

static int kmod_get_status(struct kfab_hfi_dev *dev,
			   struct kfab_hfi_status *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	st->abi_version = dev->version.abi_version;
	st->unit = dev->unit;
	st->lid = dev->version.lid;
	ret = kmod_knob_read(dev, KFAB_HFI_KNOB_STATE, &st->state);
	if (!ret)
		ret = kmod_knob_read(dev, KFAB_HFI_KNOB_DROP_PPM,
				     &st->drop_ppm);
	if (!ret)
		ret = kmod_knob_read(dev, KFAB_HFI_KNOB_LINK_RATE_MBPS,
				     &st->link_rate_mbps);
	return ret;
}

static int kmod_set_knob(struct kfab_hfi_dev *dev, enum kfab_hfi_knob knob,
			 uint32_t value)
{
	int ret;

	ret = kfab_hfi_knob_check(dev, knob, value);
	if (ret)
		return ret;
	return kfab_kmod_sysfs_write("hfi", dev->unit,
				     kfab_hfi_knob_name(knob),
				     kfab_hfi_knob_word(knob, value), value);
}

static int kmod_reset_knobs(struct kfab_hfi_dev *dev)
{
	int ret = 0;

	for (int k = 0; k < KFAB_HFI_NKNOBS && !ret; k++)
		ret = kmod_set_knob(dev, (enum kfab_hfi_knob)k,
				    kfab_hfi_knob_default((enum kfab_hfi_knob)k));
	return ret;
}

static const struct kfab_hfi_ops kmod_ops = {
	.name = "kmod",
	.assign = kmod_assign,
	.map_peer = kmod_map_peer,
	.peer_free = kmod_peer_free,
	.notify = kmod_notify,
	.set_eventfd = kmod_set_eventfd,
	.tid_update = kmod_tid_update,
	.tid_free = kmod_tid_free,
	.sdma = kmod_sdma,
	.wake_drain = kmod_wake_drain,
	.peer_gone = kmod_peer_gone,
	.close = kmod_close,
	.list_ctxts = kmod_list_ctxts,
	.get_status = kmod_get_status,
	.set_knob = kmod_set_knob,
	.reset_knobs = kmod_reset_knobs,
};

int kfab_hfi_kmod_open(unsigned int unit, struct kfab_hfi_dev **out)
{
	struct kmod_dev *kd;
	char path[64];
	int ret;

	*out = NULL;
	kd = calloc(1, sizeof(*kd));
	if (!kd)
		return kfab_log_err(-ENOMEM, "hfi%u: open", unit);
	kd->pub.ops = &kmod_ops;
	kd->pub.unit = unit;
	kd->pub.wake_fd = -1;
	kd->fd = kfab_kmod_open("hfi", unit, &kd->pub.version, path,
				sizeof(path));
	if (kd->fd < 0) {
		ret = kd->fd;
		free(kd);
		return ret;
	}
	*out = &kd->pub;
	return 0;
}
