"""``none``: no representation (0 layers, width 0); the baseline (an Injector adds nothing)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch import Tensor, nn

from bilm.bilm import StatePolicy
from tasks.representations.base import Layers, lengths_mask, parts_digest
from tasks.representations.options import ReprOption

__all__ = ["NONE_OPTIONS", "NoRepresentation", "build_none"]


class NoRepresentation(nn.Module):
    """The baseline: no layers, width 0 (:meth:`Layers.empty`, ``(0, batch, time, 0)``)."""

    trainable = False
    state_policy: StatePolicy = "reset"
    context_free_layers = 0

    def __init__(self, name: str = "none") -> None:
        super().__init__()
        self.name = name
        self.num_layers = 0
        self.output_dim = 0
        self.eval()

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"mask": (batch, time) bool}``."""
        return {"mask": lengths_mask(sentences)}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """:meth:`Layers.empty`: no layers, the batch's mask."""
        mask = features["mask"]  # (batch, time)
        return Layers.empty(mask.sum(dim=1))  # (0, batch, time, 0)

    def fingerprint(self) -> str:
        """Constant."""
        return parts_digest(["none/1"])


#: ``none`` has no keys (``--repr-set`` does not apply to the baseline).
NONE_OPTIONS: tuple[ReprOption, ...] = ()


def build_none() -> NoRepresentation:
    """The no-representation baseline."""
    return NoRepresentation()
