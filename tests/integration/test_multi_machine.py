"""Several `xlaunch launch` processes on one host, each acting as one machine of a job: the
job they form (ranks, run id, world, the self-test, SLURM's variables).

They meet over 127.0.0.1 (one test uses network namespaces and a veth pair instead). Every
launcher runs in its own session; whatever a test leaves running is killed at its end. A
machine's failure, interruption or loss: test_multi_machine_failures.py; machines joining
and leaving an elastic job: test_multi_machine_elastic.py.
"""
import os
import shutil
import subprocess

import pytest

from launch_helpers import merged_env
from machine_fixtures import machines  # noqa: F401 (fixture)

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
