"""One self-contained HTML page from the results store (``python -m experiments report``).

The page holds every table the store can fill (the named reproductions of
:mod:`experiments.report.reproductions`: Table 1 over every registered task, Tables 2 and 3 over the
paper's tasks and every task with runs, and the CoVe table when CoVe runs are stored), each with its
caption and footnotes; the figures (dev learning curves per task, the learned layer weights of
every task as in the paper's Figure 2, and sample-efficiency curves as in Figure 1 where runs on a
share of the training set exist); the provenance of the runs (commits, versions, devices, counts,
times); and an index of every run with its W&B run when the record names one.

Everything is inline: CSS in a ``<style>`` element, figures as base64 PNG ``data:`` URIs, so the
file can be mailed or archived alone. Numbers computed from the bundled DEMO data carry a DEMO
badge. Which runs fill a table comes from the task registry and the stored specs: the report
looks for the configurations the store holds (preset, data, biLM, task changes) and builds the
named tables for each, so no task is named here.

Typical use::

    python -m experiments report --store runs/store --out runs/report.html

The command's options are in :mod:`experiments.cli.analyses`.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import html
import json
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bilm.files import write_text
from experiments.plan.specs import base_spec
from experiments.report import reproductions
from experiments.report.render import (
    MISSING,
    PROVENANCE_HEADING,
    Row,
    RunsColumn,
    TableSpec,
    compute_cells,
    load_paper,
    render,
    smoke_reasons,
)
from experiments.run.identity import current_records
from experiments.run.spec import NO_REPRESENTATION, RunSpec, baseline_of
from experiments.run.store import CorruptRecordError, ResultsStore, RunRecord

DEMO = "demo"
#: A run's W&B link: a stored attachment ``{"url": ...}`` or a log line's ``wandb_url``.
WANDB_ATTACHMENT = "wandb.json"
WANDB_LOG_KEY = "wandb_url"


@dataclass(frozen=True)
class Setup:
    """One configuration the store holds runs of: the arguments of :func:`reproductions.tables`.

    Attributes:
        preset: the tasks' preset (``mini``, ``paper``).
        data: ``"demo"`` or the data folder.
        rep_config: the ELMo representation's configuration (``{}`` when only baselines ran).
        overrides: the task configuration changes.
    """

    preset: str
    data: str
    rep_config: Mapping[str, Any] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()

    @property
    def is_demo(self) -> bool:
        """Whether the runs used the bundled DEMO data."""
        return self.data == DEMO

    def title(self) -> str:
        """A heading, e.g. ``"preset mini · data demo (DEMO) · biLM {} "``."""
        data = "demo (DEMO data)" if self.is_demo else self.data
        parts = [f"preset {self.preset}", f"data {data}"]
        if self.rep_config:
            parts.append("biLM " + json.dumps(dict(self.rep_config), sort_keys=True))
        if self.overrides:
            parts.append("changes " + " ".join(self.overrides))
        return " · ".join(parts)

    def holds(self, spec: RunSpec) -> bool:
        """Whether ``spec`` was run in this setup (a baseline for any biLM)."""
        if (spec.preset, spec.data, spec.overrides) != (self.preset, self.data, self.overrides):
            return False
        return spec.representation != "elmo" or dict(spec.representation_config) == dict(
            self.rep_config
        )


@dataclass(frozen=True)
class TableSection:
    """One table of the page.

    Attributes:
        title: the table's title.
        captions: the line of essentials under the title.
        header: column headers.
        body: rows of cell texts.
        notes: footnotes.
        provenance: the setup and what the runs rest on (shown after the notes).
        empty_rows: labels of rows without any run yet (left out of ``body``).
        ours: per column, whether it holds our numbers (DEMO badges go there).
        error: why the table could not be computed, when it could not.
    """

    title: str
    captions: tuple[str, ...] = ()
    header: tuple[str, ...] = ()
    body: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()
    provenance: tuple[str, ...] = ()
    empty_rows: tuple[str, ...] = ()
    ours: tuple[bool, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class ReportFigure:
    """One PNG of the page.

    Attributes:
        title: heading.
        caption: what it shows.
        png: the image bytes.
    """

    title: str
    caption: str
    png: bytes


# ------------------------------------------------------------------------------ the page
def write_report(
    store_root: str | Path,
    out_path: str | Path,
    *,
    seeds: Sequence[int] | None = None,
    preset: str | None = None,
    data: str | None = None,
    eval_split: str | None = None,
    now: dt.datetime | None = None,
) -> Path:
    """Write the HTML report of the store at ``store_root`` to ``out_path``.

    Args:
        store_root: the results store.
        out_path: the HTML file (its folder is created).
        seeds: seeds per cell; ``None``: every seed the store holds for the setup.
        preset: only runs of this preset; ``None``: every preset stored.
        data: only runs on this data (``"demo"`` or a folder); ``None``: all.
        eval_split: split of Table 1's numbers (``None``: each task's own split).
        now: the creation time shown (default: the current time, UTC).

    Returns:
        The HTML path.
    """
    text = build_report(
        store_root, seeds=seeds, preset=preset, data=data, eval_split=eval_split, now=now
    )
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_text(out, text)


def build_report(
    store_root: str | Path,
    *,
    seeds: Sequence[int] | None = None,
    preset: str | None = None,
    data: str | None = None,
    eval_split: str | None = None,
    now: dt.datetime | None = None,
) -> str:
    """The report's HTML text (arguments as in :func:`write_report`)."""
    from tasks.registry import TASKS

    store = ResultsStore(store_root)
    damaged: list[CorruptRecordError] = []  # skipped, each with a warning on stderr
    chosen = [
        r
        for r in store.records(needed=(), damaged=damaged)
        if (preset is None or r.spec.preset == preset) and (data is None or r.spec.data == data)
    ]
    # runs of tasks not registered here are listed, not checked (their identity needs the task)
    current = current_records(chosen, only={r.run_id for r in chosen if r.spec.task in TASKS})
    records = current.kept
    known = [r for r in records if r.spec.task in TASKS]
    paper = load_paper()
    attachments = _attachment_reader(store)
    created = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    body: list[str] = [
        "<h1>ELMo Bench report</h1>",
        f"<p class='meta'>Created {_e(created)} from the store <code>{_e(str(store.root))}"
        f"</code>: {len(records)} run{'s' if len(records) != 1 else ''}"
        f"{_filters(preset, data)}.</p>",
    ]
    if current.left_out:
        body.append(
            f"<p class='meta'>Left out: {len(current.left_out)} stored run"
            f"{'s' if len(current.left_out) != 1 else ''} whose recorded identity (data, "
            "representation, resolved configuration, result versions) no longer matches: "
            + _e(", ".join(sorted(current.left_out)))
            + ". Rerun their commands to train them again.</p>"
        )
    if damaged:
        body.append(
            f"<p class='warn'>Left out: {len(damaged)} damaged stored record"
            f"{'s' if len(damaged) != 1 else ''} ("
            + _e("; ".join(f"{e.run_id}: {e.path.name} {e.what}" for e in damaged))
            + "). Train them again by rerunning their commands with --rerun (or remove "
            "their folders and rerun the commands).</p>"
        )
    if any(r.spec.data == DEMO for r in records):
        body.append(
            "<p class='warn'><span class='demo'>DEMO</span> Numbers marked DEMO come from the "
            "bundled demo sets (generated text, not the tasks' datasets): they test the "
            "pipeline and say nothing about the paper's results.</p>"
        )
    smoke = [r for r in records if smoke_reasons(r.spec)]
    if smoke:
        reasons = dict.fromkeys(x for r in smoke for x in smoke_reasons(r.spec))
        body.append(
            f"<p class='warn'><span class='demo'>SMOKE</span> {len(smoke)} of the runs are "
            f"smoke runs ({_e('; '.join(reasons))}: --limit or --max-epochs): their numbers test "
            "the pipeline, not the representation; tables built on them say so in their title.</p>"
        )
    setups = find_setups(known)
    toc = []
    sections = []
    for index, setup in enumerate(setups):
        anchor = f"setup-{index}"
        toc.append(f"<li><a href='#{anchor}'>{_e(setup.title())}</a></li>")
        sections.append(_setup_html(anchor, setup, known, paper, attachments, seeds, eval_split))
    if not setups:
        sections.append("<p class='empty'>The store holds no runs of a registered task yet.</p>")
    toc += [
        "<li><a href='#provenance'>Provenance</a></li>",
        "<li><a href='#runs'>Runs</a></li>",
    ]
    body += ["<nav><h2>Contents</h2><ul>", *toc, "</ul></nav>", *sections]
    body.append(_provenance_html(records, sorted({r.spec.task for r in records} - set(TASKS))))
    body.append(_runs_html(records, store))
    return _page("ELMo Bench report", "\n".join(body))


