"""Bugs found in review, each shown by a test that fails until it is fixed."""
import json

from launch_helpers import launch

# Attempt 0 fails, so the outer run's cgroup gets cgroup.kill; attempt 1 starts the inner
# launch with SIGCHLD ignored, as a program that ignores SIGCHLD passes on to what it runs
# (exec keeps an ignored disposition; Python's subprocess does not restore SIGCHLD).
RESTARTED_OUTER_IGNORING_SIGCHLD = r'''
import os, pathlib, signal, subprocess, sys
out = pathlib.Path(os.environ["OUT_DIR"])
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    sys.exit(5)
inner = [os.environ["NESTED_BIN"], "launch", "--python", sys.executable, "--num_processes", "2",
         "--log_dir", str(out / "inner_logs"), os.environ["INNER_SCRIPT"]]
ignore = lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)
sys.exit(subprocess.run(inner, preexec_fn=ignore).returncode)
'''

INNER = r'''
import json, os
with open(f"{os.environ['OUT_DIR']}/inner_{os.environ['RANK']}.json", "w") as f:
    json.dump({"RANK": os.environ["RANK"]}, f)
'''


def test_a_launch_that_inherits_an_ignored_sigchld_in_a_killed_cgroup_runs_its_ranks(
        xlaunch_bin, tmp_path):
    """can_be_born_in (launcher/cgroup_posix.cpp) reads its test child's fate from wait_for,
    which returns status 0 when waitpid fails: with SIGCHLD ignored the kernel reaps the child
    itself and waitpid fails with ECHILD, so a child SIGKILLed at birth reads as one that
    lived, and every rank of the first attempt is then killed at birth (Linux 6.18)."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "outer.py").write_text(RESTARTED_OUTER_IGNORING_SIGCHLD)
    (tmp_path / "inner.py").write_text(INNER)
    r = launch(xlaunch_bin, ["--num_processes", "1", "--max_restarts", "1",
                             str(tmp_path / "outer.py")],
               env={"OUT_DIR": str(out), "NESTED_BIN": xlaunch_bin,
                    "INNER_SCRIPT": str(tmp_path / "inner.py"), "XLAUNCH_CONTAINMENT": "cgroup"},
               timeout=120)
    inner_logs = "".join(p.read_text() for p in (out / "inner_logs").glob("*/xlaunch.log"))
    assert "restarting every worker (restart 1 of 1)" in r.stderr, r.stderr
    assert r.returncode == 0, f"{r.stderr}\ninner xlaunch.log:\n{inner_logs}"
    inner = [json.loads((out / f"inner_{k}.json").read_text()) for k in (0, 1)]
    assert [i["RANK"] for i in inner] == ["0", "1"]
