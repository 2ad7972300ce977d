// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of kfab_core: range arithmetic, the handle table, queue
 * memory references and the mmap table, peer handles and the objects they
 * name, the ioctl table, its argument checks and device lookup, eventfd
 * and copy argument checks.
 *
 * Pinned regions are made with kfab_pinned_test_alloc(): no pages, no mm,
 * only a page count raised in a gauge, so that every release is visible
 * as the gauge going back down.
 */
#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/module.h>
#include <linux/numa.h>
#include <linux/string.h>

#include "kfab_kunit.h"

/* kfab_range_check */

struct kfab_range_case {
	u64 addr;
	u64 len;
	int ret;
};

static const struct kfab_range_case kfab_range_check_cases[] = {
	/* zero length: nothing to register */
	{ 0, 0, -EINVAL },
	/* zero length at an ordinary address */
	{ 0x10000, 0, -EINVAL },
	/* one byte at address 0 */
	{ 0, 1, 0 },
	/* one whole page */
	{ PAGE_SIZE, PAGE_SIZE, 0 },
	/* ends at U64_MAX exactly: the last byte is U64_MAX - 1 */
	{ U64_MAX - 1, 1, 0 },
	/* the byte at U64_MAX: the end would be 2^64, which wraps */
	{ U64_MAX, 1, -EINVAL },
	/* the last page of the space: its end is 2^64 */
	{ U64_MAX - PAGE_SIZE + 1, PAGE_SIZE, -EINVAL },
	/* everything but the last byte */
	{ 0, U64_MAX, 0 },
	/* wraps to 0 */
	{ 1, U64_MAX, -EINVAL },
	/* wraps far */
	{ U64_MAX, U64_MAX, -EINVAL },
};

static void kfab_range_check_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kfab_range_check_cases); i++) {
		const struct kfab_range_case *c = &kfab_range_check_cases[i];

		KUNIT_EXPECT_EQ_MSG(test, kfab_range_check(c->addr, c->len),
				    c->ret, "row %u: addr %#llx len %#llx", i,
				    c->addr, c->len);
	}
}

/* kfab_range_npages */

struct kfab_npages_case {
	u64 addr;
	u64 len;
	unsigned long npages;
};

static const struct kfab_npages_case kfab_npages_cases[] = {
	/* zero length spans no page */
	{ 0, 0, 0 },
	/* one byte */
	{ 0, 1, 1 },
	/* exactly one aligned page */
	{ 0, PAGE_SIZE, 1 },
	/* one byte into the next page */
	{ 0, PAGE_SIZE + 1, 2 },
	/* the last byte of a page */
	{ PAGE_SIZE - 1, 1, 1 },
	/* two bytes across a page boundary */
	{ PAGE_SIZE - 1, 2, 2 },
	/* the rest of the first page from byte 1 */
	{ 1, PAGE_SIZE - 1, 1 },
	/* a page's worth, misaligned: touches two pages */
	{ 1, PAGE_SIZE, 2 },
	/* ten pages starting mid-page: eleven */
	{ 3 * PAGE_SIZE + 0x345, 10 * PAGE_SIZE, 11 },
	/* ten aligned pages */
	{ 3 * PAGE_SIZE, 10 * PAGE_SIZE, 10 },
	/* ends at U64_MAX: no overflow in the arithmetic */
	{ U64_MAX - PAGE_SIZE, PAGE_SIZE, 2 },
	/* inside the last page of the space */
	{ U64_MAX - PAGE_SIZE + 1, PAGE_SIZE - 1, 1 },
};

static void kfab_range_npages_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kfab_npages_cases); i++) {
		const struct kfab_npages_case *c = &kfab_npages_cases[i];

		KUNIT_EXPECT_EQ_MSG(test, kfab_range_npages(c->addr, c->len),
				    c->npages, "row %u: addr %#llx len %#llx",
				    i, c->addr, c->len);
	}
}

/* kfab_range_within */

struct kfab_within_case {
	u64 size;
	u64 offset;
	u64 len;
	int ret;
};

