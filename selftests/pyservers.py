#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# Python's own servers over socket(AF_INET[6], SOCK_STREAM, IPPROTO_RDMA),
# no shim: asyncio streams (start_server(sock=...) and, since glibc's
# getaddrinfo refuses protocol numbers above 255, a client socket connected
# first and then handed to open_connection(sock=...)), and a
# socketserver.ThreadingTCPServer subclass.  Four clients each at once; the
# RC QPs present and rxe0's packet counter prove the traffic crossed RDMA.
# Prints TAP.

import asyncio
import os
import socket
import socketserver
import sys
import threading

from afrdma_tap import RdmaProof, param, tap

RDMA = param("ipproto")
CLIENTS, ROUNDS = 4, 100
BLOB = os.urandom(1 << 20)
FAMILIES = {"ipv4": (socket.AF_INET, os.environ.get("AFRDMA_ADDR", "10.99.0.1")),
            "ipv6": (socket.AF_INET6, os.environ.get("AFRDMA_ADDR6", "fd99::1"))}


def line(client, k):
    return f"client {client} line {k} ".encode() * 8 + b"\n"


def proof():
    # Every line is a message each way; the blob goes both ways in packets
    # of at most 4096 bytes.  Both ends of every connection have a QP.
    return RdmaProof(min_pkts=CLIENTS * (2 * ROUNDS + 2 * len(BLOB) // 4096),
                     min_qps=2 * CLIENTS)


async def asyncio_echo(family, addr):
    async def handle(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    lsock = socket.socket(family, socket.SOCK_STREAM, RDMA)
    lsock.bind((addr, 0))
    lsock.listen(CLIENTS)
    server = await asyncio.start_server(handle, sock=lsock)
    port = lsock.getsockname()[1]
    loop = asyncio.get_running_loop()
    all_up = asyncio.Barrier(CLIENTS + 1)

    async def client(i):
        s = socket.socket(family, socket.SOCK_STREAM, RDMA)
        await loop.run_in_executor(None, s.connect, (addr, port))
        reader, writer = await asyncio.open_connection(sock=s)
        for k in range(ROUNDS):
            writer.write(line(i, k))
            await writer.drain()
            assert await reader.readline() == line(i, k), "echo differs"
        await all_up.wait()
        writer.write(BLOB)
        await writer.drain()
        assert await reader.readexactly(len(BLOB)) == BLOB, "blob differs"
        writer.close()
        await writer.wait_closed()

    with proof() as p:
        clients = [asyncio.create_task(client(i)) for i in range(CLIENTS)]
        await asyncio.wait_for(all_up.wait(), 120)
        await loop.run_in_executor(None, p.sample)
        await asyncio.wait_for(asyncio.gather(*clients), 120)
    server.close()
    await server.wait_closed()


class RdmaThreadingServer(socketserver.ThreadingTCPServer):
    """A ThreadingTCPServer whose socket is IPPROTO_RDMA."""
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, server_address, handler, family):
        self.address_family = family
        socketserver.BaseServer.__init__(self, server_address, handler)
        self.socket = socket.socket(family, self.socket_type, RDMA)
        try:
            self.server_bind()
            self.server_activate()
        except BaseException:
            self.server_close()
            raise


class UpperHandler(socketserver.StreamRequestHandler):
    def handle(self):
        for data in self.rfile:
            self.wfile.write(data.upper())


def socketserver_upper(family, addr):
    srv = RdmaThreadingServer((addr, 0), UpperHandler, family)
    port = srv.server_address[1]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    all_up = threading.Barrier(CLIENTS + 1, timeout=120)
    errors = []

    def client(i):
        try:
            with socket.socket(family, socket.SOCK_STREAM, RDMA) as s:
                s.connect((addr, port))
                f = s.makefile("rwb")
                for k in range(ROUNDS):
                    f.write(line(i, k))
                    f.flush()
                    assert f.readline() == line(i, k).upper(), "reply differs"
                all_up.wait()
                f.write(BLOB.replace(b"\n", b" ") + b"\n")
                f.flush()
                assert f.readline() == BLOB.replace(b"\n", b" ").upper() + b"\n", \
                    "blob reply differs"
                f.close()
        except Exception as e:
            errors.append(e)
            all_up.abort()

    with proof() as p:
        clients = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        for c in clients:
            c.start()
        all_up.wait()
        p.sample()
        for c in clients:
            c.join(120)
        assert not errors, f"client: {errors[0]!r}"
    srv.shutdown()
    srv.server_close()
    t.join(10)


def main():
    cases = []
    for name, (family, addr) in FAMILIES.items():
        cases.append((f"asyncio_streams_{name}",
                      lambda f=family, a=addr: asyncio.run(asyncio_echo(f, a))))
    for name, (family, addr) in FAMILIES.items():
        cases.append((f"socketserver_threading_{name}",
                      lambda f=family, a=addr: socketserver_upper(f, a)))
    return tap(cases)


if __name__ == "__main__":
    sys.exit(main())
