"""allennlp 2.10.1 beside torch 2.13 in the peer's venv (never imported by the project).

Loaded there with ``--include-package peer_compat`` (:mod:`experiments.peer.run` puts this
folder on the peer's ``PYTHONPATH``) before allennlp builds anything from a configuration.

* ``reduce_on_plateau``: allennlp's scheduler passes ``verbose=`` to
  ``torch.optim.lr_scheduler.ReduceLROnPlateau``, which torch 2.13 no longer takes (ESIM's
  ``esim.jsonnet`` halves its learning rate on a dev plateau). The argument only switched on a
  printed message, so it is dropped; the schedule itself is torch's, unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

from torch.optim import lr_scheduler

_ORIGINAL = lr_scheduler.ReduceLROnPlateau.__init__

if "verbose" not in inspect.signature(_ORIGINAL).parameters:

    def _without_verbose(self: Any, *args: Any, verbose: bool = False, **kwargs: Any) -> None:
        _ORIGINAL(self, *args, **kwargs)

    lr_scheduler.ReduceLROnPlateau.__init__ = _without_verbose  # type: ignore[method-assign]
