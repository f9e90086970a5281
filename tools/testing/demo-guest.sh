#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of tools/testing/demo.  The figures come from QEMU TCG and
# soft-RoCE: compare them with each other, not with real hardware.
set -eu
cd "$(dirname "$0")/../.."
. selftests/lib.sh
insmod "build/$AFRDMA_KREL/net/afrdma/afrdma.ko"
echo "== afrdma loaded on $AFRDMA_KREL: $(dmesg | grep -o 'AF_RDMA is .*' | tail -n 1)"
./tools/afrdma devices

for t in af_rdma ipproto_rdma tcp; do
	./tools/afrdma-perf server -t "$t" -a "$AFRDMA_ADDR" -p 7000 > /dev/null 2>&1 &
	sleep 0.5
	echo "== $t"
	./tools/afrdma-perf client -t "$t" -a "$AFRDMA_ADDR" -p 7000 -m pingpong -s 64 -i 2000
	./tools/afrdma-perf client -t "$t" -a "$AFRDMA_ADDR" -p 7000 -m stream -s 64K -n 256M
	kill %1
	wait 2>/dev/null || true
done
# A closed socket still delivering its data holds the module a while.
unload_afrdma 30
echo "== done: module unloaded"
