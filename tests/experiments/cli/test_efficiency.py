"""``python -m experiments sample-efficiency`` (paper Figure 1) on the toy task."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.cli import main
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered


def test_sample_efficiency_runs_tables_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sample-efficiency", "--tasks", "toy", "--fractions", "0.25,1", "--seeds", "0"]
    with registered(tmp_path / "toy-demo"):
        assert main([*argv, "--set", "train.epochs=2", *cli_dirs(tmp_path)]) == 0
        captured = capsys.readouterr()
        assert main([*argv, "--fractions", "0,1", *cli_dirs(tmp_path)]) == 2
        assert "fractions must be in (0, 1]" in capsys.readouterr().err
    assert captured.err.count(" done ") == 4  # 2 shares × baseline, ELMo
    rows = [t for t in captured.out.splitlines() if t.startswith("| Toy")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "Toy, 25 % of train (Acc.) — DEMO data",
        "Toy, 100 % of train (Acc.) — DEMO data",
    ]
    deltas = [t for t in captured.out.splitlines() if t.startswith("| ↳ Δ vs Baseline")]
    assert len(deltas) == 2 and all("(Holm" in r for r in deltas)  # ELMo tested against it
    # not the figure's default request: the name carries its hash (docs/runs.md, output names)
    (plot,) = (tmp_path / "out" / "plots").glob("sample-efficiency-mini-demo-*-toy.png")
    assert plot.stat().st_size > 1000
