"""The type contracts hold: mypy passes over the files ``[tool.mypy]`` in pyproject.toml lists
(the library, ``tasks/core.py``, ``tasks/common``, the representations, every task's recipe and
``experiments/``), so a task recipe that does not fit :class:`tasks.core.TaskRecipe` fails here,
in the command CI runs, as well as in ``nox -s lint``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None, reason="mypy not installed (dev extra)"
)
def test_mypy_passes_on_the_contracts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
