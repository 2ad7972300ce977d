// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: kfab_efa's memory regions.
 *
 * Application regions: the core checks and lists what fi_mr_reg() gets
 * (kfab_mr.c, mr_mode FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
 * and efa_mr_reg() registers the one range with the domain's device
 * (LOCAL_WRITE always, REMOTE_READ / REMOTE_WRITE from FI_REMOTE_*). The
 * key is the device's rkey: what a peer names in device RDMA.
 *
 * The registration cache: what the data path registers itself (the long
 * read protocol's send buffers). Entries are page-rounded ranges kept
 * after their last user and reference counted: an entry in use is never
 * evicted; unused ones wait in least-recently-used order and go first
 * when FI_EFA_MR_MAX_CACHED_COUNT or _SIZE would be passed, and all of
 * them when the device's max_mrs or RLIMIT_MEMLOCK refuses a new one (a
 * refusal past that warns once; the caller copies instead). When nothing
 * can go, the registration is made uncached and deregistered by its put.
 * A lookup walks the entries, O(n): there are few (the device's max_mrs
 * bounds them) and only messages past the long-read threshold look. An
 * entry whose pages changed (kfab_efa_mr_valid() false: the kmod backend
 * saw them unmapped or remapped; shm never reports it) is dropped, never
 * handed out.
 *
 * Fork: with FI_EFA_FORK_SAFE=1 every registration's pages are
 * madvise(MADV_DONTFORK) while registered, so that fork() leaves them to
 * the parent alone: no copy-on-write moves the parent off the pages the
 * device pinned, and a child touching them faults. The page spans are
 * counted process-wide (regions of any domain overlap), and the last
 * registration over a span gives it back with MADV_DOFORK. Without it, a
 * child warns when registrations exist at fork(): the parent's writes
 * after fork() may miss the device's pinned pages.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "efa.h"
#include "fi_ext_kfab_efa.h"

_Static_assert(FI_KFAB_EFA_ACCESS_LOCAL_WRITE == KFAB_EFA_ACCESS_LOCAL_WRITE &&
	       FI_KFAB_EFA_ACCESS_REMOTE_READ == KFAB_EFA_ACCESS_REMOTE_READ &&
	       FI_KFAB_EFA_ACCESS_REMOTE_WRITE == KFAB_EFA_ACCESS_REMOTE_WRITE,
	       "query_mr's access bits are the device's");

struct efa_mr_cache_ent {
	struct kfab_list link;		/* cache->ents, or cache->loose */
	struct kfab_list lru;		/* cache->lru while unused */
	struct kfab_efa_mr mr;
	int ref;			/* efa_mr_get()s not put */
	bool cached;			/* on ents, counted in count/bytes */
};

struct efa_mr_cache {
	struct kfab_list ents;		/* cached entries */
	struct kfab_list loose;		/* uncached ones in use */
	struct kfab_list lru;		/* unused cached, least recent first */
	size_t count, bytes;		/* of the cached entries */
	size_t max_count;
	size_t max_bytes;		/* 0: no limit */
};

/* ------------------------------------------------------------------ */
/* fork safety */

/* Pages [start, end) under @ref registrations, all MADV_DONTFORK. */
struct fork_span {
	uintptr_t start, end;
	unsigned long ref;
};

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fork_span *spans;		/* sorted, disjoint */
static size_t nspans, spans_cap;

/* Registrations of domains without FI_EFA_FORK_SAFE, for the warning. */
static unsigned long unsafe_regs;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void page_range(uintptr_t addr, size_t len, uintptr_t *start,
		       uintptr_t *end)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

	*start = addr & ~(page - 1);
	*end = (addr + len + page - 1) & ~(page - 1);
}

static void span_insert(size_t i, uintptr_t start, uintptr_t end,
			unsigned long ref)
{
	memmove(&spans[i + 1], &spans[i], (nspans - i) * sizeof(*spans));
	spans[i] = (struct fork_span){ start, end, ref };
	nspans++;
}

