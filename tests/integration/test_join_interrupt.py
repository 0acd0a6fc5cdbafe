"""A launcher interrupted (Ctrl-C) while the machines join: it says why and exits 130, and
every launcher that joined hears it at once and exits with the same words and code, as when
one is interrupted mid-run (docs/multi-machine.md, "Exit codes"); a newcomer to an elastic
job leaves alone, and the job forms without it. Through machine 0's store and through etcd.

Before, the interrupted launcher died silently by the signal's default action while its
record stayed: the others formed the job with it and reported it lost a heartbeat timeout
later (exit 1), or an elastic job restarted twice for it.
"""
import signal
import time

from etcd_fixtures import etcd, etcd_binary  # noqa: F401 (fixtures)
from etcd_helpers import TIMEOUT, driver, launchers, wait_for_members  # noqa: F401 (fixtures)
from machine_fixtures import machines  # noqa: F401 (fixture)
from store_helpers import RawStore

# Far longer than any test waits: only the interrupt can end these joins in time.
LONG_JOIN = ["--rdzv_timeout", "600"]
ELASTIC = ["--max_restarts", "1", "--heartbeat_timeout", "3", "--rdzv_conf",
           "last_call_timeout=1", "--rdzv_timeout", "120"]


def error_line(err):
    lines = [l for l in err.splitlines() if l.startswith("xlaunch: error: ")]
    assert lines, err
    return lines[-1]


def machine0_store(machines, m0):
    """A raw connection to machine 0's store, once it accepts one."""
    while True:
        assert m0.poll() is None, m0.communicate()
        try:
            return RawStore(machines.port)
        except OSError:
            time.sleep(0.05)


def wait_for_arrivals(store, count, procs):
    """Waits until `count` launchers have taken an arrival slot (their records follow)."""
    deadline = time.monotonic() + 60
    while store.add("xlaunch/default/arrivals", 0) < count:
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        assert time.monotonic() < deadline, "the launchers did not join"
        time.sleep(0.05)
    time.sleep(0.2)  # the slot's record is written right after it is taken


def wait_for_line(proc, text):
    """Reads the launcher's stderr up to the line holding `text` (then communicate() reads the
    rest)."""
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"no line with {text!r}: {proc.communicate()}")


def two_of_three_joined(machines):
    """Machines 0 and 1 of 3, both in the join, waiting for machine 2 (which never comes)."""
    m0 = machines.start(0, 3, LONG_JOIN)
    store = machine0_store(machines, m0)
    m1 = machines.start(1, 3, LONG_JOIN)
    wait_for_arrivals(store, 2, [m0, m1])
    return m0, m1


def test_ctrl_c_in_the_join_ends_it_on_every_machine_that_joined(machines):
    m0, m1 = two_of_three_joined(machines)
    m1.send_signal(signal.SIGINT)
    rc1, _, err1 = machines.finish(m1, timeout=30)
    rc0, _, err0 = machines.finish(m0, timeout=30)
    assert rc1 == 130, err1  # not killed by the signal's default action (-2)
    assert rc0 == 130, err0  # machine 2 never came: only the interrupt ends machine 0's wait
    assert error_line(err0) == error_line(err1)
    assert error_line(err0).startswith("xlaunch: error: machine 1 (")
    assert error_line(err0).endswith("): launcher interrupted by SIGINT while joining the job")
    assert not list(machines.out.glob("rank_*")), "workers started"


def test_ctrl_c_to_machine_0_in_the_join_ends_it_for_the_others(machines):
    m0, m1 = two_of_three_joined(machines)
    m0.send_signal(signal.SIGTERM)
    rc0, _, err0 = machines.finish(m0, timeout=30)
    rc1, _, err1 = machines.finish(m1, timeout=30)
    assert rc0 == rc1 == 143, err0 + err1
    assert error_line(err0) == error_line(err1)
    assert "machine 0 (" in error_line(err1) and "interrupted by SIGTERM" in error_line(err1)


def test_ctrl_c_before_machine_0_answers_ends_the_launcher_with_its_reason(machines):
    # Nothing listens at machine 0's address: the launcher retries its connection.
    m1 = machines.start(1, 2, LONG_JOIN)
    wait_for_line(m1, "joining the job")
    m1.send_signal(signal.SIGINT)
    rc1, _, err1 = machines.finish(m1, timeout=30)
    assert rc1 == 130, err1
    assert "machine 1 (" in error_line(err1) and "interrupted by SIGINT" in error_line(err1)


