"""Python without torch: every rank dies at once with "No module named 'torch'".

On many machines `python3` on PATH is not the interpreter that has torch. The report then
names the interpreter that ran, how to choose another (--python, XLAUNCH_PYTHON, the config
key) and an interpreter on PATH or in the active venv/conda prefix that has torch.
"""
import os
import re
import subprocess

import pytest

from config_helpers import isolated_env

TRAIN = "import torch\nprint(torch.__version__)\n"


@pytest.fixture
def venvs(tmp_path, torch_python):
    """A venv without torch, and one that sees the system's packages (torch among them)."""
    made = {}
    for name, flags in (("bare", []), ("system", ["--system-site-packages"])):
        path = tmp_path / name
        subprocess.run([torch_python, "-m", "venv", "--without-pip", *flags, str(path)],
                       check=True, capture_output=True)
        made[name] = path
    return made


def launch(xlaunch_bin, tmp_path, args, env):
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    return subprocess.run([xlaunch_bin, "launch", "--num_processes", "2", *args, str(train)],
                          env=isolated_env(tmp_path, **env), capture_output=True, text=True,
                          timeout=120)


def named_interpreter(stderr):
    found = re.search(r"xlaunch: hint: (\S+) has torch: run with --python (\S+) ", stderr)
    assert found, stderr
    assert found.group(1) == found.group(2)
    return found.group(1)


def finds_torch(python):
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
    return subprocess.run([python, "-c", probe]).returncode == 0


def test_python3_on_path_without_torch_names_one_that_has_it(xlaunch_bin, tmp_path, venvs,
                                                              torch_python):
    bare = venvs["bare"] / "bin"
    path = f"{bare}:{os.path.dirname(torch_python)}:/usr/bin:/bin"
    r = launch(xlaunch_bin, tmp_path, [], {"PATH": path})
    assert r.returncode == 1, r.stderr
    assert "No module named 'torch'" in r.stderr
    assert f"xlaunch: hint: the workers ran {bare}/python3, which cannot import torch" in r.stderr
    named = named_interpreter(r.stderr)
    assert not named.startswith(str(venvs["bare"])) and finds_torch(named), named
    assert f"XLAUNCH_PYTHON={named}" in r.stderr
    assert f"'python: {named}' in the config file" in r.stderr
    # The hint comes before the closing line.
    assert r.stderr.index("has torch") < r.stderr.index("xlaunch: job failed")


def test_the_active_virtual_environment_comes_first(xlaunch_bin, tmp_path, venvs):
    bare = venvs["bare"] / "bin" / "python3"
    r = launch(xlaunch_bin, tmp_path, ["--python", str(bare)],
               {"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(venvs["system"])})
    assert r.returncode == 1, r.stderr
    assert named_interpreter(r.stderr) == f"{venvs['system']}/bin/python3"


def test_no_interpreter_with_torch_says_how_to_install_or_choose(xlaunch_bin, tmp_path, venvs):
    bare = venvs["bare"] / "bin"
    r = launch(xlaunch_bin, tmp_path, ["--python", f"{bare}/python3"], {"PATH": str(bare)})
    assert r.returncode == 1, r.stderr
    assert "no other Python on PATH or in the active virtual environment" in r.stderr
    assert f"{bare}/python3 -m pip install torch" in r.stderr
    assert "--python PATH, XLAUNCH_PYTHON or the config key 'python'" in r.stderr


def test_a_script_that_fails_otherwise_gets_no_torch_hint(xlaunch_bin, tmp_path, torch_python):
    train = tmp_path / "fail.py"
    train.write_text("raise SystemExit('no torch here, but not an import error')\n")
    r = subprocess.run([xlaunch_bin, "launch", "--python", torch_python, str(train)],
                       env=isolated_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "cannot import torch" not in r.stderr
