/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The engine of the model-checked fuzzers (hfi_fuzz, efa_fuzz): the model's
 * files and mappings, the steps every device has (open, close, unknown
 * commands, mmap, munmap, mprotect, NOTIFY, handle requests, sysfs reads,
 * knob writes, forks) and the checks they share (MAP_PEER's reach, the
 * state, link rate and numeric knobs), the sequential phase (weighted
 * random steps from the device's operation table, forked children killed
 * at random points and notifying peers), the race phase (two threads on
 * eight shared descriptors, a third flipping knobs), the devices' knobs
 * and gauges saved at the start and checked at the end, and the seven TAP
 * points of main().
 *
 * A fuzzer includes fuzz_util.h, defines FZ_NFILE and its struct fz_file,
 * which has at least
 *
 *	uint64_t gen;		in use while not 0
 *	int fd;			-1 once closed
 *	unsigned int nmaps;	mappings made through it hold it too
 *	unsigned int dev;	the device (unit) it was opened on
 *	unsigned int npeer;	the peer handles it holds
 *	uint32_t stale_peer;	one it unmapped: must stay unknown
 *	uint64_t stale_off;	the mmap offset of an unmapped peer
 *
 * then includes this file. It keeps the rest of its model and its own
 * operations, defines the functions declared under "What each fuzzer
 * defines" (its part of the engine's steps, its race calls, its setup),
 * and hands fz_main() a struct fz_device: its tables (operations, among
 * them the engine's fz_op_*() steps, ioctls, counters, knobs, gauges).
 * The device layer's helpers (the kfab_* ones of its class: open, sysfs)
 * stay in hfi_util.h / efa_util.h.
 */
#ifndef KFAB_FUZZ_ENGINE_H
#define KFAB_FUZZ_ENGINE_H

#include <pthread.h>

#define FZ_DEFAULT_COUNT	20000UL
#define FZ_SCRATCH_BYTES	(16UL << 10)
#define FZ_RACE_FDS		8
#define FZ_RACE_POOL		(256UL << 10)
#define FZ_NMAP			64
#define FZ_MAX_DEVS		8
#define FZ_MAX_GAUGES		4

/* One thread of the race phase. */
struct fz_racer {
	pthread_t thread;
	uint64_t rng;
	unsigned long steps;
	unsigned long calls;
	unsigned long bad;
	unsigned long hist[FZ_NERRNO + 1];
	uint8_t *pool;		/* FZ_RACE_POOL bytes of its own */
};

/* Something mappable through a file: its own queue or page, or a peer's. */
struct fz_obj_ref {
	__u64 off;
	size_t len;
	unsigned int obj;	/* the device's enum fz_obj */
	bool ro;		/* mapped read-only; PROT_WRITE is EPERM */
	bool dead;		/* a peer's gone queue: EINVAL allowed */
	int owner;		/* file of the context or QP shown, or -1 */
	uint64_t owner_gen;
	__u32 qpn;		/* EFA: the QP shown */
	unsigned int dev;	/* for the status page: whose */
};

struct fz_map {
	uint8_t *addr;
	size_t len;
	int file;		/* mapped through this file */
	bool rw;
	struct fz_obj_ref o;
};

/*
 * The request of UNMAP_PEER, NOTIFY, TID_FREE, DESTROY_QP and DEREG_MR:
 * each device's struct has this layout.
 */
struct fz_handle_req {
	__u32 handle;
	__u32 flags;		/* none defined */
	__u64 reserved;
};

/* An operation of the sequential phase. */
struct fz_op {
	const char *name;
	unsigned int weight;	/* per thousand steps */
	void (*step)(void);
};

struct fz_device {
	const char *prog;		/* "hfi_fuzz": usage and replay line */
	const char *cls;		/* "hfi": of the kfab_* helpers */
	const char *devname;		/* "unit": in messages */
	unsigned int (*ndevs)(void);	/* devices the module made */
	unsigned int open_dev0_pct;	/* how often open takes device 0 */
	const unsigned long *ioctls;	/* every command the device knows */
	unsigned int nioctls;
	unsigned long notify_cmd;
	const struct fz_op *ops;	/* with every fz_op_*() of the engine */
	unsigned int nops;
	unsigned int obj_status;	/* the enum fz_obj of the status page */
	unsigned int child_calls;	/* fz_child_call()'s */
	const char *const *counters;	/* sysfs attributes to read */
	unsigned int ncounters;
	/* saved and restored; the refused writes of fz_op_knob() */
	const char *const *knobs;
	unsigned int nknobs;
	const char *const *bad_values;
	unsigned int nbad_values;
	/* gauges back where they started once everything is closed */
	const char *const *gauges;
	unsigned int ngauges;
	const char *baseline;		/* their point: "units back ..." */
	/* what a race call may answer beyond fz_race_errnos(): 0 ends */
	int race_errnos[4];
	/* optional */
	/* A race knob write of the device's own on device @dev. */
	void (*race_knob)(struct fz_racer *r, unsigned int dev);
	void (*sequential_done)(void);	/* more lines after the histogram */
	void (*race_done)(void);	/* after the knobber stopped */
	/* Mapping @addr through file @f is gone. */
	void (*unmapped)(int f, const uint8_t *addr);
};

/* ------------------------------------------------------------------ */
/* What each fuzzer defines */

/* Sets up the model of fz_ndevs devices. */
static void fz_setup(void);
/* File @f was just opened; the model's part of it is all zero. */
static void fz_opened(int f);
/* The last reference to file @ff goes: close what the model holds. */
static void fz_file_drop(struct fz_file *ff);
/* An open file to send a request through, most often one with a context. */
static int fz_pick_ctx(void);
/*
 * Issue @cmd on file @f, its argument placed by fz_place_arg(). @expect is
 * the answer with the argument in writable memory; with it unreadable, or
 * readable but not writable, the answer changes as documented, and so does
 * *@expect. Returns 0 / -errno and where the argument went: only FZ_ARG_OK
 * leaves output in @arg.
 */
static int fz_ioctl(int f, unsigned long cmd, void *arg, fz_set *expect,
		    enum fz_place *place);
/*
 * Peer @i of file @f for NOTIFY: sets *@handle and *@efd (the eventfd the
 * call signals, -1 for none); returns the errnos it earns.
 */
static fz_set fz_peer_notify(int f, unsigned int i, __u32 *handle, int *efd);
/* A random object file @f hands out: 0, or -1 when there is none. */
static int fz_pick_obj(int f, struct fz_obj_ref *o);
static bool fz_off_known(int f, __u64 off);	/* handed out through @f */
/* Mapping @m of object @o through file @f was just made. */
static void fz_mapped(int f, uint8_t *m, const struct fz_obj_ref *o);
static void fz_check_status(const void *page, unsigned int dev);
/* A forked child's call @k (below child_calls) on file @f: nonzero if bad. */
static int fz_child_call(int f, unsigned int k);
/* Checks the gauges the model knows of device @dev with fz_gauge(). */
static void fz_check_gauges(unsigned int dev);
static bool fz_up(unsigned int dev);	/* active, in the model */
/*
 * One valid knob write on device @dev (fz_knob_state() and fz_knob_rate()
 * do those two), true if it made one; else fz_op_knob() writes a refused
 * value and checks with fz_knob_str(), what the model says a knob other
 * than state reads, that nothing changed.
 */
static bool fz_knob_set(unsigned int dev);
static void fz_knob_str(unsigned int dev, const char *knob, char *buf,
			size_t len);
/*
 * Race call @k (2..12) on @fd: the answer (0 or -errno) to count, or 1
 * when nothing was called.
 */
static int fz_race_call(struct fz_racer *r, int fd, unsigned int k);

static const struct fz_device *fz_dev;
/* Where the engine's steps stand in the device's operation table. */
static struct {
	unsigned int open, close, bad_cmd, mmap, munmap, mprotect, notify,
		     sysfs, knob, fork;
} fz_at;
static uint8_t fz_scratch[FZ_SCRATCH_BYTES];	/* argument room */
static unsigned int fz_ndevs;	/* devices (units) the model knows */
static bool fz_root;		/* knob writes allowed */
static unsigned long fz_children, fz_children_bad;

/* Per device: its knobs and gauges as they were at the start. */
static struct kfab_knobs fz_knobs0[FZ_MAX_DEVS];
static uint64_t fz_gauges0[FZ_MAX_DEVS][FZ_MAX_GAUGES];

static struct fz_file fz_files[FZ_NFILE];
static uint64_t fz_gen;
static struct fz_map fz_maps[FZ_NMAP];
static unsigned int fz_nmaps;

static const char *fz_op_name(unsigned int op)
{
	return fz_dev->ops[op].name;
}

/* ------------------------------------------------------------------ */
/* The model's files and mappings */

static struct fz_file *F(int f)
{
	return &fz_files[f];
}

/* A random file in use for which @ok holds, or -1. */
static int fz_pick(bool (*ok)(const struct fz_file *))
{
	int f, pick = -1;
	unsigned int n = 0;

	for (f = 0; f < FZ_NFILE; f++)
		if (F(f)->gen && ok(F(f)) && rnd(++n) == 0)
			pick = f;
	return pick;
}

static bool fz_is_open(const struct fz_file *ff)
{
	return ff->fd >= 0;
}

static bool fz_has_peer(const struct fz_file *ff)
{
	return ff->fd >= 0 && ff->npeer;
}

/* The last reference to the file went: what it held with it. */
static void fz_file_put(int f)
{
	struct fz_file *ff = F(f);

	if (ff->fd >= 0 || ff->nmaps)
		return;
	fz_file_drop(ff);
	memset(ff, 0, sizeof(*ff));
	ff->fd = -1;
}

static void fz_map_add(uint8_t *m, size_t len, int f,
		       const struct fz_obj_ref *o, bool rw)
{
	fz_maps[fz_nmaps++] = (struct fz_map){
		.addr = m, .len = len, .file = f, .rw = rw, .o = *o,
	};
	F(f)->nmaps++;
	fz_mapped(f, m, o);
}

/* Unmap mapping @i: its first page only if @partial and it is longer. */
static void fz_munmap_at(unsigned int i, bool partial)
{
	unsigned int op = fz_at.munmap;
	struct fz_map *m = &fz_maps[i];
	const uint8_t *addr = m->addr;
	int f = m->file;

	/* read-only objects (status, mr_state) are tracked by their start */
	if (partial && m->len > fz_page && m->rw) {
		fz_check(op, munmap(m->addr, fz_page) ? -errno : 0, E(0),
			 "first page");
		m->addr += fz_page;
		m->len -= fz_page;
		return;
	}
	fz_check(op, munmap(m->addr, m->len) ? -errno : 0, E(0), "");
	*m = fz_maps[--fz_nmaps];
	F(f)->nmaps--;
	if (fz_dev->unmapped)
		fz_dev->unmapped(f, addr);
	fz_file_put(f);
}

static void fz_teardown(void)
{
	int f;

	while (fz_nmaps)
		fz_munmap_at(fz_nmaps - 1, false);
	for (f = 0; f < FZ_NFILE; f++) {
		if (F(f)->gen && F(f)->fd >= 0) {
			close(F(f)->fd);
			F(f)->fd = -1;
			fz_file_put(f);
		}
	}
}

/* ------------------------------------------------------------------ */
/* The steps every device has */

static void fz_op_open(void)
{
	unsigned int op = fz_at.open, dev;
	char path[64];
	int f, fd;

	for (f = 0; f < FZ_NFILE && F(f)->gen; f++)
		;
	if (f == FZ_NFILE)
		return;
	if (pct(2)) {
		snprintf(path, sizeof(path), "/dev/kfab_%s%u", fz_dev->cls,
			 fz_ndevs);
		fd = kfab_open(fz_dev->cls, fz_ndevs);
		fz_check(op, fd < 0 ? fd : 0, E(ENOENT), path);
		if (fd >= 0)
			close(fd);
		return;
	}
	dev = pct(fz_dev->open_dev0_pct) ? 0 : (unsigned int)rnd(fz_ndevs);
	fd = kfab_open(fz_dev->cls, dev);
	if (fz_check(op, fd < 0 ? fd : 0, E(0), fz_dev->devname))
		return;
	memset(F(f), 0, sizeof(*F(f)));
	F(f)->gen = ++fz_gen;
	F(f)->fd = fd;
	F(f)->dev = dev;
	fz_opened(f);
}

static void fz_op_close(void)
{
	int f = fz_pick(fz_is_open);

	if (f < 0)
		return;
	fz_check(fz_at.close, close(F(f)->fd) ? -errno : 0, E(0), "fd");
	F(f)->fd = -1;
	fz_file_put(f);
}

/*
 * A request naming handle @live of file @f, or when @live is -1 a dead
 * one: @stale, the last one freed, or a bad one (fz_dead_handle()). Flags
 * and reserved word are broken now and then. Returns the answer.
 */
static int fz_handle_req(unsigned int op, int f, unsigned long cmd,
			 int live, __u32 handle, __u32 stale)
{
	struct fz_handle_req r;
	enum fz_place place;
	fz_set expect = E(0);
	int ret;

	memset(&r, 0, sizeof(r));
	r.handle = live >= 0 ? handle : fz_dead_handle(stale, &expect);
	if (fz_break_flags(&r.flags, &r.reserved))
		expect = E(EINVAL);
	ret = fz_ioctl(f, cmd, &r, &expect, &place);
	return fz_check(op, ret, expect, "");
}

/* Is the link between the devices of files @f and @t down? */
static bool fz_link_down(int f, int t)
{
	return !fz_up(F(f)->dev) || !fz_up(F(t)->dev);
}

/*
 * What MAP_PEER through file @f earns, but for the key, when the peer's
 * device is @pd (-1: no device has that address) and its owner file
 * @target (-1: none): ENETDOWN while either device is down, ENOENT for
 * no such device or peer.
 */
static fz_set fz_map_peer_err(int f, int pd, int target)
{
	fz_set err = fz_up(F(f)->dev) ? 0 : E(ENETDOWN);

	if (pd < 0)
		return err | E(ENOENT);
	if (!fz_up((unsigned int)pd))
		err |= E(ENETDOWN);
	return target < 0 ? err | E(ENOENT) : err;
}

static void fz_op_notify(void)
{
	int f = pct(90) ? fz_pick(fz_has_peer) : -1, efd = -1, ret;
	struct fz_handle_req r;
	enum fz_place place;
	fz_set err = 0, expect;

	if (f < 0)
		f = fz_pick_ctx();
	if (f < 0)
		return;
	memset(&r, 0, sizeof(r));
	if (F(f)->npeer && pct(90)) {
		err |= fz_peer_notify(f, (unsigned int)rnd(F(f)->npeer),
				      &r.handle, &efd);
	} else {
		r.handle = F(f)->stale_peer && pct(50) ? F(f)->stale_peer :
							 fz_bad_handle();
		err |= E(EINVAL);
	}
	if (fz_break_flags(&r.flags, &r.reserved))
		err |= E(EINVAL);
	expect = err ? err : E(0);
	if (efd >= 0)
		fz_efd_drain(efd);
	ret = fz_ioctl(f, fz_dev->notify_cmd, &r, &expect, &place);
	if (!fz_check(fz_at.notify, ret, expect, "") && efd >= 0 &&
	    !fz_efd_drain(efd))
		fz_fail("notify: the peer's eventfd was not signalled");
}

/* A command the device does not know: always ENOTTY. */
static void fz_op_bad_cmd(void)
{
	const unsigned long *known = fz_dev->ioctls;
	unsigned int n = fz_dev->nioctls, i;
	int f = fz_pick(fz_is_open);
	unsigned long cmd;
	char what[48];

	if (f < 0)
		return;
	do {
		if (pct(50)) {
			/* a defined number with another size or direction */
			cmd = known[rnd(n)];
			cmd = _IOC(rnd(4), KFAB_IOC_MAGIC, _IOC_NR(cmd),
				   _IOC_SIZE(cmd) + (pct(50) ? 8 : -8));
		} else {
			cmd = _IOC(rnd(4), KFAB_IOC_MAGIC, rnd(256),
				   rnd(FZ_SCRATCH_BYTES));
		}
		for (i = 0; i < n && known[i] != cmd; i++)
			;
	} while (i < n);
	snprintf(what, sizeof(what), "%#lx", cmd);
	memset(fz_scratch, 0, sizeof(fz_scratch));
	fz_check(fz_at.bad_cmd,
		 ioctl(F(f)->fd, cmd, fz_scratch) ? -errno : 0, E(ENOTTY),
		 what);
}

static void fz_op_mmap(void)
{
	int f = fz_pick(fz_is_open), prot, flags = MAP_SHARED, ret;
	fz_set expect = E(0) | E(ENOMEM);
	const char *what = "";
	struct fz_obj_ref o;
	size_t len;
	uint8_t *m;
	__u64 off;

	if (f < 0 || fz_pick_obj(f, &o))
		return;
	if (fz_nmaps == FZ_NMAP)
		fz_munmap_at((unsigned int)rnd(fz_nmaps), false);
	prot = o.ro ? PROT_READ : PROT_READ | PROT_WRITE;
	len = o.len;
	off = o.off;
	if (o.dead)
		expect |= E(EINVAL);	/* the spec leaves it open */
	switch (rnd(25)) {
	case 0:
		len = len > fz_page && pct(50) ? len - fz_page : len + fz_page;
		expect = E(EINVAL);
		what = "wrong length";
		break;
	case 1:
		flags = MAP_PRIVATE;
		expect = E(EINVAL);
		what = "MAP_PRIVATE";
		break;
	case 2:
		if (!o.ro)
			break;
		prot = PROT_READ | PROT_WRITE;
		expect = E(EPERM);
		what = "writable read-only object";
		break;
	case 3:
		off = F(f)->stale_off && pct(50) ? F(f)->stale_off :
			(rnd(1U << 19) * fz_page);
		if (fz_off_known(f, off))
			return;
		expect = E(EINVAL);
		what = "offset not handed out";
		break;
	}
	m = mmap(NULL, len, prot, flags, F(f)->fd, (off_t)off);
	ret = m == MAP_FAILED ? -errno : 0;
	if (fz_check(fz_at.mmap, ret, expect, what) || !(expect & E(0))) {
		if (!ret)
			munmap(m, len);
		return;
	}
	fz_map_add(m, len, f, &o, prot & PROT_WRITE);
}

static void fz_op_munmap(void)
{
	if (fz_nmaps)
		fz_munmap_at((unsigned int)rnd(fz_nmaps), pct(20));
}

static void fz_op_mprotect(void)
{
	unsigned int op = fz_at.mprotect;
	struct fz_map *m;

	if (!fz_nmaps)
		return;
	m = &fz_maps[rnd(fz_nmaps)];
	if (!m->rw) {
		fz_check(op, mprotect(m->addr, m->len, PROT_READ | PROT_WRITE) ?
			 -errno : 0, E(EACCES), "read-only made writable");
		if (m->o.obj == fz_dev->obj_status)
			fz_check_status(m->addr, m->o.dev);
		return;
	}
	fz_check(op, mprotect(m->addr, m->len, PROT_READ) ? -errno : 0, E(0),
		 "read-only");
	fz_check(op, mprotect(m->addr, m->len, PROT_READ | PROT_WRITE) ?
		 -errno : 0, E(0), "writable again");
}

/* Gauge @attr of device @dev must read @want, or at least @want. */
static void fz_gauge(unsigned int dev, const char *attr, uint64_t want,
		     bool at_least)
{
	uint64_t v = 0;
	int ret = kfab_sysfs_u64(fz_dev->cls, dev, attr, &v);

	if (!fz_check(fz_at.sysfs, ret, E(0), attr) &&
	    (at_least ? v < want : v != want))
		fz_fail("%s %u: %s %llu, model %llu", fz_dev->devname, dev,
			attr, (unsigned long long)v, (unsigned long long)want);
}

static void fz_op_sysfs(void)
{
	unsigned int op = fz_at.sysfs, d = (unsigned int)rnd(fz_ndevs), i;
	uint64_t v = 0;
	char buf[64];
	int ret;

	for (i = 0; i < fz_dev->ncounters; i++)
		fz_check(op, kfab_sysfs_u64(fz_dev->cls, d, fz_dev->counters[i],
					    &v), E(0), fz_dev->counters[i]);
	fz_check_gauges(d);
	ret = kfab_sysfs_read(fz_dev->cls, d, "state", buf, sizeof(buf));
	if (!fz_check(op, ret < 0 ? ret : 0, E(0), "state") &&
	    strcmp(buf, fz_up(d) ? "Active\n" : "Down\n"))
		fz_fail("%s %u: state %s", fz_dev->devname, d, buf);
}

/* A valid write of the state knob of device @dev; the model's *@active. */
static void fz_knob_state(unsigned int dev, bool *active)
{
	*active = *active ? pct(70) : pct(60);
	fz_check(fz_at.knob, kfab_sysfs_write(fz_dev->cls, dev, "state",
					      *active ? "Active\n" : "Down"),
		 E(0), "state");
}

/*
 * A valid write of @v (with a newline if @nl) to numeric knob @knob of
 * device @dev; the model's *@model follows.
 */
static void fz_knob_u32(unsigned int dev, const char *knob, unsigned int v,
			bool nl, unsigned int *model)
{
	char val[16];

	snprintf(val, sizeof(val), nl ? "%u\n" : "%u", v);
	if (!fz_check(fz_at.knob, kfab_sysfs_write(fz_dev->cls, dev, knob, val),
		      E(0), knob))
		*model = v;
}

/* A valid write of link_rate_mbps of device @dev; the model's *@rate. */
static void fz_knob_rate(unsigned int dev, unsigned int *rate)
{
	static const unsigned int rates[] = { 0, 0, 40000, 100000, 1000000 };

	fz_knob_u32(dev, "link_rate_mbps", rates[rnd(ARRAY_SIZE(rates))],
		    false, rate);
}

/* A knob write; a refused value must leave the knob as it was. */
static void fz_op_knob(void)
{
	unsigned int d = (unsigned int)rnd(fz_ndevs);
	const char *knob, *bad;
	char buf[32], want[32];

	if (!fz_root || fz_knob_set(d))
		return;
	knob = fz_dev->knobs[rnd(fz_dev->nknobs)];
	bad = fz_dev->bad_values[rnd(fz_dev->nbad_values)];
	fz_check(fz_at.knob, kfab_sysfs_write(fz_dev->cls, d, knob, bad),
		 E(EINVAL), knob);
	if (!strcmp(knob, "state"))
		snprintf(want, sizeof(want), "%s\n",
			 fz_up(d) ? "Active" : "Down");
	else
		fz_knob_str(d, knob, want, sizeof(want));
	if (kfab_sysfs_read(fz_dev->cls, d, knob, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, want))
		fz_fail("%s %u: %s is %s after a refused write, was %s",
			fz_dev->devname, d, knob, buf, want);
}

/* ------------------------------------------------------------------ */
/* The sequential phase */

/* A child's NOTIFY of a peer of file @f: nonzero if the answer is bad. */
static int fz_child_notify(int f)
{
	struct fz_handle_req r = { 0 };
	int efd, ret;

	if (!F(f)->npeer)
		return 0;
	fz_peer_notify(f, (unsigned int)rnd(F(f)->npeer), &r.handle, &efd);
	ret = kfab_ioctl(F(f)->fd, fz_dev->notify_cmd, &r);
	return ret && ret != -ECONNRESET && ret != -ENETDOWN;
}

/*
 * A child shares every file and mapping of the parent. It must not create
 * or destroy what the model knows of: it makes the device's calls,
 * notifies peers, touches mappings and closes descriptors.
 */
static int fz_child(void)
{
	unsigned int n = 1 + (unsigned int)rnd(40), calls = fz_dev->child_calls;
	unsigned int i, k;
	int f, bad = 0;

	for (i = 0; i < n; i++) {
		f = fz_pick(fz_is_open);
		if (f < 0)
			break;
		k = (unsigned int)rnd(calls + 3);
		if (k < calls) {
			bad |= fz_child_call(f, k);
		} else if (k == calls) {
			bad |= fz_child_notify(f);
		} else if (k == calls + 1) {
			if (fz_nmaps)
				(void)*(volatile uint8_t *)
					fz_maps[rnd(fz_nmaps)].addr;
		} else {
			close(F(f)->fd);
			F(f)->fd = -1;
		}
		if (bad) {
			printf("# step %lu: child: call %u failed\n", fz_step, i);
			break;
		}
	}
	return bad;
}

static void fz_op_fork(void)
{
	uint64_t child_rng = fz_next(&fz_rng);
	bool kill_it = pct(50);
	unsigned int delay = (unsigned int)rnd(3000);
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		int bad;

		fz_rng = child_rng;
		bad = fz_child();
		fflush(stdout);
		_exit(bad);
	}
	fz_children++;
	if (kill_it) {
		usleep(delay);
		kill(pid, SIGKILL);
	}
	if (waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("waitpid: %s\n", strerror(errno));
	fz_calls++;
	fz_hist[fz_at.fork][0]++;
	if ((WIFEXITED(status) && WEXITSTATUS(status)) ||
	    (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)) {
		fz_children_bad++;
		fz_fail("fork: child status %#x", status);
	}
}

static void fz_sequential(unsigned long count)
{
	unsigned int total = 0, r, op;

	for (op = 0; op < fz_dev->nops; op++)
		total += fz_dev->ops[op].weight;
	for (fz_step = 0; fz_step < count; fz_step++) {
		r = (unsigned int)rnd(total);
		for (op = 0; r >= fz_dev->ops[op].weight; op++)
			r -= fz_dev->ops[op].weight;
		fz_dev->ops[op].step();
	}
	fz_teardown();
}

/* ------------------------------------------------------------------ */
/* The race phase: shared descriptors, loose checks. */

static _Atomic int fz_rfd[FZ_RACE_FDS];
static atomic_bool fz_race_done;

static uint64_t trnd(struct fz_racer *r, uint64_t n)
{
	return n ? fz_next(&r->rng) % n : 0;
}

/*
 * Whatever a call may answer while another thread closes its descriptor:
 * ENOTTY and ENODEV (mmap) when the number was reused meanwhile for a file
 * that is not the device's, such as an eventfd of a race call.
 */
static fz_set fz_race_errnos(void)
{
	fz_set set = E(0) | E(EINVAL) | E(EFAULT) | E(ENOENT) | E(EACCES) |
		     E(ENOSPC) | E(ENOMEM) | E(EBUSY) | E(ENETDOWN) |
		     E(ECONNRESET) | E(EBADF) | E(ENOTTY) | E(ENODEV);

	for (unsigned int i = 0; i < ARRAY_SIZE(fz_dev->race_errnos) &&
	     fz_dev->race_errnos[i]; i++)
		set |= E(fz_dev->race_errnos[i]);
	return set;
}

/* Maps @len bytes at @off of @fd, writes one of them and unmaps: 0, -errno. */
static int fz_race_touch(struct fz_racer *r, int fd, __u64 off, size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       (off_t)off);

	if (m == MAP_FAILED)
		return -errno;
	((volatile uint8_t *)m)[trnd(r, len)] = 1;
	munmap(m, len);
	return 0;
}

