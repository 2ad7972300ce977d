// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: wait objects of CQs and counters, and sleeping on the data
 * path's eventfd wakeup (DESIGN.md, "Eventfd wakeup").
 *
 * An object with a wait object owns an eventfd (its own wakeups:
 * fi_cq_signal(), completions written by another thread while one
 * sleeps) and an epoll set holding that eventfd and the wakeup fd of
 * every endpoint bound to it (an eventfd the kernel signals on the kmod
 * backend, a FIFO on shm). The epoll fd is what FI_GETWAIT returns and
 * what a sleeper polls.
 *
 * To sleep, a thread arms every endpoint's queue (step 6 of the queue
 * protocol: set armed, full fence, re-check); only when all are still
 * empty does it drop the domain lock and poll. A producer that finds the
 * armed word set notifies, so no packet is missed. Endpoints with
 * unacknowledged packets bound the sleep to their reliability tick.
 * Nothing here runs on the hot path: writers test one word
 * (kfab_wait_written()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "kfab_prov.h"

#define WAIT_EVENTS	8

uint64_t kfab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int kfab_wait_init(const struct kfab_provider *kp, struct kfab_waitobj *w,
		   enum fi_wait_obj type, bool fds, const char *what)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	memset(w, 0, sizeof(*w));
	w->efd = -1;
	w->epfd = -1;
	switch (type) {
	case FI_WAIT_NONE:
		break;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		fds = true;
		break;
	case FI_WAIT_SET:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
	case FI_WAIT_POLLFD:
		kfab_warn(kp, FI_LOG_CQ,
			  "%s: wait object %d is not supported: use FI_WAIT_FD (or FI_WAIT_UNSPEC) and epoll the fd of FI_GETWAIT\n",
			  what, (int)type);
		return -FI_ENOSYS;
	default:
		kfab_warn(kp, FI_LOG_CQ,
			  "%s: wait object %d is not an enum fi_wait_obj value\n",
			  what, (int)type);
		return -FI_EINVAL;
	}
	w->type = type == FI_WAIT_UNSPEC ? FI_WAIT_FD : type;
	if (!fds)
		return 0;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = NULL;
	if (w->efd < 0 || w->epfd < 0 ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev)) {
		ret = -errno;
		kfab_warn(kp, FI_LOG_CQ,
			  "%s: cannot create the wait object's fds: %s (raise RLIMIT_NOFILE?)\n",
			  what, strerror(errno));
		kfab_wait_fini(w);
		return ret;
	}
	return 0;
}

void kfab_wait_fini(struct kfab_waitobj *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->efd >= 0)
		close(w->efd);
	w->epfd = -1;
	w->efd = -1;
}

int kfab_wait_add(struct kfab_waitobj *w, struct kfab_progress *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

	if (w->epfd < 0 || ep->wake_fd < 0)
		return 0;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ep->wake_fd, &ev))
		return -errno;
	return 0;
}

void kfab_wait_del(struct kfab_waitobj *w, struct kfab_progress *ep)
{
	if (w->epfd >= 0 && ep->wake_fd >= 0)
		epoll_ctl(w->epfd, EPOLL_CTL_DEL, ep->wake_fd, NULL);
}

void kfab_wait_kick(struct kfab_waitobj *w)
{
	uint64_t one = 1;
	ssize_t n;

	w->try_armed = false;
	if (w->efd < 0)
		return;
	n = write(w->efd, &one, sizeof(one));
	(void)n;	/* a full counter is readable anyway */
}

/* Drains what is readable in the set: its eventfd and the endpoints'. */
static void wait_drain(struct kfab_waitobj *w)
{
	struct epoll_event ev[WAIT_EVENTS];
	uint64_t v;
	int n = epoll_wait(w->epfd, ev, WAIT_EVENTS, 0);

	for (int i = 0; i < n; i++) {
		struct kfab_progress *ep = ev[i].data.ptr;

		if (!ep) {
			while (read(w->efd, &v, sizeof(v)) == sizeof(v))
				;
		} else {
			ep->drain(ep);
		}
	}
}

