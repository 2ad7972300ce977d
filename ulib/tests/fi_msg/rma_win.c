// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: RMA windows, keys and operations, for the RMA, atomic and
 * scalable endpoint cases.
 */
#include "fi_msg.h"

/*
 * The domain's mr_mode as bits: fi_mr(3)'s legacy FI_MR_BASIC stands for
 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MR_SCALABLE for 0.
 */
int mr_bits(const struct side *s)
{
	int mode = s->info->domain_attr->mr_mode;

	if (mode == FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return mode == FI_MR_SCALABLE ? 0 : mode;
}

/* Register @len bytes at @p as fi_mr(3) and the domain's mr_mode want. */
int mr_reg(struct side *s, void *p, size_t len, uint64_t access,
	   uint64_t key, struct fid_mr **mr)
{
	int rc = fi_mr_reg(s->domain, p, len, access, 0, key, 0, mr, NULL);

	if (rc || !(mr_bits(s) & FI_MR_ENDPOINT))
		return rc;
	rc = fi_mr_bind(*mr, &s->ep->fid, 0);
	if (!rc)
		rc = fi_mr_enable(*mr);
	if (rc) {
		fi_close(&(*mr)->fid);
		*mr = NULL;
	}
	return rc;
}

static bool take_mr(struct side *s, int from)
{
	struct mrinfo mi;
	struct ctl_msg m;

	if (!ctl_wait(s, from, STEP_MR, &m))
		return false;
	memcpy(&mi, m.blob, sizeof(mi));
	memcpy(s->rkey[from], mi.key, sizeof(mi.key));
	memcpy(s->rbase[from], mi.base, sizeof(mi.base));
	return true;
}

/*
 * Every rank registers its windows (keys: fi_mr_key, its own with
 * FI_MR_PROV_KEY; addresses: virtual with FI_MR_VIRT_ADDR, else offsets);
 * peers learn rank 0's, rank 0 learns every peer's.
 */
bool rma_setup(struct side *s)
{
	static const uint64_t access[NWIN] = {
		FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
		FI_REMOTE_READ, FI_REMOTE_WRITE,
	};
	bool virt = mr_bits(s) & FI_MR_VIRT_ADDR;
	struct mrinfo mi;

	s->next_key = 0x100;
	for (int w = 0; w < NWIN; w++) {
		struct win *x = &s->win[w];
		size_t len = w == WIN_MAIN ? WIN_LEN : WIN_SMALL;

		gbuf_alloc(&x->b, len);
		x->img = xmalloc(len);
		memcpy(x->img, x->b.p, len);
		if (!MUST(s, mr_reg(s, x->b.p, len, access[w], s->next_key++,
				    &x->mr), "%s: fi_mr_reg of window %d",
			  s->tc->name, w))
			return false;
		mi.key[w] = fi_mr_key(x->mr);
		mi.base[w] = virt ? (uintptr_t)x->b.p : 0;
	}
	if (s->rank) {
		step_to(s, 0, STEP_MR, 0, &mi, sizeof(mi));
		return take_mr(s, 0);
	}
	for (int r = 1; r < s->nranks; r++)
		if (!take_mr(s, r))
			return false;
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_MR, 0, &mi, sizeof(mi));
	return true;
}

/* Fill bytes @off.. of window @w and its image with @seed's pattern. */
void win_fill(struct side *s, int w, size_t off, size_t len,
	      uint64_t seed)
{
	pat_fill(s->win[w].b.p + off, len, seed, 0);
	memcpy(s->win[w].img + off, s->win[w].b.p + off, len);
}

/*
 * One point: window @w holds its image, every byte and the guards around
 * it; remote writes may land after the initiator's completion, so wait
 * for up to @ms, progressing.
 */
__attribute__((format(printf, 4, 5)))
bool win_check(struct side *s, int w, int ms, const char *fmt, ...)
{
	const struct win *x = &s->win[w];
	uint64_t end = now_ms() + ms;
	char why[128] = "";
	va_list ap;
	bool ok;

	while (memcmp(x->b.p, x->img, x->b.len) && now_ms() < end &&
	       !s->abort)
		progress(s);
	for (size_t i = 0; i < x->b.len; i++)
		if (x->b.p[i] != x->img[i]) {
			snprintf(why, sizeof(why),
				 "window %d byte %zu is %#x, want %#x", w, i,
				 x->b.p[i], x->img[i]);
			break;
		}
	if (!why[0] && !gbuf_guards_ok(&x->b))
		snprintf(why, sizeof(why), "guard bytes of window %d written",
			 w);
	ok = !why[0];
	va_start(ap, fmt);
	vreport(s, ok, __FILE__, __LINE__, why, fmt, ap);
	va_end(ap);
	return ok;
}

