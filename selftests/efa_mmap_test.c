// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_efa mmap: object sizes and access, wrong sizes and offsets, private
 * mappings, the read-only status page and mr_state array, zeroed queues,
 * peer and loopback mappings sharing memory, mappings outliving
 * UNMAP_PEER, DESTROY_QP and close(), fork().
 */

#include "efa_util.h"

FIXTURE(m) {
	struct efa_dev d;
	struct efa_qp qp;
	int kmsg;
};

FIXTURE_SETUP(m)
{
	self->kmsg = hfi_kmsg_open();
	ASSERT_EQ(0, efa_dev_open(&self->d, 0, false));
	ASSERT_EQ(0, efa_qp_create(&self->qp, self->d.fd, false));
	self->qp.q.rx_entries = self->qp.cq.rx_entries;
	self->qp.q.mtu = self->qp.cq.mtu;
}

FIXTURE_TEARDOWN(m)
{
	efa_qp_unmap(&self->qp);
	efa_dev_close(&self->d);
	/* nothing at warning level, nothing from kfab */
	EXPECT_EQ(0, hfi_kmsg_bad(self->kmsg));
	if (self->kmsg >= 0)
		close(self->kmsg);
}

struct obj {
	const char *name;
	__u64 off;
	size_t len;
	bool ro;
};

static int objs(FIXTURE_DATA(m) *self, struct obj o[5])
{
	const struct kfab_efa_create_qp *cq = &self->qp.cq;

	o[0] = (struct obj){ "ctrl", cq->ctrl_offset, EFA_PAGE, false };
	o[1] = (struct obj){ "ring", cq->ring_offset,
			     efa_ring_bytes(cq->rx_entries), false };
	o[2] = (struct obj){ "bufs", cq->bufs_offset,
			     efa_bufs_bytes(cq->rx_entries, cq->mtu), false };
	o[3] = (struct obj){ "status", self->d.info.status_offset, EFA_PAGE,
			     true };
	o[4] = (struct obj){ "mr_state", self->d.info.mr_state_offset,
			     self->d.info.mr_state_size, true };
	return 5;
}

TEST_F(m, exact_sizes)
{
	struct obj o[5];
	int n = objs(self, o);

	EXPECT_EQ(128U, self->qp.cq.rx_entry_size);
	EXPECT_EQ(sizeof(struct kfab_efa_rx_entry), self->qp.cq.rx_entry_size);
	for (int i = 0; i < n; i++) {
		int prot = o[i].ro ? PROT_READ : PROT_READ | PROT_WRITE;
		void *p;

		p = efa_mmap(self->d.fd, o[i].off, o[i].len, prot);
		ASSERT_NE(NULL, p) TH_LOG("%s: %s", o[i].name, strerror(errno));
		/* every byte readable */
		for (size_t b = 0; b < o[i].len; b += EFA_PAGE)
			(void)*(volatile __u8 *)((__u8 *)p + b);
		munmap(p, o[i].len);
		/* a page more or less */
		EXPECT_EQ(NULL, efa_mmap(self->d.fd, o[i].off,
					 o[i].len + EFA_PAGE, prot))
			TH_LOG("%s + 1 page", o[i].name);
		EXPECT_EQ(EINVAL, errno);
		if (o[i].len > EFA_PAGE) {
			EXPECT_EQ(NULL, efa_mmap(self->d.fd, o[i].off,
						 o[i].len - EFA_PAGE, prot))
				TH_LOG("%s - 1 page", o[i].name);
			EXPECT_EQ(EINVAL, errno);
		}
		/* a page into the object */
		if (o[i].len > EFA_PAGE) {
			EXPECT_EQ(NULL, efa_mmap(self->d.fd,
						 o[i].off + EFA_PAGE,
						 o[i].len - EFA_PAGE, prot))
				TH_LOG("%s at +1 page", o[i].name);
		}
		/* MAP_PRIVATE */
		p = mmap(NULL, o[i].len, PROT_READ, MAP_PRIVATE, self->d.fd,
			 (off_t)o[i].off);
		EXPECT_EQ(MAP_FAILED, p) TH_LOG("%s MAP_PRIVATE", o[i].name);
		EXPECT_EQ(EINVAL, errno);
		if (p != MAP_FAILED)
			munmap(p, o[i].len);
	}
}

