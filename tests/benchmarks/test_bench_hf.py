"""``benchmarks/bench_hf.py`` runs end to end on a tiny random BERT (the figures are not checked,
only that each is measured and the cache size is what the layers need)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.hf_helpers import TINY_DIM, TINY_LAYERS, write_tiny_bert

pytest.importorskip("transformers", reason="the hf representation needs transformers (extra hf)")


def test_bench_hf_measures_speed_and_cache_size(tmp_path: Path) -> None:
    from benchmarks.bench_hf import main

    folder = write_tiny_bert(tmp_path / "bert")
    argv = ["--model", str(folder), "--sentences", "6", "--repeats", "1", "--devices", "cpu"]
    argv += ["--precision", "fp32", "--corpus", str(tmp_path / "absent.txt")]
    report = main([*argv, "--json", str(tmp_path / "bench.json")])
    assert "NER DEMO" in report["text"] and (tmp_path / "bench.json").is_file()
    (speed,) = report["speed"]
    assert speed["device"] == "cpu" and speed["tokens_per_s"] > 0
    values = (TINY_LAYERS + 1) * TINY_DIM  # per token
    assert values * 2 < report["cache_bytes_per_token"]["float16"] < values * 2 + 200
    assert values * 4 < report["cache_bytes_per_token"]["float32"] < values * 4 + 200
