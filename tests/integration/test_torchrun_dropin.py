"""torchrun's command lines under `xlaunch launch`: every flag in both spellings, PET_*
variables, and a differential test against torch 1.13's own argument parser.

The hook is `xlaunch launch --dry_run`: it prints the merged settings, this machine's plan
("plan.x: value") and the worker command, and starts nothing.
"""
import json
import os
import subprocess
import sys

import pytest

from config_helpers import isolated_env
from launch_helpers import WORKERS
from test_multi_machine import free_port

# What torch 1.13's torch.distributed.run makes of a command line (run under Debian's
# python3-torch): the values a launcher acts on.
TORCH_SIDE = r"""
import json, os, sys
from torch.distributed import run as tr
from torch.distributed.elastic.rendezvous.utils import (
    _parse_rendezvous_config, parse_rendezvous_endpoint)

results = []
for case in json.load(sys.stdin):
    saved = dict(os.environ)
    os.environ.update(case["env"])
    try:
        args = tr.get_args_parser().parse_args(case["argv"] + ["train.py", "--lr", "1"])
        low, high = tr.parse_min_max_nnodes(args.nnodes)
        default_port = 29400 if args.rdzv_backend == "c10d" else 29500
        host, port = parse_rendezvous_endpoint(tr.get_rdzv_endpoint(args), default_port)
        results.append({
            "nproc_per_node": tr.determine_local_world_size(args.nproc_per_node),
            "min_nodes": low, "max_nodes": high, "node_rank": args.node_rank,
            "host": host, "port": port, "max_restarts": args.max_restarts,
            "rdzv_id": args.rdzv_id, "conf": _parse_rendezvous_config(args.rdzv_conf),
            "script_args": args.training_script_args, "role": args.role,
            "module": args.module, "no_python": args.no_python,
        })
    finally:
        os.environ.clear()
        os.environ.update(saved)
print(json.dumps(results))
"""

# Command lines torch 1.13 accepts (its flags are underscored only), with PET_* variables.
CORPUS = [
    ([], {}),
    (["--nproc_per_node", "4"], {}),
    (["--nproc_per_node=2", "--max_restarts", "3"], {}),
    (["--nproc_per_node", "auto"], {}),
    (["--nproc_per_node", "cpu"], {}),
    (["--nnodes", "2", "--node_rank", "1", "--master_addr", "10.1.2.3", "--master_port", "29511",
      "--nproc_per_node", "2"], {}),
    (["--nnodes=3", "--node_rank=0", "--master_addr=head.example", "--nproc_per_node=1"], {}),
    (["--nnodes", "2:2", "--node_rank", "1", "--master_addr", "10.0.0.9"], {}),
    (["--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:29611", "--nnodes", "2",
      "--rdzv_id", "job-42", "--nproc_per_node", "3"], {}),
    (["--rdzv_backend", "c10d", "--rdzv_endpoint", "localhost", "--nnodes", "2"], {}),
    (["--rdzv_backend", "c10d", "--rdzv_endpoint", "10.9.9.9:4000", "--nnodes", "2",
      "--node_rank", "1"], {}),
    (["--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:29612", "--rdzv_conf",
      "join_timeout=120,last_call_timeout=15,close_timeout=20,read_timeout=30", "--nnodes", "2"],
     {}),
    (["--rdzv_id", "exp7", "--max_restarts=5", "--role", "trainer"], {}),
    (["--master_port", "23456", "--nproc_per_node", "2", "-r", "3", "-t", "0:1"], {}),
    (["--log_dir", "/tmp/xl-logs", "--redirects", "0:3,1:2", "--nproc_per_node", "2"], {}),
    (["--monitor_interval", "1", "--start_method", "fork", "--nproc_per_node", "2"], {}),
    (["-m"], {}),
    (["--no_python"], {}),
    ([], {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_NPROC_PER_NODE": "3",
          "PET_MASTER_ADDR": "10.3.3.3", "PET_MASTER_PORT": "24000"}),
    (["--nproc_per_node", "2", "--node_rank", "0"],
     {"PET_NPROC_PER_NODE": "5", "PET_NODE_RANK": "1", "PET_NNODES": "2",
      "PET_MASTER_ADDR": "10.3.3.4", "PET_MAX_RESTARTS": "2", "PET_RDZV_ID": "pj-1"}),
    ([], {"PET_RDZV_BACKEND": "c10d", "PET_RDZV_ENDPOINT": "127.0.0.1:29613", "PET_NNODES": "2",
          "PET_RDZV_CONF": "join_timeout=60"}),
]


