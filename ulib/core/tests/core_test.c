// SPDX-License-Identifier: GPL-2.0
/*
 * core_test: the provider core objects without an endpoint, through a
 * test transport with kfab_opx's names (core_transport.h): fabric and
 * domain lifetimes, the EQ, memory regions and the key map, object pools,
 * iovec copies, poll sets. core_av_test and core_cq_test cover the AV and
 * the CQ.
 */
#define _GNU_SOURCE
#include "core_transport.h"
#include "core/kfab_rma.h"

/* ------------------------------------------------------------------ */
/* fabric and domain */

static void test_fabric_domain(void)
{
	struct fi_fabric_attr attr = SHM_FABRIC_ATTR(FI_VERSION(1, 17));
	struct fid_fabric *f2;
	struct fid_domain *d;
	struct fi_info *info;
	struct fid_cntr *cntr;
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cntr_attr cntr_attr = { 0 };
	struct fi_tx_attr tx_attr = { 0 };
	struct fi_rx_attr rx_attr = { 0 };
	struct fid_stx *stx;
	static const char *const bad_names[] = {
		"hfi", "hfi01", "hfi1x", "mlx5_0", "hfi1024", NULL,
	};

	/* FI_KFAB_BACKEND, and the fabric named after the backend */
	enum kfab_backend b = KFAB_BACKEND_AUTO;

	setenv("FI_KFAB_BACKEND", "auto", 1);
	TAP_OK(!kfab_backend_get(true, "/dev/x", &b) && b == KFAB_BACKEND_KMOD,
	       "FI_KFAB_BACKEND=auto with the device: kmod");
	TAP_OK(!kfab_backend_get(false, "/dev/x", &b) && b == KFAB_BACKEND_SHM,
	       "FI_KFAB_BACKEND=auto without the device: shm");
	setenv("FI_KFAB_BACKEND", "kmod", 1);
	TAP_OK(!kfab_backend_get(false, "/dev/x", &b) && b == KFAB_BACKEND_KMOD,
	       "FI_KFAB_BACKEND=kmod without the device: kmod");
	setenv("FI_KFAB_BACKEND", "bogus", 1);
	TAP_EQ(kfab_backend_get(true, "/dev/x", &b), -EINVAL,
	       "FI_KFAB_BACKEND=bogus refused");
	TAP_EQ(kfab_fabric_open(&kp, &attr, &f2, NULL), -FI_EINVAL,
	       "fabric: bad FI_KFAB_BACKEND");
	setenv("FI_KFAB_BACKEND", "shm", 1);
	attr.name = "kfab-kmod";
	TAP_EQ(kfab_fabric_open(&kp, &attr, &f2, NULL), -FI_ENODATA,
	       "fabric: kfab-kmod asked, shm in use");
	attr.name = "kfab-shm";
	TAP_EQ(kfab_fabric_open(&kp, &attr, &fabric, NULL), 0,
	       "fabric kfab-shm opens");
	TAP_EQ(fabric->api_version, FI_VERSION(1, 17), "api_version kept");

	/* domains: names, threading, parameters, progress */
	TAP_EQ(domain_open("hfi1", FI_THREAD_DOMAIN, &d), 0, "domain hfi1");
	TAP_OK(to_dom(d)->unit == 1 && !to_dom(d)->lock.on &&
	       to_dom(d)->threading == FI_THREAD_DOMAIN,
	       "hfi1: unit 1, no lock under FI_THREAD_DOMAIN");
	TAP_OK(params_loaded == 1 && to_dom(d)->params,
	       "domain loaded the parameters");
	TAP_EQ(fi_close(&fabric->fid), -FI_EBUSY, "fabric busy with a domain");
	TAP_EQ(fi_close(&d->fid), 0, "domain closes");
	TAP_EQ(params_freed, 1, "parameters freed");
	for (int i = 0; i < (int)(sizeof(bad_names) / sizeof(bad_names[0]));
	     i++)
		TAP_EQ(domain_open(bad_names[i], FI_THREAD_SAFE, &d),
		       -FI_EINVAL, "domain name %s refused",
		       bad_names[i] ? bad_names[i] : "(null)");
	params_fail = 1;
	TAP_EQ(domain_open("hfi0", FI_THREAD_SAFE, &d), -FI_EINVAL,
	       "a parameter error fails fi_domain");
	params_fail = 0;
	info = fi_allocinfo();
	info->domain_attr->name = strdup("hfi0");
	info->domain_attr->data_progress = FI_PROGRESS_AUTO;
	info->domain_attr->threading = FI_THREAD_DOMAIN;
	TAP_EQ(fi_domain(fabric, info, &d, NULL), 0, "FI_PROGRESS_AUTO");
	TAP_OK(to_dom(d)->lock.on &&
	       to_dom(d)->data_progress == FI_PROGRESS_AUTO,
	       "FI_THREAD_DOMAIN with FI_PROGRESS_AUTO: locked");
	fi_close(&d->fid);
	fi_freeinfo(info);

	TAP_EQ(domain_open("hfi0", FI_THREAD_UNSPEC, &domain), 0,
	       "domain hfi0");
	TAP_OK(to_dom(domain)->lock.on &&
	       to_dom(domain)->threading == FI_THREAD_SAFE,
	       "FI_THREAD_UNSPEC: thread safe, locked");
	info = fi_allocinfo();
	TAP_EQ(fi_endpoint(domain, info, &ep, NULL), -FI_ENOSYS,
	       "fi_endpoint reaches kp->ep_open");
	TAP_EQ(ep_opens, 1, "ep_open called once");
	fi_freeinfo(info);
	TAP_EQ(fi_cntr_open(domain, &cntr_attr, &cntr, NULL), 0,
	       "fi_cntr_open");
	TAP_EQ(fi_close(&cntr->fid), 0, "counter closed");
	/* what this transport lacks */
	TAP_EQ(fi_scalable_ep(domain, NULL, &ep, NULL), -FI_ENOSYS,
	       "fi_scalable_ep without kp->sep_open");
	TAP_EQ(fi_stx_context(domain, &tx_attr, &stx, NULL), -FI_ENOSYS,
	       "fi_stx_context: not yet");
	TAP_EQ(fi_srx_context(domain, &rx_attr, &ep, NULL), -FI_ENOSYS,
	       "fi_srx_context: not yet");

	/* an EQ keeps the fabric busy */
	TAP_EQ(fi_eq_open(fabric, &eq_attr, &eq, NULL), 0, "EQ opens");
	TAP_EQ(fi_close(&eq->fid), 0, "EQ closes");
}