/*
 * An empty slot gets a new descriptor. On a full one call 0 does nothing,
 * call 1 mostly closes it (else it is call 2), the others are the
 * device's.
 */
static void fz_race_step(struct fz_racer *r)
{
	_Atomic int *slot = &fz_rfd[trnd(r, FZ_RACE_FDS)];
	int fd = atomic_load(slot), nfd, want = -1, ret;
	unsigned int k = fd < 0 ? 0 : (unsigned int)trnd(r, 13);

	if (k == 0) {
		if (fd >= 0)
			return;
		nfd = kfab_open(fz_dev->cls, (unsigned int)trnd(r, fz_ndevs));
		if (nfd >= 0) {
			if (!atomic_compare_exchange_strong(slot, &want, nfd))
				close(nfd);
			return;
		}
		ret = nfd;
	} else {
		if (k == 1 && trnd(r, 3)) {
			fd = atomic_exchange(slot, -1);
			if (fd >= 0)
				close(fd);
			return;
		}
		ret = fz_race_call(r, fd, k == 1 ? 2 : k);
		if (ret > 0)
			return;
	}
	r->calls++;
	r->hist[fz_eidx(-ret)]++;
	if (!(fz_race_errnos() & E(-ret)) && ++r->bad <= 5)
		printf("# race: %s\n", strerror(-ret));
}