TEST_F(m, offsets_not_handed_out)
{
	struct obj o[5];
	int n = objs(self, o);
	int other = efa_open(0);
	unsigned int tried = 0;

	ASSERT_LE(0, other);
	for (__u64 off = 0; off < (1ULL << 32); off = off * 3 + EFA_PAGE) {
		bool known = false;

		off &= ~(__u64)(EFA_PAGE - 1);
		for (int i = 0; i < n; i++)
			known |= o[i].off == off;
		if (known)
			continue;
		EXPECT_EQ(NULL, efa_mmap(self->d.fd, off, EFA_PAGE, PROT_READ))
			TH_LOG("offset %#llx", (unsigned long long)off);
		tried++;
	}
	EXPECT_LT(5U, tried);
	/* this file's offsets are not another file's */
	EXPECT_EQ(NULL, efa_mmap(other, self->qp.cq.ctrl_offset, EFA_PAGE,
				 PROT_READ | PROT_WRITE));
	close(other);
}

TEST_F(m, read_only_objects)
{
	struct obj o[5];
	int n = objs(self, o);

	for (int i = 3; i < n; i++) {
		void *p;

		EXPECT_EQ(NULL, efa_mmap(self->d.fd, o[i].off, o[i].len,
					 PROT_READ | PROT_WRITE))
			TH_LOG("%s writable", o[i].name);
		EXPECT_EQ(EPERM, errno);
		EXPECT_EQ(NULL, efa_mmap(self->d.fd, o[i].off, o[i].len,
					 PROT_WRITE));
		EXPECT_EQ(EPERM, errno);
		p = efa_mmap(self->d.fd, o[i].off, o[i].len, PROT_READ);
		ASSERT_NE(NULL, p);
		EXPECT_EQ(-1, mprotect(p, o[i].len, PROT_READ | PROT_WRITE))
			TH_LOG("%s mprotect", o[i].name);
		EXPECT_EQ(EACCES, errno);
		EXPECT_EQ(0, mprotect(p, o[i].len, PROT_NONE));
		EXPECT_EQ(0, mprotect(p, o[i].len, PROT_READ));
		munmap(p, o[i].len);
	}
}

TEST_F(m, status_page)
{
	const struct kfab_efa_status *st;
	struct efa_dev d2;
	__u8 gid[16];

	st = efa_mmap(self->d.fd, self->d.info.status_offset, EFA_PAGE,
		      PROT_READ);
	ASSERT_NE(NULL, st);
	EXPECT_EQ((__u32)KFAB_ABI_VERSION, st->abi_version);
	EXPECT_EQ(0U, st->device);
	efa_gid(0, gid);
	EXPECT_EQ(0, memcmp(gid, st->gid, 16));
	EXPECT_EQ(self->d.info.state, st->state);
	EXPECT_EQ(self->d.info.mtu, st->mtu);
	EXPECT_EQ(self->d.info.device_rdma, st->device_rdma);
	EXPECT_EQ(self->d.info.rnr_retry, st->rnr_retry);
	EXPECT_EQ(efa_sysfs_get(0, "rnr_inject_ppm"), st->rnr_inject_ppm);
	EXPECT_EQ(efa_sysfs_get(0, "reorder_ppm"), st->reorder_ppm);
	EXPECT_EQ(efa_sysfs_get(0, "link_rate_mbps"), st->link_rate_mbps);
	/* the same page through another file */
	ASSERT_EQ(0, efa_dev_open(&d2, 0, true));
	EXPECT_EQ(0, memcmp(st, d2.status, sizeof(*st)));
	efa_dev_close(&d2);
	munmap((void *)st, EFA_PAGE);
}

TEST_F(m, mr_state_array)
{
	struct kfab_efa_reg_mr mr;
	__u8 *buf = hfi_anon(EFA_PAGE);
	struct efa_dev d2;

	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, efa_dev_open(&d2, 0, true));
	for (__u32 i = 0; i < d2.info.max_mrs; i++)
		ASSERT_EQ((__u32)KFAB_EFA_MR_STATE_FREE, efa_mr_state(&d2, i));
	ASSERT_EQ(0, efa_reg_mr(d2.fd, buf, EFA_PAGE, 0, &mr));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_VALID,
		  efa_mr_state(&d2, mr.state_index));
	/* per file: the fixture's file sees nothing of it */
	self->d.mr_state = efa_mmap(self->d.fd, self->d.info.mr_state_offset,
				    self->d.info.mr_state_size, PROT_READ);
	ASSERT_NE(NULL, self->d.mr_state);
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_FREE,
		  efa_mr_state(&self->d, mr.state_index));
	EXPECT_EQ(0, efa_dereg_mr(d2.fd, mr.lkey));
	EXPECT_EQ((__u32)KFAB_EFA_MR_STATE_FREE,
		  efa_mr_state(&d2, mr.state_index));
	efa_dev_close(&d2);
	munmap(buf, EFA_PAGE);
}

