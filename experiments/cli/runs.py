"""``run`` (one configuration over seeds, or ``--spec``: a stored run replayed,
:mod:`experiments.cli.replay`) and ``sweep`` (a grid of runs, then its table)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from bilm.scalar_mix import MIX_MODES
from experiments.cli.errors import Parser, UsageError, one_line
from experiments.cli.naming import output_stem
from experiments.cli.options import (
    add_repr_set_option,
    add_run_family_options,
    check_options,
    comma_list,
    data_label,
    floats,
    representation_options,
    site_sets,
)
from experiments.cli.replay import add_replay_options, replay
from experiments.cli.tables import write_tables
from experiments.cli.training import (
    base_spec,
    describe,
    run_all,
    set_run_config,
    training_request,
)
from experiments.report import reproductions
from experiments.report.render import Row, RunsColumn, TableSpec
from experiments.run.spec import RunSpec, derive, expand_sweep
from experiments.run.wandb_sink import log_outputs
from tasks.representations import REPRESENTATIONS

__all__ = ["configure_run", "configure_sweep", "run", "train_specs"]

STATES = ("reset", "carry", "warm")
#: The title note of a sweep on the bundled DEMO data (as the named tables' titles).
DEMO_NOTE = " [DEMO DATA, not the task's dataset]"


def _task_choice(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    from tasks.registry import TASKS

    if optional:  # ``run --spec`` takes none
        parser.add_argument("task", nargs="?", choices=sorted(TASKS), help="(or --spec)")
    else:
        parser.add_argument("task", choices=sorted(TASKS))


def _add_budget_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", default="reset", choices=STATES)
    parser.add_argument("--limit", type=int, help="first N examples of each split (smoke runs)")
    parser.add_argument("--max-epochs", type=int, help="epoch budget (default: the preset's)")


def configure_run(parser: argparse.ArgumentParser) -> None:
    """``run TASK``: one point (representation, sites, mix, dropout) over seeds; or
    ``run --spec SPEC.json``: a stored run replayed."""
    _task_choice(parser, optional=True)
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
    _add_budget_options(parser)
    add_run_family_options(parser, seeds=(0,), sets=True)
    add_replay_options(parser)


def configure_sweep(parser: argparse.ArgumentParser) -> None:
    """``sweep TASK``: the grid of representations × modes × λ × sites × seeds."""
    _task_choice(parser)
    parser.add_argument(
        "--repr", type=comma_list, default=("elmo",), help="e.g. elmo,bilm-random,hf"
    )
    add_repr_set_option(parser, "every representation's (none's excepted)")
    parser.add_argument("--mode", type=comma_list, default=None, help="all,last,dynamic")
    parser.add_argument("--lam", type=floats, default=None, help="e.g. 0,0.001,1")
    parser.add_argument(
        "--sites", type=site_sets, default=None, help="e.g. input,input+output,output"
    )
    _add_budget_options(parser)
    add_run_family_options(parser, seeds=(0,), sets=True)


def _representation_config(args: argparse.Namespace, name: str) -> dict[str, object]:
    """``name``'s configuration: from ``--elmo``/``--glove``/``--cove``, then ``--repr-set``
    on top; the name, every key and the options it needs checked before any run starts.

    Raises:
        UsageError: an unknown representation, option, or a missing one.
    """
    config = {**set_run_config(args, args.task, name), **representation_options(args.repr_set)}
    if name == "elmo":  # the preset's fine-tuning unless --finetune-bilm says otherwise
        config = reproductions.bilm_config_for(args.task, args.config, config)
    check_options(name, config)
    return config


def _run_point(args: argparse.Namespace, base: RunSpec) -> RunSpec:
    """``run``'s one configuration: ``--repr`` with its sites, mix and dropout."""
    if args.repr == "none":
        if args.repr_set:
            raise UsageError("--repr-set does not apply to --repr none (the baseline)")
        return reproductions.baseline(base)
    point: dict[str, object] = {
        "representation": args.repr,
        "representation_config": _representation_config(args, args.repr),
    }
    if args.dropout is not None:
        point["dropout"] = args.dropout
    if args.sites:
        point["sites"] = comma_list(args.sites)
    if args.mode:
        point["mode"] = args.mode
    if args.lam is not None:
        point["lam"] = args.lam
    if args.layer_norm is not None:
        point["layer_norm"] = args.layer_norm
    return derive(base, point)


