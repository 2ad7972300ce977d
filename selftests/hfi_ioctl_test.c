// SPDX-License-Identifier: GPL-2.0
/* kfab_hfi ioctls: every command's success path and every errno of the spec. */

#include "hfi_util.h"

#include <limits.h>
#include <sched.h>
#include <stddef.h>

#define MiB		(1024ULL * 1024)

/*
 * Every command; the last two, which need no context, have their own
 * tests: the others are the first NCTX_CMDS.
 */
static const struct kfab_cmd all_cmds[] = {
	{ "GET_VERSION", KFAB_HFI_IOC_GET_VERSION },
	{ "CTXT_INFO", KFAB_HFI_IOC_CTXT_INFO },
	{ "MAP_PEER", KFAB_HFI_IOC_MAP_PEER },
	{ "UNMAP_PEER", KFAB_HFI_IOC_UNMAP_PEER },
	{ "TID_UPDATE", KFAB_HFI_IOC_TID_UPDATE },
	{ "TID_FREE", KFAB_HFI_IOC_TID_FREE },
	{ "SDMA", KFAB_HFI_IOC_SDMA },
	{ "SET_EVENTFD", KFAB_HFI_IOC_SET_EVENTFD },
	{ "NOTIFY", KFAB_HFI_IOC_NOTIFY },
	{ "ASSIGN_CTXT", KFAB_HFI_IOC_ASSIGN_CTXT },
	{ "LIST_CTXTS", KFAB_HFI_IOC_LIST_CTXTS },
};
#define NCTX_CMDS	(ARRAY_SIZE(all_cmds) - 2)

/* In a test body: @fd opened on unit 1; skips with a single unit. */
#define OPEN_UNIT1(fd) do {						\
	if (hfi_num_units() < 2)					\
		SKIP(return, "one unit only");				\
	(fd) = hfi_open(1);						\
	ASSERT_LE(0, (fd));						\
} while (0)

/* ------------------------------------------------------------------ */
/* A file with no context yet */

FIXTURE(unassigned) {
	int fd;
	__u8 uuid[16];
	uint64_t nfree;
};

FIXTURE_SETUP(unassigned)
{
	self->fd = hfi_open(0);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(-self->fd));
	hfi_uuid_random(self->uuid);
	self->nfree = hfi_sysfs_get(0, "nfreectxts");
}

FIXTURE_TEARDOWN(unassigned)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(unassigned, get_version)
{
	struct kfab_hfi_version v;
	char buf[64];
	int64_t node;
	uint64_t nctxts;

	memset(&v, 0xff, sizeof(v));
	ASSERT_EQ(0, hfi_ioctl(self->fd, KFAB_HFI_IOC_GET_VERSION, &v));
	EXPECT_EQ((__u32)KFAB_ABI_VERSION, v.abi_version);
	EXPECT_EQ(0U, v.unit);
	EXPECT_EQ(1U, v.lid);
	ASSERT_EQ(0, hfi_param_u64("ctxts_per_unit", &nctxts));
	EXPECT_EQ(nctxts, v.nctxts);
	ASSERT_LT(0, hfi_sysfs_read(0, "state", buf, sizeof(buf)));
	EXPECT_EQ(strcmp(buf, "Active\n") ? (__u32)KFAB_HFI_STATE_DOWN :
		  (__u32)KFAB_HFI_STATE_ACTIVE, v.state);
	ASSERT_LT(0, hfi_sysfs_read(0, "numa_node", buf, sizeof(buf)));
	ASSERT_EQ(0, hfi_parse_s64(buf, &node));
	EXPECT_EQ(node, v.numa_node);
	/* output zeroed before it is filled */
	EXPECT_EQ(0U, v.reserved[0]);
	EXPECT_EQ(0U, v.reserved[1]);
}

TEST_F(unassigned, get_version_unit1)
{
	struct kfab_hfi_version v;
	int fd;

	OPEN_UNIT1(fd);
	memset(&v, 0, sizeof(v));
	EXPECT_EQ(0, hfi_ioctl(fd, KFAB_HFI_IOC_GET_VERSION, &v));
	EXPECT_EQ(1U, v.unit);
	EXPECT_EQ(2U, v.lid);
	close(fd);
}

TEST_F(unassigned, get_version_efault)
{
	struct kfab_hfi_version v;
	void *ro;

	memset(&v, 0, sizeof(v));
	ro = hfi_ro_page(&v, sizeof(v));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_GET_VERSION, NULL));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_GET_VERSION,
				     (void *)1));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_GET_VERSION,
				     hfi_unmapped_page()));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_GET_VERSION, ro));
	munmap(ro, HFI_PAGE);
}

/*
 * Every command except GET_VERSION, ASSIGN_CTXT and LIST_CTXTS (tested
 * below) needs a context.
 */
TEST_F(unassigned, commands_need_context)
{
	union {
		__u8 raw[512];
		struct kfab_hfi_map_peer mp;
		struct kfab_hfi_tid_update tu;
		struct kfab_hfi_eventfd ev;
		struct kfab_hfi_list_ctxts lc;
	} arg;
	static __u8 buf[4096] __attribute__((aligned(4096)));
	int efd = eventfd(0, EFD_CLOEXEC);

	ASSERT_LE(0, efd);
	for (size_t i = 1; i < NCTX_CMDS; i++) {
		memset(&arg, 0, sizeof(arg));
		/* plausible input, so only the missing context is wrong */
		if (all_cmds[i].cmd == KFAB_HFI_IOC_MAP_PEER) {
			arg.mp.lid = 1;
		} else if (all_cmds[i].cmd == KFAB_HFI_IOC_TID_UPDATE) {
			arg.tu.vaddr = (__u64)(uintptr_t)buf;
			arg.tu.length = sizeof(buf);
		} else if (all_cmds[i].cmd == KFAB_HFI_IOC_SET_EVENTFD) {
			arg.ev.fd = efd;
		}
		EXPECT_EQ(-EINVAL, hfi_ioctl(self->fd, all_cmds[i].cmd, &arg))
			TH_LOG("%s without a context", all_cmds[i].name);
	}
	/* nothing to map either */
	for (__u64 off = 0; off < 8 * HFI_PAGE; off += HFI_PAGE) {
		EXPECT_EQ(NULL, hfi_mmap(self->fd, off, HFI_PAGE, PROT_READ));
	}
	close(efd);
}

/* ioctl type, number, size and direction encodings the module must refuse */
static void check_unknown_commands(struct __test_metadata *_metadata, int fd)
{
	__u8 arg[64];

	kfab_check_unknown_commands(_metadata, fd, all_cmds,
				    ARRAY_SIZE(all_cmds), 0x00, 0x0a);
	memset(arg, 0, sizeof(arg));
	EXPECT_EQ(-ENOTTY, hfi_ioctl(fd, _IO(KFAB_IOC_MAGIC, 0), arg));
}

TEST_F(unassigned, unknown_commands)
{
	check_unknown_commands(_metadata, self->fd);
}

TEST_F(unassigned, assign_success)
{
	struct kfab_hfi_assign a;
	struct kfab_hfi_ctxt_info *info = &a.info;
	uint64_t rhq, count, size, nctxts, assigned;
	__u64 offs[4];

	ASSERT_EQ(0, hfi_param_u64("rhq_entries", &rhq));
	ASSERT_EQ(0, hfi_param_u64("eager_count", &count));
	ASSERT_EQ(0, hfi_param_u64("eager_size", &size));
	ASSERT_EQ(0, hfi_param_u64("ctxts_per_unit", &nctxts));
	assigned = hfi_sysfs_get(0, "counters/ctxts_assigned");

	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, self->uuid, 16);
	a.pkey = 0x8123;
	a.sl = 7;
	/* garbage in the output part: must come back clean */
	memset(&a.info, 0xff, sizeof(a.info));
	ASSERT_EQ(0, hfi_ioctl(self->fd, KFAB_HFI_IOC_ASSIGN_CTXT, &a));

	EXPECT_EQ(0U, info->unit);
	EXPECT_EQ(1U, info->lid);
	EXPECT_GT(nctxts, info->ctxt);
	EXPECT_LE(1U, info->jkey);
	EXPECT_GE(0xffffU, info->jkey);
	EXPECT_EQ(0x8123, info->pkey);
	EXPECT_EQ(7, info->sl);
	EXPECT_EQ(0, info->pad0);
	EXPECT_EQ(rhq, info->rhq_entries);
	EXPECT_EQ(sizeof(struct kfab_hfi_rhq_entry), info->rhq_entry_size);
	EXPECT_EQ(128U, info->rhq_entry_size);
	EXPECT_EQ(count, info->eager_count);
	EXPECT_EQ(size, info->eager_size);
	EXPECT_EQ(0U, info->eager_size % HFI_PAGE);
	EXPECT_EQ(0U, info->pad1);
	EXPECT_EQ(0, memcmp(info->uuid, self->uuid, 16));
	EXPECT_TRUE(hfi_all_zero(info->reserved, sizeof(info->reserved)));

	offs[0] = info->ctrl_offset;
	offs[1] = info->rhq_offset;
	offs[2] = info->eager_offset;
	offs[3] = info->status_offset;
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0U, offs[i] % HFI_PAGE) TH_LOG("offset %d", i);
		for (int j = 0; j < i; j++) {
			EXPECT_NE(offs[i], offs[j]) TH_LOG("offsets %d, %d",
							   i, j);
		}
	}

	EXPECT_EQ(self->nfree - 1, hfi_sysfs_get(0, "nfreectxts"));
	EXPECT_EQ(assigned + 1, hfi_sysfs_get(0, "counters/ctxts_assigned"));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", self->nfree, 2000));
	EXPECT_EQ(assigned + 1, hfi_sysfs_get(0, "counters/ctxts_assigned"));
}

TEST_F(unassigned, assign_unit1)
{
	struct kfab_hfi_ctxt_info info;
	int fd;

	OPEN_UNIT1(fd);
	ASSERT_EQ(0, hfi_assign_fd(fd, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0,
				   &info));
	EXPECT_EQ(1U, info.unit);
	EXPECT_EQ(2U, info.lid);
	close(fd);
}

