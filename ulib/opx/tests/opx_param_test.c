// SPDX-License-Identifier: GPL-2.0
/*
 * opx_param_test: every kfab_opx runtime parameter through setenv() and
 * opx_params_load() (valid, invalid and boundary values, each refusal
 * naming the variable and the value), FI_OPX_UUID's forms, and
 * FI_OPX_HFI_SELECT against fake unit lists with the caller pinned to its
 * CPU.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "core/kfab_param.h"
#include "opx/opx_param.h"
#include "tests/param_util.h"

static const char *const all_vars[] = {
	"FI_OPX_UUID", "FI_OPX_FORCE_CPUAFFINITY",
	"FI_OPX_RELIABILITY_SERVICE_USEC_MAX",
	"FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", "FI_OPX_SELINUX",
	"FI_OPX_HFI_SELECT", "FI_OPX_DELIVERY_COMPLETION_THRESHOLD",
	"FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD", "FI_OPX_SDMA_DISABLE",
	"FI_OPX_SDMA_MIN_PAYLOAD_BYTES", "FI_OPX_RZV_MIN_PAYLOAD_BYTES",
	"FI_OPX_MP_EAGER_DISABLE", "FI_OPX_EXPECTED_RECEIVE_ENABLE",
	"FI_OPX_PROG_AFFINITY", "FI_OPX_AUTO_PROGRESS_INTERVAL_USEC",
	"FI_OPX_PKEY", "FI_OPX_SL", "FI_OPX_DEV_REG_SEND_THRESHOLD",
	"FI_OPX_DEV_REG_RECV_THRESHOLD", "FI_KFAB_BACKEND",
};

/* ------------------------------------------------------------------ */
/* scalar parameters */

enum field {
	F_NONE,
	F_CPUAFF, F_USEC, F_PREACK, F_SELINUX, F_BOUNCE, F_SDMA_DIS,
	F_SDMA_MIN, F_RZV_MIN, F_MP_DIS, F_EXPRECV, F_PROGAFF_SET,
	F_INTERVAL, F_PKEY, F_SL, F_DEVSEND, F_DEVRECV, F_BACKEND,
	F_HFISEL_SET,
};

/* the record param_load() loads */
static struct opx_params rec;

static int param_load(void)
{
	opx_params_fini(&rec);
	return opx_params_load(&rec);
}

static uint64_t param_field(int f)
{
	const struct opx_params *p = &rec;

	switch ((enum field)f) {
	case F_CPUAFF:		return p->force_cpuaffinity;
	case F_USEC:		return p->reliability_usec_max;
	case F_PREACK:		return p->pre_ack_rate;
	case F_SELINUX:		return p->selinux;
	case F_BOUNCE:		return p->sdma_bounce_buf_threshold;
	case F_SDMA_DIS:	return p->sdma_disable;
	case F_SDMA_MIN:	return p->sdma_min_payload_bytes;
	case F_RZV_MIN:		return p->rzv_min_payload_bytes;
	case F_MP_DIS:		return p->mp_eager_disable;
	case F_EXPRECV:		return p->expected_receive_enable;
	case F_PROGAFF_SET:	return p->prog_affinity_set;
	case F_INTERVAL:	return p->auto_progress_interval_usec;
	case F_PKEY:		return p->pkey;
	case F_SL:		return p->sl;
	case F_DEVSEND:		return p->dev_reg_send_threshold;
	case F_DEVRECV:		return p->dev_reg_recv_threshold;
	case F_BACKEND:		return p->backend;
	case F_HFISEL_SET:	return p->hfi_select != NULL;
	default:		return 0;
	}
}

