"""What a worker inherits from xlaunch beyond its variables, and what it must not (the first
rule: do no harm to the run): no controlling terminal, a single worker's threads, no outer
run's template, and no stack-dump machinery in the Pythons a rank starts."""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

from launch_helpers import launch, merged_env


def run_on_a_terminal(argv, env, timeout):
    """Runs argv as the session leader of a new pseudo-terminal, as from an interactive shell;
    returns (exit status, everything written to the terminal). Kills it at the timeout."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    output, deadline = b"", time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal is gone
                break
            if not chunk:
                break
            output += chunk
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(master)
    return status, output.decode(errors="replace")


def test_a_rank_has_no_terminal_so_a_password_prompt_fails_instead_of_hanging(xlaunch_bin,
                                                                             tmp_path):
    # On xlaunch's terminal a rank is in a background process group: turning echo off for a
    # prompt stopped it for good (SIGTTOU) and the job hung. Without a controlling terminal,
    # as torchrun's workers, /dev/tty fails at once and getpass reads stdin (/dev/null).
    (tmp_path / "prompt.py").write_text(textwrap.dedent("""
        import errno, getpass, os, sys, warnings
        try:
            os.close(os.open("/dev/tty", os.O_RDWR))
            print("tty: opened", flush=True)
        except OSError as error:
            print("tty:", errno.errorcode[error.errno], flush=True)
        warnings.simplefilter("ignore")
        try:
            getpass.getpass("token: ")
        except EOFError:
            print("prompt: end of file", flush=True)
    """))
    argv = [xlaunch_bin, "launch", "--python", sys.executable, "--nproc_per_node", "2",
            str(tmp_path / "prompt.py")]
    status, out = run_on_a_terminal(argv, merged_env({}), timeout=60)
    assert os.WIFEXITED(status), (status, out)  # not killed at the timeout
    # Every rank ends by itself (a failing one would stop the other before it prints).
    assert os.WEXITSTATUS(status) == 0, out
    for rank in (0, 1):
        assert f"[rank{rank}]: tty: ENXIO" in out, out
        assert f"[rank{rank}]: prompt: end of file" in out, out
    # The launcher kept its terminal: its report reached it.
    assert "xlaunch: all 2 workers finished successfully" in out, out


def test_one_worker_keeps_its_threads_and_several_get_one_each(xlaunch_bin, tmp_path):
    clean = merged_env({})
    clean.pop("OMP_NUM_THREADS", None)

    def run(nproc):
        r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable, "--nproc_per_node",
                            str(nproc), str(write_env_probe(tmp_path))], env=clean,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r

    # As torchrun: OMP_NUM_THREADS=1 only where workers share the machine's cores.
    one = run(1)
    assert "[rank0]: OMP None" in one.stdout, one.stdout
    assert "OMP_NUM_THREADS" not in one.stderr, one.stderr
    two = run(2)
    assert "[rank0]: OMP 1" in two.stdout and "[rank1]: OMP 1" in two.stdout, two.stdout
    assert "setting OMP_NUM_THREADS=1 for each worker" in two.stderr, two.stderr


def write_env_probe(tmp_path):
    probe = tmp_path / "env.py"
    probe.write_text(
        "import os\nprint('OMP', os.environ.get('OMP_NUM_THREADS'), 'TEMPLATE',"
        " os.environ.get('XLAUNCH_PRELOAD_TEMPLATE'), flush=True)\n")
    return probe


def test_a_launch_inside_a_preloaded_rank_does_not_pass_its_template_on(xlaunch_bin, tmp_path):
    # xlaunch started by a rank of an outer --preload run inherits the outer template's pid;
    # its own ranks started on their own, so they must not see it (it is documented as
    # unset there, and a pid kept past its process's life may name another).
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", str(write_env_probe(tmp_path))],
               env={"XLAUNCH_PRELOAD_TEMPLATE": "4242"})
    assert r.returncode == 0, r.stderr
    assert "TEMPLATE None" in r.stdout, r.stdout


def test_pythons_a_rank_starts_get_no_stack_files_and_no_dump_handler(xlaunch_bin, tmp_path):
    # Only a rank's own dump is ever read: its children (data loader workers, tools) must not
    # each leave files in the stacks folder or catch SIGURG (it cuts their waits short).
    (tmp_path / "parent.py").write_text(textwrap.dedent("""
        import os, re, subprocess, sys
        def catches_urg(status):
            caught = int(re.search(r"SigCgt:\\s*([0-9a-f]+)", status).group(1), 16)
            return bool(caught & (1 << (23 - 1)))  # SIGURG is 23
        child = ("import os, re, sys; s = open('/proc/self/status').read();"
                 "print(int(re.search(r'SigCgt:\\\\s*([0-9a-f]+)', s).group(1), 16) >> 22 & 1)")
        caught = [subprocess.run([sys.executable, "-c", child], capture_output=True,
                                 text=True).stdout.strip() for _ in range(3)]
        print("children catch SIGURG:", caught, flush=True)
        print("rank catches SIGURG:", catches_urg(open("/proc/self/status").read()), flush=True)
        print("files:", sorted(os.listdir(os.environ["XLAUNCH_STACKS_DIR"])), flush=True)
        print("pid:", os.getpid(), flush=True)
    """))
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", str(tmp_path / "parent.py")])
    assert r.returncode == 0, r.stderr
    assert "children catch SIGURG: ['0', '0', '0']" in r.stdout, r.stdout
    assert "rank catches SIGURG: True" in r.stdout, r.stdout
    pid = re.search(r"pid: (\d+)", r.stdout).group(1)
    files = re.search(r"files: (\[.*\])", r.stdout).group(1)
    assert files == str([f"rank_0.{pid}.fd", f"rank_0.{pid}.stacks"]), r.stdout


def test_a_python_the_launcher_adopted_is_not_set_up_as_a_rank(xlaunch_bin, tmp_path):
    # A helper left by a subshell that ended is adopted by the launcher (the subreaper), so
    # its parent is the launcher as a rank's is; it leads no process group of its own, though.
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        import os, re, sys
        status = open("/proc/self/status").read()
        caught = int(re.search(r"SigCgt:\\s*([0-9a-f]+)", status).group(1), 16) >> 22 & 1
        mine = [f for f in os.listdir(os.environ["XLAUNCH_STACKS_DIR"])
                if f.endswith(".%d.fd" % os.getpid())]
        with open(sys.argv[1] + ".tmp", "w") as f:
            f.write("ppid %d launcher %s catches %d files %s" % (os.getppid(), sys.argv[2],
                                                                 caught, mine))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    """))
    (tmp_path / "rank.py").write_text(textwrap.dedent("""
        import os, subprocess, sys, time
        out, probe = sys.argv[1], sys.argv[2]
        # The subshell ends at once; its child runs the probe once the launcher adopted it.
        subprocess.run(["sh", "-c", '(sleep 0.5; exec "$0" "$1" "$2" "$3") >/dev/null 2>&1 &',
                        sys.executable, probe, out, str(os.getppid())], check=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(out) and time.monotonic() < deadline:
            time.sleep(0.05)
    """))
    out = tmp_path / "probe.out"
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", str(tmp_path / "rank.py"), str(out),
                             str(tmp_path / "probe.py")])
    assert r.returncode == 0, r.stderr
    seen = out.read_text()
    ppid, launcher = re.search(r"ppid (\d+) launcher (\d+)", seen).groups()
    assert ppid == launcher, f"the probe was not adopted by the launcher: {seen}"
    assert "catches 0 files []" in seen, seen


def test_os_environ_keeps_its_type_in_a_rank(xlaunch_bin, tmp_path):
    # xlaunch notes a MASTER_ADDR/MASTER_PORT the script sets (stall reports), without
    # replacing os.environ's class: code may check type(os.environ) is os._Environ.
    (tmp_path / "rank.py").write_text(textwrap.dedent("""
        import os
        os.environ["MASTER_PORT"] = "1234"
        print("same type:", type(os.environ) is os._Environ, os.environ["MASTER_PORT"])
        notes = [f for f in os.listdir(os.environ["XLAUNCH_STACKS_DIR"]) if f.endswith(".env")]
        print("notes:", [open(os.path.join(os.environ["XLAUNCH_STACKS_DIR"], f)).read()
                         for f in notes])
    """))
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", str(tmp_path / "rank.py")])
    assert r.returncode == 0, r.stderr
    assert "same type: True 1234" in r.stdout, r.stdout
    assert "notes: ['MASTER_PORT=1234\\n']" in r.stdout, r.stdout
