// SPDX-License-Identifier: GPL-2.0
/*
 * fi_msg_test case: two ranks increment one word at once: exact sums,
 * each old value fetched once.
 */
#include "fi_msg.h"

#define CONC_MAX	2000
#define CONC_BITS_MAX	(2 * CONC_MAX)
#define CONC_CHUNK	(ADDR_MAX * 8)

/* The targets of atomic_concurrent in rank 0's main window */
#define CONC_U64	AT_START
#define CONC_DBL	(AT_START + 64)
#define CONC_I32	(AT_START + 128)

/* Loops of each rank: -n COUNT, at most CONC_MAX (the default). */
static int conc_n(void)
{
	return opt_count < CONC_MAX ? (int)opt_count : CONC_MAX;
}

/* Ranks 1 and 2: conc_n() of each op; the fetched values, as a bitmap. */
static void concurrent_peer(struct side *s)
{
	uint8_t *p = s->win[WIN_MAIN].b.p + AT_START;
	uint8_t bits[CONC_BITS_MAX / 8] = { 0 };
	const int n = conc_n(), nbits = 2 * n;
	uint64_t *u = (uint64_t *)p, prev = 0, last = 0;
	double *dbl = (double *)p;
	int32_t *i32 = (int32_t *)p, cur = 0;
	unsigned int bad = 0, dup = 0, order = 0, retries = 0;
	uint64_t base = s->rbase[0][WIN_MAIN], key = s->rkey[0][WIN_MAIN];
	struct atop fa = { AT_FETCH, 0, FI_UINT64, FI_SUM, 1, base + CONC_U64,
			   key, p, NULL, p + 64 };
	struct atop da = { AT_BASE, 0, FI_DOUBLE, FI_SUM, 1, base + CONC_DBL,
			   key, p + 8, NULL, NULL };
	struct atop ca = { AT_COMPARE, 0, FI_INT32, FI_CSWAP, 1,
			   base + CONC_I32, key, p + 16, p + 24, p + 32 };
	char why[160] = "", one[128];

	if (!ctl_wait(s, 0, STEP_POSTED, NULL))
		return;
	for (int i = 0; i < n && !s->abort && !bad; i++) {
		u[0] = 1;
		dbl[1] = 1.0;
		if (!at_run(s, 0, &fa, one, sizeof(one))) {
			snprintf(why, sizeof(why), "fetch_atomic %d: %s", i, one);
			bad++;
			break;
		}
		prev = u[8];
		if (prev >= (uint64_t)nbits || (bits[prev / 8] & (1u << prev % 8)))
			dup++;
		else
			bits[prev / 8] |= 1u << prev % 8;
		order += i && prev <= last;
		last = prev;
		if (!at_run(s, 0, &da, one, sizeof(one))) {
			snprintf(why, sizeof(why), "atomic %d: %s", i, one);
			bad++;
			break;
		}
		for (;;) {
			i32[4] = cur + 1;
			i32[6] = cur;
			if (!at_run(s, 0, &ca, one, sizeof(one))) {
				snprintf(why, sizeof(why),
					 "compare_atomic %d: %s", i, one);
				bad++;
				break;
			}
			if (i32[8] == cur)
				break;
			cur = i32[8];
			retries++;
		}
		cur++;
	}
	CHECK_WHY(s, !bad, why,
		  "atomic_concurrent: %d fetch_atomic, atomic, compare_atomic loops completed",
		  n);
	CHECK(s, !dup && !order,
	      "atomic_concurrent: fetched values distinct, below %d, increasing (%u repeated, %u out of order)",
	      nbits, dup, order);
	for (int b = 0; b < nbits; b += CONC_CHUNK) {
		int nb = nbits - b < CONC_CHUNK ? nbits - b : CONC_CHUNK;

		step_to(s, 0, STEP_VALS, b, bits + b / 8, (nb + 7) / 8);
	}
	step_to(s, 0, STEP_DONE, retries, NULL, 0);
	peer_loop(s);
}

/*
 * Ranks 1 and 2 at once, conc_n() times each: fi_fetch_atomic FI_SUM +1 on
 * one FI_UINT64 of rank 0, fi_atomic FI_SUM 1.0 on an FI_DOUBLE, a
 * FI_CSWAP loop incrementing an FI_INT32. The results are exact and the
 * fetched values of both ranks are 0..2*conc_n()-1, each once.
 */
void case_atomic_concurrent(struct side *s)
{
	static const struct {
		int kind, dt, op;
	} need[] = {
		{ AT_FETCH, FI_UINT64, FI_SUM }, { AT_BASE, FI_DOUBLE, FI_SUM },
		{ AT_COMPARE, FI_INT32, FI_CSWAP },
	};
	uint8_t all[CONC_BITS_MAX / 8] = { 0 };
	const int nbits = 2 * conc_n();
	struct win *x = &s->win[WIN_MAIN];
	unsigned int both = 0, seen = 0;
	uint64_t retries = 0, u = nbits;
	double d = nbits;
	int32_t i32 = nbits;
	struct ctl_msg m;

	if (!rma_setup(s))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(need); i++) {
		int qrc, vrc;
		size_t size;

		if (at_valid(s, need[i].kind, need[i].dt, need[i].op, &qrc,
			     &vrc, &size))
			continue;
		if (!s->rank)
			skip("atomic_concurrent: fi_%s %s %s not valid",
			     at_kinds[need[i].kind], atypes[need[i].dt].name,
			     at_ops[need[i].op]);
		goto out;
	}
	if (s->rank) {
		concurrent_peer(s);
		return;
	}
	memset(x->b.p + AT_START, 0, 256);
	memset(x->img + AT_START, 0, 256);
	for (int r = 1; r < s->nranks; r++)
		step_to(s, r, STEP_POSTED, 0, NULL, 0);
	/*
	 * No limit of our own: each of a peer's operations has one, and a
	 * peer stops at its first failure and reports it here.
	 */
	for (int r = 1; r < s->nranks; r++) {
		for (int b = 0; b < nbits; b += CONC_CHUNK) {
			if (!ctl_wait_ms(s, r, STEP_VALS, &m, -1, true))
				goto out;
			for (uint32_t j = 0; j < m.len; j++) {
				both += __builtin_popcount(all[b / 8 + j] &
							   m.blob[j]);
				all[b / 8 + j] |= m.blob[j];
			}
		}
		if (!ctl_wait(s, r, STEP_DONE, &m))
			goto out;
		retries += m.a;
	}
	for (size_t j = 0; j < sizeof(all); j++)
		seen += __builtin_popcount(all[j]);
	CHECK_EQ(s, both, 0, "atomic_concurrent: no value fetched by both ranks");
	CHECK_EQ(s, seen, nbits,
		 "atomic_concurrent: the fetched values are 0..%d", nbits - 1);
	memcpy(x->img + CONC_U64, &u, sizeof(u));
	memcpy(x->img + CONC_DBL, &d, sizeof(d));
	memcpy(x->img + CONC_I32, &i32, sizeof(i32));
	win_check(s, WIN_MAIN, opt_wait_ms,
		  "atomic_concurrent: FI_UINT64 sum, FI_DOUBLE sum, FI_INT32 by CSWAP all %d",
		  nbits);
	diag(s, "atomic_concurrent: %llu CSWAP retries",
	     (unsigned long long)retries);
out:
	if (!s->rank)
		stop_peers(s);
	else if (!s->abort)
		peer_loop(s);
}

