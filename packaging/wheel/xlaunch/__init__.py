"""xlaunch: a launcher for distributed training jobs (what torchrun and accelerate launch do)
in one native program. This package finds that program and the example workers shipped with it.

    python -m xlaunch launch --num_processes 2 train.py   # the same as `xlaunch launch ...`
"""
import os
import pathlib
import sysconfig
from importlib import metadata

__all__ = ["binary", "templates", "__version__"]
__version__ = metadata.version("xlaunch")


def binary() -> pathlib.Path:
    """The xlaunch program this distribution installed ({prefix}/bin/xlaunch)."""
    # RECORD's path is pip's guess at install time: `pip install --target` records it for a
    # temporary layout. Only a program that is there counts; else the bin folder beside the
    # package (--target DIR puts both in DIR), then this interpreter's scripts folder.
    candidates = [pathlib.Path(file.locate()) for file in metadata.files("xlaunch") or ()
                  if file.name == "xlaunch" and file.parent.name == "bin"]
    package = pathlib.Path(__file__).resolve().parent
    candidates.append(package.parent / "bin" / "xlaunch")
    candidates.append(pathlib.Path(sysconfig.get_path("scripts")) / "xlaunch")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.resolve()
    raise FileNotFoundError("the xlaunch program is not among the files of the installed "
                            "xlaunch distribution; reinstall it "
                            "(pip install --force-reinstall xlaunch-*.whl)")


def templates() -> pathlib.Path:
    """The example workers: python_ddp/train.py (PyTorch DDP), examples/hello.py (plain Python)."""
    return pathlib.Path(__file__).resolve().parent / "templates"
