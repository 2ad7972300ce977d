// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_mrail: the runtime parameters of fi_mrail(7), strictly parsed
 * (mrail_param.h gives the grammar).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "mrail_param.h"
#include "core/kfab_log.h"
#include "core/kfab_param.h"

#define ADDR_VAR	"FI_OFI_MRAIL_ADDR"
#define STRC_VAR	"FI_OFI_MRAIL_ADDR_STRC"
#define CONFIG_VAR	"FI_OFI_MRAIL_CONFIG"
#define CONFIG_DEFAULT	"16384:fixed,ULONG_MAX:striping"

#define STR(x)		#x
#define XSTR(x)		STR(x)

#define ADDR_FORM							\
	"use 1 to " XSTR(MRAIL_MAX_RAILS) " different rail addresses separated by commas, no spaces: device names (hfi0, efa0, ...), interface names, host names, IP addresses or FI_ADDR_STR addresses (fi_sockaddr_in://127.0.0.1:0)"
#define CONFIG_FORM							\
	"use 1 to " XSTR(MRAIL_MAX_CONFIG) " <max_size>:<policy> pairs separated by commas, max_size ascending and the last -1 (ULONG_MAX), policy fixed, round-robin or striping (default " CONFIG_DEFAULT ")"

static const struct kfab_param_def mrail_param_defs[] = {
	{ "addr", FI_PARAM_STRING,
	  "Rail addresses separated by commas, one rail each, at most " XSTR(MRAIL_MAX_RAILS) ", all of one core provider: kfab device names (hfi0, hfi1: kfab_opx units; efa0, efa1: kfab_efa devices), or interface names, host names, IP addresses or FI_ADDR_STR addresses (fi_sockaddr_in://, fi_sockaddr_in6://) for tcp;ofi_rxm (or the core provider the hints name after kfab_mrail). Required: unset, kfab_mrail has no rails." },
	{ "addr_strc", FI_PARAM_STRING,
	  "Deprecated: read as FI_OFI_MRAIL_ADDR when that is unset, with a warning." },
	{ "config", FI_PARAM_STRING,
	  "How messages use the rails: <max_size>:<policy> pairs separated by commas, max_size strictly ascending (a number as strtoul reads it in base 0, or -1 or ULONG_MAX), the last one ULONG_MAX; a message takes the policy of the first pair whose max_size it does not exceed. Policies (any case): fixed (the rail of the local rank, OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID, modulo the rails), round-robin (one rail per message, in turn), striping (across all rails). At most " XSTR(MRAIL_MAX_CONFIG) " pairs. Default " CONFIG_DEFAULT "." },
};

const struct kfab_param_table mrail_param_table =
	KFAB_PARAM_TABLE("ofi_mrail", mrail_param_defs);

static const char *const policy_names[] = {
	[MRAIL_POLICY_FIXED] = "fixed",
	[MRAIL_POLICY_ROUND_ROBIN] = "round-robin",
	[MRAIL_POLICY_STRIPING] = "striping",
};

const char *mrail_policy_name(enum mrail_policy policy)
{
	return policy_names[policy];
}

/* ------------------------------------------------------------------ */
/* FI_OFI_MRAIL_ADDR */

/* Splits @s in place into p->addr; @var names it in the warnings. */
static int addr_split(const char *var, const char *val, char *s,
		      struct mrail_params *p)
{
	for (char *f = s;; f++) {
		size_t len = strcspn(f, ",");
		char end = f[len];

		if (!len) {
			kfab_log(KFAB_LOG_WARN,
				 "%s=%s: empty rail address (two commas, or one at an end): " ADDR_FORM,
				 var, val);
			return -FI_EINVAL;
		}
		if (len > MRAIL_ADDR_MAX) {
			kfab_log(KFAB_LOG_WARN,
				 "%s=%s: rail address %zu is %zu characters long, more than %d: " ADDR_FORM,
				 var, val, p->naddr + 1, len, MRAIL_ADDR_MAX);
			return -FI_EINVAL;
		}
		if (strcspn(f, " \t\n\v\f\r") < len) {
			kfab_log(KFAB_LOG_WARN,
				 "%s=%s: rail address \"%.*s\" has a space in it: " ADDR_FORM,
				 var, val, (int)len, f);
			return -FI_EINVAL;
		}
		if (p->naddr == MRAIL_MAX_RAILS) {
			kfab_log(KFAB_LOG_WARN,
				 "%s=%s: more than %d rails: " ADDR_FORM,
				 var, val, MRAIL_MAX_RAILS);
			return -FI_EINVAL;
		}
		f[len] = '\0';
		for (size_t i = 0; i < p->naddr; i++) {
			if (!strcmp(p->addr[i], f)) {
				kfab_log(KFAB_LOG_WARN,
					 "%s=%s: rail address %s is listed twice: " ADDR_FORM,
					 var, val, f);
				return -FI_EINVAL;
			}
		}
		p->addr[p->naddr++] = f;
		if (!end)
			return 0;
		f += len;
	}
}