TEST_F(unassigned, assign_lowest_free_context)
{
	struct kfab_hfi_ctxt_info a, b, c;
	int fd2, fd3;

	if (hfi_sysfs_get(0, "nfreectxts") < 2)
		SKIP(return, "needs two free contexts");
	fd2 = hfi_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0, &a));
	ASSERT_EQ(0, hfi_assign_fd(fd2, self->uuid, 0x8001, 0, &b));
	EXPECT_NE(a.ctxt, b.ctxt);
	EXPECT_EQ(a.jkey, b.jkey);
	close(self->fd);
	self->fd = -1;
	fd3 = hfi_open(0);
	ASSERT_LE(0, fd3);
	ASSERT_EQ(0, hfi_assign_fd(fd3, self->uuid, 0x8001, 0, &c));
	/* the released slot is the lowest free one again */
	if (a.ctxt < b.ctxt) {
		EXPECT_EQ(a.ctxt, c.ctxt);
	}
	close(fd2);
	close(fd3);
}

TEST_F(unassigned, assign_twice)
{
	struct kfab_hfi_ctxt_info a, b;

	ASSERT_EQ(0, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0, &a));
	EXPECT_EQ(-EINVAL, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0,
					 NULL));
	EXPECT_EQ(self->nfree - 1, hfi_sysfs_get(0, "nfreectxts"));
	/* the first context is untouched */
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, hfi_ioctl(self->fd, KFAB_HFI_IOC_CTXT_INFO, &b));
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
}

TEST_F(unassigned, assign_bad_pkey_sl)
{
	static const __u16 bad_pkeys[] = { 0, 0x8000 };
	static const __u8 bad_sls[] = { 16, 17, 0x80, 0xff };
	static const __u16 good_pkeys[] = { 1, 0x7fff, 0xffff, 0x8001 };

	for (size_t i = 0; i < ARRAY_SIZE(bad_pkeys); i++) {
		EXPECT_EQ(-EINVAL, hfi_assign_fd(self->fd, self->uuid,
						 bad_pkeys[i], 0, NULL))
			TH_LOG("pkey %#x", bad_pkeys[i]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_sls); i++) {
		EXPECT_EQ(-EINVAL, hfi_assign_fd(self->fd, self->uuid, 0x8001,
						 bad_sls[i], NULL))
			TH_LOG("sl %u", bad_sls[i]);
	}
	/* nothing was assigned by the failures */
	EXPECT_EQ(self->nfree, hfi_sysfs_get(0, "nfreectxts"));
	EXPECT_EQ(-EINVAL, hfi_ioctl(self->fd, KFAB_HFI_IOC_CTXT_INFO,
				     &(struct kfab_hfi_ctxt_info){}));

	for (size_t i = 0; i < ARRAY_SIZE(good_pkeys); i++) {
		struct kfab_hfi_ctxt_info info = { .pkey = 0 };
		int fd = hfi_open(0);

		ASSERT_LE(0, fd);
		EXPECT_EQ(0, hfi_assign_fd(fd, self->uuid, good_pkeys[i],
					   (__u8)(i == 0 ? KFAB_HFI_SL_MAX : i),
					   &info))
			TH_LOG("pkey %#x", good_pkeys[i]);
		EXPECT_EQ(good_pkeys[i], info.pkey);
		close(fd);
	}
}

TEST_F(unassigned, assign_efault)
{
	struct kfab_hfi_assign a;
	void *ro;

	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_ASSIGN_CTXT, NULL));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_ASSIGN_CTXT,
				     (void *)1));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_ASSIGN_CTXT,
				     hfi_unmapped_page()));
	EXPECT_EQ(self->nfree, hfi_sysfs_get(0, "nfreectxts"));
	/* readable valid input, unwritable output */
	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, self->uuid, 16);
	a.pkey = KFAB_HFI_PKEY_DEFAULT;
	ro = hfi_ro_page(&a, sizeof(a));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->fd, KFAB_HFI_IOC_ASSIGN_CTXT, ro));
	munmap(ro, HFI_PAGE);
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", self->nfree, 2000));
}

TEST_F(unassigned, assign_all_busy)
{
	uint64_t nfree = hfi_sysfs_get(0, "nfreectxts");
	int *fds;

	ASSERT_LT(0U, nfree);
	fds = calloc(nfree, sizeof(*fds));
	ASSERT_NE(NULL, fds);
	for (uint64_t i = 0; i < nfree; i++) {
		fds[i] = hfi_open(0);
		ASSERT_LE(0, fds[i]);
		ASSERT_EQ(0, hfi_assign_fd(fds[i], self->uuid, 0x8001, 0, NULL))
			TH_LOG("context %llu of %llu", (unsigned long long)i,
			       (unsigned long long)nfree);
	}
	EXPECT_EQ(0U, hfi_sysfs_get(0, "nfreectxts"));
	EXPECT_EQ(-EBUSY, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0, NULL));
	/* a different job is just as refused */
	self->uuid[3] ^= 0x55;
	EXPECT_EQ(-EBUSY, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0, NULL));
	/* one comes back: the file that failed can now get it */
	close(fds[nfree / 2]);
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", 1, 2000));
	EXPECT_EQ(0, hfi_assign_fd(self->fd, self->uuid, 0x8001, 0, NULL));
	for (uint64_t i = 0; i < nfree; i++)
		if (i != nfree / 2)
			close(fds[i]);
	free(fds);
}

/* ------------------------------------------------------------------ */
/* Unit state: sysfs writes need root; the knobs are restored after. */

FIXTURE(down) {
	struct kfab_knobs knobs[2];
	unsigned int nunits;
	__u8 uuid[16];
};

FIXTURE_SETUP(down)
{
	self->nunits = hfi_num_units() < 2 ? 1 : 2;
	for (unsigned int u = 0; u < self->nunits; u++) {
		hfi_knobs_save(&self->knobs[u], u);
		ASSERT_TRUE(self->knobs[u].saved);
	}
	hfi_uuid_random(self->uuid);
}

FIXTURE_TEARDOWN(down)
{
	for (unsigned int u = 0; u < self->nunits; u++)
		hfi_knobs_restore(&self->knobs[u], u);
}

TEST_F(down, assign_enetdown)
{
	struct kfab_hfi_version v;
	uint64_t nfree;
	int fd;

	KFAB_NEED_ROOT();
	fd = hfi_open(0);
	ASSERT_LE(0, fd);
	nfree = hfi_sysfs_get(0, "nfreectxts");
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Down"));
	EXPECT_EQ(-ENETDOWN, hfi_assign_fd(fd, self->uuid, 0x8001, 0, NULL));
	EXPECT_EQ(nfree, hfi_sysfs_get(0, "nfreectxts"));
	memset(&v, 0, sizeof(v));
	EXPECT_EQ(0, hfi_ioctl(fd, KFAB_HFI_IOC_GET_VERSION, &v));
	EXPECT_EQ((__u32)KFAB_HFI_STATE_DOWN, v.state);
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Active"));
	EXPECT_EQ(0, hfi_assign_fd(fd, self->uuid, 0x8001, 0, NULL));
	close(fd);
}

