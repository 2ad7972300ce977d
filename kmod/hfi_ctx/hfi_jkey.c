// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_hfi: job keys.
 *
 * A jkey is 16 bits, 1..0xffff. It is derived from the caller's uid and the
 * job UUID by siphash under a key drawn at module load, so nobody can pick
 * a UUID that collides with another job's jkey in advance. The table keeps
 * every live (uid, uuid) pair with a count of its contexts:
 *
 *   - the same pair while it is live gets the same jkey, whatever happened
 *     to other pairs in between (the pair is found by its hash, not by
 *     probing);
 *   - a new pair whose derived jkey is taken probes upwards (wrapping past
 *     0xffff to 1) to the next free value, so two live pairs never share a
 *     jkey;
 *   - the value is freed with the last context of the pair.
 */

#include <linux/hashtable.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/unaligned.h>
#include <kunit/visibility.h>

#include "hfi.h"

#define HFI_JKEY_MAX		0xffff

struct hfi_jkey_entry {
	struct hlist_node node;	/* in table->pairs, by hash */
	u64 hash;
	u32 uid;
	u8 uuid[HFI_UUID_LEN];
	u16 jkey;
	unsigned int refs;	/* live contexts of the pair */
};

static struct hfi_jkey_table hfi_jkeys;

VISIBLE_IF_KUNIT u64 hfi_jkey_hash(const siphash_key_t *key, u32 uid,
				   const u8 *uuid)
{
	return siphash_3u64(uid, get_unaligned_le64(uuid),
			    get_unaligned_le64(uuid + 8), key);
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_hash);

/* Folds a hash into 1..0xffff: never 0. */
VISIBLE_IF_KUNIT u16 hfi_jkey_from_hash(u64 hash)
{
	return (u16)(hash % HFI_JKEY_MAX) + 1;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_from_hash);

/* The probe sequence: 0xffff wraps to 1, never to 0. */
VISIBLE_IF_KUNIT u16 hfi_jkey_next(u16 jkey)
{
	return jkey >= HFI_JKEY_MAX ? 1 : jkey + 1;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_next);

VISIBLE_IF_KUNIT void hfi_jkey_table_init(struct hfi_jkey_table *t,
					  const siphash_key_t *key)
{
	mutex_init(&t->lock);
	t->key = *key;
	hash_init(t->pairs);
	xa_init(&t->used);
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_table_init);

static struct hfi_jkey_entry *hfi_jkey_find(struct hfi_jkey_table *t,
					    u64 hash, u32 uid, const u8 *uuid)
{
	struct hfi_jkey_entry *e;

	hash_for_each_possible(t->pairs, e, node, hash)
		if (e->hash == hash && e->uid == uid &&
		    !memcmp(e->uuid, uuid, HFI_UUID_LEN))
			return e;
	return NULL;
}

/* 0 and the jkey of the pair in @jkey; -ENOMEM; -EBUSY all values live. */
VISIBLE_IF_KUNIT int hfi_jkey_table_get(struct hfi_jkey_table *t, u32 uid,
					const u8 *uuid, u16 *jkey)
{
	u64 hash = hfi_jkey_hash(&t->key, uid, uuid);
	struct hfi_jkey_entry *e;
	unsigned int tries;
	u16 j;
	int ret;

	mutex_lock(&t->lock);
	e = hfi_jkey_find(t, hash, uid, uuid);
	if (e) {
		e->refs++;
		*jkey = e->jkey;
		mutex_unlock(&t->lock);
		return 0;
	}

	ret = -EBUSY;
	j = hfi_jkey_from_hash(hash);
	for (tries = 0; tries < HFI_JKEY_MAX; tries++) {
		if (!xa_load(&t->used, j)) {
			ret = 0;
			break;
		}
		j = hfi_jkey_next(j);
	}
	if (ret)
		goto out;

	ret = -ENOMEM;
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		goto out;
	e->hash = hash;
	e->uid = uid;
	memcpy(e->uuid, uuid, HFI_UUID_LEN);
	e->jkey = j;
	e->refs = 1;
	ret = xa_err(xa_store(&t->used, j, e, GFP_KERNEL));
	if (ret) {
		kfree(e);
		goto out;
	}
	hash_add(t->pairs, &e->node, hash);
	*jkey = j;
out:
	mutex_unlock(&t->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_table_get);

VISIBLE_IF_KUNIT void hfi_jkey_table_put(struct hfi_jkey_table *t, u16 jkey)
{
	struct hfi_jkey_entry *e;

	mutex_lock(&t->lock);
	e = xa_load(&t->used, jkey);
	if (WARN_ON_ONCE(!e))
		goto out;
	if (--e->refs)
		goto out;
	xa_erase(&t->used, jkey);
	hash_del(&e->node);
	kfree(e);
out:
	mutex_unlock(&t->lock);
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_table_put);

#if IS_ENABLED(CONFIG_KUNIT)
/* Contexts holding @jkey; 0 when the value is free. */
unsigned int hfi_jkey_table_refs(struct hfi_jkey_table *t, u16 jkey)
{
	struct hfi_jkey_entry *e;
	unsigned int refs;

	mutex_lock(&t->lock);
	e = xa_load(&t->used, jkey);
	refs = e ? e->refs : 0;
	mutex_unlock(&t->lock);
	return refs;
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_table_refs);
#endif

/* Frees whatever is left; the driver's table is empty by then. */
VISIBLE_IF_KUNIT void hfi_jkey_table_destroy(struct hfi_jkey_table *t)
{
	struct hfi_jkey_entry *e;
	unsigned long jkey;

	xa_for_each(&t->used, jkey, e) {
		hash_del(&e->node);
		kfree(e);
	}
	xa_destroy(&t->used);
	mutex_destroy(&t->lock);
}
EXPORT_SYMBOL_IF_KUNIT(hfi_jkey_table_destroy);

void hfi_jkey_init(void)
{
	siphash_key_t key;

	get_random_bytes(&key, sizeof(key));
	hfi_jkey_table_init(&hfi_jkeys, &key);
	memzero_explicit(&key, sizeof(key));
}

void hfi_jkey_exit(void)
{
	WARN_ON(!xa_empty(&hfi_jkeys.used));
	hfi_jkey_table_destroy(&hfi_jkeys);
}

/* The uid is the kernel-wide kuid: users of different namespaces differ. */
int hfi_jkey_get(kuid_t uid, const u8 *uuid, u16 *jkey)
{
	return hfi_jkey_table_get(&hfi_jkeys, __kuid_val(uid), uuid, jkey);
}

void hfi_jkey_put(u16 jkey)
{
	hfi_jkey_table_put(&hfi_jkeys, jkey);
}
