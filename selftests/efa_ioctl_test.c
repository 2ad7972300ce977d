// SPDX-License-Identifier: GPL-2.0
/* kfab_efa ioctls: every command's success path and every errno of the spec. */

#include "efa_util.h"

#include <limits.h>
#include <stddef.h>

#define BUF_PAGES	16

static const struct kfab_cmd all_cmds[] = {
	{ "QUERY_DEVICE", KFAB_EFA_IOC_QUERY_DEVICE },
	{ "CREATE_QP", KFAB_EFA_IOC_CREATE_QP },
	{ "DESTROY_QP", KFAB_EFA_IOC_DESTROY_QP },
	{ "REG_MR", KFAB_EFA_IOC_REG_MR },
	{ "DEREG_MR", KFAB_EFA_IOC_DEREG_MR },
	{ "MAP_PEER", KFAB_EFA_IOC_MAP_PEER },
	{ "UNMAP_PEER", KFAB_EFA_IOC_UNMAP_PEER },
	{ "RDMA", KFAB_EFA_IOC_RDMA },
	{ "SET_EVENTFD", KFAB_EFA_IOC_SET_EVENTFD },
	{ "NOTIFY", KFAB_EFA_IOC_NOTIFY },
};

/* A descriptor number that is not open. */
static int closed_fd(void)
{
	int fd = 900;

	while (fcntl(fd, F_GETFD) >= 0)
		fd++;
	return fd;
}

static bool two_devices(void)
{
	return efa_num_devices() >= 2;
}

/* ------------------------------------------------------------------ */
/* A file with a mapped QP, a loopback peer handle and a buffer */

FIXTURE(qp) {
	struct efa_dev d;
	struct efa_qp qp;
	__u32 peer;		/* loopback handle of qp */
	__u8 *buf;		/* BUF_PAGES pages, read-write */
	size_t buflen;
	struct kfab_knobs knobs[2];
};

FIXTURE_SETUP(qp)
{
	struct kfab_efa_map_peer mp;
	int ret;

	for (unsigned int i = 0; i < 2 && i < efa_num_devices(); i++)
		efa_knobs_save(&self->knobs[i], i);
	ret = efa_dev_open(&self->d, 0, true);
	ASSERT_EQ(0, ret) TH_LOG("open/query/map: %s", strerror(-ret));
	ret = efa_qp_create(&self->qp, self->d.fd, true);
	ASSERT_EQ(0, ret) TH_LOG("create qp: %s", strerror(-ret));
	ASSERT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
				  self->qp.cq.qpn, self->qp.cq.qkey, &mp));
	self->peer = mp.peer;
	self->buflen = BUF_PAGES * EFA_PAGE;
	self->buf = hfi_anon(self->buflen);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0x5a, self->buflen);
}

FIXTURE_TEARDOWN(qp)
{
	for (unsigned int i = 0; i < 2 && i < efa_num_devices(); i++)
		efa_knobs_restore(&self->knobs[i], i);
	efa_qp_unmap(&self->qp);
	efa_dev_close(&self->d);
	if (self->buf)
		munmap(self->buf, self->buflen);
}

/* ---- QUERY_DEVICE ---- */

TEST_F(qp, query_device)
{
	struct kfab_efa_device_info info;
	uint64_t v;
	int64_t node;
	char buf[64];
	__u8 gid[16];

	memset(&info, 0xff, sizeof(info));	/* out only: input ignored */
	ASSERT_EQ(0, efa_ioctl(self->d.fd, KFAB_EFA_IOC_QUERY_DEVICE, &info));
	EXPECT_EQ((__u32)KFAB_ABI_VERSION, info.abi_version);
	EXPECT_EQ(0U, info.device);
	efa_gid(0, gid);
	EXPECT_EQ(0, memcmp(gid, info.gid, 16));
	ASSERT_LT(0, efa_sysfs_read(0, "state", buf, sizeof(buf)));
	EXPECT_EQ(strcmp(buf, "Active\n") ? (__u32)KFAB_EFA_STATE_DOWN :
		  (__u32)KFAB_EFA_STATE_ACTIVE, info.state);
	ASSERT_EQ(0, efa_param_u64("mtu", &v));
	EXPECT_EQ(v, info.mtu);
	EXPECT_EQ(0U, info.mtu % EFA_PAGE);
	ASSERT_EQ(0, efa_param_u64("qps_per_device", &v));
	EXPECT_EQ(v, info.max_qps);
	ASSERT_EQ(0, efa_param_u64("rx_entries", &v));
	EXPECT_EQ(v, info.rx_entries);
	ASSERT_EQ(0, efa_param_u64("max_mrs", &v));
	EXPECT_EQ(v, info.max_mrs);
	EXPECT_EQ(efa_sysfs_get(0, "rnr_retry"), info.rnr_retry);
	ASSERT_LT(0, efa_sysfs_read(0, "numa_node", buf, sizeof(buf)));
	ASSERT_EQ(0, hfi_parse_s64(buf, &node));
	EXPECT_EQ(node, info.numa_node);
	ASSERT_LT(0, efa_sysfs_read(0, "device_rdma", buf, sizeof(buf)));
	EXPECT_EQ(!strcmp(buf, "read write\n") ? 3U : !strcmp(buf, "read\n") ?
		  1U : !strcmp(buf, "write\n") ? 2U : 0U, info.device_rdma);
	EXPECT_EQ(((size_t)info.max_mrs * 4 + EFA_PAGE - 1) / EFA_PAGE *
		  EFA_PAGE, info.mr_state_size);
	EXPECT_NE(info.status_offset, info.mr_state_offset);
	EXPECT_TRUE(hfi_all_zero(info.reserved, sizeof(info.reserved)));
	/* the same answer twice */
	EXPECT_EQ(0, memcmp(&info, &self->d.info, sizeof(info)));
}

TEST_F(qp, query_device_unit1)
{
	struct efa_dev d;
	__u8 gid[16];

	if (!two_devices())
		SKIP(return, "one device only (num_devices=1)");
	ASSERT_EQ(0, efa_dev_open(&d, 1, false));
	EXPECT_EQ(1U, d.info.device);
	efa_gid(1, gid);
	EXPECT_EQ(0, memcmp(gid, d.info.gid, 16));
	EXPECT_EQ(self->d.info.max_mrs, d.info.max_mrs);
	efa_dev_close(&d);
}

TEST_F(qp, efault)
{
	kfab_check_efault(_metadata, self->d.fd, all_cmds,
			  ARRAY_SIZE(all_cmds));
	/* nothing was created by any of them */
	EXPECT_EQ(1U, efa_sysfs_get(0, "max_qps") - efa_sysfs_get(0, "nfreeqps"))
		TH_LOG("QPs: only the fixture's");
}

/* Valid input on a read-only page: the output cannot be written back. */
TEST_F(qp, efault_readonly_output)
{
	struct kfab_efa_device_info info;
	struct kfab_efa_map_peer mp;
	struct kfab_efa_reg_mr mr;
	struct kfab_efa_reg_mr good;
	struct kfab_efa_rdma rd;
	struct kfab_iovec iov = { (__u64)(uintptr_t)self->buf, 64 };
	uint64_t nfree = efa_sysfs_get(0, "nfreeqps");
	uint64_t qps = efa_sysfs_get(0, "counters/qps");
	uint64_t created = efa_sysfs_get(0, "counters/qps_created");
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	uint64_t pinned = efa_sysfs_get(0, "counters/pinned_pages");
	unsigned int valid = 0, valid_after = 0;
	void *ro;

	memset(&info, 0, sizeof(info));
	ro = hfi_ro_page(&info, sizeof(info));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, efa_ioctl(self->d.fd, KFAB_EFA_IOC_QUERY_DEVICE, ro));
	munmap(ro, EFA_PAGE);

	/* CREATE_QP undone: no QP left behind */
	ro = hfi_ro_page(&info, sizeof(struct kfab_efa_create_qp));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, efa_ioctl(self->d.fd, KFAB_EFA_IOC_CREATE_QP, ro));
	munmap(ro, EFA_PAGE);
	EXPECT_EQ(nfree, efa_sysfs_get(0, "nfreeqps"));
	EXPECT_EQ(qps, efa_sysfs_get(0, "counters/qps"));
	(void)created;

	/* REG_MR undone: no MR, no pin, no mr_state slot */
	for (__u32 i = 0; i < self->d.info.max_mrs; i++)
		valid += efa_mr_state(&self->d, i) != KFAB_EFA_MR_STATE_FREE;
	memset(&mr, 0, sizeof(mr));
	mr.vaddr = (__u64)(uintptr_t)self->buf;
	mr.length = 4 * EFA_PAGE;
	mr.access = KFAB_EFA_ACCESS_LOCAL_WRITE;
	ro = hfi_ro_page(&mr, sizeof(mr));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, efa_ioctl(self->d.fd, KFAB_EFA_IOC_REG_MR, ro));
	munmap(ro, EFA_PAGE);
	EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
	for (__u32 i = 0; i < self->d.info.max_mrs; i++)
		valid_after += efa_mr_state(&self->d, i) !=
			       KFAB_EFA_MR_STATE_FREE;
	EXPECT_EQ(valid, valid_after);

	/* MAP_PEER */
	memset(&mp, 0, sizeof(mp));
	memcpy(mp.gid, self->d.info.gid, 16);
	mp.qpn = self->qp.cq.qpn;
	mp.qkey = self->qp.cq.qkey;
	ro = hfi_ro_page(&mp, sizeof(mp));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, efa_ioctl(self->d.fd, KFAB_EFA_IOC_MAP_PEER, ro));
	munmap(ro, EFA_PAGE);

	/* RDMA: the copy was made, the output could not be written */
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf + 8 * EFA_PAGE,
				EFA_PAGE, KFAB_EFA_ACCESS_LOCAL_WRITE |
				KFAB_EFA_ACCESS_REMOTE_WRITE, &good));
	memset(self->buf, 0x11, 64);
	memset(&rd, 0, sizeof(rd));
	rd.peer = self->peer;
	rd.op = KFAB_EFA_RDMA_WRITE;
	rd.rkey = good.rkey;
	rd.remote_addr = good.vaddr;
	rd.iov = (__u64)(uintptr_t)&iov;
	rd.iovcnt = 1;
	ro = hfi_ro_page(&rd, sizeof(rd));
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, efa_ioctl(self->d.fd, KFAB_EFA_IOC_RDMA, ro));
	munmap(ro, EFA_PAGE);
	EXPECT_EQ(0, memcmp(self->buf, self->buf + 8 * EFA_PAGE, 64));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, good.lkey));
}

