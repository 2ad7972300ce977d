// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_bench: MPI latency and bandwidth between ranks 0 and 1, for the
 * figures of scripts/mpi-bench (not a test: it checks nothing).
 *
 *   mpirun -np 2 ... build/mpi/mpi_bench [-s SIZES] [-t SECONDS] [-w WINDOW]
 *
 * For each size (comma-separated, k/m suffixes; default 8,64k,1m,4m) it
 * prints two lines on rank 0:
 *   lat SIZE USEC   half the median round trip of MPI_Send/MPI_Recv
 *   bw  SIZE MB/s   the median over windows of WINDOW (default 64)
 *                   MPI_Isend of SIZE, MPI_Waitall and a zero-byte reply:
 *                   WINDOW * SIZE over its time, 10^6 bytes/s
 * Medians, not means: on a shared machine a rank that loses its core for
 * a time slice makes a few samples a thousand times longer. Each figure
 * runs about SECONDS (default 0.5) after a warm-up of a tenth of that.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank;
/* rank 0's time of each round, when not NULL */
static double *samples;

static size_t parse_size(const char *s)
{
	char *end;
	size_t n = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		n <<= 10;
	else if (*end == 'm' || *end == 'M')
		n <<= 20;
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* rounds of fn that take about "secs", agreed by both ranks */
static long calibrate(double (*fn)(char *, size_t, long, int), char *buf,
		      size_t n, int w, double secs)
{
	long r = 1;
	double t;

	for (;;) {
		t = fn(buf, n, r, w);
		MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		if (t >= secs / 10 || r >= 1L << 30)
			break;
		r *= 4;
	}
	return (long)(r * secs / 10 / (t > 0 ? t : 1e-9)) * 10 + 1;
}

static double pingpong(char *buf, size_t n, long rounds, int w)
{
	double t0 = MPI_Wtime(), t = t0;

	(void)w;
	for (long i = 0; i < rounds; i++) {
		if (samples && i) {
			samples[i - 1] = MPI_Wtime() - t;
			t += samples[i - 1];
		}
		if (rank == 0) {
			MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return MPI_Wtime() - t0;
}

static double stream(char *buf, size_t n, long rounds, int w)
{
	MPI_Request rq[256];
	double t0 = MPI_Wtime(), t = t0;

	for (long i = 0; i < rounds; i++) {
		if (samples && i) {
			samples[i - 1] = MPI_Wtime() - t;
			t += samples[i - 1];
		}
		for (int k = 0; k < w; k++) {
			if (rank == 0)
				MPI_Isend(buf, (int)n, MPI_BYTE, 1, 2,
					  MPI_COMM_WORLD, &rq[k]);
			else
				MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 2,
					  MPI_COMM_WORLD, &rq[k]);
		}
		MPI_Waitall(w, rq, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		else
			MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
	}
	return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
	char list[256] = "8,64k,1m,4m";
	double secs = 0.5;
	int w = 64, n, o;
	char *buf, *tok, *save;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	while ((o = getopt(argc, argv, "s:t:w:")) != -1) {
		switch (o) {
		case 's':
			snprintf(list, sizeof(list), "%s", optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'w':
			w = atoi(optarg);
			break;
		default:
			n = 0;
		}
	}
	if (n != 2 || w < 1 || w > 256 || secs <= 0) {
		if (rank == 0)
			fprintf(stderr, "usage: mpirun -np 2 mpi_bench [-s SIZES] [-t SECONDS] [-w 1..256]\n");
		MPI_Finalize();
		return 2;
	}
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		size_t sz = parse_size(tok);
		long r;

		buf = calloc(1, sz ? sz : 1);
		if (!buf || sz > (1u << 30))
			MPI_Abort(MPI_COMM_WORLD, 2);
		pingpong(buf, sz, 10, 1);
		r = calibrate(pingpong, buf, sz, 1, secs);
		samples = calloc((size_t)r, sizeof(*samples));
		MPI_Barrier(MPI_COMM_WORLD);
		pingpong(buf, sz, r + 1, 1);
		if (rank == 0)
			printf("lat %zu %.3f\n", sz, median(samples, r) / 2 * 1e6);
		free(samples);
		samples = NULL;
		r = calibrate(stream, buf, sz, w, secs);
		samples = calloc((size_t)r, sizeof(*samples));
		MPI_Barrier(MPI_COMM_WORLD);
		stream(buf, sz, r + 1, w);
		if (rank == 0)
			printf("bw %zu %.1f\n", sz,
			       (double)sz * w / median(samples, r) / 1e6);
		free(samples);
		samples = NULL;
		fflush(stdout);
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