TEST_F(m, queues_zeroed)
{
	ASSERT_EQ(0, efa_queue_map(&self->qp.q, self->d.fd,
				   self->qp.cq.ctrl_offset,
				   self->qp.cq.ring_offset,
				   self->qp.cq.bufs_offset));
	for (size_t i = 0; i < EFA_PAGE; i++)
		ASSERT_EQ(0, ((__u8 *)self->qp.q.ctrl)[i]);
	for (size_t i = 0; i < efa_ring_bytes(self->qp.q.rx_entries); i++)
		ASSERT_EQ(0, ((__u8 *)self->qp.q.ring)[i]);
	for (size_t i = 0; i < efa_bufs_bytes(self->qp.q.rx_entries,
					      self->qp.q.mtu); i++)
		ASSERT_EQ(0, self->qp.q.bufs[i]);
	/* a second mapping of the same object shares it */
	if (self->qp.q.ctrl) {
		struct efa_queue q2 = self->qp.q;

		q2.ctrl = NULL;
		q2.ring = NULL;
		q2.bufs = NULL;
		ASSERT_EQ(0, efa_queue_map(&q2, self->d.fd,
					   self->qp.cq.ctrl_offset,
					   self->qp.cq.ring_offset,
					   self->qp.cq.bufs_offset));
		self->qp.q.ctrl->posted = 5;
		self->qp.q.bufs[efa_bufs_bytes(q2.rx_entries, q2.mtu) - 1] = 3;
		EXPECT_EQ(5U, q2.ctrl->posted);
		EXPECT_EQ(3, q2.bufs[efa_bufs_bytes(q2.rx_entries, q2.mtu) - 1]);
		efa_queue_unmap(&q2);
	}
	/* a new QP's queues are zeroed, whatever the last one held */
	if (self->qp.q.ctrl) {
		struct efa_qp q3;

		ASSERT_EQ(0, efa_qp_create(&q3, self->d.fd, true));
		EXPECT_EQ(0U, q3.q.ctrl->posted);
		EXPECT_EQ(0, q3.q.bufs[0]);
		efa_qp_unmap(&q3);
	}
}

/* Peer (another file) and loopback mappings are the QP's own memory. */
TEST_F(m, peer_and_loopback_share)
{
	struct efa_peer loop, peer;
	struct efa_dev d2;

	ASSERT_EQ(0, efa_queue_map(&self->qp.q, self->d.fd,
				   self->qp.cq.ctrl_offset,
				   self->qp.cq.ring_offset,
				   self->qp.cq.bufs_offset));
	ASSERT_EQ(0, efa_dev_open(&d2, efa_num_devices() > 1 ? 1 : 0, false));
	ASSERT_EQ(0, efa_peer_open(&loop, self->d.fd, self->d.info.gid,
				   self->qp.cq.qpn, self->qp.cq.qkey, true));
	ASSERT_EQ(0, efa_peer_open(&peer, d2.fd, self->d.info.gid,
				   self->qp.cq.qpn, self->qp.cq.qkey, true));
	EXPECT_NE(loop.q.ctrl, self->qp.q.ctrl);
	self->qp.q.ctrl->posted = 17;
	EXPECT_EQ(17U, loop.q.ctrl->posted);
	EXPECT_EQ(17U, peer.q.ctrl->posted);
	peer.q.ring[3].imm = 0xfeed;
	EXPECT_EQ(0xfeedU, self->qp.q.ring[3].imm);
	EXPECT_EQ(0xfeedU, loop.q.ring[3].imm);
	loop.q.bufs[self->qp.q.mtu * 2 + 5] = 0x99;
	EXPECT_EQ(0x99, self->qp.q.bufs[self->qp.q.mtu * 2 + 5]);
	EXPECT_EQ(0x99, peer.q.bufs[self->qp.q.mtu * 2 + 5]);
	/* the peer's status page is device 0's */
	EXPECT_EQ(0U, peer.status->device);
	EXPECT_EQ(0, memcmp(peer.status->gid, self->d.info.gid, 16));
	/* the peer's status page is read-only too */
	EXPECT_EQ(NULL, efa_mmap(d2.fd, peer.mp.status_offset, EFA_PAGE,
				 PROT_READ | PROT_WRITE));
	EXPECT_EQ(EPERM, errno);

	/* UNMAP_PEER: offsets gone, mappings stay */
	ASSERT_EQ(0, efa_unmap_peer(d2.fd, peer.mp.peer));
	EXPECT_EQ(NULL, efa_mmap(d2.fd, peer.mp.ctrl_offset, EFA_PAGE,
				 PROT_READ | PROT_WRITE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, efa_mmap(d2.fd, peer.mp.ring_offset,
				 efa_ring_bytes(peer.mp.rx_entries),
				 PROT_READ | PROT_WRITE));
	peer.q.ctrl->posted = 18;
	EXPECT_EQ(18U, self->qp.q.ctrl->posted);

	/* DESTROY_QP: still the same memory, dead set */
	ASSERT_EQ(0, efa_destroy_qp(self->d.fd, self->qp.cq.qpn));
	EXPECT_NE(0U, efa_load_dead(peer.q.ctrl));
	EXPECT_NE(0U, efa_load_dead(loop.q.ctrl));
	peer.q.ring[4].imm = 0xbeef;
	EXPECT_EQ(0xbeefU, self->qp.q.ring[4].imm);

	/* close(): mappings hold the files */
	close(d2.fd);
	d2.fd = -1;
	close(self->d.fd);
	self->d.fd = -1;
	peer.q.bufs[0] = 0x42;
	EXPECT_EQ(0x42, self->qp.q.bufs[0]);
	EXPECT_EQ(0x42, loop.q.bufs[0]);
	efa_peer_unmap(&peer);
	efa_peer_unmap(&loop);
	efa_dev_close(&d2);
}

/* The owner closes its file with the queues mapped: the QP lives on. */
TEST_F(m, close_with_mappings)
{
	struct kfab_efa_map_peer mp;
	uint64_t qps = efa_sysfs_get(0, "counters/qps");
	int fd2 = efa_open(0);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, efa_queue_map(&self->qp.q, self->d.fd,
				   self->qp.cq.ctrl_offset,
				   self->qp.cq.ring_offset,
				   self->qp.cq.bufs_offset));
	close(self->d.fd);
	self->d.fd = -1;
	/* the file is held by the mappings: QP still live */
	EXPECT_EQ(qps, efa_sysfs_get(0, "counters/qps"));
	EXPECT_EQ(0, efa_map_peer(fd2, self->d.info.gid, self->qp.cq.qpn,
				  self->qp.cq.qkey, &mp));
	EXPECT_EQ(0U, efa_load_dead(self->qp.q.ctrl));
	self->qp.q.ctrl->posted = 1;
	/* the last mapping goes: released */
	efa_qp_unmap(&self->qp);
	EXPECT_EQ(0, efa_sysfs_wait(0, "counters/qps", qps - 1, 2000));
	EXPECT_EQ(-ECONNRESET, efa_notify(fd2, mp.peer));
	EXPECT_EQ(-ENOENT, efa_map_peer(fd2, self->d.info.gid,
					self->qp.cq.qpn, self->qp.cq.qkey,
					&mp));
	close(fd2);
}

