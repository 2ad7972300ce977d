// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of kfab_efa: qkey and rkey generation, memory region access
 * rights, remote bounds and notifier events, module parameter validation,
 * the device_rdma knob and gids.
 *
 * The rkey cases run their own table, so they do not touch a device's.
 */

#include <kunit/test.h>
#include <linux/kernel.h>
#include <linux/limits.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "../kfab_kunit.h"
#include "efa.h"

#define EFA_TEST_KEYS		100000
#define EFA_TEST_RKEYS		4096

/* Many draws: never 0. */
static void efa_random_key_test(struct kunit *test)
{
	u32 n;

	for (n = 0; n < EFA_TEST_KEYS; n++)
		KUNIT_ASSERT_NE(test, efa_random_key(), 0U);
}

/* Every rkey of a table is non-zero, unique and names its entry. */
static void efa_rkey_insert_test(struct kunit *test)
{
	u32 *keys, n, i;
	struct xarray xa;
	unsigned long key;
	void *entry;

	keys = kunit_kcalloc(test, EFA_TEST_RKEYS, sizeof(*keys), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, keys);
	xa_init(&xa);
	for (n = 0; n < EFA_TEST_RKEYS; n++) {
		KUNIT_ASSERT_EQ(test, efa_rkey_insert(&xa, xa_mk_value(n),
						      &keys[n]), 0);
		KUNIT_ASSERT_NE(test, keys[n], 0U);
	}
	n = 0;
	xa_for_each(&xa, key, entry)
		n++;
	KUNIT_EXPECT_EQ(test, n, (u32)EFA_TEST_RKEYS);
	for (i = 0; i < EFA_TEST_RKEYS; i++)
		KUNIT_EXPECT_PTR_EQ(test, xa_load(&xa, keys[i]),
				    xa_mk_value(i));
	xa_destroy(&xa);
}

#define LW	KFAB_EFA_ACCESS_LOCAL_WRITE
#define RR	KFAB_EFA_ACCESS_REMOTE_READ
#define RW	KFAB_EFA_ACCESS_REMOTE_WRITE

struct efa_access_case {
	u32 access;
	bool valid;		/* for REG_MR */
	bool read;		/* a peer may RDMA READ it */
	bool write;		/* a peer may RDMA WRITE it */
	unsigned int pin;	/* kfab_pin() flags */
};

static const struct efa_access_case efa_access_cases[] = {
	/* local read only: registrable, no remote access */
	{ 0, true, false, false, 0 },
	/* local write: the pages must be pinned writable */
	{ LW, true, false, false, KFAB_PIN_WRITE },
	/* remote read alone pins read-only */
	{ RR, true, true, false, 0 },
	/* remote write without local write is refused, as in verbs */
	{ RW, false, false, true, KFAB_PIN_WRITE },
	{ RR | RW, false, true, true, KFAB_PIN_WRITE },
	/* local write with remote read */
	{ LW | RR, true, true, false, KFAB_PIN_WRITE },
	/* local and remote write */
	{ LW | RW, true, false, true, KFAB_PIN_WRITE },
	/* everything */
	{ KFAB_EFA_ACCESS_ALL, true, true, true, KFAB_PIN_WRITE },
	/* the first undefined bit */
	{ 0x8, false, false, false, 0 },
	/* an undefined bit next to valid ones */
	{ KFAB_EFA_ACCESS_ALL | 0x8, false, true, true, KFAB_PIN_WRITE },
	/* the top bit */
	{ 0x80000000, false, false, false, 0 },
};

static void efa_access_test(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(efa_access_cases); i++) {
		const struct efa_access_case *ac = &efa_access_cases[i];

		KUNIT_EXPECT_EQ_MSG(test, efa_reg_access_valid(ac->access),
				    ac->valid, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test,
				    efa_access_ok(KFAB_EFA_RDMA_READ,
						  ac->access),
				    ac->read, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test,
				    efa_access_ok(KFAB_EFA_RDMA_WRITE,
						  ac->access),
				    ac->write, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, efa_pin_flags(ac->access), ac->pin,
				    "row %u", i);
	}
}

/* An op that is neither READ nor WRITE has no right whatever the MR. */
static void efa_access_bad_op_test(struct kunit *test)
{
	static const u32 ops[] = { 2, 3, U32_MAX };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++)
		KUNIT_EXPECT_FALSE_MSG(test,
				       efa_access_ok(ops[i],
						     KFAB_EFA_ACCESS_ALL),
				       "op %u", ops[i]);
}

struct efa_remote_case {
	u64 mr_vaddr;
	u64 mr_length;
	u64 addr;
	u64 len;
	int ret;
	u64 offset;
};

