#!/usr/bin/env python3
"""Seeded, reproducible randomized fault test of `xlaunch launch`.

Every scenario is derived from one integer seed: how many workers (1-8), what each one
does (writes deterministic bytes to stdout/stderr, with and without trailing newline, with
'\\r', small to ~1 MiB; sleeps; starts children that fork, setsid or daemonize and sleep
long; closes its stdout and goes on; ignores SIGTERM/SIGINT; then exits with a code 0-255,
kills itself with SIGKILL/SIGSEGV/SIGTERM, or runs until the launcher stops it), what
happens to the launcher (nothing, or SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGKILL at a random time,
spawning included) and to its console (read, not read for a while, never read while it
runs, or closed early like `| head -1`).

Workers are /bin/sh scripts (cheap to start) generated per scenario. Before its last action
a worker writes its intended outcome to a file (the "intent"), and after each step it
appends the step number to a progress file, so the test knows exactly which bytes it wrote.

Invariants checked per scenario (see Checker.check_* below):
  1 exit code: without a launcher signal, the code of the root cause named in summary.json,
    which must be a worker that really reached its failing last action (its intent file),
    is not stopped_by_launcher, and did not fail more than RACE_WINDOW s after another
    worker's own failure (nor later by summary.json's own clock); 128+S for a signal death;
    0 only if every worker reached "exit 0". With SIGINT/SIGTERM/SIGHUP/SIGQUIT sent at t:
    128+S only if no worker had failed before t - RACE_WINDOW (a failure seen first keeps
    its code; a signal during the teardown does not replace it), else the workers' outcome
    as above, which must then have been decided before t + RACE_WINDOW. SIGKILL: -9 (from
    here), or the workers' outcome if xlaunch had already exited. A signal's default action
    before any worker started is accepted as 128+S (the shell sees the same). With
    --max_restarts 1: attempt 1 runs if and only if attempt 0 had a failure; it decides.
  2 logs: each rank's stdout.log/stderr.log is a prefix of the bytes it was to write, holds
    at least every byte it wrote before its last recorded step, and all of them when it
    reached its last action (no lower bound after SIGKILL of the launcher).
  3 summary.json: valid JSON, exit_code equal to the launcher's, every rank of every attempt
    that ran listed once: in "workers" with an exit code or a signal, or in "not_started"
    if it really never ran (it may be missing after SIGKILL of the launcher).
  4 no process carrying the scenario's marker env var is left (bounded wait), leftovers are
    SIGKILLed by the test either way.
  5 the launcher exits (hang bound), even with a console that is never read; the console
    pipe is not held open after it exited.
  6 the console (when read) has only whole lines, each `[rankN]: ` + bytes of that rank's
    stream in order (pieces split at '\\r') or xlaunch's own lines, and ends with a newline
    (unless xlaunch exited while nobody read it); when xlaunch reports no dropped lines
    (console or xlaunch.log), every byte of every rank is there.
  7 a worker inherits no descriptor besides 0, 1, 2 (checked by workers drawn to list them):
    a leaked launcher fd (its console, say) is held open by any daemon the worker leaves.

Run:
  pytest tests/integration/test_fault_stress.py          (XLAUNCH_STRESS_SECONDS, default 150;
                                                           XLAUNCH_STRESS_SEED, base seed)
  python3 tests/integration/test_fault_stress.py --seconds 600 [--seed N]
  python3 tests/integration/test_fault_stress.py --scenario-seed S [--keep] (replay one)
  python3 tests/integration/test_fault_stress.py --describe S  (print a scenario, run nothing)
The binary is $XLAUNCH_BIN, else build/release/cli/xlaunch (or --bin).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import random
import re
import select
import shlex
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import threading
import time
import uuid

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_BASE_SEED = 20261123
MARK_VAR = "XLAUNCH_STRESS_MARK"
# A worker failure and a launcher signal closer than this (seconds) may be seen in either order.
RACE_WINDOW = float(os.environ.get("XLAUNCH_STRESS_RACE_S", "0.5"))
LONG_SLEEP = 300  # "runs long": only the launcher stops it
BIG_BYTES_PER_SCENARIO = 3 << 20

SELF_SIGNALS = {"KILL": 9, "SEGV": 11, "TERM": 15}
LAUNCHER_SIGNALS = {"SIGINT": 2, "SIGTERM": 15, "SIGHUP": 1, "SIGQUIT": 3, "SIGKILL": 9}

CHILD_KINDS = {
    # name: (description, shell command)
    "bg": ("a background child in its process group, keeping the pipes",
           f"sleep {LONG_SLEEP} &"),
    "bg-quiet": ("a background child in its process group, fds on /dev/null",
                 f"sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 &"),
    "fork-tree": ("a subshell with its own child, keeping the pipes",
                  f"( sleep {LONG_SLEEP} & exec sleep {LONG_SLEEP} ) &"),
    "setsid": ("a setsid child (new session), keeping the pipes",
               f"setsid sleep {LONG_SLEEP} &"),
    "setsid-quiet": ("a setsid child (new session), fds on /dev/null",
                     f"setsid sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 &"),
    "daemon": ("a double-fork setsid daemon (its parent gone), keeping the pipes",
               f"( setsid sleep {LONG_SLEEP} & )"),
    "daemon-quiet": ("a double-fork setsid daemon, fds on /dev/null",
                     f"( setsid sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 & )"),
}

_ALPHABET = string.ascii_letters + string.digits + " .,:;-_=+/()#%*"  # no '[', no '\r', '\n'
FILLER = "".join(random.Random(1).choices(_ALPHABET, k=1 << 18))
RANK_PREFIX = re.compile(rb"\[rank(\d+)\]: ")
# What a line cut off by a stalled console at exit can look like before its body starts.
TORN_PREFIX = re.compile(rb"\[(r(a(n(k(\d+(\](:)?)?)?)?)?)?)?|x(l(a(u(n(c(h)?)?)?)?)?)?")


# ---------------------------------------------------------------------------- the scenario

@dataclasses.dataclass
class Step:
    kind: str                 # out | sleep | child | close
    stream: str = ""          # out, close: stdout | stderr
    data: bytes = b""
    secs: float = 0.0
    child: str = ""

    def text(self):
        if self.kind == "out":
            d = self.data
            lines = d.count(b"\n")
            notes = [f"{lines} newline(s)"]
            if b"\r" in d:
                notes.append("has \\r")
            if not d.endswith((b"\n", b"\r")):
                notes.append("no trailing newline")
            longest = max(len(x) for x in re.split(rb"[\r\n]", d))
            if longest > 16384:
                notes.append(f"a {longest} B line")
            return f"write {human(len(d))} to {self.stream} ({', '.join(notes)})"
        if self.kind == "sleep":
            return f"sleep {self.secs:.3f}s"
        if self.kind == "child":
            return f"start {CHILD_KINDS[self.child][0]}"
        return f"close its {self.stream} (exec {1 if self.stream == 'stdout' else 2}>&-)"


@dataclasses.dataclass
class Worker:
    rank: int
    attempt: int
    stubborn: bool            # ignores SIGTERM and SIGINT (so do its children)
    steps: list
    final: tuple              # ("exit", code) | ("signal", "SEGV") | ("long",)
    fdcheck: bool = False     # first lists the descriptors it inherited

    @property
    def fails(self):
        return self.final[0] == "signal" or (self.final[0] == "exit" and self.final[1] != 0)

    @property
    def succeeds(self):
        return self.final == ("exit", 0)

    @property
    def code(self):
        """The launcher's exit code when this worker is the root cause."""
        if self.final[0] == "signal":
            return 128 + SELF_SIGNALS[self.final[1]]
        return self.final[1]

    def final_text(self):
        if self.final[0] == "exit":
            return f"exit {self.final[1]}"
        if self.final[0] == "signal":
            return f"kill itself with SIG{self.final[1]}"
        return f"sleep {LONG_SLEEP}s (until the launcher stops it)"

    def nominal_duration(self):
        return sum(s.secs for s in self.steps if s.kind == "sleep")

    def expected(self, stream, upto=None):
        """Bytes written to `stream` by steps [0, upto) (all steps when upto is None)."""
        steps = self.steps if upto is None else self.steps[:upto]
        return b"".join(s.data for s in steps if s.kind == "out" and s.stream == stream)

    def text(self):
        head = f"rank {self.rank}:"
        if self.fdcheck:
            head += " lists its fds;"
        if self.stubborn:
            head += " ignores SIGTERM+SIGINT;"
        if not self.steps:
            return f"{head} at once {self.final_text()}"
        body = "; ".join(s.text() for s in self.steps)
        return f"{head} {body}; then {self.final_text()}"


