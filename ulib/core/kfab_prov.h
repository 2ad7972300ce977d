/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the libfabric provider core shared by kfab_opx and kfab_efa
 * (and later kfab_mrail): fabric, domain, AV, CQ, EQ and MR objects.
 * The endpoint and the data path of each provider live in their own files
 * (opx.h, efa.h).
 *
 * Locking: one mutex per domain (struct kfab_lock) serialises every call
 * into the domain's objects, progress included. It is taken only when the
 * domain's threading model asks for it: under FI_THREAD_DOMAIN with
 * FI_PROGRESS_MANUAL the application serialises and the hot path takes no
 * lock; with FI_PROGRESS_AUTO the progress threads need it.
 *
 * Errors: functions return 0 / a count, or a negative FI_E* code after
 * logging what was wrong through FI_WARN (see kfab_warn()).
 */
#ifndef KFAB_ULIB_PROV_H
#define KFAB_ULIB_PROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "kfab_list.h"
#include "kfab_map.h"

#define KFAB_PROV_VERSION	FI_VERSION(1, 0)
#define KFAB_FI_VERSION		FI_VERSION(1, 17)

/* Largest iovec count of one operation, send or receive. */
#define KFAB_IOV_LIMIT		8

#define kfab_likely(x)		__builtin_expect(!!(x), 1)
#define kfab_unlikely(x)	__builtin_expect(!!(x), 0)
/* an error path: compiled apart from the data path that calls it */
#define kfab_cold		__attribute__((cold, noinline))
/* a data path step that costs less inlined than its call */
#define kfab_always_inline	inline __attribute__((always_inline))

struct kfab_av;
struct kfab_av_entry;
struct kfab_domain;
struct kfab_progress;
struct kfab_mr;
struct kfab_param_table;
struct kfab_rxq;
struct kfab_provider;

/* ------------------------------------------------------------------ */
/* lock elided under FI_THREAD_DOMAIN */

struct kfab_lock {
	pthread_mutex_t mutex;
	bool on;
};

static inline void kfab_lock_init(struct kfab_lock *l, bool on)
{
	pthread_mutex_init(&l->mutex, NULL);
	l->on = on;
}

static inline void kfab_lock_destroy(struct kfab_lock *l)
{
	pthread_mutex_destroy(&l->mutex);
}

static inline void kfab_lock(struct kfab_lock *l)
{
	if (l->on)
		pthread_mutex_lock(&l->mutex);
}

static inline void kfab_unlock(struct kfab_lock *l)
{
	if (l->on)
		pthread_mutex_unlock(&l->mutex);
}

/* ------------------------------------------------------------------ */
/* a provider as the core sees it: its name, format and hooks */

/*
 * What the core objects need from a provider's data path. One static
 * instance per provider (opx_provider in opx_init.c).
 */
struct kfab_provider {
	const char *name;		/* "kfab_opx" */
	struct fi_provider *prov;	/* for FI_LOG */
	uint32_t addr_format;		/* FI_ADDR_OPX */
	size_t addrlen;			/* bytes of an endpoint name, unless: */
	/*
	 * fi_fabric(): the bytes of an endpoint name in this fabric
	 * (fabric->addrlen), for a provider whose names vary by instance
	 * (a layered provider's holds one name per rail); 0 or -FI_E*
	 * (logged). NULL: addrlen.
	 */
	int (*fabric_addrlen)(size_t *len);
	/* the one AV type of this build, FI_AV_UNSPEC: MAP or TABLE */
	enum fi_av_type av_only;
	/* FI_AV_MAP asked of an av_only FI_AV_TABLE provider: a warning, and
	 * the AV is a table (fi_efa(7)); false: refused
	 */
	bool av_map_as_table;
	/*
	 * The identity of the peer context a name designates, for FI_SOURCE
	 * (kfab_av_reverse()) and directed receive; equal names give equal
	 * keys. A name that is malformed returns -FI_EINVAL.
	 */
	int (*addr_key)(const void *name, uint64_t *key);
	/* fi_av_straddr() body: format @name into @buf of *@len bytes */
	const char *(*straddr)(const void *name, char *buf, size_t *len);
	/* fi_endpoint(): the provider's endpoint constructor */
	int (*ep_open)(struct fid_domain *domain, struct fi_info *info,
		       struct fid_ep **ep, void *context);
	/*
	 * fi_domain(): read and validate the provider's runtime parameters
	 * into *@params (domain->params), 0 or -FI_EINVAL (logged); freed
	 * with params_free() when the domain closes. NULL: no parameters.
	 */
	int (*params_load)(void **params);
	void (*params_free)(void *params);
	/* fi_prov_ini(): the variables fi_info -e lists. NULL: none. */
	const struct kfab_param_table *param_table;
	/*
	 * fi_fabric(): the fabric name of the backend in use, as getinfo
	 * names it; 0 or -FI_EINVAL (logged).
	 */
	int (*fabric_name)(const char **name);
	/*
	 * fi_domain(): the unit a domain name designates (the device of the
	 * provider), 0 or -FI_EINVAL (not logged).
	 */
	int (*domain_unit)(const char *name, unsigned int *unit);
	/*
	 * fi_domain(), after params_load(): opens what the provider keeps per
	 * domain into domain->prov (0 or -FI_E*, logged); domain_fini()
	 * releases it when the domain closes. NULL: nothing.
	 */
	int (*domain_init)(struct kfab_domain *domain);
	void (*domain_fini)(struct kfab_domain *domain);
	/* bytes of operands one atomic takes (fi_query_atomic), 0: none */
	size_t atomic_max;
	/* fi_scalable_ep(), NULL: none; the most rx_ctx_bits an AV takes */
	int (*sep_open)(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **sep, void *context);
	int rx_ctx_bits_max;
	/*
	 * fi_mr_reg(): bytes of the provider's region (its struct starts
	 * with struct kfab_mr), 0: sizeof(struct kfab_mr).
	 */
	size_t mr_size;
	/*
	 * After the core's checks, before the region is listed, domain lock
	 * held: registers @mr with the device and, under FI_MR_PROV_KEY
	 * (domain->mr_mode), may set mr->mr_fid.key to the device's (the
	 * core's is the domain's next); 0 or -FI_E* (logged). NULL: nothing.
	 */
	int (*mr_reg)(struct kfab_domain *domain, struct kfab_mr *mr);
	/* fi_close() of a region mr_reg() accepted, domain lock held */
	void (*mr_dereg)(struct kfab_domain *domain, struct kfab_mr *mr);
	/*
	 * Bytes of provider data in each AV entry (kfab_av_entry_prov(),
	 * 8-byte aligned), 0: none. The table moves as it grows: the data
	 * must not point into itself.
	 */
	size_t av_entry_size;
	/*
	 * fi_av_insert(), domain lock held: fills the provider data of @e,
	 * whose key and name are set, before the entry is published at
	 * @addr; 0, or -FI_E* (logged) and the address is not inserted.
	 * NULL: nothing to fill.
	 */
	int (*av_insert)(struct kfab_av *av, fi_addr_t addr,
			 struct kfab_av_entry *e);
	/*
	 * fi_av_remove() of @addr, or fi_close() of the AV for each entry
	 * left, domain lock held: releases what av_insert() took.
	 */
	void (*av_remove)(struct kfab_av *av, fi_addr_t addr,
			  struct kfab_av_entry *e);
	/* fi_open_ops() on a domain, NULL: -FI_ENOSYS */
	int (*domain_ops_open)(struct kfab_domain *domain, const char *name,
			       uint64_t flags, void **ops, void *context);
};