/* ioctl type, number, size and direction encodings the module must refuse */
TEST_F(qp, unknown_commands)
{
	struct kfab_hfi_version v;

	kfab_check_unknown_commands(_metadata, self->d.fd, all_cmds,
				    ARRAY_SIZE(all_cmds), 0x20, 0x29);
	/* HFI's numbers */
	memset(&v, 0, sizeof(v));
	EXPECT_EQ(-ENOTTY, efa_ioctl(self->d.fd, KFAB_HFI_IOC_GET_VERSION, &v));
}

/* ---- CREATE_QP / DESTROY_QP ---- */

TEST_F(qp, create_qp)
{
	const struct kfab_efa_create_qp *cq = &self->qp.cq;
	uint64_t nfree = efa_sysfs_get(0, "nfreeqps");
	uint64_t qps = efa_sysfs_get(0, "counters/qps");
	uint64_t created = efa_sysfs_get(0, "counters/qps_created");
	struct kfab_efa_create_qp c2;

	EXPECT_LE(1U, cq->qpn);
	EXPECT_GE(0xffffffU, cq->qpn);
	EXPECT_NE(0U, cq->qkey);
	EXPECT_EQ(self->d.info.rx_entries, cq->rx_entries);
	EXPECT_EQ(0U, cq->rx_entries & (cq->rx_entries - 1));
	EXPECT_EQ(sizeof(struct kfab_efa_rx_entry), cq->rx_entry_size);
	EXPECT_EQ(self->d.info.mtu, cq->mtu);
	EXPECT_TRUE(hfi_all_zero(cq->reserved, sizeof(cq->reserved)));
	EXPECT_NE(cq->ctrl_offset, cq->ring_offset);
	EXPECT_NE(cq->ring_offset, cq->bufs_offset);
	/* zeroed queues */
	EXPECT_TRUE(hfi_all_zero(self->qp.q.ctrl, EFA_PAGE));
	EXPECT_TRUE(hfi_all_zero(self->qp.q.ring, efa_ring_bytes(cq->rx_entries)));
	EXPECT_TRUE(hfi_all_zero(self->qp.q.bufs,
			     efa_bufs_bytes(cq->rx_entries, cq->mtu)));

	/* out fields are ignored on input */
	memset(&c2, 0xa5, sizeof(c2));
	c2.flags = 0;
	memset(c2.reserved, 0, sizeof(c2.reserved));
	ASSERT_EQ(0, efa_ioctl(self->d.fd, KFAB_EFA_IOC_CREATE_QP, &c2));
	EXPECT_NE(cq->qpn, c2.qpn);
	EXPECT_LE(1U, c2.qpn);
	EXPECT_GE(0xffffffU, c2.qpn);
	EXPECT_NE(0U, c2.qkey);
	EXPECT_NE(cq->ctrl_offset, c2.ctrl_offset);
	EXPECT_EQ(nfree - 1, efa_sysfs_get(0, "nfreeqps"));
	EXPECT_EQ(qps + 1, efa_sysfs_get(0, "counters/qps"));
	EXPECT_EQ(created + 1, efa_sysfs_get(0, "counters/qps_created"));
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, c2.qpn));
	EXPECT_EQ(nfree, efa_sysfs_get(0, "nfreeqps"));
	EXPECT_EQ(qps, efa_sysfs_get(0, "counters/qps"));
	EXPECT_EQ(created + 1, efa_sysfs_get(0, "counters/qps_created"));
}

/* qpns are allocated cyclically: not reused soon. */
TEST_F(qp, qpn_not_reused)
{
	struct kfab_efa_create_qp c;
	__u32 seen[16];

	for (int i = 0; i < 16; i++) {
		ASSERT_EQ(0, efa_create_qp(self->d.fd, &c));
		seen[i] = c.qpn;
		EXPECT_NE(self->qp.cq.qpn, c.qpn);
		for (int j = 0; j < i; j++)
			EXPECT_NE(seen[j], c.qpn) TH_LOG("qpn %u reused", c.qpn);
		ASSERT_EQ(0, efa_destroy_qp(self->d.fd, c.qpn));
	}
}

TEST_F(qp, create_qp_ebusy)
{
	uint64_t nfree = efa_sysfs_get(0, "nfreeqps");
	struct kfab_efa_create_qp c;
	__u32 *qpns;
	uint64_t i;
	int fd;

	ASSERT_NE(UINT64_MAX, nfree);
	qpns = calloc(nfree + 1, sizeof(*qpns));
	ASSERT_NE(NULL, qpns);
	for (i = 0; i < nfree; i++) {
		ASSERT_EQ(0, efa_create_qp(self->d.fd, &c)) TH_LOG("QP %llu",
						(unsigned long long)i);
		qpns[i] = c.qpn;
	}
	EXPECT_EQ(0U, efa_sysfs_get(0, "nfreeqps"));
	EXPECT_EQ(-EBUSY, efa_create_qp(self->d.fd, &c));
	/* another file of the device too */
	fd = efa_open(0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBUSY, efa_create_qp(fd, &c));
	close(fd);
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, qpns[0]));
	EXPECT_EQ(0, efa_create_qp(self->d.fd, &c));
	qpns[0] = c.qpn;
	for (i = 0; i < nfree; i++)
		EXPECT_EQ(0, efa_destroy_qp(self->d.fd, qpns[i]));
	EXPECT_EQ(nfree, efa_sysfs_get(0, "nfreeqps"));
	free(qpns);
}

TEST_F(qp, destroy_qp)
{
	struct kfab_efa_map_peer mp;
	struct efa_qp q2;
	int fd2;

	ASSERT_EQ(0, efa_qp_create(&q2, self->d.fd, true));
	EXPECT_EQ(0U, efa_load_dead(q2.q.ctrl));
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, q2.cq.qpn));
	/* ctrl->dead set; the mapping stays valid */
	EXPECT_NE(0U, efa_load_dead(q2.q.ctrl));
	q2.q.ring[0].len = 7;
	EXPECT_EQ(7U, q2.q.ring[0].len);
	/* gone from the device table */
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, self->d.info.gid,
					q2.cq.qpn, q2.cq.qkey, &mp));
	/* twice, unknown, 0 */
	EXPECT_EQ(-EINVAL, efa_destroy_qp(self->d.fd, q2.cq.qpn));
	EXPECT_EQ(-EINVAL, efa_destroy_qp(self->d.fd, 0));
	EXPECT_EQ(-EINVAL, efa_destroy_qp(self->d.fd, 0x1000000));
	EXPECT_EQ(-EINVAL, efa_destroy_qp(self->d.fd, UINT32_MAX));
	/* a QP of another file is not this file's */
	fd2 = efa_open(0);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EINVAL, efa_destroy_qp(fd2, self->qp.cq.qpn));
	close(fd2);
	EXPECT_EQ(0U, efa_load_dead(self->qp.q.ctrl));
	efa_qp_unmap(&q2);
}

/* rnrs and injected_rnrs: summed from the ctrl pages, kept after destroy */
TEST_F(qp, rnr_counters_survive_destroy)
{
	uint64_t rnrs = efa_sysfs_get(0, "counters/rnrs");
	uint64_t inj = efa_sysfs_get(0, "counters/injected_rnrs");
	struct efa_qp q2;

	ASSERT_EQ(0, efa_qp_create(&q2, self->d.fd, true));
	atomic_fetch_add(hfi_a64(&q2.q.ctrl->rnrs), 5);
	atomic_fetch_add(hfi_a64(&q2.q.ctrl->injected_rnrs), 3);
	EXPECT_EQ(rnrs + 5, efa_sysfs_get(0, "counters/rnrs"));
	EXPECT_EQ(inj + 3, efa_sysfs_get(0, "counters/injected_rnrs"));
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, q2.cq.qpn));
	EXPECT_EQ(rnrs + 5, efa_sysfs_get(0, "counters/rnrs"));
	EXPECT_EQ(inj + 3, efa_sysfs_get(0, "counters/injected_rnrs"));
	efa_qp_unmap(&q2);
}

/* ---- REG_MR / DEREG_MR ---- */

TEST_F(qp, reg_mr)
{
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	uint64_t pinned = efa_sysfs_get(0, "counters/pinned_pages");
	struct kfab_efa_reg_mr m[4];

	/* unaligned start and length: three pages touched */
	memset(&m[0], 0x77, sizeof(m[0]));	/* out fields ignored */
	m[0].vaddr = (__u64)(uintptr_t)self->buf + 100;
	m[0].length = 2 * EFA_PAGE;
	m[0].access = KFAB_EFA_ACCESS_ALL;
	m[0].flags = 0;
	memset(m[0].reserved, 0, sizeof(m[0].reserved));
	ASSERT_EQ(0, efa_ioctl(self->d.fd, KFAB_EFA_IOC_REG_MR, &m[0]));
	EXPECT_NE(0U, m[0].lkey);
	EXPECT_NE(0U, m[0].rkey);
	EXPECT_EQ(3U, m[0].npages);
	EXPECT_GT(self->d.info.max_mrs, m[0].state_index);
	EXPECT_EQ((__u64)(uintptr_t)self->buf + 100, m[0].vaddr);
	EXPECT_EQ(2 * EFA_PAGE, m[0].length);
	EXPECT_TRUE(hfi_all_zero(m[0].reserved, sizeof(m[0].reserved)));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, m[0].state_index));
	EXPECT_EQ(mrs + 1, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned + 3, efa_sysfs_get(0, "counters/pinned_pages"));

	/* the same range again, other access, a single byte */
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf + 100, 2 * EFA_PAGE,
				KFAB_EFA_ACCESS_REMOTE_READ, &m[1]));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf + 5 * EFA_PAGE - 1, 1,
				0, &m[2]));
	EXPECT_EQ(1U, m[2].npages);
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf + 5 * EFA_PAGE - 1, 2,
				KFAB_EFA_ACCESS_LOCAL_WRITE, &m[3]));
	EXPECT_EQ(2U, m[3].npages);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < i; j++) {
			EXPECT_NE(m[i].lkey, m[j].lkey);
			EXPECT_NE(m[i].rkey, m[j].rkey);
			EXPECT_NE(m[i].state_index, m[j].state_index);
		}
	EXPECT_EQ(mrs + 4, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned + 9, efa_sysfs_get(0, "counters/pinned_pages"));

	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m[i].lkey));
		EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_FREE,
			  efa_mr_state(&self->d, m[i].state_index));
	}
	EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
	/* double dereg, unknown, 0 */
	EXPECT_EQ(-EINVAL, efa_dereg_mr(self->d.fd, m[0].lkey));
	EXPECT_EQ(-EINVAL, efa_dereg_mr(self->d.fd, 0));
	EXPECT_EQ(-EINVAL, efa_dereg_mr(self->d.fd, 0x7fffffff));
}

