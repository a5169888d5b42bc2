"""Named reproductions: which runs fill which table (``python -m experiments reproduce NAME``).

Built from the task registry, never from task names written here: every task contributes
``<task>_baseline``, ``<task>_elmo`` (its Table 1 row), ``<task>_ablations`` (its Table 2 and
Table 3 rows) and ``<task>_cove``. The whole tables take a row per task: ``table1`` every
registered task, ``table2`` / ``table3`` / ``cove`` the tasks the paper's table has (the sections
of ``paper.toml``); ``tasks=`` chooses others. A task's base spec is the paper's ELMo
configuration for it, read from its :class:`~tasks.core.TaskSpec` (default sites, mix and ELMo
dropout); each row has its task's seeds (:attr:`~tasks.core.TaskSpec.seeds`, the paper's count:
5 where it averages five runs, e.g. NER, SST-5 and SNLI) unless seeds are given, and its task's
split. No seed count is written here.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from experiments.data.real_sets import (
    REAL,
    REAL_SEEDS,
    SHARED_PREFIX,
    SHARED_ROOT_TEXT,
    SHIPPED_ELMO_FAMILIES,
    fetch_command_for,
    is_shared,
    real_sets,
)
from experiments.plan.requests import Data
from experiments.plan.specs import base_spec, data_of, mapped_tasks, preset_bilm
from experiments.report.render import (
    SPLITS,
    Row,
    RunsColumn,
    TableSpec,
    adapt_table,
    bilm_description,
    bilm_table,
    cove_table,
    directions_table,
    dynamic_table,
    load_paper,
    paper_data_table,
    real_table,
    table1,
    table2,
    table3,
)
from experiments.report.render.captions import runs_by_cell
from experiments.run.spec import RunSpec, baseline_fields, derive, describe_run
from tasks.core import MetricSpec
from tasks.registry import TASKS, get_task
from tasks.representations import representation_label

#: The biLM table's caption line on its fine-tuned column (the other columns are not).
BILM_FINETUNE_LINE = (
    "Fine-tuned biLM: the biLM first fine-tuned one epoch as a language model on each task's "
    "training text (its dev text held out for the perplexities), then frozen (paper §3.4, "
    "A.1); the other columns: the biLM as given."
)
#: The title note of a table on the bundled DEMO data.
DEMO_NOTE = " [DEMO DATA, not the task's dataset]"
COVE_MISSING = (
    "CoVe columns left out: pass --cove wmtlstm-8f474287.pth (https://s3.amazonaws.com/"
    "research.metamind.io/cove/wmtlstm-8f474287.pth) and --glove glove.840B.300d.txt (CoVe's "
    "input vectors)."
)


def reproductions() -> dict[str, str]:
    """Every named reproduction → what it runs: the named tables of :data:`TABLE_KINDS`, then
    each task's reproductions (its row of each kind with a :attr:`TableKind.task_suffix`)."""
    named = {k.name: k.description for k in TABLE_KINDS.values() if k.named}
    for name in TASKS:
        for kind in TABLE_KINDS.values():
            if kind.task_suffix is not None:
                named[f"{name}_{kind.task_suffix}"] = kind.task_description.format(task=name)
    return named


def named_tables() -> tuple[str, ...]:
    """The whole tables of ``reproduce NAME`` (:attr:`TableKind.named`), in registry order."""
    return tuple(k.name for k in TABLE_KINDS.values() if k.named)


def kind_of(name: str) -> TableKind:
    """The table kind of a named reproduction: a named table's own, or the kind a task's
    reproduction renders (``<task>_elmo``: ``table1``; :attr:`TableKind.task_suffix`).

    Raises:
        KeyError: not a named reproduction's name.
    """
    kind = TABLE_KINDS.get(name)
    if kind is not None and kind.named:
        return kind
    suffix = name.rsplit("_", 1)[-1]
    for kind in TABLE_KINDS.values():
        if kind.task_suffix == suffix and name.rsplit("_", 1)[0] in TASKS:
            return kind
    raise KeyError(f"unknown reproduction {name!r}")


def default_seeds(name: str, tasks: Sequence[str] | None = None) -> tuple[int, ...]:
    """Seeds of a named reproduction when none are given: the most any of its tasks asks for
    (:attr:`tasks.core.TaskSpec.seeds`; each row of a table uses its own task's count)."""
    return tuple(range(max(get_task(t).seeds for t in table_tasks(name, tasks))))


def table_tasks(name: str, tasks: Sequence[str] | None = None) -> list[str]:
    """The tasks (rows) of a named reproduction, in registry order.

    ``table1`` has every registered task; ``table2``, ``table3`` and ``cove`` the tasks the
    paper's table has (a section in ``paper.toml``); ``tasks`` chooses others.

    Raises:
        KeyError: an unknown reproduction or task (the message lists the valid ones).
    """
    known = reproductions()
    if name not in known:
        raise KeyError(f"unknown reproduction {name!r}; known: {', '.join(sorted(known))}")
    kind = kind_of(name)
    if kind.name != name:
        if tasks:
            raise KeyError(
                f"{name} is one task's reproduction; --tasks applies to {named_tables()}"
            )
        return [name.rsplit("_", 1)[0]]
    if tasks:
        unknown = sorted(set(tasks) - set(TASKS))
        if unknown:
            raise KeyError(f"unknown task(s) {unknown}; registered: {', '.join(TASKS)}")
        return [t for t in TASKS if t in tasks]
    if kind.rows == "every":
        return list(TASKS)
    if kind.rows == "sets":
        readers = {s.task for s in real_sets(family=kind.family)}
        return [t for t in TASKS if t in readers]
    section = load_paper().get(name, {})
    return [t for t in TASKS if t in section]


