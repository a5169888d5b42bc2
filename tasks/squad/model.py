"""The paper's SQuAD baseline: BiDAF improved with self-attention (Clark & Gardner 2018), with
ELMo at the input and/or the output of the first recurrent layer (Peters et al. 2018, §4, A.4).

Read top to bottom (document-qa @2f9fa68 ``docqa/elmo/lm_qa_models.py`` as used for the paper;
docs/reference/squad.md):

1. words → [fixed word vectors; char-CNN] (+ ELMo input mix)       shared by question and context
2. variational dropout → bi-GRU → variational dropout → (+ ELMo output mix, before attention:
   ``append_before_atten``; the mix has only the injector's own dropout)
3. bi-attention (trilinear similarity): ``[c; c2q; c∘c2q; c∘q2c]`` (:func:`bi_attention`)
4. linear 2·hidden + ReLU
5. residual block: dropout → bi-GRU → dropout → self-attention over the context (diagonal
   masked, learned "no alignment" option) → ``[s; a; s∘a]`` → linear + ReLU; then dropout
6. chained bi-GRUs predict the start, then the end of the answer span

Initialisation as document-qa (:meth:`BiDAFSelfAttention.init_like_document_qa`): truncated
normal σ 0.05 for the GRUs, Glorot uniform for the dense layers, the similarity vectors and the
char CNN, uniform ±0.05 for the char embeddings, zero biases where document-qa's were zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.common.vocab import fill_missing_vectors
from tasks.features.inject import Injector
from tasks.nn.layers import (
    BiGRU,
    CharCNNEncoder,
    TrilinearAttention,
    VariationalDropout,
    masked_log_softmax,
    masked_softmax,
    masked_softmax_with_null,
)
from tasks.representations import Layers
from tasks.squad.config import SquadConfig


@dataclass(frozen=True)
class SquadBatch:
    """A padded batch. Shapes: (batch, time) word ids / masks, (batch, time, chars) char ids;
    the context's first dimension is the paragraphs' count where ``context_index`` is set."""

    context_words: Tensor
    context_chars: Tensor
    context_mask: Tensor
    question_words: Tensor
    question_chars: Tensor
    question_mask: Tensor
    spans: Tensor | None  # (batch, 2) inclusive token span of the first answer
    context_layers: Layers  # representation layers (e.g. ELMo) of the context
    question_layers: Layers
    # (batch,) the row of the context tensors each question reads (``shared_paragraphs``); None:
    # row i is question i's own copy of its paragraph
    context_index: Tensor | None = None


@dataclass(frozen=True)
class SquadOutput:
    """Loss (mean over the batch, or None without gold spans) and best spans (batch, 2)."""

    loss: Tensor | None
    spans: Tensor
    start_logits: Tensor
    end_logits: Tensor


def best_spans(start: Tensor, end: Tensor, max_len: int) -> Tensor:
    """Argmax of ``start_i + end_j`` over ``i ≤ j < i + max_len`` (log-probabilities).

    ``start``, ``end``: (batch, time) → (batch, 2) inclusive spans.
    """
    t = start.shape[1]
    scores = start[:, :, None] + end[:, None, :]  # (batch, time, time)
    i = torch.arange(t, device=start.device)
    valid = (i[None, :] >= i[:, None]) & (i[None, :] < i[:, None] + max_len)  # (time, time)
    scores = scores.masked_fill(~valid, float("-inf"))
    flat = scores.view(scores.shape[0], -1).argmax(dim=1)  # (batch,)
    return torch.stack([flat // t, flat % t], dim=1)


def bi_attention(scores: Tensor, c: Tensor, q: Tensor, c_mask: Tensor, q_mask: Tensor) -> Tensor:
    """BiDAF bi-attention as document-qa's ``BiAttention(TriLinear(bias=True), q2c=True)``.

    ``c2q_i = Σ_j softmax_j(s_ij) q_j`` (context-to-question); ``q2c = Σ_i softmax_i(max_j s_ij)
    c_i`` (question-to-context: one vector per example, tiled over the context) →
    ``[c; c2q; c∘c2q; c∘q2c]``.

    Args:
        scores: (batch, tc, tq) similarities ``s_ij``.
        c: (batch, tc, d) context; ``q``: (batch, tq, d) question.
        c_mask, q_mask: (batch, tc) / (batch, tq) bool.

    Returns:
        (batch, tc, 4·d).
    """
    c2q = torch.bmm(masked_softmax(scores, q_mask[:, None, :]), q)  # (b, tc, d)
    best = scores.masked_fill(~q_mask[:, None, :], float("-inf")).max(dim=2).values  # (b, tc)
    q2c = torch.bmm(masked_softmax(best, c_mask)[:, None, :], c)  # (b, 1, d)
    return torch.cat([c, c2q, c * c2q, c * q2c], dim=-1)  # (b, tc, 4·d)


#: Float32 ``(batch, context, context)`` tensors one batch holds at its peak, by mode: the
#: self-attention's scores, their softmax beside the no-alignment logit, its weights and masks,
#: the span scores of :func:`best_spans`; in training also what autograd keeps for the backward
#: pass and the gradients. Measured as the peak resident-memory growth of the ``mini`` model on
#: CPU (fp32) with one 3,000- and one 5,000-token context: 5.4 / 5.0 in evaluation, 18.1 / 12.8
#: in training; rounded down, so :func:`attention_bytes` is a lower bound.
ATTENTION_COPIES: dict[str, int] = {"train": 12, "eval": 5}
#: Bytes of one float32 value.
FLOAT_BYTES = 4


def attention_bytes(batch: int, context_tokens: int, *, training: bool) -> int:
    """A lower bound on the memory one batch needs: its ``(batch, context, context)`` tensors.

    ``copies × batch × context_tokens² × 4`` bytes, ``copies`` from :data:`ATTENTION_COPIES`
    (12 in training, 5 in evaluation). The terms linear in the context length (GRU states,
    bi-attention over the question) are left out: for a long context the quadratic term is
    nearly all of it, and a lower bound never refuses a batch that would fit.

    Args:
        batch: examples in the batch (all padded to the longest context).
        context_tokens: the longest context of the batch, in tokens.
        training: with the backward pass (else evaluation, under ``no_grad``).

    >>> attention_bytes(2, 10, training=False)  # 5 × 2 × 10² × 4
    4000
    """
    copies = ATTENTION_COPIES["train" if training else "eval"]
    return copies * batch * context_tokens**2 * FLOAT_BYTES


def longest_fitting_context(batch: int, available: int, *, training: bool) -> int:
    """The longest context whose batch :func:`attention_bytes` keeps within ``available``
    bytes (the inverse of the formula, rounded down; 0 when not even one token fits).

    >>> longest_fitting_context(2, 4000, training=False)
    10
    """
    copies = ATTENTION_COPIES["train" if training else "eval"]
    return math.isqrt(max(available, 0) // (copies * batch * FLOAT_BYTES))


#: Rows of allennlp's character embedding in DialogQA's configuration: UTF-8 byte ids shifted
#: by one (``CharacterTokenizer(byte_encoding="utf-8")``: 1–256), the word-boundary markers 259
#: and 260, and 0 for padding; ``char_cnn=allennlp`` draws its embeddings with these fans.
ALLENNLP_CHAR_ROWS = 262
#: Classes of each of DialogQA's yes/no and follow-up heads (``constant_heads``).
QUAC_CLASSES = 3

#: document-qa's GRU initialiser ``CudnnGru(w_init=TruncatedNormal(stddev=0.05))``: every input
#: and recurrent matrix (``recurrent_init=None`` → ``w_init``), biases zero (``is_forget_bias``
#: all false for GRUs). ``tf.truncated_normal`` re-draws values beyond 2σ.
GRU_STD = 0.05
#: document-qa ``LearnedCharEmbedder(init_scale=0.05)``: ``random_uniform_initializer(±0.05)``.
CHAR_EMBED_SCALE = 0.05


def init_gru_(gru: nn.GRU) -> None:
    """Weights ~ N(0, σ²) truncated to ±2σ (σ = :data:`GRU_STD`), biases 0, in place."""
    for name, p in gru.named_parameters():
        if name.startswith("weight"):
            nn.init.trunc_normal_(p, std=GRU_STD, a=-2 * GRU_STD, b=2 * GRU_STD)
        else:
            nn.init.zeros_(p)


def init_dense_(linear: nn.Linear) -> None:
    """Glorot uniform weight and zero bias, in place: ``tf.layers.dense`` /
    ``tf.contrib.layers.fully_connected`` with ``glorot_uniform`` kernels (document-qa's
    ``FullyConnected`` and ``BoundsPredictor``); their bias initialiser is zeros."""
    nn.init.xavier_uniform_(linear.weight)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


def glorot_vector_limit(n: int) -> float:
    """Glorot uniform bound of a 1-D ``(n,)`` variable in TF's ``init_ops`` (which TF 1.3's
    ``contrib.keras`` initialisers re-export, tensorflow@1cd3573): ``fan_in = fan_out = n``, so
    ``√(6 / 2n)``; a scalar has fans 1 (``n = 1``: ``√3``)."""
    return math.sqrt(3.0 / n)


def init_trilinear_(att: TrilinearAttention) -> None:
    """document-qa ``TriLinear(init="glorot_uniform", bias=True)``, in place: ``input_w``,
    ``key_w`` and ``dot_w`` are 1-D ``(d,)`` variables (bound :func:`glorot_vector_limit`);
    the scalar ``bias`` has no initialiser, so TF's default ``glorot_uniform_initializer``
    applies: U(±√3)."""
    limit = glorot_vector_limit(att.w_xy.numel())
    for w in (att.w_x.weight, att.w_y.weight, att.w_xy):
        nn.init.uniform_(w, -limit, limit)
    bias = glorot_vector_limit(1)
    nn.init.uniform_(att.bias, -bias, bias)


def init_trilinear_like_allennlp_(att: TrilinearAttention) -> None:
    """allennlp ``LinearMatrixAttention(combination="x,y,x*y")``, in place: its one weight
    vector of length ``3d`` (here ``w_x``, ``w_y`` and ``w_xy``) ~ U(±√(6 / (3d + 1))), its
    bias 0."""
    limit = math.sqrt(6.0 / (3 * att.w_xy.numel() + 1))
    for w in (att.w_x.weight, att.w_y.weight, att.w_xy):
        nn.init.uniform_(w, -limit, limit)
    nn.init.zeros_(att.bias)


def with_word_boundaries(chars: Tensor, begin: int, end: int) -> Tensor:
    """``chars`` (b, t, w) right-padded ids → (b, t, w + 2): each word's ids between ``begin``
    and ``end`` (allennlp's ``start_tokens``/``end_tokens``); padding words stay all 0."""
    lengths = (chars != 0).sum(-1, keepdim=True)  # (b, t, 1)
    out = F.pad(chars, (1, 1))  # (b, t, w + 2)
    real = lengths > 0  # (b, t, 1)
    out[..., :1] = torch.where(real, torch.full_like(lengths, begin), out[..., :1])
    return out.scatter(-1, lengths + 1, torch.where(real, torch.full_like(lengths, end), 0))


def init_char_cnn_(chars: CharCNNEncoder) -> None:
    """document-qa's char embedder, in place: embeddings U(±0.05) with a zero padding row
    (``LearnedCharEmbedder``); ``Conv1d``'s filter and bias have no initialiser, so TF's default
    ``glorot_uniform_initializer`` applies (filter fans ``width·in`` / ``width·out``, as
    ``xavier_uniform_``; the 1-D bias has fans ``n_filters``: U(±√(3 / n_filters)))."""
    nn.init.uniform_(chars.embedding.weight, -CHAR_EMBED_SCALE, CHAR_EMBED_SCALE)
    with torch.no_grad():
        chars.embedding.weight[0].zero_()
    nn.init.xavier_uniform_(chars.conv.weight)
    assert chars.conv.bias is not None
    bound = glorot_vector_limit(chars.conv.bias.numel())
    nn.init.uniform_(chars.conv.bias, -bound, bound)


class BiDAFSelfAttention(nn.Module):
    """Clark & Gardner's model; every width is computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: (vocab, word_dim) fixed word vectors (row 0 = padding, row 1 = unknown).
        n_chars: size of the character vocabulary.
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.
    """

    def __init__(
        self, config: SquadConfig, word_vectors: Tensor, n_chars: int, injector: Injector
    ) -> None:
        super().__init__()
        self.config, self.injector = config, injector
        if config.fill_missing_words:  # allennlp's embedding: N(mean, std) for the gaps
            word_vectors = fill_missing_vectors(word_vectors)
        self.words = nn.Embedding.from_pretrained(word_vectors, freeze=True, padding_idx=0)
        boundaries = config.char_cnn == "allennlp"  # two more ids: the word-boundary markers
        self.boundaries = (n_chars, n_chars + 1) if boundaries else None
        self.chars = CharCNNEncoder(
            n_chars + 2 * boundaries,
            config.char_dim,
            config.char_filters,
            config.char_width,
            max_chars=config.max_word_chars + 2 * boundaries,
            dropout=config.char_dropout if config.char_dropout_on == "chars" else 0.0,
            whole_windows=boundaries,
        )
        # DialogQA's character embedder drops the CNN's word vectors (plain dropout) instead
        self.char_word_drop = nn.Dropout(
            config.char_dropout if config.char_dropout_on == "words" else 0.0
        )
        h = config.hidden
        embed_dim = word_vectors.shape[1] + self.chars.output_dim + injector.extra_dim("input")
        self.drop = VariationalDropout(config.dropout)
        self.encoder = BiGRU(embed_dim, h)
        enc_dim = self.encoder.output_dim + injector.extra_dim("output")
        self.bi_attention = TrilinearAttention(enc_dim)
        self.attended = nn.Linear(4 * enc_dim, 2 * h)
        self.self_gru = BiGRU(2 * h, h)
        self.self_attention = TrilinearAttention(2 * h)
        # document-qa StaticAttentionSelf: learned "no-alignment-bias", initialised to -1 (absent
        # in DialogQA's self-attention: ``self_attention_null`` false)
        self.no_alignment = nn.Parameter(torch.tensor(-1.0)) if config.self_attention_null else None
        self.self_linear = nn.Linear(3 * 2 * h, 2 * h)
        self.start_gru = BiGRU(2 * h, h)
        self.start_out = nn.Linear(2 * h, 1)
        self.end_gru = BiGRU(2 * h + 2 * h, h)
        self.end_out = nn.Linear(2 * h, 1)
        # DialogQA (``constant_heads``): yes/no and follow-up logits from the end GRU's output
        self.quac_heads = nn.Linear(2 * h, 2 * QUAC_CLASSES) if config.constant_heads else None
        if config.init == "document-qa":
            self.init_like_document_qa()
        elif config.init == "allennlp":
            self.init_like_allennlp()

    def init_like_document_qa(self) -> None:
        """Re-draw every task parameter as document-qa initialises it (the fixed word vectors,
        the injector's mixes and the no-alignment logit −1 are left as they are); the draws
        come from torch's global generator, so a seed fixes them."""
        init_char_cnn_(self.chars)
        for gru in (self.encoder, self.self_gru, self.start_gru, self.end_gru):
            init_gru_(gru.gru)
        for att in (self.bi_attention, self.self_attention):
            init_trilinear_(att)
        for dense in (self.attended, self.self_linear, self.start_out, self.end_out):
            init_dense_(dense)

    def init_like_allennlp(self) -> None:
        """Re-draw the parameters whose allennlp modules draw them otherwise than PyTorch's
        defaults, as allennlp-models' DialogQA gets them (its configuration adds no
        initializer): the character embeddings Xavier uniform (allennlp ``Embedding``; the
        padding row zero, as allennlp's CNN masks it), with the fans of allennlp's
        :data:`ALLENNLP_CHAR_ROWS`-row byte embedding under ``char_cnn=allennlp`` (else of this
        vocabulary's rows), and both trilinear similarities
        (:func:`init_trilinear_like_allennlp_`). The GRUs and linear layers keep PyTorch's."""
        weight = self.chars.embedding.weight  # (rows, char_dim)
        rows = ALLENNLP_CHAR_ROWS if self.boundaries is not None else weight.shape[0]
        limit = math.sqrt(6.0 / (rows + weight.shape[1]))  # xavier_uniform_'s bound
        nn.init.uniform_(weight, -limit, limit)
        with torch.no_grad():
            weight[0].zero_()
        for att in (self.bi_attention, self.self_attention):
            init_trilinear_like_allennlp_(att)

    def constant_heads_loss(self, end_h: Tensor, gold_end: Tensor) -> Tensor:
        """DialogQA's two extra losses (``constant_heads``): the NLL of class 0 (every
        question's one label) for the yes/no and the follow-up head, each read from the end
        GRU's output at the gold end token. ``end_h`` (b, tc, 2h), ``gold_end`` (b,)."""
        assert self.quac_heads is not None
        at_end = end_h[torch.arange(end_h.shape[0], device=end_h.device), gold_end]  # (b, 2h)
        logits = self.quac_heads(at_end).view(-1, 2, QUAC_CLASSES)  # (b, 2, 3)
        nll = -F.log_softmax(logits, dim=-1)[..., 0]  # (b, 2): class 0 is every label
        return nll.mean(0).sum()

    def encode(self, words: Tensor, chars: Tensor, layers: Layers, mask: Tensor) -> Tensor:
        """Steps 1–2 for the question or the context: (b, t) ids → (b, t, enc_dim)."""
        injected = self.injector(layers)
        if self.boundaries is not None:
            chars = with_word_boundaries(chars, *self.boundaries)  # (b, t, chars + 2)
        char_words = self.char_word_drop(self.chars(chars))  # (b, t, filters)
        x = torch.cat([self.words(words), char_words], dim=-1)  # (b, t, word+char)
        x = self.injector.concat("input", x, injected)  # (b, t, embed_dim)
        h = self.drop(self.encoder(self.drop(x), mask))  # (b, t, 2h)
        # the output mix is appended after the dropout: it has only the injector's own dropout
        return self.injector.concat("output", h, injected)  # (b, t, enc_dim)

    def self_attention_weights(self, s: Tensor, mask: Tensor) -> Tensor:
        """Context-to-context attention (b, tc, tc): trilinear scores, no token attends to
        itself, and the learned no-alignment logit lets a token attend to nothing (rows may sum
        to less than 1). Source: document-qa ``StaticAttentionSelf``. Without the logit
        (``self_attention_null`` false, as DialogQA) each real row sums to 1."""
        eye = torch.eye(s.shape[1], dtype=torch.bool, device=s.device)[None]  # (1, tc, tc)
        keys = mask[:, None, :] & mask[:, :, None] & ~eye  # (b, tc, tc)
        if self.no_alignment is None:  # DialogQA: rows sum to 1 over the other tokens
            return masked_softmax(self.self_attention(s, s), keys)
        return masked_softmax_with_null(self.self_attention(s, s), keys, self.no_alignment)

    def forward(self, batch: SquadBatch) -> SquadOutput:
        """Span logits, best spans and (with gold spans) the loss."""
        c_mask, q_mask = batch.context_mask, batch.question_mask
        c = self.encode(batch.context_words, batch.context_chars, batch.context_layers, c_mask)
        if batch.context_index is not None:  # each paragraph encoded once, then repeated
            c, c_mask = c[batch.context_index], c_mask[batch.context_index]  # (b, tc, ·)
        q = self.encode(batch.question_words, batch.question_chars, batch.question_layers, q_mask)

        x = bi_attention(self.bi_attention(c, q), c, q, c_mask, q_mask)  # (b, tc, 4·enc)
        x = F.relu(self.attended(x))  # (b, tc, 2h)

        s_in = self.drop(x) if self.config.residual_input_dropout else x  # (b, tc, 2h)
        s = self.drop(self.self_gru(s_in, c_mask))  # (b, tc, 2h)
        attn = self.self_attention_weights(s, c_mask)  # (b, tc, tc)
        a = torch.bmm(attn, s)  # (b, tc, 2h)
        x = x + F.relu(self.self_linear(torch.cat([s, a, s * a], dim=-1)))  # residual (b, tc, 2h)
        x = self.drop(x)

        start_h = self.start_gru(x, c_mask)  # (b, tc, 2h)
        start_logits = self.start_out(start_h).squeeze(-1)  # (b, tc)
        end_h = self.end_gru(torch.cat([x, start_h], dim=-1), c_mask)  # (b, tc, 2h)
        end_logits = self.end_out(end_h).squeeze(-1)  # (b, tc)
        log_start = masked_log_softmax(start_logits, c_mask)
        log_end = masked_log_softmax(end_logits, c_mask)
        spans = best_spans(log_start, log_end, self.config.max_answer_tokens)
        loss = None
        if batch.spans is not None:
            loss = F.nll_loss(log_start, batch.spans[:, 0]) + F.nll_loss(log_end, batch.spans[:, 1])
            if self.quac_heads is not None:
                loss = loss + self.constant_heads_loss(end_h, batch.spans[:, 1])
        return SquadOutput(loss, spans, start_logits, end_logits)
