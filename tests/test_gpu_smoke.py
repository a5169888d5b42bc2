"""``nox -s gpu_smoke``: without CUDA it says so and exits 1 (nothing half-run); with
``--device cpu`` it runs the same checks on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bilm.lstm import cpu_bf16_unit
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


def test_gpu_smoke_runs_the_same_checks_on_the_cpu(tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    # bf16 where the CPU has a bf16 unit; without one training refuses bf16 (emulated, slower
    # than fp32: tests/bilm/test_devices.py), so the same checks run in fp32 there
    precision = "bf16" if cpu_bf16_unit() else "fp32"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "gpu_smoke.py"),
            *("--device", "cpu", "--precision", precision, "--no-bilm", "--configs", "mini"),
            *("--tasks", "sst5", "--examples", "8", "--json", str(report_path)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    assert report["embed"]["max_abs_dev"] == 0.0  # cpu against cpu
    run = report["tasks"]["sst5/mini"]
    assert run["status"] == "ok" and run["counts"]["train"] == 8
    assert 0.0 <= run["value"] <= 1.0 and run["metric"] == "dev_accuracy"
    assert "sst5   mini   ok" in done.stdout
