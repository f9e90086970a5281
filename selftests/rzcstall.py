#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# A peer that paces its RDMA READ responses must not hold a receiver
# (issue 17, item 1).  A large MSG_ZEROCOPY send is offered for receive
# zero-copy (SRCAVAIL) and the receiver's recv RDMA READs it, with its
# socket locked, until the READs complete.  Here each READ response packet
# arrives well within RC's ack timeout (2.15 s), so RC never retries and
# never fails, yet 1 MiB takes some 12 minutes.  Without a bound the
# reader sat in an uninterruptible wait all that time, SIGKILL or not.
#
# Slowing READ responses needs them on a wire, and with one rxe device
# both ends of a connection are on rxe0: rxe loops a packet whose
# destination MAC is its own netdev's straight back, past every qdisc.
# So the connection goes to a second address of rxe0's veth end va,
# PEER, that routing sends out va (an "ip rule" ahead of the local table,
# for locally sent packets only) to the MAC of vb, the veth's other end.
# A tc action on vb's ingress writes va's MAC into those packets and sends
# them back out vb, so they arrive at va, for rxe0, with their IP and
# RoCE headers as sent (the ICRC covers the addresses).  Only the client's
# packets take that way: the server answers its peer's own address,
# 10.99.0.1, by loopback.  The client sends, so the READ responses are
# the client's, and on va's egress a u32 filter puts RoCEv2 packets whose
# BTH opcode is an RC RDMA READ RESPONSE (0x0d-0x10, the byte after the
# UDP header) into a tbf of 12 kbit/s.  va runs at MTU 1500 meanwhile, so
# a packet carries 1 KiB: one every 0.72 s, a READ of 17 pages (68
# packets) in 49 s, far past afrdma's bound of 30 s without a completed
# READ, each packet far inside the ack timeout.
#
# rzc_path:        the reflected path carries RDMA and receive zero-copy
#                  (vb sees the packets), at full speed;
# rzc_kill:        SIGKILL ends the reading process within 5 s, and the
#                  peer's socket sees the reset;
# rzc_stall_bound: with no signal the recv returns ECONNRESET within the
#                  bound and a margin (not before 25 s), counted in
#                  RxReadStalls;
# rzc_after:       with the tbf at full rate again, a new connection on
#                  the same path, and with tc and the routing removed one
#                  on 10.99.0.1, carry 1 MiB by receive zero-copy intact.
# Time bounds scale by AFRDMA_TIME_SCALE; the kernel's 30 s does not.
# Prints TAP.

import errno
import mmap
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

from afrdma_tap import Skip, param, tap

ADDR = os.environ.get("AFRDMA_ADDR", "10.99.0.1")
PEER = "10.99.0.66"
SCALE = int(os.environ.get("AFRDMA_TIME_SCALE", "1"))
RDMA = param("ipproto")
SOL_RDMA, AFRDMA_TRANSPORT, AFRDMA_ZEROCOPY, TRANSPORT_RDMA = 299, 2, 4, 1
SO_ZEROCOPY, MSG_ZEROCOPY = 60, 0x4000000
SIZE = 1024 * 1024
BOUND = 30		# AFRDMA_RC_DEAD_MS, seconds
SLOW = "rate 12kbit burst 2000 limit 4000000"
FAST = "rate 1gbit burst 1000000 limit 4000000"
TABLE = "100"

undo = []		# cleanup commands, last first
state = {"ok": False}


class CmdError(AssertionError):
    def __init__(self, cmd, err):
        super().__init__(f"{cmd}: {err}")
        self.err = err


def run(cmd, check=True):
    r = subprocess.run(cmd, shell=True, capture_output=True, text=True)
    if check and r.returncode:
        raise CmdError(cmd, r.stderr.strip() or r.returncode)
    return r.stdout


def stat(name):
    """A counter; -1 where the module has none (before RxReadStalls)."""
    with open("/proc/net/afrdma_stat") as f:
        return int(dict(line.split() for line in f).get(name, -1))


def read(path):
    with open(path) as f:
        return f.read().strip()