/* lkeys are per file and not reused soon; an MR of another file is unknown */
TEST_F(qp, lkey_per_file)
{
	struct kfab_efa_reg_mr a, b;
	int fd2 = efa_open(0);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE, 0, &a));
	EXPECT_EQ(-EINVAL, efa_dereg_mr(fd2, a.lkey));
	ASSERT_EQ(0, efa_dereg_mr(self->d.fd, a.lkey));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE, 0, &b));
	EXPECT_NE(a.lkey, b.lkey);
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, b.lkey));
	close(fd2);
}

TEST_F(qp, reg_mr_einval)
{
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	uint64_t pinned = efa_sysfs_get(0, "counters/pinned_pages");

	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, 0,
				      KFAB_EFA_ACCESS_ALL, NULL));
	/* wraps */
	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, (void *)(UINTPTR_MAX - 10),
				      EFA_PAGE, 0, NULL));
	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, UINT64_MAX, 0,
				      NULL));
	/* access bits */
	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
				      KFAB_EFA_ACCESS_REMOTE_WRITE, NULL));
	EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
				      KFAB_EFA_ACCESS_REMOTE_WRITE |
				      KFAB_EFA_ACCESS_REMOTE_READ, NULL));
	for (int bit = 3; bit < 32; bit++) {
		EXPECT_EQ(-EINVAL, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
					      KFAB_EFA_ACCESS_LOCAL_WRITE |
					      (1U << bit), NULL))
			TH_LOG("access bit %d", bit);
	}
	EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
}

TEST_F(qp, reg_mr_efault)
{
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	uint64_t pinned = efa_sysfs_get(0, "counters/pinned_pages");
	struct kfab_efa_reg_mr m;
	__u8 *ro, *guard;

	/* not mapped */
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd, hfi_unmapped_page(),
				      EFA_PAGE, 0, NULL));
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd,
				      (void *)(uintptr_t)0xffff888000000000ULL,
				      EFA_PAGE, 0, NULL));
	/* a mapped range running into a PROT_NONE page */
	guard = self->buf + (BUF_PAGES - 1) * EFA_PAGE;
	ASSERT_EQ(0, mprotect(guard, EFA_PAGE, PROT_NONE));
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd, guard - EFA_PAGE,
				      2 * EFA_PAGE, 0, NULL));
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd, guard - 1, 2,
				      KFAB_EFA_ACCESS_LOCAL_WRITE, NULL));
	ASSERT_EQ(0, mprotect(guard, EFA_PAGE, PROT_READ | PROT_WRITE));

	/* read-only memory: LOCAL_WRITE (and so REMOTE_WRITE) refused */
	ro = mmap(NULL, 2 * EFA_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd, ro, EFA_PAGE,
				      KFAB_EFA_ACCESS_LOCAL_WRITE, NULL));
	EXPECT_EQ(-EFAULT, efa_reg_mr(self->d.fd, ro, EFA_PAGE,
				      KFAB_EFA_ACCESS_LOCAL_WRITE |
				      KFAB_EFA_ACCESS_REMOTE_WRITE, NULL));
	EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
	/* ... but REMOTE_READ only, or nothing, is fine */
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, ro, 2 * EFA_PAGE,
				KFAB_EFA_ACCESS_REMOTE_READ, &m));
	EXPECT_EQ(2U, m.npages);
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, ro + 1, 1, 0, &m));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
	munmap(ro, 2 * EFA_PAGE);
	EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
}

TEST_F_TIMEOUT(qp, reg_mr_enospc, 600)
{
	uint64_t max = self->d.info.max_mrs;
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	struct kfab_efa_reg_mr m;
	__u32 *lkeys;
	uint64_t i;
	int fd2;

	if (max > 16384)
		SKIP(return, "max_mrs %llu: too many MRs to fill here (kfab_modules.sh reloads with a small max_mrs)",
		     (unsigned long long)max);
	lkeys = calloc(max, sizeof(*lkeys));
	ASSERT_NE(NULL, lkeys);
	for (i = 0; i < max; i++) {
		ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf + (i % 8) * 8,
					1, 0, &m)) TH_LOG("MR %llu",
							  (unsigned long long)i);
		lkeys[i] = m.lkey;
	}
	EXPECT_EQ(-ENOSPC, efa_reg_mr(self->d.fd, self->buf, 1, 0, NULL));
	/* the cap is per file */
	fd2 = efa_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, efa_reg_mr(fd2, self->buf, 1, 0, &m));
	close(fd2);
	ASSERT_EQ(0, efa_dereg_mr(self->d.fd, lkeys[max / 2]));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf, 1, 0, &m));
	lkeys[max / 2] = m.lkey;
	EXPECT_EQ(-ENOSPC, efa_reg_mr(self->d.fd, self->buf, 1, 0, NULL));
	for (i = 0; i < max; i++)
		EXPECT_EQ(0, efa_dereg_mr(self->d.fd, lkeys[i]));
	EXPECT_EQ(0, efa_sysfs_wait(0, "counters/mrs", mrs, 2000));
	free(lkeys);
}


#define LIMIT_PAGES	8

/* Runs as nobody under RLIMIT_MEMLOCK = LIMIT_PAGES pages. */
static int memlock_child(void *arg, int rfd, int wfd)
{
	struct rlimit rl = { LIMIT_PAGES * EFA_PAGE, LIMIT_PAGES * EFA_PAGE };
	size_t page = EFA_PAGE;
	struct kfab_efa_reg_mr m1, m2, m3;
	long lck0;
	__u8 *buf;
	int fd;

	(void)arg;
	(void)rfd;
	(void)wfd;
	fd = efa_open(0);
	if (fd < 0)
		return HFI_CHILD_FAIL(1);
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return HFI_CHILD_FAIL(2);
	if (kfab_drop_privileges())
		return HFI_CHILD_FAIL(3);
	buf = hfi_anon(2 * LIMIT_PAGES * page);
	if (!buf)
		return HFI_CHILD_FAIL(4);
	lck0 = hfi_vmlck_kb();
	if (efa_reg_mr(fd, buf, (LIMIT_PAGES + 1) * page, 0, NULL) != -ENOMEM)
		return HFI_CHILD_FAIL(5);
	if (hfi_vmlck_kb() != lck0)
		return HFI_CHILD_FAIL(6);
	if (efa_reg_mr(fd, buf, (LIMIT_PAGES - 1) * page,
		       KFAB_EFA_ACCESS_LOCAL_WRITE, &m1))
		return HFI_CHILD_FAIL(7);
	if (efa_reg_mr(fd, buf + LIMIT_PAGES * page, page, 0, &m2))
		return HFI_CHILD_FAIL(8);
	if (efa_reg_mr(fd, buf + (LIMIT_PAGES + 1) * page, page, 0, NULL) !=
	    -ENOMEM)
		return HFI_CHILD_FAIL(9);
	if (efa_dereg_mr(fd, m2.lkey))
		return HFI_CHILD_FAIL(10);
	if (efa_reg_mr(fd, buf + (LIMIT_PAGES + 1) * page, page, 0, &m3))
		return HFI_CHILD_FAIL(11);
	if (efa_dereg_mr(fd, m3.lkey) || efa_dereg_mr(fd, m1.lkey))
		return HFI_CHILD_FAIL(12);
	if (hfi_vmlck_kb() != lck0)
		return HFI_CHILD_FAIL(13);
	close(fd);
	return 0;
}

TEST_F(qp, reg_mr_memlock_enomem)
{
	kfab_run_memlock_child(_metadata, "efa", "counters/pinned_pages",
			       memlock_child);
}

/* ---- MAP_PEER / UNMAP_PEER ---- */

TEST_F(qp, map_peer)
{
	struct kfab_efa_map_peer a, b;

	memset(&a, 0x3c, sizeof(a));		/* out fields ignored */
	memcpy(a.gid, self->d.info.gid, 16);
	a.qpn = self->qp.cq.qpn;
	a.qkey = self->qp.cq.qkey;
	a.flags = 0;
	memset(a.reserved, 0, sizeof(a.reserved));
	a.pad0 = 0;
	ASSERT_EQ(0, efa_ioctl(self->d.fd, KFAB_EFA_IOC_MAP_PEER, &a));
	EXPECT_NE(0U, a.peer);
	EXPECT_NE(self->peer, a.peer);
	EXPECT_EQ(self->qp.cq.rx_entries, a.rx_entries);
	EXPECT_EQ(sizeof(struct kfab_efa_rx_entry), a.rx_entry_size);
	EXPECT_EQ(self->qp.cq.mtu, a.mtu);
	EXPECT_EQ(0U, a.pad0);
	EXPECT_TRUE(hfi_all_zero(a.reserved, sizeof(a.reserved)));
	EXPECT_EQ(self->qp.cq.qpn, a.qpn);
	EXPECT_EQ(self->qp.cq.qkey, a.qkey);
	/* the same QP twice: two handles */
	ASSERT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
				  self->qp.cq.qpn, self->qp.cq.qkey, &b));
	EXPECT_NE(a.peer, b.peer);
	EXPECT_NE(a.ctrl_offset, b.ctrl_offset);
	EXPECT_EQ(0, efa_unmap_peer(self->d.fd, a.peer));
	EXPECT_EQ(0, efa_unmap_peer(self->d.fd, b.peer));
	/* unknown or unmapped handles */
	EXPECT_EQ(-EINVAL, efa_unmap_peer(self->d.fd, a.peer));
	EXPECT_EQ(-EINVAL, efa_unmap_peer(self->d.fd, 0));
	EXPECT_EQ(-EINVAL, efa_unmap_peer(self->d.fd, 0x7ffffff0));
	EXPECT_EQ(-EINVAL, efa_notify(self->d.fd, a.peer));
	/* its offsets are gone */
	EXPECT_EQ(NULL, efa_mmap(self->d.fd, a.ctrl_offset, EFA_PAGE,
				 PROT_READ | PROT_WRITE));
	EXPECT_EQ(EINVAL, errno);
	/* a new handle is not an old one (cyclic) */
	ASSERT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
				  self->qp.cq.qpn, self->qp.cq.qkey, &b));
	EXPECT_NE(a.peer, b.peer);
}

