"""torchrun's --redirects and --tee. Redirected output is never thrown away: without
--log_dir it goes to a temporary folder that is kept (torchrun writes it under a mkdtemp
folder). A stream in --tee reaches the console as well as its file, even when --redirects
names it (torchrun: redirs[r] |= tee), so torchrun's `-r 3 -t 3` shows everything."""
import json
import re

from launch_helpers import launch, summary

# Each rank writes one line to each stream, naming itself.
SCRIPT = "echo out $RANK; echo err $RANK >&2"


def run(xlaunch_bin, tmp_path, args):
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return launch(xlaunch_bin, [*args, "--no_python", "sh", "-c", SCRIPT],
                  env={"TMPDIR": str(tmp), "HOME": str(tmp_path)})


def test_redirects_without_log_dir_keep_the_output_in_a_temporary_folder(xlaunch_bin, tmp_path):
    # Before: nothing on the console, no file anywhere, exit 0: the output was lost.
    r = run(xlaunch_bin, tmp_path, ["--redirects", "3", "--num_processes", "2"])
    assert r.returncode == 0, r.stderr
    assert "out" not in r.stdout and "err 0" not in r.stderr and "err 1" not in r.stderr
    (folder,) = (tmp_path / "tmp").iterdir()
    assert re.fullmatch(r"xlaunch-.+-\w{6}", folder.name), folder
    assert (f"xlaunch: note: --redirects keeps output off the console and there is no "
            f"--log_dir: the workers' logs go to {folder}, which stays after the run") \
        in r.stderr.splitlines()
    assert r.stderr.splitlines()[-1] == \
        f"xlaunch: all 2 workers finished successfully (logs: {folder})"
    for rank in (0, 1):
        rank_dir = folder / "attempt_0" / f"rank_{rank}"
        assert (rank_dir / "stdout.log").read_text() == f"out {rank}\n"
        assert (rank_dir / "stderr.log").read_text() == f"err {rank}\n"
    assert json.loads((folder / "summary.json").read_text())["exit_code"] == 0
    assert "run " in (folder / "xlaunch.log").read_text()


def test_without_redirects_the_temporary_folder_still_goes(xlaunch_bin, tmp_path):
    # Only output kept off the console needs the folder; --tee alone keeps nothing off it.
    for args in ([], ["--tee", "3"], ["--redirects", "3", "--tee", "3"]):
        r = run(xlaunch_bin, tmp_path, args)
        assert r.returncode == 0, (args, r.stderr)
        assert "[rank0]: out 0" in r.stdout and "[rank0]: err 0" in r.stderr, (args, r)
        assert list((tmp_path / "tmp").iterdir()) == [], args
        assert "logs" not in r.stderr, (args, r.stderr)


def test_tee_shows_redirected_streams_and_keeps_their_files(xlaunch_bin, tmp_path):
    # torchrun's -r 3 -t 3: console and files. Before: -t was only checked, nothing shown.
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, tmp_path, ["--log_dir", str(logs), "-r", "3", "-t", "3",
                                    "--num_processes", "2"])
    assert r.returncode == 0, r.stderr
    assert sorted(line for line in r.stdout.splitlines() if "out" in line) == [
        "[rank0]: out 0", "[rank1]: out 1"]
    assert "[rank0]: err 0" in r.stderr and "[rank1]: err 1" in r.stderr
    run_dir, _ = summary(logs)
    for rank in (0, 1):
        assert (run_dir / "attempt_0" / f"rank_{rank}" / "stdout.log").read_text() == \
            f"out {rank}\n"


def test_tee_per_local_rank_shows_only_what_it_names(xlaunch_bin, tmp_path):
    # -r 3 -t 0:1: local rank 0's stdout on the console; its stderr and rank 1 in files only.
    logs = tmp_path / "logs"
    r = run(xlaunch_bin, tmp_path, ["--log_dir", str(logs), "--redirects", "3", "--tee", "0:1",
                                    "--num_processes", "2"])
    assert r.returncode == 0, r.stderr
    assert [line for line in r.stdout.splitlines() if "out" in line] == ["[rank0]: out 0"]
    assert "err 0" not in r.stderr and "err 1" not in r.stderr
    run_dir, _ = summary(logs)
    assert (run_dir / "attempt_0" / "rank_1" / "stderr.log").read_text() == "err 1\n"
