"""`xlaunch config default`, `xlaunch config show`, and errors in config files."""
import os
import subprocess

from config_helpers import isolated_env


def run(xlaunch_bin, tmp_path, *args, env=None):
    return subprocess.run([xlaunch_bin, *args], capture_output=True, text=True,
                          env=env or isolated_env(tmp_path), timeout=30)


def test_config_default_writes_without_questions(xlaunch_bin, tmp_path):
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1,2")
    r = run(xlaunch_bin, tmp_path, "config", "default", "--mixed_precision", "bf16", env=env)
    assert r.returncode == 0, r.stderr
    path = tmp_path / ".config/xlaunch/default_config.yaml"
    text = path.read_text()
    assert "distributed_type: MULTI_GPU" in text
    assert "num_processes: 3" in text
    assert "mixed_precision: bf16" in text
    # A second run does not overwrite without --force.
    again = run(xlaunch_bin, tmp_path, "config", "default", env=env)
    assert again.returncode == 2
    assert "already exists" in again.stderr
    assert path.read_text() == text
    forced = run(xlaunch_bin, tmp_path, "config", "default", "--force", env=env)
    assert forced.returncode == 0
    assert "mixed_precision: 'no'" in path.read_text()


def test_config_default_honours_xlaunch_config_file(xlaunch_bin, tmp_path):
    target = tmp_path / "elsewhere" / "c.yaml"
    env = isolated_env(tmp_path, XLAUNCH_CONFIG_FILE=str(target))
    assert run(xlaunch_bin, tmp_path, "config", "default", env=env).returncode == 0
    assert target.exists()


def test_config_default_rejects_a_bad_flag_value(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "config", "default", "--mixed_precision", "fp64")
    assert r.returncode == 2
    assert "flag --mixed_precision: bad value 'fp64' (allowed: no, fp16, bf16, fp8)" in r.stderr


def test_config_show_names_where_each_value_came_from(xlaunch_bin, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("num_processes: 2\nmixed_precision: fp16\nlog_dir: /logs\n"
                   "deepspeed_config:\n  zero_stage: 2\n")
    env = isolated_env(tmp_path, XLAUNCH_MIXED_PRECISION="bf16")
    r = run(xlaunch_bin, tmp_path, "config", "show", "--config_file", str(cfg),
            "--num_processes", "8", env=env)
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()[3:] if line}
    assert rows["num_processes"] == ["8", "flag", "--num_processes"]
    assert rows["mixed_precision"] == ["bf16", "environment", "XLAUNCH_MIXED_PRECISION"]
    assert rows["log_dir"] == ["/logs", "file"]
    assert rows["gpu_ids"][0] == "-"
    assert f"config file: {cfg}" in r.stdout
    assert "deepspeed_config" not in r.stderr  # read now: accelerate's environment contract


def test_bad_environment_value_is_exit_2_naming_the_variable(xlaunch_bin, tmp_path):
    env = isolated_env(tmp_path, XLAUNCH_NUM_PROCESSES="many")
    r = run(xlaunch_bin, tmp_path, "config", "show", env=env)
    assert r.returncode == 2
    assert "environment variable XLAUNCH_NUM_PROCESSES: bad value 'many'" in r.stderr


def test_malformed_file_is_exit_2_with_file_and_line(xlaunch_bin, tmp_path):
    cfg = tmp_path / "broken.yaml"
    cfg.write_text("num_processes: 2\nmixed_precision: [fp16\n")
    r = run(xlaunch_bin, tmp_path, "config", "show", "--config_file", str(cfg))
    assert r.returncode == 2
    assert f"{cfg}:" in r.stderr
    assert "malformed YAML" in r.stderr


