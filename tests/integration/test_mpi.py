"""xlaunch under real MPI launchers from Debian: Open MPI's mpirun and MPICH's hydra (PMI
variables). Both run here on one host with two launchers, each a machine of the job; the
store's address comes from MASTER_ADDR/MASTER_PORT passed on by the MPI launcher."""
import json
import subprocess

import pytest

from cluster_fixtures import HYDRA_RUN, OPENMPI_RUN, free_port, mpi_tools  # noqa: F401
from launch_helpers import WORKERS, merged_env

JOB = str(WORKERS / "cluster_job.py")


def mpi_command(kind, port):
    if kind == "Open MPI":
        return [OPENMPI_RUN, "--allow-run-as-root", "--oversubscribe", "-np", "2",
                "-x", "MASTER_ADDR=127.0.0.1", "-x", f"MASTER_PORT={port}"]
    return [HYDRA_RUN, "-np", "2", "-genv", "MASTER_ADDR", "127.0.0.1",
            "-genv", "MASTER_PORT", str(port)]


def run(cmd, tmp_path):
    return subprocess.run(cmd, cwd=tmp_path, env=merged_env({}), capture_output=True, text=True,
                          timeout=240)


@pytest.mark.parametrize("kind", ["Open MPI", "PMI"])
def test_mpi_launchers_torch_allreduce(mpi_tools, kind, xlaunch_bin, torch_python, tmp_path):
    r = run([*mpi_command(kind, free_port()), xlaunch_bin, "launch", "--python", torch_python,
             "--nproc_per_node", "2", JOB, "allreduce"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = [json.loads(l.split("RESULT ", 1)[1]) for l in r.stdout.splitlines() if "RESULT " in l]
    assert sorted(s["rank"] for s in seen) == [0, 1, 2, 3], r.stdout
    assert {s["sum"] for s in seen} == {10.0}
    assert {s["world"] for s in seen} == {4}
    assert len({s["run_id"] for s in seen}) == 1, r.stdout  # one job, one run id
    assert f"{kind} detected: machine 1 of 2, machine 0 at 127.0.0.1" in r.stderr + r.stdout
    # Two launchers share this host: a warning names the option for one per host.
    one_per_host = "--map-by ppr:1:node" if kind == "Open MPI" else "-ppn 1"
    assert one_per_host in r.stderr, r.stderr


@pytest.mark.parametrize("kind", ["Open MPI", "PMI"])
def test_mpi_launchers_c_client_self_test(mpi_tools, kind, xlaunch_bin, tmp_path):
    r = run([*mpi_command(kind, free_port()), xlaunch_bin, "test", "--nproc_per_node", "2",
             "--backend", "gloo"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("xlaunch test: PASS: 2/2 ranks here passed") == 2, r.stdout
    rows = [l.split() for l in r.stdout.splitlines() if l.split() and l.split()[0].isdigit()]
    passed = sorted(int(row[0]) for row in rows if row[-1] == "pass")
    assert passed == [0, 1, 2, 3], r.stdout