def row_split(task_name: str, kind: str, eval_split: str | None) -> tuple[str, str | None]:
    """The split of a task's row in a table of ``kind`` and the split of the paper's number.

    Tables 2 and 3 are dev tables (as in the paper); Table 1 rows use ``eval_split`` or the
    task's :attr:`~tasks.core.TaskSpec.table_split`; CoVe rows ``eval_split`` or the split of
    the paper's CoVe number for the task (§5.1 reports dev numbers for SNLI and SRL).
    """
    task = get_task(task_name)
    placement = TABLE_KINDS[kind].split if kind in TABLE_KINDS else "task"
    if placement == "dev":
        return "dev", "dev"
    if placement == "cove":
        paper = load_paper().get("cove", {}).get(task_name, {}).get("split")
        return eval_split or paper or task.table_split, paper
    return eval_split or task.table_split, task.paper_split


def _left_out_lines(left_out: Sequence[str]) -> list[str]:
    """The caption line naming the table's tasks a per-task ``--data`` left out."""
    if not left_out:
        return []
    return [f"Left out (--data names no data for them): {', '.join(left_out)}."]


def finetune_line(specs: Sequence[RunSpec]) -> str:
    """A caption line saying which tasks' ELMo runs fine-tuned the biLM on their training
    text first (paper §3.4, A.1) and which did not."""
    tuned: list[str] = []
    frozen: list[str] = []
    for spec in specs:
        if spec.representation not in ("elmo", "none"):
            continue
        if spec.representation == "elmo":
            names = tuned if spec.representation_config.get("finetune") else frozen
            if spec.task not in names:
                names.append(spec.task)
    if not tuned:
        return "biLM not fine-tuned on the task's text (paper A.1 fine-tuned it in most cases)."
    parts = [
        "biLM fine-tuned on the task's training text first, then frozen (paper A.1): "
        + ", ".join(tuned)
    ]
    if frozen:
        parts.append(f"not fine-tuned: {', '.join(frozen)}")
    return "; ".join(parts) + "."


def rows(
    task_name: str,
    base: RunSpec,
    split: str,
    seeds: Sequence[int] | None = None,
    paper_split: str | None = None,
    show_split: bool = False,
) -> list[Row]:
    """The task's table rows (main metric first) for runs scored on ``split``.

    Args:
        task_name: a registered task.
        base: the row's spec.
        split: the split of the row's numbers.
        seeds: the row's seeds (``None``: the table's).
        paper_split: the split of the paper's numbers for the row (``None``: the table's).
        show_split: name the split in the label (tables whose rows mix splits).
    """
    task = get_task(task_name)
    named = data_name(base.data)
    # the DEMO set after the metric; other data after the task: "SST-5 task model on subj"
    demo, on = (" — DEMO data", "") if named is None else ("", f" task model on {named}")
    out = []
    for row in task.table_rows:
        metric = dataclasses.replace(row.metric, key=f"{split}_{row.metric.key}")
        what = row.metric.label or row.metric.key
        what = f"{what}; {split}" if show_split else what
        label = f"{row.label}{on} ({what}){demo}"
        out.append(
            Row(
                label,
                base,
                metric,
                seeds=tuple(seeds) if seeds is not None else None,
                paper_key=row.paper_key,
                split=split if show_split else None,
                paper_split=paper_split if show_split else None,
            )
        )
    return out


def data_name(data: str) -> str | None:
    """The data set a row's runs read, for its label: ``None`` for the bundled DEMO
    set, else by name, since a folder may hold any data in the task's format: a real set by its
    label (``"Sentence polarity (BCN, 2 classes)"``), a Hub dataset by its name, a folder by its
    last part (``"subj"``)."""
    if data == "demo":
        return None
    labels = {s.data: s.label for s in real_sets()}
    if data in labels:
        return labels[data]
    return data.removeprefix("hf:") if data.startswith("hf:") else Path(data).name or data


def tables(
    name: str,
    preset: str,
    data: Data,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str] = (),
    eval_split: str | None = None,
    cove_config: Mapping[str, Any] | None = None,
    tasks: Sequence[str] | None = None,
    others: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[TableSpec]:
    """The tables a named reproduction renders.

    Args:
        name: a key of :func:`reproductions`.
        preset: the tasks' preset (``mini``, ``paper``).
        data: ``demo``, a data folder, ``real``, or task → data label (each row on its task's
            data; :func:`mapped_tasks` says which rows that leaves).
        seeds: the seeds of every row; ``None``: each row its task's
            :attr:`~tasks.core.TaskSpec.seeds` (the paper's count, e.g. 5 for SNLI, NER and
            SST-5).
        rep_config: the biLM's representation configuration.
        overrides: task configuration changes.
        eval_split: the split of Table 1's and the CoVe table's numbers (``None``: each task's
            own, :func:`row_split`); Tables 2 and 3 are dev tables, as in the paper.
        cove_config: CoVe weights and their GloVe; adds the CoVe columns.
        tasks: the rows of a whole table (``None``: :func:`table_tasks`).
        others: the ``real`` table's other representations (name → configuration; ``None``:
            the random-weight biLM and the bundled MiniLM).
    """
    task_names, left_out = mapped_tasks(table_tasks(name, tasks), data, explicit=bool(tasks))
    if not task_names:
        raise KeyError(f"{name} has no rows: choose tasks from {', '.join(TASKS)}")
    entry = kind_of(name)
    kind = entry.name
    rep_config = preset_bilm(rep_config, preset, entry.shipped_elmo)  # the caption's biLM too
    if entry.family is not None:
        if data not in ("demo", REAL):
            raise ValueError(
                f"reproduce {kind} reads the registered real sets "
                "(experiments/data/real_sets.toml); for a data folder of your own use table1 or "
                "compare with --data"
            )
        data, seeds = REAL, REAL_SEEDS if seeds is None else seeds
    placed = {t: row_split(t, kind, eval_split) for t in task_names}
    all_rows, splits_text, split, one_paper_split = _table_rows(
        placed, preset, data, seeds, rep_config, overrides, entry.main_only, kind
    )
    table_seeds = all_rows[0].seeds or (0,)
    note = DEMO_NOTE if data == "demo" else ""
    family = _set_family(kind)
    if entry.finetune_caption is not None:  # its columns say themselves what was fine-tuned
        frozen = {k: v for k, v in rep_config.items() if k != "finetune"}
        groups = _seed_groups(all_rows)
        caption = (*describe_setup(frozen, preset, data, groups, overrides, family=family),)
        caption = (*caption, entry.finetune_caption)
    else:
        groups = _seed_groups(all_rows)
        caption = describe_setup(rep_config, preset, data, groups, overrides, all_rows, family)
    caption = (
        *caption,
        *_left_out_lines(left_out),
        *(_left_out_sets(task_names, kind) if data == REAL else ()),
        *_reference_lines(all_rows, data),
        _deviations_line(all_rows),
    )
    context = TableContext(
        preset=preset,
        rep_config=rep_config,
        cove_config=cove_config,
        others=others,
        where=f"({splits_text}; preset {preset}){note}",
        note=note,
        paper_split=one_paper_split,
        split=split,
        caption=caption,
        real=data == REAL,
    )
    return entry.build(all_rows, table_seeds, context)


def _table_rows(
    placed: Mapping[str, tuple[str, str | None]],
    preset: str,
    data: Data,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str],
    main_only: bool = False,
    kind: str = "table1",
) -> tuple[list[Row], str, str | None, str | None]:
    """A table's rows, the text naming their splits, the split of every row (``None`` when
    rows differ) and of the paper's numbers (``None`` when they differ, or for real sets).

    ``data`` :data:`~experiments.data.real_sets.REAL` makes a row per real set of the placed tasks
    (:func:`_real_rows`; those the table ``kind`` leaves out are not), each on its own data
    folder and split; otherwise a row per task on ``data`` (a mapping: on its task's entry)."""
    if data == REAL:
        table_rows = _real_rows(list(placed), preset, seeds, rep_config, overrides, main_only, kind)
        by_split: dict[str, list[str]] = {}
        for row in table_rows:
            names = by_split.setdefault(row.split or "dev", [])
            if row.base.data not in names:
                names.append(row.base.data)
        one = next(iter(by_split)) if len(by_split) == 1 else None
        text = "; ".join(f"{s}: {len(n)} real set{'s' * (len(n) > 1)}" for s, n in by_split.items())
        return table_rows, text, one, None
    mixed = len({split for split, _ in placed.values()}) > 1
    table_rows = _placed_rows(placed, preset, data, seeds, rep_config, overrides, main_only)
    paper_splits = {p for _, p in placed.values()}
    one_paper = paper_splits.pop() if len(paper_splits) == 1 and not mixed else None
    split = None if mixed else next(iter(placed.values()))[0]
    return table_rows, _splits_text(placed), split, one_paper


def _real_rows(
    task_names: Sequence[str],
    preset: str,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str],
    main_only: bool,
    kind: str = "table1",
) -> list[Row]:
    """A row per real set of ``task_names`` (``experiments/data/real_sets.toml``) that the table
    ``kind`` does not leave out, of the family the table reads (:attr:`TableKind.family`; others:
    the stand-ins of ``--data real``): the task's paper ELMo configuration on the set's folder,
    with the set's changes for ``preset`` before the user's, scored on the set's split; no paper
    number stands in a column beside them (the paper-data table names the published baselines
    in its caption)."""
    family = _set_family(kind)
    sets = [s for s in real_sets(task_names, family=family) if s.left_out_reason(kind) is None]
    if not sets:
        raise KeyError(f"no real set of {', '.join(task_names)} has a row in {kind}")
    shipped = kind in TABLE_KINDS and TABLE_KINDS[kind].shipped_elmo
    out: list[Row] = []
    for item in sets:
        changes = (*item.changes(preset), *overrides)
        task = get_task(item.task)
        base = base_spec(task, preset, item.data, rep_config, changes, item.eval_splits, shipped)
        own = tuple(seeds) if seeds is not None else tuple(range(task.seeds))
        set_rows = [
            dataclasses.replace(
                row,
                label=f"{item.label} ({row.metric.label or row.metric.key}; {item.split})",
                paper_key=f"real:{item.name}",
            )
            for row in rows(item.task, base, item.split, own, None, show_split=True)
        ]
        out += set_rows[:1] if main_only else set_rows
    return out


def _set_family(kind: str) -> str:
    """The family of registered sets a table ``kind`` reads (:attr:`TableKind.family`; a kind
    of no family, e.g. ``table1 --data real``: the stand-ins, ``real``)."""
    entry = TABLE_KINDS.get(kind)
    return entry.family if entry is not None and entry.family is not None else "real"


def _published_lines(table_rows: Sequence[Row], preset: str) -> list[str]:
    """Caption lines of the paper-data table: per set, the published test figures of the
    paper's baseline (the paper's Table 1 and the reference implementation's), and the set's
    changes to the preset (e.g. an epoch cap on the ``paper`` recipe)."""
    used = {r.base.data for r in table_rows}
    lines = []
    for s in real_sets(family="paper"):
        if s.data not in used:
            continue
        figures = "; ".join(f"{source} {figure}" for source, figure in s.published)
        if figures:
            lines.append(f"Published baseline on {s.label} ({s.split}): {figures}.")
        own = dict(s.preset_overrides).get(preset, ())
        if own:
            lines.append(
                f"{s.label}: preset {preset} run with {' '.join(own)} on every column alike "
                "(the machine's budget; the full recipe is the preset's default)."
            )
    return lines


def _left_out_sets(task_names: Sequence[str], kind: str) -> list[str]:
    """Caption lines naming the real sets the table ``kind`` leaves out, and why."""
    return [
        f"Left out: {s.label} ({s.name}): {reason}."
        for s in real_sets(task_names, family=_set_family(kind))
        if (reason := s.left_out_reason(kind)) is not None
    ]


