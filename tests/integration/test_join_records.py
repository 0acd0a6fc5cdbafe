"""Join records read from the store are untrusted input (the store has no authentication);
a late duplicate launcher is refused alone; machines agree on blame after a pause.

Launchers act as machines on 127.0.0.1, each in its own session; a torch 1.13 TCPStore client
plays the hostile (or careless) program that writes into the job's keys.
"""
import os
import signal
import time

import pytest

from launch_helpers import wait_for_files
import machine_fixtures
from store_helpers import RawStore, serve

RUN_ID = "recs"

# Waits for OUT_DIR/go (so a test decides when the job ends, without sleeps), then exits 0.
WORKER = r'''
import json, os, time
out = os.environ["OUT_DIR"]
with open(f"{out}/rank_{os.environ['RANK']}.json", "w") as f:
    json.dump({"pid": os.getpid(), "WORLD_SIZE": os.environ["WORLD_SIZE"]}, f)
while not os.path.exists(f"{out}/go"):
    time.sleep(0.1)
'''


class Machines(machine_fixtures.Machines):
    """The shared launchers-as-machines, with this file's worker (it waits for OUT_DIR/go),
    one run id, and a clean-up that lets the workers end first."""

    def __init__(self, xlaunch_bin, tmp_path):
        super().__init__(xlaunch_bin, tmp_path)
        self.worker.write_text(WORKER)

    def start(self, rank, n=2, args=()):
        return super().start(rank, n, args=["--rdzv_id", RUN_ID, *args])

    def finish(self, p, timeout=90):
        rc, _, err = super().finish(p, timeout)
        return rc, err

    def cleanup(self):
        (self.out / "go").touch()
        super().cleanup()


@pytest.fixture
def machines(xlaunch_bin, tmp_path):
    m = Machines(xlaunch_bin, tmp_path)
    yield m
    m.cleanup()


def record(machine, local):
    return f"machine={machine}\nhost=planted\npid=1\nlocal={local}\nversion=0\n"


@pytest.mark.parametrize("arrival, layout, expected", [
    # Machine 1 wrote hosts[100000000] (SIGSEGV) when it took this record in.
    (record(100000000, 1), "ok\n1,1\nrecs\n",
     "malformed record xlaunch/recs/arrival/1: machine=100000000 is outside -1..65535"),
    # Workers were given WORLD_SIZE -4.
    (record(0, -5), "ok\n-5,1\nrecs\n",
     "malformed record xlaunch/recs/layout: local counts=-5 is outside 1..1024"),
    # 2147483647 + 1 wrapped to a negative world size.
    (record(0, 2147483647), "ok\n2147483647,1\nrecs\n",
     "malformed record xlaunch/recs/layout: local counts=2147483647 is outside 1..1024"),
])
def test_a_planted_join_record_is_a_clear_error_naming_its_key(
        machines, xlaunch_bin, arrival, layout, expected):
    # The store stands for machine 0's; the planted records for what machine 0 published.
    with serve(xlaunch_bin) as (_, port):
        machines.port = port
        store = RawStore(port)
        store.add("xlaunch/recs/arrivals", 1)
        store.set("xlaunch/recs/arrival/1", arrival)
        store.set("xlaunch/recs/layout", layout)
        rc, err = machines.finish(machines.start(1, args=["--rdzv_timeout", "30"]))
    assert rc == 1, err
    assert expected in err, err
    assert "is another program using run id 'recs'?" in err
    assert not list(machines.out.glob("rank_*.json")), "workers started from a malformed layout"


def test_a_planted_layout_naming_an_arrival_nobody_wrote_is_a_clear_error(machines, xlaunch_bin):
    # Machine 1 waited for arrival/1, which nobody writes, for the client's whole timeout
    # (deaf to Ctrl-C), then blamed machine 0 for not announcing the job.
    with serve(xlaunch_bin) as (_, port):
        machines.port = port
        store = RawStore(port)
        store.add("xlaunch/recs/arrivals", 1)
        store.set("xlaunch/recs/layout", "ok\n1,1\nrecs\n")
        rc, err = machines.finish(machines.start(1, args=["--rdzv_timeout", "30"]), timeout=20)
    assert rc == 1, err
    assert ("malformed record xlaunch/recs/layout: no arrival record xlaunch/recs/arrival/1"
            in err), err


def test_a_heartbeat_that_is_not_a_number_does_not_end_the_job(machines):
    # Machine 1 added to its counter hb/1, which failed on a value that is not a number: it
    # left ("machine 0 lost") while machine 0 exited 0.
    args = ["--heartbeat_timeout", "3"]
    m0 = machines.start(0, args=args)
    store = None
    while store is None:  # machine 0's store is up when it accepts a connection
        assert m0.poll() is None, m0.communicate()
        try:
            store = RawStore(machines.port)
        except OSError:
            time.sleep(0.1)
    store.set("xlaunch/recs/hb/1", "not a number")
    m1 = machines.start(1, args=args)
    wait_for_files(machines.out, "rank_*.json", 2, timeout=60)
    # Machine 1 beats in spite of the planted value (on main it stopped at its first beat).
    seen = {store.get("xlaunch/recs/hb/1")}
    deadline = time.monotonic() + 60  # a beat a second; only a hang would take this long
    while len(seen) < 3 and time.monotonic() < deadline:
        assert m1.poll() is None, m1.communicate()
        time.sleep(0.1)
        seen.add(store.get("xlaunch/recs/hb/1"))
    assert len(seen) >= 3, f"machine 1 does not beat: {seen}"
    (machines.out / "go").touch()
    for p in (m0, m1):
        rc, err = machines.finish(p)
        assert rc == 0, err


def job_failed_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("xlaunch: job failed:")]
    assert lines, stderr
    return lines[-1]


def test_a_late_duplicate_launcher_is_refused_alone_and_the_job_goes_on(machines):
    # A third launcher claiming machine rank 1 made all three exit 2.
    m0, m1 = machines.start(0), machines.start(1)
    wait_for_files(machines.out, "rank_*.json", 2, timeout=60)
    rc, err = machines.finish(machines.start(1))
    assert rc == 2, err
    assert "already runs with machine rank 1 on" in err, err
    assert "was not taken in, and the job goes on" in err, err
    assert m0.poll() is None and m1.poll() is None, "the running job was stopped"
    (machines.out / "go").touch()
    for p in (m0, m1):
        rc, err = machines.finish(p)
        assert rc == 0, err


def test_machines_agree_on_blame_after_machine_0_was_stopped(machines):
    # After `kill -STOP` of machine 0, machine 1 blamed machine 0 and machine 0 (resumed)
    # blamed machine 1: the two launchers told different stories.
    args = ["--heartbeat_timeout", "3"]
    m0, m1 = machines.start(0, args=args), machines.start(1, args=args)
    wait_for_files(machines.out, "rank_*.json", 2, timeout=60)
    os.kill(m0.pid, signal.SIGSTOP)
    try:
        rc1, err1 = machines.finish(m1)
    finally:
        os.kill(m0.pid, signal.SIGCONT)
    rc0, err0 = machines.finish(m0)
    assert rc1 == rc0 == 1, (err0, err1)
    assert job_failed_line(err0) == job_failed_line(err1), (err0, err1)
    assert "machine 0 (" in job_failed_line(err1), err1
