#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make bench" (tools/testing/bench): runs every case of the
# benchmark in one boot, so that ratios between transports hold on a noisy
# host.  It only runs the tools and keeps what they printed; the host
# parses it (tools/testing/bench-report.py), so this script needs no JSON.
#
# Output in $AFRDMA_OUTDIR:
#   cases.tsv   one line a case: id tool transport test size streams rc
#               idle0 idle1 idle2 idle3 wall0 wall1 wall2 wall3 alive extra
#               (idle jiffies of all CPUs and $EPOCHREALTIME, taken before
#               the client starts, at LEAD, at LEAD+WIN, after it ended;
#               alive: the client still ran at the third snapshot;
#               extra: NAME=VALUE words: qps, and for the zero-copy
#               rows the deltas of /proc/net/afrdma_stat's zero-copy
#               counters over the case)
#   raw/ID.out  the client's stdout and stderr; raw/ID.srv the server's
#   env.txt     kernel, active_mtu, CPUs, mode
#   profile.txt perf reports of one afrdma stream and of 64 B ping-pong
#               (full mode only)
#
#   peers.tsv   the in-tree peers (SMC-R, RDS): one line a case they cannot
#               run and why ("skip TRANSPORT TEST REASON"), and what shows
#               SMC really ran SMC-R ("smc_fallbacks N")
#   raw/ID.qp   rdma resource show qp, for the peers' held connections
#
# BENCH_MODE=smoke (for make check) runs a few tiny cases, without the
# peers; anything else the whole matrix.  BENCH_ONLY=peers runs only
# afrdma-perf over afrdma and TCP and the peers (SMC-R and RDS, also in
# smoke mode then), for working on them.  Run from the repository root
# inside vm-run.
set -u
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

out=${AFRDMA_OUTDIR:-/tmp}
A=$AFRDMA_ADDR
mode=${BENCH_MODE:-full}
only=${BENCH_ONLY:-}
raw=$out/raw
rm -rf "$raw" "$out/cases.tsv" "$out/profile.txt" "$out/peers.tsv"
mkdir -p "$raw"
: > "$out/cases.tsv"
: > "$out/peers.tsv"
# The peers: not in make check's smoke pass (their modules and soft-RoCE
# on lo are not what it checks), unless asked for.
peers=
[ "$mode" != smoke ] || [ "$only" = peers ] && peers=1
RSPRELOAD=$(dpkg -L librdmacm1 2>/dev/null | grep '/librspreload\.so$' | head -n 1)

# Smoke (make check): each tool and path once, as short as they go;
# two streams, so the parallel path runs too.  rsockets only through
# afrdma-perf and rstream: its preload's known failures with iperf3 and
# sockperf say nothing about afrdma.
if [ "$mode" = smoke ]; then
	SIZES=(64 65536)
	STREAMS=(2)
	ZC_SIZES=(262144)	# above rx_zerocopy_min, so every path runs
	DUR=1 LEAD=0.3 WIN=0.4	# seconds: run, CPU window start and length
	LAT_ITERS=200
	MEM_CONNS=(4)
	SRV_WAIT=1		# seconds for a server to listen
	TOOL_TRS=(af_rdma tcp)
else
	SIZES=(64 4096 65536 1048576)
	STREAMS=(1 2 4 8)
	ZC_SIZES=(16384 65536 262144 1048576)
	DUR=4 LEAD=0.5 WIN=1	# exec makes each sleep about 0.5 s longer
	LAT_ITERS=2000
	MEM_CONNS=(1 64 256)
	SRV_WAIT=1.5
	TOOL_TRS=(af_rdma tcp rsockets)
fi
# A hung tool (rsockets' preload under iperf3 can) must not eat the guest's
# whole timeout.
TMO=$((DUR * 3 + 20))

port=7100
next_port()
{
	port=$((port + 1))
}

# Idle jiffies of all CPUs (idle + iowait), from the first line of
# /proc/stat, into IDLE.  Idle, not busy: on a tickless kernel idle time is
# measured, while busy ticks are sampled, and a guest the host starves of
# CPU loses busy ticks.  Busy is then CPUs x wall time - idle.  Builtins
# only, as exec is slow under TCG (and /dev/fd, which "< <()" needs, is
# missing in the guest).
IDLE=0
idle()
{
	local idle iowait

	read -r _ _ _ _ idle iowait _ < /proc/stat
	IDLE=$((idle + iowait))
}