/*
 * The fields of a provider's struct kfab_provider that name its peers,
 * fabrics and devices: its <p>_addr_key(), <p>_straddr(),
 * <p>_fabric_name() and <p>_domain_unit().
 */
#define KFAB_PROVIDER_NAMES(p, format, len)	\
	.addr_format = (format),		\
	.addrlen = (len),			\
	.addr_key = p##_addr_key,		\
	.straddr = p##_straddr,			\
	.fabric_name = p##_fabric_name,		\
	.domain_unit = p##_domain_unit

/* Logging through the provider, with the core's subsystem names. */
#define kfab_warn(kp, subsys, ...) \
	FI_WARN((kp)->prov, subsys, __VA_ARGS__)
#define kfab_info(kp, subsys, ...) \
	FI_INFO((kp)->prov, subsys, __VA_ARGS__)
#define kfab_dbg(kp, subsys, ...) \
	FI_DBG((kp)->prov, subsys, __VA_ARGS__)

/* ------------------------------------------------------------------ */
/* fabric */

struct kfab_fabric {
	struct fid_fabric fabric_fid;
	const struct kfab_provider *kp;
	size_t addrlen;			/* bytes of an endpoint name */
	int ref;			/* domains and EQs open on it */
};

/*
 * The count of objects holding a fabric (its domains and EQs) or an EQ
 * (the AVs bound to it): one takes it when it opens or binds, and lets
 * go once closed (release: what it did happens before the close, which
 * reads the count with acquire).
 */
static inline void kfab_ref_hold(int *ref)
{
	__atomic_add_fetch(ref, 1, __ATOMIC_RELAXED);
}

static inline void kfab_ref_put(int *ref)
{
	__atomic_sub_fetch(ref, 1, __ATOMIC_RELEASE);
}

static inline int kfab_ref_read(const int *ref)
{
	return __atomic_load_n(ref, __ATOMIC_ACQUIRE);
}

/* fi_fabric() for a provider: @kp is its transport. */
int kfab_fabric_open(const struct kfab_provider *kp, struct fi_fabric_attr *attr,
		     struct fid_fabric **fabric, void *context);

/*
 * fi_prov_ini() of a provider library, which holds the one provider @kp:
 * fills in *@kp->prov (named kp->name, with @getinfo, and fi_fabric()
 * opening kp's fabrics) and routes libkfab's log to FI_LOG through it
 * until libfabric's cleanup; returns kp->prov.
 */
typedef int (*kfab_getinfo_fn)(uint32_t version, const char *node,
			       const char *service, uint64_t flags,
			       const struct fi_info *hints,
			       struct fi_info **info);
struct fi_provider *kfab_prov_ini(const struct kfab_provider *kp,
				  kfab_getinfo_fn getinfo);

/* The fabric's children (kfab_domain.c, kfab_eq.c). */
int kfab_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
int kfab_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);

/*
 * fid operations an object does not support (kfab_fid.c): -FI_ENOSYS.
 * Every fi_ops table the core builds is complete, so that libfabric's
 * inline wrappers never call through NULL.
 */
int kfab_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int kfab_no_control(struct fid *fid, int command, void *arg);
int kfab_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int kfab_no_tostr(const struct fid *fid, char *buf, size_t len);
int kfab_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* The fi_ops of a core object: its own four, tostr and ops_set refused. */
#define KFAB_FI_OPS(close_fn, bind_fn, control_fn, ops_open_fn) {	\
	.size = sizeof(struct fi_ops),					\
	.close = (close_fn),						\
	.bind = (bind_fn),						\
	.control = (control_fn),					\
	.ops_open = (ops_open_fn),					\
	.tostr = kfab_no_tostr,						\
	.ops_set = kfab_no_ops_set,					\
}

