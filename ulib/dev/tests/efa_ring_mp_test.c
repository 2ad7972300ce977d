// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the SRD receive ring (ulib/dev/efa_ring.c) with many producers,
 * threads then processes, into one owner that sleeps and is woken: each
 * packet delivered exactly once and in its producer's order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "efa_ring_mem.h"

/* many producers: threads, then processes */

#define MP_MAX		4
#define MP_PACKETS	20000
/* a sleeping owner not woken within this has lost a wakeup */
#define WAKE_MS		3000

static size_t mp_len(uint32_t pid, uint32_t i)
{
	return i % 4 == 0 ? 0 : 1 + (pid * 7 + i) % 300;
}

static void mp_gid(uint8_t gid[KFAB_EFA_GID_LEN], uint32_t pid)
{
	for (int k = 0; k < KFAB_EFA_GID_LEN; k++)
		gid[k] = (uint8_t)(pid * 16 + k);
}

/* Producer @pid's packets, retried on rnr; false on the deadline or @stop. */
static bool mp_produce(struct kfab_efa_ring *pr, uint32_t pid, int efd,
		       uint64_t deadline, atomic_bool *stop)
{
	uint8_t gid[KFAB_EFA_GID_LEN], pl[320];
	uint64_t one = 1;

	mp_gid(gid, pid);
	for (uint32_t i = 0; i < MP_PACKETS; i++) {
		uint32_t hdr[2] = { pid, i };
		size_t len = mp_len(pid, i);
		int ret;

		xp_fill(pl, len, pid << 24 | i);
		while ((ret = kfab_efa_ring_send(pr, hdr, sizeof(hdr),
						 pid << 24 ^ i, gid,
						 0x100 + pid, pl, len, NULL, NULL)) ==
		       -EAGAIN) {
			if ((stop && atomic_load(stop)) || xp_ns() > deadline)
				return false;
			sched_yield();
		}
		if (ret == KFAB_EFA_RING_NOTIFY &&
		    write(efd, &one, sizeof(one)) != sizeof(one))
			return false;
		if (ret < 0)
			return false;
		/* give the owner chances to go to sleep */
		if (i % 1024 == 0)
			usleep(20);
	}
	return true;
}

struct mp_result {
	uint32_t total, dup, order, bad, lost, sleeps;
	bool timeout;
};

/* The owner: consumes @nprod producers' packets, sleeping when empty. */
static void mp_consume(struct kfab_efa_ring *r, int efd, uint32_t nprod,
		       uint64_t deadline, struct mp_result *res)
{
	static uint8_t seen[MP_MAX][MP_PACKETS];
	uint32_t next[MP_MAX] = { 0 };
	struct kfab_efa_ring_entry e;

	memset(seen, 0, sizeof(seen));
	memset(res, 0, sizeof(*res));
	kfab_efa_ring_post(r, r->entries);
	while (res->total < nprod * MP_PACKETS) {
		struct pollfd pfd = { .fd = efd, .events = POLLIN };
		uint8_t gid[KFAB_EFA_GID_LEN];
		uint32_t hdr[2];
		uint64_t v;

		if (kfab_efa_ring_poll(r, &e) == 1) {
			memcpy(hdr, e.hdr, sizeof(hdr));
			if (hdr[0] >= nprod || hdr[1] >= MP_PACKETS) {
				res->bad++;
			} else {
				size_t len = mp_len(hdr[0], hdr[1]);

				mp_gid(gid, hdr[0]);
				res->dup += seen[hdr[0]][hdr[1]]++ != 0;
				/* one producer's tickets are increasing */
				res->order += hdr[1] != next[hdr[0]];
				next[hdr[0]] = hdr[1] + 1;
				res->bad += e.len != len ||
					    e.imm != (hdr[0] << 24 ^ hdr[1]) ||
					    e.src_qpn != 0x100 + hdr[0] ||
					    memcmp(e.src_gid, gid,
						   sizeof(gid)) ||
					    !xp_all(e.hdr + sizeof(hdr),
						 KFAB_EFA_RX_HDR_BYTES -
						 sizeof(hdr), 0) ||
					    (len && !xp_check(e.payload, len,
							   hdr[0] << 24 |
							   hdr[1]));
			}
			kfab_efa_ring_release(r);
			kfab_efa_ring_post(r, 1);
			res->total++;
			continue;
		}
		if (xp_ns() > deadline) {
			res->timeout = true;
			break;
		}
		if (!kfab_efa_ring_arm(r))
			continue;
		res->sleeps++;
		if (poll(&pfd, 1, WAKE_MS) != 1) {
			res->lost++;
			tap_diag("no wakeup within %d ms at %u", WAKE_MS,
				 res->total);
			continue;
		}
		(void)!read(efd, &v, sizeof(v));
	}
}

