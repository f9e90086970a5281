# SPDX-License-Identifier: GPL-2.0
#
# afrdma top-level build.  "make help" prints the targets listed here.
#
#   make [KDIR=...] [W=1] [C=2]   module (net/afrdma/afrdma.ko), tools and selftests
#   make module | tools | selftests
#                                 one of those only
#   make deps                     install the Debian packages .ci/deps lists (sudo)
#   make check [CHECK_KRELS=...]  build for the Debian kernels .ci/deps installs
#                                 (or those given), test in a VM
#   make check-debug [DEBUG_TESTS=...]
#                                 the selftests on a KASAN/lockdep/kmemleak
#                                 6.12 kernel (built once, cached in
#                                 /var/cache/afrdma), with a positive control
#   make check-kcsan [KCSAN_TESTS=quick]
#                                 optional: three selftests on a KCSAN 6.12
#                                 kernel; lists every data race, fails on
#                                 one in afrdma's own functions
#   make ci [CI_DEBUG=0]          what .ci/run runs: check, then check-debug
#                                 DEBUG_TESTS=quick; one summary line
#   make stress                   the whole check at full size: 10,000 churn cycles,
#                                 1024 connections, 100 device removals under
#                                 churn, 64 MiB wire streams
#   make demo                     echo and transfer over AF_RDMA beside TCP
#   make bench [KREL=...]         afrdma vs raw verbs, TCP and rsockets in a VM:
#                                 table, build/bench/bench.{json,md,png}
#   make install [DESTDIR=] [PREFIX=/usr/local]
#                                 module (updates/), tools, uapi header, man pages
#   make uninstall
#   make fuzz [FUZZ_SECONDS=60]   libFuzzer on the wire-format parser
#   make fuzz-kernel [FUZZ_SECONDS=60]
#                                 afrdma-sysfuzz on afrdma's sockets, on
#                                 the debug kernel
#   make clean
#   make help                     this list
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

PREFIX	?= /usr/local
BINDIR	:= $(PREFIX)/bin
LIBDIR	:= $(PREFIX)/lib/afrdma
INCDIR	:= $(PREFIX)/include/linux
MANDIR	:= $(PREFIX)/share/man
MANS	:= man/afrdma.7 man/afrdma.8 man/afrdma-run.1 man/afrdma-perf.1

# The kernels "make check" and "make stress" build for and test.  Empty:
# tools/testing/check asks tools/testing/default-krels, which names the
# releases Debian's meta packages in .ci/deps depend on (6.1 and 6.12), not
# everything else in /boot, and fails if one lacks its image or headers.
CHECK_KRELS ?=

.PHONY: all module tools selftests check check-debug check-kcsan ci stress demo bench clean kdir-check deps \
	install install-module install-user uninstall fuzz fuzz-kernel help

all: module tools selftests

# The target list at the top of this file.
help:
	@sed -n '/^#   make /,/^#$$/s/^# \(..*\)/\1/p' $(firstword $(MAKEFILE_LIST))

deps:
	@./tools/install-deps || { \
		echo "afrdma: installing .ci/deps failed; run 'make deps' as root" \
		     "(it uses apt-get) and read apt's error above." >&2; exit 1; }

