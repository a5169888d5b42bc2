"""A new task is a new folder plus its registry line, and everything that lists tasks sees it.

A copy of the checkout gets a throwaway task, ``tasks/toy/`` (the toy task of
``tests/experiments/toy_task.py`` as a package, with a DEMO set and synthetic data), and one entry
in ``tasks/registry.py``; nothing else changes. In that copy: ``nox -l`` lists its reproduction
targets, ``benchmarks/bench_tasks.py --tasks all`` times it, ``python -m experiments run`` trains
it, ``scripts/golden_runs.py`` asks for its golden runs by name, and the wheel carries its folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.experiments import toy_task
from tests.source_tree import build_wheel, copy_source, run, wheel_names

#: What turns the toy task module into a task package's ``task.py``: its TASK, with synthetic
#: data for the benchmark and a heading for nox.
TASK_LINES = """

def _synthetic(recipe, split, count, rng):
    return [
        ToyExample(tuple(rng.choice(WORDS) for _ in range(rng.randint(3, 9))), rng.randrange(2))
        for _ in range(count)
    ]


TASK = dataclasses.replace(
    make_task(Path(__file__).with_name("demo_data")),
    title="Toy (bag of words)",
    synthetic=Synthetic(_synthetic),
)
"""


def add_toy_task(root: Path) -> None:
    """``tasks/toy/`` (package, task module, DEMO set) and its registry entry in ``root``."""
    folder = root / "tasks" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text('"""A throwaway task."""\n', encoding="utf-8")
    source = Path(toy_task.__file__).read_text(encoding="utf-8")
    source = source.replace("import contextlib\n", "import contextlib\nimport dataclasses\n", 1)
    source = source.replace("    RecipeBase,\n", "    RecipeBase,\n    Synthetic,\n", 1)
    (folder / "task.py").write_text(source + TASK_LINES, encoding="utf-8")
    toy_task.write_data(folder / "demo_data")
    registry = root / "tasks" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    text = text.replace(
        "from tasks.sst5.task import TASK as SST5\n",
        "from tasks.sst5.task import TASK as SST5\nfrom tasks.toy.task import TASK as TOY\n",
    )
    assert "(SQUAD, SNLI, SRL, COREF, NER, SST5)" in text, "the registry's tuple changed"
    text = text.replace(
        "(SQUAD, SNLI, SRL, COREF, NER, SST5)", "(SQUAD, SNLI, SRL, COREF, NER, SST5, TOY)"
    )
    registry.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def copy_with_toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folders = ("bilm", "tasks", "experiments", "benchmarks", "scripts", "tests/goldens")
    root = copy_source(tmp_path_factory.mktemp("with-toy") / "src", folders)
    add_toy_task(root)
    return root


def _env(root: Path, home: Path) -> dict[str, str]:
    """The copy's packages first on the path (before an installed copy of the project)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(root), "HOME": str(home), "ELMO_BENCH_CACHE": str(home)}


def test_nox_lists_the_new_tasks_targets(copy_with_toy: Path, tmp_path: Path) -> None:
    listed = run([sys.executable, "-m", "nox", "-l"], copy_with_toy, _env(copy_with_toy, tmp_path))
    assert "toy_baseline -> Toy (bag of words): the baseline without ELMo" in listed
    assert "toy_elmo -> Toy (bag of words)" in listed
    assert "toy_ablations" not in listed  # not in the paper's Table 2 or 3
    assert "squad_elmo" in listed and "sst5_cove" in listed


def test_the_task_benchmark_times_the_new_task(copy_with_toy: Path, tmp_path: Path) -> None:
    env = _env(copy_with_toy, tmp_path)
    bench = [sys.executable, "benchmarks/bench_tasks.py", "--device", "cpu"]
    listed = run([*bench, "--tasks", "all", "--list"], copy_with_toy, env)
    assert "toy mini cached cpu" in listed and "toy mini live cpu" in listed
    assert "toy: no preset paper (it has mini)" in listed
    timed = run([*bench, "--tasks", "toy", "--quick", "--features", "cached"], copy_with_toy, env)
    assert "toy    mini  cached" in timed


def test_the_harness_trains_the_new_task_and_goldens_ask_for_it(
    copy_with_toy: Path, tmp_path: Path
) -> None:
    env = _env(copy_with_toy, tmp_path)
    out = run(
        [sys.executable, "-m", "experiments", "run", "toy", "--repr", "none", "--quiet"]
        + ["--max-epochs", "1", "--store", str(tmp_path / "store")],
        copy_with_toy,
        env,
    )
    assert '"dev_accuracy"' in out
    golden = [sys.executable, "scripts/golden_runs.py", "--check", "--tasks", "toy"]
    done = subprocess.run(
        golden, cwd=copy_with_toy, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1
    assert "toy: no golden run pinned (`python scripts/golden_runs.py --tasks toy`)" in done.stdout


def test_the_wheel_carries_the_new_task(copy_with_toy: Path, tmp_path: Path) -> None:
    names = wheel_names(build_wheel(copy_with_toy, tmp_path / "dist"))
    assert "tasks/toy/task.py" in names
    assert {f"tasks/toy/demo_data/{s}.jsonl" for s in ("train", "dev", "test")} <= names


def test_the_copy_is_not_the_checkout(copy_with_toy: Path) -> None:
    """The throwaway task exists only in the copy."""
    assert not (REPO / "tasks" / "toy").exists()
    assert (copy_with_toy / "tasks" / "toy" / "task.py").is_file()
