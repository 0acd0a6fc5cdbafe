"""The etcd join backend against a real etcd: several launchers' sides (the driver's
`member`) join a job in any order, share its verdict, lose a launcher whose lease expired,
refuse one too many, and outlive the loss of one etcd member of three.
"""
import os
import signal
import subprocess
import time

import pytest

from etcd_fixtures import etcd, etcd3, etcd_binary  # noqa: F401 (fixtures)
from etcd_helpers import (ELECTION_PROOF_HEARTBEAT, HEARTBEAT, TIMEOUT, driver,  # noqa: F401
                          ok)


class Members:
    """`driver member` processes, each one launcher's side of the etcd join."""

    def __init__(self, driver):
        self.driver = driver
        self.procs = []

    def start(self, endpoints, run_id, machines, host, outcome="ok", rank=-1, local=2,
              heartbeat=HEARTBEAT):
        proc = subprocess.Popen(
            [self.driver, endpoints, "member", run_id, str(machines), str(rank), host, str(local),
             outcome, heartbeat],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def joined(self, proc):
        line = proc.stdout.readline()
        assert line.startswith("joined "), f"{line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        return dict(item.split("=", 1) for item in line.split()[1:])

    def finish(self, proc):
        # Output is a few lines: the pipes cannot fill. Read through the text wrappers,
        # which may hold what joined() read ahead.
        proc.wait(timeout=TIMEOUT)
        return proc.returncode, proc.stdout.read(), proc.stderr.read()

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=TIMEOUT)


@pytest.fixture
def members(driver):
    m = Members(driver)
    yield m
    m.stop()


def test_join_three_machines_in_any_order(members, etcd, driver):
    # No launcher has to start first: ranks follow the order of arrival.
    procs = [members.start(etcd.endpoints, "job-a", 3, f"host{i}", local=i + 1) for i in range(3)]
    joined = [members.joined(p) for p in procs]
    ranks = sorted(int(j["rank"]) for j in joined)
    assert ranks == [0, 1, 2]
    worlds = {j["world"] for j in joined}
    assert worlds == {"6"}
    hosts = {j["hosts"] for j in joined}
    assert len(hosts) == 1  # every launcher sees the same job
    order = hosts.pop().split(",")
    for i, j in enumerate(joined):
        assert order[int(j["rank"])] == f"host{i}"
    # One store for the job (rank 0's) and one run id (rank 0's), on every launcher.
    assert len({j["store_port"] for j in joined}) == 1
    rank0 = next(i for i, j in enumerate(joined) if j["rank"] == "0")
    assert {j["run"] for j in joined} == {f"run-host{rank0}"}
    offsets = sorted(int(j["offset"]) for j in joined)
    assert len(set(offsets)) == 3 and offsets[0] == 0
    for p in procs:
        code, out, err = members.finish(p)
        assert code == 0, err
        assert "verdict ok" in out
    # The launchers revoked their leases on exit: no member key is left.
    listing = ok(driver, etcd.endpoints, "get-prefix", "/xlaunch/job-a/members/")
    assert listing.splitlines()[1:] == []


def test_join_with_given_machine_ranks(members, etcd):
    procs = [members.start(etcd.endpoints, "job-b", 2, f"host{r}", rank=r) for r in (1, 0)]
    joined = [members.joined(p) for p in procs]
    assert [j["rank"] for j in joined] == ["1", "0"]
    assert {j["hosts"] for j in joined} == {"host0,host1"}
    for p in procs:
        assert members.finish(p)[0] == 0


def test_a_worker_failure_is_every_machines_verdict(members, etcd):
    failing = members.start(etcd.endpoints, "job-c", 2, "bad", outcome="fail")
    waiting = members.start(etcd.endpoints, "job-c", 2, "good", outcome="wait")
    members.joined(failing), members.joined(waiting)
    for proc in (failing, waiting):
        code, out, err = members.finish(proc)
        assert code == 7, err
        assert "(bad), rank " in out and "exited with code 7" in out
    assert "stopped by machine" in out  # the waiting one was told to stop its workers


def test_a_killed_launcher_is_lost_when_its_lease_expires(members, etcd):
    procs = [members.start(etcd.endpoints, "job-d", 3, f"host{i}", outcome="wait")
             for i in range(3)]
    joined = [members.joined(p) for p in procs]
    victim = procs[2]
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(timeout=TIMEOUT)
    lost_rank = joined[2]["rank"]
    for proc in procs[:2]:
        code, out, err = members.finish(proc)
        assert code == 1, err
        assert f"stopped by machine {lost_rank} (host2): launcher lost: its etcd lease expired" in out
        assert f"verdict machine {lost_rank} (host2): launcher lost" in out


def test_a_launcher_too_many_is_refused(members, etcd):
    first = [members.start(etcd.endpoints, "job-e", 2, f"host{i}", outcome="wait") for i in range(2)]
    for p in first:
        members.joined(p)
    extra = members.start(etcd.endpoints, "job-e", 2, "extra")
    code, out, err = members.finish(extra)
    assert code == 2
    assert "run id 'job-e' is already running through etcd" in err
    assert "give this job its own --rdzv_id" in err


def test_the_job_survives_the_loss_of_one_etcd_member_of_three(members, etcd3):
    procs = [members.start(etcd3.endpoints, "job-f", 2, f"host{i}", outcome="wait",
                           heartbeat=ELECTION_PROOF_HEARTBEAT) for i in range(2)]
    for p in procs:
        members.joined(p)
    etcd3.kill(0)
    # More than a lease lifetime passes: nobody is lost, the job goes on.
    time.sleep(int(ELECTION_PROOF_HEARTBEAT) + 5)
    assert all(p.poll() is None for p in procs), [members.finish(p) for p in procs]
    # A third launcher of another job joins through what is left of the cluster.
    late = [members.start(etcd3.endpoints, "job-g", 2, f"late{i}", outcome="fail" if i else "ok")
            for i in range(2)]
    for p in late:
        members.joined(p)
        code, out, err = members.finish(p)
        assert code == 7, err
        assert "(late1), rank" in out


def test_etcd_unreachable_at_start_is_a_clear_error(members, etcd):
    endpoint = etcd.endpoints
    etcd.stop()
    proc = members.start(endpoint, "job-h", 2, "host0")
    code, out, err = members.finish(proc)
    assert code == 1
    assert f"cannot join through etcd: cannot reach etcd at {endpoint}" in err
    assert f"check that etcd runs at {endpoint} (--rdzv_endpoint, or --main_process_ip/--main_process_port)" in err


def test_a_run_id_is_reused_once_its_job_has_ended(members, etcd):
    for attempt in range(2):
        procs = [members.start(etcd.endpoints, "job-again", 2, f"host{i}") for i in range(2)]
        joined = [members.joined(p) for p in procs]
        assert sorted(j["rank"] for j in joined) == ["0", "1"], attempt
        for p in procs:
            code, out, err = members.finish(p)
            assert code == 0, (attempt, err)
            assert "verdict ok" in out
