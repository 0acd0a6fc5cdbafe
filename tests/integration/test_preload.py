"""--preload (docs/launch.md, "Preloading"): each Python rank is forked from a template process
that imported the modules once. Real torch (Debian's 1.13, CPU, gloo); the same suites also
run whole with XLAUNCH_PRELOAD=torch (scripts/test)."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import textwrap
import time

from launch_helpers import WORKERS, alive, launch, start, wait_for_files, wait_until_gone

PROBE = (WORKERS / "preload_probe.py").read_text()
FORK_POOL = pathlib.Path(__file__).resolve().parents[1] / "fork_pool" / "fork_pool.c"


def seen(tmp_path, restart, rank):
    return json.loads((tmp_path / f"seen_{restart}_{rank}").read_text())


def test_ranks_are_forked_from_one_template_that_imported_torch(xlaunch_bin, torch_python,
                                                                  tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    proc = start(xlaunch_bin, ["--nproc_per_node", "3", "--preload", "torch", str(script),
                               "--lr", "0.1"], env={"OUT": str(tmp_path), "SPAWN_CHECK": "1"},
                 python=torch_python)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, out + err
    assert "--preload" not in err, err  # no refusal line
    ranks = [seen(tmp_path, 0, r) for r in range(3)]
    templates = {r["template"] for r in ranks}
    assert len(templates) == 1 and None not in templates, ranks
    for r, rank in enumerate(ranks):
        assert rank["torch_before_import"], rank
        assert rank["rank"] == str(r) and rank["local_rank"] == str(r)
        assert rank["name"] == "__main__" and rank["file"] == str(script)
        assert rank["argv"] == [str(script), "--lr", "0.1"]
        assert rank["path0"] == str(tmp_path)
        # Adopted by the launcher: its child, in its own process group, like any rank.
        assert rank["ppid"] == proc.pid and rank["pgid"] == rank["pid"], rank
        assert rank["stdout_unbuffered"] is True
        assert rank["no_site"] == 0 and rank["spawned_sqrt"] == 4.0
        # Nothing of the template's: 0-2, listdir's own, and the stacks dump file far above.
        assert [fd for fd in rank["fds"] if 3 < fd < 900] == [], rank["fds"]
        assert rank["sum"] == 6.0
    # The template ends with the job.
    assert wait_until_gone([int(templates.pop())]) == []


def test_without_preload_the_ranks_import_for_themselves(xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", str(script)],
               env={"OUT": str(tmp_path), "XLAUNCH_PRELOAD": ""}, python=torch_python, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        assert not seen(tmp_path, 0, rank)["torch_before_import"]
        assert seen(tmp_path, 0, rank)["template"] is None
        assert [fd for fd in seen(tmp_path, 0, rank)["fds"] if 3 < fd < 900] == []


def test_a_restart_forks_again_from_the_same_template(xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--max_restarts", "1", "--preload",
                             "torch", str(script)],
               env={"OUT": str(tmp_path), "FAIL_FIRST": "1"}, python=torch_python, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rank 1/2 (local rank 1" in r.stderr and "exited with code 7" in r.stderr
    assert "restarting every worker (restart 1 of 1)" in r.stderr
    first, second = seen(tmp_path, 0, 0), seen(tmp_path, 1, 0)
    assert first["template"] == second["template"] is not None
    assert second["torch_before_import"] and second["pid"] != first["pid"]


def test_module_mode_runs_the_module_as_main(xlaunch_bin, torch_python, tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch", "-m", "pkg.train",
                             "x"], env={"OUT": str(tmp_path), "PYTHONPATH": str(tmp_path)},
               python=torch_python, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    rank = seen(tmp_path, 0, 1)
    assert rank["torch_before_import"] and rank["name"] == "__main__"
    assert rank["argv"] == [str(package / "train.py"), "x"]


def test_exit_codes_and_tracebacks_are_the_programs_own(xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent("""\
        import os, sys, time
        if os.environ["RANK"] == "1":
            raise ValueError("bad batch")
        time.sleep(60)
        """))
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch", str(script)],
               python=torch_python, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rank 1/2 (local rank 1" in r.stderr
    # The traceback starts at the script, as `python script.py` prints it.
    assert "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"" + str(script) in r.stderr
    assert "[rank1]: ValueError: bad batch" in r.stderr
    assert "<string>" not in r.stderr

    script.write_text("import signal, os\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    r = launch(xlaunch_bin, ["--preload", "torch", str(script)], python=torch_python, timeout=120)
    assert r.returncode == 128 + signal.SIGSEGV, r.stdout + r.stderr
    assert "Fatal Python error: Segmentation fault" in r.stderr  # PYTHONFAULTHANDLER, per rank


def _start_waiting_ranks(xlaunch_bin, torch_python, tmp_path):
    """Two preloaded ranks that sleep: (the launcher, the ranks' pids, the template's pid)."""
    script = tmp_path / "wait.py"
    script.write_text(textwrap.dedent("""\
        import os, pathlib, time
        pathlib.Path(os.environ["OUT"], "pid.%s" % os.environ["RANK"]).write_text(
            "%d %s" % (os.getpid(), os.environ["XLAUNCH_PRELOAD_TEMPLATE"]))
        time.sleep(120)
        """))
    proc = start(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch", str(script)],
                 env={"OUT": str(tmp_path)}, python=torch_python)
    wait_for_files(tmp_path, "pid.*", 2, timeout=120)
    time.sleep(0.5)
    pids = [int(p.read_text().split()[0]) for p in tmp_path.glob("pid.*")]
    return proc, pids, int((tmp_path / "pid.0").read_text().split()[1])


def test_ctrl_c_stops_preloaded_ranks_and_the_template(xlaunch_bin, torch_python, tmp_path):
    proc, pids, template = _start_waiting_ranks(xlaunch_bin, torch_python, tmp_path)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert wait_until_gone(pids + [template]) == []


def test_a_killed_launcher_takes_ranks_and_template_along(xlaunch_bin, torch_python, tmp_path):
    proc, pids, template = _start_waiting_ranks(xlaunch_bin, torch_python, tmp_path)
    assert alive(template)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert wait_until_gone(pids + [template]) == []


def _refusal(xlaunch_bin, torch_python, tmp_path, module_text, args=None, env=None):
    (tmp_path / "sideeffect.py").write_text(module_text)
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch,sideeffect",
                             *(args or []), str(script)],
               env={"OUT": str(tmp_path), "PYTHONPATH": str(tmp_path), **(env or {})},
               python=torch_python, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    refusals = [line for line in r.stderr.splitlines() if "--preload" in line]
    assert len(refusals) == 1, r.stderr
    for rank in range(2):  # started on their own, and correct
        assert seen(tmp_path, 0, rank)["template"] is None
        assert not seen(tmp_path, 0, rank)["torch_before_import"]
        assert seen(tmp_path, 0, rank)["sum"] == 3.0
    return refusals[0]


def test_a_module_that_starts_a_thread_is_refused(xlaunch_bin, torch_python, tmp_path):
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    "import threading, time\n"
                    "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")
    assert line == ("xlaunch: --preload: the ranks start without a template: a preloaded module "
                    "started 1 thread(s)")


def _fork_pool(tmp_path):
    """A module `pool` that loads tests/fork_pool/fork_pool.c, built here."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler (cc) to build the thread pool: apt-get install gcc"
    lib = tmp_path / "libfork_pool.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-pthread", "-o", str(lib),
                    str(FORK_POOL)], check=True, timeout=120)
    return f"import ctypes, os\npool = ctypes.CDLL({str(lib)!r})\n"


