"""Named reproductions: which runs fill which table (``python -m experiments reproduce NAME``).

Built from the task registry, never from task names written here: every task contributes
``<task>_baseline``, ``<task>_elmo`` (its Table 1 row) and ``<task>_ablations`` (its Table 2 and
Table 3 rows), and ``table1`` / ``table2`` / ``table3`` take every registered task. A task's base
spec is the paper's ELMo configuration for it, read from its :class:`~tasks.core.TaskSpec`
(default sites, mix and ELMo dropout).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.render import (
    Row,
    RunsColumn,
    TableSpec,
    cove_table,
    load_paper,
    table1,
    table2,
    table3,
)
from experiments.spec import RunSpec, baseline_of
from tasks.registry import TASKS, get_task

TABLES = ("table1", "table2", "table3")
COVE_MISSING = (
    "CoVe columns left out: pass --cove wmtlstm-8f474287.pth (https://s3.amazonaws.com/"
    "research.metamind.io/cove/wmtlstm-8f474287.pth) and --glove glove.840B.300d.txt (CoVe's "
    "input vectors)."
)


def reproductions() -> dict[str, str]:
    """Every named reproduction → what it runs."""
    named = {
        "table1": "Table 1: baseline vs ELMo + baseline, every task",
        "table2": "Table 2: LastOnly, λ = 1, λ = 0.001 (dev), every task",
        "table3": "Table 3: ELMo at input, input & output, output (dev), every task",
    }
    for name in TASKS:
        named[f"{name}_baseline"] = f"{name}: the baseline without ELMo (Table 1 row)"
        named[f"{name}_elmo"] = f"{name}: baseline vs ELMo + baseline (Table 1 row)"
        named[f"{name}_ablations"] = f"{name}: its rows of Table 2 and Table 3"
        named[f"{name}_cove"] = f"{name}: baseline, + CoVe (last layer; λ = 1), + ELMo"
    return named


def default_seeds(name: str) -> tuple[int, ...]:
    """Seeds of a named reproduction when none are given: the most any of its tasks asks for
    (:attr:`tasks.core.TaskSpec.seeds`)."""
    task_names = list(TASKS) if name in TABLES else [name.rsplit("_", 1)[0]]
    return tuple(range(max(get_task(t).seeds for t in task_names if t in TASKS)))


def base_spec(
    task_name: str,
    preset: str,
    data: str,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str] = (),
    eval_splits: Sequence[str] = ("dev",),
) -> RunSpec:
    """The paper's ELMo configuration of a task (its default sites and mix)."""
    task = get_task(task_name)
    task.check_preset(preset)
    return RunSpec(
        task=task.name,
        task_version=task.version,
        representation="elmo",
        representation_config=dict(rep_config),
        sites=tuple(sorted(task.default_sites)),  # type: ignore[arg-type]
        mix=task.default_mix,
        dropout=task.elmo_dropout,
        state="reset",
        preset=preset,
        overrides=tuple(overrides),
        data=data,
        eval_splits=tuple(eval_splits),
    )


def rows(task_name: str, base: RunSpec, split: str) -> list[Row]:
    """The task's table rows (main metric first) for runs scored on ``split``."""
    task = get_task(task_name)
    demo = " — DEMO data" if base.data == "demo" else ""
    out = []
    for row in task.table_rows:
        metric = dataclasses.replace(row.metric, key=f"{split}_{row.metric.key}")
        label = f"{row.label} ({row.metric.label or row.metric.key}){demo}"
        out.append(Row(label, base, metric, paper_key=row.paper_key))
    return out


