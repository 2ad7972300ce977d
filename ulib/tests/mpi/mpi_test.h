/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of mpi_test (mpi_test.c: the helpers, the case table and
 * main; mpi_p2p.c, mpi_coll.c, mpi_rma.c: the cases) share: the run's
 * parameters, TAP points that pass when every rank passed, messages of
 * known bytes and guard zones.
 */
#ifndef KFAB_MPI_TEST_H
#define KFAB_MPI_TEST_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GUARD 64
#define GUARD_BYTE 0xa5

extern int rank, nranks, iters;
extern size_t max_bytes;
/* this rank saw nothing wrong since the last point */
extern bool local_ok;

__attribute__((format(printf, 1, 2)))
void fail(const char *fmt, ...);

#define CK(call)							\
	do {								\
		int rc_ = (call);					\
		if (rc_ != MPI_SUCCESS) {				\
			char s_[MPI_MAX_ERROR_STRING];			\
			int n_;						\
			MPI_Error_string(rc_, s_, &n_);			\
			fail("%s:%d: %s: %s", __FILE__, __LINE__, #call, s_); \
		}							\
	} while (0)

__attribute__((format(printf, 1, 2)))
void point(const char *fmt, ...);
double now(void);
uint64_t seed3(uint64_t a, uint64_t b, uint64_t c);
void fill(void *buf, size_t n, uint64_t seed);
bool check(const void *buf, size_t n, uint64_t seed, const char *what);
uint8_t *galloc(size_t n);
bool guard_ok(const uint8_t *p, size_t n, const char *what);
void count_is(const MPI_Status *st, size_t n, const char *what);
size_t clamp(size_t n);
int partner(void);
void xfer(int from, int to, size_t n, int tag, uint64_t seed,
	  uint8_t *sbuf, uint8_t *rbuf);

/* the cases */
void t_pingpong(void);
void t_any(void);
void t_probe(void);
void t_ssend(void);
void t_storm(void);
void t_cancel(void);
void t_coll(void);
void t_rma(void);

#endif /* KFAB_MPI_TEST_H */
