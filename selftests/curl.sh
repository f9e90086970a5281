#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# curl downloads a 16 MiB file from "python3 -m http.server", both through
# tools/afrdma-run, over IPv4 and IPv6: the file's checksum must match, and
# rxe0's packet counter and the RC QPs present (the download is slowed to
# 4 MiB/s so that they can be seen) prove the traffic crossed RDMA.
# Prints TAP.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh
run=tools/afrdma-run
port=8000 size=$((16 << 20))

echo "TAP version 13"
echo "1..2"

# curl_get NAME BIND-ADDR URL-HOST
curl_get()
{
	local name=$1 dir srv before got want rc

	need_test=$name
	need curl python3 || return
	dir=$(mktemp -d)
	head -c $size /dev/urandom > "$dir/blob"
	$run python3 -m http.server --bind "$2" --directory "$dir" $port \
		> "$dir/server.log" 2>&1 &
	srv=$!
	wait_listen "$2" $port
	before=$(rxe_sent_pkts)
	qp_watch_start
	timeout 120 $run curl -sS --fail --limit-rate 4M -o "$dir/got" \
		"http://$3:$port/blob"
	rc=$?
	qp_watch_stop
	want=$(sha256sum < "$dir/blob") got=$(sha256sum < "$dir/got" 2>/dev/null)
	echo "# curl exited $rc; sha256 ${got%% *} (sent ${want%% *})"
	# The file in packets of at most 4096 bytes; a QP at either end.
	if [ $rc = 0 ] && [ "$got" = "$want" ] &&
	   crossed_rdma "$before" $((size / 4096)) 2; then
		tap_result ok "$name"
	else
		sed 's/^/# http.server: /' "$dir/server.log" | tail -10
		tap_result fail "$name"
	fi
	kill $srv
	wait $srv 2>/dev/null
	rm -rf "$dir"
}

curl_get curl_http_server_ipv4 "${AFRDMA_ADDR:-10.99.0.1}" "${AFRDMA_ADDR:-10.99.0.1}"
curl_get curl_http_server_ipv6 "${AFRDMA_ADDR6:-fd99::1}" "[${AFRDMA_ADDR6:-fd99::1}]"
tap_totals
[ $fail = 0 ]
