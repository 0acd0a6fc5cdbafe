"""A worker's process group id is its pid. Once the worker is reaped and nothing is left in its
group, the kernel may give that number to any new process, which may make it its own group: a
stranger's. xlaunch must never signal it, neither at the attempt's end nor from the guardian
after the launcher was killed (a hostile review's finding: both did)."""
import os
import signal
import subprocess
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


@pytest.mark.parametrize("containment,end", [("cgroup", "normal"), ("group", "normal"),
                                             ("group", "launcher SIGKILLed")])
def test_a_finished_workers_reused_pid_is_never_signalled(xlaunch_bin, tmp_path, containment,
                                                          end):
    env = {"D": str(tmp_path), "XLAUNCH_CONTAINMENT": containment}
    p = start(xlaunch_bin, ["--nproc_per_node", "2", "--stall_timeout", "0", "--no_python",
                            "/bin/sh", "-c", WORKER], env=env)
    stranger = None
    try:
        pids = wait_for_pids(tmp_path, "pid.*", 2)
        rank0, rank1 = int((tmp_path / "pid.0").read_text()), int((tmp_path / "pid.1").read_text())
        assert sorted(pids) == sorted([rank0, rank1])
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/{rank1}"):  # until the launcher reaped it: its pid is free
            assert time.monotonic() < deadline, f"rank 1 (pid {rank1}) was never reaped"
            time.sleep(0.02)
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
