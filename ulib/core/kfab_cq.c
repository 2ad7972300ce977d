// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the completion queue.
 *
 * Completions go to a ring of cq->size entries (kfab_cq_write(), inline in
 * kfab_prov.h); when it is full they go on to an overflow list, so that
 * nothing is ever dropped, and keep going there until the list is empty
 * again. Every ring entry is thus older than every list entry, and reads
 * drain the ring first. Error completions wait on their own list: a read
 * returns -FI_EAVAIL while one is queued, fi_cq_readerr() takes it.
 *
 * A read first progresses every endpoint bound to the CQ. Everything runs
 * under the domain lock.
 *
 * Wait objects (FI_WAIT_FD, FI_WAIT_UNSPEC): see kfab_wait.c; fi_cq_sread
 * sleeps there. FI_PROGRESS_AUTO: a thread per CQ, started when the first
 * endpoint binds, progresses the CQ's endpoints every auto_usec
 * microseconds (struct kfab_progress; kfab_opx's
 * FI_OPX_AUTO_PROGRESS_INTERVAL_USEC) and, after
 * CQ_AUTO_IDLE_NS without a packet, sleeps on their wakeup fds like
 * fi_cq_sread does, in a wait object of its own: the CQ's eventfd is the
 * application's (fi_cq_signal(), the kick after fi_trywait()), which
 * only the application drains, or its poll() of FI_GETWAIT's fd could
 * miss the kick. It stops and is joined when the CQ closes.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_prov.h"

#define CQ_DEFAULT_SIZE	1024
#define CQ_MAX_SIZE	(1U << 24)
/* Auto progress polls this long without a packet, then sleeps. */
#define CQ_AUTO_IDLE_NS	1000000u

struct kfab_progress_thread {
	pthread_t thread;
	struct kfab_cq *cq;
	/* its own eventfd and the endpoints' wakeup fds */
	struct kfab_waitobj wait;
	bool stop;			/* under the domain lock */
};

/* Progress threads started in the process: round robin over CPUs. */
static unsigned int cq_threads_started;

struct kfab_cq_over {
	struct kfab_list link;		/* cq->overflow */
	struct kfab_cq_entry ent;
};

static inline struct kfab_cq *to_cq(struct fid_cq *cq_fid)
{
	return kfab_container_of(cq_fid, struct kfab_cq, cq_fid);
}

static inline const struct kfab_provider *cq_kp(const struct kfab_cq *cq)
{
	return cq->domain->kp;
}

/* ------------------------------------------------------------------ */
/* writers */

int kfab_cq_write_over(struct kfab_cq *cq, const struct kfab_cq_entry *ent)
{
	struct kfab_cq_over *o = malloc(sizeof(*o));

	if (!o) {
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "completion lost: out of memory for the CQ overflow\n");
		return -FI_ENOMEM;
	}
	o->ent = *ent;
	kfab_list_add_tail(&o->link, &cq->overflow);
	kfab_wait_written(&cq->wait);
	return 0;
}

int kfab_cq_write_err_why(struct kfab_cq *cq, void *context, uint64_t flags,
			  int err, int prov_errno, size_t len, size_t olen,
			  uint64_t data, uint64_t tag, fi_addr_t src,
			  const char *why)
{
	struct kfab_cq_err *e = calloc(1, sizeof(*e));

	if (!e) {
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "error completion lost (%s): out of memory\n",
			  fi_strerror(err));
		return -FI_ENOMEM;
	}
	e->e = (struct fi_cq_err_entry){
		.op_context = context, .flags = flags, .len = len,
		.data = data, .tag = tag, .olen = olen, .err = err,
		.prov_errno = prov_errno,
	};
	e->src = src;
	if (why)
		snprintf(e->err_data, sizeof(e->err_data), "%s: %s",
			 cq_kp(cq)->name, why);
	else if (prov_errno && abs(prov_errno) != err)
		snprintf(e->err_data, sizeof(e->err_data), "%s: %s: %s",
			 cq_kp(cq)->name, fi_strerror(err),
			 fi_strerror(abs(prov_errno)));
	else
		snprintf(e->err_data, sizeof(e->err_data), "%s: %s",
			 cq_kp(cq)->name, fi_strerror(err));
	kfab_list_add_tail(&e->link, &cq->errors);
	kfab_wait_written(&cq->wait);
	return 0;
}

static void *cq_auto_progress(void *arg);

