/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the KUnit suites of the kfab modules share: the table of a
 * module's integer parameters and the suite's module boilerplate.
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

/* Each of the @n @cases through kfab_uint_param_parse(), row by row. */
static inline void kfab_param_cases_test(struct kunit *test,
					 const struct kfab_param_case *cases,
					 unsigned int n)
{
	unsigned int i, out;
	int ret;

	for (i = 0; i < n; i++) {
		out = 0;
		ret = kfab_uint_param_parse(cases[i].val, cases[i].param, &out);
		KUNIT_EXPECT_EQ_MSG(test, ret, cases[i].ret, "row %u", i);
		KUNIT_EXPECT_EQ_MSG(test, out, cases[i].out, "row %u", i);
	}
}

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
