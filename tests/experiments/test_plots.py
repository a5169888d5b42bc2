"""Plots: the data functions (pure) and the PNGs (skipped without matplotlib)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from experiments.plots import (
    layer_weights,
    learning_curves,
    plot_layer_weights,
    plot_learning_curves,
)
from tests.experiments.helpers import make_record, make_spec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def records_with_weights() -> list:
    out = []
    for seed, weights in enumerate(([0.2, 0.3, 0.5], [0.4, 0.3, 0.3])):
        record = make_record(make_spec(seed=seed, sites=("input", "output")), 0.6 + seed / 10)
        log = (*record.log, {"epoch": 3, "layer_weights": {"input": weights, "output": [1, 0, 0]}})
        out.append(dataclasses.replace(record, log=log))
    return out


def test_layer_weights_average_over_runs() -> None:
    stats = layer_weights(records_with_weights())
    assert list(stats) == ["input", "output"]
    assert stats["input"].mean == pytest.approx((0.3, 0.3, 0.4))
    assert stats["input"].std == pytest.approx((2**0.5 / 10, 0.0, 2**0.5 / 10))
    assert stats["output"].n == 2 and stats["output"].mean == (1.0, 0.0, 0.0)


def test_layer_weights_reject_mismatched_layers() -> None:
    a, b = records_with_weights()
    b = dataclasses.replace(b, log=({"layer_weights": {"input": [0.5, 0.5]}},))
    with pytest.raises(ValueError, match="numbers of layers"):
        layer_weights([a, b])


def test_learning_curves() -> None:
    curves = learning_curves(records_with_weights(), "dev_accuracy", scale=100)
    assert len(curves) == 2 and curves[0].x == (1.0, 2.0)
    assert curves[1].y == pytest.approx((60.0, 70.0))
    assert curves[0].label.startswith("snli elmo all λ=0.001 input+output s0 (")
    assert learning_curves(records_with_weights(), "dev_f1") == []


def test_pngs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    records = records_with_weights()
    weights = plot_layer_weights(records, tmp_path / "w" / "weights.png", title="SNLI")
    curves = plot_learning_curves(records, tmp_path / "curves.png", "dev_accuracy", scale=100)
    for path in (weights, curves):
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, path
    with pytest.raises(ValueError, match="no run"):
        plot_learning_curves(records, tmp_path / "none.png", "dev_f1")
    with pytest.raises(ValueError, match="no run"):
        plot_layer_weights([], tmp_path / "none.png")
