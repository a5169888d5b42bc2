"""A run's objects, set up from its :class:`~experiments.run.resolve.ResolvedRun` in named steps.

:func:`set_up` builds them in the order that fixes the run's random numbers:

1. :func:`setup_data`: the task's recipe, its :class:`~tasks.core.TrainConfig` (the spec's epoch
   cap applied) and the splits the run uses, each checked to be usable;
2. :func:`_setup_representation`: the representation, fine-tuned first when its configuration
   says ``finetune``, read through the feature cache when frozen (:mod:`experiments.run.represent`);
3. :func:`_setup_model`: the injector of the spec's sites and mix and the task model around it,
   on the device, initialised from the spec's seed whatever the steps before drew;
4. :func:`_setup_optimizer`: the trainable parameters, their optimizer and EMA
   (:mod:`experiments.run.optim`), and the grad scaler.

The result is a :class:`Run`, what the training loop (:mod:`experiments.run.runner`) steps,
evaluates and checkpoints; :func:`make_sink` says where its metrics go. :class:`RunOptions` says how
a run is executed (none of it is part of the run id). A benchmark that times the loop on data of its
own passes them as :class:`RunData`.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bilm.devices import (
    autocast,
    describe_device,
    make_scaler,
    resolve_device,
    resolve_precision,
)
from experiments.run.optim import EMA, build_optimizer
from experiments.run.progress import report_reads
from experiments.run.represent import build_spec_representation, finetuned_bilm, make_represent
from experiments.run.resolve import ResolvedRun
from experiments.run.spec import RunSpec
from experiments.run.wandb_sink import NullSink, Sink, WandbOptions, WandbSink
from tasks.common.progress import bars_enabled
from tasks.core import Represent, TaskRecipe, TaskSpec, TrainConfig
from tasks.features.inject import Injector
from tasks.representations import Representation
from tasks.representations.adapt import AdaptConfig, adapt_config

__all__ = [
    "Run",
    "RunData",
    "RunOptions",
    "make_sink",
    "seed_everything",
    "set_up",
    "setup_data",
    "to_device",
    "training_subset",
]


@dataclass(frozen=True)
class RunOptions:
    """How a run is executed; none of it is part of the run id (the device and precision are
    recorded in the provenance).

    Attributes:
        work_root: checkpoints and logs go to ``work_root/<task>/<run_id>/``.
        cache_dir: feature cache of frozen representations (``None``: no cache).
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:N``.
        precision: ``fp32`` | ``bf16`` | ``fp16`` (autocast; a grad scaler with fp16 on CUDA).
        progress: tqdm bars, drawn only when stderr is a terminal
            (:func:`tasks.common.progress.bars_enabled`); where they are not, the run prints
            :attr:`eval_lines` instead.
        wandb: log to W&B (offline unless ``WANDB_MODE`` says otherwise).
        threads: CPU intra-op threads of this run (``torch.set_num_threads``); ``None`` keeps
            torch's default (the machine's cores). Float summation order, hence a CPU run's
            trajectory, depends on it: a fixed count makes a CPU result independent of the
            machine's core count (the CLI defaults to 1 and runs several at once instead).
        eval_lines: print one line per evaluation to stderr (run id, epoch, dev metric, best,
            seconds): the progress report of runs in worker processes, where bars interleave,
            and of runs whose stderr is not a terminal (on whenever ``progress`` is asked for
            and bars are not drawn).
        cache_budget: bytes the feature cache's entries may hold in ``cache_dir``, as
            :func:`tasks.features.feature_cache.parse_budget` reads it: ``"20GB"``, ``"500MB"``,
            ``"1.5TiB"``, a byte count, ``"50%"`` (of the free disk plus what the cache holds)
            or ``"unlimited"``; ``None``: ``DEFAULT_BUDGET`` (``"50%"``). Least-recently used
            whole entries are evicted to fit a new one (reported on stderr).
        max_skipped: the largest share of a split's examples its reader may have skipped
            (``skipped / (kept + skipped)``, reasons a configured filter causes not counted:
            :meth:`tasks.common.io.ReadStats.skipped_share`); a run on a split over it, or on
            an empty split, stops at set-up with an error naming the file and the counts by
            reason. 0.5 by default: the bundled demo sets skip nothing that counts.
        fresh: start from scratch even where the work folder holds a checkpoint of this run
            under the same identity (``--rerun``: a forced retraining must not re-score the
            old weights); it is overwritten at the first evaluation.
        epoch_units: at every evaluation, also store the dev split's per-unit statistics
            (``units-dev-step<STEP>.json``, the step of the log line), so that a seed-aware
            test can compare two systems at every epoch, not only at the selected one
            (``--epoch-units``; ``nox -s peer``).
    """

    work_root: Path = Path("runs/work")
    cache_dir: Path | None = None
    device: str = "auto"
    precision: str = "fp32"
    progress: bool = True
    wandb: WandbOptions | None = None
    threads: int | None = None
    eval_lines: bool = False
    cache_budget: str | int | None = None
    max_skipped: float = 0.5
    fresh: bool = False
    epoch_units: bool = False


@dataclass(frozen=True)
class RunData:
    """What a run trains and scores on (:func:`setup_data`).

    Attributes:
        recipe: the task's recipe for the spec's preset, overrides and data.
        train_config: the recipe's training configuration, the spec's epoch cap applied.
        splits: ``train`` and every split the spec scores, as the run uses them.
    """

    recipe: TaskRecipe
    train_config: TrainConfig
    splits: dict[str, list[Any]]


@dataclass
class Run:
    """The objects of one run (built by :func:`set_up`), what the loop steps and checkpoints."""

    spec: RunSpec
    task: TaskSpec
    recipe: TaskRecipe
    train_config: TrainConfig
    splits: dict[str, list[Any]]
    representation: Representation
    represent: Represent
    injector: Injector
    model: nn.Module
    trainable: list[nn.Parameter]
    optimizer: torch.optim.Optimizer
    ema: EMA | None
    scaler: torch.amp.GradScaler
    device: torch.device
    precision: str
    work: Path
    finetune_ppl: dict[str, float]
    eval_lines: bool = False
    epoch_units: bool = False  # RunOptions.epoch_units
    #: the run identity's reuse fields as JSON (:attr:`ResolvedRun.reuse_key`): a checkpoint
    #: resumes only under it (``""``: not checked)
    identity: str = ""
    #: optimizer steps over which a trained representation's learning rate warms up (0: none)
    warmup: int = 0
    #: trainable parameters: the whole run's, and the representation's share of them
    trainable_parameters: int = 0
    representation_parameters: int = 0
    #: each optimizer step's total gradient norm before clipping, since the last evaluation,
    #: on the device (read once per evaluation: no sync per step); empty at every checkpoint
    grad_norms: list[Tensor] = field(default_factory=list)

    def forward(self, batch: Any) -> Any:
        """The model on ``batch`` as a recipe predicts with it: the batch moved to the device,
        autocast, no gradients."""
        with torch.no_grad(), autocast(self.device, self.precision):
            return self.model(to_device(batch, self.device))

    def config_json(self) -> str:
        """The task and training configuration (JSON) the run's checkpoint is written under."""
        return json.dumps(
            {"task": _plain(self.recipe.config), "train": _plain(self.train_config)},
            sort_keys=True,
            default=str,
        )

    def device_label(self) -> str:
        """The device that runs, with the CPU thread count and a precision other than fp32."""
        label = describe_device(self.device)
        if self.device.type == "cpu":
            threads = torch.get_num_threads()
            label += f", {threads} thread{'s' if threads > 1 else ''}"
        if self.precision != "fp32":
            label += f", {self.precision}"
        return label


