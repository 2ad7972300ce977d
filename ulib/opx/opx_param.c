// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the runtime parameters of kfab_opx (fi_opx(7) names, defaults
 * and ranges) and FI_OPX_HFI_SELECT.
 *
 * Ranges fi_opx(7) leaves open are ours: RELIABILITY_SERVICE_USEC_MAX and
 * AUTO_PROGRESS_INTERVAL_USEC 1..1000000 (a second at most), the two
 * DEV_REG thresholds 0..2147483647 (accepted, no effect: no GPU here).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <numa.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "core/kfab_param.h"
#include "core/kfab_log.h"
#include "opx_param.h"

#define USEC_MAX		1000000
#define BYTES_MAX		2147483646ULL
#define HFI_SELECTOR_MAX	4096

static const uint8_t opx_uuid_default[16] = {
	0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
	0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
};

static const struct kfab_param_def opx_param_defs[] = {
	{ "uuid", FI_PARAM_STRING,
	  "Job UUID: only processes of the same user with the same UUID communicate. 1 to 32 hex digits (e.g. ${RANDOM}) or the 36-character form. Default 00112233445566778899aabbccddeeff." },
	{ "force_cpuaffinity", FI_PARAM_BOOL,
	  "Bind the thread opening an endpoint to the CPU it runs on. Boolean (0/1, on/off, true/false, yes/no). Default no." },
	{ "reliability_service_usec_max", FI_PARAM_INT,
	  "Microseconds between PINGs of a peer with unacknowledged packets. 1..1000000. Default 500." },
	{ "reliability_service_pre_ack_rate", FI_PARAM_INT,
	  "A receiver acknowledges every N packets unprompted: 0 (disabled) or a power of two up to 32768. Default 64." },
	{ "selinux", FI_PARAM_BOOL,
	  "The host runs SELinux. Accepted for compatibility, without effect: kfab's job key depends only on the user and FI_OPX_UUID, so there is nothing to refresh. Boolean. Default no." },
	{ "hfi_select", FI_PARAM_STRING,
	  "HFI unit of a new context: a unit number, or selectors separated by commas, the first match wins: default, fixed:<unit>, numa:<unit>:<node|a-b>, core:<unit>:<cpu|a-b>. Default: among the Active units on the caller's NUMA node (else all Active units), the one at pid modulo their count." },
	{ "delivery_completion_threshold", FI_PARAM_INT,
	  "Deprecated alias of FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD, which wins when both are set. 16385..2147483646." },
	{ "sdma_bounce_buf_threshold", FI_PARAM_INT,
	  "Largest message, in bytes, copied to a bounce buffer so that its send completes before the receiver acknowledges it. 16385..2147483646. Default 16385." },
	{ "sdma_disable", FI_PARAM_INT,
	  "1 disables SDMA: large payloads go as packets. 0 or 1. Default 0." },
	{ "sdma_min_payload_bytes", FI_PARAM_INT,
	  "Smallest payload, in bytes, sent with SDMA; smaller ones go as packets. 64..2147483646. Default 16385." },
	{ "rzv_min_payload_bytes", FI_PARAM_INT,
	  "Smallest message, in bytes, sent with rendezvous; smaller ones try eager and multi-packet eager first. 64..65536. Default 16385." },
	{ "mp_eager_disable", FI_PARAM_INT,
	  "1 disables multi-packet eager. 0 or 1. Default 0." },
	{ "expected_receive_enable", FI_PARAM_BOOL,
	  "Expected receive (TID): rendezvous payloads are copied by SDMA straight into the receive buffer. Boolean. Default yes in kfab (no in fi_opx(7))." },
	{ "prog_affinity", FI_PARAM_STRING,
	  "CPUs of progress threads as start:end:stride (1:5:2 is CPUs 1, 3 and 5); start <= end < number of CPUs, stride >= 1. Default: no affinity." },
	{ "auto_progress_interval_usec", FI_PARAM_INT,
	  "Microseconds between the polls of an auto progress thread. 1..1000000. Default 1." },
	{ "pkey", FI_PARAM_INT,
	  "Partition key: 1..0xffff (decimal or 0x hex) with the low 15 bits not all zero. Default 0x8001." },
	{ "sl", FI_PARAM_INT,
	  "Service level. 0..15. Default 0." },
	{ "dev_reg_send_threshold", FI_PARAM_INT,
	  "GPU send copy threshold, in bytes: accepted, no effect in kfab (no GPU support). 0..2147483647. Default 4096." },
	{ "dev_reg_recv_threshold", FI_PARAM_INT,
	  "GPU receive copy threshold, in bytes: accepted, no effect in kfab (no GPU support). 0..2147483647. Default 8192." },
};