static const struct param_case param_cases[] = {
	/* nothing set: the documented defaults */
	V(NULL, NULL, 0, F_USEC, 500),
	V(NULL, NULL, 0, F_PREACK, 64),
	V(NULL, NULL, 0, F_BOUNCE, 16385),
	V(NULL, NULL, 0, F_SDMA_MIN, 16385),
	V(NULL, NULL, 0, F_RZV_MIN, 16385),
	V(NULL, NULL, 0, F_INTERVAL, 1),
	V(NULL, NULL, 0, F_PKEY, 0x8001),
	V(NULL, NULL, 0, F_SL, 0),
	V(NULL, NULL, 0, F_DEVSEND, 4096),
	V(NULL, NULL, 0, F_DEVRECV, 8192),
	V(NULL, NULL, 0, F_CPUAFF, 0),
	V(NULL, NULL, 0, F_SELINUX, 0),
	V(NULL, NULL, 0, F_SDMA_DIS, 0),
	V(NULL, NULL, 0, F_MP_DIS, 0),
	/* kfab turns expected receive on by default */
	V(NULL, NULL, 0, F_EXPRECV, 1),
	V(NULL, NULL, 0, F_PROGAFF_SET, 0),
	V(NULL, NULL, 0, F_HFISEL_SET, 0),
	/* an empty value is as good as unset */
	V("FI_OPX_SL", "", 0, F_SL, 0),

	/* booleans: every spelling, any case */
	V("FI_OPX_FORCE_CPUAFFINITY", "1", 0, F_CPUAFF, 1),
	V("FI_OPX_FORCE_CPUAFFINITY", "on", 0, F_CPUAFF, 1),
	V("FI_OPX_FORCE_CPUAFFINITY", "TRUE", 0, F_CPUAFF, 1),
	V("FI_OPX_FORCE_CPUAFFINITY", "Yes", 0, F_CPUAFF, 1),
	V("FI_OPX_FORCE_CPUAFFINITY", "0", 0, F_CPUAFF, 0),
	V("FI_OPX_FORCE_CPUAFFINITY", "Off", 0, F_CPUAFF, 0),
	V("FI_OPX_FORCE_CPUAFFINITY", "false", 0, F_CPUAFF, 0),
	V("FI_OPX_FORCE_CPUAFFINITY", "NO", 0, F_CPUAFF, 0),
	/* not booleans */
	REFUSED("FI_OPX_FORCE_CPUAFFINITY", NULL, "2", "y"),
	V("FI_OPX_SELINUX", "yes", 0, F_SELINUX, 1),
	BAD("FI_OPX_SELINUX", "maybe", NULL),
	V("FI_OPX_EXPECTED_RECEIVE_ENABLE", "off", 0, F_EXPRECV, 0),
	V("FI_OPX_EXPECTED_RECEIVE_ENABLE", "0", 0, F_EXPRECV, 0),
	BAD("FI_OPX_EXPECTED_RECEIVE_ENABLE", "nope", NULL),

	RANGE("FI_OPX_RELIABILITY_SERVICE_USEC_MAX", F_USEC, 1, 1000000),
	V("FI_OPX_RELIABILITY_SERVICE_USEC_MAX", "0x10", 0, F_USEC, 16),
	/* no sign, no trailing junk, no spaces, no overflow, no octal */
	REFUSED("FI_OPX_RELIABILITY_SERVICE_USEC_MAX", NULL, "-5", "+5",
		"12abc", " 5", "0x", "99999999999999999999999"),
	V("FI_OPX_RELIABILITY_SERVICE_USEC_MAX", "010", 0, F_USEC, 10),

	/* PRE_ACK_RATE: 0 or a power of two up to 32768 */
	V("FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", "0", 0, F_PREACK, 0),
	V("FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", "1", 0, F_PREACK, 1),
	V("FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", "1024", 0, F_PREACK, 1024),
	V("FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", "32768", 0, F_PREACK, 32768),
	REFUSED("FI_OPX_RELIABILITY_SERVICE_PRE_ACK_RATE", NULL, "65536", "3",
		"48"),

	RANGE("FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD", F_BOUNCE, 16385, 2147483646),
	/* the deprecated alias alone is read, with its range */
	V("FI_OPX_DELIVERY_COMPLETION_THRESHOLD", "20000", 0, F_BOUNCE, 20000),
	BAD("FI_OPX_DELIVERY_COMPLETION_THRESHOLD", "100", NULL),
	/* both set: the new name wins, the old one is not even checked */
	V2("FI_OPX_DELIVERY_COMPLETION_THRESHOLD", "100",
	   "FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD", "30000", 0, F_BOUNCE, 30000, NULL),
	V2("FI_OPX_DELIVERY_COMPLETION_THRESHOLD", "20000",
	   "FI_OPX_SDMA_BOUNCE_BUF_THRESHOLD", "30000", 0, F_BOUNCE, 30000, NULL),

	/* SDMA_DISABLE, MP_EAGER_DISABLE: 0 or 1, integers */
	V("FI_OPX_SDMA_DISABLE", "1", 0, F_SDMA_DIS, 1),
	V("FI_OPX_SDMA_DISABLE", "0", 0, F_SDMA_DIS, 0),
	REFUSED("FI_OPX_SDMA_DISABLE", NULL, "2", "on"),
	V("FI_OPX_MP_EAGER_DISABLE", "1", 0, F_MP_DIS, 1),
	BAD("FI_OPX_MP_EAGER_DISABLE", "-1", NULL),

	RANGE("FI_OPX_SDMA_MIN_PAYLOAD_BYTES", F_SDMA_MIN, 64, 2147483646),
	RANGE("FI_OPX_RZV_MIN_PAYLOAD_BYTES", F_RZV_MIN, 64, 65536),

	/* AUTO_PROGRESS_INTERVAL_USEC: 1..1000000 */
	V("FI_OPX_AUTO_PROGRESS_INTERVAL_USEC", "1000000", 0, F_INTERVAL, 1000000),
	REFUSED("FI_OPX_AUTO_PROGRESS_INTERVAL_USEC", NULL, "0", "1000001"),

	/* PKEY: 1..0xffff, decimal or hex, low 15 bits not all zero */
	V("FI_OPX_PKEY", "0x8001", 0, F_PKEY, 0x8001),
	V("FI_OPX_PKEY", "32769", 0, F_PKEY, 0x8001),
	V("FI_OPX_PKEY", "1", 0, F_PKEY, 1),
	V("FI_OPX_PKEY", "0xffff", 0, F_PKEY, 0xffff),
	V("FI_OPX_PKEY", "0X7FFF", 0, F_PKEY, 0x7fff),
	REFUSED("FI_OPX_PKEY", NULL, "0", "0x8000", "0x10000", "0xg"),

	/* SL: 0..15 */
	V("FI_OPX_SL", "15", 0, F_SL, 15),
	BAD("FI_OPX_SL", "16", NULL),

	/* DEV_REG thresholds: 0..2147483647, accepted */
	RANGE("FI_OPX_DEV_REG_SEND_THRESHOLD", F_DEVSEND, 0, 2147483647),
	V("FI_OPX_DEV_REG_RECV_THRESHOLD", "65536", 0, F_DEVRECV, 65536),
	BAD("FI_OPX_DEV_REG_RECV_THRESHOLD", "x", NULL),

	/* FI_KFAB_BACKEND */
	V("FI_KFAB_BACKEND", "shm", 0, F_BACKEND, KFAB_BACKEND_SHM),
	V("FI_KFAB_BACKEND", "kmod", 0, F_BACKEND, KFAB_BACKEND_KMOD),
	REFUSED("FI_KFAB_BACKEND", NULL, "SHM", "rdma"),

	/* FI_OPX_HFI_SELECT: the syntax is checked at load */
	V("FI_OPX_HFI_SELECT", "0", 0, F_HFISEL_SET, 1),
	V("FI_OPX_HFI_SELECT", "numa:0:0-3,default", 0, F_HFISEL_SET, 1),
	REFUSED("FI_OPX_HFI_SELECT", NULL, "0,numa:0:0", "bogus"),

	/* FI_OPX_PROG_AFFINITY: shapes (the CPU bound is below) */
	V("FI_OPX_PROG_AFFINITY", "0:0:1", 0, F_PROGAFF_SET, 1),
	REFUSED("FI_OPX_PROG_AFFINITY", NULL, "1:0:1", "0:0:0", "0:0",
		"0:0:1:1", ":0:1", "0::1", "0:0:", "a:b:c"),
};

