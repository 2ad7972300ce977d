// SPDX-License-Identifier: GPL-2.0
/*
 * efa_mr_test: kfab_efa's memory regions on device efa0 of the backend
 * FI_KFAB_BACKEND names (shm without the modules), in-process through a
 * test transport with kfab_efa's hooks (efa_domain.c's, efa_mr.c's) and no
 * endpoints:
 *
 *   fi_mr_reg() under FI_MR_PROV_KEY (the key is query_mr()'s rkey,
 *   requested_key ignored, keys differ), FI_MR_VIRT_ADDR (peers name
 *   addresses), what is refused (access, flags, iovecs, ops names,
 *   query_mr() of a region not kfab_efa's); efa_mr_get() with the
 *   application's descriptor and through the cache: hits, LRU eviction
 *   past FI_EFA_MR_MAX_CACHED_COUNT and _SIZE, entries in use kept,
 *   FI_EFA_MR_CACHE_ENABLE=0; stale registrations after munmap() (kmod
 *   only: shm cannot see it); RLIMIT_MEMLOCK reached (kmod only: shm pins
 *   nothing): the unused cache gives way, then -FI_ENOMEM warned once;
 *   FI_EFA_FORK_SAFE=1 (a child faults on
 *   registered pages, the parent keeps them) and the fork() warning
 *   without it.
 *
 * Without $KFAB_SHM_DIR a private one is made.
 *
 *   build/ulib-tests/efa_mr_test
 *   scripts/vm-run -e FI_KFAB_BACKEND=kmod -- build/ulib-tests/efa_mr_test
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "efa/efa.h"
#include "efa/fi_ext_kfab_efa.h"
#include "tests/tap.h"
#include "tests/test_prov.h"
#include "tests/xproc.h"

#define SEGV_EXIT	42

static long page;

/* ------------------------------------------------------------------ */
/* the test transport: kfab_efa's domain, MRs and domain ops */

static struct fi_provider test_prov = TEST_FI_PROVIDER("kfab_efa");

static const struct kfab_provider efa_kp = {
	.name = "kfab_efa",
	.prov = &test_prov,
	EFA_PROVIDER_DOMAINS,
	.ep_open = test_ep_nosys,
};

/* The core alone, as kfab_opx uses it: regions of another provider. */
static const struct kfab_provider plain_kp = {
	.name = "kfab_plain",
	.prov = &test_prov,
	EFA_PROVIDER_NAMES,
	.ep_open = test_ep_nosys,
};

/* libkfab's log: the warnings naming FI_EFA_FORK_SAFE */
static int nfork_warn, nmemlock_warn;

static void sink(enum kfab_log_level level, const char *msg)
{
	if (level == KFAB_LOG_WARN && strstr(msg, "FI_EFA_FORK_SAFE"))
		nfork_warn++;
	if (level == KFAB_LOG_WARN && strstr(msg, "RLIMIT_MEMLOCK") &&
	    strstr(msg, "copied instead"))
		nmemlock_warn++;
}

struct dom {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct kfab_domain *d;
	struct fi_kfab_efa_ops_domain *ops;
};

static struct fi_info *rdm_info(uint32_t version, int mr_mode)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL;

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = mr_mode;
	h->domain_attr->name = strdup("efa0-rdm");
	if (efa_getinfo(version, NULL, NULL, 0, h, &fi))
		fi = NULL;
	fi_freeinfo(h);
	return fi;
}

#define MR_BASIC_MAP	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/* efa0-rdm through @kp, with FI_EFA_* as the environment says now. */
static int dom_open(struct dom *o, const struct kfab_provider *kp)
{
	int ret;

	memset(o, 0, sizeof(*o));
	o->info = rdm_info(FI_VERSION(1, 17), MR_BASIC_MAP);
	if (!o->info)
		return -FI_ENODATA;
	ret = kfab_fabric_open(kp, o->info->fabric_attr, &o->fabric, NULL);
	if (ret)
		return ret;
	ret = fi_domain(o->fabric, o->info, &o->domain, NULL);
	if (ret)
		return ret;
	o->d = kfab_container_of(o->domain, struct kfab_domain, domain_fid);
	if (kp == &efa_kp)
		ret = fi_open_ops(&o->domain->fid, FI_KFAB_EFA_DOMAIN_OPS, 0,
				  (void **)&o->ops, NULL);
	return ret;
}

