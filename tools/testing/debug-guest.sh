#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check-debug", run by vm-run on the debug kernel from
# the repository root:
#
#   debug-guest.sh tests         selftests/run.sh (AFRDMA_TESTS picks a
#                                subset), then a kmemleak scan, counted in
#                                $AFRDMA_OUTDIR/summary as one more test
#   debug-guest.sh control KO    load the positive control module KO, then
#                                the same kmemleak scan, reported as
#                                comments only: the host judges this boot
#
# With DEBUG_FLAVOR=kcsan (check-kcsan's kernel has no kmemleak) there is
# no scan: the host judges the kernel log's KCSAN reports.
#
# The kmemleak report goes to $AFRDMA_OUTDIR/kmemleak.txt.  Any leak fails,
# whoever allocated it: the kernel scans only here (no automatic scans, see
# debug-kernel.config), after afrdma is unloaded, when its stack traces can
# no longer be told apart by symbol.  The scan also logs "kmemleak: N new
# suspected memory leaks", which vm-run's kernel log check fails on too.
set -u
cd "$(dirname "$0")/../.." || exit

out=${AFRDMA_OUTDIR:-/tmp}
KMEMLEAK=/sys/kernel/debug/kmemleak

# kmemleak_scan: two scans, as kmemleak's documentation advises: an object
# is reported only once its contents stayed the same from one scan to the
# next and it is older than 5 s.  Sets LEAKS (-1: no kmemleak).
kmemleak_scan()
{
	local t0=$SECONDS

	LEAKS=-1
	[ -w "$KMEMLEAK" ] || return
	sleep 6
	echo scan > "$KMEMLEAK"
	sleep 6
	echo scan > "$KMEMLEAK"
	cat "$KMEMLEAK" > "$out/kmemleak.txt"
	LEAKS=$(grep -c '^unreferenced object' "$out/kmemleak.txt")
	echo "# kmemleak: two scans took $((SECONDS - t0)) s"
}

# add_to_summary OK: one more passed or failed test in run.sh's summary.
add_to_summary()
{
	local p=0 f=0 s=0

	[ -r "$out/summary" ] && read -r p f s < "$out/summary"
	if [ "$1" = y ]; then
		p=$((p + 1))
	else
		f=$((f + 1))
	fi
	echo "$p $f $s" > "$out/summary"
}

case ${1:-} in
tests)
	./selftests/run.sh
	rc=$?
	[ "${DEBUG_FLAVOR:-}" = kcsan ] && exit "$rc"
	kmemleak_scan
	if [ "$LEAKS" = 0 ]; then
		echo "ok - kmemleak: no leak after the tests"
		add_to_summary y
	elif [ "$LEAKS" -lt 0 ]; then
		echo "not ok - kmemleak: $KMEMLEAK is missing"
		add_to_summary n
		rc=1
	else
		echo "not ok - kmemleak: $LEAKS suspected leak(s), kmemleak.txt:"
		head -n 60 "$out/kmemleak.txt"
		add_to_summary n
		rc=1
	fi
	exit "$rc"
	;;
control)
	[ $# -eq 2 ] || { echo "usage: $0 control KO" >&2; exit 2; }
	insmod "$2" || { echo "# control: insmod $2 failed"; exit 1; }
	[ "${DEBUG_FLAVOR:-}" = kcsan ] && exit 0
	kmemleak_scan
	echo "# control: kmemleak found $LEAKS suspected leak(s)"
	# Whether this boot fails is for vm-run's kernel log check to say.
	exit 0
	;;
*)
	echo "usage: $0 tests | control KO" >&2
	exit 2
	;;
esac
