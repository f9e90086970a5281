#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The failure digest of "make check" (tools/testing/check): one entry per
# failed test, written while the check runs (the bench smoke's directory is
# reused by the next kernel), printed just above the summary line so that
# the end of a CI log says which test failed and why.
#
#   digest.py guest DIR KREL SUITE OUTDIR [RC]
#       a guest's results (vm-run's VM_OUT/KREL or VM_OUT/KREL/a): every
#       test window with a "not ok" line, the test a hung, panicked or
#       timed-out guest was running, kernel log problems and the test
#       they came in, a failed exit with none of these
#   digest.py bench DIR KREL OUTDIR GUEST-LOG < NOT-OK-LINES
#       the bench smoke's failed cases: raw/ID.out and the case's kernel log
#   digest.py host DIR KREL SUITE NAME [LOG] < TEXT
#       a failure on the host (build, fuzz, dkms, install): the "not ok"
#       lines of TEXT, then the tail of LOG or else TEXT's other lines
#   digest.py print DIR [MAX-LINES]
#       the digest, at most MAX-LINES (default 150) lines
#
# Test windows: selftests/lib.sh's test_mark writes "AFRDMA-VM-TEST=start
# NAME" (and =end) to the console, where vm-run's stream hides it and
# console.log keeps it, and "afrdma-test: start NAME" to /dev/kmsg, which
# vm-init.sh's dmesg.txt keeps; the kernel lines of a test are those
# between its two kernel-log markers.

import os
import re
import sys

OUT_LINES = 15		# of a test's own output
OUT_HEAD = 6		# of those, from the failed subtest's start
KERNEL_LINES = 15	# of the kernel log while it ran
NOT_OK_LINES = 5
LINE_WIDTH = 200

CON_MARK = re.compile(r"AFRDMA-VM-TEST=(start|end) (.*)$")
KMSG_MARK = re.compile(r"afrdma-test: (start|end) (.*)$")
KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\]")
NOT_OK = re.compile(r"^\s*(#\s*)?not ok\b")
TODO = re.compile(r"#\s*TODO\b")
RESULT = re.compile(r"^\s*(#\s*)?(not )?ok\b")
CMD_MARK = "afrdma-vm: command starts"
ESCAPES = re.compile(r"\x1bc|\x1b\[[0-9;?]*[A-Za-z]")


def dmesg_bad():
    """vm-run's pattern of kernel log lines that fail a run."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm-run")
    with open(path) as f:
        for line in f:
            m = re.match(r"^DMESG_BAD='(.*)'$", line.rstrip("\n"))
            if m:
                return re.compile(m.group(1))
    return re.compile(r"Kernel panic|WARNING:|BUG:|Oops|Call Trace")


BAD = dmesg_bad()


def read_lines(path):
    """A log's lines as vm-run's stream shows them; [] if it is missing."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [ESCAPES.sub("", l.rstrip("\r")).rstrip("\r")
            for l in text.split("\n")]


def rel(path):
    """A path as check's reader finds it: from the repository's root."""
    r = os.path.relpath(path)
    return path if r.startswith("..") else r


def console_tail(con):
    """The console's last lines, without vm-run's and test_mark's own."""
    return tail([l for l in con if not l.startswith("AFRDMA-VM-")],
                OUT_LINES, "the console's last lines")


def is_not_ok(line):
    return bool(NOT_OK.match(line)) and not TODO.search(line)


def clip(line):
    return line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH] + " [...]"


def section(title, lines):
    return ["  " + title] + ["    " + clip(l) for l in lines]


def lines_(n):
    return "%d line%s" % (n, "" if n == 1 else "s")


def tail(lines, n, what):
    """The last n lines of a list, with a title saying how many of how many."""
    lines = [l for l in lines if l.strip()]
    if len(lines) > n:
        return "%s (last %d of %s):" % (what, n, lines_(len(lines))), lines[-n:]
    return "%s (%s):" % (what, lines_(len(lines))), lines


def tail_section(lines, n, what):
    """section(*tail(...)), or nothing for no lines."""
    title, shown = tail(lines, n, what)
    return section(title, shown) if shown else []


def not_ok_section(lines):
    bad = [l for l in lines if is_not_ok(l)]
    if not bad:
        return []
    more = len(bad) - NOT_OK_LINES
    bad = bad[:NOT_OK_LINES]
    if more > 0:
        bad.append("... and %d more not ok lines" % more)
    return section("not ok:", bad)


