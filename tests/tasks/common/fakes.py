"""Test doubles for representations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor

from bilm.bilm import StatePolicy
from tasks.representations import Layers, Representation


class Counting:
    """Wraps a representation and counts ``__call__``s (featurize is passed through)."""

    def __init__(self, inner: Representation) -> None:
        self.inner = inner
        self.calls = 0
        self.name, self.output_dim, self.num_layers = inner.name, inner.output_dim, inner.num_layers
        self.trainable = inner.trainable
        self.context_free_layers = inner.context_free_layers

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        return self.inner.featurize(sentences)

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        self.calls += 1
        return self.inner(features)

    def fingerprint(self) -> str:
        return self.inner.fingerprint()

    def to(self, device: Any) -> Counting:
        self.inner.to(device)
        return self

    @property
    def state_policy(self) -> StatePolicy:
        return self.inner.state_policy