def test_an_elastic_newcomer_interrupted_before_it_is_taken_in_leaves_alone(machines):
    # --nnodes 3:4: machine 0 and a newcomer wait for a third; the newcomer is interrupted.
    args = ["--nnodes", "3:4", *ELASTIC]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"])
    store = machine0_store(machines, m0)
    leaving = machines.start(None, None, args)
    wait_for_arrivals(store, 2, [m0, leaving])
    leaving.send_signal(signal.SIGINT)
    rc, _, err = machines.finish(leaving, timeout=30)
    assert rc == 130, err
    assert "interrupted by SIGINT while joining the job" in error_line(err)
    # Two more come: the job forms with three machines, once, without the one that left.
    others = [machines.start(None, None, args) for _ in range(2)]
    for p in [m0, *others]:
        rc, _, err = machines.finish(p)
        assert rc == 0, err
        assert "re-forming" not in err and "restart" not in err, err
    ranks = machines.ranks(attempt=0)
    assert sorted(ranks) == [0, 1, 2], ranks
    assert {info["WORLD_SIZE"] for info in ranks.values()} == {"3"}
    assert not list(machines.out.glob("rank_*_attempt_1.json"))


def test_ctrl_c_in_a_join_through_etcd_ends_it_for_every_launcher(launchers, etcd, driver):
    procs = [launchers.start(etcd.endpoints, "job-int", machines=3, extra=LONG_JOIN)
             for _ in range(2)]
    wait_for_members(driver, etcd.endpoints, "job-int", 2)
    procs[1].send_signal(signal.SIGINT)
    outs = [launchers.finish(p) for p in procs]
    for code, _, err in outs:
        assert code == 130, err
    assert error_line(outs[0][2]) == error_line(outs[1][2])
    assert "launcher interrupted by SIGINT while joining the job" in error_line(outs[0][2])
    assert not launchers.sums(), "workers started"


def test_an_elastic_newcomer_through_etcd_leaves_alone(launchers, etcd, driver):
    elastic = ["--max_restarts", "1", "--rdzv_conf", "last_call_timeout=1"]
    first = launchers.start(etcd.endpoints, "job-left", machines="3:4", extra=elastic)
    leaving = launchers.start(etcd.endpoints, "job-left", machines="3:4", extra=elastic)
    wait_for_members(driver, etcd.endpoints, "job-left", 2)
    leaving.send_signal(signal.SIGINT)
    code, _, err = launchers.finish(leaving)
    assert code == 130, err
    assert "interrupted by SIGINT while joining the job" in error_line(err)
    wait_for_members(driver, etcd.endpoints, "job-left", 1)  # its lease went with it
    others = [launchers.start(etcd.endpoints, "job-left", machines="3:4", extra=elastic)
              for _ in range(2)]
    for p in [first, *others]:
        code, out, err = launchers.finish(p)
        assert code == 0, err
        assert "restart" not in err, err
    sums = launchers.sums()
    assert sorted(sums) == list(range(6)), sums  # three machines of two workers, round 0
    assert {s[0] for s in sums.values()} == {"6"}
    assert {s[6] for s in sums.values()} == {"0"}


def test_an_elastic_host_still_times_out_when_a_newcomer_leaves_during_the_last_call(machines):
    # MIN 2 were in, so the last call (4 s) ran; the newcomer left in it. The host waited on
    # for ever: the last call, once open, never closed again.
    args = ["--nnodes", "2:3", "--max_restarts", "1", "--heartbeat_timeout", "3",
            "--rdzv_conf", "last_call_timeout=4", "--rdzv_timeout", "5"]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"])
    store = machine0_store(machines, m0)
    leaving = machines.start(None, None, args)
    wait_for_arrivals(store, 2, [m0, leaving])
    leaving.send_signal(signal.SIGINT)
    assert machines.finish(leaving, timeout=30)[0] == 130
    rc, _, err = machines.finish(m0, timeout=60)
    assert rc == 1, err
    assert "only 1 of the minimum 2 machines joined within --rdzv_timeout 5s" in error_line(err)


def test_a_taken_record_that_is_not_xlaunchs_refuses_that_newcomer_alone(machines):
    args = ["--nnodes", "3:4", *ELASTIC]
    m0 = machines.start(None, None, [*args, "--machine_rank", "0"])
    store = machine0_store(machines, m0)
    wait_for_arrivals(store, 1, [m0])
    store.set("xlaunch/default/taken/2", "garbage")  # the next launcher's slot
    newcomer = machines.start(None, None, args)
    rc, _, err = machines.finish(newcomer, timeout=60)
    assert rc == 2, err
    assert ("the job refused this machine: malformed record xlaunch/default/taken/2: neither "
            "'in' nor 'out'") in error_line(err)
    m0.send_signal(signal.SIGINT)  # the host goes on waiting for MIN: end it
    assert machines.finish(m0, timeout=30)[0] == 130
