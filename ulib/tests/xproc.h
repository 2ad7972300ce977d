/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the libkfab tests of both device layers share: the log sink, seeded
 * payloads, the clock, anonymous mappings, files left behind, a private
 * $KFAB_SHM_DIR, messages between a parent and its forked child (structs
 * that begin with their uint32_t kind, over a pipe or a socket), forking
 * and reaping that child, and the packet stream between them.
 */
#ifndef KFAB_ULIB_XPROC_H
#define KFAB_ULIB_XPROC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "core/kfab_log.h"
#include "tap.h"

static inline void xp_log(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_INFO)
		tap_diag("log: %s", msg);
}

static inline void xp_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

/* @buf holds what xp_fill() wrote with @seed. */
static inline bool xp_check(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		if (p[i] != (uint8_t)(seed >> 16))
			return false;
	}
	return true;
}

/* Every byte of @buf is @v. */
static inline bool xp_all(const void *buf, size_t len, uint8_t v)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Payload length of packet @i: 0 to @max, a few of each kind. */
static inline size_t xp_len(uint32_t i, uint32_t max)
{
	switch (i % 5) {
	case 0: return 0;
	case 1: return 1;
	case 2: return max;
	default: return (i * 131u) % max;
	}
}

static inline uint64_t xp_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static inline uint64_t xp_ms(void)
{
	return xp_ns() / 1000000;
}

/* @len bytes of private anonymous memory, or NULL. */
static inline void *xp_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Files left under @path, recursively (directories not counted). */
static inline int xp_files_under(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char sub[512];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub) || lstat(sub, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			n += xp_files_under(sub);
		} else {
			tap_diag("left: %s", sub);
			n++;
		}
	}
	closedir(d);
	return n;
}

/*
 * The message @m of @len bytes: 0 or -EIO. A peer gone gives EPIPE, not
 * SIGPIPE, where the caller ignores SIGPIPE.
 */
static inline int xp_send(int fd, const void *m, size_t len)
{
	return write(fd, m, len) == (ssize_t)len ? 0 : -EIO;
}

/*
 * The next message into @m within @timeout_ms: 0 when it is of @kind,
 * -EPROTO when it is another, -ETIMEDOUT or -EPIPE.
 */
static inline int xp_recv(int fd, void *m, size_t len, uint32_t kind,
			  int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t got;

	if (poll(&p, 1, timeout_ms) != 1)
		return -ETIMEDOUT;
	if (read(fd, m, len) != (ssize_t)len)
		return -EPIPE;
	memcpy(&got, m, sizeof(got));
	return got == kind ? 0 : -EPROTO;
}

/*
 * Forks a child talking over the pipes @down (parent to child) and @up
 * (child to parent): 0 in the child, which reads down[0], writes up[1]
 * and is killed after 120 s; in the parent the child's pid (or -1), the
 * child's ends closed.
 */
static inline pid_t xp_fork(int down[2], int up[2])
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(down[1]);
		close(up[0]);
		alarm(120);
		return 0;
	}
	close(down[0]);
	close(up[1]);
	return pid;
}

/*
 * One device's end of a stream of packets (xp_stream(), xp_echo()), each
 * call given the end's @arg. Packet i is an xp_fill()ed header (seed i)
 * and an xp_len() payload (seed ~i).
 */
struct xp_io {
	/* packet @i to the peer: 0, -EAGAIN while it is full, or -errno */
	int (*send)(void *arg, uint32_t i);
	/* the next packet received, held until release: 1, or 0 none */
	int (*poll)(void *arg);
	/* the held packet back to the peer as it came: as send */
	int (*echo)(void *arg);
	/* releases the held packet: true when it is packet @i, byte-exact */
	bool (*release)(void *arg, uint32_t i);
	/* step 6 of the sleep: the fd to poll once armed, -1 when not empty */
	int (*arm)(void *arg);
	/* the wakeup taken from that fd */
	void (*drain)(void *arg);
};

/* Sleeps until woken, at most @ms: 1 woken, 0 not empty, -1 timeout. */
static inline int xp_sleep(const struct xp_io *io, void *arg, int ms)
{
	struct pollfd p = { .fd = io->arm(arg), .events = POLLIN };

	if (p.fd < 0)
		return 0;
	if (poll(&p, 1, ms) != 1)
		return -1;
	io->drain(arg);
	return 1;
}

/* What a stream did: packets sent, received, not exact; fulls, sleeps. */
struct xp_tally {
	uint32_t sent, got, bad, eagain, sleeps;
};

/*
 * @packets packets sent and as many received (the peer's xp_echo()),
 * for 60 s at most, sleeping (@wait_ms at most) once all are sent and
 * none is there; a send that fails is a point named after @name.
 */
static inline void xp_stream(const struct xp_io *io, void *arg,
			     uint32_t packets, int wait_ms, const char *name,
			     struct xp_tally *t)
{
	uint64_t deadline = xp_ms() + 60000;
	int ret;

