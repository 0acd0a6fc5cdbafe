"""How workers are started (docs/launch.md, "How workers are started"): no heap call between
fork and exec in a child of a multithreaded xlaunch, workers made by the single-threaded
spawner are the launcher's own children, the spawner ends with the launcher, and a rank that
never runs its program is a reported failure, not a hang.

The fork detector (tests/fork_detector/fork_detector.c, built by CMake) is preloaded into
xlaunch: it reports every heap call in a child of a process that had more than one thread,
before that child's exec. On the launcher that forked its workers from the main thread
while the store, monitor and sampler threads ran, it reported each worker's allocations.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from etcd_fixtures import etcd, etcd_binary  # noqa: F401 (fixtures)
from launch_helpers import merged_env, wait_for_files, wait_until_gone

TIMEOUT = 120  # seconds for any one launch on a loaded CI machine


@pytest.fixture(scope="session")
def detector(build_dir, xlaunch_bin):
    lib = build_dir / "tests" / "libfork_detector.so"
    if not lib.exists():
        pytest.fail(f"the fork detector is not built at {lib}: build the fork_detector target")
    needed = subprocess.run(["ldd", xlaunch_bin], capture_output=True, text=True).stdout
    if "libasan" in needed:
        # ASan owns malloc; the detector, which replaces it, cannot run beside it. The
        # sanitizer pass deselects these tests (scripts/test: -m "not release_build") and
        # covers the same hang by running etcd jobs (test_etcd_*.py).
        pytest.fail(f"{xlaunch_bin} is an ASan build: the fork detector replaces malloc, which "
                    "ASan owns; run these tests on a release build or deselect them with "
                    "-m 'not release_build'")
    return lib


class Detected:
    """Runs launchers with the detector preloaded; `reports` reads what it wrote."""

    def __init__(self, lib, xlaunch_bin, tmp_path):
        self.lib = lib
        self.bin = xlaunch_bin
        self.log = tmp_path / "fork_detector.log"
        self.procs = []

    def env(self, extra=None):
        return merged_env({"LD_PRELOAD": str(self.lib), "FORK_DETECTOR_LOG": str(self.log),
                           **(extra or {})})

    def start(self, args, extra_env=None):
        p = subprocess.Popen([self.bin, "launch", *args], env=self.env(extra_env),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def finish(self, p):
        out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 0, err
        return out, err

    def lines(self):
        return self.log.read_text().splitlines() if self.log.exists() else []

    def check(self):
        """Every launcher loaded the detector, and no child allocated before exec."""
        lines = self.lines()
        loaded = [l for l in lines if l.startswith("load ") and l.endswith("/xlaunch")]
        assert len(loaded) >= len(self.procs), lines
        heap = [l for l in lines if l.startswith("heap ")]
        assert heap == [], "\n".join(lines)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()


@pytest.fixture
def detected(detector, xlaunch_bin, tmp_path):
    d = Detected(detector, xlaunch_bin, tmp_path)
    yield d
    d.stop()


def free_port():
    from etcd_fixtures import free_ports
    return free_ports(1)[0]


WORKER = ["--no_python", "/bin/sh", "-c", "echo rank $RANK; exit 0"]


@pytest.mark.release_build
def test_the_detector_sees_a_fork_from_a_threaded_process(detector, tmp_path):
    # Proof that it works: Python's os.fork with a thread running, then a heap call.
    log = tmp_path / "self.log"
    code = ("import os, threading, time\n"
            "threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    [bytearray(4096) for _ in range(10)]\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT,
                   env=merged_env({"LD_PRELOAD": str(detector), "FORK_DETECTOR_LOG": str(log)}))
    lines = log.read_text().splitlines()
    assert any(l.startswith("fork ") and l.endswith(" threads 2") for l in lines), lines
    assert any(l.startswith("heap malloc child ") for l in lines), lines


@pytest.mark.release_build
def test_one_machine_workers_start_without_heap_calls(detected):
    detected.finish(detected.start(["--num_processes", "4", *WORKER]))
    detected.check()


@pytest.mark.release_build
def test_log_dir_workers_start_without_heap_calls(detected, tmp_path):
    detected.finish(detected.start(["--num_processes", "4", "--log_dir", str(tmp_path / "logs"),
                                    *WORKER]))
    detected.check()


@pytest.mark.release_build
def test_two_machine_workers_start_without_heap_calls(detected):
    port = str(free_port())
    procs = [detected.start(["--num_machines", "2", "--machine_rank", str(rank),
                             "--main_process_ip", "127.0.0.1", "--main_process_port", port,
                             "--nproc_per_node", "2", *WORKER]) for rank in (0, 1)]
    for p in procs:
        detected.finish(p)
    detected.check()


@pytest.mark.release_build
def test_etcd_workers_start_without_heap_calls(detected, etcd):
    host, port = etcd.endpoints.split(",")[0].rsplit(":", 1)
    procs = [detected.start(["--num_machines", "2", "--nproc_per_node", "2", "--rdzv_backend",
                             "etcd", "--main_process_ip", host, "--main_process_port", port,
                             "--rdzv_id", "spawn-safety", "--heartbeat_timeout", "5", *WORKER])
             for _ in range(2)]
    for p in procs:
        detected.finish(p)
    detected.check()


# --- the spawner ---------------------------------------------------------------------------

def children_of(pid):
    found = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def comm(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def test_workers_are_the_launchers_children_and_the_spawner_ends_with_it(xlaunch_bin, tmp_path):
    script = f"echo $PPID > {tmp_path}/ppid_$RANK; exec sleep 60"
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "2", "--no_python",
                          "/bin/sh", "-c", script], env=merged_env(None),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        files = wait_for_files(tmp_path, "ppid_*", 2)
        assert {int(f.read_text()) for f in files} == {p.pid}
        spawners = [c for c in children_of(p.pid) if comm(c) == "xlaunch-spawner"]
        assert len(spawners) == 1, [(c, comm(c)) for c in children_of(p.pid)]
        # SIGKILL: nothing of the launcher's runs any more; the spawner must still go.
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=TIMEOUT)
        assert wait_until_gone(spawners) == []
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()


def test_a_program_gone_at_a_restart_fails_the_first_rank_and_starts_no_other(xlaunch_bin,
                                                                              tmp_path):
    # Attempt 0's rank 0 deletes the program once rank 1 runs it, then fails; attempt 1's
    # rank 0 cannot execute it: that rank fails with the reason, and rank 1 is never started.
    program = tmp_path / "prog.sh"
    program.write_text(f"""#!/bin/sh
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ] && [ "$RANK" = 0 ]; then
  while [ ! -e {tmp_path}/up_1 ]; do sleep 0.05; done
  rm -f "$0"; exit 3
