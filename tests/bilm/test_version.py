"""``--version``: the installed metadata, else ``pyproject.toml`` in a checkout."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from bilm import version
from tests.conftest import REPO


def _not_installed(name: str) -> str:
    raise metadata.PackageNotFoundError(name)


def test_installed_version_comes_from_the_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(version.metadata, "version", lambda name: f"{name} 9.9")
    assert version.package_version() == "elmo-bench 9.9"


def test_a_checkout_that_is_not_installed_reads_pyproject(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tomllib

    monkeypatch.setattr(version.metadata, "version", _not_installed)
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert version.package_version() == project["version"]
    assert version.package_version(tmp_path / "absent.toml") == "unknown"
