"""Small ways a launch or a report went wrong on input it should handle (issue 19, item 11):
each says what happened instead of failing or misleading."""
import json
import os
import shutil
import subprocess

import pytest

from launch_helpers import launch


def test_a_missing_tmpdir_falls_back_to_tmp(xlaunch_bin, tmp_path):
    missing = tmp_path / "gone"
    (tmp_path / "w.py").write_text("print('ran')\n")
    r = launch(xlaunch_bin, ["--num_processes", "1", str(tmp_path / "w.py")],
               env={"TMPDIR": str(missing)})
    assert r.returncode == 0, r.stderr
    assert f"xlaunch: note: TMPDIR={missing}: cannot create a folder there (No such file or " \
           "directory); this run's logs go to /tmp/xlaunch-" in r.stderr, r.stderr
    assert "ran" in r.stdout


def test_a_stall_timeout_too_short_to_measure_is_refused(xlaunch_bin, tmp_path):
    # 1e-9 s became 0 ms, which turned detection off without a word.
    (tmp_path / "w.py").write_text("pass\n")
    r = launch(xlaunch_bin, ["--stall_timeout", "1e-9", str(tmp_path / "w.py")])
    assert r.returncode == 2, r.stderr
    assert "--stall_timeout 1e-09 is below 0.001 seconds" in r.stderr, r.stderr


def test_an_unreadable_run_folder_is_permission_denied_not_not_a_run_folder(xlaunch_bin,
                                                                           tmp_path):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.fail("this test reads a folder as another user: run it as root, with setpriv")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "summary.json").write_text("{}")
    os.chmod(tmp_path, 0o755)
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        xlaunch_bin, "report", str(run)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"cannot read {run}/summary.json: Permission denied" in r.stderr, r.stderr
    assert "not a run folder" not in r.stderr


def test_a_nul_byte_in_a_config_file_is_named_not_printed(xlaunch_bin, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_bytes(b"num_processes: 2\x00\n")
    r = subprocess.run([xlaunch_bin, "config", "show", "--config_file", str(config)],
                       capture_output=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert b"\x00" not in r.stderr
    assert f"{config}:1:17: a NUL byte; a config file is text".encode() in r.stderr, r.stderr


def test_paths_given_to_workers_are_absolute_when_log_dir_and_tmpdir_are_not(xlaunch_bin,
                                                                             tmp_path):
    # A worker that changes its folder (Hydra does) must still find its error file, logs and
    # stacks folder: a relative --log_dir or TMPDIR made them relative.
    (tmp_path / "tmp").mkdir()
    (tmp_path / "w.py").write_text(
        "import os\n"
        "for key in ('TORCHELASTIC_ERROR_FILE', 'XLAUNCH_LOG_DIR', 'XLAUNCH_STACKS_DIR'):\n"
        "    print(key, os.environ.get(key, '/unset'))\n")
    for args in (["--log_dir", "logs"], []):
        r = subprocess.run([xlaunch_bin, "launch", "--python", "/usr/bin/python3", *args,
                            "w.py"], cwd=tmp_path, env={**os.environ, "TMPDIR": "tmp"},
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        paths = dict(line.split()[1:3] for line in r.stdout.splitlines())
        assert len(paths) == 3, r.stdout
        for key, path in paths.items():
            assert path.startswith(str(tmp_path)) or path == "/unset", (args, key, path)


def test_ill_formed_utf8_from_a_failing_rank_keeps_the_summary_valid_json(xlaunch_bin, tmp_path):
    # A surrogate, an overlong form and a code point past U+10FFFF, then random bytes: JSON
    # readers refused the summary, and no report.html was written.
    worker = tmp_path / "w.py"
    worker.write_text(
        "import os, sys\n"
        "os.write(2, b'bad \\xed\\xa0\\x80 \\xe0\\x80\\x80 \\xf4\\x90\\x80\\x80 \\xf5\\xff\\n')\n"
        "os.write(2, os.urandom(4000))\n"
        "sys.exit(3)\n")
    logs = tmp_path / "logs"
    r = launch(xlaunch_bin, ["--num_processes", "1", "--log_dir", str(logs), str(worker)],
               raw=True)
    assert r.returncode == 3, r.stderr
    (run,) = logs.iterdir()
    summary = json.loads((run / "summary.json").read_bytes().decode("utf-8"))
    assert summary["exit_code"] == 3, summary
    assert summary["root_cause"]["stderr_tail"], summary  # kept, as valid text
    assert (run / "report.html").exists()
    assert b"could not write report.html" not in r.stderr, r.stderr


def test_an_error_file_that_cannot_be_read_is_named_not_skipped(xlaunch_bin, tmp_path):
    # A FIFO or a file over 4 MiB in the error file's place was left out without a word.
    worker = tmp_path / "w.py"
    worker.write_text(
        "import os, sys\n"
        "path = os.environ['TORCHELASTIC_ERROR_FILE']\n"
        "if sys.argv[1] == 'fifo':\n"
        "    os.mkfifo(path)\n"
        "else:\n"
        "    open(path, 'wb').write(b'x' * (5 << 20))\n"
        "sys.exit(1)\n")
    r = launch(xlaunch_bin, ["--num_processes", "1", str(worker), "fifo"])
    assert r.returncode == 1, r.stderr
    assert "(not read: it is a FIFO, not a regular file)" in r.stderr, r.stderr
    r = launch(xlaunch_bin, ["--num_processes", "1", str(worker), "big"])
    assert r.returncode == 1, r.stderr
    assert "(not read: 5242880 bytes, more than 4 MiB)" in r.stderr, r.stderr


def test_a_log_dir_other_users_can_write_is_warned_about(xlaunch_bin, tmp_path):
    # Without the sticky bit, another user could rename this run's folder and leave a link
    # in its place: the logs would go where the link points.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", "--log_dir", str(shared), "--no_python",
                             "true"])
    assert r.returncode == 0, r.stderr
    assert (f"xlaunch: warning: --log_dir {shared}: it has mode 0777 without the sticky bit"
            in r.stderr), r.stderr
    shared.chmod(0o1777)  # as /tmp: others cannot rename what is not theirs
    r = launch(xlaunch_bin, ["--nproc_per_node", "1", "--log_dir", str(shared), "--no_python",
                             "true"])
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
