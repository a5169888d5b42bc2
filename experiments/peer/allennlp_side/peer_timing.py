"""allennlp trainer callback ``peer_timing``: the time of each epoch's training and validation
pass, in ``SERIALIZATION_DIR/peer_timing.json`` (runs in the peer's venv, never imported here).

Loaded with ``--include-package peer_timing`` (:mod:`experiments.peer.run` puts this folder on
the peer's ``PYTHONPATH``) and named by the configuration's ``"callbacks": [{"type":
"peer_timing"}]`` (:func:`tasks.common.peer.as_requested`).

allennlp 2.10.1 logs one duration per epoch, training, validation and checkpointing together.
The comparison needs the training pass alone, so when training starts this callback wraps the
trainer's two pass methods, ``_train_epoch`` and ``_validation_loss``, on that trainer object
(allennlp's classes and files are not changed) and measures each call: wall seconds
(``time.perf_counter``) and CPU seconds of the whole process (``time.process_time``; one
thread in the peer's runs). After every epoch (``on_epoch``) it appends one row and rewrites
the file atomically, a JSON list of rows:

* ``epoch``: allennlp's epoch number, 0-based;
* ``train_s``, ``train_cpu_s``: the training pass (``_train_epoch``);
* ``validation_s``, ``validation_cpu_s``: the validation pass (``_validation_loss``), ``null``
  when the epoch had none;
* ``epoch_s``: wall seconds from the start of the training pass to ``on_epoch`` (both passes
  and allennlp's metric bookkeeping, before the checkpoint is saved);
* ``training_loss``, ``validation_loss``: allennlp's epoch metrics of those names;
* ``peak_rss_mb``: the process's peak resident memory so far (MiB);
* ``torch_threads``, ``torch_interop_threads``: torch's thread counts during the epoch.

The rows are also the callback's state, so they survive allennlp's restore from a checkpoint.

**A resumed run trains as the uninterrupted one.** ``allennlp train --recover`` (allennlp 2.10.1,
``allennlp/training/gradient_descent_trainer.py``: ``_maybe_restore_checkpoint``, then
``_try_train`` calls ``_train_epoch`` for each epoch already done, reading its batches without
training on them) restores the weights, the optimizer, the schedulers and the callbacks' state,
but not the random generators (torch's draws every dropout mask) nor the carried LSTM state of
stateful encoders (allennlp's ELMo: ``allennlp/modules/encoder_base.py``, ``_states``, not a
buffer of the module, so not in its ``state_dict``). So the callback's state (saved by allennlp's
checkpointer after ``on_epoch``, ``allennlp/training/checkpointer.py``) also holds, taken at that
moment: Python's, numpy's and torch's generators (CUDA's when there is one) and every stateful
module's ``_states``. Nothing draws from a generator or runs the model between that moment and
the next epoch's ``_train_epoch`` call (saving the best weights, logging); so when a restored run
calls ``_train_epoch`` for the first epoch it trains, the callback puts all of that back first,
after allennlp's replay of the epochs done, and the run continues exactly where the checkpoint
left off. State taken in the middle of an epoch (a checkpointer saving every N batches or
seconds, which the peer's configurations do not ask for) is not put back: replaying part of an
epoch would draw again from the generators.

``PEER_KILL_AFTER_EPOCHS=N`` (a testing hook, unset in real runs): after ``N`` completed epochs,
the process kills itself (``SIGKILL``) after the first training batch of the next epoch, as a run
cut off there would end.
"""

from __future__ import annotations

import json
import os
import random
import resource
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy
import torch
from allennlp.training.callbacks.callback import TrainerCallback

