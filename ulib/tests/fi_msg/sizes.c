// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test cases: every size, the vector forms, inject and CQ data.
 */
#include "fi_msg.h"

static const size_t sizes[] = {
	0, 1, 7, 8, 16, 17, 4095, 4096, 4097, 8192, 8193, 12345, 16384,
	16385, 65536, 100003, MIB, 3000017, 16 * MIB,
};

static bool size_fits(struct side *s, size_t len)
{
	if (len <= s->info->ep_attr->max_msg_size)
		return true;
	skip("%s: %zu B is over max_msg_size %zu", s->tc->name, len,
	     s->info->ep_attr->max_msg_size);
	return false;
}

/* All sizes, msg and tagged, posted and unexpected; larger, smaller buffers. */
void case_sizes(struct side *s)
{
	static const struct {
		size_t len, rlen;
	} odd[] = {
		{ 1000, 4096 }, { 100000, MIB }, { 100, 50 }, { 5000, 4095 },
		{ 100000, 4096 }, { MIB, 65536 },
	};
	const char *no_trunc = known_gap("sizes/truncation");

	if (peer_serves(s))
		return;
	if (no_trunc)
		skip("sizes: truncation: %s: %s", opt_prov, no_trunc);
	for (int t = 0; t < 2; t++) {
		for (int u = 0; u < 2; u++) {
			unsigned int how = u ? R_UNEXPECTED : 0;

			for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
				struct msgspec m = {
					.api = t ? API_TAGGED : 0,
					.len = sizes[i], .tag = 0x5100 + i,
					.seed = seed_of(0x100 + 2 * t + u, i),
				};

				if (size_fits(s, m.len) &&
				    !recv_one(s, 1, &m, m.len, how))
					goto out;
			}
			for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
				struct msgspec m = {
					.api = t ? API_TAGGED : 0,
					.len = odd[i].len, .tag = 0x5200 + i,
					.seed = seed_of(0x110 + 2 * t + u, i),
					.expect = odd[i].rlen < odd[i].len ?
						  EXPECT_ANY : EXPECT_OK,
				};

				if (odd[i].rlen < odd[i].len && no_trunc)
					continue;
				if (!recv_one(s, 1, &m, odd[i].rlen, how))
					goto out;
			}
		}
	}
out:
	stop_peers(s);
}

/* sendv/recvv, sendmsg/recvmsg, tagged forms: 1..4 iovs, boundaries differ. */
void case_vector(struct side *s)
{
	static const uint32_t apis[] = {
		API_VEC, API_MSG, API_TAGGED | API_VEC, API_TAGGED | API_MSG,
	};
	bool data = s->info->domain_attr->cq_data_size >= 4;

	if (peer_serves(s))
		return;
	if (!data)
		diag(s, "cq_data_size %zu: fi_sendmsg without FI_REMOTE_CQ_DATA",
		     s->info->domain_attr->cq_data_size);
	for (size_t a = 0; a < ARRAY_SIZE(apis); a++) {
		for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
			const struct layout *l = &layouts[i];
			struct msgspec m = {
				.api = apis[a], .layout = i + 1,
				.len = layout_len(l->s, l->ns),
				.tag = 0x5300 + i, .seed = seed_of(0x200 + a, i),
				.data = 0xd0000000u | (a << 8) | i,
				.flags = FI_COMPLETION,
			};

			if ((apis[a] & API_MSG) && data)
				m.api |= API_DATA;
			if ((size_t)l->ns > s->info->tx_attr->iov_limit ||
			    (size_t)l->nr > s->info->rx_attr->iov_limit) {
				skip("%s: %d/%d iovs over iov_limit %zu/%zu",
				     s->tc->name, l->ns, l->nr,
				     s->info->tx_attr->iov_limit,
				     s->info->rx_attr->iov_limit);
				continue;
			}
			if (!recv_one(s, 1, &m, layout_len(l->r, l->nr), 0))
				goto out;
		}
	}
out:
	stop_peers(s);
}

/*
 * fi_inject and fi_tinject take the endpoint's transmit op flags but the
 * completion ones (fi_msg(3): a send with FI_INJECT and no FI_COMPLETION,
 * so no completion a level could time; fi_endpoint(3): op flags apply
 * where a call takes no flags): with the op flag FI_DELIVERY_COMPLETE
 * (tx_attr->op_flags) their FI_SEND counter counts them while the peer,
 * idle, processes nothing, as libfabric's shm and tcp do.
 */