@dataclasses.dataclass
class Scenario:
    seed: int
    n: int
    term_timeout: int
    max_restarts: int
    attempts: list            # attempts[a][rank] -> Worker
    event: str                # none | SIGINT | SIGTERM | SIGHUP | SIGQUIT | SIGKILL
    event_at: float
    event_again_after: float  # SIGINT only: a second one after this many seconds (0: none)
    console: dict             # stream -> (mode, arg): read | stall D | stall-forever | close K

    def text(self):
        out = [f"scenario {self.seed}: {self.n} worker(s), --term_timeout {self.term_timeout}, "
               f"--max_restarts {self.max_restarts}"]
        if self.event == "none":
            out.append("  launcher: no signal")
        else:
            ev = f"  launcher: {self.event} at {self.event_at:.3f}s after start"
            if self.event_again_after:
                ev += f", again {self.event_again_after:.3f}s later"
            out.append(ev)
        for stream in ("stdout", "stderr"):
            mode, arg = self.console[stream]
            desc = {"read": "read all along",
                    "stall": f"not read for {arg:.2f}s, then drained",
                    "stall-forever": "never read while xlaunch runs",
                    "close": (f"closed after {arg} line(s) (like | head -{arg})" if arg
                              else "closed at once")}[mode]
            out.append(f"  console {stream}: {desc}")
        for a, workers in enumerate(self.attempts):
            if self.max_restarts:
                out.append(f"  attempt {a}:")
            for w in workers:
                out.append("    " + w.text())
        return "\n".join(out)

    def nominal_duration(self):
        d = max((w.nominal_duration() for ws in self.attempts for w in ws), default=0)
        d *= len(self.attempts)
        if self.event != "none":
            d = max(d, self.event_at + self.event_again_after)
        stall = max((arg for mode, arg in self.console.values() if mode == "stall"), default=0)
        return d + stall + (self.term_timeout + 1) * len(self.attempts)


def human(n):
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def gen_payload(rng, tag, size_class):
    """Deterministic printable bytes: lines tagged <tag L i> (unique, so the test can find
    them), ended by \\n, \\r or \\r\\n, sometimes a line longer than 16 KiB, sometimes no
    trailing newline."""
    if size_class == "small":
        target = rng.randint(1, 300)
    elif size_class == "medium":
        target = rng.randint(1024, 24 * 1024)
    else:
        target = rng.randint(64 * 1024, 1 << 20)
    parts, total, i = [], 0, 0
    while total < target:
        if size_class != "small" and rng.random() < 0.03:
            length = rng.randint(16 * 1024, 80 * 1024)  # longer than a console line
        else:
            length = rng.randint(0, 160)
        start = rng.randrange(len(FILLER) - length)
        line = f"<{tag}L{i}>" + FILLER[start:start + length]
        term = rng.choice(["\n"] * 8 + ["\r", "\r\n"])
        parts.append(line + term)
        total += len(line) + len(term)
        i += 1
    data = "".join(parts)
    if rng.random() < 0.3:
        data = data.rstrip("\r\n")  # no trailing newline
    return data.encode()


def gen_worker(rng, rank, attempt, console, big_left, p_fail, p_long, p_at_once):
    at_once = rng.random() < p_at_once  # acts at once, while the others are being spawned
    fdcheck = not at_once and rng.random() < 0.5
    stubborn = rng.random() < 0.15
    steps = []
    open_streams = ["stdout", "stderr"]
    if not at_once:
        for k in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.5 and open_streams:
                stream = rng.choice(open_streams)
                stalled = console[stream][0] in ("stall", "stall-forever")
                x = rng.random()
                big_p = 0.4 if stalled else 0.1
                size = "big" if x < big_p else ("medium" if x < big_p + 0.2 else "small")
                if size == "big" and big_left[0] <= 0:
                    size = "medium"
                data = gen_payload(rng, f"r{rank}a{attempt}s{k}", size)
                if size == "big":
                    big_left[0] -= len(data)
                steps.append(Step("out", stream=stream, data=data))
            elif r < 0.72:
                steps.append(Step("sleep", secs=round(rng.choice([rng.uniform(0, 0.05),
                                                                  rng.uniform(0, 0.8)]), 3)))
            elif r < 0.9:
                steps.append(Step("child", child=rng.choice(sorted(CHILD_KINDS))))
            elif open_streams:
                stream = "stdout" if "stdout" in open_streams and rng.random() < 0.8 \
                    else open_streams[-1]
                open_streams.remove(stream)
                steps.append(Step("close", stream=stream))
    r = rng.random()
    if r < p_long:
        final = ("long",)
    elif r < p_long + p_fail * 0.75:
        final = ("exit", rng.randint(1, 255))
    elif r < p_long + p_fail:
        final = ("signal", rng.choice(sorted(SELF_SIGNALS)))
    else:
        final = ("exit", 0)
    return Worker(rank, attempt, stubborn, steps, final, fdcheck)


