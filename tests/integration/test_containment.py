"""Orphan containment: nothing a worker starts outlives the job, not even descendants that
leave its process group (setsid, daemons), not even when the launcher is SIGKILLed.

Each mechanism this machine allows is forced through XLAUNCH_CONTAINMENT; an unavailable one
makes xlaunch exit 2, so these tests fail loudly rather than skip. Every process a test
starts carries a marker in its environment; the `marker` fixture kills whatever still has it
and removes the launchers' cgroups, even when the test fails.
"""
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from launch_helpers import WORKERS, alive, launch, start, wait_for_files, wait_until_gone

ESCAPEES = str(WORKERS / "escapees.py")
KINDS = ["setsid", "setsid_tree", "daemon", "group", "group_setsid"]
ESCAPED = ["setsid", "setsid_tree", "daemon", "group_setsid"]  # left the worker's process group
# XLAUNCH_CONTAINMENT value → the name xlaunch env and xlaunch.log use.
MECHANISMS = {"cgroup": "cgroup", "pidns": "pid-namespace", "group": "process-group"}
STRONG = ["cgroup", "pidns"]  # they contain every descendant


def marked_pids(marker):
    """Processes whose environment carries the marker."""
    needle = f"XLAUNCH_CONTAINMENT_TEST={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0") and alive(int(entry)):
                    found.append(int(entry))
        except OSError:
            pass
    return found


def cgroup2_dir():
    """This process's cgroup v2 directory (xlaunch creates its run cgroups below it)."""
    path = next((l[3:] for l in open("/proc/self/cgroup").read().splitlines()
                 if l.startswith("0::")), None)
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        sep = fields.index("-")
        if fields[sep + 1] == "cgroup2" and path is not None:
            root, mount = fields[3], fields[4]
            if root == "/" or path == root or path.startswith(root + "/"):
                rest = path if root == "/" else path[len(root):]
                return pathlib.Path(mount + rest.rstrip("/"))
    return None


def all_run_cgroups():
    base = cgroup2_dir()
    return set(base.glob("xlaunch-*")) if base else set()


# Run cgroups that existed before the current test: a launcher SIGKILLed while it started
# (another test's) can leave an empty one, whose pid a later launcher may get again.
_before_test = set()


@pytest.fixture(autouse=True)
def _note_existing_run_cgroups():
    _before_test.clear()
    _before_test.update(all_run_cgroups())
    yield


def run_cgroups(launcher_pid, existing=None):
    """The run cgroups of the launcher with this pid, less those that existed before."""
    base = cgroup2_dir()
    if not base:
        return []
    old = _before_test if existing is None else existing
    return sorted(p for p in base.glob(f"xlaunch-{launcher_pid}-*") if p not in old)


