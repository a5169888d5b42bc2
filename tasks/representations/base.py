"""The representation contract (docs/representations.md, "The protocol"): :class:`Layers`,
:class:`Representation`, helpers.

Every representation returns **all** its layers; mixing them (Eq. 1: λ, LastOnly) happens outside,
in :class:`tasks.features.inject.Injector`. A task batch always carries :class:`Layers`: the
baseline's are :meth:`Layers.empty` (no layers, width 0), which an injector turns into nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
from torch import Tensor

from bilm.bilm import StatePolicy

__all__ = ["Layers", "Representation", "lengths_mask", "parts_digest", "tensors_digest"]


@dataclass(frozen=True)
class Layers:
    """All layers of a representation for one batch.

    Attributes:
        tensors: ``(num_layers, batch, time, dim)``; exactly 0 at padded positions.
        mask: ``(batch, time)`` bool, True at real tokens.
    """

    tensors: Tensor
    mask: Tensor

    def __post_init__(self) -> None:
        if self.tensors.dim() != 4:
            raise ValueError(
                "Layers.tensors must be (num_layers, batch, time, dim), "
                f"got {tuple(self.tensors.shape)}"
            )
        if self.mask.dtype != torch.bool or tuple(self.mask.shape) != tuple(
            self.tensors.shape[1:3]
        ):
            raise ValueError(
                f"Layers.mask must be bool (batch, time) = {tuple(self.tensors.shape[1:3])}, "
                f"got {self.mask.dtype} {tuple(self.mask.shape)}"
            )

    @classmethod
    def empty(cls, lengths: Sequence[int] | Tensor) -> Layers:
        """No layers for a batch of sequences: what ``represent`` returns for the baseline.

        The ``none`` representation, and the runner's ``make_represent`` when there is no
        representation (or it has no layers), return these; an :class:`Injector` over them
        adds nothing, so task models never special-case a missing representation.

        Example (in a ``represent`` callable)::

            return Layers.empty([len(s) for s in sequences])

        Args:
            lengths: ``(batch,)`` token count of each sequence.

        Returns:
            ``tensors`` ``(0, batch, time, 0)`` float32 zeros and the bool ``(batch, time)`` mask
            (True at the first ``lengths[i]`` positions, ``time = max(lengths)``, 0 for no rows),
            both on the CPU (or on the device of a ``lengths`` tensor).
        """
        mask = _mask_from_lengths(torch.as_tensor(lengths, dtype=torch.long))  # (batch, time)
        return cls(torch.zeros(0, *mask.shape, 0, device=mask.device), mask)  # (0, b, t, 0)

    @property
    def num_layers(self) -> int:
        """Number of layers (first dimension of :attr:`tensors`)."""
        return int(self.tensors.shape[0])

    def to(self, device: torch.device | str) -> Layers:
        """Both tensors on ``device``."""
        return Layers(self.tensors.to(device), self.mask.to(device))


@runtime_checkable
class Representation(Protocol):
    """What ELMo, random-biLM, GloVe, CoVe and user embedders implement (docs/representations.md).

    Attributes:
        name: registry name (or any label); used in cache folder names and logs.
        output_dim: width of every layer (0 for ``none``).
        num_layers: number of layers returned (ELMo L + 1 = 3, GloVe 1, CoVe 2, none 0).
        trainable: whether gradients reach its parameters (frozen representations can be cached).
        state_policy: the :data:`bilm.StatePolicy` of its LSTM state (``"reset"``, ``"warm"`` or
            ``"carry"``; ``"reset"`` for a representation without state). A ``"carry"``
            representation's vectors depend on call order, so it cannot be cached.
        context_free_layers: ``k`` such that layers ``0..k-1`` depend only on the token's own
            string (ELMo's char-CNN token layer: 1; 0 to claim nothing), so the feature cache
            stores them once per distinct word.
    """

    name: str
    output_dim: int
    num_layers: int
    trainable: bool
    context_free_layers: int

    @property
    def state_policy(self) -> StatePolicy:
        """``"reset"``, ``"warm"`` or ``"carry"`` (a plain class attribute satisfies this)."""
        ...

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """Token lists → CPU tensors (picklable; called in a ``DataLoader`` collate function)."""
        ...

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        """Features (on any device) → :class:`Layers` on the representation's device."""
        ...

    def fingerprint(self) -> str:
        """Hex digest that changes whenever weights or configuration change (a cache key)."""
        ...

    def to(self, device: torch.device | str) -> Any:
        """Move to ``device`` (``nn.Module.to`` satisfies this); returns the representation."""
        ...


def lengths_mask(sentences: Sequence[Sequence[str]]) -> Tensor:
    """``(batch, max_len)`` bool mask, True at real tokens."""
    if isinstance(sentences, str):
        raise TypeError("featurize expects a list of token lists, got a string")
    return _mask_from_lengths(torch.tensor([len(s) for s in sentences], dtype=torch.long))


def _mask_from_lengths(lengths: Tensor) -> Tensor:
    """``(batch,)`` lengths → ``(batch, max_len)`` bool mask, True at real tokens."""
    time = int(lengths.max()) if len(lengths) else 0
    return torch.arange(time, device=lengths.device)[None, :] < lengths[:, None]  # (batch, time)


def parts_digest(parts: Iterable[bytes | str]) -> str:
    """SHA-256 over length-prefixed parts (strings as UTF-8), so part boundaries count."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def tensors_digest(tensors: Mapping[str, Tensor]) -> str:
    """SHA-256 over names, dtypes, shapes and bytes of tensors (sorted by name)."""
    h = hashlib.sha256()
    for key in sorted(tensors):
        t = tensors[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().data)  # raw bytes of any dtype
    return h.hexdigest()
