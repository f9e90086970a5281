#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Programs that know nothing of afrdma, run through tools/afrdma-run: a
# Python echo with plain socket.socket(), and iperf3 client against server
# for 5 s.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
run=tools/afrdma-run
addr=${AFRDMA_ADDR:-10.99.0.1}
proto=$(cat /sys/module/afrdma/parameters/ipproto)
. selftests/lib.sh

# Prints the protocol of the sockets a plain Python echo used.
py_echo()
{
	python3 - "$addr" <<'PY'
import socket, sys, threading
addr = sys.argv[1]
srv = socket.socket()
srv.bind((addr, 0))
srv.listen(1)
def serve():
    c, _ = srv.accept()
    c.sendall(c.recv(100))
    c.close()
t = threading.Thread(target=serve)
t.start()
c = socket.create_connection((addr, srv.getsockname()[1]))
c.sendall(b"through the shim")
assert c.recv(100) == b"through the shim"
print(c.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL))
t.join()
PY
}

echo "TAP version 13"
echo "1..3"

got=$($run bash -c "$(declare -f py_echo); addr=$addr; py_echo" 2>&1)
echo "$got" | sed 's/^/# /'
[ "$got" = "$proto" ] && tap_result ok preload_python_echo || tap_result fail preload_python_echo

got=$(AFRDMA_PRELOAD=0 $run bash -c "$(declare -f py_echo); addr=$addr; py_echo" 2>&1)
[ "$got" = 6 ] && tap_result ok preload_off_is_tcp || tap_result fail preload_off_is_tcp

if ! command -v iperf3 >/dev/null; then
	tap_result skip iperf3 "iperf3 is not installed"
else
	slog=$(mktemp) clog=$(mktemp)
	# Bounded: a server that never sees its client end must fail, not hang.
	timeout 90 $run iperf3 -s -1 -J -B "$addr" -p 5201 > "$slog" 2>&1 &
	srv=$!
	# Its client must not come first: with no listener it is refused.
	wait_afrdma_listen "$addr" 5201 "$(scaled 30)" ||
		echo "# iperf3 -s not listening on $addr:5201 after $(scaled 30) s"
	before=$(rxe_sent_pkts)
	qp_watch_start
	timeout 60 $run iperf3 -J -c "$addr" -p 5201 -t 5 > "$clog" 2>&1
	crc=$?
	qp_watch_stop
	wait $srv
	src=$?
	bytes()
	{
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(int(d["end"]["sum_received"]["bytes"]))' "$1" 2>/dev/null || echo 0
	}
	cb=$(bytes "$clog") sb=$(bytes "$slog")
	echo "# iperf3 over afrdma: client saw $cb bytes received, server $sb"
	# The bytes in packets of at most 4096 bytes; its two connections
	# (control and data) have a QP at both ends.
	if [ $crc = 0 ] && [ $src = 0 ] && [ "$cb" -gt 0 ] && [ "$sb" -gt 0 ] &&
	   crossed_rdma "$before" $((sb / 4096)) 4; then
		tap_result ok iperf3_5s
	else
		sed 's/^/# client: /' "$clog" | tail -20
		sed 's/^/# server: /' "$slog" | tail -20
		tap_result fail iperf3_5s
	fi
	rm -f "$slog" "$clog"
fi
tap_totals
[ $fail = 0 ]
