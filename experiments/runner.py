"""The one training loop for every task.

``train(spec, options)`` reads like a small training script: set up, resume, then epochs of
optimizer steps with an evaluation every epoch or every ``eval_every`` steps, then the selected
weights score every requested split. Its named steps:

1. :func:`_set_up`: :func:`_setup_data` (the task's recipe, its
   :class:`~tasks.core.TrainConfig` and splits, checked), :func:`_setup_representation` (the
   representation, fine-tuned when asked, read through the feature cache:
   :mod:`experiments.represent`), :func:`_setup_model` (injector and task model on the device),
   :func:`_setup_optimizer` (optimizer, EMA, grad scaler);
2. :func:`_train_batch`: forward (autocast), loss + λ penalty of the scalar mixes
   (:func:`tasks.common.inject.mix_penalty`), NaN/inf guard, backward (scaled in fp16),
   unscale, clip (each gradient value, then the norm), step, EMA, the per-step learning-rate
   schedule;
3. :func:`_evaluate`: the dev metric with the EMA weights (the task's official-parity scorer),
   model selection, early stopping, the plateau schedule, log line (with the interval's
   gradient norms and the number of distinct dev predictions: :mod:`experiments.health`, a
   stderr warning when the run looks dead), W&B, then the checkpoint
   (:mod:`experiments.checkpoint`: model, optimizer, EMA, best weights, loop state, grad scaler
   and every RNG state), so a run killed at any point resumes from its last evaluation and ends
   with identical metrics (batches, and with ``bucket_noise`` their membership, are planned
   from ``(seed, epoch)`` alone: :func:`epoch_seed`, :func:`tasks.core.batch_plan`; a resumed
   epoch recomputes its plan and skips the batches already done);
4. :func:`_finish`: the selected weights score every requested split (test only when asked)
   and write their predictions in the task's official format.

Frozen representations are read from the feature cache, so sweeps over λ / LastOnly / sites /
seeds never rerun the biLM. Nothing here names a task.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor, nn

from bilm.devices import autocast, describe_device, make_scaler, resolve_device, resolve_precision
from bilm.files import write_json, write_text
from experiments import health
from experiments.checkpoint import (
    CHECKPOINT,
    StaleCheckpoint,
    Weights,
    load_checkpoint,
    save_checkpoint,
)
from experiments.real_sets import data_path, portable_source
from experiments.represent import build_spec_representation, finetuned_bilm, make_represent
from experiments.spec import RunSpec
from experiments.wandb_sink import NullSink, Sink, WandbOptions, WandbSink
from tasks.common.inject import Injector, mix_penalty
from tasks.common.progress import bars_enabled
from tasks.core import (
    Represent,
    TaskRecipe,
    TaskSpec,
    TrainConfig,
    UnitStatistics,
    batch_plan,
    loss_of,
)
from tasks.registry import get_task
from tasks.representations import Representation

logger = logging.getLogger(__name__)

MAX_BAD_STEPS = 10  # consecutive non-finite losses before the run is declared diverged
LOSS_LOG_EVERY = 50  # optimizer steps between train-loss points sent to W&B
#: Name of the per-evaluation dev unit statistics (RunOptions.epoch_units): PREFIX + step + .json
EPOCH_UNITS_PREFIX = "units-dev-step"


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (``ru_maxrss``: KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
            :func:`tasks.common.feature_cache.parse_budget` reads it: ``"20GB"``, ``"500MB"``,
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


@dataclass
class LoopState:
    """Everything the loop carries between steps. All but :attr:`best_weights` is JSON, so a
    checkpoint stores it exactly (the best weights go beside it, as tensors)."""

    epoch: int = 0  # completed epochs
    batch: int = 0  # batches done in the current epoch
    step: int = 0  # optimizer steps
    lr: float = 0.0
    best: float = -math.inf  # best selection value, sign-adjusted (higher is better)
    best_epoch: int = -1
    best_step: int = -1
    best_metrics: dict[str, float] = field(default_factory=dict)
    bad_evals: int = 0  # evaluations since the last improvement (early stopping)
    plateau_evals: int = 0  # the same, reset at each plateau decay
    skipped: int = 0  # non-finite losses skipped
    bad_in_a_row: int = 0
    losses: list[float] = field(default_factory=list)  # since the last evaluation
    # process CPU and wall seconds of the training batches (collate, step) since the last
    # evaluation: the training pass alone, without set-up and evaluation
    train_cpu_s: float = 0.0
    train_s: float = 0.0
    dead_warned: bool = False  # the "looks dead" warning was printed
    log: list[dict[str, Any]] = field(default_factory=list)
    # the selected weights (EMA weights when EMA is on); None before the first evaluation
    best_weights: Weights | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> str:
        """The state without :attr:`best_weights`, as JSON."""
        fields = dataclasses.fields(self)
        return json.dumps(
            {f.name: getattr(self, f.name) for f in fields if f.name != "best_weights"}
        )

    @classmethod
    def from_json(cls, text: str, best_weights: Weights | None = None) -> LoopState:
        """The state :meth:`to_json` wrote, with ``best_weights`` (keys of fields this code
        no longer has are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        data = {k: v for k, v in json.loads(text).items() if k in names}
        return cls(**data, best_weights=best_weights)


@dataclass
class TrainOutcome:
    """What a finished run reports.

    Attributes:
        metrics: ``<split>_<metric>`` of the selected weights for every scored split, natural units.
        best_epoch: epoch of the selected evaluation (1-based).
        best_step: optimizer step of the selected evaluation.
        epochs_run: epochs completed.
        layer_weights: ``softmax(w)`` per site at the end.
        gammas: γ per site at the end.
        log: one line per evaluation.
        seconds: wall time of this call.
        skipped_steps: non-finite losses skipped.
        representation_fingerprint: identifies the representation's weights.
        device: the device that ran (with the precision when not fp32).
        predictions: split → file with the predictions in the task's official format.
        counts: examples per split.
        finetune_ppl: held-out perplexity of a task-tuned biLM before and after fine-tuning.
        health: whether the run is dead, and why (:mod:`experiments.health`).
    """

    metrics: dict[str, float]
    best_epoch: int
    best_step: int
    epochs_run: int
    layer_weights: dict[str, list[float]]
    gammas: dict[str, float]
    log: list[dict[str, Any]]
    seconds: float
    skipped_steps: int
    representation_fingerprint: str
    device: str
    predictions: dict[str, Path]
    counts: dict[str, int]
    finetune_ppl: dict[str, float] = field(default_factory=dict)
    health: health.Health = field(default_factory=health.Health)


@dataclass
class _Run:
    """The objects of one run (built by :func:`_set_up`)."""

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
    identity: str = (
        ""  # the run identity's reuse fields as JSON: a checkpoint resumes only under it
    )
    #: each optimizer step's total gradient norm before clipping, since the last evaluation,
    #: on the device (read once per evaluation: no sync per step); empty at every checkpoint
    grad_norms: list[Tensor] = field(default_factory=list)


def seed_everything(seed: int) -> None:
    """Python, numpy and torch RNGs (CPU runs are then deterministic for a fixed thread count)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


class EMA:
    """Exponential moving average of the trainable weights, used for evaluation (document-qa)."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        self.decay = decay
        self.shadow = {
            n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad
        }

    def update(self, model: nn.Module) -> None:
        """One averaging step towards the model's current weights."""
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in self.shadow:
                    self.shadow[n].mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)

    def swap(self, model: nn.Module) -> None:
        """Exchange the model's weights with the averages (call twice to restore)."""
        with torch.no_grad():
            for n, p in model.named_parameters():
                if n in self.shadow:
                    tmp = p.detach().clone()
                    p.copy_(self.shadow[n])
                    self.shadow[n] = tmp

    @contextlib.contextmanager
    def applied(self, model: nn.Module) -> Iterator[None]:
        """The averaged weights inside the block, the trained ones after it."""
        self.swap(model)
        try:
            yield
        finally:
            self.swap(model)


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


