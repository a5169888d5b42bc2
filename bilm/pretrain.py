"""biLM pretraining: configs, the training loop with exact resume, held-out perplexity.

Follows bilm-tf ``bilm/training.py``: forward and backward LMs over two independent
sentence streams cut into ``unroll_steps`` windows with LSTM state carried between batches;
one softmax shared by both directions (full or sampled); dropout on every LSTM layer input and
on the top output; Adagrad (lr 0.2, initial accumulator 1.0) on ``loss × unroll_steps`` clipped
to global norm 10; or Adam.

Resume is exact: a checkpoint holds the model, softmax, optimizer, carried LSTM state, the data
streams' positions and every RNG state, so continuing after ``kill -9`` reproduces the parameters
and losses of an uninterrupted run (same thread count). Checkpoints are written to a temporary
file and renamed, so a crash or a full disk mid-write leaves the previous one intact.

Data parallel: call inside ``torchrun`` after ``torch.distributed.init_process_group``; each rank
takes a block of rows of the global batch, gradients are averaged by DDP, the sampled-softmax
negatives come from a generator seeded identically on every rank.

Devices and precision (:mod:`bilm.devices`): the model, softmax, batches and carried LSTM state
live on one device (``cuda:LOCAL_RANK`` per rank under torchrun); the forward pass runs under
autocast for ``bf16``/``fp16`` with a gradient scaler for ``fp16`` on CUDA. Parameters and
optimizer state stay float32; checkpoints load on the CPU (``map_location``) and hold the scaler
and the CUDA RNG states too. One optimizer step is :func:`training_step`, which the benchmark
(``benchmarks/bench_pretrain.py``) times.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import Tensor, nn

from bilm.bilm import BiLM
from bilm.devices import (
    Precision,
    autocast,
    describe_device,
    make_scaler,
    resolve_device,
    resolve_precision,
    torchrun_local_rank,
)
from bilm.files import save_torch, write_json, write_text
from bilm.lm import SoftmaxHead
from bilm.lm_data import BatchMode, BidirectionalLMStream, DirectionBatch, LMBatch, count_tokens
from bilm.options import BiLMOptions, CharCNNOptions, LSTMOptions, read_json_file
from bilm.vocab import Vocabulary
from bilm.weights import build_bilm, init_weights

logger = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "elmo-bench-pretrain/1"
CHECKPOINT_NAME = "checkpoint.pt"
VOCAB_NAME = "vocab.txt"
CONFIG_NAME = "config.json"
LOG_NAME = "log.jsonl"
#: Fields that may change when resuming (the run's length and bookkeeping, not its numbers).
SCHEDULE_FIELDS = ("max_steps", "max_minutes", "checkpoint_every", "eval_every", "log_every")


def _identity(config: PretrainConfig) -> str:
    d = config.to_dict()
    for name in SCHEDULE_FIELDS:
        d.pop(name)
    return json.dumps(d, sort_keys=True)


@dataclass(frozen=True)
class PretrainConfig:
    """Pretraining hyper-parameters; defaults are bilm-tf's ``bin/train_elmo.py``.

    ``model`` holds the architecture; ``n_characters`` there is 262 (this library's inference
    layout, exported as 262; bilm-tf's 261-row training table is the same minus the padding row).
    """

    model: BiLMOptions = field(default_factory=BiLMOptions)
    batch_size: int = 128  # source: bilm-tf train_elmo.py (per GPU, 3 GPUs)
    unroll_steps: int = 20  # source: bilm-tf
    mode: BatchMode = "stream"  # bilm-tf: continuous streams, state carried
    dropout: float = 0.1  # source: bilm-tf train_elmo.py
    optimizer: Literal["adagrad", "adam"] = "adagrad"  # source: bilm-tf training.py
    lr: float = 0.2  # source: bilm-tf (Adagrad); use ~1e-3 with Adam
    adagrad_initial_accumulator: float = 1.0  # source: bilm-tf training.py
    clip_norm: float = 10.0  # source: bilm-tf all_clip_norm_val
    num_samples: int | None = 8192  # sampled-softmax negatives; None = full softmax
    min_count: int = 1  # vocabulary: minimum corpus count
    max_vocab: int | None = None  # vocabulary: maximum size incl. specials
    max_steps: int = 10_000
    max_minutes: float | None = None  # wall-clock budget; stops at a step boundary
    checkpoint_every: int = 1250  # source: bilm-tf (every 1250 batches)
    eval_every: int = 0  # 0 = only at the end
    log_every: int = 100  # source: bilm-tf
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``model`` in the official options layout)."""
        d = asdict(self)
        d["model"] = self.model.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: PretrainConfig | None = None) -> PretrainConfig:
        """Build from a dict of overrides on ``base`` (default: the ``small`` preset).

        A ``"base"`` key names a preset; ``"model"`` is a full options.json structure.

        Raises:
            ValueError: an unknown key (the message lists the valid ones).
        """
        data = dict(data)
        if "base" in data:
            base = preset(data.pop("base"))
        base = base or preset("small")
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown config keys {unknown}; valid: {sorted(valid)}")
        if "model" in data:
            data["model"] = BiLMOptions.from_dict(data["model"], source="config.model")
        return replace(base, **data)


