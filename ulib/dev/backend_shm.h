/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: what the shm backends of both device layers (hfi_backend_shm.c,
 * efa_backend_shm.c) share: the base directory <base> ($KFAB_SHM_DIR or
 * /dev/shm/kfab-<uid>, mode 0700, refused unless ours alone) with one
 * subdirectory <kind><N> per device, files made complete under a
 * temporary name and link()ed into place, the one-page files every
 * opener locks shared, wakeup FIFOs, $KFAB_SHM_* parsing, and the single
 * copy into or out of another process.
 *
 * Openers and removers: the one-page files (a device's or unit's) go with
 * their last user and the <kind><N> directories when empty, while other
 * processes may be opening them anew. flock() of <base> itself orders the
 * two: an opener holds LOCK_SH from its mkdir of <kind><N> until it holds
 * its file (or, for a file it creates with O_EXCL, until it made it), a
 * remover holds LOCK_EX while it decides and unlinks or rmdirs. So a
 * remover never takes what an opener is between finding and locking, and
 * an opener never retries: two processes starting together both succeed.
 * <base> is never removed (a directory in /dev/shm costs nothing and goes
 * at reboot): removing it would need a lock of its own.
 */
#ifndef KFAB_ULIB_KFAB_SHM_H
#define KFAB_ULIB_KFAB_SHM_H

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "kfab_sys.h"
#include "uapi/kfab_abi.h"
#include "core/kfab_log.h"

struct kfab_shm_base {
	char dir[PATH_MAX / 2];
};

/* $KFAB_SHM_DIR, else /dev/shm/kfab-<uid>. 0 or -ENAMETOOLONG. */
int kfab_shm_base_init(struct kfab_shm_base *base);

/* "<base>/<kind><n>", then "/<name>" unless @name is "". */
int kfab_shm_path(const struct kfab_shm_base *base, const char *kind,
		  unsigned int n, const char *name, char *buf, size_t len);

/*
 * <base>, made if absent and checked ours alone, open and flock()ed with
 * @op (LOCK_SH: an opener, LOCK_EX: a remover): the fd to close, or -errno
 * (logged).
 */
int kfab_shm_base_lock(const struct kfab_shm_base *base, int op);

/*
 * Makes <base> and <base>/<kind><n> if absent, each checked ours alone.
 * Under kfab_shm_base_lock(LOCK_SH) until what it is made for exists.
 */
int kfab_shm_dirs_ensure(const struct kfab_shm_base *base, const char *kind,
			 unsigned int n);

/* rmdir <kind><n> if empty, under kfab_shm_base_lock(LOCK_EX). */
void kfab_shm_rmdir(const struct kfab_shm_base *base, const char *kind,
		    unsigned int n);

/*
 * A temporary file <kind><n>/.<tmpname>.XXXXXX of @size bytes, mode 0600:
 * its fd, its name in @tmp. -EAGAIN when the directory went.
 */
int kfab_shm_tmp_create(const struct kfab_shm_base *base, const char *kind,
			unsigned int n, const char *tmpname, off_t size,
			char *tmp, size_t len);

/* link() @tmp to @path: 0, -EEXIST, -EAGAIN (directory gone). */
int kfab_shm_publish(const char *tmp, const char *path);

/* true when @path still names the file @st was taken of. */
bool kfab_shm_names(const char *path, const struct stat *st);

#define KFAB_SHM_CREATE	0x1	/* make it if absent */
#define KFAB_SHM_LOCK	0x2	/* hold LOCK_SH on the file the path names */
#define KFAB_SHM_WRITE	0x4	/* map it writable */

/*
 * A kind of one-page file, <kind><n>/<name> (@name also names it in
 * messages). Its page holds, at these offsets, the _Atomic uint64_t
 * @magic, the uint32_t @version and the uint32_t <n>: what tells one of
 * this library version for <kind><n>. @init fills the rest of a new one
 * before it is published (0, or -errno logged).
 */
struct kfab_shm_page_type {
	const char *kind;
	const char *name;
	uint64_t magic;
	uint32_t version;
	size_t magic_off;
	size_t version_off;
	size_t n_off;
	int (*init)(void *page, const void *arg, unsigned int n);
};

/*
 * Opens and maps the first page of the file of @type for <kind><n>
 * (KFAB_SHM_* @flags): the open file in *@fdp, the mapping in *@pagep.
 * With KFAB_SHM_CREATE an absent one is made complete, @type->init(@arg)
 * filling it, and link()ed into place (another process may be first).
 * -ENOENT without KFAB_SHM_CREATE when it does not exist, -EPROTO
 * (logged) when it is not one of @type of this version for <n>. With KFAB_SHM_CREATE or KFAB_SHM_LOCK
 * it runs under kfab_shm_base_lock().
 */