static const struct efa_remote_case efa_remote_cases[] = {
	/* the whole MR */
	{ 0x10000, 0x3000, 0x10000, 0x3000, 0, 0 },
	/* a byte in the middle, MR not page aligned */
	{ 0x10123, 0x100, 0x10180, 1, 0, 0x5d },
	/* the last byte */
	{ 0x10000, 0x3000, 0x12fff, 1, 0, 0x2fff },
	/* one byte past the end */
	{ 0x10000, 0x3000, 0x12fff, 2, -EINVAL, 0 },
	/* starts one byte before the MR */
	{ 0x10000, 0x3000, 0xffff, 1, -EINVAL, 0 },
	/* starts right after it */
	{ 0x10000, 0x3000, 0x13000, 1, -EINVAL, 0 },
	/* nothing at the very end is inside */
	{ 0x10000, 0x3000, 0x13000, 0, 0, 0x3000 },
	/* nothing, just beyond, is not */
	{ 0x10000, 0x3000, 0x13001, 0, -EINVAL, 0 },
	/* a length that wraps the address space */
	{ 0x10000, 0x3000, 0x10001, U64_MAX, -EINVAL, 0 },
	/* an address far beyond: the offset does not wrap back in */
	{ 0x10000, 0x3000, U64_MAX, 1, -EINVAL, 0 },
	/* an MR ending at the top of the address space */
	{ U64_MAX - 0xfff, 0x1000, U64_MAX, 1, 0, 0xfff },
	/* address 0 below an MR at 0x1000 */
	{ 0x1000, 0x1000, 0, 0x1001, -EINVAL, 0 },
};

static void efa_remote_offset_test(struct kunit *test)
{
	unsigned int i;
	u64 offset;
	int ret;

	for (i = 0; i < ARRAY_SIZE(efa_remote_cases); i++) {
		const struct efa_remote_case *rc = &efa_remote_cases[i];

		offset = 0;
		ret = efa_remote_offset(rc->mr_vaddr, rc->mr_length, rc->addr,
					rc->len, &offset);
		KUNIT_EXPECT_EQ_MSG(test, ret, rc->ret, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, offset, rc->offset, "row %u", i);
	}
}

struct efa_event_case {
	enum mmu_notifier_event event;
	enum efa_mr_effect effect;
};

static const struct efa_event_case efa_event_cases[] = {
	/* munmap(), mremap(), mmap(MAP_FIXED) over it */
	{ MMU_NOTIFY_UNMAP, EFA_MR_STALE },
	/*
	 * MADV_DONTNEED and copy-on-write replace the pages; a huge page
	 * split (an munmap or mprotect nearby) and a failed collapse keep
	 * them
	 */
	{ MMU_NOTIFY_CLEAR, EFA_MR_CHECK },
	/* pinned pages do not move; an attempt still notifies */
	{ MMU_NOTIFY_MIGRATE, EFA_MR_CHECK },
	/* device-exclusive access */
	{ MMU_NOTIFY_EXCLUSIVE, EFA_MR_CHECK },
	/* mprotect(): the pages stay */
	{ MMU_NOTIFY_PROTECTION_VMA, EFA_MR_KEEP },
	/* fork() write-protects for copy-on-write; pinned pages are copied */
	{ MMU_NOTIFY_PROTECTION_PAGE, EFA_MR_KEEP },
	{ MMU_NOTIFY_SOFT_DIRTY, EFA_MR_KEEP },
	/* the mm goes away; its unmap follows as UNMAP */
	{ MMU_NOTIFY_RELEASE, EFA_MR_KEEP },
};

static void efa_event_effect_test(struct kunit *test)
{
	KFAB_EXPECT_ROWS(test, efa_event_cases, efa_event_effect, event, effect);
}

static const struct kfab_param_range efa_param_ranges[] = {
	{ &efa_qps_per_device, 1, 1024, false },
	{ &efa_rx_entries, 16, 4096, true },
	{ &efa_mtu, PAGE_SIZE, 65536, true },
	{ &efa_max_mrs, 1, 65536, false },
};

static void efa_param_uint_test(struct kunit *test)
{
	kfab_count_param_test(test, &efa_num_devices);
	kfab_param_ranges_test(test, efa_param_ranges,
			       ARRAY_SIZE(efa_param_ranges));
}

struct efa_caps_case {
	const char *buf;
	int ret;
	u32 caps;
};

static const struct efa_caps_case efa_caps_cases[] = {
	/* the four names */
	{ "read write", 0, KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE },
	{ "read", 0, KFAB_EFA_RDMA_CAP_READ },
	{ "write", 0, KFAB_EFA_RDMA_CAP_WRITE },
	{ "none", 0, 0 },
	/* with the newline echo adds */
	{ "read write\n", 0,
	  KFAB_EFA_RDMA_CAP_READ | KFAB_EFA_RDMA_CAP_WRITE },
	{ "none\n", 0, 0 },
	/* the other order is not one of them */
	{ "write read", -EINVAL, 0 },
	/* nor two spaces, a prefix, another case or a number */
	{ "read  write", -EINVAL, 0 },
	{ "rea", -EINVAL, 0 },
	{ "Read", -EINVAL, 0 },
	{ "3", -EINVAL, 0 },
	/* nor nothing */
	{ "", -EINVAL, 0 },
	{ "\n", -EINVAL, 0 },
};

