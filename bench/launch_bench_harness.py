"""The launch benchmark's harness (bench/launch_bench.py): every process in a session of its own,
waited for with wait4 under a deadline, the launchers' command lines, and an end that leaves no
process behind. Plus the small /proc readers the measurements use."""
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
WRAPPER = ROOT / "bench" / "launch_torchrun_wrapper.py"
WORKER_SRC = ROOT / "bench" / "launch_worker.c"
RUN_TIMEOUT_S = 180  # any single launcher run longer than this is killed (and reported)


class Bench:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = pathlib.Path(tmp)
        self.live = {}  # pid -> description, every process group this script started
        self.worker_pids = set()  # worker pids read from pid files, killed at the end if alive
        self.lock = threading.Lock()
        self.notes = []
        self.counter = 0

    # ---------- process handling ----------
    def start(self, argv, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, stderr=None):
        """Starts argv in its own session; returns the Popen. stderr goes to a per-run file."""
        self.counter += 1
        errpath = self.tmp / f"stderr.{self.counter}"
        errf = open(errpath, "wb") if stderr is None else stderr
        p = subprocess.Popen(argv, stdout=stdout, stderr=errf, stdin=stdin,
                             start_new_session=True, close_fds=True)
        if stderr is None:
            errf.close()
        p.errpath = errpath
        with self.lock:
            self.live[p.pid] = " ".join(map(str, argv))
        return p

    def wait(self, p, timeout=RUN_TIMEOUT_S, on_poll=None):
        """wait4 for p; returns (exit status, rusage, t_exit_ns). Kills p's group on timeout."""
        timer = threading.Timer(timeout, self._timeout_kill, (p,))
        timer.daemon = True
        timer.start()
        try:
            if on_poll is None:
                _, status, ru = os.wait4(p.pid, 0)
            else:
                while True:
                    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                    if pid == p.pid:
                        break
                    on_poll(p.pid)
                    time.sleep(0.01)
            t_exit = time.time_ns()
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        with self.lock:
            self.live.pop(p.pid, None)
        if getattr(p, "timed_out", False):
            self.notes.append(f"TIMEOUT after {timeout}s, killed: {' '.join(map(str, p.args))}")
        return p.returncode, ru, t_exit

    def _timeout_kill(self, p):
        p.timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cleanup(self):
        """Ends every process group still running (SIGTERM, 2 s, SIGKILL), then any worker that
        wrote a pid file and is still alive (e.g. after an interrupted run)."""
        with self.lock:
            groups = list(self.live)
        for pid in groups:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2
        for pid in groups:
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0] == pid:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.02)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        for d in self.tmp.iterdir():
            if d.is_dir():
                self.worker_pids.update(read_pids(d))
        for pid in self.worker_pids:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    # ---------- launchers ----------
    def launcher(self, tool, n, program, extra=()):
        if tool == "xlaunch":
            return [self.args.xlaunch, "launch", "--standalone", "--num_processes", str(n),
                    *extra, "--no_python", *program]
        argv = ["/usr/bin/python3", str(WRAPPER), "--standalone", "--nproc_per_node", str(n)]
        if tool == "torchrun_tuned":
            argv += ["--monitor_interval", str(self.args.tuned_monitor_interval)]
        return argv + ["--no_python", *program]

    def tools(self):
        t = ["xlaunch", "torchrun"]
        if self.args.tuned_monitor_interval > 0:
            t.append("torchrun_tuned")
        return t

    def check_rc(self, p, rc, expected, what):
        if rc != expected:
            err = p.errpath.read_text(errors="replace")[-600:]
            self.notes.append(f"{what}: exit code {rc}, expected {expected}; stderr tail: {err!r}")


# ---------- helpers ----------
def run_cleanly(name, bench, tmp, body):
    """Runs body(); Ctrl-C, SIGTERM and SIGHUP end it through bench's cleanup, which also
    removes tmp. Returns the exit status for sys.exit."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        body()
    except KeyboardInterrupt:
        print(f"{name}: interrupted; cleaning up", file=sys.stderr)
        return 130
    finally:
        bench.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def driver_setup(name, xlaunch):
    """A driver's first step: exits with a clear message without an xlaunch binary, and makes
    SIGTERM/SIGHUP end the run like Ctrl-C does, through the driver's cleanup."""
    if not os.access(xlaunch, os.X_OK):
        sys.exit(f"{name}: no xlaunch binary at {xlaunch} (build it, or pass --xlaunch)")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: (_ for _ in ()).throw(KeyboardInterrupt()))


def progress(msg):
    print(f"  {msg}", file=sys.stderr, flush=True)


def summary(values):
    if not values:
        return {"median": None, "min": None, "max": None, "runs": []}
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "runs": [round(v, 3) for v in values]}


def alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read_pids(d):
    pids = []
    for f in d.glob("pid.*"):
        try:
            pids.append(int(f.read_text()))
        except (OSError, ValueError):
            pass
    return pids


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
