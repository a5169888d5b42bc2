"""Bad input end to end (issue #14): command-line mistakes end before any run with one line and
exit status 2; a run refuses an empty or mostly skipped split, naming the file and the skip
counts; the skip counts are stored with the run and shown under its table."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from experiments.__main__ import main
from experiments.runner import RunOptions, train
from experiments.spec import RunSpec
from experiments.store import ResultsStore
from tasks.common.io import DataError, ReadStats
from tasks.squad.task import VERSION as SQUAD_VERSION
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import make_task

TINY_SQUAD = ("word_vectors=random:4", "hidden=4", "char_filters=4")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "bogus"], "invalid choice: 'bogus'"),  # unknown task (argparse)
        (["reproduce", "table1", "--tasks", "squad,bogus"], "unknown task(s) ['bogus']"),
        (["run", "squad", "--repr", "bogus"], "unknown representation 'bogus'"),
        (["sweep", "squad", "--repr", "elmo,bogus"], "unknown representation 'bogus'"),
        (["run", "squad", "--config", "bogus"], "no preset 'bogus'"),
        (["run", "squad", "--set", "nokey=1"], "unknown config key 'nokey'"),
        (["sweep", "srl", "--set", "train.nokey=1"], "unknown config key 'train.nokey'"),
        (["run", "squad", "--set", "hidden=abc"], "hidden='abc': expected int"),
        (["reproduce", "squad_elmo", "--set", "train.epochs=0"], "epochs and batch_size"),
        (["run", "squad", "--max-skipped", "2"], "expected a share in [0, 1]"),
        (["run", "squad", "--sites", "bogus"], "unknown sites ['bogus']"),
    ],
)
def test_command_line_mistakes_are_one_line_and_exit_2(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main([*argv, *cli_dirs(tmp_path)])
    except SystemExit as exit_:  # argparse's own checks (choices, types)
        status = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]
    assert "Traceback" not in captured.err and captured.out == ""
    assert not any((tmp_path / d).exists() for d in ("store", "work", "out", "cache"))


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


def _toy_with_stats(folder: Path, stats: dict[str, ReadStats]):  # type: ignore[no-untyped-def]
    """The toy task whose recipe reports ``stats`` as its read statistics."""
    task = make_task(folder)
    plain = task.setup

    def setup(preset: str, overrides: Sequence[str], data_dir: str | None):  # type: ignore[no-untyped-def]
        recipe = plain(preset, overrides, data_dir)
        recipe.read_stats = stats  # type: ignore[attr-defined]
        return recipe

    return dataclasses.replace(task, setup=setup)


@pytest.fixture
def skipping_toy(tmp_path: Path) -> Iterator[dict[str, ReadStats]]:
    """The toy task registered with 160 training examples kept and 3 + 100 (exempt) skipped."""
    from tasks import registry

    stats = {
        "train": ReadStats(
            160,
            Counter({"bad line": 3, "short phrase": 100}),
            source="toy/train.jsonl",
            exempt={"short phrase"},
        ),
        "dev": ReadStats(80, source="toy/dev.jsonl"),
        "test": ReadStats(80, source="toy/test.jsonl"),
    }
    registry.TASKS["toy"] = _toy_with_stats(tmp_path / "toy-demo", stats)
    try:
        yield stats
    finally:
        registry.TASKS.pop("toy", None)


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


def test_skip_counts_are_stored_and_shown_under_the_table(
    skipping_toy: dict[str, ReadStats], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "toy", "--repr", "none", "--seeds", "0", "--max-epochs", "1"]
    assert main([*argv, *cli_dirs(tmp_path)]) == 0
    table = capsys.readouterr().out
    store = ResultsStore(tmp_path / "store")
    (record,) = store.records("toy")
    folder = store.path_of(record.run_id)
    assert folder is not None
    stored = json.loads((folder / "read-stats.json").read_text(encoding="utf-8"))
    assert stored["train"] == {
        "examples": 160,
        "skipped": {"bad line": 3, "short phrase": 100},
        "source": "toy/train.jsonl",
        "exempt": ["short phrase"],
    }
    assert stored["dev"] == {"examples": 80, "skipped": {}, "source": "toy/dev.jsonl"}
    assert (
        "Skipped while reading: train 160 kept, 103 skipped (short phrase 100, bad line 3); "
        "dev 80 kept; test 80 kept." in table
    )
