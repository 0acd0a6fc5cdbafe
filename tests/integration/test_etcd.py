"""The etcd rendezvous backend against a real etcd (Debian's etcd-server on loopback).

First the client itself, through xlaunch-etcd-driver (the client from the command line):
claims, leases that expire when their holder is SIGKILLed, watches, a member of three lost,
etcd unreachable. Then whole `xlaunch launch` jobs joining through etcd.
"""
import os
import signal
import socket
import subprocess
import time

import pytest

from etcd_fixtures import etcd, etcd3, etcd_binary  # noqa: F401 (fixtures)

TIMEOUT = 120  # seconds for any one command on a loaded CI machine


@pytest.fixture(scope="session")
def driver(build_dir):
    path = build_dir / "cluster" / "xlaunch-etcd-driver"
    if not path.exists():
        pytest.fail(f"{path} not found: build the project first (scripts/test does)")
    return str(path)


def run(driver, endpoints, *args):
    return subprocess.run([driver, endpoints, *args], capture_output=True, text=True,
                          timeout=TIMEOUT)


def ok(driver, endpoints, *args):
    done = run(driver, endpoints, *args)
    assert done.returncode == 0, f"{args}: {done.returncode} {done.stderr}"
    return done.stdout


def values(driver, endpoints, prefix):
    """{key: value} under prefix."""
    out = {}
    for line in ok(driver, endpoints, "get-prefix", prefix).splitlines()[1:]:
        key, rest = line.split("=", 1)
        out[key] = rest.split(" lease=")[0]
    return out


