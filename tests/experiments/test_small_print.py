"""The small print under a rendered table: the legend counts ``n`` against the seeds the table
requests, and the costs line says what it counts, once per set of runs."""

from __future__ import annotations

from experiments.report.render import Row, RunsColumn, TableSpec, render
from experiments.run.spec import RunSpec, baseline_fields, derive
from experiments.run.store import RunRecord
from tasks.core import MetricSpec
from tests.experiments.helpers import PROVENANCE, make_spec

F1 = MetricSpec("dev_f1", scale=100, decimals=1, label="F1")
EM = MetricSpec("dev_em", scale=100, decimals=1, label="EM")
#: What a run keeps of its costs (``experiments.run.runner.run_costs``): 1228.8 MB is 1.2 GB.
COSTS = {
    "representation_trainable_params": 0.0,
    "train_cpu_s_per_epoch": 19.0,
    "peak_rss_mb": 1228.8,
}


def squad_like(seeds: tuple[int, ...]) -> TableSpec:
    """Two rows over the same runs (one task's F1 and EM, as Table 1's SQuAD rows), a baseline
    and an ELMo column, a caption (so the costs line is rendered)."""
    base = make_spec("squad")
    return TableSpec(
        name="t",
        title="T",
        rows=(Row("SQuAD (F1)", base, F1), Row("SQuAD (EM)", base, EM)),
        columns=(RunsColumn("Baseline", baseline_fields()), RunsColumn("ELMo", {})),
        seeds=seeds,
        caption=("biLM: tiny.",),
    )


def record(spec: RunSpec, costs: bool = True) -> RunRecord:
    """A run with both metrics and, unless ``costs`` is false, the costs a run keeps."""
    timings = {"wall_s": 1.0, **(COSTS if costs else {})}
    metrics = {"dev_f1": 0.8, "dev_em": 0.7}
    return RunRecord(spec=spec, metrics=metrics, provenance=PROVENANCE, timings=timings)


def runs(table: TableSpec, seeds: tuple[int, ...], costs: bool = True) -> list[RunRecord]:
    """Records of ``seeds`` for every run column of ``table`` (its first row's runs)."""
    row = table.rows[0]
    return [
        record(derive(row.base, {**column.changes, "seed": seed}), costs)
        for column in table.columns
        if isinstance(column, RunsColumn)
        for seed in seeds
    ]


def prose(text: str) -> str:
    """``text`` with its line breaks and indents undone (notes and captions are wrapped)."""
    return " ".join(text.split())


def legend(text: str) -> str:
    """The first numbered note of a rendered Markdown table: how to read its cells."""
    return prose(text).split(" 1. ", 1)[1].split(" 2. ", 1)[0].split(" Setup and ", 1)[0]


def test_rows_over_the_same_runs_print_one_costs_line() -> None:
    """SQuAD's F1 and EM rows read the same runs: their costs are one line, not two."""
    table = squad_like((0,))
    text = prose(render(table, runs(table, (0,)), {}))
    assert text.count("Costs,") == 1, text
    assert "Costs, SQuAD (medians):" in text


def test_the_costs_line_says_what_each_figure_counts() -> None:
    """``Baseline 0 trained`` left the reader to guess what was zero: the line names it."""
    table = squad_like((0,))
    text = prose(render(table, runs(table, (0,)), {}))
    assert (
        "Costs, SQuAD (medians): Baseline: 0 representation parameters trained, 19 CPU s/epoch, "
        "1.2 GB peak memory; ELMo: 0 representation parameters trained, 19 CPU s/epoch, "
        "1.2 GB peak memory." in text
    ), text
    assert "Baseline 0 trained" not in text
    assert "Costs," not in render(table, runs(table, (0,), costs=False), {})


def test_a_one_seed_table_with_its_runs_says_nothing_is_missing() -> None:
    """One seed requested and found: ``n`` is counted against that one seed, and the legend
    names no cell ``2 of 3`` and nothing still missing."""
    table = squad_like((0,))
    text = render(table, runs(table, (0,)), {})
    note = legend(text)
    assert "(n=1)" in text
    assert note.startswith("Ours: mean ± sample standard deviation (n − 1) over seeds, "), note
    assert "n = runs found of the seeds requested (all found)." in note, note
    assert "missing" not in note and "of 3" not in note and "not run yet" not in note, note


def test_a_table_still_missing_runs_reads_them_with_its_own_numbers() -> None:
    """Two of three seeds found: the legend's example is that cell's ``n=2 of 3``; a table
    with an empty cell explains the dash as well."""
    table = squad_like((0, 1, 2))
    note = legend(render(table, runs(table, (0, 1)), {}))
    assert "(n=2 of 3: 1 still missing; a note lists the runs expected)" in note, note
    assert "not run yet" not in note
    baseline_only = [r for r in runs(table, (0,)) if r.spec.representation == "none"]
    note = legend(render(table, baseline_only, {}))
    assert "(n=1 of 3: 2 still missing; — = not run yet; a note lists" in note, note