def preset(name: str) -> PretrainConfig:
    """Named configurations.

    * ``full``: the published architecture and bilm-tf hyper-parameters.
    * ``small``: the shipped English biLM — LSTM 512 with projection 128 and a reduced char CNN
      (filters summing to 512, one highway layer), sized to train within an hour on 2 CPU cores.
    * ``tiny``: for tests.
    """
    if name == "full":
        return PretrainConfig()
    if name == "small":
        return PretrainConfig(
            model=BiLMOptions(
                lstm=LSTMOptions(dim=512, projection_dim=128, n_layers=2),
                char_cnn=CharCNNOptions(
                    embedding_dim=16,
                    filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256)),
                    n_highway=1,
                ),
            ),
            batch_size=64,
            num_samples=2048,
            min_count=3,  # 17.4 k types of the 2.3 M-token public-domain corpus
            max_vocab=20_000,
            max_steps=4000,  # ≈ 5.1 M tokens ≈ 2.3 epochs of that corpus, < 1 h on 2 cores
            checkpoint_every=200,
            eval_every=1000,
            log_every=20,
        )
    if name == "tiny":
        return PretrainConfig(
            model=BiLMOptions(
                lstm=LSTMOptions(dim=16, projection_dim=8, n_layers=2),
                char_cnn=CharCNNOptions(embedding_dim=4, filters=((1, 4), (2, 4)), n_highway=1),
            ),
            batch_size=4,
            unroll_steps=5,
            dropout=0.1,
            num_samples=16,
            max_steps=6,
            checkpoint_every=2,
            log_every=1,
        )
    raise ValueError(f"unknown preset {name!r}; choose full, small or tiny")


def load_config(spec: str) -> PretrainConfig:
    """``small`` | ``full`` | ``tiny`` | path to a JSON file of overrides."""
    if spec in ("small", "full", "tiny"):
        return preset(spec)
    missing = f"config {spec!r} is neither a preset nor an existing file"
    return PretrainConfig.from_dict(read_json_file(spec, ValueError, missing))


class LanguageModel(nn.Module):
    """biLM + shared softmax: the module that is trained (and wrapped by DDP)."""

    def __init__(self, bilm: BiLM, head: SoftmaxHead) -> None:
        super().__init__()
        self.bilm, self.head = bilm, head

    def forward(
        self,
        batch: LMBatch,
        state: tuple[Tensor, Tensor] | None,
        generator: torch.Generator | None,
    ) -> tuple[Tensor, Tensor, Tensor, tuple[Tensor, Tensor]]:
        """Returns ``(loss, forward_loss, backward_loss, new_state)``; losses are token means."""
        fwd, bwd = batch.forward, batch.backward
        lengths = fwd.mask.sum(1)  # (B,) sentence mode may pad; both directions share lengths
        top_f, top_b, new_state = self.bilm.run_streams(
            fwd.char_ids, bwd.char_ids, state, lengths=lengths
        )  # (B, T, P) each
        loss_f = self.head.loss(top_f[fwd.mask], fwd.targets[fwd.mask], generator)
        loss_b = self.head.loss(top_b[bwd.mask], bwd.targets[bwd.mask], generator)
        return 0.5 * (loss_f + loss_b), loss_f, loss_b, new_state


# ------------------------------------------------------------------------------ checkpointing
#: ``torch.save`` to a temporary file, fsync, rename: readers see the old or the new file. Kept
#: under this name for ``experiments.run.runner``; :func:`bilm.files.save_torch` is the one
#: definition.
atomic_save = save_torch


