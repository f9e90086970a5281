#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Local misuse by an unprivileged user, uid and gid 65534 without
# capabilities: it cannot bind afrdma ports below
# net.ipv4.ip_unprivileged_port_start, as TCP, nor (rdma_cm's own rule)
# below 1024 when that is lower; it does not see other users' QP numbers in /proc/net/afrdma or `afrdma
# ss`, and a connect storm from it is bounded by net.afrdma.max_connections
# (TCP past the limit, ENOBUFS without fallback) and leaves nothing behind.
# Runs as root; every unprivileged step runs in a child process that drops
# to 65534 first.  Prints TAP.

import ctypes
import errno
from errno import EACCES
import json
import os
import socket
import struct
import subprocess
import sys
import time

from afrdma_tap import param, rc_qps, tap

NOBODY = 65534
ADDR = os.environ.get("AFRDMA_ADDR", "10.99.0.1")
ADDR6 = os.environ.get("AFRDMA_ADDR6", "fd99::1")
AF_RDMA, RDMA = param("family"), param("ipproto")
SOL_RDMA, AFRDMA_FALLBACK, AFRDMA_TRANSPORT, AFRDMA_FALLBACK_REASON = 299, 1, 2, 3
TRANSPORT_RDMA, TRANSPORT_TCP, FB_RESOURCES = 1, 2, 5
libc = ctypes.CDLL(None, use_errno=True)


def drop():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)
    assert os.geteuid() == NOBODY and os.getegid() == NOBODY


