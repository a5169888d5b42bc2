"""The one training loop for every task.

``train(spec, options)`` reads like a small training script: set up the run once resolved
(:mod:`experiments.run.resolve`, :func:`experiments.run.setup.set_up`), resume it, then epochs of
optimizer steps with an evaluation every epoch or every ``eval_every`` steps, then the selected
weights score every requested split. Beside it: the optimizer and EMA
(:mod:`experiments.run.optim`), the scorer calls (:mod:`experiments.run.scoring`), bars and stderr
lines (:mod:`experiments.run.progress`), the checkpoint (:mod:`experiments.run.checkpoint`) and the
dead-run rules (:mod:`experiments.run.health`).

1. :func:`_train_batch`: forward (autocast), loss + λ penalty of the scalar mixes
   (:func:`tasks.features.inject.mix_penalty`), NaN/inf guard, backward (scaled in fp16),
   unscale, clip (each gradient value, then the norm), step, EMA, the per-step schedule;
2. :func:`_evaluate`: the dev metric with the EMA weights, model selection, early stopping, the
   plateau schedule, log line (with the interval's gradient norms and the number of distinct dev
   predictions; a warning when the run looks dead), W&B, then the checkpoint (model, optimizer,
   EMA, best weights, loop state, grad scaler, every RNG state), so a run killed at any point
   resumes from its last evaluation and ends with identical metrics (batches, and with
   ``bucket_noise`` their membership, are planned from ``(seed, epoch)`` alone:
   :func:`epoch_seed`, :func:`tasks.core.batch_plan`; a resumed epoch skips the batches done);
3. :func:`_finish`: the selected weights score every requested split (test only when asked)
   and write their predictions in the task's official format.

Frozen representations are read from the feature cache, so sweeps over λ / LastOnly / sites /
seeds never rerun the biLM. Nothing here names a task.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bilm.devices import autocast
from bilm.files import write_json
from experiments.run import health, progress, scoring
from experiments.run.checkpoint import Weights, resume, save_run, work_folder_held
from experiments.run.optim import set_lr
from experiments.run.represent import (
    carried_state,
    load_carried_state,
    make_represent,  # re-exported: older importers use it here
)
from experiments.run.resolve import ResolvedRun, identified, resolve
from experiments.run.setup import Run, RunOptions, make_sink, set_up, to_device
from experiments.run.spec import RunSpec
from experiments.run.wandb_sink import Sink
from tasks.core import TrainConfig, batch_plan, loss_of
from tasks.features.inject import mix_penalty

logger = logging.getLogger(__name__)

MAX_BAD_STEPS = 10  # consecutive non-finite losses before the run is declared diverged
LOSS_LOG_EVERY = 50  # optimizer steps between train-loss points sent to W&B
#: Name of the per-evaluation dev unit statistics (RunOptions.epoch_units): PREFIX + step + .json
EPOCH_UNITS_PREFIX = "units-dev-step"
DEFAULT_OPTIONS = RunOptions()  # how a run runs unless told (frozen)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (``ru_maxrss``: KiB on Linux)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
    # wall seconds of the run up to this checkpoint, over every call that trained it (a
    # resumed run counts its earlier sittings; the work redone after a kill counts twice)
    wall_s: float = 0.0
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
        seconds: wall time of the run: this call's, plus that of earlier calls up to the
            checkpoint this one resumed from.
        skipped_steps: non-finite losses skipped.
        representation_fingerprint: identifies the representation's weights.
        device: the device that ran (with the precision when not fp32).
        predictions: split → file with the predictions in the task's official format.
        counts: examples per split.
        finetune_ppl: held-out perplexity of a task-tuned biLM before and after fine-tuning.
        health: whether the run is dead, and why (:mod:`experiments.run.health`).
        costs: what the run cost (:func:`run_costs`): trainable parameters (the
            representation's share apart), training CPU seconds per epoch, peak memory.
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
    costs: dict[str, float] = field(default_factory=dict)


# ----------------------------------------------------------------------------------- the loop
def train(
    spec: RunSpec | ResolvedRun,
    options: RunOptions = DEFAULT_OPTIONS,
    sink: Sink | None = None,
    stop_after_evals: int | None = None,
) -> TrainOutcome:
    """Train one run (resuming from its checkpoint) and score the selected weights.

    Args:
        spec: what to run: a :class:`~experiments.run.resolve.ResolvedRun` (its identity, when it
            has one, is what a checkpoint must have been written under to be resumed: a stale
            run trained again starts afresh), or a spec, resolved here (no identity checked).
        options: how to run it (device, precision, caches, progress, W&B).
        sink: where metrics go besides the log (default: W&B when ``options.wandb``, else none).
        stop_after_evals: stop after this many evaluations in this call (resume tests); the
            outcome then describes the run so far.
    """
    started = time.perf_counter()
    _set_threads(options.threads)
    run = set_up(resolve(spec) if isinstance(spec, RunSpec) else spec, options)
    with work_folder_held(run.work, run.spec.run_id):
        return _train_loop(run, options, sink, stop_after_evals, started)


def _train_loop(
    run: Run,
    options: RunOptions,
    sink: Sink | None,
    stop_after_evals: int | None,
    started: float,
) -> TrainOutcome:
    """:func:`train`'s loop over a set-up run whose work folder this process holds."""
    cfg, train_split = run.train_config, run.splits["train"]
    state = (None if options.fresh else _load(run)) or LoopState(lr=cfg.optimizer.lr)
    started -= state.wall_s  # the run's clock goes on from its checkpoint
    sink = make_sink(run, options) if sink is None else sink
    sizes = [run.recipe.size(e) for e in train_split]
    evals = 0
    try:
        while state.epoch < cfg.epochs and not _stopped_early(run, state):
            plan = batch_plan(sizes, cfg, epoch_seed(run.spec.seed, state.epoch))
            run.model.train()
            lines = progress.run_label(run.spec) if run.eval_lines else None
            bar = progress.epoch_bar(
                options.progress,
                run.spec.task,
                state.epoch,
                cfg.epochs,
                state.batch,
                len(plan),
                lines,
            )
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
    # the summary: the scores, the selected epoch and what the run cost (run_costs)
    sink.finish({**outcome.metrics, "best_epoch": outcome.best_epoch, **outcome.costs})
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