def tables(
    name: str,
    preset: str,
    data: str,
    seeds: Sequence[int],
    rep_config: Mapping[str, Any],
    overrides: Sequence[str] = (),
    eval_split: str | None = None,
    cove_config: Mapping[str, Any] | None = None,
) -> list[TableSpec]:
    """The tables a named reproduction renders.

    ``eval_split`` is the split whose numbers fill Table 1 and the CoVe tables (``test``
    scores the test split too; ``None``: a single task's :attr:`~tasks.core.TaskSpec.table_split`,
    ``dev`` for tables of several tasks); Tables 2 and 3 are dev tables, as in the paper.
    ``cove_config`` (CoVe weights and their GloVe) adds the CoVe columns of ``<task>_cove``.
    """
    known = reproductions()
    if name not in known:
        raise KeyError(f"unknown reproduction {name!r}; known: {', '.join(sorted(known))}")
    seeds = tuple(seeds)
    task_names = list(TASKS) if name in TABLES else [name.rsplit("_", 1)[0]]
    kind = name if name in TABLES else name.rsplit("_", 1)[1]
    if eval_split is None:
        eval_split = get_task(task_names[0]).table_split if len(task_names) == 1 else "dev"
    split = eval_split if kind in ("table1", "elmo", "baseline", "cove") else "dev"
    splits = ("dev", "test") if split == "test" else ("dev",)
    all_rows: list[Row] = []
    for task_name in task_names:
        base = base_spec(task_name, preset, data, rep_config, overrides, splits)
        all_rows += rows(task_name, base, split)
    note = " [DEMO DATA, not the task's dataset]" if data == "demo" else ""
    where = f"({split}; preset {preset}){note}"
    caption = describe_setup(rep_config, preset, data, seeds, overrides)
    paper_splits = {get_task(t).paper_split for t in task_names}
    t1_split = paper_splits.pop() if len(paper_splits) == 1 else None

    def dressed(t: TableSpec, title: str, paper_split: str | None) -> TableSpec:
        return dataclasses.replace(
            t, title=title, split=split, paper_split=paper_split, caption=caption
        )

    if kind in ("table1", "elmo"):
        t = table1(all_rows, seeds)
        return [dressed(t, f"Table 1: baseline vs ELMo + baseline {where}", t1_split)]
    if kind == "cove":
        t = cove_table(all_rows, seeds, cove_config)
        paper_split = load_paper().get("cove", {}).get(task_names[0], {}).get("split")
        t = dressed(t, f"{t.title} {where}", paper_split)
        if cove_config is None:
            t = dataclasses.replace(t, caption=(*t.caption, COVE_MISSING))
        return [t]
    if kind == "baseline":
        t = table1(all_rows, seeds)
        only = tuple(c for c in t.columns if isinstance(c, RunsColumn) and c.label == "Baseline")
        return [dressed(dataclasses.replace(t, columns=only), f"Baseline {where}", t1_split)]
    t2, t3 = table2(all_rows, seeds), table3(all_rows, seeds)
    chosen = {"table2": [t2], "table3": [t3]}.get(kind, [t2, t3])
    return [dressed(t, t.title + note, "dev") for t in chosen]


def describe_setup(
    rep_config: Mapping[str, Any],
    preset: str,
    data: str,
    seeds: Sequence[int],
    overrides: Sequence[str] = (),
) -> tuple[str, ...]:
    """Caption lines: which biLM, preset, data, seeds and changes a table's runs used."""
    if "published" in rep_config:
        bilm = f"published ELMo {rep_config['published']!r} (Peters et al. 2018)"
    elif "weights" in rep_config:
        bilm = f"official-format biLM {Path(str(rep_config['weights'])).name}"
    elif "checkpoint" in rep_config:
        bilm = f"biLM checkpoint {Path(str(rep_config['checkpoint'])).name}"
    else:
        bilm = (
            "the shipped small English biLM (elmo-bench-small-en, 3.0 M parameters, trained on "
            "2.3 M tokens), not the published ELMo"
        )
    what = "the bundled DEMO set (generated; not the task's dataset)" if data == "demo" else data
    changes = f"; changes: {' '.join(overrides)}" if overrides else ""
    lines = [
        f"biLM: {bilm}.",
        f"Preset: {preset}{changes}. Data: {what}. "
        f"Seeds: {', '.join(map(str, seeds))} ({len(seeds)} per cell).",
    ]
    if rep_config.get("finetune"):
        lines.append("The biLM was fine-tuned on each task's training text first (paper §3.4).")
    return tuple(lines)


def expected_specs(table: TableSpec) -> list[RunSpec]:
    """Every run the table needs."""
    specs: dict[str, RunSpec] = {}
    for row in table.rows:
        for column in table.columns:
            if isinstance(column, RunsColumn):
                for spec in table.expected(row, column):
                    specs.setdefault(spec.run_id, spec)
    return list(specs.values())


def baseline(spec: RunSpec) -> RunSpec:
    """The matching run without ELMo."""
    return baseline_of(spec)
