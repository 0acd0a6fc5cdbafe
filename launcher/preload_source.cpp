// The preloading template's Python source: run with `python -u -c`, it imports the modules,
// checks that forking from it is safe, and forks a rank per request (docs/launch.md,
// "Preloading"; preload_template_posix.cpp is the launcher's side). It speaks the spawner's
// protocol (spawn_protocol.hpp): the same requests, descriptors and answers.
#include "launcher/preload_plan.hpp"

namespace xlaunch::launcher {

std::string_view preload_template_source() {
  return R"PY(# xlaunch preload template (docs/launch.md, "Preloading"): imports the modules named in its
# first argument once, then forks each Python rank of this machine when the launcher asks.
def _xlaunch_template():
    import os
    import struct
    import sys
    import types
    import fcntl
    import socket

    # The launcher's end of the conversation arrives as stdout; stdout itself becomes stderr
    # (preload.log, or the launcher's log) before anything (a .pth file, an import) prints.
    control = socket.socket(fileno=fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3))
    os.dup2(2, 1)
    # Started with -S: the site-packages folders, but not sitecustomize and usercustomize,
    # which each rank runs with its own environment, as its own interpreter would.
    for name in ("sitecustomize", "usercustomize"):
        sys.modules[name] = types.ModuleType(name)
    import site

    zero_is_cwd = sys.path[:1] == [""]  # -c's entry, which site.main() makes absolute
    # What the .pth files and the imports do to the environment, each rank redoes
    # (_xlaunch_environment): a plain interpreter runs them with the rank's.
    before = dict(os.environ)
    site.main()
    for name in ("sitecustomize", "usercustomize"):
        del sys.modules[name]
    cleared = _xlaunch_clear_no_site(sys)
    modules = [m for m in sys.argv[1].split(",") if m]
    rank_argv = sys.argv[3:]  # after "--": what each rank runs, without the interpreter

    def parse(argv):
        # The launcher's own forms: [-u] script args..., [-u] -m module args...
        unbuffered, i = False, 0
        while i < len(argv) and argv[i] == "-u":
            unbuffered, i = True, i + 1
        if i < len(argv) and argv[i] == "-m" and i + 1 < len(argv):
            return unbuffered, argv[i + 1], True, argv[i + 2 :]
        if i < len(argv) and not argv[i].startswith("-"):
            return unbuffered, argv[i], False, argv[i + 1 :]
        return None

    def path_zero(target, module):
        return os.getcwd() if module else os.path.dirname(os.path.realpath(target))

    def answer(text):
        data = text.encode("utf-8", "replace")
        control.sendall(struct.pack("=I", len(data)) + data)

    if not cleared:
        answer("this Python's sys.flags cannot be told that site ran (-S)")
        os._exit(0)
    plan = parse(rank_argv)
    if plan is None:
        answer("the program's command line is not one it can run (%r)" % rank_argv)
        os._exit(0)
    # What each rank's interpreter would see while these modules import: -c put the working
    # folder first, where `python script.py` puts the script's (PYTHONSAFEPATH: neither).
    program_folder = None  # what the template put first on sys.path, for each rank to know
    if zero_is_cwd:
        sys.path[0] = program_folder = path_zero(plan[1], plan[2])
    sys.argv = [plan[1]] + plan[3]
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except BaseException as error:  # noqa: B902 - any failure means: no template
            answer("importing %s failed: %s: %s" % (name, type(error).__name__, error))
            os._exit(0)
    # What the imports did to the environment, for each rank to redo (_xlaunch_environment).
    after = dict(os.environ)
    changed = {k: (before.get(k), v) for k, v in after.items() if before.get(k) != v}
    changed.update({k: (v, None) for k, v in before.items() if k not in after})
    why = _xlaunch_unsafe(os, sys, control.fileno())
    answer(why)
    if why:
        os._exit(0)
    request = _xlaunch_serve(os, struct, sys, socket, control, parse)
    request["changed"] = changed
    request["program_folder"] = program_folder
    return request


def _xlaunch_clear_no_site(sys):
    """sys.flags.no_site back to 0, as without -S: multiprocessing's spawn and subprocess pass
    the flags on to the interpreters they start, which must find their site folders."""
    import ctypes

    names = getattr(sys.flags, "__match_args__", ())
    index = names.index("no_site") if "no_site" in names else 6
    if sys.flags[index] != 1 or sys.flags.no_site != 1:
        return False
    set_item = ctypes.pythonapi.PyStructSequence_SetItem
    set_item.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.py_object]
    set_item.restype = None
    zero = 0
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(zero))  # the item takes a reference
    set_item(sys.flags, index, zero)
    return sys.flags.no_site == 0


