"""Shared task layers: variational dropout, masked bi-GRU, trilinear attention, masked softmax
(with and without a no-alignment option), character CNN."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tasks.nn.layers import (
    BiGRU,
    CharCNNEncoder,
    TrilinearAttention,
    VariationalDropout,
    masked_log_softmax,
    masked_softmax,
    masked_softmax_with_null,
    run_rnn,
)


def _mask(lengths: list[int], time: int) -> torch.Tensor:
    return torch.arange(time)[None, :] < torch.tensor(lengths)[:, None]  # (batch, time)


# ------------------------------------------------------------------------ variational dropout
def test_variational_dropout_shares_one_mask_over_time() -> None:
    torch.manual_seed(0)
    drop = VariationalDropout(0.5).train()
    x = torch.randn(8, 6, 10)
    out = drop(x)
    ratio = out / x  # (batch, time, dim): the mask scaled by 1 / (1 - p)
    assert set(ratio.unique().tolist()) == {0.0, 2.0}
    assert torch.equal(ratio, ratio[:, :1, :].expand_as(ratio))  # same mask at every time step
    masks = ratio[:, 0, :]  # (batch, dim)
    assert len({tuple(m.tolist()) for m in masks}) > 1  # one mask per sequence, not per batch


def test_variational_dropout_is_identity_in_eval_and_at_p0() -> None:
    x = torch.randn(2, 3, 4)
    assert torch.equal(VariationalDropout(0.5).eval()(x), x)
    assert torch.equal(VariationalDropout(0.0).train()(x), x)


def test_variational_dropout_keeps_the_expectation() -> None:
    torch.manual_seed(1)
    out = VariationalDropout(0.2).train()(torch.ones(2000, 2, 50))
    assert out.mean().item() == pytest.approx(1.0, abs=0.02)


# ------------------------------------------------------------------------------------- bi-GRU
def test_bigru_padding_never_leaks() -> None:
    torch.manual_seed(0)
    gru = BiGRU(4, 3).eval()
    assert gru.output_dim == 6
    lengths, time = [6, 3, 1, 4], 6
    x = torch.randn(len(lengths), time, 4)
    mask = _mask(lengths, time)
    out = gru(x, mask)
    assert out.shape == (4, 6, 6)
    for b, n in enumerate(lengths):
        alone = gru(x[b : b + 1, :n], torch.ones(1, n, dtype=torch.bool))[0]  # (n, 6)
        torch.testing.assert_close(out[b, :n], alone, rtol=1e-5, atol=1e-6)
        assert torch.equal(out[b, n:], torch.zeros(time - n, 6))
    # garbage at the pads changes nothing (the backward direction starts at the last real token)
    noisy = torch.where(mask[:, :, None], x, torch.randn_like(x) * 100)
    torch.testing.assert_close(gru(noisy, mask), out)


def test_bigru_all_padded_row_is_zero() -> None:
    torch.manual_seed(0)
    gru = BiGRU(2, 2)
    out = gru(torch.randn(2, 3, 2), _mask([3, 0], 3))
    assert torch.equal(out[1], torch.zeros(3, 4))
    assert out[0].abs().sum() > 0


# ------------------------------------------------------------------------ trilinear attention
def test_trilinear_attention_matches_the_formula() -> None:
    att = TrilinearAttention(2)
    with torch.no_grad():
        att.w_x.weight.copy_(torch.tensor([[1.0, 0.0]]))
        att.w_y.weight.copy_(torch.tensor([[0.0, 2.0]]))
        att.w_xy.copy_(torch.tensor([1.0, 1.0]))
        att.bias.fill_(0.5)
    x = torch.tensor([[[1.0, 2.0], [3.0, -1.0]]])  # (1, 2, 2)
    y = torch.tensor([[[0.0, 1.0], [2.0, 2.0], [-1.0, 0.0]]])  # (1, 3, 2)
    s = att(x, y)
    assert s.shape == (1, 2, 3)
    # s_00 = [1,0]·[1,2] + [0,2]·[0,1] + [1,1]·([1,2]∘[0,1]) + 0.5 = 1 + 2 + 2 + 0.5
    assert s[0, 0, 0].item() == pytest.approx(5.5)
    w = torch.cat([att.w_x.weight[0], att.w_y.weight[0], att.w_xy]).detach()  # (3·d,)
    expected = torch.tensor(
        [[float(w @ torch.cat([xi, yj, xi * yj])) + 0.5 for yj in y[0]] for xi in x[0]]
    )
    torch.testing.assert_close(s[0].detach(), expected)


def test_trilinear_attention_random_batch() -> None:
    torch.manual_seed(0)
    att = TrilinearAttention(5)
    with torch.no_grad():
        att.bias.fill_(-0.3)
    x, y = torch.randn(3, 4, 5), torch.randn(3, 2, 5)
    w = torch.cat([att.w_x.weight[0], att.w_y.weight[0], att.w_xy]).detach()
    expected = torch.empty(3, 4, 2)
    for b in range(3):
        for i in range(4):
            for j in range(2):
                feats = torch.cat([x[b, i], y[b, j], x[b, i] * y[b, j]])
                expected[b, i, j] = w @ feats - 0.3
    torch.testing.assert_close(att(x, y).detach(), expected, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- masked softmax
def test_masked_softmax() -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 9.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
    mask = torch.tensor([[1, 1, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    p = masked_softmax(scores, mask)
    assert torch.equal(p[~mask], torch.zeros(int((~mask).sum())))
    torch.testing.assert_close(p[0, [0, 1, 3]], F.softmax(torch.tensor([1.0, 2.0, 4.0]), dim=0))
    assert p[1, 1].item() == 1.0
    assert torch.equal(p[2], torch.zeros(4))  # all-masked row: zeros, not NaN
    # -inf at masked positions (as the self-attention diagonal) is fine too
    q = masked_softmax(scores.masked_fill(~mask, float("-inf")), mask)
    assert not q.isnan().any()
    torch.testing.assert_close(q, p)


def test_masked_softmax_broadcasts_a_key_mask_and_other_dims() -> None:
    torch.manual_seed(0)
    scores = torch.randn(2, 3, 4)
    key_mask = _mask([4, 2], 4)[:, None, :]  # (2, 1, 4): as the model masks question positions
    p = masked_softmax(scores, key_mask)
    assert torch.equal(p[1, :, 2:], torch.zeros(3, 2))
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 3))
    col = masked_softmax(scores, _mask([3, 1], 3)[:, :, None], dim=1)  # over dim 1
    torch.testing.assert_close(col[0].sum(0), torch.ones(4))
    assert torch.equal(col[1, 1:], torch.zeros(2, 4))


def test_masked_log_softmax() -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = _mask([2, 1], 3)
    lp = masked_log_softmax(scores, mask)
    torch.testing.assert_close(lp[0, :2], F.log_softmax(torch.tensor([1.0, 2.0]), dim=0))
    assert lp[1, 0].item() == 0.0
    assert (lp[~mask] < -1e29).all()


def test_masked_softmax_with_null_hand_case() -> None:
    ln2 = torch.tensor(2.0).log().item()
    scores = torch.tensor([[0.0, 0.0, ln2, 7.0], [-1e4, -1e4, -1e4, -1e4], [1.0, 2.0, 3.0, 4.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [0, 0, 0, 0]], dtype=torch.bool)
    null = torch.tensor(0.0, requires_grad=True)  # exp(0) = 1 in the normaliser
    p = masked_softmax_with_null(scores, mask, null)
    # row 0: exp = 1, 1, 2 (key 3 masked) + 1 for the null → 1/5, 1/5, 2/5, 0
    torch.testing.assert_close(p[0], torch.tensor([0.2, 0.2, 0.4, 0.0]))
    assert p[1].sum().item() < 1e-30  # scores far below the null: attend to nothing
    assert torch.equal(p[2], torch.zeros(4))  # all keys masked: zeros, not NaN
    p[0, 0].backward()  # the null logit learns: d p_00 / d null = −p_00 · p_null = −1/5 · 1/5
    assert null.grad is not None
    assert null.grad.item() == pytest.approx(-0.04)


def test_masked_softmax_with_null_is_softmax_plus_an_extra_key() -> None:
    torch.manual_seed(0)
    scores, null = torch.randn(2, 3, 5), torch.tensor(0.7)
    mask = _mask([5, 2], 5)[:, None, :]  # (2, 1, 5)
    p = masked_softmax_with_null(scores, mask, null)
    for b, n in enumerate([5, 2]):
        full = torch.cat([scores[b, :, :n], null.expand(3, 1)], dim=-1).softmax(-1)  # (3, n+1)
        torch.testing.assert_close(p[b, :, :n], full[:, :n])
        assert torch.equal(p[b, :, n:], torch.zeros(3, 5 - n))
    assert (p.sum(-1) < 1).all()


# ------------------------------------------------------------------------------- char CNN
@pytest.mark.parametrize("width", [3, 4, 5])
def test_char_cnn_shapes_and_words_are_independent(width: int) -> None:
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=12, char_dim=4, n_filters=7, width=width, max_chars=6).eval()
    assert enc.output_dim == 7
    chars = torch.randint(1, 12, (2, 5, 6))
    chars[:, :, 4:] = 0  # padded characters
    out = enc(chars)
    assert out.shape == (2, 5, 7)
    assert (out >= 0).all()  # ReLU then max
    assert torch.equal(enc.embedding.weight[0], torch.zeros(4))  # char pad row
    # a word's vector depends only on its own characters
    alone = enc(chars[1:2, 3:4])
    torch.testing.assert_close(out[1, 3], alone[0, 0])
    other = chars.clone()
    other[0] = torch.randint(1, 12, (5, 6))
    torch.testing.assert_close(enc(other)[1], out[1])


def _hand_cnn(width: int, max_chars: int, bias: float) -> CharCNNEncoder:
    """1-d char embeddings equal to the char id, conv weights −1, bias ``bias``: a window scores
    ``relu(bias − sum of its char ids)``; pads (id 0) add 0."""
    enc = CharCNNEncoder(n_chars=10, char_dim=1, n_filters=1, width=width, max_chars=max_chars)
    with torch.no_grad():
        enc.embedding.weight.copy_(torch.arange(10.0)[:, None])
        enc.conv.weight.fill_(-1.0)
        enc.conv.bias.fill_(bias)
    return enc.eval()


def test_char_cnn_valid_convolution_and_masked_max_by_hand() -> None:
    enc = _hand_cnn(width=3, max_chars=6, bias=20.0)
    assert enc.conv.padding == (0,)  # VALID, document-qa
    # "1 2 3 4" (4 chars, max_chars 6): conv windows start at 0..3 (6 − 3 + 1 = 4 windows), all
    # start on a real character: sums 6, 9, 7 (4 + pad + pad), 4 (4 + pads) → max relu = 16
    chars = torch.tensor([[[1, 2, 3, 4, 0, 0]]])
    assert enc(chars).item() == 16.0
    # "5 5 5 5 5 5": windows sums all 15 → 5; with a pad-only window it would be relu(20) = 20
    assert enc(torch.tensor([[[5, 5, 5, 5, 5, 5]]])).item() == 5.0
    # "9 9": windows start at 0 (9 + 9 + pad = 18) and 1 (9 + pads = 9); windows 2, 3 start on
    # padding and are masked (they would score 20)
    assert enc(torch.tensor([[[9, 9, 0, 0, 0, 0]]])).item() == 11.0
    # a padding token (no characters) gives 0
    assert enc(torch.zeros(1, 1, 6, dtype=torch.long)).item() == 0.0


def test_char_cnn_padding_never_wins_and_padding_length_does_not_matter() -> None:
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=12, char_dim=4, n_filters=7, width=3, max_chars=6).eval()
    with torch.no_grad():  # every real character lowers a window's score below the bias, 100,
        enc.embedding.weight.abs_()  # which a window of padding alone would score
        enc.conv.weight.copy_(-enc.conv.weight.abs() - 0.01)
        enc.conv.bias.fill_(100.0)
    lengths = torch.tensor([[1, 2, 3], [4, 5, 6]])
    chars = torch.randint(1, 12, (2, 3, 6)) * (torch.arange(6) < lengths[:, :, None])
    out = enc(chars)
    assert (out < 100.0).all()  # the pad-only windows (words of 1–3 chars have some) never win
    # more padding columns, or fewer (down to the longest word), change nothing
    wider = torch.cat([chars, torch.zeros(2, 3, 5, dtype=torch.long)], dim=-1)
    torch.testing.assert_close(enc(wider), out)
    torch.testing.assert_close(enc(chars[:1, :1, :1]), out[:1, :1])  # a 1-char word
    # characters beyond max_chars are cut (document-qa word_size_th)
    longer = torch.cat([chars, torch.randint(1, 12, (2, 3, 4))], dim=-1)
    longer[0] = wider[0, :, :10]
    torch.testing.assert_close(enc(longer)[1], out[1])


def _fixed_span(enc: CharCNNEncoder, chars: torch.Tensor) -> torch.Tensor:
    """The encoder's function computed over the full fixed span, by hand: every word padded
    to ``max(max_chars, width)`` characters, a VALID convolution, ReLU, the max over windows
    that start on a character. ``chars`` (b, t, w) → (b, t, filters)."""
    b, t, _ = chars.shape
    span = max(enc.max_chars, enc.width)
    chars = torch.nn.functional.pad(chars[:, :, : enc.max_chars], (0, span))[:, :, :span]
    x = enc.conv(enc.embedding(chars.reshape(b * t, span)).transpose(1, 2)).relu()
    starts = torch.arange(x.shape[2])[None, None, :]
    keep = starts < (chars != 0).sum(-1).reshape(b * t, 1, 1)
    return (x * keep).max(dim=2).values.view(b, t, -1)


def _ragged_chars() -> torch.Tensor:
    lengths = torch.tensor([[1, 9, 0, 0], [3, 2, 5, 0], [0, 0, 0, 0]])  # 9 > max_chars: cut
    return torch.randint(1, 30, (3, 4, 10)) * (torch.arange(10) < lengths[:, :, None])


@pytest.mark.parametrize("width", [3, 5])
def test_char_cnn_encodes_real_words_alone_bitwise_as_the_fixed_span(width: int) -> None:
    """Without dropout (evaluation, or training at rate 0) the encoder skips padding words and
    cuts the character axis to the batch's longest word; the outputs are bitwise those of the
    full fixed span."""
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=30, char_dim=4, n_filters=7, width=width, max_chars=8)
    chars = _ragged_chars()
    with torch.no_grad():
        fast = enc.eval()(chars)  # (3, 4, 7)
        trained = enc.train()(chars)  # dropout 0: the same path
        full = _fixed_span(enc, chars)
    assert torch.equal(fast, full) and torch.equal(trained, full)
    assert torch.equal(fast[2], torch.zeros(4, 7)) and torch.equal(fast[0, 2], torch.zeros(7))
    assert torch.equal(enc.eval()(torch.zeros(2, 3, 5, dtype=torch.long)), torch.zeros(2, 3, 7))


def test_char_cnn_real_words_gradients_are_the_fixed_spans() -> None:
    """Training at dropout 0 takes the real-words path: the same gradients as the fixed span,
    up to summation order."""
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=30, char_dim=4, n_filters=7, width=3, max_chars=8).train()
    chars, weights = _ragged_chars(), torch.randn(3, 4, 7)
    grads = []
    for encode in (enc, lambda c: _fixed_span(enc, c)):
        enc.zero_grad()
        (encode(chars) * weights).sum().backward()
        grads.append([p.grad.clone() for p in enc.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) == 3  # embedding, conv weight, conv bias
    for fast, full in zip(*grads, strict=True):
        torch.testing.assert_close(fast, full, rtol=1e-5, atol=1e-6)
        assert fast.abs().sum() > 0


def test_char_cnn_words_shorter_than_the_kernel() -> None:
    enc = _hand_cnn(width=5, max_chars=3, bias=20.0)  # words of ≤ 3 chars, kernel 5
    # "2 3" padded to the width: one window 2 + 3 + pads = 5 → 15
    assert enc(torch.tensor([[[2, 3]]])).item() == 15.0
    assert enc(torch.tensor([[[2, 3, 0]]])).item() == 15.0
    assert enc(torch.tensor([[[2, 3, 0, 0, 0, 0, 0]]])).item() == 15.0
    assert enc(torch.tensor([[[7]]])).item() == 13.0


def test_char_cnn_dropout_on_char_embeddings_in_training_only() -> None:
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=12, char_dim=4, n_filters=7, width=3, max_chars=6, dropout=0.2)
    assert isinstance(enc.dropout, torch.nn.Dropout) and enc.dropout.p == 0.2
    chars = torch.randint(1, 12, (4, 5, 6))
    seen: list[torch.Tensor] = []
    enc.conv.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
    train = enc.train()(chars)
    dropped = seen[-1]  # (b·t, char_dim, chars): what the convolution saw
    assert (dropped == 0).any()  # element-wise dropout on the character embeddings
    kept = dropped != 0
    clean = enc.embedding(chars.view(20, 6)).transpose(1, 2).detach()
    torch.testing.assert_close(dropped[kept], clean[kept] / 0.8)
    evaluated = enc.eval()(chars)
    assert not torch.equal(train, evaluated)
    torch.testing.assert_close(enc(chars), evaluated)  # deterministic in eval


@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_run_rnn_trains_under_cpu_bf16_autocast(
    packed: bool, unit: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # oneDNN cannot build a bf16 LSTM training primitive on CPUs without AVX-512 BF16 (the
    # SRL and coreference `paper` presets failed with --precision bf16 --device cpu): there
    # the RNN runs in float32, exactly; with a bf16 unit in bf16, the output float32 either way
    from tasks.nn import layers

    if unit and layers.cpu_bf16_unit() is None:
        pytest.skip("this CPU has no bf16 unit (AMX or AVX-512-bf16): no bf16 RNN kernel")
    monkeypatch.setattr(layers, "_bf16_unit", lambda: unit)
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(24, 8, batch_first=True)
    x = torch.randn(3, 5, 24)  # (batch, time, in)
    seq = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([5, 4, 2]), batch_first=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = run_rnn(lstm, seq if packed else x)
    data = out.data if packed else out
    assert data.dtype == torch.float32
    data.sum().backward()
    reference = lstm(seq if packed else x)[0]
    reference = reference.data if packed else reference
    if unit:  # bf16 arithmetic: close, not equal (8 mantissa bits; values within ±1)
        assert not torch.equal(data, reference)
        torch.testing.assert_close(data, reference, atol=2e-2, rtol=0.0)
    else:
        torch.testing.assert_close(data, reference)
    assert lstm.weight_hh_l0.grad is not None and lstm.weight_hh_l0.grad.abs().sum() > 0
