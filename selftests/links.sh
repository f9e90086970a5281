#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Links (Documentation/links.rst, steps 3 and 4b), through the test
# interface `afrdma links test` until sockets use them.  With
# net.afrdma.links=0 nothing is created: no listener, no link, no QP, and
# the test interface refuses.  With 1, the listener is up on link_port; a
# link to the local address comes up on rxe0 (both ends on one device: an
# active and a passive link), shows in `afrdma links` and its QPs in
# `rdma resource`, carries HELLO and USE each way, registers a chunk for a
# test area and releases it.  Streams on it (4b): accepted by a test
# listener, their ids across 2^32; refused where none listens; one reset
# and one broken by a bad CURSOR, each alone; BUSY from a full queue, sent
# again until the queue has room; all closed by FIN, their areas and
# chunks released.  Then the link expires links_idle_s after its last
# user, goes with its device, and goes when the switch goes back to 0.
# Everything is at baseline after, and the module unloads (it is then
# loaded again).
# Needs the vm-run guest's rxe0 on va; it replaces that device.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
addr=${AFRDMA_ADDR:-10.99.0.1}
ko=build/${AFRDMA_KREL:-}/net/afrdma/afrdma.ko
port=$(cat /sys/module/afrdma/parameters/link_port 2>/dev/null || echo 18637)
tool=./tools/afrdma
. selftests/lib.sh

sysctl_set()
{
	echo "$2" > "/proc/sys/net/afrdma/$1"
}

# cm ids rdma_cm has on the link port (listeners and links)
port_ids()
{
	rdma resource show cm_id 2>/dev/null | grep -c -- "-port $port\b\|:$port\b"
}

links_json()
{
	"$tool" links -j 2>/dev/null
}

# link_field ROLE FIELD: FIELD of the (first) link of ROLE, or empty
link_field()
{
	links_json | python3 -c '
import json, sys
role, field = sys.argv[1], sys.argv[2]
for l in json.load(sys.stdin):
    if l["role"] == role:
        print(l[field])
        break
' "$1" "$2"
}

nlinks()
{
	links_json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'
}

