"""The bidirectional language model: char-CNN tokens → forward and backward LSTM stacks.

Peters et al. (2018) §3.1/§3.4; architecture as bilm-tf ``bilm/model.py`` and allennlp v2.10.1
``allennlp/modules/elmo.py``. The module adds the sentence markers ``<S>``/``</S>`` itself and
strips them from what it returns, so callers pass and receive exactly their tokens.

State policy (docs/bilm.md; the reference port's most reported confusion). The official biLM was
trained on continuous streams with LSTM state carried between batches, and both reference
implementations keep carrying it at inference, keyed by row index. We make the choice explicit:

``"reset"`` (default)
    Every sentence starts from zero state. Its vectors depend on nothing but the sentence: not on
    its batch, its row, its padding or earlier calls. Reproducible; this is what caching and
    batch-invariant evaluation need.
``"carry"``
    The official behaviour: row ``i`` starts from the final state of whatever sentence was in row
    ``i`` on the previous call (zeros on the first call, or after :meth:`reset_states`). Needed to
    reproduce the TensorFlow outputs; vectors depend on call order.
``"warm"``
    Every sentence starts from one fixed state: the final state after reading a fixed warm-up text
    (:data:`WARMUP_TEXT`) from zero state. Deterministic like ``reset`` and closer to the condition
    the biLM was trained in (it never saw a zero state after its first batch). Computed once per
    set of weights; call :meth:`reset_states` after changing weights by hand.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, cast, overload

import torch
from torch import Tensor, nn

from bilm.char_cnn import CharCNN
from bilm.chars import BOS_TOKEN, EOS_TOKEN, batch_to_ids, word_to_char_ids
from bilm.load import threads_under_load
from bilm.lstm import GRAPH_SHAPES, INFERENCE_PRECISIONS, InferencePrecision, LSTMWithProjection
from bilm.options import BiLMOptions

StatePolicy = Literal["reset", "carry", "warm"]
CNN_CHUNK = 128  # distinct words per char-CNN call (bounds its buffers: ≈ 0.4 MB a word)
STATE_POLICIES: tuple[str, ...] = ("reset", "carry", "warm")

#: Fixed warm-up text for the ``"warm"`` policy (public-domain sentences, one per line; the first
#: lines of Jane Austen's *Pride and Prejudice*, 1813, and the US Declaration of Independence).
WARMUP_TEXT: tuple[str, ...] = (
    "It is a truth universally acknowledged , that a single man in possession of a good fortune ,"
    " must be in want of a wife .",
    "However little known the feelings or views of such a man may be on his first entering a"
    " neighbourhood , this truth is so well fixed in the minds of the surrounding families , that"
    " he is considered the rightful property of some one or other of their daughters .",
    "We hold these truths to be self-evident , that all men are created equal .",
    "When in the Course of human events , it becomes necessary for one people to dissolve the"
    " political bands which have connected them with another , a decent respect to the opinions"
    " of mankind requires that they should declare the causes which impel them to the separation .",
)


@dataclass(frozen=True)
class BiLMOutput:
    """What :class:`BiLM` returns.

    Attributes:
        layers: ``(L + 1, batch, time, 2P)``: the token layer (char-CNN embedding duplicated to
            ``[x; x]``) and each biLSTM layer ``[forward; backward]``; sentence markers removed;
            exactly 0 at padded positions.
        mask: ``(batch, time)`` bool, True at real tokens.
    """

    layers: Tensor
    mask: Tensor


class BiLM(nn.Module):
    """ELMo's biLM for any sizes given by :class:`~bilm.options.BiLMOptions`.

    Args:
        options: architecture (e.g. ``BiLMOptions.from_json("options.json")``).
        state: LSTM state policy, ``"reset"``, ``"carry"`` or ``"warm"`` (module docstring).
        dropout: dropout on every LSTM layer's input and on the top output, training mode only
            (bilm-tf ``bilm/training.py``); 0 for inference.

    Weights start uninitialised; load them with :func:`bilm.load_official`,
    :func:`bilm.load_checkpoint`, or initialise with :func:`bilm.weights.init_weights`.
    """

    def __init__(self, options: BiLMOptions, state: StatePolicy = "reset", dropout: float = 0.0):
        super().__init__()
        if state not in STATE_POLICIES:
            raise ValueError(f"state must be one of {STATE_POLICIES}, got {state!r}")
        self.options = options
        self.state: StatePolicy = state
        self.dropout = dropout
        lstm = options.lstm
        P = lstm.projection_dim
        self.char_cnn = CharCNN(options.char_cnn, P)
        proj = P if P < lstm.dim else None  # bilm-tf: a projection only when P < C
        hidden = P if proj else lstm.dim
        if hidden != P:
            raise ValueError("lstm.projection_dim must be <= lstm.dim")
        #: The ``(forward, backward)`` LSTM of each layer, bottom first.
        self.lstms: tuple[tuple[LSTMWithProjection, LSTMWithProjection], ...] = tuple(
            (
                LSTMWithProjection(P, lstm.dim, proj, lstm.cell_clip, lstm.proj_clip, False),
                LSTMWithProjection(P, lstm.dim, proj, lstm.cell_clip, lstm.proj_clip, True),
            )
            for _ in range(lstm.n_layers)
        )
        # the same modules, registered: their weights are named ``layers.{layer}.{direction}.*``
        self.layers = nn.ModuleList(nn.ModuleList(pair) for pair in self.lstms)
        # Carried / warm states: (layers, 2 directions, rows, width); not part of the weights.
        self._carry: tuple[Tensor, Tensor] | None = None
        self._warm: tuple[Tensor, Tensor] | None = None
        # LRU of char-CNN outputs across calls (inference only), keyed by the char-id row.
        self._token_cache: OrderedDict[bytes, Tensor] = OrderedDict()
        self._token_cache_size = 0
        self._token_cache_key: tuple[object, ...] | None = None
        self.token_cache_hits = 0
        self.token_cache_misses = 0

    # ------------------------------------------------------------------ properties
    @property
    def output_dim(self) -> int:
        """Width of every returned layer (2P)."""
        return self.options.output_dim

    @property
    def num_layers(self) -> int:
        """Number of returned layers (L + 1)."""
        return self.options.num_layers

    def reset_states(self) -> None:
        """Forget carried state (``carry``) and the cached warm state (``warm``)."""
        self._carry = None
        self._warm = None

    def carried_state(self) -> dict[str, Tensor]:
        """The LSTM state ``carry`` hands to the next batch, by row: ``h`` (layers, 2 directions,
        rows, P) and ``c`` (layers, 2, rows, C); ``{}`` before the first batch. A training
        checkpoint keeps it, so that a resumed run continues as if never stopped."""
        if self._carry is None:
            return {}
        return {"h": self._carry[0], "c": self._carry[1]}

    def load_carried_state(self, state: Mapping[str, Tensor]) -> None:
        """Continue from a :meth:`carried_state` (``{}``: nothing carried yet).

        Raises:
            ValueError: the tensors do not fit this biLM's layers and widths.
        """
        if not state:
            self._carry = None
            return
        h, c = state["h"], state["c"]
        L, P, C = (
            self.options.lstm.n_layers,
            self.options.lstm.projection_dim,
            self.options.lstm.dim,
        )
        if (
            h.shape[:2] != (L, 2)
            or h.shape[3] != P
            or c.shape[:3] != h.shape[:3]
            or c.shape[3] != C
        ):
            raise ValueError(
                f"carried state of shapes {tuple(h.shape)}, {tuple(c.shape)} does not fit a "
                f"biLM of {L} layers, projection {P}, cell {C}"
            )
        device = self.char_cnn.char_embedding.weight.device
        self._carry = (h.detach().to(device), c.detach().to(device))

    def set_token_cache(self, max_words: int) -> None:
        """Keep the char-CNN vectors of up to ``max_words`` recent distinct words across calls.

        Inference only (no autograd); a word's vector is then computed once while it stays in
        the least-recently-used cache, instead of once per batch. Each entry holds ``P`` floats
        (2 KiB at P = 512). The cache empties itself when a char-CNN weight changes in place
        or is replaced.

        Args:
            max_words: capacity in distinct words; 0 (the default) turns the cache off.

        Raises:
            ValueError: ``max_words`` is negative.
        """
        if max_words < 0:
            raise ValueError(f"max_words must be >= 0, got {max_words}")
        self._token_cache_size = max_words
        self.clear_token_cache()

    def clear_token_cache(self) -> None:
        """Empty the token cache (its capacity stays) and zero its hit/miss counters."""
        self._token_cache.clear()
        self._token_cache_key = None
        self.token_cache_hits = self.token_cache_misses = 0

    def quantize_int8(self, enabled: bool = True) -> None:
        """Run inference with int8 GEMMs (dynamic quantisation) in the LSTMs and the highway.

        Weights are quantised to int8 per output column, activations per call (fbgemm); the
        float weights are kept, so training and autograd are unaffected. The int8 copies are a
        snapshot of the current weights: call again after loading or changing weights. Outputs
        deviate from float32 (``benchmarks/bench_bilm.py`` measures by how much).

        Args:
            enabled: False returns to float32 arithmetic.
        """
        for pair in self.lstms:
            for cell in pair:
                cell.quantize_int8(enabled)
        self.char_cnn.quantize_int8(enabled)
        self.clear_token_cache()

    @property
    def int8(self) -> bool:
        """Whether inference uses int8 GEMMs (:meth:`quantize_int8`)."""
        return self.lstms[0][0].int8

    def to_precision(self, precision: InferencePrecision) -> BiLM:
        """Choose the inference arithmetic of the LSTMs and the char CNN.

        ``"fp32"``: exact float32 (the default). ``"bf16"``: every large product (LSTM input,
        state and projection products, char convolutions, highway, projection) takes bf16
        operands and accumulates in float32; the LSTM cell and output states, the gate and
        highway arithmetic and every output stay float32. Fast where bf16 is multiplied
        natively (CPUs with AVX-512-bf16 or AMX, :func:`bilm.lstm.cpu_bf16_unit`; GPUs); bf16
        operands are made from the weights on first use and remade when a weight changes.
        ``"int8"``: :meth:`quantize_int8` (CPU; a snapshot of the weights). Training and
        autograd always run float32 (or autocast). ``benchmarks/bench_precision.py`` measures
        the speed and the deviation from float32.

        Args:
            precision: ``"fp32"``, ``"bf16"`` or ``"int8"``.

        Returns:
            ``self``.

        Raises:
            ValueError: an unknown precision.
        """
        if precision not in INFERENCE_PRECISIONS:
            raise ValueError(f"precision must be one of {INFERENCE_PRECISIONS}, got {precision!r}")
        if precision == "int8":
            self.quantize_int8()
        else:
            self.quantize_int8(False)
            for pair in self.lstms:
                for cell in pair:
                    cell.set_bf16(precision == "bf16")
            self.char_cnn.set_bf16(precision == "bf16")
            self.clear_token_cache()
        self._warm = None  # the warm state is computed in the chosen arithmetic
        return self

    @property
    def precision(self) -> InferencePrecision:
        """The inference arithmetic chosen by :meth:`to_precision` (``"fp32"`` by default)."""
        return self.lstms[0][0].precision

    def use_cuda_graphs(self, enabled: bool = True, shapes: int = GRAPH_SHAPES) -> BiLM:
        """Replay each LSTM's recurrent loop from a CUDA graph (inference on CUDA).

        On the GPU the loop is bound by kernel launches (about 15 small kernels per step); a
        graph captured once per batch shape (steps, rows, lengths) replays them without the
        launch cost. Worth it for repeated shapes (fixed-size batches); each new shape costs a
        capture and an input-product buffer per LSTM
        (:meth:`bilm.lstm.LSTMWithProjection.use_graphs`). The same step function runs with and
        without graphs; on the CPU nothing is captured (no gain). Off by default.

        Args:
            enabled: False frees the graphs.
            shapes: graphs kept per LSTM (least recently used dropped first).

        Returns:
            ``self``.
        """
        for pair in self.lstms:
            for cell in pair:
                cell.use_graphs(enabled, shapes)
        return self

    @property
    def cuda_graphs(self) -> bool:
        """Whether :meth:`use_cuda_graphs` is on."""
        return self.lstms[0][0].graphs

    # ------------------------------------------------------------------ forward
    def forward(self, char_ids: Tensor) -> BiLMOutput:
        """Run the biLM.

        Args:
            char_ids: ``(batch, time, max_chars)`` from :func:`bilm.batch_to_ids`, without sentence
                markers, padded on the right with all-zero tokens.

        Returns:
            :class:`BiLMOutput` with ``layers (L+1, batch, time, 2P)`` and ``mask (batch, time)``.

        Raises:
            ValueError: wrong rank or width, ids out of range, or padding not on the right.
        """
        max_chars = self.options.char_cnn.max_characters_per_token
        if char_ids.dim() != 3 or char_ids.shape[-1] != max_chars:
            raise ValueError(
                f"char_ids must be (batch, time, {max_chars}), got {tuple(char_ids.shape)}"
            )
        if char_ids.numel() and (char_ids.min() < 0 or char_ids.max() > 261):
            raise ValueError("char_ids must lie in 0..261 (use bilm.batch_to_ids)")
        batch, time, _ = char_ids.shape
        mask = (char_ids > 0).any(dim=-1)  # (batch, time)
        lengths = mask.sum(dim=1)  # (batch,)
        if not torch.equal(mask, torch.arange(time, device=mask.device) < lengths[:, None]):
            raise ValueError("padding tokens (all-zero char ids) must only follow the real tokens")
        P = self.options.lstm.projection_dim
        L = self.options.lstm.n_layers
        if batch == 0:
            return BiLMOutput(char_ids.new_zeros(L + 1, 0, time, 2 * P, dtype=torch.float), mask)
        # On a CPU shared with another busy process: one thread instead of a team (bilm.load)
        with threads_under_load(char_ids.device):
            return self._forward(char_ids, mask, lengths)

    def _forward(self, char_ids: Tensor, mask: Tensor, lengths: Tensor) -> BiLMOutput:
        """:meth:`forward` after its checks: ``mask (B, T)``, ``lengths (B,)``."""
        batch, time, _ = char_ids.shape
        P = self.options.lstm.projection_dim
        L = self.options.lstm.n_layers
        # Sort rows by length (with the two markers), longest first: active rows form a prefix.
        sorted_lengths, perm = torch.sort(lengths + 2, descending=True, stable=True)
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(batch, device=perm.device)
        ids = self._with_boundaries(char_ids[perm], lengths[perm])  # (B, T+2, max_chars)
        token_mask = (ids > 0).any(dim=-1)  # (B, T+2)
        embedded, words, word_index = self._embed_unique(ids, token_mask, with_words=True)
        x = embedded.transpose(0, 1).contiguous()  # (T+2, B, P) time-major, sorted
        del embedded
        lens = sorted_lengths.tolist()

        h0, c0 = self._initial_state(batch, perm, x)
        # Layer 0's input product depends only on the word: one row per distinct word.
        by_word = (words, word_index.t().contiguous())  # (U, P), (T+2, B)
        outputs, final_h, final_c = self._run_stacks(x, x, lens, h0, c0, by_word)
        if self.state == "carry":
            self._store_carry(final_h[:, :, inverse], final_c[:, :, inverse])

        # Assemble (L+1, B, T, 2P) in the caller's row order, markers off, 0 at padding; one
        # half-layer at a time so that no second full-size copy of the output is alive.
        result = x.new_empty(L + 1, batch, time, 2 * P)
        for layer_index, halves in enumerate([(x, x), *outputs]):
            for half, source in enumerate(halves):  # source: (T+2, B, P), sorted rows
                result[layer_index, :, :, half * P : (half + 1) * P] = source[
                    1 : time + 1
                ].transpose(0, 1)[inverse]  # (B, T, P)
        result.mul_(mask[None, :, :, None])  # the </S> position of shorter rows → 0
        if self.training and self.dropout > 0:
            top = nn.functional.dropout(result[-1:], self.dropout, True)
            result = torch.cat([result[:-1], top])
        return BiLMOutput(result, mask)  # (L+1, B, T, 2P)

    def run_streams(
        self,
        forward_ids: Tensor,
        backward_ids: Tensor,
        state: tuple[Tensor, Tensor] | None = None,
        lengths: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor]]:
        """Run the two stacks on two independent token streams (language-model training).

        bilm-tf trains the forward LM on a stream of sentences and the backward LM on an
        independent stream of reversed sentences, with state carried between fixed-size windows
        (truncated BPTT). No sentence markers are added here: the streams already
        hold ``<S>``/``</S>`` as ordinary tokens.

        Args:
            forward_ids: ``(batch, time, max_chars)`` forward-stream window.
            backward_ids: ``(batch, time, max_chars)`` backward-stream window, in stream order
                (already reversed text).
            state: ``(h (L, 2, batch, P), c (L, 2, batch, C))`` from the previous window, or
                ``None`` for zeros. Gradients never flow into it.
            lengths: ``(batch,)`` real lengths for right-padded windows; default: all ``time``.

        Returns:
            ``(forward_top, backward_top, new_state)``: top-layer outputs ``(batch, time, P)`` in
            each stream's own order, and the detached final state.
        """
        batch, time, _ = forward_ids.shape
        lstm = self.options.lstm
        if lengths is None:
            lengths = torch.full((batch,), time, dtype=torch.long, device=forward_ids.device)
        if state is None:
            like = self.char_cnn.char_embedding.weight
            state = (
                like.new_zeros(lstm.n_layers, 2, batch, lstm.projection_dim),
                like.new_zeros(lstm.n_layers, 2, batch, lstm.dim),
            )
        # Active rows must form a prefix at every step: sort by length, undo at the end.
        lengths, perm = torch.sort(lengths, descending=True, stable=True)
        inverse = torch.argsort(perm)
        forward_ids, backward_ids = forward_ids[perm], backward_ids[perm]
        # The backward cell runs from each row's last real step to its first; feeding it the
        # backward stream reversed within each row makes it read that stream in order.
        steps = torch.arange(time, device=forward_ids.device)
        real = steps < lengths[:, None]  # (B, T)
        rev = torch.where(real, lengths[:, None] - 1 - steps, steps)  # (B, T)
        x_f = self._embed_unique(forward_ids, real).transpose(0, 1)  # (T, B, P)
        bwd_rev = torch.gather(backward_ids, 1, rev[:, :, None].expand_as(backward_ids))
        x_b = self._embed_unique(bwd_rev, real).transpose(0, 1)  # (T, B, P)
        h0, c0 = state[0].detach()[:, :, perm], state[1].detach()[:, :, perm]
        outputs, h, c = self._run_stacks(x_f, x_b, lengths.tolist(), h0, c0)
        top_f, top_b = outputs[-1]
        if self.training and self.dropout > 0:
            top_f = nn.functional.dropout(top_f, self.dropout, True)
            top_b = nn.functional.dropout(top_b, self.dropout, True)
        top_b = top_b.transpose(0, 1)  # (B, T, P) in reversed-within-row order
        top_b = torch.gather(top_b, 1, rev[:, :, None].expand_as(top_b))  # stream order
        top_f = top_f.transpose(0, 1)  # (B, T, P)
        new_state = (h.detach()[:, :, inverse], c.detach()[:, :, inverse])
        return top_f[inverse], top_b[inverse], new_state

    def _run_stacks(
        self,
        x_forward: Tensor,
        x_backward: Tensor,
        lens: list[int],
        h0: Tensor,
        c0: Tensor,
        by_word: tuple[Tensor, Tensor] | None = None,
    ) -> tuple[list[tuple[Tensor, Tensor]], Tensor, Tensor]:
        """Both LSTM stacks over time-major, length-sorted inputs ``(T, B, P)``.

        ``by_word``: ``(words (U, P), index (T, B))`` with ``x[t, b] == words[index[t, b]]`` for
        both directions; layer 0 then computes its input product once per distinct word
        (inference, no dropout).

        Returns the per-layer ``(forward, backward)`` outputs (residuals included) and the final
        states ``(L, 2, B, P)``, ``(L, 2, B, C)``.
        """
        outputs: list[tuple[Tensor, Tensor]] = []
        final_h: list[Tensor] = []
        final_c: list[Tensor] = []
        inputs = (x_forward, x_backward)
        # the registered modules, which an adapter library (peft's LoRA) may have wrapped
        for layer_index, pair in enumerate(self.layers):
            outs = []
            for d in range(2):
                layer_input = inputs[d]
                if self.training and self.dropout > 0:
                    layer_input = nn.functional.dropout(layer_input, self.dropout, True)
                words, index = by_word if by_word is not None else (None, None)
                if layer_index > 0 or (self.training and self.dropout > 0):
                    words = index = None  # deeper layers' inputs depend on the context
                state = (h0[layer_index, d], c0[layer_index, d])
                lstm = cast(nn.ModuleList, pair)[d]  # an LSTMWithProjection, or a wrapper
                out, h_n, c_n = lstm(layer_input, lens, *state, words, index)
                if layer_index > 0 and self.options.lstm.use_skip_connections:
                    out = out + layer_input  # residual from layer 1 on (Peters et al. §3.4)
                final_h.append(h_n)
                final_c.append(c_n)
                outs.append(out)  # (T, B, P)
            inputs = (outs[0], outs[1])
            outputs.append(inputs)
        n_layers = len(self.lstms)
        h = torch.stack(final_h).view(n_layers, 2, *final_h[0].shape)
        c = torch.stack(final_c).view(n_layers, 2, *final_c[0].shape)
        return outputs, h, c

    def embed_tokens(self, char_ids: Tensor) -> Tensor:
        """Context-independent token embeddings (the char-CNN layer) without sentence markers.

        Args:
            char_ids: ``(..., max_chars)``.

        Returns:
            ``(..., P)``; all-zero (padding) tokens give zero vectors.
        """
        flat = char_ids.reshape(-1, char_ids.shape[-1])
        out = self._embed_unique(flat[None], (flat > 0).any(-1)[None])[0]
        return out.reshape(*char_ids.shape[:-1], -1)

    # ------------------------------------------------------------------ internals
    def _with_boundaries(self, char_ids: Tensor, lengths: Tensor) -> Tensor:
        batch, time, max_chars = char_ids.shape
        bos = torch.tensor(word_to_char_ids(BOS_TOKEN, max_chars), device=char_ids.device)
        eos = torch.tensor(word_to_char_ids(EOS_TOKEN, max_chars), device=char_ids.device)
        ids = char_ids.new_zeros(batch, time + 2, max_chars)
        ids[:, 1 : time + 1] = char_ids
        ids[:, 0] = bos
        ids[torch.arange(batch, device=ids.device), lengths + 1] = eos
        return ids

    @overload
    def _embed_unique(
        self, ids: Tensor, token_mask: Tensor, with_words: Literal[False] = False
    ) -> Tensor: ...

    @overload
    def _embed_unique(
        self, ids: Tensor, token_mask: Tensor, with_words: Literal[True]
    ) -> tuple[Tensor, Tensor, Tensor]: ...

    def _embed_unique(
        self, ids: Tensor, token_mask: Tensor, with_words: bool = False
    ) -> Tensor | tuple[Tensor, Tensor, Tensor]:
        """Run the char CNN once per distinct token of the batch; zeros at padding.

        Args:
            ids: ``(..., max_chars)`` char ids.
            token_mask: ``ids.shape[:-1]`` bool, True at real tokens.
            with_words: also return the distinct vectors and each position's index into them.

        Returns:
            ``(..., P)`` vectors; with ``with_words`` also ``words (U, P)`` and
            ``index (...)`` long with ``out[pos] == words[index[pos]]`` at real positions (0 at
            padding; ``U`` may be 0).
        """
        P = self.options.lstm.projection_dim
        real_ids = ids[token_mask]  # (n_real, max_chars)
        dtype = self.char_cnn.char_embedding.weight.dtype
        out = ids.new_zeros(*token_mask.shape, P, dtype=dtype)  # (..., P)
        word_index = torch.zeros(token_mask.shape, dtype=torch.long, device=ids.device)
        if real_ids.shape[0] == 0:
            return (out, out.new_zeros(0, P), word_index) if with_words else out
        unique, index = torch.unique(real_ids, dim=0, return_inverse=True)  # (n_unique, max_chars)
        if self._token_cache_size > 0 and not torch.is_grad_enabled():
            encoded = self._encode_cached(unique)  # (n_unique, P)
        else:
            encoded = self._encode(unique)  # (n_unique, P)
        encoded = encoded.to(out.dtype)  # autocast may give bf16
        out[token_mask] = encoded[index]  # (n_real, P)
        if not with_words:
            return out
        word_index[token_mask] = index
        return out, encoded, word_index

    def _encode(self, unique: Tensor) -> Tensor:
        """Char CNN of ``unique (n, max_chars)`` → ``(n, P)``, in chunks of CNN_CHUNK words.

        Chunks bound the convolutions' memory (≈ 0.4 MB a word at full size).
        """
        return torch.cat([self.char_cnn(chunk) for chunk in unique.split(CNN_CHUNK)])

    def _encode_cached(self, unique: Tensor) -> Tensor:
        """:meth:`_encode` through the LRU token cache (:meth:`set_token_cache`)."""
        params = tuple(self.char_cnn.parameters())
        key = (
            tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in params),
            torch.is_autocast_enabled(unique.device.type),
            self.char_cnn.precision,
        )
        if key != self._token_cache_key:  # weights changed (or first use): start afresh
            self._token_cache.clear()
            self._token_cache_key = key
        cache = self._token_cache
        rows = unique.cpu().numpy()  # (n_unique, max_chars)
        keys = [row.tobytes() for row in rows]
        missing = [i for i, k in enumerate(keys) if k not in cache]
        computed: dict[bytes, Tensor] = {}
        if missing:
            fresh = self._encode(unique[torch.tensor(missing, device=unique.device)])  # (m, P)
            computed = {keys[i]: v for i, v in zip(missing, fresh.unbind(0), strict=True)}
        self.token_cache_hits += len(keys) - len(missing)
        self.token_cache_misses += len(missing)
        vectors = []
        for k in keys:
            vector = computed.get(k)
            if vector is None:
                vector = cache[k]
                cache.move_to_end(k)
            vectors.append(vector)
        encoded = torch.stack(vectors)  # (n_unique, P)
        for k, vector in computed.items():
            cache[k] = vector.clone()  # own storage: an entry must not pin the whole batch
        while len(cache) > self._token_cache_size:
            cache.popitem(last=False)  # least recently used first
        return encoded

    def _initial_state(self, batch: int, perm: Tensor, like: Tensor) -> tuple[Tensor, Tensor]:
        L, P, C = (
            self.options.lstm.n_layers,
            self.options.lstm.projection_dim,
            self.options.lstm.dim,
        )
        if self.state == "warm":
            h, c = self._warm_state()
            return h.expand(L, 2, batch, P).contiguous(), c.expand(L, 2, batch, C).contiguous()
        h = like.new_zeros(L, 2, batch, P)
        c = like.new_zeros(L, 2, batch, C)
        if self.state == "carry" and self._carry is not None:
            rows = min(batch, self._carry[0].shape[2])
            h[:, :, :rows] = self._carry[0][:, :, :rows]
            c[:, :, :rows] = self._carry[1][:, :, :rows]
            h, c = h[:, :, perm], c[:, :, perm]
        return h, c

    def _store_carry(self, h: Tensor, c: Tensor) -> None:
        h, c = h.detach(), c.detach()
        if self._carry is not None and self._carry[0].shape[2] > h.shape[2]:
            # Rows beyond this batch keep their state (as both reference implementations do).
            old_h, old_c = self._carry
            h = torch.cat([h, old_h[:, :, h.shape[2] :]], dim=2)
            c = torch.cat([c, old_c[:, :, c.shape[2] :]], dim=2)
        self._carry = (h, c)

    def _warm_state(self) -> tuple[Tensor, Tensor]:
        if self._warm is None:
            policy, carry = self.state, self._carry
            self.state, self._carry = "carry", None
            try:
                with torch.no_grad():
                    device = self.char_cnn.char_embedding.weight.device
                    for sentence in WARMUP_TEXT:
                        self(batch_to_ids([sentence.split()]).to(device))
                assert self._carry is not None
                self._warm = (self._carry[0][:, :, :1].clone(), self._carry[1][:, :, :1].clone())
            finally:
                self.state, self._carry = policy, carry
        return self._warm