static const struct kfab_within_case kfab_within_cases[] = {
	/* the whole region */
	{ PAGE_SIZE, 0, PAGE_SIZE, 0 },
	/* one byte beyond the end */
	{ PAGE_SIZE, 0, PAGE_SIZE + 1, -EINVAL },
	/* all but the first byte */
	{ PAGE_SIZE, 1, PAGE_SIZE - 1, 0 },
	/* shifted by one: the last byte is out */
	{ PAGE_SIZE, 1, PAGE_SIZE, -EINVAL },
	/* empty, at the very end */
	{ PAGE_SIZE, PAGE_SIZE, 0, 0 },
	/* empty, past the end */
	{ PAGE_SIZE, PAGE_SIZE + 1, 0, -EINVAL },
	/* empty region, empty access */
	{ 0, 0, 0, 0 },
	/* empty region, one byte */
	{ 0, 0, 1, -EINVAL },
	/* offset + len wraps */
	{ U64_MAX, U64_MAX, 1, -EINVAL },
	/* wraps to 0, which is <= size: must still fail */
	{ U64_MAX, 1, U64_MAX, -EINVAL },
	/* the largest possible region, whole */
	{ U64_MAX, 0, U64_MAX, 0 },
};

static void kfab_range_within_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(kfab_within_cases); i++) {
		const struct kfab_within_case *c = &kfab_within_cases[i];

		KUNIT_EXPECT_EQ_MSG(test,
				    kfab_range_within(c->size, c->offset, c->len),
				    c->ret, "row %u: size %#llx off %#llx len %#llx",
				    i, c->size, c->offset, c->len);
	}
}

/* Handle table */

static struct kfab_pinned *kfab_test_region(struct kunit *test,
					    unsigned long npages,
					    atomic64_t *gauge)
{
	struct kfab_pinned *p = kfab_pinned_test_alloc(npages, gauge);

	KUNIT_ASSERT_NOT_NULL(test, p);
	return p;
}

/* Add a new region of @npages to @h; its handle. */
static u32 kfab_test_add(struct kunit *test, struct kfab_handles *h,
			 unsigned long npages, atomic64_t *gauge)
{
	struct kfab_pinned *p = kfab_test_region(test, npages, gauge);
	u32 handle = 0;
	int ret;

	ret = kfab_handles_add(h, p, &handle);
	if (ret)
		kfab_pinned_put(p);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return handle;
}

static void kfab_handles_basic_test(struct kunit *test)
{
	atomic64_t gauge = ATOMIC64_INIT(0);
	struct kfab_handles h;
	struct kfab_pinned *p, *q;
	u32 handle = 0;

	kfab_handles_init(&h);
	p = kfab_test_region(test, 3, &gauge);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 3);

	KUNIT_ASSERT_EQ(test, kfab_handles_add(&h, p, &handle), 0);
	KUNIT_EXPECT_GE(test, handle, 1U);
	KUNIT_EXPECT_LE(test, handle, U32_MAX >> 8);

	/* get: the same region and a new reference */
	q = kfab_handles_get(&h, handle);
	KUNIT_EXPECT_PTR_EQ(test, q, p);
	KUNIT_EXPECT_EQ(test, kref_read(&p->ref), 2U);
	kfab_pinned_put(q);
	KUNIT_EXPECT_EQ(test, kref_read(&p->ref), 1U);

	/* remove hands back the table's reference */
	q = kfab_handles_remove(&h, handle);
	KUNIT_EXPECT_PTR_EQ(test, q, p);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 3);

	/* double remove and get after remove: unknown */
	KUNIT_EXPECT_NULL(test, kfab_handles_remove(&h, handle));
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, handle));

	kfab_pinned_put(q);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 0);
	kfab_handles_destroy(&h);
}

static void kfab_handles_unknown_test(struct kunit *test)
{
	atomic64_t gauge = ATOMIC64_INIT(0);
	struct kfab_handles h;
	u32 handle;

	kfab_handles_init(&h);
	/* empty table */
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, 0));
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, 1));
	KUNIT_EXPECT_NULL(test, kfab_handles_remove(&h, 1));

	handle = kfab_test_add(test, &h, 1, &gauge);
	/* 0 is never a handle; neighbours and the extremes are unknown */
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, 0));
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, handle + 1));
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, U32_MAX));
	KUNIT_EXPECT_NULL(test, kfab_handles_remove(&h, 0));
	KUNIT_EXPECT_NULL(test, kfab_handles_remove(&h, U32_MAX));
	/* the known one survived all that */
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 1);

	kfab_handles_destroy(&h);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 0);
}

