"""The wheel carries the library and the harness: installed into a fresh virtual environment, it
runs ``python -m experiments --help`` and one tiny run outside the repository (slow: it installs
torch and the harness's dependencies into the new environment)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_wheel_installs_and_runs_the_harness(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
        timeout=900,
    )
    (wheel,) = dist.glob("elmo_bench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "bilm/data/elmo-bench-small-en.safetensors",
        "tasks/core.py",
        "tasks/registry.py",
        "tasks/representations/__init__.py",
        "tasks/squad/demo.py",
        "experiments/runner.py",
        "experiments/paper.toml",
    ):
        assert required in names, required
    assert not any(n.startswith("tests/") for n in names)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"{wheel}[harness]"], check=True, timeout=1800
    )
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HOME"] = str(tmp_path / "home")  # demo set and caches land here, not in the repository
    done = subprocess.run(
        [str(python), "-m", "experiments", "--help"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "sweep" in done.stdout, done.stderr[-2000:]
    tiny = [
        str(python),
        "-m",
        "experiments",
        "run",
        "squad",
        "--repr",
        "none",
        "--limit",
        "20",
        "--quiet",
        "--set",
        "word_vectors=random:4",
        "hidden=4",
        "char_filters=4",
        "train.epochs=1",
    ]
    done = subprocess.run(tiny, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"dev_f1"' in done.stdout
    assert any((cwd / "runs" / "store" / "squad").iterdir())
