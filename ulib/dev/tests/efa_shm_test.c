// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the shm EFA backend: environment, the device file and its
 * status, QP files and numbers, map_peer's keys, a loopback, the
 * two-process exchange of efa_xproc.h (wakeups, RNR, device RDMA and its
 * refusals, knobs seen across processes, a peer destroyed; the same body
 * efa_kmod_test runs), peers killed, and reaping.
 * Runs under a private $KFAB_SHM_DIR (made here unless given) and checks
 * that it is left empty.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dev/tests/efa_xproc.h"

static char dir[256];

static const uint8_t kmod_gid0[KFAB_EFA_GID_LEN] = {
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x6b, 0x66, 0x61, 0x62, 0, 0, 0, 1,
};

static bool exists(unsigned int device, const char *fmt, uint32_t v)
{
	return xp_efa_file(dir, device, fmt, v);
}

static int open_env(unsigned int device, const char *val,
		    struct kfab_efa_dev **dev)
{
	int ret;

	setenv("KFAB_SHM_EFA_DEVICES", val, 1);
	ret = kfab_efa_shm_open(device, dev);
	unsetenv("KFAB_SHM_EFA_DEVICES");
	return ret;
}

static void test_env(void)
{
	struct kfab_efa_dev *dev = NULL;

	TAP_EQ(open_env(0, "0", &dev), -EINVAL,
	       "env: KFAB_SHM_EFA_DEVICES=0 refused");
	TAP_EQ(open_env(0, "9", &dev), -EINVAL,
	       "env: KFAB_SHM_EFA_DEVICES=9 refused");
	TAP_EQ(open_env(0, "2x", &dev), -EINVAL,
	       "env: KFAB_SHM_EFA_DEVICES=2x refused");
	TAP_EQ(open_env(0, "-1", &dev), -EINVAL,
	       "env: KFAB_SHM_EFA_DEVICES=-1 refused");
	TAP_OK(!dev, "env: nothing returned");
	TAP_EQ(kfab_efa_shm_open(2, &dev), -ENODEV,
	       "env: device 2 of the default 2: ENODEV");
	if (TAP_EQ(open_env(2, "3", &dev), 0,
		   "env: KFAB_SHM_EFA_DEVICES=3 opens device 2")) {
		TAP_EQ(dev->info.gid[15], 3, "env: device 2 has gid ...:3");
		kfab_efa_close(dev);
	}
	TAP_EQ(xp_files_under(dir), 0, "env: no files left");
}

