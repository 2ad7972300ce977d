// SPDX-License-Identifier: GPL-2.0
/*
 * peer_test: an endpoint's peer records (core/kfab_peer.h) over the
 * core's AV, through a test provider with kfab_opx's names: find-or-create
 * by key, the AV path by index and its key check (an index whose entry
 * names another peer), addresses not in the AV, the hooks, iteration,
 * teardown releasing every record once, records from the pool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kfab_peer.h"
#include "opx/opx_info.h"
#include "opx/opx_proto.h"
#include "tests/tap.h"
#include "tests/test_prov.h"

static struct fi_provider test_prov = TEST_FI_PROVIDER("kfab_test");

static const struct kfab_provider kp = {
	.name = "kfab_test",
	.prov = &test_prov,
	OPX_PROVIDER_NAMES,
	.ep_open = test_ep_nosys,
};

/* the provider's record: its name as init and bind saw it */
struct rec {
	struct kfab_peer base;
	uint64_t init_name;
	uint64_t bound_name;
	int binds;
	int released;
	char *owned;			/* freed by release: ASan sees leaks */
};

static int inits, releases, refuse_init;

static struct rec *rec_of(struct kfab_peer *p)
{
	return kfab_container_of(p, struct rec, base);
}

static int rec_init(struct kfab_peers *ps, struct kfab_peer *p,
		    const void *name)
{
	struct rec *r = rec_of(p);

	(void)ps;
	if (refuse_init)
		return -FI_EINVAL;
	inits++;
	memcpy(&r->init_name, name, sizeof(r->init_name));
	r->owned = malloc(32);
	return r->owned ? 0 : -FI_ENOMEM;
}

static void rec_bind(struct kfab_peers *ps, struct kfab_peer *p,
		     const void *name)
{
	(void)ps;
	memcpy(&rec_of(p)->bound_name, name, sizeof(uint64_t));
	rec_of(p)->binds++;
}

static void rec_release(struct kfab_peers *ps, struct kfab_peer *p)
{
	(void)ps;
	rec_of(p)->released++;
	releases++;
	free(rec_of(p)->owned);
}

static char printed[64];

static void rec_print(const struct kfab_peer *p, char *buf, size_t len)
{
	snprintf(buf, len, "key %#llx", (unsigned long long)p->key);
	snprintf(printed, sizeof(printed), "%s", buf);
}

