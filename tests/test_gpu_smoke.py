"""``nox -s gpu_smoke`` on a machine without CUDA says so and exits 1 (nothing half-run)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from tests.conftest import REPO


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available: the smoke run would run")
def test_gpu_smoke_without_cuda_exits_with_a_clear_message() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gpu_smoke.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO.parent,
    )
    assert done.returncode == 1
    assert "CUDA is not available" in done.stderr and "nothing was run" in done.stderr
