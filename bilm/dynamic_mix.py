"""Per-token layer weights: Eq. (1) of Peters et al. (2018) with one ``s`` per token.

The paper's scalar mix gives every token of a task the same layer weights (its most cited
limitation). :class:`DynamicMix` (``MixSpec(mode="dynamic")``) scores each layer of each token
from that layer's own vector::

    z_{t,j} = a_j · h_{t,j} / √D + b_j          (a_j ∈ R^D, b_j ∈ R, j = 0..L)
    s_{t,·} = softmax_j(z_{t,·})
    out_t   = γ · Σ_j s_{t,j} · h_{t,j}

This is the gate of dynamic meta-embeddings (Kiela, Wang & Cho, EMNLP 2018, §3.2:
``α_{i,j} = softmax_j(a · h_{i,j} + b)``), with one ``a_j`` per layer since the layers are
different stages of one network, not projections into one space. It was chosen over a gate on the
concatenated layers because it stays small ((L + 1)·D weights, not (L + 1)²·D) and each score
reads only its own layer. The 1/√D keeps the scores of D-wide vectors O(1), as in scaled
dot-product attention (Vaswani et al. 2017). ``b`` plays Eq. (1)'s ``w``: with ``a = 0`` the mix
*is* :class:`bilm.ScalarMix` with ``w = b``, and the start ``a = 0, b = 0, γ = 1`` is the uniform
average (Eq. 1's λ = ∞ state).

Penalty towards the static mix (returned by :meth:`DynamicMix.penalty`, added by the caller as
with ``λ‖w‖²``): with the logits centred per token, ``ẑ_{t,j} = z_{t,j} − mean_j z_{t,j}``
(softmax ignores a per-token shift), and ``z̄_j`` the mean of ``ẑ_{t,j}`` over the batch's real
tokens::

    penalty = λ · mean_t Σ_j (ẑ_{t,j} − z̄_j)²

the per-token variance of the gate's logits, over the real tokens of the batch last mixed. It is
0 exactly when every token gets the same weights (a static mix, at init in particular), whatever
those are: λ → ∞ gives back Eq. (1) with free ``w``, λ = 0 an unconstrained gate. The mean over
tokens (not the sum) keeps λ's scale independent of batch size and sentence length.

Padding positions mix to exactly 0, and a token's output depends on no other token (except
through the batch-wide statistics of ``layer_norm``, as in :class:`bilm.ScalarMix`). The gate's
logits are computed in fp32 with autocast off, so bf16 / fp16 autocast changes only the mixing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from bilm.layer_norm import masked_layer_norm

__all__ = ["DynamicMix", "TokenWeightStats"]


@dataclass(frozen=True)
class TokenWeightStats:
    """Per-token layer weights ``s_{t,j}`` summarised over real tokens.

    Attributes:
        mean: mean ``s_j`` per layer ``j``.
        std: standard deviation over the tokens per layer (population, ``n`` in the divisor).
        tokens: real tokens summarised (0: none yet).
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]
    tokens: int


