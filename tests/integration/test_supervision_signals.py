"""Supervision an outsider can trust: signals while workers start, during the teardown,
right at start, and stop signals ignored under nohup. Each test failed on the launcher
before the fix it names (issue 10, items 1, 2, 5, 6, 7)."""
import json
import os
import signal
import subprocess
import time

from launch_helpers import merged_env, summary, wait_for_files, wait_until_gone
from test_containment import all_run_cgroups, marked_pids, run_cgroups


def signal_and_wait(p, sig, failure):
    """Sends `sig` to the launcher; its stderr once it exited (bounded: else `failure`)."""
    p.send_signal(sig)
    try:
        return p.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError(failure)


def test_sigterm_while_many_workers_start_stops_the_job(xlaunch_bin, tmp_path):
    marker = f"supervision-{os.getpid()}-{time.monotonic_ns()}"
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "48", "--term_timeout", "2",
                          "--log_dir", str(tmp_path / "logs"),
                          "--no_python", "/bin/sh", "-c",
                          f"echo $$ > {tmp_path}/pid_$RANK; [ $RANK = 0 ] && exit 0; exec sleep 60"],
                         env=merged_env({"XLAUNCH_CONTAINMENT_TEST": marker}), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_files(tmp_path, "pid_*", 3)
    err = signal_and_wait(p, signal.SIGTERM, "SIGTERM while workers started was ignored")
    assert p.returncode == 143, err
    # A shell stopped between creating its file and writing its pid leaves it empty.
    pids = [int(t) for f in tmp_path.glob("pid_*") if (t := f.read_text().strip())]
    assert wait_until_gone(pids) == []
    assert wait_until_gone(marked_pids(marker)) == []  # the unwritten ones too
    assert "finished successfully" not in err
    s = json.loads(next(tmp_path.glob("logs/*/summary.json")).read_text())
    started = sorted(w["rank"] for w in s["workers"])
    not_started = sorted(w["rank"] for w in s["not_started"])
    assert sorted(started + not_started) == list(range(48))
    assert all(w["exit_code"] is not None or w["signal"] is not None for w in s["workers"])


def test_a_signal_during_the_teardown_keeps_the_failure_s_exit_code(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "2", "--term_timeout", "60",
                          "--log_dir", str(logs), "--max_restarts", "3", "--no_python",
                          "/bin/sh", "-c",
                          "if [ $RANK = 1 ]; then sleep 0.5; echo bad >&2; exit 7; fi; "
                          "trap '' TERM; sleep 60"],
                         env=merged_env(None), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # rank 0 ignores the SIGTERM of the teardown
        log = next(logs.glob("*/xlaunch.log"), None)
        if log and "sent SIGTERM" in log.read_text():
            break
        time.sleep(0.05)
    err = signal_and_wait(p, signal.SIGINT, "SIGINT during the teardown did not hurry it")
    assert p.returncode == 7, err
    assert "rank 1/2" in err and "exited with code 7" in err
    _, s = summary(logs)
    assert s["exit_code"] == 7 and s["root_cause"]["rank"] == 1
    assert s["interrupted_by"] == "SIGINT"
    assert {w["attempt"] for w in s["workers"]} == {0}  # the signal rules out a restart


def test_one_ctrl_c_to_the_terminal_s_group_while_workers_start_counts_once(xlaunch_bin,
                                                                           tmp_path):
    # A terminal's Ctrl-C reaches the whole foreground group, a worker between fork and exec
    # included: it must not run the launcher's handler there and count as a second Ctrl-C.
    for i in range(6):
        p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "100", "--term_timeout",
                              "20", "--no_python", "/bin/sh", "-c",
                              f"echo $$ > {tmp_path}/pid_{i}_$RANK; exec sleep 60"],
                             env=merged_env(None), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        wait_for_files(tmp_path, f"pid_{i}_*", 2)
        os.killpg(p.pid, signal.SIGINT)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            raise
        assert p.returncode == 130, err
        assert "again: killing" not in err, err


def test_a_signal_right_at_start_leaves_no_half_written_run_folder(xlaunch_bin, tmp_path):
    # Before the run folder exists a signal ends xlaunch as usual; from then on it waits for
    # the supervisor, so a run folder always gets its summary.json.
    for i in range(30):
        logs = tmp_path / f"logs{i}"
        existing = all_run_cgroups()
        p = subprocess.Popen([xlaunch_bin, "launch", "--log_dir", str(logs), "--no_python",
                              "/bin/sleep", "30"], env=merged_env(None),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(i * 0.001)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        runs = list(logs.iterdir()) if logs.exists() else []
        if runs:
            assert rc == 143, (i, rc)
            assert (runs[0] / "summary.json").exists(), (i, sorted(runs[0].iterdir()))
        else:
            assert rc in (-signal.SIGTERM, 143), (i, rc)
        # Nor a run cgroup: made before the guardian that removes it had started, it stayed.
        deadline = time.monotonic() + 10
        while run_cgroups(p.pid, existing) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run_cgroups(p.pid, existing) == [], (i, rc)


def _sleeping_job(xlaunch_bin, tmp_path, wrapper):
    """Two workers that say they are up, then sleep; xlaunch started through `wrapper`."""
    logs = tmp_path / "logs"
    script = f"echo up > {tmp_path}/up_$RANK; exec sleep 60"
    cmd = [*wrapper, xlaunch_bin, "launch", "--num_processes", "2", "--term_timeout", "2",
           "--log_dir", str(logs), "--no_python", "/bin/sh", "-c", script]
    p = subprocess.Popen(cmd, env=merged_env(None), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_files(tmp_path, "up_*", 2)
    return p, logs


def test_stop_signals_ignored_at_start_stay_ignored(xlaunch_bin, tmp_path):
    # nohup ignores SIGHUP; a script's background job (no job control) ignores SIGINT and
    # SIGQUIT. torchrun installs its handlers anyway, so a closed terminal stops a nohup'ed
    # torchrun. xlaunch keeps them ignored and says so in xlaunch.log.
    wrapper = ["/bin/sh", "-c", 'trap "" INT QUIT; exec nohup "$@"', "sh"]
    p, logs = _sleeping_job(xlaunch_bin, tmp_path, wrapper)
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
        p.send_signal(sig)
    time.sleep(1)
    assert p.poll() is None, p.communicate()[1]
    err = signal_and_wait(p, signal.SIGTERM, "SIGTERM was ignored too")
    assert p.returncode == 143, err
    log = next(logs.glob("*/xlaunch.log")).read_text()
    for name in ("SIGHUP", "SIGINT", "SIGQUIT"):
        assert f"{name} was ignored when xlaunch started" in log, log
    assert "SIGTERM was ignored" not in log


def test_sighup_stops_a_job_not_started_under_nohup(xlaunch_bin, tmp_path):
    p, _ = _sleeping_job(xlaunch_bin, tmp_path, [])
    err = signal_and_wait(p, signal.SIGHUP, "SIGHUP was ignored")
    assert p.returncode == 129, err
