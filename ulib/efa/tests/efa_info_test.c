// SPDX-License-Identifier: GPL-2.0
/*
 * efa_info_test: kfab_efa's fi_getinfo() on the shm backend, under a
 * private $KFAB_SHM_DIR (made here unless given): what it advertises for
 * FI_EP_RDM and FI_EP_DGRAM, hints that match and hints that do not, and
 * the options asked for. Until the RDM endpoint exists efa_getinfo()
 * lists both endpoint types (test_rdm_listed); every other case runs on
 * efa_getinfo(), the listing with RDM, as efa_getinfo() will be.
 * efa_info_addr_test covers devices and addresses.
 */
#define _GNU_SOURCE
#include "efa_info_tests.h"

static void test_defaults(void)
{
	struct efa_dev_info devs[4];
	struct efa_params p;
	struct fi_info *fi, *f;
	bool rdm_ok = true, dgram_ok = true;
	const char *want[] = { "efa0-rdm", "efa1-rdm", "efa0-dgrm",
			       "efa1-dgrm" };
	int i = 0, n;

	efa_params_load(&p);
	n = efa_devices_get(&p, devs, 4);
	TAP_EQ(n, 2, "two shm devices (KFAB_SHM_EFA_DEVICES unset)");
	TAP_OK(devs[0].active && devs[0].mtu >= 8192 &&
	       devs[0].rx_entries == 256 && devs[0].max_qps == 64 &&
	       devs[1].device == 1, "efa0 Active, mtu %u, 256 entries",
	       devs[0].mtu);

	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0,
	       "no hints");
	TAP_EQ(count(fi), 4, "one fi_info per device and type");
	for (f = fi; f; f = f->next, i++) {
		const struct efa_dev_info *di = &devs[i % 2];
		struct efa_addr src = name_of(i % 2 ? SHM_GID(2) : SHM_GID(1),
					      0, 0);
		bool ok = !strcmp(f->domain_attr->name, want[i]);

		ok &= f->addr_format == FI_ADDR_EFA &&
		      f->src_addrlen == EFA_ADDRLEN &&
		      !memcmp(f->src_addr, &src, EFA_ADDRLEN) && !f->dest_addr;
		ok &= f->ep_attr->protocol == FI_PROTO_EFA &&
		      f->ep_attr->tx_ctx_cnt == 1 &&
		      f->ep_attr->rx_ctx_cnt == 1;
		ok &= f->tx_attr->size == 256 &&
		      f->rx_attr->size == (f->ep_attr->type == FI_EP_RDM ?
					   EFA_RDM_RX_SIZE_DEFAULT : 256) &&
		      f->tx_attr->comp_order == FI_ORDER_NONE &&
		      f->tx_attr->iov_limit == KFAB_IOV_LIMIT &&
		      f->rx_attr->iov_limit == KFAB_IOV_LIMIT;
		ok &= f->domain_attr->av_type == FI_AV_TABLE &&
		      f->domain_attr->control_progress == FI_PROGRESS_MANUAL &&
		      f->domain_attr->data_progress == FI_PROGRESS_MANUAL &&
		      f->domain_attr->mr_key_size == 4 &&
		      f->domain_attr->ep_cnt == di->max_qps &&
		      f->domain_attr->mr_cnt == di->max_mrs &&
		      f->domain_attr->max_ep_tx_ctx == 1 &&
		      f->domain_attr->max_err_data == KFAB_ERR_DATA_MAX;
		ok &= !strcmp(f->fabric_attr->name, "kfab-shm") &&
		      f->fabric_attr->prov_version == KFAB_PROV_VERSION;
		if (f->ep_attr->type == FI_EP_RDM) {
			rdm_ok &= ok && i < 2;
			rdm_ok &= f->caps == (FI_MSG | FI_TAGGED | FI_RMA |
					      FI_ATOMIC | FI_SEND | FI_RECV |
					      FI_READ | FI_WRITE |
					      FI_REMOTE_READ |
					      FI_REMOTE_WRITE |
					      FI_MULTI_RECV | FI_SOURCE) &&
				  !f->mode;
			rdm_ok &= f->tx_attr->op_flags ==
					  FI_TRANSMIT_COMPLETE &&
				  f->tx_attr->msg_order == FI_ORDER_SAS &&
				  f->rx_attr->msg_order == FI_ORDER_SAS &&
				  f->tx_attr->inject_size == 4096 &&
				  f->tx_attr->rma_iov_limit == 1;
			rdm_ok &= f->ep_attr->max_msg_size == SIZE_MAX &&
				  f->ep_attr->protocol_version == 4 &&
				  !f->ep_attr->msg_prefix_size &&
				  f->ep_attr->mem_tag_format ==
					  KFAB_TAG_FORMAT_GENERIC;
			rdm_ok &= f->domain_attr->threading == FI_THREAD_SAFE &&
				  f->domain_attr->resource_mgmt ==
					  FI_RM_ENABLED &&
				  f->domain_attr->mr_mode == MR_BASIC_MAP &&
				  f->domain_attr->cq_data_size == 8 &&
				  f->domain_attr->cntr_cnt == 1024;
		} else {
			dgram_ok &= ok && i >= 2 &&
				    f->ep_attr->type == FI_EP_DGRAM;
			dgram_ok &= f->caps == (FI_MSG | FI_SEND | FI_RECV) &&
				    f->mode == FI_MSG_PREFIX &&
				    f->tx_attr->mode == FI_MSG_PREFIX &&
				    f->rx_attr->mode == FI_MSG_PREFIX;
			dgram_ok &= !f->tx_attr->msg_order &&
				    !f->rx_attr->msg_order &&
				    !f->tx_attr->inject_size &&
				    !f->tx_attr->rma_iov_limit;
			dgram_ok &= f->ep_attr->max_msg_size == di->mtu &&
				    f->ep_attr->msg_prefix_size == 32 &&
				    !f->ep_attr->mem_tag_format;
			dgram_ok &= f->domain_attr->threading ==
					    FI_THREAD_DOMAIN &&
				    f->domain_attr->resource_mgmt ==
					    FI_RM_DISABLED &&
				    f->domain_attr->mr_mode ==
					    (FI_MR_LOCAL | MR_BASIC_MAP) &&
				    !f->domain_attr->cq_data_size &&
				    !f->domain_attr->cntr_cnt;
		}
	}
	TAP_OK(rdm_ok, "FI_EP_RDM attributes, efa0-rdm and efa1-rdm first, mr_mode VIRT_ADDR | ALLOCATED | PROV_KEY, the generic tag format");
	TAP_OK(dgram_ok, "FI_EP_DGRAM attributes: MTU, prefix 32, FI_MR_LOCAL too");
	fi_freeinfo(fi);

	setenv("FI_EFA_TX_SIZE", "1000", 1);
	setenv("FI_EFA_RX_SIZE", "64", 1);
	setenv("FI_EFA_MTU_SIZE", "4096", 1);
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0,
	       "FI_EFA_TX_SIZE, FI_EFA_RX_SIZE, FI_EFA_MTU_SIZE");
	TAP_OK(fi->tx_attr->size == 1000 && fi->rx_attr->size == 64 &&
	       fi->ep_attr->max_msg_size == SIZE_MAX &&
	       fi->next->next->ep_attr->max_msg_size == 4096,
	       "sizes taken, the DGRAM MTU lowered");
	fi_freeinfo(fi);
	unsetenv("FI_EFA_TX_SIZE");
	unsetenv("FI_EFA_RX_SIZE");
	unsetenv("FI_EFA_MTU_SIZE");
}

