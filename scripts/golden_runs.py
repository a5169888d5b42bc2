"""Golden runs: one tiny training run per task that pins the result versions.

``python scripts/golden_runs.py`` trains, for every registered task, one tiny run with ELMo (the
shipped small biLM at the task's default sites, as
:func:`experiments.plan.specs.base_spec` builds it) and its baseline through the real
training loop (:func:`experiments.run.runner.train`): the DEMO data, preset ``mini``, the first
:data:`LIMIT` examples of each split, :data:`EPOCHS` epochs, seed 0, one CPU thread. Per task it
records the task's ``TaskSpec.version``, the harness's
:data:`experiments.run.identity.HARNESS_RESULT_VERSION`, and per run the spec's run id, the dev
metrics and the training loss of each evaluation, into ``tests/goldens/golden_runs.json``.

``--check`` trains the same runs and compares them with the file instead (exit 1, listing the
differences). ``--tasks a,b`` trains only those tasks and keeps the other tasks' records: a newly
registered task gets its golden runs with ``python scripts/golden_runs.py --tasks NAME``.
``tests/test_golden_runs.py`` does the same per task: a change that alters a number without
bumping a task's ``VERSION`` or the harness's version fails there, since a stored run is reused
only while those versions match. Regenerate the file only together with such a bump (or a
change of the golden runs themselves), and say why in the commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # ``python scripts/golden_runs.py`` puts scripts/ first, not REPO
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from experiments.plan.specs import base_spec  # noqa: E402
from experiments.run.identity import HARNESS_RESULT_VERSION  # noqa: E402
from experiments.run.runner import RunOptions, train  # noqa: E402
from experiments.run.spec import RunSpec, baseline_of  # noqa: E402
from tasks.registry import TASKS, get_task  # noqa: E402

GOLDENS = REPO / "tests" / "goldens" / "golden_runs.json"
PRESET = "mini"
LIMIT = 16  # examples per split
EPOCHS = 2  # two evaluations: the loss of a second epoch shows the optimizer's update
SEED = 0
LOSS_DIGITS = 6  # significant digits stored
METRIC_DIGITS = 9
LOSS_RTOL = 1e-4  # float summation order differs slightly across CPU kinds
METRIC_ATOL = 1e-6


def golden_specs(task_name: str, overrides: Sequence[str] = ()) -> dict[str, RunSpec]:
    """The golden runs of one task: ``elmo`` (the task's paper configuration of the shipped
    small biLM) and its ``baseline``.

    Args:
        task_name: a registered task.
        overrides: extra ``key=value`` preset overrides (part of the specs).

    Returns:
        Run name → spec.
    """
    elmo = dataclasses.replace(
        base_spec(get_task(task_name), PRESET, "demo", {}, overrides),
        seed=SEED,
        max_epochs=EPOCHS,
        limit=LIMIT,
    )
    return {"elmo": elmo, "baseline": baseline_of(elmo)}


def significant(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits (non-finite values unchanged)."""
    return float(f"{value:.{digits}g}") if math.isfinite(value) else value