def _reference_lines(table_rows: Sequence[Row], data: Data) -> list[str]:
    """Caption lines of a real-set table: where the sets were read, their licences, and the
    published figures on them (other setups: for orientation, not reproductions)."""
    if data != REAL:
        return []
    used = {r.base.data for r in table_rows}
    sets = [s for s in real_sets() if s.data in used]
    lines = [
        f"Real sets, read in place from the shared data folder ({SHARED_ROOT_TEXT}; the data "
        "is not in the repository; its records are): "
        + "; ".join(
            f"{s.name} = {s.folder} ({s.licence}"
            + (f"; --set {' '.join(s.overrides)}" if s.overrides else "")
            + ")"
            for s in sets
        )
        + "."
    ]
    fetched = [f"/{s.folder}" for s in sets if s.family == "paper"]  # not in ../shared
    if fetched:
        lines.append(
            f"Where the shared data folder lacks them, {fetch_command_for(fetched)} rebuilds "
            "them from their public sources, each file checked by SHA-256 (docs/real_data.md)."
        )
    lines += [
        f"Published on {s.name} (another setup, not a reproduction): {s.reference}."
        for s in sets
        if s.reference
    ]
    return lines


def _deviations_line(table_rows: Sequence[Row]) -> str:
    """The caption line naming where each task's departures from the paper's implementations
    are listed (every preset has some: ``mini`` is smaller, and ``paper`` keeps those its
    task's README lists, e.g. tokenizers and word vectors)."""
    tasks = list(dict.fromkeys(row.base.task for row in table_rows))
    presets = sorted({row.base.preset for row in table_rows})
    where = ", ".join(f"tasks/{t}/README.md" for t in tasks)
    return (
        f"Preset {'/'.join(presets)} departs from the paper's implementations as each task's "
        f"README lists under 'Deviations from the paper' ({where})."
    )


def _placed_rows(
    placed: Mapping[str, tuple[str, str | None]],
    preset: str,
    data: Data,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str],
    main_only: bool = False,
) -> list[Row]:
    """The rows of tasks placed on their splits (task → (split, paper split)), each with its
    seeds (``None``: its task's own) and data (:func:`data_of`); the split is named in the
    labels when rows differ."""
    mixed = len({split for split, _ in placed.values()}) > 1
    out: list[Row] = []
    for task_name, (split, paper_split) in placed.items():
        splits = ("dev", "test") if split == "test" else ("dev",)
        task = get_task(task_name)
        base = base_spec(task, preset, data_of(data, task_name), rep_config, overrides, splits)
        own = tuple(seeds) if seeds is not None else tuple(range(task.seeds))
        task_rows = rows(task_name, base, split, own, paper_split, show_split=mixed)
        out += task_rows[:1] if main_only else task_rows
    return out


def _splits_text(placed: Mapping[str, tuple[str, str | None]]) -> str:
    """``"test"``, or each split with its tasks when rows use different splits, the most
    common first (``"test: a, b; dev: c"``)."""
    by_split: dict[str, list[str]] = {}
    for task_name, (split, _) in placed.items():
        by_split.setdefault(split, []).append(task_name)
    if len(by_split) == 1:
        return next(iter(by_split))
    ordered = sorted(by_split, key=lambda s: -len(by_split[s]))
    return "; ".join(f"{s}: {', '.join(by_split[s])}" for s in ordered)


