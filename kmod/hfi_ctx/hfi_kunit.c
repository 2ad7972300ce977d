// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of kfab_hfi: job key derivation and uniqueness, module
 * parameter validation, pin-limit arithmetic and which contexts
 * KFAB_HFI_IOC_LIST_CTXTS reports.
 *
 * The jkey cases run their own table under a fixed siphash key, so they
 * are reproducible and do not touch the driver's live table.
 */

#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/string.h>

#include "../kfab_kunit.h"
#include "hfi.h"

static const siphash_key_t hfi_test_key = {
	.key = { 0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL },
};

/* uuid number @n: distinct for distinct @n */
static void hfi_test_uuid(u8 *uuid, u32 n)
{
	memset(uuid, 0xa5, HFI_UUID_LEN);
	memcpy(uuid, &n, sizeof(n));
}

/* The first uuid number from @start whose jkey for @uid is @want. */
static bool hfi_test_find_uuid(u32 uid, u16 want, u32 start, u8 *uuid,
			       u32 *found)
{
	u32 n;

	for (n = start; n < start + (1U << 24); n++) {
		hfi_test_uuid(uuid, n);
		if (hfi_jkey_from_hash(hfi_jkey_hash(&hfi_test_key, uid,
						     uuid)) == want) {
			*found = n;
			return true;
		}
	}
	return false;
}

static struct hfi_jkey_table *hfi_test_table(struct kunit *test)
{
	struct hfi_jkey_table *t;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	hfi_jkey_table_init(t, &hfi_test_key);
	return t;
}

struct hfi_fold_case {
	u64 hash;
	u16 jkey;
};

static const struct hfi_fold_case hfi_fold_cases[] = {
	/* 0 is not a jkey: it folds to 1 */
	{ 0, 1 },
	/* every multiple of 0xffff folds to 1 as well */
	{ 0xffff, 1 },
	/* 2^64 - 1 is a multiple of 0xffff */
	{ U64_MAX, 1 },
	/* the largest remainder gives the largest jkey */
	{ 0xfffe, 0xffff },
	/* 2^16 = 0xffff + 1 */
	{ 0x10000, 2 },
	/* U64_MAX - 1 is one below a multiple */
	{ U64_MAX - 1, 0xffff },
};

static void hfi_jkey_fold_test(struct kunit *test)
{
	KFAB_EXPECT_ROWS(test, hfi_fold_cases, hfi_jkey_from_hash, hash, jkey);
}

struct hfi_next_case {
	u16 jkey;
	u16 next;
};

static const struct hfi_next_case hfi_next_cases[] = {
	/* plain step */
	{ 1, 2 },
	/* the last value wraps to 1, never to 0 */
	{ 0xffff, 1 },
	/* one below the end */
	{ 0xfffe, 0xffff },
};

static void hfi_jkey_next_test(struct kunit *test)
{
	KFAB_EXPECT_ROWS(test, hfi_next_cases, hfi_jkey_next, jkey, next);
}

/* Many pairs: never 0, and stable for the same pair. */
static void hfi_jkey_never_zero_test(struct kunit *test)
{
	u8 uuid[HFI_UUID_LEN];
	u64 h;
	u32 n;

	for (n = 0; n < 100000; n++) {
		hfi_test_uuid(uuid, n);
		h = hfi_jkey_hash(&hfi_test_key, n & 7, uuid);
		KUNIT_ASSERT_NE(test, hfi_jkey_from_hash(h), 0);
		KUNIT_ASSERT_EQ(test, hfi_jkey_hash(&hfi_test_key, n & 7, uuid),
				h);
	}
}

/* Another hash key derives other jkeys: nothing to precompute. */
static void hfi_jkey_keyed_test(struct kunit *test)
{
	static const siphash_key_t other = { .key = { 1, 2 } };
	u8 uuid[HFI_UUID_LEN];
	unsigned int differ = 0;
	u32 n;

	for (n = 0; n < 64; n++) {
		hfi_test_uuid(uuid, n);
		if (hfi_jkey_hash(&hfi_test_key, 1000, uuid) !=
		    hfi_jkey_hash(&other, 1000, uuid))
			differ++;
	}
	KUNIT_EXPECT_EQ(test, differ, 64U);
}

struct hfi_pair_case {
	u32 uid_a;
	u32 uuid_a;
	u32 uid_b;
	u32 uuid_b;
	bool same;
};

static const struct hfi_pair_case hfi_pair_cases[] = {
	/* the same user and job: one jkey */
	{ 1000, 1, 1000, 1, true },
	/* another user, same job UUID: another jkey */
	{ 1000, 1, 1001, 1, false },
	/* same user, another job: another jkey */
	{ 1000, 1, 1000, 2, false },
	/* root is a user like the others */
	{ 0, 1, 1000, 1, false },
	/* both differ */
	{ 1000, 1, 1001, 2, false },
};

static void hfi_jkey_pairs_test(struct kunit *test)
{
	u8 ua[HFI_UUID_LEN], ub[HFI_UUID_LEN];
	unsigned int i;
	u16 ja, jb;

	for (i = 0; i < ARRAY_SIZE(hfi_pair_cases); i++) {
		const struct hfi_pair_case *pc = &hfi_pair_cases[i];
		struct hfi_jkey_table *t = hfi_test_table(test);

		hfi_test_uuid(ua, pc->uuid_a);
		hfi_test_uuid(ub, pc->uuid_b);
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, pc->uid_a, ua, &ja),
				0);
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, pc->uid_b, ub, &jb),
				0);
		KUNIT_EXPECT_NE_MSG(test, ja, 0, "row %u", i);
		KUNIT_EXPECT_NE_MSG(test, jb, 0, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, ja == jb, pc->same, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, hfi_jkey_table_refs(t, ja),
				    pc->same ? 2U : 1U, "row %u", i);
		hfi_jkey_table_put(t, jb);
		hfi_jkey_table_put(t, ja);
		KUNIT_EXPECT_EQ_MSG(test, hfi_jkey_table_refs(t, ja), 0U,
				    "row %u", i);
		hfi_jkey_table_destroy(t);
	}
}

/*
 * Forced collisions: pairs found by search to derive the same jkey. The
 * second live one probes to the next free value, a third to the one after;
 * probing wraps from 0xffff to 1; releasing a pair frees its value for the
 * next pair that derives it, while a pair that stays live keeps its jkey.
 */
struct hfi_collide_case {
	u16 derived;	/* jkey all three uuids derive */
	u16 second;	/* where the second live pair lands */
	u16 third;	/* and the third */
};

static const struct hfi_collide_case hfi_collide_cases[] = {
	/* in the middle of the space */
	{ 0x1234, 0x1235, 0x1236 },
	/* at the top: the third wraps past 0xffff to 1, skipping 0 */
	{ 0xfffe, 0xffff, 1 },
	/* at the very end: the second already wraps */
	{ 0xffff, 1, 2 },
};

static void hfi_jkey_collide_test(struct kunit *test)
{
	const u32 uid = 4242;
	u8 ua[HFI_UUID_LEN], ub[HFI_UUID_LEN], uc[HFI_UUID_LEN];
	unsigned int i;
	u32 na, nb, nc;
	u16 ja, jb, jc, j;

	for (i = 0; i < ARRAY_SIZE(hfi_collide_cases); i++) {
		const struct hfi_collide_case *cc = &hfi_collide_cases[i];
		struct hfi_jkey_table *t = hfi_test_table(test);

		KUNIT_ASSERT_TRUE(test, hfi_test_find_uuid(uid, cc->derived,
							   0, ua, &na));
		KUNIT_ASSERT_TRUE(test, hfi_test_find_uuid(uid, cc->derived,
							   na + 1, ub, &nb));
		KUNIT_ASSERT_TRUE(test, hfi_test_find_uuid(uid, cc->derived,
							   nb + 1, uc, &nc));

		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, uid, ua, &ja), 0);
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, uid, ub, &jb), 0);
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, uid, uc, &jc), 0);
		KUNIT_EXPECT_EQ_MSG(test, ja, cc->derived, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, jb, cc->second, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, jc, cc->third, "row %u", i);

		/* a live pair keeps its jkey when an earlier one goes */
		hfi_jkey_table_put(t, ja);
		KUNIT_EXPECT_EQ_MSG(test, hfi_jkey_table_refs(t, ja), 0U,
				    "row %u", i);
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, uid, uc, &j), 0);
		KUNIT_EXPECT_EQ_MSG(test, j, jc, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, hfi_jkey_table_refs(t, jc), 2U,
				    "row %u", i);

		/* the freed value goes to the next pair deriving it */
		KUNIT_ASSERT_EQ(test, hfi_jkey_table_get(t, uid, ua, &j), 0);
		KUNIT_EXPECT_EQ_MSG(test, j, cc->derived, "row %u", i);

		hfi_jkey_table_put(t, j);
		hfi_jkey_table_put(t, jc);
		hfi_jkey_table_put(t, jc);
		hfi_jkey_table_put(t, jb);
		KUNIT_EXPECT_TRUE_MSG(test, xa_empty(&t->used), "row %u", i);
		hfi_jkey_table_destroy(t);
	}
}

static const struct kfab_param_range hfi_param_ranges[] = {
	{ &hfi_ctxts_per_unit, 1, 160, false },
	{ &hfi_rhq_entries, 64, 16384, true },
	{ &hfi_eager_count, 16, 4096, true },
	{ &hfi_eager_size, PAGE_SIZE, 65536, true },
	/* 0: RLIMIT_MEMLOCK only; the upper bound is 1 TiB */
	{ &hfi_pin_limit_mb, 0, 1048576, false },
};

static void hfi_param_uint_test(struct kunit *test)
{
	kfab_count_param_test(test, &hfi_num_units);
	kfab_param_ranges_test(test, hfi_param_ranges,
			       ARRAY_SIZE(hfi_param_ranges));
}

#define MIB_PAGES	((u64)SZ_1M >> PAGE_SHIFT)

struct hfi_limit_case {
	unsigned int mb;
	u64 pages;
};

static const struct hfi_limit_case hfi_limit_cases[] = {
	/* 0 stays 0: no limit */
	{ 0, 0 },
	/* one MiB */
	{ 1, MIB_PAGES },
	/* the default, 1 GiB */
	{ 1024, 1024 * MIB_PAGES },
	/* the largest value, 1 TiB: no overflow */
	{ 1048576, 1048576 * MIB_PAGES },
	/* a value no parameter takes still does not overflow */
	{ UINT_MAX, (u64)UINT_MAX * MIB_PAGES },
};

static void hfi_pin_limit_pages_test(struct kunit *test)
{
	KFAB_EXPECT_ROWS(test, hfi_limit_cases, hfi_pin_limit_pages, mb, pages);
}

struct hfi_fits_case {
	u64 pinned;
	u64 npages;
	u64 limit;
	bool fits;
};

static const struct hfi_fits_case hfi_fits_cases[] = {
	/* no limit: anything goes */
	{ U64_MAX, U64_MAX, 0, true },
	/* the first page under a 1 MiB limit */
	{ 0, 1, MIB_PAGES, true },
	/* exactly the limit in one go */
	{ 0, MIB_PAGES, MIB_PAGES, true },
	/* one page more than the limit in one go */
	{ 0, MIB_PAGES + 1, MIB_PAGES, false },
	/* filling up to the limit */
	{ MIB_PAGES - 1, 1, MIB_PAGES, true },
	/* one page over, the limit reached */
	{ MIB_PAGES, 1, MIB_PAGES, false },
	/* npages near 2^64: pinned + npages would wrap to a small number */
	{ 2, U64_MAX - 1, MIB_PAGES, false },
	/* pinned near 2^64 (cannot happen, still refused) */
	{ U64_MAX, 1, MIB_PAGES, false },
	/* a zero-page request always fits (never reaches here: length 0) */
	{ MIB_PAGES, 0, MIB_PAGES, true },
	/* 1 TiB limit, 1 TiB at once */
	{ 0, 1048576 * MIB_PAGES, 1048576 * MIB_PAGES, true },
};

static void hfi_pin_fits_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(hfi_fits_cases); i++) {
		const struct hfi_fits_case *fc = &hfi_fits_cases[i];

		KUNIT_EXPECT_EQ_MSG(test,
				    hfi_pin_fits(fc->pinned, fc->npages,
						 fc->limit),
				    fc->fits, "row %u", i);
	}
}

