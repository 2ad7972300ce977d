// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the helpers of the shm backends, see backend_shm.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "backend_shm.h"

int kfab_shm_base_init(struct kfab_shm_base *base)
{
	const char *dir = getenv("KFAB_SHM_DIR");
	int n;

	if (dir && *dir)
		n = snprintf(base->dir, sizeof(base->dir), "%s", dir);
	else
		n = snprintf(base->dir, sizeof(base->dir), "/dev/shm/kfab-%u",
			     (unsigned int)geteuid());
	if (n < 0 || (size_t)n >= sizeof(base->dir))
		return kfab_log_err(-ENAMETOOLONG, "shm: KFAB_SHM_DIR too long");
	return 0;
}

int kfab_shm_path(const struct kfab_shm_base *base, const char *kind,
		  unsigned int n, const char *name, char *buf, size_t len)
{
	int r = snprintf(buf, len, "%s/%s%u%s%s", base->dir, kind, n,
			 *name ? "/" : "", name);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/* @st (of @dir) refused unless a directory of ours alone: 0, -errno. */
static int dir_check(const char *dir, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return kfab_log_err(-ENOTDIR, "shm: %s", dir);
	if (st->st_uid != geteuid() || (st->st_mode & 0022)) {
		kfab_log(KFAB_LOG_WARN,
			 "shm: %s is not ours alone (uid %u mode %o): refused",
			 dir, (unsigned int)st->st_uid,
			 (unsigned int)(st->st_mode & 07777));
		return -EACCES;
	}
	return 0;
}

/* mkdir 0700 if absent; refuse one another user could write into. */
static int dir_ensure(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return kfab_log_err(-errno, "shm: mkdir %s", dir);
	if (lstat(dir, &st))
		return kfab_log_err(-errno, "shm: stat %s", dir);
	return dir_check(dir, &st);
}

int kfab_shm_base_lock(const struct kfab_shm_base *base, int op)
{
	struct stat st;
	int fd, ret;

	if (mkdir(base->dir, 0700) && errno != EEXIST)
		return kfab_log_err(-errno, "shm: mkdir %s", base->dir);
	fd = open(base->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return kfab_log_err(-errno, "shm: open %s", base->dir);
	if (fstat(fd, &st)) {
		ret = kfab_log_err(-errno, "shm: stat %s", base->dir);
		goto err;
	}
	ret = dir_check(base->dir, &st);
	if (ret)
		goto err;
	while (flock(fd, op))
		if (errno != EINTR) {
			ret = kfab_log_err(-errno, "shm: flock %s", base->dir);
			goto err;
		}
	return fd;
err:
	close(fd);
	return ret;
}

int kfab_shm_dirs_ensure(const struct kfab_shm_base *base, const char *kind,
			 unsigned int n)
{
	char dir[PATH_MAX];
	int ret;

	ret = kfab_shm_path(base, kind, n, "", dir, sizeof(dir));
	if (ret)
		return kfab_log_err(ret, "shm: directory of %s%u", kind, n);
	ret = dir_ensure(base->dir);
	return ret ? ret : dir_ensure(dir);
}

void kfab_shm_rmdir(const struct kfab_shm_base *base, const char *kind,
		    unsigned int n)
{
	char dir[PATH_MAX];
	int lock;

	if (kfab_shm_path(base, kind, n, "", dir, sizeof(dir)))
		return;
	lock = kfab_shm_base_lock(base, LOCK_EX);
	if (lock < 0)
		return;
	/* not empty (ENOTEMPTY) means in use: nothing to do */
	rmdir(dir);
	close(lock);
}

int kfab_shm_tmp_create(const struct kfab_shm_base *base, const char *kind,
			unsigned int n, const char *tmpname, off_t size,
			char *tmp, size_t len)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), ".%s.XXXXXX", tmpname);
	if (kfab_shm_path(base, kind, n, name, tmp, len))
		return kfab_log_err(-ENAMETOOLONG, "shm: %s file of %s%u",
				    tmpname, kind, n);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EAGAIN :
		       kfab_log_err(-errno, "shm: create %s", tmp);
	if (ftruncate(fd, size)) {
		int ret = kfab_log_err(-errno, "shm: size %s", tmp);

		unlink(tmp);
		close(fd);
		return ret;
	}
	return fd;
}

