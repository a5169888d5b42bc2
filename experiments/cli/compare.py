"""``compare``: a new representation beside ELMo (or another reference) on the tasks, with
significance tests and the learned layer weights of both."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Sequence

from experiments import named
from experiments.cli.errors import UsageError, one_line
from experiments.cli.options import (
    FLAG_REPRESENTATIONS,
    add_run_family_options,
    add_tasks_option,
    data_label,
    run_config,
    task_overrides,
)
from experiments.cli.tables import write_tables
from experiments.cli.training import run_all
from experiments.render import TableSpec
from experiments.wandb_sink import log_outputs

__all__ = ["configure", "representation_options", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """``compare --repr NAME [--repr-set KEY=VALUE ...] [--against NAME]``."""
    parser.add_argument(
        "--repr",
        required=True,
        help="the new representation: a registered name (bilm-random, glove, ...) or "
        "package.module:Factory importable from PYTHONPATH (docs/representations.md)",
    )
    parser.add_argument(
        "--repr-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="the new representation's options; values are JSON when they parse (dim=64)",
    )
    parser.add_argument(
        "--against", default="elmo", help="the reference: elmo (default), none, or a name"
    )
    add_tasks_option(parser)
    add_run_family_options(parser, seeds=None)


def representation_options(pairs: Sequence[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs → options; a value is JSON when it parses, else a string.

    Raises:
        UsageError: a pair without ``=`` or without a key.
    """
    options: dict[str, object] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--repr-set takes KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _table(args: argparse.Namespace) -> TableSpec:
    """Both representations checked (no run starts on a bad name or option), then the table.

    Raises:
        UsageError: an unknown representation, option, task or preset.
    """
    from tasks.representations import check_representation

    def config(name: str, extra: dict[str, object]) -> dict[str, object]:
        registered = name in FLAG_REPRESENTATIONS
        return {**(run_config(args, name) if registered else {}), **extra}

    new = (args.repr, config(args.repr, representation_options(args.repr_set)))
    against = (args.against, config(args.against, {}))
    try:
        for name, options in (new, against):
            if name != "none":
                check_representation(name, options)
        return named.compare_table(
            new,
            against,
            args.config,
            args.data,
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
    stem = f"compare-{safe}-vs-{args.against}-{args.config}-{data_label(args.data)}"
    store = run_all(named.expected_specs(table), args, group=stem)
    lines = named.weights_lines(table, store.records())
    table = dataclasses.replace(table, caption=(*table.caption, *lines))
    written = write_tables([table], store, args.out, stem, "markdown", reuse_stale=args.reuse_stale)
    log_outputs(args.wandb, written, group=stem)
    return 0
