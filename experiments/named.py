"""Named reproductions: which runs fill which table (``python -m experiments reproduce NAME``).

Each base spec is the paper's configuration for the task (TASKS_SPEC §3): for SQuAD, ELMo at the
input and the output of the first GRU, λ = 0, no layer norm, dropout 0.5 (document-qa defaults).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from experiments.render import MetricFormat, Row, RunsColumn, TableSpec, load_paper, table1
from experiments.render import table2 as _table2
from experiments.render import table3 as _table3
from experiments.spec import MixSpec, RunSpec, baseline_of

#: task → (sites, mix, metric label, metric key); versions come from tasks.registry.
TASK_DEFAULTS: dict[str, dict[str, Any]] = {
    "squad": {
        "sites": ("input", "output"),
        "mix": MixSpec("all", 0.0, False),
        "label": "SQuAD (F1)",
        "metric": "f1",
        "extra": (("SQuAD (EM)", "exact_match"),),  # the paper reports F1 only
    },
}

NAMED: dict[str, str] = {
    "squad_baseline": "SQuAD baseline (BiDAF + self-attention, no ELMo), Table 1 row",
    "squad_elmo": "SQuAD baseline vs ELMo + baseline, Table 1 row",
    "squad_ablations": "SQuAD rows of Table 2 (LastOnly, λ = 1, λ = 0.001) and Table 3 (sites)",
}


def base_spec(task: str, preset: str, data: str, rep_config: Mapping[str, Any]) -> RunSpec:
    """The paper's ELMo configuration of ``task``."""
    if task not in TASK_DEFAULTS:
        raise KeyError(f"unknown task {task!r}; known: {', '.join(TASK_DEFAULTS)}")
    from tasks.registry import get_task

    d = TASK_DEFAULTS[task]
    return RunSpec(
        task=task,
        task_version=get_task(task).version,
        representation="elmo",
        representation_config=dict(rep_config),
        sites=d["sites"],
        mix=d["mix"],
        dropout=0.5,
        state="reset",
        preset=preset,
        data=data,
    )


def baseline(spec: RunSpec) -> RunSpec:
    """The matching run without ELMo."""
    return baseline_of(spec)


def _rows(task: str, preset: str, data: str, rep_config: Mapping[str, Any]) -> list[Row]:
    """The task's main metric row (compared with the paper) and its secondary metric rows."""
    d = TASK_DEFAULTS[task]
    demo = " — demo data" if data == "demo" else ""
    base = base_spec(task, preset, data, rep_config)
    rows = [Row(d["label"] + demo, base, MetricFormat(d["metric"]), paper_key=task)]
    for label, key in d.get("extra", ()):
        rows.append(Row(label + demo, base, MetricFormat(key), paper_key=f"{task}_{key}"))
    return rows


def tables(
    name: str, preset: str, data: str, seeds: Sequence[int], rep_config: Mapping[str, Any]
) -> list[TableSpec]:
    """The tables a named reproduction renders."""
    seeds = tuple(seeds)
    rows = _rows("squad", preset, data, rep_config)
    note = " [DEMO DATA: synthetic, not SQuAD]" if data == "demo" else ""
    split = "dev"
    if name == "squad_elmo":
        t = table1(rows, seeds)
        return [dataclasses.replace(t, title=f"Table 1 row: baseline vs ELMo ({split}){note}")]
    if name == "squad_baseline":
        t = table1(rows, seeds)
        only = tuple(c for c in t.columns if isinstance(c, RunsColumn) and c.label == "Baseline")
        return [dataclasses.replace(t, columns=only, title=f"SQuAD baseline ({split}){note}")]
    if name == "squad_ablations":
        t2, t3 = _table2(rows, seeds), _table3(rows, seeds)
        return [
            dataclasses.replace(t2, title=t2.title + note),
            dataclasses.replace(t3, title=t3.title + note),
        ]
    raise KeyError(f"unknown reproduction {name!r}; known: {', '.join(NAMED)}")


def expected_specs(table: TableSpec) -> list[RunSpec]:
    """Every run the table needs."""
    specs: dict[str, RunSpec] = {}
    for row in table.rows:
        for column in table.columns:
            if isinstance(column, RunsColumn):
                for spec in table.expected(row, column):
                    specs.setdefault(spec.run_id, spec)
    return list(specs.values())


def paper() -> dict[str, Any]:
    """The paper's numbers."""
    return load_paper()
