# SPDX-License-Identifier: GPL-2.0
#
# Shared by the shell selftests (and tools/testing/bench-guest.sh): TAP
# result lines with a "# Totals" line for selftests/run.sh, a one-shot
# checksummed afrdma-perf stream, and the module's unload.  Sourced from
# the repository root.

pass=0 fail=0 skip=0 xfail=0 n=0

# tap_result ok|skip|xfail|fail NAME [REASON]
# xfail: a known gap, named by REASON (TAP's TODO), that the test found
# again; selftests/run.sh counts it as skipped, never as passed.
tap_result()
{
	n=$((n + 1))
	case $1 in
	ok)    echo "ok $n $2"; pass=$((pass + 1)) ;;
	skip)  echo "ok $n $2 # SKIP $3"; skip=$((skip + 1)) ;;
	xfail) echo "not ok $n $2 # TODO $3"; xfail=$((xfail + 1)) ;;
	*)     echo "not ok $n $2"; fail=$((fail + 1)) ;;
	esac
}

tap_totals()
{
	echo "# Totals: pass:$pass fail:$fail xfail:$xfail xpass:0 skip:$skip error:0"
}

# test_mark start|end NAME: where a test begins and ends, for the failure
# digest of "make check" (tools/testing/digest.py): on the console, as a
# line vm-run's stream hides and its console.log keeps (it names the test
# a hung guest was running), and in the kernel log, to cut out the kernel
# lines logged while the test ran.  Outside a guest /dev/kmsg may not be
# writable; that is no error.
test_mark()
{
	echo "AFRDMA-VM-TEST=$1 $2"
	echo "afrdma-test: $1 $2" 2>/dev/null > /dev/kmsg
	return 0
}

# scaled SECONDS: a time bound for this kernel.  make check-debug sets
# AFRDMA_TIME_SCALE (KASAN, lockdep and kmemleak make everything several
# times slower); bounds are for a slow guest, never targets.
scaled()
{
	echo $(($1 * ${AFRDMA_TIME_SCALE:-1}))
}

# perf_stream ADDR BYTES: one server connection, one checksummed stream;
# sets $out (both sides' output) and $rc (0 only if both ends succeeded
# and the checksums matched).
perf_stream()
{
	local addr=$1 bytes=$2 log port= srv src

	log=$(mktemp)
	./tools/afrdma-perf server -1 -a "$addr" -p 0 > "$log" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	out=$(timeout 600 ./tools/afrdma-perf client -a "$addr" -p "${port:-1}" \
	      -m stream -s 64K -n "$bytes" 2>&1)
	rc=$?
	wait $srv
	src=$?
	out+=$'\n'$(sed 's/^/server: /' "$log")
	rm -f "$log"
	[ $rc = 0 ] && [ $src = 0 ] && [[ $out == *"checksums match"* ]] || rc=1
}

# Proof that traffic crossed RDMA and not TCP: the packets rxe0 has sent
# (with one device, both ends of a connection count) and the RC QPs there
# are.  Needs rxe0, as vm-run sets it up.
rxe_sent_pkts()
{
	cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts 2>/dev/null || echo 0
}

rc_qps()
{
	rdma resource show qp 2>/dev/null | grep -c 'type RC'
}

# unload_afrdma SECONDS: rmmod afrdma, tried once a second for up to
# SECONDS while the last connections go down (a close with data the peer
# has not taken lives on as an orphan, 10 s once the peer takes none);
# fails if the module is still loaded.
unload_afrdma()
{
	for _ in $(seq "$1"); do
		rmmod afrdma 2>/dev/null && return 0
		sleep 1
	done
	[ ! -d /sys/module/afrdma ]
}

# Sockets in /proc/net/afrdma, header aside.
afrdma_socks()
{
	echo $(($(wc -l < /proc/net/afrdma) - 1))
}

# wait_drained SECONDS: waits up to SECONDS for every afrdma socket and
# RC QP to go (orphans whose peer takes nothing live 10 s); sets $socks
# and $qps to what is left.
wait_drained()
{
	local t=$((SECONDS + $1))

	while :; do
		socks=$(afrdma_socks) qps=$(rc_qps)
		[ "$socks" = 0 ] && [ "$qps" = 0 ] && return 0
		[ $SECONDS -ge $t ] && return 1
		sleep 1
	done
}

# qp_watch_start; ...; qp_watch_stop: sets $qp_max to the most RC QPs seen
# in between, sampled every 0.2 s.
qp_watch_start()
{
	qp_file=$(mktemp)
	echo 0 > "$qp_file"
	(
		max=0
		while :; do
			c=$(rc_qps)
			[ "$c" -gt "$max" ] && max=$c && echo "$max" > "$qp_file"
			sleep 0.2
		done
	) &
	qp_pid=$!
}

qp_watch_stop()
{
	kill "$qp_pid" 2>/dev/null
	wait "$qp_pid" 2>/dev/null
	qp_max=$(cat "$qp_file")
	rm -f "$qp_file"
}

# crossed_rdma PKTS_BEFORE MIN_PKTS MIN_QPS: after qp_watch_stop, whether
# rxe0 sent at least MIN_PKTS packets since PKTS_BEFORE and at least MIN_QPS
# RC QPs were seen.  Says what it saw.
crossed_rdma()
{
	local sent=$(($(rxe_sent_pkts) - $1))

	echo "# rxe0 sent $sent packets (need $2), up to $qp_max RC QPs (need $3)"
	[ "$sent" -ge "$2" ] && [ "$qp_max" -ge "$3" ]
}

# wait_listen ADDR PORT: waits up to 20 s until a connection through the
# shim to ADDR:PORT succeeds.
wait_listen()
{
	./tools/afrdma-run bash -c 'for _ in $(seq 200); do
		(exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && exit 0
		sleep 0.1
	done; exit 1' _ "$1" "$2"
}

# wait_afrdma_listen ADDR PORT SECONDS: waits up to SECONDS for an afrdma
# listener on ADDR:PORT in /proc/net/afrdma, without connecting to it (a
# server that takes one client would take the probe).
wait_afrdma_listen()
{
	local t=$((SECONDS + $3))

	until awk -v a="$1:$2" '$1 == "LISTEN" && $2 == a { f = 1 } END { exit !f }' \
		/proc/net/afrdma; do
		[ $SECONDS -ge $t ] && return 1
		sleep 0.1
	done
}

# need PROGRAM...: true if all are installed; else records a skip for the
# test named by $need_test, with the reason.
need()
{
	local p

	for p in "$@"; do
		if ! command -v "$p" > /dev/null; then
			tap_result skip "$need_test" "$p is not installed"
			return 1
		fi
	done
}

# Recreates the guest's rxe0 on its veth end va (after a test deleted it)
# and waits, scaled, for its port to come up.
add_rxe0()
{
	rdma link add rxe0 type rxe netdev va
	for _ in $(seq "$(scaled 100)"); do
		grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && break
		sleep 0.1
	done
}
