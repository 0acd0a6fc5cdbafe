"""Keeps a GPU busy with matrix products for --seconds on the ranks in --busy (all by
default); the other ranks sleep as long without touching CUDA. For xlaunch's NVML sampling:
gpu.csv, the end-of-run GPU lines, report.html's GPU lane and the idle warnings."""
import argparse
import os
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seconds", type=float, default=6)
parser.add_argument("--busy", default="all", help="comma list of ranks that compute")
args = parser.parse_args()
rank = int(os.environ.get("RANK", 0))
busy = args.busy == "all" or str(rank) in args.busy.split(",")
end = time.time() + args.seconds
products = 0
if busy:
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20):
            a @ a
        torch.cuda.synchronize(device)
        products += 20
else:
    time.sleep(args.seconds)
print(f"busy: rank {rank} {'computed ' + str(products) + ' products' if busy else 'idled'}", flush=True)
