"""render(): golden Markdown/LaTeX/CSV, statistics, missing cells, paper numbers, tests over
exactly the runs of the means with Holm-adjusted p-values, captions naming what the runs rest on,
the paper column only where comparable, stale runs."""

from __future__ import annotations

import csv
import dataclasses
import importlib
import importlib.util
import io
import json
import random
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest

from experiments.report.render import (
    CSV_FIELDS,
    PROVENANCE_HEADING,
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    compute_cells,
    load_paper,
    paper_comparable,
    render,
    table1,
    table2,
)
from experiments.report.significance import Comparison, holm
from experiments.run.spec import RunSpec, baseline_fields, baseline_of, derive
from experiments.run.store import Provenance, RunRecord
from tasks.core import MetricSpec
from tests.conftest import REPO
from tests.experiments.helpers import PROVENANCE, make_record, make_spec

cells_module = importlib.import_module("experiments.report.render.cells")  # where the tests are run
GOLDENS = REPO / "tests" / "experiments" / "goldens"
ACC = MetricSpec("accuracy", scale=100, decimals=1)
DEV_ACC = MetricSpec("dev_accuracy", scale=100, decimals=1)
UNITS = "units-dev.json"


def paper_spec(task: str = "snli", **changes: Any) -> RunSpec:
    """A spec the paper's numbers are comparable with: preset paper, published biLM, real data."""
    fields: dict[str, Any] = {
        "preset": "paper",
        "data": "data",
        "representation_config": {"published": "original"},
        **changes,
    }
    return make_spec(task, **fields)


def units_text(correct: Sequence[float], **extra: Any) -> str:
    """``units-dev.json`` of an accuracy task: one ``(correct, 1)`` row per pair."""
    rows = [[float(c), 1.0] for c in correct]
    return json.dumps({"ids": [f"p{i}" for i in range(len(rows))], "rows": rows, **extra})


def pattern(n_correct: int, units: int = 100, shift: int = 0) -> list[int]:
    """``units`` 0/1 outcomes with ``n_correct`` ones, rotated by ``shift``."""
    values = [1] * n_correct + [0] * (units - n_correct)
    return values[shift:] + values[:shift]


class Store:
    """Records with their unit statistics, for ``render(..., attachments=store.attachment)``."""

    def __init__(self) -> None:
        self.records: list[RunRecord] = []
        self.units: dict[str, str] = {}

    def add(
        self,
        spec: RunSpec,
        correct: Sequence[float] | None = None,
        value: float | None = None,
        units: bool = True,
        provenance: Provenance = PROVENANCE,
        **extra: Any,
    ) -> RunRecord:
        """A run scored ``value`` (default: the accuracy of ``correct``) on dev."""
        if value is None:
            assert correct is not None
            value = sum(correct) / len(correct)
        record = RunRecord(spec=spec, metrics={"dev_accuracy": value}, provenance=provenance)
        self.records.append(record)
        if units and correct is not None:
            self.units[spec.run_id] = units_text(correct, **extra)
        return record

    def attachment(self, run_id: str, name: str) -> str | None:
        return self.units.get(run_id) if name == UNITS else None


def body_cells(text: str, label: str) -> list[str]:
    """The cells of the Markdown row starting with ``label``."""
    line = next(t for t in text.splitlines() if t.startswith(f"| {label}"))
    return [c.strip() for c in line.strip("|").split("|")]


def prose(text: str) -> str:
    """``text`` with its line breaks and indents undone (notes and provenance are wrapped)."""
    return " ".join(text.split())


def notes_of(text: str) -> str:
    """The numbered notes of a rendered Markdown table (between the table and the provenance)."""
    after = text.split("\n\n", 1)[1]
    return prose(after.split(PROVENANCE_HEADING)[0])


def golden_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_render_goldens", REPO / "scripts" / "make_render_goldens.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_goldens_reproduce() -> None:
    fresh = golden_script().compute()
    assert sorted(fresh) == sorted(p.name for p in GOLDENS.iterdir())
    for name, text in fresh.items():
        assert text == (GOLDENS / name).read_text(encoding="utf-8"), name


def test_render_is_pure_and_order_independent() -> None:
    module = golden_script()
    records = module.fake_records()
    paper = load_paper()
    table = module.tables()["table2"]
    first = render(table, records, paper)
    random.Random(0).shuffle(records)
    assert render(table, records, paper) == first


def test_paper_numbers() -> None:
    # NAACL / arXiv v2 values (Tables 1-3, §4 and §5.1-5.2), not the ICLR ones
    paper = load_paper()
    table2_numbers = {
        task: [
            paper["table2"][task][k] for k in ("baseline", "last_only", "lambda_1", "lambda_0_001")
        ]
        for task in ("squad", "snli", "srl")
    }
    assert table2_numbers == {
        "squad": [80.8, 84.7, 85.0, 85.2],
        "snli": [88.1, 89.1, 89.3, 89.5],  # Last Only 89.1, not 88.9
        "srl": [81.6, 84.1, 84.6, 84.8],
    }
    table3_numbers = {
        task: [paper["table3"][task][k] for k in ("input_only", "input_output", "output_only")]
        for task in ("squad", "snli", "srl")
    }
    assert table3_numbers == {
        "squad": [85.1, 85.6, 84.8],
        "snli": [88.9, 89.5, 88.7],
        "srl": [84.7, 84.3, 80.9],
    }
    table1_numbers = {
        task: (paper["table1"][task]["baseline"], paper["table1"][task]["elmo"])
        for task in ("squad", "snli", "srl", "coref", "ner", "sst5")
    }
    assert table1_numbers == {
        "squad": (81.1, 85.8),
        "snli": (88.0, 88.7),
        "srl": (81.4, 84.6),
        "coref": (67.2, 70.4),
        "ner": (90.15, 92.22),
        "sst5": (51.4, 54.7),
    }
    assert paper["table1"]["snli"]["elmo_std"] == 0.17
    assert paper["table1"]["ner"]["elmo_std"] == 0.10
    assert paper["table1"]["sst5"]["elmo_std"] == 0.5