class Entries:
    def __init__(self, d):
        self.dir = d
        os.makedirs(d, exist_ok=True)

    def add(self, krel, suite, name, body):
        n = len([f for f in os.listdir(self.dir) if f.endswith(".txt")])
        with open(os.path.join(self.dir, "%03d.txt" % (n + 1)), "w") as f:
            f.write("--- %s, %s: %s\n" % (krel, suite, name))
            f.writelines(l + "\n" for l in body)


# ---- a guest's results --------------------------------------------------------

class Window:
    """One test as the console log shows it."""

    def __init__(self, name, occ):
        self.name, self.occ = name, occ
        self.out, self.kern, self.closed = [], [], False

    def failed(self):
        return any(is_not_ok(l) for l in self.out)

    def excerpt(self):
        """The failed subtest's own output: from the result line of the
        subtest ahead of it to its first "not ok", its first OUT_HEAD and
        last OUT_LINES - OUT_HEAD lines when longer (what it set out to do,
        and how it ended: a failure after many lines of counters must not
        hide its start).  Without a "not ok" line, the last OUT_LINES."""
        out = [l for l in self.out if l.strip()]
        first = next((i for i, l in enumerate(out) if is_not_ok(l)), None)
        if first is None:
            return tail(out, OUT_LINES, "its output")
        start = 0
        for i in range(first - 1, -1, -1):
            if RESULT.match(out[i]):
                start = i + 1
                break
        own = out[start:first + 1]
        title = "its output up to the first not ok"
        if len(own) <= OUT_LINES:
            return "%s (%s):" % (title, lines_(len(own))), own
        cut = len(own) - OUT_LINES
        return ("%s (first %d and last %d of %s):"
                % (title, OUT_HEAD, OUT_LINES - OUT_HEAD, lines_(len(own))),
                own[:OUT_HEAD] + ["... %s cut ..." % lines_(cut)]
                + own[-(OUT_LINES - OUT_HEAD):])


def console_windows(con):
    """The test windows of a console log, in order."""
    wins, cur, seen = [], None, {}
    for line in con:
        m = CON_MARK.search(line)
        if m:
            what, name = m.group(1), m.group(2).strip()
            if what == "start":
                seen[name] = seen.get(name, 0) + 1
                cur = Window(name, seen[name])
                wins.append(cur)
            elif cur is not None and cur.name == name:
                cur.closed, cur = True, None
            continue
        if cur is None or line.startswith("AFRDMA-VM-"):
            continue
        (cur.kern if KERNEL_LINE.match(line) else cur.out).append(line)
    return wins


def kernel_windows(kern):
    """(name, occurrence) -> the kernel lines between a test's markers, and
    the list of (index, name, occ) of every line inside some window."""
    wins, owner, cur, seen = {}, [], None, {}
    for line in kern:
        m = KMSG_MARK.search(line)
        if m:
            what, name = m.group(1), m.group(2).strip()
            if what == "start":
                seen[name] = seen.get(name, 0) + 1
                cur = (name, seen[name])
                wins[cur] = []
            elif cur is not None and cur[0] == name:
                cur = None
            owner.append(None)
            continue
        if cur is not None:
            wins[cur].append(line)
        owner.append(cur)
    return wins, owner


def kernel_excerpt(lines):
    """KERNEL_LINES lines of a test's kernel log: from just before the
    first problem line if there is one, else the last ones."""
    lines = [l for l in lines if l.strip()]
    if len(lines) <= KERNEL_LINES:
        return lines, lines_(len(lines))
    bad = next((i for i, l in enumerate(lines) if BAD.search(l)), None)
    if bad is None:
        return lines[-KERNEL_LINES:], "last %d of %s" % (KERNEL_LINES, lines_(len(lines)))
    start = max(0, min(bad - 2, len(lines) - KERNEL_LINES))
    return (lines[start:start + KERNEL_LINES],
            "%d of %s, from line %d" % (KERNEL_LINES, lines_(len(lines)), start + 1))


