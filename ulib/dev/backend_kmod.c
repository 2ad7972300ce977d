// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the helpers of the kmod backends, see backend_kmod.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "backend_kmod.h"
#include "kfab_sys.h"
#include "core/kfab_log.h"
#include "uapi/kfab_efa.h"
#include "uapi/kfab_hfi.h"

#define KMOD_SYSFS_FMT	"/sys/class/kfab/%s%u/%s"

void kfab_kmod_node(const char *kind, unsigned int n, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/kfab_%s%u", kind, n);
}

bool kfab_kmod_present(const char *kind, unsigned int n)
{
	char path[64];

	kfab_kmod_node(kind, n, path, sizeof(path));
	return !access(path, F_OK);
}

/* What opening a kind of device needs: who serves it, what to ask it. */
static const struct kmod_kind {
	const char *kind;
	const char *prov;	/* for kfab_log_open_err() */
	const char *module;
	const char *hint;	/* what to do when the node is absent, or NULL */
	unsigned long query;	/* its version or device info */
	const char *query_name;
	size_t abi_off;		/* of the ABI version in the answer */
} kmod_kinds[] = {
	{ "hfi", "kfab_opx", "kfab_hfi", NULL, KFAB_HFI_IOC_GET_VERSION,
	  "GET_VERSION", offsetof(struct kfab_hfi_version, abi_version) },
	{ "efa", "kfab_efa", "kfab_efa",
	  "load kfab_efa (with num_devices larger than the device number)",
	  KFAB_EFA_IOC_QUERY_DEVICE, "QUERY_DEVICE",
	  offsetof(struct kfab_efa_device_info, abi_version) },
};

static const struct kmod_kind *kmod_kind(const char *kind)
{
	for (size_t i = 0; i < sizeof(kmod_kinds) / sizeof(kmod_kinds[0]); i++)
		if (!strcmp(kmod_kinds[i].kind, kind))
			return &kmod_kinds[i];
	return NULL;
}

int kfab_kmod_open(const char *kind, unsigned int n, void *info, char *path,
		   size_t len)
{
	const struct kmod_kind *k = kmod_kind(kind);
	uint32_t abi;
	int fd, ret;

	if (!k)
		return kfab_log_err(-EINVAL, "no kmod device kind %s", kind);
	kfab_kmod_node(kind, n, path, len);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT && k->hint)
			return kfab_log_err(ret, "open %s: %s", path, k->hint);
		return kfab_log_open_err(ret, k->prov, path);
	}
	ret = kfab_ioctl(fd, k->query, info);
	if (ret) {
		kfab_log_err(ret, "%s: %s", path, k->query_name);
		goto err;
	}
	memcpy(&abi, (const char *)info + k->abi_off, sizeof(abi));
	if (abi != KFAB_ABI_VERSION) {
		kfab_log(KFAB_LOG_WARN, "%s: ABI version %u, this library knows %u: load the matching %s",
			 path, abi, KFAB_ABI_VERSION, k->module);
		ret = -EPROTO;
		goto err;
	}
	return fd;
err:
	close(fd);
	return ret;
}

const void *kfab_kmod_page(int fd, uint64_t off)
{
	return kfab_map(fd, off, kfab_page_size(), PROT_READ);
}

void kfab_kmod_page_unmap(const void *page)
{
	if (page)
		munmap((void *)page, kfab_page_size());
}

int kfab_kmod_sysfs_read(const char *kind, unsigned int n, const char *attr,
			 char *buf, size_t len)
{
	char path[128];
	ssize_t got;
	int fd, ret;

	snprintf(path, sizeof(path), KMOD_SYSFS_FMT, kind, n, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kfab_log_err(-errno, "read %s", path);
	got = read(fd, buf, len - 1);
	ret = got < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return kfab_log_err(ret, "read %s", path);
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int kfab_kmod_sysfs_write(const char *kind, unsigned int n, const char *attr,
			  const char *word, uint32_t value)
{
	char path[128], val[16];
	ssize_t put;
	int fd, ret;

	if (!word) {
		snprintf(val, sizeof(val), "%u", value);
		word = val;
	}
	snprintf(path, sizeof(path), KMOD_SYSFS_FMT, kind, n, attr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EACCES || ret == -EPERM)
			return kfab_log_err(-EACCES,
					    "%s: changing the knobs of a kernel device needs root",
					    path);
		return kfab_log_err(ret, "open %s", path);
	}
	put = write(fd, word, strlen(word));
	ret = put < 0 ? -errno : 0;
	close(fd);
	return ret ? kfab_log_err(ret, "write %s to %s", word, path) : 0;
}

int kfab_kmod_eventfd(void)
{
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

void kfab_kmod_eventfd_drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

int kfab_kmod_iov(struct kfab_iovec *kiov, const struct iovec *iov,
		  int iovcnt, const char *what)
{
	if (iovcnt < 1 || iovcnt > KFAB_IOV_MAX)
		return kfab_log_err(-EINVAL, "%s: %d iovecs, must be 1..%d",
				    what, iovcnt, KFAB_IOV_MAX);
	for (int i = 0; i < iovcnt; i++) {
		kiov[i].addr = (uintptr_t)iov[i].iov_base;
		kiov[i].len = iov[i].iov_len;
	}
	return 0;
}

_Static_assert(sizeof(struct kfab_hfi_peer_req) ==
	       sizeof(struct kfab_efa_peer_req) &&
	       offsetof(struct kfab_hfi_peer_req, peer) ==
	       offsetof(struct kfab_efa_peer_req, peer),
	       "one layout of a peer request");

/*
 * The request @cmd of struct kfab_hfi_peer_req or kfab_efa_peer_req (the
 * same layout) on the peer handle @peer: 0, or -errno unlogged.
 */
static int kmod_peer_req(int fd, unsigned long cmd, uint32_t peer)
{
	struct kfab_hfi_peer_req r;

	memset(&r, 0, sizeof(r));
	r.peer = peer;
	return kfab_ioctl(fd, cmd, &r);
}

int kfab_kmod_notify(int fd, unsigned long cmd, uint32_t peer,
		     const char *kind, unsigned int n)
{
	int ret = kmod_peer_req(fd, cmd, peer);

	/* a peer gone is a normal event, not worth a log line */
	if (ret && ret != -ECONNRESET)
		kfab_log_err(ret, "%s%u: NOTIFY of peer %u", kind, n, peer);
	return ret;
}

void kfab_kmod_peer_put(int fd, unsigned long cmd, uint32_t peer,
			const void *status)
{
	kfab_kmod_page_unmap(status);
	if (peer)
		kmod_peer_req(fd, cmd, peer);
}
