"""Task-specific layer weighting, Eq. (1) of Peters et al. (2018).

``ELMo = γ · Σ_j s_j · h_j`` with ``s = softmax(w)``; ``w`` starts at 0 and ``γ`` at 1 (allennlp
``ScalarMix``, bilm-tf ``weight_layers``). The regulariser ``λ‖w‖²`` on the raw
pre-softmax weights is *returned* by :meth:`ScalarMix.penalty` for the caller to add to its loss,
as bilm-tf does; nothing is hidden in a parameter-name regex.

``MixSpec(mode="dynamic")`` gives every token its own weights instead
(:class:`bilm.dynamic_mix.DynamicMix`); :func:`mix_from_spec` builds either kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import torch
from torch import Tensor, nn

from bilm.dynamic_mix import DynamicMix
from bilm.layer_norm import masked_layer_norm

MixMode = Literal["all", "last", "dynamic"]
MIX_MODES: tuple[str, ...] = get_args(MixMode)
#: The modes of :class:`ScalarMix` (one set of weights per mix); ``"dynamic"`` is
#: :class:`bilm.dynamic_mix.DynamicMix`.
STATIC_MODES: tuple[str, ...] = ("all", "last")


@dataclass(frozen=True)
class MixSpec:
    """How a :class:`ScalarMix` combines layers: the axes of the paper's Table 2.

    The one description of a mix, used by the harness's injector and run specs alike.

    Attributes:
        mode: ``"all"`` (Eq. 1: softmax-weighted sum of all layers), ``"last"`` (the paper's
            *LastOnly*: the top layer only, no weights, no penalty) or ``"dynamic"`` (per-token
            weights from a gate over the token's layers, :class:`bilm.dynamic_mix.DynamicMix`).
        lam: λ of the penalty: ``λ‖w‖²`` in ``"all"`` mode (Table 2: 1 ≈ plain average, 0.001
            lets weights vary); in ``"dynamic"`` mode λ times the per-token departure of the
            gate from a static mix (:meth:`bilm.dynamic_mix.DynamicMix.penalty`). Canonically 0
            in ``"last"`` mode, where it has no effect, so that a λ sweep crossed with several
            modes yields one LastOnly configuration, not several.
        layer_norm: normalise each layer before weighting (allennlp ``do_layer_norm``).
    """

    mode: MixMode = "all"
    lam: float = 0.0
    layer_norm: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MIX_MODES:
            raise ValueError(f"mix.mode must be one of {MIX_MODES}, got {self.mode!r}")
        if isinstance(self.lam, bool) or not isinstance(self.lam, int | float):
            raise TypeError(f"mix.lam must be a number, got {self.lam!r}")
        lam = float(self.lam)
        if not math.isfinite(lam) or lam < 0:
            raise ValueError(f"mix.lam must be a finite number >= 0, got {lam}")
        object.__setattr__(self, "lam", 0.0 if self.mode == "last" else lam)
        if not isinstance(self.layer_norm, bool):
            raise TypeError(f"mix.layer_norm must be a bool, got {self.layer_norm!r}")

    @property
    def label(self) -> str:
        """A short label: ``"LastOnly"``, ``"λ=0.001"`` (``"all"``) or ``"dynamic λ=0.001"``."""
        if self.mode == "last":
            return "LastOnly"
        return f"{'dynamic ' if self.mode == 'dynamic' else ''}λ={self.lam:g}"


class ScalarMix(nn.Module):
    """Softmax-weighted, scaled sum of layers.

    Args:
        num_layers: layers to mix (L + 1 for ELMo).
        mode: ``"all"`` (Eq. 1) or ``"last"`` (the paper's *LastOnly*: ``γ · h_L``, no weights and
            no penalty; γ is kept, as in document-qa's ``top_layer_only``).
        lam: λ of the penalty ``λ‖w‖²`` (paper: 1 ≈ plain average, 0.001 lets weights vary).
        layer_norm: normalise each layer before weighting with one mean and variance per layer over
            all unmasked elements of the batch (allennlp ``do_layer_norm``; not per-token).
        initial_weights: pre-softmax starting values (default zeros).
        trainable: whether ``w`` and ``γ`` learn (allennlp freezes both when weights are given).
    """

    def __init__(
        self,
        num_layers: int,
        mode: MixMode = "all",
        lam: float = 0.0,
        layer_norm: bool = False,
        initial_weights: list[float] | None = None,
        trainable: bool = True,
    ) -> None:
        super().__init__()
        if mode not in STATIC_MODES:
            raise ValueError(
                f"ScalarMix mode must be one of {STATIC_MODES}, got {mode!r}"
                + (" (per-token weights: bilm.dynamic_mix.DynamicMix)" if mode == "dynamic" else "")
            )
        if initial_weights is not None and len(initial_weights) != num_layers:
            raise ValueError(
                f"initial_weights has {len(initial_weights)} values for {num_layers} layers"
            )
        self.num_layers, self.mode, self.lam, self.layer_norm = num_layers, mode, lam, layer_norm
        init = torch.tensor(initial_weights or [0.0] * num_layers, dtype=torch.float)
        # One tensor parameter (not a ParameterList): survives DataParallel replication
        # (allennlp #5097).
        self.weights = nn.Parameter(init, requires_grad=trainable and mode == "all")
        self.gamma = nn.Parameter(torch.ones(1), requires_grad=trainable)

    @classmethod
    def from_spec(cls, num_layers: int, spec: MixSpec) -> ScalarMix:
        """A trainable mix of ``num_layers`` layers configured by ``spec`` (``"all"`` or
        ``"last"``; :func:`mix_from_spec` builds the ``"dynamic"`` mix too)."""
        return cls(num_layers, mode=spec.mode, lam=spec.lam, layer_norm=spec.layer_norm)

    def normalized_weights(self) -> Tensor:
        """``s = softmax(w)``, one-hot on the top layer in ``last`` mode; ``(num_layers,)``."""
        if self.mode == "last":
            s = torch.zeros_like(self.weights)
            s[-1] = 1.0
            return s
        return torch.softmax(self.weights, dim=0)

    def penalty(self) -> Tensor:
        """``λ · ‖w‖²`` on the raw weights (0 in ``last`` mode); add it to the task loss."""
        if self.mode == "last" or self.lam == 0.0:
            return self.weights.new_zeros(())
        return self.lam * (self.weights**2).sum()

    def forward(self, layers: Tensor, mask: Tensor | None = None) -> Tensor:
        """Mix.

        Args:
            layers: ``(num_layers, batch, time, dim)``.
            mask: ``(batch, time)`` bool; required with ``layer_norm``.

        Returns:
            ``(batch, time, dim)``.
        """
        if layers.shape[0] != self.num_layers:
            raise ValueError(f"expected {self.num_layers} layers, got {layers.shape[0]}")
        if self.layer_norm:
            if mask is None:
                raise ValueError("layer_norm needs the mask")
            layers = masked_layer_norm(layers, mask)
        if self.mode == "last":
            return self.gamma * layers[-1]  # (batch, time, dim)
        s = torch.softmax(self.weights, dim=0).to(layers.dtype)
        mixed = torch.tensordot(s, layers, dims=([0], [0]))  # (batch, time, dim)
        return self.gamma * mixed


def mix_from_spec(num_layers: int, dim: int, spec: MixSpec) -> ScalarMix | DynamicMix:
    """The trainable mix ``spec`` describes: a :class:`ScalarMix` (``"all"``, ``"last"``) or a
    :class:`bilm.dynamic_mix.DynamicMix` (``"dynamic"``, whose gate needs the width ``dim``).

    Args:
        num_layers: layers to mix.
        dim: width of each layer.
        spec: mode, λ and layer norm.
    """
    if spec.mode == "dynamic":
        return DynamicMix(num_layers, dim, lam=spec.lam, layer_norm=spec.layer_norm)
    return ScalarMix.from_spec(num_layers, spec)