def dry_run(xlaunch_bin, tmp_path, args, env=None, expect=0):
    (tmp_path / "train.py").write_text("#!/usr/bin/env python3\nprint('hi')\n")
    (tmp_path / "train.py").chmod(0o755)  # --no_python runs it as is
    r = subprocess.run([xlaunch_bin, "launch", "--dry_run", "--python", sys.executable, *args,
                        "./train.py", "--lr", "1"], capture_output=True, text=True,
                       env=isolated_env(tmp_path, **(env or {})), cwd=tmp_path, timeout=60)
    assert r.returncode == expect, r.stdout + r.stderr
    values = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(": ")
        values[key] = value
    return values, r


def test_xlaunch_agrees_with_torch_1_13_on_every_shared_value(xlaunch_bin, tmp_path,
                                                               torch_python):
    cases = [{"argv": argv, "env": env} for argv, env in CORPUS]
    torch = subprocess.run([torch_python, "-c", TORCH_SIDE], input=json.dumps(cases),
                           capture_output=True, text=True, timeout=300,
                           env=isolated_env(tmp_path))
    assert torch.returncode == 0, torch.stderr
    expected = json.loads(torch.stdout.strip().splitlines()[-1])
    assert len(expected) == len(CORPUS)
    for (argv, env), want in zip(CORPUS, expected):
        got, _ = dry_run(xlaunch_bin, tmp_path, argv, env)
        where = f"{argv} {env}: xlaunch {got} torch {want}"
        assert int(got["plan.processes_per_machine"]) == want["nproc_per_node"], where
        assert want["min_nodes"] == want["max_nodes"], where  # the corpus is fixed-size
        assert int(got["plan.machines"]) == want["max_nodes"], where
        assert int(got["plan.machine_rank"]) == want["node_rank"], where
        assert int(got["plan.max_restarts"]) == want["max_restarts"], where
        assert got["plan.role"] == want["role"], where
        assert got["command"].endswith("train.py --lr 1"), where
        assert want["script_args"] == ["--lr", "1"], where
        if want["rdzv_id"] != "none":  # torchrun's "none" is no id; xlaunch makes one
            assert got["plan.run_id"] == want["rdzv_id"], where
        explicit_address = any(a.startswith(("--master", "--rdzv_endpoint")) for a in argv) or \
            any(k in env for k in ("PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_RDZV_ENDPOINT"))
        if explicit_address or want["max_nodes"] > 1:
            assert got["plan.master_addr"] == want["host"], where
            assert int(got["plan.master_port"].split()[0]) == want["port"], where
        else:
            # One machine, nothing said: both use loopback; xlaunch takes a free port where
            # torchrun takes 29500 (a documented difference: no clash between two jobs).
            assert got["plan.master_addr"] == want["host"] == "127.0.0.1", where
            assert got["plan.master_port"].startswith("0 "), where
        conf = want["conf"]
        if "join_timeout" in conf:
            assert float(got["rdzv_timeout"]) == float(conf["join_timeout"]), where
        for key in ("last_call_timeout", "close_timeout", "read_timeout"):
            if key in conf:
                assert f"{key}={conf[key]}" in got["rdzv_conf"], where
        if want["module"]:
            assert " -m ./train.py" in got["command"], where
        if want["no_python"]:
            assert got["command"].split()[0].endswith("train.py"), where


# torchrun's newer spellings (PyTorch 2.x): every dashed flag means what its underscored
# twin means. torch 1.13 knows only the underscored ones, so these are checked pairwise.
PAIRS = [
    (["--nproc-per-node", "3"], ["--nproc_per_node", "3"]),
    (["--nnodes", "2", "--node-rank", "1", "--master-addr", "h1", "--master-port", "1234"],
     ["--nnodes", "2", "--node_rank", "1", "--master_addr", "h1", "--master_port", "1234"]),
    (["--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:29700", "--rdzv-id", "a",
      "--rdzv-conf", "last_call_timeout=3", "--nnodes", "2"],
     ["--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:29700", "--rdzv_id", "a",
      "--rdzv_conf", "last_call_timeout=3", "--nnodes", "2"]),
    (["--max-restarts", "2", "--log-dir", "/tmp/x", "--local-ranks-filter", "0"],
     ["--max_restarts", "2", "--log_dir", "/tmp/x", "--local_ranks_filter", "0"]),
    (["--local-addr", "me", "--shutdown-timeout", "7", "--signals-to-handle", "SIGTERM"],
     ["--local_addr", "me", "--shutdown_timeout", "7", "--signals_to_handle", "SIGTERM"]),
    (["--virtual-local-rank", "--numa-binding", "node", "--monitor-interval", "1",
      "--start-method", "spawn", "--event-log-handler", "null"],
     ["--virtual_local_rank", "--numa_binding", "node", "--monitor_interval", "1",
      "--start_method", "spawn", "--event_log_handler", "null"]),
    (["--no-python"], ["--no_python"]),
    (["--run-path"], ["--run_path"]),
]


