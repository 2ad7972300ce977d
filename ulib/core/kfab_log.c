// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: logging hook. The default sink prints to stderr, prefixed
 * "kfab:", messages up to the level named by $KFAB_LOG_LEVEL (warn, info,
 * debug; default warn).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfab_log.h"

static _Atomic(kfab_log_fn) log_fn;

static enum kfab_log_level default_max(void)
{
	const char *s = getenv("KFAB_LOG_LEVEL");

	if (!s)
		return KFAB_LOG_WARN;
	if (!strcmp(s, "debug"))
		return KFAB_LOG_DEBUG;
	if (!strcmp(s, "info"))
		return KFAB_LOG_INFO;
	return KFAB_LOG_WARN;
}

static void default_sink(enum kfab_log_level level, const char *msg)
{
	if (level <= default_max())
		fprintf(stderr, "kfab: %s\n", msg);
}

void kfab_log_set(kfab_log_fn fn)
{
	atomic_store(&log_fn, fn);
}

static void vlog(enum kfab_log_level level, const char *suffix,
		 const char *fmt, va_list ap)
{
	kfab_log_fn fn = atomic_load(&log_fn);
	char msg[512];
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (suffix && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", suffix);
	(fn ? fn : default_sink)(level, msg);
}

void kfab_log(enum kfab_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, NULL, fmt, ap);
	va_end(ap);
}

int kfab_log_err(int err, const char *fmt, ...)
{
	char buf[128];
	va_list ap;

	va_start(ap, fmt);
	vlog(KFAB_LOG_WARN, strerror_r(-err, buf, sizeof(buf)), fmt, ap);
	va_end(ap);
	return err;
}

int kfab_log_open_err(int err, const char *prov, const char *path)
{
	static atomic_bool told;
	char buf[128];

	if (err != -EACCES && err != -EPERM)
		return kfab_log_err(err, "%s: open %s", prov, path);
	kfab_log(atomic_exchange(&told, true) ? KFAB_LOG_WARN : KFAB_LOG_ERR,
		 "%s: %s: %s: add the user to group " KFAB_DEV_GROUP " (see fi_%s(7))",
		 prov, path, strerror_r(EACCES, buf, sizeof(buf)), prov);
	return -EACCES;
}
