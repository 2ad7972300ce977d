# SPDX-License-Identifier: GPL-2.0
#
# libkfab (ulib/), included by the top-level Makefile.
#
#   make lib          build/libkfab.a (static, -fPIC)
#   make ulib-tests   the ulib test programs, normal and sanitized
#   make ulib-test    build and run them on the host (shm backend), twice:
#                     build/ulib-tests/ (normal) and build/ulib-asan/tests/
#                     (-fsanitize=address,undefined); a program that exits 4
#                     (skip, e.g. hfi_kmod_test without /dev/kfab_hfi0) passes
#   make prov         the DL providers build/prov/libkfab_opx-fi.so and
#                     libkfab_efa-fi.so, and their sanitized twins in
#                     build/ulib-asan/prov/ (part of `make`);
#                     FI_PROVIDER_PATH=build/prov fi_info -p kfab_opx
#   make mpi-tests    the MPI programs of ulib/tests/mpi/ with mpicc
#                     (build/mpi/; part of `make` where mpicc is installed;
#                     scripts/mpi-tests runs mpi_test, scripts/mpi-bench
#                     mpi_bench)
#   make install      the providers into $(DESTDIR)$(FI_PROVDIR), the man
#                     page fi_kfab_opx(7) into $(DESTDIR)$(MANDIR)/man7,
#                     kfab_efa's extensions <rdma/fi_ext_kfab_efa.h> into
#                     $(DESTDIR)$(INCLUDEDIR)/rdma
#
# In the VM: scripts/vm-run -t 300 -- build/ulib-tests/hfi_kmod_test, and
# the same for efa_kmod_test; scripts/efa-tests runs both builds of it and
# of the efa_dgram_*_test programs (FI_KFAB_BACKEND=kmod) and fi_pingpong
# -e dgram

# The layers (Documentation/architecture.rst): the core every provider
# shares, the device layers, each provider's own code.
ULIB_CORE_SRCS := $(addprefix ulib/core/,kfab_log.c kfab_fid.c \
		  kfab_param.c kfab_attr.c kfab_fabric.c kfab_domain.c \
		  kfab_av.c kfab_cq.c kfab_cntr.c kfab_wait.c kfab_poll.c \
		  kfab_eq.c kfab_mr.c kfab_atomic.c kfab_atomic_ops.c \
		  kfab_iov.c kfab_tagm.c kfab_pool.c kfab_rxq.c kfab_map.c \
		  kfab_msg_ops.c kfab_rma_ops.c kfab_ep.c kfab_peer.c kfab_handle.c)
ULIB_DEV_SRCS := $(addprefix ulib/dev/,backend.c backend_kmod.c \
		 backend_shm.c ring.c)
ULIB_HFI_SRCS := $(ULIB_DEV_SRCS) $(addprefix ulib/dev/,hfi_ring.c hfi_dev.c \
		 hfi_backend_shm.c hfi_shm_ctxt.c hfi_shm_tid.c \
		 hfi_backend_kmod.c)
ULIB_EFADEV_SRCS := $(ULIB_DEV_SRCS) $(addprefix ulib/dev/,efa_ring.c \
		    efa_dev.c efa_backend_shm.c efa_shm_qp.c efa_shm_mr.c \
		    efa_backend_kmod.c)
ULIB_OPX_SRCS := $(addprefix ulib/opx/,opx_param.c opx_addr.c opx_attr.c \
		 opx_ep.c opx_sep.c opx_tx.c opx_rx.c opx_rel.c opx_rma.c)
ULIB_EFA_SRCS := $(addprefix ulib/efa/,efa_param.c efa_addr.c efa_attr.c \
		 efa_domain.c efa_mr.c dgram/efa_dgram.c rdm/efa_rdm_ep.c \
		 rdm/efa_rdm_peer.c rdm/efa_rdm_tx.c rdm/efa_rdm_rx.c \
		 rdm/efa_rdm_rma.c rdm/efa_rdm_zcpy.c)
