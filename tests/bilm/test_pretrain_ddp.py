"""Data-parallel pretraining (torchrun, 2 CPU processes, gloo) matches one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bilm.pretrain import CHECKPOINT_NAME, load_training_checkpoint
from tests.bilm.test_pretrain import corpus
from tests.conftest import REPO


def run(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_two_gloo_processes_match_single_process(tmp_path: Path) -> None:
    text = corpus(tmp_path / "train.txt", n=120)
    config = tmp_path / "config.json"
    # dropout off: each rank has its own dropout RNG stream, the single process has one
    config.write_text(json.dumps({"base": "tiny", "dropout": 0.0, "max_steps": 8}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    common = ["--train", str(text), "--config", str(config), "--quiet"]
    run([sys.executable, "-m", "bilm", "pretrain", "--out", str(tmp_path / "one"), *common], env)
    run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29517",
            "-m",
            "bilm",
            "pretrain",
            "--out",
            str(tmp_path / "two"),
            *common,
        ],
        env,
    )
    one = load_training_checkpoint(tmp_path / "one" / CHECKPOINT_NAME)
    two = load_training_checkpoint(tmp_path / "two" / CHECKPOINT_NAME)
    assert one["step"] == two["step"] == 8 and one["tokens"] == two["tokens"]
    for name, value in one["model"].items():
        torch.testing.assert_close(two["model"][name], value, atol=2e-5, rtol=1e-4, msg=name)
