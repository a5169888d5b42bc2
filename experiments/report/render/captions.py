"""Captions and notes: what a table's runs rest on (commits, devices, biLMs, result versions,
epochs, sample efficiency, what the readers skipped) and the footnotes that say how to read its
cells (tests, marks, paper cells left empty, expected directions, dead and failed runs)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.report.render.cells import (
    DEAD,
    DELTA_ROW,
    FAILED,
    MISSING,
    NOT_CONVERGED,
    SIGNIFICANT,
    STALE,
    Attachments,
    Cell,
    dead_runs,
    failed_runs_of,
    full_test_text,
    p_text,
)
from experiments.report.render.specs import (
    SPLITS,
    Column,
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    bilm_description,
    config_label,
    paper_comparable,
    span,
)
from experiments.report.significance import ALPHA, Comparison
from experiments.run.spec import NO_REPRESENTATION
from experiments.run.store import RunRecord

#: The most characters of a failed run's error a footnote shows.
FAILED_ERROR_CHARS = 160


SIGNIFICANCE_DOC = "docs/significance.md"


HEALTH_DOC = "docs/runs.md#dead-runs"


READ_STATS = "read-stats.json"  # the runner's attachment: split → examples, skips by reason


#: Where the paper's numbers come from (the last sentence of :func:`reading_note`).
PAPER_SOURCE = "Paper: Peters et al. (2018), NAACL / arXiv:1802.05365v2."


def reading_note(table: TableSpec, grid: Sequence[Sequence[Cell]]) -> str:
    """The first footnote: how to read a run cell, its ``n`` counted against the seeds the
    table requests (:meth:`TableSpec.expected`), e.g. ``"Ours: mean ± sample standard
    deviation (n − 1) over seeds, n = runs found of the seeds requested (all found). Paper: …"``.

    Only a table with a cell still missing runs says how that reads, with the numbers of its
    first such cell (``"n=1 of 3: 2 still missing"``), and only one with a cell that has none
    yet explains the dash.
    """
    cells = [
        cell
        for cells in grid
        for column, cell in zip(table.columns, cells, strict=True)
        if isinstance(column, RunsColumn)
    ]
    short = next((c for c in cells if c.missing and c.mean is not None), None)
    empty = any(c.missing and c.mean is None for c in cells)
    parts = [] if short or empty else ["all found"]
    if short is not None:
        parts.append(f"n={short.n} of {short.n_expected}: {len(short.missing)} still missing")
    if empty:
        parts.append(f"{MISSING} = not run yet")
    if short or empty:
        parts.append("a note lists the runs expected")
    return (
        "Ours: mean ± sample standard deviation (n − 1) over seeds, n = runs found of the seeds "
        f"requested ({'; '.join(parts)}). {PAPER_SOURCE}"
    )


#: One sentence per test scheme of :mod:`experiments.report.significance` (``Comparison.scheme``).
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


def essentials(table: TableSpec, grid: Sequence[Sequence[Cell]], width: int) -> str:
    """The line under a table's title: its rows' biLM, preset (unless the title names it) and
    seeds, and how its cells are tested, e.g. ``"biLM: the shipped small biLM, not the
    published ELMo; seeds 0–2 (SQuAD, SRL), 0–4 (SNLI, NER); Δ: seed-aware tests, Holm over 6,
    ✱ p < 0.05."``; when that is longer than ``width``, the seeds without the rows that use
    them (the setup in full is below the notes)."""
    bilms = dict.fromkeys(
        bilm_description(row.base.representation_config)
        for row in table.rows
        if row.base.representation == "elmo"
    )
    head = [f"biLM: {' / '.join(bilms)}"] if bilms else []
    preset = f"preset {'/'.join(sorted({row.base.preset for row in table.rows}))}"
    head += [] if preset in table.title else [preset]
    groups: dict[tuple[int, ...], list[str]] = {}
    for row in table.rows:
        names = groups.setdefault(row.seeds if row.seeds is not None else table.seeds, [])
        name = row.label.split(" (")[0]
        if name not in names:
            names.append(name)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))
    seeds = [f"seeds {', '.join(_seed_list(s) for s, _ in ordered)}"]
    if len(groups) > 1:
        listed = ", ".join(f"{_seed_list(s)} ({', '.join(names)})" for s, names in ordered)
        seeds.insert(0, f"seeds {listed}")
    tests = [cell.test for cells in grid for cell in cells if cell.test is not None]
    tail = []
    if tests:
        schemes = "/".join(sorted({t.scheme for t in tests}))
        tail.append(f"Δ: {schemes} tests, Holm over {len(tests)}, {SIGNIFICANT} p < {ALPHA:g}")
    lines = ["; ".join([*head, seed_text, *tail]) + "." for seed_text in seeds]
    return next((line for line in lines if len(line) <= width), lines[-1])


def _seed_list(seeds: Sequence[int]) -> str:
    """``"0–4"`` for three or more consecutive seeds, else ``"0, 1"``."""
    ordered = sorted(seeds)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}–{ordered[-1]}"
    return ", ".join(map(str, ordered))


def found_runs(table: TableSpec, records: Sequence[RunRecord]) -> list[RunRecord]:
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


def epochs_line(table: TableSpec, records: Sequence[RunRecord]) -> str:
    """Caption line: epochs run and selected epochs of the table's runs found in ``records``."""
    found = [r.metrics for r in found_runs(table, records)]
    ran = sorted({int(m["epochs_run"]) for m in found if "epochs_run" in m})
    best = sorted({int(m["best_epoch"]) for m in found if "best_epoch" in m})
    if not found:
        return "Epochs: no run found yet."
    return f"Epochs: {span(ran)} run per training run; selected (best dev) epoch {span(best)}."


#: The cost figures a record keeps (``experiments.run.runner.run_costs``), in the order shown.
COSTS = ("representation_trainable_params", "train_cpu_s_per_epoch", "peak_rss_mb")


def runs_by_cell(
    table: TableSpec, records: Sequence[Any]
) -> list[tuple[Row, list[tuple[RunsColumn, list[Any]]]]]:
    """Per row, each run column with the runs of ``records`` that fill its cell (in seed
    order; none yet: an empty list)."""
    by_id = {r.run_id: r for r in records}
    return [
        (
            row,
            [
                (
                    column,
                    [by_id[s.run_id] for s in table.expected(row, column) if s.run_id in by_id],
                )
                for column in table.columns
                if isinstance(column, RunsColumn)
            ],
        )
        for row in table.rows
    ]


def cost_lines(table: TableSpec, records: Sequence[RunRecord]) -> list[str]:
    """Caption lines on what the runs cost, one per set of runs: per column the median over its
    runs found of the representation's parameters trained with the task model, the training CPU
    seconds per epoch and the peak memory, e.g. ``"Costs, SQuAD (medians): Baseline: 0
    representation parameters trained, 19 CPU s/epoch, 1.2 GB peak memory; ELMo: …"``.

    Rows that read the same runs (one task's metrics, e.g. SQuAD's F1 and EM rows) share one
    line, named by the first of them; records made before costs were kept add nothing.
    """
    lines: dict[tuple[tuple[str, tuple[str, ...]], ...], tuple[str, str]] = {}
    for row, cells in runs_by_cell(table, records):
        parts, runs = [], []
        for column, found in cells:
            kept = [r for r in found if all(k in r.timings for k in COSTS)]
            if not kept:
                continue
            trained, cpu, peak = (float(np.median([r.timings[k] for r in kept])) for k in COSTS)
            parts.append(
                f"{column.label}: {_count(trained)} representation parameters trained, "
                f"{cpu:.0f} CPU s/epoch, {peak / 1024:.1f} GB peak memory"
            )
            runs.append((column.label, tuple(r.run_id for r in kept)))
        if parts:  # the first row of those with the same runs names the line
            lines.setdefault(tuple(runs), (row.label, "; ".join(parts)))
    names = Counter(label.split(" (")[0] for label, _ in lines.values())
    out = []
    for label, text in lines.values():
        name = label.split(" (")[0]
        out.append(f"Costs, {name if names[name] == 1 else label} (medians): {text}.")
    return out


def _count(n: float) -> str:
    """A parameter count: ``0``, ``39.9 k``, ``22.7 M``."""
    if n >= 1e6:
        return f"{n / 1e6:.1f} M"
    return f"{n / 1e3:.1f} k" if n >= 1e3 else f"{n:.0f}"


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


def bilm_keys(record: RunRecord) -> tuple[str | None, str | None]:
    """The weights' fingerprint and the identity's representation fingerprint (full).

    A representation that trains with its task model (``adapt=finetune`` or ``lora``) ends
    each run with weights of its own, fingerprinted after training; its key is the identity's
    fingerprint alone, which names the weights and options it started from.
    """
    fingerprint = record.provenance.representation_fingerprint
    representation = _identity(record).get("representation")
    if record.spec.representation_config.get("adapt", "frozen") != "frozen":
        fingerprint = None
    return fingerprint or None, representation if isinstance(representation, str) else None


def bilm_names(keys: Collection[tuple[str | None, str | None]]) -> dict[Any, str]:
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


def provenance_lines(found: Sequence[RunRecord]) -> list[str]:
    """Caption lines: the commits, devices, biLMs and result versions the runs found rest on,
    and a ``⚠`` line for each way they differ where they should not (data, biLM fingerprint of
    one configuration, preset, resolved configuration or result version)."""
    if not found:
        return []
    commits = Counter(_commit(r) for r in found)
    devices = Counter(_device(r) for r in found)
    bilms: dict[tuple[str, str, str], Counter[tuple[str | None, str | None]]] = {}
    for record in found:  # by the full configuration (two checkpoints may share a file name)
        if record.spec.representation != NO_REPRESENTATION:
            spec = record.spec
            config = json.dumps(spec.representation_config, sort_keys=True)
            # the state policy is part of the fingerprint, and a fine-tuned biLM is its task's
            # and data set's own (tuned on that text): none of them is a mismatch
            label = config_label(spec) + ("" if spec.state == "reset" else f", state {spec.state}")
            tuned_on = spec.data if spec.representation_config.get("finetune") else ""
            label += f" for {spec.task}" if tuned_on else ""
            key = (label, f"{spec.representation} {config}", tuned_on)
            bilms.setdefault(key, Counter())[bilm_keys(record)] += 1
    plural = {True: "s", False: ""}
    parts = [
        f"commit{plural[len(commits) > 1]} {_counted(commits)}",
        f"device{plural[len(devices) > 1]} {_counted(devices)}",
    ]
    entries: Counter[str] = Counter()
    for (label, _, _), keys in bilms.items():
        names = bilm_names(keys)
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
    for (label, _, _), keys in sorted(bilms.items()):
        if len(keys) > 1:
            names = bilm_names(keys)
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


def sample_efficiency_lines(table: TableSpec, records: Sequence[RunRecord]) -> list[str]:
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


