/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: what the queue protocols of both device layers (hfi_ring.c,
 * efa_ring.c) share: the _Atomic views of the uapi's plain words, the
 * armed/dead words of a control page, the seq word of an entry, and the
 * mapping of a queue's three parts (control page, entries, buffers).
 *
 * The shared words are plain __u64/__u32 in the uapi (the kernel uses its
 * own accessors on them); we access them through _Atomic views of the same
 * size and alignment, lock-free on every architecture kfab supports.
 */
#ifndef KFAB_ULIB_RING_H
#define KFAB_ULIB_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>

_Static_assert(sizeof(_Atomic __u64) == sizeof(__u64), "atomic u64 size");
_Static_assert(sizeof(_Atomic __u32) == sizeof(__u32), "atomic u32 size");

#define A64(p)	((_Atomic __u64 *)(p))
#define A32(p)	((_Atomic __u32 *)(p))

static inline bool kfab_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/*
 * Producer, step 4': full fence (pairs with the consumer's fence after
 * arming, step 6), then takes the armed word: true when the caller must
 * notify the owner.
 */
static inline bool kfab_ring_take_armed(__u32 *armed)
{
	atomic_thread_fence(memory_order_seq_cst);
	/* plain load first: a polling consumer's line is not dirtied */
	return atomic_load_explicit(A32(armed), memory_order_relaxed) &&
	       atomic_exchange_explicit(A32(armed), 0,
					memory_order_relaxed) == 1;
}

/* Consumer, step 6: arm, full fence; the caller then re-checks step 4. */
static inline void kfab_ring_arm(__u32 *armed)
{
	atomic_store_explicit(A32(armed), 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Non-zero once the kernel (or a backend, as it) set the dead word. */
static inline uint32_t kfab_ring_dead(const __u32 *dead)
{
	return atomic_load_explicit((const _Atomic __u32 *)dead,
				    memory_order_acquire);
}

/* Step 2: @hdrlen bytes of @hdr into an entry's header of @max, zero-filled. */
static inline void kfab_ring_hdr_fill(uint8_t *dst, size_t max,
				      const void *hdr, size_t hdrlen)
{
	if (hdrlen)
		memcpy(dst, hdr, hdrlen);
	memset(dst + hdrlen, 0, max - hdrlen);
}

/* Step 3, publish ticket @t: pairs with the consumer's acquire of seq. */
static inline void kfab_ring_publish(__u32 *seq, uint32_t t)
{
	atomic_store_explicit(A32(seq), t + 1u, memory_order_release);
}

/* Step 4: whether the entry of ticket @t is published (acquire). */
static inline bool kfab_ring_published(__u32 *seq, uint32_t t)
{
	return atomic_load_explicit(A32(seq), memory_order_acquire) == t + 1u;
}

/*
 * Step 4: a length a peer wrote, never beyond the buffer: a peer shares
 * our trust domain but may still be buggy.
 */
static inline uint32_t kfab_ring_len(uint32_t len, uint32_t max)
{
	return len > max ? max : len;
}

/* The three parts of a queue in a file: offsets and lengths. */
struct kfab_ring_parts {
	uint64_t off[3];	/* control page, entries, buffers */
	size_t len[3];
};

/*
 * The lengths of a queue's parts: the control page, @nent entries of
 * @entsize bytes and @nbuf buffers of @bufsize bytes, each in whole pages.
 */
void kfab_ring_size(struct kfab_ring_parts *p, size_t nent, size_t entsize,
		    size_t nbuf, size_t bufsize);

/* The parts of @fd mapped read-write into @m: 0, or -errno (logged). */
int kfab_ring_map(int fd, const struct kfab_ring_parts *p, void *m[3]);

/* munmap()s what of @m is mapped, @len as kfab_ring_parts.len. */
void kfab_ring_unmap(void *const m[3], const size_t len[3]);

#endif /* KFAB_ULIB_RING_H */
