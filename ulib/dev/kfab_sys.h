/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: system facts every device layer needs, with no device type
 * of its own, and the lists of the objects a device holds.
 */
#ifndef KFAB_ULIB_KFAB_SYS_H
#define KFAB_ULIB_KFAB_SYS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

static inline size_t kfab_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* @v rounded up to whole pages. */
static inline size_t kfab_page_round(size_t v)
{
	size_t p = kfab_page_size();

	return (v + p - 1) / p * p;
}

/* mmap(MAP_SHARED) of [@off, @off + @len) of @fd: NULL on failure. */
static inline void *kfab_map(int fd, uint64_t off, size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, (off_t)off);

	return p == MAP_FAILED ? NULL : p;
}

/* ioctl() as 0 / -errno, restarting on EINTR. */
static inline int kfab_ioctl(int fd, unsigned long cmd, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, cmd, arg);
	} while (ret && errno == EINTR);
	return ret ? -errno : 0;
}

/* Puts @item first on the list at *@head, linked through its .next. */
#define KFAB_LIST_PUSH(head, item) do {					\
	(item)->next = *(head);						\
	*(head) = (item);						\
} while (0)

/*
 * Takes @item off the list at *@head, linked through .next: 0, or
 * -ENOENT when it is not on it.
 */
#define KFAB_LIST_UNLINK(head, item) __extension__ ({			\
	__typeof__(item) *pp_ = (head);					\
									\
	while (*pp_ && *pp_ != (item))					\
		pp_ = &(*pp_)->next;					\
	*pp_ ? (*pp_ = (item)->next, (item)->next = NULL, 0) : -ENOENT;	\
})

#endif /* KFAB_ULIB_KFAB_SYS_H */
