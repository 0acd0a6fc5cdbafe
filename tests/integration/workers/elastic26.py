"""A torch 2.6 rank of an elastic job: joins the round's gloo group through xlaunch's agent
store, all-reduces (rank + 1), records what it saw, and, while the job is smaller than
TARGET_WORLD machines' worth of ranks, waits to be stopped for the next round."""
import json
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
info = {k: os.environ.get(k) for k in ("GROUP_RANK", "TORCHELASTIC_RESTART_COUNT",
                                       "TORCHELASTIC_RUN_ID")}
info.update(RANK=str(rank), pid=os.getpid(), world=world, sum=total.item(), torch=torch.__version__)
path = os.path.join(os.environ["OUT_DIR"],
                    f"rank_{rank}_attempt_{info['TORCHELASTIC_RESTART_COUNT']}.json")
with open(path + ".tmp", "w") as f:
    json.dump(info, f)
os.rename(path + ".tmp", path)
dist.destroy_process_group()
if world < int(os.environ["TARGET_WORLD"]):
    time.sleep(600)