TEST_F(qp, map_peer_other_file_and_device)
{
	struct kfab_efa_map_peer mp;
	struct efa_dev d1;
	struct efa_qp q1;

	/* a QP of another file of device 0 */
	ASSERT_EQ(0, efa_dev_open(&d1, two_devices() ? 1 : 0, false));
	ASSERT_EQ(0, efa_qp_create(&q1, d1.fd, false));
	ASSERT_EQ(0, efa_map_peer(self->d.fd, d1.info.gid, q1.cq.qpn,
				  q1.cq.qkey, &mp));
	EXPECT_EQ(q1.cq.rx_entries, mp.rx_entries);
	/* and the other way */
	ASSERT_EQ(0, efa_map_peer(d1.fd, self->d.info.gid, self->qp.cq.qpn,
				  self->qp.cq.qkey, &mp));
	efa_dev_close(&d1);
}

TEST_F(qp, map_peer_errors)
{
	struct kfab_efa_map_peer mp;
	struct kfab_efa_create_qp c;
	__u8 gid[16];

	/* wrong qkey */
	EXPECT_EQ(-EACCES, efa_map_peer(self->d.fd, self->d.info.gid,
					self->qp.cq.qpn, self->qp.cq.qkey ^ 1,
					&mp));
	EXPECT_EQ(-EACCES, efa_map_peer(self->d.fd, self->d.info.gid,
					self->qp.cq.qpn, 0, &mp));
	/* unknown qpn */
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, self->d.info.gid, 0,
					self->qp.cq.qkey, &mp));
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, self->d.info.gid,
					0x1000000 | self->qp.cq.qpn,
					self->qp.cq.qkey, &mp));
	ASSERT_EQ(0, efa_create_qp(self->d.fd, &c));
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, c.qpn));
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, self->d.info.gid, c.qpn,
					c.qkey, &mp));
	/* unknown gid: the device after the last, another prefix */
	efa_gid(efa_num_devices(), gid);
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, gid, self->qp.cq.qpn,
					self->qp.cq.qkey, &mp));
	efa_gid(0, gid);
	gid[0] = 0xfd;
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, gid, self->qp.cq.qpn,
					self->qp.cq.qkey, &mp));
	memset(gid, 0, sizeof(gid));
	EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, gid, self->qp.cq.qpn,
					self->qp.cq.qkey, &mp));
	/* the QP of device 0 is not on device 1 */
	if (two_devices()) {
		efa_gid(1, gid);
		EXPECT_EQ(-ENOENT, efa_map_peer(self->d.fd, gid,
						self->qp.cq.qpn,
						self->qp.cq.qkey, &mp));
	}
}

TEST_F_TIMEOUT(qp, map_peer_enospc, 120)
{
	struct kfab_efa_map_peer mp;
	__u32 last = 0;
	int i, ret = 0;

	/* the fixture holds one handle already */
	for (i = 1; i < 4096; i++) {
		ret = efa_map_peer(self->d.fd, self->d.info.gid,
				   self->qp.cq.qpn, self->qp.cq.qkey, &mp);
		if (ret)
			break;
		last = mp.peer;
	}
	ASSERT_EQ(0, ret) TH_LOG("handle %d: %s", i, strerror(-ret));
	EXPECT_EQ(-ENOSPC, efa_map_peer(self->d.fd, self->d.info.gid,
					self->qp.cq.qpn, self->qp.cq.qkey,
					&mp));
	ASSERT_EQ(0, efa_unmap_peer(self->d.fd, last));
	EXPECT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
				  self->qp.cq.qpn, self->qp.cq.qkey, &mp));
}

/* ---- RDMA ---- */

/* A second file with a QP and MRs: the target of the fixture's RDMA. */
struct target {
	struct efa_dev d;
	struct efa_qp qp;
	__u32 peer;		/* handle in the fixture's file */
};

static void target_open(struct __test_metadata *_metadata,
			FIXTURE_DATA(qp) *self, struct target *t,
			unsigned int dev)
{
	struct kfab_efa_map_peer mp;

	ASSERT_EQ(0, efa_dev_open(&t->d, dev, true));
	ASSERT_EQ(0, efa_qp_create(&t->qp, t->d.fd, true));
	ASSERT_EQ(0, efa_map_peer(self->d.fd, t->d.info.gid, t->qp.cq.qpn,
				  t->qp.cq.qkey, &mp));
	t->peer = mp.peer;
}

/*
 * A target on the last device (the second of two, else the test's own),
 * with the first page of self->buf registered on it as @m. The number of
 * devices in use: 1 or 2.
 */
static unsigned int target_last_mr(struct __test_metadata *_metadata,
				   FIXTURE_DATA(qp) *self, struct target *t,
				   struct kfab_efa_reg_mr *m)
{
	unsigned int ndev = two_devices() ? 2 : 1;

	target_open(_metadata, self, t, ndev - 1);
	ASSERT_EQ(0, efa_reg_mr(t->d.fd, self->buf, EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, m));
	return ndev;
}

/* Device @dev (0: the test's own, 1: @t's) with @knob set to @val. */
static void knob_query(struct __test_metadata *_metadata,
		       FIXTURE_DATA(qp) *self, const struct target *t,
		       unsigned int dev, const char *knob, const char *val,
		       struct kfab_efa_device_info *info)
{
	ASSERT_EQ(0, efa_sysfs_write(dev, knob, val));
	ASSERT_EQ(0, efa_query(dev ? t->d.fd : self->d.fd, info));
}

/* 8 bytes of RDMA @op between @local and the start of @t's MR @m. */
static int rdma8(FIXTURE_DATA(qp) *self, const struct target *t,
		 const struct kfab_efa_reg_mr *m, __u32 op, __u8 *local)
{
	return efa_rdma1(self->d.fd, t->peer, op, m->rkey, m->vaddr, local, 8,
			 0);
}

static void target_close(struct target *t)
{
	efa_qp_unmap(&t->qp);
	efa_dev_close(&t->d);
}

TEST_F(qp, rdma_access_matrix)
{
	static const __u32 acc[] = {
		0, KFAB_EFA_ACCESS_LOCAL_WRITE, KFAB_EFA_ACCESS_REMOTE_READ,
		KFAB_EFA_ACCESS_LOCAL_WRITE | KFAB_EFA_ACCESS_REMOTE_READ,
		KFAB_EFA_ACCESS_LOCAL_WRITE | KFAB_EFA_ACCESS_REMOTE_WRITE,
		KFAB_EFA_ACCESS_ALL,
	};
	__u8 *mrmem = self->buf, *local = self->buf + 8 * EFA_PAGE;
	struct kfab_efa_reg_mr m;
	struct target t;

	target_open(_metadata, self, &t, 0);
	for (size_t i = 0; i < ARRAY_SIZE(acc); i++) {
		int want_r = acc[i] & KFAB_EFA_ACCESS_REMOTE_READ ? 0 : -EACCES;
		int want_w = acc[i] & KFAB_EFA_ACCESS_REMOTE_WRITE ? 0 : -EACCES;

		ASSERT_EQ(0, efa_reg_mr(t.d.fd, mrmem, 2 * EFA_PAGE, acc[i], &m));
		memset(local, (int)i + 1, 256);
		EXPECT_EQ(want_w, efa_rdma1(self->d.fd, t.peer,
					    KFAB_EFA_RDMA_WRITE, m.rkey,
					    m.vaddr + 8, local, 256, 0))
			TH_LOG("access %#x WRITE", acc[i]);
		if (!want_w)
			EXPECT_EQ(0, memcmp(mrmem + 8, local, 256));
		memset(mrmem, 0xe0 + (int)i, 256);
		memset(local, 0, 256);
		EXPECT_EQ(want_r, efa_rdma1(self->d.fd, t.peer,
					    KFAB_EFA_RDMA_READ, m.rkey,
					    m.vaddr, local, 256, 0))
			TH_LOG("access %#x READ", acc[i]);
		if (!want_r) {
			EXPECT_EQ(0, memcmp(mrmem, local, 256));
		} else {
			EXPECT_TRUE(hfi_all_zero(local, 256));
		}
		EXPECT_EQ(0, efa_dereg_mr(t.d.fd, m.lkey));
		/* a deregistered rkey is unknown */
		EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, t.peer,
					     KFAB_EFA_RDMA_READ, m.rkey,
					     m.vaddr, local, 8, 0));
	}
	target_close(&t);
}

TEST_F(qp, rdma_rkey_of_other_file)
{
	__u8 *local = self->buf + 8 * EFA_PAGE;
	struct kfab_efa_reg_mr mine, other;
	struct target t;
	int fd3;

	target_open(_metadata, self, &t, 0);
	/* an MR of the initiator's own file is not the peer QP's */
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &mine));
	EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_READ,
				     mine.rkey, mine.vaddr, local, 8, 0));
	EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_WRITE,
				     mine.rkey, mine.vaddr, local, 8, 0));
	/* nor is one of a third file */
	fd3 = efa_open(0);
	ASSERT_LE(0, fd3);
	ASSERT_EQ(0, efa_reg_mr(fd3, self->buf, EFA_PAGE, KFAB_EFA_ACCESS_ALL,
				&other));
	EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_READ,
				     other.rkey, other.vaddr, local, 8, 0));
	/* but through the loopback handle our own MR is fine */
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
			       mine.rkey, mine.vaddr, local, 8, 0));
	/* unknown rkeys */
	EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
				     0, mine.vaddr, local, 8, 0));
	EXPECT_EQ(-EACCES, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
				     mine.rkey ^ 0x80000000U, mine.vaddr,
				     local, 8, 0));
	close(fd3);
	target_close(&t);
}

