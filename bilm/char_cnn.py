"""Context-independent token encoder: char embedding → CNN + max-pool → highway → projection.

ELMO_SPEC §5 (bilm-tf ``_build_word_char_embeddings``; allennlp ``_ElmoCharacterEncoder``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bilm.options import CharCNNOptions


class Highway(nn.Module):
    """Highway layers of Srivastava et al. (2015) in the ELMo convention.

    ``g = σ(x W_carry + b_carry)``, ``y = g · relu(x W_transform + b_transform) + (1 − g) · x``
    (bilm-tf naming: its "carry" gate gates the transform path). Always relu (ELMO_SPEC §5.3).
    Both products are one GEMM: ``weight`` is ``(F, 2F)`` = ``[W_transform | W_carry]``.
    """

    def __init__(self, dim: int, n_layers: int) -> None:
        super().__init__()
        self.dim = dim
        self.weight = nn.ParameterList(
            nn.Parameter(torch.empty(dim, 2 * dim)) for _ in range(n_layers)
        )
        self.bias = nn.ParameterList(nn.Parameter(torch.empty(2 * dim)) for _ in range(n_layers))

    def forward(self, x: Tensor) -> Tensor:
        """Apply every layer. ``x``: (tokens, F) → (tokens, F)."""
        for weight, bias in zip(self.weight, self.bias, strict=True):
            both = torch.addmm(bias, x, weight)  # (tokens, 2F)
            transform = F.relu(both[:, : self.dim])
            gate = torch.sigmoid(both[:, self.dim :])
            x = torch.lerp(x, transform, gate)  # g·transform + (1−g)·x
        return x


class CharCNN(nn.Module):
    """Character CNN token encoder.

    Args:
        opts: char CNN options.
        projection_dim: output width P (the LSTM projection size).

    Parameters follow the TF ``x @ W`` convention so that loading and exporting the official HDF5
    are plain copies: conv weights ``(n, E, w)`` (torch Conv1d), highway ``(F, 2F)``, projection
    ``(F, P)``. ``projection`` is ``None`` when ``F == P`` (bilm-tf builds ``CNN_proj`` only if
    they differ).
    """

    def __init__(self, opts: CharCNNOptions, projection_dim: int) -> None:
        super().__init__()
        self.opts = opts
        # Row 0 = padding id, kept at zero (the official file stores the other 261 rows).
        self.char_embedding = nn.Embedding(262, opts.embedding_dim, padding_idx=0)
        self.conv_weight = nn.ParameterList(
            nn.Parameter(torch.empty(n, opts.embedding_dim, w)) for w, n in opts.filters
        )
        self.conv_bias = nn.ParameterList(nn.Parameter(torch.empty(n)) for _, n in opts.filters)
        self.highway = Highway(opts.n_filters, opts.n_highway)
        self.proj_weight: nn.Parameter | None = None
        self.proj_bias: nn.Parameter | None = None
        if opts.n_filters != projection_dim:
            self.proj_weight = nn.Parameter(torch.empty(opts.n_filters, projection_dim))
            self.proj_bias = nn.Parameter(torch.empty(projection_dim))
        self.output_dim = projection_dim
        self._act = torch.relu if opts.activation == "relu" else torch.tanh

    def forward(self, char_ids: Tensor) -> Tensor:
        """Encode tokens.

        Args:
            char_ids: ``(tokens, max_chars)`` shifted char ids (1..261).

        Returns:
            ``(tokens, P)`` token embeddings.
        """
        chars = self.char_embedding(char_ids).transpose(1, 2)  # (tokens, E, max_chars)
        pooled = [
            torch.max(F.conv1d(chars, w, b), dim=2).values  # (tokens, n_i)
            for w, b in zip(self.conv_weight, self.conv_bias, strict=True)
        ]
        x = self._act(torch.cat(pooled, dim=1))  # (tokens, F): max-pool, then activation
        x = self.highway(x)  # (tokens, F)
        if self.proj_weight is not None and self.proj_bias is not None:
            x = torch.addmm(self.proj_bias, x, self.proj_weight)  # (tokens, P)
        return x