static void kfab_handles_no_reuse_test(struct kunit *test)
{
	atomic64_t gauge = ATOMIC64_INIT(0);
	struct kfab_handles h;
	u32 h1, h2;

	kfab_handles_init(&h);
	h1 = kfab_test_add(test, &h, 1, &gauge);
	kfab_pinned_put(kfab_handles_remove(&h, h1));
	h2 = kfab_test_add(test, &h, 1, &gauge);
	/* a stale h1 must not name the new region */
	KUNIT_EXPECT_NE(test, h1, h2);
	KUNIT_EXPECT_NULL(test, kfab_handles_get(&h, h1));

	kfab_handles_destroy(&h);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 0);
}

static void kfab_handles_destroy_test(struct kunit *test)
{
	atomic64_t gauge = ATOMIC64_INIT(0);
	struct kfab_pinned *held;
	struct kfab_handles h;
	unsigned long i;
	u32 handle;

	kfab_handles_init(&h);
	/* regions of 1..8 pages: 36 in all */
	for (i = 1; i <= 8; i++)
		handle = kfab_test_add(test, &h, i, &gauge);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 36);

	/* a user still holds the last one across the destroy */
	held = kfab_handles_get(&h, handle);
	KUNIT_ASSERT_NOT_NULL(test, held);

	kfab_handles_destroy(&h);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 8);
	kfab_pinned_put(held);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 0);
}

/* Queue memory and the mmap table */

static void kfab_qmem_alloc_test(struct kunit *test)
{
	struct kfab_qmem *q;

	/* size 0 is refused */
	KUNIT_EXPECT_NULL(test, kfab_qmem_alloc(0));

	/* rounded up to whole pages, zeroed */
	q = kfab_qmem_alloc(3 * PAGE_SIZE + 1);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_EQ(test, q->size, (size_t)(4 * PAGE_SIZE));
	KUNIT_EXPECT_TRUE(test, PAGE_ALIGNED(q->vaddr));
	KUNIT_EXPECT_NULL(test, memchr_inv(q->vaddr, 0, q->size));
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 1U);

	kfab_qmem_get(q);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 2U);
	kfab_qmem_put(q);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 1U);
	/* the whole area is ours to write */
	memset(q->vaddr, 0xa5, q->size);
	kfab_qmem_put(q);
	/* NULL is tolerated */
	kfab_qmem_put(NULL);
}

static void kfab_mmap_table_test(struct kunit *test)
{
	struct kfab_mmap_table t;
	struct kfab_qmem *q;
	u64 off1, off2;

	q = kfab_qmem_alloc(PAGE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, q);
	kfab_mmap_table_init(&t);

	/* each entry takes a reference and gets its own page-aligned offset */
	KUNIT_ASSERT_EQ(test, kfab_mmap_table_add(&t, q, true, &off1), 0);
	KUNIT_ASSERT_EQ(test, kfab_mmap_table_add(&t, q, false, &off2), 0);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 3U);
	KUNIT_EXPECT_NE(test, off1, 0ULL);
	KUNIT_EXPECT_NE(test, off1, off2);
	KUNIT_EXPECT_EQ(test, off1 & ~PAGE_MASK, 0ULL);
	KUNIT_EXPECT_EQ(test, off2 & ~PAGE_MASK, 0ULL);

	/* del drops it once; unknown and unaligned offsets are ignored */
	kfab_mmap_table_del(&t, off1);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 2U);
	kfab_mmap_table_del(&t, off1);
	kfab_mmap_table_del(&t, off2 + 1);
	kfab_mmap_table_del(&t, 0);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 2U);

	/* destroy drops the rest; the creator's reference remains */
	kfab_mmap_table_destroy(&t);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 1U);
	kfab_qmem_put(q);
}

/* Argument checks that fail before any user memory is touched */

