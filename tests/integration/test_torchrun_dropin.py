"""torchrun's command lines under `xlaunch launch`: every flag in both spellings, PET_*
variables, and a differential test against torch 1.13's own argument parser.

The hook is `xlaunch launch --dry_run`: it prints the merged settings, this machine's plan
("plan.x: value") and the worker command, and starts nothing. Values it refuses:
test_torchrun_dropin_errors.py; what workers and a second launcher see:
test_torchrun_dropin_workers.py.
"""
import json
import subprocess
import sys

import pytest

from config_helpers import dry_run, isolated_env
from fake_nvml_helpers import build_fake_nvml, fake_env, write_script

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
    # run.py's docstring, single node: port 0 is a free one (what --standalone means).
    (["--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "--nnodes=1"], {}),
    # argparse: a flag given twice takes its last value.
    (["--nproc_per_node", "2", "--nproc_per_node", "3", "--max_restarts=1", "--max_restarts=2"],
     {}),
    # An empty value right before the script (--rdzv_id=$UNSET): the script stays the script.
    (["--nproc_per_node", "2", "--log_dir=", "--rdzv_id=", "--role="], {}),
    # argparse's abbreviations (a unique beginning of a flag's name).
    (["--nproc", "2", "--max_res=1", "--rdzv_i", "ab", "--master_p", "29555"], {}),
]


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
        # An empty --role= counts as not given (torchrun passes ROLE_NAME="" on).
        assert got["plan.role"] == (want["role"] or "default"), where
        assert got["command"].endswith("train.py --lr 1"), where
        assert want["script_args"] == ["--lr", "1"], where
        if want["rdzv_id"] not in ("none", ""):  # torchrun's "none" is no id; xlaunch makes one
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
    assert got["plan.forwarded_signals"] == "SIGUSR1"  # forwarded to the workers
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


def test_a_flag_given_twice_takes_its_last_value_as_argparse_does(xlaunch_bin, tmp_path):
    # Wrapper scripts: "$COMMON --nproc_per_node 8" overrides the value inside $COMMON.
    got, r = dry_run(xlaunch_bin, tmp_path, ["--nproc_per_node", "2", "--nproc_per_node", "3",
                                             "--max-restarts", "1", "--max_restarts", "4"])
    assert got["plan.processes_per_machine"] == "3"
    assert got["plan.max_restarts"] == "4"
    assert "At Most" not in r.stderr
    # Two spellings of one flag are one flag: the last wins too.
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--nnodes", "1", "--num_machines", "2",
                                             "--node_rank", "1", "--master_addr", "h"])
    assert got["plan.machines"] == "2"
    got, _ = dry_run(xlaunch_bin, tmp_path, ["--num_machines", "2", "--nnodes", "1"])
    assert got["plan.machines"] == "1"
    # accelerate's own flags as well (they reach the workers, not --dry_run's output).
    r = subprocess.run([xlaunch_bin, "launch", "--dynamo_backend", "eager", "--dynamo-backend",
                        "inductor", "--no_python", "/bin/sh", "-c", "env | grep DYNAMO_BACKEND"],
                       capture_output=True, text=True, env=isolated_env(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "ACCELERATE_DYNAMO_BACKEND=INDUCTOR" in r.stdout


def test_repeated_flags_in_config_default_take_the_last(xlaunch_bin, tmp_path):
    target = tmp_path / "c.yaml"
    r = subprocess.run([xlaunch_bin, "config", "default", "--config_file", str(tmp_path / "x"),
                        "--config_file", str(target), "--mixed_precision", "fp16",
                        "--mixed_precision", "bf16"], capture_output=True, text=True,
                       env=isolated_env(tmp_path), timeout=30)
    assert r.returncode == 0, r.stderr
    assert "mixed_precision: bf16" in target.read_text()
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("args,env", [
    # torch/distributed/run.py's docstring: the single-node command (what --standalone means).
    (["--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", "--nnodes=1"], {}),
    (["--rdzv_endpoint", "localhost:0", "--nnodes", "1:1"], {}),
    ([], {"PET_RDZV_ENDPOINT": "localhost:0", "PET_RDZV_BACKEND": "c10d"}),
])
def test_rdzv_endpoint_port_0_on_one_machine_takes_a_free_port(xlaunch_bin, tmp_path, args,
                                                               env):
    (tmp_path / "show.sh").write_text(
        "#!/bin/sh\necho \"MA=$MASTER_ADDR MP=$MASTER_PORT WS=$WORLD_SIZE\" "
        "> \"$OUT/$RANK\"\n")
    (tmp_path / "show.sh").chmod(0o755)
    r = subprocess.run([xlaunch_bin, "launch", *args, "--nproc_per_node=2", "--no_python",
                        str(tmp_path / "show.sh")], capture_output=True, text=True,
                       env=isolated_env(tmp_path, OUT=str(tmp_path), **env), timeout=60)
    assert r.returncode == 0, r.stderr
    seen = {(tmp_path / str(rank)).read_text().split()[i] for rank in (0, 1) for i in (0, 1)}
    ports = [int(item[3:]) for item in seen if item.startswith("MP=")]
    assert len(ports) == 1 and ports[0] > 0, seen  # one real port, the same for both ranks
    assert "MA=localhost" in seen


def test_python_exec_picks_the_interpreter_as_in_torchrun(xlaunch_bin, tmp_path):
    # torchrun runs its workers under $PYTHON_EXEC (run.py); --python and XLAUNCH_PYTHON win.
    (tmp_path / "train.py").write_text("print('hi')\n")
    venv_python = tmp_path / "python"
    venv_python.symlink_to(sys.executable)

    def command(args, env):
        r = subprocess.run([xlaunch_bin, "launch", "--dry_run", *args, "train.py"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60,
                           env=isolated_env(tmp_path, PYTHON_EXEC=str(venv_python), **env))
        assert r.returncode == 0, r.stderr
        return next(l for l in r.stdout.splitlines() if l.startswith("command: "))

    assert command([], {}) == f"command: {venv_python} -u train.py"
    assert command(["--python", "/usr/bin/python3"], {}) == "command: /usr/bin/python3 -u train.py"
    assert command([], {"XLAUNCH_PYTHON": "/usr/bin/python3"}) == \
        "command: /usr/bin/python3 -u train.py"


def test_an_xlaunch_installed_in_an_environment_runs_that_environments_python(xlaunch_bin,
                                                                            tmp_path):
    # torchrun and accelerate run workers with the Python they were installed in; pip puts
    # xlaunch beside that python3, in a virtual (or conda) environment's bin folder.
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    installed = venv / "bin" / "xlaunch"
    installed.symlink_to(xlaunch_bin)  # as invoked: links are not followed
    (tmp_path / "who.py").write_text("import sys\nprint('ran', sys.executable)\n")
    r = subprocess.run([str(installed), "launch", "--num_processes", "1", "who.py"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120,
                       env=isolated_env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert f"ran {venv}/bin/python3" in r.stdout, r.stdout + r.stderr

    def command(invoked, path, args=()):
        r = subprocess.run([invoked, "launch", "--dry_run", *args, "who.py"], capture_output=True,
                           text=True, cwd=tmp_path, timeout=60, env=isolated_env(tmp_path, PATH=path))
        assert r.returncode == 0, r.stderr
        return next(l for l in r.stdout.splitlines() if l.startswith("command: "))

    # Found on PATH after /usr/bin, whose python3 PATH would give; a flag still names another.
    path = f"/usr/bin:/bin:{venv}/bin"
    assert command("xlaunch", path) == f"command: {venv}/bin/python3 -u who.py"
    assert command("xlaunch", path, ["--python", "/bin/python3"]) == \
        "command: /bin/python3 -u who.py"
    # Not an environment's bin folder: python3 on PATH, as before. A link there into an
    # environment (pipx's) does not count: that environment is xlaunch's own, without torch.
    plain = tmp_path / "bin"
    plain.mkdir()
    (plain / "xlaunch").symlink_to(installed)
    assert command("xlaunch", f"/usr/bin:/bin:{plain}") == "command: /usr/bin/python3 -u who.py"
    assert command(str(plain / "xlaunch"), "/usr/bin:/bin") == \
        "command: /usr/bin/python3 -u who.py"


def test_rdzv_conf_keys_xlaunch_does_not_read_are_ignored_with_a_note(xlaunch_bin, tmp_path):
    # torchrun's backends read the keys they know and ignore the rest; refusing them (exit 2)
    # broke command lines written for torchrun 2.x (store_type, use_libuv, keep_alive_*).
    got, r = dry_run(xlaunch_bin, tmp_path, [
        "--rdzv_conf", "join_timeout=50,store_type=tcp,use_libuv=0,keep_alive_interval=5"])
    assert got["rdzv_timeout"] == "50"
    assert ("xlaunch: note: flag --rdzv_conf: ignored store_type=tcp, use_libuv=0, "
            "keep_alive_interval=5") in r.stderr
    _, r = dry_run(xlaunch_bin, tmp_path, [], {"PET_RDZV_CONF": "bogus=1"})
    assert "environment variable PET_RDZV_CONF: ignored bogus=1" in r.stderr


def test_a_torchrun_command_line_keeps_one_worker_per_machine_on_a_gpu_machine(xlaunch_bin,
                                                                              tmp_path):
    # torchrun's --nproc_per_node defaults to 1; xlaunch's own default is one per GPU. On two
    # (fake) GPUs, `--standalone train.py` ran two copies of what torchrun runs once.
    lib = build_fake_nvml(tmp_path)
    write_script(tmp_path / "gpus", [0, 0], tmp_path)
    gpus = fake_env(lib, tmp_path / "gpus")

    def per_machine(args, env=None):
        got, _ = dry_run(xlaunch_bin, tmp_path, args, {**gpus, **(env or {})})
        return got["plan.processes_per_machine"]

    assert per_machine([]) == "2"  # xlaunch's and accelerate's: one per GPU
    assert per_machine(["--standalone"]) == "1"
    assert per_machine(["--nnodes", "1", "--master-port", "29555"]) == "1"
    assert per_machine(["--log_dir", str(tmp_path / "logs")]) == "2"  # xlaunch's own too
    assert per_machine([], {"PET_NNODES": "1"}) == "1"  # as Kubeflow's PyTorchJob sets up
    assert per_machine(["--standalone", "--nproc_per_node", "gpu"]) == "2"
    assert per_machine(["--standalone"], {"XLAUNCH_NUM_PROCESSES": "2"}) == "2"
