"""Shared fixtures for integration tests: they run the real xlaunch binary.

scripts/test sets XLAUNCH_BIN (the binary under test), XLAUNCH_BUILD_DIR and
XLAUNCH_TEST_PYTHON (an interpreter with torch). A missing piece fails loudly: no test
skips silently.
"""
import os
import pathlib
import shutil
import subprocess

import pytest

# Helper modules that hold asserts moved there from test files: rewritten as test files are,
# so that a failing assert still shows the values it compared.
pytest.register_assert_rewrite("config_helpers", "etcd_helpers", "machine_fixtures")

from launch_helpers import restore_default_stop_signals

ROOT = pathlib.Path(__file__).resolve().parents[2]
restore_default_stop_signals()


def pytest_configure(config):
    # Tests that only a release build can run (they preload a malloc of their own, which
    # ASan's build cannot have); `scripts/test --sanitize` deselects them by this mark.
    config.addinivalue_line("markers", "release_build: needs a release (non-ASan) xlaunch")


def _require_file(path, what):
    if not pathlib.Path(path).exists():
        pytest.fail(f"{what} not found at {path}: run scripts/test (it builds and installs)")
    return str(pathlib.Path(path).resolve())  # tests may run it from another directory


@pytest.fixture(scope="session")
def xlaunch_bin():
    return _require_file(os.environ.get("XLAUNCH_BIN", ROOT / "build/release/cli/xlaunch"),
                         "the xlaunch binary")


@pytest.fixture(scope="session")
def build_dir():
    return pathlib.Path(_require_file(os.environ.get("XLAUNCH_BUILD_DIR", ROOT / "build/release"),
                                      "the build directory"))


@pytest.fixture(scope="session")
def torch_python():
    """Debian's python3 with python3-torch (CPU)."""
    python = os.environ.get("XLAUNCH_TEST_PYTHON", "/usr/bin/python3")
    probe = subprocess.run([python, "-c", "import torch, torch.distributed; print(torch.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"{python} cannot import torch (install python3-torch; scripts/test does): "
                    f"{probe.stderr.strip()[-500:]}")
    return python


@pytest.fixture
def plain_python():
    """Any interpreter: the tests' own (Debian's, under scripts/test)."""
    import sys
    return sys.executable


@pytest.fixture(scope="session")
def sanitizer_flags(build_dir):
    """Flags a program that links the build's libxlaunch.so needs: the ASan+UBSan build's
    library wants the sanitizer runtime linked into the program too."""
    cache = (build_dir / "CMakeCache.txt").read_text()
    return ["-fsanitize=address,undefined"] if "XLAUNCH_SANITIZE:BOOL=ON" in cache else []


@pytest.fixture(scope="session")
def consumer_cmake_args(sanitizer_flags):
    """Configure arguments for a separate CMake project that uses the installed package."""
    args = ["-G", "Ninja"] if shutil.which("ninja") else []
    if sanitizer_flags:
        flags = " ".join(sanitizer_flags)
        args += [f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}",
                 f"-DCMAKE_EXE_LINKER_FLAGS={flags}"]
    return args


@pytest.fixture(scope="session")
def prefix(build_dir, tmp_path_factory):
    """The package installed from the build under test into a fresh prefix (once per run)."""
    prefix = tmp_path_factory.mktemp("xlaunch-prefix")
    r = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"cmake --install failed:\n{r.stdout}{r.stderr}")
    return prefix
