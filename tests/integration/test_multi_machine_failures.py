"""Several `xlaunch launch` processes on one host as machines of one job: a worker's failure,
a launcher killed or interrupted, a machine missing or misconfigured; every machine stops
together and names the cause, and restarts happen on every machine together.
"""
import os
import signal
import subprocess
import time

import pytest

from launch_helpers import wait_for_files, wait_until_gone
from machine_fixtures import machines  # noqa: F401 (fixture)
from store_helpers import RawStore


def job_failed_line(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("xlaunch: job failed: machine")]
    assert lines, stderr
    return lines[-1]


def test_a_worker_failing_on_machine_1_stops_machine_0(machines):
    env = {"MODE": "fail_on_1"}
    m0 = machines.start(0, 2, ["--nproc_per_node", "2"], env=env)
    m1 = machines.start(1, 2, ["--nproc_per_node", "2"], env=env)
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 != 0 and rc1 != 0
    assert rc0 == rc1 == 7
    line = job_failed_line(err0)
    assert line == job_failed_line(err1)
    assert "machine 1 (" in line and "rank 2: exited with code 7" in line
    assert "stopping every worker: machine 1" in err0


def test_sigkill_of_a_launcher_stops_the_other_machine(machines):
    args = ["--nproc_per_node", "2", "--heartbeat_timeout", "3"]
    m0 = machines.start(0, 2, args, env={"MODE": "hang"})
    m1 = machines.start(1, 2, args, env={"MODE": "hang"})
    wait_for_files(machines.out, "rank_*_attempt_0.json", 4, timeout=60)
    os.kill(m1.pid, signal.SIGKILL)
    rc0, _, err0 = machines.finish(m0, timeout=90)
    assert rc0 != 0
    assert "machine 1 (" in job_failed_line(err0) and "launcher lost" in job_failed_line(err0)
    # Machine 1's workers lost their launcher: none may keep running.
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


def test_sigkill_of_machine_0_stops_the_others(machines):
    args = ["--heartbeat_timeout", "3"]
    m0 = machines.start(0, 3, args, env={"MODE": "hang"})
    others = [machines.start(r, 3, args, env={"MODE": "hang"}) for r in (1, 2)]
    wait_for_files(machines.out, "rank_*_attempt_0.json", 3, timeout=60)
    os.kill(m0.pid, signal.SIGKILL)
    lines = []
    for p in others:
        rc, _, err = machines.finish(p, timeout=90)
        assert rc == 1, err
        lines.append(job_failed_line(err))
    assert lines[0] == lines[1]
    assert "machine 0 (" in lines[0] and "store at 127.0.0.1:" in lines[0]
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


def test_interrupting_one_launcher_stops_every_machine(machines):
    m0 = machines.start(0, 2, env={"MODE": "hang"})
    m1 = machines.start(1, 2, env={"MODE": "hang"})
    wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=60)
    os.kill(m1.pid, signal.SIGINT)
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == rc1 == 130
    assert job_failed_line(err0) == job_failed_line(err1)
    assert "launcher interrupted by SIGINT" in job_failed_line(err0)


def test_a_missing_machine_is_named(machines):
    args = ["--rdzv_timeout", "3"]
    m0 = machines.start(0, 3, args)
    m2 = machines.start(2, 3, args)
    rc0, _, err0 = machines.finish(m0)
    rc2, _, err2 = machines.finish(m2)
    assert rc0 == 1 and rc2 == 1
    for err in (err0, err2):
        assert "machine rank 1 did not join within --rdzv_timeout 3s" in err, err
        assert "joined: 0 (" in err and ", 2 (" in err
    assert not list(machines.out.glob("rank_*"))  # nothing started anywhere


def test_an_arrival_slot_taken_and_never_written_is_named(machines):
    # A client takes the join's second slot (the arrivals counter) and writes nothing, as a
    # launcher killed between the two would: machine 1 then joins in slot 3, and the report
    # names the empty slot rather than blaming machine 1 (a hostile review's finding).
    args = ["--rdzv_timeout", "4"]
    m0 = machines.start(0, 2, args)
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline and m0.poll() is None, "machine 0 never joined"
        try:
            store = RawStore(machines.port)
            if store.add("xlaunch/default/arrivals", 0) >= 1:  # machine 0 took slot 1
                break
        except OSError:
            pass
        time.sleep(0.05)
    assert store.add("xlaunch/default/arrivals", 1) == 2
    m1 = machines.start(1, 2, args)
    rc0, _, err0 = machines.finish(m0)
    rc1, _, err1 = machines.finish(m1)
    assert rc0 == 1 and rc1 == 1, err0 + err1
    for err in (err0, err1):
        assert "arrival slot 2 of the join was taken but never written" in err, err
        assert "joined: 0 (" in err and ", 1 (" in err, err
        assert "did not join" not in err, err
    assert not list(machines.out.glob("rank_*"))


def test_mismatched_settings_stop_every_launcher(machines):
    m0 = machines.start(0, 2, ["--max_restarts", "0"])
    m1 = machines.start(1, 2, ["--max_restarts", "2"])
    rc0, _, err0 = machines.finish(m0)
    rc1, _, err1 = machines.finish(m1)
    assert rc0 == rc1 == 2
    for err in (err0, err1):
        assert "max_restarts: machine 0 (" in err and "has 0, machine 1 (" in err, err
        assert "has 2" in err
    assert not list(machines.out.glob("rank_*"))


