#!/usr/bin/env python3
"""Preload benchmark: time to every rank's first gloo all_reduce, `xlaunch launch --preload
torch` vs plain `xlaunch launch`, torchrun and the floor (one `import torch` plus the forks).

Usage: bench/preload_bench.py [--xlaunch build/release/cli/xlaunch] [--reps 5] [--sizes 4,8]
                              [--tools preload,xlaunch,torchrun,torchrun_tuned,floor]
                              [--tuned_monitor_interval 0.1] [--warmup 1] [--out results.json]
                              [--python /usr/bin/python3] [--torchrun wrapper|module]

Every tool runs the same rank program (preload_bench_worker.py: import torch, init_process_group
("gloo") from the environment, all_reduce one element, write CLOCK_REALTIME) on this machine,
CPU only, --standalone with --nproc_per_node N:
  preload         xlaunch launch --python /usr/bin/python3 --preload torch
  xlaunch         xlaunch launch --python /usr/bin/python3
  torchrun        /usr/bin/python3 launch_torchrun_wrapper.py (torch 1.13's torchrun, defaults;
                  --standalone spelled out with a free port instead of its fixed 29400)
  torchrun_tuned  the same with --monitor_interval --tuned_monitor_interval
  floor           /usr/bin/python3 preload_bench_floor.py: imports torch, os.fork()s N ranks
--python runs every tool under another interpreter (one whose torch is newer, say); with
--torchrun module, torchrun is that interpreter's `-m torch.distributed.run` (the wrapper
only mends torch 1.13 on Python 3.11).
Measures, per tool and N, median of --reps repetitions (tools and sizes interleaved, the
tools' order rotated each repetition):
  ready  the latest rank's CLOCK_REALTIME after its all_reduce, minus CLOCK_REALTIME taken
         right before the launcher is started (the headline);
  exit   the launcher's exit (this script's wait4) minus the same start;
  cpu    user + system seconds of the launcher and every process it reaped (wait4's rusage;
         the same as this script's RUSAGE_CHILDREN delta, checked each run).
--warmup runs each tool that many times at the first size first, not counted (page cache; a
command that does not work shows up before the long part). Prints Markdown; --out writes JSON.
A benchmark, not a test: it asserts nothing, and leaves no process behind.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import resource
import signal
import socket
import shutil
import sys
import tempfile
import time

from launch_bench_harness import (ROOT, WRAPPER, Bench, alive, driver_setup, progress,
                                  read_pids, summary)
from launch_bench_report import git_describe

PYTHON = "/usr/bin/python3"
WORKER = ROOT / "bench" / "preload_bench_worker.py"
FLOOR = ROOT / "bench" / "preload_bench_floor.py"
TOOLS = ["preload", "xlaunch", "torchrun", "torchrun_tuned", "floor"]
LABELS = {"preload": "xlaunch --preload torch", "xlaunch": "xlaunch (plain)",
          "torchrun": "torchrun (defaults)", "torchrun_tuned": "torchrun mi={mi}",
          "floor": "floor: import torch + fork"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xlaunch", default=os.environ.get("XLAUNCH_BIN",
                                                         str(ROOT / "build/release/cli/xlaunch")))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="4,8")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--tuned_monitor_interval", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", help="also write the JSON results here")
    ap.add_argument("--python", default=PYTHON, help="the ranks' interpreter, with torch")
    ap.add_argument("--torchrun", choices=("wrapper", "module"), default="wrapper",
                    help="launch_torchrun_wrapper.py (torch 1.13) or -m torch.distributed.run")
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.tools = [t for t in args.tools.split(",") if t]
    unknown = set(args.tools) - set(TOOLS)
    if unknown:
        ap.error(f"--tools: unknown {sorted(unknown)}; known: {','.join(TOOLS)}")
    args.xlaunch = str(pathlib.Path(args.xlaunch).resolve())
    return args


def command(args, tool, n, outdir):
    """The argv that runs n ranks of the worker under tool."""
    program = [str(WORKER), str(outdir)]
    if tool in ("preload", "xlaunch"):
        preload = ["--preload", "torch"] if tool == "preload" else []
        return [args.xlaunch, "launch", "--standalone", "--nproc_per_node", str(n),
                "--python", args.python, *preload, *program]
    if tool.startswith("torchrun"):
        tuned = (["--monitor_interval", str(args.tuned_monitor_interval)]
                 if tool == "torchrun_tuned" else [])
        # --standalone's own store would be on the fixed port 29400 in torch 1.13, which any
        # other torchrun on the machine may hold; this is --standalone with a free port.
        rdzv = ["--nnodes", "1", "--rdzv_backend", "c10d", "--rdzv_endpoint",
                f"127.0.0.1:{free_port()}", "--rdzv_id", outdir.name]
        torchrun = ([str(WRAPPER)] if args.torchrun == "wrapper"
                    else ["-m", "torch.distributed.run"])
        return [args.python, *torchrun, *rdzv, "--nproc_per_node", str(n), *tuned, *program]
    return [args.python, str(FLOOR), str(WORKER), str(n), str(outdir)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(bench, args, tool, n):
    """One launch of n ranks; returns a dict (ready_s, exit_s, cpu_s, ...) or None on failure."""
    bench.counter += 1
    outdir = bench.tmp / f"run.{bench.counter}"
    outdir.mkdir()
    argv = command(args, tool, n, outdir)
    cpu_before = children_cpu()
    start = time.clock_gettime_ns(time.CLOCK_REALTIME)
    p = bench.start(argv)
    rc, ru, t_exit = bench.wait(p)
    cpu_children = children_cpu() - cpu_before
    cpu = ru.ru_utime + ru.ru_stime
    if abs(cpu - cpu_children) > 0.01:
        bench.notes.append(f"{tool} n={n}: wait4 CPU {cpu:.3f} s but RUSAGE_CHILDREN delta "
                           f"{cpu_children:.3f} s")
    ends, sums = [], set()
    for rank in range(n):
        try:
            end_ns, _, total = (outdir / f"end.{rank}").read_text().split()
            ends.append(int(end_ns))
            sums.add(int(total))
        except (OSError, ValueError):
            pass
    survivors = [pid for pid in read_pids(outdir) if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    problem = None
    if rc != 0:
        problem = f"exit code {rc}"
    elif len(ends) != n:
        problem = f"{len(ends)} of {n} ranks finished the all_reduce"
    elif sums != {n}:
        problem = f"all_reduce sums {sorted(sums)}, expected {n}"
    elif survivors:
        problem = f"ranks alive after the launcher exited: {survivors}"
    if problem:
        err = p.errpath.read_text(errors="replace")[-1500:]
        bench.notes.append(f"{tool} n={n}: {problem}: {' '.join(argv)}; stderr tail: {err!r}")
        return None
    return {"ready_s": (max(ends) - start) / 1e9, "exit_s": (t_exit - start) / 1e9,
            "cpu_s": cpu, "first_ready_s": (min(ends) - start) / 1e9}


def measure(bench, args):
    """Warm-up, then --reps rounds over sizes x tools; returns {n: {tool: {measure: summary}}}."""
    for _ in range(args.warmup):
        for tool in args.tools:
            progress(f"warm-up {tool} n={args.sizes[0]}")
            run_once(bench, args, tool, args.sizes[0])
    runs = {n: {t: [] for t in args.tools} for n in args.sizes}
    for rep in range(args.reps):
        k = rep % len(args.tools)
        order = args.tools[k:] + args.tools[:k]
        for n in (args.sizes if rep % 2 == 0 else args.sizes[::-1]):
            for tool in order:
                r = run_once(bench, args, tool, n)
                progress(f"rep {rep + 1}/{args.reps} n={n} {tool}: " +
                         ("failed" if r is None else
                          f"ready {r['ready_s']:.2f} s, exit {r['exit_s']:.2f} s, "
                          f"cpu {r['cpu_s']:.2f} s"))
                if r is not None:
                    runs[n][tool].append(r)
    return {n: {t: {m: summary([r[m] for r in rs])
                    for m in ("ready_s", "exit_s", "cpu_s", "first_ready_s")}
                | {"failed": args.reps - len(rs)}
                for t, rs in by_tool.items()}
            for n, by_tool in runs.items()}


def med(results, n, tool, m="ready_s"):
    return results.get(n, {}).get(tool, {}).get(m, {}).get("median")


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt(v, digits=2, unit=""):
    return "—" if v is None else f"{v:.{digits}f}{unit}"


def tables(results, args):
    """The results table, the ratios and the goals of issue 23, as Markdown lines."""
    lines = ["| N | tool | ready (s, median [min–max]) | launcher exit (s) | CPU (s) | failed |",
             "|---:|---|---:|---:|---:|---:|"]
    for n in args.sizes:
        for t in args.tools:
            r = results[n][t]
            rd = r["ready_s"]
            span = f" [{fmt(rd['min'])}–{fmt(rd['max'])}]" if rd["median"] is not None else ""
            label = LABELS[t].format(mi=args.tuned_monitor_interval)
            lines.append(f"| {n} | {label} | {fmt(rd['median'])}{span} | "
                         f"{fmt(r['exit_s']['median'])} | {fmt(r['cpu_s']['median'])} | "
                         f"{r['failed']} |")
    pairs = [("xlaunch", "preload / plain xlaunch", 0.5), ("torchrun", "preload / torchrun", 0.5),
             ("torchrun_tuned", "preload / torchrun mi=" + str(args.tuned_monitor_interval),
              None), ("floor", "preload / floor", 1.5)]
    lines += ["", "| ratio (ready time; CPU in brackets) | " +
              " | ".join(f"N={n}" for n in args.sizes) + " | goal at N=8 |",
              "|---|" + "---:|" * len(args.sizes) + "---|"]
    for other, name, goal in pairs:
        if other not in args.tools or "preload" not in args.tools:
            continue
        cells = []
        for n in args.sizes:
            r = ratio(med(results, n, "preload"), med(results, n, other))
            c = ratio(med(results, n, "preload", "cpu_s"), med(results, n, other, "cpu_s"))
            cells.append(f"{fmt(r)}× ({fmt(c)}×)")
        verdict = "—"
        if goal is not None:
            r8 = ratio(med(results, 8, "preload"), med(results, 8, other))
            verdict = f"≤ {goal}×: " + ("—" if r8 is None else "met" if r8 <= goal else "NOT met")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines)


def main():
    args = parse_args()
    driver_setup("preload_bench", args.xlaunch)
    tmp = tempfile.mkdtemp(prefix="preload_bench.")
    os.chdir(tmp)  # whatever a launcher writes into its working folder goes away with tmp
    bench = Bench(args, tmp)
    try:
        started = datetime.datetime.now(datetime.timezone.utc)
        load_before = os.getloadavg()
        results = measure(bench, args)
        report = {
            "date": started.isoformat(timespec="seconds"),
            "seconds": round((datetime.datetime.now(datetime.timezone.utc)
                              - started).total_seconds(), 1),
            "command": " ".join(sys.argv),
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                        "python": args.python},
            "xlaunch": args.xlaunch,
            "git": git_describe(),
            "loadavg_before": load_before,
            "loadavg_after": os.getloadavg(),
            "results": {str(n): r for n, r in results.items()},
            "notes": bench.notes,
        }
        print(f"Preload benchmark, {report['date']}, {os.cpu_count()} CPUs, load average "
              f"{load_before[0]:.2f} before, {report['loadavg_after'][0]:.2f} after, took "
              f"{report['seconds']} s, git {report['git']}, median of {args.reps}")
        print(tables(results, args))
        for note in bench.notes:
            print(f"- {note}")
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    except KeyboardInterrupt:
        print("preload_bench: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        os.chdir("/")
        bench.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
