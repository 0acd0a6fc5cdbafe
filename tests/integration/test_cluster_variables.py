"""A cluster manager's variables that cannot be read are exit 2 naming them: a launcher that
dropped them would run a job of its own (a 1-machine job, or a second machine 0) while the
job's other launchers wait. No manager runs here: the variables are set by hand, as a
wrapper or an inherited environment would."""
import subprocess

import pytest

from config_helpers import isolated_env


def launch(xlaunch_bin, tmp_path, env, *args):
    """A real launch (the manager's variables are applied by the launch, not by --dry_run)
    whose worker leaves a file behind if it ever starts."""
    ran = tmp_path / "ran"
    return subprocess.run([xlaunch_bin, "launch", "--rdzv_timeout", "2", *args, "--no_python",
                           "/bin/sh", "-c", f"touch {ran}"], capture_output=True, text=True,
                          env=isolated_env(tmp_path, **env), timeout=60), ran


@pytest.mark.parametrize("env,message", [
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "x"},
     "environment variable OMPI_COMM_WORLD_RANK='x' is not a machine rank of the 2-machine job "
     "(OMPI_COMM_WORLD_SIZE=2): allowed 0..1"),
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "5"},
     "OMPI_COMM_WORLD_RANK='5' is not a machine rank"),
    ({"OMPI_COMM_WORLD_SIZE": "2x", "OMPI_COMM_WORLD_RANK": "1"},
     "OMPI_COMM_WORLD_SIZE='2x' is not a machine count"),
    ({"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1", "MASTER_PORT": "abc",
      "MASTER_ADDR": "127.0.0.1"}, "MASTER_PORT='abc' is not a TCP port"),
    ({"PMI_SIZE": "2", "PMI_RANK": "-1"}, "PMI_RANK='-1' is not a machine rank"),
    ({"SLURM_STEP_ID": "0", "SLURM_NNODES": "2", "SLURM_NODEID": "x",
      "SLURM_NODELIST": "n1,n2"}, "SLURM_NODEID='x' is not a machine rank"),
    ({"SLURM_STEP_ID": "0", "SLURM_NNODES": "2", "SLURM_NODEID": "3",
      "SLURM_NODELIST": "n1,n2"}, "SLURM_NODEID='3' is not a machine rank"),
    ({"PET_NNODES": "2", "RANK": "x", "MASTER_ADDR": "127.0.0.1"},
     "RANK='x' is not a machine rank of the 2-machine job (PET_NNODES=2)"),
    ({"PET_NNODES": "2", "RANK": "5", "MASTER_ADDR": "127.0.0.1"}, "RANK='5'"),
])
def test_a_bad_manager_variable_is_exit_2_and_nothing_runs(xlaunch_bin, tmp_path, env, message):
    r, ran = launch(xlaunch_bin, tmp_path, env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert "hint: the cluster manager sets these" in r.stderr
    assert not ran.exists()


def test_xlaunch_env_shows_the_refusal(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "env"], capture_output=True, text=True, timeout=30,
                       env=isolated_env(tmp_path, PMI_SIZE="2", PMI_RANK="-1"))
    assert "cluster:               PMI" in r.stdout, r.stdout
    assert "error: environment variable PMI_RANK='-1'" in r.stdout


def test_a_huge_slurm_tasks_per_node_is_a_warning_not_gigabytes(xlaunch_bin, tmp_path):
    bomb = ",".join(["1(x1000000)"] * 2000)  # 2e9 entries: ~8 GB expanded
    env = {"SLURM_STEP_ID": "0", "SLURM_NNODES": "1", "SLURM_NODEID": "0",
           "SLURM_NODELIST": "localhost", "SLURM_STEP_TASKS_PER_NODE": bomb}
    r = subprocess.run(["/bin/sh", "-c", f"ulimit -v 2000000; exec {xlaunch_bin} launch "
                        "--no_python /bin/true"], capture_output=True, text=True, timeout=60,
                       env=isolated_env(tmp_path, **env))
    assert r.returncode == 0, r.stderr
    assert "SLURM_STEP_TASKS_PER_NODE: lists more than 65536 nodes" in r.stderr


def test_an_elastic_pet_nnodes_runs_elastic_and_says_so(xlaunch_bin, tmp_path):
    # A pod of rank 1 joins machine 0's store (none runs here, so the join times out).
    env = {"PET_NNODES": "1:4", "RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "9"}
    r, ran = launch(xlaunch_bin, tmp_path, env)
    out = r.stdout + r.stderr
    assert "PyTorchJob detected: an elastic job of 1..4 machines, machine 0 at 127.0.0.1" in out
    assert "joining the elastic job (1..4 machines) at 127.0.0.1:9" in out
    assert "machine -1" not in out
    assert "give --nnodes" not in out
    assert r.returncode == 1, out  # nobody to join
    assert not ran.exists()
