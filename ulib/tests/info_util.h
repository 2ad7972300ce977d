/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the fi_getinfo() tests of kfab_opx and kfab_efa (opx_info_test,
 * efa_info_test) share: the hints well-known clients pass, counting
 * fi_infos, the options asked for that come back, and hints one setting
 * away from a match.
 */
#ifndef KFAB_ULIB_INFO_UTIL_H
#define KFAB_ULIB_INFO_UTIL_H

#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "tap.h"

#define V(maj, min)	FI_VERSION(maj, min)

/* fi_provider.getinfo of the provider under test */
typedef int (*getinfo_fn)(uint32_t version, const char *node,
			  const char *service, uint64_t flags,
			  const struct fi_info *hints, struct fi_info **info);

static inline int count(const struct fi_info *fi)
{
	int n = 0;

	for (; fi; fi = fi->next)
		n++;
	return n;
}

/* fabtests' hints for fi_rdm_tagged_pingpong */
static inline struct fi_info *fabtests_rdm_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_VIRT_ADDR;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	return h;
}

/*
 * fi_pingpong's (@type FI_EP_RDM) and fabtests' fi_dgram_pingpong's:
 * FI_MSG, context modes and the prefix, basic mr_mode bits
 */
static inline struct fi_info *pingpong_hints(enum fi_ep_type type)
{
	struct fi_info *h = fi_allocinfo();

	h->ep_attr->type = type;
	h->caps = FI_MSG;
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return h;
}

/* fi_info -c FI_TAGGED -t FI_EP_RDM: fi_info's mode and mr_mode */
static inline struct fi_info *fi_info_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->caps = FI_TAGGED;
	h->ep_attr->type = FI_EP_RDM;
	h->mode = ~0ULL;
	h->domain_attr->mode = ~0ULL;
	h->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	return h;
}

/*
 * One point: @getinfo at API @version with mr_mode @hint in @h matches
 * with mr_mode @want, or (@want -1) does not match.
 */
static inline void mr_mode_is(getinfo_fn getinfo, uint32_t version,
			      struct fi_info *h, int hint, int want,
			      const char *what)
{
	struct fi_info *fi = NULL;
	int ret;

	h->domain_attr->mr_mode = hint;
	ret = getinfo(version, NULL, NULL, 0, h, &fi);
	if (want < 0)
		TAP_EQ(ret, -FI_ENODATA, "API 1.%u, %s: no match",
		       FI_MINOR(version), what);
	else
		TAP_OK(!ret && fi->domain_attr->mr_mode == want,
		       "API 1.%u, %s: mr_mode %#x (ret %d)", FI_MINOR(version),
		       what, ret ? 0 : fi->domain_attr->mr_mode, ret);
	fi_freeinfo(fi);
}

/* fabtests_rdm_hints(), pingpong_hints() ...: a new fi_info to spoil */
typedef struct fi_info *(*hints_fn)(void);

/*
 * Two points: @getinfo matches @hints asking for FI_PROGRESS_AUTO, data
 * and control (@what), and returns both.
 */
