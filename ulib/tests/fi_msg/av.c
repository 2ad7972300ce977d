// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: both AV types, FI_SOURCE, removed addresses.
 */
#include "fi_msg.h"

bool av_insert(struct side *s, int r, int *rc)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	*rc = fi_av_insert(s->av, s->name[r], 1, &a, 0, NULL);
	if (*rc != 1 || a == FI_ADDR_NOTAVAIL)
		return false;
	s->addr[r] = a;
	return true;
}

bool av_insert_rank(struct side *s, int r)
{
	int rc;

	if (av_insert(s, r, &rc))
		return true;
	CHECK(s, false,
	      "%s: fi_av_insert of rank %d: %d (%s)", s->tc->name, r, rc,
	      fi_strerror(rc < 0 ? -rc : FI_EINVAL));
	side_abort(s);
	return false;
}

static void av_lookup_check(struct side *s, int r)
{
	uint8_t buf[ADDR_MAX];
	size_t len = sizeof(buf);
	int rc = fi_av_lookup(s->av, s->addr[r], buf, &len);

	CHECK(s, rc == 0 && len == s->namelen[r] && !memcmp(buf, s->name[r], len),
	      "%s: fi_av_lookup gives rank %d's name (rc %d, %zu of %zu B)",
	      s->tc->name, r, rc, len, s->namelen[r]);
}

/* AV: indices, fi_av_lookup, sources, a sender not in it, fi_av_remove. */
void case_av(struct side *s)
{
	static const size_t av_sizes[] = { 0, 1, 4097, 16385, 65536, MIB };
	const char *name = s->tc->name, *why;
	bool table = s->av_type == FI_AV_TABLE;
	bool source = s->info->caps & FI_SOURCE;
	struct msgspec m = { .api = API_TAGGED, .len = 100, .tag = 0x7f80 };

	if (s->rank) {
		if (av_insert_rank(s, 0))
			peer_loop(s);
		return;
	}
	if (!av_insert_rank(s, 1))
		goto out;
	if (table)
		CHECK_EQ(s, s->addr[1], 0, "%s: first address is index 0", name);
	av_lookup_check(s, 1);
	for (int t = 0; t < 2; t++)
		for (size_t i = 0; i < ARRAY_SIZE(av_sizes); i++) {
			struct msgspec ms = {
				.api = t ? API_TAGGED : 0, .len = av_sizes[i],
				.tag = 0x7f90 + i, .seed = seed_of(0xb00 + t, i),
			};

			if (!recv_one(s, 1, &ms, ms.len, 0))
				goto out;
		}

	/* rank 2 is not in the AV: FI_ADDR_NOTAVAIL (FI_AV_TABLE) */
	why = known_gap("av/notavail");
	if (!source)
		skip("%s: no FI_SOURCE: sources are not reported", name);
	else if (!table)
		diag(s, "%s: FI_AV_MAP may name a source not in the AV (fi_cq(3)): not checked",
		     name);
	else if (why)
		skip("%s: FI_ADDR_NOTAVAIL: %s: %s", name, opt_prov, why);
	m.seed = seed_of(0xb10, 0);
	if (!recv_one(s, 2, &m, m.len, table && !why ? 0 : R_ANY_SRC) ||
	    !av_insert_rank(s, 2))
		goto out;
	if (table)
		CHECK_EQ(s, s->addr[2], 1, "%s: second address is index 1",
			 name);
	av_lookup_check(s, 2);
	m.seed = seed_of(0xb10, 1);
	if (!recv_one(s, 2, &m, m.len, 0))
		goto out;

	CHECK_EQ(s, fi_av_remove(s->av, &s->addr[1], 1, 0), 0,
		 "%s: fi_av_remove", name);
	if (strncmp(opt_prov, "kfab_", 5) && !opt_force) {
		skip("%s: a send to a removed address: undefined in fi_av(3), required of kfab_* only",
		     name);
		goto out;
	}
	m = (struct msgspec){ .api = API_TAGGED, .len = 100, .tag = 0x7f81,
			      .expect = EXPECT_FAIL };
	quiet_peer(s, 1, &m, QUIET_MS);
out:
	stop_peers(s);
}

