# SPDX-License-Identifier: GPL-2.0
#
# afrdma top-level build.
#
#   make [KDIR=...] [W=1] [C=2]   module (net/afrdma/afrdma.ko) and tools
#   make check                    build for every installed kernel, test in a VM
#   make stress                   the same, with the full sizes (64 MiB wire streams)
#   make demo                     echo and transfer over AF_RDMA beside TCP
#   make clean
#
# Without KDIR the running kernel's build tree is used.

KREL	?= $(shell uname -r)
KDIR	?= /lib/modules/$(KREL)/build
CC	?= cc
CFLAGS	?= -O2 -g
TOOL_CFLAGS := $(CFLAGS) -Wall -Wextra -Wformat=2 -Wshadow -Iinclude/uapi -D_GNU_SOURCE

TOOL_DEPS := include/uapi/linux/afrdma.h tools/lib/afrdma_sock.h
COMPAT_H := net/afrdma/compat/generated.h
TOOLS := tools/afrdma tools/afrdma-perf tools/afrdma-run tools/libafrdma-preload.so

# The kernels "make check" builds for and tests: every installed one that has
# both an image and a build tree.
CHECK_KRELS ?= $(sort $(foreach v,$(wildcard /boot/vmlinuz-*),\
	$(if $(wildcard /lib/modules/$(v:/boot/vmlinuz-%=%)/build/Makefile),\
	$(v:/boot/vmlinuz-%=%))))

.PHONY: all module tools selftests check stress demo bench clean kdir-check deps

all: module tools selftests

kdir-check:
	@if [ ! -f "$(KDIR)/Makefile" ]; then \
		echo "afrdma: no kernel build tree at $(KDIR)." >&2; \
		echo "afrdma: pass KDIR=<tree>; installed trees that would do:" >&2; \
		found=0; for d in /lib/modules/*/build; do \
			[ -f "$$d/Makefile" ] && { echo "    KDIR=$$d" >&2; found=1; }; \
		done; \
		[ $$found = 1 ] || echo "    (none: install linux-headers-<version>)" >&2; \
		exit 1; \
	fi

$(COMPAT_H): kdir-check FORCE
	@sh net/afrdma/compat/gen-compat.sh "$(KDIR)" $@

module: kdir-check $(COMPAT_H)
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules

tools: $(TOOLS)

tools/afrdma: tools/afrdma.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -o $@ $<

tools/afrdma-perf: tools/afrdma-perf.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -o $@ $< -lpthread

tools/libafrdma-preload.so: tools/preload.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -fPIC -shared -o $@ $< -ldl

tools/afrdma-run: tools/afrdma-run.in
	sed 's|@PRELOAD@|libafrdma-preload.so|' $< > $@
	chmod +x $@

selftests:
	$(MAKE) -C selftests

check:
	@./tools/testing/check $(CHECK_KRELS)

stress:
	@WIRE_SIZE=64M ./tools/testing/check $(CHECK_KRELS)

demo:
	@./tools/testing/demo

clean:
	-[ -f "$(KDIR)/Makefile" ] && $(MAKE) -C "$(KDIR)" M="$(CURDIR)" clean
	$(MAKE) -C selftests clean
	rm -f $(TOOLS) $(COMPAT_H)
	rm -rf build

FORCE:
