#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device removal and arrival: `rdma link delete rxe0` under a blocked recv
# resets the connection (ECONNRESET, no hang), an rxe device added
# afterwards carries new connections, removal under 16 busy streams
# ends every one of them with an error, promptly, leaving no QP behind,
# and removal under a blocked MSG_ZEROCOPY sender releases its pages.
# Removal under a listener with connections nobody accepted leaves no
# socket once it is closed, and the module unloads (it is then loaded
# again).  Needs the vm-run guest's rxe0 on va; run last, it replaces that
# device.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
addr=${AFRDMA_ADDR:-10.99.0.1}
ko=build/${AFRDMA_KREL:-}/net/afrdma/afrdma.ko
. selftests/lib.sh

add_rxe0()
{
	rdma link add rxe0 type rxe netdev va
	for _ in $(seq "$(scaled 100)"); do
		grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
		sleep 0.1
	done
}

# remove_under PID LOG: once the program PID says "connected" in LOG,
# deletes rxe0 under it and creates LOG.gone, then waits for the program
# to end.  Fails if the deletion failed.
remove_under()
{
	local pid=$1 log=$2 del

	for _ in $(seq "$(scaled 100)"); do
		grep -q connected "$log" && break
		sleep 0.1
	done
	timeout "$(scaled 30)" rdma link delete rxe0
	del=$?
	touch "$log.gone"
	timeout "$(scaled 30)" tail --pid="$pid" -f /dev/null
	wait "$pid"
	rm -f "$log.gone"
	return $del
}

# Sockets in /proc/net/afrdma, header aside.
afrdma_socks()
{
	echo $(($(wc -l < /proc/net/afrdma) - 1))
}

echo "TAP version 13"
echo "1..5"
if ! rdma link show rxe0/1 >/dev/null 2>&1; then
	echo "# no rxe0: not inside tools/testing/vm-run"
	tap_result fail device_removal
	tap_result fail device_added_later
	tap_result fail device_removal_under_load
	tap_result fail device_removal_zerocopy
	tap_result fail device_removal_listener
	tap_totals
	exit 1
fi

log=$(mktemp)
python3 - "$addr" > "$log" 2>&1 <<'PY' &
import socket, sys, time
addr = sys.argv[1]
p = int(open("/sys/module/afrdma/parameters/ipproto").read())
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
s.bind((addr, 0))
s.listen(1)
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
c.connect(s.getsockname())
a, _ = s.accept()
print("connected", flush=True)
try:
    a.recv(10)
    print("recv returned")
except ConnectionResetError:
    print("recv ECONNRESET")
try:
    c.send(b"y")
    print("send returned")
except (ConnectionResetError, BrokenPipeError) as e:
    print("send", type(e).__name__)
PY
remove_under $! "$log"
del=$?
sed 's/^/# /' "$log"
if [ $del = 0 ] && grep -q 'recv ECONNRESET' "$log" && grep -q '^send ' "$log"; then
	tap_result ok device_removal
else
	tap_result fail device_removal
fi
rm -f "$log"

# A device that arrives after the module loaded is used.
add_rxe0
perf_stream "$addr" 4M
echo "$out" | sed 's/^/# /'
if [ $rc = 0 ]; then
	tap_result ok device_added_later
else
	tap_result fail device_added_later
fi

# 16 streams far from done when rxe0 goes: every one must end with an
# error within the timeout, and no QP may stay behind.  The fallback is off
# for them: a connect that a slow kernel keeps past fallback_timeout_ms
# would go to TCP, which a device removal never ends.
under_load()
{
	local fb ok

	fb=$(cat /proc/sys/net/afrdma/fallback)
	echo 0 > /proc/sys/net/afrdma/fallback
	under_load_streams
	ok=$?
	echo "$fb" > /proc/sys/net/afrdma/fallback
	return $ok
}

under_load_streams()
{
	local slog clog srv cli port= qps i cli_rc

	slog=$(mktemp) clog=$(mktemp)
	./tools/afrdma-perf server -a "$addr" -p 0 > "$slog" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$slog")
		[ -n "$port" ] && break
		sleep 0.1
	done
	timeout "$(scaled 120)" ./tools/afrdma-perf client -a "$addr" -p "${port:-1}" -P 16 \
		-s 64K -n 64G > "$clog" 2>&1 &
	cli=$!
	for i in $(seq "$(scaled 300)"); do
		qps=$(rdma resource show qp 2>/dev/null | grep -c 'type RC')
		[ "$qps" -ge 32 ] && break
		sleep 0.1
	done
	echo "# $qps RC QPs before removal"
	sleep 1
	timeout "$(scaled 60)" rdma link delete rxe0 || return 1
	wait $cli
	cli_rc=$?
	kill $srv 2>/dev/null
	wait $srv 2>/dev/null
	sed 's/^/# client: /' "$clog" | tail -5
	rm -f "$slog" "$clog"
	echo "# client exit $cli_rc; RC QPs left: $(rdma resource show qp | grep -c 'type RC')"
	# 124 is timeout(1): a stream that hung.
	[ "$qps" -ge 32 ] && [ "$cli_rc" != 0 ] && [ "$cli_rc" != 124 ] &&
		[ "$(rdma resource show qp | grep -c 'type RC')" = 0 ]
}

