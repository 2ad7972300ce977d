// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: kfab_opx endpoint names (FI_ADDR_OPX) and their text form,
 * see opx_info.h.
 */
#define _DEFAULT_SOURCE
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_info.h"
#include "opx_proto.h"

static uint64_t name_get(const void *name)
{
	uint64_t n;

	memcpy(&n, name, sizeof(n));
	return le64toh(n);
}

int opx_addr_key(const void *name, uint64_t *key)
{
	uint32_t k = opx_name_key(name_get(name));

	if (!opx_key_lid(k))
		return -FI_EINVAL;
	*key = k;
	return 0;
}

const char *opx_straddr(const void *name, char *buf, size_t *len)
{
	uint64_t n = name_get(name);
	uint32_t k = opx_name_key(n);
	int ret;

	ret = snprintf(buf, *len, OPX_ADDR_PREFIX "%u.%u.0x%x",
		       opx_key_lid(k), opx_key_ctxt(k), opx_name_session(n));
	*len = (size_t)ret + 1;
	return buf;
}

/* Decimal digits up to @max, or hex after "0x" when @hex; advances *@s. */
static int num_get(const char **s, int hex, uint64_t max, uint64_t *v)
{
	const char *p = *s;
	int digits = 0;

	*v = 0;
	if (hex) {
		if (p[0] != '0' || p[1] != 'x')
			return -FI_EINVAL;
		p += 2;
	}
	for (;; p++, digits++) {
		unsigned int d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (hex && *p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else
			break;
		*v = *v * (hex ? 16 : 10) + d;
		if (*v > max)
			return -FI_EINVAL;
	}
	if (!digits)
		return -FI_EINVAL;
	*s = p;
	return 0;
}

int opx_addr_parse(const char *s, uint8_t name[OPX_ADDRLEN])
{
	size_t plen = strlen(OPX_ADDR_PREFIX);
	uint64_t lid, ctxt, session, n;

	if (strncmp(s, OPX_ADDR_PREFIX, plen))
		return -FI_EINVAL;
	s += plen;
	if (strlen(s) == 16 && strspn(s, "0123456789abcdef") == 16) {
		/* fi_tostr()'s form: the name as one 64-bit hex number */
		n = strtoull(s, NULL, 16);
	} else {
		if (num_get(&s, 0, UINT16_MAX, &lid) || *s++ != '.' ||
		    num_get(&s, 0, UINT16_MAX, &ctxt) || *s++ != '.' ||
		    num_get(&s, 1, UINT32_MAX, &session) || *s)
			return -FI_EINVAL;
		n = opx_name((uint16_t)lid, (uint16_t)ctxt,
			     (uint32_t)session);
	}
	if (!opx_key_lid(opx_name_key(n)))
		return -FI_EINVAL;
	n = htole64(n);
	memcpy(name, &n, sizeof(n));
	return 0;
}
