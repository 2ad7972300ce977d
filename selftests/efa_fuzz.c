// SPDX-License-Identifier: GPL-2.0
/*
 * efa_fuzz: seeded random sequences of every kfab_efa ioctl, mmap, munmap,
 * mprotect, close, fork, knob writes and remaps of registered memory,
 * checked against a model.
 *
 *   efa_fuzz [COUNT [SEED]]
 *
 * COUNT steps (default 20000) run in one process against a model of its
 * files, QPs, MRs, peer handles and mappings. Each call is built valid,
 * then one field or pointer is often broken at random, and the answer must
 * be one of the errnos of the spec for what was broken, or success when
 * nothing was. Results are checked too: RDMA byte for byte, NOTIFY and
 * RDMA_NOTIFY against the eventfd and the armed word, QUERY_DEVICE, the
 * status page, nfreeqps and stale_mrs against the model, mr_state words
 * against the MRs (VALID, STALE after a remap of their memory, FREE).
 * Forked children use the inherited files and mappings and are killed at
 * random points.
 *
 * Then two threads run COUNT / 2 steps each on eight shared descriptors,
 * with a third thread flipping the devices' knobs: only the errno set is
 * checked there. Last, with everything closed, the devices' QP, MR and pin
 * gauges, the process's locked memory and its descriptors must be back
 * where they started, and the knobs as they were.
 *
 * SEED (default: random) is printed; the same COUNT and SEED replay the
 * sequential phase. Without root the knob steps are left out. TAP output;
 * exit 4 (skip) without /dev/kfab_efa0.
 */

/* efa_util.h brings in the test harness, whose runner is not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "efa_util.h"
#pragma GCC diagnostic pop
#include "fuzz_util.h"

#include <limits.h>

#define FZ_NFILE		16
#define FZ_NQP			4
#define FZ_NMR			8
#define FZ_NPEER		8
#define FZ_MEM_BYTES		(4UL << 20)
#define FZ_SRC_BYTES		(1UL << 20)
#define FZ_DST_BYTES		(1UL << 20)
#define FZ_MR_MAX_BYTES		(256UL << 10)
#define FZ_IOV_MAX_BYTES	(16UL << 10)

enum {
	OP_OPEN, OP_CLOSE, OP_QUERY, OP_CREATE_QP, OP_DESTROY_QP, OP_REG_MR,
	OP_DEREG_MR, OP_MAP_PEER, OP_UNMAP_PEER, OP_RDMA, OP_SET_EVENTFD,
	OP_NOTIFY, OP_BAD_CMD, OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_REMAP,
	OP_SYSFS, OP_KNOB, OP_FORK, OP_NR
};

/* ------------------------------------------------------------------ */
/* The model. */

struct fz_dev {
	__u8 gid[16];
	uint64_t nfree0, stale0;
	uint64_t stale;		/* MRs of this device we saw go stale */
	__u32 max_qps;
	bool active;
	__u32 rdma;		/* KFAB_EFA_RDMA_CAP_* */
	__u32 rnr_retry, inject, reorder;
	unsigned int link_rate;
};

struct fz_qp {
	struct kfab_efa_create_qp cq;
	int efd;		/* our copy of its eventfd, -1 */
};

struct fz_mr {
	struct kfab_efa_reg_mr r;
	bool stale;
};

struct fz_peer {
	struct kfab_efa_map_peer mp;
	int target;		/* file holding the QP */
	uint64_t target_gen;
	__u32 qpn;
};

/* One open file description: see fuzz_engine.h. */
struct fz_file {
	uint64_t gen;
	int fd;
	unsigned int nmaps;
	unsigned int dev;
	struct kfab_efa_device_info info;
	struct fz_qp qp[FZ_NQP];
	unsigned int nqp;
	struct fz_mr mr[FZ_NMR];
	unsigned int nmr;
	struct fz_peer peer[FZ_NPEER];
	unsigned int npeer;
	uint32_t stale_lkey, stale_peer, stale_qpn;
	uint64_t stale_off;
	const __u32 *mr_state;	/* a mapping of it, if any */
};

#include "fuzz_engine.h"

/* The requests fz_handle_req() builds. */
_Static_assert(sizeof(struct kfab_efa_peer_req) ==
	       sizeof(struct fz_handle_req) &&
	       sizeof(struct kfab_efa_destroy_qp) ==
	       sizeof(struct fz_handle_req) &&
	       sizeof(struct kfab_efa_dereg_mr) == sizeof(struct fz_handle_req),
	       "a handle request is not struct fz_handle_req");

enum fz_obj { FZ_CTRL, FZ_RING, FZ_BUFS, FZ_STATUS, FZ_MRSTATE, FZ_NOBJ };

static struct fz_dev fz_devs[FZ_MAX_DEVS];
static __u32 fz_rx_entries, fz_mtu, fz_max_mrs;

static uint8_t *fz_mem;		/* MR memory, a PROT_NONE page after it */
static uint8_t *fz_src;		/* RDMA WRITE sources, random bytes */
static uint8_t *fz_dst;		/* RDMA READ destinations */

static int fz_find_qp(int f, __u32 qpn)
{
	for (unsigned int i = 0; i < F(f)->nqp; i++)
		if (F(f)->qp[i].cq.qpn == qpn)
			return (int)i;
	return -1;
}

static bool fz_qp_alive(int f, uint64_t gen, __u32 qpn)
{
	return f >= 0 && F(f)->gen == gen && fz_find_qp(f, qpn) >= 0;
}

static unsigned int fz_live_qps(unsigned int dev)
{
	unsigned int n = 0;

	for (int f = 0; f < FZ_NFILE; f++)
		if (F(f)->gen && F(f)->dev == dev)
			n += F(f)->nqp;
	return n;
}

static int fz_dev_by_gid(const __u8 *gid)
{
	for (unsigned int d = 0; d < fz_ndevs; d++)
		if (!memcmp(fz_devs[d].gid, gid, 16))
			return (int)d;
	return -1;
}

static bool fz_has_qp(const struct fz_file *ff)
{
	return ff->nqp;
}

static bool fz_has_mr(const struct fz_file *ff)
{
	return ff->nmr;
}

static void fz_file_drop(struct fz_file *ff)
{
	for (unsigned int i = 0; i < ff->nqp; i++)
		if (ff->qp[i].efd >= 0)
			close(ff->qp[i].efd);
}

/* Any open file: QPs are made on every file. */
static int fz_pick_ctx(void)
{
	return fz_pick(fz_is_open);
}

static bool fz_up(unsigned int d)
{
	return fz_devs[d].active;
}

static int fz_ioctl(int f, unsigned long cmd, void *arg, fz_set *expect,
		    enum fz_place *place)
{
	return efa_ioctl(F(f)->fd, cmd, fz_place_arg(cmd, arg, expect, place));
}

