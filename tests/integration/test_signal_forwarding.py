"""Signals the launcher receives (docs/launch.md, "Signals"): those --signals_to_handle names
beyond the four stop signals are forwarded to every worker without stopping the job; a stop
ends with a closing line; one Ctrl-C that arrives twice counts once; real-time signals are
named as such."""
import os
import signal
import textwrap
import time

import pytest

from launch_helpers import launch, start, wait_for_files

# Records each forwarded signal, then exits 0 once it has seen them all.
RECORDER = textwrap.dedent("""\
    import os
    import pathlib
    import signal
    import time

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]
    wanted = {signal.SIGUSR1, signal.SIGUSR2}
    seen = []


    def record(signum, frame):
        seen.append(signum)
        with open(out / ("got_" + rank), "a") as f:
            f.write(signal.Signals(signum).name + "\\n")


    for s in wanted:
        signal.signal(s, record)
    (out / ("ready_" + rank)).write_text("")
    while not wanted <= set(seen) and not (out / "stop").exists():
        time.sleep(0.05)
    print("rank", rank, "saw", sorted(signal.Signals(s).name for s in seen), flush=True)
    """)

# Stops gracefully on SIGINT/SIGTERM: notes it, then exits 0.
GRACEFUL = textwrap.dedent("""\
    import os
    import pathlib
    import signal
    import sys
    import time

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]


    def stop(signum, frame):
        (out / ("stopped_" + rank)).write_text(signal.Signals(signum).name)
        sys.exit(0)


    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    (out / ("ready_" + rank)).write_text("")
    while True:
        time.sleep(0.05)
    """)


def wait_for_line(proc, needle):
    lines = []
    while True:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"no line with {needle!r}: {''.join(lines)}")
        lines.append(line)
        if needle in line:
            return lines


@pytest.mark.parametrize("how", ["flag", "PET_SIGNALS_TO_HANDLE", "config file"])
def test_named_signals_reach_every_worker_and_the_job_goes_on(xlaunch_bin, plain_python,
                                                              tmp_path, how):
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    names = "SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1,SIGUSR2"
    env = {"OUT": str(tmp_path)}
    args = ["--num_processes", "2"]
    if how == "flag":
        args += ["--signals_to_handle", names]
    elif how == "PET_SIGNALS_TO_HANDLE":
        env["PET_SIGNALS_TO_HANDLE"] = names
    else:
        config = tmp_path / "config.yaml"
        config.write_text(f"signals_to_handle: {names}\n")
        args += ["--config_file", str(config)]
    proc = start(xlaunch_bin, [*args, str(script)], env=env, python=plain_python)
    try:
        wait_for_files(tmp_path, "ready_*", 2, timeout=120)
        os.kill(proc.pid, signal.SIGUSR1)
        os.kill(proc.pid, signal.SIGUSR2)
        out, err = proc.communicate(timeout=120)
    finally:
        (tmp_path / "stop").write_text("")
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    for rank in (0, 1):
        assert f"rank {rank} saw ['SIGUSR1', 'SIGUSR2']" in out, out + err
    assert "xlaunch: SIGUSR1: forwarded to every worker" in err, err
    assert "xlaunch: SIGUSR2: forwarded to every worker" in err, err
    assert "does not forward" not in err, err


def test_sigusr1_not_named_is_not_forwarded_and_the_launcher_survives(xlaunch_bin, plain_python,
                                                                      tmp_path):
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    proc = start(xlaunch_bin, [str(script)], env={"OUT": str(tmp_path)}, python=plain_python)
    try:
        wait_for_files(tmp_path, "ready_*", 1, timeout=120)
        os.kill(proc.pid, signal.SIGUSR1)
        wait_for_line(proc, "SIGUSR1: not forwarded")
        assert proc.poll() is None
    finally:
        (tmp_path / "stop").write_text("")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "rank 0 saw []" in out, out
    assert not (tmp_path / "got_0").exists()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_ends_with_a_closing_line(xlaunch_bin, plain_python, tmp_path, signum):
    script = tmp_path / "graceful.py"
    script.write_text(GRACEFUL)
    proc = start(xlaunch_bin, ["--num_processes", "2", str(script)], env={"OUT": str(tmp_path)},
                 python=plain_python)
    wait_for_files(tmp_path, "ready_*", 2, timeout=120)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err
    assert err.rstrip().endswith(f"xlaunch: job stopped by {name}; exit code {128 + signum}"), err


def test_one_ctrl_c_that_arrives_twice_counts_once(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "graceful.py"
    script.write_text(GRACEFUL)
    proc = start(xlaunch_bin, ["--num_processes", "2", str(script)], env={"OUT": str(tmp_path)},
                 python=plain_python)
    wait_for_files(tmp_path, "ready_*", 2, timeout=120)
    # The terminal's SIGINT, then the one a wrapper such as timeout(1) forwards right after:
    # back to back, as they come (waiting for the first one's line would let a loaded machine
    # stretch the gap past the launcher's window and test the scheduler instead).
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "SIGINT: stopping every worker" in err, err
    assert "SIGINT again: killing" not in err, err
    for rank in (0, 1):  # stopped gracefully, not killed
        assert (tmp_path / f"stopped_{rank}").read_text() == "SIGINT"
    assert "xlaunch: job stopped by SIGINT; exit code 130" in err, err


def test_a_second_ctrl_c_later_still_kills_at_once(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(textwrap.dedent("""\
        import os
        import pathlib
        import signal
        import time

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ignores the first request
        pathlib.Path(os.environ["OUT"], "ready_" + os.environ["RANK"]).write_text("")
        while True:
            time.sleep(0.05)
        """))
    proc = start(xlaunch_bin, ["--term_timeout", "600", str(script)],
                 env={"OUT": str(tmp_path)}, python=plain_python)
    wait_for_files(tmp_path, "ready_*", 1, timeout=120)
    proc.send_signal(signal.SIGINT)
    wait_for_line(proc, "SIGINT: stopping every worker")
    time.sleep(1)  # a person's second Ctrl-C, well after the first
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "SIGINT again: killing every worker now" in err, err
    assert proc.returncode == 130, err


def test_real_time_signals_are_named(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "rt.py"
    script.write_text("import os, signal\n"
                      "signal.signal(signal.SIGRTMIN + 4, signal.SIG_DFL)\n"
                      "os.kill(os.getpid(), signal.SIGRTMIN + 4)\n")
    r = launch(xlaunch_bin, [str(script)], python=plain_python, timeout=120)
    assert r.returncode == 128 + signal.SIGRTMIN + 4, r.stderr
    assert f"was killed by SIGRTMIN+4 (signal {int(signal.SIGRTMIN) + 4})" in r.stderr, r.stderr
    assert "(signal 38) (signal" not in r.stderr