def one_column_table(seeds: tuple[int, ...], base: RunSpec | None = None) -> TableSpec:
    return TableSpec(
        name="t",
        title="T",
        rows=(Row("SNLI (acc)", base or make_spec(), ACC),),
        columns=(RunsColumn("ELMo", {}, "elmo"),),
        seeds=seeds,
    )


def test_mean_and_sample_std_over_seeds() -> None:
    table = one_column_table((0, 1, 2), paper_spec())
    records = [
        make_record(derive(paper_spec(), {"seed": s}), v) for s, v in enumerate([0.1, 0.2, 0.3])
    ]
    paper = {"t": {"snli": {"elmo": 88.7, "elmo_std": 0.17}}}
    cell = compute_cells(table, records, paper)[0][0]
    assert cell.mean == pytest.approx(20.0) and cell.std == pytest.approx(10.0)  # n - 1
    assert (cell.n, cell.n_expected, cell.missing) == (3, 3, ())
    assert "| 20.0 ± 10.0 (n=3) | 88.7 ± 0.17 |" in render(table, records, paper)


def test_single_seed_shows_just_the_mean() -> None:
    table = one_column_table((0,))
    text = render(table, [make_record(make_spec(), 0.8861)], {})
    assert "| 88.6 (n=1) |  |" in text and "±" not in body_cells(text, "SNLI")[1]


def test_missing_cell_shows_a_dash_and_the_expected_run_ids() -> None:
    table = one_column_table((0, 1))
    ids = [derive(make_spec(), {"seed": s}).run_id for s in (0, 1)]
    empty = render(table, [], {})
    assert body_cells(empty, "SNLI")[1] == "—" and f"- SNLI (acc): ELMo {ids[0]}, {ids[1]}" in empty
    partial = render(table, [make_record(make_spec(), 0.5)], {})
    assert "| 50.0 (n=1 of 2) |" in partial and f"- SNLI (acc): ELMo {ids[1]}" in partial
    (line,) = csv.DictReader(io.StringIO(render(table, [], {}, "csv")))
    assert line["missing_run_ids"] == f"{ids[0]} {ids[1]}"


def test_increase_column() -> None:
    base = paper_spec()
    table = TableSpec(
        name="table1",
        title="T1",
        rows=(Row("SNLI (acc)", base, ACC),),
        columns=(
            RunsColumn("Baseline", baseline_fields()),
            RunsColumn("ELMo", {}),
            IncreaseColumn("Increase", "ELMo", "Baseline", "increase"),
        ),
    )
    records = [make_record(base, 0.887)]
    assert "| — |" in render(table, records, {})  # no baseline yet → no increase
    records.append(make_record(baseline_of(base), 0.88))
    paper = {"table1": {"snli": {"increase_abs": 0.7, "increase_rel": 5.8}}}
    assert "| 0.7 / 5.8% | 0.7 / 5.8% |" in render(table, records, paper)


def test_latex_escapes_and_formats() -> None:
    table = table2([Row("SNLI_acc 100%", make_spec(), ACC)])
    text = render(table, [], {}, "latex")
    assert r"SNLI\_acc 100\%" in text and r"$\lambda$=1" in text and "---" in text
    assert text.count(r"\\") == 2  # header and one row


def test_errors() -> None:
    table = one_column_table((0,))
    with pytest.raises(ValueError, match="fmt"):
        render(table, [], {}, "html")  # type: ignore[arg-type]
    wrong_metric = RunRecord(spec=make_spec(), metrics={"f1": 0.5}, provenance=PROVENANCE)
    with pytest.raises(ValueError, match="has no metric"):
        render(table, [wrong_metric], {})
    with pytest.raises(ValueError, match="refers to"):
        TableSpec("t", "T", (), (RunsColumn("A"), IncreaseColumn("D", "A", "B")))
    with pytest.raises(ValueError, match="unique"):
        TableSpec("t", "T", (), (RunsColumn("A"), RunsColumn("A")))


def test_honest_tables_split_caption_and_not_converged() -> None:
    """A paper number sits beside ours only for the same split; the caption and the epochs of
    the runs are printed; a cell whose runs mostly selected their last epoch is marked †."""
    import dataclasses

    base = paper_spec("snli", seed=0, lam=0.0)
    row = Row("SNLI (Acc.)", base, ACC, paper_key="snli")
    table = TableSpec(
        "table2",
        "T",
        (row,),
        (RunsColumn("λ=1", {"lam": 1.0}, "lambda_1"),),
        seeds=(0, 1, 2),
        split="dev",
        paper_split="dev",
        caption=("biLM: tiny.",),
    )
    records = []
    for seed, (best, ran) in enumerate(((3, 3), (3, 3), (2, 3))):
        spec = derive(base, {"lam": 1.0, "seed": seed})
        record = make_record(spec, 0.8)
        metrics = {**record.metrics, "best_epoch": best, "epochs_run": ran}
        records.append(dataclasses.replace(record, metrics=metrics))
    paper = load_paper()
    text = render(table, records, paper)
    assert (
        f"{PROVENANCE_HEADING}\n- biLM: tiny.\n- Epochs: 3 run per training run; selected (best "
        "dev) epoch 2–3." in text
    )
    assert "80.0 ± 0.0 † (n=3)" in text and "† not converged" in text
    assert f"{paper['table2']['snli']['lambda_1']}" in text  # same split: the paper's number
    test_table = dataclasses.replace(table, split="test")
    text = render(test_table, records, paper)
    assert f"{paper['table2']['snli']['lambda_1']}" not in text
    assert (
        "Paper column left empty: the paper's numbers are dev numbers and ours are test "
        "numbers." in prose(text)
    )
    converged = [dataclasses.replace(r, metrics={**r.metrics, "best_epoch": 2}) for r in records]
    assert "†" not in render(table, converged, paper)