int kfab_shm_publish(const char *tmp, const char *path)
{
	if (!link(tmp, path))
		return 0;
	if (errno == EEXIST)
		return -EEXIST;
	if (errno == ENOENT)
		return -EAGAIN;
	return kfab_log_err(-errno, "shm: link %s", path);
}

bool kfab_shm_names(const char *path, const struct stat *st)
{
	struct stat now;

	return !stat(path, &now) && now.st_dev == st->st_dev &&
	       now.st_ino == st->st_ino;
}

/* The words of @type at their offsets in @page. */
static _Atomic uint64_t *page_magic(const struct kfab_shm_page_type *type,
				    void *page)
{
	return (_Atomic uint64_t *)((uint8_t *)page + type->magic_off);
}

static uint32_t *page_word(void *page, size_t off)
{
	return (uint32_t *)((uint8_t *)page + off);
}

/*
 * Makes the file of @type for <kind><n> at @path, complete, in one step:
 * 0, -EEXIST when another process was first, -EAGAIN when the directory
 * went meanwhile.
 */
static int page_make(const struct kfab_shm_base *base,
		     const struct kfab_shm_page_type *type, unsigned int n,
		     const void *arg, const char *path)
{
	size_t page = kfab_page_size();
	char tmp[PATH_MAX];
	void *p;
	int fd, ret;

	ret = kfab_shm_dirs_ensure(base, type->kind, n);
	if (ret)
		return ret;
	fd = kfab_shm_tmp_create(base, type->kind, n, type->name, (off_t)page,
				 tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	p = kfab_map(fd, 0, page, PROT_READ | PROT_WRITE);
	if (!p) {
		ret = kfab_log_err(-errno, "shm: mmap %s", tmp);
		goto out;
	}
	*page_word(p, type->n_off) = n;
	*page_word(p, type->version_off) = type->version;
	ret = type->init(p, arg, n);
	atomic_store_explicit(page_magic(type, p), type->magic,
			      memory_order_relaxed);
	munmap(p, page);
	if (!ret)
		ret = kfab_shm_publish(tmp, path);
	if (!ret)
		kfab_log(KFAB_LOG_DEBUG, "shm: %s made", path);
out:
	unlink(tmp);
	close(fd);
	return ret;
}

int kfab_shm_page_open(const struct kfab_shm_base *base,
		       const struct kfab_shm_page_type *type, unsigned int n,
		       int flags, const void *arg, int *fdp, void **pagep)
{
	bool wr = flags & KFAB_SHM_WRITE;
	size_t page = kfab_page_size();
	char path[PATH_MAX];
	struct stat st;
	int fd, ret, lock = -1;
	void *p;

	if (kfab_shm_path(base, type->kind, n, type->name, path, sizeof(path)))
		return kfab_log_err(-ENAMETOOLONG, "shm: %s file of %s%u",
				    type->name, type->kind, n);
	/* shared with other openers, excluding every remover: see .h */
	if (flags & (KFAB_SHM_CREATE | KFAB_SHM_LOCK)) {
		lock = kfab_shm_base_lock(base, LOCK_SH);
		if (lock < 0)
			return lock;
	}
	fd = open(path, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT && (flags & KFAB_SHM_CREATE)) {
		ret = page_make(base, type, n, arg, path);
		if (ret == -EAGAIN)
			ret = kfab_log_err(-ENOENT,
					   "shm: the directory of %s went while locked: removed by hand?",
					   path);
		if (ret && ret != -EEXIST)
			goto out;
		/* ours or another opener's: nobody can remove it now */
		fd = open(path, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC |
			  O_NOFOLLOW);
	}
	if (fd < 0) {
		ret = errno == ENOENT && !(flags & KFAB_SHM_CREATE) ? -ENOENT :
		      kfab_log_err(-errno, "shm: open %s", path);
		goto out;
	}
	if ((flags & KFAB_SHM_LOCK) && flock(fd, LOCK_SH)) {
		ret = kfab_log_err(-errno, "shm: flock %s", path);
		goto err;
	}
	if (fstat(fd, &st)) {
		ret = kfab_log_err(-errno, "shm: stat %s", path);
		goto err;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (size_t)st.st_size < page) {
		kfab_log(KFAB_LOG_WARN,
			 "shm: %s is not a %s file of ours (uid %u, size %lld): remove it",
			 path, type->name, (unsigned int)st.st_uid,
			 (long long)st.st_size);
		ret = -EPROTO;
		goto err;
	}
	p = kfab_map(fd, 0, page, PROT_READ | (wr ? PROT_WRITE : 0));
	if (!p) {
		ret = kfab_log_err(-errno, "shm: mmap %s", path);
		goto err;
	}
	if (atomic_load_explicit(page_magic(type, p), memory_order_relaxed) !=
	    type->magic || *page_word(p, type->version_off) != type->version ||
	    *page_word(p, type->n_off) != n) {
		munmap(p, page);
		kfab_log(KFAB_LOG_WARN,
			 "shm: %s: not a %s file of this library version: remove it",
			 path, type->name);
		ret = -EPROTO;
		goto err;
	}
	*fdp = fd;
	*pagep = p;
	ret = 0;
	goto out;
err:
	close(fd);
out:
	if (lock >= 0)
		close(lock);
	return ret;
}

bool kfab_shm_page_release(const struct kfab_shm_base *base,
			   const struct kfab_shm_page_type *type,
			   unsigned int n, int fd,
			   bool (*keep)(int fd, const void *arg),
			   const void *arg)
{
	char path[PATH_MAX];
	bool gone = false;
	struct stat st;
	int lock;

	lock = kfab_shm_base_lock(base, LOCK_EX);
	/* without the base lock an opener may be about to lock it: leave it */
	if (lock >= 0 && !flock(fd, LOCK_EX | LOCK_NB) && !keep(fd, arg) &&
	    !kfab_shm_path(base, type->kind, n, type->name, path,
			   sizeof(path)) &&
	    !fstat(fd, &st) && kfab_shm_names(path, &st))
		gone = !unlink(path);
	close(fd);
	if (lock >= 0)
		close(lock);
	return gone;
}

int kfab_shm_iov(struct iovec *local, const struct iovec *iov, int iovcnt,
		 uint64_t *total, const char *what)
{
	*total = 0;
	if (iovcnt < 1 || iovcnt > KFAB_IOV_MAX)
		return kfab_log_err(-EINVAL, "shm: %s of %d iovecs (1..%d)",
				    what, iovcnt, KFAB_IOV_MAX);
	for (int i = 0; i < iovcnt; i++) {
		if (*total + iov[i].iov_len < *total)
			return kfab_log_err(-EINVAL, "shm: %s length overflow",
					    what);
		*total += iov[i].iov_len;
		local[i] = iov[i];
	}
	return 0;
}

int kfab_shm_fifo_make(const char *path)
{
	int fd;

	unlink(path);
	if (mkfifo(path, 0600))
		return kfab_log_err(-errno, "shm: mkfifo %s", path);
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return kfab_log_err(-errno, "shm: open %s", path);
	return fd;
}

int kfab_shm_wake(int fd)
{
	ssize_t n;

	do {
		n = write(fd, "", 1);
	} while (n < 0 && errno == EINTR);
	return n < 0 && errno != EAGAIN ? -errno : 0;
}

void kfab_shm_wake_drain(int fd)
{
	char buf[256];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

int kfab_shm_env_u32(const char *name, uint32_t def, uint32_t min,
		     uint32_t max, bool pow2, uint32_t *val)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	*val = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || *s < '0' || *s > '9' || v < min || v > max ||
	    (pow2 && (v & (v - 1)))) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be %s in %u..%u (default %u)", name, s,
			 pow2 ? "a power of two" : "an integer", min, max,
			 def);
		return -EINVAL;
	}
	*val = (uint32_t)v;
	return 0;
}