/* A live context on a unit that goes Down keeps its local commands. */
TEST_F(down, context_on_down_unit)
{
	static __u8 buf[8192] __attribute__((aligned(4096)));
	struct kfab_hfi_map_peer mp;
	struct kfab_hfi_ctxt_info info;
	struct kfab_iovec iov = { (__u64)(uintptr_t)buf, 16 };
	__u32 peer, tid, tid2 = 0;
	int fd;

	KFAB_NEED_ROOT();
	fd = hfi_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, hfi_assign_fd(fd, self->uuid, 0x8001, 0, &info));
	ASSERT_EQ(0, hfi_map_peer(fd, info.lid, info.ctxt, &mp));
	peer = mp.peer;
	ASSERT_EQ(0, hfi_tid_update(fd, buf, sizeof(buf), &tid, NULL));

	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Down"));
	EXPECT_EQ(-ENETDOWN, hfi_map_peer(fd, info.lid, info.ctxt, &mp));
	EXPECT_EQ(-ENETDOWN, hfi_notify(fd, peer));
	EXPECT_EQ(-ENETDOWN, hfi_sdma(fd, peer, tid, 0, &iov, 1, 0, NULL));
	/* not on the error lists: still work */
	EXPECT_EQ(0, hfi_ioctl(fd, KFAB_HFI_IOC_CTXT_INFO,
			       &(struct kfab_hfi_ctxt_info){}));
	EXPECT_EQ(0, hfi_tid_update(fd, buf, 4096, &tid2, NULL));
	EXPECT_EQ(0, hfi_tid_free(fd, tid2));
	EXPECT_EQ(0, hfi_set_eventfd(fd, -1));

	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Active"));
	EXPECT_EQ(0, hfi_notify(fd, peer));
	EXPECT_EQ(0, hfi_sdma(fd, peer, tid, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(0, hfi_unmap_peer(fd, peer));
	close(fd);
}

/* Own unit Active, the peer's unit Down, and the other way round. */
TEST_F(down, peer_unit_down)
{
	static __u8 buf[4096] __attribute__((aligned(4096)));
	struct kfab_iovec iov = { (__u64)(uintptr_t)buf, 16 };
	struct kfab_hfi_ctxt_info i0, i1;
	struct kfab_hfi_map_peer mp;
	__u32 p01, p10, tid0, tid1;
	int fd0, fd1;

	KFAB_NEED_ROOT();
	if (self->nunits < 2)
		SKIP(return, "one unit only");
	fd0 = hfi_open(0);
	fd1 = hfi_open(1);
	ASSERT_LE(0, fd0);
	ASSERT_LE(0, fd1);
	ASSERT_EQ(0, hfi_assign_fd(fd0, self->uuid, 0x8001, 0, &i0));
	ASSERT_EQ(0, hfi_assign_fd(fd1, self->uuid, 0x8001, 0, &i1));
	EXPECT_EQ(i0.jkey, i1.jkey);
	ASSERT_EQ(0, hfi_map_peer(fd0, i1.lid, i1.ctxt, &mp));
	p01 = mp.peer;
	ASSERT_EQ(0, hfi_map_peer(fd1, i0.lid, i0.ctxt, &mp));
	p10 = mp.peer;
	ASSERT_EQ(0, hfi_tid_update(fd0, buf, sizeof(buf), &tid0, NULL));
	ASSERT_EQ(0, hfi_tid_update(fd1, buf, sizeof(buf), &tid1, NULL));

	/* unit 1 down: both directions refused */
	ASSERT_EQ(0, hfi_sysfs_write(1, "state", "Down"));
	EXPECT_EQ(-ENETDOWN, hfi_map_peer(fd0, i1.lid, i1.ctxt, &mp));
	EXPECT_EQ(-ENETDOWN, hfi_map_peer(fd1, i0.lid, i0.ctxt, &mp));
	EXPECT_EQ(-ENETDOWN, hfi_notify(fd0, p01));
	EXPECT_EQ(-ENETDOWN, hfi_notify(fd1, p10));
	EXPECT_EQ(-ENETDOWN, hfi_sdma(fd0, p01, tid1, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(-ENETDOWN, hfi_sdma(fd1, p10, tid0, 0, &iov, 1, 0, NULL));
	ASSERT_EQ(0, hfi_sysfs_write(1, "state", "Active"));

	/* unit 0 down */
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Down"));
	EXPECT_EQ(-ENETDOWN, hfi_map_peer(fd0, i1.lid, i1.ctxt, &mp));
	EXPECT_EQ(-ENETDOWN, hfi_map_peer(fd1, i0.lid, i0.ctxt, &mp));
	EXPECT_EQ(-ENETDOWN, hfi_notify(fd0, p01));
	EXPECT_EQ(-ENETDOWN, hfi_sdma(fd1, p10, tid0, 0, &iov, 1, 0, NULL));
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Active"));

	EXPECT_EQ(0, hfi_sdma(fd0, p01, tid1, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(0, hfi_sdma(fd1, p10, tid0, 0, &iov, 1, 0, NULL));
	close(fd0);
	close(fd1);
}

/* ------------------------------------------------------------------ */
/* An assigned context on unit 0 */

FIXTURE(ctx) {
	struct hfi_ctx c;
	__u8 uuid[16];
	__u8 *buf;		/* 16 pages, read-write */
	size_t buflen;
};

FIXTURE_SETUP(ctx)
{
	int ret;

	hfi_uuid_random(self->uuid);
	ret = hfi_ctx_assign(&self->c, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0);
	ASSERT_EQ(0, ret) TH_LOG("assign: %s", strerror(-ret));
	self->buflen = 16 * HFI_PAGE;
	self->buf = mmap(NULL, self->buflen, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
	memset(self->buf, 0x5a, self->buflen);
}

FIXTURE_TEARDOWN(ctx)
{
	hfi_ctx_close(&self->c);
	munmap(self->buf, self->buflen);
}

/* MAP_PEER of the fixture's own context (loopback). */
static __u32 loopback(struct __test_metadata *_metadata,
		      FIXTURE_DATA(ctx) *self)
{
	struct kfab_hfi_map_peer mp;
	int ret = hfi_map_peer(self->c.fd, self->c.info.lid,
			       self->c.info.ctxt, &mp);

	EXPECT_EQ(0, ret);
	return mp.peer;
}

TEST_F(ctx, ctxt_info)
{
	struct kfab_hfi_ctxt_info info;

	memset(&info, 0xff, sizeof(info));
	ASSERT_EQ(0, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_CTXT_INFO, &info));
	EXPECT_EQ(0, memcmp(&info, &self->c.info, sizeof(info)));
	EXPECT_TRUE(hfi_all_zero(info.reserved, sizeof(info.reserved)));
	/* GET_VERSION still works with a context */
	EXPECT_EQ(0, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_GET_VERSION,
			       &(struct kfab_hfi_version){}));
}

TEST_F(ctx, efault)
{
	kfab_check_efault(_metadata, self->c.fd, all_cmds, NCTX_CMDS);
}

/* Valid input on a read-only page: the output cannot be written back. */
TEST_F(ctx, efault_readonly_output)
{
	struct kfab_hfi_map_peer mp = {
		.lid = self->c.info.lid, .ctxt = self->c.info.ctxt,
	};
	struct kfab_hfi_tid_update tu = {
		.vaddr = (__u64)(uintptr_t)self->buf, .length = HFI_PAGE,
	};
	struct kfab_iovec iov = { (__u64)(uintptr_t)self->buf, 8 };
	struct kfab_hfi_sdma sd = {
		.iov = (__u64)(uintptr_t)&iov, .iovcnt = 1,
	};
	struct kfab_hfi_ctxt_info info;
	void *ro;

	memset(&info, 0, sizeof(info));
	ro = hfi_ro_page(&info, sizeof(info));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_CTXT_INFO, ro));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_GET_VERSION, ro));
	munmap(ro, HFI_PAGE);

	ro = hfi_ro_page(&mp, sizeof(mp));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_MAP_PEER, ro));
	munmap(ro, HFI_PAGE);

	ro = hfi_ro_page(&tu, sizeof(tu));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_TID_UPDATE, ro));
	munmap(ro, HFI_PAGE);

	sd.peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf + HFI_PAGE, HFI_PAGE,
				    &sd.tid, NULL));
	ro = hfi_ro_page(&sd, sizeof(sd));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_SDMA, ro));
	munmap(ro, HFI_PAGE);
}

TEST_F(ctx, unknown_commands)
{
	check_unknown_commands(_metadata, self->c.fd);
}

/* MAP_PEER */

TEST_F(ctx, map_peer_loopback)
{
	struct kfab_hfi_map_peer a, b;
	__u64 offs[8];
	__u64 own[4] = {
		self->c.info.ctrl_offset, self->c.info.rhq_offset,
		self->c.info.eager_offset, self->c.info.status_offset,
	};

	ASSERT_EQ(0, hfi_map_peer(self->c.fd, self->c.info.lid,
				  self->c.info.ctxt, &a));
	EXPECT_EQ(self->c.info.rhq_entries, a.rhq_entries);
	EXPECT_EQ(self->c.info.rhq_entry_size, a.rhq_entry_size);
	EXPECT_EQ(self->c.info.eager_count, a.eager_count);
	EXPECT_EQ(self->c.info.eager_size, a.eager_size);
	EXPECT_EQ(0U, a.reserved);
	/* mapping the same peer twice: two handles */
	ASSERT_EQ(0, hfi_map_peer(self->c.fd, self->c.info.lid,
				  self->c.info.ctxt, &b));
	EXPECT_NE(a.peer, b.peer);
	offs[0] = a.ctrl_offset;
	offs[1] = a.rhq_offset;
	offs[2] = a.eager_offset;
	offs[3] = b.ctrl_offset;
	offs[4] = b.rhq_offset;
	offs[5] = b.eager_offset;
	offs[6] = a.status_offset;
	offs[7] = b.status_offset;
	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		EXPECT_EQ(0U, offs[i] % HFI_PAGE);
		for (size_t j = 0; j < ARRAY_SIZE(own); j++) {
			EXPECT_NE(own[j], offs[i]);
		}
		for (size_t j = 0; j < i; j++) {
			EXPECT_NE(offs[j], offs[i]);
		}
	}
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, a.peer));
	EXPECT_EQ(0, hfi_notify(self->c.fd, b.peer));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, a.peer));
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, b.peer));
	EXPECT_EQ(-EINVAL, hfi_notify(self->c.fd, b.peer));
}

TEST_F(ctx, map_peer_enoent)
{
	unsigned int n = hfi_num_units();
	__u32 nctxts = (__u32)hfi_sysfs_get(0, "nctxts");
	struct kfab_hfi_map_peer mp;
	struct kfab_hfi_ctxt_info other;
	__u32 peer;
	int fd;

	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 0, 0, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, n + 1, 0, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 9, 0, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 0xffffffff, 0, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 1, nctxts, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 1, nctxts + 1, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 1, 0xffffffff, &mp));
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, 1, 0x80000000, &mp));

	/* a context number that is in range but not assigned */
	if (nctxts < 2)
		SKIP(return, "needs two contexts");
	fd = hfi_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, hfi_assign_fd(fd, self->uuid, 0x8001, 0, &other));
	ASSERT_EQ(0, hfi_map_peer(self->c.fd, other.lid, other.ctxt, &mp));
	peer = mp.peer;
	close(fd);
	EXPECT_EQ(-ENOENT, hfi_map_peer(self->c.fd, other.lid, other.ctxt,
					&mp));
	/* the handle taken while it lived stays known (dead) */
	EXPECT_EQ(-ECONNRESET, hfi_notify(self->c.fd, peer));
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, peer));
}

/*
 * A second context on unit 0 with @uuid, @pkey and @sl: its job key is
 * @c's iff @same_job, and MAP_PEER between the two answers @want both ways.
 */
static void map_peer_between(struct __test_metadata *_metadata,
			     const struct hfi_ctx *c, const __u8 uuid[16],
			     __u16 pkey, __u8 sl, bool same_job, int want)
{
	struct kfab_hfi_ctxt_info other;
	struct kfab_hfi_map_peer mp;
	int fd = hfi_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, hfi_assign_fd(fd, uuid, pkey, sl, &other));
	EXPECT_EQ(same_job, c->info.jkey == other.jkey);
	EXPECT_EQ(want, hfi_map_peer(c->fd, other.lid, other.ctxt, &mp));
	EXPECT_EQ(want, hfi_map_peer(fd, c->info.lid, c->info.ctxt, &mp));
	close(fd);
}

TEST_F(ctx, map_peer_eacces)
{
	__u8 uuid[16];

	/* another job (UUID), same user */
	memcpy(uuid, self->uuid, 16);
	uuid[15] ^= 1;
	map_peer_between(_metadata, &self->c, uuid, KFAB_HFI_PKEY_DEFAULT, 0,
			 false, -EACCES);
	/* same job, another partition */
	map_peer_between(_metadata, &self->c, self->uuid, 0x8002, 0, true,
			 -EACCES);
	/* same job, same partition, other service level: allowed */
	map_peer_between(_metadata, &self->c, self->uuid,
			 KFAB_HFI_PKEY_DEFAULT, 3, true, 0);
}

TEST_F_TIMEOUT(ctx, map_peer_enospc, 120)
{
	struct kfab_hfi_map_peer mp;
	__u32 first = 0;
	int ret = 0, i;

	for (i = 0; i < 4096; i++) {
		ret = hfi_map_peer(self->c.fd, self->c.info.lid,
				   self->c.info.ctxt, &mp);
		if (ret)
			break;
		if (!i)
			first = mp.peer;
	}
	ASSERT_EQ(0, ret) TH_LOG("MAP_PEER %d failed", i);
	EXPECT_EQ(-ENOSPC, hfi_map_peer(self->c.fd, self->c.info.lid,
					self->c.info.ctxt, &mp));
	/* one released, one more fits */
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, first));
	EXPECT_EQ(0, hfi_map_peer(self->c.fd, self->c.info.lid,
				  self->c.info.ctxt, &mp));
	EXPECT_EQ(-ENOSPC, hfi_map_peer(self->c.fd, self->c.info.lid,
					self->c.info.ctxt, &mp));
}

