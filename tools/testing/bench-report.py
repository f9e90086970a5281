#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Host side of "make bench": parse what tools/testing/bench-guest.sh kept
# (cases.tsv and the tools' own output in raw/), and write the table to
# stdout, bench.json, bench.md (the table for Documentation/benchmarks.rst) and bench.png.
# With --smoke it checks only that every tool ran and gave a number (and
# that the zero-copy cases took the zero-copy paths), for "make check",
# and prints "# bench: PASSED FAILED SKIPPED" last.
#
# Debian's python3 (/usr/bin/python3) for python3-matplotlib.

import argparse
import json
import os
import re
import sys

USER_HZ = 100           # /proc/stat ticks, fixed by the kernel ABI
GIB = 1 << 30
SIZE_NAMES = {64: "64 B", 4096: "4 KiB", 65536: "64 KiB", 1048576: "1 MiB"}
TITLE_ENV = "under QEMU TCG, soft-RoCE"
# /proc/net/afrdma_stat's zero-copy counters, kept per zero-copy case
ZC_KEYS = ("ZeroCopySends", "ZeroCopyCopied", "SrcAvailSent",
           "RxZeroCopyReads", "RxZeroCopyBytes", "RxBounceReads")
# afrdma-perf one stream: copied (the matrix's "bw" row, or "copy"),
# MSG_ZEROCOPY with receive zero-copy off, and with it on
ZC_PATHS = (("copy", "copy"), ("zc", "MSG_ZEROCOPY, rx zero-copy off"),
            ("rzc", "MSG_ZEROCOPY, rx zero-copy on"))


def size_name(s):
    if s in SIZE_NAMES:
        return SIZE_NAMES[s]
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return "%d MiB" % (s >> 20)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def read_env(d):
    env = {}
    try:
        with open(os.path.join(d, "env.txt")) as f:
            for line in f:
                k, _, v = line.strip().partition(" ")
                env[k] = v
    except OSError:
        pass
    return env


