"""Layers shared by several task models: variational dropout, a masked bi-GRU, trilinear
attention scores, masked softmax (optionally with a learned "no alignment" option), a character
CNN word encoder, and :func:`run_rnn`, the one way task code calls a torch RNN."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from bilm.lstm import cpu_bf16_unit
from tasks.nn import packed_rnn

_Seq = TypeVar("_Seq", Tensor, PackedSequence)


class VariationalDropout(nn.Module):
    """Dropout with one mask per sequence, shared over time (Gal & Ghahramani 2016), as
    document-qa's ``VariationalDropoutLayer``. ``x``: (batch, time, dim)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1.0 - self.p)
        return x * keep / (1.0 - self.p)  # (batch, time, dim)


@cache
def _bf16_unit() -> bool:
    """Whether this CPU has a bf16 multiply unit (asked once)."""
    return cpu_bf16_unit() is not None


def run_rnn(rnn: Callable[[_Seq], tuple[_Seq, object]], x: _Seq) -> _Seq:
    """``rnn(x)[0]``; on the CPU under autocast, in bf16 where the CPU has a bf16 unit, else
    in float32, the output float32 either way.

    CPU autocast runs ``nn.LSTM``/``nn.GRU`` in bf16 through oneDNN, whose bf16 RNN primitive
    needs AVX-512-bf16 or AMX (:func:`bilm.lstm.cpu_bf16_unit`): without one it fails to
    build the training primitive (the coreference and SRL ``paper`` presets did), so the RNN
    runs in float32 there. With one, the bf16 RNN is where bf16 training gains on the
    recurrent models (a BCN-sized biLSTM's forward and backward about 1.8× faster than
    float32 on an AMD EPYC with AVX-512-bf16). On CUDA autocast is left as it is.

    A packed sequence on the CPU, while autograd records, runs through
    :func:`tasks.nn.packed_rnn.packed_rnn`: torch's own operations, bitwise, without the
    per-step full-size gradients of its C++ loop's backward.

    Args:
        rnn: an ``nn.RNNBase`` (or a callable with its signature, e.g. a ``functional_call``).
        x: ``(batch, time, in)`` batch-first tensor or a packed sequence.

    Returns:
        The output sequence, same kind as ``x``.
    """
    if x.data.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        if torch.get_autocast_dtype("cpu") == torch.bfloat16 and _bf16_unit():
            return _output(rnn, x).float()
        with torch.autocast("cpu", enabled=False):
            return _output(rnn, x.float())
    return _output(rnn, x)


def _output(rnn: Callable[[_Seq], tuple[_Seq, object]], x: _Seq) -> _Seq:
    """``rnn(x)[0]``; a packed CPU sequence in training through
    :func:`tasks.nn.packed_rnn.packed_rnn` (bitwise the same, backward in linear time)."""
    if packed_rnn.applies(rnn, x):
        return packed_rnn.packed_rnn(rnn, x)  # type: ignore[arg-type,return-value]
    return rnn(x)[0]


def run_packed(rnn: nn.RNNBase, x: Tensor, mask: Tensor) -> Tensor:
    """A batch-first bidirectional RNN over right-padded sequences, packed so that padding
    never leaks into real positions: ``x`` (batch, time, in), ``mask`` (batch, time) →
    (batch, time, 2·hidden), 0 at padded positions."""
    lengths = mask.sum(1).clamp_min(1).cpu()
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = nn.utils.rnn.pad_packed_sequence(
        run_rnn(rnn, packed), batch_first=True, total_length=x.shape[1]
    )
    return out * mask[:, :, None]  # (batch, time, 2·hidden)


