"""Read statistics: the skipped share (configured filters exempt), merging, the refusal of
empty or mostly skipped splits, and the SQuAD reader's counts with their file (every task's
configuration check without data: tests/contract/test_tasks.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats, require_usable
from tasks.squad.data import load_squad


def test_skipped_share_counts_only_reasons_that_are_not_exempt() -> None:
    stats = ReadStats(6)
    stats.skip("bad offset")
    stats.skip("bad offset")
    for _ in range(10):
        stats.skip("short phrase", exempt=True)
    assert stats.counted_skips == 2 and stats.skipped_share() == pytest.approx(2 / 8)
    assert stats.describe() == "short phrase 10, bad offset 2"
    assert ReadStats().skipped_share() == 0.0 and ReadStats().describe() == "none"


def test_merge_and_json_round_trip() -> None:
    a = ReadStats(2, Counter({"x": 1}), source="a.json")
    b = ReadStats(3, Counter({"x": 1, "y": 2}), source="b.json", exempt={"y"})
    a.merge(b)
    a.merge(ReadStats(source="b.json"))  # a source is listed once
    assert (a.examples, dict(a.skipped), a.source, a.exempt) == (
        5,
        {"x": 2, "y": 2},
        "a.json, b.json",
        {"y"},
    )
    assert ReadStats.from_dict(json.loads(json.dumps(a.as_dict()))) == a
    assert ReadStats(1).as_dict() == {"examples": 1, "skipped": {}}  # unchanged shape


def test_require_usable_names_the_file_and_the_counts() -> None:
    stats = ReadStats(0, Counter({"answer_offset_mismatch": 1}), source="d/train.json")
    with pytest.raises(DataError, match=r"^d/train\.json: the train split has no usable exampl"):
        require_usable("train", 0, stats, 0.5)
    with pytest.raises(DataError, match="<dev split>: the dev split has no usable example"):
        require_usable("dev", 0, None, 0.5)
    stats = ReadStats(1, Counter({"bad": 3}), source="d/dev.json")
    with pytest.raises(DataError, match=r"3 of 4 dev examples were skipped \(75\.0%.*bad 3"):
        require_usable("dev", 1, stats, 0.5)
    require_usable("dev", 1, stats, 0.75)  # at the maximum: accepted


def test_squad_reader_counts_reach_the_caller_with_the_file(tmp_path: Path) -> None:
    context = "The cat sat on the mat."
    qas = [
        {"id": "a", "question": "Where?", "answers": [{"text": "on the mat", "answer_start": 12}]},
        {"id": "b", "question": "Who?", "answers": [{"text": "dog", "answer_start": 0}]},
    ]
    doc = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": qas}]}]}
    (tmp_path / "dev-v1.1.json").write_text(json.dumps(doc), encoding="utf-8")
    stats = ReadStats()
    examples = load_squad("dev", tmp_path, stats=stats)
    assert [e.qid for e in examples] == ["a"]
    assert stats.examples == 1 and stats.source == str(tmp_path / "dev-v1.1.json")
    assert stats.skipped == {"answer_offset_mismatch": 1, "no_usable_answer": 1}
    assert stats.skipped_share() == 0.5  # the per-answer reason is exempt, the question is not


def test_answers_dropped_from_kept_questions_are_counted_apart(tmp_path: Path) -> None:
    """One unusable answer of a question that is kept is not a skipped question: the summary
    line counts it as a dropped answer (``61 kept, 1 skipped`` read as a contradiction)."""
    context = "The cat sat on the mat."
    qas = [
        {
            "id": "a",
            "question": "Where?",
            "answers": [
                {"text": "on the mat", "answer_start": 12},
                {"text": "on a rug", "answer_start": 12},  # not in the context: dropped
            ],
        },
    ]
    doc = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": qas}]}]}
    (tmp_path / "dev-v1.1.json").write_text(json.dumps(doc), encoding="utf-8")
    stats = ReadStats()
    assert [e.qid for e in load_squad("dev", tmp_path, stats=stats)] == ["a"]
    line = stats.summary("dev", where=False)
    assert line == "dev: 1 kept, 0 skipped, 1 answer dropped (answer_offset_mismatch 1)"
    assert ReadStats.from_dict(stats.as_dict()).summary("dev", where=False) == line
    stats.skip("no_usable_answer")
    stats.skip("answer_offset_mismatch", part="answer")
    assert stats.summary("dev", where=False) == (
        "dev: 1 kept, 1 skipped (no_usable_answer 1), 2 answers dropped (answer_offset_mismatch 2)"
    )