def _report_step(state: LoopState, sink: Sink, bar: progress.Bar) -> None:
    """The running training loss to W&B (every :data:`LOSS_LOG_EVERY` steps) and the bar."""
    if state.losses and state.step % LOSS_LOG_EVERY == 0:
        sink.log({"train_loss_running": state.losses[-1], "lr": state.lr}, state.step)
    bar.update(1)
    if state.losses:
        bar.set_postfix(loss=f"{np.mean(state.losses[-50:]):.3f}")


def _stopped_early(run: Run, state: LoopState) -> bool:
    patience = run.train_config.patience
    return patience is not None and state.bad_evals >= patience


def _evaluation_due(config: TrainConfig, state: LoopState, end_of_epoch: bool) -> bool:
    """Every ``eval_every`` optimizer steps, else at the end of every epoch."""
    if config.eval_every is not None:
        return state.step % config.eval_every == 0
    return end_of_epoch


# ------------------------------------------------------------------------------ checkpoints
def _load(run: Run) -> LoopState | None:
    """The loop state of the run's checkpoint, the run's objects restored from it
    (:func:`experiments.run.checkpoint.resume`); ``None``: none, or a stale one (start afresh)."""
    carry = run.spec.state == "carry"
    restored = resume(run, carried=carry)
    if restored is None:
        return None
    state = LoopState.from_json(restored.state, restored.best_weights)
    if carry:  # the biLM goes on from the state it had when the checkpoint was written
        load_carried_state(run.representation, restored.carried or {})
    logger.info("resumed %s at epoch %d, step %d", run.work, state.epoch, state.step)
    progress.print_resumed(run.spec, state.epoch, state.step, run.train_config.epochs)
    return state


# ----------------------------------------------------------------------------- one step
def _train_batch(run: Run, state: LoopState, batch: Any) -> None:
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
    norm = None  # the total gradient norm before any clipping (experiments.run.health)
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
        set_lr(run.optimizer, state.lr, state.step)
    elif state.step <= run.warmup:  # a trained representation's learning rate warms up
        set_lr(run.optimizer, state.lr, state.step)


def _grad_norm(run: Run) -> Tensor:
    """The total gradient norm of the trainable parameters, a 0-d tensor on the device (0
    when no gradient reached any)."""
    grads = [p.grad for p in run.trainable if p.grad is not None]
    return nn.utils.get_total_norm(grads) if grads else torch.zeros((), device=run.device)


def _grad_norm_stats(run: Run) -> tuple[float | None, float | None]:
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
def _evaluate(run: Run, state: LoopState, sink: Sink, started: float) -> None:
    """Score dev with the EMA weights, select (early stopping, plateau schedule), log the
    evaluation, then save the checkpoint."""
    dev, weights, values, units = scoring.score_dev(run)
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
        "seconds": time.perf_counter() - started,  # since the run began, earlier calls included
        "train_cpu_s": state.train_cpu_s,  # the training batches since the last evaluation
        "train_s": state.train_s,
        "peak_rss_mb": peak_rss_mb(),
    }
    if spread := run.injector.layer_weights_std():  # dynamic mixes: over dev's real tokens
        record["layer_weights_std"] = spread
    if units is not None:
        name = f"{EPOCH_UNITS_PREFIX}{state.step}.json"
        scoring.write_units(run.work / name, units)
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
        metric = run.task.metric
        best = ((1.0 if metric.higher_is_better else -1.0) * state.best, state.best_epoch)
        progress.print_evaluation(
            run.spec, metric, run.train_config.epochs, dev[metric.key], best, record
        )
    _warn_if_dead(run, state)
    state.wall_s = time.perf_counter() - started
    carried = carried_state(run.representation) if run.spec.state == "carry" else None
    save_run(run, state.to_json(), state.best_weights, carried)


