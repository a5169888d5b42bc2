"""``peer``: a task's baseline and + ELMo beside allennlp-models, epoch by epoch
(:mod:`experiments.peer`; ``nox -s peer``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bilm.bilm import STATE_POLICIES
from experiments.cli.errors import UsageError
from experiments.cli.options import comma_list, positive_int, seeds

__all__ = ["configure", "run"]


def _seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: as ``run`` takes them (``0,1,2``, ``0-4``), none negative (allennlp's
    seeds)."""
    found = seeds(text)
    negative = [s for s in found if s < 0]
    if negative:
        raise argparse.ArgumentTypeError(f"--seeds must be >= 0, got {negative[0]}")
    return found


def _among(choices: tuple[str, ...], flag: str) -> Callable[[str], tuple[str, ...]]:
    """A comma list of ``choices`` (at least one, each known): the type of ``flag``."""

    def parse(text: str) -> tuple[str, ...]:
        items = comma_list(text)
        unknown = [i for i in items if i not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(
                f"{flag} takes a comma list of {', '.join(choices)}, got {text!r}"
            )
        return items

    return parse


def configure(parser: argparse.ArgumentParser) -> None:
    """The options of ``peer``."""
    from experiments.peer.run import PRECISIONS
    from tasks.registry import TASKS

    parser.add_argument("--task", choices=sorted(TASKS), help="the task (not with --summary)")
    parser.add_argument(
        "--data",
        help="the data both sides train on: a registered set by name (python -m experiments "
        "data list) or shared:FOLDER, each bringing its --set changes for the paper preset "
        "(experiments/data/real_sets.toml), or a folder",
    )
    parser.add_argument("--set", dest="overrides", nargs="*", default=[], metavar="KEY=VALUE")
    parser.add_argument("--seeds", type=_seeds, default=(0, 1, 2))
    parser.add_argument("--epochs", type=positive_int, default=5)
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        help="instances per batch, both sides (default: the task's peer's own, else 64)",
    )
    parser.add_argument(
        "--repr",
        type=_among(("none", "elmo"), "--repr"),
        default=("none", "elmo"),
        help="none, elmo or none,elmo",
    )
    parser.add_argument(
        "--state",
        type=_among(STATE_POLICIES, "--state"),
        default=("carry", "reset"),
        help="the project's biLM states of its ELMo rows (the first is allennlp's: carry)",
    )
    parser.add_argument(
        "--variant",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="project-side changes alone: its rows become 'ROW + KEY=VALUE' beside the same "
        "allennlp rows (one candidate cause of a gap at a time); a task configuration key as "
        "--set takes it, or elmo.sites / elmo.mode / elmo.lam / elmo.layer_norm / elmo.dropout "
        "for the ELMo rows' point (with --repr elmo)",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="the project runs' arithmetic: bf16 autocast rows ('ROW + precision=bf16', stored "
        "in <out>/project-runs-bf16) beside allennlp's fp32 rows and the project's fp32 rows",
    )
    parser.add_argument(
        "--max-parallel", type=positive_int, default=2, help="runs at once (default 2)"
    )
    parser.add_argument("--out", type=Path, default=Path("results/peer"))
    parser.add_argument("--work", type=Path, default=Path("runs/peer"))
    parser.add_argument(
        "--render-only", action="store_true", help="no training: the table from stored records"
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="no training: <out>/summary.md, every task's rows in one table, from stored records",
    )
    parser.add_argument(
        "--build-plan",
        action="store_true",
        help="no training: how the peer's venv is built (steps, pins, folder) from the "
        "repository's recipe; touches nothing",
    )


def run(args: argparse.Namespace) -> int:
    """Train what is missing, then render ``<out>/<task>.md`` and its plot (after training, the
    summary across tasks too); ``--summary`` renders the summary alone; ``--build-plan`` prints
    how the peer's venv is built (:func:`experiments.peer.venv.plan`)."""
    import torch

    from bilm.devices import DeviceError, resolve_precision
    from experiments.data.real_sets import named_set
    from experiments.peer.render import render_summary, render_task
    from experiments.peer.run import PeerRequest, run_request

    if args.build_plan:
        from experiments.peer.venv import plan

        print(plan())
        return 0
    if args.summary:
        if args.task or args.data:
            raise UsageError("--summary renders every task's rows: no --task or --data with it")
        print(f"peer: wrote {render_summary(args.out)}")
        return 0
    if not args.task:
        raise UsageError("--task is needed (or --summary)")
    if not args.render_only:
        if not args.data:
            raise UsageError("--data is needed to train (or --render-only)")
        from tasks.registry import get_task

        adapter = get_task(args.task).peer
        own = adapter.batch_size if adapter is not None else None
        if own is not None and args.batch_size not in (None, own):
            raise UsageError(f"{args.task}'s peer takes --batch-size {own} only")
        try:
            named = named_set(args.data)
            if named is not None and named.task != args.task:
                raise UsageError(
                    f"--data {args.data} is read by the {named.task} task: "
                    f"peer --task {named.task} --data {args.data}"
                )
            request = PeerRequest(
                task=args.task,
                data=args.data if named is None else named.data,
                overrides=tuple(args.overrides),
                seeds=args.seeds,
                epochs=args.epochs,
                batch_size=args.batch_size or own or 64,
                representations=tuple(args.repr),
                states=tuple(args.state),
                variant=tuple(args.variant),
                precision=args.precision,
            )
            _ = request.adapter  # a task without a peer: one line, before anything runs
            request.spec.configure(request.preset, request.all_overrides)  # --set, before data
            resolve_precision(torch.device("cpu"), request.precision)  # bf16 needs its unit
        except (ValueError, DeviceError) as error:
            raise UsageError(str(error)) from None
        run_request(request, args.out, args.work, max_parallel=args.max_parallel)
    path = render_task(args.task, args.out)
    print(f"peer: wrote {path}")
    if not args.render_only:  # the summary stays in step with what was trained
        print(f"peer: wrote {render_summary(args.out)}")
    return 0