def gen_scenario(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    term_timeout = rng.choice([1, 2, 3])
    r = rng.random()
    if r < 0.45:
        event = "none"
    else:
        event = rng.choices(["SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGQUIT"],
                            weights=[30, 30, 25, 7, 8])[0]
    event_at = rng.uniform(0, 0.05) if rng.random() < 0.3 else rng.uniform(0.05, 3.0)
    again = rng.uniform(0.05, 1.0) if event == "SIGINT" and rng.random() < 0.25 else 0.0
    max_restarts = 1 if event == "none" and rng.random() < 0.12 else 0

    console = {}
    for stream in ("stdout", "stderr"):
        x = rng.random()
        if x < 0.7:
            console[stream] = ("read", 0)
        elif x < 0.8:
            console[stream] = ("stall", round(rng.uniform(0.3, 4.0), 2))
        elif x < 0.9:
            console[stream] = ("stall-forever", 0)
        else:
            console[stream] = ("close", rng.randint(0, 2))

    big_left = [BIG_BYTES_PER_SCENARIO]
    # How eventful the workers are: from "all but a few succeed" to "many fail or hang".
    p_fail = rng.choice([0.03, 0.15, 0.4])
    p_long = rng.choice([0.0, 0.1, 0.3])
    p_at_once = rng.choice([0.05, 0.15, 0.7])
    attempts = []
    for a in range(1 + max_restarts):
        workers = [gen_worker(rng, rank, a, console, big_left, p_fail, p_long, p_at_once)
                   for rank in range(n)]
        # Something must end every attempt: a failing worker, or a signal to the launcher.
        if any(w.final == ("long",) for w in workers) and not any(w.fails for w in workers) \
                and event == "none":
            w = rng.choice(workers)
            w.final = ("exit", rng.randint(1, 255)) if rng.random() < 0.8 else \
                ("signal", rng.choice(sorted(SELF_SIGNALS)))
        attempts.append(workers)
    return Scenario(seed, n, term_timeout, max_restarts, attempts, event, event_at, again,
                    console)


# --------------------------------------------------------------------- the worker script

def materialize(sc, d):
    """Writes worker.sh and the payload files into d; returns the script's path."""
    q = shlex.quote
    lines = ["# generated by test_fault_stress.py for scenario %d" % sc.seed,
             "ulimit -c 0", f"D={q(str(d))}",
             'case "$RANK.$TORCHELASTIC_RESTART_COUNT" in']
    for workers in sc.attempts:
        for w in workers:
            r, a = w.rank, w.attempt
            prog, intent = f'"$D/p_{r}_{a}"', f'"$D/i_{r}_{a}"'
            lines.append(f"{r}.{a})")
            if w.fdcheck:
                lines.append(f'  ls -l /proc/self/fd >"$D/fd_{r}_{a}"')
            if w.stubborn:
                lines.append("  trap '' TERM INT")
            for k, s in enumerate(w.steps):
                if s.kind == "out":
                    path = d / f"c_{r}_{a}_{k}"
                    path.write_bytes(s.data)
                    cmd = f'cat "$D/{path.name}"' + (" >&2" if s.stream == "stderr" else "")
                elif s.kind == "sleep":
                    cmd = f"sleep {s.secs:.3f}"
                elif s.kind == "child":
                    cmd = CHILD_KINDS[s.child][1]
                else:
                    cmd = f"exec {1 if s.stream == 'stdout' else 2}>&-"
                lines.append(f"  {cmd}")
                lines.append(f"  echo {k} >>{prog}")
            text = " ".join(str(x) for x in w.final)
            lines.append(f"  echo '{text}' >{intent}")
            if w.final[0] == "exit":
                lines.append(f"  exit {w.final[1]}")
            elif w.final[0] == "signal":
                if w.stubborn:
                    lines.append("  trap - TERM INT")
                lines.append(f"  kill -{w.final[1]} $$")
                lines.append("  sleep 2; exit 223  # not reached")
            else:
                lines.append(f"  sleep {LONG_SLEEP}; exit 221  # the launcher should stop it")
            lines.append("  ;;")
    lines.append('*) echo "stress: no plan for rank $RANK attempt '
                 '$TORCHELASTIC_RESTART_COUNT" >&2; exit 222;;')
    lines.append("esac")
    script = d / "worker.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


# ---------------------------------------------------------------------------- running it

class Console:
    """One of the launcher's console streams, read (or not) the way the scenario says."""

    def __init__(self, name, fd, mode, arg, t0):
        self.name, self.fd, self.mode, self.arg, self.t0 = name, fd, mode, arg, t0
        self.buf = bytearray()
        self.eof = False
        self.closed_early = False
        self.go = threading.Event()      # stall ends (time passed, or launcher exited)
        self.stop = threading.Event()    # the test gives up on this stream
        self.thread = None
        if mode == "close" and arg == 0:
            self._close()
            self.closed_early = True

    def _close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def start(self):
        if self.fd is not None:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

    def _run(self):
        if self.mode == "stall":
            self.go.wait(max(0.0, self.t0 + self.arg - time.monotonic()))
        elif self.mode == "stall-forever":
            self.go.wait()
        while not self.stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            data = os.read(self.fd, 1 << 16)
            if not data:
                self.eof = True
                return
            self.buf += data
            if self.mode == "close" and self.buf.count(b"\n") >= self.arg:
                self._close()
                self.closed_early = True
                return

    def launcher_exited(self):
        self.go.set()

    def finish(self):
        self.go.set()
        self.stop.set()
        if self.thread:
            self.thread.join(5)
        self._close()


@dataclasses.dataclass
class Result:
    rc: int | None = None
    hung: bool = False
    duration: float = 0.0
    signals: list = dataclasses.field(default_factory=list)  # (name, t_ns, effective)
    consoles: dict = dataclasses.field(default_factory=dict)
    console_held_by: dict = dataclasses.field(default_factory=dict)
    console_pipes: dict = dataclasses.field(default_factory=dict)
    leftovers: list = dataclasses.field(default_factory=list)
    unkillable: list = dataclasses.field(default_factory=list)
    intents: dict = dataclasses.field(default_factory=dict)   # (r, a) -> (text, mtime_ns)
    progress: dict = dataclasses.field(default_factory=dict)  # (r, a) -> steps completed
    fds: dict = dataclasses.field(default_factory=dict)       # (r, a) -> {fd: target}
    run_dir: pathlib.Path | None = None
    t0_ns: int = 0


def marker_pids(marker):
    needle = b"\0" + f"{MARK_VAR}={marker}".encode() + b"\0"
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if needle in b"\0" + env + b"\0":
            found.append(int(name))
    return found


def proc_info(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    state, ppid, pgid, sid = rest[0], int(rest[1]), int(rest[2]), int(rest[3])
    if state in "ZX":
        return None
    return {"pid": pid, "ppid": ppid, "pgid": pgid, "sid": sid, "state": state, "cmd": cmd}


def open_pipes(pid):
    """The fds of pid that are pipes or sockets (for diagnosing who holds what)."""
    out = []
    try:
        for fd in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith(("pipe:", "socket:")):
                out.append(f"{fd}->{target}")
    except OSError:
        pass
    return out


def pipe_holders(read_fd):
    ino = os.fstat(read_fd).st_ino
    target = f"pipe:[{ino}]"
    holders = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            for fd in os.listdir(f"/proc/{name}/fd"):
                if os.readlink(f"/proc/{name}/fd/{fd}") == target:
                    info = proc_info(int(name))
                    holders.append(info["cmd"] + f" (pid {name}, fd {fd})" if info else name)
                    break
        except OSError:
            continue
    return holders


def launcher_env(marker):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("XLAUNCH_") and k != "CUDA_VISIBLE_DEVICES"}
    env[MARK_VAR] = marker
    return env


def hang_bound(sc):
    fixed = os.environ.get("XLAUNCH_STRESS_HANG_S")
    if fixed:
        return float(fixed)
    return min(60.0, 20.0 + sc.nominal_duration())


def run_scenario(sc, xlaunch_bin, tmp):
    """Runs the launcher on scenario sc in directory tmp; returns a Result."""
    script = materialize(sc, tmp)
    log_dir = tmp / "logs"
    marker = f"{sc.seed}-{uuid.uuid4().hex}"
    run_id = f"stress-{sc.seed}-{uuid.uuid4().hex[:8]}"
    cmd = [xlaunch_bin, "launch", "--num_processes", str(sc.n), "--log_dir", str(log_dir),
           "--rdzv_id", run_id, "--term_timeout", str(sc.term_timeout),
           "--max_restarts", str(sc.max_restarts), "--no_python", "/bin/sh", str(script)]
    res = Result(run_dir=log_dir / run_id)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res.console_pipes = {"stdout": os.fstat(out_r).st_ino, "stderr": os.fstat(err_r).st_ino}
    pending = []
    if sc.event != "none":
        pending.append((sc.event_at, sc.event))
        if sc.event_again_after:
            pending.append((sc.event_at + sc.event_again_after, sc.event))
    bound = hang_bound(sc)
    try:
        res.t0_ns = time.time_ns()
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w,
                                env=launcher_env(marker), cwd=tmp, start_new_session=True)
    finally:
        os.close(out_w)
        os.close(err_w)
    consoles = {"stdout": Console("stdout", out_r, *sc.console["stdout"], t0),
                "stderr": Console("stderr", err_r, *sc.console["stderr"], t0)}
    for c in consoles.values():
        c.start()
    try:
        while proc.poll() is None:
            now = time.monotonic() - t0
            while pending and now >= pending[0][0]:
                _, name = pending.pop(0)
                effective = proc.poll() is None
                t_ns = time.time_ns()
                if effective:
                    os.kill(proc.pid, LAUNCHER_SIGNALS[name])
                res.signals.append((name, t_ns, effective))
            if now > bound:
                res.hung = True
                proc.kill()
                proc.wait()
                break
            wait = 0.01 if not pending else min(0.01, max(0.0, pending[0][0] - now))
            time.sleep(wait)
        res.duration = time.monotonic() - t0
        res.rc = proc.returncode
        for c in consoles.values():
            c.launcher_exited()

        # 4: every process carrying the marker goes away (bounded), then the test kills
        # what is left so that nothing leaks into other tests.
        deadline = time.monotonic() + sc.term_timeout + 5
        while time.monotonic() < deadline:
            if not [p for p in marker_pids(marker) if proc_info(p)]:
                break
            time.sleep(0.1)
        res.leftovers = [i for i in (proc_info(p) for p in marker_pids(marker)) if i]
        for i in res.leftovers:
            i["pipes"] = open_pipes(i["pid"])

        # 5: the console gets EOF once the launcher is gone (nothing else holds it).
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not all(
                c.eof or c.closed_early for c in consoles.values()):
            time.sleep(0.05)
        for name, c in consoles.items():
            if not (c.eof or c.closed_early) and c.fd is not None:
                res.console_held_by[name] = pipe_holders(c.fd)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        res.unkillable = kill_all(marker)
        for c in consoles.values():
            c.finish()
    res.consoles = {name: (bytes(c.buf), c) for name, c in consoles.items()}
    for name, (data, _) in res.consoles.items():
        (tmp / f"console_{name}.bin").write_bytes(data)  # for --keep

    for workers in sc.attempts:
        for w in workers:
            key = (w.rank, w.attempt)
            p = tmp / f"i_{w.rank}_{w.attempt}"
            if p.exists():
                res.intents[key] = (p.read_text().strip(), p.stat().st_mtime_ns)
            p = tmp / f"fd_{w.rank}_{w.attempt}"
            if p.exists():
                res.fds[key] = inherited_fds(p.read_text())
            p = tmp / f"p_{w.rank}_{w.attempt}"
            if p.exists():
                done = [int(x) for x in p.read_text().split()]
                res.progress[key] = max(done) + 1 if done else 0
    return res