def _xlaunch_settle(os):
    """(the template's threads after one throwaway fork, why it cannot fork ranks or '').

    A library may stop its idle pool in a pthread_atfork handler and start it again when next
    used: OpenBLAS does, and numpy's wheels start its pool (a thread per CPU) at import. Once
    those threads are gone, forking the ranks is as safe as from a process that never had
    them."""
    import ctypes
    import signal
    import time

    # fork(2) itself, not os.fork: the C libraries' fork handlers are what can stop a pool;
    # the Python ones a module registered would run, side effects and all, for nothing.
    # PyDLL keeps the GIL, so the child can reach os._exit without taking it.
    fork = ctypes.PyDLL(None).fork
    fork.restype = ctypes.c_int
    # A fork handler that never returns in the template ends it (SIGALRM's default action):
    # the ranks then start on their own instead of waiting for it.
    handler = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    previous = signal.alarm(5)
    template = os.getpid()
    try:
        pid = fork()
    finally:
        # The child leaves at once, even if a Python signal handler raised as fork returned:
        # nothing of the template's code may run in it.
        if os.getpid() != template:
            os._exit(0)
    signal.alarm(0)
    if handler is not None:
        signal.signal(signal.SIGALRM, handler)
    if previous:
        signal.alarm(previous)
    if pid < 0:
        return os.listdir("/proc/self/task"), ""
    # Nor one in the child: ranks forked from here would hang in it too.
    deadline = time.monotonic() + 5
    try:
        while os.waitpid(pid, os.WNOHANG)[0] == 0:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return [], "a preloaded module's fork handler did not return in 5 s"
            time.sleep(0.001)
    except ChildProcessError:  # reaped by a handler of its own: nothing more to learn
        pass
    # A joined thread leaves /proc/self/task an instant after its join returns.
    deadline = time.monotonic() + 0.2
    while True:
        threads = os.listdir("/proc/self/task")
        if len(threads) == 1 or time.monotonic() > deadline:
            return threads, ""
        time.sleep(0.002)


def _xlaunch_unsafe(os, sys, control_fd):
    """Why forking from this process would hand ranks something they cannot share; ''."""
    import signal

    # First, as the throwaway fork below needs its child's exit status.
    if signal.getsignal(signal.SIGCHLD) != signal.SIG_DFL:
        return "a preloaded module changed how SIGCHLD is handled"
    threads = os.listdir("/proc/self/task")
    # A Python thread stops at no fork handler, and one waiting for the GIL could keep the
    # throwaway fork's child in the interpreter: only threads outside Python are settled.
    if len(threads) > 1 and len(sys._current_frames()) == 1:
        threads, why = _xlaunch_settle(os)
        if why:
            return why
    if len(threads) > 1:
        return "a preloaded module started %d thread(s)" % (len(threads) - 1)
    # A process it started would outlive the job: the template is not in the run's cgroup.
    for task in threads:
        try:
            with open("/proc/self/task/%s/children" % task) as listed:
                children = listed.read().split()
        except OSError:
            continue
        if children:
            return "a preloaded module started a process (pid %s)" % children[0]
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized():
            return "a preloaded module initialised CUDA"
    except Exception:  # an old or partial torch: nothing to ask
        pass
    import ctypes

    subreaper = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(37, ctypes.byref(subreaper)) != 0 or subreaper.value != 0:  # PR_GET_CHILD_SUBREAPER
        return "a preloaded module made the template a child subreaper"
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        if fd <= 2 or fd == control_fd:
            continue
        try:
            target = os.readlink("/proc/self/fd/%d" % fd)
        except OSError:  # listdir's own, closed by now
            continue
        return "a preloaded module left descriptor %d open (%s)" % (fd, target)
    return ""


