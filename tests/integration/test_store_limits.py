"""`xlaunch store serve` limits: the global cap on buffered request bytes on a live store."""
import select
import socket
import struct

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