static void test_device(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const struct kfab_efa_device_info *in;
	struct kfab_efa_dev *dev, *d1;
	struct kfab_efa_status st;
	struct kfab_efa_mr mr;
	static uint8_t buf[10000];
	char path[512];
	struct stat sb;

	if (!TAP_EQ(kfab_efa_open(KFAB_BACKEND_SHM, 0, &dev), 0,
		    "device: open efa0"))
		return;
	TAP_OK(!strcmp(dev->ops->name, "shm"), "device: the shm backend");
	snprintf(path, sizeof(path), "%s/efa0/device", dir);
	TAP_OK(!stat(path, &sb) && (sb.st_mode & 0777) == 0600 &&
	       (size_t)sb.st_size == page && sb.st_uid == geteuid(),
	       "device: %s, 0600, one page, ours", path);
	snprintf(path, sizeof(path), "%s/efa0", dir);
	TAP_OK(!stat(path, &sb) && (sb.st_mode & 0777) == 0700,
	       "device: directory 0700");
	in = &dev->info;
	TAP_OK(in->abi_version == KFAB_ABI_VERSION && in->device == 0 &&
	       in->state == KFAB_EFA_STATE_ACTIVE && in->mtu == 8192 &&
	       in->rx_entries == 256 && in->max_qps == 64 &&
	       in->max_mrs == 4096 && in->numa_node == -1 &&
	       in->device_rdma == 3 && in->rnr_retry == 3 &&
	       in->mr_state_size == 4096 * 4,
	       "device: info as QUERY_DEVICE with the module's defaults");
	TAP_OK(in->gid[0] == 0xfe && in->gid[1] == 0x80 && in->gid[15] == 1,
	       "device: gid fe80::...:1");
	TAP_OK(dev->status->abi_version == KFAB_ABI_VERSION &&
	       dev->status->device == 0 &&
	       !memcmp(dev->status->gid, in->gid, 16) &&
	       dev->status->state == KFAB_EFA_STATE_ACTIVE &&
	       dev->status->mtu == 8192 && dev->status->device_rdma == 3 &&
	       dev->status->rnr_retry == 3 && !dev->status->rnr_inject_ppm &&
	       !dev->status->reorder_ppm && !dev->status->link_rate_mbps,
	       "device: status page Active, mtu 8192, RDMA r/w, rnr_retry 3, knobs 0");
	TAP_OK(!kfab_efa_get_status(dev, &st) &&
	       !memcmp(&st, dev->status, sizeof(st)),
	       "device: get_status reads the page");
	if (TAP_EQ(kfab_efa_shm_open(1, &d1), 0, "device: open efa1")) {
		TAP_OK(memcmp(d1->info.gid, in->gid, 16) && d1->info.gid[15] == 2 &&
		       !memcmp(d1->info.gid, in->gid, 15),
		       "device: efa1 has its own gid ...:2");
		kfab_efa_close(d1);
	}
	TAP_OK(!exists(1, "device", 0), "device: efa1's file gone with it");

	/* regions: local state words */
	TAP_EQ(kfab_efa_reg_mr(dev, buf, 0, KFAB_EFA_ACCESS_ALL, &mr), -EINVAL,
	       "mr: 0 bytes: EINVAL");
	TAP_EQ(kfab_efa_reg_mr(dev, buf, 10, 0x8, &mr), -EINVAL,
	       "mr: unknown access bit: EINVAL");
	TAP_EQ(kfab_efa_reg_mr(dev, buf, 10, KFAB_EFA_ACCESS_REMOTE_WRITE, &mr),
	       -EINVAL, "mr: REMOTE_WRITE without LOCAL_WRITE: EINVAL");
	if (TAP_EQ(kfab_efa_reg_mr(dev, buf + 3, 9000, KFAB_EFA_ACCESS_ALL,
				   &mr), 0, "mr: register")) {
		TAP_OK(mr.lkey && mr.rkey && mr.addr == buf + 3 &&
		       mr.len == 9000 && mr.access == KFAB_EFA_ACCESS_ALL &&
		       mr.state_index < 4096, "mr: keys non-zero, range, access");
		TAP_OK(kfab_efa_mr_valid(dev, &mr), "mr: state VALID");
		TAP_OK(exists(0, "mr%08x", mr.rkey), "mr: record mr%08x",
		       mr.rkey);
		TAP_EQ(kfab_efa_dereg_mr(dev, &mr), 0, "mr: deregister");
		TAP_OK(!kfab_efa_mr_valid(dev, &mr) &&
		       dev->mr_state[mr.state_index] == KFAB_EFA_MR_STATE_FREE,
		       "mr: state FREE");
		TAP_OK(!exists(0, "mr%08x", mr.rkey), "mr: record removed");
		TAP_EQ(kfab_efa_dereg_mr(dev, &mr), -EINVAL,
		       "mr: deregister twice: EINVAL");
	}
	kfab_efa_close(dev);
	TAP_EQ(xp_files_under(dir), 0, "device: no files left");
}

