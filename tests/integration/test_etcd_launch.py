"""Whole jobs through a real etcd: `xlaunch launch --rdzv_backend etcd` (and etcd-v2), two
machines of two workers each: the job they form, restarts together, a machine lost with its
launcher, etcd unreachable, one etcd member of three lost while the job runs.
"""
import os
import signal
import time

import pytest

from etcd_fixtures import etcd, etcd3, etcd_binary  # noqa: F401 (fixtures)
from etcd_helpers import ELECTION_PROOF_HEARTBEAT, TIMEOUT, launchers  # noqa: F401


@pytest.mark.parametrize("backend", ["etcd", "etcd-v2"])
def test_launch_two_machines_through_etcd(launchers, etcd, backend):
    procs = [launchers.start(etcd.endpoints, "job-x", backend=backend) for _ in range(2)]
    outs = [launchers.finish(p) for p in procs]
    for code, out, err in outs:
        assert code == 0, err
        assert f"joining the 2-machine job through etcd at {etcd.endpoints}" in err + out
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    # One world of 4, one store (rank 0's), the run id everywhere, both machines' ranks.
    assert {s[0] for s in sums.values()} == {"4"}
    assert {s[1] for s in sums.values()} == {"10.0"}
    assert {s[2] for s in sums.values()} == {"0", "1"}
    assert len({s[3] for s in sums.values()}) == 1
    assert {s[4] for s in sums.values()} == {"job-x"}


def test_launch_restarts_every_machine_together_through_etcd(launchers, etcd):
    procs = [launchers.start(etcd.endpoints, "job-r", extra=["--max_restarts", "1"],
                             env={"MODE": "fail_once"}) for _ in range(2)]
    for proc in procs:
        code, out, err = launchers.finish(proc)
        assert code == 0, err
        assert "exited with code 5" in err
        assert "restarting every worker on every machine (restart 1 of 1)" in err
    # The second round's all-reduce ran on all four ranks (each file is its last round's).
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    assert {s[6] for s in sums.values()} == {"1"}


def test_launch_machine_lost_when_its_launcher_is_killed(launchers, etcd):
    procs = [launchers.start(etcd.endpoints, "job-y", env={"MODE": "hang"}) for _ in range(2)]
    # Both machines' workers ran their all-reduce: the job is formed and running.
    deadline = time.monotonic() + TIMEOUT
    while len(launchers.sums()) < 4 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    sums = launchers.sums()
    assert len(sums) == 4
    # SIGKILL the launcher of machine 1 only (its workers are left to the containment tests).
    victim = procs[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=TIMEOUT)
    survivor = procs[1]
    code, out, err = launchers.finish(survivor)
    assert code == 1, err
    assert "launcher lost: its etcd lease expired (--heartbeat_timeout 3s)" in err


def test_launch_with_etcd_unreachable_is_a_clear_bounded_error(launchers, etcd):
    endpoint = etcd.endpoints
    etcd.stop()
    code, out, err = launchers.finish(launchers.start(endpoint, "job-z"))
    assert code == 1
    assert f"cannot reach etcd at {endpoint}" in err
    assert f"check that etcd runs at {endpoint} (--rdzv_endpoint, or --main_process_ip/--main_process_port)" in err


def test_launch_goes_on_when_one_etcd_member_of_three_is_lost(launchers, etcd3):
    # The launchers talk to member 0; member 1 dies while the job runs (maybe the leader).
    procs = [launchers.start(etcd3.member_endpoint(0), "job-w", env={"MODE": "hang"},
                             heartbeat=ELECTION_PROOF_HEARTBEAT) for _ in range(2)]
    deadline = time.monotonic() + TIMEOUT
    while len(launchers.sums()) < 4 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    assert len(launchers.sums()) == 4
    etcd3.kill(1)
    time.sleep(int(ELECTION_PROOF_HEARTBEAT) + 5)  # past a lease lifetime: it was renewed
    assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