const struct kfab_param_table opx_param_table =
	KFAB_PARAM_TABLE("opx", opx_param_defs);

/* ------------------------------------------------------------------ */
/* values with a shape of their own */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 1..32 hex digits, right-aligned in 16 bytes, or the 36-character form. */
static int uuid_load(uint8_t uuid[16])
{
	const char *s = getenv("FI_OPX_UUID");
	size_t len, i;

	memcpy(uuid, opx_uuid_default, 16);
	if (!s || !*s)
		return 0;
	len = strlen(s);
	if (len == 36 && !uuid_parse(s, uuid))
		return 0;
	if (len <= 32) {
		for (i = 0; i < len && hexval(s[i]) >= 0; i++)
			;
		if (i == len) {
			memset(uuid, 0, 16);
			for (i = 0; i < len; i++) {
				int v = hexval(s[len - 1 - i]);

				uuid[15 - i / 2] |= (uint8_t)(i & 1 ? v << 4 : v);
			}
			return 0;
		}
	}
	memcpy(uuid, opx_uuid_default, 16);
	kfab_log(KFAB_LOG_WARN,
		 "FI_OPX_UUID=%s: must be 1 to 32 hex digits or a UUID like 00112233-4455-6677-8899-aabbccddeeff (default 00112233445566778899aabbccddeeff)",
		 s);
	return -FI_EINVAL;
}

static int pre_ack_rate_load(uint32_t *rate)
{
	const char *name = "FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE";
	int ret = kfab_env_u32(name, 64, 0, 32768, rate);

	if (!ret && (*rate & (*rate - 1))) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: must be 0 (disabled) or a power of two up to 32768 (default 64)",
			 name, getenv(name));
		*rate = 64;
		ret = -FI_EINVAL;
	}
	return ret;
}

static int pkey_load(uint16_t *pkey)
{
	const char *name = "FI_OPX_PKEY";
	uint32_t v;
	int ret = kfab_env_u32(name, 0x8001, 1, 0xffff, &v);

	if (!ret && !(v & 0x7fff)) {
		kfab_log(KFAB_LOG_WARN,
			 "%s=%s: the low 15 bits of a partition key must not all be zero (default 0x8001)",
			 name, getenv(name));
		v = 0x8001;
		ret = -FI_EINVAL;
	}
	*pkey = (uint16_t)v;
	return ret;
}

/* The new name wins; the deprecated one is read only when it is alone. */
static int bounce_threshold_load(uint64_t *val)
{
	const char *old = "FI_OPX_DELIVERY_COMPLETION_THRESHOLD";
	const char *new = "FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD";
	const char *o = getenv(old), *n = getenv(new);
	const char *name = new;

	if (o && *o) {
		if (n && *n) {
			kfab_log(KFAB_LOG_WARN,
				 "%s is deprecated and ignored: %s is set",
				 old, new);
		} else {
			kfab_log(KFAB_LOG_WARN, "%s is deprecated: use %s",
				 old, new);
			name = old;
		}
	}
	return kfab_env_u64(name, 16385, 16385, BYTES_MAX, val);
}

static int prog_affinity_load(struct opx_params *p)
{
	const char *s = getenv("FI_OPX_PROG_AFFINITY");
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	const char *f = s;
	uint64_t v[3];
	char buf[24];

	p->prog_affinity_set = false;
	if (!s || !*s)
		return 0;
	for (int n = 0; n < 3; n++) {
		const char *c = strchr(f, ':');
		size_t len = c ? (size_t)(c - f) : strlen(f);

		/* three non-empty fields: colons after the first two only */
		if (!len || len >= sizeof(buf) || (n < 2) != !!c)
			goto bad;
		memcpy(buf, f, len);
		buf[len] = '\0';
		if (kfab_parse_u64(buf, &v[n]) || v[n] > UINT32_MAX)
			goto bad;
		if (c)
			f = c + 1;
	}
	if (v[0] > v[1] || v[2] < 1 || (long long)v[1] >= ncpu)
		goto bad;
	p->prog_affinity_set = true;
	p->prog_affinity_start = (uint32_t)v[0];
	p->prog_affinity_end = (uint32_t)v[1];
	p->prog_affinity_stride = (uint32_t)v[2];
	return 0;
bad:
	kfab_log(KFAB_LOG_WARN,
		 "FI_OPX_PROG_AFFINITY=%s: must be start:end:stride with start <= end < %ld (CPUs) and stride >= 1 (default: no affinity)",
		 s, ncpu);
	return -FI_EINVAL;
}