/* Whether @fid is a core object of class @fclass with fi_ops @ops. */
static inline bool kfab_fid_is(const struct fid *fid, size_t fclass,
			       const struct fi_ops *ops)
{
	return fid && fid->fclass == fclass && fid->ops == ops;
}

/* The fid a core object starts with. */
static inline void kfab_fid_init(struct fid *fid, size_t fclass,
				 void *context, struct fi_ops *ops)
{
	fid->fclass = fclass;
	fid->context = context;
	fid->ops = ops;
}
/*
 * The fi_close() of an object that @n others still hold: 0 when @n is 0,
 * else -FI_EBUSY, logged as "@what still has @n reference(s): @fix".
 */
int kfab_close_busy(const struct kfab_provider *kp,
		    enum fi_log_subsys subsys, int n, const char *what,
		    const char *fix);

/* fi_ops_cm of a connectionless endpoint, and fi_tx/rx_size_left */
int kfab_no_setname(fid_t fid, void *addr, size_t addrlen);
int kfab_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int kfab_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen);
int kfab_no_listen(struct fid_pep *pep);
int kfab_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int kfab_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen);
int kfab_no_shutdown(struct fid_ep *ep, uint64_t flags);
int kfab_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		 struct fid_mc **mc, void *context);
ssize_t kfab_no_size_left(struct fid_ep *ep);

/*
 * Error entries (CQ and EQ) carry err_data: a NUL-terminated text of at
 * most KFAB_ERR_DATA_MAX bytes saying what failed (domain_attr's
 * max_err_data). prov_errno is a negative errno or a negative FI_E* code
 * (or 0: nothing more to say); kfab_strerror() prints it, or err_data
 * when given, for fi_cq_strerror() and fi_eq_strerror().
 */
#define KFAB_ERR_DATA_MAX	96
const char *kfab_strerror(int prov_errno, const void *err_data, char *buf,
			  size_t len);

/* ------------------------------------------------------------------ */
/* domain */

struct kfab_domain {
	struct fid_domain domain_fid;
	struct kfab_fabric *fabric;
	const struct kfab_provider *kp;
	struct fi_info *info;		/* fi_dupinfo() of the info opened */
	/*
	 * info's mr_mode as bits: fi_mr(3)'s legacy FI_MR_BASIC is
	 * FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, FI_MR_SCALABLE
	 * is 0.
	 */
	int mr_mode;
	struct kfab_lock lock;
	enum fi_threading threading;
	enum fi_progress data_progress;
	const char *name;		/* info->domain_attr->name */
	unsigned int unit;		/* kp->domain_unit() of its name */
	void *params;			/* the provider's validated parameters */
	void *prov;			/* kp->domain_init()'s, or NULL */
	struct kfab_map mrs;		/* key -> struct kfab_mr * */
	uint64_t mr_key_last;		/* FI_MR_PROV_KEY: the last key given */
	int ref;			/* AVs, CQs, EPs, MRs open on it */
};

static inline struct kfab_domain *kfab_domain_of(struct fid_domain *fid)
{
	return kfab_container_of(fid, struct kfab_domain, domain_fid);
}

/*
 * The reference each child (AV, CQ, counter, poll set, MR) holds on its
 * domain: taken when it opens; kfab_domain_release() starts its
 * fi_close(): with the domain lock taken, while *@ref (the child's own
 * users) is not 0 it unlocks and returns -FI_EBUSY, logged as "@what
 * still has N reference(s): @fix"; else it drops the child's reference
 * and returns 0 with the lock held, for the caller to finish under it.
 */
void kfab_domain_hold(struct kfab_domain *domain);
int kfab_domain_release(struct kfab_domain *domain, const int *ref,
			enum fi_log_subsys subsys, const char *what,
			const char *fix);

/* ------------------------------------------------------------------ */
/* address vector */

struct kfab_av_entry {
	uint64_t key;			/* kp->addr_key() of the name */
	bool valid;			/* false once removed */
	/* fabric->addrlen bytes, then kp->av_entry_size of the provider's */
	uint8_t name[];
};

struct kfab_av {
	struct fid_av av_fid;
	struct kfab_domain *domain;
	enum fi_av_type type;		/* as opened; both index entries */
	size_t addrlen;			/* fabric->addrlen */
	size_t prov_off;		/* of an entry's provider data */
	size_t count;			/* entries used (valid or removed) */
	size_t cap;
	uint8_t *table;			/* cap entries of entry_size bytes */
	size_t entry_size;
	struct kfab_map keys;		/* entry key -> index + 1 */
	uint64_t flags;			/* fi_av_attr flags (FI_EVENT) */
	struct kfab_eq *eq;		/* fi_av_bind(): FI_AV_COMPLETE events */
	int ref;			/* endpoints bound */
	int rx_ctx_bits;		/* fi_rx_addr(): the rx index on top */
	uint64_t idx_mask;		/* the bits of an fi_addr below them */
};

int kfab_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);

/*
 * fi_addr_t for both FI_AV_TABLE and FI_AV_MAP is the entry index: MAP
 * addresses are provider-defined values, and an index is one.
 */
static inline struct kfab_av_entry *kfab_av_entry(const struct kfab_av *av,
						  fi_addr_t addr)
{
	struct kfab_av_entry *e;

	addr &= av->idx_mask;
	if (kfab_unlikely(addr >= av->count))
		return NULL;
	e = (struct kfab_av_entry *)(av->table + addr * av->entry_size);
	return e->valid ? e : NULL;
}

