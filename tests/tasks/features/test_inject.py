"""Injector: sites, extra_dim, concat, λ penalty, LastOnly, the `none` baseline, one pass; the
per-token ``dynamic`` mix through the Injector and a toy run that trains it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from bilm.dynamic_mix import DynamicMix
from tasks.features.inject import Injected, Injector, MixSpec, mix_penalty
from tasks.representations import Layers, Representation, build_representation
from tests.contract.helpers import SENTENCES, write_tiny_checkpoint
from tests.tasks.common.fakes import Counting

BOTH = frozenset({"input", "output"})
SENTENCE_LENGTHS = [len(s) for s in SENTENCES]


@pytest.fixture(scope="module")
def elmo(tmp_path_factory: pytest.TempPathFactory) -> Representation:
    folder = tmp_path_factory.mktemp("inject")
    return build_representation("elmo", checkpoint=write_tiny_checkpoint(folder))


def test_extra_dim_follows_the_sites(elmo: Representation) -> None:
    only_input = Injector(elmo, frozenset({"input"}), MixSpec())
    assert only_input.extra_dim("input") == elmo.output_dim == 16
    assert only_input.extra_dim("output") == 0
    assert Injector(elmo, BOTH).extra_dim("output") == 16
    with pytest.raises(ValueError, match="unknown site 'inputs'; valid: input, output"):
        Injector(elmo, frozenset({"inputs"}))
    with pytest.raises(ValueError, match="unknown site"):
        only_input.extra_dim("middle")


def test_forward_and_concat(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset({"input"}), MixSpec(), dropout=0.0).eval()
    layers = injector.represent(elmo.featurize(SENTENCES))
    injected = injector(layers)
    assert set(injected.tensors) == {"input"} and "output" not in injected
    assert injected["input"].shape == (4, 11, 16)
    expected = layers.tensors.mean(dim=0)  # w = 0 → uniform weights, γ = 1
    torch.testing.assert_close(injected["input"], expected)
    h = torch.randn(4, 11, 5)
    assert injector.concat("input", h, injected).shape == (4, 11, 21)
    assert injector.concat("output", h, injected) is h  # site off: h itself
    with pytest.raises(ValueError, match="differ before the last dimension"):
        injector.concat("input", torch.randn(4, 10, 5), injected)
    with pytest.raises(KeyError, match="not active"):
        injected["output"]


def test_each_site_has_its_own_weights(elmo: Representation) -> None:
    injector = Injector(elmo, BOTH, dropout=0.0).eval()
    with torch.no_grad():
        injector.mixes["output"].weights.copy_(torch.tensor([0.0, 0.0, 5.0]))
    out = injector(injector.represent(elmo.featurize(SENTENCES)))
    assert not torch.allclose(out["input"], out["output"])
    weights = injector.layer_weights()
    assert weights["input"] == pytest.approx([1 / 3] * 3)
    assert weights["output"][2] > 0.98 and sum(weights["output"]) == pytest.approx(1.0)
    assert injector.gammas() == {"input": 1.0, "output": 1.0}


def test_penalty_is_lambda_times_squared_weights(elmo: Representation) -> None:
    injector = Injector(elmo, BOTH, MixSpec(lam=0.5))
    with torch.no_grad():
        injector.mixes["input"].weights.copy_(torch.tensor([1.0, 2.0, 0.0]))
        injector.mixes["output"].weights.copy_(torch.tensor([0.0, 0.0, 3.0]))
    assert injector.penalty().item() == pytest.approx(0.5 * (1 + 4) + 0.5 * 9)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = injector, Injector(elmo, frozenset({"input"}), MixSpec(lam=1.0))
            self.head = nn.Linear(3, 3)

    model = Model()
    with torch.no_grad():
        model.b.mixes["input"].weights.fill_(1.0)
    assert mix_penalty(model).item() == pytest.approx(7.0 + 3.0)
    mix_penalty(model).backward()
    assert injector.mixes["input"].weights.grad is not None
    assert mix_penalty(nn.Linear(2, 2)).item() == 0.0


def test_last_only_uses_gamma_times_the_top_layer(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset({"input"}), MixSpec(mode="last", lam=1.0), dropout=0.0)
    injector.eval()
    with torch.no_grad():
        injector.mixes["input"].gamma.fill_(2.0)
    layers = injector.represent(elmo.featurize(SENTENCES))
    torch.testing.assert_close(injector(layers)["input"], 2.0 * layers.tensors[-1])
    assert injector.penalty().item() == 0.0
    assert injector.layer_weights() == {"input": [0.0, 0.0, 1.0]}


def test_layer_norm_and_dropout(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset({"input"}), MixSpec(layer_norm=True), dropout=0.5)
    layers = injector.represent(elmo.featurize(SENTENCES))
    train = injector.train()(layers)["input"]
    evaluated = injector.eval()(layers)["input"]
    zeros = (train[layers.mask] == 0).float().mean().item()
    assert 0.3 < zeros < 0.7  # dropout in training
    assert (evaluated[layers.mask] == 0).float().mean().item() < 0.05


def test_none_makes_everything_a_no_op() -> None:
    rep = build_representation("none")
    injector = Injector(rep, BOTH, MixSpec(lam=1.0))
    assert injector.extra_dim("input") == injector.extra_dim("output") == 0
    assert list(injector.parameters()) == []
    injected = injector(injector.represent(rep.featurize(SENTENCES)))
    assert isinstance(injected, Injected) and dict(injected.tensors) == {}
    assert injected.mask is not None and injected.mask.shape == (4, 11)
    h = torch.randn(4, 11, 3)
    assert injector.concat("input", h, injected) is h
    assert injector.concat("output", h, injected) is h
    assert injector.penalty().item() == 0.0 and injector.layer_weights() == {}


def test_empty_layers_are_the_baselines_and_inject_nothing(elmo: Representation) -> None:
    layers = Layers.empty([3, 0, 1])
    assert layers.tensors.shape == (0, 3, 3, 0) and layers.tensors.dtype == torch.float32
    assert layers.mask.tolist() == [[True] * 3, [False] * 3, [True, False, False]]
    assert Layers.empty([]).tensors.shape == (0, 0, 0, 0)
    assert torch.equal(Layers.empty(torch.tensor([2, 1])).mask, torch.tensor([[1, 1], [1, 0]]) > 0)
    none = build_representation("none")
    assert torch.equal(none(none.featurize(SENTENCES)).mask, Layers.empty(SENTENCE_LENGTHS).mask)
    for rep in (none, elmo):  # elmo with no site active
        injected = Injector(rep, BOTH if rep is none else frozenset())(layers)
        assert dict(injected.tensors) == {} and injected.mask is layers.mask


def test_no_sites_is_a_no_op(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset())
    assert injector.extra_dim("input") == 0 and list(injector.parameters()) == []


def test_one_representation_pass_per_batch(elmo: Representation) -> None:
    counting = Counting(elmo)
    injector = Injector(counting, BOTH, dropout=0.0)  # type: ignore[arg-type]

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.injector = injector
            self.encoder = nn.Linear(4 + injector.extra_dim("input"), 6)
            self.head = nn.Linear(6 + injector.extra_dim("output"), 3)

        def forward(self, words: Tensor, features: dict[str, Tensor]) -> Tensor:
            injected = self.injector(self.injector.represent(features))
            h = self.encoder(self.injector.concat("input", words, injected))
            return self.head(self.injector.concat("output", h, injected))

    model = Tagger()
    features = elmo.featurize(SENTENCES)
    out = model(torch.randn(4, 11, 4), features)
    assert out.shape == (4, 11, 3) and counting.calls == 1
    out.sum().backward()
    assert model.injector.mixes["input"].weights.grad is not None


def test_frozen_representation_stays_out_of_the_module_tree(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset({"input"}))
    assert set(injector.state_dict()) == {"mixes.input.weights", "mixes.input.gamma"}
    assert len(list(injector.parameters())) == 2
    injector.train()
    assert not elmo.training  # type: ignore[attr-defined]
    injector.to(torch.float64)
    try:
        assert next(elmo.parameters()).dtype == torch.float64  # type: ignore[attr-defined]
        assert injector.mixes["input"].weights.dtype == torch.float64
    finally:
        injector.to(torch.float32)


def test_trainable_representation_is_a_submodule(tmp_path: Path) -> None:
    rep = build_representation("elmo", checkpoint=write_tiny_checkpoint(tmp_path), trainable=True)
    injector = Injector(rep, frozenset({"input"}))
    names = [n for n, _ in injector.named_parameters()]
    assert any(n.startswith("representation.bilm.") for n in names)


def test_mix_spec_validates() -> None:
    with pytest.raises(ValueError, match=r"mix.mode must be one of \('all', 'last', 'dynamic'\)"):
        MixSpec(mode="top")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lam"):
        MixSpec(lam=-1.0)
    assert MixSpec("last", 0.5).lam == 0.0  # LastOnly has no weights to penalise
    assert MixSpec("all", 1).lam == 1.0


def test_one_mix_spec_for_the_harness_and_the_library() -> None:
    import bilm
    from experiments.run import spec

    assert MixSpec is bilm.MixSpec is spec.MixSpec


def test_dynamic_sites_start_as_the_uniform_mix_and_report_their_spread(
    elmo: Representation,
) -> None:
    injector = Injector(elmo, BOTH, MixSpec(mode="dynamic", lam=0.1), dropout=0.0)
    assert all(isinstance(m, DynamicMix) for m in injector.mixes.values())
    assert set(injector.state_dict()) == {
        f"mixes.{site}.{name}" for site in BOTH for name in ("weights", "gate", "gamma")
    }
    assert injector.mixes["input"].gate.shape == (3, elmo.output_dim)
    layers = injector.represent(elmo.featurize(SENTENCES))
    injector.eval()
    out = injector(layers)
    static = Injector(elmo, BOTH, MixSpec(), dropout=0.0).eval()(layers)
    for site in BOTH:
        torch.testing.assert_close(out[site], static[site], rtol=1e-6, atol=1e-6)
    assert mix_penalty(injector).item() == 0.0
    assert injector.layer_weights()["input"] == pytest.approx([1 / 3] * 3)
    assert injector.layer_weights_std() == {"input": [0.0] * 3, "output": [0.0] * 3}
    assert Injector(elmo, BOTH, MixSpec()).layer_weights_std() == {}  # static: no spread


def test_dynamic_penalty_reaches_mix_penalty_after_the_forward(elmo: Representation) -> None:
    injector = Injector(elmo, frozenset({"input"}), MixSpec(mode="dynamic", lam=1.0))
    with torch.no_grad():
        injector.mixes["input"].gate.normal_(generator=torch.Generator().manual_seed(0))
    layers = injector.represent(elmo.featurize(SENTENCES))
    injector.train()
    assert mix_penalty(injector).item() == 0.0  # nothing mixed yet
    injector(layers)
    penalty = mix_penalty(nn.Sequential(injector))
    assert penalty.item() > 0.0
    penalty.backward()
    assert injector.mixes["input"].gate.grad is not None
    injector.eval()
    injector(layers)
    spread = injector.layer_weights_std()["input"]
    assert len(spread) == 3 and max(spread) > 0.0  # tokens got different weights
    assert sum(injector.layer_weights()["input"]) == pytest.approx(1.0)


def test_a_dynamic_toy_run_trains_and_logs_mean_and_spread(tmp_path: Path) -> None:
    from experiments.cli import main
    from experiments.report.plots import layer_weights, plot_layer_weights_figure, table_plots
    from experiments.run.store import ResultsStore
    from tests.experiments.helpers import cli_dirs
    from tests.experiments.toy_task import registered

    argv = ["run", "toy", "--mode", "dynamic", "--lam", "0.01", "--seeds", "0"]
    with registered(tmp_path / "toy-demo"):
        assert main([*argv, "--set", "train.epochs=2", *cli_dirs(tmp_path)]) == 0
        (record,) = ResultsStore(tmp_path / "store").records()
        assert record.spec.mix == MixSpec(mode="dynamic", lam=0.01)
        assert "dev_accuracy" in record.metrics
        last = record.log[-1]
        assert (
            set(last["layer_weights_std"]) == set(last["layer_weights"]) == set(record.spec.sites)
        )
        stats = layer_weights([record])
        for site in record.spec.sites:
            assert sum(stats[site].mean) == pytest.approx(1.0, abs=1e-5)
            assert stats[site].token_std is not None and max(stats[site].token_std) > 0.0
        spread = {"toy dynamic": {k: list(v.token_std or ()) for k, v in stats.items()}}
        weights = {"toy dynamic": {k: list(v.mean) for k, v in stats.items()}, "toy": {}}
        weights["toy"] = {k: [1 / 3] * 3 for k in stats}
        figure = plot_layer_weights_figure(weights, tmp_path / "f2.png", "DEMO", spread)
        assert figure.stat().st_size > 1000
        (plot,) = table_plots([], [record], tmp_path / "plots", "t")[:1]
        assert plot.name == "t-dynamic-layer-weights.png"