def remove_cgroup(path):
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:
        for pid in (path / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


class Marker:
    def __init__(self):
        self.value = uuid.uuid4().hex
        self.launchers = []

    def env(self, mechanism, **extra):
        env = {"XLAUNCH_CONTAINMENT_TEST": self.value, "XLAUNCH_CONTAINMENT": mechanism}
        env.update(extra)
        return env

    def start(self, xlaunch_bin, args, env):
        proc = start(xlaunch_bin, args, env=env)
        self.launchers.append(proc)
        return proc


@pytest.fixture
def marker():
    m = Marker()
    yield m
    for proc in m.launchers:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    for pid in marked_pids(m.value):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for proc in m.launchers:
        for path in run_cgroups(proc.pid):
            remove_cgroup(path)


def recorded(out_dir, kinds, ranks=2, attempt=0):
    return {f"{kind}_{rank}": int((out_dir / f"{kind}_{rank}_{attempt}").read_text())
            for kind in kinds for rank in range(ranks)}


def start_escapees(xlaunch_bin, marker, mechanism, out_dir, mode="wait", extra_args=()):
    proc = marker.start(xlaunch_bin, ["--num_processes", "2", *extra_args, ESCAPEES],
                        env=marker.env(mechanism, OUT_DIR=str(out_dir), MODE=mode))
    return proc


def wait_for_escapees(proc, out_dir, attempt=0, timeout=60):
    """Waits until both workers and their descendants recorded their pids."""
    count = 2 * (len(KINDS) + 1)
    deadline = time.monotonic() + timeout
    while len(list(out_dir.glob(f"*_{attempt}"))) < count:
        if proc.poll() is not None:
            raise AssertionError(f"xlaunch exited {proc.returncode}: {proc.communicate()[1]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout}s: {sorted(p.name for p in out_dir.iterdir())}")
        time.sleep(0.02)


def assert_all_gone(pids, what):
    left = wait_until_gone(list(pids.values()))
    assert left == [], f"{what}: still alive: {[k for k, p in pids.items() if p in left]}"


def assert_nothing_marked_left(marker):
    """No process of the test is left (the guardian may still be finishing its cleanup)."""
    deadline = time.monotonic() + 10
    while marked_pids(marker.value) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = marked_pids(marker.value)
    assert left == [], [pathlib.Path(f"/proc/{p}/cmdline").read_bytes() for p in left]


@pytest.mark.parametrize("mechanism", STRONG)
def test_sigkill_of_the_launcher_kills_escaped_descendants(xlaunch_bin, tmp_path, marker,
                                                             mechanism):
    proc = start_escapees(xlaunch_bin, marker, mechanism, tmp_path)
    wait_for_escapees(proc, tmp_path)
    pids = recorded(tmp_path, ["worker", *KINDS])
    assert all(alive(p) for p in pids.values())
    if mechanism == "cgroup":
        (run_cgroup,) = run_cgroups(proc.pid)
        members = (run_cgroup / "cgroup.procs").read_text().split()
        for name, pid in pids.items():  # every descendant joined the run's cgroup
            assert str(pid) in members, name
    else:
        own = os.readlink("/proc/self/ns/pid")
        for name, pid in pids.items():  # every descendant is in the run's namespace
            assert os.readlink(f"/proc/{pid}/ns/pid") != own, name
    proc.kill()
    proc.communicate(timeout=30)
    assert_all_gone(pids, f"{mechanism}, after SIGKILL of the launcher")
    assert_nothing_marked_left(marker)
    deadline = time.monotonic() + 10  # the guardian removes the cgroup after the kill
    while run_cgroups(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run_cgroups(proc.pid) == []


def test_a_launcher_sigkilled_while_it_starts_leaves_no_cgroup(xlaunch_bin, marker):
    """SIGKILLs at random moments of the start. When the launcher made the run's cgroup
    itself before forking the guardian that removes it, 23 launchers in 100 left an empty
    cgroup behind; the guardian now makes it."""
    rng = random.Random(20261124)
    launchers = []
    for _ in range(60):
        proc = marker.start(xlaunch_bin, ["--num_processes", "1", "--no_python", "/bin/true"],
                            env=marker.env("cgroup"))
        time.sleep(rng.uniform(0, 0.02))
        proc.kill()
        proc.communicate(timeout=30)
        launchers.append(proc)
    def left():
        return [c for proc in launchers for c in run_cgroups(proc.pid)]
    deadline = time.monotonic() + 15  # a guardian removes its cgroup once its launcher died
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left() == []


def test_sigkill_of_the_launcher_with_process_groups_only(xlaunch_bin, tmp_path, marker):
    """The fallback's guarantee: workers and what stays in their process groups die. What
    left the group (setsid, daemons) survives a SIGKILLed launcher: a known limit of the
    fallback, asserted here so that the escape the other tests rely on is real."""
    proc = start_escapees(xlaunch_bin, marker, "group", tmp_path)
    wait_for_escapees(proc, tmp_path)
    kept = recorded(tmp_path, ["worker", "group"])
    escaped = recorded(tmp_path, ESCAPED)
    proc.kill()
    proc.communicate(timeout=30)
    assert_all_gone(kept, "process groups, after SIGKILL of the launcher")
    time.sleep(0.5)
    assert all(alive(p) for p in escaped.values()), "the fallback now catches escapees: " \
        "update this test and docs/launch.md"


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_a_successful_run_leaves_no_process_and_no_cgroup(xlaunch_bin, tmp_path, marker,
                                                          mechanism):
    proc = start_escapees(xlaunch_bin, marker, mechanism, tmp_path, mode="exit")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "all 2 workers finished successfully" in err
    guaranteed = KINDS if mechanism in STRONG else ["setsid", "setsid_tree", "daemon", "group"]
    assert_all_gone(recorded(tmp_path, guaranteed), f"{mechanism}, after a successful run")
    if mechanism in STRONG:
        assert_nothing_marked_left(marker)
    assert run_cgroups(proc.pid) == []


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_the_end_of_an_attempt_kills_escaped_descendants(xlaunch_bin, tmp_path, marker,
                                                         mechanism):
    """Attempt 0's workers leave descendants behind and fail; by the time attempt 1 runs,
    they must be gone (the supervisor calls GroupGuardian::kill_descendants()). With process
    groups only, what the subreaper adopted is guaranteed: not a grandchild that left the
    group of a same-group child (it may not be adopted yet when the attempt ends)."""
    proc = start_escapees(xlaunch_bin, marker, mechanism, tmp_path, mode="restart",
                          extra_args=["--max_restarts", "1", "--log_dir", str(tmp_path / "logs")])
    wait_for_escapees(proc, tmp_path)
    kinds = KINDS if mechanism in STRONG else ["setsid", "setsid_tree", "daemon", "group"]
    attempt0 = recorded(tmp_path, kinds)
    try:
        wait_for_files(tmp_path, "up_*_1", 2)
    except AssertionError as e:
        logs = "".join(p.read_text() for p in tmp_path.glob("logs/*/xlaunch.log"))
        raise AssertionError(f"{e}\nxlaunch.log:\n{logs}") from None
    assert_all_gone(attempt0, f"{mechanism}, attempt 0's descendants during attempt 1")
    (tmp_path / "release").write_text("")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "restarting every worker (restart 1 of 1)" in err
    assert run_cgroups(proc.pid) == []


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
@pytest.mark.parametrize("args", [["--nproc_per_node", "2"], ["--no_such_flag", "train.py"],
                                  ["--num_processes", "0", "train.py"]],
                         ids=["no-program", "unknown-flag", "bad-value"])
def test_a_launch_refused_on_its_command_line_leaves_no_helper_and_no_cgroup(
        xlaunch_bin, marker, mechanism, args):
    """The spawner and the guardian (which makes the run's cgroup) are forked before the
    command line is parsed: a launch that then stops at a usage error has ended both, and the
    guardian has removed its cgroup, by the time it exits."""
    proc = marker.start(xlaunch_bin, args, env=marker.env(mechanism))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "xlaunch: error:" in err, err
    assert run_cgroups(proc.pid) == []
    assert marked_pids(marker.value) == []


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_env_and_the_log_name_the_mechanism(xlaunch_bin, tmp_path, marker, mechanism):
    name = MECHANISMS[mechanism]
    env = marker.env(mechanism)
    r = subprocess.run([xlaunch_bin, "env"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **env})
    assert r.returncode == 0, r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("orphan containment:"))
    assert line.split()[2] == name, line
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--log_dir", str(logs), "--num_processes", "1", "--no_python", "/bin/true"],
               env=env)
    assert r.returncode == 0, r.stderr
    (log,) = logs.glob("*/xlaunch.log")
    assert f"orphan containment: {name}" in log.read_text()
    assert "falls back to process groups" not in r.stderr  # forced, not a fallback


