// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test: batches of messages, sent in a window and received in
 * order; the peers' side of most cases.
 */
#include "fi_msg.h"

long ctx_index(const void *ctx, const struct fi_context2 *base,
	       size_t n)
{
	const struct fi_context2 *c = ctx;

	if (c < base || c >= base + n)
		return -1;
	return c - base;
}

/*
 * Send batch @b to rank @to, at most b->window in flight, -FI_EAGAIN
 * retried after progress; SENT once all are posted, DONE once all
 * completed. B_FLOOD first posts without progress until -FI_EAGAIN.
 */
static void send_batch(struct side *s, int to, const struct batch *b)
{
	size_t max = batch_max_len(b);
	uint32_t win = b->window < b->n ? b->window : b->n;
	uint8_t *arena = xmalloc(win * (max ? max : 1));
	struct fi_context2 *ctx = ctx_new(s, b->n);
	uint32_t *slots = xcalloc(win, sizeof(*slots));
	uint32_t *slot_of = xcalloc(b->n, sizeof(*slot_of));
	uint8_t *seen = xcalloc(b->n, 1);
	uint32_t posted = 0, done = 0, nfree = win, bad = 0;
	unsigned long eagain = 0;
	bool flooding = b->kind == B_FLOOD, sent = false;
	uint64_t last = now_ms();
	char why[300] = "";
	struct msgspec m;
	struct comp c;

	for (uint32_t i = 0; i < win; i++)
		slots[i] = i;
	while (done < b->n && !s->abort) {
		while (posted < b->n && nfree) {
			uint32_t slot = slots[nfree - 1];
			uint8_t *p = arena + (size_t)slot * max;
			struct iovec iov = { .iov_base = p };
			ssize_t rc;

			batch_spec(b, posted, &m);
			iov.iov_len = m.len;
			pat_fill(p, m.len, m.seed, 0);
			rc = post_send(s, to, &m, &iov, 1, &ctx[posted]);
			if (rc == -FI_EAGAIN) {
				eagain++;
				break;
			}
			if (!MUST(s, rc, "%s: send %u", s->tc->name, posted))
				goto out;
			nfree--;
			slot_of[posted++] = slot;
			last = now_ms();
		}
		if (flooding) {
			/* no progress so far: the receiver makes none */
			flooding = false;
			step_to(s, to, STEP_FLOODED, posted, NULL, 0);
		}
		if (posted == b->n && !sent) {
			step_to(s, to, STEP_SENT, 0, NULL, 0);
			sent = true;
		}
		progress(s);
		while (cqq_take(&s->tx, NULL, &c)) {
			long i = ctx_index(c.e.op_context, ctx, b->n);
			char one[200];

			last = now_ms();
			if (i < 0 || seen[i]++) {
				comp_str(&c, one, sizeof(one));
				if (!bad++)
					snprintf(why, sizeof(why), "%s %s",
						 i < 0 ? "unknown" : "repeated",
						 one);
				continue;
			}
			batch_spec(b, i, &m);
			struct want w = want_send(&ctx[i], &m);

			if (comp_mismatch(s, &c, &w, one, sizeof(one)) &&
			    !bad++)
				snprintf(why, sizeof(why), "send %ld: %s", i,
					 one);
			slots[nfree++] = slot_of[i];
			done++;
		}
		if (now_ms() - last > (uint64_t)opt_wait_ms) {
			CHECK(s, false,
			      "%s: no send completion in %d ms (%u of %u done, %u posted)",
			      s->tc->name, opt_wait_ms, done, b->n, posted);
			side_abort(s);
		}
	}
	CHECK_EQ(s, done, b->n, "%s: %u sends completed", s->tc->name, b->n);
	CHECK_WHY(s, !bad, why,
		  "%s: each send completed once, with its context and flags",
		  s->tc->name);
	if (eagain)
		diag(s, "%s: %lu sends retried after -FI_EAGAIN", s->tc->name,
		     eagain);
	step_to(s, to, STEP_DONE, 0, NULL, 0);
out:
	release(s, arena);
	free(slots);
	free(slot_of);
	free(seen);
}

/*
 * Receive batch @b from rank @from into receives posted in send order, at
 * most @rwin at a time and refilled @rbatch at a time; message i must land
 * in the i-th receive (FI_ORDER_SAS). R_UNEXPECTED: post after all were
 * sent; B_FLOOD: wait, without progress, until the sender hit -FI_EAGAIN.
 */