TEST_F(qp, rdma_einval)
{
	__u8 *mrmem = self->buf + EFA_PAGE, *local = self->buf + 8 * EFA_PAGE;
	struct kfab_iovec iov[KFAB_IOV_MAX + 1];
	struct kfab_efa_reg_mr m;
	__u64 start, len = 2 * EFA_PAGE - 100;
	__u32 p = self->peer, op;

	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mrmem + 50, len,
				KFAB_EFA_ACCESS_ALL, &m));
	start = m.vaddr;
	for (op = 0; op < 2; op++) {
		/* whole MR, exactly: fine */
		EXPECT_EQ(0, efa_rdma1(self->d.fd, p, op, m.rkey, start, local,
				       len, 0));
		/* before the start, past the end, overflowing */
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     start - 1, local, 8, 0));
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     start, local, len + 1, 0));
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     start + len, local, 1, 0));
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     start + len - 7, local, 8, 0));
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     UINT64_MAX - 3, local, 8, 0));
		EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, op, m.rkey,
					     start + 8, local, UINT64_MAX - 4,
					     0));
		/* iovcnt 0 and KFAB_IOV_MAX + 1 */
		for (int i = 0; i <= KFAB_IOV_MAX; i++) {
			iov[i].addr = (__u64)(uintptr_t)local;
			iov[i].len = 1;
		}
		EXPECT_EQ(-EINVAL, efa_rdma(self->d.fd, p, op, m.rkey, start,
					    iov, 0, 0, NULL));
		EXPECT_EQ(-EINVAL, efa_rdma(self->d.fd, p, op, m.rkey, start,
					    iov, KFAB_IOV_MAX + 1, 0, NULL));
		EXPECT_EQ(0, efa_rdma(self->d.fd, p, op, m.rkey, start, iov,
				      KFAB_IOV_MAX, 0, NULL));
		/* an iovec that wraps, lengths whose sum overflows */
		iov[0].addr = UINT64_MAX - 10;
		iov[0].len = 64;
		EXPECT_EQ(-EINVAL, efa_rdma(self->d.fd, p, op, m.rkey, start,
					    iov, 1, 0, NULL));
		iov[0].addr = (__u64)(uintptr_t)local;
		iov[0].len = 1ULL << 63;
		iov[1].len = 1ULL << 63;
		iov[2].len = 16;
		EXPECT_EQ(-EINVAL, efa_rdma(self->d.fd, p, op, m.rkey, start,
					    iov, 3, 0, NULL));
	}
	/* op not 0/1, unknown peer */
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, 2, m.rkey, start, local,
				     8, 0));
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p, UINT32_MAX, m.rkey, start,
				     local, 8, 0));
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, 0, 0, m.rkey, start, local,
				     8, 0));
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, p + 0x1000000, 0, m.rkey,
				     start, local, 8, 0));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
}

TEST_F(qp, rdma_efault)
{
	__u8 *mrmem = self->buf, *local = self->buf + 8 * EFA_PAGE, *ro;
	struct kfab_efa_reg_mr m;
	__u32 p = self->peer;

	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mrmem, 2 * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &m));
	/* iovec array unreadable */
	EXPECT_EQ(-EFAULT, efa_rdma(self->d.fd, p, KFAB_EFA_RDMA_READ, m.rkey,
				    m.vaddr, NULL, 1, 0, NULL));
	EXPECT_EQ(-EFAULT, efa_rdma(self->d.fd, p, KFAB_EFA_RDMA_WRITE, m.rkey,
				    m.vaddr, hfi_unmapped_page(), 2, 0, NULL));
	/* local buffer unmapped */
	EXPECT_EQ(-EFAULT, efa_rdma1(self->d.fd, p, KFAB_EFA_RDMA_WRITE,
				     m.rkey, m.vaddr, hfi_unmapped_page(), 64,
				     0));
	EXPECT_EQ(-EFAULT, efa_rdma1(self->d.fd, p, KFAB_EFA_RDMA_READ,
				     m.rkey, m.vaddr, hfi_unmapped_page(), 64,
				     0));
	/* read-only local: fine to WRITE from, not to READ into */
	ro = mmap(NULL, EFA_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, p, KFAB_EFA_RDMA_WRITE, m.rkey,
			       m.vaddr, ro, 64, 0));
	EXPECT_TRUE(hfi_all_zero(mrmem, 64));
	EXPECT_EQ(-EFAULT, efa_rdma1(self->d.fd, p, KFAB_EFA_RDMA_READ,
				     m.rkey, m.vaddr, ro, 64, 0));
	munmap(ro, EFA_PAGE);
	/* a zero-length element is never touched */
	{
		struct kfab_iovec iov[2] = {
			{ (__u64)(uintptr_t)hfi_unmapped_page(), 0 },
			{ (__u64)(uintptr_t)local, 16 },
		};

		EXPECT_EQ(0, efa_rdma(self->d.fd, p, KFAB_EFA_RDMA_READ, m.rkey,
				      m.vaddr, iov, 2, 0, NULL));
	}
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
}

/*
 * RDMA @op of @total bytes between the five @iov of @lens and the MR @m at
 * its offset @moff, whose memory is @mr: each iovec's bytes stand in order
 * from there. The offset in @mr after the last one.
 */
static size_t rdma_in_order(struct __test_metadata *_metadata, int fd,
			    __u32 peer, __u32 op,
			    const struct kfab_efa_reg_mr *m, size_t moff,
			    const struct kfab_iovec *iov, const size_t *lens,
			    size_t total, const __u8 *mr)
{
	__u64 bytes = 0;

	ASSERT_EQ(0, efa_rdma(fd, peer, op, m->rkey, m->vaddr + moff, iov, 5,
			      0, &bytes));
	EXPECT_EQ(total, bytes);
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(0, memcmp(mr + moff,
				    (void *)(uintptr_t)iov[i].addr, lens[i]))
			TH_LOG("iov %d", i);
		moff += lens[i];
	}
	return moff;
}

/* Byte-exact both ways, several iovecs at odd offsets; counted on the target. */
TEST_F(qp, rdma_bytes_and_counters)
{
	unsigned int tdev = two_devices() ? 1 : 0;
	const char *const cnt[] = {
		"counters/rdma_reads", "counters/rdma_read_bytes",
		"counters/rdma_writes", "counters/rdma_write_bytes",
	};
	uint64_t t0[4], i0[4];
	__u8 *mrmem, *src, *dst;
	struct kfab_iovec iov[5];
	size_t lens[5] = { 1, 4095, 3, 8192 + 17, 700 };
	size_t total = 0, off = 0;
	struct kfab_efa_reg_mr m;
	struct target t;

	target_open(_metadata, self, &t, tdev);
	mrmem = hfi_anon(6 * EFA_PAGE);
	src = hfi_anon(6 * EFA_PAGE);
	dst = hfi_anon(6 * EFA_PAGE);
	ASSERT_NE(NULL, mrmem);
	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, efa_reg_mr(t.d.fd, mrmem + 3, 5 * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &m));
	for (int i = 0; i < 4; i++) {
		t0[i] = efa_sysfs_get(tdev, cnt[i]);
		i0[i] = efa_sysfs_get(0, cnt[i]);
	}
	hfi_fill(src, 6 * EFA_PAGE, 42);
	for (int i = 0; i < 5; i++) {
		iov[i].addr = (__u64)(uintptr_t)src + off + 1;
		iov[i].len = lens[i];
		off += lens[i] + 5;
		total += lens[i];
	}
	off = rdma_in_order(_metadata, self->d.fd, t.peer, KFAB_EFA_RDMA_WRITE,
			    &m, 11, iov, lens, total, mrmem + 3);
	/* neighbours untouched */
	EXPECT_EQ(0, mrmem[3 + 10]);
	EXPECT_EQ(0, mrmem[3 + off]);

	/* and back, into other iovecs */
	hfi_fill(mrmem, 6 * EFA_PAGE, 7);
	off = 0;
	for (int i = 0; i < 5; i++) {
		iov[i].addr = (__u64)(uintptr_t)dst + off + 3;
		off += lens[i] + 9;
	}
	rdma_in_order(_metadata, self->d.fd, t.peer, KFAB_EFA_RDMA_READ, &m, 5,
		      iov, lens, total, mrmem + 3);
	EXPECT_EQ(t0[0] + 1, efa_sysfs_get(tdev, cnt[0]));
	EXPECT_EQ(t0[1] + total, efa_sysfs_get(tdev, cnt[1]));
	EXPECT_EQ(t0[2] + 1, efa_sysfs_get(tdev, cnt[2]));
	EXPECT_EQ(t0[3] + total, efa_sysfs_get(tdev, cnt[3]));
	if (tdev) {
		/* not counted on the initiator's device */
		for (int i = 0; i < 4; i++) {
			EXPECT_EQ(i0[i], efa_sysfs_get(0, cnt[i]))
				TH_LOG("%s", cnt[i]);
		}
	}
	/* a refused request counts nothing */
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_READ,
				     m.rkey, m.vaddr - 1, dst, 8, 0));
	EXPECT_EQ(t0[0] + 1, efa_sysfs_get(tdev, cnt[0]));
	EXPECT_EQ(0, efa_dereg_mr(t.d.fd, m.lkey));
	munmap(mrmem, 6 * EFA_PAGE);
	munmap(src, 6 * EFA_PAGE);
	munmap(dst, 6 * EFA_PAGE);
	target_close(&t);
}

TEST_F(qp, rdma_link_rate)
{
	unsigned int tdev = two_devices() ? 1 : 0;
	size_t len = 256 * 1024;
	struct kfab_efa_reg_mr m;
	struct timespec a, b;
	struct target t;
	__u8 *mem;
	double us;

	KFAB_NEED_ROOT();
	target_open(_metadata, self, &t, tdev);
	mem = hfi_anon(2 * len);
	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, efa_reg_mr(t.d.fd, mem, len, KFAB_EFA_ACCESS_ALL, &m));
	/* 256 KiB at 16 Mb/s: 131 ms each way */
	ASSERT_EQ(0, efa_sysfs_write(tdev, "link_rate_mbps", "16"));
	EXPECT_EQ(16U, t.d.status->link_rate_mbps);
	clock_gettime(CLOCK_MONOTONIC, &a);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_WRITE, m.rkey,
			       m.vaddr, mem + len, len, 0));
	EXPECT_EQ(0, efa_rdma1(self->d.fd, t.peer, KFAB_EFA_RDMA_READ, m.rkey,
			       m.vaddr, mem + len, len, 0));
	clock_gettime(CLOCK_MONOTONIC, &b);
	efa_knobs_restore(&self->knobs[tdev], tdev);
	us = (double)(b.tv_sec - a.tv_sec) * 1e6 +
	     (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	EXPECT_LE(0.95 * 2 * len * 8 / 16.0, us) TH_LOG("2 x %zu B at 16 Mb/s in %.0f us",
						       len, us);
	EXPECT_EQ(0, efa_dereg_mr(t.d.fd, m.lkey));
	munmap(mem, 2 * len);
	target_close(&t);
}

