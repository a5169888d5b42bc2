"""The biLM forward pass computed the way allennlp's ``_ElmoBiLm`` computes it, in plain torch.

A yardstick for ``benchmarks/bench_bilm.py``: the ratio of :class:`bilm.BiLM` to
this module is printed on any machine, without allennlp installed. It is written for this
project from the published description of allennlp 2.10.1's modules (no allennlp code was
copied); what it keeps of their computation:

* ``_ElmoCharacterEncoder``: ``<S>``/``</S>`` added to every row, then the char CNN on *every*
  position of the padded batch (no de-duplication of words): embedding lookup, one
  ``nn.Conv1d`` per filter width, max over character positions, activation, then highway
  layers (one ``nn.Linear(F, 2F)`` each, ``y = g·x + (1 − g)·relu(·)``; allennlp's gate is
  bilm-tf's ``1 − g``, so its weights are the negated carry weights) and ``nn.Linear(F, P)``;
* ``ElmoLstm``: rows sorted by length, each layer and direction an ``LstmCellWithProjection``,
  residual connection from the second layer on;
* ``LstmCellWithProjection``: a Python loop over time steps, at each step the rows still
  active: ``nn.Linear`` input → 4C (no bias) and ``nn.Linear`` state → 4C (with the bias), the
  four gates (order input, forget, memory, output) each ``σ``/``tanh`` of a sum of two slices,
  memory clip, ``o·tanh(c)``, ``nn.Linear`` C → P (no bias), state clip; the full-batch memory
  and state cloned and updated in place every step;
* the token layer ``[x; x]`` and the boundary positions removed, zeros at padding.

What it leaves out: dropout (eval), carried state (reset semantics, as ``bilm.BiLM(state=
"reset")``), allennlp's word-embedding cache option (``vocab_to_cache``, off by default) and
its one-call char CNN: the CNN runs here in chunks of :data:`CNN_POSITIONS` positions to bound
memory (allennlp runs the whole batch in one call; its natural-text process peaked at 6.9 GB).
The chunks do the same arithmetic, so if anything they make this side faster.

Weights come from a :class:`bilm.BiLM` (:meth:`AllennlpStyleBiLM.from_bilm`), so the outputs can
be compared with ours (``bench_bilm.py`` prints the max deviation; a test bounds it by 1e-5)::

    reference = AllennlpStyleBiLM.from_bilm(model).eval()
    with torch.no_grad():
        layers = reference(batch_to_ids(sentences))  # (L+1, B, T, 2P), like model(...).layers
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bilm import BiLM, word_to_char_ids
from bilm.chars import BOS_TOKEN, EOS_TOKEN

#: Positions per char-CNN call (bounds the convolution outputs: ≈ 0.2 MB a position).
CNN_POSITIONS = 2048


class AllennlpStyleCharEncoder(nn.Module):
    """Char CNN → highway → projection with one ``nn`` module per piece, on every position.

    Args:
        embedding: ``(262, E)`` char embedding, row 0 the padding id.
        convs: one ``(weight (n, E, w), bias (n,))`` per filter width.
        highway: one ``(weight (F, 2F), bias (2F,))`` per layer in bilm-tf's convention
            ``[W_transform | W_carry]`` (``x @ W``).
        projection: ``(weight (F, P), bias (P,))`` or ``None`` when ``F == P``.
        activation: ``"relu"`` or ``"tanh"`` after the max-pool.
    """

    def __init__(
        self,
        embedding: Tensor,
        convs: list[tuple[Tensor, Tensor]],
        highway: list[tuple[Tensor, Tensor]],
        projection: tuple[Tensor, Tensor] | None,
        activation: str,
    ) -> None:
        super().__init__()
        self.char_embedding = nn.Parameter(embedding.detach().clone())  # (262, E)
        self.convolutions = nn.ModuleList()
        for weight, bias in convs:
            n, e, w = weight.shape
            conv = nn.Conv1d(e, n, w, bias=False)
            conv.weight.data.copy_(weight)
            conv.bias = nn.Parameter(bias.detach().clone())  # (n,)
            self.convolutions.append(conv)
        self.highways = nn.ModuleList()
        for weight, bias in highway:
            dim = weight.shape[0]
            layer = nn.Linear(dim, 2 * dim)
            # allennlp's gate is 1 − g = σ(−(x W_carry + b_carry)): negated carry weights
            transform_w, carry_w = weight[:, :dim], weight[:, dim:]  # (F, F) each
            layer.weight.data.copy_(torch.cat([transform_w.t(), -carry_w.t()]))  # (2F, F)
            layer.bias.data.copy_(torch.cat([bias[:dim], -bias[dim:]]))  # (2F,)
            self.highways.append(layer)
        self.projection: nn.Linear | None = None
        if projection is not None:
            proj_w, proj_b = projection
            self.projection = nn.Linear(proj_w.shape[0], proj_w.shape[1])
            self.projection.weight.data.copy_(proj_w.t())  # (P, F)
            self.projection.bias.data.copy_(proj_b)
        self.activation = torch.relu if activation == "relu" else torch.tanh

    def forward(self, char_ids: Tensor) -> Tensor:
        """``char_ids (N, max_chars)`` → ``(N, P)`` token vectors (every row, padding too)."""
        pieces = [
            self._encode(char_ids[start : start + CNN_POSITIONS])
            for start in range(0, char_ids.shape[0], CNN_POSITIONS)
        ]
        return torch.cat(pieces) if pieces else self._encode(char_ids)

    def _encode(self, char_ids: Tensor) -> Tensor:
        chars = F.embedding(char_ids, self.char_embedding)  # (n, max_chars, E)
        chars = chars.transpose(1, 2)  # (n, E, max_chars)
        pooled = []
        for conv in self.convolutions:
            convolved = conv(chars)  # (n, filters, positions)
            convolved, _ = torch.max(convolved, dim=-1)  # (n, filters)
            pooled.append(self.activation(convolved))
        x = torch.cat(pooled, dim=-1)  # (n, F)
        for layer in self.highways:
            projected = layer(x)  # (n, 2F)
            nonlinear, gate = projected.chunk(2, dim=-1)  # (n, F) each
            nonlinear = torch.relu(nonlinear)
            gate = torch.sigmoid(gate)
            x = gate * x + (1 - gate) * nonlinear  # (n, F)
        if self.projection is not None:
            x = self.projection(x)  # (n, P)
        return x


class AllennlpStyleCell(nn.Module):
    """One LSTM layer and direction, one Python-level step at a time with ``nn.Linear`` products.

    Args:
        w_input: ``(D, 4C)``, w_state: ``(H, 4C)``, bias: ``(4C,)`` (forget bias folded in),
            w_proj: ``(C, H)`` or ``None``, all in :class:`bilm.lstm.LSTMWithProjection`'s
            layout (``x @ W``, gate blocks ``[i, f, o, j]``).
        cell_clip, proj_clip: clamp bounds (``None`` = none).
        reverse: run from each row's last real position to its first.
    """

    def __init__(
        self,
        w_input: Tensor,
        w_state: Tensor,
        bias: Tensor,
        w_proj: Tensor | None,
        cell_clip: float | None,
        proj_clip: float | None,
        reverse: bool,
    ) -> None:
        super().__init__()
        C = w_state.shape[1] // 4
        self.cell_dim, self.hidden_dim = C, w_state.shape[0]
        self.cell_clip, self.proj_clip, self.reverse = cell_clip, proj_clip, reverse
        # our [i, f, o, j] blocks → allennlp's [input, forget, memory, output]
        order = torch.cat([torch.arange(k * C, (k + 1) * C) for k in (0, 1, 3, 2)])
        self.input_linearity = nn.Linear(w_input.shape[0], 4 * C, bias=False)
        self.input_linearity.weight.data.copy_(w_input.t()[order])  # (4C, D)
        self.state_linearity = nn.Linear(self.hidden_dim, 4 * C, bias=True)
        self.state_linearity.weight.data.copy_(w_state.t()[order])  # (4C, H)
        self.state_linearity.bias.data.copy_(bias[order])  # (4C,)
        self.state_projection: nn.Linear | None = None
        if w_proj is not None:
            self.state_projection = nn.Linear(C, w_proj.shape[1], bias=False)
            self.state_projection.weight.data.copy_(w_proj.t())  # (H, C)

    def forward(self, inputs: Tensor, lengths: list[int]) -> Tensor:
        """``inputs (B, T, D)`` batch-first, rows sorted by decreasing ``lengths`` →
        ``(B, T, H)``, zeros past each row's length; every row starts from zero state."""
        batch, steps, _ = inputs.shape
        C = self.cell_dim
        outputs = inputs.new_zeros(batch, steps, self.hidden_dim)
        memory = inputs.new_zeros(batch, C)  # (B, C) full-batch memory
        state = inputs.new_zeros(batch, self.hidden_dim)  # (B, H) full-batch state
        last = 0 if self.reverse else batch - 1  # index of the last active row
        for step in range(steps):
            t = steps - 1 - step if self.reverse else step
            if self.reverse:
                while last < batch - 1 and lengths[last + 1] > t:
                    last += 1
            else:
                while last >= 0 and lengths[last] <= t:
                    last -= 1
            n = last + 1
            if n == 0 or lengths[0] <= t:
                continue
            previous_memory = memory[:n].clone()  # (n, C)
            previous_state = state[:n]  # (n, H)
            projected_input = self.input_linearity(inputs[:n, t])  # (n, 4C)
            projected_state = self.state_linearity(previous_state)  # (n, 4C)
            input_gate = torch.sigmoid(projected_input[:, :C] + projected_state[:, :C])
            forget_gate = torch.sigmoid(
                projected_input[:, C : 2 * C] + projected_state[:, C : 2 * C]
            )
            memory_init = torch.tanh(
                projected_input[:, 2 * C : 3 * C] + projected_state[:, 2 * C : 3 * C]
            )
            output_gate = torch.sigmoid(projected_input[:, 3 * C :] + projected_state[:, 3 * C :])
            new_memory = input_gate * memory_init + forget_gate * previous_memory  # (n, C)
            if self.cell_clip is not None:
                new_memory = torch.clamp(new_memory, -self.cell_clip, self.cell_clip)
            pre_projection = output_gate * torch.tanh(new_memory)  # (n, C)
            if self.state_projection is not None:
                output = self.state_projection(pre_projection)  # (n, H)
            else:
                output = pre_projection
            if self.proj_clip is not None:
                output = torch.clamp(output, -self.proj_clip, self.proj_clip)
            memory = memory.clone()  # allennlp clones the full-batch state before writing
            state = state.clone()
            memory[:n] = new_memory
            state[:n] = output
            outputs[:n, t] = output
        return outputs


class AllennlpStyleBiLM(nn.Module):
    """The whole biLM forward (char CNN, highway, projection, biLSTM) computed allennlp's way.

    Args:
        encoder: the token encoder.
        cells: per layer, the ``(forward, backward)`` cells.
        skip_connections: residual from the second layer on (ELMo: True).
    """

    def __init__(
        self,
        encoder: AllennlpStyleCharEncoder,
        cells: list[tuple[AllennlpStyleCell, AllennlpStyleCell]],
        skip_connections: bool,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        #: per layer, the ``(forward, backward)`` cells
        self.pairs: tuple[tuple[AllennlpStyleCell, AllennlpStyleCell], ...] = tuple(cells)
        self.cells = nn.ModuleList(nn.ModuleList(pair) for pair in cells)  # registered
        self.skip_connections = skip_connections

    @classmethod
    def from_bilm(cls, model: BiLM) -> AllennlpStyleBiLM:
        """The same weights as ``model`` (copied), laid out as allennlp's modules hold them."""
        cnn = model.char_cnn
        convs = [
            (w.detach(), b.detach()) for w, b in zip(cnn.conv_weight, cnn.conv_bias, strict=True)
        ]
        highway = [
            (w.detach(), b.detach())
            for w, b in zip(cnn.highway.weight, cnn.highway.bias, strict=True)
        ]
        projection = None
        if cnn.proj_weight is not None and cnn.proj_bias is not None:
            projection = (cnn.proj_weight.detach(), cnn.proj_bias.detach())
        encoder = AllennlpStyleCharEncoder(
            cnn.char_embedding.weight.detach(),
            convs,
            highway,
            projection,
            model.options.char_cnn.activation,
        )
        cells = []
        for pair in model.lstms:
            built = []
            for lstm in pair:
                w_proj = None if lstm.w_proj is None else lstm.w_proj.detach()
                built.append(
                    AllennlpStyleCell(
                        lstm.w_input.detach(),
                        lstm.w_state.detach(),
                        lstm.bias.detach(),
                        w_proj,
                        lstm.cell_clip,
                        lstm.proj_clip,
                        lstm.reverse,
                    )
                )
            cells.append((built[0], built[1]))
        return cls(encoder, cells, model.options.lstm.use_skip_connections)

    def forward(self, char_ids: Tensor) -> Tensor:
        """``char_ids (B, T, max_chars)`` from :func:`bilm.batch_to_ids` →
        ``layers (L+1, B, T, 2P)``: ``[x; x]`` and each biLSTM layer, zeros at padding."""
        batch, time, max_chars = char_ids.shape
        mask = (char_ids > 0).any(dim=-1)  # (B, T)
        lengths = mask.sum(dim=1)  # (B,)
        # <S> and </S> around every row, as allennlp's add_sentence_boundary_token_ids
        bos = torch.tensor(word_to_char_ids(BOS_TOKEN, max_chars), dtype=char_ids.dtype)
        eos = torch.tensor(word_to_char_ids(EOS_TOKEN, max_chars), dtype=char_ids.dtype)
        ids = char_ids.new_zeros(batch, time + 2, max_chars)
        ids[:, 1 : time + 1] = char_ids
        ids[:, 0] = bos
        ids[torch.arange(batch), lengths + 1] = eos
        tokens = self.encoder(ids.view(-1, max_chars)).view(batch, time + 2, -1)  # (B, T+2, P)

        # ElmoLstm: sort by length, run every layer, restore the order
        full_lengths, perm = torch.sort(lengths + 2, descending=True)
        lens = full_lengths.tolist()
        forward_in = backward_in = tokens[perm]  # (B, T+2, P)
        layer_outputs = []
        for layer_index, pair in enumerate(self.pairs):
            forward_out = pair[0](forward_in, lens)  # (B, T+2, P)
            backward_out = pair[1](backward_in, lens)  # (B, T+2, P)
            if layer_index > 0 and self.skip_connections:
                forward_out = forward_out + forward_in
                backward_out = backward_out + backward_in
            forward_in, backward_in = forward_out, backward_out
            layer_outputs.append(torch.cat([forward_out, backward_out], dim=-1))
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(batch)

        # _ElmoBiLm: token layer [x; x], then every layer with the boundary positions removed
        stacked = [torch.cat([tokens, tokens], dim=-1)] + [out[inverse] for out in layer_outputs]
        width = stacked[0].shape[-1]
        result = tokens.new_zeros(len(stacked), batch, time, width)  # (L+1, B, T, 2P)
        for row, length in enumerate(lengths.tolist()):
            for k, layer in enumerate(stacked):
                result[k, row, :length] = layer[row, 1 : length + 1]
        return result
