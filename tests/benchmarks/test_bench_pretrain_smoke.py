"""Smoke test of benchmarks/bench_pretrain.py: its hidden ``--tiny`` path, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_pretrain import cnn_macs_per_token, lstm_macs_per_cell_step, step_flops
from bilm.options import BiLMOptions
from tests.conftest import REPO, shared_path

SCRIPT = REPO / "benchmarks" / "bench_pretrain.py"


def test_flop_model_of_the_published_architecture() -> None:
    options = BiLMOptions()  # 2 × 4096/512, 2048 filters, 2 highway (Peters et al. 2018 §3.4)
    assert lstm_macs_per_cell_step(options) == 2 * 512 * 16384 + 4096 * 512
    assert 8.5e6 < cnn_macs_per_token(options.char_cnn, 512) - 2 * 2 * 2048**2 - 2048 * 512 < 9e6
    cost = step_flops(options, 128, 20, 10_000, 8192, (1000, 900))
    assert cost["lstm_macs"] == 4 * 128 * 20 * lstm_macs_per_cell_step(options)
    assert cost["softmax_macs"] == 2 * 128 * 20 * 8193 * 512
    full = step_flops(options, 128, 20, 10_000, None, (1000, 900))
    assert full["softmax_macs"] == 2 * 128 * 20 * 10_000 * 512
    assert cost["train_flop"] == 6 * (cost["cnn_macs"] + cost["lstm_macs"] + cost["softmax_macs"])


@pytest.mark.shared
def test_tiny_run_reports_throughput_and_perplexity(tmp_path: Path) -> None:
    corpus = shared_path("data", "corpus")
    out = tmp_path / "report.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [sys.executable, str(SCRIPT), "--tiny", "--threads", "1", "--corpus", str(corpus)]
    proc = subprocess.run(
        [*cmd, "--json", str(out)], capture_output=True, text=True, env=env, timeout=300, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    for needle in ("GEMM", "tokens/s", "FLOP per training step", "KN trigram", "biLM", "test"):
        assert needle in text, needle
    assert "state across sentences" in text
    report = json.loads(out.read_text(encoding="utf-8"))
    tiny = report["training"]["tiny"]
    assert tiny["tokens_per_s"] > 0 and len(tiny["step_s"]) == 3
    assert 0 < tiny["roofline_fraction"] < 1.5
    for split in ("valid", "test"):
        entry = report["perplexity"]["splits"][split]
        for model in ("bilm", "kn_trigram"):
            ppl = entry[model]
            assert 1 < ppl["forward"] < float("inf") and 1 < ppl["backward"] < float("inf")
            assert 0 < ppl["tokens"] <= entry["targets_in_file"]
        assert entry["kn_trigram"]["tokens"] == entry["targets_in_file"]
