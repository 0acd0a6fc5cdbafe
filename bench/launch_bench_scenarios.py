"""The launch benchmark's four measurements (bench/launch_bench.py describes each): launch,
fail, rss and print, run on the harness of launch_bench_harness.py."""
import os
import signal
import statistics
import subprocess
import time

from launch_bench_harness import Bench, alive, children, progress, read_pids, summary, vm_hwm_kib
from launch_bench_report import fmt


class Scenarios(Bench):
    def launch(self):
        """Wall time of launch + exit of N /bin/true workers, interleaved, median."""
        times = {t: {n: [] for n in self.args.sizes} for t in self.tools()}
        for rep in range(self.args.reps):
            for n in self.args.sizes:
                tools = self.tools()
                tools = tools[rep % len(tools):] + tools[:rep % len(tools)]
                for tool in tools:
                    argv = self.launcher(tool, n, ["/bin/true"])
                    t0 = time.perf_counter()
                    p = self.start(argv)
                    rc, _, _ = self.wait(p)
                    dt = time.perf_counter() - t0
                    self.check_rc(p, rc, 0, f"launch {tool} n={n}")
                    times[tool][n].append(dt * 1e3)
                    progress(f"launch rep {rep + 1}/{self.args.reps} n={n} {tool}: {dt * 1e3:.1f} ms")
        return {t: {str(n): summary(v) for n, v in d.items()} for t, d in times.items()}

    def fail(self):
        """Failure of rank 0 -> launcher exit; siblings checked by pid afterwards."""
        n = self.args.fail_workers
        res = {t: {"teardown_ms": [], "exit_codes": [], "orphans": 0} for t in self.tools()}
        for rep in range(self.args.fail_reps):
            tools = self.tools()
            tools = tools[rep % len(tools):] + tools[:rep % len(tools)]
            for tool in tools:
                d = self.tmp / f"fail.{tool}.{rep}"
                d.mkdir()
                extra = ("--term_timeout", "30") if tool == "xlaunch" else ()
                argv = self.launcher(tool, n, [self.worker, "fail", str(d), "500", "3"], extra)
                p = self.start(argv)
                rc, _, t_exit = self.wait(p)
                pids = read_pids(d)
                self.worker_pids.update(pids)
                survivors = [pid for pid in pids if alive(pid)]
                for pid in survivors:
                    os.kill(pid, signal.SIGKILL)
                if len(pids) != n:
                    self.notes.append(f"fail {tool} rep {rep}: only {len(pids)}/{n} workers wrote a pid")
                if survivors:
                    self.notes.append(f"fail {tool} rep {rep}: {len(survivors)} worker(s) still "
                                      f"alive after the launcher exited (pids {survivors}); killed")
                res[tool]["orphans"] += len(survivors)
                res[tool]["exit_codes"].append(rc)
                try:
                    t_fail = int((d / "fail_ns").read_text())
                    ms = (t_exit - t_fail) / 1e6
                    res[tool]["teardown_ms"].append(ms)
                    progress(f"fail rep {rep + 1}/{self.args.fail_reps} {tool}: {ms:.1f} ms, "
                             f"exit {rc}, {len(survivors)} survivors")
                except (OSError, ValueError):
                    self.notes.append(f"fail {tool} rep {rep}: rank 0 wrote no timestamp (exit {rc})")
        for t in res:
            res[t]["summary"] = summary(res[t]["teardown_ms"])
        return res

    def rss(self):
        """Launcher peak RSS with N workers sleeping 2 s, run under /usr/bin/time -f %M."""
        n = self.args.rss_workers
        res = {}
        for tool in ["xlaunch", "torchrun"]:
            d = self.tmp / f"rss.{tool}"
            d.mkdir()
            timefile = d / "time.out"
            argv = ["/usr/bin/time", "-f", "%M", "-o", str(timefile),
                    *self.launcher(tool, n, [self.worker, "sleep", str(d), "2000"])]
            p = self.start(argv)
            peak = [0]

            def poll(pid):
                for child in children(pid):  # the launcher, time's only child
                    peak[0] = max(peak[0], vm_hwm_kib(child))

            rc, _, _ = self.wait(p, on_poll=poll)
            self.worker_pids.update(read_pids(d))
            self.check_rc(p, rc, 0, f"rss {tool}")
            try:
                maxrss = int(timefile.read_text().split()[-1])
            except (OSError, ValueError, IndexError):
                maxrss = None
            res[tool] = {"vmhwm_mib": peak[0] / 1024,
                         "time_maxrss_mib": None if maxrss is None else maxrss / 1024}
            progress(f"rss {tool}: VmHWM {peak[0] / 1024:.1f} MiB, /usr/bin/time %M "
                     f"{fmt(res[tool]['time_maxrss_mib'])} MiB")
        return res

    def print_(self):
        """Console throughput of one worker printing --print_bytes bytes of lines."""
        b, ll = self.args.print_bytes, self.args.line_len
        prog = [self.worker, "print", str(b), str(ll)]
        res = {k: [] for k in ["direct_devnull", "direct_file", "pipe_cat", "xlaunch"]}
        own = {k: [] for k in res}  # the worker's own time: its first byte to its last flushed
        times = self.tmp / "print.ns"
        os.environ["PRINT_TIME_FILE"] = str(times)  # inherited by every worker, xlaunch's too
        for rep in range(self.args.print_reps):
            for mode in res:
                out = self.tmp / "print.out"
                times.unlink(missing_ok=True)
                t0 = time.perf_counter()
                if mode == "direct_devnull":
                    p = self.start(prog)
                    rc, _, _ = self.wait(p)
                elif mode == "direct_file":
                    with open(out, "wb") as f:
                        p = self.start(prog, stdout=f)
                        rc, _, _ = self.wait(p)
                elif mode == "pipe_cat":
                    cat = self.start(["cat"], stdin=subprocess.PIPE)
                    p = self.start(prog, stdout=cat.stdin)
                    cat.stdin.close()
                    rc, _, _ = self.wait(p)
                    self.wait(cat)
                else:
                    p = self.start(self.launcher("xlaunch", 1, prog))
                    rc, _, _ = self.wait(p)
                dt = time.perf_counter() - t0
                if mode == "direct_file":
                    size = out.stat().st_size
                    out.unlink()
                    if size != b:
                        self.notes.append(f"print direct_file: wrote {size} bytes, expected {b}")
                self.check_rc(p, rc, 0, f"print {mode}")
                res[mode].append(dt)
                own[mode].append(int(times.read_text()) / 1e9)
                progress(f"print rep {rep + 1}/{self.args.print_reps} {mode}: {dt:.2f} s, "
                         f"{b / 1e6 / dt:.0f} MB/s; the worker's own {own[mode][-1]:.3f} s")
        del os.environ["PRINT_TIME_FILE"]
        return {m: {"seconds": statistics.median(v), "MB_per_s": b / 1e6 / statistics.median(v),
                    "runs_s": v, "worker_seconds": statistics.median(own[m]),
                    "worker_runs_s": own[m]} for m, v in res.items()}
