"""A first run that cannot go wrong: on a machine without a GPU the config the wizard or
`config default` writes launches; a config `launch` refuses names its file and line; the
small things a first run meets (a mistyped program path, `xlaunch test`'s table, `xlaunch
report logs/<id>/`, `--no_python true`).
"""
import subprocess
import sys

from config_helpers import isolated_env


def run(xlaunch_bin, tmp_path, *args, stdin=None, env=None, timeout=120):
    return subprocess.run([xlaunch_bin, *map(str, args)], input=stdin, capture_output=True,
                          text=True, env=env or isolated_env(tmp_path), timeout=timeout,
                          cwd=tmp_path)


def default_file(tmp_path):
    return tmp_path / ".config" / "xlaunch" / "default_config.yaml"


def launch_the_default_config(xlaunch_bin, tmp_path):
    program = tmp_path / "hello.py"
    program.write_text("import os\nprint('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'])\n")
    return run(xlaunch_bin, tmp_path, "launch", "--python", sys.executable, program)


def test_wizard_without_a_gpu_offers_cpu_types_and_its_file_launches(xlaunch_bin, tmp_path):
    # where: this machine; type: DDP is no choice here (asked again), then MULTI_CPU by
    # number; processes: 2; precision and logs: defaults.
    r = run(xlaunch_bin, tmp_path, "config", stdin="\nDDP\n2\n2\n\n\n")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "This machine has no GPU that xlaunch can see." in r.stdout
    assert "DDP and DP need GPUs" in r.stdout
    assert "'DDP' is not one of the choices: answer 1-2 or a name" in r.stdout
    text = default_file(tmp_path).read_text()
    assert "distributed_type: MULTI_CPU" in text and "num_processes: 2" in text
    launched = launch_the_default_config(xlaunch_bin, tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert "rank 1 of 2" in launched.stdout


def test_config_default_with_two_processes_and_no_gpu_writes_a_file_that_launches(
        xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "config", "default", "--force", "--num_processes", 2)
    assert r.returncode == 0, r.stderr
    text = default_file(tmp_path).read_text()
    assert "distributed_type: MULTI_CPU" in text and "num_processes: 2" in text
    launched = launch_the_default_config(xlaunch_bin, tmp_path)
    assert launched.returncode == 0, launched.stderr


def test_config_default_does_not_write_what_cannot_launch_here(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "config", "default", "--distributed_type", "MULTI_GPU")
    assert r.returncode == 2
    assert f"{default_file(tmp_path)} was not written" in r.stderr
    assert "no GPU is visible" in r.stderr
    assert not default_file(tmp_path).exists()


def test_multi_gpu_from_a_file_without_a_gpu_names_the_file_and_line(xlaunch_bin, tmp_path):
    cfg = tmp_path / "gpus.yaml"
    cfg.write_text("num_processes: 2\ndistributed_type: MULTI_GPU\n")
    r = run(xlaunch_bin, tmp_path, "launch", "--config_file", cfg, "/bin/true")
    assert r.returncode == 2
    assert f"distributed_type MULTI_GPU (from {cfg}:2:19) runs one worker per GPU, but no GPU " \
           f"is visible" in r.stderr
    flag = run(xlaunch_bin, tmp_path, "launch", "--multi_gpu", "--num_processes", 2, "/bin/true")
    assert "distributed_type MULTI_GPU (from the command line)" in flag.stderr
    env = run(xlaunch_bin, tmp_path, "launch", "--num_processes", 2, "/bin/true",
              env=isolated_env(tmp_path, XLAUNCH_DISTRIBUTED_TYPE="MULTI_GPU"))
    assert "distributed_type MULTI_GPU (from XLAUNCH_DISTRIBUTED_TYPE)" in env.stderr


def test_a_mistyped_path_is_told_to_check_the_path(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "launch", "--no_python", "./build/trian")
    assert r.returncode == 127
    assert "program './build/trian' not found" in r.stderr
    assert "check the path" in r.stderr and "such as ./train" not in r.stderr
    name = run(xlaunch_bin, tmp_path, "launch", "--no_python", "trian")
    assert "not found on PATH" in name.stderr and "give a path such as ./train" in name.stderr


def test_no_python_runs_a_program_named_like_a_value(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "launch", "--no_python", "true")
    assert r.returncode == 0, r.stderr
    assert "xlaunch: command: /" in r.stderr and "/true" in r.stderr
    # Without --no_python, a switch's separate value is still caught.
    trap = run(xlaunch_bin, tmp_path, "launch", "--use_cpu", "false", "train.py")
    assert trap.returncode == 2 and "--use_cpu=false" in trap.stderr


def test_xlaunch_test_prints_its_table_not_the_raw_result_lines(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "test", "--num_processes", 2, "--backend", "gloo", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "xlaunch test: PASS: 2/2 ranks here passed" in r.stdout
    assert "XLAUNCH_SELFTEST" not in r.stdout + r.stderr


def test_report_of_a_run_folder_with_a_trailing_slash(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, tmp_path, "launch", "--log_dir", logs, "--rdzv_id", "first", "/bin/true")
    assert r.returncode == 0, r.stderr
    report = run(xlaunch_bin, tmp_path, "report", "logs/first/")
    assert report.returncode == 0, report.stderr
    assert report.stdout == "logs/first/report.html\n"