def _xlaunch_serve(os, struct, sys, socket, control, parse):
    """Forks a rank per request; returns only in a rank (a dict: what it runs)."""
    import array
    import errno

    # stdout, stderr, the start-status pipe, and the go pipe: the rank runs nothing of the
    # program before the launcher, having checked this answer, says so.
    magic, largest, fd_count = 0x58535057, 16 << 20, 4
    launcher = os.getppid()
    while True:
        try:
            header, ancillary, _, _ = control.recvmsg(
                8, socket.CMSG_SPACE(4 * 4), socket.MSG_CMSG_CLOEXEC | socket.MSG_WAITALL
            )
        except OSError:
            os._exit(0)
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if len(header) != 8:
            os._exit(0)  # the launcher is done (or gone)
        tag, size = struct.unpack("=II", header)
        if tag != magic or size < 12 or size > largest:
            os._exit(0)  # not the launcher's frame: nothing more can be trusted
        body = b""
        while len(body) < size:
            chunk = control.recv(size - len(body))
            if not chunk:
                os._exit(0)
            body += chunk
        request = _xlaunch_decode(struct, body, parse) if len(fds) == fd_count else None
        if request is None:
            for fd in fds:
                os.close(fd)
            control.sendall(struct.pack("=ii", 0, errno.EINVAL))
            continue
        request["fds"] = list(fds)
        request["launcher"] = launcher
        pid, error = _xlaunch_fork(os, struct, request, control)
        if pid == 0:
            return request
        for fd in fds:
            os.close(fd)
        control.sendall(struct.pack("=ii", pid, error))


def _xlaunch_decode(struct, body, parse):
    argc, envc, flags = struct.unpack("=III", body[:12])
    parts = body[12:].split(b"\0")
    if flags != 0 or argc < 2 or len(parts) != 1 + argc + envc + 1 or parts[-1] != b"":
        return None
    import os

    argv = [os.fsdecode(a) for a in parts[1 : 1 + argc]]
    plan = parse(argv[1:])
    if plan is None:
        return None
    env = {}
    for entry in parts[1 + argc : 1 + argc + envc]:
        key, sep, value = entry.partition(b"=")
        if sep and key:
            env[os.fsdecode(key)] = os.fsdecode(value)
    unbuffered, target, module, args = plan
    return {
        "argv": argv,
        "cgroup": os.fsdecode(parts[0]),
        "env": env,
        "unbuffered": unbuffered,
        "target": target,
        "module": module,
        "args": args,
    }


def _xlaunch_fork(os, struct, request, control):
    """(pid, 0) in the template, (0, 0) in the new rank, (0, errno) when none was made.

    The rank is forked by a short-lived middle process that exits at once, so the rank is
    adopted by the launcher (a child subreaper): it reaps, signals and supervises the rank
    as one it started itself."""
    pid_read, pid_write = os.pipe()
    gate_read, gate_write = os.pipe()  # end of file in the rank: the middle process is gone
    try:
        middle = os.fork()
    except OSError as error:
        for fd in (pid_read, pid_write, gate_read, gate_write):
            os.close(fd)
        return 0, error.errno
    if middle == 0:
        code = 0
        try:
            os.close(pid_read)
            rank = os.fork()
            if rank == 0:
                os.close(pid_write)
                os.close(gate_write)
                control.close()
                request["gate"] = gate_read
                return 0, 0
            # Its own process group before the launcher learns its pid.
            try:
                os.setpgid(rank, rank)
            except OSError:
                pass
            os.write(pid_write, struct.pack("=i", rank))
        except BaseException:  # noqa: B902 - the middle process never returns
            code = 1
        os._exit(code)
    os.close(pid_write)
    os.close(gate_write)
    os.close(gate_read)
    data = b""
    while len(data) < 4:
        chunk = os.read(pid_read, 4 - len(data))
        if not chunk:
            break
        data += chunk
    os.close(pid_read)
    try:
        os.waitpid(middle, 0)  # once it is reaped, the launcher has adopted the rank
    except ChildProcessError:
        pass
    if len(data) != 4:
        import errno

        return 0, errno.EAGAIN
    return struct.unpack("=i", data)[0], 0


def _xlaunch_adopted(os, request):
    """In the new rank: wait to be the launcher's child, then tie its life to the launcher's,
    then wait for the launcher's go (end of file instead: it gave up on this rank)."""
    import ctypes
    import time

    gate_read = request["gate"]
    os.setpgid(0, 0)
    os.read(gate_read, 1)
    os.close(gate_read)
    # The middle process closed its files before the kernel hands its child on.
    for _ in range(2000):
        if os.getppid() == request["launcher"]:
            break
        time.sleep(0.0005)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    if os.getppid() != request["launcher"]:
        os._exit(1)  # the launcher is gone
    go = request["fds"][3]
    if os.read(go, 1) != b"g":
        os._exit(1)
    os.close(go)


def _xlaunch_environment(os, env, changed):
    """The rank's environment, with what the preloaded imports changed in the template's
    redone where the rank started from the same value (a per-rank variable keeps the rank's)."""
    for key, (old, new) in changed.items():
        if env.get(key) != old:
            continue
        if new is None:
            env.pop(key, None)
        else:
            env[key] = new
    os.environ.clear()
    os.environ.update(env)



