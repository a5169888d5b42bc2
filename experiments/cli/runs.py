"""``run``: one configuration over seeds, or ``--spec``: a stored run replayed
(:mod:`experiments.cli.replay`). The options every training command of one task shares, and
its :class:`~experiments.plan.requests.BaseRequest`, are read here for ``sweep`` too
(:mod:`experiments.cli.sweep`)."""

from __future__ import annotations

import argparse
import json

from bilm.scalar_mix import MIX_MODES
from experiments.cli.errors import Parser, UsageError, one_line
from experiments.cli.options import (
    add_repr_set_option,
    add_run_family_options,
    check_options,
    comma_list,
    representation_options,
    run_config,
    task_data,
    task_overrides,
)
from experiments.cli.replay import add_replay_options, replay
from experiments.cli.training import run_all, training_request
from experiments.plan.requests import BaseRequest, RunRequest
from experiments.plan.specs import run_specs
from experiments.run.spec import NO_REPRESENTATION, RunSpec
from tasks.representations import REPRESENTATIONS

__all__ = [
    "add_budget_options",
    "add_task_argument",
    "base_request",
    "checked_config",
    "configure_run",
    "run",
    "run_request",
    "train_specs",
]

STATES = ("reset", "carry", "warm")


def add_task_argument(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    from tasks.registry import TASKS

    if optional:  # ``run --spec`` takes none
        parser.add_argument("task", nargs="?", choices=sorted(TASKS), help="(or --spec)")
    else:
        parser.add_argument("task", choices=sorted(TASKS))


def add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", default="reset", choices=STATES)
    parser.add_argument("--limit", type=int, help="first N examples of each split (smoke runs)")
    parser.add_argument("--max-epochs", type=int, help="epoch budget (default: the preset's)")


def configure_run(parser: argparse.ArgumentParser) -> None:
    """``run TASK``: one point (representation, sites, mix, dropout) over seeds; or
    ``run --spec SPEC.json``: a stored run replayed."""
    add_task_argument(parser, optional=True)
    parser.add_argument(
        "--repr",
        default="elmo",
        help=f"{' | '.join(REPRESENTATIONS)}, or package.module:Factory (their keys: "
        f"--repr-set, below)",
    )
    add_repr_set_option(parser)
    parser.add_argument("--sites", help="comma-separated (default: the task's, from the paper)")
    parser.add_argument("--mode", default=None, choices=MIX_MODES)
    parser.add_argument("--lam", type=float, default=None)
    parser.add_argument(
        "--layer-norm",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="normalise each layer before the mix (default: the task's, from the paper)",
    )
    parser.add_argument(
        "--dropout", type=float, help="on the mixed vectors (default: the task's, paper §3.3)"
    )
    add_budget_options(parser)
    add_run_family_options(parser, seeds=(0,), sets=True)
    add_replay_options(parser)


def checked_config(args: argparse.Namespace, name: str) -> dict[str, object]:
    """``name``'s configuration from the command line: its flags (``--elmo``, ``--glove``,
    ``--cove``), then ``--repr-set`` on top; the name, every key and the options it needs
    checked before any run starts (the baseline's: ``--repr-set`` alone, unchecked, which
    planning refuses).

    Raises:
        UsageError: an unknown representation, option, or a missing one.
    """
    options = representation_options(args.repr_set)
    if name == NO_REPRESENTATION:
        return options
    config = {**run_config(args, name), **options}
    check_options(name, config)
    return config


def base_request(args: argparse.Namespace) -> BaseRequest:
    """What every run of the command shares: the task (looked up once), preset, data, the
    command line's biLM, changes and budget."""
    from tasks.registry import TASKS, get_task

    if args.task is None:
        raise UsageError(
            f"run needs a TASK (one of {', '.join(sorted(TASKS))}) or --spec SPEC.json"
        )
    return BaseRequest(
        task=get_task(args.task),
        preset=args.config,
        data=task_data(args.data, sets=True),
        elmo=run_config(args),
        overrides=tuple(task_overrides(args)),
        eval_split=args.eval_split,
        state=args.state,
        limit=args.limit,
        max_epochs=args.max_epochs,
    )


def run_request(args: argparse.Namespace) -> RunRequest:
    """``run``'s :class:`~experiments.plan.requests.RunRequest`, read from its command line.

    Raises:
        UsageError: no task, ``--allow-changed`` without ``--spec``, or a bad representation
            option.
    """
    if getattr(args, "allow_changed", False):
        raise UsageError("--allow-changed applies only to a replay: run --spec SPEC.json")
    base = base_request(args)
    return RunRequest(
        base=base,
        representation=args.repr,
        representation_config=checked_config(args, args.repr),
        sites=comma_list(args.sites) if args.sites else None,
        mode=args.mode,
        lam=args.lam,
        layer_norm=args.layer_norm,
        dropout=args.dropout,
        seeds=tuple(args.seeds),
    )


def train_specs(args: argparse.Namespace) -> tuple[list[RunSpec], str]:
    """``run``'s specs, one per seed, and their group name (``run-TASK-RUN_ID``).

    Raises:
        UsageError: an invalid option value (a bad ``--sites``, ``--lam``, ``--dropout``, ...),
            or no task: a command-line mistake, no run starts.
    """
    try:
        specs, point = run_specs(run_request(args))
    except (KeyError, ValueError) as error:
        raise UsageError(one_line(error)) from None
    return specs, f"run-{point.task}-{point.run_id}"


def run(args: argparse.Namespace) -> int:
    """``run`` prints one JSON line per seed (``run --spec``: the replayed run's,
    :func:`~experiments.cli.replay.replay`)."""
    if args.spec is not None:
        defaults = Parser()
        configure_run(defaults)
        return replay(args, defaults.get_default)
    specs, group = train_specs(args)
    store = run_all(specs, training_request(args, group))
    for spec in specs:
        metrics = store.get(spec.run_id).metrics
        print(json.dumps({"run_id": spec.run_id, "seed": spec.seed, **metrics}))
    return 0