class BiGRU(nn.Module):
    """A one-layer bidirectional GRU over right-padded sequences (:func:`run_packed`)."""

    def __init__(self, input_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.gru = nn.GRU(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.output_dim = 2 * hidden_dim

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) → (batch, time, 2·hidden); 0 at pads."""
        return run_packed(self.gru, x, mask)


class BiLSTM(nn.Module):
    """A one-layer bidirectional LSTM over right-padded sequences (:func:`run_packed`)."""

    def __init__(self, input_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.output_dim = 2 * hidden_dim

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) → (batch, time, 2·hidden); 0 at pads."""
        return run_packed(self.lstm, x, mask)


class TrilinearAttention(nn.Module):
    """Similarity ``s_ij = w·[x_i; y_j; x_i∘y_j] + b`` (Seo et al. 2017, BiDAF)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.w_x = nn.Linear(dim, 1, bias=False)
        self.w_y = nn.Linear(dim, 1, bias=False)
        self.w_xy = nn.Parameter(torch.empty(dim).uniform_(-(dim**-0.5), dim**-0.5))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        """``x`` (batch, n, d), ``y`` (batch, m, d) → scores (batch, n, m)."""
        cross = torch.bmm(x * self.w_xy, y.transpose(1, 2))  # (batch, n, m)
        return cross + self.w_x(x) + self.w_y(y).transpose(1, 2) + self.bias


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` with masked positions at probability 0 (all-masked rows give 0)."""
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return F.softmax(scores, dim=dim) * mask


def masked_log_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Log-softmax over the last dim, masked positions at a very low value."""
    return F.log_softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)


def masked_softmax_with_null(scores: Tensor, mask: Tensor, null_logit: Tensor) -> Tensor:
    """Attention weights that may sum to less than 1: a softmax over the unmasked keys and one
    extra learned "no alignment" logit, whose probability is dropped.

    ``p_ij = exp(s_ij) / (Σ_k exp(s_ik) + exp(null_logit))`` over keys with ``mask`` true, 0
    elsewhere; a query whose every key is masked gets all zeros. Source: document-qa
    ``StaticAttentionSelf(alignment_bias=True)`` ("allow zero-attention by adding a learned bias
    to the normalizer"), computed stably as a softmax over ``[scores; null_logit]``.

    Args:
        scores: (..., keys) attention scores.
        mask: broadcastable to ``scores``; true where a key may be attended.
        null_logit: 0-dim learned logit (document-qa: ``no-alignment-bias``, initialised -1).
    """
    scores = scores.masked_fill(~mask, float("-inf"))
    null = null_logit.to(scores.dtype).expand(*scores.shape[:-1], 1)
    probs = F.softmax(torch.cat([scores, null], dim=-1), dim=-1)  # (..., keys + 1)
    return probs[..., :-1] * mask  # (..., keys)


class CharCNNEncoder(nn.Module):
    """Words as max-pooled convolutions over their character embeddings (Kim 2014; BiDAF), as
    document-qa's ``CharWordEmbedder(LearnedCharEmbedder, MaxPool(Conv1d(filters, width, 0.8)))``:

    * dropout (element-wise, rate ``dropout``) on the character embeddings before the convolution
      (document-qa ``Conv1d(keep_probs=0.8)``);
    * a VALID convolution (no padding) + bias + ReLU over the word truncated/padded to
      ``max(max_chars, width)`` characters (document-qa: ``max_char_dim = word_size_th`` 14);
    * max-pooling over the windows that start on a real character (document-qa's ``MaxPool``
      masks conv positions ``i ≥ word length``; as ReLU outputs are ≥ 0, masked windows are
      set to 0), so windows of padding never win and padding tokens (no characters) give 0.

    Words shorter than ``width`` are padded to the width (zero pad embeddings). The input's own
    char-axis length does not matter: it is cut/padded to ``max(max_chars, width)``.

    With ``whole_windows`` the encoder is allennlp's ``CnnEncoder`` over its
    ``TokenCharactersIndexer`` instead (allennlp v2.10.1 ``modules/seq2vec_encoders/
    cnn_encoder.py``): every word is padded to the batch's longest word (at least ``width``)
    and the max runs over the windows that lie wholly inside the word (it masks a window
    starting at ``i > length − width``); a word shorter than ``width`` has no such window and,
    like a padding word, gives 0.
    """

    def __init__(
        self,
        n_chars: int,
        char_dim: int,
        n_filters: int,
        width: int,
        max_chars: int,
        dropout: float = 0.0,
        whole_windows: bool = False,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, n_filters, width)  # VALID: no padding
        self.dropout = nn.Dropout(dropout)
        self.width, self.max_chars = width, max_chars
        self.whole_windows = whole_windows
        self.output_dim = n_filters

    def forward(self, chars: Tensor) -> Tensor:
        """``chars`` (batch, time, word_len) ids, right-padded with 0 → (batch, time, n_filters).

        Without dropout (in evaluation, and in training at rate 0) only the real words are
        encoded, over the windows any of them can have (:meth:`_encode_words`): bitwise the
        numbers of the full fixed-span computation at a fraction of its cost when a batch is
        padded (a third of the NER tagger's embedding time under random batches,
        tasks/ner/README.md);
        the gradients are the same function, summed in another order (they differ in the last
        bits). Training with dropout keeps the full computation: its masks are drawn over the
        fixed span.
        """
        b, t, w = chars.shape
        chars = chars[:, :, : self.max_chars]
        if self.whole_windows:
            return self._encode_batch_padded(chars.reshape(b * t, -1)).view(b, t, -1)
        span = max(self.max_chars, self.width)
        if not self.training or self.dropout.p == 0.0:
            return self._encode_words(chars.reshape(b * t, -1), span).view(b, t, -1)
        chars = F.pad(chars, (0, span - chars.shape[2]))  # (b, t, span)
        lengths = (chars != 0).sum(-1).view(b * t, 1)  # real characters per word
        x = self.dropout(self.embedding(chars.view(b * t, span)))  # (b·t, span, char_dim)
        return self._pool(x, lengths).view(b, t, -1)

    def _pool(self, x: Tensor, lengths: Tensor) -> Tensor:
        """Convolution, ReLU and the max over windows that start on a character: ``x``
        (words, span, char_dim) embedded characters, ``lengths`` (words, 1) → (words, filters)."""
        x = F.relu(self.conv(x.transpose(1, 2)))  # (words, n_filters, span - width + 1)
        starts = torch.arange(x.shape[2], device=x.device)[None, :]  # window start positions
        keep = (starts < lengths)[:, None, :]  # (words, 1, windows): windows starting on a char
        return (x * keep).max(dim=2).values  # (words, n_filters); all-masked words give 0

    def _encode_batch_padded(self, chars: Tensor) -> Tensor:
        """allennlp's ``CnnEncoder``: ``chars`` (words, len) padded to the longest word (at least
        ``width``), the max over the windows wholly inside each word; a word shorter than the
        width and a padding word give 0. → (words, filters)."""
        lengths = (chars != 0).sum(-1)  # (words,)
        longest = max(self.width, int(lengths.max()) if lengths.numel() else 0)
        chars = F.pad(chars[:, :longest], (0, longest - min(longest, chars.shape[1])))
        x = self.dropout(self.embedding(chars))  # (words, longest, char_dim); pad rows are 0
        windows = F.relu(self.conv(x.transpose(1, 2)))  # (words, filters, longest - width + 1)
        starts = torch.arange(windows.shape[2], device=chars.device)  # (n_windows,)
        inside = starts[None, :] <= (lengths - self.width)[:, None]  # (words, n_windows)
        # ReLU outputs are >= 0: a masked window set to 0 never beats an inside one, and a word
        # without any inside window gets 0, as allennlp's minimum value replaced by 0
        return windows.masked_fill(~inside[:, None, :], 0.0).max(dim=2).values  # (words, filters)

    def _encode_words(self, chars: Tensor, span: int) -> Tensor:
        """The real words of ``chars`` (words, ≤ span) alone, their characters cut to the
        longest word plus ``width - 1`` (at most ``span``): every window that starts on a
        character of a word of the batch is there, as in the fixed span; padding words give 0.
        """
        lengths = (chars != 0).sum(-1)  # (words,)
        out = chars.new_zeros(chars.shape[0], self.output_dim, dtype=self.conv.weight.dtype)
        real = lengths.nonzero().squeeze(1)  # (real words,)
        if real.numel() == 0:
            return out
        longest = int(lengths.max())
        cut = max(self.width, min(span, longest + self.width - 1))
        words = F.pad(chars[real, :longest], (0, cut - longest))  # (real, cut)
        x = self.embedding(words)  # (real, cut, char_dim); the pad row is 0
        pooled = self._pool(x, lengths[real, None])  # (real, n_filters)
        return out.index_copy(0, real, pooled.to(out.dtype))
