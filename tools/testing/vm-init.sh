#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of tools/testing/vm-run: runs as PID 1 after the initramfs
# has switch_root'ed into the host's / (read-only over 9p).  It makes the
# few writable places a test needs, sets up soft-RoCE (rxe0 on a veth, or
# with vm-run --pair on the NIC wired to the other guest), runs the command
# vm-run asked for, reports its exit status and the
# kernel log through the writable share and powers the guest off.
#
# Not meant to be run by hand.

# No "set -e": this is PID 1 and must always reach the power-off below.
set -u

VM_DIR=/run/afrdma		# the writable per-run share, mounted by init
CTL_DIR=$VM_DIR/.vm-run		# files written by the host for us

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TMPDIR=/tmp LANG=C.UTF-8 TERM=dumb
export PYTHONDONTWRITEBYTECODE=1

# vm-run waits for this line to tell a boot that failed from a test that did.
# The leading newline ends whatever the firmware left on the console line.
printf '\nAFRDMA-VM-READY\n'

msg()
{
	echo "vm-init: $*"
}

poweroff_now()
{
	sync
	echo o > /proc/sysrq-trigger
	# PID 1 must never exit.
	while :; do
		sleep 60
	done
}

finish()
{
	local rc=$1

	printf '\nAFRDMA-VM-EXIT=%s\n' "$rc"
	echo "$rc" > "$VM_DIR/exit-status"
	dmesg > "$VM_DIR/dmesg.txt" 2>&1
	poweroff_now
}

# Every exec costs a noticeable fraction of a second under TCG over 9p, so
# the setup below uses as few commands as it can.

# modprobe, except on a kernel with no module tree at all (make
# check-debug's, everything built in): there modprobe fails even for a
# built-in, for want of /lib/modules/KREL/modules.builtin.  The setup
# steps that follow fail plainly if something is missing after all.
load_modules()
{
	local krel

	read -r krel < /proc/sys/kernel/osrelease
	[ -d "/lib/modules/$krel" ] || return 0
	modprobe -a "$@"
}

setup_mounts()
{
	local m=/run/afrdma-modules

	mkdir -p /dev/pts /dev/shm $m/upper $m/work || return 1
	# /run is already a tmpfs (init mounted it for the share).  The
	# overlay gives a writable /lib/modules, so depmod and modprobe of an
	# out-of-tree module work; the read-only host tree stays below.  A
	# kernel without cgroups (make check-debug's) has no /sys/fs/cgroup,
	# one without tracing (make check-kcsan's) no /sys/kernel/tracing:
	# nofail does not cover a missing mount point.
	{
	[ -d /sys/fs/cgroup ] && echo "cgroup2 /sys/fs/cgroup cgroup2 nofail 0 0"
	[ -d /sys/kernel/tracing ] && echo "tracefs /sys/kernel/tracing tracefs nofail 0 0"
	cat <<-EOF
	tmpfs /tmp tmpfs mode=1777 0 0
	tmpfs /var/tmp tmpfs mode=1777 0 0
	devpts /dev/pts devpts gid=5,mode=620,ptmxmode=666 0 0
	tmpfs /dev/shm tmpfs mode=1777 0 0
	debugfs /sys/kernel/debug debugfs nofail 0 0
	overlay /lib/modules overlay lowerdir=/lib/modules,upperdir=$m/upper,workdir=$m/work 0 0
	EOF
	} > /run/afrdma-fstab
	mount -a -T /run/afrdma-fstab
}

# vm-run shares a checkout under /tmp, /var/tmp or /run on its own (the
# tmpfs mounted here hides the host's); mount each at its own path.
mount_shares()
{
	local i opt=trans=virtio,version=9p2000.L,msize=512000,ro

	read -r i < /proc/cmdline
	[[ " $i " =~ \ afrdma_9p_cache=([a-z]+)\  ]] && opt+=,cache=${BASH_REMATCH[1]}
	for i in "${!AFRDMA_SHARES[@]}"; do
		if ! mkdir -p "${AFRDMA_SHARES[i]}" ||
		   ! mount -t 9p -o "$opt" "afrdmashare$i" "${AFRDMA_SHARES[i]}"; then
			msg "mounting ${AFRDMA_SHARES[i]} failed"
			return 1
		fi
	done
}

setup_rxe()
{
	ip -batch - <<-EOF || return 1
	link set lo up
	link add va type veth peer name vb
	link set va mtu 9000
	link set vb mtu 9000
	addr add 10.99.0.1/24 dev va
	addr add fd99::1/64 dev va nodad
	link set va up
	link set vb up
	EOF
	add_rxe va
}

