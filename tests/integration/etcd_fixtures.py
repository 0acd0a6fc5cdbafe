"""A real etcd for the tests: Debian's etcd-server on loopback, on free ports, with its data
in a temporary folder; a one-member cluster (`etcd`) and a three-member one (`etcd3`).

The binary is installed with apt-get when missing; when that fails the test fails with the
reason (no silent skip). Each fixture stops its members (SIGKILL is fine: the data folder is
thrown away) and checks nothing is left running.
"""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from launch_helpers import free_ports  # noqa: F401 (the etcd suites import it from here)

START_TIMEOUT = 120  # seconds for a cluster to become healthy on a loaded CI machine


def ensure_etcd():
    """Path of the etcd binary, installing Debian's etcd-server first when it is missing."""
    path = shutil.which("etcd")
    if path:
        return path
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env)  # may be stale
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "etcd-server"]
    done = subprocess.run(install, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        pytest.fail(f"etcd is not installed and `{' '.join(install)}` failed "
                    f"({done.returncode}): {done.stderr[-1500:]}")
    path = shutil.which("etcd")
    if not path:
        pytest.fail("apt-get installed etcd-server but no `etcd` is on PATH")
    return path


class EtcdCluster:
    """`size` etcd members on 127.0.0.1; `endpoints` is "host:port,..." for --rdzv_endpoint."""

    def __init__(self, binary, size, workdir):
        self.binary = binary
        self.size = size
        self.workdir = workdir
        ports = free_ports(2 * size)
        self.client_ports = ports[:size]
        self.peer_ports = ports[size:]
        self.procs = [None] * size
        self.logs = [workdir / f"etcd-m{i}.log" for i in range(size)]

    def member_endpoint(self, i):
        return f"127.0.0.1:{self.client_ports[i]}"

    @property
    def endpoints(self):
        return ",".join(self.member_endpoint(i) for i in range(self.size))

    def start(self):
        initial = ",".join(f"m{i}=http://127.0.0.1:{self.peer_ports[i]}" for i in range(self.size))
        for i in range(self.size):
            client = f"http://127.0.0.1:{self.client_ports[i]}"
            peer = f"http://127.0.0.1:{self.peer_ports[i]}"
            log = open(self.logs[i], "w")
            self.procs[i] = subprocess.Popen(
                [self.binary, "--name", f"m{i}", "--data-dir", str(self.workdir / f"m{i}.etcd"),
                 "--listen-client-urls", client, "--advertise-client-urls", client,
                 "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", initial, "--initial-cluster-state", "new",
                 "--initial-cluster-token", f"xlaunch-test-{os.getpid()}-{self.peer_ports[0]}"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            log.close()
        for i in range(self.size):
            self.wait_healthy(i)

    def wait_healthy(self, i):
        deadline = time.monotonic() + START_TIMEOUT
        last = None
        while time.monotonic() < deadline:
            if self.procs[i].poll() is not None:
                pytest.fail(f"etcd member m{i} exited {self.procs[i].returncode}: "
                            f"{self.logs[i].read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://{self.member_endpoint(i)}/health",
                                            timeout=5) as reply:
                    if json.loads(reply.read()).get("health") == "true":
                        return
            except (OSError, urllib.error.URLError, ValueError) as e:
                last = e
            time.sleep(0.2)
        pytest.fail(f"etcd member m{i} not healthy after {START_TIMEOUT} s ({last}): "
                    f"{self.logs[i].read_text()[-2000:]}")

    def kill(self, i):
        """SIGKILLs member i (a lost machine of the etcd cluster)."""
        self.procs[i].send_signal(signal.SIGKILL)
        self.procs[i].wait(timeout=60)

    def stop(self):
        for proc in self.procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.procs:
            if proc is not None:
                proc.wait(timeout=60)


@pytest.fixture(scope="session")
def etcd_binary():
    return ensure_etcd()


@pytest.fixture
def etcd(etcd_binary, tmp_path):
    """A fresh one-member etcd."""
    cluster = EtcdCluster(etcd_binary, 1, tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def etcd3(etcd_binary, tmp_path):
    """A fresh three-member etcd cluster (it survives the loss of one member)."""
    cluster = EtcdCluster(etcd_binary, 3, tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
