"""LSTM with projection and clipping, stacked per direction with residual connections.

ELMO_SPEC §6–7 (TF ``LSTMCell(num_proj, cell_clip, proj_clip)`` as used by bilm-tf). Per step::

    z   = x_t W_x + h_{t-1} W_h + b                 (4C)   gates in our order [i, f, o, j]
    c_t = clip(σ(f) · c_{t-1} + σ(i) · tanh(j))     (C)    the +1 forget bias is folded into b
    h_t = clip((σ(o) · tanh(c_t)) W_P)              (P)

Layout: weights use the TF ``x @ W`` convention (``W_x``, ``W_h``: ``(P, 4C)``, ``W_P``:
``(C, P)``), gate blocks reordered from TF's ``[i, j, f, o]`` to ``[i, f, o, j]`` so the three
sigmoid gates are one contiguous block.

Speed (``_run_inference``): the input products of a chunk of time steps are one GEMM (or, when
the caller passes the distinct words of the batch, one GEMM per distinct word and a row gather:
the input of ELMo's first layer depends only on the word); each step is one GEMM on pre-packed
weights with the input product added inside it (oneDNN binary post-op) and in-place elementwise
work; sequences are sorted by length so the active rows at step ``t`` are always a prefix of the
batch (forward: shrinking, backward: growing), hence no padded position is ever computed and no
state is touched after a row ends. ``_run_autograd`` is the same arithmetic out of place, for
training.

Optional int8 inference (:meth:`LSTMWithProjection.quantize_int8`): the three products use
fbgemm's dynamically quantised GEMM (weights int8 per output channel, activations quantised per
call); deviations are reported by ``benchmarks/bench_bilm.py``.
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor, nn

#: Time steps whose input products are computed in one GEMM (inference); bounds memory.
TIME_CHUNK = 32
#: At most this many rows (steps × active rows) of input products are held at once (inference):
#: with C = 4096 a row is 64 KiB, so 256 rows bound the buffer at 16 MiB per running cell.
ZIN_ROWS = 256
#: Largest per-word input-product table (distinct words) a cell builds; beyond it (or when the
#: words barely repeat) the input product is computed per position. 768 words = 48 MiB at C=4096.
MAX_TABLE_WORDS = 768
_PACKING = torch.backends.mkldnn.is_available()
_FUSED_ADD = _PACKING and hasattr(torch.ops.mkldnn._linear_pointwise, "binary")


def _packed_mm(x: Tensor, packed: Tensor) -> Tensor:
    """``x @ W`` with ``W`` pre-packed by ``torch.ops.mkldnn._reorder_linear_weight``."""
    return torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")


def _packed_mm_add(x: Tensor, other: Tensor, packed: Tensor) -> Tensor:
    """``x @ W + other`` in one oneDNN call (binary ``add`` post-op), ``W`` pre-packed.

    Args:
        x: ``(n, in)`` contiguous.
        other: ``(n, out)`` contiguous, added inside the GEMM (no second pass over the output).
        packed: ``W`` from ``torch.ops.mkldnn._reorder_linear_weight``.

    Returns:
        A new ``(n, out)`` tensor.
    """
    if _FUSED_ADD:
        return torch.ops.mkldnn._linear_pointwise.binary(x, other, packed, None, "add")
    return _packed_mm(x, packed).add_(other)


def _int8_pack(weight: Tensor, bias: Tensor | None) -> object:
    """Prepack ``x @ weight (+ bias)`` for ``torch.ops.quantized.linear_dynamic``.

    Args:
        weight: ``(in, out)`` float32 in the ``x @ W`` convention.
        bias: ``(out,)`` or ``None``.

    Returns:
        fbgemm's packed-parameter object: int8 weights, one symmetric scale per output column.
    """
    w = weight.detach().float().t().contiguous()  # (out, in), torch.nn.Linear layout
    scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-12).double()  # (out,)
    zero = torch.zeros(w.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # quantized tensor creation is flagged deprecated in 2.13
        warnings.simplefilter("ignore")
        q = torch.quantize_per_channel(w, scale, zero, 0, torch.qint8)
        b = None if bias is None else bias.detach().float().contiguous()
        return torch.ops.quantized.linear_prepack(q, b)


def int8_mm(x: Tensor, packed: object) -> Tensor:
    """``x @ W (+ b)`` with ``packed`` from :func:`_int8_pack`: int8 GEMM, float32 result.

    Activations are quantised per call with 7-bit range (``reduce_range``), which keeps fbgemm's
    int16 accumulation from saturating.
    """
    return torch.ops.quantized.linear_dynamic(x, packed, True)


def uses_word_table(words: int, positions: int) -> bool:
    """Whether inference builds the per-word input-product table: it is bounded
    (:data:`MAX_TABLE_WORDS`) and worth it (the words repeat: at most 3/4 of the positions)."""
    return words <= min(MAX_TABLE_WORDS, positions * 3 // 4)


def active_counts(lengths: list[int], steps: int) -> list[int]:
    """Rows active at each step for lengths sorted in decreasing order: ``#{b: len_b > t}``."""
    counts = [0] * steps
    for length in lengths:
        for t in range(min(length, steps)):
            counts[t] += 1
    return counts


