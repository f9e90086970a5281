#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# The sock_diag dump of afrdma sockets (net/afrdma/nl_diag.c) as `afrdma ss
# -j` reads it: every socket with its state, transport, fallback reason and
# ports, RDMA and fallen-back TCP connections alike; ss's state and port
# filters; a dump of more sockets than fit one netlink message lists each
# once; another namespace's sockets stay out (of /proc/net/afrdma too);
# another user reads QP 0.  Under churn, /proc/net/afrdma read in small
# pieces and the dump each list every socket that lives throughout once.
# And `afrdma stats -j`, the counters over generic netlink, per namespace,
# and `afrdma devices`, the RDMA devices over the same family, with the
# namespace's connections on each.
# Runs as root; prints TAP.

import collections
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

from afrdma_tap import param, tap

NOBODY = 65534
ADDR = os.environ.get("AFRDMA_ADDR", "10.99.0.1")
ADDR6 = os.environ.get("AFRDMA_ADDR6", "fd99::1")
AF_RDMA, RDMA = param("family"), param("ipproto")
SOL_RDMA, AFRDMA_FALLBACK, AFRDMA_TRANSPORT = 299, 1, 2
TRANSPORT_RDMA, TRANSPORT_TCP = 1, 2
NETNS = "afrdma_diag"


def ss(*args, user=None):
    """`afrdma ss -j ARGS` as a list of sockets, keyed by inode too."""
    kw = {"user": user, "group": user, "extra_groups": []} if user else {}
    out = subprocess.run(["./tools/afrdma", "ss", "-j", *args], check=True,
                         capture_output=True, text=True, **kw).stdout
    return json.loads(out)


def by_ino(socks):
    return {s["inode"]: s for s in socks}


def ino(sock):
    return os.fstat(sock.fileno()).st_ino


def port(sock):
    return sock.getsockname()[1]


class Sockets:
    """An RDMA connection over IPv4, an RDMA listener over IPv6, an afrdma
    client fallen back to TCP (a plain TCP listener: rejected) and a plain
    TCP client accepted by the afrdma listener (peer-tcp), and an AF_RDMA
    socket never bound."""

    def __init__(self):
        self.all = []
        self.lsn = self.sock(socket.AF_INET, RDMA)
        self.lsn.bind((ADDR, 0))
        self.lsn.listen(8)
        self.cli = self.sock(socket.AF_INET, RDMA)
        self.cli.connect((ADDR, port(self.lsn)))
        self.srv = self.accept(self.lsn)
        for x in (self.cli, self.srv):
            assert x.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) == TRANSPORT_RDMA
        self.lsn6 = self.sock(socket.AF_INET6, RDMA)
        self.lsn6.bind((ADDR6, 0))
        self.lsn6.listen(1)
        self.tcp_lsn = self.sock(socket.AF_INET, 0)
        self.tcp_lsn.bind((ADDR, 0))
        self.tcp_lsn.listen(1)
        self.fb_cli = self.sock(socket.AF_INET, RDMA)
        self.fb_cli.connect((ADDR, port(self.tcp_lsn)))
        self.tcp_peer = self.accept(self.tcp_lsn)
        self.tcp_cli = self.sock(socket.AF_INET, 0)
        self.tcp_cli.connect((ADDR, port(self.lsn)))
        self.fb_srv = self.accept(self.lsn)
        for x in (self.fb_cli, self.fb_srv):
            assert x.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) == TRANSPORT_TCP
        self.unbound = self.sock(AF_RDMA, 0)
        self.rdma = [self.lsn, self.cli, self.srv, self.lsn6, self.fb_cli,
                     self.fb_srv, self.unbound]

    def sock(self, family, proto):
        s = socket.socket(family, socket.SOCK_STREAM, proto)
        self.all.append(s)
        return s

    def accept(self, lsn):
        s, _ = lsn.accept()
        self.all.append(s)
        return s

    def close(self):
        for s in self.all:
            s.close()


S = None