static void *fz_racer_main(void *arg)
{
	struct fz_racer *r = arg;
	unsigned long i;

	for (i = 0; i < r->steps; i++)
		fz_race_step(r);
	return NULL;
}

/*
 * Flip states, rates and the like (the device's race_knob) under the
 * racers' feet; failed writes count in r->bad.
 */
static void *fz_knobber_main(void *arg)
{
	static const char *const rates[] = { "0", "1000000", "100000" };
	struct fz_racer *r = arg;
	unsigned int d;

	while (!atomic_load(&fz_race_done)) {
		r->calls++;
		d = (unsigned int)trnd(r, fz_ndevs);
		switch (trnd(r, fz_dev->race_knob ? 3 : 2)) {
		case 0:
			r->bad += kfab_sysfs_write(fz_dev->cls, d, "state",
						   trnd(r, 3) ? "Active" :
								"Down") != 0;
			break;
		case 1:
			r->bad += kfab_sysfs_write(fz_dev->cls, d,
						   "link_rate_mbps",
						   rates[trnd(r, 3)]) != 0;
			break;
		default:
			fz_dev->race_knob(r, d);
		}
		usleep(200);
	}
	return NULL;
}

static void fz_race(unsigned long steps, uint64_t seed,
		    unsigned long *calls, unsigned long *bad)
{
	struct fz_racer racers[3];
	unsigned int i, e;
	char line[512];
	size_t n = 0;
	int fd;

	memset(racers, 0, sizeof(racers));
	for (i = 0; i < FZ_RACE_FDS; i++)
		atomic_store(&fz_rfd[i], -1);
	atomic_store(&fz_race_done, false);
	for (i = 0; i < 3; i++) {
		racers[i].rng = seed + i + 1;
		racers[i].steps = steps;
		racers[i].pool = fz_map_anon(FZ_RACE_POOL,
					     PROT_READ | PROT_WRITE);
	}
	for (i = 0; i < 3; i++) {
		if (i == 2 && !fz_root)
			break;
		if (pthread_create(&racers[i].thread, NULL,
				   i < 2 ? fz_racer_main : fz_knobber_main,
				   &racers[i]))
			ksft_exit_fail_msg("pthread_create failed\n");
	}
	pthread_join(racers[0].thread, NULL);
	pthread_join(racers[1].thread, NULL);
	atomic_store(&fz_race_done, true);
	if (fz_root) {
		pthread_join(racers[2].thread, NULL);
		if (fz_dev->race_done)
			fz_dev->race_done();
	}
	for (i = 0; i < FZ_RACE_FDS; i++) {
		fd = atomic_exchange(&fz_rfd[i], -1);
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; i < 3; i++) {
		*calls += racers[i].calls;
		*bad += racers[i].bad;
		munmap(racers[i].pool, FZ_RACE_POOL);
	}
	for (e = 0; e <= FZ_NERRNO && n < sizeof(line); e++)
		if (racers[0].hist[e] + racers[1].hist[e])
			n += snprintf(line + n, sizeof(line) - n, " %s %lu",
				      fz_errno_names[e],
				      racers[0].hist[e] + racers[1].hist[e]);
	ksft_print_msg("race:%s\n", line);
}

