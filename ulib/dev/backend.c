// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: FI_KFAB_BACKEND, the knob check and the peer list, see
 * backend.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_kmod.h"
#include "core/kfab_log.h"

int kfab_backend_get(bool kmod_present, const char *node,
		     enum kfab_backend *backend)
{
	const char *s = getenv("FI_KFAB_BACKEND");

	if (!s || !*s || !strcmp(s, "auto")) {
		*backend = kmod_present ? KFAB_BACKEND_KMOD : KFAB_BACKEND_SHM;
	} else if (!strcmp(s, "kmod")) {
		*backend = KFAB_BACKEND_KMOD;
	} else if (!strcmp(s, "shm")) {
		*backend = KFAB_BACKEND_SHM;
	} else {
		kfab_log(KFAB_LOG_WARN,
			 "FI_KFAB_BACKEND=%s: must be auto, kmod or shm (default auto: kmod when %s exists)",
			 s, node);
		return -EINVAL;
	}
	return 0;
}

const char *kfab_backend_fabric_name(enum kfab_backend backend)
{
	return backend == KFAB_BACKEND_KMOD ? "kfab-kmod" : "kfab-shm";
}

int kfab_backend_resolve(enum kfab_backend *backend, const char *kind,
			 unsigned int n)
{
	char node[64];

	switch (*backend) {
	case KFAB_BACKEND_KMOD:
	case KFAB_BACKEND_SHM:
		return 0;
	case KFAB_BACKEND_AUTO:
		kfab_kmod_node(kind, n, node, sizeof(node));
		if (kfab_kmod_present(kind, n)) {
			*backend = KFAB_BACKEND_KMOD;
			return 0;
		}
		kfab_log(KFAB_LOG_INFO, "%s%u: %s absent, using the shm backend",
			 kind, n, node);
		*backend = KFAB_BACKEND_SHM;
		return 0;
	}
	return kfab_log_err(-EINVAL, "%s%u: unknown backend %d", kind, n,
			    (int)*backend);
}

int kfab_knob_check(const char *kind, unsigned int n, int knob,
		    const char *name, uint32_t max, uint32_t value)
{
	if (!name)
		return kfab_log_err(-EINVAL, "%s%u: no knob %d", kind, n, knob);
	if (value > max)
		return kfab_log_err(-EINVAL, "%s%u: %s %u: must be in 0..%u",
				    kind, n, name, value, max);
	return 0;
}

const char *kfab_state_word(uint32_t state)
{
	static const char *const words[] = { "Down", "Active" };

	return state < sizeof(words) / sizeof(words[0]) ? words[state] : NULL;
}

int kfab_dev_peer_unknown(const char *kind, unsigned int n, const void *peer)
{
	return kfab_log_err(-EINVAL, "%s%u: peer %p is not one of this device",
			    kind, n, peer);
}
