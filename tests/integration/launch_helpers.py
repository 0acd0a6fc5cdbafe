"""Helpers for tests that run `xlaunch launch` and watch its workers."""
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import time

WORKERS = pathlib.Path(__file__).resolve().parent / "workers"


def launch(xlaunch_bin, args, env=None, timeout=60, python=None, raw=False, cwd=None):
    """Runs xlaunch launch to completion; returns the CompletedProcess. raw=True keeps the
    output as bytes ('\r' survives; text mode would turn it into '\n')."""
    cmd = [xlaunch_bin, "launch", "--python", python or sys.executable, *args]
    return subprocess.run(cmd, env=merged_env(env), capture_output=True, text=not raw,
                          timeout=timeout, cwd=cwd)


def start(xlaunch_bin, args, env=None, python=None):
    """Starts xlaunch launch in the background (its own session, like a shell job)."""
    cmd = [xlaunch_bin, "launch", "--python", python or sys.executable, *args]
    return subprocess.Popen(cmd, env=merged_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def merged_env(extra):
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(extra or {})
    return env


def wait_for_files(directory, pattern, count, timeout=30):
    """Waits until `count` files match; fails the test (with what it saw) otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(pathlib.Path(directory).glob(pattern))
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"expected {count} files {pattern} in {directory}, "
                         f"found {sorted(p.name for p in pathlib.Path(directory).iterdir())}")


def wait_for_pids(directory, pattern, count, timeout=30):
    """Waits until `count` files match and each holds a pid: a worker's write_text creates
    the file before it writes, so a file that exists may still be empty. Returns the pids."""
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.1, deadline - time.monotonic())
        found = wait_for_files(directory, pattern, count, timeout=left)
        texts = [f.read_text().strip() for f in found]
        if all(t.isdigit() for t in texts):
            return [int(t) for t in texts]
        if time.monotonic() >= deadline:
            raise AssertionError(f"{pattern} in {directory}: {texts} are not all pids")
        time.sleep(0.05)


def alive(pid):
    """True when the process exists and is not a zombie (nor dying: ESRCH)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(pids, timeout=15):
    """Waits for every pid to disappear; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:  # never leave them behind, even when the test fails
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def recorded_pids(out_dir, key="pid"):
    pids = []
    for path in pathlib.Path(out_dir).glob("pids_*.json"):
        data = json.loads(path.read_text())
        if key in data:
            pids.append(data[key])
    return pids


def summary(log_dir):
    """The one run folder under log_dir and its summary.json, parsed."""
    (run_dir,) = [p for p in pathlib.Path(log_dir).iterdir() if p.is_dir()]
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def restore_default_stop_signals():
    """Starts xlaunch as a foreground command would be: with the stop signals at their
    defaults. A runner that starts the tests as a script's background job hands down
    SIGINT and SIGQUIT ignored, and xlaunch honours an ignored stop signal (as nohup asks),
    so every test that sends one would fail."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                          else signal.SIG_DFL)


def free_ports(count):
    """`count` distinct free TCP ports on 127.0.0.1 below the ephemeral range (32768 and up),
    held together while choosing: a port from the ephemeral range can be taken by any outgoing
    connection or srun's own listeners before the launcher binds it."""
    sockets = []
    try:
        for _ in range(10000):
            if len(sockets) == count:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", random.randrange(20000, 32000)))
            except OSError:
                s.close()
                continue
            sockets.append(s)
        if len(sockets) < count:
            raise RuntimeError(f"no {count} free ports in 20000-32000")
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port():
    return free_ports(1)[0]
