// SPDX-License-Identifier: GPL-2.0
/*
 * Range arithmetic on user-supplied 64-bit addresses and lengths.
 *
 * Pure functions, no state: every ioctl that takes an address and a
 * length goes through these, and kfab_core_kunit.c tests them row by row.
 * A range is [addr, addr + len); its end must be representable in a u64,
 * so a range that ends exactly at 2^64 is refused as wrapping.
 */
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/overflow.h>

#include "kfab_core.h"

int kfab_range_check(u64 addr, u64 len)
{
	u64 end;

	if (!len)
		return -EINVAL;
	if (check_add_overflow(addr, len, &end))
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_range_check);

unsigned long kfab_range_npages(u64 addr, u64 len)
{
	/* The last byte is addr + len - 1: no overflow once checked. */
	if (!len)
		return 0;
	return ((addr + len - 1) >> PAGE_SHIFT) - (addr >> PAGE_SHIFT) + 1;
}
EXPORT_SYMBOL_GPL(kfab_range_npages);

int kfab_range_within(u64 size, u64 offset, u64 len)
{
	u64 end;

	if (check_add_overflow(offset, len, &end) || end > size)
		return -EINVAL;
	return 0;
}
EXPORT_SYMBOL_GPL(kfab_range_within);
