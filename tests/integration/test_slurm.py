"""xlaunch under a real SLURM 22.05 (Debian's slurm-wlm): munge, slurmctld and three slurmd
on 127.0.0.2-4, started by scripts/cluster-up for this module (cluster_fixtures.py)."""
import json
import os
import signal
import time
import uuid

import pytest

from cluster_fixtures import (free_port, processes_with, slurm,  # noqa: F401
                              wait_no_processes_with, wait_workers_gone)
from launch_helpers import WORKERS

JOB = str(WORKERS / "cluster_job.py")


def results(text):
    return [json.loads(line.split("RESULT ", 1)[1]) for line in text.splitlines()
            if "RESULT " in line]


def launch_args(xlaunch_bin, torch_python, *extra):
    # A free port per test: several suites may share the CI machine.
    return [xlaunch_bin, "launch", "--python", torch_python, "--main_process_port",
            str(free_port()), *extra]


def check_allreduce(out, nodes, per_node):
    seen = results(out)
    world = len(nodes) * per_node
    assert sorted(r["rank"] for r in seen) == list(range(world)), out
    assert {r["world"] for r in seen} == {world}
    assert {r["sum"] for r in seen} == {world * (world + 1) / 2}
    # Ranks are laid out node by node, machine 0 being the step's first node.
    assert [r["node"] for r in sorted(seen, key=lambda r: r["rank"])] == \
        [n for n in nodes for _ in range(per_node)], out
    assert {r["master"] for r in seen} == {nodes[0]}
    # One job, one run id on every machine, without --rdzv_id.
    assert len({r["run_id"] for r in seen}) == 1, out
    return seen


def test_srun_two_nodes_torch_allreduce(slurm, xlaunch_bin, torch_python, tmp_path):
    # -w: the nodes the checks name (SLURM may otherwise pick any two).
    r = slurm.run(["srun", "-N2", "-w", "node[1-2]", "--ntasks-per-node=1",
                   *launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "2"),
                   JOB, "allreduce"], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr + slurm.logs()
    check_allreduce(r.stdout, ["node1", "node2"], 2)
    assert "SLURM detected: machine 1 of 2, machine 0 at node1" in r.stderr + r.stdout


def test_sbatch(slurm, xlaunch_bin, torch_python, tmp_path):
    script = tmp_path / "job.sh"
    args = " ".join(launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "2"))
    script.write_text(f"#!/bin/bash\n#SBATCH -N 2 -w node[1-2]\n#SBATCH --ntasks-per-node=1\n"
                      f"srun {args} {JOB} allreduce\n")
    out = tmp_path / "job.out"
    r = slurm.run(["sbatch", "--wait", "-o", str(out), str(script)], cwd=tmp_path)
    text = out.read_text() if out.exists() else ""
    assert r.returncode == 0, r.stdout + r.stderr + text + slurm.logs()
    check_allreduce(text, ["node1", "node2"], 2)


def test_salloc_then_srun_on_all_and_on_a_subset(slurm, xlaunch_bin, torch_python, tmp_path):
    # Inside one allocation of three nodes: a step on all of them, then one on node2-3 only,
    # whose machine 0 is node2 (the job's node list still starts with node1).
    args = " ".join(launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "1"))
    script = (f"srun -N3 --ntasks-per-node=1 {args} {JOB} allreduce > all.out && "
              f"srun -N2 -w 'node[2-3]' --ntasks-per-node=1 {args} {JOB} allreduce > part.out")
    r = slurm.run(["salloc", "-N3", "bash", "-c", script], cwd=tmp_path)
    all_out = (tmp_path / "all.out").read_text() if (tmp_path / "all.out").exists() else ""
    part = (tmp_path / "part.out").read_text() if (tmp_path / "part.out").exists() else ""
    assert r.returncode == 0, r.stdout + r.stderr + all_out + part + slurm.logs()
    check_allreduce(all_out, ["node1", "node2", "node3"], 1)
    check_allreduce(part, ["node2", "node3"], 1)


def test_srun_one_node(slurm, xlaunch_bin, torch_python, tmp_path):
    # The store listens where the workers are told to connect: node1 (127.0.0.2).
    r = slurm.run(["srun", "-N1", "-w", "node1",
                   *launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "2"),
                   JOB, "allreduce"], cwd=tmp_path, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    check_allreduce(r.stdout, ["node1"], 2)