/* ------------------------------------------------------------------ */
/* Where the devices started */

/* Saves each device's knobs and gauges. */
static void fz_baselines(void)
{
	unsigned int d, i;

	if (fz_dev->ngauges > FZ_MAX_GAUGES)
		ksft_exit_fail_msg("%s: too many gauges\n", fz_dev->prog);
	for (d = 0; d < fz_ndevs; d++) {
		kfab_knobs_save(fz_dev->cls, fz_dev->knobs, fz_dev->nknobs,
				&fz_knobs0[d], d);
		for (i = 0; i < fz_dev->ngauges; i++) {
			fz_gauges0[d][i] = kfab_sysfs_get(fz_dev->cls, d,
							  fz_dev->gauges[i]);
			if (fz_gauges0[d][i] == UINT64_MAX)
				ksft_exit_fail_msg("%s %u: %s unreadable\n",
						   fz_dev->devname, d,
						   fz_dev->gauges[i]);
		}
	}
}

/* The state knob of device @dev at the start: Active or not. */
static bool fz_read_active(unsigned int dev)
{
	char buf[32];

	if (kfab_sysfs_read(fz_dev->cls, dev, "state", buf, sizeof(buf)) < 0)
		ksft_exit_fail_msg("%s %u: state unreadable\n", fz_dev->devname,
				   dev);
	return !strcmp(buf, "Active\n");
}

