"""Bad input end to end: a run refuses an empty or mostly skipped split, naming the
file and the skip counts. (Command-line mistakes, and the skip counts under a table:
``tests/experiments/cli``.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from experiments.run.runner import RunOptions, train
from experiments.run.spec import RunSpec
from tasks.common.io import DataError, ReadStats
from tasks.squad.task import VERSION as SQUAD_VERSION

TINY_SQUAD = ("word_vectors=random:4", "hidden=4", "char_filters=4")


def _write_squad(folder: Path, train_answer_start: int, dev: bool = True) -> Path:
    """A SQuAD v1.1 folder: one training question whose answer starts at the given offset, and
    one dev question (or an empty dev file)."""
    context = "The cat sat on the mat. Far away, a dog slept in the sun all afternoon."
    qa = {
        "id": "q1",
        "question": "Where did the cat sit?",
        "answers": [{"text": "on the mat", "answer_start": train_answer_start}],
    }
    train = {
        "version": "1.1",
        "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [qa]}]}],
    }
    dev_doc = {"version": "1.1", "data": []}
    if dev:
        dev_qa = {**qa, "id": "d1", "answers": [{"text": "on the mat", "answer_start": 8}]}
        dev_doc["data"] = [{"title": "t", "paragraphs": [{"context": context, "qas": [dev_qa]}]}]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train-v1.1.json").write_text(json.dumps(train), encoding="utf-8")
    (folder / "dev-v1.1.json").write_text(json.dumps(dev_doc), encoding="utf-8")
    return folder


def _squad_spec(folder: Path) -> RunSpec:
    return RunSpec(
        task="squad",
        task_version=SQUAD_VERSION,
        representation="none",
        sites=(),
        dropout=0.0,
        data=str(folder),
        limit=8,
        max_epochs=1,
        overrides=TINY_SQUAD,
    )


def test_squad_whose_only_answer_does_not_match_refuses_to_train(tmp_path: Path) -> None:
    folder = _write_squad(tmp_path / "data", train_answer_start=50)  # far from "on the mat"
    options = RunOptions(work_root=tmp_path / "work", progress=False)
    with pytest.raises(DataError) as info:
        train(_squad_spec(folder), options)
    message = str(info.value)
    assert "train-v1.1.json" in message and "no usable example" in message
    assert "answer_offset_mismatch 1" in message and "no_usable_answer 1" in message
    assert not (tmp_path / "work").exists()  # no run folder


def test_an_empty_eval_split_is_refused(tmp_path: Path) -> None:
    folder = _write_squad(tmp_path / "data", train_answer_start=8, dev=False)
    with pytest.raises(DataError, match=r"dev-v1\.1\.json: the dev split has no usable example"):
        train(_squad_spec(folder), RunOptions(work_root=tmp_path / "work", progress=False))


def test_too_many_skipped_is_refused_and_the_share_is_configurable(
    skipping_toy: dict[str, ReadStats], tmp_path: Path
) -> None:
    spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0)
    spec = dataclasses.replace(spec, max_epochs=1)
    options = RunOptions(work_root=tmp_path / "w", progress=False, max_skipped=0.01)
    with pytest.raises(DataError) as info:
        train(spec, options)
    message = str(info.value)
    assert message.startswith("toy/train.jsonl: 3 of 163 train examples were skipped (1.8%")
    assert "skipped: short phrase 100, bad line 3)" in message  # exempt: shown, not counted
    train(spec, dataclasses.replace(options, max_skipped=0.02))  # 1.8 % passes