def make_sink(run: Run, options: RunOptions) -> Sink:
    """Where the run's metrics go: W&B when ``options.wandb`` (the spec, the run id, both
    configurations, device and precision as the W&B run's config), else nowhere."""
    if options.wandb is None:
        return NullSink()
    config = {
        **run.spec.to_dict(),
        "run_id": run.spec.run_id,
        "task_config": _plain(run.recipe.config),
        "train_config": _plain(run.train_config),
        "device": str(run.device),
        "precision": run.precision,
    }
    return WandbSink(options.wandb, name=run.spec.run_id, config=config, work_dir=run.work)


def _plain(value: Any) -> Any:
    """A (dataclass) configuration as plain data, for JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    return value


def seed_everything(seed: int) -> None:
    """Python, numpy and torch RNGs (CPU runs are then deterministic for a fixed thread count)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def to_device(value: Any, device: torch.device) -> Any:
    """Tensors moved to ``device`` inside (frozen) dataclasses, tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return value.to(device, non_blocking=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: to_device(getattr(value, f.name), device) for f in dataclasses.fields(value)
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, list | tuple):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def training_subset(examples: Sequence[Any], fraction: float) -> list[Any]:
    """``fraction`` of ``examples`` (at least one), drawn by a fixed permutation and kept in
    their original order. The permutation does not depend on the run's seed, so every system
    and seed trains on the same subset, and the subsets of growing fractions are nested
    (paper §5.4, Figure 1)."""
    keep = max(1, round(fraction * len(examples)))
    order = np.random.default_rng(0).permutation(len(examples))[:keep]  # (keep,)
    return [examples[i] for i in sorted(order.tolist())]


def set_up(resolved: ResolvedRun, options: RunOptions, data: RunData | None = None) -> Run:
    """Every object of the run, in the order that fixes its random numbers: the data, the
    representation, then (reseeded) the model, then the optimizer.

    Args:
        resolved: the run (:func:`experiments.run.resolve.resolve`).
        options: how it runs (device, precision, caches, progress).
        data: the recipe and splits to use instead of the task's (a benchmark's synthetic
            splits; the caller seeds before building them); default: :func:`setup_data`,
            after seeding with the spec's seed.

    Raises:
        ValueError: the spec is of another version of its task, an unusable device or
            precision, ``max_skipped`` outside [0, 1], a split that is missing or unusable, or
            batches the device cannot hold (the recipe's optional ``check_fits(splits,
            device)``, e.g. SQuAD's longest contexts).
    """
    spec, task = resolved.spec, resolved.task
    if spec.task_version != task.version:
        raise ValueError(
            f"spec is for {spec.task} v{spec.task_version}, the code is v{task.version}"
        )
    device = resolve_device(options.device)
    precision = resolve_precision(device, options.precision)
    if not 0.0 <= options.max_skipped <= 1.0:
        raise ValueError(f"max_skipped must be in [0, 1], got {options.max_skipped}")
    if data is None:
        seed_everything(spec.seed)
        quiet = not (options.eval_lines or options.progress)
        data = setup_data(resolved, options.max_skipped, quiet=quiet)
    check_fits = getattr(data.recipe, "check_fits", None)  # optional: (splits, device) -> None
    if check_fits is not None:  # a recipe refusing batches its device cannot hold (SQuAD)
        check_fits(data.splits, device)
    work = Path(options.work_root) / spec.task / spec.run_id
    work.mkdir(parents=True, exist_ok=True)
    representation, represent, finetune_ppl = _setup_representation(resolved, data, options, device)
    injector, model = _setup_model(spec, data.recipe, representation, device)
    how = adapt_config(spec.representation_config)
    own = _representation_trainable(representation)
    trainable, optimizer, ema = _setup_optimizer(data.train_config, model, own, how)
    return Run(
        spec=spec,
        task=task,
        recipe=data.recipe,
        train_config=data.train_config,
        splits=data.splits,
        representation=representation,
        represent=represent,
        injector=injector,
        model=model,
        trainable=trainable,
        optimizer=optimizer,
        ema=ema,
        scaler=make_scaler(device, precision),
        device=device,
        precision=precision,
        work=work,
        finetune_ppl=finetune_ppl,
        eval_lines=options.eval_lines or (options.progress and not bars_enabled(True)),
        epoch_units=options.epoch_units,
        identity=resolved.reuse_key,
        warmup=how.warmup if own else 0,
        trainable_parameters=sum(p.numel() for p in trainable),
        representation_parameters=sum(p.numel() for p in own),
    )


def setup_data(resolved: ResolvedRun, max_skipped: float, quiet: bool = True) -> RunData:
    """The task's recipe, its training configuration (the spec's epoch cap applied) and the
    splits the run uses (``--limit``, the training fraction), each checked to be usable.

    With ``--limit`` the recipe comes from :meth:`tasks.core.TaskSpec.build_recipe`: a task
    whose reader streams reads only the first ``limit`` examples of each split, the others
    read everything; either way the run's splits are the first ``limit`` examples of each.

    Args:
        resolved: the run.
        max_skipped: :attr:`RunOptions.max_skipped`.
        quiet: what the readers kept and skipped in one stderr line, and only when they
            skipped or cut something (:func:`experiments.run.progress.report_reads`).
    """
    from tasks.common.io import require_usable

    spec, task = resolved.spec, resolved.task
    recipe = task.build_recipe(spec.preset, list(spec.overrides), resolved.data, spec.limit)
    train_config = recipe.train_config
    if spec.max_epochs is not None:
        train_config = dataclasses.replace(train_config, epochs=spec.max_epochs)
    wanted = ("train", *spec.eval_splits)
    missing = [s for s in wanted if s not in recipe.splits]
    if missing:
        raise ValueError(
            f"{spec.task}: the data has no {'/'.join(missing)} split "
            f"({task.data_help or 'see the task README'})"
        )
    report_reads(spec, recipe, wanted, quiet=quiet)  # quiet: one line, only on skips
    splits = {s: list(recipe.splits[s])[: spec.limit] for s in wanted}
    if spec.train_fraction is not None:
        splits["train"] = training_subset(splits["train"], spec.train_fraction)
    for split in wanted:  # no training or scoring on nothing, or on a mostly skipped file
        require_usable(split, len(splits[split]), recipe.read_stats.get(split), max_skipped)
    return RunData(recipe, train_config, splits)


def _setup_representation(
    resolved: ResolvedRun, data: RunData, options: RunOptions, device: torch.device
) -> tuple[Representation, Represent, dict[str, float]]:
    """The run's representation (first fine-tuned on the task's text when its configuration
    says ``finetune``), the function batches read it through (the feature cache of every
    sequence of the run's splits, when frozen), and the fine-tuning perplexities."""
    recipe, splits = data.recipe, data.splits
    config = dict(resolved.representation)
    finetune_ppl: dict[str, float] = {}
    if config.get("finetune"):
        config, finetune_ppl = finetuned_bilm(
            config,
            recipe.sequences(splits["train"]),
            recipe.sequences(splits["dev"]),
            device=options.device,
            precision=options.precision,
            progress=bars_enabled(options.progress),
        )
    representation = build_spec_representation(resolved.spec, config)
    sequences = recipe.sequences([e for examples in splits.values() for e in examples])
    represent = make_represent(
        representation,
        sequences,
        Path(options.cache_dir) if options.cache_dir else None,
        options.progress,
        device,
        cache_budget=options.cache_budget,
    )
    return representation, represent, finetune_ppl


def _setup_model(
    spec: RunSpec, recipe: TaskRecipe, representation: Representation, device: torch.device
) -> tuple[Injector, nn.Module]:
    """The injector of the spec's sites and mix, and the task model around it on ``device``
    (initialised from the spec's seed, whatever the set-up drew before)."""
    injector = Injector(representation, frozenset(spec.sites), spec.mix, dropout=spec.dropout)
    seed_everything(spec.seed)
    return injector, recipe.build_model(injector).to(device)


def _setup_optimizer(
    config: TrainConfig, model: nn.Module, own: list[nn.Parameter], how: AdaptConfig
) -> tuple[list[nn.Parameter], torch.optim.Optimizer, EMA | None]:
    """The trainable parameters, their optimizer (``own``, a trained representation's, in a
    group of its own learning rate and warm-up, :mod:`tasks.representations.adapt`) and (when
    configured) their EMA."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    ema = EMA(model, config.ema) if config.ema else None
    optimizer = build_optimizer(config, trainable, own, how.learning_rate_scale, how.warmup)
    return trainable, optimizer, ema


def _representation_trainable(representation: Representation) -> list[nn.Parameter]:
    """The representation's parameters that train (none while frozen)."""
    module = getattr(representation, "adapt_module", None)
    if not representation.trainable or not isinstance(module, nn.Module):
        return []
    return [p for p in module.parameters() if p.requires_grad]
