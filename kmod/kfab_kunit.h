/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the KUnit suites of the kfab modules share: the table of a
 * module's integer parameters, table-driven checks of a function and the
 * suite's module boilerplate.
 */
#ifndef _KFAB_KUNIT_H
#define _KFAB_KUNIT_H

#include <kunit/test.h>
#include <linux/module.h>

#include "kfab_core.h"

/* A value given to a module parameter and what parsing it gives. */
struct kfab_param_case {
	const struct kfab_uint_param *param;
	const char *val;
	int ret;
	unsigned int out;	/* the value taken, 0 when refused */
};

/*
 * Each of the @n @cases through kfab_uint_param_parse(), row by row, with
 * the parameter @p, or without one (NULL) each row's.
 */
static inline void kfab_param_cases_test(struct kunit *test,
					 const struct kfab_uint_param *p,
					 const struct kfab_param_case *cases,
					 unsigned int n)
{
	unsigned int i, out;
	int ret;

	for (i = 0; i < n; i++) {
		out = 0;
		ret = kfab_uint_param_parse(cases[i].val, p ?: cases[i].param,
					    &out);
		KUNIT_EXPECT_EQ_MSG(test, ret, cases[i].ret, "row %u (\"%s\")",
				    i, cases[i].val);
		KUNIT_EXPECT_EQ_MSG(test, out, cases[i].out, "row %u (\"%s\")",
				    i, cases[i].val);
	}
}

/*
 * The parameter @p that counts a module's devices, 1..8: the bounds, and
 * what every uint parameter refuses.
 */
static inline void kfab_count_param_test(struct kunit *test,
					 const struct kfab_uint_param *p)
{
	static const struct kfab_param_case rows[] = {
		/* the lower bound */
		{ NULL, "1", 0, 1 },
		/* the upper bound */
		{ NULL, "8", 0, 8 },
		/* no devices is refused */
		{ NULL, "0", -EINVAL, 0 },
		/* one too many */
		{ NULL, "9", -EINVAL, 0 },
		/* a negative number */
		{ NULL, "-1", -EINVAL, 0 },
		/* above 2^32 is -EINVAL too, not -ERANGE */
		{ NULL, "4294967296", -EINVAL, 0 },
		/* junk */
		{ NULL, "two", -EINVAL, 0 },
		/* empty */
		{ NULL, "", -EINVAL, 0 },
	};

	kfab_param_cases_test(test, p, rows, ARRAY_SIZE(rows));
}

/* Each row r of the array @_rows: @_fn(r.@_in) is r.@_out. */
#define KFAB_EXPECT_ROWS(_test, _rows, _fn, _in, _out)			\
	do {								\
		const typeof(_rows[0]) *__r = _rows;			\
		unsigned int __i;					\
									\
		for (__i = 0; __i < sizeof(_rows) / sizeof(*__r) +	\
				    __must_be_array(_rows); __i++)	\
			KUNIT_EXPECT_EQ_MSG(_test, _fn(__r[__i]._in),	\
					    __r[__i]._out, "row %u", __i); \
	} while (0)

/*
 * The suite @_prefix##_test_suite, named @_name, of the cases
 * @_prefix##_test_cases, alone in a module described by @_desc.
 */
#define KFAB_KUNIT_SUITE(_prefix, _name, _desc)				\
	static struct kunit_suite _prefix##_test_suite = {		\
		.name = (_name),					\
		.test_cases = _prefix##_test_cases,			\
	};								\
	kunit_test_suite(_prefix##_test_suite);				\
	MODULE_DESCRIPTION(_desc);					\
	MODULE_LICENSE("GPL");						\
	MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING)

#endif /* _KFAB_KUNIT_H */
