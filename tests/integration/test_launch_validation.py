"""What `xlaunch launch` refuses before it starts anything, and what it leaves on disk."""
import json
import os
import resource
import sys

import pytest

from launch_helpers import WORKERS, launch

TRUE = "/bin/true"


def run(xlaunch_bin, args, tmp_path, env=None, **kwargs):
    """launch() with HOME in tmp_path, so no default config file of the machine is read."""
    return launch(xlaunch_bin, args, env={"HOME": str(tmp_path), **(env or {})}, timeout=60,
                  **kwargs)


def argv_worker(tmp_path):
    """A Python worker that writes its argv and WORLD_SIZE to $OUT_DIR/argv_<RANK>.json."""
    script = tmp_path / "argv_worker.py"
    script.write_text(
        "import json, os, sys\n"
        "path = os.path.join(os.environ['OUT_DIR'], f\"argv_{os.environ['RANK']}.json\")\n"
        "json.dump({'argv': sys.argv[1:], 'world': os.environ['WORLD_SIZE']}, open(path, 'w'))\n")
    return script


# --- run ids -------------------------------------------------------------------------------

@pytest.mark.parametrize("source", ["flag", "env", "file"])
def test_a_run_id_that_is_a_path_is_a_usage_error_naming_its_source(xlaunch_bin, tmp_path,
                                                                    source):
    bad = "a/../../victim"
    args, env = ["--no_python"], {}
    if source == "flag":
        args += ["--rdzv_id", bad]
        where = "flag --rdzv_id: bad value 'a/../../victim'"
    elif source == "env":
        env["XLAUNCH_RDZV_ID"] = bad
        where = "environment variable XLAUNCH_RDZV_ID: bad value 'a/../../victim'"
    else:
        config = tmp_path / "c.yaml"
        config.write_text(f"rdzv_id: {bad}\n")
        args += ["--config_file", str(config)]
        where = f"{config}:1:10: key 'rdzv_id': bad value 'a/../../victim'"
    r = run(xlaunch_bin, [*args, TRUE], tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    assert where in r.stderr
    assert "letters, digits" in r.stderr


@pytest.mark.parametrize("value", ["a\nb", "..", ".hidden", "x" * 129])
def test_other_bad_run_ids_exit_2(xlaunch_bin, tmp_path, value):
    r = run(xlaunch_bin, ["--rdzv_id", value, "--no_python", TRUE], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "--rdzv_id" in r.stderr


def test_a_nul_in_the_config_files_run_id_exits_2(xlaunch_bin, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text('rdzv_id: "a\\0b"\n')
    r = run(xlaunch_bin, ["--config_file", str(config), "--no_python", TRUE], tmp_path)
    assert r.returncode == 2, r.stderr
    # Named where it is, for any key, before the run id's own check.
    assert f"{config}:1:10: a value holding a NUL character" in r.stderr, r.stderr


def test_a_run_id_pointing_at_another_folder_leaves_it_intact(xlaunch_bin, tmp_path):
    # Before: $TMPDIR/xlaunch-a/../../victim was the run's folder, removed after success.
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    r = run(xlaunch_bin, ["--rdzv_id", "a/../../victim", "--no_python", TRUE], tmp_path,
            env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 2, r.stderr
    assert (victim / "precious.txt").read_text() == "keep me"


def test_success_removes_only_what_the_run_made(xlaunch_bin, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # A folder with the name the old temporary folder had: not this run's, so not touched.
    foreign = tmpdir / "xlaunch-job1"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("not xlaunch's")
    r = run(xlaunch_bin, ["--rdzv_id", "job1", "--num_processes", "2", "--no_python", TRUE],
            tmp_path, env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 0, r.stderr
    assert (foreign / "mine.txt").read_text() == "not xlaunch's"
    assert sorted(p.name for p in tmpdir.iterdir()) == ["xlaunch-job1"]


def test_a_file_a_worker_leaves_in_the_temporary_folder_stays(xlaunch_bin, tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    script = tmp_path / "leave.py"
    script.write_text("import os\n"
                      "open(os.path.join(os.environ['XLAUNCH_LOG_DIR'], 'left.txt'), 'w')"
                      ".write('x')\n")
    r = run(xlaunch_bin, ["--rdzv_id", "job2", str(script)], tmp_path,
            env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 0, r.stderr
    (folder,) = tmpdir.iterdir()
    assert folder.name.startswith("xlaunch-job2-")
    # The run's own error files went; the worker's file and its folder stay.
    assert sorted(p.name for p in folder.iterdir()) == ["left.txt"]


def test_a_reused_run_id_gets_its_own_log_folder(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    args = ["--rdzv_id", "exp", "--log_dir", str(logs), "--num_processes", "2", "--no_python",
            TRUE]
    first = run(xlaunch_bin, args, tmp_path)
    assert first.returncode == 0, first.stderr
    first_log = (logs / "exp" / "xlaunch.log").read_text()
    second = run(xlaunch_bin, args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in logs.iterdir()) == ["exp", "exp-2"]
    note = f"{logs / 'exp'} already exists (a run with the same run id); this run's logs go " \
           f"to {logs / 'exp-2'}"
    assert note in second.stderr
    assert f"logs in {logs / 'exp-2'}" in second.stderr
    # The first run's files are as it left them; the second run's log says where it went.
    assert (logs / "exp" / "xlaunch.log").read_text() == first_log
    assert first_log.count("run exp on") == 1
    second_log = (logs / "exp-2" / "xlaunch.log").read_text()
    assert note in second_log and second_log.count("run exp on") == 1
    assert json.loads((logs / "exp-2" / "summary.json").read_text())["run_id"] == "exp"


# --- values ----------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--term_timeout", "--rdzv_timeout", "--heartbeat_timeout"])
@pytest.mark.parametrize("value", ["9223372037", "1e300", "inf", "nan"])
def test_durations_out_of_range_exit_2(xlaunch_bin, tmp_path, flag, value):
    r = run(xlaunch_bin, [flag, value, "--no_python", TRUE], tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"flag {flag}: bad value '{value}'" in r.stderr
    assert "<= 1000000" in r.stderr


def test_the_longest_term_timeout_is_accepted(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, ["--term_timeout", "1000000", "--no_python", TRUE], tmp_path)
    assert r.returncode == 0, r.stderr


def test_an_interpreter_that_is_not_executable_exits_126(xlaunch_bin, tmp_path):
    script = tmp_path / "t.py"
    script.write_text("print('never')\n")
    r = run(xlaunch_bin, [str(script)], tmp_path, python="/etc/passwd")
    assert r.returncode == 126, r.stderr
    assert "interpreter '/etc/passwd' is not an executable file" in r.stderr


def test_a_config_file_that_is_a_directory_exits_2(xlaunch_bin, tmp_path):
    folder = tmp_path / "conf"
    folder.mkdir()
    r = run(xlaunch_bin, ["--config_file", str(folder), "--no_python", TRUE], tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"config file {folder} is a directory (--config_file)" in r.stderr
    r = run(xlaunch_bin, ["--no_python", TRUE], tmp_path, env={"XLAUNCH_CONFIG_FILE": str(folder)})
    assert r.returncode == 2, r.stderr
    assert f"config file {folder} is a directory (XLAUNCH_CONFIG_FILE)" in r.stderr


# --- the command line -------------------------------------------------------------------------

def test_double_dash_ends_the_options(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, ["--", "/bin/echo", "hello"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "[rank0]: hello" in r.stdout


def test_the_programs_own_flags_after_double_dash_are_untouched(xlaunch_bin, tmp_path):
    worker = argv_worker(tmp_path)
    r = run(xlaunch_bin, ["--num_processes", "2", "--", sys.executable, str(worker),
                          "--num_processes", "5", "--", "-m"], tmp_path,
            env={"OUT_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        data = json.loads((tmp_path / f"argv_{rank}.json").read_text())
        assert data == {"argv": ["--num_processes", "5", "--", "-m"], "world": "2"}


# --- GPUs ------------------------------------------------------------------------------------

def test_a_repeated_cuda_visible_device_hides_every_gpu_with_a_warning(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "report_env.py")], tmp_path,
            env={"OUT_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": "0,0"})
    assert r.returncode == 0, r.stderr
    assert ("warning: CUDA_VISIBLE_DEVICES=0,0 names device 0 twice; CUDA then shows no GPU at "
            "all, so xlaunch uses none") in r.stderr
    for rank in (0, 1):
        env = json.loads((tmp_path / f"rank_{rank}.json").read_text())["env"]
        # Not two workers on one GPU: CPU workers, as CUDA itself would see no device.
        assert env["XLAUNCH_DISTRIBUTED_TYPE"] == "MULTI_CPU"
    assert "(CPU, MULTI_CPU)" in r.stderr


# --- capacity --------------------------------------------------------------------------------

def test_worker_count_beyond_the_machine_maximum_exits_2(xlaunch_bin, tmp_path):
    r = run(xlaunch_bin, ["--num_processes", "100000", str(WORKERS / "report_env.py")], tmp_path,
            env={"OUT_DIR": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    assert "--num_processes 100000 asks for 100000 workers on this machine; xlaunch runs at " \
           "most 1024 per machine" in r.stderr
    assert not list(tmp_path.glob("rank_*.json"))


def _limit_open_files(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def test_worker_count_beyond_the_open_file_limit_exits_2(xlaunch_bin, tmp_path):
    import subprocess
    from launch_helpers import merged_env
    cmd = [xlaunch_bin, "launch", "--num_processes", "50", "--no_python", TRUE]
    env = merged_env({"HOME": str(tmp_path)})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60,
                       preexec_fn=_limit_open_files(100))
    assert r.returncode == 2, r.stderr
    assert "--num_processes 50 asks for 50 workers on this machine, which need about" in r.stderr
    assert "open-file limit (ulimit -n, already raised to its hard limit) is 100" in r.stderr
    assert "or use --num_processes" in r.stderr
    assert "xlaunch: run" not in r.stderr  # nothing started
    # A count that fits runs under the same limit.
    ok = subprocess.run([xlaunch_bin, "launch", "--num_processes", "2", "--no_python", TRUE],
                        env=env, capture_output=True, text=True, timeout=60,
                        preexec_fn=_limit_open_files(100))
    assert ok.returncode == 0, ok.stderr


def test_worker_count_beyond_the_process_limit_exits_2(xlaunch_bin, tmp_path):
    import subprocess
    from launch_helpers import merged_env

    def limit():
        if os.geteuid() == 0:
            # Root is not held to RLIMIT_NPROC: run as nobody, who runs next to nothing.
            resource.setrlimit(resource.RLIMIT_NPROC, (5, 5))
            os.setgid(65534)
            os.setuid(65534)
        else:
            resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))

    r = subprocess.run([xlaunch_bin, "launch", "--num_processes", "8", "--no_python", TRUE],
                       env=merged_env({"HOME": "/nonexistent"}), capture_output=True, text=True,
                       timeout=60, preexec_fn=limit, cwd="/")
    assert r.returncode == 2, r.stderr
    assert "--num_processes 8 asks for 8 workers on this machine, but your process limit " \
           "(ulimit -u) is" in r.stderr
    assert "xlaunch: run" not in r.stderr
