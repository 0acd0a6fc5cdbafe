"""Helpers for the config integration tests: an isolated environment, the settings
`xlaunch launch --dry_run` prints, and a pty driver."""
import os
import select
import subprocess
import sys
import time


def isolated_env(tmp_path, **extra):
    """The process environment without XLAUNCH_* settings, with HOME in tmp_path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("XLAUNCH_") or k in ("XLAUNCH_BIN", "XLAUNCH_BUILD_DIR")}
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("HF_HOME", None)  # accelerate's default config is read when no xlaunch config is
    env.pop("XDG_CACHE_HOME", None)
    env["HOME"] = str(tmp_path)
    env.update(extra)
    return env


def dry_run(xlaunch_bin, tmp_path, args, env=None, expect=0):
    """Runs `xlaunch launch --dry_run ARGS ./train.py --lr 1` in tmp_path, isolated (plus
    env), expecting exit code `expect`; returns ({key: value} of its output, the result)."""
    (tmp_path / "train.py").write_text("#!/usr/bin/env python3\nprint('hi')\n")
    (tmp_path / "train.py").chmod(0o755)  # --no_python runs it as is
    r = subprocess.run([xlaunch_bin, "launch", "--dry_run", "--python", sys.executable, *args,
                        "./train.py", "--lr", "1"], capture_output=True, text=True,
                       env=isolated_env(tmp_path, **(env or {})), cwd=tmp_path, timeout=60)
    assert r.returncode == expect, r.stdout + r.stderr
    values = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(": ")
        values[key] = value
    return values, r


class PtySession:
    """Runs a command on a fresh pseudo-terminal and lets a test type into it."""

    def __init__(self, argv, env, cwd=None):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, close_fds=True)
        os.close(slave)
        self.output = b""

    def _read(self, timeout):
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 4096)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.output += chunk
        return bool(chunk)

    def expect(self, text, timeout=10.0):
        """Waits until `text` has appeared in the output since the start."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while want not in self.output:
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(left) and self.proc.poll() is not None):
                raise AssertionError(f"never saw {text!r}; output so far:\n"
                                     f"{self.output.decode(errors='replace')}")

    def expect_count(self, text, count, timeout=10.0):
        """Waits until `text` has appeared `count` times."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while self.output.count(want) < count:
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(left) and self.proc.poll() is not None):
                raise AssertionError(f"saw {text!r} fewer than {count} times; output:\n"
                                     f"{self.output.decode(errors='replace')}")

    def send(self, data):
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def wait(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.05)
        while self._read(0.05):
            pass
        rc = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        os.close(self.master)
        return rc


UP = "\x1b[A"
DOWN = "\x1b[B"
ENTER = "\r"
CTRL_C = "\x03"
