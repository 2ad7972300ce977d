# SPDX-License-Identifier: GPL-2.0
#
# kfab top-level Makefile (GNU make).  Kernel modules are built by kbuild
# from ./Kbuild; everything else is userspace.
#
#   make / make all   userspace: tools and build/libkfab.a into build/
#   make lib          build/libkfab.a only
#   make ulib-test    libkfab tests (ulib/, mrail/) on the host (shm backend),
#                     normal + ASan/UBSan
#   make mpi-tests    the MPI test and benchmark programs (mpicc; part of make all
#                     where mpicc is installed)
#   make modules      kfab_core.ko, kfab_hfi.ko and kfab_efa.ko against $(KDIR)
#   make modules_install  them into /lib/modules/$(KVER)/$(INSTALL_MOD_DIR)
#                     (kbuild's default: extra), under $(INSTALL_MOD_PATH)
#   make modules_clean  kbuild's clean alone (DKMS's CLEAN)
#   make dkms-src     the module sources DKMS builds from (dkms.conf) into
#                     $(DESTDIR)/usr/src/kfab-<version>
#   make deb          the Debian packages into build/deb (scripts/deb)
#   make kcheck       W=1 + sparse build, checkpatch --strict, uapi headers
#   make kunit        KUnit suites under UML in Debian's kernel source
#   make selftests    build selftests/ (run them with make check)
#   make check        install deps, then every check and test, with a summary
#   make demo         install deps, build, run the demo (in a VM if needed)
#   make clean
#
# Everything the kernel side needs (headers, source tree, QEMU) is installed
# by scripts/deps and cached under ~/.cache/kfab.

KFAB_CACHE ?= $(HOME)/.cache/kfab
export KFAB_CACHE
# Deferred: only looked up when a kernel target needs it.
KVER ?= $(shell scripts/kver)
KDIR ?= /lib/modules/$(KVER)/build

BUILD := build

# The first rule below is a target-specific line: name the default goal.
.DEFAULT_GOAL := all

CC ?= cc
CFLAGS ?= -O2 -g
KFAB_CFLAGS := -std=c11 -Wall -Wextra -Werror -I$(CURDIR)
LDLIBS_DEMO := -luuid

KBUILD_ARGS := -C $(KDIR) M=$(CURDIR) CONFIG_KFAB=m CONFIG_KFAB_HFI=m \
	       CONFIG_KFAB_EFA=m

TOOLS := $(BUILD)/kfab_demo $(BUILD)/kfab_bench $(BUILD)/kfab_info

$(BUILD)/kfab_bench: LDLIBS += -lfabric
$(BUILD)/kfab_info: $(BUILD)/libkfab.a $(wildcard ulib/*/*.h)
$(BUILD)/kfab_info: LDLIBS += $(BUILD)/libkfab.a -pthread

.PHONY: all tools modules modules_install modules_clean dkms-src deb kcheck \
	kunit selftests check demo clean deps

all: tools lib

tools: $(TOOLS)

$(BUILD)/%: tools/%.c $(wildcard uapi/*.h) | $(BUILD)
	$(CC) $(KFAB_CFLAGS) -I$(CURDIR)/ulib $(CFLAGS) $(CPPFLAGS) -o $@ $< $(LDFLAGS) $(LDLIBS_DEMO) $(LDLIBS)

$(BUILD):
	mkdir -p $@

include ulib/ulib.mk
include mrail/mrail.mk

# kfab_info_test (tools/tests/, built with the ulib tests) runs the tool it
# finds at this path from its own directory.
$(BUILD)/ulib-tests/kfab_info_test: private CPPFLAGS += -DKFAB_INFO_TOOL='"../kfab_info"'
$(BUILD)/ulib-asan/tests/kfab_info_test: private CPPFLAGS += -DKFAB_INFO_TOOL='"../../kfab_info"'
$(BUILD)/ulib-tests/kfab_info_test $(BUILD)/ulib-asan/tests/kfab_info_test: | \
	$(BUILD)/kfab_info

modules:
	$(MAKE) $(KBUILD_ARGS) modules

modules_install: modules
	$(MAKE) $(KBUILD_ARGS) modules_install

modules_clean:
	$(MAKE) $(KBUILD_ARGS) clean

# What building the modules needs, and nothing from build/: dkms.conf names
# the version, DKMS builds a copy with "make KDIR=... modules".
KFAB_VERSION = $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' dkms.conf)
DKMS_SRCS = dkms.conf Makefile Kbuild Kconfig ulib/ulib.mk mrail/mrail.mk \
	    scripts/kver \
	    $(wildcard uapi/*.h) \
	    $(filter-out %.mod.c,$(wildcard kmod/Kbuild kmod/*.[ch] \
					    kmod/*/Kbuild kmod/*/*.[ch]))

dkms-src:
	@test -n "$(KFAB_VERSION)" || { echo "no PACKAGE_VERSION in dkms.conf" >&2; exit 1; }
	for f in $(DKMS_SRCS); do \
		install -D -m 0644 $$f $(DESTDIR)/usr/src/kfab-$(KFAB_VERSION)/$$f || exit 1; \
	done
	chmod 0755 $(DESTDIR)/usr/src/kfab-$(KFAB_VERSION)/scripts/kver

deb:
	scripts/deb

kcheck:
	scripts/kcheck

kunit:
	scripts/kunit

selftests:
	$(MAKE) -C selftests

deps:
	scripts/deps

check:
	@scripts/check

demo:
	@scripts/demo

clean:
	-$(MAKE) $(KBUILD_ARGS) clean
	-$(MAKE) -C selftests clean
	rm -rf $(BUILD)