static bool fz_back_to_baseline(void)
{
	const char *const *gauges = fz_dev->gauges;
	unsigned int d, i;
	bool ok = true;

	for (d = 0; d < fz_ndevs; d++) {
		for (i = 0; i < fz_dev->ngauges; i++) {
			if (!kfab_sysfs_wait(fz_dev->cls, d, gauges[i],
					     fz_gauges0[d][i], 5000))
				continue;
			ksft_print_msg("%s %u: %s %llu, was %llu\n",
				       fz_dev->devname, d, gauges[i],
				       (unsigned long long)kfab_sysfs_get(fz_dev->cls, d, gauges[i]),
				       (unsigned long long)fz_gauges0[d][i]);
			ok = false;
		}
	}
	return ok;
}

/* Puts the knobs back as they were, then checks they are. */
static bool fz_knobs_restored(void)
{
	struct kfab_knobs now;
	unsigned int d;
	bool ok = true;

	for (d = 0; d < fz_ndevs; d++) {
		kfab_knobs_restore(fz_dev->cls, fz_dev->knobs, fz_dev->nknobs,
				   &fz_knobs0[d], d);
		kfab_knobs_save(fz_dev->cls, fz_dev->knobs, fz_dev->nknobs,
				&now, d);
		if (!kfab_knobs_equal(fz_dev->nknobs, &now, &fz_knobs0[d]))
			ok = false;
	}
	return ok;
}