def build_optimizer(
    config: TrainConfig, parameters: Sequence[nn.Parameter]
) -> torch.optim.Optimizer:
    """The optimizer a :class:`~tasks.core.TrainConfig` declares."""
    o = config.optimizer
    if o.name == "adam":
        return torch.optim.Adam(
            parameters, lr=o.lr, betas=o.betas, eps=o.eps, weight_decay=o.weight_decay
        )
    if o.name == "adadelta":
        return torch.optim.Adadelta(
            parameters, lr=o.lr, rho=o.rho, eps=o.eps, weight_decay=o.weight_decay
        )
    if o.name == "adagrad":
        return torch.optim.Adagrad(parameters, lr=o.lr, eps=o.eps, weight_decay=o.weight_decay)
    return torch.optim.SGD(parameters, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)


def training_subset(examples: Sequence[Any], fraction: float) -> list[Any]:
    """``fraction`` of ``examples`` (at least one), drawn by a fixed permutation and kept in
    their original order. The permutation does not depend on the run's seed, so every system
    and seed trains on the same subset, and the subsets of growing fractions are nested
    (paper §5.4, Figure 1)."""
    keep = max(1, round(fraction * len(examples)))
    order = np.random.default_rng(0).permutation(len(examples))[:keep]  # (keep,)
    return [examples[i] for i in sorted(order.tolist())]


