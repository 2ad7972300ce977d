// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_test: an MPI application over a kfab provider, with every byte
 * checked. Built with mpicc (make mpi-tests), run by scripts/mpi-tests:
 *
 *   mpirun --allow-run-as-root --oversubscribe -np 2|4 \
 *       --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include kfab_opx \
 *       build/mpi/mpi_test [-c CASES] [-m MAX_BYTES] [-i ITERS]
 *
 * and for the one-sided case, in a run of its own, also
 *   --mca osc rdma --mca btl self,ofi --mca btl_ofi_provider_include kfab_opx
 *
 * Cases (-c, comma-separated; default all but rma):
 *   pingpong  ranks r and r^1 exchange every size 0, 2^k-1, 2^k, 2^k+1 up to
 *             MAX_BYTES (default 16 MiB) into receives larger than the
 *             message whose tail must stay untouched
 *   any       MPI_ANY_SOURCE and MPI_ANY_TAG: order per source, status
 *   probe     MPI_Iprobe, MPI_Mprobe/MPI_Mrecv, MPI_Improbe/MPI_Imrecv
 *   ssend     MPI_Issend not complete before the receive matches; MPI_Ssend
 *   storm     hundreds of Isend/Irecv outstanding with every peer, tags
 *             received in another order than sent, posted and unexpected
 *   cancel    MPI_Cancel of a posted receive (cancelled, buffer untouched,
 *             the next message goes elsewhere) and of a matched one
 *   coll      barrier, bcast, allreduce, alltoallv
 *   rma       MPI_Put, MPI_Get, MPI_Accumulate, MPI_Fetch_and_op with fence
 *             and with lock/unlock (not MPI_Compare_and_swap: Open MPI
 *             4.1.4's btl ofi crashes in it over any provider, libfabric's
 *             sockets too)
 *
 * Rank 0 prints TAP; a point passes when it passed on every rank, and a
 * rank that saw something wrong says what in a "# rank N:" line. ITERS
 * (default 20) scales the repetitions. Exit 0 when every point passed.
 *
 * This file has the helpers of mpi_test.h, the case table and main; the
 * cases are in mpi_p2p.c, mpi_coll.c and mpi_rma.c.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_test.h"

int rank, nranks, iters = 20;
size_t max_bytes = 16u << 20;
bool local_ok;
static int npoints, nfailed;

