#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# redis-server and redis-benchmark (SET and GET, 20000 requests each, four
# clients), both through tools/afrdma-run: no errors, every request counted
# by the server, and rxe0's packet counter and the RC QPs present prove the
# traffic crossed RDMA.  Prints TAP.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh
run=tools/afrdma-run
addr=${AFRDMA_ADDR:-10.99.0.1}
port=6379 requests=20000 clients=4

echo "TAP version 13"
echo "1..1"
need_test=redis_benchmark_set_get
if ! need redis-server redis-benchmark redis-cli; then
	tap_totals
	exit 0
fi

dir=$(mktemp -d)
$run redis-server --bind "$addr" --port $port --dir "$dir" --save '' \
	--appendonly no --protected-mode no --daemonize no \
	--logfile "$dir/redis.log" &
srv=$!
cli()
{
	timeout 30 $run redis-cli -h "$addr" -p $port "$@"
}
for _ in $(seq 100); do
	[ "$(cli ping 2>/dev/null)" = PONG ] && break
	sleep 0.2
done

before=$(rxe_sent_pkts)
qp_watch_start
out=$(timeout 600 $run redis-benchmark -h "$addr" -p $port -t set,get \
      -n $requests -c $clients --csv 2>&1)
rc=$?
qp_watch_stop
echo "$out" | sed 's/^/# /'
done_cmds=$(cli info stats | sed -n 's/^total_commands_processed:\([0-9]*\).*/\1/p')
echo "# redis-server processed ${done_cmds:-no} commands"
ok=1
[ $rc = 0 ] || ok=0
grep -qi 'error' <<< "$out" && ok=0
for t in SET GET; do
	grep -Eq "^\"$t\",\"[0-9.]*[1-9][0-9.]*\"" <<< "$out" || ok=0
done
[ "${done_cmds:-0}" -ge $((2 * requests)) ] || ok=0
# Every request and every reply is a message, a packet at least; both
# ends of every client's connection have a QP.
crossed_rdma "$before" $((4 * requests)) $((2 * clients)) || ok=0
cli shutdown nosave > /dev/null 2>&1
sleep 1
kill $srv 2>/dev/null
wait $srv
if [ $ok = 1 ]; then
	tap_result ok redis_benchmark_set_get
else
	sed 's/^/# redis-server: /' "$dir/redis.log" | tail -20
	tap_result fail redis_benchmark_set_get
fi
rm -rf "$dir"
tap_totals
[ $fail = 0 ]
