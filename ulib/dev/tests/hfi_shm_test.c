// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the shm HFI backend: layout and files, key checks, context
 * numbers, reaping of dead owners, cleanup, listing contexts, the unit
 * file and its knobs, and the two-process exchange of hfi_xproc.h. Runs
 * under a private $KFAB_SHM_DIR (made here unless given) and checks that
 * it is left empty.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "dev/tests/hfi_xproc.h"

#define SHM_LIST_MAX	160

static char dir[256];

static void test_env(void)
{
	struct kfab_hfi_dev *dev;

	setenv("KFAB_SHM_RHQ_ENTRIES", "100", 1);
	TAP_EQ(kfab_hfi_shm_open(0, &dev), -EINVAL,
	       "env: KFAB_SHM_RHQ_ENTRIES=100 refused");
	setenv("KFAB_SHM_RHQ_ENTRIES", "64x", 1);
	TAP_EQ(kfab_hfi_shm_open(0, &dev), -EINVAL,
	       "env: KFAB_SHM_RHQ_ENTRIES=64x refused");
	unsetenv("KFAB_SHM_RHQ_ENTRIES");
	setenv("KFAB_SHM_EAGER_SIZE", "131072", 1);
	TAP_EQ(kfab_hfi_shm_open(0, &dev), -EINVAL,
	       "env: KFAB_SHM_EAGER_SIZE=131072 refused");
	unsetenv("KFAB_SHM_EAGER_SIZE");
	TAP_EQ(kfab_hfi_shm_open(8, &dev), -ENODEV, "open: unit 8: ENODEV");
}

