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
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GUARD 64
#define GUARD_BYTE 0xa5

static int rank, nranks, iters = 20, npoints, nfailed;
static size_t max_bytes = 16u << 20;
static bool local_ok;

static void fail(const char *fmt, ...)
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

/* one TAP point: what every rank saw since the last one */
static void point(const char *fmt, ...)
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

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t seed3(uint64_t a, uint64_t b, uint64_t c)
{
	return (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xbf58476d1ce4e5b9ull) ^
	       (c * 0x94d049bb133111ebull) ^ 0x5851f42d4c957f2dull;
}

/* the bytes of message "seed": 8 at a time from a xorshift stream */
static void fill(void *buf, size_t n, uint64_t seed)
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

static bool check(const void *buf, size_t n, uint64_t seed, const char *what)
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
static uint8_t *galloc(size_t n)
{
	uint8_t *p = malloc(n + GUARD);

	if (!p) {
		fprintf(stderr, "mpi_test: out of memory (%zu bytes)\n", n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	memset(p + n, GUARD_BYTE, GUARD);
	return p;
}

static bool guard_ok(const uint8_t *p, size_t n, const char *what)
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

static void count_is(const MPI_Status *st, size_t n, const char *what)
{
	int c = -1;

	MPI_Get_count(st, MPI_BYTE, &c);
	if (c < 0 || (size_t)c != n)
		fail("%s: MPI_Get_count %d, sent %zu", what, c, n);
}

static size_t clamp(size_t n)
{
	return n < max_bytes ? n : max_bytes;
}

/* the pair partner of the two-rank cases; -1 leaves a rank out */
static int partner(void)
{
	int p = rank ^ 1;

	return p < nranks ? p : -1;
}

/* one message of n bytes from "from" to "to", checked at "to" */
static void xfer(int from, int to, size_t n, int tag, uint64_t seed,
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

static void t_pingpong(void)
{
	int peer = partner();
	int lo = rank < peer ? rank : peer, hi = lo ^ 1;
	uint8_t *sbuf = galloc(max_bytes + 1), *rbuf = galloc(max_bytes + 1);

	for (int k = -1; ((size_t)1 << (k < 0 ? 0 : k)) <= max_bytes; k++) {
		size_t p = (size_t)1 << (k < 0 ? 0 : k);
		size_t sizes[3] = { p - 1, p, p + 1 };
		int ns = k < 0 ? 1 : 3;

		if (k < 0)
			sizes[0] = 0;
		for (int s = k == 0 ? 1 : 0; s < ns && peer >= 0; s++) {
			size_t n = sizes[s];
			int reps = n <= 65536 ? iters : (int)(iters * 65536 / n);

			if (n > max_bytes)
				continue;
			if (reps < 2)
				reps = 2;
			for (int i = 0; i < reps; i++) {
				xfer(lo, hi, n, i & 7, seed3(n, i, lo), sbuf,
				     rbuf);
				xfer(hi, lo, n, i & 7, seed3(n, i, hi), sbuf,
				     rbuf);
			}
		}
		if (k < 0)
			point("pingpong 0 B");
		else if (k == 0)
			point("pingpong 1, 2 B");
		else
			point("pingpong %zu, %zu, %zu B", p - 1, p,
			      p + 1 <= max_bytes ? p + 1 : p);
	}
	free(sbuf);
	free(rbuf);
}

/* the i-th message of the "any" case: its size and tag */
static size_t any_size(int i)
{
	static const size_t sz[] = { 0, 8, 1000, 65536, 300001 };

	return clamp(sz[i % 5]);
}

static void t_any(void)
{
	int m = iters;
	enum { tags = 5 };
	size_t big = clamp(300001);
	uint8_t *buf = galloc(big);
	MPI_Status st;

	/* ranks > 0 each send m messages; rank 0 takes them with ANY/ANY */
	if (rank) {
		MPI_Request *rq = calloc(m, sizeof(*rq));
		uint8_t **b = calloc(m, sizeof(*b));

		for (int i = 0; i < m; i++) {
			b[i] = galloc(any_size(i));
			fill(b[i], any_size(i), seed3(rank, i, 1));
			CK(MPI_Isend(b[i], (int)any_size(i), MPI_BYTE, 0,
				     100 + i % 7, MPI_COMM_WORLD, &rq[i]));
		}
		CK(MPI_Waitall(m, rq, MPI_STATUSES_IGNORE));
		for (int i = 0; i < m; i++)
			free(b[i]);
		free(b);
		free(rq);
	} else {
		int *next = calloc(nranks, sizeof(*next));

		for (int k = 0; k < m * (nranks - 1); k++) {
			int src, i;

			CK(MPI_Recv(buf, (int)(big + GUARD), MPI_BYTE,
				    MPI_ANY_SOURCE, MPI_ANY_TAG,
				    MPI_COMM_WORLD, &st));
			src = st.MPI_SOURCE;
			if (src <= 0 || src >= nranks) {
				fail("ANY_SOURCE: status source %d", src);
				break;
			}
			i = next[src]++;
			if (st.MPI_TAG != 100 + i % 7)
				fail("ANY_TAG: message %d of %d has tag %d, not %d (order)",
				     i, src, st.MPI_TAG, 100 + i % 7);
			count_is(&st, any_size(i), "ANY_SOURCE, ANY_TAG");
			check(buf, any_size(i), seed3(src, i, 1),
			      "ANY_SOURCE, ANY_TAG");
		}
		free(next);
	}
	point("MPI_ANY_SOURCE, MPI_ANY_TAG: order per source, status, data");

	/* ANY_SOURCE for tags taken in reverse order of sending */
	if (rank) {
		MPI_Request rq[5];
		uint8_t *b[5];

		for (int t = 0; t < tags; t++) {
			size_t n = clamp(t * 40000 + 3);

			b[t] = galloc(n);
			fill(b[t], n, seed3(rank, t, 2));
			CK(MPI_Isend(b[t], (int)n, MPI_BYTE, 0, 200 + t,
				     MPI_COMM_WORLD, &rq[t]));
		}
		CK(MPI_Waitall(tags, rq, MPI_STATUSES_IGNORE));
		for (int t = 0; t < tags; t++)
			free(b[t]);
	} else {
		for (int t = tags - 1; t >= 0; t--) {
			size_t n = clamp(t * 40000 + 3);
			int seen = 0;

			for (int k = 1; k < nranks; k++) {
				CK(MPI_Recv(buf, (int)(big + GUARD), MPI_BYTE,
					    MPI_ANY_SOURCE, 200 + t,
					    MPI_COMM_WORLD, &st));
				if (st.MPI_SOURCE <= 0 ||
				    st.MPI_SOURCE >= nranks ||
				    (seen & 1 << st.MPI_SOURCE)) {
					fail("ANY_SOURCE tag %d: source %d",
					     200 + t, st.MPI_SOURCE);
					continue;
				}
				seen |= 1 << st.MPI_SOURCE;
				count_is(&st, n, "ANY_SOURCE, one tag");
				check(buf, n, seed3(st.MPI_SOURCE, t, 2),
				      "ANY_SOURCE, one tag");
			}
		}
	}
	point("MPI_ANY_SOURCE with a tag, tags taken in reverse order");

	/* ANY_TAG from one source at a time, sources in reverse order */
	if (rank) {
		MPI_Request rq[5];

		for (int t = 0; t < tags; t++) {
			fill(buf + t * 100, 100, seed3(rank, t, 3));
			CK(MPI_Isend(buf + t * 100, 100, MPI_BYTE, 0,
				     300 + (t * 3) % tags, MPI_COMM_WORLD,
				     &rq[t]));
		}
		CK(MPI_Waitall(tags, rq, MPI_STATUSES_IGNORE));
	} else {
		for (int src = nranks - 1; src > 0; src--) {
			for (int t = 0; t < tags; t++) {
				CK(MPI_Recv(buf, 100 + GUARD, MPI_BYTE, src,
					    MPI_ANY_TAG, MPI_COMM_WORLD, &st));
				if (st.MPI_SOURCE != src ||
				    st.MPI_TAG != 300 + (t * 3) % tags)
					fail("ANY_TAG from %d: message %d: source %d tag %d",
					     src, t, st.MPI_SOURCE, st.MPI_TAG);
				check(buf, 100, seed3(src, t, 3),
				      "ANY_TAG from one source");
			}
		}
	}
	point("MPI_ANY_TAG from each source, sources in reverse order");
	free(buf);
}

/* wait until a message matches, bounded: an MPI_Iprobe loop */
static bool iprobe_wait(int src, int tag, MPI_Status *st)
{
	double t0 = now();
	int flag = 0;

	while (!flag && now() - t0 < 60) {
		CK(MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, st));
		if (!local_ok)
			return false;
	}
	if (!flag)
		fail("MPI_Iprobe(%d, %d): nothing in 60 s", src, tag);
	return flag;
}

/* the result of one part of a case, for a point taken later */
static bool part(void)
{
	bool ok = local_ok;

	local_ok = true;
	return ok;
}

static void t_probe(void)
{
	int peer = partner(), flag = 0;
	size_t na = clamp(1 << 20), nb = 0, nc = clamp(100000), nd = 17;
	uint8_t *a = galloc(na), *b = galloc(nc), *c = galloc(nc),
		*d = galloc(nd);
	bool ok[3] = { true, true, true };
	MPI_Status st;
	MPI_Message msg;
	MPI_Request rq[4];

	/* the even rank sends A and B (tag 5), C (6), D (7); the points
	 * are taken at the end, when all of them are received */
	if (peer < 0)
		goto out;
	if (!(rank & 1)) {
		fill(a, na, seed3(peer, 'A', 4));
		fill(b, nb, seed3(peer, 'B', 4));
		fill(c, nc, seed3(peer, 'C', 4));
		fill(d, nd, seed3(peer, 'D', 4));
		CK(MPI_Isend(a, (int)na, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &rq[0]));
		CK(MPI_Isend(b, (int)nb, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &rq[1]));
		CK(MPI_Isend(c, (int)nc, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &rq[2]));
		CK(MPI_Isend(d, (int)nd, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[3]));
		CK(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
		goto out;
	}
	/* C (tag 6) behind A and B (tag 5) */
	if (iprobe_wait(peer, 6, &st)) {
		if (st.MPI_SOURCE != peer || st.MPI_TAG != 6)
			fail("MPI_Iprobe: source %d tag %d", st.MPI_SOURCE,
			     st.MPI_TAG);
		count_is(&st, nc, "MPI_Iprobe");
		memset(c, 0, nc);
		CK(MPI_Recv(c, (int)nc, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &st));
		check(c, nc, seed3(rank, 'C', 4), "MPI_Recv after MPI_Iprobe");
	}
	ok[0] = part();

	/* A is Mprobe'd: the next receive of tag 5 gets B */
	CK(MPI_Mprobe(peer, 5, MPI_COMM_WORLD, &msg, &st));
	count_is(&st, na, "MPI_Mprobe");
	memset(b, 0x11, nc + GUARD);
	CK(MPI_Recv(b, (int)nc, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &st));
	count_is(&st, nb, "MPI_Recv after MPI_Mprobe: the second message");
	memset(a, 0, na);
	CK(MPI_Mrecv(a, (int)na, MPI_BYTE, &msg, &st));
	if (msg != MPI_MESSAGE_NULL)
		fail("MPI_Mrecv left the message handle set");
	count_is(&st, na, "MPI_Mrecv");
	check(a, na, seed3(rank, 'A', 4), "MPI_Mrecv");
	ok[1] = part();

	flag = 0;
	for (double t0 = now(); !flag && now() - t0 < 60 && local_ok;)
		CK(MPI_Improbe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, &msg,
			       &st));
	if (!flag) {
		fail("MPI_Improbe: nothing in 60 s");
	} else {
		count_is(&st, nd, "MPI_Improbe");
		memset(d, 0, nd);
		CK(MPI_Imrecv(d, (int)nd, MPI_BYTE, &msg, &rq[0]));
		CK(MPI_Wait(&rq[0], &st));
		check(d, nd, seed3(rank, 'D', 4), "MPI_Imrecv");
	}
	CK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
	if (flag)
		fail("MPI_Iprobe: a message (tag %d) where none was sent",
		     st.MPI_TAG);
	ok[2] = part();
out:
	local_ok = ok[0] && local_ok;
	point("MPI_Iprobe: source, tag, count; then MPI_Recv");
	local_ok = ok[1];
	point("MPI_Mprobe takes a message out of matching; MPI_Mrecv");
	local_ok = ok[2];
	point("MPI_Improbe, MPI_Imrecv; MPI_Iprobe of nothing");
	free(a);
	free(b);
	free(c);
	free(d);
}

static void t_ssend(void)
{
	static const size_t sizes[] = { 0, 64, 1 << 20 };
	int peer = partner();
	size_t big = clamp(1 << 20);
	uint8_t *buf = galloc(big);
	MPI_Status st;

	for (int s = 0; s < 3 && peer >= 0; s++) {
		size_t n = clamp(sizes[s]);
		char what[64];

		snprintf(what, sizeof(what), "MPI_Issend of %zu B", n);
		if (!(rank & 1)) {
			MPI_Request rq;
			int done = 0;

			fill(buf, n, seed3(rank, n, 5));
			CK(MPI_Issend(buf, (int)n, MPI_BYTE, peer, 20,
				      MPI_COMM_WORLD, &rq));
			for (double t0 = now(); now() - t0 < 0.1 && !done;)
				CK(MPI_Test(&rq, &done, MPI_STATUS_IGNORE));
			if (done)
				fail("%s: complete before the receive was posted",
				     what);
			CK(MPI_Send(NULL, 0, MPI_BYTE, peer, 21, MPI_COMM_WORLD));
			if (!done)
				CK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		} else {
			CK(MPI_Recv(NULL, 0, MPI_BYTE, peer, 21, MPI_COMM_WORLD,
				    MPI_STATUS_IGNORE));
			memset(buf, 0, n + GUARD);
			memset(buf + n, GUARD_BYTE, GUARD);
			CK(MPI_Recv(buf, (int)(n + GUARD), MPI_BYTE, peer, 20,
				    MPI_COMM_WORLD, &st));
			count_is(&st, n, what);
			check(buf, n, seed3(peer, n, 5), what);
			guard_ok(buf, n, what);
		}
	}
	point("MPI_Issend completes only once the receive matched");

	for (int i = 0; i < iters && peer >= 0; i++) {
		size_t n = clamp((size_t)i * 7919);

		if (rank & 1) {
			fill(buf, n, seed3(rank, i, 6));
			CK(MPI_Ssend(buf, (int)n, MPI_BYTE, peer, 22,
				     MPI_COMM_WORLD));
		} else {
			CK(MPI_Recv(buf, (int)(n + GUARD), MPI_BYTE, peer, 22,
				    MPI_COMM_WORLD, &st));
			count_is(&st, n, "MPI_Ssend");
			check(buf, n, seed3(peer, i, 6), "MPI_Ssend");
		}
	}
	point("MPI_Ssend, %d sizes", iters);
	free(buf);
}

static size_t storm_size(int tag)
{
	return clamp(tag % 8 == 7 ? 70000 + (size_t)tag : (size_t)(tag * 37) % 2000);
}

/* a permutation of 0..k-1: i -> (a * i + 3) mod k, a made coprime to k */
static int perm(int i, int k, int a)
{
	for (;;) {
		int x = a, y = k;

		while (y) {
			int t = x % y;

			x = y;
			y = t;
		}
		if (x == 1)
			break;
		a++;
	}
	return (int)(((long)a * i + 3) % k);
}

static void storm(bool unexpected)
{
	int k = iters * 10, np = nranks - 1;
	MPI_Request *srq = calloc((size_t)np * k, sizeof(*srq));
	MPI_Request *rrq = calloc((size_t)np * k, sizeof(*rrq));
	MPI_Status *st = calloc((size_t)np * k, sizeof(*st));
	uint8_t **sb = calloc((size_t)np * k, sizeof(*sb));
	uint8_t **rb = calloc((size_t)np * k, sizeof(*rb));
	const char *what = unexpected ? "storm, unexpected first" :
					"storm, receives first";

	for (int j = 0; j < np; j++) {
		int peer = (rank + 1 + j) % nranks;

		for (int i = 0; i < k; i++) {
			int tag = perm(i, k, 7);
			size_t n = storm_size(tag);

			sb[j * k + i] = galloc(n);
			fill(sb[j * k + i], n, seed3(rank, peer, tag));
			rb[j * k + i] = NULL;
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		bool post_recv = pass == (unexpected ? 1 : 0);

		if (pass == 1)
			MPI_Barrier(MPI_COMM_WORLD);
		for (int j = 0; j < np; j++) {
			int to = (rank + 1 + j) % nranks;
			int from = (rank - 1 - j + nranks) % nranks;

			for (int i = 0; i < k; i++) {
				int x = j * k + i;

				if (post_recv) {
					/* receives in another order again */
					int tag = perm(i, k, 11);

					rb[x] = galloc(storm_size(tag));
					memset(rb[x], 0, storm_size(tag));
					CK(MPI_Irecv(rb[x], (int)(storm_size(tag) + GUARD),
						     MPI_BYTE, from, tag,
						     MPI_COMM_WORLD, &rrq[x]));
				} else {
					int tag = perm(i, k, 7);

					CK(MPI_Isend(sb[x], (int)storm_size(tag),
						     MPI_BYTE, to, tag,
						     MPI_COMM_WORLD, &srq[x]));
				}
			}
		}
	}
	CK(MPI_Waitall(np * k, rrq, st));
	CK(MPI_Waitall(np * k, srq, MPI_STATUSES_IGNORE));
	for (int j = 0; j < np && local_ok; j++) {
		int from = (rank - 1 - j + nranks) % nranks;

		for (int i = 0; i < k && local_ok; i++) {
			int x = j * k + i, tag = perm(i, k, 11);

			if (st[x].MPI_SOURCE != from || st[x].MPI_TAG != tag)
				fail("%s: status source %d tag %d, not %d %d",
				     what, st[x].MPI_SOURCE, st[x].MPI_TAG,
				     from, tag);
			count_is(&st[x], storm_size(tag), what);
			check(rb[x], storm_size(tag), seed3(from, rank, tag),
			      what);
			guard_ok(rb[x], storm_size(tag), what);
		}
	}
	for (int x = 0; x < np * k; x++) {
		free(sb[x]);
		free(rb[x]);
	}
	free(sb);
	free(rb);
	free(st);
	free(srq);
	free(rrq);
	point("%s: %d messages with each of %d peers, Waitall", what, k, np);
}

static void t_storm(void)
{
	storm(false);
	storm(true);
}

static void t_cancel(void)
{
	int peer = partner(), flag = 0;
	uint8_t *a = galloc(4096), *b = galloc(4096);
	MPI_Request rq;
	MPI_Status st;

	if (peer < 0)
		goto out;
	/* nobody sends tag 900 yet: the receive is cancelled */
	memset(a, 0x3c, 4096);
	CK(MPI_Irecv(a, 4096, MPI_BYTE, MPI_ANY_SOURCE, 900, MPI_COMM_WORLD, &rq));
	CK(MPI_Cancel(&rq));
	CK(MPI_Wait(&rq, &st));
	CK(MPI_Test_cancelled(&st, &flag));
	if (!flag)
		fail("MPI_Cancel of a posted receive: not cancelled");
	MPI_Barrier(MPI_COMM_WORLD);
	/* the message sent now goes to the next receive */
	fill(b, 4096, seed3(rank, 900, 7));
	CK(MPI_Sendrecv_replace(b, 4096, MPI_BYTE, peer, 900, peer, 900,
				MPI_COMM_WORLD, &st));
	check(b, 4096, seed3(peer, 900, 7), "the receive after a cancelled one");
	for (int i = 0; i < 4096; i++) {
		if (a[i] != 0x3c) {
			fail("the cancelled receive's buffer written at %d", i);
			break;
		}
	}
	point("MPI_Cancel of a posted receive: cancelled, buffer untouched");

	/* matched (the peer's MPI_Ssend returned) before the cancel */
	if (rank & 1) {
		fill(b, 1000, seed3(rank, 901, 7));
		CK(MPI_Ssend(b, 1000, MPI_BYTE, peer, 901, MPI_COMM_WORLD));
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		CK(MPI_Irecv(a, 1000, MPI_BYTE, peer, 901, MPI_COMM_WORLD, &rq));
		MPI_Barrier(MPI_COMM_WORLD);
		CK(MPI_Cancel(&rq));
		CK(MPI_Wait(&rq, &st));
		CK(MPI_Test_cancelled(&st, &flag));
		if (flag)
			fail("MPI_Cancel of a matched receive: cancelled");
		else
			check(a, 1000, seed3(peer, 901, 7),
			      "a receive matched before MPI_Cancel");
	}
	point("MPI_Cancel of a matched receive: completes with the data");
out:
	free(a);
	free(b);
}

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

static void t_coll(void)
{
	t_barrier();
	t_bcast();
	t_allreduce();
	t_alltoallv();
}

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

static void t_rma(void)
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
