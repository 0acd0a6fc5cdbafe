"""Elastic jobs through a real etcd (`xlaunch launch --rdzv_backend etcd --nnodes MIN:MAX`):
a job grows when a machine joins, shrinks when a launcher is killed, and fails below its
minimum naming the lost machine; each round's layout is decided in etcd.
"""
import os
import signal
import time

import pytest

from etcd_fixtures import etcd, etcd_binary  # noqa: F401 (fixtures)
from etcd_helpers import (TIMEOUT, driver, launchers, ok,  # noqa: F401 (fixtures)
                          wait_for_members)


ELASTIC = ["--max_restarts", "1", "--rdzv_conf", "last_call_timeout=1"]


def wait_for_sums(launchers, procs, want):
    """Waits until the workers' records satisfy want(sums), the launchers still running."""
    deadline = time.monotonic() + TIMEOUT
    while not want(launchers.sums()) and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    sums = launchers.sums()
    assert want(sums), sums
    return sums


def test_launch_elastic_job_grows_when_a_machine_joins(launchers, etcd, driver):
    # --nnodes 1:2: the first launcher starts alone once the last call (1 s) is over.
    first = launchers.start(etcd.endpoints, "job-grow", machines="1:2", extra=ELASTIC,
                            env={"MODE": "hang_round0"})
    sums = wait_for_sums(launchers, [first], lambda s: sorted(s) == [0, 1])
    assert {s[0] for s in sums.values()} == {"2"}  # world size: one machine of 2 workers
    assert {s[6] for s in sums.values()} == {"0"}
    # A second machine joins the running job: every worker stops, round 1 has both.
    second = launchers.start(etcd.endpoints, "job-grow", machines="1:2", extra=ELASTIC,
                             env={"MODE": "hang_round0"})
    outs = [launchers.finish(p) for p in (first, second)]
    for code, out, err in outs:
        assert code == 0, err
        assert "round 1: machine" in err and "of 2, world size 4" in err
    assert "joined the job" in outs[0][1] + outs[0][2]
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    assert {s[0] for s in sums.values()} == {"4"}
    assert {s[1] for s in sums.values()} == {"10.0"}
    assert {s[6] for s in sums.values()} == {"1"}  # TORCHELASTIC_RESTART_COUNT
    assert {s[4] for s in sums.values()} == {"job-grow"}
    # Each round's layout was decided in etcd (values span lines: only the keys are read).
    listed = ok(driver, etcd.endpoints, "get-prefix", "/xlaunch/job-grow/round/")
    assert "/xlaunch/job-grow/round/0/layout=" in listed
    assert "/xlaunch/job-grow/round/1/layout=" in listed


@pytest.mark.parametrize("victim", [0, 1])
def test_launch_elastic_job_shrinks_when_a_launcher_is_killed(launchers, etcd, driver, victim):
    # The first to register is machine 0 (the workers' store); the second arrival makes MAX.
    procs = [launchers.start(etcd.endpoints, "job-shrink", machines="1:2", extra=ELASTIC,
                             env={"MODE": "hang_round0"})]
    wait_for_members(driver, etcd.endpoints, "job-shrink", 1)
    procs.append(launchers.start(etcd.endpoints, "job-shrink", machines="1:2", extra=ELASTIC,
                                 env={"MODE": "hang_round0"}))
    sums = wait_for_sums(launchers, procs, lambda s: len(s) == 4)
    assert {s[0] for s in sums.values()} == {"4"}
    round0_port = sums[0][3]
    # SIGKILL one launcher: its lease expires, the other re-forms the job alone (round 1);
    # when machine 0 is the one lost, the survivor becomes machine 0 and hosts a new store.
    os.kill(procs[victim].pid, signal.SIGKILL)
    procs[victim].wait(timeout=TIMEOUT)
    code, out, err = launchers.finish(procs[1 - victim])
    assert code == 0, err
    assert "launcher lost" in err and "re-forming the job without it" in err
    assert "round 1: machine 0 of 1, world size 2" in err
    sums = launchers.sums()
    assert [sums[r][0] for r in (0, 1)] == ["2", "2"]
    assert [sums[r][6] for r in (0, 1)] == ["1", "1"]
    if victim == 0:
        assert sums[0][3] != round0_port  # the survivor's own store


def test_launch_elastic_job_below_min_fails_naming_the_lost_machine(launchers, etcd, driver):
    extra = ["--max_restarts", "1", "--rdzv_timeout", "10", "--rdzv_conf", "last_call_timeout=1"]
    procs = [launchers.start(etcd.endpoints, "job-min", machines="2:3", extra=extra,
                             env={"MODE": "hang_round0"})]
    wait_for_members(driver, etcd.endpoints, "job-min", 1)
    procs.append(launchers.start(etcd.endpoints, "job-min", machines="2:3", extra=extra,
                                 env={"MODE": "hang_round0"}))
    wait_for_sums(launchers, procs, lambda s: len(s) == 4)
    os.kill(procs[1].pid, signal.SIGKILL)
    procs[1].wait(timeout=TIMEOUT)
    code, out, err = launchers.finish(procs[0])
    assert code == 1, err
    assert "1 machine left, fewer than the minimum 2" in err
    assert "none joined within --rdzv_timeout 10s; lost: " in err
    assert f"(pid {procs[1].pid}); present: " in err  # the killed launcher is named
