"""A stack request never harms a rank (docs/diagnose.md, "What xlaunch may signal"): a rank
that replaced its program, unregistered faulthandler or closed its descriptors is left alone;
a dump never lands in a file the rank opened; `xlaunch stacks` signals nobody, refuses a
runtime folder that is not private, and escapes what it prints."""
import errno
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import textwrap

import pytest

from launch_helpers import alive, merged_env, start, wait_for_files

# Each rank stops being a Python program that answers the dump signal, its own way, then
# waits without output or CPU time.
LEAVERS = textwrap.dedent("""\
    import faulthandler
    import os
    import pathlib
    import sys

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]
    (out / ("pid_" + rank)).write_text(str(os.getpid()))
    if rank == "0":  # a wrapper that execs another program
        os.execvp("sleep", ["sleep", "600"])
    elif rank == "1":  # re-exec in isolated mode: no sitecustomize
        os.execv(sys.executable, [sys.executable, "-I", "-c", "import time; time.sleep(600)"])
    else:  # unregisters the dump signal
        faulthandler.unregister(int(os.environ["XLAUNCH_STACKS_SIGNAL"]))
        import time
        time.sleep(600)
    """)

# Closes every descriptor it did not open itself, as daemonizing helpers do, then opens a
# checkpoint (which gets the lowest free descriptor) and waits.
CLOSER = textwrap.dedent("""\
    import os
    import pathlib
    import time

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]
    os.closerange(3, 256 if rank == "0" else 65536)
    checkpoint = open(out / ("checkpoint_" + rank), "w")
    checkpoint.write("CHECKPOINT\\n")
    checkpoint.flush()
    (out / ("fd_" + rank)).write_text(str(checkpoint.fileno()))


    def wait_here(stop, ready):  # builtins only, and ready made there: see test_stacks.WAITER
        while not os.access(stop, os.F_OK): os.close(os.open(ready, os.O_CREAT | os.O_WRONLY, 0o644)); time.sleep(0.05)  # noqa: E501,E701


    wait_here(os.fspath(out / "stop"), os.fspath(out / ("ready_" + rank)))
    checkpoint.close()
    """)

# Scribbles terminal escape sequences into its own dump file while it waits.
SCRIBBLER = textwrap.dedent("""\
    import os
    import pathlib
    import threading
    import time

    out = pathlib.Path(os.environ["OUT"])
    dump = pathlib.Path(os.environ["XLAUNCH_STACKS_DIR"],
                        "rank_%s.%d.stacks" % (os.environ["RANK"], os.getpid()))


    def scribble():
        while True:
            with open(dump, "a") as f:
                f.write("\\x1b]0;owned\\x07\\x1b[2J\\r")
            time.sleep(0.02)


    threading.Thread(target=scribble, daemon=True).start()
    (out / "ready_0").write_text("")
    while not (out / "stop").exists():
        time.sleep(0.05)
    """)

# Blocks the dump signal, so that a request stays unanswered until the job ends.
DEAF = textwrap.dedent("""\
    import os
    import pathlib
    import signal
    import time

    out = pathlib.Path(os.environ["OUT"])
    signal.pthread_sigmask(signal.SIG_BLOCK, {int(os.environ["XLAUNCH_STACKS_SIGNAL"])})
    (out / "ready_0").write_text("")
    while not (out / "stop").exists():
        time.sleep(0.05)
    """)


def stacks_cmd(xlaunch_bin, env, *args, timeout=120):
    return subprocess.run([xlaunch_bin, "stacks", *args], env=merged_env(env),
                          capture_output=True, text=True, timeout=timeout)


def runtime_env(tmp_path):
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    return runtime, {"OUT": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime)}


def read_until(proc, needle, lines):
    """Reads the launcher's stderr until a line holds `needle`; False when it ended first."""
    while True:
        line = proc.stderr.readline()
        if not line:
            return False
        lines.append(line)
        if needle in line:
            return True


