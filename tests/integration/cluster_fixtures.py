"""Real cluster software for the SLURM and MPI tests, from Debian's packages.

`slurm` (session): scripts/cluster-up starts munge, slurmctld and three slurmd (node1-3 on
127.0.0.2-4) in a state folder, and scripts/cluster-down stops them and restores /etc/hosts
after the last test. `mpi_tools`: Open MPI and MPICH, installed when missing; called by
explicit paths because the two packages fight over the `mpirun` alternative.
"""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from launch_helpers import free_port  # noqa: F401 (the cluster suites import it from here)

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPENMPI_RUN = "/usr/bin/mpirun.openmpi"
HYDRA_RUN = "/usr/bin/mpiexec.hydra"


def ensure_packages(packages):
    missing = [p for p in packages
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                                 text=True).stdout != "install ok installed"]
    if not missing:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update"], env=env, capture_output=True)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"cannot install {missing} (needs root and Debian's mirrors): "
                    f"{r.stdout[-800:]}{r.stderr[-800:]}")


def processes_with(marker):
    """Pids of live processes whose environment holds `marker` (this test's own value)."""
    needle = marker.encode()
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue  # gone, or not ours to read
    return found


def wait_no_processes_with(marker, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = processes_with(marker)
        if not left:
            return
        time.sleep(0.5)
    pytest.fail(f"processes still alive with {marker} after {timeout}s: {left}")


def worker_running(pid, needle="cluster_job.py"):
    """True while `pid` is still that worker: not gone, not a zombie, not reused."""
    proc = pathlib.Path(f"/proc/{pid}")
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X") and needle.encode() in (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False


def wait_workers_gone(pids, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [pid for pid in pids if worker_running(pid)]
        if not left:
            return
        time.sleep(0.5)
    pytest.fail(f"workers still running after {timeout}s: {left}")


class Slurm:
    """The running cluster: env for its commands, and small helpers."""

    def __init__(self, state):
        self.state = pathlib.Path(state)
        self.env = dict(os.environ, SLURM_CONF=str(self.state / "slurm.conf"))
        self.env.pop("CUDA_VISIBLE_DEVICES", None)

    def run(self, args, timeout=240, cwd=None, env=None):
        return subprocess.run(args, env={**self.env, **(env or {})}, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)

    def popen(self, args, cwd=None, env=None):
        return subprocess.Popen(args, env={**self.env, **(env or {})}, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def job_record(self, job_id):
        """`scontrol show job` as a dict of its KEY=VALUE fields."""
        r = self.run(["scontrol", "-o", "show", "job", str(job_id)])
        assert r.returncode == 0, r.stderr
        return dict(re.findall(r"(\w+)=(\S*)", r.stdout))

    def finished_job_record(self, job_id, timeout=90):
        """The job's record once SLURM has finished it (srun returns while the job may still be
        COMPLETING: its epilog and the step's clean-up run after)."""
        deadline = time.monotonic() + timeout
        while True:
            record = self.job_record(job_id)
            if record.get("JobState") not in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING"):
                return record
            if time.monotonic() > deadline:
                pytest.fail(f"job {job_id} still {record.get('JobState')} after {timeout}s")
            time.sleep(0.5)

    def job_id_named(self, name):
        r = self.run(["scontrol", "-o", "show", "job"])
        for line in r.stdout.splitlines():
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            if fields.get("JobName") == name:
                return fields["JobId"]
        raise AssertionError(f"no job named {name} in: {r.stdout[-2000:]}")

    def logs(self):
        out = []
        for f in sorted((self.state / "log").glob("*.log")):
            out.append(f"== {f.name}\n" + "\n".join(f.read_text(errors="replace")
                                                      .splitlines()[-15:]))
        return "\n".join(out)


@pytest.fixture(scope="session")
def slurm():
    if os.geteuid() != 0:
        pytest.fail("the SLURM tests start munge, slurmctld and slurmd: run them as root")
    state = tempfile.mkdtemp(prefix="xlaunch-slurm-")
    started = time.monotonic()
    up = subprocess.run([str(ROOT / "scripts/cluster-up"), state], capture_output=True,
                        text=True, timeout=900)
    try:
        if up.returncode != 0:
            pytest.fail(f"scripts/cluster-up failed:\n{up.stdout}\n{up.stderr}")
        print(f"\ncluster-up: {time.monotonic() - started:.1f}s")
        yield Slurm(state)
    finally:
        subprocess.run([str(ROOT / "scripts/cluster-down"), state], timeout=120)
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def mpi_tools():
    ensure_packages(["openmpi-bin", "mpich"])
    for path in (OPENMPI_RUN, HYDRA_RUN):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} missing after installing openmpi-bin and mpich")
