// SPDX-License-Identifier: GPL-2.0
/*
 * opx_info_test: kfab_opx's fi_getinfo() on the shm backend: what it
 * advertises, hints that match (fabtests, fi_info, fi_pingpong) and hints
 * that do not, addresses from hints and from node, the unit order of
 * FI_OPX_HFI_SELECT, parameter errors; and the endpoint name helpers.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/info_util.h"
#include "core/kfab_attr.h"
#include "core/kfab_log.h"
#include "opx/opx_info.h"
#include "opx/opx_proto.h"
#include "tests/tap.h"

static void quiet(enum kfab_log_level level, const char *msg)
{
	(void)level;
	(void)msg;
}

/* fabtests' hints for fi_rdm_tagged_pingpong, with a traffic class */
static struct fi_info *fabtests_hints(void)
{
	struct fi_info *h = fabtests_rdm_hints();

	h->domain_attr->tclass = FI_TC_LOW_LATENCY;
	return h;
}

/*
 * Every fi_info carries its unit's address (shm: LID unit + 1, context 0,
 * session 0), fi_getinfo(3)'s src_addr, whatever node and service say.
 */
static bool unit_src_addrs(const struct fi_info *fi)
{
	unsigned int unit;
	uint64_t name;

	for (; fi; fi = fi->next) {
		if (!fi->src_addr || fi->src_addrlen != OPX_ADDRLEN ||
		    sscanf(fi->domain_attr->name, "hfi%u", &unit) != 1)
			return false;
		memcpy(&name, fi->src_addr, OPX_ADDRLEN);
		if (name != opx_name((uint16_t)(unit + 1), 0, 0))
			return false;
	}
	return true;
}

static void test_defaults(void)
{
	struct fi_info *fi, *f;
	int want_first = getpid() % 2;
	char want[8];
	bool ok = true;

	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0,
	       "no hints");
	TAP_EQ(count(fi), 2, "one fi_info per unit (KFAB_SHM_UNITS=2)");
	snprintf(want, sizeof(want), "hfi%d", want_first);
	TAP_OK(!strcmp(fi->domain_attr->name, want),
	       "the default unit first: %s", fi->domain_attr->name);
	for (f = fi; f; f = f->next) {
		ok &= f->caps == (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV |
				  FI_MULTI_RECV | FI_SOURCE | FI_RMA |
				  FI_ATOMIC | FI_READ | FI_WRITE |
				  FI_REMOTE_READ | FI_REMOTE_WRITE);
		ok &= !f->mode && f->addr_format == FI_ADDR_OPX;
		ok &= f->tx_attr->op_flags == FI_TRANSMIT_COMPLETE &&
		      f->tx_attr->msg_order == FI_ORDER_SAS &&
		      f->tx_attr->comp_order == FI_ORDER_NONE &&
		      f->tx_attr->inject_size == 48 &&
		      f->tx_attr->size == 4096 &&
		      f->tx_attr->iov_limit == KFAB_IOV_LIMIT &&
		      f->tx_attr->rma_iov_limit == 1;
		ok &= f->rx_attr->msg_order == FI_ORDER_SAS &&
		      f->rx_attr->comp_order == FI_ORDER_NONE &&
		      f->rx_attr->size == 4096 &&
		      !f->rx_attr->total_buffered_recv &&
		      f->rx_attr->iov_limit == KFAB_IOV_LIMIT;
		ok &= f->ep_attr->type == FI_EP_RDM &&
		      f->ep_attr->protocol == FI_PROTO_OPX &&
		      f->ep_attr->max_msg_size == 1ULL << 40 &&
		      f->ep_attr->mem_tag_format == KFAB_TAG_FORMAT_GENERIC &&
		      f->ep_attr->tx_ctx_cnt == 1 &&
		      f->ep_attr->rx_ctx_cnt == 1;
		ok &= f->domain_attr->threading == FI_THREAD_SAFE &&
		      f->domain_attr->control_progress == FI_PROGRESS_MANUAL &&
		      f->domain_attr->data_progress == FI_PROGRESS_MANUAL &&
		      f->domain_attr->resource_mgmt == FI_RM_ENABLED &&
		      f->domain_attr->av_type == OPX_AV_DEFAULT &&
		      f->domain_attr->mr_mode == 0 &&
		      f->domain_attr->mr_key_size == 8 &&
		      f->domain_attr->cq_data_size == 4 &&
		      f->domain_attr->ep_cnt == 16 &&
		      f->domain_attr->max_ep_tx_ctx == 32 &&
		      f->domain_attr->max_ep_rx_ctx == 32 &&
		      f->domain_attr->cntr_cnt == 1024;
		ok &= !strcmp(f->fabric_attr->name, "kfab-shm") &&
		      !f->fabric_attr->prov_name &&
		      f->fabric_attr->prov_version == KFAB_PROV_VERSION;
	}
	TAP_OK(ok, "the advertised attributes");
	TAP_OK(unit_src_addrs(fi), "no hints: each unit's src_addr");
	fi_freeinfo(fi);

	/* the unit FI_OPX_HFI_SELECT picks comes first */
	setenv("FI_OPX_HFI_SELECT", want_first ? "0" : "1", 1);
	opx_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi);
	TAP_OK(fi && fi->next && strcmp(fi->domain_attr->name, want),
	       "FI_OPX_HFI_SELECT reorders: %s first", fi->domain_attr->name);
	fi_freeinfo(fi);
	unsetenv("FI_OPX_HFI_SELECT");
	setenv("KFAB_SHM_UNITS", "3", 1);
	opx_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi);
	TAP_EQ(count(fi), 3, "KFAB_SHM_UNITS=3: 3 units");
	fi_freeinfo(fi);
	setenv("KFAB_SHM_CTXTS", "5", 1);
	opx_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi);
	TAP_EQ(fi->domain_attr->ep_cnt, 5, "ep_cnt: contexts per unit");
	fi_freeinfo(fi);
	unsetenv("KFAB_SHM_CTXTS");
	setenv("KFAB_SHM_UNITS", "2", 1);
}

