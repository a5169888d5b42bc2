"""Dead runs (experiments/run/health.py): the rules on logs, the loop's hooks (per-evaluation
gradient norms and distinct predictions, one warning line, the record's flag and reasons) on the
toy task, and the tables' mark, footnote and ``exclude_dead``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from experiments.report.render import Row, RunsColumn, TableSpec, compute_cells, render
from experiments.run import runner
from experiments.run.health import (
    DEAD_KEY,
    DEAD_MARK,
    HEALTH_FILE,
    diagnose,
    health_json,
    prediction_values,
    record_reasons,
)
from experiments.run.runner import RunOptions, train
from experiments.run.spec import RunSpec
from experiments.run.store import RunRecord
from tasks.core import MetricSpec
from tests.experiments import toy_task
from tests.experiments.helpers import PROVENANCE, make_spec
from tests.experiments.toy_task import registered

ACC = MetricSpec("dev_accuracy", scale=100, decimals=1)


# ------------------------------------------------------------------------------- the rules
@pytest.mark.parametrize(
    ("predictions", "count"),
    [
        ([1, 1, 1], 1),
        ({0: 1, 1: 0, 2: 1}, 2),  # a mapping: its values, not its ids
        ([["O", "O"], ["O", "O", "O"]], 1),  # tags of sentences of any length
        ([["O", "B-PER"], ["O"]], 2),
        ({("d", 0): (), ("e", 0): ()}, 0),  # no coreference cluster anywhere: nothing predicted
        ({("d", 0): (((1, 2), (5, 6)),)}, 4),  # span offsets
        ({"q1": "Paris", "q2": "Paris"}, 1),  # answer strings are atoms
        (torch.tensor([[2, 2], [2, 2]]), 1),
    ],
)
def test_prediction_values_counts_distinct_atoms(predictions: Any, count: int) -> None:
    assert prediction_values(predictions) == count


def line(epoch: int, acc: float, values: int = 2, grad: float | None = 1.0) -> dict[str, Any]:
    return {
        "epoch": epoch,
        "step": 10 * epoch,
        "dev_accuracy": acc,
        "dev_prediction_values": values,
        "grad_norm_mean": grad,
    }


def test_a_learning_run_is_healthy() -> None:
    log = [line(1, 0.6), line(2, 0.7), line(3, 0.65)]
    assert not diagnose(log, "accuracy", selected_step=20).dead


def test_constant_predictions_at_the_selected_evaluation() -> None:
    log = [line(1, 0.5, values=1), line(2, 0.7), line(3, 0.6)]
    assert not diagnose(log, "accuracy", selected_step=20).dead  # recovered: selected epoch 2
    verdict = diagnose(log, "accuracy", selected_step=10)
    assert verdict.dead and "constant predictions" in verdict.reasons[0]
    assert "epoch 1" in verdict.reasons[0]
    nothing = diagnose([line(1, 0.0, values=0)], "accuracy", selected_step=10)
    assert "nothing predicted" in nothing.reasons[0]


def test_a_zero_metric_where_higher_is_better_counts_as_constant() -> None:
    log = [{"epoch": 1, "step": 5, "dev_f1": 0.0, "dev_prediction_values": 2}]
    assert diagnose(log, "f1", True, selected_step=5).dead
    assert not diagnose(log, "f1", False, selected_step=5).dead  # e.g. a perplexity
    assert not diagnose(log, "f1", True, selected_step=None).dead


def test_zero_gradients_over_one_interval() -> None:
    log = [line(1, 0.6), line(2, 0.7, grad=0.0), line(3, 0.8)]
    verdict = diagnose(log, "accuracy", selected_step=30)
    assert verdict.dead and verdict.reasons[0].startswith("zero gradients")
    assert "epoch 2" in verdict.reasons[0]
    no_steps = [line(1, 0.6, grad=None), line(2, 0.7)]  # an interval without a step
    assert not diagnose(no_steps, "accuracy", selected_step=20).dead


def test_a_flat_metric_needs_three_evaluations() -> None:
    assert not diagnose([line(1, 0.5), line(2, 0.5)], "accuracy", selected_step=10).dead
    verdict = diagnose([line(e, 0.5) for e in (1, 2, 3)], "accuracy", selected_step=10)
    assert verdict.dead and "flat dev metric" in verdict.reasons[0]
    assert "3 evaluations" in verdict.reasons[0]


def test_record_reasons_read_the_attachment_and_older_records_are_not_dead() -> None:
    text = health_json(diagnose([line(e, 0.5) for e in (1, 2, 3)], "accuracy"))
    assert (record_reasons("r", {DEAD_KEY: 1.0}, lambda rid, name: text) or "").startswith("flat")
    assert record_reasons("r", {DEAD_KEY: 1.0}) == "reasons not read"
    assert record_reasons("r", {DEAD_KEY: 0.0}, lambda rid, name: text) is None
    assert record_reasons("r", {"dev_accuracy": 0.5}) is None  # written before the checks


# --------------------------------------------------------------------------- the loop's hooks
@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    with registered(tmp_path / "toy-demo") as task:
        yield task


def toy_spec(*overrides: str) -> RunSpec:
    return RunSpec(
        task="toy",
        task_version=1,
        representation="none",
        sites=(),
        dropout=0.0,
        seed=3,
        overrides=overrides,
    )


def opts(work: Path) -> RunOptions:
    return RunOptions(work_root=work, progress=False)


def test_a_learning_toy_run_is_not_flagged(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = train(toy_spec(), opts(tmp_path))
    assert outcome.metrics["dev_accuracy"] > 0.75 and not outcome.health.dead
    assert all(r["grad_norm_mean"] > 0 and r["dev_prediction_values"] == 2 for r in outcome.log)
    assert all(r["grad_norm_max"] >= r["grad_norm_mean"] for r in outcome.log)
    assert "looks dead" not in capsys.readouterr().err


def test_a_toy_run_with_zero_gradients_is_flagged(
    toy: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = toy_task.ToyModel.forward

    def detached(self: toy_task.ToyModel, batch: toy_task.ToyBatch) -> toy_task.ToyOutput:
        out = plain(self, batch)
        return toy_task.ToyOutput(out.loss * 0.0, out.predictions)  # no gradient anywhere

    monkeypatch.setattr(toy_task.ToyModel, "forward", detached)
    record = runner.run_spec(toy_spec(), opts(tmp_path))
    assert all(r["grad_norm_mean"] == 0.0 for r in record.log)
    assert record.metrics[DEAD_KEY] == 1.0
    stored = json.loads(record.attachments[HEALTH_FILE])
    assert stored["dead"] and any(r.startswith("zero gradients") for r in stored["reasons"])
    assert any(r.startswith("flat dev metric") for r in stored["reasons"])  # nothing moved
    warnings = [t for t in capsys.readouterr().err.splitlines() if "looks dead" in t]
    assert len(warnings) == 1 and toy_spec().run_id in warnings[0]


def test_a_vanishing_learning_rate_is_flagged_flat(toy: object, tmp_path: Path) -> None:
    outcome = train(toy_spec("train.optimizer.lr=1e-12"), opts(tmp_path))  # lr 0 is refused
    assert outcome.health.dead
    assert [r for r in outcome.health.reasons if r.startswith("flat dev metric")]
    assert all(r["grad_norm_mean"] > 0 for r in outcome.log)  # gradients flow, nothing moves


def test_a_healthy_record_says_so(toy: object, tmp_path: Path) -> None:
    record = runner.run_spec(toy_spec("train.epochs=2"), opts(tmp_path))
    assert record.metrics[DEAD_KEY] == 0.0
    assert json.loads(record.attachments[HEALTH_FILE]) == {"dead": False, "reasons": []}


# ------------------------------------------------------------------------------- the tables
def dead_table() -> tuple[TableSpec, list[RunRecord], dict[str, str]]:
    """One row, ELMo with seeds 0–2; seed 1 is dead (accuracy 0.5)."""
    base = make_spec("snli")
    table = TableSpec(
        name="t",
        title="T",
        rows=(Row("SNLI", base, ACC),),
        columns=(RunsColumn("ELMo"),),
        seeds=(0, 1, 2),
    )
    records, files = [], {}
    for seed, value in ((0, 0.8), (1, 0.5), (2, 0.9)):
        spec = dataclasses.replace(base, seed=seed)
        verdict = diagnose([line(e, 0.5, values=1) for e in (1, 2, 3)], "accuracy", True, 10)
        dead = seed == 1
        metrics = {"dev_accuracy": value, DEAD_KEY: float(dead)}
        records.append(RunRecord(spec=spec, metrics=metrics, provenance=PROVENANCE))
        if dead:
            files[spec.run_id] = health_json(verdict)
    return table, records, files


def test_render_marks_dead_runs_and_excludes_them_only_when_asked() -> None:
    table, records, files = dead_table()
    dead_id = records[1].run_id

    def attachments(run_id: str, name: str) -> str | None:
        return files.get(run_id) if name == HEALTH_FILE else None

    text = render(table, records, {}, attachments=attachments)
    cell = next(t for t in text.splitlines() if t.startswith("| SNLI"))
    assert "73.3" in cell and DEAD_MARK in cell and "(n=3)" in cell  # included by default
    note = " ".join(text.split(f"{DEAD_MARK} rests on dead runs", 1)[1].split())  # numbered
    assert dead_id in note and "constant predictions" in note and "included" in note
    excluded = render(table, records, {}, attachments=attachments, exclude_dead=True)
    cell = next(t for t in excluded.splitlines() if t.startswith("| SNLI"))
    assert "85.0" in cell and DEAD_MARK in cell and "(n=2)" in cell
    assert "left out of the means" in excluded and dead_id in excluded
    grid = compute_cells(table, records, {}, exclude_dead=True)
    assert grid[0][0].dead == (dead_id,) and dead_id not in grid[0][0].runs
    csv_text = render(table, records, {}, fmt="csv")
    assert csv_text.splitlines()[1].endswith(dead_id)


def test_render_without_dead_runs_is_unchanged() -> None:
    table, records, _ = dead_table()
    healthy = [dataclasses.replace(r, metrics={"dev_accuracy": 0.7}) for r in records]
    text = render(table, healthy, {})
    assert DEAD_MARK not in text
