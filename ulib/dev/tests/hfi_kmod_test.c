// SPDX-License-Identifier: GPL-2.0
/*
 * libkfab: the kmod HFI backend end to end, over /dev/kfab_hfi0 and
 * /dev/kfab_hfi1 (both sides on unit 0 when unit 1 is absent): listing
 * contexts, the unit knobs through sysfs, and the same two-process
 * exchange as hfi_shm_test. Skips (exit 4) without the device.
 *
 *   scripts/vm-run -t 300 -- build/ulib-tests/hfi_kmod_test
 */
#define _GNU_SOURCE
#include <sys/random.h>

#include "dev/tests/hfi_xproc.h"

static void test_list(const uint8_t uuid[16])
{
	struct kfab_hfi_ctxt_desc d[160];
	const struct kfab_hfi_ctxt_desc *e = NULL;
	struct kfab_hfi_dev *own, *lister;
	uint32_t total = 0;
	int n;

	if (kfab_hfi_open(KFAB_BACKEND_KMOD, 0, &own) ||
	    kfab_hfi_open(KFAB_BACKEND_KMOD, 0, &lister)) {
		TAP_OK(0, "list: open unit 0 twice");
		return;
	}
	if (!TAP_EQ(kfab_hfi_assign(own, uuid, KFAB_HFI_PKEY_DEFAULT, 9), 0,
		    "list: assign"))
		goto out;
	n = kfab_hfi_list_ctxts(lister, d, 160, &total);
	TAP_OK(n >= 1 && (uint32_t)n == total,
	       "list: %d of %u from an unassigned file", n, total);
	for (int i = 0; i < n; i++)
		if (d[i].ctxt == own->info.ctxt)
			e = &d[i];
	TAP_OK(e && e->unit == 0 && e->jkey == own->info.jkey &&
	       e->pkey == KFAB_HFI_PKEY_DEFAULT && e->sl == 9 &&
	       e->pid == getpid() && e->rhq_entries == own->info.rhq_entries,
	       "list: our context, jkey, pkey, sl, pid, geometry");
	TAP_OK(kfab_hfi_list_ctxts(own, NULL, 0, &total) == 0 && total >= 1,
	       "list: no room: only the total");
out:
	kfab_hfi_close(lister);
	kfab_hfi_close(own);
}

static void test_knobs(const uint8_t uuid[16])
{
	struct kfab_hfi_status st;
	struct kfab_hfi_dev *dev;

	if (kfab_hfi_open(KFAB_BACKEND_KMOD, 0, &dev) ||
	    kfab_hfi_assign(dev, uuid, KFAB_HFI_PKEY_DEFAULT, 0)) {
		TAP_OK(0, "knobs: open and assign");
		kfab_hfi_close(dev);
		return;
	}
	TAP_OK(!kfab_hfi_get_status(dev, &st) && st.unit == 0 && st.lid == 1 &&
	       st.state == dev->status->state &&
	       st.drop_ppm == dev->status->drop_ppm,
	       "knobs: sysfs agrees with the status page");
	TAP_EQ(kfab_hfi_set_knob(dev, KFAB_HFI_KNOB_DROP_PPM, 1000001),
	       -EINVAL, "knobs: drop_ppm 1000001: EINVAL");
	if (geteuid()) {
		TAP_EQ(kfab_hfi_set_knob(dev, KFAB_HFI_KNOB_DROP_PPM, 5000),
		       -EACCES, "knobs: not root: EACCES");
	} else {
		TAP_EQ(kfab_hfi_set_knob(dev, KFAB_HFI_KNOB_DROP_PPM, 5000), 0,
		       "knobs: drop_ppm 5000");
		TAP_EQ(dev->status->drop_ppm, 5000,
		       "knobs: mirrored into the status page");
		TAP_EQ(kfab_hfi_set_knob(dev, KFAB_HFI_KNOB_STATE,
					 KFAB_HFI_STATE_DOWN), 0,
		       "knobs: state Down");
		TAP_OK(!kfab_hfi_get_status(dev, &st) &&
		       st.state == KFAB_HFI_STATE_DOWN, "knobs: reads Down");
		TAP_EQ(kfab_hfi_reset_knobs(dev), 0, "knobs: reset");
		TAP_OK(dev->status->drop_ppm == 0 &&
		       dev->status->state == KFAB_HFI_STATE_ACTIVE,
		       "knobs: Active, drop_ppm 0 again");
	}
	kfab_hfi_close(dev);
}

int main(void)
{
	struct xp_cfg cfg = { .backend = KFAB_BACKEND_KMOD };
	struct kfab_hfi_dev *dev;

	tap_start("libkfab: kmod HFI backend");
	if (!kfab_hfi_kmod_present(0))
		tap_skip_all("/dev/kfab_hfi0 absent: kfab_hfi is not loaded");
	kfab_log_set(xp_log);
	if (getrandom(cfg.uuid, sizeof(cfg.uuid), 0) != sizeof(cfg.uuid))
		cfg.uuid[0] = (uint8_t)getpid();
	cfg.uuid[0] |= 1;

	TAP_EQ(kfab_hfi_open(KFAB_BACKEND_AUTO, 0, &dev), 0,
	       "auto: opens unit 0");
	if (dev) {
		TAP_OK(!strcmp(dev->ops->name, "kmod"),
		       "auto: picks kmod when the device exists");
		TAP_EQ(dev->version.abi_version, KFAB_ABI_VERSION,
		       "GET_VERSION: ABI %d", KFAB_ABI_VERSION);
		TAP_EQ(dev->version.lid, 1, "GET_VERSION: lid of unit 0");
		TAP_EQ(kfab_hfi_assign(dev, cfg.uuid, 0, 0), -EINVAL,
		       "assign with pkey 0: EINVAL");
		kfab_hfi_close(dev);
	}

	test_list(cfg.uuid);
	test_knobs(cfg.uuid);

	cfg.unit_parent = kfab_hfi_kmod_present(1) ? 1 : 0;
	cfg.unit_child = 0;
	xp_run(&cfg, "kmod");
	return tap_done();
}
