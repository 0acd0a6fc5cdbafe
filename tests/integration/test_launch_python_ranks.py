"""What `xlaunch launch` sets up at start depends on what runs: the Python stack machinery
(the sitecustomize folder, PYTHONPATH, PYTHONFAULTHANDLER) only where a rank may run Python,
and workers born in the run's cgroup (clone3 CLONE_INTO_CGROUP) rather than moved there."""
import os
import re
import sys

from launch_helpers import launch

STACKS_VARS = ("XLAUNCH_STACKS_DIR", "PYTHONFAULTHANDLER")

REPORT = ("import os, sys\n"
          "print('stacks', os.environ.get('XLAUNCH_STACKS_DIR', 'none'), flush=True)\n"
          "print('tmp', sorted(os.listdir(os.environ['TMPDIR'])), flush=True)\n")


def private_tmp(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    return {"TMPDIR": str(tmp)}


def test_a_native_program_gets_no_stack_files_nor_variables(xlaunch_bin, tmp_path):
    env = private_tmp(tmp_path)
    # ls is a native program: it lists what xlaunch made in TMPDIR while the ranks run.
    r = launch(xlaunch_bin, ["--nproc_per_node", "2", "--no_python", "/bin/ls", env["TMPDIR"]],
               env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"\[rank0\]: xlaunch-\d{8}-\d{6}-\w+-\w+", r.stdout), r.stdout
    assert "xlaunch-stacks-" not in r.stdout
    r = launch(xlaunch_bin, ["--no_python", "/usr/bin/printenv"], env=env)
    assert r.returncode == 0, r.stderr
    assert "[rank0]: RANK=0" in r.stdout, r.stdout
    for name in STACKS_VARS:
        assert f"{name}=" not in r.stdout, r.stdout
    assert "xlaunch-stacks-" not in r.stdout  # not on PYTHONPATH either
    assert os.listdir(env["TMPDIR"]) == []


def test_python_ranks_still_get_the_stack_machinery(xlaunch_bin, plain_python, tmp_path):
    env = private_tmp(tmp_path)
    script = tmp_path / "report.py"
    script.write_text(REPORT)
    r = launch(xlaunch_bin, [str(script)], env=env, python=plain_python)
    assert r.returncode == 0, r.stderr
    assert f"stacks {env['TMPDIR']}/xlaunch-stacks-" in r.stdout, r.stdout
    assert re.search(r"tmp \[.*'xlaunch-stacks-", r.stdout), r.stdout


def test_programs_that_may_start_python_under_no_python_keep_it(xlaunch_bin, plain_python,
                                                                tmp_path):
    env = private_tmp(tmp_path)
    script = tmp_path / "report"
    script.write_text(f"#!{plain_python}\n" + REPORT)
    script.chmod(0o755)
    shell = tmp_path / "run.sh"
    shell.write_text(f"#!/bin/sh\nexec {plain_python} {tmp_path / 'report'}\n")
    shell.chmod(0o755)
    runs = {"a Python script": ["--no_python", str(script)],
            "a shell script": ["--no_python", str(shell)],
            "a shell": ["--no_python", "/bin/sh", "-c", f"exec {plain_python} {script}"],
            "the interpreter": ["--no_python", plain_python, str(script)],
            "env": ["--no_python", "/usr/bin/env", plain_python, str(script)]}
    for what, args in runs.items():
        r = launch(xlaunch_bin, args, env=env, python=plain_python)
        assert r.returncode == 0, (what, r.stderr)
        assert f"stacks {env['TMPDIR']}/xlaunch-stacks-" in r.stdout, (what, r.stdout)


def test_python_stacks_true_ships_it_to_any_program(xlaunch_bin, tmp_path):
    env = private_tmp(tmp_path)
    r = launch(xlaunch_bin, ["--python_stacks", "true", "--no_python", "/usr/bin/printenv"], env=env)
    assert r.returncode == 0, r.stderr
    assert f"XLAUNCH_STACKS_DIR={env['TMPDIR']}/xlaunch-stacks-" in r.stdout, r.stdout
    assert "PYTHONFAULTHANDLER=1" in r.stdout


def test_workers_are_in_the_run_cgroup(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--nproc_per_node", "3", "--no_python", "/bin/cat",
                             "/proc/self/cgroup"], env={"XLAUNCH_CONTAINMENT": "cgroup"})
    assert r.returncode == 0, r.stderr
    found = {line.split("0::", 1)[1] for line in r.stdout.splitlines() if "0::" in line}
    assert len(found) == 1, r.stdout
    assert re.search(r"/xlaunch-\d+-[0-9a-f]{8}$", found.pop()), r.stdout
