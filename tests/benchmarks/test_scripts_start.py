"""Every benchmark starts as a script (`python benchmarks/X.py --help`), imports included."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize(
    "script", ["bench_bilm.py", "bench_pretrain.py", "bench_cache.py", "bench_significance.py"]
)
def test_script_help(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO.parent,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout
