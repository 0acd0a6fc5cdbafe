"""A worker's process group id is its pid. Once the worker is reaped and nothing is left in its
group, the kernel may give that number to any new process, which may make it its own group: a
stranger's. xlaunch must never signal it, neither at the attempt's end nor from the guardian
after the launcher was killed (a hostile review's finding: both did)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from launch_helpers import start, wait_for_pids, wait_until_gone

# Rank 1 ends at once; rank 0 runs until the test lets it go.
WORKER = ('echo $$ > "$D/pid.$LOCAL_RANK"; [ "$LOCAL_RANK" = 1 ] && exit 0; '
          'while [ ! -e "$D/go" ]; do sleep 0.05; done')


def stranger_with_pid(pid):
    """A process outside the job that gets `pid` and leads its own session and group, as a
    daemon or another user's job would."""
    if os.geteuid() != 0:
        pytest.fail("this test chooses the next pid (/proc/sys/kernel/ns_last_pid): run it as root")
    for _ in range(200):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(["sleep", "300"], start_new_session=True)
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    pytest.fail(f"could not start a process with pid {pid} (other processes took it first)")


ENDS = [("cgroup", "normal"), ("group", "normal"), ("group", "launcher SIGKILLed")]


def _launch_then_give_rank1s_pid_to_a_stranger(xlaunch_bin, tmp_path, containment, end, worker,
                                               until_free):
    """Runs `worker` as 2 ranks; once `until_free(rank1)` says rank 1's number is free, a
    stranger takes it; then the job ends (`end`) and the stranger must be alive."""
    env = {"D": str(tmp_path), "XLAUNCH_CONTAINMENT": containment}
    p = start(xlaunch_bin, ["--nproc_per_node", "2", "--stall_timeout", "0", "--no_python",
                            "/bin/sh", "-c", worker], env=env)
    stranger = None
    try:
        pids = wait_for_pids(tmp_path, "pid.*", 2)
        rank0, rank1 = int((tmp_path / "pid.0").read_text()), int((tmp_path / "pid.1").read_text())
        assert sorted(pids) == sorted([rank0, rank1])
        until_free(rank1)
        stranger = stranger_with_pid(rank1)
        assert os.getpgid(stranger.pid) == rank1
        if end == "normal":
            (tmp_path / "go").touch()
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
        else:
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
            # The guardian still kills what is left of the job...
            assert wait_until_gone([rank0]) == [], "rank 0 outlived its SIGKILLed launcher"
        time.sleep(0.3)
        # ...and nothing else.
        assert stranger.poll() is None, f"the stranger with pid {rank1} was killed ({end})"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if stranger is not None:
            stranger.kill()
            stranger.wait()


def _until(condition, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _group_is_empty(pgid):
    try:
        os.killpg(pgid, 0)
        return False
    except ProcessLookupError:
        return True


@pytest.mark.parametrize("containment,end", ENDS)
def test_a_finished_workers_reused_pid_is_never_signalled(xlaunch_bin, tmp_path, containment,
                                                          end):
    def reaped(rank1):  # until the launcher reaped it: its pid is free
        _until(lambda: not os.path.exists(f"/proc/{rank1}"), f"rank 1 ({rank1}) never reaped")
    _launch_then_give_rank1s_pid_to_a_stranger(xlaunch_bin, tmp_path, containment, end, WORKER,
                                               reaped)


# Rank 1 ends at once but leaves a helper in its group, which outlives it by a moment.
WORKER_WITH_HELPER = ('echo $$ > "$D/pid.$LOCAL_RANK"; '
                      'if [ "$LOCAL_RANK" = 1 ]; then '
                      '(sleep 1; : > "$D/helper_done") >/dev/null 2>&1 & exit 0; fi; '
                      'while [ ! -e "$D/go" ]; do sleep 0.05; done')


@pytest.mark.parametrize("containment,end", ENDS)
def test_a_group_that_outlived_its_worker_is_let_go_once_empty(xlaunch_bin, tmp_path,
                                                               containment, end):
    # The group still had a member when its leader was reaped; that member, adopted by the
    # launcher, ends later. From then on the number is free (a hostile review's finding: it
    # was still killed at the attempt's end).
    def emptied(rank1):  # the helper ended and was reaped: nothing is left in the group
        _until(lambda: (tmp_path / "helper_done").exists() and _group_is_empty(rank1),
               f"rank 1's group {rank1} never emptied")
    _launch_then_give_rank1s_pid_to_a_stranger(xlaunch_bin, tmp_path, containment, end,
                                               WORKER_WITH_HELPER, emptied)


# The last member of rank 1's group is reaped by a parent outside the group, which the
# launcher never hears of: a process that left for a session of its own.
LEAVER = """
import os, pathlib, sys, time
d = pathlib.Path(sys.argv[1])
last = os.fork()
if last == 0:  # stays in the worker's group a moment
    time.sleep(1)
    os._exit(0)
os.setsid()
os.waitpid(last, 0)
(d / "helper_done").touch()
time.sleep(300)
"""


@pytest.mark.parametrize("containment,end", ENDS)
def test_a_group_emptied_out_of_sight_is_not_signalled_once_its_number_is_reused(
        xlaunch_bin, tmp_path, containment, end):
    # The launcher sees the number taken; its guardian, the start time of the process that
    # now has it.
    (tmp_path / "leaver.py").write_text(LEAVER)
    worker = ('echo $$ > "$D/pid.$LOCAL_RANK"; '
              'if [ "$LOCAL_RANK" = 1 ]; then '
              f'{sys.executable} "$D/leaver.py" "$D" >/dev/null 2>&1 & exit 0; fi; '
              'while [ ! -e "$D/go" ]; do sleep 0.05; done')

    def emptied_unseen(rank1):
        _until(lambda: (tmp_path / "helper_done").exists(), "the helper never reaped the last one")
        _until(lambda: not os.path.exists(f"/proc/{rank1}"), f"rank 1 ({rank1}) never reaped")
        assert _group_is_empty(rank1)
    _launch_then_give_rank1s_pid_to_a_stranger(xlaunch_bin, tmp_path, containment, end, worker,
                                               emptied_unseen)
