"""`xlaunch launch` on one machine: the real binary, real processes, real signals."""
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from launch_helpers import (WORKERS, alive, launch, recorded_pids, start, wait_for_files,
                            wait_for_pids, wait_until_gone)

TORCHRUN_VARS = ["RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME",
                 "LOCAL_WORLD_SIZE", "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE",
                 "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT",
                 "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
                 "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "OMP_NUM_THREADS",
                 "ACCELERATE_MIXED_PRECISION", "XLAUNCH_RUN_ID", "XLAUNCH_LOG_DIR",
                 "XLAUNCH_MIXED_PRECISION", "XLAUNCH_DISTRIBUTED_TYPE"]


def read_ranks(out_dir, n):
    files = wait_for_files(out_dir, "rank_*.json", n, timeout=1)
    return {int(json.loads(f.read_text())["env"]["RANK"]): json.loads(f.read_text())
            for f in files}


def test_four_workers_get_the_full_environment(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "4", "--mixed_precision", "bf16",
                             str(WORKERS / "report_env.py")], env={"OUT_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    ranks = read_ranks(tmp_path, 4)
    assert sorted(ranks) == [0, 1, 2, 3]
    ports = set()
    for rank, data in ranks.items():
        env = data["env"]
        for var in TORCHRUN_VARS:
            assert var in env, f"{var} missing for rank {rank}"
        assert env["LOCAL_RANK"] == str(rank)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == env["ROLE_WORLD_SIZE"] == "4"
        assert env["GROUP_RANK"] == "0" and env["GROUP_WORLD_SIZE"] == "1"
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["TORCHELASTIC_USE_AGENT_STORE"] == "True"
        assert env["OMP_NUM_THREADS"] == "1"
        assert env["ACCELERATE_MIXED_PRECISION"] == env["XLAUNCH_MIXED_PRECISION"] == "bf16"
        assert env["XLAUNCH_DISTRIBUTED_TYPE"] == "MULTI_CPU"
        assert f"rank_{rank}" in env["TORCHELASTIC_ERROR_FILE"]
        # Each worker leads its own process group (Ctrl-C reaches the launcher only).
        assert data["pgid"] == data["pid"]
        ports.add(env["MASTER_PORT"])
    assert len(ports) == 1 and int(ports.pop()) > 0
    assert "setting OMP_NUM_THREADS=1" in r.stderr
    for rank in range(4):
        assert f"[rank{rank}]: rank {rank} ok" in r.stdout


def test_user_omp_num_threads_is_kept(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "report_env.py")],
               env={"OUT_DIR": str(tmp_path), "OMP_NUM_THREADS": "7"})
    assert r.returncode == 0, r.stderr
    assert all(d["env"]["OMP_NUM_THREADS"] == "7" for d in read_ranks(tmp_path, 2).values())
    assert "OMP_NUM_THREADS" not in r.stderr


def test_gpu_ids_index_into_outer_cuda_visible_devices(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--gpu_ids", "1,3", str(WORKERS / "report_env.py")],
               env={"OUT_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": "4,5,6,7"})
    assert r.returncode == 0, r.stderr
    ranks = read_ranks(tmp_path, 2)
    assert len(ranks) == 2
    for data in ranks.values():
        assert data["env"]["CUDA_VISIBLE_DEVICES"] == "5,7"
        assert data["env"]["XLAUNCH_DISTRIBUTED_TYPE"] == "MULTI_GPU"


def test_cuda_visible_devices_alone_scopes_the_run(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, [str(WORKERS / "report_env.py")],
               env={"OUT_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": "6,7"})
    assert r.returncode == 0, r.stderr
    ranks = read_ranks(tmp_path, 2)
    assert {d["env"]["CUDA_VISIBLE_DEVICES"] for d in ranks.values()} == {"6,7"}