static void dom_close(struct dom *o)
{
	if (o->domain)
		fi_close(&o->domain->fid);
	if (o->fabric)
		fi_close(&o->fabric->fid);
	fi_freeinfo(o->info);
}

/* fi_close() of @mr, when there is one */
static void mr_close(struct fid_mr *mr)
{
	if (mr)
		fi_close(&mr->fid);
}

static struct kfab_efa_dev *dom_dev(struct dom *o)
{
	return efa_domain_of(o->d)->dev;
}

/* efa_mr_get() under the domain lock, as the data path calls it. */
static int get(struct dom *o, void *desc, void *addr, size_t len,
	       uint32_t access, struct efa_mr_ref *ref)
{
	int ret;

	kfab_lock(&o->d->lock);
	ret = efa_mr_get(o->d, desc, addr, len, access, ref);
	kfab_unlock(&o->d->lock);
	return ret;
}

static void put(struct dom *o, struct efa_mr_ref *ref)
{
	kfab_lock(&o->d->lock);
	efa_mr_put(o->d, ref);
	kfab_unlock(&o->d->lock);
}

/* Regions of the device file not FREE. */
static int live_mrs(struct dom *o)
{
	struct kfab_efa_dev *dev = dom_dev(o);
	int n = 0;

	for (uint32_t i = 0; i < dev->info.max_mrs; i++)
		n += __atomic_load_n(&dev->mr_state[i], __ATOMIC_ACQUIRE) !=
		     KFAB_EFA_MR_STATE_FREE;
	return n;
}

/* get() and put() at once: the rkey of the range, 0 on failure. */
static uint32_t rkey_of(struct dom *o, void *addr, size_t len)
{
	struct efa_mr_ref ref;
	uint32_t rkey;

	if (get(o, NULL, addr, len, KFAB_EFA_ACCESS_REMOTE_READ, &ref))
		return 0;
	rkey = ref.mr->rkey;
	put(o, &ref);
	return rkey;
}

/* ------------------------------------------------------------------ */
/* application regions */

