"""What pyproject.toml cannot say: the version and platform tag scripts/package measured, and
the launcher installed as {prefix}/bin/xlaunch (on PATH in a venv, a conda env or a --user
install). Build through scripts/package, which stages this folder with the binary."""
import os
import sys

from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel


def staged(name):
    value = os.environ.get(name)
    if not value:
        sys.exit(f"xlaunch wheel: {name} is not set; build the wheel with scripts/package")
    return value


VERSION = staged("XLAUNCH_WHEEL_VERSION")
# manylinux_2_<N>_x86_64, N being the binary's glibc floor as measured by scripts/package.
PLATFORM = staged("XLAUNCH_WHEEL_PLATFORM")


class NativeProgram(Distribution):
    """Holds a native program: a platform wheel, its Python package at the root (platlib)."""

    def has_ext_modules(self):
        return True


class NativeProgramWheel(bdist_wheel):
    """No extension module though: any Python 3 (py3-none), this platform only."""

    def get_tag(self):
        return "py3", "none", PLATFORM


# A data file rather than a script: setuptools would read the binary as Python source to
# rewrite its #! line. pip keeps the executable bit of both.
setup(version=VERSION, data_files=[("bin", ["bin/xlaunch"])], distclass=NativeProgram,
      cmdclass={"bdist_wheel": NativeProgramWheel})
