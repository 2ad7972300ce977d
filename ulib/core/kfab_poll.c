// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: poll sets (fi_poll(3)), for every provider on the core.
 *
 * A poll set is a list of CQs and counters of one domain. fi_poll()
 * progresses each (a read would) and returns the fid contexts of those
 * with something new: a CQ with a completion or an error to read, a
 * counter whose value or error count changed since the last fi_poll()
 * that looked at it. Members hold a reference, as endpoint bindings do:
 * a CQ or counter in a set cannot be closed until it is removed.
 */
#include <stdlib.h>

#include "kfab_prov.h"

struct poll_member {
	struct fid *fid;
	uint64_t seen;		/* a counter's value + errors at the last poll */
};

struct kfab_poll {
	struct fid_poll poll_fid;
	struct kfab_domain *domain;
	struct poll_member *v;
	size_t n, cap;
};

static inline struct kfab_poll *to_poll(struct fid_poll *fid)
{
	return kfab_container_of(fid, struct kfab_poll, poll_fid);
}

static int *member_ref(struct fid *fid)
{
	struct kfab_cq *cq = kfab_cq_of(fid);

	return cq ? &cq->ref : &kfab_cntr_of(fid)->ref;
}

/* The domain of @fid, a CQ or counter of the core; NULL for anything else. */
static struct kfab_domain *member_domain(struct fid *fid)
{
	struct kfab_cntr *cntr = kfab_cntr_of(fid);
	struct kfab_cq *cq = kfab_cq_of(fid);

	return cq ? cq->domain : cntr ? cntr->domain : NULL;
}

/* Whether member @m has something new; lock held. */
static bool member_ready(struct poll_member *m)
{
	uint64_t v;

	if (m->fid->fclass == FI_CLASS_CQ)
		return kfab_cq_ready(kfab_cq_of(m->fid));
	v = kfab_cntr_events(kfab_cntr_of(m->fid));
	if (v == m->seen)
		return false;
	m->seen = v;
	return true;
}

static int poll_poll(struct fid_poll *fid, void **context, int count)
{
	struct kfab_poll *ps = to_poll(fid);
	int n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	kfab_lock(&ps->domain->lock);
	for (size_t i = 0; i < ps->n && n < count; i++)
		if (member_ready(&ps->v[i]))
			context[n++] = ps->v[i].fid->context;
	kfab_unlock(&ps->domain->lock);
	return n;
}

static int poll_add(struct fid_poll *fid, struct fid *event_fid,
		    uint64_t flags)
{
	struct kfab_poll *ps = to_poll(fid);
	const struct kfab_provider *kp = ps->domain->kp;
	struct poll_member *v;
	int ret = 0;

	if (flags || !event_fid || member_domain(event_fid) != ps->domain) {
		kfab_warn(kp, FI_LOG_DOMAIN,
			  "fi_poll_add: add CQs and counters of the poll set's domain, with flags 0\n");
		return -FI_EINVAL;
	}
	kfab_lock(&ps->domain->lock);
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->v[i].fid == event_fid) {
			kfab_warn(kp, FI_LOG_DOMAIN,
				  "fi_poll_add: already in the poll set\n");
			ret = -FI_EALREADY;
			goto out;
		}
	}
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 4;

		v = realloc(ps->v, cap * sizeof(*v));
		if (!v) {
			kfab_warn(kp, FI_LOG_DOMAIN,
				  "fi_poll_add: out of memory for %zu members\n",
				  cap);
			ret = -FI_ENOMEM;
			goto out;
		}
		ps->v = v;
		ps->cap = cap;
	}
	/* a counter's events so far are not new */
	ps->v[ps->n] = (struct poll_member){ .fid = event_fid };
	if (event_fid->fclass == FI_CLASS_CNTR)
		ps->v[ps->n].seen = kfab_cntr_events(kfab_cntr_of(event_fid));
	ps->n++;
	(*member_ref(event_fid))++;
out:
	kfab_unlock(&ps->domain->lock);
	return ret;
}

static int poll_del(struct fid_poll *fid, struct fid *event_fid,
		    uint64_t flags)
{
	struct kfab_poll *ps = to_poll(fid);
	int ret = -FI_EINVAL;

	if (flags)
		return -FI_EINVAL;
	kfab_lock(&ps->domain->lock);
	for (size_t i = 0; i < ps->n; i++) {
		if (ps->v[i].fid == event_fid) {
			(*member_ref(event_fid))--;
			ps->v[i] = ps->v[--ps->n];
			ret = 0;
			break;
		}
	}
	kfab_unlock(&ps->domain->lock);
	if (ret)
		kfab_warn(ps->domain->kp, FI_LOG_DOMAIN,
			  "fi_poll_del: not in the poll set\n");
	return ret;
}

static int poll_close(struct fid *fid)
{
	struct kfab_poll *ps = to_poll(kfab_container_of(fid, struct fid_poll,
							 fid));

	kfab_lock(&ps->domain->lock);
	for (size_t i = 0; i < ps->n; i++)
		(*member_ref(ps->v[i].fid))--;
	ps->domain->ref--;
	kfab_unlock(&ps->domain->lock);
	free(ps->v);
	free(ps);
	return 0;
}

static struct fi_ops poll_fi_ops =
	KFAB_FI_OPS(poll_close, kfab_no_bind, kfab_no_control,
		    kfab_no_ops_open);

static struct fi_ops_poll poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};

int kfab_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct kfab_domain *domain = kfab_domain_of(domain_fid);
	struct kfab_poll *ps;

	if (attr && attr->flags) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_poll_open: attr->flags %#llx: must be 0\n",
			  (unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	kfab_fid_init(&ps->poll_fid.fid, FI_CLASS_POLL, NULL, &poll_fi_ops);
	ps->poll_fid.ops = &poll_ops;
	ps->domain = domain;
	kfab_domain_hold(domain);
	*pollset = &ps->poll_fid;
	return 0;
}