static void test_clients(void)
{
	struct fi_info *h, *fi;

	h = fabtests_rdm_hints();
	TAP_EQ(efa_getinfo(V(1, 9), NULL, NULL, 0, h, &fi), 0,
	       "fabtests RDM hints, API 1.9");
	TAP_OK(count(fi) == 2 && count_type(fi, FI_EP_RDM) == 2 &&
	       fi->caps == (FI_TAGGED | FI_SEND | FI_RECV | FI_MULTI_RECV) &&
	       !fi->mode && fi->domain_attr->mr_mode == MR_BASIC_MAP &&
	       fi->domain_attr->threading == FI_THREAD_DOMAIN,
	       "two RDM: tagged, no mode, mr_mode VIRT_ADDR | ALLOCATED | PROV_KEY, FI_THREAD_DOMAIN");
	TAP_OK(fi->tx_attr->caps == (FI_TAGGED | FI_SEND) &&
	       fi->rx_attr->caps == (FI_TAGGED | FI_RECV | FI_MULTI_RECV),
	       "tx and rx caps");
	fi_freeinfo(fi);

	/* FI_AV_MAP: a warning, FI_AV_TABLE */
	h->domain_attr->av_type = FI_AV_MAP;
	nwarn = 0;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0, "FI_AV_MAP");
	TAP_OK(fi->domain_attr->av_type == FI_AV_TABLE && nwarn == 1,
	       "switched to FI_AV_TABLE with a warning");
	fi_freeinfo(fi);
	h->domain_attr->av_type = FI_AV_TABLE;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_AV_TABLE");
	fi_freeinfo(fi);

	/* the order and size asked for come back: zero-copy receive sees them */
	h->tx_attr->msg_order = 0;
	h->rx_attr->msg_order = 0;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "msg_order 0, max_msg_size 0");
	TAP_OK(!fi->tx_attr->msg_order && !fi->rx_attr->msg_order &&
	       fi->ep_attr->max_msg_size == SIZE_MAX,
	       "no order, as asked; no maximum message size");
	fi_freeinfo(fi);
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->ep_attr->max_msg_size = 4096;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "msg_order FI_ORDER_SAS, max_msg_size 4096");
	TAP_OK(fi->tx_attr->msg_order == FI_ORDER_SAS &&
	       fi->rx_attr->msg_order == FI_ORDER_SAS &&
	       fi->ep_attr->max_msg_size == 4096,
	       "FI_ORDER_SAS and a maximum of 4096 bytes, as asked");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* fi_endpoint(3): a tag format asked for comes back as asked */
	h = fabtests_rdm_hints();
	h->ep_attr->mem_tag_format = 0x3FFFFFFFULL;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "mem_tag_format 0x3FFFFFFF");
	TAP_EQ(fi->ep_attr->mem_tag_format, 0x3FFFFFFFULL, "returned as asked");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* fi_efa(7): FI_TC_LOW_LATENCY taken, any other class ignored */
	h = fabtests_rdm_hints();
	h->tx_attr->tclass = FI_TC_LOW_LATENCY;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "tclass FI_TC_LOW_LATENCY");
	TAP_EQ(fi->tx_attr->tclass, FI_TC_LOW_LATENCY, "returned as asked");
	fi_freeinfo(fi);
	h->tx_attr->tclass = FI_TC_BULK_DATA;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "tclass FI_TC_BULK_DATA");
	TAP_EQ(fi->tx_attr->tclass, FI_TC_UNSPEC, "ignored: FI_TC_UNSPEC");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* what zero-copy receive needs: no FI_MULTI_RECV unless asked */
	h = pingpong_hints(FI_EP_RDM);
	h->tx_attr->msg_order = 0;
	h->rx_attr->msg_order = 0;
	h->ep_attr->max_msg_size = 8192;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_MSG, no order, max_msg_size 8192 (one packet)");
	TAP_OK(fi->caps == (FI_MSG | FI_SEND | FI_RECV) &&
	       fi->rx_attr->caps == (FI_MSG | FI_RECV),
	       "FI_MSG, FI_SEND, FI_RECV: no FI_MULTI_RECV to keep zero-copy receive off");
	fi_freeinfo(fi);
	h->caps |= FI_MULTI_RECV;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "the same with FI_MULTI_RECV");
	TAP_OK(fi->caps & FI_MULTI_RECV, "FI_MULTI_RECV, as asked");
	fi_freeinfo(fi);
	h->caps = FI_MSG;
	h->ep_attr->max_msg_size = 8193;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "max_msg_size 8193 (past one packet)");
	TAP_OK(fi->caps & FI_MULTI_RECV, "FI_MULTI_RECV: no zero-copy to keep");
	fi_freeinfo(fi);
	h->ep_attr->max_msg_size = 8192;
	setenv("FI_EFA_USE_ZCPY_RX", "0", 1);
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_EFA_USE_ZCPY_RX=0");
	unsetenv("FI_EFA_USE_ZCPY_RX");
	TAP_OK(fi->caps & FI_MULTI_RECV, "FI_MULTI_RECV: zero-copy is off");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	h = dgram_hints();
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "fabtests DGRAM hints");
	TAP_OK(count(fi) == 2 && count_type(fi, FI_EP_DGRAM) == 2 &&
	       fi->caps == (FI_MSG | FI_SEND | FI_RECV) &&
	       fi->mode == FI_MSG_PREFIX &&
	       fi->domain_attr->mr_mode == (FI_MR_LOCAL | MR_BASIC_MAP) &&
	       !strcmp(fi->domain_attr->name, "efa0-dgrm"),
	       "two DGRAM: FI_MSG_PREFIX, FI_MR_LOCAL | VIRT_ADDR | ALLOCATED | PROV_KEY");
	fi_freeinfo(fi);
	/* either type: RDM first; FI_TAGGED leaves DGRAM out */
	h->ep_attr->type = FI_EP_UNSPEC;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_EP_UNSPEC, FI_MSG");
	TAP_OK(count(fi) == 4 && fi->ep_attr->type == FI_EP_RDM &&
	       count_type(fi, FI_EP_DGRAM) == 2 && !fi->mode &&
	       fi->domain_attr->mr_mode == MR_BASIC_MAP,
	       "both types, RDM first, RDM takes no mode nor FI_MR_LOCAL");
	fi_freeinfo(fi);
	h->caps = FI_TAGGED;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "FI_EP_UNSPEC, FI_TAGGED");
	TAP_OK(count(fi) == 2 && count_type(fi, FI_EP_RDM) == 2,
	       "RDM alone");
	fi_freeinfo(fi);
	/* the domain name picks the type */
	h->caps = FI_MSG;
	h->domain_attr->name = strdup("efa1-dgrm");
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "domain efa1-dgrm");
	TAP_OK(count(fi) == 1 && fi->ep_attr->type == FI_EP_DGRAM &&
	       !strcmp(fi->domain_attr->name, "efa1-dgrm"), "efa1-dgrm alone");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	h = fi_info_hints();
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "fi_info -c FI_TAGGED -t FI_EP_RDM");
	TAP_OK(!fi->mode && fi->domain_attr->mr_mode == MR_BASIC_MAP,
	       "no mode, mr_mode VIRT_ADDR | ALLOCATED | PROV_KEY");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void test_caps(void)
{
	static const struct {
		const char *what;
		uint64_t ask, got;
	} cases[] = {
		{ "FI_RMA | FI_ATOMIC: the access bits",
		  FI_RMA | FI_ATOMIC,
		  FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
		  FI_REMOTE_WRITE | FI_MULTI_RECV },
		{ "FI_MSG | FI_RMA | FI_WRITE: only FI_WRITE of RMA",
		  FI_MSG | FI_RMA | FI_WRITE,
		  FI_MSG | FI_RMA | FI_WRITE | FI_SEND | FI_RECV |
		  FI_MULTI_RECV },
		{ "FI_SEND alone: FI_MSG and FI_TAGGED",
		  FI_SEND, FI_SEND | FI_MSG | FI_TAGGED | FI_MULTI_RECV },
		{ "FI_DIRECTED_RECV and FI_SOURCE when asked",
		  FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE,
		  FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE | FI_SEND |
		  FI_RECV | FI_MULTI_RECV },
		{ "FI_LOCAL_COMM and FI_REMOTE_COMM when asked",
		  FI_MSG | FI_LOCAL_COMM | FI_REMOTE_COMM,
		  FI_MSG | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SEND |
		  FI_RECV | FI_MULTI_RECV },
	};
	struct fi_info *h = fi_allocinfo(), *fi;

	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = MR_BASIC_MAP;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		h->caps = cases[i].ask;
		if (!TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
			    "%s", cases[i].what))
			continue;
		TAP_OK(fi->caps == cases[i].got &&
		       fi->domain_attr->caps ==
			       (cases[i].got & (FI_LOCAL_COMM |
						FI_REMOTE_COMM)) &&
		       !(fi->tx_attr->caps & (FI_RECV | FI_REMOTE_READ |
					      FI_SOURCE)) &&
		       !(fi->rx_attr->caps & (FI_SEND | FI_READ)),
		       "caps %#llx, tx and rx split",
		       (unsigned long long)fi->caps);
		fi_freeinfo(fi);
	}
	fi_freeinfo(h);

	/* DGRAM: FI_SEND alone is FI_MSG; domain caps are fine */
	h = dgram_hints();
	h->caps = FI_SEND | FI_LOCAL_COMM;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "DGRAM FI_SEND | FI_LOCAL_COMM");
	TAP_OK(fi && fi->caps == (FI_MSG | FI_SEND | FI_LOCAL_COMM) &&
	       fi->tx_attr->caps == (FI_MSG | FI_SEND | FI_LOCAL_COMM) &&
	       fi->rx_attr->caps == (FI_MSG | FI_LOCAL_COMM),
	       "FI_MSG added, no FI_RECV");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void cap_named_rx(struct fi_info *h) { h->caps |= FI_NAMED_RX_CTX; }