/* The provider's data of entry @e (kp->av_entry_size bytes). */
static inline void *kfab_av_entry_prov(const struct kfab_av *av,
				       struct kfab_av_entry *e)
{
	return (uint8_t *)e + av->prov_off;
}

/* The receive context an fi_addr names (fi_rx_addr()), 0 without one. */
static inline uint32_t kfab_av_rx_index(const struct kfab_av *av,
					fi_addr_t addr)
{
	if (!av->rx_ctx_bits || addr == FI_ADDR_UNSPEC)
		return 0;
	return (uint32_t)(addr >> (64 - av->rx_ctx_bits));
}

/*
 * An endpoint's records per AV entry are a dense array by AV index: the
 * array @slots of *@n elements of @size bytes, grown when @idx is beyond
 * it to the AV's count (at least @idx + 1), the new elements zeroed. The
 * array (@slots moved, or kept when @idx was inside), or NULL when out of
 * memory (@slots kept).
 */
void *kfab_av_slots(const struct kfab_av *av, void *slots, size_t *n,
		    size_t size, size_t idx);

/* The fi_addr of the entry whose key is @key, or FI_ADDR_NOTAVAIL. */
fi_addr_t kfab_av_reverse(const struct kfab_av *av, uint64_t key);

/* ------------------------------------------------------------------ */
/* completion queue */

struct kfab_cq_entry {
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
};

struct kfab_cq_err {
	struct kfab_list link;
	struct fi_cq_err_entry e;
	fi_addr_t src;
	char err_data[KFAB_ERR_DATA_MAX];
};

#define KFAB_CQ_MAX_EPS		64

/* The endpoints bound to a CQ or counter, progressed by its reads. */
struct kfab_eps {
	struct kfab_progress *v[KFAB_CQ_MAX_EPS];
	int refs[KFAB_CQ_MAX_EPS];	/* bindings of each */
	int n;
};

/*
 * What CQs and counters with a wait object share (kfab_wait.c): an
 * eventfd of the object itself (fi_cq_signal, completions written while
 * a thread sleeps) and an epoll set of it and of the wakeup fds of the
 * endpoints bound to the object: the fd FI_GETWAIT hands out and the one
 * fi_cq_sread()/fi_cntr_wait() sleep on.
 */
struct kfab_waitobj {
	enum fi_wait_obj type;		/* as opened (UNSPEC is FD) */
	int efd;			/* the object's eventfd, or -1 */
	int epfd;			/* epoll of efd and endpoints, or -1 */
	int sleepers;			/* application threads asleep on it */
	bool try_armed;			/* fi_trywait() said 0: signal once */
	int signaled;			/* fi_cq_signal() not yet returned */
};

/*
 * Sets @w up for @type (FI_WAIT_NONE, _UNSPEC, _FD; others refused,
 * logged); @fds: create the fds even for FI_WAIT_NONE (a progress thread
 * sleeps on them). 0, -FI_ENOSYS, -FI_EINVAL or -errno.
 */
int kfab_wait_init(const struct kfab_provider *kp, struct kfab_waitobj *w,
		   enum fi_wait_obj type, bool fds, const char *what);
void kfab_wait_fini(struct kfab_waitobj *w);
/* Endpoint wakeup fds in the epoll set (no-ops without fds). */
int kfab_wait_add(struct kfab_waitobj *w, struct kfab_progress *ep);
void kfab_wait_del(struct kfab_waitobj *w, struct kfab_progress *ep);
/* Writes the eventfd: a sleeper wakes, an epoll user sees it. */
void kfab_wait_kick(struct kfab_waitobj *w);

/*
 * A completion or counter change: wakes whoever waits on @w. Costs one
 * load while nobody does (the hot path), called under the domain lock.
 */
static inline void kfab_wait_written(struct kfab_waitobj *w)
{
	if (kfab_unlikely(w->sleepers | w->try_armed))
		kfab_wait_kick(w);
}

/*
 * Sleeps on @w and the endpoints @eps, with the domain lock held on entry
 * and return (dropped while asleep): arms every endpoint (their reliability
 * tick and owed ACKs run first); if a packet came meanwhile, returns 0 at
 * once. Otherwise sleeps until woken, until @deadline_ns (CLOCK_MONOTONIC,
 * 0: none) or until an endpoint's next tick, then drains the fds that
 * woke. @app: an application thread (writers kick it), not a progress
 * thread. 0, or -FI_ETIMEDOUT once @deadline_ns has passed.
 */
int kfab_wait_sleep(struct kfab_domain *domain, struct kfab_waitobj *w,
		    struct kfab_progress **eps, int neps, uint64_t deadline_ns,
		    bool app);
/*
 * fi_trywait() of one object, lock held: drains, arms the endpoints;
 * -FI_EAGAIN when a packet came meanwhile, else 0 (writers kick once).
 */
int kfab_wait_try(struct kfab_waitobj *w, struct kfab_progress **eps, int neps);
/*
 * fi_control() of a CQ or counter (@what, as logged): FI_GETWAIT puts
 * the fd of an FI_WAIT_FD object in *(int *)@arg; other commands
 * -FI_ENOSYS, no fd -FI_ENODATA (logged).
 */
int kfab_wait_control(const struct kfab_provider *kp, struct kfab_waitobj *w,
		      int command, void *arg, const char *what);
/*
 * Binds @ep to the set @s of the CQ or counter @what (as logged) whose
 * wait object is @w: a further binding only counts; a new endpoint's
 * wakeup fd joins @w, then @first(@obj, @ep) (NULL: none) may refuse it.
 * 0, or -FI_ENOSPC past KFAB_CQ_MAX_EPS or -FI_E* (logged).
 */
