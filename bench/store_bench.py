#!/usr/bin/env python3
"""Store benchmark: xlaunch's store vs PyTorch 1.13's and 2.6's own TCPStore servers, in one run.

Usage: bench/store_bench.py [--build build/release] [--seconds 2] [--repeat 3]
                            [--clients 1,8,64] [--depths 1,16] [--storm 1000,2000,...,max]
                            [--per_process 5000] [--storm_timeout 120]
                            [--idle 10000] [--source_ips 8] [--pin] [--skip torch26,...]
                            [--json out.json]

The servers run on 127.0.0.1 as separate processes: `xlaunch store serve --port 0`,
`TCPStore(is_master=True)` in a /usr/bin/python3 subprocess (Debian 12's torch 1.13) and the
same in Debian 13's torch 2.6 (scripts/torch26-python; built without libuv, so this is 2.6's
older, non-libuv server). The same C++ load generator (bench/store_load.cpp) drives all: in
the 1.13 numbering against torch 1.13, and in the 2.2+ numbering (VALIDATE first) against
torch 2.6, which accepts nothing else; xlaunch's store is measured in both ("xlaunch" and
"xlaunch 2.2+"; one process). Measures set/get/add ops/s with 1, 8, 64 clients, each
keeping 1 request in flight (what PyTorch clients do) or more (--depths); a connect storm (N
clients each ADD then WAIT on a key the last one sets; time until all are released, the
server's CPU time and peak RSS, from 1,000 clients up to what the descriptor limit allows,
fitted against N and projected to 100,000: bench/store_storm.py); and server RSS per idle
connection. A third server, bench/null_store.cpp (decodes and answers
requests, keeps no map), runs the ops measures too: its numbers are the ceiling any
single-threaded server can reach here, so "ceiling / torch" is the most a ratio can be.
Prints a Markdown table with ratios. This is a benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import os
import pathlib
import resource
import socket
import statistics
import struct
import subprocess
import sys

import store_storm
from store_storm import cpu_seconds

ROOT = pathlib.Path(__file__).resolve().parents[1]

TORCH_SERVER = r"""
import datetime, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
import torch.distributed as dist
import torch
# 2.4+ defaults to libuv; Debian 13's 2.6 has none, and 1.13 has no such argument.
kw = {} if torch.__version__.startswith("1.") else {"use_libuv": False}
s = dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=600),
                  wait_for_workers=False, **kw)
print(f"listening on 127.0.0.1:{s.port}", flush=True)
sys.stdin.read()
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


SERVER_CPUS, LOAD_CPUS = None, None


def pin(cpus):
    """preexec_fn that pins the child to `cpus` (None: leave it alone)."""
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


