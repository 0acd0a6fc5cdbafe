"""PyTorch 2.6 for the interop tests: Debian 13's python3-torch in a cached root.

scripts/torch26-root builds the root once per machine (scripts/test calls it before the
integration tests; the fixture calls it again, which costs seconds when the root is ready).
Workers run through scripts/torch26-python, used as `xlaunch launch --python WRAPPER`: it
execs the root's python3 in a private mount namespace holding the bind mounts the worker
needs (/dev, /proc, /sys, /tmp, the repository, the working directory), so they vanish with
the process, even when a test fails or a worker is killed.

SHIM_ENV puts tests/integration/torch26_shim on PYTHONPATH: its usercustomize makes
TCPStore's use_libuv default to False on this libuv-less build (see docs/rendezvous.md).
"""
import contextlib
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ROOT_SCRIPT = REPO / "scripts" / "torch26-root"
WRAPPER = REPO / "scripts" / "torch26-python"
SHIM_DIR = REPO / "tests" / "integration" / "torch26_shim"
SHIM_ENV = {"PYTHONPATH": str(SHIM_DIR)}
WORKERS = REPO / "tests" / "integration" / "workers"


def mounts_under(root):
    """Mount points inside the root as this (the host's) mount namespace sees them."""
    out = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True, text=True,
                         check=True).stdout.split()
    return [m for m in out if m.startswith(str(root) + "/")]


@pytest.fixture(scope="session")
def torch26_root():
    """The ready root's path; fails (never skips) with the builder's reason otherwise."""
    r = subprocess.run([str(ROOT_SCRIPT)], capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        pytest.fail(f"scripts/torch26-root could not provide the Debian 13 root "
                    f"(exit {r.returncode}):\n{r.stderr[-3000:]}")
    return pathlib.Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def torch26_python(torch26_root):
    """The wrapper, checked to run torch 2.6 (with the shim, as the tests use it)."""
    probe = subprocess.run([str(WRAPPER), "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True, timeout=300,
                           env=_env(SHIM_ENV))
    assert probe.returncode == 0, f"{WRAPPER} failed: {probe.stderr[-3000:]}"
    assert probe.stdout.strip().startswith("2.6"), probe.stdout
    yield str(WRAPPER)
    # Every worker's mounts lived in its own namespace: none may show up out here.
    assert mounts_under(torch26_root) == []


def _env(extra):
    import os
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(extra)
    return env


def shim_env(extra=None):
    """Environment for 2.6 workers: the shim on PYTHONPATH plus `extra`."""
    return {**SHIM_ENV, **(extra or {})}


@contextlib.contextmanager
def torch26_server(python):
    """Torch 2.6's own TCPStore server (non-libuv: Debian's build) on a free port; yields
    the port; stops it by closing its stdin."""
    proc = subprocess.Popen([python, str(WORKERS / "torch26_server.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env({}))
    try:
        line = proc.stdout.readline().strip()
        assert line.isdigit(), f"torch 2.6 server did not start: {line!r} {proc.stderr.read()[-2000:]}"
        yield int(line)
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
