"""Invariants 2, 3 and 6 (see test_fault_stress.py): what the launcher wrote down, namely
each rank's logs, summary.json, and the console; mixed into Checker (checks.py)."""
import re

RANK_PREFIX = re.compile(rb"\[rank(\d+)\]: ")
# What a line cut off by a stalled console at exit can look like before its body starts.
TORN_PREFIX = re.compile(rb"\[(r(a(n(k(\d+(\](:)?)?)?)?)?)?)?|x(l(a(u(n(c(h)?)?)?)?)?)?")


class RecordChecks:
    """Checker's invariants 2 (logs), 3 (summary.json) and 6 (console)."""

    # --- 2
    def check_logs(self):
        for a in self.attempts_ran():
            for w in self.sc.attempts[a]:
                key = (w.rank, a)
                finished = key in self.res.intents
                completed = len(w.steps) if finished else self.res.progress.get(key, 0)
                for stream in ("stdout", "stderr"):
                    full = w.expected(stream)
                    low = w.expected(stream, completed)
                    path = self.res.run_dir / f"attempt_{a}" / f"rank_{w.rank}" / f"{stream}.log"
                    try:
                        got = path.read_bytes()
                    except FileNotFoundError:
                        got = None
                    where = f"rank {w.rank} attempt {a} {stream}.log"
                    if got is None:
                        if low and not self.abrupt:
                            self.fail(2, f"{where} is missing; the worker wrote {len(low)} B")
                        continue
                    if not full.startswith(got):
                        i = first_diff(full, got)
                        self.fail(2, f"{where}: {len(got)} B are not a prefix of the {len(full)} B "
                                     f"the worker was to write; first difference at byte {i}: "
                                     f"expected {full[i:i + 40]!r}, got {got[i:i + 40]!r}")
                        continue
                    if self.abrupt:
                        continue
                    if len(got) < len(low):
                        state = "reached its last action" if finished else \
                            f"completed {completed} of {len(w.steps)} steps"
                        self.fail(2, f"{where} has {len(got)} B, but the worker {state} and had "
                                     f"written {len(low)} B (of {len(full)}); missing from byte "
                                     f"{len(got)}: {low[len(got):len(got) + 40]!r}")

    # --- 3
    def check_summary(self):
        if self.summary_error:
            self.fail(3, self.summary_error)
            return
        if self.died_before_setup:
            if self.res.run_dir.exists():
                left = sorted(p.name for p in self.res.run_dir.iterdir())
                self.fail(3, f"xlaunch died by {self.signal[0]}'s default action "
                             f"{self.t_rel(self.signal[1]):.3f}s after start (no handler yet), "
                             f"leaving a run folder without summary.json (it holds {left})")
            return
        if self.launcher_killed:
            return
        if self.summary is None:
            self.fail(3, f"no summary.json in {self.res.run_dir}")
            return
        s = self.summary
        if s.get("exit_code") != self.res.rc:
            self.fail(3, f"summary.json exit_code {s.get('exit_code')} != the launcher's "
                         f"{self.res.rc}")
        bad, unlisted = [], []
        try:
            xlog = (self.res.run_dir / "xlaunch.log").read_text(errors="replace")
        except OSError:
            xlog = ""
        not_started = {(e.get("rank"), e.get("attempt")) for e in s.get("not_started") or []}
        for a in self.attempts_ran():
            for r in range(self.sc.n):
                es = self.entries.get((r, a), [])
                ran = (r, a) in self.res.progress or (r, a) in self.res.intents or \
                    (r, a) in self.res.fds
                which = f"rank {r}" + (f" of attempt {a}" if self.sc.max_restarts else "")
                if (r, a) in not_started:
                    if es:
                        bad.append(f"{which} is both in workers and in not_started")
                    elif ran:
                        bad.append(f"{which} is in not_started, but it ran (it left its files)")
                    continue
                if not es:
                    started = f"attempt {a}: rank {r} (local rank {r}) started" in xlog or ran
                    unlisted.append(which + ("" if started else "*"))
                    continue
                if len(es) != 1:
                    bad.append(f"rank {r} attempt {a} listed {len(es)} times")
                    continue
                e = es[0]
                if (e.get("exit_code") is None) == (e.get("signal") is None):
                    bad.append(f"rank {r} attempt {a}: exit_code={e.get('exit_code')} "
                               f"signal={e.get('signal')} (pid {e.get('pid')})")
        if bad:
            self.fail(3, "summary.json workers: " + "; ".join(bad))
        if unlisted:
            note = " (*: never started, per xlaunch.log and the worker's files)" \
                if any(u.endswith("*") for u in unlisted) else ""
            self.fail(3, f"summary.json lists neither in workers nor in not_started: "
                         f"{', '.join(unlisted)}{note}")
        extra = sorted(set(self.entries) - {(r, a) for a in self.attempts_ran()
                                            for r in range(self.sc.n)}, key=str)
        if extra:
            self.fail(3, f"summary.json lists workers that did not run: {extra}")
        tmp = [p.name for p in self.res.run_dir.glob("**/*.tmp*")]
        if tmp:
            self.fail(3, f"temporary files left in the log folder: {tmp}")

    # --- 6
    def check_console(self):
        # Did xlaunch say (on its console or in xlaunch.log) that it left lines out?
        said = re.compile(rb"drop|not shown|keep up|skipped", re.I)
        drops = False
        for stream in ("stdout", "stderr"):
            data, c = self.res.consoles[stream]
            if any(said.search(ln) for ln in data.split(b"\n") if ln.startswith(b"xlaunch")):
                drops = True
        try:
            if said.search((self.res.run_dir / "xlaunch.log").read_bytes()):
                drops = True
        except OSError:
            pass
        for stream in ("stdout", "stderr"):
            data, c = self.res.consoles[stream]
            if c.closed_early or self.res.hung:
                continue
            complete = not self.abrupt and c.eof
            unread_at_exit = c.mode == "stall-forever" or \
                (c.mode == "stall" and c.arg + 0.2 >= self.res.duration)
            errors, bodies = parse_console(data, self.sc.n,
                                           torn_tail_ok=self.abrupt or unread_at_exit)
            for e in errors[:5]:
                self.fail(6, f"console {stream}: {e}")
            if errors:
                continue
            ran = self.attempts_ran()
            for r in range(self.sc.n):
                logs = []
                for a in ran:
                    p = self.res.run_dir / f"attempt_{a}" / f"rank_{r}" / f"{stream}.log"
                    logs.append(p.read_bytes() if p.exists() else b"")
                log = b"".join(logs)
                pos, missing = 0, 0
                for body in bodies[r]:
                    if not body:
                        continue
                    i = log.find(body, pos)
                    if i < 0:
                        where = log.find(body)
                        self.fail(6, f"console {stream}: rank {r} line {body[:60]!r}"
                                     f"{'...' if len(body) > 60 else ''} ({len(body)} B) is "
                                     + ("not in its log" if where < 0 else
                                        f"out of order (log byte {where}, expected after {pos})"))
                        break
                    missing += len(re.sub(rb"[\r\n]", b"", log[pos:i]))
                    pos = i + len(body)
                else:
                    missing += len(re.sub(rb"[\r\n]", b"", log[pos:]))
                    # Only a console read while xlaunch ran can be asked for everything.
                    if missing and complete and not unread_at_exit and not drops:
                        self.fail(6, f"console {stream}: {missing} B of rank {r}'s {stream} "
                                     f"never shown, and xlaunch reported no dropped lines")

    # --- 7

