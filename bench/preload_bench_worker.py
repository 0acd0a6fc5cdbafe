"""The rank program of bench/preload_bench.py, the same under every launcher: import torch,
join the gloo group from the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), one
all_reduce of one element, then write "CLOCK_REALTIME-ns pid sum" to OUTDIR/end.RANK.

Usage: python worker.py OUTDIR
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    outdir, rank = sys.argv[1], os.environ["RANK"]
    # The pid first, so that the benchmark can find and kill a rank left behind.
    with open(os.path.join(outdir, f"pid.{rank}"), "w") as f:
        f.write(str(os.getpid()))
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    end = time.clock_gettime_ns(time.CLOCK_REALTIME)
    with open(os.path.join(outdir, f"end.{rank}"), "w") as f:
        f.write(f"{end} {os.getpid()} {int(t.item())}\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