def test_first_epoch_reaching() -> None:
    from experiments.report.render import first_epoch_reaching

    log = [{"epoch": 1, "dev_f1": 0.2}, {"epoch": 2, "dev_f1": 0.5}, {"epoch": 3, "dev_f1": 0.6}]
    assert first_epoch_reaching(log, "dev_f1", 0.5) == 2
    assert first_epoch_reaching(log, "dev_f1", 0.55) == 3
    assert first_epoch_reaching(log, "dev_f1", 0.7) is None
    assert first_epoch_reaching([], "dev_f1", 0.1) is None
    assert first_epoch_reaching(log, "dev_f1", 0.3, higher_is_better=False) == 1


def test_ablation_columns_carry_a_paired_test_against_their_reference() -> None:
    """Table 2: every ELMo column is tested against the baseline (Δ, p, CI from the stored
    per-example statistics); the reference column itself carries no test."""
    dev = MetricSpec("dev_accuracy", scale=100, decimals=1)
    base = make_spec()  # a registered task (snli): its metric_from_totals is accuracy
    table = table2([Row("SNLI (acc)", base, dev)], (0,))
    columns = {c.label: c for c in table.columns if isinstance(c, RunsColumn)}
    correct = {"Baseline": 50, "Last Only": 90, "λ=1": 51, "λ=0.001": 50}
    records, units = [], {}
    for label, n in correct.items():
        (spec,) = table.expected(table.rows[0], columns[label])
        records.append(
            RunRecord(spec=spec, metrics={"dev_accuracy": n / 100}, provenance=PROVENANCE)
        )
        rows = [[1.0, 1.0]] * n + [[0.0, 1.0]] * (100 - n)
        units[spec.run_id] = json.dumps({"ids": [f"p{i}" for i in range(100)], "rows": rows})

    def attachments(run_id: str, name: str) -> str | None:
        return units.get(run_id) if name == "units-dev.json" else None

    text = render(table, records, {}, attachments=attachments)
    cells = body_cells(text, "SNLI")
    deltas = body_cells(text, "↳ Δ vs Baseline")  # the tests: the row under the means
    assert (cells[1], cells[3], cells[5]) == ("50.0 (n=1)", "90.0 (n=1)", "51.0 (n=1)")
    # one seed a side: the difference and its p, conditional, never marked significant
    assert deltas[1] == "" and deltas[3] == "40.0 (Holm<0.001, conditional on the seed)"
    assert deltas[5].startswith("1.0 (Holm=") and "✱" not in deltas[5]
    # the whole test of each cell: in the notes
    (last,) = [t for t in text.splitlines() if t.startswith("   - SNLI (acc), Last Only vs")]
    (lam1,) = [t for t in text.splitlines() if t.startswith("   - SNLI (acc), λ=1 vs")]
    assert last.startswith(
        "   - SNLI (acc), Last Only vs Baseline: Δ 40.0 (p<0.001, Holm<0.001; 95 % CI ["
    )
    assert last.endswith("; 1 vs 1 seeds, 100 units)")
    assert lam1.startswith("   - SNLI (acc), λ=1 vs Baseline: Δ 1.0 (p=") and "✱" not in lam1
    assert "Last Only vs Baseline" in text and "paired bootstrap" in prose(text)
    assert "conditional on that seed" in prose(text)  # one seed a side
    cells_grid = compute_cells(table, records, {}, attachments)
    assert cells_grid[0][1].test is not None and cells_grid[0][0].test is None


def test_rows_keep_their_own_split() -> None:
    """Table 1 mixes SQuAD's dev row with test rows: a paper number sits beside ours only in
    the rows whose splits match, and a footnote names the others."""
    base = paper_spec()
    rows = (
        Row("A (acc; dev)", base, ACC, split="dev", paper_split="test"),
        Row("B (acc; test)", paper_spec("sst5"), ACC, split="test", paper_split="test"),
    )
    table = TableSpec(
        name="table1", title="T1", rows=rows, columns=(RunsColumn("ELMo", {}, "elmo"),)
    )
    paper = {"table1": {"snli": {"elmo": 88.7}, "sst5": {"elmo": 54.7}}}
    grid = compute_cells(table, [], paper)
    assert grid[0][0].paper is None and grid[1][0].paper == 54.7
    text = render(table, [], paper)
    assert (
        "Paper cells left empty for A (acc; dev): the paper's numbers are test numbers and ours "
        "are dev numbers." in prose(text)
    )
    notes = notes_of(text)
    assert notes.count("left empty") == 1 and "left empty for B" not in notes  # none on B


# --------------------------------------------------------------------------- tests of cells


