"""A reader's repairs reach the run's read line, ``read-stats.json`` and the record: the toy
task reports the statistics of a SQuAD file whose first answer's ``answer_start`` is off by 2
(the reader's counts themselves: tests/tasks/test_read_repairs.py)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.run.runner import RunOptions, train
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.common.io import ReadStats
from tasks.squad.data import REPAIRED, load_squad
from tests.experiments.conftest import _toy_with_stats
from tests.experiments.helpers import cli_dirs
from tests.tasks.test_read_repairs import write_squad


@pytest.fixture
def repairing_toy(tmp_path: Path) -> Iterator[RunSpec]:
    """The toy task registered with the statistics of :func:`write_squad`'s file as its training
    split's (one repair); yields the spec of a one-epoch run."""
    from tasks import registry

    train_stats = ReadStats()
    write_squad(tmp_path / "squad", "train-v1.1.json")
    load_squad("train", tmp_path / "squad", stats=train_stats)
    train_stats.source = "squad/train-v1.1.json"
    stats = {"train": train_stats, "dev": ReadStats(80, source="toy/dev.jsonl")}
    registry.TASKS["toy"] = _toy_with_stats(tmp_path / "toy-demo", stats)
    spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0)
    try:
        yield dataclasses.replace(spec, max_epochs=1)
    finally:
        registry.TASKS.pop("toy", None)


def test_the_run_line_shows_the_repairs(
    repairing_toy: RunSpec, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = repairing_toy
    outcome = train(spec, RunOptions(work_root=tmp_path / "w"))
    reads = [line for line in capsys.readouterr().err.splitlines() if " read " in line]
    assert reads == [
        f"  {spec.run_id} read train: 2 kept, 0 skipped, 1 repaired ({REPAIRED} 1); "
        "from squad/train-v1.1.json",
        f"  {spec.run_id} read dev: 80 kept, 0 skipped; from toy/dev.jsonl",
    ]
    stored = json.loads(outcome.predictions["read-stats"].read_text(encoding="utf-8"))
    assert stored["train"]["repaired"] == {REPAIRED: 1}


def test_read_stats_json_and_the_record_keep_the_repairs(
    repairing_toy: RunSpec, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m experiments run`` (``--quiet``: one read line, as something was repaired)."""
    argv = ["run", "toy", "--repr", "none", "--seeds", "0", "--max-epochs", "1"]
    assert main([*argv, *cli_dirs(tmp_path)]) == 0
    reads = [line for line in capsys.readouterr().err.splitlines() if " read " in line]
    assert len(reads) == 1 and reads[0].endswith(
        f" read train: 2 kept, 0 skipped, 1 repaired ({REPAIRED} 1); dev: 80 kept, 0 skipped"
    )
    store = ResultsStore(tmp_path / "store")
    (record,) = store.records("toy")
    folder = store.path_of(record.run_id)
    assert folder is not None
    stored = json.loads((folder / "read-stats.json").read_text(encoding="utf-8"))
    assert stored["train"] == {
        "examples": 2,
        "skipped": {},
        "source": "squad/train-v1.1.json",
        "repaired": {REPAIRED: 1},
    }
    assert stored["dev"] == {"examples": 80, "skipped": {}, "source": "toy/dev.jsonl"}
    # the record's copy reads back with its repairs
    assert ReadStats.from_dict(stored["train"]).summary("train", where=False) == (
        f"train: 2 kept, 0 skipped, 1 repaired ({REPAIRED} 1)"
    )
