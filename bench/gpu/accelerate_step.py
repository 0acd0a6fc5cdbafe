"""A few steps through accelerate's Accelerator: prints its state and a digest of the weights,
so `accelerate launch` and `xlaunch launch` with the same YAML can be compared."""
import hashlib

import torch
from accelerate import Accelerator

accelerator = Accelerator()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model, opt = accelerator.prepare(model, opt)
data = torch.Generator(device=accelerator.device).manual_seed(100 + accelerator.process_index)
for step in range(5):
    x = torch.randn(512, 256, device=accelerator.device, generator=data)
    with accelerator.autocast():
        out = model(x)
    loss = out.float().pow(2).mean()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
flat = torch.cat([p.detach().flatten() for p in accelerator.unwrap_model(model).parameters()]).float().cpu()
s = accelerator.state
if accelerator.is_main_process:
    print(f"accelerate_step: distributed_type {s.distributed_type} mixed_precision {s.mixed_precision} "
          f"processes {s.num_processes} device {accelerator.device} out.dtype {out.dtype} "
          f"weights {hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]}", flush=True)
accelerator.end_training()