def _sweep_specs(args: argparse.Namespace, base: RunSpec) -> list[RunSpec]:
    """``sweep``'s grid: per representation, its modes × λ × sites × seeds."""
    grid: dict[str, list[object]] = {}
    if args.mode:
        grid["mode"] = list(args.mode)
    if args.lam is not None:
        grid["lam"] = list(args.lam)
    if args.sites:
        grid["sites"] = list(args.sites)
    if args.repr_set and all(rep == "none" for rep in args.repr):
        raise UsageError("--repr-set does not apply to --repr none (the baseline)")
    specs: list[RunSpec] = []
    for rep in args.repr:
        if rep == "none":
            specs += expand_sweep(reproductions.baseline(base), seed=list(args.seeds))
        else:
            config = _representation_config(args, rep)
            changes = {"representation": rep, "representation_config": config}
            specs += expand_sweep(derive(base, changes), **grid, seed=list(args.seeds))
    return specs


def train_specs(args: argparse.Namespace) -> tuple[list[RunSpec], str]:
    """The specs of ``run`` / ``sweep`` and their group name (a sweep's: its outputs' file-name
    prefix, with the hash of its run ids, :func:`~experiments.cli.naming.output_stem`).

    Raises:
        UsageError: an invalid option value (a bad ``--sites``, ``--lam``, ``--dropout``, ...),
            or ``run`` without a task: a command-line mistake, no run starts.
    """
    if args.task is None:
        from tasks.registry import TASKS

        raise UsageError(
            f"run needs a TASK (one of {', '.join(sorted(TASKS))}) or --spec SPEC.json"
        )
    if getattr(args, "allow_changed", False):
        raise UsageError("--allow-changed applies only to a replay: run --spec SPEC.json")
    base = base_spec(args, args.task)
    changes: dict[str, object] = {"state": args.state, "limit": args.limit}
    if args.max_epochs is not None:
        changes["max_epochs"] = args.max_epochs
    try:
        base = derive(base, changes)
        if args.command == "run":
            point = _run_point(args, base)
            return list(
                expand_sweep(point, seed=list(args.seeds))
            ), f"run-{args.task}-{point.run_id}"
        specs = _sweep_specs(args, base)
    except (KeyError, ValueError) as error:
        raise UsageError(one_line(error)) from None
    plain = f"sweep-{args.task}-{data_label(args.data)}-{len(specs)}runs"
    return specs, output_stem(plain, [s.run_id for s in specs], None, args.data)


def _grid_table(
    task: str, specs: Sequence[RunSpec], seeds: tuple[int, ...], split: str
) -> TableSpec:
    """One row per grid point (seeds averaged), one column: the task's main metric; the title
    says DEMO data (and :func:`~experiments.report.render.render` smoke runs), the caption the
    setup."""
    points: dict[str, RunSpec] = {}
    for spec in specs:
        point = derive(spec, {"seed": seeds[0]})
        points.setdefault(point.run_id, point)
    first_point = next(iter(points.values()))
    first = reproductions.rows(task, first_point, split)[0]
    rows = tuple(
        Row(describe(p).rsplit(" seed=", 1)[0], p, first.metric, paper_key=None)
        for p in points.values()
    )
    column = RunsColumn(f"{split} {first.metric.label or first.metric.key}", {})
    elmo = [p for p in points.values() if p.representation == "elmo"]
    setup = reproductions.describe_setup(
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
        rows,
        (column,),
        seeds,
        caption=setup if elmo else setup[1:],  # the biLM line only where ELMo runs
    )


def _table_split(args: argparse.Namespace, specs: Sequence[RunSpec]) -> str:
    """The split of a sweep's table: ``--eval-split``, else the one its runs score beyond dev
    (a registered set scored on test, :func:`~experiments.cli.training.base_spec`), else dev."""
    if args.eval_split is not None:
        return str(args.eval_split)
    return "test" if specs and "test" in specs[0].eval_splits else "dev"


def run(args: argparse.Namespace) -> int:
    """``run`` prints one JSON line per seed (``run --spec``: the replayed run's,
    :func:`~experiments.cli.replay.replay`); ``sweep`` prints and writes the grid's table."""
    if args.command == "run" and args.spec is not None:
        defaults = Parser()
        configure_run(defaults)
        return replay(args, defaults.get_default)
    specs, group = train_specs(args)
    store = run_all(specs, training_request(args, group))
    if args.command == "run":
        for spec in specs:
            metrics = store.get(spec.run_id).metrics
            print(json.dumps({"run_id": spec.run_id, "seed": spec.seed, **metrics}))
        return 0
    table = _grid_table(args.task, specs, tuple(args.seeds), _table_split(args, specs))
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