class LSTMWithProjection(nn.Module):
    """One layer, one direction.

    Args:
        input_dim: width of x (P for every ELMo layer).
        cell_dim: memory cell C.
        projection_dim: output/state width P; no projection when ``None``.
        cell_clip, proj_clip: clamp bounds (``None`` = no clip).
        reverse: run from the last real token to the first.
    """

    def __init__(
        self,
        input_dim: int,
        cell_dim: int,
        projection_dim: int | None,
        cell_clip: float | None,
        proj_clip: float | None,
        reverse: bool,
    ) -> None:
        super().__init__()
        hidden = projection_dim or cell_dim
        self.input_dim, self.cell_dim, self.hidden_dim = input_dim, cell_dim, hidden
        self.cell_clip, self.proj_clip, self.reverse = cell_clip, proj_clip, reverse
        self.w_input = nn.Parameter(torch.empty(input_dim, 4 * cell_dim))
        self.w_state = nn.Parameter(torch.empty(hidden, 4 * cell_dim))
        self.bias = nn.Parameter(torch.empty(4 * cell_dim))
        self.w_proj: nn.Parameter | None = None
        if projection_dim is not None:
            self.w_proj = nn.Parameter(torch.empty(cell_dim, projection_dim))
        # weight name -> ((data_ptr, version, shape) of the packed weight, packed weight)
        self._packed_cache: dict[str, tuple[tuple[int, int, tuple[int, ...]], Tensor]] = {}
        # int8 packed (input, state, projection) products; None = float arithmetic.
        self._int8: tuple[object, object, object | None] | None = None

    @property
    def int8(self) -> bool:
        """Whether inference runs the int8 GEMMs (:meth:`quantize_int8`)."""
        return self._int8 is not None

    def quantize_int8(self, enabled: bool = True) -> None:
        """Switch inference to int8 GEMMs for the input, state and projection products.

        The float weights stay (training and the autograd path keep using them); the int8 copies
        are a snapshot: call again after changing the weights.

        Args:
            enabled: False goes back to float32 arithmetic.
        """
        if not enabled:
            self._int8 = None
            return
        self._int8 = (
            _int8_pack(self.w_input, self.bias),
            _int8_pack(self.w_state, None),
            None if self.w_proj is None else _int8_pack(self.w_proj, None),
        )

    def forward(
        self,
        inputs: Tensor,
        lengths: list[int],
        h0: Tensor,
        c0: Tensor,
        words: Tensor | None = None,
        word_index: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Run over a length-sorted, time-major batch.

        Args:
            inputs: ``(T, B, input_dim)``, rows sorted by decreasing length.
            lengths: real lengths, decreasing.
            h0: ``(B, hidden)`` initial output state; c0: ``(B, C)`` initial cell.
            words: optional ``(U, input_dim)``: the distinct input vectors, with
                ``inputs[t, b] == words[word_index[t, b]]`` at every real position. Inference
                then computes the input product once per distinct vector (at most
                :data:`MAX_TABLE_WORDS` of them) and gathers it; ignored by the autograd path.
            word_index: ``(T, B)`` long, see ``words`` (any valid index at padding).

        Returns:
            outputs ``(T, B, hidden)`` (exactly 0 past each row's length), and the final
            ``h (B, hidden)``, ``c (B, C)`` of each row (taken at its last real step).
        """
        steps, batch, _ = inputs.shape
        counts = active_counts(lengths, steps)
        if torch.is_grad_enabled() and (inputs.requires_grad or self.w_state.requires_grad):
            zin = torch.addmm(self.bias, inputs.reshape(steps * batch, -1), self.w_input)
            zin = zin.view(steps, batch, 4 * self.cell_dim)  # (T, B, 4C) all input products
            order = range(steps - 1, -1, -1) if self.reverse else range(steps)
            return self._run_autograd(zin, counts, order, h0, c0)
        table = None
        if words is not None and word_index is not None:
            if uses_word_table(words.shape[0], sum(counts)):
                # (U, 4C) one row per distinct word, in the dtype of the per-step buffers (an
                # ``out=`` product: under autocast a plain one would come back in bf16/fp16)
                table = self._input_product(
                    words, out=inputs.new_empty(words.shape[0], 4 * self.cell_dim)
                )
        return self._run_inference(inputs, counts, h0, c0, table, word_index)

    def _input_product(self, x: Tensor, out: Tensor | None = None) -> Tensor:
        """``x @ W_x + b`` for ``x (n, input_dim)`` → ``(n, 4C)`` (int8 GEMM in int8 mode)."""
        if self._int8 is not None:
            z = int8_mm(x.contiguous(), self._int8[0])  # (n, 4C), bias included
            return z if out is None else out.copy_(z)
        if out is None:
            return torch.addmm(self.bias, x, self.w_input)
        return torch.addmm(self.bias, x, self.w_input, out=out)

    def _run_inference(
        self,
        inputs: Tensor,
        counts: list[int],
        h0: Tensor,
        c0: Tensor,
        table: Tensor | None = None,
        word_index: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        steps, batch, _ = inputs.shape
        C = self.cell_dim
        h, c = h0.clone(), c0.clone()
        out = inputs.new_zeros(steps, batch, self.hidden_dim)
        zbuf = inputs.new_empty(batch, 4 * C)
        mbuf = inputs.new_empty(batch, C)
        int8 = self._int8
        packed_state = self._packed("w_state", inputs) if int8 is None else None
        packed_proj = None
        if int8 is None and self.w_proj is not None:
            packed_proj = self._packed("w_proj", inputs)
        # Input products of a chunk of steps at once, for the rows active in that chunk only:
        # one large GEMM (or gather) per chunk; memory bounded by ZIN_ROWS, not by the batch.
        chunk = max(1, min(TIME_CHUNK, ZIN_ROWS // max(batch, 1)))
        zin_buf = inputs.new_empty(min(steps, chunk) * batch * 4 * C)
        starts = list(range(0, steps, chunk))
        for t0 in reversed(starts) if self.reverse else starts:
            t1 = min(t0 + chunk, steps)
            rows = counts[t0]  # counts decrease with t: the chunk's widest step is its first
            if rows == 0:
                continue
            zin = zin_buf[: (t1 - t0) * rows * 4 * C].view((t1 - t0) * rows, 4 * C)
            if table is not None and word_index is not None:
                index = word_index[t0:t1, :rows].reshape(-1)  # (chunk·rows,)
                torch.index_select(table, 0, index, out=zin)  # (chunk·rows, 4C)
            else:
                x = inputs[t0:t1, :rows].reshape((t1 - t0) * rows, -1)  # (chunk·rows, P)
                self._input_product(x, out=zin)
            zin = zin.view(t1 - t0, rows, 4 * C)  # (chunk, rows, 4C)
            for t in range(t1 - 1, t0 - 1, -1) if self.reverse else range(t0, t1):
                n = counts[t]
                if n == 0:
                    continue
                if int8 is not None:  # fbgemm int8 GEMM, float32 result
                    z = int8_mm(h[:n], int8[1]).add_(zin[t - t0, :n])  # (n, 4C)
                elif packed_state is not None:  # oneDNN GEMM on pre-packed weights, fused add
                    z = _packed_mm_add(h[:n], zin[t - t0, :n], packed_state)  # (n, 4C)
                else:
                    z = torch.addmm(zin[t - t0, :n], h[:n], self.w_state, out=zbuf[:n])
                # tanh(x) = 2σ(2x) − 1: one sigmoid pass over all four blocks; torch's CPU tanh
                # is several times slower than its sigmoid (×2 is exact; deviation ≤ 2e-7).
                z[:, 3 * C :].mul_(2.0)
                z.sigmoid_()
                gates_j = z[:, 3 * C :].mul_(2.0).sub_(1.0)
                cell = c[:n]
                cell.mul_(z[:, C : 2 * C]).addcmul_(z[:, :C], gates_j)  # f·c + i·j
                if self.cell_clip is not None:
                    cell.clamp_(-self.cell_clip, self.cell_clip)
                m = torch.mul(cell, 2.0, out=mbuf[:n]).sigmoid_().mul_(2.0).sub_(1.0)  # tanh(c)
                m.mul_(z[:, 2 * C : 3 * C])  # (n, C) o·tanh(c)
                hn = h[:n]
                if int8 is not None and int8[2] is not None:
                    hn.copy_(int8_mm(m, int8[2]))  # (n, P)
                elif packed_proj is not None:
                    hn.copy_(_packed_mm(m, packed_proj))  # (n, P)
                elif self.w_proj is not None:
                    torch.mm(m, self.w_proj, out=hn)  # (n, P)
                else:
                    hn.copy_(m)
                if self.proj_clip is not None:
                    hn.clamp_(-self.proj_clip, self.proj_clip)
                out[t, :n] = hn
        return out, h, c

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_packed_cache"] = {}  # oneDNN tensors neither pickle nor deep-copy; re-packed lazily
        state["_int8"] = None  # fbgemm packed weights do not pickle either: quantize again
        return state

    def _packed(self, name: str, like: Tensor) -> Tensor | None:
        """``name`` (``(in, out)``) pre-packed for oneDNN, cached until the weight changes.

        The recurrent products have only ``batch`` rows; on CPU, oneDNN's GEMM on a weight packed
        once runs them 1.5–2× faster than ``addmm`` (measured here; fp32 throughout, deviation
        from float64 of the same order as MKL's). ``None`` where oneDNN is unavailable or the
        tensors are not float32 on the CPU.
        """
        weight = getattr(self, name)
        if not _PACKING or like.device.type != "cpu" or weight.dtype != torch.float32:
            return None
        key = (weight.data_ptr(), weight._version, tuple(weight.shape))
        cached = self._packed_cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach().t().contiguous(), 64)
        except (RuntimeError, AttributeError):
            return None
        self._packed_cache[name] = (key, packed)
        return packed

    def _run_autograd(
        self, zin: Tensor, counts: list[int], order: range, h0: Tensor, c0: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        steps, batch, _ = zin.shape
        C = self.cell_dim
        h, c = h0, c0
        outputs: list[Tensor] = [zin.new_zeros(batch, self.hidden_dim)] * steps
        for t in order:
            n = counts[t]
            if n == 0:
                continue
            z = torch.addmm(zin[t, :n], h[:n], self.w_state)  # (n, 4C)
            sig = torch.sigmoid(z[:, : 3 * C])
            cell = sig[:, C : 2 * C] * c[:n] + sig[:, :C] * torch.tanh(z[:, 3 * C :])
            if self.cell_clip is not None:
                cell = cell.clamp(-self.cell_clip, self.cell_clip)
            hn = sig[:, 2 * C :] * torch.tanh(cell)  # (n, C)
            if self.w_proj is not None:
                hn = hn @ self.w_proj  # (n, P)
            if self.proj_clip is not None:
                hn = hn.clamp(-self.proj_clip, self.proj_clip)
            if n < batch:
                h = torch.cat([hn, h[n:]])
                c = torch.cat([cell, c[n:]])
                outputs[t] = torch.cat([hn, hn.new_zeros(batch - n, self.hidden_dim)])
            else:
                h, c, outputs[t] = hn, cell, hn
        return torch.stack(outputs), h, c