static void test_regions(void)
{
	struct fi_kfab_efa_mr_attr a, b;
	struct fid_mr *mr1 = NULL, *mr2 = NULL, *mr3 = NULL, fake;
	struct fi_kfab_efa_ops_domain *ops;
	struct dom o, plain;
	struct iovec iov[2], kiov[KFAB_IOV_LIMIT];
	uint8_t *buf = xp_anon(4 * page);
	void *vops;

	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "efa0-rdm domain, domain ops") ||
	    !TAP_OK(buf, "4 pages")) {
		dom_close(&o);
		return;
	}
	TAP_EQ(o.d->mr_mode, MR_BASIC_MAP,
	       "domain mr_mode VIRT_ADDR | ALLOCATED | PROV_KEY");
	TAP_OK(o.ops && o.ops->size == sizeof(*o.ops) && o.ops->query_mr,
	       "fi_open_ops: struct fi_kfab_efa_ops_domain");

	TAP_EQ(fi_mr_reg(o.domain, buf + 100, 1000,
			 FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 12345, 0, &mr1,
			 NULL), 0, "fi_mr_reg, requested_key 12345");
	if (!mr1)
		goto out;
	TAP_EQ(o.ops->query_mr(mr1, &a), 0, "query_mr");
	TAP_EQ(fi_mr_key(mr1), a.rkey, "fi_mr_key() is the device's rkey");
	TAP_OK(fi_mr_key(mr1) != 12345, "requested_key ignored (FI_MR_PROV_KEY)");
	TAP_OK(a.state == FI_KFAB_EFA_MR_VALID && a.device == 0 &&
	       a.addr == (uintptr_t)(buf + 100) && a.len == 1000 &&
	       a.access == (FI_KFAB_EFA_ACCESS_LOCAL_WRITE |
			    FI_KFAB_EFA_ACCESS_REMOTE_READ |
			    FI_KFAB_EFA_ACCESS_REMOTE_WRITE) && a.lkey,
	       "VALID, efa0, the range, LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE");
	TAP_EQ(kfab_mr_access(o.d, fi_mr_key(mr1), (uintptr_t)(buf + 150), 50,
			      FI_REMOTE_READ, kiov), 1,
	       "kfab_mr_access() by virtual address (FI_MR_VIRT_ADDR)");
	TAP_OK(kiov[0].iov_base == buf + 150 && kiov[0].iov_len == 50,
	       "the region's memory at that address");
	TAP_EQ(kfab_mr_access(o.d, fi_mr_key(mr1), 150, 50, FI_REMOTE_READ,
			      kiov), -ERANGE, "an offset is no address");

	TAP_EQ(fi_mr_reg(o.domain, buf + 100, 1000, FI_SEND, 0, 12345, 0, &mr2,
			 NULL), 0, "same range, same requested_key: no conflict");
	TAP_OK(mr2 && fi_mr_key(mr2) != fi_mr_key(mr1), "another key");
	TAP_OK(mr2 && !o.ops->query_mr(mr2, &b) &&
	       b.access == FI_KFAB_EFA_ACCESS_LOCAL_WRITE,
	       "FI_SEND alone: LOCAL_WRITE");

	TAP_EQ(fi_mr_reg(o.domain, buf, 10, 1ULL << 40, 0, 0, 0, &mr3, NULL),
	       -FI_EINVAL, "unknown access bit refused");
	TAP_EQ(fi_mr_reg(o.domain, buf, 10, FI_REMOTE_READ, 0, 0,
			 FI_RMA_EVENT, &mr3, NULL), -FI_EBADFLAGS,
	       "flags refused");
	iov[0] = (struct iovec){ buf, 10 };
	iov[1] = (struct iovec){ buf + page, 10 };
	TAP_EQ(fi_mr_regv(o.domain, iov, 2, FI_REMOTE_READ, 0, 0, 0, &mr3,
			  NULL), -FI_EINVAL,
	       "two iovecs refused (FI_MR_VIRT_ADDR)");
	TAP_EQ(fi_mr_reg(o.domain, buf, 0, FI_REMOTE_READ, 0, 0, 0, &mr3, NULL),
	       -FI_EINVAL, "0 bytes refused");

	TAP_EQ(fi_open_ops(&o.domain->fid, "kfab_efa domain ops v0", 0, &vops,
			   NULL), -FI_ENOSYS, "unknown ops name: -FI_ENOSYS");
	TAP_EQ(fi_open_ops(&o.domain->fid, FI_KFAB_EFA_DOMAIN_OPS, 1, &vops,
			   NULL), -FI_EBADFLAGS, "ops flags: -FI_EBADFLAGS");
	TAP_EQ(fi_open_ops(&o.domain->fid, FI_KFAB_EFA_DOMAIN_OPS, 0, &vops,
			   NULL), 0, "ops again");
	ops = vops;
	memset(&fake, 0, sizeof(fake));
	fake.fid.fclass = FI_CLASS_MR;
	TAP_EQ(ops->query_mr(&fake, &b), -FI_EINVAL,
	       "query_mr of a struct fid_mr not made by fi_mr_reg()");
	TAP_EQ(ops->query_mr(NULL, &b), -FI_EINVAL, "query_mr(NULL)");
	if (TAP_EQ(dom_open(&plain, &plain_kp), 0, "a domain of the core alone")) {
		TAP_EQ(fi_mr_reg(plain.domain, buf, 10, FI_REMOTE_READ, 0, 7,
				 0, &mr3, NULL), 0, "its region");
		TAP_EQ(ops->query_mr(mr3, &b), -FI_EINVAL,
		       "query_mr of a region of another transport");
		TAP_EQ(fi_open_ops(&plain.domain->fid, FI_KFAB_EFA_DOMAIN_OPS,
				   0, &vops, NULL), -FI_ENOSYS,
		       "no domain ops there");
		fi_close(&mr3->fid);
	}
	dom_close(&plain);

	TAP_EQ(fi_close(&mr2->fid), 0, "fi_close");
	TAP_EQ(fi_close(&mr1->fid), 0, "fi_close");
	mr1 = NULL;
out:
	mr_close(mr1);
	TAP_EQ(live_mrs(&o), 0, "every region deregistered");
	dom_close(&o);
	munmap(buf, 4 * page);
}

