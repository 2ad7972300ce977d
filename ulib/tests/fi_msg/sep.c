// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: scalable endpoints, opened, checked and closed.
 */
#include "fi_msg.h"

static bool sep_cq(struct side *s, struct cqq *q, struct fid_ep *ep,
		   uint64_t flags, const char *name)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };

	q->name = name;
	return MUST(s, fi_cq_open(s->domain, &attr, &q->cq, NULL),
		    "sep: fi_cq_open for %s", name) &&
	       MUST(s, fi_ep_bind(ep, &q->cq->fid, flags),
		    "sep: fi_ep_bind(%s)", name);
}

/* fi_tx_context or fi_rx_context of index count fails (fi_endpoint(3)). */
static void sep_bad_index(struct side *s)
{
	for (int rx = 0; rx < 2; rx++) {
		struct fid_ep *ep = NULL;
		int rc = rx ? fi_rx_context(s->ep, s->sep->n, NULL, &ep, NULL) :
			      fi_tx_context(s->ep, s->sep->n, NULL, &ep, NULL);

		CHECK(s, rc < 0, "sep: fi_%s_context of index %d = %s_ctx_cnt fails (%d)",
		      rx ? "rx" : "tx", s->sep->n, rx ? "rx" : "tx", rc);
		if (!rc && ep)
			fi_close(&ep->fid);
	}
}

/* The names of the CQs of context pair @i, for the points */
static void sep_qnames(struct sep *x, int i)
{
	snprintf(x->qname[i], sizeof(x->qname[i]), "tx context %d", i);
	snprintf(x->qname[SEP_CTX + i], sizeof(x->qname[i]), "rx context %d",
		 i);
}

/*
 * The AV (rx_ctx_bits) and the scalable endpoint of n transmit and n
 * receive contexts bound to it; @what names the case in the points.
 */
static bool sep_ep_open(struct side *s, const char *what)
{
	struct sep *x = s->sep;
	struct fi_av_attr av_attr = { .count = 16, .rx_ctx_bits = x->bits,
				      .type = s->info->domain_attr->av_type };

	s->info->ep_attr->tx_ctx_cnt = x->n;
	s->info->ep_attr->rx_ctx_cnt = x->n;
	return MUST(s, fi_av_open(s->domain, &av_attr, &s->av, NULL),
		    "%s: fi_av_open, rx_ctx_bits %d", what, x->bits) &&
	       MUST(s, fi_scalable_ep(s->domain, s->info, &s->ep, NULL),
		    "%s: fi_scalable_ep, %d tx and rx contexts", what, x->n) &&
	       MUST(s, fi_scalable_ep_bind(s->ep, &s->av->fid, 0),
		    "%s: fi_scalable_ep_bind(av)", what);
}

/* This rank's name: the scalable endpoint's */
static bool sep_getname(struct side *s, const char *what)
{
	s->namelen[s->rank] = ADDR_MAX;
	return MUST(s, fi_getname(&s->ep->fid, s->name[s->rank],
				  &s->namelen[s->rank]),
		    "%s: fi_getname of the scalable endpoint", what);
}

/*
 * Transmit (@rx false) or receive context @i of the scalable endpoint,
 * bound to its own CQ when @cq; @what names the case in the points.
 */
static bool sep_ctx_open(struct side *s, int i, bool rx, bool cq,
			 const char *what)
{
	struct sep *x = s->sep;
	struct fid_ep **ep = rx ? &x->rx[i] : &x->tx[i];
	int rc = rx ? fi_rx_context(s->ep, i, NULL, ep, NULL) :
		      fi_tx_context(s->ep, i, NULL, ep, NULL);

	return MUST(s, rc, "%s: fi_%s_context(%d)", what, rx ? "rx" : "tx",
		    i) &&
	       (!cq || sep_cq(s, rx ? &x->rxq[i] : &x->txq[i], *ep,
			      rx ? FI_RECV : FI_TRANSMIT,
			      x->qname[rx ? SEP_CTX + i : i]));
}

/*
 * The AV (rx_ctx_bits), the scalable endpoint bound to it, n transmit
 * and n receive contexts each bound to its own CQ, a send counter on one
 * tx context and a receive counter on one rx context; the contexts are
 * enabled, then the endpoint.
 */