fi
touch {tmp_path}/up_$RANK; exec sleep 60
""")
    program.chmod(0o755)
    logs = tmp_path / "logs"
    r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "2", "--max_restarts", "1",
                        "--log_dir", str(logs), "--no_python", str(program)],
                       env=merged_env(None), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 127, r.stderr
    assert f"could not execute {program}: No such file or directory" in r.stderr
    summary = json.loads(next(logs.iterdir()).joinpath("summary.json").read_text())
    assert summary["root_cause"]["rank"] == 0 and summary["root_cause"]["attempt"] == 1
    assert [w["rank"] for w in summary["not_started"]] == [1]


def test_ranks_that_end_before_the_spawner_answers_are_each_reported(xlaunch_bin, tmp_path):
    # The launcher asks the spawner for the next ranks before it reads their pids, so a rank
    # that ends at once is often reaped before its pid is known (16 of `exit`: several per
    # run here). Each exit must still be its rank's: every pid in the summary, every code
    # right, the failing rank the root cause, and no launch waiting for an exit it lost.
    script = 'if [ "$RANK" = 11 ]; then exit 5; fi; exit 0'
    for run in range(6):
        logs = tmp_path / f"logs{run}"
        r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "16", "--log_dir",
                            str(logs), "--no_python", "/bin/sh", "-c", script],
                           env=merged_env(None), capture_output=True, text=True,
                           timeout=TIMEOUT)
        assert r.returncode == 5, r.stderr
        (run_dir,) = list(logs.iterdir())
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["root_cause"]["rank"] == 11, summary
        workers = {w["rank"]: w for w in summary["workers"]}
        assert workers[11]["exit_code"] == 5
        started = [w for w in workers.values() if w["pid"] > 0]
        assert len({w["pid"] for w in started}) == len(started)
        # Those that ended on their own before the stop came, ended with 0.
        for w in started:
            if w["rank"] != 11 and not w["stopped_by_launcher"]:
                assert w["exit_code"] == 0, w
        launcher_log = (run_dir / "xlaunch.log").read_text()
        for w in started:
            assert f"rank {w['rank']} (pid {w['pid']})" in launcher_log, launcher_log


def test_sixteen_ranks_that_end_at_once_all_finish(xlaunch_bin, tmp_path):
    for run in range(6):
        logs = tmp_path / f"logs{run}"
        r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "16", "--log_dir",
                            str(logs), "--no_python", "/bin/true"], env=merged_env(None),
                           capture_output=True, text=True, timeout=TIMEOUT)
        assert r.returncode == 0, r.stderr
        assert "all 16 workers finished successfully" in r.stderr
        (run_dir,) = list(logs.iterdir())
        summary = json.loads((run_dir / "summary.json").read_text())
        assert sorted(w["rank"] for w in summary["workers"]) == list(range(16))
        assert all(w["exit_code"] == 0 and w["pid"] > 0 for w in summary["workers"]), summary


FREEZE_THE_RUN_CGROUP = r"""
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
  cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
  mnt=$(awk '{for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break }}' /proc/self/mountinfo | head -n 1)
  echo "$mnt$cg" > "$OUT/run_cgroup"
  echo $$ > "$mnt/cgroup.procs"          # out of the run's cgroup (root may)
  echo 1 > "$mnt$cg/cgroup.freeze"       # the next attempt's rank is born frozen
  exit 3
fi
exit 0
"""


def test_a_rank_frozen_before_its_exec_fails_and_the_launch_ends(xlaunch_bin, tmp_path):
    # Attempt 0's rank leaves the run's cgroup and freezes it; attempt 1's rank is born
    # there, frozen before its exec. After 30 s the rank fails, its frozen process is killed
    # (it holds the rank's pipes) and the launch ends.
    r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "1", "--max_restarts", "1",
                        "--no_python", "/bin/sh", "-c", FREEZE_THE_RUN_CGROUP],
                       env=merged_env({"OUT": str(tmp_path), "XLAUNCH_CONTAINMENT": "cgroup"}),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 1, r.stderr
    assert "did not start: its process (pid" in r.stderr, r.stderr
    assert "nor failed 30 s after it was made; killed it" in r.stderr, r.stderr
    run_cgroup = pathlib.Path((tmp_path / "run_cgroup").read_text().strip())
    assert run_cgroup.name.startswith("xlaunch-"), run_cgroup
    assert not run_cgroup.exists()  # emptied and removed: the frozen process is gone