static void test_clients(void)
{
	struct fi_info *h, *fi;

	h = fabtests_hints();
	TAP_EQ(opx_getinfo(V(1, 9), NULL, NULL, FI_SOURCE, h, &fi), 0,
	       "fabtests hints, API 1.9");
	TAP_OK(fi->caps == (FI_TAGGED | FI_SEND | FI_RECV | FI_MULTI_RECV) &&
	       !fi->mode && !fi->domain_attr->mr_mode &&
	       fi->domain_attr->threading == FI_THREAD_DOMAIN,
	       "tagged, no mode, mr_mode 0, FI_THREAD_DOMAIN");
	TAP_OK(fi->tx_attr->caps == (FI_TAGGED | FI_SEND) &&
	       fi->rx_attr->caps == (FI_TAGGED | FI_RECV | FI_MULTI_RECV),
	       "tx and rx caps");
	fi_freeinfo(fi);
	/* OPX_AV: a build for one AV type refuses the other */
	for (enum fi_av_type t = FI_AV_MAP; t <= FI_AV_TABLE; t++) {
		bool ok = OPX_AV_ONLY == FI_AV_UNSPEC || OPX_AV_ONLY == t;

		h->domain_attr->av_type = t;
		h->domain_attr->threading = FI_THREAD_COMPLETION;
		TAP_EQ(opx_getinfo(V(1, 9), NULL, NULL, 0, h, &fi),
		       ok ? 0 : -FI_ENODATA, "%s, FI_THREAD_COMPLETION",
		       t == FI_AV_MAP ? "FI_AV_MAP" : "FI_AV_TABLE");
		if (!ok)
			continue;
		TAP_OK(fi->domain_attr->av_type == t &&
		       fi->domain_attr->threading == FI_THREAD_COMPLETION,
		       "both honoured");
		fi_freeinfo(fi);
	}
	fi_freeinfo(h);

	/* RMA and atomics: the access bits follow, nothing else primary */
	h = fi_allocinfo();
	h->caps = FI_RMA | FI_ATOMIC;
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_RMA | FI_ATOMIC");
	TAP_OK(fi->caps == (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
			    FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV) &&
	       fi->tx_attr->caps == (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE) &&
	       fi->rx_attr->caps == (FI_RMA | FI_ATOMIC | FI_REMOTE_READ |
				     FI_REMOTE_WRITE | FI_MULTI_RECV) &&
	       fi->tx_attr->rma_iov_limit == 1,
	       "FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE; rma_iov_limit 1");
	fi_freeinfo(fi);
	h->caps = FI_MSG | FI_RMA | FI_WRITE;
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_MSG | FI_RMA | FI_WRITE");
	TAP_OK(fi->caps == (FI_MSG | FI_RMA | FI_WRITE | FI_SEND | FI_RECV |
			    FI_MULTI_RECV), "only FI_WRITE of RMA: %#llx",
	       (unsigned long long)fi->caps);
	fi_freeinfo(fi);
	fi_freeinfo(h);

	h = pingpong_hints(FI_EP_RDM);
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "fi_pingpong hints");
	TAP_OK(fi->caps == (FI_MSG | FI_SEND | FI_RECV | FI_MULTI_RECV) &&
	       !(fi->caps & FI_DIRECTED_RECV), "FI_MSG, no FI_DIRECTED_RECV");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	h = fi_info_hints();
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "fi_info -c FI_TAGGED -t FI_EP_RDM");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void ep_dgram(struct fi_info *h) { h->ep_attr->type = FI_EP_DGRAM; }
static void cap_hmem(struct fi_info *h) { h->caps |= FI_HMEM; }
static void proto_efa(struct fi_info *h)
{
	h->ep_attr->protocol = FI_PROTO_EFA;
}
static void big_msg(struct fi_info *h)
{
	h->ep_attr->max_msg_size = (1ULL << 40) + 1;
}
static void big_inject(struct fi_info *h) { h->tx_attr->inject_size = 49; }
static void big_tx(struct fi_info *h) { h->tx_attr->size = 4097; }
static void shared_ctx(struct fi_info *h)
{
	h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
}
static void many_rx_ctx(struct fi_info *h) { h->ep_attr->rx_ctx_cnt = 33; }
static void dom_tx_ctx(struct fi_info *h)
{
	h->domain_attr->max_ep_tx_ctx = 33;
}
static void cq_data(struct fi_info *h) { h->domain_attr->cq_data_size = 8; }
static void dom_name(struct fi_info *h)
{
	h->domain_attr->name = strdup("hfi7");
}
static void dom_bad(struct fi_info *h)
{
	h->domain_attr->name = strdup("mlx5_0");
}
static void dest_lid0(struct fi_info *h)
{
	uint64_t n = opx_name(0, 1, 1);

	h->dest_addr = malloc(8);
	memcpy(h->dest_addr, &n, 8);
	h->dest_addrlen = 8;
}

