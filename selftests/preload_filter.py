#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# The preload shim's filters, from plain Python run through
# tools/afrdma-run (it runs itself that way): AFRDMA_PORTS and AFRDMA_ADDRS
# pick which sockets carry RDMA.  A socket outside them must be plain TCP
# (no RC QP while it is connected) and keep the flags and options set
# before connect; one inside must be IPPROTO_RDMA with RC QPs and rxe0
# packets.  The shim reads the variables at every call, so one process can
# try several settings.  Prints TAP.

import fcntl
import os
import socket
import sys

from afrdma_tap import EchoServer, RdmaProof, echo_check, param, rc_qps, tap

ADDR = os.environ.get("AFRDMA_ADDR", "10.99.0.1")
ADDR6 = os.environ.get("AFRDMA_ADDR6", "fd99::1")
RDMA = param("ipproto")
TCP = socket.IPPROTO_TCP


_last_port = [5300]


def fresh_port():
    """A port not used before in this run, so that what one case leaves
    behind cannot decide the next."""
    _last_port[0] += 1
    return _last_port[0]


def proto(s):
    return s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL)


def setenv(**kw):
    for k in ("AFRDMA_PORTS", "AFRDMA_ADDRS", "AFRDMA_PRELOAD"):
        os.environ.pop(k, None)
    os.environ.update(kw)


def listener(family, addr, port):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(8)
    return s


def expect_tcp(c, srv_sock):
    """@c connected to a TCP listener: plain TCP end to end, no RC QP."""
    assert proto(srv_sock) == TCP, f"listener has protocol {proto(srv_sock)}"
    assert proto(c) == TCP, f"client has protocol {proto(c)}"
    echo_check(c)
    qps = rc_qps()
    assert qps == 0, f"{qps} RC QPs for a connection that should be TCP"


def expect_rdma(c, srv_sock):
    """@c connected to an RDMA listener: IPPROTO_RDMA, carried by rxe0."""
    assert proto(srv_sock) == RDMA, f"listener has protocol {proto(srv_sock)}"
    assert proto(c) == RDMA, f"client has protocol {proto(c)}"
    with RdmaProof(min_pkts=100) as p:
        echo_check(c)
        p.sample()


def pair(family, addr, port, check):
    """A listener on addr:port and a client to it, under the current
    variables; @check(client, listener) judges them."""
    srv = EchoServer(listener(family, addr, port))
    try:
        with socket.socket(family, socket.SOCK_STREAM) as c:
            c.connect((addr, port))
            check(c, srv.srv)
    finally:
        srv.close()


def ports():
    p_in, p_out = fresh_port(), fresh_port()
    setenv(AFRDMA_PORTS=f"1, {p_in},65000-65010")
    pair(socket.AF_INET, ADDR, p_out, expect_tcp)
    pair(socket.AF_INET, ADDR, p_in, expect_rdma)
    p_in = fresh_port()
    setenv(AFRDMA_PORTS=f"{p_in}-{p_in + 1}")
    pair(socket.AF_INET6, ADDR6, p_in, expect_rdma)


def addrs():
    setenv(AFRDMA_ADDRS="fd99::/64")
    pair(socket.AF_INET, ADDR, fresh_port(), expect_tcp)
    pair(socket.AF_INET6, ADDR6, fresh_port(), expect_rdma)
    p_in = fresh_port()
    setenv(AFRDMA_ADDRS="10.99.0.0/24", AFRDMA_PORTS=str(p_in))
    pair(socket.AF_INET, ADDR, p_in, expect_rdma)
    pair(socket.AF_INET6, ADDR6, p_in, expect_tcp)


def mapped_and_wildcard():
    # An IPv4 entry matches an IPv4-mapped peer; a wildcard bind matches.
    setenv(AFRDMA_ADDRS=ADDR)
    p_in = fresh_port()
    srv = EchoServer(listener(socket.AF_INET, "0.0.0.0", p_in))
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as c:
            c.connect(("::ffff:" + ADDR, p_in))
            expect_rdma(c, srv.srv)
    finally:
        srv.close()


