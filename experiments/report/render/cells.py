"""Cells: the numbers of a table (:func:`compute_cells`: means, spreads, the paper's numbers,
significance tests Holm-adjusted over the table) and the text of one cell."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from experiments.report.render.specs import (
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    paper_comparable,
)
from experiments.report.significance import ALPHA, Comparison, compare_runs, holm, read_units
from experiments.run.health import DEAD_MARK, record_reasons
from experiments.run.store import RunRecord
from tasks.core import MetricSpec

MISSING = "—"


#: A cell with a run that failed in the command that renders the table (``failed=``).
FAILED = "failed"


#: Largest gap (natural units) between a test's difference and the difference of the means.
DIFFERENCE_TOLERANCE = 1e-6


NOT_CONVERGED = "†"


STALE = "‡"  # a run reused although its recorded identity no longer matches


DEAD = DEAD_MARK  # a cell using a dead run (experiments.run.health)


SIGNIFICANT = "✱"  # Holm-adjusted p < ALPHA (not `*`: Markdown emphasis)
#: The first cell of the row under a row whose run columns carry tests (their Δ and Holm p).
DELTA_ROW = "↳ Δ vs"


#: ``(run_id, file name) -> text`` of a stored attachment, or None when absent.
Attachments = Callable[[str, str], "str | None"]


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
        paper: the paper's number; ``None`` when it has none or it is not comparable.
        paper_std: the paper's standard deviation, if printed.
        paper_relative: the paper's relative increase in percent (increase cells only).
        not_converged: on most of the runs found, the selected epoch was the last one run.
        test: the significance test of an increase, or of a run column against its ``versus``
            column (natural units), over exactly the runs of the two means, its p-value
            Holm-adjusted over the table's tests (``adjusted_p``).
        runs: the run_ids found, whose metric the mean is over (run cells; seed order).
        no_test: why a cell that would carry a test has none (runs without unit statistics,
            unit statistics that do not reproduce the means); ``None`` otherwise.
        stale: runs of the cell (an increase: of its two columns) reused although their
            recorded identity no longer matches.
        dead: dead runs of the cell (an increase: of its two columns), found, whether or not
            its mean includes them (:mod:`experiments.run.health`).
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
    runs: tuple[str, ...] = ()
    no_test: str | None = None
    stale: tuple[str, ...] = ()
    dead: tuple[str, ...] = ()


def compute_cells(
    table: TableSpec,
    records: Iterable[RunRecord],
    paper: Mapping[str, Any],
    attachments: Attachments | None = None,
    *,
    stale: Collection[str] = (),
    exclude_dead: bool = False,
) -> list[list[Cell]]:
    """Cells of ``table`` (rows × columns) from ``records`` and the paper data.

    Args:
        table: rows and columns.
        records: stored runs (any superset of the table's).
        paper: the paper's numbers (:func:`load_paper`); a row's are used only where
            :func:`paper_comparable`.
        attachments: reads a run's stored files; with it, increase and ``versus`` cells carry
            a test over exactly the runs of their two means, Holm-adjusted over all tests of
            the table.
        stale: run_ids reused although their recorded identity no longer matches.
        exclude_dead: leave dead runs out of the means and tests (they still mark the cell).

    Raises:
        ValueError: a found run lacks the row's metric, or a run's unit statistics are invalid
            (duplicate unit ids, non-finite values; the message names the run).
    """
    by_id = {record.run_id: record for record in records}
    stale_ids = frozenset(stale)
    dead = frozenset(dead_runs(by_id.values(), attachments))
    section = paper.get(table.paper_table or table.name, {})
    grid = []
    for row in table.rows:
        comparable, _ = paper_comparable(table, row)
        paper_row = section.get(row.paper_key or row.base.task, {}) if comparable else {}
        cells: dict[str, Cell] = {}
        for column in table.columns:
            if isinstance(column, RunsColumn):
                cells[column.label] = _runs_cell(
                    table, row, column, by_id, paper_row, stale_ids, (dead, exclude_dead)
                )
        for column in table.columns:
            if isinstance(column, IncreaseColumn):
                cells[column.label] = _increase_cell(row, column, cells, paper_row)
        if attachments is not None:
            for column in table.columns:
                pair = table.pair_of(column)
                if pair is not None and cells[column.label].mean is not None:
                    test, why = _test(row, cells[pair[0]], cells[pair[1]], attachments)
                    cells[column.label] = dataclasses.replace(
                        cells[column.label], test=test, no_test=why
                    )
        grid.append([cells[column.label] for column in table.columns])
    return _holm_adjusted(grid)


def _holm_adjusted(grid: list[list[Cell]]) -> list[list[Cell]]:
    """The grid with every test's ``adjusted_p``: Holm–Bonferroni over all tests of the table."""
    tests = [
        (i, j, cell.test)
        for i, cells in enumerate(grid)
        for j, cell in enumerate(cells)
        if cell.test is not None
    ]
    adjusted = holm([test.p_value for _, _, test in tests]) if tests else []
    for (i, j, test), p in zip(tests, adjusted, strict=True):
        grid[i][j] = dataclasses.replace(grid[i][j], test=dataclasses.replace(test, adjusted_p=p))
    return grid


def _runs_cell(
    table: TableSpec,
    row: Row,
    column: RunsColumn,
    by_id: Mapping[str, RunRecord],
    paper_row: Mapping[str, Any],
    stale: Collection[str] = frozenset(),
    dead: tuple[Collection[str], bool] = (frozenset(), False),
) -> Cell:
    expected = table.expected(row, column)
    values, missing, last, runs, dead_found = [], [], [], [], []
    dead_ids, exclude_dead = dead
    for spec in expected:
        record = by_id.get(spec.run_id)
        if record is None:
            missing.append(spec.run_id)
            continue
        if spec.run_id in dead_ids:
            dead_found.append(spec.run_id)
            if exclude_dead:
                continue
        if row.metric.key not in record.metrics:
            raise ValueError(
                f"run {spec.run_id} ({row.label}, {column.label}) has no metric "
                f"{row.metric.key!r}; it has {sorted(record.metrics)}"
            )
        runs.append(spec.run_id)
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
        runs=tuple(runs),
        stale=tuple(r for r in runs if r in stale),
        dead=tuple(dead_found),
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
        stale=tuple(dict.fromkeys((*top.stale, *bottom.stale))),
        dead=tuple(dict.fromkeys((*top.dead, *bottom.dead))),
    )