static const struct nomatch_case nomatch_cases[] = {
	{ "FI_EP_MSG", ep_msg },
	{ "FI_EP_DGRAM", ep_dgram },
	{ "FI_RMA_EVENT", cap_rma_event },
	{ "FI_TRIGGER", cap_trigger },
	{ "FI_HMEM", cap_hmem },
	{ "tx_attr caps FI_REMOTE_READ", tx_cap_rread },
	{ "domain caps FI_SHARED_AV", dom_shared_av },
	{ "data progress 7", bad_progress },
	{ "protocol FI_PROTO_EFA", proto_efa },
	{ "max_msg_size past 2^40", big_msg },
	{ "inject_size 49", big_inject },
	{ "tx size 4097", big_tx },
	{ "rx iov_limit 9", big_rx_iov },
	{ "rma_iov_limit 2", rma_iov },
	{ "msg_order FI_ORDER_RAW", order_raw },
	{ "comp_order FI_ORDER_STRICT", comp_strict },
	{ "op_flags FI_COMMIT_COMPLETE", commit },
	{ "msg_prefix_size 8", prefix },
	{ "shared contexts", shared_ctx },
	{ "rx_ctx_cnt 33", many_rx_ctx },
	{ "max_ep_tx_ctx 33", dom_tx_ctx },
	{ "cntr_cnt 1025", cntrs },
	{ "cq_data_size 8", cq_data },
	{ "av_type 7", av_unknown },
	{ "domain hfi7 (no such unit)", dom_name },
	{ "domain mlx5_0", dom_bad },
	{ "fabric kfab-kmod on shm", fab_kmod },
	{ "addr_format FI_SOCKADDR_IN", fmt_sin },
	{ "dest_addr with LID 0", dest_lid0 },
	{ "dest_addr of 16 bytes", dest_len },
};

