/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The HFI ABI as the driver sees it: the uapi header, included verbatim,
 * plus the limits the spec gives in prose that the header does not spell
 * out as constants.
 */
#ifndef _KFAB_HFI_UAPI_H
#define _KFAB_HFI_UAPI_H

#include "../../uapi/kfab_hfi.h"

#define HFI_UUID_LEN		16	/* kfab_hfi_assign.uuid */
#define HFI_PKEY_MASK		0x7fff	/* the membership bit is ignored */
#define HFI_MAX_PEERS		4096	/* peer handles one file may hold */
#define HFI_KNOB_MAX		1000000	/* drop_ppm */

#endif /* _KFAB_HFI_UAPI_H */
