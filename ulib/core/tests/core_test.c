// SPDX-License-Identifier: GPL-2.0
/*
 * core_test: the provider core objects without an endpoint: fabric and
 * domain lifetimes, the AV (indices, lookup, remove, the reverse map,
 * bad names, FI_EVENT), the CQ (formats, overflow past its size without
 * loss, errors and readerr, progress of attached endpoints), the EQ and
 * memory regions, through a test transport with kfab_opx's names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/kfab_map.h"
#include "core/kfab_pool.h"
#include "core/kfab_prov.h"
#include "opx/opx_info.h"
#include "opx/opx_proto.h"
#include "tests/tap.h"
#include "tests/test_prov.h"

/* ------------------------------------------------------------------ */
/* the test transport */

static struct fi_provider test_prov = TEST_FI_PROVIDER("kfab_test");

static int ep_opens;
static int params_loaded, params_freed, params_fail;

static int test_ep_open(struct fid_domain *domain, struct fi_info *info,
			struct fid_ep **ep, void *context)
{
	ep_opens++;
	return test_ep_nosys(domain, info, ep, context);
}

static int test_params_load(void **params)
{
	if (params_fail)
		return -FI_EINVAL;
	params_loaded++;
	*params = malloc(16);
	return *params ? 0 : -FI_ENOMEM;
}

static void test_params_free(void *params)
{
	params_freed++;
	free(params);
}

static const struct kfab_provider kp = {
	.name = "kfab_test",
	.prov = &test_prov,
	OPX_PROVIDER_NAMES,
	.ep_open = test_ep_open,
	.rx_ctx_bits_max = 4,
	.params_load = test_params_load,
	.params_free = test_params_free,
};

/* a fake endpoint: each progress call may complete into a CQ */
struct test_ep {
	struct kfab_progress base;
	struct kfab_cq *cq;
	int progressed;
	int complete;		/* completions to write on next progress */
};

static int test_ep_progress(struct kfab_progress *ep)
{
	struct test_ep *t = kfab_container_of(ep, struct test_ep, base);
	int n = t->complete;

	t->progressed++;
	for (; t->complete > 0; t->complete--)
		kfab_cq_write(t->cq, (void *)(uintptr_t)(0xe0 + t->complete),
			      FI_RECV | FI_MSG, 1, NULL, 0, 0, 7);
	return n;
}

static uint64_t name(uint16_t lid, uint16_t ctxt, uint32_t session)
{
	return opx_name(lid, ctxt, session);
}

static struct fid_fabric *fabric;
static struct fid_domain *domain;

static struct kfab_domain *to_dom(struct fid_domain *d)
{
	return kfab_container_of(d, struct kfab_domain, domain_fid);
}

static int domain_open(const char *dname, enum fi_threading threading,
		       struct fid_domain **d)
{
	struct fi_info *info = fi_allocinfo();
	int ret;

	info->domain_attr->name = dname ? strdup(dname) : NULL;
	info->domain_attr->threading = threading;
	ret = fi_domain(fabric, info, d, NULL);
	fi_freeinfo(info);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fabric and domain */

static void test_fabric_domain(void)
{
	struct fi_fabric_attr attr = {
		.name = "kfab-shm",
		.api_version = FI_VERSION(1, 17),
	};
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
/* address vector */

static struct kfab_av *to_av(struct fid_av *av)
{
	return kfab_container_of(av, struct kfab_av, av_fid);
}

static void test_av_table(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	uint64_t names[4] = {
		name(1, 1, 0x11), name(1, 2, 0x12), name(0, 3, 0x13),
		name(2, 1, 0x21),
	};
	fi_addr_t fa[4], rm;
	struct fid_av *av;
	int sync_err[4];
	uint8_t buf[16];
	size_t len;
	char str[64];

	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), 0, "AV table opens");
	TAP_EQ(fi_close(&domain->fid), -FI_EBUSY, "domain busy with an AV");

	/* three good names and one with LID 0 */
	memset(sync_err, 0x55, sizeof(sync_err));
	TAP_EQ(fi_av_insert(av, names, 4, fa, FI_SYNC_ERR, sync_err), 3,
	       "insert: 3 of 4 (LID 0 is not a name)");
	TAP_OK(fa[0] == 0 && fa[1] == 1 && fa[2] == FI_ADDR_NOTAVAIL &&
	       fa[3] == 2, "indices 0, 1, NOTAVAIL, 2");
	TAP_OK(!sync_err[0] && !sync_err[1] && sync_err[2] == FI_EINVAL &&
	       !sync_err[3], "FI_SYNC_ERR: 0, 0, FI_EINVAL, 0");
	/* indices go on across calls; fi_addr may be NULL for a table */
	TAP_EQ(fi_av_insert(av, &names[1], 1, NULL, 0, NULL), 1,
	       "insert with NULL fi_addr");
	TAP_EQ(to_av(av)->count, 4, "4 entries, index 3 last");
	TAP_EQ(fi_av_insert(av, names, 1, fa, FI_PEEK, NULL), -FI_EBADFLAGS,
	       "insert flags checked");