static void kfab_iov_import_test(struct kunit *test)
{
	struct kfab_iovec kiov[KFAB_IOV_MAX];
	u64 total;

	/* count 0 */
	KUNIT_EXPECT_EQ(test, kfab_iov_import(0, 0, kiov, &total), -EINVAL);
	/* one more than allowed */
	KUNIT_EXPECT_EQ(test, kfab_iov_import(0, KFAB_IOV_MAX + 1, kiov,
					      &total), -EINVAL);
	/* the largest count */
	KUNIT_EXPECT_EQ(test, kfab_iov_import(0, U32_MAX, kiov, &total),
			-EINVAL);
}

static void kfab_copy_checks_test(struct kunit *test)
{
	atomic64_t gauge = ATOMIC64_INIT(0);
	struct kfab_iovec iov = { .addr = 0, .len = 1 };
	struct kfab_iovec empty = { .addr = 0, .len = 0 };
	struct kfab_pinned *p;

	/* two pages, read-only: nothing below may reach the (absent) pages */
	p = kfab_test_region(test, 2, &gauge);

	/* into a region pinned without KFAB_PIN_WRITE */
	KUNIT_EXPECT_EQ(test, kfab_copy_to_pinned(p, 0, &iov, 1, 1), -EPERM);
	/* out of bounds, both directions */
	KUNIT_EXPECT_EQ(test, kfab_copy_from_pinned(p, 2 * PAGE_SIZE, &iov,
						    1, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, kfab_copy_from_pinned(p, U64_MAX, &iov, 1, 1),
			-EINVAL);
	p->flags = KFAB_PIN_WRITE;
	KUNIT_EXPECT_EQ(test, kfab_copy_to_pinned(p, 2 * PAGE_SIZE - 1, &iov,
						  1, 2), -EINVAL);
	/* an iovec longer than the total it was summed into */
	iov.len = 5;
	KUNIT_EXPECT_EQ(test, kfab_copy_to_pinned(p, 0, &iov, 1, 1), -EINVAL);
	/* empty copy at the very end: nothing to do */
	KUNIT_EXPECT_EQ(test, kfab_copy_to_pinned(p, 2 * PAGE_SIZE, &empty,
						  1, 0), 0);

	kfab_pinned_put(p);
	KUNIT_EXPECT_EQ(test, atomic64_read(&gauge), 0);
}

/* eventfd */

static void kfab_eventfd_test(struct kunit *test)
{
	struct kfab_eventfd e;
	u32 armed;

	kfab_eventfd_init(&e);
	/* fd < -1 */
	KUNIT_EXPECT_EQ(test, kfab_eventfd_set(&e, -2), -EINVAL);
	KUNIT_EXPECT_EQ(test, kfab_eventfd_set(&e, INT_MIN), -EINVAL);
	/* not an open fd */
	KUNIT_EXPECT_EQ(test, kfab_eventfd_set(&e, INT_MAX), -EBADF);
	/* -1 clears, also when nothing is set */
	KUNIT_EXPECT_EQ(test, kfab_eventfd_set(&e, -1), 0);
	KUNIT_EXPECT_FALSE(test, kfab_eventfd_signal(&e));

	/* armed: cleared by the wakeup even with nobody to signal */
	armed = 1;
	KUNIT_EXPECT_FALSE(test, kfab_eventfd_wake_armed(&armed, &e));
	KUNIT_EXPECT_EQ(test, armed, 0U);
	/* not armed: left alone */
	KUNIT_EXPECT_FALSE(test, kfab_eventfd_wake_armed(&armed, &e));
	KUNIT_EXPECT_EQ(test, armed, 0U);

	kfab_eventfd_release(&e);
}

/* Who reaches a peer's object, and when a copy into it wakes its owner. */
static void kfab_qobj_test(struct kunit *test)
{
	struct kfab_cdev *own = kunit_kzalloc(test, sizeof(*own), GFP_KERNEL);
	struct kfab_cdev *kc = kunit_kzalloc(test, sizeof(*kc), GFP_KERNEL);
	struct kfab_qobj q;
	u32 armed = 1;

	KUNIT_ASSERT_NOT_NULL(test, own);
	KUNIT_ASSERT_NOT_NULL(test, kc);
	own->state = KFAB_STATE_ACTIVE;
	kc->state = KFAB_STATE_ACTIVE;
	kfab_qobj_init(&q, kc);
	q.armed = &armed;

	mutex_lock(&q.lock);
	KUNIT_EXPECT_EQ(test, kfab_qobj_reachable(&q, own), 0);
	/* either device down */
	kc->state = KFAB_STATE_DOWN;
	KUNIT_EXPECT_EQ(test, kfab_qobj_reachable(&q, own), -ENETDOWN);
	kc->state = KFAB_STATE_ACTIVE;
	own->state = KFAB_STATE_DOWN;
	KUNIT_EXPECT_EQ(test, kfab_qobj_reachable(&q, own), -ENETDOWN);
	mutex_unlock(&q.lock);

	/* live: the wakeup takes the armed word, with nobody to signal */
	kfab_qobj_transferred(&q, 1, false);
	KUNIT_EXPECT_EQ(test, armed, 1U);
	kfab_qobj_transferred(&q, 1, true);
	KUNIT_EXPECT_EQ(test, armed, 0U);
	KUNIT_EXPECT_EQ(test, atomic64_read(&kc->notifies), 0LL);

	/* dead: gone before down, and its armed word is left alone */
	kfab_qobj_kill(&q);
	mutex_lock(&q.lock);
	KUNIT_EXPECT_EQ(test, kfab_qobj_reachable(&q, own), -ECONNRESET);
	mutex_unlock(&q.lock);
	armed = 1;
	kfab_qobj_transferred(&q, 1, true);
	KUNIT_EXPECT_EQ(test, armed, 1U);
	kfab_qobj_destroy(&q);
}

/* Link pacing arithmetic: bytes * 8 / Mb/s, in nanoseconds. */
static void kfab_link_ns_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, kfab_link_ns(1 << 20, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, kfab_link_ns(0, 1000), 0ULL);
	/* 1 MB at 8000 Mb/s (1 GB/s): 1 ms */
	KUNIT_EXPECT_EQ(test, kfab_link_ns(1000000, 8000), 1000000ULL);
	/* 1 byte at 1 Mb/s: 8 us */
	KUNIT_EXPECT_EQ(test, kfab_link_ns(1, 1), 8000ULL);
	/* the largest pinned region at the slowest rate does not overflow */
	KUNIT_EXPECT_EQ(test, kfab_link_ns(1ULL << 47, 1),
			(1ULL << 47) * 8000);
}

