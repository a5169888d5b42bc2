"""Render result tables (Tables 1–3 of Peters et al., 2018) from stored runs: pure functions.

A :class:`TableSpec` says which runs fill which cell: each :class:`Row` carries a full base
:class:`~experiments.spec.RunSpec`, each :class:`RunsColumn` a change to it (baseline, LastOnly, λ,
sites), and the table the seeds. A cell therefore knows the exact run_ids it expects; it shows the
mean ± sample standard deviation (n − 1) over the runs found, ``n``, the ids still missing (``—``
when none was found), and the paper's number beside it (from ``experiments/paper.toml``).

Metrics are stored in natural units and scaled here (:class:`MetricSpec`, e.g. F1 × 100 with one
decimal). :func:`render` writes Markdown, LaTeX (booktabs) or CSV (one line per cell).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import statistics
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from experiments.significance import Comparison, compare_runs
from experiments.spec import RunSpec, baseline_fields, derive
from experiments.store import RunRecord
from tasks.core import MetricSpec

Format = Literal["markdown", "latex", "csv"]
FORMATS: tuple[str, ...] = ("markdown", "latex", "csv")
DEFAULT_PAPER = Path(__file__).with_name("paper.toml")
MISSING = "—"
CSV_FIELDS = (
    "table",
    "row",
    "column",
    "mean",
    "std",
    "n",
    "n_expected",
    "relative",
    "paper",
    "paper_std",
    "paper_relative",
    "missing_run_ids",
)


@dataclass(frozen=True)
class Row:
    """One table row: a task in its base configuration.

    Attributes:
        label: shown in the first column, e.g. ``"SQuAD (F1)"``.
        base: the complete spec the columns modify (its seed is replaced by each table seed).
        metric: the metric shown.
        seeds: seeds of this row; ``None`` uses the table's.
        paper_key: the row's section in the paper table; ``None`` uses ``base.task``.
        split: the split of this row's numbers; ``None`` uses the table's (Table 1 mixes
            SQuAD's dev row with the other tasks' test rows).
        paper_split: the split of the paper's number for this row; ``None`` uses the table's.
    """

    label: str
    base: RunSpec
    metric: MetricSpec
    seeds: tuple[int, ...] | None = None
    paper_key: str | None = None
    split: str | None = None
    paper_split: str | None = None


@dataclass(frozen=True)
class RunsColumn:
    """A column of runs: the row's base spec with ``changes`` (keys as in ``spec.derive``).

    Attributes:
        label: header, e.g. ``"Last Only"``.
        changes: spec changes, e.g. ``{"mode": "last"}``; empty for the base itself.
        paper_key: the paper's value for this column; ``None`` when the paper has none.
        versus: label of this column's reference column (an ablation's baseline); its cells
            then carry the difference to it with a paired bootstrap test.
    """

    label: str
    changes: Mapping[str, Any] = field(default_factory=dict)
    paper_key: str | None = None
    versus: str | None = None


@dataclass(frozen=True)
class IncreaseColumn:
    """Difference of two :class:`RunsColumn` means, absolute and relative error reduction.

    The relative value, ``Δ / (100 − minuend_base)`` as in Table 1, is shown for metrics scaled to
    percentages (``scale == 100``) only.

    Attributes:
        label: header, e.g. ``"Increase"``.
        minuend: label of the improved column (e.g. ``"ELMo"``).
        subtrahend: label of the reference column (e.g. ``"Baseline"``).
        paper_key: the paper's ``<key>_abs`` and ``<key>_rel`` values; ``None`` for none.
    """

    label: str
    minuend: str
    subtrahend: str
    paper_key: str | None = None


Column = RunsColumn | IncreaseColumn


@dataclass(frozen=True)
class TableSpec:
    """Rows × columns of a results table.

    Attributes:
        name: short name, e.g. ``"table2"``; also the default paper section.
        title: caption.
        rows: the rows, in order.
        columns: the columns, in order.
        seeds: seeds of every row without its own.
        paper_table: section of the paper data; ``None`` uses ``name``.
        split: the split our runs were scored on (``None``: not stated).
        paper_split: the split of the paper's numbers in this table; when both splits are
            stated and differ, the paper column stays empty (with a footnote): a paper number
            sits beside ours only for the same split.
        caption: lines printed under the title (biLM, preset, data, seeds, ...).
    """

    name: str
    title: str
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    seeds: tuple[int, ...] = (0,)
    paper_table: str | None = None
    split: str | None = None
    paper_split: str | None = None
    caption: tuple[str, ...] = ()

    @property
    def paper_comparable(self) -> bool:
        """Whether the paper's numbers are for the split of our runs (or splits are unstated)."""
        return self.split is None or self.paper_split is None or self.split == self.paper_split

    def splits_of(self, row: Row) -> tuple[str | None, str | None]:
        """The row's split and its paper number's split (the row's own, else the table's)."""
        return row.split or self.split, row.paper_split or self.paper_split

    def row_comparable(self, row: Row) -> bool:
        """Whether the paper's number for ``row`` is for the split of our runs."""
        ours, paper = self.splits_of(row)
        return ours is None or paper is None or ours == paper

    def __post_init__(self) -> None:
        labels = [c.label for c in self.columns]
        if len(set(labels)) != len(labels):
            raise ValueError(f"column labels must be unique: {labels}")
        runs = {c.label for c in self.columns if isinstance(c, RunsColumn)}
        for column in self.columns:
            if isinstance(column, IncreaseColumn):
                refs: tuple[str | None, ...] = (column.minuend, column.subtrahend)
            else:
                refs = (column.versus,) if column.versus is not None else ()
            for ref in refs:
                if ref not in runs or ref == column.label:
                    raise ValueError(
                        f"{column.label!r} refers to {ref!r}; run columns: {sorted(runs)}"
                    )
        if not self.seeds or any(not r.seeds for r in self.rows if r.seeds is not None):
            raise ValueError("seeds must not be empty")

    def expected(self, row: Row, column: RunsColumn) -> tuple[RunSpec, ...]:
        """The specs (one per seed) that fill a cell, deduplicated in seed order."""
        specs: dict[str, RunSpec] = {}
        for seed in row.seeds if row.seeds is not None else self.seeds:
            spec = derive(row.base, {**column.changes, "seed": seed})
            specs.setdefault(spec.run_id, spec)
        return tuple(specs.values())