static bool sep_open(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP,
					  .wait_obj = FI_WAIT_UNSPEC };

	if (!sep_ep_open(s, "sep"))
		return false;
	for (int i = 0; i < x->n; i++) {
		sep_qnames(x, i);
		if (!sep_ctx_open(s, i, false, true, "sep") ||
		    !sep_ctx_open(s, i, true, true, "sep"))
			return false;
	}
	if (!MUST(s, fi_cntr_open(s->domain, &cntr_attr, &x->scntr, NULL),
		  "sep: fi_cntr_open") ||
	    !MUST(s, fi_cntr_open(s->domain, &cntr_attr, &x->rcntr, NULL),
		  "sep: fi_cntr_open") ||
	    !MUST(s, fi_ep_bind(x->tx[x->tx_cntr], &x->scntr->fid, FI_SEND),
		  "sep: fi_ep_bind(send counter) to tx context %d",
		  x->tx_cntr) ||
	    !MUST(s, fi_ep_bind(x->rx[SEP_RX_CNTR], &x->rcntr->fid, FI_RECV),
		  "sep: fi_ep_bind(receive counter) to rx context %d",
		  SEP_RX_CNTR))
		return false;
	for (int i = 0; i < x->n; i++)
		if (!MUST(s, fi_enable(x->tx[i]), "sep: fi_enable(%s)",
			  x->txq[i].name) ||
		    !MUST(s, fi_enable(x->rx[i]), "sep: fi_enable(%s)",
			  x->rxq[i].name))
			return false;
	if (!s->rank)
		sep_bad_index(s);
	return MUST(s, fi_enable(s->ep), "sep: fi_enable(scalable endpoint)") &&
	       sep_getname(s, "sep");
}

static void sep_close_fid(struct side *s, struct fid *fid, const char *name)
{
	int rc = fid ? fi_close(fid) : 0;

	if (rc)
		CHECK(s, false, "sep: fi_close(%s): %s", name,
		      fi_strerror(-rc));
}

/*
 * fi_close of the endpoint with its contexts open: -FI_EBUSY
 * (fi_endpoint(3)); once they are closed it closes. Then the CQs and
 * counters; the AV and what is below it are side_close's.
 */
static void sep_close(struct side *s)
{
	struct sep *x = s->sep;
	int rc;

	if (s->ep && x->tx[0]) {
		rc = fi_close(&s->ep->fid);
		CHECK_EQ(s, rc, -FI_EBUSY,
			 "sep: fi_close of the scalable endpoint with contexts open: -FI_EBUSY");
		if (!rc) {
			diag(s, "sep: its contexts, CQs and counters are left open");
			s->ep = NULL;
			goto out;
		}
	}
	for (int i = 0; i < x->n; i++) {
		sep_close_fid(s, x->tx[i] ? &x->tx[i]->fid : NULL,
			      x->txq[i].name);
		sep_close_fid(s, x->rx[i] ? &x->rx[i]->fid : NULL,
			      x->rxq[i].name);
	}
	if (s->ep)
		CHECK_EQ(s, fi_close(&s->ep->fid), 0,
			 "sep: fi_close of the scalable endpoint once its contexts are closed");
	s->ep = NULL;
	for (int i = 0; i < x->n; i++) {
		sep_close_fid(s, x->txq[i].cq ? &x->txq[i].cq->fid : NULL,
			      "CQ");
		sep_close_fid(s, x->rxq[i].cq ? &x->rxq[i].cq->fid : NULL,
			      "CQ");
	}
	sep_close_fid(s, x->scntr ? &x->scntr->fid : NULL, "send counter");
	sep_close_fid(s, x->rcntr ? &x->rcntr->fid : NULL, "receive counter");
out:
	for (int i = 0; i < x->n; i++) {
		free(x->txq[i].v);
		free(x->rxq[i].v);
	}
	s->sep = NULL;
	free(x);
}

/*
 * A scalable endpoint (fi_endpoint(3), fi_av(3) rx_ctx_bits and
 * fi_rx_addr, FI_NAMED_RX_CTX) with up to SEP_CTX tx and rx contexts,
 * each with its own CQ:
 * - every tx context to every named rx context, tagged and untagged,
 *   both ways: each message completes on its rx context's CQ, each send
 *   on its tx context's CQ, nothing anywhere else;
 * - a message to rx context ux before a receive is posted there waits
 *   for it, not taken by a receive for its tag on another context;
 * - 1 MiB fi_senddata to rx context big: FI_REMOTE_CQ_DATA, the data;
 * - counters count the completions of their own context only;
 * - with FI_RMA, fi_writedata to rx context ux: CQ data there;
 * - kfab only: sends to a context the peer lacks go nowhere, an RMA
 *   write to it fails with FI_EADDRNOTAVAIL;
 * - a thread for each context pair on both ranks at once (FI_THREAD_FID
 *   allows it, fi_domain(3)), each message once, in order;
 * - fi_tx_context/fi_rx_context past the count fail, fi_close of the
 *   endpoint with contexts open returns -FI_EBUSY.
 */