TEST_F(ctx, unmap_peer_unknown)
{
	__u32 peer;

	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, 0));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, 1));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, 12345));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, 0xffffffff));
	peer = loopback(_metadata, self);
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, peer + 1));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, peer ^ 0x80000000));
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, peer));
	EXPECT_EQ(-EINVAL, hfi_unmap_peer(self->c.fd, peer));
}

/* TID_UPDATE / TID_FREE */

TEST_F(ctx, tid_update_free)
{
	uint64_t pinned = hfi_sysfs_get(0, "counters/tid_pages_pinned");
	uint64_t regions = hfi_sysfs_get(0, "counters/tid_regions");
	__u32 h1, h2, h3, n1, n2, n3;

	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, 3 * HFI_PAGE,
				    &h1, &n1));
	EXPECT_EQ(3U, n1);
	/* any alignment: 4096 bytes from offset 100 span two pages */
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf + 4 * HFI_PAGE + 100,
				    HFI_PAGE, &h2, &n2));
	EXPECT_EQ(2U, n2);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf + 7 * HFI_PAGE - 1,
				    1, &h3, &n3));
	EXPECT_EQ(1U, n3);
	EXPECT_NE(0U, h1);
	EXPECT_NE(0U, h2);
	EXPECT_NE(0U, h3);
	EXPECT_NE(h1, h2);
	EXPECT_NE(h2, h3);
	EXPECT_NE(h1, h3);
	EXPECT_EQ(pinned + 6, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(regions + 3, hfi_sysfs_get(0, "counters/tid_regions"));

	EXPECT_EQ(0, hfi_tid_free(self->c.fd, h2));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, h2));
	EXPECT_EQ(pinned + 4, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(regions + 2, hfi_sysfs_get(0, "counters/tid_regions"));
	EXPECT_EQ(0, hfi_tid_free(self->c.fd, h1));
	EXPECT_EQ(0, hfi_tid_free(self->c.fd, h3));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, h1));
	EXPECT_EQ(pinned, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(regions, hfi_sysfs_get(0, "counters/tid_regions"));

	/* release on close */
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, 5 * HFI_PAGE,
				    &h1, NULL));
	EXPECT_EQ(pinned + 5, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	hfi_ctx_close(&self->c);
	EXPECT_EQ(0, hfi_sysfs_wait(0, "counters/tid_pages_pinned", pinned,
				    2000));
	EXPECT_EQ(0, hfi_sysfs_wait(0, "counters/tid_regions", regions, 2000));
}

TEST_F(ctx, tid_free_unknown)
{
	__u32 h, h2;

	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, 0));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, 1));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, 0xffffffff));
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, HFI_PAGE, &h, NULL));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, h + 1));
	EXPECT_EQ(0, hfi_tid_free(self->c.fd, h));
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, h));
	/* a freed handle is not reused at once */
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, HFI_PAGE, &h2,
				    NULL));
	EXPECT_NE(h, h2);
	EXPECT_EQ(-EINVAL, hfi_tid_free(self->c.fd, h));
}

TEST_F(ctx, tid_update_einval)
{
	uint64_t pinned = hfi_sysfs_get(0, "counters/tid_pages_pinned");

	EXPECT_EQ(-EINVAL, hfi_tid_update(self->c.fd, self->buf, 0, NULL,
					  NULL));
	EXPECT_EQ(-EINVAL, hfi_tid_update(self->c.fd, NULL, 0, NULL, NULL));
	/* wraps */
	EXPECT_EQ(-EINVAL, hfi_tid_update(self->c.fd, self->buf, UINT64_MAX,
					  NULL, NULL));
	EXPECT_EQ(-EINVAL, hfi_tid_update(self->c.fd,
					  (void *)(uintptr_t)(UINT64_MAX - 100),
					  HFI_PAGE, NULL, NULL));
	EXPECT_EQ(-EINVAL, hfi_tid_update(self->c.fd, self->buf,
					  UINT64_MAX - (uintptr_t)self->buf + 2,
					  NULL, NULL));
	EXPECT_EQ(pinned, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
}

TEST_F(ctx, tid_update_efault)
{
	uint64_t pinned = hfi_sysfs_get(0, "counters/tid_pages_pinned");
	uint64_t regions = hfi_sysfs_get(0, "counters/tid_regions");
	__u8 *ro, *none, *half;

	/* unmapped */
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, hfi_unmapped_page(),
					  HFI_PAGE, NULL, NULL));
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, NULL, HFI_PAGE, NULL,
					  NULL));
	/* kernel addresses, beyond the user address space but no wrap */
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd,
					  (void *)0xffff888000000000ULL,
					  HFI_PAGE, NULL, NULL));
	/* read-only and inaccessible mappings */
	ro = mmap(NULL, 2 * HFI_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, ro, 2 * HFI_PAGE, NULL,
					  NULL));
	none = mmap(NULL, HFI_PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, none, HFI_PAGE, NULL,
					  NULL));
	/* a read-only view of the status page */
	if (!hfi_ctx_map(&self->c)) {
		EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd,
						  self->c.kstatus, HFI_PAGE,
						  NULL, NULL));
	}
	/* first pages writable, the last one not: nothing stays pinned */
	half = mmap(NULL, 4 * HFI_PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, half);
	memset(half, 1, 4 * HFI_PAGE);
	ASSERT_EQ(0, mprotect(half + 3 * HFI_PAGE, HFI_PAGE, PROT_READ));
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, half, 4 * HFI_PAGE,
					  NULL, NULL));
	ASSERT_EQ(0, munmap(half + 3 * HFI_PAGE, HFI_PAGE));
	EXPECT_EQ(-EFAULT, hfi_tid_update(self->c.fd, half, 4 * HFI_PAGE,
					  NULL, NULL));
	EXPECT_EQ(pinned, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(regions, hfi_sysfs_get(0, "counters/tid_regions"));
	munmap(ro, 2 * HFI_PAGE);
	munmap(none, HFI_PAGE);
	munmap(half, 3 * HFI_PAGE);
}


/*
 * Opens unit 0 (the node is root's: see kfab.rules), drops privileges and
 * assigns a context as the user dropped to.
 */
static int ctx_assign_dropped(struct hfi_ctx *c, const __u8 uuid[16])
{
	int fd = hfi_open(0);
	int ret;

	if (fd < 0)
		return fd;
	ret = kfab_drop_privileges();
	if (ret) {
		close(fd);
		return ret;
	}
	return hfi_ctx_assign_fd(c, fd, 0, uuid, KFAB_HFI_PKEY_DEFAULT, 0);
}

#define LIMIT_PAGES	8

