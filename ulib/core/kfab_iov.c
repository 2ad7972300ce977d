// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: copies between iovecs and flat buffers, for every provider's
 * data path.
 */
#include <stdbool.h>
#include <string.h>

#include "kfab_prov.h"

size_t kfab_iov_copy(const struct iovec *iov, size_t count, size_t off,
		     uint8_t *buf, size_t len, bool to_iov)
{
	size_t done = 0;

	for (size_t i = 0; i < count && done < len; i++) {
		uint8_t *p;
		size_t n;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		p = (uint8_t *)iov[i].iov_base + off;
		n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		if (to_iov)
			memcpy(p, buf + done, n);
		else
			memcpy(buf + done, p, n);
		done += n;
		off = 0;
	}
	return done;
}