# ------------------------------------------------------------------------------------ set-up
def _set_up(spec: RunSpec, options: RunOptions, identity: str = "") -> _Run:
    """Every object of the run, in the order that fixes its random numbers: the data, the
    representation, then (reseeded) the model, then the optimizer."""
    task = get_task(spec.task)
    if spec.task_version != task.version:
        raise ValueError(
            f"spec is for {spec.task} v{spec.task_version}, the code is v{task.version}"
        )
    task.check_preset(spec.preset)
    device = resolve_device(options.device)
    precision = resolve_precision(device, options.precision)
    if not 0.0 <= options.max_skipped <= 1.0:
        raise ValueError(f"max_skipped must be in [0, 1], got {options.max_skipped}")
    seed_everything(spec.seed)
    recipe, train_config, splits = _setup_data(
        spec, task, options.max_skipped, quiet=not (options.eval_lines or options.progress)
    )
    work = Path(options.work_root) / spec.task / spec.run_id
    work.mkdir(parents=True, exist_ok=True)
    representation, represent, finetune_ppl = _setup_representation(
        spec, recipe, splits, options, device
    )
    injector, model = _setup_model(spec, recipe, representation, device)
    trainable, optimizer, ema = _setup_optimizer(train_config, model)
    return _Run(
        spec=spec,
        task=task,
        recipe=recipe,
        train_config=train_config,
        splits=splits,
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
        identity=identity,
    )


def _setup_data(
    spec: RunSpec, task: TaskSpec, max_skipped: float, quiet: bool = True
) -> tuple[TaskRecipe, TrainConfig, dict[str, list[Any]]]:
    """The task's recipe, its training configuration (the spec's epoch cap applied) and the
    splits the run uses (``--limit``, the training fraction), each checked to be usable."""
    from tasks.common.io import require_usable

    recipe = task.setup(spec.preset, list(spec.overrides), data_path(spec.data))
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
    if not quiet:
        _report_reads(spec, recipe, wanted)
    splits = {s: list(recipe.splits[s])[: spec.limit] for s in wanted}
    if spec.train_fraction is not None:
        splits["train"] = training_subset(splits["train"], spec.train_fraction)
    for split in wanted:  # no training or scoring on nothing, or on a mostly skipped file
        require_usable(split, len(splits[split]), recipe.read_stats.get(split), max_skipped)
    return recipe, train_config, splits


def _report_reads(spec: RunSpec, recipe: TaskRecipe, splits: Sequence[str]) -> None:
    """What reading the data kept and skipped, one stderr line per split, as soon as the task
    has read it (before the checks that may refuse a split), e.g. ``  RUN read train: 7,007
    kept, 44 skipped (longer than max_tokens 44); from F``. For a bundled demo set only when
    its reader skipped something (its counts are otherwise the committed ones)."""
    stats = {s: recipe.read_stats[s] for s in splits if s in recipe.read_stats}
    if spec.data == "demo" and not any(st.skipped for st in stats.values()):
        return
    for split, split_stats in stats.items():
        print(f"  {spec.run_id} read {split_stats.summary(split)}", file=sys.stderr, flush=True)


