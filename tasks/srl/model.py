"""He et al. (2017)'s deep SRL tagger, the SRL baseline of Peters et al. (2018) §4, with ELMo at the
input and/or the output of the LSTM stack (docs/reference/srl.md).

Read top to bottom:

1. word embedding (GloVe, trainable) ⊕ binary predicate-indicator embedding (+ ELMo input mix)
2. ``layers`` highway LSTM layers with **directions interleaved** (layer 0 reads left to right,
   layer 1 right to left, …; :class:`AlternatingHighwayLSTM`)
3. (+ ELMo output mix) → linear tag projection (orthogonal init) → per-token softmax; the training
   loss is the token negative log-likelihood (no CRF)
4. at test time, **BIO-constrained Viterbi** over the log-probabilities (no learned transitions):
   the decoded tags always form valid IOB2 (no ``I-X`` without ``B-X``/``I-X`` before it).

The highway LSTM cell (:class:`HighwayLSTMLayer`) is He et al.'s (deep_srl ``layer.py``
``HighwayLSTMLayer``; allennlp ``AugmentedLstm``, the paper's implementation), step by step::

    [i; f; o; r] = σ(W_{ifor} x_t + U_{ifor} h_{t-1} + b_{ifor})     r: the highway gate
    g            = tanh(W_g x_t + U_g h_{t-1} + b_g)
    c_t          = f ∘ c_{t-1} + i ∘ g
    h_t          = m ∘ (r ∘ o ∘ tanh(c_t) + (1 − r) ∘ W_k x_t)

The highway output ``h_t`` is both the layer's output and the state fed back; ``m`` is the
recurrent-dropout mask (Gal & Ghahramani 2016): one mask per sequence, the same at every step,
scaled by ``1/(1 − p)``, drawn anew for every forward pass in training, all ones in evaluation.
Weights are block-orthogonal per gate, biases zero except the forget gate's 1; the carry
projection ``W_k`` has no bias (``use_input_projection_bias: false`` in allennlp's
``srl_elmo.jsonnet``). The input projections of every step are one matrix product before the
time loop; only ``U h_{t-1}`` runs per step. A right-to-left layer reverses each sequence within
its length (:func:`reverse_padded`), runs left to right and reverses back; sequences are
right-padded, so no real position ever sees padding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.common.vocab import fill_missing_vectors
from tasks.features.inject import Injector
from tasks.nn.crf import allowed_transitions, viterbi_decode
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
    """One left-to-right highway LSTM layer with recurrent dropout: He et al. (2017)'s cell
    (module docstring for the equations).

    Args:
        input_dim: width of the layer input.
        hidden: LSTM units (the output width).
        recurrent_dropout: probability of dropping a unit of the highway output, with one mask
            per sequence shared by every time step (output and recurrence alike).
    """

    def __init__(self, input_dim: int, hidden: int, recurrent_dropout: float) -> None:
        super().__init__()
        self.input_dim, self.hidden, self.p = input_dim, hidden, recurrent_dropout
        # rows in blocks of ``hidden``: gates i, f, o, r, candidate g, then the carry W_k
        self.input_projection = nn.Linear(input_dim, 6 * hidden, bias=False)
        self.state_projection = nn.Linear(hidden, 5 * hidden)  # U and b of i, f, o, r, g
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Orthogonal weights per gate block, zero biases, forget-gate bias 1 (allennlp
        ``AugmentedLstm``: ``block_orthogonal``, forget bias 1; deep_srl: block orthonormal
        ``W``/``U``, forget bias 1; paper A.5, unverified)."""
        h = self.hidden
        _block_orthogonal_(self.input_projection.weight, h)
        _block_orthogonal_(self.state_projection.weight, h)
        with torch.no_grad():
            self.state_projection.bias.zero_()
            self.state_projection.bias[h : 2 * h] = 1.0  # the forget gate

    def dropout_mask(self, batch: int, like: Tensor) -> Tensor | None:
        """A fresh recurrent-dropout mask, (batch, hidden): one row per sequence, entries 0 or
        ``1/(1 − p)``; None in evaluation or without dropout."""
        if not self.training or self.p == 0.0:
            return None
        keep = like.new_empty(batch, self.hidden).bernoulli_(1.0 - self.p)  # (b, hidden)
        return keep / (1.0 - self.p)

    def forward(self, x: Tensor, mask: Tensor, keep: Tensor | None = None) -> Tensor:
        """Run the layer left to right.

        Args:
            x: (batch, time, input_dim), right-padded.
            mask: (batch, time) bool, True at real tokens.
            keep: a (batch, hidden) dropout mask to use instead of drawing one
                (:meth:`dropout_mask`); it multiplies every step's highway output.

        Returns:
            (batch, time, hidden) highway outputs, 0 at padding.
        """
        b, t, _ = x.shape
        h = self.hidden
        keep = self.dropout_mask(b, x) if keep is None else keep
        projected = self.input_projection(x)  # (b, t, 6h): every step's W x_t at once
        # split, not two slices: its backward joins the two gradients, where each slice's would
        # fill a zero (b, t, 6h) gradient and copy into it
        gates, carry = projected.split([5 * h, h], dim=-1)  # (b, t, 5h), (b, t, h): W_k x_t
        gate_inputs = gates + self.state_projection.bias  # (b, t, 5h)
        recurrent = self.state_projection.weight.t()  # (h, 5h)
        # one view per step through unbind: its backward stacks the steps' gradients once,
        # where indexing each step would fill and add a zero (b, t, ·) gradient per step
        gate_steps, carry_steps = gate_inputs.unbind(1), carry.unbind(1)  # t × (b, 5h), (b, h)
        state = x.new_zeros(b, h)  # h_{t-1}
        memory = x.new_zeros(b, h)  # c_{t-1}
        outputs = []
        for step in range(t):
            pre = torch.addmm(gate_steps[step], state, recurrent)  # (b, 5h)
            i, f, o, r = torch.sigmoid(pre[:, : 4 * h]).chunk(4, dim=1)  # each (b, h)
            g = torch.tanh(pre[:, 4 * h :])  # (b, h)
            memory = f * memory + i * g  # (b, h)
            state = r * o * torch.tanh(memory) + (1.0 - r) * carry_steps[step]  # (b, h)
            if keep is not None:
                state = state * keep  # the same mask at every step, fed back as well
            outputs.append(state)
        if not outputs:
            return x.new_zeros(b, 0, h)
        return torch.stack(outputs, dim=1) * mask[:, :, None]  # (b, t, h)