static void test_qps(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct kfab_efa_qp *qp[66] = { 0 };
	struct kfab_efa_dev *dev;
	char path[512];
	struct stat sb;
	bool distinct = true, keys = true;
	int n = 0, ret = 0;

	if (!TAP_EQ(kfab_efa_shm_open(0, &dev), 0, "qp: open efa0"))
		return;
	for (n = 0; n < 3; n++)
		if (kfab_efa_create_qp(dev, &qp[n]))
			break;
	if (!TAP_EQ(n, 3, "qp: three created"))
		goto out;
	for (int i = 0; i < 3; i++) {
		keys = keys && qp[i]->addr.qkey && qp[i]->addr.qpn >= 1 &&
		       qp[i]->addr.qpn <= 0xffffff &&
		       !memcmp(qp[i]->addr.gid, dev->info.gid, 16) &&
		       qp[i]->ring.entries == 256 && qp[i]->ring.mtu == 8192 &&
		       qp[i]->wake_fd >= 0;
		for (int j = 0; j < i; j++)
			distinct = distinct &&
				   qp[i]->addr.qpn != qp[j]->addr.qpn;
	}
	TAP_OK(keys, "qp: qpn in 1..0xffffff, qkey non-zero, gid, 256 x 8192");
	TAP_OK(distinct, "qp: qpns distinct (%u %u %u)", qp[0]->addr.qpn,
	       qp[1]->addr.qpn, qp[2]->addr.qpn);
	snprintf(path, sizeof(path), "%s/efa0/qp%u", dir, qp[1]->addr.qpn);
	TAP_OK(!stat(path, &sb) && (sb.st_mode & 0777) == 0600 &&
	       (uint64_t)sb.st_size == 2 * page +
	       ((256 * sizeof(struct kfab_efa_rx_entry) + page - 1) / page *
		page) + 256 * 8192,
	       "qp: %s, 0600, header + ctrl + ring + bufs", path);
	TAP_OK(exists(0, "qp%u.wake", qp[1]->addr.qpn) && !stat(path, &sb),
	       "qp: and its FIFO");
	TAP_OK(!qp[1]->ring.ctrl->tail && !qp[1]->ring.ctrl->posted &&
	       !qp[1]->ring.ctrl->dead && !kfab_efa_ring_posted(&qp[1]->ring),
	       "qp: ring zeroed, nothing posted");
	{
		uint32_t qpn = qp[1]->addr.qpn;

		TAP_EQ(kfab_efa_destroy_qp(dev, qp[1]), 0, "qp: destroy");
		qp[1] = NULL;
		TAP_OK(!exists(0, "qp%u", qpn) && !exists(0, "qp%u.wake", qpn),
		       "qp: its files are gone");
		TAP_OK(exists(0, "qp%u", qp[0]->addr.qpn) &&
		       exists(0, "qp%u", qp[2]->addr.qpn), "qp: the others stay");
	}
	/* max_qps: 64 live on the device, 2 of them already */
	for (n = 2; n < 65; n++) {
		ret = kfab_efa_create_qp(dev, &qp[n + 1]);
		if (ret)
			break;
	}
	TAP_EQ(n, 64, "qp: 64 live QPs");
	TAP_EQ(ret, -EBUSY, "qp: the 65th: EBUSY");
out:
	kfab_efa_close(dev);
	TAP_EQ(xp_files_under(dir), 0, "qp: close removes every file");
}

#define RACE_PROCS	4
#define RACE_QPS	10

/* Processes creating QPs at once get distinct qpns. */
static void test_qpn_race(void)
{
	uint32_t qpns[RACE_PROCS * RACE_QPS];
	pid_t pids[RACE_PROCS];
	int up[2], go[2], n = 0, ok = 0;
	bool distinct = true;

	if (pipe(up) || pipe(go))
		return;
	fflush(stdout);
	for (int i = 0; i < RACE_PROCS; i++) {
		pids[i] = fork();
		if (!pids[i]) {
			struct kfab_efa_dev *d;
			struct kfab_efa_qp *qp;
			uint32_t mine[RACE_QPS];
			char c;

			close(up[0]);
			close(go[1]);
			alarm(60);
			if (kfab_efa_shm_open(0, &d) || read(go[0], &c, 1) != 1)
				_exit(1);
			for (int j = 0; j < RACE_QPS; j++) {
				if (kfab_efa_create_qp(d, &qp))
					_exit(2);
				mine[j] = qp->addr.qpn;
			}
			if (write(up[1], mine, sizeof(mine)) != sizeof(mine))
				_exit(3);
			/* hold them until the parent has read all */
			if (read(go[0], &c, 1) < 0)
				_exit(4);
			kfab_efa_close(d);
			_exit(0);
		}
	}
	close(up[1]);
	close(go[0]);
	if (write(go[1], "gggg", RACE_PROCS) != RACE_PROCS)
		tap_diag("race: start failed");
	for (int i = 0; i < RACE_PROCS; i++)
		if (read(up[0], qpns + n, sizeof(uint32_t) * RACE_QPS) ==
		    sizeof(uint32_t) * RACE_QPS)
			n += RACE_QPS;
	close(go[1]);			/* EOF: they close and exit */
	for (int i = 0; i < RACE_PROCS; i++) {
		int status = 0;

		waitpid(pids[i], &status, 0);
		ok += WIFEXITED(status) && !WEXITSTATUS(status);
	}
	close(up[0]);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			distinct = distinct && qpns[i] != qpns[j];
	TAP_OK(ok == RACE_PROCS && n == RACE_PROCS * RACE_QPS,
	       "race: %d processes created %d QPs at once", RACE_PROCS, n);
	TAP_OK(distinct, "race: all qpns distinct");
	TAP_EQ(xp_files_under(dir), 0, "race: no files left");
}

