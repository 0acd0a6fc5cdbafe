"""xlaunch: a launcher for distributed training jobs (what torchrun and accelerate launch do)
in one native program. This package finds that program and the example workers shipped with it.

    python -m xlaunch launch --num_processes 2 train.py   # the same as `xlaunch launch ...`
"""
import pathlib
from importlib import metadata

__all__ = ["binary", "templates", "__version__"]
__version__ = metadata.version("xlaunch")


def binary() -> pathlib.Path:
    """The xlaunch program this distribution installed ({prefix}/bin/xlaunch)."""
    for file in metadata.files("xlaunch") or ():
        if file.name == "xlaunch" and file.parent.name == "bin":
            return pathlib.Path(file.locate()).resolve()
    raise FileNotFoundError("the xlaunch program is not among the files of the installed "
                            "xlaunch distribution; reinstall it "
                            "(pip install --force-reinstall xlaunch-*.whl)")


def templates() -> pathlib.Path:
    """The example workers: python_ddp/train.py (PyTorch DDP), examples/hello.py (plain Python)."""
    return pathlib.Path(__file__).resolve().parent / "templates"
