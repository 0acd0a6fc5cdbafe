"""accelerate's environment contract, end to end: real `xlaunch launch --config_file X` runs
(and accelerate command lines) whose workers report the environment they were given."""
import json
import pathlib
import subprocess

import pytest

from config_helpers import isolated_env

WORKER = pathlib.Path(__file__).resolve().parent / "workers" / "report_env.py"

FSDP_CONFIG = """\
compute_environment: LOCAL_MACHINE
debug: true
distributed_type: FSDP
downcast_bf16: 'no'
enable_cpu_affinity: false
fsdp_config:
  fsdp_activation_checkpointing: false
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_cpu_ram_efficient_loading: true
  fsdp_forward_prefetch: false
  fsdp_offload_params: true
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_sync_module_states: true
  fsdp_transformer_layer_cls_to_wrap: BertLayer
  fsdp_use_orig_params: true
  fsdp_version: 2
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
"""

DEEPSPEED_CONFIG = """\
compute_environment: LOCAL_MACHINE
deepspeed_config:
  gradient_accumulation_steps: 4
  gradient_clipping: 1.0
  offload_optimizer_device: cpu
  offload_param_device: none
  zero3_init_flag: false
  zero_stage: 2
distributed_type: DEEPSPEED
machine_rank: 0
mixed_precision: fp16
num_machines: 1
num_processes: 2
use_cpu: false
"""

DYNAMO_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
dynamo_config:
  dynamo_backend: INDUCTOR
  dynamo_mode: default
  dynamo_use_dynamic: true
  dynamo_use_fullgraph: false
mixed_precision: 'no'
num_machines: 1
num_processes: 2
"""

CPU_CONFIG = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_CPU
mixed_precision: 'no'
num_machines: 1
num_processes: 2
use_cpu: true
"""


