"""Supervision an outsider can trust: early exits, quick workers' output, workers that
cannot start. Each test failed on the launcher before the fix it names (issue 10, items 1,
2, 5, 6, 7). A console that stalls or closes: test_supervision_console.py; signals:
test_supervision_signals.py."""
import os
import subprocess

from launch_helpers import merged_env, summary


def run(xlaunch_bin, args, timeout=60, **kwargs):
    return subprocess.run([xlaunch_bin, "launch", *args], env=merged_env(kwargs.pop("env", None)),
                          capture_output=True, text=True, timeout=timeout, **kwargs)


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
    done = tmp_path / "rank0_done"
    # Ranks 1 and 2 fail only once rank 0 has written everything: the failure's teardown
    # would otherwise SIGTERM a rank 0 still writing (CI saw it, on a loaded machine).
    script = (f"seq 1 100000; printf tail-without-newline; "
              f"if [ $RANK = 0 ]; then touch {done}; "
              f"else while [ ! -e {done} ]; do sleep 0.01; done; fi; exit $RANK")
    r = run(xlaunch_bin, ["--num_processes", "3", "--log_dir", str(logs), "--no_python",
                          "/bin/sh", "-c", script])
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


def test_a_file_where_the_restart_logs_go_costs_no_restart(xlaunch_bin, tmp_path):
    # Attempt 0 puts a file where attempt 1's log folder must go. Before: the restart's ranks
    # "exited with code 1" (pid 0) without running, and the job failed with no restarts left.
    # Logging trouble is no rank's failure: attempt 1 runs, its output on the console only.
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, ["--num_processes", "2", "--max_restarts", "1", "--log_dir", str(logs),
                          "--rdzv_id", "blocked", "--no_python", "/bin/sh", "-c",
                          '[ $TORCHELASTIC_RESTART_COUNT = 0 ] && [ $RANK = 0 ] && '
                          '{ touch "$XLAUNCH_LOG_DIR/attempt_1"; exit 4; }; '
                          '[ $TORCHELASTIC_RESTART_COUNT = 0 ] && sleep 30; '
                          'echo attempt $TORCHELASTIC_RESTART_COUNT ok; echo err $RANK >&2'])
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if "ok" in line) == [
        "[rank0]: attempt 1 ok", "[rank1]: attempt 1 ok"]
    assert "[rank1]: err 1" in r.stderr
    run_dir = logs / "blocked"
    warnings = [line for line in r.stderr.splitlines() if line.startswith("xlaunch: warning:")]
    assert warnings == [
        f"xlaunch: warning: cannot create {run_dir}/attempt_1: File exists; attempt 1's ranks "
        "whose log files cannot be made run with their output on the console only "
        "(summary.json's log_cuts lists them)"], r.stderr
    assert "pid 0" not in r.stderr and "no restarts left" not in r.stderr
    _, s = summary(logs)
    assert s["exit_code"] == 0
    assert (s["root_cause"]["attempt"], s["root_cause"]["rank"]) == (0, 0)  # the restart's cause
    assert sorted((c["rank"], c["log"]) for c in s["log_cuts"]) == sorted(
        (rank, f"{run_dir}/attempt_1/rank_{rank}/{name}.log")
        for rank in (0, 1) for name in ("stdout", "stderr"))
    assert {(c["attempt"], c["stops_at_byte"], c["error"]) for c in s["log_cuts"]} == {
        (1, 0, f"cannot create {run_dir}/attempt_1: File exists")}
    assert sorted(w["exit_code"] for w in s["workers"] if w["attempt"] == 1) == [0, 0]
    assert "attempt_1" in (run_dir / "xlaunch.log").read_text()
