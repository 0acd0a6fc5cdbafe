"""The shipped artefacts (scripts/package: build/dist/) and throwaway copies of the cached Debian
roots to install them in, as a user would: without root, in a venv, with apt.

A RootCopy is an overlay of a cached root (scripts/debian11-root, scripts/torch26-root): every
change made inside (a user, a venv, apt-get install) lands in the copy's own folder and vanishes
with it, so the cached root stays as built. Each run mounts the overlay, /proc, /dev, /sys and the
requested read-only binds in a private mount namespace, which the kernel removes when the run
ends, however it ends. Shell code runs first as root (`as_root`), then as `builder` (uid 4242,
no privileges) in its home folder (`as_user`).
"""
import os
import pathlib
import shutil
import signal
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DIST = pathlib.Path(os.environ.get("XLAUNCH_DIST_DIR", REPO / "build" / "dist"))
USER, UID = "builder", 4242

# Runs in the private namespace: $1 the cached root, $2 the copy's folder, then (src, dst) pairs.
_MOUNT_AND_ENTER = r"""
set -euo pipefail
root=$1 top=$2
shift 2
mkdir -p "$top/upper" "$top/work" "$top/merged"
m=$top/merged
mount -t overlay overlay -o "lowerdir=$root,upperdir=$top/upper,workdir=$top/work" "$m"
mount -t proc proc "$m/proc"
mount --rbind /dev "$m/dev"
mount --rbind /sys "$m/sys"
cp --remove-destination /etc/resolv.conf "$m/etc/resolv.conf"  # apt-get reaches the mirror
while (($#)); do
  mkdir -p "$m$2"
  mount --bind "$1" "$m$2"
  mount -o remount,bind,ro "$m$2"
  shift 2
done
exec chroot "$m" /bin/bash -euo pipefail -c "$XL_INSIDE"
"""

# Runs inside the copy: root's part, then the user's part with a clean environment.
_INSIDE = r"""
/bin/bash -euo pipefail -c "$XL_AS_ROOT"
cd "/home/$XL_USER"
exec runuser -u "$XL_USER" -- env -i HOME="/home/$XL_USER" USER="$XL_USER" \
  PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 /bin/bash -euo pipefail -c "$XL_AS_USER"
"""


class RootCopy:
    """A throwaway copy of `root` whose changes persist across runs until `folder` goes."""

    def __init__(self, root, folder):
        if os.geteuid() != 0:
            pytest.fail("the packaging tests need root (overlay mounts, chroot): run them as "
                        "root, as scripts/test does")
        self.root, self.folder = pathlib.Path(root), pathlib.Path(folder)
        self.run(as_root=f"useradd --create-home --uid {UID} --shell /bin/bash {USER}")

    def run(self, as_user="true", as_root="true", binds=None, timeout=900):
        """Runs the shell code; returns the CompletedProcess (stdout and stderr as text)."""
        pairs = []
        for src, dst in (binds or {}).items():
            pairs += [str(src), dst]
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "XL_USER": USER, "XL_INSIDE": _INSIDE,
               "XL_AS_ROOT": "export DEBIAN_FRONTEND=noninteractive\n" + as_root,
               "XL_AS_USER": as_user}
        cmd = ["unshare", "--mount", "--propagation", "private", "--fork", "--", "bash", "-c",
               _MOUNT_AND_ENTER, "mount-and-enter", str(self.root), str(self.folder), *pairs]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"timed out after {timeout} s in the copy of {self.root}:\n{out[-3000:]}"
                        f"\n{err[-3000:]}")
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def remove(self):
        """Deletes the copy (an apt-get install leaves a few hundred MB in it)."""
        shutil.rmtree(self.folder)

    def must(self, **kwargs):
        r = self.run(**kwargs)
        assert r.returncode == 0, (f"exit {r.returncode} in the copy of {self.root}:\n"
                                   f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
        return r


def artefact(pattern):
    """The one file in build/dist matching `pattern`; fails naming scripts/package otherwise."""
    found = sorted(DIST.glob(pattern))
    if len(found) != 1:
        pytest.fail(f"expected one {pattern} in {DIST}, found {[f.name for f in found]}: "
                    f"run scripts/package (scripts/test does)")
    return found[0]


def cached_root(script):
    """The path a root-building script prints; fails (never skips) with its reason."""
    r = subprocess.run([str(REPO / "scripts" / script)], capture_output=True, text=True,
                       timeout=1800)
    if r.returncode != 0:
        pytest.fail(f"scripts/{script} could not provide its root (exit {r.returncode}):\n"
                    f"{r.stderr[-3000:]}")
    return pathlib.Path(r.stdout.strip().splitlines()[-1])


def files_folder(tmp_path_factory, files):
    """A folder readable by the unprivileged user, holding {name: text} (executable)."""
    folder = tmp_path_factory.mktemp("files")
    folder.chmod(0o755)
    for name, text in files.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder
