// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the event queue. Events (FI_AV_COMPLETE from AVs, and what the
 * application writes) wait on a list in order; an error event at the head
 * makes reads return -FI_EAVAIL until fi_eq_readerr() takes it. EQs are
 * thread safe whatever the domain's threading; fi_eq_sread() sleeps on a
 * condition variable that every new event signals.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kfab_prov.h"

static inline struct kfab_eq *to_eq(struct fid_eq *eq_fid)
{
	return kfab_container_of(eq_fid, struct kfab_eq, eq_fid);
}

static inline const struct kfab_provider *eq_kp(const struct kfab_eq *eq)
{
	return eq->fabric->kp;
}

int kfab_eq_post(struct kfab_eq *eq, uint32_t event, const void *buf,
		 size_t len, const char *err_data)
{
	struct kfab_eq_event *ev;

	if (len > sizeof(ev->u.data)) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "EQ event %u of %zu bytes: at most %zu\n", event,
			  len, sizeof(ev->u.data));
		return -FI_EINVAL;
	}
	if (err_data && len != sizeof(struct fi_eq_err_entry)) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "EQ error event of %zu bytes: an error is a struct fi_eq_err_entry\n",
			  len);
		return -FI_EINVAL;
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "EQ event %u lost: out of memory\n", event);
		return -FI_ENOMEM;
	}
	ev->event = event;
	ev->len = len;
	memcpy(ev->u.data, buf, len);
	if (err_data) {
		ev->err = true;
		snprintf(ev->err_data, sizeof(ev->err_data), "%s", err_data);
	}
	pthread_mutex_lock(&eq->mutex);
	kfab_list_add_tail(&ev->link, &eq->events);
	pthread_cond_broadcast(&eq->cond);
	pthread_mutex_unlock(&eq->mutex);
	return 0;
}

/* fi_eq_read() body, with eq->mutex held. */
static ssize_t eq_read_locked(struct kfab_eq *eq, uint32_t *event, void *buf,
			      size_t len, uint64_t flags)
{
	struct kfab_eq_event *ev =
		kfab_list_first(&eq->events, struct kfab_eq_event, link);
	ssize_t ret;

	if (!ev)
		return -FI_EAGAIN;
	if (ev->err)
		return -FI_EAVAIL;
	if (len < ev->len) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "fi_eq_read: event %u has %zu bytes, the buffer %zu\n",
			  ev->event, ev->len, len);
		return -FI_ETOOSMALL;
	}
	memcpy(buf, ev->u.data, ev->len);
	if (event)
		*event = ev->event;
	ret = (ssize_t)ev->len;
	if (!(flags & FI_PEEK)) {
		kfab_list_del(&ev->link);
		free(ev);
	}
	return ret;
}

static ssize_t eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct kfab_eq *eq = to_eq(eq_fid);
	ssize_t ret;

	if (flags & ~FI_PEEK) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "fi_eq_read: flags %#llx: only FI_PEEK is defined\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	pthread_mutex_lock(&eq->mutex);
	ret = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->mutex);
	return ret;
}

/* err_data as in kfab_cq.c: API >= 1.5 honours err_data_size. */
static ssize_t eq_readerr(struct fid_eq *eq_fid, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	struct kfab_eq *eq = to_eq(eq_fid);
	uint32_t api = eq->fabric->fabric_fid.api_version;
	bool v15 = FI_VERSION_GE(api, FI_VERSION(1, 5));
	struct kfab_eq_event *ev;
	size_t have, room;

	(void)flags;
	pthread_mutex_lock(&eq->mutex);
	ev = kfab_list_first(&eq->events, struct kfab_eq_event, link);
	if (!ev || !ev->err) {
		pthread_mutex_unlock(&eq->mutex);
		return -FI_EAGAIN;
	}
	kfab_list_del(&ev->link);
	free(eq->err_last);
	eq->err_last = ev;

	have = strlen(ev->err_data) + 1;
	buf->fid = ev->u.err_entry.fid;
	buf->context = ev->u.err_entry.context;
	buf->data = ev->u.err_entry.data;
	buf->err = ev->u.err_entry.err;
	buf->prov_errno = ev->u.err_entry.prov_errno;
	if (v15 && buf->err_data_size) {
		room = buf->err_data_size < have ? buf->err_data_size : have;
		memcpy(buf->err_data, ev->err_data, room);
		((char *)buf->err_data)[room - 1] = '\0';
		buf->err_data_size = room;
	} else {
		buf->err_data = ev->err_data;
		if (v15)
			buf->err_data_size = have;
	}
	pthread_mutex_unlock(&eq->mutex);
	return v15 ? (ssize_t)sizeof(*buf) :
		     (ssize_t)offsetof(struct fi_eq_err_entry, err_data_size);
}

