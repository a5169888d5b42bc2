"""LSTM with projection and clipping, stacked per direction with residual connections.

Peters et al. (2018) §3.4; TF ``LSTMCell(num_proj, cell_clip, proj_clip)`` as used by bilm-tf
``bilm/model.py``. Per step::

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

Optional bf16 inference (:meth:`LSTMWithProjection.set_bf16`): the three products take bf16
operands (weights converted once, oneDNN-packed on the CPU) and accumulate in float32; the gate
arithmetic, the cell and output states and the outputs stay float32. The products' results are
rounded to bf16 on the CPU (oneDNN writes bf16) and kept in float32 on CUDA where torch offers
``out_dtype``. Fast where the CPU multiplies bf16 natively (AVX-512-bf16, AMX:
:func:`cpu_bf16_unit`) and on GPUs; ``benchmarks/bench_precision.py`` reports the deviations.

CUDA graphs (:meth:`LSTMWithProjection.use_graphs`): the recurrent loop of a cell is one fixed
sequence of small kernels for a given ``(steps, batch, active rows per step)``; on CUDA it is
captured once per such shape in a :class:`torch.cuda.CUDAGraph` over static buffers and replayed,
which removes the per-kernel launch cost that bounds the GPU speed. The captured function is
the one recurrent loop the eager path runs too (:meth:`LSTMWithProjection._loop`), on the same
time chunks, so a replay computes exactly what the eager loop computes on that device; on the
CPU the static-buffer loop runs without capture (no gain; it exists so tests can run it).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor, nn

from bilm.load import CHECK_EVERY, check_load

#: Time steps whose input products are computed in one GEMM (inference); bounds memory.
TIME_CHUNK = 32
#: At most this many rows (steps × active rows) of input products are held at once (inference):
#: with C = 4096 a row is 64 KiB, so 256 rows bound the buffer at 16 MiB per running cell.
ZIN_ROWS = 256
#: Largest per-word input-product table (distinct words) a cell builds; beyond it (or when the
#: words barely repeat) the input product is computed per position. 768 words = 48 MiB at C=4096.
MAX_TABLE_WORDS = 768
#: Default number of recurrent-loop shapes whose CUDA graphs a cell keeps (least recently used
#: dropped first); each holds its own input-product buffer (steps × batch × 4C floats).
GRAPH_SHAPES = 4
#: A shape whose input products would need more than this many bytes runs without a graph.
GRAPH_MAX_BYTES = 1 << 30
#: Eager runs on a side stream before a capture (cuBLAS workspaces, allocator warm-up).
GRAPH_WARMUP = 2
_PACKING = torch.backends.mkldnn.is_available()
_FUSED_ADD = _PACKING and hasattr(torch.ops.mkldnn._linear_pointwise, "binary")

#: Inference arithmetic of a cell or a whole biLM (:meth:`bilm.BiLM.to_precision`).
InferencePrecision = Literal["fp32", "bf16", "int8"]
#: Valid :data:`InferencePrecision` values.
INFERENCE_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


def cpu_bf16_unit(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """This CPU's native bf16 multiply unit: ``"AMX"``, ``"AVX-512-bf16"``, or ``None``.

    Without one, oneDNN emulates bf16 (or torch falls back to slow reference kernels), so bf16
    inference is slower than float32 there. Asks torch's CPU feature queries when present,
    otherwise reads the flags of ``cpuinfo`` (``amx_bf16``, ``avx512_bf16``).

    Args:
        cpuinfo: Linux's CPU description, read only when torch cannot answer.
    """
    amx = getattr(torch.cpu, "_is_amx_tile_supported", None)
    avx = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    if amx is not None and avx is not None:
        return "AMX" if amx() else "AVX-512-bf16" if avx() else None
    flags: set[str] = set()
    try:
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            if line.startswith("flags"):
                flags = set(line.partition(":")[2].split())
                break
    except OSError:
        return None
    return "AMX" if "amx_bf16" in flags else "AVX-512-bf16" if "avx512_bf16" in flags else None


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


def linear(x: Tensor, weight: Tensor, bias: Tensor, out: Tensor | None = None) -> Tensor:
    """``bias + x @ weight`` for ``x (n, in)``, ``weight (in, out)`` → ``(n, out)`` (into ``out``
    when given).

    The large products of inference (the char CNN's highway and projection, the LSTM input
    products) run on the CPU as one oneDNN GEMM that reads the weight where it lies (through its
    transpose view: no packed copy, no extra memory); oneDNN's fp32 GEMM ran these shapes
    1.2–1.6× faster than MKL's ``addmm`` on the AMD EPYC measured (``benchmarks/bench_bilm.py``
    times both in its "fp32 GEMM roofline" section). Float32 throughout, like ``addmm``; only
    the summation order differs, and unlike MKL's the result does not depend on the thread count
    (``tests/bilm/test_load.py``).
    Everywhere else (autograd, autocast, CUDA, other dtypes, no oneDNN) it is ``torch.addmm``.
    """
    if (
        _PACKING
        and x.device.type == "cpu"
        and x.dtype == weight.dtype == bias.dtype == torch.float32
        and x.dim() == 2
        and not torch.is_autocast_enabled("cpu")
        and not (
            torch.is_grad_enabled()
            and (x.requires_grad or weight.requires_grad or bias.requires_grad)
        )
    ):
        z = torch.ops.mkldnn._linear_pointwise(x.contiguous(), weight.t(), bias, "none", [], "")
        return z if out is None else out.copy_(z)  # (n, out)
    return torch.addmm(bias, x, weight) if out is None else torch.addmm(bias, x, weight, out=out)


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


def bf16_operand(weight: Tensor) -> tuple[Tensor, bool]:
    """``weight`` (``(in, out)``, ``x @ W`` convention) as the bf16 right operand of a product.

    Returns:
        ``(operand, packed)``: on the CPU with oneDNN, the weight converted to bf16 and packed for
        ``torch.ops.mkldnn._linear_pointwise`` (``packed`` True); elsewhere a contiguous bf16
        copy ``(in, out)``.
    """
    with torch.no_grad():
        w = weight.detach().to(torch.bfloat16)  # (in, out)
        if w.device.type == "cpu" and _onednn_bf16():
            try:
                return torch.ops.mkldnn._reorder_linear_weight(w.t().contiguous(), 64), True
            except (RuntimeError, AttributeError):
                pass
        return w.contiguous(), False


@cache
def _onednn_bf16() -> bool:
    """Whether oneDNN runs bf16 products on this CPU (it needs AVX-512 or newer; elsewhere the
    bf16 operands stay plain tensors for ``torch.mm``)."""
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return _PACKING and check is not None and bool(check())


class Bf16Operands:
    """bf16 operands (:func:`bf16_operand`) of a module's weights, each made on first use and
    remade when its weight changes (in place, replaced or moved)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple[object, ...], tuple[Tensor, bool]]] = {}

    def get(
        self, name: str, weight: Tensor, as_matrix: Callable[[Tensor], Tensor] | None = None
    ) -> tuple[Tensor, bool]:
        """The operand of ``weight`` under ``name``.

        Args:
            name: cache key.
            weight: the parameter.
            as_matrix: turns ``weight`` into its ``(in, out)`` matrix first (convolutions).
        """
        key = (weight.data_ptr(), weight._version, tuple(weight.shape), weight.device)
        cached = self._entries.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        with torch.inference_mode(False):  # an ordinary tensor, usable in any later mode
            matrix = weight if as_matrix is None else as_matrix(weight.detach())
            operand = bf16_operand(matrix)
        self._entries[name] = (key, operand)
        return operand

    def clear(self) -> None:
        """Forget every operand."""
        self._entries.clear()


