// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_info set and reset (tools/kfab_info.c) on HFI units and EFA
 * devices, each change seen by a second open through libkfab's device
 * layer, and every malformed command refused with its message and exit
 * status. On the shm backend in a private $KFAB_SHM_DIR; with
 * FI_KFAB_BACKEND=kmod (scripts/efa-tests in the VM) on the modules'
 * devices hfi0, hfi1, efa0 and efa1 as root, skipped without them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dev/efa_dev.h"
#include "dev/hfi_dev.h"
#include "tests/tap.h"

/* the tool, relative to this program's directory (the Makefile says) */
#ifndef KFAB_INFO_TOOL
#define KFAB_INFO_TOOL "../kfab_info"
#endif

#define MAX_ARGS	16

static enum kfab_backend backend;
static char tool[PATH_MAX];
static char shm_dir[64];	/* shm: our $KFAB_SHM_DIR */

/* What one run of the tool did. */
struct run {
	int status;		/* exit status, -1: it did not exit */
	char out[65536];	/* the kmod report with -j: about 10 KiB */
	char err[4096];
};

/*
 * The contents of @fd into @buf, then closes @fd; false when they did not
 * fit (the rest is read and dropped).
 */
static bool slurp(int fd, char *buf, size_t len)
{
	size_t got = 0;
	char rest[512];
	bool fits = true;
	ssize_t n;

	while ((n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	while ((n = read(fd, rest, sizeof(rest))) > 0)
		fits = false;
	close(fd);
	return fits;
}

/*
 * Runs the tool with "-b kmod|shm" and the words of @fmt (split at
 * spaces; "~" stands for a space inside a word).
 */
static void run_tool(struct run *r, const char *fmt, ...)
{
	char line[512], *argv[MAX_ARGS + 4], *save = NULL;
	int argc = 0, out[2], err[2];
	bool fits;
	va_list ap;
	pid_t pid;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	argv[argc++] = tool;
	argv[argc++] = "-b";
	argv[argc++] = backend == KFAB_BACKEND_KMOD ? "kmod" : "shm";
	for (char *w = strtok_r(line, " ", &save); w && argc < MAX_ARGS + 3;
	     w = strtok_r(NULL, " ", &save)) {
		for (char *c = w; *c; c++)
			if (*c == '~')
				*c = ' ';
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	memset(r, 0, sizeof(*r));
	r->status = -1;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		tap_diag("pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execv(tool, argv);
		fprintf(stderr, "exec %s: %s\n", tool, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	/* stderr holds far less than a pipe's buffer */
	fits = slurp(out[0], r->out, sizeof(r->out));
	fits &= slurp(err[0], r->err, sizeof(r->err));
	if (pid > 0) {
		int ws;

		if (waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && fits)
			r->status = WEXITSTATUS(ws);
	}
	if (!fits)
		tap_diag("%s: its output does not fit the test's buffers", tool);
}

/*
 * One point: the tool ran with the words of @fmt, exited @code and said
 * @want (NULL: nothing) on r_.@stream, out or err.
 */
#define TAP_RUN(code, stream, want, ...) do {				\
	struct run r_;							\
	const char *w_ = (want);					\
									\
	run_tool(&r_, __VA_ARGS__);					\
	if (!TAP_OK(r_.status == (code) &&				\
		    (w_ ? strstr(r_.stream, w_) != NULL : !r_.stream[0]), \
		    "kfab_info " __VA_ARGS__))				\
		tap_diag("  exit %d (want %d); stdout \"%s\"; stderr \"%s\"; want \"%s\" on " #stream, \
			 r_.status, (code), r_.out, r_.err, w_ ? w_ : ""); \
} while (0)

/* ------------------------------------------------------------------ */
/* what a second open sees */

static int hfi_status(unsigned int unit, struct kfab_hfi_status *st)
{
	struct kfab_hfi_dev *dev;
	int ret = kfab_hfi_open(backend, unit, &dev);

	if (ret)
		return ret;
	ret = kfab_hfi_get_status(dev, st);
	kfab_hfi_close(dev);
	return ret < 0 ? ret : 0;
}

static int efa_status(unsigned int device, struct kfab_efa_status *st)
{
	struct kfab_efa_dev *dev;
	int ret = kfab_efa_open(backend, device, &dev);

	if (ret)
		return ret;
	ret = kfab_efa_get_status(dev, st);
	kfab_efa_close(dev);
	return ret;
}

/* Passes when unit @unit's knobs are @state, @drop and @rate. */
static void hfi_is(unsigned int unit, uint32_t state, uint32_t drop,
		   uint32_t rate, const char *what)
{
	struct kfab_hfi_status st;

	if (!TAP_EQ(hfi_status(unit, &st), 0, "%s: hfi%u opens", what, unit))
		return;
	if (!TAP_OK(st.state == state && st.drop_ppm == drop &&
		    st.link_rate_mbps == rate,
		    "%s: hfi%u has state %u, drop_ppm %u, link_rate_mbps %u",
		    what, unit, state, drop, rate))
		tap_diag("  it has %u, %u, %u", st.state, st.drop_ppm,
			 st.link_rate_mbps);
}

/* The knobs of an EFA device, in enum kfab_efa_knob's order. */
static void efa_knobs(const struct kfab_efa_status *st,
		      uint32_t v[KFAB_EFA_NKNOBS])
{
	v[KFAB_EFA_KNOB_STATE] = st->state;
	v[KFAB_EFA_KNOB_DEVICE_RDMA] = st->device_rdma;
	v[KFAB_EFA_KNOB_RNR_RETRY] = st->rnr_retry;
	v[KFAB_EFA_KNOB_RNR_INJECT_PPM] = st->rnr_inject_ppm;
	v[KFAB_EFA_KNOB_REORDER_PPM] = st->reorder_ppm;
	v[KFAB_EFA_KNOB_LINK_RATE_MBPS] = st->link_rate_mbps;
}

/* Passes when device @device's knobs are @want (NULL: the defaults). */
static void efa_is(unsigned int device, const uint32_t *want,
		   const char *what)
{
	uint32_t v[KFAB_EFA_NKNOBS], d[KFAB_EFA_NKNOBS];
	struct kfab_efa_status st;
	bool same = true;

	if (!want) {
		for (int k = 0; k < KFAB_EFA_NKNOBS; k++)
			d[k] = kfab_efa_knob_default((enum kfab_efa_knob)k);
		want = d;
	}
	if (!TAP_EQ(efa_status(device, &st), 0, "%s: efa%u opens", what,
		    device))
		return;
	efa_knobs(&st, v);
	for (int k = 0; k < KFAB_EFA_NKNOBS; k++)
		same = same && v[k] == want[k];
	if (TAP_OK(same, "%s: efa%u has the knobs set", what, device))
		return;
	for (int k = 0; k < KFAB_EFA_NKNOBS; k++)
		tap_diag("  %s: %u, want %u",
			 kfab_efa_knob_name((enum kfab_efa_knob)k), v[k],
			 want[k]);
}

/*
 * Passes when the tool's report (no command, @json or text) shows
 * attribute @name of efa<@device> as @value.
 */
static void report_shows(bool json, unsigned int device, const char *name,
			 const char *value)
{
	char head[32], line[96], *block, *end;
	struct run r;

	run_tool(&r, json ? "-j" : "");
	if (json) {
		snprintf(head, sizeof(head), "\"device\": %u,", device);
		snprintf(line, sizeof(line), "\"%s\": %s", name, value);
	} else {
		snprintf(head, sizeof(head), "efa_id:\tefa%u\n", device);
		snprintf(line, sizeof(line), "\t%s:%*s%s\n", name,
			 24 - (int)strlen(name) - 1, "", value);
	}
	block = strstr(r.out, head);
	end = block ? strstr(block, json ? "}" : "\n\n") : NULL;
	if (end)
		*end = '\0';
	if (!TAP_OK(r.status == 0 && block && strstr(block, line),
		    "kfab_info%s: efa%u %s %s", json ? " -j" : "", device,
		    name, value))
		tap_diag("  exit %d; stdout \"%s\"; stderr \"%s\"", r.status,
			 block ? block : r.out, r.err);
}

/* shm: whether <base>/<name> exists */
static bool shm_has(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", shm_dir, name);
	return !access(path, F_OK);
}

/* ------------------------------------------------------------------ */

static void test_hfi(void)
{
	TAP_RUN(0, out, "hfi1: state = Down\nhfi1: drop_ppm = 12345\nhfi1: link_rate_mbps = 8000\n",
		"set hfi1 state=Down drop_ppm=12345 link_rate_mbps=8000");
	hfi_is(1, KFAB_HFI_STATE_DOWN, 12345, 8000, "set hfi1");
	hfi_is(0, KFAB_HFI_STATE_ACTIVE, 0, 0, "set hfi1, hfi0 alone");

	TAP_RUN(0, out, "hfi0: drop_ppm = 77\nhfi0: state = Down\n",
		"set -u 0 drop_ppm=77 state=0");
	hfi_is(0, KFAB_HFI_STATE_DOWN, 77, 0, "set -u 0");
	TAP_RUN(0, out, "hfi0: state = Active\n", "set hfi0 state=1");
	hfi_is(0, KFAB_HFI_STATE_ACTIVE, 77, 0, "set hfi0 state=1");

	TAP_RUN(0, out, "hfi0: state = Active, drop_ppm = 0, link_rate_mbps = 0\n",
		"reset -u 0");
	hfi_is(0, KFAB_HFI_STATE_ACTIVE, 0, 0, "reset -u 0");
	hfi_is(1, KFAB_HFI_STATE_DOWN, 12345, 8000, "reset -u 0, hfi1 alone");
	TAP_RUN(0, out, "hfi1: state = Active, drop_ppm = 0, link_rate_mbps = 0\n",
		"reset hfi1");
	hfi_is(1, KFAB_HFI_STATE_ACTIVE, 0, 0, "reset hfi1");
	if (backend == KFAB_BACKEND_SHM)
		TAP_OK(!shm_has("hfi1/unit") && !shm_has("hfi0/unit"),
		       "reset: the shm unit files are gone");
}

static void test_efa(void)
{
	uint32_t want[KFAB_EFA_NKNOBS];

	want[KFAB_EFA_KNOB_STATE] = KFAB_EFA_STATE_DOWN;
	want[KFAB_EFA_KNOB_DEVICE_RDMA] = KFAB_EFA_RDMA_CAP_READ;
	want[KFAB_EFA_KNOB_RNR_RETRY] = 5;
	want[KFAB_EFA_KNOB_RNR_INJECT_PPM] = 10;
	want[KFAB_EFA_KNOB_REORDER_PPM] = 20;
	want[KFAB_EFA_KNOB_LINK_RATE_MBPS] = 4000;
	TAP_RUN(0, out, "efa1: state = Down\nefa1: link_rate_mbps = 4000\nefa1: device_rdma = read\nefa1: rnr_retry = 5\nefa1: rnr_inject_ppm = 10\nefa1: reorder_ppm = 20\n",
		"set efa1 state=Down link_rate_mbps=4000 device_rdma=read rnr_retry=5 rnr_inject_ppm=10 reorder_ppm=20");
	efa_is(1, want, "set efa1");
	efa_is(0, NULL, "set efa1, efa0 alone");
	report_shows(false, 1, "state", "Down");
	report_shows(false, 1, "link_rate_mbps", "4000");
	report_shows(false, 0, "state", "Active");
	report_shows(true, 1, "state", "\"Down\"");
	report_shows(true, 1, "device_rdma", "\"read\"");
	report_shows(true, 0, "link_rate_mbps", "0");

	TAP_RUN(0, out, "efa1: state = Active\nefa1: device_rdma = read write\n",
		"set efa1 state=Active device_rdma=read~write");
	want[KFAB_EFA_KNOB_STATE] = KFAB_EFA_STATE_ACTIVE;
	want[KFAB_EFA_KNOB_DEVICE_RDMA] = KFAB_EFA_RDMA_CAP_READ |
					  KFAB_EFA_RDMA_CAP_WRITE;
	efa_is(1, want, "set efa1 by words");
	TAP_RUN(0, out, "efa1: state = Down\nefa1: device_rdma = write\n",
		"set efa1 state=0 device_rdma=2");
	want[KFAB_EFA_KNOB_STATE] = KFAB_EFA_STATE_DOWN;
	want[KFAB_EFA_KNOB_DEVICE_RDMA] = KFAB_EFA_RDMA_CAP_WRITE;
	efa_is(1, want, "set efa1 by numbers");

	TAP_RUN(0, out, "efa0: link_rate_mbps = 8000\n",
		"set efa0 link_rate_mbps=8000");
	efa_is(1, want, "set efa0, efa1 alone");
	TAP_RUN(0, out, "efa1: state = Active, device_rdma = read write, rnr_retry = 3, rnr_inject_ppm = 0, reorder_ppm = 0, link_rate_mbps = 0\n",
		"reset efa1");
	efa_is(1, NULL, "reset efa1");
	if (backend == KFAB_BACKEND_SHM)
		TAP_OK(!shm_has("efa1/device"),
		       "reset efa1: its shm device file is gone");
	want[KFAB_EFA_KNOB_STATE] = KFAB_EFA_STATE_ACTIVE;
	want[KFAB_EFA_KNOB_DEVICE_RDMA] = KFAB_EFA_RDMA_CAP_READ |
					  KFAB_EFA_RDMA_CAP_WRITE;
	want[KFAB_EFA_KNOB_RNR_RETRY] = 3;
	want[KFAB_EFA_KNOB_RNR_INJECT_PPM] = 0;
	want[KFAB_EFA_KNOB_REORDER_PPM] = 0;
	want[KFAB_EFA_KNOB_LINK_RATE_MBPS] = 8000;
	efa_is(0, want, "reset efa1, efa0 alone");
	TAP_RUN(0, out, "efa0: state = Active, device_rdma = read write",
		"reset efa0");
	efa_is(0, NULL, "reset efa0");
}

/* Each refused with its message, exit status 1 or 2, nothing changed. */
static void test_errors(void)
{
	char msg[160];
	unsigned int absent = 2;

	TAP_RUN(1, err, "efa0: unknown knob \"foo\": give state, device_rdma, rnr_retry, rnr_inject_ppm, reorder_ppm or link_rate_mbps",
		"set efa0 foo=1");
	TAP_RUN(1, err, "hfi0: unknown knob \"bar\": give state, drop_ppm or link_rate_mbps",
		"set hfi0 bar=1");
	TAP_RUN(1, err, "efa0: rnr_retry=8: must be an integer in 0..7",
		"set efa0 rnr_retry=8");
	TAP_RUN(1, err, "efa0: reorder_ppm=1000001: must be an integer in 0..1000000",
		"set efa0 reorder_ppm=1000001");
	TAP_RUN(1, err, "hfi0: drop_ppm=1000001: must be an integer in 0..1000000",
		"set -u 0 drop_ppm=1000001");
	TAP_RUN(1, err, "efa0: device_rdma=4: must be none, read, write or \"read write\" (or 0..3)",
		"set efa0 device_rdma=4");
	TAP_RUN(1, err, "efa0: link_rate_mbps=12abc: must be an integer in 0..1000000",
		"set efa0 link_rate_mbps=12abc");
	TAP_RUN(1, err, "efa0: rnr_retry=-1: must be an integer in 0..7",
		"set efa0 rnr_retry=-1");
	TAP_RUN(1, err, "efa0: link_rate_mbps=: must be an integer",
		"set efa0 link_rate_mbps=");
	TAP_RUN(1, err, "efa0: state=Up: must be Down or Active (or 0..1)",
		"set efa0 state=Up");
	TAP_RUN(1, err, "hfi1: state=active: must be Down or Active (or 0..1)",
		"set hfi1 state=active");
	TAP_RUN(1, err, "efa0: \"junk\": expected KNOB=VALUE",
		"set efa0 junk");
	TAP_RUN(1, err, "efa0: drop_ppm is a knob of HFI units, not of EFA devices: give state, device_rdma",
		"set efa0 drop_ppm=1");
	TAP_RUN(1, err, "hfi1: rnr_retry is a knob of EFA devices, not of HFI units: give state, drop_ppm or link_rate_mbps",
		"set hfi1 rnr_retry=1");
	TAP_RUN(1, err, "set: \"efx0\" is not a device name: give hfi<N> (an HFI unit) or efa<N> (an EFA device), N in 0..7",
		"set efx0 state=Down");
	TAP_RUN(1, err, "reset: \"efa01\" is not a device name",
		"reset efa01");
	TAP_RUN(1, err, "set: \"hfi8\" is not a device name", "set hfi8 state=1");
	TAP_RUN(1, err, "set: \"efa\" is not a device name", "set efa state=1");

	if (backend == KFAB_BACKEND_KMOD) {
		while (absent < 8 && kfab_efa_kmod_present(absent))
			absent++;
		snprintf(msg, sizeof(msg),
			 "efa%u: no such device: /dev/kfab_efa%u does not exist (devices: ",
			 absent, absent);
	} else {
		snprintf(msg, sizeof(msg),
			 "no EFA device %u (0..1; KFAB_SHM_EFA_DEVICES sets how many)",
			 absent);
	}
	if (absent < 8)
		TAP_RUN(1, err, msg, "set efa%u state=Down", absent);
	else
		tap_skip("every EFA device exists: none to miss");

	TAP_RUN(2, err, "set: which device? give DEVICE (hfi0, efa1, ...) or -u UNIT first",
		"set state=Down");
	TAP_RUN(2, err, "reset: which device?", "reset");
	TAP_RUN(2, err, "set: nothing to set: give KNOB=VALUE (state, device_rdma",
		"set efa1");
	TAP_RUN(2, err, "reset: nothing after the device", "reset efa0 state=Down");
	TAP_RUN(2, err, "set: hfi0 and -u 0: give the device or -u UNIT, not both",
		"set -u 0 hfi0 state=Down");
	TAP_RUN(2, err, "usage:", "set -x efa0 state=Down");

	/* a bad pair after a good one: nothing set */
	TAP_RUN(1, err, "efa1: unknown knob \"foo\"",
		"set efa1 link_rate_mbps=5 foo=1");
	efa_is(1, NULL, "a refused set changes nothing");
	TAP_RUN(1, err, "hfi1: drop_ppm=x", "set hfi1 state=Down drop_ppm=x");
	hfi_is(1, KFAB_HFI_STATE_ACTIVE, 0, 0, "a refused set changes nothing");
}

/* kmod: the devices and root, or a reason to skip. */
static const char *kmod_missing(void)
{
	static char why[96];

	for (unsigned int n = 0; n < 2; n++) {
		if (!kfab_efa_kmod_present(n)) {
			snprintf(why, sizeof(why),
				 "/dev/kfab_efa%u is missing: run in scripts/with-modules", n);
			return why;
		}
		if (!kfab_hfi_kmod_present(n)) {
			snprintf(why, sizeof(why),
				 "/dev/kfab_hfi%u is missing: run in scripts/with-modules", n);
			return why;
		}
	}
	return geteuid() ? "setting a kernel device's knobs needs root" : NULL;
}

/* this program's directory + KFAB_INFO_TOOL */
static int find_tool(void)
{
	char self[PATH_MAX - 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return -errno;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(tool, sizeof(tool), "%s/%s", self, KFAB_INFO_TOOL);
	return access(tool, X_OK) ? -errno : 0;
}

static void quiet(enum kfab_log_level level, const char *msg)
{
	if (level <= KFAB_LOG_WARN)
		tap_diag("libkfab: %s", msg);
}

int main(void)
{
	const char *be = getenv("FI_KFAB_BACKEND");
	int ret;

	tap_start("kfab_info set and reset on HFI units and EFA devices");
	kfab_log_set(quiet);
	backend = be && !strcmp(be, "kmod") ? KFAB_BACKEND_KMOD :
					      KFAB_BACKEND_SHM;
	ret = find_tool();
	if (ret) {
		TAP_OK(0, "%s: %s (make build/kfab_info)", tool, strerror(-ret));
		return tap_done();
	}
	if (backend == KFAB_BACKEND_KMOD) {
		const char *why = kmod_missing();

		if (why)
			tap_skip_all("kmod: %s", why);
	} else {
		snprintf(shm_dir, sizeof(shm_dir), "/tmp/kfab_info_test.XXXXXX");
		if (!mkdtemp(shm_dir)) {
			TAP_OK(0, "mkdtemp: %s", strerror(errno));
			return tap_done();
		}
		setenv("KFAB_SHM_DIR", shm_dir, 1);
		setenv("KFAB_SHM_EFA_DEVICES", "2", 1);
		unsetenv("KFAB_SHM_EFA_RNR_RETRY");
		unsetenv("KFAB_SHM_EFA_RNR_INJECT_PPM");
		unsetenv("KFAB_SHM_EFA_REORDER_PPM");
		unsetenv("KFAB_SHM_DROP_PPM");
		unsetenv("KFAB_SHM_LINK_RATE_MBPS");
	}
	tap_diag("%s on the %s backend", tool,
		 backend == KFAB_BACKEND_KMOD ? "kmod" : "shm");
	test_hfi();
	test_efa();
	test_errors();
	/* whatever a failed point left set */
	run_tool(&(struct run){ 0 }, "reset hfi0");
	run_tool(&(struct run){ 0 }, "reset hfi1");
	run_tool(&(struct run){ 0 }, "reset efa0");
	run_tool(&(struct run){ 0 }, "reset efa1");
	if (backend == KFAB_BACKEND_SHM)
		TAP_OK(!rmdir(shm_dir), "every shm file gone after the resets");
	return tap_done();
}