void case_sep(struct side *s)
{
	const struct fi_domain_attr *d = s->info->domain_attr;
	size_t n = SEP_CTX;
	struct sep *x;

	if (d->max_ep_tx_ctx < n)
		n = d->max_ep_tx_ctx;
	if (d->max_ep_rx_ctx < n)
		n = d->max_ep_rx_ctx;
	if (n < 2) {
		if (!s->rank)
			skip("sep: max_ep_tx_ctx %zu, max_ep_rx_ctx %zu: fewer than 2 contexts",
			     d->max_ep_tx_ctx, d->max_ep_rx_ctx);
		return;
	}
	x = xcalloc(1, sizeof(*x));
	x->n = n;
	while ((1 << x->bits) < x->n)
		x->bits++;
	/* kfab: room to name a context past the last (sep_missing) */
	if (is_kfab())
		x->bits++;
	x->peer = !s->rank;
	x->ux = n > 2 ? 2 : 1;
	x->uo = x->ux == 1 ? 0 : 1;
	x->big = n - 1;
	x->tx_cntr = n - 2;
	s->sep = x;
	if (!s->rank)
		diag(s, "sep: %d tx and rx contexts, rx_ctx_bits %d, threading %s",
		     x->n, x->bits, fi_tostr(&d->threading, FI_TYPE_THREADING));
	if (!sep_open(s) || !side_exchange(s) ||
	    ((s->info->caps & FI_RMA) && !rma_setup(s)))
		goto out;
	for (int from = 0; from < 2 && !s->abort; from++) {
		sep_route(s, from, true);
		if (!s->abort)
			sep_route(s, from, false);
	}
	if (!s->abort)
		sep_cntr_more(s);
	if (!s->abort)
		sep_counters(s, "after routing");
	if (!s->abort)
		sep_unexpected(s);
	if (!s->abort)
		sep_large(s);
	if (!s->abort)
		sep_rma(s);
	if (!s->abort && is_kfab())
		sep_missing(s);
	if (!s->abort)
		sep_threads(s);
	if (!s->abort)
		sep_counters(s, "at the end");
	if (!s->abort && barrier(s))
		sep_quiet(s, SETTLE_MS, "sep: at the end");
out:
	sep_close(s);
}

/*
 * The scalable endpoint enabled before its contexts are opened, then
 * each context bound and enabled; rx context 1 gets no CQ (the target
 * of RMA only, fi_endpoint(3): Open MPI's ofi BTL does this).
 */
static bool sep_open_first(struct side *s)
{
	struct sep *x = s->sep;

	if (!sep_ep_open(s, "sep_first") ||
	    !MUST(s, fi_enable(s->ep),
		  "sep_first: fi_enable of the scalable endpoint before its contexts"))
		return false;
	for (int i = 0; i < x->n; i++) {
		sep_qnames(x, i);
		if (!sep_ctx_open(s, i, false, true, "sep_first") ||
		    !MUST(s, fi_enable(x->tx[i]), "sep_first: fi_enable(%s)",
			  x->qname[i]) ||
		    !sep_ctx_open(s, i, true, i != 1, "sep_first") ||
		    !MUST(s, fi_enable(x->rx[i]),
			  "sep_first: fi_enable(%s%s)", x->qname[SEP_CTX + i],
			  i == 1 ? ", no CQ: an RMA target only" : ""))
			return false;
	}
	return sep_getname(s, "sep_first");
}

