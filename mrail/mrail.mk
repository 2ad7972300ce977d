# SPDX-License-Identifier: GPL-2.0
#
# kfab_mrail (mrail/), included by the top-level Makefile after ulib/ulib.mk.
#
# Until the provider exists its files go into build/libkfab.a and the
# sanitized build/ulib-asan/libkfab.a, which the tests link, and into no
# provider .so. Its tests, mrail/tests/<name>.c, are built by
# `make ulib-tests` into build/ulib-tests/ and build/ulib-asan/tests/, and
# run by `make ulib-test` with the others.
MRAIL_SRCS := $(addprefix mrail/,mrail_param.c mrail_rail.c mrail_seq.c)
MRAIL_HDRS := $(wildcard mrail/*.h)
MRAIL_TESTS := $(notdir $(basename $(wildcard mrail/tests/*.c)))

# $(1): object dir, $(2): library, $(3): test dir, $(4): extra flags
define MRAIL_VARIANT
$(1)/%.o: mrail/%.c $(MRAIL_HDRS) $(ULIB_HDRS)
	@mkdir -p $$(@D)
	$$(CC) $$(ULIB_CFLAGS) $(4) $$(CFLAGS) $$(CPPFLAGS) -c -o $$@ $$<
$(2): $(patsubst mrail/%.c,$(1)/%.o,$(MRAIL_SRCS))
$(call ULIB_TEST_RULE,$(2),$(3),$(4),mrail/tests/)
$(addprefix $(3)/,$(MRAIL_TESTS)): $(MRAIL_HDRS)
endef

$(eval $(call MRAIL_VARIANT,$(BUILD)/mrail,$(BUILD)/libkfab.a,$(BUILD)/ulib-tests,))
$(eval $(call MRAIL_VARIANT,$(BUILD)/ulib-asan/mrail,$(BUILD)/ulib-asan/libkfab.a,$(BUILD)/ulib-asan/tests,$(ULIB_SAN)))

MRAIL_TEST_BINS := $(addprefix $(BUILD)/ulib-tests/,$(MRAIL_TESTS)) \
		   $(addprefix $(BUILD)/ulib-asan/tests/,$(MRAIL_TESTS))

ulib-tests: $(MRAIL_TEST_BINS)

ULIB_TEST_RUNS += $(MRAIL_TEST_BINS)