/* Runs as nobody under RLIMIT_MEMLOCK = LIMIT_PAGES pages. */
static int memlock_child(void *arg, int rfd, int wfd)
{
	struct rlimit rl = { LIMIT_PAGES * HFI_PAGE, LIMIT_PAGES * HFI_PAGE };
	size_t page = HFI_PAGE;
	__u32 h1, h2, h3;
	struct hfi_ctx c;
	long lck0;
	__u8 uuid[16];
	__u8 *buf;

	(void)arg;
	(void)rfd;
	(void)wfd;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return HFI_CHILD_FAIL(1);
	hfi_uuid_random(uuid);
	if (ctx_assign_dropped(&c, uuid))
		return HFI_CHILD_FAIL(2);
	buf = mmap(NULL, 2 * LIMIT_PAGES * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return HFI_CHILD_FAIL(3);
	memset(buf, 7, 2 * LIMIT_PAGES * page);
	lck0 = hfi_vmlck_kb();
	/* over the limit at once */
	if (hfi_tid_update(c.fd, buf, (LIMIT_PAGES + 1) * page, NULL, NULL) !=
	    -ENOMEM)
		return HFI_CHILD_FAIL(5);
	if (hfi_vmlck_kb() != lck0)
		return HFI_CHILD_FAIL(6);
	/* up to the limit, then one page more */
	if (hfi_tid_update(c.fd, buf, (LIMIT_PAGES - 1) * page, &h1, NULL))
		return HFI_CHILD_FAIL(7);
	if (hfi_tid_update(c.fd, buf + LIMIT_PAGES * page, page, &h2, NULL))
		return HFI_CHILD_FAIL(8);
	if (hfi_vmlck_kb() != lck0 + (long)(LIMIT_PAGES * page / 1024))
		return HFI_CHILD_FAIL(9);
	if (hfi_tid_update(c.fd, buf + (LIMIT_PAGES + 1) * page, page, NULL,
			   NULL) != -ENOMEM)
		return HFI_CHILD_FAIL(10);
	/* freeing gives the charge back */
	if (hfi_tid_free(c.fd, h2))
		return HFI_CHILD_FAIL(11);
	if (hfi_tid_update(c.fd, buf + (LIMIT_PAGES + 1) * page, page, &h3,
			   NULL))
		return HFI_CHILD_FAIL(12);
	if (hfi_tid_free(c.fd, h3) || hfi_tid_free(c.fd, h1))
		return HFI_CHILD_FAIL(13);
	if (hfi_vmlck_kb() != lck0)
		return HFI_CHILD_FAIL(14);
	/* closing the file unaccounts too */
	if (hfi_tid_update(c.fd, buf, LIMIT_PAGES * page, &h1, NULL))
		return HFI_CHILD_FAIL(15);
	hfi_ctx_close(&c);
	if (hfi_vmlck_kb() != lck0)
		return HFI_CHILD_FAIL(16);
	return 0;
}

TEST_F(ctx, tid_update_memlock_enomem)
{
	kfab_run_memlock_child(_metadata, "hfi", "counters/tid_pages_pinned",
			       memlock_child);
}

TEST_F_TIMEOUT(ctx, tid_update_pin_limit_enospc, 300)
{
	uint64_t limit_mb, pinned = hfi_sysfs_get(0, "counters/tid_pages_pinned");
	struct hfi_ctx other;
	size_t chunk, n;
	__u32 *handles, last;
	__u8 *big;
	int ret = 0;

	ASSERT_EQ(0, hfi_param_u64("pin_limit_mb", &limit_mb));
	if (!limit_mb)
		SKIP(return, "pin_limit_mb=0: only RLIMIT_MEMLOCK applies");
	if (geteuid()) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			SKIP(return, "RLIMIT_MEMLOCK would be hit first");
	}
	/* register one buffer again and again: the limit counts pins */
	chunk = limit_mb < 64 ? limit_mb * MiB : 64 * MiB;
	n = limit_mb * MiB / chunk;
	if (n > 512)
		SKIP(return, "pin_limit_mb=%llu: too large to reach",
		     (unsigned long long)limit_mb);
	big = mmap(NULL, chunk + HFI_PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, big);
	handles = calloc(n, sizeof(*handles));
	ASSERT_NE(NULL, handles);
	for (size_t i = 0; i < n; i++) {
		ret = hfi_tid_update(self->c.fd, big, chunk, &handles[i], NULL);
		if (ret) {
			TH_LOG("registration %zu of %zu: %s", i, n,
			       strerror(-ret));
			break;
		}
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(pinned + limit_mb * MiB / HFI_PAGE,
		  hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	EXPECT_EQ(-ENOSPC, hfi_tid_update(self->c.fd, big + chunk, HFI_PAGE,
					  NULL, NULL));
	/* the limit is per context: another context may still pin */
	ASSERT_EQ(0, hfi_ctx_assign(&other, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	EXPECT_EQ(0, hfi_tid_update(other.fd, big + chunk, HFI_PAGE, NULL,
				    NULL));
	hfi_ctx_close(&other);
	EXPECT_EQ(0, hfi_tid_free(self->c.fd, handles[0]));
	EXPECT_EQ(0, hfi_tid_update(self->c.fd, big + chunk, HFI_PAGE, &last,
				    NULL));
	hfi_ctx_close(&self->c);
	EXPECT_EQ(0, hfi_sysfs_wait(0, "counters/tid_pages_pinned", pinned,
				    5000));
	free(handles);
	munmap(big, chunk + HFI_PAGE);
}

/* SDMA: loopback into the context's own TID buffer */

#define TID_OFF		100	/* TID buffer starts at buf + 100 */
#define TID_LEN		10000

TEST_F(ctx, sdma_success)
{
	uint64_t reqs = hfi_sysfs_get(0, "counters/sdma_requests");
	uint64_t bytes0 = hfi_sysfs_get(0, "counters/sdma_bytes");
	__u8 src[3][3000], *dst = self->buf + TID_OFF;
	struct kfab_iovec iov[3], many[KFAB_IOV_MAX];
	__u32 peer, tid;
	__u64 bytes = 0, off = 1234;

	peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, dst, TID_LEN, &tid, NULL));
	for (int i = 0; i < 3; i++) {
		hfi_fill(src[i], sizeof(src[i]), (__u32)i + 1);
		iov[i].addr = (__u64)(uintptr_t)src[i];
		iov[i].len = sizeof(src[i]) - (__u64)i * 100;
	}
	ASSERT_EQ(0, hfi_sdma(self->c.fd, peer, tid, off, iov, 3, 0, &bytes));
	EXPECT_EQ(9000U - 300U, bytes);
	EXPECT_EQ(0, memcmp(dst + off, src[0], 3000));
	EXPECT_EQ(0, memcmp(dst + off + 3000, src[1], 2900));
	EXPECT_EQ(0, memcmp(dst + off + 5900, src[2], 2800));
	EXPECT_EQ(0x5a, dst[off - 1]);
	EXPECT_EQ(0x5a, dst[off + 8700]);
	EXPECT_EQ(reqs + 1, hfi_sysfs_get(0, "counters/sdma_requests"));
	EXPECT_EQ(bytes0 + 8700, hfi_sysfs_get(0, "counters/sdma_bytes"));

	/* exactly fits: [0, TID_LEN) and the last byte */
	memset(self->buf, 0, self->buflen);
	iov[0].addr = (__u64)(uintptr_t)self->buf + 2 * TID_LEN;
	iov[0].len = TID_LEN;
	memset(self->buf + 2 * TID_LEN, 0xc3, TID_LEN);
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, &bytes));
	EXPECT_EQ((__u64)TID_LEN, bytes);
	EXPECT_EQ(0xc3, dst[0]);
	EXPECT_EQ(0xc3, dst[TID_LEN - 1]);
	EXPECT_EQ(0, dst[TID_LEN]);
	EXPECT_EQ(0, dst[-1]);
	iov[0].len = 1;
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, TID_LEN - 1, iov, 1, 0,
			      &bytes));
	EXPECT_EQ(1U, bytes);

	/* KFAB_IOV_MAX entries */
	for (int i = 0; i < KFAB_IOV_MAX; i++) {
		many[i].addr = (__u64)(uintptr_t)&src[0][i];
		many[i].len = 1;
	}
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, many, KFAB_IOV_MAX, 0,
			      &bytes));
	EXPECT_EQ((__u64)KFAB_IOV_MAX, bytes);
	EXPECT_EQ(0, memcmp(dst, src[0], KFAB_IOV_MAX));
}

/*
 * link_rate_mbps paces SDMA into the unit: two back-to-back copies of
 * TID_LEN bytes at 8 Mb/s (one byte per microsecond) take at least
 * 2 * TID_LEN us in all. A lower bound only: the guest may be slower.
 */
TEST_F(ctx, sdma_link_rate)
{
	__u8 *dst = self->buf + TID_OFF, *src = self->buf + 2 * TID_LEN;
	struct kfab_iovec iov = { (__u64)(uintptr_t)src, TID_LEN };
	struct timespec t0, t1;
	struct kfab_knobs knobs;
	__u32 peer, tid;
	__u64 bytes;
	double us;

	KFAB_NEED_ROOT();
	peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, dst, TID_LEN, &tid, NULL));
	hfi_knobs_save(&knobs, 0);
	ASSERT_EQ(0, hfi_sysfs_write(0, "link_rate_mbps", "8"));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, &iov, 1, 0, &bytes));
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, &iov, 1, 0, &bytes));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	hfi_knobs_restore(&knobs, 0);
	us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
	     (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
	EXPECT_LE(2.0 * TID_LEN, us) TH_LOG("2 x %d B at 8 Mb/s in %.0f us",
					    TID_LEN, us);
	EXPECT_EQ(0, memcmp(dst, src, TID_LEN));
}

TEST_F(ctx, sdma_einval)
{
	__u8 src[64];
	struct kfab_iovec iov[KFAB_IOV_MAX + 1];
	uint64_t reqs = hfi_sysfs_get(0, "counters/sdma_requests");
	__u32 peer, tid;

	peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf + TID_OFF, TID_LEN,
				    &tid, NULL));
	for (int i = 0; i <= KFAB_IOV_MAX; i++) {
		iov[i].addr = (__u64)(uintptr_t)src;
		iov[i].len = 1;
	}
	/* unknown peer handles */
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer + 1, tid, 0, iov, 1, 0,
				    NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, 0xffffffff, tid, 0, iov, 1, 0,
				    NULL));
	/* iovcnt */
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov,
				    KFAB_IOV_MAX + 1, 0, NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 0xffffffff,
				    0, NULL));
	/* out of bounds: offset = len, offset + total = len + 1 */
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, TID_LEN, iov, 1, 0,
				    NULL));
	iov[0].len = 2;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, TID_LEN - 1, iov, 1,
				    0, NULL));
	iov[0].len = 1;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, TID_LEN - 1, iov, 2,
				    0, NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, UINT64_MAX, iov, 1,
				    0, NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, UINT64_MAX - 1, iov,
				    2, 0, NULL));
	iov[0].addr = (__u64)(uintptr_t)self->buf;
	iov[0].len = TID_LEN + 1;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	/* wrapping iov, total overflow */
	iov[0].addr = UINT64_MAX - 10;
	iov[0].len = 100;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	iov[0].addr = (__u64)(uintptr_t)src;
	iov[0].len = 1ULL << 63;
	iov[1].len = 1ULL << 63;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 2, 0, NULL));
	iov[0].len = UINT64_MAX;
	iov[1].len = 2;
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 2, 0, NULL));
	iov[0].len = 1;
	iov[1].len = 1;
	/* unknown flags */
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1,
				    ~KFAB_HFI_SDMA_FLAGS_ALL, NULL));
	EXPECT_EQ(-EINVAL, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 2,
				    NULL));
	EXPECT_EQ(reqs, hfi_sysfs_get(0, "counters/sdma_requests"));
	/* and the request itself was fine */
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
}

TEST_F(ctx, sdma_enoent)
{
	struct kfab_iovec iov = { (__u64)(uintptr_t)self->buf, 8 };
	__u32 peer, tid;

	peer = loopback(_metadata, self);
	EXPECT_EQ(-ENOENT, hfi_sdma(self->c.fd, peer, 0, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(-ENOENT, hfi_sdma(self->c.fd, peer, 1, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(-ENOENT, hfi_sdma(self->c.fd, peer, 0xffffffff, 0, &iov, 1,
				    0, NULL));
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf + HFI_PAGE, HFI_PAGE,
				    &tid, NULL));
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, &iov, 1, 0, NULL));
	EXPECT_EQ(0, hfi_tid_free(self->c.fd, tid));
	EXPECT_EQ(-ENOENT, hfi_sdma(self->c.fd, peer, tid, 0, &iov, 1, 0,
				    NULL));
}

/* A TID of another context of the same job is not one of this peer's. */
TEST_F(ctx, sdma_tid_of_other_context)
{
	struct kfab_iovec iov = { (__u64)(uintptr_t)self->buf, 8 };
	struct hfi_ctx other;
	__u32 self_peer, tid;

	ASSERT_EQ(0, hfi_ctx_assign(&other, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	self_peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(other.fd, self->buf + HFI_PAGE, HFI_PAGE,
				    &tid, NULL));
	/* our own context has no TIDs at all */
	EXPECT_EQ(-ENOENT, hfi_sdma(self->c.fd, self_peer, tid, 0, &iov, 1, 0,
				    NULL));
	hfi_ctx_close(&other);
}

TEST_F(ctx, sdma_efault)
{
	struct kfab_iovec iov[2];
	__u32 peer, tid;
	__u8 *ro;

	peer = loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, HFI_PAGE, &tid,
				    NULL));
	/* the iov array */
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, NULL, 1, 0,
				    NULL));
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, (void *)1, 1, 0,
				    NULL));
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0,
				    hfi_unmapped_page(), 1, 0, NULL));
	/* the source */
	iov[0].addr = (__u64)(uintptr_t)hfi_unmapped_page();
	iov[0].len = 100;
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	iov[0].addr = 0;
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	iov[0].addr = 0xffff888000000000ULL;
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	iov[0].addr = (__u64)(uintptr_t)self->buf + HFI_PAGE;
	iov[0].len = 16;
	iov[1].addr = (__u64)(uintptr_t)hfi_unmapped_page();
	iov[1].len = 16;
	EXPECT_EQ(-EFAULT, hfi_sdma(self->c.fd, peer, tid, 0, iov, 2, 0, NULL));
	/* a read-only source is fine */
	ro = mmap(NULL, HFI_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		  0);
	ASSERT_NE(MAP_FAILED, ro);
	iov[0].addr = (__u64)(uintptr_t)ro;
	iov[0].len = 64;
	EXPECT_EQ(0, hfi_sdma(self->c.fd, peer, tid, 0, iov, 1, 0, NULL));
	munmap(ro, HFI_PAGE);
}

