"""A full --log_dir disk: the rank's log stops, and xlaunch says so (console, xlaunch.log,
summary.json), naming the rank and where the log stops. The log folder is a 256 KiB tmpfs
in a mount namespace of its own (needs root, as scripts/test runs)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from launch_helpers import merged_env

# Fills the log disk with a ballast file, prints more than fits, waits for the test's go
# (after the launcher's warning), then frees the disk so that the run's end can be written.
WORKER = r'''
import errno, os, sys
out, logs = os.environ["OUT_DIR"], os.environ["LOGS"]
fd = os.open(f"{logs}/ballast", os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError as e:
    assert e.errno == errno.ENOSPC, e
os.close(fd)
for i in range(4000):
    print(f"line {i} " + "y" * 40)
sys.stdout.flush()
for _ in range(600):  # the go comes at once; without the warning, give up after a minute
    if os.path.exists(f"{out}/go"):
        break
    os.system("sleep 0.1")
os.unlink(f"{logs}/ballast")
'''


def test_a_full_log_disk_is_reported_naming_the_rank_and_where_the_log_stops(xlaunch_bin,
                                                                              tmp_path):
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.fail("this test mounts a tmpfs: run it as root, with util-linux's unshare")
    out, logs, copy = tmp_path / "out", tmp_path / "logs", tmp_path / "copy"
    out.mkdir()
    logs.mkdir()
    (tmp_path / "worker.py").write_text(WORKER)
    script = ('mount -t tmpfs -o size=256k tmpfs "$LOGS" || exit 99; '
              '"$@"; rc=$?; cp -r "$LOGS" "$COPY"; exit $rc')
    cmd = ["unshare", "-m", "sh", "-c", script, "sh", xlaunch_bin, "launch", "--python",
           sys.executable, "--log_dir", str(logs), "--rdzv_id", "full",
           str(tmp_path / "worker.py")]
    with open(tmp_path / "stdout", "w") as stdout:
        p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True,
                             env=merged_env({"OUT_DIR": str(out), "LOGS": str(logs),
                                             "COPY": str(copy)}))
        seen = []
        for line in p.stderr:
            seen.append(line)
            if line.startswith("xlaunch: warning: rank 0's log"):
                break
        (out / "go").touch()
        rest = p.stderr.read()
        p.wait(timeout=60)
    err = "".join(seen) + rest
    assert p.returncode == 0, err
    warnings = [line for line in seen if "rank 0's log" in line]
    assert warnings, err
    warning = warnings[0]
    log = copy / "full" / "attempt_0" / "rank_0" / "stdout.log"
    size = log.stat().st_size
    assert size < 4000 * 50, "the log was not cut: the disk was not full"
    assert warning.strip() == (
        f"xlaunch: warning: rank 0's log {logs}/full/attempt_0/rank_0/stdout.log stops at byte "
        f"{size}: No space left on device; the rest of its output reached the console only")
    summary = json.loads((copy / "full" / "summary.json").read_text())
    assert summary["log_cuts"] == [{"rank": 0, "attempt": 0, "log": str(log).replace(
        str(copy), str(logs)), "stops_at_byte": size, "error": "No space left on device"}]
    assert warning.split("warning: ")[1].strip() in (copy / "full" / "xlaunch.log").read_text()
    assert "line 3999" in (tmp_path / "stdout").read_text()  # the console got everything


def test_a_log_disk_out_of_inodes_at_a_restart_costs_no_restart(xlaunch_bin, tmp_path):
    # Attempt 0 uses up the log file system's inodes and fails: attempt 1's log folder cannot
    # be made. Before: the restart's rank "exited with code 1" (pid 0) without running, "no
    # restarts left", exit 1. Now it runs, its output (redirected, even) on the console only.
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.fail("this test mounts a tmpfs: run it as root, with util-linux's unshare")
    logs, copy = tmp_path / "logs", tmp_path / "copy"
    logs.mkdir()
    script = ('mount -t tmpfs -o size=4m,nr_inodes=64 tmpfs "$LOGS" || exit 99; '
              '"$@"; rc=$?; cp -r "$LOGS" "$COPY"; exit $rc')
    worker = ('if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then mkdir "$LOGS/fill"; i=0; '
              'while touch "$LOGS/fill/$i" 2>/dev/null; do i=$((i+1)); done; exit 3; fi; '
              'rm -rf "$LOGS/fill"; echo attempt 1 ran fine')
    cmd = ["unshare", "-m", "sh", "-c", script, "sh", xlaunch_bin, "launch", "--log_dir",
           str(logs), "--rdzv_id", "inodes", "--max_restarts", "1", "--redirects", "3",
           "--no_python", "sh", "-c", worker]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                       env=merged_env({"LOGS": str(logs), "COPY": str(copy)}))
    assert r.returncode == 0, r.stderr
    assert "[rank0]: attempt 1 ran fine" in r.stdout, r.stdout
    attempt_1 = f"{logs}/inodes/attempt_1"
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert warnings == [
        f"xlaunch: warning: cannot create {attempt_1}: No space left on device; attempt 1's "
        "ranks whose log files cannot be made run with their output on the console only "
        "(summary.json's log_cuts lists them)"], r.stderr
    assert "pid 0" not in r.stderr and "no restarts left" not in r.stderr
    summary = json.loads((copy / "inodes" / "summary.json").read_text())
    assert summary["exit_code"] == 0
    assert [(w["attempt"], w["exit_code"]) for w in summary["workers"]] == [(0, 3), (1, 0)]
    assert summary["log_cuts"] == [
        {"rank": 0, "attempt": 1, "log": f"{attempt_1}/rank_0/{name}.log", "stops_at_byte": 0,
         "error": f"cannot create {attempt_1}: No space left on device"}
        for name in ("stdout", "stderr")]