def last_error(text):
    """The line most likely to say why a tool failed."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.search(r"error|fail|unable|refused|timed out|errno|cannot|"
                     r"denied|invalid|not |couldn't", ln, re.I):
            return ln[:200]
    return lines[-1][:200] if lines else "no output"


# ---- one parser per tool: fill rec with numbers, or return an error -------

def parse_perftest(rec, text):
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if "BW average[MB/sec]" in ln:
            for nxt in lines[i + 1:]:
                f = nxt.split()
                if len(f) >= 4 and f[0].isdigit():
                    mib = float(f[3])            # perftest's MB is 2^20
                    rec["mbps"] = mib * 1048576 * 8 / 1e6
                    rec["msgs_per_sec"] = float(f[4]) * 1e6 if len(f) > 4 else None
                    return None
        if "t_typical[usec]" in ln:
            hdr = ln.split()
            for nxt in lines[i + 1:]:
                f = nxt.split()
                if len(f) >= 8 and f[0].isdigit():
                    col = {h: j for j, h in enumerate(hdr)}
                    rec["lat_typical_us"] = float(f[col["t_typical[usec]"]])
                    rec["lat_p50_us"] = rec["lat_typical_us"]
                    rec["lat_avg_us"] = float(f[col["t_avg[usec]"]])
                    rec["lat_p99_us"] = float(f[7])
                    return None
    return last_error(text)


def parse_afrdma_perf(rec, text):
    if rec["test"] == "mem":
        if not re.search(r"^holding \d+", text, re.M):
            return last_error(text)
        x = dict(kv.split("=", 1) for kv in rec["extra"].split() if "=" in kv)
        if not all(x.get(k, "").isdigit() for k in ("avail0", "avail1", "slab0", "slab1")):
            return "no meminfo readings"
        n = rec["streams"]
        rec["conns"] = n
        rec["mem_kib_per_conn"] = (int(x["avail0"]) - int(x["avail1"])) / n
        rec["slab_kib_per_conn"] = (int(x["slab1"]) - int(x["slab0"])) / n
        return None
    objs = [ln for ln in text.splitlines() if ln.startswith("{")]
    if not objs:
        return last_error(text)
    j = json.loads(objs[-1])
    if j.get("failed"):
        return last_error(text)
    rec["seconds"] = j["seconds"]
    if rec["test"] in ("bw", "copy", "zc", "rzc"):
        rec["mbps"] = j["mbps"]
        rec["msgs_per_sec"] = j["msgs_per_sec"]
    elif rec["test"] == "lat":
        rec["lat_p50_us"] = j["lat_p50_us"]
        rec["lat_p99_us"] = j["lat_p99_us"]
        rec["round_trips"] = round(j["bytes"] / j["size"])
    elif rec["test"] == "connrate":
        rec["conns_per_sec"] = j["conns_per_sec"]
    if not any(rec.get(k) for k in ("mbps", "lat_p50_us", "conns_per_sec")):
        return "no traffic: " + last_error(text)
    return None


def parse_iperf3(rec, text):
    try:
        j = json.loads(text[text.index("{"):text.rindex("}") + 1])
    except ValueError:
        return last_error(text)
    if j.get("error"):
        return "iperf3: " + j["error"]
    s = j.get("end", {}).get("sum_received", {})
    if not s.get("bits_per_second"):
        return "iperf3: 0 bytes received"
    rec["mbps"] = s["bits_per_second"] / 1e6
    rec["seconds"] = s.get("seconds")
    return None


def parse_sockperf(rec, text):
    if rec["test"] == "lat":
        m = re.search(r"percentile 50\.000 =\s*([\d.]+)", text)
        m99 = re.search(r"percentile 99\.000 =\s*([\d.]+)", text)
        avg = re.search(r"avg-lat(?:ency)?=\s*([\d.]+)", text)
        if not m:
            return last_error(text)
        rec["lat_p50_us"] = float(m.group(1))
        rec["lat_p99_us"] = float(m99.group(1)) if m99 else None
        rec["lat_avg_us"] = float(avg.group(1)) if avg else None
        return None
    m = re.search(r"Message Rate is\s*([\d.]+)", text)
    bw = re.search(r"BandWidth is\s*[\d.]+ MBps \(([\d.]+) Mbps\)", text)
    if not m or not float(m.group(1)):
        return last_error(text)
    rec["msgs_per_sec"] = float(m.group(1))
    rec["mbps"] = float(bw.group(1)) if bw else rec["msgs_per_sec"] * rec["size"] * 8 / 1e6
    return None


def parse_rstream(rec, text):
    # name bytes xfers iters total time Gb/sec usec/xfer
    for ln in text.splitlines():
        f = ln.split()
        if len(f) == 8 and f[5].endswith("s") and f[0] != "name":
            try:
                gbps, usec = float(f[6]), float(f[7])
                secs = float(f[5][:-1])
            except ValueError:
                continue
            rec["seconds"] = secs
            if rec["test"] == "lat":
                rec["lat_p50_us"] = usec     # rstream gives a mean only
                rec["lat_avg_us"] = usec
            else:
                rec["mbps"] = gbps * 1000
            return None
    return last_error(text)


PARSERS = {
    "ib_write_bw": parse_perftest, "ib_send_bw": parse_perftest,
    "ib_send_lat": parse_perftest, "afrdma-perf": parse_afrdma_perf,
    "iperf3": parse_iperf3, "sockperf": parse_sockperf,
    "rstream": parse_rstream, "rds-perf": parse_afrdma_perf,
}


def cpu_per_gib(rec, c, ncpu):
    """CPU seconds (all of the guest: both ends and rxe's kernel work) per
    GiB moved: busy = CPUs x wall time - idle, over the window in the middle
    of the run when the client still ran then, else over the whole run."""
    if not rec.get("mbps"):
        return
    idle = [int(x) for x in c[7:11]]
    w = [float(x) for x in c[11:15]]
    if c[15] == "1" and w[2] > w[1]:
        i0, i1 = 1, 2
        rec["cpu_window"] = "steady"
    else:
        i0, i1 = 0, 3
        rec["cpu_window"] = "whole run"
    wall = w[i1] - w[i0]
    busy = max(0.0, ncpu * wall - (idle[i1] - idle[i0]) / USER_HZ)
    rec["cpu_util"] = busy / wall / ncpu if wall > 0 else None
    moved = rec["mbps"] * 1e6 / 8 * wall
    if moved > 0:
        rec["cpu_s_per_gib"] = busy / (moved / GIB)


def zc_path_error(rec, env):
    """Whether a zero-copy case took the path it is named for, from its
    counters: MSG_ZEROCOPY sends from the user's pages at zerocopy_min and
    above; with receive zero-copy off no region offered or READ, with it
    on regions offered and READ into the user's buffer at rx_zerocopy_min
    and above (and none below)."""
    x = rec.get("counters")
    if x is None:
        return "no zero-copy counters recorded"
    zmin = int(env.get("zerocopy_min") or 16384)
    rmin = int(env.get("rx_zerocopy_min") or 65536)
    bad = []
    if rec["size"] >= zmin and not x.get("ZeroCopySends"):
        bad.append("ZeroCopySends=0")
    rx = rec["test"] == "rzc" and rmin and rec["size"] >= rmin
    for k in ("SrcAvailSent", "RxZeroCopyBytes"):
        if rx and not x.get(k):
            bad.append("%s=0" % k)
        elif not rx and x.get(k):
            bad.append("%s=%d" % (k, x[k]))
    if not bad:
        return None
    return "not the %s path: %s" % (rec["test"], ", ".join(bad))


# whose RC QPs a peer's are, as "rdma resource show qp" names them
PEER_QP_OWNER = {"smc": "smc", "rds": "rdma_cm"}


def read_peers(d):
    """peers.tsv: the cases the peers could not run and why, and how many
    SMC connections fell back to TCP (None: not known)."""
    skips, fb = [], None
    try:
        with open(os.path.join(d, "peers.tsv")) as f:
            for line in f:
                c = line.rstrip("\n").split("\t")
                if c[0] == "skip" and len(c) >= 4:
                    skips.append({"transport": c[1], "test": c[2], "reason": c[3]})
                elif c[0] == "smc_fallbacks" and len(c) >= 2 and c[1].isdigit():
                    fb = int(c[1])
    except OSError:
        pass
    return skips, fb


def qp_owners(path):
    """RC QPs by owner (the comm rdma shows: a module's name in brackets
    for a kernel user), from "rdma resource show qp"."""
    own = {}
    try:
        with open(path) as f:
            for ln in f:
                m = re.search(r"\btype RC\b.*\bcomm (\S+)", ln)
                if m:
                    k = m.group(1).strip("[]")
                    own[k] = own.get(k, 0) + 1
    except OSError:
        return None
    return own


def load(d, ncpu, idle_qps, env):
    recs = []
    with open(os.path.join(d, "cases.tsv")) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            if len(c) < 17:
                continue
            rec = {"id": int(c[0]), "tool": c[1], "transport": c[2],
                   "test": c[3], "size": int(c[4]), "streams": int(c[5]),
                   "rc": int(c[6]), "extra": c[16]}
            try:
                with open(os.path.join(d, "raw", c[0] + ".out"),
                          errors="replace") as o:
                    text = o.read()
            except OSError:
                text = ""
            err = PARSERS[rec["tool"]](rec, text)
            m = re.search(r"\bqps=(\d+)", rec["extra"])
            if m:
                rec["rdma_qps"] = int(m.group(1)) - idle_qps
            x = dict(kv.split("=", 1) for kv in rec["extra"].split() if "=" in kv)
            # the peers' held connections: QPs on every device, and whose
            if x.get("qps_all", "").isdigit() and x.get("qps0", "").isdigit():
                rec["rdma_qps"] = int(x["qps_all"]) - int(x["qps0"])
                rec["qp_owners"] = qp_owners(os.path.join(d, "raw", c[0] + ".qp"))
                # The peers share their QPs between connections and keep
                # them after the last one closes (SMC's link groups, RDS's
                # connection per address pair): all they own while held.
                own = PEER_QP_OWNER.get(rec["transport"])
                if own and rec["qp_owners"] is not None:
                    rec["rdma_qps"] = rec["qp_owners"].get(own, 0)
            if all(k in x for k in ZC_KEYS):
                rec["counters"] = {k: int(x[k]) for k in ZC_KEYS}
            if err is None and rec["test"] in ("zc", "rzc"):
                err = zc_path_error(rec, env)
            # The preload falls back to TCP when rsockets fails: no QP in
            # use means these were TCP numbers.
            if (err is None and rec["transport"] == "rsockets" and
                    rec["tool"] != "rstream" and rec["test"] != "connrate" and
                    rec.get("rdma_qps") == 0):
                err = "no RDMA QP in use: the rsockets preload fell back to TCP"
            if err is None and rec["rc"] != 0:
                err = "exit %d: %s" % (rec["rc"], last_error(text))
            # SMC falls back to TCP silently: then these are not SMC-R's
            fb = int(x.get("smc_fallbacks", "0") or 0)
            if fb:
                rec["smc_fallbacks"] = fb
            if err is None and rec["transport"] == "smc" and fb:
                err = ("%d SMC connections fell back to TCP "
                       "(smc_switch_to_fallback): not SMC-R numbers" % fb)
            if (err is None and rec["transport"] == "smc" and rec["test"] == "mem" and
                    rec.get("qp_owners") is not None and not rec["qp_owners"].get("smc")):
                err = "no RC QP owned by smc: not SMC-R"
            if err is not None and rec["rc"] == 124:
                err = "timed out: " + err
            rec["status"] = "ok" if err is None else "failed"
            if err is not None:
                rec["error"] = err
            else:
                cpu_per_gib(rec, c, ncpu)
            del rec["extra"]
            recs.append(rec)
    return recs


# ---- lookups over the records -----------------------------------------------

def find(recs, tool, tr, test, size, streams=1):
    for r in recs:
        if (r["tool"], r["transport"], r["test"], r["size"],
                r["streams"]) == (tool, tr, test, size, streams):
            return r
    return None


def val(recs, key, *a, **k):
    r = find(recs, *a, **k)
    return r.get(key) if r and r["status"] == "ok" else None


def fmt(v, nd=0):
    if v is None:
        return "-"
    if nd == 0 and abs(v) >= 100:
        return "{:,.0f}".format(v).replace(",", " ")
    return "%.*f" % (max(nd, 1) if abs(v) < 100 else nd, v)


def cell(r, key, nd=0):
    if r is None:
        return "-"
    if r["status"] != "ok":
        return "FAILED"
    return fmt(r.get(key), nd)


TR_NAME = {"verbs": "raw verbs", "af_rdma": "afrdma", "tcp": "TCP",
           "rsockets": "rsockets", "smc": "SMC-R", "rds": "RDS"}


def label(r):
    return "%s %s" % (r["tool"], TR_NAME.get(r["transport"], r["transport"]))


def table(head, rows):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    out = ["| " + " | ".join(str(h).ljust(w[i]) for i, h in enumerate(head)) + " |",
           "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    for row in rows:
        out.append("| " + " | ".join(str(x).ljust(w[i]) for i, x in enumerate(row)) + " |")
    return "\n".join(out)


def row_keys(recs, test):
    seen = []
    for r in recs:
        k = (r["tool"], r["transport"], r["streams"])
        if r["test"] == test and k not in seen:
            seen.append(k)
    return seen


def report(recs, env):
    # ib_write_bw's extra sizes are for the zero-copy table
    sizes = sorted({r["size"] for r in recs
                    if r["test"] == "bw" and r["tool"] != "ib_write_bw"})
    out = []
    out.append("afrdma bench, %s, kernel %s, %s (rxe0 on veth MTU %s, "
               "active_mtu %s), %s CPUs" % (
                   env.get("date", "?"), env.get("kernel", "?"), TITLE_ENV,
                   env.get("veth_mtu", "?"), env.get("active_mtu", "?"),
                   env.get("cpus", "?")))
    out.append("Compare rows with each other only: everything here is 10-50x "
               "slower than hardware.")
    out.append("")
    out.append("Bandwidth, Mbit/s, and CPU seconds per GiB moved (whole guest: "
               "both ends and rxe), by payload size and parallel streams")
    rows = []
    for tool, tr, p in row_keys(recs, "bw"):
        row = ["%s %s" % (tool, TR_NAME.get(tr, tr)), p]
        for s in sizes:
            r = find(recs, tool, tr, "bw", s, p)
            if r is None:
                row.append("-")
            elif r["status"] != "ok":
                row.append("FAILED")
            else:
                row.append("%s (%s)" % (fmt(r.get("mbps"), 1),
                                        fmt(r.get("cpu_s_per_gib"), 1)))
        rows.append(row)
    out.append(table(["tool, transport", "streams"] + [size_name(s) for s in sizes], rows))
    out.append("rstream echoes: its rate counts both directions.  "
               "sockperf tp: 64 B only.")
    out.append("")

    out.append("64 B messages per second, one stream")
    rows = []
    for tool, tr, p in row_keys(recs, "bw"):
        r = find(recs, tool, tr, "bw", 64, 1)
        if r is not None and p == 1 and tool != "rstream":
            rows.append([label(r), cell(r, "msgs_per_sec")])
    out.append(table(["tool, transport", "msg/s"], rows))
    out.append("")

    out.append("64 B ping-pong latency, one way (half the round trip), us")
    rows = []
    for r in recs:
        if r["test"] == "lat":
            rows.append([label(r), cell(r, "lat_p50_us", 1),
                         cell(r, "lat_p99_us", 1), cell(r, "lat_avg_us", 1)])
    out.append(table(["tool, transport", "p50 (perftest: typical)", "p99",
                      "average"], rows))
    out.append("rstream prints a mean only (shown as p50 and average).")
    out.append("")

    out.append("Connection setup (connect, exchange, close), and memory per "
               "idle connection (both ends, server thread included), KiB")
    rows = []
    trs = [t for t in ("af_rdma", "tcp", "rsockets", "smc", "rds")
           if any(r["transport"] == t and r["test"] in ("connrate", "mem") for r in recs)]
    ns = sorted({r["streams"] for r in recs if r["test"] == "mem"})
    for t in trs:
        tool = "rds-perf" if t == "rds" else "afrdma-perf"
        row = [TR_NAME[t], cell(find(recs, tool, t, "connrate", 0), "conns_per_sec", 1)]
        for n in ns:
            r = find(recs, tool, t, "mem", 0, n)
            if r is None:
                row.append("-")
            elif r["status"] != "ok":
                row.append("FAILED")
            else:
                row.append("%s (slab %s)" % (fmt(r["mem_kib_per_conn"], 1),
                                             fmt(r["slab_kib_per_conn"], 1)))
        rows.append(row)
    out.append(table(["transport (afrdma-perf; RDS: rds-perf)", "conn/s"] +
                     ["MemAvailable drop, N=%d" % n for n in ns], rows))
    out.append("RDS: N sockets that each exchanged a message, not connections.")
    out.append("")

    failed = [r for r in recs if r["status"] != "ok"]
    if failed:
        out.append("Failed cases, as they happened")
        for r in failed:
            out.append("  %s %s size %s streams %d: %s" % (
                label(r), r["test"], size_name(r["size"]) if r["size"] else "-",
                r["streams"], r["error"]))
        out.append("")
    return "\n".join(out)


def ratio(a, b):
    return a / b if a is not None and b else None


def zc_find(recs, path, s):
    r = find(recs, "afrdma-perf", "af_rdma", path, s)
    if r is None and path == "copy":
        r = find(recs, "afrdma-perf", "af_rdma", "bw", s)
    return r


def zc_rows(recs):
    """Issue 5's rows: per size and path, bandwidth and CPU per GiB, against
    ib_write_bw's bandwidth and the copy path's CPU per GiB."""
    rows = []
    sizes = sorted({r["size"] for r in recs if r["test"] in ("zc", "rzc")})
    for s in sizes:
        v = val(recs, "mbps", "ib_write_bw", "verbs", "bw", s)
        c = zc_find(recs, "copy", s)
        ccpu = c.get("cpu_s_per_gib") if c and c["status"] == "ok" else None
        for path, name in ZC_PATHS:
            r = zc_find(recs, path, s)
            if r is None:
                continue
            ok = r["status"] == "ok"
            mbps = r.get("mbps") if ok else None
            cpu = r.get("cpu_s_per_gib") if ok else None
            rows.append({"size": s, "path": path, "name": name,
                         "status": r["status"], "error": r.get("error"),
                         "mbps": mbps, "cpu_s_per_gib": cpu,
                         "ib_write_bw_mbps": v, "vs_ib_write_bw": ratio(mbps, v),
                         "cpu_vs_copy": ratio(cpu, ccpu) if path != "copy" else None,
                         "counters": r.get("counters")})
    return rows


def zc_text(rows):
    out = []
    for x in rows:
        c = x["counters"]
        if x["path"] == "copy" or c is None:
            cnt = "-"
        else:
            cnt = "%d / %d / %s" % (c["ZeroCopySends"], c["SrcAvailSent"],
                                    fmt(c["RxZeroCopyBytes"] / 1048576, 1))
        failed = x["status"] != "ok"
        out.append([size_name(x["size"]), x["name"],
                    "FAILED" if failed else fmt(x["mbps"], 1),
                    "FAILED" if failed else fmt(x["cpu_s_per_gib"], 1),
                    fmt(x["vs_ib_write_bw"], 2), fmt(x["cpu_vs_copy"], 2), cnt])
    return ("MSG_ZEROCOPY and receive zero-copy: afrdma-perf, one stream; "
            "CPU s/GiB of the whole guest\n" +
            table(["write", "path", "Mbit/s", "CPU s/GiB", "vs ib_write_bw",
                   "CPU vs copy", "ZeroCopySends / SrcAvailSent / RxZeroCopy MiB"],
                  out))


def zc_targets(recs):
    """Issue 5: at 256 KiB writes and above, each zero-copy path at 0.95
    of ib_write_bw or more, and clearly (by a tenth or more) less CPU per
    GiB than the copy path."""
    t = []
    for x in zc_rows(recs):
        if x["size"] < 262144 or x["path"] == "copy":
            continue
        what = "%s, %s" % (x["name"], size_name(x["size"]))
        r = x["vs_ib_write_bw"]
        t.append({"target": "bandwidth vs ib_write_bw, " + what, "ratio": r,
                  "goal": ">= 0.95", "met": None if r is None else r >= 0.95,
                  "detail": "%s vs %s Mbit/s" % (fmt(x["mbps"], 1),
                                                 fmt(x["ib_write_bw_mbps"], 1))})
        r = x["cpu_vs_copy"]
        c = zc_find(recs, "copy", x["size"])
        t.append({"target": "CPU per GiB vs copy, " + what, "ratio": r,
                  "goal": "<= 0.90", "met": None if r is None else r <= 0.90,
                  "detail": "%s vs %s s/GiB" % (
                      fmt(x["cpu_s_per_gib"], 1),
                      fmt(c.get("cpu_s_per_gib") if c else None, 1))})
    return t


def targets(recs):
    t = []
    V = lambda *a, **k: val(recs, *a, **k)

    def add(name, got, want, ok, detail):
        t.append({"target": name, "ratio": got, "goal": want,
                  "met": None if got is None else bool(ok), "detail": detail})

    for s, goal in ((65536, 0.90), (1048576, 0.95)):
        a = V("mbps", "afrdma-perf", "af_rdma", "bw", s)
        v = V("mbps", "ib_write_bw", "verbs", "bw", s)
        r = ratio(a, v)
        add("one-stream bandwidth %s vs ib_write_bw" % size_name(s), r,
            ">= %.2f" % goal, r is not None and r >= goal,
            "%s vs %s Mbit/s" % (fmt(a, 1), fmt(v, 1)))
    lat = V("lat_p50_us", "afrdma-perf", "af_rdma", "lat", 64)
    ib = V("lat_typical_us", "ib_send_lat", "verbs", "lat", 64)
    tcp = V("lat_p50_us", "afrdma-perf", "tcp", "lat", 64)
    r = ratio(lat, ib)
    add("64 B p50 latency vs ib_send_lat typical", r, "<= 1.5",
        r is not None and r <= 1.5, "%s vs %s us" % (fmt(lat, 1), fmt(ib, 1)))
    r = ratio(lat, tcp)
    add("64 B p50 latency vs TCP", r, "<= 0.5", r is not None and r <= 0.5,
        "%s vs %s us" % (fmt(lat, 1), fmt(tcp, 1)))
    a = V("msgs_per_sec", "afrdma-perf", "af_rdma", "bw", 64)
    b = V("msgs_per_sec", "afrdma-perf", "tcp", "bw", 64)
    r = ratio(a, b)
    add("64 B msg/s vs TCP, one stream", r, ">= 1.0", r is not None and r >= 1,
        "%s vs %s msg/s" % (fmt(a), fmt(b)))
    for s in (65536, 1048576):
        a = V("mbps", "afrdma-perf", "af_rdma", "bw", s, streams=8)
        b = V("mbps", "afrdma-perf", "af_rdma", "bw", s)
        r = ratio(a, b)
        add("8-stream vs 1-stream bandwidth, %s" % size_name(s), r, ">= 1.0",
            r is not None and r >= 1, "%s vs %s Mbit/s" % (fmt(a, 1), fmt(b, 1)))
    # rsockets: every row both have, through the same tool (rstream, its
    # own tool, against afrdma-perf), summed up in one line; the rows go
    # to the JSON and the rsockets table.
    rows = rsockets_rows(recs)
    both = [x for x in rows if x["ratio"] is not None]
    worse = [x for x in both if x["ratio"] < 1]
    lost = [x for x in rows if x["rsockets"] is None and x["afrdma"] is not None]
    worst = min(both, key=lambda x: x["ratio"]) if both else None
    add("afrdma vs rsockets, every row (worst ratio)",
        worst["ratio"] if worst else None, ">= 1.0", not worse,
        "%d rows both measured, afrdma as good in %d%s; rsockets failed in %d "
        "where afrdma worked" % (len(both), len(both) - len(worse),
                                 "; worst: " + worst["row"] if worst else "", len(lost)))
    return t


PEER_TOOL = {"af_rdma": "afrdma-perf", "tcp": "afrdma-perf",
             "smc": "afrdma-perf", "rds": "rds-perf"}


def peers_rows(recs, skips):
    """Issue 16: SMC-R and RDS beside afrdma and TCP, measure by measure,
    each peer's value with its ratios to afrdma and to TCP (> 1: the peer
    is better), or the reason it has none."""
    why = {(x["transport"], x["test"]): x["reason"] for x in skips}
    ns = sorted({r["streams"] for r in recs if r["test"] == "mem"})
    # (name, test, size, streams, key, higher is better)
    ms = [("bandwidth %s, 1 stream, Mbit/s" % size_name(s), "bw", s, 1, "mbps", True)
          for s in sorted({r["size"] for r in recs
                           if r["test"] == "bw" and r["transport"] in ("smc", "rds")})]
    ps = sorted({r["streams"] for r in recs
                 if r["test"] == "bw" and r["transport"] == "smc" and r["streams"] > 1})
    if ps:
        ms.append(("bandwidth 64 KiB, %d streams, Mbit/s" % ps[-1], "bw", 65536,
                   ps[-1], "mbps", True))
    ms += [("64 B messages/s, 1 stream", "bw", 64, 1, "msgs_per_sec", True),
           ("64 B one-way latency p50, us", "lat", 64, 1, "lat_p50_us", False),
           ("connection setups/s", "connrate", 0, 1, "conns_per_sec", True)]
    for n in ns:
        ms.append(("memory per idle connection, N=%d, KiB" % n, "mem", 0, n,
                   "mem_kib_per_conn", False))
        ms.append(("slab per idle connection, N=%d, KiB" % n, "mem", 0, n,
                   "slab_kib_per_conn", False))
        ms.append(("RC QPs for N=%d connections" % n, "mem", 0, n, "rdma_qps", False))
    rows = []
    for name, test, size, p, key, higher in ms:
        row = {"measure": name, "key": key}
        for t in ("af_rdma", "tcp", "smc", "rds"):
            r = find(recs, PEER_TOOL[t], t, test, size, p)
            v = r.get(key) if r and r["status"] == "ok" else None
            if t == "tcp" and key == "rdma_qps" and r and r["status"] == "ok":
                v = 0
            row[t] = v
            if r is not None and r["status"] != "ok":
                row[t + "_why"] = "FAILED: " + r["error"]
            elif r is None:
                wt = "streams" if test == "bw" and p > 1 else test
                row[t + "_why"] = why.get((t, wt))
        for t in ("smc", "rds"):
            for base in ("af_rdma", "tcp"):
                a, b = row[t], row[base]
                # TCP has no QPs: no ratio to it
                if key == "rdma_qps" and base == "tcp":
                    a = None
                row["%s_vs_%s" % (t, base)] = (ratio(a, b) if higher else ratio(b, a))
        rows.append(row)
    return rows


def peers_text(recs, skips, smc_fb):
    rows = peers_rows(recs, skips)
    if not any(r["smc"] is not None or r["rds"] is not None or
               r.get("smc_why") or r.get("rds_why") for r in rows) and not skips:
        return None
    notes = []

    def c(row, t):
        if row[t] is not None:
            return fmt(row[t], 1)
        w = row.get(t + "_why")
        if not w:
            return "-"
        if w not in notes:
            notes.append(w)
        return "n/a [%d]" % (notes.index(w) + 1)

    out = []
    for row in rows:
        out.append([row["measure"], c(row, "af_rdma"), c(row, "tcp"), c(row, "smc"),
                    c(row, "rds"), fmt(row["smc_vs_af_rdma"], 2), fmt(row["smc_vs_tcp"], 2),
                    fmt(row["rds_vs_af_rdma"], 2), fmt(row["rds_vs_tcp"], 2)])
    text = ("The in-tree peers: SMC-R (afrdma-perf -t smc, 127.0.0.1 over "
            "rxe_lo) and RDS (rds-perf on rxe0) beside afrdma and TCP "
            "(afrdma-perf); ratios > 1: the peer is better\n" +
            table(["measure", "afrdma", "TCP", "SMC-R", "RDS", "SMC-R/afrdma",
                   "SMC-R/TCP", "RDS/afrdma", "RDS/TCP"], out))
    for i, w in enumerate(notes):
        text += "\n[%d] %s" % (i + 1, w)
    if smc_fb is None:
        text += "\nSMC-R not proven by tracepoint (smc_switch_to_fallback unavailable)"
    else:
        text += ("\nsmc_switch_to_fallback events during the SMC-R cases (after "
                 "one warm-up connection that created the link group): %d" % smc_fb)
    owners = [r for r in recs if r["transport"] in ("smc", "rds") and r["test"] == "mem"
              and r.get("qp_owners")]
    for r in owners:
        text += "\n%s N=%d: RC QPs by owner %s" % (
            TR_NAME[r["transport"]], r["streams"],
            ", ".join("%s %d" % kv for kv in sorted(r["qp_owners"].items())))
    text += ("\nRDS's QPs show as rdma_cm's: it creates them through rdma_cm.")
    return text


def rsockets_rows(recs):
    rows = []
    for r0 in recs:
        if r0["transport"] != "rsockets" or r0["test"] == "mem":
            continue
        tool = r0["tool"]
        mine = find(recs, tool, "af_rdma", r0["test"], r0["size"], r0["streams"])
        if tool == "rstream":
            mine = find(recs, "afrdma-perf", "af_rdma", r0["test"], r0["size"], 1)
        if mine is None:
            continue
        if r0["test"] == "lat":
            key, higher = "lat_p50_us", False
        elif r0["test"] == "connrate":
            key, higher = "conns_per_sec", True
        else:
            key, higher = "mbps", True
        a = mine.get(key) if mine["status"] == "ok" else None
        b = r0.get(key) if r0["status"] == "ok" else None
        rows.append({"row": "%s %s%s x%d" % (
            tool, r0["test"], " " + size_name(r0["size"]) if r0["size"] else "",
            r0["streams"]), "key": key, "afrdma": a, "rsockets": b,
            "ratio": (ratio(a, b) if higher else ratio(b, a)),
            "rsockets_error": r0.get("error")})
    return rows


def rsockets_text(recs):
    rows = [[x["row"], x["key"], fmt(x["afrdma"], 1),
             fmt(x["rsockets"], 1) if x["rsockets"] is not None else "FAILED",
             fmt(x["ratio"], 2)] for x in rsockets_rows(recs)]
    return ("afrdma vs rsockets, row by row (ratio > 1: afrdma better; "
            "rstream rows against afrdma-perf)\n" +
            table(["row", "measure", "afrdma", "rsockets", "ratio"], rows))


def targets_text(t, title="Issue 4 targets, from this run"):
    rows = []
    for x in t:
        met = {True: "met", False: "NOT met", None: "no data"}[x["met"]]
        rows.append([x["target"], fmt(x["ratio"], 2), x["goal"], met, x["detail"]])
    return title + "\n" + table(
        ["target", "ratio", "goal", "", "measured"], rows)


def plot(recs, env, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 6.5), constrained_layout=True,
                                 gridspec_kw={"width_ratios": [3, 2]})
    for tool, tr, p in row_keys(recs, "bw"):
        if p != 1 or tool == "sockperf":
            continue
        tests = ("bw", "copy") if (tool, tr) == ("afrdma-perf", "af_rdma") else ("bw",)
        pts = [(r["size"], r["mbps"]) for r in recs
               if (r["tool"], r["transport"], r["streams"]) == (tool, tr, 1)
               and r["test"] in tests and r["status"] == "ok" and r.get("mbps")]
        if not pts:
            continue
        xs, ys = zip(*sorted(pts))
        # colour: transport; line and marker: tool
        color = {"verbs": "black", "af_rdma": "tab:blue", "tcp": "tab:orange",
                 "rsockets": "tab:green", "smc": "tab:brown", "rds": "tab:pink"}[tr]
        ls, mk = {"ib_write_bw": ("-", "s"), "ib_send_bw": (":", "D"),
                  "afrdma-perf": ("-", "o"), "iperf3": ("--", "^"),
                  "rstream": ("-.", "v"), "rds-perf": (":", "P")}.get(tool, ("-", "o"))
        ax.plot(xs, ys, color=color, linestyle=ls, marker=mk,
                label="%s %s" % (tool, TR_NAME[tr]))
    for zp, name in ZC_PATHS[1:]:
        pts = [(r["size"], r["mbps"]) for r in recs
               if r["test"] == zp and r["status"] == "ok" and r.get("mbps")]
        if pts:
            xs, ys = zip(*sorted(pts))
            ax.plot(xs, ys, color={"zc": "tab:purple", "rzc": "tab:red"}[zp],
                    linestyle="--", marker="x", label="afrdma-perf afrdma " + name)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({r["size"] for r in recs
                    if r["test"] in ("bw", "copy", "zc", "rzc")})
    ax.set_xticks(sizes)
    ax.set_xticklabels([size_name(s) for s in sizes])
    ax.set_xlabel("payload per send")
    ax.set_ylabel("Mbit/s (log)")
    ax.set_title("Bandwidth, one stream")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")

    lat = [r for r in recs if r["test"] == "lat"]
    names = [label(r) for r in lat]
    p50 = [r.get("lat_p50_us") or 0 for r in lat]
    p99 = [r.get("lat_p99_us") or 0 for r in lat]
    y = range(len(lat))
    bx.barh([i + 0.2 for i in y], p50, 0.4, label="p50 (perftest: typical; rstream: mean)")
    bx.barh([i - 0.2 for i in y], p99, 0.4, label="p99")
    for i, r in enumerate(lat):
        if r["status"] != "ok":
            bx.text(0.02, i, "FAILED: " + r["error"][:40], va="center",
                    color="red", fontsize=7, transform=bx.get_yaxis_transform())
    bx.set_yticks(list(y))
    bx.set_yticklabels(names, fontsize=8)
    bx.invert_yaxis()
    bx.set_xscale("log")
    bx.set_xlabel("one-way latency, us (log)")
    bx.set_title("64 B ping-pong latency")
    bx.grid(True, axis="x", which="both", alpha=0.3)
    bx.legend(fontsize=8, loc="lower right")
    fig.suptitle("afrdma bench, %s, kernel %s, %s (active_mtu %s)" % (
        env.get("date", "?"), env.get("kernel", "?"), TITLE_ENV,
        env.get("active_mtu", "?")))
    fig.savefig(path, dpi=100)


def smoke(recs, skips=()):
    """make check: a case passes if its tool ran and gave a number (and a
    zero-copy case's counters show it took its path).  rsockets failing is
    rsockets' business (skipped); anything else failing is ours."""
    p = f = s = 0
    for r in recs:
        name = "bench smoke: %s %s size %d streams %d" % (
            label(r), r["test"], r["size"], r["streams"])
        if r["status"] == "ok":
            print("ok - " + name)
            p += 1
        elif r["transport"] == "rsockets":
            print("ok - %s # SKIP rsockets failed: %s" % (name, r["error"]))
            s += 1
        else:
            print("not ok - %s (case %d): %s" % (name, r["id"], r["error"]))
            f += 1
    for x in skips:
        print("ok - bench smoke: %s %s # SKIP %s" % (
            TR_NAME.get(x["transport"], x["transport"]), x["test"], x["reason"]))
        s += 1
    if not recs:
        print("not ok - bench smoke: no case ran")
        f += 1
    return p, f, s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("indir", help="the guest's output directory (cases.tsv, raw/)")
    ap.add_argument("outdir", help="where bench.json, bench.md and bench.png go")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()

    env = read_env(a.indir)
    skips, smc_fb = read_peers(a.indir)
    try:
        recs = load(a.indir, int(env.get("cpus") or 1),
                    int(env.get("idle_qps") or 0), env)
    except OSError as e:
        recs = []
        print("bench: %s" % e, file=sys.stderr)
    if a.smoke:
        p, f, s = smoke(recs, skips)
        print("# bench: %d %d %d" % (p, f, s))
        return 0
    if not recs:
        return 1
    os.makedirs(a.outdir, exist_ok=True)
    text = report(recs, env)
    t = targets(recs)
    zt = zc_targets(recs)
    tt = targets_text(t) + "\n\n" + targets_text(
        zt, "Issue 5 targets (256 KiB and up), from this run")
    pt = peers_text(recs, skips, smc_fb)
    if pt:
        text += "\n" + pt + "\n"
    if any(r["transport"] == "rsockets" for r in recs):
        text += "\n" + rsockets_text(recs) + "\n"
    if zc_rows(recs):
        text += "\n" + zc_text(zc_rows(recs)) + "\n"
    print(text)
    print(tt)
    with open(os.path.join(a.outdir, "bench.md"), "w") as f:
        f.write(text + "\n" + tt + "\n")
    prof = os.path.join(a.indir, "profile.txt")
    with open(os.path.join(a.outdir, "bench.json"), "w") as f:
        json.dump({"date": env.get("date"), "kernel": env.get("kernel"),
                   "environment": TITLE_ENV, "active_mtu": env.get("active_mtu"),
                   "cpus": env.get("cpus"), "results": recs, "targets": t,
                   "rsockets": rsockets_rows(recs),
                   "peers": peers_rows(recs, skips), "peer_skips": skips,
                   "smc_fallbacks": smc_fb,
                   "zerocopy": zc_rows(recs), "zerocopy_targets": zt,
                   "profile": open(prof).read() if os.path.exists(prof) else None},
                  f, indent=1)
    plot(recs, env, os.path.join(a.outdir, "bench.png"))
    print("bench: wrote %s/bench.json, bench.md and bench.png" % a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