struct kfab_node_case {
	int node;
	bool valid;
};

static const struct kfab_node_case kfab_node_cases[] = {
	/* -1: no node */
	{ NUMA_NO_NODE, true },
	/* node 0 is always online */
	{ 0, true },
	/* below -1 */
	{ -2, false },
	/* beyond any node id */
	{ MAX_NUMNODES, false },
	/* far beyond */
	{ INT_MAX, false },
	/* far below */
	{ INT_MIN, false },
};

/* The NUMA node parameters of the device modules. */
static void kfab_param_node_test(struct kunit *test)
{
	KFAB_EXPECT_ROWS(test, kfab_node_cases, kfab_param_node_valid, node,
			 valid);
}

/* Explicit entries as given; past them, online nodes in turn. */
static void kfab_param_nodes_test(struct kunit *test)
{
	static const int nodes[] = { NUMA_NO_NODE, NUMA_NO_NODE, INT_MIN };
	int n;

	/* at most one entry a device, every entry valid */
	KUNIT_EXPECT_EQ(test, kfab_param_nodes_check("t", "devices", nodes, 2,
						     2), 0);
	KUNIT_EXPECT_EQ(test, kfab_param_nodes_check("t", "devices", nodes, 0,
						     1), 0);
	KUNIT_EXPECT_EQ(test, kfab_param_nodes_check("t", "devices", nodes, 2,
						     1), -EINVAL);
	KUNIT_EXPECT_EQ(test, kfab_param_nodes_check("t", "devices", nodes, 3,
						     8), -EINVAL);

	KUNIT_EXPECT_EQ(test, kfab_param_node(nodes, 2, 1), NUMA_NO_NODE);
	n = kfab_param_node(nodes, 2, 2);
	KUNIT_EXPECT_TRUE(test, n >= 0 && node_online(n));
	KUNIT_EXPECT_EQ(test, kfab_param_node(nodes, 0, 0), first_online_node);
	KUNIT_EXPECT_EQ(test, kfab_param_node(nodes, 0, num_online_nodes()),
			first_online_node);
}

