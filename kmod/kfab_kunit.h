/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the KUnit suites of the kfab modules share: the table of a
 * module's integer parameters, table-driven checks of a function and the
 * suite's module boilerplate.
 */
#ifndef _KFAB_KUNIT_H
#define _KFAB_KUNIT_H

#include <kunit/test.h>
#include <linux/log2.h>
#include <linux/module.h>

#include "kfab_core.h"

/* A parameter's range and kind as its module declares them. */
struct kfab_param_range {
	const struct kfab_uint_param *param;
	unsigned int min;
	unsigned int max;
	bool pow2;
};

/* @s through kfab_uint_param_parse() with @p: @v taken, or refused. */
static inline void kfab_param_expect_str(struct kunit *test,
					 const struct kfab_uint_param *p,
					 const char *s, unsigned int v, bool ok)
{
	unsigned int out = 0;
	int ret;

	ret = kfab_uint_param_parse(s, p, &out);
	KUNIT_EXPECT_EQ_MSG(test, ret, ok ? 0 : -EINVAL,
			    "\"%s\" to the parameter of %u..%u", s, p->min,
			    p->max);
	KUNIT_EXPECT_EQ_MSG(test, out, ok ? v : 0,
			    "\"%s\" to the parameter of %u..%u", s, p->min,
			    p->max);
}

/* The same for @v printed with @fmt. */
static inline void kfab_param_expect(struct kunit *test,
				     const struct kfab_uint_param *p,
				     const char *fmt, unsigned int v, bool ok)
{
	char buf[24];

	snprintf(buf, sizeof(buf), fmt, v);
	kfab_param_expect_str(test, p, buf, v, ok);
}

/*
 * Each of the @n parameters @r takes its bounds, the upper one also with
 * the newline sysfs-style input has, and the lower in hex, as every uint
 * parameter; it refuses one past either bound. One that need not be a
 * power of two takes one below its upper bound (which is none); a power
 * of two refuses a value between two (not a page multiple either, for a
 * range of pages), one below a power of two, the power of two below the
 * range and above it, and zero.
 */
static inline void kfab_param_ranges_test(struct kunit *test,
					  const struct kfab_param_range *r,
					  unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		const struct kfab_uint_param *p = r[i].param;
		unsigned int min = r[i].min, max = r[i].max;

		kfab_param_expect(test, p, "%u", min, true);
		kfab_param_expect(test, p, "%u", max, true);
		kfab_param_expect(test, p, "%u\n", max, true);
		kfab_param_expect(test, p, "%#x", min, true);
		if (min)
			kfab_param_expect(test, p, "%u", min - 1, false);
		kfab_param_expect(test, p, "%u", max + 1, false);
		if (!r[i].pow2) {
			KUNIT_EXPECT_FALSE(test, is_power_of_2(max - 1));
			kfab_param_expect(test, p, "%u", max - 1, true);
			continue;
		}
		kfab_param_expect(test, p, "%u", min + min / 2, false);
		kfab_param_expect(test, p, "%u", 2 * min - 1, false);
		kfab_param_expect(test, p, "%u", min / 2, false);
		kfab_param_expect(test, p, "%u", 2 * max, false);
		kfab_param_expect(test, p, "%u", 0, false);
	}
}

/*
 * The parameter @p that counts a module's devices, 1..8, as above; and
 * what every uint parameter refuses: a negative number, one above 2^32
 * (-EINVAL too, not -ERANGE), junk and nothing.
 */
static inline void kfab_count_param_test(struct kunit *test,
					 const struct kfab_uint_param *p)
{
	static const char * const refused[] = {
		"-1", "4294967296", "two", "",
	};
	const struct kfab_param_range range = { p, 1, 8, false };
	unsigned int i;

	kfab_param_ranges_test(test, &range, 1);
	for (i = 0; i < ARRAY_SIZE(refused); i++)
		kfab_param_expect_str(test, p, refused[i], 0, false);
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
