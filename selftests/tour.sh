#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The operator's tour of Documentation/operations.rst, step by step: RDMA
# devices, sysctls, `afrdma ss` with an RDMA connection and two fallen-back
# ones, `afrdma stats` (and -j), and the fallback switched off.  Each step
# prints its command and output (as TAP comments: the documentation shows
# them) and checks what the documentation says about it.  Prints TAP.
# Needs the module loaded.
set -u
cd "$(dirname "$0")/.." || exit 1
. selftests/lib.sh
PATH=$PWD/tools:$PATH

a=${AFRDMA_ADDR:-10.99.0.1}
pids=()
saved_ka=$(sysctl -n net.afrdma.keepalive_time)
saved_fb=$(sysctl -n net.afrdma.fallback)

# step NAME PATTERN COMMAND: runs COMMAND (a shell line), shows it, and
# passes if its output matches the extended regex PATTERN; "! PATTERN": if
# it fails and its output matches.  The output stays in $last.
step()
{
	local name=$1 pat=$2 rc
	shift 2
	echo "# \$ $*"
	last=$(sh -c "$*" 2>&1)
	rc=$?
	[ -n "$last" ] && sed 's/^/# /' <<< "$last"
	if [ "${pat:0:2}" = "! " ] && [ $rc = 0 ]; then
		tap_result fail "$name"
	elif [ "${pat:0:2}" != "! " ] && [ $rc != 0 ]; then
		tap_result fail "$name"
	else
		expect "$name" "${pat#! }"
	fi
}

# expect NAME PATTERN: the last step's output matches PATTERN.
expect()
{
	if grep -Eq -- "$2" <<< "$last"; then
		tap_result ok "$1"
	else
		tap_result fail "$1"
	fi
}

# wait_for N COMMAND: waits up to 30 s for COMMAND to print N lines.
wait_for()
{
	local n=$1

	shift
	for _ in $(seq 150); do
		[ "$("$@" | wc -l)" -ge "$n" ] && return 0
		sleep 0.2
	done
	echo "# timed out waiting for $n lines from $*"
	return 1
}

estab()
{
	afrdma ss | grep '^ESTAB'
}

listening()
{
	ss -Hltn "( sport = :7000 or sport = :7001 )"
}

cleanup()
{
	[ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null
	wait 2>/dev/null
	sysctl -q -w "net.afrdma.keepalive_time=$saved_ka" "net.afrdma.fallback=$saved_fb"
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..11"
step devices "^rxe0 +1 +4: ACTIVE +Ethernet +va" afrdma devices
step sysctl_list "^net.afrdma.keepalive_time = $saved_ka" sysctl net.afrdma
step sysctl_set "= 600" sysctl -w net.afrdma.keepalive_time=600
step sysctl_range "! Invalid argument" sysctl -w net.afrdma.rx_slots=5000

# An afrdma server (it also takes plain TCP clients) and a plain TCP one;
# three clients hold a connection each: afrdma to afrdma, TCP to afrdma,
# afrdma to TCP.
for cmd in "server -a $a -p 7000" "server -t tcp -a $a -p 7001"; do
	echo "# \$ afrdma-perf $cmd &"
	# shellcheck disable=SC2086  # the options are words
	afrdma-perf $cmd > /dev/null 2>&1 &
	pids+=($!)
done
wait_for 2 listening
for cmd in "-p 7000" "-t tcp -p 7000" "-p 7001"; do
	echo "# \$ afrdma-perf client -a $a $cmd -m hold -i 1 &"
	# shellcheck disable=SC2086
	afrdma-perf client -a "$a" $cmd -m hold -i 1 > /dev/null 2>&1 &
	pids+=($!)
done
wait_for 4 estab

step ss_rdma "ESTAB .* rdma\s*$" "afrdma ss"
expect ss_qp "qp:[0-9]+ dev:rxe0"
expect ss_rejected "fallback:rejected"
expect ss_peer_tcp "fallback:peer-tcp"
step stats "^FallbackRejected +[1-9]" \
	"afrdma stats | grep -E 'Opens|Fallback(Active|Passive|Rejected|PeerTcp)|CurrConn'"
step stats_json '"FallbackPeerTcp":[1-9]' "afrdma stats -j"
step fallback_off "! (refused|reset)" \
	"sysctl -w net.afrdma.fallback=0 && afrdma-perf client -a $a -p 7001 -m pingpong -i 1"
tap_totals
[ "$fail" = 0 ]
