"""Render result tables (Tables 1–3 of Peters et al., 2018) from stored runs: pure functions.

A :class:`TableSpec` says which runs fill which cell: each :class:`Row` carries a full base
:class:`~experiments.spec.RunSpec`, each :class:`RunsColumn` a change to it (baseline, LastOnly, λ,
sites), and the table the seeds. A cell therefore knows the exact run_ids it expects; it shows the
mean ± sample standard deviation (n − 1) over the runs found, ``n``, the ids still missing (``—``
when none was found), and the paper's number beside it (from ``experiments/paper.toml``).

**Tests.** An increase cell, and a run column with a ``versus`` column, carry a significance test
(:func:`experiments.significance.compare_runs`) over exactly the runs of the two means (all runs
found of both columns; the seed counts may differ). When any of those runs stored no per-unit
statistics, the cell has no test and a footnote names the runs; the Δ printed is the test's
difference and equals the difference of the two means (checked). The **family** of the
Holm–Bonferroni correction is every test shown in one rendered table: each test's p-value is
adjusted over the others of its table and the significance mark ``✱`` rests on the adjusted one.

**Paper numbers** stand beside ours only where they are comparable
(:func:`paper_comparable`): the row's base spec uses the ``paper`` preset, the published biLM
(``{"published": "original"}``) and the task's real data (not ``demo``, not a subset), and our
numbers are for the paper's split. Otherwise the paper cells stay empty and a footnote says why.

**Captions** (tables with a caption) name what the runs found rest on: the commits, devices,
biLMs (fingerprint, representation and configuration) and result versions, and say so
explicitly when runs of one table differ in data, biLM, preset or result version. Runs the caller
reused although their recorded identity no longer matches (``stale``) are marked ``‡``.

**Dead runs** (:mod:`experiments.health`: constant predictions, zero gradients, a flat dev
metric; the record's ``dead`` metric) mark every cell that uses them with ``☠`` and a footnote
names them with the reasons. Means include them unless ``exclude_dead`` (``--exclude-dead``):
then they are left out of the means and the tests, and the footnote says so.

Metrics are stored in natural units and scaled here (:class:`MetricSpec`, e.g. F1 × 100 with one
decimal). :func:`render` writes Markdown, LaTeX (booktabs) or CSV (one line per cell).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import math
import statistics
import tomllib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from experiments.health import DEAD_MARK, record_reasons
from experiments.real_sets import SHARED_PREFIX, is_shared
from experiments.significance import ALPHA, Comparison, compare_runs, holm, read_units
from experiments.spec import NO_REPRESENTATION, RunSpec, baseline_fields, derive
from experiments.store import RunRecord
from tasks.core import MetricSpec

Format = Literal["markdown", "latex", "csv"]
FORMATS: tuple[str, ...] = ("markdown", "latex", "csv")
DEFAULT_PAPER = Path(__file__).with_name("paper.toml")
MISSING = "—"
#: A cell with a run that failed in the command that renders the table (``failed=``).
FAILED = "failed"
#: The most characters of a failed run's error a footnote shows.
FAILED_ERROR_CHARS = 160
SPLITS = ("train", "dev", "test")  # the prefixes of split metric keys ("dev_f1")
PAPER_PRESET = "paper"
PUBLISHED_ELMO = "original"  # the published biLM of the paper (``--elmo published:original``)
SIGNIFICANCE_DOC = "docs/significance.md"
HEALTH_DOC = "docs/runs.md#dead-runs"
#: Largest gap (natural units) between a test's difference and the difference of the means.
DIFFERENCE_TOLERANCE = 1e-6
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
    "split",
    "paper_split",
    "preset",
    "data",
    "biLM",
    "biLM_fingerprints",
    "n_seeds_a",
    "n_seeds_b",
    "n_units",
    "difference",
    "p",
    "p_holm",
    "ci_low",
    "ci_high",
    "significant",
    "conditional",
    "df",
    "test_samples",
    "no_test",
    "stale_run_ids",
    "paper_comparable",
    "paper_incomparable_because",
    "dead_run_ids",
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
            then carry the difference to it with a significance test.
        expect: the direction a claim predicts against ``versus`` (``"above"``: ELMo beats
            the baseline; ``"below"``: random weights fall short of ELMo); rows where the
            test does not show it (Holm-adjusted p ≥ α, or a difference the other way) are
            named in a footnote. ``None``: no claim.
    """

    label: str
    changes: Mapping[str, Any] = field(default_factory=dict)
    paper_key: str | None = None
    versus: str | None = None
    expect: Literal["above", "below"] | None = None


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
            sits beside ours only for the same split (and setup: :func:`paper_comparable`).
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
        """Whether the paper's numbers are for the split of our runs (or splits are unstated);
        the split only: :func:`paper_comparable` is the whole rule."""
        return self.split is None or self.paper_split is None or self.split == self.paper_split

    def splits_of(self, row: Row) -> tuple[str | None, str | None]:
        """The row's split and its paper number's split (the row's own, else the table's)."""
        return row.split or self.split, row.paper_split or self.paper_split

    def row_comparable(self, row: Row) -> bool:
        """Whether the paper's number for ``row`` is for the split of our runs (the split
        only: :func:`paper_comparable` is the whole rule)."""
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

    def pair_of(self, column: Column) -> tuple[str, str] | None:
        """The two run columns a column's test compares (``None``: the column has no test)."""
        if isinstance(column, IncreaseColumn):
            return column.minuend, column.subtrahend
        return (column.label, column.versus) if column.versus is not None else None


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
            its mean includes them (:mod:`experiments.health`).
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


def load_paper(path: str | Path = DEFAULT_PAPER) -> dict[str, Any]:
    """Read the paper's numbers (``experiments/paper.toml``)."""
    with Path(path).open("rb") as handle:
        return tomllib.load(handle)


#: ``(run_id, file name) -> text`` of a stored attachment, or None when absent.
Attachments = Callable[[str, str], "str | None"]


def paper_comparable(table: TableSpec, row: Row) -> tuple[bool, str]:
    """Whether the paper's numbers may stand beside ``row``'s, and why not.

    They may when the row's base spec (for a baseline row still the ELMo spec it derives from)
    uses the ``paper`` preset, the published biLM (``{"published": "original"}``), the task's
    real data (not ``demo``, all of it: no ``limit``, no ``train_fraction``), and our numbers are
    for the split of the paper's (or a split is unstated).

    Returns:
        ``(True, "")``, or ``(False, reasons)`` with the reasons joined by commas, e.g.
        ``"DEMO data, preset mini, biLM = the shipped small biLM, not the published ELMo"``.
    """
    base = row.base
    reasons = []
    ours, paper = table.splits_of(row)
    if ours is not None and paper is not None and ours != paper:
        reasons.append(f"the paper's numbers are {paper} numbers and ours are {ours} numbers")
    if base.data == "demo":
        reasons.append("DEMO data")
    elif is_shared(base.data):
        reasons.append(f"another data set ({base.data.removeprefix(SHARED_PREFIX)})")
    if base.limit is not None:
        reasons.append(f"only the first {base.limit:,} examples of each split")
    if base.train_fraction is not None:
        reasons.append(f"{100 * base.train_fraction:g} % of the training set")
    if base.preset != PAPER_PRESET:
        reasons.append(f"preset {base.preset}")
    if base.representation != "elmo":
        reasons.append(f"representation {base.representation}, not the published ELMo")
    elif base.representation_config.get("published") != PUBLISHED_ELMO:
        reasons.append(f"biLM = {bilm_description(base.representation_config)}")
    return not reasons, ", ".join(reasons)


def smoke_reasons(spec: RunSpec) -> list[str]:
    """Why ``spec`` is a smoke run, in words: its ``--limit`` (``"first 20 examples of each
    split"``) and a ``--max-epochs`` below its preset's budget (``"1 of the preset's 10
    epochs"``); ``[]`` for a run on the whole data with the preset's budget."""
    return _smoke_text([spec.limit] if spec.limit is not None else [], _short_budgets([spec]))


def smoke_label(specs: Iterable[RunSpec]) -> str:
    """`` [SMOKE RUNS: ...]`` for a title (the :func:`smoke_reasons` of the specs together,
    e.g. ``" [SMOKE RUNS: first 20 examples of each split; 1 of the presets' 10–40
    epochs]"``), or ``""`` when no spec is a smoke run."""
    specs = list(specs)
    limits = sorted({s.limit for s in specs if s.limit is not None})
    reasons = _smoke_text(limits, _short_budgets(specs))
    return f" [SMOKE RUNS: {'; '.join(reasons)}]" if reasons else ""


def _short_budgets(specs: Iterable[RunSpec]) -> list[tuple[int, int | None]]:
    """``(max_epochs, the preset's epochs or None when unknown)`` of the specs whose
    ``max_epochs`` is below their preset's budget (or whose budget is unknown)."""
    found = []
    for spec in specs:
        if spec.max_epochs is not None:
            budget = _preset_epochs(spec.task, spec.preset, tuple(spec.overrides))
            if budget is None or spec.max_epochs < budget:
                found.append((spec.max_epochs, budget))
    return found


def _smoke_text(limits: Sequence[int], budgets: Sequence[tuple[int, int | None]]) -> list[str]:
    """The smoke reasons in words: the ``--limit`` values and the short epoch budgets."""
    reasons = []
    if limits:
        reasons.append(f"first {'/'.join(f'{n:,}' for n in limits)} examples of each split")
    if budgets:
        ran = _span(sorted({e for e, _ in budgets}))
        known = sorted({b for _, b in budgets if b is not None})
        if not known:
            reasons.append(f"at most {ran} epochs (--max-epochs)")
        else:
            whose = "the preset's" if len(known) == 1 else "the presets'"
            reasons.append(f"{ran} of {whose} {_span(known)} epochs")
    return reasons


@functools.lru_cache(maxsize=256)
def _preset_epochs(task: str, preset: str, overrides: tuple[str, ...]) -> int | None:
    """The epoch budget of ``task``'s ``preset`` with ``overrides``; ``None`` when the task or
    preset is not registered here."""
    from tasks.registry import get_task

    try:
        epochs = get_task(task).configure(preset, list(overrides)).train.epochs
    except (KeyError, ValueError, AttributeError):
        return None
    return int(epochs) if isinstance(epochs, int) else None