def run_record(spec: RunSpec, work_root: Path) -> dict[str, Any]:
    """Train ``spec`` on one CPU thread and return what the goldens pin of it.

    Args:
        spec: the run.
        work_root: where the runner writes the run's checkpoints and logs (a fresh folder, so
            nothing is resumed).

    Returns:
        ``run_id``, ``metrics`` (``dev_*`` of the selected weights) and ``train_loss`` (one
        per evaluation), rounded; where the task stores dev unit statistics also ``units``:
        their count, a digest of their ids (stored runs pair units by id) and the selection
        metric recomputed from their column sums (``metric_from_totals``).
    """
    threads = torch.get_num_threads()
    options = RunOptions(
        work_root=work_root, cache_dir=None, device="cpu", progress=False, threads=1
    )
    try:
        outcome = train(spec, options)
    finally:
        torch.set_num_threads(threads)  # train() sets the process's thread count
    record: dict[str, Any] = {
        "run_id": spec.run_id,
        "metrics": {
            k: significant(float(v), METRIC_DIGITS)
            for k, v in sorted(outcome.metrics.items())
            if k.startswith("dev_")
        },
        "train_loss": [significant(float(r["train_loss"]), LOSS_DIGITS) for r in outcome.log],
    }
    units = outcome.predictions.get("units-dev")
    from_totals = get_task(spec.task).metric_from_totals
    if units is not None and from_totals is not None:
        data = json.loads(Path(units).read_text(encoding="utf-8"))
        totals = [float(sum(column)) for column in zip(*data["rows"], strict=True)]
        record["units"] = {
            "count": len(data["ids"]),
            "ids_digest": hashlib.blake2b("\n".join(data["ids"]).encode()).hexdigest()[:12],
            "metric": significant(from_totals(totals), METRIC_DIGITS),
        }
    return record


