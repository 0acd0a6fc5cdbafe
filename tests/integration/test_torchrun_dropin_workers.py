"""torchrun's run-time contract under `xlaunch launch`: what workers find in their
environment, a second launcher joining through --rdzv-endpoint, a worker's error file,
`xlaunch env`, and a warning written to a closed stderr.
"""
import json
import os
import subprocess
import sys

from config_helpers import isolated_env
from launch_helpers import WORKERS
from machine_fixtures import free_port


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


def report_nccl_names(xlaunch_bin, tmp_path, **extra):
    env = isolated_env(tmp_path, OUT_DIR=str(tmp_path), **extra)
    r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable,
                        str(WORKERS / "report_env.py")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    e = json.loads((tmp_path / "rank_0.json").read_text())["env"]
    return e.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"), e.get("NCCL_ASYNC_ERROR_HANDLING")


def test_only_torch_2_2_and_newer_lose_the_old_nccl_name_they_warn_about(xlaunch_bin, tmp_path):
    """PyTorch 2.2+ warns about NCCL_ASYNC_ERROR_HANDLING (twice per rank, seen on an H100);
    1.13 reads only that name. Here /usr/bin/python3's torch is 1.13; a torch package that
    says 2.6 first on PYTHONPATH stands for a newer one (found, never imported)."""
    assert report_nccl_names(xlaunch_bin, tmp_path) == ("1", "1")
    for version, kept in (("2.6.0+cu124", None), ("2.2.0", None), ("2.1.2", "1")):
        fake = tmp_path / version / "torch"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text("raise ImportError('a stand-in: never imported')\n")
        (fake / "version.py").write_text(f"__version__ = '{version}'\ngit_version = 'x'\n")
        assert report_nccl_names(xlaunch_bin, tmp_path, PYTHONPATH=str(fake.parent)) == \
            ("1", kept), version
        # Names that disagree were set by the user: both stay.
        assert report_nccl_names(xlaunch_bin, tmp_path, PYTHONPATH=str(fake.parent),
                                 NCCL_ASYNC_ERROR_HANDLING="0") == ("1", "0"), version
    # Looking torch up imports nothing a worker would not have imported anyway.
    worker = tmp_path / "modules.py"
    worker.write_text("import sys\nprint('importlib' in sys.modules, 'warnings' in sys.modules)\n")
    r = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable, str(worker)],
                       capture_output=True, text=True, env=isolated_env(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[rank0]: False False" in r.stdout, r.stdout


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
