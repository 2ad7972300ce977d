// SPDX-License-Identifier: GPL-2.0
/*
 * efa_dgram_msg_test: messages through kfab_efa's FI_EP_DGRAM endpoint
 * between two processes (efa_dgram_rank.h), on device efa0 of the backend
 * FI_KFAB_BACKEND names: every size 0..MTU both ways, byte checks, the
 * prefix holding the sender's name (rank 1 replies to the fi_av_insert()
 * of it); a message larger than the receive (FI_ETRUNC); RNR
 * (-FI_EAGAIN) while the peer has no receive posted; fi_cq_sread() and
 * FI_WAIT_FD woken by the other process; fi_sendv/fi_sendmsg into
 * fi_recvv/fi_recvmsg of 1 to iov_limit iovecs both ways, the prefix in
 * the first, nothing but the payload moved; fi_cancel(); calls refused
 * (fi_inject, no prefix space, past the MTU, iov_limit + 1 iovecs, no
 * descriptor, counters, selective completion, FI_EP_RDM endpoints).
 *
 * Needs FI_PROVIDER_PATH to hold libkfab_efa-fi.so; exit 4 (skip) when
 * fi_getinfo() has no kfab_efa FI_EP_DGRAM.
 *
 *   FI_PROVIDER_PATH=build/prov FI_KFAB_BACKEND=shm \
 *           build/ulib-tests/efa_dgram_msg_test
 */
#define _GNU_SOURCE
#include "efa_dgram_rank.h"

/* ------------------------------------------------------------------ */
/* cases */

/* Every size both ways; rank 1 replies to the name in the prefix. */
static void case_sizes(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t reply = FI_ADDR_NOTAVAIL;
	size_t bad = 0, badname = 0, first_bad = 0;
	int ret = 0;

	for (size_t n = 0; n <= R.mtu && !ret; n++) {
		if (R.id == 0) {
			ret = post_recv(&R, R.mtu, &e);
			xp_fill(R.sbuf + PREFIX, n, (uint32_t)n);
			if (!ret)
				ret = send_wait(&R, n, R.peer);
			if (!ret)
				ret = cq_wait(R.obj.cq, &e, &err) == 1 ?
				      0 : -FI_EIO;
		} else {
			ret = post_recv(&R, R.mtu, &e);
			if (!ret)
				ret = fi_cq_sread(R.obj.cq, &e, 1, NULL,
						  TIMEOUT_MS) == 1 ? 0 : -FI_EIO;
		}
		if (ret)
			break;
		if (e.len != PREFIX + n || !(e.flags & FI_RECV) ||
		    !xp_check(R.buf + PREFIX, n,
			      (uint32_t)n ^ (R.id ? 0 : 0x5a5a5a5a))) {
			if (!bad++)
				first_bad = n;
		}
		if (memcmp(R.buf, R.peer_name, NAMELEN))
			badname++;
		if (R.id == 1) {
			if (reply == FI_ADDR_NOTAVAIL &&
			    fi_av_insert(R.obj.av, R.buf, 1, &reply, 0,
					 NULL) != 1)
				ret = -FI_EINVAL;
			xp_fill(R.sbuf + PREFIX, n, (uint32_t)n ^ 0x5a5a5a5a);
			if (!ret)
				ret = send_wait(&R, n, reply);
		}
	}
	point(!ret, "every size 0..%zu both ways: no call failed (%d)", R.mtu,
	      ret);
	point(!bad, "every size: len = prefix + payload, bytes intact (%zu bad, first %zu)",
	      bad, first_bad);
	point(!badname, "the prefix holds the sender's name (%zu wrong)",
	      badname);
	if (R.id == 1)
		point(reply != FI_ADDR_NOTAVAIL,
		      "the prefix's name inserts into the AV; the replies went to it");
}

static void case_trunc(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	uint8_t *save = R.buf;
	int ret;

	if (R.id == 1) {
		ret = post_recv(&R, 10, &e);
		sync_send(0);
		ret = ret ? ret : cq_wait(R.obj.cq, &e, &err);
		point(ret == -FI_ETRUNC && err.olen == 90 &&
		      err.len == PREFIX + 10 && err.op_context == &e &&
		      xp_check(R.buf + PREFIX, 10, 77),
		      "100 bytes into 10: FI_ETRUNC, olen %zu, len %zu, the 10 bytes kept",
		      err.olen, err.len);
		sync_send(0);
		return;
	}
	sync_wait(NULL);
	xp_fill(R.sbuf + PREFIX, 100, 77);
	TAP_EQ(send_wait(&R, 100, R.peer), 0, "a send of 100 bytes completes");
	sync_wait(NULL);
	R.buf = save;
}