static void test_single(const uint8_t uuid[16])
{
	struct kfab_hfi_dev *dev, *d2;
	struct kfab_hfi_peer *self = NULL, *peer;
	struct kfab_hfi_ring_entry e;
	const struct kfab_hfi_ctxt_info *in;
	char path[512];
	struct stat st;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint32_t tid;

	setenv("KFAB_SHM_DIR", dir, 1);
	if (!TAP_EQ(kfab_hfi_open(KFAB_BACKEND_AUTO, 0, &dev), 0,
		    "auto: opens unit 0"))
		return;
	TAP_OK(!strcmp(dev->ops->name, kfab_hfi_kmod_present(0) ? "kmod" :
		       "shm"), "auto: picks %s", dev->ops->name);
	kfab_hfi_close(dev);

	kfab_hfi_shm_open(0, &dev);
	TAP_EQ(dev->version.lid, 1, "version: lid 1 for unit 0");
	TAP_EQ(dev->version.nctxts, 16, "version: 16 contexts by default");
	TAP_EQ(kfab_hfi_map_peer(dev, 1, 0, &self), -EINVAL,
	       "MAP_PEER before assign: EINVAL");
	TAP_EQ(kfab_hfi_assign(dev, uuid, 0x8000, 0), -EINVAL,
	       "assign: pkey 0x8000 (low bits 0): EINVAL");
	TAP_EQ(kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 16), -EINVAL,
	       "assign: sl 16: EINVAL");
	if (!TAP_EQ(kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 15), 0,
		    "assign"))
		return;
	in = &dev->info;
	TAP_EQ(kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 0), -EINVAL,
	       "assign twice: EINVAL");
	TAP_OK(in->unit == 0 && in->lid == 1 && in->ctxt == 0 &&
	       in->pkey == KFAB_HFI_PKEY_DEFAULT && in->sl == 15 &&
	       !memcmp(in->uuid, uuid, 16),
	       "info: unit 0 lid 1 ctxt 0, pkey, sl, uuid");
	TAP_OK(in->jkey >= 1 && in->jkey <= 0xffff, "info: jkey %#x",
	       in->jkey);
	TAP_OK(in->rhq_entries == 2048 && in->rhq_entry_size == 128 &&
	       in->eager_count == 256 && in->eager_size == 8192,
	       "info: the module's default geometry 2048 x 128, 256 x 8192");
	TAP_OK(!(in->ctrl_offset % page) && !(in->rhq_offset % page) &&
	       !(in->eager_offset % page) &&
	       in->rhq_offset == in->ctrl_offset + page &&
	       in->eager_offset == in->rhq_offset + 2048 * 128,
	       "info: ctrl, rhq, eager page aligned and in that order");
	snprintf(path, sizeof(path), "%s/hfi0/ctxt0", dir);
	TAP_OK(!stat(path, &st) && (st.st_mode & 0777) == 0600 &&
	       st.st_uid == geteuid() &&
	       (uint64_t)st.st_size == in->eager_offset + 256 * 8192,
	       "file: %s, 0600, ours, sized to the layout", path);
	snprintf(path, sizeof(path), "%s/hfi0", dir);
	TAP_OK(!stat(path, &st) && (st.st_mode & 0777) == 0700,
	       "dir: unit directory 0700");
	TAP_EQ(dev->status->state, KFAB_HFI_STATE_ACTIVE, "status: Active");
	TAP_EQ(kfab_hfi_set_eventfd(dev, 0), -EOPNOTSUPP,
	       "set_eventfd: EOPNOTSUPP, wake_fd instead");

	/* loopback */
	if (TAP_EQ(kfab_hfi_map_peer(dev, 1, 0, &self), 0, "loopback: map own")) {
		uint8_t pl[100];

		xp_fill(pl, sizeof(pl), 5);
		TAP_EQ(kfab_hfi_peer_send(dev, self, "hi", 2, pl, sizeof(pl)),
		       0, "loopback: send");
		TAP_OK(kfab_hfi_ring_poll(&dev->ring, &e) == 1 &&
		       !memcmp(e.hdr, "hi", 2) && e.len == 100 &&
		       xp_check(e.payload, 100, 5),
		       "loopback: received through the owner's mapping");
		kfab_hfi_ring_release(&dev->ring);
		TAP_OK(kfab_hfi_ring_arm(&dev->ring), "loopback: arm, empty");
		TAP_EQ(kfab_hfi_peer_send(dev, self, "x", 1, NULL, 0), 0,
		       "loopback: send to an armed owner notifies");
		{
			struct pollfd p = { .fd = dev->wake_fd, .events = POLLIN };

			TAP_EQ(poll(&p, 1, 1000), 1, "loopback: wake_fd readable");
			kfab_hfi_wake_drain(dev);
			TAP_EQ(poll(&p, 1, 0), 0, "loopback: drained");
		}
		TAP_EQ(dev->ring.ctrl->armed, 0, "loopback: armed cleared");
		/* left mapped: close frees it */
	}

	/* TID table */
	{
		static uint8_t buf[4096];
		uint32_t h[200];
		int n = 0;

		TAP_EQ(kfab_hfi_tid_update(dev, buf, 0, &tid), -EINVAL,
		       "TID_UPDATE of 0 bytes: EINVAL");
		while (n < 200 && !kfab_hfi_tid_update(dev, buf, sizeof(buf),
						       &h[n]))
			n++;
		TAP_OK(n >= 64 && n < 200, "TID: %d handles, then ENOSPC", n);
		TAP_OK(h[0] && h[0] != h[1], "TID: handles non-zero, distinct");
		TAP_EQ(kfab_hfi_tid_free(dev, h[0]), 0, "TID_FREE");
		TAP_EQ(kfab_hfi_tid_free(dev, h[0]), -EINVAL,
		       "TID_FREE twice: EINVAL");
		TAP_EQ(kfab_hfi_tid_update(dev, buf, 1, &tid), 0,
		       "TID_UPDATE reuses the slot");
		TAP_OK(tid != h[0], "TID: with a new handle");
	}

	/* context numbers: lowest free, O_EXCL, EBUSY when all taken */
	setenv("KFAB_SHM_CTXTS", "2", 1);
	kfab_hfi_shm_open(0, &d2);
	TAP_EQ(kfab_hfi_assign(d2, uuid, KFAB_HFI_PKEY_DEFAULT, 0), 0,
	       "second context");
	TAP_EQ(d2->info.ctxt, 1, "second context is ctxt 1");
	TAP_EQ(d2->info.jkey, in->jkey, "same uid and uuid, same jkey");
	if (TAP_EQ(kfab_hfi_map_peer(d2, 1, 0, &peer), 0,
		   "list: second context maps the first")) {
		TAP_EQ(kfab_hfi_unmap_peer(dev, peer), -EINVAL,
		       "list: unmap on another device: EINVAL");
		TAP_OK(d2->peers == peer && !peer->next && dev->peers == self,
		       "list: each peer on its own device's");
		/* left mapped: close frees it */
	}
	{
		struct kfab_hfi_dev *d3;

		kfab_hfi_shm_open(0, &d3);
		TAP_EQ(kfab_hfi_assign(d3, uuid, KFAB_HFI_PKEY_DEFAULT, 0),
		       -EBUSY, "third of 2 contexts: EBUSY");
		kfab_hfi_close(d3);
	}
	unsetenv("KFAB_SHM_CTXTS");
	kfab_hfi_close(d2);
	kfab_hfi_close(dev);
	TAP_EQ(xp_files_under(dir), 0, "close: no files left");
}

