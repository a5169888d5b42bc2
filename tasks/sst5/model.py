"""The paper's SST-5 baseline: the Biattentive Classification Network (McCann et al. 2017, §5)
as modified by Peters et al. (2018, A.8), with ELMo at the input and/or the integrator output.

Read top to bottom (docs/reference/sst5.md; allennlp ``BiattentiveClassificationNetwork``):

1. words → fixed word vectors (+ ELMo / CoVe input mix) → dropout (its own rate with a
   representation: :meth:`Sst5Config.embedding_dropout_for`)
2. pre-encode feed-forward: linear + ReLU → dropout
3. encoder biLSTM → ``X``; for one sentence ``Y = X``
4. biattention: affinity ``A = X Xᵀ``, softmax over the keys (padding masked), context
   summaries ``C = softmax(A) X``
5. integrator biLSTM over ``[X; X − C; X ⊙ C]`` (+ ELMo output mix, allennlp
   ``use_integrator_output_elmo``)
6. pooling over time: max, min, mean and self-attentive (a linear score per token, masked
   softmax, weighted sum) → ``[max; min; mean; self]`` → dropout
7. output network: the paper's two ReLU layers with dropout and a linear classifier, or
   allennlp's three maxout layers (the last gives the logits)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.features.inject import Injector
from tasks.nn.layers import BiLSTM, masked_softmax
from tasks.representations import Layers
from tasks.sst5.config import Sst5Config


@dataclass(frozen=True)
class SstBatch:
    """A padded batch of texts.

    Attributes:
        words: (batch, time) word ids, 0 = padding.
        mask: (batch, time) bool, true on real tokens.
        labels: (batch,) gold label indices, or ``None``.
        layers: representation layers (e.g. ELMo) of the texts (:meth:`Layers.empty` without).
    """

    words: Tensor
    mask: Tensor
    labels: Tensor | None
    layers: Layers


@dataclass(frozen=True)
class SstOutput:
    """Loss (mean over the batch; ``None`` without labels), logits (batch, labels) and the
    predicted label indices (batch,)."""

    loss: Tensor | None
    logits: Tensor
    predictions: Tensor


class Maxout(nn.Module):
    """``max`` over ``pool`` linear pieces per output unit (Goodfellow et al. 2013; allennlp
    ``Maxout``)."""

    def __init__(self, input_dim: int, output_dim: int, pool: int) -> None:
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim * pool)
        self.output_dim, self.pool = output_dim, pool

    def forward(self, x: Tensor) -> Tensor:
        """(..., in) → (..., out)."""
        pieces = self.linear(x)  # (..., out·pool)
        return pieces.view(*x.shape[:-1], self.output_dim, self.pool).max(dim=-1).values


def biattention(x: Tensor, mask: Tensor) -> Tensor:
    """Context summaries of a sentence attending over itself (BCN with ``Y = X``).

    ``C_i = Σ_j softmax_j(x_i · x_j) x_j`` over the real tokens ``j``.

    Args:
        x: (batch, time, dim) encoder states, 0 at padding.
        mask: (batch, time) bool.

    Returns:
        (batch, time, dim).
    """
    affinity = torch.bmm(x, x.transpose(1, 2))  # (b, t, t)
    weights = masked_softmax(affinity, mask[:, None, :])  # (b, t, t), keys masked
    return torch.bmm(weights, x)  # (b, t, dim)


def pool(h: Tensor, mask: Tensor, scores: Tensor) -> Tensor:
    """``[max; min; mean; self-attentive]`` pooling over the real tokens.

    Args:
        h: (batch, time, dim).
        mask: (batch, time) bool, at least one true per row.
        scores: (batch, time) self-attentive logits.

    Returns:
        (batch, 4·dim).
    """
    keep = mask[:, :, None]  # (b, t, 1)
    big = torch.finfo(h.dtype).max
    max_pool = h.masked_fill(~keep, -big).max(dim=1).values  # (b, dim)
    min_pool = h.masked_fill(~keep, big).min(dim=1).values  # (b, dim)
    lengths = mask.sum(1, keepdim=True).clamp_min(1).to(h.dtype)  # (b, 1)
    mean_pool = (h * keep).sum(1) / lengths  # (b, dim)
    weights = masked_softmax(scores, mask)  # (b, t)
    self_pool = torch.bmm(weights[:, None, :], h).squeeze(1)  # (b, dim)
    return torch.cat([max_pool, min_pool, mean_pool, self_pool], dim=-1)  # (b, 4·dim)


def output_network(config: Sst5Config, input_dim: int, num_labels: int) -> nn.Sequential:
    """The classifier on the pooled vector: ReLU layers + linear (paper) or maxout (allennlp)."""
    layers: list[nn.Module] = []
    width = input_dim
    for dim, p in zip(config.output_dims, config.output_dropout, strict=True):
        if config.output == "relu":
            layers += [nn.Linear(width, dim), nn.ReLU()]
        else:
            layers.append(Maxout(width, dim, config.maxout_pool))
        layers.append(nn.Dropout(p))
        width = dim
    if config.output == "relu":
        layers.append(nn.Linear(width, num_labels))
    else:  # allennlp: the last maxout layer gives the logits (dropout 0.0 after it)
        layers.append(Maxout(width, num_labels, config.maxout_pool))
    return nn.Sequential(*layers)


class BiattentiveClassificationNetwork(nn.Module):
    """BCN; every width is computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: (vocab, word_dim) fixed vectors (row 0 padding, row 1 unknown).
        num_labels: number of classes.
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.
    """

    def __init__(
        self, config: Sst5Config, word_vectors: Tensor, num_labels: int, injector: Injector
    ) -> None:
        super().__init__()
        self.config, self.injector = config, injector
        self.words = nn.Embedding.from_pretrained(word_vectors, freeze=True, padding_idx=0)
        embed_dim = word_vectors.shape[1] + injector.extra_dim("input")
        represented = bool(injector.active_sites)  # ELMo (or CoVe, …) at some site
        self.embedding_dropout = nn.Dropout(config.embedding_dropout_for(represented))
        self.pre_encode = nn.Linear(embed_dim, config.pre_encode_dim)
        self.pre_encode_dropout = nn.Dropout(config.pre_encode_dropout)
        self.encoder = BiLSTM(config.pre_encode_dim, config.encoder_hidden)
        self.integrator = BiLSTM(3 * self.encoder.output_dim, config.integrator_hidden)
        integrated_dim = self.integrator.output_dim + injector.extra_dim("output")
        self.self_attentive = nn.Linear(integrated_dim, 1)
        self.pool_dropout = nn.Dropout(config.integrator_dropout)
        self.output = output_network(config, 4 * integrated_dim, num_labels)

    def forward(self, batch: SstBatch) -> SstOutput:
        """Logits, predictions and (with labels) the cross-entropy loss."""
        mask = batch.mask
        injected = self.injector(batch.layers)
        x = self.injector.concat("input", self.words(batch.words), injected)  # (b, t, embed)
        x = self.embedding_dropout(x)
        x = self.pre_encode_dropout(F.relu(self.pre_encode(x)))  # (b, t, pre)
        encoded = self.encoder(x, mask)  # (b, t, 2·enc)
        context = biattention(encoded, mask)  # (b, t, 2·enc)
        integrator_input = torch.cat(
            [encoded, encoded - context, encoded * context], dim=-1
        )  # (b, t, 6·enc)
        h = self.integrator(integrator_input, mask)  # (b, t, 2·int)
        h = self.injector.concat("output", h, injected)  # (b, t, integrated)
        scores = self.self_attentive(h).squeeze(-1)  # (b, t)
        pooled = self.pool_dropout(pool(h, mask, scores))  # (b, 4·integrated)
        logits = self.output(pooled)  # (b, labels)
        loss = None if batch.labels is None else F.cross_entropy(logits, batch.labels)
        return SstOutput(loss, logits, logits.argmax(dim=-1))