def _test(
    row: Row, a: Cell, b: Cell, attachments: Attachments
) -> tuple[Comparison | None, str | None]:
    """The test of column ``a`` − column ``b`` over exactly the runs of their means, or why
    there is none (``(None, None)``: the row's metric has no unit statistics at all).

    Raises:
        ValueError: a run's unit statistics are invalid (the message names the run), or the
            two columns' runs were scored on different units.
    """
    from tasks.registry import TASKS

    task = TASKS.get(row.base.task)
    if task is None or task.metric_from_totals is None:
        return None, None
    split, _, key = row.metric.key.partition("_")
    if key != task.metric.key or not a.runs or not b.runs or a.mean is None or b.mean is None:
        return None, None  # unit statistics describe the selection metric of a split only
    name = f"units-{split}.json"
    texts = {run_id: attachments(run_id, name) for run_id in (*a.runs, *b.runs)}
    lacking = [run_id for run_id, text in texts.items() if text is None]
    if lacking:
        runs = f"run{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}"
        return None, f"{runs} stored no unit statistics ({name})"
    stored = {run_id: text for run_id, text in texts.items() if text is not None}
    for run_id, text in stored.items():
        read_units(text, f"{name} of run {run_id}")  # invalid statistics: an error naming the run
    try:
        test = compare_runs(
            [{name: stored[r]} for r in a.runs],
            [{name: stored[r]} for r in b.runs],
            split,
            task.metric_from_totals,
        )
    except ValueError as error:
        raise ValueError(
            f"{row.label}: test of runs {', '.join(a.runs)} against {', '.join(b.runs)}: {error}"
        ) from error
    if test is None:
        return None, f"runs {', '.join(texts)} stored no unit statistics ({name})"
    scale, places = row.metric.scale, row.metric.decimals + 2
    shown = a.mean - b.mean
    if not math.isclose(test.difference * scale, shown, abs_tol=DIFFERENCE_TOLERANCE * scale):
        return None, (
            f"the unit statistics ({name}) give a difference of "
            f"{fixed(test.difference * scale, places)}, the means differ by "
            f"{fixed(shown, places)}: they do not reproduce the stored metric of runs "
            f"{', '.join(texts)}"
        )
    return test, None


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"paper values must be numbers, got {value!r}")
    return float(value)