/*
 * A new device of @unit assigns a context (point @assigned), and it is
 * @ctxt (point @took); then it closes.
 */
static void assigns(unsigned int unit, const uint8_t uuid[16], uint32_t ctxt,
		    const char *assigned, const char *took)
{
	struct kfab_hfi_dev *dev = NULL;
	int ret = kfab_hfi_shm_open(unit, &dev);

	if (!ret)
		ret = kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 0);
	TAP_EQ(ret, 0, "%s", assigned);
	TAP_OK(!ret && dev->info.ctxt == ctxt, "%s", took);
	kfab_hfi_close(dev);
}

/* A child that dies holding a context: the next assign reaps it. */
static void test_stale(const uint8_t uuid[16])
{
	struct kfab_hfi_dev *dev;
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (!pid) {
		if (kfab_hfi_shm_open(2, &dev) ||
		    kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 0))
			_exit(1);
		_exit(dev->info.ctxt == 0 ? 0 : 2);	/* no close */
	}
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status),
	       "stale: child assigned ctxt 0 of unit 2 and died");
	TAP_EQ(xp_files_under(dir), 3,
	       "stale: its context, FIFO and unit file remain");
	assigns(2, uuid, 0, "stale: assign on unit 2",
		"stale: ctxt 0 reaped and reused");
	TAP_EQ(xp_files_under(dir), 0, "stale: no files left");
}

/* The entry of context @ctxt among @n, or NULL. */
static const struct kfab_hfi_ctxt_desc *
desc_find(const struct kfab_hfi_ctxt_desc *d, int n, uint32_t ctxt)
{
	for (int i = 0; i < n; i++)
		if (d[i].ctxt == ctxt)
			return &d[i];
	return NULL;
}

/*
 * A child assigns a context on unit 3 and exits, leaving a grandchild
 * that holds the file (and its lock) until @hold is closed. Returns the
 * grandchild's pid, or -1; we are its subreaper, so waitpid() works.
 */
