"""render(): golden Markdown/LaTeX/CSV, statistics, missing cells, paper numbers."""

from __future__ import annotations

import importlib.util
import json
import random
from types import ModuleType

import pytest

from experiments.render import (
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    compute_cells,
    load_paper,
    render,
    table2,
)
from experiments.spec import baseline_fields, baseline_of, derive
from experiments.store import RunRecord
from tasks.core import MetricSpec
from tests.conftest import REPO
from tests.experiments.helpers import PROVENANCE, make_record, make_spec

GOLDENS = REPO / "tests" / "experiments" / "goldens"
ACC = MetricSpec("accuracy", scale=100, decimals=1)


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
    # NAACL / arXiv v2 values (TASKS_SPEC.md §1.3-1.4), not the ICLR ones
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


def one_column_table(seeds: tuple[int, ...]) -> TableSpec:
    return TableSpec(
        name="t",
        title="T",
        rows=(Row("SNLI (acc)", make_spec(), ACC),),
        columns=(RunsColumn("ELMo", {}, "elmo"),),
        seeds=seeds,
    )


def test_mean_and_sample_std_over_seeds() -> None:
    table = one_column_table((0, 1, 2))
    records = [
        make_record(derive(make_spec(), {"seed": s}), v) for s, v in enumerate([0.1, 0.2, 0.3])
    ]
    paper = {"t": {"snli": {"elmo": 88.7, "elmo_std": 0.17}}}
    cell = compute_cells(table, records, paper)[0][0]
    assert cell.mean == pytest.approx(20.0) and cell.std == pytest.approx(10.0)  # n - 1
    assert (cell.n, cell.n_expected, cell.missing) == (3, 3, ())
    assert "| 20.0 ± 10.0 (n=3) | 88.7 ± 0.17 |" in render(table, records, paper)


def test_single_seed_shows_just_the_mean() -> None:
    table = one_column_table((0,))
    text = render(table, [make_record(make_spec(), 0.8861)], {})
    assert "| 88.6 (n=1) |  |" in text and "±" not in text.split("\n\n")[1]


def test_missing_cell_shows_a_dash_and_the_expected_run_ids() -> None:
    table = one_column_table((0, 1))
    ids = [derive(make_spec(), {"seed": s}).run_id for s in (0, 1)]
    assert f"| — ({ids[0]}, {ids[1]}) |" in render(table, [], {})
    partial = render(table, [make_record(make_spec(), 0.5)], {})
    assert f"50.0 (n=1 of 2; missing {ids[1]})" in partial
    csv_line = render(table, [], {}, "csv").splitlines()[1]
    assert csv_line.endswith(f"{ids[0]} {ids[1]}")


def test_increase_column() -> None:
    base = make_spec()
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

    base = make_spec("snli", seed=0, lam=0.0)
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
        "_biLM: tiny._  \n_Epochs: 3 run per training run; selected (best dev) epoch 2–3._" in text
    )
    assert "80.0 ± 0.0 † (n=3)" in text and "† not converged" in text
    assert f"{paper['table2']['snli']['lambda_1']}" in text  # same split: the paper's number
    test_table = dataclasses.replace(table, split="test")
    text = render(test_table, records, paper)
    assert f"{paper['table2']['snli']['lambda_1']}" not in text
    assert "paper column is left empty" in text
    converged = [dataclasses.replace(r, metrics={**r.metrics, "best_epoch": 2}) for r in records]
    assert "†" not in render(table, converged, paper)


def test_first_epoch_reaching() -> None:
    from experiments.render import first_epoch_reaching

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
    line = next(t for t in text.splitlines() if t.startswith("| SNLI"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    baseline, last, lam1 = cells[1], cells[3], cells[5]
    assert "Δ" not in baseline and "p=" not in baseline
    assert last.startswith("90.0 (n=1) Δ 40.0 (p=0.001✱, CI [")
    assert lam1.startswith("51.0 (n=1) Δ 1.0 (p=") and "✱" not in lam1
    assert "Last Only vs Baseline" in text and "paired bootstrap" in text
    cells_grid = compute_cells(table, records, {}, attachments)
    assert cells_grid[0][1].test is not None and cells_grid[0][0].test is None


def test_rows_keep_their_own_split() -> None:
    """Table 1 mixes SQuAD's dev row with test rows: a paper number sits beside ours only in
    the rows whose splits match, and a footnote names the others."""
    base = make_spec()
    rows = (
        Row("A (acc; dev)", base, ACC, split="dev", paper_split="test"),
        Row("B (acc; test)", make_spec(task="sst5"), ACC, split="test", paper_split="test"),
    )
    table = TableSpec(
        name="table1", title="T1", rows=rows, columns=(RunsColumn("ELMo", {}, "elmo"),)
    )
    paper = {"table1": {"snli": {"elmo": 88.7}, "sst5": {"elmo": 54.7}}}
    grid = compute_cells(table, [], paper)
    assert grid[0][0].paper is None and grid[1][0].paper == 54.7
    text = render(table, [], paper)
    assert "A (acc; dev): the paper's numbers are test numbers and ours are dev numbers" in text
    assert "B (acc; test): the paper" not in text