static void test_nomatch(void)
{
	nomatch_run(opx_getinfo, NULL, fabtests_hints, nomatch_cases,
		    sizeof(nomatch_cases) / sizeof(nomatch_cases[0]));
}

static void test_options(void)
{
	struct fi_info *h, *fi;

	/* FI_PROGRESS_AUTO asked for is given, data and control */
	progress_auto_is(opx_getinfo, fabtests_hints,
			 "FI_PROGRESS_AUTO matches");

	/* op_flags asked for are returned */
	op_flags_are(opx_getinfo, fabtests_hints, FI_DELIVERY_COMPLETE);

	/* directed receive and the source only when asked for */
	h = fabtests_hints();
	h->caps = FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE | FI_LOCAL_COMM |
		  FI_REMOTE_COMM;
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_DIRECTED_RECV, FI_SOURCE, FI_LOCAL_COMM, FI_REMOTE_COMM");
	TAP_OK((fi->caps & (FI_DIRECTED_RECV | FI_SOURCE)) ==
	       (FI_DIRECTED_RECV | FI_SOURCE) &&
	       fi->domain_attr->caps == (FI_LOCAL_COMM | FI_REMOTE_COMM),
	       "returned");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* scalable endpoints: named receive contexts, the counts asked for */
	h = fabtests_hints();
	h->caps = FI_TAGGED | FI_NAMED_RX_CTX;
	h->ep_attr->tx_ctx_cnt = 4;
	h->ep_attr->rx_ctx_cnt = 32;
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_NAMED_RX_CTX, 4 tx and 32 rx contexts");
	TAP_OK(fi && (fi->caps & FI_NAMED_RX_CTX) &&
	       (fi->tx_attr->caps & FI_NAMED_RX_CTX) &&
	       fi->ep_attr->tx_ctx_cnt == 4 && fi->ep_attr->rx_ctx_cnt == 32,
	       "returned, in tx_attr caps too");
	fi_freeinfo(fi);
	fi_freeinfo(h);
	h = fabtests_hints();
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0, "no caps");
	TAP_OK(fi && !(fi->caps & FI_NAMED_RX_CTX) &&
	       fi->ep_attr->tx_ctx_cnt == 1 && fi->ep_attr->rx_ctx_cnt == 1,
	       "FI_NAMED_RX_CTX only when asked, one context each");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* the domain asked for */
	h = fabtests_hints();
	h->domain_attr->name = strdup("hfi1");
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0, "hfi1");
	TAP_OK(count(fi) == 1 && !strcmp(fi->domain_attr->name, "hfi1"),
	       "only hfi1");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/*
	 * mr_mode: we need no bit (FI_MR_SCALABLE before API 1.5); the legacy
	 * FI_MR_BASIC, before and after 1.5, gets provider keys and virtual
	 * addresses (fi_msg_test's rma_basic case checks the domain).
	 */
	h = fabtests_hints();
	mr_mode_is(opx_getinfo, V(1, 4), h, FI_MR_UNSPEC, FI_MR_SCALABLE,
		   "FI_MR_UNSPEC");
	h->caps |= FI_RMA;
	for (int v = 4; v <= 17; v += 13) {
		mr_mode_is(opx_getinfo, V(1, v), h, FI_MR_SCALABLE,
			   FI_MR_SCALABLE, "FI_RMA, FI_MR_SCALABLE");
		mr_mode_is(opx_getinfo, V(1, v), h, FI_MR_BASIC, FI_MR_BASIC,
			   "FI_RMA, FI_MR_BASIC");
	}
	mr_mode_is(opx_getinfo, V(1, 17), h, FI_MR_BASIC | FI_MR_LOCAL, -1,
		   "FI_MR_BASIC with another bit");
	mr_mode_is(opx_getinfo, V(1, 4), h, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY,
		   -1, "bits");
	mr_mode_is(opx_getinfo, V(1, 17), h, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY,
		   0, "bits offered, none needed");
	fi_freeinfo(h);
}