	while ((t->sent < packets || t->got < packets) &&
	       xp_ms() < deadline) {
		bool progress = false;

		if (t->sent < packets) {
			ret = io->send(arg, t->sent);
			if (!ret) {
				t->sent++;
				progress = true;
			} else if (ret == -EAGAIN) {
				t->eagain++;
			} else {
				TAP_EQ(ret, 0, "%s: send %u", name, t->sent);
				break;
			}
		}
		while (io->poll(arg)) {
			t->bad += !io->release(arg, t->got);
			t->got++;
			progress = true;
		}
		if (!progress && t->sent == packets) {
			ret = xp_sleep(io, arg, wait_ms);
			if (ret < 0)
				break;
			t->sleeps += ret;
		} else if (!progress) {
			sched_yield();
		}
	}
}

/*
 * Each of @packets packets received sent back as it came (retried while
 * the peer is full), sleeping (@wait_ms at most) when none is there: 0,
 * -ETIMEDOUT when none came, or the echo's -errno.
 */
static inline int xp_echo(const struct xp_io *io, void *arg,
			  uint32_t packets, int wait_ms, struct xp_tally *t)
{
	while (t->got < packets) {
		long tries = 0;
		int ret;

		if (!io->poll(arg)) {
			ret = xp_sleep(io, arg, wait_ms);
			if (ret < 0)
				return -ETIMEDOUT;
			t->sleeps += ret;
			continue;
		}
		while ((ret = io->echo(arg)) == -EAGAIN &&
		       tries++ <= 10000000)
			sched_yield();
		if (ret)
			return ret;
		t->bad += !io->release(arg, t->got);
		t->got++;
	}
	return 0;
}

/*
 * $KFAB_SHM_DIR into @dir, or a new directory under $TMPDIR (else /tmp)
 * named after @name, made $KFAB_SHM_DIR: true when it is ours to remove
 * (xp_shm_dir_done()). Skips every test when it cannot be made.
 */
static inline bool xp_shm_dir(char *dir, size_t len, const char *name)
{
	const char *env = getenv("KFAB_SHM_DIR");
	const char *tmp = getenv("TMPDIR");
	bool own = !env || !*env;

	if (own) {
		snprintf(dir, len, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp",
			 name);
		if (!mkdtemp(dir))
			tap_skip_all("mkdtemp %s failed", dir);
	} else {
		snprintf(dir, len, "%s", env);
	}
	setenv("KFAB_SHM_DIR", dir, 1);
	tap_diag("KFAB_SHM_DIR=%s", dir);
	return own;
}

/* The tests left no file in @dir, which goes when @own. */
static inline void xp_shm_dir_done(const char *dir, bool own)
{
	TAP_EQ(xp_files_under(dir), 0, "cleanup: no files left in %s", dir);
	if (own)
		TAP_EQ(rmdir(dir), 0, "cleanup: the directory is empty");
}

/* Waits @timeout_ms for child @pid, then kills it: its wait status. */
static inline int xp_reap(pid_t pid, int timeout_ms)
{
	int status = 0;
	pid_t ret = 0;

	for (int i = 0; i < timeout_ms / 10; i++) {
		ret = waitpid(pid, &status, WNOHANG);
		if (ret == pid)
			break;
		usleep(10000);
	}
	if (ret != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	return status;
}

/*
 * @procs processes, started together, each running @cycle(proc, i) for
 * i in 0..@cycles - 1 (a cycle returns 0 or -errno): the cycles that
 * failed in all, the first failure's -errno in *@first_err. A process
 * that does not finish within @timeout_ms counts all its cycles failed.
 */
static inline int xp_storm(int procs, int cycles, int timeout_ms,
			   int (*cycle)(int proc, int i), int *first_err)
{
	int go[2], up[2], failed = 0;
	pid_t pids[64];

	*first_err = 0;
	if (procs > 64 || pipe(go) || pipe(up))
		return procs * cycles;
	fflush(stdout);
	for (int p = 0; p < procs; p++) {
		pids[p] = fork();
		if (!pids[p]) {
			int res[2] = { 0, 0 };
			char c;

			close(go[1]);
			close(up[0]);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			for (int i = 0; i < cycles; i++) {
				int ret = cycle(p, i);

				if (ret && !res[0]++)
					res[1] = ret;
			}
			_exit(write(up[1], res, sizeof(res)) != sizeof(res));
		}
	}
	close(go[0]);
	close(up[1]);
	/* all at once: every child waits for its byte */
	for (int p = 0; p < procs; p++)
		if (pids[p] < 0 || write(go[1], "g", 1) != 1)
			failed += cycles;
	close(go[1]);
	for (int p = 0; p < procs; p++) {
		int res[2], status;

		if (pids[p] < 0)
			continue;
		status = xp_reap(pids[p], timeout_ms);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			failed += cycles;
			continue;
		}
		if (read(up[0], res, sizeof(res)) != sizeof(res)) {
			failed += cycles;
			continue;
		}
		failed += res[0];
		if (res[0] && !*first_err)
			*first_err = res[1];
	}
	close(up[0]);
	return failed;
}

/*
 * xp_storm() for 120 s at most: none of its @what cycles fails, and no
 * file is left in @dir.
 */
static inline void xp_storm_test(int procs, int cycles,
				 int (*cycle)(int proc, int i),
				 const char *what, const char *dir)
{
	int err, failed = xp_storm(procs, cycles, 120000, cycle, &err);

	TAP_EQ(failed, 0,
	       "storm: %d processes, %d %s cycles each: none fails (first error %d)",
	       procs, cycles, what, err);
	TAP_EQ(xp_files_under(dir), 0, "storm: no files left");
}

#endif /* KFAB_ULIB_XPROC_H */