kdir-check:
	@if [ ! -f "$(KDIR)/Makefile" ]; then \
		echo "afrdma: no kernel build tree at $(KDIR)." >&2; \
		echo "afrdma: pass KDIR=<tree>; installed trees that would do:" >&2; \
		found=0; for d in /lib/modules/*/build; do \
			[ -f "$$d/Makefile" ] && { echo "    KDIR=$$d" >&2; found=1; }; \
		done; \
		[ $$found = 1 ] || echo "    (none: run 'make deps', or install linux-headers-<version>)" >&2; \
		exit 1; \
	fi

$(COMPAT_H): kdir-check FORCE
	@sh net/afrdma/compat/gen-compat.sh "$(KDIR)" $@

module: kdir-check $(COMPAT_H)
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" modules

# The hostile-peer tool needs rdma-core's librdmacm-dev and libibverbs-dev;
# without them its selftest skips.
HOSTILE := tools/testing/afrdma-hostile
# make bench's RDS client, not installed
RDS_PERF := tools/rds-perf
# The system-call fuzzer (selftests/sysfuzz.sh), not installed
SYSFUZZ := tools/testing/afrdma-sysfuzz
HAVE_RDMACM := $(shell printf '\043include <rdma/rdma_cma.h>\n' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo y)

tools: $(TOOLS) $(RDS_PERF) $(SYSFUZZ) $(if $(HAVE_RDMACM),$(HOSTILE))

$(HOSTILE): tools/testing/afrdma-hostile.c net/afrdma/wire.c net/afrdma/wire.h
	$(CC) $(TOOL_CFLAGS) -Inet/afrdma -o $@ $< net/afrdma/wire.c \
		-lrdmacm -libverbs

tools/afrdma: tools/afrdma.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -o $@ $< -lmnl

tools/afrdma-perf: tools/afrdma-perf.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -o $@ $< -lpthread

$(RDS_PERF): tools/rds-perf.c
	$(CC) $(TOOL_CFLAGS) -o $@ $<

$(SYSFUZZ): tools/testing/afrdma-sysfuzz.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -Itools -o $@ $< -lpthread

tools/libafrdma-preload.so: tools/preload.c $(TOOL_DEPS)
	$(CC) $(TOOL_CFLAGS) -fPIC -shared -o $@ $< -ldl

tools/afrdma-run: tools/afrdma-run.in
	sed 's|@PRELOAD@|libafrdma-preload.so|' $< > $@
	chmod +x $@

selftests:
	$(MAKE) -C selftests

check:
	@./tools/testing/check $(CHECK_KRELS)

# DEBUG_TESTS=quick: the data path, fallback, hostile, stalled-call,
# zero-copy and device-removal tests only.
check-debug:
	@./tools/testing/check-debug

# Optional, not in ci: the data-race detector (tools/testing/check-debug).
check-kcsan:
	@./tools/testing/check-debug --kcsan

# What .ci/run runs: check, then check-debug's quick subset (CI_DEBUG=0: not).
ci:
	@./tools/testing/ci

# The whole check, with the load, churn, device churn and wire tests at
# full size.
stress:
	@CHECK_ENV="AFRDMA_STRESS=1 AFRDMA_CHURN=10000 AFRDMA_CONNS=1024 AFRDMA_DEVCHURN=100" \
		CHECK_TIMEOUT=14400 WIRE_SIZE=64M ./tools/testing/check $(CHECK_KRELS)

demo:
	@./tools/testing/demo

# The newest installed kernel unless KREL is given on the command line.
bench:
	@./tools/testing/bench $(if $(filter command line,$(origin KREL)),-k $(KREL))

install: install-module install-user

# modules_install runs depmod; with DESTDIR it only stages the tree.
# Distribution kernels' signing keys are not on the machine: the module is
# installed unsigned (DKMS signs with its own key where Secure Boot wants it).
install-module: module
	$(MAKE) -C "$(KDIR)" M="$(CURDIR)" INSTALL_MOD_DIR=updates \
		CONFIG_MODULE_SIG_ALL= \
		$(if $(DESTDIR),INSTALL_MOD_PATH="$(DESTDIR)" DEPMOD=true) modules_install

# afrdma-run finds its preload library beside itself, through the link.
install-user: tools
	install -D -m 0755 tools/afrdma "$(DESTDIR)$(BINDIR)/afrdma"
	install -D -m 0755 tools/afrdma-perf "$(DESTDIR)$(BINDIR)/afrdma-perf"
	install -D -m 0755 tools/afrdma-run "$(DESTDIR)$(LIBDIR)/afrdma-run"
	install -D -m 0644 tools/libafrdma-preload.so \
		"$(DESTDIR)$(LIBDIR)/libafrdma-preload.so"
	ln -sfn ../lib/afrdma/afrdma-run "$(DESTDIR)$(BINDIR)/afrdma-run"
	install -D -m 0644 include/uapi/linux/afrdma.h "$(DESTDIR)$(INCDIR)/afrdma.h"
	for m in $(MANS); do \
		install -D -m 0644 $$m "$(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}" || exit; \
	done

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/afrdma" "$(DESTDIR)$(BINDIR)/afrdma-perf" \
		"$(DESTDIR)$(BINDIR)/afrdma-run" "$(DESTDIR)$(INCDIR)/afrdma.h"
	rm -rf "$(DESTDIR)$(LIBDIR)"
	for m in $(MANS); do rm -f "$(DESTDIR)$(MANDIR)/man$${m##*.}/$${m##*/}"; done
	rm -f "$(DESTDIR)/lib/modules/$(KREL)/updates/net/afrdma/afrdma.ko"

FUZZ_SECONDS ?= 60
fuzz:
	$(MAKE) -C tools/testing/fuzz run FUZZ_SECONDS=$(FUZZ_SECONDS)

# The system-call fuzzer (selftests/sysfuzz.sh, afrdma-sysfuzz) for
# FUZZ_SECONDS on the debug kernel.  make check-debug runs it for 10 s;
# make check does not (its runs must repeat).
fuzz-kernel:
	@DEBUG_TESTS=sysfuzz FUZZ_SECONDS=$(FUZZ_SECONDS) \
		DEBUG_TIMEOUT=$$(($(FUZZ_SECONDS) * 3 + 1800)) ./tools/testing/check-debug

clean:
	-[ -f "$(KDIR)/Makefile" ] && $(MAKE) -C "$(KDIR)" M="$(CURDIR)" clean
	$(MAKE) -C selftests clean
	$(MAKE) -C tools/testing/fuzz clean
	$(MAKE) -C tools/testing/ring clean
	$(MAKE) -C tools/testing/link_area clean
	$(MAKE) -C tools/testing/link_msg clean
	$(MAKE) -C tools/testing/stream clean
	rm -f $(TOOLS) $(RDS_PERF) $(SYSFUZZ) $(HOSTILE) $(COMPAT_H)
	rm -rf build

FORCE:
