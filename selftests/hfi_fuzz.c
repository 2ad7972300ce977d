// SPDX-License-Identifier: GPL-2.0
/*
 * hfi_fuzz: seeded random sequences of every kfab_hfi ioctl, mmap, munmap,
 * mprotect, close, fork and knob write, checked against a model.
 *
 *   hfi_fuzz [COUNT [SEED]]
 *
 * COUNT steps (default 20000) run in one process against a model of its
 * files, contexts, peer handles, TID buffers and mappings. Each call is
 * built valid, then one field or pointer is often broken at random, and the
 * answer must be one of the errnos Documentation/userspace-api/kfab_hfi.rst
 * gives for what was broken, or success when nothing was. Results are
 * checked too: SDMA byte for byte, NOTIFY and SDMA_NOTIFY against the
 * eventfd and the armed word, GET_VERSION, CTXT_INFO, LIST_CTXTS,
 * nfreectxts and the status page against the model, jkeys against the
 * UUIDs. Forked children use the inherited files and mappings and are
 * killed at random points.
 *
 * Then two threads run COUNT / 2 steps each on eight shared descriptors,
 * with a third thread flipping the units' knobs: only the errno set is
 * checked there, the point is the races. Last, with everything closed, the
 * units' free contexts and pin gauges, the process's locked memory and its
 * descriptors must be back where they started, and the knobs as they were.
 *
 * SEED (default: random) is printed; the same COUNT and SEED replay the
 * sequential phase. Without root the knob steps are left out. TAP output;
 * exit 4 (skip) without /dev/kfab_hfi0.
 */

/* hfi_util.h brings in the test harness, whose runner is not used here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "hfi_util.h"
#pragma GCC diagnostic pop
#include "fuzz_util.h"

#define FZ_NFILE		24
#define FZ_NTID			8
#define FZ_NPEER		8
#define FZ_NUUID		3
#define FZ_DST_BYTES		(4UL << 20)
#define FZ_SRC_BYTES		(1UL << 20)
#define FZ_TID_MAX_BYTES	(256UL << 10)
#define FZ_IOV_MAX_BYTES	(16UL << 10)
#define HFI_MAX_CTXTS_PARAM	160	/* the largest ctxts_per_unit */

enum {
	OP_OPEN, OP_CLOSE, OP_VERSION, OP_ASSIGN, OP_INFO, OP_MAP_PEER,
	OP_UNMAP_PEER, OP_TID_UPDATE, OP_TID_FREE, OP_SDMA, OP_SET_EVENTFD,
	OP_NOTIFY, OP_BAD_CMD, OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_SYSFS,
	OP_KNOB, OP_FORK, OP_LIST, OP_NR
};

/* ------------------------------------------------------------------ */
/* The model. */

struct fz_unit {
	unsigned int lid;
	unsigned int nctxts;
	uint64_t free0;		/* nfreectxts when we started */
	bool active;
	unsigned int drop_ppm;
	unsigned int link_rate;
};

struct fz_tid {
	uint32_t handle;
	uint8_t *addr;
	uint64_t len;
};

struct fz_peer {
	struct kfab_hfi_map_peer mp;
	int target;		/* file holding the peer's context */
	uint64_t target_gen;
};

/* One open file description: see fuzz_engine.h. */
struct fz_file {
	uint64_t gen;
	int fd;
	unsigned int nmaps;
	unsigned int dev;	/* its unit */
	bool assigned;
	struct kfab_hfi_ctxt_info info;
	struct fz_tid tid[FZ_NTID];
	unsigned int ntid;
	struct fz_peer peer[FZ_NPEER];
	unsigned int npeer;
	uint32_t stale_tid;	/* freed handles: must stay unknown */
	uint32_t stale_peer;
	uint64_t stale_off;
	int efd;		/* our copy of the context's eventfd */
};

#include "fuzz_engine.h"

/* The requests fz_handle_req() builds. */
_Static_assert(sizeof(struct kfab_hfi_peer_req) ==
	       sizeof(struct fz_handle_req) &&
	       sizeof(struct kfab_hfi_tid_free) == sizeof(struct fz_handle_req),
	       "a handle request is not struct fz_handle_req");

enum fz_obj { FZ_CTRL, FZ_RHQ, FZ_EAGER, FZ_STATUS, FZ_NOBJ };

static struct fz_unit fz_units[FZ_MAX_DEVS];
static __u8 fz_uuids[FZ_NUUID][16];
static uint64_t fz_pin_limit_pages;	/* 0: none */
static __u32 fz_geom[4];		/* rhq_entries, eager count and size */

/* Memory the steps point the kernel at. */
static uint8_t *fz_dst;		/* TID buffers, a PROT_NONE page after it */
static uint8_t *fz_src;		/* SDMA sources, random bytes */

static bool fz_ctx_alive(int f, uint64_t gen)
{
	return f >= 0 && F(f)->gen == gen && F(f)->assigned;
}

static unsigned int fz_live_ctxts(unsigned int unit)
{
	unsigned int n = 0;
	int f;

	for (f = 0; f < FZ_NFILE; f++)
		n += F(f)->gen && F(f)->assigned && F(f)->dev == unit;
	return n;
}

static int fz_unit_by_lid(unsigned int lid)
{
	unsigned int u;

	for (u = 0; u < fz_ndevs; u++)
		if (fz_units[u].lid == lid)
			return (int)u;
	return -1;
}

static bool fz_is_ctx(const struct fz_file *ff)
{
	return ff->fd >= 0 && ff->assigned;
}

/* An open file, with a context most of the time when there is one. */
static int fz_pick_ctx(void)
{
	int f = -1;

	if (pct(95))
		f = fz_pick(fz_is_ctx);
	return f >= 0 ? f : fz_pick(fz_is_open);
}