# Each DL provider links the core, its device layer, its own code and its
# <p>/<p>_init.c (fi_prov_ini()); libkfab.a, for the tests, has all but
# the fi_prov_ini()s.
ULIB_PROV_SRCS_opx := $(ULIB_CORE_SRCS) $(ULIB_HFI_SRCS) $(ULIB_OPX_SRCS) \
		      ulib/opx/opx_init.c
ULIB_PROV_SRCS_efa := $(ULIB_CORE_SRCS) $(ULIB_EFADEV_SRCS) $(ULIB_EFA_SRCS) \
		      ulib/efa/efa_init.c
ULIB_SRCS := $(ULIB_CORE_SRCS) $(sort $(ULIB_HFI_SRCS) $(ULIB_EFADEV_SRCS)) \
	     $(ULIB_OPX_SRCS) $(ULIB_EFA_SRCS)
ULIB_PROVS := opx efa
ULIB_HDRS := $(foreach h,$(wildcard ulib/*/*.h ulib/*/*/*.h uapi/*.h),\
	       $(if $(findstring /tests/,$(h)),,$(h)))
# Each test sits beside what it tests (ulib/<layer>/tests/); ulib/tests/
# holds the cross-provider suite (fi_msg_test) and the helpers the tests
# share (TAP, two processes, getinfo, parameter and stand-in providers).
# A test of one file is tests/<name>.c; a test of several is a directory
# tests/<dir>/ with a main.c, its other .c files and its headers, built
# into <dir>_test (ulib/tests/fi_msg/: fi_msg_test).
# tools/tests/ holds the tools' tests, built and run the same way.
ULIB_TEST_GLOBS := ulib/tests ulib/*/tests ulib/*/*/tests tools/tests
ULIB_TEST_SRCS := $(foreach g,$(ULIB_TEST_GLOBS),$(wildcard $(g)/*.c))
ULIB_TEST_MULTI := $(foreach g,$(ULIB_TEST_GLOBS),\
		     $(patsubst %/main.c,%,$(wildcard $(g)/*/main.c)))
ULIB_TESTS := $(foreach g,$(ULIB_TEST_GLOBS),\
		$(notdir $(basename $(wildcard $(g)/*.c))) \
		$(addsuffix _test,$(notdir $(patsubst %/main.c,%,\
					$(wildcard $(g)/*/main.c)))))
