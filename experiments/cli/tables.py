"""``reproduce`` (run and render a named table) and ``render`` (from stored runs only), and
the writing of every command's tables and plots."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from bilm.files import write_text
from experiments.cli.naming import output_stem, standard_args, standard_seeds
from experiments.cli.options import (
    add_run_family_options,
    add_tasks_option,
    data_label,
    representation_config,
    run_config,
    task_data,
    task_overrides,
)
from experiments.cli.training import raise_failed, run_for_tables, training_request
from experiments.data.real_sets import REAL
from experiments.report import reproductions
from experiments.report.plots import table_plots
from experiments.report.render import Format, Row, TableSpec, load_paper, render_formats
from experiments.run.identity import current_records
from experiments.run.store import CorruptRecordError, ResultsStore, RunRecord
from experiments.run.wandb_sink import log_outputs

__all__ = [
    "SUFFIXES",
    "at_stored_versions",
    "configure",
    "configure_render",
    "expected_ids",
    "print_written",
    "run",
    "table_runs",
    "write_tables",
]

#: ``render --format`` → the table files' suffix.
SUFFIXES: dict[Format, str] = {"markdown": "md", "latex": "tex", "csv": "csv"}


def configure(parser: argparse.ArgumentParser) -> None:
    """``reproduce NAME``: the named table and the options of a command that trains."""
    parser.add_argument("name", choices=sorted(reproductions.reproductions()))
    add_tasks_option(parser)
    add_run_family_options(parser, seeds=None)


def configure_render(parser: argparse.ArgumentParser) -> None:
    """``render NAME``: as ``reproduce``, plus ``--format``, without the training options."""
    parser.add_argument("name", choices=sorted(reproductions.reproductions()))
    parser.add_argument("--format", default="markdown", choices=tuple(SUFFIXES))
    add_tasks_option(parser)
    add_run_family_options(parser, seeds=None, train=False)


def _data(args: argparse.Namespace) -> str:
    """The ``--data`` of a request: ``real`` for a table of registered sets."""
    return REAL if reproductions.kind_of(args.name).family is not None else args.data


def _tables(args: argparse.Namespace) -> list[TableSpec]:
    """The named tables ``args`` asks for (no run starts, nothing is read from the store)."""
    cove = representation_config("cove", glove=args.glove, cove=args.cove) if args.cove else None
    others = reproductions.kind_of(args.name).others  # each column's options: the command line's
    return reproductions.tables(
        args.name,
        args.config,
        task_data(args.data),
        args.seeds,  # None: each row its task's seeds
        run_config(args),  # the table's kind adds the preset's biLM where it names none
        task_overrides(args),
        args.eval_split,
        cove,
        args.tasks,
        others={n: run_config(args, n) for n in others} if others else None,
    )


def expected_ids(tables: Sequence[TableSpec]) -> set[str]:
    """The run ids the tables expect."""
    return {s.run_id for t in tables for s in reproductions.expected_specs(t)}


def run(args: argparse.Namespace) -> int:
    """``reproduce`` and ``render``: build the named tables (``reproduce`` runs what is
    missing), write them and their plots, log them to W&B when asked."""
    tables = _tables(args)
    kind = reproductions.kind_of(args.name)
    if kind.name == "cove" and not args.cove:
        print(reproductions.COVE_MISSING, file=sys.stderr)
    plain = f"{args.name}-{args.config}-{data_label(_data(args))}"
    stem = output_stem(
        plain,
        expected_ids(tables),
        lambda: expected_ids(
            _tables(standard_args(args, [args.name], standard_seeds(args.name, args.data)))
        ),
        _data(args),
        exclude_dead=args.exclude_dead,
        reuse_stale=args.reuse_stale,
    )
    failure = None
    if args.command == "reproduce":
        specs = [s for t in tables for s in reproductions.expected_specs(t)]
        _, failure = run_for_tables(specs, training_request(args, stem))
    fmt: Format = args.format if args.command == "render" else "markdown"
    store = ResultsStore(args.store)
    try:
        if args.reuse_stale:
            needed = expected_ids(tables)
            tables = [at_stored_versions(t, store.records(needed=needed)) for t in tables]
        if kind.record_lines:  # e.g. wall times and machines, from the records
            tables = [_with_record_lines(t, kind.record_lines, store, tables) for t in tables]
        written = write_tables(
            tables,
            store,
            args.out,
            stem,
            fmt,
            reuse_stale=args.reuse_stale,
            exclude_dead=args.exclude_dead,
            failed=failure.result.failed if failure else None,
        )
    except CorruptRecordError as damaged:  # a run these tables need: say what makes it
        options = "the same options" if args.command == "reproduce" else "this render's options"
        command = f"python -m experiments reproduce {args.name} [{options}]"
        raise damaged.made_by(command) from None
    log_outputs(args.wandb, written, group=stem)
    raise_failed(failure)
    return 0


def _with_record_lines(
    table: TableSpec,
    record_lines: Sequence[reproductions.RecordLines],
    store: ResultsStore,
    tables: Sequence[TableSpec],
) -> TableSpec:
    """``table`` with its kind's caption lines from the records of the tables' runs
    (:attr:`~experiments.report.reproductions.TableKind.record_lines`)."""
    lines = [
        line
        for read in record_lines
        for line in read(table, store.records(needed=expected_ids(tables)))
    ]
    return dataclasses.replace(table, caption=(*table.caption, *lines))


def at_stored_versions(table: TableSpec, records: Sequence[RunRecord]) -> TableSpec:
    """``table`` with each row at the task version whose runs the store holds most of
    (``--reuse-stale``): a task's result version is part of its run ids, so the records made
    before a version bump are found only at their own version; they render marked ``‡`` as any
    stale record. A row stays at the code's version while the store holds as many of its runs
    there as at any other (between older versions: the newest)."""
    stored = {r.run_id for r in records}
    versions: dict[str, set[int]] = {}
    for record in records:
        versions.setdefault(record.spec.task, set()).add(record.spec.task_version)

    def held(row: Row) -> int:
        one = dataclasses.replace(table, rows=(row,))
        return sum(s.run_id in stored for s in reproductions.expected_specs(one))

    rows = []
    for row in table.rows:
        current = row.base.task_version
        candidates = sorted(versions.get(row.base.task, set()) | {current})
        at = {
            v: dataclasses.replace(row, base=dataclasses.replace(row.base, task_version=v))
            for v in candidates
        }
        best = max(candidates, key=lambda v: (held(at[v]), v == current, v))
        rows.append(at[best])
    return dataclasses.replace(table, rows=tuple(rows))


def _current_records(
    tables: Sequence[TableSpec], records: Sequence[RunRecord], reuse_stale: bool
) -> tuple[list[RunRecord], frozenset[str]]:
    """The records the tables may use (:func:`experiments.run.identity.current_records` over the
    tables' runs), and the stale ones among them; prints the runs left out."""
    wanted = expected_ids(tables)
    found = current_records(records, reuse_stale, only=wanted)
    if found.left_out:
        print(
            f"{len(found.left_out)} stored run(s) left out of the tables: what they were made "
            "from no longer matches (rerun the command to train them again, or pass "
            "--reuse-stale):",
            file=sys.stderr,
        )
        for rid, why in sorted(found.left_out.items()):
            print(f"  {rid}: {why}", file=sys.stderr)
    return found.kept, found.stale


def write_tables(
    tables: Sequence[TableSpec],
    store: ResultsStore,
    out: Path,
    stem: str,
    fmt: Format,
    task: str | None = None,
    reuse_stale: bool = False,
    exclude_dead: bool = False,
    failed: Mapping[str, str] | None = None,
) -> list[Path]:
    """Render ``tables`` from the store's current records: print each, write it to
    ``out/tables/<stem>-<table>.<suffix>`` with the CSV of every figure beside it
    (``<stem>-<table>.csv``), its plots to ``out/plots``, and say each path written on stderr.

    Args:
        tables: what to render.
        store: the results store.
        out: the output folder.
        stem: the file names' prefix.
        fmt: a key of :data:`SUFFIXES`.
        task: read only this task's records (``None``: all).
        reuse_stale: use stale records too (marked ‡).
        exclude_dead: leave dead runs out of the means (their cells are marked ☠ either way).
        failed: run id → error of the runs that failed in this command (their cells read
            ``failed``; a footnote per row gives the error).

    Returns:
        Every file written.

    Raises:
        CorruptRecordError: a record of a run the tables use is damaged (damaged records of
            other runs are skipped with a warning on stderr).
    """
    written = []
    (out / "tables").mkdir(parents=True, exist_ok=True)
    paper = load_paper()
    # a damaged record of a run the tables do not use is skipped with a warning (store.records)
    stored = store.records(task, needed=expected_ids(tables))
    records, stale = _current_records(tables, stored, reuse_stale)

    def attachment(run_id: str, name: str) -> str | None:
        folder = store.path_of(run_id)
        path = folder / name if folder is not None else None
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None

    fmts: tuple[Format, ...] = (fmt,) if fmt == "csv" else (fmt, "csv")  # every figure
    for table in tables:
        texts = render_formats(
            table,
            records,
            paper,
            fmts,
            attachments=attachment,
            stale=stale,
            exclude_dead=exclude_dead,
            failed=failed,
        )
        for kind, text in texts.items():
            path = out / "tables" / f"{stem}-{table.name}.{SUFFIXES[kind]}"
            written.append(write_text(path, text))
        print(texts[fmt])
    runs = table_runs(tables, records)
    return print_written(written) + print_written(table_plots(tables, runs, out / "plots", stem))


def table_runs(tables: Sequence[TableSpec], records: Sequence[RunRecord]) -> list[RunRecord]:
    """The records of the tables' expected runs."""
    wanted = expected_ids(tables)
    return [r for r in records if r.run_id in wanted]


def print_written(paths: list[Path]) -> list[Path]:
    """Say ``wrote PATH`` on stderr for each path; returns them."""
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)
    return paths
