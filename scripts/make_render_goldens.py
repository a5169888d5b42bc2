"""Regenerate the render goldens: ``python -m scripts.make_render_goldens`` (from the repo root).

Fake, fixed run records (no model is trained) are rendered into Tables 1–3 with the paper numbers
of ``experiments/report/paper.toml``; the texts go to ``tests/experiments/goldens/``. Table 1 is set
up as the paper's (preset ``paper``, the published biLM, real data), so its paper column is filled
(but for its dev row); Table 2 is a DEMO / mini table (paper column empty, with the reason) whose
runs stored fake per-unit statistics, so its cells carry Holm-adjusted tests (one run without
statistics, one reused stale run, one run on a second biLM fingerprint); Table 3 has neither
caption nor tests.
``tests/experiments/test_render.py`` renders them again and compares: any change to the table
layout, the statistics, the number formatting, the paper data or the run_id hash shows up as a diff.
Regenerate only for an intended change, and say why in the commit.
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

from experiments.report.render import Row, RunsColumn, TableSpec, load_paper, render, table1, table2
from experiments.report.render import table3 as make_table3
from experiments.run.spec import MixSpec, RunSpec, baseline_of, derive
from experiments.run.store import RunRecord
from tasks.core import MetricSpec
from tests.experiments.helpers import PROVENANCE  # the same fake provenance as the tests

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "experiments" / "goldens"
PAPER = REPO / "experiments" / "report" / "paper.toml"

F1 = MetricSpec("f1", scale=100, decimals=1)
ACCURACY = MetricSpec("accuracy", scale=100, decimals=1)
NER_F1 = MetricSpec("f1", scale=100, decimals=2)
DEV_F1 = MetricSpec("dev_f1", scale=100, decimals=1)
DEV_ACCURACY = MetricSpec("dev_accuracy", scale=100, decimals=1)
UNITS = 200  # evaluation units of the fake unit statistics (Table 2)
#: Table 2's runs: a recorded biLM fingerprint and identity (result versions, threads).
TABLE2_PROVENANCE = dataclasses.replace(
    PROVENANCE,
    representation_fingerprint="ab12cd34" + "0" * 56,
    identity={"threads": 1, "task_result_version": 1, "harness_result_version": 1},
)
#: One SRL run of Table 2 rests on other biLM weights, from a dirty checkout.
OTHER_PROVENANCE = dataclasses.replace(
    TABLE2_PROVENANCE,
    git_sha="1234567" + "0" * 33,
    git_dirty=True,
    representation_fingerprint="9f8e7d6c" + "0" * 56,
)


def base(task: str, sites: tuple[str, ...] = ("input",), lam: float = 0.001) -> RunSpec:
    """A small ELMo spec for ``task`` (version 1, mini preset, demo data)."""
    return RunSpec(
        task=task,
        task_version=1,
        representation="elmo",
        representation_config={"checkpoint": "runs/small-en/checkpoint.pt"},
        sites=sites,
        mix=MixSpec(mode="all", lam=lam),
        preset="mini",
        data="demo",
        max_epochs=2,
    )


def paper_base(task: str, sites: tuple[str, ...] = ("input",)) -> RunSpec:
    """The paper's setup for ``task``: preset ``paper``, the published biLM, real data."""
    return dataclasses.replace(
        base(task, sites),
        representation_config={"published": "original"},
        preset="paper",
        data="data",
    )