/* device_rdma switched off for a direction, on either device */
TEST_F(qp, rdma_eopnotsupp)
{
	static const struct {
		const char *val;
		int r, w;
		__u32 caps;
	} modes[] = {
		{ "read", 0, -EOPNOTSUPP, KFAB_EFA_RDMA_CAP_READ },
		{ "write", -EOPNOTSUPP, 0, KFAB_EFA_RDMA_CAP_WRITE },
		{ "none", -EOPNOTSUPP, -EOPNOTSUPP, 0 },
		{ "read write", 0, 0, 3 },
	};
	__u8 *local = self->buf + 8 * EFA_PAGE;
	struct kfab_efa_reg_mr m;
	unsigned int ndev;
	struct target t;

	KFAB_NEED_ROOT();
	ndev = target_last_mr(_metadata, self, &t, &m);
	for (unsigned int dev = 0; dev < ndev; dev++) {
		for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
			struct kfab_efa_device_info info;

			knob_query(_metadata, self, &t, dev, "device_rdma",
				   modes[i].val, &info);
			EXPECT_EQ(modes[i].caps, info.device_rdma);
			EXPECT_EQ(modes[i].r, rdma8(self, &t, &m,
						    KFAB_EFA_RDMA_READ, local))
				TH_LOG("device %u device_rdma %s READ", dev,
				       modes[i].val);
			EXPECT_EQ(modes[i].w, rdma8(self, &t, &m,
						    KFAB_EFA_RDMA_WRITE, local))
				TH_LOG("device %u device_rdma %s WRITE", dev,
				       modes[i].val);
		}
	}
	EXPECT_EQ(0, efa_dereg_mr(t.d.fd, m.lkey));
	target_close(&t);
}

enum stale_how { STALE_MUNMAP, STALE_MREMAP, STALE_MAP_FIXED, STALE_MADV };

static void check_stale(struct __test_metadata *_metadata,
			FIXTURE_DATA(qp) *self, enum stale_how how)
{
	uint64_t stale0 = efa_sysfs_get(0, "counters/stale_mrs");
	uint64_t pinned0 = efa_sysfs_get(0, "counters/pinned_pages");
	size_t len = 4 * EFA_PAGE;
	struct kfab_efa_reg_mr m;
	__u8 *mem, *local = self->buf, *p;

	mem = hfi_anon(len + EFA_PAGE);
	ASSERT_NE(NULL, mem);
	memset(mem, 0x33, len);
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem + 10, len - 20,
				KFAB_EFA_ACCESS_ALL, &m));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
			       m.rkey, m.vaddr, local, 64, 0));
	switch (how) {
	case STALE_MUNMAP:
		ASSERT_EQ(0, munmap(mem + 2 * EFA_PAGE, EFA_PAGE));
		break;
	case STALE_MREMAP:
		p = mremap(mem + 3 * EFA_PAGE, EFA_PAGE, EFA_PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, mem + len);
		ASSERT_NE(MAP_FAILED, p);
		break;
	case STALE_MAP_FIXED:
		p = mmap(mem, EFA_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ASSERT_EQ(mem, p);
		break;
	case STALE_MADV:
		ASSERT_EQ(0, madvise(mem + EFA_PAGE, EFA_PAGE, MADV_DONTNEED));
		break;
	}
	/* an unmap stales at once; madvise() at the next RDMA's check */
	EXPECT_EQ((__u32)(how == STALE_MADV ? KFAB_EFA_MR_STATE_SUSPECT :
					      KFAB_EFA_MR_STATE_STALE),
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(stale0 + (how != STALE_MADV),
		  efa_sysfs_get(0, "counters/stale_mrs"));
	EXPECT_EQ(-ESTALE, efa_rdma1(self->d.fd, self->peer,
				     KFAB_EFA_RDMA_READ, m.rkey, m.vaddr,
				     local, 64, 0));
	EXPECT_EQ(-ESTALE, efa_rdma1(self->d.fd, self->peer,
				     KFAB_EFA_RDMA_WRITE, m.rkey, m.vaddr,
				     local, 64, 0));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_STALE,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(stale0 + 1, efa_sysfs_get(0, "counters/stale_mrs"));
	/* the MR's own memory is untouched by the refused WRITE */
	if (how != STALE_MAP_FIXED)
		EXPECT_EQ(0x33, mem[10]);
	/* counted once per MR */
	munmap(mem, len + EFA_PAGE);
	EXPECT_EQ(stale0 + 1, efa_sysfs_get(0, "counters/stale_mrs"));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_FREE,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(pinned0, efa_sysfs_get(0, "counters/pinned_pages"));
}

TEST_F(qp, stale_munmap)
{
	check_stale(_metadata, self, STALE_MUNMAP);
}

TEST_F(qp, stale_mremap)
{
	check_stale(_metadata, self, STALE_MREMAP);
}

TEST_F(qp, stale_map_fixed)
{
	check_stale(_metadata, self, STALE_MAP_FIXED);
}

TEST_F(qp, stale_madv_dontneed)
{
	check_stale(_metadata, self, STALE_MADV);
}

/* Only a change of the MR's own pages stales it: not of the neighbours. */
TEST_F(qp, stale_only_own_pages)
{
	uint64_t stale0 = efa_sysfs_get(0, "counters/stale_mrs");
	struct kfab_efa_reg_mr a, b;
	__u8 *mem = hfi_anon(6 * EFA_PAGE), *p;

	ASSERT_NE(NULL, mem);
	memset(mem, 1, 6 * EFA_PAGE);
	/* a: pages 1 and 2 exactly; b: the last byte of page 4 only */
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem + EFA_PAGE, 2 * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &a));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem + 5 * EFA_PAGE - 1, 1,
				KFAB_EFA_ACCESS_ALL, &b));
	/* replace pages 0, 3 and 5 */
	for (int i = 0; i < 6; i += 3) {
		p = mmap(mem + i * EFA_PAGE, EFA_PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ASSERT_EQ(mem + i * EFA_PAGE, p);
	}
	p = mmap(mem + 5 * EFA_PAGE, EFA_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(mem + 5 * EFA_PAGE, p);
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, a.state_index));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, b.state_index));
	EXPECT_EQ(stale0, efa_sysfs_get(0, "counters/stale_mrs"));
	/* an mprotect of one page inside, and back */
	ASSERT_EQ(0, mprotect(mem + 2 * EFA_PAGE, EFA_PAGE, PROT_READ));
	ASSERT_EQ(0, mprotect(mem + 2 * EFA_PAGE, EFA_PAGE,
			      PROT_READ | PROT_WRITE));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, a.state_index));
	/* page 4 itself: b goes, a stays */
	p = mmap(mem + 4 * EFA_PAGE, EFA_PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(mem + 4 * EFA_PAGE, p);
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, a.state_index));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_STALE,
		  efa_mr_state(&self->d, b.state_index));
	EXPECT_EQ(stale0 + 1, efa_sysfs_get(0, "counters/stale_mrs"));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, a.lkey));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, b.lkey));
	munmap(mem, 6 * EFA_PAGE);
}

/* kB of anonymous huge pages in the mapping that holds @addr (smaps). */
static long efa_huge_kb(const void *addr)
{
	unsigned long lo, hi, a = (unsigned long)addr;
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	bool in = false;
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= a && a < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/*
 * A huge page split under an MR keeps its pages: an mprotect() of the
 * last page of its 2 MiB splits the huge mapping (an MMU notifier CLEAR
 * over all of it), yet the MR stays valid and an RDMA write through it
 * lands where the process reads. A real change afterwards still stales it.
 */
TEST_F(qp, huge_page_split_keeps_mr)
{
	uint64_t stale0 = efa_sysfs_get(0, "counters/stale_mrs");
	const size_t huge = 2UL << 20;
	struct kfab_efa_reg_mr m;
	__u8 *raw, *mem, *local = self->buf;

	raw = hfi_anon(2 * huge);
	ASSERT_NE(NULL, raw);
	mem = (__u8 *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	if (madvise(mem, huge, MADV_HUGEPAGE))
		SKIP(goto out, "no transparent huge pages: %s", strerror(errno));
	memset(mem, 0x44, huge);
	if (efa_huge_kb(mem) < 2048)
		SKIP(goto out, "no huge page formed at %p", mem);
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem, 16 * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &m));
	ASSERT_EQ(0, mprotect(mem + huge - EFA_PAGE, EFA_PAGE, PROT_READ));
	EXPECT_EQ(0, efa_huge_kb(mem));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_SUSPECT,
		  efa_mr_state(&self->d, m.state_index));
	memset(local, 0x66, 64);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_WRITE,
			       m.rkey, m.vaddr + 100, local, 64, 0));
	EXPECT_EQ(0, memcmp(mem + 100, local, 64));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(stale0, efa_sysfs_get(0, "counters/stale_mrs"));
	/* its page 1 replaced: stale at the next RDMA */
	ASSERT_EQ(0, madvise(mem + EFA_PAGE, EFA_PAGE, MADV_DONTNEED));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_SUSPECT,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(-ESTALE, efa_rdma1(self->d.fd, self->peer,
				     KFAB_EFA_RDMA_READ, m.rkey, m.vaddr,
				     local, 64, 0));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_STALE,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(stale0 + 1, efa_sysfs_get(0, "counters/stale_mrs"));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
out:
	munmap(raw, 2 * huge);
}

