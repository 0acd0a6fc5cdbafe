"""The run's picture (issue 14) rendered by a real browser engine: Debian's headless
Chromium loads the report.html of a real run (a failing rank, a restart, two fake GPUs) and
must show one lane per rank and per GPU, without a console error, and take a screenshot."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from fake_nvml_helpers import build_fake_nvml, fake_env, write_script
from launch_helpers import merged_env

# Rank 1 fails in the first attempt; the restart succeeds.
WORKER = textwrap.dedent("""
    import os, sys, time
    rank = int(os.environ["RANK"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    for step in range(3):
        print(f"rank {rank} attempt {attempt} step {step}", flush=True)
        time.sleep(0.3)
    if rank == 1 and attempt == 0:
        print("rank 1: out of patience", file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(1)
""")


@pytest.fixture(scope="module")
def chromium():
    """Debian's chromium, installed with apt-get when missing; fails loudly if it cannot be."""
    found = shutil.which("chromium")
    if found is None:
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "chromium"],
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                           capture_output=True, text=True, timeout=1200)
        found = shutil.which("chromium")
        if found is None:
            pytest.fail("chromium is needed to render the report and could not be installed "
                        f"(apt-get install chromium: exit {r.returncode}):\n{r.stderr[-2000:]}")
    return found


def headless(chromium, tmp_path, *args):
    """Runs headless Chromium with a profile of its own; returns the CompletedProcess."""
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", *args],
        capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def failed_then_restarted_run(xlaunch_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report-run")
    lib = build_fake_nvml(tmp)
    procs = tmp / "procs"
    procs.mkdir()
    write_script(tmp / "nvml-script", [[95, 97, 99], [20, 22, 18]], procs)
    worker = tmp / "worker.py"
    worker.write_text(WORKER)
    r = subprocess.run(
        [xlaunch_bin, "launch", "--python", sys.executable, "--num_processes", "2",
         "--max_restarts", "1", "--log_dir", str(tmp / "logs"), str(worker)],
        env=merged_env(fake_env(lib, tmp / "nvml-script")), capture_output=True, text=True,
        timeout=300)
    assert r.returncode == 0, r.stderr
    assert "restarting every worker" in r.stderr
    (run_dir,) = (tmp / "logs").iterdir()
    return r, run_dir


def test_a_run_with_log_dir_writes_its_picture_and_says_where(failed_then_restarted_run):
    r, run_dir = failed_then_restarted_run
    assert f"xlaunch: report: {run_dir}/report.html" in r.stderr
    html = (run_dir / "report.html").read_text()
    assert "root cause: rank 1 exited with code 3 (attempt 0)" in html
    assert html.count('class="restart-mark"') == 1
    assert html.count('class="activity"') >= 2  # both ranks printed
    # Self-contained: no script, nothing fetched (no URL, no src or href).
    assert "<script" not in html and "http" not in html
    assert "src=" not in html and "href=" not in html


def test_chromium_renders_one_lane_per_rank_and_per_gpu(chromium, failed_then_restarted_run,
                                                        tmp_path):
    _, run_dir = failed_then_restarted_run
    url = (run_dir / "report.html").as_uri()
    dom = headless(chromium, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-3000:]
    # The DOM as Chromium parsed it: the lanes are elements, not text the parser dropped.
    ranks = re.findall(r'<g class="lane rank-lane" data-rank="(\d+)"', dom.stdout)
    gpus = re.findall(r'<g class="lane gpu-lane" data-gpu="(\d+)"', dom.stdout)
    assert sorted(ranks) == ["0", "1"], dom.stdout[:2000]
    assert sorted(gpus) == ["0", "1"], dom.stdout[:2000]
    assert "exit 3 \u2716 root cause" in dom.stdout
    # Page problems (a console message, a resource that failed to load) reach the log.
    problems = [line for line in dom.stderr.splitlines()
                if "CONSOLE" in line or "Failed to load" in line or "ERR_" in line]
    assert problems == [], "\n".join(problems)

    png = tmp_path / "report.png"
    shot = headless(chromium, tmp_path, f"--screenshot={png}", "--window-size=1240,620",
                    "--hide-scrollbars", url)
    assert shot.returncode == 0, shot.stderr[-3000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1240, 620)


def test_xlaunch_report_rewrites_the_picture_and_prints_its_path(xlaunch_bin,
                                                                  failed_then_restarted_run,
                                                                  tmp_path):
    _, run_dir = failed_then_restarted_run
    out = tmp_path / "elsewhere.html"
    r = subprocess.run([xlaunch_bin, "report", str(run_dir), "--output", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"{out}\n"
    assert out.read_text() == (run_dir / "report.html").read_text()


def test_xlaunch_report_on_a_folder_that_is_not_a_run_is_a_usage_error(xlaunch_bin, tmp_path):
    r = subprocess.run([xlaunch_bin, "report", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert f"cannot read {tmp_path}/summary.json" in r.stderr
    (tmp_path / "summary.json").write_text('{"workers": [')
    r = subprocess.run([xlaunch_bin, "report", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert f"{tmp_path}/summary.json: not valid JSON" in r.stderr


def test_xlaunch_report_never_writes_over_its_inputs_and_says_where_it_cannot_write(
        xlaunch_bin, failed_then_restarted_run, tmp_path):
    _, run_dir = failed_then_restarted_run

    def report(*args):
        return subprocess.run([xlaunch_bin, "report", *args], capture_output=True, text=True,
                              timeout=60)

    summary = (run_dir / "summary.json").read_text()
    r = report(str(run_dir), "-o", str(run_dir / "summary.json"))
    assert r.returncode == 2, r.stderr
    assert "is the run's own summary.json: writing the page there would replace it" in r.stderr
    assert (run_dir / "summary.json").read_text() == summary
    r = report(str(run_dir), "-o", str(tmp_path))  # a folder
    assert r.returncode == 2, r.stderr
    assert f"cannot write {tmp_path}" in r.stderr and "hint: give -o a file" in r.stderr
    r = report("")
    assert r.returncode == 2 and "the run folder is empty" in r.stderr, r.stderr
