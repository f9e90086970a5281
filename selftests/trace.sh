#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tracepoints (net/afrdma/trace.h): with every afrdma event enabled in a
# tracefs instance of its own, an RDMA connect and accept, a MSG_ZEROCOPY
# transfer large enough for receive zero-copy, a sender held back by a
# receiver that does not read, a close with SO_LINGER 0, and a connect
# and an accept that go over TCP must each leave their events, with the
# fields they should have.  Needs the vm-run guest's rxe0.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
addr=${AFRDMA_ADDR:-10.99.0.1}
. selftests/lib.sh

checks="connect_rdma accept_rdma state_established ring_grow credit_stall
	rzc_offer rzc_read rzc_inval reset_local reset_peer fallback_connect
	accept_tcp"

all()
{
	local c
	for c in $checks; do
		tap_result "$1" "$c" "${2:-}"
	done
	tap_totals
}

echo "TAP version 13"
echo "1..$(echo $checks | wc -w)"

tr=/sys/kernel/tracing
[ -d $tr/events ] || mount -t tracefs nodev $tr 2>/dev/null
if [ ! -d $tr/events ]; then
	if ! grep -qw tracefs /proc/filesystems; then
		all skip "this kernel has no tracefs"
		exit 0
	fi
	echo "# tracefs is there but could not be mounted on $tr"
	all fail
	exit 1
fi
if [ ! -d $tr/events/afrdma ]; then
	echo "# no afrdma events in $tr/events: the module has no tracepoints"
	all fail
	exit 1
fi
if ! rdma link show rxe0/1 >/dev/null 2>&1; then
	echo "# no rxe0: not inside tools/testing/vm-run"
	all fail
	exit 1
fi

inst=$tr/instances/afrdma_selftest
[ -d $inst ] && rmdir $inst
mkdir $inst || { all fail; exit 1; }
echo 8192 > $inst/buffer_size_kb
echo 1 > $inst/events/afrdma/enable

log=$(mktemp)
timeout "$(scaled 300)" python3 - "$addr" "$inst/trace" "$(scaled 120)" > "$log" 2>&1 <<'PY'
import os, select, socket, struct, sys, threading, time

addr, trace, bound = sys.argv[1], sys.argv[2], int(sys.argv[3])
proto = int(open("/sys/module/afrdma/parameters/ipproto").read())
SOL_RDMA, AFRDMA_FALLBACK, AFRDMA_TRANSPORT, AFRDMA_ZEROCOPY = 299, 1, 2, 4
MSG_ZEROCOPY = 0x4000000


def afrdma(fallback):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    s.setsockopt(SOL_RDMA, AFRDMA_FALLBACK, fallback)
    return s


def traced(what):
    with open(trace) as f:
        return what in f.read()


def wait_traced(what):
    end = time.monotonic() + bound
    while not traced(what):
        if time.monotonic() > end:
            print("never traced:", what)
            return False
        time.sleep(0.1)
    return True


# An RDMA connection: no fallback, so nothing but RDMA can carry it.
lsn = afrdma(0)
lsn.bind((addr, 0))
lsn.listen(4)
cli = afrdma(0)
cli.connect(lsn.getsockname())
srv, _ = lsn.accept()
print("rdma port", lsn.getsockname()[1], "client port", cli.getsockname()[1])
assert cli.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) == 1

# 1 MiB with MSG_ZEROCOPY: offered as a region, READ by the receiver.
size = 1 << 20
data = bytes(i * 7 % 251 for i in range(size))
got = bytearray()


def reader():
    buf = bytearray(size)
    while len(got) < size:
        n = srv.recv_into(buf, size - len(got))
        if not n:
            break
        got.extend(buf[:n])


th = threading.Thread(target=reader)
th.start()
cli.setsockopt(SOL_RDMA, AFRDMA_ZEROCOPY, 1)
view = memoryview(data)
sent = 0
while sent < size:
    sent += cli.send(view[sent:], MSG_ZEROCOPY)
th.join()
print("zerocopy transfer", "intact" if bytes(got) == data else "CORRUPT")
cli.setsockopt(SOL_RDMA, AFRDMA_ZEROCOPY, 0)

# A receiver that does not read: the sender runs out of credits.
cli.setblocking(False)
chunk = bytes(64 * 1024)
stalled = False
end = time.monotonic() + bound
while time.monotonic() < end:
    try:
        cli.send(chunk)
    except BlockingIOError:
        if traced("afrdma_credit_stall"):
            stalled = True
            break
        select.select([], [cli], [], 0.1)