/* A boundary at @a: the span holding it inside is cut in two. */
static void span_split(uintptr_t a)
{
	for (size_t i = 0; i < nspans; i++) {
		if (spans[i].start < a && a < spans[i].end) {
			span_insert(i + 1, a, spans[i].end, spans[i].ref);
			spans[i].end = a;
			return;
		}
	}
}

/* The spans of [start, end) no registration holds any more: DOFORK. */
static void spans_drop_unused(uintptr_t start, uintptr_t end)
{
	size_t i = 0;

	while (i < nspans) {
		struct fork_span *s = &spans[i];

		if (s->ref || s->start < start || s->end > end) {
			i++;
			continue;
		}
		if (madvise((void *)s->start, s->end - s->start, MADV_DOFORK))
			kfab_log(KFAB_LOG_WARN,
				 "kfab_efa: madvise(MADV_DOFORK) %#lx+%#lx: %s: a child of fork() will not see these pages",
				 (unsigned long)s->start,
				 (unsigned long)(s->end - s->start),
				 strerror(errno));
		memmove(s, s + 1, (nspans - i - 1) * sizeof(*spans));
		nspans--;
	}
}

/*
 * One more registration over the pages [start, end): the ones no other
 * holds become MADV_DONTFORK. 0, -FI_ENOMEM or -FI_EFAULT (logged).
 */
static int fork_add(uintptr_t start, uintptr_t end)
{
	uintptr_t pos = start, gap_end;
	size_t need, i;
	int ret = 0;

	pthread_mutex_lock(&fork_lock);
	/* two splits, and a gap before each span of the range and after */
	need = 2 * nspans + 3;
	if (need > spans_cap) {
		struct fork_span *s = realloc(spans, need * sizeof(*s));

		if (!s) {
			pthread_mutex_unlock(&fork_lock);
			kfab_log(KFAB_LOG_WARN,
				 "kfab_efa: FI_EFA_FORK_SAFE: out of memory");
			return -FI_ENOMEM;
		}
		spans = s;
		spans_cap = need;
	}
	span_split(start);
	span_split(end);
	for (i = 0; i < nspans && spans[i].end <= start; i++)
		;
	while (pos < end) {
		if (i < nspans && spans[i].start == pos) {
			pos = spans[i++].end;
			continue;
		}
		gap_end = i < nspans && spans[i].start < end ? spans[i].start :
							       end;
		if (madvise((void *)pos, gap_end - pos, MADV_DONTFORK)) {
			kfab_log(KFAB_LOG_WARN,
				 "kfab_efa: FI_EFA_FORK_SAFE: madvise(MADV_DONTFORK) %#lx+%#lx: %s: register mapped memory only",
				 (unsigned long)pos,
				 (unsigned long)(gap_end - pos),
				 strerror(errno));
			ret = -FI_EFAULT;
			break;
		}
		span_insert(i++, pos, gap_end, 0);
		pos = gap_end;
	}
	for (i = 0; !ret && i < nspans; i++)
		if (spans[i].start >= start && spans[i].end <= end)
			spans[i].ref++;
	spans_drop_unused(start, end);
	pthread_mutex_unlock(&fork_lock);
	return ret;
}

/* One registration fewer over [start, end), as fork_add() made it. */
static void fork_del(uintptr_t start, uintptr_t end)
{
	pthread_mutex_lock(&fork_lock);
	for (size_t i = 0; i < nspans; i++)
		if (spans[i].start >= start && spans[i].end <= end)
			spans[i].ref--;
	spans_drop_unused(start, end);
	pthread_mutex_unlock(&fork_lock);
}

static void atfork_child(void)
{
	unsigned long n = __atomic_load_n(&unsafe_regs, __ATOMIC_RELAXED);

	if (n)
		kfab_log(KFAB_LOG_WARN,
			 "kfab_efa: fork() with %lu memory region(s) registered: the child shares their pages copy-on-write and the parent's writes may no longer reach the device; set FI_EFA_FORK_SAFE=1 to keep registered memory out of children",
			 n);
}