def task_record(task_name: str, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The golden record of one task: its version, the harness's version and each run's record
    (:func:`run_record`), trained in a temporary folder.

    Args:
        task_name: a registered task.
        overrides: extra preset overrides (the test uses one to show that the pins can fail).
    """
    with tempfile.TemporaryDirectory(prefix="golden-runs-") as work:
        runs = {
            name: run_record(spec, Path(work))
            for name, spec in golden_specs(task_name, overrides).items()
        }
    return {
        "task_version": get_task(task_name).version,
        "harness_version": HARNESS_RESULT_VERSION,
        "runs": runs,
    }


def version_problems(task_name: str, pinned: Mapping[str, Any]) -> list[str]:
    """How the versions pinned for ``task_name`` differ from the code's (empty: they match).

    Args:
        task_name: a registered task.
        pinned: the task's record in the goldens.
    """
    hint = (
        "regenerate the goldens with `python scripts/golden_runs.py` (the bump invalidates "
        "stored runs, as intended)"
    )
    problems = []
    code = get_task(task_name).version
    if pinned.get("task_version") != code:
        problems.append(
            f"task {task_name}'s version changed from {pinned.get('task_version')} to {code}: "
            + hint
        )
    if pinned.get("harness_version") != HARNESS_RESULT_VERSION:
        problems.append(
            f"the harness's result version changed from {pinned.get('harness_version')} to "
            f"{HARNESS_RESULT_VERSION}: " + hint
        )
    return problems


def _close(a: Any, b: Any, *, rel: float = 0.0, abs_: float = 0.0) -> bool:
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_) or (math.isnan(a) and math.isnan(b))


def _same_units(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    if old is None or new is None:
        return old is new
    same_ids = (old.get("count"), old.get("ids_digest")) == (
        new.get("count"),
        new.get("ids_digest"),
    )
    return same_ids and _close(old.get("metric"), new.get("metric"), abs_=METRIC_ATOL)


def number_differences(
    task_name: str, pinned: Mapping[str, Any], fresh: Mapping[str, Any]
) -> list[str]:
    """Every pinned number of ``task_name`` that the fresh record does not reproduce: run ids
    and unit ids exactly, losses within :data:`LOSS_RTOL` (relative), metrics within
    :data:`METRIC_ATOL`.

    Args:
        task_name: the task (for the messages).
        pinned: the task's record in the goldens.
        fresh: the task's record of a new run (:func:`task_record`).

    Returns:
        One line per difference (empty: the numbers are reproduced).
    """
    out: list[str] = []
    pinned_runs, fresh_runs = pinned.get("runs", {}), fresh.get("runs", {})
    for name in sorted(set(pinned_runs) | set(fresh_runs)):
        where = f"{task_name}/{name}"
        if name not in pinned_runs or name not in fresh_runs:
            out.append(f"{where}: run only in the {'fresh' if name in fresh_runs else 'pinned'}")
            continue
        old, new = pinned_runs[name], fresh_runs[name]
        if old.get("run_id") != new.get("run_id"):
            out.append(f"{where}: run id {old.get('run_id')} -> {new.get('run_id')}")
        old_loss, new_loss = old.get("train_loss", []), new.get("train_loss", [])
        if len(old_loss) != len(new_loss) or not all(
            _close(a, b, rel=LOSS_RTOL) for a, b in zip(old_loss, new_loss, strict=True)
        ):
            out.append(f"{where}: train_loss {old_loss} -> {new_loss}")
        if not _same_units(old.get("units"), new.get("units")):
            out.append(f"{where}: units {old.get('units')} -> {new.get('units')}")
        old_m, new_m = old.get("metrics", {}), new.get("metrics", {})
        for key in sorted(set(old_m) | set(new_m)):
            if (
                key not in old_m
                or key not in new_m
                or not _close(old_m[key], new_m[key], abs_=METRIC_ATOL)
            ):
                out.append(f"{where}: {key} {old_m.get(key)} -> {new_m.get(key)}")
    return out


def compute(task_names: Sequence[str] | None = None, *, verbose: bool = False) -> dict[str, Any]:
    """Golden records of ``task_names`` (default: every registered task), by task name.

    Args:
        task_names: the tasks to run (default: :data:`tasks.registry.TASKS`, in order).
        verbose: print each task's wall time to stderr.
    """
    out = {}
    for name in task_names if task_names is not None else list(TASKS):
        started = time.perf_counter()
        out[name] = task_record(name)
        if verbose:
            print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return out


def load(path: Path = GOLDENS) -> dict[str, Any]:
    """The pinned records (task name → record)."""
    return json.loads(path.read_text(encoding="utf-8"))


def dump(records: Mapping[str, Any]) -> str:
    """The goldens file's text: sorted keys, indented."""
    return json.dumps(records, indent=2, sort_keys=True) + "\n"


def check(fresh: Mapping[str, Any], pinned: Mapping[str, Any]) -> list[str]:
    """Every difference between the fresh and the pinned records (versions first per task)."""
    out = []
    for name in sorted(set(fresh) | set(pinned)):
        if name not in pinned:
            out.append(
                f"{name}: no golden run pinned (`python scripts/golden_runs.py --tasks {name}`)"
            )
        elif name not in fresh:
            out.append(f"{name}: pinned but not a registered task (regenerate the goldens)")
        else:
            out += version_problems(name, pinned[name]) or number_differences(
                name, pinned[name], fresh[name]
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate the goldens, or with ``--check`` compare against them.

    Returns:
        0, or 1 when ``--check`` finds a difference.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the goldens instead of writing them"
    )
    parser.add_argument("--out", type=Path, default=GOLDENS, help="the goldens file")
    parser.add_argument(
        "--tasks",
        help="comma list: train only these tasks and keep the others' records (a new task's "
        "golden runs: `--tasks NAME`); default every registered task",
    )
    args = parser.parse_args(argv)
    names = None
    if args.tasks:
        names = [n for n in args.tasks.split(",") if n]
        unknown = [n for n in names if n not in TASKS]
        if unknown:
            parser.error(f"unknown task(s) {unknown}; registered: {', '.join(TASKS)}")
    started = time.perf_counter()
    fresh = compute(names, verbose=True)
    print(f"{args.tasks or 'all tasks'}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if names is not None:  # the other tasks' pinned records stay as they are
        kept = load(args.out) if args.out.exists() else {}
        fresh = {**{k: v for k, v in kept.items() if k in TASKS}, **fresh}
    if args.check:
        problems = check(fresh, load(args.out))
        for line in problems:
            print(line)
        if any("version changed" not in line for line in problems):
            print(
                "numbers changed without a version bump: bump the task's VERSION "
                "(tasks/<task>/task.py) or experiments.run.identity.HARNESS_RESULT_VERSION, and "
                "regenerate the goldens with `python scripts/golden_runs.py`"
            )
        return 1 if problems else 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(fresh), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
