"""A worker for the cluster tests. Modes (argv[1]):
allreduce: a gloo all-reduce of rank+1; prints one line of what it saw, as JSON.
fail RANK CODE: the all-reduce, then rank RANK exits with CODE (the others 0).
hang DIR: records its pid and host in DIR, then sleeps until killed."""
import json
import os
import pathlib
import socket
import sys
import time

mode = sys.argv[1]
if mode == "hang":
    out = pathlib.Path(sys.argv[2])
    rank = os.environ["RANK"]
    tmp = out / f".{rank}.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "ppid": os.getppid(),
                               "node": os.environ.get("SLURMD_NODENAME", "")}))
    tmp.rename(out / f"worker-{rank}.json")
    while True:
        time.sleep(60)

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
seen = {"rank": dist.get_rank(), "world": dist.get_world_size(), "sum": t.item(),
        "node": os.environ.get("SLURMD_NODENAME", socket.gethostname()),
        "run_id": os.environ.get("TORCHELASTIC_RUN_ID"),
        "master": os.environ.get("MASTER_ADDR")}
print("RESULT " + json.dumps(seen), flush=True)
dist.destroy_process_group()
if mode == "fail" and seen["rank"] == int(sys.argv[2]):
    sys.exit(int(sys.argv[3]))