def test_a_duplicate_machine_rank_is_refused(machines):
    args = ["--rdzv_timeout", "30", "--heartbeat_timeout", "3"]
    m0 = machines.start(0, 3, args)
    a = machines.start(1, 3, args)
    b = machines.start(1, 3, args)
    results = [machines.finish(p) for p in (m0, a, b)]
    assert all(rc == 2 for rc, _, _ in results), [r[2] for r in results]
    for _, _, err in results:
        assert "machine rank 1" in err and ("two launchers" in err or "also claims" in err), err


def test_restarts_happen_on_every_machine_together(machines):
    args = ["--max_restarts", "1"]
    m0 = machines.start(0, 2, args, env={"MODE": "fail_once_on_1"})
    m1 = machines.start(1, 2, args, env={"MODE": "fail_once_on_1"})
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == 0 and rc1 == 0, err0 + err1
    assert sorted(machines.ranks(attempt=1)) == [0, 1]
    assert "restarting every worker on every machine" in err0
    assert job_failed_line(err0) == job_failed_line(err1)


def _ctrl_c_machine_0_while_it_waits(machines, m0_args=(), m0_env=None, ready=None):
    """Machine 0's worker is done at once; its launcher then waits for machine 1's, which
    hangs. Once `ready()` returns, SIGINT to machine 0 must end it by the default action."""
    args = ["--heartbeat_timeout", "3"]
    m0 = machines.start(0, 2, [*args, *m0_args], env={"MODE": "ok", **(m0_env or {})})
    m1 = machines.start(1, 2, args, env={"MODE": "hang"})
    ready()
    os.kill(m0.pid, signal.SIGINT)
    try:
        rc0, _, err0 = machines.finish(m0, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGINT was swallowed while machine 0 waited for machine 1")
    assert rc0 == -signal.SIGINT, err0  # the default action: the shell shows 130
    rc1, _, err1 = machines.finish(m1, timeout=90)
    assert rc1 != 0, err1
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


def _pause_after_activity_csv(build_dir, tmp_path, seconds, then_raise=None):
    """The environment that pauses a launcher right after it writes activity.csv (its
    workers have ended; the wait for the other machines has not begun)."""
    shim = build_dir / "tests" / "libpause_after_rename.so"
    assert shim.exists(), f"{shim} is not built: build the pause_after_rename target"
    env = {"LD_PRELOAD": str(shim), "PAUSE_SECONDS": str(seconds),
           "PAUSE_AFTER_RENAME": "/activity.csv", "PAUSE_MARKER": str(tmp_path / "paused")}
    if then_raise:
        env["PAUSE_RAISE"] = str(int(then_raise))
    return env


def test_ctrl_c_while_waiting_for_the_other_machines_ends_the_launcher(machines):
    def ready():
        wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=60)
        assert wait_until_gone([machines.ranks()[0]["pid"]]) == []

    _ctrl_c_machine_0_while_it_waits(machines, ready=ready)


@pytest.mark.release_build  # preloads a library, which ASan's runtime refuses
def test_ctrl_c_between_the_workers_end_and_the_wait_for_the_others_ends_the_launcher(
        machines, build_dir, tmp_path):
    # The launcher pauses where its worker has ended and it has not yet begun to wait for
    # machine 1: a SIGINT there was caught, then dropped.
    _ctrl_c_machine_0_while_it_waits(
        machines, ["--log_dir", str(tmp_path / "logs")],
        _pause_after_activity_csv(build_dir, tmp_path, 3),
        ready=lambda: wait_for_files(tmp_path, "paused", 1, timeout=60))


@pytest.mark.release_build  # preloads a library, which ASan's runtime refuses
def test_one_ctrl_c_delivered_twice_counts_once_while_waiting_for_the_others(
        machines, build_dir, tmp_path):
    # Machine 0's worker interrupts its launcher; the copy of that SIGINT (a terminal's and a
    # wrapper's) arrives right after machine 0's worker ended, as it waits for machine 1,
    # whose worker holds out until --term_timeout: one request, so both exit 130.
    args = ["--term_timeout", "4"]
    env = {"MODE": "interrupt_0_stubborn_1"}
    m0 = machines.start(0, 2, [*args, "--log_dir", str(tmp_path / "logs")],
                        env={**env, **_pause_after_activity_csv(build_dir, tmp_path, 0,
                                                                 then_raise=signal.SIGINT)})
    m1 = machines.start(1, 2, args, env=env)
    rc0, _, err0 = machines.finish(m0, timeout=60)
    rc1, _, err1 = machines.finish(m1, timeout=60)
    assert (tmp_path / "paused").exists()  # the copy was sent
    assert rc0 == 128 + signal.SIGINT, err0
    assert rc1 == 128 + signal.SIGINT, err1
    log = next((tmp_path / "logs").glob("*/xlaunch.log")).read_text()
    assert "again within 500ms: the same request" in log, log
