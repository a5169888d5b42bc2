"""``sample-efficiency``: paper Figure 1, baseline vs ELMo on growing shares of the training
set; its table (ELMo tested against the baseline at every share) and one plot per task."""

from __future__ import annotations

import argparse

from experiments.cli.naming import output_stem, standard_args
from experiments.cli.options import (
    add_run_family_options,
    comma_list,
    data_label,
    floats,
    run_config,
    task_data,
    task_overrides,
)
from experiments.cli.tables import expected_ids, print_written, table_runs, write_tables
from experiments.cli.training import raise_failed, run_for_tables, training_request
from experiments.report import reproductions
from experiments.report.plots import efficiency_plots
from experiments.report.render import TableSpec
from experiments.run.wandb_sink import log_outputs

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """``sample-efficiency [--fractions F,...] [--tasks T,...]``."""
    parser.add_argument(
        "--fractions",
        type=floats,
        help="shares of the training set (default: the figure's 0.001,0.01,0.1,1)",
    )
    parser.add_argument(
        "--tasks", type=comma_list, help="tasks (default: the figure's, paper.toml; any task works)"
    )
    add_run_family_options(parser, seeds=None)


def _table(args: argparse.Namespace) -> TableSpec:
    """The figure's table for ``args`` (no run starts)."""
    return reproductions.sample_efficiency_table(
        args.config,
        task_data(args.data),
        args.seeds,
        run_config(args),
        args.fractions,
        task_overrides(args),
        args.tasks,
    )


def run(args: argparse.Namespace) -> int:
    """Run the figure's missing runs, write its table and plots."""
    table = _table(args)
    stem = output_stem(
        f"sample-efficiency-{args.config}-{data_label(args.data)}",
        expected_ids([table]),
        lambda: expected_ids([_table(standard_args(args, [], None))]),
        args.data,
        exclude_dead=args.exclude_dead,
        reuse_stale=args.reuse_stale,
    )
    store, failure = run_for_tables(
        reproductions.expected_specs(table), training_request(args, stem)
    )
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
    runs = table_runs([table], store.records())
    written += print_written(efficiency_plots(table, runs, args.out / "plots", stem))
    log_outputs(args.wandb, written, group=stem)
    raise_failed(failure)
    return 0
