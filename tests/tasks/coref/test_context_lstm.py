"""The context biLSTM against Lee et al. (2017)'s cell (e2e-coref ``util.CustomLSTMCell`` as
``coref_model.encode_sentences`` runs it), written out step by step here:

    [i; j; o] = W_x x_t + b_x + W_h (m ∘ h_{t-1}) + b_h
    c_t = (1 - σ(i)) ∘ c_{t-1} + σ(i) ∘ tanh(j)        (forget gate = 1 - input gate)
    h_t = tanh(c_t) ∘ σ(o)

from a learned (c_0, h_0), with one dropout mask m per sentence and direction for all steps, the
backward cell reading each sentence reversed within its length; W_h three orthogonal blocks."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from tasks.coref.model import CoupledBiLSTM, block_orthonormal_, reverse_padded

IN, H, LENGTHS = 3, 4, [5, 2, 4]


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    mask = torch.arange(max(LENGTHS))[None, :] < torch.tensor(LENGTHS)[:, None]
    x = torch.randn(len(LENGTHS), max(LENGTHS), IN, generator=g) * mask[:, :, None]
    return x, mask


def _lstm(dropout: float = 0.0, seed: int = 0) -> CoupledBiLSTM:
    torch.manual_seed(seed)
    return CoupledBiLSTM(IN, H, dropout)


def _reference(lstm: CoupledBiLSTM, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Lee et al.'s equations, one sentence, direction and step at a time (plain vectors)."""
    b, t, _ = x.shape
    out = torch.zeros(b, t, 2 * H)
    for d in range(2):
        w_x, b_x = lstm.input_weight[d], lstm.input_bias[d]
        w_h, b_h = lstm.recurrent_weight[d], lstm.recurrent_bias[d]
        for s, n in enumerate(LENGTHS):
            c, h = lstm.initial_cell[d], lstm.initial_hidden[d]
            steps = range(n) if d == 0 else reversed(range(n))
            for step in steps:
                z = w_x @ x[s, step] + b_x + w_h @ (keep[d, s] * h) + b_h
                i, j, o = torch.sigmoid(z[:H]), torch.tanh(z[H : 2 * H]), torch.sigmoid(z[2 * H :])
                forget = 1 - i  # coupled gates
                c = forget * c + i * j
                h = torch.tanh(c) * o
                out[s, step, d * H : (d + 1) * H] = h
    return out


def test_eval_matches_the_step_by_step_equations() -> None:
    lstm, (x, mask) = _lstm(dropout=0.2).eval(), _inputs()
    with torch.no_grad():
        got = lstm(x, mask)
        want = _reference(lstm, x, torch.ones(2, len(LENGTHS), H))
    assert got.shape == (len(LENGTHS), max(LENGTHS), 2 * H)
    assert torch.allclose(got, want, atol=1e-6)
    assert torch.all(got[~mask] == 0)


def test_training_uses_one_dropout_mask_over_time() -> None:
    lstm, (x, mask) = _lstm(dropout=0.5).train(), _inputs()
    torch.manual_seed(3)
    keep = lstm.recurrent_mask(len(LENGTHS))
    assert keep.shape == (2, len(LENGTHS), H)  # no time axis: one mask per sentence, direction
    assert set(keep.unique().tolist()) <= {0.0, 2.0}  # inverted dropout, keep 0.5
    assert not torch.equal(keep[0, 0], keep[0, 1]) or not torch.equal(keep[0, 1], keep[0, 2])
    with torch.no_grad():
        want = _reference(lstm, x, keep)
        assert torch.allclose(lstm(x, mask, keep), want, atol=1e-6)
        torch.manual_seed(3)  # the default draw is that same mask, used at every step
        assert torch.allclose(lstm(x, mask), want, atol=1e-6)
        unmasked = _reference(lstm, x, torch.ones_like(keep))  # the mask does act on h
        assert not torch.allclose(lstm(x, mask, keep), unmasked, atol=1e-4)