static void case_rnr(void)
{
	struct fi_cq_msg_entry e;
	int eagain = 0, ret;

	if (R.id == 1) {
		sync_send(0);	/* nothing posted */
		sync_wait(NULL);
		ret = post_recv(&R, R.mtu, &e);
		sync_send(0);
		ret = ret ? ret : (fi_cq_sread(R.obj.cq, &e, 1, NULL,
					       TIMEOUT_MS) == 1 ? 0 : -FI_EIO);
		point(!ret && e.len == PREFIX + 5,
		      "after RNR, the retried send arrives");
		sync_send(0);
		return;
	}
	sync_wait(NULL);
	for (int i = 0; i < 20; i++) {
		ret = (int)fi_send(R.obj.ep, R.sbuf, PREFIX + 5, R.desc, R.peer,
				   NULL);
		eagain += ret == -FI_EAGAIN;
		fi_cq_read(R.obj.cq, &e, 0);
	}
	TAP_EQ(eagain, 20, "no receive posted at the peer: -FI_EAGAIN (RNR), every try");
	sync_send(0);
	sync_wait(NULL);
	TAP_EQ(send_wait(&R, 5, R.peer), 0, "once it posts: the send goes");
	sync_wait(NULL);
}

/* fi_cq_sread() and the FI_WAIT_FD fd woken by the other process. */
static void case_sleep(void)
{
	struct fi_cq_msg_entry e;
	struct fid *cqfid = &R.obj.cq->fid;
	uint64_t t0;
	int fd = -1, ret;

	if (R.id == 1) {
		ret = post_recv(&R, R.mtu, &e);
		sync_send(0);
		t0 = xp_ms();
		ret = ret ? ret : (int)fi_cq_sread(R.obj.cq, &e, 1, NULL,
						   TIMEOUT_MS);
		point(ret == 1 && xp_ms() - t0 >= 150,
		      "fi_cq_sread sleeps until the other process sends (%d, %llu ms)",
		      ret, (unsigned long long)(xp_ms() - t0));
		ret = post_recv(&R, R.mtu, &e);
		ret = ret ? ret : fi_control(&R.obj.cq->fid, FI_GETWAIT, &fd);
		ret = ret ? ret : fi_trywait(R.obj.fabric, &cqfid, 1);
		sync_send(0);
		if (!ret) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			t0 = xp_ms();
			ret = poll(&p, 1, TIMEOUT_MS) == 1 ? 0 : -FI_ETIMEDOUT;
		}
		point(!ret && xp_ms() - t0 >= 150 &&
		      fi_cq_read(R.obj.cq, &e, 1) == 1,
		      "FI_WAIT_FD: fi_trywait 0, poll() woken by the send, then fi_cq_read");
		sync_send(0);
		return;
	}
	for (int i = 0; i < 2; i++) {
		sync_wait(NULL);
		usleep(300000);
		TAP_EQ(send_wait(&R, 1, R.peer), 0, "send %d to the sleeper", i);
	}
	sync_wait(NULL);
}

/* ------------------------------------------------------------------ */
/* several iovecs */

/* iovec arrays of the tests: iov_limit + 1 at least */
#define IOVS		16
/* room a multi-iovec receive has past the payload, left as it was */
#define IOV_EXTRA	100

/*
 * @k iovecs spanning PREFIX + @n bytes from @base on: the prefix and
 * @first bytes of payload in the first (all of them when @k is 1), the
 * rest split unevenly over the others (the third one empty from 4 on),
 * GAP bytes between them.
 */
static void iov_split(const struct rank *r, uint8_t *base, struct iovec *iov,
		      void **desc, size_t k, size_t first, size_t n)
{
	size_t off = 0, left = n - (k == 1 ? n : first);

	for (size_t j = 0; j < k; j++) {
		size_t len = left;

		if (j == 0)
			len = PREFIX + n - left;
		else if (k >= 4 && j == 2)
			len = 0;
		else if (j < k - 1)
			len = left / (j % 2 ? 2 : 3);
		if (j)
			left -= len;
		iov[j].iov_base = base + off;
		iov[j].iov_len = len;
		desc[j] = r->desc;
		off += len + GAP;
	}
}