@pytest.mark.parametrize("mechanism", STRONG)
def test_an_inherited_ignored_sigchld_changes_nothing(xlaunch_bin, tmp_path, marker, mechanism):
    """A program that ignores SIGCHLD passes that on through exec: the kernel then reaps
    xlaunch's children at once, and its probes found no status ("No child processes") and
    refused the mechanism. xlaunch restores the default first thing."""
    logs = tmp_path / "logs"
    r = subprocess.run([xlaunch_bin, "launch", "--log_dir", str(logs), "--num_processes", "2",
                        "--no_python", "/bin/sh", "-c", "exit $RANK"],
                       env={**os.environ, **marker.env(mechanism)}, capture_output=True,
                       text=True, timeout=60,
                       preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert r.returncode == 1, r.stderr  # rank 1's exit code: the statuses were seen
    (log,) = logs.glob("*/xlaunch.log")
    assert f"orphan containment: {MECHANISMS[mechanism]}" in log.read_text()


def test_auto_uses_what_env_reports_and_a_forced_bad_value_exits_2(xlaunch_bin, tmp_path,
                                                                   marker):
    r = subprocess.run([xlaunch_bin, "env"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, **marker.env("auto")})
    line = next(l for l in r.stdout.splitlines() if l.startswith("orphan containment:"))
    expected = line.split()[2]
    assert expected in MECHANISMS.values(), line
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--log_dir", str(logs), "--num_processes", "1", "--no_python", "/bin/true"],
               env=marker.env("auto"))
    assert r.returncode == 0, r.stderr
    (log,) = logs.glob("*/xlaunch.log")
    assert f"orphan containment: {expected}" in log.read_text()

    r = launch(xlaunch_bin, ["--num_processes", "1", "--no_python", "/bin/true"], env=marker.env("namespace"))
    assert r.returncode == 2
    assert "XLAUNCH_CONTAINMENT=namespace: not a containment mechanism" in r.stderr


