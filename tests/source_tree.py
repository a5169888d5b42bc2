"""The repository as a user gets it: its files copied aside, its wheel, a venv holding the wheel.

Tests of what ships build from a copy of the checkout's files (``git ls-files``: tracked and
not-yet-added files, nothing ignored), so build outputs never land in the checkout and untracked
leftovers never hide a missing file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO

#: The importable packages the wheel carries (``[tool.setuptools.packages.find]``).
PACKAGES = ("bilm", "tasks", "experiments")
#: What a build or a nox listing reads beside the packages.
TOP_LEVEL = ("pyproject.toml", "README.md", "LICENSE", "constraints.txt", "noxfile.py")


def checkout_files(*folders: str) -> list[str]:
    """The checkout's files below ``folders`` (all when none), as ``git ls-files`` lists them:
    tracked and untracked, without the ignored ones; skips the calling test outside a git
    checkout."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the file list comes from git ls-files")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *folders],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(p for p in listed.split("\0") if p and (REPO / p).is_file())


def copy_source(dest: Path, folders: Iterable[str] = (*PACKAGES, "benchmarks", "scripts")) -> Path:
    """The checkout's files of ``folders`` and the top-level build files, copied to ``dest``."""
    for name in [*checkout_files(*folders), *TOP_LEVEL]:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return dest


def build_wheel(source: Path, dist: Path) -> Path:
    """The wheel of the project at ``source``, built offline with this environment's setuptools
    (no build isolation, no dependencies)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(dist), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("elmo_bench-*.whl")
    return wheel


def wheel_names(wheel: Path) -> set[str]:
    """The file names inside ``wheel``."""
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def venv_with_wheel(wheel: Path, venv: Path) -> Path:
    """A new venv holding ``wheel`` (no network): the wheel is installed into it without its
    dependencies, which are read from this environment's site-packages through a ``.pth`` line
    (a plain path entry: this environment's own ``.pth`` files, such as an editable install of
    the project, are not run). Returns the venv's ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q"]
        + ["--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "elmo_bench_test_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    return venv / "bin"


def run(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """``argv`` in ``cwd``; its standard output, or a failure showing both streams' ends."""
    done = subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)} exited {done.returncode}\n"
            f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-3000:]}"
        )
    return done.stdout