/* The contexts of a fake unit for the listing cases. */
struct hfi_list_slot {
	bool used;
	u32 uid;
	bool dead;
};

static const struct hfi_list_slot hfi_list_slots[] = {
	/* 0: free */
	{ false, 0, false },
	/* 1: user 1000's */
	{ true, 1000, false },
	/* 2: user 1001's */
	{ true, 1001, false },
	/* 3: user 1000's, being released */
	{ true, 1000, true },
	/* 4: user 1000's */
	{ true, 1000, false },
	/* 5: root's */
	{ true, 0, false },
};

#define HFI_LIST_NSLOTS		ARRAY_SIZE(hfi_list_slots)

struct hfi_list_case {
	u32 uid;
	u32 room;
	u32 total;
	u32 ctxts[2];	/* the first min(room, total) entries */
};

static const struct hfi_list_case hfi_list_cases[] = {
	/* free, foreign and released slots are skipped */
	{ 1000, HFI_LIST_NSLOTS, 2, { 1, 4 } },
	/* room for one: the lowest number, the total still counted */
	{ 1000, 1, 2, { 1 } },
	/* no room: only counted */
	{ 1000, 0, 2, { } },
	/* another user sees only its own */
	{ 1001, HFI_LIST_NSLOTS, 1, { 2 } },
	/* root is a user like the others */
	{ 0, HFI_LIST_NSLOTS, 1, { 5 } },
	/* a user with no context */
	{ 2000, HFI_LIST_NSLOTS, 0, { } },
};

struct hfi_list_unit {
	struct hfi_unit unit;
	struct hfi_ctxt *slots[HFI_LIST_NSLOTS];
	struct hfi_ctxt ctxts[HFI_LIST_NSLOTS];
};

/* Puts what hfi_list_unit_init() took; safe on a partial init. */
static void hfi_list_unit_destroy(struct hfi_list_unit *lu)
{
	unsigned int i;

	for (i = 0; i < HFI_LIST_NSLOTS; i++) {
		kfab_qmem_put(lu->ctxts[i].q.ctrl);
		put_pid(lu->ctxts[i].owner);
	}
}

static struct hfi_list_unit *hfi_list_unit_init(struct kunit *test)
{
	struct hfi_list_unit *lu;
	unsigned int i;

	lu = kunit_kzalloc(test, sizeof(*lu), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lu);
	mutex_init(&lu->unit.lock);
	lu->unit.nctxts = HFI_LIST_NSLOTS;
	lu->unit.slots = lu->slots;
	for (i = 0; i < HFI_LIST_NSLOTS; i++) {
		struct hfi_ctxt *c = &lu->ctxts[i];

		if (!hfi_list_slots[i].used)
			continue;
		kref_init(&c->ref);
		kfab_qobj_init(&c->q, &lu->unit.kc);
		c->unit = &lu->unit;
		c->ctxt = i;
		c->jkey = 0x100 + i;
		c->pkey = KFAB_HFI_PKEY_DEFAULT;
		c->sl = i;
		c->uid = KUIDT_INIT(hfi_list_slots[i].uid);
		c->q.dead = hfi_list_slots[i].dead;
		c->rhq_entries = 64;
		c->eager_count = 16;
		c->eager_size = PAGE_SIZE;
		c->owner = get_task_pid(current, PIDTYPE_TGID);
		c->q.ctrl = kfab_qmem_alloc(PAGE_SIZE);
		if (!c->q.ctrl) {
			hfi_list_unit_destroy(lu);
			KUNIT_ASSERT_FAILURE(test, "no queue memory");
		}
		lu->slots[i] = c;
	}
	return lu;
}