def _xlaunch_run(request):
    """The rank's side of `python -u program args`: its files, environment and argv."""
    import builtins
    import faulthandler
    import io
    import os
    import struct
    import sys

    _xlaunch_adopted(os, request)
    out, err, status = request["fds"][:3]

    def fail(stage, error):
        os.write(status, struct.pack("=ii", stage, error or 0))
        os._exit(127)

    if request["cgroup"]:
        try:
            with open(request["cgroup"], "w") as procs:
                procs.write("0")
        except OSError as error:
            fail(1, error.errno)
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
    except OSError as error:
        fail(2, error.errno)
    os.close(out)
    os.close(err)
    _xlaunch_environment(os, request["env"], request["changed"])
    sys.orig_argv = request["argv"]
    unbuffered = request["unbuffered"]

    def text(fd, old, line_buffering):
        raw = io.FileIO(fd, "w", closefd=False)
        raw.name = "<stdout>" if fd == 1 else "<stderr>"
        layer = raw if unbuffered else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            layer,
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=line_buffering,
            write_through=unbuffered,
        )
        stream.mode = "w"
        return stream

    # A wrapper a preloaded module put in place (a tee to a log, colorama) stays: it writes
    # through the template's stream to descriptor 1 or 2, which are now the rank's.
    plain_out, plain_err = sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__
    sys.__stdout__ = text(1, sys.__stdout__, False)
    sys.__stderr__ = text(2, sys.__stderr__, not unbuffered)
    if plain_out:
        sys.stdout = sys.__stdout__
    if plain_err:
        sys.stderr = sys.__stderr__
    if os.environ.get("PYTHONFAULTHANDLER"):
        faulthandler.enable(file=sys.__stderr__, all_threads=True)
    else:
        faulthandler.disable()
    import site

    # `python program` runs these before it puts the program's folder first on sys.path: one
    # there named sitecustomize.py is not the one to run (xlaunch's own, then the system's).
    program_folder = request["program_folder"]
    if program_folder is not None and sys.path[:1] == [program_folder]:
        del sys.path[0]
    else:
        program_folder = None
    try:
        site.execsitecustomize()  # xlaunch's own (stacks) first, if there, then the user's
        if site.ENABLE_USER_SITE:
            site.execusercustomize()
    finally:
        if program_folder is not None:
            sys.path.insert(0, program_folder)
    # numpy seeds its global generator at import: each rank gets its own, as if it imported it.
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None and hasattr(numpy_random, "seed"):
        numpy_random.seed()
    # So does torch its CPU generator (each process its own seed, from the OS).
    torch = sys.modules.get("torch")
    generator = getattr(torch, "default_generator", None)
    if generator is not None and hasattr(generator, "seed"):
        generator.seed()
    # So does multiprocessing's authentication key (torch imports it).
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None:
        multiprocessing.current_process().authkey = os.urandom(32)
    target, args = request["target"], request["args"]
    main = sys.modules["__main__"].__dict__
    os.close(status)  # as a successful exec would
    main.clear()
    main.update(__builtins__=builtins, __annotations__={})
    try:
        if request["module"]:
            import runpy

            sys.argv = ["-m"] + args
            runpy._run_module_as_main(target, alter_argv=True)
        else:
            sys.argv = [target] + args
            # As CPython names the main script: joined to the working folder, not normalised
            # (3.9 on); as given before that.
            path = target
            if sys.version_info >= (3, 9) and not os.path.isabs(target):
                path = os.path.join(os.getcwd(), target)
            open_code = getattr(io, "open_code", None) or (lambda name: io.open(name, "rb"))
            try:
                with open_code(path) as source_file:
                    source = source_file.read()
            except OSError as error:  # what `python missing.py` says
                sys.stderr.write(
                    "%s: can't open file %r: [Errno %d] %s\n"
                    % (sys.executable, path, error.errno, error.strerror)
                )
                raise SystemExit(2) from None
            import importlib.machinery

            main.update(
                __name__="__main__",
                __doc__=None,
                __package__=None,
                __spec__=None,
                __file__=path,
                __cached__=None,
                __loader__=importlib.machinery.SourceFileLoader("__main__", path),
            )
            exec(compile(source, path, "exec"), main)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:  # noqa: B902 - printed as the interpreter would
        # From the script's own frame on, as the interpreter prints it.
        trace = error.__traceback__
        error.__traceback__ = trace.tb_next if trace is not None else None
        sys.excepthook(type(error), error, error.__traceback__)
        raise SystemExit(1) from None


_xlaunch_run(_xlaunch_template())
)PY";
}

}  // namespace xlaunch::launcher
