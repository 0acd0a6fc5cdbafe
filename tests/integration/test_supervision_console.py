"""Supervision an outsider can trust: a console that stalls, closes or catches up neither
freezes the launcher nor hides a failure, and workers inherit no descriptor of it. Each
test failed on the launcher before the fix it names (issue 10, items 1, 2, 5, 6, 7)."""
import os
import signal
import subprocess

from launch_helpers import merged_env, summary, wait_for_files


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
    # `xlaunch launch ... 2>&1 | head -1`: the reader leaves after one line. Rank 1 fails only
    # once rank 0 has exited and been reaped (its pid is gone): failing while rank 0 was between
    # its last line and its exit, it had rank 0 stopped by the launcher's SIGTERM.
    logs = tmp_path / "logs"
    pid_file = tmp_path / "rank0_pid"
    p = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "2", "--log_dir", str(logs),
                          "--no_python", "/bin/sh", "-c",
                          "sleep 0.5; seq 1 20000; echo to-stderr >&2; "
                          f"[ $RANK = 0 ] && {{ echo $$ > {pid_file}.tmp; "
                          f"mv {pid_file}.tmp {pid_file}; exit 0; }}; "
                          f"while [ ! -e {pid_file} ]; do sleep 0.05; done; "
                          f"while kill -0 $(cat {pid_file}) 2>/dev/null; do sleep 0.05; done; "
                          "exit 1"],
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


def test_a_progress_bar_s_last_redraw_is_followed_by_a_newline(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "launch", "--no_python", "/bin/sh", "-c",
                        r"printf 'bar 1\rbar 2\r'"], env=merged_env(None), capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"[rank0]: bar 1\r[rank0]: bar 2\r\n"