class Guest:
    def __init__(self, outdir):
        self.dir = outdir
        self.console_path = os.path.join(outdir, "console.log")
        self.con = read_lines(self.console_path)
        if not self.con:
            # vm-run moves the console log of a boot that never reached
            # the script aside before booting again.
            for n in (2, 1):
                p = os.path.join(outdir, "console.boot%d.log" % n)
                if os.path.exists(p):
                    self.console_path, self.con = p, read_lines(p)
                    break
        self.dmesg_path = os.path.join(outdir, "dmesg.txt")
        self.dmesg = read_lines(self.dmesg_path)
        self.wins = console_windows(self.con)
        self.kwins, self.kowner = kernel_windows(self.dmesg)
        self.ready = any(l.startswith("AFRDMA-VM-READY") for l in self.con)
        self.rc = None
        try:
            with open(os.path.join(outdir, "exit-status")) as f:
                self.rc = int(f.read().strip())
        except (OSError, ValueError):
            for l in self.con:
                m = re.match(r"^AFRDMA-VM-EXIT=(\d+)", l)
                if m:
                    self.rc = int(m.group(1))
        self.on_purpose = os.path.exists(os.path.join(outdir, "poweroff-on-purpose"))
        self.timed_out = next((l for l in self.con
                               if l.startswith("vm-init: command timed out")), None)
        self.panic = any("Kernel panic" in l for l in self.con)

    def kernel_section(self, win):
        """The kernel log while WIN ran: from dmesg.txt, or the console's
        kernel lines when the guest could not write dmesg.txt."""
        lines = self.kwins.get((win.name, win.occ)) if self.dmesg else None
        if lines is not None:
            src = rel(self.dmesg_path)
        elif self.dmesg:
            return section("kernel log: no \"afrdma-test: start %s\" in %s "
                           "(ring buffer wrapped?)" % (win.name, rel(self.dmesg_path)), [])
        else:
            lines = win.kern
            src = "%s, console messages only: no dmesg.txt" % rel(self.console_path)
        if not any(l.strip() for l in lines):
            return section("kernel log while it ran (%s): nothing" % src, [])
        shown, how = kernel_excerpt(lines)
        return section("kernel log while it ran (%s, %s):" % (src, how), shown)

    def bad_after_start(self):
        """(index in dmesg.txt or None, line) of each problem line logged
        after the command started, as vm-run judges them."""
        kern = self.dmesg if self.dmesg else self.con
        start = next((i for i, l in enumerate(kern) if CMD_MARK in l), 0)
        return [(i if self.dmesg else None, l) for i, l in enumerate(kern)
                if i >= start and BAD.search(l)]


def guest(entries, krel, suite, outdir, rc=None):
    g = Guest(outdir)
    con = rel(g.console_path)
    added = 0

    if not g.con:
        entries.add(krel, suite, "(no test)",
                    ["  the guest left no console log in %s" % rel(outdir)])
        return
    if not g.ready:
        entries.add(krel, suite, "(boot)",
                    ["  the guest never reached its script (%s)" % con] +
                    section(*console_tail(g.con)))
        return

    # The test a guest that did not finish was running.
    running = g.wins[-1] if g.wins and not g.wins[-1].closed else None
    stuck = None
    if g.rc is None and not g.on_purpose:
        stuck = ("kernel panic" if g.panic else
                 "the guest stopped without an exit status (hung, or killed)")
    elif g.timed_out:
        stuck = g.timed_out.replace("vm-init: ", "")
    bad = g.bad_after_start()
    bad_wins = {}
    outside = []
    for i, line in bad:
        owner = g.kowner[i] if i is not None else None
        if owner:
            bad_wins.setdefault(owner, []).append(line)
        elif i is not None:
            outside.append(line)

    for w in g.wins:
        if w is running and stuck:
            continue
        problems = bad_wins.get((w.name, w.occ))
        if not w.failed() and not problems:
            continue
        body = []
        if problems:
            body.append("  kernel log problems while it ran (%d line(s) that fail a vm-run)"
                        % len(problems))
        body += not_ok_section(w.out)
        if w.failed():
            body += section(*w.excerpt())
        body += g.kernel_section(w)
        entries.add(krel, suite, w.name, body)
        added += 1

    if outside:
        shown = outside[:KERNEL_LINES]
        entries.add(krel, suite, "(between tests)",
                    ["  kernel log problems outside any test"] +
                    section("%s (%d of %d problem lines):" % (
                        rel(g.dmesg_path), len(shown), len(outside)), shown))
        added += 1

    if stuck:
        name = running.name if running else "(no test was running)"
        body = ["  %s%s (%s)" % (stuck, ", while this test ran" if running else "", con)]
        if running:
            problems = bad_wins.get((running.name, running.occ))
            if problems:
                body.append("  kernel log problems while it ran (%d line(s) that fail a vm-run)"
                            % len(problems))
            body += not_ok_section(running.out)
        body += section(*console_tail(g.con))
        if running and g.dmesg:
            body += g.kernel_section(running)
        # Last: it is the last thing that happened.
        entries.add(krel, suite, name, body)
        added += 1

    grc = g.rc if rc is None else rc
    if not added and grc not in (None, 0):
        body = ["  the guest failed (exit %s) with no failed test in %s" % (grc, con)]
        body += section(*console_tail(g.con))
        entries.add(krel, suite, "(no test)", body)


