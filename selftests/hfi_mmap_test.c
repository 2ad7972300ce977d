// SPDX-License-Identifier: GPL-2.0
/* kfab_hfi mmap: object sizes and access, status page, sharing and lifetime. */

#include "hfi_util.h"

enum { OBJ_CTRL, OBJ_RHQ, OBJ_EAGER, OBJ_STATUS, OBJ_COUNT };

static const char * const obj_names[] = { "ctrl", "rhq", "eager", "status" };

FIXTURE(mm) {
	struct hfi_ctx c;
	__u8 uuid[16];
	__u64 off[OBJ_COUNT];
	size_t len[OBJ_COUNT];
	struct kfab_knobs knobs;
	int kmsg;
};

FIXTURE_SETUP(mm)
{
	int ret;

	self->kmsg = hfi_kmsg_open();
	hfi_knobs_save(&self->knobs, 0);
	ASSERT_TRUE(self->knobs.saved);
	hfi_uuid_random(self->uuid);
	ret = hfi_ctx_assign(&self->c, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT, 0);
	ASSERT_EQ(0, ret) TH_LOG("assign: %s", strerror(-ret));
	self->off[OBJ_CTRL] = self->c.info.ctrl_offset;
	self->off[OBJ_RHQ] = self->c.info.rhq_offset;
	self->off[OBJ_EAGER] = self->c.info.eager_offset;
	self->off[OBJ_STATUS] = self->c.info.status_offset;
	self->len[OBJ_CTRL] = HFI_PAGE;
	self->len[OBJ_RHQ] = hfi_rhq_bytes(self->c.info.rhq_entries);
	self->len[OBJ_EAGER] = hfi_eager_bytes(self->c.info.eager_count,
					       self->c.info.eager_size);
	self->len[OBJ_STATUS] = HFI_PAGE;
}

FIXTURE_TEARDOWN(mm)
{
	hfi_ctx_close(&self->c);
	hfi_knobs_restore(&self->knobs, 0);
	if (self->kmsg >= 0) {
		EXPECT_EQ(0, hfi_kmsg_bad(self->kmsg));
		close(self->kmsg);
	}
}

static int obj_prot(int obj)
{
	return obj == OBJ_STATUS ? PROT_READ : PROT_READ | PROT_WRITE;
}

/* errno of a mapping that must fail, 0 if it did not fail */
static int map_err(int fd, __u64 off, size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, flags, fd, (off_t)off);

	if (p != MAP_FAILED) {
		munmap(p, len);
		return 0;
	}
	return errno;
}

TEST_F(mm, exact_sizes)
{
	void *p[OBJ_COUNT], *again;

	for (int i = 0; i < OBJ_COUNT; i++) {
		p[i] = hfi_mmap(self->c.fd, self->off[i], self->len[i],
				obj_prot(i));
		ASSERT_NE(NULL, p[i]) TH_LOG("%s: %s", obj_names[i],
					     strerror(errno));
	}
	/* every byte of the writable objects is reachable */
	for (int i = 0; i < OBJ_STATUS; i++) {
		__u8 *b = p[i];

		b[0] = 1;
		b[self->len[i] - 1] = 2;
		EXPECT_EQ(1, b[0]);
		EXPECT_EQ(2, b[self->len[i] - 1]);
	}
	/* the same object mapped twice is the same memory */
	again = hfi_mmap(self->c.fd, self->off[OBJ_EAGER], self->len[OBJ_EAGER],
			 PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, again);
	((__u8 *)again)[12345 % self->len[OBJ_EAGER]] = 0x77;
	EXPECT_EQ(0x77, ((__u8 *)p[OBJ_EAGER])[12345 % self->len[OBJ_EAGER]]);
	munmap(again, self->len[OBJ_EAGER]);
	/* read-only first, then upgraded: writable objects allow it */
	again = hfi_mmap(self->c.fd, self->off[OBJ_CTRL], HFI_PAGE, PROT_READ);
	ASSERT_NE(NULL, again);
	EXPECT_EQ(0, mprotect(again, HFI_PAGE, PROT_READ | PROT_WRITE));
	munmap(again, HFI_PAGE);
	for (int i = 0; i < OBJ_COUNT; i++)
		munmap(p[i], self->len[i]);
}