/* A set of queues goes in and out of the table as one. */
static void kfab_mmap_table_n_test(struct kunit *test)
{
	struct kfab_mmap_table t;
	struct kfab_qmap maps[3];
	struct kfab_qmem *q[3];
	u64 off[3];
	int i;

	kfab_mmap_table_init(&t);
	for (i = 0; i < 3; i++) {
		q[i] = kfab_qmem_alloc(PAGE_SIZE);
		KUNIT_ASSERT_NOT_NULL(test, q[i]);
		maps[i] = (struct kfab_qmap){ q[i], i != 2 };
	}
	KUNIT_ASSERT_EQ(test, kfab_mmap_table_add_n(&t, maps, 3, off), 0);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, kref_read(&q[i]->ref), 2U);
		KUNIT_EXPECT_EQ(test, off[i] & ~PAGE_MASK, 0ULL);
	}
	KUNIT_EXPECT_NE(test, off[0], off[1]);
	KUNIT_EXPECT_NE(test, off[1], off[2]);

	/* the first two only: the third keeps its entry */
	kfab_mmap_table_del_n(&t, off, 2);
	KUNIT_EXPECT_EQ(test, kref_read(&q[0]->ref), 1U);
	KUNIT_EXPECT_EQ(test, kref_read(&q[1]->ref), 1U);
	KUNIT_EXPECT_EQ(test, kref_read(&q[2]->ref), 2U);
	/* none at all */
	KUNIT_EXPECT_EQ(test, kfab_mmap_table_add_n(&t, maps, 0, off), 0);
	kfab_mmap_table_del_n(&t, off, 0);

	kfab_mmap_table_destroy(&t);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, kref_read(&q[i]->ref), 1U);
		kfab_qmem_put(q[i]);
	}
}

/* Peer handles, with a qmem standing in for the peer's object. */

static void kfab_test_peer_put(void *obj)
{
	kfab_qmem_put(obj);
}

static void kfab_peers_test(struct kunit *test)
{
	struct kfab_mmap_table t;
	struct kfab_peers p;
	struct kfab_peer *peer;
	struct kfab_qmap maps[2];
	struct kfab_qmem *obj, *q;
	u32 h1, h2, h3;

	obj = kfab_qmem_alloc(PAGE_SIZE);
	q = kfab_qmem_alloc(PAGE_SIZE);
	KUNIT_ASSERT_NOT_NULL(test, obj);
	KUNIT_ASSERT_NOT_NULL(test, q);
	maps[0] = (struct kfab_qmap){ q, true };
	maps[1] = (struct kfab_qmap){ obj, false };
	kfab_mmap_table_init(&t);
	kfab_peers_init(&p, 2, kfab_test_peer_put);

	/* each handle owns one reference on obj, its maps one on each qmem */
	kfab_qmem_get(obj);
	peer = kfab_peer_map(&p, &t, obj, maps, 2, &h1);
	KUNIT_ASSERT_FALSE(test, IS_ERR(peer));
	KUNIT_EXPECT_NE(test, h1, 0U);
	KUNIT_EXPECT_EQ(test, peer->nmaps, 2U);
	KUNIT_EXPECT_NE(test, peer->offsets[0], peer->offsets[1]);
	kfab_qmem_get(obj);
	peer = kfab_peer_map(&p, &t, obj, maps, 1, &h2);
	KUNIT_ASSERT_FALSE(test, IS_ERR(peer));
	KUNIT_EXPECT_NE(test, h1, h2);
	KUNIT_EXPECT_EQ(test, p.count, 2U);
	/* creator + 2 handles + 1 map */
	KUNIT_EXPECT_EQ(test, kref_read(&obj->ref), 4U);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 3U);
	KUNIT_EXPECT_PTR_EQ(test, kfab_peer_obj(&p, h1), (void *)obj);
	KUNIT_EXPECT_NULL(test, kfab_peer_obj(&p, 0));
	KUNIT_EXPECT_NULL(test, kfab_peer_obj(&p, h2 + 1));

	/* full: the caller keeps its reference */
	kfab_qmem_get(obj);
	KUNIT_EXPECT_EQ(test, PTR_ERR(kfab_peer_map(&p, &t, obj, maps, 2,
						    &h3)), -ENOSPC);
	KUNIT_EXPECT_EQ(test, kref_read(&obj->ref), 5U);
	kfab_qmem_put(obj);

	/* unmap drops the handle's references; unknown handles -EINVAL */
	KUNIT_EXPECT_EQ(test, kfab_peer_unmap(&p, &t, h1), 0);
	KUNIT_EXPECT_EQ(test, kfab_peer_unmap(&p, &t, h1), -EINVAL);
	KUNIT_EXPECT_EQ(test, kfab_peer_unmap(&p, &t, 0), -EINVAL);
	KUNIT_EXPECT_NULL(test, kfab_peer_obj(&p, h1));
	KUNIT_EXPECT_EQ(test, p.count, 1U);
	KUNIT_EXPECT_EQ(test, kref_read(&obj->ref), 2U);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 2U);

	/* a freed slot is usable again, under a new handle */
	kfab_qmem_get(obj);
	peer = kfab_peer_map(&p, &t, obj, maps, 2, &h3);
	KUNIT_ASSERT_FALSE(test, IS_ERR(peer));
	KUNIT_EXPECT_NE(test, h3, h1);

	/* destroy drops what remains */
	kfab_peers_destroy(&p, &t);
	KUNIT_EXPECT_EQ(test, kref_read(&obj->ref), 1U);
	KUNIT_EXPECT_EQ(test, kref_read(&q->ref), 1U);
	kfab_mmap_table_destroy(&t);
	kfab_qmem_put(obj);
	kfab_qmem_put(q);
}

