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


TASK_NAMES = {"squad", "snli", "srl", "coref", "ner", "sst5", "sst"}


def test_experiments_names_no_task() -> None:
    """``experiments/`` reaches tasks only through the registry and TaskSpec (a new task is a
    folder plus one registry line): no string literal or identifier there names a task."""
    import re

    hits = []
    for path in sorted((REPO / "experiments").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docstrings:
                    continue
                words = set(re.findall(r"[a-z0-9]+", node.value.lower()))
                if words & TASK_NAMES:
                    hits.append(f"{path.name}:{node.lineno}: {node.value[:40]!r}")
            elif isinstance(node, ast.Name | ast.alias | ast.Attribute):
                name = getattr(node, "id", None) or getattr(node, "name", None) or node.attr
                if set(re.split(r"[._]", name.lower())) & TASK_NAMES:
                    hits.append(f"{path.name}:{node.lineno}: {name}")
    assert hits == []
