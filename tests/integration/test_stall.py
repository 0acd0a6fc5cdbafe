"""Stall detection on real PyTorch (gloo) workers: the report names the odd rank and shows
the others' stacks; quiet but busy training is not a stall (docs/diagnose.md)."""
import json
import pathlib
import textwrap

from launch_helpers import launch

SKIP = textwrap.dedent("""\
    import datetime
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    rank = dist.get_rank()
    print(f"rank {rank} ready", flush=True)
    t = torch.ones(4)
    if rank != 1:
        dist.all_reduce(t)  # rank 1 skips it
    else:
        time.sleep(600)  # and goes on with something else
    print(f"rank {rank} done", flush=True)
    """)

BUSY = textwrap.dedent("""\
    import time


    def compute(seconds):
        end = time.process_time() + seconds
        x = 0
        while time.process_time() < end:
            x += 1  # pure computation, no output
        return x


    print("start", flush=True)
    compute(8)  # seconds of CPU time: longer than the stall timeout even on a loaded machine
    print("done", flush=True)
    """)

STORE_WAIT = textwrap.dedent("""\
    import datetime
    import os
    import time

    import torch.distributed as dist

    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                          is_master=False, timeout=datetime.timedelta(seconds=300))
    print("connected", flush=True)
    if os.environ["RANK"] == "1":
        store.wait(["go_signal"])  # parked in the store until rank 0 sets it
    else:
        time.sleep(float(os.environ["HOLD_SECONDS"]))
        store.set("go_signal", "1")
    print("finished", flush=True)
    """)


def run_dir(log_dir):
    (found,) = pathlib.Path(log_dir).iterdir()
    return found


def test_rank_that_skips_an_all_reduce_is_named_and_the_job_stops(xlaunch_bin, torch_python,
                                                                   tmp_path):
    script = tmp_path / "skip.py"
    script.write_text(SKIP)
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--num_processes", "4", "--stall_timeout", "5", "--on_stall", "stop",
                             "--log_dir", str(logs), str(script)],
               python=torch_python, timeout=300)
    assert r.returncode == 124, r.stderr
    assert "xlaunch: stall: no output, no store traffic and no CPU time" in r.stderr, r.stderr
    assert "odd one out: rank 1 (<module> at skip.py:14)" in r.stderr, r.stderr
    assert "xlaunch:   ranks 0,2,3: all_reduce at skip.py:12\n" in r.stderr, r.stderr
    assert 'File "%s", line 12 in <module>' % script in r.stderr, r.stderr
    assert "last output" in r.stderr and ": rank 1 ready" in r.stderr, r.stderr
    assert "stopping every worker: the job stalled (--on_stall stop; exit code 124)" in r.stderr

    folder = run_dir(logs)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["exit_code"] == 124
    stall = summary["stall"]
    assert stall["odd_one_out"].startswith("rank 1 ")
    groups = {tuple(g["ranks"]): g["headline"] for g in stall["stacks"]}
    assert groups[(0, 2, 3)] == "all_reduce at skip.py:12"
    assert [x["rank"] for x in stall["ranks"]] == [0, 1, 2, 3]
    assert all(x["alive"] for x in stall["ranks"])
    assert "odd one out: rank 1" in (folder / "xlaunch.log").read_text()


def test_quiet_but_busy_worker_is_not_a_stall(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "busy.py"
    script.write_text(BUSY)
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--num_processes", "2", "--stall_timeout", "4", "--log_dir",
                             str(logs), str(script)], python=plain_python, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: stall" not in r.stderr, r.stderr
    assert r.stdout.count("done") == 2
    assert "stall" not in json.loads((run_dir(logs) / "summary.json").read_text())


def test_store_wait_is_shown_and_the_job_continues_by_default(xlaunch_bin, torch_python,
                                                              tmp_path):
    script = tmp_path / "store_wait.py"
    script.write_text(STORE_WAIT)
    logs = tmp_path / "logs"
    # Rank 0 holds rank 1 in a store wait well past the timeout, then lets it go.
    r = launch(xlaunch_bin, ["--num_processes", "2", "--stall_timeout", "3", "--log_dir",
                             str(logs), str(script)],
               env={"HOLD_SECONDS": "12"}, python=torch_python, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("xlaunch: stall:") == 1, r.stderr
    assert "blocked in a store wait for: /go_signal" in r.stderr, r.stderr
    assert r.stdout.count("finished") == 2
    summary = json.loads((run_dir(logs) / "summary.json").read_text())
    rank1 = [x for x in summary["stall"]["ranks"] if x["rank"] == 1][0]
    assert rank1["waiting_keys"] == ["/go_signal"]  # torch 1.13 prefixes "/"


def test_stall_timeout_zero_turns_detection_off(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "sleep.py"
    script.write_text("import time\ntime.sleep(5)\n")
    r = launch(xlaunch_bin, ["--stall_timeout", "0", str(script)], python=plain_python,
               timeout=120)
    assert r.returncode == 0, r.stderr
    # (the test's own folder name, in the "xlaunch: command:" line, has "stall" in it)
    assert "xlaunch: stall" not in r.stderr and "stalled" not in r.stderr, r.stderr


def test_bad_stall_flags_are_usage_errors(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "ok.py"
    script.write_text("pass\n")
    r = launch(xlaunch_bin, ["--on_stall", "pause", str(script)], python=plain_python)
    assert r.returncode == 2
    assert "--on_stall" in r.stderr and "continue, stop" in r.stderr, r.stderr
    r = launch(xlaunch_bin, ["--stall_timeout", "-1", str(script)], python=plain_python)
    assert r.returncode == 2
    assert "--stall_timeout" in r.stderr, r.stderr


STOPPED = textwrap.dedent("""\
    import os
    import pathlib
    import signal
    import sys
    import time

    out = pathlib.Path(os.environ["OUT"])


    def on_term(*_):
        (out / ("term_" + os.environ["RANK"])).write_text("yes")
        sys.exit(0)


    signal.signal(signal.SIGTERM, on_term)
    (out / ("ready_" + os.environ["RANK"])).write_text("yes")
    if os.environ["RANK"] == "1":
        os.kill(os.getpid(), signal.SIGSTOP)  # as Ctrl-Z or a debugger would
    time.sleep(600)
    """)


def test_a_stopped_rank_is_reported_stopped_and_resumed_to_take_the_stop(xlaunch_bin,
                                                                          plain_python,
                                                                          tmp_path):
    import signal
    import time

    from launch_helpers import start

    script = tmp_path / "stopped.py"
    script.write_text(STOPPED)
    # A long --term_timeout: rank 1 must take the SIGTERM itself, not the SIGKILL after it.
    proc = start(xlaunch_bin, ["--nproc_per_node", "2", "--stall_timeout", "3",
                               "--term_timeout", "120", str(script)],
                 env={"OUT": str(tmp_path)}, python=plain_python)
    lines = []
    try:
        # Until the report's stacks part names what rank 1 is (the job then goes on).
        for line in proc.stderr:
            lines.append(line)
            if "stacks not taken" in line or "stacks not available" in line:
                break
    finally:
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        out, rest = proc.communicate(timeout=100)
        code = proc.returncode
    text = "".join(lines) + rest
    assert "rank 1: stopped (pid" in text and "SIGCONT resumes it" in text, text
    assert "rank 0: alive (pid" in text, text
    assert "stacks not taken: it is stopped" in text, text
    assert code == 128 + signal.SIGTERM, (code, text)
    assert (tmp_path / "term_0").exists()
    assert (tmp_path / "term_1").exists(), text  # resumed, it ran its handler
