#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# What an RDMA connection allocates (its structure, rings and buffers) is
# charged to the memory cgroup of the socket's owner: for a connection it
# opened, and for one its listener accepted (set up in rdma_cm's worker).
# A child process in a cgroup v2 group of its own opens N connections to
# its own listener over rxe0; the group's memory.current grows by at least
# half of what their initial buffers take, and falls by as much when they
# are closed and torn down.  The bounds are loose: memory.current moves in
# batches and counts other things too.  Prints TAP.

import os
import socket
import sys
import time

from afrdma_tap import Skip, param, tap

CG = "/sys/fs/cgroup"
GROUP = CG + "/afrdma-memcg"
ADDR = os.environ.get("AFRDMA_ADDR", "10.99.0.1")
SCALE = int(os.environ.get("AFRDMA_TIME_SCALE", "1"))
AF_RDMA, RDMA = param("family"), param("ipproto")
SOL_RDMA, AFRDMA_TRANSPORT, TRANSPORT_RDMA = 299, 2, 1
N = 16


def sysctl(name):
    with open(f"/proc/sys/net/afrdma/{name}") as f:
        return int(f.read())


def conns():
    with open("/proc/net/afrdma_stat") as f:
        return int(dict(line.split() for line in f)["CurrConnections"])


def current():
    with open(GROUP + "/memory.current") as f:
        return int(f.read())


def memcg_group():
    """Makes GROUP with the memory controller, or raises Skip."""
    try:
        with open(CG + "/cgroup.controllers") as f:
            if "memory" not in f.read().split():
                raise Skip("cgroup2 has no memory controller here")
    except FileNotFoundError:
        raise Skip("no cgroup2 mounted at /sys/fs/cgroup") from None
    try:
        with open(CG + "/cgroup.subtree_control", "w") as f:
            f.write("+memory")
    except OSError as e:
        raise Skip(f"cannot enable the memory controller: {e}") from None
    if os.path.isdir(GROUP):
        os.rmdir(GROUP)
    os.mkdir(GROUP)


def child(to_parent, from_parent):
    """In GROUP: a listener, N connections to it, then their close; one
    line to the parent after each step, one line back before the next."""
    with open(GROUP + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    w, r = os.fdopen(to_parent, "w"), os.fdopen(from_parent)
    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    lsn.bind((ADDR, 0))
    lsn.listen(N)
    print("listening", file=w, flush=True)
    r.readline()
    socks = []
    for _ in range(N):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
        c.connect(lsn.getsockname())
        a, _ = lsn.accept()
        socks += [c, a]
    ends = [s.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) for s in socks]
    print("rdma" if ends == [TRANSPORT_RDMA] * len(socks) else f"not rdma {ends}",
          file=w, flush=True)
    r.readline()
    for s in socks:
        s.close()
    print("closed", file=w, flush=True)
    r.readline()


def charged():
    memcg_group()
    per_conn = 2 * sysctl("initial_slots") * sysctl("slot_size")
    want = N * 2 * per_conn // 2
    base_conns = conns()
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(up_r)
        os.close(down_w)
        try:
            child(up_w, down_r)
        finally:
            os._exit(0)
    os.close(up_w)
    os.close(down_r)
    r, w = os.fdopen(up_r), os.fdopen(down_w, "w")
    try:
        assert r.readline().strip() == "listening", "the child failed"
        before = current()
        print("go", file=w, flush=True)
        line = r.readline().strip()
        assert line == "rdma", f"connections: {line or 'the child failed'}"
        up = current()
        print("close", file=w, flush=True)
        assert r.readline().strip() == "closed", "the child failed"
        # Wait for the teardown, then measure.
        end = time.monotonic() + 30 * SCALE
        while conns() > base_conns and time.monotonic() < end:
            time.sleep(0.1)
        down = current()
        print(f"# memory.current: {before} with the listener, {up} with "
              f"{2 * N} connections, {down} after their close; at least "
              f"{want} expected to come and go")
        assert up - before >= want, "the connections were not charged"
        assert up - down >= want, "closing them did not uncharge"
    finally:
        print("exit", file=w, flush=True)
        os.waitpid(pid, 0)
        os.rmdir(GROUP)


if __name__ == "__main__":
    sys.exit(tap([("connections_charged_to_memcg", charged)]))
