"""`xlaunch config`: the wizard through a real pseudo-terminal and through piped stdin."""
import os
import re
import signal
import subprocess
import time

from config_helpers import CTRL_C, DOWN, ENTER, UP, PtySession, isolated_env


def default_file(tmp_path):
    return tmp_path / ".config" / "xlaunch" / "default_config.yaml"


def test_wizard_on_a_terminal_takes_arrow_keys_and_typed_answers(xlaunch_bin, tmp_path):
    # Without NVML, the launcher takes CUDA_VISIBLE_DEVICES's entries as the GPUs.
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1")
    s = PtySession([xlaunch_bin, "config"], env, cwd=tmp_path)
    s.expect("This machine has 2 GPUs")
    s.expect("Where will the job run?")
    s.send(ENTER)                        # default: this machine
    s.expect("Distributed type:")
    s.send(DOWN)                         # DDP (default with 2 GPUs) -> DP
    s.send(DOWN)                         # -> MULTI_CPU
    s.send(UP)                           # -> DP
    s.send(ENTER)
    s.expect("Which GPUs (comma-separated ids, or all)? [all]: ")
    s.send("5" + ENTER)                  # not a GPU of this machine: explained, asked again
    s.expect("this machine's GPU ids are 0 to 1")
    s.send("0,1" + ENTER)
    s.expect("Mixed precision:")
    s.send("fp8")
    s.send("\x7f")                       # backspace
    s.send("x" + ENTER)                  # "fpx" is not a choice
    s.expect("'fpx' is not one of the choices")
    s.send("3" + ENTER)                  # by number: bf16
    s.expect("Where should logs go (a directory, or none)? [none]: ")
    s.send("run_logs" + ENTER)
    assert s.wait() == 0, s.output.decode(errors="replace")
    out = s.output.decode(errors="replace")
    assert "Wrote " + str(default_file(tmp_path)) in out
    assert "\x1b[" in out                # menus are redrawn in place on a terminal
    text = default_file(tmp_path).read_text()
    assert "distributed_type: DP" in text
    assert "mixed_precision: bf16" in text
    assert "gpu_ids: 0,1" in text
    assert "log_dir: run_logs" in text
    assert "num_processes: 1" in text


def test_ctrl_c_on_a_terminal_leaves_the_file_untouched(xlaunch_bin, tmp_path):
    target = tmp_path / "mine.yaml"
    target.write_text("num_processes: 3\n")
    s = PtySession([xlaunch_bin, "config", "--config_file", str(target)],
                   isolated_env(tmp_path), cwd=tmp_path)
    s.expect("Where will the job run?")
    s.send(DOWN)
    s.expect("> 2) multi")
    s.send(CTRL_C)                       # raw mode: arrives as a byte, not a signal
    assert s.wait() == 130
    assert target.read_text() == "num_processes: 3\n"
    assert b"was not changed" in s.output


def _piped(xlaunch_bin, tmp_path, answers, *args, env=None):
    return subprocess.run([xlaunch_bin, "config", *args], input=answers, text=True,
                          capture_output=True, env=env or isolated_env(tmp_path), timeout=30)


def test_piped_answers_one_per_line_empty_takes_default(xlaunch_bin, tmp_path):
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1,2,3")
    # where, type, processes (bad, then 2), gpus, precision, logs
    answers = "\nDDP\n9\n2\n1,3\nfp16\n\n"
    r = _piped(xlaunch_bin, tmp_path, answers, env=env)
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout        # no colour or cursor codes when not a terminal
    assert "How many processes in total (all machines together)? [4]: " in r.stdout
    assert "DDP runs one process per GPU and this machine has 4 GPUs" in r.stdout
    text = default_file(tmp_path).read_text()
    assert "distributed_type: MULTI_GPU" in text   # DDP is written as accelerate's name
    assert "num_processes: 2" in text
    assert "gpu_ids: 1,3" in text
    assert "mixed_precision: fp16" in text
    assert "log_dir" not in text