def launch(xlaunch_bin, python, tmp_path, args, **env_extra):
    """Runs `xlaunch launch ARGS report_env.py`; returns (process, [env of rank 0, 1, ...])."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = isolated_env(tmp_path, OUT_DIR=str(out), HF_HOME=str(tmp_path / "hf"), **env_extra)
    for name in ("OMP_NUM_THREADS", "ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED"):
        env.pop(name, None)  # what the workers see must come from xlaunch
    r = subprocess.run([xlaunch_bin, "launch", "--python", python, *args, str(WORKER)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    ranks = sorted(out.glob("rank_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    return r, [json.loads(p.read_text())["env"] for p in ranks]


def config(tmp_path, text):
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(text)
    return str(path)


def test_fsdp_config_reaches_every_worker(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, FSDP_CONFIG)], CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "note" not in r.stderr, r.stderr  # every key of accelerate's file is understood
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_USE_FSDP"] == "true"
        assert env["FSDP_VERSION"] == "2"
        assert env["FSDP_OFFLOAD_PARAMS"] == "true"
        assert env["FSDP_AUTO_WRAP_POLICY"] == "TRANSFORMER_BASED_WRAP"
        assert env["FSDP_TRANSFORMER_CLS_TO_WRAP"] == "BertLayer"
        assert env["FSDP_BACKWARD_PREFETCH"] == "BACKWARD_PRE"
        assert env["FSDP_STATE_DICT_TYPE"] == "SHARDED_STATE_DICT"
        assert env["FSDP_SHARDING_STRATEGY"] == "FULL_SHARD"  # accelerate's default
        assert env["FSDP_RESHARD_AFTER_FORWARD"] == "true"
        assert env["FSDP_CPU_RAM_EFFICIENT_LOADING"] == "true"
        assert env["FSDP_SYNC_MODULE_STATES"] == "true"
        assert env["ACCELERATE_MIXED_PRECISION"] == "bf16"
        assert env["ACCELERATE_DEBUG_MODE"] == "true"
        assert env["ACCELERATE_DYNAMO_BACKEND"] == "NO"
        assert "ACCELERATE_CPU_AFFINITY" not in env
        assert "ACCELERATE_USE_DEEPSPEED" not in env
    # One GPU each, or both where no GPU can be probed (as in test_config_accelerate.py).
    assert sorted(env["CUDA_VISIBLE_DEVICES"] for env in envs) in (["6", "7"], ["6,7", "6,7"])


def test_config_show_lists_the_fsdp_arguments(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "config", "show", "--config_file",
                        config(tmp_path, FSDP_CONFIG)], capture_output=True, text=True,
                       env=isolated_env(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    assert "accelerate launch arguments" in r.stdout
    rows = dict(line.split(None, 1) for line in r.stdout.split("accelerate launch arguments")[1]
                .splitlines()[1:] if line.strip())
    assert rows["use_fsdp"] == "true"
    assert rows["fsdp_version"] == "2"
    assert rows["fsdp_transformer_layer_cls_to_wrap"] == "BertLayer"
    assert "FSDP" in r.stdout.split("accelerate launch arguments")[0]  # distributed_type


def test_fsdp_flags_override_the_file(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, FSDP_CONFIG), "--fsdp-version", "1",
                      "--fsdp_offload_params", "false", "--enable_cpu_affinity"],
                     CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    for env in envs:
        assert env["FSDP_VERSION"] == "1"
        assert env["FSDP_OFFLOAD_PARAMS"] == "false"
        assert env["FSDP_TRANSFORMER_CLS_TO_WRAP"] == "BertLayer"  # still the file's
        assert env["ACCELERATE_CPU_AFFINITY"] == "1"


def test_deepspeed_config_gives_deepspeeds_environment(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, DEEPSPEED_CONFIG)],
                     CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_USE_DEEPSPEED"] == "true"
        assert env["ACCELERATE_CONFIG_DS_FIELDS"] == (
            "gradient_accumulation_steps,gradient_clipping,offload_optimizer_device,"
            "offload_param_device,zero3_init_flag,zero_stage,mixed_precision")
        assert env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == "2"
        assert env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] == "4"
        assert env["ACCELERATE_GRADIENT_CLIPPING"] == "1.0"
        assert env["ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"] == "cpu"
        assert env["ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"] == "none"
        assert env["ACCELERATE_DEEPSPEED_ZERO3_INIT"] == "false"
        assert env["ACCELERATE_MIXED_PRECISION"] == "fp16"
        assert "ACCELERATE_USE_FSDP" not in env
        assert "ACCELERATE_DYNAMO_BACKEND" not in env  # accelerate's DeepSpeed path sets none
        assert env["WORLD_SIZE"] == "2"


def test_a_mixed_precision_flag_leaves_the_ds_fields(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, DEEPSPEED_CONFIG), "--mixed_precision",
                      "bf16"], CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 0, r.stdout + r.stderr
    for env in envs:
        assert env["ACCELERATE_MIXED_PRECISION"] == "bf16"
        assert env["ACCELERATE_CONFIG_DS_FIELDS"].endswith("zero_stage")  # no mixed_precision


def test_accelerate_deepspeed_command_line(xlaunch_bin, plain_python, tmp_path):
    """An `accelerate launch` command line, flags only, as accelerate's docs write it."""
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["-q", "--same_network", "--num_processes", "2", "--use_deepspeed",
                      "--zero_stage", "3", "--zero3_init_flag", "true",
                      "--gradient_accumulation_steps", "8", "--mixed_precision", "bf16"],
                     CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_USE_DEEPSPEED"] == "true"
        assert env["ACCELERATE_CONFIG_DS_FIELDS"] == ""  # no config file gave DeepSpeed keys
        assert env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == "3"
        assert env["ACCELERATE_DEEPSPEED_ZERO3_INIT"] == "true"
        assert env["ACCELERATE_GRADIENT_ACCUMULATION_STEPS"] == "8"


