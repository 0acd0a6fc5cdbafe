"""Start-up shim for PyTorch builds without libuv (Debian 13's python3-torch 2.6).

In PyTorch 2.4-2.6 every TCPStore(...) that leaves use_libuv at its default asks for libuv,
and a build without it raises "use_libuv was requested but PyTorch was build without libuv
support": init_process_group(env://) under an agent store (TORCHELASTIC_USE_AGENT_STORE=True,
as under xlaunch or torchrun) creates such a client. This module, found through PYTHONPATH,
makes use_libuv default to False once torch.distributed is imported, and only when this
torch really lacks libuv. Explicit use_libuv arguments are left alone.

It is usercustomize (not sitecustomize) so that a sitecustomize elsewhere on the path does
not hide it. Python imports it at start-up; it imports nothing heavy until torch.distributed
is imported by the program itself.
"""
import importlib.abc
import importlib.util
import sys

_TARGET = "torch.distributed"


def _lacks_libuv(original):
    import datetime
    try:
        # Without libuv the constructor refuses before it connects; with libuv it would try
        # port 1 for a millisecond and fail differently.
        original("127.0.0.1", 1, 1, False, use_libuv=True,
                 timeout=datetime.timedelta(milliseconds=1))
    except RuntimeError as e:
        return "without libuv" in str(e)
    return False


def _patch(dist):
    original = getattr(dist, "TCPStore", None)
    if original is None or not _lacks_libuv(original):
        return

    class TCPStore(original):
        __doc__ = original.__doc__

        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    TCPStore.__name__ = TCPStore.__qualname__ = "TCPStore"
    # Modules that imported the name before this ran (torch.distributed.rendezvous does).
    for name, module in list(sys.modules.items()):
        if (name == _TARGET or name.startswith(_TARGET + ".")) and \
                getattr(module, "TCPStore", None) is original:
            module.TCPStore = TCPStore


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps the loading of torch.distributed so that _patch runs right after it."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot; also keeps find_spec below from recursing
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_then_patch
        return spec


if _TARGET in sys.modules:
    _patch(sys.modules[_TARGET])
else:
    sys.meta_path.insert(0, _Finder())
