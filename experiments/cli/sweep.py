"""``sweep TASK``: a grid of runs (representations × modes × λ × sites × seeds), then the
grid's table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from experiments.cli.errors import UsageError, one_line
from experiments.cli.naming import output_stem
from experiments.cli.options import (
    add_repr_set_option,
    add_run_family_options,
    comma_list,
    data_label,
    floats,
    site_sets,
)
from experiments.cli.runs import add_budget_options, add_task_argument, base_request, checked_config
from experiments.cli.training import run_all, training_request
from experiments.plan.requests import SweepRequest
from experiments.plan.specs import sweep_specs
from experiments.run.spec import RunSpec
from experiments.run.wandb_sink import log_outputs

__all__ = ["configure_sweep", "run", "sweep_request", "train_specs"]


def configure_sweep(parser: argparse.ArgumentParser) -> None:
    """``sweep TASK``: the grid of representations × modes × λ × sites × seeds."""
    add_task_argument(parser)
    parser.add_argument(
        "--repr", type=comma_list, default=("elmo",), help="e.g. elmo,bilm-random,hf"
    )
    add_repr_set_option(parser, "every representation's (none's excepted)")
    parser.add_argument("--mode", type=comma_list, default=None, help="all,last,dynamic")
    parser.add_argument("--lam", type=floats, default=None, help="e.g. 0,0.001,1")
    parser.add_argument(
        "--sites", type=site_sets, default=None, help="e.g. input,input+output,output"
    )
    add_budget_options(parser)
    add_run_family_options(parser, seeds=(0,), sets=True)


def sweep_request(args: argparse.Namespace) -> SweepRequest:
    """``sweep``'s :class:`~experiments.plan.requests.SweepRequest`, read from its command line.

    Raises:
        UsageError: a bad representation option.
    """
    base = base_request(args)
    return SweepRequest(
        base=base,
        representations=tuple((name, checked_config(args, name)) for name in args.repr),
        modes=tuple(args.mode) if args.mode else None,
        lams=tuple(args.lam) if args.lam is not None else None,
        site_sets=tuple(args.sites) if args.sites else None,
        seeds=tuple(args.seeds),
    )


def train_specs(args: argparse.Namespace) -> tuple[list[RunSpec], str]:
    """The grid's specs and their group name: its outputs' file-name prefix, with the hash of
    its run ids (:func:`~experiments.cli.naming.output_stem`).

    Raises:
        UsageError: an invalid option value (a bad ``--sites``, ``--lam``, ...): a
            command-line mistake, no run starts.
    """
    try:
        specs = sweep_specs(sweep_request(args))
    except (KeyError, ValueError) as error:
        raise UsageError(one_line(error)) from None
    plain = f"sweep-{args.task}-{data_label(args.data)}-{len(specs)}runs"
    return specs, output_stem(plain, [s.run_id for s in specs], None, args.data)


def table_split(args: argparse.Namespace, specs: Sequence[RunSpec]) -> str:
    """The split of a sweep's table: ``--eval-split``, else the one its runs score beyond dev
    (a registered set scored on test, :func:`~experiments.plan.specs.request_base`), else dev."""
    if args.eval_split is not None:
        return str(args.eval_split)
    return "test" if specs and "test" in specs[0].eval_splits else "dev"


def run(args: argparse.Namespace) -> int:
    """Train the grid's missing runs, then print and write its table."""
    from experiments.cli.tables import write_tables  # the table: the report side
    from experiments.report.reproductions import sweep_table

    specs, group = train_specs(args)
    store = run_all(specs, training_request(args, group))
    table = sweep_table(specs, tuple(args.seeds), table_split(args, specs))
    written = write_tables(
        [table],
        store,
        args.out,
        group,
        "markdown",
        task=args.task,
        reuse_stale=args.reuse_stale,
        exclude_dead=args.exclude_dead,
    )
    log_outputs(args.wandb, written, group=group)
    return 0
