"""Interpolated Kneser-Ney trigram language model: the n-gram baseline of the biLM benchmark.

The model is interpolated Kneser-Ney with one absolute discount per order (Chen & Goodman 1998,
"An Empirical Study of Smoothing Techniques for Language Modeling", TR-10-98, §3 eq. 18 and
§4.1.6 / Kneser & Ney 1995)::

    P3(w | u v) = [max(c(u v w) − D3, 0) + D3 · N1+(u v •) · P2(w | v)] / c(u v •)
    P2(w | v)   = [max(a(v w) − D2, 0)   + D2 · N1+(v •)   · P1(w)]     / a(v •)
    P1(w)       = [max(a(w) − D1, 0)     + D1 · N1+(•)     / |V|]       / a(•)

``c`` are raw counts; the lower orders use *continuation* counts ``a(v w) = N1+(• v w)`` (the
number of distinct words seen before ``v w``) and ``a(w) = N1+(• w)``. An n-gram that begins
with the sentence-start boundary cannot be extended to the left, so its raw count is used
instead (as KenLM does); the start boundary itself is never predicted and gets only the uniform
share at the unigram level. ``N1+(ctx •)`` is the number of distinct words that follow ``ctx``
(with a non-zero count at that order) and ``a(v •) = Σ_w a(v w)``. An unseen context falls back
to the next lower order. The discount of each order is ``D = n1 / (n1 + 2 n2)`` (Ney, Essen &
Kneser 1994), ``n1``/``n2`` the numbers of n-grams whose (raw or continuation) count at that
order is 1/2; 0.5 when ``n1 = 0``.

Events are exactly the targets our biLM predicts per direction: a sentence ``w1 … wn`` is
``<S> w1 … wn </S>`` forward (predict ``w1 … wn </S>``; ``w1`` has the one-word context ``<S>``)
and ``</S> wn … w1 <S>`` backward (``reverse=True``). Contexts never cross sentence boundaries.
Words outside the given :class:`~bilm.vocab.Vocabulary` become ``<UNK>``.

Counts are kept as sorted ``int64`` codes of id tuples (``(u·V + v)·V + w``) in numpy arrays, so
fitting the 2.3 M-token training corpus takes a few tens of MB.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence

import numpy as np

from bilm.vocab import Vocabulary

__all__ = ["KneserNeyTrigram", "perplexity"]


def _discount(counts: np.ndarray) -> float:
    """Absolute discount ``n1 / (n1 + 2 n2)`` of one order (0.5 when no count is 1)."""
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    return n1 / (n1 + 2 * n2) if n1 > 0 else 0.5


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values[i]`` where ``keys[i] == query`` (keys sorted, unique), else 0."""
    if keys.size == 0:
        return np.zeros(query.shape, dtype=values.dtype)
    pos = np.searchsorted(keys, query)
    pos = np.minimum(pos, keys.size - 1)
    found = keys[pos] == query
    return np.where(found, values[pos], 0)


def _group_sum(keys: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique keys, the sum of ``weights`` per key and the number of entries per key."""
    unique, inverse, number = np.unique(keys, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=weights, minlength=unique.size).astype(np.int64)
    return unique, sums, number.astype(np.int64)


class KneserNeyTrigram:
    """An interpolated Kneser-Ney trigram model over a fixed vocabulary (see the module doc).

    Build one with :meth:`fit`; :meth:`logprob` / :meth:`logprobs` give natural-log
    probabilities that sum to 1 over the vocabulary for every context.

    Attributes:
        vocab_size: ``|V|``, the size of the vocabulary.
        start_id: the boundary every sentence starts with (``<S>``; ``</S>`` when ``reverse``).
        end_id: the boundary predicted after the last word (``</S>``; ``<S>`` when ``reverse``).
        reverse: whether the model reads sentences right to left (the backward LM).
        discounts: ``(D1, D2, D3)``, the absolute discounts of the three orders.
        sentences: number of training sentences.
        tokens: number of training events (words + one final boundary per sentence).
    """

    def __init__(self) -> None:
        """Use :meth:`fit`; the constructor only declares the (empty) count tables."""
        self.vocab_size = 0
        self.start_id = self.end_id = 0
        self.reverse = False
        self.discounts = (0.5, 0.5, 0.5)
        self.sentences = self.tokens = 0
        empty = np.zeros(0, dtype=np.int64)
        # Order 3: raw counts c(uvw), and per context uv: c(uv•), N1+(uv•).
        self._tri_keys, self._tri_counts = empty, empty
        self._ctx2_keys, self._ctx2_sum, self._ctx2_types = empty, empty, empty
        # Order 2: adjusted counts a(vw), and per context v: a(v•), N1+(v•) (dense, size V).
        self._bi_keys, self._bi_counts = empty, empty
        self._ctx1_sum, self._ctx1_types = empty, empty
        # Order 1: adjusted counts a(w) (dense, size V).
        self._uni_counts = empty
        self._uni_total = 0
        self._uni_types = 0

    # ------------------------------------------------------------------------------ training
    @classmethod
    def fit(
        cls, sentences: Iterable[Sequence[str]], vocab: Vocabulary, *, reverse: bool = False
    ) -> KneserNeyTrigram:
        """Count a stream of tokenized sentences and estimate the model.

        Args:
            sentences: token lists, one per sentence, without boundary tokens (e.g.
                :func:`bilm.lm_data.read_sentences`); consumed once, never held in memory.
            vocab: the vocabulary (out-of-vocabulary words count as ``<UNK>``).
            reverse: read sentences right to left (``</S> wn … w1 <S>``): the backward LM.

        Returns:
            The fitted model.

        Raises:
            ValueError: no sentence, or a vocabulary too large for 64-bit trigram codes.
        """
        model = cls()
        V = len(vocab)
        if V**3 >= 2**63:
            raise ValueError(f"vocabulary of {V} words is too large for int64 trigram codes")
        model.vocab_size, model.reverse = V, reverse
        start, end = (vocab.eos_id, vocab.bos_id) if reverse else (vocab.bos_id, vocab.eos_id)
        model.start_id, model.end_id = start, end
        VV = V * V
        tri = array("q")  # codes (u·V + v)·V + w of every trigram event
        first = array("q")  # codes start·V + w1 of every sentence's first event
        n_sentences = n_tokens = 0
        for tokens in sentences:
            ids = vocab.encode(reversed(tokens) if reverse else tokens)
            ids.append(end)
            n_sentences += 1
            n_tokens += len(ids)
            first.append(start * V + ids[0])
            u, v = start, ids[0]
            for w in ids[1:]:
                tri.append(u * VV + v * V + w)
                u, v = v, w
        if n_sentences == 0:
            raise ValueError("no training sentences")
        model.sentences, model.tokens = n_sentences, n_tokens
        model._estimate(np.frombuffer(tri, dtype=np.int64), np.frombuffer(first, dtype=np.int64))
        return model

    def _estimate(self, tri_events: np.ndarray, first_events: np.ndarray) -> None:
        V = self.vocab_size
        # Order 3: raw counts.
        self._tri_keys, counts = np.unique(tri_events, return_counts=True)
        self._tri_counts = counts.astype(np.int64)
        d3 = _discount(self._tri_counts)
        self._ctx2_keys, self._ctx2_sum, self._ctx2_types = _group_sum(
            self._tri_keys // V, self._tri_counts
        )
        # Order 2: continuation counts a(vw) = N1+(• v w) (each trigram type adds one to its
        # suffix), plus the raw counts of the bigrams that start a sentence (no left context).
        suffixes = self._tri_keys % (V * V)
        first_keys, first_counts = np.unique(first_events, return_counts=True)
        keys = np.concatenate([suffixes, first_keys])
        weights = np.concatenate([np.ones(suffixes.size, dtype=np.int64), first_counts])
        self._bi_keys, self._bi_counts, _ = _group_sum(keys, weights)
        d2 = _discount(self._bi_counts)
        bi_ctx = self._bi_keys // V
        self._ctx1_sum = np.bincount(bi_ctx, weights=self._bi_counts, minlength=V).astype(np.int64)
        self._ctx1_types = np.bincount(bi_ctx, minlength=V).astype(np.int64)
        # Order 1: continuation counts a(w) = N1+(• w) over bigram types.
        self._uni_counts = np.bincount(self._bi_keys % V, minlength=V).astype(np.int64)
        self._uni_counts[self.start_id] = 0  # never predicted (cannot follow anything)
        d1 = _discount(self._uni_counts[self._uni_counts > 0])
        self._uni_total = int(self._uni_counts.sum())
        self._uni_types = int(np.count_nonzero(self._uni_counts))
        self.discounts = (d1, d2, d3)

    # ------------------------------------------------------------------------------- scoring
    def _p1(self, w: np.ndarray) -> np.ndarray:
        d1 = self.discounts[0]
        a = self._uni_counts[w].astype(np.float64)
        uniform = d1 * self._uni_types / self.vocab_size
        return (np.maximum(a - d1, 0.0) + uniform) / self._uni_total

    def _p2(self, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        d2 = self.discounts[1]
        lower = self._p1(w)
        total = self._ctx1_sum[v].astype(np.float64)
        types = self._ctx1_types[v].astype(np.float64)
        a = _lookup(self._bi_keys, self._bi_counts, v * self.vocab_size + w).astype(np.float64)
        seen = total > 0
        safe = np.where(seen, total, 1.0)
        mixed = (np.maximum(a - d2, 0.0) + d2 * types * lower) / safe
        return np.where(seen, mixed, lower)

    def _p3(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        d3 = self.discounts[2]
        V = self.vocab_size
        lower = self._p2(v, w)
        ctx = u * V + v
        total = _lookup(self._ctx2_keys, self._ctx2_sum, ctx).astype(np.float64)
        types = _lookup(self._ctx2_keys, self._ctx2_types, ctx).astype(np.float64)
        c = _lookup(self._tri_keys, self._tri_counts, ctx * V + w).astype(np.float64)
        seen = total > 0
        safe = np.where(seen, total, 1.0)
        mixed = (np.maximum(c - d3, 0.0) + d3 * types * lower) / safe
        return np.where(seen, mixed, lower)

    def logprobs(self, words: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Natural-log probabilities of many events at once.

        Args:
            words: ``(N,)`` predicted word ids.
            u: ``(N,)`` the word two back, or ``-1`` for a one-word context (``v`` only).
            v: ``(N,)`` the previous word, or ``-1`` for an empty context (then ``u`` is ``-1``).

        Returns:
            ``(N,)`` float64 ``log P(word | u v)``.
        """
        w = np.asarray(words, dtype=np.int64)
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        if self.vocab_size == 0:
            raise ValueError("the model is not fitted (use KneserNeyTrigram.fit)")
        if w.size and (w.min() < 0 or w.max() >= self.vocab_size):
            raise ValueError(f"word ids must lie in [0, {self.vocab_size})")
        out = np.empty(w.shape, dtype=np.float64)
        has3 = u >= 0
        has2 = (v >= 0) & ~has3
        has1 = ~(has3 | has2)
        out[has3] = self._p3(u[has3], v[has3], w[has3])
        out[has2] = self._p2(v[has2], w[has2])
        out[has1] = self._p1(w[has1])
        return np.log(out)

    def logprob(self, word_id: int, context_ids: Sequence[int]) -> float:
        """Natural-log probability of ``word_id`` after ``context_ids``.

        Args:
            word_id: the predicted word.
            context_ids: the preceding ids, starting at the start boundary (``<S>`` forward,
                ``</S>`` backward); only the last two are used. Empty: the unigram level.

        Returns:
            ``log P(word | context)``.
        """
        u = context_ids[-2] if len(context_ids) >= 2 else -1
        v = context_ids[-1] if len(context_ids) >= 1 else -1
        return float(self.logprobs(np.array([word_id]), np.array([u]), np.array([v]))[0])


def perplexity(
    model: KneserNeyTrigram,
    sentences: Iterable[Sequence[str]],
    vocab: Vocabulary,
    reverse: bool = False,
    chunk: int = 200_000,
) -> dict[str, float]:
    """Per-token perplexity of ``model`` on tokenized sentences (streaming).

    Every word and the final boundary of every sentence is scored, the first word with the
    start boundary as its context: the targets of one direction of the biLM.

    Args:
        model: a fitted :class:`KneserNeyTrigram`.
        sentences: token lists, one per sentence, without boundary tokens.
        vocab: the vocabulary the model was fitted with (OOV words score as ``<UNK>``).
        reverse: score right to left; must match the direction the model was fitted in.
        chunk: events scored per vectorised batch (bounds memory).

    Returns:
        ``perplexity`` (``exp`` of the mean negative log-likelihood), ``tokens`` (events scored)
        and ``unk`` (how many of them were ``<UNK>``).

    Raises:
        ValueError: ``reverse`` differs from the model's direction, the vocabulary has another
            size, or there is nothing to score.
    """
    if reverse != model.reverse:
        raise ValueError(f"model was fitted with reverse={model.reverse}, asked reverse={reverse}")
    if len(vocab) != model.vocab_size:
        raise ValueError(f"vocabulary has {len(vocab)} words, the model {model.vocab_size}")
    start, end = model.start_id, model.end_id
    nll, count, unk = 0.0, 0, 0
    us, vs, ws = array("q"), array("q"), array("q")

    def flush() -> float:
        if not ws:
            return 0.0
        lp = model.logprobs(np.array(ws), np.array(us), np.array(vs))  # copies
        del us[:], vs[:], ws[:]
        return -float(lp.sum())

    for tokens in sentences:
        ids = vocab.encode(reversed(tokens) if reverse else tokens)
        ids.append(end)
        unk += ids.count(vocab.unk_id)
        u, v = -1, start  # the first word has only the start boundary as context
        for w in ids:
            us.append(u)
            vs.append(v)
            ws.append(w)
            u, v = v, w
        count += len(ids)
        if len(ws) >= chunk:
            nll += flush()
    nll += flush()
    if count == 0:
        raise ValueError("no sentences to score")
    return {"perplexity": math.exp(nll / count), "tokens": count, "unk": unk}