/* ------------------------------------------------------------------ */
/* The steps of the sequential phase. */

/* The file's mr_state words are read through its first such mapping. */
static void fz_opened(int f)
{
	struct fz_obj_ref o = {
		.obj = FZ_MRSTATE, .ro = true, .owner = -1, .dev = F(f)->dev,
	};
	void *m;

	if (fz_check(OP_QUERY, efa_query(F(f)->fd, &F(f)->info), E(0),
		     "at open"))
		return;
	if (pct(50) && fz_nmaps < FZ_NMAP) {
		o.off = F(f)->info.mr_state_offset;
		o.len = F(f)->info.mr_state_size;
		m = efa_mmap(F(f)->fd, o.off, o.len, PROT_READ);
		if (!fz_check(OP_MMAP, m ? 0 : -errno, E(0), "mr_state"))
			fz_map_add(m, o.len, f, &o, false);
	}
}

static void op_query(void)
{
	struct kfab_efa_device_info info;
	int f = fz_pick(fz_is_open);
	enum fz_place place;
	fz_set expect = E(0);
	struct fz_dev *d;
	int ret;

	if (f < 0)
		return;
	memset(&info, 0xa5, sizeof(info));	/* out only */
	ret = fz_ioctl(f, KFAB_EFA_IOC_QUERY_DEVICE, &info, &expect, &place);
	if (fz_check(OP_QUERY, ret, expect, "") || place != FZ_ARG_OK)
		return;
	d = &fz_devs[F(f)->dev];
	if (info.abi_version != KFAB_ABI_VERSION || info.device != F(f)->dev ||
	    memcmp(info.gid, d->gid, 16) ||
	    info.state != (d->active ? KFAB_EFA_STATE_ACTIVE :
				       KFAB_EFA_STATE_DOWN) ||
	    info.device_rdma != d->rdma || info.rnr_retry != d->rnr_retry ||
	    info.max_mrs != fz_max_mrs || info.mtu != fz_mtu ||
	    info.rx_entries != fz_rx_entries || info.max_qps != d->max_qps ||
	    info.mr_state_offset != F(f)->info.mr_state_offset ||
	    info.status_offset != F(f)->info.status_offset ||
	    info.reserved[0] || info.reserved[3])
		fz_fail("query: device %u state %u rdma %u rnr_retry %u, model %u %d %u %u",
			info.device, info.state, info.device_rdma,
			info.rnr_retry, F(f)->dev, d->active, d->rdma,
			d->rnr_retry);
}

static void op_create_qp(void)
{
	int f = fz_pick(fz_is_open);
	struct kfab_efa_create_qp c;
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_efa_create_qp, flags),
		FZ_RSV(kfab_efa_create_qp, reserved[0]),
		FZ_RSV(kfab_efa_create_qp, reserved[1]),
	};
	enum fz_place place;
	fz_set err = 0, expect;
	unsigned int dev;
	int ret;

	if (f < 0)
		return;
	if (F(f)->nqp == FZ_NQP) {
		/* full in the model: only broken requests */
		memset(&c, 0, sizeof(c));
		c.flags = 1U << rnd(32);
		fz_check(OP_CREATE_QP, efa_ioctl(F(f)->fd,
						 KFAB_EFA_IOC_CREATE_QP, &c),
			 E(EINVAL), "flags");
		return;
	}
	dev = F(f)->dev;
	memset(&c, 0x5a, sizeof(c));		/* out fields ignored */
	c.flags = 0;
	memset(c.reserved, 0, sizeof(c.reserved));
	if (fz_break_rsv(&c, rsv, ARRAY_SIZE(rsv)))
		err |= E(EINVAL);
	if (!fz_up(dev))
		err |= E(ENETDOWN);
	if (fz_live_qps(dev) >= fz_devs[dev].nfree0)
		err |= E(EBUSY);
	expect = err ? err : E(0) | E(ENOMEM);
	ret = fz_ioctl(f, KFAB_EFA_IOC_CREATE_QP, &c, &expect, &place);
	if (fz_check(OP_CREATE_QP, ret, expect, "") || place != FZ_ARG_OK)
		return;
	if (!c.qpn || c.qpn > 0xffffff || !c.qkey ||
	    c.rx_entries != fz_rx_entries || c.mtu != fz_mtu ||
	    c.rx_entry_size != sizeof(struct kfab_efa_rx_entry) ||
	    c.reserved[0] || c.reserved[1])
		fz_fail("create_qp: qpn %#x qkey %#x geometry %u/%u", c.qpn,
			c.qkey, c.rx_entries, c.mtu);
	for (int g = 0; g < FZ_NFILE; g++)
		if (F(g)->gen && F(g)->dev == dev && fz_find_qp(g, c.qpn) >= 0)
			fz_fail("create_qp: qpn %#x is live already", c.qpn);
	F(f)->qp[F(f)->nqp].cq = c;
	F(f)->qp[F(f)->nqp].efd = -1;
	F(f)->nqp++;
}

static void fz_drop_qp(int f, unsigned int i)
{
	struct fz_file *ff = F(f);

	if (ff->qp[i].efd >= 0)
		close(ff->qp[i].efd);
	ff->stale_qpn = ff->qp[i].cq.qpn;
	ff->qp[i] = ff->qp[--ff->nqp];
}

static void op_destroy_qp(void)
{
	int f = fz_pick(fz_is_open), i;

	if (f < 0)
		return;
	i = fz_live(F(f)->nqp);
	if (!fz_handle_req(OP_DESTROY_QP, f, KFAB_EFA_IOC_DESTROY_QP, i,
			   i >= 0 ? F(f)->qp[i].cq.qpn : 0, F(f)->stale_qpn) &&
	    i >= 0)
		fz_drop_qp(f, (unsigned int)i);
}

static uint64_t fz_npages(uint64_t vaddr, uint64_t len)
{
	return ((vaddr + len - 1) / fz_page) - vaddr / fz_page + 1;
}

