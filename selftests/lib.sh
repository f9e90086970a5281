# SPDX-License-Identifier: GPL-2.0
#
# Shared by the shell selftests: TAP result lines with a "# Totals" line
# for selftests/run.sh, and a one-shot checksummed afrdma-perf stream.
# Sourced from the repository root.

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