def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def parse_console(data, n, torn_tail_ok):
    """Splits console bytes into per-rank bodies; returns (errors, {rank: [body...]}).
    A console line is xlaunch's own (starts with "xlaunch") or `[rankN]: ` + bytes; a rank's
    '\\r' piece keeps the line open (a progress bar redrawn in place), so after a '\\r' comes
    another prefixed piece or an xlaunch line. torn_tail_ok: the last line may lack its
    newline (the launcher exited while nobody read the console, so it could not finish it)."""
    errors = []
    bodies = {r: [] for r in range(n)}
    lines = data.split(b"\n")
    last = lines.pop()
    if last and not torn_tail_ok:
        if last.endswith(b"\r"):
            errors.append(f"ends with a '\\r' piece and no newline (a progress bar left open "
                          f"when its rank ended): {last[-80:]!r}")
        else:
            errors.append(f"ends without a newline: {last[-80:]!r}")
    for no, ln in enumerate(lines + ([last] if last else []), 1):
        pieces = ln.split(b"\r")
        for i, piece in enumerate(pieces):
            if piece.startswith(b"xlaunch"):
                break  # xlaunch's line: the rest of it is its own (e.g. a quoted stderr tail)
            if not piece:
                continue
            torn = torn_tail_ok and ln is last and i == len(pieces) - 1
            if torn and TORN_PREFIX.fullmatch(piece):
                continue  # cut off inside its prefix: no body bytes to check
            m = RANK_PREFIX.match(piece)
            if not m or int(m.group(1)) >= n:
                errors.append(f"line {no} is neither `[rankN]: ...` nor xlaunch's: "
                              f"{piece[:80]!r}")
                continue
            body = piece[m.end():]
            if RANK_PREFIX.search(body):
                errors.append(f"line {no} holds two ranks' output: {piece[:80]!r}...")
                continue
            bodies[int(m.group(1))].append(body)
    return errors, bodies
