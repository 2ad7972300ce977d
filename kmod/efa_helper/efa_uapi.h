/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The EFA ABI as the driver sees it: the uapi header, included verbatim,
 * plus the limits the spec gives in prose that the header does not spell
 * out as constants.
 */
#ifndef _KFAB_EFA_UAPI_H
#define _KFAB_EFA_UAPI_H

#include "../../uapi/kfab_efa.h"

#define EFA_QPN_MAX		0xffffff	/* qpns are 1..EFA_QPN_MAX */
#define EFA_MAX_PEERS		4096	/* peer handles one file may hold */
#define EFA_KNOB_MAX		1000000	/* the ppm knobs */
#define EFA_RNR_RETRY_MAX	7	/* and means: retry forever */

#endif /* _KFAB_EFA_UAPI_H */
