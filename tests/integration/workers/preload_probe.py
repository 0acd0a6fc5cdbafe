"""Says what the rank saw before it imported anything itself, then does one gloo all-reduce
and writes it all as JSON to $OUT/seen_<restart>_<rank> (test_preload.py, test_torch26_launch.py).
SPAWN_CHECK=1: also runs torch in a spawned interpreter (multiprocessing's spawn)."""
import json, os, sys

seen = {
    "torch_before_import": "torch" in sys.modules,
    "name": __name__, "file": __file__, "argv": sys.argv, "path0": sys.path[0],
    "rank": os.environ.get("RANK"), "local_rank": os.environ.get("LOCAL_RANK"),
    "ppid": os.getppid(), "pid": os.getpid(), "pgid": os.getpgid(0),
    "template": os.environ.get("XLAUNCH_PRELOAD_TEMPLATE"),
    "restart": os.environ.get("TORCHELASTIC_RESTART_COUNT"),
    "stdout_unbuffered": sys.stdout.write_through,
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "no_site": sys.flags.no_site,
}


def main():
    import torch
    import torch.distributed as dist

    if os.environ.get("SPAWN_CHECK"):
        # A spawned interpreter (DataLoader workers, mp.spawn) must find torch as the rank did.
        import torch.multiprocessing as mp

        with mp.get_context("spawn").Pool(1) as pool:
            seen["spawned_sqrt"] = pool.apply(torch.sqrt, (torch.tensor(16.0),)).item()
    dist.init_process_group("gloo")
    total = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(total)
    seen["sum"] = total.item()
    dist.destroy_process_group()
    out = os.path.join(os.environ["OUT"], "seen_%s_%s" % (seen["restart"], seen["rank"]))
    with open(out, "w") as f:
        json.dump(seen, f)
    if os.environ.get("FAIL_FIRST") and seen["restart"] == "0" and seen["rank"] == "1":
        sys.exit(7)


if __name__ == "__main__":
    main()