static void proto_opx(struct fi_info *h)
{
	h->ep_attr->protocol = FI_PROTO_OPX;
}
static void proto_v5(struct fi_info *h) { h->ep_attr->protocol_version = 5; }
static void big_inject(struct fi_info *h) { h->tx_attr->inject_size = 4097; }
static void big_tx(struct fi_info *h) { h->tx_attr->size = 257; }
static void big_rx(struct fi_info *h)
{
	h->rx_attr->size = EFA_RDM_RX_SIZE_DEFAULT + 1;
}
static void selective(struct fi_info *h)
{
	h->tx_attr->op_flags = FI_COMPLETION | FI_SELECTIVE_COMPLETION;
}
static void sep(struct fi_info *h) { h->ep_attr->rx_ctx_cnt = 2; }
static void cq_data(struct fi_info *h) { h->domain_attr->cq_data_size = 16; }
static void many_eps(struct fi_info *h) { h->domain_attr->ep_cnt = 65; }
static void key_size(struct fi_info *h) { h->domain_attr->mr_key_size = 8; }
static void rm_disabled(struct fi_info *h)
{
	h->domain_attr->resource_mgmt = FI_RM_DISABLED;
}
static void dom_name(struct fi_info *h)
{
	h->domain_attr->name = strdup("efa7-rdm");
}
static void dom_bad(struct fi_info *h)
{
	h->domain_attr->name = strdup("efa0");
}
static void dom_dgrm(struct fi_info *h)
{
	h->domain_attr->name = strdup("efa0-dgrm");
}
static void dest_qpn0(struct fi_info *h)
{
	h->dest_addr = malloc(EFA_ADDRLEN);
	*(struct efa_addr *)h->dest_addr = name_of(SHM_GID(1), 0, 5);
	h->dest_addrlen = EFA_ADDRLEN;
}

