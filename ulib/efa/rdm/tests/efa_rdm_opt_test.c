// SPDX-License-Identifier: GPL-2.0
/*
 * efa_rdm_opt_test: kfab_efa's FI_EP_RDM endpoint options and what it
 * refuses (efa_rdm_node.h: two endpoints in one process on a private shm
 * directory). fi_msg_test covers the generic messaging, RMA and atomic
 * matrix.
 *
 *   options      FI_OPT_EFA_RNR_RETRY, _EMULATED_*, _USE_DEVICE_RDMA
 *                (against FI_EFA_USE_DEVICE_RDMA and the device),
 *                _*_IN_ORDER_ALIGNED_128_BYTES, read-only ones
 *   query_mr     the domain ops
 *   refused      bad iovec counts, inject sizes, addresses, states,
 *                target counters
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_RDM.
 *
 *   FI_PROVIDER_PATH=build/prov build/ulib-tests/efa_rdm_opt_test
 */
#define _GNU_SOURCE
#include "efa_rdm_node.h"

/* Point @what: getopt @name reads @want (and writes it: b starts at !@want). */
static void opt_is(struct node *n, int name, bool want, const char *what)
{
	bool b = !want;

	TAP_OK(!getb(n, name, &b) && b == want, "%s", what);
}

static void case_options(void)
{
	struct kfab_efa_status st;
	struct fi_kfab_efa_ep_stats es;
	struct node n = { 0 };
	size_t v = 99;
	bool b;
	int ret;

	tap_diag("---- options");
	if (!TAP_EQ(kfab_efa_get_status(knobs, &st), 0, "efa0's knobs read"))
		return;
	if (!TAP_EQ(node_open(&n, false, false), 0, "endpoint opened")) {
		node_close(&n);
		return;
	}
	TAP_EQ(get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v), 0,
	       "getopt FI_OPT_EFA_RNR_RETRY before fi_enable");
	TAP_EQ(v, st.rnr_retry,
	       "FI_OPT_EFA_RNR_RETRY defaults to the device's rnr_retry (%u) before fi_enable",
	       st.rnr_retry);
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 3), 0,
	       "setopt FI_OPT_EFA_RNR_RETRY 3 before fi_enable");
	v = 99;
	get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
	TAP_EQ(v, 3, "getopt FI_OPT_EFA_RNR_RETRY gives 3");
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 8), -FI_EINVAL,
	       "setopt FI_OPT_EFA_RNR_RETRY 8: -FI_EINVAL");
	b = false;
	TAP_OK(fi_setopt(&n.obj.ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_RNR_RETRY,
			 &b, sizeof(b)) < 0,
	       "setopt FI_OPT_EFA_RNR_RETRY of a bool's size: refused");
	TAP_EQ(node_enable(&n), 0, "fi_enable");
	v = 99;
	get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
	TAP_EQ(v, 3, "FI_OPT_EFA_RNR_RETRY 3 kept over fi_enable");
	TAP_EQ(set_sz(&n, FI_OPT_EFA_RNR_RETRY, 2), -FI_EINVAL,
	       "setopt FI_OPT_EFA_RNR_RETRY after fi_enable: -FI_EINVAL");
	TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), -FI_EINVAL,
	       "setopt FI_OPT_EFA_USE_DEVICE_RDMA after fi_enable: -FI_EINVAL");

	opt_is(&n, FI_OPT_EFA_EMULATED_READ, false,
	       "FI_OPT_EFA_EMULATED_READ false (device RDMA on)");
	opt_is(&n, FI_OPT_EFA_EMULATED_WRITE, false,
	       "FI_OPT_EFA_EMULATED_WRITE false (device RDMA on)");
	opt_is(&n, FI_OPT_EFA_EMULATED_ATOMICS, true,
	       "FI_OPT_EFA_EMULATED_ATOMICS true");
	opt_is(&n, FI_OPT_EFA_USE_DEVICE_RDMA, true,
	       "FI_OPT_EFA_USE_DEVICE_RDMA reads true");

	TAP_EQ(setb(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, true),
	       -FI_EOPNOTSUPP,
	       "setopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES true: -FI_EOPNOTSUPP");
	TAP_EQ(setb(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, true),
	       -FI_EOPNOTSUPP,
	       "setopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES true: -FI_EOPNOTSUPP");
	TAP_EQ(setb(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, false),
	       0, "setopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES false");
	TAP_EQ(setb(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, false),
	       0, "setopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES false");
	opt_is(&n, FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES, false,
	       "getopt FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES false");
	opt_is(&n, FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES, false,
	       "getopt FI_OPT_EFA_WRITE_IN_ORDER_ALIGNED_128_BYTES false");

	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_READ, true) < 0,
	       "setopt FI_OPT_EFA_EMULATED_READ (read-only): refused");
	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_WRITE, true) < 0,
	       "setopt FI_OPT_EFA_EMULATED_WRITE (read-only): refused");
	TAP_OK(setb(&n, FI_OPT_EFA_EMULATED_ATOMICS, false) < 0,
	       "setopt FI_OPT_EFA_EMULATED_ATOMICS (read-only): refused");
	memset(&es, 0, sizeof(es));
	TAP_OK(fi_setopt(&n.obj.ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
			 &es, sizeof(es)) < 0,
	       "setopt FI_OPT_KFAB_EFA_STATS (read-only): refused");
	v = 4;
	TAP_EQ(fi_getopt(&n.obj.ep->fid, FI_OPT_ENDPOINT, FI_OPT_KFAB_EFA_STATS,
			 &es, &v), -FI_ETOOSMALL,
	       "getopt FI_OPT_KFAB_EFA_STATS into 4 bytes: -FI_ETOOSMALL");
	TAP_EQ(v, sizeof(es), "... and optlen says the size it needs");
	v = 1;
	TAP_EQ(fi_getopt(&n.obj.ep->fid, FI_OPT_ENDPOINT, FI_OPT_EFA_RNR_RETRY,
			 &es, &v), -FI_ETOOSMALL,
	       "getopt FI_OPT_EFA_RNR_RETRY into 1 byte: -FI_ETOOSMALL");
	TAP_EQ(v, sizeof(size_t), "... and optlen says a size_t");
	v = 0;
	TAP_EQ(fi_getopt(&n.obj.ep->fid, FI_OPT_ENDPOINT,
			 FI_OPT_EFA_EMULATED_READ, &es, &v), -FI_ETOOSMALL,
	       "getopt FI_OPT_EFA_EMULATED_READ into 0 bytes: -FI_ETOOSMALL");
	TAP_EQ(v, sizeof(bool), "... and optlen says a bool");
	node_close(&n);

	/* a fresh endpoint takes the device's rnr_retry at fi_enable */
	if (!node_open(&n, false, false) && !node_enable(&n)) {
		v = 99;
		get_sz(&n, FI_OPT_EFA_RNR_RETRY, &v);
		TAP_EQ(v, st.rnr_retry,
		       "FI_OPT_EFA_RNR_RETRY after fi_enable, not set: the device's %u",
		       st.rnr_retry);
	} else {
		TAP_OK(0, "second endpoint opened");
	}
	node_close(&n);

	/* FI_EFA_USE_DEVICE_RDMA=0: everything emulated */
	setenv("FI_EFA_USE_DEVICE_RDMA", "0", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (TAP_EQ(ret, 0, "endpoint with FI_EFA_USE_DEVICE_RDMA=0")) {
		opt_is(&n, FI_OPT_EFA_EMULATED_READ, true,
		       "FI_EFA_USE_DEVICE_RDMA=0: FI_OPT_EFA_EMULATED_READ true");
		opt_is(&n, FI_OPT_EFA_EMULATED_WRITE, true,
		       "FI_EFA_USE_DEVICE_RDMA=0: FI_OPT_EFA_EMULATED_WRITE true");
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, true), -FI_EINVAL,
		       "FI_EFA_USE_DEVICE_RDMA=0, setopt FI_OPT_EFA_USE_DEVICE_RDMA true: -FI_EINVAL (env wins)");
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), 0,
		       "FI_EFA_USE_DEVICE_RDMA=0, setopt FI_OPT_EFA_USE_DEVICE_RDMA false: 0");
	}
	node_close(&n);

	/* FI_EFA_USE_DEVICE_RDMA=1: the option may not turn it off */
	setenv("FI_EFA_USE_DEVICE_RDMA", "1", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	if (TAP_EQ(ret, 0, "endpoint with FI_EFA_USE_DEVICE_RDMA=1"))
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, false), -FI_EINVAL,
		       "FI_EFA_USE_DEVICE_RDMA=1, setopt FI_OPT_EFA_USE_DEVICE_RDMA false: -FI_EINVAL (env wins)");
	node_close(&n);

	/* a device without RDMA */
	if (!TAP_EQ(set_knob(KFAB_EFA_KNOB_DEVICE_RDMA, 0), 0,
		    "efa0 device_rdma 0"))
		return;
	ret = node_open(&n, false, false);
	if (TAP_EQ(ret, 0, "endpoint on a device without RDMA")) {
		TAP_EQ(setb(&n, FI_OPT_EFA_USE_DEVICE_RDMA, true),
		       -FI_EOPNOTSUPP,
		       "device_rdma 0: setopt FI_OPT_EFA_USE_DEVICE_RDMA true: -FI_EOPNOTSUPP");
		opt_is(&n, FI_OPT_EFA_EMULATED_READ, true,
		       "device_rdma 0: FI_OPT_EFA_EMULATED_READ true");
		opt_is(&n, FI_OPT_EFA_EMULATED_WRITE, true,
		       "device_rdma 0: FI_OPT_EFA_EMULATED_WRITE true");
	}
	node_close(&n);
	setenv("FI_EFA_USE_DEVICE_RDMA", "1", 1);
	ret = node_open(&n, false, false);
	unsetenv("FI_EFA_USE_DEVICE_RDMA");
	TAP_EQ(ret, -FI_EOPNOTSUPP,
	       "device_rdma 0 with FI_EFA_USE_DEVICE_RDMA=1: fi_endpoint -FI_EOPNOTSUPP");
	node_close(&n);
	TAP_EQ(set_knob(KFAB_EFA_KNOB_DEVICE_RDMA, KFAB_EFA_RDMA_CAP_READ |
			KFAB_EFA_RDMA_CAP_WRITE), 0,
	       "efa0 device_rdma restored");
}

