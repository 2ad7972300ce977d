// SPDX-License-Identifier: GPL-2.0
/*
 * core_cq_test: the provider core's completion queue without an
 * endpoint, through a test transport with kfab_opx's names
 * (core_transport.h): formats, overflow past its size without loss,
 * errors and readerr, progress of attached endpoints.
 */
#define _GNU_SOURCE
#include "core_transport.h"

/* ------------------------------------------------------------------ */
/* completion queue */

static struct kfab_cq *to_cq(struct fid_cq *cq)
{
	return kfab_container_of(cq, struct kfab_cq, cq_fid);
}

/* a fake endpoint: each progress call may complete into a CQ */
struct test_ep {
	struct kfab_progress base;
	struct kfab_cq *cq;
	int progressed;
	int complete;		/* completions to write on next progress */
};

static int test_ep_progress(struct kfab_progress *ep)
{
	struct test_ep *t = kfab_container_of(ep, struct test_ep, base);
	int n = t->complete;

	t->progressed++;
	for (; t->complete > 0; t->complete--)
		kfab_cq_write(t->cq, (void *)(uintptr_t)(0xe0 + t->complete),
			      FI_RECV | FI_MSG, 1, NULL, 0, 0, 7);
	return n;
}

static int cq_open(enum fi_cq_format format, size_t size, struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.format = format,
		.size = size,
		.wait_obj = FI_WAIT_NONE,
	};

	return fi_cq_open(domain, &attr, cq, NULL);
}

static void test_cq_open(void)
{
	static const struct {
		size_t size, want;
	} sizes[] = {
		/* 0: the default 1024; others round up to a power of two */
		{ 0, 1024 }, { 1, 1 }, { 5, 8 }, { 1000, 1024 },
		{ 4096, 4096 },
	};
	struct fi_cq_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fid_cq *cq;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		TAP_EQ(cq_open(FI_CQ_FORMAT_UNSPEC, sizes[i].size, &cq), 0,
		       "CQ of size %zu", sizes[i].size);
		TAP_EQ(to_cq(cq)->size, sizes[i].want, "size %zu is %zu",
		       sizes[i].size, sizes[i].want);
		TAP_EQ(to_cq(cq)->format, FI_CQ_FORMAT_CONTEXT,
		       "FI_CQ_FORMAT_UNSPEC is CONTEXT");
		fi_close(&cq->fid);
	}
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), 0, "FI_WAIT_FD");
	fi_close(&cq->fid);
	attr.wait_obj = FI_WAIT_SET;
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), -FI_ENOSYS,
	       "FI_WAIT_SET refused");
	attr.wait_obj = FI_WAIT_UNSPEC;
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), 0, "FI_WAIT_UNSPEC");
	fi_close(&cq->fid);
	TAP_EQ(cq_open(FI_CQ_FORMAT_UNSPEC, (1U << 24) + 1, &cq), -FI_EINVAL,
	       "CQ too large");
	TAP_EQ(cq_open(42, 8, &cq), -FI_ENOSYS, "unknown format");
}

