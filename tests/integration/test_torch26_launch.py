"""PyTorch 2.6 workers (Debian 13's python3-torch, in the cached root) under `xlaunch launch`:
the same interop as the 1.13 tests (test_launch_torch.py, test_multi_machine.py), plus a job
whose ranks mix PyTorch 2.6 and the C++ client library on one store."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from launch_helpers import launch, merged_env, wait_for_files
from machine_fixtures import Machines, free_port
from torch26_helpers import (REPO, WORKERS, WRAPPER, mounts_under, shim_env,  # noqa: F401
                             torch26_python, torch26_root)

PARAMS = re.compile(r"params rank (\d+)/(\d+) torch (\S+) group (\S+) initial (\w+) final (\w+)")


def params(stdout):
    found = {int(m.group(1)): m.groups() for m in PARAMS.finditer(stdout)}
    return found


def test_without_the_shim_torch_26_cannot_join_the_agent_store(xlaunch_bin, torch26_python):
    """The fact the shim exists for: Debian 13's torch has no libuv, and 2.6's agent-store
    client asks for it. If this starts passing, Debian's build changed: revisit the docs."""
    r = launch(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "ddp_params26.py")],
               python=torch26_python, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "use_libuv was requested but PyTorch was build without libuv support" in r.stderr


def test_the_documented_workaround_needs_no_shim(xlaunch_bin, torch26_python):
    """docs/rendezvous.md: pass your own TCPStore(use_libuv=False) to init_process_group."""
    r = launch(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "explicit_store26.py")],
               python=torch26_python, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in (0, 1):
        assert f"explicit store ok rank {rank} sum 3 torch 2.6" in r.stdout


