#!/usr/bin/env python3
"""Seeded, reproducible randomized fault test of `xlaunch launch`.

Every scenario is derived from one integer seed: how many workers (1-8), what each one
does (writes deterministic bytes to stdout/stderr, with and without trailing newline, with
'\\r', small to ~1 MiB; sleeps; starts children that fork, setsid or daemonize and sleep
long; closes its stdout and goes on; ignores SIGTERM/SIGINT; then exits with a code 0-255,
kills itself with SIGKILL/SIGSEGV/SIGTERM, or runs until the launcher stops it), what
happens to the launcher (nothing, or SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGKILL at a random time,
spawning included) and to its console (read, not read for a while, never read while it
runs, or closed early like `| head -1`).

Workers are /bin/sh scripts (cheap to start) generated per scenario. Before its last action
a worker writes its intended outcome to a file (the "intent"), and after each step it
appends the step number to a progress file, so the test knows exactly which bytes it wrote.

Invariants checked per scenario (fault_stress/checks.py, outcome.py, records.py):
  1 exit code: without a launcher signal, the code of the root cause named in summary.json,
    which must be a worker that really reached its failing last action (its intent file),
    is not stopped_by_launcher, and did not fail more than RACE_WINDOW s after another
    worker's own failure (nor later by summary.json's own clock); 128+S for a signal death;
    0 only if every worker reached "exit 0". With SIGINT/SIGTERM/SIGHUP/SIGQUIT sent at t:
    128+S only if no worker had failed before t - RACE_WINDOW (a failure seen first keeps
    its code; a signal during the teardown does not replace it), else the workers' outcome
    as above, which must then have been decided before t + RACE_WINDOW. SIGKILL: -9 (from
    here), or the workers' outcome if xlaunch had already exited. A signal's default action
    before any worker started is accepted as 128+S (the shell sees the same). With
    --max_restarts 1: attempt 1 runs if and only if attempt 0 had a failure; it decides.
  2 logs: each rank's stdout.log/stderr.log is a prefix of the bytes it was to write, holds
    at least every byte it wrote before its last recorded step, and all of them when it
    reached its last action (no lower bound after SIGKILL of the launcher).
  3 summary.json: valid JSON, exit_code equal to the launcher's, every rank of every attempt
    that ran listed once: in "workers" with an exit code or a signal, or in "not_started"
    if it really never ran (it may be missing after SIGKILL of the launcher).
  4 no process carrying the scenario's marker env var is left (bounded wait), leftovers are
    SIGKILLed by the test either way.
  5 the launcher exits (hang bound), even with a console that is never read; the console
    pipe is not held open after it exited.
  6 the console (when read) has only whole lines, each `[rankN]: ` + bytes of that rank's
    stream in order (pieces split at '\\r') or xlaunch's own lines, and ends with a newline
    (unless xlaunch exited while nobody read it); when xlaunch reports no dropped lines
    (console or xlaunch.log), every byte of every rank is there.
  7 a worker inherits no descriptor besides 0, 1, 2 (checked by workers drawn to list them):
    a leaked launcher fd (its console, say) is held open by any daemon the worker leaves.

Run:
  pytest tests/integration/test_fault_stress.py          (XLAUNCH_STRESS_SECONDS, default 150;
                                                           XLAUNCH_STRESS_SEED, base seed)
  python3 tests/integration/test_fault_stress.py --seconds 600 [--seed N]
  python3 tests/integration/test_fault_stress.py --scenario-seed S [--keep] (replay one)
  python3 tests/integration/test_fault_stress.py --describe S  (print a scenario, run nothing)
The binary is $XLAUNCH_BIN, else build/release/cli/xlaunch (or --bin).

This file is the entry point (the scenarios one after another, the report, the command
line); the scenario generator, the fault injectors, the runner and the checks are in
fault_stress/ (its __init__.py lists them).
"""
import argparse
import os
import pathlib
import shutil
import signal
import sys
import tempfile
import time

from fault_stress.checks import Checker
from fault_stress.runner import run_scenario
from fault_stress.scenario import gen_scenario

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_BASE_SEED = 20261123


def replay_command(seed):
    return f"python3 tests/integration/test_fault_stress.py --scenario-seed {seed}"


def describe_result(sc, res):
    parts = [f"exit code {res.rc} after {res.duration:.2f}s" + (" (hung)" if res.hung else "")]
    for name, t_ns, eff in res.signals:
        parts.append(f"{name} sent at {(t_ns - res.t0_ns) / 1e9:.3f}s"
                     + ("" if eff else " (not sent: the launcher had exited)"))
    fin = []
    for (r, a), (text, t) in sorted(res.intents.items()):
        who = f"r{r}" + (f"a{a}" if sc.max_restarts else "")
        fin.append(f"{who}:{text}@{(t - res.t0_ns) / 1e9:.3f}s")
    parts.append("workers that reached their last action: " + (", ".join(fin) or "none"))
    return "; ".join(parts)