@cache
def _fp32_out_mm(device: torch.device) -> bool:
    """Whether ``torch.mm(a, b, out_dtype=torch.float32)`` works for bf16 ``a``, ``b`` on
    ``device`` (CUDA in recent torch; not the CPU), checked once with a tiny product."""
    a = torch.ones(2, 2, dtype=torch.bfloat16, device=device)
    try:
        out = torch.mm(a, a, out_dtype=torch.float32)
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    return bool(out.dtype == torch.float32 and torch.equal(out.cpu(), torch.full((2, 2), 2.0)))


def bf16_mm(x: Tensor, operand: Tensor, packed: bool) -> Tensor:
    """``x @ W`` with bf16 operands and float32 accumulation.

    Args:
        x: ``(n, in)`` float32 (converted here) or bf16.
        operand: ``W`` from :func:`bf16_operand`.
        packed: its second value.

    Returns:
        ``(n, out)``: float32 where the device writes float32 results of bf16 products (CUDA),
        else bf16 (the float32 accumulator rounded once).
    """
    xb = x.to(torch.bfloat16).contiguous()  # (n, in)
    if packed:
        return _packed_mm(xb, operand)
    if _fp32_out_mm(xb.device):
        return torch.mm(xb, operand, out_dtype=torch.float32)
    return torch.mm(xb, operand)