void fail(const char *fmt, ...)
{
	va_list ap;

	local_ok = false;
	printf("# rank %d: ", rank);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* one TAP point: what every rank saw since the last one */
void point(const char *fmt, ...)
{
	int mine = local_ok, all = 0;
	va_list ap;

	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	npoints++;
	if (!all)
		nfailed++;
	if (rank == 0) {
		printf("%sok %d ", all ? "" : "not ", npoints);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf(" (%d ranks)\n", nranks);
		fflush(stdout);
	}
	local_ok = true;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t seed3(uint64_t a, uint64_t b, uint64_t c)
{
	return (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^
	       (c * 0x94d049bb133111ebull) ^ 0x5851f42d4c957f2dull;
}

/* the bytes of message "seed": 8 at a time from a xorshift stream */
void fill(void *buf, size_t n, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, n - i < 8 ? n - i : 8);
	}
}

bool check(const void *buf, size_t n, uint64_t seed, const char *what)
{
	const uint8_t *p = buf;
	uint8_t want[8];
	uint64_t x = seed | 1;

	for (size_t i = 0; i < n; i += 8) {
		size_t k = n - i < 8 ? n - i : 8;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(want, &x, k);
		for (size_t j = 0; j < k; j++) {
			if (p[i + j] != want[j]) {
				fail("%s: byte %zu of %zu is 0x%02x, not 0x%02x",
				     what, i + j, n, p[i + j], want[j]);
				return false;
			}
		}
	}
	return true;
}

/* n bytes and a guard zone after them */
uint8_t *galloc(size_t n)
{
	uint8_t *p = malloc(n + GUARD);

	if (!p) {
		fprintf(stderr, "mpi_test: out of memory (%zu bytes)\n", n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(p + n, GUARD_BYTE, GUARD);
	return p;
}

bool guard_ok(const uint8_t *p, size_t n, const char *what)
{
	for (size_t i = 0; i < GUARD; i++) {
		if (p[n + i] != GUARD_BYTE) {
			fail("%s: byte %zu past the %zu-byte message written",
			     what, i, n);
			return false;
		}
	}
	return true;
}

void count_is(const MPI_Status *st, size_t n, const char *what)
{
	int c = -1;

	MPI_Get_count(st, MPI_BYTE, &c);
	if (c < 0 || (size_t)c != n)
		fail("%s: MPI_Get_count %d, sent %zu", what, c, n);
}

size_t clamp(size_t n)
{
	return n < max_bytes ? n : max_bytes;
}

/* the pair partner of the two-rank cases; -1 leaves a rank out */
int partner(void)
{
	int p = rank ^ 1;

	return p < nranks ? p : -1;
}

/* one message of n bytes from "from" to "to", checked at "to" */
void xfer(int from, int to, size_t n, int tag, uint64_t seed,
		 uint8_t *sbuf, uint8_t *rbuf)
{
	MPI_Status st;
	char what[64];

	if (rank == from) {
		fill(sbuf, n, seed);
		CK(MPI_Send(sbuf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD));
	} else if (rank == to) {
		snprintf(what, sizeof(what), "%zu B from %d", n, from);
		memset(rbuf + n, GUARD_BYTE, GUARD);
		CK(MPI_Recv(rbuf, (int)(n + GUARD), MPI_BYTE, from, tag,
			    MPI_COMM_WORLD, &st));
		count_is(&st, n, what);
		if (st.MPI_SOURCE != from || st.MPI_TAG != tag)
			fail("%s: status source %d tag %d", what,
			     st.MPI_SOURCE, st.MPI_TAG);
		check(rbuf, n, seed, what);
		guard_ok(rbuf, n, what);
	}
}

static const struct {
	const char *name;
	void (*fn)(void);
	bool dflt;
} cases[] = {
	{ "pingpong", t_pingpong, true },
	{ "any", t_any, true },
	{ "probe", t_probe, true },
	{ "ssend", t_ssend, true },
	{ "storm", t_storm, true },
	{ "cancel", t_cancel, true },
	{ "coll", t_coll, true },
	{ "rma", t_rma, false },
};

#define NCASES (sizeof(cases) / sizeof(*cases))

static bool chosen(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

/* every name in the list is a case's */
static bool known(const char *list)
{
	for (const char *p = list; p; p = strchr(p, ',')) {
		size_t i;

		if (*p == ',')
			p++;
		for (i = 0; i < NCASES; i++) {
			size_t n = strlen(cases[i].name);

			if (!strncmp(p, cases[i].name, n) &&
			    (p[n] == ',' || !p[n]))
				break;
		}
		if (i == NCASES)
			return false;
	}
	return true;
}

static void usage(void)
{
	fprintf(stderr, "usage: mpi_test [-c CASES] [-m MAX_BYTES] [-i ITERS]\ncases:");
	for (size_t i = 0; i < NCASES; i++)
		fprintf(stderr, " %s", cases[i].name);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *list = NULL;
	int o;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	while ((o = getopt(argc, argv, "c:m:i:")) != -1) {
		switch (o) {
		case 'c':
			list = optarg;
			break;
		case 'm':
			max_bytes = strtoull(optarg, NULL, 0);
			break;
		case 'i':
			iters = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (list && !known(list))
		usage();
	if (nranks < 2 || nranks > 16 || iters < 1 || max_bytes < 65536 ||
	    max_bytes > (1u << 30))
		usage();
	if (rank == 0)
		printf("TAP version 13\n# mpi_test: %d ranks, up to %zu B, %d iterations\n",
		       nranks, max_bytes, iters);
	local_ok = true;
	for (size_t i = 0; i < NCASES; i++) {
		if (list ? !chosen(list, cases[i].name) : !cases[i].dflt)
			continue;
		if (rank == 0) {
			printf("# ---- %s\n", cases[i].name);
			fflush(stdout);
		}
		cases[i].fn();
	}
	if (rank == 0) {
		printf("1..%d\n# %d passed, %d failed\n", npoints,
		       npoints - nfailed, nfailed);
		fflush(stdout);
	}
	MPI_Finalize();
	return nfailed || !npoints ? 1 : 0;
}