@dataclass(frozen=True)
class Cell:
    """One computed cell (scaled units).

    Attributes:
        mean: mean over the runs found (difference of means for an increase); ``None`` if none.
        std: sample standard deviation (n − 1); ``None`` for fewer than two runs.
        n: runs found.
        n_expected: runs the cell expects (0 for an increase).
        missing: run_ids expected but not found.
        relative: relative error reduction in percent (increase cells only).
        paper: the paper's number; ``None`` when it has none.
        paper_std: the paper's standard deviation, if printed.
        paper_relative: the paper's relative increase in percent (increase cells only).
        not_converged: on most of the runs found, the selected epoch was the last one run.
        test: paired bootstrap of an increase, or of a run column against its ``versus``
            column (natural units), when both columns' runs stored per-unit statistics.
    """

    mean: float | None
    std: float | None
    n: int
    n_expected: int
    missing: tuple[str, ...] = ()
    relative: float | None = None
    paper: float | None = None
    paper_std: float | None = None
    paper_relative: float | None = None
    not_converged: bool = False
    test: Comparison | None = None


def load_paper(path: str | Path = DEFAULT_PAPER) -> dict[str, Any]:
    """Read the paper's numbers (``experiments/paper.toml``)."""
    with Path(path).open("rb") as handle:
        return tomllib.load(handle)


#: ``(run_id, file name) -> text`` of a stored attachment, or None when absent.
Attachments = Callable[[str, str], "str | None"]


