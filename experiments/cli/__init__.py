"""``python -m experiments``: run specs and sweeps, reproduce named tables, render.

    python -m experiments run squad --repr elmo --sites input,output --seeds 0,1,2
    python -m experiments run --spec runs/store/squad/RUN_ID/spec.json --store elsewhere
    python -m experiments sweep squad --repr elmo,bilm-random --mode all,last --lam 0,0.001,1 \\
        --sites input,input+output,output --seeds 0,1,2 [--executor ray --max-parallel 4]
    python -m experiments reproduce squad_elmo [--seeds 0,1,2] [--data DIR] [--config paper]
    python -m experiments render squad_elmo --store results/runs --out results
    python -m experiments reproduce table1 --tasks squad,ner --seeds 0,1,2
    python -m experiments compare --repr my_package:MyRep --tasks squad,sst5 [--against elmo]
    python -m experiments predict RUN_ID --input sents.txt [--format task|tokenized|raw]
    python -m experiments representations list    # every --repr-set key of every representation

Every command takes ``--device auto|cpu|cuda|cuda:N``, ``--precision fp32|bf16|fp16``,
``--wandb PROJECT`` (offline unless ``WANDB_MODE`` says otherwise) and ``--set KEY=VALUE`` on
the task's configuration (dotted keys: ``train.epochs=3``). Finished runs go to the store
(default ``runs/store``, append-only; a rerun skips them), tables and plots to ``--out``
(default ``runs``: ``runs/tables``, ``runs/plots``). The committed ``results/`` is written only
by an explicit ``render --store results/runs --out results``.
"""

# The command line of the harness, ``python -m experiments COMMAND ...``.
#
# Commands live in one dict literal, :data:`COMMANDS`: name → :class:`Command` (help text, a
# function adding its arguments, a function running it), one module per family of commands:
# :mod:`~experiments.cli.runs` (``run``), :mod:`~experiments.cli.sweep`,
# :mod:`~experiments.cli.tables` (``reproduce``, ``render``), :mod:`~experiments.cli.compare`,
# :mod:`~experiments.cli.efficiency` (``sample-efficiency``), :mod:`~experiments.cli.analyses`
# (``report``, ``probes``, ``neighbours``), :mod:`~experiments.cli.predict` and
# :mod:`~experiments.cli.representations` (``representations list``). Their shared flags
# are the option groups of :mod:`~experiments.cli.options`; a new command is one entry in
# :data:`COMMANDS`.
#
# Exit status (:mod:`~experiments.cli.errors`): 0 success; 1 a run failed (the error names the
# run id; the other runs are stored); 2 a command-line mistake (one line ``error: ...``, before
# any run starts); 130 interrupted (Ctrl-C: one line, and the same command resumes).

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bilm.version import package_version
from experiments.cli import (
    analyses,
    committed,
    compare,
    data,
    efficiency,
    peer,
    predict,
    real_data,
    representations,
    runs,
    sweep,
    tables,
)
from experiments.cli.errors import Parser, UsageError, exit_status
from experiments.cli.trust import drop_working_folder

__all__ = ["COMMANDS", "Command", "UsageError", "build_parser", "main"]


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes:
        help: one line for ``python -m experiments --help``.
        configure: adds the command's arguments to its parser.
        run: runs it on the parsed arguments and returns the exit status; raises
            :class:`UsageError` (or ``ValueError``/``KeyError``) for a user mistake and
            :class:`~experiments.run.executors.SweepError` for failed runs.
    """

    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {
    "run": Command("train one configuration over seeds", runs.configure_run, runs.run),
    "sweep": Command("a grid of runs, then a table of the grid", sweep.configure_sweep, sweep.run),
    "reproduce": Command("run and render a named table", tables.configure, tables.run),
    "render": Command(
        "render a named table from stored runs only", tables.configure_render, tables.run
    ),
    "compare": Command(
        "a new representation beside ELMo on the tasks, with significance",
        compare.configure,
        compare.run,
    ),
    "sample-efficiency": Command(
        "paper Figure 1: baseline vs ELMo on 0.1 %%–100 %% of the training set",
        efficiency.configure,
        efficiency.run,
    ),
    "report": Command(
        "one self-contained HTML page of every table and plot",
        analyses.configure_report,
        analyses.run_report,
    ),
    "probes": Command(
        "per-layer POS and word-sense probes (paper Tables 5-6)",
        analyses.configure_probes,
        analyses.run_probes,
    ),
    "neighbours": Command(
        "GloVe vs biLM nearest neighbours (paper Table 4)",
        analyses.configure_neighbours,
        analyses.run_neighbours,
    ),
    "predict": Command(
        "a trained run's selected weights applied to new text", predict.configure, predict.run
    ),
    "peer": Command(
        "a task's baseline and + ELMo beside allennlp-models, epoch by epoch",
        peer.configure,
        peer.run,
    ),
    "committed": Command(
        "every committed table and plot from the committed records (results/committed.toml)",
        committed.configure,
        committed.run,
    ),
    "data": Command(
        "the registered data sets by name: per task, its model and each set's label, split, "
        "family and whether it is here (list)",
        data.configure,
        data.run,
    ),
    "representations": Command(
        "every representation's --repr-set keys: type or choices, default, flag and help (list)",
        representations.configure,
        representations.run,
    ),
    "real-data": Command(
        "rebuild the real sets of --data real from their public sources (fetch, status, list)",
        real_data.configure,
        real_data.run,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The command line (``python -m experiments --help``): one subparser per :data:`COMMANDS`
    entry."""
    parser = Parser(
        prog="python -m experiments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.configure(sub.add_parser(name, help=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, return its exit status.

    Argument errors exit (``SystemExit``, status 2) while parsing, as ``argparse`` does;
    everything a command raises, Ctrl-C included, goes through
    :func:`~experiments.cli.errors.exit_status`.
    """
    args = build_parser().parse_args(argv)
    if args.command == "predict" or getattr(args, "spec", None) is not None:
        drop_working_folder()  # a spec handed over is data: nothing from here is imported
    try:
        if getattr(args, "executor", None) == "ray":
            if importlib.util.find_spec("ray") is None:
                raise UsageError(
                    "--executor ray needs Ray, which is not installed: pip install ray "
                    "(or the project's 'ray' extra), or use --executor local"
                )
            if args.address is None:
                os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
        return COMMANDS[args.command].run(args)
    except (Exception, KeyboardInterrupt) as error:
        status = exit_status(error)
        if status is None:
            raise
        return status
