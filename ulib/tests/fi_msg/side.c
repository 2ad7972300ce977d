// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: setting up, running and tearing down a case on one rank.
 */
#include "fi_msg.h"

/*
 * The provider itself rather than a utility layered over it (kfab_efa's
 * FI_EP_DGRAM under ofi_rxd also offers FI_EP_RDM): the first entry named
 * exactly -p, else the first.
 */
static struct fi_info *prefer_native(struct fi_info *list)
{
	struct fi_info *fi, *one;

	for (fi = list; fi; fi = fi->next)
		if (!strcmp(fi->fabric_attr->prov_name, opt_prov))
			break;
	if (!fi || fi == list)
		return list;
	one = fi_dupinfo(fi);
	if (!one)
		die("fi_dupinfo");
	fi_freeinfo(list);
	return one;
}

/* fi_getinfo for @tc, asking also for FI_SOURCE and FI_ORDER_SAS. */
static int get_info_caps(const struct tcase *tc, uint64_t caps,
			 struct fi_info **out)
{
	static const struct {
		uint64_t caps, order;
	} extra[] = {
		{ FI_SOURCE, FI_ORDER_SAS }, { 0, FI_ORDER_SAS },
		{ FI_SOURCE, 0 }, { 0, 0 },
	};
	int rc = -FI_ENODATA;

	for (size_t i = 0; i < ARRAY_SIZE(extra) && rc == -FI_ENODATA; i++) {
		struct fi_info *hints = fi_allocinfo();

		if (!hints)
			die("fi_allocinfo");
		hints->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | caps |
			      extra[i].caps;
		hints->mode = FI_CONTEXT | FI_CONTEXT2;
		hints->ep_attr->type = FI_EP_RDM;
		hints->tx_attr->msg_order = extra[i].order;
		hints->rx_attr->msg_order = extra[i].order;
		/* RMA and atomic cases honour whatever of these comes back */
		hints->domain_attr->mr_mode =
			tc->cfg.mr_legacy ? tc->cfg.mr_legacy :
			caps & (FI_RMA | FI_ATOMIC) ?
			FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED :
			0;
		hints->domain_attr->threading = tc->cfg.threading ?
						tc->cfg.threading :
						FI_THREAD_DOMAIN;
		hints->domain_attr->data_progress = tc->cfg.auto_progress ?
						    FI_PROGRESS_AUTO :
						    FI_PROGRESS_MANUAL;
		hints->domain_attr->av_type = tc->cfg.av_type;
		if (tc->cfg.peek_hints) {
			hints->caps = FI_TAGGED;
			hints->mode = FI_CONTEXT;
			hints->tx_attr->msg_order = FI_ORDER_SAS;
			hints->rx_attr->msg_order = 0;
			hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
			hints->domain_attr->threading = FI_THREAD_UNSPEC;
			hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
		}
		hints->fabric_attr->prov_name = strdup(opt_prov);
		rc = fi_getinfo(FI_VERSION(1, tc->cfg.api_minor ?
					      tc->cfg.api_minor :
					      FI_MINOR_VERSION),
				NULL, NULL, 0, hints, out);
		fi_freeinfo(hints);
	}
	if (!rc)
		*out = prefer_native(*out);
	return rc;
}

int get_info(const struct tcase *tc, struct fi_info **out)
{
	int rc = -FI_ENODATA;

	if (tc->cfg.opt_caps)
		rc = get_info_caps(tc, tc->cfg.caps | tc->cfg.opt_caps, out);
	if (rc == -FI_ENODATA)
		rc = get_info_caps(tc, tc->cfg.caps, out);
	return rc;
}

struct side *side_new(const struct tcase *tc, int rank, int nranks)
{
	struct side *s = xcalloc(1, sizeof(*s));

	s->tc = tc;
	s->rank = rank;
	s->nranks = nranks;
	s->tx.name = "transmit";
	s->rx.name = "receive";
	for (int r = 0; r < MAX_RANKS; r++) {
		s->ctl[r] = -1;
		s->addr[r] = FI_ADDR_NOTAVAIL;
	}
	return s;
}

static bool set_min_multi_recv(struct side *s, size_t min)
{
	return MUST(s, fi_setopt(&s->ep->fid, FI_OPT_ENDPOINT,
				 FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)),
		    "fi_setopt(FI_OPT_MIN_MULTI_RECV)");
}

/*
 * Initiator counters (FI_WRITE, FI_READ) and target ones (FI_REMOTE_WRITE,
 * FI_REMOTE_READ); fi_endpoint(3) lets a provider refuse the latter
 * without FI_RMA_EVENT: then they stay NULL and the bind's code is kept.
 */
