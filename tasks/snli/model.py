"""The paper's SNLI baseline: ESIM (Chen et al. 2017, "Enhanced LSTM for Natural Language
Inference"), with ELMo at the input and/or the output of the encoder biLSTM (Peters et al. 2018,
§4, Table 3, A.3).

Read top to bottom (Chen et al. §3.1–3.3; docs/reference/snli.md):

1. words → fixed word vectors (+ ELMo input mix)                 shared by premise and hypothesis
2. variational dropout → encoder biLSTM (+ ELMo output mix: concatenated to the encoder output,
   before the attention: paper §3.3 read with §5.2)
3. soft alignment: ``e_ij = a_iᵀ b_j``; ``ã_i = Σ_j softmax_j(e_ij) b_j``,
   ``b̃_j = Σ_i softmax_i(e_ij) a_i`` (:func:`soft_align`)
4. enhancement ``m = [a; ã; a − ã; a ⊙ ã]``, dropout after the attention (A.3; with a
   representation only, see below)
5. projection: linear + ReLU down to ``hidden``
6. variational dropout → composition biLSTM
7. average and max pooling over real positions of both sentences → ``[v_a,avg; v_a,max;
   v_b,avg; v_b,max]``
8. dropout → linear + ReLU (A.3 "ReLU FFs", unverified; allennlp ``esim.jsonnet``; Chen et al.'s
   tanh with ``mlp_activation=tanh``) → dropout → linear → label logits

The loss is the cross-entropy plus ``weight_l2 · Σ‖W‖²`` over the LSTM and linear weight
matrices (A.3, unverified: 0.0001 on "all recurrent and feed-forward weight matrices"); the λ
penalty of the ELMo mixes is added by the runner. A.3 gives the extra ℓ2 and the dropout after the
attention for the *ELMo* model only, so both apply only when the injector has an active site (a
representation with layers: ELMo, CoVe, …); the baseline (``none``: no active site) is the
paper's ESIM without them (:attr:`ESIM.represented`). Initialisation as allennlp's ESIM
configuration: Xavier uniform linear weights, Xavier input-to-hidden and orthogonal
hidden-to-hidden LSTM weights, zero biases except the LSTM forget gates (1).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.common.vocab import fill_missing_vectors
from tasks.features.inject import Injector
from tasks.nn.layers import BiLSTM, VariationalDropout, masked_softmax
from tasks.representations import Layers
from tasks.snli.config import SnliConfig


@dataclass(frozen=True)
class SnliBatch:
    """A padded batch. Shapes: (batch, time) word ids and bool masks, (batch,) label ids."""

    premise_words: Tensor
    premise_mask: Tensor
    hypothesis_words: Tensor
    hypothesis_mask: Tensor
    labels: Tensor | None  # (batch,) label ids, None when a pair has no gold label
    premise_layers: Layers  # representation layers (e.g. ELMo) of the premises
    hypothesis_layers: Layers


@dataclass(frozen=True)
class SnliOutput:
    """Loss (mean cross-entropy + extra ℓ2, or None without labels), logits and predictions."""

    loss: Tensor | None
    logits: Tensor  # (batch, labels)
    predictions: Tensor  # (batch,) label ids


def soft_align(a: Tensor, b: Tensor, a_mask: Tensor, b_mask: Tensor) -> tuple[Tensor, Tensor]:
    """ESIM's local inference (Chen et al. Eq. 11–13): dot-product scores, each side attends over
    the real positions of the other.

    Args:
        a: (batch, ta, d) premise; ``b``: (batch, tb, d) hypothesis.
        a_mask, b_mask: (batch, ta) / (batch, tb) bool.

    Returns:
        ``ã`` (batch, ta, d): b attended for each premise token; ``b̃`` (batch, tb, d).
    """
    scores = torch.bmm(a, b.transpose(1, 2))  # (batch, ta, tb)
    a_tilde = torch.bmm(masked_softmax(scores, b_mask[:, None, :]), b)  # (batch, ta, d)
    b_weights = masked_softmax(scores.transpose(1, 2), a_mask[:, None, :])  # (batch, tb, ta)
    b_tilde = torch.bmm(b_weights, a)  # (batch, tb, d)
    return a_tilde, b_tilde


def enhance(x: Tensor, x_tilde: Tensor) -> Tensor:
    """``[x; x̃; x − x̃; x ⊙ x̃]`` (Chen et al. Eq. 14–15): (batch, t, d) → (batch, t, 4·d)."""
    return torch.cat([x, x_tilde, x - x_tilde, x * x_tilde], dim=-1)


def pool(v: Tensor, mask: Tensor) -> Tensor:
    """Average and max over the real positions (Chen et al. Eq. 18–19): (batch, t, d) →
    (batch, 2·d) ``[avg; max]``."""
    m = mask[:, :, None]  # (batch, t, 1)
    avg = (v * m).sum(1) / m.sum(1).clamp_min(1)  # (batch, d)
    biggest = v.masked_fill(~m, torch.finfo(v.dtype).min).max(dim=1).values  # (batch, d)
    return torch.cat([avg, biggest], dim=-1)  # (batch, 2·d)


class ESIM(nn.Module):
    """ESIM with optional ELMo injection; every width is computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: (vocab, word_dim) fixed word vectors (row 0 = padding, row 1 = unknown).
        n_labels: number of labels.
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.

    Attributes:
        represented: whether the injector adds a representation at some site (it has layers and
            an active site); the ELMo model's extra regularisation (A.3) applies only then.
        weight_l2: the extra ℓ2 coefficient in use (``config.weight_l2`` when represented,
            else 0).
    """

    def __init__(
        self, config: SnliConfig, word_vectors: Tensor, n_labels: int, injector: Injector
    ) -> None:
        super().__init__()
        self.config, self.injector = config, injector
        # A.3 (unverified): the extra ℓ2 and the dropout after the attention are the ELMo model's
        self.represented = bool(injector.active_sites)
        self.weight_l2 = config.weight_l2 if self.represented else 0.0
        h = config.hidden
        if config.fill_missing_words:  # allennlp's embedding: N(mean, std) for the gaps
            word_vectors = fill_missing_vectors(word_vectors)
        self.words = nn.Embedding.from_pretrained(
            word_vectors, freeze=not config.train_word_vectors, padding_idx=0
        )
        embed_dim = word_vectors.shape[1] + injector.extra_dim("input")
        self.rnn_dropout = VariationalDropout(config.dropout)
        self.encoder = BiLSTM(embed_dim, h)
        enc_dim = self.encoder.output_dim + injector.extra_dim("output")
        self.attention_dropout = nn.Dropout(config.attention_dropout if self.represented else 0.0)
        self.projection = nn.Linear(4 * enc_dim, h)
        self.composition = BiLSTM(h, h)
        pooled_dim = 2 * 2 * self.composition.output_dim  # [avg; max] of both sentences
        self.output_dropout = nn.Dropout(config.output_dropout)
        self.hidden = nn.Linear(pooled_dim, h)
        self.activation = torch.tanh if config.mlp_activation == "tanh" else F.relu
        self.logits = nn.Linear(h, n_labels)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """allennlp's ESIM initialisation (esim.jsonnet ``initializer``)."""
        for module in (self.projection, self.hidden, self.logits):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
        for rnn in (self.encoder.lstm, self.composition.lstm):
            for name, param in rnn.named_parameters():
                if name.startswith("weight_ih"):
                    nn.init.xavier_uniform_(param)
                elif name.startswith("weight_hh"):
                    nn.init.orthogonal_(param)
                else:  # bias_ih / bias_hh: gates i, f, g, o; forget-gate bias 1 in total
                    nn.init.zeros_(param)
                    if name.startswith("bias_ih"):
                        n = param.shape[0] // 4
                        nn.init.ones_(param[n : 2 * n])

    def weight_matrices(self) -> list[Tensor]:
        """The weights the extra ℓ2 applies to: LSTM and linear matrices (no biases, no word
        vectors, no ELMo mix weights)."""
        out: list[Tensor] = []
        for rnn in (self.encoder.lstm, self.composition.lstm):
            out += [p for n, p in rnn.named_parameters() if n.startswith("weight_")]
        out += [m.weight for m in (self.projection, self.hidden, self.logits)]
        return out

    def encode(self, words: Tensor, layers: Layers, mask: Tensor) -> Tensor:
        """Steps 1–2 for one side: (b, t) ids → (b, t, enc_dim)."""
        injected = self.injector(layers)
        x = self.injector.concat("input", self.words(words), injected)  # (b, t, embed_dim)
        h = self.encoder(self.rnn_dropout(x), mask)  # (b, t, 2h)
        return self.injector.concat("output", h, injected)  # (b, t, enc_dim)

    def compose(self, m: Tensor, mask: Tensor) -> Tensor:
        """Steps 4–7 for one side: (b, t, 4·enc_dim) enhanced → (b, 2·2h) pooled."""
        m = self.attention_dropout(m)
        projected = F.relu(self.projection(m))  # (b, t, h)
        v = self.composition(self.rnn_dropout(projected), mask)  # (b, t, 2h)
        return pool(v, mask)  # (b, 4h)

    def forward(self, batch: SnliBatch) -> SnliOutput:
        """Label logits, predictions and (with labels) the loss."""
        p_mask, h_mask = batch.premise_mask, batch.hypothesis_mask
        a = self.encode(batch.premise_words, batch.premise_layers, p_mask)  # (b, tp, enc)
        b = self.encode(batch.hypothesis_words, batch.hypothesis_layers, h_mask)  # (b, th, enc)
        a_tilde, b_tilde = soft_align(a, b, p_mask, h_mask)
        v = torch.cat(
            [self.compose(enhance(a, a_tilde), p_mask), self.compose(enhance(b, b_tilde), h_mask)],
            dim=-1,
        )  # (b, 8h)
        hidden = self.activation(self.hidden(self.output_dropout(v)))  # (b, h)
        logits = self.logits(self.output_dropout(hidden))  # (b, labels)
        loss = None
        if batch.labels is not None:
            loss = F.cross_entropy(logits, batch.labels)
            if self.weight_l2:
                l2 = torch.stack([w.pow(2).sum() for w in self.weight_matrices()]).sum()
                loss = loss + self.weight_l2 * l2
        return SnliOutput(loss, logits, logits.argmax(dim=-1))