def test_without_privileges_auto_falls_back_and_forced_ones_exit_2(xlaunch_bin, marker):
    """As nobody, neither a cgroup (EACCES) nor a PID namespace (EPERM) is allowed."""
    home = pathlib.Path(tempfile.mkdtemp(prefix="xlaunch-nobody-"))  # pytest's is root-only
    try:
        home.chmod(0o777)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", xlaunch_bin,
                  "launch", "--num_processes", "1", "--no_python", "/bin/true"]
        env = {**os.environ, "TMPDIR": str(home), "HOME": str(home)}
        r = subprocess.run(nobody, capture_output=True, text=True, timeout=60,
                           env={**env, **marker.env("auto")})
        assert r.returncode == 0, r.stderr
        assert "xlaunch: note: orphan containment falls back to process groups" in r.stderr
        assert "Permission denied" in r.stderr and "Operation not permitted" in r.stderr
        for forced, why in [("cgroup", "Permission denied"), ("pidns", "Operation not permitted")]:
            r = subprocess.run(nobody, capture_output=True, text=True, timeout=60,
                               env={**env, **marker.env(forced)})
            assert r.returncode == 2, r.stderr
            assert f"XLAUNCH_CONTAINMENT={forced}, but" in r.stderr and why in r.stderr, r.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)


DAEMON_WITH_MANY_CHILDREN = """
import os, subprocess, sys, time
out = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # off the worker's pipes, as a daemon does
        os.dup2(null, fd)
    if os.fork() == 0:
        kids = [subprocess.Popen(["sleep", "300"]) for _ in range(70)]
        with open(out + "/kids.tmp", "w") as f:
            f.write(" ".join([str(k.pid) for k in kids] + [str(os.getpid())]))
        os.rename(out + "/kids.tmp", out + "/kids")
        time.sleep(300)
    os._exit(0)
while not os.path.exists(out + "/kids"):
    time.sleep(0.02)
"""


def test_an_adopted_daemons_children_die_even_with_few_descriptors_left(xlaunch_bin, tmp_path,
                                                                         marker):
    # The end-of-attempt walk of what the launcher adopted needs a descriptor or two per
    # process it checks: a launcher at a low limit must still kill them all (a review found
    # 25 of 70 left when the walk held a pidfd for each).
    script = tmp_path / "daemon.py"
    script.write_text(DAEMON_WITH_MANY_CHILDREN)
    cmd = ["prlimit", "--nofile=64", xlaunch_bin, "launch", "--python", sys.executable,
           "--nproc_per_node", "1", str(script), str(tmp_path)]
    proc = subprocess.Popen(cmd, env={**os.environ, **marker.env("group")},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    marker.launchers.append(proc)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    pids = [int(p) for p in (tmp_path / "kids").read_text().split()]
    assert len(pids) == 71
    assert wait_until_gone(pids) == [], "an adopted daemon's children outlived the job"
