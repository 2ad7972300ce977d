// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_test's one-sided case (mpi_test.c has the list): MPI_Put, MPI_Get,
 * MPI_Accumulate, MPI_Fetch_and_op with fence and with lock/unlock.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_test.h"

/* one-sided: Put and Get of whole blocks, with fence */
static void rma_fence(MPI_Win win, uint8_t *mem, size_t blk, const char *kind)
{
	uint8_t *tmp = galloc(blk * nranks);

	memset(mem, 0, blk * nranks);
	fill(tmp, blk, seed3(rank, 10, blk));
	CK(MPI_Win_fence(0, win));
	for (int t = 0; t < nranks; t++)
		CK(MPI_Put(tmp, (int)blk, MPI_BYTE, t, (MPI_Aint)(rank * blk),
			   (int)blk, MPI_BYTE, win));
	CK(MPI_Win_fence(0, win));
	for (int r = 0; r < nranks; r++)
		check(mem + r * blk, blk, seed3(r, 10, blk), "MPI_Put");
	CK(MPI_Win_fence(0, win));
	point("MPI_Put of %zu B to every rank, fence (%s)", blk, kind);

	for (int r = 0; r < nranks; r++)
		fill(mem + r * blk, blk, seed3(rank, r, 11));
	memset(tmp, 0, blk * nranks);
	CK(MPI_Win_fence(0, win));
	for (int t = 0; t < nranks; t++)
		CK(MPI_Get(tmp + t * blk, (int)blk, MPI_BYTE, t,
			   (MPI_Aint)(rank * blk), (int)blk, MPI_BYTE, win));
	CK(MPI_Win_fence(0, win));
	for (int t = 0; t < nranks; t++)
		check(tmp + t * blk, blk, seed3(t, rank, 11), "MPI_Get");
	guard_ok(tmp, blk * nranks, "MPI_Get");
	point("MPI_Get of %zu B from every rank, fence (%s)", blk, kind);
	free(tmp);
}

void t_rma(void)
{
	size_t blk = clamp(256 << 10);
	size_t n = 1024, nfop = (size_t)iters * 5;
	int64_t *w64, *v = malloc(n * sizeof(*v)), *got;
	uint8_t *mem, *umem;
	MPI_Win win, uwin;
	int64_t one = 1;

	CK(MPI_Win_allocate((MPI_Aint)(blk * nranks), 1, MPI_INFO_NULL,
			    MPI_COMM_WORLD, &mem, &win));
	if (!local_ok) {
		point("MPI_Win_allocate");
		return;
	}
	rma_fence(win, mem, blk, "MPI_Win_allocate");

	/* memory of the application's own, as MPI_Win_create takes it */
	umem = galloc(blk * nranks);
	CK(MPI_Win_create(umem, (MPI_Aint)(blk * nranks), 1, MPI_INFO_NULL,
			  MPI_COMM_WORLD, &uwin));
	rma_fence(uwin, umem, blk, "MPI_Win_create");
	guard_ok(umem, blk * nranks, "MPI_Win_create window");
	CK(MPI_Win_free(&uwin));
	free(umem);

	/* accumulate into n int64 at every rank: SUM, then MAX after it */
	w64 = (int64_t *)mem;
	memset(mem, 0, n * 2 * sizeof(*w64));
	for (size_t i = 0; i < n; i++)
		v[i] = rank + 1 + (int64_t)i;
	CK(MPI_Win_fence(0, win));
	for (int t = 0; t < nranks; t++) {
		CK(MPI_Accumulate(v, (int)n, MPI_INT64_T, t, 0, (int)n,
				  MPI_INT64_T, MPI_SUM, win));
		CK(MPI_Accumulate(v, (int)n, MPI_INT64_T, t,
				  (MPI_Aint)(n * sizeof(*w64)), (int)n,
				  MPI_INT64_T, MPI_MAX, win));
	}
	CK(MPI_Win_fence(0, win));
	for (size_t i = 0; i < n; i++) {
		int64_t sum = (int64_t)nranks * (int64_t)i +
			      (int64_t)nranks * (nranks + 1) / 2;

		if (w64[i] != sum || w64[n + i] != nranks + (int64_t)i) {
			fail("MPI_Accumulate: [%zu] SUM %lld (want %lld) MAX %lld",
			     i, (long long)w64[i], (long long)sum,
			     (long long)w64[n + i]);
			break;
		}
	}
	CK(MPI_Win_fence(0, win));
	point("MPI_Accumulate SUM and MAX of %zu int64 from every rank, fence", n);

	/* fetch-and-add on rank 0 under a shared lock: each value once */
	w64[0] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	got = calloc(nfop * nranks, sizeof(*got));
	for (size_t i = 0; i < nfop; i++) {
		CK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		CK(MPI_Fetch_and_op(&one, &got[i], MPI_INT64_T, 0, 0, MPI_SUM,
				    win));
		CK(MPI_Win_unlock(0, win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		CK(MPI_Gather(MPI_IN_PLACE, (int)nfop, MPI_INT64_T, got,
			      (int)nfop, MPI_INT64_T, 0, MPI_COMM_WORLD));
		CK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		if (w64[0] != (int64_t)(nfop * nranks))
			fail("MPI_Fetch_and_op: counter %lld, want %zu",
			     (long long)w64[0], nfop * nranks);
		CK(MPI_Win_unlock(0, win));
		{
			uint8_t *seen = calloc(nfop * nranks, 1);

			for (size_t i = 0; i < nfop * nranks; i++) {
				if (got[i] < 0 || (size_t)got[i] >= nfop * nranks ||
				    seen[got[i]]++) {
					fail("MPI_Fetch_and_op: value %lld fetched twice or out of range",
					     (long long)got[i]);
					break;
				}
			}
			free(seen);
		}
	} else {
		CK(MPI_Gather(got, (int)nfop, MPI_INT64_T, NULL, 0,
			      MPI_INT64_T, 0, MPI_COMM_WORLD));
	}
	free(got);
	point("MPI_Fetch_and_op SUM on rank 0 under lock/unlock: %zu each, every value once",
	      nfop);

	/* passive target: exclusive lock, put to the next rank, get back */
	{
		int t = (rank + 1) % nranks, from = (rank - 1 + nranks) % nranks;
		uint8_t *tmp = galloc(blk);

		MPI_Barrier(MPI_COMM_WORLD);
		fill(tmp, blk, seed3(rank, 12, blk));
		CK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
		CK(MPI_Put(tmp, (int)blk, MPI_BYTE, t, 0, (int)blk, MPI_BYTE, win));
		CK(MPI_Win_unlock(t, win));
		MPI_Barrier(MPI_COMM_WORLD);
		CK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
		check(mem, blk, seed3(from, 12, blk), "MPI_Put under lock");
		CK(MPI_Win_unlock(rank, win));
		MPI_Barrier(MPI_COMM_WORLD);
		memset(tmp, 0, blk);
		CK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
		CK(MPI_Get(tmp, (int)blk, MPI_BYTE, t, 0, (int)blk, MPI_BYTE, win));
		CK(MPI_Win_unlock(t, win));
		check(tmp, blk, seed3(rank, 12, blk), "MPI_Get under lock");
		guard_ok(tmp, blk, "MPI_Get under lock");
		free(tmp);
	}
	point("MPI_Put and MPI_Get of %zu B under lock/unlock", blk);
	CK(MPI_Win_free(&win));
	free(v);
}
