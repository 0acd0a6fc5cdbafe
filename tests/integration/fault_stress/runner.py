"""Runs the launcher on one scenario (run_scenario) and records what happened (Result): its
exit code and duration, the signals it got, what its console showed, the processes left
behind, and what each worker recorded in its files (progress, intent, descriptors)."""
from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import time
import uuid

from .faults import Console, launcher_signals, materialize, send_due_signals

MARK_VAR = "XLAUNCH_STRESS_MARK"


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
    pending = launcher_signals(sc)
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
        wait_for_launcher(proc, pending, bound, t0, res)
        for c in consoles.values():
            c.launcher_exited()
        find_leftovers(sc, marker, res)
        find_console_holders(consoles, res)
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
    read_worker_files(sc, tmp, res)
    return res


def wait_for_launcher(proc, pending, bound, t0, res):
    """Waits for the launcher to exit, sending it the scenario's signals when due; past
    `bound` seconds it is hung and killed. Sets res.duration, res.rc (and res.hung)."""
    while proc.poll() is None:
        now = time.monotonic() - t0
        send_due_signals(proc, pending, now, res)
        if now > bound:
            res.hung = True
            proc.kill()
            proc.wait()
            break
        wait = 0.01 if not pending else min(0.01, max(0.0, pending[0][0] - now))
        time.sleep(wait)
    res.duration = time.monotonic() - t0
    res.rc = proc.returncode


def find_leftovers(sc, marker, res):
    """4: every process carrying the marker goes away (bounded); those left are recorded in
    res.leftovers (run_scenario then kills them, so that nothing leaks into other tests)."""
    deadline = time.monotonic() + sc.term_timeout + 5
    while time.monotonic() < deadline:
        if not [p for p in marker_pids(marker) if proc_info(p)]:
            break
        time.sleep(0.1)
    res.leftovers = [i for i in (proc_info(p) for p in marker_pids(marker)) if i]
    for i in res.leftovers:
        i["pipes"] = open_pipes(i["pid"])


def find_console_holders(consoles, res):
    """5: the console gets EOF once the launcher is gone (nothing else holds it); who holds a
    console still open 3 s later goes to res.console_held_by."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not all(
            c.eof or c.closed_early for c in consoles.values()):
        time.sleep(0.05)
    for name, c in consoles.items():
        if not (c.eof or c.closed_early) and c.fd is not None:
            res.console_held_by[name] = pipe_holders(c.fd)


def read_worker_files(sc, tmp, res):
    """What each worker recorded in tmp: its intent (the last action it reached, and when),
    the descriptors it inherited, and how many of its steps it completed."""
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