ULIB_TEST_DIRS := $(sort $(dir $(ULIB_TEST_SRCS)))
ULIB_TEST_HDRS := $(wildcard ulib/tests/*.h ulib/*/tests/*.h ulib/*/*/tests/*.h)

# fi_opx(7)'s build option: OPX_AV=table or map builds kfab_opx for that
# AV type alone, runtime (the default) for both. Objects do not record it:
# build each setting into its own BUILD= directory (scripts/opx-tests does).
OPX_AV ?= runtime
ifeq ($(OPX_AV),table)
ULIB_AV_FLAGS := -DKFAB_OPX_AV_TABLE
else ifeq ($(OPX_AV),map)
ULIB_AV_FLAGS := -DKFAB_OPX_AV_MAP
else ifneq ($(OPX_AV),runtime)
$(error OPX_AV=$(OPX_AV): must be table, map or runtime)
endif

ULIB_CFLAGS := $(KFAB_CFLAGS) -fPIC -pthread -I$(CURDIR)/ulib $(ULIB_AV_FLAGS)
ULIB_NOSAN :=
ULIB_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=undefined
ULIB_LDLIBS := -pthread -lfabric -luuid -lnuma

# The DL providers export only fi_prov_ini (ulib/kfab.map).
ULIB_PROV_LDFLAGS := -shared -Wl,--version-script=ulib/kfab.map \
		     -Wl,-z,defs

# $(1): object dir, $(2): provider dir, $(3): the name of a variable of
# extra flags (they hold commas), $(4): provider
define ULIB_PROV
$(2)/libkfab_$(4)-fi.so: $(patsubst ulib/%.c,$(1)/%.o,$(ULIB_PROV_SRCS_$(4))) \
		ulib/kfab.map
	mkdir -p $$(@D)
	$$(CC) $$($(3)) $$(CFLAGS) $$(ULIB_PROV_LDFLAGS) -o $$@ \
		$$(filter %.o,$$^) $$(LDFLAGS) $$(ULIB_LDLIBS)
endef

# $(1): library, $(2): test dir, $(3): extra flags, $(4): source dir
define ULIB_TEST_RULE
$(2)/%: $(4)%.c $(1) $(ULIB_HDRS) $(ULIB_TEST_HDRS) | $(2)
	$$(CC) $$(ULIB_CFLAGS) $(3) $$(CFLAGS) $$(CPPFLAGS) -o $$@ $$< $(1) \
		$$(LDFLAGS) $$(ULIB_LDLIBS) $$(LDLIBS)

endef

# $(1): object dir, $(2): library, $(3): test dir, $(4): extra flags,
# $(5): the directory of a test of several files
define ULIB_TEST_MULTI_RULE
$(patsubst ulib/%.c,$(1)/%.o,$(wildcard $(5)/*.c)): $(wildcard $(5)/*.h) \
		$(ULIB_TEST_HDRS)
$(3)/$(notdir $(5))_test: $(patsubst ulib/%.c,$(1)/%.o,$(wildcard $(5)/*.c)) \
		$(2) | $(3)
	$$(CC) $$(ULIB_CFLAGS) $(4) $$(CFLAGS) -o $$@ $$(filter %.o,$$^) $(2) \
		$$(LDFLAGS) $$(ULIB_LDLIBS) $$(LDLIBS)

endef

# $(1): object dir, $(2): library, $(3): test dir, $(4): extra flags
define ULIB_VARIANT
$(1)/%.o: ulib/%.c $(ULIB_HDRS)
	@mkdir -p $$(@D)
	$$(CC) $$(ULIB_CFLAGS) $(4) $$(CFLAGS) $$(CPPFLAGS) -c -o $$@ $$<
$(2): $(patsubst ulib/%.c,$(1)/%.o,$(ULIB_SRCS))
	rm -f $$@
	$$(AR) rcs $$@ $$^
$(foreach d,$(ULIB_TEST_DIRS),$(call ULIB_TEST_RULE,$(2),$(3),$(4),$(d)))
$(foreach d,$(ULIB_TEST_MULTI),$(call ULIB_TEST_MULTI_RULE,$(1),$(2),$(3),$(4),$(d)))
$(3):
	mkdir -p $$@
endef

$(eval $(call ULIB_VARIANT,$(BUILD)/ulib,$(BUILD)/libkfab.a,$(BUILD)/ulib-tests,))
$(eval $(call ULIB_VARIANT,$(BUILD)/ulib-asan/obj,$(BUILD)/ulib-asan/libkfab.a,$(BUILD)/ulib-asan/tests,$(ULIB_SAN)))
$(foreach p,$(ULIB_PROVS),\
  $(eval $(call ULIB_PROV,$(BUILD)/ulib,$(BUILD)/prov,ULIB_NOSAN,$(p)))\
  $(eval $(call ULIB_PROV,$(BUILD)/ulib-asan/obj,$(BUILD)/ulib-asan/prov,ULIB_SAN,$(p))))

ULIB_PROV_SOS := $(foreach p,$(ULIB_PROVS),$(BUILD)/prov/libkfab_$(p)-fi.so)
ULIB_ASAN_PROV_SOS := $(foreach p,$(ULIB_PROVS),\
			$(BUILD)/ulib-asan/prov/libkfab_$(p)-fi.so)

ULIB_TEST_BINS := $(addprefix $(BUILD)/ulib-tests/,$(ULIB_TESTS))
ULIB_ASAN_BINS := $(addprefix $(BUILD)/ulib-asan/tests/,$(ULIB_TESTS))

.PHONY: lib ulib-tests ulib-test prov install mpi-tests

# Open MPI's compiler wrapper (libopenmpi-dev); the programs use MPI only.
MPICC ?= mpicc
MPI_TEST_BINS := $(BUILD)/mpi/mpi_test $(BUILD)/mpi/mpi_bench

# mpi_test.c has main and the case table, these files its cases
$(BUILD)/mpi/mpi_test: $(addprefix ulib/tests/mpi/,mpi_p2p.c mpi_coll.c \
		       mpi_rma.c mpi_test.h)

$(BUILD)/mpi/%: ulib/tests/mpi/%.c
	mkdir -p $(@D)
	$(MPICC) $(KFAB_CFLAGS) $(CFLAGS) $(CPPFLAGS) -o $@ $(filter %.c,$^) \
		$(LDFLAGS)

mpi-tests: $(MPI_TEST_BINS)

ifneq ($(shell command -v $(MPICC)),)
all: mpi-tests
endif

# The sanitized twin loads only into a process that has libasan first:
# LD_PRELOAD=$(gcc -print-file-name=libasan.so) FI_PROVIDER_PATH=...
prov: $(ULIB_PROV_SOS) $(ULIB_ASAN_PROV_SOS)

all: prov

# libfabric finds $(PREFIX)/lib/libfabric/ through FI_PROVIDER_PATH only;
# Debian's libfabric also scans its own directory by itself:
#   make install FI_PROVDIR=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libfabric
PREFIX ?= /usr/local
FI_PROVDIR ?= $(PREFIX)/lib/libfabric

MANDIR ?= $(PREFIX)/share/man
INCLUDEDIR ?= $(PREFIX)/include

# The man page is roff already (Documentation/man/): only gzipped.
$(BUILD)/man/fi_kfab_opx.7.gz: Documentation/man/fi_kfab_opx.7
	mkdir -p $(@D)
	gzip -9nc $< > $@.tmp && mv $@.tmp $@

$(BUILD)/man/fi_kfab_efa.7.gz: Documentation/man/fi_kfab_efa.7
	mkdir -p $(@D)
	gzip -9nc $< > $@.tmp && mv $@.tmp $@

install: $(ULIB_PROV_SOS) $(BUILD)/man/fi_kfab_opx.7.gz \
	 $(BUILD)/man/fi_kfab_efa.7.gz
	install -d $(DESTDIR)$(FI_PROVDIR) $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(INCLUDEDIR)/rdma
	install -m 0755 $(ULIB_PROV_SOS) $(DESTDIR)$(FI_PROVDIR)/
	install -m 0644 $(BUILD)/man/fi_kfab_opx.7.gz \
		$(BUILD)/man/fi_kfab_efa.7.gz $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 ulib/efa/fi_ext_kfab_efa.h $(DESTDIR)$(INCLUDEDIR)/rdma/

lib: $(BUILD)/libkfab.a

ulib-tests: $(ULIB_TEST_BINS) $(ULIB_ASAN_BINS)

# Each program prints TAP; exit 0 passes, 4 is a skip, anything else fails.
# fi_msg_test runs twice: on kfab_opx (its default) and on kfab_efa (a run
# PROGRAM:PROVIDER, which may not skip).
# The libfabric tests load the provider of their own build: the sanitized
# programs the sanitized provider.
ULIB_TEST_RUNS := $(ULIB_TEST_BINS) $(ULIB_ASAN_BINS) \
	$(addsuffix :kfab_efa,$(filter %/fi_msg_test,$(ULIB_TEST_BINS) $(ULIB_ASAN_BINS)))

ulib-test: ulib-tests prov
	@fail=0; \
	for r in $(ULIB_TEST_RUNS); do \
		t=$${r%%:*}; \
		case $$r in \
		*:*) run="$$t -p $${r#*:}"; tmo=900; skip=;; \
		*) run=$$t; tmo=600; skip=4;; \
		esac; \
		case $$t in \
		*/ulib-asan/*) prov=$(abspath $(BUILD))/ulib-asan/prov;; \
		*) prov=$(abspath $(BUILD))/prov;; \
		esac; \
		echo "# ---- $$run"; \
		FI_PROVIDER_PATH=$$prov \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			timeout $$tmo $$run; rc=$$?; \
		case $$rc in \
		0) echo "# PASS $$run";; \
		$$skip) echo "# SKIP $$run";; \
		*) echo "# FAIL $$run (exit $$rc)"; fail=1;; \
		esac; \
	done; \
	if [ $$fail = 0 ]; then echo "# ulib-test: all passed"; \
	else echo "# ulib-test: FAILED"; exit 1; fi
