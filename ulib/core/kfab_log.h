/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: logging hook. The default writes "kfab: <message>" to stderr;
 * kfab_log_set() installs another sink (the providers will route it to
 * libfabric's FI_LOG), NULL restores the default.
 */
#ifndef KFAB_ULIB_LOG_H
#define KFAB_ULIB_LOG_H

enum kfab_log_level {
	KFAB_LOG_ERR,	/* the user must act: shown even with FI_LOG off */
	KFAB_LOG_WARN,
	KFAB_LOG_INFO,
	KFAB_LOG_DEBUG,
};

typedef void (*kfab_log_fn)(enum kfab_log_level level, const char *msg);

void kfab_log_set(kfab_log_fn fn);

__attribute__((format(printf, 2, 3)))
void kfab_log(enum kfab_log_level level, const char *fmt, ...);

/* Logs "<what>: <strerror(-err)>" at WARN and returns @err (a -errno). */
__attribute__((format(printf, 2, 3)))
int kfab_log_err(int err, const char *fmt, ...);

/* The group the packaged udev rule gives the device nodes (kfab.rules). */
#define KFAB_DEV_GROUP	"kfab"

/*
 * Logs why opening the device node @path failed with @err (a -errno) and
 * returns @err; EACCES and EPERM become -EACCES with the way in, at
 * KFAB_LOG_ERR the first time in the process: "<prov>: <path>: Permission
 * denied: add the user to group kfab (see fi_<prov>(7))".
 */
int kfab_log_open_err(int err, const char *prov, const char *path);

#endif /* KFAB_ULIB_LOG_H */