/* The last reference to the file went: its context and handles with it. */
static void fz_file_drop(struct fz_file *ff)
{
	if (ff->efd >= 0)
		close(ff->efd);
}

static void fz_opened(int f)
{
	F(f)->efd = -1;
}

static bool fz_up(unsigned int u)
{
	return fz_units[u].active;
}

/* See fuzz_engine.h: all commands but three need a context (EINVAL). */
static int fz_ioctl(int f, unsigned long cmd, void *arg, fz_set *expect,
		    enum fz_place *place)
{
	bool gated = !F(f)->assigned && cmd != KFAB_HFI_IOC_GET_VERSION &&
		     cmd != KFAB_HFI_IOC_ASSIGN_CTXT &&
		     cmd != KFAB_HFI_IOC_LIST_CTXTS;
	/* the work is done (and undone, but for SDMA) with a read-only arg */
	void *p = fz_place_arg(cmd, arg, expect, place);

	if (gated)
		*expect = E(EINVAL);
	return hfi_ioctl(F(f)->fd, cmd, p);
}

/* ------------------------------------------------------------------ */
/* The steps of the sequential phase. */

static void op_version(void)
{
	int f = fz_pick(fz_is_open);
	struct kfab_hfi_version v;
	struct fz_unit *u;
	enum fz_place place;
	fz_set expect = E(0);
	int ret;

	if (f < 0)
		return;
	memset(&v, 0xa5, sizeof(v));	/* out only: input is ignored */
	ret = fz_ioctl(f, KFAB_HFI_IOC_GET_VERSION, &v, &expect, &place);
	if (fz_check(OP_VERSION, ret, expect, "") || place != FZ_ARG_OK)
		return;
	u = &fz_units[F(f)->dev];
	if (v.abi_version != KFAB_ABI_VERSION || v.unit != F(f)->dev ||
	    v.lid != u->lid || v.nctxts != u->nctxts ||
	    v.state != (u->active ? KFAB_HFI_STATE_ACTIVE :
				    KFAB_HFI_STATE_DOWN) ||
	    v.reserved[0] || v.reserved[1])
		fz_fail("version: abi %u unit %u lid %u state %u nctxts %u, model unit %u lid %u active %d nctxts %u",
			v.abi_version, v.unit, v.lid, v.state, v.nctxts,
			F(f)->dev, u->lid, u->active, u->nctxts);
}

static bool fz_unassigned(const struct fz_file *ff)
{
	return ff->fd >= 0 && !ff->assigned;
}

/* The kernel's answer to a successful ASSIGN_CTXT, against the model. */
static void fz_check_assigned(int f, const struct kfab_hfi_assign *a)
{
	const struct kfab_hfi_ctxt_info *in = &a->info;
	unsigned int unit = F(f)->dev;
	int g;

	if (in->unit != unit || in->lid != fz_units[unit].lid ||
	    in->ctxt >= fz_units[unit].nctxts || in->pkey != a->pkey ||
	    in->sl != a->sl || memcmp(in->uuid, a->uuid, 16) ||
	    in->rhq_entries != fz_geom[0] ||
	    in->rhq_entry_size != sizeof(struct kfab_hfi_rhq_entry) ||
	    in->eager_count != fz_geom[1] || in->eager_size != fz_geom[2] ||
	    !in->jkey || in->jkey > 0xffff || in->pad0 || in->pad1 ||
	    in->reserved[0] || in->reserved[1] || in->reserved[2] ||
	    in->reserved[3])
		fz_fail("assign: info unit %u lid %u ctxt %u jkey %#x pkey %#x sl %u geometry %u/%u/%u",
			in->unit, in->lid, in->ctxt, in->jkey, in->pkey, in->sl,
			in->rhq_entries, in->eager_count, in->eager_size);
	for (g = 0; g < FZ_NFILE; g++) {
		const struct fz_file *o = F(g);
		bool same;

		if (g == f || !o->gen || !o->assigned)
			continue;
		if (o->dev == unit && o->info.ctxt == in->ctxt)
			fz_fail("assign: context %u of unit %u is live already",
				in->ctxt, unit);
		same = !memcmp(o->info.uuid, in->uuid, 16);
		if (same != (o->info.jkey == in->jkey))
			fz_fail("assign: jkey %#x vs %#x of a context with %s UUID",
				in->jkey, o->info.jkey,
				same ? "the same" : "another");
	}
}

static void op_assign(void)
{
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_hfi_assign, pad0),
		FZ_RSV(kfab_hfi_assign, flags),
		FZ_RSV(kfab_hfi_assign, reserved[0]),
		FZ_RSV(kfab_hfi_assign, reserved[1]),
	};
	struct kfab_hfi_assign a;
	enum fz_place place;
	fz_set err = 0, expect;
	unsigned int unit;
	int f = -1, ret;

	if (pct(85))
		f = fz_pick(fz_unassigned);
	if (f < 0)
		f = fz_pick(fz_is_open);
	if (f < 0)
		return;
	unit = F(f)->dev;

	memset(&a, 0, sizeof(a));
	if (pct(85))
		memcpy(a.uuid, fz_uuids[rnd(FZ_NUUID)], 16);
	else
		hfi_uuid_random(a.uuid);
	switch (rnd(20)) {
	case 0:
		a.pkey = 0x0001;
		break;
	case 1:
		a.pkey = 0x8002;
		break;
	case 2:
		a.pkey = pct(50) ? 0 : 0x8000;
		err |= E(EINVAL);
		break;
	default:
		a.pkey = KFAB_HFI_PKEY_DEFAULT;
	}
	a.sl = (__u8)rnd(KFAB_HFI_SL_MAX + 1);
	if (pct(3)) {
		a.sl = (__u8)(KFAB_HFI_SL_MAX + 1 + rnd(240));
		err |= E(EINVAL);
	}
	if (fz_break_rsv(&a, rsv, ARRAY_SIZE(rsv)))
		err |= E(EINVAL);
	memset(&a.info, 0x5a, sizeof(a.info));	/* out only */
	if (F(f)->assigned)
		err |= E(EINVAL);
	if (!fz_up(unit))
		err |= E(ENETDOWN);
	if (fz_live_ctxts(unit) >= fz_units[unit].free0)
		err |= E(EBUSY);
	expect = err ? err : E(0) | E(ENOMEM);

	ret = fz_ioctl(f, KFAB_HFI_IOC_ASSIGN_CTXT, &a, &expect, &place);
	if (fz_check(OP_ASSIGN, ret, expect, "") || place != FZ_ARG_OK)
		return;
	fz_check_assigned(f, &a);
	F(f)->assigned = true;
	F(f)->info = a.info;
}