	/* lookup, with a short buffer */
	len = sizeof(buf);
	TAP_EQ(fi_av_lookup(av, 2, buf, &len), 0, "lookup 2");
	TAP_OK(len == 8 && !memcmp(buf, &names[3], 8), "lookup 2: name");
	memset(buf, 0, sizeof(buf));
	len = 4;
	TAP_EQ(fi_av_lookup(av, 0, buf, &len), 0, "lookup into 4 bytes");
	TAP_OK(len == 8 && !memcmp(buf, &names[0], 4) && !buf[4],
	       "truncated to 4, addrlen says 8");
	len = 8;
	TAP_EQ(fi_av_lookup(av, 9, buf, &len), -FI_EINVAL, "lookup 9");

	/* the reverse map; duplicates: the latest entry */
	TAP_EQ(kfab_av_reverse(to_av(av), (uint32_t)names[0]), 0,
	       "reverse of name 0");
	TAP_EQ(kfab_av_reverse(to_av(av), (uint32_t)names[1]), 3,
	       "reverse of a name inserted twice: the latest");
	TAP_EQ(kfab_av_reverse(to_av(av), 0x77777), FI_ADDR_NOTAVAIL,
	       "reverse of an unknown key");

	/* remove: all or nothing, then the index stays unused */
	rm = 3;
	TAP_EQ(fi_av_remove(av, &rm, 1, 0), 0, "remove 3");
	TAP_EQ(kfab_av_reverse(to_av(av), (uint32_t)names[1]),
	       FI_ADDR_NOTAVAIL, "reverse after remove");
	TAP_EQ(fi_av_remove(av, &rm, 1, 0), -FI_EINVAL, "remove 3 again");
	len = 8;
	TAP_EQ(fi_av_lookup(av, 3, buf, &len), -FI_EINVAL, "lookup removed");
	fa[0] = 0;
	fa[1] = 77;
	TAP_EQ(fi_av_remove(av, fa, 2, 0), -FI_EINVAL,
	       "remove of 0 and an unknown one");
	TAP_OK(kfab_av_entry(to_av(av), 0), "0 still there");
	TAP_EQ(fi_av_remove(av, fa, 1, FI_MORE), -FI_EBADFLAGS,
	       "remove flags must be 0");
	TAP_EQ(fi_av_insert(av, &names[1], 1, fa, 0, NULL), 1, "re-insert");
	TAP_EQ(fa[0], 4, "re-insert takes a new index");
	TAP_EQ(kfab_av_reverse(to_av(av), (uint32_t)names[1]), 4,
	       "reverse finds the new index");

	/* straddr: the text form and *len */
	len = sizeof(str);
	fi_av_straddr(av, &names[3], str, &len);
	TAP_OK(!strcmp(str, "fi_addr_opx://2.1.0x21") && len == 23,
	       "straddr %s, len %zu", str, len);
	len = 10;
	fi_av_straddr(av, &names[3], str, &len);
	TAP_OK(len == 23 && strlen(str) == 9, "straddr truncated, len 23");

	/* busy while an endpoint is bound */
	to_av(av)->ref = 1;
	TAP_EQ(fi_close(&av->fid), -FI_EBUSY, "AV busy with an endpoint");
	to_av(av)->ref = 0;
	TAP_EQ(fi_close(&av->fid), 0, "AV closes");
}

