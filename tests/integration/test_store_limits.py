"""`xlaunch store serve` limits: each numeric limit flag's allowed range, and the global caps on
buffered request bytes and on stored bytes on a live store."""
import select
import socket
import struct
import subprocess

import pytest

from store_helpers import serve


def _closed_by_server(s):
    """True once the server has closed `s` (EOF or reset); blocks up to the socket timeout."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def _wait_until_closed(socks, count):
    """Blocks until the server has closed `count` of `socks` (which ones may vary)."""
    still_open = list(socks)
    while len(socks) - len(still_open) < count:
        ready, _, _ = select.select(still_open, [], [], 30)
        assert ready, f"{len(socks) - len(still_open)} of {len(socks)} closed, expected {count}"
        for s in ready:
            if _closed_by_server(s):
                still_open.remove(s)


def _half_set(port, key, value_bytes, sent_bytes):
    """A connection that sends a 1.13 SET of `value_bytes` but stops `sent_bytes` into the value."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    head = b"\x00" + struct.pack("<Q", len(key)) + key + struct.pack("<Q", value_bytes)
    try:
        s.sendall(head + b"v" * sent_bytes)
    except (BrokenPipeError, ConnectionResetError):
        pass  # already closed for the cap: what the test looks for
    return s


def _add(port, key, delta):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"\x03" + struct.pack("<Q", len(key)) + key + struct.pack("<q", delta))
        reply = b""
        while len(reply) < 8:
            chunk = s.recv(8 - len(reply))
            assert chunk, "the store closed a well-behaved connection"
            reply += chunk
        return struct.unpack("<q", reply)[0]


def test_buffered_bytes_cap_closes_connections_and_logs_once(xlaunch_bin):
    cap = 64 * 1024
    with serve(xlaunch_bin, "--max_buffered_bytes", str(cap)) as (proc, port):
        # Any two of these together are past the cap, so at most one of them stays open.
        halves = [_half_set(port, b"/half%d" % i, 60000, 40000) for i in range(5)]
        _wait_until_closed(halves, len(halves) - 1)
        assert _add(port, b"/still_served", 5) == 5
        assert proc.poll() is None, "the store died"
        for s in halves:
            s.close()
    log = proc.stderr.read()
    lines = [line for line in log.splitlines() if "max_buffered_bytes" in line]
    assert len(lines) == 1, log
    assert "closing connection" in lines[0] and f"({cap})" in lines[0], lines[0]


def test_stored_bytes_cap_closes_the_connection_that_would_pass_it(xlaunch_bin):
    with serve(xlaunch_bin, "--max_stored_bytes", "4096") as (proc, port):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        for i in range(4):  # 1.13 SETs (no reply) of about 1.1 KB each, with their keys
            key = b"/big%d" % i
            s.sendall(b"\x00" + struct.pack("<Q", len(key)) + key + struct.pack("<Q", 1000) +
                      b"v" * 1000)
        assert _closed_by_server(s), "the store kept a connection past max_stored_bytes"
        s.close()
        assert _add(port, b"/still_served", 5) == 5  # 3 SETs + this fit
        assert proc.poll() is None, "the store died"
    log = proc.stderr.read()
    lines = [line for line in log.splitlines() if "max_stored_bytes" in line]
    assert len(lines) == 1, log
    assert 'SET of key "/big3"' in lines[0] and "limit of 4096" in lines[0], lines[0]


TIB = 2**40
INT_MAX = 2**31 - 1
LIMIT_FLAGS = {  # flag: its largest allowed value
    "--max_key_bytes": TIB,
    "--max_value_bytes": TIB,
    "--max_request_bytes": TIB,
    "--max_buffered_bytes": TIB,
    "--max_stored_bytes": TIB,
    "--max_keys_per_request": INT_MAX,
    "--max_connections": INT_MAX,
}


def _serve_rejected(xlaunch_bin, *args):
    """Runs `xlaunch store serve ARGS`, which must refuse to start; returns its stderr."""
    proc = subprocess.Popen([xlaunch_bin, "store", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # A store that accepted the flags prints its address and serves: stop it, and fail.
    first_line = proc.stdout.readline()
    if first_line:
        proc.kill()
        proc.wait()
        pytest.fail(f"store serve {' '.join(args)} was accepted: {first_line.strip()}")
    stderr = proc.stderr.read()
    assert proc.wait() == 2, stderr
    return stderr


@pytest.mark.parametrize("flag", sorted(LIMIT_FLAGS))
@pytest.mark.parametrize("value", ["0", "-1", "above", "99999999999999999999", "1.5", "many"])
def test_limit_flag_out_of_range_is_a_usage_error(xlaunch_bin, flag, value):
    top = LIMIT_FLAGS[flag]
    if value == "above":
        value = str(top + 1)
    stderr = _serve_rejected(xlaunch_bin, flag, value)
    assert f"xlaunch: error: {flag} must be between 1 and {top} (got {value})" in stderr, stderr
    assert "hint: " in stderr and "omit" in stderr, stderr


@pytest.mark.parametrize("flag", sorted(LIMIT_FLAGS))
def test_limit_flag_range_ends_are_accepted(xlaunch_bin, flag):
    for value in ("1", str(LIMIT_FLAGS[flag])):
        with serve(xlaunch_bin, flag, value) as (proc, port):
            assert proc.poll() is None


@pytest.mark.parametrize("value", ["-1", "65536", "99999999999999999999", "1.5", "port"])
def test_a_port_that_is_no_tcp_port_is_named_as_typed(xlaunch_bin, value):
    stderr = _serve_rejected(xlaunch_bin, "--port", value)
    assert f"xlaunch: error: --port {value}: not a TCP port" in stderr, stderr
