/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * kfab: definitions shared by every kfab device ABI.
 *
 * Conventions for every ioctl argument in the kfab ABI:
 *  - all fields are fixed width; user addresses are __aligned_u64;
 *  - structs are padded explicitly to a multiple of 8 bytes;
 *  - reserved and padding fields must be zero on input (else -EINVAL)
 *    and are zero on output;
 *  - flag words are checked against an _ALL mask (unknown bit: -EINVAL);
 *  - unknown commands fail with -ENOTTY.
 */
#ifndef _UAPI_KFAB_ABI_H
#define _UAPI_KFAB_ABI_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* ioctl type shared by kfab devices: HFI uses 0x00-0x1f, EFA 0x20-0x3f. */
#define KFAB_IOC_MAGIC		0xB8

/* Bumped on any incompatible change to an ioctl or a shared-memory format. */
#define KFAB_ABI_VERSION	1

/* Largest iovec array a single-copy request accepts. */
#define KFAB_IOV_MAX		64

/* One element of a user buffer list, fixed width for 32-bit callers too. */
struct kfab_iovec {
	__aligned_u64 addr;
	__aligned_u64 len;
};

/* Cache line size every shared-memory layout in kfab is aligned to. */
#define KFAB_CACHELINE		64

#endif /* _UAPI_KFAB_ABI_H */
