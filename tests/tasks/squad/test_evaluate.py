"""SQuAD evaluator CLI: official output format, version warning, errors; prediction writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.squad.evaluate import main, read_predictions, write_predictions
from tests.tasks.helpers import run_module

QAS = [
    {"id": "a", "question": "?", "answers": [{"text": "red dog", "answer_start": 0}]},
    {"id": "b", "question": "?", "answers": [{"text": "blue", "answer_start": 0}]},
]


def dataset_file(tmp_path: Path, version: str | None = "1.1") -> Path:
    value: dict[str, object] = {
        "data": [{"title": "T", "paragraphs": [{"context": "c", "qas": QAS}]}]
    }
    if version is not None:
        value["version"] = version
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_cli_prints_official_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    predictions = tmp_path / "pred.json"
    assert write_predictions(predictions, {"a": "the big red dog", "b": "Blue."}) == 2
    assert main([str(dataset_file(tmp_path)), str(predictions)]) == 0
    captured = capsys.readouterr()
    assert captured.out == json.dumps({"exact_match": 50.0, "f1": 90.0}) + "\n"  # a: F1 0.8
    assert captured.err == ""


def test_cli_warns_on_version_and_unanswered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    predictions = tmp_path / "pred.json"
    write_predictions(predictions, {"b": "blue"})
    assert main([str(dataset_file(tmp_path, "2.0")), str(predictions)]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "Evaluation expects v-1.1, but got dataset with v-2.0\n"
        "Unanswered question a will receive score 0.\n"
    )
    assert json.loads(captured.out) == {"exact_match": 50.0, "f1": 50.0}
    main([str(dataset_file(tmp_path, None)), str(predictions)])
    assert "got dataset with v-None" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"a": 1}', "prediction for 'a' is not a string"),
        ('["a"]', "expected a JSON object"),
        ('{"a": "x",\n', "pred.json:2: bad JSON"),
    ],
)
def test_cli_bad_predictions_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    predictions = tmp_path / "pred.json"
    predictions.write_text(content, encoding="utf-8")
    assert main([str(dataset_file(tmp_path)), str(predictions)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_writer_round_trip_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_predictions(path, {"q": "naïve “quote”"})
    assert read_predictions(path) == {"q": "naïve “quote”"}
    with pytest.raises(ValueError, match="str to str"):
        write_predictions(path, {"q": 1})  # type: ignore[dict-item]


def test_module_entry_point(tmp_path: Path) -> None:
    predictions = tmp_path / "pred.json"
    write_predictions(predictions, {"a": "red dog", "b": "blue"})
    stdout = run_module("tasks.squad.evaluate", str(dataset_file(tmp_path)), str(predictions))
    assert stdout == '{"exact_match": 100.0, "f1": 100.0}\n'
