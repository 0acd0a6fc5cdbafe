"""Supervision an outsider can trust: early exits, quick workers' output, a console that
stalls or closes, signals while workers start. Each test failed on the launcher before the
fix it names (issue 10, items 1, 2, 5, 6, 7)."""
import json
import os
import pathlib
import signal
import subprocess
import time

from launch_helpers import merged_env, wait_for_files, wait_until_gone
from test_containment import all_run_cgroups, marked_pids, run_cgroups


def run(xlaunch_bin, args, timeout=60, **kwargs):
    return subprocess.run([xlaunch_bin, "launch", *args], env=merged_env(kwargs.pop("env", None)),
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def summary(log_dir):
    (run_dir,) = [p for p in pathlib.Path(log_dir).iterdir() if p.is_dir()]
    return run_dir, json.loads((run_dir / "summary.json").read_text())


def signal_and_wait(p, sig, failure):
    """Sends `sig` to the launcher; its stderr once it exited (bounded: else `failure`)."""
    p.send_signal(sig)
    try:
        return p.communicate(timeout=30)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError(failure)


def test_a_rank_that_exits_early_does_not_end_the_job(xlaunch_bin, tmp_path):
    # Rank 0 is gone before the others start; rank 1 fails once every other rank has spoken.
    script = (f'[ $RANK = 0 ] && exit 0; sleep 1; echo done $RANK; touch {tmp_path}/done_$RANK; '
              f'if [ $RANK = 1 ]; then i=0; while [ $(ls {tmp_path} | grep -c done_) -lt 7 ] '
              f'&& [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; exit 3; fi')
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--num_processes", "8", "--log_dir", str(logs), "--no_python",
                          "/bin/sh", "-c", script])
    assert r.returncode == 3, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if "done" in line) == sorted(
        f"[rank{rank}]: done {rank}" for rank in range(1, 8))
    assert "finished successfully" not in r.stderr
    assert "rank 1/8" in r.stderr and "exited with code 3" in r.stderr
    _, s = summary(logs)
    by_rank = {w["rank"]: w for w in s["workers"]}
    assert sorted(by_rank) == list(range(8))
    assert by_rank[0]["exit_code"] == 0 and by_rank[1]["exit_code"] == 3
    for rank in range(2, 8):  # each ended: on its own (0) or stopped by the launcher
        w = by_rank[rank]
        assert w["exit_code"] is not None or w["signal"] is not None, w


def test_every_quick_worker_is_heard(xlaunch_bin, tmp_path):
    for i in range(15):
        logs = tmp_path / f"logs{i}"
        r = run(xlaunch_bin, ["--num_processes", "4", "--log_dir", str(logs), "--no_python",
                              "/bin/echo", "hi"])
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()) == [f"[rank{k}]: hi" for k in range(4)], r.stdout
        run_dir, s = summary(logs)
        for rank in range(4):
            assert (run_dir / f"attempt_0/rank_{rank}/stdout.log").read_bytes() == b"hi\n"
        assert [w["exit_code"] for w in s["workers"]] == [0, 0, 0, 0]


def test_a_quick_worker_s_large_output_is_kept_byte_for_byte(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--num_processes", "3", "--log_dir", str(logs), "--no_python",
                          "/bin/sh", "-c", "seq 1 100000; printf tail-without-newline; exit $RANK"])
    assert r.returncode in (1, 2), r.stderr
    expected = "".join(f"{i}\n" for i in range(1, 100001)) + "tail-without-newline"
    run_dir, _ = summary(logs)
    # Rank 0 exited 0 on its own, before or after the failure: its output is complete.
    assert (run_dir / "attempt_0/rank_0/stdout.log").read_text() == expected


def test_a_failing_rank_s_last_stderr_lines_are_in_the_report(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, ["--num_processes", "2", "--no_python", "/bin/sh", "-c",
                          '[ $RANK = 1 ] && { seq 1 5000 >&2; echo "the last words" >&2; exit 7; }; '
                          'sleep 30'])
    assert r.returncode == 7, r.stderr
    report = r.stderr[r.stderr.index("rank 1/2"):]
    assert "the last words" in report


def test_an_exited_worker_s_pipe_held_by_a_descendant_delays_its_end_boundedly(xlaunch_bin,
                                                                              tmp_path):
    # The worker exits; a background child keeps its stdout open for a minute.
    r = run(xlaunch_bin, ["--num_processes", "1", "--no_python", "/bin/sh", "-c",
                          "echo before; (sleep 60; echo never) & exit 0"], timeout=30)
    assert r.returncode == 0, r.stderr
    assert "[rank0]: before" in r.stdout and "never" not in r.stdout


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


