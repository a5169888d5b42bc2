"""Running a command's specs: check them all first, then run the missing ones with one
progress line each (shared by ``run``, ``sweep``, ``reproduce``, ``compare`` and
``sample-efficiency``).

A command reads its training options from its command line once, into a
:class:`TrainingRequest` (:func:`training_request`), and hands that down: :func:`run_all` reads
nothing else, so a run's arguments go one way — command line → request → resolver and executors →
the loop."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bilm.pretrained import cache_root
from experiments.cli.errors import UsageError, one_line
from experiments.run.executors import (
    SLURM_INSTALL,
    Executor,
    Reuse,
    SlurmJobError,
    SlurmOptions,
    SweepError,
    run_sweep,
)
from experiments.run.resolve import Resolver
from experiments.run.spec import RunSpec, describe_run
from experiments.run.store import ResultsStore, RunRecord, StoreUnusableError
from experiments.run.wandb_sink import WandbOptions
from tasks.common.progress import on_terminal

if TYPE_CHECKING:  # the set-up imports torch: loaded when a command trains
    from experiments.run.setup import RunOptions

__all__ = [
    "raise_failed",
    "resolver_of",
    "reuse_policy",
    "run_all",
    "run_for_tables",
    "slurm_options",
    "training_request",
    "TrainingRequest",
    "validate_specs",
]


def validate_specs(specs: Sequence[RunSpec], resolver: Resolver | None = None) -> None:
    """Check every spec before any run starts by resolving it
    (:meth:`~experiments.run.resolve.Resolver.resolve`): task registered, preset valid, the
    representation and its options known (no weights loaded), the ``--set`` overrides applied to
    the task's configuration (key exists, value parses and validates; no data read).

    Args:
        specs: the command's runs.
        resolver: keeps the resolved runs for the command's next steps (default: a new one,
            forgotten afterwards).

    Raises:
        UsageError: the first problem, in one line.
    """
    _check_data(specs)
    resolver = Resolver() if resolver is None else resolver
    for spec in specs:
        try:
            resolver.resolve(spec)
        except (KeyError, ValueError, TypeError) as error:
            raise UsageError(f"{spec.task}: {one_line(error)}") from None


def _check_data(specs: Sequence[RunSpec]) -> None:
    """``--data real`` only where it makes rows; every ``shared:`` folder present.

    Raises:
        UsageError: naming the missing folders and how to supply them.
    """
    from experiments.data.real_sets import REAL, missing_folders, missing_hint

    if any(spec.data == REAL for spec in specs):
        raise UsageError(
            "--data real makes one table row per real set (compare, reproduce); one run reads "
            "one of them by its name, --data NAME (python -m experiments data list), or with "
            "--data shared:FOLDER (a folder of experiments/data/real_sets.toml)"
        )
    missing = missing_folders(spec.data for spec in specs)
    if missing:
        raise UsageError(
            f"the shared data folder(s) {', '.join(missing)} are not here: {missing_hint(missing)}"
        )


def reuse_policy(args: argparse.Namespace) -> Reuse:
    """``--rerun`` → never reuse; ``--reuse-stale`` → reuse stale records too."""
    if args.rerun:
        return "never"
    return "stale" if args.reuse_stale else "matching"


def resolver_of(args: argparse.Namespace) -> Resolver:
    """The :class:`~experiments.run.resolve.Resolver` of the command's device, precision and
    threads: each run resolved and identified once, for the check, the reuse decision and the
    run (:func:`run_all`)."""
    return Resolver(args.device, args.precision, args.threads or None)


@dataclass(frozen=True)
class _RunOne:
    """``run_one`` of :func:`~experiments.run.executors.run_sweep`: the resolver's run of a spec,
    trained into a record (picklable: spawned workers, Ray and Slurm get it without the
    resolver's runs, and resolve theirs where they run)."""

    resolver: Resolver
    options: RunOptions

    def __call__(self, spec: RunSpec) -> RunRecord:
        from experiments.run.runner import run_spec

        record: RunRecord = run_spec(self.resolver(spec), self.options)
        return record


def _options(args: argparse.Namespace, group: str) -> RunOptions:
    """The :class:`~experiments.run.setup.RunOptions` of the command's training options."""
    from experiments.run.setup import RunOptions

    in_workers = args.executor != "local" or args.max_parallel > 1
    return RunOptions(
        work_root=args.work,
        cache_dir=args.cache if args.cache is not None else cache_root() / "features",
        device=args.device,
        precision=args.precision,
        # worker processes report one line per evaluation: their bars would interleave; so
        # does a run whose stderr is no terminal (a log file): bars only on a terminal
        progress=not args.quiet and not in_workers,
        wandb=WandbOptions(project=args.wandb, group=group) if args.wandb else None,
        threads=args.threads or None,
        eval_lines=not args.quiet and (in_workers or not on_terminal()),
        max_skipped=args.max_skipped,
        cache_budget=args.cache_budget,
        fresh=args.rerun,
        epoch_units=getattr(args, "epoch_units", False),
    )


def slurm_options(args: argparse.Namespace) -> SlurmOptions:
    """The :class:`~experiments.run.executors.SlurmOptions` of ``--slurm-*``, ``--cpus-per-run``
    and ``--gpus-per-run`` (jobs' folder: ``slurm/`` under ``--work`` unless given).

    Raises:
        UsageError: a ``--slurm-set`` item without ``KEY=``.
    """
    extra: dict[str, object] = {}
    for item in args.slurm_set:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--slurm-set takes KEY=VALUE (e.g. account=nlp), got {item!r}")
        key = key.strip().removeprefix("slurm_")
        try:
            extra[f"slurm_{key}"] = json.loads(value)
        except json.JSONDecodeError:
            extra[f"slurm_{key}"] = value
    gpus = args.slurm_gpus_per_run
    return SlurmOptions(
        folder=args.slurm_folder if args.slurm_folder is not None else args.work / "slurm",
        partition=args.slurm_partition,
        minutes=args.slurm_time,
        cpus=max(1, math.ceil(args.cpus_per_run)),
        gpus=gpus if gpus is not None else max(0, math.ceil(args.gpus_per_run)),
        parameters=extra,
    )


def _check_slurm(args: argparse.Namespace) -> SlurmOptions | None:
    """The Slurm options of ``--executor slurm`` (``None`` for another executor), once submitit
    and ``sbatch`` are known to be there.

    Raises:
        UsageError: submitit is not installed, or ``sbatch``/``srun`` are not on the ``PATH``.
    """
    if args.executor != "slurm":
        return None
    if importlib.util.find_spec("submitit") is None:
        raise UsageError(
            f"--executor slurm needs submitit, which is not installed: {SLURM_INSTALL}"
        )
    options = slurm_options(args)
    if options.cluster == "slurm" and not (shutil.which("sbatch") and shutil.which("srun")):
        raise UsageError(
            "--executor slurm submits with sbatch and srun, which are not on the PATH here: "
            "run the command on a machine of the cluster (a login node)"
        )
    return options


@dataclass(frozen=True)
class TrainingRequest:
    """What a command's training options ask for, read from its command line once.

    Attributes:
        resolver: resolves and identifies each run once (device, precision, threads).
        options: what every run's loop is given (folders, progress, W&B, caches).
        store: the results store's folder.
        executor: ``local``, ``ray`` or ``slurm``.
        address: the Ray cluster's address (``None``: a local Ray).
        max_parallel: runs at once.
        ray_options: each Ray task's CPUs and GPUs (``None`` for another executor).
        reuse: which stored records a run reuses (:func:`reuse_policy`).
        slurm: the Slurm options (``None`` for another executor).
    """

    resolver: Resolver
    options: RunOptions
    store: Path
    executor: Executor
    address: str | None
    max_parallel: int
    ray_options: Mapping[str, float] | None
    reuse: Reuse
    slurm: SlurmOptions | None


def training_request(
    args: argparse.Namespace, group: str, resolver: Resolver | None = None
) -> TrainingRequest:
    """The command's :class:`TrainingRequest` (``group``: its name, the W&B group).

    Args:
        args: the parsed command line.
        group: the command's name for its runs.
        resolver: the command's :func:`resolver_of` when it has resolved runs already (a
            replay); default: a new one.

    Raises:
        UsageError: ``--executor slurm`` without submitit or ``sbatch``, or a bad
            ``--slurm-set``.
    """
    ray = args.executor == "ray"
    return TrainingRequest(
        resolver=resolver_of(args) if resolver is None else resolver,
        options=_options(args, group),
        store=args.store,
        executor=args.executor,
        address=args.address,
        max_parallel=args.max_parallel,
        ray_options={"num_cpus": args.cpus_per_run, "num_gpus": args.gpus_per_run} if ray else None,
        reuse=reuse_policy(args),
        slurm=_check_slurm(args),
    )


def run_all(specs: Sequence[RunSpec], request: TrainingRequest) -> ResultsStore:
    """Check every spec, then run each one not yet stored, one progress line per run.

    Args:
        specs: the command's runs.
        request: its training options (:func:`training_request`); each run is resolved and
            identified once by its resolver.

    Raises:
        UsageError: a spec (or the device) is wrong, or the store cannot be written; no run
            has started.
        SweepError: runs failed (the others are stored).
    """
    resolver = request.resolver
    validate_specs(specs, resolver)  # before anything is created: a mistake costs no run
    store = ResultsStore(request.store)
    try:
        store.check_writable()  # not after the first run has trained
    except StoreUnusableError as error:
        raise UsageError(f"--store {error}") from None
    unique = list({s.run_id: s for s in specs}.values())
    count = {"n": 0}

    def on_event(status: str, spec: RunSpec, detail: str) -> None:
        count["n"] += 1
        line = f"[{count['n']}/{len(unique)}] {status:6s} {spec.run_id} {describe_run(spec)}"
        if status in ("done", "stored", "stale"):
            metrics = store.get(spec.run_id).metrics
            line += "  " + " ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items()))
        print(line + (f"  {detail}" if detail else ""), file=sys.stderr, flush=True)

    try:
        result = run_sweep(  # a DeviceError (a ValueError) is a usage mistake: exit status 2
            unique,
            _RunOne(resolver, request.options),
            store,
            request.executor,
            request.address,
            max_parallel=request.max_parallel,
            ray_options=dict(request.ray_options) if request.ray_options is not None else None,
            on_event=on_event,
            identify=resolver.identify,
            reuse=request.reuse,
            slurm=request.slurm,
        )
    except SlurmJobError as error:  # the identities' job (e.g. an unknown partition)
        raise UsageError(f"--executor slurm: {error}") from None
    if result.superseded:
        print(
            f"{len(result.superseded)} stale record(s) trained again and replaced; the old ones "
            f"are kept under {store.root}/<task>/superseded/",
            file=sys.stderr,
        )
    return store


def run_for_tables(
    specs: Sequence[RunSpec], request: TrainingRequest
) -> tuple[ResultsStore, SweepError | None]:
    """:func:`run_all` for a command that renders tables: failed runs do not stop it.

    Returns:
        The store, and the :class:`~experiments.run.executors.SweepError` of the runs that failed
        (``None``: none did): the command writes its tables with those rows marked failed,
        then calls :func:`raise_failed` (exit status 1).

    Raises:
        UsageError: as :func:`run_all` (no run has started).
    """
    try:
        return run_all(specs, request), None
    except SweepError as error:
        return ResultsStore(request.store), error


def raise_failed(failure: SweepError | None) -> None:
    """After the tables are written: say that they show the failed runs, and raise their
    :class:`~experiments.run.executors.SweepError` (exit status 1); nothing when ``None``.

    Raises:
        SweepError: ``failure``.
    """
    if failure is None:
        return
    print(
        f"{len(failure.result.failed)} run(s) failed: the tables above show their cells as "
        "'failed' (a footnote per row gives the error); the other rows are rendered. Fix the "
        "cause and rerun the same command: stored runs are reused.",
        file=sys.stderr,
    )
    raise failure
