#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The operator's side: net.afrdma.* ranges, sysctls and counters per
# network namespace, and `afrdma stats` (text and JSON) agreeing with
# /proc/net/afrdma_stat.  Prints TAP.  Needs the module loaded.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh

ns=afrdma-ops
check()
{
	local name=$1
	shift
	if "$@"; then
		tap_result ok "$name"
	else
		tap_result fail "$name"
	fi
}

# A write outside the range fails and leaves the value alone.
out_of_range()
{
	local name=$1 bad=$2 before
	before=$(sysctl -n "net.afrdma.$name") || return 1
	! sysctl -q -w "net.afrdma.$name=$bad" 2>/dev/null &&
		[ "$(sysctl -n "net.afrdma.$name")" = "$before" ]
}

stat_of()
{
	awk -v k="$1" '$1 == k { print $2 }' "${2:-/proc/net/afrdma_stat}"
}

stats_json_matches()
{
	local json
	json=$(./tools/afrdma stats -j) || return 1
	python3 - "$json" <<-'EOF'
	import json, sys
	stats = json.loads(sys.argv[1])
	proc = dict(l.split() for l in open("/proc/net/afrdma_stat"))
	need = {"ActiveOpens", "PassiveOpens", "FallbackActive", "FallbackPassive",
	        "FallbackNoDevice", "FallbackTimeout", "FallbackPeerTcp", "Resets"}
	assert need <= stats.keys(), need - stats.keys()
	# Counters only grow: the JSON was read first.
	assert all(int(proc[k]) >= v for k, v in stats.items()), (stats, proc)
	EOF
}

stats_text_matches()
{
	local t
	t=$(./tools/afrdma stats | awk '$1 == "PassiveOpens" { print $2 }')
	[ -n "$t" ] && [ "$t" = "$(stat_of PassiveOpens)" ]
}

# One RDMA connection carrying 1 MiB: one active and one passive open, no
# fallback, at least 1 MiB sent and received in SENDs of at most 16 KiB.
rdma_opens_counted()
{
	local a p f bs br ds
	a=$(stat_of ActiveOpens) p=$(stat_of PassiveOpens) f=$(stat_of FallbackActive)
	bs=$(stat_of BytesSent) br=$(stat_of BytesReceived) ds=$(stat_of DataSends)
	perf_stream "${AFRDMA_ADDR:-10.99.0.1}" 1M
	[ "$rc" = 0 ] || { echo "$out" | sed 's/^/# /'; return 1; }
	[ "$(stat_of ActiveOpens)" -gt "$a" ] && [ "$(stat_of PassiveOpens)" -gt "$p" ] &&
		[ "$(stat_of FallbackActive)" = "$f" ] &&
		[ "$(stat_of BytesSent)" -ge $((bs + 1048576)) ] &&
		[ "$(stat_of BytesReceived)" -ge $((br + 1048576)) ] &&
		[ "$(stat_of DataSends)" -ge $((ds + 64)) ]
}

# `afrdma ss -l` lists a listener (with its port), plain `afrdma ss` leaves
# it out, as ss does.
ss_lists_listener()
{
	local pid port rc=1 fifo
	fifo=$(mktemp -u) && mkfifo "$fifo" || return 1
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 257)
s.bind((sys.argv[1], 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(60)' "${AFRDMA_ADDR:-10.99.0.1}" > "$fifo" &
	pid=$!
	read -r -t 30 port < "$fifo"
	if [ -n "$port" ]; then
		./tools/afrdma ss -l | sed 's/^/# /'
		./tools/afrdma ss -l | grep -q "^LISTEN .*:$port " &&
			! ./tools/afrdma ss | grep -q ":$port " && rc=0
	fi
	kill "$pid"
	wait "$pid" 2>/dev/null
	rm -f "$fifo"
	return $rc
}

# A new namespace starts from the defaults and from zero, whatever this one did.
netns_separate()
{
	local fb rc=0
	ip netns add "$ns" || return 1
	fb=$(sysctl -n net.afrdma.fallback)
	sysctl -q -w net.afrdma.fallback=0 &&
	[ "$(ip netns exec "$ns" sysctl -n net.afrdma.fallback)" = 1 ] &&
	ip netns exec "$ns" sysctl -q -w net.afrdma.rx_slots=8 &&
	[ "$(sysctl -n net.afrdma.rx_slots)" = 32 ] &&
	[ "$(ip netns exec "$ns" awk '{ s += $2 } END { print s }' /proc/net/afrdma_stat)" = 0 ] ||
		rc=1
	sysctl -q -w "net.afrdma.fallback=$fb"
	ip netns del "$ns"
	return $rc
}

# The settings that size memory, in a network namespace of a user namespace
# that an unprivileged user made: they start no higher than here, a write
# above this namespace's value fails and leaves the value alone, a write at
# or below it works.  Here, raising still works.
limited="rx_slots tx_slots initial_slots slot_size max_connections max_orphans inline_threshold
	max_half_open half_open_per_peer half_open_timeout_ms"

userns_sh()
{
	setpriv --reuid=65534 --regid=65534 --clear-groups -- unshare -Urn sh -c "$@"
}

userns_limits()
{
	local name v lower mc rc=0

	if ! userns_sh true 2>/dev/null; then
		tap_result skip userns_limits "uid 65534 may not create user namespaces here"
		return
	fi
	mc=$(sysctl -n net.afrdma.max_connections)
	if ! sysctl -q -w net.afrdma.max_connections=$((mc - 1)) ||
	   [ "$(userns_sh 'cat /proc/sys/net/afrdma/max_connections')" != $((mc - 1)) ]; then
		echo "# a user namespace's netns starts above the initial one's max_connections"
		rc=1
	fi
	sysctl -q -w "net.afrdma.max_connections=$mc"
	for name in $limited; do
		v=$(sysctl -n "net.afrdma.$name")
		# initial_slots and inline_threshold are at their minimum already.
		lower=$((v / 2))
		case $name in initial_slots|inline_threshold) lower=$v ;; esac
		# shellcheck disable=SC2016 # expanded by the inner shell
		if ! userns_sh 'f=/proc/sys/net/afrdma/$0
			! echo $(($1 + 1)) 2>/dev/null > $f && [ "$(cat $f)" -le $1 ] &&
			echo $1 > $f && echo $2 > $f && [ "$(cat $f)" = $2 ]' \
			"$name" "$v" "$lower"; then
			echo "# net.afrdma.$name: a user namespace raised it past $v, or could not lower it"
			rc=1
		fi
		if ! sysctl -q -w "net.afrdma.$name=$((v + 1))" ||
		   [ "$(sysctl -n "net.afrdma.$name")" != $((v + 1)) ]; then
			echo "# net.afrdma.$name: the initial namespace could not raise it"
			rc=1
		fi
		sysctl -q -w "net.afrdma.$name=$v"
	done
	if [ $rc = 0 ]; then
		tap_result ok userns_limits
	else
		tap_result fail userns_limits
	fi
}