def compute_cells(
    table: TableSpec,
    records: Iterable[RunRecord],
    paper: Mapping[str, Any],
    attachments: Attachments | None = None,
) -> list[list[Cell]]:
    """Cells of ``table`` (rows × columns) from ``records`` and the paper data; with
    ``attachments``, increase cells carry a paired bootstrap test.

    Raises:
        ValueError: a found run lacks the row's metric.
    """
    by_id = {record.run_id: record for record in records}
    section = paper.get(table.paper_table or table.name, {})
    grid = []
    for row in table.rows:
        paper_row = section.get(row.paper_key or row.base.task, {})
        paper_row = paper_row if table.row_comparable(row) else {}
        cells: dict[str, Cell] = {}
        for column in table.columns:
            if isinstance(column, RunsColumn):
                cell = _runs_cell(table, row, column, by_id, paper_row)
                if column.versus and attachments is not None and cell.mean is not None:
                    pair = (column.label, column.versus)
                    test = _paired_test(table, row, pair, by_id, attachments)
                    cell = dataclasses.replace(cell, test=test)
                cells[column.label] = cell
        for column in table.columns:
            if isinstance(column, IncreaseColumn):
                cell = _increase_cell(row, column, cells, paper_row)
                if attachments is not None and cell.mean is not None:
                    pair = (column.minuend, column.subtrahend)
                    test = _paired_test(table, row, pair, by_id, attachments)
                    cell = dataclasses.replace(cell, test=test)
                cells[column.label] = cell
        grid.append([cells[column.label] for column in table.columns])
    return grid


def render(
    table: TableSpec,
    records: Iterable[RunRecord],
    paper: Mapping[str, Any],
    fmt: Format = "markdown",
    attachments: Attachments | None = None,
) -> str:
    """The table as Markdown, LaTeX or CSV text (deterministic; ends with a newline).

    Args:
        table: rows and columns.
        records: stored runs (any superset of the table's; others are ignored).
        paper: the paper's numbers, as :func:`load_paper` returns them.
        fmt: ``"markdown"``, ``"latex"`` or ``"csv"``.
        attachments: reads a stored run's files (the per-unit statistics of significance
            tests, the read statistics of a caption line "Skipped while reading", shown when a
            run's reader skipped anything); ``None``: no tests, no such line.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    records = list(records)
    grid = compute_cells(table, records, paper, attachments)
    if fmt == "csv":
        return _csv(table, grid)
    skips = _skip_lines(table, records, attachments) if attachments is not None else []
    if table.caption:
        lines = [_epochs_line(table, records), *_sample_efficiency_lines(table, records)]
        table = dataclasses.replace(table, caption=(*table.caption, *lines, *skips))
    elif skips:
        table = dataclasses.replace(table, caption=tuple(skips))
    header = ["Task"]
    for column in table.columns:
        header += [column.label, f"{column.label} (paper)"]
    body = []
    for row, cells in zip(table.rows, grid, strict=True):
        line = [row.label]
        for column, cell in zip(table.columns, cells, strict=True):
            increase = isinstance(column, IncreaseColumn)
            ours = _increase_text if increase else _ours_text
            line += [ours(cell, row.metric), _paper_text(cell, row.metric, increase)]
        body.append(line)
    if fmt == "latex":
        return _latex(table, header, body)
    return _markdown(table, header, body)


def table1(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 1: baseline vs ELMo (each row's base spec is its best ELMo configuration)."""
    return TableSpec(
        name="table1",
        title="Table 1: baseline vs ELMo + baseline (test)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields(), "baseline"),
            RunsColumn("ELMo", {}, "elmo"),
            IncreaseColumn("Increase", "ELMo", "Baseline", "increase"),
        ),
        seeds=seeds,
    )


