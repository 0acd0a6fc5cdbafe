#!/usr/bin/env python3
"""The automatic report on a week-long run: `xlaunch report` on a synthetic run folder of
8 ranks that each wrote a line every second for 7 days (activity.csv, 4.8 M rows) and 8 GPUs
sampled every second (gpu.csv, 4.8 M rows). Prints the folder's size, the report's size, its
wall time and the peak RSS of `xlaunch report`. Not a test: it asserts nothing.

Usage: bench/report_bench.py [--xlaunch build/release/cli/xlaunch] [--days 7] [--ranks 8]
"""
import argparse
import json
import os
import resource
import subprocess
import tempfile
import time

T0 = 1_700_000_000


def write_run(folder, days, ranks):
    seconds = days * 24 * 3600
    start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0))
    end = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(T0 + seconds))
    workers = [{"rank": r, "local_rank": r, "attempt": 0, "pid": 1000 + r, "exit_code": 0,
                "signal": None, "start": start, "end": end, "stopped_by_launcher": False}
               for r in range(ranks)]
    summary = {"run_id": "week", "host": "bench", "world_size": ranks, "exit_code": 0,
               "interrupted_by": None, "workers": workers, "not_started": [], "log_cuts": [],
               "root_cause": None}
    with open(os.path.join(folder, "summary.json"), "w") as f:
        json.dump(summary, f)
    with open(os.path.join(folder, "activity.csv"), "w") as f:
        f.write("attempt,rank,unix_second,lines\n")
        for t in range(seconds):
            f.write("".join(f"0,{r},{T0 + t},1\n" for r in range(ranks)))
    with open(os.path.join(folder, "gpu.csv"), "w") as f:
        f.write("unix_ms,gpu,utilization,memory_used,memory_total,processes\n")
        for t in range(seconds):
            f.write("".join(f"{(T0 + t) * 1000},{g},{(t + g) % 100},{t},{1 << 34},\n"
                            for g in range(ranks)))


def main():
    with tempfile.TemporaryDirectory() as folder:
        made = time.monotonic()
        write_run(folder, ARGS.days, ARGS.ranks)
        made = time.monotonic() - made
        size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
        began = time.monotonic()
        r = subprocess.run([ARGS.xlaunch, "report", folder], capture_output=True, text=True)
        wall = time.monotonic() - began
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if r.returncode != 0:
            print(r.stderr)
            return 1
        report = os.path.getsize(os.path.join(folder, "report.html"))
    print(f"run folder: {ARGS.days} days, {ARGS.ranks} ranks, {ARGS.ranks} GPUs: "
          f"{size / 1e6:.0f} MB (written in {made:.0f} s)")
    print(f"xlaunch report: {wall:.1f} s, peak RSS {peak:.0f} MB, report.html {report / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xlaunch", default="build/release/cli/xlaunch")
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--ranks", type=int, default=8)
    ARGS = parser.parse_args()
    raise SystemExit(main())
