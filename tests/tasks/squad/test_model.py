"""The SQuAD model (BiDAF + self-attention) on a tiny configuration: span decoding, shapes, masks,
gradients and ELMo injection widths."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
import torch
from torch import nn

from tasks.common.inject import Injector
from tasks.common.layers import masked_log_softmax
from tasks.representations import Layers, build_representation
from tasks.squad.config import SquadConfig
from tasks.squad.model import BiDAFSelfAttention, SquadBatch, best_spans

CONFIG = dataclasses.replace(
    SquadConfig(),
    char_dim=4,
    char_filters=6,
    char_width=3,
    max_word_chars=5,
    hidden=5,
    dropout=0.2,
    max_answer_tokens=3,
)
VOCAB, WORD_DIM, N_CHARS = 15, 7, 11
C_LENGTHS, Q_LENGTHS = [7, 4, 1], [3, 5, 2]


class FakeRepresentation:
    """A frozen representation of ``num_layers`` layers of width ``output_dim`` (never called)."""

    name, output_dim, num_layers, trainable = "fake", 3, 2, False

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"

    def to(self, device: object) -> FakeRepresentation:
        return self


def _vectors() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=g)
    vectors[0] = 0.0
    return vectors


def _model(sites: frozenset[str] = frozenset(), seed: int = 0) -> BiDAFSelfAttention:
    torch.manual_seed(seed)
    rep = FakeRepresentation() if sites else build_representation("none")
    injector = Injector(rep, sites, dropout=0.0)
    return BiDAFSelfAttention(CONFIG, _vectors(), N_CHARS, injector)


def _mask(lengths: list[int]) -> torch.Tensor:
    return torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]


def _tokens(lengths: list[int], g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Word ids (0 at pads) and char ids (words of 1..max_word_chars chars, 0 at pads)."""
    mask = _mask(lengths)
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    chars = torch.randint(1, N_CHARS, (*mask.shape, CONFIG.max_word_chars), generator=g)
    n_chars = torch.randint(1, CONFIG.max_word_chars + 1, mask.shape, generator=g)
    char_mask = torch.arange(CONFIG.max_word_chars)[None, None, :] < n_chars[:, :, None]
    return words, chars * (char_mask & mask[:, :, None])


def _layers(lengths: list[int], g: torch.Generator) -> Layers:
    mask = _mask(lengths)
    rep = FakeRepresentation
    tensors = torch.randn(rep.num_layers, *mask.shape, rep.output_dim, generator=g)
    return Layers(tensors * mask[None, :, :, None], mask)  # exactly 0 at pads


def _batch(seed: int = 0, layers: bool = False, spans: bool = True) -> SquadBatch:
    g = torch.Generator().manual_seed(seed)
    cw, cc = _tokens(C_LENGTHS, g)
    qw, qc = _tokens(Q_LENGTHS, g)
    gold = None
    if spans:
        starts = [int(torch.randint(0, n, (1,), generator=g)) for n in C_LENGTHS]
        gold = torch.tensor(
            [[s, min(s + 1, n - 1)] for s, n in zip(starts, C_LENGTHS, strict=True)]
        )
    return SquadBatch(
        cw,
        cc,
        _mask(C_LENGTHS),
        qw,
        qc,
        _mask(Q_LENGTHS),
        gold,
        _layers(C_LENGTHS, g) if layers else None,
        _layers(Q_LENGTHS, g) if layers else None,
    )


def _example(batch: SquadBatch, b: int) -> SquadBatch:
    """Example ``b`` of ``batch`` alone, without padding."""
    nc, nq = C_LENGTHS[b], Q_LENGTHS[b]

    def cut(layers: Layers | None, n: int) -> Layers | None:
        if layers is None:
            return None
        return Layers(layers.tensors[:, b : b + 1, :n], layers.mask[b : b + 1, :n])

    return SquadBatch(
        batch.context_words[b : b + 1, :nc],
        batch.context_chars[b : b + 1, :nc],
        batch.context_mask[b : b + 1, :nc],
        batch.question_words[b : b + 1, :nq],
        batch.question_chars[b : b + 1, :nq],
        batch.question_mask[b : b + 1, :nq],
        None if batch.spans is None else batch.spans[b : b + 1],
        cut(batch.context_layers, nc),
        cut(batch.question_layers, nq),
    )