int kfab_eps_attach(const struct kfab_provider *kp, struct kfab_eps *s,
		    struct kfab_waitobj *w, struct kfab_progress *ep,
		    const char *what,
		    int (*first)(void *obj, struct kfab_progress *ep),
		    void *obj);
/* Unbinds @ep once: whether that was its last binding (it left @w). */
bool kfab_eps_detach(struct kfab_eps *s, struct kfab_waitobj *w,
		     struct kfab_progress *ep);
uint64_t kfab_now_ns(void);

/* FI_PROGRESS_AUTO: one thread per CQ (kfab_cq.c). */
struct kfab_progress_thread;

struct kfab_cq {
	struct fid_cq cq_fid;
	struct kfab_domain *domain;
	enum fi_cq_format format;
	size_t entry_size;		/* of one entry in format */
	struct kfab_waitobj wait;
	struct kfab_progress_thread *auto_prog;	/* FI_PROGRESS_AUTO, or NULL */
	/* ring of size entries, then an overflow list: nothing is dropped */
	struct kfab_cq_entry *ring;
	size_t size;			/* power of two */
	size_t head, tail;		/* free-running */
	struct kfab_list overflow;	/* struct kfab_cq_over.link */
	struct kfab_list errors;	/* struct kfab_cq_err.link */
	struct kfab_cq_err *err_last;	/* returned by readerr, freed next */
	struct kfab_eps eps;
	int ref;			/* endpoint bindings, poll sets */
};

int kfab_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
/* The core's CQ behind @fid, NULL when it is not one (another provider's). */
struct kfab_cq *kfab_cq_of(struct fid *fid);
/* Progresses @cq: whether it has a completion or an error to read; locked. */
bool kfab_cq_ready(struct kfab_cq *cq);

/* kfab_cq_write() when the ring is full or already overflowing. */
int kfab_cq_write_over(struct kfab_cq *cq, const struct kfab_cq_entry *ent);

/*
 * Completion writers, called by endpoints under the domain lock. @src is
 * the sender's fi_addr (FI_ADDR_NOTAVAIL when unknown or not wanted).
 * They cannot fail short of memory exhaustion (-FI_ENOMEM, logged).
 * kfab_cq_write() is inline: while the ring has room a completion is a
 * few stores.
 */
static inline int kfab_cq_write(struct kfab_cq *cq, void *context,
				uint64_t flags, size_t len, void *buf,
				uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct kfab_cq_entry *ent, over;

	if (kfab_likely(cq->tail - cq->head < cq->size &&
			kfab_list_empty(&cq->overflow)))
		ent = &cq->ring[cq->tail & (cq->size - 1)];
	else
		ent = &over;
	ent->e.op_context = context;
	ent->e.flags = flags;
	ent->e.len = len;
	ent->e.buf = buf;
	ent->e.data = data;
	ent->e.tag = tag;
	ent->src = src;
	if (kfab_unlikely(ent == &over))
		return kfab_cq_write_over(cq, &over);
	cq->tail++;
	kfab_wait_written(&cq->wait);
	return 0;
}

/*
 * @err is a positive FI_E* value; @olen the bytes that did not fit; @why
 * the text of err_data (after the provider's name), NULL: @err's and
 * @prov_errno's.
 */
int kfab_cq_write_err_why(struct kfab_cq *cq, void *context, uint64_t flags,
			  int err, int prov_errno, size_t len, size_t olen,
			  uint64_t data, uint64_t tag, fi_addr_t src,
			  const char *why);

static inline int kfab_cq_write_err(struct kfab_cq *cq, void *context,
				    uint64_t flags, int err, int prov_errno,
				    size_t len, size_t olen, uint64_t data,
				    uint64_t tag, fi_addr_t src)
{
	return kfab_cq_write_err_why(cq, context, flags, err, prov_errno, len,
				     olen, data, tag, src, NULL);
}

/*
 * Endpoints progressed by reads of this CQ; caller holds the domain lock.
 * Each attach is one binding (cq->ref); an endpoint bound twice (transmit
 * and receive, or by several contexts) is progressed once; detach drops
 * one binding and forgets the endpoint with its last. attach fails with -FI_ENOSPC past KFAB_CQ_MAX_EPS.
 */
int kfab_cq_attach(struct kfab_cq *cq, struct kfab_progress *ep);
void kfab_cq_detach(struct kfab_cq *cq, struct kfab_progress *ep);
/*
 * Wakes @cq's progress thread, if it has one, to arm its endpoints
 * afresh: one now needs a bounded sleep. Lock held.
 */
void kfab_cq_progress_kick(struct kfab_cq *cq);
/*
 * fi_ep_bind() of @cq to the sides of @ep that @flags name, FI_TRANSMIT
 * into *@tx and FI_RECV into *@rx (NULL: the endpoint lacks that side),
 * one attachment each: -FI_EBADFLAGS when @flags name no side or one it
 * lacks (other bits are the caller's), -FI_EINVAL when a side has a CQ
 * already; logged. Nothing is bound on failure.
 */
int kfab_cq_bind_sides(struct kfab_cq *cq, struct kfab_progress *ep,
		       struct kfab_cq **tx, struct kfab_cq **rx,
		       uint64_t flags);

/* ------------------------------------------------------------------ */
/* a progress source: the part of an endpoint the CQs and counters drive */