void case_inject_opflags(struct side *s)
{
	static const uint32_t apis[] = { API_INJECT, API_TAGGED | API_INJECT };
	const char *name = s->tc->name;
	struct msgspec m[ARRAY_SIZE(apis)];
	struct msgspec first = { .len = 16, .seed = seed_of(0x382, 0) };
	uint64_t end, c0;
	struct gbuf b;
	int rc;

	if (s->rank) {
		/* a first message (connections), then idle: nothing processed */
		peer_loop(s);
		if (ctl_wait_ms(s, 0, STEP_SENT, NULL, opt_wait_ms, false))
			peer_loop(s);
		return;
	}
	gbuf_alloc(&b, 16);
	if (!send_to_peer(s, 1, &first))
		goto out;
	step_to(s, 1, STEP_STOP, 0, NULL, 0);
	c0 = fi_cntr_read(s->scntr);
	for (size_t i = 0; i < ARRAY_SIZE(apis); i++) {
		struct iovec iov = { .iov_base = b.p, .iov_len = b.len };

		m[i] = (struct msgspec){
			.api = apis[i], .len = b.len, .tag = 0x5500 + i,
			.seed = seed_of(0x380, i),
		};
		pat_fill(b.p, b.len, m[i].seed, 0);
		RETRY(s, rc, post_send(s, 1, &m[i], &iov, 1, NULL));
		if (!MUST(s, rc, "%s: %s", name,
			  i ? "fi_tinject" : "fi_inject"))
			goto out;
	}
	end = now_ms() + QUIET_MS;
	while (fi_cntr_read(s->scntr) < c0 + ARRAY_SIZE(apis) &&
	       progress_until(s, end)) {
	}
	CHECK_EQ(s, fi_cntr_read(s->scntr), c0 + ARRAY_SIZE(apis),
		 "%s: injects counted while the peer processes nothing",
		 name);
	step_to(s, 1, STEP_SENT, 0, NULL, 0);
	for (size_t i = 0; i < ARRAY_SIZE(apis); i++) {
		step_to(s, 1, STEP_RECV, 0, &m[i], sizeof(m[i]));
		if (!ctl_wait(s, 1, STEP_POSTED, NULL))
			goto out;
		step_to(s, 1, STEP_SENT, 0, NULL, 0);
		step_to(s, 1, STEP_DONE, 0, NULL, 0);
		if (!ctl_wait(s, 1, STEP_DONE, NULL))
			goto out;
	}
	CHECK_EQ(s, fi_cntr_read(s->scntr), c0 + ARRAY_SIZE(apis),
		 "%s: each counted once", name);
	CHECK_EQ(s, fi_cntr_readerr(s->scntr), 0, "%s: no counted error",
		 name);
	expect_quiet(s, &s->tx, 2, name);
out:
	gbuf_free(s, &b);
	stop_peers(s);
}

/* Length @i of @isizes is one not tried before (they ascend), within @isz. */
static bool isize_new(const size_t *isizes, size_t i, size_t isz)
{
	return (!i || isizes[i] > isizes[i - 1]) && isizes[i] <= isz;
}

/*
 * @m at each length of @lens that isize_new() takes within @max, its tag,
 * seed (of @seed) and CQ data (with API_DATA) numbered by the length's
 * index, received as @how says: false when the exchange broke.
 */
static bool recv_lens(struct side *s, struct msgspec m, const size_t *lens,
		      size_t n, size_t max, uint64_t seed, unsigned int how)
{
	uint64_t tag = m.tag, data = m.data;

	for (size_t i = 0; i < n; i++) {
		if (!isize_new(lens, i, max))
			continue;
		m.len = lens[i];
		m.tag = tag + i;
		m.seed = seed_of(seed, i);
		m.data = m.api & API_DATA ? data | i : 0;
		if (!recv_one(s, 1, &m, m.len, how))
			return false;
	}
	return true;
}

/* inject forms: no completion, buffer free on return; senddata: CQ data. */
void case_inject(struct side *s)
{
	static const uint32_t injects[] = {
		API_INJECT, API_INJECT | API_DATA, API_TAGGED | API_INJECT,
		API_TAGGED | API_INJECT | API_DATA,
	};
	static const size_t data_sizes[] = { 0, 5, 4097, 70000 };
	size_t isz = s->info->tx_attr->inject_size;
	size_t isizes[] = { 0, 1, 8, 63, isz / 2 + 1, isz };
	bool data = s->info->domain_attr->cq_data_size >= 4;
	const char *why = known_gap("inject/unexpected-data");

	if (peer_serves(s))
		return;
	if (!isz)
		skip("%s: inject_size is 0", s->tc->name);
	if (why)
		skip("%s: unexpected injectdata: %s: %s", s->tc->name,
		     opt_prov, why);
	for (size_t a = 0; isz && a < ARRAY_SIZE(injects); a++) {
		if ((injects[a] & API_DATA) && !data) {
			skip("%s: cq_data_size %zu < 4", s->tc->name,
			     s->info->domain_attr->cq_data_size);
			continue;
		}
		for (int u = 0; u < 2; u++) {
			struct msgspec m = {
				.api = injects[a], .tag = 0x5400,
				.data = 0xc0de0000u | (a << 8),
			};

			if (u && why && (injects[a] & API_DATA))
				continue;
			if (!recv_lens(s, m, isizes, ARRAY_SIZE(isizes), isz,
				       0x300 + 2 * a + u, u ? R_UNEXPECTED : 0))
				goto out;
		}
	}
	/* one completion, with the message's context (fi_msg(3) FI_INJECT) */
	for (int t = 0; t < 2 && isz; t++) {
		struct msgspec m = {
			.api = API_MSG | (t ? API_TAGGED : 0), .tag = 0x5600,
			.flags = FI_INJECT | FI_COMPLETION,
		};

		if (!recv_lens(s, m, isizes, ARRAY_SIZE(isizes), isz,
			       0x320 + t, 0))
			goto out;
	}
	for (int t = 0; t < 2 && data; t++) {
		struct msgspec m = {
			.api = API_DATA | (t ? API_TAGGED : 0), .tag = 0x5500,
			.data = 0xfedc0000u | (t << 8),
		};

		if (!recv_lens(s, m, data_sizes, ARRAY_SIZE(data_sizes),
			       SIZE_MAX, 0x310 + t, 0))
			goto out;
	}
	if (!data)
		skip("%s: senddata: cq_data_size %zu < 4", s->tc->name,
		     s->info->domain_attr->cq_data_size);
out:
	stop_peers(s);
}