/* The CQ's progress thread, pinned per the endpoint's aff_* CPUs. */
static int cq_auto_start(struct kfab_cq *cq, const struct kfab_progress *ep)
{
	struct kfab_progress_thread *t = calloc(1, sizeof(*t));
	int ret;

	if (!t) {
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "FI_PROGRESS_AUTO: out of memory for the progress thread\n");
		return -FI_ENOMEM;
	}
	t->cq = cq;
	ret = kfab_wait_init(cq_kp(cq), &t->wait, FI_WAIT_FD, true,
			     "FI_PROGRESS_AUTO");
	if (ret) {
		free(t);
		return ret;
	}
	ret = pthread_create(&t->thread, NULL, cq_auto_progress, t);
	if (ret) {
		kfab_wait_fini(&t->wait);
		free(t);
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "FI_PROGRESS_AUTO: cannot start the CQ's progress thread: %s\n",
			  strerror(ret));
		return -ret;
	}
	if (ep->aff_stride) {
		uint32_t n = (ep->aff_end - ep->aff_start) / ep->aff_stride + 1;
		uint32_t k = __atomic_fetch_add(&cq_threads_started, 1,
						__ATOMIC_RELAXED);
		uint32_t cpu = ep->aff_start + (k % n) * ep->aff_stride;
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		ret = pthread_setaffinity_np(t->thread, sizeof(set), &set);
		if (ret)
			kfab_warn(cq_kp(cq), FI_LOG_CQ,
				  "%s: cannot pin the progress thread to cpu %u (its progress affinity setting): %s\n",
				  cq_kp(cq)->name, cpu, strerror(ret));
		else
			kfab_info(cq_kp(cq), FI_LOG_CQ,
				  "progress thread on cpu %u\n", cpu);
	}
	cq->auto_prog = t;
	return 0;
}

/* A new endpoint of an FI_PROGRESS_AUTO CQ: its progress thread's too. */
static int cq_attach_first(void *obj, struct kfab_progress *ep)
{
	struct kfab_cq *cq = obj;
	int ret = 0;

	if (cq->domain->data_progress == FI_PROGRESS_AUTO && !cq->auto_prog)
		ret = cq_auto_start(cq, ep);
	if (!ret && cq->auto_prog) {
		ret = kfab_wait_add(&cq->auto_prog->wait, ep);
		if (ret)
			kfab_warn(cq_kp(cq), FI_LOG_CQ,
				  "cannot add the endpoint's wakeup fd to the progress thread's wait object: %s\n",
				  strerror(-ret));
	}
	return ret;
}

int kfab_cq_attach(struct kfab_cq *cq, struct kfab_progress *ep)
{
	int ret = kfab_eps_attach(cq_kp(cq), &cq->eps, &cq->wait, ep, "CQ",
				  cq_attach_first, cq);

	if (!ret)
		cq->ref++;
	return ret;
}

void kfab_cq_detach(struct kfab_cq *cq, struct kfab_progress *ep)
{
	if (kfab_eps_detach(&cq->eps, &cq->wait, ep) && cq->auto_prog)
		kfab_wait_del(&cq->auto_prog->wait, ep);
	cq->ref--;
}

void kfab_cq_progress_kick(struct kfab_cq *cq)
{
	if (cq && cq->auto_prog)
		kfab_wait_kick(&cq->auto_prog->wait);
}