static void atfork_init(void)
{
	int ret = pthread_atfork(NULL, NULL, atfork_child);

	if (ret)
		kfab_log(KFAB_LOG_WARN,
			 "kfab_efa: pthread_atfork: %s: fork() will not warn about registered memory",
			 strerror(ret));
}

/* ------------------------------------------------------------------ */
/* device registrations */

/* [addr, addr + len) with the device, and its pages for fork(). */
static int dev_reg(struct kfab_domain *domain, void *addr, size_t len,
		   uint32_t access, struct kfab_efa_mr *mr)
{
	const struct efa_params *p = domain->params;
	struct kfab_efa_dev *dev = efa_domain_of(domain)->dev;
	uintptr_t start, end;
	int ret;

	ret = kfab_efa_reg_mr(dev, addr, len, access, mr);
	if (ret) {
		kfab_warn(domain->kp, FI_LOG_MR,
			  "%s: registering %p+%zu with efa%u failed: %s (fi_close() unused regions; ulimit -l)\n",
			  domain->name, addr, len, dev->device,
			  strerror(-ret));
		return ret == -ENOSPC || ret == -ENOMEM || ret == -EFAULT ||
		       ret == -EPERM ? ret : -FI_EINVAL;
	}
	if (!p->fork_safe) {
		pthread_once(&atfork_once, atfork_init);
		__atomic_add_fetch(&unsafe_regs, 1, __ATOMIC_RELAXED);
		return 0;
	}
	page_range((uintptr_t)addr, len, &start, &end);
	ret = fork_add(start, end);
	if (ret)
		kfab_efa_dereg_mr(dev, mr);
	return ret;
}

static void dev_dereg(struct kfab_domain *domain, struct kfab_efa_mr *mr)
{
	const struct efa_params *p = domain->params;
	uintptr_t start, end;

	kfab_efa_dereg_mr(efa_domain_of(domain)->dev, mr);
	if (!p->fork_safe) {
		__atomic_sub_fetch(&unsafe_regs, 1, __ATOMIC_RELAXED);
		return;
	}
	page_range((uintptr_t)mr->addr, mr->len, &start, &end);
	fork_del(start, end);
}

/* ------------------------------------------------------------------ */
/* application regions */

int efa_mr_reg(struct kfab_domain *domain, struct kfab_mr *mr)
{
	struct efa_mr *em = kfab_container_of(mr, struct efa_mr, core);
	uint32_t access = KFAB_EFA_ACCESS_LOCAL_WRITE;
	int ret;

	if (mr->iov_count != 1 || !mr->len) {
		kfab_warn(domain->kp, FI_LOG_MR,
			  "fi_mr_reg: %zu iovec(s) of %zu bytes: a kfab_efa region is one range of at least one byte\n",
			  mr->iov_count, mr->len);
		return -FI_EINVAL;
	}
	if (mr->access & FI_REMOTE_READ)
		access |= KFAB_EFA_ACCESS_REMOTE_READ;
	if (mr->access & FI_REMOTE_WRITE)
		access |= KFAB_EFA_ACCESS_REMOTE_WRITE;
	ret = dev_reg(domain, mr->addr, mr->len, access, &em->dev);
	if (ret)
		return ret;
	if (domain->mr_mode & FI_MR_PROV_KEY)
		mr->mr_fid.key = em->dev.rkey;
	return 0;
}

void efa_mr_dereg(struct kfab_domain *domain, struct kfab_mr *mr)
{
	dev_dereg(domain, &kfab_container_of(mr, struct efa_mr, core)->dev);
}

/* ------------------------------------------------------------------ */
/* the registration cache */