def test_initial_state_is_learned_and_used() -> None:
    lstm, (x, mask) = _lstm().eval(), _inputs()
    names = {n for n, _ in lstm.named_parameters()}
    assert {"initial_cell", "initial_hidden"} <= names
    assert lstm.initial_cell.shape == lstm.initial_hidden.shape == (2, H)
    assert lstm.initial_hidden.abs().sum() > 0  # TF's Glorot uniform, not zeros
    lstm(x, mask).sum().backward()
    assert lstm.initial_cell.grad is not None and lstm.initial_cell.grad.abs().sum() > 0
    assert lstm.initial_hidden.grad is not None and lstm.initial_hidden.grad.abs().sum() > 0
    before = lstm(x, mask).detach()
    with torch.no_grad():
        lstm.initial_hidden[1].zero_()  # the backward cell's start only
    after = lstm(x, mask).detach()
    assert torch.equal(before[..., :H], after[..., :H])
    assert not torch.allclose(before[..., H:], after[..., H:])


def test_initialisation_as_the_original() -> None:
    lstm = _lstm()
    for d in range(2):
        blocks = lstm.recurrent_weight[d].detach().chunk(3, dim=0)  # (H, H) each: i, j, o
        for block in blocks:
            assert torch.allclose(block @ block.T, torch.eye(H), atol=1e-5)
        assert not torch.allclose(blocks[0], blocks[1])  # independent blocks
    bound_x = math.sqrt(6 / (IN + 3 * H))
    assert lstm.input_weight.abs().max() <= bound_x
    for bias in (lstm.input_bias, lstm.recurrent_bias):  # TF Glorot of a vector: fans (n, n)
        assert bias.abs().max() <= math.sqrt(6 / (6 * H)) and bias.abs().sum() > 0
    assert lstm.initial_cell.abs().max() <= math.sqrt(6 / (1 + H))
    w = torch.empty(6, 2)
    with pytest.raises(ValueError):
        block_orthonormal_(torch.empty(6), 3)
    block_orthonormal_(w, 3)
    for block in w.chunk(3):
        assert torch.allclose(block @ block.T, torch.eye(2), atol=1e-5)


def test_padding_and_batch_neighbours_change_nothing() -> None:
    lstm, (x, mask) = _lstm().eval(), _inputs()
    with torch.no_grad():
        batched = lstm(x, mask)
        garbage = x + 7.0 * (~mask)[:, :, None]
        assert torch.allclose(lstm(garbage, mask), batched, atol=1e-6)
        n = LENGTHS[1]
        alone = lstm(x[1:2, :n], mask[1:2, :n])
        assert torch.allclose(alone[0], batched[1, :n], atol=1e-6)


def test_reverse_padded_reverses_within_lengths() -> None:
    x = torch.arange(8).view(2, 4, 1).float()
    got = reverse_padded(x, torch.tensor([3, 4])).squeeze(-1)
    assert got.tolist() == [[2.0, 1.0, 0.0, 3.0], [7.0, 6.0, 5.0, 4.0]]


def test_the_model_encodes_with_lees_cell_and_its_dropout() -> None:
    from tasks.coref.config import PRESETS
    from tasks.coref.model import SpanRankingCoref
    from tasks.features.inject import Injector
    from tasks.representations import build_representation

    for name, build in PRESETS.items():
        config = dataclasses.replace(
            build(), word_vectors="random:4", turian_vectors="", hidden=3, char_filters=2
        )
        injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
        model = SpanRankingCoref(config, [torch.randn(10, 4)], 12, 8, injector)
        assert isinstance(model.encoder, CoupledBiLSTM), name
        assert model.encoder.dropout == config.dropout == 0.2  # e2e-coref: dropout_rate
        assert model.encoder.input_dim == 4 + model.chars.output_dim


def test_paper_training_is_e2e_corefs() -> None:
    """e2e-coref: global-norm clipping 5 only, one shuffled document per step (no buckets)."""
    from tasks.coref.config import PRESETS

    train = PRESETS["paper"]().train
    assert (train.clip_norm, train.clip_value, train.bucket_noise) == (5.0, None, 0.0)
    assert (train.batching, train.batch_size) == ("document", 1)