static void op_info(void)
{
	struct kfab_hfi_ctxt_info info;
	enum fz_place place;
	fz_set expect = E(0);
	int f = fz_pick_ctx(), ret;

	if (f < 0)
		return;
	memset(&info, 0x3c, sizeof(info));
	ret = fz_ioctl(f, KFAB_HFI_IOC_CTXT_INFO, &info, &expect, &place);
	if (fz_check(OP_INFO, ret, expect, "") || place != FZ_ARG_OK)
		return;
	if (memcmp(&info, &F(f)->info, sizeof(info)))
		fz_fail("ctxt_info: differs from what ASSIGN_CTXT returned");
}

/* The entry of the model's context in file @g among @n, or NULL. */
static const struct kfab_hfi_ctxt_entry *
fz_list_find(const struct kfab_hfi_ctxt_entry *e, __u32 n, int g)
{
	for (__u32 i = 0; i < n; i++)
		if (e[i].ctxt == F(g)->info.ctxt)
			return &e[i];
	return NULL;
}

/*
 * LIST_CTXTS on any open file: exactly the model's contexts of that unit
 * (children assign none), with their keys, our pid and the geometry.
 */
static void op_list(void)
{
	static struct kfab_hfi_ctxt_entry ents[HFI_MAX_CTXTS_PARAM + 1];
	const struct kfab_hfi_ctxt_entry *e;
	struct kfab_hfi_list_ctxts l;
	unsigned int unit, nmodel;
	enum fz_place place;
	fz_set expect = E(0);
	int f = fz_pick(fz_is_open), g, ret;
	__u32 room;

	if (f < 0)
		return;
	unit = F(f)->dev;
	nmodel = fz_live_ctxts(unit);
	room = pct(80) ? fz_units[unit].nctxts :
			 (__u32)rnd(fz_units[unit].nctxts + 2);
	memset(ents, 0x5a, sizeof(ents));
	memset(&l, 0, sizeof(l));
	l.entries = (__u64)(uintptr_t)ents;
	l.count = room;
	switch (pct(15) ? rnd(5) : 5) {
	case 0:
		l.flags = 1U << rnd(32);	/* none is defined */
		expect = E(EINVAL);
		break;
	case 1:
		l.pad0 = 1 + (__u32)rnd(7);
		expect = E(EINVAL);
		break;
	case 2:
		l.reserved[rnd(2)] = 1ULL << rnd(64);
		expect = E(EINVAL);
		break;
	case 3:
		l.entries = (__u64)(uintptr_t)(pct(50) ? fz_ro : fz_hole);
		if (room && nmodel)
			expect = E(EFAULT);
		break;
	case 4:
		l.count = room = 0;
		l.entries = rnd(2) ? 0 : (__u64)(uintptr_t)fz_hole;
		break;
	}
	ret = fz_ioctl(f, KFAB_HFI_IOC_LIST_CTXTS, &l, &expect, &place);
	if (fz_check(OP_LIST, ret, expect, "") || place != FZ_ARG_OK ||
	    l.entries != (__u64)(uintptr_t)ents)
		return;
	if (l.total != nmodel || l.count != (room < nmodel ? room : nmodel) ||
	    l.flags || l.pad0 || l.reserved[0] || l.reserved[1])
		fz_fail("list_ctxts: unit %u count %u total %u, model %u with room %u",
			unit, l.count, l.total, nmodel, room);
	if (ents[l.count].ctxt != 0x5a5a5a5a)
		fz_fail("list_ctxts: entry %u written beyond count", l.count);
	if (l.count < nmodel)
		return;
	for (g = 0; g < FZ_NFILE; g++) {
		if (!F(g)->gen || !F(g)->assigned || F(g)->dev != unit)
			continue;
		e = fz_list_find(ents, l.count, g);
		if (!e || e->jkey != F(g)->info.jkey ||
		    e->pkey != F(g)->info.pkey || e->sl != F(g)->info.sl ||
		    e->pid != getpid() || e->flags & KFAB_HFI_CTXT_OWNER_GONE ||
		    e->rhq_entries != fz_geom[0] ||
		    e->eager_count != fz_geom[1] ||
		    e->eager_size != fz_geom[2] || e->pad0 ||
		    e->reserved[0] || e->reserved[1])
			fz_fail("list_ctxts: context %u of unit %u %s",
				F(g)->info.ctxt, unit,
				e ? "listed wrong" : "missing");
	}
}

static void fz_unmap_peer_at(int f, unsigned int i)
{
	struct fz_file *ff = F(f);

	ff->stale_peer = ff->peer[i].mp.peer;
	ff->stale_off = ff->peer[i].mp.ctrl_offset;
	ff->peer[i] = ff->peer[--ff->npeer];
}

