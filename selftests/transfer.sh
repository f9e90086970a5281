#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 1 GiB over AF_RDMA with afrdma-perf: the sender's checksum must match the
# one the receiver computed.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh
size=${AFRDMA_TRANSFER:-1G}

echo "TAP version 13"
echo "1..1"
perf_stream "${AFRDMA_ADDR:-10.99.0.1}" "$size"
echo "$out" | sed 's/^/# /'
[ $rc = 0 ] && tap_result ok "transfer_$size" || tap_result fail "transfer_$size"
tap_totals
[ $fail = 0 ]