def bilm_description(config: Mapping[str, Any], detail: bool = False) -> str:
    """An ELMo configuration in words, e.g. ``"the shipped small biLM, not the published ELMo"``
    (for the paper's ``{"published": "original"}``: ``"the published ELMo 'original' (Peters et
    al. 2018)"``); ``detail`` adds the shipped biLM's size and training data. The one wording of
    a biLM in captions and footnotes."""
    if "published" in config:
        name = config["published"]
        if name == PUBLISHED_ELMO:
            return f"the published ELMo {name!r} (Peters et al. 2018)"
        return f"the published ELMo {name!r}, not the paper's {PUBLISHED_ELMO!r}"
    if "weights" in config:
        what = f"official-format weights {Path(str(config['weights'])).name}"
    elif "checkpoint" in config:
        what = f"checkpoint {Path(str(config['checkpoint'])).name}"
    elif detail:
        what = (
            "the shipped small English biLM (elmo-bench-small-en, 3.0 M parameters, trained on "
            "2.3 M tokens)"
        )
    else:
        what = "the shipped small biLM"
    return f"{what}, not the published ELMo"


def config_label(spec: RunSpec) -> str:
    """A run's representation and its configuration, short: ``"elmo published:original"``,
    ``"elmo checkpoint=default"`` (the shipped biLM), ``"cove weights=w.pth"``, ``"none"``."""
    if spec.representation == NO_REPRESENTATION:
        return NO_REPRESENTATION
    config = dict(spec.representation_config)
    tuned = " fine-tuned" if config.pop("finetune", None) else ""
    if "published" in config:
        label = f"published:{config['published']}"
    elif "weights" in config:
        label = f"weights={Path(str(config['weights'])).name}"
    elif "checkpoint" in config:
        label = f"checkpoint={Path(str(config['checkpoint'])).name}"
    elif not config and spec.representation == "elmo":
        label = "checkpoint=default"
    else:
        label = ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "default"
    return f"{spec.representation} {label}{tuned}"


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
            tests, the read statistics of a caption line "Skipped while reading", shown when a
            run's reader skipped anything); ``None``: no tests, no such line.
        stale: run_ids the caller reused although their recorded identity no longer matches
            (``--reuse-stale``): their cells are marked ``‡`` and a footnote lists them.
        exclude_dead: leave dead runs out of the means (``--exclude-dead``); by default they
            are included. Either way their cells are marked ``☠`` and a footnote names them.
        failed: run_id → error of runs that failed while the command ran (never stored): a
            cell with one of them (an increase: in either of its columns) reads ``failed``,
            and a footnote per row names its failed runs with the first one's error; the
            other rows render as usual. ``None``: none failed.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    records = list(records)
    grid = compute_cells(table, records, paper, attachments, stale=stale, exclude_dead=exclude_dead)
    if fmt == "csv":
        return _csv(table, grid, records)
    found = _found(table, records)
    skips = _skip_lines(table, records, attachments) if attachments is not None else []
    smoke = smoke_label(row.base for row in table.rows)
    if smoke and smoke not in table.title:
        table = dataclasses.replace(table, title=table.title + smoke)
    if table.caption:
        lines = [
            _epochs_line(table, records),
            *_provenance_lines(found),
            *_sample_efficiency_lines(table, records),
        ]
        shown = dataclasses.replace(table, caption=(*table.caption, *lines, *skips))
    elif skips:
        shown = dataclasses.replace(table, caption=tuple(skips))
    else:
        shown = table
    has_paper = any(column.paper_key for column in table.columns)  # else no paper columns
    header = ["Task"]
    for column in table.columns:
        header += [column.label, *([f"{column.label} (paper)"] if has_paper else [])]
    body = []
    failed = failed or {}
    failed_notes = []
    for row, cells in zip(table.rows, grid, strict=True):
        line = [row.label]
        broken = _failed_runs(table, row, failed)
        for column, cell in zip(table.columns, cells, strict=True):
            increase = isinstance(column, IncreaseColumn)
            ours = _increase_text if increase else _ours_text
            line.append(FAILED if broken.get(column.label) else ours(cell, row.metric))
            if has_paper:
                line.append(_paper_text(cell, row.metric, increase))
        body.append(line)
        ids = list(dict.fromkeys(rid for ids in broken.values() for rid in ids))
        if ids:
            error = " ".join(failed[ids[0]].split())
            if len(error) > FAILED_ERROR_CHARS:
                error = error[: FAILED_ERROR_CHARS - 1] + "…"
            failed_notes.append(
                f"{row.label}: {FAILED}, {len(ids)} run(s) ({', '.join(ids)}): {error}"
            )
    notes = _notes(table, grid, body, _withheld(table, paper) if has_paper else [])
    notes += _dead_notes(grid, records, attachments, exclude_dead)
    notes += failed_notes
    if fmt == "latex":
        return _latex(shown, header, body, notes)
    return _markdown(shown, header, body, notes)


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


def dynamic_table(rows: Sequence[Row], seeds: tuple[int, ...] = (0,)) -> TableSpec:
    """Beyond the paper: per-token layer weights (``mode="dynamic"``, :mod:`bilm.dynamic_mix`)
    against the paper's static mix (Eq. 1) at each row's own λ and sites, tested against it.
    The paper has no such column, so no paper number stands beside it."""
    return TableSpec(
        name="dynamic",
        title="Static (Eq. 1) vs per-token (dynamic) layer weights",
        rows=tuple(rows),
        columns=(
            RunsColumn("Static (all layers)", {"mode": "all"}),
            RunsColumn("Dynamic", {"mode": "dynamic"}, versus="Static (all layers)"),
        ),
        seeds=seeds,
    )