def versus_table(
    base: RunSpec, columns: Sequence[str] = ("Last Only",), seeds: tuple[int, ...] = (0, 1, 2)
) -> TableSpec:
    """Baseline and ELMo columns tested against it (``mode=last`` with growing λ), one row."""
    runs = [RunsColumn("Baseline", baseline_fields(), "baseline")]
    runs += [
        RunsColumn(label, {"mode": "all", "lam": float(i)}, versus="Baseline")
        for i, label in enumerate(columns)
    ]
    return TableSpec("t", "T", (Row("SNLI (acc)", base, DEV_ACC),), tuple(runs), seeds=seeds)


def fill(store: Store, table: TableSpec, column: str, per_seed: dict[int, list[int]]) -> None:
    """Runs of ``column`` for the seeds in ``per_seed`` (seed → 0/1 outcomes)."""
    spec = next(c for c in table.columns if c.label == column)
    assert isinstance(spec, RunsColumn)
    for run in table.expected(table.rows[0], spec):
        if run.seed in per_seed:
            store.add(run, per_seed[run.seed])


def test_a_test_uses_exactly_the_runs_of_its_means() -> None:
    """3 ELMo seeds against 2 baseline seeds: the test is over 3 vs 2 runs and its difference
    is the difference of the two means (not of the seeds that have a partner)."""
    table = versus_table(make_spec())
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50), 1: pattern(52, shift=3)})
    fill(store, table, "Last Only", {0: pattern(60), 1: pattern(62, shift=5), 2: pattern(80)})
    (row,) = compute_cells(table, store.records, {}, store.attachment)
    baseline, elmo = row
    assert elmo.test is not None and (elmo.test.seeds_a, elmo.test.seeds_b) == (3, 2)
    assert elmo.runs == tuple(s.run_id for s in table.expected(table.rows[0], table.columns[1]))
    assert elmo.mean is not None and baseline.mean is not None
    assert elmo.test.difference * 100 == pytest.approx(elmo.mean - baseline.mean)
    assert elmo.mean - baseline.mean == pytest.approx(67.333 - 51.0, abs=1e-3)  # not 10 (pairs)
    text = render(table, store.records, {}, attachments=store.attachment)
    assert "Δ 16.3 (p=" in text and "; 3 vs 2 seeds, 100 units)" in text
    # an increase column: the same rule, the same runs
    increase = dataclasses.replace(
        table, columns=(*table.columns, IncreaseColumn("Increase", "Last Only", "Baseline"))
    )
    (row,) = compute_cells(increase, store.records, {}, store.attachment)
    assert row[2].test is not None and (row[2].test.seeds_a, row[2].test.seeds_b) == (3, 2)
    assert row[2].mean == pytest.approx(row[2].test.difference * 100)
    assert row[2].test.adjusted_p == pytest.approx(min(1.0, 2 * row[2].test.p_value))  # 2 tests


def test_a_run_without_unit_statistics_means_no_test_and_a_footnote_naming_it() -> None:
    table = versus_table(make_spec())
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50), 1: pattern(51, shift=2), 2: pattern(49)})
    fill(store, table, "Last Only", {0: pattern(60), 1: pattern(62), 2: pattern(61, shift=1)})
    lacking = table.expected(table.rows[0], table.columns[0])[1].run_id
    del store.units[lacking]
    cell = compute_cells(table, store.records, {}, store.attachment)[0][1]
    assert cell.test is None and cell.no_test is not None and lacking in cell.no_test
    text = render(table, store.records, {}, attachments=store.attachment)
    assert "Δ" not in body_cells(text, "SNLI")[3]  # no Δ without its test
    assert (
        f"No test for SNLI (acc) Last Only (Last Only vs Baseline): run {lacking} stored no unit "
        "statistics (units-dev.json)." in prose(text)
    )


def test_invalid_unit_statistics_raise_with_the_run_id() -> None:
    table = versus_table(make_spec(), seeds=(0,))
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50)})
    fill(store, table, "Last Only", {0: pattern(60)})
    bad = table.expected(table.rows[0], table.columns[1])[0].run_id
    store.units[bad] = json.dumps({"ids": ["p0", "p0"], "rows": [[1.0, 1.0], [0.0, 1.0]]})
    with pytest.raises(ValueError, match=f"{bad}.*duplicate unit ids"):
        render(table, store.records, {}, attachments=store.attachment)
    store.units[bad] = json.dumps({"ids": ["p0", "p1"], "rows": [[float("nan"), 1.0], [0, 1]]})
    with pytest.raises(ValueError, match=f"{bad}.*non-finite"):
        compute_cells(table, store.records, {}, store.attachment)


def test_unit_statistics_that_do_not_reproduce_the_means_give_no_test() -> None:
    table = versus_table(make_spec(), seeds=(0,))
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50)})
    (spec,) = table.expected(table.rows[0], table.columns[1])
    store.add(spec, pattern(60), value=0.70)  # stored 70 %, its units say 60 %
    cell = compute_cells(table, store.records, {}, store.attachment)[0][1]
    assert cell.test is None and cell.no_test is not None
    assert "give a difference of 10.000, the means differ by 20.000" in cell.no_test