def _setup_representation(
    spec: RunSpec,
    recipe: TaskRecipe,
    splits: Mapping[str, Sequence[Any]],
    options: RunOptions,
    device: torch.device,
) -> tuple[Representation, Represent, dict[str, float]]:
    """The spec's representation (first fine-tuned on the task's text when its configuration
    says ``finetune``), the function batches read it through (the feature cache of every
    sequence of the run's splits, when frozen), and the fine-tuning perplexities."""
    config = dict(spec.representation_config)
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
    representation = build_spec_representation(spec, config)
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
    config: TrainConfig, model: nn.Module
) -> tuple[list[nn.Parameter], torch.optim.Optimizer, EMA | None]:
    """The trainable parameters, their optimizer and (when configured) their EMA."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    ema = EMA(model, config.ema) if config.ema else None
    return trainable, build_optimizer(config, trainable), ema


def _forward(run: _Run) -> Callable[[Any], Any]:
    """The callable a recipe predicts with: batch to device, autocast, no gradients."""

    def forward(batch: Any) -> Any:
        with torch.no_grad(), autocast(run.device, run.precision):
            return run.model(to_device(batch, run.device))

    return forward


# ------------------------------------------------------------------------------ checkpoints
def _config_json(run: _Run) -> str:
    """The task and training configuration a checkpoint was written under."""
    return json.dumps(
        {"task": _plain(run.recipe.config), "train": _plain(run.train_config)},
        sort_keys=True,
        default=str,
    )


def _save(run: _Run, state: LoopState) -> None:
    """The run's checkpoint (:func:`experiments.checkpoint.save_checkpoint`)."""
    save_checkpoint(
        run.work / CHECKPOINT,
        run,
        state=state.to_json(),
        best_weights=state.best_weights,
        config=_config_json(run),
        identity=run.identity,
    )


def _load(run: _Run) -> LoopState | None:
    """The loop state of the run's checkpoint, the run's objects restored from it; ``None``
    when there is none, or it was written under other inputs (the run starts afresh)."""
    path = run.work / CHECKPOINT
    if not path.exists():
        return None
    try:
        restored = load_checkpoint(path, run, config=_config_json(run), identity=run.identity)
    except StaleCheckpoint as stale:
        logger.warning("%s; starting afresh", stale)
        return None
    state = LoopState.from_json(restored.state, restored.best_weights)
    logger.info("resumed %s at epoch %d, step %d", run.work, state.epoch, state.step)
    return state


# ----------------------------------------------------------------------------- one step
def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _train_batch(run: _Run, state: LoopState, batch: Any) -> None:
    """One optimizer step on ``batch`` (skipped, and counted, when the loss is not finite)."""
    cfg = run.train_config
    with autocast(run.device, run.precision):
        output = run.model(to_device(batch, run.device))
        loss = loss_of(output) + mix_penalty(run.model).to(run.device)
    if not torch.isfinite(loss):
        state.skipped += 1
        state.bad_in_a_row += 1
        if state.bad_in_a_row >= MAX_BAD_STEPS:
            raise FloatingPointError(
                f"{MAX_BAD_STEPS} consecutive non-finite losses (epoch {state.epoch + 1}, "
                f"step {state.step})"
            )
        return
    state.bad_in_a_row = 0
    run.optimizer.zero_grad(set_to_none=True)
    run.scaler.scale(loss).backward()  # the scaler is a pass-through unless fp16 on CUDA
    run.scaler.unscale_(run.optimizer)  # clipping sees the true gradients (fp16 too)
    norm = None  # the total gradient norm before any clipping (experiments.health)
    if cfg.clip_value is not None:  # element-wise first, as allennlp's grad_clipping
        norm = _grad_norm(run)
        nn.utils.clip_grad_value_(run.trainable, cfg.clip_value)
    if cfg.clip_norm:  # returns the norm it clipped from
        clipped_from = nn.utils.clip_grad_norm_(run.trainable, cfg.clip_norm)
        norm = clipped_from if norm is None else norm
    run.grad_norms.append((_grad_norm(run) if norm is None else norm).detach())
    run.scaler.step(run.optimizer)
    run.scaler.update()
    if run.ema is not None:
        run.ema.update(run.model)
    state.step += 1
    state.losses.append(float(loss.detach()))
    schedule = cfg.schedule
    if schedule.kind == "exponential" and state.step % schedule.every == 0:
        state.lr = max(schedule.min_lr, state.lr * schedule.factor)
        _set_lr(run.optimizer, state.lr)


def _grad_norm(run: _Run) -> Tensor:
    """The total gradient norm of the trainable parameters, a 0-d tensor on the device (0
    when no gradient reached any)."""
    grads = [p.grad for p in run.trainable if p.grad is not None]
    return nn.utils.get_total_norm(grads) if grads else torch.zeros((), device=run.device)


def _grad_norm_stats(run: _Run) -> tuple[float | None, float | None]:
    """Mean and max of the interval's finite step norms (``None`` without any: no step, or
    only steps the grad scaler skipped), and the interval reset."""
    if not run.grad_norms:
        return None, None
    norms = torch.stack(run.grad_norms).double().cpu()  # (steps,)
    run.grad_norms.clear()
    finite = norms[torch.isfinite(norms)]
    if finite.numel() == 0:
        return None, None
    return float(finite.mean()), float(finite.max())