def as_nobody(fn, *args):
    """fn(*args) in a forked child running as 65534; returns its result,
    which must be JSON-serialisable."""
    r, w = os.pipe()
    pid = os.fork()
    if not pid:
        os.close(r)
        try:
            drop()
            out = {"ok": fn(*args)}
        except BaseException as e:  # the parent reports it
            out = {"error": f"{type(e).__name__}: {e}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    res = json.loads(data or b'{"error": "child died"}')
    assert "error" not in res, res["error"]
    return res["ok"]


def sysctl(name, value=None):
    """Returns the value of net.* sysctl @name ("net/ipv4/..."), then sets it."""
    path = "/proc/sys/" + name
    with open(path) as f:
        old = f.read().strip()
    if value is not None:
        with open(path, "w") as f:
            f.write(f"{value}\n")
    return old


def stat(name):
    with open("/proc/net/afrdma_stat") as f:
        return int(dict(line.split() for line in f)[name])


def proc_lines():
    """/proc/net/afrdma as this process sees it: inode -> fields (state,
    local, remote, transport, rxq, txq, uid, inode, qpn, device, reason)."""
    with open("/proc/net/afrdma") as f:
        next(f)
        return {int(fs[7]): fs for fs in (line.split() for line in f)}


def bind_errno(kind, port):
    """0 or the errno of binding a fresh socket of @kind to @port."""
    if kind == "af_rdma":
        # Python cannot parse addresses of an unknown family: bind by hand.
        s = socket.socket(AF_RDMA, socket.SOCK_STREAM, 0)
        sa = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + \
            socket.inet_aton(ADDR) + bytes(8)
        rc = libc.bind(s.fileno(), ctypes.c_char_p(sa), len(sa))
        err = ctypes.get_errno() if rc else 0
        s.close()
        return err
    family, addr = (socket.AF_INET6, ADDR6) if kind.endswith("6") else \
        (socket.AF_INET, ADDR)
    s = socket.socket(family, socket.SOCK_STREAM,
                      RDMA if kind.startswith("ipproto") else 0)
    try:
        s.bind((addr, port))
        return 0
    except OSError as e:
        return e.errno
    finally:
        s.close()


KINDS = ("tcp", "tcp6", "af_rdma", "ipproto", "ipproto6")


def privileged_ports():
    """EACCES below ip_unprivileged_port_start, as TCP, and below 1024
    always, with the fallback on (a TCP side is bound too) and off."""
    start = sysctl("net/ipv4/ip_unprivileged_port_start")
    fallback = sysctl("net/afrdma/fallback")
    try:
        for fb in (1, 0):
            sysctl("net/afrdma/fallback", fb)
            # Below 1024 rdma_cm refuses by itself (cma_get_port() checks
            # PROT_SOCK), so lowering the start does not reach afrdma.
            for first, port, tcp, ours in ((1024, 1000, EACCES, EACCES),
                                           (1024, 1500, 0, 0),
                                           (2000, 1500, EACCES, EACCES),
                                           (900, 1000, 0, EACCES),
                                           (900, 1024, 0, 0)):
                sysctl("net/ipv4/ip_unprivileged_port_start", first)
                got = as_nobody(lambda p: {k: bind_errno(k, p) for k in KINDS}, port)
                want = {k: tcp if k.startswith("tcp") else ours for k in KINDS}
                assert got == want, \
                    f"fallback {fb}, start {first}, port {port}: {got}"
            # Root may.
            sysctl("net/ipv4/ip_unprivileged_port_start", 1024)
            got = {k: bind_errno(k, 1000) for k in KINDS}
            assert not any(got.values()), f"root, port 1000: {got}"
    finally:
        sysctl("net/ipv4/ip_unprivileged_port_start", start)
        sysctl("net/afrdma/fallback", fallback)


def rdma_pair():
    """An RDMA connection on @ADDR: (listener, client, accepted)."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    lsock.bind((ADDR, 0))
    lsock.listen(4)
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    c.connect(lsock.getsockname())
    s, _ = lsock.accept()
    for x in (c, s):
        assert x.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) == TRANSPORT_RDMA
    return lsock, c, s


def hold_pair():
    """Child mode: 65534 holds an RDMA connection, prints its inodes and
    what it sees of everyone's QP numbers, and waits for a line on stdin."""
    drop()
    socks = rdma_pair()
    view = {ino: fs[8] for ino, fs in proc_lines().items()}
    print(json.dumps({"mine": [os.fstat(x.fileno()).st_ino for x in socks[1:]],
                      "view": view}), flush=True)
    sys.stdin.readline()


def qpn_owner_only():
    """Owner and CAP_NET_ADMIN see the QP number; others read 0, and the
    rest of the line (addresses, queues, uid, inode, device) as TCP's."""
    socks = rdma_pair()
    child = None
    try:
        mine = [os.fstat(x.fileno()).st_ino for x in socks[1:]]
        child = subprocess.Popen([sys.executable, __file__, "--hold-pair"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        theirs = json.loads(child.stdout.readline())
        rootview = proc_lines()
        nobodyview = as_nobody(proc_lines)
        ss = subprocess.run(["./tools/afrdma", "ss"], user=NOBODY, group=NOBODY,
                            extra_groups=[], capture_output=True, text=True,
                            check=True).stdout
        for ino in mine:
            assert int(rootview[ino][8]) > 0 and rootview[ino][9] == "rxe0"
            assert rootview[ino][6] == "0"
            # Seen by 65534: the QP number hidden, nothing else.
            assert theirs["view"][str(ino)] == "0", theirs["view"]
            other = nobodyview[str(ino)]
            assert other[8] == "0", other
            assert other[:8] + other[9:] == rootview[ino][:8] + rootview[ino][9:], \
                (other, rootview[ino])
            assert f"ino:{ino} dev:rxe0" in ss, ss
        for ino in theirs["mine"]:
            # Its own, to itself and to root (CAP_NET_ADMIN).
            assert int(theirs["view"][str(ino)]) > 0, theirs["view"]
            assert int(rootview[ino][8]) > 0 and rootview[ino][6] == str(NOBODY)
            assert f"ino:{ino} qp:{rootview[ino][8]} dev:rxe0" in ss, ss
    finally:
        if child:
            child.stdin.write("\n")
            child.stdin.close()
            child.wait(30)
        for x in socks:
            x.close()


def storm(n):
    """Child side: @n connections to one listener, an echo on each, then one
    without fallback; returns what each end used and the peak count."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    lsock.bind((ADDR, 0))
    lsock.listen(n)
    socks, ends = [], []
    for _ in range(n):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
        c.connect(lsock.getsockname())
        s, _ = lsock.accept()
        c.sendall(b"x")
        assert s.recv(1) == b"x"
        ends.append([x.getsockopt(SOL_RDMA, o) for x in (c, s)
                     for o in (AFRDMA_TRANSPORT, AFRDMA_FALLBACK_REASON)])
        socks += [c, s]
    peak = stat("CurrConnections")
    c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    c.setsockopt(SOL_RDMA, AFRDMA_FALLBACK, 0)
    try:
        c.connect(lsock.getsockname())
        nofb = 0
    except OSError as e:
        nofb = e.errno
    for x in socks + [c, lsock]:
        x.close()
    return {"ends": ends, "peak": peak, "nofb": nofb}


def settled(want, what, timeout=20):
    """Polls @what() until it returns @want; returns the last value."""
    end = time.monotonic() + timeout
    while (got := what()) != want and time.monotonic() < end:
        time.sleep(0.2)
    return got


def connect_storm():
    """One user's storm gets max_connections' worth of RDMA, then TCP;
    afterwards the count, the QPs and the socket list are as before."""
    n, rdma = 40, 2
    # Earlier tests' connections may still be going away.
    base = settled(0, lambda: stat("CurrConnections"), 10)
    qps, socks = rc_qps(), len(proc_lines())
    limit = sysctl("net/afrdma/max_connections", base + 2 * rdma)
    try:
        res = as_nobody(storm, n)
    finally:
        sysctl("net/afrdma/max_connections", limit)
    ends = res["ends"]
    over = [TRANSPORT_TCP, FB_RESOURCES]
    assert ends[:rdma] == [[TRANSPORT_RDMA, 0] * 2] * rdma, ends[:rdma]
    # Past the limit the client goes over TCP; its peer is a TCP client.
    assert all(e[:2] == over and e[2] == TRANSPORT_TCP for e in ends[rdma:]), ends
    assert res["peak"] == base + 2 * rdma, (res["peak"], base)
    assert res["nofb"] == errno.ENOBUFS, os.strerror(res["nofb"])
    assert settled(base, lambda: stat("CurrConnections")) == base
    assert settled(qps, rc_qps) == qps, "RC QPs left behind"
    assert settled(socks, lambda: len(proc_lines())) == socks, "sockets left behind"


if __name__ == "__main__":
    if sys.argv[1:] == ["--hold-pair"]:
        hold_pair()
        sys.exit(0)
    sys.exit(tap([("privileged_ports", privileged_ports),
                  ("qpn_owner_only", qpn_owner_only),
                  ("connect_storm", connect_storm)]))
