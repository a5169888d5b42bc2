"""SNLI reader, accuracy evaluator and prediction writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.common.io import DataError
from tasks.snli.data import SnliReader, binary_parse_tokens, to_hf_dataset
from tasks.snli.evaluate import main, write_predictions
from tasks.snli.metric import accuracy
from tests.conftest import shared_path
from tests.tasks.helpers import assert_cli_error, assert_read_error, run_cli, write_lines


def record(pair_id: str, label: str, **extra: object) -> str:
    fields = {
        "gold_label": label,
        "sentence1": "A dog runs.",
        "sentence2": "An animal moves.",
        "pairID": pair_id,
        **extra,
    }
    return json.dumps(fields)


@pytest.mark.shared
def test_reader_on_real_format_sample() -> None:
    reader = SnliReader(shared_path("fixtures", "formats", "pair_classification", "snli.jsonl"))
    examples = list(reader)
    assert [e.label for e in examples] == ["neutral", "contradiction", "entailment"]
    first = examples[0]
    assert first.pair_id == "3416050480.jpg#4r1n"
    assert first.premise == "A person on a horse jumps over a broken down airplane."
    assert first.hypothesis_tokens == (
        "A",
        "person",
        "is",
        "training",
        "his",
        "horse",
        "for",
        "a",
        "competition",
        ".",
    )
    assert reader.stats.examples == 3 and not reader.stats.skipped


def test_dashes_are_dropped_and_counted(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "d.jsonl",
        [
            record("p1", "entailment", sentence1_binary_parse="( A ( dog runs ) )"),
            record("p2", "-"),
            "",  # blank lines are ignored
            record("p3", "neutral"),
        ],
    )
    reader = SnliReader(path)
    examples = list(reader)
    assert [e.pair_id for e in examples] == ["p1", "p3"]
    assert (
        examples[0].premise_tokens == ("A", "dog", "runs") and examples[0].hypothesis_tokens is None
    )
    assert reader.stats.as_dict() == {"examples": 2, "skipped": {"no gold label": 1}}
    assert reader.unlabeled_ids == ["p2"]
    dataset = to_hf_dataset(path)
    assert (
        dataset.num_rows == 2
        and dataset.features["label"].int2str(dataset[1]["label"]) == "neutral"
    )


def test_binary_parse_tokens() -> None:
    assert binary_parse_tokens("( ( A person ) ( ( is here ) . ) )") == (
        "A",
        "person",
        "is",
        "here",
        ".",
    )


GOOD = [record("p1", "entailment"), record("p2", "-")]
CORRUPTIONS = {
    "bad JSON": (GOOD + ['{"gold_label": "neutral", '], 3, "bad JSON"),
    "not an object": (GOOD + ['["neutral"]'], 3, "JSON object"),
    "unknown label": (GOOD + [record("p3", "Entailment")], 3, "unknown gold_label"),
    "missing sentence2": (
        GOOD + [json.dumps({"gold_label": "neutral", "sentence1": "a", "pairID": "p3"})],
        3,
        "sentence2",
    ),
    "missing pairID": (
        [json.dumps({"gold_label": "neutral", "sentence1": "a", "sentence2": "b"})],
        1,
        "pairID",
    ),
    "non-string sentence": (GOOD + [record("p3", "neutral", sentence1=7)], 3, "must be a string"),
    "duplicate pairID": (GOOD + [record("p1", "neutral")], 3, "duplicate pairID"),
    "truncated line": (GOOD + [record("p3", "neutral")[:-9]], 3, "bad JSON"),
    "huge integer": (GOOD + ['{"x": ' + "9" * 5000 + "}"], 3, ""),  # 3.11 int limit
    "bad binary parse": (
        GOOD + [record("p3", "neutral", sentence2_binary_parse=["a"])],
        3,
        "string",
    ),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_raises_located_data_error(tmp_path: Path, name: str) -> None:
    lines, line, reason = CORRUPTIONS[name]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    assert_read_error(lambda: SnliReader(path), line, reason)


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        (b"", None, "empty"),
        (b"\n\n", None, "no JSON"),
        (record("p", "neutral").encode() + b"\n\xc3(\n", 2, "UTF-8"),
    ],
)
def test_file_level_corruptions(
    tmp_path: Path, content: bytes, line: int | None, reason: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    assert_read_error(lambda: SnliReader(path), line, reason)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.sampled_from(
                [
                    '{"',
                    '"gold_label"',
                    '"pairID"',
                    '"sentence1"',
                    '"sentence2"',
                    ":",
                    ",",
                    '"neutral"',
                    '"-"',
                    "}",
                    "[",
                    "]",
                    "null",
                    "1",
                    "\n",
                ]
            ),
            max_size=30,
        ).map(lambda parts: "".join(parts).encode()),
        st.lists(st.sampled_from(GOOD + ["", "{}"]), max_size=4).map(
            lambda x: "\n".join(x).encode()
        ),
    )
)
def test_fuzz_reader_raises_only_data_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    try:
        for example in SnliReader(path):
            assert example.label in ("entailment", "neutral", "contradiction")
    except DataError:
        pass


# --- metric and evaluator ----------------------------------------------------------------------


def test_accuracy_counts_missing_as_wrong() -> None:
    result = accuracy(
        {"a": "neutral", "b": "entailment", "c": "contradiction"}, {"a": "neutral", "b": "neutral"}
    )
    assert (result.correct, result.total, result.missing) == (1, 3, ("c",))
    assert result.accuracy == pytest.approx(1 / 3)
    assert accuracy({}, {}).accuracy == 0.0


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