def test_a_thread_pool_that_stops_at_fork_is_no_reason_to_refuse(xlaunch_bin, torch_python,
                                                                  tmp_path):
    # Like numpy's OpenBLAS: a thread per CPU from the import on, joined by its fork handler.
    (tmp_path / "pool.py").write_text(
        _fork_pool(tmp_path) +
        "assert len(os.listdir('/proc/self/task')) == 3, 'the pool did not start'\n")
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch,pool", str(script)],
               env={"OUT": str(tmp_path), "PYTHONPATH": str(tmp_path)}, python=torch_python,
               timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--preload" not in r.stderr, r.stderr  # no refusal line
    ranks = [seen(tmp_path, 0, rank) for rank in range(2)]
    templates = {rank["template"] for rank in ranks}
    assert len(templates) == 1 and None not in templates, ranks
    assert [rank["sum"] for rank in ranks] == [3.0, 3.0]


def test_a_fork_handler_that_never_returns_leaves_the_ranks_to_start_on_their_own(
        xlaunch_bin, torch_python, tmp_path):
    # The template's throwaway fork (which lets a pool like OpenBLAS's stop) runs the C fork
    # handlers: one that hangs in the child is refused, as ranks forked would hang in it too;
    # one that hangs in the template ends the template. Neither holds the job up.
    module = _fork_pool(tmp_path)
    line = _refusal(xlaunch_bin, torch_python, tmp_path, module,
                    env={"FORK_POOL_HANG": "child"})
    assert line == ("xlaunch: --preload: the ranks start without a template: a preloaded "
                    "module's fork handler did not return in 5 s")
    line = _refusal(xlaunch_bin, torch_python, tmp_path, module,
                    env={"FORK_POOL_HANG": "prepare"})
    assert "the template (pid " in line and "ended before it answered" in line, line


