#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "make run_tests": run the tests named on the command line the way the
# kernel's kselftest/runner.sh does (TAP 13, each test's output as "# "
# lines, "ok N selftests: afrdma: NAME", exit 4 is a skip, a timeout from
# "settings" or kselftest_override_timeout, KSELFTEST_<NAME>_ARGS), then
# a "# Totals:" line.  The tests run from the repository root, as
# selftests/run.sh runs them.  afrdma is loaded first if it is not:
# modprobe, else the module built for this kernel in build/KREL (make check)
# or net/afrdma; the runner unloads what it loaded.
set -u
cd "$(dirname "$0")/.." || exit 1

# No process substitution: a vm-run guest has no /dev/fd.
timeout=45
if [ -r selftests/settings ]; then
	while IFS='=' read -r key val; do
		[ "$key" = timeout ] && timeout=$val
	done < selftests/settings
fi
timeout=${kselftest_override_timeout:-$timeout}
timeout=$((timeout * ${AFRDMA_TIME_SCALE:-1}))

echo "TAP version 13"
loaded=
if [ ! -d /sys/module/afrdma ]; then
	read -r krel < /proc/sys/kernel/osrelease
	for ko in "build/$krel/net/afrdma/afrdma.ko" net/afrdma/afrdma.ko; do
		[ -f "$ko" ] && [ "$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)" = "$krel" ] &&
			break
		ko=
	done
	if modprobe -q afrdma 2>/dev/null || { [ -n "$ko" ] && insmod "$ko"; }; then
		loaded=y
		echo "# loaded afrdma${ko:+ from $ko}"
	else
		echo "1..0 # SKIP afrdma is not loaded and no module for $krel was found:" \
		     "'make install', or build with 'make KDIR=/lib/modules/$krel/build'"
		exit 4
	fi
fi

echo "1..$#"
pass=0 fail=0 skip=0 n=0
for t in "$@"; do
	n=$((n + 1))
	name=${t##*/}
	hdr="selftests: afrdma: $name"
	echo "# timeout set to $timeout"
	echo "# $hdr"
	if [ ! -x "selftests/$name" ]; then
		echo "# Warning: selftests/$name is missing or not executable"
		echo "not ok $n $hdr"
		fail=$((fail + 1))
		continue
	fi
	args=KSELFTEST_$(echo "$name" | tr -c '[:alnum:]_\n' _ | tr '[:lower:]' '[:upper:]')_ARGS
	# shellcheck disable=SC2086  # the arguments are words, as in runner.sh
	timeout -k 10 "$timeout" "./selftests/$name" ${!args:-} < /dev/null 2>&1 |
		sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	case $rc in
	0)   echo "ok $n $hdr"; pass=$((pass + 1)) ;;
	4)   echo "ok $n $hdr # SKIP"; skip=$((skip + 1)) ;;
	124) echo "not ok $n $hdr # TIMEOUT $timeout seconds"; fail=$((fail + 1)) ;;
	*)   echo "not ok $n $hdr # exit=$rc"; fail=$((fail + 1)) ;;
	esac
done

error=0
if [ -n "$loaded" ] && ! rmmod afrdma; then
	echo "# rmmod afrdma failed after the tests"
	error=1
fi
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:$error"
[ "$fail" = 0 ] && [ "$error" = 0 ]
