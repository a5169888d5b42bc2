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
