#include "diagnose/stacks_site.hpp"

#include <fmt/format.h>
#include <signal.h>

namespace xlaunch::diagnose {

std::string sitecustomize_text(long launcher_pid) {
  std::string text =
      R"PY(# Written by xlaunch (see docs/diagnose.md). It lets xlaunch show this worker's Python
# stacks: faulthandler dumps every thread to a file on XLAUNCH_STACKS_SIGNAL (SIGURG, which a
# program that does not handle it ignores). Only in a rank's own process, the launcher's
# child: xlaunch reads no other process's dump, and the Pythons a rank starts (data loader
# workers, tools) get neither files nor a handler. Then it runs the sitecustomize module this
# one shadows, if there is one. Before that it drops one variable PyTorch 2.2+ warns about.
def _xlaunch_nccl_names(os, sys):
    # xlaunch sets NCCL's async error handling under both names, as torchrun 1.13 and 2.2+
    # each set theirs. PyTorch 2.2+ reads the new name first and warns about the old one (two
    # lines per rank): drop the old one where it says the same and this Python's torch is 2.2+.
    old = os.environ.get("NCCL_ASYNC_ERROR_HANDLING")
    if old is None or old != os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"):
        return
    try:
        # Found as `import torch` would find it, not imported; through the finders already
        # loaded, so that a worker without torch imports nothing more (importlib: ~0.7 ms).
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find("torch", None) if find else None
            if spec is not None:
                break
        if spec is None or not spec.submodule_search_locations:
            return
        folder = list(spec.submodule_search_locations)[0]
        with open(os.path.join(folder, "version.py")) as version:
            for line in version:
                if line.startswith("__version__"):
                    major, minor = line.split("=", 1)[1].strip(" '\"\n").split(".")[:2]
                    if (int(major), int(minor)) >= (2, 2):
                        del os.environ["NCCL_ASYNC_ERROR_HANDLING"]
                    return
    except Exception:  # no torch, or one laid out otherwise: leave both names
        pass


def _xlaunch_watch_handover(os, faulthandler, note, ours):
    # A script may handle the signal itself (SIGURG also says a socket has urgent data) or
    # register faulthandler on it with a file of its own: from then on xlaunch must not send
    # it, and the note says so. (A handler set from C is not seen here; xlaunch reads the
    # kernel's list of handlers, which still lists one.)
    import _signal

    def handing_over(number):
        try:
            if int(number) != ours:
                return
            with open(note + ".tmp", "w") as replaced:
                replaced.write("none\n")
            os.replace(note + ".tmp", note)
        except (TypeError, ValueError, OSError):
            pass

    def watch(function):
        def watched(signalnum, *args, **kwargs):
            handing_over(signalnum)
            return function(signalnum, *args, **kwargs)

        watched.__name__ = function.__name__
        watched.__doc__ = function.__doc__
        return watched

    _signal.signal = watch(_signal.signal)
    faulthandler.register = watch(faulthandler.register)


def _xlaunch_setup():
    import os
    import sys

    _xlaunch_nccl_names(os, sys)
    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.environ.get("XLAUNCH_STACKS_DIR")
    signum = os.environ.get("XLAUNCH_STACKS_SIGNAL")
    # A Python 2 that a worker runs finds this file too: it has no faulthandler; chain only.
    # A rank is the launcher's child and leads its own process group; a Python the launcher
    # adopted (left by a subshell that ended) is its child too, in a rank's group.
    rank_process = os.getppid() in (@LAUNCHER_PID@, 0) and os.getpgrp() == os.getpid()
    if folder and signum and sys.version_info[0] >= 3 and rank_process:
        try:
            import faulthandler

            base = os.path.join(folder, "rank_%s.%d" % (os.environ.get("RANK", "x"), os.getpid()))
            # Kept open for good: faulthandler writes to its descriptor from the signal. The
            # descriptor is moved far above those a script opens (open() takes the lowest
            # free one), so that a script that closes its descriptors and opens a file does
            # not get this number; xlaunch checks it is still this file before each request.
            with open(base + ".stacks", "w") as first:
                try:
                    import fcntl

                    high = fcntl.fcntl(first.fileno(), fcntl.F_DUPFD_CLOEXEC, 960)
                except (ImportError, OSError):  # a descriptor limit below 961
                    high = os.dup(first.fileno())
            dump = os.fdopen(high, "w")
            faulthandler.register(int(signum), file=dump, all_threads=True)
            sys._xlaunch_stacks_file = dump
            # Written last: xlaunch asks only a process whose handler is registered.
            with open(base + ".fd.tmp", "w") as note:
                note.write("%d\n" % high)
            os.replace(base + ".fd.tmp", base + ".fd")
            _xlaunch_watch_handover(os, faulthandler, base + ".fd", int(signum))

            # A script that sets MASTER_ADDR / MASTER_PORT itself dials another address than
            # xlaunch's store: note it, so that xlaunch can say so when the rank never arrives.
            # os.environ stays an os._Environ: its own encoders are wrapped, and only its
            # __setitem__ encodes a key and then a value.
            encodekey, encodevalue = os.environ.encodekey, os.environ.encodevalue
            last_key = [None]

            def _encodekey(key):
                last_key[0] = key
                return encodekey(key)

            def _encodevalue(value):
                encoded = encodevalue(value)
                if last_key[0] in ("MASTER_ADDR", "MASTER_PORT"):
                    try:
                        with open(base + ".env", "a") as notes:
                            notes.write("%s=%s\n" % (last_key[0], value))
                    except OSError:
                        pass
                return encoded

            os.environ.encodekey, os.environ.encodevalue = _encodekey, _encodevalue
        except Exception as error:  # never keep the script from running
            sys.stderr.write("xlaunch sitecustomize: stacks not available: %s\n" % error)
    # Chain: import the next sitecustomize on the path, as if this one did not exist.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    me = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401
    except ImportError as error:
        if getattr(error, "name", "sitecustomize") != "sitecustomize":  # Python 2: no name
            raise
    finally:
        # The import system expects a "sitecustomize" entry when this module returns.
        sys.modules.setdefault("sitecustomize", me)


_xlaunch_setup()
del _xlaunch_setup, _xlaunch_nccl_names, _xlaunch_watch_handover
)PY";
  const std::string_view token = "@LAUNCHER_PID@";
  text.replace(text.find(token), token.size(), std::to_string(launcher_pid));
  return text;
}

int stacks_signal() { return SIGURG; }

std::string stacks_file(const std::string& dir, int rank, long pid) {
  return fmt::format("{}/rank_{}.{}.stacks", dir, rank, pid);
}

std::string notes_file(const std::string& dir, int rank, long pid) {
  return fmt::format("{}/rank_{}.{}.env", dir, rank, pid);
}

std::string descriptor_file(const std::string& dir, int rank, long pid) {
  return fmt::format("{}/rank_{}.{}.fd", dir, rank, pid);
}

}  // namespace xlaunch::diagnose
