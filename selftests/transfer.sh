#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 1 GiB over AF_RDMA with afrdma-perf: the sender's checksum must match the
# one the receiver computed.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
perf=tools/afrdma-perf
addr=${AFRDMA_ADDR:-10.99.0.1}
size=${AFRDMA_TRANSFER:-1G}

echo "TAP version 13"
echo "1..1"
log=$(mktemp)
$perf server -1 -a "$addr" -p 0 > "$log" 2>&1 &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$log")
	[ -n "$port" ] && break
	sleep 0.1
done
out=$($perf client -a "$addr" -p "${port:-0}" -m stream -s 64K -n "$size" 2>&1)
rc=$?
wait $srv
srv_rc=$?
echo "$out" | sed 's/^/# /'
sed 's/^/# server: /' "$log"
rm -f "$log"
if [ $rc = 0 ] && [ $srv_rc = 0 ] && [[ $out == *"checksums match"* ]]; then
	echo "ok 1 transfer_$size"
	echo "# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
else
	echo "not ok 1 transfer_$size"
	echo "# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0"
	exit 1
fi