static pid_t orphan_start(const uint8_t uuid[16], int hold[2])
{
	struct kfab_hfi_dev *dev;
	pid_t child, grand = -1;
	int status, up[2];

	if (prctl(PR_SET_CHILD_SUBREAPER, 1) || pipe(hold) || pipe(up))
		return -1;
	fflush(stdout);
	child = fork();
	if (!child) {
		close(hold[1]);
		close(up[0]);
		if (kfab_hfi_shm_open(3, &dev) ||
		    kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 0))
			_exit(1);
		grand = fork();
		if (!grand) {
			char c;

			/* holds the file until the test closes its end */
			while (read(hold[0], &c, 1) > 0)
				;
			_exit(0);
		}
		if (write(up[1], &grand, sizeof(grand)) != sizeof(grand))
			_exit(2);
		_exit(0);	/* the owner is gone */
	}
	close(hold[0]);
	close(up[1]);
	if (read(up[0], &grand, sizeof(grand)) != sizeof(grand))
		grand = -1;
	close(up[0]);
	waitpid(child, &status, 0);
	return grand;
}

static void test_list(const uint8_t uuid[16])
{
	struct kfab_hfi_ctxt_desc d[SHM_LIST_MAX];
	const struct kfab_hfi_ctxt_desc *e;
	struct kfab_hfi_dev *lister, *a, *b;
	static uint8_t buf[3 * 4096];
	struct kfab_hfi_peer *peer;
	uint32_t total = 99, tid;
	int hold[2], n;
	pid_t grand;

	kfab_hfi_shm_open(3, &lister);
	TAP_EQ(kfab_hfi_list_ctxts(lister, NULL, 0, &total), 0,
	       "list: nothing on unit 3");
	TAP_EQ(total, 0, "list: total 0");
	kfab_hfi_shm_open(3, &a);
	kfab_hfi_shm_open(3, &b);
	if (!TAP_EQ(kfab_hfi_assign(a, uuid, KFAB_HFI_PKEY_DEFAULT, 3), 0,
		    "list: assign a") ||
	    !TAP_EQ(kfab_hfi_assign(b, uuid, 0x8002, 4), 0, "list: assign b"))
		return;

	n = kfab_hfi_list_ctxts(lister, d, SHM_LIST_MAX, &total);
	TAP_OK(n == 2 && total == 2, "list: 2 contexts, from an unassigned device");
	TAP_OK(d[0].ctxt == a->info.ctxt && d[1].ctxt == b->info.ctxt,
	       "list: in context order");
	TAP_OK(d[0].unit == 3 && d[0].jkey == a->info.jkey &&
	       d[0].pkey == KFAB_HFI_PKEY_DEFAULT && d[0].sl == 3 &&
	       d[1].pkey == 0x8002 && d[1].sl == 4 && d[0].pid == getpid(),
	       "list: unit, jkey, pkey, sl, pid");
	TAP_OK(d[0].rhq_entries == a->info.rhq_entries &&
	       d[0].eager_count == a->info.eager_count &&
	       d[0].eager_size == a->info.eager_size,
	       "list: geometry");
	TAP_OK(!d[0].flags && !d[0].ntids && !d[0].tid_pages &&
	       !d[0].peer_refs && !d[0].rhq_full_drops &&
	       !d[0].injected_drops, "list: no flags, TIDs or drops yet");

	kfab_hfi_tid_update(a, buf + 100, 2 * 4096, &tid);
	a->ring.ctrl->armed = 1;
	a->ring.ctrl->eager_full_drops = 7;
	n = kfab_hfi_list_ctxts(a, d, SHM_LIST_MAX, &total);
	e = desc_find(d, n, a->info.ctxt);
	TAP_OK(e && e->flags == KFAB_HFI_CTXT_ARMED && e->ntids == 1 &&
	       e->tid_pages == 3 && e->eager_full_drops == 7,
	       "list: armed, one TID of 3 pages, drops, from the owner");
	a->ring.ctrl->armed = 0;

	n = kfab_hfi_list_ctxts(lister, d, 1, &total);
	TAP_OK(n == 1 && total == 2 && d[0].ctxt == a->info.ctxt,
	       "list: room for 1: the first, total 2");

	/* an owner that exited while a child of it holds the file */
	grand = orphan_start(uuid, hold);
	if (!TAP_OK(grand > 0, "list: orphaned context made"))
		return;
	n = kfab_hfi_list_ctxts(lister, d, SHM_LIST_MAX, &total);
	e = desc_find(d, n, 2);
	TAP_OK(total == 3 && e && e->pid == 0 &&
	       e->flags == KFAB_HFI_CTXT_OWNER_GONE,
	       "list: owner gone: pid 0, KFAB_HFI_CTXT_OWNER_GONE");
	/* its pid and start time tell, not the lock the grandchild holds */
	TAP_EQ(kfab_hfi_map_peer(a, a->version.lid, 2, &peer), -ENOENT,
	       "list: map_peer of the orphaned context: -ENOENT");
	close(hold[1]);
	waitpid(grand, NULL, 0);
	n = kfab_hfi_list_ctxts(lister, d, SHM_LIST_MAX, &total);
	TAP_OK(n == 2 && total == 2 && !desc_find(d, n, 2),
	       "list: the unlocked (stale) file is skipped");
	/* the next assign reaps it */
	assigns(3, uuid, 2, "list: assign reaps the stale context",
		"list: and takes its number");

	kfab_hfi_close(a);
	n = kfab_hfi_list_ctxts(lister, d, SHM_LIST_MAX, &total);
	TAP_OK(n == 1 && d[0].ctxt == b->info.ctxt, "list: a closed, b left");
	kfab_hfi_close(b);
	TAP_EQ(kfab_hfi_list_ctxts(lister, d, SHM_LIST_MAX, &total), 0,
	       "list: none left");
	kfab_hfi_close(lister);
	TAP_EQ(xp_files_under(dir), 0, "list: no files left");
}

static int open_env(unsigned int unit, const char *var, const char *val,
		    struct kfab_hfi_dev **dev)
{
	int ret;

	setenv(var, val, 1);
	ret = kfab_hfi_shm_open(unit, dev);
	unsetenv(var);
	return ret;
}

static void test_unit_file(const uint8_t uuid[16])
{
	static const struct {
		enum kfab_hfi_knob knob;
		uint32_t v;
	} refused[] = {
		{ KFAB_HFI_KNOB_DROP_PPM, 1000001 },
		{ KFAB_HFI_KNOB_STATE, 2 },
		{ (enum kfab_hfi_knob)7, 0 },
	};
	struct kfab_hfi_dev *a, *b, *ctl, *d3;
	struct kfab_hfi_peer *pa;
	struct kfab_hfi_status st;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char path[512];
	struct stat sb;

	TAP_EQ(open_env(4, "KFAB_SHM_DROP_PPM", "1000001", &a), -EINVAL,
	       "env: KFAB_SHM_DROP_PPM=1000001 refused");
	TAP_EQ(open_env(4, "KFAB_SHM_DROP_PPM", "1e3", &a), -EINVAL,
	       "env: KFAB_SHM_DROP_PPM=1e3 refused");
	TAP_EQ(open_env(4, "KFAB_SHM_LINK_RATE_MBPS", "-5", &a), -EINVAL,
	       "env: KFAB_SHM_LINK_RATE_MBPS=-5 refused");

	snprintf(path, sizeof(path), "%s/hfi4/unit", dir);
	kfab_hfi_shm_open(4, &ctl);
	TAP_EQ(kfab_hfi_get_status(ctl, &st), 1, "unit: no file yet: 1");
	TAP_OK(st.state == KFAB_HFI_STATE_ACTIVE && !st.drop_ppm &&
	       !st.link_rate_mbps && st.unit == 4 && st.lid == 5,
	       "unit: defaults Active, 0, 0");
	TAP_OK(stat(path, &sb) && errno == ENOENT,
	       "unit: reading makes no file");

	/* the first assign makes it, with the creator's environment */
	setenv("KFAB_SHM_DROP_PPM", "250", 1);
	setenv("KFAB_SHM_LINK_RATE_MBPS", "100", 1);
	kfab_hfi_shm_open(4, &a);
	unsetenv("KFAB_SHM_DROP_PPM");
	unsetenv("KFAB_SHM_LINK_RATE_MBPS");
	if (!TAP_EQ(kfab_hfi_assign(a, uuid, KFAB_HFI_PKEY_DEFAULT, 0), 0,
		    "unit: assign on unit 4"))
		return;
	TAP_OK(!stat(path, &sb) && (sb.st_mode & 0777) == 0600 &&
	       (size_t)sb.st_size == page && sb.st_uid == geteuid(),
	       "unit: %s, 0600, one page", path);
	TAP_OK(a->status->drop_ppm == 250 && a->status->link_rate_mbps == 100 &&
	       a->status->state == KFAB_HFI_STATE_ACTIVE &&
	       a->status->unit == 4 && a->status->lid == 5 &&
	       a->status->abi_version == KFAB_ABI_VERSION,
	       "unit: made with KFAB_SHM_DROP_PPM=250 KFAB_SHM_LINK_RATE_MBPS=100");
	TAP_EQ(a->info.status_offset, 0, "unit: status_offset 0");

	/* later environments do not change it */
	open_env(4, "KFAB_SHM_DROP_PPM", "999", &b);
	TAP_EQ(kfab_hfi_assign(b, uuid, KFAB_HFI_PKEY_DEFAULT, 0), 0,
	       "unit: second assign");
	TAP_EQ(b->status->drop_ppm, 250, "unit: env only applies at creation");
	if (!TAP_EQ(kfab_hfi_map_peer(b, 5, a->info.ctxt, &pa), 0,
		    "unit: b maps a"))
		return;
	TAP_EQ(pa->status->drop_ppm, 250, "unit: the peer's status too");

	/* a change is seen live by owners and peers */
	TAP_EQ(kfab_hfi_set_knob(ctl, KFAB_HFI_KNOB_DROP_PPM, 10000), 0,
	       "set: drop_ppm 10000");
	TAP_OK(a->status->drop_ppm == 10000 && pa->status->drop_ppm == 10000,
	       "set: seen by the owner and the peer");
	TAP_OK(!kfab_hfi_get_status(ctl, &st) && st.drop_ppm == 10000 &&
	       st.link_rate_mbps == 100, "set: get_status reads it");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		TAP_EQ(kfab_hfi_set_knob(ctl, refused[i].knob, refused[i].v),
		       -EINVAL, "set: knob %d value %u: EINVAL",
		       (int)refused[i].knob, refused[i].v);
	TAP_EQ(a->status->drop_ppm, 10000, "set: refused values change nothing");

	/* Down: as the kernel refuses */
	TAP_EQ(kfab_hfi_set_knob(ctl, KFAB_HFI_KNOB_STATE,
				 KFAB_HFI_STATE_DOWN), 0, "set: state Down");
	TAP_EQ(pa->status->state, KFAB_HFI_STATE_DOWN, "down: the peer sees it");
	TAP_EQ(kfab_hfi_notify(b, pa), -ENETDOWN, "down: notify: ENETDOWN");
	{
		struct kfab_hfi_peer *p2;

		TAP_EQ(kfab_hfi_map_peer(b, 5, a->info.ctxt, &p2), -ENETDOWN,
		       "down: map_peer: ENETDOWN");
	}
	kfab_hfi_shm_open(4, &d3);
	TAP_EQ(kfab_hfi_assign(d3, uuid, KFAB_HFI_PKEY_DEFAULT, 0), -ENETDOWN,
	       "down: assign: ENETDOWN");
	kfab_hfi_close(d3);
	TAP_EQ(kfab_hfi_set_knob(ctl, KFAB_HFI_KNOB_STATE,
				 KFAB_HFI_STATE_ACTIVE), 0, "set: state Active");
	TAP_EQ(kfab_hfi_notify(b, pa), 0, "active: notify again");

	/* kept after the last context, until reset */
	kfab_hfi_close(b);
	kfab_hfi_close(a);
	TAP_OK(!stat(path, &sb), "kept: set knobs outlive the contexts");
	TAP_OK(!kfab_hfi_get_status(ctl, &st) && st.drop_ppm == 10000,
	       "kept: drop_ppm still 10000");
	kfab_hfi_shm_open(4, &a);
	TAP_EQ(a->version.state, KFAB_HFI_STATE_ACTIVE, "kept: open reads state");
	TAP_EQ(kfab_hfi_assign(a, uuid, KFAB_HFI_PKEY_DEFAULT, 0), 0,
	       "kept: assign");
	TAP_EQ(a->status->drop_ppm, 10000, "kept: a new owner sees 10000");
	TAP_EQ(kfab_hfi_reset_knobs(ctl), 0, "reset");
	TAP_OK(a->status->drop_ppm == 0 && a->status->link_rate_mbps == 0,
	       "reset: 0 and 0, seen live");
	TAP_OK(!stat(path, &sb), "reset: the file stays while in use");
	kfab_hfi_close(a);
	TAP_OK(stat(path, &sb) && errno == ENOENT,
	       "reset: gone with the last context");

	/* set and reset with no context at all */
	TAP_EQ(kfab_hfi_set_knob(ctl, KFAB_HFI_KNOB_LINK_RATE_MBPS, 40000), 0,
	       "set: link_rate_mbps on an unused unit");
	TAP_EQ(xp_files_under(dir), 1, "set: makes the unit file");
	TAP_EQ(kfab_hfi_reset_knobs(ctl), 0, "reset: unused unit");
	TAP_EQ(kfab_hfi_reset_knobs(ctl), 0, "reset: twice");
	kfab_hfi_close(ctl);
	TAP_EQ(xp_files_under(dir), 0, "unit: no files left");
}

