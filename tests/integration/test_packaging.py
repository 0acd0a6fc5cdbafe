"""The three shipped artefacts (scripts/package, docs/install.md) as files: the binary needs
nothing but the C library, the wheel is tagged with the binary's measured glibc floor, the .deb
holds what it promises. Installing and running them: test_packaging_debian11.py and
test_packaging_debian13.py."""
import re
import subprocess
import zipfile

from packaging_helpers import artefact

# What glibc itself installs: the objects ldd may list for a binary that needs only glibc.
C_LIBRARY = re.compile(r"(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0"
                       r"|librt\.so\.1|/lib64/ld-linux-x86-64\.so\.2)")


def must(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{cmd}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def symbol_versions(binary):
    """The version of every dynamic symbol the binary imports (GLIBC_2.3, ...)."""
    return set(re.findall(r"\(?([A-Z]+_[0-9.]+)\)?\s+\S+$", must(["objdump", "-T", binary]),
                          re.MULTILINE))


def glibc_floor(binary):
    return max(int(v.split(".")[1]) for v in symbol_versions(binary) if v.startswith("GLIBC_2."))


def version():
    return must([artefact("xlaunch"), "--version"]).strip()


def test_ldd_lists_only_the_c_library():
    out = must(["ldd", artefact("xlaunch")])
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert names and all(C_LIBRARY.fullmatch(n) for n in names), out


def test_every_imported_symbol_is_glibcs():
    """libstdc++ and libgcc are linked in: no GLIBCXX_, CXXABI_ or GCC_ version is imported."""
    versions = symbol_versions(artefact("xlaunch"))
    assert versions and all(v.startswith("GLIBC_") for v in versions), sorted(versions)


def test_the_wheel_is_tagged_with_the_binary_glibc_floor():
    floor = glibc_floor(artefact("xlaunch"))
    # Linked against Debian 11's glibc 2.31: a newer symbol cannot have slipped in.
    assert floor <= 31, floor
    wheel = artefact("*.whl")
    assert wheel.name == f"xlaunch-{version()}-py3-none-manylinux_2_{floor}_x86_64.whl"


def test_the_wheel_installs_the_binary_as_an_executable_and_the_python_package():
    wheel = artefact("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        binary = f"xlaunch-{version()}.data/data/bin/xlaunch"
        assert binary in names, sorted(names)
        assert (z.getinfo(binary).external_attr >> 16) & 0o111, "not executable in the wheel"
        assert z.read(binary) == artefact("xlaunch").read_bytes()
        for path in ("xlaunch/__init__.py", "xlaunch/__main__.py",
                     "xlaunch/templates/python_ddp/train.py",
                     "xlaunch/templates/examples/hello.py"):
            assert path in names, sorted(names)
        wheel_meta = z.read(f"xlaunch-{version()}.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel_meta, wheel_meta


def test_a_target_install_runs_through_python_dash_m(tmp_path):
    # pip install --target records the program's path for a temporary layout: the package
    # must find the program that is there, not run (or miss) whatever that path names.
    target = tmp_path / "target"
    must(["/usr/bin/python3", "-m", "pip", "install", "--no-index", "--no-deps", "-q",
          "--target", target, artefact("*.whl")])
    r = subprocess.run(["/usr/bin/python3", "-m", "xlaunch", "--version"], capture_output=True,
                       text=True, timeout=60, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout.strip() == version(), r.stdout + r.stderr
    r = subprocess.run(["/usr/bin/python3", "-c", "import xlaunch; print(xlaunch.binary())"],
                       capture_output=True, text=True, timeout=60,
                       env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert r.stdout.strip() == str(target / "bin" / "xlaunch"), r.stdout + r.stderr


def test_the_deb_holds_the_binary_and_the_client_library_with_its_metadata():
    deb = artefact("xlaunch_*.deb")
    # "MODE OWNER SIZE DATE TIME PATH", then " -> TARGET" for a link
    paths = {line.split(" -> ")[0].split()[-1]
             for line in must(["dpkg-deb", "--contents", deb]).splitlines()}
    lib = "./usr/lib/x86_64-linux-gnu"
    for path in ("./usr/bin/xlaunch", f"{lib}/libxlaunch.so", "./usr/include/xlaunch/xlaunch.hpp",
                 "./usr/include/xlaunch/xlaunch.h", f"{lib}/cmake/xlaunch/xlaunchConfig.cmake",
                 f"{lib}/pkgconfig/xlaunch.pc"):
        assert path in paths, sorted(paths)
    assert must(["dpkg-deb", "--field", deb, "Version"]).strip() == version()


def test_the_deb_depends_on_the_c_and_cxx_runtimes_only():
    depends = must(["dpkg-deb", "--field", artefact("xlaunch_*.deb"), "Depends"])
    names = {d.split()[0] for d in depends.strip().split(", ")}
    assert "libc6" in names and names <= {"libc6", "libgcc-s1", "libstdc++6"}, depends


def test_xlaunch_test_from_a_package_says_why_its_worker_is_missing():
    # The packages are built without NCCL and Gloo, so the self-test worker is not in them.
    r = subprocess.run([str(artefact("xlaunch")), "test"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the self-test worker is missing" in r.stderr
    assert "do not ship it" in r.stderr and "docs/install.md" in r.stderr, r.stderr


def test_every_package_carries_the_notices_of_the_libraries_compiled_in():
    # yaml-cpp's MIT and CLI11's BSD-3 licences ask binary copies to reproduce their notices.
    def named_all(text):
        return all(name in text for name in ("yaml-cpp", "Jesse Beder", "CLI11",
                                             "University of Cincinnati", "Redistributions in binary"))

    assert named_all(artefact("THIRD_PARTY_NOTICES").read_text())
    with zipfile.ZipFile(artefact("*.whl")) as z:
        assert named_all(z.read("xlaunch/THIRD_PARTY_NOTICES").decode())
    listing = must(["dpkg-deb", "-c", artefact("*.deb")])
    assert "./usr/share/doc/xlaunch/THIRD_PARTY_NOTICES" in listing, listing


def test_the_deb_tells_dpkg_about_its_library():
    # shlibs: dpkg-shlibdeps of a package linking libxlaunch finds its dependency; ldconfig
    # puts the library in ld.so's cache.
    deb = artefact("*.deb")
    assert must(["dpkg-deb", "--info", deb, "shlibs"]).split() == \
        ["libxlaunch", "0", "xlaunch", "(>=", f"{version()})"]
    assert "ldconfig" in must(["dpkg-deb", "--info", deb, "postinst"])