def table2(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 2: layer weighting, each row at its base sites; every ELMo column is tested
    against the baseline."""
    return TableSpec(
        name="table2",
        title="Table 2: baseline, LastOnly and all layers with λ = 1 and λ = 0.001 (dev)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields(), "baseline"),
            RunsColumn("Last Only", {"mode": "last"}, "last_only", versus="Baseline"),
            RunsColumn("λ=1", {"mode": "all", "lam": 1.0}, "lambda_1", versus="Baseline"),
            RunsColumn("λ=0.001", {"mode": "all", "lam": 0.001}, "lambda_0_001", versus="Baseline"),
        ),
        seeds=seeds,
    )


def table3(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Table 3: where ELMo is injected, each row with its base mix; the other placements are
    tested against input only (the paper's reference placement, §5.2)."""
    return TableSpec(
        name="table3",
        title="Table 3: ELMo at the input, input and output, or output only (dev)",
        rows=tuple(rows),
        columns=(
            RunsColumn("Input Only", {"sites": ("input",)}, "input_only"),
            RunsColumn(
                "Input & Output",
                {"sites": ("input", "output")},
                "input_output",
                versus="Input Only",
            ),
            RunsColumn("Output Only", {"sites": ("output",)}, "output_only", versus="Input Only"),
        ),
        seeds=seeds,
    )


def cove_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    cove_config: Mapping[str, Any] | None = None,
) -> TableSpec:
    """CoVe beside ELMo: the baseline, the baseline + CoVe with its last layer (McCann et al.'s
    setting) and with both layers mixed at λ = 1 (paper §5.1), and the row's ELMo configuration.
    CoVe runs at the row's sites with ELMo's dropout; ``cove_config`` None (no CoVe weights)
    leaves the CoVe columns out."""
    columns: list[Column] = [RunsColumn("Baseline", baseline_fields(), "baseline")]
    if cove_config is not None:
        cove = {"representation": "cove", "representation_config": dict(cove_config)}
        last, both = "CoVe, last layer", "CoVe, λ=1"
        columns += [
            RunsColumn(last, {**cove, "mode": "last"}, "cove_last", versus="Baseline"),
            RunsColumn(both, {**cove, "mode": "all", "lam": 1.0}, "cove_lambda_1", last),
        ]
    versus = "CoVe, last layer" if cove_config is not None else None
    columns += [
        RunsColumn("ELMo", {}, "elmo", versus=versus),
        IncreaseColumn("Increase", "ELMo", "Baseline"),
    ]
    return TableSpec(
        name="cove",
        title="CoVe beside ELMo",
        rows=tuple(rows),
        columns=tuple(columns),
        seeds=seeds,
    )


def _epochs_line(table: TableSpec, records: Sequence[RunRecord]) -> str:
    """Caption line: epochs run and selected epochs of the table's runs found in ``records``."""
    wanted = {
        spec.run_id
        for row in table.rows
        for column in table.columns
        if isinstance(column, RunsColumn)
        for spec in table.expected(row, column)
    }
    found = [r.metrics for r in records if r.run_id in wanted]
    ran = sorted({int(m["epochs_run"]) for m in found if "epochs_run" in m})
    best = sorted({int(m["best_epoch"]) for m in found if "best_epoch" in m})
    if not found:
        return "Epochs: no run found yet."
    return f"Epochs: {_span(ran)} run per training run; selected (best dev) epoch {_span(best)}."


def first_epoch_reaching(
    log: Iterable[Mapping[str, Any]], key: str, reference: float, higher_is_better: bool = True
) -> int | None:
    """The first logged epoch whose ``key`` reaches ``reference`` (paper §5.4: the epoch at
    which ELMo reaches the baseline's best dev score), or None if no evaluation does."""
    sign = 1.0 if higher_is_better else -1.0
    for record in log:
        value = record.get(key)
        if isinstance(value, int | float) and sign * value >= sign * reference:
            return int(record["epoch"])
    return None


def _sample_efficiency_lines(table: TableSpec, records: Sequence[RunRecord]) -> list[str]:
    """Per row of a table with "Baseline" and "ELMo" columns: the epoch at which each ELMo run
    first reached its seed's baseline's best dev score, beside the epoch that baseline needed
    (paper §5.4: SRL ELMo reaches the baseline's best after 10 epochs, the baseline after 486)."""
    columns = {c.label: c for c in table.columns if isinstance(c, RunsColumn)}
    if "Baseline" not in columns or "ELMo" not in columns:
        return []
    by_id = {r.run_id: r for r in records}
    lines = []
    for row in table.rows:
        if row is not table.rows[0] and row.base.task == table.rows[0].base.task:
            continue  # one line per task
        key = f"dev_{row.metric.key.split('_', 1)[1]}"
        pairs = []
        baselines = table.expected(row, columns["Baseline"])
        for base, elmo in zip(baselines, table.expected(row, columns["ELMo"]), strict=True):
            b, e = by_id.get(base.run_id), by_id.get(elmo.run_id)
            if b is None or e is None or key not in b.metrics:
                continue
            reached = first_epoch_reaching(e.log, key, b.metrics[key], row.metric.higher_is_better)
            elmo_at = "never" if reached is None else str(reached)
            pairs.append(f"{elmo_at} vs {int(b.metrics['best_epoch'])}")
        if pairs:
            name = row.label.split(" (")[0]
            lines.append(
                f"Sample efficiency ({name}): ELMo first reached the baseline's best dev "
                f"{row.metric.label or key} at epoch {', '.join(pairs)} "
                "(ELMo vs baseline, per seed)."
            )
    return lines


