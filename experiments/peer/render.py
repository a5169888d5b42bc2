"""The peer table (``results/peer/<task>.md``), its CSV and learning-curve plot, from stored
records only.

One section per data set the task's peer records cover. Per row (baseline; ELMo with the
project's ``carry`` state, like allennlp's; ELMo with the default ``reset``) and epoch: each
side's mean ± sd over seeds, the difference (project − allennlp) with the seed-aware test
(:func:`experiments.report.significance.seed_aware_test` over dev's units at that epoch), whether
the issue's parity target holds, and the median CPU seconds of the training pass with their ratio.
The layout follows the result tables' (:mod:`experiments.report.render`): the title, the table (its
first row on line 4), the numbered notes wrapped to 160 characters; the CSV beside it
(``<task>.csv``) carries every figure, the tests' intervals and seed counts too. The summary
across tasks (``summary.md``, :func:`render_summary`) draws one line per task, data set and row
from the same comparisons (:func:`compare_task`).
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from experiments.peer.run import (
    EpochPoint,
    PeerRequest,
    Series,
    base_row,
    collect,
    fp32_row,
    peer_records,
)
from experiments.report.render.captions import Note
from experiments.report.render.formats import numbered_notes
from experiments.report.significance import Comparison, seed_aware_test
from tasks.registry import get_task

__all__ = [
    "DataComparison",
    "EpochRow",
    "compare_epochs",
    "compare_task",
    "render_summary",
    "render_task",
    "requests_of",
]

#: Parity target (docs/peer.md, "Reading the table"): from the second epoch on, |Δ of the
#: means| ≤ max(this, peer sd).
GAP_POINTS = 1.0
#: Target of the project's CPU seconds per training epoch over the peer's.
TIME_RATIO = 0.7
#: At the final epoch the seed-aware test must not find a difference at this level (p > ALPHA);
#: below it a p value is starred.
ALPHA = 0.05
#: Which peer row each project row is compared with.
PEER_ROW = {"baseline": "baseline", "elmo carry": "elmo", "elmo reset": "elmo", "elmo warm": "elmo"}


#: A variant row whose changes run longer than this is shown as ``ROW + variant A`` with its
#: changes in a note (the table's lines stay within 160 characters); the CSV keeps the full name.
VARIANT_WIDTH = 40


class _Names:
    """Display names of the table's rows: a long variant row becomes ``ROW + variant A``."""

    def __init__(self) -> None:
        self.letters: dict[str, str] = {}

    def __call__(self, row: str) -> str:
        base = base_row(row)
        if len(row) - len(base) <= VARIANT_WIDTH:
            return row
        letter = self.letters.setdefault(row, chr(ord("A") + len(self.letters)))
        return f"{base} + variant {letter}"

    def note(self) -> str:
        """What each lettered variant changes (empty without one)."""
        return " ".join(
            f"Variant {letter}: `{base_row(row)}` with "
            + ", ".join(f"`{c}`" for c in row.split(" + ")[1:])
            + "."
            for row, letter in self.letters.items()
        )


def peer_row(row: str) -> str:
    """The allennlp row a project row (or a ``--variant`` row derived from it) is compared with."""
    base = base_row(row)
    return PEER_ROW.get(base, base)


@dataclass(frozen=True)
class EpochRow:
    """One epoch of one project row beside its peer row (natural units).

    Attributes:
        epoch: 1-based.
        peer: the peer's per-seed values. project: the project's.
        comparison: project − allennlp, seed-aware (``None`` without unit statistics).
        peer_cpu: median CPU seconds of the peer's training passes. project_cpu: the project's.
        within: the parity target holds at this epoch (``None`` at epoch 1: not a target).
    """

    epoch: int
    peer: tuple[float, ...]
    project: tuple[float, ...]
    comparison: Comparison | None
    peer_cpu: float
    project_cpu: float
    within: bool | None

    @property
    def difference(self) -> float:
        return statistics.fmean(self.project) - statistics.fmean(self.peer)

    @property
    def cpu_ratio(self) -> float | None:
        """The project's CPU seconds over the peer's (``None`` without the peer's)."""
        return self.project_cpu / self.peer_cpu if self.peer_cpu else None