/* The ioctl table and the device set's lookup. */

static int kfab_test_ioctl(struct kfab_file *f, const void *in,
			   void __user *uarg)
{
	return 0;
}

static const struct kfab_ioctl kfab_test_ioctls[] = {
	{ 0x1234, kfab_test_ioctl },
	{ 0x5678, kfab_test_ioctl, KFAB_IOCTL_UNLOCKED },
};

/* An ioctl argument as kfab_abi.h lays them out. */
struct kfab_test_arg {
	u32 handle;
	u32 flags;
	u16 value;
	u8 pad0[6];
	u64 reserved[2];
};

#define KFAB_TEST_IOC	_IOWR(KFAB_IOC_MAGIC, 0xff, struct kfab_test_arg)

static const struct kfab_ioctl kfab_test_in_ioctl =
	KFAB_IOCTL_IN_PAD0(KFAB_TEST_IOC, kfab_test_ioctl, 0,
			   struct kfab_test_arg, 0x5);

struct kfab_ioctl_check_case {
	struct kfab_test_arg arg;
	int ret;
};

static const struct kfab_ioctl_check_case kfab_ioctl_check_cases[] = {
	/* all zero */
	{ { 0 }, 0 },
	/* the fields the handler checks are not the core's */
	{ { .handle = U32_MAX, .value = U16_MAX }, 0 },
	/* every defined flag */
	{ { .flags = 0x5 }, 0 },
	/* an unknown flag, alone or with known ones */
	{ { .flags = 0x2 }, -EINVAL },
	{ { .flags = 0x5 | BIT(31) }, -EINVAL },
	/* reserved, either word, any byte */
	{ { .reserved = { 1, 0 } }, -EINVAL },
	{ { .reserved = { 0, 1ULL << 63 } }, -EINVAL },
	/* pad0 (KFAB_IOCTL_IN_PAD0), first and last byte */
	{ { .pad0 = { 1 } }, -EINVAL },
	{ { .pad0 = { [5] = 0x80 } }, -EINVAL },
};

/* The flags and zero-field checks every ioctl argument goes through. */
static void kfab_ioctl_check_test(struct kunit *test)
{
	const struct kfab_ioctl *io = &kfab_test_in_ioctl;
	unsigned int i;

	KUNIT_EXPECT_EQ(test, io->in_size, sizeof(struct kfab_test_arg));
	for (i = 0; i < ARRAY_SIZE(kfab_ioctl_check_cases); i++)
		KUNIT_EXPECT_EQ_MSG(test,
				    kfab_ioctl_check(io,
						     &kfab_ioctl_check_cases[i].arg),
				    kfab_ioctl_check_cases[i].ret, "row %u", i);
}

