"""Connect storms for bench/store_bench.py: N clients connect at once, ADD on a counter and
WAIT on a key that the client whose ADD returns N sets; time until all are released, and the
server's peak RSS meanwhile. Then a fit of both against N and a projection to 100,000.

One process may hold at most RLIMIT_NOFILE's hard limit of descriptors (20,000 on the
machine measured, for root too), so the largest storm is what the server's own limit
allows, and the clients live in several store_load processes (--per_process clients each)
that share one counter and start together (store_load --start_at_ns)."""
import json
import math
import os
import resource
import subprocess
import sys
import time
import uuid

PROJECT_TO = 100_000


def cpu_seconds(pid):
    """User + system CPU time the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def largest_storm(servers, hard_limit):
    """The most clients every server can hold: its limit less what it has open now, less
    one for the driver's probe and a few for what a server opens while it runs."""
    return min(hard_limit - server_fds(s.proc.pid) - 4 for s in servers)


def sizes(spec, largest):
    out = []
    for item in spec.split(","):
        n = largest if item == "max" else int(item)
        if n > largest:
            n = largest
        if n not in out:
            out.append(n)
    return out


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def reset_peak_rss(pid):
    """Resets VmHWM to the current RSS (Linux 4.0+: clear_refs 5), so the peak read after a
    storm is that storm's."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def storm_once(server, n, args, store_load, source_ips, pin):
    procs = max(1, math.ceil(n / args.per_process))
    run = uuid.uuid4().hex[:12]
    # Far enough ahead that every process is up and waiting (fork+exec of a small binary).
    start_at = time.monotonic_ns() + (200 + 20 * procs) * 1_000_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = []
    for i in range(procs):
        share = n // procs + (1 if i < n % procs else 0)
        argv = [str(store_load), "storm", "--port", server.port, "--clients", share,
                "--total", n, "--run_id", run, "--start_at_ns", start_at,
                "--timeout_s", args.storm_timeout, "--source_ips", source_ips,
                "--dialect", server.dialect]
        children.append(subprocess.Popen(list(map(str, argv)), stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, preexec_fn=pin))
    parts, errors = [], []
    for c in children:
        try:
            out, err = c.communicate(timeout=args.storm_timeout + 60)
        except subprocess.TimeoutExpired:
            for other in children:
                other.kill()
                other.wait()
            raise
        lines = out.strip().splitlines()
        if c.returncode not in (0, 1) or not lines:
            errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {c.returncode}")
        else:
            parts.append(json.loads(lines[-1]))
    if errors:
        raise RuntimeError("; ".join(errors))
    res = merge(parts, procs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The clients' own CPU: on loopback their connects also run the handshake.
    res["clients_cpu_s"] = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return res


def merge(parts, procs):
    """One storm's result from its processes' (CLOCK_MONOTONIC) phase times."""
    start = min(p["start_ns"] for p in parts)
    timed_out = any(p["timed_out"] for p in parts)
    released = sum(p["released"] for p in parts)
    res = {"clients": sum(p["clients"] for p in parts), "processes": procs,
           "released": released, "timed_out": timed_out,
           "connect_retries": sum(p["connect_retries"] for p in parts)}
    if timed_out:
        return res
    done = max(p["done_ns"] for p in parts)
    last_added = max(p["last_added_ns"] for p in parts)
    res["seconds"] = (done - start) / 1e9
    res["connect_s"] = (max(p["connected_ns"] for p in parts) - start) / 1e9
    res["release_s"] = (done - last_added) / 1e9 if last_added else 0.0
    return res


def run_storms(servers, args, store_load, results, source_ips_of, pin, sizes_run):
    """Each size on every server in turn (so other load on the machine hits all alike).
    A server that fails a size gets one more try at half of it; after a failure or a
    time-out it is not run at larger sizes."""
    gave_up = {}
    for n in sizes_run:
        for s in servers:
            r = results["servers"][s.name]
            if s.name in gave_up:
                r[f"storm_{n}"] = {"failed": f"not run: {gave_up[s.name]}"}
                continue
            size, failures = n, []
            while True:
                try:
                    reset_peak_rss(s.proc.pid)
                    base, cpu = status_kib(s.proc.pid, "VmRSS"), cpu_seconds(s.proc.pid)
                    res = storm_once(s, size, args, store_load, source_ips_of(s), pin)
                    res["server_cpu_s"] = cpu_seconds(s.proc.pid) - cpu
                    res["rss_before_kib"] = base
                    res["peak_rss_kib"] = status_kib(s.proc.pid, "VmHWM")
                    res["loadavg_1min"] = os.getloadavg()[0]
                    break
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    failures.append(f"{size} clients: {str(e)[-200:]}")
                    if size < n or s.proc.poll() is not None:
                        res = {"failed": "; ".join(failures)}
                        break
                    size //= 2
            if failures:
                res["failures"] = failures
            if "failed" in res or res["timed_out"] or res["clients"] != n:
                gave_up[s.name] = f"failed at {n}"
            r[f"storm_{n}"] = res
            print(f"{s.name}: storm {n}: {res}", flush=True, file=sys.stderr)


def least_squares(xs, ys):
    """(intercept, slope) of y = a + b x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b