#define STORM_PROCS	8
#define STORM_CYCLES	250

/* One storm cycle: open a device, make a QP, close. */
static int storm_cycle(int proc, int i)
{
	struct kfab_efa_dev *d;
	struct kfab_efa_qp *qp;
	int ret;

	ret = kfab_efa_shm_open((unsigned int)(proc + i) % 2, &d);
	if (ret)
		return ret;
	ret = kfab_efa_create_qp(d, &qp);
	kfab_efa_close(d);
	return ret;
}

/*
 * Processes opening and closing the devices at once, each open the first
 * or the last of its device as often as not: none fails.
 */
static void test_open_storm(void)
{
	xp_storm_test(STORM_PROCS, STORM_CYCLES, storm_cycle,
		      "open/create/close", dir);
}

static void test_loopback(void)
{
	struct kfab_efa_dev *dev;
	struct kfab_efa_qp *qp, *src;
	struct kfab_efa_peer *p, *p2;
	struct kfab_efa_addr a;
	struct kfab_efa_ring_entry e;
	struct pollfd pfd;
	uint8_t pl[5000], hdr[KFAB_EFA_RX_HDR_BYTES];

	if (!TAP_EQ(kfab_efa_shm_open(0, &dev), 0, "peer: open efa0") ||
	    !TAP_EQ(kfab_efa_create_qp(dev, &qp), 0, "peer: create QP") ||
	    !TAP_EQ(kfab_efa_create_qp(dev, &src), 0, "peer: source QP"))
		return;
	a = qp->addr;
	a.qkey ^= 0x10000;
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -EACCES,
	       "peer: wrong qkey: EACCES");
	a = qp->addr;
	a.qpn = qp->addr.qpn % 0xffffff + 1;
	while (a.qpn == src->addr.qpn)
		a.qpn = a.qpn % 0xffffff + 1;
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -ENOENT,
	       "peer: absent qpn: ENOENT");
	a = qp->addr;
	memcpy(a.gid, kmod_gid0, 16);
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -ENOENT,
	       "peer: a gid of the kmod family: ENOENT");
	a = qp->addr;
	a.gid[15] = 9;
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -ENOENT,
	       "peer: gid of device 8 (0..7 at most): ENOENT");
	a = qp->addr;
	a.gid[15] = 2;
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -ENOENT,
	       "peer: unused device efa1: ENOENT");
	if (!TAP_EQ(kfab_efa_map_peer(dev, &qp->addr, &p), 0,
		    "peer: right qkey maps"))
		goto out;
	TAP_OK(p->handle && p->ring.entries == 256 && p->ring.mtu == 8192 &&
	       p->status && p->ring.status == p->status &&
	       p->status->device == 0 && !memcmp(&p->addr, &qp->addr, sizeof(a)),
	       "peer: handle, geometry, status page of efa0");
	{
		struct kfab_efa_dev *other;

		if (TAP_EQ(kfab_efa_map_peer(dev, &qp->addr, &p2), 0,
			   "list: the same QP mapped twice") &&
		    TAP_EQ(kfab_efa_shm_open(0, &other), 0,
			   "list: efa0 opened again")) {
			TAP_EQ(kfab_efa_unmap_peer(other, p2), -EINVAL,
			       "list: unmap on another device: EINVAL");
			TAP_OK(dev->peers == p2 && p2->next == p && !p->next,
			       "list: each on its own device's, newest first");
			kfab_efa_close(other);
		}
		/* p2 left mapped: close frees it */
	}

	/* RNR */
	TAP_EQ(kfab_efa_peer_send(dev, src, p, "x", 1, 1, NULL, 0), -EAGAIN,
	       "loopback: nothing posted: RNR (EAGAIN)");
	TAP_EQ(qp->ring.ctrl->rnrs, 1, "loopback: counted in rnrs");
	TAP_EQ(kfab_efa_ring_post(&qp->ring, 256), 256, "loopback: post 256");

	xp_fill(hdr, sizeof(hdr), 3);
	xp_fill(pl, sizeof(pl), 4);
	TAP_EQ(kfab_efa_peer_send(dev, src, p, hdr, sizeof(hdr), 0xdeadbeef,
				  pl, sizeof(pl)), 0, "loopback: send");
	TAP_OK(kfab_efa_ring_poll(&qp->ring, &e) == 1 &&
	       !memcmp(e.hdr, hdr, sizeof(hdr)) && e.len == sizeof(pl) &&
	       xp_check(e.payload, e.len, 4) && e.imm == 0xdeadbeef &&
	       e.src_qpn == src->addr.qpn && !memcmp(e.src_gid, dev->info.gid, 16),
	       "loopback: hdr, imm, payload, src exact");
	kfab_efa_ring_release(&qp->ring);
	TAP_OK(kfab_efa_ring_arm(&qp->ring), "loopback: armed, empty");
	TAP_EQ(kfab_efa_peer_send(dev, src, p, NULL, 0, 7, NULL, 0), 0,
	       "loopback: send to an armed owner notifies");
	pfd = (struct pollfd){ .fd = qp->wake_fd, .events = POLLIN };
	TAP_EQ(poll(&pfd, 1, 1000), 1, "loopback: wake_fd readable");
	kfab_efa_wake_drain(dev, qp);
	TAP_EQ(poll(&pfd, 1, 0), 0, "loopback: drained");
	TAP_EQ(qp->ring.ctrl->armed, 0, "loopback: armed cleared");
	TAP_EQ(kfab_efa_notify(dev, p), 0, "loopback: explicit notify");
	TAP_EQ(poll(&pfd, 1, 1000), 1, "loopback: wakes too");
	kfab_efa_wake_drain(dev, qp);

	/* destroyed under a peer */
	TAP_OK(!kfab_efa_peer_gone(dev, p), "gone: not while it lives");
	a = qp->addr;
	TAP_EQ(kfab_efa_destroy_qp(dev, qp), 0, "gone: destroy the QP");
	TAP_OK(kfab_efa_peer_gone(dev, p) && kfab_efa_ring_dead(&p->ring),
	       "gone: peer_gone, dead word");
	TAP_EQ(kfab_efa_notify(dev, p), -ECONNRESET,
	       "gone: notify: ECONNRESET");
	TAP_EQ(kfab_efa_map_peer(dev, &a, &p2), -ENOENT,
	       "gone: map_peer of the destroyed QP: ENOENT");
	TAP_EQ(kfab_efa_unmap_peer(dev, p), 0, "gone: unmap");
out:
	kfab_efa_close(dev);
	TAP_EQ(xp_files_under(dir), 0, "peer: no files left");
}

/* ------------------------------------------------------------------ */
/* two processes: efa_xproc.h */

static void test_xproc(void)
{
	const struct xp_efa_cfg cfg = { KFAB_BACKEND_SHM, 3000, dir };

	xp_efa_run(&cfg);
}

/* In a child: efa@device opened, a QP and a region of 4 KiB: 0 or -1. */
static int child_qp_mr(unsigned int device, uint32_t access,
		       struct kfab_efa_qp **qp, struct kfab_efa_mr *mr)
{
	static uint8_t buf[4096];
	struct kfab_efa_dev *d;

	return kfab_efa_shm_open(device, &d) || kfab_efa_create_qp(d, qp) ||
	       kfab_efa_reg_mr(d, buf, sizeof(buf), access, mr) ? -1 : 0;
}

/* A child that is killed while a peer maps its QP. */
static void test_killed(void)
{
	struct kfab_efa_qp *qp;
	struct kfab_efa_mr mr;
	struct kfab_efa_dev *dev, *ctl;
	struct kfab_efa_peer *peer;
	struct msg h;
	int up[2], status;
	pid_t pid;

	if (!TAP_EQ(kfab_efa_shm_open(0, &dev), 0, "killed: open efa0") ||
	    kfab_efa_shm_open(1, &ctl) || pipe(up))
		return;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		struct msg m = { .kind = M_HELLO };

		close(up[0]);
		alarm(60);
		if (child_qp_mr(1, KFAB_EFA_ACCESS_ALL, &qp, &mr))
			_exit(1);
		m.qpn = qp->addr.qpn;
		m.qkey = qp->addr.qkey;
		m.rkey_rw = mr.rkey;
		memcpy(m.gid, qp->addr.gid, 16);
		xp_send(up[1], &m, sizeof(m));
		for (;;)
			pause();
	}
	close(up[1]);
	if (!TAP_EQ(xp_recv(up[0], &h, sizeof(h), M_HELLO, 2 * TIMEOUT_MS), 0, "killed: child ready"))
		goto out;
	{
		struct kfab_efa_addr a = { .qpn = h.qpn, .qkey = h.qkey };

		memcpy(a.gid, h.gid, 16);
		if (!TAP_EQ(kfab_efa_map_peer(dev, &a, &peer), 0,
			    "killed: map its QP"))
			goto out;
	}
	TAP_OK(exists(1, "qp%u", h.qpn) && exists(1, "qp%u.wake", h.qpn) &&
	       exists(1, "mr%08x", h.rkey_rw), "killed: its QP, FIFO, region");
	TAP_OK(!kfab_efa_peer_gone(dev, peer), "killed: alive: not gone");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	pid = 0;
	TAP_OK(kfab_efa_peer_gone(dev, peer), "killed: SIGKILL: peer_gone");
	TAP_EQ(kfab_efa_ring_dead(&peer->ring), 1,
	       "killed: the reaper set the dead word");
	TAP_OK(!exists(1, "qp%u", h.qpn) && !exists(1, "qp%u.wake", h.qpn) &&
	       !exists(1, "mr%08x", h.rkey_rw),
	       "killed: its files were reaped");
	TAP_EQ(kfab_efa_notify(dev, peer), -ECONNRESET,
	       "killed: notify: ECONNRESET");
	kfab_efa_unmap_peer(dev, peer);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	close(up[0]);
	kfab_efa_close(ctl);
	kfab_efa_close(dev);
	TAP_EQ(xp_files_under(dir), 0, "killed: no files left");
}