# ---------------------------------------------------------------------- evaluate and select
def _score(run: _Run, split: str) -> tuple[dict[str, float], Any]:
    """The official-parity metrics of ``split`` and the predictions they score."""
    run.model.eval()
    examples = run.splits[split]
    predictions = run.recipe.predict(_forward(run), examples, run.represent)
    return run.recipe.score(predictions, examples), predictions


def _evaluate(run: _Run, state: LoopState, sink: Sink, started: float) -> None:
    """Score dev with the EMA weights, select (early stopping, plateau schedule), log the
    evaluation, then save the checkpoint."""
    dev, weights, values, units = _score_dev(run)
    grad_mean, grad_max = _grad_norm_stats(run)
    record: dict[str, Any] = {
        "epoch": state.epoch + (1 if state.batch else 0),
        "step": state.step,
        "train_loss": float(np.mean(state.losses)) if state.losses else None,
        "lr": state.lr,
        **{f"dev_{k}": v for k, v in dev.items()},
        "dev_prediction_values": values,  # distinct predicted values: 1 = constant
        "grad_norm_mean": grad_mean,
        "grad_norm_max": grad_max,
        "layer_weights": run.injector.layer_weights(),
        "gammas": run.injector.gammas(),
        "seconds": time.perf_counter() - started,
        "train_cpu_s": state.train_cpu_s,  # the training batches since the last evaluation
        "train_s": state.train_s,
        "peak_rss_mb": peak_rss_mb(),
    }
    if spread := run.injector.layer_weights_std():  # dynamic mixes: over dev's real tokens
        record["layer_weights_std"] = spread
    if units is not None:
        name = f"{EPOCH_UNITS_PREFIX}{state.step}.json"
        write_json(run.work / name, {"ids": list(units.ids), "rows": [list(r) for r in units.rows]})
        record["units_file"] = name
    state.losses = []
    state.train_cpu_s = state.train_s = 0.0
    state.log.append(record)
    numbers = {k: v for k, v in record.items() if isinstance(v, int | float) and k != "seconds"}
    sink.log(numbers, step=state.step)
    sink.log_mix(record["layer_weights"], record["gammas"], step=state.step)
    if _select(run, state, dev, record["epoch"]):
        state.best_weights = weights
    if run.eval_lines:
        _print_evaluation(run, state, dev[run.task.metric.key], record)
    _warn_if_dead(run, state)
    _save(run, state)


def _health(run: _Run, state: LoopState) -> health.Health:
    """The run's health so far (:func:`experiments.health.diagnose` on its log)."""
    metric = run.task.metric
    return health.diagnose(state.log, metric.key, metric.higher_is_better, state.best_step)


def _warn_if_dead(run: _Run, state: LoopState) -> None:
    """One stderr line, the first time the run looks dead (it may still recover: the record
    is flagged by the verdict at the end)."""
    if state.dead_warned:
        return
    verdict = _health(run, state)
    if verdict.dead:
        state.dead_warned = True
        spec = run.spec
        print(
            f"  warning: run {spec.run_id} ({spec.task} {spec.representation} seed={spec.seed}) "
            f"looks dead at epoch {state.log[-1]['epoch']}: {'; '.join(verdict.reasons)}",
            file=sys.stderr,
            flush=True,
        )


def _score_dev(run: _Run) -> tuple[dict[str, float], Weights, int, UnitStatistics | None]:
    """The dev metrics of the weights evaluated (the EMA weights when EMA is on), those
    weights (frozen parameters never change: the live tensor, not a copy, e.g. a GloVe matrix),
    the number of distinct values they predict (:func:`health.prediction_values`) and, with
    :attr:`RunOptions.epoch_units`, the per-unit statistics of the predictions."""
    context = run.ema.applied(run.model) if run.ema is not None else contextlib.nullcontext()
    with context:
        dev, predictions = _score(run, "dev")
        values = health.prediction_values(predictions)
        units = (
            run.recipe.unit_statistics(predictions, run.splits["dev"]) if run.epoch_units else None
        )
        weights = {
            k: v.detach()
            if isinstance(v, nn.Parameter) and not v.requires_grad
            else v.detach().clone()
            for k, v in run.model.state_dict(keep_vars=True).items()
        }
    run.model.train()
    if run.task.metric.key not in dev:
        raise KeyError(
            f"the scorer returned {sorted(dev)}, not the selection metric {run.task.metric.key!r}"
        )
    return dev, weights, values, units


