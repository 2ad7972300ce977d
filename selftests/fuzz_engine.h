/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The engine of the model-checked fuzzers (hfi_fuzz, efa_fuzz): the
 * sequential phase (weighted random steps from the device's operation
 * table, forked children killed at random points), the race phase (two
 * threads on eight shared descriptors, a third flipping knobs) and the
 * seven TAP points of main().
 *
 * A fuzzer includes fuzz_util.h and this file, keeps its model and its
 * operations, and hands fz_main() a struct fz_device: its tables (names,
 * weights and steps of its operations), its race calls and knob writes,
 * and how it sets up, tears down and checks its baselines. The device
 * layer's helpers (open, sysfs) stay in hfi_util.h / efa_util.h.
 */
#ifndef KFAB_FUZZ_ENGINE_H
#define KFAB_FUZZ_ENGINE_H

#include <pthread.h>

#define FZ_DEFAULT_COUNT	20000UL
#define FZ_SCRATCH_BYTES	(16UL << 10)
#define FZ_RACE_FDS		8
#define FZ_RACE_POOL		(256UL << 10)

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

struct fz_device {
	const char *prog;		/* "hfi_fuzz": usage and replay line */
	const unsigned long *ioctls;	/* every command the device knows */
	unsigned int nioctls;
	unsigned int nops;
	const char *const *op_names;
	const unsigned int *op_weight;	/* per thousand steps */
	void (*const *ops)(void);	/* one step of each operation */
	unsigned int op_fork;		/* the entry that is fz_op_fork */
	unsigned int op_bad_cmd;	/* the entry that calls fz_bad_cmd() */
	void (*require_device)(void);	/* exits 4 (skip) without one */
	void (*setup)(void);		/* sets fz_page, fz_ndevs, the model */
	void (*teardown)(void);		/* unmaps and closes the model's own */
	/* A forked child's steps on the inherited files: nonzero if bad. */
	int (*child)(void);
	void (*sequential_done)(void);	/* more lines after the histogram */
	/* Open device @dev: a descriptor or -errno. */
	int (*open)(unsigned int dev);
	/*
	 * Race call @k (2..12) on @fd: the answer (0 or -errno) to count, or
	 * 1 when nothing was called.
	 */
	int (*race_call)(struct fz_racer *r, int fd, unsigned int k);
	fz_set (*race_errnos)(void);	/* whatever a race call may answer */
	void (*knob_write)(struct fz_racer *r);	/* one, counted into r->bad */
	void (*race_done)(void);	/* after the knobber stopped */
	const char *baseline;		/* its point: "units back to ..." */
	bool (*back_to_baseline)(void);
	bool (*knobs_restored)(void);	/* restores them, then checks */
};

static const struct fz_device *fz_dev;
static uint8_t fz_scratch[FZ_SCRATCH_BYTES];	/* argument room */
static unsigned int fz_ndevs;	/* devices (units) the model knows */
static bool fz_root;		/* knob writes allowed */
static unsigned long fz_children, fz_children_bad;

static const char *fz_op_name(unsigned int op)
{
	return fz_dev->op_names[op];
}

/* ------------------------------------------------------------------ */
/* The sequential phase */

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
		bad = fz_dev->child();
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
	fz_hist[fz_dev->op_fork][0]++;
	if ((WIFEXITED(status) && WEXITSTATUS(status)) ||
	    (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)) {
		fz_children_bad++;
		fz_fail("fork: child status %#x", status);
	}
}

/* A command the device does not know, on @fd: always ENOTTY. */
static void fz_bad_cmd(int fd)
{
	const unsigned long *known = fz_dev->ioctls;
	unsigned int n = fz_dev->nioctls, i;
	unsigned long cmd;
	char what[48];

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
	fz_check(fz_dev->op_bad_cmd, ioctl(fd, cmd, fz_scratch) ? -errno : 0,
		 E(ENOTTY), what);
}

static void fz_sequential(unsigned long count)
{
	unsigned int total = 0, r, op;

	for (op = 0; op < fz_dev->nops; op++)
		total += fz_dev->op_weight[op];
	for (fz_step = 0; fz_step < count; fz_step++) {
		r = (unsigned int)rnd(total);
		for (op = 0; r >= fz_dev->op_weight[op]; op++)
			r -= fz_dev->op_weight[op];
		fz_dev->ops[op]();
	}
	fz_dev->teardown();
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
		nfd = fz_dev->open((unsigned int)trnd(r, fz_ndevs));
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
		ret = fz_dev->race_call(r, fd, k == 1 ? 2 : k);
		if (ret > 0)
			return;
	}
	r->calls++;
	r->hist[fz_eidx(-ret)]++;
	if (!(fz_dev->race_errnos() & E(-ret)) && ++r->bad <= 5)
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

/* Flip states, rates and the like under the racers' feet. */
static void *fz_knobber_main(void *arg)
{
	struct fz_racer *r = arg;

	while (!atomic_load(&fz_race_done)) {
		r->calls++;
		fz_dev->knob_write(r);
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

static void fz_main(const struct fz_device *dev, int argc, char **argv)
{
	unsigned long count = FZ_DEFAULT_COUNT, race_calls = 0, race_bad = 0;
	uint64_t seed;
	long vmlck0;
	int nfds0;
	time_t t0;

	fz_dev = dev;
	fz_parse_args(argc, argv, dev->prog, &count, &seed);
	ksft_print_header();
	dev->require_device();
	ksft_set_plan(7);
	ksft_print_msg("count %lu seed %llu: replay with %s %lu %llu\n",
		       count, (unsigned long long)seed, dev->prog, count,
		       (unsigned long long)seed);
	fz_root = !geteuid();
	ksft_print_msg(fz_root ? "root: knob writes included\n" :
				 "not root: knob writes left out\n");

	fz_rng = seed;
	dev->setup();
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

	ksft_test_result(dev->back_to_baseline(), "%s\n", dev->baseline);
	ksft_test_result(hfi_vmlck_kb() == vmlck0,
			 "locked memory back to baseline (%ld kB, was %ld kB)\n",
			 hfi_vmlck_kb(), vmlck0);
	close(fz_notefd);
	fz_notefd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ksft_test_result(fz_nfds() == nfds0,
			 "no descriptor left open (%d, was %d)\n", fz_nfds(),
			 nfds0);
	ksft_test_result(dev->knobs_restored(), "knobs restored\n");
	ksft_finished();
}

#endif /* KFAB_FUZZ_ENGINE_H */
