"""torchrun's c10d host fallback: two launchers of one job on the --rdzv_endpoint's host.

torchrun's c10d backend (`_create_tcp_store`) hosts the store when the endpoint names this
machine and, when another launcher of the job already bound the port, joins it as a client.
xlaunch does the same: started twice with the same command line on one host, the first
hosts and the second joins, for elastic (--nnodes 1:2) and fixed (--nnodes 2) jobs alike.
Only an explicit --rdzv_conf is_host=true that cannot bind is an error.
"""
import json
import os
import signal
import subprocess
import sys

import pytest

from config_helpers import isolated_env
from launch_helpers import wait_for_files, wait_until_gone
from cluster_fixtures import free_port

WORKER = r'''
import json, os, time
info = {k: os.environ.get(k) for k in ("RANK", "GROUP_RANK", "WORLD_SIZE", "GROUP_WORLD_SIZE",
                                      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
                                      "TORCHELASTIC_RESTART_COUNT")}
info["pid"] = os.getpid()
path = os.path.join(os.environ["OUT_DIR"],
                    f"rank_{info['RANK']}_attempt_{info['TORCHELASTIC_RESTART_COUNT']}.json")
with open(path + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(path + ".tmp", path)
if os.environ.get("UNTIL_WORLD_2") and info["WORLD_SIZE"] != "2":
    time.sleep(600)  # an elastic round of one machine waits to be re-formed with two
'''


class Launchers:
    """Starts `xlaunch launch` processes with one command line; kills what is left."""

    def __init__(self, xlaunch_bin, tmp_path):
        self.bin = xlaunch_bin
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.worker = tmp_path / "worker.py"
        self.worker.write_text(WORKER)
        self.env = isolated_env(tmp_path, OUT_DIR=str(self.out))
        self.procs = []

    def start(self, args, env=None):
        cmd = [self.bin, "launch", "--python", sys.executable, "--nproc-per-node", "1", *args,
               str(self.worker)]
        p = subprocess.Popen(cmd, env={**self.env, **(env or {})}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(p)
        return p

    def finish(self, p, timeout=180):
        _, err = p.communicate(timeout=timeout)
        return p.returncode, err

    def ranks(self, attempt):
        return {int(f.name.split("_")[1]): json.loads(f.read_text())
                for f in self.out.glob(f"rank_*_attempt_{attempt}.json")}

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
        pids = [json.loads(f.read_text())["pid"] for f in self.out.glob("rank_*.json")]
        assert wait_until_gone(pids) == [], "workers outlived their launchers"


@pytest.fixture
def launchers(xlaunch_bin, tmp_path):
    group = Launchers(xlaunch_bin, tmp_path)
    yield group
    group.cleanup()


def c10d(port, *more):
    return ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", *more]


def test_elastic_job_started_twice_on_the_endpoints_host_grows_from_one_to_two(launchers):
    port = free_port()
    # The default 30 s heartbeat timeout: no machine is lost here, and a short one can expire
    # under a sanitizer on a loaded machine.
    args = ["--nnodes", "1:2", *c10d(port, "--rdzv-id", "el1"), "--rdzv-conf",
            "last_call_timeout=1", "--max-restarts", "1"]
    first = launchers.start(args, env={"UNTIL_WORLD_2": "1"})
    # Alone after the last call, the job runs with world size 1 ...
    wait_for_files(launchers.out, "rank_0_attempt_0.json", 1, timeout=120)
    assert launchers.ranks(0)[0]["WORLD_SIZE"] == "1"
    # ... until the same command line, started again on this host, joins it.
    second = launchers.start(args, env={"UNTIL_WORLD_2": "1"})
    rc2, err2 = launchers.finish(second)
    rc1, err1 = launchers.finish(first)
    assert rc1 == 0 and rc2 == 0, err1 + err2
    assert f"the store's port 127.0.0.1:{port} is already taken on this machine" in err2
    assert "cannot host the store" not in err2
    grown = launchers.ranks(1)
    assert sorted(grown) == [0, 1], grown
    for rank, info in grown.items():
        assert info["WORLD_SIZE"] == "2" and info["GROUP_RANK"] == str(rank)
        assert info["MASTER_PORT"] == str(port) and info["TORCHELASTIC_RUN_ID"] == "el1"


def test_fixed_two_machine_job_started_twice_on_the_endpoints_host(launchers):
    port = free_port()
    args = ["--nnodes", "2", *c10d(port, "--rdzv-id", "fixed2")]
    procs = [launchers.start(args), launchers.start(args)]
    results = [launchers.finish(p) for p in procs]
    assert [rc for rc, _ in results] == [0, 0], "".join(err for _, err in results)
    joined = [err for _, err in results if "is already taken on this machine" in err]
    assert len(joined) == 1, "exactly one launcher hosts; the other joins"
    assert "xlaunch: machine 1 of 2 (by arrival), world size 2" in joined[0]
    ranks = launchers.ranks(0)
    assert sorted(ranks) == [0, 1], ranks
    assert {info["GROUP_RANK"] for info in ranks.values()} == {"0", "1"}
    assert {info["WORLD_SIZE"] for info in ranks.values()} == {"2"}


def test_is_host_true_that_cannot_bind_is_an_error(launchers):
    port = free_port()
    # is_host=true here too: should the port be taken by a stranger, this launcher fails
    # (and the loop below sees its stderr end) instead of joining and waiting.
    host = launchers.start(["--nnodes", "2", *c10d(port, "--rdzv-id", "told"),
                            "--rdzv-conf", "is_host=true"])
    # The host binds the port before it says where it waits for the other machine.
    line = host.stderr.readline()
    while line and "joining the job at" not in line:
        line = host.stderr.readline()
    assert line, "the hosting launcher ended before it waited for the other machine"
    told = launchers.start(["--nnodes", "2", *c10d(port, "--rdzv-id", "told"),
                            "--rdzv-conf", "is_host=true"])
    rc, err = launchers.finish(told)
    assert rc == 1, err
    assert "cannot host the store" in err and "Address already in use" in err
    assert "is already taken on this machine" not in err