static void op_reg_mr(void)
{
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_efa_reg_mr, flags),
		FZ_RSV(kfab_efa_reg_mr, reserved[0]),
		FZ_RSV(kfab_efa_reg_mr, reserved[1]),
	};
	struct kfab_efa_reg_mr r;
	int f = fz_pick(fz_is_open), ret;
	enum fz_place place;
	fz_set err = 0, expect;
	const char *what = "buffer";
	bool good = false;
	unsigned int k;
	uint64_t len;

	if (f < 0)
		return;
	if (F(f)->nmr == FZ_NMR)
		return;
	memset(&r, 0, sizeof(r));
	r.lkey = (__u32)fz_next(&fz_rng);	/* out fields ignored */
	r.rkey = (__u32)fz_next(&fz_rng);
	r.access = (__u32)rnd(8);
	if (r.access & KFAB_EFA_ACCESS_REMOTE_WRITE)
		r.access |= KFAB_EFA_ACCESS_LOCAL_WRITE;
	switch (k = (unsigned int)rnd(40)) {
	case 0 ... 5:
		err |= fz_bad_range(k, fz_mem, FZ_MEM_BYTES,
				    r.access & KFAB_EFA_ACCESS_LOCAL_WRITE,
				    &r.vaddr, &r.length, &what);
		good = !err;
		break;
	case 6:
		what = "access";
		r.vaddr = (uintptr_t)fz_mem;
		r.length = fz_page;
		r.access = pct(50) ? KFAB_EFA_ACCESS_REMOTE_WRITE |
				     (r.access & KFAB_EFA_ACCESS_REMOTE_READ) :
				     r.access | 1U << (3 + rnd(29));
		err |= E(EINVAL);
		break;
	default:
		len = 1 + rnd(FZ_MR_MAX_BYTES);
		r.vaddr = (uintptr_t)fz_mem + rnd(FZ_MEM_BYTES - len + 1);
		r.length = len;
		good = true;
	}
	if (fz_break_rsv(&r, rsv, ARRAY_SIZE(rsv))) {
		err |= E(EINVAL);
		good = false;
	}
	if (F(f)->nmr >= fz_max_mrs)
		err |= E(ENOSPC);
	expect = err ? err : E(0) | E(ENOMEM);
	ret = fz_ioctl(f, KFAB_EFA_IOC_REG_MR, &r, &expect, &place);
	if (fz_check(OP_REG_MR, ret, expect, what) || place != FZ_ARG_OK ||
	    !good)
		return;
	if (!r.lkey || !r.rkey || r.npages != fz_npages(r.vaddr, r.length) ||
	    r.state_index >= fz_max_mrs || r.reserved[0] || r.reserved[1])
		fz_fail("reg_mr: lkey %u rkey %#x npages %u index %u", r.lkey,
			r.rkey, r.npages, r.state_index);
	if (F(f)->mr_state &&
	    F(f)->mr_state[r.state_index] != KFAB_EFA_MR_STATE_VALID)
		fz_fail("reg_mr: mr_state[%u] is %u", r.state_index,
			F(f)->mr_state[r.state_index]);
	for (int g = 0; g < FZ_NFILE; g++)
		for (unsigned int i = 0; F(g)->gen && i < F(g)->nmr; i++)
			if (F(g)->dev == F(f)->dev &&
			    F(g)->mr[i].r.rkey == r.rkey)
				fz_fail("reg_mr: rkey %#x is live already",
					r.rkey);
	F(f)->mr[F(f)->nmr].r = r;
	F(f)->mr[F(f)->nmr].stale = false;
	F(f)->nmr++;
}

static void op_dereg_mr(void)
{
	int f = fz_pick(fz_is_open), i;
	__u32 index;

	if (f < 0)
		return;
	i = fz_live(F(f)->nmr);
	if (fz_handle_req(OP_DEREG_MR, f, KFAB_EFA_IOC_DEREG_MR, i,
			  i >= 0 ? F(f)->mr[i].r.lkey : 0, F(f)->stale_lkey) ||
	    i < 0)
		return;
	index = F(f)->mr[i].r.state_index;
	F(f)->stale_lkey = F(f)->mr[i].r.lkey;
	F(f)->mr[i] = F(f)->mr[--F(f)->nmr];
	if (F(f)->mr_state &&
	    F(f)->mr_state[index] != KFAB_EFA_MR_STATE_FREE)
		fz_fail("dereg_mr: mr_state[%u] is %u", index,
			F(f)->mr_state[index]);
}

static void op_unmap_peer(void)
{
	int f = fz_pick(fz_is_open), i;

	if (f < 0)
		return;
	i = fz_live(F(f)->npeer);
	if (!fz_handle_req(OP_UNMAP_PEER, f, KFAB_EFA_IOC_UNMAP_PEER, i,
			   i >= 0 ? F(f)->peer[i].mp.peer : 0,
			   F(f)->stale_peer) && i >= 0) {
		F(f)->stale_peer = F(f)->peer[i].mp.peer;
		F(f)->stale_off = F(f)->peer[i].mp.ctrl_offset;
		F(f)->peer[i] = F(f)->peer[--F(f)->npeer];
	}
}

static void op_map_peer(void)
{
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_efa_map_peer, flags),
		FZ_RSV(kfab_efa_map_peer, reserved[0]),
		FZ_RSV(kfab_efa_map_peer, reserved[1]),
	};
	struct kfab_efa_map_peer mp;
	int f = fz_pick(fz_is_open), g, pd, target = -1, ret;
	enum fz_place place;
	fz_set err = 0, expect;
	const struct fz_qp *q = NULL;
	struct fz_peer *p;

	if (f < 0)
		return;
	if (F(f)->npeer == FZ_NPEER) {
		op_unmap_peer();
		return;
	}
	memset(&mp, 0xc3, sizeof(mp));		/* out fields ignored */
	mp.flags = 0;
	mp.pad0 = 0;				/* a pad word: must be 0 */
	memset(mp.reserved, 0, sizeof(mp.reserved));
	g = pct(90) ? fz_pick(fz_has_qp) : -1;
	if (g >= 0) {
		q = &F(g)->qp[rnd(F(g)->nqp)];
		memcpy(mp.gid, fz_devs[F(g)->dev].gid, 16);
		mp.qpn = q->cq.qpn;
		mp.qkey = q->cq.qkey;
		if (pct(5)) {
			mp.qkey ^= 1U << rnd(32);
			err |= E(EACCES);
		}
		if (pct(3)) {
			memcpy(mp.gid, fz_devs[rnd(fz_ndevs)].gid, 16);
			if (pct(50))
				mp.gid[rnd(16)] ^= (__u8)(1 + rnd(255));
		}
	} else {
		memcpy(mp.gid, fz_devs[rnd(fz_ndevs)].gid, 16);
		if (pct(30))
			mp.gid[rnd(16)] ^= (__u8)(1 + rnd(255));
		mp.qpn = pct(50) && F(f)->stale_qpn ? F(f)->stale_qpn :
			 (uint32_t)rnd(0x1000002);
		mp.qkey = (__u32)fz_next(&fz_rng);
	}
	if (fz_break_rsv(&mp, rsv, ARRAY_SIZE(rsv)))
		err |= E(EINVAL);
	pd = fz_dev_by_gid(mp.gid);
	for (g = 0; pd >= 0 && g < FZ_NFILE; g++)
		if (F(g)->gen && F(g)->dev == (unsigned int)pd &&
		    fz_find_qp(g, mp.qpn) >= 0)
			target = g;
	err |= fz_map_peer_err(f, pd, target);
	if (target >= 0 &&
	    F(target)->qp[fz_find_qp(target, mp.qpn)].cq.qkey != mp.qkey)
		err |= E(EACCES);
	expect = err ? err : E(0) | E(ENOMEM);
	ret = fz_ioctl(f, KFAB_EFA_IOC_MAP_PEER, &mp, &expect, &place);
	if (fz_check(OP_MAP_PEER, ret, expect, "") || place != FZ_ARG_OK ||
	    target < 0)
		return;
	if (!mp.peer || mp.rx_entries != fz_rx_entries || mp.mtu != fz_mtu ||
	    mp.rx_entry_size != sizeof(struct kfab_efa_rx_entry) ||
	    mp.reserved[0] || mp.reserved[1])
		fz_fail("map_peer: handle %u geometry %u/%u", mp.peer,
			mp.rx_entries, mp.mtu);
	p = &F(f)->peer[F(f)->npeer++];
	p->mp = mp;
	p->target = target;
	p->target_gen = F(target)->gen;
	p->qpn = mp.qpn;
}

