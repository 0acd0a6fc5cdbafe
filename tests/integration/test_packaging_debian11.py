"""The wheel on an old system: Debian 11 (glibc 2.31, Python 3.9, pip 20.3), the root that
scripts/debian11-root caches. Installed without root, as the unprivileged user `builder` of a
throwaway copy of that root (packaging_helpers.RootCopy), then run."""
import pytest

from packaging_helpers import RootCopy, artefact, cached_root, files_folder

WORKER = """#!/bin/sh
echo "worker rank $RANK of $WORLD_SIZE local $LOCAL_RANK uid $(id -u)" \
  "store $MASTER_ADDR:$MASTER_PORT"
"""


@pytest.fixture(scope="module")
def debian11(tmp_path_factory):
    """A copy of the Debian 11 root where `builder` has a venv holding the wheel (~/v)."""
    wheel = artefact("*.whl")
    copy = RootCopy(cached_root("debian11-root"), tmp_path_factory.mktemp("debian11"))
    copy.must(as_user=f"python3 -m venv v && v/bin/pip install --no-index -q /dist/{wheel.name}",
              binds={wheel.parent: "/dist"})
    yield copy
    copy.remove()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return files_folder(tmp_path_factory, {"worker.sh": WORKER, "bad.yaml": "num_processes: [1\n"})


def test_the_venv_xlaunch_runs_a_two_rank_job(debian11, files):
    r = debian11.must(as_user="v/bin/xlaunch launch --num_processes 2 --no_python /files/worker.sh",
                      binds={files: "/files"})
    for rank in (0, 1):
        expected = f"worker rank {rank} of 2 local {rank} uid 4242 store 127.0.0.1:"
        assert expected in r.stdout, r.stdout


def test_python_dash_m_xlaunch_runs_the_installed_binary(debian11):
    r = debian11.must(as_user="v/bin/python -m xlaunch --version\n"
                              "v/bin/python -c 'import xlaunch; print(xlaunch.binary())'")
    version = artefact("*.whl").name.split("-")[1]
    assert r.stdout.splitlines() == [version, "/home/builder/v/bin/xlaunch"], r.stdout


def test_a_user_install_puts_xlaunch_in_local_bin_and_runs_the_example_worker(debian11):
    """pip install --user with the system Python (Debian's pip run from its own wheel: the
    system has no pip module), then the shipped Python example under the system python3."""
    wheel = artefact("*.whl")
    r = debian11.must(
        as_user="pip=$(echo /usr/share/python-wheels/pip-*.whl)\n"
                f"python3 $pip/pip install --user --no-index -q /dist/{wheel.name}\n"
                "templates=$(python3 -c 'import xlaunch; print(xlaunch.templates())')\n"
                "~/.local/bin/xlaunch launch --num_processes 2 $templates/examples/hello.py",
        binds={wheel.parent: "/dist"})
    for rank in (0, 1):
        assert f"hello from rank {rank} of 2" in r.stdout, r.stdout


def test_a_malformed_config_file_is_reported_with_exit_2(debian11, files):
    """yaml-cpp's exception unwinds through libstdc++ to main on this glibc, which has no
    _dl_find_object (packaging/glibc_compat.c answers libgcc's unwinder): reported, not aborted."""
    r = debian11.run(
        as_user="v/bin/xlaunch launch --config_file /files/bad.yaml --no_python /bin/true",
        binds={files: "/files"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "/files/bad.yaml:2:1: malformed YAML" in r.stderr, r.stderr