/* ------------------------------------------------------------------ */
/* the registration cache */

static void test_cache(void)
{
	struct efa_mr_ref r1, r2, r3;
	struct fid_mr *mr = NULL, *mr_ro = NULL;
	uint8_t *buf = xp_anon(16 * page);
	uint32_t k1, k2;
	struct dom o;

	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "cache: domain") ||
	    !TAP_OK(buf, "16 pages")) {
		dom_close(&o);
		return;
	}
	fi_mr_reg(o.domain, buf, 2 * page, FI_REMOTE_READ, 0, 0, 0, &mr, NULL);
	fi_mr_reg(o.domain, buf + 2 * page, page, FI_SEND, 0, 0, 0, &mr_ro,
		  NULL);
	if (!TAP_OK(mr && mr_ro, "two application regions"))
		goto out;

	TAP_EQ(get(&o, fi_mr_desc(mr), buf + 10, page,
		   KFAB_EFA_ACCESS_REMOTE_READ, &r1), 0, "get with a descriptor");
	TAP_OK(!r1.ent && r1.mr && r1.mr->rkey == fi_mr_key(mr),
	       "the application's region");
	put(&o, &r1);
	TAP_EQ(get(&o, fi_mr_desc(mr), buf + page, 2 * page,
		   KFAB_EFA_ACCESS_REMOTE_READ, &r1), 0,
	       "get past the descriptor's region");
	TAP_OK(r1.ent && r1.mr->rkey != fi_mr_key(mr), "a cached one");
	put(&o, &r1);
	TAP_EQ(get(&o, fi_mr_desc(mr_ro), buf + 2 * page, 10,
		   KFAB_EFA_ACCESS_REMOTE_READ, &r1), 0,
	       "get with a descriptor lacking REMOTE_READ");
	TAP_OK(r1.ent && r1.mr->rkey != fi_mr_key(mr_ro), "a cached one");
	put(&o, &r1);

	TAP_EQ(get(&o, NULL, buf + 5 * page + 100, page,
		   KFAB_EFA_ACCESS_REMOTE_READ, &r1), 0, "get without desc");
	TAP_OK(r1.ent && r1.mr->addr == buf + 5 * page &&
	       r1.mr->len == 2 * (size_t)page &&
	       (r1.mr->access & KFAB_EFA_ACCESS_REMOTE_READ),
	       "a cached region, page-rounded");
	TAP_EQ(get(&o, NULL, buf + 5 * page + 100, page,
		   KFAB_EFA_ACCESS_REMOTE_READ, &r2), 0, "the same again");
	TAP_OK(r2.ent == r1.ent && r2.mr->rkey == r1.mr->rkey,
	       "a hit: the same rkey");
	k1 = r1.mr->rkey;
	put(&o, &r1);
	put(&o, &r2);
	TAP_EQ(rkey_of(&o, buf + 6 * page, 10), k1,
	       "a range inside it after its last put: still the same");
	k2 = rkey_of(&o, buf + 6 * page, page + 1);
	TAP_OK(k2 && k2 != k1, "a range past it: another registration");
	TAP_EQ(get(&o, NULL, buf + 5 * page, 10,
		   KFAB_EFA_ACCESS_REMOTE_WRITE, &r3), 0,
	       "REMOTE_WRITE over a REMOTE_READ entry");
	TAP_OK(r3.mr->rkey != k1 &&
	       (r3.mr->access & KFAB_EFA_ACCESS_REMOTE_WRITE),
	       "another registration, with the access");
	put(&o, &r3);
	TAP_EQ(get(&o, NULL, buf, 0, KFAB_EFA_ACCESS_REMOTE_READ, &r3),
	       -FI_EINVAL, "0 bytes refused");
	TAP_EQ(get(&o, NULL, buf, 10, 0x80, &r3), -FI_EINVAL,
	       "unknown access refused");
out:
	mr_close(mr);
	mr_close(mr_ro);
	dom_close(&o);
	munmap(buf, 16 * page);
}

