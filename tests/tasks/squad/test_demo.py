"""DEMO dataset generator: determinism, labelling, valid offsets, readable with zero skips."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tasks.squad import demo
from tasks.squad.data import SquadReader


def questions(document: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    return [
        (paragraph["context"], qa)
        for article in document["data"]  # type: ignore[attr-defined]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def test_deterministic_by_seed() -> None:
    assert demo.generate(7, 40, 20) == demo.generate(7, 40, 20)
    assert demo.generate(7, 40, 20) != demo.generate(8, 40, 20)


def test_labelled_and_offsets_slice_answers() -> None:
    train, dev = demo.generate(0, 120, 60)
    for document, size, split in ((train, 120, "train"), (dev, 60, "dev")):
        assert document["version"] == "1.1"
        assert "NOT SQuAD" in document["demo_notice"]  # type: ignore[operator]
        assert "tasks/squad/demo.py" in document["demo_notice"]  # type: ignore[operator]
        assert all(a["title"].startswith("DEMO") for a in document["data"])  # type: ignore[attr-defined]
        items = questions(document)
        assert len(items) == size
        assert len({qa["id"] for _, qa in items}) == size
        for context, qa in items:
            answers = qa["answers"]
            assert answers and (split == "dev" or len(answers) == 1)  # type: ignore[arg-type]
            for answer in answers:  # type: ignore[attr-defined]
                start = answer["answer_start"]
                assert context[start : start + len(answer["text"])] == answer["text"]


def test_dev_has_unseen_entities_and_questions_need_reading() -> None:
    train, dev = demo.generate(0, 300, 100)
    names = re.compile(r"\b[A-Z][a-z]+\b")
    seen = {w for context, _ in questions(train) for w in names.findall(context)}
    dev_names = {w for context, _ in questions(dev) for w in names.findall(context)}
    assert len(dev_names - seen) > 20
    # distractors: each paragraph names several towns and years besides the answer
    context, _ = questions(train)[0]
    assert len(re.findall(r"\b1[4-9]\d\d\b", context)) >= 2


def test_cli_writes_files_the_reader_accepts(tmp_path: Path) -> None:
    assert demo.main(["--out", str(tmp_path), "--seed", "3", "--train", "50", "--dev", "25"]) == 0
    for name, size in (("train-v1.1.json", 50), ("dev-v1.1.json", 25)):
        path = tmp_path / name
        assert json.loads(path.read_text(encoding="utf-8"))["demo_generator"]["seed"] == 3
        reader = SquadReader(path)
        examples = list(reader)
        assert reader.stats.examples == size and not reader.stats.skipped and not reader.repairs
        assert all(e.span_text(*e.span) == e.answers[0].text for e in examples)  # type: ignore[misc]
        assert all(55 <= len(e.context_tokens) <= 155 for e in examples)


def test_defaults_and_bad_sizes() -> None:
    train, dev = demo.generate()
    assert (len(questions(train)), len(questions(dev))) == (3000, 600)
    with pytest.raises(ValueError, match=">= 0"):
        demo.generate(0, -1, 0)
