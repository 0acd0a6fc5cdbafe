"""The fake NVML (tests/fake_nvml/fake_nvml.c): built once per test session with cc, loaded
by xlaunch through XLAUNCH_NVML_LIBRARY, and scripted through XLAUNCH_FAKE_NVML_SCRIPT."""
import pathlib
import shutil
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[1] / "fake_nvml" / "fake_nvml.c"
GIB = 1 << 30


def build_fake_nvml(directory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (cc) to build the fake NVML: apt-get install gcc")
    lib = pathlib.Path(directory) / "libnvidia-ml.so.1"
    r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", str(lib),
                        str(SOURCE)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        pytest.fail(f"building the fake NVML failed:\n{r.stderr}")
    return lib


def write_script(path, utilizations, procs_dir, used=(40 * GIB,), total=80 * GIB):
    """One fake GPU per entry of `utilizations` (an int or a list the fake cycles through)."""
    lines = []
    for i, util in enumerate(utilizations):
        steps = ",".join(str(u) for u in (util if isinstance(util, (list, tuple)) else [util]))
        lines.append(f"gpu {i} GPU-fake-{i:04d} {steps} {used[i % len(used)]} {total}")
    lines.append(f"procs_dir {procs_dir}")
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def fake_env(lib, script):
    return {"XLAUNCH_NVML_LIBRARY": str(lib), "XLAUNCH_FAKE_NVML_SCRIPT": str(script)}


def parse_gpu_csv(text):
    """gpu.csv's rows as dicts; fails on a malformed line (other than a cut-off last one)."""
    lines = text.split("\n")
    assert lines[0] == "unix_ms,gpu,utilization,memory_used,memory_total,processes", lines[0]
    rows = []
    for line in lines[1:-1]:
        ms, gpu, util, used, total, procs = line.split(",")
        processes = []
        for item in filter(None, procs.split(";")):
            pid, rank, nbytes = item.split(":")
            processes.append({"pid": int(pid), "rank": int(rank), "bytes": int(nbytes)})
        rows.append({"unix_ms": int(ms), "gpu": int(gpu), "utilization": int(util),
                     "memory_used": int(used), "memory_total": int(total),
                     "processes": processes})
    return rows