def inherited_fds(listing):
    """`ls -l /proc/self/fd` output -> {fd: target} beyond stdin/stdout/stderr and ls's own
    directory handle (3)."""
    out = {}
    for line in listing.splitlines():
        m = re.search(r" (\d+) -> (.*)$", line)
        if m and int(m.group(1)) > 3:
            out[int(m.group(1))] = m.group(2)
    return out


def kill_all(marker):
    """SIGKILLs every process with the marker; returns those still there after 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pids = [p for p in marker_pids(marker) if proc_info(p)]
        if not pids:
            return []
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return [p for p in marker_pids(marker) if proc_info(p)]


# ---------------------------------------------------------------------------- the checks

def outcome_of(entry):
    """summary.json's worker entry -> ("exit", code) | ("signal", "SEGV") | None."""
    if entry is None:
        return None
    if entry.get("exit_code") is not None:
        return ("exit", entry["exit_code"])
    if entry.get("signal") is not None:
        for name, num in SELF_SIGNALS.items():
            if num == entry["signal"]:
                return ("signal", name)
        return ("signal", f"#{entry['signal']}")
    return None


def outcome_text(o):
    if o is None:
        return "no outcome"
    return f"exit {o[1]}" if o[0] == "exit" else f"SIG{o[1]}"


class Checker:
    def __init__(self, sc, res):
        self.sc, self.res = sc, res
        self.errors = []  # (invariant, message)
        self.summary = None
        self.summary_error = None
        self.entries = {}
        path = res.run_dir / "summary.json" if res.run_dir else None
        if path and path.exists():
            try:
                self.summary = json.loads(path.read_text())
                for e in self.summary.get("workers", []):
                    self.entries.setdefault((e.get("rank"), e.get("attempt")), []).append(e)
            except (ValueError, OSError) as e:
                self.summary_error = f"summary.json is not valid JSON: {e}"
        sig = [s for s in res.signals if s[2]]
        self.signal = sig[0] if sig else None  # the first effective launcher signal
        self.launcher_killed = res.rc == -9 and self.signal is not None and \
            self.signal[0] == "SIGKILL"
        # Killed by the signal's default action before it had handlers and before any worker
        # started: nothing ran, and a shell sees 128+S all the same, so the exit code is fine;
        # but a run folder without summary.json is still reported (invariant 3).
        xlog = res.run_dir / "xlaunch.log"
        self.died_before_setup = self.signal is not None and self.signal[0] != "SIGKILL" and \
            res.rc is not None and \
            res.rc == -LAUNCHER_SIGNALS[self.signal[0]] and not res.progress and \
            not res.intents and not res.fds and \
            not (xlog.exists() and " started, pid " in xlog.read_text(errors="replace"))
        self.abrupt = self.launcher_killed or self.died_before_setup  # no final flush

    def fail(self, inv, msg):
        self.errors.append((inv, msg))

    def entry(self, r, a):
        es = self.entries.get((r, a))
        return es[0] if es else None

    def t_rel(self, t_ns):
        return (t_ns - self.res.t0_ns) / 1e9

    # --- which attempts ran
    def attempts_ran(self):
        ran = [0]
        for a in range(1, len(self.sc.attempts)):
            evidence = any((r, a) in self.res.progress or (r, a) in self.res.intents or
                           (r, a) in self.entries for r in range(self.sc.n)) or \
                (self.res.run_dir / f"attempt_{a}").exists()
            if evidence:
                ran.append(a)
        return ran

    def failures(self, a):
        """Workers of attempt a that reached their failing last action: [(t_ns, worker)]."""
        out = []
        for w in self.sc.attempts[a]:
            if w.fails and (w.rank, a) in self.res.intents:
                out.append((self.res.intents[(w.rank, a)][1], w))
        return sorted(out, key=lambda x: x[0])

    def all_succeeded(self, a):
        return all(w.succeeds and (w.rank, a) in self.res.intents for w in self.sc.attempts[a])

    def end_of_attempt(self, a):
        """When the attempt's outcome was decided by the workers: first failure, or the last
        worker's exit when all succeeded; None if neither."""
        f = self.failures(a)
        if f:
            return f[0][0]
        if self.all_succeeded(a):
            return max(self.res.intents[(w.rank, a)][1] for w in self.sc.attempts[a])
        return None

    # --- 1
    def check_exit_code(self):
        sc, res = self.sc, self.res
        rc = res.rc
        ran = self.attempts_ran()
        final = ran[-1]
        for a in ran[:-1]:
            if not self.failures(a):
                self.fail(1, f"attempt {a + 1} ran although no worker of attempt {a} failed")
        if len(ran) < len(sc.attempts) and self.failures(final) and self.signal is None \
                and rc not in (-9,):
            self.fail(1, f"attempt {final} had a failure ({self.failure_text(final)}) but no "
                         f"restart happened (--max_restarts {sc.max_restarts})")
        if self.signal is None:
            self.check_no_signal_outcome(final, rc)
            return
        name, t_sig, _ = self.signal
        signum = LAUNCHER_SIGNALS[name]
        window = int(RACE_WINDOW * 1e9)
        if name == "SIGKILL" and rc == -9 or self.died_before_setup:
            return
        early = [(t, w) for t, w in self.failures(final) if t < t_sig - window]
        if name != "SIGKILL" and rc == 128 + signum and not (early and early[0][1].code == rc):
            if early:
                t, w = early[0]
                self.fail(1, f"exit code {rc} ({name}), but rank {w.rank} had already failed "
                             f"({w.final_text()} at {self.t_rel(t):.3f}s, {(t_sig - t) / 1e9:.3f}s "
                             f"before the {name} at {self.t_rel(t_sig):.3f}s): expected {w.code}")
            if self.summary and self.summary.get("interrupted_by") != name:
                self.fail(1, f"exit code {rc} but summary.json has interrupted_by="
                             f"{self.summary.get('interrupted_by')!r}, not {name!r}")
            return
        # The launcher did not end by the signal: the job must have ended (by itself) before
        # or about when the signal was sent, and the exit code follows the workers.
        expected = f"{128 + signum} ({name})" if name != "SIGKILL" else "-9 (killed)"
        end = self.end_of_attempt(final)
        if end is None or end > t_sig + window:
            when = "never" if end is None else f"at {self.t_rel(end):.3f}s"
            self.fail(1, f"exit code {rc} after {name} at {self.t_rel(t_sig):.3f}s, while the "
                         f"workers' outcome was decided {when}: expected {expected}")
            return
        self.check_no_signal_outcome(final, rc)

    def failure_text(self, a):
        return ", ".join(f"rank {w.rank} {w.final_text()} at {self.t_rel(t):.3f}s"
                         for t, w in self.failures(a)) or "none"

    def check_no_signal_outcome(self, a, rc):
        fails = self.failures(a)
        if rc == 0:
            if not self.all_succeeded(a):
                why = []
                for w in self.sc.attempts[a]:
                    intent = self.res.intents.get((w.rank, a))
                    if intent is None:
                        why.append(f"rank {w.rank} never reached its last action "
                                   f"({w.final_text()})")
                    elif w.fails:
                        why.append(f"rank {w.rank} did {w.final_text()} at "
                                   f"{self.t_rel(intent[1]):.3f}s")
                    elif not w.succeeds:
                        why.append(f"rank {w.rank} was still running ({w.final_text()})")
                self.fail(1, "exit code 0, but " + "; ".join(why))
                return
            cause = self.summary.get("root_cause") if self.summary else None
            # A root cause of an earlier attempt is the failure that caused the restart.
            if cause is not None and cause.get("attempt", a) >= a:
                self.fail(1, f"exit code 0 but summary.json names a root cause: {cause}")
            return
        if not fails:
            why = "every worker exited 0" if self.all_succeeded(a) else \
                "none reached a failing last action"
            self.fail(1, f"exit code {rc}, but no worker failed ({why})")
            return
        if self.summary is None:
            codes = {w.code for _, w in fails}
            if rc not in codes:
                self.fail(1, f"exit code {rc}, expected one of {sorted(codes)} "
                             f"({self.failure_text(a)}); no summary.json to name the root cause")
            return
        cause = self.summary.get("root_cause")
        if not cause:
            self.fail(1, f"exit code {rc} but summary.json names no root cause "
                         f"(failures: {self.failure_text(a)})")
            return
        r, ca = cause.get("rank"), cause.get("attempt", a)
        if ca != a or not isinstance(r, int) or not 0 <= r < self.sc.n:
            self.fail(1, f"root cause {cause} is not a rank of attempt {a}")
            return
        w = self.sc.attempts[a][r]
        if not w.fails:
            self.fail(1, f"root cause is rank {r}, which was to {w.final_text()} (no failure); "
                         f"exit code {rc}; real failures: {self.failure_text(a)}")
            return
        if (r, a) not in self.res.intents:
            self.fail(1, f"root cause is rank {r}, which never reached its last action "
                         f"({w.final_text()}); real failures: {self.failure_text(a)}")
            return
        e = self.entry(r, a)
        if outcome_of(e) != w.final:
            self.fail(1, f"root cause rank {r} was to {w.final_text()}, summary.json says "
                         f"{outcome_text(outcome_of(e))}")
        if rc != w.code:
            self.fail(1, f"exit code {rc}, but the root cause rank {r} did {w.final_text()}: "
                         f"expected {w.code}")
        if e is not None and e.get("stopped_by_launcher"):
            self.fail(1, f"root cause rank {r} is marked stopped_by_launcher")
        # First failure: no other worker that really failed on its own did so clearly earlier
        # (by its own clock), nor earlier by the launcher's clock.
        t_cause = self.res.intents[(r, a)][1]
        window = int(RACE_WINDOW * 1e9)
        for t, other in fails:
            if other.rank == r:
                continue
            oe = self.entry(other.rank, a)
            if outcome_of(oe) != other.final or (oe and oe.get("stopped_by_launcher")):
                continue
            if t < t_cause - window:
                self.fail(1, f"root cause is rank {r} (failed at {self.t_rel(t_cause):.3f}s) but "
                             f"rank {other.rank} failed first ({other.final_text()} at "
                             f"{self.t_rel(t):.3f}s)")
            if e and oe and oe.get("end") and e.get("end") and oe["end"] < e["end"]:
                self.fail(1, f"root cause is rank {r} (end {e['end']}) but summary.json has "
                             f"rank {other.rank} failing on its own earlier (end {oe['end']})")

    # --- 2
    def check_logs(self):
        for a in self.attempts_ran():
            for w in self.sc.attempts[a]:
                key = (w.rank, a)
                finished = key in self.res.intents
                completed = len(w.steps) if finished else self.res.progress.get(key, 0)
                for stream in ("stdout", "stderr"):
                    full = w.expected(stream)
                    low = w.expected(stream, completed)
                    path = self.res.run_dir / f"attempt_{a}" / f"rank_{w.rank}" / f"{stream}.log"
                    try:
                        got = path.read_bytes()
                    except FileNotFoundError:
                        got = None
                    where = f"rank {w.rank} attempt {a} {stream}.log"
                    if got is None:
                        if low and not self.abrupt:
                            self.fail(2, f"{where} is missing; the worker wrote {len(low)} B")
                        continue
                    if not full.startswith(got):
                        i = first_diff(full, got)
                        self.fail(2, f"{where}: {len(got)} B are not a prefix of the {len(full)} B "
                                     f"the worker was to write; first difference at byte {i}: "
                                     f"expected {full[i:i + 40]!r}, got {got[i:i + 40]!r}")
                        continue
                    if self.abrupt:
                        continue
                    if len(got) < len(low):
                        state = "reached its last action" if finished else \
                            f"completed {completed} of {len(w.steps)} steps"
                        self.fail(2, f"{where} has {len(got)} B, but the worker {state} and had "
                                     f"written {len(low)} B (of {len(full)}); missing from byte "
                                     f"{len(got)}: {low[len(got):len(got) + 40]!r}")

    # --- 3
    def check_summary(self):
        if self.summary_error:
            self.fail(3, self.summary_error)
            return
        if self.died_before_setup:
            if self.res.run_dir.exists():
                left = sorted(p.name for p in self.res.run_dir.iterdir())
                self.fail(3, f"xlaunch died by {self.signal[0]}'s default action "
                             f"{self.t_rel(self.signal[1]):.3f}s after start (no handler yet), "
                             f"leaving a run folder without summary.json (it holds {left})")
            return
        if self.launcher_killed:
            return
        if self.summary is None:
            self.fail(3, f"no summary.json in {self.res.run_dir}")
            return
        s = self.summary
        if s.get("exit_code") != self.res.rc:
            self.fail(3, f"summary.json exit_code {s.get('exit_code')} != the launcher's "
                         f"{self.res.rc}")
        bad, unlisted = [], []
        try:
            xlog = (self.res.run_dir / "xlaunch.log").read_text(errors="replace")
        except OSError:
            xlog = ""
        not_started = {(e.get("rank"), e.get("attempt")) for e in s.get("not_started") or []}
        for a in self.attempts_ran():
            for r in range(self.sc.n):
                es = self.entries.get((r, a), [])
                ran = (r, a) in self.res.progress or (r, a) in self.res.intents or \
                    (r, a) in self.res.fds
                which = f"rank {r}" + (f" of attempt {a}" if self.sc.max_restarts else "")
                if (r, a) in not_started:
                    if es:
                        bad.append(f"{which} is both in workers and in not_started")
                    elif ran:
                        bad.append(f"{which} is in not_started, but it ran (it left its files)")
                    continue
                if not es:
                    started = f"attempt {a}: rank {r} (local rank {r}) started" in xlog or ran
                    unlisted.append(which + ("" if started else "*"))
                    continue
                if len(es) != 1:
                    bad.append(f"rank {r} attempt {a} listed {len(es)} times")
                    continue
                e = es[0]
                if (e.get("exit_code") is None) == (e.get("signal") is None):
                    bad.append(f"rank {r} attempt {a}: exit_code={e.get('exit_code')} "
                               f"signal={e.get('signal')} (pid {e.get('pid')})")
        if bad:
            self.fail(3, "summary.json workers: " + "; ".join(bad))
        if unlisted:
            note = " (*: never started, per xlaunch.log and the worker's files)" \
                if any(u.endswith("*") for u in unlisted) else ""
            self.fail(3, f"summary.json lists neither in workers nor in not_started: "
                         f"{', '.join(unlisted)}{note}")
        extra = sorted(set(self.entries) - {(r, a) for a in self.attempts_ran()
                                            for r in range(self.sc.n)}, key=str)
        if extra:
            self.fail(3, f"summary.json lists workers that did not run: {extra}")
        tmp = [p.name for p in self.res.run_dir.glob("**/*.tmp*")]
        if tmp:
            self.fail(3, f"temporary files left in the log folder: {tmp}")

    # --- 4
    def check_leftovers(self):
        if self.res.leftovers:
            desc = []
            for i in self.res.leftovers:
                tags = []
                if i["sid"] == i["pid"]:
                    tags.append("session leader (setsid)")
                if i["ppid"] == 1:
                    tags.append("orphaned to init")
                held = [f"{p} (console {name})" for p in i.get("pipes", [])
                        for name, ino in self.res.console_pipes.items()
                        if p.endswith(f"pipe:[{ino}]")]
                if held:
                    tags.append("holds " + ", ".join(held))
                desc.append(f"pid {i['pid']} ppid {i['ppid']} pgid {i['pgid']} sid {i['sid']} "
                            f"[{i['cmd']}]" + (f" {', '.join(tags)}" if tags else ""))
            note = " (the launcher was SIGKILLed)" if self.launcher_killed else \
                " (the test SIGKILLed the hung launcher)" if self.res.hung else ""
            self.fail(4, f"{len(desc)} process(es) with the run's marker still alive "
                         f"{self.sc.term_timeout + 5}s after the launcher exited{note}: " +
                         "; ".join(desc))
        if self.res.unkillable:
            self.fail(4, f"processes the test could not kill: {self.res.unkillable}")

    # --- 5
    def check_hang(self):
        if self.res.hung:
            stalled = [s for s, (m, _) in self.sc.console.items() if m != "read"]
            self.fail(5, f"launcher hung: still running after {hang_bound(self.sc):.0f}s "
                         f"(killed by the test)" +
                         (f"; its console {'/'.join(stalled)} was not being read as usual"
                          if stalled else ""))
        for stream, holders in self.res.console_held_by.items():
            self.fail(5, f"console {stream} still open 3s after the launcher exited, held by: "
                         f"{holders or 'unknown'}")

    # --- 6
    def check_console(self):
        # Did xlaunch say (on its console or in xlaunch.log) that it left lines out?
        said = re.compile(rb"drop|not shown|keep up|skipped", re.I)
        drops = False
        for stream in ("stdout", "stderr"):
            data, c = self.res.consoles[stream]
            if any(said.search(ln) for ln in data.split(b"\n") if ln.startswith(b"xlaunch")):
                drops = True
        try:
            if said.search((self.res.run_dir / "xlaunch.log").read_bytes()):
                drops = True
        except OSError:
            pass
        for stream in ("stdout", "stderr"):
            data, c = self.res.consoles[stream]
            if c.closed_early or self.res.hung:
                continue
            complete = not self.abrupt and c.eof
            unread_at_exit = c.mode == "stall-forever" or \
                (c.mode == "stall" and c.arg + 0.2 >= self.res.duration)
            errors, bodies = parse_console(data, self.sc.n,
                                           torn_tail_ok=self.abrupt or unread_at_exit)
            for e in errors[:5]:
                self.fail(6, f"console {stream}: {e}")
            if errors:
                continue
            ran = self.attempts_ran()
            for r in range(self.sc.n):
                logs = []
                for a in ran:
                    p = self.res.run_dir / f"attempt_{a}" / f"rank_{r}" / f"{stream}.log"
                    logs.append(p.read_bytes() if p.exists() else b"")
                log = b"".join(logs)
                pos, missing = 0, 0
                for body in bodies[r]:
                    if not body:
                        continue
                    i = log.find(body, pos)
                    if i < 0:
                        where = log.find(body)
                        self.fail(6, f"console {stream}: rank {r} line {body[:60]!r}"
                                     f"{'...' if len(body) > 60 else ''} ({len(body)} B) is "
                                     + ("not in its log" if where < 0 else
                                        f"out of order (log byte {where}, expected after {pos})"))
                        break
                    missing += len(re.sub(rb"[\r\n]", b"", log[pos:i]))
                    pos = i + len(body)
                else:
                    missing += len(re.sub(rb"[\r\n]", b"", log[pos:]))
                    # Only a console read while xlaunch ran can be asked for everything.
                    if missing and complete and not unread_at_exit and not drops:
                        self.fail(6, f"console {stream}: {missing} B of rank {r}'s {stream} "
                                     f"never shown, and xlaunch reported no dropped lines")

    # --- 7
    def check_fds(self):
        leaks = []
        for (r, a), fds in sorted(self.res.fds.items()):
            for fd, target in sorted(fds.items()):
                what = [f"console {name}" for name, ino in self.res.console_pipes.items()
                        if target == f"pipe:[{ino}]"]
                leaks.append(f"rank {r}{f' attempt {a}' if self.sc.max_restarts else ''} fd {fd} "
                             f"-> {target}{' (' + what[0] + ')' if what else ''}")
        if leaks:
            self.fail(7, "workers inherited descriptors besides 0, 1, 2: " + "; ".join(leaks))

    def run_all(self):
        self.check_hang()
        self.check_fds()
        self.check_leftovers()
        if not self.res.hung:
            self.check_exit_code()
            self.check_summary()
            self.check_logs()
            self.check_console()
        return self.errors


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def parse_console(data, n, torn_tail_ok):
    """Splits console bytes into per-rank bodies; returns (errors, {rank: [body...]}).
    A console line is xlaunch's own (starts with "xlaunch") or `[rankN]: ` + bytes; a rank's
    '\\r' piece keeps the line open (a progress bar redrawn in place), so after a '\\r' comes
    another prefixed piece or an xlaunch line. torn_tail_ok: the last line may lack its
    newline (the launcher exited while nobody read the console, so it could not finish it)."""
    errors = []
    bodies = {r: [] for r in range(n)}
    lines = data.split(b"\n")
    last = lines.pop()
    if last and not torn_tail_ok:
        if last.endswith(b"\r"):
            errors.append(f"ends with a '\\r' piece and no newline (a progress bar left open "
                          f"when its rank ended): {last[-80:]!r}")
        else:
            errors.append(f"ends without a newline: {last[-80:]!r}")
    for no, ln in enumerate(lines + ([last] if last else []), 1):
        pieces = ln.split(b"\r")
        for i, piece in enumerate(pieces):
            if piece.startswith(b"xlaunch"):
                break  # xlaunch's line: the rest of it is its own (e.g. a quoted stderr tail)
            if not piece:
                continue
            torn = torn_tail_ok and ln is last and i == len(pieces) - 1
            if torn and TORN_PREFIX.fullmatch(piece):
                continue  # cut off inside its prefix: no body bytes to check
            m = RANK_PREFIX.match(piece)
            if not m or int(m.group(1)) >= n:
                errors.append(f"line {no} is neither `[rankN]: ...` nor xlaunch's: "
                              f"{piece[:80]!r}")
                continue
            body = piece[m.end():]
            if RANK_PREFIX.search(body):
                errors.append(f"line {no} holds two ranks' output: {piece[:80]!r}...")
                continue
            bodies[int(m.group(1))].append(body)
    return errors, bodies


