"""Context-independent token encoder: char embedding → CNN + max-pool → highway → projection.

bilm-tf ``bilm/model.py`` ``_build_word_char_embeddings``; allennlp v2.10.1
``allennlp/modules/elmo.py`` ``_ElmoCharacterEncoder``.

Inference precisions besides float32 (:meth:`CharCNN.quantize_int8`, :meth:`CharCNN.set_bf16`):
int8 runs the highway and projection GEMMs in fbgemm; bf16 runs those and the convolutions with
bf16 operands and float32 accumulation (each convolution as one product over its character
windows), keeping the max-pool, bias, activation, highway mixing and the output in float32.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bilm.load import check_load
from bilm.lstm import (
    Bf16Operands,
    InferencePrecision,
    _int8_pack,
    add_float32,
    bf16_mm,
    int8_mm,
    linear,
)
from bilm.options import CharCNNOptions


class Highway(nn.Module):
    """Highway layers of Srivastava et al. (2015) in the ELMo convention.

    ``g = σ(x W_carry + b_carry)``, ``y = g · relu(x W_transform + b_transform) + (1 − g) · x``
    (bilm-tf naming: its "carry" gate gates the transform path). Always relu, whatever
    ``char_cnn.activation`` says (both reference implementations).
    Both products are one GEMM: ``weight`` is ``(F, 2F)`` = ``[W_transform | W_carry]``.
    """

    def __init__(self, dim: int, n_layers: int) -> None:
        super().__init__()
        self.dim = dim
        self.weight = nn.ParameterList(
            nn.Parameter(torch.empty(dim, 2 * dim)) for _ in range(n_layers)
        )
        self.bias = nn.ParameterList(nn.Parameter(torch.empty(2 * dim)) for _ in range(n_layers))
        self._int8: list[object] | None = None  # int8 packed [W | b] per layer (inference)
        self._bf16 = False  # bf16 products at inference (set_bf16)
        self._bf16_cache = Bf16Operands()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_int8"] = None  # fbgemm packed weights do not pickle: quantize again
        state["_bf16_cache"] = Bf16Operands()  # oneDNN tensors: remade lazily
        return state

    def quantize_int8(self, enabled: bool = True) -> None:
        """Use int8 GEMMs at inference (a snapshot of the weights); False returns to float.
        Turns bf16 off."""
        self._int8 = None
        if enabled:
            self._bf16 = False
            self._int8 = [_int8_pack(w, b) for w, b in zip(self.weight, self.bias, strict=True)]

    def set_bf16(self, enabled: bool = True) -> None:
        """Use bf16 products (float32 accumulation) at inference; False returns to float32.
        Turns int8 off."""
        self._bf16 = enabled
        self._bf16_cache.clear()
        if enabled:
            self._int8 = None

    def forward(self, x: Tensor) -> Tensor:
        """Apply every layer. ``x``: (tokens, F) → (tokens, F)."""
        int8 = self._int8 if not torch.is_grad_enabled() else None
        bf16 = self._bf16 and not torch.is_grad_enabled()
        for k, (weight, bias) in enumerate(zip(self.weight, self.bias, strict=True)):
            if int8 is not None:
                both = int8_mm(x.contiguous(), int8[k])  # (tokens, 2F), bias included
            elif bf16:
                product = bf16_mm(x, *self._bf16_cache.get(str(k), weight))  # (tokens, 2F)
                both = add_float32(product, bias)  # (tokens, 2F) float32
            else:
                both = linear(x, weight, bias)  # (tokens, 2F)
            transform = F.relu(both[:, : self.dim])
            gate = torch.sigmoid(both[:, self.dim :])
            x = torch.lerp(x, transform, gate)  # g·transform + (1−g)·x
            check_load()
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
        self._int8_proj: object | None = None  # int8 packed projection (inference)
        self._bf16 = False  # bf16 convolutions and projection at inference (set_bf16)
        self._bf16_cache = Bf16Operands()

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_int8_proj"] = None  # fbgemm packed weights do not pickle: quantize again
        state["_bf16_cache"] = Bf16Operands()  # oneDNN tensors: remade lazily
        return state

    @property
    def precision(self) -> InferencePrecision:
        """The inference arithmetic: ``"fp32"``, ``"bf16"`` or ``"int8"``."""
        return "int8" if self.int8 else "bf16" if self._bf16 else "fp32"

    def set_bf16(self, enabled: bool = True) -> None:
        """bf16 products (convolutions, highway, projection) with float32 accumulation at
        inference; the operands follow weight changes. False returns to float32; True turns
        int8 off.
        """
        self.highway.set_bf16(enabled)
        self._bf16 = enabled
        self._bf16_cache.clear()
        if enabled:
            self._int8_proj = None

    @property
    def int8(self) -> bool:
        """Whether inference uses int8 GEMMs (highway and projection; convolutions stay float)."""
        return self.highway._int8 is not None

    def quantize_int8(self, enabled: bool = True) -> None:
        """Int8 GEMMs for the highway layers and the projection at inference (weight snapshot).

        Args:
            enabled: False returns to float arithmetic.
        """
        self.highway.quantize_int8(enabled)
        self._int8_proj = None
        if enabled:
            self._bf16 = False
        if enabled and self.proj_weight is not None:
            self._int8_proj = _int8_pack(self.proj_weight, self.proj_bias)

    def forward(self, char_ids: Tensor) -> Tensor:
        """Encode tokens.

        Args:
            char_ids: ``(tokens, max_chars)`` shifted char ids (1..261).

        Returns:
            ``(tokens, P)`` token embeddings (float32).
        """
        if self._bf16 and not torch.is_grad_enabled():
            return self._forward_bf16(char_ids)
        chars = self.char_embedding(char_ids).transpose(1, 2)  # (tokens, E, max_chars)
        pooled = []
        for w, b in zip(self.conv_weight, self.conv_bias, strict=True):
            pooled.append(torch.max(F.conv1d(chars, w, b), dim=2).values)  # (tokens, n_i)
            check_load()  # one thread while another process takes our cores (bilm.load)
        x = self._act(torch.cat(pooled, dim=1))  # (tokens, F): max-pool, then activation
        x = self.highway(x)  # (tokens, F)
        if self._int8_proj is not None and not torch.is_grad_enabled():
            x = int8_mm(x.contiguous(), self._int8_proj)  # (tokens, P), bias included
        elif self.proj_weight is not None and self.proj_bias is not None:
            x = linear(x, self.proj_weight, self.proj_bias)  # (tokens, P)
        return x

    def _forward_bf16(self, char_ids: Tensor) -> Tensor:
        """:meth:`forward` with bf16 products: each convolution is one product of the character
        windows ``(tokens · positions, E · w)`` with its ``(E · w, n)`` filters; the bias is
        added after the max-pool (it is constant over positions), in float32."""
        tokens, max_chars = char_ids.shape
        chars = self.char_embedding(char_ids).to(torch.bfloat16)  # (tokens, max_chars, E)
        pooled = []
        for k, (w, b) in enumerate(zip(self.conv_weight, self.conv_bias, strict=True)):
            n, emb, width = w.shape
            positions = max_chars - width + 1
            windows = chars.unfold(1, width, 1)  # (tokens, positions, E, w)
            flat = windows.reshape(tokens * positions, emb * width)  # (tokens·positions, E·w)
            filters = self._bf16_cache.get(f"conv{k}", w, _conv_matrix)
            scores = bf16_mm(flat, *filters).view(tokens, positions, n)  # (tokens, positions, n)
            pooled.append(add_float32(scores.amax(dim=1), b))  # (tokens, n) float32
        x = self._act(torch.cat(pooled, dim=1))  # (tokens, F)
        x = self.highway(x)  # (tokens, F), bf16 products
        if self.proj_weight is not None and self.proj_bias is not None:
            product = bf16_mm(x, *self._bf16_cache.get("proj", self.proj_weight))  # (tokens, P)
            x = add_float32(product, self.proj_bias)  # (tokens, P) float32
        return x


def _conv_matrix(weight: Tensor) -> Tensor:
    """Conv1d filters ``(n, E, w)`` as the ``(E · w, n)`` matrix of a product with windows
    flattened as ``(E, w)``."""
    return weight.reshape(weight.shape[0], -1).t()  # (E·w, n)
