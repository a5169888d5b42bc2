"""He et al. (2017)'s deep SRL tagger, the SRL baseline of Peters et al. (2018) §4, with ELMo at the
input and/or the output of the LSTM stack (TASKS_SPEC §3.3, §1.7).

Read top to bottom:

1. word embedding (GloVe, trainable) ⊕ binary predicate-indicator embedding (+ ELMo input mix)
2. ``layers`` LSTM layers with **directions interleaved** (layer 0 reads left to right, layer 1
   right to left, …), each with a **highway connection** (a gated mix of the LSTM output and a
   linear map of the layer input), **recurrent dropout** and **orthogonal initialisation** with
   forget-gate bias 1 (:class:`AlternatingHighwayLSTM`)
3. (+ ELMo output mix) → linear tag projection (orthogonal init) → per-token softmax; the training
   loss is the token negative log-likelihood (no CRF)
4. at test time, **BIO-constrained Viterbi** over the log-probabilities (no learned transitions):
   the decoded tags always form valid IOB2 (no ``I-X`` without ``B-X``/``I-X`` before it).

Speed and the approximations it costs (the paper's cell, He et al. eq. 3–6, runs one Python step
per token; here every layer is one fused ``nn.LSTM`` call):

* a backward layer reverses each sequence *within its length* (:func:`reverse_padded`), runs the
  forward LSTM and reverses back. Sequences are right-padded, so a forward LSTM's outputs at real
  positions never see padding and no packing is needed.
* the highway gate of He et al. is ``r_t = σ(W [h_{t-1}; x_t])`` with ``h_{t-1}`` the previous
  *highway* output, which also feeds the recurrence. Here the recurrence runs on the plain LSTM
  state ``h'`` (cuDNN cannot take the highway inside), and the gate reads the previous plain
  state: ``r_t = σ(W [h'_{t-1}; x_t] + b)``, ``h_t = r_t ∘ h'_t + (1 − r_t) ∘ W_x x_t``.
* recurrent dropout (Gal & Ghahramani 2016: one mask per sequence, the same at every step, on the
  hidden state) is applied in two places: on the state fed back into the recurrence as one mask of
  the columns of the hidden-to-hidden weights, drawn per *batch* (exactly the per-step-constant
  mask, but shared by the batch's sequences), and on each layer's output as a per-sequence,
  time-constant mask (:class:`~tasks.common.layers.VariationalDropout`). In allennlp's
  ``AugmentedLstm`` one per-sequence mask does both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call

from tasks.common.crf import allowed_transitions, viterbi_decode
from tasks.common.inject import Injector
from tasks.common.layers import VariationalDropout, run_rnn
from tasks.representations import Layers
from tasks.srl.config import SrlConfig


@dataclass(frozen=True)
class SrlBatch:
    """A padded batch (one predicate instance per row). Shapes: (batch, time).

    Attributes:
        words: word ids (0 at padding).
        predicates: 1 at the predicate position, else 0.
        mask: True at real tokens.
        tags: gold tag ids, or None when predicting without gold.
        layers: representation layers (e.g. ELMo) of the sentences (:meth:`Layers.empty`
            without).
    """

    words: Tensor
    predicates: Tensor
    mask: Tensor
    tags: Tensor | None
    layers: Layers


@dataclass(frozen=True)
class SrlOutput:
    """Loss (None without gold tags), tag logits (batch, time, tags) and, in eval mode, the
    Viterbi-decoded tag ids of every sequence (its real length; empty lists in training)."""

    loss: Tensor | None
    logits: Tensor
    decoded: list[list[int]] = field(default_factory=list)


def reverse_padded(x: Tensor, mask: Tensor) -> Tensor:
    """Reverse each right-padded sequence within its length; padding stays in place.

    Args:
        x: (batch, time, dim).
        mask: (batch, time) bool, a prefix of True per row.

    Returns:
        (batch, time, dim); applying it twice gives ``x`` back.
    """
    t = x.shape[1]
    steps = torch.arange(t, device=x.device)[None, :]  # (1, t)
    lengths = mask.sum(1, keepdim=True)  # (b, 1)
    index = torch.where(steps < lengths, lengths - 1 - steps, steps)  # (b, t)
    return x.gather(1, index[:, :, None].expand_as(x))  # (b, t, dim)


def _block_orthogonal_(weight: Tensor, block_rows: int) -> None:
    """Orthogonal initialisation of each ``block_rows``-row block (one block per gate), as
    allennlp's ``block_orthogonal`` for the LSTM and highway weights."""
    with torch.no_grad():
        for start in range(0, weight.shape[0], block_rows):
            nn.init.orthogonal_(weight[start : start + block_rows])


