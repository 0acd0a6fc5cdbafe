"""GPU use through NVML (issue 14), against the fake NVML: a job on two fake GPUs where
GPU 1 stays at 20% while GPU 0 runs at 97%, and a process of rank 0 holds memory on GPU 1."""
import pathlib
import subprocess
import sys
import textwrap

import pytest

from fake_nvml_helpers import build_fake_nvml, fake_env, parse_gpu_csv, write_script
from launch_helpers import merged_env

# Rank 0 starts a child that "allocates" 512 MiB on GPU 1 (a file the fake NVML lists), so
# the launcher must map the child's pid to rank 0 through its process tree. Every rank then
# waits until the launcher's series shows that child three times: no timing assumption.
WORKER = textwrap.dedent("""
    import os, pathlib, subprocess, sys, time
    rank = int(os.environ["RANK"])
    procs = pathlib.Path(sys.argv[1])
    print(f"rank {rank} sees CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}",
          flush=True)
    if rank == 0:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        (procs / f"1-{child.pid}").write_text(str(512 << 20))
        (procs / "child").write_text(str(child.pid))
    while not (procs / "child").exists():
        time.sleep(0.05)
    child_pid = (procs / "child").read_text()
    csv = pathlib.Path(os.environ["XLAUNCH_LOG_DIR"]) / "gpu.csv"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = csv.read_text() if csv.exists() else ""
        if text.count(f";{child_pid}:") + text.count(f",{child_pid}:") >= 3:
            break
        time.sleep(0.1)
    else:
        sys.exit(f"the launcher never listed pid {child_pid} in {csv}")
    if rank == 0:
        (procs / f"1-{child.pid}").unlink()  # "frees" its memory before it ends
        child.kill()
        child.wait()
    if len(sys.argv) > 2 and rank == int(sys.argv[2]):
        sys.exit(7)
""")


@pytest.fixture(scope="module")
def fake_nvml(tmp_path_factory):
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


def launch(xlaunch_bin, fake_nvml, tmp_path, args, worker_args=(), env=None):
    procs = tmp_path / "procs"
    procs.mkdir()
    script = tmp_path / "nvml-script"
    write_script(script, [97, 20], procs)
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    return subprocess.run(
        [xlaunch_bin, "launch", "--python", sys.executable, *args, str(worker), str(procs),
         *worker_args],
        env=merged_env({**fake_env(fake_nvml, script), **(env or {})}), capture_output=True,
        text=True, timeout=300), procs


def test_a_lagging_gpu_and_memory_on_another_rank_s_gpu_are_reported(xlaunch_bin, fake_nvml,
                                                                     tmp_path):
    r, procs = launch(xlaunch_bin, fake_nvml, tmp_path,
                      ["--num_processes", "2", "--log_dir", str(tmp_path / "logs")])
    assert r.returncode == 0, r.stderr
    # The fake's two GPUs are what the launcher found and gave the workers.
    assert "GPUs 0,1" in r.stderr, r.stderr
    assert "CUDA_VISIBLE_DEVICES=0,1" in r.stdout
    child = int((procs / "child").read_text())
    assert "xlaunch: GPU 0: utilization average 97%, peak 97%; memory average 40.0 GiB" in r.stderr
    assert "xlaunch: GPU 1: utilization average 20%, peak 20%" in r.stderr
    assert ("xlaunch: warning: GPU 1 averaged 20% utilization, far below GPU 0 (97%)"
            in r.stderr), r.stderr
    assert (f"xlaunch: warning: rank 0 (pid {child}) holds 512 MiB of memory on GPU 1, which is "
            f"not its own (GPU 0)" in r.stderr), r.stderr
    assert "rank 1 (pid" not in r.stderr  # rank 1 holds nothing anywhere
    assert "xlaunch: warning: rank 1 did no GPU work" in r.stderr, r.stderr
    assert "rank 0 did no GPU work" not in r.stderr

    (run_dir,) = (tmp_path / "logs").iterdir()
    rows = parse_gpu_csv((run_dir / "gpu.csv").read_text())
    assert {row["gpu"] for row in rows} == {0, 1}
    assert all(row["utilization"] == (97 if row["gpu"] == 0 else 20) for row in rows)
    holders = [p for row in rows if row["gpu"] == 1 for p in row["processes"]]
    assert len(holders) >= 3
    assert all(p == {"pid": child, "rank": 0, "bytes": 512 << 20} for p in holders)
    # The summary is in the launcher's log too.
    assert "far below GPU 0" in (run_dir / "xlaunch.log").read_text()


