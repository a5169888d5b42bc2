"""The one training loop for every task.

``train(spec, options)`` reads like a small training script, in named steps:

1. :func:`_set_up`: the task's recipe and :class:`~tasks.core.TrainConfig`, the representation,
   its injector and feature cache, the model, optimizer, EMA, on the requested device;
2. :func:`_train_batch`: forward (autocast), loss + λ penalty of the scalar mixes
   (:func:`tasks.common.inject.mix_penalty`), NaN/inf guard, backward (scaled in fp16), clip,
   step, EMA, the per-step learning-rate schedule;
3. :func:`_evaluate_and_select`: after every epoch or every ``eval_every`` steps, the dev metric
   with the EMA weights (the task's official-parity scorer), model selection, early stopping, the
   plateau schedule, log line, W&B;
4. :func:`_save` / :func:`_load`: an atomic checkpoint after every evaluation, holding model,
   optimizer, EMA, best weights, loop state, grad scaler and every RNG state, so a run killed at
   any point resumes from its last evaluation and ends with identical metrics (batches are
   planned from ``(seed, epoch)``, and a resumed epoch skips the batches already done);
5. :func:`_finish`: the selected weights score every requested split (test only when asked)
   and write their predictions in the task's official format.

Frozen representations are read from the feature cache, so sweeps over λ / LastOnly / sites /
seeds never rerun the biLM. Nothing here names a task.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import logging
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bilm.devices import autocast, describe_device, make_scaler, resolve_device, resolve_precision
from bilm.pretrain import atomic_save
from experiments.spec import RunSpec
from experiments.wandb_sink import NullSink, Sink, WandbOptions, WandbSink
from tasks.common.feature_cache import FeatureCache
from tasks.common.inject import Injector, mix_penalty
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
from tasks.representations import REPRESENTATIONS, Layers, Representation, build_representation

logger = logging.getLogger(__name__)

MAX_BAD_STEPS = 10  # consecutive non-finite losses before the run is declared diverged
LOSS_LOG_EVERY = 50  # optimizer steps between train-loss points sent to W&B
CHECKPOINT = "checkpoint.pt"


@dataclass(frozen=True)
class RunOptions:
    """How a run is executed; none of it is part of the run id (the device and precision are
    recorded in the provenance).

    Attributes:
        work_root: checkpoints and logs go to ``work_root/<task>/<run_id>/``.
        cache_dir: feature cache of frozen representations (``None``: no cache).
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:N``.
        precision: ``fp32`` | ``bf16`` | ``fp16`` (autocast; a grad scaler with fp16 on CUDA).
        progress: tqdm bars.
        wandb: log to W&B (offline unless ``WANDB_MODE`` says otherwise).
        threads: CPU intra-op threads of this run (``torch.set_num_threads``); ``None`` keeps
            torch's default (the machine's cores). Float summation order, hence a CPU run's
            trajectory, depends on it: a fixed count makes a CPU result independent of the
            machine's core count (the CLI defaults to 1 and runs several at once instead).
        eval_lines: print one line per evaluation to stderr (run id, epoch, dev metric, best,
            seconds): the progress report of runs in worker processes, where bars interleave.
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


@dataclass
class LoopState:
    """Everything the loop carries between steps; JSON, so a checkpoint stores it exactly."""

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
    log: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> LoopState:
        return cls(**json.loads(text))


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


@dataclass
class _Run:
    """The objects of one run (built by :func:`_set_up`)."""

    spec: RunSpec
    task: TaskSpec
    recipe: TaskRecipe
    train_config: TrainConfig
    splits: dict[str, Sequence[Any]]
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
    identity: str = (
        ""  # the run identity's reuse fields as JSON: a checkpoint resumes only under it
    )


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