static void op_unmap_peer(void)
{
	int f = fz_pick_ctx(), i;

	if (f < 0)
		return;
	i = fz_live(F(f)->npeer);
	if (!fz_handle_req(OP_UNMAP_PEER, f, KFAB_HFI_IOC_UNMAP_PEER, i,
			   i >= 0 ? F(f)->peer[i].mp.peer : 0,
			   F(f)->stale_peer) && i >= 0)
		fz_unmap_peer_at(f, (unsigned int)i);
}

/* A context of the job with @jkey, open or only mapped. */
static int fz_pick_job(__u32 jkey)
{
	int f, pick = -1;
	unsigned int n = 0;

	for (f = 0; f < FZ_NFILE; f++)
		if (F(f)->gen && F(f)->assigned && F(f)->info.jkey == jkey &&
		    rnd(++n) == 0)
			pick = f;
	return pick;
}

static void op_map_peer(void)
{
	struct kfab_hfi_map_peer mp;
	const struct fz_file *t = NULL;
	enum fz_place place;
	fz_set err = 0, expect;
	int f = fz_pick_ctx(), g, pu, target = -1, ret;
	struct fz_peer *p;

	if (f < 0)
		return;
	if (F(f)->npeer == FZ_NPEER) {
		op_unmap_peer();
		return;
	}
	memset(&mp, 0xc3, sizeof(mp));		/* out fields are ignored */
	mp.flags = 0;
	mp.reserved = 0;
	g = -1;
	if (pct(60) && F(f)->assigned)
		g = fz_pick_job(F(f)->info.jkey);
	if (g < 0 && pct(85))
		g = fz_pick(fz_is_ctx);
	if (g >= 0) {
		mp.lid = fz_units[F(g)->dev].lid;
		mp.ctxt = F(g)->info.ctxt;
	} else {
		mp.lid = pct(80) ? fz_units[rnd(fz_ndevs)].lid :
				   (uint32_t)fz_next(&fz_rng);
		mp.ctxt = pct(80) ? (uint32_t)rnd(fz_units[0].nctxts + 2) :
				    (uint32_t)fz_next(&fz_rng);
	}
	if (fz_break_flags(&mp.flags, &mp.reserved))
		err |= E(EINVAL);

	pu = fz_unit_by_lid(mp.lid);
	for (g = 0; pu >= 0 && g < FZ_NFILE; g++)
		if (F(g)->gen && F(g)->assigned &&
		    F(g)->dev == (unsigned int)pu && F(g)->info.ctxt == mp.ctxt)
			target = g;
	err |= fz_map_peer_err(f, pu, target);
	if (target >= 0) {
		t = F(target);
		if (t->info.jkey != F(f)->info.jkey ||
		    ((t->info.pkey ^ F(f)->info.pkey) & 0x7fff))
			err |= E(EACCES);
	}
	expect = err ? err : E(0) | E(ENOMEM);

	ret = fz_ioctl(f, KFAB_HFI_IOC_MAP_PEER, &mp, &expect, &place);
	if (fz_check(OP_MAP_PEER, ret, expect, "") || place != FZ_ARG_OK)
		return;
	if (!t)
		return;		/* reported above */
	if (!mp.peer || mp.rhq_entries != t->info.rhq_entries ||
	    mp.eager_count != t->info.eager_count ||
	    mp.eager_size != t->info.eager_size ||
	    mp.rhq_entry_size != sizeof(struct kfab_hfi_rhq_entry) ||
	    mp.reserved)
		fz_fail("map_peer: handle %u geometry %u/%u/%u", mp.peer,
			mp.rhq_entries, mp.eager_count, mp.eager_size);
	p = &F(f)->peer[F(f)->npeer++];
	p->mp = mp;
	p->target = target;
	p->target_gen = t->gen;
}

static void op_tid_free(void)
{
	int f = fz_pick_ctx(), i;

	if (f < 0)
		return;
	i = fz_live(F(f)->ntid);
	if (fz_handle_req(OP_TID_FREE, f, KFAB_HFI_IOC_TID_FREE, i,
			  i >= 0 ? F(f)->tid[i].handle : 0, F(f)->stale_tid) ||
	    i < 0)
		return;
	F(f)->stale_tid = F(f)->tid[i].handle;
	F(f)->tid[i] = F(f)->tid[--F(f)->ntid];
}

static uint64_t fz_npages(uint64_t vaddr, uint64_t len)
{
	return ((vaddr + len - 1) / fz_page) - vaddr / fz_page + 1;
}