def test_launch_s_own_flags_alone_give_the_workers_what_they_give_beside_accelerate_s(
        xlaunch_bin, plain_python, tmp_path):
    """A command line of launch's own flags only leaves accelerate's ~190 flags undeclared
    (declaring them is most of reading a command line); the workers get what the same flags
    give beside one of accelerate's that changes nothing (-q, which declares them all)."""
    args = ["--num_processes", "2", "--mixed_precision", "bf16", "--multi_gpu"]
    envs = {}
    for name, extra in (("lean", []), ("full", ["-q"])):
        (tmp_path / name).mkdir()
        r, envs[name] = launch(xlaunch_bin, plain_python, tmp_path / name, [*extra, *args],
                               CUDA_VISIBLE_DEVICES="0,1")
        assert r.returncode == 0, r.stdout + r.stderr
        assert len(envs[name]) == 2
    accelerate = {name: [{k: v for k, v in env.items() if k.startswith("ACCELERATE_")}
                         for env in ranks] for name, ranks in envs.items()}
    assert accelerate["lean"] == accelerate["full"]
    assert all(env["ACCELERATE_MIXED_PRECISION"] == "bf16" for env in accelerate["lean"])


def test_dynamo_config_and_flags(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, DYNAMO_CONFIG), "--dynamo_mode",
                      "max-autotune", "--dynamo_use_fullgraph", "--num_cpu_threads_per_process",
                      "3"], CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "setting OMP_NUM_THREADS=1" not in r.stderr
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_DYNAMO_BACKEND"] == "INDUCTOR"
        assert env["ACCELERATE_DYNAMO_MODE"] == "max-autotune"
        assert env["ACCELERATE_DYNAMO_USE_FULLGRAPH"] == "True"
        assert env["ACCELERATE_DYNAMO_USE_DYNAMIC"] == "True"
        assert env["ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION"] == "False"
        assert env["OMP_NUM_THREADS"] == "3"


def test_use_cpu_hides_the_gpus(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, CPU_CONFIG)], CUDA_VISIBLE_DEVICES="0,1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_USE_CPU"] == "True"
        assert env["CUDA_VISIBLE_DEVICES"] == ""
        assert "ACCELERATE_USE_FSDP" not in env
        assert "KMP_AFFINITY" not in env  # two workers: no compact pinning onto the same cores


def test_cpu_flag_beats_the_files_fsdp(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, FSDP_CONFIG), "--cpu"],
                     CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    for env in envs:
        assert env["ACCELERATE_USE_CPU"] == "True"
        assert env["CUDA_VISIBLE_DEVICES"] == ""
        assert "ACCELERATE_USE_FSDP" not in env


