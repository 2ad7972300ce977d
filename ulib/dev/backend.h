/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the two backends of every device layer, and FI_KFAB_BACKEND,
 * the variable that chooses between them.
 */
#ifndef KFAB_ULIB_BACKEND_H
#define KFAB_ULIB_BACKEND_H

#include <stdbool.h>

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

#endif /* KFAB_ULIB_BACKEND_H */