struct kfab_progress {
	/*
	 * Runs the endpoint's data path once, with the domain lock held;
	 * returns the packets it handled.
	 */
	int (*progress)(struct kfab_progress *ep);
	/*
	 * Before sleeping, lock held: runs what is due (reliability tick,
	 * owed ACKs) and arms the wakeup of wake_fd. false: a packet came
	 * meanwhile, progress instead. true: sleep, at most *@usec
	 * microseconds when the endpoint has unacknowledged packets or
	 * packets to post (its tick must run), else (*@usec = -1) until woken.
	 */
	bool (*arm)(struct kfab_progress *ep, long *usec);
	/* after wake_fd polled readable, lock held */
	void (*drain)(struct kfab_progress *ep);
	int wake_fd;			/* poll()able wakeup of its queue */
	/* auto progress: interval, CPUs start:end:stride (stride 0: any) */
	uint32_t auto_usec;
	uint32_t aff_start, aff_end, aff_stride;
};

/*
 * The base of every endpoint (kfab_ep.c): fi_ep_bind(), fi_enable(),
 * fi_control() and the fi_ops_ep calls of an endpoint, a scalable
 * endpoint or one of its contexts, over the struct kfab_ep its provider
 * embeds. A provider's
 * fi_ops is the .ops of its struct kfab_ep_ops, KFAB_EP_FI_OPS:
 * kfab_ep_close, kfab_ep_bind and kfab_ep_control.
 */
enum kfab_ep_cntr {
	KFAB_CNTR_SEND,			/* FI_SEND */
	KFAB_CNTR_READ,			/* FI_READ */
	KFAB_CNTR_WRITE,		/* FI_WRITE */
	KFAB_CNTR_RECV,			/* FI_RECV */
	KFAB_CNTR_REMOTE_READ,		/* FI_REMOTE_READ */
	KFAB_CNTR_REMOTE_WRITE,		/* FI_REMOTE_WRITE */
	KFAB_CNTR_SLOTS
};

/*
 * The transmit or the receive side of an endpoint or a context: what
 * fi_ep_bind() and fi_control() set, what its data calls read.
 */
struct kfab_ep_side {
	bool enabled;			/* its data calls may go */
	bool selective;			/* FI_SELECTIVE_COMPLETION */
	uint64_t op_flags;		/* FI_GETOPSFLAG/FI_SETOPSFLAG */
	struct kfab_cq *cq;		/* NULL: none bound */
	struct kfab_cntr *cntr;		/* FI_SEND; FI_RECV */
	/* by KFAB_RMA_*: FI_READ, FI_WRITE; FI_REMOTE_READ, FI_REMOTE_WRITE */
	struct kfab_cntr *rma_cntr[2];
};

enum { KFAB_RMA_READ, KFAB_RMA_WRITE };

/*
 * The core's part of an endpoint, a scalable endpoint or a context
 * (FI_CLASS_TX_CTX, FI_CLASS_RX_CTX: the AV binds to its endpoint), in
 * the provider's object: its fid and what binds to it.
 */
struct kfab_ep {
	struct fid_ep fid;
	struct kfab_domain *domain;
	struct kfab_progress *prog;	/* what its CQs and counters progress */
	/* [0] transmit, [1] receive; NULL: it has no such side */
	struct kfab_ep_side *side[2];
	struct kfab_av *av;
	/* FI_OPT_MIN_MULTI_RECV's, fi_cancel()'s; NULL: no receive queue */
	struct kfab_rxq *rxq;
	bool enabled;
	const void *name;		/* fi_getname()'s, of namelen bytes */
	size_t namelen;
};

static inline struct kfab_ep *kfab_ep_of(struct fid_ep *fid)
{
	return kfab_container_of(fid, struct kfab_ep, fid);
}

/* The operation flags of @fid's transmit (@rx false) or receive side. */
static inline uint64_t kfab_ep_op_flags(struct fid_ep *fid, bool rx)
{
	const struct kfab_ep_side *side = kfab_ep_of(fid)->side[rx];

	return side ? side->op_flags : 0;
}

/*
 * @ep of @dom progressed through @prog, named by @name, with sides @tx
 * and @rx (NULL: none), their op flags those of @info's attributes when
 * @info is not NULL; nothing bound, not enabled.
 */
void kfab_ep_init(struct kfab_ep *ep, struct kfab_domain *dom,
		  struct kfab_progress *prog, struct kfab_ep_side *tx,
		  struct kfab_ep_side *rx, const void *name, size_t namelen,
		  const struct fi_info *info);

struct kfab_ep_ops {
	struct fi_ops ops;
	/*
	 * fi_ep_bind() before the core's, lock held, not enabled: the
	 * provider's refusals (0: the core binds), NULL: none.
	 */
	int (*bind_check)(struct fid *fid, struct fid *bfid, uint64_t flags);
	/* fi_enable() once the core's checks passed, lock held; NULL: none */
	int (*enable)(struct fid *fid);
	/*
	 * fi_close() before the core drops the bindings, lock held: what
	 * needs them still, or the provider's refusal (nothing changes);
	 * NULL: none.
	 */
	int (*close)(struct fid *fid);
	/* fi_close() once they are dropped, lock held; NULL: none */
	void (*free)(struct fid *fid);
	/*
	 * Every fi_rma(3) read (@read) and write of the core's
	 * kfab_rma_fi_ops (kfab_rma.h): @count <= KFAB_IOV_LIMIT iovecs
	 * (@iov not NULL when @count is not 0) with @peer's memory at @addr
	 * under @key; the provider takes its lock.
	 */
	ssize_t (*rma)(struct fid_ep *ep, bool read, const struct iovec *iov,
		       size_t count, fi_addr_t peer, uint64_t addr,
		       uint64_t key, uint64_t data, void *context,
		       uint64_t flags);
	/*
	 * fi_cancel(), lock held; NULL: the core cancels in the kfab_ep's
	 * rxq (-FI_ENOENT without one).
	 */
	ssize_t (*cancel)(struct fid *fid, void *context);
	/*
	 * fi_getopt() and fi_setopt(), lock held, of the FI_OPT_ENDPOINT
	 * options past the core's FI_OPT_MIN_MULTI_RECV; NULL: none.
	 * getopt answers through kfab_opt_get().
	 */
	int (*getopt)(struct fid *fid, int name, void *val, size_t *len);
	int (*setopt)(struct fid *fid, int name, const void *val,
		      size_t len);
	/*
	 * fi_tx_context() (@txa, @rxa NULL) or fi_rx_context() (@rxa, @txa
	 * NULL; either attr may be NULL) of context @index; NULL: not a
	 * scalable endpoint.
	 */
	int (*ctx_open)(struct fid_ep *ep, bool tx, int index,
			const struct fi_tx_attr *txa,
			const struct fi_rx_attr *rxa, struct fid_ep **ctx,
			void *context);
};