# net.afrdma.keepalive_*: read by new sockets only (a live one keeps its
# values), overridden per socket by TCP_KEEP*, and carried to the TCP socket
# of a fallen-back connection on either side, rather than TCP's own
# net.ipv4.tcp_keepalive_* defaults.
keepalive_sysctls()
{
	python3 - "${AFRDMA_ADDR:-10.99.0.1}" <<-'EOF'
	import socket, sys
	sys.path.insert(0, "selftests")
	from afrdma_tap import param
	addr, AF_RDMA, RDMA = sys.argv[1], param("family"), param("ipproto")
	SOL_RDMA, AFRDMA_TRANSPORT, TCP = 299, 2, 2
	OPTS = (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT)
	OURS = ["net/afrdma/keepalive_" + n for n in ("time", "intvl", "probes")]
	TCPS = ["net/ipv4/tcp_keepalive_" + n for n in ("time", "intvl", "probes")]

	def ka(s):
	    return tuple(s.getsockopt(socket.SOL_TCP, o) for o in OPTS)

	def sysctls(names, vals=None):
	    old = []
	    for i, n in enumerate(names):
	        with open("/proc/sys/" + n) as f:
	            old.append(int(f.read()))
	        if vals:
	            with open("/proc/sys/" + n, "w") as f:
	                f.write(f"{vals[i]}\n")
	    return tuple(old)

	def fresh():
	    return [socket.socket(AF_RDMA, socket.SOCK_STREAM, 0),
	            socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)]

	def fallen_back():
	    """Both sides of a fallback: to a plain TCP server, and a plain TCP
	    client accepted by an afrdma listener."""
	    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
	    srv.bind((addr, 0))
	    srv.listen()
	    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
	    c.connect(srv.getsockname())
	    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
	    lsn.bind((addr, 0))
	    lsn.listen()
	    p = socket.create_connection(lsn.getsockname())
	    a, _ = lsn.accept()
	    got = [ka(x) for x in (c, a)]
	    assert [x.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) for x in (c, a)] == [TCP] * 2
	    for x in (c, a, p, srv, lsn):
	        x.close()
	    return got

	old, tcp = sysctls(OURS), sysctls(TCPS)
	assert old == (7200, 75, 9), f"defaults {old}"
	live = fresh()
	try:
	    sysctls(OURS, (600, 20, 4))
	    new = fresh()
	    assert [ka(s) for s in new] == [(600, 20, 4)] * 2, [ka(s) for s in new]
	    assert [ka(s) for s in live] == [old] * 2, [ka(s) for s in live]
	    new[0].setsockopt(socket.SOL_TCP, socket.TCP_KEEPIDLE, 30)
	    assert ka(new[0]) == (30, 20, 4) and ka(new[1]) == (600, 20, 4)
	    assert fallen_back() == [(600, 20, 4)] * 2, fallen_back()
	    # Ours at their defaults, TCP's not: the fallback keeps ours.
	    sysctls(OURS, old)
	    sysctls(TCPS, (1000, 30, 5))
	    assert fallen_back() == [old] * 2, fallen_back()
	finally:
	    sysctls(OURS, old)
	    sysctls(TCPS, tcp)
	EOF
}

echo "TAP version 13"
echo "1..15"
check "fallback_range" out_of_range fallback 2
check "fallback_timeout_range" out_of_range fallback_timeout_ms 50
check "slot_size_range" out_of_range slot_size 100
check "max_connections_range" out_of_range max_connections -1
check "keepalive_time_range" out_of_range keepalive_time 0
check "keepalive_intvl_range" out_of_range keepalive_intvl 32768
check "keepalive_probes_range" out_of_range keepalive_probes 128
check "inline_threshold_range" out_of_range inline_threshold 1025
check "keepalive_sysctls" keepalive_sysctls
check "stats_text" stats_text_matches
check "stats_json" stats_json_matches
check "stats_count_rdma_traffic" rdma_opens_counted
check "netns_separate" netns_separate
check "ss_lists_listener" ss_lists_listener
userns_limits
tap_totals
[ $fail = 0 ]