def bilm_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    rep_config: Mapping[str, Any] | None = None,
) -> TableSpec:
    """Beyond the paper's tables: how the biLM is run (paper §3.4, A.1; ELMO_SPEC §8). Each row's
    ELMo configuration with the LSTM state reset per sentence (this project's default), started
    from a fixed warm-up state, carried across batches row by row (the official biLM and
    allennlp's stateful ELMo), and with the biLM first fine-tuned for one epoch on the task's
    training text (paper A.1, "in most cases"); each tested against reset. ``rep_config`` is the
    rows' biLM configuration, to which fine-tuning is added. No paper number stands beside them
    (the paper reports no such comparison)."""
    base = dict(rep_config or {})
    base.pop("finetune", None)
    tuned = {"representation_config": {**base, "finetune": 1.0}, "state": "reset"}
    return TableSpec(
        name="bilm",
        title="biLM state policy and task fine-tuning",
        rows=tuple(rows),
        columns=(
            RunsColumn("Reset (default)", {"representation_config": base, "state": "reset"}),
            RunsColumn(
                "Warm", {"representation_config": base, "state": "warm"}, versus="Reset (default)"
            ),
            RunsColumn(
                "Carry", {"representation_config": base, "state": "carry"}, versus="Reset (default)"
            ),
            RunsColumn("Fine-tuned biLM", tuned, versus="Reset (default)"),
        ),
        seeds=seeds,
    )