def test_accelerates_default_config_when_no_xlaunch_config(xlaunch_bin, plain_python, tmp_path):
    hf = tmp_path / "hf"
    (hf / "accelerate").mkdir(parents=True)
    default = hf / "accelerate" / "default_config.yaml"
    default.write_text(FSDP_CONFIG)
    r, envs = launch(xlaunch_bin, plain_python, tmp_path, [], CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"using accelerate's default config {default}" in r.stderr
    run_line = [ln for ln in r.stderr.splitlines() if ln.startswith("xlaunch: run ")][0]
    assert f", config {default}" in run_line, run_line
    assert len(envs) == 2  # num_processes: 2 from accelerate's file
    assert all(env["ACCELERATE_USE_FSDP"] == "true" for env in envs)

    # An xlaunch config file, when there is one, wins; accelerate's is then not read.
    (tmp_path / ".config" / "xlaunch").mkdir(parents=True)
    (tmp_path / ".config" / "xlaunch" / "default_config.yaml").write_text("num_processes: 1\n")
    for old in (tmp_path / "out").iterdir():
        old.unlink()
    r, envs = launch(xlaunch_bin, plain_python, tmp_path, [], CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "accelerate's default config" not in r.stderr
    xlaunch_default = tmp_path / ".config" / "xlaunch" / "default_config.yaml"
    assert f", config {xlaunch_default}" in r.stderr
    assert len(envs) == 1 and "ACCELERATE_USE_FSDP" not in envs[0]


def run_bad(xlaunch_bin, tmp_path, args, **extra_env):
    env = isolated_env(tmp_path, HF_HOME=str(tmp_path / "hf"), **extra_env)
    (tmp_path / "train.py").write_text("raise SystemExit('the launch should have been refused')\n")
    return subprocess.run([xlaunch_bin, "launch", *args, "train.py"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)


def test_mistakes_are_exit_2_with_the_reason(xlaunch_bin, tmp_path):
    r = run_bad(xlaunch_bin, tmp_path, ["--multi_gpu", "--use_fsdp"])
    assert r.returncode == 2 and "--multi_gpu and --use_fsdp cannot be used together" in r.stderr
    r = run_bad(xlaunch_bin, tmp_path, ["--tpu"])
    assert r.returncode == 2 and "does not run on TPUs" in r.stderr
    r = run_bad(xlaunch_bin, tmp_path, ["--fsdp_version", "3"])
    assert r.returncode == 2 and "--fsdp_version: bad value '3'" in r.stderr
    # GPUs visible, so that the FSDP rule (not "no GPU for MULTI_GPU") is what refuses it.
    r = run_bad(xlaunch_bin, tmp_path, ["--use_fsdp", "--fsdp_sync_module_states", "false"],
                CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 2 and "fsdp_sync_module_states is false" in r.stderr
    bad = config(tmp_path, "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: three\n")
    r = run_bad(xlaunch_bin, tmp_path, ["--config_file", bad])
    assert r.returncode == 2
    assert f"{bad}:3:17: key 'fsdp_config.fsdp_version': bad value 'three'" in r.stderr


@pytest.mark.parametrize("flag", ["--use_fsdp=false", "--use_deepspeed=false",
                                  "--use_megatron_lm=false", "--multi_gpu=false"])
def test_a_paradigm_switch_set_false_is_off(xlaunch_bin, plain_python, tmp_path, flag):
    # `--use_fsdp=false` turned FSDP on: only the flag's presence was looked at.
    r, envs = launch(xlaunch_bin, plain_python, tmp_path, [flag, "--num_processes", "2", "--cpu"],
                     CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(envs) == 2
    for env in envs:
        assert "ACCELERATE_USE_FSDP" not in env, env
        assert "ACCELERATE_USE_DEEPSPEED" not in env, env
        assert env.get("ACCELERATE_USE_MEGATRON_LM", "false") == "false", env
        assert env["XLAUNCH_DISTRIBUTED_TYPE"] == "MULTI_CPU", env


# accelerate's own ND example (examples/torch_native_parallelism/configs/nd.yaml), with
# num_processes -1 as accelerate's ClusterConfig writes "not given": the flag gives it.
ND_CONFIG = """\
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: FSDP
fsdp_config:
  fsdp_activation_checkpointing: false
  fsdp_cpu_ram_efficient_loading: false
  fsdp_offload_params: false
  fsdp_reshard_after_forward: true
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_version: 2
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: -1
parallelism_config:
  parallelism_config_dp_replicate_size: 1
  parallelism_config_dp_shard_size: 1
  parallelism_config_tp_size: 1
  parallelism_config_cp_size: 2
rdzv_backend: static
same_network: true
use_cpu: false
"""


def test_parallelism_config_reaches_every_worker(xlaunch_bin, plain_python, tmp_path):
    r, envs = launch(xlaunch_bin, plain_python, tmp_path,
                     ["--config_file", config(tmp_path, ND_CONFIG), "--num_processes", "2",
                      "--parallelism_config_dp_shard_size", "1"],
                     CUDA_VISIBLE_DEVICES="6,7")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "num_processes -1 is accelerate's 'not given'" in r.stderr
    assert len(envs) == 2
    for env in envs:
        assert env["ACCELERATE_USE_FSDP"] == "true"
        assert env["ACCELERATE_USE_PARALLELISM_CONFIG"] == "true"
        assert env["PARALLELISM_CONFIG_CP_SIZE"] == "2"
        assert env["PARALLELISM_CONFIG_DP_SHARD_SIZE"] == "1"
        assert env["PARALLELISM_CONFIG_DP_REPLICATE_SIZE"] == "1"
        assert env["PARALLELISM_CONFIG_TP_SIZE"] == "1"
        assert env["PARALLELISM_CONFIG_CP_BACKEND"] == "torch"
        assert env["PARALLELISM_CONFIG_CP_COMM_STRATEGY"] == "allgather"