/* The owner's mapping of a QP's ctrl page, if we have one. */
static struct kfab_efa_qp_ctrl *fz_owner_ctrl(int owner, uint64_t gen,
					      __u32 qpn)
{
	for (unsigned int i = 0; i < fz_nmaps; i++)
		if (fz_maps[i].o.obj == FZ_CTRL &&
		    fz_maps[i].o.owner == owner &&
		    fz_maps[i].o.owner_gen == gen && fz_maps[i].o.qpn == qpn &&
		    fz_maps[i].rw)
			return (struct kfab_efa_qp_ctrl *)fz_maps[i].addr;
	return NULL;
}

/*
 * The kernel may see an event the model does not make: a CLEAR over a
 * whole 2 MiB range when a huge page mapping is split (by a remap or
 * mprotect nearby), by reclaim or by a copy-on-write break. It makes the
 * MR suspect (fz_suspect counts the words seen so), and the next RDMA
 * through it checks the pages: the same ones, and it must succeed. A stale
 * MR the model did not stale is accepted when the MR's mr_state word
 * (where mapped) agrees; the model follows. The other way round (a page
 * replaced but the MR still valid) is always a failure.
 */
static unsigned long fz_spurious, fz_suspect;

static bool fz_spurious_stale(int f, const struct fz_mr *cmr)
{
	struct fz_mr *mr = (struct fz_mr *)cmr;

	if (F(f)->mr_state &&
	    F(f)->mr_state[mr->r.state_index] != KFAB_EFA_MR_STATE_STALE)
		return false;
	mr->stale = true;
	fz_devs[F(f)->dev].stale++;
	fz_spurious++;
	return true;
}

static void op_rdma(void)
{
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_efa_rdma, pad0),
		FZ_RSV(kfab_efa_rdma, reserved[0]),
		FZ_RSV(kfab_efa_rdma, reserved[1]),
	};
	struct kfab_iovec iov[KFAB_IOV_MAX + 4];
	struct kfab_efa_qp_ctrl *ctrl = NULL;
	const struct fz_peer *p = NULL;
	const struct fz_mr *mr = NULL;
	struct kfab_efa_rdma r;
	int f = pct(92) ? fz_pick(fz_has_peer) : -1, target = -1, ret, efd = -1;
	enum fz_place place;
	fz_set err = 0, expect;
	bool alive = false, clean = true, ro_dst = false, ran;
	unsigned int cnt, i;
	uint64_t total = 0, off;
	const char *what = "";
	__u32 cap;
	int bad;

	if (f < 0)
		f = fz_pick(fz_is_open);
	if (f < 0)
		return;
	memset(&r, 0, sizeof(r));
	r.bytes = fz_next(&fz_rng);		/* out only */
	r.op = (__u32)rnd(2);
	if (pct(2)) {
		r.op = 2 + (__u32)rnd(1000);
		err |= E(EINVAL);
		what = "op";
	}
	if (F(f)->npeer && pct(95)) {
		p = &F(f)->peer[rnd(F(f)->npeer)];
		r.peer = p->mp.peer;
		target = p->target;
		alive = fz_qp_alive(target, p->target_gen, p->qpn);
		if (!alive)
			err |= E(ECONNRESET);
	} else {
		r.peer = fz_bad_handle();
		err |= E(EINVAL);
		what = "unknown peer";
	}
	if (alive) {
		unsigned int a = F(f)->dev, b = F(target)->dev;

		if (fz_link_down(f, target))
			err |= E(ENETDOWN);
		cap = r.op ? KFAB_EFA_RDMA_CAP_WRITE : KFAB_EFA_RDMA_CAP_READ;
		if (r.op < 2 && (!(fz_devs[a].rdma & cap) ||
				 !(fz_devs[b].rdma & cap)))
			err |= E(EOPNOTSUPP);
		if (F(target)->nmr && pct(90)) {
			mr = &F(target)->mr[rnd(F(target)->nmr)];
			r.rkey = mr->r.rkey;
			if (mr->stale)
				err |= E(ESTALE);
			if (r.op < 2 &&
			    !(mr->r.access & (r.op ? KFAB_EFA_ACCESS_REMOTE_WRITE :
					      KFAB_EFA_ACCESS_REMOTE_READ)))
				err |= E(EACCES);
		} else {
			/* an MR of another file, or no MR at all */
			int g = fz_pick(fz_has_mr);

			r.rkey = g >= 0 && g != target ?
				 F(g)->mr[rnd(F(g)->nmr)].r.rkey :
				 (__u32)fz_next(&fz_rng);
			err |= E(EACCES);
			what = "rkey";
		}
	} else {
		r.rkey = (__u32)fz_next(&fz_rng);
	}

	cnt = fz_iov_count(3, &err, &what, &clean);
	ro_dst = r.op == KFAB_EFA_RDMA_READ && pct(2);
	for (i = 0; i < cnt && i < ARRAY_SIZE(iov); i++) {
		unsigned int x = (unsigned int)rnd(200);
		uint64_t len = rnd(FZ_IOV_MAX_BYTES + 1);
		uint8_t *base = r.op == KFAB_EFA_RDMA_WRITE ? fz_src : fz_dst;
		size_t blen = r.op == KFAB_EFA_RDMA_WRITE ? FZ_SRC_BYTES :
							     FZ_DST_BYTES;

		/* READ destinations do not overlap: each its own slice */
		if (r.op == KFAB_EFA_RDMA_READ) {
			base += i * (blen / 4);
			blen /= 4;
		}
		iov[i].addr = (uintptr_t)base + rnd(blen - len + 1);
		iov[i].len = len;
		/* not where fz_break_iov() below replaces the iovec */
		if (ro_dst && i == 0 && len && x > 4) {
			iov[i].addr = (uintptr_t)fz_ro + rnd(FZ_RO_BYTES - len + 1);
			err |= E(EFAULT);
			what = "read-only destination";
		}
		err |= fz_break_iov(x, &iov[i], &what, &clean);
		if (clean)
			total += iov[i].len;
	}
	r.iovcnt = cnt;
	r.iov = (uintptr_t)iov;
	err |= fz_break_iov_array(&r.iov, cnt, &what);
	if (mr && clean) {
		r.remote_addr = fz_copy_at(mr->r.vaddr, mr->r.length, total,
					   true, "outside the MR", &err, &what);
	} else {
		r.remote_addr = mr ? mr->r.vaddr : rnd(1ULL << 47);
	}
	if (pct(40))
		r.flags = KFAB_EFA_RDMA_NOTIFY;
	if (pct(3)) {
		if (pct(50))
			r.flags |= 1U << (1 + rnd(31));
		else if (!fz_break_rsv(&r, rsv, ARRAY_SIZE(rsv)))
			r.reserved[0] = 1;
		err |= E(EINVAL);
		what = "flags/pad/reserved";
	}
	expect = err ? err : E(0);

	/* With NOTIFY the kernel must clear armed and signal the owner. */
	if (!err && (r.flags & KFAB_EFA_RDMA_NOTIFY)) {
		int qi = fz_find_qp(target, p->qpn);

		ctrl = fz_owner_ctrl(target, F(target)->gen, p->qpn);
		efd = F(target)->qp[qi].efd;
		if (ctrl)
			atomic_store(hfi_a32(&ctrl->armed), 1);
		if (efd >= 0)
			fz_efd_drain(efd);
	}
	ret = fz_ioctl(f, KFAB_EFA_IOC_RDMA, &r, &expect, &place);
	ran = !err && (ret == 0 || (ret == -EFAULT && place == FZ_ARG_RO));
	/*
	 * Refused (the argument in a hole, say): the word armed above stays
	 * set, and a later NOTIFY would find it so; the owner takes it back.
	 */
	if (!ran && ctrl)
		atomic_store(hfi_a32(&ctrl->armed), 0);
	if (ret == -ESTALE && mr && !mr->stale && fz_spurious_stale(target, mr))
		return;
	fz_check(OP_RDMA, ret, expect, what);
	if (!ran)
		return;
	if (ret == 0 && (r.bytes != total || r.iovcnt != cnt || r.reserved[0]))
		fz_fail("rdma: %llu bytes reported for %llu",
			(unsigned long long)r.bytes, (unsigned long long)total);
	bad = fz_iov_differs((const uint8_t *)(uintptr_t)r.remote_addr, iov,
			     cnt, &off);
	if (bad >= 0)
		fz_fail("rdma %s: iov %d of %u (%llu bytes) differs at remote offset %llu",
			r.op ? "write" : "read", bad, cnt,
			(unsigned long long)iov[bad].len,
			(unsigned long long)(r.remote_addr - mr->r.vaddr));
	if (ctrl && efa_load_armed(ctrl))
		fz_fail("rdma: NOTIFY left armed set");
	if (ctrl && efd >= 0 && !fz_efd_drain(efd))
		fz_fail("rdma: NOTIFY did not signal the eventfd");
	if (!ctrl && efd >= 0 && fz_efd_drain(efd))
		fz_fail("rdma: NOTIFY signalled an owner that was not armed");
}