int efa_mr_cache_open(struct kfab_domain *domain)
{
	struct efa_domain *ed = efa_domain_of(domain);
	const struct efa_params *p = domain->params;
	struct efa_mr_cache *c = calloc(1, sizeof(*c));

	if (!c) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_domain: out of memory\n");
		return -FI_ENOMEM;
	}
	kfab_list_init(&c->ents);
	kfab_list_init(&c->loose);
	kfab_list_init(&c->lru);
	c->max_count = p->mr_max_cached_count ? p->mr_max_cached_count :
			(size_t)ed->dev->info.max_mrs * 9 / 10;
	c->max_bytes = p->mr_max_cached_size;
	ed->cache = c;
	kfab_info(domain->kp, FI_LOG_MR,
		  "domain %s: MR cache %s, at most %zu regions and %zu bytes (0: no limit), fork safe: %s\n",
		  domain->name, p->mr_cache_enable ? "on" : "off",
		  c->max_count, c->max_bytes, p->fork_safe ? "yes" : "no");
	return 0;
}

static size_t ent_bytes(const struct efa_mr_cache_ent *e)
{
	return e->mr.len;
}

/* Out of the cache's lookups (and counts); still registered. */
static void ent_uncache(struct efa_mr_cache *c, struct efa_mr_cache_ent *e)
{
	kfab_list_del(&e->link);
	kfab_list_del(&e->lru);
	if (e->cached) {
		c->count--;
		c->bytes -= ent_bytes(e);
		e->cached = false;
	}
}

static void ent_drop(struct kfab_domain *domain, struct efa_mr_cache *c,
		     struct efa_mr_cache_ent *e)
{
	ent_uncache(c, e);
	dev_dereg(domain, &e->mr);
	free(e);
}

void efa_mr_cache_close(struct kfab_domain *domain)
{
	struct efa_domain *ed = efa_domain_of(domain);
	struct efa_mr_cache *c = ed->cache;
	struct kfab_list *pos, *tmp;

	kfab_list_for_each_safe(pos, tmp, &c->ents)
		ent_drop(domain, c,
			 kfab_list_entry(pos, struct efa_mr_cache_ent, link));
	kfab_list_for_each_safe(pos, tmp, &c->loose)
		ent_drop(domain, c,
			 kfab_list_entry(pos, struct efa_mr_cache_ent, link));
	free(c);
	ed->cache = NULL;
}

/*
 * A valid cached entry covering [start, end) with @access, or NULL.
 * Stale entries met on the way leave the cache: dropped when unused,
 * deregistered by their last put otherwise.
 */
static struct efa_mr_cache_ent *cache_find(struct kfab_domain *domain,
					   struct efa_mr_cache *c,
					   uintptr_t start, uintptr_t end,
					   uint32_t access)
{
	const struct kfab_efa_dev *dev = efa_domain_of(domain)->dev;
	struct kfab_list *pos, *tmp;

	kfab_list_for_each_safe(pos, tmp, &c->ents) {
		struct efa_mr_cache_ent *e =
			kfab_list_entry(pos, struct efa_mr_cache_ent, link);
		uintptr_t a = (uintptr_t)e->mr.addr;

		if (!kfab_efa_mr_valid(dev, &e->mr)) {
			kfab_dbg(domain->kp, FI_LOG_MR,
				 "%s: cached region %p+%zu is stale: dropped\n",
				 domain->name, e->mr.addr, e->mr.len);
			if (e->ref) {
				ent_uncache(c, e);
				kfab_list_add_tail(&e->link, &c->loose);
			} else {
				ent_drop(domain, c, e);
			}
			continue;
		}
		if (a <= start && end <= a + e->mr.len &&
		    (e->mr.access & access) == access)
			return e;
	}
	return NULL;
}

static void lru_drop_first(struct kfab_domain *domain, struct efa_mr_cache *c)
{
	ent_drop(domain, c,
		 kfab_list_first(&c->lru, struct efa_mr_cache_ent, lru));
}

/*
 * Evicts unused entries, oldest first, until an entry of @bytes fits;
 * none for an entry that never would.
 */