static void hfi_list_filter_test(struct kunit *test)
{
	struct kfab_hfi_ctxt_entry ents[HFI_LIST_NSLOTS];
	struct hfi_list_unit *lu = hfi_list_unit_init(test);
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(hfi_list_cases); i++) {
		const struct hfi_list_case *lc = &hfi_list_cases[i];
		u32 total, filled;

		memset(ents, 0xff, sizeof(ents));
		mutex_lock(&lu->unit.lock);
		total = hfi_list_ctxts_locked(&lu->unit, KUIDT_INIT(lc->uid),
					      ents, lc->room);
		mutex_unlock(&lu->unit.lock);
		KUNIT_EXPECT_EQ_MSG(test, total, lc->total, "row %u", i);
		filled = min(total, lc->room);
		for (j = 0; j < filled; j++)
			KUNIT_EXPECT_EQ_MSG(test, ents[j].ctxt, lc->ctxts[j],
					    "row %u entry %u", i, j);
		/* nothing written past the room given */
		for (j = lc->room; j < HFI_LIST_NSLOTS; j++)
			KUNIT_EXPECT_EQ_MSG(test, ents[j].ctxt, U32_MAX,
					    "row %u entry %u", i, j);
	}
	hfi_list_unit_destroy(lu);
}

/* Every field of an entry, from a context with peers, TIDs and drops. */
static void hfi_list_entry_test(struct kunit *test)
{
	struct hfi_list_unit *lu = hfi_list_unit_init(test);
	struct hfi_ctxt *c = lu->slots[2];
	struct kfab_hfi_ctxt_entry e;
	struct kfab_hfi_ctrl *ctrl = hfi_ctxt_ctrl(c);

	kref_get(&c->ref);	/* two peer handles */
	kref_get(&c->ref);
	c->ntids = 3;
	c->pinned_pages = 12;
	ctrl->armed = 1;
	ctrl->rhq_full_drops = 5;
	ctrl->eager_full_drops = 6;
	ctrl->injected_drops = 7;

	memset(&e, 0xff, sizeof(e));
	mutex_lock(&lu->unit.lock);
	KUNIT_EXPECT_EQ(test, hfi_list_ctxts_locked(&lu->unit, KUIDT_INIT(1001),
						    &e, 1), 1U);
	mutex_unlock(&lu->unit.lock);
	KUNIT_EXPECT_EQ(test, e.ctxt, 2U);
	KUNIT_EXPECT_EQ(test, e.jkey, 0x102U);
	KUNIT_EXPECT_EQ(test, e.pkey, KFAB_HFI_PKEY_DEFAULT);
	KUNIT_EXPECT_EQ(test, e.sl, 2);
	KUNIT_EXPECT_EQ(test, e.pad0, 0);
	/* the test's own thread group assigned it, so it is visible */
	KUNIT_EXPECT_EQ(test, e.pid, task_tgid_vnr(current));
	KUNIT_EXPECT_EQ(test, e.flags, KFAB_HFI_CTXT_ARMED);
	KUNIT_EXPECT_EQ(test, e.peer_refs, 2U);
	KUNIT_EXPECT_EQ(test, e.rhq_entries, 64U);
	KUNIT_EXPECT_EQ(test, e.eager_count, 16U);
	KUNIT_EXPECT_EQ(test, e.eager_size, PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, e.ntids, 3U);
	KUNIT_EXPECT_EQ(test, e.tid_pages, 12ULL);
	KUNIT_EXPECT_EQ(test, e.rhq_full_drops, 5ULL);
	KUNIT_EXPECT_EQ(test, e.eager_full_drops, 6ULL);
	KUNIT_EXPECT_EQ(test, e.injected_drops, 7ULL);
	KUNIT_EXPECT_EQ(test, e.reserved[0], 0ULL);
	KUNIT_EXPECT_EQ(test, e.reserved[1], 0ULL);
	hfi_list_unit_destroy(lu);
}

static struct kunit_case hfi_test_cases[] = {
	KUNIT_CASE(hfi_jkey_fold_test),
	KUNIT_CASE(hfi_jkey_next_test),
	KUNIT_CASE(hfi_jkey_never_zero_test),
	KUNIT_CASE(hfi_jkey_keyed_test),
	KUNIT_CASE(hfi_jkey_pairs_test),
	KUNIT_CASE(hfi_jkey_collide_test),
	KUNIT_CASE(hfi_param_uint_test),
	KUNIT_CASE(hfi_pin_limit_pages_test),
	KUNIT_CASE(hfi_pin_fits_test),
	KUNIT_CASE(hfi_list_filter_test),
	KUNIT_CASE(hfi_list_entry_test),
	{}
};

KFAB_KUNIT_SUITE(hfi, "kfab_hfi", "KUnit tests for kfab_hfi");