class Server:
    def __init__(self, name, argv, dialect="1.13"):
        self.name = name
        self.dialect = dialect
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     preexec_fn=pin(SERVER_CPUS))
        line = self.proc.stdout.readline().strip()
        if "listening on" not in line:
            raise RuntimeError(f"{name} did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])

    def speaking(self, name, dialect):
        """The same server process, measured with the load in another numbering."""
        other = object.__new__(Server)
        other.name, other.dialect, other.proc, other.port = name, dialect, self.proc, self.port
        return other

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.wait(timeout=30)


def num_keys_roundtrip(port, dialect="1.13"):
    """One GETNUMKEYS on a fresh connection; servers accept in order, so once this answers
    every connection opened before it has been accepted."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        # 2.2+: VALIDATE (0) + magic, then GETNUMKEYS is 7 (everything shifted by one).
        s.sendall(b"\x06" if dialect == "1.13" else b"\x00" + struct.pack("<I", 0x3C85F7CE) + b"\x07")
        data = b""
        while len(data) < 8:
            chunk = s.recv(8 - len(data))
            if not chunk:
                raise RuntimeError("server closed the probe connection")
            data += chunk
        return struct.unpack("<q", data)[0]


def idle_rss(server, count):
    num_keys_roundtrip(server.port, server.dialect)
    before = rss_kib(server.proc.pid)
    socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(count)]
    num_keys_roundtrip(server.port, server.dialect)
    after = rss_kib(server.proc.pid)
    for s in socks:
        s.close()
    return (after - before) * 1024 / count


def load(binary, *args):
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True,
                          timeout=900, preexec_fn=pin(LOAD_CPUS))
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"store_load {args} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ops_measures(args):
    """(op, clients, depth) of every ops measure, in table order."""
    return [(op, n, d) for d in map(int, args.depths.split(","))
            for op in ("set", "get", "add") for n in map(int, args.clients.split(","))]


def run_ops(servers, args, store_load, results):
    for op, n, depth in ops_measures(args):
        key = f"{op}_{n}_d{depth}"
        # Servers alternate run by run and the median counts, so a burst of load from
        # elsewhere on the machine skews no side much.
        runs = {s.name: [] for s in servers}
        for _ in range(args.repeat):
            for s in servers:
                cpu0 = cpu_seconds(s.proc.pid)
                res = load(store_load, "ops", "--port", s.port, "--op", op, "--clients", n,
                           "--depth", depth, "--seconds", args.seconds, "--dialect", s.dialect)
                cpu = cpu_seconds(s.proc.pid) - cpu0
                runs[s.name].append((res["ops_per_s"], cpu * 1e6 / max(res["ops"], 1)))
        for s in servers:
            r = results["servers"][s.name]
            r[key] = statistics.median(x[0] for x in runs[s.name])
            r[f"{key}_cpu_us_per_op"] = statistics.median(x[1] for x in runs[s.name])
            r[f"{key}_runs"] = runs[s.name]
            print(f"{s.name}: {op} x{n} depth {depth}: {r[key]:.0f} ops/s, "
                  f"server CPU {r[f'{key}_cpu_us_per_op']:.2f} us/op", file=sys.stderr)


def storm_source_ips(server, args):
    """Source addresses of a storm's clients. torch 2.6's server looks up the name of every
    peer it accepts; 127.0.0.2-9 are in no hosts file here, so each lookup waits on DNS (about
    56 ms a connection on the machine measured, serialised in its accept loop). Its pair
    (torch 2.6 and xlaunch in the 2.2+ numbering) therefore storms from 127.0.0.1 only."""
    return 1 if server.dialect == "2.2" else args.source_ips


def ratio(better, worse):
    return f"{better / worse:.2f}x" if better > 0 and worse > 0 else "n/a"


# (ours, theirs, label): each torch server beside xlaunch's store in the same numbering.
PAIRS = [("xlaunch", "torch-1.13", "torch 1.13"), ("xlaunch 2.2+", "torch-2.6", "torch 2.6")]


def table(args, results, skip):
    servers = results["servers"]
    pairs = [p for p in PAIRS if p[1] in servers]
    ceiling = servers.get("no-store ceiling", {})
    head = "| measure |" + "".join(f" xlaunch | {label} | xlaunch / {label.split()[1]} |"
                                   for _, _, label in pairs) + " ceiling | ceiling / torch 1.13 |"
    lines = [head, "| --- |" + " ---: |" * (3 * len(pairs) + 2)]
    measures = ops_measures(args) if "ops" not in skip else []
    for op, n, depth in measures:
        key = f"{op}_{n}_d{depth}"
        row = f"| {op} ops/s, {n} clients, depth {depth} |"
        for ours, theirs, _ in pairs:
            a, b = servers[ours][key], servers[theirs][key]
            row += f" {a:,.0f} | {b:,.0f} | {ratio(a, b)} |"
        c = ceiling.get(key, 0)
        lines.append(row + f" {c:,.0f} | {ratio(c, servers['torch-1.13'][key])} |")
    for op, n, depth in measures:
        key = f"{op}_{n}_d{depth}_cpu_us_per_op"
        # Less CPU is better, so the ratios are torch / xlaunch and torch / ceiling.
        row = f"| server CPU per {op}, {n} clients, depth {depth} |"
        for ours, theirs, _ in pairs:
            a, b = servers[ours][key], servers[theirs][key]
            row += f" {a:.2f} us | {b:.2f} us | {ratio(b, a)} |"
        c = ceiling.get(key, 0)
        lines.append(row + f" {c:.2f} us | {ratio(servers['torch-1.13'][key], c)} |")

    if "storm" not in skip:
        lines += store_storm.storm_rows(results, pairs, results["storm_sizes"], ratio)
    if "idle" not in skip:
        row = f"| RSS per idle connection ({args.idle} conns) |"
        for _, theirs, _ in pairs:
            a, b = servers["xlaunch"]["rss_bytes_per_idle_conn"], servers[theirs]["rss_bytes_per_idle_conn"]
            row += f" {a:,.0f} B | {b:,.0f} B | {ratio(b, a)} |"
        lines.append(row + " | |")
    if "storm" not in skip:
        lines += store_storm.fit_lines(results["storm_fits"])
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build/release"))
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs per measure; the median counts")
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--depths", default="1,16",
                    help="requests in flight per client; 1 is what PyTorch clients do")
    ap.add_argument("--storm", default="1000,2000,4000,8000,16000,max",
                    help="storm sizes; max: the most the servers' descriptor limit allows")
    ap.add_argument("--per_process", type=int, default=5000,
                    help="storm clients per load process (each process holds one descriptor "
                         "per client, under the same limit)")
    ap.add_argument("--storm_timeout", type=float, default=120,
                    help="seconds a storm may take before it counts as timed out")
    ap.add_argument("--idle", type=int, default=10000)
    # One source address has ~28k ephemeral ports and the kernel's free-port search
    # dominates a 16k-client storm from one host; real storms come from many hosts.
    ap.add_argument("--source_ips", type=int, default=8)
    # Where the scheduler puts the two processes (same core or not) changes single-client
    # latency several-fold from run to run; pinning makes runs comparable on a quiet machine
    # (on a busy 2-core one it hurts both sides, as neither can dodge the other load).
    ap.add_argument("--pin", action="store_true",
                    help="pin the server to the first CPU and the load generator to the second")
    ap.add_argument("--skip", default="",
                    help="comma-separated: idle, ops, storm, torch26 (the 2.6 server)")
    ap.add_argument("--json")
    args = ap.parse_args()
    build = pathlib.Path(args.build)
    xlaunch, store_load, null_store = (build / "cli/xlaunch", build / "bench/store_load",
                                       build / "bench/null_store")
    for p in (xlaunch, store_load, null_store):
        if not p.exists():
            sys.exit(f"store_bench: {p} not found; build the xlaunch, store_load and null_store "
                     "targets")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    global SERVER_CPUS, LOAD_CPUS
    cpus = sorted(os.sched_getaffinity(0))
    if args.pin and len(cpus) >= 2:
        SERVER_CPUS, LOAD_CPUS = {cpus[0]}, {cpus[1]}

    skip = set(filter(None, args.skip.split(",")))
    ours = Server("xlaunch", [str(xlaunch), "store", "serve", "--port", "0"])
    servers = [ours, Server("torch-1.13", ["/usr/bin/python3", "-c", TORCH_SERVER])]
    if "torch26" not in skip:
        # Builds the Debian 13 root on first use (a few minutes, needs root).
        subprocess.run([str(ROOT / "scripts/torch26-root")], check=True, stdout=subprocess.DEVNULL)
        servers += [ours.speaking("xlaunch 2.2+", "2.2"),
                    Server("torch-2.6", [str(ROOT / "scripts/torch26-python"), "-c", TORCH_SERVER],
                           dialect="2.2")]
    ceiling = Server("no-store ceiling", [str(null_store)])
    results = {"machine": {"cpus": os.cpu_count(), "nofile_hard": hard,
                           "loadavg_before": os.getloadavg(), "pinned": bool(SERVER_CPUS)},
               "servers": {s.name: {} for s in servers + [ceiling]}}
    try:
        # Idle connections send nothing, so one measure of xlaunch's process covers both.
        for s in [s for s in servers if s.name != "xlaunch 2.2+"] if "idle" not in skip else ():
            r = results["servers"][s.name]
            r["rss_bytes_per_idle_conn"] = idle_rss(s, args.idle)
            print(f"{s.name}: idle RSS/conn {r['rss_bytes_per_idle_conn']:.0f} B", file=sys.stderr)
        if "ops" not in skip:
            run_ops(servers + [ceiling], args, store_load, results)
        if "storm" not in skip:
            # The 2.2+ pair shares xlaunch's process; count each process once.
            procs = {s.proc.pid: s for s in servers}.values()
            results["storm_sizes"] = store_storm.sizes(args.storm,
                                                       store_storm.largest_storm(procs, hard))
            store_storm.run_storms(servers, args, store_load, results, lambda s:
                                   storm_source_ips(s, args), pin(LOAD_CPUS),
                                   results["storm_sizes"])
            results["storm_fits"] = store_storm.fits(results, results["storm_sizes"])
    finally:
        for s in servers + [ceiling]:
            s.stop()  # the shared xlaunch process: the second stop finds it gone
    results["machine"]["loadavg_after"] = os.getloadavg()
    print(table(args, results, skip))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))

if __name__ == "__main__":
    main()