/* auto: kmod when /dev/kfab_hfi0 exists */
static void backend_auto_case(void)
{
	struct opx_params p;

	env_clear();
	setenv("FI_KFAB_BACKEND", "auto", 1);
	TAP_EQ(opx_params_load(&p), 0, "FI_KFAB_BACKEND=auto");
	TAP_EQ(p.backend, kfab_hfi_kmod_present(0) ? KFAB_BACKEND_KMOD :
		KFAB_BACKEND_SHM, "auto picks by /dev/kfab_hfi0");
	opx_params_fini(&p);
}

/* The CPU bound of FI_OPX_PROG_AFFINITY, and the stored triplet. */
static void prog_affinity_cases(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct opx_params p;
	char v[64];

	env_clear();
	snprintf(v, sizeof(v), "0:%ld:1", ncpu - 1);
	setenv("FI_OPX_PROG_AFFINITY", v, 1);
	TAP_EQ(opx_params_load(&p), 0, "PROG_AFFINITY=%s (last CPU)", v);
	TAP_OK(p.prog_affinity_set && p.prog_affinity_start == 0 &&
	       p.prog_affinity_end == ncpu - 1 &&
	       p.prog_affinity_stride == 1, "PROG_AFFINITY stored");
	opx_params_fini(&p);
	snprintf(v, sizeof(v), "0:%ld:1", ncpu);
	setenv("FI_OPX_PROG_AFFINITY", v, 1);
	TAP_EQ(opx_params_load(&p), -FI_EINVAL,
	       "PROG_AFFINITY=%s (past the last CPU)", v);
}