static void test_cq_formats(void)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
		FI_CQ_FORMAT_TAGGED,
	};
	struct kfab_domain *dom = to_dom(domain);
	union {
		struct fi_cq_entry c[2];
		struct fi_cq_msg_entry m[2];
		struct fi_cq_data_entry d[2];
		struct fi_cq_tagged_entry t[2];
	} u;
	int buf, ctx[2];
	fi_addr_t src[2];
	struct fid_cq *cq;
	ssize_t n;
	bool ok;

	for (size_t f = 0; f < 4; f++) {
		TAP_EQ(cq_open(formats[f], 16, &cq), 0, "CQ format %d",
		       formats[f]);
		kfab_lock(&dom->lock);
		for (int i = 0; i < 2; i++)
			kfab_cq_write(to_cq(cq), &ctx[i], FI_RECV | FI_TAGGED,
				      100 + i, &buf, 0xd0 + i, 0x7a9 + i, 5 + i);
		kfab_unlock(&dom->lock);
		memset(&u, 0xee, sizeof(u));
		n = fi_cq_readfrom(cq, &u, 2, src);
		TAP_EQ(n, 2, "format %d: 2 entries", formats[f]);
		ok = src[0] == 5 && src[1] == 6;
		for (int i = 0; i < 2; i++) {
			switch (formats[f]) {
			case FI_CQ_FORMAT_CONTEXT:
				ok &= u.c[i].op_context == &ctx[i];
				break;
			case FI_CQ_FORMAT_MSG:
				ok &= u.m[i].op_context == &ctx[i] &&
				      u.m[i].flags == (FI_RECV | FI_TAGGED) &&
				      u.m[i].len == 100u + i;
				break;
			case FI_CQ_FORMAT_DATA:
				ok &= u.d[i].op_context == &ctx[i] &&
				      u.d[i].len == 100u + i &&
				      u.d[i].buf == &buf &&
				      u.d[i].data == 0xd0u + i;
				break;
			default:
				ok &= u.t[i].op_context == &ctx[i] &&
				      u.t[i].len == 100u + i &&
				      u.t[i].data == 0xd0u + i &&
				      u.t[i].tag == 0x7a9u + i;
				break;
			}
		}
		TAP_OK(ok, "format %d: fields and sources", formats[f]);
		/* an entry of the format and no more is written */
		switch (formats[f]) {
		case FI_CQ_FORMAT_CONTEXT:
			ok = ((uint8_t *)&u)[sizeof(u.c)] == 0xee;
			break;
		case FI_CQ_FORMAT_MSG:
			ok = ((uint8_t *)&u)[sizeof(u.m)] == 0xee;
			break;
		case FI_CQ_FORMAT_DATA:
			ok = ((uint8_t *)&u)[sizeof(u.d)] == 0xee;
			break;
		default:
			ok = true;
			break;
		}
		TAP_OK(ok, "format %d: nothing written past 2 entries",
		       formats[f]);
		TAP_EQ(fi_cq_read(cq, &u, 2), -FI_EAGAIN, "then empty");
		fi_close(&cq->fid);
	}
}

/* Write far more than the ring holds, reading in between. */
static void test_cq_overflow(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct fi_cq_entry e[7];
	uintptr_t next_w = 1, next_r = 1;
	struct fid_cq *cq;
	bool order = true;
	ssize_t n;

	TAP_EQ(cq_open(FI_CQ_FORMAT_CONTEXT, 8, &cq), 0, "CQ of 8");
	for (int round = 0; round < 50; round++) {
		kfab_lock(&dom->lock);
		for (int i = 0; i < 5 + round % 13; i++)
			kfab_cq_write(to_cq(cq), (void *)next_w++, 0, 0, NULL,
				      0, 0, FI_ADDR_NOTAVAIL);
		kfab_unlock(&dom->lock);
		n = fi_cq_read(cq, e, 7);
		for (ssize_t i = 0; i < n; i++)
			order &= (uintptr_t)e[i].op_context == next_r++;
	}
	while ((n = fi_cq_read(cq, e, 7)) > 0)
		for (ssize_t i = 0; i < n; i++)
			order &= (uintptr_t)e[i].op_context == next_r++;
	TAP_EQ(n, -FI_EAGAIN, "drained");
	TAP_OK(order, "every completion, in order");
	TAP_EQ(next_r, next_w, "%lu written, all read",
	       (unsigned long)next_w - 1);
	TAP_OK(kfab_list_empty(&to_cq(cq)->overflow), "overflow list empty");
	/* and the ring serves again */
	kfab_lock(&dom->lock);
	kfab_cq_write(to_cq(cq), (void *)1, 0, 0, NULL, 0, 0, 0);
	kfab_unlock(&dom->lock);
	TAP_OK(kfab_list_empty(&to_cq(cq)->overflow), "back in the ring");
	TAP_EQ(fi_cq_read(cq, e, 7), 1, "read it");
	/* entries left at close are freed (ASan checks) */
	kfab_lock(&dom->lock);
	for (int i = 0; i < 20; i++)
		kfab_cq_write(to_cq(cq), NULL, 0, 0, NULL, 0, 0, 0);
	kfab_cq_write_err(to_cq(cq), NULL, 0, FI_ECANCELED, 0, 0, 0, 0, 0, 0);
	kfab_unlock(&dom->lock);
	TAP_EQ(fi_close(&cq->fid), 0, "CQ with entries left closes");
}