READ_STATS = "read-stats.json"  # the runner's attachment: split → examples, skips by reason


def _skip_lines(
    table: TableSpec, records: Sequence[RunRecord], attachments: Attachments
) -> list[str]:
    """Caption lines: what the readers of the table's runs skipped, per split and reason
    (one line per distinct set of counts, labelled by its rows when there are several); none
    when no run found skipped anything."""
    found = {r.run_id for r in records}
    by_text: dict[str, list[str]] = {}
    for row in table.rows:
        for column in table.columns:
            if not isinstance(column, RunsColumn):
                continue
            for spec in table.expected(row, column):
                text = attachments(spec.run_id, READ_STATS) if spec.run_id in found else None
                if text is not None:
                    labels = by_text.setdefault(text, [])
                    label = row.label.split(" (")[0]
                    if label not in labels:
                        labels.append(label)
    lines = []
    for text, labels in by_text.items():
        try:
            stats = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not any(s.get("skipped") for s in stats.values()):
            continue
        parts = []
        for split, split_stats in stats.items():
            skipped = {k: int(v) for k, v in split_stats.get("skipped", {}).items()}
            part = f"{split} {int(split_stats.get('examples', 0)):,} kept"
            if skipped:
                reasons = sorted(skipped.items(), key=lambda item: (-item[1], item[0]))
                detail = ", ".join(f"{reason} {n:,}" for reason, n in reasons)
                part += f", {sum(skipped.values()):,} skipped ({detail})"
            parts.append(part)
        where = f" ({', '.join(labels)})" if len(by_text) > 1 else ""
        lines.append(f"Skipped while reading{where}: {'; '.join(parts)}.")
    return lines


def _span(values: Sequence[int]) -> str:
    """``"3"``, ``"2–5"`` or ``"?"`` for sorted values."""
    if not values:
        return "?"
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}–{values[-1]}"


def _runs_cell(
    table: TableSpec,
    row: Row,
    column: RunsColumn,
    by_id: Mapping[str, RunRecord],
    paper_row: Mapping[str, Any],
) -> Cell:
    expected = table.expected(row, column)
    values, missing, last = [], [], []
    for spec in expected:
        record = by_id.get(spec.run_id)
        if record is None:
            missing.append(spec.run_id)
            continue
        if row.metric.key not in record.metrics:
            raise ValueError(
                f"run {spec.run_id} ({row.label}, {column.label}) has no metric "
                f"{row.metric.key!r}; it has {sorted(record.metrics)}"
            )
        values.append(record.metrics[row.metric.key] * row.metric.scale)
        best, ran = record.metrics.get("best_epoch"), record.metrics.get("epochs_run")
        if best is not None and ran is not None:
            last.append(best >= ran)
    key = column.paper_key
    return Cell(
        mean=statistics.fmean(values) if values else None,
        std=statistics.stdev(values) if len(values) > 1 else None,
        n=len(values),
        n_expected=len(expected),
        missing=tuple(missing),
        paper=_number(paper_row.get(key)) if key else None,
        paper_std=_number(paper_row.get(f"{key}_std")) if key else None,
        not_converged=bool(last) and 2 * sum(last) > len(last),
    )


def _increase_cell(
    row: Row, column: IncreaseColumn, cells: Mapping[str, Cell], paper_row: Mapping[str, Any]
) -> Cell:
    top, bottom = cells[column.minuend], cells[column.subtrahend]
    mean = relative = None
    if top.mean is not None and bottom.mean is not None:
        mean = top.mean - bottom.mean
        if row.metric.scale == 100 and bottom.mean < 100:
            relative = 100 * mean / (100 - bottom.mean)
    key = column.paper_key
    return Cell(
        mean=mean,
        std=None,
        n=0,
        n_expected=0,
        relative=relative,
        paper=_number(paper_row.get(f"{key}_abs")) if key else None,
        paper_relative=_number(paper_row.get(f"{key}_rel")) if key else None,
    )