/* Peer @i of file @f for NOTIFY: see fuzz_engine.h. */
static fz_set fz_peer_notify(int f, unsigned int i, __u32 *handle, int *efd)
{
	const struct fz_peer *p = &F(f)->peer[i];

	*handle = p->mp.peer;
	if (!fz_qp_alive(p->target, p->target_gen, p->qpn))
		return E(ECONNRESET);
	*efd = F(p->target)->qp[fz_find_qp(p->target, p->qpn)].efd;
	if (fz_link_down(f, p->target))
		return E(ENETDOWN);
	return 0;
}

static void op_set_eventfd(void)
{
	struct kfab_efa_eventfd e;
	int f = fz_pick(fz_is_open), efd = -1, qi = -1, ret;
	enum fz_place place;
	fz_set expect = E(0);
	bool clear = false;

	if (f < 0)
		return;
	memset(&e, 0, sizeof(e));
	if (F(f)->nqp && pct(90)) {
		qi = (int)rnd(F(f)->nqp);
		e.qpn = F(f)->qp[qi].cq.qpn;
	} else {
		e.qpn = F(f)->stale_qpn && pct(50) ? F(f)->stale_qpn :
						     fz_bad_handle();
		expect = E(EINVAL);
	}
	efd = fz_eventfd_arg(&e.fd, &expect, &clear);
	if (pct(3)) {
		if (pct(33))
			e.flags = 1U << rnd(32);
		else if (pct(50))
			e.pad0 = 1U << rnd(32);
		else
			e.reserved = 1ULL << rnd(64);
		expect = E(EINVAL);
	}
	ret = fz_ioctl(f, KFAB_EFA_IOC_SET_EVENTFD, &e, &expect, &place);
	fz_eventfd_set(fz_check(OP_SET_EVENTFD, ret, expect, ""),
		       qi < 0 ? NULL : &F(f)->qp[qi].efd, efd, clear);
}

/* The device's ioctls: fz_op_bad_cmd() tries everything else. */
static const unsigned long fz_ioctls[] = {
	KFAB_EFA_IOC_QUERY_DEVICE, KFAB_EFA_IOC_CREATE_QP,
	KFAB_EFA_IOC_DESTROY_QP, KFAB_EFA_IOC_REG_MR,
	KFAB_EFA_IOC_DEREG_MR, KFAB_EFA_IOC_MAP_PEER,
	KFAB_EFA_IOC_UNMAP_PEER, KFAB_EFA_IOC_RDMA,
	KFAB_EFA_IOC_SET_EVENTFD, KFAB_EFA_IOC_NOTIFY,
};

static size_t fz_obj_len(unsigned int obj, int f)
{
	switch (obj) {
	case FZ_RING:
		return efa_ring_bytes(fz_rx_entries);
	case FZ_BUFS:
		return efa_bufs_bytes(fz_rx_entries, fz_mtu);
	case FZ_MRSTATE:
		return F(f)->info.mr_state_size;
	default:
		return fz_page;
	}
}