def _templates():
    """Pids of processes that run a preload template's command line (the template, and a
    fork of it)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"xlaunch preload template" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def test_a_launcher_stopped_during_the_templates_check_leaves_no_fork_of_it(
        xlaunch_bin, torch_python, tmp_path):
    (tmp_path / "pool.py").write_text(_fork_pool(tmp_path))
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    before = set(_templates())
    proc = start(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch,pool", str(script)],
                 env={"OUT": str(tmp_path), "PYTHONPATH": str(tmp_path),
                      "FORK_POOL_HANG": "child"}, python=torch_python)
    deadline = time.monotonic() + 120
    while len(set(_templates()) - before) < 2:  # the template and its hanging child
        assert time.monotonic() < deadline and proc.poll() is None, "no fork of the template"
        time.sleep(0.05)
    forks = sorted(set(_templates()) - before)
    os.kill(proc.pid, signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    assert wait_until_gone(forks) == [], forks


def test_python_fork_hooks_do_not_run_for_the_templates_own_check(xlaunch_bin, torch_python,
                                                                  tmp_path):
    # A pool of C threads that stays through the throwaway fork: refused after it.
    effect = tmp_path / "effect.txt"
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    _fork_pool(tmp_path) +
                    f"os.register_at_fork(after_in_child=lambda: open({str(effect)!r}, 'a'))\n",
                    env={"FORK_POOL_STAYS": "1"})
    assert line.endswith("a preloaded module started 2 thread(s)"), line
    assert not effect.exists()


def test_a_python_thread_is_refused_without_the_throwaway_fork(xlaunch_bin, torch_python,
                                                               tmp_path):
    # No fork handler stops a Python thread, and the throwaway fork's child could wait for the
    # GIL it holds: a child fork handler that hangs shows whether that fork was made.
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    _fork_pool(tmp_path) +
                    "import threading, time\n"
                    "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
                    env={"FORK_POOL_HANG": "child"})
    assert line == ("xlaunch: --preload: the ranks start without a template: a preloaded module "
                    "started 3 thread(s)")


def test_a_module_that_leaves_a_descriptor_open_is_refused(xlaunch_bin, torch_python, tmp_path):
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    "import socket\nkept = socket.socket()\n")
    assert "a preloaded module left descriptor" in line and "socket:[" in line, line


def test_a_module_that_fails_to_import_is_refused(xlaunch_bin, torch_python, tmp_path):
    line = _refusal(xlaunch_bin, torch_python, tmp_path, "raise RuntimeError('no config')\n")
    assert line.endswith("importing sideeffect failed: RuntimeError: no config"), line


def test_a_program_that_is_not_python_runs_as_it_is(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--preload", "torch", "--no_python", "/bin/true"])
    assert r.returncode == 0, r.stderr
    assert ("xlaunch: --preload: the ranks start without a template: --preload applies to "
            "Python programs (a .py file or -m MODULE); /bin/true runs as it is") in r.stderr


def test_a_template_that_dies_leaves_the_next_ranks_to_start_on_their_own(
        xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "kill_template.py"
    script.write_text(textwrap.dedent("""\
        import os, signal, sys
        print("template", os.environ.get("XLAUNCH_PRELOAD_TEMPLATE"), flush=True)
        if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
            os.kill(int(os.environ["XLAUNCH_PRELOAD_TEMPLATE"]), signal.SIGKILL)
            sys.exit(3)
        """))
    r = launch(xlaunch_bin, ["--max_restarts", "1", "--preload", "torch", str(script)],
               python=torch_python, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[rank0]: template None" in r.stdout, r.stdout
    assert "xlaunch: --preload: the ranks start without a template: the preload template" in r.stderr


def test_a_bad_module_name_is_a_usage_error(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--preload", "torch,my-module", "x.py"])
    assert r.returncode == 2, r.stderr
    assert "--preload" in r.stderr and "my-module" in r.stderr, r.stderr
    r = launch(xlaunch_bin, ["x.py"], env={"XLAUNCH_PRELOAD": "torch;os"})
    assert r.returncode == 2 and "XLAUNCH_PRELOAD" in r.stderr, r.stderr


def test_what_imports_did_to_the_environment_and_sys_path_reaches_each_rank(
        xlaunch_bin, torch_python, tmp_path):
    lib = tmp_path / "lib"
    (lib / "extra").mkdir(parents=True)
    (lib / "extra" / "lazy_dep.py").write_text("VALUE = 5\n")
    (lib / "envmod.py").write_text(
        "import os, sys\n"
        "os.environ.setdefault('ENVMOD_SET', 'yes')\n"
        "os.environ.setdefault('RANK', 'template')\n"  # a per-rank value must win
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'extra'))\n")
    script = tmp_path / "use.py"
    script.write_text(textwrap.dedent("""\
        import os, sys, lazy_dep
        import multiprocessing
        print("env", os.environ.get("ENVMOD_SET"), os.environ["RANK"], lazy_dep.VALUE,
              multiprocessing.current_process().authkey.hex()[:16], flush=True)
        """))
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "torch,envmod", str(script)],
               env={"PYTHONPATH": str(lib)}, python=torch_python, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()
             if " env " in line}
    assert lines["[rank0]:"][1:4] == ["yes", "0", "5"], r.stdout
    assert lines["[rank1]:"][1:4] == ["yes", "1", "5"], r.stdout
    # Each rank has its own multiprocessing key, as a fresh interpreter would.
    assert lines["[rank0]:"][4] != lines["[rank1]:"][4]


def test_a_script_gone_before_a_restart_fails_as_python_says(xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "gone.py"
    script.write_text("import os, sys\nos.unlink(__file__)\nsys.exit(3)\n")
    r = launch(xlaunch_bin, ["--max_restarts", "1", "--preload", "torch", str(script)],
               python=torch_python, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"can't open file '{script}': [Errno 2] No such file or directory" in r.stderr


def test_a_template_that_would_adopt_the_ranks_itself_is_refused(xlaunch_bin, torch_python,
                                                                  tmp_path):
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    "import ctypes\nctypes.CDLL(None).prctl(36, 1)\n")  # PR_SET_CHILD_SUBREAPER
    assert line.endswith("a preloaded module made the template a child subreaper"), line
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    "import signal\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\n")
    assert line.endswith("a preloaded module changed how SIGCHLD is handled"), line


def test_a_sitecustomize_beside_the_script_is_not_run_as_python_would_not(
        xlaunch_bin, torch_python, tmp_path):
    # `python main.py` imports sitecustomize before it puts main.py's folder on sys.path: the
    # one found is xlaunch's (which registers the stack dump, then chains to the system's),
    # never a sitecustomize.py that happens to lie beside the script. A preloaded rank too.
    (tmp_path / "sitecustomize.py").write_text("print('beside the script', flush=True)\n")
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import os, sys
        module = sys.modules.get("sitecustomize")
        folder = os.environ["XLAUNCH_STACKS_DIR"]
        registered = any(f.endswith(".%d.fd" % os.getpid()) for f in os.listdir(folder))
        print("site", getattr(module, "__file__", None), "registered", registered,
              "path0", sys.path[0], flush=True)
    """))
    outputs = {}
    for mode, extra in (("plain", {"XLAUNCH_PRELOAD": ""}), ("preload", {})):
        args = ["--nproc_per_node", "1", *(["--preload", "torch"] if mode == "preload" else []),
                str(tmp_path / "main.py")]
        r = launch(xlaunch_bin, args, env=extra, python=torch_python, timeout=240)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "--preload" not in r.stderr, r.stderr
        outputs[mode] = r.stdout
    for mode, out in outputs.items():
        assert "beside the script" not in out, (mode, out)
        assert "registered True" in out, (mode, out)
        assert f"path0 {tmp_path}" in out, (mode, out)
        assert f"site {tmp_path}/sitecustomize.py" not in out, (mode, out)