def test_piped_multi_machine_answers(xlaunch_bin, tmp_path):
    target = tmp_path / "cluster.yaml"
    answers = "multi\nMULTI_CPU\n2\n1\n10.0.0.5\n29600\n4\nno\n/tmp/l\n"
    r = _piped(xlaunch_bin, tmp_path, answers, "--config_file", str(target))
    assert r.returncode == 0, r.stderr
    text = target.read_text()
    for line in ("distributed_type: MULTI_CPU", "num_machines: 2", "machine_rank: 1",
                 "main_process_ip: 10.0.0.5", "main_process_port: 29600", "num_processes: 4",
                 "use_cpu: true", "log_dir: /tmp/l"):
        assert line in text


def test_end_of_input_exits_2_and_leaves_the_file(xlaunch_bin, tmp_path):
    target = tmp_path / "keep.yaml"
    target.write_text("mixed_precision: fp16\n")
    r = _piped(xlaunch_bin, tmp_path, "\n", "--config_file", str(target))
    assert r.returncode == 2
    assert "input ended before every question was answered" in r.stderr
    assert target.read_text() == "mixed_precision: fp16\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".keep")] == []


def test_sigint_while_waiting_on_a_pipe_exits_130(xlaunch_bin, tmp_path):
    target = tmp_path / "keep.yaml"
    target.write_text("mixed_precision: fp16\n")
    proc = subprocess.Popen([xlaunch_bin, "config", "--config_file", str(target)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=isolated_env(tmp_path))
    proc.stdin.write(b"\n")
    proc.stdin.flush()
    seen = b""
    # Now blocked on the second question (2 choices without a GPU, 4 with).
    while not re.search(rb"Distributed type:.*or a name", seen, re.S):
        chunk = os.read(proc.stdout.fileno(), 4096)
        assert chunk, seen
        seen += chunk
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert b"was not changed" in err
    assert target.read_text() == "mixed_precision: fp16\n"


def test_template_supplies_the_defaults(xlaunch_bin, tmp_path):
    target = tmp_path / "m.yaml"
    r = _piped(xlaunch_bin, tmp_path, "\n" * 12, "--template", "multi_machine",
               "--config_file", str(target))
    assert r.returncode == 0, r.stderr
    text = target.read_text()
    assert "num_machines: 2" in text
    assert "main_process_ip: 10.0.0.1" in text
    assert "mixed_precision: bf16" in text
    assert "rdzv_timeout: 900" in text   # keys the wizard does not ask about are kept


def test_unknown_template_is_a_usage_error(xlaunch_bin, tmp_path):
    r = _piped(xlaunch_bin, tmp_path, "", "--template", "nope")
    assert r.returncode == 2
    assert "nope" in r.stderr


def test_sigterm_on_a_terminal_restores_it_and_leaves_the_file(xlaunch_bin, tmp_path):
    # Only SIGINT was handled: SIGTERM (kill, a closed window's SIGHUP) left the terminal raw,
    # with no echo and no line editing, until the user typed `reset`.
    import termios
    target = tmp_path / "mine.yaml"
    target.write_text("num_processes: 3\n")
    s = PtySession([xlaunch_bin, "config", "--config_file", str(target)],
                   isolated_env(tmp_path), cwd=tmp_path)
    s.expect("Where will the job run?")
    lflag = termios.tcgetattr(s.master)[3]
    assert not lflag & termios.ECHO and not lflag & termios.ICANON  # raw while it asks
    master = os.dup(s.master)  # wait() closes its own
    try:
        s.proc.send_signal(signal.SIGTERM)
        assert s.wait() == 143
        lflag = termios.tcgetattr(master)[3]
    finally:
        os.close(master)
    assert lflag & termios.ECHO and lflag & termios.ICANON and lflag & termios.ISIG
    assert target.read_text() == "num_processes: 3\n"
    assert b"was not changed" in s.output


def test_a_folder_or_an_empty_path_is_refused_before_any_question(xlaunch_bin, tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    for path in (str(folder), "", str(tmp_path / "new") + "/"):
        r = _piped(xlaunch_bin, tmp_path, "\n" * 10, "--config_file", path)
        assert r.returncode == 2, (path, r.stdout, r.stderr)
        assert "Where will the job run?" not in r.stdout, path
        assert "hint: give a file name" in r.stderr, r.stderr
    assert not (tmp_path / "new").exists()  # nothing created for a path that was refused
    r = subprocess.run([xlaunch_bin, "config", "default", "--force", "--config_file", str(folder)],
                       capture_output=True, text=True, env=isolated_env(tmp_path), timeout=30)
    assert r.returncode == 2, r.stderr
    assert "it is a directory" in r.stderr


def test_a_symlinked_config_file_is_written_through_its_link(xlaunch_bin, tmp_path):
    # A config kept in a dotfiles repository: the link stays, the file it names is updated.
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "xlaunch.yaml"
    real.write_text("num_processes: 1\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(os.path.relpath(real, tmp_path))
    r = _piped(xlaunch_bin, tmp_path, "\nMULTI_CPU\n3\nno\n\n", "--config_file", str(link))
    assert r.returncode == 0, r.stdout + r.stderr
    assert link.is_symlink()
    assert "num_processes: 3" in real.read_text()
    assert [p.name for p in dotfiles.iterdir()] == ["xlaunch.yaml"]  # no temporary left


def test_more_than_1024_processes_per_machine_is_asked_again(xlaunch_bin, tmp_path):
    # The wizard wrote such a file, and `xlaunch launch` then refused it.
    target = tmp_path / "cpu.yaml"
    r = _piped(xlaunch_bin, tmp_path, "\nMULTI_CPU\n5000\n4\nno\n\n", "--config_file", str(target))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "5000 processes on each machine; xlaunch runs at most 1024 per machine" in r.stdout
    assert "num_processes: 4" in target.read_text()
    r = subprocess.run([xlaunch_bin, "config", "default", "--config_file", str(tmp_path / "d.yaml"),
                        "--num_processes", "5000", "--use_cpu"], capture_output=True, text=True,
                       env=isolated_env(tmp_path), timeout=30)
    assert r.returncode == 2, r.stderr
    assert "xlaunch runs at most 1024 per machine" in r.stderr
    assert not (tmp_path / "d.yaml").exists()


ACCELERATE_DEEPSPEED = """\
compute_environment: LOCAL_MACHINE
distributed_type: DEEPSPEED
deepspeed_config:
  deepspeed_config_file: /path/ds_z3.json
  zero3_init_flag: true
dynamo_config:
  dynamo_backend: INDUCTOR
enable_cpu_affinity: true
fsdp_config: {}
mixed_precision: bf16
num_machines: 1
num_processes: 2
use_cpu: false
"""


def test_the_wizard_keeps_what_it_does_not_ask_of_an_accelerate_file(xlaunch_bin, tmp_path):
    target = tmp_path / "ds.yaml"
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1")
    settings = [f"{key}: {value}" for key, value in (
        ("deepspeed_config_file", "/path/ds_z3.json"), ("zero3_init_flag", "true"),
        ("dynamo_backend", "INDUCTOR"), ("enable_cpu_affinity", "true"))]
    # Every default taken: the paradigm, its section and the others stay.
    target.write_text(ACCELERATE_DEEPSPEED)
    r = _piped(xlaunch_bin, tmp_path, "\n" * 10, "--config_file", str(target), env=env)
    assert r.returncode == 0, r.stderr
    assert "Keeping distributed_type DEEPSPEED and its settings from the file." in r.stdout
    text = target.read_text()
    assert "distributed_type: DEEPSPEED" in text, text
    shown = subprocess.run([xlaunch_bin, "config", "show", "--config_file", str(target)],
                           capture_output=True, text=True, env=env, timeout=30)
    assert shown.returncode == 0, shown.stderr
    for line in settings + ["use_deepspeed: true"]:
        key, value = line.split(": ")
        assert re.search(rf"^{key} +{value}$", shown.stdout, re.M), (line, shown.stdout)
    # Another type chosen: that type is written, and the paradigm no longer applies.
    for answer, written in (("NO", "distributed_type: 'NO'"),
                            ("MULTI_CPU", "distributed_type: MULTI_CPU")):
        target.write_text(ACCELERATE_DEEPSPEED)
        r = _piped(xlaunch_bin, tmp_path, f"\n{answer}\n" + "\n" * 8, "--config_file",
                   str(target), env=env)
        assert r.returncode == 0, (answer, r.stderr)
        text = target.read_text()
        assert written in text and "DEEPSPEED" not in text, text


def test_the_wizard_refuses_a_file_it_cannot_read_rather_than_replace_it(xlaunch_bin,
                                                                          tmp_path):
    target = tmp_path / "broken.yaml"
    broken = "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 3\nmixed_precision: bf16\n"
    target.write_text(broken)
    r = _piped(xlaunch_bin, tmp_path, "\n" * 10, "--config_file", str(target))
    assert r.returncode == 2, r.stderr
    assert f"{target}:3:17: key 'fsdp_config.fsdp_version': bad value '3'" in r.stderr, r.stderr
    assert "move the file away to start afresh" in r.stderr
    assert target.read_text() == broken


def test_typed_answers_keep_non_ascii_and_erase_whole_characters(xlaunch_bin, tmp_path):
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1")
    s = PtySession([xlaunch_bin, "config"], env, cwd=tmp_path)
    s.expect("Where will the job run?")
    s.send(ENTER)
    s.expect("Distributed type:")
    s.send(ENTER)                        # DDP
    s.expect("How many processes")
    s.send(ENTER)
    s.expect("Which GPUs")
    s.send(ENTER)
    s.expect("Mixed precision:")
    s.send(ENTER)
    s.expect("Where should logs go (a directory, or none)? [none]: ")
    s.send("/data/日本/logs/é")
    s.send("\x7f")                       # one backspace: the whole "é", both of its bytes
    s.send(ENTER)
    assert s.wait() == 0, s.output.decode(errors="replace")
    assert "log_dir: /data/日本/logs/\n" in default_file(tmp_path).read_text(encoding="utf-8")


def test_piped_answers_that_cannot_work_are_asked_again(xlaunch_bin, tmp_path):
    env = isolated_env(tmp_path, CUDA_VISIBLE_DEVICES="0,1,2")
    # where, type, processes, GPUs (the same twice, then two), precision, logs (a control
    # character, then a folder)
    answers = "\nDDP\n2\n0,0\n0,2\n\n/tmp/a\x1b[31mred\n/tmp/logs\n"
    r = _piped(xlaunch_bin, tmp_path, answers, env=env)
    assert r.returncode == 0, r.stderr
    assert "GPU 0 is named twice: each process needs a GPU of its own" in r.stdout
    assert "a folder's name holds no control characters" in r.stdout
    text = default_file(tmp_path).read_text()
    assert "gpu_ids: 0,2" in text and "log_dir: /tmp/logs" in text, text
    assert "\x1b" not in text


def test_a_closed_output_does_not_end_the_wizard(xlaunch_bin, tmp_path):
    # `xlaunch config | head -1`: the questions go nowhere, the answers still count.
    target = tmp_path / "piped.yaml"
    proc = subprocess.Popen([xlaunch_bin, "config", "--config_file", str(target)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=isolated_env(tmp_path), text=True)
    proc.stdout.close()  # before the first question is written
    _, err = proc.communicate("\n" * 10, timeout=30)
    assert proc.returncode == 0, (proc.returncode, err)
    assert "distributed_type" in target.read_text()
