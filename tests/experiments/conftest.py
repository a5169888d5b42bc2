"""Fixtures shared by the experiments tests."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tasks.common.io import ReadStats


@pytest.fixture
def offline_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No W&B variables from the caller; every W&B folder (config, cache, staging) in tmp."""
    for var in ("WANDB_MODE", "WANDB_DIR", "WANDB_PROJECT", "WANDB_RUN_GROUP", "WANDB_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    for var, sub in (
        ("WANDB_CONFIG_DIR", "config"),
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_DATA_DIR", "data"),
        ("WANDB_ARTIFACT_DIR", "artifacts"),
    ):
        monkeypatch.setenv(var, str(tmp_path / "wandb-home" / sub))
    return tmp_path


def _toy_with_stats(folder: Path, stats: dict[str, ReadStats]):  # type: ignore[no-untyped-def]
    """The toy task whose recipe reports ``stats`` as its read statistics."""
    from tests.experiments.toy_task import make_task

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
    from tasks.common.io import ReadStats

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
