// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: counters (fi_cntr(3)), FI_CNTR_EVENTS_COMP only: an endpoint
 * bound with FI_SEND or FI_RECV adds one to the counter for every
 * operation of that kind that completes, whether or not it writes a CQ
 * entry (fi_inject, FI_SELECTIVE_COMPLETION), and one to the error count
 * for every one that fails. FI_READ, FI_WRITE, FI_REMOTE_READ and
 * FI_REMOTE_WRITE bindings are accepted; nothing counts there until RMA
 * exists.
 *
 * Reads and waits progress the endpoints bound to the counter, as CQ
 * reads do; fi_cntr_wait() sleeps on their wakeups (kfab_wait.c). The
 * values live under the domain lock.
 */
#include <stdlib.h>

#include "kfab_prov.h"

static inline struct kfab_cntr *to_cntr(struct fid_cntr *fid)
{
	return kfab_container_of(fid, struct kfab_cntr, cntr_fid);
}

static inline const struct kfab_provider *cntr_kp(const struct kfab_cntr *c)
{
	return c->domain->kp;
}

int kfab_cntr_attach(struct kfab_cntr *cntr, struct kfab_progress *ep)
{
	int ret = kfab_eps_attach(cntr_kp(cntr), &cntr->eps, &cntr->wait, ep,
				  "counter", NULL, NULL);

	if (!ret)
		cntr->ref++;
	return ret;
}

void kfab_cntr_detach(struct kfab_cntr *cntr, struct kfab_progress *ep)
{
	kfab_eps_detach(&cntr->eps, &cntr->wait, ep);
	cntr->ref--;
}

static int cntr_progress(struct kfab_cntr *cntr)
{
	return kfab_ep_progress_all(cntr->eps.v, cntr->eps.n);
}

uint64_t kfab_cntr_events(struct kfab_cntr *cntr)
{
	cntr_progress(cntr);
	return cntr->cnt + cntr->err;
}

/* The value (@err false) or the error count, once progressed. */
static uint64_t cntr_get(struct fid_cntr *fid, bool err)
{
	struct kfab_cntr *cntr = to_cntr(fid);
	uint64_t v;

	kfab_lock(&cntr->domain->lock);
	cntr_progress(cntr);
	v = err ? cntr->err : cntr->cnt;
	kfab_unlock(&cntr->domain->lock);
	return v;
}

static uint64_t cntr_read(struct fid_cntr *fid)
{
	return cntr_get(fid, false);
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	return cntr_get(fid, true);
}

/* add/set of the value (@err false) or of the error count. */
static int cntr_update(struct fid_cntr *fid, bool err, bool set,
		       uint64_t value)
{
	struct kfab_cntr *cntr = to_cntr(fid);
	uint64_t *v = err ? &cntr->err : &cntr->cnt;

	kfab_lock(&cntr->domain->lock);
	*v = set ? value : *v + value;
	kfab_wait_written(&cntr->wait);
	kfab_unlock(&cntr->domain->lock);
	return 0;
}

static int cntr_add(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update(fid, false, false, value);
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update(fid, false, true, value);
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update(fid, true, false, value);
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update(fid, true, true, value);
}

/*
 * Until the value reaches @threshold (0), the error count changes
 * (-FI_EAVAIL), or @timeout ms pass (< 0: forever; -FI_ETIMEDOUT).
 */