class DynamicMix(nn.Module):
    """Per-token softmax-weighted, scaled sum of layers (module docstring for the formulas).

    Interface of :class:`bilm.ScalarMix` (``forward(layers, mask)``, :meth:`penalty`,
    :meth:`normalized_weights`, ``gamma``, ``weights``) plus the gate ``a`` (:attr:`gate`) and
    the statistics of the weights it gave: in eval mode every forward adds its real tokens'
    weights to a running mean and variance (:meth:`weight_statistics`); each switch to eval mode
    (``.eval()``) starts them afresh, so after scoring a split they describe that split's tokens.

    Args:
        num_layers: layers to mix (L + 1 for ELMo).
        dim: width ``D`` of each layer.
        lam: λ of the penalty towards a static mix (0: none).
        layer_norm: normalise each layer first, as :class:`bilm.ScalarMix` does (the gate then
            reads the normalised vectors).
    """

    mode = "dynamic"

    def __init__(self, num_layers: int, dim: int, lam: float = 0.0, layer_norm: bool = False):
        super().__init__()
        if num_layers < 1 or dim < 1:
            raise ValueError(
                f"DynamicMix needs num_layers >= 1 and dim >= 1, got {num_layers}, {dim}"
            )
        if not math.isfinite(lam) or lam < 0:
            raise ValueError(f"DynamicMix lam must be a finite number >= 0, got {lam}")
        self.num_layers, self.dim, self.lam, self.layer_norm = num_layers, dim, lam, layer_norm
        self.weights = nn.Parameter(torch.zeros(num_layers))  # b: (L + 1,)
        self.gate = nn.Parameter(torch.zeros(num_layers, dim))  # a: (L + 1, D)
        self.gamma = nn.Parameter(torch.ones(1))
        self._penalty: Tensor | None = None
        self._stats: tuple[Tensor, Tensor, Tensor] | None = None  # count, mean (L,), M2 (L,)

    def logits(self, layers: Tensor) -> Tensor:
        """Gate logits ``z`` in fp32 (autocast off).

        Args:
            layers: ``(num_layers, batch, time, dim)``, already layer-normalised when that is on.

        Returns:
            ``(batch, time, num_layers)``.
        """
        with torch.autocast(layers.device.type, enabled=False):
            h = layers.float()  # (L, batch, time, D)
            scores = torch.einsum("lbtd,ld->btl", h, self.gate.float())  # (batch, time, L)
            return scores / math.sqrt(self.dim) + self.weights.float()  # (batch, time, L)

    def token_weights(self, layers: Tensor, mask: Tensor | None = None) -> Tensor:
        """``s_{t,j}`` of every position (padding too: ``softmax(b)`` there).

        Args:
            layers: ``(num_layers, batch, time, dim)``.
            mask: ``(batch, time)`` bool; required with ``layer_norm``.

        Returns:
            ``(batch, time, num_layers)`` fp32, summing to 1 over the last dimension.
        """
        return torch.softmax(self.logits(self._prepared(layers, mask)), dim=-1)

    def forward(self, layers: Tensor, mask: Tensor | None = None) -> Tensor:
        """Mix each token with its own weights; records the penalty (and, in eval mode, the
        weights' statistics) of this batch.

        Args:
            layers: ``(num_layers, batch, time, dim)``, 0 at padding.
            mask: ``(batch, time)`` bool (``None``: every position is a real token); required
                with ``layer_norm``.

        Returns:
            ``(batch, time, dim)``, 0 at padding.
        """
        layers = self._prepared(layers, mask)
        if mask is None:
            mask = torch.ones(layers.shape[1:3], dtype=torch.bool, device=layers.device)
        z = self.logits(layers)  # (batch, time, L)
        s = torch.softmax(z, dim=-1)  # (batch, time, L)
        weights = s.permute(2, 0, 1).unsqueeze(-1).to(layers.dtype)  # (L, batch, time, 1)
        mixed = (weights * layers).sum(dim=0)  # (batch, time, D)
        mixed = mixed * mask.unsqueeze(-1).to(mixed.dtype)  # (batch, time, D), 0 at padding
        self._penalty = self._gate_penalty(z, mask) if self.lam > 0 else None
        if not self.training:
            self._accumulate(s.detach(), mask)
        return self.gamma * mixed  # (batch, time, D), dtypes promoted as in ScalarMix

    def penalty(self) -> Tensor:
        """λ times the per-token variance of the centred gate logits over the real tokens of the
        batch last mixed (0-dim; 0 before any batch, with λ = 0, and while the gate is static)."""
        if self._penalty is None:
            return self.weights.new_zeros(())
        return self._penalty

    def normalized_weights(self) -> Tensor:
        """Mean per-token weights over the tokens of :meth:`weight_statistics`; before any eval
        batch ``softmax(b)``, the weights of a token whose gate scores are 0. ``(num_layers,)``."""
        if self._stats is None or float(self._stats[0]) == 0:
            return torch.softmax(self.weights.detach(), dim=0)
        return self._stats[1].float()

    def weight_statistics(self) -> TokenWeightStats:
        """Mean and spread of ``s_{t,j}`` over the real tokens mixed in eval mode since the last
        switch to eval mode (``tokens == 0`` and ``std`` 0 when there were none)."""
        if self._stats is None or float(self._stats[0]) == 0:
            mean = tuple(float(x) for x in self.normalized_weights())
            return TokenWeightStats(mean, (0.0,) * self.num_layers, 0)
        count, mean_t, m2 = self._stats
        std = torch.sqrt((m2 / count).clamp_min(0.0))  # (L,)
        return TokenWeightStats(
            tuple(float(x) for x in mean_t.cpu()), tuple(float(x) for x in std.cpu()), int(count)
        )

    def reset_statistics(self) -> None:
        """Forget the recorded weights (done on every switch to eval mode)."""
        self._stats = None

    def train(self, mode: bool = True) -> DynamicMix:
        """As :meth:`torch.nn.Module.train`; ``train(False)`` (``eval()``) also resets the
        weights' statistics."""
        if not mode:
            self.reset_statistics()
        super().train(mode)
        return self

    def _prepared(self, layers: Tensor, mask: Tensor | None) -> Tensor:
        if layers.dim() != 4 or layers.shape[0] != self.num_layers:
            raise ValueError(
                f"expected layers (num_layers={self.num_layers}, batch, time, dim), "
                f"got {tuple(layers.shape)}"
            )
        if layers.shape[-1] != self.dim:
            raise ValueError(f"expected layers of width {self.dim}, got {layers.shape[-1]}")
        if not self.layer_norm:
            return layers
        if mask is None:
            raise ValueError("layer_norm needs the mask")
        return masked_layer_norm(layers, mask)

    def _gate_penalty(self, z: Tensor, mask: Tensor) -> Tensor:
        m = mask.unsqueeze(-1).to(z.dtype)  # (batch, time, 1)
        n = m.sum().clamp_min(1.0)
        centred = z - z.mean(dim=-1, keepdim=True)  # (batch, time, L)
        static = (centred * m).sum(dim=(0, 1)) / n  # (L,)
        return self.lam * (((centred - static) ** 2) * m).sum() / n

    def _accumulate(self, s: Tensor, mask: Tensor) -> None:
        """Chan et al.'s pairwise update of the running count, mean and M2 (fp64; fp32 on MPS)."""
        dtype = torch.float32 if s.device.type == "mps" else torch.float64
        s = s.to(dtype)
        m = mask.unsqueeze(-1).to(dtype)  # (batch, time, 1)
        n_b = m.sum()
        mean_b = (s * m).sum(dim=(0, 1)) / n_b.clamp_min(1.0)  # (L,)
        m2_b = (((s - mean_b) ** 2) * m).sum(dim=(0, 1))  # (L,)
        if self._stats is None:
            self._stats = (n_b, mean_b, m2_b)
            return
        n_a, mean_a, m2_a = self._stats
        n = n_a + n_b
        delta = mean_b - mean_a  # (L,)
        share = n_b / n.clamp_min(1.0)
        self._stats = (n, mean_a + delta * share, m2_a + m2_b + delta**2 * n_a * share)
