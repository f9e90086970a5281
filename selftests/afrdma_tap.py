# SPDX-License-Identifier: GPL-2.0
#
# Shared by the Python selftests: the numbers the loaded module uses, the
# counters that prove traffic crossed RDMA (rxe0's sent packets, the RC QPs
# present), a threaded echo server and TAP output with a "# Totals" line.

import os
import subprocess
import threading
import traceback


class Skip(Exception):
    """Raised by a test case that cannot run here; the message says why."""


def param(name):
    with open(f"/sys/module/afrdma/parameters/{name}") as f:
        return int(f.read())


def rc_qps():
    out = subprocess.run(["rdma", "resource", "show", "qp"], check=True,
                         capture_output=True, text=True).stdout
    return sum("type RC" in line for line in out.splitlines())


def rxe_sent_pkts():
    with open("/sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts") as f:
        return int(f.read())


class RdmaProof:
    """with RdmaProof(min_pkts, min_qps) as p: ... p.sample() while the
    connections are up; on exit, fails unless rxe0 sent at least min_pkts
    packets and some sample saw at least min_qps RC QPs."""

    def __init__(self, min_pkts, min_qps=2):
        self.min_pkts, self.min_qps, self.qps = min_pkts, min_qps, 0

    def sample(self):
        self.qps = max(self.qps, rc_qps())

    def __enter__(self):
        self.before = rxe_sent_pkts()
        return self

    def __exit__(self, exc_type, *_):
        if exc_type:
            return False
        sent = rxe_sent_pkts() - self.before
        print(f"# rxe0 sent {sent} packets (need {self.min_pkts}), "
              f"up to {self.qps} RC QPs (need {self.min_qps})")
        assert sent >= self.min_pkts and self.qps >= self.min_qps, \
            "the traffic did not cross RDMA"
        return False


class EchoServer:
    """Echoes every connection accepted on the listening socket @srv, each
    in its own thread, until close()."""

    def __init__(self, srv):
        self.srv = srv
        self.stop = threading.Event()
        # Polled: shutdown() does not wake an afrdma accept() (TCP's does).
        srv.settimeout(0.2)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.srv.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        self.srv.close()


def echo_check(sock, rounds=50, size=1000):
    """Sends @rounds messages of @size bytes on @sock and checks each echo."""
    for i in range(rounds):
        msg = bytes([i % 256]) * size
        sock.sendall(msg)
        back = b""
        while len(back) < size:
            chunk = sock.recv(size - len(back))
            assert chunk, "EOF before the echo was complete"
            back += chunk
        assert back == msg, "echo differs"


def tap(cases):
    """Runs each (name, function) and prints TAP; returns the exit status."""
    print("TAP version 13")
    print(f"1..{len(cases)}", flush=True)
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for i, (name, fn) in enumerate(cases, 1):
        try:
            fn()
            print(f"ok {i} {name}")
            counts["pass"] += 1
        except Skip as e:
            print(f"ok {i} {name} # SKIP {e}")
            counts["skip"] += 1
        except Exception as e:  # report every failure as TAP, keep going
            where = traceback.extract_tb(e.__traceback__)[-1]
            print(f"# {name}: {type(e).__name__}: {e} "
                  f"({os.path.basename(where.filename)}:{where.lineno})")
            print(f"not ok {i} {name}")
            counts["fail"] += 1
        print(end="", flush=True)
    print(f"# Totals: pass:{counts['pass']} fail:{counts['fail']} xfail:0 "
          f"xpass:0 skip:{counts['skip']} error:0")
    return 1 if counts["fail"] else 0
