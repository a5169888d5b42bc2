"""The BCN on a tiny configuration: shapes, brute-force references for biattention and pooling
(padding ignored), the output networks and ELMo/CoVe injection widths."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
import torch

from tasks.features.inject import Injector
from tasks.representations import Layers, build_representation
from tasks.sst5.config import Sst5Config
from tasks.sst5.model import (
    BiattentiveClassificationNetwork,
    Maxout,
    SstBatch,
    biattention,
    output_network,
    pool,
)

CONFIG = dataclasses.replace(
    Sst5Config(),
    pre_encode_dim=6,
    encoder_hidden=5,
    integrator_hidden=4,
    output_dims=(7, 6),
)
VOCAB, WORD_DIM, LABELS = 20, 8, 5
LENGTHS = [6, 3, 1]


class FakeRepresentation:
    """A frozen representation of ``num_layers`` layers of width ``output_dim`` (never called)."""

    name, trainable = "fake", False

    def __init__(self, output_dim: int = 3, num_layers: int = 2) -> None:
        self.output_dim, self.num_layers = output_dim, num_layers

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"


def _vectors() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=g)
    vectors[0] = 0.0
    return vectors


def _model(
    sites: frozenset[str] = frozenset(),
    rep: FakeRepresentation | None = None,
    config: Sst5Config = CONFIG,
) -> BiattentiveClassificationNetwork:
    torch.manual_seed(0)
    representation = (rep or FakeRepresentation()) if sites else build_representation("none")
    injector = Injector(representation, sites, dropout=0.0)
    return BiattentiveClassificationNetwork(config, _vectors(), LABELS, injector).eval()


def _mask(lengths: list[int], width: int | None = None) -> torch.Tensor:
    width = width or max(lengths)
    return torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]


def _batch(
    lengths: list[int] = LENGTHS,
    rep: FakeRepresentation | None = None,
    width: int | None = None,
    seed: int = 0,
) -> SstBatch:
    g = torch.Generator().manual_seed(seed)
    mask = _mask(lengths, width)
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    labels = torch.randint(0, LABELS, (len(lengths),), generator=g)
    layers = Layers(torch.zeros(0, *mask.shape, 0), mask)  # the baseline's: no layers
    if rep is not None:
        tensors = torch.randn(rep.num_layers, *mask.shape, rep.output_dim, generator=g)
        layers = Layers(tensors * mask[None, :, :, None], mask)
    return SstBatch(words, mask, labels, layers)


@pytest.mark.parametrize(
    "sites",
    [frozenset(), frozenset({"input"}), frozenset({"output"}), frozenset({"input", "output"})],
)
@pytest.mark.parametrize("output", ["relu", "maxout"])
def test_shapes_loss_and_gradients(sites: frozenset[str], output: str) -> None:
    rep = FakeRepresentation()
    model = _model(sites, rep, dataclasses.replace(CONFIG, output=output)).train()
    batch = _batch(rep=rep if sites else None)
    out = model(batch)
    assert out.logits.shape == (len(LENGTHS), LABELS) and out.predictions.shape == (3,)
    assert out.loss is not None and out.loss.ndim == 0
    out.loss.backward()
    assert model.pre_encode.weight.grad is not None
    assert model.self_attentive.weight.grad is not None
    for site, mix in model.injector.mixes.items():  # every active site's weights learn
        assert all(p.grad is not None for p in mix.parameters()), site
    assert set(model.injector.mixes) == sites
    unlabelled = dataclasses.replace(batch, labels=None)
    assert model.eval()(unlabelled).loss is None


def test_injection_widths_follow_the_sites() -> None:
    rep = FakeRepresentation(output_dim=3)
    base = _model()
    assert base.pre_encode.in_features == WORD_DIM
    assert base.self_attentive.in_features == 2 * CONFIG.integrator_hidden
    both = _model(frozenset({"input", "output"}), rep)
    assert both.pre_encode.in_features == WORD_DIM + 3
    assert both.self_attentive.in_features == 2 * CONFIG.integrator_hidden + 3
    assert both.integrator.lstm.input_size == 3 * 2 * CONFIG.encoder_hidden
    first = both.output[0]
    assert isinstance(first, torch.nn.Linear)
    assert first.in_features == 4 * (2 * CONFIG.integrator_hidden + 3)


def test_cove_at_the_input_is_glove_plus_cove() -> None:
    """McCann et al.'s input [GloVe(w); CoVe(w)]: a two-layer 600-d representation at the input
    only (``--repr cove --sites input``)."""
    cove = FakeRepresentation(output_dim=600, num_layers=2)
    model = _model(frozenset({"input"}), cove)
    assert model.pre_encode.in_features == WORD_DIM + 600
    assert model.self_attentive.in_features == 2 * CONFIG.integrator_hidden
    out = model(_batch(rep=cove))
    assert torch.isfinite(out.logits).all()


def test_biattention_matches_a_loop() -> None:
    g = torch.Generator().manual_seed(1)
    mask = _mask(LENGTHS)
    x = torch.randn(3, max(LENGTHS), 4, generator=g) * mask[:, :, None]
    got = biattention(x, mask)
    for b, n in enumerate(LENGTHS):
        for i in range(n):
            scores = torch.stack([x[b, i] @ x[b, j] for j in range(n)])
            expected = sum(w * x[b, j] for j, w in enumerate(torch.softmax(scores, 0)))
            torch.testing.assert_close(got[b, i], expected)


def test_pooling_matches_a_loop() -> None:
    g = torch.Generator().manual_seed(2)
    mask = _mask(LENGTHS)
    h = torch.randn(3, max(LENGTHS), 4, generator=g)  # garbage at pads: must be ignored
    scores = torch.randn(3, max(LENGTHS), generator=g)
    got = pool(h, mask, scores)
    assert got.shape == (3, 16)
    for b, n in enumerate(LENGTHS):
        real = h[b, :n]
        weights = torch.softmax(scores[b, :n], 0)
        expected = torch.cat([real.max(0).values, real.min(0).values, real.mean(0), weights @ real])
        torch.testing.assert_close(got[b], expected)


def test_maxout_takes_the_max_of_its_pieces() -> None:
    layer = Maxout(3, 2, pool=4)
    x = torch.randn(5, 3)
    pieces = layer.linear(x).view(5, 2, 4)
    torch.testing.assert_close(layer(x), pieces.max(-1).values)
    net = output_network(dataclasses.replace(CONFIG, output="maxout"), 10, LABELS)
    assert [type(m).__name__ for m in net] == ["Maxout", "Dropout", "Maxout", "Dropout", "Maxout"]
    relu = output_network(CONFIG, 10, LABELS)
    assert [type(m).__name__ for m in relu] == [
        "Linear",
        "ReLU",
        "Dropout",
        "Linear",
        "ReLU",
        "Dropout",
        "Linear",
    ]
    assert relu(torch.randn(2, 10)).shape == (2, LABELS)


def test_word_vectors_stay_fixed() -> None:
    model = _model()
    assert not model.words.weight.requires_grad