def _select(run: _Run, state: LoopState, dev: Mapping[str, float], epoch: int) -> bool:
    """Model selection on the dev metrics: whether they are the best so far; otherwise count
    the evaluation against patience and the plateau schedule (lowering the learning rate)."""
    metric = run.task.metric
    value = (1.0 if metric.higher_is_better else -1.0) * dev[metric.key]
    if value > state.best:
        state.best, state.best_epoch, state.best_step = value, epoch, state.step
        state.best_metrics = dict(dev)
        state.bad_evals = state.plateau_evals = 0
        return True
    state.bad_evals += 1
    state.plateau_evals += 1
    schedule = run.train_config.schedule
    if schedule.kind == "plateau" and state.plateau_evals > schedule.patience:
        state.lr = max(schedule.min_lr, state.lr * schedule.factor)
        _set_lr(run.optimizer, state.lr)
        state.plateau_evals = 0
    return False


def _print_evaluation(run: _Run, state: LoopState, value: float, record: Mapping[str, Any]) -> None:
    """One stderr line: run, epoch, dev metric, best so far, seconds (``eval_lines``)."""
    metric, spec = run.task.metric, run.spec
    best = metric.display((1.0 if metric.higher_is_better else -1.0) * state.best)
    print(
        f"  {spec.run_id} {spec.task} {spec.representation} seed={spec.seed}"
        f" epoch {record['epoch']}/{run.train_config.epochs}: dev {metric.key} "
        f"{metric.display(value)} (best {best} at epoch {state.best_epoch}) "
        f"{record['seconds']:.0f} s",
        file=sys.stderr,
        flush=True,
    )


def _stopped_early(run: _Run, state: LoopState) -> bool:
    patience = run.train_config.patience
    return patience is not None and state.bad_evals >= patience


def _evaluation_due(config: TrainConfig, state: LoopState, end_of_epoch: bool) -> bool:
    """Every ``eval_every`` optimizer steps, else at the end of every epoch."""
    if config.eval_every is not None:
        return state.step % config.eval_every == 0
    return end_of_epoch


# ----------------------------------------------------------------------------------- the loop
def train(
    spec: RunSpec,
    options: RunOptions = RunOptions(),
    sink: Sink | None = None,
    stop_after_evals: int | None = None,
    identity: Mapping[str, Any] | None = None,
) -> TrainOutcome:
    """Train one spec (resuming from its checkpoint) and score the selected weights.

    Args:
        spec: what to run.
        options: how to run it (device, precision, caches, progress, W&B).
        sink: where metrics go besides the log (default: W&B when ``options.wandb``, else none).
        stop_after_evals: stop after this many evaluations in this call (resume tests); the
            outcome then describes the run so far.
        identity: the run's identity (:meth:`experiments.identity.RunIdentity.to_dict`): a
            checkpoint resumes only when it was written under the same reuse fields, so a stale
            run trained again starts afresh. ``None``: not checked (checkpoints without one).
    """
    started = time.perf_counter()
    _set_threads(options.threads)
    run = _set_up(spec, options, _reuse_key(identity))
    cfg, train_split = run.train_config, run.splits["train"]
    state = (None if options.fresh else _load(run)) or LoopState(lr=cfg.optimizer.lr)
    sink = _make_sink(run, options) if sink is None else sink
    sizes = [run.recipe.size(e) for e in train_split]
    evals = 0
    try:
        while state.epoch < cfg.epochs and not _stopped_early(run, state):
            plan = batch_plan(sizes, cfg, epoch_seed(spec.seed, state.epoch))
            run.model.train()
            bar = _progress_bar(options.progress, spec.task, state, cfg.epochs, len(plan))
            for indices in plan[state.batch :]:
                cpu, wall = time.process_time(), time.perf_counter()
                batch = run.recipe.collate([train_split[i] for i in indices], run.represent)
                _train_batch(run, state, batch)
                state.train_cpu_s += time.process_time() - cpu
                state.train_s += time.perf_counter() - wall
                state.batch += 1
                _report_step(state, sink, bar)
                end_of_epoch = state.batch == len(plan)
                if end_of_epoch:
                    state.epoch, state.batch = state.epoch + 1, 0
                if _evaluation_due(cfg, state, end_of_epoch):
                    _evaluate(run, state, sink, started)
                    evals += 1
                    if _stopped_early(run, state) or evals == stop_after_evals:
                        break
            bar.close()
            if evals == stop_after_evals:
                break
        finished = state.epoch >= cfg.epochs or _stopped_early(run, state)
        if finished and (not state.log or state.log[-1]["step"] != state.step):
            _evaluate(run, state, sink, started)  # the steps since the last evaluation
        outcome = _finish(run, state, started)
    except BaseException:
        sink.finish({})
        raise
    sink.finish({**outcome.metrics, "best_epoch": outcome.best_epoch})
    _link_wandb_run(run, sink, outcome)
    return outcome


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed of the batch plan of epoch ``epoch`` (0-based) of a run seeded ``seed``: the
    batch order and, with ``bucket_noise``, the batches' membership depend on it alone, so a
    checkpoint needs no plan (distinct for every pair while ``epoch`` < 10,007)."""
    return seed * 10_007 + epoch


def _set_threads(threads: int | None) -> None:
    """CPU intra-op threads of this run (:attr:`RunOptions.threads`)."""
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(threads)


def _reuse_key(identity: Mapping[str, Any] | None) -> str:
    """The run identity's reuse fields as JSON (``""``: no identity checked)."""
    if identity is None:
        return ""
    from experiments.identity import REUSE_FIELDS

    return json.dumps({k: identity.get(k) for k in REUSE_FIELDS}, sort_keys=True)