def _paired_test(
    table: TableSpec,
    row: Row,
    pair: tuple[str, str],
    by_id: Mapping[str, RunRecord],
    attachments: Attachments,
) -> Comparison | None:
    """Paired bootstrap of column ``pair[0]`` − column ``pair[1]`` over the seeds where both
    runs exist and stored their unit statistics (:mod:`experiments.significance`)."""
    from tasks.registry import TASKS

    task = TASKS.get(row.base.task)
    if task is None or task.metric_from_totals is None:
        return None
    split, key = row.metric.key.split("_", 1)
    if key != task.metric.key:
        return None  # unit statistics describe the selection metric only
    runs = {c.label: c for c in table.columns if isinstance(c, RunsColumn)}
    name = f"units-{split}.json"
    a, b = [], []
    for top, bottom in zip(
        table.expected(row, runs[pair[0]]), table.expected(row, runs[pair[1]]), strict=True
    ):
        if top.run_id in by_id and bottom.run_id in by_id:
            texts = attachments(top.run_id, name), attachments(bottom.run_id, name)
            if texts[0] is not None and texts[1] is not None:
                a.append({name: texts[0]})
                b.append({name: texts[1]})
    return compare_runs(a, b, split, task.metric_from_totals)


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"paper values must be numbers, got {value!r}")
    return float(value)


