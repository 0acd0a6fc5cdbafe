"""Torch's own TCPStore server (the control for the differential store tests and the
benchmark): listens on 127.0.0.1 at a free port, prints the port, serves until stdin closes.
Debian 13's torch 2.6 has no libuv, so this is torch's non-libuv server."""
import datetime
import sys

import torch.distributed as dist

store = dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=300),
                      wait_for_workers=False, use_libuv=False)
print(store.port, flush=True)
sys.stdin.read()
