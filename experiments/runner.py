"""The one training loop for every task.

``train_run(spec, work_dir)`` builds the task recipe, the representation and its injector, then
trains with the task's optimizer: λ penalty of the scalar mixes added to the loss
(:func:`tasks.common.inject.mix_penalty`), gradient clipping, optional EMA of the weights for
evaluation, early stopping on the dev metric with patience, a NaN/inf guard, progress bars, a
JSONL log and optional W&B. Frozen representations are read from the feature cache, so sweeps over
λ / LastOnly / sites / seeds never rerun the biLM.

Resume: after every epoch the model, optimizer, EMA, early-stopping state and every RNG state are
written atomically to ``work_dir/checkpoint.pt``; running the same spec again continues from
there and reaches the same result as an uninterrupted run (batches are shuffled by (seed, epoch)).
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bilm.pretrain import atomic_save
from tasks.common.feature_cache import FeatureCache
from tasks.common.inject import Injector, MixSpec, mix_penalty
from tasks.core import Represent, TaskSpec, loss_of
from tasks.representations import Layers, Representation, build_representation

logger = logging.getLogger(__name__)

MAX_BAD_STEPS = 10  # consecutive non-finite losses before the run is declared diverged


@dataclass
class TrainOutcome:
    """What a finished run reports."""

    metrics: dict[str, float]  # dev metrics of the selected (best) epoch, natural units
    best_epoch: int
    epochs_run: int
    layer_weights: dict[str, list[float]]
    log: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    skipped_steps: int = 0
    representation_fingerprint: str = ""


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


def make_represent(
    representation: Representation | None,
    sequences: Sequence[Sequence[str]],
    cache_dir: Path | None,
    progress: bool,
) -> Represent:
    """A function from token sequences to layers: cache lookups for frozen representations."""
    if representation is None or representation.num_layers == 0:
        return lambda seqs: None
    if cache_dir is not None and not representation.trainable:
        unique = list(dict.fromkeys(tuple(s) for s in sequences))
        cache = FeatureCache.build(representation, unique, cache_dir, progress=progress)
        index = {s: i for i, s in enumerate(unique)}

        def cached(seqs: Sequence[Sequence[str]]) -> Layers:
            return cache.lookup([index[tuple(s)] for s in seqs])

        return cached

    def live(seqs: Sequence[Sequence[str]]) -> Layers:
        return representation(representation.featurize(seqs))

    return live


def _rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "numpy": json.dumps(np.random.get_state()[1].tolist()),
        "numpy_pos": int(np.random.get_state()[2]),
        "python": json.dumps(random.getstate()[1]),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    keys = np.array(json.loads(state["numpy"]), dtype=np.uint32)
    np.random.set_state(("MT19937", keys, state["numpy_pos"], 0, 0.0))
    random.setstate((3, tuple(json.loads(state["python"])), None))


def train_run(
    task: TaskSpec,
    *,
    config: str,
    overrides: Sequence[str],
    representation: str,
    representation_config: dict[str, Any],
    sites: frozenset[str],
    mix: MixSpec,
    dropout: float,
    seed: int,
    work_dir: str | os.PathLike[str],
    data_dir: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    wandb_project: str | None = None,
    stop_after_epochs: int | None = None,
) -> TrainOutcome:
    """Train one configuration and return its best dev metrics.

    Args:
        task: the task spec.
        config: preset name (``paper`` or ``mini``).
        overrides: ``key=value`` changes to the preset.
        representation: registry name (``elmo``, ``bilm-random``, ``glove``, ``cove``, ``none``).
        representation_config: its keyword arguments (checkpoint paths, state policy, ...).
        sites: injection sites.
        mix: scalar-mix settings (mode, λ, layer norm).
        dropout: dropout after mixing.
        seed: the run's seed.
        work_dir: checkpoint and log folder (resumes when it holds a checkpoint).
        data_dir: real data folder (task default when None, e.g. the demo set).
        cache_dir: feature-cache folder for frozen representations (None: no cache).
        progress: tqdm bars.
        wandb_project: also log to W&B (offline unless ``WANDB_MODE`` says otherwise).
        stop_after_epochs: stop after this many epochs in this call (resume tests).
    """
    start_time = time.perf_counter()
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    seed_everything(seed)
    recipe = task.setup(config, overrides, data_dir)
    rep = (
        build_representation(representation, **representation_config)
        if representation != "none"
        else build_representation("none")
    )
    sequences = recipe.sequences(list(recipe.train) + list(recipe.dev))
    represent = make_represent(rep, sequences, Path(cache_dir) if cache_dir else None, progress)
    injector = Injector(rep, sites, mix, dropout=dropout)
    seed_everything(seed)  # model initialisation independent of what setup consumed
    model = recipe.build_model(injector)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = recipe.optimizer(trainable)
    cfg = recipe.config
    ema = EMA(model, cfg.ema) if getattr(cfg, "ema", 0.0) else None
    metric = task.metric
    sign = 1.0 if metric.higher_is_better else -1.0

    state: dict[str, Any] = {
        "epoch": 0,
        "best": -math.inf,
        "best_epoch": -1,
        "bad_epochs": 0,
        "log": [],
        "best_metrics": {},
        "skipped": 0,
    }
    best_weights: dict[str, torch.Tensor] | None = None
    ckpt_path = work / "checkpoint.pt"
    if ckpt_path.exists():
        payload = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
        if ema is not None:
            ema.shadow = payload["ema"]
        best_weights = payload["best_weights"]
        state = json.loads(payload["state"])
        _set_rng_state(payload["rng"])
        logger.info("resumed %s at epoch %d", work, state["epoch"])

    run = _wandb(wandb_project, work) if wandb_project else None
    log_file = (work / "log.jsonl").open("w", encoding="utf-8")
    for record in state["log"]:
        log_file.write(json.dumps(record) + "\n")
    epochs_this_call = 0
    bad_in_a_row = 0  # consecutive non-finite losses, across epochs
    try:
        while state["epoch"] < cfg.epochs and state["bad_epochs"] < cfg.patience:
            if stop_after_epochs is not None and epochs_this_call >= stop_after_epochs:
                break
            epoch = state["epoch"]
            model.train()
            losses: list[float] = []
            batches = recipe.batches(recipe.train, cfg.batch_size, seed * 10_007 + epoch, represent)
            n_batches = math.ceil(len(recipe.train) / cfg.batch_size)
            bar = _bar(batches, progress, f"{task.name} epoch {epoch + 1}/{cfg.epochs}", n_batches)
            for batch in bar:
                output = model(batch)
                loss = loss_of(output) + mix_penalty(model)
                if not torch.isfinite(loss):
                    state["skipped"] += 1
                    bad_in_a_row += 1
                    if bad_in_a_row >= MAX_BAD_STEPS:
                        raise FloatingPointError(
                            f"{MAX_BAD_STEPS} consecutive non-finite losses (epoch {epoch + 1})"
                        )
                    continue
                bad_in_a_row = 0
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.clip_norm:
                    nn.utils.clip_grad_norm_(trainable, cfg.clip_norm)
                optimizer.step()
                if ema is not None:
                    ema.update(model)
                losses.append(loss.item())
                if hasattr(bar, "set_postfix"):
                    bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
            model.eval()
            if ema is not None:
                ema.swap(model)
            with torch.no_grad():
                dev = recipe.evaluate(model, recipe.dev, represent)
            current = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if ema is not None:
                ema.swap(model)
            value = dev[metric.name]
            record = {
                "epoch": epoch + 1,
                "train_loss": float(np.mean(losses)) if losses else None,
                **{f"dev_{k}": v for k, v in dev.items()},
                "layer_weights": injector.layer_weights(),
                "seconds": time.perf_counter() - start_time,
            }
            state["log"].append(record)
            log_file.write(json.dumps(record) + "\n")
            log_file.flush()
            if run:
                run.log(record, step=epoch + 1)
            if sign * value > state["best"]:
                state.update(
                    best=sign * value, best_epoch=epoch + 1, bad_epochs=0, best_metrics=dev
                )
                best_weights = current
            else:
                state["bad_epochs"] += 1
            state["epoch"] = epoch + 1
            epochs_this_call += 1
            atomic_save(
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "ema": ema.shadow if ema is not None else {},
                    "best_weights": best_weights,
                    "state": json.dumps(state),
                    "rng": _rng_state(),
                },
                ckpt_path,
            )
    finally:
        log_file.close()
        if run:
            run.finish()
    if best_weights is not None:
        model.load_state_dict(best_weights)
    return TrainOutcome(
        metrics=dict(state["best_metrics"]),
        best_epoch=state["best_epoch"],
        epochs_run=state["epoch"],
        layer_weights=injector.layer_weights(),
        log=list(state["log"]),
        seconds=time.perf_counter() - start_time,
        skipped_steps=state["skipped"],
        representation_fingerprint=rep.fingerprint(),
    )


def _bar(iterable: Any, progress: bool, desc: str, total: int | None = None) -> Any:
    if not progress:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True)


def _wandb(project: str, work: Path) -> Any:
    try:
        import wandb
    except ImportError as exc:
        raise ImportError("W&B logging needs wandb: pip install wandb") from exc
    return wandb.init(project=project, dir=str(work), mode=os.environ.get("WANDB_MODE", "offline"))


# ------------------------------------------------------------------------------ RunSpec bridge
def run_spec(
    spec: Any,
    work_root: str | os.PathLike[str] = "runs/work",
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    wandb_project: str | None = None,
) -> Any:
    """Train one :class:`experiments.spec.RunSpec` and return its :class:`RunRecord`.

    ``spec.data`` is ``"demo"`` (the task's bundled demo set) or a data folder. The work folder
    ``work_root/<task>/<run_id>`` holds the checkpoint, so a killed run resumes.
    """
    from experiments.store import RunRecord, collect_env, fingerprint_files
    from tasks.registry import get_task

    task = get_task(spec.task)
    if spec.task_version != task.version:
        raise ValueError(
            f"spec is for {spec.task} v{spec.task_version}, the code is v{task.version}"
        )
    if spec.limit is not None:
        raise ValueError("spec.limit is not supported by the runner yet")
    overrides = list(spec.overrides)
    if spec.max_epochs is not None:
        overrides.append(f"epochs={spec.max_epochs}")
    data_dir = None if spec.data == "demo" else spec.data
    rep_config = dict(spec.representation_config)
    if spec.representation in ("elmo", "bilm-random"):
        rep_config.setdefault("state", spec.state)
    started = time.time()
    outcome = train_run(
        task,
        config=spec.preset,
        overrides=overrides,
        representation=spec.representation,
        representation_config=rep_config,
        sites=frozenset(spec.sites),
        mix=MixSpec(spec.mix.mode, spec.mix.lam, spec.mix.layer_norm),
        dropout=spec.dropout,
        seed=spec.seed,
        work_dir=Path(work_root) / spec.task / spec.run_id,
        data_dir=data_dir,
        cache_dir=cache_dir,
        progress=progress,
        wandb_project=wandb_project,
    )
    data_paths = [data_dir] if data_dir else [str(_demo_folder(spec.task))]
    provenance = collect_env(
        representation_fingerprint=outcome.representation_fingerprint,
        data_fingerprint=fingerprint_files(*data_paths),
    )
    metrics = {**outcome.metrics, "best_epoch": float(outcome.best_epoch)}
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
    )


def _demo_folder(task: str) -> Path:
    if task == "squad":
        from tasks.squad.task import ensure_demo

        return ensure_demo()
    raise ValueError(f"task {task!r} has no demo set")