def test_more_gpu_workers_than_gpus_share_them_with_a_warning(xlaunch_bin, tmp_path):
    """As torchrun and accelerate do: every worker sees the GPUs; the ranks without one of
    their own are named (on an H100, two workers on one GPU, one of them idle, were refused)."""
    r = launch(xlaunch_bin, ["--num_processes", "4", str(WORKERS / "report_env.py")],
               env={"OUT_DIR": str(tmp_path), "CUDA_VISIBLE_DEVICES": "6,7"})
    assert r.returncode == 0, r.stderr
    assert "xlaunch: warning: 4 GPU workers share 2 GPU(s) on this machine (6,7): local ranks " \
        "2 to 3 have no GPU of their own" in r.stderr
    ranks = read_ranks(tmp_path, 4)
    assert {d["env"]["CUDA_VISIBLE_DEVICES"] for d in ranks.values()} == {"6,7"}
    assert sorted(d["env"]["LOCAL_RANK"] for d in ranks.values()) == ["0", "1", "2", "3"]


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_bad_process_counts_exit_2(xlaunch_bin, tmp_path, value):
    r = launch(xlaunch_bin, ["--num_processes", value, str(WORKERS / "report_env.py")],
               env={"OUT_DIR": str(tmp_path)})
    assert r.returncode == 2, r.stderr
    assert "--num_processes" in r.stderr
    assert not list(tmp_path.iterdir())


def test_unknown_flag_exits_2_with_a_hint(xlaunch_bin):
    r = subprocess.run([xlaunch_bin, "launch", "--num_procesess", "2", "x.py"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--num_procesess" in r.stderr and "--help" in r.stderr


def test_help_lists_every_flag(xlaunch_bin):
    r = subprocess.run([xlaunch_bin, "launch", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for flag in ["--num_processes", "--nproc_per_node", "--gpu_ids", "--main_process_port",
                 "--master_port", "--max_restarts", "--log_dir", "--tee", "--redirects",
                 "--local_ranks_filter", "--term_timeout", "--python", "--no_python",
                 "--standalone", "--mixed_precision", "--config_file"]:
        assert flag in r.stdout, flag


def test_failing_rank_stops_the_job_with_its_exit_code(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "4", str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "2", "FAIL_CODE": "3",
                    "FAIL_DELAY": "0.5", "SLEEP": "120"})
    assert r.returncode == 3, r.stderr
    assert "rank 2/4 (local rank 2" in r.stderr
    assert "exited with code 3" in r.stderr
    assert "| rank 2 is failing on purpose" in r.stderr  # its last stderr lines
    siblings = recorded_pids(tmp_path)
    assert len(siblings) == 4
    assert wait_until_gone(siblings, timeout=1) == []  # the launcher waited for them
    # Siblings were stopped with SIGTERM, which they saw.
    assert sorted(p.name for p in tmp_path.glob("signal_*")) == ["signal_0", "signal_1", "signal_3"]
    assert (tmp_path / "signal_0").read_text() == "SIGTERM"


def test_error_file_content_is_part_of_the_report(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "1", "WRITE_ERROR_FILE": "1",
                    "SLEEP": "120"})
    assert r.returncode == 3
    assert "wrote its error file" in r.stderr
    assert "CUDA out of memory (simulated)" in r.stderr


def test_a_signal_death_reports_the_signal(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "2", str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "SIGNAL_RANK": "0", "SIGNAL": "SIGSEGV",
                    "SLEEP": "120"})
    assert r.returncode == 128 + signal.SIGSEGV, r.stderr
    assert "killed by SIGSEGV (signal 11)" in r.stderr


def test_ctrl_c_stops_everything_with_130(xlaunch_bin, tmp_path):
    proc = start(xlaunch_bin, ["--num_processes", "3", str(WORKERS / "behave.py")],
                 env={"OUT_DIR": str(tmp_path), "SLEEP": "120", "SPAWN_GRANDCHILD": "1"})
    wait_for_files(tmp_path, "pids_*.json", 3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "SIGINT: stopping every worker" in err
    # Workers got the SIGINT forwarded (not a SIGTERM or SIGKILL out of the blue).
    assert sorted(p.read_text() for p in tmp_path.glob("signal_*")) == ["SIGINT"] * 3
    everyone = recorded_pids(tmp_path) + recorded_pids(tmp_path, "grandchild")
    assert len(everyone) == 6
    assert wait_until_gone(everyone, timeout=1) == []


def test_second_ctrl_c_kills_at_once(xlaunch_bin, tmp_path):
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text(
        "import os, signal, time, pathlib\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        f"pathlib.Path('{tmp_path}', 'up_' + os.environ['RANK']).write_text(str(os.getpid()))\n"
        "time.sleep(300)\n")
    proc = start(xlaunch_bin, ["--num_processes", "2", "--term_timeout", "300", str(stubborn)])
    pids = wait_for_pids(tmp_path, "up_*", 2)
    proc.send_signal(signal.SIGINT)
    line = proc.stderr.readline()
    while line and "SIGINT: stopping every worker" not in line:
        line = proc.stderr.readline()
    assert line, "xlaunch ended without saying it stops the workers"
    # A person's second Ctrl-C, well after the first: a SIGINT within 0.5 s of the one the
    # launcher handled counts as the same Ctrl-C delivered twice (docs/launch.md).
    time.sleep(1)
    assert all(alive(p) for p in pids)  # the first Ctrl-C is ignored by these workers
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "again: killing every worker now" in err
    assert wait_until_gone(pids, timeout=1) == []


def test_sigkill_of_the_launcher_leaves_no_orphans(xlaunch_bin, tmp_path):
    proc = start(xlaunch_bin, ["--num_processes", "3", str(WORKERS / "behave.py")],
                 env={"OUT_DIR": str(tmp_path), "SLEEP": "120", "SPAWN_GRANDCHILD": "1"})
    wait_for_files(tmp_path, "pids_*.json", 3)
    everyone = recorded_pids(tmp_path) + recorded_pids(tmp_path, "grandchild")
    assert len(everyone) == 6 and all(alive(p) for p in everyone)
    proc.kill()
    proc.communicate(timeout=30)
    # Workers die by PR_SET_PDEATHSIG, their children by the group guardian.
    assert wait_until_gone(everyone) == []


def test_restarts_rerun_every_worker(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--num_processes", "2", "--max_restarts", "3", "--log_dir", str(logs),
                             str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "1", "FAIL_ATTEMPTS": "2",
                    "SLEEP": "0.2"})
    assert r.returncode == 0, r.stderr
    assert "restarting every worker (restart 1 of 3)" in r.stderr
    assert "restarting every worker (restart 2 of 3)" in r.stderr
    assert "restart 3 of 3" not in r.stderr
    assert sorted(p.name for p in tmp_path.glob("pids_0_*.json")) == [
        "pids_0_0.json", "pids_0_1.json", "pids_0_2.json"]
    summary = json.loads(next(logs.glob("*/summary.json")).read_text())
    assert summary["exit_code"] == 0
    assert sorted({w["attempt"] for w in summary["workers"]}) == [0, 1, 2]


def test_restarts_used_up_exit_with_the_failure(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "2", "--max_restarts", "1",
                             str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "0", "FAIL_CODE": "5",
                    "SLEEP": "60"})
    assert r.returncode == 5
    assert r.stderr.count("exited with code 5") >= 2  # each attempt reported
    assert "no restarts left (1 used)" in r.stderr


