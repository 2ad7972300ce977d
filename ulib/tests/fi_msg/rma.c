// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: RMA writes, reads and writedata; the legacy mr_mode.
 */
#include "fi_msg.h"

static const size_t rma_sizes[] = {
	1, 48, 49, 4096, 8192, 8193, 65536, MIB, 4 * MIB,
};

static bool rma_fits(struct side *s, const struct rmaop *o)
{
	char what[128];

	if ((o->api & API_INJECT) && o->len > s->info->tx_attr->inject_size)
		return false;
	if (o->len <= s->info->ep_attr->max_msg_size)
		return true;
	rma_label(o, what, sizeof(what));
	skip("%s: %s: over max_msg_size %zu", s->tc->name, what,
	     s->info->ep_attr->max_msg_size);
	return false;
}

/*
 * RMA writes (write, writev, writemsg, inject_write, writemsg with
 * FI_INJECT|FI_COMPLETION) or reads (read, readv, readmsg) of every size
 * by rank 1 into the middle of rank 0's window: data in place, the bytes
 * around untouched, FI_RMA|FI_WRITE or FI_RMA|FI_READ completions (for
 * writemsg with FI_INJECT too: fi_rma(3)'s FI_COMPLETION asks for one).
 */
static void rma_sizes_run(struct side *s, bool read)
{
	static const uint32_t apis[] = { 0, API_VEC, API_MSG, API_INJECT,
					 API_MSG | API_INJECT };

	if (!rma_setup(s) || peer_serves(s))
		return;
	diag(s, "%s: mr_mode %s", s->tc->name,
	     fi_tostr(&s->info->domain_attr->mr_mode, FI_TYPE_MR_MODE));
	for (size_t a = 0; a < (read ? 3 : ARRAY_SIZE(apis)); a++) {
		for (size_t i = 0; i < ARRAY_SIZE(rma_sizes); i++) {
			struct rmaop o = {
				.read = read, .api = apis[a], .win = WIN_MAIN,
				.off = RMA_PAD + i, .len = rma_sizes[i],
				.seed = seed_of(0x900 + 8 * read + a, i),
			};

			if (rma_fits(s, &o) && !remote_rma(s, 1, &o))
				goto out;
		}
	}
out:
	stop_peers(s);
}

/*
 * fi_mr(3)'s legacy mr_mode asked for (cfg.mr_legacy, at API cfg.api_minor)
 * comes back as asked, and the domain behaves as it says: FI_MR_BASIC,
 * provider keys (two regions registered with one requested_key get keys
 * of their own) and virtual addresses; FI_MR_SCALABLE, the application's
 * keys and offsets. Then rma_write's writes, addressed that way.
 */
void case_rma_legacy(struct side *s)
{
	int want = s->tc->cfg.mr_legacy;
	struct fid_mr *mr[2] = { NULL, NULL };
	struct gbuf b;
	int rc[2];

	/* a provider that refuses it may have a utility layered over it */
	if (strcmp(s->info->fabric_attr->prov_name, opt_prov)) {
		if (!s->rank)
			skip("%s: %s refuses it; only %s answers",
			     s->tc->name, opt_prov,
			     s->info->fabric_attr->prov_name);
		return;
	}
	CHECK_EQ(s, s->info->domain_attr->mr_mode, want,
		 "%s: mr_mode %s comes back as asked", s->tc->name,
		 want == FI_MR_BASIC ? "FI_MR_BASIC" : "FI_MR_SCALABLE");
	gbuf_alloc(&b, 128);
	for (int i = 0; i < 2; i++)
		rc[i] = mr_reg(s, b.p + 64 * i, 64, FI_REMOTE_READ, 0x77,
			       &mr[i]);
	if (want == FI_MR_BASIC)
		CHECK(s, !rc[0] && !rc[1] &&
		      fi_mr_key(mr[0]) != fi_mr_key(mr[1]),
		      "%s: one requested_key registers twice, with the provider's keys (%d, %d)",
		      s->tc->name, rc[0], rc[1]);
	else
		CHECK(s, !rc[0] && fi_mr_key(mr[0]) == 0x77,
		      "%s: the key is the requested_key (%d)", s->tc->name,
		      rc[0]);
	for (int i = 0; i < 2; i++)
		if (mr[i])
			fi_close(&mr[i]->fid);
	gbuf_free(s, &b);
	rma_sizes_run(s, false);
}

void case_rma_write(struct side *s)
{
	rma_sizes_run(s, false);
}

void case_rma_read(struct side *s)
{
	rma_sizes_run(s, true);
}

/*
 * writedata, inject_writedata, writemsg with FI_REMOTE_CQ_DATA: rank 0
 * gets a receive CQ entry FI_REMOTE_CQ_DATA|FI_RMA|FI_REMOTE_WRITE with
 * the data, the data is in place, and the receive posted before is not
 * consumed: it takes the message rank 1 sends afterwards.
 */
void case_rma_data(struct side *s)
{
	static const struct {
		uint32_t api;
		size_t len;
	} ops[] = {
		{ API_DATA, 64 }, { API_DATA, 70000 },
		{ API_DATA | API_INJECT, 16 }, { API_DATA | API_MSG, 4096 },
		{ API_DATA | API_MSG, MIB },
	};
	struct msgspec m = { .len = 32, .seed = seed_of(0x980, 0) };
	struct fi_context2 *ctx = ctx_new(s, 1);
	struct gbuf b = { 0 };
	struct want w;
	struct comp c;

	if (!rma_setup(s) || peer_serves(s))
		return;
	if (s->info->domain_attr->cq_data_size < 4) {
		skip("rma_data: cq_data_size %zu",
		     s->info->domain_attr->cq_data_size);
		goto out;
	}
	gbuf_alloc(&b, 64);
	if (!recv_into(s, 0, &b, FI_ADDR_UNSPEC, 0, 0, ctx, "rma_data"))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		struct rmaop o = { .api = ops[i].api, .win = WIN_MAIN,
				   .off = RMA_PAD + 7 * i, .len = ops[i].len,
				   .seed = seed_of(0x990, i),
				   .data = 0xda7a0000u | i };
		char what[128] = "rma_data: ";

		rma_label(&o, what + strlen(what), sizeof(what) - strlen(what));
		if (!rma_fits(s, &o))
			continue;
		if (!remote_rma(s, 1, &o) ||
		    !cq_wait(s, &s->rx, NULL, &c, opt_wait_ms, what))
			goto out;
		w = (struct want){ .ctx = c.e.op_context, .data = o.data,
				   .flags = FI_REMOTE_CQ_DATA | FI_RMA |
					    FI_REMOTE_WRITE };
		if (known_gap("rma_data/flags"))
			w.flags = FI_REMOTE_CQ_DATA |
				  (c.e.flags & COMP_FLAGS & ~FI_REMOTE_CQ_DATA);
		CHECK(s, c.e.op_context != ctx,
		      "%s: the posted receive is not consumed", what);
		check_comp(s, &c, &w, "%s: target completion with the data",
			   what);
	}
	if (!remote_go(s, 1, &m) ||
	    !cq_wait(s, &s->rx, ctx, &c, opt_wait_ms, "rma_data"))
		goto out;
	w = want_recv(s, ctx, &m, 1);
	check_comp(s, &c, &w, "rma_data: the receive takes the next message");
	check_data(s, &b, 1, m.seed, m.len, "rma_data: its data");
	ctl_wait(s, 1, STEP_DONE, NULL);
out:
	if (b.mem)
		gbuf_free(s, &b);
	stop_peers(s);
}