# wait_until SECONDS CMD...: CMD true within SECONDS by the clock (each
# try runs the tool and python, slow in a TCG guest), polled every 0.1 s
wait_until()
{
	local end=$((SECONDS + $(scaled "$1")))

	shift
	while [ "$SECONDS" -lt "$end" ]; do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

both_up()
{
	[ "$(link_field active state)" = up ] && [ "$(link_field passive state)" = up ]
}

no_links()
{
	[ "$(nlinks)" = 0 ]
}

show()
{
	"$tool" links 2>&1 | sed 's/^/# /'
}

echo "TAP version 13"
echo "1..15"
names="links_off_creates_nothing links_on_listens link_up link_hello_use
link_chunk link_streams_accept link_streams_refused link_stream_reset
link_stream_protocol_error link_streams_busy link_streams_fin link_expiry
link_device_removal links_off_tears_down links_baseline_unload"
if ! rdma link show rxe0/1 >/dev/null 2>&1 || [ ! -x "$tool" ]; then
	echo "# no rxe0 or no tools/afrdma: not inside tools/testing/vm-run"
	for t in $names; do
		tap_result fail "$t"
	done
	tap_totals
	exit 1
fi

base_qps=$(rc_qps)
idle0=$(cat /proc/sys/net/afrdma/links_idle_s)
echo "# baseline: $base_qps RC QPs, links_idle_s $idle0, link_port $port"

# 1. Off (the default): nothing anywhere, and the test interface refuses.
off=$(cat /proc/sys/net/afrdma/links)
out=$("$tool" links test "$addr" 2>&1)
refused=$?
echo "# links=$off; links test: $out"
sleep 1
if [ "$off" = 0 ] && [ $refused != 0 ] && [[ $out == *"links is 0"* ]] &&
   no_links && [ "$(port_ids)" = 0 ] && [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok links_off_creates_nothing
else
	show
	tap_result fail links_off_creates_nothing
fi

# 2. On: a listener on the link port, and still no link.
sysctl_set links 1
ids=$(port_ids)
echo "# cm ids on port $port: $ids"
if [ "$(cat /proc/sys/net/afrdma/links)" = 1 ] && [ "$ids" -ge 1 ] && no_links &&
   [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok links_on_listens
else
	rdma resource show cm_id 2>&1 | sed 's/^/# /'
	tap_result fail links_on_listens
fi

# 3. A link to our own address: the active end and the passive end, up,
# their QPs in rdma resource.
"$tool" links test "$addr" users 1 pages 4 2>&1 | sed 's/^/# /'
wait_until 15 both_up
show
aq=$(link_field active qpn) pq=$(link_field passive qpn)
qps=$(rdma resource show qp 2>/dev/null)
echo "# QPs: active $aq, passive $pq; RC QPs now $(rc_qps)"
if both_up && [ "$(rc_qps)" = $((base_qps + 2)) ] &&
   grep -q "lqpn $aq .*type RC" <<< "$qps" && grep -q "lqpn $pq .*type RC" <<< "$qps" &&
   [ "$(link_field active peer_qpn)" = "$pq" ] && [ "$(link_field passive peer_qpn)" = "$aq" ] &&
   [ "$(link_field active device)" = rxe0 ]; then
	tap_result ok link_up
else
	echo "$qps" | sed 's/^/# /'
	tap_result fail link_up
fi

# 4. HELLO each way, then USE: the passive end knows of the active end's
# one user.
hello_use()
{
	[ "$(link_field active tx_msgs)" -ge 2 ] && [ "$(link_field passive rx_msgs)" -ge 2 ] &&
	[ "$(link_field passive tx_msgs)" -ge 1 ] && [ "$(link_field active rx_msgs)" -ge 1 ] &&
	[ "$(link_field passive peer_conns)" = 1 ] && [ "$(link_field active conns)" = 1 ] &&
	[ "$(link_field passive conns)" = 0 ]
}
if wait_until 5 hello_use; then
	tap_result ok link_hello_use
else
	show
	tap_result fail link_hello_use
fi

# 5. The test area took a chunk, registered (64 pages); 0 pages frees it.
chunk_held()
{
	[ "$(link_field active chunks)" = 1 ] && [ "$(link_field active area_pages)" = 4 ] &&
	[ "$(link_field active mem_bytes)" -ge 65536 ]
}
chunk_gone()
{
	[ "$(link_field active chunks)" = 0 ] && [ "$(link_field active area_pages)" = 0 ]
}
ok=0
wait_until 5 chunk_held && ok=1
show
"$tool" links test "$addr" pages 0
wait_until 5 chunk_gone || ok=0
if [ $ok = 1 ] && both_up; then
	tap_result ok link_chunk
else
	show
	tap_result fail link_chunk
fi

# streams ROLE EST SYN HALF_OPEN: the role's end has those streams
streams()
{
	local j

	j=$(links_json) || return 1
	python3 -c '
import json, sys
role, est, syn, half = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for l in json.load(sys.stdin):
    if l["role"] == role:
        sys.exit(not (l["streams_est"] == est and l["streams_syn"] == syn and
                      l["streams_half_open"] == half and l["streams"] == est + syn))
sys.exit(1)
' "$1" "$2" "$3" "$4" <<< "$j"
}

show_streams()
{
	links_json | python3 -c '
import json, sys
for l in json.load(sys.stdin):
    print("#", l["role"], {k: v for k, v in l.items() if k.startswith("streams") or k in ("state", "conns", "peer_conns", "chunks")})
'
}

# stream_case NAME SECONDS CHECK...: NAME passes if CHECK holds within
# SECONDS and the link is still up at both ends
stream_case()
{
	local name=$1 secs=$2

	shift 2
	if wait_until "$secs" "$@" && both_up; then
		tap_result ok "$name"
	else
		show_streams
		tap_result fail "$name"
	fi
}

# 6. Streams: a test listener on port 5000 takes 4, whose ids at the
# active end go across 2^32 (4294967294, 4294967295, 1, 2).  Each is a
# user of the link at its end, and its area took a chunk at each end.
"$tool" links test "$addr" listen 5000 backlog 8
"$tool" links test "$addr" connect 5000 streams 4 first 4294967294
accepted()
{
	streams active 4 0 0 && streams passive 4 0 4 &&
	[ "$(link_field active streams_opened)" = 4 ] &&
	[ "$(link_field passive conns)" = 4 ] && [ "$(link_field passive peer_conns)" = 5 ] &&
	[ "$(link_field active chunks)" = 1 ] && [ "$(link_field passive chunks)" = 1 ]
}
stream_case link_streams_accept 15 accepted

# 7. Where nothing listens (port 5001), CONNECT is refused: ECONNREFUSED,
# the streams go, the others stay.
"$tool" links test "$addr" connect 5001 streams 2
refused()
{
	[ "$(link_field active streams_refused)" = 2 ] && streams active 4 0 0 &&
	streams passive 4 0 4
}
stream_case link_streams_refused 10 refused

# 8. One stream (id 4294967295) reset: it goes at both ends, alone.
"$tool" links test "$addr" reset 4294967295
reset_one()
{
	[ "$(link_field active streams_resets)" = 1 ] &&
	[ "$(link_field passive streams_resets)" = 1 ] &&
	streams active 3 0 0 && streams passive 3 0 3
}
stream_case link_stream_reset 10 reset_one

# 9. A CURSOR past anything written breaks the protocol on stream 1: the
# passive end resets that stream alone; the link and the others go on.
"$tool" links test "$addr" cursor 1 value 4096
broken_one()
{
	[ "$(link_field passive streams_errors)" = 1 ] &&
	[ "$(link_field active streams_resets)" = 2 ] &&
	[ "$(link_field passive streams_resets)" = 2 ] &&
	streams active 2 0 0 && streams passive 2 0 2
}
stream_case link_stream_protocol_error 10 broken_one

# 10. A listener with a queue of 1 (port 5002): of 3 streams, 1 goes in
# and 2 are BUSY, sent again; once the queue has room they go in.
"$tool" links test "$addr" listen 5002 backlog 1
"$tool" links test "$addr" connect 5002 streams 3
waiting()
{
	[ "$(link_field active streams_busy)" -ge 2 ] && streams active 3 2 0 &&
	streams passive 3 0 3
}
ok=0
wait_until 10 waiting && ok=1
echo "# BUSY: $(link_field active streams_busy) answers"
"$tool" links test "$addr" listen 5002 backlog 8
busy_done()
{
	[ $ok = 1 ] && streams active 5 0 0 && streams passive 5 0 5
}
stream_case link_streams_busy 20 busy_done

# 11. FIN on every stream: the passive end answers each with its own, and
# all go at both ends, their areas and chunks with them.
"$tool" links test "$addr" fin 0
"$tool" links test "$addr" listen 5000 backlog 0
"$tool" links test "$addr" listen 5002 backlog 0
closed()
{
	streams active 0 0 0 && streams passive 0 0 0 &&
	[ "$(link_field active streams_fins)" = 5 ] &&
	[ "$(link_field passive streams_fins)" = 5 ] &&
	[ "$(link_field active chunks)" = 0 ] && [ "$(link_field passive chunks)" = 0 ] &&
	[ "$(link_field active conns)" = 1 ] && [ "$(link_field passive conns)" = 0 ]
}
stream_case link_streams_fin 10 closed

# 12. No users either end: both ends expire after links_idle_s, and their
# QPs go.  With a user left, it must not.
sysctl_set links_idle_s 2
sleep "$(scaled 3)"
held_on=0
both_up && held_on=1
echo "# with a user, after 3 s: $(link_field active state)"
"$tool" links test "$addr" users 0
t0=$(date +%s)
wait_until 20 no_links
t1=$(date +%s)
echo "# expired after $((t1 - t0)) s; RC QPs $(rc_qps)"
if [ $held_on = 1 ] && no_links && [ $((t1 - t0)) -ge 1 ] &&
   [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok link_expiry
else
	show
	tap_result fail link_expiry
fi
sysctl_set links_idle_s "$idle0"

# 13. Removing the device takes its links (idle, far from expiry) with it.
"$tool" links test "$addr" pages 1
one_chunk()
{
	both_up && [ "$(link_field active chunks)" = 1 ]
}
wait_until 15 one_chunk
up=0
one_chunk && up=1
timeout "$(scaled 30)" rdma link delete rxe0
del=$?
wait_until 10 no_links
echo "# up before: $up, rdma link delete: $del, RC QPs $(rc_qps)"
if [ $up = 1 ] && [ $del = 0 ] && no_links && [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok link_device_removal
else
	show
	tap_result fail link_device_removal
fi
add_rxe0

# 14. Switched off with a link up: the link and the listener go.
"$tool" links test "$addr" users 2
wait_until 15 both_up
up=0
both_up && up=1
sysctl_set links 0
echo "# up before: $up; after links=0: $(nlinks) links, $(port_ids) cm ids on the port"
if [ $up = 1 ] && no_links && [ "$(port_ids)" = 0 ] && [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok links_off_tears_down
else
	show
	tap_result fail links_off_tears_down
fi

# 15. Baseline, and the module unloads with links=1 and a link half set up.
ok=1
[ "$(rc_qps)" = "$base_qps" ] || ok=0
sysctl_set links 1
"$tool" links test "$addr" users 1
sleep 0.5
if ! unload_afrdma "$(scaled 10)"; then
	echo "# rmmod afrdma failed"
	ok=0
fi
if [ $ok = 1 ] && [ "$(port_ids)" = 0 ] && [ "$(rc_qps)" = "$base_qps" ]; then
	tap_result ok links_baseline_unload
else
	rdma resource show cm_id 2>&1 | sed 's/^/# /'
	tap_result fail links_baseline_unload
fi
[ -d /sys/module/afrdma ] || insmod "$ko"
tap_totals
[ $fail = 0 ]