TEST_F(ctx, sdma_notify_dead_peer)
{
	struct kfab_iovec iov = { (__u64)(uintptr_t)self->buf, 8 };
	struct hfi_ctx other;
	struct kfab_hfi_map_peer mp;
	__u32 tid;

	ASSERT_EQ(0, hfi_ctx_assign(&other, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	ASSERT_EQ(0, hfi_tid_update(other.fd, self->buf + HFI_PAGE, HFI_PAGE,
				    &tid, NULL));
	ASSERT_EQ(0, hfi_map_peer(self->c.fd, other.info.lid, other.info.ctxt,
				  &mp));
	ASSERT_EQ(0, hfi_sdma(self->c.fd, mp.peer, tid, 0, &iov, 1, 0, NULL));
	ASSERT_EQ(0, hfi_notify(self->c.fd, mp.peer));
	hfi_ctx_close(&other);
	EXPECT_EQ(-ECONNRESET, hfi_sdma(self->c.fd, mp.peer, tid, 0, &iov, 1,
					0, NULL));
	EXPECT_EQ(-ECONNRESET, hfi_sdma(self->c.fd, mp.peer, tid, 0, &iov, 1,
					KFAB_HFI_SDMA_NOTIFY, NULL));
	EXPECT_EQ(-ECONNRESET, hfi_notify(self->c.fd, mp.peer));
	/* a new context in the same slot is not the old peer */
	ASSERT_EQ(0, hfi_ctx_assign(&other, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	EXPECT_EQ(-ECONNRESET, hfi_notify(self->c.fd, mp.peer));
	hfi_ctx_close(&other);
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, mp.peer));
	EXPECT_EQ(-EINVAL, hfi_notify(self->c.fd, mp.peer));
}

/* The sender on unit 1, the receiver on unit 0: counted on unit 0 only. */
TEST_F(ctx, sdma_cross_unit)
{
	__u8 src[512];
	struct kfab_iovec iov = { (__u64)(uintptr_t)src, sizeof(src) };
	struct kfab_hfi_map_peer mp;
	uint64_t r0, r1, b0;
	struct hfi_ctx s;
	__u32 tid;
	__u64 bytes;

	if (hfi_num_units() < 2)
		SKIP(return, "one unit only");
	ASSERT_EQ(0, hfi_ctx_assign(&s, 1, self->uuid, KFAB_HFI_PKEY_DEFAULT,
				    0));
	EXPECT_EQ(self->c.info.jkey, s.info.jkey);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, HFI_PAGE, &tid,
				    NULL));
	ASSERT_EQ(0, hfi_map_peer(s.fd, self->c.info.lid, self->c.info.ctxt,
				  &mp));
	r0 = hfi_sysfs_get(0, "counters/sdma_requests");
	b0 = hfi_sysfs_get(0, "counters/sdma_bytes");
	r1 = hfi_sysfs_get(1, "counters/sdma_requests");
	hfi_fill(src, sizeof(src), 99);
	ASSERT_EQ(0, hfi_sdma(s.fd, mp.peer, tid, 7, &iov, 1, 0, &bytes));
	EXPECT_EQ(sizeof(src), bytes);
	EXPECT_EQ(0, memcmp(self->buf + 7, src, sizeof(src)));
	EXPECT_EQ(r0 + 1, hfi_sysfs_get(0, "counters/sdma_requests"));
	EXPECT_EQ(b0 + sizeof(src), hfi_sysfs_get(0, "counters/sdma_bytes"));
	EXPECT_EQ(r1, hfi_sysfs_get(1, "counters/sdma_requests"));
	hfi_ctx_close(&s);
}

/* SET_EVENTFD / NOTIFY */

TEST_F(ctx, set_eventfd_errors)
{
	int pfd[2], closed, efd;

	closed = dup(0);
	ASSERT_LE(0, closed);
	close(closed);
	EXPECT_EQ(-EBADF, hfi_set_eventfd(self->c.fd, closed));
	EXPECT_EQ(-EBADF, hfi_set_eventfd(self->c.fd, INT_MAX));
	EXPECT_EQ(-EBADF, hfi_set_eventfd(self->c.fd, 1 << 20));
	EXPECT_EQ(-EINVAL, hfi_set_eventfd(self->c.fd, -2));
	EXPECT_EQ(-EINVAL, hfi_set_eventfd(self->c.fd, INT_MIN));
	ASSERT_EQ(0, pipe(pfd));
	EXPECT_EQ(-EINVAL, hfi_set_eventfd(self->c.fd, pfd[0]));
	EXPECT_EQ(-EINVAL, hfi_set_eventfd(self->c.fd, self->c.fd));
	close(pfd[0]);
	close(pfd[1]);
	/* -1 with nothing set, set, replace, clear */
	EXPECT_EQ(0, hfi_set_eventfd(self->c.fd, -1));
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	EXPECT_EQ(0, hfi_set_eventfd(self->c.fd, efd));
	EXPECT_EQ(0, hfi_set_eventfd(self->c.fd, efd));
	EXPECT_EQ(0, hfi_set_eventfd(self->c.fd, -1));
	EXPECT_EQ(0, hfi_set_eventfd(self->c.fd, -1));
	close(efd);
}

TEST_F(ctx, notify_signals_eventfd)
{
	uint64_t n0 = hfi_sysfs_get(0, "counters/notifies");
	int e1, e2;
	__u64 v;
	__u32 peer;

	peer = loopback(_metadata, self);
	/* no eventfd: counted anyway */
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
	EXPECT_EQ(n0 + 1, hfi_sysfs_get(0, "counters/notifies"));

	e1 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, e1);
	ASSERT_LE(0, e2);
	ASSERT_EQ(0, hfi_set_eventfd(self->c.fd, e1));
	EXPECT_EQ(0, hfi_poll_in(e1, 0));
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
	EXPECT_EQ(1, hfi_poll_in(e1, 1000));
	EXPECT_EQ(8, read(e1, &v, sizeof(v)));
	EXPECT_EQ(1U, v);
	/* replaced: only the new one is signalled */
	ASSERT_EQ(0, hfi_set_eventfd(self->c.fd, e2));
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
	EXPECT_EQ(1, hfi_poll_in(e2, 1000));
	EXPECT_EQ(0, hfi_poll_in(e1, 0));
	EXPECT_EQ(8, read(e2, &v, sizeof(v)));
	/* the kernel holds its own reference: closing ours is fine */
	close(e2);
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
	/* cleared: nothing signalled, still counted */
	ASSERT_EQ(0, hfi_set_eventfd(self->c.fd, -1));
	ASSERT_EQ(0, hfi_set_eventfd(self->c.fd, e1));
	ASSERT_EQ(0, hfi_set_eventfd(self->c.fd, -1));
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
	EXPECT_EQ(0, hfi_poll_in(e1, 100));
	EXPECT_EQ(n0 + 5, hfi_sysfs_get(0, "counters/notifies"));
	close(e1);
}

TEST_F(ctx, notify_unknown)
{
	__u32 peer;

	EXPECT_EQ(-EINVAL, hfi_notify(self->c.fd, 0));
	EXPECT_EQ(-EINVAL, hfi_notify(self->c.fd, 0xffffffff));
	peer = loopback(_metadata, self);
	EXPECT_EQ(-EINVAL, hfi_notify(self->c.fd, peer + 1));
	EXPECT_EQ(0, hfi_notify(self->c.fd, peer));
}


/* ------------------------------------------------------------------ */
/* LIST_CTXTS */

#define LIST_MAX	160	/* the largest ctxts_per_unit */

/* LIST_CTXTS on @fd into @ents[@count]; @l gets the answer. */
static int list_ctxts(int fd, struct kfab_hfi_ctxt_entry *ents, __u32 count,
		      struct kfab_hfi_list_ctxts *l)
{
	memset(l, 0, sizeof(*l));
	l->entries = (__u64)(uintptr_t)ents;
	l->count = count;
	return hfi_ioctl(fd, KFAB_HFI_IOC_LIST_CTXTS, l);
}

/* The entry of context @ctxt among those LIST_CTXTS answered in @l, or NULL. */
static const struct kfab_hfi_ctxt_entry *
list_find(const struct kfab_hfi_list_ctxts *l, __u32 ctxt)
{
	const struct kfab_hfi_ctxt_entry *e = (void *)(uintptr_t)l->entries;
	const struct kfab_hfi_ctxt_entry *end = e + l->count;

	while (e < end && e->ctxt != ctxt)
		e++;
	return e < end ? e : NULL;
}