static void op_tid_update(void)
{
	static const struct fz_rsv rsv[] = {
		FZ_RSV(kfab_hfi_tid_update, flags),
		FZ_RSV(kfab_hfi_tid_update, pad0),
		FZ_RSV(kfab_hfi_tid_update, reserved[0]),
		FZ_RSV(kfab_hfi_tid_update, reserved[1]),
	};
	struct kfab_hfi_tid_update t;
	enum fz_place place;
	fz_set err = 0, expect;
	int f = fz_pick_ctx(), ret;
	bool good = false;
	uint64_t len;
	const char *what;
	unsigned int k;

	if (f < 0)
		return;
	if (F(f)->ntid == FZ_NTID) {
		op_tid_free();
		return;
	}
	memset(&t, 0, sizeof(t));
	t.handle = (__u32)fz_next(&fz_rng);	/* out fields are ignored */
	t.npages = (__u32)fz_next(&fz_rng);
	switch (k = (unsigned int)rnd(40)) {
	case 0 ... 5:
		/* TIDs are pinned for writing */
		err |= fz_bad_range(k, fz_dst, FZ_DST_BYTES, true, &t.vaddr,
				    &t.length, &what);
		break;
	case 6:
		what = "2 GiB";
		t.vaddr = (uintptr_t)fz_dst;
		t.length = 2ULL << 30;
		if (fz_pin_limit_pages &&
		    fz_npages(t.vaddr, t.length) > fz_pin_limit_pages)
			err |= E(ENOSPC);
		else
			err |= E(EFAULT);
		break;
	default:
		what = "buffer";
		len = 1 + rnd(FZ_TID_MAX_BYTES);
		t.vaddr = (uintptr_t)fz_dst + rnd(FZ_DST_BYTES - len + 1);
		t.length = len;
		good = true;
	}
	if (fz_break_rsv(&t, rsv, ARRAY_SIZE(rsv)))
		err |= E(EINVAL);
	expect = err ? err : E(0) | E(ENOMEM);

	ret = fz_ioctl(f, KFAB_HFI_IOC_TID_UPDATE, &t, &expect, &place);
	if (fz_check(OP_TID_UPDATE, ret, expect, what) ||
	    place != FZ_ARG_OK || !good)
		return;
	if (!t.handle || t.npages != fz_npages(t.vaddr, t.length) ||
	    t.pad0 || t.reserved[0] || t.reserved[1])
		fz_fail("tid_update: handle %u npages %u for %llu bytes at %#llx",
			t.handle, t.npages, (unsigned long long)t.length,
			(unsigned long long)t.vaddr);
	F(f)->tid[F(f)->ntid++] = (struct fz_tid){
		.handle = t.handle,
		.addr = (uint8_t *)(uintptr_t)t.vaddr,
		.len = t.length,
	};
}

/* The owner's mapping of @ctx's control page, if we have one. */
static struct kfab_hfi_ctrl *fz_owner_ctrl(int ctx, uint64_t gen)
{
	unsigned int i;

	for (i = 0; i < fz_nmaps; i++)
		if (fz_maps[i].o.obj == FZ_CTRL && fz_maps[i].o.owner == ctx &&
		    fz_maps[i].o.owner_gen == gen)
			return (struct kfab_hfi_ctrl *)fz_maps[i].addr;
	return NULL;
}

static void op_sdma(void)
{
	struct kfab_iovec iov[KFAB_IOV_MAX + 4];
	struct kfab_hfi_ctrl *ctrl = NULL;
	const struct fz_tid *tid = NULL;
	const struct fz_peer *p = NULL;
	struct kfab_hfi_sdma s;
	enum fz_place place;
	fz_set err = 0, expect;
	int f = pct(90) ? fz_pick(fz_has_peer) : -1, target = -1, ret;
	bool alive = false, clean = true;
	unsigned int cnt, i;
	uint64_t total = 0, off;
	const char *what = "";

	if (f < 0)
		f = fz_pick_ctx();
	if (f < 0)
		return;
	memset(&s, 0, sizeof(s));
	s.bytes = fz_next(&fz_rng);		/* out only */
	if (F(f)->npeer && pct(92)) {
		p = &F(f)->peer[rnd(F(f)->npeer)];
		s.peer = p->mp.peer;
		target = p->target;
		alive = fz_ctx_alive(target, p->target_gen);
	} else {
		s.peer = fz_bad_handle();
		err |= E(EINVAL);
		what = "unknown peer";
	}
	if (p && !alive)
		err |= E(ECONNRESET);
	if (alive && fz_link_down(f, target))
		err |= E(ENETDOWN);
	if (alive && F(target)->ntid && pct(92)) {
		tid = &F(target)->tid[rnd(F(target)->ntid)];
		s.tid = tid->handle;
	} else {
		s.tid = pct(30) && alive && F(target)->stale_tid ?
			F(target)->stale_tid : fz_bad_handle();
		if (alive)
			err |= E(ENOENT);
	}

	cnt = fz_iov_count(4, &err, &what, &clean);
	for (i = 0; i < cnt && i < ARRAY_SIZE(iov); i++) {
		unsigned int r = (unsigned int)rnd(200);
		uint64_t len = rnd(FZ_IOV_MAX_BYTES + 1);

		iov[i].addr = (uintptr_t)fz_src + rnd(FZ_SRC_BYTES - len + 1);
		iov[i].len = len;
		err |= fz_break_iov(r, &iov[i], &what, &clean);
		if (clean)
			total += iov[i].len;
	}
	s.iovcnt = cnt;
	s.iov = (uintptr_t)iov;
	err |= fz_break_iov_array(&s.iov, cnt, &what);
	if (tid && clean) {
		s.offset = fz_copy_at(0, tid->len, total, false,
				      "beyond the TID buffer", &err, &what);
	} else {
		s.offset = rnd(fz_page);
	}
	if (pct(40))
		s.flags = KFAB_HFI_SDMA_NOTIFY;
	if (pct(3)) {
		if (pct(50))
			s.flags |= 1U << (1 + rnd(31));
		else
			s.reserved[rnd(2)] = 1ULL << rnd(64);
		err |= E(EINVAL);
		what = "flags";
	}
	expect = err ? err : E(0);

	/* With NOTIFY the kernel must clear armed and signal the owner. */
	if (!err && (s.flags & KFAB_HFI_SDMA_NOTIFY)) {
		ctrl = fz_owner_ctrl(target, F(target)->gen);
		if (ctrl)
			atomic_store(hfi_a32(&ctrl->armed), 1);
		if (F(target)->efd >= 0)
			fz_efd_drain(F(target)->efd);
	}

	ret = fz_ioctl(f, KFAB_HFI_IOC_SDMA, &s, &expect, &place);
	fz_check(OP_SDMA, ret, expect, what);
	if (err || !(ret == 0 || (ret == -EFAULT && place == FZ_ARG_RO)))
		return;
	if (ret == 0 && (s.bytes != total || s.iovcnt != cnt || s.reserved[0]))
		fz_fail("sdma: %llu bytes reported for %llu",
			(unsigned long long)s.bytes,
			(unsigned long long)total);
	i = (unsigned int)fz_iov_differs(tid->addr + s.offset, iov, cnt, &off);
	if (i < cnt)
		fz_fail("sdma: iov %u of %u (%llu bytes) did not land at offset %llu",
			i, cnt, (unsigned long long)iov[i].len,
			(unsigned long long)(s.offset + off));
	if (!ctrl)
		return;
	if (atomic_load(hfi_a32(&ctrl->armed)))
		fz_fail("sdma: NOTIFY left armed set");
	if (F(target)->efd >= 0 && !fz_efd_drain(F(target)->efd))
		fz_fail("sdma: NOTIFY did not signal the eventfd");
}

