// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_test's two-sided cases (mpi_test.c has the list): pingpong, any,
 * probe, ssend, storm, cancel.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_test.h"

void t_pingpong(void)
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

void t_any(void)
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

void t_probe(void)
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

void t_ssend(void)
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

void t_storm(void)
{
	storm(false);
	storm(true);
}

void t_cancel(void)
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
