// SPDX-License-Identifier: GPL-2.0
/*
 * mrail_param_test: kfab_mrail's runtime parameters through setenv() and
 * mrail_params_load(): FI_OFI_MRAIL_ADDR and its deprecated alias
 * FI_OFI_MRAIL_ADDR_STRC, FI_OFI_MRAIL_CONFIG and mrail_policy_for(), the
 * local rank and the fixed rail, each malformed form refused with a
 * warning naming the variable, the value and what is wrong, and the
 * variables fi_info -e lists.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "mrail/mrail_param.h"
#include "tests/param_util.h"

#define ADDR	"FI_OFI_MRAIL_ADDR"
#define STRC	"FI_OFI_MRAIL_ADDR_STRC"
#define CONFIG	"FI_OFI_MRAIL_CONFIG"
#define OMPI	"OMPI_COMM_WORLD_LOCAL_RANK"
#define MPICH	"MPI_LOCALRANKID"

static const char *const all_vars[] = { ADDR, STRC, CONFIG, OMPI, MPICH };

#define NVARS	(sizeof(all_vars) / sizeof(all_vars[0]))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

enum field {
	F_NONE,
	F_NADDR, F_NCONFIG, F_RANK, F_FIXED,
};

/* the record param_load() loads */
static struct mrail_params rec;

static int param_load(void)
{
	mrail_params_free(&rec);
	return mrail_params_load(&rec);
}

static uint64_t param_field(int f)
{
	switch ((enum field)f) {
	case F_NADDR:	return rec.naddr;
	case F_NCONFIG:	return rec.nconfig;
	case F_RANK:	return rec.local_rank;
	case F_FIXED:	return rec.fixed_rail;
	case F_NONE:	break;
	}
	return 0;
}

#define NINE	"1:fixed,2:fixed,3:fixed,4:fixed,5:fixed,6:fixed,7:fixed,8:fixed,-1:striping"

static const struct param_case param_cases[] = {
	/* FI_OFI_MRAIL_ADDR */
	V(NULL, NULL, 0, F_NADDR, 0),
	V(ADDR, "", 0, F_NADDR, 0),
	V(ADDR, "hfi0", 0, F_NADDR, 1),
	V(ADDR, "efa0,efa1", 0, F_NADDR, 2),
	V(ADDR, "a,b,c,d,e,f,g,h", 0, F_NADDR, 8),
	V(ADDR, "fi_sockaddr_in://127.0.0.1:0,lo,127.0.0.2,::1,localhost", 0,
	  F_NADDR, 5),
	BAD(ADDR, "efa0,,efa1", "empty rail address"),
	BAD(ADDR, ",efa0", "empty rail address"),
	BAD(ADDR, "efa0,", "empty rail address"),
	BAD(ADDR, ",", "empty rail address"),
	BAD(ADDR, "a,b,c,d,e,f,g,h,i", "more than 8 rails"),
	BAD(ADDR, "efa0,efa1,efa0", "efa0 is listed twice"),
	BAD(ADDR, "efa0, efa1", "\" efa1\" has a space"),
	BAD(ADDR, "efa0\tx", "has a space"),
	/* the deprecated alias: read when ADDR is unset or empty */
	V(STRC, "efa0,efa1,efa2", 0, F_NADDR, 3),
	V2(ADDR, "", STRC, "efa0,efa1", 0, F_NADDR, 2, NULL),
	V2(ADDR, "efa0", STRC, "efa1,efa2", 0, F_NADDR, 1, NULL),
	BAD(STRC, "efa0,,efa1", "empty rail address"),

	/* FI_OFI_MRAIL_CONFIG */
	V(CONFIG, NULL, 0, F_NCONFIG, 2),
	V(CONFIG, "", 0, F_NCONFIG, 2),
	V(CONFIG, "-1:fixed", 0, F_NCONFIG, 1),
	V(CONFIG, "1:fixed,2:fixed,3:fixed,4:fixed,5:fixed,6:fixed,7:fixed,-1:striping",
	  0, F_NCONFIG, 8),
	BAD(CONFIG, "16384:fixed,,-1:striping", "empty pair"),
	BAD(CONFIG, ",-1:striping", "empty pair"),
	BAD(CONFIG, "-1:striping,", "empty pair"),
	BAD(CONFIG, "16384", "\"16384\" has no ':'"),
	BAD(CONFIG, "16384fixed,-1:striping", "has no ':'"),
	BAD(CONFIG, "abc:fixed,-1:striping", "max_size \"abc\" is not"),
	BAD(CONFIG, "16k:fixed,-1:striping", "max_size \"16k\" is not"),
	BAD(CONFIG, "0x:fixed,-1:striping", "max_size \"0x\" is not"),
	BAD(CONFIG, "08:fixed,-1:striping", "max_size \"08\" is not"),
	BAD(CONFIG, "-2:fixed,-1:striping", "max_size \"-2\" is not"),
	BAD(CONFIG, "+5:fixed,-1:striping", "max_size \"+5\" is not"),
	BAD(CONFIG, " 5:fixed,-1:striping", "max_size \" 5\" is not"),
	BAD(CONFIG, "5 :fixed,-1:striping", "max_size \"5 \" is not"),
	BAD(CONFIG, ":fixed,-1:striping", "max_size \"\" is not"),
	BAD(CONFIG, "18446744073709551616:fixed,-1:striping",
	    "max_size \"18446744073709551616\" is not"),
	BAD(CONFIG, "0x10000000000000000:striping", "is not"),
	BAD(CONFIG, "16384:fixd,-1:striping", "policy \"fixd\" is not"),
	BAD(CONFIG, "16384:,-1:striping", "policy \"\" is not"),
	BAD(CONFIG, "16384:fixed,-1:striping:", "policy \"striping:\" is not"),
	BAD(CONFIG, "16384:round_robin,-1:striping",
	    "policy \"round_robin\" is not"),
	BAD(CONFIG, "16384:fixed,16384:striping",
	    "max_size 16384 is not above the previous pair's 16384"),
	BAD(CONFIG, "16384:fixed,100:striping", "is not above"),
	BAD(CONFIG, "-1:fixed,-1:striping", "is not above"),
	BAD(CONFIG, "16384:fixed", "end with a pair -1:<policy>"),
	BAD(CONFIG, "1:fixed,0x20:striping", "the last pair's max_size is 32"),
	BAD(CONFIG, NINE, "more than 8 pairs"),

	/* the local rank, the fixed rail */
	V(NULL, NULL, 0, F_RANK, 0),
	V(OMPI, "3", 0, F_RANK, 3),
	V(MPICH, "5", 0, F_RANK, 5),
	V(OMPI, "0x10", 0, F_RANK, 16),
	V2(OMPI, "2", MPICH, "5", 0, F_RANK, 2, NULL),
	V2(OMPI, "", MPICH, "4", 0, F_RANK, 4, NULL),
	V2(OMPI, "3", ADDR, "efa0,efa1", 0, F_FIXED, 1, NULL),
	V2(MPICH, "5", ADDR, "a,b,c", 0, F_FIXED, 2, NULL),
	V2(OMPI, "7", ADDR, "hfi0", 0, F_FIXED, 0, NULL),
	V(OMPI, "7", 0, F_FIXED, 0),
	BAD(OMPI, "abc", "must be an integer"),
	BAD(OMPI, "1x", "must be an integer"),
	BAD(MPICH, "-1", "must be an integer"),
	BAD(MPICH, "4294967296", "must be an integer in 0..4294967295"),
};

