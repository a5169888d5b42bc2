"""Architecture boundaries: the library never imports the harness and has no import side effects."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

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


def _module_names() -> dict[str, Path]:
    """Dotted name → file of every module in the three packages."""
    modules = {}
    for package in ("bilm", "tasks", "experiments"):
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The repository modules ``path`` imports anywhere (top level, in functions, under
    ``TYPE_CHECKING``): each name resolved to the longest module prefix that exists."""

    def resolve(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {resolve(name) for name in names} - {""}
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (an import circle), sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(cycles)


def test_the_cycle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    """No two modules import each other, directly or around a ring — counting lazy and
    ``TYPE_CHECKING`` imports (a package's ``__init__`` re-exporting its own modules is not a
    circle)."""
    modules = _module_names()
    graph = {
        name: {
            dep for dep in _imports(path, modules) if dep != name and not name.startswith(dep + ".")
        }
        for name, path in modules.items()
    }
    assert import_cycles(graph) == []


#: What each folder of ``experiments/`` may import of the others (its ``__init__`` says so too).
EXPERIMENTS_MAY_IMPORT = {
    "run": {"run", "data"},
    "data": {"data"},
    "plan": {"plan", "run", "data"},
    "report": {"report", "plan", "run", "data"},
    "analyses": {"analyses"},
    "peer": {"peer", "report", "plan", "run", "data"},
    "cli": {"cli", "plan", "run", "data", "report", "analyses", "peer"},
}


def _experiments_imports(path: Path) -> set[str]:
    """The ``experiments`` folders a module imports (``experiments.X...`` → ``X``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + (
                [f"experiments.{a.name}" for a in node.names]
                if node.module == "experiments"
                else []
            )
        found |= {n.split(".")[1] for n in names if n.startswith("experiments.")}
    return found


def test_experiments_folders_import_only_what_their_concern_may() -> None:
    """The run side imports nothing from report, analyses, peer or the CLI; the report side
    nothing from peer, analyses or the CLI; ... (``EXPERIMENTS_MAY_IMPORT``). Every module of
    ``experiments/`` but the package's own two files lives in one of those folders."""
    root = REPO / "experiments"
    loose = sorted(
        p.name for p in root.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )
    assert loose == [], f"modules outside a concern's folder: {loose}"
    offenders = []
    for folder, allowed in EXPERIMENTS_MAY_IMPORT.items():
        for path in sorted((root / folder).rglob("*.py")):
            if "allennlp_side" in path.parts:  # runs in the peer's own venv, never imported
                continue
            bad = _experiments_imports(path) - allowed
            offenders += [f"{path.relative_to(REPO)} imports experiments.{b}" for b in sorted(bad)]
    assert offenders == []
    folders = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(EXPERIMENTS_MAY_IMPORT)


#: The layers of ``tasks/``, lowest first (each package's ``__init__`` says so too;
#: docs/architecture.md lists them). A module imports modules of its own package and of the
#: layers below its own, never of a layer above; :data:`TASK` stands for every task package
#: (``tasks/<name>/``), which imports no other task.
TASK = "<task>"
TASKS_LAYERS = (
    "common",  # readers' errors, overrides, sites, spans, CoNLL-2012, vectors, vocab, peer contract
    "nn",  # layers, packed RNN, CRF
    "representations",  # ELMo, GloVe, CoVe, HF, HDF5, none; adaptation
    "features",  # injection, the frozen-feature cache
    "core",  # the task protocol: TaskSpec, TaskRecipe, the metric contract
    "metrics",  # P/R/F1, accuracy
    TASK,  # squad, snli, srl, coref, ner, sst5, ...
    "registry",  # one dict literal
)


def _tasks_unit(module: str) -> str:
    """The package (or loose module) of ``tasks/`` a module is in: ``tasks.nn.crf`` → ``nn``,
    ``tasks.core`` → ``core``, ``tasks.squad.model`` → ``squad``."""
    return module.split(".")[1]


def tasks_layer_violations(imports: dict[str, set[str]]) -> list[str]:
    """``"A imports B"`` for every import, among modules of ``tasks``, that goes up
    :data:`TASKS_LAYERS` or from one task into another (``imports``: module → the modules it
    imports). The package's own ``__init__`` imports nothing of ``tasks``."""
    rank = {layer: i for i, layer in enumerate(TASKS_LAYERS)}

    def layer(unit: str) -> str:
        return unit if unit in rank else TASK

    bad = []
    for module, deps in sorted(imports.items()):
        for dep in sorted(d for d in deps if d.startswith("tasks.")):
            if module == "tasks":
                bad.append(f"{module} imports {dep}")
                continue
            mine, theirs = _tasks_unit(module), _tasks_unit(dep)
            if mine != theirs and rank[layer(theirs)] >= rank[layer(mine)]:
                bad.append(f"{module} imports {dep}")
    return bad


def test_the_layer_check_finds_an_upward_import() -> None:
    ok = {
        "tasks.core": {"tasks.common.io", "tasks.features.inject", "tasks"},
        "tasks.nn.crf": {"tasks.common.spans", "tasks.nn.layers"},
        "tasks.squad.task": {"tasks.squad.model", "tasks.metrics.prf", "tasks.core"},
        "tasks.registry": {"tasks.squad.task", "tasks.core"},
    }
    assert tasks_layer_violations(ok) == []
    up = {"tasks.common.vocab": {"tasks.representations.glove"}, "tasks.core": {"tasks.metrics"}}
    assert tasks_layer_violations(up) == [
        "tasks.common.vocab imports tasks.representations.glove",
        "tasks.core imports tasks.metrics",
    ]
    across = {"tasks.srl.data": {"tasks.coref.data"}, "tasks": {"tasks.registry"}}
    assert tasks_layer_violations(across) == [
        "tasks imports tasks.registry",
        "tasks.srl.data imports tasks.coref.data",
    ]


def test_tasks_imports_go_down_the_layers() -> None:
    """No module of ``tasks/`` imports one of a higher layer (:data:`TASKS_LAYERS`) or of another
    task, counting lazy and ``TYPE_CHECKING`` imports, and none imports relatively (which the
    check would not see). A module directly in ``tasks/`` is a layer of its own (``core.py``,
    ``registry.py``); a package that is no layer is a task (so a new shared package that tasks
    import fails here until it is given its place in the order)."""
    root = REPO / "tasks"
    loose = sorted(p.stem for p in root.glob("*.py") if p.name != "__init__.py")
    assert [m for m in loose if m not in TASKS_LAYERS] == [], "a loose module in no layer"
    packages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    assert set(TASKS_LAYERS) - {TASK} <= packages | set(loose), "a layer has no package"
    modules = _module_names()
    graph = {
        name: _imports(path, modules)
        for name, path in modules.items()
        if name == "tasks" or name.startswith("tasks.")
    }
    assert tasks_layer_violations(graph) == []
    relative = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []


def test_no_module_imports_another_modules_private_name() -> None:
    """``tasks/`` and ``experiments/`` import no ``_private`` name of another module of the
    repository: what two modules share is public in the one that defines it."""
    modules = _module_names()
    offenders = []
    for package in ("tasks", "experiments"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.ImportFrom) and node.module in modules):
                    continue
                offenders += [
                    f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert offenders == []


def test_no_command_line_below_the_cli() -> None:
    """A command reads its parsed command line in ``experiments/cli`` and hands a typed request
    on: no function outside ``cli/`` takes an ``argparse.Namespace`` (a module's own ``main``
    parses its own ``argv`` and reads nothing else's)."""
    offenders = []
    for path in sorted((REPO / "experiments").rglob("*.py")):
        if "cli" in path.relative_to(REPO / "experiments").parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            offenders += [
                f"{path.relative_to(REPO)}:{node.lineno}: {node.name}({a.arg})"
                for a in arguments
                if a.annotation is not None and "Namespace" in ast.unparse(a.annotation)
            ]
    assert offenders == []
