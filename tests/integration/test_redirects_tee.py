"""torchrun's --redirects and --tee. A stream in --tee reaches the console as well as its
file, even when --redirects names it (torchrun: redirs[r] |= tee), so torchrun's `-r 3 -t 3`
shows everything."""

from launch_helpers import launch, summary

# Each rank writes one line to each stream, naming itself.
SCRIPT = "echo out $RANK; echo err $RANK >&2"


def run(xlaunch_bin, tmp_path, args):
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    return launch(xlaunch_bin, [*args, "--no_python", "sh", "-c", SCRIPT],
                  env={"TMPDIR": str(tmp), "HOME": str(tmp_path)})


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