# ------------------------------------------------------------------------------ setups
def find_setups(records: Iterable[RunRecord]) -> list[Setup]:
    """The configurations ``records`` were run in: one per preset, data, task changes and
    ELMo configuration (baselines alone: one setup with an empty configuration)."""
    configs: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for record in records:
        spec = record.spec
        key = (spec.preset, spec.data, spec.overrides)
        found = configs.setdefault(key, set())
        if spec.representation == "elmo":
            found.add(json.dumps(dict(spec.representation_config), sort_keys=True))
    setups = []
    for (preset, data, overrides), found in sorted(configs.items()):
        for text in sorted(found) or ["{}"]:
            setups.append(Setup(preset, data, json.loads(text), overrides))
    return setups


def setup_tables(
    setup: Setup,
    records: Sequence[RunRecord],
    seeds: Sequence[int] | None = None,
    eval_split: str | None = None,
) -> list[TableSpec | tuple[str, str]]:
    """The named tables of ``setup``: Table 1 (every registered task), Tables 2 and 3 (the
    paper's tasks and every task with runs in the setup) and, per CoVe configuration stored,
    the CoVe table. A table that cannot be built (e.g. a task without the preset) is
    ``(name, error)``.

    Args:
        setup: the configuration.
        records: stored runs (any superset of the setup's).
        seeds: seeds of every row; ``None``: each row its task's own count.
        eval_split: split of Table 1's and the CoVe table's numbers; ``None``: each task's own.
    """
    from tasks.registry import TASKS

    mine = [r for r in records if setup.holds(r.spec) and r.spec.task in TASKS]
    have = {r.spec.task for r in mine}
    coves = sorted(
        {
            json.dumps(dict(r.spec.representation_config), sort_keys=True)
            for r in mine
            if r.spec.representation == "cove"
        }
    )
    wanted: list[tuple[str, Mapping[str, Any] | None, set[str]]] = [
        ("table1", None, set()),
        ("table2", None, have),
        ("table3", None, have),
    ]
    for text in coves:
        config = json.loads(text)
        with_cove = {
            r.spec.task
            for r in mine
            if r.spec.representation == "cove" and dict(r.spec.representation_config) == config
        }
        wanted.append(("cove", config, with_cove))
    out: list[TableSpec | tuple[str, str]] = []
    for name, cove, extra in wanted:
        try:
            rows = set(reproductions.table_tasks(name)) | extra
            out += reproductions.tables(
                name,
                setup.preset,
                setup.data,
                tuple(seeds) if seeds else None,
                setup.rep_config,
                setup.overrides,
                eval_split,
                cove,
                tasks=[t for t in TASKS if t in rows],
            )
        except (KeyError, ValueError) as error:
            out.append((name, str(error)))
    return out


