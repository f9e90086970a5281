#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Echo over socket(AF_INET[6], SOCK_STREAM, IPPROTO_RDMA) from plain Python:
# no afrdma header, only the protocol number the module publishes.  The
# connection's RC QPs must show in `rdma resource show qp` while it is up.
# Prints TAP.

import os
import socket
import subprocess
import sys
import threading


def param(name):
    with open(f"/sys/module/afrdma/parameters/{name}") as f:
        return int(f.read())


def rc_qps():
    out = subprocess.run(["rdma", "resource", "show", "qp"], check=True,
                         capture_output=True, text=True).stdout
    return sum("type RC" in line for line in out.splitlines())


def echo(family, addr, proto):
    srv = socket.socket(family, socket.SOCK_STREAM, proto)
    srv.bind((addr, 0))
    srv.listen(4)
    port = srv.getsockname()[1]

    def serve():
        conn, _ = srv.accept()
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                conn.sendall(data)

    t = threading.Thread(target=serve)
    t.start()
    payload = os.urandom(200000)
    with socket.socket(family, socket.SOCK_STREAM, proto) as c:
        c.connect((addr, port))
        assert c.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL) == proto
        c.sendall(payload)
        back = b""
        while len(back) < len(payload):
            chunk = c.recv(65536)
            assert chunk, "EOF before the echo was complete"
            back += chunk
        assert back == payload, "echo differs"
        qps = rc_qps()
        assert qps >= 2, f"{qps} RC QPs in rdma resource show qp"
        c.shutdown(socket.SHUT_WR)
        assert c.recv(1) == b"", "no EOF after the server closed"
    t.join()
    srv.close()


def main():
    proto = param("ipproto")
    cases = [("ipv4", socket.AF_INET, os.environ.get("AFRDMA_ADDR", "10.99.0.1")),
             ("ipv6", socket.AF_INET6, os.environ.get("AFRDMA_ADDR6", "fd99::1"))]
    print("TAP version 13")
    print(f"1..{len(cases)}")
    failed = 0
    for i, (name, fam, addr) in enumerate(cases, 1):
        try:
            echo(fam, addr, proto)
            print(f"ok {i} python_echo_{name}")
        except Exception as e:  # report every failure as TAP, keep going
            failed += 1
            print(f"# {name}: {type(e).__name__}: {e}")
            print(f"not ok {i} python_echo_{name}")
    print(f"# Totals: pass:{len(cases) - failed} fail:{failed} xfail:0 xpass:0 skip:0 error:0")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
