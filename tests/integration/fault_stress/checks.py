"""Checks a scenario's run against the invariants in test_fault_stress.py: Checker(sc,
res).run_all() returns [(invariant, message)]. Here the facts every check uses (which
attempts ran, which workers failed and when) and invariants 4, 5 and 7 (processes left
behind, a hung launcher or console, inherited descriptors); 1 in outcome.py, 2, 3 and 6 in
records.py."""
import json

from .outcome import OutcomeChecks
from .records import RecordChecks
from .runner import hang_bound
from .scenario import LAUNCHER_SIGNALS


class Checker(OutcomeChecks, RecordChecks):
    def __init__(self, sc, res):
        self.sc, self.res = sc, res
        self.errors = []  # (invariant, message)
        self.summary = None
        self.summary_error = None
        self.entries = {}
        path = res.run_dir / "summary.json" if res.run_dir else None
        if path and path.exists():
            try:
                self.summary = json.loads(path.read_text())
                for e in self.summary.get("workers", []):
                    self.entries.setdefault((e.get("rank"), e.get("attempt")), []).append(e)
            except (ValueError, OSError) as e:
                self.summary_error = f"summary.json is not valid JSON: {e}"
        sig = [s for s in res.signals if s[2]]
        self.signal = sig[0] if sig else None  # the first effective launcher signal
        self.launcher_killed = res.rc == -9 and self.signal is not None and \
            self.signal[0] == "SIGKILL"
        # Killed by the signal's default action before it had handlers and before any worker
        # started: nothing ran, and a shell sees 128+S all the same, so the exit code is fine;
        # but a run folder without summary.json is still reported (invariant 3).
        xlog = res.run_dir / "xlaunch.log"
        self.died_before_setup = self.signal is not None and self.signal[0] != "SIGKILL" and \
            res.rc is not None and \
            res.rc == -LAUNCHER_SIGNALS[self.signal[0]] and not res.progress and \
            not res.intents and not res.fds and \
            not (xlog.exists() and " started, pid " in xlog.read_text(errors="replace"))
        self.abrupt = self.launcher_killed or self.died_before_setup  # no final flush

    def fail(self, inv, msg):
        self.errors.append((inv, msg))

    def entry(self, r, a):
        es = self.entries.get((r, a))
        return es[0] if es else None

    def t_rel(self, t_ns):
        return (t_ns - self.res.t0_ns) / 1e9

    # --- which attempts ran
    def attempts_ran(self):
        ran = [0]
        for a in range(1, len(self.sc.attempts)):
            evidence = any((r, a) in self.res.progress or (r, a) in self.res.intents or
                           (r, a) in self.entries for r in range(self.sc.n)) or \
                (self.res.run_dir / f"attempt_{a}").exists()
            if evidence:
                ran.append(a)
        return ran

    def failures(self, a):
        """Workers of attempt a that reached their failing last action: [(t_ns, worker)]."""
        out = []
        for w in self.sc.attempts[a]:
            if w.fails and (w.rank, a) in self.res.intents:
                out.append((self.res.intents[(w.rank, a)][1], w))
        return sorted(out, key=lambda x: x[0])

    def all_succeeded(self, a):
        return all(w.succeeds and (w.rank, a) in self.res.intents for w in self.sc.attempts[a])

    def end_of_attempt(self, a):
        """When the attempt's outcome was decided by the workers: first failure, or the last
        worker's exit when all succeeded; None if neither."""
        f = self.failures(a)
        if f:
            return f[0][0]
        if self.all_succeeded(a):
            return max(self.res.intents[(w.rank, a)][1] for w in self.sc.attempts[a])
        return None

    # --- 4
    def check_leftovers(self):
        if self.res.leftovers:
            desc = []
            for i in self.res.leftovers:
                tags = []
                if i["sid"] == i["pid"]:
                    tags.append("session leader (setsid)")
                if i["ppid"] == 1:
                    tags.append("orphaned to init")
                held = [f"{p} (console {name})" for p in i.get("pipes", [])
                        for name, ino in self.res.console_pipes.items()
                        if p.endswith(f"pipe:[{ino}]")]
                if held:
                    tags.append("holds " + ", ".join(held))
                desc.append(f"pid {i['pid']} ppid {i['ppid']} pgid {i['pgid']} sid {i['sid']} "
                            f"[{i['cmd']}]" + (f" {', '.join(tags)}" if tags else ""))
            note = " (the launcher was SIGKILLed)" if self.launcher_killed else \
                " (the test SIGKILLed the hung launcher)" if self.res.hung else ""
            self.fail(4, f"{len(desc)} process(es) with the run's marker still alive "
                         f"{self.sc.term_timeout + 5}s after the launcher exited{note}: " +
                         "; ".join(desc))
        if self.res.unkillable:
            self.fail(4, f"processes the test could not kill: {self.res.unkillable}")

    # --- 5
    def check_hang(self):
        if self.res.hung:
            stalled = [s for s, (m, _) in self.sc.console.items() if m != "read"]
            self.fail(5, f"launcher hung: still running after {hang_bound(self.sc):.0f}s "
                         f"(killed by the test)" +
                         (f"; its console {'/'.join(stalled)} was not being read as usual"
                          if stalled else ""))
        for stream, holders in self.res.console_held_by.items():
            self.fail(5, f"console {stream} still open 3s after the launcher exited, held by: "
                         f"{holders or 'unknown'}")

    # --- 7
    def check_fds(self):
        leaks = []
        for (r, a), fds in sorted(self.res.fds.items()):
            for fd, target in sorted(fds.items()):
                what = [f"console {name}" for name, ino in self.res.console_pipes.items()
                        if target == f"pipe:[{ino}]"]
                leaks.append(f"rank {r}{f' attempt {a}' if self.sc.max_restarts else ''} fd {fd} "
                             f"-> {target}{' (' + what[0] + ')' if what else ''}")
        if leaks:
            self.fail(7, "workers inherited descriptors besides 0, 1, 2: " + "; ".join(leaks))

    def run_all(self):
        self.check_hang()
        self.check_fds()
        self.check_leftovers()
        if not self.res.hung:
            self.check_exit_code()
            self.check_summary()
            self.check_logs()
            self.check_console()
        return self.errors