/* the bits say how peers address regions: required with FI_RMA only */
static void no_mr_virt(struct fi_info *h)
{
	h->caps |= FI_RMA;
	h->domain_attr->mr_mode &= ~FI_MR_VIRT_ADDR;
}
static void no_mr_alloc(struct fi_info *h)
{
	h->caps |= FI_RMA;
	h->domain_attr->mr_mode &= ~FI_MR_ALLOCATED;
}
static void no_mr_prov_key(struct fi_info *h)
{
	h->caps |= FI_ATOMIC;
	h->domain_attr->mr_mode &= ~FI_MR_PROV_KEY;
}

static const struct nomatch_case rdm_nomatch[] = {
	{ "no FI_MR_VIRT_ADDR in mr_mode", no_mr_virt },
	{ "no FI_MR_ALLOCATED in mr_mode", no_mr_alloc },
	{ "no FI_MR_PROV_KEY in mr_mode", no_mr_prov_key },
	{ "FI_EP_MSG", ep_msg },
	{ "FI_RMA_EVENT", cap_rma_event },
	{ "FI_TRIGGER", cap_trigger },
	{ "FI_NAMED_RX_CTX (no scalable endpoints)", cap_named_rx },
	{ "tx_attr caps FI_REMOTE_READ", tx_cap_rread },
	{ "domain caps FI_SHARED_AV", dom_shared_av },
	{ "data progress 7", bad_progress },
	{ "protocol FI_PROTO_OPX", proto_opx },
	{ "protocol version 5", proto_v5 },
	{ "inject_size 4097", big_inject },
	{ "tx size 257 (256 entries)", big_tx },
	{ "rx size 8193", big_rx },
	{ "rx iov_limit 9", big_rx_iov },
	{ "rma_iov_limit 2", rma_iov },
	{ "msg_order FI_ORDER_RAW", order_raw },
	{ "comp_order FI_ORDER_STRICT", comp_strict },
	{ "op_flags FI_COMMIT_COMPLETE", commit },
	{ "selective completion", selective },
	{ "msg_prefix_size 8", prefix },
	{ "rx_ctx_cnt 2", sep },
	{ "cntr_cnt 1025", cntrs },
	{ "cq_data_size 16", cq_data },
	{ "ep_cnt 65 (max_qps 64)", many_eps },
	{ "mr_key_size 8", key_size },
	{ "av_type 7", av_unknown },
	{ "FI_RM_DISABLED", rm_disabled },
	{ "domain efa7-rdm (no such device)", dom_name },
	{ "domain efa0 (no type)", dom_bad },
	{ "domain efa0-dgrm for FI_EP_RDM", dom_dgrm },
	{ "fabric kfab-kmod on shm", fab_kmod },
	{ "addr_format FI_SOCKADDR_IN", fmt_sin },
	{ "dest_addr with qpn 0", dest_qpn0 },
	{ "dest_addr of 16 bytes", dest_len },
};