static inline void progress_auto_is(getinfo_fn getinfo, hints_fn hints,
				    const char *what)
{
	struct fi_info *h = hints(), *fi = NULL;

	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	TAP_EQ(getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0, "%s", what);
	TAP_OK(fi && fi->domain_attr->data_progress == FI_PROGRESS_AUTO &&
	       fi->domain_attr->control_progress == FI_PROGRESS_AUTO,
	       "FI_PROGRESS_AUTO returned");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/*
 * Three points: @getinfo returns the op flags asked in @hints, @tx and
 * FI_MULTI_RECV; asked for FI_COMPLETION alone it adds the completion
 * level FI_TRANSMIT_COMPLETE.
 */
static inline void op_flags_are(getinfo_fn getinfo, hints_fn hints,
				uint64_t tx)
{
	struct fi_info *h = hints(), *fi = NULL;

	h->tx_attr->op_flags = tx;
	h->rx_attr->op_flags = FI_MULTI_RECV;
	TAP_EQ(getinfo(V(1, 17), NULL, NULL, 0, h, &fi), 0, "op_flags");
	TAP_OK(fi && fi->tx_attr->op_flags == tx &&
	       fi->rx_attr->op_flags == FI_MULTI_RECV, "op_flags returned");
	fi_freeinfo(fi);
	fi = NULL;
	h->tx_attr->op_flags = FI_COMPLETION;
	getinfo(V(1, 17), NULL, NULL, 0, h, &fi);
	TAP_EQ(fi ? fi->tx_attr->op_flags : 0,
	       FI_COMPLETION | FI_TRANSMIT_COMPLETE,
	       "FI_COMPLETION alone gets FI_TRANSMIT_COMPLETE");
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* Hints that must not match: @set spoils good ones. */
struct nomatch_case {
	const char *what;
	void (*set)(struct fi_info *h);
};

static inline void ep_msg(struct fi_info *h) { h->ep_attr->type = FI_EP_MSG; }
static inline void cap_rma_event(struct fi_info *h) { h->caps |= FI_RMA_EVENT; }
static inline void cap_trigger(struct fi_info *h) { h->caps |= FI_TRIGGER; }
static inline void tx_cap_rread(struct fi_info *h)
{
	h->tx_attr->caps = FI_RMA | FI_REMOTE_READ;
}
static inline void dom_shared_av(struct fi_info *h)
{
	h->domain_attr->caps = FI_SHARED_AV;
}
static inline void bad_progress(struct fi_info *h)
{
	h->domain_attr->data_progress = 7;
}
static inline void big_rx_iov(struct fi_info *h) { h->rx_attr->iov_limit = 9; }
static inline void rma_iov(struct fi_info *h) { h->tx_attr->rma_iov_limit = 2; }
static inline void order_raw(struct fi_info *h)
{
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
}
static inline void comp_strict(struct fi_info *h)
{
	h->rx_attr->comp_order = FI_ORDER_STRICT;
}
static inline void commit(struct fi_info *h)
{
	h->tx_attr->op_flags = FI_COMMIT_COMPLETE;
}
static inline void prefix(struct fi_info *h)
{
	h->ep_attr->msg_prefix_size = 8;
}
static inline void cntrs(struct fi_info *h) { h->domain_attr->cntr_cnt = 1025; }
static inline void av_unknown(struct fi_info *h)
{
	h->domain_attr->av_type = 7;
}
static inline void fab_kmod(struct fi_info *h)
{
	h->fabric_attr->name = strdup("kfab-kmod");
}
static inline void fmt_sin(struct fi_info *h)
{
	h->addr_format = FI_SOCKADDR_IN;
}
static inline void dest_len(struct fi_info *h)
{
	h->dest_addr = calloc(1, 16);
	((uint8_t *)h->dest_addr)[0] = 1;
	h->dest_addrlen = 16;
}

/* Each case on hints(): -FI_ENODATA and no fi_info. @type names them. */
static inline void nomatch_run(getinfo_fn getinfo, const char *type,
			       hints_fn hints,
			       const struct nomatch_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fi_info *h = hints(), *fi = NULL;

		cases[i].set(h);
		TAP_EQ(getinfo(V(1, 17), NULL, NULL, 0, h, &fi), -FI_ENODATA,
		       "%s%sno match: %s", type ? type : "", type ? " " : "",
		       cases[i].what);
		TAP_OK(!fi, "%s: no fi_info", cases[i].what);
		fi_freeinfo(h);
	}
}

/* getinfo under one variable's value: what it returns */
struct env_case {
	const char *var, *val;
	int ret;
	const char *what;
};

/*
 * Each case with its variable set, given its previous value back after;
 * then that none returned an fi_info.
 */
static inline void env_cases_run(getinfo_fn getinfo,
				 const struct env_case *cases, size_t n)
{
	struct fi_info *fi = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct env_case *c = &cases[i];
		char *old = getenv(c->var) ? strdup(getenv(c->var)) : NULL;

		setenv(c->var, c->val, 1);
		TAP_EQ(getinfo(V(1, 17), NULL, NULL, 0, NULL, &fi), c->ret,
		       "%s=%s: %s", c->var, c->val, c->what);
		if (old)
			setenv(c->var, old, 1);
		else
			unsetenv(c->var);
		free(old);
	}
	TAP_OK(!fi, "no fi_info on errors");
}

#endif /* KFAB_ULIB_INFO_UTIL_H */