/* Peer @i of file @f for NOTIFY: see fuzz_engine.h. */
static fz_set fz_peer_notify(int f, unsigned int i, __u32 *handle, int *efd)
{
	const struct fz_peer *p = &F(f)->peer[i];

	*handle = p->mp.peer;
	if (!fz_ctx_alive(p->target, p->target_gen))
		return E(ECONNRESET);
	*efd = F(p->target)->efd;
	if (fz_link_down(f, p->target))
		return E(ENETDOWN);
	return 0;
}

static void op_set_eventfd(void)
{
	struct kfab_hfi_eventfd e;
	enum fz_place place;
	fz_set expect = E(0);
	int f = fz_pick_ctx(), efd = -1, ret;
	bool clear = false;

	if (f < 0)
		return;
	memset(&e, 0, sizeof(e));
	efd = fz_eventfd_arg(&e.fd, &expect, &clear);
	if (fz_break_flags(&e.flags, &e.reserved))
		expect = E(EINVAL);
	ret = fz_ioctl(f, KFAB_HFI_IOC_SET_EVENTFD, &e, &expect, &place);
	fz_eventfd_set(fz_check(OP_SET_EVENTFD, ret, expect, ""), &F(f)->efd,
		       efd, clear);
}

/* The device's ioctls: fz_op_bad_cmd() tries everything else. */
static const unsigned long fz_ioctls[] = {
	KFAB_HFI_IOC_GET_VERSION, KFAB_HFI_IOC_ASSIGN_CTXT,
	KFAB_HFI_IOC_CTXT_INFO, KFAB_HFI_IOC_MAP_PEER,
	KFAB_HFI_IOC_UNMAP_PEER, KFAB_HFI_IOC_TID_UPDATE,
	KFAB_HFI_IOC_TID_FREE, KFAB_HFI_IOC_SDMA,
	KFAB_HFI_IOC_SET_EVENTFD, KFAB_HFI_IOC_NOTIFY,
	KFAB_HFI_IOC_LIST_CTXTS,
};

static size_t fz_obj_len(enum fz_obj obj, __u32 rhq_entries,
			 __u32 eager_count, __u32 eager_size)
{
	switch (obj) {
	case FZ_RHQ:
		return hfi_rhq_bytes(rhq_entries);
	case FZ_EAGER:
		return hfi_eager_bytes(eager_count, eager_size);
	default:
		return fz_page;
	}
}

/* A random object the file hands out: 0, or -1 when there is none. */
static int fz_pick_obj(int f, struct fz_obj_ref *o)
{
	struct fz_file *ff = F(f);
	unsigned int n = ff->npeer + ff->assigned, i;
	const struct fz_peer *p;
	const __u64 *offs;

	if (!n)
		return -1;
	i = (unsigned int)rnd(n);
	memset(o, 0, sizeof(*o));
	o->obj = (unsigned int)rnd(FZ_NOBJ);
	if (ff->assigned && i == 0) {
		offs = &ff->info.ctrl_offset;
		o->off = offs[o->obj];
		o->len = fz_obj_len(o->obj, ff->info.rhq_entries,
				    ff->info.eager_count, ff->info.eager_size);
		o->owner = f;
		o->owner_gen = ff->gen;
		o->dev = ff->dev;
	} else {
		p = &ff->peer[i - ff->assigned];
		offs = &p->mp.ctrl_offset;
		o->off = offs[o->obj];
		o->len = fz_obj_len(o->obj, p->mp.rhq_entries,
				    p->mp.eager_count, p->mp.eager_size);
		o->owner = p->target;
		o->owner_gen = p->target_gen;
		o->dev = (unsigned int)fz_unit_by_lid(p->mp.lid);
	}
	if (o->obj == FZ_STATUS) {
		o->owner = -1;
		o->ro = true;
	}
	return 0;
}

static bool fz_off_known(int f, __u64 off)
{
	const struct fz_file *ff = F(f);
	unsigned int i, j;

	for (j = 0; j < FZ_NOBJ; j++)
		if (ff->assigned && (&ff->info.ctrl_offset)[j] == off)
			return true;
	for (i = 0; i < ff->npeer; i++)
		for (j = 0; j < FZ_NOBJ; j++)
			if ((&ff->peer[i].mp.ctrl_offset)[j] == off)
				return true;
	return false;
}

static void fz_check_status(const void *page, unsigned int unit)
{
	const struct kfab_hfi_status *st = page;
	const struct fz_unit *u = &fz_units[unit];

	if (st->abi_version != KFAB_ABI_VERSION || st->unit != unit ||
	    st->lid != u->lid ||
	    st->state != (u->active ? KFAB_HFI_STATE_ACTIVE :
				      KFAB_HFI_STATE_DOWN) ||
	    st->drop_ppm != u->drop_ppm || st->link_rate_mbps != u->link_rate)
		fz_fail("status page of unit %u: state %u drop_ppm %u link_rate_mbps %u, model %d %u %u",
			unit, st->state, st->drop_ppm, st->link_rate_mbps,
			u->active, u->drop_ppm, u->link_rate);
}