def table_section(
    table: TableSpec,
    records: Sequence[RunRecord],
    paper: Mapping[str, Any],
    attachments: Callable[[str, str], str | None] | None = None,
) -> TableSection:
    """The table's rows that have at least one run (rendered as in ``render``'s Markdown),
    and the labels of those that have none."""
    try:
        grid = compute_cells(table, records, paper)
    except ValueError as error:
        return TableSection(title=table.title, error=str(error))
    kept: list[Row] = []
    empty: list[Row] = []
    for row, cells in zip(table.rows, grid, strict=True):
        found = any(
            cell.n > 0
            for column, cell in zip(table.columns, cells, strict=True)
            if isinstance(column, RunsColumn)
        )
        (kept if found else empty).append(row)
    if not kept:
        return TableSection(title=table.title, empty_rows=tuple(r.label for r in empty))
    shown = dataclasses.replace(table, rows=tuple(kept))
    text = render(shown, records, paper, "markdown", attachments)
    title, captions, header, body, notes, provenance = parse_markdown_table(text)
    ours = tuple(i > 0 and not h.endswith("(paper)") for i, h in enumerate(header))
    return TableSection(
        title=title,
        captions=captions,
        header=header,
        body=body,
        notes=notes,
        provenance=provenance,
        empty_rows=tuple(r.label for r in empty),
        ours=ours,
    )


