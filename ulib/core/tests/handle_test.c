// SPDX-License-Identifier: GPL-2.0
/*
 * handle_test: tables of handles (core/kfab_handle.h): objects handed out
 * lowest index first and each once, handles found while their object is
 * in use and of the kind asked, never after a put (the generation moves,
 * and wraps within its bits), exhaustion, reuse of what was put back,
 * quotas that bound what each user of one table holds.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "core/kfab_handle.h"
#include "tests/tap.h"

struct obj {
	struct kfab_handle h;
	uint64_t payload[3];
};

static void test_get_put(void)
{
	struct kfab_handles t;
	struct kfab_handle *h[5], *again;
	uint32_t handle, stale;
	int bad = 0;

	TAP_EQ(kfab_handles_init(&t, sizeof(struct obj), 4, 16), 0,
	       "a table of 4");
	for (int i = 0; i < 4; i++) {
		h[i] = kfab_handle_get(&t, 1);
		bad += !h[i] || h[i]->idx != (uint32_t)i || h[i]->kind != 1 ||
		       h[i] != kfab_handle_at(&t, (uint32_t)i);
	}
	TAP_EQ(bad, 0, "get: indices 0..3 in order, of the kind asked");
	TAP_OK(!kfab_handle_get(&t, 1), "get: none left");

	handle = kfab_handle_of(h[2], 16);
	TAP_OK(kfab_handle_lookup(&t, handle, 1) == h[2],
	       "lookup: the object of a live handle");
	TAP_OK(!kfab_handle_lookup(&t, handle, 2),
	       "lookup: another kind finds nothing");
	TAP_OK(!kfab_handle_lookup(&t, handle | 100, 1),
	       "lookup: an index past the table finds nothing");
	TAP_OK(!kfab_handle_lookup(&t, 0x10000 | h[2]->idx, 1),
	       "lookup: another generation finds nothing");
	TAP_OK(!kfab_handle_lookup(&t, handle, KFAB_HANDLE_FREE),
	       "lookup: kind FREE finds nothing");

	stale = handle;
	kfab_handle_put(&t, h[2]);
	TAP_OK(h[2]->kind == KFAB_HANDLE_FREE &&
	       !kfab_handle_lookup(&t, stale, 1), "put: its handle finds nothing");
	again = kfab_handle_get(&t, 1);
	TAP_OK(again == h[2] && kfab_handle_of(again, 16) != stale,
	       "get: the object put back, under another handle");
	TAP_OK(!kfab_handle_lookup(&t, stale, 1) &&
	       kfab_handle_lookup(&t, kfab_handle_of(again, 16), 1) == again,
	       "lookup: the old handle misses the object's next use");
	kfab_handles_fini(&t);
	TAP_OK(!t.objs && !t.n, "fini: empty");
}

/* 4 bits of generation (idx_bits 28): it wraps, the handle still fits. */
static void test_gen_wrap(void)
{
	struct kfab_handles t;
	struct kfab_handle *h = NULL;
	int bad = 0;

	TAP_EQ(kfab_handles_init(&t, sizeof(struct obj), 2, 28), 0,
	       "a table of 2 with 28 index bits");
	TAP_EQ(t.gen_mask, 0xf, "4 bits of generation");
	for (int i = 0; i < 40; i++) {
		h = kfab_handle_get(&t, 3);
		bad += h != kfab_handle_at(&t, 0) || h->gen != (i & 0xf) ||
		       kfab_handle_lookup(&t, kfab_handle_of(h, 28), 3) != h;
		kfab_handle_put(&t, h);
	}
	TAP_EQ(bad, 0, "40 uses of one object: the generation wraps at 16");
	kfab_handles_fini(&t);
	TAP_EQ(kfab_handles_init(&t, sizeof(struct obj), 65536, 16), 0,
	       "a table of 2^16 with 16 index bits");
	bad = 0;
	for (uint32_t i = 0; i < 65536; i++)
		bad += (h = kfab_handle_get(&t, 1)) != kfab_handle_at(&t, i) ||
		       kfab_handle_lookup(&t, kfab_handle_of(h, 16), 1) != h;
	TAP_EQ(bad, 0, "every object handed out once, found by its handle");
	kfab_handles_fini(&t);
}

/* Two quotas of 2 and uncounted gets share a table of 8. */
static void test_quota(void)
{
	struct kfab_handle_quota tx = { .max = 2 }, rx = { .max = 2 };
	struct kfab_handle *t0, *t1, *r0, *own;
	struct kfab_handles t;

	TAP_EQ(kfab_handles_init(&t, sizeof(struct obj), 8, 16), 0,
	       "a table of 8");
	t0 = kfab_handle_get_quota(&t, &tx, 1);
	t1 = kfab_handle_get_quota(&t, &tx, 1);
	TAP_OK(t0 && t1 && tx.used == 2, "quota tx: two gets, used 2");
	TAP_OK(!kfab_handle_get_quota(&t, &tx, 1) && tx.used == 2,
	       "quota tx: the third get is refused, used stays 2");
	r0 = kfab_handle_get_quota(&t, &rx, 2);
	own = kfab_handle_get_quota(&t, NULL, 3);
	TAP_OK(r0 && rx.used == 1 && own && tx.used == 2,
	       "a full tx quota leaves rx and uncounted gets alone");
	kfab_handle_put_quota(&t, &tx, t0);
	TAP_EQ(tx.used, 1, "quota tx: a put gives one back");
	t0 = kfab_handle_get_quota(&t, &tx, 1);
	TAP_OK(t0 && tx.used == 2, "quota tx: then a get succeeds again");
	kfab_handle_put_quota(&t, NULL, own);
	TAP_OK(tx.used == 2 && rx.used == 1,
	       "an uncounted put changes no quota");
	kfab_handle_put_quota(&t, &tx, t0);
	kfab_handle_put_quota(&t, &tx, t1);
	kfab_handle_put_quota(&t, &rx, r0);
	TAP_OK(!tx.used && !rx.used, "every put back: both quotas at 0");
	kfab_handles_fini(&t);
}

int main(void)
{
	tap_start("handle_test");
	test_get_put();
	test_gen_wrap();
	test_quota();
	return tap_done();
}
