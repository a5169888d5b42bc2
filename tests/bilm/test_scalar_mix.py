"""Eq. (1): softmax weights, γ, λ‖w‖², LastOnly, masked layer norm; the Elmo module."""

from __future__ import annotations

import pytest
import torch

from bilm import Elmo, ScalarMix, batch_to_ids
from tests.bilm.helpers import SENTENCES, tiny_bilm


def test_mix_matches_hand_computation() -> None:
    layers = torch.arange(3 * 2 * 1 * 2, dtype=torch.float).view(3, 2, 1, 2)
    mix = ScalarMix(3, initial_weights=[0.0, 1.0, 2.0])
    with torch.no_grad():
        mix.gamma.fill_(0.5)
    s = torch.tensor([1.0, 2.718281828, 7.389056099])
    s = s / s.sum()
    expected = 0.5 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2])
    torch.testing.assert_close(mix(layers), expected)
    torch.testing.assert_close(mix.normalized_weights(), s)


def test_default_is_the_average_and_penalty_is_lambda_w_squared() -> None:
    layers = torch.randn(3, 2, 4, 5)
    mix = ScalarMix(3, lam=0.1)
    torch.testing.assert_close(mix(layers), layers.mean(0))
    assert mix.penalty().item() == 0.0
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([1.0, -2.0, 0.5]))
    assert mix.penalty().item() == pytest.approx(0.1 * (1 + 4 + 0.25))
    mix.penalty().backward()
    torch.testing.assert_close(mix.weights.grad, 0.2 * torch.tensor([1.0, -2.0, 0.5]))


def test_last_only_keeps_gamma_and_has_no_penalty() -> None:
    layers = torch.randn(3, 2, 4, 5)
    mix = ScalarMix(3, mode="last", lam=1.0)
    with torch.no_grad():
        mix.gamma.fill_(2.0)
    torch.testing.assert_close(mix(layers), 2.0 * layers[2])
    assert mix.penalty().item() == 0.0 and not mix.weights.requires_grad
    assert mix.normalized_weights().tolist() == [0.0, 0.0, 1.0]


def test_layer_norm_uses_one_masked_mean_and_variance_per_layer() -> None:
    torch.manual_seed(0)
    layers = torch.randn(2, 2, 3, 4)
    mask = torch.tensor([[True, True, False], [True, False, False]])
    layers_with_junk = layers.clone()
    layers_with_junk[:, ~mask] = 1e6  # padding must not influence the statistics
    mix = ScalarMix(2, layer_norm=True)
    out = mix(layers_with_junk, mask)
    expected = (
        sum(
            0.5
            * (
                (layers[j] - layers[j][mask].mean())
                / torch.sqrt(layers[j][mask].var(unbiased=False) + 1e-13)
            )
            for j in range(2)
        )
        * mask[:, :, None]
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="needs the mask"):
        mix(layers)


def test_mix_rejects_wrong_layer_count() -> None:
    with pytest.raises(ValueError, match="expected 3 layers"):
        ScalarMix(3)(torch.zeros(2, 1, 1, 1))
    with pytest.raises(ValueError, match="initial_weights has 2 values"):
        ScalarMix(3, initial_weights=[0.0, 0.0])


def test_elmo_shares_one_pass_between_mixes_and_freezes_the_bilm() -> None:
    model = tiny_bilm()
    calls = []
    model.register_forward_hook(lambda *_: calls.append(1))
    elmo = Elmo(model, num_outputs=2, lam=0.01, dropout=0.5)
    elmo.train()
    out = elmo(batch_to_ids(SENTENCES))
    assert len(calls) == 1 and len(out.representations) == 2
    assert out.representations[0].shape == (4, 11, 16)
    assert not any(p.requires_grad for p in model.parameters())
    trainable = [n for n, p in elmo.named_parameters() if p.requires_grad]
    assert sorted(trainable) == [
        "mixes.0.gamma",
        "mixes.0.weights",
        "mixes.1.gamma",
        "mixes.1.weights",
    ]
    loss = out.representations[0].sum() + out.representations[1].sum() + elmo.penalty()
    loss.backward()
    assert elmo.mixes[0].weights.grad is not None
    # dropout 0.5 in training zeroes roughly half of the real entries
    zero_fraction = (out.representations[0][out.mask] == 0).float().mean().item()
    assert 0.3 < zero_fraction < 0.7
    elmo.eval()
    a = elmo.embed_sentences(SENTENCES).representations[0]
    torch.testing.assert_close(a, elmo.embed_sentences(SENTENCES).representations[0])