static int hfi_select_parse(const char *spec);

static int hfi_select_load(char **sel)
{
	const char *s = getenv("FI_OPX_HFI_SELECT");

	*sel = NULL;
	if (!s || !*s)
		return 0;
	if (hfi_select_parse(s))
		return -FI_EINVAL;
	*sel = strdup(s);
	if (!*sel) {
		kfab_log(KFAB_LOG_WARN, "FI_OPX_HFI_SELECT: out of memory");
		return -FI_ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* opx_params_load */

int opx_params_load(struct opx_params *p)
{
	uint64_t v;
	uint32_t u;
	int err = 0;

	memset(p, 0, sizeof(*p));
	kfab_keep_first(&err, uuid_load(p->uuid));
	kfab_keep_first(&err, kfab_env_bool("FI_OPX_FORCE_CPUAFFINITY", false,
					    &p->force_cpuaffinity));
	kfab_keep_first(&err, kfab_env_u32("FI_OPX_RELIABILITY_SERVICE_USEC_MAX",
					   500, 1, USEC_MAX,
					   &p->reliability_usec_max));
	kfab_keep_first(&err, pre_ack_rate_load(&p->pre_ack_rate));
	kfab_keep_first(&err, kfab_env_bool("FI_OPX_SELINUX", false,
					    &p->selinux));
	kfab_keep_first(&err,
			bounce_threshold_load(&p->sdma_bounce_buf_threshold));
	kfab_keep_first(&err, kfab_env_u64("FI_OPX_SDMA_DISABLE", 0, 0, 1, &v));
	p->sdma_disable = v;
	kfab_keep_first(&err, kfab_env_u64("FI_OPX_SDMA_MIN_PAYLOAD_BYTES",
					   16385, 64, BYTES_MAX,
					   &p->sdma_min_payload_bytes));
	kfab_keep_first(&err, kfab_env_u64("FI_OPX_RZV_MIN_PAYLOAD_BYTES",
					   16385, 64, 65536,
					   &p->rzv_min_payload_bytes));
	kfab_keep_first(&err, kfab_env_u64("FI_OPX_MP_EAGER_DISABLE", 0, 0, 1,
					   &v));
	p->mp_eager_disable = v;
	kfab_keep_first(&err, kfab_env_bool("FI_OPX_EXPECTED_RECEIVE_ENABLE",
					    true, &p->expected_receive_enable));
	kfab_keep_first(&err, prog_affinity_load(p));
	kfab_keep_first(&err, kfab_env_u32("FI_OPX_AUTO_PROGRESS_INTERVAL_USEC",
					   1, 1, USEC_MAX,
					   &p->auto_progress_interval_usec));
	kfab_keep_first(&err, pkey_load(&p->pkey));
	kfab_keep_first(&err, kfab_env_u32("FI_OPX_SL", 0, 0, 15, &u));
	p->sl = (uint8_t)u;
	kfab_keep_first(&err, kfab_env_u32("FI_OPX_DEV_REG_SEND_THRESHOLD",
					   4096, 0, INT_MAX,
					   &p->dev_reg_send_threshold));
	kfab_keep_first(&err, kfab_env_u32("FI_OPX_DEV_REG_RECV_THRESHOLD",
					   8192, 0, INT_MAX,
					   &p->dev_reg_recv_threshold));
	kfab_keep_first(&err, kfab_backend_get(kfab_hfi_kmod_present(0),
					       "/dev/kfab_hfi0", &p->backend));
	kfab_keep_first(&err, hfi_select_load(&p->hfi_select));
	if (err)
		opx_params_fini(p);
	return err;
}

void opx_params_fini(struct opx_params *p)
{
	free(p->hfi_select);
	p->hfi_select = NULL;
}

/* ------------------------------------------------------------------ */
/* FI_OPX_HFI_SELECT */

enum sel_type {
	SEL_DEFAULT,
	SEL_FIXED,
	SEL_NUMA,
	SEL_CORE,
};

struct sel {
	enum sel_type type;
	int unit;
	int lo, hi;		/* numa and core: the range matched */
};

struct sel_ctx {
	const char *spec;
	const struct opx_unit *units;
	int n;
	int cpu;
	int node;
	unsigned int unit;	/* out */
};

/* A base-10 number of @len characters in [0, INT_MAX]. */
static int sel_num(const char *s, size_t len, int *val)
{
	long long v = 0;

	if (!len)
		return -FI_EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -FI_EINVAL;
		v = v * 10 + (s[i] - '0');
		if (v > INT_MAX)
			return -FI_EINVAL;
	}
	*val = (int)v;
	return 0;
}

/* <n> or <a>-<b> with a <= b */
static int sel_range(const char *s, size_t len, int *lo, int *hi)
{
	const char *dash = memchr(s, '-', len);

	if (!dash) {
		if (sel_num(s, len, lo))
			return -FI_EINVAL;
		*hi = *lo;
		return 0;
	}
	if (sel_num(s, (size_t)(dash - s), lo) ||
	    sel_num(dash + 1, len - (size_t)(dash - s) - 1, hi) || *hi < *lo)
		return -FI_EINVAL;
	return 0;
}

/* One selector of @len characters, split at ':' into at most 4 fields. */
static int sel_parse_one(const char *s, size_t len, struct sel *sel)
{
	const char *f[4];
	size_t flen[4];
	int n = 0;
	const char *p = s, *end = s + len;

	while (n < 4) {
		const char *c = memchr(p, ':', (size_t)(end - p));

		f[n] = p;
		flen[n] = c ? (size_t)(c - p) : (size_t)(end - p);
		n++;
		if (!c)
			break;
		p = c + 1;
	}
	if (n == 4)
		return -FI_EINVAL;
	if (n == 1 && len == 7 && !memcmp(s, "default", 7)) {
		sel->type = SEL_DEFAULT;
		return 0;
	}
	if (n == 2 && flen[0] == 5 && !memcmp(f[0], "fixed", 5)) {
		sel->type = SEL_FIXED;
		return sel_num(f[1], flen[1], &sel->unit);
	}
	if (n == 3 && flen[0] == 4 && (!memcmp(f[0], "numa", 4) ||
				       !memcmp(f[0], "core", 4))) {
		sel->type = f[0][0] == 'n' ? SEL_NUMA : SEL_CORE;
		if (sel_num(f[1], flen[1], &sel->unit))
			return -FI_EINVAL;
		return sel_range(f[2], flen[2], &sel->lo, &sel->hi);
	}
	return -FI_EINVAL;
}

/*
 * Walks the selectors of @spec: with @fn NULL only checks the syntax of
 * all of them; else calls @fn on each in turn until it returns non-zero
 * (1: matched, < 0: error).
 */
static int sel_walk(const char *spec,
		    int (*fn)(struct sel_ctx *ctx, const struct sel *sel),
		    struct sel_ctx *ctx)
{
	const char *p = spec;
	struct sel sel;
	int ret;

	for (;;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (!len || len > HFI_SELECTOR_MAX ||
		    sel_parse_one(p, len, &sel)) {
			kfab_log(KFAB_LOG_WARN,
				 "FI_OPX_HFI_SELECT=%s: bad selector \"%.*s\": use a unit number, or selectors separated by commas: default, fixed:<unit>, numa:<unit>:<node|a-b>, core:<unit>:<cpu|a-b>",
				 spec, (int)(len > 64 ? 64 : len), p);
			return -FI_EINVAL;
		}
		if (fn) {
			ret = fn(ctx, &sel);
			if (ret)
				return ret;
		}
		if (!c)
			return 0;
		p = c + 1;
	}
}

static int hfi_select_parse(const char *spec)
{
	int unit;

	for (const char *p = spec; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != ':' && *p != ',' &&
		    *p != '-') {
			kfab_log(KFAB_LOG_WARN,
				 "FI_OPX_HFI_SELECT=%s: '%c' is not allowed: only letters, digits, ':', ',' and '-'",
				 spec, *p);
			return -FI_EINVAL;
		}
	}
	if (*spec && strspn(spec, "0123456789") == strlen(spec)) {
		if (sel_num(spec, strlen(spec), &unit)) {
			kfab_log(KFAB_LOG_WARN,
				 "FI_OPX_HFI_SELECT=%s: unit number past %d",
				 spec, INT_MAX);
			return -FI_EINVAL;
		}
		return 0;
	}
	return sel_walk(spec, NULL, NULL);
}