static void no_prefix(struct fi_info *h) { h->mode &= ~FI_MSG_PREFIX; }
static void no_mr_local(struct fi_info *h)
{
	h->domain_attr->mr_mode &= ~FI_MR_LOCAL;
}
static void tagged(struct fi_info *h) { h->caps = FI_TAGGED; }
static void atomics(struct fi_info *h) { h->caps = FI_MSG | FI_ATOMIC; }
static void rma(struct fi_info *h) { h->caps = FI_MSG | FI_RMA; }
static void multi_recv(struct fi_info *h) { h->caps = FI_MSG | FI_MULTI_RECV; }
static void source(struct fi_info *h) { h->caps = FI_MSG | FI_SOURCE; }
static void inject_size(struct fi_info *h) { h->tx_attr->inject_size = 1; }
static void inject_flag(struct fi_info *h)
{
	h->tx_attr->op_flags = FI_INJECT;
}
static void delivery(struct fi_info *h)
{
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
}
static void one_cntr(struct fi_info *h) { h->domain_attr->cntr_cnt = 1; }
static void sas(struct fi_info *h) { h->rx_attr->msg_order = FI_ORDER_SAS; }
static void thread_safe(struct fi_info *h)
{
	h->domain_attr->threading = FI_THREAD_SAFE;
}
static void thread_ep(struct fi_info *h)
{
	h->domain_attr->threading = FI_THREAD_ENDPOINT;
}
static void rm_enabled(struct fi_info *h)
{
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
}
static void cq_data4(struct fi_info *h) { h->domain_attr->cq_data_size = 4; }
static void big_msg(struct fi_info *h) { h->ep_attr->max_msg_size = 1 << 20; }
static void prefix40(struct fi_info *h) { h->ep_attr->msg_prefix_size = 40; }