/* ------------------------------------------------------------------ */
/* FI_OPX_UUID */

struct uuid_case {
	const char *val;
	int ret;
	const char *hex;	/* the 16 bytes as 32 hex digits */
};

static const struct uuid_case uuid_cases[] = {
	/* unset: the documented default */
	{ NULL, 0, "00112233445566778899aabbccddeeff" },
	/* the canonical form */
	{ "00112233-4455-6677-8899-aabbccddeeff", 0,
	  "00112233445566778899aabbccddeeff" },
	{ "0F0E0D0C-0B0A-0908-0706-050403020100", 0,
	  "0f0e0d0c0b0a09080706050403020100" },
	/* hex digits, right-aligned: ${RANDOM} */
	{ "1234", 0, "00000000000000000000000000001234" },
	{ "12345", 0, "00000000000000000000000000012345" },
	{ "abc", 0, "00000000000000000000000000000abc" },
	{ "ffffffffffffffffffffffffffffffff", 0,
	  "ffffffffffffffffffffffffffffffff" },
	/* 33 digits, not hex, a bad 36-character form */
	{ "fffffffffffffffffffffffffffffffff", -FI_EINVAL, NULL },
	{ "xyz", -FI_EINVAL, NULL },
	{ "00112233-4455-6677-8899-aabbccddeefg", -FI_EINVAL, NULL },
	{ "0011-2233", -FI_EINVAL, NULL },
};

static void uuid_case_run(const struct uuid_case *c)
{
	const struct param_case pc = V("FI_OPX_UUID", c->val, c->ret, F_NONE,
				       0);
	char hex[33];

	if (!param_try(&pc))
		return;
	for (int i = 0; i < 16; i++)
		sprintf(hex + 2 * i, "%02x", rec.uuid[i]);
	TAP_OK(!strcmp(hex, c->hex), "FI_OPX_UUID=%s is %s (got %s)",
	       c->val ? c->val : "(unset)", c->hex, hex);
}

/* ------------------------------------------------------------------ */
/* FI_OPX_HFI_SELECT */

/* unit 0 and 1 Active, 2 Down; all on the caller's node (set in main) */
static struct opx_unit units[] = {
	{ .unit = 0, .active = true },
	{ .unit = 1, .active = true },
	{ .unit = 2, .active = false },
};

#define NUNITS	((int)(sizeof(units) / sizeof(units[0])))
#define DEFAULT	-1000	/* the unit of the default logic */

struct sel_case {
	const char *spec;
	int ret;
	int unit;
};

