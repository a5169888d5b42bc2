"""SNLI's baseline is the paper's ESIM baseline (A.3, unverified; allennlp
``esim.jsonnet``): a ReLU output layer, and the ELMo model's extra regularisation (the dropout
after the attention, the extra ℓ2) only when a representation is injected; the paper preset
re-draws its batches every epoch as allennlp's bucket iterator (``padding_noise`` 0.1)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from tasks.features.inject import Injector
from tasks.representations import build_representation
from tasks.snli.config import SnliConfig
from tasks.snli.model import ESIM, enhance, pool, soft_align
from tasks.snli.task import TASK
from tests.tasks.snli.test_model import (
    N_LABELS,
    VOCAB,
    WORD_DIM,
    FakeRepresentation,
    _batch,
)

#: Only the attention dropout is on (and large), so any effect of it in training shows.
ONLY_ATTENTION = dataclasses.replace(
    SnliConfig(), hidden=5, dropout=0.0, attention_dropout=0.9, output_dropout=0.0
)


def _esim(config: SnliConfig, represented: bool) -> ESIM:
    torch.manual_seed(0)
    if represented:
        injector = Injector(FakeRepresentation(), frozenset({"input"}), dropout=0.0)
    else:
        injector = Injector(build_representation("none"), frozenset({"input", "output"}))
    g = torch.Generator().manual_seed(1)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=g)
    vectors[0] = 0.0
    return ESIM(config, vectors, N_LABELS, injector)


def test_the_baseline_has_no_dropout_after_the_attention() -> None:
    """Before: the baseline's training forward dropped 90 % of the enhanced vectors."""
    baseline = _esim(ONLY_ATTENTION, represented=False)
    assert not baseline.represented and baseline.attention_dropout.p == 0.0
    batch = _batch()
    train_logits = baseline.train()(batch).logits
    assert torch.allclose(train_logits, baseline.eval()(batch).logits, atol=1e-6)


def test_the_elmo_model_keeps_the_dropout_after_the_attention() -> None:
    model = _esim(ONLY_ATTENTION, represented=True)
    rep = FakeRepresentation()
    assert model.represented and model.attention_dropout.p == 0.9
    batch = _batch(rep)
    torch.manual_seed(3)
    train_logits = model.train()(batch).logits
    assert not torch.allclose(train_logits, model.eval()(batch).logits, atol=1e-4)


def test_the_extra_l2_applies_only_with_a_representation() -> None:
    """Before: the baseline's loss carried ``weight_l2 · Σ‖W‖²`` too."""
    config = dataclasses.replace(ONLY_ATTENTION, attention_dropout=0.0, weight_l2=0.5)
    baseline = _esim(config, represented=False).eval()
    batch = _batch()
    out = baseline(batch)
    assert baseline.weight_l2 == 0.0 and out.loss is not None and batch.labels is not None
    assert out.loss.item() == pytest.approx(F.cross_entropy(out.logits, batch.labels).item())
    model = _esim(config, represented=True).eval()
    rep_batch = _batch(FakeRepresentation())
    rep_out = model(rep_batch)
    assert rep_batch.labels is not None
    l2 = sum(float(w.detach().pow(2).sum()) for w in model.weight_matrices())
    ce = F.cross_entropy(rep_out.logits, rep_batch.labels).item()
    assert model.weight_l2 == 0.5 and rep_out.loss is not None
    assert rep_out.loss.item() == pytest.approx(ce + 0.5 * l2, rel=1e-6)


def test_a_none_representation_at_both_sites_is_the_baseline() -> None:
    """The model knows ELMo is used from the injector's active sites: a representation without
    layers (``none``) activates none, whatever sites the run names."""
    none = Injector(build_representation("none"), frozenset({"input", "output"}))
    assert none.active_sites == frozenset()
    assert _esim(ONLY_ATTENTION, represented=False).represented is False


def test_output_layer_is_relu_step_by_step() -> None:
    """The logits against the equations written out: ``W_o relu(W_h v + b_h) + b_o`` with ``v``
    the pooled ``[v_a,avg; v_a,max; v_b,avg; v_b,max]`` (before: tanh)."""
    config = dataclasses.replace(ONLY_ATTENTION, attention_dropout=0.0)
    model = _esim(config, represented=False).eval()
    assert config.mlp_activation == "relu" and model.activation is F.relu
    batch = _batch()
    with torch.no_grad():
        pm, hm = batch.premise_mask, batch.hypothesis_mask
        a = model.encoder(model.words(batch.premise_words), pm)  # (b, tp, 2h)
        b = model.encoder(model.words(batch.hypothesis_words), hm)  # (b, th, 2h)
        a_tilde, b_tilde = soft_align(a, b, pm, hm)
        sides = []
        for x, x_tilde, mask in ((a, a_tilde, pm), (b, b_tilde, hm)):
            projected = torch.relu(model.projection(enhance(x, x_tilde)))  # (b, t, h)
            sides.append(pool(model.composition(projected, mask), mask))  # (b, 4h)
        v = torch.cat(sides, dim=-1)  # (b, 8h)
        hidden = torch.clamp_min(v @ model.hidden.weight.T + model.hidden.bias, 0.0)  # (b, h)
        expected = hidden @ model.logits.weight.T + model.logits.bias  # (b, labels)
        assert torch.allclose(model(batch).logits, expected, atol=1e-6)
    tanh = dataclasses.replace(config, mlp_activation="tanh")  # Chen et al. §3.3
    assert _esim(tanh, represented=False).activation is torch.tanh


def test_presets_follow_the_paper_baseline() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert paper.mlp_activation == mini.mlp_activation == "relu"  # architecture: every preset
    assert (paper.attention_dropout, paper.weight_l2) == (0.5, 1e-4)  # the ELMo model's (A.3)
    # allennlp's bucket iterator re-draws batch membership each epoch (padding_noise 0.1)
    assert paper.train.bucket_noise == 0.1
    assert mini.train.bucket_noise == 0.0  # the mini preset keeps its fixed batches
