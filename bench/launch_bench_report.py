"""The launch benchmark's report (bench/launch_bench.py): the Markdown tables and the issue's
targets, from the results of launch_bench_scenarios.py."""
import subprocess

from launch_bench_harness import ROOT

TARGETS = {"speedup_8": 50.0, "teardown_ms": 50.0, "rss_mib": 10.0}


def git_describe():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def fmt(v, unit=""):
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:.0f}{unit}"
    return f"{v:.1f}{unit}" if v >= 10 else f"{v:.2f}{unit}"


def ratio(a, b):
    return None if a is None or b in (None, 0) else a / b


def tables(r, args):
    lines = []
    tuned = args.tuned_monitor_interval > 0
    mi = args.tuned_monitor_interval
    head = "| measure | xlaunch | torchrun | torchrun / xlaunch |"
    sep = "|---|---:|---:|---:|"
    if tuned:
        head += f" torchrun mi={mi} | ratio |"
        sep += "---:|---:|"
    lines += [head, sep]

    def row(label, x, t, tt=None, unit=""):
        s = f"| {label} | {fmt(x, unit)} | {fmt(t, unit)} | {fmt(ratio(t, x), '×')} |"
        if tuned:
            s += f" {fmt(tt, unit)} | {fmt(ratio(tt, x), '×')} |"
        return s

    if "launch" in r:
        L = r["launch"]
        for n in args.sizes:
            g = lambda t: L[t][str(n)]["median"] if t in L else None
            lines.append(row(f"launch + exit, {n} worker{'s' * (n > 1)} (ms, median of {args.reps})",
                             g("xlaunch"), g("torchrun"), g("torchrun_tuned")))
    if "fail" in r:
        F = r["fail"]
        g = lambda t: F[t]["summary"]["median"] if t in F else None
        lines.append(row(f"failure → launcher exit, {args.fail_workers} workers "
                         f"(ms, median of {args.fail_reps})", g("xlaunch"), g("torchrun"),
                         g("torchrun_tuned")))
        o = lambda t: F[t]["orphans"] if t in F else None
        s = f"| workers alive after launcher exit (all runs) | {o('xlaunch')} | {o('torchrun')} | |"
        if tuned:
            s += f" {o('torchrun_tuned')} | |"
        lines.append(s)
        e = lambda t: ",".join(sorted({str(c) for c in F[t]["exit_codes"]})) if t in F else "—"
        s = f"| launcher exit code (rank 0 exits 3) | {e('xlaunch')} | {e('torchrun')} | |"
        if tuned:
            s += f" {e('torchrun_tuned')} | |"
        lines.append(s)
    if "rss" in r:
        R = r["rss"]
        lines.append(row(f"launcher peak RSS, {args.rss_workers} workers (MiB, VmHWM)",
                         R["xlaunch"]["vmhwm_mib"], R["torchrun"]["vmhwm_mib"]))
        lines.append(row("… maximum resident set size from /usr/bin/time (MiB)",
                         R["xlaunch"]["time_maxrss_mib"], R["torchrun"]["time_maxrss_mib"]))
    if "print" in r:
        P = r["print"]
        base = P["direct_file"]["MB_per_s"]
        lines += ["", f"Console throughput, 1 worker, {args.print_bytes / 1e6:.0f} MB in "
                  f"{args.line_len}-byte lines (median of {args.print_reps}):", "",
                  "| path | MB/s | seconds | vs direct to file | the worker's own seconds | "
                  "vs direct to file |", "|---|---:|---:|---:|---:|---:|"]
        names = {"direct_devnull": "worker > /dev/null (no launcher)",
                 "direct_file": "worker > file (no launcher)",
                 "pipe_cat": "worker \\| cat > /dev/null (plain pipe)",
                 "xlaunch": "xlaunch launch worker > /dev/null ([rank0]: prefixes)"}
        for m, label in names.items():
            own, own_base = P[m]["worker_seconds"], P["direct_file"]["worker_seconds"]
            lines.append(f"| {label} | {P[m]['MB_per_s']:.0f} | {P[m]['seconds']:.3f} | "
                         f"{P[m]['MB_per_s'] / base:.2f}× | {own:.3f} | {own / own_base:.2f}× |")
    lines += ["", "Targets (issues 2 and 18):", ""]
    for name, ok, text in targets(r):
        lines.append(f"- {name}: {text} — {'met' if ok else ('NOT met' if ok is False else 'not measured')}")
    return "\n".join(lines)


def targets(r):
    out = []
    if "launch" in r and "8" in r["launch"].get("xlaunch", {}):
        s = ratio(r["launch"]["torchrun"]["8"]["median"], r["launch"]["xlaunch"]["8"]["median"])
        out.append(("≥ 50× faster than torchrun at 8 workers", s is not None and s >= 50,
                    f"{fmt(s, '×')}"))
    else:
        out.append(("≥ 50× faster than torchrun at 8 workers", None, "—"))
    t = r.get("fail", {}).get("xlaunch", {}).get("summary", {}).get("median")
    out.append(("teardown < 50 ms", None if t is None else t < 50, f"{fmt(t, ' ms')}"))
    m = r.get("rss", {}).get("xlaunch", {}).get("vmhwm_mib")
    out.append(("launcher RSS < 10 MB", None if m is None else m * 1.048576 < 10,
                f"{fmt(m, ' MiB')}" + ("" if m is None else f" = {m * 1.048576:.1f} MB")))
    p = r.get("print", {})
    c = ratio(p.get("xlaunch", {}).get("seconds"), p.get("direct_file", {}).get("seconds"))
    out.append(("console: through xlaunch no slower than the worker writing a file (time ≤ 1.0×)",
                None if c is None else c <= 1.0, f"{fmt(c, '×')}"))
    w = ratio(p.get("xlaunch", {}).get("worker_seconds"),
              p.get("direct_file", {}).get("worker_seconds"))
    out.append(("console: a rank writing through xlaunch is not slowed (its own time ≤ 1.0×)",
                None if w is None else w <= 1.0, f"{fmt(w, '×')}"))
    return out