# RDMA QPs on rxe0 now, into QPS: whether a case really used RDMA (the
# rsockets preload falls back to TCP silently when rsockets fails).
QPS=0
qps()
{
	QPS=$(rdma resource show 2>/dev/null | sed -n 's/.* qp \([0-9]*\) .*/\1/p' | head -n 1)
}

# MemAvailable and Slab, KiB, into AVAIL and SLAB.
meminfo()
{
	local k v

	while read -r k v _; do
		case $k in
		MemAvailable:) AVAIL=$v ;;
		Slab:) SLAB=$v ;;
		esac
	done < /proc/meminfo
}

# The zero-copy counters of /proc/net/afrdma_stat, into the associative
# array named by $1 (builtins only, as for idle).
ZC_KEYS=" ZeroCopySends ZeroCopyCopied SrcAvailSent RxZeroCopyReads RxZeroCopyBytes RxBounceReads "
declare -A ZS0 ZS1
zstat()
{
	local -n to=$1
	local k v

	while read -r k v; do
		[[ $ZC_KEYS == *" $k "* ]] && to[$k]=$v
	done < /proc/net/afrdma_stat
}

id=0
# With CASE_STAT set, run_case adds the counters' deltas to the case; with
# CASE_FB set, the smc_switch_to_fallback events it saw (smc_fallbacks).
CASE_STAT=
CASE_FB=
# case TOOL TRANSPORT TEST SIZE STREAMS -- CLIENT-COMMAND...
# Runs the client in the background, takes the CPU snapshots around it and
# records the case.  The server, if any, is the caller's.
run_case()
{
	local tool=$1 tr=$2 test=$3 size=$4 streams=$5
	local i0 i1 i2 i3 w0 w1 w2 w3 alive pid rc q k f0 extra=

	shift 6
	id=$((id + 1))
	# Named as bench-report.py's smoke verdict names it, "(case ID)".
	test_mark start "case $id"
	[ -n "$CASE_STAT" ] && zstat ZS0
	[ -n "$CASE_FB" ] && { smc_fallbacks; f0=$FB; }
	idle; w0=$EPOCHREALTIME i0=$IDLE
	timeout -k 5 "$TMO" "$@" > "$raw/$id.out" 2>&1 &
	pid=$!
	sleep "$LEAD"
	qps
	idle; w1=$EPOCHREALTIME i1=$IDLE
	sleep "$WIN"
	idle; w2=$EPOCHREALTIME i2=$IDLE
	# again, outside the window: a slow start may have had none at LEAD
	q=$QPS
	qps
	((q > QPS)) && QPS=$q
	alive=0
	kill -0 "$pid" 2>/dev/null && alive=1
	wait "$pid"
	rc=$?
	idle; w3=$EPOCHREALTIME i3=$IDLE
	if [ -n "$CASE_STAT" ]; then
		zstat ZS1
		for k in $ZC_KEYS; do
			extra+=" $k=$((ZS1[$k] - ZS0[$k]))"
		done
	fi
	[ -n "$CASE_FB" ] && { smc_fallbacks; extra+=" smc_fallbacks=$((FB - f0))"; }
	printf '%s\t' "$id" "$tool" "$tr" "$test" "$size" "$streams" "$rc" \
		"$i0" "$i1" "$i2" "$i3" "$w0" "$w1" "$w2" "$w3" "$alive" >> "$out/cases.tsv"
	printf '%s\n' "qps=$QPS$extra" >> "$out/cases.tsv"
	echo "bench: $id $tool $tr $test size=$size streams=$streams rc=$rc"
	test_mark end "case $id"
}

# RC QPs on every RDMA device now, into QPS_ALL (SMC's are on rxe_lo).
qps_all()
{
	local n

	QPS_ALL=0
	for n in $(rdma resource show 2>/dev/null | sed -n 's/.* qp \([0-9]*\) .*/\1/p'); do
		QPS_ALL=$((QPS_ALL + n))
	done
}

