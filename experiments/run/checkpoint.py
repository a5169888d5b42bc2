"""A training run's checkpoint: everything its loop needs to resume with identical numbers.

One file (``checkpoint.pt``, written atomically with :func:`bilm.files.save_torch`) holds the
model, optimizer, EMA averages, best weights, grad scaler, the loop state (JSON), every RNG state,
the configuration and run identity it was written under (a full disk raises
:class:`bilm.files.NoSpaceError`, one line naming the file; the previous checkpoint is kept and no
partial file is left). Frozen parameters (``requires_grad`` false: a task's fixed word vectors, a
frozen representation's weights) are stored by reference only (dtype, shape, SHA-256): the run
rebuilds them from their fingerprinted source, and :func:`load_checkpoint` checks that it rebuilt
the very same tensors.

Example::

    save_checkpoint(path, parts, state=state_json, best_weights=best, config=c, identity=i)
    try:
        restored = load_checkpoint(path, parts, config=c, identity=i)
    except StaleCheckpoint as why:
        ...  # start afresh; str(why) says what changed

A training run (:class:`experiments.run.setup.Run`) keeps its checkpoint as :data:`CHECKPOINT` in
its work folder, written under its configuration and identity: :func:`save_run` and :func:`resume`.
One process at a time trains in a work folder (:func:`work_folder_held`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from bilm.files import save_torch
from experiments.run.store import lock_file

__all__ = [
    "CHECKPOINT",
    "Restored",
    "RunParts",
    "StaleCheckpoint",
    "TrainingParts",
    "Weights",
    "WorkFolderBusy",
    "frozen_references",
    "load_checkpoint",
    "resume",
    "rng_state",
    "save_checkpoint",
    "save_run",
    "set_rng_state",
    "tensor_reference",
    "work_folder_held",
]

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"  # its name in a run's work folder
WORK_LOCK = ".lock"  # held by the process training in a work folder


class WorkFolderBusy(RuntimeError):
    """Another process is training the run in this work folder."""


@contextlib.contextmanager
def work_folder_held(work: Path, run_id: str) -> Iterator[None]:
    """Hold an exclusive lock on ``work/.lock`` while a run trains in ``work``.

    Two commands with different stores but one work root would otherwise train the same run
    in one folder, each resuming from and overwriting the other's checkpoint.

    Raises:
        WorkFolderBusy: another process holds the folder (without ``fcntl``, on Windows, the
            folder is not locked).
    """
    handle = lock_file(Path(work) / WORK_LOCK, blocking=False)
    if handle is None:
        raise WorkFolderBusy(
            f"run {run_id} is being trained by another process in {work} (its {WORK_LOCK} is "
            "locked): wait for that process, or give this command another work folder (--work)"
        )
    try:
        yield
    finally:
        handle.close()


Weights = dict[str, torch.Tensor]  # state-dict name → tensor


class Averages(Protocol):
    """An exponential moving average of weights (:class:`experiments.run.optim.EMA`)."""

    shadow: Weights


class TrainingParts(Protocol):
    """The stateful objects of a run that a checkpoint saves and restores in place."""

    @property
    def model(self) -> nn.Module: ...

    @property
    def optimizer(self) -> torch.optim.Optimizer: ...

    @property
    def scaler(self) -> torch.amp.GradScaler: ...

    @property
    def ema(self) -> Averages | None:
        """The EMA of the weights, when the run keeps one."""
        ...

    @property
    def device(self) -> torch.device: ...


class RunParts(TrainingParts, Protocol):
    """A training run's parts and where and under what its checkpoint is written."""

    @property
    def work(self) -> Path:
        """The run's work folder (its checkpoint is :data:`CHECKPOINT` there)."""
        ...

    @property
    def identity(self) -> str:
        """The run identity's reuse fields (JSON; ``""``: not checked)."""
        ...

    def config_json(self) -> str:
        """The task and training configuration (JSON) the run is under."""
        ...