/* FI_EFA_MR_MAX_CACHED_COUNT=2, _SIZE: least recently used go first. */
static void test_limits(void)
{
	struct efa_mr_ref ra, rc, rb;
	uint8_t *buf = xp_anon(16 * page);
	uint8_t *A = buf, *B = buf + 4 * page, *C = buf + 8 * page;
	uint32_t ka, kb, kc;
	struct dom o;

	setenv("FI_EFA_MR_MAX_CACHED_COUNT", "2", 1);
	if (!TAP_EQ(dom_open(&o, &efa_kp), 0,
		    "domain, FI_EFA_MR_MAX_CACHED_COUNT=2") || !buf)
		goto out;
	ka = rkey_of(&o, A, page);
	kb = rkey_of(&o, B, page);
	TAP_EQ(rkey_of(&o, A, page), ka, "A, B cached, A used again");
	kc = rkey_of(&o, C, page);
	TAP_OK(ka && kb && kc, "C cached: the least recently used goes");
	TAP_EQ(rkey_of(&o, A, page), ka, "A kept");
	TAP_OK(rkey_of(&o, B, page) != kb, "B was evicted");
	TAP_OK(rkey_of(&o, C, page) != kc, "then C (B came after A)");
	TAP_EQ(live_mrs(&o), 2, "two registrations on the device");

	get(&o, NULL, A, page, KFAB_EFA_ACCESS_REMOTE_READ, &ra);
	get(&o, NULL, C, page, KFAB_EFA_ACCESS_REMOTE_READ, &rc);
	TAP_OK(ra.ent && rc.ent, "A and C in use");
	ka = ra.mr->rkey;
	kc = rc.mr->rkey;
	TAP_EQ(get(&o, NULL, B, page, KFAB_EFA_ACCESS_REMOTE_READ, &rb), 0,
	       "B while both are in use");
	kb = rb.mr->rkey;
	TAP_EQ(live_mrs(&o), 3, "B uncached: entries in use are not evicted");
	put(&o, &rb);
	TAP_EQ(live_mrs(&o), 2, "B deregistered by its put");
	TAP_OK(rkey_of(&o, B, page) != kb, "B again: a fresh registration");
	put(&o, &ra);
	put(&o, &rc);
	TAP_EQ(rkey_of(&o, A, page), ka, "A still cached");
	TAP_EQ(rkey_of(&o, C, page), kc, "C still cached");
	dom_close(&o);
	unsetenv("FI_EFA_MR_MAX_CACHED_COUNT");

	setenv("FI_EFA_MR_MAX_CACHED_SIZE", "0x3000", 1);
	if (page != 4096)
		tap_skip("FI_EFA_MR_MAX_CACHED_SIZE: written for 4 KiB pages");
	else if (TAP_EQ(dom_open(&o, &efa_kp), 0,
			"domain, FI_EFA_MR_MAX_CACHED_SIZE=3 pages")) {
		ka = rkey_of(&o, A, 2 * page);
		TAP_EQ(rkey_of(&o, A, 2 * page), ka, "A (2 pages) cached");
		kb = rkey_of(&o, B, 2 * page);
		TAP_OK(kb && rkey_of(&o, A, 2 * page) != ka,
		       "B (2 pages) evicted A");
		TAP_EQ(rkey_of(&o, C, page), rkey_of(&o, C, page),
		       "C (1 page) cached");
		TAP_EQ(live_mrs(&o), 2, "A and C: 3 pages");
		get(&o, NULL, B, 4 * page, KFAB_EFA_ACCESS_REMOTE_READ, &rb);
		TAP_OK(rb.ent && live_mrs(&o) == 3,
		       "a range past the size: uncached, nothing evicted");
		put(&o, &rb);
		TAP_EQ(live_mrs(&o), 2, "deregistered by its put");
	}
	dom_close(&o);
	unsetenv("FI_EFA_MR_MAX_CACHED_SIZE");

	setenv("FI_EFA_MR_CACHE_ENABLE", "0", 1);
	if (TAP_EQ(dom_open(&o, &efa_kp), 0,
		   "domain, FI_EFA_MR_CACHE_ENABLE=0")) {
		get(&o, NULL, A, page, KFAB_EFA_ACCESS_REMOTE_READ, &ra);
		get(&o, NULL, A, page, KFAB_EFA_ACCESS_REMOTE_READ, &rb);
		TAP_OK(ra.ent && rb.ent && ra.mr->rkey != rb.mr->rkey,
		       "two gets: two registrations");
		ka = ra.mr->rkey;
		put(&o, &ra);
		put(&o, &rb);
		TAP_EQ(live_mrs(&o), 0, "both deregistered by their puts");
		TAP_OK(rkey_of(&o, A, page) != ka, "then a fresh one");
		TAP_EQ(live_mrs(&o), 0, "none kept");
	}
	dom_close(&o);
	unsetenv("FI_EFA_MR_CACHE_ENABLE");
out:
	if (buf)
		munmap(buf, 16 * page);
}

