#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Echo over socket(AF_INET[6], SOCK_STREAM, IPPROTO_RDMA) from plain Python:
# no afrdma header, only the protocol number the module publishes.  The
# connection's RC QPs must show in `rdma resource show qp` while it is up.
# Prints TAP.

import os
import socket
import sys
import threading

from afrdma_tap import param, rc_qps, tap


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
    return tap([("python_echo_ipv4",
                 lambda: echo(socket.AF_INET, os.environ.get("AFRDMA_ADDR", "10.99.0.1"), proto)),
                ("python_echo_ipv6",
                 lambda: echo(socket.AF_INET6, os.environ.get("AFRDMA_ADDR6", "fd99::1"), proto))])


if __name__ == "__main__":
    sys.exit(main())