def real_table(
    rows: Sequence[Row],
    seeds: tuple[int, ...] = (0,),
    others: Mapping[str, Mapping[str, Any]] | None = None,
) -> TableSpec:
    """The real sets (``--data real``): the baseline, ELMo tested against it, and each other
    representation (name → configuration; default the random-weight biLM and the bundled
    MiniLM) tested against ELMo. No paper number stands beside them (other data)."""
    others = {"bilm-random": {}, "hf": {}} if others is None else others
    labels = {"bilm-random": "biLM, random weights", "hf": "MiniLM (hf)"}
    return TableSpec(
        name="real",
        title="Real sets: baseline, ELMo and other representations",
        rows=tuple(rows),
        columns=(
            RunsColumn("Baseline", baseline_fields()),
            RunsColumn("ELMo", {}, versus="Baseline", expect="above"),
            *(
                RunsColumn(
                    labels.get(name, name),
                    {"representation": name, "representation_config": dict(config)},
                    versus="ELMo",
                    expect="below" if name == "bilm-random" else None,
                )
                for name, config in others.items()
            ),
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


def _found(table: TableSpec, records: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs of ``records`` that fill a cell of ``table`` (each once, in table order)."""
    by_id = {r.run_id: r for r in records}
    found: dict[str, RunRecord] = {}
    for row in table.rows:
        for column in table.columns:
            if isinstance(column, RunsColumn):
                for spec in table.expected(row, column):
                    if spec.run_id in by_id:
                        found.setdefault(spec.run_id, by_id[spec.run_id])
    return list(found.values())


def _epochs_line(table: TableSpec, records: Sequence[RunRecord]) -> str:
    """Caption line: epochs run and selected epochs of the table's runs found in ``records``."""
    found = [r.metrics for r in _found(table, records)]
    ran = sorted({int(m["epochs_run"]) for m in found if "epochs_run" in m})
    best = sorted({int(m["best_epoch"]) for m in found if "best_epoch" in m})
    if not found:
        return "Epochs: no run found yet."
    return f"Epochs: {_span(ran)} run per training run; selected (best dev) epoch {_span(best)}."


def _identity(record: RunRecord) -> Mapping[str, Any]:
    """The record's ``provenance.identity`` (empty for records without one)."""
    identity = getattr(record.provenance, "identity", {}) or {}
    return identity if isinstance(identity, Mapping) else {}


def _commit(record: RunRecord) -> str:
    sha = record.provenance.git_sha
    text = sha[:7] if sha else "no git commit"
    return text + "+dirty" if record.provenance.git_dirty else text


def _device(record: RunRecord) -> str:
    """``provenance.device`` with the CPU threads of the identity, e.g. ``"cpu, 1 thread"``."""
    device = record.provenance.device
    threads = _identity(record).get("threads")
    if isinstance(threads, int) and not isinstance(threads, bool) and "thread" not in device:
        device += f", {threads} thread{'' if threads == 1 else 's'}"
    return device


def _short(value: object) -> str | None:
    return value[:8] if isinstance(value, str) and value else None


def _bilm_keys(record: RunRecord) -> tuple[str | None, str | None]:
    """The weights' fingerprint and the identity's representation fingerprint (full)."""
    fingerprint = record.provenance.representation_fingerprint
    representation = _identity(record).get("representation")
    return fingerprint or None, representation if isinstance(representation, str) else None


def _bilm_names(keys: Collection[tuple[str | None, str | None]]) -> dict[Any, str]:
    """Short names of biLM fingerprints: the weights' first 8 hex digits (the identity's when
    the weights' is not recorded), both when that alone would not tell them apart."""

    def short(key: tuple[str | None, str | None]) -> str:
        return _short(key[0]) or _short(key[1]) or "fingerprint not recorded"

    def long(key: tuple[str | None, str | None]) -> str:
        parts = [_short(key[0]) or "?", _short(key[1]) or "?"]
        return "/".join(parts) if any(p != "?" for p in parts) else "fingerprint not recorded"

    names = {key: short(key) for key in keys}
    if len(set(names.values())) < len(names):
        names = {key: long(key) for key in keys}
    return names


def _counted(counts: Mapping[str, int], unit: str = "run") -> str:
    """``"a"`` for one value, else ``"a (3 runs), b (1 run)"``, most frequent first."""
    if len(counts) == 1:
        return next(iter(counts))
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{k} ({n} {unit}{'' if n == 1 else 's'})" for k, n in ordered)


def _version(value: object) -> str:
    return f"v{value}" if value is not None else "not recorded"


def _provenance_lines(found: Sequence[RunRecord]) -> list[str]:
    """Caption lines: the commits, devices, biLMs and result versions the runs found rest on,
    and a ``⚠`` line for each way they differ where they should not (data, biLM fingerprint of
    one configuration, preset, resolved configuration or result version)."""
    if not found:
        return []
    commits = Counter(_commit(r) for r in found)
    devices = Counter(_device(r) for r in found)
    bilms: dict[tuple[str, str], Counter[tuple[str | None, str | None]]] = {}
    for record in found:  # by the full configuration (two checkpoints may share a file name)
        if record.spec.representation != NO_REPRESENTATION:
            spec = record.spec
            config = json.dumps(spec.representation_config, sort_keys=True)
            # the state policy is part of the fingerprint, and a fine-tuned biLM is the task's
            # own: neither is a mismatch
            label = config_label(spec) + ("" if spec.state == "reset" else f", state {spec.state}")
            label += f" for {spec.task}" if spec.representation_config.get("finetune") else ""
            key = (label, f"{spec.representation} {config}")
            bilms.setdefault(key, Counter())[_bilm_keys(record)] += 1
    plural = {True: "s", False: ""}
    parts = [
        f"commit{plural[len(commits) > 1]} {_counted(commits)}",
        f"device{plural[len(devices) > 1]} {_counted(devices)}",
    ]
    entries: Counter[str] = Counter()
    for (label, _), keys in bilms.items():
        names = _bilm_names(keys)
        for bilm_key, n in keys.items():
            entries[f"{label} [{names[bilm_key]}]"] += n
    if entries:
        parts.append(f"biLM{plural[len(entries) > 1]} {_counted(entries)}")
    else:
        parts.append("no biLM (baseline runs only)")
    versions, warnings = _versions(found)
    if versions:
        parts.append(f"result versions: {versions}")
    runs = f"{len(found)} run{plural[len(found) > 1]}"
    lines = [f"Rests on {runs}: {'; '.join(parts)}."]
    for (label, _), keys in sorted(bilms.items()):
        if len(keys) > 1:
            names = _bilm_names(keys)
            listed = _counted(Counter({names[k]: n for k, n in keys.items()}))
            lines.append(
                f"⚠ runs rest on {len(keys)} different biLM fingerprints for {label}: {listed}."
            )
    lines += _mix_warnings(found) + warnings
    return lines


def _mix_warnings(found: Sequence[RunRecord]) -> list[str]:
    """``⚠`` lines for runs of one table that differ in data label or preset, and for runs of
    one task with the same data label, preset and changes that differ in data fingerprint or
    resolved task configuration (``provenance.identity``; the data's also from
    ``provenance.data_fingerprint``)."""
    lines = []
    data = Counter(r.spec.data for r in found)
    if len(data) > 1:
        lines.append(f"⚠ runs differ in data: {_counted(data)}.")
    presets = Counter(r.spec.preset for r in found)
    if len(presets) > 1:
        lines.append(f"⚠ runs differ in preset: {_counted(presets)}.")
    groups: dict[tuple[str, str, str, tuple[str, ...]], list[RunRecord]] = {}
    for record in found:  # runs that should read the same data and configuration
        spec = record.spec
        groups.setdefault((spec.task, spec.data, spec.preset, spec.overrides), []).append(record)
    for (task, _, _, overrides), mine in sorted(groups.items()):
        what = f"{task} ({' '.join(overrides)})" if overrides else task
        for name, field_name, noun in (
            ("data", "data_fingerprint", "data fingerprints"),
            ("config", None, "resolved task configurations"),
        ):
            prints = Counter(
                _short(_identity(r).get(name))
                or (_short(getattr(r.provenance, field_name)) if field_name else None)
                or "not recorded"
                for r in mine
            )
            if len(prints) > 1:
                listed = _counted(prints)
                lines.append(f"⚠ {what} runs rest on {len(prints)} different {noun}: {listed}.")
    return lines


def _versions(found: Sequence[RunRecord]) -> tuple[str, list[str]]:
    """``"squad v1, snli v2 / harness v1"`` from the runs' identities ("" when none records
    them) and a ``⚠`` line per task (and for the harness) whose runs differ."""
    if not any(_identity(r) for r in found):
        return "", []
    tasks: dict[str, Counter[str]] = {}
    for record in found:
        version = _version(_identity(record).get("task_result_version"))
        tasks.setdefault(record.spec.task, Counter())[version] += 1
    harness = Counter(_version(_identity(r).get("harness_result_version")) for r in found)
    parts = [f"{task} {' + '.join(sorted(counts))}" for task, counts in tasks.items()]
    text = f"{', '.join(parts)} / harness {' + '.join(sorted(harness))}"
    warnings = [
        f"⚠ {task} runs differ in result version: {_counted(counts)}."
        for task, counts in tasks.items()
        if len(counts) > 1
    ]
    if len(harness) > 1:
        warnings.append(f"⚠ runs differ in harness result version: {_counted(harness)}.")
    return text, warnings


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
        split, _, bare = row.metric.key.partition("_")
        key = f"dev_{bare if split in SPLITS else row.metric.key}"
        pairs = []
        baselines = table.expected(row, columns["Baseline"])
        for base, elmo in zip(baselines, table.expected(row, columns["ELMo"]), strict=True):
            b, e = by_id.get(base.run_id), by_id.get(elmo.run_id)
            if b is None or e is None or key not in b.metrics or "best_epoch" not in b.metrics:
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
            f"{_fixed(test.difference * scale, places)}, the means differ by "
            f"{_fixed(shown, places)}: they do not reproduce the stored metric of runs "
            f"{', '.join(texts)}"
        )
    return test, None


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


def _marks(cell: Cell) -> str:
    return (
        (f" {NOT_CONVERGED}" if cell.not_converged else "")
        + (f" {STALE}" if cell.stale else "")
        + (f" {DEAD}" if cell.dead else "")
    )


def _ours_text(cell: Cell, metric: MetricSpec) -> str:
    if cell.mean is None:
        text = f"{MISSING} ({', '.join(cell.missing)})" if cell.missing else MISSING
        return text + (f" {DEAD}" if cell.dead else "")  # every run found excluded as dead
    text = _fixed(cell.mean, metric.decimals) + _spread(cell.std, metric.decimals, _fixed, False)
    text += _marks(cell)
    if cell.missing:
        text += f" (n={cell.n} of {cell.n_expected}; missing {', '.join(cell.missing)})"
    else:
        text += f" (n={cell.n})"
    if cell.test is not None:
        t = cell.test
        text += f" Δ {_fixed(t.difference * metric.scale, metric.decimals)}{_test_text(t, metric)}"
    return text


def _p(value: float) -> str:
    """``"=0.012"``, or ``"<0.001"`` below 0.001."""
    return "<0.001" if value < 0.001 else f"={value:.3f}"


def _test_text(test: Comparison, metric: MetricSpec) -> str:
    """`` (p=0.004, Holm=0.012✱; 95 % CI [1.2, 10.8]; 3 vs 3 seeds, 250 units)``: a test in the
    metric's display units, ``✱`` on the Holm-adjusted p-value."""
    scale, d = metric.scale, metric.decimals
    mark = SIGNIFICANT if test.significant else ""
    low, high = _fixed(test.low * scale, d), _fixed(test.high * scale, d)
    p = f"p{_p(test.p_value)}"
    if test.adjusted_p is not None:
        p += f", Holm{_p(test.adjusted_p)}"
    level = f"{100 * (1 - ALPHA):g} %"
    sides = f"{test.seeds_a} vs {test.seeds_b} seeds, {test.units:,} units"
    return f" ({p}{mark}; {level} CI [{low}, {high}]; {sides})"


def _increase_text(cell: Cell, metric: MetricSpec) -> str:
    if cell.mean is None:
        return MISSING
    text = _fixed(cell.mean, metric.decimals) + _spread(cell.relative, 1, _fixed, True)
    text += f" {STALE}" if cell.stale else ""
    text += f" {DEAD}" if cell.dead else ""
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
STALE = "‡"  # a run reused although its recorded identity no longer matches
DEAD = DEAD_MARK  # a cell using a dead run (experiments.health)
SIGNIFICANT = "✱"  # Holm-adjusted p < ALPHA (not `*`: Markdown emphasis)


def _withheld(table: TableSpec, paper: Mapping[str, Any]) -> list[tuple[Row, str]]:
    """The rows whose paper numbers exist but are not shown (:func:`paper_comparable`), with
    the reasons."""
    section = paper.get(table.paper_table or table.name, {})
    keys = []
    for column in table.columns:
        if column.paper_key is not None:
            increase = isinstance(column, IncreaseColumn)
            keys += [f"{column.paper_key}_abs"] if increase else [column.paper_key]
    out = []
    for row in table.rows:
        comparable, why = paper_comparable(table, row)
        paper_row = section.get(row.paper_key or row.base.task, {})
        if not comparable and any(paper_row.get(k) is not None for k in keys):
            out.append((row, why))
    return out


def _failed_runs(
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


def _cell_name(row: Row, column: Column) -> str:
    return f"{row.label} {column.label}"


def _notes(
    table: TableSpec,
    grid: Sequence[Sequence[Cell]],
    body: list[list[str]],
    withheld: Sequence[tuple[Row, str]],
) -> list[str]:
    """The table's footnotes: how to read it, its tests (scheme, samples, Holm family,
    conditional tests, cells without a test), unconverged and stale cells, paper cells left
    empty and why."""
    notes = [NOTE]
    placed = [
        (row, column, cell)
        for row, cells in zip(table.rows, grid, strict=True)
        for column, cell in zip(table.columns, cells, strict=True)
    ]
    tests = [cell.test for _, _, cell in placed if cell.test is not None]
    if tests:
        notes.append(_tests_note(tests))
        conditional = [
            _cell_name(r, c)
            for r, c, cell in placed
            if cell.test and min(cell.test.seeds_a, cell.test.seeds_b) < 2
        ]
        if conditional:
            notes.append(
                f"Conditional tests ({'; '.join(conditional)}): one side has a single seed, so "
                "the test is conditional on that seed (training-seed variance not included)."
            )
    for row, column, cell in placed:
        if cell.no_test is not None:
            pair = table.pair_of(column)
            against = f" ({pair[0]} vs {pair[1]})" if pair else ""
            notes.append(f"No test for {_cell_name(row, column)}{against}: {cell.no_test}.")
    if any(cell.not_converged for _, _, cell in placed):
        notes.append(
            f"{NOT_CONVERGED} not converged: on most seeds the selected (best dev) epoch was the "
            "last one run; a longer budget may change the number."
        )
    stale = list(
        dict.fromkeys(r for _, c, cell in placed if isinstance(c, RunsColumn) for r in cell.stale)
    )
    if stale:
        notes.append(
            f"{STALE} rests on runs reused although their recorded identity (data, biLM, "
            "configuration or result version) no longer matches (--reuse-stale): "
            f"{', '.join(stale)}."
        )
    groups: dict[str, list[str]] = {}
    for row, why in withheld:
        groups.setdefault(why, []).append(row.label)
    if len(groups) == 1 and len(withheld) == len(table.rows):
        notes.append(f"Paper column left empty: {next(iter(groups))}.")
    else:
        for why, labels in groups.items():
            notes.append(f"Paper cells left empty for {'; '.join(labels)}: {why}.")
    increases = [c for c in table.columns if isinstance(c, IncreaseColumn)]
    if any(cell.relative is not None for _, c, cell in placed if c in increases):
        notes.append(_increase_note(increases))
    notes += _expectation_notes(placed)
    if any(" Δ " in cell for cells in body for cell in cells[1:]):
        pairs = sorted(
            {f"{c.label} vs {c.versus}" for c in table.columns if isinstance(c, RunsColumn)}
            - {f"{c.label} vs None" for c in table.columns}
        )
        notes.append(
            f"Δ: difference of the column's mean to its reference column's ({'; '.join(pairs)}); "
            "it is the difference the test is about."
        )
    return notes


def _increase_note(columns: Sequence[IncreaseColumn]) -> str:
    """What an increase cell's two numbers are (``8.2 / 44.8%``)."""
    parts = dict.fromkeys(
        f"{c.label}: Δ / r %, Δ = {c.minuend} − {c.subtrahend} (absolute, in the metric's "
        f"points) and r the relative error reduction Δ / (100 − {c.subtrahend})"
        for c in columns
    )
    return "; ".join(parts) + ", as in the paper's Table 1."


def _expectation_notes(placed: Sequence[tuple[Row, Column, Cell]]) -> list[str]:
    """One footnote per column with an :attr:`RunsColumn.expect` naming the rows where its
    test does not show the expected direction (issue #24: say where ELMo does not beat the
    baseline, or random weights come close to ELMo)."""
    misses: dict[tuple[str, str, str], list[str]] = {}
    for row, column, cell in placed:
        if not isinstance(column, RunsColumn) or column.expect is None or cell.test is None:
            continue
        test = cell.test
        sign = 1.0 if column.expect == "above" else -1.0
        p = test.adjusted_p if test.adjusted_p is not None else test.p_value
        if sign * test.difference > 0 and p < ALPHA:
            continue
        delta = f"{test.difference * row.metric.scale:+.{row.metric.decimals}f}"
        key = (column.label, column.expect, str(column.versus))
        misses.setdefault(key, []).append(f"{row.label} (Δ {delta}, Holm p{_p(p)})")
    return [
        (
            f"{label} does not beat {versus} significantly on: {'; '.join(rows)}."
            if expect == "above"
            else f"{label} comes close to {versus} (not significantly below it) on: "
            f"{'; '.join(rows)}."
        )
        for (label, expect, versus), rows in misses.items()
    ]


def dead_runs(
    records: Iterable[RunRecord], attachments: Attachments | None = None
) -> dict[str, str]:
    """run_id → why it is dead, for the dead runs among ``records``
    (:func:`experiments.health.record_reasons`; records never checked are not dead)."""
    found = {}
    for record in records:
        reasons = record_reasons(record.run_id, record.metrics, attachments)
        if reasons is not None:
            found[record.run_id] = reasons
    return found


def _dead_notes(
    grid: Sequence[Sequence[Cell]],
    records: Sequence[RunRecord],
    attachments: Attachments | None,
    excluded: bool,
) -> list[str]:
    """The footnote on dead runs: each run of a cell and why, and whether the means include
    them; none when no cell uses a dead run."""
    used = list(dict.fromkeys(r for cells in grid for cell in cells for r in cell.dead))
    if not used:
        return []
    why = dead_runs([r for r in records if r.run_id in used], attachments)
    listed = "; ".join(f"{run_id}: {why.get(run_id, 'reasons not read')}" for run_id in used)
    means = (
        "left out of the means and tests (--exclude-dead)"
        if excluded
        else "included in the means (--exclude-dead leaves them out)"
    )
    return [f"{DEAD} rests on dead runs, which never learned ({HEALTH_DOC}), {means}: {listed}."]


#: One sentence per test scheme of :mod:`experiments.significance` (``Comparison.scheme``).
SCHEMES = {
    "seed-aware": (
        "seed-aware test: the difference of the two seed means, its variance the test-set "
        "part from a paired bootstrap over the evaluation units (questions, pairs, sentences "
        "or documents as the task defines them; covariances between different runs, so "
        "seed × unit noise counts once) plus each side's variance over its training seeds, "
        "against Student's t with Welch–Satterthwaite df"
    ),
    "pooled": (
        "pooled paired bootstrap over the evaluation units with the seeds held fixed "
        "(conditional on them), percentile interval"
    ),
}


def _tests_note(tests: Sequence[Comparison]) -> str:
    """How to read a cell's test: the scheme (in one sentence, with the documentation), the
    runs and units, bootstrap samples (from the tests), the Holm family and the mark."""
    samples = " or ".join(f"{n:,}" for n in sorted({t.samples for t in tests}))
    schemes = "; ".join(SCHEMES.get(s, f"{s} test") for s in sorted({t.scheme for t in tests}))
    level = f"{100 * (1 - ALPHA):g} %"
    family = f"all {len(tests)} tests" if len(tests) > 1 else "the 1 test"
    return (
        f"p, CI: {schemes} ({SIGNIFICANCE_DOC}); two-sided, {samples} bootstrap samples, "
        f"{level} confidence interval of the difference. Each test is over exactly the runs "
        "of the two means (a vs b seeds) and the units they share. Holm: the p-value "
        f"Holm–Bonferroni adjusted over the family of {family} shown in this table; "
        f"{SIGNIFICANT} adjusted p < {ALPHA:g}."
    )


def _markdown(
    table: TableSpec, header: list[str], body: list[list[str]], notes: Sequence[str]
) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [f"**{table.title}**", ""]
    if table.caption:
        lines += [f"_{text}_  " for text in table.caption[:-1]] + [f"_{table.caption[-1]}_", ""]
    lines.append(line(header))
    lines.append("|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|")
    lines += [line(cells) for cells in body]
    lines += ["", "\n\n".join(notes)]
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
    "Δ": r"$\Delta$",
    "<": r"$<$",
    ">": r"$>$",
    "✱": r"$^{\ast}$",
    "☠": r"$^{\otimes}$",
    "†": r"\dag{}",
    "‡": r"\ddag{}",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX.get(char, char) for char in text)


def _latex(table: TableSpec, header: list[str], body: list[list[str]], notes: Sequence[str]) -> str:
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
        *[f"% {_latex_escape(note)}" for note in notes],
    ]
    return "\n".join(lines) + "\n"


def _column_spec(table: TableSpec, row: Row, column: Column) -> RunSpec:
    """The spec of a column's first run (an increase: its minuend's)."""
    if isinstance(column, IncreaseColumn):
        runs = {c.label: c for c in table.columns if isinstance(c, RunsColumn)}
        column = runs[column.minuend]
    return table.expected(row, column)[0]


def _fingerprints(runs: Sequence[RunRecord]) -> str:
    """The short biLM fingerprints of runs with a representation, space-separated."""
    keys = {_bilm_keys(r) for r in runs if r.spec.representation != NO_REPRESENTATION}
    return " ".join(sorted(_bilm_names(keys).values()))


def _csv(table: TableSpec, grid: list[list[Cell]], records: Sequence[RunRecord]) -> str:
    def num(value: float | None, decimals: int) -> str:
        return "" if value is None else _fixed(round(value, decimals), decimals)

    def general(value: float | None) -> str:
        return "" if value is None else f"{value:.6g}"

    by_id = {r.run_id: r for r in records}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row, cells in zip(table.rows, grid, strict=True):
        places, scale = row.metric.decimals + 2, row.metric.scale
        ours, paper_split = table.splits_of(row)
        comparable, why = paper_comparable(table, row)
        for column, cell in zip(table.columns, cells, strict=True):
            spec = _column_spec(table, row, column)
            prints = _fingerprints([by_id[r] for r in cell.runs])
            t = cell.test
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
                    ours or "",
                    paper_split or "",
                    spec.preset,
                    spec.data,
                    config_label(spec),
                    prints,
                    "" if t is None else t.seeds_a,
                    "" if t is None else t.seeds_b,
                    "" if t is None else t.units,
                    "" if t is None else num(t.difference * scale, places),
                    "" if t is None else general(t.p_value),
                    "" if t is None else general(t.adjusted_p),
                    "" if t is None else num(t.low * scale, places),
                    "" if t is None else num(t.high * scale, places),
                    "" if t is None else str(t.significant).lower(),
                    "" if t is None else str(t.conditional).lower(),
                    "" if t is None or t.df is None else f"{t.df:.1f}",
                    "" if t is None else t.samples,
                    cell.no_test or "",
                    " ".join(cell.stale),
                    str(comparable).lower(),
                    why,
                    " ".join(cell.dead),
                ]
            )
    return out.getvalue()
