"""The paper's NER baseline: a biLSTM-CRF tagger (Peters et al. 2018, §4 and A.7, unverified; the
TagLM baseline of Peters et al. 2017; allennlp ``crf_tagger``), with ELMo at the input and/or
output.

Read top to bottom (sources: docs/reference/ner.md):

1. words → [word vectors (fine-tuned); char CNN (16-d characters, 128 filters of width 3, ReLU,
   max-pool)] (+ ELMo input mix: the paper's site for NER)
2. dropout → biLSTM (layer 1) → dropout → biLSTM (layer 2)
3. dropout → (+ ELMo output mix) → linear → per-token label scores
4. linear-chain CRF (:mod:`tasks.nn.crf`): training maximises the sequence log-likelihood
   (summed over the batch, as allennlp); decoding is Viterbi restricted to sequences the tag
   scheme allows, so it never emits an invalid sequence

Dropout (``NerConfig.dropout_kind``) is variational (one mask per sentence, the paper's A.7,
unverified) or element-wise (allennlp ``crf_tagger``: ``torch.nn.Dropout`` on the embeddings and on
the encoder output, and the 2-layer ``torch.nn.LSTM``'s own dropout between its layers), at the same
three sites. Initialisation follows allennlp (the implementation behind the paper's NER numbers):

* word vectors: a vocabulary word without a pre-trained vector (an all-zero row from
  :func:`tasks.common.vocab.word_vectors`) and the unknown row start from
  ``N(mean, std)`` of all values of the rows that have one (allennlp
  ``_read_embeddings_from_text_file``), not from zeros; row 0 (padding) stays 0;
* character embeddings: Xavier-uniform (allennlp ``Embedding``), the padding row 0 (allennlp
  masks padded characters to 0 before the CNN);
* biLSTMs, convolution and the output layer: PyTorch's defaults (allennlp's configuration sets no
  initialiser); CRF: :class:`tasks.nn.crf.ConditionalRandomField` (as allennlp).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn

from tasks.common.vocab import fill_missing_vectors
from tasks.features.inject import Injector
from tasks.ner.config import NerConfig
from tasks.nn.crf import ConditionalRandomField
from tasks.nn.layers import BiLSTM, CharCNNEncoder, VariationalDropout
from tasks.representations import Layers


@dataclass(frozen=True)
class TaggerBatch:
    """A padded batch. Shapes: (batch, time) ids / mask / tags, (batch, time, chars) char ids."""

    words: Tensor
    chars: Tensor
    mask: Tensor
    tags: Tensor | None  # (batch, time) gold label ids, 0 at pads; None when unlabelled
    layers: Layers  # representation layers (e.g. ELMo; Layers.empty for the baseline)


@dataclass(frozen=True)
class TaggerOutput:
    """Loss (summed over the batch; None without gold tags), label scores and, in evaluation
    mode, the decoded label ids of each sentence."""

    loss: Tensor | None
    emissions: Tensor  # (batch, time, labels)
    paths: list[list[int]] | None


def make_dropout(kind: Literal["variational", "elementwise"], p: float) -> nn.Module:
    """The tagger's dropout: ``variational`` (one mask per sentence, shared over time) or
    ``elementwise`` (``torch.nn.Dropout``: an independent mask per token, allennlp)."""
    if kind == "variational":
        return VariationalDropout(p)
    if kind == "elementwise":
        return nn.Dropout(p)
    raise ValueError(f"dropout_kind must be 'variational' or 'elementwise', got {kind!r}")


class CrfTagger(nn.Module):
    """Word vectors + char CNN → 2 biLSTMs → linear → CRF; every width computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: (vocab, word_dim) initial word vectors (row 0 padding, row 1 unknown).
        n_chars: size of the character vocabulary (with padding and unknown).
        allowed: the tag scheme's ``(start, transitions, end)`` masks (decoding constraints).
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.
    """

    def __init__(
        self,
        config: NerConfig,
        word_vectors: Tensor,
        n_chars: int,
        allowed: tuple[Tensor, Tensor, Tensor],
        injector: Injector,
    ) -> None:
        super().__init__()
        self.injector = injector
        self.words = nn.Embedding.from_pretrained(
            fill_missing_vectors(word_vectors),
            freeze=not config.train_word_vectors,
            padding_idx=0,
        )
        self.chars = CharCNNEncoder(
            n_chars,
            config.char_dim,
            config.char_filters,
            config.char_width,
            max_chars=config.max_word_chars,
            whole_windows=config.char_cnn == "allennlp",
        )
        with torch.no_grad():  # allennlp Embedding: Xavier-uniform; padded characters are 0
            nn.init.xavier_uniform_(self.chars.embedding.weight)
            self.chars.embedding.weight[0].zero_()
        first, second = config.hidden
        embed_dim = word_vectors.shape[1] + self.chars.output_dim + injector.extra_dim("input")
        self.drop = make_dropout(config.dropout_kind, config.dropout)
        self.lstm1 = BiLSTM(embed_dim, first)
        self.lstm2 = BiLSTM(self.lstm1.output_dim, second)
        out_dim = self.lstm2.output_dim + injector.extra_dim("output")
        num_labels = allowed[0].shape[0]
        self.project = nn.Linear(out_dim, num_labels)
        self.crf = ConditionalRandomField(num_labels, allowed, config.include_start_end)

    def emissions(self, batch: TaggerBatch) -> Tensor:
        """Steps 1–3: (batch, time) ids → (batch, time, labels) scores."""
        mask = batch.mask
        injected = self.injector(batch.layers)
        x = torch.cat([self.words(batch.words), self.chars(batch.chars)], dim=-1)  # (b, t, w+c)
        x = self.injector.concat("input", x, injected)  # (b, t, embed_dim)
        h = self.lstm1(self.drop(x), mask)  # (b, t, 2·h1)
        h = self.drop(self.lstm2(self.drop(h), mask))  # (b, t, 2·h2)
        h = self.injector.concat("output", h, injected)  # (b, t, out_dim)
        return self.project(h)  # (b, t, labels)

    def forward(self, batch: TaggerBatch) -> TaggerOutput:
        """Loss when gold tags are given; decoded paths in evaluation mode."""
        scores = self.emissions(batch)  # (b, t, labels)
        loss = None
        if batch.tags is not None:
            loss = -self.crf.log_likelihood(scores, batch.tags, batch.mask).sum()
        paths = None if self.training else self.crf.decode(scores, batch.mask)
        return TaggerOutput(loss, scores, paths)