static void fz_mapped(int f, uint8_t *m, const struct fz_obj_ref *o)
{
	(void)f;
	if (o->obj == FZ_STATUS)
		fz_check_status(m, o->dev);
	else
		m[rnd(o->len)] = (uint8_t)fz_next(&fz_rng);
}

static const char *const fz_counters[] = {
	"counters/ctxts_assigned", "counters/tid_pages_pinned",
	"counters/tid_regions", "counters/sdma_requests",
	"counters/sdma_bytes", "counters/notifies",
	"counters/rhq_full_drops", "counters/eager_full_drops",
	"counters/injected_drops", "nctxts", "lid",
};

static void fz_check_gauges(unsigned int u)
{
	fz_gauge(u, "nfreectxts", fz_units[u].free0 - fz_live_ctxts(u), false);
}

static const char *const fz_bad_values[] = {
	"abc", "1000001", "-1", "4294967296", " 5x", "Up", "0x10",
};

/* A valid knob write three times in four: see fuzz_engine.h. */
static bool fz_knob_set(unsigned int u)
{
	struct fz_unit *un = &fz_units[u];

	switch (rnd(4)) {
	case 0:
		fz_knob_state(u, &un->active);
		return true;
	case 1:
		fz_knob_u32(u, "drop_ppm", (unsigned int)rnd(1000001), true,
			    &un->drop_ppm);
		return true;
	case 2:
		fz_knob_rate(u, &un->link_rate);
		return true;
	}
	return false;
}

/* What the model says @knob (drop_ppm, link_rate_mbps) of unit @u reads. */
static void fz_knob_str(unsigned int u, const char *knob, char *buf,
			size_t len)
{
	const struct fz_unit *un = &fz_units[u];

	snprintf(buf, len, "%u\n",
		 !strcmp(knob, "drop_ppm") ? un->drop_ppm : un->link_rate);
}

/*
 * A forked child's call @k on file @f. It must not create what the model
 * has to know of (contexts, peers); TIDs it pins are its own business, and
 * the context's release frees them.
 */
static int fz_child_call(int f, unsigned int k)
{
	struct kfab_hfi_ctxt_info info;
	struct kfab_hfi_version v;
	uint32_t handle;
	int ret, bad = 0;

	switch (k) {
	case 0:
		bad = hfi_ioctl(F(f)->fd, KFAB_HFI_IOC_GET_VERSION, &v) != 0;
		break;
	case 1:
		if (!F(f)->assigned)
			break;
		ret = hfi_ioctl(F(f)->fd, KFAB_HFI_IOC_CTXT_INFO, &info);
		bad = ret || memcmp(&info, &F(f)->info, sizeof(info));
		break;
	case 2:
		if (!F(f)->assigned)
			break;
		ret = hfi_tid_update(F(f)->fd, fz_dst + rnd(FZ_DST_BYTES / 2),
				     1 + rnd(FZ_TID_MAX_BYTES), &handle, NULL);
		bad = ret && ret != -ENOMEM;
		if (!ret && pct(70))
			bad |= hfi_tid_free(F(f)->fd, handle) != 0;
		break;
	}
	return bad;
}

/* The operations: name, weight per thousand steps, step. */
static const struct fz_op fz_ops[OP_NR] = {
	[OP_OPEN] = { "open", 60, fz_op_open },
	[OP_CLOSE] = { "close", 30, fz_op_close },
	[OP_VERSION] = { "version", 30, op_version },
	[OP_ASSIGN] = { "assign", 70, op_assign },
	[OP_INFO] = { "ctxt_info", 30, op_info },
	[OP_MAP_PEER] = { "map_peer", 80, op_map_peer },
	[OP_UNMAP_PEER] = { "unmap_peer", 30, op_unmap_peer },
	[OP_TID_UPDATE] = { "tid_update", 80, op_tid_update },
	[OP_TID_FREE] = { "tid_free", 40, op_tid_free },
	[OP_SDMA] = { "sdma", 140, op_sdma },
	[OP_SET_EVENTFD] = { "set_eventfd", 40, op_set_eventfd },
	[OP_NOTIFY] = { "notify", 60, fz_op_notify },
	[OP_BAD_CMD] = { "bad_cmd", 40, fz_op_bad_cmd },
	[OP_MMAP] = { "mmap", 90, fz_op_mmap },
	[OP_MUNMAP] = { "munmap", 50, fz_op_munmap },
	[OP_MPROTECT] = { "mprotect", 15, fz_op_mprotect },
	[OP_SYSFS] = { "sysfs", 20, fz_op_sysfs },
	[OP_KNOB] = { "knob", 24, fz_op_knob },
	[OP_FORK] = { "fork", 1, fz_op_fork },
	[OP_LIST] = { "list_ctxts", 20, op_list },
};

/* ------------------------------------------------------------------ */
/* The race phase: shared descriptors, loose checks. */

