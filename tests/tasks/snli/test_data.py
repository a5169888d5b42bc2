"""The SNLI reader: official and dashed labels, binary parses, located errors and fuzzing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.common.io import DataError
from tasks.snli.data import SnliReader, binary_parse_tokens, to_hf_dataset
from tests.conftest import shared_path
from tests.tasks.helpers import assert_read_error, write_lines


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