static int fz_pick_obj(int f, struct fz_obj_ref *o)
{
	struct fz_file *ff = F(f);
	unsigned int n = ff->nqp + ff->npeer + 1, i;

	i = (unsigned int)rnd(n);
	memset(o, 0, sizeof(*o));
	o->owner = -1;
	o->dev = ff->dev;
	if (i == ff->nqp + ff->npeer) {
		o->obj = pct(50) ? FZ_STATUS : FZ_MRSTATE;
		o->off = o->obj == FZ_STATUS ? ff->info.status_offset :
					       ff->info.mr_state_offset;
	} else if (i < ff->nqp) {
		const struct kfab_efa_create_qp *cq = &ff->qp[i].cq;

		o->obj = (unsigned int)rnd(3);
		o->off = (&cq->ctrl_offset)[o->obj];
		o->owner = f;
		o->owner_gen = ff->gen;
		o->qpn = cq->qpn;
	} else {
		const struct fz_peer *p = &ff->peer[i - ff->nqp];

		o->obj = (unsigned int)rnd(4);
		o->off = (&p->mp.ctrl_offset)[o->obj];
		o->owner = p->target;
		o->owner_gen = p->target_gen;
		o->qpn = p->qpn;
		o->dead = !fz_qp_alive(p->target, p->target_gen, p->qpn);
		if (o->obj == FZ_STATUS) {
			o->owner = -1;
			o->dev = F(p->target)->gen == p->target_gen ?
				 F(p->target)->dev : 0;
			if (F(p->target)->gen != p->target_gen)
				o->obj = FZ_CTRL, o->off = p->mp.ctrl_offset;
		}
	}
	o->len = fz_obj_len(o->obj, f);
	o->ro = o->obj == FZ_STATUS || o->obj == FZ_MRSTATE;
	return 0;
}

static bool fz_off_known(int f, __u64 off)
{
	const struct fz_file *ff = F(f);
	unsigned int i, j;

	if (off == ff->info.status_offset || off == ff->info.mr_state_offset)
		return true;
	for (i = 0; i < ff->nqp; i++)
		for (j = 0; j < 3; j++)
			if ((&ff->qp[i].cq.ctrl_offset)[j] == off)
				return true;
	for (i = 0; i < ff->npeer; i++)
		for (j = 0; j < 4; j++)
			if ((&ff->peer[i].mp.ctrl_offset)[j] == off)
				return true;
	return false;
}

static void fz_check_status(const void *page, unsigned int dev)
{
	const struct kfab_efa_status *st = page;
	const struct fz_dev *d = &fz_devs[dev];

	if (st->abi_version != KFAB_ABI_VERSION || st->device != dev ||
	    memcmp(st->gid, d->gid, 16) ||
	    st->state != (d->active ? KFAB_EFA_STATE_ACTIVE :
				      KFAB_EFA_STATE_DOWN) ||
	    st->device_rdma != d->rdma || st->rnr_retry != d->rnr_retry ||
	    st->rnr_inject_ppm != d->inject || st->reorder_ppm != d->reorder ||
	    st->link_rate_mbps != d->link_rate || st->mtu != fz_mtu)
		fz_fail("status page of device %u: state %u rdma %u rnr_retry %u inject %u reorder %u rate %u, model %d %u %u %u %u %u",
			dev, st->state, st->device_rdma, st->rnr_retry,
			st->rnr_inject_ppm, st->reorder_ppm,
			st->link_rate_mbps, d->active, d->rdma, d->rnr_retry,
			d->inject, d->reorder, d->link_rate);
}

static void fz_mapped(int f, uint8_t *m, const struct fz_obj_ref *o)
{
	if (o->obj == FZ_MRSTATE && !F(f)->mr_state)
		F(f)->mr_state = (const __u32 *)m;
	if (o->obj == FZ_STATUS)
		fz_check_status(m, o->dev);
	else if (o->obj == FZ_RING || o->obj == FZ_BUFS)
		m[rnd(o->len)] = (uint8_t)fz_next(&fz_rng);
}

/* Another mr_state mapping of the file may stand in. */
static void fz_unmapped(int f, const uint8_t *addr)
{
	if (F(f)->mr_state != (const __u32 *)addr)
		return;
	F(f)->mr_state = NULL;
	for (unsigned int j = 0; !F(f)->mr_state && j < fz_nmaps; j++)
		if (fz_maps[j].file == f && fz_maps[j].o.obj == FZ_MRSTATE)
			F(f)->mr_state = (const __u32 *)fz_maps[j].addr;
}

/*
 * Replace a page of MR memory (MAP_FIXED), or mprotect it: every MR over a
 * replaced page goes stale, mprotect staleness nothing.
 */