/* A child exits without closing: the next open reaps its files. */
static void test_stale(void)
{
	struct kfab_efa_qp *qp;
	struct kfab_efa_mr mr;
	struct kfab_efa_dev *dev;
	int status = 0, up[2];
	uint32_t qpn = 0;
	pid_t pid;

	if (pipe(up))
		return;
	fflush(stdout);
	pid = fork();
	if (!pid) {
		if (child_qp_mr(0, KFAB_EFA_ACCESS_REMOTE_READ, &qp, &mr) ||
		    write(up[1], &qp->addr.qpn, 4) != 4)
			_exit(1);
		_exit(0);	/* no close */
	}
	close(up[1]);
	if (read(up[0], &qpn, 4) != 4)
		qpn = 0;
	close(up[0]);
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status) && qpn,
	       "stale: child made QP %u and a region, and exited", qpn);
	TAP_EQ(xp_files_under(dir), 4,
	       "stale: device file, QP, FIFO, region record remain");
	if (TAP_EQ(kfab_efa_shm_open(0, &dev), 0, "stale: open efa0")) {
		TAP_EQ(xp_files_under(dir), 1, "stale: open reaped all but the device file");
		kfab_efa_close(dev);
	}
	TAP_EQ(xp_files_under(dir), 0, "stale: no files left");
}

int main(void)
{
	bool own;

	tap_start("libkfab: shm EFA backend");
	kfab_log_set(xp_log);
	own = xp_shm_dir(dir, sizeof(dir), "kfab-efa-shm-test");
	unsetenv("KFAB_SHM_EFA_DEVICES");

	test_env();
	test_device();
	test_qps();
	test_qpn_race();
	test_open_storm();
	test_loopback();
	test_xproc();
	test_killed();
	test_stale();

	xp_shm_dir_done(dir, own);
	return tap_done();
}