int kfab_cq_bind_sides(struct kfab_cq *cq, struct kfab_progress *ep,
		       struct kfab_cq **tx, struct kfab_cq **rx,
		       uint64_t flags)
{
	uint64_t sides = flags & (FI_TRANSMIT | FI_RECV);
	int ret;

	if (!sides || ((sides & FI_TRANSMIT) && !tx) ||
	    ((sides & FI_RECV) && !rx)) {
		kfab_warn(cq_kp(cq), FI_LOG_EP_CTRL,
			  "fi_ep_bind(CQ): flags %#llx: name %s\n",
			  (unsigned long long)flags,
			  !rx ? "FI_TRANSMIT" : !tx ? "FI_RECV" :
			  "FI_TRANSMIT, FI_RECV or both");
		return -FI_EBADFLAGS;
	}
	if (((sides & FI_TRANSMIT) && *tx) || ((sides & FI_RECV) && *rx)) {
		kfab_warn(cq_kp(cq), FI_LOG_EP_CTRL,
			  "fi_ep_bind(CQ): a CQ is already bound for flags %#llx\n",
			  (unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (sides & FI_TRANSMIT) {
		ret = kfab_cq_attach(cq, ep);
		if (ret)
			return ret;
		*tx = cq;
	}
	if (sides & FI_RECV) {
		ret = kfab_cq_attach(cq, ep);
		if (ret) {
			if (sides & FI_TRANSMIT) {
				kfab_cq_detach(cq, ep);
				*tx = NULL;
			}
			return ret;
		}
		*rx = cq;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* readers */

static int cq_progress(struct kfab_cq *cq)
{
	return kfab_ep_progress_all(cq->eps.v, cq->eps.n);
}

static inline bool cq_empty(const struct kfab_cq *cq)
{
	return cq->head == cq->tail && kfab_list_empty(&cq->overflow) &&
	       kfab_list_empty(&cq->errors);
}

bool kfab_cq_ready(struct kfab_cq *cq)
{
	cq_progress(cq);
	return !cq_empty(cq);
}

/*
 * The progress thread: polls every interval; after CQ_AUTO_IDLE_NS without
 * a packet, sleeps on the endpoints' wakeups (bounded by their ticks).
 */
static void *cq_auto_progress(void *arg)
{
	struct kfab_progress_thread *t = arg;
	struct kfab_cq *cq = t->cq;
	struct kfab_domain *domain = cq->domain;
	uint64_t busy_at = kfab_now_ns();
	struct timespec iv = { 0, 1000 };

	kfab_lock(&domain->lock);
	while (!t->stop) {
		uint64_t now;

		if (cq->eps.n)
			iv.tv_nsec = (long)cq->eps.v[0]->auto_usec * 1000;
		if (cq_progress(cq))
			busy_at = kfab_now_ns();
		now = kfab_now_ns();
		if (now - busy_at >= CQ_AUTO_IDLE_NS) {
			kfab_wait_sleep(domain, &t->wait, cq->eps.v, cq->eps.n, 0,
					false);
			busy_at = kfab_now_ns();
			continue;
		}
		kfab_unlock(&domain->lock);
		nanosleep(&iv, NULL);
		kfab_lock(&domain->lock);
	}
	kfab_unlock(&domain->lock);
	return NULL;
}

/* The next completion, oldest first, or NULL. */
static struct kfab_cq_entry *cq_peek(struct kfab_cq *cq)
{
	struct kfab_cq_over *o;

	if (cq->head != cq->tail)
		return &cq->ring[cq->head & (cq->size - 1)];
	o = kfab_list_first(&cq->overflow, struct kfab_cq_over, link);
	return o ? &o->ent : NULL;
}

static void cq_pop(struct kfab_cq *cq)
{
	struct kfab_cq_over *o;

	if (cq->head != cq->tail) {
		cq->head++;
		return;
	}
	o = kfab_list_first(&cq->overflow, struct kfab_cq_over, link);
	kfab_list_del(&o->link);
	free(o);
}

/*
 * Each fi_cq_*_entry format is a prefix of the next (fi_cq(3)): an entry is
 * the first entry_size bytes of the tagged entry the CQ stores.
 */
static_assert(offsetof(struct fi_cq_msg_entry, len) ==
	      offsetof(struct fi_cq_tagged_entry, len) &&
	      offsetof(struct fi_cq_data_entry, data) ==
	      offsetof(struct fi_cq_tagged_entry, data),
	      "fi_cq entry formats are prefixes of the tagged entry");

static const size_t cq_entry_sizes[] = {
	[FI_CQ_FORMAT_CONTEXT] = sizeof(struct fi_cq_entry),
	[FI_CQ_FORMAT_MSG] = sizeof(struct fi_cq_msg_entry),
	[FI_CQ_FORMAT_DATA] = sizeof(struct fi_cq_data_entry),
	[FI_CQ_FORMAT_TAGGED] = sizeof(struct fi_cq_tagged_entry),
};

/* Copies up to @count entries out in the CQ's format. */
static size_t cq_copy(struct kfab_cq *cq, void *buf, size_t count,
		      fi_addr_t *src)
{
	struct kfab_cq_entry *ent;
	size_t n;

	for (n = 0; n < count && (ent = cq_peek(cq)); n++) {
		memcpy((char *)buf + n * cq->entry_size, &ent->e,
		       cq->entry_size);
		if (src)
			src[n] = ent->src;
		cq_pop(cq);
	}
	return n;
}

static ssize_t cq_take(struct kfab_cq *cq, void *buf, size_t count,
		       fi_addr_t *src_addr);

static ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	struct kfab_cq *cq = to_cq(cq_fid);
	ssize_t ret;

	kfab_lock(&cq->domain->lock);
	cq_progress(cq);
	ret = cq_take(cq, buf, count, src_addr);
	kfab_unlock(&cq->domain->lock);
	return ret;
}

static ssize_t cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return cq_readfrom(cq_fid, buf, count, NULL);
}

/*
 * API 1.5 and later: err_data_size > 0 on input means the caller gave a
 * buffer to copy err_data into; 0 means point err_data at ours, valid
 * until the next readerr. Before 1.5 the entry ends at err_data.
 */
static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct kfab_cq *cq = to_cq(cq_fid);
	uint32_t api = cq->domain->fabric->fabric_fid.api_version;
	struct kfab_cq_err *e;
	size_t have, room;

	(void)flags;
	kfab_lock(&cq->domain->lock);
	e = kfab_list_first(&cq->errors, struct kfab_cq_err, link);
	if (!e) {
		kfab_unlock(&cq->domain->lock);
		return -FI_EAGAIN;
	}
	kfab_list_del(&e->link);
	free(cq->err_last);
	cq->err_last = e;

	have = strlen(e->err_data) + 1;
	buf->op_context = e->e.op_context;
	buf->flags = e->e.flags;
	buf->len = e->e.len;
	buf->buf = e->e.buf;
	buf->data = e->e.data;
	buf->tag = e->e.tag;
	buf->olen = e->e.olen;
	buf->err = e->e.err;
	buf->prov_errno = e->e.prov_errno;
	if (FI_VERSION_GE(api, FI_VERSION(1, 5)) && buf->err_data_size) {
		room = buf->err_data_size < have ? buf->err_data_size : have;
		memcpy(buf->err_data, e->err_data, room);
		((char *)buf->err_data)[room - 1] = '\0';
		buf->err_data_size = room;
	} else {
		buf->err_data = e->err_data;
		if (FI_VERSION_GE(api, FI_VERSION(1, 5)))
			buf->err_data_size = have;
	}
	kfab_unlock(&cq->domain->lock);
	return 1;
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)cq;
	return kfab_strerror(prov_errno, err_data, buf, len);
}

/* Entries, -FI_EAVAIL or -FI_EAGAIN: the body of a read, lock held. */
static ssize_t cq_take(struct kfab_cq *cq, void *buf, size_t count,
		       fi_addr_t *src_addr)
{
	if (!kfab_list_empty(&cq->errors))
		return -FI_EAVAIL;
	if (cq->head == cq->tail && kfab_list_empty(&cq->overflow))
		return -FI_EAGAIN;
	return (ssize_t)cq_copy(cq, buf, buf ? count : 0, src_addr);
}

/*
 * Blocks until a completion, fi_cq_signal() (-FI_EAGAIN) or @timeout ms
 * (< 0: forever; -FI_EAGAIN), sleeping on the wakeups of the endpoints.
 */
static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct kfab_cq *cq = to_cq(cq_fid);
	uint64_t deadline = 0;
	ssize_t ret;

	if (cq->wait.type == FI_WAIT_NONE) {
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "fi_cq_sread: the CQ was opened with FI_WAIT_NONE: open it with FI_WAIT_FD or FI_WAIT_UNSPEC, or poll fi_cq_read()\n");
		return -FI_EINVAL;
	}
	if (cond && *(const size_t *)cond > 1)
		kfab_dbg(cq_kp(cq), FI_LOG_CQ,
			 "fi_cq_sread: wait_cond threshold treated as 1\n");
	if (timeout >= 0)
		deadline = kfab_now_ns() + (uint64_t)timeout * 1000000u;
	kfab_lock(&cq->domain->lock);
	for (;;) {
		cq_progress(cq);
		ret = cq_take(cq, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			break;
		if (cq->wait.signaled) {
			cq->wait.signaled = 0;
			break;
		}
		if (timeout == 0 ||
		    kfab_wait_sleep(cq->domain, &cq->wait, cq->eps.v, cq->eps.n,
				    deadline, true))
			break;
		if (deadline && kfab_now_ns() >= deadline) {
			cq_progress(cq);
			ret = cq_take(cq, buf, count, src_addr);
			break;
		}
	}
	kfab_unlock(&cq->domain->lock);
	return ret;
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count,
			const void *cond, int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

/*
 * Wakes threads blocked in fi_cq_sread(): they return -FI_EAGAIN. With
 * none blocked, the next fi_cq_sread that finds nothing returns at once.
 */
static int cq_signal(struct fid_cq *cq_fid)
{
	struct kfab_cq *cq = to_cq(cq_fid);

	kfab_lock(&cq->domain->lock);
	cq->wait.signaled = 1;
	kfab_wait_kick(&cq->wait);
	kfab_unlock(&cq->domain->lock);
	return 0;
}

int kfab_cq_trywait(struct fid *fid)
{
	struct kfab_cq *cq = kfab_cq_of(fid);
	int ret;

	if (!cq)
		return -FI_EINVAL;

	if (cq->wait.type == FI_WAIT_NONE) {
		kfab_warn(cq_kp(cq), FI_LOG_CQ,
			  "fi_trywait: a CQ opened with FI_WAIT_NONE has no fd to wait on\n");
		return -FI_EINVAL;
	}
	kfab_lock(&cq->domain->lock);
	cq_progress(cq);
	ret = cq_empty(cq) ? kfab_wait_try(&cq->wait, cq->eps.v, cq->eps.n) :
			     -FI_EAGAIN;
	kfab_unlock(&cq->domain->lock);
	return ret;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct kfab_cq *cq = kfab_container_of(fid, struct kfab_cq,
					       cq_fid.fid);

	return kfab_wait_control(cq_kp(cq), &cq->wait, command, arg, "CQ");
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

/* ------------------------------------------------------------------ */
/* fid */

static void cq_free(struct kfab_cq *cq)
{
	struct kfab_list *pos, *tmp;

	kfab_list_for_each_safe(pos, tmp, &cq->overflow)
		free(kfab_list_entry(pos, struct kfab_cq_over, link));
	kfab_list_for_each_safe(pos, tmp, &cq->errors)
		free(kfab_list_entry(pos, struct kfab_cq_err, link));
	free(cq->err_last);
	free(cq->ring);
	kfab_wait_fini(&cq->wait);
	free(cq);
}

static int cq_close(struct fid *fid)
{
	struct kfab_cq *cq = kfab_container_of(fid, struct kfab_cq,
					       cq_fid.fid);
	struct kfab_domain *domain = cq->domain;

	if (kfab_domain_release(domain, &cq->ref, FI_LOG_CQ, "CQ",
				"close the endpoints bound to it, or fi_poll_del it, first"))
		return -FI_EBUSY;
	if (cq->auto_prog)
		cq->auto_prog->stop = true;
	kfab_unlock(&domain->lock);
	if (cq->auto_prog) {
		kfab_wait_kick(&cq->auto_prog->wait);
		pthread_join(cq->auto_prog->thread, NULL);
		kfab_wait_fini(&cq->auto_prog->wait);
		free(cq->auto_prog);
	}
	cq_free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops =
	KFAB_FI_OPS(cq_close, kfab_no_bind, cq_control, kfab_no_ops_open);

struct kfab_cq *kfab_cq_of(struct fid *fid)
{
	return kfab_fid_is(fid, FI_CLASS_CQ, &cq_fi_ops) ?
	       kfab_container_of(fid, struct kfab_cq, cq_fid.fid) : NULL;
}

int kfab_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		 struct fid_cq **cq_fid, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);
	const struct kfab_provider *kp = domain->kp;
	enum fi_cq_format format;
	struct kfab_cq *cq;
	size_t size;
	int ret;

	if (!attr) {
		kfab_warn(kp, FI_LOG_CQ, "fi_cq_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT :
						       attr->format;
	if ((size_t)format >=
	    sizeof(cq_entry_sizes) / sizeof(cq_entry_sizes[0]) ||
	    !cq_entry_sizes[format]) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_cq_open: format %d: use FI_CQ_FORMAT_CONTEXT, _MSG, _DATA or _TAGGED\n",
			  (int)attr->format);
		return -FI_ENOSYS;
	}
	if (attr->size > CQ_MAX_SIZE) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_cq_open: size %zu: at most %u entries\n",
			  attr->size, CQ_MAX_SIZE);
		return -FI_EINVAL;
	}
	for (size = 1; size < (attr->size ? attr->size : CQ_DEFAULT_SIZE);)
		size <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = malloc(size * sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		kfab_warn(kp, FI_LOG_CQ, "fi_cq_open: out of memory\n");
		return -FI_ENOMEM;
	}
	ret = kfab_wait_init(kp, &cq->wait, attr->wait_obj,
			     domain->data_progress == FI_PROGRESS_AUTO,
			     "fi_cq_open");
	if (ret) {
		free(cq->ring);
		free(cq);
		return ret;
	}
	kfab_fid_init(&cq->cq_fid.fid, FI_CLASS_CQ, context, &cq_fi_ops);
	cq->cq_fid.ops = &cq_ops;
	cq->domain = domain;
	cq->format = format;
	cq->entry_size = cq_entry_sizes[format];
	cq->size = size;
	kfab_list_init(&cq->overflow);
	kfab_list_init(&cq->errors);
	kfab_domain_hold(domain);
	*cq_fid = &cq->cq_fid;
	return 0;
}