# ---------------------------------------------------------------------------------- best_spans
def _brute_force(start: torch.Tensor, end: torch.Tensor, max_len: int) -> list[float]:
    best = []
    for b in range(start.shape[0]):
        t = start.shape[1]
        scores = [
            float(start[b, i] + end[b, j]) for i in range(t) for j in range(i, min(t, i + max_len))
        ]
        best.append(max(scores))
    return best


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("time", "max_len"), [(6, 1), (6, 3), (5, 5), (5, 9), (1, 1), (1, 4)])
def test_best_spans_matches_brute_force(seed: int, time: int, max_len: int) -> None:
    g = torch.Generator().manual_seed(seed)
    start, end = torch.randn(4, time, generator=g), torch.randn(4, time, generator=g)
    spans = best_spans(start, end, max_len)
    assert spans.shape == (4, 2) and spans.dtype == torch.long
    s, e = spans[:, 0], spans[:, 1]
    assert ((s <= e) & (e < s + max_len) & (e < time)).all()
    got = (start.gather(1, s[:, None]) + end.gather(1, e[:, None]))[:, 0]
    torch.testing.assert_close(got, torch.tensor(_brute_force(start, end, max_len)))


def test_best_spans_hand_cases() -> None:
    start, end = torch.tensor([[0.0, 1.0, 9.0]]), torch.tensor([[9.0, 0.0, 2.0]])
    assert best_spans(start, end, 3).tolist() == [[2, 2]]  # not (2, 0): end before start
    start, end = torch.tensor([[0.0, 5.0, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 1.0, 5.0]])
    assert best_spans(start, end, 2).tolist() == [[1, 2]]  # not (1, 3): 3 tokens > max_len 2
    assert best_spans(start, end, 3).tolist() == [[1, 3]]