/* munmap() and a new mapping at the same address: kmod marks it stale. */
static void test_stale(void)
{
	struct fi_kfab_efa_mr_attr a;
	struct efa_mr_ref r1, r2;
	struct kfab_efa_mr old;
	struct fid_mr *mr = NULL;
	uint8_t *buf, *again;
	uint32_t k1;
	struct dom o;

	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "stale: domain"))
		goto out;
	if (strcmp(dom_dev(&o)->ops->name, "kmod")) {
		tap_skip("stale registrations: the %s backend cannot see munmap() (FI_KFAB_BACKEND=kmod in the VM)",
			 dom_dev(&o)->ops->name);
		goto out;
	}
	buf = xp_anon(2 * page);
	memset(buf, 1, 2 * page);
	TAP_EQ(get(&o, NULL, buf, 2 * page, KFAB_EFA_ACCESS_REMOTE_READ, &r1),
	       0, "a cached registration");
	old = *r1.mr;
	k1 = old.rkey;
	put(&o, &r1);
	TAP_OK(kfab_efa_mr_valid(dom_dev(&o), &old), "valid");
	munmap(buf, 2 * page);
	TAP_OK(!kfab_efa_mr_valid(dom_dev(&o), &old), "stale after munmap()");
	again = mmap(buf, 2 * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (!TAP_OK(again == buf, "a new mapping at the same address"))
		goto out;
	memset(again, 2, 2 * page);
	TAP_EQ(get(&o, NULL, buf, 2 * page, KFAB_EFA_ACCESS_REMOTE_READ, &r1),
	       0, "get the range again");
	TAP_OK(r1.mr->rkey != k1 && kfab_efa_mr_valid(dom_dev(&o), r1.mr),
	       "a fresh registration, valid, not the stale one");
	TAP_EQ(live_mrs(&o), 1, "the stale one deregistered");

	/* stale while in use: never handed out, deregistered by its put */
	k1 = r1.mr->rkey;
	munmap(buf, 2 * page);
	mmap(buf, 2 * page, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	TAP_EQ(get(&o, NULL, buf, page, KFAB_EFA_ACCESS_REMOTE_READ, &r2), 0,
	       "get while a stale one is in use");
	TAP_OK(r2.mr->rkey != k1 && r2.ent != r1.ent, "not the stale one");
	put(&o, &r1);
	TAP_EQ(live_mrs(&o), 1, "the stale one deregistered by its put");
	put(&o, &r2);

	/* the application's region: STALE, and the cache steps in */
	TAP_EQ(fi_mr_reg(o.domain, buf, 2 * page, FI_REMOTE_READ, 0, 0, 0, &mr,
			 NULL), 0, "an application region");
	munmap(buf, 2 * page);
	mmap(buf, 2 * page, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	TAP_OK(mr && !o.ops->query_mr(mr, &a) && a.state == FI_KFAB_EFA_MR_STALE,
	       "query_mr: STALE");
	TAP_EQ(get(&o, fi_mr_desc(mr), buf, page, KFAB_EFA_ACCESS_REMOTE_READ,
		   &r1), 0, "get with its descriptor");
	TAP_OK(r1.ent && r1.mr->rkey != fi_mr_key(mr),
	       "a cached registration instead");
	put(&o, &r1);
	fi_close(&mr->fid);
	munmap(buf, 2 * page);
out:
	dom_close(&o);
}

/* ------------------------------------------------------------------ */
/* fork */

static void segv_exit(int sig)
{
	(void)sig;
	_exit(SEGV_EXIT);
}

/*
 * A child reads @p: its exit status, SEGV_EXIT when it faulted; 0 when
 * it could read, and (@warned) its sink saw the fork() warning.
 */
static int child_touch(const volatile uint8_t *p, bool warned)
{
	struct sigaction sa = { .sa_handler = segv_exit };
	pid_t pid;
	int status;

	fflush(stdout);
	nfork_warn = 0;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		if (*p != 0x5a)
			_exit(2);
		_exit(warned && !nfork_warn ? 3 : 0);
	}
	status = xp_reap(pid, 10000);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_fork_safe(void)
{
	struct fid_mr *m1 = NULL, *m2 = NULL;
	uint8_t *buf = xp_anon(4 * page);
	struct efa_mr_ref r;
	struct dom o;

	setenv("FI_EFA_FORK_SAFE", "1", 1);
	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "domain, FI_EFA_FORK_SAFE=1") ||
	    !buf)
		goto out;
	memset(buf, 0x5a, 4 * page);
	TAP_EQ(child_touch(buf, false), 0, "nothing registered: a child reads");
	fi_mr_reg(o.domain, buf + 100, 200, FI_REMOTE_WRITE, 0, 0, 0, &m1,
		  NULL);
	fi_mr_reg(o.domain, buf + 50, page, FI_REMOTE_READ, 0, 0, 0, &m2,
		  NULL);
	if (!TAP_OK(m1 && m2, "two regions over page 0, one into page 1"))
		goto out;
	TAP_EQ(child_touch(buf + page - 1, false), SEGV_EXIT,
	       "a child faults on a registered page");
	TAP_EQ(child_touch(buf + page + 40, false), SEGV_EXIT,
	       "and on the page the second region reaches");
	TAP_EQ(child_touch(buf + 2 * page, false), 0,
	       "not on an unregistered page");
	memset(buf, 0x5a, 2 * page);
	TAP_OK(xp_all(buf, 4 * page, 0x5a), "the parent keeps its pages");
	fi_close(&m2->fid);
	m2 = NULL;
	TAP_EQ(child_touch(buf, false), SEGV_EXIT,
	       "one region closed: page 0 still held by the other");
	TAP_EQ(child_touch(buf + page, false), 0,
	       "page 1 given back (MADV_DOFORK)");
	fi_close(&m1->fid);
	m1 = NULL;
	TAP_EQ(child_touch(buf, false), 0, "both closed: page 0 given back");

	TAP_EQ(get(&o, NULL, buf + 3 * page, 10, KFAB_EFA_ACCESS_REMOTE_READ,
		   &r), 0, "a cached registration");
	TAP_EQ(child_touch(buf + 3 * page, false), SEGV_EXIT,
	       "a child faults on its page");
	put(&o, &r);
	TAP_EQ(child_touch(buf + 3 * page, false), SEGV_EXIT,
	       "still while it stays in the cache");
	dom_close(&o);
	memset(&o, 0, sizeof(o));
	TAP_EQ(child_touch(buf + 3 * page, false), 0,
	       "the domain closed: given back");
	TAP_OK(xp_all(buf, 4 * page, 0x5a), "the parent's data intact");
out:
	mr_close(m1);
	mr_close(m2);
	dom_close(&o);
	unsetenv("FI_EFA_FORK_SAFE");
	if (buf)
		munmap(buf, 4 * page);
}