# ------------------------------------------------------------------------- the driver

def replay_command(seed):
    return f"python3 tests/integration/test_fault_stress.py --scenario-seed {seed}"


def describe_result(sc, res):
    parts = [f"exit code {res.rc} after {res.duration:.2f}s" + (" (hung)" if res.hung else "")]
    for name, t_ns, eff in res.signals:
        parts.append(f"{name} sent at {(t_ns - res.t0_ns) / 1e9:.3f}s"
                     + ("" if eff else " (not sent: the launcher had exited)"))
    fin = []
    for (r, a), (text, t) in sorted(res.intents.items()):
        who = f"r{r}" + (f"a{a}" if sc.max_restarts else "")
        fin.append(f"{who}:{text}@{(t - res.t0_ns) / 1e9:.3f}s")
    parts.append("workers that reached their last action: " + (", ".join(fin) or "none"))
    return "; ".join(parts)


def run_one(seed, xlaunch_bin, keep=False, verbose=False, out=sys.stdout):
    """Runs scenario `seed`; returns (errors, text of the report)."""
    sc = gen_scenario(seed)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"xstress-{seed}-"))
    try:
        res = run_scenario(sc, xlaunch_bin, tmp)
        errors = Checker(sc, res).run_all()
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    invs = sorted({i for i, _ in errors})
    line = f"scenario {seed}: " + ("ok" if not errors else
                                   f"FAIL invariant(s) {','.join(map(str, invs))}") + \
        f" ({sc.n} workers, {sc.event}, rc {res.rc}, {res.duration:.1f}s)"
    report = ""
    if errors:
        report = "\n".join(
            [f"FAIL scenario seed {seed}: invariant(s) {', '.join(map(str, invs))}",
             f"  replay: {replay_command(seed)}",
             *("  " + ln for ln in sc.text().splitlines()),
             f"  result: {describe_result(sc, res)}",
             *(f"  [{i}] {m}" for i, m in errors)])
        if keep:
            report += f"\n  kept: {tmp}"
    print(line, file=out, flush=True)
    if verbose and not errors:
        print(sc.text(), file=out, flush=True)
    if not (keep and errors):
        shutil.rmtree(tmp, ignore_errors=True)
    return errors, report