static const struct kfab_peer_ops rec_ops = {
	.size = sizeof(struct rec),
	.init = rec_init,
	.bind = rec_bind,
	.release = rec_release,
	.print = rec_print,
	.why_enoent = "test hint",
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;

static struct kfab_av *to_av(struct fid_av *av)
{
	return kfab_container_of(av, struct kfab_av, av_fid);
}

static void open_domain(void)
{
	struct fi_fabric_attr attr = {
		.name = "kfab-shm",
		.api_version = FI_VERSION(1, 17),
	};
	struct fi_info *info = fi_allocinfo();

	setenv("FI_KFAB_BACKEND", "shm", 1);
	TAP_EQ(kfab_fabric_open(&kp, &attr, &fabric, NULL), 0, "fabric opens");
	info->domain_attr->name = strdup("hfi0");
	TAP_EQ(fi_domain(fabric, info, &domain, NULL), 0, "domain opens");
	fi_freeinfo(info);
}

static uint64_t key_of(uint64_t name)
{
	return opx_name_key(name);
}

/* By key: one record per key, made once, from the pool. */
static void test_by_key(void)
{
	struct kfab_peers ps;
	struct kfab_peer *a, *b, *again, *p;
	uint64_t na = opx_name(1, 2, 0x11), nb = opx_name(1, 3, 0x22);
	void *dropped;
	int n = 0, bad = 0;

	kfab_peers_init(&ps, &rec_ops, &kp);
	inits = releases = 0;
	a = kfab_peers_get(&ps, key_of(na), &na);
	TAP_OK(a && a->key == key_of(na) && !a->err && inits == 1 &&
	       rec_of(a)->init_name == na, "get: a new record from its name");
	TAP_OK(kfab_peers_last(&ps, key_of(na)) == a,
	       "get: the last one found is cached");
	b = kfab_peers_get(&ps, key_of(nb), &nb);
	TAP_OK(b && b != a && inits == 2, "get: another key, another record");
	TAP_OK(!kfab_peers_last(&ps, key_of(na)), "cache: a is not the last");
	again = kfab_peers_get(&ps, key_of(na), &nb);
	TAP_OK(again == a && inits == 2 && rec_of(a)->init_name == na,
	       "get: a again, found by key, not made again");
	TAP_EQ(ps.pool.used, 2, "pool: two records handed out");

	refuse_init = 1;
	dropped = ps.pool.free;
	TAP_OK(!kfab_peers_get(&ps, 77, &na), "init refuses: no record");
	TAP_OK(ps.pool.used == 2 && ps.pool.free == dropped,
	       "init refuses: the record went back to the pool");
	refuse_init = 0;
	p = kfab_peers_get(&ps, 77, &na);
	TAP_OK(p && (void *)p == dropped,
	       "pool: the record put back is handed out again");

	/* many keys: the map grows, each still found */
	for (uint16_t i = 0; i < 1000; i++) {
		uint64_t nm = opx_name(2, i, i);

		bad += !kfab_peers_get(&ps, key_of(nm), &nm);
	}
	for (uint16_t i = 0; i < 1000; i++) {
		uint64_t nm = opx_name(2, i, i);

		p = kfab_peers_get(&ps, key_of(nm), &nm);
		bad += !p || rec_of(p)->init_name != nm;
	}
	TAP_EQ(bad, 0, "1000 more keys, each found again");
	TAP_EQ(inits, 1003, "each made once");

	kfab_peers_for_each(p, &ps) {
		if (n == 0)
			bad += p != a;
		if (n == 1)
			bad += p != b;
		n++;
	}
	TAP_OK(n == 1003 && !bad, "iteration: every record, oldest first");

	TAP_EQ(kfab_peer_unreachable(&ps, b, -ENOENT), -FI_EHOSTUNREACH,
	       "unreachable: -ENOENT is -FI_EHOSTUNREACH");
	TAP_OK(b->err == -FI_EHOSTUNREACH && !a->err,
	       "unreachable: kept in that record's err");
	TAP_OK(!strcmp(printed, "key 0x30001"), "unreachable: names the peer");

	kfab_peers_fini(&ps);
	TAP_EQ(releases, 1003, "fini: release once per record");
	TAP_OK(!ps.pool.slabs && !ps.map.count && !ps.last,
	       "fini: pool, map and cache empty");
}

/* The AV path: by index, checked against the entry's key. */
static void test_by_addr(void)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	uint64_t names[3] = { opx_name(5, 1, 0x51), opx_name(5, 2, 0x52),
			      opx_name(5, 3, 0x53) };
	uint64_t other[2] = { opx_name(6, 1, 0x61), opx_name(5, 2, 0x99) };
	struct kfab_peer *p0, *p1, *p, *q;
	struct fid_av *av, *av2;
	struct kfab_peers ps;
	fi_addr_t fa[3], fb[2], again;
	int err = 0;

	TAP_EQ(fi_av_open(domain, &attr, &av, NULL), 0, "AV opens");
	TAP_EQ(fi_av_insert(av, names, 3, fa, 0, NULL), 3, "3 names");
	kfab_peers_init(&ps, &rec_ops, &kp);
	inits = releases = 0;

	p0 = kfab_peers_at(&ps, to_av(av), fa[0], "test", &err);
	TAP_OK(p0 && p0->key == key_of(names[0]) &&
	       rec_of(p0)->init_name == names[0] && rec_of(p0)->binds == 1 &&
	       rec_of(p0)->bound_name == names[0],
	       "at: the record of entry 0, made and bound from its name");
	TAP_OK(ps.nidx == 3 && ps.byidx[fa[0]] == p0,
	       "at: kept at its index, the array the AV's size");
	TAP_OK(kfab_peers_at(&ps, to_av(av), fa[0], "test", &err) == p0 &&
	       rec_of(p0)->binds == 1, "at: again from the array, no bind");
	p1 = kfab_peers_at(&ps, to_av(av), fa[1], "test", &err);
	TAP_OK(p1 && p1 != p0 && inits == 2, "at: entry 1, its own record");
	q = kfab_peers_get(&ps, key_of(names[2]), &names[2]);
	p = kfab_peers_at(&ps, to_av(av), fa[2], "test", &err);
	TAP_OK(p == q && inits == 3 && rec_of(p)->binds == 1,
	       "at: a record made by key is the entry's, bound to it");

	/* removed: not in the AV; inserted again: a new index, same record */
	TAP_EQ(fi_av_remove(av, &fa[1], 1, 0), 0, "remove entry 1");
	err = 0;
	TAP_OK(!kfab_peers_at(&ps, to_av(av), fa[1], "test", &err) &&
	       err == -FI_EINVAL, "at: a removed address: -FI_EINVAL");
	err = 0;
	TAP_OK(!kfab_peers_at(&ps, to_av(av), 1000, "test", &err) &&
	       err == -FI_EINVAL, "at: an address past the AV: -FI_EINVAL");
	err = 0;
	TAP_OK(!kfab_peers_at(&ps, NULL, fa[0], "test", &err) &&
	       err == -FI_EINVAL, "at: no AV: -FI_EINVAL");
	TAP_EQ(fi_av_insert(av, &names[1], 1, &again, 0, NULL), 1,
	       "insert entry 1's name again");
	TAP_OK(again != fa[1] &&
	       kfab_peers_at(&ps, to_av(av), again, "test", &err) == p1 &&
	       rec_of(p1)->binds == 2 && inits == 3,
	       "at: its new index finds its record, bound again");

	/* the same indices naming other peers: never the old records */
	TAP_EQ(fi_av_open(domain, &attr, &av2, NULL), 0, "a second AV");
	TAP_EQ(fi_av_insert(av2, other, 2, fb, 0, NULL), 2, "2 other names");
	TAP_OK(fb[0] == fa[0] && fb[1] == fa[1], "at the same indices");
	p = kfab_peers_at(&ps, to_av(av2), fb[0], "test", &err);
	TAP_OK(p && p != p0 && p->key == key_of(other[0]) && inits == 4,
	       "at: index 0 naming another peer: its own record");
	TAP_OK(kfab_peers_at(&ps, to_av(av), fa[0], "test", &err) == p0,
	       "at: index 0 of the first AV: its record again");
	p = kfab_peers_at(&ps, to_av(av2), fb[1], "test", &err);
	TAP_OK(p == p1 && inits == 4,
	       "at: another name of the same key: the same record");

	kfab_peers_fini(&ps);
	TAP_OK(releases == 4 && !ps.byidx && !ps.nidx,
	       "fini: every record released, the array freed");
	TAP_EQ(fi_close(&av2->fid), 0, "AV 2 closes");
	TAP_EQ(fi_close(&av->fid), 0, "AV closes");
}

int main(void)
{
	tap_start("peer_test");
	open_domain();
	test_by_key();
	test_by_addr();
	TAP_EQ(fi_close(&domain->fid), 0, "domain closes");
	TAP_EQ(fi_close(&fabric->fid), 0, "fabric closes");
	return tap_done();
}
