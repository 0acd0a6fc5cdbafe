"""The floor of bench/preload_bench.py: one `import torch`, then N os.fork()ed ranks that run
the benchmark's worker program as __main__ (env:// rendezvous: rank 0 hosts the TCPStore);
this process waits for them and exits with the first failing rank's code. A rank ends as
`python worker.py` would (sys.exit through this module, so the interpreter's own finalization
runs), not with os._exit: the launchers' ranks pay that cost too.

Usage: /usr/bin/python3 preload_bench_floor.py WORKER N OUTDIR
"""
import os
import runpy
import socket
import sys
import traceback

import torch  # noqa: F401 - the one import every rank shares, as --preload torch does


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(worker, rank, outdir):
    """Runs the worker in a forked rank; returns its exit code."""
    try:
        os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank))
        sys.argv = [worker, outdir]
        runpy.run_path(worker, run_name="__main__")
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: B902 - any failure is this rank's exit code 1
        traceback.print_exc()
        return 1


def main():
    worker, n, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                      WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n))
    pids = []
    for rank in range(n):
        pid = os.fork()
        if pid == 0:
            return rank_main(worker, rank, outdir)
        pids.append(pid)
    status = 0
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        status = status or os.waitstatus_to_exitcode(st)
    return status


if __name__ == "__main__":
    sys.exit(main())