/* rx_ctx_bits: fi_rx_addr() names an entry and a receive context. */
static void test_av_rx_ctx(void)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP, .rx_ctx_bits = 5 };
	uint64_t names[2] = { name(1, 1, 0x11), name(1, 2, 0x12) };
	fi_addr_t fa[2], rx;
	struct fid_av *av;
	uint8_t buf[8];
	size_t len = sizeof(buf);

	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), -FI_EINVAL,
	       "rx_ctx_bits 5: past the transport's 4");
	attr.rx_ctx_bits = 2;
	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), 0, "rx_ctx_bits 2");
	TAP_EQ(fi_av_insert(av, names, 2, fa, 0, NULL), 2, "insert 2");
	rx = fi_rx_addr(fa[1], 3, 2);
	TAP_OK(rx != fa[1] && kfab_av_entry(to_av(av), rx) ==
	       kfab_av_entry(to_av(av), fa[1]), "fi_rx_addr(1, 3): entry 1");
	TAP_EQ(kfab_av_rx_index(to_av(av), rx), 3, "its rx index is 3");
	TAP_EQ(kfab_av_rx_index(to_av(av), fa[1]), 0, "plain: rx index 0");
	TAP_EQ(kfab_av_rx_index(to_av(av), FI_ADDR_UNSPEC), 0,
	       "FI_ADDR_UNSPEC: rx index 0");
	TAP_OK(!kfab_av_entry(to_av(av), FI_ADDR_UNSPEC),
	       "FI_ADDR_UNSPEC is no entry");
	TAP_EQ(fi_av_lookup(av, rx, buf, &len), 0, "lookup through it");
	TAP_OK(!memcmp(buf, &names[1], 8), "the name of entry 1");
	TAP_EQ(fi_av_remove(av, &rx, 1, 0), 0, "remove through it");
	TAP_OK(!kfab_av_entry(to_av(av), fa[1]), "entry 1 is gone");
	TAP_EQ(fi_close(&av->fid), 0, "AV closes");
}

/* Many names: the table and the hash grow; removal keeps the rest. */
static void test_av_grow(void)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC, .count = 1 };
	enum { N = 5000 };
	uint64_t *names = malloc(N * sizeof(*names));
	fi_addr_t *fa = malloc(N * sizeof(*fa));
	struct fid_av *av;
	int bad = 0, *slots;
	size_t n = 0;

	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), 0, "AV opens");
	TAP_EQ(attr.type, FI_AV_MAP, "FI_AV_UNSPEC is FI_AV_MAP");
	for (int i = 0; i < N; i++)
		names[i] = name((uint16_t)(1 + i % 200), (uint16_t)(i / 200),
				0x1000 + i);
	TAP_EQ(fi_av_insert(av, names, N, fa, 0, NULL), N, "insert %d", N);
	for (int i = 0; i < N; i++)
		bad += fa[i] != (fi_addr_t)i ||
		       kfab_av_reverse(to_av(av), (uint32_t)names[i]) !=
		       (fi_addr_t)i;
	TAP_EQ(bad, 0, "indices and reverse map of %d names", N);
	/* remove every third name */
	for (int i = 0; i < N; i += 3)
		bad += fi_av_remove(av, &fa[i], 1, 0) != 0;
	TAP_EQ(bad, 0, "removed every third");
	for (int i = 0; i < N; i++)
		bad += kfab_av_reverse(to_av(av), (uint32_t)names[i]) !=
		       (i % 3 ? (fi_addr_t)i : FI_ADDR_NOTAVAIL);
	TAP_EQ(bad, 0, "reverse map after removals");

	/* an endpoint's dense array by AV index */
	slots = kfab_av_slots(to_av(av), NULL, &n, sizeof(*slots), 7);
	TAP_OK(slots && n == N && !slots[0] && !slots[N - 1],
	       "slots: grown to the AV's count, zeroed");
	slots[7] = 5;
	TAP_OK(kfab_av_slots(to_av(av), slots, &n, sizeof(*slots), 9) ==
	       slots && n == N, "slots: an index inside: the same array");
	slots = kfab_av_slots(to_av(av), slots, &n, sizeof(*slots), N + 10);
	TAP_OK(slots && n == N + 11 && slots[7] == 5 && !slots[N + 10],
	       "slots: an index beyond the AV: grown to it, kept");
	free(slots);
	TAP_EQ(fi_close(&av->fid), 0, "AV closes");
	free(names);
	free(fa);
}

/*
 * A layered provider: its names are two OPX names (rails) in one, the
 * length its fabric gives; each AV entry keeps the key of the second rail
 * in its provider data, filled and released by the AV hooks.
 */
struct rails_entry {
	uint64_t key2;
	uint64_t live;			/* RAILS_LIVE between the hooks */
};

#define RAILS_LIVE	0x1a7e5ULL

static int rails_inserted, rails_removed;

static int rails_addrlen(size_t *len)
{
	*len = 2 * OPX_ADDRLEN;
	return 0;
}

static int rails_av_insert(struct kfab_av *av, fi_addr_t addr,
			   struct kfab_av_entry *e)
{
	struct rails_entry *r = kfab_av_entry_prov(av, e);

	(void)addr;
	if (opx_addr_key(e->name + OPX_ADDRLEN, &r->key2))
		return -FI_EADDRNOTAVAIL;
	r->live = RAILS_LIVE;
	rails_inserted++;
	return 0;
}

static void rails_av_remove(struct kfab_av *av, fi_addr_t addr,
			    struct kfab_av_entry *e)
{
	struct rails_entry *r = kfab_av_entry_prov(av, e);

	(void)addr;
	rails_removed += r->live == RAILS_LIVE;
	r->live = 0;
}