static void op_remap(void)
{
	int f = fz_pick(fz_has_mr);
	const struct fz_mr *mr;
	uintptr_t page;
	void *p;

	if (f < 0)
		return;
	mr = &F(f)->mr[rnd(F(f)->nmr)];
	page = (uintptr_t)mr->r.vaddr & ~(uintptr_t)(fz_page - 1);
	page += (uintptr_t)rnd(fz_npages(mr->r.vaddr, mr->r.length)) * fz_page;
	if (page < (uintptr_t)fz_mem ||
	    page >= (uintptr_t)fz_mem + FZ_MEM_BYTES)
		return;		/* read-only memory: left alone */
	if (pct(30)) {
		fz_check(OP_REMAP, mprotect((void *)page, fz_page, PROT_READ) ?
			 -errno : 0, E(0), "mprotect");
		fz_check(OP_REMAP, mprotect((void *)page, fz_page,
					    PROT_READ | PROT_WRITE) ?
			 -errno : 0, E(0), "mprotect back");
	} else {
		p = mmap((void *)page, fz_page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (fz_check(OP_REMAP, p == MAP_FAILED ? -errno : 0, E(0),
			     "MAP_FIXED"))
			return;
		/* the new page as the rest: not inherited, never huge */
		if (madvise(p, fz_page, MADV_NOHUGEPAGE) ||
		    madvise(p, fz_page, MADV_DONTFORK))
			fz_fail("remap: madvise: %s", strerror(errno));
		memset(p, (int)rnd(256), fz_page);	/* present again */
		for (int g = 0; g < FZ_NFILE; g++) {
			for (unsigned int i = 0; F(g)->gen && i < F(g)->nmr; i++) {
				struct fz_mr *m = &F(g)->mr[i];
				uintptr_t a = (uintptr_t)m->r.vaddr;

				if (m->stale || page + fz_page <= a ||
				    page >= a + m->r.length)
					continue;
				m->stale = true;
				fz_devs[F(g)->dev].stale++;
			}
		}
	}
	/* the words follow at once */
	for (int g = 0; g < FZ_NFILE; g++) {
		for (unsigned int i = 0; F(g)->gen && F(g)->mr_state &&
		     i < F(g)->nmr; i++) {
			const struct fz_mr *m = &F(g)->mr[i];
			__u32 w = F(g)->mr_state[m->r.state_index];

			if (w == KFAB_EFA_MR_STATE_STALE && !m->stale &&
			    fz_spurious_stale(g, m))
				continue;
			/* an event the model does not make; RDMA checks it */
			if (w == KFAB_EFA_MR_STATE_SUSPECT && !m->stale) {
				fz_suspect++;
				continue;
			}
			if (w != (m->stale ? KFAB_EFA_MR_STATE_STALE :
				  KFAB_EFA_MR_STATE_VALID))
				fz_fail("remap: mr_state[%u] is %u, model %s",
					m->r.state_index, w,
					m->stale ? "stale" : "valid");
		}
	}
}

static const char *const fz_counters[] = {
	"counters/qps", "counters/qps_created", "counters/mrs",
	"counters/pinned_pages", "counters/rdma_reads",
	"counters/rdma_read_bytes", "counters/rdma_writes",
	"counters/rdma_write_bytes", "counters/notifies",
	"counters/rnrs", "counters/injected_rnrs", "mtu", "max_qps",
};

static void fz_check_gauges(unsigned int d)
{
	fz_gauge(d, "nfreeqps", fz_devs[d].nfree0 - fz_live_qps(d), false);
	/* at least what the model staled (see fz_spurious_stale()) */
	fz_gauge(d, "counters/stale_mrs", fz_devs[d].stale0 + fz_devs[d].stale,
		 true);
}

static const char *const fz_rdma_names[] = {
	"none", "read", "write", "read write",
};

static void fz_knob_str(unsigned int d, const char *knob, char *buf,
			size_t len)
{
	const struct fz_dev *dv = &fz_devs[d];

	if (!strcmp(knob, "device_rdma"))
		snprintf(buf, len, "%s\n", fz_rdma_names[dv->rdma]);
	else
		snprintf(buf, len, "%u\n",
			 !strcmp(knob, "rnr_retry") ? dv->rnr_retry :
			 !strcmp(knob, "rnr_inject_ppm") ? dv->inject :
			 !strcmp(knob, "reorder_ppm") ? dv->reorder :
			 dv->link_rate);
}

static const char *const fz_bad_values[] = {
	"abc", "1000001", "-1", "4294967296", " 5x", "Up", "0x10",
	"read,write",
};

/* A valid knob write five times in seven: see fuzz_engine.h. */
static bool fz_knob_set(unsigned int d)
{
	struct fz_dev *dv = &fz_devs[d];
	unsigned int v;

	switch (rnd(7)) {
	case 0:
		fz_knob_state(d, &dv->active);
		return true;
	case 1:
		v = pct(50) ? 3 : (unsigned int)rnd(4);
		if (!fz_check(OP_KNOB, efa_sysfs_write(d, "device_rdma",
						       fz_rdma_names[v]),
			      E(0), "device_rdma"))
			dv->rdma = v;
		return true;
	case 2:
		fz_knob_rate(d, &dv->link_rate);
		return true;
	case 3:
		v = (unsigned int)rnd(1000001);
		if (pct(50))
			fz_knob_u32(d, "rnr_inject_ppm", v, true, &dv->inject);
		else
			fz_knob_u32(d, "reorder_ppm", v, true, &dv->reorder);
		return true;
	case 4:
		fz_knob_u32(d, "rnr_retry", (unsigned int)rnd(8), false,
			    &dv->rnr_retry);
		return true;
	}
	return false;
}

/*
 * A forked child's call @k on file @f: it queries and reads through RDMA
 * into its own memory.
 */
static int fz_child_call(int f, unsigned int k)
{
	struct kfab_efa_device_info info;
	int ret, bad = 0;

	switch (k) {
	case 0:
		ret = efa_query(F(f)->fd, &info);
		bad = ret || info.mr_state_offset != F(f)->info.mr_state_offset;
		break;
	case 1:
		if (!F(f)->npeer)
			break;
		ret = efa_rdma1(F(f)->fd, F(f)->peer[rnd(F(f)->npeer)].mp.peer,
				KFAB_EFA_RDMA_READ, (__u32)fz_next(&fz_rng), 0,
				fz_dst, 64, 0);
		bad = ret == 0;		/* a random rkey is unknown */
		break;
	}
	return bad;
}

/* The operations: name, weight per thousand steps, step. */
static const struct fz_op fz_ops[OP_NR] = {
	[OP_OPEN] = { "open", 50, fz_op_open },
	[OP_CLOSE] = { "close", 25, fz_op_close },
	[OP_QUERY] = { "query", 30, op_query },
	[OP_CREATE_QP] = { "create_qp", 60, op_create_qp },
	[OP_DESTROY_QP] = { "destroy_qp", 30, op_destroy_qp },
	[OP_REG_MR] = { "reg_mr", 90, op_reg_mr },
	[OP_DEREG_MR] = { "dereg_mr", 40, op_dereg_mr },
	[OP_MAP_PEER] = { "map_peer", 80, op_map_peer },
	[OP_UNMAP_PEER] = { "unmap_peer", 30, op_unmap_peer },
	[OP_RDMA] = { "rdma", 160, op_rdma },
	[OP_SET_EVENTFD] = { "set_eventfd", 40, op_set_eventfd },
	[OP_NOTIFY] = { "notify", 60, fz_op_notify },
	[OP_BAD_CMD] = { "bad_cmd", 30, fz_op_bad_cmd },
	[OP_MMAP] = { "mmap", 90, fz_op_mmap },
	[OP_MUNMAP] = { "munmap", 50, fz_op_munmap },
	[OP_MPROTECT] = { "mprotect", 15, fz_op_mprotect },
	[OP_REMAP] = { "remap", 15, op_remap },
	[OP_SYSFS] = { "sysfs", 20, fz_op_sysfs },
	[OP_KNOB] = { "knob", 24, fz_op_knob },
	[OP_FORK] = { "fork", 1, fz_op_fork },
};

/* ------------------------------------------------------------------ */
/* The race phase: shared descriptors, loose checks. */

/* Race call @k on @fd: see fuzz_engine.h. */
static int fz_race_call(struct fz_racer *r, int fd, unsigned int k)
{
	int nfd, ret = 0;
	struct kfab_efa_create_qp cq;
	struct kfab_efa_map_peer mp;
	struct kfab_efa_reg_mr mr;
	struct kfab_iovec iov;
	void *m;

	switch (k) {
	case 2:
		ret = efa_create_qp(fd, &cq);
		if (!ret && trnd(r, 2)) {
			/* map it into another shared file, maybe */
			int o = atomic_load(&fz_rfd[trnd(r, FZ_RACE_FDS)]);

			if (o >= 0)
				efa_map_peer(o, fz_devs[0].gid, cq.qpn,
					     cq.qkey, &mp);
		}
		break;
	case 3:
		ret = efa_destroy_qp(fd, 1 + (uint32_t)trnd(r, 64));
		break;
	case 4:
		ret = efa_reg_mr(fd, r->pool + trnd(r, FZ_RACE_POOL / 2),
				 1 + trnd(r, FZ_RACE_POOL / 2),
				 (__u32)trnd(r, 4), &mr);
		break;
	case 5:
		ret = efa_dereg_mr(fd, 1 + (uint32_t)trnd(r, 32));
		break;
	case 6:
		ret = efa_unmap_peer(fd, 1 + (uint32_t)trnd(r, 8));
		break;
	case 7:
		iov.addr = (uintptr_t)r->pool + trnd(r, FZ_RACE_POOL / 2);
		iov.len = trnd(r, 8192);
		ret = efa_rdma(fd, 1 + (uint32_t)trnd(r, 4), (__u32)trnd(r, 2),
			       (__u32)fz_next(&r->rng), (uintptr_t)r->pool +
			       trnd(r, FZ_RACE_POOL), &iov, 1,
			       trnd(r, 2) ? KFAB_EFA_RDMA_NOTIFY : 0, NULL);
		break;
	case 8:
		ret = efa_notify(fd, 1 + (uint32_t)trnd(r, 4));
		break;
	case 9:
		nfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (nfd < 0)
			return 1;
		ret = efa_set_eventfd(fd, 1 + (uint32_t)trnd(r, 64), nfd);
		close(nfd);
		break;
	case 10:
		ret = efa_create_qp(fd, &cq);
		if (!ret)
			ret = fz_race_touch(r, fd, cq.ring_offset,
					    efa_ring_bytes(cq.rx_entries));
		break;
	case 11:
		ret = efa_query(fd, (struct kfab_efa_device_info *)r->pool);
		break;
	case 12:
		/* remap a page of the pool under registered MRs */
		m = mmap(r->pool + trnd(r, FZ_RACE_POOL / fz_page) * fz_page,
			 fz_page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		ret = m == MAP_FAILED ? -errno : 0;
		break;
	}
	return ret;
}

/* Flip RDMA capabilities under the racers' feet. */
static void fz_race_knob(struct fz_racer *r, unsigned int d)
{
	static const char *const rdma[] = { "read write", "read", "write",
					    "none" };

	r->bad += efa_sysfs_write(d, "device_rdma", rdma[trnd(r, 4)]) != 0;
}

/* ------------------------------------------------------------------ */

static void fz_setup(void)
{
	unsigned int d, i;
	char buf[32];

	for (d = 0; d < fz_ndevs; d++) {
		struct fz_dev *dv = &fz_devs[d];

		efa_gid(d, dv->gid);
		dv->max_qps = (__u32)efa_sysfs_get(d, "max_qps");
		dv->nfree0 = efa_sysfs_get(d, "nfreeqps");
		dv->stale0 = efa_sysfs_get(d, "counters/stale_mrs");
		dv->rnr_retry = (__u32)efa_sysfs_get(d, "rnr_retry");
		dv->inject = (__u32)efa_sysfs_get(d, "rnr_inject_ppm");
		dv->reorder = (__u32)efa_sysfs_get(d, "reorder_ppm");
		dv->link_rate = (unsigned int)efa_sysfs_get(d,
							    "link_rate_mbps");
		dv->active = fz_read_active(d);
		efa_sysfs_read(d, "device_rdma", buf, sizeof(buf));
		for (i = 0; i < 4; i++) {
			char want[32];

			snprintf(want, sizeof(want), "%s\n", fz_rdma_names[i]);
			if (!strcmp(buf, want))
				dv->rdma = i;
		}
	}
	fz_rx_entries = (__u32)efa_param_get("rx_entries");
	fz_mtu = (__u32)efa_param_get("mtu");
	fz_max_mrs = (__u32)efa_param_get("max_mrs");
	if (fz_mtu == UINT32_MAX || fz_max_mrs == UINT32_MAX)
		ksft_exit_fail_msg("module parameters unreadable\n");

	fz_mem = fz_map_guarded(FZ_MEM_BYTES);
	/*
	 * Only what the model does may invalidate an MR: no huge page split
	 * by a remap (it would clear the whole 2 MiB), no copy-on-write
	 * break after a fork (the children never touch this memory).
	 */
	if (madvise(fz_mem, FZ_MEM_BYTES, MADV_NOHUGEPAGE) ||
	    madvise(fz_mem, FZ_MEM_BYTES, MADV_DONTFORK))
		ksft_exit_fail_msg("madvise: %s\n", strerror(errno));
	/* present and written: never the zero page */
	fz_fill_random(fz_mem, FZ_MEM_BYTES);
	fz_src = fz_map_anon(FZ_SRC_BYTES, PROT_READ | PROT_WRITE);
	fz_fill_random(fz_src, FZ_SRC_BYTES);
	fz_dst = fz_map_anon(FZ_DST_BYTES, PROT_READ | PROT_WRITE);
	memset(fz_dst, 0, FZ_DST_BYTES);
}

static const char *const fz_gauges[] = {
	"counters/qps", "counters/mrs", "counters/pinned_pages", "nfreeqps",
};

static void fz_sequential_done(void)
{
	ksft_print_msg("MRs invalidated without a remap of theirs: %lu; suspect words seen: %lu\n",
		       fz_spurious, fz_suspect);
}

static const struct fz_device fz_efa = {
	.prog = "efa_fuzz",
	.cls = "efa",
	.devname = "device",
	.ndevs = efa_num_devices,
	.open_dev0_pct = 60,
	.ioctls = fz_ioctls,
	.nioctls = ARRAY_SIZE(fz_ioctls),
	.notify_cmd = KFAB_EFA_IOC_NOTIFY,
	.ops = fz_ops,
	.nops = OP_NR,
	.obj_status = FZ_STATUS,
	.child_calls = 2,
	.counters = fz_counters,
	.ncounters = ARRAY_SIZE(fz_counters),
	.knobs = efa_knob_names,
	.nknobs = ARRAY_SIZE(efa_knob_names),
	.bad_values = fz_bad_values,
	.nbad_values = ARRAY_SIZE(fz_bad_values),
	.gauges = fz_gauges,
	.ngauges = ARRAY_SIZE(fz_gauges),
	.baseline = "devices back to baseline: QPs, MRs, pinned pages",
	.race_errnos = { ESTALE, EOPNOTSUPP },
	.race_knob = fz_race_knob,
	.sequential_done = fz_sequential_done,
	.unmapped = fz_unmapped,
};

int main(int argc, char **argv)
{
	fz_main(&fz_efa, argc, argv);
}