#define STORM_PROCS	8
#define STORM_CYCLES	250

static uint8_t storm_uuid[16];

/* One storm cycle: open a unit, assign a context, close. */
static int storm_cycle(int proc, int i)
{
	struct kfab_hfi_dev *d;
	int ret;

	ret = kfab_hfi_shm_open((unsigned int)(proc + i) % 2, &d);
	if (ret)
		return ret;
	ret = kfab_hfi_assign(d, storm_uuid, KFAB_HFI_PKEY_DEFAULT, 0);
	kfab_hfi_close(d);
	return ret;
}

/*
 * Processes assigning and closing contexts at once, each the first or
 * the last of its unit as often as not: none fails.
 */
static void test_open_storm(const uint8_t uuid[16])
{
	memcpy(storm_uuid, uuid, sizeof(storm_uuid));
	xp_storm_test(STORM_PROCS, STORM_CYCLES, storm_cycle,
		      "open/assign/close", dir);
}

int main(void)
{
	struct xp_cfg cfg = { .backend = KFAB_BACKEND_SHM };
	bool own;

	tap_start("libkfab: shm HFI backend");
	kfab_log_set(xp_log);
	own = xp_shm_dir(dir, sizeof(dir), "kfab-shm-test");
	if (getrandom(cfg.uuid, sizeof(cfg.uuid), 0) != sizeof(cfg.uuid))
		cfg.uuid[0] = (uint8_t)getpid();
	cfg.uuid[0] |= 1;

	test_env();
	test_single(cfg.uuid);
	test_stale(cfg.uuid);
	test_list(cfg.uuid);
	test_unit_file(cfg.uuid);
	test_open_storm(cfg.uuid);

	cfg.unit_parent = 1;
	cfg.unit_child = 0;
	xp_run(&cfg, "shm units 1+0");
	cfg.unit_parent = 0;
	xp_run(&cfg, "shm unit 0+0");

	xp_shm_dir_done(dir, own);
	return tap_done();
}