@pytest.mark.parametrize("seed", range(3))
def test_best_spans_never_picks_padding(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    lengths = [5, 2, 1]
    mask = _mask(lengths)
    start = torch.randn(3, 5, generator=g).masked_fill(~mask, 100.0)  # pads score high...
    end = torch.randn(3, 5, generator=g).masked_fill(~mask, 100.0)
    spans = best_spans(masked_log_softmax(start, mask), masked_log_softmax(end, mask), 4)
    for (s, e), n in zip(spans.tolist(), lengths, strict=True):
        assert 0 <= s <= e < n  # ...but never win once masked


# -------------------------------------------------------------------------------- the model
def test_forward_shapes_and_loss() -> None:
    model = _model().eval()
    out = model(_batch())
    tc = max(C_LENGTHS)
    assert out.start_logits.shape == out.end_logits.shape == (3, tc)
    assert out.spans.shape == (3, 2) and out.spans.dtype == torch.long
    assert out.loss is not None and out.loss.dim() == 0 and torch.isfinite(out.loss)
    for (s, e), n in zip(out.spans.tolist(), C_LENGTHS, strict=True):
        assert 0 <= s <= e < n and e - s < CONFIG.max_answer_tokens
    assert out.spans[2].tolist() == [0, 0]  # a one-token context
    assert model(_batch(spans=False)).loss is None


def _noise_padding(
    words: torch.Tensor, chars: torch.Tensor, pad: torch.Tensor, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """``words`` and ``chars`` with random ids at the ``pad`` positions (words drawn first)."""
    return (
        torch.where(pad, torch.randint(1, VOCAB, pad.shape, generator=g), 0) + words,
        torch.where(pad[:, :, None], torch.randint(1, N_CHARS, chars.shape, generator=g), chars),
    )


def test_padding_does_not_change_real_positions() -> None:
    model = _model(frozenset({"input", "output"})).eval()
    batch = _batch(seed=1, layers=True)
    out = model(batch)
    g = torch.Generator().manual_seed(99)
    context_words, context_chars = _noise_padding(
        batch.context_words, batch.context_chars, ~batch.context_mask, g
    )
    question_words, question_chars = _noise_padding(
        batch.question_words, batch.question_chars, ~batch.question_mask, g
    )
    noisy = dataclasses.replace(
        batch,
        context_words=context_words,
        context_chars=context_chars,
        question_words=question_words,
        question_chars=question_chars,
    )
    assert not torch.equal(noisy.context_words, batch.context_words)
    assert not torch.equal(noisy.question_chars, batch.question_chars)
    again = model(noisy)
    torch.testing.assert_close(again.loss, out.loss)
    assert torch.equal(again.spans, out.spans)
    m = batch.context_mask
    torch.testing.assert_close(again.start_logits[m], out.start_logits[m])
    torch.testing.assert_close(again.end_logits[m], out.end_logits[m])


def test_each_example_scores_as_if_alone() -> None:
    model = _model(frozenset({"input", "output"})).eval()
    batch = _batch(seed=2, layers=True)
    out = model(batch)
    for b, n in enumerate(C_LENGTHS):
        alone = model(_example(batch, b))
        torch.testing.assert_close(alone.start_logits[0], out.start_logits[b, :n])
        torch.testing.assert_close(alone.end_logits[0], out.end_logits[b, :n])
        assert alone.spans[0].tolist() == out.spans[b].tolist()


class _PadsHighest(nn.Module):
    """Scores ``-‖h‖₁``: 0 at padded positions (the GRUs output 0 there), negative elsewhere."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return -h.abs().sum(-1, keepdim=True)


def test_padded_positions_never_win() -> None:
    model = _model().eval()
    model.start_out, model.end_out = _PadsHighest(), _PadsHighest()
    batch = _batch(seed=3)
    out = model(batch)
    pads = ~batch.context_mask
    for logits in (out.start_logits, out.end_logits):  # unmasked, the pads would win
        assert (logits[pads] == 0).all() and (logits[batch.context_mask] < 0).all()
    for (s, e), n in zip(out.spans.tolist(), C_LENGTHS, strict=True):
        assert 0 <= s <= e < n


def test_backward_reaches_every_trainable_parameter() -> None:
    model = _model(frozenset({"input", "output"}), seed=1).train()
    torch.manual_seed(0)
    out = model(_batch(seed=4, layers=True))
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    assert "words.weight" not in trainable  # fixed word vectors
    assert {"injector.mixes.input.weights", "injector.mixes.output.gamma"} <= set(trainable)
    # softmax is invariant to a constant per row: the biases of the similarity and of the span
    # scorers, and the query term w_x·x_i of self-attention, get a zero gradient (up to rounding);
    # every other parameter learns
    invariant = {
        "bi_attention.bias",
        "self_attention.bias",
        "self_attention.w_x.weight",
        "start_out.bias",
        "end_out.bias",
    }
    for name, p in trainable.items():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all(), name
        if name in invariant:
            assert p.grad.abs().max() < 1e-6, name
        else:
            assert p.grad.abs().sum() > 0, name


def test_injection_widens_the_model_inputs() -> None:
    rep = FakeRepresentation()
    base = _model()
    both = _model(frozenset({"input", "output"}))
    only_input = _model(frozenset({"input"}))
    h, extra = CONFIG.hidden, rep.output_dim
    embed = WORD_DIM + CONFIG.char_filters
    assert base.encoder.gru.input_size == embed
    assert both.encoder.gru.input_size == embed + extra
    assert only_input.encoder.gru.input_size == embed + extra
    assert base.bi_attention.w_x.in_features == 2 * h
    assert both.bi_attention.w_x.in_features == 2 * h + extra
    assert only_input.bi_attention.w_x.in_features == 2 * h
    assert both.attended.in_features == 4 * (2 * h + extra)
    assert both.self_gru.gru.input_size == base.self_gru.gru.input_size == 2 * h
    out = both.eval()(_batch(layers=True))
    assert out.start_logits.shape == (3, max(C_LENGTHS))