# hold_case TOOL TR N -- CMD...: N idle connections (RDS: sockets) held by
# CMD, which prints "holding N" once they are up; MemAvailable, Slab and
# the QPs on every device read before and while they are held, and
# "rdma resource show qp" kept in raw/ID.qp to tell whose QPs they are.
hold_case()
{
	local tool=$1 tr=$2 n=$3 a0 s0 q0 a1 s1 hpid rc i f0 extra=

	shift 4
	id=$((id + 1))
	test_mark start "case $id"
	[ -n "$CASE_FB" ] && { smc_fallbacks; f0=$FB; }
	qps_all
	q0=$QPS_ALL
	meminfo
	a0=$AVAIL s0=$SLAB
	"$@" > "$raw/$id.out" 2>&1 &
	hpid=$!
	for ((i = 0; i < TMO * 10; i++)); do
		grep -q '^holding' "$raw/$id.out" 2>/dev/null && break
		kill -0 "$hpid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 1		# let the server finish accepting
	qps_all
	meminfo
	a1=$AVAIL s1=$SLAB
	rdma resource show qp > "$raw/$id.qp" 2>&1
	kill "$hpid" 2>/dev/null
	wait "$hpid"
	rc=$?
	[ "$rc" = 143 ] && rc=0
	[ -n "$CASE_FB" ] && { smc_fallbacks; extra=" smc_fallbacks=$((FB - f0))"; }
	printf '%s\t' "$id" "$tool" "$tr" mem 0 "$n" "$rc" \
		0 0 0 0 0 0 0 0 0 >> "$out/cases.tsv"
	printf '%s\n' "avail0=$a0 avail1=$a1 slab0=$s0 slab1=$s1 qps0=$q0 qps_all=$QPS_ALL$extra" \
		>> "$out/cases.tsv"
	echo "bench: $id $tool $tr mem conns=$n rc=$rc"
	test_mark end "case $id"
	sleep 1		# the connections go away
}

# A server for the cases that follow: start_server NAME CMD...; its output
# goes to raw/NAME.srv.  stop_server ends it.
SRV_PID=
start_server()
{
	local name=$1

	shift
	"$@" > "$raw/$name.srv" 2>&1 &
	SRV_PID=$!
	sleep "$SRV_WAIT"
}

stop_server()
{
	[ -n "$SRV_PID" ] || return 0
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
}

# ---- setup ----------------------------------------------------------------
insmod "build/$AFRDMA_KREL/net/afrdma/afrdma.ko" || exit 1
# No silent TCP: a connection that cannot use RDMA must fail, not be
# measured as afrdma.
sysctl -qw net.afrdma.fallback=0
mtu=$(ibv_devinfo -d rxe0 | sed -n 's/.*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p')
{
	echo "kernel $AFRDMA_KREL"
	echo "active_mtu $mtu"
	echo "veth_mtu $(< /sys/class/net/va/mtu)"
	echo "cpus $(grep -c '^processor' /proc/cpuinfo)"
	echo "mode $mode"
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "rspreload ${RSPRELOAD:-none}"
	qps
	echo "idle_qps ${QPS:-0}"
	echo "zerocopy_min $(< /proc/sys/net/afrdma/zerocopy_min)"
	echo "rx_zerocopy_min $(< /proc/sys/net/afrdma/rx_zerocopy_min)"
} > "$out/env.txt"
echo "bench: $mode run on $AFRDMA_KREL, rxe0 active_mtu $mtu"

perfbin=perf
for f in /usr/bin/perf_"${AFRDMA_KREL%%-*}" /usr/bin/perf_"${AFRDMA_KREL%.*}"; do
	[ -x "$f" ] && perfbin=$f
done

# ---- the limit: perftest on rxe0 -----------------------------------------
# One server per case: perftest serves one client and exits.
perftest()
{
	local bin=$1 test=$2 size=$3 q=$4
	shift 4

	next_port
	start_server "perftest-$port" "$bin" -d rxe0 -F -p "$port" -s "$size" "$@"
	run_case "$bin" verbs "$test" "$size" "$q" -- \
		"$bin" -d rxe0 -F -p "$port" -s "$size" "$@" "$A"
	stop_server
}

if [ "$only" != peers ]; then
	for s in "${SIZES[@]}"; do
		for p in "${STREAMS[@]}"; do
			perftest ib_write_bw bw "$s" "$p" -D "$DUR" -q "$p"
		done
		[ "$mode" = smoke ] && [ "$s" = 64 ] && continue	# time: one is enough
		perftest ib_send_bw bw "$s" 1 -D "$DUR"
	done
	perftest ib_send_lat lat 64 1 -n "$LAT_ITERS"
	# The zero-copy rows' sizes the matrix lacks, one stream: the limit they
	# are judged against (full mode; smoke judges no timing).
	if [ "$mode" != smoke ]; then
		for s in "${ZC_SIZES[@]}"; do
			[[ " ${SIZES[*]} " == *" $s "* ]] && continue
			perftest ib_write_bw bw "$s" 1 -D "$DUR" -q 1
		done
	fi