def run_many(xlaunch_bin, base_seed, seconds, count=None, keep=False, verbose=False,
             out=sys.stdout):
    print(f"fault stress: binary {xlaunch_bin}, base seed {base_seed}, budget {seconds:.0f}s"
          + (f", {count} scenarios" if count else ""), file=out, flush=True)
    start = time.monotonic()
    reports, i = [], 0
    while (count is None and time.monotonic() - start < seconds) or \
            (count is not None and i < count):
        errors, report = run_one(base_seed + i, xlaunch_bin, keep, verbose, out)
        if errors:
            reports.append((base_seed + i, errors, report))
        i += 1
    took = time.monotonic() - start
    seeds = f"seeds {base_seed}..{base_seed + i - 1}" if i else "no seeds"
    summary = (f"fault stress: {i} scenario(s) ({seeds}) in {took:.0f}s; "
               f"{len(reports)} failed" +
               (": " + ", ".join(str(s) for s, _, _ in reports) if reports else ""))
    print(summary, file=out, flush=True)
    return i, reports, summary


def default_bin():
    return os.environ.get("XLAUNCH_BIN", str(ROOT / "build/release/cli/xlaunch"))


def test_fault_stress(xlaunch_bin, capsys):
    """CI entry: scenarios base, base+1, ... until XLAUNCH_STRESS_SECONDS are used."""
    seconds = float(os.environ.get("XLAUNCH_STRESS_SECONDS", "150"))
    base = int(os.environ.get("XLAUNCH_STRESS_SEED", DEFAULT_BASE_SEED))
    with capsys.disabled():  # the seeds always reach the CI log
        print(f"\nfault stress: base seed {base} (XLAUNCH_STRESS_SEED), budget {seconds:.0f}s "
              f"(XLAUNCH_STRESS_SECONDS)", flush=True)
    n, reports, summary = run_many(xlaunch_bin, base, seconds)
    with capsys.disabled():
        print(summary, flush=True)
    assert n > 0
    if reports:
        shown = [r for _, _, r in reports[:10]]
        more = len(reports) - len(shown)
        import pytest
        pytest.fail(summary + "\n\n" + "\n\n".join(shown) +
                    (f"\n\n... and {more} more failing scenario(s)" if more else ""),
                    pytrace=False)