int kfab_shm_page_open(const struct kfab_shm_base *base,
		       const struct kfab_shm_page_type *type, unsigned int n,
		       int flags, const void *arg, int *fdp, void **pagep);

/*
 * Closes @fd, the file of @type for <kind><n> opened with KFAB_SHM_LOCK,
 * after removing the file when nobody else holds it and !@keep(@fd,
 * @arg): true when it did. Under kfab_shm_base_lock(LOCK_EX).
 */
bool kfab_shm_page_release(const struct kfab_shm_base *base,
			   const struct kfab_shm_page_type *type,
			   unsigned int n, int fd,
			   bool (*keep)(int fd, const void *arg),
			   const void *arg);

/*
 * @iov (@iovcnt entries, 1..KFAB_IOV_MAX) copied into @local, its bytes
 * in *@total: 0, or -EINVAL (logged as @what's).
 */
int kfab_shm_iov(struct iovec *local, const struct iovec *iov, int iovcnt,
		 uint64_t *total, const char *what);

/*
 * A new wakeup FIFO at @path (one a gone owner left is replaced), opened
 * O_RDWR | O_NONBLOCK: its fd, or -errno (logged).
 */
int kfab_shm_fifo_make(const char *path);

/* One byte into the wakeup FIFO @fd (full: a wakeup is pending): -errno. */
int kfab_shm_wake(int fd);

/* Empties the wakeup FIFO @fd. */
void kfab_shm_wake_drain(int fd);

/*
 * $@name: @def when unset or empty, else a decimal in @min..@max (a power
 * of two when @pow2). -EINVAL (logged) otherwise.
 */
int kfab_shm_env_u32(const char *name, uint32_t def, uint32_t min,
		     uint32_t max, bool pow2, uint32_t *val);

/*
 * With KFAB_SHM_PTRACER_ANY=1, lets every process of ours reach us with
 * process_vm_*v() under Yama ptrace_scope 1; once, *@done records it.
 */
void kfab_shm_ptracer_any(bool *done);

/* The knobs shared with other processes: relaxed single words. */
static inline uint32_t kfab_shm_load32(const uint32_t *p)
{
	return atomic_load_explicit((const _Atomic uint32_t *)p,
				    memory_order_relaxed);
}

static inline void kfab_shm_store32(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_relaxed);
}

/* A device's next peer handle, never 0: *@last is the one before. */
static inline uint32_t kfab_shm_peer_handle(uint32_t *last)
{
	return ++*last ? *last : ++*last;
}

/*
 * Whether a peer's queues may be used: -ECONNRESET once @dead (its
 * ring's dead word), -ENETDOWN while the state word @state of our status
 * page or @peer_state of the peer's is @down, else 0.
 */
static inline int kfab_shm_reach(uint32_t dead, const uint32_t *state,
				 const uint32_t *peer_state, uint32_t down)
{
	if (dead)
		return -ECONNRESET;
	return kfab_shm_load32(state) == down ||
	       kfab_shm_load32(peer_state) == down ? -ENETDOWN : 0;
}

/*
 * The start time of process @pid (clock ticks after boot, from
 * /proc/<pid>/stat), 0 when unknown: with the pid, what tells the owner
 * of a file of a backend from a later process given the same pid.
 */
uint64_t kfab_shm_start_time(pid_t pid);

/*
 * Whether the owner @pid, started at @start (0: unknown), still runs:
 * false when kill(pid, 0) says ESRCH, the process is a zombie or its
 * start time differs. A pid is the process's alone, whoever else holds
 * its files (a fork()ed child) and whatever user it runs as (kill() may
 * say EPERM: /proc decides). Without /proc, kill() has the last word.
 */
bool kfab_shm_alive(pid_t pid, uint64_t start);

/* link_rate_mbps: no earlier than the transfer of @bytes would end. */
void kfab_shm_pace(uint32_t mbps, uint64_t bytes);

/*
 * The single copy between @local (@iovcnt entries, consumed) and
 * [@addr, @addr + @total) of @pid: process_vm_writev() when @write, else
 * process_vm_readv(). *@bytes follows what is done. -EPERM where ptrace
 * rules forbid it (logged at @eperm_level), -ECONNRESET when @pid is gone,
 * else -errno logged as @what's.
 */
int kfab_shm_copy(pid_t pid, bool write, struct iovec *local, int iovcnt,
		  uint64_t addr, uint64_t total, uint64_t *bytes,
		  const char *what, enum kfab_log_level eperm_level);

#endif /* KFAB_ULIB_KFAB_SHM_H */