/* A table whose argument is not its command's is refused at init. */
static void kfab_ioctls_valid_test(struct kunit *test)
{
	struct kfab_ioctl ios[2] = { kfab_test_in_ioctl, kfab_test_ioctls[0] };
	struct kfab_cdev_ops ops = { .ioctls = ios, .nioctls = 2 };

	KUNIT_EXPECT_TRUE(test, kfab_ioctls_valid(&ops));
	/* one byte short of the command's size */
	ios[0].in_size--;
	KUNIT_EXPECT_FALSE(test, kfab_ioctls_valid(&ops));
	/* a command that only returns data has nothing to read */
	ios[0] = kfab_test_in_ioctl;
	ios[0].cmd = _IOR(KFAB_IOC_MAGIC, 0xff, struct kfab_test_arg);
	KUNIT_EXPECT_FALSE(test, kfab_ioctls_valid(&ops));
}

static void kfab_ioctl_find_test(struct kunit *test)
{
	struct kfab_cdev_ops ops = {
		.ioctls = kfab_test_ioctls,
		.nioctls = ARRAY_SIZE(kfab_test_ioctls),
	};

	KUNIT_EXPECT_PTR_EQ(test, kfab_ioctl_find(&ops, 0x1234),
			    &kfab_test_ioctls[0]);
	KUNIT_EXPECT_PTR_EQ(test, kfab_ioctl_find(&ops, 0x5678),
			    &kfab_test_ioctls[1]);
	KUNIT_EXPECT_NULL(test, kfab_ioctl_find(&ops, 0));
	KUNIT_EXPECT_NULL(test, kfab_ioctl_find(&ops, 0x12345));
	ops.nioctls = 1;
	KUNIT_EXPECT_NULL(test, kfab_ioctl_find(&ops, 0x5678));
}

static void kfab_devset_get_test(struct kunit *test)
{
	struct kfab_cdev devs[2];
	struct kfab_devset s = {
		.count = 3,
		.n = 2,
		.devs = { &devs[0], &devs[1] },
	};

	KUNIT_EXPECT_PTR_EQ(test, kfab_devset_get(&s, 0), &devs[0]);
	KUNIT_EXPECT_PTR_EQ(test, kfab_devset_get(&s, 1), &devs[1]);
	/* reserved but not added, and far out */
	KUNIT_EXPECT_NULL(test, kfab_devset_get(&s, 2));
	KUNIT_EXPECT_NULL(test, kfab_devset_get(&s, U32_MAX));
	s.n = 0;
	KUNIT_EXPECT_NULL(test, kfab_devset_get(&s, 0));
}

static struct kunit_case kfab_core_test_cases[] = {
	KUNIT_CASE(kfab_range_check_test),
	KUNIT_CASE(kfab_range_npages_test),
	KUNIT_CASE(kfab_range_within_test),
	KUNIT_CASE(kfab_handles_basic_test),
	KUNIT_CASE(kfab_handles_unknown_test),
	KUNIT_CASE(kfab_handles_no_reuse_test),
	KUNIT_CASE(kfab_handles_destroy_test),
	KUNIT_CASE(kfab_qmem_alloc_test),
	KUNIT_CASE(kfab_mmap_table_test),
	KUNIT_CASE(kfab_iov_import_test),
	KUNIT_CASE(kfab_copy_checks_test),
	KUNIT_CASE(kfab_eventfd_test),
	KUNIT_CASE(kfab_qobj_test),
	KUNIT_CASE(kfab_link_ns_test),
	KUNIT_CASE(kfab_param_node_test),
	KUNIT_CASE(kfab_param_nodes_test),
	KUNIT_CASE(kfab_mmap_table_n_test),
	KUNIT_CASE(kfab_peers_test),
	KUNIT_CASE(kfab_ioctl_find_test),
	KUNIT_CASE(kfab_ioctl_check_test),
	KUNIT_CASE(kfab_ioctls_valid_test),
	KUNIT_CASE(kfab_devset_get_test),
	{}
};

KFAB_KUNIT_SUITE(kfab_core, "kfab_core", "KUnit tests for kfab_core");