static void cache_make_room(struct kfab_domain *domain, struct efa_mr_cache *c,
			    size_t bytes)
{
	if (!c->max_count || (c->max_bytes && bytes > c->max_bytes))
		return;
	while (!kfab_list_empty(&c->lru) &&
	       (c->count >= c->max_count ||
		(c->max_bytes && c->bytes + bytes > c->max_bytes)))
		lru_drop_first(domain, c);
}

/* The application's region @desc when it serves the range, else NULL. */
static const struct kfab_efa_mr *desc_mr(struct kfab_domain *domain,
					 void *desc, uintptr_t a, size_t len,
					 uint32_t access)
{
	struct kfab_mr *mr = desc;
	const struct kfab_efa_mr *dm;

	if (!mr || mr->domain != domain)
		return NULL;
	dm = &kfab_container_of(mr, struct efa_mr, core)->dev;
	if (a < (uintptr_t)dm->addr ||
	    a - (uintptr_t)dm->addr + len > dm->len ||
	    (dm->access & access) != access ||
	    !kfab_efa_mr_valid(efa_domain_of(domain)->dev, dm))
		return NULL;
	return dm;
}

/*
 * Once per process: a registration of the data path went past
 * RLIMIT_MEMLOCK; its caller copies instead (long-CTS, the receive slot).
 */
static void memlock_warn(size_t bytes)
{
	static atomic_bool warned;
	struct rlimit rl;
	char lim[32] = "unlimited";

	if (atomic_exchange(&warned, true))
		return;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof(lim), "%llu KiB",
			 (unsigned long long)rl.rlim_cur / 1024);
	kfab_log(KFAB_LOG_WARN,
		 "kfab_efa: pinning %zu more bytes passes RLIMIT_MEMLOCK (%s): large messages are copied instead of read in place, which is slower; raise the limit (ulimit -l, or memlock in /etc/security/limits.conf)",
		 bytes, lim);
}

int efa_mr_get(struct kfab_domain *domain, void *desc, void *addr, size_t len,
	       uint32_t access, struct efa_mr_ref *ref)
{
	const struct efa_params *p = domain->params;
	struct efa_mr_cache *c = efa_domain_of(domain)->cache;
	struct efa_mr_cache_ent *e;
	uintptr_t a = (uintptr_t)addr, start, end;
	int ret;

	if (!len || a + len < a || (access & ~KFAB_EFA_ACCESS_ALL)) {
		kfab_warn(domain->kp, FI_LOG_MR,
			  "%s: registration of %p+%zu access %#x: a range of at least one byte, KFAB_EFA_ACCESS_* bits\n",
			  domain->name, addr, len, access);
		return -FI_EINVAL;
	}
	ref->mr = desc_mr(domain, desc, a, len, access);
	ref->ent = NULL;
	if (ref->mr)
		return 0;
	access |= KFAB_EFA_ACCESS_LOCAL_WRITE;
	page_range(a, len, &start, &end);
	if (p->mr_cache_enable) {
		e = cache_find(domain, c, start, end, access);
		if (e) {
			if (!e->ref++)
				kfab_list_del(&e->lru);
			goto out;
		}
		cache_make_room(domain, c, end - start);
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		kfab_warn(domain->kp, FI_LOG_MR, "%s: out of memory\n",
			  domain->name);
		return -FI_ENOMEM;
	}
	kfab_list_init(&e->lru);
	ret = dev_reg(domain, (void *)start, end - start, access, &e->mr);
	if ((ret == -FI_ENOSPC || ret == -FI_ENOMEM) &&
	    !kfab_list_empty(&c->lru)) {
		/* max_mrs or RLIMIT_MEMLOCK: the unused cached ones give way */
		while (!kfab_list_empty(&c->lru))
			lru_drop_first(domain, c);
		ret = dev_reg(domain, (void *)start, end - start, access,
			      &e->mr);
	}
	if (ret == -FI_ENOMEM)
		memlock_warn(end - start);
	if (ret) {
		free(e);
		return ret;
	}
	e->ref = 1;
	if (p->mr_cache_enable && c->count < c->max_count &&
	    (!c->max_bytes || c->bytes + ent_bytes(e) <= c->max_bytes)) {
		e->cached = true;
		c->count++;
		c->bytes += ent_bytes(e);
		kfab_list_add_tail(&e->link, &c->ents);
	} else {
		kfab_list_add_tail(&e->link, &c->loose);
	}
out:
	ref->mr = &e->mr;
	ref->ent = e;
	return 0;
}