def tables() -> dict[str, TableSpec]:
    """The three tables, with rows that exercise every cell state."""
    squad = base("squad", ("input", "output"))
    snli = base("snli", ("input", "output"))
    srl = base("srl")
    t1 = table1(
        [
            Row("SQuAD (F1; dev)", paper_base("squad", ("input", "output")), F1, split="dev"),
            Row("SNLI (acc)", paper_base("snli", ("input", "output")), ACCURACY),
            Row("NER (F1)", paper_base("ner"), NER_F1, seeds=(0, 1, 2, 3, 4)),
            Row("SST-5 (acc)", paper_base("sst5"), ACCURACY, seeds=(0, 1, 2, 3, 4)),
        ]
    )
    t2 = table2(
        [
            Row("SQuAD (F1)", squad, DEV_F1),
            Row("SNLI (acc)", snli, DEV_ACCURACY),
            Row("SRL (F1)", srl, DEV_F1),
        ],
        seeds=(0, 1, 2),
    )
    return {
        "table1": dataclasses.replace(
            t1, paper_split="test", caption=("biLM: the published ELMo 'original'.",)
        ),
        "table2": dataclasses.replace(
            t2,
            split="dev",
            paper_split="dev",
            caption=("biLM: checkpoint runs/small-en/checkpoint.pt.",),
        ),
        "table3": make_table3(
            [
                Row("SQuAD (F1)", squad, DEV_F1),
                Row("SNLI (acc)", snli, DEV_ACCURACY),
                Row("SRL (F1)", srl, DEV_F1, seeds=(0,)),
            ],
            seeds=(0, 1),
        ),
    }


def record(spec: RunSpec, **metrics: float) -> RunRecord:
    """A fake stored run with one log line per epoch."""
    log = [
        {
            "epoch": epoch,
            **{f"dev_{k.removeprefix('dev_')}": v - 0.01 * (2 - epoch) for k, v in metrics.items()},
        }
        for epoch in (1, 2)
    ]
    provenance = PROVENANCE if spec.preset == "paper" else TABLE2_PROVENANCE
    if (
        spec.task == "srl"
        and spec.representation == "elmo"
        and spec.mix.lam == 1.0
        and spec.seed == 2
    ):
        provenance = OTHER_PROVENANCE
    return RunRecord(spec=spec, metrics=metrics, provenance=provenance, log=tuple(log))


def fake_records() -> list[RunRecord]:
    """Runs for most cells: complete, partial (some seeds missing) and absent cells."""
    t = tables()
    out: list[RunRecord] = []
    # Table 1: SQuAD complete; SNLI baseline only; NER 5 seeds each; SST-5 ELMo 3 of 5 seeds.
    out += [record(baseline_of(t["table1"].rows[0].base), f1=0.8113)]
    out += [record(t["table1"].rows[0].base, f1=0.8561)]
    out += [record(baseline_of(t["table1"].rows[1].base), accuracy=0.8795)]
    ner_f1 = [(0.9012, 0.9221), (0.9020, 0.9230), (0.9005, 0.9214), (0.9031, 0.9209), (0.9, 0.92)]
    for seed, (baseline_f1, elmo_f1) in enumerate(ner_f1):
        ner = derive(t["table1"].rows[2].base, {"seed": seed})
        out += [record(baseline_of(ner), f1=baseline_f1), record(ner, f1=elmo_f1)]
    for seed in range(5):
        sst5 = derive(t["table1"].rows[3].base, {"seed": seed})
        out += [record(baseline_of(sst5), accuracy=0.512 + 0.004 * seed)]
        if seed < 3:
            out += [record(sst5, accuracy=0.545 + 0.003 * seed)]
    # Table 2: SQuAD and SNLI complete over 3 seeds, SRL without λ = 0.001 and one LastOnly seed.
    columns = {
        "baseline": lambda s: baseline_of(s),
        "last": lambda s: derive(s, {"mode": "last"}),
        "lam1": lambda s: derive(s, {"mode": "all", "lam": 1.0}),
        "lam0.001": lambda s: derive(s, {"mode": "all", "lam": 0.001}),
    }
    values = {
        "squad": {"baseline": 0.808, "last": 0.846, "lam1": 0.851, "lam0.001": 0.853},
        "snli": {"baseline": 0.881, "last": 0.889, "lam1": 0.893, "lam0.001": 0.896},
        "srl": {"baseline": 0.815, "last": 0.840, "lam1": 0.846},
    }
    for row in t["table2"].rows:
        key = row.metric.key
        for column, value in values[row.base.task].items():
            for seed in (0, 1, 2):
                if row.base.task == "srl" and column == "last" and seed == 2:
                    continue
                spec = columns[column](derive(row.base, {"seed": seed}))
                out += [record(spec, **{key: value + 0.002 * seed - 0.001 * (seed == 1)})]
    # Table 3: sites, 2 seeds; SRL single seed; SNLI output-only absent.
    sites = {"in": ("input",), "io": ("input", "output"), "out": ("output",)}
    values3 = {
        "squad": {"in": 0.851, "io": 0.855, "out": 0.848},
        "snli": {"in": 0.889, "io": 0.894},
        "srl": {"in": 0.847, "io": 0.843, "out": 0.809},
    }
    for row in t["table3"].rows:
        key = row.metric.key
        for column, value in values3[row.base.task].items():
            for seed in row.seeds or (0, 1):
                spec = derive(row.base, {"sites": sites[column], "seed": seed})
                out += [record(spec, **{key: value + 0.003 * seed})]
    unique = {r.run_id: r for r in out}  # a few Table 2/3 cells are the same runs
    return list(unique.values())