static const struct sel_case sel_cases[] = {
	/* no variable, and "default": pid modulo the Active units */
	{ NULL, 0, DEFAULT },
	{ "default", 0, DEFAULT },
	/* a unit number */
	{ "0", 0, 0 },
	{ "1", 0, 1 },
	{ "01", 0, 1 },
	/* a Down unit, a unit that does not exist, past INT_MAX */
	{ "2", -FI_ENODEV, 0 },
	{ "3", -FI_ENODEV, 0 },
	{ "2147483647", -FI_ENODEV, 0 },
	{ "2147483648", -FI_EINVAL, 0 },
	/* fixed; the first match wins */
	{ "fixed:1", 0, 1 },
	{ "fixed:2", -FI_ENODEV, 0 },
	{ "fixed:1,fixed:0", 0, 1 },
	{ "default,core:1:0", 0, DEFAULT },
	{ "fixed:0,bogus:1", -FI_EINVAL, 0 },
	/* fi_opx(7)'s parse errors */
	{ "0,numa:0:0", -FI_EINVAL, 0 },
	{ "0,", -FI_EINVAL, 0 },
	{ "-1", -FI_EINVAL, 0 },
	{ "defaults", -FI_EINVAL, 0 },
	{ "numa:0:0:", -FI_EINVAL, 0 },
	{ "fixed:1:2", -FI_EINVAL, 0 },
	{ "core:0:2-1", -FI_EINVAL, 0 },
	/* more malformed selectors */
	{ "", -FI_EINVAL, 0 },
	{ ",", -FI_EINVAL, 0 },
	{ ",fixed:0", -FI_EINVAL, 0 },
	{ "fixed:", -FI_EINVAL, 0 },
	{ "fixed:x", -FI_EINVAL, 0 },
	{ "fixed:+1", -FI_EINVAL, 0 },
	{ "fixed:1 ", -FI_EINVAL, 0 },
	{ "FIXED:1", -FI_EINVAL, 0 },
	{ "numa:0", -FI_EINVAL, 0 },
	{ "numa::0", -FI_EINVAL, 0 },
	{ "numa:0:0;", -FI_EINVAL, 0 },
	{ "core:0:1-", -FI_EINVAL, 0 },
	{ "core:0:-1", -FI_EINVAL, 0 },
	{ "core:0:0-1-2", -FI_EINVAL, 0 },
	{ "core:0:2147483648", -FI_EINVAL, 0 },
};

static int default_unit(const struct opx_unit *u, int n, int node)
{
	int local = 0, active = 0, pick;

	for (int i = 0; i < n; i++) {
		active += u[i].active;
		local += u[i].active && u[i].numa_node == node;
	}
	if (!active)
		return -1;
	pick = getpid() % (local ? local : active);
	for (int i = 0; i < n; i++) {
		if (!u[i].active || (local && u[i].numa_node != node))
			continue;
		if (!pick--)
			return (int)u[i].unit;
	}
	return -1;
}

static void sel_check(const char *spec, const struct opx_unit *u, int n,
		      int ret, int want)
{
	unsigned int unit = 12345;
	int got;

	got = opx_hfi_select(spec, u, n, &unit);
	TAP_EQ(got, ret, "HFI_SELECT %s", spec ? spec : "(unset)");
	if (!got && !ret)
		TAP_EQ(unit, want, "HFI_SELECT %s: unit",
		       spec ? spec : "(unset)");
}

/* what the %d of a caller_case stands for */
enum sel_arg {
	A_CPU,		/* the caller's CPU */
	A_LAST_CPU,
	A_NCPU,		/* one past the last CPU */
	A_NODE,		/* the caller's NUMA node */
	A_LAST_NODE,
	A_NNODE,	/* one past the last node */
	A_OTHER,	/* a CPU the caller is not on */
};

/* Selectors that depend on the caller: a format taking its A_ value. */
static const struct {
	const char *fmt;
	enum sel_arg arg;
	int ret;
	int unit;
} caller_cases[] = {
	/* the caller's core, alone and in a range of all of them */
	{ "core:1:%d", A_CPU, 0, 1 },
	{ "core:1:0-%d", A_LAST_CPU, 0, 1 },
	/* a core range past the last CPU */
	{ "core:1:%d", A_NCPU, -FI_EINVAL, 0 },
	{ "core:1:0-%d", A_NCPU, -FI_EINVAL, 0 },
	/* the caller's node, a range up to the last node, past it */
	{ "numa:1:%d", A_NODE, 0, 1 },
	{ "numa:1:0-%d", A_LAST_NODE, 0, 1 },
	{ "numa:1:%d", A_NNODE, -FI_EINVAL, 0 },
	/* a selector naming a Down unit or no unit, though it matches */
	{ "numa:2:%d", A_NODE, -FI_ENODEV, 0 },
	{ "core:5:%d", A_CPU, -FI_ENODEV, 0 },
	/* another core: no match, falls through, or nothing matches */
	{ "core:1:%d,fixed:0", A_OTHER, 0, 0 },
	{ "core:1:%d,default", A_OTHER, 0, DEFAULT },
	{ "core:1:%d", A_OTHER, -FI_ENODEV, 0 },
	/* every visited selector's unit is checked, matching or not */
	{ "core:2:%d,fixed:0", A_OTHER, -FI_ENODEV, 0 },
	{ "core:7:%d,fixed:0", A_OTHER, -FI_ENODEV, 0 },
};

