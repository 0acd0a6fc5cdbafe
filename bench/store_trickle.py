#!/usr/bin/env python3
"""A request trickled into the store: one client sends a CHECK of N keys one key per write (a
slow link, or a hostile client), while a second client, in its own process, asks GETNUMKEYS
every millisecond. Measures, for each server in one run: its CPU time while the request
arrives, the time until the answer, and the second client's worst and 99th-percentile wait.

Usage: bench/store_trickle.py [--build build/release] [--also LABEL=XLAUNCH ...]
                              [--keys 20000] [--gap_us 20] [--repeat 3] [--json out.json]

Servers: `xlaunch store serve` (this build, and any --also build) and PyTorch 1.13's
TCPStore(is_master=True) in a /usr/bin/python3 subprocess (bench/store_bench.py starts them).
Both read the 1.13 numbering (CHECK is 4, GETNUMKEYS 6). Medians of --repeat runs. A
benchmark, not a test: it asserts only that every answer is right.
"""
import argparse
import json
import multiprocessing
import os
import pathlib
import socket
import statistics
import struct
import sys
import time

import store_bench
from store_storm import cpu_seconds

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECK, GETNUMKEYS = 4, 6


def receive(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise RuntimeError("the server closed the connection")
        data += chunk
    return data


def connect(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def num_keys(sock):
    sock.sendall(bytes([GETNUMKEYS]))
    return struct.unpack("<q", receive(sock, 8))[0]


def probe(port, started, stop, results):
    """The other client: GETNUMKEYS every millisecond; each wait in seconds."""
    sock = connect(port)
    num_keys(sock)
    started.set()
    waits = []
    while not stop.is_set():
        begin = time.perf_counter()
        num_keys(sock)
        waits.append(time.perf_counter() - begin)
        time.sleep(0.001)
    results.put(waits)


def trickle(server, keys, gap):
    """One run: (server CPU s, seconds until the answer, the prober's waits)."""
    started, stop = multiprocessing.Event(), multiprocessing.Event()
    results = multiprocessing.Queue()
    prober = multiprocessing.Process(target=probe, args=(server.port, started, stop, results))
    prober.start()
    started.wait(30)
    sock = connect(server.port)
    num_keys(sock)  # connected and served before the clock starts
    names = [b"missing-%07d" % i for i in range(keys)]
    cpu_before, begin = cpu_seconds(server.proc.pid), time.perf_counter()
    sock.sendall(bytes([CHECK]) + struct.pack("<Q", keys))
    for i, name in enumerate(names):
        if gap:
            due = begin + i * gap
            while time.perf_counter() < due:
                pass
        sock.sendall(struct.pack("<Q", len(name)) + name)
    answer = receive(sock, 1)
    seconds = time.perf_counter() - begin
    cpu = cpu_seconds(server.proc.pid) - cpu_before
    stop.set()
    waits = results.get(timeout=60)
    prober.join(30)
    sock.close()
    if answer != b"\x01":  # NOT_READY: none of the keys exists
        raise RuntimeError(f"{server.name}: CHECK answered {answer!r}, not NOT_READY")
    return cpu, seconds, waits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=str(ROOT / "build/release"))
    parser.add_argument("--also", action="append", default=[], metavar="LABEL=XLAUNCH")
    parser.add_argument("--keys", type=int, default=20000)
    parser.add_argument("--gap_us", type=float, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    binaries = [("xlaunch", pathlib.Path(args.build) / "cli/xlaunch")]
    binaries += [tuple(spec.split("=", 1)) for spec in args.also]
    servers = [store_bench.Server(label, [str(path), "store", "serve", "--port", "0"])
               for label, path in binaries]
    servers.append(store_bench.Server("torch 1.13", ["/usr/bin/python3", "-c",
                                                     store_bench.TORCH_SERVER]))
    runs = {server.name: [] for server in servers}
    try:
        for repeat in range(args.repeat):
            for server in servers[repeat % len(servers):] + servers[:repeat % len(servers)]:
                runs[server.name].append(trickle(server, args.keys, args.gap_us * 1e-6))
    finally:
        for server in servers:
            server.stop()
    summary = {}
    for name, measured in runs.items():
        waits = [sorted(w) for _, _, w in measured]
        summary[name] = {
            "cpu_s": statistics.median(cpu for cpu, _, _ in measured),
            "answer_s": statistics.median(s for _, s, _ in measured),
            "probe_max_ms": statistics.median(w[-1] * 1e3 for w in waits),
            "probe_p99_ms": statistics.median(w[int(len(w) * 0.99)] * 1e3 for w in waits),
        }
    torch = summary["torch 1.13"]
    print(f"Trickled CHECK of {args.keys} keys, one per write, {args.gap_us:g} us apart; "
          f"medians of {args.repeat}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print("| server | CPU (s) | answer after (s) | other client's worst wait (ms) | p99 (ms) "
          "| worst wait / torch's |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, m in summary.items():
        print(f"| {name} | {m['cpu_s']:.2f} | {m['answer_s']:.2f} | {m['probe_max_ms']:.1f} | "
              f"{m['probe_p99_ms']:.1f} | {m['probe_max_ms'] / torch['probe_max_ms']:.2g}× |")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"args": vars(args), "results": summary},
                                                      indent=2))


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    main()
