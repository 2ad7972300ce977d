/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libkfab: the two backends of every device layer, FI_KFAB_BACKEND, the
 * variable that chooses between them, the check of a knob's value both
 * make, and the list of a device's mapped peers the layer keeps for them.
 */
#ifndef KFAB_ULIB_BACKEND_H
#define KFAB_ULIB_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "kfab_sys.h"

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

/*
 * The state knob's values as sysfs writes and reads them, either kind
 * (KFAB_HFI_STATE_* and KFAB_EFA_STATE_* are the same): "Down" for 0,
 * "Active" for 1, NULL for anything else.
 */
const char *kfab_state_word(uint32_t state);

/*
 * The mapped peers of a device of either layer (struct kfab_hfi_dev,
 * kfab_efa_dev): the layer keeps them on dev->peers for both backends,
 * whose ops->map_peer allocates and maps a peer and ops->peer_free unmaps
 * and frees one. Macros, as the layers' types differ; @dev is evaluated
 * more than once.
 */

/* What ops->map_peer returned, @ret, having set *@peerp: on the list if 0. */
#define KFAB_DEV_PEER_MAPPED(dev, peerp, ret) __extension__ ({		\
	int r_ = (ret);							\
									\
	if (!r_)							\
		KFAB_LIST_PUSH(&(dev)->peers, *(peerp));		\
	r_;								\
})

/*
 * Takes @peer off the list and frees it: 0, or -EINVAL (logged as
 * <@kind><@n>'s) when it is not one of @dev's.
 */
#define KFAB_DEV_PEER_UNMAP(dev, peer, kind, n) __extension__ ({	\
	int r_ = KFAB_LIST_UNLINK(&(dev)->peers, (peer));		\
									\
	if (!r_)							\
		(dev)->ops->peer_free((dev), (peer));			\
	r_ ? kfab_dev_peer_unknown((kind), (n), (peer)) : 0;		\
})

/* Frees every peer still on the list, then ops->close(); NULL: nothing. */
#define KFAB_DEV_CLOSE(dev) do {					\
	if (dev) {							\
		while ((dev)->peers) {					\
			__typeof__((dev)->peers) p_ = (dev)->peers;	\
									\
			(dev)->peers = p_->next;			\
			(dev)->ops->peer_free((dev), p_);		\
		}							\
		(dev)->ops->close(dev);					\
	}								\
} while (0)

/* KFAB_DEV_PEER_UNMAP() of a peer not on the list: -EINVAL, logged. */
int kfab_dev_peer_unknown(const char *kind, unsigned int n, const void *peer);

#endif /* KFAB_ULIB_BACKEND_H */