def unit_rows(task: str, value: float, seed: str) -> list[list[float]]:
    """``UNITS`` rows of ``task``'s unit statistics whose metric is exactly ``value``: the
    task's easier units are right more often (a per-task order perturbed per run), and one
    unit carries the fraction (accuracy ``(correct, 1)``, SQuAD ``(f1, em, 1)``, SRL span
    counts ``(correct, 1, 1)``)."""
    easiness = random.Random(task)
    noise = random.Random(seed)
    order = sorted(range(UNITS), key=lambda u: easiness.random() + 0.3 * noise.random())
    total = value * UNITS
    scores = [0.0] * UNITS
    for rank, unit in enumerate(order):
        scores[unit] = min(1.0, max(0.0, total - rank))
    if task == "squad":
        return [[s, float(s == 1.0), 1.0] for s in scores]
    return [[s, 1.0] if task == "snli" else [s, 1.0, 1.0] for s in scores]


def fake_units(records: list[RunRecord]) -> dict[str, str]:
    """``units-dev.json`` of Table 2's runs (run_id → text), except SQuAD λ = 1, seed 1."""
    table = tables()["table2"]
    wanted = {
        spec.run_id: row
        for row in table.rows
        for column in table.columns
        if isinstance(column, RunsColumn)
        for spec in table.expected(row, column)
    }
    out = {}
    for r in records:
        row = wanted.get(r.run_id)
        if row is None or (r.spec.task == "squad" and r.spec.mix.lam == 1.0 and r.spec.seed == 1):
            continue
        rows = unit_rows(r.spec.task, r.metrics[row.metric.key], r.run_id)
        ids = [f"{r.spec.task}-dev-{u}" for u in range(UNITS)]
        out[r.run_id] = json.dumps({"ids": ids, "rows": rows})
    return out


def stale_runs() -> tuple[str, ...]:
    """Runs passed as reused although stale: SNLI LastOnly, seed 0, of Table 2."""
    snli = tables()["table2"].rows[1].base
    return (derive(snli, {"mode": "last", "seed": 0}).run_id,)


def compute() -> dict[str, str]:
    """Golden file name → rendered text."""
    paper = load_paper(PAPER)
    records = fake_records()
    units = fake_units(records)

    def attachments(run_id: str, name: str) -> str | None:
        return units.get(run_id) if name == "units-dev.json" else None

    result = {}
    t = tables()
    for name, table in t.items():
        if name == "table2":
            continue
        result[f"{name}.md"] = render(table, records, paper, "markdown")
    for fmt, ext in (("markdown", "md"), ("latex", "tex"), ("csv", "csv")):
        result[f"table2.{ext}"] = render(
            t["table2"],
            records,
            paper,
            fmt,
            attachments,
            stale=stale_runs(),  # type: ignore[arg-type]
        )
    return result


def main() -> None:
    """Write the goldens."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in compute().items():
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
