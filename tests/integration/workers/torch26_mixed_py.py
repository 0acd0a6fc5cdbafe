"""Rank 0 of the mixed job: PyTorch 2.6's TCPStore joining the launcher's store as torch's
agent-store client does (default use_libuv: the test's shim), meeting C++ ranks there."""
import datetime
import json
import os
import time

import torch
import torch.distributed as dist

world = int(os.environ["WORLD_SIZE"])
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False,
                      timeout=datetime.timedelta(seconds=120))
store.set("py/hello", f"torch {torch.__version__}")
store.add("count", 1)
others = [f"cpp/{r}" for r in range(1, world)]
store.wait(others)
from_cpp = {k: store.get(k).decode("latin-1") for k in others}
deadline = time.monotonic() + 120
while store.add("count", 0) < world and time.monotonic() < deadline:
    time.sleep(0.05)
count = store.add("count", 0)
store.set("py/done", "1")
print("MIXED " + json.dumps({"rank": 0, "from_cpp": from_cpp, "count": count}), flush=True)