def _flooding_job(xlaunch_bin, tmp_path, extra_args, script):
    """Starts a job whose console is a pipe nobody reads."""
    read_end, write_end = os.pipe()
    logs = tmp_path / "logs"
    p = subprocess.Popen([xlaunch_bin, "launch", "--log_dir", str(logs), *extra_args,
                          "--no_python", "/bin/sh", "-c", script],
                         env=merged_env(None), stdout=write_end, stderr=write_end,
                         start_new_session=True)
    os.close(write_end)
    return p, read_end, logs


def _wait(p, what):
    try:
        return p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"the launcher froze on a console that stopped reading ({what})")


def test_a_stalled_console_does_not_hide_a_failure(xlaunch_bin, tmp_path):
    # Rank 0 floods the console; rank 1 fails once the console is surely full.
    p, read_end, logs = _flooding_job(
        xlaunch_bin, tmp_path, ["--num_processes", "2", "--term_timeout", "2"],
        f'if [ $RANK = 0 ]; then yes flood | head -c 20000000; touch {tmp_path}/flooded; exec sleep 60; fi; '
        f'while [ ! -e {tmp_path}/flooded ]; do sleep 0.05; done; echo failing >&2; exit 5')
    try:
        assert _wait(p, "failure") == 5
    finally:
        os.close(read_end)
    run_dir, s = summary(logs)
    assert {w["rank"]: w["exit_code"] for w in s["workers"]}[1] == 5
    # Every byte reached the log even though the console took almost none of it.
    assert (run_dir / "attempt_0/rank_0/stdout.log").stat().st_size == 20000000
    log = (run_dir / "xlaunch.log").read_text()
    assert "lines not shown because the console did not keep up" in log


def test_a_stalled_console_does_not_delay_sigterm(xlaunch_bin, tmp_path):
    p, read_end, logs = _flooding_job(
        xlaunch_bin, tmp_path, ["--num_processes", "2", "--term_timeout", "2"],
        f'yes flood | head -c 5000000; touch {tmp_path}/flooded_$RANK; exec sleep 60')
    try:
        wait_for_files(tmp_path, "flooded_*", 2)
        p.send_signal(signal.SIGTERM)
        assert _wait(p, "SIGTERM") == 143
    finally:
        os.close(read_end)
    _, s = summary(logs)
    assert all(w["signal"] == signal.SIGTERM for w in s["workers"]), s["workers"]


def test_a_closed_console_does_not_stop_the_job(xlaunch_bin, tmp_path):
    # `xlaunch launch ... 2>&1 | head -1`: the reader leaves after one line.
    logs = tmp_path / "logs"
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "2", "--log_dir", str(logs),
                          "--no_python", "/bin/sh", "-c",
                          "sleep 0.5; seq 1 20000; echo to-stderr >&2; "
                          f"[ $RANK = 0 ] && {{ touch {tmp_path}/rank0_done; exit 0; }}; "
                          f"while [ ! -e {tmp_path}/rank0_done ]; do sleep 0.05; done; exit 1"],
                         env=merged_env(None), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    p.stdout.readline()
    p.stdout.close()
    assert _wait(p, "closed console") == 1
    run_dir, s = summary(logs)
    assert {w["rank"]: w["exit_code"] for w in s["workers"]} == {0: 0, 1: 1}
    expected = "".join(f"{i}\n" for i in range(1, 20001))
    for rank in range(2):
        assert (run_dir / f"attempt_0/rank_{rank}/stdout.log").read_text() == expected
        assert (run_dir / f"attempt_0/rank_{rank}/stderr.log").read_text() == "to-stderr\n"
    assert "closed during the run" in (run_dir / "xlaunch.log").read_text()