/* ------------------------------------------------------------------ */
/* event queue */

struct delayed_write {
	struct fid_eq *eq;
	int ms;
};

static void *writer(void *arg)
{
	struct delayed_write *w = arg;
	struct fi_eq_entry ent = { .data = 99 };

	usleep(w->ms * 1000);
	fi_eq_write(w->eq, FI_NOTIFY, &ent, sizeof(ent), 0);
	return NULL;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_eq(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_entry ent = { .data = 42 }, out;
	struct fi_eq_err_entry err;
	struct delayed_write w;
	struct fid_eq *eq, *eq2;
	char small[4], big[2048];
	pthread_t t;
	uint32_t event;
	double t0;

	attr.wait_obj = FI_WAIT_FD;
	TAP_EQ(fi_eq_open(fabric, &attr, &eq, NULL), -FI_ENOSYS,
	       "EQ with FI_WAIT_FD refused");
	attr.wait_obj = FI_WAIT_UNSPEC;
	TAP_EQ(fi_eq_open(fabric, &attr, &eq, NULL), 0, "EQ opens");
	TAP_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN,
	       "empty EQ");
	TAP_EQ(fi_eq_write(eq, FI_NOTIFY, &ent, sizeof(ent), 0), sizeof(ent),
	       "write returns its length");
	TAP_EQ(fi_eq_write(eq, FI_NOTIFY, &ent, sizeof(ent), FI_PEEK),
	       -FI_EBADFLAGS, "write flags must be 0");
	TAP_EQ(fi_eq_write(eq, FI_NOTIFY, big, sizeof(big), 0), -FI_EINVAL,
	       "oversized event");
	TAP_EQ(fi_eq_read(eq, &event, small, sizeof(small), 0),
	       -FI_ETOOSMALL, "read into 4 bytes");
	memset(&out, 0, sizeof(out));
	TAP_EQ(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
	       sizeof(out), "peek");
	TAP_OK(event == FI_NOTIFY && out.data == 42, "peeked the event");
	memset(&out, 0, sizeof(out));
	TAP_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), sizeof(out),
	       "read after peek");
	TAP_EQ(out.data, 42, "same event");
	TAP_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAGAIN,
	       "consumed");

	/* sread: a timeout, then a wakeup by another thread */
	t0 = now_ms();
	TAP_EQ(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0), -FI_EAGAIN,
	       "sread times out");
	TAP_OK(now_ms() - t0 >= 49, "after 50 ms (%.1f)", now_ms() - t0);
	w.eq = eq;
	w.ms = 20;
	pthread_create(&t, NULL, writer, &w);
	TAP_EQ(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0), sizeof(out),
	       "sread wakes up on a write");
	TAP_EQ(out.data, 99, "the written event");
	pthread_join(t, NULL);

	/* an error from the provider: -FI_EAVAIL, then readerr */
	memset(&err, 0, sizeof(err));
	err.err = FI_EADDRNOTAVAIL;
	err.prov_errno = -FI_EINVAL;
	err.data = 3;
	TAP_EQ(kfab_eq_post(kfab_container_of(eq, struct kfab_eq, eq_fid),
			    FI_AV_COMPLETE, &err, sizeof(err), "bad name"), 0,
	       "post an error");
	TAP_EQ(fi_eq_read(eq, &event, &out, sizeof(out), 0), -FI_EAVAIL,
	       "read: error queued");
	memset(&err, 0, sizeof(err));
	TAP_EQ(fi_eq_readerr(eq, &err, 0), sizeof(err), "readerr");
	TAP_OK(err.err == FI_EADDRNOTAVAIL && err.data == 3 &&
	       !strcmp(err.err_data, "bad name") && err.err_data_size == 9,
	       "error entry and err_data");
	TAP_OK(!strcmp(fi_eq_strerror(eq, err.prov_errno, err.err_data, NULL,
				      0), "bad name"), "EQ strerror");
	TAP_EQ(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN, "no more errors");
	TAP_EQ(fi_close(&eq->fid), 0, "EQ closes");

	attr.wait_obj = FI_WAIT_NONE;
	TAP_EQ(fi_eq_open(fabric, &attr, &eq2, NULL), 0, "FI_WAIT_NONE EQ");
	TAP_EQ(fi_eq_sread(eq2, &event, &out, sizeof(out), 0, 0), -FI_EINVAL,
	       "sread on FI_WAIT_NONE refused");
	fi_close(&eq2->fid);
}

/* ------------------------------------------------------------------ */
/* memory regions */

static void test_mr(void)
{
	static char a[64], b[32];
	struct iovec iov[KFAB_IOV_LIMIT + 1];
	struct fid_mr *mr1, *mr2, *mr3;
	struct fi_mr_attr attr = { 0 };
	struct kfab_mr *m;

	TAP_EQ(fi_mr_reg(domain, a, sizeof(a), FI_SEND | FI_RECV, 0, 1, 0,
			 &mr1, NULL), 0, "register key 1");
	TAP_EQ(fi_mr_key(mr1), 1, "fi_mr_key: the key asked for");
	TAP_OK(fi_mr_desc(mr1) ==
	       kfab_container_of(mr1, struct kfab_mr, mr_fid),
	       "fi_mr_desc: the region");
	TAP_EQ(fi_mr_reg(domain, b, sizeof(b), FI_READ, 0, 1, 0, &mr2, NULL),
	       -FI_ENOKEY, "key 1 again: -FI_ENOKEY");
	TAP_EQ(fi_mr_reg(domain, b, sizeof(b), 1ULL << 40, 0, 2, 0, &mr2,
			 NULL), -FI_EINVAL, "bad access bits");
	TAP_EQ(fi_mr_reg(domain, b, sizeof(b), FI_READ, 0, 2, FI_RMA_EVENT,
			 &mr2, NULL), -FI_EBADFLAGS, "flags refused");
	iov[0].iov_base = a;
	iov[0].iov_len = 16;
	iov[1].iov_base = b;
	iov[1].iov_len = 8;
	TAP_EQ(fi_mr_regv(domain, iov, 2, FI_REMOTE_WRITE, 4096, 2, 0, &mr2,
			  NULL), 0, "regv key 2");
	m = kfab_container_of(mr2, struct kfab_mr, mr_fid);
	TAP_OK(m->len == 24 && m->iov_count == 2 && m->addr == a &&
	       m->offset == 4096 && m->access == FI_REMOTE_WRITE,
	       "regv recorded iov, length, offset, access");
	for (int i = 0; i <= KFAB_IOV_LIMIT; i++)
		iov[i] = iov[0];
	TAP_EQ(fi_mr_regv(domain, iov, KFAB_IOV_LIMIT + 1, FI_READ, 0, 3, 0,
			  &mr3, NULL), -FI_EINVAL, "too many iovecs");
	attr.mr_iov = iov;
	attr.iov_count = 1;
	attr.access = FI_WRITE;
	attr.requested_key = 3;
	attr.iface = FI_HMEM_CUDA;
	TAP_EQ(fi_mr_regattr(domain, &attr, 0, &mr3), -FI_ENOSYS,
	       "device memory refused");
	attr.iface = FI_HMEM_SYSTEM;
	TAP_EQ(fi_mr_regattr(domain, &attr, 0, &mr3), 0, "regattr key 3");

	kfab_lock(&to_dom(domain)->lock);
	TAP_OK(kfab_mr_lookup(to_dom(domain), 2) == m, "lookup key 2");
	TAP_OK(!kfab_mr_lookup(to_dom(domain), 9), "lookup key 9: none");
	kfab_unlock(&to_dom(domain)->lock);
	TAP_EQ(fi_close(&domain->fid), -FI_EBUSY, "domain busy with MRs");
	TAP_EQ(fi_close(&mr1->fid), 0, "close key 1");
	TAP_EQ(fi_mr_reg(domain, a, sizeof(a), FI_SEND, 0, 1, 0, &mr1, NULL),
	       0, "key 1 is free again");
	fi_close(&mr1->fid);
	fi_close(&mr2->fid);
	fi_close(&mr3->fid);
}

