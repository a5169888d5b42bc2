"""``Elmo``: one biLM pass, ``k`` task-specific mixes, dropout (Peters et al. 2018, §3.3).

The biLM is frozen by default (the paper's setting); each output gets its own
:class:`~bilm.scalar_mix.ScalarMix` (e.g. one for the task model's input, one for its output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from bilm.bilm import BiLM, BiLMOutput
from bilm.chars import batch_to_ids
from bilm.dynamic_mix import DynamicMix
from bilm.scalar_mix import MixMode, MixSpec, ScalarMix, mix_from_spec


@dataclass(frozen=True)
class ElmoOutput:
    """Mixed representations ``k × (batch, time, 2P)`` and the ``(batch, time)`` bool mask."""

    representations: tuple[Tensor, ...]
    mask: Tensor


def run_bilm(bilm: BiLM, char_ids: Tensor, *, trainable: bool) -> BiLMOutput:
    """One biLM pass: with gradients when ``trainable``, else in eval mode under ``no_grad``."""
    if trainable:
        return bilm(char_ids)
    bilm.eval()
    with torch.no_grad():
        return bilm(char_ids)


class Elmo(nn.Module):
    """ELMo representations for a downstream model.

    Args:
        bilm: a loaded :class:`~bilm.bilm.BiLM` (its state policy is kept).
        num_outputs: number of independent mixes sharing one biLM pass.
        mode: ``"all"``, ``"last"`` (LastOnly) or ``"dynamic"`` (per-token layer weights,
            :class:`bilm.dynamic_mix.DynamicMix`) for every mix.
        lam: λ of each mix's penalty.
        layer_norm: masked layer norm inside each mix.
        dropout: applied to each mixed output in training (paper/allennlp default 0.5).
        fine_tune: let gradients reach the biLM (default frozen).
    """

    def __init__(
        self,
        bilm: BiLM,
        num_outputs: int = 1,
        mode: MixMode = "all",
        lam: float = 0.0,
        layer_norm: bool = False,
        dropout: float = 0.5,
        fine_tune: bool = False,
    ) -> None:
        super().__init__()
        self.bilm = bilm
        self.fine_tune = fine_tune
        for p in bilm.parameters():
            p.requires_grad_(fine_tune)
        #: One mix per output (typed view of :attr:`mixes`, the registered container).
        spec = MixSpec(mode, lam, layer_norm)
        self.scalar_mixes: tuple[ScalarMix | DynamicMix, ...] = tuple(
            mix_from_spec(bilm.num_layers, bilm.output_dim, spec) for _ in range(num_outputs)
        )
        self.mixes = nn.ModuleList(self.scalar_mixes)
        self.dropout = nn.Dropout(dropout)

    @property
    def output_dim(self) -> int:
        """Width of each representation (2P)."""
        return self.bilm.output_dim

    def penalty(self) -> Tensor:
        """Sum of the mixes' λ‖w‖² terms."""
        return torch.stack([m.penalty() for m in self.scalar_mixes]).sum()

    def forward(self, char_ids: Tensor) -> ElmoOutput:
        """``char_ids (batch, time, max_chars)`` → ``num_outputs × (batch, time, 2P)``."""
        out = run_bilm(self.bilm, char_ids, trainable=self.fine_tune)
        reps = tuple(self.dropout(mix(out.layers, out.mask)) for mix in self.scalar_mixes)
        return ElmoOutput(reps, out.mask)

    def embed_sentences(self, sentences: Sequence[Sequence[str]]) -> ElmoOutput:
        """Convenience: tokenized sentences → :class:`ElmoOutput`."""
        device = next(self.bilm.parameters()).device
        max_chars = self.bilm.options.char_cnn.max_characters_per_token
        return self(batch_to_ids(sentences, max_chars).to(device))