/* ------------------------------------------------------------------ */
/* query_mr */

static void case_query_mr(void)
{
	struct fi_kfab_efa_ops_domain *ops = NULL;
	struct fi_kfab_efa_mr_attr attr;
	struct fid_mr *mr = NULL;
	void *bogus = NULL;
	struct node n = { 0 };

	tap_diag("---- query_mr");
	if (!TAP_EQ(node_open(&n, false, false), 0, "endpoint"))
		goto out;
	if (!TAP_EQ(fi_mr_reg(n.obj.domain, rbuf, 65536, FI_REMOTE_READ |
			      FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0,
		    "fi_mr_reg 64 KiB")) {
		mr = NULL;
		goto out;
	}
	if (!TAP_EQ(fi_open_ops(&n.obj.domain->fid, FI_KFAB_EFA_DOMAIN_OPS, 0,
				(void **)&ops, NULL), 0,
		    "fi_open_ops(FI_KFAB_EFA_DOMAIN_OPS)") || !ops)
		goto out;
	TAP_EQ(ops->size, sizeof(*ops), "ops->size");
	memset(&attr, 0xa5, sizeof(attr));
	TAP_EQ(ops->query_mr(mr, &attr), 0, "query_mr");
	TAP_EQ(attr.rkey, fi_mr_key(mr), "rkey is fi_mr_key()");
	TAP_EQ(attr.state, FI_KFAB_EFA_MR_VALID, "state FI_KFAB_EFA_MR_VALID");
	TAP_EQ(attr.addr, (uintptr_t)rbuf, "addr");
	TAP_EQ(attr.len, 65536, "len");
	TAP_EQ(attr.device, 0, "device efa0");
	TAP_OK((attr.access & (FI_KFAB_EFA_ACCESS_REMOTE_READ |
			       FI_KFAB_EFA_ACCESS_REMOTE_WRITE)) ==
	       (FI_KFAB_EFA_ACCESS_REMOTE_READ |
		FI_KFAB_EFA_ACCESS_REMOTE_WRITE),
	       "access: remote read and write (%#x)", attr.access);
	TAP_EQ(fi_open_ops(&n.obj.domain->fid, "kfab_efa domain ops v0", 0,
			   &bogus, NULL), -FI_ENOSYS,
	       "fi_open_ops of another name: -FI_ENOSYS");
out:
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
}

/* ------------------------------------------------------------------ */
/* refused */

static void case_refused(void)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;
	struct iovec iov[9];
	struct node a = { 0 }, b = { 0 }, c = { 0 };
	size_t inj;

	tap_diag("---- refused calls");
	memset(&c, 0, sizeof(c));
	if (!TAP_EQ(pair_open(&a, &b), 0, "two endpoints"))
		goto out;
	for (int i = 0; i < 9; i++) {
		iov[i].iov_base = sbuf + i * 16;
		iov[i].iov_len = 16;
	}
	TAP_EQ(fi_sendv(a.obj.ep, iov, NULL, 9, a.peer, NULL), -FI_EINVAL,
	       "fi_sendv of 9 iovecs: -FI_EINVAL");
	TAP_EQ(fi_recvv(b.obj.ep, iov, NULL, 9, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL,
	       "fi_recvv of 9 iovecs: -FI_EINVAL");
	inj = a.obj.info->tx_attr->inject_size;
	TAP_OK(inj > 0, "inject_size %zu", inj);
	TAP_OK(fi_inject(a.obj.ep, sbuf, inj + 1, a.peer) < 0,
	       "fi_inject of inject_size + 1 bytes: refused");
	TAP_OK(fi_inject_write(a.obj.ep, sbuf, inj + 1, a.peer, 0, 0) < 0,
	       "fi_inject_write of inject_size + 1 bytes: refused");
	TAP_OK(fi_send(a.obj.ep, sbuf, 16, NULL, 12345, NULL) < 0,
	       "fi_send to an fi_addr not in the AV: refused");
	TAP_OK(fi_read(a.obj.ep, lbuf, 16, NULL, 12345, 0, 0, NULL) < 0,
	       "fi_read from an fi_addr not in the AV: refused");
	/* still working after all that */
	TAP_OK(xfer(&a, &b, 100, 5), "a message still goes");

	if (!TAP_EQ(node_open(&c, false, false), 0, "an endpoint not enabled"))
		goto out;
	TAP_EQ(fi_send(c.obj.ep, sbuf, 16, NULL, 0, NULL), -FI_EOPBADSTATE,
	       "fi_send before fi_enable: -FI_EOPBADSTATE");
	TAP_EQ(fi_recv(c.obj.ep, rbuf, 16, NULL, FI_ADDR_UNSPEC, NULL),
	       -FI_EOPBADSTATE, "fi_recv before fi_enable: -FI_EOPBADSTATE");
	if (TAP_EQ(fi_cntr_open(c.obj.domain, &cattr, &cntr, NULL), 0,
		   "fi_cntr_open")) {
		TAP_EQ(fi_ep_bind(c.obj.ep, &cntr->fid, FI_REMOTE_READ),
		       -FI_EOPNOTSUPP,
		       "FI_REMOTE_READ counter bind: -FI_EOPNOTSUPP");
		TAP_EQ(fi_ep_bind(c.obj.ep, &cntr->fid, FI_REMOTE_WRITE),
		       -FI_EOPNOTSUPP,
		       "FI_REMOTE_WRITE counter bind: -FI_EOPNOTSUPP");
	}
out:
	if (cntr)
		fi_close(&cntr->fid);
	node_close(&c);
	node_close(&a);
	node_close(&b);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const rdm_case_fn cases[] = {
		case_options, case_query_mr, case_refused,
	};

	return rdm_main("efa_rdm_opt_test", cases,
			sizeof(cases) / sizeof(cases[0]));
}