if under_load; then
	tap_result ok device_removal_under_load
else
	tap_result fail device_removal_under_load
fi
add_rxe0

# Pages pinned with FOLL_PIN, system-wide, once the count holds still.
pins_held()
{
	local prev='' cur
	for _ in $(seq 30); do
		cur=$(awk '$1 == "nr_foll_pin_acquired" { a = $2 }
			$1 == "nr_foll_pin_released" { r = $2 }
			END { print a - r }' /proc/vmstat)
		[ "$cur" = "$prev" ] && break
		prev=$cur
		sleep 0.2
	done
	echo "$cur"
}

# A MSG_ZEROCOPY sender blocked on a peer that reads nothing, holding
# pinned pages, when rxe0 goes: the send fails and every pin is released.
zc_removal()
{
	local log py held during after del

	log=$(mktemp)
	held=$(pins_held)
	python3 - "$addr" > "$log" 2>&1 <<'PY' &
import socket, sys
addr = sys.argv[1]
p = int(open("/sys/module/afrdma/parameters/ipproto").read())
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
s.bind((addr, 0))
s.listen(1)
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
c.connect(s.getsockname())
a, _ = s.accept()
try:
    c.setsockopt(socket.SOL_SOCKET, 60, 1)      # SO_ZEROCOPY
except OSError:
    c.setsockopt(299, 4, 1)                     # SOL_RDMA, AFRDMA_ZEROCOPY
buf = bytearray(b"z" * (1 << 20))
print("connected", flush=True)
try:
    while True:
        c.send(buf, 0x4000000)                  # MSG_ZEROCOPY
except OSError as e:
    print("send", e.strerror)
PY
	py=$!
	for _ in $(seq "$(scaled 100)"); do
		grep -q connected "$log" && break
		sleep 0.1
	done
	sleep 1
	during=$(pins_held)
	timeout "$(scaled 30)" rdma link delete rxe0
	del=$?
	timeout "$(scaled 30)" tail --pid=$py -f /dev/null
	wait $py
	for _ in $(seq 50); do
		after=$(pins_held)
		[ "$after" -le "$held" ] && break
		sleep 0.2
	done
	sed 's/^/# /' "$log"
	rm -f "$log"
	echo "# pinned pages: $held before, $during while blocked, $after after"
	[ $del = 0 ] && [ "$during" -gt "$held" ] && [ "$after" -le "$held" ]
}

if zc_removal; then
	tap_result ok device_removal_zerocopy
else
	tap_result fail device_removal_zerocopy
fi
add_rxe0

# A listener on rxe0's address with three connections nobody accepted when
# rxe0 goes, then closed: the connections go with it, nothing keeps the
# module.
listener_removal()
{
	local log py socks=

	log=$(mktemp)
	python3 - "$addr" "$log.gone" "$(scaled 30)" > "$log" 2>&1 <<'PY' &
import os, socket, sys, time
addr, gone, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = int(open("/sys/module/afrdma/parameters/ipproto").read())
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, p)
s.bind((addr, 0))
s.listen(8)
cs = [socket.socket(socket.AF_INET, socket.SOCK_STREAM, p) for _ in range(3)]
for c in cs:
    c.connect(s.getsockname())
# All three in the accept queue: the listener's rx_queue in the listing.
port = ":%d" % s.getsockname()[1]
end = time.time() + limit
while time.time() < end:
    rows = [l.split() for l in open("/proc/net/afrdma")][1:]
    if any(r[0] == "LISTEN" and r[1].endswith(port) and r[4] == "3"
           for r in rows):
        break
    time.sleep(0.1)
print("connected", flush=True)
while not os.path.exists(gone) and time.time() < end:
    time.sleep(0.1)
s.close()
for c in cs:
    c.close()
print("closed")
PY
	py=$!
	remove_under $py "$log" || { sed 's/^/# /' "$log"; rm -f "$log"; return 1; }
	sed 's/^/# /' "$log"
	rm -f "$log"
	for _ in $(seq "$(scaled 30)"); do
		socks=$(afrdma_socks)
		[ "$socks" = 0 ] && break
		sleep 1
	done
	echo "# afrdma sockets left: $socks"
	sed 's/^/#   /' /proc/net/afrdma
	[ "$socks" = 0 ] || return 1
	unload_afrdma "$(scaled 10)" || { echo "# rmmod afrdma failed"; return 1; }
	insmod "$ko"
}

if listener_removal; then
	tap_result ok device_removal_listener
else
	tap_result fail device_removal_listener
fi
add_rxe0
tap_totals
[ $fail = 0 ]
