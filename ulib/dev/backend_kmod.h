/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: what the kmod backends of both device layers
 * (hfi_backend_kmod.c, efa_backend_kmod.c) share: the device node
 * /dev/kfab_<kind><n> and its open, the knobs as attributes of
 * /sys/class/kfab/<kind><n>/, eventfd wakeups, the read-only pages the
 * modules map, the uapi's iovec and its peer requests.
 */
#ifndef KFAB_ULIB_BACKEND_KMOD_H
#define KFAB_ULIB_BACKEND_KMOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "uapi/kfab_abi.h"

/* "/dev/kfab_<kind><n>" into @buf. */
void kfab_kmod_node(const char *kind, unsigned int n, char *buf, size_t len);

/* True when the device node of <kind><n> exists. */
bool kfab_kmod_present(const char *kind, unsigned int n);

/*
 * Opens the device node of <kind><n> ("hfi" or "efa"; its path in @path)
 * and asks it its version or device info into @info (struct
 * kfab_hfi_version or kfab_efa_device_info): the fd, or -errno logged with
 * what to do; -EPROTO, naming the module to load, when the module is not
 * of this library's ABI.
 */
int kfab_kmod_open(const char *kind, unsigned int n, void *info, char *path,
		   size_t len);

/* One page at @off of @fd mapped read-only: NULL (errno) on failure. */
const void *kfab_kmod_page(int fd, uint64_t off);

/* Unmaps a page of kfab_kmod_page(), if @page is not NULL. */
void kfab_kmod_page_unmap(const void *page);

/*
 * One line of the attribute @attr of /sys/class/kfab/<kind><n>/, the
 * newline stripped: 0, or -errno (logged).
 */
int kfab_kmod_sysfs_read(const char *kind, unsigned int n, const char *attr,
			 char *buf, size_t len);

/*
 * Writes @word to that attribute, or @value in decimal when @word is NULL:
 * 0, or -errno (logged; -EACCES, saying that it needs root, when we may
 * not).
 */
int kfab_kmod_sysfs_write(const char *kind, unsigned int n, const char *attr,
			  const char *word, uint32_t value);

/* A new eventfd, non-blocking: the fd, or -errno. */
int kfab_kmod_eventfd(void);

/* Empties the eventfd @fd. */
void kfab_kmod_eventfd_drain(int fd);

/*
 * @iov as the uapi's struct kfab_iovec into @kiov: 0, or -EINVAL (logged
 * as @what's) when @iovcnt is not in 1..KFAB_IOV_MAX.
 */
int kfab_kmod_iov(struct kfab_iovec *kiov, const struct iovec *iov,
		  int iovcnt, const char *what);

/*
 * NOTIFY (@cmd, KFAB_HFI_IOC_NOTIFY or KFAB_EFA_IOC_NOTIFY) of the peer
 * handle @peer of device <kind><n>: 0, or -errno, logged unless it is
 * -ECONNRESET (the peer is gone).
 */
int kfab_kmod_notify(int fd, unsigned long cmd, uint32_t peer,
		     const char *kind, unsigned int n);

/*
 * Gives back what a MAP_PEER took: the mapping of the peer's status page
 * @status (NULL: none), then the handle @peer (0: none) with the request
 * @cmd (KFAB_HFI_IOC_UNMAP_PEER or KFAB_EFA_IOC_UNMAP_PEER).
 */
void kfab_kmod_peer_put(int fd, unsigned long cmd, uint32_t peer,
			const void *status);

#endif /* KFAB_ULIB_BACKEND_KMOD_H */