static void test_fork_unsafe(void)
{
	uint8_t *buf = xp_anon(page);
	struct fid_mr *mr = NULL;
	struct dom o;

	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "domain without FORK_SAFE") ||
	    !buf)
		goto out;
	memset(buf, 0x5a, page);
	TAP_EQ(fi_mr_reg(o.domain, buf, page, FI_REMOTE_READ, 0, 0, 0, &mr,
			 NULL), 0, "a region");
	TAP_EQ(child_touch(buf, true), 0,
	       "a child reads it, warned naming FI_EFA_FORK_SAFE");
	TAP_EQ(nfork_warn, 0, "the parent is not warned");
	mr_close(mr);
	mr = NULL;
	TAP_EQ(child_touch(buf, false) == 0 && !nfork_warn, 1,
	       "no region: no warning");
	TAP_EQ(child_touch(buf, true), 3, "no region: a child expecting the warning does not get it");
out:
	mr_close(mr);
	dom_close(&o);
	if (buf)
		munmap(buf, page);
}

#define MEMLOCK_LIMIT	(1u << 20)
#define MEMLOCK_BUF	(600u << 10)

/*
 * The child of test_memlock(), under RLIMIT_MEMLOCK of 1 MiB and without
 * CAP_IPC_LOCK: the step that failed, 0 when none.
 */