def _fixed(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0"


def _printed(value: float, decimals: int) -> str:
    """A paper number with at least ``decimals`` decimals, never fewer than the paper printed.

    The shortest round-trip form keeps the paper's digits (0.17, 92.22); padding to the row's
    decimals restores trailing zeros TOML drops (NER ``0.10``).
    """
    shortest = repr(value)
    given = len(shortest.partition(".")[2]) if "e" not in shortest else decimals
    return _fixed(value, max(decimals, given))


def _spread(
    value: float | None, decimals: int, fmt: Callable[[float, int], str], increase: bool
) -> str:
    """The part after a value: `` ± std`` or, for an increase, `` / relative%`` ("" when None)."""
    if value is None:
        return ""
    return f" / {fmt(value, 1)}%" if increase else f" ± {fmt(value, decimals)}"


def _ours_text(cell: Cell, metric: MetricSpec) -> str:
    if cell.mean is None:
        return f"{MISSING} ({', '.join(cell.missing)})" if cell.missing else MISSING
    text = _fixed(cell.mean, metric.decimals) + _spread(cell.std, metric.decimals, _fixed, False)
    if cell.not_converged:
        text += f" {NOT_CONVERGED}"
    if cell.missing:
        text += f" (n={cell.n} of {cell.n_expected}; missing {', '.join(cell.missing)})"
    else:
        text += f" (n={cell.n})"
    if cell.test is not None:
        t = cell.test
        text += f" Δ {_fixed(t.difference * metric.scale, metric.decimals)}{_test_text(t, metric)}"
    return text


def _test_text(test: Comparison, metric: MetricSpec) -> str:
    """`` (p=0.012✱, CI [0.3, 1.9])``: a paired bootstrap in the metric's display units."""
    scale, d = metric.scale, metric.decimals
    mark = SIGNIFICANT if test.significant else ""
    low, high = _fixed(test.low * scale, d), _fixed(test.high * scale, d)
    return f" (p={test.p_value:.3f}{mark}, CI [{low}, {high}])"


def _increase_text(cell: Cell, metric: MetricSpec) -> str:
    if cell.mean is None:
        return MISSING
    text = _fixed(cell.mean, metric.decimals) + _spread(cell.relative, 1, _fixed, True)
    if cell.test is not None:
        text += _test_text(cell.test, metric)
    return text


def _paper_text(cell: Cell, metric: MetricSpec, increase: bool = False) -> str:
    """The paper's number with its ± std, or for an increase column its `` / relative%``."""
    if cell.paper is None:
        return ""
    spread = cell.paper_relative if increase else cell.paper_std
    return _printed(cell.paper, metric.decimals) + _spread(
        spread, metric.decimals, _printed, increase
    )


NOTE = (
    "Ours: mean ± sample standard deviation (n − 1) over seeds, n = runs found; "
    f"{MISSING} = not run yet, followed by the run_ids expected. Paper: Peters et al. (2018), "
    "NAACL / arXiv:1802.05365v2."
)


NOT_CONVERGED = "†"
SIGNIFICANT = "✱"  # increase cells with a paired bootstrap p < 0.05 (not `*`: Markdown emphasis)


def _notes(table: TableSpec, body: list[list[str]]) -> list[str]:
    """The table's footnotes: how to read it, unconverged cells, an incomparable paper column."""
    notes = [NOTE]
    if any("p=" in cell for cells in body for cell in cells[1:]):
        notes.append(
            "p, CI: paired bootstrap over the evaluation units (questions, pairs, sentences or "
            "documents as the task defines them; 1,000 samples), seeds pooled (the same units "
            "resampled for every seed, the metric averaged over seeds); 95 % percentile "
            f"interval of the difference; {SIGNIFICANT} p < 0.05."
        )
    if any(NOT_CONVERGED in cell for cells in body for cell in cells[1:]):
        notes.append(
            f"{NOT_CONVERGED} not converged: on most seeds the selected (best dev) epoch was the "
            "last one run; a longer budget may change the number."
        )
    if not table.paper_comparable and all(r.split is None for r in table.rows):
        notes.append(
            f"The paper's numbers in this table are {table.paper_split} numbers and ours are "
            f"{table.split} numbers, so the paper column is left empty."
        )
    else:
        for row in table.rows:
            if not table.row_comparable(row):
                ours, paper = table.splits_of(row)
                notes.append(
                    f"{row.label}: the paper's numbers are {paper} numbers and ours are {ours} "
                    "numbers, so its paper cells are left empty."
                )
    if any(" Δ " in cell for cells in body for cell in cells[1:]):
        against = sorted(
            {f"{c.label} vs {c.versus}" for c in table.columns if isinstance(c, RunsColumn)}
            - {f"{c.label} vs None" for c in table.columns}
        )
        notes.append(f"Δ: difference of means to the reference column ({'; '.join(against)}).")
    return notes


def _markdown(table: TableSpec, header: list[str], body: list[list[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [f"**{table.title}**", ""]
    if table.caption:
        lines += [f"_{text}_  " for text in table.caption[:-1]] + [f"_{table.caption[-1]}_", ""]
    lines.append(line(header))
    lines.append("|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|")
    lines += [line(cells) for cells in body]
    lines += ["", "\n\n".join(_notes(table, body))]
    return "\n".join(lines) + "\n"


_LATEX = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "±": r"$\pm$",
    "λ": r"$\lambda$",
    "−": r"$-$",
    "—": "---",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX.get(char, char) for char in text)


def _latex(table: TableSpec, header: list[str], body: list[list[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return " & ".join(_latex_escape(c) for c in cells) + r" \\"

    lines = [
        f"% {_latex_escape(table.title)} (needs \\usepackage{{booktabs}})",
        *[f"% {_latex_escape(text)}" for text in table.caption],
        r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
        r"\toprule",
        line(header),
        r"\midrule",
        *[line(cells) for cells in body],
        r"\bottomrule",
        r"\end{tabular}",
        *[f"% {_latex_escape(note)}" for note in _notes(table, body)],
    ]
    return "\n".join(lines) + "\n"


def _csv(table: TableSpec, grid: list[list[Cell]]) -> str:
    def num(value: float | None, decimals: int) -> str:
        return "" if value is None else _fixed(round(value, decimals), decimals)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row, cells in zip(table.rows, grid, strict=True):
        places = row.metric.decimals + 2
        for column, cell in zip(table.columns, cells, strict=True):
            writer.writerow(
                [
                    table.name,
                    row.label,
                    column.label,
                    num(cell.mean, places),
                    num(cell.std, places),
                    cell.n,
                    cell.n_expected,
                    num(cell.relative, 3),
                    "" if cell.paper is None else repr(cell.paper),
                    "" if cell.paper_std is None else repr(cell.paper_std),
                    "" if cell.paper_relative is None else repr(cell.paper_relative),
                    " ".join(cell.missing),
                ]
            )
    return out.getvalue()