static const struct nomatch_case dgram_nomatch[] = {
	{ "no FI_MSG_PREFIX in mode", no_prefix },
	{ "no FI_MR_LOCAL in mr_mode", no_mr_local },
	{ "FI_TAGGED", tagged },
	{ "FI_ATOMIC", atomics },
	{ "FI_RMA", rma },
	{ "FI_MULTI_RECV", multi_recv },
	{ "FI_SOURCE", source },
	{ "inject_size 1", inject_size },
	{ "op_flags FI_INJECT", inject_flag },
	{ "op_flags FI_DELIVERY_COMPLETE", delivery },
	{ "selective completion", selective },
	{ "a counter", one_cntr },
	{ "msg_order FI_ORDER_SAS", sas },
	{ "FI_THREAD_SAFE", thread_safe },
	{ "FI_THREAD_ENDPOINT", thread_ep },
	{ "FI_RM_ENABLED", rm_enabled },
	{ "cq_data_size 4", cq_data4 },
	{ "max_msg_size 1 MiB (past the MTU)", big_msg },
	{ "msg_prefix_size 40", prefix40 },
};

static void test_nomatch(void)
{
	nomatch_run(efa_getinfo, "RDM", fabtests_rdm_hints, rdm_nomatch,
		    sizeof(rdm_nomatch) / sizeof(rdm_nomatch[0]));
	nomatch_run(efa_getinfo, "DGRAM", dgram_hints, dgram_nomatch,
		    sizeof(dgram_nomatch) / sizeof(dgram_nomatch[0]));
}

