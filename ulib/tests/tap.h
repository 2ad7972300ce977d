/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny TAP 13 printer for the libkfab tests: one point per check, the
 * plan printed at the end, exit code 0 when every point passed, 4 when the
 * whole program was skipped (kselftest's convention), 1 otherwise.
 */
#ifndef KFAB_ULIB_TAP_H
#define KFAB_ULIB_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define TAP_EXIT_SKIP	4

static int tap_count;
static int tap_failed;

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static inline void tap_start(const char *name)
{
	printf("TAP version 13\n");
	tap_diag("%s", name);
}

static inline int tap_vpoint(int ok, const char *file, int line,
			     const char *fmt, va_list ap)
{
	printf("%sok %d - ", ok ? "" : "not ", ++tap_count);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	if (!ok) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return ok;
}

/* One point: passes when @ok; returns @ok so callers can bail out. */
__attribute__((format(printf, 4, 5)))
static inline int tap_point(int ok, const char *file, int line,
			    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ok = tap_vpoint(ok, file, line, fmt, ap);
	va_end(ap);
	return ok;
}

/* Passes when a == b, printing both otherwise. */
__attribute__((format(printf, 5, 6)))
static inline int tap_eq(long long a, long long b, const char *file, int line,
			 const char *fmt, ...)
{
	va_list ap;
	int ok;

	va_start(ap, fmt);
	ok = tap_vpoint(a == b, file, line, fmt, ap);
	va_end(ap);
	if (!ok)
		tap_diag("  got %lld, want %lld", a, b);
	return ok;
}

#define TAP_OK(cond, ...)	tap_point(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define TAP_EQ(a, b, ...)	tap_eq((long long)(a), (long long)(b), \
				       __FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 1, 2)))
static inline void tap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d # SKIP ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* The whole program is skipped: exit 4 */
__attribute__((format(printf, 1, 2), noreturn))
static inline void tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(TAP_EXIT_SKIP);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	tap_diag("%d passed, %d failed", tap_count - tap_failed, tap_failed);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif /* KFAB_ULIB_TAP_H */