def test_each_rank_and_attempt_gets_its_own_torch_seed(xlaunch_bin, torch_python, tmp_path):
    # torch seeds its CPU generator from the OS at import: forked ranks must not share it
    # (dropout, unseeded shuffles and augmentation would be the same on every rank).
    script = tmp_path / "seed.py"
    script.write_text(textwrap.dedent("""\
        import os, sys, torch
        attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
        print("seed", attempt, torch.initial_seed(), torch.rand(1).item(), flush=True)
        sys.exit(3 if attempt == "0" and os.environ["RANK"] == "0" else 0)
        """))
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--max_restarts", "1", "--preload",
                             "torch", str(script)], python=torch_python, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--preload" not in r.stderr, r.stderr
    seeds = [line.split()[3] for line in r.stdout.splitlines() if " seed " in line]
    assert len(seeds) >= 3 and len(set(seeds)) == len(seeds), r.stdout


def test_a_module_that_starts_a_process_is_refused(xlaunch_bin, torch_python, tmp_path):
    # The template is not in the run's cgroup: a process it started would outlive the job.
    line = _refusal(xlaunch_bin, torch_python, tmp_path,
                    "import subprocess\nhelper = subprocess.Popen(['sleep', '30'])\n")
    assert "a preloaded module started a process (pid " in line, line


