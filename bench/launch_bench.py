#!/usr/bin/env python3
"""Launch benchmark: `xlaunch launch` vs Debian's torchrun (python3-torch 1.13.1), in one run.

Usage: bench/launch_bench.py [--xlaunch build/release/cli/xlaunch] [--reps 5] [--sizes 1,8,32]
                             [--fail_reps 5] [--fail_workers 8] [--rss_workers 8]
                             [--print_bytes 1000000000] [--line_len 100] [--print_reps 1]
                             [--tuned_monitor_interval 0.1] [--skip launch,fail,rss,print]
                             [--out results.json]

The xlaunch binary comes from --xlaunch, else $XLAUNCH_BIN, else build/release/cli/xlaunch.
torchrun runs as `/usr/bin/python3 bench/launch_torchrun_wrapper.py` (torchrun's own main with
one parsing bug of torch 1.13 on Python 3.11 patched; see that file).

Measures (every launcher run with stdout/stderr to /dev/null, its own session, --standalone):
  launch    wall time of launching and exiting N trivial workers (`--no_python /bin/true`),
            median of --reps repetitions, tools and sizes interleaved.
  fail      time from a worker's failure to the launcher's exit: rank 0 of --fail_workers
            writes CLOCK_REALTIME to a file and _exit(3)s 0.5 s after starting, the others sleep
            60 s; teardown = launcher exit (seen by this script's wait4) - that timestamp. Both
            launchers SIGTERM the rest with a 30 s SIGKILL deadline (torchrun 1.13's fixed value;
            xlaunch gets --term_timeout 30). Afterwards every worker pid is checked: a survivor
            is an orphan (counted, reported, and killed).
  rss       launcher peak RSS with --rss_workers workers sleeping 2 s, the launcher run under
            `/usr/bin/time -f %M`: VmHWM of the launcher process polled every 10 ms, and time's
            maximum resident set size (ru_maxrss: the max over the launcher and its reaped
            children, here tiny C workers). Not ru_maxrss of a launcher forked from this Python
            script: that would include the forked Python's RSS before exec.
  print     console throughput: one worker writing --print_bytes bytes of --line_len-byte lines
            through `xlaunch launch` (whose stdout is /dev/null) vs the same worker writing to
            /dev/null, to a file, and through a plain pipe into `cat >/dev/null`. torchrun is not
            in this one: by default it does not route worker output at all (workers inherit its
            console), so its number would be the "direct" one.
torchrun polls its workers every --monitor_interval seconds (default 5), which bounds both its
launch and its failure-detection time from below; the "torchrun tuned" column reruns launch and
fail with --monitor_interval --tuned_monitor_interval (0 skips it). Ratios are torchrun/xlaunch
(> 1: xlaunch is better). Prints Markdown tables; --out also writes JSON. A benchmark, not a
test: it asserts nothing, and it stops, cleans up and leaves no process behind by itself.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tempfile

from launch_bench_harness import ROOT, WORKER_SRC, WRAPPER, driver_setup, progress
from launch_bench_report import git_describe, tables, targets
from launch_bench_scenarios import Scenarios


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xlaunch", default=os.environ.get("XLAUNCH_BIN",
                                                         str(ROOT / "build/release/cli/xlaunch")))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--fail_reps", type=int, default=5)
    ap.add_argument("--fail_workers", type=int, default=8)
    ap.add_argument("--rss_workers", type=int, default=8)
    ap.add_argument("--print_bytes", type=float, default=1e9)
    ap.add_argument("--line_len", type=int, default=100)
    ap.add_argument("--print_reps", type=int, default=1)
    ap.add_argument("--tuned_monitor_interval", type=float, default=0.1)
    ap.add_argument("--skip", default="", help="comma list of launch,fail,rss,print")
    ap.add_argument("--out", help="also write the JSON results here")
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.print_bytes = int(args.print_bytes)
    args.skip = {s for s in args.skip.split(",") if s}
    args.xlaunch = str(pathlib.Path(args.xlaunch).resolve())
    return args


def measure(bench, skip):
    """Runs every measurement not in skip; returns the results by name."""
    results = {}
    for name, fn in [("launch", bench.launch), ("fail", bench.fail), ("rss", bench.rss),
                     ("print", bench.print_)]:
        if name not in skip:
            progress(f"== {name}")
            results[name] = fn()
    return results


def write_report(report, results, args, notes):
    """Prints the tables and notes; the JSON goes to --out, else to stdout as well."""
    print(f"Launch benchmark, {report['date']}, {os.cpu_count()} CPUs, load average before "
          f"{report['loadavg_before'][0]:.2f}, took {report['seconds']} s, git {report['git']}")
    print(tables(results, args))
    if notes:
        print("\nNotes:")
        for n in notes:
            print(f"- {n}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    else:
        print("\n" + json.dumps(report, indent=2))


def main():
    args = parse_args()
    driver_setup("launch_bench", args.xlaunch)

    tmp = tempfile.mkdtemp(prefix="launch_bench.")
    bench = Scenarios(args, tmp)
    try:
        bench.worker = str(pathlib.Path(tmp) / "launch_worker")
        subprocess.run(["cc", "-O2", "-o", bench.worker, str(WORKER_SRC)], check=True)
        started = datetime.datetime.now(datetime.timezone.utc)
        load_before = os.getloadavg()
        results = measure(bench, args.skip)
        report = {
            "date": started.isoformat(timespec="seconds"),
            "seconds": round((datetime.datetime.now(datetime.timezone.utc) - started).total_seconds(), 1),
            "command": " ".join(sys.argv),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                        "python": platform.python_version()},
            "xlaunch": args.xlaunch,
            "git": git_describe(),
            "loadavg_before": load_before,
            "torchrun": f"/usr/bin/python3 {WRAPPER.relative_to(ROOT)} (torch 1.13.1)",
            "tuned_monitor_interval": args.tuned_monitor_interval,
            "results": results,
            "targets": [{"target": n, "met": ok, "value": v} for n, ok, v in targets(results)],
            "notes": bench.notes,
        }
        write_report(report, results, args, bench.notes)
    except KeyboardInterrupt:
        print("launch_bench: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        bench.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
