"""A few DDP training steps on NCCL with fixed seeds; rank 0 prints a digest of the weights.

Run the same way under `xlaunch launch` and under torchrun: equal digests mean the two
launchers gave the workers the same job (scripts/gpu-truth compares them).
"""
import hashlib
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).cuda()
ddp = DDP(model, device_ids=[local_rank])
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
data = torch.Generator(device="cuda").manual_seed(100 + rank)
for step in range(5):
    x = torch.randn(512, 256, device="cuda", generator=data)
    loss = ddp(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()
digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
env = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "TORCHELASTIC_RUN_ID",
                                  "XLAUNCH_PRELOAD_TEMPLATE")}
if rank == 0:
    print(f"ddp_step: world {world} on {torch.cuda.get_device_name()} loss {loss.item():.6f} "
          f"weights {digest} env {env}", flush=True)
dist.destroy_process_group()
