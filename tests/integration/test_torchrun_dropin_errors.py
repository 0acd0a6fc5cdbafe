"""Command lines `xlaunch launch` refuses, as torchrun and accelerate users write them:
contradictions, bad values, unknown keys and misspelt variables are exit 2 with a message
that names the culprit and what to do (through `--dry_run`, which starts nothing).
"""
import subprocess

import pytest

from config_helpers import dry_run, isolated_env


@pytest.mark.parametrize("args,env,message", [
    (["--num_processes", "2", "--nproc_per_node", "3"], {},
     "num_processes 2 and nproc_per_node 3 contradict each other"),
    (["--multi_gpu", "--cpu"], {}, "--multi_gpu and --cpu/--use_cpu contradict each other"),
    (["--distributed_type", "NO", "--num_processes", "2"], {},
     "distributed_type NO (from the command line) runs one process, but 2 processes"),
    (["--multi_gpu", "--num_processes", "2"], {"CUDA_VISIBLE_DEVICES": ""},
     "distributed_type MULTI_GPU (from the command line) runs one worker per GPU, but no GPU is "
     "visible"),
    (["--rdzv_conf", "join_timeout=5,protocol=https,cacert=/ca.pem"], {},
     "flag --rdzv_conf: bad value 'join_timeout=5,protocol=https,cacert=/ca.pem': protocol: etcd "
     "over TLS is not supported"),
    (["--rdzv_endpoint", "192.0.2.1:29400", "--nnodes", "2"], {},
     "this launcher does not host the store"),
    (["--start_method", "thread"], {}, "--start_method: bad value 'thread'"),
    # torchrun checks PET_<FLAG> as its flag: argparse converts a variable's default too.
    ([], {"PET_MONITOR_INTERVAL": "abc"},
     "environment variable PET_MONITOR_INTERVAL: bad value 'abc' (allowed: seconds > 0)"),
    ([], {"PET_START_METHOD": "thread"}, "environment variable PET_START_METHOD: bad value"),
    # Port 0 is a free port of the host: the other machines could never find it.
    (["--rdzv_endpoint", "localhost:0", "--nnodes", "2"], {},
     "--rdzv_endpoint localhost:0: port 0 is a free port chosen by the machine that hosts the "
     "store, which the other machines of a 2-machine job cannot know"),
    (["--nnodes", "1:3"], {"PET_RDZV_ENDPOINT": "localhost:0"},
     "PET_RDZV_ENDPOINT localhost:0: port 0"),
    # The same for --master_port 0, which was quietly replaced by 29500.
    (["--nnodes", "2", "--node_rank", "0", "--master_addr", "127.0.0.1", "--master_port", "0"],
     {}, "--main_process_port (--master_port) 0 is a free port chosen by machine 0, which the "
     "other machines of a 2-machine job cannot know"),
    # The variable that gave a machine rank is named, not only the flag it stands for.
    ([], {"PET_NNODES": "2", "PET_NODE_RANK": "5"},
     "--machine_rank 5 (from PET_NODE_RANK) is out of range for --num_machines 2 (from "
     "PET_NNODES)"),
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


def test_launch_only_flags_are_refused_by_xlaunch_test(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "test", "--dry_run"], capture_output=True, text=True,
                       env=isolated_env(tmp_path), timeout=60)
    assert r.returncode == 2
    assert "--dry_run belongs to 'xlaunch launch'" in r.stderr