/* Race call @k on @fd: see fuzz_engine.h. */
static int fz_race_call(struct fz_racer *r, int fd, unsigned int k)
{
	int nfd, ret = 0;
	struct kfab_hfi_ctxt_entry ents[4];
	struct kfab_hfi_ctxt_info info;
	struct kfab_hfi_list_ctxts lc;
	struct kfab_hfi_map_peer mp;
	struct kfab_iovec iov;

	switch (k) {
	case 2:
		ret = hfi_assign_fd(fd, fz_uuids[trnd(r, 2)],
				    KFAB_HFI_PKEY_DEFAULT, 0, NULL);
		break;
	case 3:
		ret = hfi_map_peer(fd, fz_units[trnd(r, fz_ndevs)].lid,
				   (uint32_t)trnd(r, fz_units[0].nctxts), &mp);
		break;
	case 4:
		ret = hfi_unmap_peer(fd, 1 + (uint32_t)trnd(r, 8));
		break;
	case 5:
		ret = hfi_tid_update(fd, r->pool + trnd(r, FZ_RACE_POOL / 2),
				     1 + trnd(r, FZ_RACE_POOL / 2), NULL,
				     NULL);
		break;
	case 6:
		ret = hfi_tid_free(fd, 1 + (uint32_t)trnd(r, 32));
		break;
	case 7:
		iov.addr = (uintptr_t)fz_src + trnd(r, FZ_SRC_BYTES / 2);
		iov.len = trnd(r, 8192);
		ret = hfi_sdma(fd, 1 + (uint32_t)trnd(r, 4),
			       1 + (uint32_t)trnd(r, 32), trnd(r, 4096), &iov,
			       1, trnd(r, 2) ? KFAB_HFI_SDMA_NOTIFY : 0, NULL);
		break;
	case 8:
		ret = hfi_notify(fd, 1 + (uint32_t)trnd(r, 4));
		break;
	case 9:
		nfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (nfd < 0)
			return 1;
		ret = hfi_set_eventfd(fd, nfd);
		close(nfd);
		break;
	case 10:
		ret = hfi_ioctl(fd, KFAB_HFI_IOC_CTXT_INFO, &info);
		if (!ret)
			ret = fz_race_touch(r, fd, info.rhq_offset,
					    hfi_rhq_bytes(info.rhq_entries));
		break;
	case 11:
		ret = hfi_ioctl(fd, KFAB_HFI_IOC_GET_VERSION, &info);
		break;
	case 12:
		memset(&lc, 0, sizeof(lc));
		lc.entries = (uintptr_t)ents;
		lc.count = (__u32)trnd(r, ARRAY_SIZE(ents) + 1);
		ret = hfi_ioctl(fd, KFAB_HFI_IOC_LIST_CTXTS, &lc);
		if (!ret && (lc.count > ARRAY_SIZE(ents) ||
			     lc.count > lc.total) && ++r->bad <= 5)
			printf("# race: list_ctxts count %u total %u\n",
			       lc.count, lc.total);
		break;
	}
	return ret;
}

/* The knobber left them as it left them; fz_knobs_restored() puts back. */
static void fz_race_over(void)
{
	unsigned int u;

	for (u = 0; u < fz_ndevs; u++)
		fz_units[u].active = true;	/* restored later */
}

/* ------------------------------------------------------------------ */

static void fz_setup(void)
{
	uint64_t v;
	unsigned int u, i;

	for (u = 0; u < fz_ndevs; u++) {
		struct fz_unit *un = &fz_units[u];

		un->lid = (unsigned int)hfi_sysfs_get(u, "lid");
		un->nctxts = (unsigned int)hfi_sysfs_get(u, "nctxts");
		un->free0 = hfi_sysfs_get(u, "nfreectxts");
		un->drop_ppm = (unsigned int)hfi_sysfs_get(u, "drop_ppm");
		un->link_rate = (unsigned int)hfi_sysfs_get(u,
							    "link_rate_mbps");
		un->active = fz_read_active(u);
	}
	if (hfi_param_u64("rhq_entries", &v))
		ksft_exit_fail_msg("module parameters unreadable\n");
	fz_geom[0] = (__u32)v;
	hfi_param_u64("eager_count", &v);
	fz_geom[1] = (__u32)v;
	hfi_param_u64("eager_size", &v);
	fz_geom[2] = (__u32)v;
	hfi_param_u64("pin_limit_mb", &v);
	fz_pin_limit_pages = v * (1 << 20) / fz_page;

	for (i = 0; i < FZ_NUUID; i++)
		for (v = 0; v < 16; v++)
			fz_uuids[i][v] = (__u8)(0x10 * (i + 1) + v);
	fz_dst = fz_map_guarded(FZ_DST_BYTES);
	fz_src = fz_map_anon(FZ_SRC_BYTES, PROT_READ | PROT_WRITE);
	fz_fill_random(fz_src, FZ_SRC_BYTES);
}

static const char *const fz_gauges[] = {
	"nfreectxts", "counters/tid_regions", "counters/tid_pages_pinned",
};

static const struct fz_device fz_hfi = {
	.prog = "hfi_fuzz",
	.cls = "hfi",
	.devname = "unit",
	.ndevs = hfi_num_units,
	.open_dev0_pct = 70,
	.ioctls = fz_ioctls,
	.nioctls = ARRAY_SIZE(fz_ioctls),
	.notify_cmd = KFAB_HFI_IOC_NOTIFY,
	.ops = fz_ops,
	.nops = OP_NR,
	.obj_status = FZ_STATUS,
	.child_calls = 3,
	.counters = fz_counters,
	.ncounters = ARRAY_SIZE(fz_counters),
	.knobs = hfi_knob_names,
	.nknobs = ARRAY_SIZE(hfi_knob_names),
	.bad_values = fz_bad_values,
	.nbad_values = ARRAY_SIZE(fz_bad_values),
	.gauges = fz_gauges,
	.ngauges = ARRAY_SIZE(fz_gauges),
	.baseline = "units back to baseline: free contexts, TID regions and pages",
	.race_done = fz_race_over,
};

int main(int argc, char **argv)
{
	fz_main(&fz_hfi, argc, argv);
}
