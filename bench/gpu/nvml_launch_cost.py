#!/usr/bin/env python3
"""What NVML costs a launch: `xlaunch launch --nproc_per_node 1 --no_python /bin/true` with the
driver's NVML (the default) and with NVML turned away (XLAUNCH_NVML_LIBRARY naming no file),
interleaved, in one run. Usage: nvml_launch_cost.py XLAUNCH [--reps 15] [LABEL=XLAUNCH ...]
Prints the median (min) wall time of each. A benchmark, not a test."""
import os
import statistics
import subprocess
import sys
import time

args = sys.argv[1:]
reps = 15
if "--reps" in args:
    i = args.index("--reps")
    reps = int(args[i + 1])
    del args[i:i + 2]
binaries = [("xlaunch", args[0])] + [tuple(a.split("=", 1)) for a in args[1:]]
cases = []
for label, path in binaries:
    cases.append((f"{label}, NVML", path, {}))
    cases.append((f"{label}, no NVML", path, {"XLAUNCH_NVML_LIBRARY": "/nonexistent/libnvidia-ml.so.1"}))
times = {name: [] for name, _, _ in cases}
for r in range(reps):
    for name, path, extra in cases[r % len(cases):] + cases[:r % len(cases)]:
        env = dict(os.environ, **extra)
        start = time.perf_counter()
        rc = subprocess.run([path, "launch", "--standalone", "--nproc_per_node", "1", "--no_python",
                             "/bin/true"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        times[name].append((time.perf_counter() - start) * 1e3)
        if rc != 0:
            sys.exit(f"{name}: exit {rc}")
for name, values in times.items():
    print(f"{name:28s} {statistics.median(values):7.2f} ms ({min(values):.2f})")