/* mprotect and fork leave an MR valid */
TEST_F(qp, mprotect_and_fork_keep_mr)
{
	uint64_t stale0 = efa_sysfs_get(0, "counters/stale_mrs");
	__u8 *mem = self->buf, *local = self->buf + 8 * EFA_PAGE;
	struct kfab_efa_reg_mr m;
	pid_t pid;
	int status;

	ASSERT_EQ(0, efa_reg_mr(self->d.fd, mem, 4 * EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &m));
	ASSERT_EQ(0, mprotect(mem, 4 * EFA_PAGE, PROT_READ));
	ASSERT_EQ(0, mprotect(mem, 4 * EFA_PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, m.state_index));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		mem[0] = 1;	/* the child writes its copy */
		_exit(efa_mr_state(&self->d, m.state_index) !=
		      KFAB_EFA_MR_STATE_VALID);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	/* the parent writes too: its pages stay the pinned ones */
	memset(mem, 0x42, 64);
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&self->d, m.state_index));
	EXPECT_EQ(stale0, efa_sysfs_get(0, "counters/stale_mrs"));
	memset(local, 0, 64);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
			       m.rkey, m.vaddr, local, 64, 0));
	EXPECT_EQ(0, memcmp(local, mem, 64));
	memset(local, 0x24, 64);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_WRITE,
			       m.rkey, m.vaddr + 64, local, 64, 0));
	EXPECT_EQ(0, memcmp(local, mem + 64, 64));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
}

/* ---- eventfd and NOTIFY ---- */

TEST_F(qp, set_eventfd_errors)
{
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), null, fd2;
	struct kfab_efa_create_qp c;

	ASSERT_LE(0, efd);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, null);
	EXPECT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, efd));
	EXPECT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, -1));
	EXPECT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, -1));
	EXPECT_EQ(-EBADF, efa_set_eventfd(self->d.fd, self->qp.cq.qpn,
					  closed_fd()));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, -2));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, self->qp.cq.qpn,
					   INT_MIN));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, null));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, self->qp.cq.qpn,
					   self->d.fd));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, 0, efd));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, 0x1000000, efd));
	/* a QP of another file */
	fd2 = efa_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, efa_create_qp(fd2, &c));
	EXPECT_EQ(-EINVAL, efa_set_eventfd(self->d.fd, c.qpn, efd));
	EXPECT_EQ(0, efa_set_eventfd(fd2, c.qpn, efd));
	close(fd2);
	close(null);
	close(efd);
}

TEST_F(qp, notify_signals_eventfd)
{
	uint64_t n0 = efa_sysfs_get(0, "counters/notifies");
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	ASSERT_LE(0, efd);
	/* no eventfd yet: counted anyway */
	EXPECT_EQ(0, efa_notify(self->d.fd, self->peer));
	EXPECT_EQ(n0 + 1, efa_sysfs_get(0, "counters/notifies"));
	ASSERT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, efd));
	EXPECT_EQ(0U, efa_efd_drain(efd));
	EXPECT_EQ(0, efa_notify(self->d.fd, self->peer));
	EXPECT_EQ(0, efa_notify(self->d.fd, self->peer));
	EXPECT_EQ(2U, efa_efd_drain(efd));
	EXPECT_EQ(n0 + 3, efa_sysfs_get(0, "counters/notifies"));
	/* cleared: no signal */
	ASSERT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, -1));
	EXPECT_EQ(0, efa_notify(self->d.fd, self->peer));
	EXPECT_EQ(0U, efa_efd_drain(efd));
	/* unknown handles */
	EXPECT_EQ(-EINVAL, efa_notify(self->d.fd, 0));
	EXPECT_EQ(-EINVAL, efa_notify(self->d.fd, self->peer + 0x100000));
	close(efd);
}

TEST_F(qp, notify_counted_on_peer_device)
{
	uint64_t n0, n1;
	struct target t;
	int efd;

	if (!two_devices())
		SKIP(return, "one device only (num_devices=1)");
	target_open(_metadata, self, &t, 1);
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, efa_set_eventfd(t.d.fd, t.qp.cq.qpn, efd));
	n0 = efa_sysfs_get(0, "counters/notifies");
	n1 = efa_sysfs_get(1, "counters/notifies");
	EXPECT_EQ(0, efa_notify(self->d.fd, t.peer));
	EXPECT_EQ(1U, efa_efd_drain(efd));
	EXPECT_EQ(n0, efa_sysfs_get(0, "counters/notifies"));
	EXPECT_EQ(n1 + 1, efa_sysfs_get(1, "counters/notifies"));
	close(efd);
	target_close(&t);
}

/* RDMA with NOTIFY: an armed peer is woken and disarmed, else left alone */
TEST_F(qp, rdma_notify)
{
	uint64_t n0 = efa_sysfs_get(0, "counters/notifies");
	__u8 *local = self->buf + 8 * EFA_PAGE;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct kfab_efa_reg_mr m;

	ASSERT_LE(0, efd);
	ASSERT_EQ(0, efa_set_eventfd(self->d.fd, self->qp.cq.qpn, efd));
	ASSERT_EQ(0, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
				KFAB_EFA_ACCESS_ALL, &m));
	/* not armed: nothing */
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_WRITE,
			       m.rkey, m.vaddr, local, 16,
			       KFAB_EFA_RDMA_NOTIFY));
	EXPECT_EQ(0U, efa_efd_drain(efd));
	EXPECT_EQ(n0, efa_sysfs_get(0, "counters/notifies"));
	/* armed: woken, cleared, counted */
	atomic_store(hfi_a32(&self->qp.q.ctrl->armed), 1);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_READ,
			       m.rkey, m.vaddr, local, 16,
			       KFAB_EFA_RDMA_NOTIFY));
	EXPECT_EQ(0U, efa_load_armed(self->qp.q.ctrl));
	EXPECT_EQ(1U, efa_efd_drain(efd));
	EXPECT_EQ(n0 + 1, efa_sysfs_get(0, "counters/notifies"));
	/* armed, but no NOTIFY flag: left armed */
	atomic_store(hfi_a32(&self->qp.q.ctrl->armed), 1);
	EXPECT_EQ(0, efa_rdma1(self->d.fd, self->peer, KFAB_EFA_RDMA_WRITE,
			       m.rkey, m.vaddr, local, 16, 0));
	EXPECT_EQ(1U, efa_load_armed(self->qp.q.ctrl));
	EXPECT_EQ(0U, efa_efd_drain(efd));
	/* a failed RDMA does not notify */
	EXPECT_EQ(-EINVAL, efa_rdma1(self->d.fd, self->peer,
				     KFAB_EFA_RDMA_WRITE, m.rkey, m.vaddr - 1,
				     local, 16, KFAB_EFA_RDMA_NOTIFY));
	EXPECT_EQ(1U, efa_load_armed(self->qp.q.ctrl));
	EXPECT_EQ(0U, efa_efd_drain(efd));
	EXPECT_EQ(0, efa_dereg_mr(self->d.fd, m.lkey));
	close(efd);
}

/* The peer destroys its QP, or closes its file: ECONNRESET */
TEST_F(qp, econnreset)
{
	__u8 *local = self->buf + 8 * EFA_PAGE;
	struct kfab_efa_reg_mr m;
	struct target t;

	for (int how = 0; how < 2; how++) {
		target_open(_metadata, self, &t, 0);
		ASSERT_EQ(0, efa_reg_mr(t.d.fd, self->buf, EFA_PAGE,
					KFAB_EFA_ACCESS_ALL, &m));
		EXPECT_EQ(0, rdma8(self, &t, &m, KFAB_EFA_RDMA_READ, local));
		EXPECT_EQ(0, efa_notify(self->d.fd, t.peer));
		if (how == 0) {
			ASSERT_EQ(0, efa_destroy_qp(t.d.fd, t.qp.cq.qpn));
			EXPECT_NE(0U, efa_load_dead(t.qp.q.ctrl));
			target_close(&t);
		} else {
			target_close(&t);
		}
		EXPECT_EQ(-ECONNRESET, efa_rdma1(self->d.fd, t.peer,
						 KFAB_EFA_RDMA_READ, m.rkey,
						 m.vaddr, local, 8, 0))
			TH_LOG("%s", how ? "closed" : "destroyed");
		EXPECT_EQ(-ECONNRESET, efa_rdma1(self->d.fd, t.peer,
						 KFAB_EFA_RDMA_WRITE, m.rkey,
						 m.vaddr, local, 8, 0));
		EXPECT_EQ(-ECONNRESET, efa_notify(self->d.fd, t.peer));
		/* the handle itself is still ours */
		EXPECT_EQ(0, efa_unmap_peer(self->d.fd, t.peer));
	}
}

/* ---- Down devices ---- */

TEST_F(qp, device_down)
{
	__u8 *local = self->buf + 8 * EFA_PAGE;
	unsigned int ndev;
	struct kfab_efa_create_qp c;
	struct kfab_efa_map_peer mp;
	struct kfab_efa_device_info info;
	struct kfab_efa_reg_mr m;
	struct target t;

	KFAB_NEED_ROOT();
	ndev = target_last_mr(_metadata, self, &t, &m);
	for (unsigned int dev = 0; dev < ndev; dev++) {
		knob_query(_metadata, self, &t, dev, "state", "Down", &info);
		EXPECT_EQ((__u32)KFAB_EFA_STATE_DOWN, info.state);
		EXPECT_EQ((__u32)KFAB_EFA_STATE_DOWN,
			  (dev ? t.d.status : self->d.status)->state);
		EXPECT_EQ(-ENETDOWN, efa_create_qp(dev ? t.d.fd : self->d.fd,
						   &c));
		EXPECT_EQ(-ENETDOWN, efa_map_peer(self->d.fd, t.d.info.gid,
						  t.qp.cq.qpn, t.qp.cq.qkey,
						  &mp)) TH_LOG("dev %u Down", dev);
		EXPECT_EQ(-ENETDOWN,
			  rdma8(self, &t, &m, KFAB_EFA_RDMA_READ, local));
		EXPECT_EQ(-ENETDOWN,
			  rdma8(self, &t, &m, KFAB_EFA_RDMA_WRITE, local));
		EXPECT_EQ(-ENETDOWN, efa_notify(self->d.fd, t.peer));
		/* what needs no link still works */
		EXPECT_EQ(0, efa_reg_mr(self->d.fd, local, 8, 0, NULL));
		ASSERT_EQ(0, efa_sysfs_write(dev, "state", "Active"));
		EXPECT_EQ((__u32)KFAB_EFA_STATE_ACTIVE,
			  (dev ? t.d.status : self->d.status)->state);
		EXPECT_EQ(0, efa_map_peer(self->d.fd, t.d.info.gid,
					  t.qp.cq.qpn, t.qp.cq.qkey, &mp));
		EXPECT_EQ(0, rdma8(self, &t, &m, KFAB_EFA_RDMA_READ, local));
		EXPECT_EQ(0, efa_create_qp(dev ? t.d.fd : self->d.fd, &c));
	}
	target_close(&t);
}

