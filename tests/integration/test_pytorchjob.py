"""Kubeflow PyTorchJob's variables: two launchers given only what the operator puts in each
pod's environment (PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR/PORT, PET_NPROC_PER_NODE), no
flags. The pods are two processes on loopback here; no Kubernetes runs."""
import json
import subprocess

from cluster_fixtures import free_port
from launch_helpers import WORKERS, merged_env

JOB = str(WORKERS / "cluster_job.py")


def test_pet_variables_make_a_two_machine_job(xlaunch_bin, torch_python, tmp_path):
    port = free_port()
    pods = []
    for rank in (0, 1):
        env = merged_env({"PET_NNODES": "2", "PET_NODE_RANK": str(rank),
                          "PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": str(port),
                          "PET_NPROC_PER_NODE": "2", "MASTER_ADDR": "127.0.0.1",
                          "MASTER_PORT": str(port), "WORLD_SIZE": "2", "RANK": str(rank)})
        pods.append(subprocess.Popen([xlaunch_bin, "launch", "--python", torch_python, JOB,
                                      "allreduce"], cwd=tmp_path, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=240) for p in pods]
    for p, (out, err) in zip(pods, outs):
        assert p.returncode == 0, out + err
    seen = [json.loads(l.split("RESULT ", 1)[1]) for out, _ in outs for l in out.splitlines()
            if "RESULT " in l]
    assert sorted(s["rank"] for s in seen) == [0, 1, 2, 3]
    assert {s["sum"] for s in seen} == {10.0}
    assert len({s["run_id"] for s in seen}) == 1
    assert "PyTorchJob detected: machine 1 of 2, machine 0 at 127.0.0.1" in outs[1][1] + outs[1][0]


def test_env_shows_the_pet_variables(xlaunch_bin):
    env = merged_env({"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "job-master-0",
                      "PET_MASTER_PORT": "23456", "PET_NPROC_PER_NODE": "4"})
    r = subprocess.run([xlaunch_bin, "env"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = r.stdout
    assert "cluster:               PyTorchJob\n  num_machines: 2\n  machine_rank: 1\n" \
           "  main_process_ip: job-master-0\n  main_process_port: 23456\n" \
           "  nproc_per_node: 4\n" in text, text
