#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sockperf, a program that knows nothing of afrdma, through tools/afrdma-run
# on both ends: TCP ping-pong and throughput for 3 s each.  rxe0's packet
# counter and the RC QPs present prove the traffic crossed RDMA.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh
run=tools/afrdma-run
addr=${AFRDMA_ADDR:-10.99.0.1}
port=11111

echo "TAP version 13"
echo "1..2"

need_test=sockperf_ping-pong
if ! need sockperf; then
	need_test=sockperf_throughput
	need sockperf
	tap_totals
	exit 0
fi

slog=$(mktemp) clog=$(mktemp)
$run sockperf server --tcp -i "$addr" -p $port > "$slog" 2>&1 &
srv=$!
if ! wait_listen "$addr" $port; then
	sed 's/^/# server: /' "$slog"
	tap_result fail sockperf_ping-pong
	tap_result fail sockperf_throughput
	kill $srv
	tap_totals
	exit 1
fi

# ping-pong MODE: ping-pong or throughput, 3 s of 64 B or 16 KiB messages.
sockperf_run()
{
	local mode=$1 size=$2 before rc msgs min

	before=$(rxe_sent_pkts)
	qp_watch_start
	timeout 120 $run sockperf "$mode" --tcp -i "$addr" -p $port -t 3 -m "$size" > "$clog" 2>&1
	rc=$?
	qp_watch_stop
	grep -E 'Summary|RunTime|messages sent' "$clog" | sed 's/^/# /'
	if [ "$mode" = ping-pong ]; then
		# Each reply received is a message each way, at least a packet each.
		msgs=$(sed -n 's/.*ReceivedMessages=\([0-9]*\).*/\1/p' "$clog" | tail -n 1)
		min=$((2 * ${msgs:-0}))
	else
		# At least half of what was sent arrived before the end, in
		# packets of at most 4096 bytes (RoCE's largest MTU).
		msgs=$(sed -n 's/.*Total of \([0-9]*\) messages sent.*/\1/p' "$clog" | tail -n 1)
		min=$((${msgs:-0} * size / 2 / 4096))
	fi
	if [ $rc = 0 ] && [ "${msgs:-0}" -gt 0 ] && crossed_rdma "$before" $min 2; then
		tap_result ok "sockperf_$mode"
	else
		sed 's/^/# client: /' "$clog" | tail -20
		tap_result fail "sockperf_$mode"
	fi
}

sockperf_run ping-pong 64
sockperf_run throughput 16384
kill $srv
wait $srv 2>/dev/null
rm -f "$slog" "$clog"
tap_totals
[ $fail = 0 ]
