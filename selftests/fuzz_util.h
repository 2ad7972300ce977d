/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the model-checked fuzzers (hfi_fuzz, efa_fuzz) share: the seeded
 * random numbers, sets of errnos, the per-operation histogram and failure
 * report, the placement of ioctl arguments (valid, NULL, PROT_NONE, kernel
 * address, read-only page) and the process baselines (VmLck, descriptors).
 *
 * The including program defines, before use, the name of each of its
 * operations:
 *
 *   static const char *fz_op_name(unsigned int op);
 *
 * and sets fz_page, fz_argro (a read-only page) and fz_hole (a PROT_NONE
 * page) in its setup.
 */
#ifndef KFAB_FUZZ_UTIL_H
#define KFAB_FUZZ_UTIL_H

#include <dirent.h>

/* A canonical kernel address on x86-64: never readable from user space. */
#define FZ_KERNEL_ADDR		0xffff888000000000ULL
/* Handles are far below this: anything above is unknown. */
#define FZ_BAD_HANDLE_MIN	0x10000000U
#define FZ_REPORT_MAX		30
#define FZ_MAX_OPS		32

/* ------------------------------------------------------------------ */
/* Random numbers: splitmix64, one state per thread. */

static uint64_t fz_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t fz_rng;

static uint64_t rnd(uint64_t n)
{
	return n ? fz_next(&fz_rng) % n : 0;
}

static bool pct(unsigned int p)
{
	return rnd(100) < p;
}

static uint32_t fz_bad_handle(void)
{
	return pct(10) ? 0 : FZ_BAD_HANDLE_MIN + (uint32_t)rnd(0xe0000000U);
}

/* ------------------------------------------------------------------ */
/* Sets of errnos, as bits; bit FZ_NERRNO stands for any other errno. */

static const int fz_errnos[] = {
	0, EPERM, ENOENT, EINTR, EBADF, ENOMEM, EACCES, EFAULT, EBUSY,
	ENODEV, EINVAL, ENOTTY, ENOSPC, ENETDOWN, ECONNRESET, ESTALE,
	EOPNOTSUPP,
};

static const char *const fz_errno_names[] = {
	"ok", "EPERM", "ENOENT", "EINTR", "EBADF", "ENOMEM", "EACCES",
	"EFAULT", "EBUSY", "ENODEV", "EINVAL", "ENOTTY", "ENOSPC", "ENETDOWN",
	"ECONNRESET", "ESTALE", "EOPNOTSUPP", "other",
};

#define FZ_NERRNO	ARRAY_SIZE(fz_errnos)

typedef uint32_t fz_set;

static unsigned int fz_eidx(int err)
{
	unsigned int i;

	for (i = 0; i < FZ_NERRNO; i++)
		if (fz_errnos[i] == err)
			return i;
	return FZ_NERRNO;
}

static fz_set E(int err)
{
	return 1U << fz_eidx(err);
}

static void fz_set_str(fz_set s, char *buf, size_t len)
{
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i <= FZ_NERRNO && n < len; i++)
		if (s & (1U << i))
			n += snprintf(buf + n, len - n, "%s%s", n ? "|" : "",
				      fz_errno_names[i]);
}

/* ------------------------------------------------------------------ */
/* Reporting: a histogram per operation and the first failures in full. */

static const char *fz_op_name(unsigned int op);

static unsigned long fz_hist[FZ_MAX_OPS][FZ_NERRNO + 1];
static unsigned long fz_step, fz_calls, fz_bad;

