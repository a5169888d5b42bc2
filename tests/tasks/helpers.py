"""Shared helpers for the task tests: located reader errors and the evaluators' command lines."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

from tasks.common.io import DataError
from tests.conftest import REPO


def write_lines(path: Path, lines: list[str]) -> Path:
    """Write ``lines`` to ``path``, each ending in a newline; returns ``path``."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def assert_read_error(read: Callable[[], Iterable[object]], line: int | None, reason: str) -> None:
    """Reading ``read()`` to the end raises a :class:`DataError` at ``line`` naming ``reason``."""
    with pytest.raises(DataError) as info:
        list(read())
    assert info.value.line == line and reason in info.value.reason


def run_cli(
    main: Callable[[Sequence[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict, str]:
    """Run an evaluator's ``main``: its exit status, JSON report (``{}`` on failure) and stderr."""
    status = main(argv)
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if status == 0 else {}, captured.err


def assert_cli_error(
    status: int, error: str, file_name: str, line: int | None, reason: str
) -> None:
    """The evaluator failed with ``reason``, located at ``file_name:line:`` (or just the file)."""
    where = f"{file_name}:{line}:" if line is not None else f"{file_name}:"
    assert status == 1 and where in error and reason in error


def run_module(module: str, *args: str, stdin: str | None = None) -> str:
    """Run ``python -m module args`` from the repository root; it must exit 0. Its stdout."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        input=stdin,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
