"""``compare``: a new representation beside ELMo (or another reference) on the tasks, with
significance tests and the learned layer weights of both."""

from __future__ import annotations

import argparse
import dataclasses

from experiments.cli.errors import UsageError, one_line
from experiments.cli.naming import COMPARE, output_stem, standard_args, standard_seeds
from experiments.cli.options import (
    FLAG_REPRESENTATIONS,
    add_repr_set_option,
    add_run_family_options,
    add_tasks_option,
    check_options,
    data_label,
    representation_options,
    run_config,
    task_data,
    task_overrides,
)
from experiments.cli.tables import at_stored_versions, expected_ids, write_tables
from experiments.cli.training import raise_failed, run_for_tables, training_request
from experiments.report import reproductions
from experiments.report.render import TableSpec
from experiments.run.store import ResultsStore
from experiments.run.wandb_sink import log_outputs

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """``compare --repr NAME [--repr-set KEY=VALUE ...] [--against NAME]``."""
    parser.add_argument(
        "--repr",
        required=True,
        help="the new representation: a registered name (bilm-random, glove, ...) or "
        "package.module:Factory importable from PYTHONPATH (docs/representations.md)",
    )
    add_repr_set_option(parser, "the new representation's")
    parser.add_argument(
        "--against", default="elmo", help="the reference: elmo (default), none, or a name"
    )
    add_tasks_option(parser)
    add_run_family_options(parser, seeds=None)
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="train nothing: the table from the runs stored (the committed results' render)",
    )


def _table(args: argparse.Namespace) -> TableSpec:
    """Both representations checked (no run starts on a bad name or option), then the table.

    Raises:
        UsageError: an unknown representation, option, task or preset.
    """

    def config(name: str, extra: dict[str, object]) -> dict[str, object]:
        registered = name in FLAG_REPRESENTATIONS
        return {**(run_config(args, name) if registered else {}), **extra}

    new = (args.repr, config(args.repr, representation_options(args.repr_set)))
    against = (args.against, config(args.against, {}))
    try:
        for name, options in (new, against):
            if name != "none":
                check_options(name, options)
        return reproductions.compare_table(
            new,
            against,
            args.config,
            task_data(args.data),
            args.seeds,
            run_config(args),
            task_overrides(args),
            args.eval_split,
            args.tasks,
        )
    except (KeyError, ValueError, TypeError) as error:
        raise UsageError(one_line(error)) from None


def run(args: argparse.Namespace) -> int:
    """Run the table's missing runs, render it with the learned layer weights of both."""
    table = _table(args)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in args.repr)
    plain = f"compare-{safe}-vs-{args.against}-{args.config}-{data_label(args.data)}"
    leading = ["--repr", args.repr, "--against", args.against]
    seeds = standard_seeds(COMPARE, args.data)
    stem = output_stem(
        plain,
        expected_ids([table]),
        lambda: expected_ids([_table(standard_args(args, leading, seeds))]),
        args.data,
        exclude_dead=args.exclude_dead,
        reuse_stale=args.reuse_stale,
    )
    if args.render_only:
        store, failure = ResultsStore(args.store), None
    else:
        store, failure = run_for_tables(
            reproductions.expected_specs(table), training_request(args, stem)
        )
    if args.reuse_stale:  # records made before a task's version bump: at their own version
        table = at_stored_versions(table, store.records())
    lines = reproductions.weights_lines(table, store.records())
    table = dataclasses.replace(table, caption=(*table.caption, *lines))
    written = write_tables(
        [table],
        store,
        args.out,
        stem,
        "markdown",
        reuse_stale=args.reuse_stale,
        exclude_dead=args.exclude_dead,
        failed=failure.result.failed if failure else None,
    )
    log_outputs(args.wandb, written, group=stem)
    raise_failed(failure)
    return 0