static void test_addrs(void)
{
	uint64_t n = opx_name(2, 3, 0x1234), got;
	struct fi_info *h, *fi;

	/* fi_pingpong's client: the server's name as hints->dest_addr */
	h = pingpong_hints(FI_EP_RDM);
	h->dest_addr = malloc(8);
	memcpy(h->dest_addr, &n, 8);
	h->dest_addrlen = 8;
	TAP_EQ(opx_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "dest_addr in hints");
	memcpy(&got, fi->dest_addr, 8);
	TAP_OK(fi->dest_addrlen == 8 && got == n && fi->next &&
	       fi->next->dest_addr, "every fi_info has the dest_addr");
	fi_freeinfo(fi);
	/* node overrides the hints */
	TAP_EQ(opx_getinfo(V(1, 17), "fi_addr_opx://1.9.0x77", NULL, 0, h,
			   &fi), 0, "node in the text form");
	memcpy(&got, fi->dest_addr, 8);
	TAP_EQ(got, opx_name(1, 9, 0x77), "node is the dest_addr");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* fi_tostr()'s form */
	TAP_EQ(opx_getinfo(V(1, 17), "fi_addr_opx://0000123400030002", NULL,
			   0, NULL, &fi), 0, "node in fi_tostr's form");
	memcpy(&got, fi->dest_addr, 8);
	TAP_EQ(got, n, "same name");
	fi_freeinfo(fi);

	/* a host name or an IP address */
	TAP_EQ(opx_getinfo(V(1, 17), "127.0.0.1", "9228", 0, NULL, &fi),
	       -FI_ENODATA, "destination 127.0.0.1: no match");
	TAP_EQ(opx_getinfo(V(1, 17), "127.0.0.1", "9228", FI_SOURCE, NULL,
			   &fi), 0, "source 127.0.0.1: this host");
	TAP_OK(count(fi) == 2 && unit_src_addrs(fi),
	       "both units, each with its src_addr");
	fi_freeinfo(fi);
	TAP_EQ(opx_getinfo(V(1, 17), "localhost", NULL, FI_SOURCE, NULL, &fi),
	       0, "source localhost, no service");
	TAP_OK(count(fi) == 2 && unit_src_addrs(fi), "each unit's src_addr");
	fi_freeinfo(fi);
	TAP_EQ(opx_getinfo(V(1, 17), NULL, "9228", FI_SOURCE, NULL, &fi), 0,
	       "a service alone");
	TAP_OK(count(fi) == 2 && unit_src_addrs(fi), "each unit's src_addr");
	fi_freeinfo(fi);
	h = fabtests_hints();
	TAP_EQ(opx_getinfo(V(1, 17), NULL, "9228", FI_SOURCE, h, &fi), 0,
	       "hints and a service alone");
	TAP_OK(unit_src_addrs(fi), "each unit's src_addr");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* a source address picks the unit of its LID (shm: unit + 1) */
	TAP_EQ(opx_getinfo(V(1, 17), "fi_addr_opx://2.0.0x5", NULL,
			   FI_SOURCE, NULL, &fi), 0, "source LID 2");
	TAP_OK(count(fi) == 1 && !strcmp(fi->domain_attr->name, "hfi1") &&
	       fi->src_addrlen == 8, "hfi1 with the src_addr");
	fi_freeinfo(fi);
	TAP_EQ(opx_getinfo(V(1, 17), "fi_addr_opx://9.0.0x5", NULL,
			   FI_SOURCE, NULL, &fi), -FI_ENODATA,
	       "source LID 9: no unit");
}