def add_float32(product: Tensor, other: Tensor, out: Tensor | None = None) -> Tensor:
    """``product + other`` in float32 for a bf16 or float32 ``product`` (:func:`bf16_mm`).

    A bf16 ``product`` is first widened into the float32 result (exact), then ``other`` added in
    place: about 3× faster on the CPU than a mixed-dtype ``torch.add``.

    Args:
        product: ``(n, k)``.
        other: float32, broadcastable to ``(n, k)`` (a bias row, or input products).
        out: optional float32 ``(n, k)`` to write into.
    """
    if product.dtype == torch.float32:
        return torch.add(other, product) if out is None else torch.add(other, product, out=out)
    if out is None:
        return product.float().add_(other)
    return out.copy_(product).add_(other)


def chunk_plan(
    steps: int, batch: int, counts: list[int], reverse: bool
) -> list[tuple[int, int, int]]:
    """The time chunks of inference whose input products are computed together, in run order.

    Args:
        steps: time steps.
        batch: rows.
        counts: active rows per step (:func:`active_counts`).
        reverse: the backward direction (chunks from the last step to the first).

    Returns:
        ``(t0, t1, rows)`` per chunk with an active row; ``rows = counts[t0]``, the chunk's widest
        step (counts decrease with ``t``). At most ``TIME_CHUNK`` steps and about ``ZIN_ROWS``
        rows of products per chunk.
    """
    chunk = max(1, min(TIME_CHUNK, ZIN_ROWS // max(batch, 1)))
    starts = list(range(0, steps, chunk))
    plan = []
    for t0 in reversed(starts) if reverse else starts:
        if counts[t0] > 0:
            plan.append((t0, min(t0 + chunk, steps), counts[t0]))
    return plan


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


class _StepOps:
    """The two recurrent products of one cell for one run, in the cell's arithmetic.

    ``state``: ``z = zin + h W_h`` (float32 result); ``project``: ``h = m W_P`` into the float32
    state. Chosen once per run from the cell's precision and the device of ``like`` (int8:
    fbgemm; bf16: :func:`bf16_mm`; float32: oneDNN on pre-packed weights on the CPU, ``addmm``
    elsewhere); also holds the run's float32 work buffers.

    Args:
        cell: the cell.
        like: a float32 tensor on the run's device.
        batch: rows of the run.
    """

    def __init__(self, cell: LSTMWithProjection, like: Tensor, batch: int) -> None:
        self.cell = cell
        self.zbuf = like.new_empty(batch, 4 * cell.cell_dim)  # (B, 4C) products (addmm, bf16)
        self.mbuf = like.new_empty(batch, cell.cell_dim)  # (B, C) o·tanh(c)
        self.int8 = cell._int8
        self.bf16_state: tuple[Tensor, bool] | None = None
        self.bf16_proj: tuple[Tensor, bool] | None = None
        self.packed_state: Tensor | None = None
        self.packed_proj: Tensor | None = None
        if self.int8 is None and cell._bf16:
            self.bf16_state = cell._bf16_weight("w_state")
            if cell.w_proj is not None:
                self.bf16_proj = cell._bf16_weight("w_proj")
            _fp32_out_mm(like.device)  # probed here, never inside a graph capture
        elif self.int8 is None:
            self.packed_state = cell._packed("w_state", like)
            if cell.w_proj is not None:
                self.packed_proj = cell._packed("w_proj", like)

    def state(self, h: Tensor, zin: Tensor) -> Tensor:
        """``zin + h @ W_h`` for the ``n`` active rows: ``h (n, P)``, ``zin (n, 4C)`` → ``(n, 4C)``
        float32 (a new tensor or a view of the work buffer)."""
        n = h.shape[0]
        if self.int8 is not None:  # fbgemm int8 GEMM, float32 result
            return int8_mm(h, self.int8[1]).add_(zin)  # (n, 4C)
        if self.bf16_state is not None:  # bf16 operands, float32 accumulation and sum
            return add_float32(bf16_mm(h, *self.bf16_state), zin, out=self.zbuf[:n])  # (n, 4C)
        if self.packed_state is not None:  # oneDNN GEMM on pre-packed weights, fused add
            return _packed_mm_add(h, zin, self.packed_state)  # (n, 4C)
        return torch.addmm(zin, h, self.cell.w_state, out=self.zbuf[:n])  # (n, 4C)

    def project(self, m: Tensor, hn: Tensor) -> None:
        """``hn = m @ W_P`` (``m (n, C)``, ``hn (n, P)`` float32, written in place); a copy of
        ``m`` for a cell without projection."""
        if self.int8 is not None and self.int8[2] is not None:
            hn.copy_(int8_mm(m, self.int8[2]))  # (n, P)
        elif self.bf16_proj is not None:
            hn.copy_(bf16_mm(m, *self.bf16_proj))  # (n, P)
        elif self.packed_proj is not None:
            hn.copy_(_packed_mm(m, self.packed_proj))  # (n, P)
        elif self.cell.w_proj is not None:
            torch.mm(m, self.cell.w_proj, out=hn)  # (n, P)
        else:
            hn.copy_(m)


class _Recurrence:
    """A cell's whole inference loop for one shape, on static buffers (:meth:`use_graphs`).

    The input products of every time chunk (:func:`chunk_plan`) get their own region of one
    buffer, so they are all filled before the loop runs; the loop is the cell's one recurrent
    loop (:meth:`LSTMWithProjection._loop`), the eager path's too, over these chunks. With
    ``capture`` (CUDA) the loop is recorded once in a CUDA graph and :meth:`run` replays it;
    otherwise :meth:`run` runs it eagerly.

    Args:
        cell: the cell.
        like: a float32 tensor on the run's device.
        steps, batch: the shape.
        counts: active rows per step.
        capture: record a CUDA graph (``like`` must be on a CUDA device).
    """

    def __init__(
        self,
        cell: LSTMWithProjection,
        like: Tensor,
        steps: int,
        batch: int,
        counts: list[int],
        capture: bool,
    ) -> None:
        C = cell.cell_dim
        self.cell, self.counts = cell, counts
        plan = chunk_plan(steps, batch, counts, cell.reverse)
        sizes = [(t1 - t0) * rows for t0, t1, rows in plan]
        with torch.inference_mode(False), torch.no_grad():  # ordinary tensors: any later mode
            zin = like.new_empty(max(sum(sizes), 1) * 4 * C)  # all chunks' products, flat
            # (t0, t1, rows, zin) per chunk of the plan, zin ((t1 - t0) · rows, 4C)
            self.chunks: list[tuple[int, int, int, Tensor]] = []
            offset = 0
            for (t0, t1, rows), size in zip(plan, sizes, strict=True):
                region = zin[offset * 4 * C : (offset + size) * 4 * C].view(size, 4 * C)
                self.chunks.append((t0, t1, rows, region))
                offset += size
            self.h = like.new_zeros(batch, cell.hidden_dim)  # (B, P)
            self.c = like.new_zeros(batch, C)  # (B, C)
            self.out = like.new_zeros(steps, batch, cell.hidden_dim)  # (T, B, P)
            self.ops = _StepOps(cell, like, batch)
        self.graph: torch.cuda.CUDAGraph | None = None
        if capture:
            self.graph = _capture(self.loop, like.device)

    @staticmethod
    def nbytes(cell: LSTMWithProjection, steps: int, batch: int, counts: list[int]) -> int:
        """Bytes of the input-product buffer of a shape (what bounds graph memory)."""
        plan = chunk_plan(steps, batch, counts, cell.reverse)
        return sum((t1 - t0) * rows for t0, t1, rows in plan) * 4 * cell.cell_dim * 4

    def loop(self) -> None:
        """The recurrence over every chunk from the static buffers (what a graph records)."""
        self.out.zero_()
        self.cell._loop(self.chunks, self.counts, self.h, self.c, self.out, self.ops)

    def run(self) -> None:
        """Replay the graph, or run :meth:`loop` where nothing was captured."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self.loop()


def _capture(fn: Callable[[], None], device: torch.device) -> torch.cuda.CUDAGraph:
    """Record ``fn`` (CUDA work on static buffers) in a CUDA graph, after warm-up runs on a side
    stream (as torch's CUDA-graph notes advise)."""
    with torch.cuda.device(device), torch.no_grad():
        main = torch.cuda.current_stream(device)
        side = torch.cuda.Stream(device)
        side.wait_stream(main)
        with torch.cuda.stream(side):
            for _ in range(GRAPH_WARMUP):
                fn()
        main.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    return graph


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
        # bf16 products (set_bf16); their operands, cached per weight like _packed_cache.
        self._bf16 = False
        self._bf16_cache = Bf16Operands()
        # recurrent-loop shape -> its static buffers / CUDA graph (use_graphs); None = off.
        self._graphs: OrderedDict[tuple[object, ...], _Recurrence] | None = None
        self._graph_shapes = GRAPH_SHAPES
        self._graph_weights: tuple[object, ...] | None = None

    @property
    def int8(self) -> bool:
        """Whether inference runs the int8 GEMMs (:meth:`quantize_int8`)."""
        return self._int8 is not None

    @property
    def precision(self) -> InferencePrecision:
        """The inference arithmetic: ``"fp32"``, ``"bf16"`` (:meth:`set_bf16`) or ``"int8"``."""
        return "int8" if self._int8 is not None else "bf16" if self._bf16 else "fp32"

    def quantize_int8(self, enabled: bool = True) -> None:
        """Switch inference to int8 GEMMs for the input, state and projection products.

        The float weights stay (training and the autograd path keep using them); the int8 copies
        are a snapshot: call again after changing the weights. Turns bf16 off.

        Args:
            enabled: False goes back to float32 arithmetic.
        """
        if not enabled:
            self._int8 = None
            return
        self._bf16 = False
        self._int8 = (
            _int8_pack(self.w_input, self.bias),
            _int8_pack(self.w_state, None),
            None if self.w_proj is None else _int8_pack(self.w_proj, None),
        )

    def set_bf16(self, enabled: bool = True) -> None:
        """Switch inference to bf16 products (float32 accumulation, state and outputs).

        The bf16 operands are made from the current weights on first use and remade when a
        weight changes (in place or replaced); training and the autograd path stay float32.
        Turns int8 off.

        Args:
            enabled: False goes back to float32 arithmetic.
        """
        self._bf16 = enabled
        self._bf16_cache.clear()
        if enabled:
            self._int8 = None

    @property
    def graphs(self) -> bool:
        """Whether inference runs the recurrent loop through :meth:`use_graphs`."""
        return self._graphs is not None

    def use_graphs(self, enabled: bool = True, shapes: int = GRAPH_SHAPES) -> None:
        """Run the inference loop on static buffers, captured in a CUDA graph per shape on CUDA.

        A shape is ``(steps, batch, active rows per step)``: repeated shapes (fixed-size batches)
        replay one graph; each new shape costs a capture (a few eager runs) and keeps an
        input-product buffer of ``steps × batch × 4C`` floats (larger than
        :data:`GRAPH_MAX_BYTES`: no graph). On the CPU nothing is captured and the same loop runs
        eagerly (as fast as without it; for tests). Under autocast, and for inputs that are not
        float32, the eager loop runs. A failed capture turns graphs off with a warning and the
        call runs without them.

        Args:
            enabled: False frees every graph and returns to the eager loop.
            shapes: graphs kept, least recently used dropped first (≥ 1).

        Raises:
            ValueError: ``shapes`` < 1.
        """
        if shapes < 1:
            raise ValueError(f"shapes must be >= 1, got {shapes}")
        self._graph_shapes = shapes
        self._graphs = OrderedDict() if enabled else None
        self._graph_weights = None

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
        weights = (self.w_input, self.w_state, self.bias, self.w_proj)  # adapted, if wrapped
        if torch.is_grad_enabled() and (
            inputs.requires_grad or any(w is not None and w.requires_grad for w in weights)
        ):
            zin = torch.addmm(self.bias, inputs.reshape(steps * batch, -1), self.w_input)
            zin = zin.view(steps, batch, 4 * self.cell_dim)  # (T, B, 4C) all input products
            order = range(steps - 1, -1, -1) if self.reverse else range(steps)
            return self._run_autograd(zin, counts, order, h0, c0)
        table = None
        if words is not None and word_index is not None:
            if uses_word_table(words.shape[0], sum(counts)):
                # (U, 4C) one row per distinct word, in the dtype of the per-step buffers (under
                # autocast an ``out=`` product: a plain one would come back in bf16/fp16)
                autocast = torch.is_autocast_enabled(inputs.device.type)
                out = inputs.new_empty(words.shape[0], 4 * self.cell_dim) if autocast else None
                table = self._input_product(words, out=out)
        if (
            self._graphs is not None
            and inputs.dtype == torch.float32
            and not torch.is_autocast_enabled(inputs.device.type)  # autocast's casts: eager
            and _Recurrence.nbytes(self, steps, batch, counts) <= GRAPH_MAX_BYTES
        ):
            return self._run_graphed(inputs, counts, h0, c0, table, word_index)
        return self._run_inference(inputs, counts, h0, c0, table, word_index)

    def _input_product(self, x: Tensor, out: Tensor | None = None) -> Tensor:
        """``x @ W_x + b`` for ``x (n, input_dim)`` → ``(n, 4C)`` (int8 GEMM in int8 mode, bf16
        operands in bf16 mode; float32 result)."""
        if self._int8 is not None:
            z = int8_mm(x.contiguous(), self._int8[0])  # (n, 4C), bias included
            return z if out is None else out.copy_(z)
        if self._bf16:
            product = bf16_mm(x, *self._bf16_weight("w_input"))  # (n, 4C) bf16 or float32
            return add_float32(product, self.bias, out=out)  # (n, 4C) float32
        return linear(x, self.w_input, self.bias, out=out)  # (n, 4C)

    def _fill_zin(
        self,
        zin: Tensor,
        inputs: Tensor,
        t0: int,
        t1: int,
        rows: int,
        table: Tensor | None,
        word_index: Tensor | None,
        into: bool = False,
    ) -> Tensor:
        """Input products of steps ``t0:t1``, rows ``:rows``, ``((t1-t0)·rows, 4C)``: a gather
        from the per-word ``table`` into the buffer ``zin``, or one GEMM (a new tensor, or
        written into ``zin`` when ``into`` (static buffers) or under autocast (which would
        return bf16/fp16 products)). Returns the products."""
        if table is not None and word_index is not None:
            index = word_index[t0:t1, :rows].reshape(-1)  # (chunk·rows,)
            return torch.index_select(table, 0, index, out=zin)  # (chunk·rows, 4C)
        x = inputs[t0:t1, :rows].reshape((t1 - t0) * rows, -1)  # (chunk·rows, P)
        into = into or torch.is_autocast_enabled(inputs.device.type)
        return self._input_product(x, out=zin if into else None)

    def _step(self, zin: Tensor, h: Tensor, c: Tensor, out: Tensor, ops: _StepOps) -> None:
        """One time step for the ``n`` active rows, in place (the body of :meth:`_loop`).

        Args:
            zin: ``(n, 4C)`` input products of the step (bias included).
            h: ``(n, P)`` output state, replaced by the new one.
            c: ``(n, C)`` cell state, replaced by the new one.
            out: ``(n, P)`` where the step's output is written.
            ops: the products for this run (:class:`_StepOps`).
        """
        C = self.cell_dim
        z = ops.state(h, zin)  # (n, 4C) gates [i, f, o, j], float32
        # tanh(x) = 2σ(2x) − 1: one sigmoid pass over all four blocks; torch's CPU tanh
        # is several times slower than its sigmoid (×2 is exact; deviation ≤ 2e-7).
        z[:, 3 * C :].mul_(2.0)
        z.sigmoid_()
        gates_j = z[:, 3 * C :].mul_(2.0).sub_(1.0)
        c.mul_(z[:, C : 2 * C]).addcmul_(z[:, :C], gates_j)  # f·c + i·j
        if self.cell_clip is not None:
            c.clamp_(-self.cell_clip, self.cell_clip)
        n = h.shape[0]
        m = torch.mul(c, 2.0, out=ops.mbuf[:n]).sigmoid_().mul_(2.0).sub_(1.0)  # tanh(c)
        m.mul_(z[:, 2 * C : 3 * C])  # (n, C) o·tanh(c)
        ops.project(m, h)  # (n, P)
        if self.proj_clip is not None:
            h.clamp_(-self.proj_clip, self.proj_clip)
        out.copy_(h)

    def _loop(
        self,
        chunks: Iterable[tuple[int, int, int, Tensor]],
        counts: list[int],
        h: Tensor,
        c: Tensor,
        out: Tensor,
        ops: _StepOps,
    ) -> None:
        """The recurrent loop of inference: the one loop of the eager and the graphed path.

        Each chunk is drawn from ``chunks`` only when the previous one has run (the eager path
        fills its products then, into a buffer the chunks share), and its steps run in the
        cell's direction, :meth:`_step` on the rows active at each.

        Args:
            chunks: ``(t0, t1, rows, zin)`` in the order of :func:`chunk_plan`, ``zin`` the
                input products of steps ``t0:t1``, rows ``:rows``, ``((t1 - t0) · rows, 4C)``.
            counts: active rows per step.
            h: ``(B, P)`` output state, updated in place; c: ``(B, C)`` cell state, likewise.
            out: ``(T, B, P)``, each step's output written at its active rows.
            ops: the products for this run (:class:`_StepOps`).
        """
        for t0, t1, rows, zin in chunks:
            zin_steps = zin.view(t1 - t0, rows, 4 * self.cell_dim)  # (chunk, rows, 4C)
            for k, t in enumerate(range(t1 - 1, t0 - 1, -1) if self.reverse else range(t0, t1)):
                n = counts[t]
                if n == 0:
                    continue
                if k % CHECK_EVERY == 0:
                    check_load()  # one thread while another process takes our cores (bilm.load)
                self._step(zin_steps[t - t0, :n], h[:n], c[:n], out[t, :n], ops)

    def _run_inference(
        self,
        inputs: Tensor,
        counts: list[int],
        h0: Tensor,
        c0: Tensor,
        table: Tensor | None = None,
        word_index: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """The eager inference path: :meth:`_loop` on fresh state and output tensors."""
        steps, batch, _ = inputs.shape
        C = self.cell_dim
        h, c = h0.clone(), c0.clone()
        out = inputs.new_zeros(steps, batch, self.hidden_dim)
        plan = chunk_plan(steps, batch, counts, self.reverse)
        # Input products of a chunk of steps at once, for the rows active in that chunk only:
        # one large GEMM (or gather) per chunk, made when the loop reaches the chunk, into one
        # buffer the chunks share; memory bounded by ZIN_ROWS, not by the batch.
        sizes = [(t1 - t0) * rows for t0, t1, rows in plan]
        zin_buf = inputs.new_empty(max(sizes, default=0) * 4 * C)

        def chunks() -> Iterator[tuple[int, int, int, Tensor]]:
            for (t0, t1, rows), size in zip(plan, sizes, strict=True):
                zin = zin_buf[: size * 4 * C].view(size, 4 * C)  # (chunk·rows, 4C)
                yield t0, t1, rows, self._fill_zin(zin, inputs, t0, t1, rows, table, word_index)

        self._loop(chunks(), counts, h, c, out, _StepOps(self, inputs, batch))
        return out, h, c

    def _run_graphed(
        self,
        inputs: Tensor,
        counts: list[int],
        h0: Tensor,
        c0: Tensor,
        table: Tensor | None = None,
        word_index: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`_run_inference` through the shape's :class:`_Recurrence` (its CUDA graph on
        CUDA): the same arithmetic, on static buffers; returns fresh tensors."""
        assert self._graphs is not None
        steps, batch, _ = inputs.shape
        weights = self._weights_key()
        if weights != self._graph_weights:  # graphs read the weights' memory: start afresh
            self._graphs.clear()
            self._graph_weights = weights
        key = (steps, batch, tuple(counts), inputs.device)
        entry = self._graphs.get(key)
        if entry is None:
            try:
                entry = _Recurrence(
                    self, inputs, steps, batch, counts, capture=inputs.device.type == "cuda"
                )
            except RuntimeError as error:  # e.g. an operation CUDA graphs cannot record
                warnings.warn(
                    f"CUDA graph capture failed ({error}); the LSTM runs without graphs",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self._graphs = None
                return self._run_inference(inputs, counts, h0, c0, table, word_index)
            self._graphs[key] = entry
            while len(self._graphs) > self._graph_shapes:
                self._graphs.popitem(last=False)
        else:
            self._graphs.move_to_end(key)
        for t0, t1, rows, zin in entry.chunks:
            self._fill_zin(zin, inputs, t0, t1, rows, table, word_index, into=True)
        entry.h.copy_(h0)
        entry.c.copy_(c0)
        entry.run()
        return entry.out.clone(), entry.h.clone(), entry.c.clone()

    def _weights_key(self) -> tuple[object, ...]:
        """Identity of the weights and of the arithmetic (a captured graph reads both)."""
        params = (self.w_input, self.w_state, self.bias, self.w_proj)
        ids = tuple(None if p is None else (p.data_ptr(), p._version, p.device) for p in params)
        return (*ids, self.precision, id(self._int8))

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_packed_cache"] = {}  # oneDNN tensors neither pickle nor deep-copy; re-packed lazily
        state["_bf16_cache"] = Bf16Operands()  # oneDNN tensors again: remade lazily
        state["_int8"] = None  # fbgemm packed weights do not pickle either: quantize again
        if self._graphs is not None:  # graphs and their buffers are per process: captured again
            state["_graphs"] = OrderedDict()
        state["_graph_weights"] = None
        return state

    def _bf16_weight(self, name: str) -> tuple[Tensor, bool]:
        """``name`` as a bf16 operand (:func:`bf16_operand`), cached until the weight changes."""
        return self._bf16_cache.get(name, getattr(self, name))

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
        # read once: under a parametrization (peft's LoRA on these matrices) each read of the
        # attribute computes the adapted weight anew
        w_state, w_proj = self.w_state, self.w_proj
        outputs: list[Tensor] = [zin.new_zeros(batch, self.hidden_dim)] * steps
        for t in order:
            n = counts[t]
            if n == 0:
                continue
            z = torch.addmm(zin[t, :n], h[:n], w_state)  # (n, 4C)
            sig = torch.sigmoid(z[:, : 3 * C])
            cell = sig[:, C : 2 * C] * c[:n] + sig[:, :C] * torch.tanh(z[:, 3 * C :])
            if self.cell_clip is not None:
                cell = cell.clamp(-self.cell_clip, self.cell_clip)
            hn = sig[:, 2 * C :] * torch.tanh(cell)  # (n, C)
            if w_proj is not None:
                hn = hn @ w_proj  # (n, P)
            if self.proj_clip is not None:
                hn = hn.clamp(-self.proj_clip, self.proj_clip)
            if n < batch:
                h = torch.cat([hn, h[n:]])
                c = torch.cat([cell, c[n:]])
                outputs[t] = torch.cat([hn, hn.new_zeros(batch - n, self.hidden_dim)])
            else:
                h, c, outputs[t] = hn, cell, hn
        return torch.stack(outputs), h, c