static int memlock_child(void)
{
	struct rlimit rl = { MEMLOCK_LIMIT, MEMLOCK_LIMIT };
	struct efa_mr_ref a, b, c;
	uint8_t *buf = xp_anon(3 * MEMLOCK_BUF);
	struct dom o;

	/* the device node is root's or group kfab's: open it first */
	if (!buf || dom_open(&o, &efa_kp))
		return 1;
	if (setrlimit(RLIMIT_MEMLOCK, &rl) || (!geteuid() && setuid(65534)))
		return 2;
	memset(buf, 1, 3 * MEMLOCK_BUF);
	if (get(&o, NULL, buf, MEMLOCK_BUF, KFAB_EFA_ACCESS_REMOTE_READ, &a))
		return 3;
	put(&o, &a);			/* cached, pinned, unused */
	/* the cached one gives way */
	if (get(&o, NULL, buf + MEMLOCK_BUF, MEMLOCK_BUF,
		KFAB_EFA_ACCESS_REMOTE_READ, &b))
		return 4;
	/* b in use: nothing can go, refused, warned once */
	if (get(&o, NULL, buf + 2 * MEMLOCK_BUF, MEMLOCK_BUF,
		KFAB_EFA_ACCESS_REMOTE_READ, &c) != -FI_ENOMEM ||
	    get(&o, NULL, buf + 2 * MEMLOCK_BUF, MEMLOCK_BUF,
		KFAB_EFA_ACCESS_REMOTE_READ, &c) != -FI_ENOMEM)
		return 5;
	if (nmemlock_warn != 1)
		return 6;
	put(&o, &b);
	/* and b gives way in turn */
	if (get(&o, NULL, buf + 2 * MEMLOCK_BUF, MEMLOCK_BUF,
		KFAB_EFA_ACCESS_REMOTE_READ, &c))
		return 7;
	put(&o, &c);
	dom_close(&o);
	return 0;
}

/* Registrations of the data path at RLIMIT_MEMLOCK (kmod: shm pins none). */
static void test_memlock(void)
{
	struct dom o;
	bool kmod;
	pid_t pid;
	int status = 0;

	if (!TAP_EQ(dom_open(&o, &efa_kp), 0, "memlock: domain"))
		return;
	kmod = !strcmp(dom_dev(&o)->ops->name, "kmod");
	dom_close(&o);
	if (!kmod) {
		tap_skip("memlock: the shm backend pins nothing (FI_KFAB_BACKEND=kmod in the VM)");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(memlock_child());
	waitpid(pid, &status, 0);
	TAP_OK(WIFEXITED(status) && !WEXITSTATUS(status),
	       "memlock: 1 MiB limit: an unused cached region gives way to a new one, one that cannot be pinned is refused with -FI_ENOMEM and warned once (child step %d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int main(void)
{
	char dir[256];
	bool own;

	tap_start("efa_mr_test");
	page = sysconf(_SC_PAGESIZE);
	kfab_log_set(sink);
	own = xp_shm_dir(dir, sizeof(dir), "kfab-efa-mr-test");
	unsetenv("FI_EFA_MR_CACHE_ENABLE");
	unsetenv("FI_EFA_MR_MAX_CACHED_COUNT");
	unsetenv("FI_EFA_MR_MAX_CACHED_SIZE");
	unsetenv("FI_EFA_FORK_SAFE");
	unsetenv("FI_EFA_IFACE");

	test_regions();
	test_cache();
	test_limits();
	test_stale();
	test_memlock();
	test_fork_safe();
	test_fork_unsafe();

	if (own) {
		TAP_EQ(xp_files_under(dir), 0, "cleanup: no files left in %s",
		       dir);
		TAP_OK(!rmdir(dir) || errno == ENOENT,
		       "cleanup: the directory is gone or empty");
	}
	return tap_done();
}