fi

# How a transport is reached: PRE is the command prefix (every command
# stays an external one, so timeout and kill reach the tool itself), and
# PT afrdma-perf's -t.  afrdma: afrdma-run for the TCP tools; rsockets:
# their TCP sockets (afrdma-perf's too) carried by librspreload.
transport()
{
	PT=$1
	case $1 in
	af_rdma) PRE=(./tools/afrdma-run) ;;
	rsockets) PRE=(env LD_PRELOAD="$RSPRELOAD") PT=tcp ;;
	*) PRE=(env) ;;
	esac
}

# ---- afrdma-perf: afrdma, TCP, and rsockets through its preload ----------

for tr in af_rdma tcp rsockets; do
	[ "$tr" = rsockets ] && { [ -z "$RSPRELOAD" ] || [ "$only" = peers ]; } && continue
	next_port
	transport "$tr"
	# afrdma-perf opens AF_RDMA itself: no afrdma-run
	[ "$tr" = af_rdma ] && PRE=(env)
	ap=("${PRE[@]}" ./tools/afrdma-perf)
	start_server "afrdma-perf-$tr" "${ap[@]}" server -t "$PT" -a "$A" -p "$port"
	for s in "${SIZES[@]}"; do
		for p in "${STREAMS[@]}"; do
			run_case afrdma-perf "$tr" bw "$s" "$p" -- \
				"${ap[@]}" client -t "$PT" -a "$A" -p "$port" -j \
				-s "$s" -d "$DUR" -n 64G -P "$p"
		done
	done
	run_case afrdma-perf "$tr" lat 64 1 -- \
		"${ap[@]}" client -t "$PT" -a "$A" -p "$port" -j -m pingpong \
		-s 64 -i 1000000 -d "$DUR"
	run_case afrdma-perf "$tr" connrate 0 1 -- \
		"${ap[@]}" client -t "$PT" -a "$A" -p "$port" -j -m connect \
		-i 1000000 -d "$DUR"
	# Memory: idle connections held while MemAvailable and Slab are read
	# (both ends are in this guest, server threads included).
	for n in "${MEM_CONNS[@]}"; do
		hold_case afrdma-perf "$tr" "$n" -- \
			"${ap[@]}" client -t "$PT" -a "$A" -p "$port" -m hold -i "$n"
	done
	stop_server
done

# ---- the in-tree peers: SMC-R and RDS (issue 16) --------------------------
# SMC-R through afrdma-perf -t smc, RDS through rds-perf, beside the rows
# above.  What cannot run is said in peers.tsv ("skip TRANSPORT TEST WHY"),
# read by bench-report.py, never a silent gap.
peer_skip()
{
	printf 'skip\t%s\t%s\t%s\n' "$1" "$2" "$3" >> "$out/peers.tsv"
	echo "bench: $1 $2 not run: $3"
}

TRACE=/sys/kernel/tracing
TRI=$TRACE/instances/afrdma-bench
# smc_switch_to_fallback events so far, into FB
FB=0
smc_fallbacks()
{
	FB=$(grep -c 'smc_switch_to_fallback:' "$TRI/trace" 2>/dev/null)
	FB=${FB:-0}
}