def _report_step(state: LoopState, sink: Sink, bar: _Bar) -> None:
    """The running training loss to W&B (every :data:`LOSS_LOG_EVERY` steps) and the bar."""
    if state.losses and state.step % LOSS_LOG_EVERY == 0:
        sink.log({"train_loss_running": state.losses[-1], "lr": state.lr}, state.step)
    bar.update(1)
    if state.losses:
        bar.set_postfix(loss=f"{np.mean(state.losses[-50:]):.3f}")


class _Bar(Protocol):
    """The part of tqdm's interface the loop uses."""

    def update(self, n: int = 1) -> Any: ...

    def set_postfix(self, **values: Any) -> Any: ...

    def close(self) -> Any: ...


class _NullBar:
    """A progress bar that shows nothing (``RunOptions.progress`` off, or no terminal)."""

    def update(self, n: int = 1) -> None:
        """Nothing to advance."""

    def set_postfix(self, **values: Any) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def _progress_bar(progress: bool, task: str, state: LoopState, epochs: int, total: int) -> _Bar:
    """A tqdm bar over the batches of the current epoch (starting at the batches done); none
    unless ``progress`` and stderr is a terminal (a log file gets no carriage returns)."""
    if not bars_enabled(progress):
        return _NullBar()
    from tqdm.auto import tqdm

    return tqdm(
        desc=f"{task} epoch {state.epoch + 1}/{epochs}",
        total=total,
        initial=state.batch,
        leave=False,
        dynamic_ncols=True,
    )


# ------------------------------------------------------------------------------- the outcome
def _finish(run: _Run, state: LoopState, started: float) -> TrainOutcome:
    """Load the selected weights, score every requested split, write their predictions."""
    if state.best_weights is not None:
        run.model.load_state_dict(state.best_weights)
    metrics, written = _score_splits(run)
    for record in state.log:  # the per-evaluation unit statistics (RunOptions.epoch_units)
        if "units_file" in record and (run.work / record["units_file"]).is_file():
            written[record["units_file"]] = run.work / record["units_file"]
    dev_now = {k[4:]: v for k, v in metrics.items() if k.startswith("dev_")}
    if state.best_metrics and dev_now != state.best_metrics:
        logger.warning(
            "dev metrics on reload %s differ from selection %s", dev_now, state.best_metrics
        )
    return TrainOutcome(
        metrics=metrics,
        best_epoch=state.best_epoch,
        best_step=state.best_step,
        epochs_run=state.epoch,
        layer_weights=run.injector.layer_weights(),
        gammas=run.injector.gammas(),
        log=list(state.log),
        seconds=time.perf_counter() - started,
        skipped_steps=state.skipped,
        representation_fingerprint=run.representation.fingerprint(),
        device=_device_label(run),
        predictions=written,
        counts={s: len(v) for s, v in run.splits.items()},
        finetune_ppl=dict(run.finetune_ppl),
        health=_health(run, state),
    )