def parse_markdown_table(
    text: str,
) -> tuple[
    str,
    tuple[str, ...],
    tuple[str, ...],
    tuple[tuple[str, ...], ...],
    tuple[str, ...],
    tuple[str, ...],
]:
    """Split :func:`experiments.report.render.render`'s Markdown into title, the essentials line(s),
    header, body rows, footnotes (a note's list joined to its text) and the setup and
    provenance lines, with the wrapping undone."""
    lines = text.splitlines()
    title = lines[0].strip().removeprefix("**").removesuffix("**") if lines else ""
    captions: list[str] = []
    rows: list[tuple[str, ...]] = []
    notes: list[list[str]] = []
    provenance: list[str] = []
    part = "captions"
    for line in lines[1:]:
        stripped = line.strip()
        if part == "captions" and line.startswith("|"):
            part = "table"
        if part == "table":
            if not line.startswith("|"):
                part = "notes"
            elif not re.fullmatch(r"\|(:?-+:?\|)+", stripped):
                rows.append(_markdown_cells(line))
            continue
        if not stripped:
            continue
        if part == "captions":
            captions.append(stripped)
        elif stripped == PROVENANCE_HEADING:
            part = "provenance"
        elif part == "provenance":
            if stripped.startswith("- ") or not provenance:
                provenance.append(stripped.removeprefix("- "))
            else:
                provenance[-1] += " " + stripped
        elif re.match(r"\d+\. ", line):
            notes.append([line.split(". ", 1)[1].strip()])
        elif stripped.startswith("- ") and notes:
            notes[-1].append(stripped.removeprefix("- "))
        elif notes:
            notes[-1][-1] += " " + stripped
        else:
            notes.append([stripped])
    essentials = " ".join(captions).removeprefix("_").removesuffix("_")
    header = rows[0] if rows else ()
    return (
        title,
        (essentials,) if essentials else (),
        header,
        tuple(rows[1:]),
        tuple(" ".join([n[0], "; ".join(n[1:])]).strip() for n in notes),
        tuple(provenance),
    )


def _markdown_cells(line: str) -> tuple[str, ...]:
    inner = line.strip()[1:-1]
    return tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner))


# ------------------------------------------------------------------------------ figures
def figure2_weights(
    setup: Setup, records: Sequence[RunRecord]
) -> dict[str, dict[str, list[float]]]:
    """Per task (its table label) and site, the mean final layer weights of its ELMo runs in
    the task's own mix (paper Figure 2): runs with ELMo at both sites first, else at the task's
    default sites."""
    from experiments.report.plots import layer_weights
    from tasks.registry import TASKS

    result: dict[str, dict[str, list[float]]] = {}
    for name, task in TASKS.items():
        runs = [
            r
            for r in records
            if r.spec.task == name
            and r.spec.representation == "elmo"
            and setup.holds(r.spec)
            and r.spec.mix == task.default_mix
            and r.spec.train_fraction is None
        ]
        both = [r for r in runs if set(r.spec.sites) == {"input", "output"}]
        default = [r for r in runs if set(r.spec.sites) == set(task.sites_for(setup.preset))]
        sites: dict[str, list[float]] = {}
        for group in (both, default):
            try:
                stats = layer_weights(group)
            except ValueError:
                continue
            for site, weights in stats.items():
                sites.setdefault(site, list(weights.mean))
        if sites:
            result[_task_label(name)] = sites
    return result