static void test_cq_errors(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err;
	const char *first_data;
	char user[8], buf[128];
	struct fid_cq *cq;
	int ctx;

	TAP_EQ(cq_open(FI_CQ_FORMAT_TAGGED, 8, &cq), 0, "tagged CQ");
	TAP_EQ(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN, "readerr: nothing");
	kfab_lock(&dom->lock);
	kfab_cq_write(to_cq(cq), NULL, FI_SEND, 0, NULL, 0, 0, 0);
	kfab_cq_write_err(to_cq(cq), &ctx, FI_RECV | FI_TAGGED, FI_ETRUNC,
			  -FI_ETRUNC, 64, 36, 0x55, 0x77, 3);
	kfab_cq_write_err(to_cq(cq), &ctx, FI_RECV, FI_EIO, -ECONNRESET, 0,
			  0, 0, 0, 3);
	kfab_unlock(&dom->lock);
	TAP_EQ(fi_cq_read(cq, e, 4), -FI_EAVAIL, "read: an error is queued");

	/* err_data_size 0: err_data is ours until the next readerr */
	memset(&err, 0, sizeof(err));
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr returns 1");
	TAP_OK(err.op_context == &ctx && err.err == FI_ETRUNC &&
	       err.prov_errno == -FI_ETRUNC && err.len == 64 &&
	       err.olen == 36 && err.data == 0x55 && err.tag == 0x77 &&
	       err.flags == (FI_RECV | FI_TAGGED), "error entry fields");
	TAP_OK(err.err_data && err.err_data_size ==
	       strlen(err.err_data) + 1 && strstr(err.err_data, "kfab_test"),
	       "err_data is our text: %s", (char *)err.err_data);
	first_data = err.err_data;
	TAP_OK(!strcmp(fi_cq_strerror(cq, err.prov_errno, err.err_data,
				      NULL, 0), first_data),
	       "strerror without a buffer: the err_data text");
	fi_cq_strerror(cq, err.prov_errno, NULL, buf, sizeof(buf));
	TAP_OK(!strcmp(buf, fi_strerror(FI_ETRUNC)),
	       "strerror of prov_errno -FI_ETRUNC: %s", buf);

	/* err_data_size > 0: copied into the caller's buffer */
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr into 8 bytes");
	TAP_OK(err.err_data == user && err.err_data_size == sizeof(user) &&
	       strlen(user) == 7, "7 characters and a NUL: %s", user);
	TAP_OK(!strcmp(kfab_strerror(err.prov_errno, NULL, NULL, 0),
		       strerror(ECONNRESET)), "prov_errno -ECONNRESET reads");

	/* then the completion behind them */
	TAP_EQ(fi_cq_read(cq, e, 4), 1, "the success after the errors");
	TAP_EQ(fi_cq_read(cq, e, 4), -FI_EAGAIN, "empty");
	TAP_EQ(fi_cq_sread(cq, e, 1, NULL, 0), -FI_EINVAL,
	       "sread: the CQ has no wait object");
	TAP_EQ(fi_cq_signal(cq), 0, "signal: nothing to wake");
	fi_close(&cq->fid);
}

/* Before API 1.5 the entry ends at err_data. */
static void test_cq_err_old_api(void)
{
	struct fi_fabric_attr attr = SHM_FABRIC_ATTR(FI_VERSION(1, 4));
	struct fid_fabric *f;
	struct fid_domain *d;
	struct fi_info *info = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .size = 4 };
	struct fi_cq_err_entry err;
	struct fid_cq *cq;

	info->domain_attr->name = strdup("hfi0");
	TAP_EQ(kfab_fabric_open(&kp, &attr, &f, NULL), 0, "fabric, API 1.4");
	TAP_EQ(fi_domain(f, info, &d, NULL), 0, "domain, API 1.4");
	TAP_EQ(fi_cq_open(d, &cq_attr, &cq, NULL), 0, "CQ, API 1.4");
	kfab_cq_write_err(to_cq(cq), NULL, 0, FI_EIO, 0, 0, 0, 0, 0, 0);
	memset(&err, 0, sizeof(err));
	err.err_data_size = 0xdead;
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr, API 1.4");
	TAP_OK(err.err_data && err.err_data_size == 0xdead,
	       "err_data ours, err_data_size untouched");
	fi_close(&cq->fid);
	fi_close(&d->fid);
	fi_close(&f->fid);
	fi_freeinfo(info);
}