/* Mappings and the file are inherited over fork(). */
TEST_F(m, fork_inherits)
{
	struct kfab_efa_create_qp cq;
	struct efa_dev d;
	int status;
	pid_t pid;

	ASSERT_EQ(0, efa_dev_open(&d, 0, true));
	ASSERT_EQ(0, efa_queue_map(&self->qp.q, self->d.fd,
				   self->qp.cq.ctrl_offset,
				   self->qp.cq.ring_offset,
				   self->qp.cq.bufs_offset));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ret = 0;

		self->qp.q.ctrl->posted = 0x1234;
		self->qp.q.bufs[7] = 7;
		ret |= d.status->device != 0;
		ret |= efa_mr_state(&d, 0) != KFAB_EFA_MR_STATE_FREE;
		/* the inherited file works in the child */
		ret |= efa_create_qp(self->d.fd, &cq) != 0;
		ret |= efa_destroy_qp(self->d.fd, cq.qpn) != 0;
		/* and an mmap offset of it too */
		ret |= efa_mmap(self->d.fd, self->qp.cq.ring_offset,
				efa_ring_bytes(self->qp.cq.rx_entries),
				PROT_READ) == NULL;
		_exit(ret);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0x1234U, self->qp.q.ctrl->posted);
	EXPECT_EQ(7, self->qp.q.bufs[7]);
	efa_dev_close(&d);
}

/* A partial munmap splits the mapping; the rest stays valid. */
TEST_F(m, split_mapping)
{
	size_t len = efa_bufs_bytes(self->qp.cq.rx_entries, self->qp.cq.mtu);
	__u8 *p = efa_mmap(self->d.fd, self->qp.cq.bufs_offset, len,
			   PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, p);
	ASSERT_LT(EFA_PAGE * 2, len);
	p[len - 1] = 1;
	ASSERT_EQ(0, munmap(p, EFA_PAGE));
	p[len - 1] = 2;
	EXPECT_EQ(2, p[len - 1]);
	ASSERT_EQ(0, munmap(p + EFA_PAGE, len - EFA_PAGE));
}

EFA_TEST_MAIN
