"""Several `xlaunch launch` processes on one host as machines of an elastic job (--nnodes
MIN:MAX): it starts with the machines it has, grows when one joins, shrinks when one is lost,
and fails, naming the lost machine, below its minimum.
"""
import os
import signal

from launch_helpers import wait_for_files
from machine_fixtures import machines  # noqa: F401 (fixture)


ELASTIC = ["--nnodes", "1:2", "--max_restarts", "1", "--heartbeat_timeout", "3"]


def test_elastic_job_starts_alone_and_grows_when_a_machine_joins(machines):
    # The first launcher hosts the store (--machine_rank 0); the other has no rank: join order.
    args = [*ELASTIC, "--rdzv_conf", "last_call_timeout=2"]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"], env={"MODE": "until_world_2"})
    # Alone, it starts after the last call (2 s) with world size 1.
    wait_for_files(machines.out, "rank_*_attempt_0.json", 1, timeout=120)
    first = machines.ranks(attempt=0)
    assert list(first) == [0] and first[0]["WORLD_SIZE"] == "1", first
    m1 = machines.start(None, None, args, env={"MODE": "until_world_2"})
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == 0 and rc1 == 0, err0 + err1
    second = machines.ranks(attempt=1)
    assert sorted(second) == [0, 1], second
    for rank, info in second.items():
        assert info["WORLD_SIZE"] == "2" and info["GROUP_WORLD_SIZE"] == "2"
        assert info["GROUP_RANK"] == str(rank) and info["TORCHELASTIC_RESTART_COUNT"] == "1"
    assert {i["TORCHELASTIC_RUN_ID"] for i in second.values()} == {first[0]["TORCHELASTIC_RUN_ID"]}
    assert "the job's machines changed: machine 1 (" in err0 and "joined the job" in err0
    assert "round 1: machine 1 of 2, world size 2" in err1


def test_elastic_job_shrinks_when_a_launcher_is_killed(machines):
    # A long last call: however slowly the second launcher starts, round 0 has both.
    args = [*ELASTIC, "--rdzv_conf", "last_call_timeout=600"]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"], env={"MODE": "until_alone"})
    m1 = machines.start(None, None, args, env={"MODE": "until_alone"})
    # Two machines are the maximum: round 0 starts at once with both.
    wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=120)
    assert {i["WORLD_SIZE"] for i in machines.ranks(attempt=0).values()} == {"2"}
    os.kill(m1.pid, signal.SIGKILL)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == 0, err0
    assert "the job's machines changed: machine 1 (" in err0 and "launcher lost" in err0
    after = machines.ranks(attempt=1)
    assert list(after) == [0] and after[0]["WORLD_SIZE"] == "1", after
    assert after[0]["TORCHELASTIC_RESTART_COUNT"] == "1"


def test_elastic_job_below_its_minimum_fails_naming_the_lost_machine(machines):
    args = ["--nnodes", "2:3", "--max_restarts", "1", "--heartbeat_timeout", "3",
            "--rdzv_timeout", "10", "--rdzv_conf", "last_call_timeout=2"]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"], env={"MODE": "hang"})
    m1 = machines.start(None, None, args, env={"MODE": "hang"})
    # MIN 2 reached: round 0 starts after the last call.
    wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=120)
    lost_pid = m1.pid
    os.kill(m1.pid, signal.SIGKILL)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == 1, err0
    assert "fewer than the minimum 2" in err0 and f"lost: " in err0
    assert f"(pid {lost_pid})" in err0.split("lost: ")[-1], err0