/* FI_OFI_MRAIL_ADDR, else FI_OFI_MRAIL_ADDR_STRC */
static int addr_load(struct mrail_params *p)
{
	const char *addr = getenv(ADDR_VAR), *strc = getenv(STRC_VAR);
	const char *var = ADDR_VAR, *val = addr;
	char *s;

	if (strc && *strc) {
		if (addr && *addr) {
			kfab_log(KFAB_LOG_WARN,
				 STRC_VAR "=%s is deprecated and ignored: " ADDR_VAR "=%s is set; unset " STRC_VAR,
				 strc, addr);
		} else {
			kfab_log(KFAB_LOG_WARN,
				 STRC_VAR "=%s is deprecated: set " ADDR_VAR " instead",
				 strc);
			var = STRC_VAR;
			val = strc;
		}
	}
	if (!val || !*val)
		return 0;
	s = strdup(val);
	if (!s)
		return -FI_ENOMEM;
	if (addr_split(var, val, s, p)) {
		free(s);
		p->naddr = 0;
		return -FI_EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* FI_OFI_MRAIL_CONFIG */

/*
 * -1, ULONG_MAX, or the whole of @s as strtoul(@s, base 0) reads it: not
 * kfab_parse_u64(), which has no octal, for the anchor's numbers.
 */
static int max_size_parse(const char *s, size_t *val)
{
	unsigned long v;
	char *end;

	if (!strcmp(s, "-1") || !strcasecmp(s, "ULONG_MAX")) {
		*val = ULONG_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)s[0]))
		return -FI_EINVAL;
	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end)
		return -FI_EINVAL;
	*val = v;
	return 0;
}

static int policy_parse(const char *s, enum mrail_policy *policy)
{
	for (size_t i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]);
	     i++) {
		if (!strcasecmp(s, policy_names[i])) {
			*policy = (enum mrail_policy)i;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/* One pair "<max_size>:<policy>", NUL-terminated in @f, into *@c. */
static int config_pair(const char *val, char *f, const struct mrail_params *p,
		       struct mrail_config *c)
{
	char *colon = strchr(f, ':');

	if (!*f) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: empty pair (two commas, or one at an end): " CONFIG_FORM,
			 val);
		return -FI_EINVAL;
	}
	if (!colon) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: pair \"%s\" has no ':' between max_size and policy: " CONFIG_FORM,
			 val, f);
		return -FI_EINVAL;
	}
	*colon = '\0';
	if (max_size_parse(f, &c->max_size)) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: max_size \"%s\" is not -1, ULONG_MAX or a number (decimal, 0x hex or 0 octal, no sign, at most ULONG_MAX): " CONFIG_FORM,
			 val, f);
		return -FI_EINVAL;
	}
	if (policy_parse(colon + 1, &c->policy)) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: policy \"%s\" is not fixed, round-robin or striping: " CONFIG_FORM,
			 val, colon + 1);
		return -FI_EINVAL;
	}
	if (p->nconfig && c->max_size <= p->config[p->nconfig - 1].max_size) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: max_size %zu is not above the previous pair's %zu: " CONFIG_FORM,
			 val, c->max_size, p->config[p->nconfig - 1].max_size);
		return -FI_EINVAL;
	}
	return 0;
}

static int config_parse(const char *val, char *s, struct mrail_params *p)
{
	for (char *f = s;; f++) {
		size_t len = strcspn(f, ",");
		char end = f[len];
		struct mrail_config c;

		if (p->nconfig == MRAIL_MAX_CONFIG) {
			kfab_log(KFAB_LOG_WARN,
				 CONFIG_VAR "=%s: more than %d pairs: " CONFIG_FORM,
				 val, MRAIL_MAX_CONFIG);
			return -FI_EINVAL;
		}
		f[len] = '\0';
		if (config_pair(val, f, p, &c))
			return -FI_EINVAL;
		p->config[p->nconfig++] = c;
		if (!end)
			break;
		f += len;
	}
	if (p->config[p->nconfig - 1].max_size != ULONG_MAX) {
		kfab_log(KFAB_LOG_WARN,
			 CONFIG_VAR "=%s: the last pair's max_size is %zu, so larger messages have no policy: end with a pair -1:<policy> (ULONG_MAX): " CONFIG_FORM,
			 val, p->config[p->nconfig - 1].max_size);
		return -FI_EINVAL;
	}
	return 0;
}

static int config_load(struct mrail_params *p)
{
	const char *val = getenv(CONFIG_VAR);
	char *s;
	int ret;

	if (!val || !*val)
		val = CONFIG_DEFAULT;
	s = strdup(val);
	if (!s)
		return -FI_ENOMEM;
	ret = config_parse(val, s, p);
	free(s);
	if (ret)
		p->nconfig = 0;
	return ret;
}

/* ------------------------------------------------------------------ */
/* the local rank */

static int local_rank_load(struct mrail_params *p)
{
	const char *name = "OMPI_COMM_WORLD_LOCAL_RANK";
	const char *s = getenv(name);

	if (!s || !*s)
		name = "MPI_LOCALRANKID";
	return kfab_env_u32(name, 0, 0, UINT32_MAX, &p->local_rank);
}

/* ------------------------------------------------------------------ */
/* mrail_params_load */

int mrail_params_load(struct mrail_params *p)
{
	int err = 0;

	memset(p, 0, sizeof(*p));
	kfab_keep_first(&err, addr_load(p));
	kfab_keep_first(&err, config_load(p));
	kfab_keep_first(&err, local_rank_load(p));
	if (err) {
		mrail_params_free(p);
		return err;
	}
	p->fixed_rail = p->naddr ? p->local_rank % p->naddr : 0;
	return 0;
}

void mrail_params_free(struct mrail_params *p)
{
	if (p->naddr)
		free(p->addr[0]);
	memset(p, 0, sizeof(*p));
}

enum mrail_policy mrail_policy_for(const struct mrail_params *p, size_t size)
{
	size_t i = 0;

	/* the last pair's max_size is ULONG_MAX */
	while (size > p->config[i].max_size)
		i++;
	return p->config[i].policy;
}