def test_a_console_that_catches_up_shows_whole_lines_and_counts_the_dropped(xlaunch_bin,
                                                                           tmp_path):
    p, read_end, logs = _flooding_job(
        xlaunch_bin, tmp_path, ["--num_processes", "1"],
        f"yes flood | head -c 20000000; touch {tmp_path}/flooded; sleep 1")
    try:
        wait_for_files(tmp_path, "flooded", 1)
        chunks = []
        while chunk := os.read(read_end, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(read_end)
    assert _wait(p, "catching up") == 0
    shown, dropped = 0, 0
    for line in b"".join(chunks).decode().splitlines():
        if line.startswith("xlaunch: ") and "console lines dropped" in line:
            dropped += int(line.split()[1])
        elif not line.startswith("xlaunch: "):
            assert line in ("[rank0]: flood", "[rank0]: fl"), line  # whole lines only
            shown += 1
    assert dropped > 0
    # 3333333 lines of "flood" and a last "fl" without newline: each shown or counted.
    assert shown + dropped == 3333334


FD_CHECK = ("import os\n"
            "leaked = []\n"
            "for fd in range(3, 4096):\n"
            "    try:\n"
            "        os.fstat(fd)\n"
            "        leaked.append(f'{fd} -> ' + os.readlink(f'/proc/self/fd/{fd}'))\n"
            "    except OSError:\n"
            "        pass\n"
            "print('leaked:', leaked)\n")


def test_workers_inherit_only_stdin_stdout_and_stderr(xlaunch_bin, tmp_path):
    # Rank 0 fills the console first, so that the launcher waits on it while the others start.
    check = tmp_path / "fds.py"
    check.write_text(FD_CHECK)
    read_end, write_end = os.pipe()
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "4", "--no_python",
                          "/bin/sh", "-c",
                          f'if [ $RANK = 0 ]; then head -c 300000 /dev/zero | tr "\\0" a; echo; '
                          f'touch {tmp_path}/full; else while [ ! -e {tmp_path}/full ]; '
                          f'do sleep 0.05; done; /usr/bin/python3 -S {check}; fi'],
                         env=merged_env(None), stdout=write_end, stderr=write_end,
                         start_new_session=True)
    os.close(write_end)
    try:
        wait_for_files(tmp_path, "full", 1)
        out = b""
        while chunk := os.read(read_end, 1 << 20):
            out += chunk
    finally:
        os.close(read_end)
    assert _wait(p, "fd check") == 0
    reports = [line for line in out.decode().splitlines() if "leaked:" in line]
    assert sorted(reports) == [f"[rank{r}]: leaked: []" for r in (1, 2, 3)], reports


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


def test_a_progress_bar_s_last_redraw_is_followed_by_a_newline(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "launch", "--no_python", "/bin/sh", "-c",
                        r"printf 'bar 1\rbar 2\r'"], env=merged_env(None), capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"[rank0]: bar 1\r[rank0]: bar 2\r\n"


def test_reading_on_when_the_drain_grace_ends_mid_read_is_safe(xlaunch_bin, tmp_path):
    # The worker exits; a background child keeps writing into its pipe, so a read completes
    # just as the grace runs out. Before: SIGSEGV (a read re-armed on a closed pipe).
    long_line = "x" * 2000
    for _ in range(3):
        r = subprocess.run([xlaunch_bin, "launch", "--no_python", "/bin/sh", "-c",
                            f"yes {long_line} & exit 0"], env=merged_env(None),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert "finished successfully" in r.stderr


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


def test_a_program_that_cannot_be_executed_is_a_reported_failure(xlaunch_bin, tmp_path):
    script = tmp_path / "noshebang.sh"
    script.write_text("echo hi\n")  # no #! line: execve says ENOEXEC
    script.chmod(0o755)
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--num_processes", "2", "--log_dir", str(logs), "--no_python",
                          str(script)])
    assert r.returncode == 126, r.stderr
    assert "could not execute" in r.stderr
    _, s = summary(logs)
    assert s["exit_code"] == 126 and s["root_cause"]["rank"] == 0


def test_a_closed_stdin_at_start_still_gets_a_guardian(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--log_dir", str(logs), "--no_python", "/bin/true"],
            preexec_fn=lambda: os.close(0))
    assert r.returncode == 0, r.stderr
    run_dir, _ = summary(logs)
    log = (run_dir / "xlaunch.log").read_text()
    assert "orphan containment" in log and "no guardian" not in log, log


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


def test_a_rank_that_cannot_be_set_up_is_a_reported_failure(xlaunch_bin, tmp_path):
    # Attempt 0 puts a file where attempt 1's folder must go: the restart cannot set up
    # its ranks. Before: an uncaught error, exit 1, no summary.json.
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--num_processes", "2", "--max_restarts", "1", "--log_dir", str(logs),
                          "--no_python", "/bin/sh", "-c",
                          '[ $TORCHELASTIC_RESTART_COUNT = 0 ] && [ $RANK = 0 ] && '
                          '{ touch "$XLAUNCH_LOG_DIR/attempt_1"; exit 4; }; sleep 30'])
    assert r.returncode == 1, r.stderr
    assert "could not set up this rank" in r.stderr
    _, s = summary(logs)
    assert s["exit_code"] == 1
    assert s["root_cause"]["attempt"] == 1 and s["root_cause"]["rank"] == 0
    assert [w["rank"] for w in s["not_started"]] == [1]


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
