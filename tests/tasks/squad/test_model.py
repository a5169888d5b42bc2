"""The SQuAD model (BiDAF + self-attention) on a tiny configuration: span decoding, shapes, masks,
gradients and ELMo injection widths."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
import torch
from torch import nn

from tasks.features.inject import Injector
from tasks.nn.layers import masked_log_softmax
from tasks.representations import Layers, build_representation
from tasks.squad.config import SquadConfig
from tasks.squad.model import (
    ATTENTION_COPIES,
    BiDAFSelfAttention,
    SquadBatch,
    attention_bytes,
    best_spans,
    bi_attention,
    longest_fitting_context,
    with_word_boundaries,
)

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


def _model(
    sites: frozenset[str] = frozenset(), seed: int = 0, config: SquadConfig = CONFIG
) -> BiDAFSelfAttention:
    torch.manual_seed(seed)
    rep = FakeRepresentation() if sites else build_representation("none")
    injector = Injector(rep, sites, dropout=0.0)
    return BiDAFSelfAttention(config, _vectors(), N_CHARS, injector)


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
        _layers(C_LENGTHS, g) if layers else Layers.empty(C_LENGTHS),
        _layers(Q_LENGTHS, g) if layers else Layers.empty(Q_LENGTHS),
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
    # softmax is invariant to a constant per row: the biases of the bi-attention similarity and
    # of the span scorers get a zero gradient (up to rounding); every other parameter learns,
    # including self-attention's bias and query term, which compete with the no-alignment logit
    assert "no_alignment" in trainable
    invariant = {"bi_attention.bias", "start_out.bias", "end_out.bias"}
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


# ------------------------------------------------------------------------------ bi-attention
def test_bi_attention_hand_case() -> None:
    """2 context × 3 question tokens, 1-d vectors, scores chosen for round softmaxes."""
    c = torch.tensor([[[1.0], [2.0]]])  # (1, 2, 1)
    q = torch.tensor([[[1.0], [0.0], [-1.0]]])  # (1, 3, 1)
    ln2, ln3 = torch.tensor(2.0).log().item(), torch.tensor(3.0).log().item()
    scores = torch.tensor([[[0.0, 0.0, ln2], [ln3, 0.0, 0.0]]])  # (1, 2, 3)
    out = bi_attention(scores, c, q, _mask([2]), _mask([3]))
    # c2q: row 0 softmax (1/4, 1/4, 1/2) → 1/4 − 1/2 = −1/4; row 1 (3/5, 1/5, 1/5) → 2/5
    # q2c: max per row (ln 2, ln 3) → softmax over the context (2/5, 3/5) → 2/5 + 6/5 = 8/5
    # output [c, c2q, c∘c2q, c∘q2c]
    expected = torch.tensor([[[1.0, -0.25, -0.25, 1.6], [2.0, 0.4, 0.8, 3.2]]])
    torch.testing.assert_close(out, expected)
    # padding changes nothing: a padded question token and a padded context token, both with
    # huge scores and garbage vectors
    c_pad = torch.cat([c, torch.full((1, 1, 1), 50.0)], dim=1)  # (1, 3, 1)
    q_pad = torch.cat([q, torch.full((1, 1, 1), -70.0)], dim=1)  # (1, 4, 1)
    s_pad = torch.full((1, 3, 4), 100.0)
    s_pad[:, :2, :3] = scores
    c_mask = torch.tensor([[True, True, False]])
    q_mask = torch.tensor([[True, True, True, False]])
    padded = bi_attention(s_pad, c_pad, q_pad, c_mask, q_mask)
    assert padded.shape == (1, 3, 4)
    torch.testing.assert_close(padded[:, :2], expected)


def test_bi_attention_batch_matches_per_example_loops() -> None:
    g = torch.Generator().manual_seed(0)
    c, q = torch.randn(3, 7, 4, generator=g), torch.randn(3, 5, 4, generator=g)
    scores = torch.randn(3, 7, 5, generator=g)
    out = bi_attention(scores, c, q, _mask(C_LENGTHS), _mask(Q_LENGTHS))
    assert out.shape == (3, 7, 16)
    for b, (nc, nq) in enumerate(zip(C_LENGTHS, Q_LENGTHS, strict=True)):
        s = scores[b, :nc, :nq]
        c2q = s.softmax(-1) @ q[b, :nq]  # (nc, 4)
        q2c = s.max(-1).values.softmax(0) @ c[b, :nc]  # (4,)
        ci = c[b, :nc]
        torch.testing.assert_close(out[b, :nc], torch.cat([ci, c2q, ci * c2q, ci * q2c], -1))


# ---------------------------------------------------------------------------- self-attention
def test_self_attention_has_a_learned_no_alignment_option() -> None:
    model = _model()
    assert model.no_alignment.item() == -1.0  # document-qa initialises the bias to -1
    att = model.self_attention
    with torch.no_grad():  # every score = bias: uniform over the other tokens, plus the null
        att.w_x.weight.zero_()
        att.w_y.weight.zero_()
        att.w_xy.zero_()
        att.bias.fill_(0.0)
    s = torch.randn(3, 7, 2 * CONFIG.hidden)
    mask = _mask(C_LENGTHS)
    w = model.self_attention_weights(s, mask).detach()  # (3, 7, 7)
    null = torch.tensor(-1.0).exp()
    for b, n in enumerate(C_LENGTHS):
        for i in range(7):
            for j in range(7):
                if i < n and j < n and i != j:  # n − 1 other tokens, exp(0) each
                    expected = 1.0 / (n - 1 + null)
                else:  # itself, padding, padded rows
                    expected = 0.0
                assert w[b, i, j].item() == pytest.approx(float(expected), abs=1e-6), (b, i, j)
    assert torch.equal(w[2], torch.zeros(7, 7))  # a one-token context: nothing but the null
    with torch.no_grad():  # all scores very low: every token attends to the null
        att.bias.fill_(-30.0)
    w = model.self_attention_weights(s, mask).detach()
    assert w.sum(-1).max() < 1e-10
    with torch.no_grad():  # a very low no-alignment logit: ordinary softmax over the others
        att.bias.fill_(0.0)
        model.no_alignment.fill_(-50.0)
    w = model.self_attention_weights(s, mask).detach()
    torch.testing.assert_close(w[0, :7].sum(-1), torch.ones(7))
    torch.testing.assert_close(w[1, :4].sum(-1), torch.ones(4))


def test_without_the_null_each_token_attends_over_the_other_tokens_only() -> None:
    """``self_attention_null=False`` (DialogQA): no no-alignment logit, each real row sums to 1
    over the other real tokens; itself, padding and padded rows get 0."""
    model = _model(config=dataclasses.replace(CONFIG, self_attention_null=False))
    assert model.no_alignment is None
    assert "no_alignment" not in dict(model.named_parameters())
    s = torch.randn(3, 7, 2 * CONFIG.hidden)
    mask = _mask(C_LENGTHS)
    w = model.self_attention_weights(s, mask).detach()  # (3, 7, 7)
    for b, n in enumerate(C_LENGTHS):
        if n > 1:
            torch.testing.assert_close(w[b, :n].sum(-1), torch.ones(n))
        assert torch.equal(w[b].diagonal(), torch.zeros(7))
        assert torch.equal(w[b, :, n:], torch.zeros(7, 7 - n))
        assert torch.equal(w[b, n:], torch.zeros(7 - n, 7))
    with_null = _model()  # the same draws otherwise: its rows sum to less than 1
    assert (with_null.self_attention_weights(s, mask)[0, :7].sum(-1) < 1).all()


def _residual_gru_input(model: BiDAFSelfAttention) -> tuple[torch.Tensor, torch.Tensor]:
    """What the residual GRU reads and the merged attention it comes from, in train mode."""
    seen: dict[str, torch.Tensor] = {}
    hooks = [
        model.attended.register_forward_hook(lambda m, i, o: seen.update(attended=o)),
        model.self_gru.register_forward_hook(lambda m, i, o: seen.update(gru_in=i[0])),
    ]
    torch.manual_seed(0)
    model.train()(_batch(seed=2))
    for hook in hooks:
        hook.remove()
    return seen["gru_in"], torch.relu(seen["attended"])


def test_residual_input_dropout_off_feeds_the_merged_attention_as_it_is() -> None:
    dialog_qa = _model(config=dataclasses.replace(CONFIG, residual_input_dropout=False))
    gru_in, merged = _residual_gru_input(dialog_qa)
    assert torch.equal(gru_in, merged)
    gru_in, merged = _residual_gru_input(_model())  # document-qa: dropped first
    assert not torch.equal(gru_in, merged)
    kept = gru_in != 0
    torch.testing.assert_close(gru_in[kept], merged[kept] / (1 - CONFIG.dropout))


def test_char_dropout_on_words_drops_the_cnn_output_not_the_characters() -> None:
    words = dataclasses.replace(CONFIG, char_dropout_on="words")
    model = _model(config=words).train()
    assert model.chars.dropout.p == 0.0
    assert model.char_word_drop.p == CONFIG.char_dropout
    default = _model()
    assert default.chars.dropout.p == CONFIG.char_dropout and default.char_word_drop.p == 0.0
    batch = _batch(seed=3)
    seen: dict[str, torch.Tensor] = {}
    model.chars.register_forward_hook(lambda m, i, o: seen.update(cnn=o))
    model.char_word_drop.register_forward_hook(lambda m, i, o: seen.update(dropped=o))
    torch.manual_seed(0)
    model.encode(batch.context_words, batch.context_chars, batch.context_layers, batch.context_mask)
    cnn, dropped = seen["cnn"], seen["dropped"]
    kept = dropped != 0
    assert ((cnn != 0) & ~kept).any()  # some non-zero word features were dropped
    torch.testing.assert_close(dropped[kept], cnn[kept] / (1 - CONFIG.char_dropout))
    with pytest.raises(ValueError, match="char_dropout_on"):
        SquadConfig(char_dropout_on="embeddings")


def test_word_boundaries_wrap_each_real_word_and_leave_padding() -> None:
    chars = torch.tensor([[[5, 6, 7, 0], [3, 0, 0, 0], [0, 0, 0, 0]]])  # (1, 3, 4)
    expected = [[[10, 5, 6, 7, 11, 0], [10, 3, 11, 0, 0, 0], [0, 0, 0, 0, 0, 0]]]
    assert with_word_boundaries(chars, 10, 11).tolist() == expected


def test_allennlp_char_cnn_pools_the_windows_inside_each_word() -> None:
    """``char_cnn=allennlp``: markers, two more embedding rows, and per word the max of
    ReLU(conv) over the windows wholly inside the marked word, 0 without one (brute force, as
    allennlp v2.10.1's ``CnnEncoder``)."""
    config = dataclasses.replace(CONFIG, char_cnn="allennlp", char_width=5)  # DialogQA's width
    model = _model(config=config).eval()
    default = _model()
    assert model.chars.embedding.num_embeddings == default.chars.embedding.num_embeddings + 2
    batch = _batch(seed=5)
    chars = batch.context_chars[:, :, : CONFIG.max_word_chars]
    marked = with_word_boundaries(chars, *model.boundaries)  # (b, t, w + 2)
    got = model.chars(marked)  # (b, t, filters)
    conv, emb = model.chars.conv, model.chars.embedding
    width = conv.kernel_size[0]
    short = 0
    for i in range(marked.shape[0]):
        for j in range(marked.shape[1]):
            word = marked[i, j][marked[i, j] != 0]  # the marked word's ids
            if len(word) < width:  # padding words and words too short for one window
                assert not got[i, j].any()
                short += len(word) > 0
                continue
            x = emb(word)  # (len, dim)
            windows = [
                torch.relu(conv.weight.flatten(1) @ x[k : k + width].T.flatten() + conv.bias)
                for k in range(len(word) - width + 1)
            ]
            torch.testing.assert_close(got[i, j], torch.stack(windows).max(0).values)
    assert short > 0  # the batch holds words of fewer than width - 2 characters
    with pytest.raises(ValueError, match="char_cnn"):
        SquadConfig(char_cnn="bytes")


# ------------------------------------------------------------------------------ output site
def test_output_site_elmo_is_not_dropped_again() -> None:
    """Train mode, injector dropout 0: the ELMo columns after the encoder are the injected mix
    itself (document-qa appends the LM after the encoder's dropout); the GRU part is dropped."""
    model = _model(frozenset({"input", "output"})).train()
    batch = _batch(seed=5, layers=True)
    torch.manual_seed(0)
    out = model.encode(
        batch.context_words, batch.context_chars, batch.context_layers, batch.context_mask
    )
    extra = FakeRepresentation.output_dim
    injected = model.injector(batch.context_layers)["output"]  # (3, 7, extra), no dropout
    assert torch.equal(out[..., -extra:], injected)
    gru = out[..., :-extra]  # (3, 7, 2h): variational dropout zeroes whole features
    real = batch.context_mask[:, :, None]
    dropped = ((gru == 0) | ~real).all(dim=1)  # (3, 2h)
    assert dropped.any()
    model.eval()
    again = model.encode(
        batch.context_words, batch.context_chars, batch.context_layers, batch.context_mask
    )
    assert torch.equal(again[..., -extra:], injected)


# ------------------------------------------------------------------------ memory estimate
def test_attention_bytes_is_copies_times_batch_times_context_squared_times_four() -> None:
    assert ATTENTION_COPIES == {"train": 12, "eval": 5}
    assert attention_bytes(2, 10, training=False) == 5 * 2 * 10**2 * 4 == 4000
    assert attention_bytes(3, 7, training=True) == 12 * 3 * 7**2 * 4 == 7056
    assert attention_bytes(1, 20_000, training=False) == 8_000_000_000  # the audit's context
    for batch, available, training in [(2, 4000, False), (2, 3999, False), (3, 10**6, True)]:
        tokens = longest_fitting_context(batch, available, training=training)
        assert attention_bytes(batch, tokens, training=training) <= available
        assert attention_bytes(batch, tokens + 1, training=training) > available
    assert longest_fitting_context(2, 4000, training=False) == 10
    assert longest_fitting_context(2, 0, training=True) == 0


def test_words_without_a_vector_can_start_as_allennlp_starts_them() -> None:
    vectors = _vectors()
    vectors[3] = 0.0  # a word the file lacks
    config = dataclasses.replace(CONFIG, fill_missing_words=True)
    torch.manual_seed(0)
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    words = BiDAFSelfAttention(config, vectors, N_CHARS, injector).words.weight
    assert not words.requires_grad  # still fixed
    assert torch.equal(words[0], torch.zeros(WORD_DIM))  # padding
    assert torch.count_nonzero(words[3]) == WORD_DIM  # drawn
    kept = [i for i in range(VOCAB) if i not in (0, 3)]
    assert torch.equal(words[kept], vectors[kept])
    default = BiDAFSelfAttention(CONFIG, vectors, N_CHARS, injector).words.weight
    assert torch.equal(default[3], torch.zeros(WORD_DIM))  # default: left at zero


def test_constant_heads_add_two_class_0_losses_read_at_the_gold_end() -> None:
    """``constant_heads`` (DialogQA's yes/no and follow-up heads): the loss grows by the mean
    NLL of class 0 of each head at each question's gold end; spans are decoded as before."""
    heads = dataclasses.replace(CONFIG, constant_heads=True)
    model = _model(config=heads).eval()
    assert model.quac_heads is not None and _model().quac_heads is None
    batch = _batch(seed=6)
    seen: dict[str, torch.Tensor] = {}
    model.end_gru.register_forward_hook(lambda m, i, o: seen.update(end=o))
    out = model(batch)
    assert batch.spans is not None and out.loss is not None
    end_h, gold = seen["end"], batch.spans[:, 1]
    extra = torch.tensor(0.0)
    for head in range(2):  # brute force: one question, one head at a time
        for b in range(end_h.shape[0]):
            logits = model.quac_heads(end_h[b, gold[b]])[3 * head : 3 * head + 3]
            extra = extra - torch.log_softmax(logits, -1)[0] / end_h.shape[0]
    log_start = masked_log_softmax(out.start_logits, batch.context_mask)
    log_end = masked_log_softmax(out.end_logits, batch.context_mask)
    span_loss = -(log_start[range(3), batch.spans[:, 0]] + log_end[range(3), gold]).mean()
    torch.testing.assert_close(out.loss, span_loss + extra)
    out.loss.backward()
    assert model.quac_heads.weight.grad is not None


def test_shared_paragraphs_encode_each_paragraph_once_for_its_questions() -> None:
    model = _model(frozenset({"input", "output"}))
    full = _batch(layers=True)
    index = torch.tensor([0, 1, 0])  # question 2 reads question 0's paragraph
    copies = dataclasses.replace(
        full,
        context_words=full.context_words[index],
        context_chars=full.context_chars[index],
        context_mask=full.context_mask[index],
        context_layers=Layers(full.context_layers.tensors[:, index], full.context_mask[index]),
    )
    shared = dataclasses.replace(
        full,
        context_words=full.context_words[:2],
        context_chars=full.context_chars[:2],
        context_mask=full.context_mask[:2],
        context_layers=Layers(full.context_layers.tensors[:, :2], full.context_mask[:2]),
        context_index=index,
    )
    model.eval()
    a, b = model(copies), model(shared)
    assert torch.allclose(a.start_logits, b.start_logits, atol=1e-6)
    assert torch.equal(a.spans, b.spans)
    assert a.loss is not None and b.loss is not None and torch.allclose(a.loss, b.loss)
    encoded: list[torch.Tensor] = []
    model.encoder.register_forward_hook(lambda m, args, out: encoded.append(out))
    model.train()
    torch.manual_seed(1)
    model(shared)
    assert [e.shape[0] for e in encoded] == [2, 3]  # the paragraphs once, then the questions
    model(copies)
    assert encoded[2].shape[0] == 3  # every question's own copy