/* With FI_RMA: write to the peer's CQ-less rx context 1, read it back. */
static void sep_first_rma(struct side *s)
{
	struct sep *x = s->sep;
	struct fi_context2 *ctx = ctx_new(s, 2);
	struct win *win = &s->win[WIN_MAIN];
	uint64_t raddr = s->rbase[x->peer][WIN_MAIN] + RMA_PAD;
	size_t len = 8 * KIB;
	struct gbuf b;
	struct comp c;
	ssize_t rc;

	if (!(s->info->caps & FI_RMA)) {
		if (!s->rank)
			skip("sep_first: %s lacks FI_RMA: no RMA to a context without a CQ",
			     opt_prov);
		return;
	}
	gbuf_alloc(&b, len);
	pat_fill(b.p, len, seed_of(0x5f1, s->rank), 0);
	pat_fill(win->img + RMA_PAD, len, seed_of(0x5f1, x->peer), 0);
	RETRY(s, rc, fi_write(x->tx[0], b.p, len, NULL, sep_dst(s, 1), raddr,
			      s->rkey[x->peer][WIN_MAIN], &ctx[0]));
	if (MUST(s, rc, "sep_first: fi_write to rx context 1 (no CQ)") &&
	    cq_wait(s, &x->txq[0], &ctx[0], &c, opt_wait_ms, "sep_first"))
		CHECK_EQ(s, c.e.err, 0,
			 "sep_first: the write to rx context 1 (no CQ) completes");
	win_check(s, WIN_MAIN, opt_wait_ms,
		  "sep_first: the peer's write in place, nothing around it written");
	if (!barrier(s))
		goto out;
	memset(b.p, 0, len);
	RETRY(s, rc, fi_read(x->tx[1], b.p, len, NULL, sep_dst(s, 1), raddr,
			     s->rkey[x->peer][WIN_MAIN], &ctx[1]));
	if (MUST(s, rc, "sep_first: fi_read from rx context 1 (no CQ)") &&
	    cq_wait(s, &x->txq[1], &ctx[1], &c, opt_wait_ms, "sep_first")) {
		CHECK_EQ(s, c.e.err, 0,
			 "sep_first: the read from rx context 1 (no CQ) completes");
		check_data(s, &b, 1, seed_of(0x5f1, s->rank), len,
			   "sep_first: the read gets what was written");
	}
	barrier(s);
out:
	gbuf_free(s, &b);
}

/*
 * A scalable endpoint set up as fabtests' scalable_ep and Open MPI's ofi
 * BTL do (fi_endpoint(3) leaves the order to the application): the AV
 * with the rx_ctx_bits of two contexts, the endpoint enabled first, its
 * contexts after; the peer's fi_getname inserted; a message from each tx
 * context to each rx context with a CQ completes there; with FI_RMA an
 * rx context without a CQ is the target of fi_write and fi_read.
 */
void case_sep_first(struct side *s)
{
	const struct fi_domain_attr *d = s->info->domain_attr;
	struct sep *x;

	if (d->max_ep_tx_ctx < 2 || d->max_ep_rx_ctx < 2) {
		if (!s->rank)
			skip("sep_first: max_ep_tx_ctx %zu, max_ep_rx_ctx %zu: fewer than 2 contexts",
			     d->max_ep_tx_ctx, d->max_ep_rx_ctx);
		return;
	}
	x = xcalloc(1, sizeof(*x));
	x->n = 2;
	while (x->n >> ++x->bits)
		;
	x->peer = !s->rank;
	s->sep = x;
	if (!sep_open_first(s) || !side_exchange(s) ||
	    ((s->info->caps & FI_RMA) && !rma_setup(s)))
		goto out;
	for (int from = 0; from < 2 && !s->abort; from++)
		for (int i = 0; i < x->n && !s->abort; i++) {
			struct msgspec m = sep_msg(from, false, i, 0);
			struct fi_context2 *ctx = ctx_new(s, 1);
			char what[80];
			struct gbuf b;

			snprintf(what, sizeof(what),
				 "sep_first: rank %d, tx context %d to rx context 0",
				 from, i);
			if (s->rank == from) {
				if (!ctl_wait(s, x->peer, STEP_POSTED, NULL))
					break;
				sep_send_checked(s, i, 0, &m, what);
				continue;
			}
			gbuf_alloc(&b, m.len);
			if (sep_recv(s, 0, 0, &b, 0, ctx, what)) {
				step_to(s, x->peer, STEP_POSTED, 0, NULL, 0);
				sep_recv_checked(s, 0, ctx, &m, &b, what);
			}
			gbuf_free(s, &b);
		}
	if (!s->abort && barrier(s))
		sep_first_rma(s);
out:
	sep_close(s);
}

