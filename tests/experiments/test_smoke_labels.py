"""Smoke runs and DEMO data are labelled: every table title, plot title and
the HTML report say when runs used ``--limit`` or a ``--max-epochs`` below the preset's budget;
sweep tables say DEMO; the relative error reduction of an increase cell says what it is."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.report import page as html_report
from experiments.report import plots
from experiments.report.render import (
    Row,
    RunsColumn,
    load_paper,
    render,
    smoke_label,
    smoke_reasons,
    table1,
)
from experiments.run.store import ResultsStore
from tasks.core import MetricSpec
from tasks.registry import get_task
from tests.experiments.helpers import cli_dirs, make_record, make_spec
from tests.experiments.toy_task import registered

ACCURACY = MetricSpec("accuracy", scale=100, decimals=1)


def _budget(task: str) -> int:
    return int(get_task(task).configure("mini", []).train.epochs)


def test_smoke_reasons_name_limit_and_a_short_budget() -> None:
    budget = _budget("snli")
    spec = make_spec("snli", limit=20, max_epochs=1)
    assert smoke_reasons(spec) == [
        "first 20 examples of each split",
        f"1 of the preset's {budget} epochs",
    ]
    assert smoke_reasons(make_spec("snli")) == []
    assert smoke_reasons(make_spec("snli", max_epochs=budget)) == []  # the preset's budget
    label = smoke_label([spec, make_spec("snli", seed=1, limit=20, max_epochs=1)])
    assert (
        label
        == f" [SMOKE RUNS: first 20 examples of each split; 1 of the preset's {budget} epochs]"
    )
    assert plots.run_marks([spec]) == " [DEMO data]" + label
    assert plots.run_marks([make_spec("snli", data="/data/snli")]) == ""


def test_a_table_of_smoke_runs_says_so_and_explains_the_relative_reduction() -> None:
    base = make_spec("snli", limit=50)
    row = Row("SNLI (accuracy)", base, ACCURACY, paper_key=None)
    table = dataclasses.replace(table1([row], (0,)), caption=("setup",))
    records = [
        make_record(spec, value)
        for column, value in zip(table.columns[:2], (0.6, 0.8), strict=True)
        if isinstance(column, RunsColumn)
        for spec in table.expected(row, column)
    ]
    text = render(table, records, load_paper())
    title = text.splitlines()[0]
    assert "[SMOKE RUNS: first 50 examples of each split]" in title
    assert "| 20.0 / 50.0% |" in text
    assert "r the relative error reduction Δ / (100 − Baseline)" in text
    whole = dataclasses.replace(table, rows=(dataclasses.replace(row, base=make_spec("snli")),))
    assert "SMOKE" not in render(whole, [], load_paper())


def test_a_smoke_sweep_on_demo_data_is_labelled_in_its_table_and_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "toy", "--repr", "none", "--seeds", "0", "--limit", "20", "--max-epochs", "1"]
    with registered(tmp_path / "toy-demo"):
        budget = _budget("toy")
        assert main([*argv, *cli_dirs(tmp_path)]) == 0
        page = html_report.build_report(tmp_path / "store")
    title = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("**Sweep"))
    assert "[DEMO DATA, not the task's dataset]" in title
    assert (
        f"[SMOKE RUNS: first 20 examples of each split; 1 of the preset's {budget} epochs]" in title
    )
    (record,) = ResultsStore(tmp_path / "store").records("toy")
    row = next(r for r in page.split("<tr>") if record.run_id in r)
    assert "100%" not in row and "first 20 examples of each split" in row and "SMOKE" in row
    assert re.search(r"SMOKE</span> 1 of the runs are smoke runs", page)
