"""Python stacks on demand (`xlaunch stacks`) and on a crash, through
the sitecustomize xlaunch ships; a script dialing its own MASTER_PORT (docs/diagnose.md)."""
import os
import pathlib
import signal
import socket
import subprocess
import textwrap
import time

from launch_helpers import launch, merged_env, start, wait_for_files

SEGV = textwrap.dedent("""\
    import ctypes
    import os


    def crash():
        if os.environ["RANK"] == "1":
            ctypes.string_at(0)  # SIGSEGV


    crash()
    """)

# Waits in a function of its own until the test creates the stop file, on one line of
# builtins only: a check that runs Python (pathlib's exists, a Path's __fspath__) would let a
# dump catch the rank one frame deeper. The ready file is made on that same line, so a rank
# that has made it is where every dump will find it (made before, by write_text, a dump caught
# rank 0 still inside pathlib's write_text).
WAITER = textwrap.dedent("""\
    import os
    import pathlib
    import time


    def wait_here(stop, ready):
        # Line 8, in wait_here, from the ready file on: what the test expects of every dump.
        while not os.access(stop, os.F_OK): os.close(os.open(ready, os.O_CREAT | os.O_WRONLY, 0o644)); time.sleep(0.05)  # noqa: E501,E701


    out = pathlib.Path(os.environ["OUT"])
    ready = os.fspath(out / ("ready_" + os.environ["RANK"]))
    wait_here(os.fspath(out / "stop"), ready)
    """)

DIAL = textwrap.dedent("""\
    import datetime
    import os

    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ["WRONG_PORT"]  # seed-style: the script picks it
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    """)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stacks_cmd(xlaunch_bin, env, *args):
    return subprocess.run([xlaunch_bin, "stacks", *args], env=merged_env(env),
                          capture_output=True, text=True, timeout=120)