static void test_options(void)
{
	struct fi_info *h, *fi;

	/* FI_PROGRESS_AUTO asked for is given, both types */
	progress_auto_is(efa_getinfo, fabtests_rdm_hints,
			 "RDM FI_PROGRESS_AUTO");
	progress_auto_is(efa_getinfo, dgram_hints, "DGRAM FI_PROGRESS_AUTO");

	/* op_flags asked for are returned */
	op_flags_are(efa_getinfo, fabtests_rdm_hints,
		     FI_DELIVERY_COMPLETE | FI_INJECT);

	/* every limit at its maximum, with op_flags */
	h = fabtests_rdm_hints();
	h->tx_attr->op_flags = FI_COMPLETION;
	h->rx_attr->op_flags = FI_MULTI_RECV;
	h->domain_attr->threading = FI_THREAD_COMPLETION;
	h->tx_attr->size = 256;
	h->ep_attr->max_msg_size = SIZE_MAX;
	h->domain_attr->mr_key_size = 4;
	h->domain_attr->cq_data_size = 8;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "every limit at its maximum, FI_THREAD_COMPLETION");
	TAP_EQ(fi->domain_attr->threading, FI_THREAD_COMPLETION,
	       "threading asked for");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/* DGRAM: the limits at their maximum */
	h = dgram_hints();
	h->ep_attr->max_msg_size = 4096;
	h->ep_attr->msg_prefix_size = EFA_DGRAM_PREFIX_SIZE;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->resource_mgmt = FI_RM_DISABLED;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "DGRAM: max_msg_size 4096, the prefix size, FI_RM_DISABLED");
	fi_freeinfo(fi);
	fi_freeinfo(h);

	/*
	 * mr_mode before API 1.5: the old enum, FI_LOCAL_MR for DGRAM. Without
	 * FI_RMA and FI_ATOMIC no region is named by a peer: FI_MR_SCALABLE
	 * does as well as FI_MR_BASIC.
	 */
	h = fabtests_rdm_hints();
	h->domain_attr->mr_mode = FI_MR_UNSPEC;
	TAP_EQ(efa_getinfo(V(1, 4), NULL, NULL, 0, h, &fi), 0,
	       "API 1.4, FI_MR_UNSPEC");
	TAP_OK(fi->domain_attr->mr_mode == FI_MR_SCALABLE && !fi->mode,
	       "without FI_RMA: FI_MR_SCALABLE, no FI_LOCAL_MR for RDM");
	fi_freeinfo(fi);
	mr_mode_is(efa_getinfo, V(1, 4), h, FI_MR_SCALABLE, FI_MR_SCALABLE,
		   "FI_MR_SCALABLE without FI_RMA");
	mr_mode_is(efa_getinfo, V(1, 4), h, FI_MR_BASIC, FI_MR_BASIC,
		   "FI_MR_BASIC without FI_RMA");
	h->caps |= FI_RMA;
	mr_mode_is(efa_getinfo, V(1, 4), h, FI_MR_UNSPEC, FI_MR_BASIC,
		   "FI_RMA, FI_MR_UNSPEC");
	mr_mode_is(efa_getinfo, V(1, 4), h, FI_MR_SCALABLE, -1,
		   "FI_RMA, FI_MR_SCALABLE");
	/* from 1.5 on, the legacy values alone, as fi_mr(3) maps them */
	mr_mode_is(efa_getinfo, V(1, 5), h, FI_MR_SCALABLE, -1,
		   "FI_RMA, FI_MR_SCALABLE");
	mr_mode_is(efa_getinfo, V(1, 17), h, FI_MR_BASIC, FI_MR_BASIC,
		   "FI_RMA, FI_MR_BASIC");
	mr_mode_is(efa_getinfo, V(1, 17), h, FI_MR_BASIC | FI_MR_LOCAL, -1,
		   "FI_MR_BASIC with another bit");
	mr_mode_is(efa_getinfo, V(1, 5), h, MR_BASIC_MAP, MR_BASIC_MAP,
		   "FI_MR_BASIC's bits");
	fi_freeinfo(h);
	h = dgram_hints();
	h->domain_attr->mr_mode = FI_MR_UNSPEC;
	TAP_EQ(efa_getinfo(V(1, 4), NULL, NULL, 0, h, &fi), -FI_ENODATA,
	       "API 1.4 DGRAM without FI_LOCAL_MR: no match");
	h->domain_attr->mr_mode = FI_MR_BASIC;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA,
	       "API 1.17 DGRAM, FI_MR_BASIC without FI_LOCAL_MR: no match");
	h->mode |= FI_LOCAL_MR;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "API 1.17 DGRAM, FI_MR_BASIC with FI_LOCAL_MR");
	TAP_OK(fi->mode == (FI_MSG_PREFIX | FI_LOCAL_MR) &&
	       fi->domain_attr->mr_mode == FI_MR_BASIC,
	       "mode FI_MSG_PREFIX | FI_LOCAL_MR, FI_MR_BASIC");
	fi_freeinfo(fi);
	h->domain_attr->mr_mode = FI_MR_UNSPEC;
	TAP_EQ(efa_getinfo(V(1, 4), NULL, NULL, 0, h, &fi), 0,
	       "API 1.4 DGRAM with FI_LOCAL_MR");
	TAP_OK(fi->mode == (FI_MSG_PREFIX | FI_LOCAL_MR) &&
	       fi->domain_attr->mr_mode == FI_MR_SCALABLE,
	       "mode FI_MSG_PREFIX | FI_LOCAL_MR, FI_MR_SCALABLE");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/*
 * efa_getinfo(): both endpoint types; without FI_RMA and FI_ATOMIC an RDM
 * application need not take the mr_mode bits of addressing regions, and
 * gets those it offers.
 */
