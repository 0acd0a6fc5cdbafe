"""Several `xlaunch launch` processes on one host, each acting as one machine of a job:
`Machines` starts them, each in its own session, and kills whatever a test leaves running
(launchers and their workers) at its end. Used by test_multi_machine*.py and
test_torch26_launch.py.
"""
import json
import os
import signal
import subprocess
import sys

import pytest

from launch_helpers import free_port, merged_env, wait_until_gone

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
elif mode == "interrupt_0_stubborn_1":  # machine 0's worker Ctrl-Cs its launcher; 1's holds out
    import signal
    if on_machine_1:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        os.kill(os.getppid(), signal.SIGINT)
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
