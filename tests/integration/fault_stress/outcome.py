"""Invariant 1, the launcher's exit code (see test_fault_stress.py): mixed into Checker
(checks.py), which holds the scenario, the Result and what summary.json says."""
import os

from .scenario import LAUNCHER_SIGNALS, SELF_SIGNALS

# A worker failure and a launcher signal closer than this (seconds) may be seen in either order.
RACE_WINDOW = float(os.environ.get("XLAUNCH_STRESS_RACE_S", "0.5"))


def outcome_of(entry):
    """summary.json's worker entry -> ("exit", code) | ("signal", "SEGV") | None."""
    if entry is None:
        return None
    if entry.get("exit_code") is not None:
        return ("exit", entry["exit_code"])
    if entry.get("signal") is not None:
        for name, num in SELF_SIGNALS.items():
            if num == entry["signal"]:
                return ("signal", name)
        return ("signal", f"#{entry['signal']}")
    return None


def outcome_text(o):
    if o is None:
        return "no outcome"
    return f"exit {o[1]}" if o[0] == "exit" else f"SIG{o[1]}"


class OutcomeChecks:
    """Checker's invariant 1: the exit code the launcher should have, given which worker
    really failed first and when a signal reached it."""

    # --- 1
    def check_exit_code(self):
        sc, res = self.sc, self.res
        rc = res.rc
        ran = self.attempts_ran()
        final = ran[-1]
        for a in ran[:-1]:
            if not self.failures(a):
                self.fail(1, f"attempt {a + 1} ran although no worker of attempt {a} failed")
        if len(ran) < len(sc.attempts) and self.failures(final) and self.signal is None \
                and rc not in (-9,):
            self.fail(1, f"attempt {final} had a failure ({self.failure_text(final)}) but no "
                         f"restart happened (--max_restarts {sc.max_restarts})")
        if self.signal is None:
            self.check_no_signal_outcome(final, rc)
            return
        name, t_sig, _ = self.signal
        signum = LAUNCHER_SIGNALS[name]
        window = int(RACE_WINDOW * 1e9)
        if name == "SIGKILL" and rc == -9 or self.died_before_setup:
            return
        early = [(t, w) for t, w in self.failures(final) if t < t_sig - window]
        if name != "SIGKILL" and rc == 128 + signum and not (early and early[0][1].code == rc):
            if early:
                t, w = early[0]
                self.fail(1, f"exit code {rc} ({name}), but rank {w.rank} had already failed "
                             f"({w.final_text()} at {self.t_rel(t):.3f}s, {(t_sig - t) / 1e9:.3f}s "
                             f"before the {name} at {self.t_rel(t_sig):.3f}s): expected {w.code}")
            if self.summary and self.summary.get("interrupted_by") != name:
                self.fail(1, f"exit code {rc} but summary.json has interrupted_by="
                             f"{self.summary.get('interrupted_by')!r}, not {name!r}")
            return
        # The launcher did not end by the signal: the job must have ended (by itself) before
        # or about when the signal was sent, and the exit code follows the workers.
        expected = f"{128 + signum} ({name})" if name != "SIGKILL" else "-9 (killed)"
        end = self.end_of_attempt(final)
        if end is None or end > t_sig + window:
            when = "never" if end is None else f"at {self.t_rel(end):.3f}s"
            self.fail(1, f"exit code {rc} after {name} at {self.t_rel(t_sig):.3f}s, while the "
                         f"workers' outcome was decided {when}: expected {expected}")
            return
        self.check_no_signal_outcome(final, rc)

    def failure_text(self, a):
        return ", ".join(f"rank {w.rank} {w.final_text()} at {self.t_rel(t):.3f}s"
                         for t, w in self.failures(a)) or "none"

    def check_no_signal_outcome(self, a, rc):
        fails = self.failures(a)
        if rc == 0:
            if not self.all_succeeded(a):
                why = []
                for w in self.sc.attempts[a]:
                    intent = self.res.intents.get((w.rank, a))
                    if intent is None:
                        why.append(f"rank {w.rank} never reached its last action "
                                   f"({w.final_text()})")
                    elif w.fails:
                        why.append(f"rank {w.rank} did {w.final_text()} at "
                                   f"{self.t_rel(intent[1]):.3f}s")
                    elif not w.succeeds:
                        why.append(f"rank {w.rank} was still running ({w.final_text()})")
                self.fail(1, "exit code 0, but " + "; ".join(why))
                return
            cause = self.summary.get("root_cause") if self.summary else None
            # A root cause of an earlier attempt is the failure that caused the restart.
            if cause is not None and cause.get("attempt", a) >= a:
                self.fail(1, f"exit code 0 but summary.json names a root cause: {cause}")
            return
        if not fails:
            why = "every worker exited 0" if self.all_succeeded(a) else \
                "none reached a failing last action"
            self.fail(1, f"exit code {rc}, but no worker failed ({why})")
            return
        if self.summary is None:
            codes = {w.code for _, w in fails}
            if rc not in codes:
                self.fail(1, f"exit code {rc}, expected one of {sorted(codes)} "
                             f"({self.failure_text(a)}); no summary.json to name the root cause")
            return
        cause = self.summary.get("root_cause")
        if not cause:
            self.fail(1, f"exit code {rc} but summary.json names no root cause "
                         f"(failures: {self.failure_text(a)})")
            return
        r, ca = cause.get("rank"), cause.get("attempt", a)
        if ca != a or not isinstance(r, int) or not 0 <= r < self.sc.n:
            self.fail(1, f"root cause {cause} is not a rank of attempt {a}")
            return
        w = self.sc.attempts[a][r]
        if not w.fails:
            self.fail(1, f"root cause is rank {r}, which was to {w.final_text()} (no failure); "
                         f"exit code {rc}; real failures: {self.failure_text(a)}")
            return
        if (r, a) not in self.res.intents:
            self.fail(1, f"root cause is rank {r}, which never reached its last action "
                         f"({w.final_text()}); real failures: {self.failure_text(a)}")
            return
        e = self.entry(r, a)
        if outcome_of(e) != w.final:
            self.fail(1, f"root cause rank {r} was to {w.final_text()}, summary.json says "
                         f"{outcome_text(outcome_of(e))}")
        if rc != w.code:
            self.fail(1, f"exit code {rc}, but the root cause rank {r} did {w.final_text()}: "
                         f"expected {w.code}")
        if e is not None and e.get("stopped_by_launcher"):
            self.fail(1, f"root cause rank {r} is marked stopped_by_launcher")
        # First failure: no other worker that really failed on its own did so clearly earlier
        # (by its own clock), nor earlier by the launcher's clock.
        t_cause = self.res.intents[(r, a)][1]
        window = int(RACE_WINDOW * 1e9)
        for t, other in fails:
            if other.rank == r:
                continue
            oe = self.entry(other.rank, a)
            if outcome_of(oe) != other.final or (oe and oe.get("stopped_by_launcher")):
                continue
            if t < t_cause - window:
                self.fail(1, f"root cause is rank {r} (failed at {self.t_rel(t_cause):.3f}s) but "
                             f"rank {other.rank} failed first ({other.final_text()} at "
                             f"{self.t_rel(t):.3f}s)")
            if e and oe and oe.get("end") and e.get("end") and oe["end"] < e["end"]:
                self.fail(1, f"root cause is rank {r} (end {e['end']}) but summary.json has "
                             f"rank {other.rank} failing on its own earlier (end {oe['end']})")