static void sel_caller_cases(int cpu, int node)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	int nnode = numa_available() < 0 ? 1 : numa_max_node() + 1;
	const int arg[] = {
		[A_CPU] = cpu, [A_LAST_CPU] = ncpu - 1, [A_NCPU] = ncpu,
		[A_NODE] = node, [A_LAST_NODE] = nnode - 1, [A_NNODE] = nnode,
		[A_OTHER] = cpu ? 0 : 1,
	};
	char s[128];

	for (size_t i = 0; i < sizeof(caller_cases) / sizeof(caller_cases[0]);
	     i++) {
		int unit = caller_cases[i].unit;

		if (caller_cases[i].arg == A_OTHER && ncpu < 2) {
			tap_skip("one CPU: no core the caller is not on");
			return;
		}
		snprintf(s, sizeof(s), caller_cases[i].fmt,
			 arg[caller_cases[i].arg]);
		sel_check(s, units, NUNITS, caller_cases[i].ret,
			  unit == DEFAULT ?
			  default_unit(units, NUNITS, node) : unit);
	}
}

/* The default logic over NUMA placements, and the selector length. */
static void sel_default_cases(int node)
{
	struct opx_unit mixed[] = {
		{ .unit = 0, .active = true, .numa_node = node + 1 },
		{ .unit = 1, .active = true, .numa_node = node },
		{ .unit = 2, .active = true, .numa_node = node },
		{ .unit = 3, .active = false, .numa_node = node },
	};
	struct opx_unit remote[] = {
		{ .unit = 4, .active = true, .numa_node = node + 1 },
		{ .unit = 5, .active = true, .numa_node = -1 },
	};
	struct opx_unit down[] = {
		{ .unit = 0, .active = false, .numa_node = node },
	};
	char *s;
	int want;

	/* local Active units first: 1 or 2 */
	want = default_unit(mixed, 4, node);
	TAP_OK(want == 1 || want == 2, "default prefers the caller's node");
	sel_check(NULL, mixed, 4, 0, want);
	/* none local: among all Active units */
	sel_check("default", remote, 2, 0, default_unit(remote, 2, node));
	/* nothing Active */
	sel_check(NULL, down, 1, -FI_ENODEV, 0);
	sel_check("0", down, 1, -FI_ENODEV, 0);

	/* a selector of 4096 characters passes, 4097 do not */
	s = malloc(4098);
	memcpy(s, "fixed:", 6);
	memset(s + 6, '0', 4089);
	strcpy(s + 4095, "1");
	sel_check(s, units, NUNITS, 0, 1);
	memset(s + 6, '0', 4090);
	strcpy(s + 4096, "1");
	sel_check(s, units, NUNITS, -FI_EINVAL, 0);
	free(s);
}

int main(void)
{
	cpu_set_t set;
	int cpu, node;

	param_test_start("opx_param_test", all_vars,
			 sizeof(all_vars) / sizeof(all_vars[0]));

	/* pin to one CPU so that core: and numa: selectors are stable */
	cpu = sched_getcpu();
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		tap_skip_all("cannot pin to CPU %d", cpu);
	node = numa_available() < 0 ? 0 : numa_node_of_cpu(cpu);
	if (node < 0)
		node = 0;
	for (int i = 0; i < NUNITS; i++)
		units[i].numa_node = node;
	tap_diag("caller on CPU %d, NUMA node %d", cpu, node);

	param_cases_run(param_cases, sizeof(param_cases) / sizeof(param_cases[0]));
	prog_affinity_cases();
	backend_auto_case();
	for (size_t i = 0; i < sizeof(uuid_cases) / sizeof(uuid_cases[0]); i++)
		uuid_case_run(&uuid_cases[i]);

	env_clear();
	for (size_t i = 0; i < sizeof(sel_cases) / sizeof(sel_cases[0]); i++) {
		const struct sel_case *c = &sel_cases[i];

		sel_check(c->spec, units, NUNITS, c->ret,
			  c->unit == DEFAULT ?
			  default_unit(units, NUNITS, node) : c->unit);
	}
	sel_caller_cases(cpu, node);
	sel_default_cases(node);
	opx_params_fini(&rec);
	return tap_done();
}
