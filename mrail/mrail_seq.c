// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_mrail: the ordering engine of one peer, its setup and teardown
 * (mrail_seq.h has the receive path).
 */
#include <stdlib.h>

#include "core/kfab_log.h"
#include "mrail/mrail_seq.h"

int mrail_seq_init(struct mrail_seq *s, uint32_t window, uint32_t first)
{
	uint32_t n = 1;

	if (!window || window > MRAIL_SEQ_WINDOW_MAX)
		return kfab_log_err(-FI_EINVAL,
				    "kfab_mrail: ordering window %u: must be 1 to %u",
				    window, MRAIL_SEQ_WINDOW_MAX);
	while (n < window)
		n <<= 1;
	s->ring = calloc(n, sizeof(*s->ring));
	if (!s->ring)
		return -FI_ENOMEM;
	s->tx_next = first;
	s->rx_expected = first;
	s->window = window;
	s->mask = n - 1;
	s->held = 0;
	return 0;
}

void mrail_seq_fini(struct mrail_seq *s)
{
	free(s->ring);
	s->ring = NULL;
}

uint32_t mrail_seq_flush(struct mrail_seq *s,
			 void (*release)(void *item, void *arg), void *arg)
{
	uint32_t n = 0;

	for (uint32_t seq = s->rx_expected; s->held; seq++) {
		void **slot = &s->ring[seq & s->mask];

		if (!*slot)
			continue;
		release(*slot, arg);
		*slot = NULL;
		s->held--;
		n++;
	}
	return n;
}