def make_represent(
    representation: Representation | None,
    sequences: Sequence[Sequence[str]],
    cache_dir: Path | None,
    progress: bool,
    device: torch.device | None = None,
    cache_budget: str | int | None = None,
) -> Represent:
    """A function from token sequences to layers: cache lookups for frozen representations.

    Cached layers come back on the CPU (the runner moves whole batches); a live representation
    gets its features on ``device`` (where the injector keeps the representation). The cache
    entry stays open (never evicted) while the returned function lives; ``cache_budget`` is
    :attr:`RunOptions.cache_budget`.
    """
    if representation is None or representation.num_layers == 0:
        return lambda seqs: None
    if cache_dir is not None and not representation.trainable:
        unique = list(dict.fromkeys(tuple(s) for s in sequences))
        cache = FeatureCache.build(
            representation, unique, cache_dir, progress=progress, budget=cache_budget
        )
        index = {s: i for i, s in enumerate(unique)}

        def cached(seqs: Sequence[Sequence[str]]) -> Layers:
            return cache.lookup([index[tuple(s)] for s in seqs])

        return cached

    def live(seqs: Sequence[Sequence[str]]) -> Layers:
        features = representation.featurize(seqs)
        if device is not None:
            features = {k: v.to(device) for k, v in features.items()}
        return representation(features)

    return live


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


def finetuned_bilm(
    config: dict[str, Any],
    train_text: Sequence[Sequence[str]],
    valid_text: Sequence[Sequence[str]],
    options: RunOptions,
) -> tuple[dict[str, Any], dict[str, float]]:
    """The task-tuned biLM of paper §3.4 / A.1: the configured biLM fine-tuned as a language
    model on the task's training text (held-out: its dev text), then frozen for the task.

    Cached by biLM configuration + text fingerprints under ``$ELMO_BENCH_CACHE/finetuned`` (or
    ``~/.cache/elmo-bench/finetuned``); resumable (:func:`bilm.finetune.finetune`).

    Returns:
        The representation configuration of the fine-tuned checkpoint, and the held-out
        perplexities ``bilm_ppl_before`` / ``bilm_ppl_after`` (average of both directions).
    """
    import hashlib

    from bilm.finetune import finetune
    from bilm.pretrained import cache_root, published_files
    from tasks.common.feature_cache import data_fingerprint

    base = {k: v for k, v in config.items() if k != "finetune"}
    epochs = float(config["finetune"]) if not isinstance(config["finetune"], bool) else 1.0
    if "published" in base:
        base["options"], base["weights"] = map(str, published_files(base.pop("published")))
    key = json.dumps(
        [base, epochs, data_fingerprint(train_text), data_fingerprint(valid_text)], sort_keys=True
    )
    folder = cache_root() / "finetuned" / hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    # distinct sequences only: a paragraph shared by several questions is read once
    train_text = list(dict.fromkeys(tuple(t) for t in train_text))
    valid_text = list(dict.fromkeys(tuple(t) for t in valid_text))
    for name, text in (("train.txt", train_text), ("valid.txt", valid_text)):
        path = folder / name
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(" ".join(s) + "\n" for s in text if s), encoding="utf-8")
            tmp.replace(path)
        files.append(path)
    result = finetune(
        [files[0]],
        files[1],
        folder / "run",
        checkpoint=base.get("checkpoint"),
        options=base.get("options"),
        weights=base.get("weights"),
        epochs=epochs,
        device=options.device,
        precision=options.precision,
        progress=options.progress,
    )
    tuned = {k: v for k, v in base.items() if k not in ("checkpoint", "options", "weights")}
    tuned["checkpoint"] = str(result.checkpoint)
    ppl = {"bilm_ppl_before": result.before["average"], "bilm_ppl_after": result.after["average"]}
    logger.info("fine-tuned biLM %s: held-out perplexity %s", result.checkpoint, ppl)
    return tuned, ppl


def build_spec_representation(
    spec: RunSpec, config: dict[str, Any] | None = None
) -> Representation:
    """The spec's representation; its state policy is the spec's ``state`` (the one source)."""
    config = dict(spec.representation_config if config is None else config)
    if spec.representation in REPRESENTATIONS:
        if "state" in inspect.signature(REPRESENTATIONS[spec.representation]).parameters:
            config["state"] = spec.state
    return build_representation(spec.representation, **config)


def training_subset(examples: Sequence[Any], fraction: float) -> list[Any]:
    """``fraction`` of ``examples`` (at least one), drawn by a fixed permutation and kept in
    their original order. The permutation does not depend on the run's seed, so every system
    and seed trains on the same subset, and the subsets of growing fractions are nested
    (paper §5.4, Figure 1)."""
    keep = max(1, round(fraction * len(examples)))
    order = np.random.default_rng(0).permutation(len(examples))[:keep]  # (keep,)
    return [examples[i] for i in sorted(order.tolist())]