static bool rma_cntrs_open(struct side *s)
{
	static const uint64_t bind[NRMA_CNTR] = {
		FI_WRITE, FI_READ, FI_REMOTE_WRITE, FI_REMOTE_READ,
	};
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP,
				     .wait_obj = FI_WAIT_UNSPEC };

	for (int i = 0; i < NRMA_CNTR; i++) {
		if (!MUST(s, fi_cntr_open(s->domain, &attr, &s->rma_cntr[i],
					  NULL), "fi_cntr_open"))
			return false;
		s->rma_cntr_rc[i] = fi_ep_bind(s->ep, &s->rma_cntr[i]->fid,
					       bind[i]);
		if (!s->rma_cntr_rc[i])
			continue;
		if (i < 2 && !MUST(s, s->rma_cntr_rc[i],
				   "fi_ep_bind(initiator RMA counter)"))
			return false;
		fi_close(&s->rma_cntr[i]->fid);
		s->rma_cntr[i] = NULL;
	}
	return true;
}

static bool side_open(struct side *s)
{
	const struct cfg *cfg = &s->tc->cfg;
	struct fi_av_attr av_attr = { .count = 16 };
	struct fi_cq_attr cq_attr = { .wait_obj = cfg->wait_obj };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };
	size_t min = cfg->min_multi_recv;
	bool min_late = min && known_gap("multirecv/setopt-before-enable");

	if (!s->info && !MUST(s, get_info(s->tc, &s->info), "%s: fi_getinfo",
			      s->tc->name))
		return false;
	if (cfg->sep)
		return MUST(s, fi_fabric(s->info->fabric_attr, &s->fabric,
					 NULL), "fi_fabric") &&
		       MUST(s, fi_domain(s->fabric, s->info, &s->domain, NULL),
			    "fi_domain");
	av_attr.type = cfg->av_type ? cfg->av_type :
		       s->info->domain_attr->av_type;
	cq_attr.format = cfg->cq_format ? cfg->cq_format :
			 FI_CQ_FORMAT_TAGGED;
	s->cq_format = cq_attr.format;
	s->info->tx_attr->op_flags |= cfg->tx_op_flags;
	if (!MUST(s, fi_fabric(s->info->fabric_attr, &s->fabric, NULL),
		  "fi_fabric") ||
	    !MUST(s, fi_domain(s->fabric, s->info, &s->domain, NULL),
		  "fi_domain") ||
	    !MUST(s, fi_av_open(s->domain, &av_attr, &s->av, NULL),
		  "fi_av_open") ||
	    !MUST(s, fi_cq_open(s->domain, &cq_attr, &s->tx.cq, &s->tx),
		  "fi_cq_open") ||
	    !MUST(s, fi_cq_open(s->domain, &cq_attr, &s->rx.cq, &s->rx),
		  "fi_cq_open") ||
	    !MUST(s, fi_endpoint(s->domain, s->info, &s->ep, NULL),
		  "fi_endpoint") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->av->fid, 0), "fi_ep_bind(av)") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->tx.cq->fid,
				FI_TRANSMIT | cfg->tx_bind),
		  "fi_ep_bind(transmit cq)") ||
	    !MUST(s, fi_ep_bind(s->ep, &s->rx.cq->fid, FI_RECV),
		  "fi_ep_bind(receive cq)") ||
	    (cfg->cntrs &&
	     (!MUST(s, fi_cntr_open(s->domain, &cntr_attr, &s->scntr,
				    &s->scntr), "fi_cntr_open") ||
	      !MUST(s, fi_cntr_open(s->domain, &cntr_attr, &s->rcntr,
				    &s->rcntr), "fi_cntr_open") ||
	      !MUST(s, fi_ep_bind(s->ep, &s->scntr->fid, FI_SEND),
		    "fi_ep_bind(send counter)") ||
	      !MUST(s, fi_ep_bind(s->ep, &s->rcntr->fid, FI_RECV),
		    "fi_ep_bind(receive counter)"))) ||
	    (cfg->rma_cntrs && !rma_cntrs_open(s)) ||
	    (min && !min_late && !set_min_multi_recv(s, min)) ||
	    !MUST(s, fi_enable(s->ep), "fi_enable") ||
	    (min_late && !set_min_multi_recv(s, min)))
		return false;
	s->av_type = av_attr.type ? av_attr.type :
		     s->info->domain_attr->av_type;
	s->namelen[s->rank] = ADDR_MAX;
	return MUST(s, fi_getname(&s->ep->fid, s->name[s->rank],
				  &s->namelen[s->rank]),
		    "fi_getname");
}