static void test_av_layered(void)
{
	struct kfab_provider xp_rails = kp;
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	enum { N = 300 };
	uint64_t (*names)[2] = calloc(N, sizeof(*names));
	struct fid_fabric *f;
	struct fid_domain *d;
	struct fi_info *info = fi_allocinfo();
	struct fid_av *av;
	fi_addr_t fa[3], rm = 1;
	uint8_t buf[32];
	size_t len = sizeof(buf);
	int sync_err[3], bad = 0;

	xp_rails.name = "kfab_test_rails";
	xp_rails.fabric_addrlen = rails_addrlen;
	xp_rails.av_entry_size = sizeof(struct rails_entry);
	xp_rails.av_insert = rails_av_insert;
	xp_rails.av_remove = rails_av_remove;
	TAP_EQ(kfab_fabric_open(&xp_rails, NULL, &f, NULL), 0,
	       "layered: fabric opens");
	TAP_EQ(kfab_container_of(f, struct kfab_fabric, fabric_fid)->addrlen,
	       2 * OPX_ADDRLEN, "layered: the fabric's names are 2 rails");
	info->domain_attr->name = strdup("hfi0");
	TAP_EQ(fi_domain(f, info, &d, NULL), 0, "layered: domain opens");
	fi_freeinfo(info);
	TAP_EQ(fi_av_open(d, &attr, &av, NULL), 0, "layered: AV opens");
	for (int i = 0; i < N; i++) {
		names[i][0] = name(1, (uint16_t)(i % 100), 0x100 + i);
		names[i][1] = name(2, (uint16_t)(i % 100), 0x200 + i);
	}
	names[1][1] = name(0, 1, 1);	/* its second rail is no name */
	TAP_EQ(fi_av_insert(av, names, 3, fa, FI_SYNC_ERR, sync_err), 2,
	       "layered: 2 of 3 inserted");
	TAP_OK(fa[0] == 0 && fa[1] == FI_ADDR_NOTAVAIL && fa[2] == 1 &&
	       !sync_err[0] && sync_err[1] == FI_EADDRNOTAVAIL && !sync_err[2],
	       "layered: the one av_insert refused is NOTAVAIL, its error");
	TAP_EQ(rails_inserted, 2, "layered: av_insert ran twice");
	TAP_EQ(fi_av_lookup(av, 1, buf, &len), 0, "layered: lookup");
	TAP_OK(len == 2 * OPX_ADDRLEN && !memcmp(buf, names[2], len),
	       "layered: lookup gives both rails");
	TAP_EQ(fi_av_insert(av, names[3], N - 3, NULL, 0, NULL), N - 3,
	       "layered: %d more, the table grows", N - 3);
	for (int i = 0; i < N; i++) {
		/* names[1] was refused: names[i] is at i - 1 from 2 on */
		fi_addr_t a = i ? (fi_addr_t)i - 1 : 0;
		struct kfab_av_entry *e = kfab_av_entry(to_av(av), a);
		struct rails_entry *r;
		uint64_t key2;

		if (i == 1)
			continue;
		r = e ? kfab_av_entry_prov(to_av(av), e) : NULL;
		opx_addr_key(&names[i][1], &key2);
		bad += !r || r->live != RAILS_LIVE || r->key2 != key2;
	}
	TAP_EQ(bad, 0, "layered: every entry's provider data kept as it grew");
	TAP_EQ(fi_av_remove(av, &rm, 1, 0), 0, "layered: remove 1");
	TAP_EQ(rails_removed, 1, "layered: av_remove ran for it");
	TAP_EQ(fi_close(&av->fid), 0, "layered: AV closes");
	TAP_EQ(rails_removed, N - 1, "layered: av_remove ran for the rest");
	fi_close(&d->fid);
	fi_close(&f->fid);
	free(names);
}