def listed():
    """Each socket once, with what it is."""
    got = by_ino(ss("-a"))
    lp, tp = port(S.lsn), port(S.tcp_lsn)
    want = {
        S.lsn: ("LISTEN", "inet", "-", "", lp, 0),
        S.cli: ("ESTAB", "inet", "rdma", "", port(S.cli), lp),
        S.srv: ("ESTAB", "inet", "rdma", "", lp, port(S.cli)),
        S.lsn6: ("LISTEN", "inet6", "-", "", port(S.lsn6), 0),
        S.fb_cli: ("ESTAB", "inet", "tcp", "rejected", port(S.fb_cli), tp),
        S.fb_srv: ("ESTAB", "inet", "tcp", "peer-tcp", lp, port(S.tcp_cli)),
        S.unbound: ("CLOSE", "rdma", "-", "", 0, 0),
    }
    for s, w in want.items():
        e = got.get(ino(s))
        assert e, f"inode {ino(s)} {w} not listed"
        have = (e["state"], e["family"], e["transport"], e["fallback"],
                e["sport"], e["dport"])
        assert have == w, (have, w)
        assert e["uid"] == 0, e
    for s in (S.tcp_lsn, S.tcp_peer, S.tcp_cli):
        assert ino(s) not in got, "a plain TCP socket is listed"
    c, v = got[ino(S.cli)], got[ino(S.srv)]
    assert c["local"] == f"{ADDR}:{port(S.cli)}" and c["peer"] == f"{ADDR}:{lp}", c
    assert got[ino(S.lsn6)]["local"] == f"[{ADDR6}]:{port(S.lsn6)}", got[ino(S.lsn6)]
    for e in (c, v):
        assert e["device"] == "rxe0" and e["qpn"] > 0, e
        r = e["rings"]
        assert 0 < r["rx_slots"] <= r["rx_max"] and 0 < r["tx_slots"] <= r["tx_max"], r
        assert r["rx_slot_size"] > 0 and "credits" in e and "zerocopy" in e, e
    assert c["qpn"] != v["qpn"], (c, v)
    assert "qpn" not in got[ino(S.fb_cli)] and "rings" not in got[ino(S.fb_cli)]


def filters():
    """state, sport and dport as ss takes them; -l; the default."""
    lp = port(S.lsn)
    inos = lambda *a: {e["inode"] for e in ss(*a)}
    assert inos("state", "listening") >= {ino(S.lsn), ino(S.lsn6)}
    assert all(e["state"] == "LISTEN" for e in ss("state", "listening"))
    assert inos("-l") == inos("state", "listening")
    assert inos("state", "established", "sport", "=", f":{lp}") == \
        {ino(S.srv), ino(S.fb_srv)}
    assert inos("sport", "=", f":{lp}", "state", "listening") == {ino(S.lsn)}
    assert inos("dport", "=", f":{lp}") == {ino(S.cli)}
    assert inos("state", "established", "state", "listening",
                "sport", "=", f":{lp}") == {ino(S.lsn), ino(S.srv), ino(S.fb_srv)}
    assert inos("state", "close") >= {ino(S.unbound)}
    default = inos()
    assert ino(S.cli) in default and ino(S.fb_cli) in default
    assert ino(S.lsn) not in default and ino(S.unbound) not in default
    assert all(e["state"] == "ESTAB" for e in ss("state", "established"))


def many():
    """300 sockets, several netlink messages' worth: each exactly once."""
    extra = []
    try:
        for i in range(300):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
            extra.append(s)
            if i % 3 == 0:
                s.bind((ADDR, 0))
                s.listen(1)
        got = ss("-a")
        seen = [e["inode"] for e in got]
        assert len(seen) == len(set(seen)), "a socket listed twice"
        missing = {ino(s) for s in extra} - set(seen)
        assert not missing, f"{len(missing)} sockets missing of {len(extra)}"
        # About 60 bytes or more each: far more than one 4 KiB message.
        assert len(got) >= 300
        lsn = {e["inode"] for e in got if e["state"] == "LISTEN"}
        assert {ino(s) for s in extra[::3]} <= lsn
    finally:
        for s in extra:
            s.close()


def proc_inodes(netns=None):
    """/proc/net/afrdma's inodes in file order, read 1 KiB at a time: the
    kernel picks up its walk again every few lines."""
    if netns:
        out = subprocess.run(["ip", "netns", "exec", netns, "cat",
                              "/proc/net/afrdma"], check=True,
                             capture_output=True).stdout
    else:
        fd = os.open("/proc/net/afrdma", os.O_RDONLY)
        try:
            out = b"".join(iter(lambda: os.read(fd, 1024), b""))
        finally:
            os.close(fd)
    lines = out.decode().splitlines()
    assert lines and lines[0].startswith("state local remote "), lines[:1]
    return [int(ln.split()[7]) for ln in lines[1:]]


def listing_faults(seen, want):
    """What is wrong with a listing @seen of inodes that should hold each
    of @want once: missing, twice, or any socket (with a file) twice."""
    count = collections.Counter(i for i in seen if i)
    missing = [i for i in want if count[i] == 0]
    twice = [i for i, n in count.items() if n > 1]
    return len(missing), len(twice)


