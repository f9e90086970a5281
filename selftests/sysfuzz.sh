#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzzes afrdma's system calls in the guest, then judges the kernel:
#
#   sysfuzz          tools/testing/afrdma-sysfuzz: random calls from several
#                    threads on shared afrdma sockets, with live RDMA peers;
#                    every call returns (no hang) and the run reached RDMA
#   sysfuzz_drained  afterwards every afrdma socket and RC QP goes
#
# vm-run fails the run on any WARN, BUG or sanitizer report in the kernel
# log, and make check-debug scans kmemleak after this program.  Lengths:
# AFRDMA_FUZZ_SECONDS (default 10) for the fuzzer; make check-debug and
# make fuzz-kernel set it, and selftests/run.sh runs this only then.
# Prints TAP.  Needs the module loaded and rxe0 up.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh

secs=${AFRDMA_FUZZ_SECONDS:-10}
addr=${AFRDMA_ADDR:-10.99.0.1}
addr6=${AFRDMA_ADDR6:-fd99::1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "1..2"

# The stuck bound: a call that takes longer has hung in the kernel.  The
# output goes out as it comes: a fuzzer stuck for good still says where.
timeout "$((secs + $(scaled 300)))" ./tools/testing/afrdma-sysfuzz \
	-t "$secs" -j 4 -S "$(scaled 120)" -a "$addr" -A "$addr6" 2>&1 |
	sed -u 's/^\([^#]\)/# \1/' | tee "$work/sysfuzz.log"
rc=${PIPESTATUS[0]}
rdma=$(sed -n 's/.* \([0-9]*\) connects on RDMA.*/\1/p' "$work/sysfuzz.log")
if [ $rc = 0 ] && [ "${rdma:-0}" -gt 0 ]; then
	tap_result ok sysfuzz
else
	echo "# afrdma-sysfuzz exited $rc with ${rdma:-no} connects on RDMA"
	tap_result fail sysfuzz
fi

if wait_drained "$(scaled 30)"; then
	tap_result ok sysfuzz_drained
else
	echo "# left after $(scaled 30) s: $socks afrdma sockets, $qps RC QPs"
	sed 's/^/#   /' /proc/net/afrdma
	tap_result fail sysfuzz_drained
fi
tap_totals
[ "$fail" = 0 ]
