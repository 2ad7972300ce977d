// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_test's collectives (mpi_test.c has the list): barrier, bcast,
 * allreduce, alltoallv.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_test.h"

static void t_barrier(void)
{
	/* each rank in turn enters 50 ms late: nobody leaves before it */
	for (int late = 0; late < nranks; late++) {
		double t0 = 0, t1, tmin;

		if (rank == late) {
			t0 = now();
			usleep(50000);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		t1 = now();
		MPI_Bcast(&t0, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
		MPI_Allreduce(&t1, &tmin, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
		if (tmin - t0 < 0.049)
			fail("MPI_Barrier: left %.1f ms after rank %d came 50 ms late",
			     (tmin - t0) * 1e3, late);
	}
	for (int i = 0; i < iters * 10; i++)
		CK(MPI_Barrier(MPI_COMM_WORLD));
	point("MPI_Barrier: nobody leaves before the last enters");
}

static void t_bcast(void)
{
	static const size_t sizes[] = { 0, 1, 1000, 65539, (1 << 20) + 1, 4 << 20 };
	uint8_t *buf = galloc(clamp(4 << 20));

	for (int root = 0; root < nranks; root++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(*sizes); s++) {
			size_t n = clamp(sizes[s]);
			uint64_t seed = seed3(root, n, 8);

			if (rank == root)
				fill(buf, n, seed);
			else
				memset(buf, 0, n);
			CK(MPI_Bcast(buf, (int)n, MPI_BYTE, root, MPI_COMM_WORLD));
			check(buf, n, seed, "MPI_Bcast");
			guard_ok(buf, clamp(4 << 20), "MPI_Bcast");
		}
	}
	free(buf);
	point("MPI_Bcast from every root, 0 B to %zu B", clamp(4 << 20));
}

static void t_allreduce(void)
{
	size_t counts[] = { 1, 1000, clamp(8 << 20) / 8 };
	size_t maxc = counts[2] > 1000 ? counts[2] : 1000;
	int64_t *in = malloc(maxc * sizeof(*in)), *out = malloc(maxc * sizeof(*out));
	int64_t base = (int64_t)nranks * (nranks + 1) / 2;

	for (int c = 0; c < 3; c++) {
		size_t n = counts[c];

		for (size_t i = 0; i < n; i++)
			in[i] = (int64_t)(rank + 1) * (int64_t)i - rank * rank;
		CK(MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM,
				 MPI_COMM_WORLD));
		for (size_t i = 0; i < n; i++) {
			int64_t sq = (int64_t)(nranks - 1) * nranks * (2 * nranks - 1) / 6;

			if (out[i] != base * (int64_t)i - sq) {
				fail("MPI_Allreduce SUM of %zu: [%zu] = %lld, not %lld",
				     n, i, (long long)out[i],
				     (long long)(base * (int64_t)i - sq));
				break;
			}
		}
		/* in place, MAX */
		for (size_t i = 0; i < n; i++)
			out[i] = (int64_t)((i + (size_t)rank * 7) % (size_t)nranks);
		CK(MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_INT64_T, MPI_MAX,
				 MPI_COMM_WORLD));
		for (size_t i = 0; i < n; i++) {
			if (out[i] != nranks - 1) {
				fail("MPI_Allreduce MAX in place of %zu: [%zu] = %lld",
				     n, i, (long long)out[i]);
				break;
			}
		}
	}
	{
		struct { double v; int r; } x = { (rank * 5) % nranks, rank }, y;

		CK(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE_INT, MPI_MINLOC,
				 MPI_COMM_WORLD));
		if (y.v != 0 || y.r != 0)
			fail("MPI_Allreduce MINLOC: %g at %d", y.v, y.r);
	}
	free(in);
	free(out);
	point("MPI_Allreduce: SUM, MAX in place, MINLOC; up to %zu elements",
	      counts[2]);
}

/* bytes rank i sends rank j in the alltoallv case */
static int a2a_count(int i, int j, int unit)
{
	return (i * 3 + j * 5 + 1) % 7 * unit;
}

static void t_alltoallv(void)
{
	int units[] = { 1, 1000, (int)clamp(100000) / 6 };

	for (int u = 0; u < 3; u++) {
		int *sc = calloc(nranks, sizeof(int)), *sd = calloc(nranks, sizeof(int));
		int *rc = calloc(nranks, sizeof(int)), *rd = calloc(nranks, sizeof(int));
		int st = 0, rt = 0;
		uint8_t *sb, *rb;

		/* blocks with a GUARD-byte gap after each */
		for (int j = 0; j < nranks; j++) {
			sc[j] = a2a_count(rank, j, units[u]);
			sd[j] = st;
			st += sc[j] + GUARD;
			rc[j] = a2a_count(j, rank, units[u]);
			rd[j] = rt;
			rt += rc[j] + GUARD;
		}
		sb = malloc(st);
		rb = malloc(rt);
		memset(rb, GUARD_BYTE, rt);
		for (int j = 0; j < nranks; j++)
			fill(sb + sd[j], sc[j], seed3(rank, j, 9));
		CK(MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE,
				 MPI_COMM_WORLD));
		for (int j = 0; j < nranks; j++) {
			check(rb + rd[j], rc[j], seed3(j, rank, 9), "MPI_Alltoallv");
			guard_ok(rb + rd[j], rc[j], "MPI_Alltoallv");
		}
		free(sb);
		free(rb);
		free(sc);
		free(sd);
		free(rc);
		free(rd);
	}
	point("MPI_Alltoallv: uneven and empty blocks, gaps untouched");
}

void t_coll(void)
{
	t_barrier();
	t_bcast();
	t_allreduce();
	t_alltoallv();
}
