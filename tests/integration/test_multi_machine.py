"""Several `xlaunch launch` processes on one host, each acting as one machine of a job.

They meet over 127.0.0.1 (one test uses network namespaces and a veth pair instead). Every
launcher runs in its own session; whatever a test leaves running is killed at its end.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from launch_helpers import merged_env, wait_for_files, wait_until_gone

WORKER = r'''
import json, os, sys, time
out = os.environ["OUT_DIR"]
keys = ("RANK", "LOCAL_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
        "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
        "XLAUNCH_RUN_ID")
info = {k: os.environ.get(k) for k in keys}
info["pid"] = os.getpid()
attempt = info["TORCHELASTIC_RESTART_COUNT"]
path = f"{out}/rank_{info['RANK']}_attempt_{attempt}.json"
with open(path + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(path + ".tmp", path)
mode = os.environ.get("MODE", "ok")
on_machine_1 = info["GROUP_RANK"] == "1"
if mode == "fail_on_1":
    if on_machine_1 and info["LOCAL_RANK"] == "0":
        sys.exit(7)
    time.sleep(120)
elif mode == "hang":
    time.sleep(600)
elif mode == "until_world_2":  # elastic: wait in round 0 for the second machine
    if info["WORLD_SIZE"] != "2":
        time.sleep(600)
elif mode == "until_alone":  # elastic: wait until the job shrank to this machine
    if info["WORLD_SIZE"] != "1":
        time.sleep(600)
elif mode == "fail_once_on_1":
    if on_machine_1 and attempt == "0":
        sys.exit(3)
'''

TORCH_WORKER = r'''
import os, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t
with open(os.path.join(os.environ["OUT_DIR"], f"sum_{rank}"), "w") as f:
    f.write(f"{world} {t.item()} {os.environ['GROUP_RANK']}")
dist.destroy_process_group()
'''


def free_port():
    """A free port below the ephemeral range, so no outgoing connection takes it before the
    store binds it."""
    import random
    for _ in range(1000):
        port = random.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-32000")


class Machines:
    """Starts launchers as machines; kills whatever is left (their whole sessions) at the end."""

    def __init__(self, xlaunch_bin, tmp_path):
        self.bin = xlaunch_bin
        self.tmp = tmp_path
        self.procs = []
        self.port = free_port()
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.worker = tmp_path / "worker.py"
        self.worker.write_text(WORKER)

    def start(self, rank, n, args=(), env=None, python=None, program=None, prefix=(), ip=True):
        cmd = [*prefix, self.bin, "launch", "--python", python or sys.executable]
        if n is not None:
            cmd += ["--num_machines", str(n), "--machine_rank", str(rank)]
        if ip:
            cmd += ["--main_process_ip", "127.0.0.1"]
        cmd += ["--main_process_port", str(self.port), *args, str(program or self.worker)]
        p = subprocess.Popen(cmd, env=merged_env({"OUT_DIR": str(self.out), **(env or {})}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def finish(self, p, timeout=120):
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.communicate()
        pids = [json.loads(f.read_text())["pid"] for f in self.out.glob("rank_*.json")]
        assert wait_until_gone(pids) == [], "workers outlived their launchers"

    def ranks(self, attempt=0):
        return {int(json.loads(f.read_text())["RANK"]): json.loads(f.read_text())
                for f in self.out.glob(f"rank_*_attempt_{attempt}.json")}


@pytest.fixture
def machines(xlaunch_bin, tmp_path):
    m = Machines(xlaunch_bin, tmp_path)
    yield m
    m.cleanup()


def job_failed_line(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("xlaunch: job failed: machine")]
    assert lines, stderr
    return lines[-1]


def test_two_by_two_gloo_all_reduce_across_machines(machines, torch_python):
    program = machines.tmp / "allreduce.py"
    program.write_text(TORCH_WORKER)
    procs = [machines.start(r, 2, ["--nproc_per_node", "2"], python=torch_python, program=program)
             for r in (1, 0)]
    for p in procs:
        rc, out, err = machines.finish(p)
        assert rc == 0, err
    sums = {int(f.name.split("_")[1]): f.read_text().split() for f in machines.out.glob("sum_*")}
    assert sorted(sums) == [0, 1, 2, 3]
    for rank, (world, total, group) in sums.items():
        assert world == "4" and float(total) == 10.0
        assert group == str(rank // 2)


def test_machine_0s_run_id_is_the_jobs_on_every_machine(machines):
    # No --rdzv_id: each launcher makes its own random id; machine 0's must win everywhere.
    logs = machines.tmp / "logs"
    procs = [machines.start(r, 2, ["--nproc_per_node", "2", "--log_dir", str(logs)])
             for r in (1, 0)]
    for p in procs:
        rc, out, err = machines.finish(p)
        assert rc == 0, err
    ranks = machines.ranks()
    ids = {info["TORCHELASTIC_RUN_ID"] for info in ranks.values()}
    assert len(ids) == 1 and sorted(ranks) == [0, 1, 2, 3], ranks
    (run_id,) = ids
    assert {info["XLAUNCH_RUN_ID"] for info in ranks.values()} == {run_id}
    # Both launchers share this host's log folder: the second one to create it adds -2.
    assert sorted(p.name for p in logs.iterdir()) == [run_id, run_id + "-2"]


def test_xlaunch_test_across_two_machines_without_rdzv_id(machines):
    # The self-test's workers meet through keys named by the run id: it hung when every
    # machine had its own.
    procs = []
    for r in (1, 0):
        cmd = [machines.bin, "test", "--num_machines", "2", "--machine_rank", str(r),
               "--main_process_ip", "127.0.0.1", "--main_process_port", str(machines.port),
               "--nproc_per_node", "2", "--backend", "gloo", "--rdzv_timeout", "120"]
        p = subprocess.Popen(cmd, env=merged_env({}), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        machines.procs.append(p)
        procs.append(p)
    for p in procs:
        rc, out, err = machines.finish(p, timeout=170)
        assert rc == 0, out + err
        assert "xlaunch test: PASS: 2/2 ranks here passed" in out, out


def test_three_machines_with_different_local_counts(machines):
    counts = {0: 1, 1: 3, 2: 2}
    procs = [machines.start(r, 3, ["--nproc_per_node", str(counts[r])]) for r in (2, 1, 0)]
    for p in procs:
        rc, out, err = machines.finish(p)
        assert rc == 0, err
    ranks = machines.ranks()
    assert sorted(ranks) == list(range(6))
    expected_group = [0, 1, 1, 1, 2, 2]
    for rank, info in ranks.items():
        assert info["WORLD_SIZE"] == "6"
        assert info["GROUP_WORLD_SIZE"] == "3"
        assert info["GROUP_RANK"] == str(expected_group[rank])
        assert info["LOCAL_WORLD_SIZE"] == str(counts[expected_group[rank]])
        assert info["MASTER_PORT"] == str(machines.port)


def test_num_processes_total_splits_evenly(machines):
    procs = [machines.start(r, 2, ["--num_processes", "4"]) for r in (0, 1)]
    for p in procs:
        assert machines.finish(p)[0] == 0
    assert sorted(machines.ranks()) == [0, 1, 2, 3]


def test_a_worker_failing_on_machine_1_stops_machine_0(machines):
    env = {"MODE": "fail_on_1"}
    m0 = machines.start(0, 2, ["--nproc_per_node", "2"], env=env)
    m1 = machines.start(1, 2, ["--nproc_per_node", "2"], env=env)
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 != 0 and rc1 != 0
    assert rc0 == rc1 == 7
    line = job_failed_line(err0)
    assert line == job_failed_line(err1)
    assert "machine 1 (" in line and "rank 2: exited with code 7" in line
    assert "stopping every worker: machine 1" in err0


def test_sigkill_of_a_launcher_stops_the_other_machine(machines):
    args = ["--nproc_per_node", "2", "--heartbeat_timeout", "3"]
    m0 = machines.start(0, 2, args, env={"MODE": "hang"})
    m1 = machines.start(1, 2, args, env={"MODE": "hang"})
    wait_for_files(machines.out, "rank_*_attempt_0.json", 4, timeout=60)
    os.kill(m1.pid, signal.SIGKILL)
    rc0, _, err0 = machines.finish(m0, timeout=90)
    assert rc0 != 0
    assert "machine 1 (" in job_failed_line(err0) and "launcher lost" in job_failed_line(err0)
    # Machine 1's workers lost their launcher: none may keep running.
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


def test_sigkill_of_machine_0_stops_the_others(machines):
    args = ["--heartbeat_timeout", "3"]
    m0 = machines.start(0, 3, args, env={"MODE": "hang"})
    others = [machines.start(r, 3, args, env={"MODE": "hang"}) for r in (1, 2)]
    wait_for_files(machines.out, "rank_*_attempt_0.json", 3, timeout=60)
    os.kill(m0.pid, signal.SIGKILL)
    lines = []
    for p in others:
        rc, _, err = machines.finish(p, timeout=90)
        assert rc == 1, err
        lines.append(job_failed_line(err))
    assert lines[0] == lines[1]
    assert "machine 0 (" in lines[0] and "store at 127.0.0.1:" in lines[0]
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


def test_interrupting_one_launcher_stops_every_machine(machines):
    m0 = machines.start(0, 2, env={"MODE": "hang"})
    m1 = machines.start(1, 2, env={"MODE": "hang"})
    wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=60)
    os.kill(m1.pid, signal.SIGINT)
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == rc1 == 130
    assert job_failed_line(err0) == job_failed_line(err1)
    assert "launcher interrupted by SIGINT" in job_failed_line(err0)


def test_a_missing_machine_is_named(machines):
    args = ["--rdzv_timeout", "3"]
    m0 = machines.start(0, 3, args)
    m2 = machines.start(2, 3, args)
    rc0, _, err0 = machines.finish(m0)
    rc2, _, err2 = machines.finish(m2)
    assert rc0 == 1 and rc2 == 1
    for err in (err0, err2):
        assert "machine rank 1 did not join within --rdzv_timeout 3s" in err, err
        assert "joined: 0 (" in err and ", 2 (" in err
    assert not list(machines.out.glob("rank_*"))  # nothing started anywhere


def test_mismatched_settings_stop_every_launcher(machines):
    m0 = machines.start(0, 2, ["--max_restarts", "0"])
    m1 = machines.start(1, 2, ["--max_restarts", "2"])
    rc0, _, err0 = machines.finish(m0)
    rc1, _, err1 = machines.finish(m1)
    assert rc0 == rc1 == 2
    for err in (err0, err1):
        assert "max_restarts: machine 0 (" in err and "has 0, machine 1 (" in err, err
        assert "has 2" in err
    assert not list(machines.out.glob("rank_*"))


def test_a_duplicate_machine_rank_is_refused(machines):
    args = ["--rdzv_timeout", "30", "--heartbeat_timeout", "3"]
    m0 = machines.start(0, 3, args)
    a = machines.start(1, 3, args)
    b = machines.start(1, 3, args)
    results = [machines.finish(p) for p in (m0, a, b)]
    assert all(rc == 2 for rc, _, _ in results), [r[2] for r in results]
    for _, _, err in results:
        assert "machine rank 1" in err and ("two launchers" in err or "also claims" in err), err


def test_restarts_happen_on_every_machine_together(machines):
    args = ["--max_restarts", "1"]
    m0 = machines.start(0, 2, args, env={"MODE": "fail_once_on_1"})
    m1 = machines.start(1, 2, args, env={"MODE": "fail_once_on_1"})
    rc1, _, err1 = machines.finish(m1)
    rc0, _, err0 = machines.finish(m0)
    assert rc0 == 0 and rc1 == 0, err0 + err1
    assert sorted(machines.ranks(attempt=1)) == [0, 1]
    assert "restarting every worker on every machine" in err0
    assert job_failed_line(err0) == job_failed_line(err1)


def test_srun_variables_give_the_machines(machines):
    procs = []
    for node in (1, 0):
        env = {"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0", "SLURM_STEPID": "0",
               "SLURM_NNODES": "2", "SLURM_NODEID": str(node), "SLURM_PROCID": str(node),
               "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "127.0.0.[1-2]",
               "SLURM_NODELIST": "127.0.0.[1-2]", "SLURM_NTASKS": "2"}
        procs.append(machines.start(None, None, ["--nproc_per_node", "2"], env=env, ip=False))
    errs = []
    for p in procs:
        rc, _, err = machines.finish(p)
        assert rc == 0, err
        errs.append(err)
    assert any("SLURM detected: machine 1 of 2, machine 0 at 127.0.0.1" in e for e in errs)
    ranks = machines.ranks()
    assert sorted(ranks) == [0, 1, 2, 3]
    assert {r["MASTER_ADDR"] for r in ranks.values()} == {"127.0.0.1"}


def netns_available():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    probe = "xl-probe-%d" % os.getpid()
    ok = subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return ok


@pytest.fixture
def two_namespaces():
    """Two network namespaces joined by a veth pair: 10.200.0.1/24 and 10.200.0.2/24."""
    if not netns_available():
        pytest.fail("network namespaces are unavailable here (needs root and `ip netns add`)")
    tag = "%d" % os.getpid()
    names = [f"xl{tag}a", f"xl{tag}b"]
    run = lambda *a: subprocess.run(["ip", *a], check=True, capture_output=True)
    try:
        for n in names:
            run("netns", "add", n)
        run("link", "add", f"v{tag}a", "type", "veth", "peer", "name", f"v{tag}b")
        for n, dev, addr in zip(names, (f"v{tag}a", f"v{tag}b"), ("10.200.0.1", "10.200.0.2")):
            run("link", "set", dev, "netns", n)
            run("-n", n, "addr", "add", f"{addr}/24", "dev", dev)
            run("-n", n, "link", "set", dev, "up")
            run("-n", n, "link", "set", "lo", "up")
        yield names
    finally:
        for n in names:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_machines_in_separate_network_namespaces(machines, two_namespaces, torch_python):
    program = machines.tmp / "allreduce.py"
    program.write_text(TORCH_WORKER)
    procs = []
    for rank, ns in ((1, two_namespaces[1]), (0, two_namespaces[0])):
        procs.append(machines.start(rank, 2, ["--nproc_per_node", "2", "--bind_addr", "10.200.0.1",
                                              "--main_process_ip", "10.200.0.1"],
                                    python=torch_python, program=program,
                                    prefix=["ip", "netns", "exec", ns], ip=False,
                                    env={"GLOO_SOCKET_IFNAME": f"v{os.getpid()}{'ab'[rank]}"}))
    for p in procs:
        rc, _, err = machines.finish(p)
        assert rc == 0, err
    sums = {f.name: f.read_text().split() for f in machines.out.glob("sum_*")}
    assert len(sums) == 4 and all(float(v[1]) == 10.0 for v in sums.values())


def test_ctrl_c_while_waiting_for_the_other_machines_ends_the_launcher(machines):
    # Machine 0's worker is done at once; its launcher then waits for machine 1's.
    args = ["--heartbeat_timeout", "3"]
    m0 = machines.start(0, 2, args, env={"MODE": "ok"})
    m1 = machines.start(1, 2, args, env={"MODE": "hang"})
    wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=60)
    assert wait_until_gone([machines.ranks()[0]["pid"]]) == []
    os.kill(m0.pid, signal.SIGINT)
    try:
        rc0, _, _ = machines.finish(m0, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGINT was swallowed while machine 0 waited for machine 1")
    assert rc0 == -signal.SIGINT  # the default action: the shell shows 130
    rc1, _, err1 = machines.finish(m1, timeout=90)
    assert rc1 != 0, err1
    pids = [info["pid"] for info in machines.ranks().values()]
    assert wait_until_gone(pids) == []


ELASTIC = ["--nnodes", "1:2", "--max_restarts", "1", "--heartbeat_timeout", "3",
           "--rdzv_conf", "last_call_timeout=2"]


def test_elastic_job_starts_alone_and_grows_when_a_machine_joins(machines):
    # The first launcher hosts the store (--machine_rank 0); the other has no rank: join order.
    m0 = machines.start(None, None, [*ELASTIC, "--machine_rank", "0"], env={"MODE": "until_world_2"})
    # Alone, it starts after the last call (2 s) with world size 1.
    wait_for_files(machines.out, "rank_*_attempt_0.json", 1, timeout=120)
    first = machines.ranks(attempt=0)
    assert list(first) == [0] and first[0]["WORLD_SIZE"] == "1", first
    m1 = machines.start(None, None, ELASTIC, env={"MODE": "until_world_2"})
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
    m0 = machines.start(None, None, [*ELASTIC, "--machine_rank", "0"], env={"MODE": "until_alone"})
    m1 = machines.start(None, None, ELASTIC, env={"MODE": "until_alone"})
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
            "--rdzv_timeout", "5", "--rdzv_conf", "last_call_timeout=2"]
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
