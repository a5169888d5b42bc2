"""Named reproductions read each task's defaults from its TaskSpec."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from experiments import named
from tasks import registry
from tests.experiments import toy_task


def test_seeds_and_elmo_dropout_come_from_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = dataclasses.replace(toy_task.make_task(tmp_path), elmo_dropout=0.1, seeds=5)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    assert named.default_seeds("toy_elmo") == (0, 1, 2, 3, 4)
    assert named.base_spec("toy", "mini", "demo", {}).dropout == 0.1
    plain = dataclasses.replace(task, elmo_dropout=0.5, seeds=3)
    monkeypatch.setitem(registry.TASKS, task.name, plain)
    assert named.default_seeds("toy_baseline") == (0, 1, 2)
    assert named.base_spec("toy", "mini", "demo", {}).dropout == 0.5


def test_task_spec_checks_its_defaults(tmp_path: Path) -> None:
    task = toy_task.make_task(tmp_path)
    with pytest.raises(ValueError, match="elmo_dropout"):
        dataclasses.replace(task, elmo_dropout=1.0)
    with pytest.raises(ValueError, match="seeds"):
        dataclasses.replace(task, seeds=0)


def test_cove_reproduction_columns_and_paper_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``<task>_cove``: CoVe last layer and λ = 1 beside ELMo; without weights the CoVe
    columns are left out and the caption says which files to pass."""
    task = toy_task.make_task(tmp_path)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    cove = {"weights": "w.pth", "glove_path": "g.txt"}
    (table,) = named.tables("toy_cove", "mini", "demo", (0, 1), {}, cove_config=cove)
    labels = [c.label for c in table.columns]
    assert labels == ["Baseline", "CoVe, last layer", "CoVe, λ=1", "ELMo", "Increase"]
    specs = named.expected_specs(table)
    coves = [s for s in specs if s.representation == "cove"]
    assert len(specs) == 8 and len(coves) == 4  # 4 run columns × 2 seeds
    assert {(s.mix.mode, s.mix.lam) for s in coves} == {("last", 0.0), ("all", 1.0)}
    assert all(s.representation_config == cove and s.sites == ("input",) for s in coves)
    assert table.paper_split is None  # the toy task has no CoVe numbers in paper.toml
    (bare,) = named.tables("toy_cove", "mini", "demo", (0,), {})
    assert [c.label for c in bare.columns] == ["Baseline", "ELMo", "Increase"]
    assert bare.caption[-1] == named.COVE_MISSING


def test_cove_paper_numbers_carry_their_split() -> None:
    from experiments.render import load_paper

    cove = load_paper()["cove"]
    assert {task: cove[task]["split"] for task in ("sst5", "snli", "srl")} == {
        "sst5": "test",
        "snli": "dev",
        "srl": "dev",
    }
