"""Fixtures shared by the experiments tests."""

from __future__ import annotations

from pathlib import Path

import pytest


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