print("sender stalled" if stalled else "sender never stalled")

# close() with SO_LINGER 0: a reset here, a peer reset at the other end.
cli.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
cli.close()
wait_traced("cause=peer")
srv.close()
lsn.close()

# Over TCP: an afrdma connect to a plain TCP listener falls back, and a
# plain TCP client of an afrdma listener is accepted over TCP.
tl = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tl.bind((addr, 0))
tl.listen(1)
fb = afrdma(1)
fb.connect(tl.getsockname())
print("fallback port", tl.getsockname()[1],
      "transport", fb.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT))
fb.close()
tl.close()
al = afrdma(1)
al.bind((addr, 0))
al.listen(1)
tc = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tc.connect(al.getsockname())
ta, _ = al.accept()
print("tcp accept port", al.getsockname()[1])
ta.close()
tc.close()
al.close()
print("done")
PY
rc=$?
echo 0 > $inst/events/afrdma/enable
ev=$(mktemp)
grep afrdma_ $inst/trace > "$ev"
rmdir $inst
sed 's/^/# /' "$log"
echo "# python exit $rc; $(wc -l < "$ev") events:"
grep -v 'afrdma_credit_stall\|afrdma_ring_grow\|afrdma_rzc' "$ev" | sed 's/^ */# /' | head -40
grep -m 3 'afrdma_credit_stall\|afrdma_ring_grow\|afrdma_rzc' "$ev" | sed 's/^ */# /'

port=$(sed -n 's/^rdma port \([0-9]*\) .*/\1/p' "$log")
fbport=$(sed -n 's/^fallback port \([0-9]*\) .*/\1/p' "$log")
tport=$(sed -n 's/^tcp accept port \([0-9]*\)$/\1/p' "$log")

# expect NAME REGEX: one result, on whether some event matches
expect()
{
	if [ $rc = 0 ] && grep -q "$log" -e '^done$' && grep -Eq -e "$2" "$ev"; then
		tap_result ok "$1"
	else
		echo "# no event matches: $2"
		tap_result fail "$1"
	fi
}

p=${port:-none} a=${addr//./\\.}
expect connect_rdma "afrdma_connect: sk=[^ ]+ src=$a:[0-9]+ dst=$a:$p transport=rdma reason=none err=0"
expect accept_rdma "afrdma_accept: sk=[^ ]+ src=$a:$p dst=$a:[0-9]+ transport=rdma reason=none err=0"
expect state_established "afrdma_state: sk=[^ ]+ SYN_SENT -> ESTABLISHED transport=rdma"
expect ring_grow "afrdma_ring_grow: sk=[^ ]+ ring=rx slots=[0-9]+ -> [0-9]+ max=[0-9]+"
expect credit_stall "afrdma_credit_stall: sk=[^ ]+ credits=[01] inflight=[0-9]+ slots=[1-9]"
expect rzc_offer "afrdma_rzc_offer: sk=[^ ]+ len=[1-9][0-9]* rkey=0x[0-9a-f]+ addr=0x"
expect rzc_read "afrdma_rzc_read: sk=[^ ]+ len=[1-9][0-9]* rkey=0x[0-9a-f]+ addr=0x"
expect rzc_inval "afrdma_rzc_inval: sk=[^ ]+ len=[1-9][0-9]* rkey=0x[0-9a-f]+ addr=0x"
expect reset_local "afrdma_reset: sk=[^ ]+ cause=local err=104 state=ESTABLISHED"
expect reset_peer "afrdma_reset: sk=[^ ]+ cause=peer err=104 state=ESTABLISHED"
fb=${fbport:-none}
if grep -Eq "afrdma_fallback: sk=[^ ]+ dst=$a:$fb reason=[a-z_]+" "$ev" &&
   ! grep -Eq "afrdma_fallback: .* reason=none" "$ev"; then
	expect fallback_connect "afrdma_connect: sk=[^ ]+ src=$a:[0-9]+ dst=$a:$fb transport=tcp reason=[a-z_]+ err=0"
else
	echo "# no afrdma_fallback event to $addr:$fb with a reason"
	tap_result fail fallback_connect
fi
expect accept_tcp "afrdma_accept: sk=[^ ]+ src=$a:${tport:-none} dst=$a:[0-9]+ transport=tcp reason=peer_tcp err=0"
rm -f "$log" "$ev"
tap_totals
[ $fail = 0 ]
