#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of tools/testing/demo.  The figures come from QEMU TCG and
# soft-RoCE: compare them with each other, not with real hardware.  One
# line per transport goes to $AFRDMA_OUTDIR/demo.tsv for the host's table:
# transport, carrier, 64 B one-way p50 (us), 64 KiB stream (Mbit/s), checksums.
set -eu
cd "$(dirname "$0")/../.."
. selftests/lib.sh
tsv=${AFRDMA_OUTDIR:-/tmp}/demo.tsv
: > "$tsv"
insmod "build/$AFRDMA_KREL/net/afrdma/afrdma.ko"
echo "== afrdma loaded on $AFRDMA_KREL: $(dmesg | grep -o 'AF_RDMA is .*' | tail -n 1)"
./tools/afrdma devices

for t in af_rdma ipproto_rdma tcp; do
	log=$(mktemp)
	./tools/afrdma-perf server -t "$t" -a "$AFRDMA_ADDR" -p 0 > "$log" 2>&1 &
	port=
	# Until it listens: a slow guest takes its time.
	for _ in $(seq 300); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$log"; echo "demo: the $t server did not start" >&2; exit 1; }
	echo "== $t"
	ping=$(./tools/afrdma-perf client -t "$t" -a "$AFRDMA_ADDR" -p "$port" -m pingpong \
	       -s 64 -i 2000)
	echo "$ping"
	stream=$(./tools/afrdma-perf client -t "$t" -a "$AFRDMA_ADDR" -p "$port" -m stream \
		 -s 64K -n 256M)
	echo "$stream"
	kill %1
	wait 2>/dev/null || true
	rm -f "$log"
	carrier=$(sed -n 's/^carried by //p' <<< "$stream" | head -n 1)
	p50=$(sed -n 's/.*one-way p50 \([0-9.]*\) us.*/\1/p' <<< "$ping")
	mbit=$(sed -n 's/.*, \([0-9.]*\) Mbit\/s.*/\1/p' <<< "$stream")
	sums=mismatch
	[[ $stream == *"checksums match"* ]] && sums=match
	printf '%s\t%s\t%s\t%s\t%s\n' "$t" "${carrier:-?}" "${p50:-?}" "${mbit:-?}" "$sums" >> "$tsv"
done
# A closed socket still delivering its data holds the module a while.
unload_afrdma 30
echo "== done: module unloaded"