def skip_lines(
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


def withheld_rows(table: TableSpec, paper: Mapping[str, Any]) -> list[tuple[Row, str]]:
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


def _cell_name(row: Row, column: Column) -> str:
    return f"{row.label} {column.label}"


@dataclass(frozen=True)
class Note:
    """One numbered footnote under a table.

    Attributes:
        text: the note.
        items: its list, when it has one (the table's tests, one per cell).
    """

    text: str
    items: tuple[str, ...] = ()


def table_notes(
    table: TableSpec,
    grid: Sequence[Sequence[Cell]],
    withheld: Sequence[tuple[Row, str]],
) -> list[Note]:
    """The table's footnotes: how to read it, its tests (scheme, samples, Holm family, then
    each test in full: Δ, p, Holm p, CI, seeds and units; conditional tests, cells without a
    test), unconverged and stale cells, paper cells left empty and why, the Δ rows, the runs
    still missing."""
    notes = [Note(reading_note(table, grid))]
    placed = [
        (row, column, cell)
        for row, cells in zip(table.rows, grid, strict=True)
        for column, cell in zip(table.columns, cells, strict=True)
    ]
    tests = [cell.test for _, _, cell in placed if cell.test is not None]
    if tests:
        notes.append(Note(_tests_note(tests), tuple(_test_items(table, placed))))
        conditional = [
            _cell_name(r, c)
            for r, c, cell in placed
            if cell.test and min(cell.test.seeds_a, cell.test.seeds_b) < 2
        ]
        if conditional:
            notes.append(
                Note(
                    f"Conditional tests ({'; '.join(conditional)}): one side has a single seed, "
                    "so the test is conditional on that seed (training-seed variance not "
                    "included)."
                )
            )
    for row, column, cell in placed:
        if cell.no_test is not None:
            pair = table.pair_of(column)
            against = f" ({pair[0]} vs {pair[1]})" if pair else ""
            notes.append(Note(f"No test for {_cell_name(row, column)}{against}: {cell.no_test}."))
    if any(cell.not_converged for _, _, cell in placed):
        notes.append(
            Note(
                f"{NOT_CONVERGED} not converged: on most seeds the selected (best dev) epoch was "
                "the last one run; a longer budget may change the number."
            )
        )
    stale = list(
        dict.fromkeys(r for _, c, cell in placed if isinstance(c, RunsColumn) for r in cell.stale)
    )
    if stale:
        notes.append(
            Note(
                f"{STALE} rests on runs reused although their recorded identity (data, biLM, "
                "configuration or result version) no longer matches (--reuse-stale): "
                f"{', '.join(stale)}."
            )
        )
    groups: dict[str, list[str]] = {}
    for row, why in withheld:
        groups.setdefault(why, []).append(row.label)
    if len(groups) == 1 and len(withheld) == len(table.rows):
        notes.append(Note(f"Paper column left empty: {next(iter(groups))}."))
    else:
        for why, labels in groups.items():
            notes.append(Note(f"Paper cells left empty for {'; '.join(labels)}: {why}."))
    increases = [c for c in table.columns if isinstance(c, IncreaseColumn)]
    if any(cell.relative is not None for _, c, cell in placed if c in increases):
        notes.append(Note(_increase_note(increases)))
    notes += [Note(text) for text in _expectation_notes(placed)]
    if any(cell.test for _, c, cell in placed if isinstance(c, RunsColumn)):
        pairs = sorted(
            {f"{c.label} vs {c.versus}" for c in table.columns if isinstance(c, RunsColumn)}
            - {f"{c.label} vs None" for c in table.columns}
        )
        notes.append(
            Note(
                f"{DELTA_ROW} …: the row under a row whose columns carry a test, with each "
                f"column's difference to its reference column's mean ({'; '.join(pairs)}) and "
                f"its Holm-adjusted p; it is the difference the test is about."
            )
        )
    missing: dict[str, list[str]] = {}
    for row, column, cell in placed:
        if isinstance(column, RunsColumn) and cell.missing:
            missing.setdefault(row.label, []).append(f"{column.label} {', '.join(cell.missing)}")
    if missing:
        items = tuple(f"{label}: {'; '.join(parts)}" for label, parts in missing.items())
        notes.append(Note(f"{MISSING}: not run yet; the runs each cell still expects:", items))
    return notes


def _test_items(table: TableSpec, placed: Sequence[tuple[Row, Column, Cell]]) -> Iterable[str]:
    """Each test of the table in full, ``"SQuAD (F1; dev), ELMo vs Baseline: Δ 8.2 (p=0.105,
    Holm=0.418; 95 % CI [-3.3, 19.7]; 3 vs 3 seeds, 250 units)"``, in table order."""
    for row, column, cell in placed:
        pair = table.pair_of(column)
        if cell.test is not None and pair is not None:
            increase = isinstance(column, IncreaseColumn)
            detail = full_test_text(cell, row.metric, increase)
            yield f"{row.label}, {pair[0]} vs {pair[1]}: {detail}"


def failed_notes(table: TableSpec, failed: Mapping[str, str]) -> list[Note]:
    """One footnote per row with runs that failed in this command: their ids and the first
    one's error (at most :data:`FAILED_ERROR_CHARS` characters)."""
    notes = []
    for row in table.rows:
        broken = failed_runs_of(table, row, failed)
        ids = list(dict.fromkeys(rid for ids in broken.values() for rid in ids))
        if ids:
            error = " ".join(failed[ids[0]].split())
            if len(error) > FAILED_ERROR_CHARS:
                error = error[: FAILED_ERROR_CHARS - 1] + "…"
            notes.append(
                Note(f"{row.label}: {FAILED}, {len(ids)} run(s) ({', '.join(ids)}): {error}")
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
    test does not show the expected direction: it says where ELMo does not beat the baseline, or
    where random weights come close to ELMo."""
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
        misses.setdefault(key, []).append(f"{row.label} (Δ {delta}, Holm p{p_text(p)})")
    return [
        (
            f"{label} does not beat {versus} significantly on: {'; '.join(rows)}."
            if expect == "above"
            else f"{label} comes close to {versus} (not significantly below it) on: "
            f"{'; '.join(rows)}."
        )
        for (label, expect, versus), rows in misses.items()
    ]


def dead_notes(
    grid: Sequence[Sequence[Cell]],
    records: Sequence[RunRecord],
    attachments: Attachments | None,
    excluded: bool,
) -> list[Note]:
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
    return [
        Note(f"{DEAD} rests on dead runs, which never learned ({HEALTH_DOC}), {means}: {listed}.")
    ]


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
        f"{SIGNIFICANT} adjusted p < {ALPHA:g}. The cells show Δ and the Holm-adjusted p; "
        "each test in full:"
    )