@dataclass(frozen=True)
class Restored:
    """What :func:`load_checkpoint` hands back besides the parts it restored in place.

    Attributes:
        state: the loop state as it was saved (JSON).
        best_weights: the selected weights, frozen parameters being the live tensors of the
            rebuilt model (no copies); ``None`` before the first improvement.
        carried: the carried biLM state saved with it (``None``: the run carries none).
    """

    state: str
    best_weights: Weights | None
    carried: dict[str, torch.Tensor] | None = None


class StaleCheckpoint(Exception):
    """The checkpoint was written under other inputs; the message says which (the run must
    start afresh)."""


# ------------------------------------------------------------------------------ RNG states
def rng_state(device: torch.device) -> dict[str, Any]:
    """The torch, numpy, Python (and CUDA on a CUDA device) RNG states, storable with
    ``torch.load(weights_only=True)`` (numpy and Python states as JSON text)."""
    numpy_state = np.random.get_state()
    assert isinstance(numpy_state, tuple)  # the legacy ("MT19937", keys, pos, ...) form
    state = {
        "torch": torch.get_rng_state(),
        "numpy": json.dumps(numpy_state[1].tolist()),
        "numpy_pos": int(numpy_state[2]),
        "python": json.dumps(random.getstate()[1]),
    }
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    """Restore the RNG states :func:`rng_state` returned."""
    torch.set_rng_state(state["torch"])
    keys = np.array(json.loads(state["numpy"]), dtype=np.uint32)
    np.random.set_state(("MT19937", keys, state["numpy_pos"], 0, 0.0))
    random.setstate((3, tuple(json.loads(state["python"])), None))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


# ------------------------------------------------------------------------ frozen references
def tensor_reference(tensor: torch.Tensor) -> dict[str, Any]:
    """What a checkpoint stores instead of a frozen tensor: dtype, shape and the SHA-256 of
    its bytes (the run rebuilds the tensor from its fingerprinted source; this checks it)."""
    data = tensor.detach().cpu().contiguous()
    raw = data.reshape(-1).view(torch.uint8)  # (numel * element_size,) any dtype, bf16 too
    digest = hashlib.sha256(raw.numpy().tobytes()).hexdigest()
    return {"dtype": str(data.dtype), "shape": list(data.shape), "sha256": digest}


def frozen_references(model: nn.Module) -> dict[str, dict[str, Any]]:
    """Frozen parameters of ``model`` by state-dict name → :func:`tensor_reference`."""
    state = model.state_dict(keep_vars=True)
    return {
        name: tensor_reference(value)
        for name, value in state.items()
        if isinstance(value, nn.Parameter) and not value.requires_grad
    }


# ----------------------------------------------------------------------------- save / load
def save_checkpoint(
    path: Path,
    parts: TrainingParts,
    *,
    state: str,
    best_weights: Weights | None,
    config: str,
    identity: str,
    carried: Mapping[str, torch.Tensor] | None = None,
) -> None:
    """Write the checkpoint atomically; frozen parameters by reference, in the model and the
    best weights alike, so nothing is written twice.

    Args:
        path: the checkpoint file.
        parts: model, optimizer, scaler, EMA and device of the run.
        state: the loop state (JSON).
        best_weights: the selected weights so far (``None``: none yet).
        config: the task and training configuration (JSON) the run is under.
        identity: the run identity's reuse fields (JSON; ``""``: not checked).
        carried: the LSTM state a ``carry`` biLM hands to the next batch
            (:meth:`bilm.BiLM.carried_state`; ``{}`` before its first batch), so that a resumed
            run continues exactly; ``None``: the run carries none.

    Raises:
        NoSpaceError: the disk was full (:class:`bilm.files.NoSpaceError`, naming ``path``);
            the previous checkpoint is as it was and no partial file is left.
    """
    frozen = frozen_references(parts.model)
    model = {k: v for k, v in parts.model.state_dict().items() if k not in frozen}
    if best_weights is not None:
        best_weights = {k: v for k, v in best_weights.items() if k not in frozen}
    payload = {
        "model": model,
        "frozen": frozen,
        "optimizer": parts.optimizer.state_dict(),
        "ema": parts.ema.shadow if parts.ema is not None else {},
        "best_weights": best_weights,
        "scaler": parts.scaler.state_dict(),
        "state": state,
        "rng": rng_state(parts.device),
        "config": config,
        "identity": identity,
        "carried": None if carried is None else dict(carried),
    }
    save_torch(payload, path)


