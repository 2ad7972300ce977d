// SPDX-License-Identifier: GPL-2.0
/*
 * kfab_core: services shared by the kfab fabric device modules.
 *
 * This file only owns the "kfab" device class; the services themselves
 * live one per file (kfab_pin.c, kfab_qmem.c, ...) and are used through
 * kfab_core.h by the device modules (kfab_hfi, kfab_efa).
 */
#define pr_fmt(fmt) "kfab: " fmt

#include <linux/device.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "kfab_core.h"

struct class *kfab_class;
EXPORT_SYMBOL_GPL(kfab_class);

/*
 * /dev/kfab_<name>, root's alone until udev applies the packaged rule
 * (group kfab, 0660): a device that pins memory and copies between
 * processes is not everyone's by default. Among the users let in, the job
 * keys checked in the ioctls decide who may touch which context.
 */
static char *kfab_devnode(struct device *dev, umode_t *mode)
{
	if (mode)
		*mode = 0600;
	return kasprintf(GFP_KERNEL, "kfab_%s", dev_name(dev));
}

static int __init kfab_core_init(void)
{
	kfab_class = class_create(THIS_MODULE, "kfab");
	if (IS_ERR(kfab_class)) {
		pr_err("cannot create the kfab class: %ld\n",
		       PTR_ERR(kfab_class));
		return PTR_ERR(kfab_class);
	}
	kfab_class->devnode = kfab_devnode;
	return 0;
}

static void __exit kfab_core_exit(void)
{
	class_destroy(kfab_class);
}

module_init(kfab_core_init);
module_exit(kfab_core_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kfab kernel-assisted fabric core services");