def run_one(seed, xlaunch_bin, keep=False, verbose=False, out=sys.stdout):
    """Runs scenario `seed`; returns (errors, text of the report)."""
    sc = gen_scenario(seed)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"xstress-{seed}-"))
    try:
        res = run_scenario(sc, xlaunch_bin, tmp)
        errors = Checker(sc, res).run_all()
    except Exception:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    invs = sorted({i for i, _ in errors})
    line = f"scenario {seed}: " + ("ok" if not errors else
                                   f"FAIL invariant(s) {','.join(map(str, invs))}") + \
        f" ({sc.n} workers, {sc.event}, rc {res.rc}, {res.duration:.1f}s)"
    report = ""
    if errors:
        report = "\n".join(
            [f"FAIL scenario seed {seed}: invariant(s) {', '.join(map(str, invs))}",
             f"  replay: {replay_command(seed)}",
             *("  " + ln for ln in sc.text().splitlines()),
             f"  result: {describe_result(sc, res)}",
             *(f"  [{i}] {m}" for i, m in errors)])
        if keep:
            report += f"\n  kept: {tmp}"
    print(line, file=out, flush=True)
    if verbose and not errors:
        print(sc.text(), file=out, flush=True)
    if not (keep and errors):
        shutil.rmtree(tmp, ignore_errors=True)
    return errors, report


def run_many(xlaunch_bin, base_seed, seconds, count=None, keep=False, verbose=False,
             out=sys.stdout):
    print(f"fault stress: binary {xlaunch_bin}, base seed {base_seed}, budget {seconds:.0f}s"
          + (f", {count} scenarios" if count else ""), file=out, flush=True)
    start = time.monotonic()
    reports, i = [], 0
    while (count is None and time.monotonic() - start < seconds) or \
            (count is not None and i < count):
        errors, report = run_one(base_seed + i, xlaunch_bin, keep, verbose, out)
        if errors:
            reports.append((base_seed + i, errors, report))
        i += 1
    took = time.monotonic() - start
    seeds = f"seeds {base_seed}..{base_seed + i - 1}" if i else "no seeds"
    summary = (f"fault stress: {i} scenario(s) ({seeds}) in {took:.0f}s; "
               f"{len(reports)} failed" +
               (": " + ", ".join(str(s) for s, _, _ in reports) if reports else ""))
    print(summary, file=out, flush=True)
    return i, reports, summary


def default_bin():
    return os.environ.get("XLAUNCH_BIN", str(ROOT / "build/release/cli/xlaunch"))


def test_fault_stress(xlaunch_bin, capsys):
    """CI entry: scenarios base, base+1, ... until XLAUNCH_STRESS_SECONDS are used."""
    seconds = float(os.environ.get("XLAUNCH_STRESS_SECONDS", "150"))
    base = int(os.environ.get("XLAUNCH_STRESS_SEED", DEFAULT_BASE_SEED))
    with capsys.disabled():  # the seeds always reach the CI log
        print(f"\nfault stress: base seed {base} (XLAUNCH_STRESS_SEED), budget {seconds:.0f}s "
              f"(XLAUNCH_STRESS_SECONDS)", flush=True)
    n, reports, summary = run_many(xlaunch_bin, base, seconds)
    with capsys.disabled():
        print(summary, flush=True)
    assert n > 0
    if reports:
        shown = [r for _, _, r in reports[:10]]
        more = len(reports) - len(shown)
        import pytest
        pytest.fail(summary + "\n\n" + "\n\n".join(shown) +
                    (f"\n\n... and {more} more failing scenario(s)" if more else ""),
                    pytrace=False)


def main(argv=None):
    from launch_helpers import restore_default_stop_signals  # as conftest.py does
    restore_default_stop_signals()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("XLAUNCH_STRESS_SECONDS", "150")),
                    help="stop starting scenarios after this many seconds")
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("XLAUNCH_STRESS_SEED", DEFAULT_BASE_SEED)),
                    help="base seed: scenarios are seed, seed+1, ...")
    ap.add_argument("--count", type=int, help="run exactly this many scenarios")
    ap.add_argument("--scenario-seed", type=int, action="append",
                    help="replay this scenario (repeatable)")
    ap.add_argument("--describe", type=int, action="append",
                    help="print this scenario and run nothing (repeatable)")
    ap.add_argument("--bin", default=default_bin(), help="the xlaunch binary")
    ap.add_argument("--keep", action="store_true", help="keep the folders of failed scenarios")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every scenario")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `... | head` ends this script quietly
    if args.describe:
        for s in args.describe:
            print(gen_scenario(s).text())
        return 0
    if not os.access(args.bin, os.X_OK):
        print(f"xlaunch binary not found or not executable: {args.bin} (set XLAUNCH_BIN or "
              f"--bin)", file=sys.stderr)
        return 2
    if args.scenario_seed:
        failed = 0
        for s in args.scenario_seed:
            errors, report = run_one(s, args.bin, args.keep, True)
            if errors:
                failed += 1
                print(report, flush=True)
        return 1 if failed else 0
    n, reports, summary = run_many(args.bin, args.seed, args.seconds, args.count,
                                   args.keep, args.verbose)
    for _, _, report in reports:
        print("\n" + report, flush=True)
    if reports:
        print("\n" + summary)
    return 1 if reports else 0


if __name__ == "__main__":
    sys.exit(main())