class AlternatingHighwayLSTM(nn.Module):
    """He et al. (2017)'s stack: ``layers`` highway LSTM layers, even layers left to right, odd
    layers right to left (allennlp ``StackedAlternatingLstm``).

    Args:
        input_dim: width of the input vectors.
        hidden: units per layer (the output width).
        layers: number of layers.
        recurrent_dropout: see :class:`HighwayLSTMLayer` (each layer draws its own mask).
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

    allowed_start: Tensor  # (tags,) buffers of the IOB2 constraints
    allowed: Tensor  # (tags, tags)
    allowed_end: Tensor  # (tags,)

    def __init__(
        self,
        config: SrlConfig,
        word_vectors: Tensor,
        labels: Sequence[str],
        injector: Injector,
    ) -> None:
        super().__init__()
        self.config, self.injector, self.labels = config, injector, tuple(labels)
        if config.fill_missing_words:  # allennlp's embedding: N(mean, std) for the gaps
            word_vectors = fill_missing_vectors(word_vectors)
        self.words = nn.Embedding.from_pretrained(
            word_vectors, freeze=not config.train_word_vectors, padding_idx=0
        )
        self.predicate = nn.Embedding(2, config.predicate_dim)  # N(0, 1): PyTorch's default
        if config.init == "allennlp":  # allennlp's Embedding: Xavier uniform, ±√(6 / (2 + dim))
            nn.init.xavier_uniform_(self.predicate.weight)
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
