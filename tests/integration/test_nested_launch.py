"""A launch inside a worker of another xlaunch job takes its settings from its own flags, not
from the variables the outer job gave its workers (docs/config.md, "Nested launches")."""
import fcntl
import json
import os
import sys

import pytest

from launch_helpers import launch

OUTER = r'''
import os, subprocess, sys
out = os.environ["OUT_DIR"]
with open(f"{out}/outer.json", "w") as f:
    f.write(os.environ["XLAUNCH_LOG_DIR"])
inner = [os.environ["NESTED_BIN"], "launch", "--python", sys.executable, "--num_processes", "2",
         os.environ["INNER_SCRIPT"]]
sys.exit(subprocess.run(inner).returncode)
'''

INNER = r'''
import json, os
keys = ("RANK", "WORLD_SIZE", "XLAUNCH_LOG_DIR", "XLAUNCH_DISTRIBUTED_TYPE", "XLAUNCH_RUN_ID")
with open(f"{os.environ['OUT_DIR']}/inner_{os.environ['RANK']}.json", "w") as f:
    json.dump({k: os.environ.get(k) for k in keys}, f)
'''


def test_a_nested_launch_ignores_the_outer_jobs_worker_variables(xlaunch_bin, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "outer.py").write_text(OUTER)
    (tmp_path / "inner.py").write_text(INNER)
    # One outer process: its worker sees XLAUNCH_DISTRIBUTED_TYPE=NO, which refused the inner
    # launch's 2 processes, and XLAUNCH_LOG_DIR, which put the inner run into the outer's.
    r = launch(xlaunch_bin, ["--num_processes", "1", "--log_dir", str(tmp_path / "logs"),
                             str(tmp_path / "outer.py")],
               env={"OUT_DIR": str(out), "NESTED_BIN": xlaunch_bin,
                    "INNER_SCRIPT": str(tmp_path / "inner.py")})
    assert r.returncode == 0, r.stderr
    assert "environment variable XLAUNCH_DISTRIBUTED_TYPE ignored" in r.stderr, r.stderr
    outer_dir = (out / "outer.json").read_text()
    inner = [json.loads((out / f"inner_{k}.json").read_text()) for k in (0, 1)]
    assert all(i["WORLD_SIZE"] == "2" for i in inner), inner
    assert all(i["XLAUNCH_DISTRIBUTED_TYPE"] != "NO" for i in inner), inner
    inner_dir = inner[0]["XLAUNCH_LOG_DIR"]
    assert inner_dir != outer_dir and not inner_dir.startswith(outer_dir + "/"), (inner_dir,
                                                                                 outer_dir)


RESTARTED_OUTER = r"""
import os, pathlib, signal, subprocess, sys
out = pathlib.Path(os.environ["OUT_DIR"])
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    # The outer attempt fails and leaves a process in its cgroup, which therefore gets
    # cgroup.kill before attempt 1 (an empty one is not killed).
    subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    sys.exit(5)
inner = [os.environ["NESTED_BIN"], "launch", "--python", sys.executable, "--num_processes", "2",
         "--log_dir", str(out / "inner_logs"), os.environ["INNER_SCRIPT"]]
# A program that ignores SIGCHLD passes that on through exec (Python's subprocess does not
# restore it): then the kernel reaps a child at once, and its exit status tells nothing.
ignore = lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)
sys.exit(subprocess.run(inner, preexec_fn=ignore if os.environ["IGNORE_SIGCHLD"] == "1"
                        else None).returncode)
"""

INNER_PIPES = r"""
import fcntl, json, os
with open(f"{os.environ['OUT_DIR']}/inner_{os.environ['RANK']}.json", "w") as f:
    json.dump({"RANK": os.environ["RANK"], "pipe": fcntl.fcntl(1, fcntl.F_GETPIPE_SZ)}, f)
"""


@pytest.mark.parametrize("sigchld", ["default", "ignored"])
def test_a_nested_launch_in_a_restarted_outer_attempt_runs_its_ranks(xlaunch_bin, tmp_path,
                                                                     sigchld):
    """The inner run's cgroup is made inside the outer one, which cgroup.kill ended attempt 0
    of. Linux 6.18 kills a child born (CLONE_INTO_CGROUP) into a cgroup whose kill count
    differs from its parent's: the inner launcher must find that out, even with SIGCHLD
    ignored, and move its ranks in instead of having them killed at birth. Its rank pipes
    keep the kernel's size (the pipe budget is per launcher, not per user)."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "outer.py").write_text(RESTARTED_OUTER)
    (tmp_path / "inner.py").write_text(INNER_PIPES)
    r = launch(xlaunch_bin, ["--num_processes", "1", "--max_restarts", "1",
                             str(tmp_path / "outer.py")],
               env={"OUT_DIR": str(out), "NESTED_BIN": xlaunch_bin,
                    "INNER_SCRIPT": str(tmp_path / "inner.py"), "XLAUNCH_CONTAINMENT": "cgroup",
                    "IGNORE_SIGCHLD": "1" if sigchld == "ignored" else "0"},
               timeout=120)
    inner_logs = "".join(p.read_text() for p in (out / "inner_logs").glob("*/xlaunch.log"))
    assert "restarting every worker (restart 1 of 1)" in r.stderr, r.stderr
    assert r.returncode == 0, f"{r.stderr}\ninner xlaunch.log:\n{inner_logs}"
    inner = [json.loads((out / f"inner_{k}.json").read_text()) for k in (0, 1)]
    assert [i["RANK"] for i in inner] == ["0", "1"]
    assert "cgroup" in inner_logs
    read_end, write_end = os.pipe()
    default = fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ)
    os.close(read_end)
    os.close(write_end)
    assert [i["pipe"] for i in inner] == [default, default]
