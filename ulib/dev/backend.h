/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the two backends of every device layer, FI_KFAB_BACKEND, the
 * variable that chooses between them, and the check of a knob's value
 * both make.
 */
#ifndef KFAB_ULIB_BACKEND_H
#define KFAB_ULIB_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

enum kfab_backend {
	KFAB_BACKEND_AUTO,	/* kmod when the device exists, else shm */
	KFAB_BACKEND_KMOD,	/* the kfab modules' /dev/kfab_* */
	KFAB_BACKEND_SHM,	/* shared-memory files, no module */
};

/*
 * FI_KFAB_BACKEND: auto (default), kmod or shm; auto is kmod when
 * @kmod_present (the device node @node exists, as the device layer's
 * *_kmod_present() says). *@backend is never AUTO on success; -EINVAL
 * (logged) for any other value.
 */
int kfab_backend_get(bool kmod_present, const char *node,
		     enum kfab_backend *backend);

/*
 * What opening device <kind><n> (as "hfi", 0) with *@backend opens: KMOD or
 * SHM, AUTO resolved into kmod when its device node exists, else shm
 * (logged). -EINVAL (logged) for another value.
 */
int kfab_backend_resolve(enum kfab_backend *backend, const char *kind,
			 unsigned int n);

/* The fabric name that shows the backend: "kfab-kmod" or "kfab-shm". */
const char *kfab_backend_fabric_name(enum kfab_backend backend);

/*
 * set_knob() of device <kind><n>, either backend: knob @knob is named @name
 * (NULL: there is none) and takes 0..@max. 0, or -EINVAL (logged) for an
 * unknown knob or a value out of range.
 */
int kfab_knob_check(const char *kind, unsigned int n, int knob,
		    const char *name, uint32_t max, uint32_t value);

#endif /* KFAB_ULIB_BACKEND_H */