static void test_av_event(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	uint64_t names[3] = {
		name(1, 1, 1), name(0, 1, 1), name(1, 2, 1),
	};
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry ent;
	struct fid_av *av;
	struct fid_eq *eq;
	uint32_t event;
	int ctx;

	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), 0, "FI_EVENT AV opens");
	TAP_EQ(fi_av_insert(av, names, 3, NULL, 0, &ctx), -FI_ENOEQ,
	       "FI_EVENT without an EQ");
	TAP_EQ(fi_eq_open(fabric, &eq_attr, &eq, NULL), 0, "EQ opens");
	TAP_EQ(fi_av_bind(av, &domain->fid, 0), -FI_EINVAL,
	       "only an EQ binds to an AV");
	TAP_EQ(fi_av_bind(av, &eq->fid, 0), 0, "EQ bound");
	TAP_EQ(fi_av_insert(av, names, 3, NULL, 0, &ctx), 0,
	       "FI_EVENT insert returns 0");
	TAP_EQ(fi_eq_read(eq, &event, &ent, sizeof(ent), 0), -FI_EAVAIL,
	       "the error comes first");
	TAP_EQ(fi_eq_readerr(eq, &err, 0), sizeof(err), "readerr");
	TAP_OK(err.fid == &av->fid && err.context == &ctx && err.data == 1 &&
	       err.err == FI_EINVAL, "error: fid, context, index 1, EINVAL");
	TAP_EQ(fi_eq_read(eq, &event, &ent, sizeof(ent), 0), sizeof(ent),
	       "then FI_AV_COMPLETE");
	TAP_OK(event == FI_AV_COMPLETE && ent.fid == &av->fid &&
	       ent.context == &ctx && ent.data == 2,
	       "FI_AV_COMPLETE: fid, context, 2 inserted");
	TAP_EQ(fi_close(&eq->fid), -FI_EBUSY, "EQ busy while bound to an AV");
	TAP_EQ(fi_close(&av->fid), 0, "AV closes");
	TAP_EQ(fi_close(&eq->fid), 0, "EQ closes");

	attr.flags = FI_READ;
	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), -FI_EBADFLAGS,
	       "FI_READ AVs refused");
	attr.flags = 0;
	attr.name = "shared";
	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), -FI_ENOSYS,
	       "named AVs refused");
	attr.name = NULL;
	attr.type = 42;
	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), -FI_EINVAL,
	       "unknown AV type refused");
}

/* ------------------------------------------------------------------ */
/* completion queue */

static struct kfab_cq *to_cq(struct fid_cq *cq)
{
	return kfab_container_of(cq, struct kfab_cq, cq_fid);
}

static int cq_open(enum fi_cq_format format, size_t size, struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.format = format,
		.size = size,
		.wait_obj = FI_WAIT_NONE,
	};

	return fi_cq_open(domain, &attr, cq, NULL);
}

static void test_cq_open(void)
{
	static const struct {
		size_t size, want;
	} sizes[] = {
		/* 0: the default 1024; others round up to a power of two */
		{ 0, 1024 }, { 1, 1 }, { 5, 8 }, { 1000, 1024 },
		{ 4096, 4096 },
	};
	struct fi_cq_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fid_cq *cq;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		TAP_EQ(cq_open(FI_CQ_FORMAT_UNSPEC, sizes[i].size, &cq), 0,
		       "CQ of size %zu", sizes[i].size);
		TAP_EQ(to_cq(cq)->size, sizes[i].want, "size %zu is %zu",
		       sizes[i].size, sizes[i].want);
		TAP_EQ(to_cq(cq)->format, FI_CQ_FORMAT_CONTEXT,
		       "FI_CQ_FORMAT_UNSPEC is CONTEXT");
		fi_close(&cq->fid);
	}
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), 0, "FI_WAIT_FD");
	fi_close(&cq->fid);
	attr.wait_obj = FI_WAIT_SET;
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), -FI_ENOSYS,
	       "FI_WAIT_SET refused");
	attr.wait_obj = FI_WAIT_UNSPEC;
	TAP_EQ(fi_cq_open(domain, &attr, &cq, NULL), 0, "FI_WAIT_UNSPEC");
	fi_close(&cq->fid);
	TAP_EQ(cq_open(FI_CQ_FORMAT_UNSPEC, (1U << 24) + 1, &cq), -FI_EINVAL,
	       "CQ too large");
	TAP_EQ(cq_open(42, 8, &cq), -FI_ENOSYS, "unknown format");
}