/*
 * The domain's map of regions by key: many regions, keys whose probe
 * runs meet, removal in the middle of runs, reinsertion, absent keys.
 */
#define MR_MAP_N 1000

static uint64_t mr_map_key(int i)
{
	/* multiples of 2^32 hash apart; small ones and the extremes too */
	return i % 3 == 0 ? (uint64_t)i << 32 : i % 3 == 1 ? (uint64_t)i :
	       UINT64_MAX - (uint64_t)i;
}

static bool mr_map_check(struct fid_mr **mr, bool (*present)(int))
{
	bool ok = true;

	kfab_lock(&to_dom(domain)->lock);
	for (int i = 0; i < MR_MAP_N; i++) {
		struct kfab_mr *m = kfab_mr_lookup(to_dom(domain),
						   mr_map_key(i));

		ok &= present(i) ? m && &m->mr_fid == mr[i] : !m;
	}
	kfab_unlock(&to_dom(domain)->lock);
	return ok;
}

static bool mr_all(int i)
{
	(void)i;
	return true;
}

static bool mr_odd(int i)
{
	return i & 1;
}

static void test_mr_map(void)
{
	static char buf[64];
	static struct fid_mr *mr[MR_MAP_N];
	struct fid_mr *dup;
	struct kfab_domain *d = to_dom(domain);
	bool absent = true;
	int i, ret = 0;

	for (i = 0; i < MR_MAP_N && !ret; i++)
		ret = fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0,
				mr_map_key(i), 0, &mr[i], NULL);
	TAP_EQ(ret, 0, "mr map: %d regions registered", MR_MAP_N);
	TAP_OK(mr_map_check(mr, mr_all), "mr map: each found by its key");
	TAP_OK(d->mrs.count == MR_MAP_N && 2 * d->mrs.count <= d->mrs.nslots &&
	       !(d->mrs.nslots & (d->mrs.nslots - 1)),
	       "mr map: at most half of a power of two slots used");
	kfab_lock(&d->lock);
	for (i = 0; i < MR_MAP_N; i++)
		absent &= !kfab_mr_lookup(d, ((uint64_t)i << 32) +
						0x80000000);
	kfab_unlock(&d->lock);
	TAP_OK(absent, "mr map: absent keys not found");
	TAP_EQ(fi_mr_reg(domain, buf, sizeof(buf), FI_READ, 0, mr_map_key(500),
			 0, &dup, NULL), -FI_ENOKEY, "mr map: a key in use");
	for (i = 0; i < MR_MAP_N; i += 2)
		fi_close(&mr[i]->fid);
	TAP_OK(mr_map_check(mr, mr_odd),
	       "mr map: every other closed, the rest still found");
	for (i = 0, ret = 0; i < MR_MAP_N && !ret; i += 2)
		ret = fi_mr_reg(domain, buf, sizeof(buf), FI_REMOTE_READ, 0,
				mr_map_key(i), 0, &mr[i], NULL);
	TAP_EQ(ret, 0, "mr map: the closed keys registered again");
	TAP_OK(mr_map_check(mr, mr_all), "mr map: all found again");
	for (i = 0; i < MR_MAP_N; i++)
		fi_close(&mr[i]->fid);
	TAP_EQ(d->mrs.count, 0, "mr map: empty after closing all");
	kfab_lock(&d->lock);
	TAP_OK(!kfab_mr_lookup(d, mr_map_key(1)), "mr map: nothing found");
	kfab_unlock(&d->lock);
}

