"""Eq. (1): softmax weights, γ, λ‖w‖², LastOnly, masked layer norm; the Elmo module; the
per-token ``dynamic`` mix (:mod:`bilm.dynamic_mix`)."""

from __future__ import annotations

import pytest
import torch

from bilm import Elmo, MixSpec, ScalarMix, batch_to_ids
from bilm.dynamic_mix import DynamicMix
from bilm.scalar_mix import mix_from_spec
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


# ------------------------------------------------------------------------- the dynamic mix
def _padded_layers(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(3, 3, 5, 8)`` layers, 0 at padding, and their mask (lengths 5, 3, 1)."""
    generator = torch.Generator().manual_seed(seed)
    layers = torch.randn(3, 3, 5, 8, generator=generator)
    mask = torch.arange(5)[None, :] < torch.tensor([5, 3, 1])[:, None]  # (3, 5)
    return layers * mask[None, :, :, None], mask


def _departed(lam: float = 0.1, layer_norm: bool = False, seed: int = 1) -> DynamicMix:
    mix = DynamicMix(3, 8, lam=lam, layer_norm=layer_norm)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        mix.gate.copy_(torch.randn(3, 8, generator=generator) * 2.0)
        mix.weights.copy_(torch.tensor([0.3, -0.2, 0.5]))
        mix.gamma.fill_(1.5)
    return mix


@pytest.mark.parametrize("layer_norm", [False, True])
def test_dynamic_mix_starts_as_the_uniform_static_mix(layer_norm: bool) -> None:
    layers, mask = _padded_layers()
    dynamic = mix_from_spec(3, 8, MixSpec(mode="dynamic", lam=0.5, layer_norm=layer_norm))
    assert isinstance(dynamic, DynamicMix)
    static = ScalarMix(3, layer_norm=layer_norm)  # w = 0
    torch.testing.assert_close(dynamic(layers, mask), static(layers, mask), rtol=1e-6, atol=1e-6)
    assert dynamic.penalty().item() == 0.0
    weights = dynamic.token_weights(layers, mask)  # (3, 5, 3)
    torch.testing.assert_close(weights, torch.full((3, 5, 3), 1 / 3))


def test_dynamic_mix_matches_a_per_token_loop() -> None:
    layers, mask = _padded_layers()
    mix = _departed()
    out = mix(layers, mask)
    gate, b, gamma = mix.gate.detach(), mix.weights.detach(), float(mix.gamma.detach())
    for i in range(layers.shape[1]):
        for t in range(layers.shape[2]):
            z = torch.stack([gate[j] @ layers[j, i, t] / 8**0.5 + b[j] for j in range(3)])
            s = torch.softmax(z, dim=0)
            expected = gamma * sum(s[j] * layers[j, i, t] for j in range(3))
            expected = expected * float(mask[i, t])
            torch.testing.assert_close(out[i, t], expected, rtol=1e-5, atol=1e-6)


def test_dynamic_padding_is_zero_and_does_not_touch_other_tokens() -> None:
    layers, mask = _padded_layers()
    mix = _departed()
    out = mix(layers, mask)
    assert torch.count_nonzero(out[~mask]) == 0
    junk = layers.clone()
    junk[:, ~mask] = 1e3  # whatever sits at padding
    torch.testing.assert_close(mix(junk, mask)[mask], out[mask])
    shorter = mix(layers[:, 1:2, :3], mask[1:2, :3])  # the second sentence alone, unpadded
    torch.testing.assert_close(shorter[0], out[1, :3])


def test_dynamic_penalty_is_the_gates_per_token_variance() -> None:
    layers, mask = _padded_layers()
    mix = _departed(lam=0.1)
    mix(layers, mask)
    z = mix.logits(layers)[mask]  # (9, 3) real tokens
    centred = z - z.mean(dim=1, keepdim=True)
    expected = 0.1 * ((centred - centred.mean(dim=0)) ** 2).sum(dim=1).mean()
    torch.testing.assert_close(mix.penalty(), expected)
    assert mix.penalty().item() > 0.0
    bigger = _departed(lam=0.1)
    with torch.no_grad():
        bigger.gate.mul_(2.0)
    bigger(layers, mask)
    assert bigger.penalty().item() > mix.penalty().item()  # grows as the gate departs
    static = DynamicMix(3, 8, lam=0.1)
    with torch.no_grad():
        static.weights.copy_(torch.tensor([2.0, -1.0, 0.0]))  # a static mix: no penalty
    static(layers, mask)
    assert static.penalty().item() == pytest.approx(0.0, abs=1e-9)
    assert DynamicMix(3, 8, lam=0.0).penalty().item() == 0.0


def test_gradients_reach_the_gate_and_the_bias_from_the_start() -> None:
    layers, mask = _padded_layers()
    mix = DynamicMix(3, 8, lam=0.1)
    target = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(2))
    ((mix(layers, mask) - target) ** 2).sum().backward()
    assert mix.gate.grad is not None and mix.gate.grad.abs().sum() > 0
    assert mix.weights.grad is not None and mix.weights.grad.abs().sum() > 0
    mix.zero_grad()
    departed = _departed(lam=1.0)
    departed(layers, mask)
    departed.penalty().backward()
    assert departed.gate.grad is not None and departed.gate.grad.abs().sum() > 0


def test_dynamic_weight_statistics_cover_real_tokens_since_eval() -> None:
    layers, mask = _padded_layers()
    mix = _departed()
    mix.train()
    mix(layers, mask)
    assert mix.weight_statistics().tokens == 0  # training batches are not recorded
    mix.eval()
    mix(layers[:, :2], mask[:2])  # two batches: 8 + 1 real tokens
    mix(layers[:, 2:], mask[2:])
    stats = mix.weight_statistics()
    s = mix.token_weights(layers, mask)[mask].double()  # (9, 3)
    assert stats.tokens == 9
    assert stats.mean == pytest.approx(s.mean(0).tolist(), abs=1e-6)
    assert stats.std == pytest.approx(s.std(0, unbiased=False).tolist(), abs=1e-6)
    assert mix.normalized_weights().tolist() == pytest.approx(stats.mean, abs=1e-6)
    mix.eval()  # a new evaluation starts afresh
    assert mix.weight_statistics().tokens == 0
    assert mix.normalized_weights().tolist() == pytest.approx(
        torch.softmax(mix.weights.detach(), 0).tolist()
    )


def test_dynamic_mix_under_bf16_autocast_and_float64() -> None:
    layers, mask = _padded_layers()
    mix = _departed()
    exact = mix(layers, mask)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = mix(layers.bfloat16(), mask)
    assert low.shape == exact.shape and torch.isfinite(low).all()
    torch.testing.assert_close(low.float(), exact, rtol=0.05, atol=0.05)
    assert mix.logits(layers.bfloat16()).dtype == torch.float32  # the gate stays fp32
    torch.testing.assert_close(mix(layers, mask), exact)  # deterministic


def test_dynamic_mode_needs_its_own_module() -> None:
    with pytest.raises(ValueError, match="per-token weights: bilm.dynamic_mix.DynamicMix"):
        ScalarMix(3, mode="dynamic")
    with pytest.raises(ValueError, match="expected layers of width 8"):
        DynamicMix(3, 8)(torch.zeros(3, 1, 2, 4))
    with pytest.raises(ValueError, match="needs the mask"):
        DynamicMix(3, 8, layer_norm=True)(torch.zeros(3, 1, 2, 8))
    assert MixSpec("dynamic", 0.01).lam == 0.01  # λ is kept, unlike LastOnly
    assert [MixSpec(m, 0.01).label for m in ("all", "last", "dynamic")] == [
        "λ=0.01",
        "LastOnly",
        "dynamic λ=0.01",
    ]


def test_elmo_takes_the_dynamic_mix_per_output() -> None:
    """``Elmo(mode="dynamic")``: each output mixes the layers with per-token weights (one gate
    per output), starting as the uniform mix, with its own penalty."""
    from bilm.dynamic_mix import DynamicMix

    model = tiny_bilm()
    dynamic = Elmo(model, num_outputs=2, mode="dynamic", lam=0.1, dropout=0.0).eval()
    uniform = Elmo(model, num_outputs=1, mode="all", lam=0.0, dropout=0.0).eval()
    assert all(isinstance(m, DynamicMix) for m in dynamic.scalar_mixes)
    ids = batch_to_ids(SENTENCES)
    with torch.no_grad():
        out, ref = dynamic(ids), uniform(ids)
    assert out.representations[0].shape == ref.representations[0].shape
    assert torch.allclose(out.representations[0], ref.representations[0], atol=1e-6)
    assert float(dynamic.penalty()) == pytest.approx(0.0, abs=1e-12)
