"""The user-side workaround docs/rendezvous.md gives for PyTorch builds without libuv, with
no start-up shim: make the agent-store client yourself with use_libuv=False and hand it to
init_process_group."""
import datetime
import os

import torch
import torch.distributed as dist

store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                      int(os.environ["WORLD_SIZE"]), False, use_libuv=False,
                      timeout=datetime.timedelta(seconds=300))
dist.init_process_group("gloo", store=store, rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"explicit store ok rank {dist.get_rank()} sum {t.item():.0f} torch {torch.__version__}",
      flush=True)
dist.destroy_process_group()
