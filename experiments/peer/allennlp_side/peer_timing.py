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
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from allennlp.training.callbacks.callback import TrainerCallback

#: The file written in the serialization directory.
FILE_NAME = "peer_timing.json"


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MiB (``ru_maxrss`` is KiB on Linux,
    bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024, 1)


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

    def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
        """Wrap this trainer's two pass methods (once, however often training restarts)."""
        super().on_start(trainer, is_primary=is_primary, **kwargs)
        if getattr(trainer, "_peer_timing_wrapped", False):
            return
        trainer._train_epoch = self._measured(trainer._train_epoch, "train", first=True)
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

    def state_dict(self) -> dict[str, Any]:
        """The rows so far (allennlp's checkpoints keep callbacks' state)."""
        return {"rows": [dict(r) for r in self.rows]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The rows of a restored checkpoint."""
        self.rows = [dict(r) for r in state_dict.get("rows", [])]
