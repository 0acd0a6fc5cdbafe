"""Unmodified-style DDP (gloo, env://) for a few steps; each rank prints a digest of every
parameter at the end, which the test compares across ranks, plus its torch version."""
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
initial = hashlib.sha1(b"".join(p.detach().numpy().tobytes()
                                for p in model.parameters())).hexdigest()
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
torch.manual_seed(100 + rank)  # different data on every rank
for _ in range(5):
    opt.zero_grad()
    ddp(torch.randn(16, 8)).pow(2).mean().backward()
    opt.step()
digest = hashlib.sha1(b"".join(p.detach().numpy().tobytes()
                               for p in model.parameters())).hexdigest()
dist.barrier()
print(f"params rank {rank}/{world} torch {torch.__version__} group "
      f"{os.environ.get('GROUP_RANK')} initial {initial} final {digest}", flush=True)
dist.destroy_process_group()
