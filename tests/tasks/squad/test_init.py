"""document-qa's initialisation of the SQuAD model and the paper preset's evaluation interval."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from torch import nn

from tasks.features.inject import Injector
from tasks.representations import build_representation
from tasks.squad.config import PRESETS, SquadConfig
from tasks.squad.model import ALLENNLP_CHAR_ROWS, GRU_STD, BiDAFSelfAttention

# wide enough for thousands of draws per GRU, small enough to build in milliseconds
CONFIG = dataclasses.replace(
    SquadConfig(), char_dim=8, char_filters=40, char_width=3, max_word_chars=6, hidden=24
)
WORD_DIM, N_CHARS = 10, 30
# std of N(0, σ²) truncated at ±2σ: σ·√(1 − 2·2·φ(2) / (Φ(2) − Φ(−2)))
_PHI2 = math.exp(-2.0) / math.sqrt(2.0 * math.pi)
TRUNCATED_STD = GRU_STD * math.sqrt(1.0 - 4.0 * _PHI2 / math.erf(2.0 / math.sqrt(2.0)))


def _model(seed: int) -> BiDAFSelfAttention:
    torch.manual_seed(seed)
    vectors = torch.randn(12, WORD_DIM)
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    return BiDAFSelfAttention(CONFIG, vectors, N_CHARS, injector)


def _grus(model: BiDAFSelfAttention) -> list[nn.GRU]:
    return [m.gru for m in (model.encoder, model.self_gru, model.start_gru, model.end_gru)]


def test_truncated_std_matches_the_formula() -> None:
    assert TRUNCATED_STD == pytest.approx(0.04399, abs=1e-5)  # 0.8796 σ


def test_gru_weights_are_truncated_normal_and_biases_zero() -> None:
    model = _model(0)
    for gru in _grus(model):
        weights = torch.cat([p.flatten() for n, p in gru.named_parameters() if "weight" in n])
        assert weights.abs().max() <= 2 * GRU_STD  # truncated at 2σ
        assert weights.std().item() == pytest.approx(TRUNCATED_STD, rel=0.08)
        assert weights.mean().abs() < 0.005
        # near the bound: U(±0.1) puts 10% beyond 0.09, the truncated normal ≈ 2%
        assert (weights.abs() > 0.09).float().mean() < 0.05
        for n, p in gru.named_parameters():
            if "bias" in n:
                assert torch.count_nonzero(p) == 0, n


def test_dense_layers_are_glorot_uniform_with_zero_bias() -> None:
    model = _model(0)
    for layer in (model.attended, model.self_linear, model.start_out, model.end_out):
        fan_out, fan_in = layer.weight.shape
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        assert layer.weight.abs().max() <= limit
        if layer.weight.numel() > 1000:
            assert layer.weight.std().item() == pytest.approx(limit / math.sqrt(3), rel=0.08)
        assert torch.count_nonzero(layer.bias) == 0


def test_trilinear_vectors_are_glorot_of_a_1d_shape() -> None:
    model = _model(0)
    for att in (model.bi_attention, model.self_attention):
        d = att.w_xy.numel()
        limit = math.sqrt(3.0 / d)  # TF init_ops fans of a (d,) variable: d and d
        vectors = torch.cat([att.w_x.weight.flatten(), att.w_y.weight.flatten(), att.w_xy])
        assert vectors.abs().max() <= limit
        # drawn at that scale: torch's default (U(±1/√d)) stays below 0.58 of it
        assert vectors.abs().max() > 0.7 * limit
        # the scalar bias: TF's default glorot_uniform with fans 1, U(±√3), not zero
        assert 0.0 < att.bias.abs().item() <= math.sqrt(3.0)


def test_char_cnn_init() -> None:
    chars = _model(0).chars
    emb = chars.embedding.weight
    assert torch.count_nonzero(emb[0]) == 0  # padding row
    assert emb[1:].abs().max() <= 0.05 and emb[1:].abs().max() > 0.04
    n_filters, n_in, width = chars.conv.weight.shape
    assert chars.conv.weight.abs().max() <= math.sqrt(6.0 / ((n_in + n_filters) * width))
    assert chars.conv.bias is not None
    assert chars.conv.bias.abs().max() <= math.sqrt(3.0 / n_filters)


def test_init_is_deterministic_per_seed() -> None:
    a, b, c = _model(3).state_dict(), _model(3).state_dict(), _model(4).state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    gru = "encoder.gru.weight_ih_l0"
    assert not torch.equal(a[gru], c[gru])
    assert a["no_alignment"].item() == -1.0  # document-qa's no-alignment bias is left as it is


def test_paper_preset_scores_dev_every_1200_steps() -> None:
    assert PRESETS["paper"]().train.eval_every == 1200  # document-qa eval_period=1200
    assert PRESETS["paper"]().train.bucket_noise == 0.0  # ClusteredBatcher: fixed clusters
    assert PRESETS["mini"]().train.eval_every is None  # mini: once per epoch


def test_torch_init_keeps_pytorch_defaults() -> None:
    torch.manual_seed(0)
    vectors = torch.randn(12, WORD_DIM)
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    config = dataclasses.replace(CONFIG, init="torch")
    model = BiDAFSelfAttention(config, vectors, N_CHARS, injector)
    bound = 1.0 / math.sqrt(CONFIG.hidden)  # nn.GRU: U(±1/√hidden), biases included
    for gru in _grus(model):
        params = torch.cat([p.flatten() for p in gru.parameters()])
        assert params.abs().max() <= bound
        assert (params.abs() > 2 * GRU_STD).float().mean() > 0.1  # not the truncated normal
        assert all(torch.count_nonzero(p) > 0 for n, p in gru.named_parameters() if "bias" in n)
    with pytest.raises(ValueError, match="init must be"):
        SquadConfig(init="xavier")


def test_allennlp_init_draws_as_dialog_qa_modules_do() -> None:
    """``init="allennlp"``: characters Xavier uniform (padding row 0), trilinear weights
    U(±√(6 / (3d + 1))) with a zero bias, GRUs left at PyTorch's U(±1/√hidden)."""
    torch.manual_seed(0)
    vectors = torch.randn(12, WORD_DIM)
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    model = BiDAFSelfAttention(
        dataclasses.replace(CONFIG, init="allennlp"), vectors, N_CHARS, injector
    )
    chars = model.chars.embedding.weight.detach()  # (N_CHARS, char_dim)
    bound = math.sqrt(6.0 / (N_CHARS + CONFIG.char_dim))
    assert chars.abs().max() <= bound and torch.count_nonzero(chars[0]) == 0
    assert chars[1:].std().item() == pytest.approx(bound / math.sqrt(3.0), rel=0.15)
    # with allennlp's character CNN the fans are those of its 262-row byte embedding
    config = dataclasses.replace(CONFIG, init="allennlp", char_cnn="allennlp")
    marked = BiDAFSelfAttention(config, vectors, N_CHARS, injector)
    chars = marked.chars.embedding.weight.detach()  # (N_CHARS + 2, char_dim)
    bound = math.sqrt(6.0 / (ALLENNLP_CHAR_ROWS + CONFIG.char_dim))
    assert chars.abs().max() <= bound and torch.count_nonzero(chars[0]) == 0
    assert chars[1:].std().item() == pytest.approx(bound / math.sqrt(3.0), rel=0.15)
    for att in (model.bi_attention, model.self_attention):
        d = att.w_xy.numel()
        limit = math.sqrt(6.0 / (3 * d + 1))
        weights = torch.cat([att.w_x.weight.flatten(), att.w_y.weight.flatten(), att.w_xy])
        assert weights.abs().max() <= limit
        assert weights.abs().max() > 0.8 * limit  # not the narrower PyTorch default ±1/√d
        assert att.bias.item() == 0.0
    gru_bound = 1.0 / math.sqrt(CONFIG.hidden)
    for gru in _grus(model):
        assert torch.cat([p.flatten() for p in gru.parameters()]).abs().max() <= gru_bound