def test_holm_adjusts_over_every_test_of_the_table_and_the_mark_follows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four tests at raw p 0.02, 0.04, 0.03, 0.5: the first three are significant alone, none
    after Holm (4 × 0.02, 3 × 0.03, then monotone), so no cell carries ✱; the family is the
    whole table (both rows)."""

    def fake_compare(a: Any, b: Any, split: str, metric: Any, samples: int = 0) -> Comparison:
        def mean(runs: Any) -> float:
            values = [json.loads(r[UNITS])["rows"] for r in runs]
            return sum(sum(c for c, _ in rows) / len(rows) for rows in values) / len(values)

        p = json.loads(a[0][UNITS])["p"]
        d = mean(a) - mean(b)
        return Comparison(
            d, d - 0.1, d + 0.1, p, 100, len(a), len(b), 123, False, 4.0, "seed-aware"
        )

    monkeypatch.setattr(cells_module, "compare_runs", fake_compare)
    base = make_spec()
    table = versus_table(base, ("A", "B"), seeds=(0, 1))
    table = dataclasses.replace(
        table, rows=(*table.rows, Row("SST-5 (acc)", make_spec("sst5"), DEV_ACC))
    )
    store = Store()
    raw = {("SNLI (acc)", "A"): 0.02, ("SNLI (acc)", "B"): 0.04, ("SST-5 (acc)", "A"): 0.03}
    for row in table.rows:
        for column in table.columns:
            assert isinstance(column, RunsColumn)
            for spec in table.expected(row, column):
                p = raw.get((row.label, column.label), 0.5)
                n = 50 if column.label == "Baseline" else 60 + spec.seed
                store.add(spec, pattern(n, shift=spec.seed), p=p)
    grid = compute_cells(table, store.records, {}, store.attachment)
    tests = [cell.test for cells in grid for cell in cells if cell.test is not None]
    assert [t.p_value for t in tests] == [0.02, 0.04, 0.03, 0.5]
    assert [t.adjusted_p for t in tests] == pytest.approx(holm([0.02, 0.04, 0.03, 0.5]))
    assert [t.adjusted_p for t in tests] == pytest.approx([0.08, 0.09, 0.09, 0.5])
    assert not any(t.significant for t in tests) and all(t.p_value < 0.05 for t in tests[:3])
    text = render(table, store.records, {}, attachments=store.attachment)
    body = [t for t in text.splitlines() if t.startswith("|")]
    assert "(p=0.020, Holm=0.080; 95 % CI [" in text and not any("✱" in t for t in body)
    assert "family of all 4 tests shown in this table" in prose(text)
    assert "two-sided, 123 bootstrap samples" in prose(text) and "1,000" not in text
    assert "docs/significance.md" in text
    # one test alone is its own family: the adjusted p is the raw one and earns the mark
    alone = dataclasses.replace(table, rows=table.rows[:1], columns=table.columns[:2])
    assert "(p=0.020, Holm=0.020✱;" in render(
        alone, store.records, {}, attachments=store.attachment
    )


def test_one_seed_on_a_side_is_footnoted_as_conditional() -> None:
    table = versus_table(make_spec(), seeds=(0, 1))
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50)})
    fill(store, table, "Last Only", {0: pattern(60), 1: pattern(64, shift=1)})
    cell = compute_cells(table, store.records, {}, store.attachment)[0][1]
    assert cell.test is not None and cell.test.conditional
    text = render(table, store.records, {}, attachments=store.attachment)
    assert "; 2 vs 1 seeds, 100 units)" in text
    assert (
        "Conditional tests (SNLI (acc) Last Only): one side has a single seed, so the test is "
        "conditional on that seed (training-seed variance not included)." in prose(text)
    )
    fill(store, table, "Baseline", {1: pattern(52, shift=2)})
    assert "Conditional" not in render(table, store.records, {}, attachments=store.attachment)


# ---------------------------------------------------------------------- the paper column


def test_paper_column_only_for_the_paper_setup() -> None:
    """Paper numbers beside ours only for preset paper + published biLM + real data + the
    same split; otherwise empty cells and a footnote with the reasons."""
    paper = {"table1": {"snli": {"baseline": 88.0, "elmo": 88.7, "increase_abs": 0.7}}}
    ours = paper_spec()
    table = table1([Row("SNLI (acc)", ours, DEV_ACC)], (0,))
    store = Store()
    store.add(ours, pattern(89))
    store.add(baseline_of(ours), pattern(88))
    assert paper_comparable(table, table.rows[0]) == (True, "")
    text = render(table, store.records, paper)
    assert body_cells(text, "SNLI")[1:] == [
        "88.0 (n=1)",
        "88.0",
        "89.0 (n=1)",
        "88.7",
        "1.0 / 8.3%",
        "0.7",
    ]
    assert "left empty" not in text
    cases = {
        make_spec(): (
            "DEMO data, preset mini, biLM = the shipped small biLM, not the published ELMo"
        ),
        paper_spec(data="demo"): "DEMO data",
        paper_spec(preset="mini"): "preset mini",
        paper_spec(representation_config={}): (
            "biLM = the shipped small biLM, not the published ELMo"
        ),
        paper_spec(representation_config={"published": "small"}): (
            "biLM = the published ELMo 'small', not the paper's 'original'"
        ),
        paper_spec(representation_config={"checkpoint": "runs/x/checkpoint.pt"}): (
            "biLM = checkpoint checkpoint.pt, not the published ELMo"
        ),
        paper_spec(limit=50): "only the first 50 examples of each split",
        paper_spec(train_fraction=0.1): "10 % of the training set",
    }
    for spec, why in cases.items():
        other = table1([Row("SNLI (acc)", spec, DEV_ACC)], (0,))
        assert paper_comparable(other, other.rows[0]) == (False, why)
        store = Store()
        store.add(spec, pattern(89))
        store.add(baseline_of(spec), pattern(88))
        text = render(other, store.records, paper)
        assert body_cells(text, "SNLI")[2::2] == ["", "", ""], spec
        assert f"Paper column left empty: {why}." in text
        (line, *_) = csv.DictReader(io.StringIO(render(other, store.records, paper, "csv")))
        assert (line["paper"], line["paper_comparable"]) == ("", "false")
        assert line["paper_incomparable_because"] == why
    split = dataclasses.replace(table, split="dev", paper_split="test")
    why = "the paper's numbers are test numbers and ours are dev numbers"
    assert paper_comparable(split, split.rows[0]) == (False, why)
    both = table1([Row("SNLI (acc)", make_spec(), DEV_ACC, split="dev", paper_split="test")])
    assert paper_comparable(both, both.rows[0])[1].startswith(f"{why}, DEMO data, preset mini")
    # no paper number withheld (none in the paper data): no footnote
    assert "left empty" not in render(table1([Row("SNLI (acc)", make_spec(), DEV_ACC)]), [], {})


# ------------------------------------------------------------------------------ captions


def provenance(**changes: Any) -> Provenance:
    return dataclasses.replace(PROVENANCE, **changes)


def test_caption_names_commits_devices_biLMs_and_result_versions() -> None:
    base = make_spec(representation_config={"published": "original"})
    table = dataclasses.replace(versus_table(base, seeds=(0, 1)), caption=("Setup.",))
    ident = {"threads": 1, "task_result_version": 2, "harness_result_version": 1}
    weights = "1a2b3c4d" + "e" * 56
    store = Store()
    plain = provenance(representation_fingerprint=weights, identity=ident)
    dirty = provenance(
        git_sha="abcdef1" + "0" * 33,
        git_dirty=True,
        representation_fingerprint=weights,
        identity=ident,
    )
    baselines = table.expected(table.rows[0], table.columns[0])
    elmos = table.expected(table.rows[0], table.columns[1])
    store.add(baselines[0], pattern(50), provenance=plain)
    store.add(baselines[1], pattern(50), provenance=plain)
    store.add(elmos[0], pattern(60), provenance=plain)
    store.add(elmos[1], pattern(60), provenance=dirty)
    text = render(table, store.records, {})
    assert (
        "- Rests on 4 runs: commits 0000000 (3 runs), abcdef1+dirty (1 run); device cpu, 1 "
        "thread; biLM elmo published:original [1a2b3c4d]; result versions: snli v2 / harness "
        "v1." in prose(text)
    )
    assert "⚠" not in text
    # runs of one configuration on other weights, another task version, a GPU: said explicitly
    other = provenance(
        representation_fingerprint="99887766" + "0" * 56,
        device="cuda:0 (NVIDIA H200), bf16",
        identity={**ident, "threads": None, "task_result_version": 3},
    )
    store.records[-1] = dataclasses.replace(store.records[-1], provenance=other)
    text = prose(render(table, store.records, {}))
    assert "devices cpu, 1 thread (3 runs), cuda:0 (NVIDIA H200), bf16 (1 run)" in text
    assert (
        "⚠ runs rest on 2 different biLM fingerprints for elmo published:original: "
        "1a2b3c4d (1 run), 99887766 (1 run)." in text
    )
    assert "result versions: snli v2 + v3 / harness v1" in text
    assert "⚠ snli runs differ in result version: v2 (3 runs), v3 (1 run)." in text
    assert render(dataclasses.replace(table, caption=()), store.records, {}).count("Rests on") == 0
    # another state policy, or a biLM fine-tuned on the task's text, has its own fingerprint:
    # named as such, not a mismatch
    store.records[-1] = dataclasses.replace(
        store.records[-1], spec=dataclasses.replace(store.records[-1].spec, state="warm")
    )
    from experiments.report.render.captions import provenance_lines

    text = " ".join(provenance_lines(store.records[1:]))
    assert "⚠ runs rest on 2 different biLM" not in text
    assert "elmo published:original, state warm [99887766]" in text
    # a biLM fine-tuned on one data set's text differs from the same task's biLM tuned on
    # another set's: not a mismatch; two fingerprints tuned on one set's text are
    tuned = [
        dataclasses.replace(
            record,
            spec=dataclasses.replace(
                record.spec, representation_config={"finetune": 1.0}, data=data, seed=i
            ),
            provenance=provenance(representation_fingerprint=f"{i}" * 64, identity=ident),
        )
        for i, (record, data) in enumerate(
            zip(store.records[2:3] * 3, ("a", "b", "a"), strict=True)
        )
    ]
    text = " ".join(provenance_lines(tuned[:2]))
    assert "⚠ runs rest on 2 different biLM" not in text
    assert "fine-tuned for snli [00000000] (1 run)" in text
    assert "fine-tuned for snli [11111111] (1 run)" in text
    text = " ".join(provenance_lines(tuned[:3]))
    assert "⚠ runs rest on 2 different biLM fingerprints for" in text
    assert "fine-tuned for snli: 00000000 (1 run), 22222222 (1 run)." in text
    # a representation trained with its task model (adapt) ends each run on weights of its
    # own: named by the identity's fingerprint (what it started from), not a mismatch
    adapted = [
        dataclasses.replace(
            record,
            spec=dataclasses.replace(record.spec, representation_config={"adapt": "lora"}, seed=i),
            provenance=provenance(
                representation_fingerprint=f"{i}" * 64,
                identity={**ident, "representation": "abcd" * 16},
            ),
        )
        for i, record in enumerate(store.records[2:3] * 2)
    ]
    text = " ".join(provenance_lines(adapted))
    assert "⚠" not in text
    assert "biLM elmo adapt=lora [abcdabcd]" in text


def test_caption_says_when_runs_differ_in_data_or_preset() -> None:
    base = make_spec()
    table = dataclasses.replace(versus_table(base, seeds=(0,)), caption=("Setup.",))
    (baseline,) = table.expected(table.rows[0], table.columns[0])
    (elmo,) = table.expected(table.rows[0], table.columns[1])
    store = Store()
    store.add(baseline, pattern(50), provenance=provenance(identity={"data": "aa" * 32}))
    elmo_identity = {"data": "bb" * 32, "config": "cc" * 32}
    store.add(elmo, pattern(60), provenance=provenance(identity=elmo_identity))
    text = prose(render(table, store.records, {}))
    assert "⚠ snli runs rest on 2 different data fingerprints: aaaaaaaa (1 run), bbbbbbbb" in text
    assert (
        "⚠ snli runs rest on 2 different resolved task configurations: cccccccc (1 run), "
        "not recorded (1 run)." in text
    )
    assert "biLM elmo checkpoint=default [fingerprint not recorded]" in text
    assert "result versions: snli not recorded / harness not recorded" in text
    mixed = dataclasses.replace(
        table, rows=(*table.rows, Row("SNLI paper (acc)", paper_spec(), DEV_ACC))
    )
    store.add(mixed.expected(mixed.rows[1], mixed.columns[1])[0], pattern(70))
    text = prose(render(mixed, store.records, {}))
    assert "⚠ runs differ in data: demo (2 runs), data (1 run)." in text
    assert "⚠ runs differ in preset: mini (2 runs), paper (1 run)." in text


def test_caption_works_for_records_without_identity() -> None:
    """A provenance without ``identity`` (records of older stores) renders without versions."""
    table = dataclasses.replace(one_column_table((0,)), caption=("Setup.",))
    old = dataclasses.replace(make_record(make_spec(), 0.5), provenance=PROVENANCE)
    text = render(table, [old], {})
    assert "- Rests on 1 run: commit 0000000; device cpu; biLM elmo checkpoint=default " in text
    assert "result versions" not in text


# ------------------------------------------------------------------------- stale and CSV


def test_stale_runs_are_marked_and_listed() -> None:
    base = make_spec()
    table = TableSpec(
        "table1",
        "T1",
        (Row("SNLI (acc)", base, DEV_ACC),),
        (
            RunsColumn("Baseline", baseline_fields()),
            RunsColumn("ELMo", {}),
            IncreaseColumn("Increase", "ELMo", "Baseline"),
        ),
    )
    store = Store()
    store.add(base, pattern(60))
    store.add(baseline_of(base), pattern(50))
    assert "‡" not in render(table, store.records, {}, stale=["not-a-run-of-this-table"])
    text = render(table, store.records, {}, stale=[base.run_id])
    cells = body_cells(text, "SNLI")
    # no column has a paper number: no paper columns (Baseline, ELMo, Increase)
    assert cells[1] == "50.0 (n=1)" and cells[2] == "60.0 ‡ (n=1)" and cells[3].endswith("‡")
    assert f"(--reuse-stale): {base.run_id}." in text
    (_, elmo, _) = csv.DictReader(
        io.StringIO(render(table, store.records, {}, "csv", stale=[base.run_id]))
    )
    assert elmo["stale_run_ids"] == base.run_id


def test_csv_carries_split_setup_test_and_paper_columns() -> None:
    table = dataclasses.replace(versus_table(make_spec()), split="dev", paper_split="dev")
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50), 1: pattern(51, shift=1)})
    fill(store, table, "Last Only", {0: pattern(70), 1: pattern(72), 2: pattern(71, shift=2)})
    text = render(table, store.records, {}, "csv", store.attachment)
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames or ()) == CSV_FIELDS
    for name in ("split", "preset", "biLM", "data", "n_seeds_a", "n_seeds_b", "n_units", "p"):
        assert name in CSV_FIELDS
    baseline, elmo = list(reader)
    cell = compute_cells(table, store.records, {}, store.attachment)[0][1]
    assert cell.test is not None
    assert (elmo["split"], elmo["preset"], elmo["data"]) == ("dev", "mini", "demo")
    assert (baseline["biLM"], elmo["biLM"]) == ("none", "elmo checkpoint=default")
    assert (elmo["n_seeds_a"], elmo["n_seeds_b"], elmo["n_units"]) == ("3", "2", "100")
    assert float(elmo["p"]) == pytest.approx(cell.test.p_value, rel=1e-5)
    assert float(elmo["p_holm"]) == pytest.approx(cell.test.adjusted_p, rel=1e-5)
    assert float(elmo["ci_low"]) == pytest.approx(cell.test.low * 100, abs=1e-3)
    assert float(elmo["ci_high"]) == pytest.approx(cell.test.high * 100, abs=1e-3)
    assert float(elmo["difference"]) == pytest.approx(71.0 - 50.5, abs=1e-3)
    assert elmo["test_samples"] == str(cell.test.samples)
    assert baseline["p"] == "" and baseline["n_seeds_a"] == ""
    assert elmo["paper_comparable"] == "false"
    assert elmo["paper_incomparable_because"].startswith("DEMO data, preset mini")


def test_a_column_that_misses_its_expected_direction_is_named_in_a_footnote() -> None:
    """``expect``: a clear gain is not mentioned, a gain the test cannot show is, and a column
    expected below its reference that is not significantly below it "comes close"."""
    base = make_spec()
    table = versus_table(base, ("Clear", "Unclear"))
    columns = (
        table.columns[0],
        dataclasses.replace(table.columns[1], expect="above"),
        dataclasses.replace(table.columns[2], expect="above"),
    )
    table = dataclasses.replace(table, columns=columns)
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50), 1: pattern(51, shift=2), 2: pattern(49)})
    fill(store, table, "Clear", {0: pattern(80), 1: pattern(82, shift=1), 2: pattern(81)})
    fill(
        store, table, "Unclear", {0: pattern(50, shift=4), 1: pattern(52), 2: pattern(49, shift=7)}
    )
    text = render(table, store.records, {}, attachments=store.attachment)
    assert "Unclear does not beat Baseline significantly on: SNLI (acc) (Δ +" in prose(text)
    assert "Clear does not beat" not in text
    below = dataclasses.replace(
        table, columns=(*columns[:2], dataclasses.replace(columns[2], expect="below"))
    )
    text = render(below, store.records, {}, attachments=store.attachment)
    assert "Unclear comes close to Baseline (not significantly below it) on: SNLI (acc)" in prose(
        text
    )


def test_a_table_leads_with_its_numbers_and_stays_narrow() -> None:
    """The first row within the first five lines (title, essentials, header,
    separator), no line wider than 160 characters (notes and provenance wrapped, the full test
    of a cell in the notes), and nothing lost to the wrapping."""
    label = "Sentence polarity (BCN, 2 classes) (accuracy; test)"
    base = make_spec()
    columns = ("biLM, random weights", "all-MiniLM-L6-v2 (hf)", "Last Only")
    table = versus_table(base, columns)
    long_caption = tuple(f"Setup line {i}: " + "words " * 60 for i in range(2))
    table = dataclasses.replace(
        table, rows=(dataclasses.replace(table.rows[0], label=label),), caption=long_caption
    )
    store = Store()
    fill(store, table, "Baseline", {0: pattern(50), 1: pattern(51, shift=2), 2: pattern(49)})
    for i, column in enumerate(columns):
        fill(store, table, column, {s: pattern(60 + i + s, shift=s) for s in (0, 1, 2)})
    text = render(table, store.records, {}, attachments=store.attachment)
    lines = text.splitlines()
    first_row = next(i for i, t in enumerate(lines) if t.startswith(f"| {label}"))
    assert first_row < 5 and lines[first_row - 2].startswith("| Task |")
    assert max(len(t) for t in lines) <= 160
    means = ["50.0 ± 1.0 (n=3)", "61.0 ± 1.0 (n=3)", "62.0 ± 1.0 (n=3)", "63.0 ± 1.0 (n=3)"]
    cells = body_cells(text, label)  # a paper column beside the Baseline alone: it has a key
    assert [cells[1], *cells[3:]] == means and cells[2] == ""
    assert "| all-MiniLM-L6-v2 (hf) (paper) |" not in text
    assert all(c.endswith("✱)") for c in body_cells(text, "↳ Δ vs Baseline")[3:])
    assert "; 3 vs 3 seeds, 100 units)" in text  # each test in full, below the table
    assert prose(long_caption[0]) in prose(text.split(PROVENANCE_HEADING)[1])


def test_a_one_seed_difference_is_shown_conditional_and_never_significant() -> None:
    """With one seed a side the test holds the seeds fixed: its p says whether these two trained
    models differ, not whether the training procedures do. The cell gives the difference and the
    p-value marked conditional, without the significance mark, however small p is."""
    metric = MetricSpec("f1", decimals=1)
    one = Comparison(0.117, 0.09, 0.14, 1e-5, 500, 1, 1, 1000, True, None, "seed-aware", 1e-4)
    three = dataclasses.replace(one, seeds_a=3, seeds_b=3, conditional=False)
    assert not one.significant and three.significant
    assert cells_module.adjusted_text(one) == "Holm<0.001, conditional on the seed"
    assert cells_module.adjusted_text(three) == f"Holm<0.001{cells_module.SIGNIFICANT}"
    pooled = dataclasses.replace(three, conditional=True, scheme="pooled")
    assert cells_module.adjusted_text(pooled) == "Holm<0.001, conditional on the seeds"
    assert cells_module.SIGNIFICANT not in cells_module.comparison_text(one, metric)


def test_recorded_costs_are_a_caption_line_per_row() -> None:
    """Runs that kept their costs (``experiments.run.runner.run_costs``) give one line per row
    (rows over the same runs share one) with each column's medians; runs without them (older
    records) add nothing."""
    table = dataclasses.replace(one_column_table((0, 1, 2)), caption=("biLM: tiny.",))
    costs = [(39936.0, 12.0, 800.0), (39936.0, 14.0, 900.0), (39936.0, 40.0, 1000.0)]
    records = []
    for seed, (trained, cpu, peak) in enumerate(costs):
        record = make_record(derive(make_spec(), {"seed": seed}), 0.8)
        timings = {
            **record.timings,
            "representation_trainable_params": trained,
            "train_cpu_s_per_epoch": cpu,
            "peak_rss_mb": peak,
        }
        records.append(dataclasses.replace(record, timings=timings))
    text = prose(render(table, records, {}))
    assert (
        "Costs, SNLI (medians): ELMo: 39.9 k representation parameters trained, "
        "14 CPU s/epoch, 0.9 GB peak memory." in text
    )
    plain = [make_record(derive(make_spec(), {"seed": s}), 0.8) for s in range(3)]
    assert "Costs," not in render(table, plain, {})
