"""What the etcd tests run against a real etcd (etcd_fixtures.py): xlaunch-etcd-driver, the
etcd client from the command line (`driver`, `run`, `ok`, `values`), and `xlaunch launch
--rdzv_backend etcd` processes as machines of a job (`launchers`)."""
import os
import signal
import subprocess
import time

import pytest

TIMEOUT = 120  # seconds for any one command on a loaded CI machine


@pytest.fixture(scope="session")
def driver(build_dir):
    path = build_dir / "cluster" / "xlaunch-etcd-driver"
    if not path.exists():
        pytest.fail(f"{path} not found: build the project first (scripts/test does)")
    return str(path)


def run(driver, endpoints, *args):
    return subprocess.run([driver, endpoints, *args], capture_output=True, text=True,
                          timeout=TIMEOUT)


def ok(driver, endpoints, *args):
    done = run(driver, endpoints, *args)
    assert done.returncode == 0, f"{args}: {done.returncode} {done.stderr}"
    return done.stdout


def values(driver, endpoints, prefix):
    """{key: value} under prefix."""
    out = {}
    for line in ok(driver, endpoints, "get-prefix", prefix).splitlines()[1:]:
        key, rest = line.split("=", 1)
        out[key] = rest.split(" lease=")[0]
    return out


HEARTBEAT = "3"  # seconds: the lease TTL, short so a lost launcher is seen soon


# Killing a member may kill the leader: until a new one is elected, which took over 3 s on a
# loaded CI machine, nobody can renew a lease. A launcher gives up after --heartbeat_timeout
# without a renewal, so the jobs that lose a member get a lease that outlives an election.
ELECTION_PROOF_HEARTBEAT = "10"

ALLREDUCE = r'''
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t
out = os.environ["OUT_DIR"]
with open(os.path.join(out, f"sum_{rank}"), "w") as f:
    f.write(f"{world} {t.item()} {os.environ['GROUP_RANK']} {os.environ['MASTER_PORT']} "
            f"{os.environ['TORCHELASTIC_RUN_ID']} {os.getpid()} "
            f"{os.environ['TORCHELASTIC_RESTART_COUNT']}")
dist.destroy_process_group()
if os.environ.get("MODE") == "hang" or (os.environ.get("MODE") == "hang_round0" and
                                         os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"):
    time.sleep(600)
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
if os.environ.get("MODE") == "fail_once" and rank == 3 and attempt == "0":
    sys.exit(5)
'''


def wait_for_members(driver, endpoints, run_id, count):
    """Waits until `count` launchers are registered (values span lines: keys are counted)."""
    prefix = f"/xlaunch/{run_id}/members/"

    def registered():
        listed = ok(driver, endpoints, "get-prefix", prefix)
        return sum(line.startswith(prefix) for line in listed.splitlines())

    deadline = time.monotonic() + TIMEOUT
    while registered() < count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert registered() == count


class Launchers:
    """`xlaunch launch --rdzv_backend etcd` processes, each one machine; killed at the end."""

    def __init__(self, xlaunch_bin, python, tmp_path):
        self.bin = xlaunch_bin
        self.python = python
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.program = tmp_path / "allreduce.py"
        self.program.write_text(ALLREDUCE)
        self.procs = []

    def start(self, endpoint, run_id, machines=2, extra=(), env=None, backend="etcd",
              heartbeat=HEARTBEAT):
        host, port = endpoint.split(",")[0].rsplit(":", 1)
        # torchrun's spelling for etcd-v2 (--rdzv_endpoint), accelerate's for etcd.
        where = (["--rdzv_endpoint", f"{host}:{port}"] if backend == "etcd-v2" else
                 ["--main_process_ip", host, "--main_process_port", port])
        cmd = [self.bin, "launch", "--python", self.python, "--num_machines", str(machines),
               "--nproc_per_node", "2", "--rdzv_backend", backend, *where, "--rdzv_id", run_id,
               "--heartbeat_timeout", heartbeat, *extra, str(self.program)]
        proc = subprocess.Popen(cmd, env=dict(os.environ, OUT_DIR=str(self.out), **(env or {})),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def finish(self, proc):
        out, err = proc.communicate(timeout=TIMEOUT)
        return proc.returncode, out, err

    def sums(self):
        return {int(f.name.split("_")[1]): f.read_text().split() for f in self.out.glob("sum_*")}

    def stop(self):
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session, workers too
            except ProcessLookupError:
                pass
            proc.communicate()
        for s in self.sums().values():  # workers of a SIGKILLed launcher (MODE=hang)
            try:
                os.kill(int(s[5]), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def launchers(xlaunch_bin, torch_python, tmp_path):
    l = Launchers(xlaunch_bin, torch_python, tmp_path)
    yield l
    l.stop()