# SMC-R on soft-RoCE: only SMC-Rv2 (rxe has RoCEv2 GIDs only), proposed
# only once a user EID is set; and SMC takes the RDMA device of its TCP
# route's netdev, so the connections go to 127.0.0.1 over rxe_lo.
smc_setup()
{
	local i state

	modprobe smc 2>"$raw/smc-setup.err" && modprobe smc_diag 2>>"$raw/smc-setup.err" || {
		SMC_WHY="modprobe smc failed: $(head -n 1 "$raw/smc-setup.err")"
		return 1
	}
	rdma link add rxe_lo type rxe netdev lo 2>>"$raw/smc-setup.err" || {
		SMC_WHY="no soft-RoCE device on lo: $(tail -n 1 "$raw/smc-setup.err")"
		return 1
	}
	for ((i = 0; i < 100; i++)); do
		state=
		read -r state 2>/dev/null < /sys/class/infiniband/rxe_lo/ports/1/state
		[[ $state == *ACTIVE* ]] && break
		sleep 0.1
	done
	[[ $state == *ACTIVE* ]] || { SMC_WHY="rxe_lo did not become ACTIVE"; return 1; }
	/usr/bin/python3 tools/testing/smc-ueid.py add AFRDMA-BENCH 2>>"$raw/smc-setup.err" || {
		SMC_WHY="setting an SMC user EID failed: $(tail -n 1 "$raw/smc-setup.err")"
		return 1
	}
	[ -d "$TRACE/events" ] || mount -t tracefs nodev "$TRACE" 2>/dev/null
	if mkdir -p "$TRI" 2>/dev/null &&
	   echo 1 > "$TRI/events/smc/smc_switch_to_fallback/enable"; then
		SMC_TRACE=1
	else
		SMC_TRACE=
		echo "bench: no smc_switch_to_fallback tracepoint: SMC-R not proven"
	fi
	return 0
}

# Unloaded at the end: a guest with smc loaded once hung in a kworker after
# its sysrq power-off (issue 16).
peers_cleanup()
{
	local i

	[ -d "$TRI" ] && { echo 0 > "$TRI/events/smc/smc_switch_to_fallback/enable"; rmdir "$TRI"; } 2>/dev/null
	for i in $(seq 30); do
		{ [ ! -d /sys/module/rds_rdma ] || rmmod rds_rdma; } 2>/dev/null
		{ [ ! -d /sys/module/rds ] || rmmod rds; } 2>/dev/null
		[ ! -d /sys/module/rds ] && break
		sleep 1
	done
	# SMC's link groups outlive their connections (for minutes) and keep
	# smc loaded: removing the device ends them.
	[ -e /sys/class/infiniband/rxe_lo ] && rdma link delete rxe_lo
	for i in $(seq 30); do
		{ [ ! -d /sys/module/smc_diag ] || rmmod smc_diag; } 2>/dev/null
		{ [ ! -d /sys/module/smc ] || rmmod smc; } 2>/dev/null
		[ ! -d /sys/module/smc ] && break
		sleep 1
	done
	[ -d /sys/module/smc ] && echo "bench: rmmod smc failed"
	[ -d /sys/module/rds ] && echo "bench: rmmod rds failed"
	return 0
}