/* An RMA operation of a peer on rank 0's window (STEP_RMA), or of rank 0. */

bool is_kfab(void)
{
	return !strncmp(opt_prov, "kfab_", 5);
}

/* The error an operation on memory it may not touch completes with. */
int32_t access_err(void)
{
	return is_kfab() ? FI_EACCES : SOME_ERR;
}

void rma_label(const struct rmaop *o, char *buf, size_t size)
{
	uint32_t a = o->api;

	snprintf(buf, size, "%s%s%s%s%s %llu B at %+lld",
		 (a & (API_INJECT | API_MSG)) == API_INJECT ? "inject_" : "",
		 o->read ? "read" : "write",
		 a & API_VEC ? "v" : a & API_MSG ? "msg" : "",
		 a & API_DATA ? (a & API_MSG ? "+data" : "data") : "",
		 (a & API_MSG) && (a & API_INJECT) ?
		 " FI_INJECT|FI_COMPLETION" : "",
		 (unsigned long long)o->len, (long long)o->off);
	if (o->win != WIN_MAIN)
		addf(buf, size, " of the %s window",
		     o->win == WIN_RO ? "read-only" : "write-only");
	if (o->bad_key)
		addf(buf, size, " with an unregistered key");
}

/* Split @len bytes at @p into up to 3 iovs, as the provider allows. */
static size_t iov_split(struct side *s, uint8_t *p, size_t len,
			struct iovec *iov, void **desc)
{
	size_t n = len < 3 ? len : 3, off = 0;

	if (n > s->info->tx_attr->iov_limit)
		n = s->info->tx_attr->iov_limit;
	for (size_t j = 0; j < n; j++) {
		size_t l = j + 1 < n ? len / n : len - off;

		iov[j] = (struct iovec){ .iov_base = p + off, .iov_len = l };
		desc[j] = fi_mr_desc(s->win[WIN_MAIN].mr);
		off += l;
	}
	return n;
}

/* Post @o to rank @to from bytes RMA_PAD.. of our main window. */
ssize_t rma_post(struct side *s, int to, const struct rmaop *o,
		 void *ctx)
{
	uint8_t *p = s->win[WIN_MAIN].b.p + RMA_PAD;
	void *d = fi_mr_desc(s->win[WIN_MAIN].mr), *desc[3];
	uint64_t addr = s->rbase[to][o->win] + o->off;
	uint64_t key = s->rkey[to][o->win] + (o->bad_key ? BAD_KEY_ADD : 0);
	bool data = o->api & API_DATA;
	fi_addr_t dst = s->addr[to];
	struct iovec iov[3];
	size_t n;

	if (o->api & API_MSG) {
		struct fi_rma_iov rma = { .addr = addr, .len = o->len,
					  .key = key };
		struct fi_msg_rma msg = {
			.msg_iov = iov, .desc = desc, .addr = dst,
			.rma_iov = &rma, .rma_iov_count = 1, .context = ctx,
			.data = o->data,
		};
		uint64_t flags = FI_COMPLETION | (data ? FI_REMOTE_CQ_DATA : 0) |
				 (o->api & API_INJECT ? FI_INJECT : 0);

		msg.iov_count = iov_split(s, p, o->len, iov, desc);
		return o->read ? fi_readmsg(s->ep, &msg, flags) :
				 fi_writemsg(s->ep, &msg, flags);
	}
	if (o->api & API_VEC) {
		n = iov_split(s, p, o->len, iov, desc);
		return o->read ? fi_readv(s->ep, iov, desc, n, dst, addr, key,
					  ctx) :
				 fi_writev(s->ep, iov, desc, n, dst, addr, key,
					   ctx);
	}
	if (o->api & API_INJECT)
		return data ? fi_inject_writedata(s->ep, p, o->len, o->data,
						  dst, addr, key) :
			      fi_inject_write(s->ep, p, o->len, dst, addr,
					      key);
	if (o->read)
		return fi_read(s->ep, p, o->len, d, dst, addr, key, ctx);
	return data ? fi_writedata(s->ep, p, o->len, d, o->data, dst, addr,
				   key, ctx) :
		      fi_write(s->ep, p, o->len, d, dst, addr, key, ctx);
}