def load_training_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a training checkpoint (``weights_only``: no arbitrary pickle code runs); every
    floating-point weight of its model must be finite.

    Raises:
        ValueError: not a pretraining checkpoint of this format.
        WeightsError: a weight holding NaN or infinity (its name and the count named).
    """
    from bilm.checks import check_finite

    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not an elmo-bench pretraining checkpoint")
    for name, tensor in payload.get("model", {}).items():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point():
            check_finite(tensor.detach().float().numpy(), name, path)
    return payload


def build_model(config: PretrainConfig, vocab_size: int) -> LanguageModel:
    """A freshly initialised biLM + softmax (deterministic given ``config.seed``)."""
    torch.manual_seed(config.seed)
    # the options gate (bounds, then memory) before anything is allocated
    model = build_bilm(config.model, dropout=config.dropout, source="the pretraining config")
    bilm = init_weights(model, seed=config.seed)
    head = SoftmaxHead(vocab_size, config.model.lstm.projection_dim, config.num_samples)
    return LanguageModel(bilm, head)


def build_optimizer(config: PretrainConfig, model: nn.Module) -> torch.optim.Optimizer:
    """The configured optimizer over ``model``'s parameters (create it after moving the model)."""
    if config.optimizer == "adagrad":
        return torch.optim.Adagrad(
            model.parameters(),
            lr=config.lr,
            initial_accumulator_value=config.adagrad_initial_accumulator,
        )
    return torch.optim.Adam(model.parameters(), lr=config.lr)


def batch_to_device(batch: LMBatch, device: torch.device) -> LMBatch:
    """``batch`` with its tensors on ``device`` (the same object when they already are)."""
    if batch.forward.char_ids.device == device:
        return batch

    def move(half: DirectionBatch) -> DirectionBatch:
        return replace(
            half,
            char_ids=half.char_ids.to(device, non_blocking=True),
            targets=half.targets.to(device, non_blocking=True),
            mask=half.mask.to(device, non_blocking=True),
        )

    return replace(batch, forward=move(batch.forward), backward=move(batch.backward))


def _state_to(
    state: tuple[Tensor, Tensor] | None, device: torch.device
) -> tuple[Tensor, Tensor] | None:
    return None if state is None else (state[0].to(device), state[1].to(device))


# ------------------------------------------------------------------------------ one step
@dataclass
class StepOutput:
    """What :func:`training_step` returns (tensors stay on the device: no synchronisation).

    Attributes:
        loss: mean of the two directions' token-mean losses (before ``× unroll_steps``).
        loss_fwd: forward LM loss.
        loss_bwd: backward LM loss.
        grad_norm: global gradient norm before clipping (unscaled).
        state: the LSTM state to carry into the next batch (detached).
        skipped: the fp16 gradient scaler found inf/NaN gradients and skipped the update.
    """

    loss: Tensor
    loss_fwd: Tensor
    loss_bwd: Tensor
    grad_norm: Tensor
    state: tuple[Tensor, Tensor]
    skipped: bool = False


def training_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: LMBatch,
    state: tuple[Tensor, Tensor] | None,
    sampler: torch.Generator | None,
    *,
    unroll_steps: int,
    clip_norm: float,
    precision: Precision = "fp32",
    scaler: torch.amp.GradScaler | None = None,
) -> StepOutput:
    """One optimizer step, exactly as :func:`train` runs it (and the benchmark times it).

    Forward under autocast (``precision``), ``(loss × unroll_steps).backward()`` as bilm-tf does,
    global-norm clip to ``clip_norm`` (on unscaled gradients), optimizer step and scaler update.

    Args:
        model: a :class:`LanguageModel`, or its ``DistributedDataParallel`` wrapper; its
            parameters' device is where the step runs (``batch`` and ``state`` are moved there).
        optimizer: over ``model``'s parameters (:func:`build_optimizer`).
        batch: the next batch (any device).
        state: carried LSTM state, or ``None`` for zeros (first batch, sentence mode).
        sampler: generator of the sampled-softmax negatives, on the model's device.
        unroll_steps: the loss multiplier (``config.unroll_steps``).
        clip_norm: global gradient-norm clip (``config.clip_norm``).
        precision: ``fp32``, ``bf16`` or ``fp16`` (:mod:`bilm.devices`).
        scaler: :func:`bilm.devices.make_scaler`'s scaler; ``None`` = no scaling.

    Raises:
        FloatingPointError: a non-finite gradient norm without an enabled scaler (with one, the
            step is skipped and ``skipped`` is True, as fp16 training expects now and then).
    """
    device = next(model.parameters()).device
    batch = batch_to_device(batch, device)
    state = _state_to(state, device)
    scaler = scaler if scaler is not None else make_scaler(device, "fp32")
    with autocast(device, precision):
        loss, loss_f, loss_b, new_state = model(batch, state, sampler)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss * unroll_steps).backward()  # bilm-tf scales by unroll_steps
    scaler.unscale_(optimizer)
    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    skipped = False
    if scaler.is_enabled():
        skipped = not bool(torch.isfinite(grad_norm))
    elif not torch.isfinite(grad_norm):
        raise FloatingPointError(f"non-finite gradient norm ({float(grad_norm)})")
    scaler.step(optimizer)  # a plain optimizer.step() when the scaler is disabled
    scaler.update()
    return StepOutput(loss, loss_f, loss_b, grad_norm, new_state, skipped)


# ------------------------------------------------------------------------------ evaluation
def _direction_nll(model: LanguageModel, top: Tensor, batch: DirectionBatch) -> float:
    hidden, targets = top[batch.mask], batch.targets[batch.mask]
    return float(model.head.full_loss(hidden, targets)) * int(targets.numel())


@torch.no_grad()
def evaluate_perplexity(
    model: LanguageModel,
    vocab: Vocabulary,
    files: Sequence[str | os.PathLike[str]],
    batch_size: int = 64,
    unroll_steps: int = 20,
) -> dict[str, float]:
    """Held-out perplexity with the full softmax, state carried through the text (bilm-tf test()).

    Returns:
        ``forward``, ``backward`` (each ``exp(mean NLL)``), ``average`` (mean of the two, as the
        paper's "average forward and backward perplexities"), and ``tokens`` per direction.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    # Each row is one continuous stream and the last incomplete batch is dropped: use fewer rows
    # for small files so that at least ~99.5 % of the text is scored (the count is returned).
    rows = max(1, min(batch_size, count_tokens(files) // (200 * unroll_steps)))
    stream = BidirectionalLMStream(
        files, vocab, batch_size=rows, unroll_steps=unroll_steps, shuffle=False, max_epochs=1
    )
    nll = {"forward": 0.0, "backward": 0.0}
    count = 0
    state = None
    for batch in stream:
        batch = batch_to_device(batch, device)
        lengths = batch.forward.mask.sum(1)
        top_f, top_b, state = model.bilm.run_streams(
            batch.forward.char_ids, batch.backward.char_ids, state, lengths=lengths
        )
        nll["forward"] += _direction_nll(model, top_f, batch.forward)
        nll["backward"] += _direction_nll(model, top_b, batch.backward)
        count += int(batch.forward.mask.sum())
    model.train(was_training)
    if count == 0:
        raise ValueError(f"{list(map(str, files))}: too little text for one evaluation batch")
    f, b = math.exp(nll["forward"] / count), math.exp(nll["backward"] / count)
    return {"forward": f, "backward": b, "average": 0.5 * (f + b), "tokens": count}


# ------------------------------------------------------------------------------ training
@dataclass
class TrainResult:
    """What :func:`train` returns."""

    steps: int
    tokens: int
    seconds: float
    perplexity: dict[str, float] | None
    checkpoint: Path


def _world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@dataclass
class _PretrainRun:
    """Everything one :func:`train` call works with; the loop reads and advances only this.

    Attributes:
        config: the hyper-parameters.
        out: the run directory.
        vocab: the softmax vocabulary.
        model: the language model, on ``device``.
        trained: what steps run through: ``model`` or its ``DistributedDataParallel`` wrapper.
        optimizer: over ``model``'s parameters.
        scaler: the gradient scaler (disabled unless fp16 on CUDA).
        sampler: generator of the sampled-softmax negatives (same seed on every rank).
        stream: this rank's batches.
        device: where the model, batches and carried state live.
        precision: autocast precision of the forward pass.
        rank: this process's rank.
        world: number of processes.
        resumed: this call continues a checkpoint.
        state: LSTM state carried into the next batch (``None``: zeros).
        step: optimizer steps done (over all calls).
        tokens: text tokens per direction seen (over all calls and ranks).
    """

    config: PretrainConfig
    out: Path
    vocab: Vocabulary
    model: LanguageModel
    trained: nn.Module
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    sampler: torch.Generator
    stream: BidirectionalLMStream
    device: torch.device
    precision: Precision
    rank: int
    world: int
    resumed: bool
    state: tuple[Tensor, Tensor] | None = None
    step: int = 0
    tokens: int = 0

    @property
    def checkpoint_path(self) -> Path:
        """``out/checkpoint.pt``."""
        return self.out / CHECKPOINT_NAME


def train(
    config: PretrainConfig,
    train_files: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    valid_files: Sequence[str | os.PathLike[str]] = (),
    progress: bool = True,
    wandb_project: str | None = None,
    stop_after: int | None = None,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
    device: str | torch.device = "auto",
    precision: str = "fp32",
    vocab: Vocabulary | None = None,
    init_model: Callable[[LanguageModel], None] | None = None,
    freeze_bilm: bool = False,
) -> TrainResult:
    """Train (or resume when ``out_dir`` holds a checkpoint).

    Args:
        config: hyper-parameters.
        train_files: text shards, one tokenized sentence per line.
        out_dir: holds ``vocab.txt``, ``config.json``, ``checkpoint.pt``, ``log.jsonl``.
        valid_files: held-out text for perplexity (optional).
        progress: tqdm bar with tokens/s (rank 0).
        wandb_project: log to Weights & Biases (offline unless ``WANDB_MODE`` says otherwise).
        stop_after: stop after this many steps *in this call* (tests of resume).
        on_step: callback ``(step, metrics)`` after each step.
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:N`` (:func:`bilm.devices.resolve_device`;
            ``auto``/``cuda`` mean ``cuda:LOCAL_RANK`` under torchrun), or a resolved
            :class:`torch.device`.
        precision: ``fp32`` | ``bf16`` | ``fp16`` (autocast; fp16 with a gradient scaler, CUDA
            only). Resuming with another device type or precision continues the run but cannot
            reproduce an uninterrupted one exactly (a warning says so).
        vocab: the softmax vocabulary of a fresh run (default: built from ``train_files`` with
            ``config.min_count``/``max_vocab``); on resume it must equal ``out_dir/vocab.txt``.
        init_model: called once on the freshly built (CPU) model of a fresh run, before the
            optimizer exists: loads pretrained weights (fine-tuning, :mod:`bilm.finetune`). Not
            called on resume (the checkpoint holds the weights).
        freeze_bilm: train only the softmax (the biLM's parameters get no gradient).

    Returns:
        :class:`TrainResult`.

    Raises:
        bilm.devices.DeviceError: a device or precision this machine cannot run.
        ValueError: on resume, ``vocab`` differs from the run's ``vocab.txt``.
    """
    run = _set_up(config, train_files, out_dir, device, precision, vocab, init_model, freeze_bilm)
    report = _Reporter(run, wandb_project, progress)
    start = time.perf_counter()
    steps_this_call = 0
    perplexity = None
    try:
        while run.step < config.max_steps and not _must_stop(
            config, stop_after, steps_this_call, start
        ):
            batch = next(run.stream, None)
            if batch is None:  # a finite stream ran out
                break
            out = _train_step(run, batch)
            steps_this_call += 1
            metrics = {
                "loss": out.loss.item(),
                "loss_fwd": out.loss_fwd.item(),
                "loss_bwd": out.loss_bwd.item(),
            }
            if on_step:
                on_step(run.step, metrics)
            report.step(run, out, metrics)
            if _due(config.eval_every, run.step) and valid_files and run.rank == 0:
                perplexity = _evaluate(run, valid_files, report)
            if _due(config.checkpoint_every, run.step):
                _save_checkpoint(run)
        _save_checkpoint(run)
        if valid_files and run.rank == 0:
            perplexity = _evaluate(run, valid_files, report)
    finally:
        report.close()
    seconds = time.perf_counter() - start
    return TrainResult(run.step, run.tokens, seconds, perplexity, run.checkpoint_path)


def _must_stop(
    config: PretrainConfig, stop_after: int | None, steps_this_call: int, start: float
) -> bool:
    """This call's budget is spent: ``stop_after`` steps, or ``config.max_minutes``."""
    if stop_after is not None and steps_this_call >= stop_after:
        return True
    minutes = config.max_minutes
    if not minutes:
        return False
    return time.perf_counter() - start > 60 * minutes


def _due(every: int, step: int) -> bool:
    """``step`` is a multiple of ``every`` (never when ``every`` is 0)."""
    return bool(every) and step % every == 0


# -------------------------------------------------------------------- training: the steps
def _set_up(
    config: PretrainConfig,
    train_files: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    device: str | torch.device,
    precision: str,
    vocab: Vocabulary | None,
    init_model: Callable[[LanguageModel], None] | None,
    freeze_bilm: bool,
) -> _PretrainRun:
    """The run's state: a fresh one, or the checkpoint's in ``out_dir`` (see :func:`train`)."""
    rank, world = _world()
    if not isinstance(device, torch.device):
        device = resolve_device(device, local_rank=torchrun_local_rank() if world > 1 else None)
    amp = resolve_precision(device, precision)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    resume = (out / CHECKPOINT_NAME).exists()
    vocab = _run_vocabulary(config, train_files, out, vocab, resume, rank)
    model = build_model(config, len(vocab))  # initialised on the CPU: same everywhere
    if init_model is not None and not resume:
        init_model(model)
    model = model.to(device)
    if freeze_bilm:
        model.bilm.requires_grad_(False)
    stream = BidirectionalLMStream(
        train_files,
        vocab,
        batch_size=config.batch_size,
        unroll_steps=config.unroll_steps,
        mode=config.mode,
        seed=config.seed,
        rank=rank,
        world_size=world,
    )
    run = _PretrainRun(
        config=config,
        out=out,
        vocab=vocab,
        model=model,
        trained=model,  # wrapped by DDP below, once the checkpoint is loaded
        optimizer=build_optimizer(config, model),
        scaler=make_scaler(device, amp),
        sampler=torch.Generator(device=device).manual_seed(config.seed + 1),
        stream=stream,
        device=device,
        precision=amp,
        rank=rank,
        world=world,
        resumed=resume,
    )
    if resume:
        _resume(run)
    if world > 1:
        device_ids = [device.index] if device.type == "cuda" else None
        run.trained = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    model.train()
    return run


def _run_vocabulary(
    config: PretrainConfig,
    train_files: Sequence[str | os.PathLike[str]],
    out: Path,
    vocab: Vocabulary | None,
    resume: bool,
    rank: int,
) -> Vocabulary:
    """The run's ``vocab.txt`` on resume; else ``vocab`` (or one built), saved with the config."""
    vocab_path = out / VOCAB_NAME
    if resume:
        stored = Vocabulary.load(vocab_path)
        if vocab is not None and vocab != stored:
            raise ValueError(f"{vocab_path}: the run was started with another vocabulary")
        return stored
    if vocab is None:
        vocab = Vocabulary.build(train_files, min_count=config.min_count, max_size=config.max_vocab)
    if rank == 0:
        vocab.save(vocab_path)
        write_json(out / CONFIG_NAME, config.to_dict(), indent=2)
    return vocab


def _resume(run: _PretrainRun) -> None:
    """Load ``run``'s checkpoint into it: weights, optimizer, streams, carried state, RNGs."""
    path = run.checkpoint_path
    payload = load_training_checkpoint(path)
    if payload["vocab_fingerprint"] != run.vocab.fingerprint():
        raise ValueError(
            f"{path}: checkpoint was trained with another vocabulary than {run.out / VOCAB_NAME}"
        )
    if payload["config"] != _identity(run.config):
        raise ValueError(f"{path}: checkpoint was written with another config")
    run.model.load_state_dict(payload["model"])
    run.optimizer.load_state_dict(payload["optimizer"])  # moves its state to the params' device
    run.stream.load_state_dict(json.loads(payload["data"])[run.rank])
    lstm_states = payload["lstm_state"]
    run.state = _state_to(lstm_states[run.rank], run.device) if lstm_states else None
    run.step, run.tokens = payload["step"], payload["tokens"]
    _restore_rng(run, payload)
    if payload.get("scaler") and run.scaler.is_enabled():
        run.scaler.load_state_dict(payload["scaler"])
    saved = (torch.device(payload.get("device", "cpu")).type, payload.get("precision", "fp32"))
    if saved != (run.device.type, run.precision):
        logger.warning(
            "%s: written on %s with %s, resumed on %s with %s: the run continues, but it "
            "will not reproduce an uninterrupted run exactly",
            path,
            *saved,
            run.device.type,
            run.precision,
        )
    _truncate_log(run.out / LOG_NAME, run.step)
    logger.info("resumed from %s at step %d", path, run.step)


def _restore_rng(run: _PretrainRun, payload: dict[str, Any]) -> None:
    """The RNG states of the checkpoint (the sampler's only from the same device type)."""
    torch.set_rng_state(payload["rng_torch"][run.rank])
    if torch.device(payload.get("device", "cpu")).type == run.device.type:
        run.sampler.set_state(payload["rng_sampler"])
        if run.device.type == "cuda" and payload.get("rng_cuda"):
            torch.cuda.set_rng_state(payload["rng_cuda"][run.rank], run.device)
    else:  # generator states differ between device types: reseed, deterministically
        run.sampler.manual_seed(run.config.seed + 1 + run.step)


def _train_step(run: _PretrainRun, batch: LMBatch) -> StepOutput:
    """One optimizer step on ``batch``; advances ``run``'s state, step and token counters."""
    if batch.reset_state:
        run.state = None
    try:
        out = training_step(
            run.trained,
            run.optimizer,
            batch,
            run.state,
            run.sampler,
            unroll_steps=run.config.unroll_steps,
            clip_norm=run.config.clip_norm,
            precision=run.precision,
            scaler=run.scaler,
        )
    except FloatingPointError as exc:
        raise FloatingPointError(f"step {run.step + 1}: {exc}") from None
    run.state = out.state
    run.step += 1
    run.tokens += batch.forward.n_tokens * run.world  # text tokens per direction
    return out


def _evaluate(
    run: _PretrainRun, valid_files: Sequence[str | os.PathLike[str]], report: _Reporter
) -> dict[str, float]:
    """Held-out perplexity of the model now, logged at the current step."""
    perplexity = evaluate_perplexity(run.model, run.vocab, valid_files)
    report.evaluation(run.step, perplexity)
    return perplexity


def _save_checkpoint(run: _PretrainRun) -> None:
    """Write ``checkpoint.pt`` atomically (rank 0) with every rank's streams, state and RNGs."""
    cpu = torch.device("cpu")  # gathered as CPU tensors: all_gather_object pickles them
    cuda = run.device.type == "cuda"
    mine = (
        run.stream.state_dict(),
        _state_to(run.state, cpu),
        torch.get_rng_state(),
        torch.cuda.get_rng_state(run.device) if cuda else None,
    )
    ranks: list[Any] = [mine]
    if run.world > 1:
        ranks = [None] * run.world
        dist.all_gather_object(ranks, mine)
    if run.rank == 0:
        payload = {
            "format": CHECKPOINT_FORMAT,
            "step": run.step,
            "tokens": run.tokens,
            "config": _identity(run.config),
            "vocab_fingerprint": run.vocab.fingerprint(),
            "model": run.model.state_dict(),
            "optimizer": run.optimizer.state_dict(),
            "data": json.dumps([r[0] for r in ranks]),
            "lstm_state": [r[1] for r in ranks] if run.state is not None else [],
            "rng_torch": [r[2] for r in ranks],
            "rng_cuda": [r[3] for r in ranks] if cuda else [],
            "rng_sampler": run.sampler.get_state(),
            "scaler": run.scaler.state_dict(),
            "device": str(run.device),
            "precision": run.precision,
        }
        save_torch(payload, run.checkpoint_path)
    if run.world > 1:
        dist.barrier()


# -------------------------------------------------------------------- training: the records
class _Reporter:
    """Where a run's records go on rank 0: ``log.jsonl``, W&B, the tqdm bar (none elsewhere).

    The log gets one ``session`` record per call (where and how the following steps ran), a
    record every ``log_every`` steps and one per evaluation.
    """

    def __init__(self, run: _PretrainRun, wandb_project: str | None, progress: bool) -> None:
        session = {
            "device": str(run.device),
            "device_name": describe_device(run.device),
            "precision": run.precision,
            "world_size": run.world,
            "resumed": run.resumed,
            "torch": torch.__version__,
        }
        logger.info(
            "training on %s, %s, %d process(es)", session["device_name"], run.precision, run.world
        )
        lead = run.rank == 0
        self.log = (run.out / LOG_NAME).open("a", encoding="utf-8") if lead else None
        self._write({"step": run.step, "session": session})
        self.wandb = _wandb(wandb_project, run.config, run.out, session) if lead else None
        self.bar: Any = None
        if progress and lead:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=run.config.max_steps, initial=run.step, unit="step", dynamic_ncols=True
            )
        self._window = (run.tokens, time.perf_counter())  # tokens and time at the window start

    def step(self, run: _PretrainRun, out: StepOutput, metrics: dict[str, float]) -> None:
        """After each step: a log record every ``log_every`` steps (and at the last one)."""
        if _due(run.config.log_every, run.step) or run.step == run.config.max_steps:
            tokens, since = self._window
            record = {
                "step": run.step,
                "tokens": run.tokens,
                **metrics,
                "grad_norm": float(out.grad_norm),
                "tokens_per_s": (run.tokens - tokens) / max(time.perf_counter() - since, 1e-9),
            }
            if run.scaler.is_enabled():
                record["loss_scale"] = run.scaler.get_scale()
                record["skipped"] = out.skipped
            self._window = (run.tokens, time.perf_counter())
            self._write(record)
            if self.wandb:
                self.wandb.log(record, step=run.step)
            if self.bar:
                loss, speed = f"{metrics['loss']:.3f}", f"{record['tokens_per_s']:.0f}"
                self.bar.set_postfix(loss=loss, tok_s=speed)
        if self.bar:
            self.bar.update(1)

    def evaluation(self, step: int, perplexity: dict[str, float]) -> None:
        """A held-out perplexity measured at ``step``."""
        self._write({"step": step, "eval": perplexity})
        if self.wandb:
            self.wandb.log({f"valid/{k}": v for k, v in perplexity.items()}, step=step)

    def close(self) -> None:
        """Close the bar, the log file and the W&B run."""
        if self.bar:
            self.bar.close()
        if self.log:
            self.log.close()
        if self.wandb:
            self.wandb.finish()

    def _write(self, record: dict[str, Any]) -> None:
        if self.log:
            self.log.write(json.dumps(record) + "\n")
            self.log.flush()


