"""A fault scenario derived from one integer seed (gen_scenario): how many workers, what each
one does (Step) and how it ends (Worker.final), what happens to the launcher and to its
console (Scenario), and the text that describes it in a failure report."""
import dataclasses
import random
import re
import string

LONG_SLEEP = 300  # "runs long": only the launcher stops it
BIG_BYTES_PER_SCENARIO = 3 << 20

SELF_SIGNALS = {"KILL": 9, "SEGV": 11, "TERM": 15}
LAUNCHER_SIGNALS = {"SIGINT": 2, "SIGTERM": 15, "SIGHUP": 1, "SIGQUIT": 3, "SIGKILL": 9}

CHILD_KINDS = {
    # name: (description, shell command)
    "bg": ("a background child in its process group, keeping the pipes",
           f"sleep {LONG_SLEEP} &"),
    "bg-quiet": ("a background child in its process group, fds on /dev/null",
                 f"sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 &"),
    "fork-tree": ("a subshell with its own child, keeping the pipes",
                  f"( sleep {LONG_SLEEP} & exec sleep {LONG_SLEEP} ) &"),
    "setsid": ("a setsid child (new session), keeping the pipes",
               f"setsid sleep {LONG_SLEEP} &"),
    "setsid-quiet": ("a setsid child (new session), fds on /dev/null",
                     f"setsid sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 &"),
    "daemon": ("a double-fork setsid daemon (its parent gone), keeping the pipes",
               f"( setsid sleep {LONG_SLEEP} & )"),
    "daemon-quiet": ("a double-fork setsid daemon, fds on /dev/null",
                     f"( setsid sleep {LONG_SLEEP} </dev/null >/dev/null 2>&1 & )"),
}

_ALPHABET = string.ascii_letters + string.digits + " .,:;-_=+/()#%*"  # no '[', no '\r', '\n'
FILLER = "".join(random.Random(1).choices(_ALPHABET, k=1 << 18))


@dataclasses.dataclass
class Step:
    kind: str                 # out | sleep | child | close
    stream: str = ""          # out, close: stdout | stderr
    data: bytes = b""
    secs: float = 0.0
    child: str = ""

    def text(self):
        if self.kind == "out":
            d = self.data
            lines = d.count(b"\n")
            notes = [f"{lines} newline(s)"]
            if b"\r" in d:
                notes.append("has \\r")
            if not d.endswith((b"\n", b"\r")):
                notes.append("no trailing newline")
            longest = max(len(x) for x in re.split(rb"[\r\n]", d))
            if longest > 16384:
                notes.append(f"a {longest} B line")
            return f"write {human(len(d))} to {self.stream} ({', '.join(notes)})"
        if self.kind == "sleep":
            return f"sleep {self.secs:.3f}s"
        if self.kind == "child":
            return f"start {CHILD_KINDS[self.child][0]}"
        return f"close its {self.stream} (exec {1 if self.stream == 'stdout' else 2}>&-)"


@dataclasses.dataclass
class Worker:
    rank: int
    attempt: int
    stubborn: bool            # ignores SIGTERM and SIGINT (so do its children)
    steps: list
    final: tuple              # ("exit", code) | ("signal", "SEGV") | ("long",)
    fdcheck: bool = False     # first lists the descriptors it inherited

    @property
    def fails(self):
        return self.final[0] == "signal" or (self.final[0] == "exit" and self.final[1] != 0)

    @property
    def succeeds(self):
        return self.final == ("exit", 0)

    @property
    def code(self):
        """The launcher's exit code when this worker is the root cause."""
        if self.final[0] == "signal":
            return 128 + SELF_SIGNALS[self.final[1]]
        return self.final[1]

    def final_text(self):
        if self.final[0] == "exit":
            return f"exit {self.final[1]}"
        if self.final[0] == "signal":
            return f"kill itself with SIG{self.final[1]}"
        return f"sleep {LONG_SLEEP}s (until the launcher stops it)"

    def nominal_duration(self):
        return sum(s.secs for s in self.steps if s.kind == "sleep")

    def expected(self, stream, upto=None):
        """Bytes written to `stream` by steps [0, upto) (all steps when upto is None)."""
        steps = self.steps if upto is None else self.steps[:upto]
        return b"".join(s.data for s in steps if s.kind == "out" and s.stream == stream)

    def text(self):
        head = f"rank {self.rank}:"
        if self.fdcheck:
            head += " lists its fds;"
        if self.stubborn:
            head += " ignores SIGTERM+SIGINT;"
        if not self.steps:
            return f"{head} at once {self.final_text()}"
        body = "; ".join(s.text() for s in self.steps)
        return f"{head} {body}; then {self.final_text()}"


