// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: strict parsing of the runtime parameters every provider shares.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "kfab_param.h"
#include "kfab_log.h"

int kfab_parse_u64(const char *s, uint64_t *val)
{
	unsigned int base = 10, d;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -FI_EINVAL;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned int)(*s - 'A' + 10);
		else
			return -FI_EINVAL;
		if (v > (UINT64_MAX - d) / base)
			return -FI_EINVAL;
		v = v * base + d;
	}
	*val = v;
	return 0;
}

int kfab_parse_bool(const char *s, bool *val)
{
	static const char *const yes[] = { "1", "on", "true", "yes" };
	static const char *const no[] = { "0", "off", "false", "no" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*val = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*val = false;
			return 0;
		}
	}
	return -FI_EINVAL;
}

int kfab_env_u64(const char *name, uint64_t def, uint64_t min, uint64_t max,
		 uint64_t *val)
{
	const char *s = getenv(name);
	uint64_t v;

	*val = def;
	if (!s || !*s)
		return 0;
	if (kfab_parse_u64(s, &v) || v < min || v > max) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be an integer in %llu..%llu (default %llu)",
			 name, s, (unsigned long long)min,
			 (unsigned long long)max, (unsigned long long)def);
		return -FI_EINVAL;
	}
	*val = v;
	return 0;
}

int kfab_env_u32(const char *name, uint32_t def, uint32_t min, uint32_t max,
		 uint32_t *val)
{
	uint64_t v;
	int ret = kfab_env_u64(name, def, min, max, &v);

	*val = (uint32_t)v;
	return ret;
}

int kfab_env_size(const char *name, uint64_t def, uint64_t min, uint64_t max,
		  size_t *val)
{
	uint64_t v;
	int ret = kfab_env_u64(name, def, min, max, &v);

	*val = (size_t)v;
	return ret;
}

int kfab_env_bool(const char *name, bool def, bool *val)
{
	const char *s = getenv(name);

	*val = def;
	if (!s || !*s)
		return 0;
	if (kfab_parse_bool(s, val)) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be a boolean: 0/1, on/off, true/false or yes/no (default %s)",
			 name, s, def ? "yes" : "no");
		return -FI_EINVAL;
	}
	return 0;
}

/* Only its name matters: fi_param_define() calls the variable FI_KFAB_*. */
static const struct fi_provider kfab_param_prov = {
	.name = "kfab",
};

void kfab_params_define(const struct kfab_param_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		fi_param_define(&t->prov, t->defs[i].name, t->defs[i].type,
				"%s", t->defs[i].help);
	fi_param_define(&kfab_param_prov, "backend", FI_PARAM_STRING,
			"Device backend of the kfab providers: auto, kmod (the kfab modules' /dev/kfab_* devices) or shm (shared memory files, no module). Default auto: kmod when the provider's device exists (see its man page), else shm.");
}