def proc_churn():
    """A thread opens and closes afrdma sockets without pause, and every
    10 ms closes one of those made in between the long-lived ones (a walk
    that went on by position would skip sockets then); meanwhile every
    read of /proc/net/afrdma (in small pieces) and every `afrdma ss -a`
    dump lists each long-lived socket exactly once, and no socket twice."""
    LONG = 150
    keep, between, pool = [], [], collections.deque()

    def new(i):
        if i % 5 == 4:
            return socket.socket(AF_RDMA, socket.SOCK_STREAM, 0)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
        if i % 10 == 0:
            s.bind((ADDR, 0))
            s.listen(1)
        return s

    stop, errors, turns = threading.Event(), [], [0]

    def churn():
        rnd = random.Random(17)
        due = time.monotonic()
        try:
            while not stop.is_set():
                pool.append(new(turns[0]))
                if len(pool) > 50:
                    pool.popleft().close()
                turns[0] += 1
                if between and time.monotonic() >= due:
                    between.pop(rnd.randrange(len(between))).close()
                    due += 0.01
        except Exception as e:  # reported by the main thread
            errors.append(e)

    t = threading.Thread(target=churn)
    try:
        for i in range(LONG):
            keep.append(new(i))
            between.append(new(i + 1))
            between.append(new(i + 2))
        want = [ino(s) for s in keep + S.rdma]
        bad = {"proc": [0, 0, 0], "dump": [0, 0, 0]}  # listings, missed, twice

        def check(kind, seen):
            missing, twice = listing_faults(seen, want)
            b = bad[kind]
            b[0] += bool(missing or twice)
            b[1] += missing
            b[2] += twice

        proc_reads = dumps = 0
        t.start()
        end = time.monotonic() + 5
        while (between and t.is_alive()) or dumps < 10 or \
                time.monotonic() < end:
            assert time.monotonic() < end + 120, "churn too slow"
            for _ in range(4):
                check("proc", proc_inodes())
                proc_reads += 1
            check("dump", [e["inode"] for e in ss("-a")])
            dumps += 1
        stop.set()
        t.join(30)
        assert not errors, errors
        print(f"# {turns[0]} sockets churned; {proc_reads} reads of "
              f"/proc/net/afrdma, {dumps} dumps, {len(want)} long-lived; "
              f"wrong listings, sockets missed, sockets twice: {bad}")
        assert bad == {"proc": [0, 0, 0], "dump": [0, 0, 0]}, bad
        # Quiet again: both list the same sockets, once closes are done.
        wait_for(lambda: sorted(proc_inodes()) ==
                 sorted(e["inode"] for e in ss("-a")), "/proc and dump agree",
                 timeout=30)
    finally:
        stop.set()
        if t.is_alive():
            t.join(30)
        for s in keep + between + list(pool):
            s.close()