/* ------------------------------------------------------------------ */
/* FI_OFI_MRAIL_ADDR: the addresses themselves, the alias's warnings */

static bool addrs_are(const char *const *want, size_t n)
{
	if (rec.naddr != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(rec.addr[i], want[i]))
			return false;
	return true;
}

static void addr_cases(void)
{
	static const char *const fi_addr_str[] = {
		"fi_sockaddr_in://127.0.0.1:0", "lo", "127.0.0.2", "::1",
		"localhost",
	};
	static const char *const efa[] = { "efa0", "efa1" };
	static const char *const efa1[] = { "efa1", "efa2" };
	static const char *const efa0[] = { "efa0" };
	char longest[MRAIL_ADDR_MAX + 8];

	env_clear();
	setenv(ADDR, "fi_sockaddr_in://127.0.0.1:0,lo,127.0.0.2,::1,localhost",
	       1);
	TAP_OK(!param_load() && addrs_are(fi_addr_str, 5),
	       "the addresses, in order");

	/* the alias alone: read, with a warning */
	env_clear();
	setenv(STRC, "efa0,efa1", 1);
	nwarn = 0;
	TAP_OK(!param_load() && addrs_are(efa, 2), STRC "=efa0,efa1 is read");
	TAP_OK(nwarn == 1 && strstr(last_warn, STRC "=efa0,efa1") &&
	       strstr(last_warn, "deprecated: set " ADDR " instead"),
	       "and warned about: %s", last_warn);

	/* both: ADDR wins, the alias is ignored with a warning */
	setenv(ADDR, "efa0", 1);
	setenv(STRC, "efa1,efa2", 1);
	nwarn = 0;
	TAP_OK(!param_load() && addrs_are(efa0, 1), ADDR " wins over " STRC);
	TAP_OK(nwarn == 1 && strstr(last_warn, STRC "=efa1,efa2") &&
	       strstr(last_warn, "ignored") && strstr(last_warn, ADDR "=efa0"),
	       "and " STRC " is said to be ignored: %s", last_warn);
	TAP_OK(!addrs_are(efa1, 2), "the alias's rails are not taken");

	/* none of the above without the alias */
	env_clear();
	setenv(ADDR, "efa0,efa1", 1);
	nwarn = 0;
	TAP_OK(!param_load() && addrs_are(efa, 2) && !nwarn,
	       ADDR " alone: no warning (%d)", nwarn);

	/* the longest address, and one character more */
	memset(longest, 'h', MRAIL_ADDR_MAX);
	longest[MRAIL_ADDR_MAX] = '\0';
	setenv(ADDR, longest, 1);
	TAP_OK(!param_load() && rec.naddr == 1 &&
	       strlen(rec.addr[0]) == MRAIL_ADDR_MAX,
	       "an address of %d characters", MRAIL_ADDR_MAX);
	strcat(longest, "h");
	setenv(ADDR, longest, 1);
	last_warn[0] = '\0';
	TAP_OK(param_load() == -FI_EINVAL && strstr(last_warn, ADDR "=") &&
	       strstr(last_warn, "is 256 characters long, more than 255"),
	       "one of %d is refused: %s", MRAIL_ADDR_MAX + 1, last_warn);
	TAP_EQ(rec.naddr, 0, "and nothing is held");
}