/* Our own context, from its own file and from an unassigned one. */
TEST_F(ctx, list_ctxts_own)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX + 1];
	const struct kfab_hfi_ctxt_entry *e;
	struct kfab_hfi_list_ctxts l;
	__u32 tid, npages;
	int fd2;

	fd2 = hfi_open(0);
	ASSERT_LE(0, fd2);
	memset(ents, 0xff, sizeof(ents));
	ASSERT_EQ(0, list_ctxts(fd2, ents, LIST_MAX, &l));
	EXPECT_EQ((__u64)(uintptr_t)ents, l.entries);
	EXPECT_LE(1U, l.total);
	EXPECT_EQ(l.total, l.count);
	EXPECT_EQ(0U, l.flags);
	EXPECT_EQ(0U, l.pad0);
	EXPECT_TRUE(hfi_all_zero(l.reserved, sizeof(l.reserved)));
	/* in context order, each once */
	for (__u32 i = 1; i < l.count; i++)
		EXPECT_LT(ents[i - 1].ctxt, ents[i].ctxt);
	/* nothing written past the entries filled */
	EXPECT_EQ(0xffffffffU, ents[l.count].ctxt);
	e = list_find(&l, self->c.info.ctxt);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(self->c.info.jkey, e->jkey);
	EXPECT_EQ(self->c.info.pkey, e->pkey);
	EXPECT_EQ(self->c.info.sl, e->sl);
	EXPECT_EQ(0, e->pad0);
	EXPECT_EQ(getpid(), e->pid);
	EXPECT_EQ(0U, e->flags);
	EXPECT_EQ(0U, e->peer_refs);
	EXPECT_EQ(self->c.info.rhq_entries, e->rhq_entries);
	EXPECT_EQ(self->c.info.eager_count, e->eager_count);
	EXPECT_EQ(self->c.info.eager_size, e->eager_size);
	EXPECT_EQ(0U, e->ntids);
	EXPECT_EQ(0U, e->tid_pages);
	EXPECT_EQ(0U, e->rhq_full_drops);
	EXPECT_EQ(0U, e->eager_full_drops);
	EXPECT_EQ(0U, e->injected_drops);
	EXPECT_TRUE(hfi_all_zero(e->reserved, sizeof(e->reserved)));

	/* a loopback handle, a TID buffer, the armed word and a drop */
	loopback(_metadata, self);
	ASSERT_EQ(0, hfi_tid_update(self->c.fd, self->buf, 3 * HFI_PAGE,
				    &tid, &npages));
	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	self->c.q.kctrl->armed = 1;
	self->c.q.kctrl->injected_drops = 3;
	ASSERT_EQ(0, list_ctxts(self->c.fd, ents, LIST_MAX, &l));
	e = list_find(&l, self->c.info.ctxt);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(1U, e->peer_refs);
	EXPECT_EQ(1U, e->ntids);
	EXPECT_EQ(npages, e->tid_pages);
	EXPECT_EQ(KFAB_HFI_CTXT_ARMED, e->flags);
	EXPECT_EQ(3U, e->injected_drops);
	self->c.q.kctrl->armed = 0;

	/* another unit does not list it */
	if (hfi_num_units() > 1) {
		int fd1 = hfi_open(1);

		ASSERT_LE(0, fd1);
		ASSERT_EQ(0, list_ctxts(fd1, ents, LIST_MAX, &l));
		EXPECT_EQ(NULL, list_find(&l, self->c.info.ctxt));
		close(fd1);
	}

	/* released: gone from the list */
	hfi_ctx_close(&self->c);
	ASSERT_EQ(0, list_ctxts(fd2, ents, LIST_MAX, &l));
	EXPECT_EQ(NULL, list_find(&l, self->c.info.ctxt));
	close(fd2);
}

/* Too small an array: that many filled, the total still reported. */
TEST_F(ctx, list_ctxts_count_small)
{
	struct kfab_hfi_ctxt_entry ents[2];
	struct kfab_hfi_list_ctxts l;
	struct hfi_ctx c2;

	ASSERT_EQ(0, hfi_ctx_assign(&c2, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT,
				    0));
	memset(ents, 0xaa, sizeof(ents));
	ASSERT_EQ(0, list_ctxts(self->c.fd, ents, 1, &l));
	EXPECT_EQ(1U, l.count);
	EXPECT_LE(2U, l.total);
	EXPECT_NE(0xaaaaaaaaU, ents[0].ctxt);
	/* the second element was not written */
	EXPECT_EQ(0xaaaaaaaaU, ents[1].ctxt);

	/* count 0: the array is not touched, it may be NULL or bad */
	ASSERT_EQ(0, list_ctxts(self->c.fd, NULL, 0, &l));
	EXPECT_EQ(0U, l.count);
	EXPECT_LE(2U, l.total);
	ASSERT_EQ(0, list_ctxts(self->c.fd, hfi_unmapped_page(), 0, &l));
	EXPECT_EQ(0U, l.count);
	hfi_ctx_close(&c2);
}

TEST_F(ctx, list_ctxts_efault)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX];
	struct kfab_hfi_list_ctxts l;
	void *ro;

	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_LIST_CTXTS, NULL));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_LIST_CTXTS,
				     (void *)1));
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_LIST_CTXTS,
				     hfi_unmapped_page()));
	/* we have a context, so there is an entry to write */
	EXPECT_EQ(-EFAULT, list_ctxts(self->c.fd, NULL, 1, &l));
	EXPECT_EQ(-EFAULT, list_ctxts(self->c.fd, hfi_unmapped_page(),
				      LIST_MAX, &l));
	memset(ents, 0, sizeof(ents));
	ro = hfi_ro_page(ents, sizeof(ents[0]));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, list_ctxts(self->c.fd, ro, 1, &l));
	munmap(ro, HFI_PAGE);
	/* the argument itself read-only: the output cannot be written */
	memset(&l, 0, sizeof(l));
	l.entries = (__u64)(uintptr_t)ents;
	l.count = LIST_MAX;
	ro = hfi_ro_page(&l, sizeof(l));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, hfi_ioctl(self->c.fd, KFAB_HFI_IOC_LIST_CTXTS, ro));
	munmap(ro, HFI_PAGE);
}

TEST_F(unassigned, list_ctxts_einval)
{
	struct kfab_hfi_list_ctxts l;

	for (int bit = 0; bit < 32; bit++) {
		if (KFAB_HFI_LIST_FLAGS_ALL & (1U << bit))
			continue;
		memset(&l, 0, sizeof(l));
		l.flags = 1U << bit;
		EXPECT_EQ(-EINVAL, hfi_ioctl(self->fd, KFAB_HFI_IOC_LIST_CTXTS,
					     &l)) TH_LOG("flag bit %d", bit);
	}
	/* pad0 and reserved: see the rsv tests. No context is needed. */
	memset(&l, 0, sizeof(l));
	EXPECT_EQ(0, hfi_ioctl(self->fd, KFAB_HFI_IOC_LIST_CTXTS, &l));
	EXPECT_EQ(-EINVAL, hfi_ioctl(self->fd, KFAB_HFI_IOC_CTXT_INFO,
				     &(struct kfab_hfi_ctxt_info){}));
}

struct list_user_arg {
	const __u8 *uuid;
	__u32 root_ctxt;	/* the parent's context, root's */
};

/*
 * As nobody: assign a context, check the list shows it and not root's,
 * report its number, wait to be told to go.
 */
static int list_user_child(void *p, int rfd, int wfd)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX];
	const struct list_user_arg *arg = p;
	struct kfab_hfi_list_ctxts l;
	struct hfi_ctx c;
	__u32 msg;

	if (ctx_assign_dropped(&c, arg->uuid))
		return HFI_CHILD_FAIL(1);
	if (geteuid() != 65534)
		return HFI_CHILD_FAIL(2);
	if (list_ctxts(c.fd, ents, LIST_MAX, &l) || l.total != 1 ||
	    l.count != 1 || ents[0].ctxt != c.info.ctxt ||
	    ents[0].jkey != c.info.jkey || ents[0].pid != getpid())
		return HFI_CHILD_FAIL(3);
	if (list_find(&l, arg->root_ctxt))
		return HFI_CHILD_FAIL(4);
	msg = c.info.ctxt;
	if (hfi_send(wfd, &msg, sizeof(msg)) ||
	    hfi_recv(rfd, &msg, sizeof(msg), 30000))
		return HFI_CHILD_FAIL(5);
	hfi_ctx_close(&c);
	return 0;
}

/* Another user's context is invisible, both ways. */
TEST_F(ctx, list_ctxts_other_user)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX];
	struct list_user_arg arg = {
		.uuid = self->uuid, .root_ctxt = self->c.info.ctxt,
	};
	struct kfab_hfi_list_ctxts l;
	struct hfi_child ch;
	__u32 theirs = 0, go = 1;

	if (geteuid())
		SKIP(return, "needs root to become another user");
	if (hfi_sysfs_get(0, "nfreectxts") < 1)
		SKIP(return, "needs a free context");
	ASSERT_EQ(0, hfi_child_start(&ch, list_user_child, &arg, 60));
	ASSERT_EQ(0, hfi_recv(ch.from, &theirs, sizeof(theirs), 30000))
		TH_LOG("child: %d", hfi_child_wait(&ch, 5000));
	ASSERT_EQ(0, list_ctxts(self->c.fd, ents, LIST_MAX, &l));
	EXPECT_EQ(NULL, list_find(&l, theirs));
	EXPECT_NE(NULL, list_find(&l, self->c.info.ctxt));
	for (__u32 i = 0; i < l.count; i++)
		EXPECT_NE(ch.pid, ents[i].pid);
	EXPECT_EQ(0, hfi_send(ch.to, &go, sizeof(go)));
	EXPECT_EQ(0, hfi_child_wait(&ch, 30000));
	hfi_child_kill(&ch);
}

/* Assign on the parent's file, then exit: the file keeps the context. */
static int list_gone_child(void *p, int rfd, int wfd)
{
	const int *fd = p;

	(void)rfd;
	(void)wfd;
	return hfi_assign_fd(*fd, (const __u8 *)"kfab-owner-gone!",
			     KFAB_HFI_PKEY_DEFAULT, 0, NULL) ?
	       HFI_CHILD_FAIL(1) : 0;
}

TEST_F(unassigned, list_ctxts_owner_gone)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX];
	const struct kfab_hfi_ctxt_entry *e;
	struct kfab_hfi_ctxt_info info;
	struct kfab_hfi_list_ctxts l;
	struct hfi_child ch;

	ASSERT_EQ(0, hfi_child_start(&ch, list_gone_child, &self->fd, 60));
	ASSERT_EQ(0, hfi_child_wait(&ch, 30000));
	ASSERT_EQ(0, hfi_ioctl(self->fd, KFAB_HFI_IOC_CTXT_INFO, &info));
	ASSERT_EQ(0, list_ctxts(self->fd, ents, LIST_MAX, &l));
	e = list_find(&l, info.ctxt);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(info.jkey, e->jkey);
	EXPECT_EQ(0, e->pid);
	EXPECT_EQ(KFAB_HFI_CTXT_OWNER_GONE, e->flags);
}