/* ------------------------------------------------------------------ */

/* Where engine step @step stands in the device's table. */
static unsigned int fz_op_of(void (*step)(void))
{
	unsigned int op;

	for (op = 0; op < fz_dev->nops && fz_dev->ops[op].step != step; op++)
		;
	if (op == fz_dev->nops)
		ksft_exit_fail_msg("%s: an engine step is not in the table\n",
				   fz_dev->prog);
	return op;
}

static void fz_main(const struct fz_device *dev, int argc, char **argv)
{
	unsigned long count = FZ_DEFAULT_COUNT, race_calls = 0, race_bad = 0;
	uint64_t seed;
	unsigned int i;
	long vmlck0;
	int nfds0;
	time_t t0;

	fz_dev = dev;
	fz_at.open = fz_op_of(fz_op_open);
	fz_at.close = fz_op_of(fz_op_close);
	fz_at.bad_cmd = fz_op_of(fz_op_bad_cmd);
	fz_at.mmap = fz_op_of(fz_op_mmap);
	fz_at.munmap = fz_op_of(fz_op_munmap);
	fz_at.mprotect = fz_op_of(fz_op_mprotect);
	fz_at.notify = fz_op_of(fz_op_notify);
	fz_at.sysfs = fz_op_of(fz_op_sysfs);
	fz_at.knob = fz_op_of(fz_op_knob);
	fz_at.fork = fz_op_of(fz_op_fork);
	fz_parse_args(argc, argv, dev->prog, &count, &seed);
	ksft_print_header();
	kfab_require_device(dev->cls);
	ksft_set_plan(7);
	ksft_print_msg("count %lu seed %llu: replay with %s %lu %llu\n",
		       count, (unsigned long long)seed, dev->prog, count,
		       (unsigned long long)seed);
	fz_root = !geteuid();
	ksft_print_msg(fz_root ? "root: knob writes included\n" :
				 "not root: knob writes left out\n");

	fz_rng = seed;
	for (i = 0; i < FZ_NFILE; i++)
		fz_files[i].fd = -1;
	fz_page = HFI_PAGE;
	fz_ndevs = dev->ndevs();
	if (fz_ndevs > FZ_MAX_DEVS)
		fz_ndevs = FZ_MAX_DEVS;
	fz_baselines();
	fz_setup();
	fz_ro = fz_map_anon(FZ_RO_BYTES, PROT_READ);
	fz_argro = fz_map_anon(fz_page, PROT_READ);
	/* Kept reserved: an unmapped page would be reused by later mmaps. */
	fz_hole = fz_map_anon(fz_page, PROT_NONE);
	fz_notefd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fz_notefd < 0)
		ksft_exit_fail_msg("/dev/null: %s\n", strerror(errno));
	vmlck0 = hfi_vmlck_kb();
	nfds0 = fz_nfds();

	t0 = time(NULL);
	fz_sequential(count);
	ksft_print_msg("sequential: %lu steps, %lu calls, %lu forks in %lds\n",
		       count, fz_calls, fz_children, (long)(time(NULL) - t0));
	fz_print_hist(dev->nops);
	if (dev->sequential_done)
		dev->sequential_done();
	ksft_test_result(fz_bad == fz_children_bad,
			 "sequential: every answer as documented (%lu not)\n",
			 fz_bad - fz_children_bad);
	ksft_test_result(!fz_children_bad,
			 "forked children: %lu run, %lu failed\n",
			 fz_children, fz_children_bad);

	t0 = time(NULL);
	fz_race(count / 2, seed, &race_calls, &race_bad);
	ksft_print_msg("race: %lu calls in %lds\n", race_calls,
		       (long)(time(NULL) - t0));
	ksft_test_result(!race_bad,
			 "race: every answer in the documented set (%lu not)\n",
			 race_bad);

	ksft_test_result(fz_back_to_baseline(), "%s\n", dev->baseline);
	ksft_test_result(hfi_vmlck_kb() == vmlck0,
			 "locked memory back to baseline (%ld kB, was %ld kB)\n",
			 hfi_vmlck_kb(), vmlck0);
	close(fz_notefd);
	fz_notefd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ksft_test_result(fz_nfds() == nfds0,
			 "no descriptor left open (%d, was %d)\n", fz_nfds(),
			 nfds0);
	ksft_test_result(fz_knobs_restored(), "knobs restored\n");
	ksft_finished();
}

#endif /* KFAB_FUZZ_ENGINE_H */