def efficiency_records(setup: Setup, task: str, records: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs of Figure 1 for ``task``: its Table 1 ELMo configuration and baseline, at any
    seed, training share and evaluation splits."""
    from tasks.registry import get_task

    try:
        base = base_spec(
            get_task(task), setup.preset, setup.data, setup.rep_config, setup.overrides
        )
    except (KeyError, ValueError):
        return []
    wanted = {_normal(base), _normal(baseline_of(base))}
    return [r for r in records if r.spec.task == task and _normal(r.spec) in wanted]


def _normal(spec: RunSpec) -> str:
    return dataclasses.replace(spec, seed=0, train_fraction=None, eval_splits=("dev",)).run_id


def setup_figures(
    setup: Setup, tables: Sequence[TableSpec], records: Sequence[RunRecord]
) -> list[ReportFigure]:
    """Learning curves per task, Figure 2 and Figure 1 per task, as PNGs (none without
    matplotlib)."""
    try:
        from experiments.report import plots
    except ImportError:  # pragma: no cover - plots imports matplotlib lazily
        return []
    from tasks.registry import TASKS

    demo = " [DEMO data]" if setup.is_demo else ""
    wanted = {s.run_id for t in tables for s in reproductions.expected_specs(t)}
    runs = [r for r in records if r.run_id in wanted]
    figures: list[ReportFigure] = []
    with tempfile.TemporaryDirectory(prefix="elmo-bench-report-") as folder:
        tmp = Path(folder)

        def add(title: str, caption: str, draw: Callable[[Path], Path]) -> None:
            try:
                path = draw(tmp / f"figure-{len(figures)}.png")
            except (ValueError, ImportError):
                return
            figures.append(ReportFigure(title, caption, path.read_bytes()))

        for task in [t for t in TASKS if any(r.spec.task == t for r in runs)]:
            metric = TASKS[task].metric
            mine = [r for r in runs if r.spec.task == task]
            label = metric.label or metric.key
            add(
                f"{_task_label(task)}: dev {label} per epoch{demo}",
                f"Dev {label} after each epoch, one line per run of the tables above "
                f"({len(mine)} runs).",
                functools.partial(
                    plots.plot_learning_curves,
                    mine,
                    metric=f"dev_{metric.key}",
                    scale=metric.scale,
                    title=_task_label(task),
                ),
            )
        weights = figure2_weights(setup, records)
        add(
            f"Figure 2: learned layer weights{demo}",
            "softmax-normalised weights s_j of each biLM layer (0 = token layer), mean over "
            "seeds, per task and ELMo site (runs with ELMo at both sites where stored, else "
            "at the task's default sites). Hatched: below 1/3; dotted: above 2/3.",
            functools.partial(
                plots.plot_layer_weights_figure, weights, title=f"Layer weights{demo}"
            ),
        )
        for task in TASKS:
            chosen = efficiency_records(setup, task, records)
            if not any(r.spec.train_fraction is not None for r in chosen):
                continue
            metric = TASKS[task].metric
            label = f"dev {metric.label or metric.key}"
            curves = plots.sample_efficiency_curves(
                chosen, task, f"dev_{metric.key}", scale=metric.scale
            )
            add(
                f"Figure 1: {_task_label(task)} sample efficiency{demo}",
                f"{label} against the share of the training set used (log scale), mean ± "
                "standard deviation over seeds, baseline and ELMo in the task's Table 1 "
                "configuration.",
                functools.partial(
                    plots.plot_sample_efficiency,
                    curves,
                    title=f"{_task_label(task)}{demo}",
                    metric_label=label,
                ),
            )
    return figures


# ------------------------------------------------------------------------------ HTML parts
def _setup_html(
    anchor: str,
    setup: Setup,
    records: Sequence[RunRecord],
    paper: Mapping[str, Any],
    attachments: Callable[[str, str], str | None],
    seeds: Sequence[int] | None,
    eval_split: str | None,
) -> str:
    badge = " <span class='demo'>DEMO</span>" if setup.is_demo else ""
    parts = [f"<section id='{anchor}'><h2>{_e(setup.title())}{badge}</h2>"]
    built = setup_tables(setup, records, seeds, eval_split)
    tables = [t for t in built if isinstance(t, TableSpec)]
    empty: list[str] = []
    for table in built:
        if isinstance(table, tuple):
            empty.append(f"{_e(table[0])}: could not be built ({_e(table[1])})")
            continue
        section = table_section(table, records, paper, attachments)
        if section.error is not None:
            parts.append(f"<h3>{_e(section.title)}</h3><p class='error'>{_e(section.error)}</p>")
        elif not section.body:
            empty.append(f"{_e(section.title)}: no runs yet")
        else:
            parts.append(_table_html(section, setup.is_demo))
    if empty:
        items = "".join(f"<li>{text}</li>" for text in empty)
        parts.append(f"<h3>Tables without runs</h3><ul class='empty'>{items}</ul>")
    for figure in setup_figures(setup, tables, records):
        data = base64.b64encode(figure.png).decode("ascii")
        parts.append(
            f"<figure><h3>{_e(figure.title)}</h3>"
            f"<img alt='{_e(figure.title)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{_e(figure.caption)}</figcaption></figure>"
        )
    parts.append("</section>")
    return "\n".join(parts)


def _table_html(section: TableSection, demo: bool) -> str:
    out = [f"<h3>{_e(section.title)}</h3>"]
    out += [f"<p class='caption'>{_e(line)}</p>" for line in section.captions]
    out.append("<table><thead><tr>")
    out += [f"<th>{_e(h)}</th>" for h in section.header]
    out.append("</tr></thead><tbody>")
    for row in section.body:
        cells = []
        for i, text in enumerate(row):
            ours = i < len(section.ours) and section.ours[i]
            mark = ours and demo and text and not text.startswith(MISSING)
            badge = " <span class='demo'>DEMO</span>" if mark else ""
            kind = "label" if i == 0 else "ours" if ours else "paper"
            shown = _e(text) if text else "<span title='no number for this cell'>n/a</span>"
            cells.append(f"<td class='{kind}'>{shown}{badge}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if section.empty_rows:
        out.append(
            "<p class='note'>No runs yet: "
            + _e(", ".join(dict.fromkeys(section.empty_rows)))
            + ".</p>"
        )
    out += [f"<p class='note'>{_e(note)}</p>" for note in section.notes]
    out += [f"<p class='caption'>{_e(line)}</p>" for line in section.provenance]
    return "\n".join(out)


def _provenance_html(records: Sequence[RunRecord], unregistered: Sequence[str]) -> str:
    rows: list[tuple[str, str]] = []
    commits = Counter(
        (r.provenance.git_sha or "unknown") + (" (dirty)" if r.provenance.git_dirty else "")
        for r in records
    )
    rows.append(("Git commits", _counted(commits)))
    rows.append(("Python", _counted(Counter(r.provenance.python for r in records))))
    packages: dict[str, Counter[str]] = {}
    for record in records:
        found = dict(record.provenance.packages)
        for name in ("torch", "numpy"):
            version = getattr(record.provenance, name)
            if version is not None:
                found.setdefault(name, version)
        for name, version in found.items():
            packages.setdefault(name, Counter())[version] += 1
    for name in sorted(packages):
        rows.append((name, _counted(packages[name])))
    rows.append(("Devices", _counted(Counter(r.provenance.device for r in records))))
    rows.append(("Hosts", _counted(Counter(r.provenance.hostname for r in records))))
    for label, attribute in (
        ("Representation fingerprints", "representation_fingerprint"),
        ("Data fingerprints", "data_fingerprint"),
    ):
        prints = Counter(getattr(r.provenance, attribute) or "not recorded" for r in records)
        rows.append((label, _counted(prints)))
    rows.append(("Runs per task", _counted(Counter(r.spec.task for r in records))))
    rows.append(("Runs per data", _counted(Counter(r.spec.data for r in records))))
    rows.append(("Runs per preset", _counted(Counter(r.spec.preset for r in records))))
    rows.append(
        ("Runs per representation", _counted(Counter(r.spec.representation for r in records)))
    )
    starts = [r.timings["started_unix"] for r in records if "started_unix" in r.timings]
    if starts:
        first, last = (_when(min(starts)), _when(max(starts)))
        rows.append(("Runs started", f"{first} to {last}"))
    wall = sum(r.timings.get("wall_s", 0.0) for r in records)
    rows.append(("Training time (sum)", f"{wall / 3600:.2f} h"))
    if unregistered:
        rows.append(("Tasks not registered (left out)", ", ".join(unregistered)))
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v or '—')}</td></tr>" for k, v in rows)
    return (
        "<section id='provenance'><h2>Provenance</h2>"
        f"<table class='kv'><tbody>{body}</tbody></table></section>"
    )


def _runs_html(records: Sequence[RunRecord], store: ResultsStore) -> str:
    if not records:
        return "<section id='runs'><h2>Runs</h2><p class='empty'>No runs yet.</p></section>"
    header = [
        "run_id",
        "task",
        "system",
        "seed",
        "training data",
        "data",
        "metrics",
        "device",
        "W&B",
    ]
    rows = []
    for record in records:
        spec = record.spec
        link = wandb_link(record, store)
        wandb = f"<a href='{_e(link)}'>W&amp;B run</a>" if link else "—"
        metrics = ", ".join(
            f"{k}={v:.4g}"
            for k, v in sorted(record.metrics.items())
            if k.split("_", 1)[0] in spec.eval_splits
        )
        demo = " <span class='demo'>DEMO</span>" if spec.data == DEMO else ""
        share = _e(training_data(spec))
        if smoke_reasons(spec):
            share += " <span class='demo'>SMOKE</span>"
        cells = [
            f"<code>{_e(record.run_id)}</code>",
            _e(spec.task),
            _e(_system(spec)),
            str(spec.seed),
            share,
            _e(spec.data),
            _e(metrics or "—") + demo,
            _e(record.provenance.device),
            wandb,
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in header)
    return (
        f"<section id='runs'><h2>Runs</h2><details><summary>All {len(records)} stored runs"
        f"</summary><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></details></section>"
    )


def training_data(spec: RunSpec) -> str:
    """What a run trained on and for how long, e.g. ``"100%"``, ``"10% of the training set"``
    or ``"first 50 examples of each split; 1 of the preset's 10 epochs"`` (never "100%" for a
    ``--limit`` run: :func:`experiments.report.render.smoke_reasons`)."""
    parts = smoke_reasons(spec)
    if spec.train_fraction is not None:
        parts.append(f"{100 * spec.train_fraction:g}% of the training set")
    elif spec.limit is None:
        parts.insert(0, "100%")
    return "; ".join(parts)


def wandb_link(record: RunRecord, store: ResultsStore) -> str | None:
    """The W&B run of a record: its ``wandb.json`` attachment's ``url``, else the last log
    line's ``wandb_url``; ``None`` when it names none."""
    folder = store.path_of(record.run_id)
    path = folder / WANDB_ATTACHMENT if folder is not None else None
    if path is not None and path.is_file():
        try:
            url = json.loads(path.read_text(encoding="utf-8")).get("url")
        except (ValueError, AttributeError):
            url = None
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            return url
    for line in reversed(record.log):
        url = line.get(WANDB_LOG_KEY)
        if isinstance(url, str) and url.startswith(("https://", "http://")):
            return url
    return None


def _system(spec: RunSpec) -> str:
    if spec.representation == NO_REPRESENTATION:
        return "baseline"
    return f"{spec.representation} {spec.mix.label} {'+'.join(spec.sites)}"


def _task_label(name: str) -> str:
    from tasks.registry import TASKS

    task = TASKS.get(name)
    return task.table_rows[0].label if task is not None and task.table_rows else name


def _attachment_reader(store: ResultsStore) -> Callable[[str, str], str | None]:
    def read(run_id: str, name: str) -> str | None:
        folder = store.path_of(run_id)
        path = folder / name if folder is not None else None
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None

    return read


def _counted(counter: Counter[str]) -> str:
    return ", ".join(f"{key} ({n})" for key, n in sorted(counter.items()))


def _when(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _filters(preset: str | None, data: str | None) -> str:
    parts = [f"preset {preset}" if preset else "", f"data {data}" if data else ""]
    shown = " and ".join(p for p in parts if p)
    return f" (only {_e(shown)})" if shown else ""


def _e(text: str) -> str:
    return html.escape(text, quote=True)


CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.ours, td.paper { text-align: right; } td.paper { color: #666; }
table.kv th { width: 14em; }
.caption { font-style: italic; margin: .1em 0; color: #444; }
.note { font-size: 12px; color: #555; margin: .3em 0; }
.empty { color: #777; } .error { color: #b00; }
.warn { background: #fff4d6; border: 1px solid #e8c660; padding: .5em .8em; }
.demo { background: #d9480f; color: #fff; font-size: 10px; font-weight: bold;
        padding: 0 4px; border-radius: 3px; vertical-align: middle; }
.meta { color: #555; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; max-width: 60em; }
code { font-size: 12px; }
"""


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
