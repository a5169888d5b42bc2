"""biLM pretraining: configs, the training loop with exact resume, held-out perplexity.

Follows bilm-tf ``training.py`` (ELMO_SPEC §11): forward and backward LMs over two independent
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
from bilm.lm import SoftmaxHead
from bilm.lm_data import BatchMode, BidirectionalLMStream, DirectionBatch, LMBatch, count_tokens
from bilm.options import BiLMOptions, CharCNNOptions, LSTMOptions, read_json_file
from bilm.vocab import Vocabulary
from bilm.weights import init_weights

logger = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "elmo-bench-pretrain/1"
CHECKPOINT_NAME = "checkpoint.pt"
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
def atomic_save(payload: dict[str, Any], path: Path) -> None:
    """``torch.save`` to a temporary file, fsync, rename: readers see the old or the new file."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_training_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a training checkpoint (``weights_only``: no arbitrary pickle code runs)."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path}: not an elmo-bench pretraining checkpoint")
    return payload


def build_model(config: PretrainConfig, vocab_size: int) -> LanguageModel:
    """A freshly initialised biLM + softmax (deterministic given ``config.seed``)."""
    torch.manual_seed(config.seed)
    bilm = init_weights(BiLM(config.model, dropout=config.dropout), seed=config.seed)
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
    rank, world = _world()
    if not isinstance(device, torch.device):
        device = resolve_device(device, local_rank=torchrun_local_rank() if world > 1 else None)
    amp = resolve_precision(device, precision)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path = out / CHECKPOINT_NAME
    vocab_path = out / "vocab.txt"
    resume = ckpt_path.exists()
    if resume:
        given, vocab = vocab, Vocabulary.load(vocab_path)
        if given is not None and given != vocab:
            raise ValueError(f"{vocab_path}: the run was started with another vocabulary")
    else:
        if vocab is None:
            vocab = Vocabulary.build(
                train_files, min_count=config.min_count, max_size=config.max_vocab
            )
        if rank == 0:
            vocab.save(vocab_path)
            (out / "config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")

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
    optimizer = build_optimizer(config, model)
    scaler = make_scaler(device, amp)
    sampler = torch.Generator(device=device).manual_seed(config.seed + 1)
    state: tuple[Tensor, Tensor] | None = None
    step, tokens = 0, 0
    if resume:
        payload = load_training_checkpoint(ckpt_path)
        if payload["vocab_fingerprint"] != vocab.fingerprint():
            raise ValueError(
                f"{ckpt_path}: checkpoint was trained with another vocabulary than {vocab_path}"
            )
        if payload["config"] != _identity(config):
            raise ValueError(f"{ckpt_path}: checkpoint was written with another config")
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])  # moves its state to the params' device
        stream.load_state_dict(json.loads(payload["data"])[rank])
        state = _state_to(payload["lstm_state"][rank], device) if payload["lstm_state"] else None
        step, tokens = payload["step"], payload["tokens"]
        torch.set_rng_state(payload["rng_torch"][rank])
        saved_type = torch.device(payload.get("device", "cpu")).type
        saved_precision = payload.get("precision", "fp32")
        if saved_type == device.type:
            sampler.set_state(payload["rng_sampler"])
            if device.type == "cuda" and payload.get("rng_cuda"):
                torch.cuda.set_rng_state(payload["rng_cuda"][rank], device)
        else:  # generator states differ between device types: reseed, deterministically
            sampler.manual_seed(config.seed + 1 + step)
        if payload.get("scaler") and scaler.is_enabled():
            scaler.load_state_dict(payload["scaler"])
        if (saved_type, saved_precision) != (device.type, amp):
            logger.warning(
                "%s: written on %s with %s, resumed on %s with %s: the run continues, but it "
                "will not reproduce an uninterrupted run exactly",
                ckpt_path,
                saved_type,
                saved_precision,
                device.type,
                amp,
            )
        _truncate_log(out / "log.jsonl", step)
        logger.info("resumed from %s at step %d", ckpt_path, step)

    trained: nn.Module = model
    if world > 1:
        device_ids = [device.index] if device.type == "cuda" else None
        trained = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    model.train()
    session = {
        "device": str(device),
        "device_name": describe_device(device),
        "precision": amp,
        "world_size": world,
        "resumed": resume,
        "torch": torch.__version__,
    }
    logger.info("training on %s, %s, %d process(es)", describe_device(device), amp, world)
    log = (out / "log.jsonl").open("a", encoding="utf-8") if rank == 0 else None
    if log:  # one record per call: where and how the following steps ran
        log.write(json.dumps({"step": step, "session": session}) + "\n")
        log.flush()
    run = _wandb(wandb_project, config, out, session) if (wandb_project and rank == 0) else None
    bar = None
    if progress and rank == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.max_steps, initial=step, unit="step", dynamic_ncols=True)
    start = time.perf_counter()
    steps_this_call = 0
    perplexity = None
    window_tokens, window_start = 0, time.perf_counter()

    def save() -> None:
        cpu = torch.device("cpu")  # gathered as CPU tensors: all_gather_object pickles them
        data_states = [stream.state_dict()]
        lstm_states = [_state_to(state, cpu)]
        rng = [torch.get_rng_state()]
        rng_cuda = [torch.cuda.get_rng_state(device)] if device.type == "cuda" else []
        if world > 1:
            gathered: list[Any] = [None] * world
            mine = (data_states[0], lstm_states[0], rng[0], rng_cuda[0] if rng_cuda else None)
            dist.all_gather_object(gathered, mine)
            data_states = [g[0] for g in gathered]
            lstm_states = [g[1] for g in gathered]
            rng = [g[2] for g in gathered]
            rng_cuda = [g[3] for g in gathered] if rng_cuda else []
        if rank == 0:
            payload = {
                "format": CHECKPOINT_FORMAT,
                "step": step,
                "tokens": tokens,
                "config": _identity(config),
                "vocab_fingerprint": vocab.fingerprint(),
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "data": json.dumps(data_states),
                "lstm_state": lstm_states if state is not None else [],
                "rng_torch": rng,
                "rng_cuda": rng_cuda,
                "rng_sampler": sampler.get_state(),
                "scaler": scaler.state_dict(),
                "device": str(device),
                "precision": amp,
            }
            atomic_save(payload, ckpt_path)
        if world > 1:
            dist.barrier()

    try:
        while step < config.max_steps:
            if stop_after is not None and steps_this_call >= stop_after:
                break
            if config.max_minutes and time.perf_counter() - start > 60 * config.max_minutes:
                break
            try:
                batch = next(stream)
            except StopIteration:
                break
            if batch.reset_state:
                state = None
            try:
                out_step = training_step(
                    trained,
                    optimizer,
                    batch,
                    state,
                    sampler,
                    unroll_steps=config.unroll_steps,
                    clip_norm=config.clip_norm,
                    precision=amp,
                    scaler=scaler,
                )
            except FloatingPointError as exc:
                raise FloatingPointError(f"step {step + 1}: {exc}") from None
            state, grad_norm = out_step.state, out_step.grad_norm
            step += 1
            steps_this_call += 1
            batch_tokens = batch.forward.n_tokens * world  # text tokens per direction
            tokens += batch_tokens
            window_tokens += batch_tokens
            metrics = {
                "loss": out_step.loss.item(),
                "loss_fwd": out_step.loss_fwd.item(),
                "loss_bwd": out_step.loss_bwd.item(),
            }
            if on_step:
                on_step(step, metrics)
            if step % config.log_every == 0 or step == config.max_steps:
                elapsed = time.perf_counter() - window_start
                record = {
                    "step": step,
                    "tokens": tokens,
                    **metrics,
                    "grad_norm": float(grad_norm),
                    "tokens_per_s": window_tokens / max(elapsed, 1e-9),
                }
                if scaler.is_enabled():
                    record["loss_scale"] = scaler.get_scale()
                    record["skipped"] = out_step.skipped
                window_tokens, window_start = 0, time.perf_counter()
                if log:
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                if run:
                    run.log(record, step=step)
                if bar:
                    bar.set_postfix(
                        loss=f"{metrics['loss']:.3f}", tok_s=f"{record['tokens_per_s']:.0f}"
                    )
            if bar:
                bar.update(1)
            if config.eval_every and step % config.eval_every == 0 and valid_files and rank == 0:
                perplexity = evaluate_perplexity(model, vocab, valid_files)
                _log_eval(log, run, step, perplexity)
            if step % config.checkpoint_every == 0:
                save()
        save()
        if valid_files and rank == 0:
            perplexity = evaluate_perplexity(model, vocab, valid_files)
            _log_eval(log, run, step, perplexity)
    finally:
        if bar:
            bar.close()
        if log:
            log.close()
        if run:
            run.finish()
    return TrainResult(step, tokens, time.perf_counter() - start, perplexity, ckpt_path)


def _log_eval(log: Any, run: Any, step: int, perplexity: dict[str, float]) -> None:
    record = {"step": step, "eval": perplexity}
    if log:
        log.write(json.dumps(record) + "\n")
        log.flush()
    if run:
        run.log({f"valid/{k}": v for k, v in perplexity.items()}, step=step)


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
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(k + "\n" for k in keep), encoding="utf-8")
    os.replace(tmp, path)


def _wandb(project: str, config: PretrainConfig, out: Path, session: dict[str, Any]) -> Any:
    try:
        import wandb
    except ImportError as exc:
        raise ImportError("W&B logging needs wandb: pip install wandb") from exc
    mode = os.environ.get("WANDB_MODE", "offline")
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
    if path.suffix == ".pt":
        payload = load_training_checkpoint(path)
        config = PretrainConfig.from_dict(
            json.loads((path.parent / "config.json").read_text(encoding="utf-8"))
        )
        vocab = Vocabulary.load(path.parent / "vocab.txt")
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