# Rank 0 "allocates" on GPU 0 (a file the fake NVML lists); rank 1 never touches a GPU.
# Both wait until the series shows rank 0 three times.
SHARED_WORKER = textwrap.dedent("""
    import os, pathlib, sys, time
    rank = int(os.environ["RANK"])
    procs = pathlib.Path(sys.argv[1])
    if rank == 0:
        (procs / f"0-{os.getpid()}").write_text(str(1 << 30))
        (procs / "rank0").write_text(str(os.getpid()))
    while not (procs / "rank0").exists():
        time.sleep(0.05)
    pid = (procs / "rank0").read_text()
    csv = pathlib.Path(os.environ["XLAUNCH_LOG_DIR"]) / "gpu.csv"
    deadline = time.monotonic() + 120

    def listed():
        text = csv.read_text() if csv.exists() else ""
        return text.count(f",{pid}:0:") + text.count(f";{pid}:0:")

    while listed() < 3:
        if time.monotonic() > deadline:
            sys.exit(f"the launcher never listed pid {pid} in {csv}")
        time.sleep(0.1)
""")


def test_two_workers_on_one_gpu_run_and_the_one_that_idles_is_named(xlaunch_bin, fake_nvml,
                                                                    tmp_path):
    """Seen on an H100: CUDA_VISIBLE_DEVICES=0 and two workers, only rank 0 computing, was
    refused (torchrun runs it), so no idle rank could be shown."""
    procs = tmp_path / "procs"
    procs.mkdir()
    script = tmp_path / "nvml-script"
    write_script(script, [95], procs)
    worker = tmp_path / "worker.py"
    worker.write_text(SHARED_WORKER)
    r = subprocess.run(
        [xlaunch_bin, "launch", "--python", sys.executable, "--num_processes", "2", str(worker),
         str(procs)],
        env=merged_env({**fake_env(fake_nvml, script), "CUDA_VISIBLE_DEVICES": "0"}),
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: warning: 2 GPU workers share 1 GPU(s) on this machine (0): local rank 1 " \
        "has no GPU of its own" in r.stderr
    assert "xlaunch: GPU 0: utilization average 95%" in r.stderr
    assert "xlaunch: warning: rank 1 did no GPU work: it held memory on no GPU in any " \
        "reading, while rank 0 did in" in r.stderr, r.stderr
    assert "rank 0 did no GPU work" not in r.stderr


def test_without_log_dir_the_series_lives_in_the_run_s_temporary_folder(xlaunch_bin, fake_nvml,
                                                                         tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # Rank 1 fails: the temporary folder is kept, with the series.
    r, _ = launch(xlaunch_bin, fake_nvml, tmp_path, ["--num_processes", "2"], ["1"],
                  env={"TMPDIR": str(tmp)})
    assert r.returncode == 7, r.stderr
    assert "far below GPU 0" in r.stderr
    (run_dir,) = tmp.iterdir()
    rows = parse_gpu_csv((run_dir / "gpu.csv").read_text())
    assert {row["gpu"] for row in rows} == {0, 1}
    assert not (run_dir / "report.html").exists()  # only runs with --log_dir get a picture


def test_a_successful_run_without_log_dir_leaves_no_series_behind(xlaunch_bin, fake_nvml,
                                                                  tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    r, _ = launch(xlaunch_bin, fake_nvml, tmp_path, ["--num_processes", "2"],
                  env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    assert "far below GPU 0" in r.stderr
    assert list(tmp.iterdir()) == []


def test_cpu_jobs_are_not_sampled(xlaunch_bin, fake_nvml, tmp_path):
    script = tmp_path / "nvml-script"
    write_script(script, [97, 20], tmp_path)
    worker = tmp_path / "hello.py"
    worker.write_text("print('hello')\n")
    r = subprocess.run([xlaunch_bin, "launch", "--use_cpu", "--num_processes", "2", "--log_dir",
                        str(tmp_path / "logs"), "--python", sys.executable, str(worker)],
                       env=merged_env(fake_env(fake_nvml, script)), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: GPU" not in r.stderr
    (run_dir,) = (tmp_path / "logs").iterdir()
    assert not (run_dir / "gpu.csv").exists()


def test_the_driver_s_library_is_looked_for_only_where_a_driver_runs(xlaunch_bin, fake_nvml,
                                                                      tmp_path):
    """Without an NVIDIA driver's device node the launch does not search the loader's path
    for libnvidia-ml.so.1 (LD_DEBUG=libs shows every search); XLAUNCH_NVML_LIBRARY is
    loaded whatever the device nodes say."""
    driver = pathlib.Path("/dev/nvidiactl").exists() or pathlib.Path("/dev/dxg").exists()
    argv = [xlaunch_bin, "launch", "--standalone", "--no_python", "/bin/true"]
    plain = subprocess.run(argv, env=merged_env({"LD_DEBUG": "libs"}), capture_output=True,
                           text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    assert ("find library=libnvidia-ml.so.1" in plain.stderr) == driver, plain.stderr
    script = tmp_path / "nvml-script"
    write_script(script, [97, 20], tmp_path)
    faked = subprocess.run(argv, env=merged_env({**fake_env(fake_nvml, script),
                                                 "LD_DEBUG": "libs"}),
                           capture_output=True, text=True, timeout=60)
    assert faked.returncode == 0, faked.stderr
    assert f"calling init: {fake_nvml}" in faked.stderr, faked.stderr


@pytest.mark.parametrize("swap", ["fifo", "dev-zero"])
def test_a_rank_that_swaps_the_series_for_a_fifo_or_dev_zero_cannot_hang_the_launcher(
        xlaunch_bin, fake_nvml, tmp_path, swap):
    # The series is read back at the end from the run folder, which ranks write in: a FIFO
    # there blocked the launcher forever (with its stop signals held), /dev/zero ate memory.
    procs = tmp_path / "procs"
    procs.mkdir()
    script = tmp_path / "nvml-script"
    write_script(script, [97, 20], procs)
    worker = tmp_path / "swap.py"
    worker.write_text(
        "import os, sys\n"
        "path = os.path.join(os.environ['XLAUNCH_LOG_DIR'], 'gpu.csv')\n"
        "os.unlink(path)\n"
        "os.mkfifo(path) if sys.argv[1] == 'fifo' else os.symlink('/dev/zero', path)\n")
    r = subprocess.run(
        [xlaunch_bin, "launch", "--python", sys.executable, "--num_processes", "1",
         "--log_dir", str(tmp_path / "logs"), str(worker), swap],
        env=merged_env(fake_env(fake_nvml, script)), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "gpu.csv was not summarized: it is not a regular file of at most 256 MiB" in r.stderr, \
        r.stderr
    assert "the worker finished successfully" in r.stderr


def test_nvml_is_initialised_once_after_the_guardian_and_its_thread_takes_no_stop_signal(
        xlaunch_bin, fake_nvml, tmp_path):
    # The real NVML starts a thread in nvmlInit (seen on an H100), as the fake does. The
    # launcher must fork its guardian before that thread exists (a late guardian: process
    # groups), keep the thread from taking SIGINT/TERM/HUP/QUIT, and initialise NVML once for
    # discovery and sampling, leaving the shutdown to its exit.
    procs = tmp_path / "procs"
    procs.mkdir()
    script = tmp_path / "nvml-script"
    write_script(script, [60], procs)
    calls = tmp_path / "calls"
    with script.open("a") as f:
        f.write(f"calls {calls}\n")
    r = subprocess.run(
        [xlaunch_bin, "launch", "--nproc_per_node", "1", "--log_dir", str(tmp_path / "logs"),
         "--no_python", "/bin/sleep", "1.5"],
        env=merged_env({**fake_env(fake_nvml, script), "XLAUNCH_CONTAINMENT": "group"}),
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: GPU 0: utilization average 60%" in r.stderr, r.stderr
    lines = calls.read_text().splitlines()
    inits = [line for line in lines if line.startswith("init ")]
    # One thread (no store yet); two children: the spawner and the guardian.
    assert inits == ["init threads=1 children=2"], lines
    assert "thread blocked=INT,TERM,HUP,QUIT," in lines, lines
    assert "shutdown" not in lines, lines