def diag():
    """What the path looks like, for a case that failed."""
    for cmd in ("ip rule", f"ip route show table {TABLE}", "ip neigh show dev va",
                "ip -4 addr show dev va", "tc -s qdisc show dev va",
                "tc -s filter show dev va", "tc -s filter show dev vb ingress",
                "rdma resource show qp"):
        out = run(cmd + " 2>&1", check=False)
        print("\n".join(f"#   {cmd}: {line}" for line in out.splitlines()))
    with open("/proc/net/afrdma_stat") as f:
        for line in f:
            if not line.endswith(" 0\n"):
                print(f"#   afrdma_stat: {line.strip()}")


def gid_present(ip):
    want = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % \
        tuple(int(b) for b in ip.split("."))
    d = "/sys/class/infiniband/rxe0/ports/1/gids"
    for g in os.listdir(d):
        try:
            if read(f"{d}/{g}") == want:
                return True
        except OSError:
            pass
    return False


def tbf():
    """(packets sent, packets queued) of the READ responses' tbf."""
    out = run("tc -s qdisc show dev va")
    m = re.search(r"qdisc tbf 20:.*?Sent \d+ bytes (\d+) pkt.*?backlog \S+ (\d+)p",
                  out, re.S)
    assert m, f"no tbf 20: on va:\n{out}"
    return int(m.group(1)), int(m.group(2))


def pace(how):
    """The tbf's rate, changed in place: see shape()."""
    run(f"tc qdisc change dev va parent 1:2 handle 20: tbf {how}", check=False)


def drain():
    """Lets the queued READ responses go: they hold the client's QP."""
    pace(FAST)
    end = time.monotonic() + 10 * SCALE
    while time.monotonic() < end:
        try:
            if tbf()[1] == 0:
                return
        except AssertionError:
            return
        time.sleep(0.1)


def setup():
    for dev in ("va", "vb"):
        if not os.path.exists(f"/sys/class/net/{dev}"):
            raise Skip(f"no {dev} in this namespace")
    if "netdev va" not in run("rdma link show rxe0/1", check=False):
        raise Skip("rxe0 is not on va")
    if not shutil.which("tc"):
        raise Skip("tc is not installed")
    va_mac = read("/sys/class/net/va/address")
    vb_mac = read("/sys/class/net/vb/address")
    run("modprobe -a sch_ingress sch_prio sch_tbf cls_u32 act_pedit act_mirred",
        check=False)
    try:
        # Nothing reaches these before the routing below.
        undo.append("tc qdisc del dev vb ingress")
        run("tc qdisc add dev vb handle ffff: ingress")
        run("tc filter add dev vb parent ffff: protocol ip prio 1 u32 "
            "match ip protocol 17 0xff match ip dport 4791 0xffff "
            f"action pedit ex munge eth dst set {va_mac} pipe "
            "action mirred egress redirect dev vb")
        shape()
        undo.append(f"ip route flush table {TABLE}")
        run(f"ip route add table {TABLE} {PEER}/32 dev va src {ADDR}")
        # Locally sent packets to PEER go out va; the local table after.
        undo.append("ip rule del pref 10")
        run(f"ip rule add pref 10 to {PEER}/32 iif lo lookup {TABLE}")
    except CmdError as e:
        # A kernel without them (selftests/config lists them).
        why = str(e.err).splitlines()[0]
        if any(w in why for w in ("unknown", "Failed to load", "not supported")):
            raise Skip(f"tc or policy routing: {why}") from None
        raise

    mtu = read("/sys/class/net/va/mtu")
    undo.append(f"ip link set va mtu {mtu}")
    run("ip link set va mtu 1500")
    # Packets from our own address arrive on va: no martians here.  No
    # TCP fallback either: PEER's TCP would reach vb's stack, which drops
    # them, so a connect that missed RDMA would hang rather than fail.
    for key, val in (("ipv4/conf/all/rp_filter", 0), ("ipv4/conf/va/rp_filter", 0),
                     ("ipv4/conf/va/accept_local", 1), ("afrdma/fallback", 0)):
        path = f"/proc/sys/net/{key}"
        undo.append(f"echo {read(path)} > {path}")
        run(f"echo {val} > {path}")
    undo.append(f"ip addr del {PEER}/32 dev va")
    run(f"ip addr add {PEER}/32 dev va")
    undo.append(f"ip neigh del {PEER} dev va")
    run(f"ip neigh replace {PEER} lladdr {vb_mac} dev va nud permanent")
    undo.append("ip rule add pref 0 lookup local; ip rule del pref 20")
    run("ip rule add pref 20 lookup local && ip rule del pref 0")
    end = time.monotonic() + 10 * SCALE
    while not gid_present(PEER):
        assert time.monotonic() < end, f"rxe0 has no GID for {PEER}"
        time.sleep(0.1)