def wait_for_children(pid, count, timeout=60):
    """Waits until `pid` has `count` live children besides its helpers (the spawner and the
    guardian, there before any worker): the workers are running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = 0
        for entry in pathlib.Path("/proc").iterdir():
            try:
                comm, rest = (entry / "stat").read_text().rsplit(")", 1)
                fields = rest.split()
            except (OSError, IndexError, ValueError):
                continue
            helper = comm.split("(", 1)[-1] in ("xlaunch", "xlaunch-spawner")
            kids += fields[1] == str(pid) and fields[0] != "Z" and not helper
        if kids >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} did not get {count} children within {timeout}s")


def finish(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_sigsegv_traceback_is_in_the_root_cause(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "segv.py"
    script.write_text(SEGV)
    r = launch(xlaunch_bin, ["--num_processes", "2", str(script)], python=plain_python,
               timeout=120)
    assert r.returncode == 139, r.stderr
    root_cause = r.stderr[r.stderr.index("xlaunch: error: rank 1/2"):]
    assert "was killed by SIGSEGV" in root_cause
    assert "Fatal Python error: Segmentation fault" in root_cause, root_cause
    assert 'segv.py", line 7 in crash' in root_cause, root_cause
    assert 'segv.py", line 10 in <module>' in root_cause, root_cause


def test_xlaunch_stacks_dumps_every_rank_grouped(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    env = {"OUT": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime)}
    proc = start(xlaunch_bin, ["--num_processes", "3", "--run_id", "stackrun", str(script)],
                 env=env, python=plain_python)
    try:
        wait_for_files(tmp_path, "ready_*", 3, timeout=120)
        assert (runtime / "xlaunch" / "stackrun.sock").is_socket()
        r = stacks_cmd(xlaunch_bin, env)  # the only launcher running: no run id needed
        assert r.returncode == 0, r.stderr
        assert "xlaunch:   ranks 0,1,2: wait_here at waiter.py:8" in r.stdout, r.stdout
        assert 'waiter.py", line 13 in <module>' in r.stdout, r.stdout
        r = stacks_cmd(xlaunch_bin, env, "otherrun")
        assert r.returncode == 2
        assert "no running launcher with run id otherrun" in r.stderr
        assert "xlaunch stacks stackrun" in r.stderr
        r = stacks_cmd(xlaunch_bin, env, "stackrun")  # by run id: a second dump
        assert r.returncode == 0, r.stderr
        assert "xlaunch:   ranks 0,1,2: wait_here at waiter.py:8" in r.stdout, r.stdout
    finally:
        (tmp_path / "stop").write_text("")
    code, out, err = finish(proc)
    assert code == 0, err
    header = f"xlaunch: Python stacks of every rank (launcher pid {proc.pid}), identical ones once:"
    assert err.count(header) == 2, err
    assert "stacks requested (xlaunch stacks): dumping every rank's Python stacks" in err
    assert not (runtime / "xlaunch" / "stackrun.sock").exists()


def test_non_python_workers_only_say_stacks_are_not_available(xlaunch_bin, tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    proc = subprocess.Popen([xlaunch_bin, "launch", "--num_processes", "2", "--run_id", "sleeps",
                             "--no_python", "sleep", "600"], env=merged_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        wait_for_children(proc.pid, 2)
        wait_for_files(runtime / "xlaunch", "sleeps.sock", 1, timeout=60)
        r = stacks_cmd(xlaunch_bin, env, "sleeps")
        assert r.returncode == 0, r.stderr
        assert "xlaunch:   ranks 0,1: stacks not available: not a Python worker" in r.stdout
        assert proc.poll() is None  # the workers did not get a signal that would end them
    finally:
        proc.send_signal(signal.SIGTERM)
    code, out, err = finish(proc)
    assert code == 128 + signal.SIGTERM, err
    assert "was killed" not in err.split("SIGTERM: stopping")[0]


def test_existing_sitecustomize_still_runs_and_python_stacks_false_ships_none(
        xlaunch_bin, plain_python, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path(os.environ['OUT'], 'chained_' + os.environ['RANK']).write_text('yes')\n")
    script = tmp_path / "check.py"
    script.write_text(textwrap.dedent("""\
        import os
        import sys
        print("stacks dir", os.environ.get("XLAUNCH_STACKS_DIR", "none"), flush=True)
        print("faulthandler", os.environ.get("PYTHONFAULTHANDLER", "none"), flush=True)
        print("sitecustomize from", sys.modules["sitecustomize"].__file__, flush=True)
        """))
    env = {"OUT": str(tmp_path), "PYTHONPATH": str(site)}
    r = launch(xlaunch_bin, [str(script)], env=env, python=plain_python)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "chained_0").read_text() == "yes"
    assert "stacks dir none" not in r.stdout
    assert "faulthandler 1" in r.stdout
    assert f"sitecustomize from {site}/sitecustomize.py" in r.stdout, r.stdout
    (tmp_path / "chained_0").unlink()

    r = launch(xlaunch_bin, ["--python_stacks", "false", str(script)], env=env,
               python=plain_python)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "chained_0").read_text() == "yes"
    assert "stacks dir none" in r.stdout
    assert "faulthandler none" in r.stdout


def test_script_that_sets_its_own_master_port_is_diagnosed(xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "dial.py"
    script.write_text(DIAL)
    wrong = free_port()
    proc = start(xlaunch_bin, ["--num_processes", "2", "--stall_timeout", "5", str(script)],
                 env={"WRONG_PORT": str(wrong)}, python=torch_python)
    lines = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            # Both ranks named, then the stall report (retrying a refused connect is no
            # progress) that shows where each dials.
            if sum(f"connecting to 127.0.0.1:{wrong}" in x for x in lines) == 2:
                break
        # The report's stack dump must not have cut the ranks' connect short: torch 1.13's
        # store client waits in poll(), and dies of EINTR (RuntimeError: Interrupted system
        # call). They still dial; only the stop below ends them.
        time.sleep(1)
        alive = proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        code, _, rest = finish(proc)
    text = "".join(lines)
    assert "Interrupted system call" not in text + rest, text + rest
    assert alive and code == 128 + signal.SIGTERM, (code, text + rest)
    store = [x for x in lines if x.startswith("xlaunch: run ")][0].split("store ")[1].split(",")[0]
    store = store.strip()
    for rank in (0, 1):
        assert (f"rank {rank} keeps dialing 127.0.0.1:{wrong}, but the store is at {store} "
                "and has not heard from it (the script sets MASTER_ADDR/MASTER_PORT itself)"
                in text), text
    assert f"--main_process_port {wrong}" in text
    assert "xlaunch: stall:" in text
    assert "fix: let xlaunch set MASTER_ADDR and MASTER_PORT" in text


# The rank writes what its dial check reads: a MASTER_PORT no store could listen on (an
# unexpanded template) or a MASTER_ADDR of terminal escapes is no evidence, and must neither
# end the launcher nor reach the console. The unconnected socket is what a refused connect
# leaves, so the check looks at the script's setting every second.
ODD_DIAL = textwrap.dedent("""\
    import os
    import socket
    import time

    os.environ["MASTER_ADDR"] = os.environ["ODD_ADDR"]
    os.environ["MASTER_PORT"] = os.environ["ODD_PORT"]
    held = socket.socket()
    time.sleep(5)  # the check says a target after three samples in a row
    print("done", flush=True)
    """)


def test_odd_master_port_or_addr_set_by_a_script_is_no_evidence(xlaunch_bin, plain_python,
                                                                 tmp_path):
    script = tmp_path / "odd_dial.py"
    script.write_text(ODD_DIAL)
    for addr, port in (("127.0.0.1", "not-a-port"), ("127.0.0.1", "70000"),
                       ("10.0.0.9\x1b]0;owned\x07", "23456")):
        r = launch(xlaunch_bin, ["--nproc_per_node", "1", str(script)],
                   env={"ODD_ADDR": addr, "ODD_PORT": port}, python=plain_python)
        assert r.returncode == 0, (port, r.stdout, r.stderr)
        assert "[rank0]: done" in r.stdout, (port, r.stdout)
        assert "keeps dialing" not in r.stderr, (port, r.stderr)
        assert "\x1b" not in r.stderr, r.stderr


def test_a_second_launcher_of_one_run_id_says_whose_stacks_it_gets(xlaunch_bin, plain_python,
                                                                  tmp_path):
    # Two jobs on one machine with one run id (job steps that share $SLURM_JOB_ID): the
    # second cannot listen at the run's socket. It says so, and a dump names its launcher.
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    first_out, second_out = tmp_path / "a", tmp_path / "b"
    first_out.mkdir()
    second_out.mkdir()
    procs = []
    try:
        for out in (first_out, second_out):
            env = {"OUT": str(out), "XDG_RUNTIME_DIR": str(runtime)}
            procs.append(start(xlaunch_bin, ["--num_processes", "1", "--run_id", "dup",
                                             str(script)], env=env, python=plain_python))
            wait_for_files(out, "ready_*", 1, timeout=120)
        r = stacks_cmd(xlaunch_bin, {"XDG_RUNTIME_DIR": str(runtime)}, "dup")
        assert r.returncode == 0, r.stderr
        assert f"Python stacks of every rank (launcher pid {procs[0].pid})" in r.stdout, r.stdout
    finally:
        (first_out / "stop").write_text("")
        (second_out / "stop").write_text("")
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), results
    second_err = results[1][2]
    assert ("xlaunch: note: `xlaunch stacks dup` reaches another launcher, not this one: "
            "another launcher of run dup on this machine listens at") in second_err, second_err
    assert "`xlaunch stacks dup` reaches another" not in results[0][2]