/* the key map itself: replacing, conditional removal, growth */
static void test_map(void)
{
	struct kfab_map m = { 0 };
	bool ok = true;

	TAP_EQ(kfab_map_get(&m, 5), 0, "map: empty, nothing found");
	kfab_map_del(&m, 5, 1);
	TAP_EQ(kfab_map_reserve(&m, 1), 0, "map: reserve");
	kfab_map_put(&m, 5, 1);
	kfab_map_put(&m, 5, 2);
	TAP_OK(kfab_map_get(&m, 5) == 2 && m.count == 1,
	       "map: a second put of a key replaces its value");
	kfab_map_del(&m, 5, 1);
	TAP_EQ(kfab_map_get(&m, 5), 2, "map: del of another value: kept");
	kfab_map_del(&m, 5, 2);
	TAP_OK(!kfab_map_get(&m, 5) && !m.count, "map: del of its value");
	TAP_EQ(kfab_map_reserve(&m, 5000), 0, "map: reserve 5000");
	for (uint64_t k = 0; k < 5000; k++)
		kfab_map_put(&m, k * 4096, k + 1);
	for (uint64_t k = 0; k < 5000; k += 3)
		kfab_map_del(&m, k * 4096, k + 1);
	for (uint64_t k = 0; k < 5000; k++)
		ok &= kfab_map_get(&m, k * 4096) == (k % 3 ? k + 1 : 0) &&
		      !kfab_map_get(&m, k * 4096 + 1);
	TAP_OK(ok && 2 * m.count <= m.nslots,
	       "map: 5000 keys, a third removed: the rest found, at most half full");
	kfab_map_fini(&m);
	TAP_OK(!m.nslots && !kfab_map_get(&m, 4096), "map: fini empties it");
}

