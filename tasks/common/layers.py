"""Layers shared by several task models: variational dropout, a masked bi-GRU, trilinear
attention scores, masked softmax, a character CNN word encoder."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class VariationalDropout(nn.Module):
    """Dropout with one mask per sequence, shared over time (Gal & Ghahramani 2016), as
    document-qa's ``VariationalDropoutLayer``. ``x``: (batch, time, dim)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1.0 - self.p)
        return x * keep / (1.0 - self.p)  # (batch, time, dim)


class BiGRU(nn.Module):
    """A bidirectional GRU over right-padded sequences (packed, so padding never leaks)."""

    def __init__(self, input_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.gru = nn.GRU(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.output_dim = 2 * hidden_dim

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) → (batch, time, 2·hidden); 0 at pads."""
        lengths = mask.sum(1).clamp_min(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=True, enforce_sorted=False
        )
        out, _ = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out * mask[:, :, None]  # (batch, time, 2·hidden)


class TrilinearAttention(nn.Module):
    """Similarity ``s_ij = w·[x_i; y_j; x_i∘y_j] + b`` (Seo et al. 2017, BiDAF)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.w_x = nn.Linear(dim, 1, bias=False)
        self.w_y = nn.Linear(dim, 1, bias=False)
        self.w_xy = nn.Parameter(torch.empty(dim).uniform_(-(dim**-0.5), dim**-0.5))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        """``x`` (batch, n, d), ``y`` (batch, m, d) → scores (batch, n, m)."""
        cross = torch.bmm(x * self.w_xy, y.transpose(1, 2))  # (batch, n, m)
        return cross + self.w_x(x) + self.w_y(y).transpose(1, 2) + self.bias


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` with masked positions at probability 0 (all-masked rows give 0)."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=dim) * mask


def masked_log_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Log-softmax over the last dim, masked positions at a very low value."""
    return F.log_softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)


class CharCNNEncoder(nn.Module):
    """Words as max-pooled convolutions over their character embeddings (Kim 2014; BiDAF)."""

    def __init__(self, n_chars: int, char_dim: int, n_filters: int, width: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, n_filters, width, padding=width // 2)
        self.output_dim = n_filters

    def forward(self, chars: Tensor) -> Tensor:
        """``chars`` (batch, time, word_len) ids (0 = pad) → (batch, time, n_filters)."""
        b, t, w = chars.shape
        x = self.embedding(chars.view(b * t, w)).transpose(1, 2)  # (b·t, char_dim, w)
        x = F.relu(self.conv(x)).max(dim=2).values  # (b·t, n_filters)
        return x.view(b, t, -1)