def _score_splits(run: _Run) -> tuple[dict[str, float], dict[str, Path]]:
    """``<split>_<metric>`` of every requested split, and the files written: the predictions
    in the official format, the per-unit statistics (paired significance tests) and the
    readers' skip counts of every split (shown under the run's tables)."""
    metrics: dict[str, float] = {}
    written: dict[str, Path] = {}
    for split in run.spec.eval_splits:
        scores, predictions = _score(run, split)
        metrics.update({f"{split}_{k}": v for k, v in scores.items()})
        examples = run.splits[split]
        path = run.work / f"predictions-{split}"
        written[split] = run.recipe.write_predictions(predictions, examples, path)
        units = run.recipe.unit_statistics(predictions, examples)
        written[f"units-{split}"] = write_json(
            run.work / f"units-{split}.json",
            {"ids": list(units.ids), "rows": [list(r) for r in units.rows]},
        )
    if run.recipe.read_stats:
        stats = {s: st.as_dict() for s, st in run.recipe.read_stats.items()}
        for entry in stats.values():  # no machine's absolute paths in a record
            if "source" in entry:
                entry["source"] = portable_source(str(entry["source"]))
        written["read-stats"] = write_text(
            run.work / "read-stats.json", json.dumps(stats, indent=1)
        )
    return metrics, written


def _device_label(run: _Run) -> str:
    """The device that ran, with the CPU thread count and a precision other than fp32."""
    label = describe_device(run.device)
    if run.device.type == "cpu":
        threads = torch.get_num_threads()
        label += f", {threads} thread{'s' if threads > 1 else ''}"
    if run.precision != "fp32":
        label += f", {run.precision}"
    return label


def _make_sink(run: _Run, options: RunOptions) -> Sink:
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


def _link_wandb_run(run: _Run, sink: Sink, outcome: TrainOutcome) -> None:
    """The W&B run's address, stored with the record (the HTML report links it)."""
    url = getattr(getattr(sink, "run", None), "url", None)  # None for offline W&B runs
    if isinstance(url, str) and url:
        outcome.predictions["wandb"] = write_json(run.work / "wandb.json", {"url": url})


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    return value


# ------------------------------------------------------------------------------ RunSpec bridge
def run_spec(spec: RunSpec, options: RunOptions = RunOptions()) -> Any:
    """Train one :class:`experiments.spec.RunSpec` and return its :class:`RunRecord`.

    ``spec.data`` is ``"demo"`` (the task's bundled demo set) or a data folder. The work folder
    ``options.work_root/<task>/<run_id>`` holds the checkpoint, so a killed run resumes. The
    record's provenance carries the run's :class:`~experiments.identity.RunIdentity` and
    :class:`~experiments.identity.CodeVersion`.
    """
    from experiments.identity import code_version, run_identity
    from experiments.store import RunRecord, collect_env

    started = time.time()
    # what the run is made of, fingerprinted before it starts (the driver's reuse check
    # computes the same identity from the same options)
    identity = run_identity(spec, options.device, options.precision, options.threads)
    outcome = train(spec, options, identity=identity.to_dict())
    provenance = dataclasses.replace(
        collect_env(
            device=outcome.device,
            representation_fingerprint=outcome.representation_fingerprint,
            data_fingerprint=identity.data,
        ),
        identity=identity.to_dict(),
        code=code_version().to_dict(),
    )
    metrics = {
        **outcome.metrics,
        **outcome.finetune_ppl,
        "best_epoch": float(outcome.best_epoch),
        "best_step": float(outcome.best_step),
        "epochs_run": float(outcome.epochs_run),
        health.DEAD_KEY: float(outcome.health.dead),
    }
    return RunRecord(
        spec=spec,
        metrics=metrics,
        provenance=provenance,
        log=tuple(outcome.log),
        timings={
            "started_unix": started,
            "wall_s": outcome.seconds,
            "skipped_steps": float(outcome.skipped_steps),
        },
        attachments={
            **{p.name: p.read_text(encoding="utf-8") for p in outcome.predictions.values()},
            health.HEALTH_FILE: health.health_json(outcome.health),
        },
    )


__all__ = [
    "CHECKPOINT",
    "EMA",
    "EPOCH_UNITS_PREFIX",
    "LoopState",
    "RunOptions",
    "TrainOutcome",
    "build_optimizer",
    "epoch_seed",
    "make_represent",
    "peak_rss_mb",
    "run_spec",
    "seed_everything",
    "to_device",
    "train",
    "training_subset",
]