#: The file written in the serialization directory.
FILE_NAME = "peer_timing.json"
#: The testing hook's environment variable (the module's docstring).
KILL_AFTER_EPOCHS = "PEER_KILL_AFTER_EPOCHS"


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MiB (``ru_maxrss`` is KiB on Linux,
    bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


def generator_state() -> dict[str, Any]:
    """Python's, numpy's and torch's random generators (CUDA's when available), as values that
    ``torch.load`` reads back with ``weights_only`` (tuples, lists, numbers, tensors)."""
    legacy = numpy.random.get_state(legacy=True)  # MT19937's tuple
    assert isinstance(legacy, tuple)
    kind, keys, position, has_gauss, gauss = legacy
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [kind, keys.tolist(), position, has_gauss, gauss],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_generator_state(state: dict[str, Any]) -> None:
    """Put back what :func:`generator_state` took."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached = state["numpy"]
    numpy.random.set_state(
        (kind, numpy.asarray(keys, dtype=numpy.uint32), position, has_gauss, cached)
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def carried_states(model: Any) -> dict[str, list[Any]]:
    """The carried state (``_states``) of every stateful module of ``model`` that holds one, by
    the module's name (allennlp 2.10.1's ``_EncoderBase``, e.g. ELMo's biLM); none without a
    model."""
    modules = model.named_modules() if model is not None else ()
    return {
        name: [tensor.clone() for tensor in module._states]
        for name, module in modules
        if getattr(module, "stateful", False) and getattr(module, "_states", None) is not None
    }


def set_carried_states(model: Any, states: dict[str, list[Any]]) -> None:
    """Put back what :func:`carried_states` took (a stateful module it did not name holds none)."""
    for name, module in model.named_modules():
        if getattr(module, "stateful", False) and hasattr(module, "_states"):
            saved = states.get(name)
            module._states = None if saved is None else tuple(saved)


def kill_after_epochs() -> int | None:
    """The testing hook's epoch count (``PEER_KILL_AFTER_EPOCHS``), ``None`` when unset."""
    value = os.environ.get(KILL_AFTER_EPOCHS, "").strip()
    return int(value) if value else None


@TrainerCallback.register("peer_timing")
class PeerTiming(TrainerCallback):
    """Times the training and validation pass of every epoch (see the module's docstring).

    Args:
        serialization_dir: the run's folder (allennlp gives it); ``peer_timing.json`` goes there.
    """

    def __init__(self, serialization_dir: str) -> None:
        super().__init__(serialization_dir)
        self.rows: list[dict[str, Any]] = []
        self._epoch: dict[str, Any] = {}  # the epoch being measured
        self._started: float | None = None  # wall clock at the start of its training pass
        self._epochs_done = 0  # epochs closed by on_epoch (the checkpoint that follows: e<N>)
        self._resume: dict[str, Any] | None = None  # restored state to put back (load_state_dict)

    def _measured(
        self, method: Callable[[int], Any], prefix: str, first: bool
    ) -> Callable[[int], Any]:
        """``method`` (a pass of one epoch) recording ``<prefix>_s`` and ``<prefix>_cpu_s``;
        ``first``: the pass that opens an epoch (its row starts afresh)."""

        def measured(epoch: int) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            if first:
                self._epoch, self._started = {"epoch": epoch}, wall
            try:
                return method(epoch)
            finally:
                self._epoch[f"{prefix}_s"] = round(time.perf_counter() - wall, 3)
                self._epoch[f"{prefix}_cpu_s"] = round(time.process_time() - cpu, 3)

        return measured

    def _resuming(self, trainer: Any, method: Callable[[int], Any]) -> Callable[[int], Any]:
        """``method`` (the training pass) putting back a restored checkpoint's generators and
        carried states when it opens the first epoch the restored run trains."""

        def resuming(epoch: int) -> Any:
            resume = self._resume
            if resume is not None and epoch == resume["epochs_completed"]:
                self._resume = None
                set_generator_state(resume["generators"])
                set_carried_states(trainer.model, resume["carried"])
            return method(epoch)

        return resuming

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        """Wrap this trainer's two pass methods (once, however often training restarts)."""
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        if getattr(trainer, "_peer_timing_wrapped", False):
            return
        timed = self._measured(trainer._train_epoch, "train", first=True)
        trainer._train_epoch = self._resuming(trainer, timed)
        trainer._validation_loss = self._measured(trainer._validation_loss, "validation", False)
        trainer._peer_timing_wrapped = True

    def on_epoch(
        self,
        trainer: Any,
        metrics: dict[str, Any],
        epoch: int,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        """Close the epoch's row and rewrite ``peer_timing.json``."""
        row: dict[str, Any] = {
            "epoch": epoch,
            "train_s": None,
            "train_cpu_s": None,
            "validation_s": None,
            "validation_cpu_s": None,
            **self._epoch,
        }
        row["epoch"] = epoch
        started = self._started
        row["epoch_s"] = None if started is None else round(time.perf_counter() - started, 3)
        row["training_loss"] = metrics.get("training_loss")
        row["validation_loss"] = metrics.get("validation_loss")
        row["peak_rss_mb"] = peak_rss_mb()
        row["torch_threads"] = torch.get_num_threads()
        row["torch_interop_threads"] = torch.get_num_interop_threads()
        self.rows = [r for r in self.rows if r.get("epoch") != epoch] + [row]
        self._epoch, self._started = {}, None
        self._epochs_done = epoch + 1
        if is_primary and self.serialization_dir:
            self.write()

    def write(self) -> str:
        """Write the rows to ``SERIALIZATION_DIR/peer_timing.json`` (atomically); its path."""
        path = os.path.join(self.serialization_dir, FILE_NAME)
        partial = f"{path}.partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(self.rows, handle, indent=1)
            handle.write("\n")
        os.replace(partial, path)
        return path

    def on_batch(
        self,
        trainer: Any,
        batch_inputs: Any,
        batch_outputs: Any,
        batch_metrics: dict[str, Any],
        epoch: int,
        batch_number: int,
        is_training: bool,
        is_primary: bool = True,
        **kwargs: Any,
    ) -> None:
        """The testing hook: kill the process after the first training batch of epoch ``N``
        (0-based, so after ``N`` completed epochs) when ``PEER_KILL_AFTER_EPOCHS=N``."""
        if is_training and epoch == kill_after_epochs():
            os.kill(os.getpid(), signal.SIGKILL)

    def state_dict(self) -> dict[str, Any]:
        """The rows so far and, at the end of an epoch, the generators and carried states
        (allennlp's checkpoints keep callbacks' state; see the module's docstring)."""
        state: dict[str, Any] = {"rows": [dict(r) for r in self.rows]}
        trainer = getattr(self, "trainer", None)
        if trainer is not None and getattr(trainer, "_batches_in_epoch_completed", 0) == 0:
            state["resume"] = {
                "epochs_completed": self._epochs_done,
                "generators": generator_state(),
                "carried": carried_states(getattr(trainer, "model", None)),
            }
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The rows of a restored checkpoint; its generators and carried states are put back
        when the first epoch after it starts."""
        self.rows = [dict(r) for r in state_dict.get("rows", [])]
        self._resume = state_dict.get("resume")
        if self._resume is not None:
            self._epochs_done = int(self._resume["epochs_completed"])
        else:  # taken within an epoch, or by a callback that did not keep them
            print(
                "peer_timing: the checkpoint holds no random generators or carried states: the "
                "resumed run will not train as an uninterrupted one would",
                file=sys.stderr,
                flush=True,
            )
