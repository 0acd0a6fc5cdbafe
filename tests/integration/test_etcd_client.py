"""The etcd client against a real etcd (Debian's etcd-server on loopback), through
xlaunch-etcd-driver (the client from the command line): claims, leases that expire when their
holder is SIGKILLed, watches, a member of three lost, etcd unreachable.

The join backend on top of it: test_etcd_join.py; whole `xlaunch launch` jobs joining through
etcd: test_etcd_launch.py and test_etcd_elastic.py.
"""
import signal
import socket
import subprocess
import time

import pytest

from etcd_fixtures import etcd, etcd3, etcd_binary  # noqa: F401 (fixtures)
from etcd_helpers import TIMEOUT, driver, ok, run, values  # noqa: F401 (driver: a fixture)


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


def test_client_watch_line_that_never_ends_is_a_bounded_error(driver):
    # A broken proxy or hostile server streams one watch line without end: the client grew
    # its memory (and rescanned the whole line on every read) until its deadline. Now it
    # drops such a stream past 16 MiB and tries again, as after any broken stream.
    import threading
    sent = []  # bytes sent on each connection before the client closed it

    def serve(listener):
        for _ in range(3):
            conn, _ = listener.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                chunk = b"x" * 65536
                frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
                total = 0
                try:
                    while True:
                        conn.sendall(frame)
                        total += len(chunk)
                except OSError:
                    sent.append(total)  # the client closed it
        listener.close()

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    thread = threading.Thread(target=serve, args=(listener,), daemon=True)
    thread.start()
    done = run(driver, f"127.0.0.1:{port}", "watch", "w/", "1", "8000")
    thread.join(timeout=TIMEOUT)
    assert len(sent) == 3, (sent, done.stderr)
    assert all(n < (32 << 20) for n in sent), sent
    assert done.returncode in (0, 1), done.stderr  # no event before the deadline, or an error
