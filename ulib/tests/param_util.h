/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the providers' parameter tests (opx_param_test, efa_param_test)
 * share: the warnings libkfab logs, the environment each case starts from
 * (none of the provider's variables set) and the table-driven case: set
 * one or two variables, load, then check the return, the refusal's
 * warning (it names the variable, the value and what is allowed) or the
 * loaded value; or, for an integer range, both bounds and one past each;
 * or a list of values one variable refuses.
 *
 * The test defines param_load() and param_field(), and calls
 * param_test_start() first. param_define_cases() checks what a provider's
 * table gives fi_info -e.
 */
#ifndef KFAB_ULIB_TESTS_PARAM_UTIL_H
#define KFAB_ULIB_TESTS_PARAM_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "core/kfab_log.h"
#include "core/kfab_param.h"
#include "tests/tap.h"

static char last_warn[512];	/* the last warning logged */
static int nwarn;		/* warnings logged */

static void param_sink(enum kfab_log_level level, const char *msg)
{
	if (level != KFAB_LOG_WARN)
		return;
	snprintf(last_warn, sizeof(last_warn), "%s", msg);
	nwarn++;
}

/* every variable the provider reads */
static const char *const *param_vars;
static size_t param_nvars;

static void param_test_start(const char *name, const char *const *vars,
			     size_t nvars)
{
	tap_start(name);
	kfab_log_set(param_sink);
	param_vars = vars;
	param_nvars = nvars;
}

static void env_clear(void)
{
	for (size_t i = 0; i < param_nvars; i++)
		unsetenv(param_vars[i]);
}

struct param_case {
	const char *var, *val;		/* val NULL: leave unset */
	const char *var2, *val2;	/* a second variable, or NULL */
	int ret;			/* of the load */
	int f;				/* the test's field, 0: none */
	uint64_t want;			/* the field when ret is 0 */
	const char *says;		/* in the warning, or NULL */
	bool range;			/* a RANGE() case: var, f, lo, hi */
	uint64_t lo, hi;
	const char *const *refused;	/* a REFUSED() case: var, says */
};

#define V(v, s, r, fld, w) { .var = (v), .val = (s), .ret = (r), .f = (fld), \
				   .want = (w) }
/* refused, the warning giving the allowed range */
#define BAD(v, s, say) { .var = (v), .val = (s), .ret = -FI_EINVAL, \
			 .says = (say) }
#define V2(v, s, v2, s2, r, fld, w, say) \
	{ .var = (v), .val = (s), .var2 = (v2), .val2 = (s2), .ret = (r), \
	  .f = (fld), .want = (w), .says = (say) }
/*
 * @v takes the integers @l..@h (@h below UINT64_MAX): @l and @h load into
 * field @fld; @l - 1 (unless @l is 0) and @h + 1 are refused, the warning
 * giving "l..h".
 */
#define RANGE(v, fld, l, h) \
	{ .var = (v), .f = (fld), .range = true, .lo = (l), .hi = (h) }
/* @v refuses each value that follows, as a BAD(v, value, say) each */
#define REFUSED(v, say, ...) \
	{ .var = (v), .says = (say), \
	  .refused = (const char *const[]){ __VA_ARGS__, NULL } }

/*
 * The test's: loads the provider's parameters from the environment into
 * its record (what the last load kept freed first) and returns what the
 * load returned.
 */
static int param_load(void);
/* The test's: the value of its field @f (not 0) in the record loaded */
static uint64_t param_field(int f);

/* "VAR=val VAR2=val2" of @c into @desc */
static void param_desc(const struct param_case *c, char *desc, size_t len)
{
	snprintf(desc, len, "%s=%s%s%s%s%s",
		 c->var ? c->var : "(defaults)",
		 c->val ? c->val : c->var ? "(unset)" : "",
		 c->var2 ? " " : "", c->var2 ? c->var2 : "",
		 c->var2 ? "=" : "", c->val2 ? c->val2 : "");
}