# ------------------------------------------------------------------------------------ set-up
def _set_up(spec: RunSpec, options: RunOptions) -> _Run:
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
    work = Path(options.work_root) / spec.task / spec.run_id
    seed_everything(spec.seed)
    recipe = task.setup(
        spec.preset, list(spec.overrides), None if spec.data == "demo" else spec.data
    )
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
    splits = {s: list(recipe.splits[s])[: spec.limit] for s in wanted}
    if spec.train_fraction is not None:
        splits["train"] = training_subset(splits["train"], spec.train_fraction)
    from tasks.common.io import require_usable

    read_stats = getattr(recipe, "read_stats", None) or {}
    for split in wanted:  # no training or scoring on nothing, or on a mostly skipped file
        require_usable(split, len(splits[split]), read_stats.get(split), options.max_skipped)
    work.mkdir(parents=True, exist_ok=True)
    rep_config = dict(spec.representation_config)
    finetune_ppl: dict[str, float] = {}
    if rep_config.get("finetune"):
        rep_config, finetune_ppl = finetuned_bilm(
            rep_config,
            recipe.sequences(splits["train"]),
            recipe.sequences(splits["dev"]),
            options,
        )
    representation = build_spec_representation(spec, rep_config)
    sequences = recipe.sequences([e for s in wanted for e in splits[s]])
    cache = Path(options.cache_dir) if options.cache_dir else None
    represent = make_represent(
        representation,
        sequences,
        cache,
        options.progress,
        device,
        cache_budget=options.cache_budget,
    )
    injector = Injector(representation, frozenset(spec.sites), spec.mix, dropout=spec.dropout)
    seed_everything(spec.seed)  # model initialisation independent of what set-up consumed
    model = recipe.build_model(injector).to(device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = build_optimizer(train_config, trainable)
    ema = EMA(model, train_config.ema) if train_config.ema else None
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
        eval_lines=options.eval_lines,
    )


def _forward(run: _Run) -> Callable[[Any], Any]:
    """The callable a recipe predicts with: batch to device, autocast, no gradients."""

    def forward(batch: Any) -> Any:
        with torch.no_grad(), autocast(run.device, run.precision):
            return run.model(to_device(batch, run.device))

    return forward