def test_ddp_four_ranks_end_with_identical_parameters(xlaunch_bin, torch26_python):
    r = launch(xlaunch_bin, ["--num_processes", "4", str(WORKERS / "ddp_params26.py")],
               python=torch26_python, env=shim_env(), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    found = params(r.stdout)
    assert sorted(found) == [0, 1, 2, 3], r.stdout
    assert {f[2] for f in found.values()} == {"2.6.0+debian"}
    assert {f[1] for f in found.values()} == {"4"}
    finals = {f[5] for f in found.values()}
    assert len(finals) == 1, f"ranks ended with different parameters: {found}"
    assert finals != {f[4] for f in found.values()}  # training changed them


def test_record_error_file_reaches_the_root_cause_report(xlaunch_bin, torch26_python, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "3", "--log_dir", str(tmp_path / "logs"),
                             str(WORKERS / "record26.py")],
               python=torch26_python, env=shim_env({"FAIL_RANK": "1"}), timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rank 1 wrote its error file" in r.stderr, r.stderr
    assert "record26: rank 1 failed on purpose" in r.stderr
    error_files = list((tmp_path / "logs").rglob("error.json"))
    assert len(error_files) == 1, error_files
    # torch 2.6's @record format: {"message": {"message": "ValueError: ...", ...}}
    written = json.loads(error_files[0].read_text())
    assert "ValueError: record26: rank 1 failed on purpose" in written["message"]["message"]


def test_restart_after_a_rank_fails_in_attempt_0(xlaunch_bin, torch26_python):
    # ddp.py: attempt 0 finishes its collectives, then rank 1 exits 7; attempt 1 rendezvouses
    # again on the same key names (2.x does not prefix them by attempt): a fresh store view.
    r = launch(xlaunch_bin, ["--num_processes", "2", "--max_restarts", "1",
                             str(WORKERS / "ddp.py")],
               python=torch26_python, env=shim_env({"FAIL_ON_FIRST_ATTEMPT": "1"}), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "restarting every worker (restart 1 of 1)" in r.stderr
    assert "[rank1]: ddp ok rank 1/2 allreduce 3 restart 0" in r.stdout
    for rank in (0, 1):
        assert f"[rank{rank}]: ddp ok rank {rank}/2 allreduce 3 restart 1" in r.stdout


def test_two_machines_with_torch_26_workers(xlaunch_bin, torch26_python):
    port = free_port()
    procs = []
    try:
        for machine in (1, 0):
            cmd = [xlaunch_bin, "launch", "--python", torch26_python, "--num_machines", "2",
                   "--machine_rank", str(machine), "--main_process_ip", "127.0.0.1",
                   "--main_process_port", str(port), "--nproc_per_node", "2",
                   str(WORKERS / "ddp_params26.py")]
            procs.append(subprocess.Popen(cmd, env=merged_env(shim_env()), text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          start_new_session=True))
        results = [p.communicate(timeout=400) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                subprocess.run(["kill", "-KILL", f"-{p.pid}"])
                p.communicate()
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, out + err
    found = params(results[0][0] + results[1][0])
    assert sorted(found) == [0, 1, 2, 3], results
    assert {f[1] for f in found.values()} == {"4"}
    assert {r: f[3] for r, f in found.items()} == {0: "0", 1: "0", 2: "1", 3: "1"}
    assert len({f[5] for f in found.values()}) == 1, found


@pytest.fixture(scope="module")
def mixed_rank(prefix, tmp_path_factory, consumer_cmake_args):
    build = tmp_path_factory.mktemp("torch26-mixed")
    for cmd in (["cmake", "-S", str(REPO / "tests/integration/torch26_mixed"), "-B", str(build),
                 *consumer_cmake_args, f"-DCMAKE_PREFIX_PATH={prefix}"],
                ["cmake", "--build", str(build)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{cmd} failed:\n{r.stdout}\n{r.stderr}"
    return build / "mixed_rank"


def test_cpp_client_ranks_and_a_torch_26_rank_share_one_store(xlaunch_bin, torch26_python,
                                                              mixed_rank, tmp_path):
    dispatch = tmp_path / "rank.sh"
    dispatch.write_text("#!/bin/sh\n"
                        f'[ "$RANK" = 0 ] && exec {torch26_python} {WORKERS / "torch26_mixed_py.py"}\n'
                        f"exec {mixed_rank}\n")
    dispatch.chmod(0o755)
    r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "3", "--no_python",
                        str(dispatch)], env=merged_env(shim_env()), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    records = {}
    for line in r.stdout.splitlines():
        if "MIXED " in line:
            record = json.loads(line.split("MIXED ", 1)[1])
            records[record["rank"]] = record
    assert sorted(records) == [0, 1, 2], r.stdout
    assert records[0]["from_cpp"] == {"cpp/1": "c++ rank 1\x00nul", "cpp/2": "c++ rank 2\x00nul"}
    assert records[0]["count"] == 3
    for rank in (1, 2):
        assert records[rank]["py_hello"] == "torch 2.6.0+debian"
        assert records[rank]["count"] == 3


def test_the_wrapper_leaves_no_mount_behind_when_killed(torch26_python, torch26_root):
    proc = subprocess.Popen([torch26_python, "-c", "import time; print('up', flush=True); "
                             "time.sleep(300)"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        # The worker runs chrooted and sees its mounts (paths relative to its root); out
        # here nothing is mounted under the root.
        assert os.readlink(f"/proc/{proc.pid}/root") == str(torch26_root)
        inside = open(f"/proc/{proc.pid}/mounts").read().splitlines()
        targets = {line.split()[1] for line in inside}
        assert {"/tmp", "/proc", "/dev", str(REPO)} <= targets, targets
        assert mounts_under(torch26_root) == []
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    time.sleep(0.1)
    assert mounts_under(torch26_root) == []


def test_elastic_rounds_with_torch_26_workers(xlaunch_bin, torch26_python, tmp_path):
    """An elastic job (--nnodes 1:2) of 2.6 ranks: round 0 alone, then a second launcher joins
    and round 1 re-forms the gloo group with both machines' ranks."""
    machines = Machines(xlaunch_bin, tmp_path)
    try:
        args = ["--nnodes", "1:2", "--max_restarts", "1", "--heartbeat_timeout", "5",
                "--rdzv_conf", "last_call_timeout=2", "--nproc_per_node", "2"]
        env = shim_env({"TARGET_WORLD": "4"})
        worker = WORKERS / "elastic26.py"
        m0 = machines.start(None, None, [*args, "--machine_rank", "0"], env=env,
                            python=torch26_python, program=worker)
        wait_for_files(machines.out, "rank_*_attempt_0.json", 2, timeout=300)
        m1 = machines.start(None, None, args, env=env, python=torch26_python, program=worker)
        rc1, _, err1 = machines.finish(m1, timeout=400)
        rc0, _, err0 = machines.finish(m0, timeout=400)
        assert rc0 == 0 and rc1 == 0, err0 + err1
        first, second = machines.ranks(attempt=0), machines.ranks(attempt=1)
    finally:
        machines.cleanup()
    assert sorted(first) == [0, 1] and {i["world"] for i in first.values()} == {2}, first
    assert {i["sum"] for i in first.values()} == {3.0}  # 1 + 2
    assert sorted(second) == [0, 1, 2, 3], second
    assert {i["world"] for i in second.values()} == {4}
    assert {i["sum"] for i in second.values()} == {10.0}  # 1 + 2 + 3 + 4
    assert {i["GROUP_RANK"] for r, i in second.items()} == {"0", "1"}
    assert {i["torch"].split("+")[0][:3] for i in second.values()} == {"2.6"}
    assert len({i["TORCHELASTIC_RUN_ID"] for i in [*first.values(), *second.values()]}) == 1
    assert "joined the job" in err0


def test_preloaded_torch_26_ranks_are_forked_from_the_template(xlaunch_bin, torch26_python,
                                                               tmp_path):
    """--preload under PyTorch 2.6 (docs/launch.md, "Preloading"): the template imports torch
    2.6 once; each rank runs the shim's usercustomize itself, then one all-reduce."""
    script = tmp_path / "probe.py"
    script.write_text((WORKERS / "preload_probe.py").read_text())
    r = launch(xlaunch_bin, ["--nproc_per_node", "3", "--preload", "torch", str(script)],
               python=torch26_python, env=shim_env({"OUT": str(tmp_path)}), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--preload" not in r.stderr, r.stderr
    seen = [json.loads((tmp_path / f"seen_0_{rank}").read_text()) for rank in range(3)]
    assert len({s["template"] for s in seen} - {None}) == 1, seen
    for rank, s in enumerate(seen):
        assert s["torch_before_import"] and s["rank"] == str(rank) and s["sum"] == 6.0, s


def test_torch_26_workers_get_only_the_nccl_name_it_reads(xlaunch_bin, torch26_python, tmp_path):
    """2.6 reads TORCH_NCCL_ASYNC_ERROR_HANDLING and warns about the old name: xlaunch's
    start-up hook drops the old one (1.13 keeps it: test_torchrun_dropin_workers.py)."""
    out = tmp_path / "out"
    out.mkdir()
    r = launch(xlaunch_bin, [str(WORKERS / "report_env.py")], python=torch26_python,
               env={"OUT_DIR": str(out)}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    env = json.loads((out / "rank_0.json").read_text())["env"]
    assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert "NCCL_ASYNC_ERROR_HANDLING" not in env
