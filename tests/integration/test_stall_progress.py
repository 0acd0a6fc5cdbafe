"""What counts as progress for the stall detector beyond output, store traffic and the ranks'
own CPU time (docs/diagnose.md): I/O through read and write calls, and every process of the
run, also those that left their rank's process tree (a `nohup ... &` helper)."""
import json
import pathlib
import textwrap

from launch_helpers import launch

# Writes about 80 KB/s to a file for several stall timeouts, with next to no CPU time and
# no output: a slow download to disk.
SLOW_WRITER = textwrap.dedent("""\
    import os
    import pathlib
    import time

    target = pathlib.Path(os.environ["OUT"], "download_" + os.environ["RANK"])
    print("downloading", flush=True)
    with open(target, "wb") as f:
        for _ in range(int(os.environ["CHUNKS"])):
            f.write(b"x" * 8192)
            f.flush()
            time.sleep(0.1)
    print("downloaded", flush=True)
    """)

# Starts a busy helper that leaves the rank's process tree (the shell that started it
# exits, and xlaunch adopts it), then waits for it without output or CPU time.
NOHUP = textwrap.dedent("""\
    import os
    import pathlib
    import subprocess
    import sys
    import time

    out = pathlib.Path(os.environ["OUT"])
    done = out / ("done_" + os.environ["RANK"])
    helper = ("import pathlib, sys, time\\n"
              "end = time.process_time() + float(sys.argv[2])\\n"
              "x = 0\\n"
              "while time.process_time() < end:\\n"
              "    x += 1\\n"
              "pathlib.Path(sys.argv[1]).write_text('done')\\n")
    subprocess.run(["sh", "-c", 'nohup "$0" -c "$1" "$2" "$3" >/dev/null 2>&1 &',
                    sys.executable, helper, str(done), os.environ["BUSY_SECONDS"]], check=True)
    print("helper started", flush=True)
    while not done.exists():
        time.sleep(0.1)
    print("helper done", flush=True)
    """)


def summary_of(logs):
    (folder,) = pathlib.Path(logs).iterdir()
    return json.loads((folder / "summary.json").read_text())


def test_a_slow_download_to_disk_is_not_a_stall(xlaunch_bin, plain_python, tmp_path):
    script = tmp_path / "download.py"
    script.write_text(SLOW_WRITER)
    logs = tmp_path / "logs"
    # 80 chunks of 8 KiB, one each 0.1 s: four stall timeouts of 2 s at least.
    r = launch(xlaunch_bin, ["--num_processes", "2", "--stall_timeout", "2", "--on_stall", "stop",
                             "--log_dir", str(logs), str(script)],
               env={"OUT": str(tmp_path), "CHUNKS": "80"}, python=plain_python, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: stall" not in r.stderr, r.stderr
    assert r.stdout.count("downloaded") == 2, r.stdout
    assert (tmp_path / "download_0").stat().st_size == 80 * 8192
    assert "stall" not in summary_of(logs)


def test_a_busy_helper_that_left_the_ranks_tree_is_not_a_stall(xlaunch_bin, plain_python,
                                                               tmp_path):
    script = tmp_path / "nohup_helper.py"
    script.write_text(NOHUP)
    logs = tmp_path / "logs"
    # 8 s of CPU time in the helper: four stall timeouts, even on a loaded machine.
    r = launch(xlaunch_bin, ["--stall_timeout", "2", "--on_stall", "stop", "--log_dir", str(logs),
                             str(script)],
               env={"OUT": str(tmp_path), "BUSY_SECONDS": "8"}, python=plain_python,
               timeout=300)
    assert r.returncode == 0, r.stderr
    assert "xlaunch: stall" not in r.stderr, r.stderr
    assert "helper done" in r.stdout, r.stdout
    assert "stall" not in summary_of(logs)
