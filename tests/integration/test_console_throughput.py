"""A chatty rank's output path (issue 18, item 3): each rank's stdout and stderr pipes are
enlarged within the user's pipe budget (a 64 KiB pipe made a chatty rank wait at every fill),
and the console path that keeps up with it (one line search per line, one buffer per read,
written straight from it) still delivers every line whole, in order, with its prefix, and
keeps the last stderr lines for the failure report."""
import fcntl
import json
import os
import subprocess
import sys

import pytest

from launch_helpers import launch, merged_env, summary

PROBE = """
import fcntl, json, os, sys
sizes = {fd: fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) for fd in (1, 2)}
print(json.dumps({"rank": int(os.environ["RANK"]), "stdout": sizes[1], "stderr": sizes[2]}))
"""


def _default_pipe_size():
    r, w = os.pipe()
    try:
        return fcntl.fcntl(r, fcntl.F_GETPIPE_SZ)
    finally:
        os.close(r)
        os.close(w)


def _expected_size(ranks):
    """docs/launch.md's rule: 256 KiB, else 128 KiB, while all 2 x ranks pipes stay within a
    sixteenth of fs.pipe-user-pages-soft (0: no limit); else the kernel's default."""
    with open("/proc/sys/fs/pipe-user-pages-soft") as f:
        soft = int(f.read())
    page = os.sysconf("SC_PAGESIZE")
    for size in (256 << 10, 128 << 10):
        if soft == 0 or 2 * ranks * (size // page) <= soft // 16:
            return size
    return _default_pipe_size()


@pytest.mark.parametrize("ranks", [1, 9, 17])
def test_rank_pipes_are_enlarged_within_the_user_s_pipe_budget(xlaunch_bin, tmp_path, ranks):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    r = launch(xlaunch_bin, ["--nproc_per_node", str(ranks), str(script)],
               timeout=120)
    assert r.returncode == 0, r.stderr
    seen = [json.loads(line.split(": ", 1)[1]) for line in r.stdout.splitlines()]
    assert sorted(s["rank"] for s in seen) == list(range(ranks)), r.stdout
    expected = _expected_size(ranks)
    assert {(s["stdout"], s["stderr"]) for s in seen} == {(expected, expected)}, r.stdout


CHATTY = r"""
import os, sys
lines = []
for i in range(200000):
    # Short and long lines (some longer than a read, some cut at 16 KiB), and progress-bar
    # redraws ending in '\r'.
    if i % 50000 == 7:
        lines.append(f"{i} " + "x" * 70000 + "\n")
    elif i % 1000 == 3:
        lines.append(f"{i} bar\r")
    else:
        lines.append(f"{i} " + "y" * (i % 97) + "\n")
data = "".join(lines).encode()
for start in range(0, len(data), 1 << 20):
    os.write(1, data[start:start + (1 << 20)])
err = "".join(f"problem {i}\n" for i in range(50000)).encode()
for start in range(0, len(err), 300000):
    os.write(2, err[start:start + 300000])
sys.exit(3)
"""


def test_a_chatty_rank_s_lines_arrive_whole_in_order_and_its_stderr_tail_is_kept(xlaunch_bin,
                                                                                 tmp_path):
    script = tmp_path / "chatty.py"
    script.write_text(CHATTY)
    logs = tmp_path / "logs"
    console = tmp_path / "console.out"  # a file: a console pipe that lags may drop lines
    with open(console, "wb") as out:
        p = subprocess.run([xlaunch_bin, "launch", "--python", sys.executable, "--log_dir",
                            str(logs), str(script)], env=merged_env(None), stdout=out,
                           stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 3, p.stderr[-2000:]
    pieces = console.read_bytes().replace(b"\r", b"\r\x00").split(b"\n")
    shown = [p for chunk in pieces for p in chunk.split(b"\x00") if p]
    assert all(p.startswith(b"[rank0]: ") for p in shown), [
        p[:80] for p in shown if not p.startswith(b"[rank0]: ")][:3]
    texts = [p[len(b"[rank0]: "):] for p in shown]
    # A line longer than 16 KiB is shown as pieces of at most 16 KiB, each with the prefix.
    joined, i = [], 0
    while i < len(texts):
        text = texts[i]
        while len(text) % (16 * 1024) == 0 and i + 1 < len(texts) and text.endswith(b"x"):
            i += 1
            text += texts[i]
        joined.append(text)
        i += 1
    expected = []
    for n in range(200000):
        if n % 50000 == 7:
            expected.append(f"{n} " + "x" * 70000)
        elif n % 1000 == 3:
            expected.append(f"{n} bar\r")
        else:
            expected.append(f"{n} " + "y" * (n % 97))
    assert [t.decode() for t in joined] == expected
    run_dir, s = summary(logs)
    assert (run_dir / "attempt_0" / "rank_0" / "stdout.log").stat().st_size > 10_000_000
    tail = s["root_cause"]["stderr_tail"]
    assert tail == [f"problem {i}" for i in range(49980, 50000)]
