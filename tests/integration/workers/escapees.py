"""A worker whose descendants try to outlive it (the orphan containment tests).

It starts these, each recording its pid in $OUT_DIR/<kind>_<rank>_<attempt> and sleeping:
  setsid        a child that calls setsid() (a session and process group of its own)
  setsid_tree   a child of that one, in its session: adopted by the launcher only once its
                parent is killed
  daemon        a double-forked daemon (fork, setsid, fork; the middle process exits)
  group         a child that stays in the worker's process group
  group_setsid  a setsid() child of that same-group child
and records its own pid as worker_<rank>_<attempt>. Pids come from /proc/self: under the
pid-namespace mechanism os.getpid() is the namespace's number, /proc (and the test) the host's.
The descendants leave the worker's output pipes (they sleep on /dev/null).

MODE: "wait" (default): the worker sleeps. "exit": it exits 0 once every pid is recorded.
"restart": attempt 0 exits 3 once every rank recorded every pid; attempt 1 records up_<rank>_1 and
waits for $OUT_DIR/release, then exits 0.
"""
import os
import time

out = os.environ["OUT_DIR"]
rank = os.environ["RANK"]
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
mode = os.environ.get("MODE", "wait")
KINDS = ["setsid", "setsid_tree", "daemon", "group", "group_setsid"]


def record(kind):
    path = os.path.join(out, f"{kind}_{rank}_{attempt}")
    with open(path + ".tmp", "w") as f:
        f.write(os.readlink("/proc/self"))
    os.rename(path + ".tmp", path)


def sleep_long():
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(600)


def fork(body):
    pid = os.fork()
    if pid == 0:
        try:
            body()
        finally:
            os._exit(0)
    return pid


def setsid_child():
    os.setsid()
    fork(lambda: (record("setsid_tree"), sleep_long()))
    record("setsid")
    sleep_long()


def daemon():
    os.setsid()
    fork(lambda: (record("daemon"), sleep_long()))


def group_setsid_child():
    os.setsid()
    record("group_setsid")
    sleep_long()


def group_child():
    fork(group_setsid_child)
    record("group")
    sleep_long()


def wait_for(paths, timeout=60):
    deadline = time.monotonic() + timeout
    while not all(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {paths}")
        time.sleep(0.02)


if mode == "restart" and attempt != "0":
    record("up")
    wait_for([os.path.join(out, "release")], timeout=120)
    raise SystemExit(0)

record("worker")
fork(setsid_child)
os.waitpid(fork(daemon), 0)  # the middle process exits at once
fork(group_child)
wait_for([os.path.join(out, f"{kind}_{rank}_{attempt}") for kind in KINDS])
if mode == "exit":
    raise SystemExit(0)
if mode == "restart":
    # Fail only once every rank has recorded everything: the failure stops the others.
    ranks = range(int(os.environ["LOCAL_WORLD_SIZE"]))
    wait_for([os.path.join(out, f"{kind}_{r}_{attempt}") for kind in KINDS for r in ranks])
    raise SystemExit(3)
time.sleep(600)
