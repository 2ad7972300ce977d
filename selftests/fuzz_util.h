/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the model-checked fuzzers (hfi_fuzz, efa_fuzz) share: the seeded
 * random numbers, requests broken in their flags or reserved word, their
 * memory range, iovecs or eventfd, sets of errnos, the per-operation
 * histogram and failure report, the placement of ioctl arguments (valid,
 * NULL, PROT_NONE, kernel address, read-only page) and the process
 * baselines (VmLck, descriptors). fuzz_engine.h runs them.
 *
 * fz_op_name(), the name of each operation, comes from fuzz_engine.h; the
 * including program sets fz_page, fz_argro (a read-only page) and fz_hole
 * (a PROT_NONE page) in its setup.
 */
#ifndef KFAB_FUZZ_UTIL_H
#define KFAB_FUZZ_UTIL_H

#include <dirent.h>
#include <stddef.h>

/* A canonical kernel address on x86-64: never readable from user space. */
#define FZ_KERNEL_ADDR		0xffff888000000000ULL
/* Handles are far below this: anything above is unknown. */
#define FZ_BAD_HANDLE_MIN	0x10000000U
#define FZ_REPORT_MAX		30
#define FZ_MAX_OPS		32
#define FZ_RO_BYTES		(64UL << 10)

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
static int fz_notefd;		/* open, but not an eventfd */

static uint64_t rnd(uint64_t n)
{
	return n ? fz_next(&fz_rng) % n : 0;
}

static bool pct(unsigned int p)
{
	return rnd(100) < p;
}

/*
 * Now and then (3%) one bit set in the flags or the reserved word of a
 * request, which the kernel refuses: true if so (the answer is EINVAL).
 */
static bool fz_break_flags(__u32 *flags, __u64 *reserved)
{
	if (!pct(3))
		return false;
	if (pct(50))
		*flags = 1U << rnd(32);
	else
		*reserved = 1ULL << rnd(64);
	return true;
}

/* A flags, pad or reserved word of a request: where it is, how wide. */
struct fz_rsv {
	size_t off;
	size_t width;
};

#define FZ_RSV(type, field)						\
	{ offsetof(struct type, field), sizeof(((struct type *)0)->field) }

/*
 * Now and then (3%) one bit set in one of the @n words @rsv of request
 * @arg, which the kernel refuses: true if so (the answer is EINVAL).
 */
static bool fz_break_rsv(void *arg, const struct fz_rsv *rsv, unsigned int n)
{
	unsigned int i;
	__u64 v;

	if (!pct(3) || !n)
		return false;
	i = (unsigned int)rnd(n);
	v = 1ULL << rnd(rsv[i].width * 8);
	memcpy((__u8 *)arg + rsv[i].off, &v, rsv[i].width);
	return true;
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

/* The index of one of @n live handles, 85% of the time there is one; -1. */
static int fz_live(unsigned int n)
{
	return n && pct(85) ? (int)rnd(n) : -1;
}

/* Instead of a live handle: half the time @stale (if any), else a bad one. */
static uint32_t fz_dead_handle(uint32_t stale, fz_set *expect)
{
	*expect = E(EINVAL);
	return stale && pct(50) ? stale : fz_bad_handle();
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
static uint8_t *fz_ro;		/* FZ_RO_BYTES, readable, not writable */

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

/*
 * The user range of a registration (TID_UPDATE, REG_MR) broken in way
 * @kind, 0..5: across the PROT_NONE page after @buf (@bytes long), in
 * read-only memory, inaccessible, a kernel address, empty, wrapping. Sets
 * *@vaddr, *@length (not for the empty one) and *@what; returns the errnos
 * it earns. Read-only memory is EFAULT when @write, fine else.
 */
static fz_set fz_bad_range(unsigned int kind, uint8_t *buf, size_t bytes,
			   bool write, __u64 *vaddr, __u64 *length,
			   const char **what)
{
	uint64_t off;

	switch (kind) {
	case 0:
		*what = "across the guard page";
		off = bytes - 1 - rnd(fz_page);
		*vaddr = (uintptr_t)buf + off;
		*length = bytes - off + 1 + rnd(fz_page);
		return E(EFAULT);
	case 1:
		*what = "read-only";
		off = rnd(FZ_RO_BYTES);
		*vaddr = (uintptr_t)fz_ro + off;
		*length = 1 + rnd(FZ_RO_BYTES - off);
		return write ? E(EFAULT) : 0;
	case 2:
		*what = "inaccessible";
		*vaddr = (uintptr_t)fz_hole + rnd(fz_page);
		*length = 1 + rnd(fz_page);
		return E(EFAULT);
	case 3:
		*what = "kernel address";
		*vaddr = FZ_KERNEL_ADDR;
		*length = fz_page;
		return E(EFAULT);
	case 4:
		*what = "length 0";
		*vaddr = (uintptr_t)buf;
		return E(EINVAL);
	default:
		*what = "wrapping";
		*vaddr = UINT64_MAX - rnd(fz_page);
		*length = fz_page + rnd(fz_page);
		return E(EINVAL);
	}
}

/*
 * Iovec @v (SDMA source, RDMA local buffer) broken in way @x, 0..4, or
 * left as it is: unreadable, a kernel address, empty (fine: the address is
 * never touched), wrapping, huge (the sum overflows or is too long).
 * Returns the errnos it earns and sets *@what; *@clean goes false where
 * the kernel refuses before anything is summed.
 */
static fz_set fz_break_iov(unsigned int x, struct kfab_iovec *v,
			   const char **what, bool *clean)
{
	switch (x) {
	case 0:
		v->addr = (uintptr_t)fz_hole;
		v->len = 1 + rnd(fz_page);
		*what = "inaccessible iovec";
		return E(EFAULT);
	case 1:
		v->addr = FZ_KERNEL_ADDR;
		v->len = 1 + rnd(fz_page);
		*what = "kernel iovec";
		return E(EFAULT);
	case 2:
		v->addr = (uintptr_t)fz_hole;
		v->len = 0;
		return 0;
	case 3:
		v->addr = UINT64_MAX - rnd(100);
		v->len = fz_page;
		*what = "wrapping iovec";
		*clean = false;
		return E(EINVAL);
	case 4:
		v->addr = 0;
		v->len = (1ULL << 63) + rnd(1000);
		*what = "huge iovec";
		*clean = false;
		return E(EINVAL);
	}
	return 0;
}

/*
 * The iovcnt of a copy request (SDMA, RDMA): 1 to 4, or now and then
 * (@bad_pct) 0 or above KFAB_IOV_MAX, which earns EINVAL in *@err and
 * leaves the request not *@clean.
 */
static unsigned int fz_iov_count(unsigned int bad_pct, fz_set *err,
				 const char **what, bool *clean)
{
	unsigned int cnt = 1 + (unsigned int)rnd(4);

	if (pct(bad_pct)) {
		cnt = pct(50) ? 0 : KFAB_IOV_MAX + 1 + (unsigned int)rnd(3);
		*err |= E(EINVAL);
		*what = "iovcnt";
		*clean = false;
	}
	return cnt;
}

/*
 * Where a copy of @total bytes goes in a target of @len bytes at @base
 * (a TID buffer's offset 0, an MR's address): inside it most of the time
 * when it fits, else past its end, with @before half the time before its
 * start, or now and then at the top of the address space; those earn
 * EINVAL in *@err and *@what is @outside.
 */
static __u64 fz_copy_at(__u64 base, __u64 len, __u64 total, bool before,
			const char *outside, fz_set *err, const char **what)
{
	__u64 at;

	if (total <= len && pct(95))
		return base + rnd(len - total + 1);
	at = before && pct(50) ? base - 1 - rnd(100) :
		base + len - (total < len ? total : 0) + 1 + rnd(fz_page);
	if (pct(10))
		at = UINT64_MAX - rnd(fz_page);
	*err |= E(EINVAL);
	*what = outside;
	return at;
}

/*
 * Did a copy land? The first of the @cnt iovecs whose bytes do not stand
 * at @at, one after the other, or -1; *@off is where that one was due,
 * from @at.
 */
static int fz_iov_differs(const uint8_t *at, const struct kfab_iovec *iov,
			  unsigned int cnt, uint64_t *off)
{
	unsigned int i;

	for (*off = 0, i = 0; i < cnt; *off += iov[i].len, i++)
		if (iov[i].len && memcmp(at + *off,
					 (const void *)(uintptr_t)iov[i].addr,
					 iov[i].len))
			return (int)i;
	return -1;
}

/* Now and then (2%) the iovec array *@iov of @cnt entries unreadable. */
static fz_set fz_break_iov_array(__u64 *iov, unsigned int cnt,
				 const char **what)
{
	if (!pct(2) || !cnt || cnt > KFAB_IOV_MAX)
		return 0;
	*iov = pct(50) ? 0 : (uintptr_t)fz_hole;
	*what = "unreadable iovec array";
	return E(EFAULT);
}

/* A descriptor number that is not open. */
static int fz_closed_fd(void)
{
	int fd = 1000 + (int)rnd(1000);

	while (fcntl(fd, F_GETFD) >= 0)
		fd++;
	return fd;
}

/*
 * The fd of a SET_EVENTFD request, in *@fd: mostly a new eventfd, which is
 * returned (the caller's to close), else -1 (clears: *@clear), a
 * descriptor that is no eventfd or a negative number (EINVAL), or one that
 * is not open (EBADF, unless *@expect says it fails for another reason).
 * Returns -1 when it made no eventfd.
 */
static int fz_eventfd_arg(__s32 *fd, fz_set *expect, bool *clear)
{
	int efd;

	switch (rnd(10)) {
	case 0:
	case 1:
		*fd = -1;
		*clear = true;
		return -1;
	case 2:
		*fd = fz_notefd;
		*expect = E(EINVAL);
		return -1;
	case 3:
		*fd = fz_closed_fd();
		*expect = (*expect & ~E(0)) | E(EBADF);
		return -1;
	case 4:
		*fd = -2 - (int)rnd(INT32_MAX - 2);
		*expect = E(EINVAL);
		return -1;
	}
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		ksft_exit_fail_msg("eventfd: %s\n", strerror(errno));
	*fd = efd;
	return efd;
}

/*
 * After a SET_EVENTFD with fz_eventfd_arg()'s @efd (and *@clear): the
 * model's copy of the eventfd, *@slot (NULL: none to follow), becomes
 * @efd when the call went as expected (!@bad) and set or cleared one;
 * else @efd is closed.
 */
static void fz_eventfd_set(bool bad, int *slot, int efd, bool clear)
{
	if (bad || !slot || !(efd >= 0 || clear)) {
		if (efd >= 0)
			close(efd);
		return;
	}
	if (*slot >= 0)
		close(*slot);
	*slot = efd;
}

/* ------------------------------------------------------------------ */
/* Process state and small helpers */

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

/* Random bytes (from the seeded generator) over @len, a multiple of 8. */
static void fz_fill_random(uint8_t *p, size_t len)
{
	for (size_t v = 0; v < len / 8; v++)
		((uint64_t *)p)[v] = fz_next(&fz_rng);
}

/* @len bytes read-write, then a PROT_NONE page: a buffer's guard. */
static uint8_t *fz_map_guarded(size_t len)
{
	uint8_t *p = fz_map_anon(len + fz_page, PROT_READ | PROT_WRITE);

	if (mprotect(p + len, fz_page, PROT_NONE))
		ksft_exit_fail_msg("mprotect: %s\n", strerror(errno));
	return p;
}

/* Non-blocking read of an eventfd: 1 if it had been signalled. */
static int fz_efd_drain(int efd)
{
	uint64_t v;

	return read(efd, &v, sizeof(v)) == sizeof(v);
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