/* In a child pid namespace our process has no number: pid 0. */
static int list_pidns_child(void *p, int rfd, int wfd)
{
	static struct kfab_hfi_ctxt_entry ents[LIST_MAX];
	const __u32 *ours = p;
	const struct kfab_hfi_ctxt_entry *e;
	struct kfab_hfi_list_ctxts l;
	struct hfi_ctx c;
	int status = 0;
	pid_t pid;

	(void)rfd;
	(void)wfd;
	if (unshare(CLONE_NEWPID))
		return HFI_CHILD_FAIL(1);
	pid = fork();
	if (pid < 0)
		return HFI_CHILD_FAIL(2);
	if (!pid) {
		/* pid 1 of the new namespace */
		if (hfi_ctx_assign(&c, 0, (const __u8 *)"kfab-pid-ns-test",
				   KFAB_HFI_PKEY_DEFAULT, 0))
			_exit(HFI_CHILD_FAIL(3));
		if (list_ctxts(c.fd, ents, LIST_MAX, &l))
			_exit(HFI_CHILD_FAIL(4));
		e = list_find(&l, *ours);
		if (!e || e->pid != 0)
			_exit(HFI_CHILD_FAIL(5));
		e = list_find(&l, c.info.ctxt);
		if (!e || e->pid != 1)
			_exit(HFI_CHILD_FAIL(6));
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return HFI_CHILD_FAIL(7);
	return WEXITSTATUS(status);
}

TEST_F(ctx, list_ctxts_pid_namespace)
{
	struct hfi_child ch;

	if (geteuid())
		SKIP(return, "needs root for a pid namespace");
	if (hfi_sysfs_get(0, "nfreectxts") < 1)
		SKIP(return, "needs a free context");
	ASSERT_EQ(0, hfi_child_start(&ch, list_pidns_child, &self->c.info.ctxt,
				     60));
	EXPECT_EQ(0, hfi_child_wait(&ch, 30000));
}

/* ------------------------------------------------------------------ */
/*
 * Reserved, padding and flag words: each one separately non-zero fails
 * with EINVAL, and the same request with it zero then succeeds.
 */

enum rsv_cmd {
	RSV_ASSIGN, RSV_MAP_PEER, RSV_UNMAP_PEER, RSV_NOTIFY, RSV_TID_UPDATE,
	RSV_TID_FREE, RSV_SDMA, RSV_SET_EVENTFD, RSV_LIST_CTXTS,
};

FIXTURE(rsv) {
	struct hfi_ctx c;
	int fd2;		/* unassigned, for ASSIGN */
	__u8 uuid[16];
	__u8 *buf;
	int efd;
	union {
		__u8 raw[256];
		struct kfab_hfi_assign assign;
		struct kfab_hfi_map_peer mp;
		struct kfab_hfi_peer_req pr;
		struct kfab_hfi_tid_update tu;
		struct kfab_hfi_tid_free tf;
		struct kfab_hfi_sdma sd;
		struct kfab_hfi_eventfd ev;
		struct kfab_hfi_list_ctxts lc;
	} arg;
	struct kfab_iovec iov;
};

KFAB_RSV_VARIANT(enum rsv_cmd);

RSV(assign_pad0, RSV_ASSIGN, struct kfab_hfi_assign, pad0, 1);
RSV(assign_flags, RSV_ASSIGN, struct kfab_hfi_assign, flags, 1);
RSV(assign_flags_msb, RSV_ASSIGN, struct kfab_hfi_assign, flags, 1U << 31);
RSV(assign_reserved0, RSV_ASSIGN, struct kfab_hfi_assign, reserved[0], 1);
RSV(assign_reserved1, RSV_ASSIGN, struct kfab_hfi_assign, reserved[1],
    1ULL << 63);
RSV(map_peer_flags, RSV_MAP_PEER, struct kfab_hfi_map_peer, flags, 1);
RSV(map_peer_reserved, RSV_MAP_PEER, struct kfab_hfi_map_peer, reserved,
    1ULL << 40);
RSV(unmap_peer_flags, RSV_UNMAP_PEER, struct kfab_hfi_peer_req, flags, 1);
RSV(unmap_peer_reserved, RSV_UNMAP_PEER, struct kfab_hfi_peer_req, reserved,
    1ULL << 63);
RSV(notify_flags, RSV_NOTIFY, struct kfab_hfi_peer_req, flags, 1);
RSV(notify_reserved, RSV_NOTIFY, struct kfab_hfi_peer_req, reserved, 1);
RSV(tid_update_flags, RSV_TID_UPDATE, struct kfab_hfi_tid_update, flags, 1);
RSV(tid_update_pad0, RSV_TID_UPDATE, struct kfab_hfi_tid_update, pad0, 1);
RSV(tid_update_reserved0, RSV_TID_UPDATE, struct kfab_hfi_tid_update,
    reserved[0], 1);
RSV(tid_update_reserved1, RSV_TID_UPDATE, struct kfab_hfi_tid_update,
    reserved[1], 1ULL << 63);
RSV(tid_free_flags, RSV_TID_FREE, struct kfab_hfi_tid_free, flags, 1);
RSV(tid_free_reserved, RSV_TID_FREE, struct kfab_hfi_tid_free, reserved, 1);
RSV(sdma_flags_bit1, RSV_SDMA, struct kfab_hfi_sdma, flags, 2);
RSV(sdma_flags_msb, RSV_SDMA, struct kfab_hfi_sdma, flags, 1U << 31);
RSV(sdma_reserved0, RSV_SDMA, struct kfab_hfi_sdma, reserved[0], 1);
RSV(sdma_reserved1, RSV_SDMA, struct kfab_hfi_sdma, reserved[1], 1ULL << 63);
RSV(set_eventfd_flags, RSV_SET_EVENTFD, struct kfab_hfi_eventfd, flags, 1);
RSV(set_eventfd_reserved, RSV_SET_EVENTFD, struct kfab_hfi_eventfd,
    reserved, 1);
RSV(list_ctxts_flags, RSV_LIST_CTXTS, struct kfab_hfi_list_ctxts, flags, 1);
RSV(list_ctxts_flags_msb, RSV_LIST_CTXTS, struct kfab_hfi_list_ctxts, flags,
    1U << 31);
RSV(list_ctxts_pad0, RSV_LIST_CTXTS, struct kfab_hfi_list_ctxts, pad0, 1);
RSV(list_ctxts_reserved0, RSV_LIST_CTXTS, struct kfab_hfi_list_ctxts,
    reserved[0], 1);
RSV(list_ctxts_reserved1, RSV_LIST_CTXTS, struct kfab_hfi_list_ctxts,
    reserved[1], 1ULL << 63);

FIXTURE_SETUP(rsv)
{
	hfi_uuid_random(self->uuid);
	ASSERT_EQ(0, hfi_ctx_assign(&self->c, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	self->fd2 = hfi_open(0);
	ASSERT_LE(0, self->fd2);
	self->buf = mmap(NULL, 4 * HFI_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
	self->efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(rsv)
{
	hfi_ctx_close(&self->c);
	if (self->fd2 >= 0)
		close(self->fd2);
	munmap(self->buf, 4 * HFI_PAGE);
	close(self->efd);
}

/* A valid argument for @cmd; returns the fd and ioctl to use. */
static int rsv_build(struct __test_metadata *_metadata,
		     FIXTURE_DATA(rsv) *self, enum rsv_cmd cmd,
		     unsigned long *ioc)
{
	struct kfab_hfi_map_peer mp;
	__u32 peer = 0, tid = 0;

	if (cmd == RSV_UNMAP_PEER || cmd == RSV_NOTIFY || cmd == RSV_SDMA) {
		EXPECT_EQ(0, hfi_map_peer(self->c.fd, self->c.info.lid,
					  self->c.info.ctxt, &mp));
		peer = mp.peer;
	}
	if (cmd == RSV_TID_FREE || cmd == RSV_SDMA) {
		EXPECT_EQ(0, hfi_tid_update(self->c.fd, self->buf, HFI_PAGE,
					    &tid, NULL));
	}
	memset(&self->arg, 0, sizeof(self->arg));
	switch (cmd) {
	case RSV_ASSIGN:
		memcpy(self->arg.assign.uuid, self->uuid, 16);
		self->arg.assign.pkey = KFAB_HFI_PKEY_DEFAULT;
		*ioc = KFAB_HFI_IOC_ASSIGN_CTXT;
		return self->fd2;
	case RSV_MAP_PEER:
		self->arg.mp.lid = self->c.info.lid;
		self->arg.mp.ctxt = self->c.info.ctxt;
		*ioc = KFAB_HFI_IOC_MAP_PEER;
		break;
	case RSV_UNMAP_PEER:
	case RSV_NOTIFY:
		self->arg.pr.peer = peer;
		*ioc = cmd == RSV_NOTIFY ? KFAB_HFI_IOC_NOTIFY :
					   KFAB_HFI_IOC_UNMAP_PEER;
		break;
	case RSV_TID_UPDATE:
		self->arg.tu.vaddr = (__u64)(uintptr_t)self->buf;
		self->arg.tu.length = 2 * HFI_PAGE;
		*ioc = KFAB_HFI_IOC_TID_UPDATE;
		break;
	case RSV_TID_FREE:
		self->arg.tf.handle = tid;
		*ioc = KFAB_HFI_IOC_TID_FREE;
		break;
	case RSV_SDMA:
		self->iov.addr = (__u64)(uintptr_t)self->buf + HFI_PAGE;
		self->iov.len = 64;
		self->arg.sd.peer = peer;
		self->arg.sd.tid = tid;
		self->arg.sd.iov = (__u64)(uintptr_t)&self->iov;
		self->arg.sd.iovcnt = 1;
		*ioc = KFAB_HFI_IOC_SDMA;
		break;
	case RSV_SET_EVENTFD:
		self->arg.ev.fd = self->efd;
		*ioc = KFAB_HFI_IOC_SET_EVENTFD;
		break;
	case RSV_LIST_CTXTS:
		*ioc = KFAB_HFI_IOC_LIST_CTXTS;
		return self->fd2;	/* needs no context */
	}
	return self->c.fd;
}

TEST_F(rsv, nonzero_rejected)
{
	uint64_t pinned = hfi_sysfs_get(0, "counters/tid_pages_pinned");
	uint64_t nfree = hfi_sysfs_get(0, "nfreectxts");
	unsigned long ioc = 0;
	int fd;

	fd = rsv_build(_metadata, self, variant->cmd, &ioc);
	ASSERT_LE(variant->off + variant->width, sizeof(self->arg));
	memcpy(self->arg.raw + variant->off, &variant->value, variant->width);
	EXPECT_EQ(-EINVAL, hfi_ioctl(fd, ioc, &self->arg));
	/* refused without side effects */
	if (variant->cmd == RSV_TID_UPDATE) {
		EXPECT_EQ(pinned, hfi_sysfs_get(0, "counters/tid_pages_pinned"));
	}
	if (variant->cmd == RSV_ASSIGN) {
		EXPECT_EQ(nfree, hfi_sysfs_get(0, "nfreectxts"));
	}
	/* the same request with the word cleared goes through */
	memset(self->arg.raw + variant->off, 0, variant->width);
	EXPECT_EQ(0, hfi_ioctl(fd, ioc, &self->arg));
}

HFI_TEST_MAIN
