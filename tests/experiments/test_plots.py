"""Plots: the data functions (pure) and the PNGs (skipped without matplotlib)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from experiments.report.plots import (
    Panel,
    layer_weights,
    learning_bands,
    learning_curves,
    plot_layer_weights,
    plot_layer_weights_figure,
    plot_learning_curves,
    plot_learning_panels,
    plot_sample_efficiency,
    sample_efficiency_curves,
    series_label,
)
from experiments.run.spec import MixSpec, baseline_of
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


def efficiency_records() -> list:
    """Baseline and ELMo runs at 1 % and all of the training set, two seeds each, plus runs
    the curves must ignore (another task; no metric)."""
    out = []
    for fraction in (0.01, None):
        for seed in (0, 1):
            elmo = make_spec(seed=seed, train_fraction=fraction)
            value = (0.5 if fraction else 0.8) + seed / 10
            for spec, bonus in ((baseline_of(elmo), 0.0), (elmo, 0.05)):
                record = make_record(spec)
                out.append(dataclasses.replace(record, metrics={"dev_accuracy": value + bonus}))
    out.append(make_record(make_spec(task="squad", train_fraction=0.01)))
    out.append(make_record(make_spec(seed=7, train_fraction=0.5)))  # metrics lack dev_accuracy
    return out


def test_sample_efficiency_curves() -> None:
    curves = sample_efficiency_curves(efficiency_records(), "snli", "dev_accuracy", scale=100)
    assert list(curves) == ["Baseline", "elmo"]
    (low, full) = curves["Baseline"]
    assert low == pytest.approx((0.01, 55.0, 100 * 0.1 / 2**0.5, 2))
    assert full.train_fraction == 1.0 and full.mean == pytest.approx(85.0) and full.n == 2
    assert [p.mean for p in curves["elmo"]] == pytest.approx([60.0, 90.0])
    assert sample_efficiency_curves(efficiency_records(), "snli", "dev_f1") == {}


def test_figure_pngs(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    curves = sample_efficiency_curves(efficiency_records(), "snli", "dev_accuracy", scale=100)
    single = {"ELMo": [(0.001, 40.0, 0.0, 1), (1.0, 80.0, 0.0, 1)]}  # plain tuples work too
    weights = {
        "SQuAD": {"input": [0.1, 0.5, 0.4], "output": [0.7, 0.2, 0.1]},
        "SRL": {"input": [0.2, 0.3, 0.5]},  # no output site: blank cells
        "Tiny": {"input": [0.5, 0.5]},  # fewer layers
    }
    paths = [
        plot_sample_efficiency(curves, tmp_path / "f1" / "snli.png", "SNLI", "accuracy"),
        plot_sample_efficiency(single, tmp_path / "single.png"),
        plot_layer_weights_figure(weights, tmp_path / "f2.png", title="Figure 2"),
    ]
    for path in paths:
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000, path
    with pytest.raises(ValueError, match="no layer weights"):
        plot_layer_weights_figure({"SQuAD": {}}, tmp_path / "none.png")
    with pytest.raises(ValueError, match="no sample-efficiency points"):
        plot_sample_efficiency({"ELMo": []}, tmp_path / "none.png")


def test_learning_bands_average_each_configuration_over_its_seeds() -> None:
    """One band per configuration (not per run): the mean over the seeds that logged an epoch
    and their range, labelled in words (or by the caller's labels, e.g. a table's columns)."""
    records = records_with_weights()  # two seeds of one ELMo configuration: 50/60, 60/70
    baseline = make_record(baseline_of(make_spec(seed=0)), 0.4)
    (elmo, base) = learning_bands([*records, baseline], "dev_accuracy", scale=100)
    assert (elmo.label, elmo.n, base.label, base.n) == (
        "ELMo, λ=0.001, input+output",
        2,
        "Baseline",
        1,
    )
    assert elmo.x == (1.0, 2.0) and elmo.mean == pytest.approx((55.0, 65.0))
    assert elmo.low == pytest.approx((50.0, 60.0)) and elmo.high == pytest.approx((60.0, 70.0))
    named = {records[0].run_id: "ELMo (seed 0 only)"}
    assert [b.label for b in learning_bands(records, "dev_accuracy", named)] == [
        "ELMo (seed 0 only)",
        "ELMo, λ=0.001, input+output",
    ]
    carry = make_spec(mix=MixSpec(mode="last"), state="carry")
    assert series_label(carry) == "ELMo, last layer only, input, state carry"


def test_learning_panels_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    records = [*records_with_weights(), make_record(baseline_of(make_spec()), 0.4)]
    bands = tuple(learning_bands(records, "dev_accuracy", scale=100))
    panels = [Panel("SNLI on DEMO data: dev accuracy", bands, "dev accuracy")] * 3
    path = plot_learning_panels(panels, tmp_path / "panels.png", "SNLI: dev accuracy per epoch")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000
    with pytest.raises(ValueError, match="no learning curve"):
        plot_learning_panels([Panel("empty", (), "y")], tmp_path / "none.png")