def other_netns():
    """A socket of another network namespace is listed there, not here."""
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    child = None
    try:
        child = subprocess.Popen(
            ["ip", "netns", "exec", NETNS, sys.executable, "-c",
             "import os, socket, sys\n"
             f"s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, {RDMA})\n"
             "print(os.fstat(s.fileno()).st_ino, flush=True)\n"
             "sys.stdin.readline()\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        theirs = int(child.stdout.readline())
        assert theirs not in by_ino(ss("-a")), "another netns's socket shown"
        out = subprocess.run(["ip", "netns", "exec", NETNS, "./tools/afrdma",
                              "ss", "-j", "-a"], check=True, capture_output=True,
                             text=True).stdout
        there = by_ino(json.loads(out))
        assert theirs in there, there
        assert ino(S.cli) not in there, "this netns's socket shown there"
        # /proc/net/afrdma alike, here and there
        assert theirs not in proc_inodes(), "another netns's socket in /proc"
        there = proc_inodes(NETNS)
        assert theirs in there, there
        mine = {ino(s) for s in S.rdma}
        assert not mine & set(there), "this netns's sockets in its /proc"
    finally:
        if child:
            child.stdin.write("\n")
            child.stdin.close()
            child.wait(30)
        subprocess.run(["ip", "netns", "del", NETNS], check=False)


def proc_stats():
    with open("/proc/net/afrdma_stat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def afrdma_stats(netns=None):
    cmd = ["./tools/afrdma", "stats", "-j"]
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    return json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                     text=True).stdout)


def stats():
    """`afrdma stats -j` over generic netlink: the counters of
    /proc/net/afrdma_stat, of this namespace only."""
    before = proc_stats()
    got = afrdma_stats()
    after = proc_stats()
    assert got.keys() == before.keys(), set(got) ^ set(before)
    for k, v in got.items():
        if not k.startswith("Curr"):  # gauges, not counters
            assert before[k] <= v <= after[k], (k, before[k], v, after[k])
    # The RDMA connection held here, both ends.
    assert got["CurrConnections"] >= 2 and got["ActiveOpens"] >= 1, got
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        there = afrdma_stats(NETNS)
    finally:
        subprocess.run(["ip", "netns", "del", NETNS], check=False)
    assert there.keys() == got.keys(), set(there) ^ set(got)
    assert not any(there.values()), there


def afrdma_devices(*args, netns=None):
    cmd = ["./tools/afrdma", "devices", *args]
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


def rxe0(netns=None):
    got = [d for d in json.loads(afrdma_devices("-j", netns=netns))
           if d["name"] == "rxe0"]
    assert len(got) <= 1, got
    return got[0] if got else None


def sysfs(path):
    with open(path) as f:
        return f.read().strip()


def wait_for(cond, what, timeout=120):
    """Until cond() holds; a slow guest tears connections down late."""
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"{what}: not after {timeout} s"
        time.sleep(0.1)


def rdma_on_rxe0():
    """This namespace's sockets on an RDMA connection over rxe0."""
    return sum(e["transport"] == "rdma" and e.get("device") == "rxe0"
               for e in ss("-a"))


def devices():
    """`afrdma devices` (-j and text) over generic netlink: rxe0 with its
    identity, its port and netdev, and this namespace's connections on it,
    which a connection made adds two to (both ends are here) and its close
    takes away; another namespace sees none of them, nor the netdev."""
    base = "/sys/class/infiniband/rxe0"
    ndev = sysfs(f"{base}/ports/1/gid_attrs/ndevs/0")
    d = rxe0()
    assert d, "rxe0 not listed"
    assert d["node_guid"] == sysfs(f"{base}/node_guid"), d
    idx = subprocess.run(["rdma", "dev", "show", "rxe0"], check=True,
                         capture_output=True, text=True).stdout.split(":")[0]
    assert d["index"] == int(idx), (d, idx)
    assert len(d["ports"]) == 1, d
    p = d["ports"][0]
    assert p["port"] == 1 and p["state"] == "ACTIVE", p
    assert p["link_layer"] == "Ethernet", p
    assert p["active_mtu"] in (256, 512, 1024, 2048, 4096), p
    assert p["netdev"] == ndev, (p, ndev)
    assert p["ifindex"] == int(sysfs(f"/sys/class/net/{ndev}/ifindex")), p

    # Once earlier connections are gone: S's both ends, and any others here.
    wait_for(lambda: rxe0()["conns"] == rdma_on_rxe0(),
             "conns = RDMA sockets on rxe0")
    before = rxe0()["conns"]
    assert before >= 2, before
    text = afrdma_devices()
    print("".join(f"# {ln}\n" for ln in text.splitlines()), end="")
    line = [ln.split() for ln in text.splitlines() if ln.startswith("rxe0 ")]
    assert len(line) == 1, line
    # sysfs's columns first, as before: DEVICE PORT STATE LINK NETDEV
    assert line[0] == ["rxe0", "1", "4:", "ACTIVE", "Ethernet", ndev,
                       str(p["active_mtu"]), str(before), d["node_guid"]], line

    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM, RDMA)
    srv = None
    try:
        lsn.bind((ADDR, 0))
        lsn.listen(1)
        cli.connect((ADDR, port(lsn)))
        srv, _ = lsn.accept()
        assert cli.getsockopt(SOL_RDMA, AFRDMA_TRANSPORT) == TRANSPORT_RDMA
        assert rxe0()["conns"] == before + 2, (rxe0(), before)
    finally:
        for x in (cli, srv, lsn):
            if x:
                x.close()
    wait_for(lambda: rxe0()["conns"] == before, "conns back after close")

    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        there = rxe0(NETNS)
    finally:
        subprocess.run(["ip", "netns", "del", NETNS], check=False)
    mode = subprocess.run(["rdma", "system", "show"], check=True,
                          capture_output=True, text=True).stdout
    if "netns exclusive" in mode:
        assert there is None, there
    else:
        assert there and there["conns"] == 0, there
        assert "netdev" not in there["ports"][0], there


def qpn_hidden():
    """65534 reads QP 0 for root's connection, everything else alike."""
    mine = by_ino(ss())
    theirs = by_ino(ss(user=NOBODY))
    for s in (S.cli, S.srv):
        m, t = mine[ino(s)], theirs[ino(s)]
        assert m["qpn"] > 0 and t["qpn"] == 0, (m, t)
        assert t["device"] == "rxe0" and t["rings"] == m["rings"], (m, t)
        assert {k: v for k, v in t.items() if k not in ("qpn", "credits")} == \
            {k: v for k, v in m.items() if k not in ("qpn", "credits")}, (m, t)


if __name__ == "__main__":
    S = Sockets()
    try:
        rc = tap([("listed", listed), ("filters", filters), ("many", many),
                  ("proc_churn", proc_churn), ("other_netns", other_netns),
                  ("qpn_hidden", qpn_hidden),
                  ("stats", stats), ("devices", devices)])
    finally:
        S.close()
    sys.exit(rc)
