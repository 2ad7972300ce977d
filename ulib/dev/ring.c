// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: mapping the parts of a queue, see ring.h.
 */
#include <errno.h>
#include <sys/mman.h>

#include "ring.h"
#include "kfab_sys.h"
#include "core/kfab_log.h"

void kfab_ring_size(struct kfab_ring_parts *p, size_t nent, size_t entsize,
		    size_t nbuf, size_t bufsize)
{
	p->len[0] = kfab_page_size();
	p->len[1] = kfab_page_round(nent * entsize);
	p->len[2] = kfab_page_round(nbuf * bufsize);
}

void kfab_ring_unmap(void *const m[3], const size_t len[3])
{
	for (int i = 0; i < 3; i++)
		if (m[i])
			munmap(m[i], len[i]);
}

int kfab_ring_map(int fd, const struct kfab_ring_parts *p, void *m[3])
{
	int ret;

	for (int i = 0; i < 3; i++)
		m[i] = NULL;
	for (int i = 0; i < 3; i++) {
		m[i] = kfab_map(fd, p->off[i], p->len[i],
				PROT_READ | PROT_WRITE);
		if (!m[i]) {
			ret = -errno;
			kfab_ring_unmap(m, p->len);
			return kfab_log_err(ret,
					    "mmap of the queues (%zu, %zu and %zu bytes)",
					    p->len[0], p->len[1], p->len[2]);
		}
	}
	return 0;
}