def dead_runs(
    records: Iterable[RunRecord], attachments: Attachments | None = None
) -> dict[str, str]:
    """run_id → why it is dead, for the dead runs among ``records``
    (:func:`experiments.run.health.record_reasons`; records never checked are not dead)."""
    found = {}
    for record in records:
        reasons = record_reasons(record.run_id, record.metrics, attachments)
        if reasons is not None:
            found[record.run_id] = reasons
    return found


def fixed(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, never ``"-0.0"``."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0"


def _printed(value: float, decimals: int) -> str:
    """A paper number with at least ``decimals`` decimals, never fewer than the paper printed.

    The shortest round-trip form keeps the paper's digits (0.17, 92.22); padding to the row's
    decimals restores trailing zeros TOML drops (NER ``0.10``).
    """
    shortest = repr(value)
    given = len(shortest.partition(".")[2]) if "e" not in shortest else decimals
    return fixed(value, max(decimals, given))


def _spread(
    value: float | None, decimals: int, fmt: Callable[[float, int], str], increase: bool
) -> str:
    """The part after a value: `` ± std`` or, for an increase, `` / relative%`` ("" when None)."""
    if value is None:
        return ""
    return f" / {fmt(value, 1)}%" if increase else f" ± {fmt(value, decimals)}"


def _marks(cell: Cell) -> str:
    return (
        (f" {NOT_CONVERGED}" if cell.not_converged else "")
        + (f" {STALE}" if cell.stale else "")
        + (f" {DEAD}" if cell.dead else "")
    )


def ours_text(cell: Cell, metric: MetricSpec) -> str:
    """A run cell: ``mean ± sd``, its marks and the runs found, e.g. ``71.6 ± 5.6 † (n=3)``
    (``(n=2 of 3)`` while runs are missing; a note lists them); ``—`` when none was found. Its
    test, when the column has one, is the Δ row's cell (:func:`delta_text`)."""
    if cell.mean is None:
        return MISSING + (f" {DEAD}" if cell.dead else "")  # every run found excluded as dead
    text = fixed(cell.mean, metric.decimals) + _spread(cell.std, metric.decimals, fixed, False)
    text += _marks(cell)
    return text + (f" (n={cell.n} of {cell.n_expected})" if cell.missing else f" (n={cell.n})")


def p_text(value: float) -> str:
    """``"=0.012"``, or ``"<0.001"`` below 0.001."""
    return "<0.001" if value < 0.001 else f"={value:.3f}"


def adjusted_text(test: Comparison) -> str:
    """``Holm=0.012✱``: the Holm-adjusted p-value with the significance mark (the raw
    ``p=…`` of a test not adjusted); a conditional test (one seed on a side) is marked so and
    never carries the mark, e.g. ``Holm<0.001, conditional on the seed``."""
    mark = SIGNIFICANT if test.significant else ""
    p = f"p{p_text(test.p_value)}" if test.adjusted_p is None else f"Holm{p_text(test.adjusted_p)}"
    if test.conditional:
        single = test.seeds_a < 2 or test.seeds_b < 2
        return f"{p}, conditional on the {'seed' if single else 'seeds'}"
    return p + mark


def comparison_text(test: Comparison, metric: MetricSpec) -> str:
    """`` (p=0.004, Holm=0.012✱; 95 % CI [1.2, 10.8]; 3 vs 3 seeds, 250 units)``: a test in the
    metric's display units, ``✱`` on the Holm-adjusted p-value."""
    scale, d = metric.scale, metric.decimals
    mark = SIGNIFICANT if test.significant else ""
    low, high = fixed(test.low * scale, d), fixed(test.high * scale, d)
    p = f"p{p_text(test.p_value)}"
    if test.adjusted_p is not None:
        p += f", Holm{p_text(test.adjusted_p)}"
    level = f"{100 * (1 - ALPHA):g} %"
    sides = f"{test.seeds_a} vs {test.seeds_b} seeds, {test.units:,} units"
    return f" ({p}{mark}; {level} CI [{low}, {high}]; {sides})"


def delta_text(cell: Cell, metric: MetricSpec) -> str:
    """A Δ row's cell: the difference a run column's test is about and its Holm-adjusted p,
    e.g. ``5.1 (Holm<0.001✱)``; ``""`` for a cell without a test."""
    if cell.test is None:
        return ""
    value = fixed(cell.test.difference * metric.scale, metric.decimals)
    return f"{value} ({adjusted_text(cell.test)})"


def increase_text(cell: Cell, metric: MetricSpec) -> str:
    """An increase cell: ``Δ / r%``, its marks and, with a test, its Holm-adjusted p, e.g.
    ``3.8 / 8.2% (Holm=0.045✱)``."""
    if cell.mean is None:
        return MISSING
    text = fixed(cell.mean, metric.decimals) + _spread(cell.relative, 1, fixed, True)
    text += f" {STALE}" if cell.stale else ""
    text += f" {DEAD}" if cell.dead else ""
    if cell.test is not None:
        text += f" ({adjusted_text(cell.test)})"
    return text


def full_test_text(cell: Cell, metric: MetricSpec, increase: bool) -> str:
    """A cell's whole test for its note: ``Δ 8.2 (p=0.105, Holm=0.418; 95 % CI [-3.3, 19.7];
    3 vs 3 seeds, 250 units)`` (an increase: the Δ of its cell; a run column: the test's)."""
    if cell.test is None:
        return ""
    value = cell.mean if increase and cell.mean is not None else cell.test.difference * metric.scale
    return f"Δ {fixed(value, metric.decimals)}{comparison_text(cell.test, metric)}"


def paper_text(cell: Cell, metric: MetricSpec, increase: bool = False) -> str:
    """The paper's number with its ± std, or for an increase column its `` / relative%``."""
    if cell.paper is None:
        return ""
    spread = cell.paper_relative if increase else cell.paper_std
    return _printed(cell.paper, metric.decimals) + _spread(
        spread, metric.decimals, _printed, increase
    )


def failed_runs_of(
    table: TableSpec, row: Row, failed: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """Column label → the row's failed run ids in that column (an increase column: in either
    of its two columns); empty tuples where none failed."""
    out: dict[str, tuple[str, ...]] = {}
    for column in table.columns:
        if isinstance(column, RunsColumn):
            out[column.label] = tuple(
                s.run_id for s in table.expected(row, column) if s.run_id in failed
            )
    for column in table.columns:
        if isinstance(column, IncreaseColumn):
            out[column.label] = out[column.minuend] + out[column.subtrahend]
    return out


def delta_label(table: TableSpec) -> str:
    """The first cell of a Δ row: ``"↳ Δ vs Baseline"`` when every tested run column has the
    same reference, else ``"↳ Δ vs reference"`` (a note names each column's)."""
    versus = {c.versus for c in table.columns if isinstance(c, RunsColumn) and c.versus}
    return f"{DELTA_ROW} {versus.pop() if len(versus) == 1 else 'reference'}"


def body_rows(
    table: TableSpec,
    grid: Sequence[Sequence[Cell]],
    has_paper: bool,
    failed: Mapping[str, str],
) -> list[list[str]]:
    """The text of the table's rows: the label, then each column's cell (followed by the
    paper's number when the table has paper columns and the column has a paper key); a cell
    with a run that failed in this command reads ``failed``. Under a row whose run columns
    carry tests comes its Δ row (:func:`delta_label`, :func:`delta_text`)."""
    body = []
    for row, cells in zip(table.rows, grid, strict=True):
        line, deltas = [row.label], [delta_label(table)]
        broken = failed_runs_of(table, row, failed)
        for column, cell in zip(table.columns, cells, strict=True):
            increase = isinstance(column, IncreaseColumn)
            ours = increase_text if increase else ours_text
            line.append(FAILED if broken.get(column.label) else ours(cell, row.metric))
            tested = not increase and not broken.get(column.label)
            deltas.append(delta_text(cell, row.metric) if tested else "")
            if has_paper and column.paper_key:
                line.append(paper_text(cell, row.metric, increase))
                deltas.append("")
        body.append(line)
        if any(deltas[1:]):
            body.append(deltas)
    return body