def main(argv=None):
    from launch_helpers import restore_default_stop_signals  # as conftest.py does
    restore_default_stop_signals()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("XLAUNCH_STRESS_SECONDS", "150")),
                    help="stop starting scenarios after this many seconds")
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("XLAUNCH_STRESS_SEED", DEFAULT_BASE_SEED)),
                    help="base seed: scenarios are seed, seed+1, ...")
    ap.add_argument("--count", type=int, help="run exactly this many scenarios")
    ap.add_argument("--scenario-seed", type=int, action="append",
                    help="replay this scenario (repeatable)")
    ap.add_argument("--describe", type=int, action="append",
                    help="print this scenario and run nothing (repeatable)")
    ap.add_argument("--bin", default=default_bin(), help="the xlaunch binary")
    ap.add_argument("--keep", action="store_true", help="keep the folders of failed scenarios")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every scenario")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... | head` ends this script quietly
    if args.describe:
        for s in args.describe:
            print(gen_scenario(s).text())
        return 0
    if not os.access(args.bin, os.X_OK):
        print(f"xlaunch binary not found or not executable: {args.bin} (set XLAUNCH_BIN or "
              f"--bin)", file=sys.stderr)
        return 2
    if args.scenario_seed:
        failed = 0
        for s in args.scenario_seed:
            errors, report = run_one(s, args.bin, args.keep, True)
            if errors:
                failed += 1
                print(report, flush=True)
        return 1 if failed else 0
    n, reports, summary = run_many(args.bin, args.seed, args.seconds, args.count,
                                   args.keep, args.verbose)
    for _, _, report in reports:
        print("\n" + report, flush=True)
    if reports:
        print("\n" + summary)
    return 1 if reports else 0


if __name__ == "__main__":
    sys.exit(main())