if [ -n "$peers" ]; then
	trap peers_cleanup EXIT
	SMC_WHY=
	if smc_setup; then
		{
			echo "smc_wmem $(sysctl -n net.smc.wmem 2>/dev/null || echo -)"
			echo "smc_rmem $(sysctl -n net.smc.rmem 2>/dev/null || echo -)"
		} >> "$out/env.txt"
		next_port
		L=127.0.0.1
		ap=(./tools/afrdma-perf)
		start_server afrdma-perf-smc "${ap[@]}" server -t smc -a "$L" -p "$port"
		# Warm-up, not measured: the first connection creates SMC's link
		# group, whose first LLC exchange took over 2 s under TCG; then it
		# and a second one racing it fell back to TCP (CLC decline
		# 0x02010000, confirm-link timeout).  A few tries for one that
		# does not fall back.
		for i in 1 2 3; do
			smc_fallbacks
			f0=$FB
			"${ap[@]}" client -t smc -a "$L" -p "$port" -m connect -i 1 \
				> "$raw/smc-warmup-$i.out" 2>&1
			smc_fallbacks
			[ "$FB" = "$f0" ] && break
		done
		echo "bench: SMC-R warm-up: $i connection(s), $FB fell back"
		fb0=$FB
		CASE_FB=${SMC_TRACE:+1}
		for s in "${SIZES[@]}"; do
			for p in "${STREAMS[@]}"; do
				run_case afrdma-perf smc bw "$s" "$p" -- \
					"${ap[@]}" client -t smc -a "$L" -p "$port" -j \
					-s "$s" -d "$DUR" -n 64G -P "$p"
			done
		done
		run_case afrdma-perf smc lat 64 1 -- \
			"${ap[@]}" client -t smc -a "$L" -p "$port" -j -m pingpong \
			-s 64 -i 1000000 -d "$DUR"
		run_case afrdma-perf smc connrate 0 1 -- \
			"${ap[@]}" client -t smc -a "$L" -p "$port" -j -m connect \
			-i 1000000 -d "$DUR"
		for n in "${MEM_CONNS[@]}"; do
			hold_case afrdma-perf smc "$n" -- \
				"${ap[@]}" client -t smc -a "$L" -p "$port" -m hold -i "$n"
		done
		stop_server
		CASE_FB=
		smc_fallbacks
		[ -n "$SMC_TRACE" ] &&
			printf 'smc_fallbacks\t%s\n' "$((FB - fb0))" >> "$out/peers.tsv"
		grep -h 'smc_switch_to_fallback:' "$TRI/trace" 2>/dev/null | head -n 5 \
			> "$raw/smc-fallbacks.txt"
	else
		for t in bw lat connrate mem; do
			peer_skip smc "$t" "$SMC_WHY"
		done
	fi

	# RDS: messages only, so no streams and no connection per socket (one
	# per pair of addresses, set up by the first message): one-way
	# messages, ping-pong, and idle sockets, on rxe0's address.
	peer_skip rds connrate "RDS has no connection per socket: one per address pair, set up by its first message"
	peer_skip rds streams "RDS has no stream sockets: one socket, messages of each size"
	if modprobe rds_rdma 2>"$raw/rds-setup.err"; then
		next_port
		rp=(./tools/rds-perf)
		start_server rds-perf "${rp[@]}" server -a "$A" -p "$port"
		for s in "${SIZES[@]}"; do
			run_case rds-perf rds bw "$s" 1 -- \
				"${rp[@]}" client -a "$A" -p "$port" -j -s "$s" -d "$DUR"
		done
		run_case rds-perf rds lat 64 1 -- \
			"${rp[@]}" client -a "$A" -p "$port" -j -m pingpong \
			-s 64 -i 1000000 -d "$DUR"
		for n in "${MEM_CONNS[@]}"; do
			hold_case rds-perf rds "$n" -- \
				"${rp[@]}" client -a "$A" -p "$port" -m hold -i "$n"
		done
		stop_server
	else
		for t in bw lat mem; do
			peer_skip rds "$t" "modprobe rds_rdma failed: $(head -n 1 "$raw/rds-setup.err")"
		done
	fi
	peers_cleanup
	trap - EXIT
fi

# ---- MSG_ZEROCOPY and receive zero-copy (issue 5) ---------------------------
# One afrdma-perf stream per size on three paths: copied (the matrix's
# "bw" row where it has one, else test "copy" here), MSG_ZEROCOPY with receive
# zero-copy off (test "zc", rx_zerocopy_min=0) and with it at its default
# (test "rzc").  The counters' deltas say which path each really took.
if [ "$only" != peers ]; then
	rzc_min=$(< /proc/sys/net/afrdma/rx_zerocopy_min)
	next_port
	zp=(./tools/afrdma-perf client -t af_rdma -a "$A" -p "$port" -j -d "$DUR" -n 64G)
	start_server afrdma-perf-zc ./tools/afrdma-perf server -t af_rdma -a "$A" -p "$port"
	CASE_STAT=1
	for s in "${ZC_SIZES[@]}"; do
		if [[ " ${SIZES[*]} " != *" $s "* || " ${STREAMS[*]} " != *" 1 "* ]]; then
			run_case afrdma-perf af_rdma copy "$s" 1 -- "${zp[@]}" -s "$s"
		fi
		sysctl -qw net.afrdma.rx_zerocopy_min=0
		run_case afrdma-perf af_rdma zc "$s" 1 -- "${zp[@]}" -s "$s" -z
		sysctl -qw net.afrdma.rx_zerocopy_min="$rzc_min"
		run_case afrdma-perf af_rdma rzc "$s" 1 -- "${zp[@]}" -s "$s" -z
	done
	CASE_STAT=
	stop_server
fi