def _sd(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _at(series: Series, epoch: int) -> list[EpochPoint]:
    return [p for run in series.runs.values() for p in run if p.epoch == epoch]


def compare_epochs(
    project: Series, peer: Series, metric_from_totals: Any, scale: float
) -> list[EpochRow]:
    """Every epoch both sides reached, compared (``scale``: display units of the gap target)."""
    epochs = sorted({p.epoch for p in _at_all(project)} & {p.epoch for p in _at_all(peer)})
    rows = []
    for epoch in epochs:
        a, b = _at(project, epoch), _at(peer, epoch)
        comparison = None
        if all(p.units for p in (*a, *b)):
            comparison = seed_aware_test(
                [(p.units[0], np.asarray(p.units[1], dtype=np.float64)) for p in a if p.units],
                [(p.units[0], np.asarray(p.units[1], dtype=np.float64)) for p in b if p.units],
                metric_from_totals,
            )
        peer_values = tuple(p.metric for p in b)
        project_values = tuple(p.metric for p in a)
        gap = abs(statistics.fmean(project_values) - statistics.fmean(peer_values)) * scale
        within = None if epoch == 1 else gap <= max(GAP_POINTS, _sd(peer_values) * scale)
        rows.append(
            EpochRow(
                epoch,
                peer_values,
                project_values,
                comparison,
                statistics.median(p.train_cpu_s for p in b),
                statistics.median(p.train_cpu_s for p in a),
                within,
            )
        )
    return rows


def _at_all(series: Series) -> list[EpochPoint]:
    return [p for run in series.runs.values() for p in run]


def requests_of(task: str, out: Path) -> list[PeerRequest]:
    """One request per data set (with its overrides, epochs and batch size) that the task's
    stored peer records cover, seeds as found; ordered by data label, overrides, epochs and
    batch size (the same in every clone: file times are not kept by git)."""
    seen: dict[tuple[Any, ...], set[int]] = {}
    folder = out / "runs" / task
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in paths:
        r = json.loads(path.read_text(encoding="utf-8"))
        key = (
            r["data"],
            tuple(r.get("request_overrides", ())),
            r["epochs_requested"],
            r["batch_size"],
        )
        seen.setdefault(key, set()).add(int(r["seed"]))
    out_requests = []
    for (data, overrides, epochs, batch), seeds in sorted(seen.items()):
        out_requests.append(PeerRequest(task, data, overrides, tuple(sorted(seeds)), epochs, batch))
    return out_requests


def _cell(values: Sequence[float], metric: Any) -> str:
    if not values:
        return "–"
    mean = metric.display(statistics.fmean(values))
    return f"{mean} ± {metric.display(_sd(values))}"


def _p(comparison: Comparison | None) -> str:
    if comparison is None:
        return "–"
    mark = "*" if comparison.p_value < ALPHA else ""
    return f"{comparison.p_value:.3f}{mark}"


#: The table's header: the data set and row first, then each side, the test, the time.
HEADER = (
    "| data | row | epoch | allennlp {label} | project {label} | Δ | p | target "
    "| CPU s/epoch allennlp | project | ratio |\n"
    "|---|---|---:|---:|---:|---:|---:|:---:|---:|---:|---:|"
)


@dataclass(frozen=True)
class DataComparison:
    """One data set of a task's peer table: its request, both sides' series and each project
    row's comparison with its allennlp row.

    Attributes:
        request: the data set, overrides, epochs and batch size (seeds as found).
        series: both sides' series (:func:`~experiments.peer.run.collect`).
        compared: project row → its epochs beside allennlp's (in the table's order).
        names: project row → its display name (``ROW + variant A`` for a long variant).
    """

    request: PeerRequest
    series: list[Series]
    compared: dict[str, list[EpochRow]]
    names: dict[str, str]


def compare_task(task_name: str, out: Path) -> tuple[list[DataComparison], str]:
    """Every data set of ``task_name``'s stored peer records, compared (none for a task without
    a peer or records); and the note naming the lettered variants (empty without one). The
    table, its CSV and plot and the summary across tasks are all drawn from this."""
    from tasks.registry import get_task

    task = get_task(task_name)
    names = _Names()
    found = []
    for request in requests_of(task_name, out) if task.peer is not None else ():
        series = collect(request, out)
        compared = _compared(series, task.metric_from_totals, task.metric.scale)
        found.append(DataComparison(request, series, compared, {r: names(r) for r in compared}))
    return found, names.note()


def _compared(series: list[Series], mft: Any, scale: float) -> dict[str, list[EpochRow]]:
    """Each project row of one data set beside its allennlp row, in the series' order."""
    by = {(s.side, s.row): s for s in series}
    out: dict[str, list[EpochRow]] = {}
    for (side, row), project in by.items():
        peer = by.get(("allennlp", peer_row(row)))
        if side == "project" and peer is not None:
            out[row] = compare_epochs(project, peer, mft, scale)
    return out


def _lines_of(found: DataComparison, metric: Any) -> list[str]:
    """The table's lines of one data set."""
    lines = []
    for row, rows in found.compared.items():
        for r in rows:
            target = "" if r.within is None else ("yes" if r.within else "**no**")
            ratio = "–" if r.cpu_ratio is None else f"{r.cpu_ratio:.2f}"
            diff = f"{r.difference * metric.scale:+.{metric.decimals}f}"
            lines.append(
                f"| {found.request.data_label} | {found.names[row]} | {r.epoch} | "
                f"{_cell(r.peer, metric)} | {_cell(r.project, metric)} | {diff} | "
                f"{_p(r.comparison)} | {target} | {r.peer_cpu:.0f} | {r.project_cpu:.0f} | "
                f"{ratio} |"
            )
    return lines


#: The bf16 section's header: each bf16 project row beside the same row in fp32.
PRECISION_HEADER = (
    "| data | row | epoch | fp32 {label} | bf16 {label} | Δ | p | within noise "
    "| CPU s/epoch fp32 | bf16 | ratio |\n"
    "|---|---|---:|---:|---:|---:|---:|:---:|---:|---:|---:|"
)


def precision_pairs(found: DataComparison) -> list[tuple[str, Series, Series]]:
    """Each bf16 project row of one data set with the same row in fp32 (both run):
    ``(bf16 row, its series, the fp32 row's series)``."""
    by = {s.row: s for s in found.series if s.side == "project"}
    return [
        (row, series, by[fp32])
        for row, series in by.items()
        if (fp32 := fp32_row(row)) is not None and fp32 in by
    ]


def _precision_lines(found: DataComparison, metric: Any, mft: Any) -> list[str]:
    """The bf16 section's lines of one data set: per epoch, the fp32 row, the bf16 row, their
    difference (bf16 − fp32) with its seed-aware test, whether it is within noise (p ≥
    :data:`ALPHA`; epoch 1 is not judged), and both CPU times."""
    lines = []
    for row, bf16, fp32 in precision_pairs(found):
        for r in compare_epochs(bf16, fp32, mft, metric.scale):
            p = r.comparison.p_value if r.comparison is not None else None
            noise = "" if r.epoch == 1 or p is None else ("yes" if p >= ALPHA else "**no**")
            ratio = "–" if r.cpu_ratio is None else f"{r.cpu_ratio:.2f}"
            lines.append(
                f"| {found.request.data_label} | {found.names.get(row, row)} | {r.epoch} | "
                f"{_cell(r.peer, metric)} | {_cell(r.project, metric)} | "
                f"{r.difference * metric.scale:+.{metric.decimals}f} | {_p(r.comparison)} | "
                f"{noise} | {r.peer_cpu:.0f} | {r.project_cpu:.0f} | {ratio} |"
            )
    return lines


def _data_note(request: PeerRequest, series: list[Series]) -> str:
    n_dev = next((len(p.units[0]) for s in series for p in _at_all(s) if p.units), 0)
    seeds = ", ".join(str(s) for s in request.seeds)
    changes = f", `--set {' '.join(request.all_overrides)}`" if request.all_overrides else ""
    return (
        f"{request.data_label} (`--data {request.data}`{changes}): dev {n_dev:,} units, "
        f"{request.epochs} epochs, batch {request.batch_size}, seeds {seeds} a side"
    )


def _cpus(requests: Sequence[PeerRequest], out: Path) -> tuple[set[str], float]:
    """The CPUs the peer's records name, and the largest gap between allennlp's own metric and
    the project's scorer on the same predictions (natural units)."""
    cpus: set[str] = set()
    native_gap = 0.0
    for request in requests:
        peer = get_task(request.task).peer
        scale = peer.native_scale if peer is not None else 1.0
        for record in peer_records(request, out):
            cpus.add(record.get("cpu", "?"))
            for e in record["epochs"]:
                if e.get("native") is not None:
                    native_gap = max(native_gap, abs(e["native"] * scale - e["metric"]))
    return cpus, native_gap


def render_task(task_name: str, out: Path, plot: bool = True) -> Path:
    """Write ``out/<task>.md`` (and ``out/<task>.png``) from the stored records.

    Raises:
        FileNotFoundError: no peer records of the task under ``out/runs/<task>``.
    """
    from tasks.registry import get_task

    task = get_task(task_name)
    adapter = task.peer
    found, variant_note = compare_task(task_name, out)
    if adapter is None or not found:
        raise FileNotFoundError(f"no peer records of {task_name} under {out / 'runs' / task_name}")
    metric = task.metric
    cpus, native_gap = _cpus([f.request for f in found], out)
    body: list[str] = []
    figures: list[tuple[str, str, EpochRow]] = []  # the CSV's rows: data, row, epoch
    panels: list[tuple[str, str, Series, Series]] = []
    summary: list[str] = []
    for f in found:
        body += _lines_of(f, metric)
        label = f.request.data_label
        figures += [(label, row, r) for row, rows in f.compared.items() for r in rows]
        by = {(s.side, s.row): s for s in f.series}
        for row, rows in f.compared.items():
            peer = by[("allennlp", peer_row(row))]
            panels.append((label, f.names[row], by[("project", row)], peer))
            summary.append(f"{label}, {f.names[row]}: {summary_line(rows, metric)}")
    data_notes = [_data_note(f.request, f.series) for f in found]
    head = [
        f"# {task_name.upper()} (`paper` preset) beside allennlp-models' `{adapter.model}`: "
        f"dev {metric.label} per epoch, Δ = project − allennlp",
        HEADER.format(label=metric.label),
    ]
    notes: list[str | tuple[str, Sequence[str]]] = [  # a note, or a note with its list
        f"Same data, inputs (GloVe 6B 50-d; ELMo rows: the shipped small biLM, frozen), "
        f"seeds count, epochs and batch size; one thread each; CPU {', '.join(sorted(cpus))}. "
        f"p: the seed-aware test of Δ over dev's units at that epoch (* p < {ALPHA:g}).",
        "Data: " + "; ".join(data_notes) + ".",
        f"Target (docs/peer.md): from epoch 2, |Δ| ≤ max({GAP_POINTS:g} point, allennlp's seed "
        f"sd); at the final epoch p > {ALPHA:g}; the project's CPU seconds per training epoch ≤ "
        f"{TIME_RATIO:g} × allennlp's.",
        "Both sides are scored by the project's own scorer (the task's official-parity "
        f"metric) on the same dev units; allennlp's own number for the same predictions differs by "
        f"at most {native_gap * metric.scale:.{metric.decimals}f} points.",
        "Rows: `baseline` (no ELMo); `elmo carry` (the project's biLM carries its LSTM state "
        "across batches, as allennlp's ELMo does: the like-for-like row); `elmo reset` (the "
        "project's default, each sentence from a zero state) against the same allennlp row. "
        "CPU seconds: the training pass alone (no evaluation), median over seeds; the project's "
        "reset rows read cached biLM features, its carry rows run the biLM live (as allennlp)."
        + (
            " `ROW + KEY=VALUE`: the project's row with that change (`--variant`), a "
            "candidate cause of a gap, against the same allennlp row."
            if any(" + " in p[1] for p in panels)
            else ""
        )
        + (" " + variant_note if variant_note else "")
        + (
            " `ROW + precision=bf16`: the project's row trained under bf16 autocast (fp32 "
            "weights and optimizer state; `--precision bf16`); allennlp's rows are fp32."
            if any(fp32_row(s.row) is not None for f in found for s in f.series)
            else ""
        ),
        "Summary: " + " | ".join(summary) + ".",
        (f"allennlp's configuration follows {adapter.source}, changed:", adapter.changes),
        f"Made by `nox -s peer -- --task {task_name} --data DATA --seeds … --epochs …` "
        f"(docs/peer.md); re-rendered from the committed records by `nox -s peer -- --task "
        f"{task_name} --render-only`. Every figure, with each test's 95 % interval and seed "
        f"counts, is in `{task_name}.csv` beside this file.",
    ]
    numbered = [Note(n) if isinstance(n, str) else Note(n[0], tuple(n[1])) for n in notes]
    text = ["", "Notes:", "", *numbered_notes(numbered), ""]
    precision = [ln for f in found for ln in _precision_lines(f, metric, task.metric_from_totals)]
    if precision:  # bf16 rows: each beside the same row in fp32
        body += [
            "",
            f"bf16 against fp32 (the project's rows; Δ = bf16 − fp32, the same seed-aware test; "
            f"within noise: p ≥ {ALPHA:g}, from epoch 2):",
            "",
            PRECISION_HEADER.format(label=metric.label),
            *precision,
        ]
    path = out / f"{task_name}.md"
    path.write_text("\n".join(head + body + text), encoding="utf-8")
    (out / f"{task_name}.csv").write_text(_csv(figures, metric), encoding="utf-8")
    if plot and panels:
        _plot(task_name, metric, panels, out / f"{task_name}.png")
    return path


#: The CSV's columns: one line per data set, row and epoch, in the metric's display units.
CSV_FIELDS = (
    "data",
    "row",
    "epoch",
    "allennlp_mean",
    "allennlp_sd",
    "allennlp_seeds",
    "project_mean",
    "project_sd",
    "project_seeds",
    "difference",
    "p",
    "ci_low",
    "ci_high",
    "test_seeds_project",
    "test_seeds_allennlp",
    "units",
    "target",
    "allennlp_cpu_s",
    "project_cpu_s",
    "cpu_ratio",
)


def _csv(figures: Sequence[tuple[str, str, EpochRow]], metric: Any) -> str:
    """Every figure of the table, one line per data set, row and epoch (:data:`CSV_FIELDS`;
    display units with two more decimals than the table; empty where there is none)."""
    places = metric.decimals + 2

    def num(value: float | None) -> str:
        return "" if value is None else f"{value * metric.scale:.{places}f}"

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for data, row, r in figures:
        t = r.comparison
        writer.writerow(
            [
                data,
                row,
                r.epoch,
                num(statistics.fmean(r.peer)),
                num(_sd(r.peer)),
                len(r.peer),
                num(statistics.fmean(r.project)),
                num(_sd(r.project)),
                len(r.project),
                num(r.difference),
                "" if t is None else f"{t.p_value:.6g}",
                "" if t is None else num(t.low),
                "" if t is None else num(t.high),
                "" if t is None else t.seeds_a,
                "" if t is None else t.seeds_b,
                "" if t is None else t.units,
                "" if r.within is None else str(r.within).lower(),
                f"{r.peer_cpu:.1f}",
                f"{r.project_cpu:.1f}",
                "" if r.cpu_ratio is None else f"{r.cpu_ratio:.3f}",
            ]
        )
    return out.getvalue()


def largest_gap(rows: Sequence[EpochRow]) -> EpochRow:
    """The epoch of the largest |Δ| where the gap target applies (epoch 2 on; epoch 1 when
    there is no other)."""
    later = [r for r in rows if r.epoch >= 2] or list(rows)
    return max(later, key=lambda r: abs(r.difference))


def _ratio(rows: Sequence[EpochRow]) -> float | None:
    """The median over epochs of the project's CPU seconds per training epoch over allennlp's."""
    ratios = [r.cpu_ratio for r in rows if r.cpu_ratio is not None]
    return statistics.median(ratios) if ratios else None


def _signed(value: float, metric: Any) -> str:
    return f"{value * metric.scale:+.{metric.decimals}f}"


def summary_line(rows: Sequence[EpochRow], metric: Any) -> str:
    """The final epoch's Δ and p, the largest gap from epoch 2 on, and the median time ratio."""
    final, worst, ratio = rows[-1], largest_gap(rows), _ratio(rows)
    return (
        f"final-epoch Δ {_signed(final.difference, metric)} (p {_p(final.comparison)}); "
        f"largest gap {_signed(worst.difference, metric)} (epoch {worst.epoch})"
        + (f"; CPU time ratio {ratio:.2f}" if ratio is not None else "")
    )


#: The summary across tasks, beside the tasks' tables (``out/summary.md``).
SUMMARY = "summary.md"
#: The rows every data set of a peer table should have (a missing one is named in the summary).
EXPECTED_ROWS = ("baseline", "elmo carry", "elmo reset")
#: The anchor of the entry in a task README's deviations table that explains each gap to its
#: peer (the measured curves, the variant rows tried and what they showed).
DEVIATIONS_ANCHOR = "reference-parity"


def deviations_link(task: str) -> str:
    """A Markdown link to ``task``'s deviations entry (the anchor in the README of the task's
    folder: the folder of the module that defines its ``setup``), relative to the summary's
    committed place, ``results/peer/`` (the same bytes wherever it is rendered)."""
    folder = Path(inspect.getfile(get_task(task).setup)).resolve().parent
    readme = f"../../{folder.parent.name}/{folder.name}/README.md"
    return f"[{task} deviations]({readme}#{DEVIATIONS_ANCHOR})"


def render_summary(out: Path) -> Path:
    """Write ``out/summary.md``: one line per task, data set and project row of every peer table
    under ``out`` (registry order) with the final-epoch Δ and p, the largest gap from epoch 2,
    the epochs within the gap target, the median CPU time ratio and which of the
    targets of docs/peer.md hold; rows not run yet are named.

    Raises:
        FileNotFoundError: no peer records at all under ``out/runs``.
    """
    from tasks.registry import TASKS, get_task

    lines: list[str] = []
    missing: list[str] = []
    variant_notes: list[str] = []
    requests: list[PeerRequest] = []
    for name in TASKS:
        task = get_task(name)
        found, variant_note = compare_task(name, out)
        if task.peer is None or not found:
            continue
        if variant_note:
            variant_notes.append(f"{name.upper()}: {variant_note}")
        metric = task.metric
        for f in found:
            requests.append(f.request)
            r = f.request
            where = f"{r.data_label} | {r.epochs}, {r.batch_size}"
            missing += [
                f"{name.upper()} {r.data_label} ({r.epochs} epochs) {row}"
                for row in EXPECTED_ROWS
                if row not in f.compared
            ]
            for row, rows in f.compared.items():
                link = deviations_link(name)
                lines.append(
                    _summary_row(name, task.peer.model, where, f.names[row], rows, metric, link)
                )
    if not lines:
        raise FileNotFoundError(f"no peer records under {out / 'runs'}")
    cpus, _ = _cpus(requests, out)
    head = [
        "# Each `paper` preset beside allennlp-models: the final epoch, the largest gap and the "
        "time, per task, data set and row",
        "| task: allennlp model | data | epochs, batch | row | final Δ (p) | largest gap, "
        "epoch ≥ 2 | epochs within | CPU ratio | targets: final p, CPU | "
        "off target: explained in |",
        "|---|---|---|---|---:|---:|---:|---:|:---:|---|",
    ]
    notes: list[str] = [
        "Δ = project − allennlp on dev, both sides scored by the project's own scorer; p: the "
        f"seed-aware test at the final epoch (* p < {ALPHA:g}). Largest gap: the largest |Δ| "
        f"from epoch 2 on; epochs within: those from epoch 2 with |Δ| ≤ max({GAP_POINTS:g} point, "
        "allennlp's seed sd). CPU ratio: the project's CPU seconds per training epoch over "
        f"allennlp's, median over epochs (target ≤ {TIME_RATIO:g}). Targets: final p > {ALPHA:g}, "
        f"CPU ratio ≤ {TIME_RATIO:g}. One thread each; CPU {', '.join(sorted(cpus))}. A line off "
        "any target links its task's deviations entry: the measured curves, the variant rows "
        "tried as candidate causes and what each showed (links relative to results/peer/).",
        "Rows: `baseline`; `elmo carry` (the like-for-like row: the biLM's state carried across "
        "batches, as allennlp's); `elmo reset` (the project's default); `ROW + KEY=VALUE` a "
        "project-side change (`--variant`) against the same allennlp row."
        + ("" if not variant_notes else " " + " ".join(variant_notes)),
        "Not run yet: " + ("; ".join(missing) if missing else "none") + ".",
        "Each task's table (every epoch, both sides' mean ± sd, the test's interval) is "
        "`<task>.md` beside this file, its figures in `<task>.csv`. Re-rendered from the "
        "committed records by `nox -s peer -- --summary` (docs/peer.md).",
    ]
    text = ["", "Notes:", "", *numbered_notes([Note(n) for n in notes]), ""]
    path = out / SUMMARY
    path.write_text("\n".join(head + lines + text), encoding="utf-8")
    return path


def _summary_row(
    task: str,
    model: str,
    where: str,
    row: str,
    rows: Sequence[EpochRow],
    metric: Any,
    deviations: str,
) -> str:
    final, worst, ratio = rows[-1], largest_gap(rows), _ratio(rows)
    targets = [r.within for r in rows if r.within is not None]

    def held(ok: bool | None) -> str:
        return "–" if ok is None else ("yes" if ok else "**no**")

    p_ok = None if final.comparison is None else final.comparison.p_value > ALPHA
    cpu_ok = None if ratio is None else ratio <= TIME_RATIO
    on_target = all(targets) and p_ok is not False and cpu_ok is not False
    return (
        f"| {task.upper()}: `{model}` | {where} | {row} | {_signed(final.difference, metric)} "
        f"({_p(final.comparison)}) | {_signed(worst.difference, metric)} (epoch {worst.epoch}) | "
        f"{sum(targets)} of {len(targets)} | "
        + (f"{ratio:.3f}×" if ratio is not None else "–")
        + f" | {held(p_ok)}, {held(cpu_ok)} | {'–' if on_target else deviations} |"
    )


def _plot(
    task: str, metric: Any, panels: list[tuple[str, str, Series, Series]], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(max(6.4, 4.6 * cols), 3.6 * rows), squeeze=False)
    colours = {"allennlp": "#1f77b4", "project": "#d62728"}
    for ax, (data, row, project, peer) in zip(axes.flat, panels, strict=False):
        for name, series in (("allennlp", peer), ("project", project)):
            epochs = sorted({p.epoch for p in _at_all(series)})
            values = [[p.metric * metric.scale for p in _at(series, e)] for e in epochs]
            mean = [statistics.fmean(v) for v in values]
            label = f"{name} ({len(series.runs)} seeds)"
            ax.plot(epochs, mean, marker="o", color=colours[name], label=label)
            low, high = [min(v) for v in values], [max(v) for v in values]
            ax.fill_between(epochs, low, high, color=colours[name], alpha=0.2)
        ax.set_title(f"{task.upper()} {row}: {data}, dev", fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel(f"dev {metric.label}")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(
        f"{task.upper()}: allennlp-models vs the project's paper preset "
        "(line: mean over seeds; band: min–max)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