static int sel_unit_check(const struct sel_ctx *ctx, int unit)
{
	for (int i = 0; i < ctx->n; i++) {
		if (ctx->units[i].unit != (unsigned int)unit)
			continue;
		if (ctx->units[i].active)
			return 0;
		kfab_log(KFAB_LOG_WARN,
			 "FI_OPX_HFI_SELECT=%s: hfi%d is not Active",
			 ctx->spec, unit);
		return -FI_ENODEV;
	}
	kfab_log(KFAB_LOG_WARN,
		 "FI_OPX_HFI_SELECT=%s: there is no hfi%d (%d unit(s))",
		 ctx->spec, unit, ctx->n);
	return -FI_ENODEV;
}

/*
 * The default: the Active units on the caller's NUMA node if there are
 * any, else all Active units; of those, the one at pid modulo their count.
 */
static int sel_default(struct sel_ctx *ctx)
{
	int local = 0, active = 0, pick, i;
	bool use_local;

	for (i = 0; i < ctx->n; i++) {
		if (!ctx->units[i].active)
			continue;
		active++;
		if (ctx->units[i].numa_node == ctx->node)
			local++;
	}
	if (!active) {
		kfab_log(KFAB_LOG_WARN, "no Active HFI unit among %d",
			 ctx->n);
		return -FI_ENODEV;
	}
	use_local = local > 0;
	pick = (int)(getpid() % (use_local ? local : active));
	for (i = 0; i < ctx->n; i++) {
		if (!ctx->units[i].active ||
		    (use_local && ctx->units[i].numa_node != ctx->node))
			continue;
		if (!pick--)
			break;
	}
	ctx->unit = ctx->units[i].unit;
	return 1;
}

