"""What a run prints while it runs: no progress bar when stderr is not a terminal
(a log file gets no carriage return) but one line per evaluation instead, and the readers' skip
counts one line per split as soon as the data is read."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from experiments.run.runner import RunOptions, train
from experiments.run.spec import RunSpec
from tasks.common.io import DataError, ReadStats
from tests.experiments.toy_task import registered


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[object]:
    with registered(tmp_path / "toy-demo") as task:
        yield task


def toy_spec(epochs: int = 2) -> RunSpec:
    spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0)
    return dataclasses.replace(spec, max_epochs=epochs)


def test_without_a_terminal_bars_give_way_to_evaluation_lines(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = toy_spec()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # stderr is a log file
    train(spec, RunOptions(work_root=tmp_path / "a"))  # bars asked for (the default)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if spec.run_id in line and " epoch " in line]
    assert [line.split(" epoch ")[1].split(":")[0] for line in lines] == ["1/2", "2/2"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal: the bar, no lines
    train(spec, RunOptions(work_root=tmp_path / "b"))
    err = capsys.readouterr().err
    assert "\r" in err and "toy epoch 1/2" in err and " epoch 1/2: dev" not in err
    train(spec, RunOptions(work_root=tmp_path / "c", progress=False))  # --quiet: nothing
    assert capsys.readouterr().err == ""


def test_skip_counts_are_printed_as_soon_as_the_data_is_read(
    skipping_toy: dict[str, ReadStats], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = toy_spec(epochs=1)
    train(spec, RunOptions(work_root=tmp_path / "w"))
    lines = capsys.readouterr().err.splitlines()
    reads = [line for line in lines if " read " in line]
    assert reads == [
        f"  {spec.run_id} read train: 160 kept, 103 skipped (short phrase 100, bad line 3); "
        "from toy/train.jsonl",
        f"  {spec.run_id} read dev: 80 kept, 0 skipped; from toy/dev.jsonl",
    ]
    assert lines.index(reads[-1]) < min(i for i, line in enumerate(lines) if " epoch " in line)
    options = RunOptions(work_root=tmp_path / "refused", max_skipped=0.01)
    with pytest.raises(DataError, match="3 of 163 train examples were skipped"):
        train(spec, options)  # the counts were shown before the split was refused
    assert f"{spec.run_id} read train: 160 kept, 103 skipped" in capsys.readouterr().err
    train(spec, RunOptions(work_root=tmp_path / "quiet", progress=False))
    assert [line for line in capsys.readouterr().err.splitlines() if " read " in line] == [
        f"  {spec.run_id} read train: 160 kept, 103 skipped (short phrase 100, bad line 3); "
        "dev: 80 kept, 0 skipped"
    ]  # --quiet: one line, because something was skipped


def test_quiet_prints_one_read_line_only_when_something_was_skipped_or_cut(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under --quiet the skips used to show only in read-stats.json."""
    from experiments.run.progress import report_reads

    spec = dataclasses.replace(toy_spec(), data="some/folder")
    clean = SimpleNamespace(read_stats={"train": ReadStats(5), "dev": ReadStats(2)})
    report_reads(spec, clean, ("train", "dev"), quiet=True)  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""
    cut = SimpleNamespace(read_stats=clean.read_stats, truncated=Counter({"dev": 2}))
    report_reads(spec, cut, ("train", "dev"), quiet=True)  # type: ignore[arg-type]
    assert capsys.readouterr().err == (
        f"  {spec.run_id} read train: 5 kept, 0 skipped; dev: 2 kept, 0 skipped, 2 cut to "
        "the length limit\n"
    )


def test_a_demo_set_that_skips_nothing_prints_no_read_lines(
    toy: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = toy_spec(epochs=1)
    train(spec, RunOptions(work_root=tmp_path / "w", eval_lines=True))
    err = capsys.readouterr().err
    assert " read " not in err and f"{spec.run_id} toy none" in err