def _seed_groups(table_rows: Sequence[Row]) -> dict[tuple[int, ...], list[str]]:
    """Row seeds → the tasks that use them (the caption's seed line)."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for row in table_rows:
        names = groups.setdefault(row.seeds or (0,), [])
        if row.base.task not in names:
            names.append(row.base.task)
    return groups


def describe_setup(
    rep_config: Mapping[str, Any],
    preset: str,
    data: Data,
    seeds: Sequence[int] | Mapping[tuple[int, ...], Sequence[str]],
    overrides: Sequence[str] = (),
    table_rows: Sequence[Row] = (),
    family: str = "real",
) -> tuple[str, ...]:
    """Caption lines: which biLM, preset, data, seeds and changes a table's runs used, and
    (given the table's rows) which tasks fine-tuned the biLM (:func:`finetune_line`).

    ``seeds``: one list for every row, or row seeds → the tasks that use them; ``family``: the
    family of registered sets the rows read on ``real`` data."""
    bilm = bilm_description(rep_config, detail=True)
    sets = (
        "the paper's own public data sets (family 'paper' of experiments/data/real_sets.toml)"
        if family == "paper"
        else "real public sets (experiments/data/real_sets.toml; not the paper's datasets)"
    )
    named_data = {"demo": "the bundled DEMO set (generated; not the task's dataset)", REAL: sets}
    if isinstance(data, str):
        what = named_data.get(data, data)
    else:  # only the tasks of the table's rows, when it has rows
        shown = {r.base.task for r in table_rows} or set(data)
        what = "per task: " + "; ".join(
            f"{t} = {'the bundled DEMO set' if d == 'demo' else d}"
            for t, d in data.items()
            if t in shown
        )
    changes = f"; changes: {' '.join(overrides)}" if overrides else ""
    groups = seeds if isinstance(seeds, Mapping) else {tuple(seeds): []}
    seed_text = "; ".join(
        f"{', '.join(map(str, group))} ({len(group)} per cell"
        + (f": {', '.join(names)})" if len(groups) > 1 else ")")
        for group, names in groups.items()
    )
    lines = [
        f"biLM: {bilm}.",
        f"Preset: {preset}{changes}. Data: {what}. Seeds: {seed_text}.",
    ]
    if table_rows:
        lines.append(finetune_line([row.base for row in table_rows]))
    elif rep_config.get("finetune"):
        lines.append("biLM fine-tuned on the task's training text first (paper A.1).")
    return tuple(lines)


def expected_specs(table: TableSpec) -> list[RunSpec]:
    """Every run the table needs."""
    specs: dict[str, RunSpec] = {}
    for row in table.rows:
        for column in table.columns:
            if isinstance(column, RunsColumn):
                for spec in table.expected(row, column):
                    specs.setdefault(spec.run_id, spec)
    return list(specs.values())


def compare_table(
    new: tuple[str, Mapping[str, Any]],
    against: tuple[str, Mapping[str, Any]],
    preset: str,
    data: Data,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    overrides: Sequence[str] = (),
    eval_split: str | None = None,
    tasks: Sequence[str] | None = None,
) -> TableSpec:
    """A new representation beside a reference (ELMo by default) on the same tasks, seeds,
    sites, mixing and dropout: the main metric per task, the difference with its paired
    bootstrap p-value and CI (``python -m experiments compare``).

    Args:
        new: the new representation's name (registered or ``module:Factory``) and config.
        against: the reference's name and config (``elmo``: ``rep_config``; ``none``: the
            baseline).
        preset, data, overrides: as in :func:`tables`.
        seeds: every row's seeds (``None``: each task's own).
        rep_config: the ELMo configuration of the rows' base spec (the reference's when it is
            ``elmo``).
        eval_split: the split of the numbers (``None``: each task's Table 1 split).
        tasks: the rows (``None``: every registered task).
    """
    task_names, left_out = mapped_tasks(table_tasks("table1", tasks), data, explicit=bool(tasks))
    if not task_names:
        raise KeyError(f"compare has no rows: choose tasks from {', '.join(TASKS)}")
    placed = {t: row_split(t, "table1", eval_split) for t in task_names}
    rep_config = preset_bilm(rep_config, preset)
    all_rows, placed_text, split, paper_split = _table_rows(
        placed, preset, data, seeds, rep_config, overrides, main_only=True, kind="compare"
    )

    def column(name: str, config: Mapping[str, Any], paper_key: str | None) -> RunsColumn:
        label = representation_label(name, config)
        if name == "none":
            return RunsColumn(label, baseline_fields(), paper_key)
        if name == "elmo":
            config = preset_bilm(config, preset)
            if config == dict(rep_config):
                return RunsColumn(label, {}, paper_key)
        changes = {"representation": name, "representation_config": dict(config)}
        return RunsColumn(label, changes, paper_key)

    paper_key = None if data == REAL else {"elmo": "elmo", "none": "baseline"}.get(against[0])
    reference = column(*against, paper_key)  # no paper number beside the real sets
    candidate = column(*new, None)
    if candidate.label == reference.label:
        raise ValueError(f"--repr and --against are both {candidate.label!r}")
    note = DEMO_NOTE if data == "demo" else ""
    return TableSpec(
        name="compare",
        title=(f"{candidate.label} vs {reference.label} ({placed_text}; preset {preset}){note}"),
        rows=tuple(all_rows),
        columns=(
            reference,
            dataclasses.replace(candidate, versus=reference.label),
        ),
        seeds=all_rows[0].seeds or (0,),
        paper_table="table1",
        split=split,
        paper_split=paper_split,
        caption=(
            *describe_setup(rep_config, preset, data, _seed_groups(all_rows), overrides, all_rows),
            *_left_out_lines(left_out),
            *_reference_lines(all_rows, data),
            _deviations_line(all_rows),
            f"{candidate.label}: {_config_text(new[1])}; identical task models, sites, mixing, "
            "dropout and seeds per row.",
        ),
    )


def sweep_table(specs: Sequence[RunSpec], seeds: tuple[int, ...], split: str) -> TableSpec:
    """A sweep's table: one row per grid point (seeds averaged), one column, the task's main
    metric; the title says DEMO data, the caption the setup (the biLM line only where ELMo
    runs)."""
    points: dict[str, RunSpec] = {}
    for spec in specs:
        point = derive(spec, {"seed": seeds[0]})
        points.setdefault(point.run_id, point)
    first_point = next(iter(points.values()))
    task = first_point.task
    first = rows(task, first_point, split)[0]
    table_rows = tuple(
        Row(describe_run(p).rsplit(" seed=", 1)[0], p, first.metric, paper_key=None)
        for p in points.values()
    )
    column = RunsColumn(f"{split} {first.metric.label or first.metric.key}", {})
    elmo = [p for p in points.values() if p.representation == "elmo"]
    setup = describe_setup(
        elmo[0].representation_config if elmo else {},
        first_point.preset,
        first_point.data,
        seeds,
        first_point.overrides,
    )
    demo = DEMO_NOTE if first_point.data == "demo" else ""
    return TableSpec(
        f"sweep-{task}",
        f"Sweep over {task} ({split}; seeds {seeds}){demo}",
        table_rows,
        (column,),
        seeds,
        caption=setup if elmo else setup[1:],
    )


def _config_text(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items())) or "default configuration"


def weights_lines(table: TableSpec, records: Sequence[Any]) -> list[str]:
    """Caption lines: the learned softmax layer weights (mean over seeds) of every column's
    runs, per task and injection site (paper Figure 2)."""
    from experiments.report.plots import layer_weights

    lines = []
    for row, cells in runs_by_cell(table, records):
        parts = []
        for column, found in cells:
            for site, weights in layer_weights(found).items():
                values = ", ".join(f"{w:.2f}" for w in weights.mean)
                parts.append(f"{column.label} {site} [{values}]")
        if parts:
            where = row.base.data.removeprefix(SHARED_PREFIX)
            what = f"{row.base.task} on {where}" if is_shared(row.base.data) else row.base.task
            lines.append(f"Layer weights, {what} (softmax s_j): {'; '.join(parts)}.")
    return lines


def _runs_per_set(
    table: TableSpec, records: Sequence[Any]
) -> Iterator[tuple[str, list[tuple[RunsColumn, list[Any]]]]]:
    """Per data set of ``table`` (its first row: a set's rows, e.g. coreference's four, share
    their runs), each run column with the stored records of its runs."""
    by_id = {r.run_id: r for r in records}
    first: dict[str, Row] = {}
    for row in table.rows:
        first.setdefault(row.base.data, row)
    for data, row in first.items():
        yield (
            data,
            [
                (
                    column,
                    [by_id[s.run_id] for s in table.expected(row, column) if s.run_id in by_id],
                )
                for column in table.columns
                if isinstance(column, RunsColumn)
            ],
        )


def wall_time_lines(table: TableSpec, records: Sequence[Any]) -> list[str]:
    """Caption lines: each row's median wall time per run and column, in seconds, with the
    CPUs and thread counts that ran them (from the records)."""
    lines: list[str] = []
    machines: set[tuple[str, str]] = set()
    for data, columns in _runs_per_set(table, records):
        parts = []
        for column, found in columns:
            times = [r.timings["wall_s"] for r in found if "wall_s" in r.timings]
            machines |= {
                (r.provenance.cpu or "CPU not recorded", r.provenance.device) for r in found
            }
            if times:
                parts.append(f"{column.label} {statistics.median(times):,.0f}")
        if parts:
            lines.append(f"{data.removeprefix(SHARED_PREFIX)}: {', '.join(parts)}")
    if not lines:
        return []
    where = "; ".join(f"{cpu}, {device}" for cpu, device in sorted(machines))
    return [f"Median wall time per run, seconds ({where}): " + "; ".join(lines) + "."]


def selected_epoch_lines(table: TableSpec, records: Sequence[Any]) -> list[str]:
    """A caption line: per data set and run column, the epoch each seed's run selected (its
    best dev epoch, whose weights are tested) and how many it ran, from the records; so a
    reader of a capped recipe sees whether the selection sat at the cap."""
    parts = []
    for data, columns in _runs_per_set(table, records):
        cells = []
        for column, found in columns:
            if found:
                best = ", ".join(str(int(r.metrics.get("best_epoch", 0))) for r in found)
                ran = sorted({int(r.metrics.get("epochs_run", 0)) for r in found})
                cells.append(f"{column.label} {best} (of {'/'.join(map(str, ran))})")
        if cells:
            parts.append(f"{data_name(data) or data}: {'; '.join(cells)}")
    if not parts:
        return []
    return ["Selected epoch per seed (best dev; of the epochs run): " + " | ".join(parts) + "."]


#: The epochs at the end of a capped run over which :func:`dev_curve_lines` says what the dev
#: score still gained.
LAST_EPOCHS = 5


def dev_curve_lines(table: TableSpec, records: Sequence[Any]) -> list[str]:
    """A caption line: per data set and run column, the seeds' mean dev score
    :data:`LAST_EPOCHS` epochs before the last (at the first, for a run of fewer epochs) and
    at the last, from the records' logs; so a reader of a capped recipe sees whether the dev
    curve had flattened (the table's learning-curves plot draws it per epoch)."""
    metric_of: dict[str, MetricSpec] = {}
    for row in table.rows:
        metric_of.setdefault(row.base.data, row.metric)
    parts = []
    for data, columns in _runs_per_set(table, records):
        metric = metric_of[data]
        split, sep, name = metric.key.partition("_")  # a split's key, e.g. test_f1 → dev_f1
        key = f"dev_{name}" if sep and split in SPLITS else f"dev_{metric.key}"
        cells = []
        for column, found in columns:
            curves = [_dev_curve(record, key) for record in found]
            if not curves or not all(curves):
                continue
            last = min(max(curve) for curve in curves)
            before = max(1, last - LAST_EPOCHS)  # a run of fewer epochs: from its first
            if before == last or any(before not in c or last not in c for c in curves):
                continue
            start = statistics.mean(c[before] for c in curves) * metric.scale
            end = statistics.mean(c[last] for c in curves) * metric.scale
            cells.append(f"{column.label} {start:.2f} → {end:.2f} (epochs {before} → {last})")
        if cells:
            label = metric.label or metric.key
            parts.append(f"{data_name(data) or data} (dev {label}): {'; '.join(cells)}")
    if not parts:
        return []
    return [
        "Dev curve at the cap (mean over seeds; the learning-curves plot shows every epoch): "
        + " | ".join(parts)
        + "."
    ]


def _dev_curve(record: Any, key: str) -> dict[int, float]:
    """A record's dev score per epoch (its log's evaluation lines)."""
    return {
        int(line["epoch"]): float(line[key])
        for line in record.log
        if isinstance(line.get("epoch"), int | float) and isinstance(line.get(key), int | float)
    }


def sample_efficiency_table(
    preset: str,
    data: Data,
    seeds: Sequence[int] | None,
    rep_config: Mapping[str, Any],
    fractions: Sequence[float] | None = None,
    overrides: Sequence[str] = (),
    tasks: Sequence[str] | None = None,
) -> TableSpec:
    """Paper Figure 1 (§5.4) as a table: baseline vs ELMo trained on growing shares of the
    training set (the same nested subsets for both, :func:`experiments.run.setup.training_subset`),
    dev metric, ELMo tested against the baseline in every row.

    Args:
        fractions: shares of the training set (``None``: the figure's, ``paper.toml``).
        tasks: the tasks (``None``: the figure's, SNLI and SRL).
        preset, data, seeds, rep_config, overrides: as in :func:`tables`.
    """
    figure = load_paper().get("figure1", {})
    task_names, left_out = mapped_tasks(
        table_tasks("table1", tasks or figure.get("tasks") or None), data, explicit=bool(tasks)
    )
    if not task_names:
        raise KeyError(f"sample-efficiency has no rows: choose tasks from {', '.join(TASKS)}")
    fractions = tuple(fractions or figure.get("fractions") or (1.0,))
    rep_config = preset_bilm(rep_config, preset)
    if any(not 0.0 < f <= 1.0 for f in fractions):
        raise ValueError(f"fractions must be in (0, 1], got {fractions}")
    all_rows: list[Row] = []
    for task_name in task_names:
        task = get_task(task_name)
        base = base_spec(task, preset, data_of(data, task_name), rep_config, overrides)
        own = tuple(seeds) if seeds is not None else tuple(range(task.seeds))
        for fraction in sorted(fractions):
            spec = derive(base, {"train_fraction": fraction})
            (row,) = rows(task_name, spec, "dev", own)[:1]
            label = row.label.replace(" (", f", {100 * fraction:g} % of train (", 1)
            all_rows.append(dataclasses.replace(row, label=label))
    t = table1(all_rows, all_rows[0].seeds or (0,))
    columns = tuple(
        dataclasses.replace(c, versus="Baseline", paper_key=None)
        if isinstance(c, RunsColumn) and c.label == "ELMo"
        else dataclasses.replace(c, paper_key=None)
        for c in t.columns
        if isinstance(c, RunsColumn)
    )
    note = DEMO_NOTE if data == "demo" else ""
    return dataclasses.replace(
        t,
        name="sample_efficiency",
        title=f"Sample efficiency (paper Figure 1): dev, preset {preset}{note}",
        columns=columns,
        split="dev",
        caption=(
            *describe_setup(rep_config, preset, data, _seed_groups(all_rows), overrides, all_rows),
            *_left_out_lines(left_out),
        ),
    )


@dataclasses.dataclass(frozen=True)
class TableContext:
    """What a table's builder needs besides its rows and seeds (:attr:`TableKind.build`).

    Attributes:
        preset: the tasks' preset.
        rep_config: the biLM's representation configuration (the ELMo column's).
        cove_config: CoVe weights and their GloVe (``None``: no CoVe columns).
        others: the other representations' configurations (:attr:`TableKind.others`; ``None``:
            the builder's default).
        where: the title's tail: the rows' splits, the preset and the DEMO note.
        note: the DEMO note alone (``""`` on other data).
        paper_split: the split of the paper's numbers (``None``: they differ, or real sets).
        split: the split of every row (``None``: rows differ).
        caption: the caption lines every kind shares (setup, left-out rows, sets, deviations).
        real: the rows are registered sets (no paper number beside them).
    """

    preset: str
    rep_config: Mapping[str, Any]
    cove_config: Mapping[str, Any] | None
    others: Mapping[str, Mapping[str, Any]] | None
    where: str
    note: str
    paper_split: str | None
    split: str | None
    caption: tuple[str, ...]
    real: bool

    def dress(self, table: TableSpec, title: str, paper_split: str | None) -> TableSpec:
        """``table`` with ``title``, the rows' split, ``paper_split`` and the shared caption
        (on registered sets without paper columns: they are not the paper's data)."""
        columns = table.columns
        if self.real:
            columns = tuple(dataclasses.replace(c, paper_key=None) for c in table.columns)
        return dataclasses.replace(
            table,
            title=title,
            split=self.split,
            paper_split=paper_split,
            caption=self.caption,
            columns=columns,
        )


#: A table's builder: its rows, the table's seeds and the context → the tables it renders.
Builder = Callable[[list[Row], tuple[int, ...], TableContext], list[TableSpec]]
#: Caption lines read from the store's records of a rendered table (``render``/``reproduce``).
RecordLines = Callable[[TableSpec, Sequence[Any]], list[str]]


@dataclasses.dataclass(frozen=True)
class TableKind:
    """One kind of table: a named reproduction (``reproduce NAME``), or the rows a task's own
    reproduction renders (``<task>_<suffix>``). :data:`TABLE_KINDS` holds every kind.

    Attributes:
        name: the table's name (``reproduce NAME``; the kind of a task's reproduction).
        description: what it runs (:func:`reproductions`).
        build: rows, seeds, context → its tables (a layout of ``render/`` dressed with the
            context's title, splits and caption).
        rows: which tasks have rows: ``every`` registered task, those of its ``paper.toml``
            section (``paper``), or those reading a registered set of :attr:`family`
            (``sets``); ``--tasks`` chooses others.
        split: the split of a task's row: Table 1's (``task``: ``--eval-split`` or the task's
            own), ``dev`` (Tables 2 and 3) or the split of the paper's CoVe number (``cove``).
        main_only: its rows take Table 1's main configuration alone (no per-task ablation rows).
        family: the family of registered sets its rows are
            (:attr:`~experiments.data.real_sets.RealSet.family`; on ``real`` data, seeds
            :data:`~experiments.data.real_sets.REAL_SEEDS`); ``None``: rows per task.
        three_seeds: its committed file was rendered with seeds 0, 1, 2 (the standard request
            of :func:`experiments.cli.naming.standard_seeds`); else each task's own.
        others: the other representations it adds (each column's options from the command
            line; ``()``: none, or the builder's default).
        record_lines: caption lines from the records of its runs, added when it is rendered
            (e.g. :func:`wall_time_lines`, :func:`selected_epoch_lines`).
        finetune_caption: a caption line in place of the per-task fine-tuning line (its
            columns say what was fine-tuned; the setup lines then name the biLM as given).
        named: a whole table of ``reproduce NAME``; ``False``: only tasks' reproductions.
        task_suffix: each task's reproduction of this kind is ``<task>_<suffix>`` (``None``:
            none).
        task_description: what a task's reproduction runs (``{task}``: the task's name).
    """

    name: str
    description: str
    build: Builder
    rows: Literal["every", "paper", "sets"] = "every"
    split: Literal["task", "dev", "cove"] = "task"
    main_only: bool = False
    family: str | None = None
    three_seeds: bool = False
    others: tuple[str, ...] = ()
    record_lines: tuple[RecordLines, ...] = ()
    finetune_caption: str | None = None
    named: bool = True
    task_suffix: str | None = None
    task_description: str = ""

    @property
    def shipped_elmo(self) -> bool:
        """Its ELMo column is the shipped small biLM unless ``--elmo`` names another, in every
        preset: its rows are sets of a family that takes it
        (:data:`~experiments.data.real_sets.SHIPPED_ELMO_FAMILIES`)."""
        return self.family in SHIPPED_ELMO_FAMILIES

    def __post_init__(self) -> None:
        if (self.rows == "sets") != (self.family is not None):
            raise ValueError(f"table kind {self.name}: rows 'sets' and a family go together")
        if self.task_suffix is not None and "{task}" not in self.task_description:
            raise ValueError(f"table kind {self.name}: a task_description with {{task}}")


def _titled(
    make: Callable[[list[Row], tuple[int, ...], TableContext], TableSpec],
    paper_split: bool = False,
) -> Builder:
    """A builder of one table titled with its layout's own title and the context's tail; the
    split of the paper's numbers only where ``paper_split`` (the layout has paper columns)."""

    def build(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
        table = make(rows, seeds, context)
        split = context.paper_split if paper_split else None
        return [context.dress(table, f"{table.title} {context.where}", split)]

    return build


def _dev_tables(*makes: Callable[[Sequence[Row], tuple[int, ...]], TableSpec]) -> Builder:
    """A builder of dev tables (Tables 2 and 3), titled with their own titles."""

    def build(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
        made = [make(rows, seeds) for make in makes]
        return [context.dress(t, t.title + context.note, "dev") for t in made]

    return build


def _table1(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
    title = f"Table 1: baseline vs ELMo + baseline {context.where}"
    return [context.dress(table1(rows, seeds), title, context.paper_split)]


def _baseline(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
    t = table1(rows, seeds)
    only = tuple(c for c in t.columns if isinstance(c, RunsColumn) and c.label == "Baseline")
    t = dataclasses.replace(t, columns=only)
    return [context.dress(t, f"Baseline {context.where}", context.paper_split)]


def _cove(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
    t = cove_table(rows, seeds, context.cove_config)
    t = context.dress(t, f"CoVe beside ELMo {context.where}", context.paper_split)
    if context.cove_config is None:
        t = dataclasses.replace(t, caption=(*t.caption, COVE_MISSING))
    return [t]


def _paper_data(rows: list[Row], seeds: tuple[int, ...], context: TableContext) -> list[TableSpec]:
    (t,) = _titled(lambda r, s, c: paper_data_table(r, s, c.others))(rows, seeds, context)
    published = _published_lines(rows, context.preset)
    return [dataclasses.replace(t, caption=(*t.caption, *published))]


#: Every table kind, in registry order: the named tables of ``reproduce NAME`` and the kinds of
#: each task's reproductions. A new table is one entry here (and a layout in ``render/`` when
#: none fits); the command line, the output names and ``results/committed.toml`` read it.
TABLE_KINDS: dict[str, TableKind] = {
    kind.name: kind
    for kind in (
        TableKind(
            "baseline",
            "the baseline without ELMo",
            _baseline,
            named=False,
            task_suffix="baseline",
            task_description="{task}: the baseline without ELMo (Table 1 row)",
        ),
        TableKind(
            "table1",
            "Table 1: baseline vs ELMo + baseline, every task",
            _table1,
            task_suffix="elmo",
            task_description="{task}: baseline vs ELMo + baseline (Table 1 row)",
        ),
        TableKind(
            "table2",
            "Table 2: LastOnly, λ = 1, λ = 0.001 (dev), every task",
            _dev_tables(table2),
            rows="paper",
            split="dev",
            three_seeds=True,
        ),
        TableKind(
            "table3",
            "Table 3: ELMo at input, input & output, output (dev), every task",
            _dev_tables(table3),
            rows="paper",
            split="dev",
            three_seeds=True,
        ),
        TableKind(
            "ablations",
            "Tables 2 and 3",
            _dev_tables(table2, table3),
            rows="paper",
            split="dev",
            named=False,
            task_suffix="ablations",
            task_description="{task}: its rows of Table 2 and Table 3",
        ),
        TableKind(
            "cove",
            "CoVe beside ELMo: the tasks of the paper's CoVe comparisons (§5.1)",
            _cove,
            rows="paper",
            split="cove",
            task_suffix="cove",
            task_description="{task}: baseline, + CoVe (last layer; λ = 1), + ELMo",
        ),
        TableKind(
            "dynamic",
            "beyond the paper: per-token (dynamic) vs static layer weights, every task",
            # Table 1's splits: its ELMo runs are the static
            _titled(lambda rows, seeds, c: dynamic_table(rows, seeds)),
            main_only=True,
            three_seeds=True,
        ),
        TableKind(
            "bilm",
            "beyond the paper's tables: biLM state reset / warm / carry and the biLM "
            "fine-tuned on the task's text (A.1), every task",
            # Table 1's ELMo runs are "reset"
            _titled(lambda rows, seeds, c: bilm_table(rows, seeds, c.rep_config)),
            main_only=True,
            three_seeds=True,
            finetune_caption=BILM_FINETUNE_LINE,
        ),
        TableKind(
            "adapt",
            "beyond the paper: ELMo and MiniLM frozen, fine-tuned and with LoRA adapters, "
            "every task",
            _titled(lambda rows, seeds, c: adapt_table(rows, seeds, c.rep_config)),
            main_only=True,
        ),
        TableKind(
            "directions",
            "beyond the paper: the biLM's forward, backward and both directions, every task",
            _titled(lambda rows, seeds, c: directions_table(rows, seeds, c.rep_config)),
            main_only=True,
        ),
        TableKind(
            "real",
            "the real public sets (../shared/data): baseline, ELMo, random-weight biLM and "
            "MiniLM per set, 3 seeds",
            _titled(lambda rows, seeds, c: real_table(rows, seeds, c.others)),
            rows="sets",
            family="real",
            others=("bilm-random", "hf"),
            record_lines=(wall_time_lines,),
        ),
        TableKind(
            "paper-data",
            "Table 1 on the paper's own public data sets (family 'paper' of "
            "real_sets.toml): baseline, ELMo and MiniLM per set, 3 seeds",
            _paper_data,
            rows="sets",
            family="paper",
            others=("hf",),
            # a capped recipe: where each run's selection sat
            record_lines=(wall_time_lines, selected_epoch_lines, dev_curve_lines),
        ),
    )
}