static void test_cq_formats(void)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA,
		FI_CQ_FORMAT_TAGGED,
	};
	struct kfab_domain *dom = to_dom(domain);
	union {
		struct fi_cq_entry c[2];
		struct fi_cq_msg_entry m[2];
		struct fi_cq_data_entry d[2];
		struct fi_cq_tagged_entry t[2];
	} u;
	int buf, ctx[2];
	fi_addr_t src[2];
	struct fid_cq *cq;
	ssize_t n;
	bool ok;

	for (size_t f = 0; f < 4; f++) {
		TAP_EQ(cq_open(formats[f], 16, &cq), 0, "CQ format %d",
		       formats[f]);
		kfab_lock(&dom->lock);
		for (int i = 0; i < 2; i++)
			kfab_cq_write(to_cq(cq), &ctx[i], FI_RECV | FI_TAGGED,
				      100 + i, &buf, 0xd0 + i, 0x7a9 + i, 5 + i);
		kfab_unlock(&dom->lock);
		memset(&u, 0xee, sizeof(u));
		n = fi_cq_readfrom(cq, &u, 2, src);
		TAP_EQ(n, 2, "format %d: 2 entries", formats[f]);
		ok = src[0] == 5 && src[1] == 6;
		for (int i = 0; i < 2; i++) {
			switch (formats[f]) {
			case FI_CQ_FORMAT_CONTEXT:
				ok &= u.c[i].op_context == &ctx[i];
				break;
			case FI_CQ_FORMAT_MSG:
				ok &= u.m[i].op_context == &ctx[i] &&
				      u.m[i].flags == (FI_RECV | FI_TAGGED) &&
				      u.m[i].len == 100u + i;
				break;
			case FI_CQ_FORMAT_DATA:
				ok &= u.d[i].op_context == &ctx[i] &&
				      u.d[i].len == 100u + i &&
				      u.d[i].buf == &buf &&
				      u.d[i].data == 0xd0u + i;
				break;
			default:
				ok &= u.t[i].op_context == &ctx[i] &&
				      u.t[i].len == 100u + i &&
				      u.t[i].data == 0xd0u + i &&
				      u.t[i].tag == 0x7a9u + i;
				break;
			}
		}
		TAP_OK(ok, "format %d: fields and sources", formats[f]);
		/* an entry of the format and no more is written */
		switch (formats[f]) {
		case FI_CQ_FORMAT_CONTEXT:
			ok = ((uint8_t *)&u)[sizeof(u.c)] == 0xee;
			break;
		case FI_CQ_FORMAT_MSG:
			ok = ((uint8_t *)&u)[sizeof(u.m)] == 0xee;
			break;
		case FI_CQ_FORMAT_DATA:
			ok = ((uint8_t *)&u)[sizeof(u.d)] == 0xee;
			break;
		default:
			ok = true;
			break;
		}
		TAP_OK(ok, "format %d: nothing written past 2 entries",
		       formats[f]);
		TAP_EQ(fi_cq_read(cq, &u, 2), -FI_EAGAIN, "then empty");
		fi_close(&cq->fid);
	}
}

/* Write far more than the ring holds, reading in between. */
static void test_cq_overflow(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct fi_cq_entry e[7];
	uintptr_t next_w = 1, next_r = 1;
	struct fid_cq *cq;
	bool order = true;
	ssize_t n;

	TAP_EQ(cq_open(FI_CQ_FORMAT_CONTEXT, 8, &cq), 0, "CQ of 8");
	for (int round = 0; round < 50; round++) {
		kfab_lock(&dom->lock);
		for (int i = 0; i < 5 + round % 13; i++)
			kfab_cq_write(to_cq(cq), (void *)next_w++, 0, 0, NULL,
				      0, 0, FI_ADDR_NOTAVAIL);
		kfab_unlock(&dom->lock);
		n = fi_cq_read(cq, e, 7);
		for (ssize_t i = 0; i < n; i++)
			order &= (uintptr_t)e[i].op_context == next_r++;
	}
	while ((n = fi_cq_read(cq, e, 7)) > 0)
		for (ssize_t i = 0; i < n; i++)
			order &= (uintptr_t)e[i].op_context == next_r++;
	TAP_EQ(n, -FI_EAGAIN, "drained");
	TAP_OK(order, "every completion, in order");
	TAP_EQ(next_r, next_w, "%lu written, all read",
	       (unsigned long)next_w - 1);
	TAP_OK(kfab_list_empty(&to_cq(cq)->overflow), "overflow list empty");
	/* and the ring serves again */
	kfab_lock(&dom->lock);
	kfab_cq_write(to_cq(cq), (void *)1, 0, 0, NULL, 0, 0, 0);
	kfab_unlock(&dom->lock);
	TAP_OK(kfab_list_empty(&to_cq(cq)->overflow), "back in the ring");
	TAP_EQ(fi_cq_read(cq, e, 7), 1, "read it");
	/* entries left at close are freed (ASan checks) */
	kfab_lock(&dom->lock);
	for (int i = 0; i < 20; i++)
		kfab_cq_write(to_cq(cq), NULL, 0, 0, NULL, 0, 0, 0);
	kfab_cq_write_err(to_cq(cq), NULL, 0, FI_ECANCELED, 0, 0, 0, 0, 0, 0);
	kfab_unlock(&dom->lock);
	TAP_EQ(fi_close(&cq->fid), 0, "CQ with entries left closes");
}