void kfab_shm_ptracer_any(bool *done)
{
	const char *s = getenv("KFAB_SHM_PTRACER_ANY");

	if (*done)
		return;
	/* EINVAL without Yama: nothing to allow then */
	if (s && !strcmp(s, "1"))
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	*done = true;
}

void kfab_shm_pace(uint32_t mbps, uint64_t bytes)
{
	struct timespec ts;
	uint64_t ns;

	if (!mbps)
		return;
	ns = bytes * 8000 / mbps;
	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* State and start time of @pid from /proc: 0, or -1 when unreadable. */
static int shm_proc_stat(pid_t pid, char *state, uint64_t *start)
{
	char path[64], buf[1024], *p, *save = NULL, *tok;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* the command name may hold anything but ends at the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* field 3 is the state, field 22 the start time */
	for (i = 3, tok = strtok_r(p + 1, " ", &save); tok && i < 22;
	     i++, tok = strtok_r(NULL, " ", &save))
		if (i == 3)
			*state = tok[0];
	if (!tok)
		return -1;
	*start = strtoull(tok, NULL, 10);
	return 0;
}

uint64_t kfab_shm_start_time(pid_t pid)
{
	uint64_t start;
	char state;

	return shm_proc_stat(pid, &state, &start) ? 0 : start;
}

bool kfab_shm_alive(pid_t pid, uint64_t start)
{
	uint64_t now;
	char state = 'R';

	if (pid <= 0)
		return false;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	if (shm_proc_stat(pid, &state, &now))
		return true;	/* no /proc: kill() has the last word */
	if (state == 'Z' || state == 'X')
		return false;
	return !start || now == start;
}

int kfab_shm_copy(pid_t pid, bool write, struct iovec *local, int iovcnt,
		  uint64_t addr, uint64_t total, uint64_t *bytes,
		  const char *what, enum kfab_log_level eperm_level)
{
	uint64_t done = 0;
	int first = 0;

	while (done < total) {
		struct iovec remote;
		ssize_t n;

		/* skip what is done: process_vm_*v may stop short */
		while (first < iovcnt && !local[first].iov_len)
			first++;
		remote.iov_base = (void *)(uintptr_t)(addr + done);
		remote.iov_len = total - done;
		if (write)
			n = process_vm_writev(pid, &local[first],
					      (unsigned long)(iovcnt - first),
					      &remote, 1, 0);
		else
			n = process_vm_readv(pid, &local[first],
					     (unsigned long)(iovcnt - first),
					     &remote, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPERM || errno == ENOSYS)) {
			kfab_log(eperm_level,
				 "shm: %s with pid %d not permitted: ptrace rules forbid it (see /proc/sys/kernel/yama/ptrace_scope, or set KFAB_SHM_PTRACER_ANY=1 in the memory's owner)",
				 what, (int)pid);
			return -EPERM;
		}
		if (n < 0 && errno == ESRCH)
			return -ECONNRESET;
		if (n < 0)
			return kfab_log_err(-errno,
					    "shm: %s with pid %d at %#llx (the memory is no longer mapped?)",
					    what, (int)pid,
					    (unsigned long long)(addr + done));
		if (!n)
			return kfab_log_err(-EFAULT, "shm: %s made no progress",
					    what);
		done += (uint64_t)n;
		*bytes = done;
		for (size_t left = (size_t)n; left && first < iovcnt;) {
			size_t k = local[first].iov_len < left ?
				   local[first].iov_len : left;
			uint8_t *b = local[first].iov_base;

			local[first].iov_base = b + k;
			local[first].iov_len -= k;
			left -= k;
			if (!local[first].iov_len)
				first++;
		}
	}
	return 0;
}