def load_checkpoint(
    path: Path, parts: TrainingParts, *, config: str, identity: str, carried: bool = False
) -> Restored:
    """Restore ``parts`` and the RNG states from the checkpoint at ``path``.

    Args:
        path: an existing checkpoint file.
        parts: the freshly built objects of the run; restored in place.
        config: the configuration (JSON) the run is under now.
        identity: the run identity's reuse fields (JSON) now.
        carried: the run carries a biLM state across batches: the checkpoint must hold it
            (:attr:`Restored.carried`), else resuming could not continue exactly.

    Returns:
        The loop state and best weights saved.

    Raises:
        StaleCheckpoint: it was written under another identity or configuration, with other
            frozen tensors, or without the carried state ``carried`` asks for; nothing was
            restored.
    """
    payload = torch.load(path, map_location=parts.device, weights_only=True)
    if carried and payload.get("carried") is None:
        # written before carried states were saved: its biLM state would restart from zero
        raise StaleCheckpoint(f"{path} holds no carried biLM state (an older checkpoint)")
    if payload.get("identity", "") != identity:
        # made from other data, another representation, device, ... (a stale run trained
        # again): resuming would continue the old run on the new inputs
        raise StaleCheckpoint(f"{path} was written from other inputs (run identity)")
    if payload.get("config") != config:
        # the same run id under another configuration (a preset changed without a version bump)
        raise StaleCheckpoint(f"{path} was written under another configuration")
    # the rebuilt model must hold the very same frozen tensors (the same word-vector file, the
    # same frozen representation), else resuming would mix two sets of inputs
    frozen: dict[str, dict[str, Any]] = payload.get("frozen", {})  # older checkpoints: none
    live = parts.model.state_dict()
    changed = [n for n, ref in frozen.items() if n not in live or tensor_reference(live[n]) != ref]
    if changed:
        raise StaleCheckpoint(
            f"{path} was written with other frozen tensors ({', '.join(changed)}: their source, "
            "e.g. the word-vector file, changed)"
        )
    kept = {n: live[n] for n in frozen}  # the live tensors themselves, no copies
    parts.model.load_state_dict({**payload["model"], **kept})
    parts.optimizer.load_state_dict(payload["optimizer"])
    if parts.ema is not None:
        parts.ema.shadow = payload["ema"]
    if payload["scaler"]:
        parts.scaler.load_state_dict(payload["scaler"])
    set_rng_state(payload["rng"], parts.device)
    best = payload["best_weights"]
    return Restored(
        payload["state"], None if best is None else {**best, **kept}, payload.get("carried")
    )


# ------------------------------------------------------------------------------ a run's
def save_run(
    run: RunParts,
    state: str,
    best_weights: Weights | None,
    carried: Mapping[str, torch.Tensor] | None = None,
) -> None:
    """The run's checkpoint in its work folder (:func:`save_checkpoint` under the run's
    configuration and identity).

    Args:
        run: the run's parts.
        state: the loop state (JSON).
        best_weights: the selected weights so far (``None``: none yet).
        carried: the biLM's carried state, for a run that carries one.
    """
    save_checkpoint(
        Path(run.work) / CHECKPOINT,
        run,
        state=state,
        best_weights=best_weights,
        config=run.config_json(),
        identity=run.identity,
        carried=carried,
    )


def resume(run: RunParts, carried: bool = False) -> Restored | None:
    """Restore ``run``'s parts from the checkpoint in its work folder (:func:`load_checkpoint`;
    ``carried``: the run carries a biLM state, which the checkpoint must hold); ``None`` when
    there is none, or it was written under other inputs (logged: the run starts afresh)."""
    path = Path(run.work) / CHECKPOINT
    if not path.exists():
        return None
    try:
        restored = load_checkpoint(
            path, run, config=run.config_json(), identity=run.identity, carried=carried
        )
    except StaleCheckpoint as stale:
        logger.warning("%s; starting afresh", stale)
        return None
    return restored