def test_every_bad_value_is_reported_at_once(xlaunch_bin, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("num_processes: zero\nmixed_precision: fp32\ndistributed_type: TPU\n")
    r = run(xlaunch_bin, tmp_path, "config", "show", "--config_file", str(cfg))
    assert r.returncode == 2
    assert "(3 problems)" in r.stderr
    assert f"{cfg}:1:16: key 'num_processes': bad value 'zero' (allowed: an integer >= 1)" in r.stderr
    assert f"{cfg}:2:18: key 'mixed_precision': bad value 'fp32' (allowed: no, fp16, bf16, fp8)" in r.stderr
    assert f"{cfg}:3:19: key 'distributed_type': bad value 'TPU'" in r.stderr


def test_missing_config_file_is_exit_2(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, tmp_path, "config", "show", "--config_file", str(tmp_path / "no.yaml"))
    assert r.returncode == 2
    assert "does not exist" in r.stderr


def test_a_config_file_that_never_ends_is_refused_and_a_pipe_is_read(xlaunch_bin, tmp_path):
    # /dev/zero grew the launcher until memory ran out; a pipe (`<(...)`) must still work.
    r = run(xlaunch_bin, tmp_path, "launch", "--dry_run", "--config_file", "/dev/zero",
            "--no_python", "/bin/true")
    assert r.returncode == 2, r.stderr
    assert "cannot read config file /dev/zero: more than 4 MiB" in r.stderr
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf 'num_processes: 3\\n' > {fifo}"])
    r = run(xlaunch_bin, tmp_path, "launch", "--dry_run", "--config_file", str(fifo),
            "--no_python", "/bin/true")
    writer.wait(timeout=30)
    assert r.returncode == 0, r.stderr
    assert "plan.world_size: 3" in r.stdout


def test_a_default_config_that_is_a_fifo_is_refused_not_waited_on(xlaunch_bin, tmp_path):
    # A FIFO left where the default config lives would wait for a writer at every launch.
    folder = tmp_path / ".config/xlaunch"
    folder.mkdir(parents=True)
    fifo = folder / "default_config.yaml"
    os.mkfifo(fifo)
    for args in (("config", "show"), ("launch", "--nproc_per_node", "1", "--no_python", "true")):
        r = run(xlaunch_bin, tmp_path, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert (f"config file {fifo} is not a plain file (the default config file: a FIFO)"
                in r.stderr), r.stderr
    # Written over, it would be replaced: the wizard and `config default` refuse it first.
    for args in (("config", "default", "--force"), ("config",)):
        r = subprocess.run([xlaunch_bin, *args], input="\n" * 20, capture_output=True,
                           text=True, env=isolated_env(tmp_path), timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert f"{fifo} is not a plain file" in r.stderr, r.stderr
        assert fifo.is_fifo()


def test_nproc_per_node_cpu_meets_the_checks_a_number_meets(xlaunch_bin, tmp_path):
    cpus = os.cpu_count()
    assert cpus >= 2  # the CI machines have 2
    launch = ("launch", "--dry_run", "--no_python", "true")
    # One process for NO, however the count is spelled.
    r = run(xlaunch_bin, tmp_path, *launch[:2], "--distributed_type", "NO", "--nproc_per_node",
            "cpu", *launch[2:])
    assert r.returncode == 2, r.stdout
    assert (f"distributed_type NO (from the command line) runs one process, but nproc_per_node "
            f"cpu is {cpus} processes here") in r.stderr, r.stderr
    # A total and a per-machine count from one file must agree, counted or not.
    bad = tmp_path / "b.yaml"
    bad.write_text("distributed_type: MULTI_CPU\nuse_cpu: true\nnum_processes: "
                   f"{cpus + 1}\nnproc_per_node: cpu\n")
    r = run(xlaunch_bin, tmp_path, *launch[:2], "--config_file", str(bad), *launch[2:])
    assert r.returncode == 2, r.stdout
    assert f"num_processes {cpus + 1} and nproc_per_node cpu contradict each other" in r.stderr
    # `config default --nproc_per_node cpu` writes a file that launches one worker per CPU.
    written = tmp_path / "c.yaml"
    r = run(xlaunch_bin, tmp_path, "config", "default", "--config_file", str(written),
            "--nproc_per_node", "cpu")
    assert r.returncode == 0, r.stderr
    text = written.read_text()
    assert "distributed_type: MULTI_CPU" in text and "num_processes" not in text, text
    r = run(xlaunch_bin, tmp_path, *launch[:2], "--config_file", str(written), *launch[2:])
    assert r.returncode == 0, r.stderr
    assert f"plan.world_size: {cpus}" in r.stdout, r.stdout