/* The payload of @iov (what follows the prefix) from or into @flat: its size. */
static size_t iov_flat(const struct iovec *iov, size_t k, uint8_t *flat,
		       bool to_iov)
{
	size_t done = 0;

	for (size_t j = 0; j < k; j++) {
		uint8_t *p = (uint8_t *)iov[j].iov_base + (j ? 0 : PREFIX);
		size_t len = iov[j].iov_len - (j ? 0 : PREFIX);

		if (to_iov)
			memcpy(p, flat + done, len);
		else
			memcpy(flat + done, p, len);
		done += len;
	}
	return done;
}

/* The GAP bytes after each of @iov still GUARD. */
static bool iov_gaps_intact(const struct iovec *iov, size_t k)
{
	for (size_t j = 0; j < k; j++)
		if (!xp_all((uint8_t *)iov[j].iov_base + iov[j].iov_len, GAP,
			    GUARD))
			return false;
	return true;
}

/*
 * Round @k of pass @pass (rank @pass sends): a datagram in @k iovecs
 * through fi_sendv or fi_sendmsg, received in @lim + 1 - @k through
 * fi_recvmsg or fi_recvv, the call alternating with @k and the pass.
 * 0, -FI_E* of a call, or 1 when the receiver found the data wrong.
 */
static int iov_round(size_t k, size_t lim, int pass, uint8_t *flat)
{
	struct iovec iov[IOVS];
	void *desc[IOVS];
	size_t n = k == lim ? R.mtu : 1 + (k * 997) % R.mtu;
	size_t kr = lim + 1 - k, len = 0;
	uint32_t seed = (uint32_t)(k * 31 + (size_t)pass);
	bool alt = (k + (size_t)pass) % 2;
	void *ctx = &kr;
	struct fi_msg msg = iov_msg(iov, desc, kr, FI_ADDR_UNSPEC, ctx);
	int ret;

	if (R.id == pass) {
		memset(R.sbuf, GUARD, R.bufsz / 2);
		iov_split(&R, R.sbuf, iov, desc, k, k % 3 ? n / 5 : 0, n);
		xp_fill(flat, n, seed);
		iov_flat(iov, k, flat, true);
		ret = sync_wait(NULL);
		return ret ? ret : send_iov(&R, iov, desc, k, R.peer,
					    alt ? VIA_SENDV : VIA_SENDMSG);
	}
	memset(R.buf, GUARD, R.bufsz / 2);
	iov_split(&R, R.buf, iov, desc, kr, kr % 2 ? 0 : n / 4,
		  n + IOV_EXTRA);
	ret = (int)(alt ? fi_recvmsg(R.obj.ep, &msg, 0) :
		    fi_recvv(R.obj.ep, iov, desc, kr, FI_ADDR_UNSPEC, ctx));
	sync_send(0);
	if (!ret)
		ret = cq_wait_all(R.obj.cq, &ctx, &len, 1);
	if (ret)
		return ret;
	return len == PREFIX + n &&
	       !memcmp(iov[0].iov_base, R.peer_name, NAMELEN) &&
	       iov_flat(iov, kr, flat, false) == n + IOV_EXTRA &&
	       xp_check(flat, n, seed) && xp_all(flat + n, IOV_EXTRA, GUARD) &&
	       iov_gaps_intact(iov, kr) ? 0 : 1;
}

/*
 * Both ways, every count of iovecs from 1 to iov_limit against the
 * complementary count at the receiver, the largest datagram in the most
 * iovecs; the sender's prefix and gaps not sent, the receiver's gaps and
 * spare room untouched.
 */
static void case_iov(void)
{
	size_t lim = R.obj.info->tx_attr->iov_limit;
	uint8_t *flat = malloc(R.mtu + IOV_EXTRA);

	if (R.id == 0)
		TAP_OK(lim >= 2 && lim < IOVS &&
		       R.obj.info->rx_attr->iov_limit == lim,
		       "iov_limit %zu for sends and receives", lim);
	if (lim < 2 || lim >= IOVS || !flat) {
		free(flat);
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		size_t bad = 0, failed = 0, first = 0;
		int err = 0;

		for (size_t k = 1; k <= lim; k++) {
			int ret = iov_round(k, lim, pass, flat);

			if (ret && !bad && !failed) {
				first = k;
				err = ret;
			}
			bad += ret > 0;
			failed += ret < 0;
		}
		if (R.id == pass)
			point(!failed, "fi_sendv/fi_sendmsg of 1..%zu iovecs, the prefix alone or with payload in the first: sent, completed (first failure: %zu iovecs, %d)",
			      lim, first, err);
		else
			point(!failed && !bad, "fi_recvmsg/fi_recvv of %zu..1 iovecs: len = prefix + payload, the sender's name in the prefix, byte-exact, gaps and spare room untouched (%zu bad, %zu failed, first at %zu)",
			      lim, bad, failed, first);
	}
	free(flat);
}