void efa_mr_put(struct kfab_domain *domain, struct efa_mr_ref *ref)
{
	struct efa_mr_cache *c = efa_domain_of(domain)->cache;
	struct efa_mr_cache_ent *e = ref->ent;

	ref->mr = NULL;
	ref->ent = NULL;
	if (!e || --e->ref)
		return;
	if (e->cached && kfab_efa_mr_valid(efa_domain_of(domain)->dev, &e->mr))
		kfab_list_add_tail(&e->lru, &c->lru);
	else
		ent_drop(domain, c, e);
}

/* ------------------------------------------------------------------ */
/* domain ops (fi_ext_kfab_efa.h) */

static int efa_query_mr(struct fid_mr *mr_fid,
			struct fi_kfab_efa_mr_attr *attr)
{
	struct kfab_mr *mr = kfab_mr_of(mr_fid);
	struct efa_domain *ed;
	const struct kfab_efa_mr *dm;

	if (!mr || mr->domain->kp->mr_reg != efa_mr_reg) {
		kfab_log(KFAB_LOG_WARN,
			 "kfab_efa: query_mr: %p is not a memory region of a kfab_efa domain: pass fi_mr_reg()'s region of one",
			 (void *)mr_fid);
		return -FI_EINVAL;
	}
	if (!attr) {
		kfab_warn(mr->domain->kp, FI_LOG_MR,
			  "query_mr: attr is NULL: pass a struct fi_kfab_efa_mr_attr\n");
		return -FI_EINVAL;
	}
	ed = efa_domain_of(mr->domain);
	dm = &kfab_container_of(mr, struct efa_mr, core)->dev;
	memset(attr, 0, sizeof(*attr));
	attr->device = ed->dev->device;
	attr->lkey = dm->lkey;
	attr->rkey = dm->rkey;
	switch (kfab_efa_mr_state(ed->dev, dm)) {
	case KFAB_EFA_MR_STATE_VALID:
		attr->state = FI_KFAB_EFA_MR_VALID;
		break;
	case KFAB_EFA_MR_STATE_SUSPECT:
		attr->state = FI_KFAB_EFA_MR_SUSPECT;
		break;
	default:
		attr->state = FI_KFAB_EFA_MR_STALE;
		break;
	}
	attr->addr = (uintptr_t)dm->addr;
	attr->len = dm->len;
	attr->access = dm->access;
	return 0;
}

static struct fi_kfab_efa_ops_domain efa_ops_domain = {
	.size = sizeof(struct fi_kfab_efa_ops_domain),
	.query_mr = efa_query_mr,
};

int efa_domain_ops_open(struct kfab_domain *domain, const char *name,
			uint64_t flags, void **ops, void *context)
{
	(void)context;
	if (!name || strcmp(name, FI_KFAB_EFA_DOMAIN_OPS)) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_open_ops: \"%s\": kfab_efa's domain ops are FI_KFAB_EFA_DOMAIN_OPS (\"%s\", <rdma/fi_ext_kfab_efa.h>)\n",
			  name ? name : "(null)", FI_KFAB_EFA_DOMAIN_OPS);
		return -FI_ENOSYS;
	}
	if (flags) {
		kfab_warn(domain->kp, FI_LOG_DOMAIN,
			  "fi_open_ops: flags %#llx are not supported: use 0\n",
			  (unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	*ops = &efa_ops_domain;
	return 0;
}