def _health(run: Run, state: LoopState) -> health.Health:
    """The run's health so far (:func:`experiments.run.health.diagnose` on its log)."""
    metric = run.task.metric
    return health.diagnose(state.log, metric.key, metric.higher_is_better, state.best_step)


def _warn_if_dead(run: Run, state: LoopState) -> None:
    """The stderr warning, the first time the run looks dead (:func:`progress.warn_dead`)."""
    if state.dead_warned:
        return
    verdict = _health(run, state)
    if verdict.dead:
        state.dead_warned = True
        progress.warn_dead(run.spec, verdict, state.log[-1]["epoch"])


def _select(run: Run, state: LoopState, dev: Mapping[str, float], epoch: int) -> bool:
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
        set_lr(run.optimizer, state.lr, state.step)
        state.plateau_evals = 0
    return False


# ------------------------------------------------------------------------------- the outcome
def _finish(run: Run, state: LoopState, started: float) -> TrainOutcome:
    """Load the selected weights, score every requested split, write their predictions."""
    if state.best_weights is not None:
        run.model.load_state_dict(state.best_weights)
    metrics, written = scoring.score_splits(run)
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
        device=run.device_label(),
        predictions=written,
        counts={s: len(v) for s, v in run.splits.items()},
        finetune_ppl=dict(run.finetune_ppl),
        health=_health(run, state),
        costs=run_costs(run, state.log),
    )


def run_costs(run: Run, log: list[dict[str, Any]]) -> dict[str, float]:
    """What a run cost: its trainable parameters (``trainable_params``, of which the
    representation's: ``representation_trainable_params``), the median over epochs of the
    training CPU seconds of each (``train_cpu_s_per_epoch``; the evaluations within an epoch
    summed) and its peak resident memory (``peak_rss_mb``)."""
    by_epoch: dict[int, float] = {}
    for line in log:
        epoch = int(line.get("epoch", 0))
        by_epoch[epoch] = by_epoch.get(epoch, 0.0) + float(line.get("train_cpu_s", 0.0))
    cpu = list(by_epoch.values())
    return {
        "trainable_params": float(run.trainable_parameters),
        "representation_trainable_params": float(run.representation_parameters),
        "train_cpu_s_per_epoch": float(np.median(cpu)) if cpu else 0.0,
        "peak_rss_mb": max((float(line.get("peak_rss_mb", 0.0)) for line in log), default=0.0),
    }


def _link_wandb_run(run: Run, sink: Sink, outcome: TrainOutcome) -> None:
    """The W&B run's address, stored with the record (the HTML report links it)."""
    url = getattr(getattr(sink, "run", None), "url", None)  # None for offline W&B runs
    if isinstance(url, str) and url:
        outcome.predictions["wandb"] = write_json(run.work / "wandb.json", {"url": url})


# ------------------------------------------------------------------------------ RunSpec bridge
def run_spec(spec: RunSpec | ResolvedRun, options: RunOptions = DEFAULT_OPTIONS) -> Any:
    """Train one run and return its :class:`~experiments.run.store.RunRecord`.

    ``spec`` is a :class:`~experiments.run.resolve.ResolvedRun` (a command's, identified or not) or
    a spec, resolved here; its data is ``"demo"`` (the task's bundled demo set) or a data
    folder. The work folder ``options.work_root/<task>/<run_id>`` holds the checkpoint, so a
    killed run resumes. The record's provenance carries the run's
    :class:`~experiments.run.identity.RunIdentity` and
    :class:`~experiments.run.identity.CodeVersion`.
    """
    from experiments.run.identity import code_version
    from experiments.run.store import RunRecord, collect_env

    started = time.time()
    # what the run is made of, fingerprinted before it starts (unless the command did: the
    # driver's reuse check reads the same object)
    resolved = identified(
        resolve(spec) if isinstance(spec, RunSpec) else spec,
        options.device,
        options.precision,
        options.threads,
    )
    assert resolved.identity is not None
    identity = resolved.identity.to_dict()
    # the commit and sources the run starts from (a checkout may move on while it trains)
    code = code_version()
    outcome = train(resolved, options)
    provenance = dataclasses.replace(
        collect_env(
            device=outcome.device,
            representation_fingerprint=outcome.representation_fingerprint,
            data_fingerprint=resolved.identity.data,
            git=(code.git_sha, code.git_dirty),
        ),
        identity=identity,
        code=code.to_dict(),
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
        spec=resolved.spec,
        metrics=metrics,
        provenance=provenance,
        log=tuple(outcome.log),
        timings={
            "started_unix": started,
            "wall_s": outcome.seconds,
            "skipped_steps": float(outcome.skipped_steps),
            **outcome.costs,
        },
        attachments={
            **{p.name: p.read_text(encoding="utf-8") for p in outcome.predictions.values()},
            health.HEALTH_FILE: health.health_json(outcome.health),
        },
    )


__all__ = [
    "EPOCH_UNITS_PREFIX",
    "LoopState",
    "RunOptions",
    "TrainOutcome",
    "epoch_seed",
    "make_represent",
    "peak_rss_mb",
    "run_spec",
    "train",
]