/* ------------------------------------------------------------------ */
/* rank 0 alone */

static void case_cancel(void)
{
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ctx, ret;

	TAP_EQ(post_recv(&R, R.mtu, &ctx), 0, "a receive posted");
	TAP_EQ(fi_cancel(&R.obj.ep->fid, &ctx), 0, "fi_cancel of it: 0");
	ret = cq_wait(R.obj.cq, &e, &err);
	TAP_OK(ret == -FI_ECANCELED && err.op_context == &ctx &&
	       (err.flags & FI_RECV),
	       "its error completion: FI_ECANCELED, its context (%d)", ret);
	TAP_EQ(fi_cancel(&R.obj.ep->fid, &ctx), -FI_ENOENT,
	       "fi_cancel again: -FI_ENOENT");
}

/* iovec counts and layouts refused; iov_limit of the same taken. */
static void refused_iov(void)
{
	struct iovec iov[IOVS];
	void *desc[IOVS];
	size_t lim = R.obj.info->tx_attr->iov_limit;
	struct fi_msg msg = iov_msg(iov, desc, lim + 1, R.peer, NULL);
	struct fi_cq_msg_entry e;
	struct fi_cq_err_entry err;
	int ctx;

	if (lim + 1 >= IOVS)
		return;
	iov_split(&R, R.sbuf, iov, desc, lim + 1, 10, 1000);
	TAP_EQ(fi_sendv(R.obj.ep, iov, desc, lim + 1, R.peer, NULL), -FI_EINVAL,
	       "fi_sendv of iov_limit + 1 (%zu) iovecs: -FI_EINVAL", lim + 1);
	TAP_EQ(fi_sendmsg(R.obj.ep, &msg, 0), -FI_EINVAL,
	       "fi_sendmsg of iov_limit + 1 iovecs: -FI_EINVAL");
	iov_split(&R, R.buf, iov, desc, lim + 1, 10, 1000);
	msg.addr = FI_ADDR_UNSPEC;
	TAP_EQ(fi_recvv(R.obj.ep, iov, desc, lim + 1, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL, "fi_recvv of iov_limit + 1 iovecs: -FI_EINVAL");
	TAP_EQ(fi_recvmsg(R.obj.ep, &msg, 0), -FI_EINVAL,
	       "fi_recvmsg of iov_limit + 1 iovecs: -FI_EINVAL");
	/* the first iov_limit of the same iovecs are a receive */
	msg.iov_count = lim;
	msg.context = &ctx;
	TAP_EQ(fi_recvmsg(R.obj.ep, &msg, 0), 0,
	       "fi_recvmsg of iov_limit of them: posted");
	TAP_EQ(fi_cancel(&R.obj.ep->fid, &ctx), 0, "and cancelled");
	TAP_EQ(cq_wait(R.obj.cq, &e, &err), -FI_ECANCELED,
	       "its completion: FI_ECANCELED");

	iov_split(&R, R.sbuf, iov, desc, 2, 0, 100);
	iov[0].iov_len = PREFIX - 8;
	TAP_EQ(fi_sendv(R.obj.ep, iov, desc, 2, R.peer, NULL), -FI_EINVAL,
	       "fi_sendv whose first iovec is shorter than the prefix: -FI_EINVAL");
	TAP_EQ(fi_recvv(R.obj.ep, iov, desc, 2, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL,
	       "fi_recvv whose first iovec is shorter than the prefix: -FI_EINVAL");
	iov_split(&R, R.sbuf, iov, desc, lim, 10, R.mtu + 1);
	TAP_EQ(fi_sendv(R.obj.ep, iov, desc, lim, R.peer, NULL), -FI_EMSGSIZE,
	       "fi_sendv of %zu iovecs, one byte past the MTU in all: -FI_EMSGSIZE",
	       lim);
	iov_split(&R, R.buf, iov, desc, 3, 10, 100);
	desc[2] = NULL;
	TAP_EQ(fi_recvv(R.obj.ep, iov, desc, 3, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL,
	       "FI_MR_LOCAL: fi_recvv with no descriptor for its third iovec: -FI_EINVAL");
}

static void case_refused(void)
{
	struct fid_ep *ep2 = NULL;
	struct fid_cntr *cntr = NULL;
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_domain *rdm_dom = NULL;
	struct fi_info *rdm = fi_dupinfo(R.obj.info);

	TAP_EQ(fi_inject(R.obj.ep, R.sbuf, PREFIX + 1, R.peer), -FI_ENOSYS,
	       "fi_inject: -FI_ENOSYS");
	TAP_EQ(fi_send(R.obj.ep, R.sbuf, PREFIX - 8, R.desc, R.peer, NULL),
	       -FI_EINVAL, "a buffer smaller than the prefix: -FI_EINVAL");
	TAP_EQ(fi_send(R.obj.ep, NULL, 0, R.desc, R.peer, NULL), -FI_EINVAL,
	       "no prefix space at all (NULL, 0): -FI_EINVAL");
	TAP_EQ(fi_recv(R.obj.ep, R.buf, 16, R.desc, FI_ADDR_UNSPEC, NULL),
	       -FI_EINVAL, "a receive without room for the prefix: -FI_EINVAL");
	TAP_EQ(fi_send(R.obj.ep, R.sbuf, PREFIX + R.mtu + 1, R.desc, R.peer,
		       NULL),
	       -FI_EMSGSIZE, "one byte past the MTU: -FI_EMSGSIZE");
	TAP_EQ(fi_send(R.obj.ep, R.sbuf, PREFIX + 1, NULL, R.peer, NULL),
	       -FI_EINVAL, "FI_MR_LOCAL: no descriptor: -FI_EINVAL");
	TAP_EQ(fi_send(R.obj.ep, R.sbuf, PREFIX + 1, R.desc, 1000, NULL),
	       -FI_EINVAL, "an fi_addr not in the AV: -FI_EINVAL");
	refused_iov();

	TAP_EQ(fi_endpoint(R.obj.domain, R.obj.info, &ep2, NULL), 0,
	       "a second endpoint");
	if (ep2) {
		TAP_EQ(fi_ep_bind(ep2, &R.obj.cq->fid,
				  FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
		       -FI_EBADFLAGS, "FI_SELECTIVE_COMPLETION: -FI_EBADFLAGS");
		if (!fi_cntr_open(R.obj.domain, &cattr, &cntr, NULL)) {
			TAP_EQ(fi_ep_bind(ep2, &cntr->fid, FI_SEND),
			       -FI_ENOSYS, "a counter: -FI_ENOSYS");
			fi_close(&cntr->fid);
		}
		TAP_EQ(fi_enable(ep2), -FI_ENOAV, "fi_enable without an AV");
		TAP_EQ(fi_close(&ep2->fid), 0, "the second endpoint closes");
	}
	ep2 = NULL;
	rdm->ep_attr->type = FI_EP_RDM;
	TAP_EQ(fi_endpoint(R.obj.domain, rdm, &ep2, NULL), -FI_EINVAL,
	       "fi_endpoint of an FI_EP_RDM info on a -dgrm domain: -FI_EINVAL");
	free(rdm->domain_attr->name);
	rdm->domain_attr->name = strdup("efa0-rdm");
	TAP_EQ(fi_domain(R.obj.fabric, rdm, &rdm_dom, NULL), 0,
	       "domain efa0-rdm opens");
	if (rdm_dom) {
		TAP_EQ(fi_endpoint(rdm_dom, rdm, &ep2, NULL), 0,
		       "fi_endpoint on efa0-rdm: an FI_EP_RDM endpoint");
		if (ep2)
			TAP_EQ(fi_close(&ep2->fid), 0, "it closes");
		fi_close(&rdm_dom->fid);
	}
	fi_freeinfo(rdm);
}

/* Every size, then in step again: rank 1 went through them all. */
static void sizes(void)
{
	case_sizes();
	if (R.id == 0)
		TAP_EQ(sync_wait(NULL), 0, "rank 1 went through every size");
	else
		sync_send(0);
}

/* ------------------------------------------------------------------ */

int main(void)
{
	static const dgram_case_fn both[] = {
		sizes,
		case_trunc,
		case_rnr,
		case_sleep,
		case_iov,
	};
	static const dgram_case_fn alone[] = {
		case_cancel,
		case_refused,
	};

	return dgram_main("efa_dgram_msg_test", both,
			  sizeof(both) / sizeof(both[0]), alone,
			  sizeof(alone) / sizeof(alone[0]));
}