class Holders:
    """`driver hold` processes (a key on a lease kept alive); SIGKILLed at the end."""

    def __init__(self, driver):
        self.driver = driver
        self.procs = []

    def start(self, endpoints, key, value, ttl):
        proc = subprocess.Popen([self.driver, endpoints, "hold", key, value, str(ttl)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        line = proc.stdout.readline()
        assert line.startswith("holding lease="), f"{line!r} {proc.stderr.read()}"
        return proc

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=TIMEOUT)


@pytest.fixture
def holders(driver):
    h = Holders(driver)
    yield h
    h.stop()


def wait_deleted(driver, endpoints, key, revision):
    """Watches `key` from `revision` until etcd reports it deleted; returns the event line."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        out = ok(driver, endpoints, "watch", key, str(revision), "10000")
        for line in out.splitlines():
            if line.startswith(f"DELETE {key}="):
                return line
            if line.startswith("next_revision="):
                revision = int(line.split("=")[1])
    raise AssertionError(f"{key} was not deleted within {TIMEOUT} s")


def test_client_put_get_and_one_claim_wins(driver, etcd):
    e = etcd.endpoints
    ok(driver, e, "put", "t/a", "hello world")
    assert values(driver, e, "t/") == {"t/a": "hello world"}
    # Claims race: many creators of one key, exactly one creates it, all see its value.
    procs = [subprocess.Popen([driver, e, "create", "t/claim", f"machine-{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(6)]
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    created = [i for i, (out, _) in enumerate(outs) if out.startswith("created")]
    assert len(created) == 1, outs
    winner = f"machine-{created[0]}"
    for out, _ in outs:
        if out.startswith("exists"):
            assert f"t/claim={winner} " in out
    assert values(driver, e, "t/")["t/claim"] == winner


def test_client_watch_sees_a_later_put(driver, etcd):
    e = etcd.endpoints
    revision = int(ok(driver, e, "put", "w/first", "1").split("=")[1])
    watcher = subprocess.Popen([driver, e, "watch", "w/", str(revision + 1), "100000"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ok(driver, e, "put", "w/second", "2")
    out, err = watcher.communicate(timeout=TIMEOUT)
    assert watcher.returncode == 0, err
    assert "PUT w/second=2 " in out
    assert "w/first" not in out  # only changes from the revision asked for


def test_client_lease_expires_when_its_holder_is_killed(driver, etcd, holders):
    e = etcd.endpoints
    holder = holders.start(e, "l/machine-1", "alive", 2)
    revision = int(ok(driver, e, "get", "l/machine-1").splitlines()[0].split("=")[1])
    assert "l/machine-1=alive" in ok(driver, e, "get", "l/machine-1")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=TIMEOUT)
    line = wait_deleted(driver, e, "l/machine-1", revision)
    assert line.startswith("DELETE l/machine-1=")
    assert values(driver, e, "l/") == {}


def test_client_revoked_lease_ends_keepalive(driver, etcd):
    e = etcd.endpoints
    lease = ok(driver, e, "grant", "30").split()[0].split("=")[1]
    assert ok(driver, e, "keepalive", lease).strip() != "ttl=0"
    assert ok(driver, e, "revoke", lease).strip() == "revoked"
    assert ok(driver, e, "keepalive", lease).strip() == "ttl=0"
    assert ok(driver, e, "revoke", lease).strip() == "revoked"  # already gone: still done


def test_client_survives_the_loss_of_one_member_of_three(driver, etcd3, holders):
    e = etcd3.endpoints
    # The holder keeps its lease alive through the member it reached first (m0), which dies.
    holder = holders.start(e, "m/machine-0", "alive", 3)
    revision = int(ok(driver, e, "put", "m/before", "1").split("=")[1])
    etcd3.kill(0)
    ok(driver, e, "put", "m/after", "2")
    # Longer than the TTL several times over: the lease lives on through the other members.
    watch = ok(driver, e, "watch", "m/machine-0", str(revision), "12000")
    assert "DELETE" not in watch
    assert holder.poll() is None, holder.stderr.read()
    assert values(driver, e, "m/") == {"m/machine-0": "alive", "m/before": "1", "m/after": "2"}
    # The list given with the dead member last works too.
    survivors_first = ",".join([etcd3.member_endpoint(1), etcd3.member_endpoint(2),
                                etcd3.member_endpoint(0)])
    assert values(driver, survivors_first, "m/")["m/after"] == "2"


def test_client_unreachable_etcd_is_a_clear_error(driver, etcd):
    port = etcd.client_ports[0]
    etcd.stop()  # nothing listens on its port any more
    done = run(driver, f"127.0.0.1:{port}", "get", "x")
    assert done.returncode == 1
    assert f"cannot reach etcd at 127.0.0.1:{port}" in done.stderr
    assert "refused" in done.stderr.lower()


def test_client_silent_etcd_is_a_bounded_error(driver):
    # A socket that accepts connections (the kernel's backlog) but never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        done = run(driver, f"127.0.0.1:{port}", "get", "x")
    assert done.returncode == 1
    assert f"cannot reach etcd at 127.0.0.1:{port}" in done.stderr
    assert "no answer in time" in done.stderr


def test_client_bad_endpoint_is_a_usage_error(driver):
    done = run(driver, "127.0.0.1:99999", "get", "x")
    assert done.returncode == 2
    assert "'127.0.0.1:99999'" in done.stderr and "1..65535" in done.stderr


# --- the join backend: several launchers' sides (the driver's `member`) against etcd ----

HEARTBEAT = "3"  # seconds: the lease TTL, short so a lost launcher is seen soon


class Members:
    """`driver member` processes, each one launcher's side of the etcd join."""

    def __init__(self, driver):
        self.driver = driver
        self.procs = []

    def start(self, endpoints, run_id, machines, host, outcome="ok", rank=-1, local=2,
              heartbeat=HEARTBEAT):
        proc = subprocess.Popen(
            [self.driver, endpoints, "member", run_id, str(machines), str(rank), host, str(local),
             outcome, heartbeat],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def joined(self, proc):
        line = proc.stdout.readline()
        assert line.startswith("joined "), f"{line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        return dict(item.split("=", 1) for item in line.split()[1:])

    def finish(self, proc):
        # Output is a few lines: the pipes cannot fill. Read through the text wrappers,
        # which may hold what joined() read ahead.
        proc.wait(timeout=TIMEOUT)
        return proc.returncode, proc.stdout.read(), proc.stderr.read()

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=TIMEOUT)


@pytest.fixture
def members(driver):
    m = Members(driver)
    yield m
    m.stop()


def test_join_three_machines_in_any_order(members, etcd, driver):
    # No launcher has to start first: ranks follow the order of arrival.
    procs = [members.start(etcd.endpoints, "job-a", 3, f"host{i}", local=i + 1) for i in range(3)]
    joined = [members.joined(p) for p in procs]
    ranks = sorted(int(j["rank"]) for j in joined)
    assert ranks == [0, 1, 2]
    worlds = {j["world"] for j in joined}
    assert worlds == {"6"}
    hosts = {j["hosts"] for j in joined}
    assert len(hosts) == 1  # every launcher sees the same job
    order = hosts.pop().split(",")
    for i, j in enumerate(joined):
        assert order[int(j["rank"])] == f"host{i}"
    # One store for the job (rank 0's) and one run id (rank 0's), on every launcher.
    assert len({j["store_port"] for j in joined}) == 1
    rank0 = next(i for i, j in enumerate(joined) if j["rank"] == "0")
    assert {j["run"] for j in joined} == {f"run-host{rank0}"}
    offsets = sorted(int(j["offset"]) for j in joined)
    assert len(set(offsets)) == 3 and offsets[0] == 0
    for p in procs:
        code, out, err = members.finish(p)
        assert code == 0, err
        assert "verdict ok" in out
    # The launchers revoked their leases on exit: no member key is left.
    listing = ok(driver, etcd.endpoints, "get-prefix", "/xlaunch/job-a/members/")
    assert listing.splitlines()[1:] == []


def test_join_with_given_machine_ranks(members, etcd):
    procs = [members.start(etcd.endpoints, "job-b", 2, f"host{r}", rank=r) for r in (1, 0)]
    joined = [members.joined(p) for p in procs]
    assert [j["rank"] for j in joined] == ["1", "0"]
    assert {j["hosts"] for j in joined} == {"host0,host1"}
    for p in procs:
        assert members.finish(p)[0] == 0


def test_a_worker_failure_is_every_machines_verdict(members, etcd):
    failing = members.start(etcd.endpoints, "job-c", 2, "bad", outcome="fail")
    waiting = members.start(etcd.endpoints, "job-c", 2, "good", outcome="wait")
    members.joined(failing), members.joined(waiting)
    for proc in (failing, waiting):
        code, out, err = members.finish(proc)
        assert code == 7, err
        assert "(bad), rank " in out and "exited with code 7" in out
    assert "stopped by machine" in out  # the waiting one was told to stop its workers


def test_a_killed_launcher_is_lost_when_its_lease_expires(members, etcd):
    procs = [members.start(etcd.endpoints, "job-d", 3, f"host{i}", outcome="wait")
             for i in range(3)]
    joined = [members.joined(p) for p in procs]
    victim = procs[2]
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(timeout=TIMEOUT)
    lost_rank = joined[2]["rank"]
    for proc in procs[:2]:
        code, out, err = members.finish(proc)
        assert code == 1, err
        assert f"stopped by machine {lost_rank} (host2): launcher lost: its etcd lease expired" in out
        assert f"verdict machine {lost_rank} (host2): launcher lost" in out


def test_a_launcher_too_many_is_refused(members, etcd):
    first = [members.start(etcd.endpoints, "job-e", 2, f"host{i}", outcome="wait") for i in range(2)]
    for p in first:
        members.joined(p)
    extra = members.start(etcd.endpoints, "job-e", 2, "extra")
    code, out, err = members.finish(extra)
    assert code == 2
    assert "run id 'job-e' is already running through etcd" in err
    assert "give this job its own --rdzv_id" in err


# Killing a member may kill the leader: until a new one is elected, which took over 3 s on a
# loaded CI machine, nobody can renew a lease. A launcher gives up after --heartbeat_timeout
# without a renewal, so the jobs that lose a member get a lease that outlives an election.
ELECTION_PROOF_HEARTBEAT = "10"


def test_the_job_survives_the_loss_of_one_etcd_member_of_three(members, etcd3):
    procs = [members.start(etcd3.endpoints, "job-f", 2, f"host{i}", outcome="wait",
                           heartbeat=ELECTION_PROOF_HEARTBEAT) for i in range(2)]
    for p in procs:
        members.joined(p)
    etcd3.kill(0)
    # More than a lease lifetime passes: nobody is lost, the job goes on.
    time.sleep(int(ELECTION_PROOF_HEARTBEAT) + 5)
    assert all(p.poll() is None for p in procs), [members.finish(p) for p in procs]
    # A third launcher of another job joins through what is left of the cluster.
    late = [members.start(etcd3.endpoints, "job-g", 2, f"late{i}", outcome="fail" if i else "ok")
            for i in range(2)]
    for p in late:
        members.joined(p)
        code, out, err = members.finish(p)
        assert code == 7, err
        assert "(late1), rank" in out


def test_etcd_unreachable_at_start_is_a_clear_error(members, etcd):
    endpoint = etcd.endpoints
    etcd.stop()
    proc = members.start(endpoint, "job-h", 2, "host0")
    code, out, err = members.finish(proc)
    assert code == 1
    assert f"cannot join through etcd: cannot reach etcd at {endpoint}" in err
    assert f"check that etcd runs at {endpoint} (--rdzv_endpoint, or --main_process_ip/--main_process_port)" in err


# --- whole jobs: `xlaunch launch --rdzv_backend etcd` ------------------------------------

ALLREDUCE = r'''
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t
out = os.environ["OUT_DIR"]
with open(os.path.join(out, f"sum_{rank}"), "w") as f:
    f.write(f"{world} {t.item()} {os.environ['GROUP_RANK']} {os.environ['MASTER_PORT']} "
            f"{os.environ['TORCHELASTIC_RUN_ID']} {os.getpid()} "
            f"{os.environ['TORCHELASTIC_RESTART_COUNT']}")
dist.destroy_process_group()
if os.environ.get("MODE") == "hang" or (os.environ.get("MODE") == "hang_round0" and
                                         os.environ["TORCHELASTIC_RESTART_COUNT"] == "0"):
    time.sleep(600)
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
if os.environ.get("MODE") == "fail_once" and rank == 3 and attempt == "0":
    sys.exit(5)
'''


class Launchers:
    """`xlaunch launch --rdzv_backend etcd` processes, each one machine; killed at the end."""

    def __init__(self, xlaunch_bin, python, tmp_path):
        self.bin = xlaunch_bin
        self.python = python
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.program = tmp_path / "allreduce.py"
        self.program.write_text(ALLREDUCE)
        self.procs = []

    def start(self, endpoint, run_id, machines=2, extra=(), env=None, backend="etcd",
              heartbeat=HEARTBEAT):
        host, port = endpoint.split(",")[0].rsplit(":", 1)
        # torchrun's spelling for etcd-v2 (--rdzv_endpoint), accelerate's for etcd.
        where = (["--rdzv_endpoint", f"{host}:{port}"] if backend == "etcd-v2" else
                 ["--main_process_ip", host, "--main_process_port", port])
        cmd = [self.bin, "launch", "--python", self.python, "--num_machines", str(machines),
               "--nproc_per_node", "2", "--rdzv_backend", backend, *where, "--rdzv_id", run_id,
               "--heartbeat_timeout", heartbeat, *extra, str(self.program)]
        proc = subprocess.Popen(cmd, env=dict(os.environ, OUT_DIR=str(self.out), **(env or {})),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def finish(self, proc):
        out, err = proc.communicate(timeout=TIMEOUT)
        return proc.returncode, out, err

    def sums(self):
        return {int(f.name.split("_")[1]): f.read_text().split() for f in self.out.glob("sum_*")}

    def stop(self):
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the launcher's session, workers too
            except ProcessLookupError:
                pass
            proc.communicate()
        for s in self.sums().values():  # workers of a SIGKILLed launcher (MODE=hang)
            try:
                os.kill(int(s[5]), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def launchers(xlaunch_bin, torch_python, tmp_path):
    l = Launchers(xlaunch_bin, torch_python, tmp_path)
    yield l
    l.stop()


@pytest.mark.parametrize("backend", ["etcd", "etcd-v2"])
def test_launch_two_machines_through_etcd(launchers, etcd, backend):
    procs = [launchers.start(etcd.endpoints, "job-x", backend=backend) for _ in range(2)]
    outs = [launchers.finish(p) for p in procs]
    for code, out, err in outs:
        assert code == 0, err
        assert f"joining the 2-machine job through etcd at {etcd.endpoints}" in err + out
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    # One world of 4, one store (rank 0's), the run id everywhere, both machines' ranks.
    assert {s[0] for s in sums.values()} == {"4"}
    assert {s[1] for s in sums.values()} == {"10.0"}
    assert {s[2] for s in sums.values()} == {"0", "1"}
    assert len({s[3] for s in sums.values()}) == 1
    assert {s[4] for s in sums.values()} == {"job-x"}


def test_launch_restarts_every_machine_together_through_etcd(launchers, etcd):
    procs = [launchers.start(etcd.endpoints, "job-r", extra=["--max_restarts", "1"],
                             env={"MODE": "fail_once"}) for _ in range(2)]
    for proc in procs:
        code, out, err = launchers.finish(proc)
        assert code == 0, err
        assert "exited with code 5" in err
        assert "restarting every worker on every machine (restart 1 of 1)" in err
    # The second round's all-reduce ran on all four ranks (each file is its last round's).
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    assert {s[6] for s in sums.values()} == {"1"}


def test_launch_machine_lost_when_its_launcher_is_killed(launchers, etcd):
    procs = [launchers.start(etcd.endpoints, "job-y", env={"MODE": "hang"}) for _ in range(2)]
    # Both machines' workers ran their all-reduce: the job is formed and running.
    deadline = time.monotonic() + TIMEOUT
    while len(launchers.sums()) < 4 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    sums = launchers.sums()
    assert len(sums) == 4
    # SIGKILL the launcher of machine 1 only (its workers are left to the containment tests).
    victim = procs[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=TIMEOUT)
    survivor = procs[1]
    code, out, err = launchers.finish(survivor)
    assert code == 1, err
    assert "launcher lost: its etcd lease expired (--heartbeat_timeout 3s)" in err


def test_launch_with_etcd_unreachable_is_a_clear_bounded_error(launchers, etcd):
    endpoint = etcd.endpoints
    etcd.stop()
    code, out, err = launchers.finish(launchers.start(endpoint, "job-z"))
    assert code == 1
    assert f"cannot reach etcd at {endpoint}" in err
    assert f"check that etcd runs at {endpoint} (--rdzv_endpoint, or --main_process_ip/--main_process_port)" in err


def test_launch_goes_on_when_one_etcd_member_of_three_is_lost(launchers, etcd3):
    # The launchers talk to member 0; member 1 dies while the job runs (maybe the leader).
    procs = [launchers.start(etcd3.member_endpoint(0), "job-w", env={"MODE": "hang"},
                             heartbeat=ELECTION_PROOF_HEARTBEAT) for _ in range(2)]
    deadline = time.monotonic() + TIMEOUT
    while len(launchers.sums()) < 4 and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    assert len(launchers.sums()) == 4
    etcd3.kill(1)
    time.sleep(int(ELECTION_PROOF_HEARTBEAT) + 5)  # past a lease lifetime: it was renewed
    assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]


ELASTIC = ["--max_restarts", "1", "--rdzv_conf", "last_call_timeout=1"]


def wait_for_sums(launchers, procs, want):
    """Waits until the workers' records satisfy want(sums), the launchers still running."""
    deadline = time.monotonic() + TIMEOUT
    while not want(launchers.sums()) and time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), [launchers.finish(p) for p in procs]
        time.sleep(0.1)
    sums = launchers.sums()
    assert want(sums), sums
    return sums


def wait_for_members(driver, endpoints, run_id, count):
    """Waits until `count` launchers are registered (values span lines: keys are counted)."""
    prefix = f"/xlaunch/{run_id}/members/"

    def registered():
        listed = ok(driver, endpoints, "get-prefix", prefix)
        return sum(line.startswith(prefix) for line in listed.splitlines())

    deadline = time.monotonic() + TIMEOUT
    while registered() < count and time.monotonic() < deadline:
        time.sleep(0.1)
    assert registered() == count


def test_launch_elastic_job_grows_when_a_machine_joins(launchers, etcd, driver):
    # --nnodes 1:2: the first launcher starts alone once the last call (1 s) is over.
    first = launchers.start(etcd.endpoints, "job-grow", machines="1:2", extra=ELASTIC,
                            env={"MODE": "hang_round0"})
    sums = wait_for_sums(launchers, [first], lambda s: sorted(s) == [0, 1])
    assert {s[0] for s in sums.values()} == {"2"}  # world size: one machine of 2 workers
    assert {s[6] for s in sums.values()} == {"0"}
    # A second machine joins the running job: every worker stops, round 1 has both.
    second = launchers.start(etcd.endpoints, "job-grow", machines="1:2", extra=ELASTIC,
                             env={"MODE": "hang_round0"})
    outs = [launchers.finish(p) for p in (first, second)]
    for code, out, err in outs:
        assert code == 0, err
        assert "round 1: machine" in err and "of 2, world size 4" in err
    assert "joined the job" in outs[0][1] + outs[0][2]
    sums = launchers.sums()
    assert sorted(sums) == [0, 1, 2, 3]
    assert {s[0] for s in sums.values()} == {"4"}
    assert {s[1] for s in sums.values()} == {"10.0"}
    assert {s[6] for s in sums.values()} == {"1"}  # TORCHELASTIC_RESTART_COUNT
    assert {s[4] for s in sums.values()} == {"job-grow"}
    # Each round's layout was decided in etcd (values span lines: only the keys are read).
    listed = ok(driver, etcd.endpoints, "get-prefix", "/xlaunch/job-grow/round/")
    assert "/xlaunch/job-grow/round/0/layout=" in listed
    assert "/xlaunch/job-grow/round/1/layout=" in listed


@pytest.mark.parametrize("victim", [0, 1])
def test_launch_elastic_job_shrinks_when_a_launcher_is_killed(launchers, etcd, driver, victim):
    # The first to register is machine 0 (the workers' store); the second arrival makes MAX.
    procs = [launchers.start(etcd.endpoints, "job-shrink", machines="1:2", extra=ELASTIC,
                             env={"MODE": "hang_round0"})]
    wait_for_members(driver, etcd.endpoints, "job-shrink", 1)
    procs.append(launchers.start(etcd.endpoints, "job-shrink", machines="1:2", extra=ELASTIC,
                                 env={"MODE": "hang_round0"}))
    sums = wait_for_sums(launchers, procs, lambda s: len(s) == 4)
    assert {s[0] for s in sums.values()} == {"4"}
    round0_port = sums[0][3]
    # SIGKILL one launcher: its lease expires, the other re-forms the job alone (round 1);
    # when machine 0 is the one lost, the survivor becomes machine 0 and hosts a new store.
    os.kill(procs[victim].pid, signal.SIGKILL)
    procs[victim].wait(timeout=TIMEOUT)
    code, out, err = launchers.finish(procs[1 - victim])
    assert code == 0, err
    assert "launcher lost" in err and "re-forming the job without it" in err
    assert "round 1: machine 0 of 1, world size 2" in err
    sums = launchers.sums()
    assert [sums[r][0] for r in (0, 1)] == ["2", "2"]
    assert [sums[r][6] for r in (0, 1)] == ["1", "1"]
    if victim == 0:
        assert sums[0][3] != round0_port  # the survivor's own store


def test_launch_elastic_job_below_min_fails_naming_the_lost_machine(launchers, etcd, driver):
    extra = ["--max_restarts", "1", "--rdzv_timeout", "10", "--rdzv_conf", "last_call_timeout=1"]
    procs = [launchers.start(etcd.endpoints, "job-min", machines="2:3", extra=extra,
                             env={"MODE": "hang_round0"})]
    wait_for_members(driver, etcd.endpoints, "job-min", 1)
    procs.append(launchers.start(etcd.endpoints, "job-min", machines="2:3", extra=extra,
                                 env={"MODE": "hang_round0"}))
    wait_for_sums(launchers, procs, lambda s: len(s) == 4)
    os.kill(procs[1].pid, signal.SIGKILL)
    procs[1].wait(timeout=TIMEOUT)
    code, out, err = launchers.finish(procs[0])
    assert code == 1, err
    assert "1 machine left, fewer than the minimum 2" in err
    assert "none joined within --rdzv_timeout 10s; lost: " in err
    assert f"(pid {procs[1].pid}); present: " in err  # the killed launcher is named


def test_a_run_id_is_reused_once_its_job_has_ended(members, etcd):
    for attempt in range(2):
        procs = [members.start(etcd.endpoints, "job-again", 2, f"host{i}") for i in range(2)]
        joined = [members.joined(p) for p in procs]
        assert sorted(j["rank"] for j in joined) == ["0", "1"], attempt
        for p in procs:
            code, out, err = members.finish(p)
            assert code == 0, (attempt, err)
            assert "verdict ok" in out