/* libfabric 1.17 defines no flag to write an error event: flags are 0. */
static ssize_t eq_write(struct fid_eq *eq_fid, uint32_t event,
			const void *buf, size_t len, uint64_t flags)
{
	struct kfab_eq *eq = to_eq(eq_fid);
	int ret;

	if (flags) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "fi_eq_write: flags %#llx: must be 0\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	ret = kfab_eq_post(eq, event, buf, len, NULL);
	return ret ? ret : (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct kfab_eq *eq = to_eq(eq_fid);
	struct timespec deadline;
	ssize_t ret;

	if (eq->wait_obj == FI_WAIT_NONE) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "fi_eq_sread: the EQ was opened with FI_WAIT_NONE: open it with FI_WAIT_UNSPEC to block\n");
		return -FI_EINVAL;
	}
	if (flags & ~FI_PEEK) {
		kfab_warn(eq_kp(eq), FI_LOG_EQ,
			  "fi_eq_sread: flags %#llx: only FI_PEEK is defined\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if (timeout >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout / 1000;
		deadline.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&eq->mutex);
	while (kfab_list_empty(&eq->events)) {
		if (timeout < 0)
			pthread_cond_wait(&eq->cond, &eq->mutex);
		else if (pthread_cond_timedwait(&eq->cond, &eq->mutex,
						&deadline) == ETIMEDOUT)
			break;
	}
	ret = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->mutex);
	return ret;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	(void)eq;
	return kfab_strerror(prov_errno, err_data, buf, len);
}

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_close(struct fid *fid)
{
	struct kfab_eq *eq = kfab_container_of(fid, struct kfab_eq,
					       eq_fid.fid);
	struct kfab_list *pos, *tmp;
	int ret = kfab_close_busy(eq_kp(eq), FI_LOG_EQ, kfab_ref_read(&eq->ref),
				  "EQ", "close the AVs bound to it first");

	if (ret)
		return ret;
	kfab_list_for_each_safe(pos, tmp, &eq->events)
		free(kfab_list_entry(pos, struct kfab_eq_event, link));
	free(eq->err_last);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->mutex);
	kfab_ref_put(&eq->fabric->ref);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops =
	KFAB_FI_OPS(eq_close, kfab_no_bind, kfab_no_control, kfab_no_ops_open);

int kfab_eq_open(struct fid_fabric *fabric_fid, struct fi_eq_attr *attr,
		 struct fid_eq **eq_fid, void *context)
{
	struct kfab_fabric *fabric =
		kfab_container_of(fabric_fid, struct kfab_fabric, fabric_fid);
	pthread_condattr_t ca;
	struct kfab_eq *eq;

	if (!attr) {
		kfab_warn(fabric->kp, FI_LOG_EQ, "fi_eq_open: attr is NULL\n");
		return -FI_EINVAL;
	}
	if (attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC) {
		kfab_warn(fabric->kp, FI_LOG_EQ,
			  "fi_eq_open: wait object %d is not supported: use FI_WAIT_UNSPEC (fi_eq_sread blocks) or FI_WAIT_NONE\n",
			  (int)attr->wait_obj);
		return -FI_ENOSYS;
	}
	eq = calloc(1, sizeof(*eq));
	if (!eq) {
		kfab_warn(fabric->kp, FI_LOG_EQ, "fi_eq_open: out of memory\n");
		return -FI_ENOMEM;
	}
	pthread_mutex_init(&eq->mutex, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&eq->cond, &ca);
	pthread_condattr_destroy(&ca);
	kfab_list_init(&eq->events);
	eq->wait_obj = attr->wait_obj;
	eq->fabric = fabric;
	kfab_fid_init(&eq->eq_fid.fid, FI_CLASS_EQ, context, &eq_fi_ops);
	eq->eq_fid.ops = &eq_ops;
	kfab_ref_hold(&fabric->ref);
	*eq_fid = &eq->eq_fid;
	return 0;
}