/* Arms every endpoint: false when one got a packet; *@usec the bound. */
static bool wait_arm(struct kfab_progress **eps, int neps, long *usec)
{
	*usec = -1;
	for (int i = 0; i < neps; i++) {
		long u;

		if (!eps[i]->arm(eps[i], &u))
			return false;
		if (u >= 0 && (*usec < 0 || u < *usec))
			*usec = u;
	}
	return true;
}

int kfab_wait_sleep(struct kfab_domain *domain, struct kfab_waitobj *w,
		    struct kfab_progress **eps, int neps, uint64_t deadline_ns,
		    bool app)
{
	struct pollfd pfd = { .fd = w->epfd, .events = POLLIN };
	struct timespec ts;
	uint64_t sleep_ns = UINT64_MAX;
	long usec;

	int ret = 0;

	/* a completion the tick writes while arming must wake us */
	if (app)
		w->sleepers++;
	if (!wait_arm(eps, neps, &usec))
		goto out;
	if (usec >= 0)
		sleep_ns = (uint64_t)usec * 1000u;
	if (deadline_ns) {
		uint64_t now = kfab_now_ns();

		if (now >= deadline_ns) {
			ret = -FI_ETIMEDOUT;
			goto out;
		}
		if (deadline_ns - now < sleep_ns)
			sleep_ns = deadline_ns - now;
	}
	ts.tv_sec = (time_t)(sleep_ns / 1000000000u);
	ts.tv_nsec = (long)(sleep_ns % 1000000000u);
	kfab_unlock(&domain->lock);
	ppoll(&pfd, 1, sleep_ns == UINT64_MAX ? NULL : &ts, NULL);
	kfab_lock(&domain->lock);
	wait_drain(w);
out:
	if (app)
		w->sleepers--;
	return ret;
}

int kfab_wait_try(struct kfab_waitobj *w, struct kfab_progress **eps, int neps)
{
	long usec;

	wait_drain(w);
	if (!wait_arm(eps, neps, &usec))
		return -FI_EAGAIN;
	w->try_armed = true;
	return 0;
}

int kfab_wait_control(const struct kfab_provider *kp, struct kfab_waitobj *w,
		      int command, void *arg, const char *what)
{
	if (command != FI_GETWAIT) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_control(%s): command %d: only FI_GETWAIT\n",
			  what, command);
		return -FI_ENOSYS;
	}
	if (w->type != FI_WAIT_FD) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_control(FI_GETWAIT): the %s has no fd: open it with FI_WAIT_FD\n",
			  what);
		return -FI_ENODATA;
	}
	*(int *)arg = w->epfd;
	return 0;
}

int kfab_eps_attach(const struct kfab_provider *kp, struct kfab_eps *s,
		    struct kfab_waitobj *w, struct kfab_progress *ep,
		    const char *what,
		    int (*first)(void *obj, struct kfab_progress *ep),
		    void *obj)
{
	int i, ret;

	for (i = 0; i < s->n && s->v[i] != ep; i++)
		;
	if (i == s->n) {
		if (s->n == KFAB_CQ_MAX_EPS) {
			kfab_warn(kp, FI_LOG_CQ,
				  "a %s serves at most %d endpoints: open another %s\n",
				  what, KFAB_CQ_MAX_EPS, what);
			return -FI_ENOSPC;
		}
		ret = kfab_wait_add(w, ep);
		if (ret) {
			kfab_warn(kp, FI_LOG_CQ,
				  "cannot add the endpoint's wakeup fd to the %s's wait object: %s\n",
				  what, strerror(-ret));
			return ret;
		}
		if (first && (ret = first(obj, ep))) {
			kfab_wait_del(w, ep);
			return ret;
		}
		s->refs[s->n] = 0;
		s->v[s->n++] = ep;
	}
	s->refs[i]++;
	return 0;
}

bool kfab_eps_detach(struct kfab_eps *s, struct kfab_waitobj *w,
		     struct kfab_progress *ep)
{
	for (int i = 0; i < s->n; i++) {
		if (s->v[i] != ep)
			continue;
		if (--s->refs[i])
			return false;
		kfab_wait_del(w, ep);
		s->n--;
		s->v[i] = s->v[s->n];
		s->refs[i] = s->refs[s->n];
		return true;
	}
	return false;
}