/*
 * 1 when @at lies in @sel's range, else 0; -FI_EINVAL (logged) when the
 * range passes @max, the last @what there is.
 */
static int sel_in_range(const struct sel_ctx *ctx, const struct sel *sel,
			const char *what, int max, int at)
{
	if (sel->hi > max) {
		kfab_log(KFAB_LOG_WARN,
			 "FI_OPX_HFI_SELECT=%s: %s %d past the last one (%d)",
			 ctx->spec, what, sel->hi, max);
		return -FI_EINVAL;
	}
	return at >= sel->lo && at <= sel->hi;
}

static int sel_eval(struct sel_ctx *ctx, const struct sel *sel)
{
	int ret;

	if (sel->type == SEL_DEFAULT)
		return sel_default(ctx);
	ret = sel_unit_check(ctx, sel->unit);
	if (ret)
		return ret;
	switch (sel->type) {
	case SEL_NUMA:
		ret = sel_in_range(ctx, sel, "NUMA node",
				   numa_available() < 0 ? 0 : numa_max_node(),
				   ctx->node);
		break;
	case SEL_CORE:
		ret = sel_in_range(ctx, sel, "CPU",
				   (int)sysconf(_SC_NPROCESSORS_CONF) - 1,
				   ctx->cpu);
		break;
	default:
		ret = 1;
		break;
	}
	if (ret == 1)
		ctx->unit = (unsigned int)sel->unit;
	return ret;
}

int opx_hfi_select(const char *spec, const struct opx_unit *units, int n,
		   unsigned int *unit)
{
	struct sel_ctx ctx = { .spec = spec, .units = units, .n = n };
	int ret;

	ctx.cpu = sched_getcpu();
	if (ctx.cpu < 0)
		ctx.cpu = 0;
	ctx.node = numa_available() < 0 ? 0 : numa_node_of_cpu(ctx.cpu);
	if (ctx.node < 0)
		ctx.node = 0;

	if (!spec) {
		ret = sel_default(&ctx);
	} else {
		ret = hfi_select_parse(spec);
		if (ret)
			return ret;
		if (strspn(spec, "0123456789") == strlen(spec)) {
			struct sel fixed = { .type = SEL_FIXED };

			sel_num(spec, strlen(spec), &fixed.unit);
			ret = sel_eval(&ctx, &fixed);
		} else {
			ret = sel_walk(spec, sel_eval, &ctx);
		}
	}
	if (ret < 0)
		return ret;
	if (!ret) {
		kfab_log(KFAB_LOG_WARN,
			 "FI_OPX_HFI_SELECT=%s: no selector matches this caller (CPU %d, NUMA node %d)",
			 spec, ctx.cpu, ctx.node);
		return -FI_ENODEV;
	}
	*unit = ctx.unit;
	return 0;
}