@pytest.mark.parametrize("dashed,underscored", PAIRS)
def test_dashed_and_underscored_spellings_mean_the_same(xlaunch_bin, tmp_path, dashed,
                                                       underscored):
    a, _ = dry_run(xlaunch_bin, tmp_path, dashed)
    b, _ = dry_run(xlaunch_bin, tmp_path, underscored)
    assert a == b
    assert len(a) > 11  # settings beyond the plan's own lines were printed


def test_newer_torchrun_flags_reach_the_settings(xlaunch_bin, tmp_path):
    got, r = dry_run(xlaunch_bin, tmp_path, [
        "--role", "trainer", "--shutdown-timeout", "7", "--virtual-local-rank",
        "--signals-to-handle", "SIGTERM,SIGUSR1", "--rdzv-conf",
        "close_timeout=4,is_host=true", "--logs-specs", "mine", "--numa-binding", "socket"])
    assert got["role"] == "trainer"
    assert got["plan.role"] == "trainer"
    assert got["term_timeout"] == "7"
    assert got["virtual_local_rank"] == "true"
    assert got["signals_to_handle"] == "SIGTERM,SIGUSR1"
    assert got["rdzv_conf"] == "close_timeout=4,is_host=true"
    assert "SIGUSR1 keep their default action" in r.stderr
    assert "cannot load torchrun.logs_specs plugins" in r.stderr
    assert "does not bind workers to NUMA nodes" in r.stderr


def test_run_path_runs_any_file_with_python(xlaunch_bin, tmp_path):
    (tmp_path / "script").write_text("print('hi')\n")
    r = subprocess.run([xlaunch_bin, "launch", "--dry_run", "--python", sys.executable,
                        "--run-path", "script", "a"], capture_output=True, text=True,
                       env=isolated_env(tmp_path), cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"command: {sys.executable} -u script a" in r.stdout


def test_pet_variables_sit_below_flags_and_xlaunch_variables_above_the_file(xlaunch_bin,
                                                                             tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("num_machines: 4\nmachine_rank: 3\nmax_restarts: 9\nmain_process_ip: file\n")
    env = {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_MAX_RESTARTS": "1",
           "XLAUNCH_MAX_RESTARTS": "6"}
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--config_file", str(cfg), "--node_rank", "0"], env)
    assert got["plan.machines"] == "2"  # PET_NNODES over the file
    assert got["plan.machine_rank"] == "0"  # the flag over PET_NODE_RANK
    assert got["plan.max_restarts"] == "6"  # XLAUNCH_* over PET_*
    assert got["plan.master_addr"] == "file"  # the file where nothing else speaks


def test_pet_switches_and_bad_pet_values(xlaunch_bin, tmp_path):
    got, _ = dry_run(xlaunch_bin, tmp_path, [], {"PET_NO_PYTHON": "1"})
    assert got["command"].split()[0].endswith("train.py")
    _, r = dry_run(xlaunch_bin, tmp_path, [], {"PET_NNODES": "lots"}, expect=2)
    assert "environment variable PET_NNODES: bad value 'lots'" in r.stderr


def test_nproc_per_node_gpu_counts_visible_gpus_and_fails_without(xlaunch_bin, tmp_path):
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--nproc-per-node", "gpu"],
                     {"CUDA_VISIBLE_DEVICES": "4,5,6"})
    assert got["plan.processes_per_machine"] == "3"
    assert got["plan.gpus"] == "4,5,6"
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--nproc-per-node", "auto"],
                     {"CUDA_VISIBLE_DEVICES": "4,5"})
    assert got["plan.processes_per_machine"] == "2"
    _, r = dry_run(xlaunch_bin, tmp_path, ["--nproc-per-node", "gpu"],
                   {"CUDA_VISIBLE_DEVICES": ""}, expect=2)
    assert "--nproc_per_node gpu: no GPU is visible" in r.stderr
    assert "GPUs found: none" in r.stderr