def finish(proc):
    """Waits for a job that ends by itself (its workers saw the stop file, or are done)."""
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def stop_and_finish(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return finish(proc)


def stacks_while_ready(xlaunch_bin, plain_python, tmp_path, name, source, ranks):
    """Runs `source` as `name` on `ranks` ranks; once each wrote its ready_<rank> file, asks
    `xlaunch stacks`, then lets them end (the stop file). Returns the stacks command's result,
    the job's exit code and its stderr."""
    script = tmp_path / name
    script.write_text(source)
    runtime, env = runtime_env(tmp_path)
    proc = start(xlaunch_bin, ["--num_processes", str(ranks), "--stall_timeout", "0",
                               str(script)], env=env, python=plain_python)
    try:
        wait_for_files(tmp_path, "ready_*", ranks, timeout=120)
        r = stacks_cmd(xlaunch_bin, env)
    finally:
        (tmp_path / "stop").write_text("")
        code, _, err = finish(proc)
    return r, code, err


def test_the_stall_report_leaves_ranks_that_left_python_alive(xlaunch_bin, plain_python,
                                                              tmp_path):
    script = tmp_path / "leavers.py"
    script.write_text(LEAVERS)
    runtime, env = runtime_env(tmp_path)
    proc = start(xlaunch_bin, ["--num_processes", "3", "--stall_timeout", "2", str(script)],
                 env=env, python=plain_python)
    lines = []
    try:
        wait_for_files(tmp_path, "pid_*", 3, timeout=120)
        # The report's last line: the stacks of the ranks, or why there are none.
        reported = read_until(proc, "xlaunch: stacks, identical ones once:", lines)
        assert reported, "".join(lines) + proc.stderr.read()
        lines.append(proc.stderr.readline())  # the three ranks share one line
        pids = [int((tmp_path / f"pid_{r}").read_text()) for r in range(3)]
        assert all(alive(p) for p in pids), "".join(lines)
    finally:
        code, _, err = stop_and_finish(proc)
    text = "".join(lines) + err
    assert "killed by" not in text.split("SIGTERM: stopping")[0], text
    assert code == 128 + signal.SIGTERM, text
    assert ("ranks 0,1,2: stacks not available: it no longer answers the dump signal (it "
            "replaced its program with exec, unregistered faulthandler, or handles the signal "
            "itself)") in text, text


def test_xlaunch_stacks_never_writes_into_a_file_the_rank_opened(xlaunch_bin, plain_python,
                                                                 tmp_path):
    r, code, err = stacks_while_ready(xlaunch_bin, plain_python, tmp_path, "closer.py", CLOSER, 2)
    # Both ranks' checkpoints took a descriptor number below 256 that a dump could use.
    assert all(int((tmp_path / f"fd_{r}").read_text()) < 256 for r in range(2))
    assert r.returncode == 0, r.stdout + r.stderr + err
    for rank in range(2):
        assert (tmp_path / f"checkpoint_{rank}").read_text() == "CHECKPOINT\n", r.stdout
    # Rank 0 closed only the low descriptors: its dump still works. Rank 1 closed them all.
    assert "rank 0: wait_here at closer.py:" in r.stdout, r.stdout
    assert ("rank 1: stacks not available: its dump file is no longer open (it closed its "
            "descriptors)") in r.stdout, r.stdout
    assert code == 0, err


def test_xlaunch_stacks_never_signals_what_a_stale_file_names(xlaunch_bin, tmp_path):
    runtime, env = runtime_env(tmp_path)
    (runtime / "xlaunch").mkdir(mode=0o700)
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        # What a launcher killed by SIGKILL left behind, its pid now someone else's.
        (runtime / "xlaunch" / "old.pid").write_text(f"{bystander.pid}\n")
        r = stacks_cmd(xlaunch_bin, env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "no running launcher" in r.stderr, r.stderr
        assert bystander.poll() is None, "xlaunch stacks signalled an unrelated process"
        assert not (runtime / "xlaunch" / "old.pid").exists()  # stale: removed
    finally:
        bystander.kill()
        bystander.wait()


def test_a_runtime_folder_that_is_not_private_is_refused(xlaunch_bin, plain_python, tmp_path):
    runtime, env = runtime_env(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "xlaunch").symlink_to(elsewhere)
    r = stacks_cmd(xlaunch_bin, env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{runtime}/xlaunch is a symbolic link" in r.stderr, r.stderr
    script = tmp_path / "hello.py"
    script.write_text("print('hello', flush=True)\n")
    proc = start(xlaunch_bin, [str(script)], env=env, python=plain_python)
    code, out, err = finish(proc)
    assert code == 0, err
    assert f"{runtime}/xlaunch is a symbolic link" in err, err
    assert list(elsewhere.iterdir()) == []  # nothing written where the link points

    (runtime / "xlaunch").unlink()
    (runtime / "xlaunch").mkdir(mode=0o755)
    os.chmod(runtime / "xlaunch", 0o755)
    r = stacks_cmd(xlaunch_bin, env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{runtime}/xlaunch has mode 0755, not 0700" in r.stderr, r.stderr
    if os.geteuid() == 0:  # another user's folder: only root can make one here
        os.chmod(runtime / "xlaunch", 0o700)
        os.chown(runtime / "xlaunch", 65534, 65534)
        r = stacks_cmd(xlaunch_bin, env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"{runtime}/xlaunch belongs to uid 65534, not to you (uid 0)" in r.stderr, \
            r.stderr


def test_control_characters_in_a_dump_are_escaped(xlaunch_bin, plain_python, tmp_path):
    r, code, err = stacks_while_ready(xlaunch_bin, plain_python, tmp_path, "scribbler.py",
                                      SCRIBBLER, 1)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x0d" in r.stdout, r.stdout
    for text in (r.stdout, err):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text


def test_the_launcher_survives_the_old_dump_signal(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "deaf.py"
    script.write_text(DEAF)
    runtime, env = runtime_env(tmp_path)
    proc = start(xlaunch_bin, ["--stall_timeout", "0", "--run_id", "survivor", str(script)],
                 env=env, python=plain_python)
    try:
        wait_for_files(tmp_path, "ready_0", 1, timeout=120)
        os.kill(proc.pid, signal.SIGRTMIN + 4)
        os.kill(proc.pid, signal.SIGURG)
        r = stacks_cmd(xlaunch_bin, env, "survivor", timeout=120)  # it still answers
        assert proc.poll() is None, proc.stderr.read()
    finally:
        (tmp_path / "stop").write_text("")
        code, _, err = finish(proc)
    assert code == 0, err
    assert r.returncode == 0, r.stdout + r.stderr
    assert list((runtime / "xlaunch").iterdir()) == []


def test_xlaunch_stacks_says_the_job_ended_during_the_dump(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "deaf.py"
    script.write_text(DEAF)
    runtime, env = runtime_env(tmp_path)
    proc = start(xlaunch_bin, ["--stall_timeout", "0", str(script)], env=env,
                 python=plain_python)
    lines = []
    try:
        wait_for_files(tmp_path, "ready_0", 1, timeout=120)
        asking = subprocess.Popen([xlaunch_bin, "stacks"], env=merged_env(env),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The rank cannot answer (it blocks the signal): the job ends while the launcher waits.
        assert read_until(proc, "dumping every rank's Python stacks", lines), "".join(lines)
        (tmp_path / "stop").write_text("")
        out, err = asking.communicate(timeout=120)
    finally:
        (tmp_path / "stop").write_text("")
        code, _, launcher_err = finish(proc)
    assert code == 0, launcher_err
    assert asking.returncode == 1, out + err
    assert "did not answer" not in err, err
    assert "ended before its stacks were collected" in err, err


# Replaces the files xlaunch reads from it: its stacks note (rank 0: a FIFO, which would block
# an open; rank 1: a link to /dev/zero, which never ends) and its error file (a FIFO).
REPLACER = textwrap.dedent("""\
    import os
    import pathlib
    import time

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]
    note = os.path.join(os.environ["XLAUNCH_STACKS_DIR"], f"rank_{rank}.{os.getpid()}.fd")
    os.unlink(note)
    if rank == "0":
        os.mkfifo(note)
    else:
        os.symlink("/dev/zero", note)
    os.mkfifo(os.environ["TORCHELASTIC_ERROR_FILE"])
    (out / ("ready_" + rank)).write_text("")
    while not (out / "stop").exists():
        time.sleep(0.05)
    raise SystemExit(3 if rank == "1" else 0)
    """)


def test_files_a_rank_replaced_cannot_hang_or_flood_the_launcher(xlaunch_bin, plain_python,
                                                                   tmp_path):
    r, code, err = stacks_while_ready(xlaunch_bin, plain_python, tmp_path, "replacer.py",
                                      REPLACER, 2)
    assert r.returncode == 0, r.stdout + r.stderr + err
    assert "ranks 0,1: stacks not available: not a Python worker" in r.stdout, r.stdout
    # Rank 1 failed; its error file, a FIFO, is not read, and the report comes all the same.
    assert code == 3, err
    assert "xlaunch: job failed: rank 1 exited with code 3" in err, err


# Native code that waits on a POSIX semaphore until a deadline (sem_timedwait: a futex wait
# with a timeout, which a handler ends with EINTR whatever SA_RESTART says) and does not
# expect to be interrupted.
SEMAPHORE = textwrap.dedent("""\
    import ctypes
    import os
    import pathlib
    import time

    class Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    libc = ctypes.CDLL(None, use_errno=True)
    semaphore = ctypes.create_string_buffer(64)
    libc.sem_init(semaphore, 0, 0)
    deadline = Timespec(int(time.clock_gettime(time.CLOCK_REALTIME)) + 5, 0)
    result = libc.sem_timedwait(semaphore, ctypes.byref(deadline))
    pathlib.Path(os.environ["OUT"], "errno").write_text(str(ctypes.get_errno()))
    """)


def test_a_stall_report_does_not_interrupt_a_wait_with_a_deadline(xlaunch_bin, plain_python,
                                                                    tmp_path):
    script = tmp_path / "semaphore.py"
    script.write_text(SEMAPHORE)
    runtime, env = runtime_env(tmp_path)
    proc = start(xlaunch_bin, ["--stall_timeout", "1", str(script)], env=env,
                 python=plain_python)
    code, _, err = finish(proc)
    assert code == 0, err
    assert "xlaunch: stall: no output" in err, err
    assert "rank 0: stacks not taken: each of its threads runs, or waits in a system call" in err
    # The wait ran to its deadline (ETIMEDOUT), not cut short by a dump signal (EINTR).
    assert (tmp_path / "errno").read_text() == str(errno.ETIMEDOUT), err


# Takes the dump signal for itself: rank 0 handles SIGURG (urgent data on a socket, the
# signal's own meaning), rank 1 registers faulthandler on it with a file of its own.
TAKER = textwrap.dedent("""\
    import faulthandler
    import os
    import pathlib
    import signal
    import time

    out = pathlib.Path(os.environ["OUT"])
    rank = os.environ["RANK"]
    if rank == "0":
        signal.signal(signal.SIGURG, lambda *_: (out / "handler_ran").write_text(""))
    else:
        mine = open(out / "my_faults.log", "w")
        faulthandler.register(signal.SIGURG, file=mine, all_threads=True)
    (out / ("ready_" + rank)).write_text("")
    while not (out / "stop").exists():
        time.sleep(0.05)
    """)


def test_a_rank_that_takes_the_dump_signal_for_itself_is_left_alone(xlaunch_bin, plain_python,
                                                                    tmp_path):
    r, code, err = stacks_while_ready(xlaunch_bin, plain_python, tmp_path, "taker.py", TAKER, 2)
    assert r.returncode == 0, r.stdout + r.stderr + err
    assert ("ranks 0,1: stacks not available: it no longer answers the dump signal (it replaced "
            "its program with exec, unregistered faulthandler, or handles the signal itself)"
            ) in r.stdout, r.stdout
    assert not (tmp_path / "handler_ran").exists()
    assert (tmp_path / "my_faults.log").read_text() == ""
    assert code == 0, err


# Makes itself non-dumpable (as a process that handles secrets does): a launcher of the same
# user may then not read its threads' system calls nor its descriptors.
SECRETIVE = textwrap.dedent("""\
    import ctypes
    import os
    import pathlib
    import time

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    out = pathlib.Path(os.environ["OUT"])
    (out / "ready_0").write_text("")
    while not (out / "stop").exists():
        time.sleep(0.05)
    """)


def test_a_rank_xlaunch_may_not_look_inside_is_not_signalled(xlaunch_bin, plain_python):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.fail("this test runs a job as another user: run it as root, with setpriv")
    # A folder the other user owns (pytest's are root's alone): the script, its runtime
    # folder, the ranks' files.
    home = pathlib.Path(tempfile.mkdtemp(prefix="xlaunch-test-nobody-"))
    try:
        run_secretive(xlaunch_bin, plain_python, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_secretive(xlaunch_bin, plain_python, home):
    os.chmod(home, 0o755)
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700)
    (home / "secretive.py").write_text(SECRETIVE)
    for path in (home, runtime, home / "secretive.py"):
        os.chown(path, 65534, 65534)
    env = {"OUT": str(home), "XDG_RUNTIME_DIR": str(runtime), "TMPDIR": str(home)}
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    proc = subprocess.Popen([*as_nobody, xlaunch_bin, "launch", "--python", plain_python,
                             "--stall_timeout", "0", str(home / "secretive.py")],
                            env=merged_env(env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_files(home, "ready_0", 1, timeout=60)
        r = subprocess.run([*as_nobody, xlaunch_bin, "stacks"], env=merged_env(env),
                           capture_output=True, text=True, timeout=120)
    finally:
        (home / "stop").write_text("")
        code, _, err = finish(proc)
    assert r.returncode == 0, r.stdout + r.stderr + err
    assert ("rank 0: stacks not taken: xlaunch may not look inside it (no ptrace access: a "
            "process that made itself non-dumpable, or Yama's ptrace_scope)") in r.stdout, r.stdout
    assert code == 0, err
