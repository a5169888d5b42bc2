"""Architecture boundaries: the library never imports the harness and has no import side effects."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.conftest import REPO


def test_bilm_source_never_imports_the_harness() -> None:
    offenders = []
    for path in (REPO / "bilm").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {n}" for n in names if n.split(".")[0] in ("tasks", "experiments")
            ]
    assert offenders == []


def test_importing_bilm_loads_no_harness_no_h5py_and_prints_nothing() -> None:
    code = (
        "import sys, bilm; bad = [m for m in ('tasks', 'experiments', 'h5py', 'wandb', 'spacy',"
        " 'datasets') if m in sys.modules]; sys.stderr.write(repr(bad))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stdout == ""
    assert done.stderr == "[]"