def shape():
    """READ responses on va's egress through a tbf, the rest not; at full
    rate until pace(SLOW).  Added and deleted only while nothing crosses
    va, and otherwise changed in place: a qdisc's replacement drops
    packets for a moment, which 6.12's rxe takes for a fatal send error
    (wire.sh), QP1's included."""
    undo.append("tc qdisc del dev va root")
    run("tc qdisc add dev va root handle 1: prio bands 2 "
        "priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
    run(f"tc qdisc add dev va parent 1:2 handle 20: tbf {FAST}")
    for op in (0x0d, 0x0e, 0x0f, 0x10):
        run("tc filter add dev va parent 1: protocol ip prio 2 u32 "
            "match ip protocol 17 0xff match ip dport 4791 0xffff "
            f"match u8 {op:#04x} 0xff at 28 flowid 1:2")


def cleanup():
    """Everything as it was, once va has been idle for a second."""
    if undo:
        drain()
        time.sleep(1)
    for cmd in reversed(undo):
        run(cmd, check=False)
    undo.clear()


def zc_on(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
    except OSError as e:
        if e.errno != errno.EOPNOTSUPP:
            raise
        s.setsockopt(SOL_RDMA, AFRDMA_ZEROCOPY, 1)


def connect(addr):
    """(listener, client, server), both ends on RDMA and blocking."""
    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    lsn.bind((addr, 0))
    lsn.listen(1)
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    c.connect(lsn.getsockname())
    s, _ = lsn.accept()
    s.settimeout(None)
    ends = [x.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) for x in (c, s)]
    if ends != [TRANSPORT_RDMA] * 2:
        for x in (lsn, c, s):
            x.close()
        raise AssertionError(f"to {addr}: transports {ends}, not RDMA")
    zc_on(c)
    return lsn, c, s


def pattern(seed):
    m = mmap.mmap(-1, SIZE)
    m.write(bytes((seed + i) & 0xff for i in range(256)) * (SIZE // 256))
    return m


def transfer(addr):
    """1 MiB offered for READ and read into one buffer, intact."""
    reads = stat("RxZeroCopyReads")
    lsn, c, s = connect(addr)
    try:
        out, got = pattern(7), mmap.mmap(-1, SIZE)
        assert c.send(memoryview(out), MSG_ZEROCOPY) == SIZE
        assert s.recv_into(got, SIZE, socket.MSG_WAITALL) == SIZE
        assert got[:] == out[:], "the data differs"
        assert stat("RxZeroCopyReads") > reads, "not read by RDMA READ"
    finally:
        for x in (s, c, lsn):
            x.close()


def reader(s, w):
    """Child: one recv of the whole region; reports its result and time."""
    buf = mmap.mmap(-1, SIZE)
    t0 = time.monotonic()
    try:
        res = f"ok {s.recv_into(buf, SIZE, socket.MSG_WAITALL)}"
    except OSError as e:
        res = f"err {e.errno}"
    os.write(w, f"{res} {time.monotonic() - t0:.1f}\n".encode())


def stalled():
    """A connection on PEER whose server end recvs in a child process, the
    client's 1 MiB offered and its READs under way (queued in the tbf).
    Returns (child pid, pipe from it, client socket, listener)."""
    pace(SLOW)
    lsn, c, s = connect(PEER)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            c.close()
            lsn.close()
            reader(s, w)
        finally:
            os._exit(0)
    os.close(w)
    s.close()
    stalled.buf = pattern(11)
    assert c.send(memoryview(stalled.buf), MSG_ZEROCOPY) == SIZE
    end = time.monotonic() + 10 * SCALE
    while tbf()[1] == 0:
        assert time.monotonic() < end, "no READ response reached the tbf"
        time.sleep(0.1)
    time.sleep(2)
    sent, queued = tbf()
    print(f"# READ responses: {sent} through the tbf, {queued} queued")
    return pid, r, c, lsn


def peer_reset(c):
    """The client's end sees the reset."""
    ready, _, _ = select.select([c], [], [], 10 * SCALE)
    assert ready, "the peer's socket saw nothing"
    try:
        data = c.recv(1)
    except ConnectionResetError:
        return
    raise AssertionError(f"the peer's recv returned {data!r}, not ECONNRESET")


def reap(pid, secs):
    """True once @pid is gone (reaped now or before), within @secs."""
    end = time.monotonic() + secs
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def finish(pid, r, c, lsn):
    """Whatever happened: the READs drained, the child gone, sockets shut."""
    drain()
    if not reap(pid, 0):
        os.kill(pid, signal.SIGKILL)
        reap(pid, 60 * SCALE)
    os.close(r)
    c.close()
    lsn.close()


def case_path():
    setup()
    try:
        rx = int(read("/sys/class/net/vb/statistics/rx_packets"))
        sent = tbf()[0]
        transfer(PEER)
        rx = int(read("/sys/class/net/vb/statistics/rx_packets")) - rx
        sent = tbf()[0] - sent
        print(f"# vb received {rx} packets, {sent} of them READ responses")
        assert rx > 0, f"the connection to {PEER} did not cross the veth"
        assert sent >= SIZE // 4096, "the READ responses missed the tbf"
    except Exception:
        diag()
        raise
    state["ok"] = True


def need_path():
    if not state["ok"]:
        raise Skip("the reflected path is not set up")


def case_kill():
    need_path()
    resets = stat("Resets")
    stalls = stat("RxReadStalls")
    pid, r, c, lsn = stalled()
    try:
        t0 = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        gone = reap(pid, 5 * SCALE)
        secs = time.monotonic() - t0
        print(f"# the reader was {'gone' if gone else 'still there'} "
              f"{secs:.1f} s after SIGKILL")
        if not gone:
            diag()
        assert gone, "SIGKILL did not end a recv waiting for its READs"
        peer_reset(c)
        print(f"# Resets +{stat('Resets') - resets}, RxReadStalls "
              f"+{stat('RxReadStalls') - stalls}")
        assert stat("RxReadStalls") == stalls, "a kill counted as a stall"
    finally:
        finish(pid, r, c, lsn)


def case_bound():
    need_path()
    resets = stat("Resets")
    stalls = stat("RxReadStalls")
    pid, r, c, lsn = stalled()
    try:
        limit = BOUND + 15 * SCALE
        ready, _, _ = select.select([r], [], [], limit)
        line = os.read(r, 100).decode().split() if ready else []
        print(f"# the reader: {' '.join(line) or 'no result'} "
              f"(within {limit} s); Resets +{stat('Resets') - resets}, "
              f"RxReadStalls +{stat('RxReadStalls') - stalls}")
        if not line:
            diag()
        assert line, f"recv still waiting for its READs after {limit} s"
        assert line[:2] == ["err", str(errno.ECONNRESET)], \
            f"recv returned {line[:2]}, not ECONNRESET"
        assert float(line[2]) >= BOUND - 5, "recv gave up before the bound"
        assert stat("RxReadStalls") == stalls + 1, "RxReadStalls did not count it"
        assert stat("Resets") >= resets + 1, "Resets did not count it"
        peer_reset(c)
    finally:
        finish(pid, r, c, lsn)


def case_after():
    need_path()
    drain()
    transfer(PEER)
    cleanup()
    transfer(ADDR)


def main():
    try:
        return tap([("rzc_path", case_path), ("rzc_kill", case_kill),
                    ("rzc_stall_bound", case_bound), ("rzc_after", case_after)])
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
