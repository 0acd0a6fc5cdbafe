"""SLURM's warning signal reaches the workers through xlaunch (docs/launch.md, "Signals for
the workers"), under the real SLURM the suite starts (cluster_fixtures.py): a batch job whose
script is xlaunch itself, signalled with `scancel --batch --signal=USR1`, as
`sbatch --signal=B:USR1@90` would before its time limit."""
import json
import textwrap
import uuid

from cluster_fixtures import slurm  # noqa: F401
from launch_helpers import wait_for_files

# Waits for SIGUSR1 from its launcher (the sender's pid tells: SLURM may signal the workers
# directly too), records it, and exits 0 like a job that checkpointed; 3 without it.
WORKER = textwrap.dedent("""\
    import json
    import os
    import pathlib
    import signal
    import sys

    out = pathlib.Path(sys.argv[1])
    rank = os.environ["RANK"]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    (out / ("ready_" + rank)).write_text("")
    senders = []
    while True:
        info = signal.sigtimedwait({signal.SIGUSR1}, 240)
        if info is None:
            print("RESULT", json.dumps({"rank": rank, "senders": senders}), flush=True)
            sys.exit(3)
        senders.append(info.si_pid)
        if info.si_pid == os.getppid():
            break
    print("RESULT", json.dumps({"rank": rank, "senders": senders, "launcher": os.getppid()}),
          flush=True)
    """)


def test_scancel_batch_usr1_is_forwarded_to_every_worker(slurm, xlaunch_bin,  # noqa: F811
                                                         torch_python, tmp_path):
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "job.out"
    name = f"xl-usr1-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "job.sh"
    script.write_text(
        "#!/bin/bash\n#SBATCH -N 1 -w node1\n"
        f"exec {xlaunch_bin} launch --python {torch_python} --nproc_per_node 2 "
        "--signals_to_handle SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1 "
        f"{worker} {out}\n")
    proc = slurm.popen(["sbatch", "--wait", "-J", name, "-o", str(log), str(script)],
                       cwd=tmp_path)
    try:
        wait_for_files(out, "ready_*", 2, timeout=180)
        job = slurm.job_id_named(name)
        r = slurm.run(["scancel", "--batch", "--signal=USR1", job])
        assert r.returncode == 0, r.stdout + r.stderr
        proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = log.read_text() if log.exists() else ""
    assert proc.returncode == 0, text + slurm.logs()
    results = {}
    for line in text.splitlines():
        if "RESULT " in line:
            record = json.loads(line.split("RESULT ", 1)[1])
            results[record["rank"]] = record
    assert sorted(results) == ["0", "1"], text
    for record in results.values():
        assert record["senders"][-1] == record["launcher"], text  # from xlaunch
    assert "xlaunch: SIGUSR1: forwarded to every worker (2)" in text, text
