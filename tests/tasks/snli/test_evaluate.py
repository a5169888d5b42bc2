"""The accuracy evaluator's command line and the prediction writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.snli.evaluate import main, write_predictions
from tests.tasks.helpers import assert_cli_error, run_cli, write_lines
from tests.tasks.snli.test_data import record


def evaluate(
    tmp_path: Path, predictions: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict, str]:
    data = write_lines(
        tmp_path / "data.jsonl",
        [
            record("p1", "entailment"),
            record("p2", "-"),
            record("p3", "neutral"),
            record("p4", "contradiction"),
        ],
    )
    pred = write_lines(tmp_path / "pred.jsonl", predictions)
    return run_cli(main, [str(data), str(pred)], capsys)


def test_cli_accuracy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "written.jsonl"
    assert (
        write_predictions(path, {"p1": "entailment", "p2": "neutral", "p3": "contradiction"}) == 3
    )
    status, report, _ = evaluate(tmp_path, path.read_text().splitlines(), capsys)
    assert status == 0
    assert report == {
        "accuracy": pytest.approx(100 / 3),
        "correct": 1,
        "total": 3,
        "missing": 1,
        "missing_ids": ["p4"],
        "ignored_unlabeled": 1,
    }


@pytest.mark.parametrize(
    ("predictions", "line", "reason"),
    [
        ([json.dumps({"pairID": "p1", "label": "entailment"})] * 2, 2, "duplicate pairID"),
        ([json.dumps({"pairID": "p9", "label": "entailment"})], None, "not in"),
        ([json.dumps({"pairID": "p1", "label": "yes"})], 1, "unknown label"),
        (["{"], 1, "bad JSON"),
        ([json.dumps({"label": "neutral"})], 1, "pairID"),
    ],
)
def test_cli_prediction_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    predictions: list[str],
    line: int | None,
    reason: str,
) -> None:
    status, _, error = evaluate(tmp_path, predictions, capsys)
    assert_cli_error(status, error, "pred.jsonl", line, reason)


def test_writer_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown label"):
        write_predictions(tmp_path / "p.jsonl", [("p1", "maybe")])
    with pytest.raises(ValueError, match="duplicate"):
        write_predictions(tmp_path / "p.jsonl", [("p1", "neutral"), ("p1", "neutral")])