static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct kfab_cntr *cntr = to_cntr(fid);
	uint64_t deadline = 0, err0;
	int ret;

	if (cntr->wait.type == FI_WAIT_NONE) {
		kfab_warn(cntr_kp(cntr), FI_LOG_CQ,
			  "fi_cntr_wait: the counter was opened with FI_WAIT_NONE: open it with FI_WAIT_FD or FI_WAIT_UNSPEC, or poll fi_cntr_read()\n");
		return -FI_EINVAL;
	}
	if (timeout >= 0)
		deadline = kfab_now_ns() + (uint64_t)timeout * 1000000u;
	kfab_lock(&cntr->domain->lock);
	err0 = cntr->err;
	for (;;) {
		cntr_progress(cntr);
		if (cntr->cnt >= threshold) {
			ret = 0;
			break;
		}
		if (cntr->err != err0) {
			ret = -FI_EAVAIL;
			break;
		}
		if (timeout == 0 ||
		    (deadline && kfab_now_ns() >= deadline)) {
			ret = -FI_ETIMEDOUT;
			break;
		}
		ret = kfab_wait_sleep(cntr->domain, &cntr->wait, cntr->eps.v,
				      cntr->eps.n, deadline, true);
		if (ret)
			break;
	}
	kfab_unlock(&cntr->domain->lock);
	return ret;
}

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int kfab_cntr_trywait(struct fid *fid)
{
	struct kfab_cntr *cntr = kfab_cntr_of(fid);
	int ret;

	if (!cntr)
		return -FI_EINVAL;

	if (cntr->wait.type == FI_WAIT_NONE) {
		kfab_warn(cntr_kp(cntr), FI_LOG_CQ,
			  "fi_trywait: a counter opened with FI_WAIT_NONE has no fd to wait on\n");
		return -FI_EINVAL;
	}
	kfab_lock(&cntr->domain->lock);
	ret = cntr_progress(cntr) ? -FI_EAGAIN :
		kfab_wait_try(&cntr->wait, cntr->eps.v, cntr->eps.n);
	kfab_unlock(&cntr->domain->lock);
	return ret;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct kfab_cntr *cntr = kfab_container_of(fid, struct kfab_cntr,
						   cntr_fid.fid);

	return kfab_wait_control(cntr_kp(cntr), &cntr->wait, command, arg,
				 "counter");
}

static int cntr_close(struct fid *fid)
{
	struct kfab_cntr *cntr = kfab_container_of(fid, struct kfab_cntr,
						   cntr_fid.fid);
	struct kfab_domain *domain = cntr->domain;

	if (kfab_domain_release(domain, &cntr->ref, FI_LOG_CQ, "counter",
				"close the endpoints bound to it, or fi_poll_del it, first"))
		return -FI_EBUSY;
	kfab_unlock(&domain->lock);
	kfab_wait_fini(&cntr->wait);
	free(cntr);
	return 0;
}

static struct fi_ops cntr_fi_ops =
	KFAB_FI_OPS(cntr_close, kfab_no_bind, cntr_control, kfab_no_ops_open);

struct kfab_cntr *kfab_cntr_of(struct fid *fid)
{
	return kfab_fid_is(fid, FI_CLASS_CNTR, &cntr_fi_ops) ?
	       kfab_container_of(fid, struct kfab_cntr, cntr_fid.fid) : NULL;
}

int kfab_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_fid, void *context)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);
	const struct kfab_provider *kp = domain->kp;
	struct kfab_cntr *cntr;
	int ret;

	if (!attr) {
		kfab_warn(kp, FI_LOG_CQ, "fi_cntr_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	if (attr->events != FI_CNTR_EVENTS_COMP) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_cntr_open: events %d: only FI_CNTR_EVENTS_COMP\n",
			  (int)attr->events);
		return -FI_ENOSYS;
	}
	if (attr->flags) {
		kfab_warn(kp, FI_LOG_CQ,
			  "fi_cntr_open: flags %#llx: none are defined, use 0\n",
			  (unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr) {
		kfab_warn(kp, FI_LOG_CQ, "fi_cntr_open: out of memory\n");
		return -FI_ENOMEM;
	}
	ret = kfab_wait_init(kp, &cntr->wait, attr->wait_obj, false,
			     "fi_cntr_open");
	if (ret) {
		free(cntr);
		return ret;
	}
	kfab_fid_init(&cntr->cntr_fid.fid, FI_CLASS_CNTR, context,
		      &cntr_fi_ops);
	cntr->cntr_fid.ops = &cntr_ops;
	cntr->domain = domain;
	kfab_domain_hold(domain);
	*cntr_fid = &cntr->cntr_fid;
	return 0;
}
