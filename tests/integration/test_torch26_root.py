"""scripts/torch26-root: a half-built or broken root is detected and rebuilt, and a build that
cannot succeed fails with its reason (scripts/test then fails: nothing is skipped)."""
import os
import subprocess

from torch26_helpers import ROOT_SCRIPT, WRAPPER


def run_root_script(root, mirror):
    env = dict(os.environ, XLAUNCH_TORCH26_ROOT=str(root), XLAUNCH_DEBIAN_MIRROR=mirror)
    return subprocess.run([str(ROOT_SCRIPT)], capture_output=True, text=True, env=env,
                          timeout=600)


def test_a_broken_root_is_rebuilt_and_a_failed_build_says_why(tmp_path):
    root = tmp_path / "trixie"
    (root / "usr/bin").mkdir(parents=True)
    (root / ".xlaunch-torch26-ready").touch()  # marked ready, but its python3 is broken
    (root / "usr/bin/python3").write_text("#!/bin/sh\nexit 3\n")
    (root / "usr/bin/python3").chmod(0o755)
    # Port 9 (discard) on loopback: nothing listens, so debootstrap fails at once.
    r = run_root_script(root, "http://127.0.0.1:9/debian")
    assert r.returncode == 1, r.stderr
    assert f"the root at {root} is broken, rebuilding it" in r.stderr
    assert "debootstrap trixie failed (mirror http://127.0.0.1:9/debian)" in r.stderr
    assert not (root / ".xlaunch-torch26-ready").exists()  # no marker: next run rebuilds
    assert r.stdout == ""


def test_a_half_built_root_without_marker_is_not_used(tmp_path):
    root = tmp_path / "trixie"
    (root / "usr/bin").mkdir(parents=True)  # an interrupted build: no marker
    r = run_root_script(root, "http://127.0.0.1:9/debian")
    assert r.returncode == 1 and "debootstrap trixie failed" in r.stderr, r.stderr
    # The wrapper refuses such a root too, naming the script to run.
    w = subprocess.run([str(WRAPPER), "-c", "pass"], capture_output=True, text=True,
                       env=dict(os.environ, XLAUNCH_TORCH26_ROOT=str(root)), timeout=60)
    assert w.returncode == 2 and "run scripts/torch26-root first" in w.stderr