def test_log_dir_holds_per_rank_logs_and_summary(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--num_processes", "2", "--log_dir", str(logs),
                             str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "1", "FAIL_CODE": "4", "SLEEP": "60"})
    assert r.returncode == 4
    (run_dir,) = list(logs.iterdir())
    assert f"logs: {run_dir}" in r.stderr
    rank1 = run_dir / "attempt_0" / "rank_1"
    assert "rank 1 attempt 0 started" in (rank1 / "stdout.log").read_text()
    assert "rank 1 is failing on purpose" in (rank1 / "stderr.log").read_text()
    assert "rank 0 attempt 0 started" in (run_dir / "attempt_0" / "rank_0" / "stdout.log").read_text()
    launcher_log = (run_dir / "xlaunch.log").read_text()
    assert "rank 1 (pid" in launcher_log and "exited with code 4" in launcher_log
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exit_code"] == 4
    assert summary["run_id"] == run_dir.name
    by_rank = {w["rank"]: w for w in summary["workers"]}
    assert by_rank[1]["exit_code"] == 4 and not by_rank[1]["stopped_by_launcher"]
    assert by_rank[0]["stopped_by_launcher"] and by_rank[0]["pid"] > 0
    assert by_rank[0]["start"] <= by_rank[0]["end"]
    assert summary["root_cause"]["rank"] == 1
    assert not list(run_dir.glob("**/*.tmp*"))