/* The .ops of a struct kfab_ep_ops: the core's, and @ops_open. */
#define KFAB_EP_FI_OPS(ops_open_fn) {					\
	.size = sizeof(struct fi_ops),					\
	.close = kfab_ep_close,						\
	.bind = kfab_ep_bind,						\
	.control = kfab_ep_control,					\
	.ops_open = ops_open_fn,					\
	.tostr = kfab_no_tostr,						\
	.ops_set = kfab_no_ops_set,					\
}

int kfab_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
/*
 * The fi_ops_cm of a connectionless endpoint: fi_getname() (its
 * kfab_ep's name), -FI_ENOSYS for the rest.
 */
extern struct fi_ops_cm kfab_ep_cm_ops;

/* the provider of @fid, an endpoint or a context, for its warnings */
static inline const struct kfab_provider *kfab_ep_kp(struct fid *fid)
{
	struct fid_ep *ep = kfab_container_of(fid, struct fid_ep, fid);

	return kfab_ep_of(ep)->domain->kp;
}

int kfab_ep_control(struct fid *fid, int command, void *arg);
/*
 * fi_close(): the provider's close(), the bindings dropped, an endpoint's
 * domain reference (a context holds none), the provider's free().
 */
int kfab_ep_close(struct fid *fid);

struct kfab_msg_ops;

/*
 * The fid of a new endpoint or context of class @fclass: fi_ops
 * @ops->ops, the core's fi_ops_ep (over @ops' hooks) and fi_ops_cm,
 * @msg's fi_ops_msg and fi_ops_tagged (kfab_msg.h), the core's
 * fi_ops_rma (kfab_rma.h) and @atomic.
 */
/*
 * fi_getopt()'s answer: @size bytes of @src into @val and *@len = @size;
 * -FI_ETOOSMALL, with *@len = @size, when *@len is smaller.
 */
int kfab_opt_get(void *val, size_t *len, const void *src, size_t size);
void kfab_ep_fid_init(struct kfab_ep *ep, size_t fclass, void *context,
		      struct kfab_ep_ops *ops, struct kfab_msg_ops *msg,
		      struct fi_ops_atomic *atomic);

/*
 * The progress hooks of a new endpoint, polled every @auto_usec by an
 * auto progress thread; no wakeup fd yet.
 */
static inline void kfab_progress_init(struct kfab_progress *p,
				      int (*progress)(struct kfab_progress *),
				      bool (*arm)(struct kfab_progress *,
						  long *),
				      void (*drain)(struct kfab_progress *),
				      uint32_t auto_usec)
{
	*p = (struct kfab_progress){
		.progress = progress,
		.arm = arm,
		.drain = drain,
		.wake_fd = -1,
		.auto_usec = auto_usec,
	};
}

/*
 * The FI_E* code for a device layer's -errno from mapping a peer: a peer
 * that does not exist (or no longer) is -FI_EHOSTUNREACH, one of another
 * job or key -FI_EACCES, a link Down -FI_ENETDOWN; any other -errno is
 * itself (FI_E* below FI_ERRNO_OFFSET are errno values).
 */
int kfab_peer_err(int err);

/*
 * Whether a send, RMA or atomic with @flags writes a completion (fi_msg(3),
 * fi_tagged(3), fi_rma(3), fi_atomic(3)): FI_COMPLETION asks for one, even
 * with FI_INJECT (fi_sendmsg, fi_writemsg); else every operation but the
 * inject calls' does, unless the transmit CQ was bound with
 * FI_SELECTIVE_COMPLETION (@selective).
 */
static inline bool kfab_tx_comp(uint64_t flags, bool selective)
{
	return (flags & FI_COMPLETION) ||
	       (!selective && !(flags & FI_INJECT));
}

static inline int kfab_ep_progress(struct kfab_progress *ep)
{
	return ep->progress(ep);
}

/* Progresses each of @eps once: the packets handled. */
static inline int kfab_ep_progress_all(struct kfab_progress **eps, int n)
{
	int handled = 0;

	for (int i = 0; i < n; i++)
		handled += kfab_ep_progress(eps[i]);
	return handled;
}

/* ------------------------------------------------------------------ */
/* counter */

struct kfab_cntr {
	struct fid_cntr cntr_fid;
	struct kfab_domain *domain;
	struct kfab_waitobj wait;
	uint64_t cnt;			/* under the domain lock */
	uint64_t err;
	struct kfab_eps eps;
	int ref;			/* endpoint bindings, poll sets */
};

int kfab_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
/* The core's counter behind @fid, NULL when it is not one. */
struct kfab_cntr *kfab_cntr_of(struct fid *fid);
/* Progresses @cntr: its value plus its error count; lock held. */
uint64_t kfab_cntr_events(struct kfab_cntr *cntr);