/*
 * A utility provider's search for a core provider (ofi_rxd's, with
 * libfabric's OFI_CORE_PROV_ONLY) finds kfab_efa only when named.
 */
static void test_layering(void)
{
	const char *named[] = { "kfab_efa;^ofi_rxd", "KFAB_EFA", "kfab_efa" };
	const char *unnamed[] = { NULL, "^ofi_rxd", "kfab_efa_x;^ofi_rxd" };
	struct fi_info *h = dgram_hints(), *fi;
	size_t i;

	for (i = 0; i < sizeof(unnamed) / sizeof(unnamed[0]); i++) {
		h->fabric_attr->prov_name = (char *)unnamed[i];
		fi = NULL;
		TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL,
				   KFAB_OFI_CORE_PROV_ONLY, h, &fi),
		       -FI_ENODATA, "layering, prov_name %s: refused",
		       unnamed[i] ? unnamed[i] : "(none)");
		fi_freeinfo(fi);
	}
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		h->fabric_attr->prov_name = (char *)named[i];
		fi = NULL;
		TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL,
				   KFAB_OFI_CORE_PROV_ONLY, h, &fi), 0,
		       "layering, prov_name %s: offered", named[i]);
		TAP_OK(fi && count_type(fi, FI_EP_DGRAM) == 2,
		       "the two DGRAM entries");
		fi_freeinfo(fi);
	}
	h->fabric_attr->prov_name = NULL;
	fi_freeinfo(h);
}

static void test_rdm_listed(void)
{
	struct fi_info *fi = NULL, *h;
	struct fi_info *f;
	int rdm = 0, dgram = 0;

	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), 0,
	       "efa_getinfo, no hints");
	for (f = fi; f; f = f->next) {
		rdm += f->ep_attr->type == FI_EP_RDM &&
		       !!strstr(f->domain_attr->name, "-rdm");
		dgram += f->ep_attr->type == FI_EP_DGRAM &&
			 !!strstr(f->domain_attr->name, "-dgrm");
	}
	TAP_OK(fi && count(fi) == 4 && rdm == 2 && dgram == 2,
	       "efa_getinfo lists efa0-rdm, efa1-rdm, efa0-dgrm, efa1-dgrm");
	fi_freeinfo(fi);
	h = fabtests_rdm_hints();
	h->caps = FI_MSG | FI_TAGGED;
	h->domain_attr->mr_mode = 0;
	fi = NULL;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "efa_getinfo: RDM messaging with mr_mode 0");
	TAP_OK(fi && fi->domain_attr->mr_mode == 0,
	       "mr_mode 0 comes back");
	fi_freeinfo(fi);
	h->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_LOCAL;
	fi = NULL;
	TAP_EQ(efa_getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0,
	       "efa_getinfo: RDM messaging offering FI_MR_PROV_KEY");
	TAP_OK(fi && fi->domain_attr->mr_mode == FI_MR_PROV_KEY,
	       "FI_MR_PROV_KEY comes back, FI_MR_LOCAL not (not needed)");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

int main(void)
{
	char dir[256];
	bool own = info_start("efa_info_test", dir, sizeof(dir));

	test_rdm_listed();
	test_layering();
	test_defaults();
	test_clients();
	test_caps();
	test_nomatch();
	test_options();
	return info_done(dir, own);
}