@dataclasses.dataclass
class Scenario:
    seed: int
    n: int
    term_timeout: int
    max_restarts: int
    attempts: list            # attempts[a][rank] -> Worker
    event: str                # none | SIGINT | SIGTERM | SIGHUP | SIGQUIT | SIGKILL
    event_at: float
    event_again_after: float  # SIGINT only: a second one after this many seconds (0: none)
    console: dict             # stream -> (mode, arg): read | stall D | stall-forever | close K

    def text(self):
        out = [f"scenario {self.seed}: {self.n} worker(s), --term_timeout {self.term_timeout}, "
               f"--max_restarts {self.max_restarts}"]
        if self.event == "none":
            out.append("  launcher: no signal")
        else:
            ev = f"  launcher: {self.event} at {self.event_at:.3f}s after start"
            if self.event_again_after:
                ev += f", again {self.event_again_after:.3f}s later"
            out.append(ev)
        for stream in ("stdout", "stderr"):
            mode, arg = self.console[stream]
            desc = {"read": "read all along",
                    "stall": f"not read for {arg:.2f}s, then drained",
                    "stall-forever": "never read while xlaunch runs",
                    "close": (f"closed after {arg} line(s) (like | head -{arg})" if arg
                              else "closed at once")}[mode]
            out.append(f"  console {stream}: {desc}")
        for a, workers in enumerate(self.attempts):
            if self.max_restarts:
                out.append(f"  attempt {a}:")
            for w in workers:
                out.append("    " + w.text())
        return "\n".join(out)

    def nominal_duration(self):
        d = max((w.nominal_duration() for ws in self.attempts for w in ws), default=0)
        d *= len(self.attempts)
        if self.event != "none":
            d = max(d, self.event_at + self.event_again_after)
        stall = max((arg for mode, arg in self.console.values() if mode == "stall"), default=0)
        return d + stall + (self.term_timeout + 1) * len(self.attempts)


def human(n):
    if n >= 1 << 20:
        return f"{n / (1 << 20):.2f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def gen_payload(rng, tag, size_class):
    """Deterministic printable bytes: lines tagged <tag L i> (unique, so the test can find
    them), ended by \\n, \\r or \\r\\n, sometimes a line longer than 16 KiB, sometimes no
    trailing newline."""
    if size_class == "small":
        target = rng.randint(1, 300)
    elif size_class == "medium":
        target = rng.randint(1024, 24 * 1024)
    else:
        target = rng.randint(64 * 1024, 1 << 20)
    parts, total, i = [], 0, 0
    while total < target:
        if size_class != "small" and rng.random() < 0.03:
            length = rng.randint(16 * 1024, 80 * 1024)  # longer than a console line
        else:
            length = rng.randint(0, 160)
        start = rng.randrange(len(FILLER) - length)
        line = f"<{tag}L{i}>" + FILLER[start:start + length]
        term = rng.choice(["\n"] * 8 + ["\r", "\r\n"])
        parts.append(line + term)
        total += len(line) + len(term)
        i += 1
    data = "".join(parts)
    if rng.random() < 0.3:
        data = data.rstrip("\r\n")  # no trailing newline
    return data.encode()


