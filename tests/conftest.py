"""Shared test helpers: where ../shared lives and how tests skip without it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """Path under ../shared, or skip the calling test with a clear reason when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared not available ({path.relative_to(REPO.parent)} missing)")
    return path


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Converted GloVe files and published-model downloads go to a temporary cache, not ~."""
    import os

    os.environ.setdefault("ELMO_BENCH_CACHE", str(tmp_path_factory.mktemp("elmo-bench-cache")))


@pytest.fixture
def cpu_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    """bf16 training allowed on this CPU even without a bf16 unit, where ``resolve_precision``
    refuses it for speed: the tests that use it check what bf16 computes, not how fast."""
    from bilm import devices

    unit = devices.cpu_bf16_unit()
    monkeypatch.setattr(devices, "cpu_bf16_unit", lambda: unit or "emulated (test)")