def test_an_import_time_stdout_wrapper_and_pth_environment_reach_each_rank(
        xlaunch_bin, torch_python, tmp_path):
    # A .pth file in the user's site folder sets a variable; a module wraps sys.stdout.
    user_base = tmp_path / "userbase"
    version = subprocess.run([torch_python, "-c", "import site; print(site.getusersitepackages())"],
                             env={**os.environ, "PYTHONUSERBASE": str(user_base)},
                             capture_output=True, text=True, check=True).stdout.strip()
    site_dir = pathlib.Path(version)
    site_dir.mkdir(parents=True)
    (site_dir / "setvar.pth").write_text("import os; os.environ['FROM_PTH'] = 'pth'\n")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "teemod.py").write_text(textwrap.dedent("""\
        import sys
        print("teemod configuring itself")  # to preload.log, not lost
        class Tee:
            def __init__(self, inner):
                self.inner = inner
            def write(self, text):
                return self.inner.write(text.replace("hello", "HELLO"))
            def flush(self):
                self.inner.flush()
        sys.stdout = Tee(sys.stdout)
        """))
    script = tmp_path / "main.py"
    script.write_text("import os\nprint('hello', os.environ.get('FROM_PTH'), __file__, flush=True)\n")
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--preload", "teemod", "--log_dir",
                             str(logs), "./main.py"],
               env={"PYTHONPATH": str(lib), "PYTHONUSERBASE": str(user_base)},
               python=torch_python, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--preload" not in r.stderr, r.stderr
    # __file__ as CPython names ./main.py: joined to the working folder, not normalised.
    assert r.stdout.count(f"HELLO pth {tmp_path}/./main.py") == 2, r.stdout
    (run,) = logs.iterdir()
    assert "teemod configuring itself" in (run / "preload.log").read_text()


def test_run_path_programs_are_preloaded_too(xlaunch_bin, torch_python, tmp_path):
    # --run_path runs a Python file whatever its name: the template forks it like a .py.
    program = tmp_path / "train"
    program.write_text("import os\nprint('template', os.environ.get('XLAUNCH_PRELOAD_TEMPLATE'))\n")
    r = launch(xlaunch_bin, ["--run_path", "--preload", "json", str(program)],
               python=torch_python, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--preload" not in r.stderr, r.stderr
    assert "[rank0]: template None" not in r.stdout and "[rank0]: template " in r.stdout