class HighwayLSTMLayer(nn.Module):
    """One left-to-right LSTM layer with a highway connection and recurrent dropout (module
    docstring for the approximations).

    Args:
        input_dim: width of the layer input.
        hidden: LSTM units.
        recurrent_dropout: probability of dropping a hidden unit (per batch in the recurrence, per
            sequence on the output; the same at every time step).
    """

    def __init__(self, input_dim: int, hidden: int, recurrent_dropout: float) -> None:
        super().__init__()
        self.hidden = hidden
        self.lstm = nn.LSTM(input_dim, hidden, batch_first=True)
        self.gate = nn.Linear(hidden + input_dim, hidden)  # r_t from [h'_{t-1}; x_t]
        self.carry = nn.Linear(input_dim, hidden, bias=False)  # W_x x_t (AugmentedLstm: no bias)
        self.p = recurrent_dropout
        self.output_dropout = VariationalDropout(recurrent_dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Orthogonal weights per gate, zero biases, forget-gate bias 1 (paper A.5 [R]; allennlp
        ``AugmentedLstm``)."""
        h = self.hidden
        _block_orthogonal_(self.lstm.weight_ih_l0, h)
        _block_orthogonal_(self.lstm.weight_hh_l0, h)
        _block_orthogonal_(self.gate.weight, h)
        _block_orthogonal_(self.carry.weight, h)
        with torch.no_grad():
            self.lstm.bias_ih_l0.zero_()
            self.lstm.bias_hh_l0.zero_()
            self.lstm.bias_ih_l0[h : 2 * h] = 1.0  # torch gate order: input, forget, cell, output
            self.gate.bias.zero_()

    def _run_lstm(self, x: Tensor) -> Tensor:
        """``nn.LSTM`` over ``x`` (b, t, in) → (b, t, hidden); in training the hidden state fed
        back is dropped with one mask over the columns of ``weight_hh`` (constant over time)."""
        if not self.training or self.p == 0.0:
            return run_rnn(self.lstm, x)
        w_hh = self.lstm.weight_hh_l0  # (4h, h): column j reads hidden unit j
        keep = w_hh.new_empty(1, self.hidden).bernoulli_(1.0 - self.p) / (1.0 - self.p)
        params = dict(self.lstm.named_parameters())
        params["weight_hh_l0"] = w_hh * keep  # (4h, h)
        return run_rnn(lambda seq: functional_call(self.lstm, params, (seq,)), x)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) → (batch, time, hidden); 0 at pads."""
        h = self._run_lstm(x)  # (b, t, hidden) plain LSTM outputs h'
        previous = F.pad(h, (0, 0, 1, 0))[:, :-1]  # (b, t, hidden): h'_{t-1}, zeros at t = 0
        r = torch.sigmoid(self.gate(torch.cat([previous, x], dim=-1)))  # (b, t, hidden)
        out = r * h + (1.0 - r) * self.carry(x)  # (b, t, hidden)
        return self.output_dropout(out) * mask[:, :, None]  # (b, t, hidden)


class AlternatingHighwayLSTM(nn.Module):
    """He et al. (2017)'s stack: ``layers`` highway LSTM layers, even layers left to right, odd
    layers right to left (allennlp ``StackedAlternatingLstm``).

    Args:
        input_dim: width of the input vectors.
        hidden: units per layer (the output width).
        layers: number of layers.
        recurrent_dropout: see :class:`HighwayLSTMLayer`.
    """

    def __init__(self, input_dim: int, hidden: int, layers: int, recurrent_dropout: float) -> None:
        super().__init__()
        dims = [input_dim] + [hidden] * (layers - 1)
        self.layers = nn.ModuleList(HighwayLSTMLayer(d, hidden, recurrent_dropout) for d in dims)
        self.output_dim = hidden

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) → (batch, time, hidden)."""
        for i, layer in enumerate(self.layers):
            if i % 2 == 1:  # right to left: reverse, run forward, reverse back
                x = reverse_padded(layer(reverse_padded(x, mask), mask), mask)
            else:
                x = layer(x, mask)  # (b, t, hidden)
        return x


def sequence_nll(logits: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
    """Token negative log-likelihood, averaged over each sequence's tokens, then over the
    sequences (allennlp ``sequence_cross_entropy_with_logits``, ``average="batch"``).

    Args:
        logits: (batch, time, tags); tags: (batch, time) ids; mask: (batch, time) bool.
    """
    nll = F.cross_entropy(logits.transpose(1, 2), tags, reduction="none")  # (b, t)
    per_sequence = (nll * mask).sum(1) / mask.sum(1).clamp_min(1)  # (b,)
    return per_sequence.sum() / (mask.sum(1) > 0).sum().clamp_min(1)


class SrlTagger(nn.Module):
    """The deep SRL tagger; every width is computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: (vocab, word_dim) initial word vectors (row 0 padding, row 1 unknown).
        labels: the tag names (index = tag id), IOB2 (``O``, ``B-ARG0``, ``I-ARG0``, ``B-V`` …).
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.
    """

    def __init__(
        self,
        config: SrlConfig,
        word_vectors: Tensor,
        labels: Sequence[str],
        injector: Injector,
    ) -> None:
        super().__init__()
        self.config, self.injector, self.labels = config, injector, tuple(labels)
        self.words = nn.Embedding.from_pretrained(
            word_vectors, freeze=not config.train_word_vectors, padding_idx=0
        )
        self.predicate = nn.Embedding(2, config.predicate_dim)
        input_dim = word_vectors.shape[1] + config.predicate_dim + injector.extra_dim("input")
        self.encoder = AlternatingHighwayLSTM(
            input_dim, config.hidden, config.layers, config.recurrent_dropout
        )
        self.tag_projection = nn.Linear(
            self.encoder.output_dim + injector.extra_dim("output"), len(self.labels)
        )
        nn.init.orthogonal_(self.tag_projection.weight)  # source: srl.jsonnet initializer
        nn.init.zeros_(self.tag_projection.bias)
        start, transitions, end = allowed_transitions(self.labels, "IOB2")
        self.register_buffer("allowed_start", start, persistent=False)
        self.register_buffer("allowed", transitions, persistent=False)
        self.register_buffer("allowed_end", end, persistent=False)

    def forward(self, batch: SrlBatch) -> SrlOutput:
        """Tag logits, the loss with gold tags, and constrained Viterbi tags in eval mode."""
        mask = batch.mask
        injected = self.injector(batch.layers)
        x = torch.cat([self.words(batch.words), self.predicate(batch.predicates)], dim=-1)
        x = self.injector.concat("input", x, injected)  # (b, t, input_dim)
        h = self.encoder(x, mask)  # (b, t, hidden)
        h = self.injector.concat("output", h, injected)  # (b, t, hidden + output extra)
        logits = self.tag_projection(h)  # (b, t, tags)
        loss = sequence_nll(logits, batch.tags, mask) if batch.tags is not None else None
        decoded = [] if self.training else self.decode(logits, mask)
        return SrlOutput(loss, logits, decoded)

    def decode(self, logits: Tensor, mask: Tensor) -> list[list[int]]:
        """The most probable valid IOB2 sequence per row (log-softmax scores, transitions only
        allowed or forbidden, never learned; allennlp ``SemanticRoleLabeler.make_output_human_
        readable``)."""
        log_probs = F.log_softmax(logits.float(), dim=-1)  # (b, t, tags)
        return viterbi_decode(
            log_probs,
            mask,
            allowed=(self.allowed_start, self.allowed, self.allowed_end),
        )