@pytest.mark.parametrize("args,env,message", [
    (["--num_processes", "2", "--nproc_per_node", "3"], {},
     "num_processes 2 and nproc_per_node 3 contradict each other"),
    (["--multi_gpu", "--cpu"], {}, "--multi_gpu and --cpu/--use_cpu contradict each other"),
    (["--distributed_type", "NO", "--num_processes", "2"], {},
     "distributed_type NO (from the command line) runs one process, but 2 processes"),
    (["--multi_gpu", "--num_processes", "2"], {"CUDA_VISIBLE_DEVICES": ""},
     "distributed_type MULTI_GPU (from the command line) runs one worker per GPU, but no GPU is "
     "visible"),
    (["--rdzv_conf", "join_timeout=5,bogus=1"], {}, "flag --rdzv_conf: bad value"),
    (["--rdzv_endpoint", "192.0.2.1:29400", "--nnodes", "2"], {},
     "this launcher does not host the store"),
    (["--start_method", "thread"], {}, "--start_method: bad value 'thread'"),
])
def test_contradictions_and_bad_torchrun_values_are_exit_2(xlaunch_bin, tmp_path, args, env,
                                                           message):
    _, r = dry_run(xlaunch_bin, tmp_path, args, env, expect=2)
    assert message in r.stderr
    assert r.stdout == ""


