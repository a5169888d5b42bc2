"""Golden runs pin each task's and the harness's result versions (``scripts/golden_runs.py``).

A stored run is reused only while its task's ``TaskSpec.version`` and
``experiments.run.identity.HARNESS_RESULT_VERSION`` match the code's, so a change that alters a
number must bump one of them. Per registered task, a tiny ELMo run and its baseline are trained
again and compared with ``tests/goldens/golden_runs.json``: a changed version asks for regenerated
goldens, changed numbers under unchanged versions ask for a bump.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from experiments.run.identity import HARNESS_RESULT_VERSION
from tasks.registry import TASKS, get_task

REPO = Path(__file__).resolve().parents[1]


@cache
def golden_script() -> ModuleType:
    """``scripts/golden_runs.py`` as a module (the run code the goldens were made with)."""
    spec = importlib.util.spec_from_file_location(
        "golden_runs", REPO / "scripts" / "golden_runs.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def task_file(task_name: str) -> str:
    """The file that defines the task's ``VERSION``, e.g. ``tasks/ner/task.py``."""
    module = sys.modules[get_task(task_name).setup.__module__]
    assert module.__file__
    return Path(module.__file__).resolve().relative_to(REPO).as_posix()


def bump_message(task_name: str, differences: list[str]) -> str:
    """The failure message of numbers that changed under unchanged versions."""
    return (
        f"numbers changed without a version bump: bump {task_file(task_name)} VERSION (or "
        "experiments.run.identity.HARNESS_RESULT_VERSION) and regenerate the goldens with "
        "`python scripts/golden_runs.py`\n" + "\n".join(differences)
    )


@pytest.mark.parametrize("task_name", list(TASKS))
def test_golden_run_reproduces(task_name: str) -> None:
    golden = golden_script()
    pinned = golden.load()
    if task_name not in pinned:
        pytest.fail(
            f"no golden run for {task_name}: run `python scripts/golden_runs.py --tasks "
            f"{task_name}` (it keeps the other tasks' records)"
        )
    problems = golden.version_problems(task_name, pinned[task_name])
    if problems:
        pytest.fail("\n".join(problems))
    fresh = golden.task_record(task_name)
    differences = golden.number_differences(task_name, pinned[task_name], fresh)
    if differences:
        pytest.fail(bump_message(task_name, differences))
    task = get_task(task_name)
    if task.metric_from_totals is not None:  # the stored units sum to the reported score
        for name, run in fresh["runs"].items():
            reported = run["metrics"][f"dev_{task.metric.key}"]
            assert run["units"]["metric"] == pytest.approx(reported, abs=1e-8), name


def test_goldens_cover_exactly_the_registered_tasks() -> None:
    assert sorted(golden_script().load()) == sorted(TASKS)


def test_a_changed_learning_rate_changes_the_pinned_numbers(tmp_path: Path) -> None:
    """The pins can fail: one task's baseline with a doubled learning rate (an override, so a
    different run id too) no longer reproduces its losses. The cheapest task is enough."""
    golden = golden_script()
    name = "sst5" if "sst5" in TASKS else next(iter(TASKS))
    pinned = golden.load()[name]
    spec = golden.golden_specs(name)["baseline"]
    lr = get_task(name).configure(spec.preset, spec.overrides).train.optimizer.lr
    changed = golden.golden_specs(name, (f"train.optimizer.lr={2 * lr}",))["baseline"]
    with_lr = golden.run_record(changed, tmp_path)
    differences = golden.number_differences(
        name, {"runs": {"baseline": pinned["runs"]["baseline"]}}, {"runs": {"baseline": with_lr}}
    )
    assert any("train_loss" in line for line in differences), differences
    assert any("run id" in line for line in differences)


def test_comparison_tolerances_and_messages() -> None:
    """Losses compare relatively (1e-4), metrics absolutely (1e-6); a changed version names the
    old and the new one and asks for regenerated goldens."""
    golden = golden_script()
    name = next(iter(TASKS))
    run = {"run_id": "abc", "metrics": {"dev_f1": 0.5}, "train_loss": [100.0, 50.0]}
    record = {
        "task_version": get_task(name).version,
        "harness_version": HARNESS_RESULT_VERSION,
        "runs": {"elmo": run},
    }

    def with_run(**changes: object) -> dict:
        return {**record, "runs": {"elmo": {**run, **changes}}}

    assert golden.number_differences(name, record, with_run(train_loss=[100.005, 50.0])) == []
    assert golden.number_differences(name, record, with_run(metrics={"dev_f1": 0.5000004})) == []
    (loss,) = golden.number_differences(name, record, with_run(train_loss=[100.1, 50.0]))
    assert loss.startswith(f"{name}/elmo: train_loss")
    (metric,) = golden.number_differences(name, record, with_run(metrics={"dev_f1": 0.50001}))
    assert "dev_f1 0.5 -> 0.50001" in metric
    old = {**record, "task_version": record["task_version"] - 1}
    (problem,) = golden.version_problems(name, old)
    assert problem.startswith(
        f"task {name}'s version changed from {old['task_version']} to {record['task_version']}: "
        "regenerate the goldens with `python scripts/golden_runs.py`"
    )
    assert "invalidates stored runs" in problem
    assert golden.check({name: record}, {name: old}) == [problem]  # numbers not compared then
    newer_harness = {**record, "harness_version": HARNESS_RESULT_VERSION - 1}
    (harness,) = golden.version_problems(name, newer_harness)
    assert harness.startswith(
        f"the harness's result version changed from {HARNESS_RESULT_VERSION - 1} to "
        f"{HARNESS_RESULT_VERSION}: regenerate the goldens"
    )
