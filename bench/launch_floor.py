#!/usr/bin/env python3
"""Launch overhead against the floor: `xlaunch launch` vs a bare C loop that forks and execs
the same workers, in one run.

Usage: bench/launch_floor.py [--xlaunch build/release/cli/xlaunch] [--also LABEL=PATH ...]
                             [--reps 21] [--sizes 1,8,32] [--out results.json]

For each size N, the "floor" row is bench/launch_floor.c (compiled here with `cc -O2`): fork N
children, each execs /bin/true, wait for all. xlaunch runs the same workers as
`xlaunch launch --standalone --nproc_per_node N --no_python /bin/true`. --also adds other
xlaunch binaries (e.g. the build before a change) to the same run. Every run has stdout and
stderr on /dev/null (a file for xlaunch's stderr, shown on a failure) and its own session; the
wall time is from Popen to wait4's return in this script. Repetitions interleave the sizes and
rotate the order of the tools, so a burst of load hits them alike; the table shows medians
(min in parentheses) and each one's ratio to the floor. A benchmark, not a test: it asserts
nothing.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from launch_bench_harness import ROOT, Bench, progress, run_cleanly
from launch_bench_report import fmt, git_describe

FLOOR_SRC = ROOT / "bench" / "launch_floor.c"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xlaunch", default=os.environ.get("XLAUNCH_BIN",
                                                         str(ROOT / "build/release/cli/xlaunch")))
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=PATH",
                    help="another xlaunch binary to run beside it")
    ap.add_argument("--reps", type=int, default=21)
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--program", default="/bin/true")
    ap.add_argument("--out", help="also write the JSON results here")
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.binaries = {"xlaunch": str(pathlib.Path(args.xlaunch).resolve())}
    for item in args.also:
        label, sep, path = item.partition("=")
        if not sep or not label or label in args.binaries or label == "floor":
            sys.exit(f"launch_floor: --also {item!r}: expected a new LABEL=PATH")
        args.binaries[label] = str(pathlib.Path(path).resolve())
    for label, path in args.binaries.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"launch_floor: no xlaunch binary at {path} ({label}; build it, or pass it)")
    return args


def argv_for(tool, n, args, floor_bin):
    if tool == "floor":
        return [floor_bin, str(n), args.program]
    return [args.binaries[tool], "launch", "--standalone", "--nproc_per_node", str(n),
            "--no_python", args.program]


def measure(bench, args, floor_bin):
    tools = ["floor", *args.binaries]
    times = {t: {n: [] for n in args.sizes} for t in tools}
    for rep in range(args.reps):
        for n in args.sizes:
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for tool in order:
                t0 = time.perf_counter()
                p = bench.start(argv_for(tool, n, args, floor_bin))
                rc, _, _ = bench.wait(p)
                dt = (time.perf_counter() - t0) * 1e3
                bench.check_rc(p, rc, 0, f"{tool} n={n}")
                times[tool][n].append(dt)
        progress(f"rep {rep + 1}/{args.reps}")
    return times


def table(times, args):
    tools = list(times)
    head = "| workers | " + " | ".join(f"{t} (ms)" for t in tools) + " | " + \
        " | ".join(f"{t} / floor" for t in tools if t != "floor") + " |"
    lines = [head, "|---:|" + "---:|" * (2 * len(tools) - 1)]
    for n in args.sizes:
        med = {t: statistics.median(times[t][n]) for t in tools}
        cells = [f"{fmt(med[t])} ({fmt(min(times[t][n]))})" for t in tools]
        ratios = [fmt(med[t] / med["floor"], "×") for t in tools if t != "floor"]
        lines.append(f"| {n} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


def main():
    args = parse_args()
    tmp = tempfile.mkdtemp(prefix="launch_floor.")
    bench = Bench(args, tmp)

    def body():
        floor_bin = str(pathlib.Path(tmp) / "launch_floor")
        subprocess.run(["cc", "-O2", "-o", floor_bin, str(FLOOR_SRC)], check=True)
        started = datetime.datetime.now(datetime.timezone.utc)
        load_before = os.getloadavg()
        times = measure(bench, args, floor_bin)
        report = {
            "date": started.isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
            "git": git_describe(),
            "binaries": args.binaries,
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "ms": {t: {str(n): [round(v, 3) for v in d[n]] for n in d} for t, d in times.items()},
            "notes": bench.notes,
        }
        print(f"Launch floor, {report['date']}, {os.cpu_count()} CPUs, load average "
              f"{load_before[0]:.2f} before, {report['loadavg_after'][0]:.2f} after, "
              f"git {report['git']}, median (min) of {args.reps}, {args.program}")
        print(table(times, args))
        for note in bench.notes:
            print(f"- {note}")
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(report, indent=2) + "\n")

    return run_cleanly("launch_floor", bench, tmp, body)


if __name__ == "__main__":
    sys.exit(main())