static void test_cq_errors(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err;
	const char *first_data;
	char user[8], buf[128];
	struct fid_cq *cq;
	int ctx;

	TAP_EQ(cq_open(FI_CQ_FORMAT_TAGGED, 8, &cq), 0, "tagged CQ");
	TAP_EQ(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN, "readerr: nothing");
	kfab_lock(&dom->lock);
	kfab_cq_write(to_cq(cq), NULL, FI_SEND, 0, NULL, 0, 0, 0);
	kfab_cq_write_err(to_cq(cq), &ctx, FI_RECV | FI_TAGGED, FI_ETRUNC,
			  -FI_ETRUNC, 64, 36, 0x55, 0x77, 3);
	kfab_cq_write_err(to_cq(cq), &ctx, FI_RECV, FI_EIO, -ECONNRESET, 0,
			  0, 0, 0, 3);
	kfab_unlock(&dom->lock);
	TAP_EQ(fi_cq_read(cq, e, 4), -FI_EAVAIL, "read: an error is queued");

	/* err_data_size 0: err_data is ours until the next readerr */
	memset(&err, 0, sizeof(err));
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr returns 1");
	TAP_OK(err.op_context == &ctx && err.err == FI_ETRUNC &&
	       err.prov_errno == -FI_ETRUNC && err.len == 64 &&
	       err.olen == 36 && err.data == 0x55 && err.tag == 0x77 &&
	       err.flags == (FI_RECV | FI_TAGGED), "error entry fields");
	TAP_OK(err.err_data && err.err_data_size ==
	       strlen(err.err_data) + 1 && strstr(err.err_data, "kfab_test"),
	       "err_data is our text: %s", (char *)err.err_data);
	first_data = err.err_data;
	TAP_OK(!strcmp(fi_cq_strerror(cq, err.prov_errno, err.err_data,
				      NULL, 0), first_data),
	       "strerror without a buffer: the err_data text");
	fi_cq_strerror(cq, err.prov_errno, NULL, buf, sizeof(buf));
	TAP_OK(!strcmp(buf, fi_strerror(FI_ETRUNC)),
	       "strerror of prov_errno -FI_ETRUNC: %s", buf);

	/* err_data_size > 0: copied into the caller's buffer */
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr into 8 bytes");
	TAP_OK(err.err_data == user && err.err_data_size == sizeof(user) &&
	       strlen(user) == 7, "7 characters and a NUL: %s", user);
	TAP_OK(!strcmp(kfab_strerror(err.prov_errno, NULL, NULL, 0),
		       strerror(ECONNRESET)), "prov_errno -ECONNRESET reads");

	/* then the completion behind them */
	TAP_EQ(fi_cq_read(cq, e, 4), 1, "the success after the errors");
	TAP_EQ(fi_cq_read(cq, e, 4), -FI_EAGAIN, "empty");
	TAP_EQ(fi_cq_sread(cq, e, 1, NULL, 0), -FI_EINVAL,
	       "sread: the CQ has no wait object");
	TAP_EQ(fi_cq_signal(cq), 0, "signal: nothing to wake");
	fi_close(&cq->fid);
}

/* Before API 1.5 the entry ends at err_data. */
static void test_cq_err_old_api(void)
{
	struct fi_fabric_attr attr = {
		.name = "kfab-shm",
		.api_version = FI_VERSION(1, 4),
	};
	struct fid_fabric *f;
	struct fid_domain *d;
	struct fi_info *info = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .size = 4 };
	struct fi_cq_err_entry err;
	struct fid_cq *cq;

	info->domain_attr->name = strdup("hfi0");
	TAP_EQ(kfab_fabric_open(&kp, &attr, &f, NULL), 0, "fabric, API 1.4");
	TAP_EQ(fi_domain(f, info, &d, NULL), 0, "domain, API 1.4");
	TAP_EQ(fi_cq_open(d, &cq_attr, &cq, NULL), 0, "CQ, API 1.4");
	kfab_cq_write_err(to_cq(cq), NULL, 0, FI_EIO, 0, 0, 0, 0, 0, 0);
	memset(&err, 0, sizeof(err));
	err.err_data_size = 0xdead;
	TAP_EQ(fi_cq_readerr(cq, &err, 0), 1, "readerr, API 1.4");
	TAP_OK(err.err_data && err.err_data_size == 0xdead,
	       "err_data ours, err_data_size untouched");
	fi_close(&cq->fid);
	fi_close(&d->fid);
	fi_close(&f->fid);
	fi_freeinfo(info);
}

