"""What a task provides to the one training loop (``experiments/runner.py``).

A task package exposes ``TASK``, a :class:`TaskSpec`; ``tasks/registry.py`` lists them in one
dict literal. The runner never branches on a task's name: everything task-specific sits behind
:class:`TaskRecipe`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor, nn

from tasks.common.inject import Injector
from tasks.representations import Layers

#: Turns token sequences into representation layers (runs the representation, or reads the cache).
Represent = Callable[[Sequence[Sequence[str]]], Layers | None]


@dataclass(frozen=True)
class MetricSpec:
    """The dev/test metric that selects models and fills tables (stored in natural units)."""

    name: str
    higher_is_better: bool = True
    scale: float = 100.0
    fmt: str = "{:.1f}"


class TaskRecipe(Protocol):
    """Data and model for one configuration of a task (built by :attr:`TaskSpec.setup`)."""

    config: Any
    train: Sequence[Any]
    dev: Sequence[Any]

    def sequences(self, examples: Sequence[Any]) -> list[list[str]]:
        """Every token sequence the representation must see for these examples."""
        ...

    def batches(
        self, examples: Sequence[Any], batch_size: int, seed: int | None, represent: Represent
    ) -> Iterator[Any]:
        """Padded batches (shuffled with ``seed``, in order when None), layers attached."""
        ...

    def build_model(self, injector: Injector) -> nn.Module:
        """The task model; its forward returns an object with ``.loss`` (Tensor)."""
        ...

    def evaluate(
        self, model: nn.Module, examples: Sequence[Any], represent: Represent
    ) -> dict[str, float]:
        """Official-compatible metrics in natural units (e.g. F1 in [0, 1])."""
        ...

    def optimizer(self, parameters: Sequence[nn.Parameter]) -> Any:
        """The optimizer the configuration names."""
        ...


@dataclass(frozen=True)
class TaskSpec:
    """One task.

    Attributes:
        name: registry key.
        version: bump when the reader, metric or model changes a number (part of run ids).
        metric: the selection metric.
        default_sites: where the paper injects ELMo for this task.
        setup: ``(preset_name, overrides, data_dir) -> TaskRecipe``.
    """

    name: str
    version: int
    metric: MetricSpec
    default_sites: frozenset[str]
    setup: Callable[[str, Sequence[str], str | None], TaskRecipe]


def loss_of(output: Any) -> Tensor:
    """The scalar loss of a model output."""
    loss = output.loss
    if loss is None:
        raise ValueError("the model returned no loss (were gold labels missing?)")
    return loss