static void fz_fail(const char *fmt, ...)
{
	va_list ap;

	if (++fz_bad > FZ_REPORT_MAX)
		return;
	printf("# step %lu: ", fz_step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* Count a result (0 or -errno) and check it is in @allowed. */
static int fz_check(unsigned int op, int ret, fz_set allowed, const char *what)
{
	char want[160];

	fz_calls++;
	fz_hist[op][fz_eidx(-ret)]++;
	if (!(allowed & E(-ret))) {
		fz_set_str(allowed, want, sizeof(want));
		fz_fail("%s %s: %s (%d), expected %s", fz_op_name(op), what,
			ret ? strerror(-ret) : "success", ret, want);
	}
	return ret;
}

static void fz_print_hist(unsigned int nops)
{
	unsigned int op, e;
	char line[512];
	size_t n;

	for (op = 0; op < nops; op++) {
		n = snprintf(line, sizeof(line), "%-12s", fz_op_name(op));
		for (e = 0; e <= FZ_NERRNO && n < sizeof(line); e++)
			if (fz_hist[op][e])
				n += snprintf(line + n, sizeof(line) - n,
					      " %s %lu", fz_errno_names[e],
					      fz_hist[op][e]);
		ksft_print_msg("%s\n", line);
	}
}

/* ------------------------------------------------------------------ */
/* ioctl arguments placed at random. */

static size_t fz_page;
static uint8_t *fz_argro;	/* a read-only page for ioctl arguments */
static uint8_t *fz_hole;	/* PROT_NONE */

enum fz_place { FZ_ARG_OK, FZ_ARG_NULL, FZ_ARG_HOLE, FZ_ARG_KERNEL, FZ_ARG_RO };

static int fz_ro_arg(const void *arg, size_t size)
{
	if (mprotect(fz_argro, fz_page, PROT_READ | PROT_WRITE))
		return -errno;
	memcpy(fz_argro, arg, size);
	if (mprotect(fz_argro, fz_page, PROT_READ))
		return -errno;
	return 0;
}

/*
 * Where the argument of @cmd goes: mostly @arg itself, else NULL, a
 * PROT_NONE page or a kernel address (EFAULT before anything is done) or a
 * read-only copy (the work is done, then EFAULT writing the output back).
 * Updates *@expect, the answer with the argument in writable memory.
 */
static void *fz_place_arg(unsigned long cmd, void *arg, fz_set *expect,
			  enum fz_place *place)
{
	unsigned int r = (unsigned int)rnd(100);
	void *p = arg;

	*place = r < 93 ? FZ_ARG_OK : r < 95 ? FZ_ARG_NULL :
		 r < 97 ? FZ_ARG_HOLE : r < 98 ? FZ_ARG_KERNEL : FZ_ARG_RO;
	switch (*place) {
	case FZ_ARG_OK:
		break;
	case FZ_ARG_NULL:
		p = NULL;
		*expect = E(EFAULT);
		break;
	case FZ_ARG_HOLE:
		p = fz_hole;
		*expect = E(EFAULT);
		break;
	case FZ_ARG_KERNEL:
		p = (void *)(uintptr_t)FZ_KERNEL_ADDR;
		*expect = E(EFAULT);
		break;
	case FZ_ARG_RO:
		if (fz_ro_arg(arg, _IOC_SIZE(cmd)))
			ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
		p = fz_argro;
		/* the work is done (and undone where documented) */
		if ((_IOC_DIR(cmd) & _IOC_READ) && (*expect & E(0)))
			*expect = (*expect & ~E(0)) | E(EFAULT);
		break;
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Process state and small helpers */

static long fz_vmlck_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int fz_nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void *fz_map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap %zu: %s\n", len, strerror(errno));
	return p;
}

/* Non-blocking read of an eventfd: 1 if it had been signalled. */
static int fz_efd_drain(int efd)
{
	uint64_t v;

	return read(efd, &v, sizeof(v)) == sizeof(v);
}

/* A descriptor number that is not open. */
static int fz_closed_fd(void)
{
	int fd = 1000 + (int)rnd(1000);

	while (fcntl(fd, F_GETFD) >= 0)
		fd++;
	return fd;
}

/* "usage: PROG [COUNT [SEED]]": parses both; exits 2 on bad usage. */
static void fz_parse_args(int argc, char **argv, const char *prog,
			  unsigned long *count, uint64_t *seed)
{
	char *end;

	if (argc > 3 || (argc > 1 && (!*argv[1] || *argv[1] == '-'))) {
		fprintf(stderr, "usage: %s [COUNT [SEED]]\n", argv[0]);
		exit(2);
	}
	if (argc > 1) {
		errno = 0;
		*count = strtoul(argv[1], &end, 0);
		if (errno || *end || !*count) {
			fprintf(stderr, "%s: COUNT '%s' is not a positive number\n",
				prog, argv[1]);
			exit(2);
		}
	}
	if (argc > 2) {
		errno = 0;
		*seed = strtoull(argv[2], &end, 0);
		if (errno || *end || !*argv[2]) {
			fprintf(stderr, "%s: SEED '%s' is not a number\n",
				prog, argv[2]);
			exit(2);
		}
	} else if (getrandom(seed, sizeof(*seed), 0) != sizeof(*seed)) {
		*seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
	}
}

#endif /* KFAB_FUZZ_UTIL_H */