/* ---- reserved, pad and flags words ---- */

enum rsv_cmd {
	RSV_CREATE_QP, RSV_DESTROY_QP, RSV_REG_MR, RSV_DEREG_MR,
	RSV_MAP_PEER, RSV_UNMAP_PEER, RSV_RDMA, RSV_SET_EVENTFD, RSV_NOTIFY,
};

FIXTURE(rsv) {
	struct efa_dev d;
	struct efa_qp qp;
	__u8 *buf;
	int efd;
	union {
		__u8 raw[256];
		struct kfab_efa_create_qp cq;
		struct kfab_efa_destroy_qp dq;
		struct kfab_efa_reg_mr rm;
		struct kfab_efa_dereg_mr dm;
		struct kfab_efa_map_peer mp;
		struct kfab_efa_peer_req pr;
		struct kfab_efa_rdma rd;
		struct kfab_efa_eventfd ev;
	} arg;
	struct kfab_iovec iov;
};

KFAB_RSV_VARIANT(enum rsv_cmd);

RSV(create_qp_flags, RSV_CREATE_QP, struct kfab_efa_create_qp, flags, 1);
RSV(create_qp_flags_msb, RSV_CREATE_QP, struct kfab_efa_create_qp, flags,
    1U << 31);
RSV(create_qp_reserved0, RSV_CREATE_QP, struct kfab_efa_create_qp,
    reserved[0], 1);
RSV(create_qp_reserved1, RSV_CREATE_QP, struct kfab_efa_create_qp,
    reserved[1], 1ULL << 63);
RSV(destroy_qp_flags, RSV_DESTROY_QP, struct kfab_efa_destroy_qp, flags, 1);
RSV(destroy_qp_reserved, RSV_DESTROY_QP, struct kfab_efa_destroy_qp,
    reserved, 1ULL << 63);
RSV(reg_mr_flags, RSV_REG_MR, struct kfab_efa_reg_mr, flags, 1);
RSV(reg_mr_reserved0, RSV_REG_MR, struct kfab_efa_reg_mr, reserved[0], 1);
RSV(reg_mr_reserved1, RSV_REG_MR, struct kfab_efa_reg_mr, reserved[1],
    1ULL << 63);
RSV(dereg_mr_flags, RSV_DEREG_MR, struct kfab_efa_dereg_mr, flags, 1);
RSV(dereg_mr_reserved, RSV_DEREG_MR, struct kfab_efa_dereg_mr, reserved, 1);
RSV(map_peer_flags, RSV_MAP_PEER, struct kfab_efa_map_peer, flags, 1);
RSV(map_peer_reserved0, RSV_MAP_PEER, struct kfab_efa_map_peer, reserved[0],
    1);
RSV(map_peer_reserved1, RSV_MAP_PEER, struct kfab_efa_map_peer, reserved[1],
    1ULL << 40);
RSV(unmap_peer_flags, RSV_UNMAP_PEER, struct kfab_efa_peer_req, flags, 1);
RSV(unmap_peer_reserved, RSV_UNMAP_PEER, struct kfab_efa_peer_req, reserved,
    1ULL << 63);
RSV(notify_flags, RSV_NOTIFY, struct kfab_efa_peer_req, flags, 1);
RSV(notify_reserved, RSV_NOTIFY, struct kfab_efa_peer_req, reserved, 1);
RSV(rdma_flags_bit1, RSV_RDMA, struct kfab_efa_rdma, flags, 2);
RSV(rdma_flags_msb, RSV_RDMA, struct kfab_efa_rdma, flags, 1U << 31);
RSV(rdma_pad0, RSV_RDMA, struct kfab_efa_rdma, pad0, 1);
RSV(rdma_reserved0, RSV_RDMA, struct kfab_efa_rdma, reserved[0], 1);
RSV(rdma_reserved1, RSV_RDMA, struct kfab_efa_rdma, reserved[1], 1ULL << 63);
RSV(set_eventfd_flags, RSV_SET_EVENTFD, struct kfab_efa_eventfd, flags, 1);
RSV(set_eventfd_pad0, RSV_SET_EVENTFD, struct kfab_efa_eventfd, pad0, 1);
RSV(set_eventfd_reserved, RSV_SET_EVENTFD, struct kfab_efa_eventfd, reserved,
    1);

FIXTURE_SETUP(rsv)
{
	ASSERT_EQ(0, efa_dev_open(&self->d, 0, false));
	ASSERT_EQ(0, efa_qp_create(&self->qp, self->d.fd, false));
	self->buf = hfi_anon(4 * EFA_PAGE);
	ASSERT_NE(NULL, self->buf);
	self->efd = eventfd(0, EFD_CLOEXEC);
	ASSERT_LE(0, self->efd);
}

FIXTURE_TEARDOWN(rsv)
{
	efa_dev_close(&self->d);
	if (self->buf)
		munmap(self->buf, 4 * EFA_PAGE);
	close(self->efd);
}

/* A valid argument for @cmd in self->arg; returns the ioctl. */
static unsigned long rsv_build(struct __test_metadata *_metadata,
			       FIXTURE_DATA(rsv) *self, enum rsv_cmd cmd)
{
	struct kfab_efa_map_peer mp;
	struct kfab_efa_reg_mr mr;
	struct kfab_efa_create_qp cq;
	__u32 peer = 0;

	memset(&mr, 0, sizeof(mr));
	if (cmd == RSV_UNMAP_PEER || cmd == RSV_NOTIFY || cmd == RSV_RDMA) {
		EXPECT_EQ(0, efa_map_peer(self->d.fd, self->d.info.gid,
					  self->qp.cq.qpn, self->qp.cq.qkey,
					  &mp));
		peer = mp.peer;
	}
	if (cmd == RSV_DEREG_MR || cmd == RSV_RDMA)
		EXPECT_EQ(0, efa_reg_mr(self->d.fd, self->buf, EFA_PAGE,
					KFAB_EFA_ACCESS_ALL, &mr));
	if (cmd == RSV_DESTROY_QP)
		EXPECT_EQ(0, efa_create_qp(self->d.fd, &cq));
	memset(&self->arg, 0, sizeof(self->arg));
	switch (cmd) {
	case RSV_CREATE_QP:
		return KFAB_EFA_IOC_CREATE_QP;
	case RSV_DESTROY_QP:
		self->arg.dq.qpn = cq.qpn;
		return KFAB_EFA_IOC_DESTROY_QP;
	case RSV_REG_MR:
		self->arg.rm.vaddr = (__u64)(uintptr_t)self->buf;
		self->arg.rm.length = 2 * EFA_PAGE;
		self->arg.rm.access = KFAB_EFA_ACCESS_LOCAL_WRITE;
		return KFAB_EFA_IOC_REG_MR;
	case RSV_DEREG_MR:
		self->arg.dm.lkey = mr.lkey;
		return KFAB_EFA_IOC_DEREG_MR;
	case RSV_MAP_PEER:
		memcpy(self->arg.mp.gid, self->d.info.gid, 16);
		self->arg.mp.qpn = self->qp.cq.qpn;
		self->arg.mp.qkey = self->qp.cq.qkey;
		return KFAB_EFA_IOC_MAP_PEER;
	case RSV_UNMAP_PEER:
		self->arg.pr.peer = peer;
		return KFAB_EFA_IOC_UNMAP_PEER;
	case RSV_NOTIFY:
		self->arg.pr.peer = peer;
		return KFAB_EFA_IOC_NOTIFY;
	case RSV_RDMA:
		self->iov.addr = (__u64)(uintptr_t)self->buf + 2 * EFA_PAGE;
		self->iov.len = 64;
		self->arg.rd.peer = peer;
		self->arg.rd.op = KFAB_EFA_RDMA_WRITE;
		self->arg.rd.rkey = mr.rkey;
		self->arg.rd.remote_addr = mr.vaddr;
		self->arg.rd.iov = (__u64)(uintptr_t)&self->iov;
		self->arg.rd.iovcnt = 1;
		return KFAB_EFA_IOC_RDMA;
	case RSV_SET_EVENTFD:
		self->arg.ev.qpn = self->qp.cq.qpn;
		self->arg.ev.fd = self->efd;
		return KFAB_EFA_IOC_SET_EVENTFD;
	}
	return 0;
}

TEST_F(rsv, nonzero_rejected)
{
	uint64_t pinned = efa_sysfs_get(0, "counters/pinned_pages");
	uint64_t mrs = efa_sysfs_get(0, "counters/mrs");
	uint64_t nfree = efa_sysfs_get(0, "nfreeqps");
	uint64_t writes;
	unsigned long ioc;

	ioc = rsv_build(_metadata, self, variant->cmd);
	writes = efa_sysfs_get(0, "counters/rdma_writes");
	ASSERT_LE(variant->off + variant->width, sizeof(self->arg));
	memcpy(self->arg.raw + variant->off, &variant->value, variant->width);
	EXPECT_EQ(-EINVAL, efa_ioctl(self->d.fd, ioc, &self->arg));
	/* refused without side effects */
	if (variant->cmd == RSV_REG_MR) {
		EXPECT_EQ(pinned, efa_sysfs_get(0, "counters/pinned_pages"));
		EXPECT_EQ(mrs, efa_sysfs_get(0, "counters/mrs"));
	}
	if (variant->cmd == RSV_CREATE_QP)
		EXPECT_EQ(nfree, efa_sysfs_get(0, "nfreeqps"));
	if (variant->cmd == RSV_RDMA)
		EXPECT_EQ(writes, efa_sysfs_get(0, "counters/rdma_writes"));
	/* the same request with the word cleared goes through */
	memset(self->arg.raw + variant->off, 0, variant->width);
	EXPECT_EQ(0, efa_ioctl(self->d.fd, ioc, &self->arg));
}

EFA_TEST_MAIN