# ------------------------------------------------------------------------------ checkpoints
def _rng_state(device: torch.device) -> dict[str, Any]:
    state = {
        "torch": torch.get_rng_state(),
        "numpy": json.dumps(np.random.get_state()[1].tolist()),
        "numpy_pos": int(np.random.get_state()[2]),
        "python": json.dumps(random.getstate()[1]),
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    torch.set_rng_state(state["torch"])
    keys = np.array(json.loads(state["numpy"]), dtype=np.uint32)
    np.random.set_state(("MT19937", keys, state["numpy_pos"], 0, 0.0))
    random.setstate((3, tuple(json.loads(state["python"])), None))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _tensor_reference(tensor: torch.Tensor) -> dict[str, Any]:
    """What a checkpoint stores instead of a frozen tensor: dtype, shape and the SHA-256 of
    its bytes (the run rebuilds the tensor from its fingerprinted source; this checks it)."""
    data = tensor.detach().cpu().contiguous()
    raw = data.reshape(-1).view(torch.uint8)  # (numel * element_size,) any dtype, bf16 too
    digest = hashlib.sha256(raw.numpy().tobytes()).hexdigest()
    return {"dtype": str(data.dtype), "shape": list(data.shape), "sha256": digest}


def _frozen_references(model: nn.Module) -> dict[str, dict[str, Any]]:
    """Frozen parameters of ``model`` (``requires_grad=False``: the tasks' fixed word vectors,
    a frozen representation's weights) by state-dict name → :func:`_tensor_reference`.

    Nothing trains them, and :func:`_set_up` rebuilds them identically from the spec (word
    vectors from their fingerprinted source), so checkpoints hold them by reference only.
    """
    state = model.state_dict(keep_vars=True)
    return {
        name: _tensor_reference(value)
        for name, value in state.items()
        if isinstance(value, nn.Parameter) and not value.requires_grad
    }


def _save(run: _Run, state: LoopState, best_weights: dict[str, torch.Tensor] | None) -> None:
    """Write the checkpoint; frozen parameters are stored by reference (dtype, shape, SHA-256),
    not by value, in ``model`` and ``best_weights`` alike, so nothing is written twice."""
    frozen = _frozen_references(run.model)
    model = {k: v for k, v in run.model.state_dict().items() if k not in frozen}
    if best_weights is not None:
        best_weights = {k: v for k, v in best_weights.items() if k not in frozen}
    atomic_save(
        {
            "model": model,
            "frozen": frozen,
            "optimizer": run.optimizer.state_dict(),
            "ema": run.ema.shadow if run.ema is not None else {},
            "best_weights": best_weights,
            "scaler": run.scaler.state_dict(),
            "state": state.to_json(),
            "rng": _rng_state(run.device),
            "config": _config_json(run),
            "identity": run.identity,
        },
        run.work / CHECKPOINT,
    )


def _config_json(run: _Run) -> str:
    """The task and training configuration a checkpoint was written under."""
    return json.dumps(
        {"task": _plain(run.recipe.config), "train": _plain(run.train_config)},
        sort_keys=True,
        default=str,
    )


def _load(run: _Run) -> tuple[LoopState, dict[str, torch.Tensor] | None] | None:
    path = run.work / CHECKPOINT
    if not path.exists():
        return None
    payload = torch.load(path, map_location=run.device, weights_only=True)
    if payload.get("identity", "") != run.identity:
        # made from other data, another representation, device, ... (a stale run trained
        # again): resuming would continue the old run on the new inputs
        logger.warning("%s was written from other inputs (run identity); starting afresh", path)
        return None
    if payload.get("config") != _config_json(run):
        # The same run id under another configuration (a preset changed without a version bump):
        # resuming would mix two configurations, so this run starts again.
        logger.warning("%s was written under another configuration; starting afresh", path)
        return None
    # Frozen parameters were stored by reference: the rebuilt model must hold the very same
    # tensors (the same word-vector file, the same frozen representation), else resuming would
    # mix two sets of inputs, so the run starts again, as under another configuration.
    frozen: dict[str, dict[str, Any]] = payload.get("frozen", {})  # older checkpoints: none
    live = run.model.state_dict()
    changed = [n for n, ref in frozen.items() if n not in live or _tensor_reference(live[n]) != ref]
    if changed:
        logger.warning(
            "%s was written with other frozen tensors (%s: their source, e.g. the word-vector "
            "file, changed); starting afresh",
            path,
            ", ".join(changed),
        )
        return None
    kept = {n: live[n] for n in frozen}  # the live tensors themselves, no copies
    run.model.load_state_dict({**payload["model"], **kept})
    run.optimizer.load_state_dict(payload["optimizer"])
    if run.ema is not None:
        run.ema.shadow = payload["ema"]
    if payload["scaler"]:
        run.scaler.load_state_dict(payload["scaler"])
    _set_rng_state(payload["rng"], run.device)
    state = LoopState.from_json(payload["state"])
    logger.info("resumed %s at epoch %d, step %d", run.work, state.epoch, state.step)
    best = payload["best_weights"]
    return state, None if best is None else {**best, **kept}


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
    run.scaler.unscale_(run.optimizer)
    if cfg.clip_norm:
        nn.utils.clip_grad_norm_(run.trainable, cfg.clip_norm)
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


# ---------------------------------------------------------------------- evaluate and select
def _score(run: _Run, split: str) -> tuple[dict[str, float], Any]:
    """The official-parity metrics of ``split`` and the predictions they score."""
    run.model.eval()
    examples = run.splits[split]
    predictions = run.recipe.predict(_forward(run), examples, run.represent)
    return run.recipe.score(predictions, examples), predictions


def _evaluate_and_select(
    run: _Run, state: LoopState, sink: Sink, started: float
) -> dict[str, torch.Tensor] | None:
    """Score dev, update selection / early stopping / plateau schedule, log. Returns the new
    best weights (EMA weights when EMA is on) when this evaluation is the best so far."""
    metric = run.task.metric
    context = run.ema.applied(run.model) if run.ema is not None else contextlib.nullcontext()
    with context:
        dev, _ = _score(run, "dev")
        # frozen parameters never change: the live tensor, not a copy (a GloVe 840B matrix)
        current = {
            k: v.detach()
            if isinstance(v, nn.Parameter) and not v.requires_grad
            else v.detach().clone()
            for k, v in run.model.state_dict(keep_vars=True).items()
        }
    run.model.train()
    if metric.key not in dev:
        raise KeyError(
            f"the scorer returned {sorted(dev)}, not the selection metric {metric.key!r}"
        )
    sign = 1.0 if metric.higher_is_better else -1.0
    value = sign * dev[metric.key]
    record: dict[str, Any] = {
        "epoch": state.epoch + (1 if state.batch else 0),
        "step": state.step,
        "train_loss": float(np.mean(state.losses)) if state.losses else None,
        "lr": state.lr,
        **{f"dev_{k}": v for k, v in dev.items()},
        "layer_weights": run.injector.layer_weights(),
        "gammas": run.injector.gammas(),
        "seconds": time.perf_counter() - started,
    }
    state.losses = []
    state.log.append(record)
    numbers = {k: v for k, v in record.items() if isinstance(v, int | float) and k != "seconds"}
    sink.log(numbers, step=state.step)
    sink.log_mix(record["layer_weights"], record["gammas"], step=state.step)
    improved = value > state.best
    if improved:
        state.best, state.best_epoch, state.best_step = value, record["epoch"], state.step
        state.best_metrics = dict(dev)
        state.bad_evals = state.plateau_evals = 0
    else:
        state.bad_evals += 1
        state.plateau_evals += 1
        schedule = run.train_config.schedule
        if schedule.kind == "plateau" and state.plateau_evals > schedule.patience:
            state.lr = max(schedule.min_lr, state.lr * schedule.factor)
            _set_lr(run.optimizer, state.lr)
            state.plateau_evals = 0
    if run.eval_lines:
        print(
            f"  {run.spec.run_id} {run.spec.task} {run.spec.representation} seed={run.spec.seed}"
            f" epoch {record['epoch']}/{run.train_config.epochs}: dev {metric.key} "
            f"{metric.display(dev[metric.key])} (best {metric.display(sign * state.best)} at epoch "
            f"{state.best_epoch}) {record['seconds']:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return current if improved else None


def _stopped_early(run: _Run, state: LoopState) -> bool:
    patience = run.train_config.patience
    return patience is not None and state.bad_evals >= patience


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
    if options.threads is not None:
        if options.threads < 1:
            raise ValueError(f"threads must be >= 1, got {options.threads}")
        torch.set_num_threads(options.threads)
    run = _set_up(spec, options)
    if identity is not None:
        from experiments.identity import REUSE_FIELDS

        run.identity = json.dumps({k: identity.get(k) for k in REUSE_FIELDS}, sort_keys=True)
    cfg = run.train_config
    state = LoopState(lr=cfg.optimizer.lr)
    best_weights: dict[str, torch.Tensor] | None = None
    loaded = None if options.fresh else _load(run)
    if loaded is not None:
        state, best_weights = loaded
    if sink is None:
        sink = _make_sink(run, options)
    sizes = [run.recipe.size(e) for e in run.splits["train"]]
    evals_this_call = 0
    try:
        while state.epoch < cfg.epochs and not _stopped_early(run, state):
            plan = batch_plan(sizes, cfg, spec.seed * 10_007 + state.epoch)
            run.model.train()
            desc = f"{spec.task} epoch {state.epoch + 1}/{cfg.epochs}"
            bar = _bar(plan, options.progress, desc, initial=state.batch)
            for indices in bar:
                batch = run.recipe.collate([run.splits["train"][i] for i in indices], run.represent)
                _train_batch(run, state, batch)
                state.batch += 1
                if state.losses and state.step % LOSS_LOG_EVERY == 0:
                    sink.log({"train_loss_running": state.losses[-1], "lr": state.lr}, state.step)
                if hasattr(bar, "set_postfix") and state.losses:
                    bar.set_postfix(loss=f"{np.mean(state.losses[-50:]):.3f}")
                end_of_epoch = state.batch == len(plan)
                if end_of_epoch:
                    state.epoch, state.batch = state.epoch + 1, 0
                due = cfg.eval_every is not None and state.step % cfg.eval_every == 0
                if due or (cfg.eval_every is None and end_of_epoch):
                    new_best = _evaluate_and_select(run, state, sink, started)
                    if new_best is not None:
                        best_weights = new_best
                    _save(run, state, best_weights)
                    evals_this_call += 1
                    if _stopped_early(run, state) or evals_this_call == stop_after_evals:
                        break
                if end_of_epoch:
                    break
            if hasattr(bar, "close"):
                bar.close()
            if evals_this_call == stop_after_evals:
                break
        finished = state.epoch >= cfg.epochs or _stopped_early(run, state)
        if finished and (not state.log or state.log[-1]["step"] != state.step):
            new_best = _evaluate_and_select(run, state, sink, started)  # steps since the last eval
            if new_best is not None:
                best_weights = new_best
            _save(run, state, best_weights)
        outcome = _finish(run, state, best_weights, started)
    except BaseException:
        sink.finish({})
        raise
    sink.finish({**outcome.metrics, "best_epoch": outcome.best_epoch})
    url = getattr(getattr(sink, "run", None), "url", None)  # None for offline W&B runs
    if isinstance(url, str) and url:  # stored with the record: the HTML report links it
        path = run.work / "wandb.json"
        path.write_text(json.dumps({"url": url}), encoding="utf-8")
        outcome.predictions["wandb"] = path
    return outcome


def _write_units(units: UnitStatistics, path: Path) -> Path:
    """Per-unit metric statistics (paired significance tests) as JSON, written atomically."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"ids": list(units.ids), "rows": [list(r) for r in units.rows]}))
    tmp.replace(path)
    return path


def _finish(
    run: _Run, state: LoopState, best_weights: dict[str, torch.Tensor] | None, started: float
) -> TrainOutcome:
    """Load the selected weights, score every requested split, write their predictions."""
    if best_weights is not None:
        run.model.load_state_dict(best_weights)
    metrics: dict[str, float] = {}
    written: dict[str, Path] = {}
    for split in run.spec.eval_splits:
        scores, predictions = _score(run, split)
        metrics.update({f"{split}_{k}": v for k, v in scores.items()})
        path = run.work / f"predictions-{split}"
        written[split] = run.recipe.write_predictions(predictions, run.splits[split], path)
        units = getattr(run.recipe, "unit_statistics", None)
        if units is not None:
            written[f"units-{split}"] = _write_units(
                units(predictions, run.splits[split]), run.work / f"units-{split}.json"
            )
    read_stats = getattr(run.recipe, "read_stats", None) or {}
    if read_stats:  # skip counts of every split, stored with the run (shown under its tables)
        path = run.work / "read-stats.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({s: st.as_dict() for s, st in read_stats.items()}, indent=1))
        written["read-stats"] = tmp.replace(path)
    dev_now = {k[4:]: v for k, v in metrics.items() if k.startswith("dev_")}
    if state.best_metrics and dev_now != state.best_metrics:
        logger.warning(
            "dev metrics on reload %s differ from selection %s", dev_now, state.best_metrics
        )
    device = describe_device(run.device)
    if run.device.type == "cpu":
        device += f", {torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''}"
    if run.precision != "fp32":
        device += f", {run.precision}"
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
        device=device,
        predictions=written,
        counts={s: len(v) for s, v in run.splits.items()},
        finetune_ppl=dict(run.finetune_ppl),
    )


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


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    return value


def _bar(iterable: Any, progress: bool, desc: str, initial: int = 0) -> Any:
    if not progress:
        return iter(iterable[initial:]) if initial else iterable
    from tqdm.auto import tqdm

    return tqdm(
        iterable[initial:],
        desc=desc,
        total=len(iterable),
        initial=initial,
        leave=False,
        dynamic_ncols=True,
    )


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
        attachments={p.name: p.read_text(encoding="utf-8") for p in outcome.predictions.values()},
    )


__all__ = [
    "EMA",
    "LoopState",
    "RunOptions",
    "TrainOutcome",
    "build_optimizer",
    "make_represent",
    "run_spec",
    "seed_everything",
    "to_device",
    "train",
]