static void test_params(void)
{
	static const struct env_case cases[] = {
		{ "FI_OPX_SL", "16", -FI_EINVAL, "fails fi_getinfo" },
		{ "FI_OPX_HFI_SELECT", "5", -FI_ENODEV, "no such unit" },
		{ "FI_OPX_HFI_SELECT", "0,numa", -FI_EINVAL, "malformed" },
		{ "KFAB_SHM_UNITS", "9", -FI_EINVAL, "refused" },
	};

	env_cases_run(opx_getinfo, cases, sizeof(cases) / sizeof(cases[0]));
}

static void test_names(void)
{
	static const struct {
		const char *s;
		int ret;
		uint64_t name;
	} cases[] = {
		{ "fi_addr_opx://1.0.0x0", 0, 0x0000000000000001ULL },
		{ "fi_addr_opx://65535.65535.0xffffffff", 0,
		  0xffffffffffffffffULL },
		{ "fi_addr_opx://2.3.0x1234", 0, 0x0000123400030002ULL },
		{ "fi_addr_opx://0000123400030002", 0, 0x0000123400030002ULL },
		/* LID 0, out of range, missing parts, junk, no 0x */
		{ "fi_addr_opx://0.1.0x1", -FI_EINVAL, 0 },
		{ "fi_addr_opx://0000123400030000", -FI_EINVAL, 0 },
		{ "fi_addr_opx://65536.0.0x1", -FI_EINVAL, 0 },
		{ "fi_addr_opx://1.65536.0x1", -FI_EINVAL, 0 },
		{ "fi_addr_opx://1.1.0x100000000", -FI_EINVAL, 0 },
		{ "fi_addr_opx://1.1", -FI_EINVAL, 0 },
		{ "fi_addr_opx://1.1.1", -FI_EINVAL, 0 },
		{ "fi_addr_opx://1.1.0x1 ", -FI_EINVAL, 0 },
		{ "fi_addr_opx://.1.0x1", -FI_EINVAL, 0 },
		{ "fi_addr_psmx3://1.1.0x1", -FI_EINVAL, 0 },
		{ "1.1.0x1", -FI_EINVAL, 0 },
	};
	uint8_t name[8];
	uint64_t n, key;
	char buf[64];
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = opx_addr_parse(cases[i].s, name);

		memcpy(&n, name, 8);
		TAP_OK(ret == cases[i].ret && (ret || n == cases[i].name),
		       "parse %s", cases[i].s);
	}
	n = opx_name(7, 9, 0xabc);
	TAP_EQ(opx_addr_key(&n, &key), 0, "key of a name");
	TAP_EQ(key, 7 | 9 << 16, "key: LID | ctxt << 16");
	n = opx_name(0, 9, 0xabc);
	TAP_EQ(opx_addr_key(&n, &key), -FI_EINVAL, "LID 0: no key");
	/* the text form parses back */
	n = opx_name(300, 12, 0xdeadbeef);
	len = sizeof(buf);
	opx_straddr(&n, buf, &len);
	TAP_OK(!opx_addr_parse(buf, name) && !memcmp(name, &n, 8) &&
	       len == strlen(buf) + 1, "straddr %s parses back", buf);
}

int main(void)
{
	tap_start("opx_info_test");
	kfab_log_set(quiet);
	setenv("FI_KFAB_BACKEND", "shm", 1);
	setenv("KFAB_SHM_UNITS", "2", 1);
	unsetenv("FI_OPX_HFI_SELECT");
	unsetenv("KFAB_SHM_CTXTS");
	test_defaults();
	test_clients();
	test_nomatch();
	test_options();
	test_addrs();
	test_params();
	test_names();
	return tap_done();
}