static void efa_rdma_caps_test(struct kunit *test)
{
	unsigned int i;
	u32 caps;
	int ret;

	for (i = 0; i < ARRAY_SIZE(efa_caps_cases); i++) {
		const struct efa_caps_case *cc = &efa_caps_cases[i];

		caps = 0xdead;
		ret = efa_rdma_caps_parse(cc->buf, &caps);
		KUNIT_EXPECT_EQ_MSG(test, ret, cc->ret, "row %u", i);
		if (!ret)
			KUNIT_EXPECT_EQ_MSG(test, caps, cc->caps, "row %u", i);
		else
			KUNIT_EXPECT_EQ_MSG(test, caps, 0xdeadU, "row %u", i);
	}
}

/* What is shown parses back to the same bits; nothing else is shown. */
static void efa_rdma_caps_name_test(struct kunit *test)
{
	const char *name;
	u32 caps, back;

	for (caps = 0; caps <= 3; caps++) {
		name = efa_rdma_caps_name(caps);
		KUNIT_ASSERT_NOT_NULL(test, name);
		KUNIT_EXPECT_EQ(test, efa_rdma_caps_parse(name, &back), 0);
		KUNIT_EXPECT_EQ(test, back, caps);
	}
	KUNIT_EXPECT_STREQ(test, efa_rdma_caps_name(0), "none");
	KUNIT_EXPECT_STREQ(test, efa_rdma_caps_name(3), "read write");
	KUNIT_EXPECT_NULL(test, efa_rdma_caps_name(4));
}

struct efa_gid_case {
	u32 index;
	const char *str;
};

static const struct efa_gid_case efa_gid_cases[] = {
	/* the first device ends in 1, never in 0 */
	{ 0, "fe80:0000:0000:0000:6b66:6162:0000:0001" },
	{ 1, "fe80:0000:0000:0000:6b66:6162:0000:0002" },
	/* the last device */
	{ EFA_MAX_DEVICES - 1, "fe80:0000:0000:0000:6b66:6162:0000:0008" },
};

static void efa_gid_format_test(struct kunit *test)
{
	u8 gid[KFAB_EFA_GID_LEN];
	char buf[48];
	unsigned int i;
	u32 index;

	for (i = 0; i < ARRAY_SIZE(efa_gid_cases); i++) {
		const struct efa_gid_case *gc = &efa_gid_cases[i];

		efa_gid_init(gid, gc->index);
		snprintf(buf, sizeof(buf), "%pI6", gid);
		KUNIT_EXPECT_STREQ_MSG(test, buf, gc->str, "row %u", i);
		KUNIT_EXPECT_TRUE_MSG(test, efa_gid_to_index(gid, &index),
				      "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, index, gc->index, "row %u", i);
	}
}

struct efa_gid_bad_case {
	unsigned int byte;	/* of a valid gid, changed to ... */
	u8 val;
};

static const struct efa_gid_bad_case efa_gid_bad_cases[] = {
	/* device "0": there is no such gid */
	{ 15, 0 },
	/* one beyond the last possible device */
	{ 15, EFA_MAX_DEVICES + 1 },
	{ 15, 0xff },
	/* another prefix */
	{ 0, 0xfd },
	{ 1, 0x00 },
	/* another interface id */
	{ 8, 0x6c },
	{ 11, 0x63 },
	/* a non-zero byte between "kfab" and the device number */
	{ 12, 1 },
	{ 14, 1 },
};

static void efa_gid_reject_test(struct kunit *test)
{
	u8 gid[KFAB_EFA_GID_LEN];
	unsigned int i;
	u32 index;

	for (i = 0; i < ARRAY_SIZE(efa_gid_bad_cases); i++) {
		efa_gid_init(gid, 0);
		gid[efa_gid_bad_cases[i].byte] = efa_gid_bad_cases[i].val;
		index = 0xdead;
		KUNIT_EXPECT_FALSE_MSG(test, efa_gid_to_index(gid, &index),
				       "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, index, 0xdeadU, "row %u", i);
	}
}

static struct kunit_case efa_test_cases[] = {
	KUNIT_CASE(efa_random_key_test),
	KUNIT_CASE(efa_rkey_insert_test),
	KUNIT_CASE(efa_access_test),
	KUNIT_CASE(efa_access_bad_op_test),
	KUNIT_CASE(efa_remote_offset_test),
	KUNIT_CASE(efa_event_effect_test),
	KUNIT_CASE(efa_param_uint_test),
	KUNIT_CASE(efa_rdma_caps_test),
	KUNIT_CASE(efa_rdma_caps_name_test),
	KUNIT_CASE(efa_gid_format_test),
	KUNIT_CASE(efa_gid_reject_test),
	{}
};

KFAB_KUNIT_SUITE(efa, "kfab_efa", "KUnit tests for kfab_efa");