TEST_F(mm, wrong_size)
{
	for (int i = 0; i < OBJ_COUNT; i++) {
		EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
					  self->len[i] + HFI_PAGE, obj_prot(i),
					  MAP_SHARED))
			TH_LOG("%s one page too long", obj_names[i]);
		EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
					  2 * self->len[i], obj_prot(i),
					  MAP_SHARED))
			TH_LOG("%s twice as long", obj_names[i]);
		if (self->len[i] > HFI_PAGE) {
			EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
						  self->len[i] - HFI_PAGE,
						  obj_prot(i), MAP_SHARED))
				TH_LOG("%s one page short", obj_names[i]);
			EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
						  HFI_PAGE, obj_prot(i),
						  MAP_SHARED))
				TH_LOG("%s one page only", obj_names[i]);
		}
	}
	/* one object's size at another's offset */
	EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[OBJ_CTRL],
				  self->len[OBJ_RHQ], PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[OBJ_RHQ],
				  self->len[OBJ_EAGER], PROT_READ, MAP_SHARED));
}

TEST_F(mm, unknown_offset)
{
	__u64 max = 0;

	for (int i = 0; i < OBJ_COUNT; i++)
		if (self->off[i] > max)
			max = self->off[i];
	for (__u64 k = 1; k <= 4; k++) {
		EXPECT_EQ(EINVAL, map_err(self->c.fd,
					  max + self->len[OBJ_EAGER] + k *
					  1024 * HFI_PAGE, HFI_PAGE, PROT_READ,
					  MAP_SHARED));
	}
	EXPECT_EQ(EINVAL, map_err(self->c.fd, 1ULL << 40, HFI_PAGE, PROT_READ,
				  MAP_SHARED));
	/* inside an object is not an offset that was handed out */
	if (self->len[OBJ_RHQ] > HFI_PAGE) {
		EXPECT_EQ(EINVAL, map_err(self->c.fd,
					  self->off[OBJ_RHQ] + HFI_PAGE,
					  self->len[OBJ_RHQ] - HFI_PAGE,
					  PROT_READ, MAP_SHARED));
	}
	EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[OBJ_EAGER] + HFI_PAGE,
				  self->len[OBJ_EAGER] - HFI_PAGE, PROT_READ,
				  MAP_SHARED));
}

TEST_F(mm, private_mapping)
{
	for (int i = 0; i < OBJ_COUNT; i++) {
		EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
					  self->len[i], PROT_READ, MAP_PRIVATE))
			TH_LOG("%s MAP_PRIVATE", obj_names[i]);
		if (i != OBJ_STATUS) {
			EXPECT_EQ(EINVAL, map_err(self->c.fd, self->off[i],
						  self->len[i],
						  PROT_READ | PROT_WRITE,
						  MAP_PRIVATE))
				TH_LOG("%s MAP_PRIVATE rw", obj_names[i]);
		}
	}
}