static void send_name(struct side *s, int to, int whose)
{
	step_to(s, to, STEP_NAME, whose, s->name[whose], s->namelen[whose]);
}

static bool take_name(struct side *s, int from)
{
	struct ctl_msg m;

	if (!ctl_wait(s, from, STEP_NAME, &m))
		return false;
	if (m.a >= (uint64_t)s->nranks || m.len > ADDR_MAX)
		die("bad name message");
	memcpy(s->name[m.a], m.blob, m.len);
	s->namelen[m.a] = m.len;
	return true;
}

/* Every rank learns every rank's name, through rank 0, and inserts them. */
bool side_exchange(struct side *s)
{
	if (s->rank) {
		send_name(s, 0, s->rank);
		for (int r = 0; r < s->nranks; r++)
			if (!take_name(s, 0))
				return false;
	} else {
		for (int r = 1; r < s->nranks; r++)
			if (!take_name(s, r))
				return false;
		for (int r = 1; r < s->nranks; r++)
			for (int k = 0; k < s->nranks; k++)
				send_name(s, r, k);
	}
	if (s->tc->cfg.manual_av)
		return true;
	for (int r = 0; r < s->nranks; r++)
		if (r != s->rank && !av_insert_rank(s, r))
			return false;
	return true;
}

/* All ranks alive have got here. */
bool barrier(struct side *s)
{
	if (s->rank) {
		step_to(s, 0, STEP_BARRIER, 0, NULL, 0);
		return ctl_wait(s, 0, STEP_BARRIER, NULL);
	}
	for (int r = 1; r < s->nranks; r++)
		if (!s->may_die[r] && !ctl_wait(s, r, STEP_BARRIER, NULL))
			return false;
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_BARRIER, 0, NULL, 0);
	return true;
}

static void side_close(struct side *s)
{
#define FID(x)	((x) ? &(x)->fid : NULL)
	struct fid *fids[] = {
		FID(s->ep), FID(s->win[0].mr), FID(s->win[1].mr),
		FID(s->win[2].mr), FID(s->rx.cq), FID(s->tx.cq),
		FID(s->scntr), FID(s->rcntr), FID(s->rma_cntr[0]),
		FID(s->rma_cntr[1]), FID(s->rma_cntr[2]), FID(s->rma_cntr[3]),
		FID(s->av), FID(s->domain), FID(s->fabric),
	};
#undef FID
	static const char *const names[] = {
		"endpoint", "MR", "MR", "MR", "receive CQ", "transmit CQ",
		"send counter", "receive counter", "write counter",
		"read counter", "remote write counter", "remote read counter",
		"AV", "domain", "fabric",
	};

	for (size_t i = 0; i < ARRAY_SIZE(fids); i++) {
		int rc = fids[i] ? fi_close(fids[i]) : 0;

		if (rc)
			CHECK(s, false, "%s: fi_close(%s): %s",
			      s->tc->name, names[i], fi_strerror(-rc));
	}
	s->ep = NULL;
	s->tx.cq = s->rx.cq = NULL;
	for (int w = 0; w < NWIN; w++) {
		free(s->win[w].b.mem);
		free(s->win[w].img);
	}
	for (size_t i = 0; i < s->ndeferred; i++)
		free(s->deferred[i]);
	free(s->deferred);
	while (s->pool) {
		struct ctx_pool *p = s->pool;

		s->pool = p->next;
		free(p);
	}
	free(s->tx.v);
	free(s->rx.v);
	fi_freeinfo(s->info);
}

/* What every rank does for a case. */
void side_run(struct side *s)
{
	if (side_open(s) && (s->tc->cfg.sep || side_exchange(s))) {
		s->tc->run(s);
		if (!s->abort && barrier(s)) {
			char why[256] = "";

			progress_for(s, SETTLE_MS);
			if (s->tx.n + s->rx.n)
				comp_str(s->tx.n ? &s->tx.v[s->tx.head] :
						   &s->rx.v[s->rx.head],
					 why, sizeof(why));
			else if (s->cq_overruns)
				snprintf(why, sizeof(why),
					 "fi_cq_read wrote past %zu-byte entries",
					 cq_entry_size(s->cq_format));
			CHECK_WHY(s, !s->tx.n && !s->rx.n && !s->cq_overruns,
				  why,
				  "%s: no stray completions, entries of the format's size",
				  s->tc->name);
		}
	}
	side_close(s);
}

