"""Shared task layers: variational dropout, masked bi-GRU, trilinear attention, masked softmax,
character CNN."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tasks.common.layers import (
    BiGRU,
    CharCNNEncoder,
    TrilinearAttention,
    VariationalDropout,
    masked_log_softmax,
    masked_softmax,
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


# ------------------------------------------------------------------------------- char CNN
@pytest.mark.parametrize("width", [3, 4, 5])
def test_char_cnn_shapes_and_words_are_independent(width: int) -> None:
    torch.manual_seed(0)
    enc = CharCNNEncoder(n_chars=12, char_dim=4, n_filters=7, width=width).eval()
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
