"""The installed version of the project (``--version`` of ``python -m bilm`` and
``python -m experiments``)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

__all__ = ["DISTRIBUTION", "package_version"]

#: The distribution name in ``pyproject.toml``.
DISTRIBUTION = "elmo-bench"
_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def package_version(pyproject: Path = _PYPROJECT) -> str:
    """The version of the installed ``elmo-bench``, from its metadata; in a checkout that is not
    installed, ``project.version`` of ``pyproject.toml``; ``"unknown"`` when neither says.

    Args:
        pyproject: the ``pyproject.toml`` read when the package is not installed.
    """
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return "unknown"
    version = project.get("version") if isinstance(project, dict) else None
    return str(version) if version else "unknown"
