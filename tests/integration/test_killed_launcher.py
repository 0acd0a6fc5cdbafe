"""What a launcher killed by SIGKILL leaves behind (docs/diagnose.md, "A launcher that is
killed"): its guardian removes the `xlaunch stacks` socket, the Python stacks folder and the
temporary run folder; a --log_dir run folder, which holds logs the user asked for, stays."""
import os
import pathlib
import signal
import textwrap
import time

import pytest

from launch_helpers import start, wait_for_files, wait_until_gone

WAITER = textwrap.dedent("""\
    import os
    import pathlib
    import time

    out = pathlib.Path(os.environ["OUT"])
    print("waiting", flush=True)
    # What PyTorch's @record writes on an exception: the guardian removes it too.
    pathlib.Path(os.environ["TORCHELASTIC_ERROR_FILE"]).write_text("{}")
    (out / ("ready_" + os.environ["RANK"])).write_text(str(os.getpid()))
    while True:
        time.sleep(1)
    """)


def children(pid):
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            found.append(int(entry.name))
    return found


def kill_launcher_mid_run(xlaunch_bin, python, tmp_path, extra):
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {"OUT": str(tmp_path), "XDG_RUNTIME_DIR": str(runtime), "TMPDIR": str(tmp)}
    proc = start(xlaunch_bin, ["--num_processes", "2", "--run_id", "killed", *extra, str(script)],
                 env=env, python=python)
    wait_for_files(tmp_path, "ready_*", 2, timeout=120)
    before = {p.name for p in tmp.iterdir()}
    registered = sorted(p.name for p in (runtime / "xlaunch").iterdir())
    # The guardian and the workers: the processes that must be gone before looking.
    family = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert wait_until_gone(family, timeout=60) == [], family
    return runtime, tmp, before, registered


def test_a_killed_launchers_files_are_removed_by_its_guardian(xlaunch_bin, plain_python,
                                                              tmp_path):
    runtime, tmp, before, registered = kill_launcher_mid_run(xlaunch_bin, plain_python,
                                                             tmp_path, [])
    # While it ran: its socket, its stacks folder and its temporary run folder.
    assert registered == ["killed.sock"], registered
    assert any(n.startswith("xlaunch-stacks-killed-") for n in before), before
    assert any(n.startswith("xlaunch-killed-") for n in before), before
    run_folder = next(tmp.glob("xlaunch-killed-*"), None)
    assert run_folder is None, sorted(str(p) for p in run_folder.rglob("*"))
    assert list((runtime / "xlaunch").iterdir()) == []
    assert list(tmp.iterdir()) == []


@pytest.mark.release_build  # preloads a library, which ASan's runtime refuses
def test_a_launcher_killed_right_after_making_its_stacks_folder_leaves_none(
        xlaunch_bin, plain_python, build_dir, tmp_path):
    # The launcher pauses inside the mkdtemp that makes the stacks folder, before anything
    # else: a SIGKILL there used to leave the folder (registered with the guardian later).
    shim = build_dir / "tests" / "libpause_after_mkdtemp.so"
    assert shim.exists(), f"{shim} is not built: build the pause_after_mkdtemp target"
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    marker = tmp_path / "paused"
    env = {"OUT": str(tmp_path), "TMPDIR": str(tmp), "LD_PRELOAD": str(shim),
           "PAUSE_AFTER_MKDTEMP": "/xlaunch-stacks-", "PAUSE_MARKER": str(marker)}
    proc = start(xlaunch_bin, ["--num_processes", "2", "--run_id", "window", str(script)],
                 env=env, python=plain_python)
    wait_for_files(tmp_path, "paused", 1, timeout=120)
    made = pathlib.Path(marker.read_text())
    assert made.is_dir() and made.parent == tmp, made
    family = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert wait_until_gone(family, timeout=60) == [], family
    assert not made.exists()
    assert not list(tmp.glob("xlaunch-stacks-*"))
    assert not list(tmp_path.glob("ready_*")), "workers started before the folder was made"


def test_a_killed_launcher_keeps_the_log_folder_it_was_asked_for(xlaunch_bin, plain_python,
                                                                 tmp_path):
    logs = tmp_path / "logs"
    runtime, tmp, before, registered = kill_launcher_mid_run(xlaunch_bin, plain_python,
                                                             tmp_path, ["--log_dir", str(logs)])
    assert registered == ["killed.sock"], registered
    assert list((runtime / "xlaunch").iterdir()) == []
    assert list(tmp.iterdir()) == []  # the stacks folder is gone
    folder = logs / "killed"
    assert (folder / "xlaunch.log").exists()
    for rank in (0, 1):
        assert (folder / "attempt_0" / f"rank_{rank}" / "stdout.log").read_text() == "waiting\n"
    assert not (folder / "summary.json").exists()


def test_a_killed_launchers_preload_log_goes_too(xlaunch_bin, plain_python, tmp_path):
    # --preload's template writes preload.log into the temporary run folder.
    runtime, tmp, before, registered = kill_launcher_mid_run(xlaunch_bin, plain_python,
                                                             tmp_path, ["--preload", "json"])
    assert any(n.startswith("xlaunch-killed-") for n in before), before
    run_folder = next(tmp.glob("xlaunch-killed-*"), None)
    assert run_folder is None, sorted(str(p) for p in run_folder.rglob("*"))


def test_a_launcher_killed_while_ranks_start_leaves_no_descendant_in_their_groups(xlaunch_bin,
                                                                                 tmp_path):
    # With process groups, the guardian kills the groups it knows. A rank registered only once
    # the launcher read its pid (ranks are asked for ahead of the answers) could start a
    # descendant in its group, then lose its launcher before anyone knew the group: 14 runs of
    # 15 left one running. Each rank now registers its own group before it runs its program.
    mark = f"xlaunch-test-{os.getpid()}"
    worker = f'sh -c "sleep 30 # {mark} $RANK" & exec sleep 30'
    for delay in (0.01, 0.02, 0.03, 0.04, 0.05, 0.06):
        p = start(xlaunch_bin, ["--nproc_per_node", "64", "--stall_timeout", "0", "--no_python",
                                "/bin/sh", "-c", worker],
                  env={"XLAUNCH_CONTAINMENT": "group"})
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
        time.sleep(1)  # the guardian's kill, and PR_SET_PDEATHSIG's
        left = [int(pid) for pid in pathlib.Path("/proc").iterdir()
                if pid.name.isdigit() and mark.encode() in read_cmdline(pid)]
        survivors = wait_until_gone(left, timeout=0)  # and kills them, should the test fail
        assert not survivors, \
            f"killed {delay}s after its start, the launcher left {len(survivors)} descendants"


def read_cmdline(proc_entry):
    try:
        return (proc_entry / "cmdline").read_bytes()
    except OSError:
        return b""