static void test_cq_progress(void)
{
	struct kfab_domain *dom = to_dom(domain);
	struct test_ep eps[KFAB_CQ_MAX_EPS + 1];
	struct fi_cq_msg_entry e[4];
	struct fid_cq *cq;
	int ret = 0;

	memset(eps, 0, sizeof(eps));
	TAP_EQ(cq_open(FI_CQ_FORMAT_MSG, 8, &cq), 0, "CQ for endpoints");
	for (int i = 0; i <= KFAB_CQ_MAX_EPS; i++) {
		eps[i].base.progress = test_ep_progress;
		eps[i].base.wake_fd = -1;
		eps[i].cq = to_cq(cq);
	}
	kfab_lock(&dom->lock);
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[0].base), 0, "attach");
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[0].base), 0, "attach again");
	kfab_unlock(&dom->lock);
	TAP_OK(to_cq(cq)->eps.n == 1 && to_cq(cq)->ref == 2,
	       "one endpoint, two bindings");

	/* read(NULL, 0) drives progress */
	TAP_EQ(fi_cq_read(cq, NULL, 0), -FI_EAGAIN, "read(NULL, 0): empty");
	TAP_EQ(eps[0].progressed, 1, "progressed once");
	eps[0].complete = 3;
	TAP_EQ(fi_cq_read(cq, NULL, 0), 0, "read(NULL, 0): 0, entries wait");
	TAP_EQ(fi_cq_read(cq, e, 4), 3, "the endpoint's 3 completions");
	TAP_OK(e[0].op_context == (void *)0xe3 && e[2].len == 1,
	       "written by progress");
	TAP_EQ(fi_close(&cq->fid), -FI_EBUSY, "CQ busy while bound");

	kfab_lock(&dom->lock);
	for (int i = 1; i < KFAB_CQ_MAX_EPS; i++)
		ret |= kfab_cq_attach(to_cq(cq), &eps[i].base);
	TAP_EQ(ret, 0, "attach %d endpoints", KFAB_CQ_MAX_EPS);
	TAP_EQ(kfab_cq_attach(to_cq(cq), &eps[KFAB_CQ_MAX_EPS].base),
	       -FI_ENOSPC, "one more: -FI_ENOSPC");
	for (int i = 1; i < KFAB_CQ_MAX_EPS; i++)
		kfab_cq_detach(to_cq(cq), &eps[i].base);
	kfab_cq_detach(to_cq(cq), &eps[0].base);
	kfab_unlock(&dom->lock);
	eps[0].progressed = 0;
	fi_cq_read(cq, NULL, 0);
	TAP_OK(to_cq(cq)->eps.n == 1 && eps[0].progressed == 1,
	       "one of two bindings dropped: still progressed");
	kfab_lock(&dom->lock);
	kfab_cq_detach(to_cq(cq), &eps[0].base);
	kfab_unlock(&dom->lock);
	TAP_OK(!to_cq(cq)->eps.n && !to_cq(cq)->ref, "all detached");

	/* an endpoint's sides, as fi_ep_bind() binds them */
	{
		struct kfab_cq *tx = NULL, *rx = NULL;

		kfab_lock(&dom->lock);
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  0), -FI_EBADFLAGS, "bind: no side");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, NULL,
					  FI_RECV), -FI_EBADFLAGS,
		       "bind: a side the endpoint lacks");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  FI_TRANSMIT | FI_RECV), 0,
		       "bind both sides");
		TAP_OK(tx == to_cq(cq) && rx == to_cq(cq) &&
		       to_cq(cq)->eps.n == 1 && to_cq(cq)->ref == 2,
		       "one endpoint, two bindings");
		TAP_EQ(kfab_cq_bind_sides(to_cq(cq), &eps[1].base, &tx, &rx,
					  FI_RECV), -FI_EINVAL,
		       "bind a side again");
		TAP_EQ(to_cq(cq)->ref, 2, "nothing bound by the refusal");
		kfab_cq_detach(to_cq(cq), &eps[1].base);
		kfab_cq_detach(to_cq(cq), &eps[1].base);
		kfab_unlock(&dom->lock);
		TAP_OK(!to_cq(cq)->eps.n && !to_cq(cq)->ref, "both unbound");
	}
	eps[0].progressed = 0;
	fi_cq_read(cq, NULL, 0);
	TAP_EQ(eps[0].progressed, 0, "a detached endpoint is left alone");
	TAP_EQ(fi_close(&cq->fid), 0, "CQ closes");
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
	tap_start("core_test");
	test_pool();
	test_fabric_domain();
	test_av_table();
	test_av_rx_ctx();
	test_av_grow();
	test_av_layered();
	test_av_event();
	test_cq_open();
	test_cq_formats();
	test_cq_overflow();
	test_cq_errors();
	test_cq_err_old_api();
	test_cq_progress();
	test_eq();
	test_mr();
	test_foreign_fid();
	test_map();
	test_mr_map();
	test_peer_err();
	test_iov_copy();
	TAP_EQ(fi_close(&domain->fid), 0, "domain closes");
	TAP_EQ(fi_close(&fabric->fid), 0, "fabric closes");
	return tap_done();
}
