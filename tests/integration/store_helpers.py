"""Helpers for the store tests: run `xlaunch store serve` and torch clients against it."""
import contextlib
import json
import re
import signal
import socket
import struct
import subprocess
import textwrap

LISTENING = re.compile(r"xlaunch store: listening on (\S+):(\d+)$")


@contextlib.contextmanager
def serve(xlaunch_bin, *args):
    """Starts `xlaunch store serve --port 0 ARGS`, yields (process, port); stops it with
    SIGTERM afterwards and checks it exited 0."""
    proc = subprocess.Popen([xlaunch_bin, "store", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        match = LISTENING.match(line)
        assert match, f"unexpected first line {line!r}; stderr: {proc.stderr.read()[-2000:]}"
        proc.port = int(match.group(2))
        yield proc, proc.port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("xlaunch store serve did not stop on SIGTERM")
    assert proc.returncode == 0, f"store exited {proc.returncode}: {proc.stderr.read()[-2000:]}"


def torch_script(body):
    """A script that connects a 1.13 TCPStore client to 127.0.0.1:argv[1] as `store`."""
    return textwrap.dedent("""\
        import datetime, json, sys
        import torch.distributed as dist
        port = int(sys.argv[1])
        store = dist.TCPStore("127.0.0.1", port, 2, False,
                              timeout=datetime.timedelta(seconds=60))
        out = {}
        """) + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"


def run_torch(python, port, body, timeout=120):
    """Runs torch_script(body) and returns the JSON it printed as `out`."""
    proc = subprocess.run([python, "-c", torch_script(body), str(port)], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"torch client failed ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


class RawStore:
    """The launchers' keys as they are on the wire (torch's client would prefix them with
    '/'), in PyTorch 1.13's numbering: SET 0, GET 2, ADD 3."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    @staticmethod
    def _bytes(data):
        data = data.encode() if isinstance(data, str) else data
        return struct.pack("<Q", len(data)) + data

    def _recv(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, "the store closed the connection"
            data += chunk
        return data

    def set(self, key, value):
        self.sock.sendall(b"\x00" + self._bytes(key) + self._bytes(value))
        self.get(key)  # SET has no answer: wait until it is done

    def get(self, key):
        self.sock.sendall(b"\x02" + self._bytes(key))
        (n,) = struct.unpack("<Q", self._recv(8))
        return self._recv(n).decode()

    def add(self, key, delta):
        self.sock.sendall(b"\x03" + self._bytes(key) + struct.pack("<q", delta))
        return struct.unpack("<q", self._recv(8))[0]