/*
 * @c's variables set, none else, then param_load(): a point on its
 * return, and on a refusal one on the warning (it names the variable
 * and the value, and says c->says). True when the record is loaded.
 */
static bool param_try(const struct param_case *c)
{
	char desc[160];
	int ret;

	env_clear();
	if (c->var && c->val)
		setenv(c->var, c->val, 1);
	if (c->var2)
		setenv(c->var2, c->val2, 1);
	param_desc(c, desc, sizeof(desc));
	last_warn[0] = '\0';
	ret = param_load();
	if (!TAP_EQ(ret, c->ret, "load %s", desc))
		tap_diag("  warning: %s", last_warn);
	if (ret)
		TAP_OK(strstr(last_warn, c->var) && strstr(last_warn, c->val) &&
		       (!c->says || strstr(last_warn, c->says)),
		       "warning for %s says \"%s\": %s", desc,
		       c->says ? c->says : "", last_warn);
	return !ret;
}

static void param_case_run(const struct param_case *c)
{
	char desc[160];

	param_desc(c, desc, sizeof(desc));
	if (param_try(c) && c->f)
		TAP_EQ(param_field(c->f), c->want, "%s: value", desc);
}

/* The points of RANGE() case @r, as four V() and BAD() cases would. */
static void param_range_run(const struct param_case *r)
{
	const struct {
		uint64_t val;
		bool ok;	/* loads, else refused */
		bool exists;	/* no integer below 0 */
	} edges[] = {
		{ r->lo, true, true }, { r->hi, true, true },
		{ r->lo - 1, false, r->lo > 0 }, { r->hi + 1, false, true },
	};
	char says[48], val[24];

	snprintf(says, sizeof(says), "%llu..%llu", (unsigned long long)r->lo,
		 (unsigned long long)r->hi);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		struct param_case c = { .var = r->var, .val = val };

		if (!edges[i].exists)
			continue;
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)edges[i].val);
		if (edges[i].ok) {
			c.f = r->f;
			c.want = edges[i].val;
		} else {
			c.ret = -FI_EINVAL;
			c.says = says;
		}
		param_case_run(&c);
	}
}

/* The points of REFUSED() case @r */
static void param_refused_run(const struct param_case *r)
{
	for (const char *const *val = r->refused; *val; val++) {
		const struct param_case c = BAD(r->var, *val, r->says);

		param_case_run(&c);
	}
}

static void param_cases_run(const struct param_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (cases[i].range)
			param_range_run(&cases[i]);
		else if (cases[i].refused)
			param_refused_run(&cases[i]);
		else
			param_case_run(&cases[i]);
	}
}

/* Listings of @name with a help text. */
static inline int param_listed(const struct fi_param *params, int n,
			       const char *name)
{
	int found = 0;

	for (int j = 0; j < n; j++)
		found += !strcmp(params[j].name, name) &&
			 params[j].help_string && *params[j].help_string;
	return found;
}

/*
 * Each of @vars listed by fi_getparams() (fi_info -e) once more after
 * kfab_params_define(@t) than before: another kfab provider libfabric
 * loaded may have defined FI_KFAB_BACKEND already.
 */
static inline void param_define_cases(const struct kfab_param_table *t,
				      const char *const *vars, size_t nvars)
{
	int before[nvars];
	struct fi_param *params;
	int n;

	/* libfabric drops what is defined before it initialises */
	if (fi_getparams(&params, &n)) {
		tap_skip("fi_getparams() failed");
		return;
	}
	for (size_t i = 0; i < nvars; i++)
		before[i] = param_listed(params, n, vars[i]);
	if (n)
		fi_freeparams(params);
	kfab_params_define(t);
	TAP_EQ(fi_getparams(&params, &n), 0, "fi_getparams()");
	for (size_t i = 0; i < nvars; i++)
		TAP_EQ(param_listed(params, n, vars[i]) - before[i], 1,
		       "fi_info -e lists %s once more, with help", vars[i]);
	fi_freeparams(params);
}

#endif /* KFAB_ULIB_TESTS_PARAM_UTIL_H */