def fit(points):
    """points: [(N, y)] of storms that completed. Returns the power-law exponent k of
    y ~ N^k (log-log least squares), the linear fit y = a + b N, and both projected to
    PROJECT_TO: the line, and the power law through the largest point."""
    if len(points) < 3:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    _, k = least_squares([math.log(x) for x in xs], [math.log(y) for y in ys])
    a, b = least_squares(xs, ys)
    n_max, y_max = max(points)
    return {"exponent": k, "intercept": a, "slope": b, "points": len(points),
            "linear_at": a + b * PROJECT_TO, "power_at": y_max * (PROJECT_TO / n_max) ** k}


def fits(results, sizes_run):
    """Per server: the fit of storm seconds and of peak RSS growth (over the RSS before)."""
    out = {}
    for name, r in results["servers"].items():
        ok = [(n, r[f"storm_{n}"]) for n in sizes_run
              if f"storm_{n}" in r and comparable(r[f"storm_{n}"], n)]
        t = fit([(n, x["seconds"]) for n, x in ok])
        cpu = fit([(n, max(x["server_cpu_s"], 0.01)) for n, x in ok])
        # The peak itself, not its growth over the RSS before: the allocator keeps what the
        # previous (smaller) storm freed, so the growth would undercount. The line's
        # intercept is the server's baseline, its slope the bytes per client.
        m = fit([(n, x["peak_rss_kib"] * 1024) for n, x in ok])
        if t:
            out[name] = {"seconds": t, "server_cpu_s": cpu, "peak_rss_bytes": m}
    return out


def comparable(r, n):
    return "failed" not in r and not r["timed_out"] and r["clients"] == n


def cell(r, n):
    if "failed" in r:
        return f"failed ({r['failed']})"
    if r["timed_out"]:
        return f"timed out ({r['released']} released)"
    txt = (f"{r['seconds']:.2f} s (release {r['release_s']:.2f} s), CPU "
           f"{r['server_cpu_s']:.2f} s, peak {r['peak_rss_kib'] / 1024:.1f} MiB")
    if r["clients"] != n:
        txt += f" (only {r['clients']} clients"
        txt += f"; failed at {r['failures'][0]})" if r.get("failures") else ")"
    return txt


def storm_rows(results, pairs, sizes_run, ratio):
    servers = results["servers"]
    lines = []
    for n in sizes_run:
        row = f"| storm {n:,}: all released; server CPU; server peak RSS |"
        for ours, theirs, _ in pairs:
            a, b = servers[ours][f"storm_{n}"], servers[theirs][f"storm_{n}"]
            both = comparable(a, n) and comparable(b, n)
            r = ratio(b["seconds"], a["seconds"]) if both else "n/a"
            row += f" {cell(a, n)} | {cell(b, n)} | {r} |"
        lines.append(row + " | |")
    return lines


def fit_lines(fitted):
    """The fits as a table: exponent k (y ~ N^k), the line a + b N, and the projections."""
    at = f"{PROJECT_TO // 1000}k"
    lines = ["", f"| server (sizes fitted) | wall time: k; a + b N | at {at}: line; N^k | "
             f"server CPU: k; per client | at {at}: line; N^k | peak RSS: a + b N "
             f"| at {at}: line |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, f in fitted.items():
        t, c, m = f["seconds"], f["server_cpu_s"], f["peak_rss_bytes"]
        lines.append(
            f"| {name} ({t['points']}) | {t['exponent']:.2f}; {t['intercept']:.3f} s + "
            f"{t['slope'] * 1e6:.1f} us N | {t['linear_at']:.1f} s; {t['power_at']:.1f} s | "
            f"{c['exponent']:.2f}; {c['slope'] * 1e6:.1f} us | {c['linear_at']:.1f} s; "
            f"{c['power_at']:.1f} s | {m['intercept'] / 2**20:.1f} MiB + {m['slope']:.0f} B N | "
            f"{m['linear_at'] / 2**20:.0f} MiB |")
    return lines