def _truncate_log(path: Path, step: int) -> None:
    """Drop log records written after the checkpoint we resume from (they will be redone)."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by the kill
        if record.get("step", 0) <= step and not ("eval" in record and record["step"] == step):
            keep.append(line)
    write_text(path, "".join(k + "\n" for k in keep))


_WandbMode = Literal["online", "offline", "disabled", "shared"]
_WANDB_MODES: tuple[_WandbMode, ...] = ("online", "offline", "disabled", "shared")


def _wandb(project: str | None, config: PretrainConfig, out: Path, session: dict[str, Any]) -> Any:
    """A W&B run (offline unless ``WANDB_MODE`` says otherwise), or ``None`` without a project."""
    if not project:
        return None
    try:
        import wandb
    except ImportError as exc:
        raise ImportError("W&B logging needs wandb: pip install wandb") from exc
    wanted = os.environ.get("WANDB_MODE", "offline")
    mode = next((m for m in _WANDB_MODES if m == wanted), None)
    if mode is None:
        raise ValueError(f"WANDB_MODE={wanted!r}: expected one of {', '.join(_WANDB_MODES)}")
    run_config = {**config.to_dict(), "session": session}
    return wandb.init(project=project, config=run_config, dir=str(out), mode=mode)


# ------------------------------------------------------------------------------ release files
def save_language_model(
    model: LanguageModel,
    vocab: Vocabulary,
    path: str | os.PathLike[str],
    dtype: torch.dtype = torch.float32,
    metadata: dict[str, str] | None = None,
) -> Path:
    """One self-contained file: biLM + shared softmax + vocabulary (safetensors, no pickle).

    ``bilm.load_checkpoint`` reads the biLM from it (the softmax is ignored);
    :func:`load_language_model` reads everything, for perplexity.
    """
    from bilm.weights import HEAD_PREFIX, save_checkpoint

    extra = {"vocab": "\n".join(vocab.tokens), **(metadata or {})}
    head = {f"{HEAD_PREFIX}weight": model.head.weight, f"{HEAD_PREFIX}bias": model.head.bias}
    return save_checkpoint(model.bilm, path, extra=extra, extra_tensors=head, dtype=dtype)


def load_language_model(path: str | os.PathLike[str]) -> tuple[LanguageModel, Vocabulary]:
    """Read a language model for evaluation (eval mode).

    Args:
        path: a release file written by :func:`save_language_model`, a training ``checkpoint.pt``,
            or the training output directory holding it (with ``vocab.txt`` and ``config.json``).

    Raises:
        ValueError: the file holds no softmax or vocabulary (a plain biLM checkpoint).
    """
    from bilm.weights import (
        HEAD_PREFIX,
        load_checkpoint,
        load_checkpoint_tensors,
        read_checkpoint_metadata,
    )

    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if path.suffix == ".pt":  # the file's weights checked finite; the model built gated
        payload = load_training_checkpoint(path)
        config = PretrainConfig.from_dict(
            json.loads((path.parent / CONFIG_NAME).read_text(encoding="utf-8"))
        )
        vocab = Vocabulary.load(path.parent / VOCAB_NAME)
        model = build_model(replace(config, num_samples=None), len(vocab))
        model.load_state_dict(payload["model"])
        return model.eval(), vocab
    metadata = read_checkpoint_metadata(path)
    if "vocab" not in metadata:
        raise ValueError(f"{path}: no vocabulary/softmax in this checkpoint (biLM weights only)")
    vocab = Vocabulary(metadata["vocab"].split("\n"), source=f"{path} (metadata)")
    bilm = load_checkpoint(path)
    tensors = load_checkpoint_tensors(path)
    head = SoftmaxHead(len(vocab), bilm.options.lstm.projection_dim)
    head.load_state_dict(
        {"weight": tensors[f"{HEAD_PREFIX}weight"], "bias": tensors[f"{HEAD_PREFIX}bias"]}
    )
    return LanguageModel(bilm, head).eval(), vocab