/*
 * Do @o (struct rmaop) to rank @to and check its completion (none for
 * inject) and, for a read, our window: the data in place, nothing else
 * written. Rank 0 is told DONE, a: the completion's error (or the call's
 * negative code). Only used to rank 0, by peers.
 */
void rma_do(struct side *s, int to, const void *op)
{
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct rmaop o;
	struct want w = { .ctx = ctx };
	char what[128];
	struct comp c;
	int64_t err = 0;
	ssize_t rc;

	memcpy(&o, op, sizeof(o));
	w.flags = FI_RMA | (o.read ? FI_READ : FI_WRITE);
	w.err = o.err;
	snprintf(what, sizeof(what), "%s: ", s->tc->name);
	rma_label(&o, what + strlen(what), sizeof(what) - strlen(what));
	if (o.read) {
		memset(s->win[WIN_MAIN].b.p + RMA_PAD, FILL_BYTE, o.len);
		memset(s->win[WIN_MAIN].img + RMA_PAD, FILL_BYTE, o.len);
	} else {
		win_fill(s, WIN_MAIN, RMA_PAD, o.len, o.seed);
	}
	RETRY(s, rc, rma_post(s, to, &o, ctx));
	if (rc && o.err) {
		CHECK(s, true, "%s: refused: %s", what, fi_strerror((int)-rc));
		err = rc;
		goto done;
	}
	if (!MUST(s, rc, "%s", what))
		return;
	if ((o.api & (API_INJECT | API_MSG)) == API_INJECT)
		goto done;
	if (!cq_wait(s, &s->tx, ctx, &c, opt_wait_ms, what))
		return;
	err = c.e.err;
	w.data = o.data;
	if ((o.api & API_DATA) && (c.e.flags & FI_REMOTE_CQ_DATA) &&
	    known_gap("rma_data/initiator-flags"))
		w.flags |= FI_REMOTE_CQ_DATA;
	if (o.err && c.e.err)
		diag(s, "%s: %s (%d)%s%s", what, fi_strerror(c.e.err),
		     c.e.err, is_kfab() ? ": " : "", is_kfab() ? c.estr : "");
	check_comp(s, &c, &w, "%s: %s completion", what,
		   o.err ? "error" : "initiator");
	if (o.err && c.e.err && is_kfab())
		CHECK(s, c.estr[0], "%s: err_data says why", what);
	if (o.read && !c.e.err)
		pat_fill(s->win[WIN_MAIN].img + RMA_PAD, o.len, o.seed, 0);
	if (o.read)
		win_check(s, WIN_MAIN, 0, "%s: %s", what, c.e.err ?
			  "our buffer untouched" :
			  "data in place, nothing else written");
done:
	step_to(s, to, STEP_DONE, (uint64_t)err, NULL, 0);
}

/*
 * Rank 0: rank @r does @o to our window; for a read our range first gets
 * @o->seed's pattern. Then our window must hold its image: for a write
 * that succeeded, the data in the range; else nothing changed.
 */
bool remote_rma(struct side *s, int r, const struct rmaop *o)
{
	char what[128];
	struct ctl_msg m;
	int64_t err;

	snprintf(what, sizeof(what), "%s: rank %d ", s->tc->name, r);
	rma_label(o, what + strlen(what), sizeof(what) - strlen(what));
	if (o->read && !o->err)
		win_fill(s, o->win, o->off, o->len, o->seed);
	step_to(s, r, STEP_RMA, 0, o, sizeof(*o));
	if (!ctl_wait(s, r, STEP_DONE, &m))
		return false;
	err = (int64_t)m.a;
	if (!o->read && !err && !o->err)
		pat_fill(s->win[o->win].img + o->off, o->len, o->seed, 0);
	if (o->err) {
		progress_for(s, SETTLE_MS);
		win_check(s, o->win, 0, "%s: target untouched", what);
	} else {
		win_check(s, o->win, opt_wait_ms, "%s: target %s", what,
			  o->read ? "unchanged" :
			  "data in place, nothing around it written");
	}
	/* what a failed check left behind must not fail the next one */
	memcpy(s->win[o->win].img, s->win[o->win].b.p, s->win[o->win].b.len);
	return !s->abort;
}