# ---- the bench smoke ------------------------------------------------------------

def bench(entries, krel, outdir, guest_log, lines):
    g = Guest(outdir)
    rest = []
    for line in lines:
        if not is_not_ok(line):
            continue
        m = re.search(r"\(case (\d+)\)", line)
        if not m:
            rest.append(line)
            continue
        case = m.group(1)
        raw = os.path.join(outdir, "raw", case + ".out")
        body = section("not ok:", [line])
        body += tail_section(read_lines(raw), OUT_LINES, "its output, " + rel(raw))
        win = next((w for w in g.wins if w.name == "case " + case), Window("case " + case, 1))
        body += g.kernel_section(win)
        name = re.sub(r"^not ok - bench smoke: ", "", line)
        entries.add(krel, "bench smoke", clip(name.split(":")[0]), body)
    if rest:
        before = len(os.listdir(entries.dir))
        guest(entries, krel, "bench smoke", outdir)
        if len(os.listdir(entries.dir)) == before:
            body = section("not ok:", rest)
            body += tail_section(read_lines(guest_log), OUT_LINES, rel(guest_log))
            entries.add(krel, "bench smoke", "(the smoke run)", body)


# ---- failures on the host ---------------------------------------------------------

def host(entries, krel, suite, name, text, log=None):
    lines = text.split("\n")
    body = not_ok_section(lines)
    if log:
        body += tail_section(read_lines(log), OUT_LINES, rel(log))
    else:
        body += tail_section([l for l in lines if not is_not_ok(l)], OUT_LINES, "output")
    entries.add(krel, suite, name, body)


# ---- the digest ---------------------------------------------------------------------

def show(d, max_lines):
    try:
        names = sorted(f for f in os.listdir(d) if f.endswith(".txt"))
    except OSError:
        names = []
    ents = []
    for n in names:
        with open(os.path.join(d, n), errors="replace") as f:
            ents.append(f.read().rstrip("\n").split("\n"))
    rule = "=" * 20
    out = ["%s FAILURE DIGEST: %d failure(s), each named by kernel, suite and test %s"
           % (rule, len(ents), rule)]
    if not ents:
        out.append("no details collected; see the not ok lines above")
    i = 0
    # Whole entries while they fit with a line left for each of the rest
    # (ten at most, then one saying how many more) and the closing rule.
    while i < len(ents):
        rest = len(ents) - i - 1
        need = len(ents[i]) + min(rest, 10) + (rest > 10) + 1
        if len(out) + need > max_lines:
            break
        out += ents[i]
        i += 1
    # Then only their headers, and a count of what did not fit.
    while i < len(ents) and len(out) + 1 + (i + 1 < len(ents)) + 1 <= max_lines:
        out.append(ents[i][0] + "  (details cut)")
        i += 1
    if i < len(ents):
        out.append("... %d more failure(s) omitted; see the not ok lines above" % (len(ents) - i))
    out.append("%s end of the failure digest (entries: %s) %s" % (rule, rel(d), rule))
    print("\n".join(out))


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: see the comment at the head of %s" % argv[0])
    cmd, d = argv[1], argv[2]
    a = argv[3:]
    if cmd == "guest" and len(a) in (3, 4):
        guest(Entries(d), a[0], a[1], a[2], int(a[3]) if len(a) == 4 else None)
    elif cmd == "bench" and len(a) == 3:
        bench(Entries(d), a[0], a[1], a[2], sys.stdin.read().split("\n"))
    elif cmd == "host" and len(a) in (3, 4):
        host(Entries(d), a[0], a[1], a[2], sys.stdin.read().rstrip("\n"),
             a[3] if len(a) == 4 else None)
    elif cmd == "print" and len(a) <= 1:
        show(d, int(a[0]) if a else 150)
    else:
        sys.exit("digest.py: bad arguments: %s" % " ".join(argv[1:]))


if __name__ == "__main__":
    main(sys.argv)
