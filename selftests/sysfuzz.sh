#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzzes afrdma's system calls in the guest, then judges the kernel:
#
#   sysfuzz          tools/testing/afrdma-sysfuzz: random calls from several
#                    threads on shared afrdma sockets, with live RDMA peers;
#                    every call returns (no hang) and the run reached RDMA
#   sysfuzz_trinity  trinity (Debian's package) on afrdma's sockets only:
#                    its socket cache lists AF_RDMA sockets, and it calls
#                    only socket system calls
#   sysfuzz_drained  afterwards every afrdma socket and RC QP goes
#
# vm-run fails the run on any WARN, BUG or sanitizer report in the kernel
# log, and make check-debug scans kmemleak after this program.  Lengths:
# AFRDMA_FUZZ_SECONDS (default 10) for each fuzzer; make check-debug and
# make fuzz-kernel set it, and selftests/run.sh runs this only then.
# Prints TAP.  Needs the module loaded and rxe0 up.
set -u
cd "$(dirname "$0")/.."
. selftests/lib.sh

secs=${AFRDMA_FUZZ_SECONDS:-10}
addr=${AFRDMA_ADDR:-10.99.0.1}
addr6=${AFRDMA_ADDR6:-fd99::1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "1..3"

# The stuck bound: a call that takes longer has hung in the kernel.  The
# output goes out as it comes: a fuzzer stuck for good still says where.
timeout "$((secs + $(scaled 300)))" ./tools/testing/afrdma-sysfuzz \
	-t "$secs" -j 4 -S "$(scaled 120)" -a "$addr" -A "$addr6" 2>&1 |
	sed -u 's/^\([^#]\)/# \1/' | tee "$work/sysfuzz.log"
rc=${PIPESTATUS[0]}
rdma=$(sed -n 's/.* \([0-9]*\) connects on RDMA.*/\1/p' "$work/sysfuzz.log")
if [ $rc = 0 ] && [ "${rdma:-0}" -gt 0 ]; then
	tap_result ok sysfuzz
else
	echo "# afrdma-sysfuzz exited $rc with ${rdma:-no} connects on RDMA"
	tap_result fail sysfuzz
fi

# trinity opens the sockets its cache lists (family, type, protocol as
# three native ints each) instead of its own mix, and its children drop
# to nobody (--clowntown: without its 10 s warning countdown as root).  It
# cannot make afrdma's sockets by itself: it refuses family 25 (AF_WANPIPE's
# number) and never picks protocol 257.  Only AF_RDMA ones: trinity indexes
# its IPv4 option table by the protocol, which 257 runs past, and crashes
# (afrdma-sysfuzz covers IPPROTO_RDMA).
trinity_on_afrdma()
{
	local fam log rc n

	fam=$(cat /sys/module/afrdma/parameters/family)
	python3 - "$work/trinity.socketcache" "$fam" <<-'EOF'
	import struct, sys
	path, fam = sys.argv[1], int(sys.argv[2])
	with open(path, "wb") as f:
	    for i in range(30):
	        f.write(struct.pack("=3I", fam, 1, 0))
	EOF
	log=$work/trinity.log
	local calls=(-c bind -c connect -c listen -c accept -c accept4
		     -c sendto -c recvfrom -c sendmsg -c recvmsg -c sendmmsg
		     -c recvmmsg -c shutdown -c setsockopt -c getsockopt
		     -c getsockname -c getpeername -c poll -c ioctl -c fcntl
		     -c splice -c sendfile)
	(cd "$work" && timeout -k "$(scaled 120)" -s INT "$secs" trinity -q -l off \
		--dropprivs --clowntown -C 4 \
		--disable-fds=pipes,perf,epoll,eventfd,pseudo,timerfd,testfile,memfd,drm \
		"${calls[@]}") > "$log" 2>&1
	rc=$?
	grep -a -E "sockets created|iterations|syscalls|became tainted|Bailing" "$log" | tail -n 8 | \
		sed 's/^/# trinity: /'
	n=$(sed -n 's/.*\b\([0-9]*\) sockets created based on info from socket cachefile.*/\1/p' "$log" | tail -n 1)
	# timeout -s INT: trinity stops and exits 0, or 124 from timeout.
	if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then
		echo "# trinity exited $rc"
		tail -n 20 "$log" | sed 's/^/#   /'
		return 1
	fi
	if [ "${n:-0}" -lt 30 ]; then
		echo "# trinity opened ${n:-no} afrdma sockets of 30"
		tail -n 20 "$log" | sed 's/^/#   /'
		return 1
	fi
	if grep -a -q "kernel became tainted" "$log"; then
		echo "# trinity saw the kernel tainted"
		return 1
	fi
}

need_test=sysfuzz_trinity
if need trinity; then
	if trinity_on_afrdma; then
		tap_result ok sysfuzz_trinity
	else
		tap_result fail sysfuzz_trinity
	fi
fi

if wait_drained "$(scaled 30)"; then
	tap_result ok sysfuzz_drained
else
	echo "# left after $(scaled 30) s: $socks afrdma sockets, $qps RC QPs"
	sed 's/^/#   /' /proc/net/afrdma
	tap_result fail sysfuzz_drained
fi
tap_totals
[ "$fail" = 0 ]