def test_two_launchers_on_one_node_are_refused(slurm, xlaunch_bin, torch_python, tmp_path):
    r = slurm.run(["srun", "-N1", "-w", "node1", "--ntasks=2",
                   *launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "1"),
                   JOB, "allreduce"], cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "srun started 2 launchers on node1" in r.stderr
    assert "--ntasks-per-node=1" in r.stderr
    assert "RESULT" not in r.stdout  # no worker was started


def test_a_ranks_exit_code_reaches_srun_and_scontrol(slurm, xlaunch_bin, torch_python,
                                                    tmp_path):
    name = f"xl-exit-{uuid.uuid4().hex[:8]}"
    r = slurm.run(["srun", "-J", name, "-N2", "--ntasks-per-node=1",
                   *launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "2"),
                   JOB, "fail", "3", "7"], cwd=tmp_path)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "rank 3" in r.stderr and "code 7" in r.stderr, r.stderr
    record = slurm.finished_job_record(slurm.job_id_named(name))
    assert record["JobState"] == "FAILED", record
    assert record["ExitCode"] == "7:0", record


def test_env_names_the_cluster_once(slurm, xlaunch_bin, tmp_path):
    r = slurm.run(["srun", "-N2", "-w", "node[2-3]", "--ntasks-per-node=1", xlaunch_bin, "env"],
                  cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "cluster: cluster:" not in r.stdout
    lines = [l for l in r.stdout.splitlines() if l.startswith("cluster:")]
    assert [l.split() for l in lines] == [["cluster:", "SLURM"]] * 2, r.stdout
    assert r.stdout.count("main_process_ip: node2") == 2
    assert sorted(l.strip() for l in r.stdout.splitlines() if "machine_rank" in l) == \
        ["machine_rank: 0", "machine_rank: 1"]


def test_c_self_test_across_machines(slurm, xlaunch_bin, tmp_path):
    r = slurm.run(["srun", "-N2", "--ntasks-per-node=1", xlaunch_bin, "test",
                   "--nproc_per_node", "2", "--backend", "gloo",
                   "--main_process_port", str(free_port())], cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASS") >= 2, r.stdout


def start_hanging_job(slurm, xlaunch_bin, torch_python, tmp_path, marker, *srun_extra):
    out = tmp_path / "workers"
    out.mkdir()
    proc = slurm.popen(["srun", *srun_extra, "-N2", "--ntasks-per-node=1",
                        *launch_args(xlaunch_bin, torch_python, "--nproc_per_node", "2",
                                     "--heartbeat_timeout", "5"),
                        JOB, "hang", str(out)], cwd=tmp_path, env={"XLAUNCH_MARKER": marker})
    deadline = time.monotonic() + 120
    while len(list(out.glob("worker-*.json"))) < 4:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            o, e = proc.communicate()
            pytest.fail(f"workers did not start: {o}{e}")
        time.sleep(0.2)
    return proc, {p.name: json.loads(p.read_text()) for p in out.glob("worker-*.json")}


def test_scancel_leaves_nothing(slurm, xlaunch_bin, torch_python, tmp_path):
    marker = f"xlaunch-scancel-{uuid.uuid4().hex}"
    name = f"xl-cancel-{uuid.uuid4().hex[:8]}"
    proc, workers = start_hanging_job(slurm, xlaunch_bin, torch_python, tmp_path, marker,
                                      "-J", name)
    assert len(processes_with(marker)) >= 6  # two launchers and four workers at least
    assert slurm.run(["scancel", slurm.job_id_named(name)]).returncode == 0
    proc.communicate(timeout=120)
    wait_no_processes_with(marker)
    wait_workers_gone([w["pid"] for w in workers.values()])


def test_a_launcher_killed_on_one_node_ends_the_job(slurm, xlaunch_bin, torch_python, tmp_path):
    marker = f"xlaunch-sigkill-{uuid.uuid4().hex}"
    proc, workers = start_hanging_job(slurm, xlaunch_bin, torch_python, tmp_path, marker)
    # Machine 1's launcher (ranks 2-3; SLURM may pick any two nodes) is its workers' parent.
    node = workers["worker-2.json"]["node"]
    assert node != workers["worker-0.json"]["node"], workers
    launcher = {w["ppid"] for w in workers.values() if w["node"] == node}
    assert len(launcher) == 1, workers
    os.kill(launcher.pop(), signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    assert proc.returncode != 0, out + err
    wait_no_processes_with(marker)
    wait_workers_gone([w["pid"] for w in workers.values()])