/* the FI_E* code of a peer-mapping error, the same for every provider */
static void test_peer_err(void)
{
	TAP_EQ(kfab_peer_err(0), 0, "peer_err: 0 is 0");
	TAP_EQ(kfab_peer_err(-ENOENT), -FI_EHOSTUNREACH,
	       "peer_err: no such peer: -FI_EHOSTUNREACH");
	TAP_EQ(kfab_peer_err(-ECONNRESET), -FI_EHOSTUNREACH,
	       "peer_err: a peer gone: -FI_EHOSTUNREACH");
	TAP_EQ(kfab_peer_err(-EACCES), -FI_EACCES, "peer_err: -FI_EACCES");
	TAP_EQ(kfab_peer_err(-ENETDOWN), -FI_ENETDOWN,
	       "peer_err: -FI_ENETDOWN");
	TAP_EQ(kfab_peer_err(-ENOMEM), -FI_ENOMEM, "peer_err: -FI_ENOMEM");
	TAP_EQ(kfab_peer_err(-EMFILE), -EMFILE,
	       "peer_err: another -errno is itself");
	TAP_EQ(kfab_peer_err(5), -FI_EIO, "peer_err: not an -errno: -FI_EIO");
}

/* the FI_E* code of a failed RMA or atomic, the same for every provider */
static void test_rma_err(void)
{
	static const struct {
		int status, err;
	} cases[] = {
		{ -ENOKEY, FI_EACCES }, { -ERANGE, FI_EACCES },
		{ -EPERM, FI_EACCES }, { -EACCES, FI_EACCES },
		{ -ESTALE, FI_EACCES }, { -EOPNOTSUPP, FI_EOPNOTSUPP },
		{ -EINVAL, FI_EINVAL }, { -ENOMEM, FI_ENOMEM },
		{ -ECONNRESET, FI_ECONNRESET }, { -ENXIO, FI_EADDRNOTAVAIL },
		{ -EMFILE, FI_EIO }, { 5, FI_EIO },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		TAP_EQ(kfab_rma_err(cases[i].status), cases[i].err,
		       "rma_err: status %d is FI_E* %d", cases[i].status,
		       cases[i].err);
}

/* iovec copies: within one iovec (inline), across several, clipped */
static void test_iov_copy(void)
{
	char a[8] = "abcdefgh", b[4] = "ijkl", out[16];
	struct iovec one = { a, sizeof(a) };
	struct iovec two[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct iovec none = { NULL, 0 };

	memset(out, 0, sizeof(out));
	TAP_OK(kfab_iov_to_buf(&one, 1, 2, out, 5) == 5 &&
	       !memcmp(out, "cdefg", 5), "iov: 5 bytes at 2 of one iovec");
	TAP_OK(kfab_iov_to_buf(&one, 1, 8, out, 1) == 0,
	       "iov: nothing at the end of one iovec");
	memset(out, 0, sizeof(out));
	TAP_OK(kfab_iov_to_buf(&one, 1, 6, out, 4) == 2 &&
	       !memcmp(out, "gh", 2), "iov: clipped at the end of one iovec");
	TAP_OK(kfab_iov_to_buf(&one, 1, 9, out, 1) == 0,
	       "iov: nothing past the end of one iovec");
	TAP_OK(kfab_iov_to_buf(&none, 1, 0, out, 0) == 0 &&
	       kfab_buf_to_iov(&none, 1, 0, NULL, 0) == 0,
	       "iov: zero bytes of an empty iovec");
	memset(out, 0, sizeof(out));
	TAP_OK(kfab_iov_to_buf(two, 2, 6, out, 6) == 6 &&
	       !memcmp(out, "ghijkl", 6), "iov: across two iovecs");
	TAP_OK(kfab_buf_to_iov(&one, 1, 1, "XY", 2) == 2 &&
	       !memcmp(a, "aXYdefgh", 8), "iov: 2 bytes into one iovec at 1");
	TAP_OK(kfab_buf_to_iov(two, 2, 7, "1234", 4) == 4 &&
	       !memcmp(a, "aXYdefg1", 8) && !memcmp(b, "234l", 4),
	       "iov: into two iovecs");
	TAP_OK(kfab_buf_to_iov(&one, 1, 7, "PQ", 2) == 1 && a[7] == 'P',
	       "iov: into one iovec, clipped at its end");
}

/* object pools: reuse, the bound, growth by slabs, alignment */
static void test_pool(void)
{
	struct kfab_pool pool;
	void *o[6], *again;
	bool distinct = true, aligned = true;

	kfab_pool_init(&pool, 24, 2, 5);
	TAP_EQ(pool.obj_size % _Alignof(max_align_t), 0,
	       "pool: objects a multiple of max_align_t's alignment");
	TAP_OK(pool.obj_size >= 24, "pool: objects hold 24 bytes");
	for (int i = 0; i < 5; i++) {
		o[i] = kfab_pool_get(&pool);
		if (!o[i])
			break;
		memset(o[i], 0xa5, 24);
		aligned &= !((uintptr_t)o[i] % _Alignof(max_align_t));
		for (int j = 0; j < i; j++)
			distinct &= o[i] != o[j];
	}
	TAP_OK(o[0] && o[1] && o[2] && o[3] && o[4],
	       "pool: 5 objects over 3 slabs of 2");
	TAP_OK(distinct && aligned, "pool: distinct, aligned objects");
	TAP_OK(!kfab_pool_get(&pool) && pool.used == 5,
	       "pool: the 6th refused at max 5");
	kfab_pool_put(&pool, o[2]);
	again = kfab_pool_get(&pool);
	TAP_OK(again == o[2] && pool.used == 5,
	       "pool: an object put back is handed out again");
	for (int i = 0; i < 5; i++)
		kfab_pool_put(&pool, o[i]);
	TAP_EQ(pool.used, 0, "pool: all put back");
	kfab_pool_fini(&pool);
	kfab_pool_init(&pool, 1, 0, 0);
	TAP_OK(pool.obj_size >= sizeof(void *) && pool.slab_objs == 1,
	       "pool: at least a pointer, at least one object a slab");
	for (int i = 0; i < 6; i++)
		o[i] = kfab_pool_get(&pool);
	TAP_OK(o[5] && pool.used == 6, "pool: no bound with max 0");
	kfab_pool_fini(&pool);
}

/* poll sets and fi_trywait take the core's CQs, not another provider's */
static void test_foreign_fid(void)
{
	static struct fi_ops foreign_ops = { .size = sizeof(struct fi_ops) };
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_obj = FI_WAIT_FD };
	struct fid_cq foreign = { .fid = { .fclass = FI_CLASS_CQ,
					   .ops = &foreign_ops } };
	struct fi_poll_attr pattr = { 0 };
	struct fid *fids[1];
	struct fid_poll *ps;
	struct fid_cq *cq;

	if (!TAP_EQ(fi_poll_open(domain, &pattr, &ps), 0, "poll set opens") ||
	    !TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), 0, "CQ opens"))
		return;
	TAP_EQ(fi_poll_add(ps, &foreign.fid, 0), -FI_EINVAL,
	       "fi_poll_add: another provider's CQ refused");
	TAP_EQ(fi_poll_add(ps, &cq->fid, 0), 0, "fi_poll_add: our CQ taken");
	fids[0] = &foreign.fid;
	TAP_EQ(fi_trywait(fabric, fids, 1), -FI_EINVAL,
	       "fi_trywait: another provider's CQ refused");
	fids[0] = &cq->fid;
	TAP_EQ(fi_trywait(fabric, fids, 1), 0, "fi_trywait: our CQ taken");
	TAP_EQ(fi_poll_del(ps, &cq->fid, 0), 0, "fi_poll_del");
	TAP_EQ(fi_close(&ps->fid), 0, "poll set closes");
	TAP_EQ(fi_close(&cq->fid), 0, "CQ closes");
}

int main(void)
{
	static const core_case_fn cases[] = {
		test_pool, test_fabric_domain, test_eq, test_mr,
		test_foreign_fid, test_map, test_mr_map, test_peer_err,
		test_rma_err, test_iov_copy,
	};

	return core_main("core_test", cases, sizeof(cases) / sizeof(cases[0]),
			 false);
}
