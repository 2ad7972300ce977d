// SPDX-License-Identifier: GPL-2.0
/*
 * core_av_test: the provider core's address vector without an endpoint,
 * through a test transport with kfab_opx's names (core_transport.h):
 * indices, lookup, remove, the reverse map, bad names, rx_ctx_bits,
 * growth, a layered provider's names and entry data, FI_EVENT.
 */
#define _GNU_SOURCE
#include "core_transport.h"

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

int main(void)
{
	static const core_case_fn cases[] = {
		test_av_table, test_av_rx_ctx, test_av_grow, test_av_layered,
		test_av_event,
	};

	return core_main("core_av_test", cases, sizeof(cases) / sizeof(cases[0]),
			 true);
}