/* ------------------------------------------------------------------ */
/* FI_OFI_MRAIL_CONFIG: the pairs, and the policy of each size */

#define FX	MRAIL_POLICY_FIXED
#define RR	MRAIL_POLICY_ROUND_ROBIN
#define ST	MRAIL_POLICY_STRIPING

static const struct config_case {
	const char *val;		/* NULL: unset */
	size_t n;
	struct mrail_config want[3];
} config_cases[] = {
	{ NULL, 2, { { 16384, FX }, { ULONG_MAX, ST } } },
	{ "16384:fixed,ULONG_MAX:striping", 2,
	  { { 16384, FX }, { ULONG_MAX, ST } } },
	{ "-1:round-robin", 1, { { ULONG_MAX, RR } } },
	{ "ulong_max:Striping", 1, { { ULONG_MAX, ST } } },
	{ "18446744073709551615:fixed", 1, { { ULONG_MAX, FX } } },
	{ "0xffffffffffffffff:fixed", 1, { { ULONG_MAX, FX } } },
	{ "0x100:FIXED,01000:Round-Robin,-1:STRIPING", 3,
	  { { 256, FX }, { 512, RR }, { ULONG_MAX, ST } } },
	{ "0:fixed,18446744073709551614:round-robin,-1:striping", 3,
	  { { 0, FX }, { ULONG_MAX - 1, RR }, { ULONG_MAX, ST } } },
	{ "010:striping,9:fixed,-1:round-robin", 3,
	  { { 8, ST }, { 9, FX }, { ULONG_MAX, RR } } },
};

static void config_case_run(const struct config_case *c)
{
	bool same;

	env_clear();
	if (c->val)
		setenv(CONFIG, c->val, 1);
	if (!TAP_EQ(param_load(), 0, CONFIG "=%s", c->val ? c->val : "(unset)"))
		return;
	same = rec.nconfig == c->n;
	for (size_t i = 0; same && i < c->n; i++)
		same = rec.config[i].max_size == c->want[i].max_size &&
		       rec.config[i].policy == c->want[i].policy;
	TAP_OK(same, "%s: %zu pairs as written", c->val ? c->val : "(unset)",
	       c->n);
}

static void policy_cases(void)
{
	static const struct {
		const char *config;
		size_t size;
		enum mrail_policy want;
	} cases[] = {
		{ NULL, 0, FX },
		{ NULL, 16384, FX },
		{ NULL, 16385, ST },
		{ NULL, SIZE_MAX, ST },
		{ "100:round-robin,1000:fixed,-1:striping", 100, RR },
		{ "100:round-robin,1000:fixed,-1:striping", 101, FX },
		{ "100:round-robin,1000:fixed,-1:striping", 1000, FX },
		{ "100:round-robin,1000:fixed,-1:striping", 1001, ST },
		{ "0:striping,-1:fixed", 0, ST },
		{ "0:striping,-1:fixed", 1, FX },
		{ "-1:round-robin", SIZE_MAX, RR },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		enum mrail_policy got;

		env_clear();
		if (cases[i].config)
			setenv(CONFIG, cases[i].config, 1);
		if (param_load())
			got = (enum mrail_policy)-1;
		else
			got = mrail_policy_for(&rec, cases[i].size);
		TAP_OK(got == cases[i].want, "%s: %zu bytes take %s (%d)",
		       cases[i].config ? cases[i].config : "default",
		       cases[i].size, mrail_policy_name(cases[i].want),
		       (int)got);
	}
}

int main(void)
{
	param_test_start("mrail_param_test", all_vars, NVARS);
	param_cases_run(param_cases, ARRAY_SIZE(param_cases));
	addr_cases();
	for (size_t i = 0; i < ARRAY_SIZE(config_cases); i++)
		config_case_run(&config_cases[i]);
	policy_cases();
	param_define_cases(&mrail_param_table, all_vars, 3);
	mrail_params_free(&rec);
	env_clear();
	return tap_done();
}