def gen_worker(rng, rank, attempt, console, big_left, p_fail, p_long, p_at_once):
    at_once = rng.random() < p_at_once  # acts at once, while the others are being spawned
    fdcheck = not at_once and rng.random() < 0.5
    stubborn = rng.random() < 0.15
    steps = []
    open_streams = ["stdout", "stderr"]
    if not at_once:
        for k in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.5 and open_streams:
                stream = rng.choice(open_streams)
                stalled = console[stream][0] in ("stall", "stall-forever")
                x = rng.random()
                big_p = 0.4 if stalled else 0.1
                size = "big" if x < big_p else ("medium" if x < big_p + 0.2 else "small")
                if size == "big" and big_left[0] <= 0:
                    size = "medium"
                data = gen_payload(rng, f"r{rank}a{attempt}s{k}", size)
                if size == "big":
                    big_left[0] -= len(data)
                steps.append(Step("out", stream=stream, data=data))
            elif r < 0.72:
                steps.append(Step("sleep", secs=round(rng.choice([rng.uniform(0, 0.05),
                                                                  rng.uniform(0, 0.8)]), 3)))
            elif r < 0.9:
                steps.append(Step("child", child=rng.choice(sorted(CHILD_KINDS))))
            elif open_streams:
                stream = "stdout" if "stdout" in open_streams and rng.random() < 0.8 \
                    else open_streams[-1]
                open_streams.remove(stream)
                steps.append(Step("close", stream=stream))
    r = rng.random()
    if r < p_long:
        final = ("long",)
    elif r < p_long + p_fail * 0.75:
        final = ("exit", rng.randint(1, 255))
    elif r < p_long + p_fail:
        final = ("signal", rng.choice(sorted(SELF_SIGNALS)))
    else:
        final = ("exit", 0)
    return Worker(rank, attempt, stubborn, steps, final, fdcheck)


def gen_scenario(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    term_timeout = rng.choice([1, 2, 3])
    r = rng.random()
    if r < 0.45:
        event = "none"
    else:
        event = rng.choices(["SIGINT", "SIGTERM", "SIGKILL", "SIGHUP", "SIGQUIT"],
                            weights=[30, 30, 25, 7, 8])[0]
    event_at = rng.uniform(0, 0.05) if rng.random() < 0.3 else rng.uniform(0.05, 3.0)
    again = rng.uniform(0.05, 1.0) if event == "SIGINT" and rng.random() < 0.25 else 0.0
    max_restarts = 1 if event == "none" and rng.random() < 0.12 else 0

    console = {}
    for stream in ("stdout", "stderr"):
        x = rng.random()
        if x < 0.7:
            console[stream] = ("read", 0)
        elif x < 0.8:
            console[stream] = ("stall", round(rng.uniform(0.3, 4.0), 2))
        elif x < 0.9:
            console[stream] = ("stall-forever", 0)
        else:
            console[stream] = ("close", rng.randint(0, 2))

    big_left = [BIG_BYTES_PER_SCENARIO]
    # How eventful the workers are: from "all but a few succeed" to "many fail or hang".
    p_fail = rng.choice([0.03, 0.15, 0.4])
    p_long = rng.choice([0.0, 0.1, 0.3])
    p_at_once = rng.choice([0.05, 0.15, 0.7])
    attempts = []
    for a in range(1 + max_restarts):
        workers = [gen_worker(rng, rank, a, console, big_left, p_fail, p_long, p_at_once)
                   for rank in range(n)]
        # Something must end every attempt: a failing worker, or a signal to the launcher.
        if any(w.final == ("long",) for w in workers) and not any(w.fails for w in workers) \
                and event == "none":
            w = rng.choice(workers)
            w.final = ("exit", rng.randint(1, 255)) if rng.random() < 0.8 else \
                ("signal", rng.choice(sorted(SELF_SIGNALS)))
        attempts.append(workers)
    return Scenario(seed, n, term_timeout, max_restarts, attempts, event, event_at, again,
                    console)