# ---- iperf3 and sockperf: afrdma (afrdma-run), TCP, rsockets --------------
if [ "$only" != peers ]; then
	for tr in "${TOOL_TRS[@]}"; do
		[ "$tr" = rsockets ] && [ -z "$RSPRELOAD" ] && continue
		transport "$tr"
		next_port
		start_server "iperf3-$tr" "${PRE[@]}" iperf3 -s -B "$A" -p "$port"
		for s in "${SIZES[@]}"; do
			run_case iperf3 "$tr" bw "$s" 1 -- \
				"${PRE[@]}" iperf3 -c "$A" -p "$port" -t "$DUR" -l "$s" -J
		done
		for p in "${STREAMS[@]:1}"; do
			run_case iperf3 "$tr" bw 65536 "$p" -- \
				"${PRE[@]}" iperf3 -c "$A" -p "$port" -t "$DUR" -l 65536 -P "$p" -J
		done
		stop_server

		next_port
		start_server "sockperf-$tr" "${PRE[@]}" sockperf sr --tcp -i "$A" -p "$port"
		run_case sockperf "$tr" lat 64 1 -- \
			"${PRE[@]}" sockperf pp --tcp -i "$A" -p "$port" -m 64 -t "$DUR"
		run_case sockperf "$tr" bw 64 1 -- \
			"${PRE[@]}" sockperf tp --tcp -i "$A" -p "$port" -m 64 -t "$DUR"
		stop_server
	done
fi

# ---- rstream: rsockets' own tool -------------------------------------------
# It echoes: the client sends -C transfers, the server sends them back, so
# its Gb/s counts both directions.  One server per run: it serves one client.
rstream_case()
{
	local test=$1 size=$2 count=$3 iters=$4

	next_port
	start_server "rstream-$port" rstream -b "$A" -p "$port"
	run_case rstream rsockets "$test" "$size" 1 -- \
		rstream -s "$A" -p "$port" -S "$size" -C "$count" -I "$iters"
	stop_server
}

if [ "$only" != peers ]; then
	rstream_case lat 64 1 "$LAT_ITERS"
	# smoke: 64 KiB only (64 B transfers time out, see the ENVIRONMENT notes)
	[ "$mode" = smoke ] && SIZES=(65536)
	for s in "${SIZES[@]}"; do
		# About as many bytes as the other tools move in DUR seconds here;
		# fewer small ones, which rsockets is slow at.
		n=$(((DUR * 10 * 1024 * 1024) / s + 1))
		((n > 20000)) && n=20000
		rstream_case bw "$s" "$n" 1
		[ "$mode" = smoke ] && break
	done
fi

# ---- profiles of one afrdma stream and of ping-pong (full mode) -----------
# profile WHAT CLIENT-ARGS...: perf record -a -g of one afrdma-perf client
# run against a fresh server, reported into profile.txt under WHAT.
profile()
{
	local what=$1
	shift

	next_port
	start_server perf-profile ./tools/afrdma-perf server -a "$A" -p "$port"
	"$perfbin" record -a -g -o /tmp/perf.data -- \
		./tools/afrdma-perf client -a "$A" -p "$port" "$@" \
		> "$raw/profile-run.out" 2>&1
	stop_server
	{
		echo "==== $what: afrdma-perf client $*"
		echo "== $(tail -n 1 "$raw/profile-run.out")"
		echo "== by symbol, self"
		"$perfbin" report -i /tmp/perf.data --stdio --no-children \
			--sort sym -g none --percent-limit 0.7 2>/dev/null | grep -v '^$'
		echo "== by task"
		"$perfbin" report -i /tmp/perf.data --stdio --no-children \
			--sort comm -g none --percent-limit 1 2>/dev/null | grep -v '^$'
		echo "== with callees (children), by symbol"
		"$perfbin" report -i /tmp/perf.data --stdio --children \
			--sort sym -g none --percent-limit 3 2>/dev/null | grep -v '^$'
		echo "== by module"
		"$perfbin" report -i /tmp/perf.data --stdio --no-children \
			--sort dso -g none --percent-limit 1 2>/dev/null | grep -v '^$'
	} >> "$out/profile.txt" 2>&1
}

if [ "$mode" != smoke ] && [ "$only" != peers ] && command -v "$perfbin" > /dev/null; then
	profile "one stream, 64 KiB writes" -s 64K -d 4
	profile "64 B ping-pong" -m pingpong -s 64 -i 100000 -d 4
	echo "bench: profiles in profile.txt"
fi

sysctl -qw net.afrdma.fallback=1
# Connections of the last runs close before the unload.
if ! unload_afrdma 30; then
	echo "bench: rmmod afrdma failed; sockets left:"
	cat /proc/net/afrdma
	pgrep -a 'afrdma|iperf3|sockperf|rstream'
	exit 1
fi
echo "bench: done, $id cases"
