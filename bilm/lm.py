"""Language-model objective for biLM pretraining (bilm-tf ``bilm/training.py``).

One softmax layer (``W (V, P)``, ``b (V,)``) is **shared by both directions**, as in the
original. Training uses either the full softmax (small vocabularies) or a sampled softmax
(Jean et al. 2015) with negatives drawn from a log-uniform (Zipfian) proposal — which is why the
vocabulary must be sorted by descending frequency — and the expected-count correction
``logit − log(S · q(k))``. Evaluation always uses the full softmax.

Deviation, documented: TensorFlow's sampler draws *unique* candidates by rejection; we draw with
replacement (the estimator of Jean et al. 2015; no rejection loop). Both subtract the log expected
count; both remove accidental hits (a negative equal to the target).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def log_uniform_probs(vocab_size: int) -> Tensor:
    """Proposal ``q(k) = (log(k + 2) − log(k + 1)) / log(V + 1)`` for ids ``0..V−1``."""
    k = torch.arange(vocab_size, dtype=torch.float64)
    return ((torch.log(k + 2) - torch.log(k + 1)) / math.log(vocab_size + 1)).float()


class SoftmaxHead(nn.Module):
    """Shared output layer of the forward and backward LMs.

    Args:
        vocab_size: V.
        dim: P, the LSTM projection size.
        num_samples: negatives per batch for the sampled softmax; ``None`` = full softmax.
    """

    proposal: Tensor  # (V,) log-uniform proposal probabilities: a non-persistent buffer

    def __init__(self, vocab_size: int, dim: int, num_samples: int | None = None) -> None:
        super().__init__()
        if num_samples is not None and num_samples >= vocab_size:
            # bilm-tf #75: "Sampler's range is too small"; a full softmax is then exact and cheaper.
            num_samples = None
        self.vocab_size, self.num_samples = vocab_size, num_samples
        self.weight = nn.Parameter(torch.randn(vocab_size, dim) / math.sqrt(dim))  # bilm-tf init
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.register_buffer("proposal", log_uniform_probs(vocab_size), persistent=False)

    def full_loss(self, hidden: Tensor, targets: Tensor) -> Tensor:
        """Mean cross-entropy over all V words. ``hidden (N, P)``, ``targets (N,)``."""
        logits = torch.addmm(self.bias, hidden, self.weight.t())  # (N, V)
        return F.cross_entropy(logits, targets)

    def sampled_loss(self, hidden: Tensor, targets: Tensor, generator: torch.Generator) -> Tensor:
        """Mean sampled-softmax loss with shared negatives. ``hidden (N, P)``, ``targets (N,)``."""
        assert self.num_samples is not None
        S = self.num_samples
        negatives = torch.multinomial(self.proposal, S, replacement=True, generator=generator)
        log_q = torch.log(self.proposal * S)  # (V,) log expected counts
        true_logit = (hidden * self.weight[targets]).sum(-1) + self.bias[targets]  # (N,)
        true_logit = true_logit - log_q[targets]
        neg_logits = torch.addmm(self.bias[negatives], hidden, self.weight[negatives].t())  # (N, S)
        neg_logits = neg_logits - log_q[negatives]
        hits = targets[:, None] == negatives[None, :]  # (N, S) accidental hits
        neg_logits = neg_logits.masked_fill(hits, float("-inf"))
        logits = torch.cat([true_logit[:, None], neg_logits], dim=1)  # (N, 1 + S)
        return -torch.log_softmax(logits, dim=1)[:, 0].mean()

    def loss(
        self, hidden: Tensor, targets: Tensor, generator: torch.Generator | None = None
    ) -> Tensor:
        """Sampled loss in training mode when configured, else the full softmax."""
        if self.training and self.num_samples is not None:
            if generator is None:
                raise ValueError("sampled softmax needs a torch.Generator (for exact resume)")
            return self.sampled_loss(hidden, targets, generator)
        return self.full_loss(hidden, targets)