static void mp_report(const char *what, const struct mp_result *res,
		      uint32_t nprod)
{
	TAP_OK(!res->timeout && res->total == nprod * MP_PACKETS,
	       "%s: %u packets received of %u", what, res->total,
	       nprod * MP_PACKETS);
	TAP_EQ(res->dup, 0, "%s: no packet twice", what);
	TAP_EQ(res->order, 0, "%s: each producer's order kept", what);
	TAP_EQ(res->bad, 0, "%s: every field intact", what);
	TAP_EQ(res->lost, 0, "%s: no lost wakeup in %u sleeps", what,
	       res->sleeps);
}

struct mp_arg {
	struct kfab_efa_ring *pr;	/* one view shared by all threads */
	uint32_t pid;
	int efd;
	uint64_t deadline;
	atomic_bool *stop;
	bool ok;
};

static void *mp_thread(void *p)
{
	struct mp_arg *a = p;

	a->ok = mp_produce(a->pr, a->pid, a->efd, a->deadline, a->stop);
	return NULL;
}

static void test_threads(void)
{
	struct mp_arg a[MP_MAX];
	pthread_t t[MP_MAX];
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	struct mp_result res;
	atomic_bool stop = false;
	uint64_t deadline = xp_ns() + DEADLINE_NS;
	uint32_t ok = 0;
	struct mem m;
	int efd;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, true);
	/* the shared view's draw is taken by all threads at once */
	set_ppm(&m, 20000);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	for (uint32_t i = 0; i < MP_MAX; i++) {
		a[i] = (struct mp_arg){ .pr = &pr, .pid = i, .efd = efd,
					.deadline = deadline, .stop = &stop };
		pthread_create(&t[i], NULL, mp_thread, &a[i]);
	}
	mp_consume(&r, efd, MP_MAX, deadline, &res);
	atomic_store(&stop, true);
	for (uint32_t i = 0; i < MP_MAX; i++) {
		pthread_join(t[i], NULL);
		ok += a[i].ok;
	}
	mp_report("threads", &res, MP_MAX);
	TAP_EQ(ok, MP_MAX, "threads: %d producers done", MP_MAX);
	TAP_EQ(kfab_efa_ring_poll(&r, &e), 0, "threads: nothing extra");
	TAP_OK(m.ctrl->tail == MP_MAX * MP_PACKETS && m.ctrl->injected_rnrs,
	       "threads: tail %u, %llu rnrs and %llu injected retried",
	       m.ctrl->tail, (unsigned long long)m.ctrl->rnrs,
	       (unsigned long long)m.ctrl->injected_rnrs);
	close(efd);
	mem_free(&m);
}

#define FORK_CHILDREN	2

static void test_fork(void)
{
	struct kfab_efa_ring r, pr;
	struct kfab_efa_ring_entry e;
	struct mp_result res;
	uint64_t deadline = xp_ns() + DEADLINE_NS;
	pid_t pid[FORK_CHILDREN];
	uint32_t ok = 0;
	struct mem m;
	int efd;

	mem_ring(&m, &r, 64, 8192);
	mem_peer(&m, &pr, false);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fflush(stdout);
	for (uint32_t i = 0; i < FORK_CHILDREN; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(mp_produce(&pr, i, efd, deadline, NULL) ? 0 : 1);
		if (pid[i] < 0) {
			TAP_OK(0, "fork: %s", strerror(errno));
			while (i--) {
				kill(pid[i], SIGKILL);
				waitpid(pid[i], NULL, 0);
			}
			close(efd);
			mem_free(&m);
			return;
		}
	}
	mp_consume(&r, efd, FORK_CHILDREN, deadline, &res);
	for (uint32_t i = 0; i < FORK_CHILDREN; i++) {
		int status = 0;
		pid_t w;

		while ((w = waitpid(pid[i], &status, WNOHANG)) == 0 &&
		       xp_ns() < deadline + NS)
			usleep(1000);
		if (w == 0) {
			kill(pid[i], SIGKILL);
			waitpid(pid[i], &status, 0);
			continue;
		}
		ok += w == pid[i] && WIFEXITED(status) && !WEXITSTATUS(status);
	}
	mp_report("fork", &res, FORK_CHILDREN);
	TAP_EQ(ok, FORK_CHILDREN, "fork: %d producer processes done",
	       FORK_CHILDREN);
	TAP_EQ(kfab_efa_ring_poll(&r, &e), 0, "fork: nothing extra");
	TAP_EQ(m.ctrl->tail, FORK_CHILDREN * MP_PACKETS,
	       "fork: every ticket taken once");
	close(efd);
	mem_free(&m);
}

int main(void)
{
	tap_start("libkfab: efa_ring, many producers");
	test_threads();
	test_fork();
	return tap_done();
}