# rxe0 on NETDEV, waiting until its port is ACTIVE.
add_rxe()
{
	local dev=$1 i state

	# Seen once on 6.12 under TCG: rxe_newlink failed with ENOENT on the
	# first try.  A second try is cheap; a real failure still fails.
	for ((i = 0; i < 3; i++)); do
		rdma link add rxe0 type rxe netdev "$dev" && break
		sleep 1
	done
	[ "$i" -lt 3 ] || return 1
	for ((i = 0; i < 100; i++)); do
		state=
		read -r state 2>/dev/null < /sys/class/infiniband/rxe0/ports/1/state
		[[ $state == *ACTIVE* ]] && return 0
		sleep 0.1
	done
	msg "rxe0 did not become ACTIVE:"
	rdma link
	return 1
}

# Until no IPv6 address of DEV is tentative.  rdma_cm's address
# resolution solicits a neighbour with no packet queued, so the solicitation
# goes from the link-local address, and none goes at all while that is
# still in duplicate address detection (ndisc_send_ns()): a first IPv6
# connect in the seconds after the link came up waited for the
# neighbour's retransmit timer, and went to TCP at the fallback timeout.
wait_dad()
{
	local i

	for ((i = 0; i < 300; i++)); do
		[ -z "$(ip -6 addr show dev "$1" tentative)" ] && return 0
		sleep 0.1
	done
	msg "$1: IPv6 addresses still tentative after 30 s:"
	ip -6 addr show dev "$1"
	return 1
}

# vm-run --pair: the one virtio NIC is the wire to the other guest.  MTU
# 9000 makes rxe's active_mtu 4096, as on the veth.  IPv6 addresses are
# kept across a link down, so a test that takes the link down and up again
# finds its address still there.
setup_wire()
{
	local d

	# Nothing loads drivers by itself here (no udev).
	load_modules virtio_net || return 1
	AFRDMA_NIC=
	for d in /sys/class/net/*; do
		[ -e "$d/device" ] && { AFRDMA_NIC=${d##*/}; break; }
	done
	[ -n "$AFRDMA_NIC" ] || { msg "no NIC for the wire"; return 1; }
	export AFRDMA_NIC
	echo 1 > /proc/sys/net/ipv6/conf/all/keep_addr_on_down
	echo 1 > /proc/sys/net/ipv6/conf/default/keep_addr_on_down
	ip -batch - <<-EOF || return 1
	link set lo up
	link set $AFRDMA_NIC mtu 9000
	addr add $AFRDMA_SELF/24 dev $AFRDMA_NIC
	addr add $AFRDMA_SELF6/64 dev $AFRDMA_NIC nodad
	link set $AFRDMA_NIC up
	EOF
	add_rxe "$AFRDMA_NIC" && wait_dad "$AFRDMA_NIC"
}

[ -r "$CTL_DIR/env.sh" ] || { msg "no $CTL_DIR/env.sh"; finish 1; }
# Written by vm-run with printf %q: AFRDMA_CMD (array), AFRDMA_CWD,
# AFRDMA_TIMEOUT, AFRDMA_SHARES (array); with --pair also AFRDMA_ROLE,
# AFRDMA_SELF, AFRDMA_PEER, AFRDMA_SELF6 and AFRDMA_PEER6.
AFRDMA_ROLE=
AFRDMA_SHARES=()
# shellcheck source=/dev/null
. "$CTL_DIR/env.sh"

load_modules overlay rdma_rxe rdma_ucm veth || { msg "modprobe failed"; finish 1; }
setup_mounts || { msg "setting up mounts failed"; finish 1; }
mount_shares || finish 1
if [ -n "$AFRDMA_ROLE" ]; then
	echo "afrdma-$AFRDMA_ROLE" > /proc/sys/kernel/hostname
	setup_wire || { msg "wire setup failed"; finish 1; }
	export AFRDMA_ROLE AFRDMA_SELF AFRDMA_PEER AFRDMA_SELF6 AFRDMA_PEER6
	export AFRDMA_ADDR=$AFRDMA_SELF
	export AFRDMA_ADDR6=$AFRDMA_SELF6
else
	echo afrdma-vm > /proc/sys/kernel/hostname
	setup_rxe || { msg "soft-RoCE setup failed"; finish 1; }
	export AFRDMA_ADDR=10.99.0.1
	export AFRDMA_ADDR6=fd99::1
fi
read -r AFRDMA_KREL < /proc/sys/kernel/osrelease
export AFRDMA_KREL
export AFRDMA_OUTDIR=$VM_DIR

cd "$AFRDMA_CWD" || { msg "cannot cd to $AFRDMA_CWD"; finish 1; }

# vm-run judges the kernel log from here on (CMD_MARK there).
echo "afrdma-vm: command starts" > /dev/kmsg
timeout -k 10 "$AFRDMA_TIMEOUT" "${AFRDMA_CMD[@]}" < /dev/null
rc=$?
[ "$rc" -eq 124 ] && msg "command timed out after $AFRDMA_TIMEOUT s"
cd /
finish "$rc"
