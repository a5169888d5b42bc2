"""The deep SRL tagger on a tiny configuration: direction alternation, masks, sites, initialisation,
recurrent dropout, the loss and BIO-constrained decoding (brute force)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import cast

import pytest
import torch

from tasks.common.spans import is_valid
from tasks.features.inject import Injector
from tasks.representations import Layers, Representation, build_representation
from tasks.srl.config import SrlConfig
from tasks.srl.model import (
    AlternatingHighwayLSTM,
    HighwayLSTMLayer,
    SrlBatch,
    SrlTagger,
    reverse_padded,
    sequence_nll,
)

CONFIG = dataclasses.replace(
    SrlConfig(), predicate_dim=3, hidden=5, layers=3, recurrent_dropout=0.1
)
LABELS = ("O", "B-ARG0", "B-ARG1", "B-V", "I-ARG0", "I-ARG1")
VOCAB, WORD_DIM = 12, 4
LENGTHS = [6, 3, 1]


class FakeRepresentation:
    """A frozen representation of 2 layers of width 3 (the batch carries its layers)."""

    name, output_dim, num_layers, trainable = "fake", 3, 2, False

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"


def _mask(lengths: list[int]) -> torch.Tensor:
    return torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]


def _model(sites: frozenset[str] = frozenset(), config: SrlConfig = CONFIG) -> SrlTagger:
    torch.manual_seed(0)
    rep = cast(Representation, FakeRepresentation()) if sites else build_representation("none")
    injector = Injector(rep, sites, dropout=0.0)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=torch.Generator().manual_seed(1))
    return SrlTagger(config, vectors, LABELS, injector)


def _batch(lengths: list[int], seed: int = 0, with_layers: bool = False) -> SrlBatch:
    g = torch.Generator().manual_seed(seed)
    mask = _mask(lengths)
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    predicates = torch.zeros_like(words)
    predicates[:, 0] = 1
    tags = torch.randint(0, len(LABELS), mask.shape, generator=g) * mask
    layers = Layers.empty(lengths)
    if with_layers:
        tensors = torch.randn(2, *mask.shape, 3, generator=g) * mask[None, :, :, None]
        layers = Layers(tensors, mask)
    return SrlBatch(words, predicates, mask, tags, layers)


def test_reverse_padded_reverses_within_the_length_and_is_an_involution() -> None:
    x = torch.arange(8.0).view(2, 4, 1)
    mask = _mask([3, 4])
    out = reverse_padded(x, mask)
    assert out[:, :, 0].tolist() == [[2.0, 1.0, 0.0, 3.0], [7.0, 6.0, 5.0, 4.0]]
    assert torch.equal(reverse_padded(out, mask), x)


def test_directions_alternate() -> None:
    """Layer 0 reads left to right (position 0 ignores later tokens); with a second,
    right-to-left layer, position 0 sees the last token, and the last token sees nothing of the
    first through layer 1 alone."""
    torch.manual_seed(0)
    x = torch.randn(1, 5, 4)
    mask = torch.ones(1, 5, dtype=torch.bool)
    changed = x.clone()
    changed[0, 4] += 1.0  # change the last token only
    one = AlternatingHighwayLSTM(4, 3, 1, 0.0).eval()
    assert torch.allclose(one(x, mask)[0, :4], one(changed, mask)[0, :4])
    two = AlternatingHighwayLSTM(4, 3, 2, 0.0).eval()
    assert not torch.allclose(two(x, mask)[0, 0], two(changed, mask)[0, 0])
    first = x.clone()
    first[0, 0] += 1.0  # change the first token only: layer 1 at the last position (its
    # first step) sees only layer 0's last output, which already saw token 0
    assert not torch.allclose(two(x, mask)[0, 4], two(first, mask)[0, 4])


def test_orthogonal_blocks_and_forget_bias() -> None:
    """Gate blocks i, f, o, r, g (and the carry W_k) orthogonal; biases 0 but the forget gate's
    1; the carry projection has no bias (allennlp ``use_input_projection_bias: false``)."""
    layer = HighwayLSTMLayer(7, 5, 0.1)
    h = 5
    bias = layer.state_projection.bias.detach()
    assert torch.all(bias[h : 2 * h] == 1.0)
    assert torch.all(bias[:h] == 0.0) and torch.all(bias[2 * h :] == 0.0)
    assert layer.input_projection.bias is None
    assert layer.input_projection.weight.shape == (6 * h, 7)
    assert layer.state_projection.weight.shape == (5 * h, h)
    for weight in (layer.input_projection.weight, layer.state_projection.weight):
        for block in weight.detach().split(h):  # each gate's block: orthonormal rows
            assert torch.allclose(block @ block.T, torch.eye(h), atol=1e-5)


def test_sites_size_the_layers_and_receive_gradients() -> None:
    widths = {}
    for sites in (frozenset({"input"}), frozenset({"output"}), frozenset({"input", "output"})):
        model = _model(sites).train()
        widths[tuple(sorted(sites))] = (
            model.encoder.layers[0].input_dim,
            model.tag_projection.in_features,
        )
        out = model(_batch(LENGTHS, with_layers=True))
        assert out.decoded == [] and out.loss is not None
        out.loss.backward()
        for site, mix in model.injector.mixes.items():
            assert all(p.grad is not None for p in mix.parameters()), site
    base = (WORD_DIM + CONFIG.predicate_dim, CONFIG.hidden)
    assert widths[("input",)] == (base[0] + 3, base[1])
    assert widths[("output",)] == (base[0], base[1] + 3)
    assert widths[("input", "output")] == (base[0] + 3, base[1] + 3)


def test_recurrent_dropout_is_random_in_training_only() -> None:
    model = _model()
    batch = _batch(LENGTHS)
    model.eval()
    assert torch.equal(model(batch).logits, model(batch).logits)
    model.train()
    assert not torch.equal(model(batch).logits, model(batch).logits)
    no_dropout = _model(config=dataclasses.replace(CONFIG, recurrent_dropout=0.0)).train()
    assert torch.equal(no_dropout(batch).logits, no_dropout(batch).logits)


def test_loss_is_the_token_nll_averaged_per_sequence() -> None:
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(2, 3, 4, generator=g)
    tags = torch.tensor([[1, 2, 0], [3, 0, 0]])
    mask = _mask([3, 1])
    log_p = torch.log_softmax(logits, -1)
    first = -(log_p[0, 0, 1] + log_p[0, 1, 2] + log_p[0, 2, 0]) / 3
    second = -log_p[1, 0, 3]
    assert torch.allclose(sequence_nll(logits, tags, mask), (first + second) / 2)


def test_decoding_is_the_best_valid_sequence() -> None:
    """Brute force over every label sequence: the decoded one is valid IOB2 and scores best."""
    model = _model().eval()
    g = torch.Generator().manual_seed(5)
    for trial in range(4):
        logits = torch.randn(2, 4, len(LABELS), generator=g) * 3
        mask = _mask([4, 3])
        decoded = model.decode(logits, mask)
        log_p = torch.log_softmax(logits, -1)
        for row, length in enumerate([4, 3]):
            best, best_score = None, -float("inf")
            for seq in itertools.product(range(len(LABELS)), repeat=length):
                if not is_valid([LABELS[i] for i in seq], "IOB2"):
                    continue
                score = sum(float(log_p[row, t, k]) for t, k in enumerate(seq))
                if score > best_score:
                    best, best_score = list(seq), score
            assert decoded[row] == best, trial
            assert is_valid([LABELS[i] for i in decoded[row]], "IOB2")


def test_words_without_a_vector_start_from_the_found_values_distribution() -> None:
    """``fill_missing_words`` (allennlp's embedding): the zero rows of the table but padding are
    drawn from N(mean, std) of the found values; by default they stay zero."""
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=torch.Generator().manual_seed(1))
    vectors[0], vectors[1] = 0.0, 0.0  # padding, and the unknown word: no pre-trained vector
    torch.manual_seed(0)
    assert not SrlTagger(CONFIG, vectors, LABELS, injector).words.weight[1].any()
    config = dataclasses.replace(CONFIG, fill_missing_words=True)
    filled = SrlTagger(config, vectors, LABELS, injector).words.weight
    assert filled[1].abs().sum() > 0 and not filled[0].any()
    assert torch.equal(filled[2], vectors[2])


def test_the_predicate_embedding_is_drawn_as_allennlp_draws_it_on_request() -> None:
    wide = dataclasses.replace(CONFIG, predicate_dim=500)
    torch_default = _model(config=wide).predicate.weight.detach()  # (2, 500)
    assert torch.equal(
        torch_default, _model(config=dataclasses.replace(wide, init="torch")).predicate.weight
    )
    assert 0.9 < torch_default.std().item() < 1.1  # nn.Embedding's N(0, 1)
    xavier = _model(config=dataclasses.replace(wide, init="allennlp")).predicate.weight.detach()
    bound = (6 / (2 + 500)) ** 0.5
    assert xavier.abs().max().item() <= bound
    assert abs(xavier.std().item() - bound / 3**0.5) < 0.01  # uniform: sd = bound / √3
    with pytest.raises(ValueError, match="init"):
        SrlConfig(init="xavier")  # type: ignore[arg-type]