void recv_stream(struct side *s, int from, const struct batch *b,
		 uint32_t rwin, uint32_t rbatch, unsigned int how,
		 const char *name)
{
	size_t max = batch_max_len(b);
	struct gbuf *buf;
	struct fi_context2 *ctx;
	uint32_t *k_of, *slots;
	uint32_t posted = 0, done = 0, nfree, bad_comp = 0, bad_data = 0;
	uint32_t late = 0, next = 0;	/* lowest receive not completed */
	uint8_t *fin;
	char why_c[300] = "", why_d[300] = "";
	bool strict = (s->info->rx_attr->comp_order & FI_ORDER_STRICT) ==
		      FI_ORDER_STRICT;
	bool asked = true;
	struct ctl_msg cm;
	struct msgspec m;
	struct comp c;

	if (!(s->info->tx_attr->msg_order & FI_ORDER_SAS)) {
		skip("%s: no FI_ORDER_SAS to know which message is which",
		     name);
		return;
	}
	if (rwin > b->n)
		rwin = b->n;
	/* more receives than rx_attr->size may be refused: -FI_EAGAIN */
	if (s->info->rx_attr->size && rwin > s->info->rx_attr->size)
		rwin = (uint32_t)s->info->rx_attr->size;
	if (rbatch > rwin)
		rbatch = rwin;
	fin = xcalloc(b->n, 1);
	buf = xcalloc(rwin, sizeof(*buf));
	ctx = ctx_new(s, rwin);
	k_of = xcalloc(rwin, sizeof(*k_of));
	slots = xcalloc(rwin, sizeof(*slots));
	for (uint32_t i = 0; i < rwin; i++) {
		gbuf_alloc(&buf[i], max);
		slots[i] = i;
	}
	nfree = rwin;
	if (how & R_UNEXPECTED) {
		step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait(s, from, STEP_SENT, NULL))
			goto out;
		progress_for(s, SETTLE_MS);
	} else if (b->kind == B_FLOOD) {
		step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
		if (!ctl_wait_ms(s, from, STEP_FLOODED, &cm, opt_wait_ms,
				 false))
			goto out;
		if (cm.a < b->n)
			CHECK(s, true, "%s: -FI_EAGAIN after %llu sends to a receiver not progressing",
			      name, (unsigned long long)cm.a);
		else
			skip("%s: no -FI_EAGAIN in %u sends to a receiver not progressing",
			     name, b->n);
	} else {
		asked = false;	/* once the first receives are posted */
	}
	while (done < b->n && !s->abort) {
		char one[200];
		long slot;

		if (nfree >= rbatch || posted + nfree >= b->n ||
		    posted == done) {
			while (nfree && posted < b->n) {
				uint32_t slot = slots[nfree - 1];
				ssize_t rc;

				batch_spec(b, posted, &m);
				RETRY(s, rc, post_recv(s, m.api,
					&(struct iovec){ buf[slot].p, max },
					1, FI_ADDR_UNSPEC, m.tag, 0,
					&ctx[slot]));
				if (!MUST(s, rc, "%s: receive %u", name,
					  posted))
					goto out;
				k_of[slot] = posted++;
				nfree--;
			}
		}
		if (!asked) {
			step_to(s, from, STEP_BATCH, 0, b, sizeof(*b));
			asked = true;
		}
		snprintf(one, sizeof(one), "%s: message %u of %u", name, done,
			 b->n);
		if (!cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, one))
			break;
		slot = ctx_index(c.e.op_context, ctx, rwin);

		if (slot < 0) {
			comp_str(&c, one, sizeof(one));
			if (!bad_comp++)
				snprintf(why_c, sizeof(why_c), "unknown %s",
					 one);
			continue;
		}
		batch_spec(b, k_of[slot], &m);
		struct want w = want_recv(s, &ctx[slot], &m, from);

		if (comp_mismatch(s, &c, &w, one, sizeof(one)) && !bad_comp++)
			snprintf(why_c, sizeof(why_c), "receive %u: %s",
				 k_of[slot], one);
		if (data_mismatch(&buf[slot], 1, m.seed, m.len, one,
				  sizeof(one)) && !bad_data++)
			snprintf(why_d, sizeof(why_d), "receive %u: %s",
				 k_of[slot], one);
		late += k_of[slot] != next;
		fin[k_of[slot]] = 1;
		while (next < b->n && fin[next])
			next++;
		memset(buf[slot].p, FILL_BYTE, max);
		slots[nfree++] = slot;
		done++;
	}
	CHECK_EQ(s, done, b->n, "%s: %u messages received", name, b->n);
	CHECK_WHY(s, !bad_comp, why_c, "%s: completion fields", name);
	CHECK_WHY(s, !bad_data, why_d,
		  "%s: byte-exact, message i in receive i (FI_ORDER_SAS)",
		  name);
	if (strict)
		CHECK_EQ(s, late, 0,
			 "%s: completions in posting order (rx comp_order FI_ORDER_STRICT)",
			 name);
	else
		diag(s, "%s: rx comp_order is not FI_ORDER_STRICT: %u completions overtook an older receive",
		     name, late);
	if (!(how & R_UNEXPECTED) && !ctl_wait(s, from, STEP_SENT, NULL))
		goto out;
	ctl_wait(s, from, STEP_DONE, NULL);
out:
	for (uint32_t i = 0; i < rwin; i++)
		gbuf_free(s, &buf[i]);
	free(buf);
	free(k_of);
	free(slots);
	free(fin);
}

/* ---- the peers' side of most cases ---- */

/* Do what rank 0 asks until it says STOP. */
void peer_loop(struct side *s)
{
	struct ctl_msg m;
	struct msgspec sp;
	struct batch b;

	while (ctl_wait_ms(s, 0, STEP_ANY, &m, -1, true)) {
		memcpy(&sp, m.blob, sizeof(sp));
		memcpy(&b, m.blob, sizeof(b));
		switch (m.step) {
		case STEP_GO:
			send_checked(s, 0, &sp);
			break;
		case STEP_RECV:
			recv_one(s, 0, &sp, sp.len, 0);
			break;
		case STEP_QUIET:
			quiet_recv(s, 0, &sp, (int)m.a);
			break;
		case STEP_BATCH:
			send_batch(s, 0, &b);
			break;
		case STEP_RMA:
			rma_do(s, 0, m.blob);
			break;
		case STEP_DIE:
			kill(getpid(), SIGKILL);
			break;
		case STEP_STOP:
			return;
		default:
			CHECK(s, false,
			      "%s: protocol: unexpected step %u",
			      s->tc->name, m.step);
			side_abort(s);
			return;
		}
	}
}

/* A peer runs peer_loop() and is done: true; rank 0 goes on: false. */
bool peer_serves(struct side *s)
{
	if (s->rank)
		peer_loop(s);
	return s->rank;
}

void stop_peers(struct side *s)
{
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_STOP, 0, NULL, 0);
}
