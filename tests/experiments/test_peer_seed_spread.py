"""``scripts/peer_seed_spread.py``: recall per gold label, the 3-vs-3 variance-ratio test, and the
figures it prints from the committed SNLI and BCN peer records."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts/peer_seed_spread.py"
_spec = importlib.util.spec_from_file_location("peer_seed_spread", SCRIPT)
assert _spec is not None and _spec.loader is not None
spread = importlib.util.module_from_spec(_spec)
sys.modules["peer_seed_spread"] = spread
_spec.loader.exec_module(spread)


def test_recall_by_label() -> None:
    gold = {"a": "entailment", "b": "entailment", "c": "neutral", "d": "contradiction"}
    recall = spread.recall_by_label(["a", "b", "c", "d"], [1.0, 0.0, 1.0, 0.0], gold)
    assert recall == {"entailment": 0.5, "neutral": 1.0, "contradiction": 0.0}
    with pytest.raises(KeyError):
        spread.recall_by_label(["x"], [1.0], gold)


def test_f_test_3v3_matches_simulation() -> None:
    """The closed form against the share of simulated normal 3-vs-3 pairs at least as uneven."""
    assert spread.f_test_3v3(1.0, 1.0) == 1.0
    assert spread.f_test_3v3(3.0**0.5, 1.0) == pytest.approx(0.5)
    rng = random.Random(0)

    def sd3() -> float:
        values = [rng.gauss(0.0, 1.0) for _ in range(3)]
        mean = sum(values) / 3
        return (sum((v - mean) ** 2 for v in values) / 2) ** 0.5

    ratios = [(sd3() / sd3()) ** 2 for _ in range(20000)]
    f = 4.0
    share = sum(r > f or r < 1 / f for r in ratios) / len(ratios)
    assert share == pytest.approx(spread.f_test_3v3(2.0, 1.0), abs=0.02)


def test_committed_records(capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline row's figures the SNLI README quotes, from results/peer."""
    assert spread.main(["--task", "snli", "--out", str(REPO / "results/peer")]) == 0
    out = capsys.readouterr().out
    assert "project   seed 2  epoch 5  acc  52.9" in out
    assert "mean over epochs 2–5: 4.2  4.1" in out
    assert "two-sided p 0.070" in out


def test_sentence_polarity_records(capsys: pytest.CaptureFixture[str]) -> None:
    """BCN on sentence polarity (``../shared``): its labels read by the task's own reader."""
    from experiments.data.real_sets import missing_folders

    if missing_folders(["shared:dev/sentence_polarity"]):
        pytest.skip("../shared/data/dev/sentence_polarity is absent")
    argv = ["--task", "sst5", "--data", "shared:dev/sentence_polarity", "--epochs", "3"]
    assert spread.main([*argv, "--batch-size", "100", "--out", str(REPO / "results/peer")]) == 0
    out = capsys.readouterr().out
    assert "project   seed 0  epoch 3  acc  71.3  neg  90.2  pos  52.3" in out