def off_switch():
    p_in = fresh_port()
    setenv(AFRDMA_PRELOAD="0", AFRDMA_PORTS=str(p_in))
    pair(socket.AF_INET, ADDR, p_in, expect_tcp)


OPTS = [(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1),
        (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1),
        (socket.SOL_SOCKET, socket.SO_RCVBUF, 65536),
        (socket.SOL_SOCKET, socket.SO_SNDBUF, 98304),
        (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
        (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 17)]


def options_carried():
    # Set before a non-blocking connect outside the filter: the TCP socket
    # that replaces the RDMA one has the same fd, flags and options as a TCP
    # socket given them would have, and the defaults of a TCP socket for
    # what was not set.
    p_in, p_out = fresh_port(), fresh_port()
    setenv(AFRDMA_PRELOAD="0")
    ref = socket.socket()
    for lvl, opt, val in OPTS:
        ref.setsockopt(lvl, opt, val)
    plain = socket.socket()
    setenv(AFRDMA_PORTS=str(p_in))
    srv = EchoServer(listener(socket.AF_INET, ADDR, p_out))
    try:
        # TCP grows an unlocked send buffer on connect: compare connected.
        plain.connect((ADDR, p_out))
        assert proto(plain) == TCP
        c = socket.socket()
        bare = socket.socket()
        assert proto(c) == RDMA and proto(bare) == RDMA, "not created as RDMA"
        fd = c.fileno()
        for lvl, opt, val in OPTS:
            c.setsockopt(lvl, opt, val)
        c.setblocking(False)
        err = c.connect_ex((ADDR, p_out))
        assert err in (0, 115), f"connect: {os.strerror(err)}"   # EINPROGRESS
        bare.connect((ADDR, p_out))
        c.setblocking(True)
        assert c.fileno() == fd
        assert c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
        c.setblocking(False)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        assert flags & os.O_NONBLOCK, "O_NONBLOCK lost"
        assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC, "FD_CLOEXEC lost"
        c.setblocking(True)
        for lvl, opt, _ in OPTS:
            got, want = c.getsockopt(lvl, opt), ref.getsockopt(lvl, opt)
            assert got == want, f"option {lvl}/{opt}: {got}, a TCP socket {want}"
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            got = bare.getsockopt(socket.SOL_SOCKET, opt)
            want = plain.getsockopt(socket.SOL_SOCKET, opt)
            assert got == want, f"unset option {opt}: {got}, TCP's default {want}"
        expect_tcp(c, srv.srv)
        c.close()
        bare.close()
    finally:
        srv.close()
        ref.close()
        plain.close()


def bind_then_connect():
    # A client that binds to port 0 first is TCP at bind (port 0 is in no
    # list) and RDMA again at connect to a port in the list, still bound
    # to the address it chose.
    p_in = fresh_port()
    setenv(AFRDMA_PORTS=str(p_in))
    srv = EchoServer(listener(socket.AF_INET, ADDR, p_in))
    try:
        with socket.socket() as c:
            c.bind((ADDR, 0))
            assert proto(c) == TCP, "a port-0 bind outside AFRDMA_PORTS is not TCP"
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.connect((ADDR, p_in))
            assert c.getsockname()[0] == ADDR
            assert c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
            expect_rdma(c, srv.srv)
    finally:
        srv.close()


def main():
    if "libafrdma-preload" not in os.environ.get("LD_PRELOAD", ""):
        here = os.path.dirname(os.path.abspath(__file__))
        run = os.path.join(here, "..", "tools", "afrdma-run")
        os.execv(run, [run, sys.executable] + sys.argv)
    return tap([("filter_ports", ports),
                ("filter_addrs", addrs),
                ("filter_mapped_and_wildcard", mapped_and_wildcard),
                ("filter_off_switch", off_switch),
                ("filter_options_carried", options_carried),
                ("filter_bind_then_connect", bind_then_connect)])


if __name__ == "__main__":
    sys.exit(main())