/* fi_poll_open(): poll sets of CQs and counters (kfab_poll.c). */
int kfab_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);
/* Bindings of endpoints, as kfab_cq_attach()/kfab_cq_detach(). */
int kfab_cntr_attach(struct kfab_cntr *cntr, struct kfab_progress *ep);
void kfab_cntr_detach(struct kfab_cntr *cntr, struct kfab_progress *ep);

/* One operation completed, successfully or (_err) not; lock held. */
static inline void kfab_cntr_inc(struct kfab_cntr *cntr)
{
	cntr->cnt++;
	kfab_wait_written(&cntr->wait);
}

static inline void kfab_cntr_inc_err(struct kfab_cntr *cntr)
{
	cntr->err++;
	kfab_wait_written(&cntr->wait);
}

/*
 * Counting a completed operation into @cntr (NULL: none bound), with or
 * without a CQ entry; @err non-zero when it completed in error.
 */
static inline void kfab_cntr_add(struct kfab_cntr *cntr, int err)
{
	if (!cntr)
		return;
	if (err)
		kfab_cntr_inc_err(cntr);
	else
		kfab_cntr_inc(cntr);
}

/* fi_trywait() of a CQ or a counter (kfab_cq.c, kfab_cntr.c). */
int kfab_cq_trywait(struct fid *fid);
int kfab_cntr_trywait(struct fid *fid);

/* ------------------------------------------------------------------ */
/* event queue */

struct kfab_eq_event {
	struct kfab_list link;
	uint32_t event;
	bool err;
	size_t len;
	union {
		struct fi_eq_err_entry err_entry;
		uint8_t data[sizeof(struct fi_eq_cm_entry) + 256];
	} u;
	char err_data[KFAB_ERR_DATA_MAX];	/* err: what failed */
};

struct kfab_eq {
	struct fid_eq eq_fid;
	struct kfab_fabric *fabric;
	pthread_mutex_t mutex;		/* EQs are always thread safe */
	pthread_cond_t cond;		/* fi_eq_sread() sleeps here */
	enum fi_wait_obj wait_obj;
	struct kfab_list events;
	struct kfab_eq_event *err_last;
	int ref;			/* AVs bound */
};

/*
 * Queues an event from the provider (an AV's FI_AV_COMPLETE): @buf of
 * @len bytes, a struct fi_eq_err_entry when @err_data is not NULL (then
 * the entry's err_data text). 0 or -FI_ENOMEM / -FI_EINVAL, logged.
 */
int kfab_eq_post(struct kfab_eq *eq, uint32_t event, const void *buf,
		 size_t len, const char *err_data);

/* ------------------------------------------------------------------ */
/* memory region */

struct kfab_mr {
	struct fid_mr mr_fid;
	struct kfab_domain *domain;
	uint64_t access;
	uint64_t flags;
	/* what peers name addr: an offset, its address (FI_MR_VIRT_ADDR) */
	uint64_t offset;
	void *addr;
	size_t len;
	struct iovec iov[KFAB_IOV_LIMIT];
	size_t iov_count;
};

/* The domain's fi_ops_mr (kfab_mr.c). */
extern struct fi_ops_mr kfab_mr_ops;

/* The core's region behind @mr_fid, NULL when it is not one of ours. */
struct kfab_mr *kfab_mr_of(struct fid_mr *mr_fid);

/* The MR of @key in @domain (O(1)), or NULL. Caller holds the domain lock. */
struct kfab_mr *kfab_mr_lookup(struct kfab_domain *domain, uint64_t key);

/*
 * A peer's access to [@addr, @addr + @len) of the region @key (addresses
 * as peers name them: offsets, or virtual addresses), @access FI_REMOTE_READ and/or
 * FI_REMOTE_WRITE: the local memory as at most KFAB_IOV_LIMIT iovecs in
 * @iov, their count; -ENOKEY (no such region), -ERANGE (outside it) or
 * -EPERM (not registered for @access). Caller holds the domain lock.
 */
int kfab_mr_access(struct kfab_domain *domain, uint64_t key, uint64_t addr,
		   size_t len, uint64_t access, struct iovec *iov);

/* ------------------------------------------------------------------ */
/* iovecs (kfab_iov.c) */

/*
 * Copies @len bytes between @buf and @iov from byte @off on, into @iov
 * when @to_iov: the bytes copied. Any iovecs; the two below are inline for
 * the copy within one iovec every small message is.
 */
size_t kfab_iov_copy(const struct iovec *iov, size_t count, size_t off,
		     uint8_t *buf, size_t len, bool to_iov);

/* @len bytes of @iov from byte @off on into @buf: the bytes copied. */
static inline size_t kfab_iov_to_buf(const struct iovec *iov, size_t count,
				     size_t off, void *buf, size_t len)
{
	if (count == 1 && len && off <= iov->iov_len &&
	    len <= iov->iov_len - off) {
		memcpy(buf, (uint8_t *)iov->iov_base + off, len);
		return len;
	}
	return kfab_iov_copy(iov, count, off, buf, len, false);
}

/* @len bytes of @buf into @iov from byte @off on: the bytes copied. */
static inline size_t kfab_buf_to_iov(const struct iovec *iov, size_t count,
				     size_t off, const void *buf, size_t len)
{
	if (count == 1 && len && off <= iov->iov_len &&
	    len <= iov->iov_len - off) {
		memcpy((uint8_t *)iov->iov_base + off, buf, len);
		return len;
	}
	return kfab_iov_copy(iov, count, off, (uint8_t *)buf, len, true);
}

#endif /* KFAB_ULIB_PROV_H */
