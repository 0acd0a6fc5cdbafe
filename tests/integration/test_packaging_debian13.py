"""The wheel and the .deb on a current system: the Debian 13 root with PyTorch 2.6 that
scripts/torch26-root caches (glibc 2.41, Python 3.13). Each artefact gets its own throwaway copy
of the root (packaging_helpers.RootCopy); what they need from Debian (python3-venv; cmake and g++
for the consumer) is installed in the copy from the mirror. Jobs run as the unprivileged user
`builder`."""
import json

import pytest

from packaging_helpers import REPO, RootCopy, artefact, cached_root, files_folder

WORKERS = REPO / "tests" / "integration" / "workers"
CONSUMERS = REPO / "tests" / "consumers"
APT = "apt-get update -qq && apt-get install -y -qq --no-install-recommends"


@pytest.fixture(scope="module")
def trixie_root():
    return cached_root("torch26-root")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    # The documented way to join the agent store from this libuv-less torch (docs/rendezvous.md).
    return files_folder(tmp_path_factory,
                        {"allreduce.py": (WORKERS / "explicit_store26.py").read_text()})


@pytest.fixture(scope="module")
def wheel_copy(trixie_root, tmp_path_factory):
    """A copy where `builder` has a venv holding the wheel (~/v) that sees the system's torch."""
    wheel = artefact("*.whl")
    copy = RootCopy(trixie_root, tmp_path_factory.mktemp("debian13-wheel"))
    copy.must(as_root=f"{APT} python3-venv >/dev/null",
              as_user=f"python3 -m venv --system-site-packages v && "
                      f"v/bin/pip install --no-index -q /dist/{wheel.name}",
              binds={wheel.parent: "/dist"})
    yield copy
    copy.remove()


@pytest.fixture(scope="module")
def deb_copy(trixie_root, tmp_path_factory):
    """A copy where the .deb is installed with apt, with what the consumer builds need."""
    deb = artefact("xlaunch_*.deb")
    copy = RootCopy(trixie_root, tmp_path_factory.mktemp("debian13-deb"))
    copy.must(as_root=f"{APT} /dist/{deb.name} cmake g++ make pkg-config >/dev/null",
              binds={deb.parent: "/dist"})
    yield copy
    copy.remove()


def test_the_venv_xlaunch_runs_a_two_rank_torch_gloo_allreduce(wheel_copy, files):
    # Not activated: the workers run the venv's python3, as torchrun installed there would;
    # it sees the system's torch 2.6.
    r = wheel_copy.must(as_user="v/bin/xlaunch launch --num_processes 2 /files/allreduce.py",
                        binds={files: "/files"})
    assert "xlaunch: command: /home/builder/v/bin/python3 -u /files/allreduce.py" in r.stderr
    for rank in (0, 1):
        assert f"explicit store ok rank {rank} sum 3 torch 2.6" in r.stdout, r.stdout + r.stderr


def consumer_records(stdout):
    records = {}
    for line in stdout.splitlines():
        if "XLAUNCH_CONSUMER " in line:
            record = json.loads(line.split("XLAUNCH_CONSUMER ", 1)[1])
            records[record["rank"]] = record
    return records


def test_a_find_package_consumer_builds_against_the_deb_and_runs_under_its_xlaunch(deb_copy):
    r = deb_copy.must(
        as_user="cmake -S /consumers/cpp -B build >/dev/null && cmake --build build >/dev/null\n"
                "command -v xlaunch\n"
                "xlaunch launch --num_processes 2 --no_python build/consumer",
        binds={CONSUMERS: "/consumers"})
    assert r.stdout.splitlines()[0] == "/usr/bin/xlaunch", r.stdout
    records = consumer_records(r.stdout)
    assert sorted(records) == [0, 1], r.stdout + r.stderr
    for rank, record in records.items():
        assert record["size"] == 2 and record["store"] is True, record
        # The package's library is built without NCCL (docs/install.md), and says so.
        assert record["nccl_comm"].startswith("error:unavailable:"), record


def test_pkg_config_finds_the_deb_library(deb_copy):
    r = deb_copy.must(
        as_user="cc -std=c11 -o consumer /consumers/c/consumer.c "
                "$(pkg-config --cflags --libs xlaunch)\n"
                "xlaunch launch --num_processes 2 --no_python ./consumer",
        binds={CONSUMERS: "/consumers"})
    records = consumer_records(r.stdout)
    assert sorted(records) == [0, 1] and all(r["store"] for r in records.values()), r.stdout
