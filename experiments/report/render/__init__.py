"""Render result tables (Tables 1–3 of Peters et al., 2018) from stored runs: pure functions.

A :class:`TableSpec` says which runs fill which cell: each :class:`Row` carries a full base
:class:`~experiments.run.spec.RunSpec`, each :class:`RunsColumn` a change to it (baseline, LastOnly,
λ, sites), and the table the seeds. A cell therefore knows the exact run_ids it expects; it shows
the mean ± sample standard deviation (n − 1) over the runs found and ``n`` (``—`` when none was
found; a note lists the runs still missing), and the paper's number beside it (from
``experiments/report/paper.toml``).

**Layout: the numbers first.** A rendered table opens with a one-line title (what is compared,
on which data and split) and one line of essentials (biLM, preset, seeds, the test), then the
table, then numbered notes; the setup in full and what the runs rest on (commits, devices,
biLMs, result versions, epochs, sample efficiency, skip counts, wall times) come last. Cells stay
narrow: the full test of a cell is in the notes, and every figure is in the CSV
(``fmt="csv"``; the CLI writes it beside each Markdown table). Prose is wrapped to
:data:`WIDTH` characters.

**Tests.** An increase cell, and a run column with a ``versus`` column, carry a significance test
(:func:`experiments.report.significance.compare_runs`) over exactly the runs of the two means (all
runs found of both columns; the seed counts may differ). An increase cell shows its Holm-adjusted p;
a run column's difference and Holm-adjusted p stand in the Δ row under its row. When any of those
runs stored no per-unit statistics, the cell has no test and a footnote names the runs; the Δ
printed is the test's difference and equals the difference of the two means (checked). The
**family** of the Holm–Bonferroni correction is every test shown in one rendered table: each
test's p-value is adjusted over the others of its table and the significance mark ``✱`` rests on
the adjusted one.

**Paper numbers** stand beside ours only where they are comparable
(:func:`paper_comparable`): the row's base spec uses the ``paper`` preset, the published biLM
(``{"published": "original"}``) and the task's real data (not ``demo``, not a subset), and our
numbers are for the paper's split. Otherwise the paper cells stay empty and a footnote says why.

**Provenance** (tables with a caption) names what the runs found rest on: the commits, devices,
biLMs (fingerprint, representation and configuration) and result versions, and says so
explicitly when runs of one table differ in data, biLM, preset or result version. Runs the caller
reused although their recorded identity no longer matches (``stale``) are marked ``‡``.

**Dead runs** (:mod:`experiments.run.health`: constant predictions, zero gradients, a flat dev
metric; the record's ``dead`` metric) mark every cell that uses them with ``☠`` and a footnote
names them with the reasons. Means include them unless ``exclude_dead`` (``--exclude-dead``):
then they are left out of the means and the tests, and the footnote says so.

Metrics are stored in natural units and scaled here (:class:`MetricSpec`, e.g. F1 × 100 with one
decimal). The package by concern: :mod:`~experiments.report.render.specs` (table specs, the named
tables' builders, paper comparability), :mod:`~experiments.report.render.cells` (the numbers and the
text of each cell), :mod:`~experiments.report.render.captions` (essentials, provenance, notes),
:mod:`~experiments.report.render.formats` (Markdown, LaTeX, CSV); :func:`render` puts them together.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from experiments.report.render.captions import (
    FAILED_ERROR_CHARS,
    HEALTH_DOC,
    PAPER_SOURCE,
    READ_STATS,
    SCHEMES,
    SIGNIFICANCE_DOC,
    Note,
    cost_lines,
    dead_notes,
    epochs_line,
    essentials,
    failed_notes,
    first_epoch_reaching,
    found_runs,
    provenance_lines,
    reading_note,
    sample_efficiency_lines,
    skip_lines,
    table_notes,
    withheld_rows,
)
from experiments.report.render.cells import (
    DEAD,
    DIFFERENCE_TOLERANCE,
    FAILED,
    MISSING,
    NOT_CONVERGED,
    SIGNIFICANT,
    STALE,
    Attachments,
    Cell,
    body_rows,
    compute_cells,
    dead_runs,
)
from experiments.report.render.formats import (
    CSV_FIELDS,
    FORMATS,
    PROVENANCE_HEADING,
    WIDTH,
    Format,
    Layout,
    csv_table,
    latex_table,
    markdown_table,
)
from experiments.report.render.specs import (
    DEFAULT_PAPER,
    PAPER_PRESET,
    PUBLISHED_ELMO,
    SPLITS,
    Column,
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    adapt_table,
    bilm_description,
    bilm_table,
    config_label,
    cove_table,
    directions_table,
    dynamic_table,
    load_paper,
    paper_comparable,
    paper_data_table,
    real_table,
    smoke_label,
    smoke_reasons,
    table1,
    table2,
    table3,
)
from experiments.run.store import RunRecord

__all__ = [
    "CSV_FIELDS",
    "DEAD",
    "DEFAULT_PAPER",
    "DIFFERENCE_TOLERANCE",
    "FAILED",
    "FAILED_ERROR_CHARS",
    "FORMATS",
    "HEALTH_DOC",
    "MISSING",
    "NOT_CONVERGED",
    "PAPER_PRESET",
    "PAPER_SOURCE",
    "PROVENANCE_HEADING",
    "PUBLISHED_ELMO",
    "READ_STATS",
    "SCHEMES",
    "SIGNIFICANCE_DOC",
    "SIGNIFICANT",
    "SPLITS",
    "STALE",
    "WIDTH",
    "Attachments",
    "Cell",
    "Column",
    "Format",
    "IncreaseColumn",
    "Layout",
    "Note",
    "Row",
    "RunsColumn",
    "TableSpec",
    "bilm_description",
    "adapt_table",
    "bilm_table",
    "compute_cells",
    "config_label",
    "cove_table",
    "dead_runs",
    "directions_table",
    "dynamic_table",
    "first_epoch_reaching",
    "load_paper",
    "paper_comparable",
    "paper_data_table",
    "reading_note",
    "real_table",
    "render",
    "render_formats",
    "smoke_label",
    "smoke_reasons",
    "table1",
    "table2",
    "table3",
    "table_layout",
]


def render(
    table: TableSpec,
    records: Iterable[RunRecord],
    paper: Mapping[str, Any],
    fmt: Format = "markdown",
    attachments: Attachments | None = None,
    *,
    stale: Collection[str] = (),
    exclude_dead: bool = False,
    failed: Mapping[str, str] | None = None,
) -> str:
    """The table as Markdown, LaTeX or CSV text (deterministic; ends with a newline).

    Args:
        table: rows and columns.
        records: stored runs (any superset of the table's; others are ignored).
        paper: the paper's numbers, as :func:`load_paper` returns them.
        fmt: ``"markdown"``, ``"latex"`` or ``"csv"``.
        attachments: reads a stored run's files (the per-unit statistics of significance
            tests, the read statistics of a provenance line "Skipped while reading", shown when
            a run's reader skipped anything); ``None``: no tests, no such line.
        stale: run_ids the caller reused although their recorded identity no longer matches
            (``--reuse-stale``): their cells are marked ``‡`` and a footnote lists them.
        exclude_dead: leave dead runs out of the means (``--exclude-dead``); by default they
            are included. Either way their cells are marked ``☠`` and a footnote names them.
        failed: run_id → error of runs that failed while the command ran (never stored): a
            cell with one of them (an increase: in either of its columns) reads ``failed``,
            and a footnote per row names its failed runs with the first one's error; the
            other rows render as usual. ``None``: none failed.
    """
    (text,) = render_formats(
        table,
        records,
        paper,
        (fmt,),
        attachments,
        stale=stale,
        exclude_dead=exclude_dead,
        failed=failed,
    ).values()
    return text


def render_formats(
    table: TableSpec,
    records: Iterable[RunRecord],
    paper: Mapping[str, Any],
    fmts: Sequence[Format],
    attachments: Attachments | None = None,
    *,
    stale: Collection[str] = (),
    exclude_dead: bool = False,
    failed: Mapping[str, str] | None = None,
) -> dict[Format, str]:
    """The table in each of ``fmts`` (format → text), its cells and tests computed once: a
    Markdown table and the CSV beside it that carries every figure. Arguments as
    :func:`render`'s."""
    for fmt in fmts:
        if fmt not in FORMATS:
            raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    records = list(records)
    grid = compute_cells(table, records, paper, attachments, stale=stale, exclude_dead=exclude_dead)
    texts: dict[Format, str] = {}
    for fmt in fmts:
        if fmt == "csv":
            texts[fmt] = csv_table(table, grid, records)
            continue
        layout = table_layout(table, grid, records, paper, attachments, exclude_dead, failed or {})
        texts[fmt] = latex_table(layout) if fmt == "latex" else markdown_table(layout)
    return texts


def table_layout(
    table: TableSpec,
    grid: list[list[Cell]],
    records: list[RunRecord],
    paper: Mapping[str, Any],
    attachments: Attachments | None,
    exclude_dead: bool,
    failed: Mapping[str, str],
) -> Layout:
    """The table in reading order (:class:`~experiments.report.render.formats.Layout`): title (with
    the smoke label of smoke runs) and essentials; header and rows; the notes (how to read the
    cells, the tests in full, marks, paper cells left empty, dead and failed runs); below them
    the caption's setup lines and, for a table with a caption, what its runs rest on (epochs,
    commits, devices, biLMs, versions, sample efficiency), then what the readers skipped."""
    title = table.title
    smoke = smoke_label(row.base for row in table.rows)
    if smoke and smoke not in title:
        title += smoke
    provenance = list(table.caption)
    if table.caption:
        provenance += [
            epochs_line(table, records),
            *cost_lines(table, records),
            *provenance_lines(found_runs(table, records)),
            *sample_efficiency_lines(table, records),
        ]
    if attachments is not None:
        provenance += skip_lines(table, records, attachments)
    has_paper = any(column.paper_key for column in table.columns)  # else no paper columns
    header = ["Task"]
    for column in table.columns:  # a paper column only beside a column the paper has
        paper_column = has_paper and column.paper_key
        header += [column.label, *([f"{column.label} (paper)"] if paper_column else [])]
    notes = table_notes(table, grid, withheld_rows(table, paper) if has_paper else [])
    notes += dead_notes(grid, records, attachments, exclude_dead)
    notes += failed_notes(table, failed)
    return Layout(
        title=title,
        essentials=essentials(table, grid, WIDTH - 2),  # within the emphasis marks
        header=tuple(header),
        body=tuple(tuple(cells) for cells in body_rows(table, grid, has_paper, failed)),
        notes=tuple(notes),
        provenance=tuple(provenance),
    )