TEST_F(mm, status_read_only)
{
	void *p;

	EXPECT_EQ(EPERM, map_err(self->c.fd, self->off[OBJ_STATUS], HFI_PAGE,
				 PROT_WRITE, MAP_SHARED));
	EXPECT_EQ(EPERM, map_err(self->c.fd, self->off[OBJ_STATUS], HFI_PAGE,
				 PROT_READ | PROT_WRITE, MAP_SHARED));
	p = hfi_mmap(self->c.fd, self->off[OBJ_STATUS], HFI_PAGE, PROT_READ);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-1, mprotect(p, HFI_PAGE, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(p, HFI_PAGE, PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, HFI_PAGE);
}

static void check_status(struct __test_metadata *_metadata,
			 const struct kfab_hfi_status *st, unsigned int unit)
{
	char buf[32];

	EXPECT_EQ((__u32)KFAB_ABI_VERSION, st->abi_version);
	EXPECT_EQ(unit, st->unit);
	EXPECT_EQ(unit + 1, st->lid);
	ASSERT_LT(0, hfi_sysfs_read(unit, "state", buf, sizeof(buf)));
	EXPECT_EQ(strcmp(buf, "Active\n") ? (__u32)KFAB_HFI_STATE_DOWN :
		  (__u32)KFAB_HFI_STATE_ACTIVE, st->state);
	EXPECT_EQ(hfi_sysfs_get(unit, "drop_ppm"), st->drop_ppm);
	EXPECT_EQ(hfi_sysfs_get(unit, "link_rate_mbps"), st->link_rate_mbps);
	EXPECT_TRUE(hfi_all_zero(st->reserved, sizeof(st->reserved)));
}

TEST_F(mm, status_contents)
{
	struct hfi_ctx other;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	check_status(_metadata, self->c.kstatus, 0);
	if (hfi_num_units() < 2)
		return;
	ASSERT_EQ(0, hfi_ctx_assign(&other, 1, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	ASSERT_EQ(0, hfi_ctx_map(&other));
	check_status(_metadata, other.kstatus, 1);
	hfi_ctx_close(&other);
}

/* MAP_PEER hands out the peer unit's status page too, read-only. */
TEST_F(mm, peer_unit_status)
{
	unsigned int unit = hfi_num_units() > 1 ? 1 : 0;
	struct kfab_hfi_map_peer mp;
	struct hfi_ctx other;
	void *st;

	ASSERT_EQ(0, hfi_ctx_assign(&other, unit, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	ASSERT_EQ(0, hfi_map_peer(self->c.fd, other.info.lid, other.info.ctxt,
				  &mp));
	EXPECT_EQ(EPERM, map_err(self->c.fd, mp.status_offset, HFI_PAGE,
				 PROT_READ | PROT_WRITE, MAP_SHARED));
	st = mmap(NULL, HFI_PAGE, PROT_READ, MAP_SHARED, self->c.fd,
		  (off_t)mp.status_offset);
	ASSERT_NE(MAP_FAILED, st);
	check_status(_metadata, st, unit);
	EXPECT_EQ(0, hfi_unmap_peer(self->c.fd, mp.peer));
	EXPECT_EQ(EINVAL, map_err(self->c.fd, mp.status_offset, HFI_PAGE,
				  PROT_READ, MAP_SHARED));
	/* the mapping outlives the handle, like the queues' */
	check_status(_metadata, st, unit);
	munmap(st, HFI_PAGE);
	hfi_ctx_close(&other);
}

TEST_F(mm, status_follows_sysfs)
{
	struct hfi_ctx other;
	const struct kfab_hfi_status *a, *b;

	KFAB_NEED_ROOT();
	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	ASSERT_EQ(0, hfi_ctx_assign(&other, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	ASSERT_EQ(0, hfi_ctx_map(&other));
	a = self->c.kstatus;
	b = other.kstatus;

	ASSERT_EQ(0, hfi_sysfs_write(0, "drop_ppm", "12345"));
	EXPECT_EQ(12345U, a->drop_ppm);
	EXPECT_EQ(12345U, b->drop_ppm);
	ASSERT_EQ(0, hfi_sysfs_write(0, "link_rate_mbps", "777\n"));
	EXPECT_EQ(777U, a->link_rate_mbps);
	EXPECT_EQ(777U, b->link_rate_mbps);
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Down"));
	EXPECT_EQ((__u32)KFAB_HFI_STATE_DOWN, a->state);
	EXPECT_EQ((__u32)KFAB_HFI_STATE_DOWN, b->state);
	/* a refused write changes nothing */
	EXPECT_EQ(-EINVAL, hfi_sysfs_write(0, "drop_ppm", "1000001"));
	EXPECT_EQ(12345U, a->drop_ppm);
	ASSERT_EQ(0, hfi_sysfs_write(0, "state", "Active"));
	EXPECT_EQ((__u32)KFAB_HFI_STATE_ACTIVE, a->state);
	ASSERT_EQ(0, hfi_sysfs_write(0, "drop_ppm", "0"));
	ASSERT_EQ(0, hfi_sysfs_write(0, "link_rate_mbps", "0"));
	EXPECT_EQ(0U, a->drop_ppm);
	EXPECT_EQ(0U, b->link_rate_mbps);
	check_status(_metadata, a, 0);
	/* unit 1 is not unit 0 */
	if (hfi_num_units() >= 2) {
		struct kfab_knobs k1;
		struct hfi_ctx u1;

		hfi_knobs_save(&k1, 1);
		ASSERT_EQ(0, hfi_ctx_assign(&u1, 1, self->uuid,
					    KFAB_HFI_PKEY_DEFAULT, 0));
		ASSERT_EQ(0, hfi_ctx_map(&u1));
		ASSERT_EQ(0, hfi_sysfs_write(0, "drop_ppm", "5"));
		EXPECT_NE(5U, u1.kstatus->drop_ppm);
		hfi_knobs_restore(&k1, 1);
		hfi_ctx_close(&u1);
	}
	hfi_ctx_close(&other);
}

TEST_F(mm, zeroed_at_assign)
{
	struct hfi_queue old;
	__u32 ctxt;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	EXPECT_TRUE(hfi_all_zero(self->c.q.kctrl, HFI_PAGE));
	EXPECT_TRUE(hfi_all_zero(self->c.q.krhq, self->len[OBJ_RHQ]));
	EXPECT_TRUE(hfi_all_zero(self->c.q.keager, self->len[OBJ_EAGER]));
	memset(self->c.q.kctrl, 0xa5, HFI_PAGE);
	memset(self->c.q.krhq, 0xa5, self->len[OBJ_RHQ]);
	memset(self->c.q.keager, 0xa5, self->len[OBJ_EAGER]);

	/* release with nothing mapped, assign again (likely the same slot) */
	hfi_ctx_close(&self->c);
	ASSERT_EQ(0, hfi_ctx_assign(&self->c, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	EXPECT_TRUE(hfi_all_zero(self->c.q.kctrl, HFI_PAGE));
	EXPECT_TRUE(hfi_all_zero(self->c.q.krhq, self->len[OBJ_RHQ]));
	EXPECT_TRUE(hfi_all_zero(self->c.q.keager, self->len[OBJ_EAGER]));

	/*
	 * The owner's own mappings hold its file: closing the fd while they
	 * exist keeps the context, so the next assign gets another, fresh one.
	 */
	memset(self->c.q.krhq, 0x3c, self->len[OBJ_RHQ]);
	old = self->c.q;
	ctxt = self->c.info.ctxt;
	memset(&self->c.q, 0, sizeof(self->c.q));
	hfi_ctx_close(&self->c);
	ASSERT_EQ(0, hfi_ctx_assign(&self->c, 0, self->uuid,
				    KFAB_HFI_PKEY_DEFAULT, 0));
	EXPECT_NE(ctxt, self->c.info.ctxt);
	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	EXPECT_TRUE(hfi_all_zero(self->c.q.krhq, self->len[OBJ_RHQ]));
	EXPECT_TRUE(hfi_all_zero(self->c.q.kctrl, HFI_PAGE));
	EXPECT_EQ(0x3c, ((__u8 *)old.krhq)[self->len[OBJ_RHQ] - 1]);
	EXPECT_EQ(0U, hfi_load_dead(self->c.q.kctrl));
	hfi_queue_unmap(&old);
}

/* Writes through one view are read through the other, both ways. */
static void check_same_memory(struct __test_metadata *_metadata,
			      struct hfi_queue *a, struct hfi_queue *b,
			      size_t rhq_len, size_t eager_len)
{
	__u8 *ra = (__u8 *)a->krhq, *rb = (__u8 *)b->krhq;

	atomic_store(hfi_a64(&a->kctrl->tail), 0x1122334455667788ULL);
	EXPECT_EQ(0x1122334455667788ULL, atomic_load(hfi_a64(&b->kctrl->tail)));
	atomic_store(hfi_a32(&b->kctrl->armed), 1);
	EXPECT_EQ(1U, atomic_load(hfi_a32(&a->kctrl->armed)));
	atomic_store(hfi_a32(&b->kctrl->armed), 0);
	atomic_store(hfi_a64(&a->kctrl->tail), 0);
	ra[0] = 0x11;
	rb[rhq_len - 1] = 0x22;
	EXPECT_EQ(0x11, rb[0]);
	EXPECT_EQ(0x22, ra[rhq_len - 1]);
	b->keager[0] = 0x33;
	a->keager[eager_len - 1] = 0x44;
	EXPECT_EQ(0x33, a->keager[0]);
	EXPECT_EQ(0x44, b->keager[eager_len - 1]);
	ra[0] = 0;
	rb[rhq_len - 1] = 0;
	b->keager[0] = 0;
	a->keager[eager_len - 1] = 0;
}

TEST_F(mm, peer_mapping_shared)
{
	struct hfi_ctx b;
	struct hfi_peer pb, loop;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	ASSERT_EQ(0, hfi_ctx_assign(&b, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT,
				    0));
	ASSERT_EQ(0, hfi_peer_open(&pb, b.fd, self->c.info.lid,
				   self->c.info.ctxt, true));
	check_same_memory(_metadata, &self->c.q, &pb.q, self->len[OBJ_RHQ],
			  self->len[OBJ_EAGER]);
	/* the peer's objects: exact sizes, shared only */
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.ctrl_offset, 2 * HFI_PAGE,
				  PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.rhq_offset,
				  self->len[OBJ_RHQ] + HFI_PAGE, PROT_READ,
				  MAP_SHARED));
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.eager_offset,
				  self->len[OBJ_EAGER], PROT_READ,
				  MAP_PRIVATE));
	/* a loopback mapping is the context's own memory */
	ASSERT_EQ(0, hfi_peer_open(&loop, self->c.fd, self->c.info.lid,
				   self->c.info.ctxt, true));
	check_same_memory(_metadata, &self->c.q, &loop.q, self->len[OBJ_RHQ],
			  self->len[OBJ_EAGER]);
	hfi_queue_unmap(&loop.q);
	hfi_queue_unmap(&pb.q);
	hfi_ctx_close(&b);
}

TEST_F(mm, unmap_peer_keeps_vmas)
{
	struct hfi_ctx b;
	struct hfi_peer pb;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	ASSERT_EQ(0, hfi_ctx_assign(&b, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT,
				    0));
	ASSERT_EQ(0, hfi_peer_open(&pb, b.fd, self->c.info.lid,
				   self->c.info.ctxt, true));
	ASSERT_EQ(0, hfi_unmap_peer(b.fd, pb.mp.peer));
	check_same_memory(_metadata, &self->c.q, &pb.q, self->len[OBJ_RHQ],
			  self->len[OBJ_EAGER]);
	/* its offsets are gone from the table */
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.ctrl_offset, HFI_PAGE,
				  PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.rhq_offset, self->len[OBJ_RHQ],
				  PROT_READ, MAP_SHARED));
	EXPECT_EQ(EINVAL, map_err(b.fd, pb.mp.eager_offset,
				  self->len[OBJ_EAGER], PROT_READ, MAP_SHARED));
	hfi_ctx_close(&b);
	/* and still mapped after the peer's file is gone */
	check_same_memory(_metadata, &self->c.q, &pb.q, self->len[OBJ_RHQ],
			  self->len[OBJ_EAGER]);
	hfi_queue_unmap(&pb.q);
}

/*
 * As with any file, the owner's mappings keep it open: close(fd) leaves the
 * context assigned and its queues live until the last mapping goes.
 */
TEST_F(mm, valid_after_close)
{
	uint64_t nfree = hfi_sysfs_get(0, "nfreectxts");
	const struct kfab_hfi_status *st;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	st = self->c.kstatus;
	self->c.q.krhq[0].hdr[0] = 0x42;
	self->c.q.keager[self->len[OBJ_EAGER] - 1] = 0x43;
	close(self->c.fd);
	self->c.fd = -1;
	EXPECT_EQ(nfree, hfi_sysfs_get(0, "nfreectxts"));
	EXPECT_EQ(0U, hfi_load_dead(self->c.q.kctrl));
	EXPECT_EQ(0x42, self->c.q.krhq[0].hdr[0]);
	EXPECT_EQ(0x43, self->c.q.keager[self->len[OBJ_EAGER] - 1]);
	self->c.q.krhq[self->c.q.rhq_entries - 1].hdr[5] = 0x44;
	EXPECT_EQ(0x44, self->c.q.krhq[self->c.q.rhq_entries - 1].hdr[5]);
	atomic_store(hfi_a64(&self->c.q.kctrl->head), 5);
	EXPECT_EQ(5U, atomic_load(hfi_a64(&self->c.q.kctrl->head)));
	EXPECT_EQ((__u32)KFAB_ABI_VERSION, st->abi_version);
	EXPECT_EQ(0U, st->unit);

	/* the last mapping gone, the context is free again */
	hfi_ctx_unmap(&self->c);
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", nfree + 1, 2000));
}

TEST_F(mm, peer_survives_owner_release)
{
	uint64_t nfree = hfi_sysfs_get(0, "nfreectxts");
	struct hfi_ctx b;
	struct hfi_peer pb;
	uint64_t drops;
	void *late;

	ASSERT_EQ(0, hfi_ctx_assign(&b, 0, self->uuid, KFAB_HFI_PKEY_DEFAULT,
				    0));
	ASSERT_EQ(0, hfi_peer_open(&pb, b.fd, self->c.info.lid,
				   self->c.info.ctxt, true));
	EXPECT_EQ(0U, hfi_load_dead(pb.q.kctrl));
	pb.q.krhq[1].hdr[0] = 0x99;

	/* the owner has nothing mapped: its release leaves only our VMAs */
	hfi_ctx_close(&self->c);
	EXPECT_EQ(0, hfi_sysfs_wait(0, "nfreectxts", nfree, 2000));
	EXPECT_EQ(1U, hfi_load_dead(pb.q.kctrl));
	EXPECT_EQ(0x99, pb.q.krhq[1].hdr[0]);
	pb.q.krhq[2].hdr[0] = 0x98;
	pb.q.keager[self->len[OBJ_EAGER] - 1] = 0x97;
	EXPECT_EQ(0x98, pb.q.krhq[2].hdr[0]);
	EXPECT_EQ(0x97, pb.q.keager[self->len[OBJ_EAGER] - 1]);
	EXPECT_EQ(-ECONNRESET, hfi_notify(b.fd, pb.mp.peer));
	/* mapping the dead peer's entry again must not hurt either way */
	late = mmap(NULL, HFI_PAGE, PROT_READ, MAP_SHARED, b.fd,
		    (off_t)pb.mp.ctrl_offset);
	if (late != MAP_FAILED) {
		EXPECT_EQ(1U, ((struct kfab_hfi_ctrl *)late)->dead);
		munmap(late, HFI_PAGE);
	}
	/* a drop a producer counts late still reaches the unit's counter */
	drops = hfi_sysfs_get(0, "counters/rhq_full_drops");
	atomic_fetch_add(hfi_a64(&pb.q.kctrl->rhq_full_drops), 3);
	/* the handle goes, the VMAs stay */
	EXPECT_EQ(0, hfi_unmap_peer(b.fd, pb.mp.peer));
	EXPECT_EQ(drops + 3, hfi_sysfs_get(0, "counters/rhq_full_drops"));
	EXPECT_EQ(0x98, pb.q.krhq[2].hdr[0]);
	hfi_ctx_close(&b);
	EXPECT_EQ(0x98, pb.q.krhq[2].hdr[0]);
	EXPECT_EQ(1U, hfi_load_dead(pb.q.kctrl));
	hfi_queue_unmap(&pb.q);
}

/* VMA copies (fork) and splits (partial munmap) keep their references. */
TEST_F(mm, fork_and_split)
{
	struct hfi_queue q;
	pid_t pid;
	int status;

	ASSERT_EQ(0, hfi_ctx_map(&self->c));
	q = self->c.q;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* the child drops its fd at once and keeps the mappings */
		close(self->c.fd);
		alarm(10);
		while (!atomic_load(hfi_a64(&q.kctrl->tail)))
			usleep(1000);
		q.krhq[3].hdr[0] = 0x66;
		q.keager[0] = 0x67;
		/* the mappings (ours and the parent's) keep it assigned */
		_exit(atomic_load(hfi_a32(&q.kctrl->dead)) == 0 ? 0 : 1);
	}
	/* parent: drop the fd too, then let the child write */
	close(self->c.fd);
	self->c.fd = -1;
	atomic_store(hfi_a64(&q.kctrl->tail), 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0x66, q.krhq[3].hdr[0]);
	EXPECT_EQ(0x67, q.keager[0]);

	/* split the RHQ mapping in three, drop the middle */
	if (self->len[OBJ_RHQ] >= 3 * HFI_PAGE) {
		__u8 *r = (__u8 *)q.krhq;

		ASSERT_EQ(0, munmap(r + HFI_PAGE, HFI_PAGE));
		r[0] = 1;
		r[self->len[OBJ_RHQ] - 1] = 2;
		EXPECT_EQ(1, r[0]);
		EXPECT_EQ(2, r[self->len[OBJ_RHQ] - 1]);
		munmap(r, HFI_PAGE);
		munmap(r + 2 * HFI_PAGE, self->len[OBJ_RHQ] - 2 * HFI_PAGE);
		self->c.q.krhq = NULL;
	}
}

HFI_TEST_MAIN
