"""``python -m experiments run`` and ``sweep`` on the toy task: the reader's skip counts are
stored with the run and shown under the sweep's table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.store import ResultsStore
from tasks.common.io import ReadStats
from tests.experiments.helpers import cli_dirs


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