def test_distributed_type_no_from_the_file_with_two_processes_names_both(xlaunch_bin, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("distributed_type: 'NO'\nnum_processes: 1\n")
    _, r = dry_run(xlaunch_bin, tmp_path, ["--config_file", str(cfg), "--num_processes", "2"],
                   expect=2)
    assert f"distributed_type NO (from config file {cfg})" in r.stderr
    assert "(from the command line)" in r.stderr


def test_unknown_config_key_is_exit_2_with_line_and_suggestion(xlaunch_bin, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("num_processes: 2\nfsdp_config: {}\nmixed_precison: fp16\n")
    _, r = dry_run(xlaunch_bin, tmp_path, ["--config_file", str(cfg)], expect=2)
    assert f"{cfg}:3:1: unknown key 'mixed_precison' (did you mean 'mixed_precision'?)" in r.stderr
    assert "fsdp_config" not in r.stderr.split("hint:")[0].split("problem")[1]


def test_misspelt_xlaunch_variable_warns_with_a_suggestion(xlaunch_bin, tmp_path):
    got, r = dry_run(xlaunch_bin, tmp_path, [], {"XLAUNCH_MAX_RESTART": "3"})
    assert ("XLAUNCH_MAX_RESTART is not an xlaunch variable; it has no effect (did you mean "
            "XLAUNCH_MAX_RESTARTS?)") in r.stderr
    assert got["plan.max_restarts"] == "0"


def test_a_second_value_before_the_script_says_what_happened(xlaunch_bin, tmp_path):
    (tmp_path / "train.py").write_text("print('hi')\n")
    for args, text, hint in [
            (["--gpu_ids", "6", "7", "train.py"], "'7' stands where the program goes (the "
             "program seems to be 'train.py')", "--gpu_ids 6,7 train.py"),
            (["--use_cpu", "false", "train.py"], "'false' stands where the program goes",
             "--use_cpu=false")]:
        r = subprocess.run([xlaunch_bin, "launch", *args], capture_output=True, text=True,
                           env=isolated_env(tmp_path), cwd=tmp_path, timeout=60)
        assert r.returncode == 2, r.stderr
        assert text in r.stderr
        assert hint in r.stderr


def test_use_cpu_takes_true_and_false(xlaunch_bin, tmp_path):
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--use_cpu=false"], {"CUDA_VISIBLE_DEVICES": "3"})
    assert got["plan.gpus"] == "3"
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--use_cpu=true"], {"CUDA_VISIBLE_DEVICES": "3"})
    assert got["plan.gpus"] == "none (CPU workers)"


def test_help_shows_types_and_program(xlaunch_bin):
    r = subprocess.run([xlaunch_bin, "launch", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0
    assert "Usage: xlaunch launch [OPTIONS] PROGRAM [ARGS...]" in r.stdout
    assert "{true}" not in r.stdout
    assert "--max_restarts,--max-restarts INT" in r.stdout
    assert "--rdzv_timeout,--rdzv-timeout FLOAT" in r.stdout
    assert "--nproc_per_node,--nproc-per-node N|auto|gpu|cpu" in r.stdout
    r = subprocess.run([xlaunch_bin, "config", "show", "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0
    assert "{true}" not in r.stdout
    assert "--max_restarts INT" in r.stdout
    assert "--term_timeout FLOAT" in r.stdout


def test_workers_get_nccl_async_error_handling_role_and_virtual_local_rank(xlaunch_bin,
                                                                          tmp_path):
    env = isolated_env(tmp_path, OUT_DIR=str(tmp_path), CUDA_VISIBLE_DEVICES="4,6")
    r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable, "--nproc-per-node",
                        "2", "--role", "trainer", "--virtual-local-rank",
                        str(WORKERS / "report_env.py")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"xlaunch: command: {sys.executable} -u {WORKERS / 'report_env.py'}" in r.stderr
    seen = {}
    for rank in (0, 1):
        e = json.loads((tmp_path / f"rank_{rank}.json").read_text())["env"]
        assert e["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
        assert e["NCCL_ASYNC_ERROR_HANDLING"] == "1"
        assert e["ROLE_NAME"] == "trainer"
        assert e["LOCAL_RANK"] == "0"
        seen[rank] = e["CUDA_VISIBLE_DEVICES"]
    assert seen == {0: "4", 1: "6"}
    # A value the user set is kept.
    env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
    env["CUDA_VISIBLE_DEVICES"] = "4"
    r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable,
                        str(WORKERS / "report_env.py")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: the worker finished successfully" in r.stderr
    e = json.loads((tmp_path / "rank_0.json").read_text())["env"]
    assert e["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "0"


def test_rdzv_endpoint_on_this_machine_hosts_and_a_second_launcher_joins(xlaunch_bin,
                                                                        tmp_path):
    port = free_port()
    env = isolated_env(tmp_path, OUT_DIR=str(tmp_path))
    common = [xlaunch_bin, "launch", "--python", sys.executable, "--nnodes", "2",
              "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
              f"127.0.0.1:{port}", "--rdzv-id", "dropin", "--rdzv-conf", "join_timeout=120"]
    host = subprocess.Popen(common + [str(WORKERS / "report_env.py")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    joiner = subprocess.Popen(common[:2] + ["--node-rank", "1"] + common[2:] +
                              [str(WORKERS / "report_env.py")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out_host, err_host = host.communicate(timeout=180)
        out_join, err_join = joiner.communicate(timeout=180)
    finally:
        for p in (host, joiner):
            if p.poll() is None:
                p.kill()
    assert host.returncode == 0, err_host
    assert joiner.returncode == 0, err_join
    for rank in (0, 1):
        e = json.loads((tmp_path / f"rank_{rank}.json").read_text())["env"]
        assert e["WORLD_SIZE"] == "2"
        assert e["MASTER_PORT"] == str(port)
        assert e["TORCHELASTIC_RUN_ID"] == "dropin"
        assert e["GROUP_RANK"] == str(rank)


RECORDING_WORKER = """\
from torch.distributed.elastic.multiprocessing.errors import record

@record
def main():
    raise ValueError("bad batch 7")

main()
"""


def test_error_file_is_shown_as_a_readable_traceback(xlaunch_bin, tmp_path, torch_python):
    (tmp_path / "fail.py").write_text(RECORDING_WORKER)
    r = subprocess.run([xlaunch_bin, "launch", "--python", torch_python, "fail.py"],
                       capture_output=True, text=True, env=isolated_env(tmp_path), cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 1, r.stderr
    report = r.stderr[r.stderr.index("wrote its error file"):]
    assert "xlaunch:   | Traceback (most recent call last):" in report
    assert "xlaunch:   | ValueError: bad batch 7" in report
    assert "py_callstack" not in report


def test_env_reports_the_python_and_its_torch(xlaunch_bin, tmp_path, torch_python):
    r = subprocess.run([xlaunch_bin, "env"], capture_output=True, text=True,
                       env=isolated_env(tmp_path, XLAUNCH_PYTHON=torch_python), timeout=120)
    assert r.returncode == 0, r.stderr
    version = subprocess.run([torch_python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, timeout=120).stdout.strip()
    assert f"Python for .py:        {os.path.realpath(torch_python)}" in r.stdout or \
        f"Python for .py:        {torch_python}" in r.stdout
    assert f"  torch:               {version}" in r.stdout
    assert "  accelerate:" in r.stdout


def test_launch_only_flags_are_refused_by_xlaunch_test(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "test", "--dry_run"], capture_output=True, text=True,
                       env=isolated_env(tmp_path), timeout=60)
    assert r.returncode == 2
    assert "--dry_run belongs to 'xlaunch launch'" in r.stderr


def test_a_warning_to_a_closed_stderr_does_not_end_the_launch(xlaunch_bin, tmp_path):
    (tmp_path / "ok.py").write_text("open('ran', 'w').write('yes')\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads stderr: a write raises SIGPIPE unless it is ignored
    try:
        r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable, "ok.py"],
                           stdout=subprocess.DEVNULL, stderr=write_end, cwd=tmp_path,
                           env=isolated_env(tmp_path, XLAUNCH_NUM_PROCESSS="2"), timeout=60)
    finally:
        os.close(write_end)
    assert r.returncode == 0
    assert (tmp_path / "ran").read_text() == "yes"