static void test_cq_progress(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct test_ep eps[KFAB_CQ_MAX_EPS + 1];
	struct fi_cq_msg_entry e[4];
	struct fid_cq *cq;
	int ret = 0;

	memset(eps, 0, sizeof(eps));
	TAP_EQ(cq_open(FI_CQ_FORMAT_MSG, 8, &cq), 0, "CQ for endpoints");
	for (int i = 0; i <= KFAB_CQ_MAX_EPS; i++) {
		eps[i].base.progress = test_ep_progress;
		eps[i].base.wake_fd = -1;
		eps[i].cq = to_cq(cq);
	}
	kfab_lock(&dom->lock);
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[0].base), 0, "attach");
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[0].base), 0, "attach again");
	kfab_unlock(&dom->lock);
	TAP_OK(to_cq(cq)->eps.n == 1 && to_cq(cq)->ref == 2,
	       "one endpoint, two bindings");

	/* read(NULL, 0) drives progress */
	TAP_EQ(fi_cq_read(cq, NULL, 0), -FI_EAGAIN, "read(NULL, 0): empty");
	TAP_EQ(eps[0].progressed, 1, "progressed once");
	eps[0].complete = 3;
	TAP_EQ(fi_cq_read(cq, NULL, 0), 0, "read(NULL, 0): 0, entries wait");
	TAP_EQ(fi_cq_read(cq, e, 4), 3, "the endpoint's 3 completions");
	TAP_OK(e[0].op_context == (void *)0xe3 && e[2].len == 1,
	       "written by progress");
	TAP_EQ(fi_close(&cq->fid), -FI_EBUSY, "CQ busy while bound");

	kfab_lock(&dom->lock);
	for (int i = 1; i < KFAB_CQ_MAX_EPS; i++)
		ret |= kfab_cq_attach(to_cq(cq), &eps[i].base);
	TAP_EQ(ret, 0, "attach %d endpoints", KFAB_CQ_MAX_EPS);
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[KFAB_CQ_MAX_EPS].base),
	       -FI_ENOSPC, "one more: -FI_ENOSPC");
	for (int i = 1; i < KFAB_CQ_MAX_EPS; i++)
		kfab_cq_detach(to_cq(cq), &eps[i].base);
	kfab_cq_detach(to_cq(cq), &eps[0].base);
	kfab_unlock(&dom->lock);
	eps[0].progressed = 0;
	fi_cq_read(cq, NULL, 0);
	TAP_OK(to_cq(cq)->eps.n == 1 && eps[0].progressed == 1,
	       "one of two bindings dropped: still progressed");
	kfab_lock(&dom->lock);
	kfab_cq_detach(to_cq(cq), &eps[0].base);
	kfab_unlock(&dom->lock);
	TAP_OK(!to_cq(cq)->eps.n && !to_cq(cq)->ref, "all detached");

	/* an endpoint's sides, as fi_ep_bind() binds them */
	{
		struct kfab_cq *tx = NULL, *rx = NULL;

		kfab_lock(&dom->lock);
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  0), -FI_EBADFLAGS, "bind: no side");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, NULL,
					  FI_RECV), -FI_EBADFLAGS,
		       "bind: a side the endpoint lacks");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  FI_TRANSMIT | FI_RECV), 0,
		       "bind both sides");
		TAP_OK(tx == to_cq(cq) && rx == to_cq(cq) &&
		       to_cq(cq)->eps.n == 1 && to_cq(cq)->ref == 2,
		       "one endpoint, two bindings");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  FI_RECV), -FI_EINVAL,
		       "bind a side again");
		TAP_EQ(to_cq(cq)->ref, 2, "nothing bound by the refusal");
		kfab_cq_detach(to_cq(cq), &eps[1].base);
		kfab_cq_detach(to_cq(cq), &eps[1].base);
		kfab_unlock(&dom->lock);
		TAP_OK(!to_cq(cq)->eps.n && !to_cq(cq)->ref, "both unbound");
	}
	eps[0].progressed = 0;
	fi_cq_read(cq, NULL, 0);
	TAP_EQ(eps[0].progressed, 0, "a detached endpoint is left alone");
	TAP_EQ(fi_close(&cq->fid), 0, "CQ closes");
}

int main(void)
{
	static const core_case_fn cases[] = {
		test_cq_open, test_cq_formats, test_cq_overflow,
		test_cq_errors, test_cq_err_old_api, test_cq_progress,
	};

	return core_main("core_cq_test", cases, sizeof(cases) / sizeof(cases[0]),
			 true);
}