def test_progress_bars_partial_and_long_lines(xlaunch_bin, tmp_path):
    logs = tmp_path / "logs"
    script = tmp_path / "bars.py"
    script.write_text(
        "import sys\n"
        "for p in (10, 50, 100):\n"
        "    sys.stdout.write(f'\\r{p:3d}%|' + '#' * (p // 10))\n"
        "    sys.stdout.flush()\n"
        "sys.stdout.write('\\n')\n"
        "sys.stdout.write('x' * 100000 + '\\n')\n"
        "sys.stdout.write('no newline at the end')\n")
    r = launch(xlaunch_bin, ["--log_dir", str(logs), str(script)], raw=True)
    assert r.returncode == 0, r.stderr
    stdout = r.stdout.decode()
    assert "[rank0]:  10%|#\r[rank0]:  50%|#####\r[rank0]: 100%|##########\n" in stdout
    assert "[rank0]: no newline at the end\n" in stdout
    xs = sum(line.count("x") for line in stdout.split("\n") if line.startswith("[rank0]: x"))
    assert xs == 100000  # cut into pieces, nothing lost
    raw = next(logs.glob("*/attempt_0/rank_0/stdout.log")).read_bytes().decode()
    assert raw.startswith("\r 10%|#\r 50%|#####\r100%|##########\n")  # the file keeps raw bytes
    assert raw.endswith("no newline at the end")


def test_local_ranks_filter_and_stderr_stays_on_stderr(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "3", "--local_ranks_filter", "0,2",
                             str(WORKERS / "behave.py")],
               env={"OUT_DIR": str(tmp_path), "FAIL_RANK": "2", "FAIL_CODE": "0"})
    assert r.returncode == 0, r.stderr
    assert "[rank0]: rank 0 attempt 0 started" in r.stdout
    assert "[rank2]: rank 2 attempt 0 started" in r.stdout
    assert "[rank1]" not in r.stdout
    assert "[rank2]: rank 2 is failing on purpose" in r.stderr
    assert "failing on purpose" not in r.stdout


def test_missing_program_is_reported_once_before_start(xlaunch_bin, tmp_path):
    r = launch(xlaunch_bin, ["--num_processes", "4", str(tmp_path / "nosuch.py")])
    assert r.returncode == 127
    assert r.stderr.count("nosuch.py") == 1
    assert "[rank" not in r.stdout + r.stderr
    r = launch(xlaunch_bin, ["--num_processes", "4", "--no_python", "no-such-tool-xyz"])
    assert r.returncode == 127
    assert "'no-such-tool-xyz' not found on PATH" in r.stderr
    not_executable = tmp_path / "tool"
    not_executable.write_text("#!/bin/sh\necho hi\n")
    r = launch(xlaunch_bin, ["--num_processes", "2", "--no_python", str(not_executable)])
    assert r.returncode == 126
    assert "is not executable" in r.stderr


def test_no_python_runs_binaries_and_module_mode(xlaunch_bin, tmp_path):
    tool = tmp_path / "tool.sh"
    tool.write_text("#!/bin/sh\necho \"tool rank $RANK args $*\"\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    r = launch(xlaunch_bin, ["--num_processes", "2", "--no_python", str(tool), "a", "--b"])
    assert r.returncode == 0, r.stderr
    assert "[rank1]: tool rank 1 args a --b" in r.stdout
    (tmp_path / "mymod.py").write_text("import os; print('module rank', os.environ['RANK'])\n")
    r = launch(xlaunch_bin, ["--num_processes", "2", "-m", "mymod"],
               env={"PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "[rank1]: module rank 1" in r.stdout


def test_python_interpreter_from_env_var(xlaunch_bin, tmp_path):
    fake = tmp_path / "mypython"
    fake.write_text(f"#!/bin/sh\necho interpreter-was-used\nexec {sys.executable} \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "t.py"
    script.write_text("print('script ran')\n")
    r = subprocess.run([xlaunch_bin, "launch", str(script)], capture_output=True, text=True,
                       env={**os.environ, "XLAUNCH_PYTHON": str(fake)}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "[rank0]: interpreter-was-used" in r.stdout and "[rank0]: script ran" in r.stdout


def test_fixed_port_in_use_is_a_clear_error(xlaunch_bin, tmp_path):
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = launch(xlaunch_bin, ["--main_process_port", str(port), str(WORKERS / "report_env.py")],
                   env={"OUT_DIR": str(tmp_path)})
    assert r.returncode == 1
    assert str(port) in r.stderr and "--main_process_port" in r.stderr
