"""Repairs are counted where the user looks: a SQuAD answer whose ``answer_start`` is off is
kept and counted in :class:`ReadStats` with its reason (statistics written before repairs were
counted still load, as no repairs); the run's line, ``read-stats.json`` and the record:
tests/experiments/test_read_repairs_run.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tasks.common.io import ReadStats
from tasks.squad.data import REPAIRED, SquadReader, load_squad

CONTEXT = "The cat sat on the mat."


def write_squad(folder: Path, name: str) -> Path:
    """A SQuAD v1.1 file of two questions, the first answer's ``answer_start`` off by 2."""
    qas = [
        {"id": "a", "question": "Where?", "answers": [{"text": "on the mat", "answer_start": 14}]},
        {"id": "b", "question": "Who?", "answers": [{"text": "The cat", "answer_start": 0}]},
    ]
    doc = {"version": "1.1", "data": [{"paragraphs": [{"context": CONTEXT, "qas": qas}]}]}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_an_answer_start_off_by_two_is_kept_and_counted_with_its_reason(tmp_path: Path) -> None:
    path = write_squad(tmp_path, "train-v1.1.json")
    stats = ReadStats()
    examples = load_squad("train", tmp_path, stats=stats)
    assert [e.qid for e in examples] == ["a", "b"]
    assert examples[0].answers[0].start == 12  # moved onto its text
    assert stats.repaired == {REPAIRED: 1} and not stats.skipped and stats.examples == 2
    assert stats.summary("train") == (
        f"train: 2 kept, 0 skipped, 1 repaired ({REPAIRED} 1); from {path}"
    )
    reader = SquadReader(path)
    list(reader)
    assert reader.repairs == reader.stats.repaired == {REPAIRED: 1}


def test_repairs_round_trip_and_old_statistics_read_as_none() -> None:
    stats = ReadStats(3, Counter({"x": 1}), source="a.json")
    stats.repair("offset_repaired")
    stats.repair("offset_repaired")
    other = ReadStats(1, source="b.json")
    other.repair("spaces trimmed")
    stats.merge(other)
    assert stats.repaired == {"offset_repaired": 2, "spaces trimmed": 1}
    assert stats.describe_repairs() == "offset_repaired 2, spaces trimmed 1"
    data = json.loads(json.dumps(stats.as_dict()))
    assert data["repaired"] == {"offset_repaired": 2, "spaces trimmed": 1}
    assert ReadStats.from_dict(data) == stats
    # a read-stats.json written before repairs were counted: same shape out, no repairs in
    old = {"examples": 1, "skipped": {"bad": 2}, "source": "s"}
    assert ReadStats.from_dict(old).repaired == Counter()
    assert ReadStats.from_dict(old).as_dict() == old
    assert ReadStats(1).as_dict() == {"examples": 1, "skipped": {}}
    assert ReadStats(1).summary("dev", where=False) == "dev: 1 kept, 0 skipped"
