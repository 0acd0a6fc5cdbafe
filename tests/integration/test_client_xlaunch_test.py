"""`xlaunch test`: the self-test on every process and a per-rank pass/fail table."""
import subprocess


def xlaunch(xlaunch_bin, *args):
    return subprocess.run([xlaunch_bin, *map(str, args)], capture_output=True, text=True,
                          timeout=180)


def test_xlaunch_test_passes_on_a_cpu_machine(xlaunch_bin):
    result = xlaunch(xlaunch_bin, "test", "--num_processes", 4, "--backend", "gloo")
    assert "The following argument was not expected: test" not in result.stderr, (
        "`xlaunch test` is not registered: main.cpp must call add_test_command (cli/test_command.hpp)")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "xlaunch test: PASS: 4/4 ranks here passed" in result.stdout
    table = [line.split() for line in result.stdout.splitlines()
             if line.strip() and line.split()[0].isdigit()]
    assert sorted(int(row[0]) for row in table) == [0, 1, 2, 3]
    assert all(row[-1] == "pass" and "gloo" in row for row in table), result.stdout


def test_xlaunch_test_fails_when_the_backend_cannot_run(xlaunch_bin):
    # --backend nccl on a machine without a GPU: every rank fails clearly, exit non-zero.
    import shutil
    if shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"]).returncode == 0:
        return  # with a GPU, nccl passes; scripts/gpu-check covers that
    result = xlaunch(xlaunch_bin, "test", "--num_processes", 2, "--backend", "nccl")
    assert result.returncode != 0
    assert "FAIL" in result.stdout
    assert "CUDA" in result.stdout + result.stderr


def test_xlaunch_test_refuses_words_it_does_not_take(xlaunch_bin):
    # An empty word (an unset "$EXTRA" in a job script) once made CLI11 parse the rest inside a
    # flag group for ever; a stray word or a misspelt flag was silently ignored.
    result = xlaunch(xlaunch_bin, "test", "", "--max_restarts", 1)
    assert result.returncode == 2, result.stderr
    assert "unexpected argument '' for 'xlaunch test'" in result.stderr
    # (a beginning of a flag's name, as "--nproc_per_nod", is that flag: argparse's abbreviation)
    result = xlaunch(xlaunch_bin, "test", "--nproc_per_nodes", 2)
    assert result.returncode == 2, result.stderr
    assert "unknown flag '--nproc_per_nodes' for 'xlaunch test'" in result.stderr
    assert "did you mean --nproc_per_node?" in result.stderr
    result = xlaunch(xlaunch_bin, "test", "train.py")
    assert result.returncode == 2, result.stderr
    assert "unexpected argument 'train.py'" in result.stderr
